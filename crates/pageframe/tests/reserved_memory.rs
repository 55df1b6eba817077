//! Boot-time reservations (`MachineDesc::reserved`, memblock_reserve()):
//! reserved pages are present but not managed, never handed out, count in
//! no size the allocator derives (watermarks, reserves, per-CPU high and
//! batch follow the managed pages, as in the kernel), make an offline of
//! their range fail with EBUSY, and bad reservations are refused naming
//! the field.

mod common;

use common::{allocate_until_oom, assert_conserved, assert_unchanged_mut, boot, one_node, MIB};
use pageframe::machine::{MemRange, NumaFake, PfnRange};
use pageframe::{CpuId, Gfp, HotplugError, NodeId, Order, Pfn, ZoneType};

/// A one-node machine of 64 MiB with `reserved` as (start, bytes).
fn reserving(reserved: &[(u64, u64)]) -> pageframe::MachineDesc {
    let mut desc = one_node(64, 2);
    desc.reserved = reserved
        .iter()
        .map(|&(start, size)| MemRange { start, size })
        .collect();
    desc
}

#[test]
fn reserved_pages_are_present_but_not_managed() {
    // 1 byte at 4 KiB + 100 reserves one whole page; 8 KiB from 6 KiB
    // reserves three (partial pages are reserved whole); 2 MiB at 32 MiB.
    let desc = reserving(&[(4096 + 100, 1), (6 << 10, 8 << 10), (32 * MIB, 2 * MIB)]);
    let layout = desc.layout().unwrap();
    let zone = &layout.nodes[0].zones[0];
    assert_eq!(
        zone.reserved,
        [
            PfnRange {
                start: Pfn(1),
                end: Pfn(4)
            },
            PfnRange {
                start: Pfn(8192),
                end: Pfn(8704)
            }
        ]
    );
    assert_eq!(zone.present_pages(), 16384);
    assert_eq!(zone.managed_pages(), 16384 - 3 - 512);
    let allocator = boot(&desc);
    let snapshot = &allocator.zone_snapshots()[0];
    assert_eq!((snapshot.present, snapshot.managed), (16384, 16384 - 515));
    assert_eq!(allocator.nr_free_pages(), 16384 - 515);
    let zoneinfo = pageframe::proc::zoneinfo(&allocator);
    assert!(zoneinfo.contains("present  16384"), "{zoneinfo}");
    assert!(zoneinfo.contains("managed  15869"), "{zoneinfo}");
}

#[test]
fn no_reserved_page_is_ever_allocated() {
    let desc = reserving(&[(4096 + 100, 1), (6 << 10, 8 << 10), (32 * MIB, 2 * MIB)]);
    let allocator = boot(&desc);
    let reserved = &allocator.layout().nodes[0].zones[0].reserved.clone();
    let mut held = 0;
    for order in [Order(0), Order(3), Order(9)] {
        for gfp in [Gfp::KERNEL, Gfp::HIGHUSER_MOVABLE, Gfp::ATOMIC] {
            let pages = allocate_until_oom(&allocator, CpuId(0), gfp, order, NodeId(0));
            for page in &pages {
                let (start, end) = (page.pfn(), page.pfn().offset(order.nr_pages()));
                assert!(
                    reserved
                        .iter()
                        .all(|range| end <= range.start || range.end <= start),
                    "order-{order} block at {start} touches {reserved:?}"
                );
            }
            held += pages.len() as u64 * order.nr_pages();
        }
    }
    assert_conserved(&allocator, held);
}

#[test]
fn sizes_follow_managed_pages_as_in_the_kernel() {
    // 64 MiB with 16 MiB reserved sizes everything like 48 MiB managed:
    // min_free_kbytes, watermarks, lowmem reserves, per-CPU high and batch.
    let reserved = boot(&reserving(&[(48 * MIB, 16 * MIB)]));
    let smaller = boot(&one_node(48, 2));
    assert_eq!(reserved.min_free_kbytes(), smaller.min_free_kbytes());
    let (a, b) = (&reserved.zone_snapshots()[0], &smaller.zone_snapshots()[0]);
    assert_eq!(a.managed, b.managed);
    assert_eq!(a.watermarks, b.watermarks);
    assert_eq!(a.lowmem_reserve, b.lowmem_reserve);
    let sizes = |zone: &pageframe::ZoneSnapshot| {
        zone.pcp
            .iter()
            .map(|pcp| (pcp.batch, pcp.high_min, pcp.high_max))
            .collect::<Vec<_>>()
    };
    assert_eq!(sizes(a), sizes(b));
    assert_ne!(a.present, b.present);
}

#[test]
fn offlining_reserved_memory_fails_with_ebusy_and_changes_nothing() {
    let mut allocator = boot(&reserving(&[(8 * MIB + 4096, 4096)]));
    let range = PfnRange {
        start: Pfn(2048),
        end: Pfn(3072),
    };
    let err = assert_unchanged_mut(&mut allocator, |allocator| {
        allocator.offline_pages(range).unwrap_err()
    });
    assert_eq!(
        err,
        HotplugError::Reserved {
            reserved: 1,
            first: Pfn(2049),
            start: 2048,
            end: 3072
        }
    );
    assert_eq!(err.errno(), pageframe::Errno::EBUSY);
    allocator.check_invariants().unwrap();
    // The range beside it has no reserved page: it goes, and comes back.
    let beside = PfnRange {
        start: Pfn(3072),
        end: Pfn(4096),
    };
    assert_eq!(allocator.offline_pages(beside).unwrap(), 1024);
    allocator.check_invariants().unwrap();
    allocator
        .online_pages(beside, NodeId(0), ZoneType::Movable)
        .unwrap();
    assert_conserved(&allocator, 0);
}

#[test]
fn numa_emulation_keeps_each_reservation_in_its_node() {
    let mut desc = reserving(&[(4096, 4096), (60 * MIB, 4096)]);
    desc.numa_fake = Some(NumaFake::Uniform(2));
    let layout = desc.layout().unwrap();
    let reserved: Vec<u64> = layout
        .nodes
        .iter()
        .map(|node| node.zones.iter().map(|zone| zone.reserved_pages()).sum())
        .collect();
    assert_eq!(reserved, [1, 1]);
    boot(&desc);
}

#[test]
fn bad_reservations_are_refused_naming_the_field() {
    /// Reservations, the field named, words of the message.
    type Case = (&'static [(u64, u64)], &'static str, &'static str);
    let cases: [Case; 5] = [
        (&[(4096, 0)], "reserved[0]", "zero bytes"),
        (&[(4096, 1), (u64::MAX, 2)], "reserved[1]", "past 2^64"),
        (&[(64 * MIB, 1)], "reserved[0]", "holds no memory"),
        (
            &[(4096, 1), (100 * MIB, 2 * MIB)],
            "reserved[1]",
            "holds no memory",
        ),
        (&[(0, 64 * MIB)], "reserved", "no memory to manage"),
    ];
    for (reserved, field, words) in cases {
        let desc = reserving(reserved);
        let err = desc.layout().unwrap_err();
        assert_eq!(err.field, field, "{reserved:?}: {err}");
        assert!(err.to_string().contains(words), "{reserved:?}: {err}");
        assert!(pageframe::LocalPageAllocator::boot(&desc).is_err());
    }
}

#[test]
fn a_zone_wholly_reserved_is_populated_but_never_used() {
    // The DMA zone (the first 16 MiB) all reserved: present, not managed,
    // no per-CPU lists sized, and every allocation lands above it.
    let mut desc = reserving(&[(0, 16 * MIB)]);
    desc.dma = true;
    let allocator = boot(&desc);
    let dma = &allocator.zone_snapshots()[0];
    assert_eq!(dma.zone_type, ZoneType::Dma);
    assert_eq!((dma.present, dma.managed, dma.free), (4096, 0, 0));
    assert!(dma.pcp.iter().all(|pcp| pcp.high == 0));
    let pages = allocate_until_oom(&allocator, CpuId(1), Gfp::KERNEL, Order(0), NodeId(0));
    assert!(pages.iter().all(|page| page.pfn().0 >= 4096));
    assert_conserved(&allocator, pages.len() as u64);
}

#[test]
fn reserve_mem_is_placed_top_down_after_mem_and_reserved() {
    let mut desc = one_node(256, 2);
    desc.reserved = vec![MemRange {
        start: 120 * MIB,
        size: 8 * MIB,
    }];
    pageframe::machine::apply_cmdline(
        &mut desc,
        "reserve_mem=8M:2M:oops mem=128M reserve_mem=1M:4K:trace",
    )
    .unwrap();
    let layout = desc.layout().unwrap();
    // mem= first (the kernel runs the handler after setup_arch()): memory
    // ends at 128M, whose top 8M are reserved; "oops" goes below them and
    // "trace" below it.
    let placed: Vec<(&str, u64, u64)> = layout
        .reserve_mem
        .iter()
        .map(|(name, range)| (name.as_str(), range.start, range.size))
        .collect();
    assert_eq!(
        placed,
        [("oops", 112 * MIB, 8 * MIB), ("trace", 111 * MIB, MIB)]
    );
    let zone = &layout.nodes[0].zones[0];
    assert_eq!(
        zone.reserved,
        [PfnRange {
            start: Pfn((111 * MIB) >> 12),
            end: Pfn((128 * MIB) >> 12)
        }]
    );
    let allocator = boot(&desc);
    assert_eq!(allocator.zone_snapshots()[0].managed, (111 * MIB) >> 12);
    // The same entries on a machine too small for them are refused.
    let mut small = one_node(64, 1);
    pageframe::machine::apply_cmdline(&mut small, "reserve_mem=64M:0:big").unwrap();
    assert_eq!(small.layout().unwrap_err().field, "cmdline reserve_mem");
}
