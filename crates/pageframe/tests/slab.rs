//! The SLUB-like slab allocator: geometry, partial lists and min_partial,
//! order fallback, kmalloc, errors, exhaustion and the /proc/slabinfo view.

use pageframe::page_source::{CpuPages, PageSource};
use pageframe::slab::{slabinfo, SlabAllocator, SlabParams};
use pageframe::{
    AccessError, AllocError, CpuId, FreeError, Gfp, LocalPageAllocator, MachineDesc, Order, Pfn,
    SlabError,
};

/// Fails every allocation above `max_order` (a fragmented machine).
struct NoHighOrder<P: PageSource> {
    inner: P,
    max_order: u8,
}

// SAFETY: keeps the default page_buffers() (no direct buffers), so there is
// nothing more to uphold.
unsafe impl<P: PageSource> PageSource for NoHighOrder<P> {
    fn page_size(&self) -> usize {
        self.inner.page_size()
    }
    fn alloc_pages(&mut self, gfp: Gfp, order: Order) -> Result<Pfn, AllocError> {
        if order.0 > self.max_order {
            return Err(AllocError::NoMemory { order });
        }
        self.inner.alloc_pages(gfp, order)
    }
    fn free_pages(&mut self, pfn: Pfn, order: Order) -> Result<(), FreeError> {
        self.inner.free_pages(pfn, order)
    }
    fn write(&mut self, pfn: Pfn, offset: usize, bytes: &[u8]) -> Result<(), AccessError> {
        self.inner.write(pfn, offset, bytes)
    }
    fn read(&self, pfn: Pfn, offset: usize, out: &mut [u8]) -> Result<(), AccessError> {
        self.inner.read(pfn, offset, out)
    }
}

fn machine(mib: u64) -> LocalPageAllocator {
    LocalPageAllocator::boot(&MachineDesc::uniform(mib << 20, 1, 2).unwrap()).unwrap()
}

fn slab(
    allocator: &LocalPageAllocator,
) -> SlabAllocator<CpuPages<&LocalPageAllocator, pageframe::Local>> {
    SlabAllocator::new(
        CpuPages::new(allocator.cpu(CpuId(0)).unwrap()),
        SlabParams::new(2, 4096),
    )
    .unwrap()
}

#[test]
fn a_cache_fills_slabs_and_gives_empty_ones_back_beyond_min_partial() {
    let allocator = machine(64);
    let free_at_start = allocator.nr_free_pages();
    let mut slab = slab(&allocator);
    let cache = slab.kmem_cache_create("dentry", 192, 8).unwrap();
    let info = slab.cache(cache).unwrap();
    assert_eq!(
        (info.size(), info.order().0, info.objects_per_slab()),
        (192, 0, 21)
    );
    assert_eq!(info.min_partial(), 5);
    let objects: Vec<u64> = (0..21 * 20)
        .map(|_| slab.kmem_cache_alloc(cache, Gfp::KERNEL).unwrap())
        .collect();
    slab.check_invariants().unwrap();
    let info = slab.cache(cache).unwrap();
    assert_eq!(
        (info.nr_slabs(), info.nr_partial(), info.active_objects()),
        (20, 0, 420)
    );
    // Objects are distinct and inside their slab.
    let mut sorted = objects.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), objects.len());
    for object in &objects {
        slab.kmem_cache_free(cache, *object).unwrap();
        slab.check_invariants().unwrap();
    }
    // An emptied slab is discarded when the node's partial list (itself
    // included) already has min_partial slabs: four empty ones stay.
    let info = slab.cache(cache).unwrap();
    assert_eq!(info.active_objects(), 0);
    assert_eq!(info.nr_slabs(), 4);
    assert_eq!(info.nr_partial(), 4);
    assert_eq!(slab.kmem_cache_shrink(cache).unwrap(), 4);
    assert_eq!(slab.cache(cache).unwrap().nr_slabs(), 0);
    slab.check_invariants().unwrap();
    drop(slab);
    allocator.drain_pcp(CpuId(0)).unwrap();
    assert_eq!(allocator.nr_free_pages(), free_at_start);
}

#[test]
fn high_order_failure_falls_back_to_the_minimum_order() {
    let allocator = machine(64);
    let source = NoHighOrder {
        inner: CpuPages::new(allocator.cpu(CpuId(0)).unwrap()),
        max_order: 0,
    };
    let mut slab = SlabAllocator::new(source, SlabParams::new(2, 4096)).unwrap();
    let cache = slab.kmalloc_cache(1024).unwrap();
    assert_eq!(slab.cache(cache).unwrap().order().0, 2);
    let objects: Vec<u64> = (0..16)
        .map(|_| slab.kmalloc(1000, Gfp::KERNEL).unwrap())
        .collect();
    let info = slab.cache(cache).unwrap();
    assert_eq!(info.nr_slabs(), 4, "order-0 slabs of 4 objects");
    assert_eq!(info.nr_pages(), 4);
    assert_eq!(info.stats().order_fallback, 4);
    slab.check_invariants().unwrap();
    for object in objects {
        slab.kfree(object).unwrap();
    }
    slab.check_invariants().unwrap();
}

#[test]
fn kmalloc_picks_the_kernels_caches_and_large_sizes_go_to_pages() {
    let allocator = machine(64);
    let mut slab = slab(&allocator);
    for (size, ksize) in [
        (1, 8),
        (9, 16),
        (65, 96),
        (100, 128),
        (129, 192),
        (4000, 4096),
        (8192, 8192),
        (8193, 12288),
    ] {
        let object = slab.kmalloc(size, Gfp::KERNEL).unwrap();
        let got = slab.ksize(object).unwrap();
        if size <= 8192 {
            assert_eq!(got, ksize, "kmalloc({size})");
        } else {
            assert_eq!(got, 16384, "kmalloc_large rounds to an order");
        }
        slab.write(object, 0, &vec![0x5a; size]).unwrap();
        let mut out = vec![0; size];
        slab.read(object, 0, &mut out).unwrap();
        assert!(out.iter().all(|byte| *byte == 0x5a));
        slab.kfree(object).unwrap();
        slab.check_invariants().unwrap();
    }
    assert!(matches!(
        slab.kmalloc(0, Gfp::KERNEL),
        Err(SlabError::Invalid(_))
    ));
}

#[test]
fn bad_frees_are_errors_that_change_nothing() {
    let allocator = machine(64);
    let mut slab = slab(&allocator);
    let cache = slab.kmem_cache_create("task_struct", 300, 64).unwrap();
    assert_eq!(slab.cache(cache).unwrap().size(), 320);
    let object = slab.kmem_cache_alloc(cache, Gfp::KERNEL).unwrap();
    let other = slab.kmalloc(64, Gfp::KERNEL).unwrap();
    let before = slab::slabinfo_text(&slab);
    assert!(matches!(
        slab.kmem_cache_free(cache, object + 8),
        Err(SlabError::NotObject(_))
    ));
    assert!(matches!(
        slab.kmem_cache_free(cache, 0x1234_5000),
        Err(SlabError::NotObject(_))
    ));
    assert!(matches!(
        slab.kmem_cache_free(cache, other),
        Err(SlabError::WrongCache { .. })
    ));
    assert!(matches!(
        slab.kmem_cache_free(cache, object + 320),
        Err(SlabError::DoubleFree(_))
    ));
    assert!(matches!(
        slab.write(object, 310, &[0; 20]),
        Err(SlabError::OutOfBounds { .. })
    ));
    assert_eq!(slab::slabinfo_text(&slab), before);
    slab.kmem_cache_free(cache, object).unwrap();
    assert!(matches!(
        slab.kmem_cache_free(cache, object),
        Err(SlabError::DoubleFree(_))
    ));
    assert!(matches!(
        slab.kmem_cache_create("bad", 64, 3),
        Err(SlabError::Invalid(_))
    ));
    assert!(matches!(
        slab.kmem_cache_create("", 64, 8),
        Err(SlabError::Invalid(_))
    ));
    slab.check_invariants().unwrap();
}

#[test]
fn exhaustion_makes_kmalloc_fail_cleanly() {
    let allocator = machine(16);
    let mut slab = slab(&allocator);
    let mut held = Vec::new();
    let error = loop {
        match slab.kmalloc(2048, Gfp::KERNEL) {
            Ok(object) => held.push(object),
            Err(error) => break error,
        }
    };
    assert!(matches!(error, SlabError::NoMemory { .. }));
    slab.check_invariants().unwrap();
    for object in held {
        slab.kfree(object).unwrap();
    }
    slab.shrink_all().unwrap();
    assert_eq!(slab.nr_pages(), 0);
    slab.check_invariants().unwrap();
    allocator.check_invariants().unwrap();
}

#[test]
fn slabinfo_has_the_kernels_layout() {
    let allocator = machine(64);
    let mut slab = slab(&allocator);
    let cache = slab.kmem_cache_create("pageframe_test", 200, 8).unwrap();
    for _ in 0..50 {
        slab.kmem_cache_alloc(cache, Gfp::KERNEL).unwrap();
    }
    let text = slabinfo(&slab);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "slabinfo - version: 2.1");
    assert_eq!(
        lines[1],
        "# name            <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab> : tunables <limit> <batchcount> <sharedfactor> : slabdata <active_slabs> <num_slabs> <sharedavail>"
    );
    // Newest cache first; 200-byte objects, 20 per order-0 slab, 3 slabs.
    // (No per-CPU slab here, so active_objs counts exactly the objects in use.)
    assert_eq!(
        lines[2],
        "pageframe_test        50     60    200   20    1 : tunables    0    0    0 : slabdata      3      3      0"
    );
    assert!(lines[3].starts_with("kmalloc-8k "));
    assert!(lines.last().unwrap().starts_with("kmalloc-8 "));
    assert_eq!(lines.len(), 2 + 14);
}

mod slab {
    pub fn slabinfo_text<P: pageframe::page_source::PageSource>(
        slab: &pageframe::slab::SlabAllocator<P>,
    ) -> String {
        pageframe::slab::slabinfo(slab)
    }
}

#[test]
fn slab_orders_are_clamped_to_max_page_order_and_a_wider_page_order_refused() {
    // Regression: SlabParams { max_order: 255, .. } panicked with overflow
    // checks (order_objects' shift) and was taken as is in release, where a
    // cache could then ask for order-255 slabs; the kernel clamps
    // slub_max_order and slub_min_order to MAX_PAGE_ORDER.
    let allocator = machine(64);
    let free = allocator.nr_free_pages();
    let base = SlabParams::new(2, 4096);
    for params in [
        SlabParams {
            max_order: 255,
            ..base
        },
        SlabParams {
            min_order: 255,
            ..base
        },
    ] {
        let slab =
            SlabAllocator::new(CpuPages::new(allocator.cpu(CpuId(0)).unwrap()), params).unwrap();
        assert!(slab.params().max_order <= 10 && slab.params().min_order <= 10);
        assert!(slab.caches().all(|(_, cache)| cache.order().0 <= 10));
    }
    let refused = SlabAllocator::new(
        CpuPages::new(allocator.cpu(CpuId(0)).unwrap()),
        SlabParams {
            max_page_order: 255,
            ..base
        },
    );
    assert!(matches!(refused, Err(SlabError::Invalid(_))));
    assert_eq!(allocator.nr_free_pages(), free);
}

#[test]
fn an_object_size_rounded_up_past_u32_is_refused_not_wrapped() {
    // With 4 GiB slabs allowed (max_page_order 20), size.div_ceil(align) *
    // align overflowed u32: a panic with overflow checks, a slot of 0
    // bytes in release.
    let allocator = machine(64);
    let mut slab = SlabAllocator::new(
        CpuPages::new(allocator.cpu(CpuId(0)).unwrap()),
        SlabParams {
            max_page_order: 20,
            ..SlabParams::new(2, 4096)
        },
    )
    .unwrap();
    let caches = slab.caches().count();
    for (size, align) in [(u32::MAX, 0), (u32::MAX - 3, 8), ((1 << 31) + 1, 1 << 31)] {
        let err = slab.kmem_cache_create("huge", size, align).unwrap_err();
        assert!(
            matches!(&err, SlabError::Invalid(message) if message.contains("2^32")),
            "{size} {align}: {err}"
        );
    }
    assert_eq!(slab.caches().count(), caches);
}
