//! The shared allocator under real threads: four threads, each registered
//! as its own CPU, allocating and freeing at random (single pages, several
//! orders, bulk calls); producer threads handing pages over channels to
//! consumer threads that free them on other CPUs; two threads racing to
//! free the same pages (exactly one free of each succeeds); and CPU
//! registration across threads. The invariant walk needs a quiescent
//! allocator, so it runs after the threads are joined, followed by the
//! conservation check `free + pcp + allocated == managed`.

mod common;

use common::{assert_conserved, pages_held, MIB};
use pageframe::{
    proc, AllocError, CpuError, CpuId, FreeError, Gfp, MachineDesc, MachineRng, MigrateType,
    NodeId, Order, Page, SharedPageAllocator,
};
use std::sync::{mpsc, Arc, Barrier};
use std::thread;

/// Two nodes of 32 MiB with CPUs 0-1 on node 0 and 2-3 on node 1.
fn shared_machine() -> Arc<SharedPageAllocator> {
    let desc = MachineDesc::uniform(64 * MIB, 2, 4).unwrap();
    let allocator = SharedPageAllocator::boot(&desc).unwrap();
    allocator.check_invariants().unwrap();
    Arc::new(allocator)
}

/// Frees everything through CPU 0, drains, and checks that memory merged
/// back to the boot state (unless a HIGHATOMIC block keeps it apart).
fn free_everything(allocator: &SharedPageAllocator, held: &[(Page, Order)], boot_buddyinfo: &str) {
    let cpu = allocator.register_cpu(CpuId(0)).unwrap();
    for &(page, order) in held {
        cpu.free_pages(page, order).unwrap();
    }
    allocator.drain_all_pages();
    assert_conserved(allocator, 0);
    let highatomic: u64 = allocator
        .zone_snapshots()
        .iter()
        .map(|zone| zone.pageblocks[MigrateType::HighAtomic.index()])
        .sum();
    if highatomic == 0 {
        assert_eq!(proc::buddyinfo(allocator), boot_buddyinfo);
    }
}

const PAGES_PER_THREAD: u64 = 1500;

/// One thread's random walk on `cpu`; returns the blocks it still holds.
fn churn(
    allocator: Arc<SharedPageAllocator>,
    cpu: CpuId,
    start: Arc<Barrier>,
) -> Vec<(Page, Order)> {
    let handle = allocator.register_cpu_arc(cpu).unwrap();
    let mut rng = MachineRng::new(cpu.0 as u64 + 1);
    let gfps = [
        Gfp::KERNEL,
        Gfp::MOVABLE,
        Gfp::HIGHUSER_MOVABLE,
        Gfp::ATOMIC,
        Gfp::KERNEL | Gfp::RECLAIMABLE,
    ];
    let orders = [0u8, 0, 0, 1, 2, 3, 9, 10];
    let mut held: Vec<(Page, Order)> = Vec::new();
    start.wait();
    for _ in 0..4000 {
        let action = rng.below(10);
        let order = Order(orders[rng.below(orders.len() as u64) as usize]);
        let node = NodeId(rng.below(2) as u16);
        let room = pages_held(&held) + order.nr_pages() + 16 <= PAGES_PER_THREAD;
        if action < 4 && room {
            let gfp = gfps[rng.below(gfps.len() as u64) as usize];
            match handle.alloc_pages(gfp, order, node) {
                Ok(page) => {
                    assert!(page.pfn().is_aligned(order));
                    held.push((page, order));
                }
                // Costly orders may fail on fragmentation; small ones may not.
                Err(AllocError::NoMemory { order }) if order.0 > 3 => {}
                Err(err) => panic!("CPU {cpu}: {err}"),
            }
        } else if action < 7 && !held.is_empty() {
            let (page, order) = held.swap_remove(rng.below(held.len() as u64) as usize);
            handle.free_pages(page, order).unwrap();
        } else if action == 7 && room {
            let mut slots = vec![None; 16];
            let filled = handle
                .alloc_pages_bulk(Gfp::KERNEL, node, None, &mut slots)
                .unwrap();
            assert!(filled >= 1, "a bulk call got nothing with memory to spare");
            held.extend(slots.into_iter().flatten().map(|page| (page, Order(0))));
        } else if action == 8 {
            let (singles, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut held)
                .into_iter()
                .partition(|(_, order)| order.0 == 0);
            let batch: Vec<Page> = singles.iter().take(16).map(|&(page, _)| page).collect();
            handle.free_pages_bulk(&batch).unwrap();
            held = singles[batch.len()..].iter().copied().chain(rest).collect();
        } else if action == 9 {
            handle.drain_pcp();
        }
    }
    held
}

#[test]
fn four_threads_on_their_own_cpus_keep_every_page_accounted() {
    let allocator = shared_machine();
    let boot_buddyinfo = proc::buddyinfo(&allocator);
    let start = Arc::new(Barrier::new(4));
    let threads: Vec<_> = (0..4)
        .map(|cpu| {
            let allocator = Arc::clone(&allocator);
            let start = Arc::clone(&start);
            thread::spawn(move || churn(allocator, CpuId(cpu), start))
        })
        .collect();
    let held: Vec<(Page, Order)> = threads
        .into_iter()
        .flat_map(|thread| thread.join().unwrap())
        .collect();
    assert_conserved(&allocator, pages_held(&held));
    let mut starts: Vec<_> = held.iter().map(|(page, _)| page.pfn()).collect();
    starts.sort_unstable();
    starts.dedup();
    assert_eq!(
        starts.len(),
        held.len(),
        "two threads were given the same block"
    );
    let allocated: u64 = allocator
        .zone_snapshots()
        .iter()
        .map(|zone| zone.event(pageframe::VmEvent::Pgalloc))
        .sum();
    let freed: u64 = allocator
        .zone_snapshots()
        .iter()
        .map(|zone| zone.event(pageframe::VmEvent::Pgfree))
        .sum();
    assert_eq!(allocated - freed, pages_held(&held));
    free_everything(&allocator, &held, &boot_buddyinfo);
}

/// Allocates on `cpu` and sends every block to the consumer.
fn produce(
    allocator: Arc<SharedPageAllocator>,
    cpu: CpuId,
    sender: mpsc::SyncSender<(Page, Order)>,
) {
    let handle = allocator.register_cpu_arc(cpu).unwrap();
    let mut rng = MachineRng::new(100 + cpu.0 as u64);
    for round in 0..3000 {
        if round % 10 == 0 {
            let mut batch = Vec::new();
            handle
                .alloc_pages_bulk_vec(Gfp::KERNEL, NodeId(0), 8, &mut batch)
                .unwrap();
            for page in batch {
                sender.send((page, Order(0))).unwrap();
            }
        } else {
            let order = Order(rng.below(4) as u8);
            let node = NodeId(rng.below(2) as u16);
            let page = handle.alloc_pages(Gfp::MOVABLE, order, node).unwrap();
            sender.send((page, order)).unwrap();
        }
    }
}

/// Frees on `cpu` whatever arrives; returns how many pages it freed.
fn consume(
    allocator: Arc<SharedPageAllocator>,
    cpu: CpuId,
    receiver: mpsc::Receiver<(Page, Order)>,
) -> u64 {
    let handle = allocator.register_cpu_arc(cpu).unwrap();
    let mut pages = 0;
    for (page, order) in receiver {
        handle.free_pages(page, order).unwrap();
        pages += order.nr_pages();
    }
    pages
}

#[test]
fn pages_allocated_on_one_thread_are_freed_on_another() {
    let allocator = shared_machine();
    let boot_buddyinfo = proc::buddyinfo(&allocator);
    let mut producers = Vec::new();
    let mut consumers = Vec::new();
    for (producer_cpu, consumer_cpu) in [(CpuId(0), CpuId(3)), (CpuId(2), CpuId(1))] {
        // A bounded channel: the producer waits for its consumer instead of
        // running the machine out of memory.
        let (sender, receiver) = mpsc::sync_channel(64);
        let allocator_p = Arc::clone(&allocator);
        producers.push(thread::spawn(move || {
            produce(allocator_p, producer_cpu, sender)
        }));
        let allocator_c = Arc::clone(&allocator);
        consumers.push(thread::spawn(move || {
            consume(allocator_c, consumer_cpu, receiver)
        }));
    }
    for producer in producers {
        producer.join().unwrap();
    }
    let freed: u64 = consumers
        .into_iter()
        .map(|consumer| consumer.join().unwrap())
        .sum();
    assert_conserved(&allocator, 0);
    assert_eq!(common::vmstat_value(&*allocator, "pgfree"), freed);
    let allocated: u64 = ["pgalloc_dma32", "pgalloc_normal", "pgalloc_movable"]
        .iter()
        .map(|name| common::vmstat_value(&*allocator, name))
        .sum();
    assert_eq!(allocated, freed);
    free_everything(&allocator, &[], &boot_buddyinfo);
}

#[test]
fn racing_frees_of_the_same_pages_succeed_exactly_once() {
    let allocator = shared_machine();
    let pages: Vec<Page> = {
        let cpu = allocator.register_cpu(CpuId(0)).unwrap();
        (0..3000)
            .map(|_| cpu.alloc_pages(Gfp::KERNEL, Order(0), NodeId(0)).unwrap())
            .collect()
    };
    assert_conserved(&allocator, 3000);
    let pages = Arc::new(pages);
    let start = Arc::new(Barrier::new(2));
    let racers: Vec<_> = [CpuId(1), CpuId(2)]
        .into_iter()
        .map(|cpu| {
            let allocator = Arc::clone(&allocator);
            let pages = Arc::clone(&pages);
            let start = Arc::clone(&start);
            thread::spawn(move || {
                let handle = allocator.register_cpu_arc(cpu).unwrap();
                start.wait();
                let mut freed = 0u64;
                for &page in pages.iter() {
                    match handle.free_pages(page, Order(0)) {
                        Ok(()) => freed += 1,
                        Err(FreeError::DoubleFree(_) | FreeError::NotAllocated(_)) => {}
                        Err(err) => panic!("{err}"),
                    }
                }
                freed
            })
        })
        .collect();
    let freed: u64 = racers.into_iter().map(|racer| racer.join().unwrap()).sum();
    assert_eq!(freed, 3000);
    assert_conserved(&allocator, 0);
}

#[test]
fn a_cpu_is_registered_to_one_handle_at_a_time_across_threads() {
    let allocator = shared_machine();
    let handle = allocator.register_cpu_arc(CpuId(0)).unwrap();
    let contender = Arc::clone(&allocator);
    let refused = thread::spawn(move || contender.register_cpu_arc(CpuId(0)).err())
        .join()
        .unwrap();
    assert_eq!(refused, Some(CpuError::Busy(CpuId(0))));

    // The handle moves to another thread and works there.
    let page = thread::spawn(move || {
        let page = handle
            .alloc_pages(Gfp::KERNEL, Order(1), NodeId(1))
            .unwrap();
        assert_eq!(handle.cpu(), CpuId(0));
        page
    })
    .join()
    .unwrap();
    assert_conserved(&allocator, 2);
    // Its thread ended and dropped it: CPU 0 is free again.
    let again = allocator.register_cpu(CpuId(0)).unwrap();
    again.free_pages(page, Order(1)).unwrap();
    assert_eq!(
        again.free_pages(page, Order(1)),
        Err(FreeError::DoubleFree(page.pfn()))
    );
    assert!(matches!(
        allocator.register_cpu(CpuId(4)),
        Err(CpuError::NoSuchCpu(CpuId(4)))
    ));
    assert_conserved(&allocator, 0);
}
