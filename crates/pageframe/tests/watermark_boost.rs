//! Watermark boosting: an unmovable allocation that falls back into a
//! movable pageblock below pageblock order boosts the zone's watermarks by
//! a pageblock (never past 1.5x the high watermark) and asks for kswapd;
//! kswapd then reclaims page cache even though the node is balanced and
//! drops the boost. With `watermark_boost_factor` 0 nothing is boosted.
//! Pages are conserved throughout.

mod common;

use common::{allocate_until_oom, assert_conserved, boot, one_node};
use pageframe::reclaim::{KswapdState, Mm, MmConfig, ReclaimEvent};
use pageframe::{AllocOptions, CpuId, Gfp, LocalPageAllocator, NodeId, Order, Page};

const CPU: CpuId = CpuId(0);
const NODE: NodeId = NodeId(0);
const PAGE: u64 = 4096;

/// The one populated zone's index.
fn zone_index(allocator: &LocalPageAllocator) -> usize {
    allocator
        .zone_snapshots()
        .iter()
        .position(|zone| zone.managed > 0)
        .unwrap()
}

/// Fills memory with movable order-0 pages and frees every other one, so
/// that free memory is order-0 holes in movable pageblocks. Returns the
/// pages still held.
fn checkerboard(allocator: &LocalPageAllocator) -> Vec<Page> {
    let pages = allocate_until_oom(allocator, CPU, Gfp::HIGHUSER_MOVABLE, Order(0), NODE);
    let cpu = allocator.cpu(CPU).unwrap();
    let mut held = Vec::new();
    for page in pages {
        if page.pfn().0 % 2 == 0 {
            cpu.free_pages(page, Order(0)).unwrap();
        } else {
            held.push(page);
        }
    }
    allocator.drain_all_pages();
    held
}

#[test]
fn a_fallback_into_a_movable_block_boosts_the_watermarks() {
    let allocator = boot(&one_node(64, 2));
    let index = zone_index(&allocator);
    let held = checkerboard(&allocator);
    let (_, plain) = allocator.zone_free_pages(index).unwrap();
    assert_eq!(allocator.zone_watermark_boost(index), Some(0));
    assert!(!allocator.take_boosted_watermark_wakeup(index));
    let cpu = allocator.cpu(CPU).unwrap();
    let unmovable = cpu.alloc_pages(Gfp::KERNEL, Order(0), NODE).unwrap();
    allocator.check_invariants().unwrap();
    let zone = &allocator.zone_snapshots()[index];
    let boost = zone.watermark_boost;
    let limit = (zone.watermarks.high * 15_000 / 10_000).max(512);
    assert!(
        boost >= 512 && boost <= limit,
        "boost {boost}, limit {limit}"
    );
    assert_eq!(allocator.zone_watermark_boost(index), Some(boost));
    let (_, boosted) = allocator.zone_free_pages(index).unwrap();
    assert_eq!(boosted.min, plain.min + boost);
    assert_eq!(boosted.high, plain.high + boost);
    let zoneinfo = pageframe::proc::zoneinfo(&allocator);
    assert!(
        zoneinfo.contains(&format!("boost    {boost}\n")),
        "{zoneinfo}"
    );
    assert!(zoneinfo.contains(&format!("min      {}\n", boosted.min)));
    // si_mem_available(): the reserve is the unboosted high watermark
    // (totalreserve_pages is computed where the boost is reset); only the
    // page cache's share it keeps reads the low mark as it is now.
    let info = Mm::new(&allocator, MmConfig::default()).meminfo();
    let reserve = zone.lowmem_reserve.iter().max().unwrap() + plain.high;
    assert_eq!(info.available, info.free - reserve, "{info:?}");
    // GFP_KERNEL may wake kswapd: the flag is set once.
    assert!(allocator.take_boosted_watermark_wakeup(index));
    assert!(!allocator.take_boosted_watermark_wakeup(index));
    allocator.reduce_watermark_boost(index, boost + 1);
    assert_eq!(allocator.zone_watermark_boost(index), Some(0));
    cpu.free_pages(unmovable, Order(0)).unwrap();
    for page in held {
        cpu.free_pages(page, Order(0)).unwrap();
    }
    allocator.check_invariants().unwrap();
}

#[test]
fn watermark_boost_factor_zero_turns_boosting_off() {
    let options = AllocOptions {
        watermark_boost_factor: 0,
        ..AllocOptions::KERNEL
    };
    let allocator = LocalPageAllocator::boot_seeded(&one_node(64, 2), options, 1).unwrap();
    let index = zone_index(&allocator);
    let _held = checkerboard(&allocator);
    let cpu = allocator.cpu(CPU).unwrap();
    cpu.alloc_pages(Gfp::KERNEL, Order(0), NODE).unwrap();
    assert_eq!(allocator.zone_watermark_boost(index), Some(0));
    assert!(!allocator.take_boosted_watermark_wakeup(index));
    allocator.check_invariants().unwrap();
}

#[test]
fn kswapd_reclaims_the_boost_on_a_balanced_node_and_drops_it() {
    let allocator = boot(&one_node(64, 2));
    let index = zone_index(&allocator);
    let mut mm = Mm::new(&allocator, MmConfig::default());
    // Page cache for kswapd to reclaim: a quarter of memory.
    let file = mm.create_file();
    let cached = 4096;
    mm.truncate(CPU, file, (cached * PAGE) as i64).unwrap();
    mm.read(CPU, file, 0, cached * PAGE).unwrap();
    // The rest in movable pages of someone else (taken without reclaim, so
    // that no large free block is left), every other one freed.
    let no_reclaim = Gfp::HIGHUSER_MOVABLE.difference(Gfp::RECLAIM);
    let mut others = Vec::new();
    while let Ok(page) = mm.alloc_pages(CPU, no_reclaim, Order(0), NODE) {
        others.push(page);
    }
    for page in others.iter().filter(|page| page.pfn().0 % 2 == 0) {
        mm.free_pages(CPU, *page, Order(0)).unwrap();
    }
    allocator.drain_all_pages();
    while mm.kswapd_run(NODE).unwrap().state != KswapdState::Sleeping {}
    assert_eq!(mm.kswapd_state(NODE), Some(KswapdState::Sleeping));
    let steal_before = mm.counters().get(ReclaimEvent::PgstealKswapd);
    // An unmovable allocation falls back into a movable block: boost, and
    // kswapd is woken although the node is balanced.
    let kernel_page = mm.alloc_pages(CPU, Gfp::KERNEL, Order(0), NODE).unwrap();
    let boost = allocator.zone_watermark_boost(index).unwrap();
    assert!(boost >= 512, "boost {boost}");
    assert_eq!(mm.kswapd_state(NODE), Some(KswapdState::Woken));
    let step = mm.kswapd_run(NODE).unwrap();
    assert!(step.reclaimed > 0, "{step:?}");
    assert!(mm.counters().get(ReclaimEvent::PgstealKswapd) > steal_before);
    assert_eq!(allocator.zone_watermark_boost(index), Some(0));
    mm.check_invariants().unwrap();
    let others_held = others.len() as u64 / 2 + 1;
    assert_conserved(
        &allocator,
        mm.nr_file_pages() + mm.nr_anon_pages() + others_held,
    );
    mm.free_pages(CPU, kernel_page, Order(0)).unwrap();
    for page in others.iter().filter(|page| page.pfn().0 % 2 == 1) {
        mm.free_pages(CPU, *page, Order(0)).unwrap();
    }
    mm.delete_file(CPU, file).unwrap();
    mm.check_invariants().unwrap();
    assert_conserved(&allocator, 0);
}
