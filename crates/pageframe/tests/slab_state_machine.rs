//! State-machine property test of the slab allocator against a reference
//! model (object address -> its bytes): kmem_cache_alloc/free, kmalloc/kfree,
//! writes and reads at random offsets, hostile offsets near `usize::MAX`,
//! double and cross-cache frees, shrinks. After every step the invariants
//! hold; a failing call leaves `slabinfo` and every object's bytes as they
//! were; the bytes touched are compared with the model, and every object
//! at each shrink and at the end. Runs on the simulated backing and, when
//! the host can make one, on a memfd arena.

use std::collections::HashMap;

use pageframe::page_source::CpuPages;
use pageframe::slab::{CacheId, ObjAddr, SlabAllocator, SlabParams};
use pageframe::Local;
use pageframe::{
    AllocOptions, ArenaOptions, CpuId, Gfp, LocalPageAllocator, MachineDesc, PageAllocator,
    SlabError,
};
use proptest::prelude::*;

/// Object sizes of the test's own caches.
const CACHE_SIZES: [usize; 3] = [24, 200, 1000];

#[derive(Clone, Debug)]
enum Op {
    Alloc {
        cache: usize,
        seed: u8,
    },
    Kmalloc {
        size: usize,
        seed: u8,
    },
    Free {
        pick: usize,
    },
    Write {
        pick: usize,
        offset: usize,
        len: usize,
        seed: u8,
    },
    Read {
        pick: usize,
        offset: usize,
        len: usize,
    },
    Hostile {
        pick: usize,
        back: usize,
        len: usize,
    },
    DoubleFree {
        pick: usize,
    },
    WrongCache {
        pick: usize,
    },
    Shrink,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..CACHE_SIZES.len(), any::<u8>()).prop_map(|(cache, seed)| Op::Alloc { cache, seed }),
        2 => (1usize..=12_000, any::<u8>()).prop_map(|(size, seed)| Op::Kmalloc { size, seed }),
        5 => any::<usize>().prop_map(|pick| Op::Free { pick }),
        4 => (any::<usize>(), 0usize..1100, 0usize..300, any::<u8>())
            .prop_map(|(pick, offset, len, seed)| Op::Write { pick, offset, len, seed }),
        3 => (any::<usize>(), 0usize..1100, 0usize..300)
            .prop_map(|(pick, offset, len)| Op::Read { pick, offset, len }),
        1 => (any::<usize>(), 0usize..64, 1usize..64)
            .prop_map(|(pick, back, len)| Op::Hostile { pick, back, len }),
        1 => any::<usize>().prop_map(|pick| Op::DoubleFree { pick }),
        1 => any::<usize>().prop_map(|pick| Op::WrongCache { pick }),
        1 => Just(Op::Shrink),
    ]
}

fn bytes(seed: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|at| {
            seed.wrapping_mul(29)
                .wrapping_add((at * 13 + at / 256) as u8)
        })
        .collect()
}

/// What the model knows of a live object: its cache (`None` for kmalloc)
/// and its bytes (written whole at allocation).
struct Object {
    cache: Option<CacheId>,
    bytes: Vec<u8>,
}

type Slab<'a> = SlabAllocator<CpuPages<&'a LocalPageAllocator, Local>>;

fn machine(arena: bool) -> Option<LocalPageAllocator> {
    let desc = MachineDesc::uniform(16 << 20, 1, 1).unwrap();
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

fn check_object(slab: &Slab, addr: ObjAddr, object: &Object) {
    let mut out = vec![0u8; object.bytes.len()];
    slab.read(addr, 0, &mut out).unwrap();
    assert!(out == object.bytes, "object {addr:#x} changed");
}

fn check_all(slab: &Slab, live: &HashMap<ObjAddr, Object>) {
    for (addr, object) in live {
        check_object(slab, *addr, object);
    }
}

fn pick(live: &HashMap<ObjAddr, Object>, pick: usize) -> Option<ObjAddr> {
    let mut addrs: Vec<ObjAddr> = live.keys().copied().collect();
    addrs.sort_unstable();
    (!addrs.is_empty()).then(|| addrs[pick % addrs.len()])
}

/// A call that must fail: nothing may change, bytes included.
fn assert_refused(
    slab: &Slab,
    live: &HashMap<ObjAddr, Object>,
    before: &[pageframe::slab::SlabInfo],
    result: Result<(), SlabError>,
) {
    assert!(result.is_err(), "a bad call succeeded");
    assert_eq!(slab.slabinfo_rows(), before);
    check_all(slab, live);
}

fn run(slab: &mut Slab, caches: &[CacheId], ops: &[Op]) {
    let mut live: HashMap<ObjAddr, Object> = HashMap::new();
    let mut freed: Vec<ObjAddr> = Vec::new();
    for op in ops {
        match *op {
            Op::Alloc { cache, seed } => {
                let id = caches[cache];
                if let Ok(addr) = slab.kmem_cache_alloc(id, Gfp::KERNEL) {
                    let data = bytes(seed, slab.ksize(addr).unwrap());
                    slab.write(addr, 0, &data).unwrap();
                    assert!(live
                        .insert(
                            addr,
                            Object {
                                cache: Some(id),
                                bytes: data
                            }
                        )
                        .is_none());
                }
            }
            Op::Kmalloc { size, seed } => {
                if let Ok(addr) = slab.kmalloc(size, Gfp::KERNEL) {
                    let data = bytes(seed, slab.ksize(addr).unwrap());
                    assert!(data.len() >= size);
                    slab.write(addr, 0, &data).unwrap();
                    assert!(live
                        .insert(
                            addr,
                            Object {
                                cache: None,
                                bytes: data
                            }
                        )
                        .is_none());
                }
            }
            Op::Free { pick: at } => {
                if let Some(addr) = pick(&live, at) {
                    let object = live.remove(&addr).unwrap();
                    match object.cache {
                        Some(cache) => slab.kmem_cache_free(cache, addr).unwrap(),
                        None => slab.kfree(addr).unwrap(),
                    }
                    freed.push(addr);
                }
            }
            Op::Write {
                pick: at,
                offset,
                len,
                seed,
            } => {
                if let Some(addr) = pick(&live, at) {
                    let data = bytes(seed, len);
                    let object = live.get_mut(&addr).unwrap();
                    if offset + len <= object.bytes.len() {
                        slab.write(addr, offset, &data).unwrap();
                        object.bytes[offset..offset + len].copy_from_slice(&data);
                        check_object(slab, addr, object);
                    } else {
                        let before = slab.slabinfo_rows();
                        let result = slab.write(addr, offset, &data);
                        assert!(matches!(result, Err(SlabError::OutOfBounds { .. })));
                        assert_refused(slab, &live, &before, result);
                    }
                }
            }
            Op::Read {
                pick: at,
                offset,
                len,
            } => {
                if let Some(addr) = pick(&live, at) {
                    let object = &live[&addr];
                    let mut out = vec![0u8; len];
                    match slab.read(addr, offset, &mut out) {
                        Ok(()) => assert_eq!(out[..], object.bytes[offset..offset + len]),
                        Err(SlabError::OutOfBounds { .. }) => {
                            assert!(offset + len > object.bytes.len());
                        }
                        Err(other) => panic!("read: {other}"),
                    }
                }
            }
            Op::Hostile {
                pick: at,
                back,
                len,
            } => {
                // offset + len wraps past usize::MAX to a small number: a
                // check by plain addition would pass and hit the next object.
                if let Some(addr) = pick(&live, at) {
                    let offset = usize::MAX - back;
                    let before = slab.slabinfo_rows();
                    let result = slab.write(addr, offset, &bytes(0xEE, len));
                    assert!(matches!(result, Err(SlabError::OutOfBounds { .. })));
                    assert_refused(slab, &live, &before, result);
                    let mut out = vec![0u8; len];
                    let result = slab.read(addr, offset, &mut out);
                    assert!(matches!(result, Err(SlabError::OutOfBounds { .. })));
                }
            }
            Op::DoubleFree { pick: at } => {
                if !freed.is_empty() {
                    let addr = freed[at % freed.len()];
                    if !live.contains_key(&addr) {
                        let before = slab.slabinfo_rows();
                        let result = slab.kfree(addr);
                        assert_refused(slab, &live, &before, result);
                    }
                }
            }
            Op::WrongCache { pick: at } => {
                if let Some(addr) = pick(&live, at) {
                    if let Some(cache) = live[&addr].cache {
                        let other = caches.iter().copied().find(|id| *id != cache).unwrap();
                        let before = slab.slabinfo_rows();
                        let result = slab.kmem_cache_free(other, addr);
                        assert_refused(slab, &live, &before, result);
                    }
                }
            }
            Op::Shrink => {
                slab.shrink_all().unwrap();
                check_all(slab, &live);
            }
        }
        slab.check_invariants().unwrap();
    }
    check_all(slab, &live);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1200, ..ProptestConfig::default() })]

    /// About 256 x 500 = 128 000 operations.
    #[test]
    fn slab_matches_its_model(ops in prop::collection::vec(op(), 1..1000), arena in any::<bool>()) {
        let Some(allocator) = machine(arena) else { return Ok(()) };
        let mut slab = SlabAllocator::new(
            CpuPages::new(allocator.cpu(CpuId(0)).unwrap()),
            SlabParams::new(1, 4096),
        )
        .unwrap();
        let caches: Vec<CacheId> = CACHE_SIZES
            .iter()
            .map(|size| slab.kmem_cache_create(&format!("test-{size}"), *size as u32, 8).unwrap())
            .collect();
        run(&mut slab, &caches, &ops);
        drop(slab);
        allocator.check_invariants().unwrap();
    }
}
