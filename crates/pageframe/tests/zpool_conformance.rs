//! The zpool conformance suite: the same checks run against every
//! implementation of [`Zpool`] (zsmalloc and afmalloc), over both backings:
//! the simulation (page contents in its sparse store) and a memfd arena
//! (real memory; skipped with a printed reason when the host cannot make
//! one), each with objects copied through resolved page buffers (the fast
//! path) and through the page source (`_copied`). A new allocator joins by
//! adding lines to `conformance!` at the
//! bottom.

use pageframe::page_source::{CpuPages, PageBuffers, PageSource};
use pageframe::slab::SlabParams;
use pageframe::zpool::afmalloc::{AfConfig, AfPool};
use pageframe::zpool::zsmalloc::{ZsConfig, ZsPool};
use pageframe::zpool::{Zpool, ZpoolHandle};
use pageframe::{
    AccessError, AllocError, AllocOptions, ArenaOptions, CpuId, FreeError, Gfp, LocalPageAllocator,
    MachineDesc, MachineRng, Order, PageAllocator, Pfn, ZpoolError,
};

/// A page source that refuses allocations once `budget` is spent, and
/// resolves blocks for direct copies only when `direct`.
pub struct Budget<P: PageSource> {
    inner: P,
    budget: Option<u64>,
    direct: bool,
}

// SAFETY: forwards page_buffers() of the inner source and frees a block
// only when its caller does.
unsafe impl<P: PageSource> PageSource for Budget<P> {
    fn page_size(&self) -> usize {
        self.inner.page_size()
    }
    fn alloc_pages(&mut self, gfp: Gfp, order: Order) -> Result<Pfn, AllocError> {
        if let Some(budget) = self.budget.as_mut() {
            if *budget < order.nr_pages() {
                return Err(AllocError::NoMemory { order });
            }
            *budget -= order.nr_pages();
        }
        self.inner.alloc_pages(gfp, order)
    }
    fn free_pages(&mut self, pfn: Pfn, order: Order) -> Result<(), FreeError> {
        if let Some(budget) = self.budget.as_mut() {
            *budget += order.nr_pages();
        }
        self.inner.free_pages(pfn, order)
    }
    fn write(&mut self, pfn: Pfn, offset: usize, bytes: &[u8]) -> Result<(), AccessError> {
        self.inner.write(pfn, offset, bytes)
    }
    fn read(&self, pfn: Pfn, offset: usize, out: &mut [u8]) -> Result<(), AccessError> {
        self.inner.read(pfn, offset, out)
    }
    // Forwarded when `direct` (the budget frees a block only when its
    // caller does), so the pools take their direct-copy path as over a bare
    // source; otherwise every copy goes through `write`/`read`.
    fn page_buffers(&self, blocks: &[Pfn], order: Order) -> Option<PageBuffers> {
        if !self.direct {
            return None;
        }
        self.inner.page_buffers(blocks, order)
    }
}

type Source<'a> = Budget<CpuPages<&'a LocalPageAllocator, pageframe::Local>>;

/// Which backing a test machine stands on.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Sim,
    Arena,
}

/// A machine of `mib` MiB on `kind`; `None` (with the reason printed) when
/// the host cannot make an arena.
fn machine(kind: Kind, mib: u64) -> Option<LocalPageAllocator> {
    let desc = MachineDesc::uniform(mib << 20, 1, 2).unwrap();
    match kind {
        Kind::Sim => Some(LocalPageAllocator::boot(&desc).unwrap()),
        Kind::Arena => {
            match PageAllocator::boot_arena(
                &desc,
                AllocOptions::default(),
                0,
                ArenaOptions::default(),
            ) {
                Ok(allocator) => Some(allocator),
                Err(err) => {
                    println!("skipped: no memfd arena on this host ({err})");
                    None
                }
            }
        }
    }
}

fn source(allocator: &LocalPageAllocator, budget: Option<u64>, direct: bool) -> Source<'_> {
    Budget {
        inner: CpuPages::new(allocator.cpu(CpuId(0)).unwrap()),
        budget,
        direct,
    }
}

fn zsmalloc(allocator: &LocalPageAllocator, budget: Option<u64>) -> ZsPool<Source<'_>> {
    ZsPool::new(source(allocator, budget, true), ZsConfig::default()).unwrap()
}

fn afmalloc(allocator: &LocalPageAllocator, budget: Option<u64>) -> AfPool<Source<'_>> {
    afmalloc_over(source(allocator, budget, true))
}

fn afmalloc_over(source: Source<'_>) -> AfPool<Source<'_>> {
    AfPool::new(source, SlabParams::new(2, 4096), AfConfig::default()).unwrap()
}

/// zsmalloc copying every object through the page source (no resolved pages).
fn zsmalloc_copied(allocator: &LocalPageAllocator, budget: Option<u64>) -> ZsPool<Source<'_>> {
    ZsPool::new(source(allocator, budget, false), ZsConfig::default()).unwrap()
}

/// afmalloc copying every object through the page source.
fn afmalloc_copied(allocator: &LocalPageAllocator, budget: Option<u64>) -> AfPool<Source<'_>> {
    afmalloc_over(source(allocator, budget, false))
}

/// Deterministic contents for object `id` of `len` bytes.
fn pattern(id: u64, len: usize) -> Vec<u8> {
    let mut rng = MachineRng::new(id);
    (0..len).map(|_| rng.next_u64() as u8).collect()
}

fn assert_reads_back(pool: &impl Zpool, objects: &[(ZpoolHandle, u64, usize)]) {
    for (handle, id, len) in objects {
        let mut out = vec![0u8; *len];
        pool.read(*handle, &mut out).unwrap();
        assert!(
            out == pattern(*id, *len),
            "object {id} of {len} bytes changed"
        );
    }
}

fn store(
    pool: &mut impl Zpool,
    id: u64,
    len: usize,
) -> Result<(ZpoolHandle, u64, usize), ZpoolError> {
    let handle = pool.malloc(len)?;
    pool.write(handle, &pattern(id, len))?;
    Ok((handle, id, len))
}

/// Every size class boundary and a sweep of sizes round-trip, and freeing
/// everything gives every page back (after compaction).
fn round_trip_every_size(pool: &mut impl Zpool) {
    let max = pool.max_size();
    // zram stores a page whole from this compressed size on.
    assert!((1..=max).contains(&pool.huge_class_size()));
    let mut sizes: Vec<usize> = (1..=max).step_by(37).collect();
    sizes.extend([
        1,
        8,
        15,
        16,
        17,
        24,
        25,
        31,
        32,
        33,
        64,
        96,
        400,
        1300,
        2048,
        2064,
        3000,
        3264,
        max - 8,
        max - 1,
        max,
    ]);
    let mut objects = Vec::new();
    for (id, size) in sizes.iter().enumerate() {
        objects.push(store(pool, id as u64, *size).unwrap());
        pool.check_invariants().unwrap();
    }
    assert_reads_back(pool, &objects);
    let stats = pool.stats();
    assert_eq!(stats.objects, objects.len() as u64);
    assert_eq!(
        stats.stored_bytes,
        sizes.iter().map(|size| *size as u64).sum::<u64>()
    );
    assert!(stats.used_pages * 4096 >= stats.stored_bytes);
    assert_eq!(pool.total_pages(), stats.used_pages);
    for (handle, _, _) in objects {
        pool.free(handle).unwrap();
        pool.check_invariants().unwrap();
    }
    pool.compact().unwrap();
    assert_eq!(pool.stats().objects, 0);
    assert_eq!(pool.stats().stored_bytes, 0);
    assert_eq!(
        pool.total_pages(),
        0,
        "{} keeps pages with no objects",
        pool.name()
    );
}

/// Bad handles and sizes are typed errors that change nothing.
fn bad_input_is_refused(pool: &mut impl Zpool) {
    let kept = store(pool, 1, 700).unwrap();
    let gone = store(pool, 2, 1500).unwrap();
    pool.free(gone.0).unwrap();
    let before = pool.stats();
    for handle in [0, gone.0, 0xdead_beef, u64::MAX, kept.0 ^ (1 << 60)] {
        assert!(
            matches!(pool.free(handle), Err(ZpoolError::InvalidHandle(_))),
            "free {handle:#x}"
        );
        assert!(matches!(
            pool.write(handle, &[1, 2, 3]),
            Err(ZpoolError::InvalidHandle(_))
        ));
        assert!(matches!(
            pool.read(handle, &mut [0; 3]),
            Err(ZpoolError::InvalidHandle(_))
        ));
    }
    assert!(matches!(
        pool.malloc(0),
        Err(ZpoolError::InvalidSize { .. })
    ));
    assert!(matches!(
        pool.malloc(pool.max_size() + 1),
        Err(ZpoolError::InvalidSize { .. })
    ));
    let too_long = vec![0u8; pool.max_size() + 1];
    assert!(matches!(
        pool.write(kept.0, &too_long),
        Err(ZpoolError::OutOfBounds { .. })
    ));
    assert!(matches!(
        pool.read(kept.0, &mut vec![0u8; pool.max_size() + 1]),
        Err(ZpoolError::OutOfBounds { .. })
    ));
    assert_eq!(pool.stats(), before);
    pool.check_invariants().unwrap();
    assert_reads_back(pool, &[kept]);
    pool.free(kept.0).unwrap();
    assert!(matches!(
        pool.free(kept.0),
        Err(ZpoolError::InvalidHandle(_))
    ));
}

/// When the page allocator runs dry, malloc fails cleanly and the pool
/// keeps working.
fn exhaustion_fails_cleanly(pool: &mut impl Zpool) {
    let mut rng = MachineRng::new(7);
    let mut objects = Vec::new();
    let mut failures = 0;
    for id in 0..20_000u64 {
        let len = 1 + rng.below(4096) as usize;
        match store(pool, id, len) {
            Ok(object) => objects.push(object),
            Err(ZpoolError::NoMemory(_)) => {
                failures += 1;
                pool.check_invariants().unwrap();
                if failures > 50 {
                    break;
                }
            }
            Err(other) => panic!("unexpected error {other}"),
        }
    }
    assert!(failures > 0, "the budget was never reached");
    assert_reads_back(pool, &objects);
    // Free half; allocation works again.
    let half = objects.split_off(objects.len() / 2);
    for (handle, _, _) in half {
        pool.free(handle).unwrap();
    }
    pool.compact().unwrap();
    pool.check_invariants().unwrap();
    objects.push(store(pool, 999_999, 1000).unwrap());
    assert_reads_back(pool, &objects);
}

/// Fragment the pool, compact, and check pages came back and data stayed.
fn compaction_frees_pages_and_keeps_data(pool: &mut impl Zpool) {
    let mut rng = MachineRng::new(11);
    let mut objects = Vec::new();
    for id in 0..3000u64 {
        let len = 200 + rng.below(1800) as usize;
        objects.push(store(pool, id, len).unwrap());
    }
    let mut kept = Vec::new();
    for object in objects {
        if rng.chance(3, 4) {
            pool.free(object.0).unwrap();
        } else {
            kept.push(object);
        }
    }
    let before = pool.total_pages();
    let freed = pool.compact().unwrap();
    pool.check_invariants().unwrap();
    assert!(freed > 0, "{}: compaction freed nothing", pool.name());
    assert_eq!(pool.total_pages(), before - freed);
    assert_eq!(pool.stats().pages_compacted, freed);
    assert_reads_back(pool, &kept);
    // And the pool stays usable.
    for id in 10_000..10_500u64 {
        kept.push(store(pool, id, 700).unwrap());
    }
    assert_reads_back(pool, &kept);
}

macro_rules! conformance {
    ($($module:ident => $make:ident on $kind:ident),* $(,)?) => {$(
        mod $module {
            use super::*;

            fn machine(mib: u64) -> Option<LocalPageAllocator> {
                super::machine(Kind::$kind, mib)
            }

            #[test]
            fn round_trip_every_size() {
                let Some(allocator) = machine(64) else { return };
                super::round_trip_every_size(&mut $make(&allocator, None));
                allocator.check_invariants().unwrap();
            }

            #[test]
            fn bad_input_is_refused() {
                let Some(allocator) = machine(64) else { return };
                super::bad_input_is_refused(&mut $make(&allocator, None));
            }

            #[test]
            fn exhaustion_of_a_budget_fails_cleanly() {
                let Some(allocator) = machine(64) else { return };
                super::exhaustion_fails_cleanly(&mut $make(&allocator, Some(600)));
                allocator.check_invariants().unwrap();
            }

            #[test]
            fn exhaustion_of_the_machine_fails_cleanly() {
                let Some(allocator) = machine(16) else { return };
                super::exhaustion_fails_cleanly(&mut $make(&allocator, None));
                allocator.check_invariants().unwrap();
            }

            #[test]
            fn dropping_the_pool_gives_every_page_back() {
                let Some(allocator) = machine(64) else { return };
                let free_at_start = allocator.nr_free_pages();
                let mut pool = $make(&allocator, None);
                for id in 0..2000u64 {
                    store(&mut pool, id, 1 + (id as usize * 37) % 4096).unwrap();
                }
                assert!(pool.total_pages() > 0);
                drop(pool);
                allocator.drain_pcp(CpuId(0)).unwrap();
                assert_eq!(allocator.nr_free_pages(), free_at_start);
                allocator.check_invariants().unwrap();
            }

            #[test]
            fn compaction_frees_pages_and_keeps_data() {
                let Some(allocator) = machine(64) else { return };
                super::compaction_frees_pages_and_keeps_data(&mut $make(&allocator, None));
            }
        }
    )*};
}

conformance!(
    zsmalloc_pool => zsmalloc on Sim,
    afmalloc_pool => afmalloc on Sim,
    zsmalloc_arena => zsmalloc on Arena,
    afmalloc_arena => afmalloc on Arena,
    zsmalloc_copied_pool => zsmalloc_copied on Sim,
    afmalloc_copied_pool => afmalloc_copied on Sim,
    zsmalloc_copied_arena => zsmalloc_copied on Arena,
    afmalloc_copied_arena => afmalloc_copied on Arena,
);
