//! Criterion group `order0`: one order-0 allocation and free, for pageframe
//! (through the per-CPU lists) and each peer of `pageframe_lab::peers`, in
//! one process; and `bulk32`: 32 pages through pageframe's bulk API against
//! the `Vec<u32>` floor.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use pageframe::{CpuId, Gfp, LocalPageAllocator, MachineDesc, NodeId, Order, Page};
use pageframe_lab::peers::{BuddyAllocCrate, BuddySystem, PeerAllocator, VecStack};

fn order0(c: &mut Criterion) {
    let mut group = c.benchmark_group("order0");
    group.throughput(Throughput::Elements(1));
    let allocator =
        LocalPageAllocator::boot(&MachineDesc::uniform(4 << 30, 1, 2).expect("valid machine"))
            .expect("boots");
    let cpu = allocator.cpu(CpuId(0)).expect("cpu 0");
    group.bench_function("pageframe", |b| {
        b.iter(|| {
            let page = cpu
                .alloc_pages(Gfp::KERNEL, Order(0), NodeId(0))
                .expect("memory");
            cpu.free_pages(black_box(page), Order(0))
                .expect("valid free");
        })
    });
    let buddy_alloc = BuddyAllocCrate::new().expect("buffer");
    let peers: Vec<Box<dyn PeerAllocator>> = vec![
        Box::new(BuddySystem::new()),
        Box::new(buddy_alloc),
        Box::new(VecStack::new()),
    ];
    for mut peer in peers {
        group.bench_function(peer.name(), |b| {
            b.iter(|| {
                let block = peer.alloc(0).expect("memory");
                peer.free(black_box(block), 0);
            })
        });
    }
    group.finish();
}

fn bulk32(c: &mut Criterion) {
    let mut group = c.benchmark_group("bulk32");
    group.throughput(Throughput::Elements(32));
    let allocator =
        LocalPageAllocator::boot(&MachineDesc::uniform(4 << 30, 1, 2).expect("valid machine"))
            .expect("boots");
    let cpu = allocator.cpu(CpuId(0)).expect("cpu 0");
    let mut slots: Vec<Option<Page>> = vec![None; 32];
    group.bench_function("pageframe", |b| {
        b.iter(|| {
            cpu.alloc_pages_bulk(Gfp::KERNEL, NodeId(0), None, &mut slots)
                .expect("valid request");
            cpu.free_pages_bulk_array(black_box(&mut slots))
                .expect("valid free");
        })
    });
    let mut stack = VecStack::new();
    let mut pfns = [0u32; 32];
    group.bench_function("vec-stack", |b| {
        b.iter(|| {
            let got = stack.pop_bulk(&mut pfns);
            stack.push_bulk(black_box(&pfns[..got]));
        })
    });
    group.finish();
}

criterion_group!(benches, order0, bulk32);
criterion_main!(benches);
