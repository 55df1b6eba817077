//! Criterion group `trace`: the shipped kernel trace decoded from its
//! `.pftrace` bytes, and replayed on a host-shaped machine (boot, replay,
//! fragmentation samples, report rows), in events per second.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use pageframe_lab::trace::{self, ReplayOptions};

fn shipped(c: &mut Criterion) {
    let bytes = std::fs::read(trace::shipped_trace_path()).expect("the shipped trace");
    let recorded = trace::decode(&bytes).expect("a valid trace");
    let mut group = c.benchmark_group("trace");
    group.throughput(Throughput::Elements(recorded.events.len() as u64));
    group.sample_size(20);
    group.bench_function("decode", |b| {
        b.iter(|| trace::decode(black_box(&bytes)).expect("a valid trace"))
    });
    let options = ReplayOptions::default();
    group.bench_function("replay", |b| {
        b.iter(|| trace::run_replay(black_box(&recorded), &options).expect("replays"))
    });
    group.finish();
}

criterion_group!(benches, shipped);
criterion_main!(benches);
