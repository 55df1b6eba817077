//! zram tests: same pages, huge pages, the limit, mm_stat's format, and a
//! property test that every slot reads back what was last written to it,
//! over every backend and both compressors.

use super::*;
use crate::page_source::CpuPages;
use crate::{CpuId, LocalPageAllocator, MachineDesc};
use proptest::prelude::*;

const PAGE: usize = 4096;

/// The simulated machine and, when the host can make one, the same machine
/// over a memfd arena (else the reason is printed): every test runs on
/// both, as only the backing differs.
fn machines() -> Vec<LocalPageAllocator> {
    let desc = MachineDesc::uniform(256 << 20, 1, 1).unwrap();
    let mut machines = vec![LocalPageAllocator::boot(&desc).unwrap()];
    match crate::PageAllocator::boot_arena(
        &desc,
        crate::AllocOptions::default(),
        0,
        crate::ArenaOptions::default(),
    ) {
        Ok(arena) => machines.push(arena),
        Err(err) => println!("arena variant skipped: no memfd arena on this host ({err})"),
    }
    machines
}

fn device<'a>(
    allocator: &'a LocalPageAllocator,
    backend: Backend,
    compressor: Compressor,
    nr_slots: usize,
) -> Zram<'a> {
    let pool = backend
        .create(CpuPages::new(allocator.cpu(CpuId(0)).unwrap()))
        .unwrap();
    let config = ZramConfig {
        compressor,
        ..ZramConfig::new(nr_slots)
    };
    Zram::new(pool, config).unwrap()
}

const BACKENDS: [Backend; 4] = [
    Backend::Zsmalloc { chain_size: 4 },
    Backend::Zsmalloc { chain_size: 8 },
    Backend::Zsmalloc { chain_size: 16 },
    Backend::Afmalloc,
];

/// Text-like data: compresses to roughly `1 / repeat` of a page.
fn text_page(seed: u64, distinct: usize) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let alphabet: Vec<u8> = (0..distinct)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            b'a' + (state % 26) as u8
        })
        .collect();
    (0..PAGE)
        .map(|at| alphabet[(at * 7 + at / 13) % distinct])
        .collect()
}

/// Bytes that do not compress.
fn noise_page(seed: u64) -> Vec<u8> {
    let mut state = seed | 1;
    (0..PAGE)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

#[test]
fn a_slot_table_too_large_for_memory_is_an_error_not_an_abort() {
    let allocator = &machines()[0];
    for nr_slots in [0, usize::MAX / 2, usize::MAX] {
        let pool = Backend::Zsmalloc { chain_size: 8 }
            .create(CpuPages::new(allocator.cpu(CpuId(0)).unwrap()))
            .unwrap();
        let err = Zram::new(pool, ZramConfig::new(nr_slots))
            .map(|_| ())
            .unwrap_err();
        assert!(matches!(err, ZramError::Config(_)), "{nr_slots}: {err}");
    }
    allocator.check_invariants().unwrap();
}

#[test]
fn same_pages_take_no_memory_and_read_back() {
    for allocator in machines() {
        let mut zram = device(&allocator, BACKENDS[1], Compressor::Lz4, 8);
        let page: Vec<u8> = 0x0102_0304_0506_0708u64
            .to_ne_bytes()
            .iter()
            .copied()
            .cycle()
            .take(PAGE)
            .collect();
        zram.write(0, &page).unwrap();
        zram.write(1, &[0u8; PAGE]).unwrap();
        assert_eq!(zram.pool().total_pages(), 0);
        let stat = zram.mm_stat();
        assert_eq!(
            (stat.orig_data_size, stat.same_pages, stat.compr_data_size),
            (2 * PAGE as u64, 2, 0)
        );
        let mut out = vec![0xffu8; PAGE];
        zram.read(0, &mut out).unwrap();
        assert_eq!(out, page);
        // A page that differs only in its last word is not the same page.
        let mut almost = page.clone();
        almost[PAGE - 1] ^= 1;
        assert_eq!(page_same_filled(&almost), None);
        zram.check_invariants().unwrap();
    }
}

#[test]
fn incompressible_pages_are_stored_huge_on_every_backend() {
    for allocator in machines() {
        for backend in BACKENDS {
            let mut zram = device(&allocator, backend, Compressor::Lz4, 4);
            let noise = noise_page(7);
            zram.write(0, &noise).unwrap();
            let stat = zram.mm_stat();
            assert_eq!(
                (stat.huge_pages, stat.huge_pages_since),
                (1, 1),
                "{backend:?}"
            );
            assert_eq!(stat.compr_data_size, PAGE as u64);
            let mut out = vec![0; PAGE];
            zram.read(0, &mut out).unwrap();
            assert_eq!(out, noise);
            zram.discard(0).unwrap();
            let stat = zram.mm_stat();
            assert_eq!((stat.huge_pages, stat.huge_pages_since), (0, 1));
            zram.check_invariants().unwrap();
        }
    }
}

#[test]
fn the_huge_threshold_is_the_pools() {
    for allocator in machines() {
        let zs = device(&allocator, BACKENDS[1], Compressor::Lz4, 1);
        // zs_huge_class_size() with chain 8: the first class from the top that
        // holds more than one object per zspage, less the handle.
        assert!(
            (3000..PAGE).contains(&zs.huge_class_size()),
            "{}",
            zs.huge_class_size()
        );
        let af = device(&allocator, Backend::Afmalloc, Compressor::Lz4, 1);
        assert_eq!(af.huge_class_size(), PAGE / 4 * 3 + 1);
    }
}

#[test]
fn a_write_over_the_limit_fails_and_keeps_the_old_page() {
    for allocator in machines() {
        let mut zram = device(&allocator, BACKENDS[1], Compressor::Lz4, 64);
        zram.set_mem_limit(2 * PAGE as u64);
        let mut written = 0;
        let mut failure = None;
        for slot in 0..64 {
            match zram.write(slot, &noise_page(slot as u64 + 1)) {
                Ok(()) => written += 1,
                Err(err) => {
                    failure = Some((slot, err));
                    break;
                }
            }
        }
        let (slot, err) = failure.expect("the limit stops the writes");
        assert_eq!(written, 2);
        assert_eq!(err.errno(), Errno::ENOMEM);
        assert!(!zram.is_stored(slot));
        assert!(zram.pool().total_pages() <= 2);
        // Overwriting a stored slot past the limit leaves the slot as it was.
        assert!(zram.write(0, &noise_page(99)).is_err());
        let mut out = vec![0; PAGE];
        zram.read(0, &mut out).unwrap();
        assert_eq!(out, noise_page(1));
        assert_eq!(zram.stats().failed_writes, 2);
        let stat = zram.mm_stat();
        assert_eq!(stat.mem_limit, 2 * PAGE as u64);
        assert_eq!(
            stat.mem_used_max,
            3 * PAGE as u64,
            "the failed allocation counts in max"
        );
        zram.check_invariants().unwrap();
    }
}

#[test]
fn mm_stat_and_io_stat_have_the_kernels_format() {
    for allocator in machines() {
        let mut zram = device(&allocator, BACKENDS[0], Compressor::Zstd { level: 5 }, 16);
        for slot in 0..8 {
            zram.write(slot, &text_page(slot as u64, 40)).unwrap();
        }
        zram.write(8, &[0u8; PAGE]).unwrap();
        assert!(zram.write(16, &[0u8; PAGE]).is_err());
        zram.discard(3).unwrap();
        let line = zram.mm_stat().to_string();
        let fields: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(fields.len(), 9, "{line}");
        assert_eq!(fields[0], (8 * PAGE).to_string());
        assert_eq!(fields[5], "1");
        assert!(line.ends_with('\n'));
        // %8llu: each field right-aligned in 8 columns, one space between.
        assert_eq!(line.len(), 9 * 9, "{line:?}");
        assert_eq!(&line[..8], format!("{:>8}", 8 * PAGE));
        assert_eq!(zram.io_stat(), "       0        0        1        1\n");
    }
}

#[test]
fn compact_keeps_every_page_readable() {
    for allocator in machines() {
        for backend in BACKENDS {
            let mut zram = device(&allocator, backend, Compressor::Lz4, 600);
            for slot in 0..600 {
                zram.write(slot, &text_page(slot as u64, 20 + slot % 200))
                    .unwrap();
            }
            for slot in (0..600).filter(|slot| slot % 3 != 0) {
                zram.discard(slot).unwrap();
            }
            let before = zram.pool().total_pages();
            let freed = zram.compact().unwrap();
            assert_eq!(zram.pool().total_pages() + freed, before, "{backend:?}");
            assert_eq!(zram.mm_stat().pages_compacted, freed);
            let mut out = vec![0; PAGE];
            for slot in (0..600).step_by(3) {
                zram.read(slot, &mut out).unwrap();
                assert_eq!(out, text_page(slot as u64, 20 + slot % 200));
            }
            zram.check_invariants().unwrap();
        }
    }
}

#[test]
fn prepared_writes_equal_plain_writes() {
    for allocator in machines() {
        let pages: Vec<Vec<u8>> = (0..40u64)
            .map(|at| match at % 4 {
                0 => vec![at as u8; PAGE],
                1 => noise_page(at),
                _ => text_page(at, 10 + at as usize),
            })
            .collect();
        for backend in BACKENDS {
            let mut plain = device(&allocator, backend, Compressor::Lz4, 40);
            let mut prepared = device(&allocator, backend, Compressor::Lz4, 40);
            for (slot, page) in pages.iter().enumerate() {
                plain.write(slot, page).unwrap();
                prepared
                    .write_prepared(slot, &Prepared::new(Compressor::Lz4, page).unwrap())
                    .unwrap();
            }
            assert_eq!(plain.mm_stat(), prepared.mm_stat());
            let mut out = vec![0; PAGE];
            for (slot, page) in pages.iter().enumerate() {
                prepared.read(slot, &mut out).unwrap();
                assert_eq!(&out, page);
            }
        }
    }
}

#[test]
fn bad_input_is_an_error_that_changes_nothing() {
    for allocator in machines() {
        let mut zram = device(&allocator, BACKENDS[1], Compressor::Lz4, 2);
        let before = zram.mm_stat();
        assert_eq!(
            zram.write(2, &[1u8; PAGE]).unwrap_err().errno(),
            Errno::EINVAL
        );
        assert_eq!(
            zram.write(0, &[1u8; 100]).unwrap_err().errno(),
            Errno::EINVAL
        );
        assert!(zram.read(5, &mut [0u8; PAGE]).is_err());
        assert!(zram.discard(9).is_err());
        assert_eq!(zram.mm_stat(), before);
        assert!(Compressor::Zstd { level: 40 }.validate().is_err());
        assert_eq!(
            Compressor::parse("zstd:7"),
            Some(Compressor::Zstd { level: 7 })
        );
        assert_eq!(Compressor::parse("lzo"), Some(Compressor::Lzo));
        assert_eq!(Compressor::parse("lzo-rle"), None);
        assert_eq!(Compressor::parse("lz5"), None);
        for backend in [BACKENDS[0], BACKENDS[1], Backend::Afmalloc] {
            assert_eq!(Backend::parse(&backend.label()), Some(backend));
        }
        assert_eq!(Backend::parse("zsmalloc-chain3"), None);
        assert_eq!(Backend::parse("zsmalloc-chain17"), None);
        zram.check_invariants().unwrap();
    }
}

/// A prepared page the device could not read back (another compressor,
/// another page size, a huge page without its original) is refused before
/// anything changes: the slot keeps its page and every statistic stays.
#[test]
fn mismatched_prepared_pages_are_refused_and_change_nothing() {
    for allocator in machines() {
        for backend in BACKENDS {
            let mut zram = device(&allocator, backend, Compressor::Lz4, 2);
            let old = text_page(1, 40);
            zram.write(0, &old).unwrap();
            let (mm_before, mut stats_before) = (zram.mm_stat(), zram.stats());
            let zstd = Prepared::new(Compressor::Zstd { level: 3 }, &text_page(2, 40)).unwrap();
            let short_same = Prepared::new(Compressor::Lz4, &[7u8; 64]).unwrap();
            let short_text = Prepared::new(Compressor::Lz4, &text_page(3, 40)[..2048]).unwrap();
            let stripped = match Prepared::new(Compressor::Lz4, &noise_page(4)).unwrap() {
                Prepared::Compressed {
                    compressor,
                    bytes,
                    page_len,
                    ..
                } => Prepared::Compressed {
                    compressor,
                    bytes,
                    original: None,
                    page_len,
                },
                same => panic!("noise is not a same page: {same:?}"),
            };
            for bad in [&zstd, &short_same, &short_text, &stripped] {
                let err = zram.write_prepared(0, bad).unwrap_err();
                assert_eq!(err.errno(), Errno::EINVAL, "{err}");
                assert_eq!(zram.mm_stat(), mm_before);
                assert_eq!(zram.stats(), stats_before);
                zram.check_invariants().unwrap();
                let mut out = vec![0u8; PAGE];
                zram.read(0, &mut out).unwrap();
                assert_eq!(out, old, "{}: the slot kept its page", backend.label());
                // The check's own read counts.
                stats_before.num_reads += 1;
            }
        }
    }
}

/// One step of the property test.
#[derive(Clone, Debug)]
enum Action {
    /// Write a page of a kind (0 same, 1 noise, 2.. text) to a slot.
    Write {
        slot: usize,
        kind: u8,
        seed: u64,
    },
    Discard {
        slot: usize,
    },
    Compact,
}

fn action(slots: usize) -> impl Strategy<Value = Action> {
    prop_oneof![
        6 => (0..slots, 0u8..6, any::<u64>()).prop_map(|(slot, kind, seed)| Action::Write { slot, kind, seed }),
        2 => (0..slots).prop_map(|slot| Action::Discard { slot }),
        1 => Just(Action::Compact),
    ]
}

fn page_of(kind: u8, seed: u64) -> Vec<u8> {
    match kind {
        0 => seed
            .to_ne_bytes()
            .iter()
            .copied()
            .cycle()
            .take(PAGE)
            .collect(),
        1 => noise_page(seed),
        _ => text_page(seed, 4 + (seed % 300) as usize),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Reading any slot returns exactly the bytes last written to it (zeros
    /// when never written or discarded), on every backend and compressor,
    /// with the invariants checked after every operation.
    #[test]
    fn reads_return_what_was_last_written(
        backend in 0usize..BACKENDS.len(),
        codec in 0usize..3,
        arena in any::<bool>(),
        actions in prop::collection::vec(action(24), 1..120),
    ) {
        let Some(allocator) = machines().into_iter().nth(usize::from(arena)) else {
            return Ok(());
        };
        let compressor = [Compressor::Lz4, Compressor::Zstd { level: 3 }, Compressor::Lzo][codec];
        let mut zram = device(&allocator, BACKENDS[backend], compressor, 24);
        let mut model: Vec<Option<Vec<u8>>> = vec![None; 24];
        let mut out = vec![0u8; PAGE];
        for action in actions {
            match action {
                Action::Write { slot, kind, seed } => {
                    let page = page_of(kind, seed);
                    zram.write(slot, &page).unwrap();
                    model[slot] = Some(page);
                }
                Action::Discard { slot } => {
                    zram.discard(slot).unwrap();
                    model[slot] = None;
                }
                Action::Compact => {
                    zram.compact().unwrap();
                }
            }
            zram.check_invariants().unwrap();
            for (slot, expected) in model.iter().enumerate() {
                zram.read(slot, &mut out).unwrap();
                match expected {
                    Some(page) => prop_assert_eq!(&out, page),
                    None => prop_assert!(out.iter().all(|byte| *byte == 0)),
                }
            }
        }
        let stat = zram.mm_stat();
        let live = model.iter().flatten().count() as u64;
        prop_assert_eq!(stat.orig_data_size, live * PAGE as u64);
    }
}

/// lzo (LZO1X-1) round-trips on every backend and compresses text below
/// half a page; a device refuses pages prepared with another compressor.
#[test]
fn lzo_round_trips_and_compresses() {
    for allocator in machines() {
        for backend in BACKENDS {
            let mut zram = device(&allocator, backend, Compressor::Lzo, 3);
            let text = text_page(5, 40);
            zram.write(0, &text).unwrap();
            zram.write(1, &noise_page(6)).unwrap();
            assert!(zram.mm_stat().compr_data_size < (PAGE + PAGE / 2) as u64);
            assert_eq!(zram.mm_stat().huge_pages, 1);
            let mut out = vec![0u8; PAGE];
            zram.read(0, &mut out).unwrap();
            assert_eq!(out, text);
            let lz4 = Prepared::new(Compressor::Lz4, &text).unwrap();
            assert_eq!(
                zram.write_prepared(2, &lz4).unwrap_err().errno(),
                Errno::EINVAL
            );
            assert!(!zram.is_stored(2));
            zram.check_invariants().unwrap();
        }
    }
}
