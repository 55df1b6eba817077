//! One conformance suite for every [`Backing`]: each test is a function taking
//! a factory, instantiated by `conformance!` once per implementation and
//! mermap access mode (`Window`, and `FileIo` through the `_file_io`
//! factories, which override the mode of whatever configuration a test
//! asks for). Data is asserted on every backing: the arena's bytes are real
//! memory, the simulation's live in its sparse store. Tests specific to one
//! implementation are in its own file.

use super::*;

const PAGES: u64 = 1024;
const PAGE_SIZE: usize = 4096;
const CPUS: usize = 2;

type Factory = fn(MermapConfig) -> Result<Box<dyn Backing>, BackingError>;

fn sim(mermap: MermapConfig) -> Result<Box<dyn Backing>, BackingError> {
    let backing = SimBacking::new(PAGES, PAGE_SIZE, CPUS, SimCosts::default(), mermap)?;
    Ok(Box::new(backing))
}

fn arena(mermap: MermapConfig) -> Result<Box<dyn Backing>, BackingError> {
    let backing = ArenaBacking::new(ArenaConfig {
        nr_pages: PAGES,
        page_size: PAGE_SIZE,
        nr_cpus: CPUS,
        populate: false,
        node_ranges: vec![(0, 0, PAGES / 2), (1, PAGES / 2, PAGES)],
        mermap,
    })?;
    Ok(Box::new(backing))
}

fn sim_file_io(mermap: MermapConfig) -> Result<Box<dyn Backing>, BackingError> {
    sim(file_io(mermap))
}

fn arena_file_io(mermap: MermapConfig) -> Result<Box<dyn Backing>, BackingError> {
    arena(file_io(mermap))
}

fn file_io(mermap: MermapConfig) -> MermapConfig {
    MermapConfig {
        access: MermapAccess::FileIo,
        ..mermap
    }
}

fn build(factory: Factory) -> Box<dyn Backing> {
    factory(MermapConfig::default()).unwrap()
}

/// The mapped state of every page.
fn states(backing: &dyn Backing) -> Vec<bool> {
    (0..backing.nr_pages())
        .map(|pfn| backing.is_direct_mapped(Pfn(pfn)))
        .collect()
}

/// A page-sized pattern that differs per page and per `salt`.
fn pattern(pfn: u64, salt: u8) -> Vec<u8> {
    (0..PAGE_SIZE)
        .map(|i| (i as u64 * 31 + pfn * 7 + u64::from(salt)) as u8)
        .collect()
}

/// Writes a pattern through `cpu`'s window, reads it back and checks it.
fn round_trip(backing: &dyn Backing, cpu: CpuId, pfn: u64, salt: u8) {
    let data = pattern(pfn, salt);
    backing.write_unmapped(cpu, Pfn(pfn), 0, &data).unwrap();
    let mut out = vec![0xEE; PAGE_SIZE];
    backing.read_unmapped(cpu, Pfn(pfn), 0, &mut out).unwrap();
    assert_eq!(out, data, "PFN {pfn}");
}

fn fresh_pages_are_mapped(factory: Factory) {
    let backing = build(factory);
    assert_eq!(backing.nr_pages(), PAGES);
    assert_eq!(backing.page_size(), PAGE_SIZE);
    assert!(states(&*backing).iter().all(|&mapped| mapped));
    assert!(!backing.is_direct_mapped(Pfn(PAGES)));
    assert!(backing.direct_map_ptr(Pfn(PAGES)).is_none());
    let has_bytes = backing.kind() == BackingKind::Arena;
    assert_eq!(backing.direct_map_ptr(Pfn(0)).is_some(), has_bytes);
    assert_eq!(backing.counters(), BackingCounters::default());
    assert!(!backing.describe().is_empty());
}

fn unmap_and_remap_change_state_and_count(factory: Factory) {
    let backing = build(factory);
    //   PFN   0 ..  10 | 10 | 11 .. 100 | 100 ........ 612 | 612 ..
    //         mapped   | un |  mapped   |     unmapped     | mapped
    backing.unmap_direct(Pfn(10), 1).unwrap();
    backing.unmap_direct(Pfn(100), 512).unwrap();
    let unmapped = |pfn: u64| pfn == 10 || (100..612).contains(&pfn);
    for (pfn, mapped) in states(&*backing).into_iter().enumerate() {
        assert_eq!(mapped, !unmapped(pfn as u64), "PFN {pfn}");
    }
    let counters = backing.counters();
    assert_eq!(counters.direct_map_unmaps, 2);
    assert_eq!(counters.pages_unmapped, 513);
    assert_eq!(counters.tlb_flush_global, 2, "one flush per call");

    backing.remap_direct(Pfn(100), 512).unwrap();
    backing.unmap_direct(Pfn(0), 0).unwrap();
    let counters = backing.counters();
    assert_eq!(counters.direct_map_remaps, 1);
    assert_eq!(counters.pages_remapped, 512);
    assert_eq!(counters.tlb_flush_global, 2, "remapping needs no flush");
    assert_eq!(
        counters.direct_map_unmaps, 2,
        "an empty range counts nothing"
    );
    for (pfn, mapped) in states(&*backing).into_iter().enumerate() {
        assert_eq!(mapped, pfn != 10, "PFN {pfn}");
    }
}

fn bad_input_changes_nothing(factory: Factory) {
    let backing = build(factory);
    backing.unmap_direct(Pfn(7), 2).unwrap();
    let (before_states, before_counters) = (states(&*backing), backing.counters());
    let out_of_range = |start: u64, nr_pages| BackingError::OutOfRange {
        start: Pfn(start),
        nr_pages,
    };
    let cpu = CpuId(0);
    let mut out = [0u8; 2];
    assert_eq!(
        backing.unmap_direct(Pfn(PAGES - 1), 2),
        Err(out_of_range(PAGES - 1, 2))
    );
    assert_eq!(
        backing.unmap_direct(Pfn(u64::MAX), 2),
        Err(out_of_range(u64::MAX, 2))
    );
    assert_eq!(
        backing.remap_direct(Pfn(PAGES), 1),
        Err(out_of_range(PAGES, 1))
    );
    assert_eq!(
        backing.zero_mapped(Pfn(PAGES), 1),
        Err(out_of_range(PAGES, 1))
    );
    assert_eq!(
        backing.zero_mapped(Pfn(0), 10),
        Err(BackingError::NotMapped(Pfn(7)))
    );
    assert_eq!(
        backing.zero_unmapped(cpu, Pfn(1), PAGES),
        Err(out_of_range(1, PAGES))
    );
    assert_eq!(
        backing.write_unmapped(cpu, Pfn(PAGES), 0, &[1]),
        Err(out_of_range(PAGES, 1))
    );
    let bad_offset = |offset, end| BackingError::BadOffset {
        offset,
        end,
        page_size: PAGE_SIZE,
    };
    assert_eq!(
        backing.write_unmapped(cpu, Pfn(0), PAGE_SIZE - 1, &[1, 2]),
        Err(bad_offset(PAGE_SIZE - 1, PAGE_SIZE + 1))
    );
    assert_eq!(
        backing.read_unmapped(cpu, Pfn(0), usize::MAX, &mut out),
        Err(bad_offset(usize::MAX, usize::MAX))
    );
    let no_cpu = CpuId(CPUS as u16);
    assert_eq!(
        backing.write_unmapped(no_cpu, Pfn(0), 0, &[1]),
        Err(BackingError::NoSuchCpu(no_cpu))
    );
    assert_eq!(
        backing.zero_unmapped(no_cpu, Pfn(0), 1),
        Err(BackingError::NoSuchCpu(no_cpu))
    );
    assert_eq!(states(&*backing), before_states);
    assert_eq!(backing.counters(), before_counters);
}

fn invalid_mermap_configs_are_rejected(factory: Factory) {
    for config in [
        MermapConfig {
            slots_per_cpu: 0,
            ..MermapConfig::default()
        },
        MermapConfig {
            fail_probability: 1.5,
            ..MermapConfig::default()
        },
        MermapConfig {
            fail_probability: f64::NAN,
            ..MermapConfig::default()
        },
    ] {
        assert!(matches!(factory(config), Err(BackingError::Unsupported(_))));
    }
}

fn mermap_round_trip_on_mapped_and_unmapped_pages(factory: Factory) {
    let backing = build(factory);
    backing.unmap_direct(Pfn(6), 1).unwrap();
    round_trip(&*backing, CpuId(0), 5, 1);
    round_trip(&*backing, CpuId(1), 6, 2);
    backing
        .write_unmapped(CpuId(0), Pfn(6), 100, b"mermap")
        .unwrap();
    let mut out = [0u8; 8];
    backing
        .read_unmapped(CpuId(1), Pfn(6), 99, &mut out)
        .unwrap();
    let before = pattern(6, 2)[99];
    assert_eq!(&out[..7], &[&[before][..], b"mermap"].concat()[..]);
    let counters = backing.counters();
    assert_eq!(counters.mermap_bytes_written, 2 * PAGE_SIZE as u64 + 6);
    assert_eq!(counters.mermap_bytes_read, 2 * PAGE_SIZE as u64 + 8);
    assert_eq!(counters.mermap_maps, 6);
    assert!(
        !backing.is_direct_mapped(Pfn(6)),
        "the mermap leaves the direct map alone"
    );
}

/// The direct map and the mermap are two views of the same bytes, on every
/// backing; a direct-map access may span pages, and fails (copying
/// nothing) when a page it touches is unmapped.
fn direct_map_and_mermap_share_the_bytes(factory: Factory) {
    let backing = build(factory);
    let data = pattern(40, 9);
    backing.write_mapped(Pfn(40), 4000, &data[..200]).unwrap();
    let mut out = vec![0u8; 200];
    backing.read_mapped(Pfn(40), 4000, &mut out).unwrap();
    assert_eq!(out, data[..200]);
    let mut tail = [0u8; 104];
    backing
        .read_unmapped(CpuId(1), Pfn(41), 0, &mut tail)
        .unwrap();
    assert_eq!(tail[..], data[96..200]);
    backing.unmap_direct(Pfn(41), 1).unwrap();
    assert_eq!(
        backing.write_mapped(Pfn(40), 4000, &[0xAB; 200]),
        Err(BackingError::NotMapped(Pfn(41)))
    );
    assert_eq!(
        backing.read_mapped(Pfn(41), 0, &mut tail),
        Err(BackingError::NotMapped(Pfn(41)))
    );
    backing
        .read_unmapped(CpuId(0), Pfn(41), 0, &mut tail)
        .unwrap();
    assert_eq!(tail[..], data[96..200], "the failed write copied nothing");
    backing.read_mapped(Pfn(40), 4000, &mut out[..96]).unwrap();
    assert_eq!(out[..96], data[..96], "the failed write copied nothing");
}

/// Offsets and lengths whose sums overflow are errors, never a wrapped
/// access (the checks never compute an unchecked `offset + len`).
fn overflowing_spans_are_errors(factory: Factory) {
    let backing = build(factory);
    let mut out = [0u8; 16];
    for offset in [usize::MAX, usize::MAX - 8, usize::MAX - 4095] {
        assert!(backing.write_mapped(Pfn(1), offset, &[1; 16]).is_err());
        assert!(backing.read_mapped(Pfn(1), offset, &mut out).is_err());
        assert!(matches!(
            backing.write_unmapped(CpuId(0), Pfn(1), offset, &[1; 16]),
            Err(BackingError::BadOffset { .. })
        ));
        assert!(matches!(
            backing.read_unmapped(CpuId(0), Pfn(1), offset, &mut out),
            Err(BackingError::BadOffset { .. })
        ));
    }
    assert!(backing.write_mapped(Pfn(u64::MAX), 0, &[1]).is_err());
    assert!(backing
        .read_mapped(Pfn(PAGES - 1), PAGE_SIZE - 8, &mut out)
        .is_err());
    let mut page = vec![0u8; 2 * PAGE_SIZE];
    backing.read_mapped(Pfn(0), 0, &mut page).unwrap();
    assert!(page.iter().all(|&b| b == 0), "nothing was written");
}

fn zero_unmapped_zeroes_and_counts(factory: Factory) {
    let backing = build(factory);
    for pfn in 20..23 {
        round_trip(&*backing, CpuId(0), pfn, 3);
    }
    backing.unmap_direct(Pfn(20), 3).unwrap();
    backing.zero_unmapped(CpuId(1), Pfn(20), 3).unwrap();
    let mut out = vec![0xEE; PAGE_SIZE];
    for pfn in 20..23 {
        backing
            .read_unmapped(CpuId(0), Pfn(pfn), 0, &mut out)
            .unwrap();
        assert!(out.iter().all(|&b| b == 0), "PFN {pfn}");
    }
    let counters = backing.counters();
    assert_eq!(counters.pages_zeroed, 3);
    assert_eq!(counters.mermap_maps, 3 * 2 + 3 + 3);
}

/// A backing whose mermap windows have two slots of eight-page spans.
fn two_span_slots(factory: Factory) -> Box<dyn Backing> {
    factory(MermapConfig {
        slots_per_cpu: 2,
        span_pages: 8,
        ..MermapConfig::default()
    })
    .unwrap()
}

fn spans_map_once_per_aligned_run(factory: Factory) {
    let backing = two_span_slots(factory);
    backing.unmap_direct(Pfn(0), 32).unwrap();
    for pfn in 3..19 {
        round_trip(&*backing, CpuId(0), pfn, 9);
    }
    let counters = backing.counters();
    assert_eq!(counters.mermap_maps, 3, "spans 0..8, 8..16, 16..24");
    assert_eq!(counters.mermap_wraps, 1, "two slots: the third span wraps");
    for pfn in 3..19 {
        round_trip(&*backing, CpuId(0), pfn, 10);
    }
    round_trip(&*backing, CpuId(0), PAGES - 1, 11);
    let zero_span = MermapConfig {
        span_pages: 3,
        ..MermapConfig::default()
    };
    assert!(factory(zero_span).is_err(), "spans are powers of two");
}

fn window_wraps_after_slots_per_cpu(factory: Factory) {
    let slots = 4;
    let backing = factory(MermapConfig {
        slots_per_cpu: slots,
        ..MermapConfig::default()
    })
    .unwrap();
    let mut out = [0u8; 1];
    let read = |cpu, pfn| backing.read_unmapped(CpuId(cpu), Pfn(pfn), 0, &mut [0u8; 1]);
    for pfn in 0..u64::from(slots) {
        read(0, pfn).unwrap();
    }
    assert_eq!(
        backing.counters().mermap_wraps,
        0,
        "the window is full, not wrapped"
    );
    read(1, 0).unwrap();
    assert_eq!(
        backing.counters().mermap_wraps,
        0,
        "CPU 1 has its own window"
    );
    read(0, 4).unwrap();
    let counters = backing.counters();
    assert_eq!(counters.mermap_wraps, 1);
    assert_eq!(counters.tlb_flush_local, 1);
    assert_eq!(counters.mermap_maps, u64::from(slots) + 2);
    for pfn in 10..30 {
        round_trip(&*backing, CpuId(0), pfn, 4);
    }
    backing
        .read_unmapped(CpuId(0), Pfn(0), 0, &mut out)
        .unwrap();
    let cpu0_maps = u64::from(slots) + 1 + 41;
    let counters = backing.counters();
    assert_eq!(counters.mermap_maps, cpu0_maps + 1);
    assert_eq!(counters.mermap_wraps, (cpu0_maps - 1) / u64::from(slots));
    assert_eq!(counters.tlb_flush_local, counters.mermap_wraps);
    assert_eq!(counters.mermap_fallbacks, 0);
}

fn failed_gets_use_the_reserved_slot(factory: Factory) {
    let backing = factory(MermapConfig {
        slots_per_cpu: 2,
        fail_probability: 1.0,
        seed: 1,
        ..MermapConfig::default()
    })
    .unwrap();
    for pfn in 0..5 {
        round_trip(&*backing, CpuId(pfn as u16 % 2), pfn, 5);
    }
    backing.zero_unmapped(CpuId(0), Pfn(0), 3).unwrap();
    let counters = backing.counters();
    assert_eq!(counters.mermap_fallbacks, 13);
    assert_eq!(counters.mermap_maps, 13);
    assert_eq!(counters.tlb_flush_local, 13);
    assert_eq!(counters.mermap_wraps, 0);
}

/// A fixed mix of operations with half the gets failing.
fn seeded_run(factory: Factory, seed: u64) -> BackingCounters {
    let backing = factory(MermapConfig {
        slots_per_cpu: 8,
        fail_probability: 0.5,
        seed,
        ..MermapConfig::default()
    })
    .unwrap();
    for pfn in 0..100 {
        backing.unmap_direct(Pfn(pfn), 1).unwrap();
        round_trip(&*backing, CpuId(pfn as u16 % 2), pfn, 6);
    }
    backing.zero_unmapped(CpuId(1), Pfn(0), 100).unwrap();
    backing.counters()
}

fn same_seed_same_counters(factory: Factory) {
    let first = seeded_run(factory, 42);
    assert_eq!(first, seeded_run(factory, 42));
    assert!(first.mermap_fallbacks > 0 && first.mermap_fallbacks < first.mermap_maps);
    assert_eq!(
        first.tlb_flush_local,
        first.mermap_wraps + first.mermap_fallbacks
    );
}

fn two_cpus_concurrently(factory: Factory) {
    let backing = build(factory);
    let backing = &*backing;
    std::thread::scope(|scope| {
        for cpu in 0..CPUS as u16 {
            scope.spawn(move || {
                let pages = u64::from(cpu) * 200..u64::from(cpu) * 200 + 150;
                backing.unmap_direct(Pfn(pages.start), 150).unwrap();
                for pfn in pages {
                    round_trip(backing, CpuId(cpu), pfn, 7);
                }
            });
        }
    });
    let counters = backing.counters();
    assert_eq!(counters.mermap_maps, 2 * 150 * 2);
    assert_eq!(counters.tlb_flush_global, 2);
}

macro_rules! conformance {
    ($backing:ident: $($test:ident),* $(,)?) => {
        mod $backing {
            $(
                #[test]
                fn $test() {
                    super::$test(super::$backing);
                }
            )*
        }
    };
}

macro_rules! conformance_suite {
    ($($backing:ident),*) => {
        $(
            conformance!($backing:
                fresh_pages_are_mapped,
                unmap_and_remap_change_state_and_count,
                bad_input_changes_nothing,
                invalid_mermap_configs_are_rejected,
                mermap_round_trip_on_mapped_and_unmapped_pages,
                zero_unmapped_zeroes_and_counts,
                direct_map_and_mermap_share_the_bytes,
                overflowing_spans_are_errors,
                window_wraps_after_slots_per_cpu,
                spans_map_once_per_aligned_run,
                failed_gets_use_the_reserved_slot,
                same_seed_same_counters,
                two_cpus_concurrently,
            );
        )*
    };
}

conformance_suite!(sim, arena, sim_file_io, arena_file_io);

/// The access mode changes how bytes move, never what the mermap counts:
/// the same seeded mix gives the same counters in both modes, spans and
/// wraps included.
#[test]
fn access_modes_count_the_same_events() {
    let spans = |factory: Factory| {
        let backing = two_span_slots(factory);
        backing.unmap_direct(Pfn(0), 64).unwrap();
        for pfn in 0..64 {
            round_trip(&*backing, CpuId(0), pfn, 12);
        }
        backing.zero_unmapped(CpuId(1), Pfn(0), 64).unwrap();
        backing.counters()
    };
    for (window, file_io) in [
        (sim as Factory, sim_file_io as Factory),
        (arena, arena_file_io),
    ] {
        assert_eq!(seeded_run(window, 42), seeded_run(file_io, 42));
        assert_eq!(spans(window), spans(file_io));
    }
}
