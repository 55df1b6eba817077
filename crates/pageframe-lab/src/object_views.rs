//! Object-allocator views for `pageframe proc`: a seeded workload on the
//! slab allocator or on a zsmalloc pool, then its kernel-format view
//! (`/proc/slabinfo`, zsmalloc's `classes`).
//!
//! - `slabinfo`: caches named and sized like common kernel caches plus
//!   kmalloc of random sizes; each operation allocates (60 %) or frees a
//!   random held object; at the end one in three live objects is freed, so
//!   partial slabs show.
//! - `zs-classes`: stores objects of the compressed-size model
//!   ([`pageframe::zpool::CompressedSizes`]) in a zsmalloc pool, frees (35 %) random
//!   ones, and compacts every 5000 operations.
//!
//! Same allocator, ops and seed: same output, byte for byte. Progress goes
//! to `observe::progress`, as churn's does.

use crate::churn::PROGRESS_EVERY;
use crate::observe;
use pageframe::page_source::CpuPages;
use pageframe::slab::{slabinfo, SlabAllocator, SlabParams};
use pageframe::zpool::zsmalloc::{zs_classes, ZsConfig, ZsPool};
use pageframe::zpool::CompressedSizes;
use pageframe::{CpuId, Gfp, LocalPageAllocator, MachineRng};

/// The views, as `pageframe proc` accepts them.
pub const VIEWS: [&str; 2] = ["slabinfo", "zs-classes"];

/// Operations of the workload when `--churn` does not give a number.
pub const DEFAULT_OPS: u64 = 20_000;

/// Caches the slab workload creates: (name, object size, alignment).
const CACHES: [(&str, u32, u32); 6] = [
    ("dentry", 192, 8),
    ("inode_cache", 600, 8),
    ("buffer_head", 104, 8),
    ("vm_area_struct", 176, 8),
    ("task_struct", 6016, 64),
    ("radix_tree_node", 576, 8),
];

/// Host bytes the object workloads can hold on a machine of
/// `present_bytes` with `ops` operations of pages of `page_bytes`: the
/// objects' contents, at most a page an operation and never more than the
/// machine's memory (4 M operations on 4 GiB peak at 1.1 GB here).
pub fn host_bytes(present_bytes: u64, ops: u64, page_bytes: u64) -> u64 {
    ops.saturating_mul(page_bytes).min(present_bytes)
}

/// Runs the workload of `view` on `allocator` and renders it; `None` for an
/// unknown view, `Some(Err)` when the workload hits a broken invariant.
pub fn render(
    allocator: &LocalPageAllocator,
    view: &str,
    ops: u64,
    seed: u64,
) -> Option<Result<String, String>> {
    match view {
        "slabinfo" => Some(slab_workload(allocator, ops, seed)),
        "zs-classes" => Some(zs_workload(allocator, ops, seed)),
        _ => None,
    }
}

fn slab_workload(allocator: &LocalPageAllocator, ops: u64, seed: u64) -> Result<String, String> {
    let cpu = allocator.cpu(CpuId(0)).map_err(|err| err.to_string())?;
    let params = SlabParams {
        max_page_order: allocator.layout().max_order.0,
        ..SlabParams::new(
            allocator.nr_cpus() as u32,
            1 << allocator.layout().page_shift,
        )
    };
    let mut slab = SlabAllocator::new(CpuPages::new(cpu), params).map_err(|err| err.to_string())?;
    let caches: Vec<_> = CACHES
        .iter()
        .map(|(name, size, align)| slab.kmem_cache_create(name, *size, *align))
        .collect::<Result<_, _>>()
        .map_err(|err| err.to_string())?;
    let mut rng = MachineRng::new(seed);
    // Held objects: (cache or None for kmalloc, address).
    let mut held: Vec<(Option<usize>, u64)> = Vec::new();
    for op in 0..ops {
        if op % PROGRESS_EVERY == 0 {
            observe::progress(op, ops);
        }
        if held.is_empty() || rng.chance(3, 5) {
            let which = rng.below(caches.len() as u64 + 1) as usize;
            let result = if which < caches.len() {
                slab.kmem_cache_alloc(caches[which], Gfp::KERNEL)
                    .map(|addr| (Some(which), addr))
            } else {
                let size = 1 + rng.below(2048) as usize;
                slab.kmalloc(size, Gfp::KERNEL).map(|addr| (None, addr))
            };
            if let Ok(object) = result {
                held.push(object);
            }
        } else {
            let (cache, addr) = held.swap_remove(rng.below(held.len() as u64) as usize);
            free_object(&mut slab, &caches, cache, addr)?;
        }
    }
    let mut index = 0;
    while index < held.len() {
        if rng.chance(1, 3) {
            let (cache, addr) = held.swap_remove(index);
            free_object(&mut slab, &caches, cache, addr)?;
        } else {
            index += 1;
        }
    }
    slab.check_invariants().map_err(|err| err.to_string())?;
    Ok(slabinfo(&slab))
}

fn free_object<P: pageframe::page_source::PageSource>(
    slab: &mut SlabAllocator<P>,
    caches: &[pageframe::slab::CacheId],
    cache: Option<usize>,
    addr: u64,
) -> Result<(), String> {
    match cache {
        Some(which) => slab.kmem_cache_free(caches[which], addr),
        None => slab.kfree(addr),
    }
    .map_err(|err| err.to_string())
}

fn zs_workload(allocator: &LocalPageAllocator, ops: u64, seed: u64) -> Result<String, String> {
    let cpu = allocator.cpu(CpuId(0)).map_err(|err| err.to_string())?;
    let mut pool =
        ZsPool::new(CpuPages::new(cpu), ZsConfig::default()).map_err(|err| err.to_string())?;
    let page_size = 1usize << allocator.layout().page_shift;
    let mut sizes = CompressedSizes::new(seed, page_size);
    let mut rng = MachineRng::new(seed ^ 0x5a5a);
    let mut held = Vec::new();
    let mut buffer = vec![0u8; page_size];
    for op in 0..ops {
        if op % PROGRESS_EVERY == 0 {
            observe::progress(op, ops);
        }
        if held.is_empty() || rng.chance(65, 100) {
            let size = sizes.next_size();
            if let Ok(handle) = pool.zs_malloc(size) {
                buffer[..size].fill(op as u8);
                pool.zs_obj_write(handle, &buffer[..size])
                    .map_err(|err| err.to_string())?;
                held.push(handle);
            }
        } else {
            let handle = held.swap_remove(rng.below(held.len() as u64) as usize);
            pool.zs_free(handle).map_err(|err| err.to_string())?;
        }
        if op % 5000 == 4999 {
            pool.zs_compact().map_err(|err| err.to_string())?;
        }
    }
    pool.check_invariants().map_err(|err| err.to_string())?;
    Ok(zs_classes(&pool))
}
