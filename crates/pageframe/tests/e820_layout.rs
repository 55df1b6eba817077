//! Machines laid out like a PC's e820 map: memory ranges at any byte, the
//! pages wholly inside them present (PFN_UP(start)..PFN_DOWN(end)), holes
//! inside memory sections with pageblocks of the zone above them, and
//! memory reserved at boot. The figures are what Linux 6.18 shows on an
//! x86-64 host with `System RAM` at 0x1000-0x9fbff, 0x100000-0xbfffffff
//! and 4G-25G (its /proc/zoneinfo and /proc/pagetypeinfo).

mod common;

use common::{allocate_until_oom, assert_conserved, boot};
use pageframe::machine::{MemRange, NodeDesc, NumaFake};
use pageframe::{CpuId, FreeError, Gfp, MachineDesc, NodeId, Order, Page, Pfn, ZoneType};

const GIB: u64 = 1 << 30;

/// The host's `System RAM`, shortened to 1 GiB above 4G.
fn pc_ranges() -> Vec<MemRange> {
    vec![
        MemRange {
            start: 0x1000,
            size: 0x9fc00 - 0x1000,
        },
        MemRange {
            start: 0x100000,
            size: 0xc000_0000 - 0x100000,
        },
        MemRange {
            start: 4 * GIB,
            size: GIB,
        },
    ]
}

fn pc() -> MachineDesc {
    let mut desc = MachineDesc::uniform(4 * GIB, 1, 2).unwrap();
    desc.dma = true;
    desc.dma32 = true;
    desc.nodes[0].ranges = pc_ranges();
    desc
}

#[test]
fn zone_sizes_are_the_kernels() {
    let layout = pc().layout().unwrap();
    let zones = &layout.nodes[0].zones;
    let sizes: Vec<(ZoneType, u64, u64, u64)> = zones
        .iter()
        .map(|zone| {
            (
                zone.zone_type,
                zone.span.start.0,
                zone.spanned_pages(),
                zone.present_pages(),
            )
        })
        .collect();
    assert_eq!(
        sizes[..3],
        [
            // The host's zoneinfo: DMA spanned 4095, present 3998; DMA32
            // spanned 1044480, present 782336.
            (ZoneType::Dma, 1, 4095, 3998),
            (ZoneType::Dma32, 4096, 1044480, 782336),
            (ZoneType::Normal, 1 << 20, 1 << 18, 1 << 18),
        ]
    );
}

#[test]
fn the_first_mebibyte_reserved_gives_the_hosts_dma_managed_pages() {
    // x86 keeps the memory below 1 MiB out of the buddy allocator; the
    // host's DMA zone manages 3840 of its 3998 present pages.
    let mut desc = pc();
    desc.reserved = vec![MemRange {
        start: 0,
        size: 1 << 20,
    }];
    let allocator = boot(&desc);
    let dma = &allocator.zone_snapshots()[0];
    assert_eq!((dma.spanned, dma.present, dma.managed), (4095, 3998, 3840));
    assert_conserved(&allocator, 0);
}

#[test]
fn pageblocks_are_counted_and_typed_as_the_kernel_does() {
    let allocator = boot(&pc());
    let counts: Vec<[u64; 5]> = allocator
        .zone_snapshots()
        .iter()
        .filter(|zone| zone.is_populated())
        .map(|zone| zone.pageblocks)
        .collect();
    // DMA's first pageblock starts at absent PFN 0, so memmap_init_range()
    // never marks it Movable: the host shows DMA with 1 Unmovable and 7
    // Movable blocks. DMA32 counts 1528 blocks (the 3G-4G hole has no
    // memory section).
    assert_eq!(counts[0], [1, 7, 0, 0, 0]);
    assert_eq!(counts[1], [0, 1528, 0, 0, 0]);
    assert_eq!(counts[2], [0, 512, 0, 0, 0]);
    let pagetypeinfo = pageframe::proc::pagetypeinfo(&allocator);
    assert!(
        pagetypeinfo.contains("Node 0, zone      DMA            1            7"),
        "{pagetypeinfo}"
    );
}

#[test]
fn a_hole_inside_a_section_is_never_handed_out_and_is_not_memory() {
    // A 6 MiB hole inside the first 128 MiB section: its pageblocks belong
    // to the zone above (the section has a memmap), but none of its pages
    // is memory.
    let mut desc = MachineDesc::uniform(GIB, 1, 2).unwrap();
    desc.nodes[0].ranges = vec![
        MemRange {
            start: 0,
            size: 64 << 20,
        },
        MemRange {
            start: 70 << 20,
            size: 58 << 20,
        },
    ];
    let allocator = boot(&desc);
    let zone = &allocator.zone_snapshots()[0];
    assert_eq!(zone.pageblocks.iter().sum::<u64>(), 64);
    assert_eq!(zone.pageblocks[0], 3, "the hole's blocks are Unmovable");
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    for pfn in [64u64 << 8, (66 << 8) + 5, (70 << 8) - 1] {
        let page = Page::from_pfn(Pfn(pfn));
        assert_eq!(
            cpu.free_pages(page, Order(0)),
            Err(FreeError::NotMemory(Pfn(pfn)))
        );
    }
    let pages = allocate_until_oom(&allocator, CpuId(1), Gfp::KERNEL, Order(0), NodeId(0));
    assert!(pages
        .iter()
        .all(|page| !(64 << 8..70 << 8).contains(&page.pfn().0)));
    assert_conserved(&allocator, pages.len() as u64);
}

#[test]
fn byte_ranges_round_inward_to_whole_pages() {
    let mut desc = MachineDesc::uniform(GIB, 1, 1).unwrap();
    desc.nodes[0].ranges = vec![
        // Not one whole page: no memory.
        MemRange {
            start: 0x10,
            size: 0xff0 - 0x10,
        },
        MemRange {
            start: 0x1234,
            size: GIB,
        },
    ];
    let layout = desc.layout().unwrap();
    let present = &layout.nodes[0].zones[0].present;
    assert_eq!(present.len(), 1);
    assert_eq!(
        (present[0].start.0, present[0].end.0),
        (2, (0x1234 + GIB) >> 12)
    );
    boot(&desc);
}

#[test]
fn two_nodes_in_one_pageblock_are_refused() {
    let mut desc = MachineDesc::uniform(GIB, 2, 2).unwrap();
    desc.nodes = vec![
        NodeDesc {
            ranges: vec![MemRange {
                start: 0,
                size: (GIB / 2) + 4096,
            }],
            cpus: vec![CpuId(0)],
        },
        NodeDesc {
            ranges: vec![MemRange {
                start: (GIB / 2) + 4096,
                size: GIB / 2,
            }],
            cpus: vec![CpuId(1)],
        },
    ];
    let err = desc.layout().unwrap_err();
    assert_eq!(err.field, "node[1].mem", "{err}");
    assert!(err.to_string().contains("shares a pageblock"), "{err}");
}

#[test]
fn numa_emulation_cuts_at_pageblocks() {
    let mut desc = pc();
    desc.numa_fake = Some(NumaFake::Uniform(3));
    let layout = desc.layout().unwrap();
    assert_eq!(layout.nodes.len(), 3);
    for node in &layout.nodes[1..] {
        let start = node
            .zones
            .iter()
            .filter(|zone| zone.is_populated())
            .map(|zone| zone.span.start.0)
            .min()
            .unwrap();
        assert_eq!(start % 512, 0, "node {} starts at PFN {start:#x}", node.id);
    }
    let allocator = boot(&desc);
    assert_eq!(
        allocator.layout().present_pages(),
        pc().layout().unwrap().present_pages()
    );
    assert_conserved(&allocator, 0);
}

/// One node of `ranges` (start, bytes) with one CPU.
fn one_node_of(ranges: &[(u64, u64)]) -> MachineDesc {
    let mut desc = MachineDesc::uniform(GIB, 1, 1).unwrap();
    desc.nodes[0].ranges = ranges
        .iter()
        .map(|&(start, size)| MemRange { start, size })
        .collect();
    desc
}

#[test]
fn ranges_touching_inside_a_page_merge_as_memblock_merges_them() {
    // Page 1 is split between the two entries: memblock merges touching
    // regions of a node, so it is present.
    let desc = one_node_of(&[(0, 0x1800), (0x1800, 8 << 20)]);
    let layout = desc.layout().unwrap();
    assert_eq!(layout.present_pages(), 2049);
    boot(&desc);
}

#[test]
fn mem_limit_counts_bytes_with_or_without_numa_emulation() {
    // 32 MiB of memory from byte 1 ends at byte 32M + 1: pages 1 to 8191.
    let mut desc = one_node_of(&[(1, 64 << 20)]);
    pageframe::machine::apply_cmdline(&mut desc, "mem=32M").unwrap();
    assert_eq!(desc.layout().unwrap().present_pages(), 8191);
    pageframe::machine::apply_cmdline(&mut desc, "numa=fake=1").unwrap();
    assert_eq!(desc.layout().unwrap().present_pages(), 8191);
}

#[test]
fn numa_emulation_never_leaves_a_pageblock_to_two_nodes() {
    // Emulated node 0's 32 MiB end at 32M + 4K, and the next range starts
    // at 33M, in the same pageblock: node 0 takes that pageblock's memory.
    let desc_of = |fake: &str| {
        let mut desc = one_node_of(&[(0x1000, 32 << 20), (33 << 20, 32 << 20)]);
        pageframe::machine::apply_cmdline(&mut desc, fake).unwrap();
        desc
    };
    for fake in ["numa=fake=2", "numa=fake=2U"] {
        let layout = desc_of(fake).layout().unwrap();
        assert_eq!(layout.nodes.len(), 2, "{fake}");
        assert_eq!(layout.nodes[1].zones[0].span.start.0, (34 << 20) >> 12);
        boot(&desc_of(fake));
    }
}

#[test]
fn a_zone_ending_inside_a_pageblock_is_refused() {
    // 64K pages make 32 MiB pageblocks: ZONE_DMA's 16 MiB end is inside one.
    let mut desc = MachineDesc::uniform(64 << 20, 1, 1).unwrap();
    desc.page_shift = 16;
    desc.dma = true;
    let err = desc.layout().unwrap_err();
    assert_eq!(err.field, "dma", "{err}");
    desc.dma = false;
    desc.dma32 = true;
    // 8 GiB pageblocks: ZONE_DMA32's 4 GiB end is inside one.
    desc.max_order = 17;
    desc.pageblock_order = 17;
    desc.nodes[0].ranges[0].size = 16 << 30;
    assert_eq!(desc.layout().unwrap_err().field, "dma32");
}
