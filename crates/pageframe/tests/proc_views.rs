//! The kernel-format views, character for character as mm/vmstat.c prints
//! them: `/proc/buddyinfo` (`"Node %d, zone %8s "` then `"%6lu "` per
//! order), `/proc/pagetypeinfo` (headers, `"Node %4d, zone %8s, type %12s "`
//! rows, the `>` mark of a list walk capped at 100000, block counts),
//! `/proc/zoneinfo` (field names and widths, unpopulated zones cut short
//! after `protection:`) and `/proc/vmstat` (names and values after a known
//! sequence of calls), plus `AllocOptions::vm_events` and `proc::render`.

mod common;

use common::{assert_conserved, boot, one_node, vmstat_value, MIB};
use pageframe::machine::{apply_cmdline, MemRange};
use pageframe::{
    proc, AllocOptions, CpuId, Gfp, LocalPageAllocator, MachineDesc, NodeId, Order, Page,
};

/// Two nodes of 32 MiB, each with 8 MiB of ZONE_MOVABLE.
fn two_nodes_with_movable() -> LocalPageAllocator {
    let mut desc = MachineDesc::uniform(64 * MIB, 2, 2).unwrap();
    apply_cmdline(&mut desc, "movablecore=16M").unwrap();
    boot(&desc)
}

#[test]
fn buddyinfo_lines_are_laid_out_as_frag_show_print() {
    let allocator = two_nodes_with_movable();
    let expected = concat!(
        "Node 0, zone   Normal      0      0      0      0      0      0      0      0      0      0      6 \n",
        "Node 0, zone  Movable      0      0      0      0      0      0      0      0      0      0      2 \n",
        "Node 1, zone   Normal      0      0      0      0      0      0      0      0      0      0      6 \n",
        "Node 1, zone  Movable      0      0      0      0      0      0      0      0      0      0      2 \n",
    );
    assert_eq!(proc::buddyinfo(&allocator), expected);

    // After an order-5 request: one order-10 block splits into 32 + 64 + ... + 512.
    let cpu = allocator.cpu(CpuId(1)).unwrap();
    let page = cpu
        .alloc_pages(Gfp::KERNEL | Gfp::THISNODE, Order(5), NodeId(1))
        .unwrap();
    allocator.check_invariants().unwrap();
    let node1_normal = proc::buddyinfo(&allocator)
        .lines()
        .nth(2)
        .unwrap()
        .to_string();
    assert_eq!(
        node1_normal,
        "Node 1, zone   Normal      0      0      0      0      0      1      1      1      1      1      5 "
    );
    // Each field is `%6lu ` wide, whatever the value.
    for line in proc::buddyinfo(&allocator).lines() {
        let fields = &line["Node 0, zone   Normal ".len()..];
        assert_eq!(fields.len(), 11 * 7, "{line:?}");
        for field in fields.as_bytes().chunks(7) {
            assert_eq!(field[6], b' ');
            let text = std::str::from_utf8(&field[..6]).unwrap();
            text.trim_start().parse::<u64>().unwrap();
        }
    }
    cpu.free_pages(page, Order(5)).unwrap();
    assert_conserved(&allocator, 0);
}

#[test]
fn pagetypeinfo_headers_rows_and_block_counts() {
    let allocator = two_nodes_with_movable();
    let row = |node: u16, zone: &str, migratetype: &str, last: &str| {
        format!(
            "Node {node:>4}, zone {zone:>8}, type {migratetype:>12} {}{last:>6} \n",
            "     0 ".repeat(10)
        )
    };
    let mut expected = String::new();
    for (node, normal_blocks, movable_blocks) in [(0u16, "6", "2"), (1, "6", "2")] {
        expected.push_str("Page block order: 9\nPages per block:  512\n\n");
        expected.push_str("Free pages count per migrate type at order       0      1      2      3      4      5      6      7      8      9     10 \n");
        for (zone, movable_last) in [("Normal", normal_blocks), ("Movable", movable_blocks)] {
            expected.push_str(&row(node, zone, "Unmovable", "0"));
            expected.push_str(&row(node, zone, "Movable", movable_last));
            expected.push_str(&row(node, zone, "Reclaimable", "0"));
            expected.push_str(&row(node, zone, "HighAtomic", "0"));
            expected.push_str(&row(node, zone, "Isolate", "0"));
            expected.push_str(&row(node, zone, "Unmovable-Unmapped", "0"));
            expected.push_str(&row(node, zone, "Movable-Unmapped", "0"));
        }
        expected.push_str("\nNumber of blocks type     Unmovable      Movable  Reclaimable   HighAtomic      Isolate \n");
        expected.push_str(&format!(
            "Node {node}, zone   Normal            0           12            0            0            0 \n"
        ));
        expected.push_str(&format!(
            "Node {node}, zone  Movable            0            4            0            0            0 \n"
        ));
    }
    assert_eq!(proc::pagetypeinfo(&allocator), expected);
}

#[test]
fn pagetypeinfo_marks_a_list_longer_than_the_walk_cap() {
    // 1 GiB: fill most of it with movable pages in bulk, then free every
    // other page: about 129000 unmergeable order-0 blocks on one list.
    let allocator = boot(&one_node(1024, 1));
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let mut held: Vec<Page> = Vec::new();
    loop {
        let filled = cpu
            .alloc_pages_bulk_vec(Gfp::MOVABLE, NodeId(0), 4096, &mut held)
            .unwrap();
        allocator.check_invariants().unwrap();
        if filled < 4096 {
            break;
        }
    }
    let (freed, kept): (Vec<Page>, Vec<Page>) = held.iter().partition(|page| page.pfn().0 % 2 == 0);
    assert!(freed.len() > 120_000, "only {} pages to free", freed.len());
    cpu.free_pages_bulk(&freed).unwrap();
    allocator.drain_all_pages();
    assert_conserved(&allocator, kept.len() as u64);
    let movable_row = proc::pagetypeinfo(&allocator)
        .lines()
        .find(|line| line.starts_with("Node    0, zone   Normal, type      Movable "))
        .unwrap()
        .to_string();
    assert!(
        movable_row.starts_with("Node    0, zone   Normal, type      Movable >100000 "),
        "{movable_row}"
    );
    cpu.free_pages_bulk(&kept).unwrap();
    allocator.drain_all_pages();
    assert_conserved(&allocator, 0);
}

#[test]
fn zoneinfo_fields_match_zoneinfo_show_print() {
    let allocator = boot(&one_node(64, 2));
    let expected = "\
Node 0, zone   Normal
  pages free     16384
        boost    0
        min      256
        low      320
        high     384
        promo    448
        spanned  16384
        present  16384
        managed  16384
        cma      0
        protection: (0, 0, 0, 0)
      nr_free_pages 16384
      numa_hit     0
      numa_miss    0
      numa_foreign 0
      numa_local   0
      numa_other   0
  pagesets
    cpu: 0
              count:    0
              high:     0
              batch:    3
              high_min: 160
              high_max: 1024
  vm stats threshold: 4
    cpu: 1
              count:    0
              high:     0
              batch:    3
              high_min: 160
              high_max: 1024
  vm stats threshold: 4
  node_unreclaimable:  0
  start_pfn:           0
Node 0, zone  Movable
  pages free     0
        boost    0
        min      32
        low      32
        high     32
        promo    32
        spanned  0
        present  0
        managed  0
        cma      0
        protection: (0, 0, 0, 0)
";
    assert_eq!(proc::zoneinfo(&allocator), expected);

    // After one order-0 allocation on CPU 1: a batch of 3 was taken, one
    // page handed out, two left on CPU 1's list; high (0 until first used,
    // as on a fresh kernel) is high_min raised by the refill (nr_pcp_alloc()).
    let cpu = allocator.cpu(CpuId(1)).unwrap();
    let page = cpu.alloc_pages(Gfp::KERNEL, Order(0), NodeId(0)).unwrap();
    let text = proc::zoneinfo(&allocator);
    assert!(text.contains("\n  pages free     16381\n"));
    assert!(text.contains("\n      nr_free_pages 16381\n      numa_hit     1\n"));
    assert!(text.contains("\n    cpu: 1\n              count:    2\n              high:     163\n"));
    assert!(text.contains("\n    cpu: 0\n              count:    0\n              high:     0\n"));
    cpu.free_pages(page, Order(0)).unwrap();
    assert_conserved(&allocator, 0);
}

#[test]
fn zoneinfo_shows_unpopulated_zones_and_lowmem_protection() {
    // Memory from 4 GiB up: DMA32 exists but is empty; buddyinfo skips it.
    let mut desc = one_node(16, 1);
    desc.dma32 = true;
    desc.nodes[0].ranges = vec![MemRange {
        start: 4 << 30,
        size: 16 * MIB,
    }];
    let allocator = boot(&desc);
    let text = proc::zoneinfo(&allocator);
    assert!(text.starts_with(
        "Node 0, zone    DMA32\n  pages free     0\n        boost    0\n        min      0\n"
    ));
    assert!(text
        .contains("        cma      0\n        protection: (0, 0, 0, 0)\nNode 0, zone   Normal\n"));
    assert!(text.contains("\n  start_pfn:           1048576\n"));
    assert_eq!(proc::buddyinfo(&allocator).lines().count(), 1);
    assert!(proc::buddyinfo(&allocator).starts_with("Node 0, zone   Normal "));

    // A populated DMA32 zone below a Normal one is protected from it.
    let mut desc = one_node(32, 1);
    desc.dma32 = true;
    desc.nodes[0].ranges = vec![MemRange {
        start: (4 << 30) - 16 * MIB,
        size: 32 * MIB,
    }];
    let allocator = boot(&desc);
    assert!(
        proc::zoneinfo(&allocator).starts_with("Node 0, zone    DMA32\n  pages free     4096\n")
    );
    assert!(proc::zoneinfo(&allocator).contains("        protection: (0, 0, 16, 16)\n"));
}

#[test]
fn vmstat_counts_a_known_sequence_of_calls() {
    let allocator = boot(&one_node(64, 2));
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    // Order 3: a refill of max(3 >> 3, 2) = 2 blocks, claiming an order-10
    // unmovable block first; order 0: a refill of 3 pages.
    let eight = cpu.alloc_pages(Gfp::KERNEL, Order(3), NodeId(0)).unwrap();
    let one = cpu.alloc_pages(Gfp::KERNEL, Order(0), NodeId(0)).unwrap();
    cpu.free_pages(eight, Order(3)).unwrap();
    allocator.check_invariants().unwrap();
    let counters = proc::vmstat_counters(&allocator);
    let names: Vec<&str> = counters.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        names,
        [
            "nr_free_pages",
            "nr_free_pcp_pages",
            "numa_hit",
            "numa_miss",
            "numa_foreign",
            "numa_local",
            "numa_other",
            "pgalloc_dma",
            "pgalloc_dma32",
            "pgalloc_normal",
            "pgalloc_movable",
            "pgfree",
            "pgalloc_fail",
            "pcp_trylock_fail",
            "pcp_refill",
            "pcp_drain_pages",
            "extfrag_claim",
            "extfrag_steal",
            "highatomic_reserved",
            "highatomic_unreserved",
            "zone_lock_acquired",
            "zone_lock_contended",
            "nr_unmapped_pageblocks",
            "direct_map_unmapped_blocks",
            "direct_map_remapped_blocks",
            "tlb_flush_global",
            "tlb_flush_local",
            "pages_zeroed",
            "mermap_maps",
            "mermap_wraps",
            "mermap_fallbacks",
        ]
    );
    let expected = [
        ("nr_free_pages", 16384 - 16 - 3),
        ("nr_free_pcp_pages", 8 + 8 + 2),
        ("numa_hit", 2),
        ("numa_miss", 0),
        ("numa_local", 2),
        ("pgalloc_normal", 9),
        ("pgalloc_movable", 0),
        ("pgfree", 8),
        ("pcp_refill", 2),
        ("pcp_drain_pages", 0),
        ("extfrag_claim", 1),
        ("extfrag_steal", 0),
        ("zone_lock_contended", 0),
    ];
    for (name, value) in expected {
        assert_eq!(vmstat_value(&allocator, name), value, "{name}");
    }
    let text = proc::vmstat(&allocator);
    assert!(text.starts_with("nr_free_pages 16365\nnr_free_pcp_pages 18\nnuma_hit 2\n"));
    assert_eq!(text.lines().count(), names.len());
    cpu.free_pages(one, Order(0)).unwrap();
    assert_conserved(&allocator, 0);
}

#[test]
fn vm_events_off_counts_nothing_but_the_state() {
    let options = AllocOptions {
        vm_events: false,
        free_checks: true,
        ..AllocOptions::KERNEL
    };
    let allocator = LocalPageAllocator::boot_with(&one_node(32, 1), options).unwrap();
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let mut slots = vec![None; 32];
    cpu.alloc_pages_bulk(Gfp::KERNEL, NodeId(0), None, &mut slots)
        .unwrap();
    let page = cpu.alloc_pages(Gfp::KERNEL, Order(2), NodeId(0)).unwrap();
    allocator.check_invariants().unwrap();
    for name in ["numa_hit", "numa_local", "pgalloc_normal", "pgfree"] {
        assert_eq!(vmstat_value(&allocator, name), 0, "{name}");
    }
    assert!(vmstat_value(&allocator, "pcp_refill") > 0);
    assert_conserved(&allocator, 36);
    cpu.free_pages(page, Order(2)).unwrap();
    let pages: Vec<Page> = slots.into_iter().flatten().collect();
    cpu.free_pages_bulk(&pages).unwrap();
    assert_conserved(&allocator, 0);
    assert_eq!(vmstat_value(&allocator, "pgfree"), 0);
}

#[test]
fn render_knows_every_view_by_name() {
    let allocator = boot(&one_node(16, 1));
    assert_eq!(
        proc::VIEWS,
        [
            "buddyinfo",
            "pagetypeinfo",
            "zoneinfo",
            "vmstat",
            "shuffle",
            "sysctl"
        ]
    );
    assert_eq!(proc::render(&allocator, "shuffle").as_deref(), Some("N\n"));
    assert_eq!(
        proc::render(&allocator, "sysctl"),
        Some(proc::sysctl(&allocator))
    );
    assert_eq!(
        proc::render(&allocator, "buddyinfo"),
        Some(proc::buddyinfo(&allocator))
    );
    assert_eq!(
        proc::render(&allocator, "pagetypeinfo"),
        Some(proc::pagetypeinfo(&allocator))
    );
    assert_eq!(
        proc::render(&allocator, "zoneinfo"),
        Some(proc::zoneinfo(&allocator))
    );
    assert_eq!(
        proc::render(&allocator, "vmstat"),
        Some(proc::vmstat(&allocator))
    );
    assert_eq!(proc::render(&allocator, "slabinfo"), None);
}

#[test]
fn pagetypeinfo_shows_the_unmapped_free_lists() {
    let allocator = boot(&one_node(64, 1));
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let unmapped_pages = |text: &str| -> u64 {
        text.lines()
            .filter(|line| line.contains("type Unmovable-Unmapped "))
            .map(|line| {
                line.split("Unmovable-Unmapped")
                    .nth(1)
                    .unwrap()
                    .split_whitespace()
                    .enumerate()
                    .map(|(order, count)| count.parse::<u64>().unwrap() << order)
                    .sum::<u64>()
            })
            .sum()
    };
    assert_eq!(unmapped_pages(&proc::pagetypeinfo(&allocator)), 0);
    let page = cpu
        .alloc_pages(Gfp::KERNEL | Gfp::UNMAPPED, Order(0), NodeId(0))
        .unwrap();
    // One pageblock converted: all of it but the page is on the unmapped
    // lists.
    assert_eq!(unmapped_pages(&proc::pagetypeinfo(&allocator)), 511);
    cpu.free_pages(page, Order(0)).unwrap();
    cpu.drain_pcp();
    assert_eq!(unmapped_pages(&proc::pagetypeinfo(&allocator)), 512);
    allocator.check_invariants().unwrap();
}
