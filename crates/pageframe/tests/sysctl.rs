//! The page allocator's sysctls (`PageAllocator::write_sysctl`): a write
//! leaves the machine as if it had booted with the value (watermarks,
//! lowmem reserves, per-CPU sizes), refused text changes nothing, the
//! per-CPU lists are not drained by a write, a written min_free_kbytes
//! survives memory hotplug while the formula stays below it, a lowered
//! boost factor keeps the boost in force, and hostile text never panics.
//! The live kernel's answers to the same writes are the `sysctl` conform
//! suite.

mod common;

use common::{assert_unchanged_mut, boot, one_node};
use pageframe::machine::PfnRange;
use pageframe::{
    AllocOptions, CpuId, Errno, Gfp, LocalPageAllocator, MachineDesc, NodeId, Order, Pfn, VmSysctl,
    ZoneType,
};
use proptest::prelude::*;

const CPU: CpuId = CpuId(0);
const NODE: NodeId = NodeId(0);

/// An 8 GiB machine with DMA, DMA32 and Normal zones, so that every
/// lowmem reserve column is in use.
fn pc() -> MachineDesc {
    let mut desc = MachineDesc::uniform(8 << 30, 1, 2).unwrap();
    desc.dma = true;
    desc.dma32 = true;
    desc
}

/// What the sizes of every zone are: watermarks, reserves and per-CPU
/// limits, as /proc/zoneinfo shows them without the counts of free pages.
fn limits(allocator: &LocalPageAllocator) -> Vec<String> {
    allocator
        .zone_snapshots()
        .iter()
        .map(|zone| {
            let pcp: Vec<(u32, u32, u32)> = zone
                .pcp
                .iter()
                .map(|pcp| (pcp.batch, pcp.high_min, pcp.high_max))
                .collect();
            format!(
                "{:?} {:?} {:?} {:?}",
                zone.zone_type, zone.watermarks, zone.lowmem_reserve, pcp
            )
        })
        .collect()
}

fn write(allocator: &mut LocalPageAllocator, sysctl: VmSysctl, text: &str) {
    allocator.write_sysctl(sysctl, text).unwrap();
    allocator.check_invariants().unwrap();
}

#[test]
fn a_write_leaves_the_machine_as_booting_with_the_value_does() {
    let cases: [(VmSysctl, &str, AllocOptions); 4] = [
        (
            VmSysctl::WatermarkScaleFactor,
            "200\n",
            AllocOptions {
                watermark_scale_factor: 200,
                ..AllocOptions::KERNEL
            },
        ),
        (
            VmSysctl::LowmemReserveRatio,
            "128 64 16 0",
            AllocOptions {
                lowmem_reserve_ratio: [128, 64, 16, 0],
                ..AllocOptions::KERNEL
            },
        ),
        (
            VmSysctl::PercpuPagelistHighFraction,
            "0x10",
            AllocOptions {
                pcp: pageframe::PcpSizing::new(16, None).unwrap(),
                ..AllocOptions::KERNEL
            },
        ),
        (
            VmSysctl::WatermarkBoostFactor,
            "0",
            AllocOptions {
                watermark_boost_factor: 0,
                ..AllocOptions::KERNEL
            },
        ),
    ];
    for (sysctl, text, options) in cases {
        let mut written = boot(&pc());
        write(&mut written, sysctl, text);
        let booted = LocalPageAllocator::boot_with(&pc(), options).unwrap();
        assert_eq!(limits(&written), limits(&booted), "{sysctl:?}");
        assert_eq!(
            pageframe::proc::sysctl(&written),
            pageframe::proc::sysctl(&booted),
            "{sysctl:?}"
        );
        assert_eq!(written.options(), booted.options(), "{sysctl:?}");
    }
}

#[test]
fn min_free_kbytes_moves_the_watermarks_and_the_per_cpu_high() {
    let mut allocator = boot(&pc());
    let before = allocator.zone_snapshots();
    write(&mut allocator, VmSysctl::MinFreeKbytes, "1024");
    assert_eq!(allocator.min_free_kbytes(), 1024);
    assert_eq!(allocator.read_sysctl(VmSysctl::MinFreeKbytes), "1024\n");
    let after = allocator.zone_snapshots();
    let normal = after
        .iter()
        .position(|zone| zone.zone_type == ZoneType::Normal)
        .unwrap();
    assert!(after[normal].watermarks.min < before[normal].watermarks.min);
    // high_min follows the low watermark (zone_highsize()).
    assert!(after[normal].pcp[0].high_min < before[normal].pcp[0].high_min);
    // The zones share 256 pages in proportion to their managed pages.
    let min_total: u64 = after
        .iter()
        .filter(|zone| zone.managed > 0)
        .map(|zone| zone.watermarks.min)
        .sum();
    assert!((250..=256).contains(&min_total), "{min_total}");
}

#[test]
fn refused_text_changes_nothing() {
    let mut allocator = boot(&pc());
    let refused: [(VmSysctl, &[u8]); 12] = [
        (VmSysctl::MinFreeKbytes, b"-1"),
        (VmSysctl::MinFreeKbytes, b"2147483648"),
        (VmSysctl::MinFreeKbytes, b"12abc"),
        (VmSysctl::MinFreeKbytes, b" \n"),
        (VmSysctl::MinFreeKbytes, b"08"),
        (VmSysctl::WatermarkScaleFactor, b"0"),
        (VmSysctl::WatermarkScaleFactor, b"3001"),
        (VmSysctl::WatermarkBoostFactor, b"-5"),
        (VmSysctl::PercpuPagelistHighFraction, b"7"),
        (VmSysctl::PercpuPagelistHighFraction, b"1"),
        (VmSysctl::WatermarkScaleFactor, b"\xff\xfe"),
        (VmSysctl::MinFreeKbytes, b"99999999999999999999999999"),
    ];
    for (sysctl, text) in refused {
        let result = assert_unchanged_mut(&mut allocator, |allocator| {
            allocator.write_sysctl(sysctl, text)
        });
        assert_eq!(result, Err(Errno::EINVAL), "{sysctl:?} {text:?}");
    }
}

#[test]
fn lowmem_reserve_ratio_keeps_the_values_before_a_bad_one_as_the_kernel_does() {
    let mut allocator = boot(&pc());
    write(&mut allocator, VmSysctl::LowmemReserveRatio, "16 x 8");
    assert_eq!(
        allocator.read_sysctl(VmSysctl::LowmemReserveRatio),
        "16\t256\t32\t0\n"
    );
    write(&mut allocator, VmSysctl::LowmemReserveRatio, "-3 1 0");
    assert_eq!(
        allocator.read_sysctl(VmSysctl::LowmemReserveRatio),
        "0\t1\t0\t0\n"
    );
    // Ratio 0 clears a zone's reserves; 1 reserves all of the zones above.
    let zones = allocator.zone_snapshots();
    let dma32 = zones
        .iter()
        .find(|zone| zone.zone_type == ZoneType::Dma32)
        .unwrap();
    let normal_managed = zones
        .iter()
        .find(|zone| zone.zone_type == ZoneType::Normal)
        .unwrap()
        .managed;
    assert_eq!(
        dma32.lowmem_reserve[ZoneType::Normal.index()],
        normal_managed
    );
    let dma = zones
        .iter()
        .find(|zone| zone.zone_type == ZoneType::Dma)
        .unwrap();
    assert_eq!(dma.lowmem_reserve, [0; ZoneType::COUNT]);
}

#[test]
fn a_write_of_zero_bytes_keeps_the_value_and_runs_the_handler() {
    let mut allocator = boot(&pc());
    let before = limits(&allocator);
    for sysctl in VmSysctl::ALL {
        write(&mut allocator, sysctl, "");
    }
    assert_eq!(limits(&allocator), before);
    // min_free_kbytes is now the user's value: a resize keeps it while the
    // formula does not exceed it.
    let kept = allocator.min_free_kbytes();
    let mut grown = allocator;
    let start = grown.layout().end_pfn;
    let end = Pfn(start.0 + (1 << 15));
    grown
        .online_pages(PfnRange { start, end }, NODE, ZoneType::Movable)
        .unwrap();
    assert_eq!(grown.min_free_kbytes(), kept);
}

#[test]
fn a_written_min_free_kbytes_survives_hotplug_until_the_formula_exceeds_it() {
    let desc = one_node(1024, 2);
    let mut written = boot(&desc);
    let mut plain = boot(&desc);
    let formula = plain.min_free_kbytes();
    write(
        &mut written,
        VmSysctl::MinFreeKbytes,
        &(formula + 100).to_string(),
    );
    let online = |allocator: &mut LocalPageAllocator, gib: u64| {
        let start = allocator.layout().end_pfn;
        let end = Pfn(start.0 + (gib << 18));
        allocator
            .online_pages(PfnRange { start, end }, NODE, ZoneType::Normal)
            .unwrap();
        allocator.check_invariants().unwrap();
    };
    // One more GiB raises the formula from about 4096 to about 5792, past
    // the written value, which it replaces. (The formula reads the managed
    // pages above each zone's high watermark, which the written value
    // raised a little: one KiB less than the plain machine's here.)
    online(&mut written, 1);
    online(&mut plain, 1);
    assert!(plain.min_free_kbytes() > formula + 100);
    assert!(written.min_free_kbytes() > formula + 100);
    assert!(written.min_free_kbytes().abs_diff(plain.min_free_kbytes()) <= 2);
    // A value above the formula stays through a resize.
    let high = plain.min_free_kbytes() * 2;
    write(&mut written, VmSysctl::MinFreeKbytes, &high.to_string());
    online(&mut written, 1);
    assert_eq!(written.min_free_kbytes(), high);
}

#[test]
fn a_write_does_not_drain_the_per_cpu_lists() {
    let mut allocator = boot(&one_node(1024, 1));
    let pages: Vec<_> = {
        let cpu = allocator.cpu(CPU).unwrap();
        (0..2000)
            .map(|_| {
                cpu.alloc_pages(Gfp::HIGHUSER_MOVABLE, Order(0), NODE)
                    .unwrap()
            })
            .collect()
    };
    {
        let cpu = allocator.cpu(CPU).unwrap();
        for page in pages {
            cpu.free_pages(page, Order(0)).unwrap();
        }
    }
    let listed = |allocator: &LocalPageAllocator| -> u32 {
        allocator
            .zone_snapshots()
            .iter()
            .map(|zone| zone.pcp[0].count)
            .sum()
    };
    let before = listed(&allocator);
    assert!(before > 100, "{before}");
    // A fraction of 1024 gives a `high` far below what the list holds.
    write(&mut allocator, VmSysctl::PercpuPagelistHighFraction, "1024");
    assert_eq!(listed(&allocator), before);
    // The next free brings the list under the new high.
    let cpu = allocator.cpu(CPU).unwrap();
    let page = cpu
        .alloc_pages(Gfp::HIGHUSER_MOVABLE, Order(0), NODE)
        .unwrap();
    cpu.free_pages(page, Order(0)).unwrap();
    drop(cpu);
    allocator.check_invariants().unwrap();
    assert!(listed(&allocator) < before);
}

#[test]
fn sysctl_names_are_taken_in_every_spelling() {
    for sysctl in VmSysctl::ALL {
        let name = sysctl.name();
        for spelled in [
            name.to_string(),
            format!("vm.{name}"),
            format!("vm/{name}"),
            format!("/proc/sys/vm/{name}"),
        ] {
            assert_eq!(VmSysctl::from_name(&spelled), Some(sysctl));
        }
    }
    assert_eq!(VmSysctl::from_name("vm.swappiness"), None);
    assert_eq!(VmSysctl::from_name(""), None);
}

#[test]
fn options_no_write_could_set_are_refused_at_boot() {
    for options in [
        AllocOptions {
            watermark_scale_factor: 0,
            ..AllocOptions::KERNEL
        },
        AllocOptions {
            watermark_scale_factor: 3001,
            ..AllocOptions::KERNEL
        },
        AllocOptions {
            watermark_boost_factor: 1 << 31,
            ..AllocOptions::KERNEL
        },
        AllocOptions {
            lowmem_reserve_ratio: [u32::MAX, 256, 32, 0],
            ..AllocOptions::KERNEL
        },
    ] {
        let err = LocalPageAllocator::boot_with(&pc(), options)
            .err()
            .expect("refused");
        assert!(err.to_string().contains("vm."), "{err}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any bytes written to any sysctl, between allocations and frees:
    /// no panic, the invariants hold, a refused write changes nothing, and
    /// the machine's limits always equal a fresh boot's with the options
    /// and min_free_kbytes the writes left.
    #[test]
    fn any_text_keeps_the_machine_consistent(
        writes in proptest::collection::vec(
            (0..VmSysctl::ALL.len(), prop_oneof![
                proptest::collection::vec(any::<u8>(), 0..24),
                "[ \\t\\n]{0,2}-?(0x)?[0-9a-f]{0,12}[ \\t\\nx]{0,2}[0-9]{0,4}".prop_map(String::into_bytes),
            ], 0..200u32),
            1..12,
        ),
    ) {
        let mut allocator = boot(&one_node(512, 2));
        let mut held = Vec::new();
        for (index, text, allocs) in writes {
            let sysctl = VmSysctl::ALL[index];
            {
                let cpu = allocator.cpu(CPU).unwrap();
                for _ in 0..allocs {
                    if let Ok(page) = cpu.alloc_pages(Gfp::HIGHUSER_MOVABLE, Order(0), NODE) {
                        held.push(page);
                    }
                }
                for page in held.drain(..held.len() / 2) {
                    cpu.free_pages(page, Order(0)).unwrap();
                }
            }
            let before = (limits(&allocator), pageframe::proc::sysctl(&allocator));
            let result = allocator.write_sysctl(sysctl, &text);
            allocator.check_invariants().unwrap();
            if result.is_err() {
                prop_assert_eq!(result, Err(Errno::EINVAL));
                prop_assert_eq!(&before, &(limits(&allocator), pageframe::proc::sysctl(&allocator)));
            }
            let mut fresh = LocalPageAllocator::boot_with(&one_node(512, 2), allocator.options()).unwrap();
            let min_free = allocator.min_free_kbytes().to_string();
            fresh.write_sysctl(VmSysctl::MinFreeKbytes, &min_free).unwrap();
            prop_assert_eq!(limits(&fresh), limits(&allocator));
        }
    }
}

/// A min_free_kbytes large enough that the low watermark split over the
/// CPUs passes an eighth of the zone: the kernel stores `high_min` above
/// `high_max` as computed, and its clamp() then holds `high` at
/// `high_max`, where a free drains (pageframe used to raise `high_max` to
/// `high_min`: 32 000 against the kernel's 16 384 here).
#[test]
fn a_high_min_above_high_max_is_kept_and_high_stays_at_high_max() {
    let mut allocator = boot(&one_node(1024, 2));
    write(&mut allocator, VmSysctl::MinFreeKbytes, "204800");
    let zone = allocator
        .zone_snapshots()
        .into_iter()
        .find(|zone| zone.managed > 0)
        .unwrap();
    let (high_min, high_max) = (zone.pcp[0].high_min, zone.pcp[0].high_max);
    assert_eq!(high_max, 16_384, "an eighth of 1 GiB over 2 CPUs");
    assert!(high_min > high_max, "{high_min} {high_max}");
    let cpu = allocator.cpu(CPU).unwrap();
    let pages: Vec<_> = (0..20_000)
        .map(|_| {
            cpu.alloc_pages(Gfp::HIGHUSER_MOVABLE, Order(0), NODE)
                .unwrap()
        })
        .collect();
    for page in pages {
        cpu.free_pages(page, Order(0)).unwrap();
    }
    drop(cpu);
    allocator.check_invariants().unwrap();
    let pcp = &allocator
        .zone_snapshots()
        .into_iter()
        .find(|zone| zone.managed > 0)
        .unwrap()
        .pcp[0];
    assert_eq!(pcp.high, high_max);
    assert!(pcp.count <= high_max, "{} listed", pcp.count);
}
