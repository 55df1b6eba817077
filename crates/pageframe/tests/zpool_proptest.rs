//! Reliability of the compressed-object allocators under random operation
//! sequences: random sizes 1..=PAGE_SIZE, frees in random order, compaction
//! at random points, invariants after every step, and every live object
//! read back byte for byte. Runs the same sequence on zsmalloc and afmalloc.

use pageframe::page_source::CpuPages;
use pageframe::slab::SlabParams;
use pageframe::zpool::afmalloc::{AfConfig, AfPool};
use pageframe::zpool::zsmalloc::{ZsConfig, ZsPool};
use pageframe::zpool::{Zpool, ZpoolHandle};
use pageframe::{CpuId, LocalPageAllocator, MachineDesc, ZpoolError};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Alloc(usize, u8),
    Free(usize),
    Rewrite(usize, u8),
    Compact,
    FreeStale(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (1usize..=4096, any::<u8>()).prop_map(|(size, seed)| Op::Alloc(size, seed)),
        3 => any::<usize>().prop_map(Op::Free),
        1 => (any::<usize>(), any::<u8>()).prop_map(|(index, seed)| Op::Rewrite(index, seed)),
        1 => Just(Op::Compact),
        1 => any::<usize>().prop_map(Op::FreeStale),
    ]
}

fn bytes(seed: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| seed.wrapping_mul(31).wrapping_add((i * 7 + i / 251) as u8))
        .collect()
}

fn check_all(pool: &impl Zpool, live: &[(ZpoolHandle, Vec<u8>)]) {
    for (handle, data) in live {
        let mut out = vec![0; data.len()];
        pool.read(*handle, &mut out).unwrap();
        assert!(&out == data, "{}: an object changed", pool.name());
    }
}

fn run(pool: &mut impl Zpool, ops: &[Op]) {
    let mut live: Vec<(ZpoolHandle, Vec<u8>)> = Vec::new();
    let mut stale: Vec<ZpoolHandle> = Vec::new();
    for op in ops {
        match op {
            Op::Alloc(size, seed) => match pool.malloc(*size) {
                Ok(handle) => {
                    let data = bytes(*seed, *size);
                    pool.write(handle, &data).unwrap();
                    live.push((handle, data));
                }
                Err(ZpoolError::NoMemory(_)) => {}
                Err(other) => panic!("{}: malloc({size}): {other}", pool.name()),
            },
            Op::Free(index) if !live.is_empty() => {
                let (handle, _) = live.swap_remove(index % live.len());
                pool.free(handle).unwrap();
                stale.push(handle);
            }
            Op::Rewrite(index, seed) if !live.is_empty() => {
                let index = index % live.len();
                let data = bytes(*seed, live[index].1.len());
                pool.write(live[index].0, &data).unwrap();
                live[index].1 = data;
            }
            Op::Compact => {
                pool.compact().unwrap();
                check_all(pool, &live);
            }
            Op::FreeStale(index) if !stale.is_empty() => {
                let handle = stale[index % stale.len()];
                let before = pool.stats();
                assert!(matches!(
                    pool.free(handle),
                    Err(ZpoolError::InvalidHandle(_))
                ));
                assert_eq!(pool.stats(), before);
            }
            _ => {}
        }
        pool.check_invariants().unwrap();
        let stats = pool.stats();
        assert_eq!(stats.objects, live.len() as u64);
        assert_eq!(
            stats.stored_bytes,
            live.iter().map(|(_, data)| data.len() as u64).sum::<u64>()
        );
    }
    check_all(pool, &live);
    for (handle, _) in live.drain(..) {
        pool.free(handle).unwrap();
    }
    pool.compact().unwrap();
    pool.check_invariants().unwrap();
    assert_eq!(pool.total_pages(), 0);
}

fn allocator() -> LocalPageAllocator {
    // 8 MiB: big enough for most sequences, small enough that some run dry.
    LocalPageAllocator::boot(&MachineDesc::uniform(8 << 20, 1, 2).unwrap()).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn zsmalloc_keeps_every_byte(ops in prop::collection::vec(op(), 1..300), chain in prop::sample::select(vec![4u32, 8, 16])) {
        let allocator = allocator();
        let config = ZsConfig { chain_size: chain, ..ZsConfig::default() };
        let mut pool = ZsPool::new(CpuPages::new(allocator.cpu(CpuId(0)).unwrap()), config).unwrap();
        run(&mut pool, &ops);
        drop(pool);
        allocator.check_invariants().unwrap();
    }

    #[test]
    fn afmalloc_keeps_every_byte(ops in prop::collection::vec(op(), 1..300)) {
        let allocator = allocator();
        let mut pool = AfPool::new(
            CpuPages::new(allocator.cpu(CpuId(0)).unwrap()),
            SlabParams::new(2, 4096),
            AfConfig::default(),
        ).unwrap();
        run(&mut pool, &ops);
        drop(pool);
        allocator.check_invariants().unwrap();
    }
}
