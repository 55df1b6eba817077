//! Criterion benchmarks of the page allocator's hot paths: order-0
//! alloc+free through the per-CPU lists, the bulk API at the batch sizes of
//! bulk-page-allocator.txt, higher orders through the buddy lists, and boot.

use criterion::{
    black_box, criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput,
};
use pageframe::{CpuId, Gfp, LocalPageAllocator, MachineDesc, NodeId, Order, Page};

fn machine() -> LocalPageAllocator {
    LocalPageAllocator::boot(&MachineDesc::uniform(4 << 30, 1, 2).expect("valid machine"))
        .expect("boots")
}

fn single(c: &mut Criterion) {
    let allocator = machine();
    let cpu = allocator.cpu(CpuId(0)).expect("cpu 0");
    let mut group = c.benchmark_group("alloc_free");
    for order in [0u8, 3, 9] {
        group.throughput(Throughput::Elements(1));
        group.bench_with_input(BenchmarkId::new("order", order), &order, |b, &order| {
            b.iter(|| {
                let page = cpu
                    .alloc_pages(Gfp::KERNEL, Order(order), NodeId(0))
                    .expect("memory");
                cpu.free_pages(black_box(page), Order(order))
                    .expect("valid free");
            })
        });
    }
    group.finish();
}

fn bulk(c: &mut Criterion) {
    let allocator = machine();
    let cpu = allocator.cpu(CpuId(0)).expect("cpu 0");
    let mut group = c.benchmark_group("bulk");
    for batch in [1usize, 2, 3, 4, 8, 16, 32, 64, 128, 256] {
        let mut slots: Vec<Option<Page>> = vec![None; batch];
        group.throughput(Throughput::Elements(batch as u64));
        group.bench_with_input(BenchmarkId::new("batch", batch), &batch, |b, &batch| {
            b.iter(|| {
                let got = cpu
                    .alloc_pages_bulk(Gfp::KERNEL, NodeId(0), None, &mut slots)
                    .expect("valid request");
                assert_eq!(got, batch);
                cpu.free_pages_bulk_array(black_box(&mut slots))
                    .expect("valid free");
            })
        });
    }
    group.finish();
}

fn boot(c: &mut Criterion) {
    let mut group = c.benchmark_group("boot");
    group.sample_size(10);
    for gib in [4u64, 64] {
        let desc = MachineDesc::uniform(gib << 30, 2, 4).expect("valid machine");
        group.bench_with_input(BenchmarkId::new("GiB", gib), &desc, |b, desc| {
            b.iter_batched(
                || desc.clone(),
                |desc| LocalPageAllocator::boot(&desc).expect("boots"),
                BatchSize::PerIteration,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, single, bulk, boot);
criterion_main!(benches);
