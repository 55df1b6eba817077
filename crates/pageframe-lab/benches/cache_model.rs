//! Criterion benchmark of the memory-side cache model: simulated accesses
//! per second on one core (the issue asks for at least 200 million), for a
//! streaming pattern and a random one over a working set 3x the cache.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use pageframe::MachineRng;
use pageframe_lab::cache_model::DirectMappedCache;

const ACCESSES: u64 = 1 << 20;

fn cache_model(c: &mut Criterion) {
    let mut group = c.benchmark_group("cache_model");
    group.throughput(Throughput::Elements(ACCESSES));
    let mut cache = DirectMappedCache::new(64 << 20, 64).expect("valid cache");
    group.bench_function("stream", |b| {
        let mut addr = 0u64;
        b.iter(|| {
            for _ in 0..ACCESSES {
                cache.access(black_box(addr));
                addr = (addr + 64) % (192 << 20);
            }
        })
    });
    let mut rng = MachineRng::new(1);
    let addrs: Vec<u64> = (0..ACCESSES).map(|_| rng.below(192 << 20) & !63).collect();
    group.bench_function("random", |b| {
        b.iter(|| {
            for &addr in &addrs {
                cache.access(black_box(addr));
            }
        })
    });
    group.finish();
    black_box(cache.stats());
}

criterion_group!(benches, cache_model);
criterion_main!(benches);
