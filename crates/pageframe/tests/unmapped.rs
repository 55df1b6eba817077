//! `__GFP_UNMAPPED` on the simulated backing: pageblock-granular conversion
//! with one TLB flush per pageblock, the unmapped per-CPU lists, the reverse
//! conversion with zeroing, the merge rule between mapped and unmapped
//! pageblocks, and the flag combinations the series refuses.
//!
//! ```text
//!  16 MiB, one node: 8 pageblocks of 512 pages
//!  | pb0 | pb1 | pb2 | pb3 | pb4 | pb5 | pb6 | pb7 |
//!  the first GFP_KERNEL|__GFP_UNMAPPED allocation unmaps one whole block;
//!  the next 511 order-0 unmapped allocations come out of it, no new flush.
//! ```

mod common;

use common::{one_node, vmstat_value};
use pageframe::policies::SecretRegion;
use pageframe::{
    proc, AccessError, AllocError, AllocOptions, CpuId, Gfp, LocalPageAllocator, NodeId, Order,
    Page,
};

const UNMAPPED: Gfp = Gfp::KERNEL.union(Gfp::UNMAPPED);
const PAGEBLOCK_PAGES: u64 = 512;

fn boot16() -> LocalPageAllocator {
    let allocator = LocalPageAllocator::boot(&one_node(16, 1)).unwrap();
    allocator.check_invariants().unwrap();
    allocator
}

#[test]
fn first_unmapped_allocation_unmaps_one_pageblock_with_one_flush() {
    let allocator = boot16();
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let mut pages = Vec::new();
    for _ in 0..PAGEBLOCK_PAGES {
        pages.push(cpu.alloc_pages(UNMAPPED, Order(0), NodeId(0)).unwrap());
        allocator.check_invariants().unwrap();
    }
    assert_eq!(allocator.nr_unmapped_pageblocks(), 1);
    assert_eq!(allocator.backing().counters().tlb_flush_global, 1);
    assert_eq!(vmstat_value(&allocator, "direct_map_unmapped_blocks"), 1);
    let block = pages[0].pfn().0 / PAGEBLOCK_PAGES;
    assert!(pages
        .iter()
        .all(|page| page.pfn().0 / PAGEBLOCK_PAGES == block));
    assert!(pages
        .iter()
        .all(|page| !allocator.backing().is_direct_mapped(page.pfn())));
    // The block is used up: one more page needs a second conversion.
    cpu.alloc_pages(UNMAPPED, Order(0), NodeId(0)).unwrap();
    assert_eq!(allocator.nr_unmapped_pageblocks(), 2);
    assert_eq!(allocator.backing().counters().tlb_flush_global, 2);
    allocator.check_invariants().unwrap();
}

#[test]
fn freed_unmapped_pages_come_back_to_unmapped_requests_only() {
    let allocator = boot16();
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let secret = cpu.alloc_pages(UNMAPPED, Order(0), NodeId(0)).unwrap();
    cpu.free_pages(secret, Order(0)).unwrap();
    allocator.check_invariants().unwrap();
    let mapped = cpu.alloc_pages(Gfp::KERNEL, Order(0), NodeId(0)).unwrap();
    assert!(allocator.backing().is_direct_mapped(mapped.pfn()));
    assert_ne!(
        mapped.pfn().0 / PAGEBLOCK_PAGES,
        secret.pfn().0 / PAGEBLOCK_PAGES
    );
    let again = cpu.alloc_pages(UNMAPPED, Order(0), NodeId(0)).unwrap();
    assert_eq!(again, secret, "the hot unmapped pcp page is reused");
    assert_eq!(allocator.backing().counters().tlb_flush_global, 1);
    allocator.check_invariants().unwrap();
}

#[test]
fn mapped_request_remaps_and_zeroes_a_block_when_only_unmapped_memory_is_free() {
    let allocator = boot16();
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let secret = cpu.alloc_pages(UNMAPPED, Order(0), NodeId(0)).unwrap();
    let mut mapped = Vec::new();
    while let Ok(page) = cpu.alloc_pages(Gfp::KERNEL, Order(0), NodeId(0)) {
        if !allocator.backing().is_direct_mapped(page.pfn()) {
            mapped.push(page);
            break;
        }
        mapped.push(page);
    }
    let remapped = vmstat_value(&allocator, "direct_map_remapped_blocks");
    assert_eq!(remapped, 0, "the unmapped block was still in use");
    cpu.free_pages(secret, Order(0)).unwrap();
    allocator.drain_all_pages();
    let zeroed_before = allocator.backing().counters().pages_zeroed;
    let page = cpu.alloc_pages(Gfp::KERNEL, Order(0), NodeId(0)).unwrap();
    assert_eq!(
        page.pfn().0 / PAGEBLOCK_PAGES,
        secret.pfn().0 / PAGEBLOCK_PAGES
    );
    assert!(allocator.backing().is_direct_mapped(page.pfn()));
    assert_eq!(vmstat_value(&allocator, "direct_map_remapped_blocks"), 1);
    assert_eq!(allocator.nr_unmapped_pageblocks(), 0);
    assert_eq!(
        allocator.backing().counters().pages_zeroed - zeroed_before,
        PAGEBLOCK_PAGES,
        "the whole block is zeroed before it is mapped again"
    );
    allocator.check_invariants().unwrap();
}

#[test]
fn unmapped_and_mapped_pageblocks_never_merge() {
    let allocator = boot16();
    let boot_buddyinfo = proc::buddyinfo(&allocator);
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let page = cpu.alloc_pages(UNMAPPED, Order(0), NodeId(0)).unwrap();
    cpu.free_pages(page, Order(0)).unwrap();
    allocator.drain_all_pages();
    allocator.check_invariants().unwrap();
    // The unmapped pageblock stays an order-9 block beside its order-9
    // mapped buddy instead of merging back to order 10.
    assert_ne!(proc::buddyinfo(&allocator), boot_buddyinfo);
    let zone = allocator
        .zone_snapshots()
        .into_iter()
        .find(|zone| zone.is_populated())
        .unwrap();
    assert_eq!(zone.nr_free_blocks[9], 2);
}

#[test]
fn refused_combinations_are_typed_errors_and_change_nothing() {
    let allocator = boot16();
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let before = proc::buddyinfo(&allocator);
    assert!(matches!(
        cpu.alloc_pages(Gfp::MOVABLE | Gfp::UNMAPPED, Order(0), NodeId(0)),
        Err(AllocError::Unsupported(_))
    ));
    assert!(matches!(
        cpu.alloc_pages(
            Gfp::KERNEL | Gfp::RECLAIMABLE | Gfp::UNMAPPED,
            Order(0),
            NodeId(0)
        ),
        Err(AllocError::Unsupported(_))
    ));
    // No unmapped page is free: only a conversion could serve this, and a
    // NOWAIT caller cannot wait for its shootdown (ALLOC_NOBLOCK).
    assert_eq!(
        cpu.alloc_pages(Gfp::NOWAIT | Gfp::UNMAPPED, Order(0), NodeId(0)),
        Err(AllocError::WouldBlock { order: Order(0) })
    );
    assert_eq!(proc::buddyinfo(&allocator), before);
    assert_eq!(allocator.nr_unmapped_pageblocks(), 0);
    assert_eq!(allocator.backing().counters().tlb_flush_global, 0);
    allocator.check_invariants().unwrap();
    // Once a block is unmapped, NOWAIT callers are served from it.
    cpu.alloc_pages(UNMAPPED, Order(0), NodeId(0)).unwrap();
    cpu.alloc_pages(Gfp::NOWAIT | Gfp::UNMAPPED, Order(0), NodeId(0))
        .unwrap();
}

#[test]
fn unmapped_movable_is_an_option() {
    let options = AllocOptions {
        unmapped_movable: true,
        ..AllocOptions::KERNEL
    };
    let allocator = LocalPageAllocator::boot_with(&one_node(16, 1), options).unwrap();
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let page = cpu
        .alloc_pages(Gfp::MOVABLE | Gfp::UNMAPPED, Order(0), NodeId(0))
        .unwrap();
    assert!(!allocator.backing().is_direct_mapped(page.pfn()));
    allocator.check_invariants().unwrap();
    cpu.free_pages(page, Order(0)).unwrap();
    allocator.check_invariants().unwrap();
}

#[test]
fn high_order_unmapped_allocation_converts_every_pageblock_it_spans() {
    let allocator = boot16();
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let page = cpu.alloc_pages(UNMAPPED, Order(10), NodeId(0)).unwrap();
    assert_eq!(allocator.nr_unmapped_pageblocks(), 2);
    assert_eq!(allocator.backing().counters().tlb_flush_global, 1);
    allocator.check_invariants().unwrap();
    cpu.free_pages(page, Order(10)).unwrap();
    allocator.check_invariants().unwrap();
}

#[test]
fn zeroing_unmapped_pages_goes_through_the_mermap() {
    let allocator = boot16();
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let before = allocator.backing().counters();
    let page = cpu
        .alloc_pages(UNMAPPED | Gfp::ZERO, Order(2), NodeId(0))
        .unwrap();
    let after = allocator.backing().counters();
    assert_eq!(after.pages_zeroed - before.pages_zeroed, 4);
    assert_eq!(after.mermap_maps - before.mermap_maps, 4);
    cpu.free_pages(page, Order(2)).unwrap();
    allocator.check_invariants().unwrap();
}

#[test]
fn bulk_unmapped_allocation_fills_from_one_converted_block() {
    let allocator = boot16();
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let mut slots = vec![None; 64];
    let filled = cpu
        .alloc_pages_bulk(UNMAPPED | Gfp::ZERO, NodeId(0), None, &mut slots)
        .unwrap();
    assert!(filled >= 1);
    let pages: Vec<Page> = slots.iter().flatten().copied().collect();
    assert!(pages
        .iter()
        .all(|page| !allocator.backing().is_direct_mapped(page.pfn())));
    assert_eq!(allocator.nr_unmapped_pageblocks(), 1);
    allocator.check_invariants().unwrap();
    cpu.free_pages_bulk(&pages).unwrap();
    allocator.check_invariants().unwrap();
}

#[test]
fn secret_region_round_trip_on_the_simulation_counts_its_clearing() {
    let allocator = boot16();
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let region = SecretRegion::alloc(&cpu, 3, NodeId(0)).unwrap();
    assert_eq!(region.len(), 3);
    region
        .write(&cpu, 4000, b"straddles a page boundary")
        .unwrap();
    assert!(region.write(&cpu, 3 * 4096 - 1, b"xy").is_err());
    let zeroed = allocator.backing().counters().pages_zeroed;
    region.free(&cpu).unwrap();
    assert!(allocator.backing().counters().mermap_bytes_written >= 3 * 4096);
    assert_eq!(allocator.backing().counters().pages_zeroed, zeroed);
    allocator.check_invariants().unwrap();
}

/// The simulation keeps page contents (in its sparse store): a secret
/// region reads back what was written, across a page boundary; offsets whose
/// sum with the length wraps past `usize::MAX` are typed errors that write
/// nothing, for the region and for the page accessors alike.
#[test]
fn secret_regions_and_pages_hold_bytes_and_refuse_wrapping_offsets() {
    let allocator = boot16();
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let region = SecretRegion::alloc(&cpu, 2, NodeId(0)).unwrap();
    region.write(&cpu, 4090, b"across the boundary").unwrap();
    let mut back = [0u8; 19];
    region.read(&cpu, 4090, &mut back).unwrap();
    assert_eq!(&back, b"across the boundary");
    let page = cpu.alloc_pages(Gfp::KERNEL, Order(0), NodeId(0)).unwrap();
    cpu.write_page(page, 0, &[0x5A; 4096]).unwrap();
    for offset in [usize::MAX, usize::MAX - 3, usize::MAX - 4095] {
        assert!(matches!(
            region.write(&cpu, offset, b"wrapped"),
            Err(AccessError::OutOfBounds { .. })
        ));
        assert!(matches!(
            region.read(&cpu, offset, &mut back),
            Err(AccessError::OutOfBounds { .. })
        ));
        assert!(matches!(
            cpu.write_page(page, offset, b"wrapped"),
            Err(AccessError::OutOfBounds { .. })
        ));
        assert!(matches!(
            cpu.write_unmapped(page, offset, b"wrapped"),
            Err(AccessError::OutOfBounds { .. })
        ));
    }
    region.read(&cpu, 4090, &mut back).unwrap();
    assert_eq!(&back, b"across the boundary");
    let mut whole = vec![0u8; 4096];
    cpu.read_page(page, 0, &mut whole).unwrap();
    assert!(
        whole.iter().all(|byte| *byte == 0x5A),
        "nothing was written"
    );
    cpu.free_pages(page, Order(0)).unwrap();
    region.free(&cpu).unwrap();
    allocator.check_invariants().unwrap();
}
