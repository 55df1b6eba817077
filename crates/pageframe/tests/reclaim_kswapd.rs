//! Reclaim under memory pressure: kswapd woken below the low watermark and
//! reclaiming to the high one, its nap and the hit-quickly counters,
//! direct reclaim with allocstall when kswapd does not keep up (finishing
//! its scan targets at DEF_PRIORITY), second
//! chance for pages used twice, dirty pages written back before reclaim,
//! and anon memory (no swap) running out with ENOMEM. Pages are conserved
//! throughout.

mod common;

use common::{assert_conserved, boot, one_node, sized_file};
use pageframe::reclaim::{KswapdState, LruList, Mm, MmConfig, ReclaimEvent};
use pageframe::{CpuId, Gfp, LocalPageAllocator, NodeId, Order};

const PAGE: u64 = 4096;
const CPU: CpuId = CpuId(0);
const NODE: NodeId = NodeId(0);

fn conserved(mm: &Mm) {
    mm.check_invariants().unwrap();
    assert_conserved(mm.allocator(), mm.nr_file_pages() + mm.nr_anon_pages());
}

fn count(mm: &Mm, event: ReclaimEvent) -> u64 {
    mm.counters().get(event)
}

/// The machine's one populated zone: (free pages, low, high watermark).
fn zone(allocator: &LocalPageAllocator) -> (u64, u64, u64) {
    let index = allocator
        .zone_snapshots()
        .iter()
        .position(|zone| zone.managed > 0)
        .unwrap();
    let (free, watermarks) = allocator.zone_free_pages(index).unwrap();
    (free, watermarks.low, watermarks.high)
}

/// A file of `pages` pages, nothing cached.
#[test]
fn kswapd_wakes_below_low_and_reclaims_to_high() {
    let allocator = boot(&one_node(64, 2));
    assert_eq!(
        allocator
            .zone_snapshots()
            .iter()
            .filter(|z| z.managed > 0)
            .count(),
        1
    );
    let mut mm = Mm::new(&allocator, MmConfig::default());
    let file = sized_file(&mut mm, 1 << 15);
    let mut index = 0;
    while mm.kswapd_state(NODE) == Some(KswapdState::Sleeping) {
        mm.read(CPU, file, index * PAGE, PAGE).unwrap();
        index += 1;
        assert!(index < 1 << 15, "kswapd never woke");
    }
    let (free, low, high) = zone(&allocator);
    assert!(free <= low + 1, "woken with {free} free, low {low}");
    assert_eq!(count(&mm, ReclaimEvent::PgscanKswapd), 0);
    assert_eq!(count(&mm, ReclaimEvent::AllocstallMovable), 0);
    conserved(&mm);
    let step = mm.kswapd_run(NODE).unwrap();
    assert_eq!(step.state, KswapdState::Napping);
    assert!(step.reclaimed > 0 && step.scanned >= step.reclaimed);
    let (free, _, high_after) = zone(&allocator);
    assert!(free > high_after, "{free} free after kswapd, high {high}");
    assert_eq!(count(&mm, ReclaimEvent::Pageoutrun), 1);
    assert_eq!(count(&mm, ReclaimEvent::PgstealKswapd), step.reclaimed);
    assert_eq!(count(&mm, ReclaimEvent::PgstealFile), step.reclaimed);
    assert_eq!(count(&mm, ReclaimEvent::PgscanKswapd), step.scanned);
    conserved(&mm);
    // The oldest pages went first: the file's start is gone, the last page
    // read cached (with the readahead window beyond it).
    let cached = mm.file_pages(file).unwrap();
    assert!(cached[0].0 > 0);
    assert!(cached.iter().any(|&(page, _)| page == index - 1));
    assert!(cached.last().unwrap().0 >= index - 1);
    // Still balanced after the nap: kswapd sleeps.
    assert_eq!(mm.kswapd_run(NODE).unwrap().state, KswapdState::Sleeping);
    assert_eq!(count(&mm, ReclaimEvent::KswapdHighWmarkHitQuickly), 0);
    assert_eq!(mm.kswapd_run(NODE).unwrap(), Default::default());
    assert!(mm.kswapd_run(NodeId(3)).is_err());
}

#[test]
fn a_wakeup_during_the_nap_is_low_wmark_hit_quickly() {
    let allocator = boot(&one_node(64, 2));
    let mut mm = Mm::new(&allocator, MmConfig::default());
    let file = sized_file(&mut mm, 1 << 15);
    let mut index = 0;
    let mut runs = 0;
    while count(&mm, ReclaimEvent::KswapdLowWmarkHitQuickly) == 0 {
        mm.read(CPU, file, index * PAGE, PAGE).unwrap();
        index += 1;
        if mm.kswapd_state(NODE) == Some(KswapdState::Woken) && runs == 0 {
            mm.kswapd_run(NODE).unwrap();
            runs += 1;
        }
        assert!(index < 1 << 15);
    }
    assert_eq!(mm.kswapd_state(NODE), Some(KswapdState::Woken));
    assert_eq!(count(&mm, ReclaimEvent::Pageoutrun), 1);
    conserved(&mm);
}

#[test]
fn direct_reclaim_when_kswapd_does_not_run() {
    let allocator = boot(&one_node(64, 2));
    let mut mm = Mm::new(&allocator, MmConfig::default());
    let pages = 2 * (64 << 20) / PAGE;
    let file = sized_file(&mut mm, pages);
    for chunk in 0..pages / 64 {
        assert_eq!(
            mm.read(CPU, file, chunk * 64 * PAGE, 64 * PAGE).unwrap(),
            64 * PAGE
        );
    }
    assert!(count(&mm, ReclaimEvent::AllocstallMovable) > 0);
    assert_eq!(count(&mm, ReclaimEvent::AllocstallNormal), 0);
    assert!(count(&mm, ReclaimEvent::PgstealDirect) > pages / 2);
    assert_eq!(count(&mm, ReclaimEvent::PgscanKswapd), 0);
    assert_eq!(mm.kswapd_state(NODE), Some(KswapdState::Woken));
    // The page cache holds most of memory; reclaim freed the rest.
    let info = mm.meminfo();
    assert!(info.cached > info.total * 9 / 10, "{info:?}");
    assert_eq!(info.cached, info.active_file + info.inactive_file);
    conserved(&mm);
}

/// Direct reclaim at DEF_PRIORITY finishes its scan targets (the
/// kernel's `proportional_reclaim`): with an inactive list of over 128 Ki
/// pages, each direct reclaim scans `inactive >> 12` pages, more than the
/// SWAP_CLUSTER_MAX it needs.
#[test]
fn direct_reclaim_at_def_priority_finishes_its_targets() {
    let allocator = boot(&one_node(1024, 2));
    let mut mm = Mm::new(&allocator, MmConfig::default());
    let pages = (1024 << 20) / PAGE;
    let file = sized_file(&mut mm, pages);
    let mut at = 0;
    let inactive = loop {
        let inactive = mm.lru_pages(NODE, LruList::InactiveFile);
        mm.read(CPU, file, at * PAGE, PAGE).unwrap();
        at += 1;
        if count(&mm, ReclaimEvent::AllocstallMovable) > 0 {
            break inactive;
        }
    };
    let (stalls, scanned) = (
        count(&mm, ReclaimEvent::AllocstallMovable),
        count(&mm, ReclaimEvent::PgscanDirect),
    );
    assert!(inactive >> 12 > 32, "{inactive} inactive pages");
    assert!(
        scanned >= stalls * (inactive >> 12),
        "{scanned} scanned in {stalls} direct reclaims of {inactive} inactive pages"
    );
    conserved(&mm);
}

#[test]
fn pages_used_twice_survive_a_stream() {
    let allocator = boot(&one_node(64, 2));
    let mut mm = Mm::new(&allocator, MmConfig::default());
    let hot = sized_file(&mut mm, 200);
    mm.read(CPU, hot, 0, 200 * PAGE).unwrap();
    mm.read(CPU, hot, 0, 200 * PAGE).unwrap();
    assert_eq!(mm.lru_pages(NODE, LruList::ActiveFile), 200);
    let pages = 2 * (64 << 20) / PAGE;
    let stream = sized_file(&mut mm, pages);
    for chunk in 0..pages / 256 {
        mm.read(CPU, stream, chunk * 256 * PAGE, 256 * PAGE)
            .unwrap();
        mm.kswapd_run(NODE).unwrap();
    }
    let stolen = count(&mm, ReclaimEvent::PgstealKswapd) + count(&mm, ReclaimEvent::PgstealDirect);
    assert!(stolen > pages / 2, "{}", mm.vmstat());
    assert!(count(&mm, ReclaimEvent::PgstealKswapd) > 0);
    // The active list was never deactivated (the inactive list is not low).
    assert_eq!(mm.file_pages(hot).unwrap().len(), 200);
    assert_eq!(count(&mm, ReclaimEvent::Pgdeactivate), 0);
    assert!(!mm.inactive_is_low(NODE, LruList::InactiveFile));
    conserved(&mm);
}

#[test]
fn inactive_is_low_compares_with_the_square_root_ratio() {
    let allocator = boot(&one_node(64, 2));
    let mut mm = Mm::new(&allocator, MmConfig::default());
    let file = sized_file(&mut mm, 100);
    mm.read(CPU, file, 0, 100 * PAGE).unwrap();
    mm.read(CPU, file, 0, 50 * PAGE).unwrap();
    // 50 inactive, 50 active, under 1 GiB: ratio 1, not low.
    assert!(!mm.inactive_is_low(NODE, LruList::InactiveFile));
    mm.read(CPU, file, 50 * PAGE, PAGE).unwrap();
    mm.read(CPU, file, 50 * PAGE, PAGE).unwrap();
    // 49 inactive < 51 active.
    assert!(mm.inactive_is_low(NODE, LruList::InactiveFile));
    assert!(!mm.inactive_is_low(NODE, LruList::InactiveAnon));
    assert!(!mm.inactive_is_low(NODE, LruList::ActiveFile));

    // 1 GiB of lists: ratio int_sqrt(10) = 3.
    let allocator = boot(&one_node(2048, 2));
    let mut mm = Mm::new(&allocator, MmConfig::default());
    let gib = (1 << 30) / PAGE;
    let file = sized_file(&mut mm, gib);
    mm.read(CPU, file, 0, gib * PAGE).unwrap();
    let active = gib * 7 / 10;
    mm.read(CPU, file, 0, active * PAGE).unwrap();
    assert_eq!(mm.lru_pages(NODE, LruList::ActiveFile), active);
    // 0.3 GiB inactive * 3 > 0.7 GiB active: not low (ratio 1 would say low).
    assert!(!mm.inactive_is_low(NODE, LruList::InactiveFile));
    let more = gib * 6 / 100;
    mm.read(CPU, file, active * PAGE, more * PAGE).unwrap();
    // 0.24 * 3 < 0.76.
    assert!(mm.inactive_is_low(NODE, LruList::InactiveFile));
    conserved(&mm);
}

#[test]
fn dirty_pages_are_written_back_then_reclaimed() {
    let allocator = boot(&one_node(64, 2));
    let mut mm = Mm::new(&allocator, MmConfig::default());
    let file = mm.create_file();
    let pages = 2 * (64 << 20) / PAGE;
    for chunk in 0..pages / 64 {
        let written = mm.write(CPU, file, chunk * 64 * PAGE, 64 * PAGE).unwrap();
        assert_eq!(written, 64 * PAGE);
        mm.kswapd_run(NODE).unwrap();
    }
    assert!(count(&mm, ReclaimEvent::NrVmscanImmediateReclaim) > 0);
    assert!(count(&mm, ReclaimEvent::Pgrotated) > 0);
    assert!(count(&mm, ReclaimEvent::NrWritten) > pages / 2);
    assert_eq!(count(&mm, ReclaimEvent::NrDirtied), pages);
    assert_eq!(mm.file_size(file).unwrap(), pages * PAGE);
    conserved(&mm);
}

#[test]
fn anon_memory_without_swap_runs_out_with_enomem() {
    let allocator = boot(&one_node(64, 2));
    let mut mm = Mm::new(&allocator, MmConfig::default());
    let file = sized_file(&mut mm, 1000);
    mm.read(CPU, file, 0, 1000 * PAGE).unwrap();
    let pid = mm.spawn(CPU).unwrap();
    let err = mm.touch(pid, 0, (64 << 20) / PAGE).unwrap_err();
    assert_eq!((err.code(), err.name()), (12, "ENOMEM"));
    // The page cache was reclaimed to make room; the anon pages were not.
    assert!(mm.nr_file_pages() < 1000);
    assert!(mm.nr_anon_pages() > (60 << 20) / PAGE);
    assert!(count(&mm, ReclaimEvent::AllocstallMovable) > 0);
    assert_eq!(count(&mm, ReclaimEvent::PgscanAnon), 0);
    conserved(&mm);
    let anon = mm.nr_anon_pages();
    assert_eq!(mm.exit(pid).unwrap(), anon);
    conserved(&mm);
}

#[test]
fn allocations_that_cannot_reclaim_fail_and_others_reclaim() {
    let allocator = boot(&one_node(64, 2));
    let mut mm = Mm::new(&allocator, MmConfig::default());
    let pages = 2 * (64 << 20) / PAGE;
    let file = sized_file(&mut mm, pages);
    mm.read(CPU, file, 0, pages * PAGE).unwrap();
    // Take what is left above the min watermark without reclaim.
    let mut held = Vec::new();
    while let Ok(page) = mm.alloc_pages(CPU, Gfp::NOWAIT, Order(0), NODE) {
        held.push(page);
    }
    let stalls = count(&mm, ReclaimEvent::AllocstallNormal);
    assert_eq!(stalls, 0);
    assert_eq!(mm.kswapd_state(NODE), Some(KswapdState::Woken));
    assert!(mm.alloc_pages(CPU, Gfp::NOWAIT, Order(0), NODE).is_err());
    // GFP_KERNEL may reclaim: it succeeds, with allocstalls once the
    // allocator's own last resorts are spent.
    let mut tries = 0;
    while count(&mm, ReclaimEvent::AllocstallNormal) == 0 {
        held.push(mm.alloc_pages(CPU, Gfp::KERNEL, Order(0), NODE).unwrap());
        tries += 1;
        assert!(tries < 10_000);
    }
    assert!(count(&mm, ReclaimEvent::PgstealDirect) > 0);
    mm.check_invariants().unwrap();
    assert_conserved(&allocator, mm.nr_file_pages() + held.len() as u64);
    // Page cache pages cannot be freed as someone else's.
    let (_, cached) = mm.file_pages(file).unwrap()[0];
    let before = mm.vmstat();
    let err = mm.free_pages(
        CPU,
        pageframe::Page::from_pfn(pageframe::Pfn(cached)),
        Order(0),
    );
    assert_eq!(err.unwrap_err().name(), "EBUSY");
    let err = mm.free_pages(CPU, held[0], Order(200)).unwrap_err();
    assert_eq!(err.name(), "EINVAL");
    assert_eq!(mm.vmstat(), before);
    let first_held = held[0];
    for page in held {
        mm.free_pages(CPU, page, Order(0)).unwrap();
    }
    conserved(&mm);
    // Everything handed out came back: a second free of one is refused,
    // and the page cache page still is the page cache's.
    let err = mm.free_pages(CPU, first_held, Order(0)).unwrap_err();
    assert_eq!(err.name(), "EINVAL");
    let err = mm.free_pages(
        CPU,
        pageframe::Page::from_pfn(pageframe::Pfn(cached)),
        Order(0),
    );
    assert_eq!(err.unwrap_err().name(), "EBUSY");
}

/// An allocation refused for its flags (`__GFP_UNMAPPED` with
/// `__GFP_MOVABLE`) is refused before anything happens: below the low
/// watermark it does not wake a napping kswapd.
#[test]
fn a_refused_allocation_wakes_no_kswapd() {
    let allocator = boot(&one_node(8, 1));
    let mut mm = Mm::new(&allocator, MmConfig::default());
    let pid = mm.spawn(CPU).unwrap();
    assert!(mm.touch(pid, 0, 1 << 20).is_err());
    mm.kswapd_run(NODE).unwrap();
    let state = mm.kswapd_state(NODE);
    let before = mm.vmstat();
    let gfp = Gfp::KERNEL | Gfp::MOVABLE_BIT | Gfp::UNMAPPED;
    let err = mm.alloc_pages(CPU, gfp, Order(0), NODE).unwrap_err();
    assert_eq!(err.name(), "EINVAL", "{err}");
    assert_eq!(mm.kswapd_state(NODE), state);
    assert_eq!(mm.vmstat(), before);
    conserved(&mm);
}

/// Reads `file` page by page from `*index` until kswapd is woken.
fn read_until_woken(mm: &mut Mm, file: pageframe::reclaim::FileId, index: &mut u64) {
    while mm.kswapd_state(NODE) != Some(KswapdState::Woken) {
        mm.read(CPU, file, *index * PAGE, PAGE).unwrap();
        *index += 1;
        assert!(*index < 1 << 16, "kswapd never woke");
    }
}

/// balance_pgdat() leaves a node it finds balanced (`goto out`) without
/// counting a failure: a kswapd woken over and over, the pressure gone by
/// the time it runs, is never taken for hopeless (16 failures would leave
/// the node to direct reclaim).
#[test]
fn a_run_that_finds_the_node_balanced_is_no_failure() {
    let allocator = boot(&one_node(64, 2));
    let mut mm = Mm::new(&allocator, MmConfig::default());
    for round in 0..24 {
        let file = sized_file(&mut mm, 1 << 15);
        let mut index = 0;
        read_until_woken(&mut mm, file, &mut index);
        mm.delete_file(CPU, file).unwrap();
        let step = mm.kswapd_run(NODE).unwrap();
        assert_eq!((step.scanned, step.reclaimed), (0, 0), "round {round}");
        assert_eq!(step.state, KswapdState::Napping, "round {round}");
        assert_eq!(mm.kswapd_run(NODE).unwrap().state, KswapdState::Sleeping);
    }
    assert_eq!(count(&mm, ReclaimEvent::Pageoutrun), 24);
    conserved(&mm);
}

/// A node whose memory is all anonymous (no swap) cannot be balanced:
/// kswapd balances again at once after each failed run
/// (`kswapd_high_wmark_hit_quickly`), and after MAX_RECLAIM_RETRIES of
/// them prepare_kswapd_sleep() lets it sleep, leaving the node to direct
/// reclaim.
#[test]
fn a_hopeless_kswapd_goes_to_sleep() {
    let allocator = boot(&one_node(64, 2));
    let mut mm = Mm::new(&allocator, MmConfig::default());
    let pid = mm.spawn(CPU).unwrap();
    assert_eq!(mm.touch(pid, 0, 1 << 20).unwrap_err().name(), "ENOMEM");
    assert_eq!(mm.kswapd_state(NODE), Some(KswapdState::Woken));
    for _ in 0..40 {
        mm.kswapd_run(NODE).unwrap();
    }
    assert_eq!(mm.kswapd_state(NODE), Some(KswapdState::Sleeping));
    assert_eq!(count(&mm, ReclaimEvent::Pageoutrun), 16);
    assert_eq!(count(&mm, ReclaimEvent::KswapdHighWmarkHitQuickly), 15);
    // Hopeless: an allocation below the watermark wakes it no more.
    assert!(mm.alloc_pages(CPU, Gfp::NOWAIT, Order(0), NODE).is_err());
    assert_eq!(mm.kswapd_state(NODE), Some(KswapdState::Sleeping));
    conserved(&mm);
}

/// kswapd_shrink_node(): a wakeup for an order that fragmentation keeps
/// out of reach (every 4 MiB block holds a page someone keeps) is checked
/// at order 0 once twice the order's pages are reclaimed, so kswapd stops
/// at the high watermark instead of reclaiming the whole page cache.
#[test]
fn high_order_balance_falls_back_to_order_zero() {
    let allocator = boot(&one_node(64, 2));
    let mut mm = Mm::new(&allocator, MmConfig::default());
    let mut pages = Vec::new();
    while let Ok(page) = mm.alloc_pages(CPU, Gfp::NOWAIT, Order(0), NODE) {
        pages.push(page);
    }
    let mut pinned = std::collections::BTreeMap::new();
    for page in pages {
        if let Some(other) = pinned.insert(page.pfn().0 >> 10, page) {
            pinned.insert(page.pfn().0 >> 10, other);
            mm.free_pages(CPU, page, Order(0)).unwrap();
        }
    }
    assert!(pinned.len() >= 15, "{} blocks pinned", pinned.len());
    while mm.kswapd_state(NODE) != Some(KswapdState::Sleeping) {
        mm.kswapd_run(NODE).unwrap();
    }
    let file = sized_file(&mut mm, 1 << 15);
    let mut index = 0;
    read_until_woken(&mut mm, file, &mut index);
    while mm.kswapd_state(NODE) != Some(KswapdState::Sleeping) {
        mm.kswapd_run(NODE).unwrap();
    }
    let cached = mm.nr_file_pages();
    let top = Order(10);
    assert!(mm.alloc_pages(CPU, Gfp::NOWAIT, top, NODE).is_err());
    assert_eq!(mm.kswapd_state(NODE), Some(KswapdState::Woken));
    let step = mm.kswapd_run(NODE).unwrap();
    assert!(step.reclaimed >= 2 << 10, "{step:?}");
    assert!(
        mm.nr_file_pages() > cached / 2,
        "{} of {cached} cached pages left: {step:?}",
        mm.nr_file_pages()
    );
    assert_eq!(step.state, KswapdState::Napping);
    mm.check_invariants().unwrap();
    assert_conserved(&allocator, mm.nr_file_pages() + pinned.len() as u64);
}

/// shrink_inactive_list() wakes the flusher only for a batch whose every
/// page is dirty and unqueued; in a batch of dirty and clean pages the
/// clean ones are reclaimed and the dirty ones marked for immediate
/// reclaim and activated, still dirty — also those referenced once
/// (FOLIOREF_RECLAIM_CLEAN), which shrink_folio_list() sends the same way.
#[test]
fn dirty_pages_among_clean_ones_wait_for_the_flusher() {
    let allocator = boot(&one_node(64, 2));
    let config = MmConfig {
        read_ahead_kb: 0,
        ..MmConfig::default()
    };
    let mut mm = Mm::new(&allocator, config);
    let (dirty, clean) = (mm.create_file(), sized_file(&mut mm, 2048));
    for page in 0..2048 {
        mm.write(CPU, dirty, page * PAGE, PAGE).unwrap();
        mm.read(CPU, clean, page * PAGE, PAGE).unwrap();
    }
    // Written once, read once more: PG_referenced only.
    mm.read(CPU, dirty, 0, 2048 * PAGE).unwrap();
    assert_eq!(mm.nr_dirty(), 2048);
    let pages = (64 << 20) / PAGE;
    let stream = sized_file(&mut mm, pages);
    for chunk in 0..pages / 64 {
        mm.read(CPU, stream, chunk * 64 * PAGE, 64 * PAGE).unwrap();
        mm.kswapd_run(NODE).unwrap();
    }
    assert!(mm.file_pages(clean).unwrap().len() < 2048);
    assert_eq!(mm.nr_dirty(), 2048, "{}", mm.vmstat());
    assert_eq!(count(&mm, ReclaimEvent::NrWritten), 0);
    assert!(count(&mm, ReclaimEvent::NrVmscanImmediateReclaim) >= 2048);
    assert_eq!(mm.file_pages(dirty).unwrap().len(), 2048);
    conserved(&mm);
}

/// The 64 MiB machine with `vm.watermark_boost_factor` 0.
fn unboosted() -> LocalPageAllocator {
    let mut allocator = boot(&one_node(64, 2));
    allocator
        .write_sysctl(pageframe::VmSysctl::WatermarkBoostFactor, "0")
        .unwrap();
    allocator
}

/// Pages of `cpu`'s per-CPU lists in the machine's one populated zone.
fn pcp_pages_of(allocator: &LocalPageAllocator, cpu: usize) -> u64 {
    let zone = allocator
        .zone_snapshots()
        .into_iter()
        .find(|zone| zone.managed > 0)
        .unwrap();
    u64::from(zone.pcp[cpu].count)
}

/// __alloc_pages_slowpath() reclaims before it drains: an allocation that
/// fails the min watermark while another CPU's per-CPU list holds pages
/// stalls in direct reclaim first (the bare allocator, with no reclaim,
/// would drain the lists and succeed without it). The pages reclaim
/// frees go to the reclaimer's own list, which the watermark does not
/// count, so the attempt after it drains every list, as
/// __alloc_pages_direct_reclaim() does.
#[test]
fn direct_reclaim_comes_before_draining_other_cpus_lists() {
    // No boosted watermarks, so that one direct reclaim lifts the zone
    // over its min watermark.
    let allocator = unboosted();
    let mut mm = Mm::new(&allocator, MmConfig::default());
    let file = sized_file(&mut mm, 1 << 15);
    let mut index = 0;
    read_until_woken(&mut mm, file, &mut index);
    // CPU 1 takes what is left above the min watermark and gives it back
    // to its own list.
    let other = CpuId(1);
    let mut held = Vec::new();
    while let Ok(page) = mm.alloc_pages(other, Gfp::NOWAIT, Order(0), NODE) {
        held.push(page);
    }
    for page in held {
        mm.free_pages(other, page, Order(0)).unwrap();
    }
    let on_other = pcp_pages_of(&allocator, 1);
    assert!(on_other > 0);
    assert_eq!(count(&mm, ReclaimEvent::AllocstallNormal), 0);
    let page = mm.alloc_pages(CPU, Gfp::KERNEL, Order(0), NODE).unwrap();
    assert_eq!(count(&mm, ReclaimEvent::AllocstallNormal), 1);
    assert!(count(&mm, ReclaimEvent::PgstealDirect) > 0);
    assert_eq!(pcp_pages_of(&allocator, 1), 0);
    mm.free_pages(CPU, page, Order(0)).unwrap();
    conserved(&mm);
}

/// kswapd() tries to sleep at the order balancing fell back to, and
/// otherwise at the order wakeups asked for since (0 here): a wakeup at
/// order 10 that finds the node balanced naps, and when the nap ends with
/// order 0 balanced but no free order-10 block left, kswapd sleeps rather
/// than balancing again for order 10.
#[test]
fn after_a_high_order_balance_kswapd_sleeps_on_order_zero() {
    let allocator = unboosted();
    let handle = allocator.cpu(CPU).unwrap();
    let big: Vec<_> = (0..2)
        .map(|_| handle.alloc_pages(Gfp::KERNEL, Order(10), NODE).unwrap())
        .collect();
    let mut mm = Mm::new(&allocator, MmConfig::default());
    let file = sized_file(&mut mm, 1 << 15);
    let mut index = 0;
    read_until_woken(&mut mm, file, &mut index);
    while mm.kswapd_state(NODE) != Some(KswapdState::Sleeping) {
        mm.kswapd_run(NODE).unwrap();
    }
    assert!(mm.alloc_pages(CPU, Gfp::NOWAIT, Order(10), NODE).is_err());
    assert_eq!(mm.kswapd_state(NODE), Some(KswapdState::Woken));
    for page in big {
        handle.free_pages(page, Order(10)).unwrap();
    }
    assert_eq!(mm.kswapd_run(NODE).unwrap().state, KswapdState::Napping);
    let (runs, hits) = (
        count(&mm, ReclaimEvent::Pageoutrun),
        count(&mm, ReclaimEvent::KswapdHighWmarkHitQuickly),
    );
    // Both order-10 blocks split: order 0 stays balanced, order 10 not.
    let held: Vec<_> = (0..3)
        .map(|_| handle.alloc_pages(Gfp::KERNEL, Order(9), NODE).unwrap())
        .collect();
    let (free, _, high) = zone(&allocator);
    assert!(free > high, "{free} free, high {high}");
    assert_eq!(mm.kswapd_run(NODE).unwrap().state, KswapdState::Sleeping);
    assert_eq!(count(&mm, ReclaimEvent::Pageoutrun), runs);
    assert_eq!(count(&mm, ReclaimEvent::KswapdHighWmarkHitQuickly), hits);
    for page in held {
        handle.free_pages(page, Order(9)).unwrap();
    }
    mm.check_invariants().unwrap();
}
