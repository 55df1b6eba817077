//! Criterion benchmarks of the compressed-object allocators (zsmalloc,
//! afmalloc) with compressed-page-sized objects.
//!
//! Sizes come from [`CompressedSizes`]: a fixed seeded model (log-normal,
//! median 1300 B, 3 % incompressible 4 KiB pages, 2 % nearly empty), not a
//! measurement of real compressed data.
//!
//! - `malloc_write_free`: in a pool holding 1 024 (`live1k`, fits in the
//!   caches) or 20 000 (`live20k`, ~28 MB, mostly cache misses) objects, each
//!   element allocates an object, writes its bytes and frees the oldest
//!   object (steady state); reported per object.
//! - `store` / `load`: write or read every byte of 4096 live objects;
//!   reported in bytes per second.
//! - `write_read`: write each of 4096 live objects, then read it back
//!   (zsmalloc objects from the size model, and slab `kmalloc(256)`
//!   objects); reported per object. This is the path to page contents in
//!   the backing, the figure to watch when that path changes.
//!
//! Each benchmark runs on the simulated backing (page contents in its
//! sparse store, so the copies are real memcpys) and, with `-arena` in the
//! name, on a memfd arena (skipped with a printed reason when the host
//! cannot make one).

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use pageframe::page_source::CpuPages;
use pageframe::slab::{SlabAllocator, SlabParams};
use pageframe::zpool::afmalloc::{AfConfig, AfPool};
use pageframe::zpool::zsmalloc::{ZsConfig, ZsPool};
use pageframe::zpool::CompressedSizes;
use pageframe::zpool::{Zpool, ZpoolHandle};
use pageframe::{
    AllocOptions, ArenaOptions, CpuId, Gfp, LocalPageAllocator, MachineDesc, PageAllocator,
};
use std::collections::VecDeque;

const LIVE: [usize; 2] = [1024, 20_000];
const BATCH: usize = 1024;
const LOADED: usize = 4096;
/// The slab `write_read` benchmark's object size (a kmalloc-256 object).
const SLAB_OBJECT: usize = 256;

/// The benchmarked machines: the simulation (name suffix "") and, when the
/// host can make one, a memfd arena ("-arena").
fn machines() -> Vec<(&'static str, LocalPageAllocator)> {
    let desc = MachineDesc::uniform(1 << 30, 1, 2).expect("valid machine");
    let mut machines = vec![("", LocalPageAllocator::boot(&desc).expect("boots"))];
    let options = ArenaOptions {
        populate: true,
        ..ArenaOptions::default()
    };
    match PageAllocator::boot_arena(&desc, AllocOptions::default(), 0, options) {
        Ok(arena) => machines.push(("-arena", arena)),
        Err(err) => println!("arena benchmarks skipped: no memfd arena on this host ({err})"),
    }
    machines
}

fn sizes(count: usize) -> Vec<usize> {
    let mut model = CompressedSizes::new(42, 4096);
    (0..count).map(|_| model.next_size()).collect()
}

fn steady_state(c: &mut Criterion, name: &str, live_objects: usize, pool: &mut dyn Zpool) {
    let data = vec![0x5au8; 4096];
    let sizes = sizes(1 << 16);
    let mut live: VecDeque<ZpoolHandle> = VecDeque::with_capacity(live_objects + BATCH);
    for size in &sizes[..live_objects] {
        let handle = pool.malloc(*size).expect("memory");
        pool.write(handle, &data[..*size]).expect("write");
        live.push_back(handle);
    }
    let mut next = 0usize;
    let mut group = c.benchmark_group("malloc_write_free");
    group.throughput(Throughput::Elements(BATCH as u64));
    let id = format!("{name}/live{}k", live_objects / 1000);
    group.bench_function(id, |b| {
        b.iter(|| {
            for _ in 0..BATCH {
                let size = sizes[next & (sizes.len() - 1)];
                next += 1;
                let handle = pool.malloc(size).expect("memory");
                pool.write(handle, &data[..size]).expect("write");
                live.push_back(handle);
                let oldest = live.pop_front().expect("live objects");
                pool.free(black_box(oldest)).expect("free");
            }
        })
    });
    group.finish();
}

fn store_load(c: &mut Criterion, name: &str, pool: &mut dyn Zpool) {
    let data = vec![0xa5u8; 4096];
    let sizes = sizes(LOADED);
    let bytes: u64 = sizes.iter().map(|size| *size as u64).sum();
    let handles: Vec<(ZpoolHandle, usize)> = sizes
        .iter()
        .map(|size| (pool.malloc(*size).expect("memory"), *size))
        .collect();
    let mut group = c.benchmark_group("store");
    group.throughput(Throughput::Bytes(bytes));
    group.bench_function(name, |b| {
        b.iter(|| {
            for (handle, size) in &handles {
                pool.write(*handle, &data[..*size]).expect("write");
            }
        })
    });
    group.finish();
    let mut out = vec![0u8; 4096];
    let mut group = c.benchmark_group("load");
    group.throughput(Throughput::Bytes(bytes));
    group.bench_function(name, |b| {
        b.iter(|| {
            for (handle, size) in &handles {
                pool.read(*handle, &mut out[..*size]).expect("read");
                black_box(&out);
            }
        })
    });
    group.finish();
}

fn zsmalloc(c: &mut Criterion) {
    for (suffix, allocator) in machines() {
        let name = format!("zsmalloc{suffix}");
        let make = || {
            ZsPool::new(
                CpuPages::new(allocator.cpu(CpuId(0)).expect("cpu")),
                ZsConfig::default(),
            )
            .expect("pool")
        };
        for live in LIVE {
            steady_state(c, &name, live, &mut make());
        }
        store_load(c, &name, &mut make());
    }
}

fn afmalloc(c: &mut Criterion) {
    for (suffix, allocator) in machines() {
        let name = format!("afmalloc{suffix}");
        let make = || {
            AfPool::new(
                CpuPages::new(allocator.cpu(CpuId(0)).expect("cpu")),
                SlabParams::new(2, 4096),
                AfConfig::default(),
            )
            .expect("pool")
        };
        for live in LIVE {
            steady_state(c, &name, live, &mut make());
        }
        store_load(c, &name, &mut make());
    }
}

/// `write_read` on zsmalloc: `LOADED` objects of the size model.
fn zsmalloc_write_read(c: &mut Criterion) {
    let data = vec![0xa5u8; 4096];
    let mut out = vec![0u8; 4096];
    let sizes = sizes(LOADED);
    let mut group = c.benchmark_group("write_read");
    group.throughput(Throughput::Elements(LOADED as u64));
    for (suffix, allocator) in machines() {
        let source = CpuPages::new(allocator.cpu(CpuId(0)).expect("cpu"));
        let mut pool = ZsPool::new(source, ZsConfig::default()).expect("pool");
        let objects: Vec<(ZpoolHandle, usize)> = sizes
            .iter()
            .map(|size| (pool.malloc(*size).expect("memory"), *size))
            .collect();
        group.bench_function(format!("zsmalloc{suffix}"), |b| {
            b.iter(|| {
                for (handle, size) in &objects {
                    pool.write(*handle, &data[..*size]).expect("write");
                    pool.read(*handle, &mut out[..*size]).expect("read");
                    black_box(&out);
                }
            })
        });
    }
    group.finish();
}

/// `write_read` on slab: `LOADED` kmalloc-256 objects.
fn slab_write_read(c: &mut Criterion) {
    let data = [0x5au8; SLAB_OBJECT];
    let mut out = [0u8; SLAB_OBJECT];
    let mut group = c.benchmark_group("write_read");
    group.throughput(Throughput::Elements(LOADED as u64));
    for (suffix, allocator) in machines() {
        let source = CpuPages::new(allocator.cpu(CpuId(0)).expect("cpu"));
        let mut slab = SlabAllocator::new(source, SlabParams::new(2, 4096)).expect("slab");
        let objects: Vec<_> = (0..LOADED)
            .map(|_| slab.kmalloc(SLAB_OBJECT, Gfp::KERNEL).expect("memory"))
            .collect();
        group.bench_function(format!("slab{suffix}"), |b| {
            b.iter(|| {
                for addr in &objects {
                    slab.write(*addr, 0, &data).expect("write");
                    slab.read(*addr, 0, &mut out).expect("read");
                    black_box(&out);
                }
            })
        });
    }
    group.finish();
}

criterion_group!(
    benches,
    zsmalloc,
    afmalloc,
    zsmalloc_write_read,
    slab_write_read
);
criterion_main!(benches);
