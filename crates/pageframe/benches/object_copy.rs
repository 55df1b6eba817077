//! Criterion benchmarks of the object copy loop: write an object's bytes,
//! then read them back, for every object of a full pool. This is the path
//! that reaches page contents in the backing (the simulation's sparse page
//! store, or the memfd arena's direct map), so it is the figure to watch
//! when that path changes.
//!
//! - `write_read/zsmalloc`: 4096 live zsmalloc objects with sizes from
//!   [`CompressedSizes`] (a seeded log-normal model, median 1300 B).
//! - `write_read/slab`: 4096 live `kmalloc(256)` objects.
//!
//! Reported per object (one write and one read). Each benchmark runs on the
//! simulated backing and, with `-arena` in the name, on a memfd arena
//! (skipped with a printed reason when the host cannot make one).

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use pageframe::page_source::CpuPages;
use pageframe::slab::{SlabAllocator, SlabParams};
use pageframe::zpool::zsmalloc::{ZsConfig, ZsPool};
use pageframe::zpool::CompressedSizes;
use pageframe::zpool::Zpool;
use pageframe::{
    AllocOptions, ArenaOptions, CpuId, Gfp, LocalPageAllocator, MachineDesc, PageAllocator,
};

/// Live objects per pool.
const OBJECTS: usize = 4096;
/// The slab benchmark's object size (a kmalloc-256 object).
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

fn zsmalloc(c: &mut Criterion) {
    let data = vec![0xa5u8; 4096];
    let mut out = vec![0u8; 4096];
    let mut model = CompressedSizes::new(42, 4096);
    let sizes: Vec<usize> = (0..OBJECTS).map(|_| model.next_size()).collect();
    let mut group = c.benchmark_group("write_read");
    group.throughput(Throughput::Elements(OBJECTS as u64));
    for (suffix, allocator) in machines() {
        let source = CpuPages::new(allocator.cpu(CpuId(0)).expect("cpu"));
        let mut pool = ZsPool::new(source, ZsConfig::default()).expect("pool");
        let objects: Vec<(u64, usize)> = sizes
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

fn slab(c: &mut Criterion) {
    let data = [0x5au8; SLAB_OBJECT];
    let mut out = [0u8; SLAB_OBJECT];
    let mut group = c.benchmark_group("write_read");
    group.throughput(Throughput::Elements(OBJECTS as u64));
    for (suffix, allocator) in machines() {
        let source = CpuPages::new(allocator.cpu(CpuId(0)).expect("cpu"));
        let mut slab = SlabAllocator::new(source, SlabParams::new(2, 4096)).expect("slab");
        let objects: Vec<_> = (0..OBJECTS)
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

criterion_group!(benches, zsmalloc, slab);
criterion_main!(benches);
