//! State-machine property test of zram against a reference model (slot ->
//! page bytes): plain and prepared writes of same-filled, compressible and
//! incompressible pages, prepared pages of the wrong compressor (refused),
//! reads, discards (of a slot and of a range), compaction and slots past
//! the end. After every step the
//! invariants hold and the slot touched reads back byte for byte; every
//! slot at each compaction and at the end. A refused call leaves `mm_stat`
//! unchanged and the slot readable. Every backend, both compressors, on the
//! simulated backing and, when the host can make one, a memfd arena.

use pageframe::page_source::CpuPages;
use pageframe::zram::{Backend, Compressor, Prepared, Zram, ZramConfig};
use pageframe::{
    AllocOptions, ArenaOptions, CpuId, LocalPageAllocator, MachineDesc, PageAllocator,
};
use proptest::prelude::*;

const PAGE: usize = 4096;
const SLOTS: usize = 32;
const BACKENDS: [Backend; 3] = [
    Backend::Zsmalloc { chain_size: 4 },
    Backend::Zsmalloc { chain_size: 8 },
    Backend::Afmalloc,
];

#[derive(Clone, Debug)]
enum Op {
    Write {
        slot: usize,
        kind: u8,
        seed: u64,
    },
    Prepared {
        slot: usize,
        kind: u8,
        seed: u64,
        foreign: bool,
    },
    Read {
        slot: usize,
    },
    Discard {
        slot: usize,
    },
    DiscardRange {
        first: usize,
        pages: usize,
    },
    Compact,
    PastTheEnd {
        slot: usize,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..SLOTS, 0u8..6, any::<u64>()).prop_map(|(slot, kind, seed)| Op::Write { slot, kind, seed }),
        3 => (0..SLOTS, 0u8..6, any::<u64>(), prop::bool::weighted(0.3))
            .prop_map(|(slot, kind, seed, foreign)| Op::Prepared { slot, kind, seed, foreign }),
        4 => (0..SLOTS).prop_map(|slot| Op::Read { slot }),
        2 => (0..SLOTS).prop_map(|slot| Op::Discard { slot }),
        1 => (0..SLOTS + 4, 0..SLOTS + 4).prop_map(|(first, pages)| Op::DiscardRange { first, pages }),
        1 => Just(Op::Compact),
        1 => (SLOTS..usize::MAX).prop_map(|slot| Op::PastTheEnd { slot }),
    ]
}

/// A page of a kind: 0 same-filled, 1 incompressible, else text-like.
fn page_of(kind: u8, seed: u64) -> Vec<u8> {
    let mut state = seed | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    match kind {
        0 => seed
            .to_ne_bytes()
            .iter()
            .copied()
            .cycle()
            .take(PAGE)
            .collect(),
        1 => (0..PAGE).map(|_| next() as u8).collect(),
        _ => {
            let words: Vec<u8> = (0..4 + seed % 200)
                .map(|_| b'a' + (next() % 26) as u8)
                .collect();
            words.iter().copied().cycle().take(PAGE).collect()
        }
    }
}

fn machine(arena: bool) -> Option<LocalPageAllocator> {
    let desc = MachineDesc::uniform(64 << 20, 1, 1).unwrap();
    if !arena {
        return Some(LocalPageAllocator::boot(&desc).unwrap());
    }
    match PageAllocator::boot_arena(&desc, AllocOptions::default(), 0, ArenaOptions::default()) {
        Ok(allocator) => Some(allocator),
        Err(err) => {
            println!("arena case skipped: no memfd arena on this host ({err})");
            None
        }
    }
}

fn check_slot(zram: &mut Zram, model: &[Option<Vec<u8>>], slot: usize) {
    let mut out = vec![0u8; PAGE];
    zram.read(slot, &mut out).unwrap();
    match &model[slot] {
        Some(page) => assert!(out == *page, "slot {slot} changed"),
        None => assert!(out.iter().all(|byte| *byte == 0), "slot {slot} not empty"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// About 128 x 400 = 51 000 operations.
    #[test]
    fn zram_matches_its_model(
        ops in prop::collection::vec(op(), 1..800),
        backend in 0..BACKENDS.len(),
        zstd in any::<bool>(),
        arena in any::<bool>(),
    ) {
        let Some(allocator) = machine(arena) else { return Ok(()) };
        let (compressor, foreign) = if zstd {
            (Compressor::Zstd { level: 3 }, Compressor::Lz4)
        } else {
            (Compressor::Lz4, Compressor::Zstd { level: 3 })
        };
        let pool = BACKENDS[backend]
            .create(CpuPages::new(allocator.cpu(CpuId(0)).unwrap()))
            .unwrap();
        let mut zram = Zram::new(pool, ZramConfig { compressor, ..ZramConfig::new(SLOTS) }).unwrap();
        let mut model: Vec<Option<Vec<u8>>> = vec![None; SLOTS];
        for op in &ops {
            match *op {
                Op::Write { slot, kind, seed } => {
                    let page = page_of(kind, seed);
                    zram.write(slot, &page).unwrap();
                    model[slot] = Some(page);
                    check_slot(&mut zram, &model, slot);
                }
                Op::Prepared { slot, kind, seed, foreign: wrong } => {
                    let page = page_of(kind, seed);
                    let with = if wrong { foreign } else { compressor };
                    let prepared = Prepared::new(with, &page).unwrap();
                    let refused = wrong && matches!(prepared, Prepared::Compressed { .. });
                    let before = zram.mm_stat();
                    let result = zram.write_prepared(slot, &prepared);
                    if refused {
                        prop_assert!(result.is_err());
                        prop_assert_eq!(zram.mm_stat(), before);
                    } else {
                        result.unwrap();
                        model[slot] = Some(page);
                    }
                    check_slot(&mut zram, &model, slot);
                }
                Op::Read { slot } => check_slot(&mut zram, &model, slot),
                Op::Discard { slot } => {
                    zram.discard(slot).unwrap();
                    model[slot] = None;
                    check_slot(&mut zram, &model, slot);
                }
                Op::DiscardRange { first, pages } => {
                    let before = (zram.mm_stat(), zram.stats());
                    let result = zram.discard_range(first, pages);
                    if first + pages > SLOTS {
                        prop_assert!(result.is_err());
                        prop_assert_eq!(zram.mm_stat(), before.0);
                        prop_assert_eq!(zram.stats().invalid_io, before.1.invalid_io + 1);
                    } else {
                        result.unwrap();
                        prop_assert_eq!(zram.stats().notify_free, before.1.notify_free + pages as u64);
                        for slot in first..first + pages {
                            model[slot] = None;
                            check_slot(&mut zram, &model, slot);
                        }
                    }
                }
                Op::Compact => {
                    zram.compact().unwrap();
                    for slot in 0..SLOTS {
                        check_slot(&mut zram, &model, slot);
                    }
                }
                Op::PastTheEnd { slot } => {
                    let before = zram.mm_stat();
                    prop_assert!(zram.write(slot, &[1u8; PAGE]).is_err());
                    prop_assert!(zram.read(slot, &mut [0u8; PAGE]).is_err());
                    prop_assert!(zram.discard(slot).is_err());
                    prop_assert_eq!(zram.mm_stat(), before);
                }
            }
            zram.check_invariants().unwrap();
        }
        for slot in 0..SLOTS {
            check_slot(&mut zram, &model, slot);
        }
        let live = model.iter().flatten().count() as u64;
        prop_assert_eq!(zram.mm_stat().orig_data_size, live * PAGE as u64);
    }
}
