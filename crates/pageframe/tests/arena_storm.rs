//! A bounded storm on real memory: one thread per host CPU (at least two),
//! each on its own CPU handle of a memfd-backed [`SharedPageAllocator`],
//! doing a seeded random mix of allocations (orders 0-3 and 9), bulk
//! allocations, `__GFP_UNMAPPED` allocations reached through the mermap,
//! local frees, and remote frees through a shared queue. Every block is
//! filled with a pattern of (thread, PFN, generation) when allocated, and
//! every byte is checked before the block is freed, by whichever thread
//! frees it. At the end everything is freed, the invariants hold, and the
//! free page count is the boot count again.
//!
//! `PAGEFRAME_STORM_SECS` sets the length (default 20 s, at most 60 s). The
//! operations each thread picks are a function of its seed; how far each
//! thread gets in the time, and so the interleaving, is not. The test skips,
//! saying why, when the host cannot make the arena (no memfd or mmap).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pageframe::Shared;
use pageframe::{
    AllocError, AllocOptions, ArenaOptions, CpuHandle, CpuId, Gfp, MachineDesc, MachineRng, NodeId,
    Order, Page, SharedPageAllocator,
};

const MIB: u64 = 1 << 20;
const PAGE: usize = 4096;
const ARENA_MIB: u64 = 256;
/// Pages one thread may hold at once, so that N threads never exhaust the arena.
const PAGES_PER_THREAD: u64 = 4096;
const DEFAULT_SECS: u64 = 20;
const MAX_SECS: u64 = 60;
const ORDERS: [u8; 6] = [0, 0, 1, 2, 3, 9];
const UNMAPPED: Gfp = Gfp::KERNEL.union(Gfp::UNMAPPED);

/// One allocated block and what was written into it.
#[derive(Clone, Copy)]
struct Block {
    page: Page,
    order: Order,
    writer: u64,
    generation: u64,
    unmapped: bool,
}

impl Block {
    fn bytes(&self) -> usize {
        PAGE << self.order.0
    }

    /// The block's contents: every 8-byte word a mix of writer, PFN,
    /// generation and the word's index, so that a byte written to the wrong
    /// page, by the wrong thread or in an earlier life shows.
    fn pattern(&self) -> Vec<u8> {
        let key = self.writer << 56 ^ self.page.pfn().0 << 20 ^ self.generation;
        (0..self.bytes() / 8)
            .flat_map(|word| {
                (key ^ (word as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)).to_le_bytes()
            })
            .collect()
    }
}

/// What one thread did.
#[derive(Default)]
struct Tally {
    operations: u64,
    verified_bytes: u64,
}

type Handle = CpuHandle<Arc<SharedPageAllocator>, Shared>;

fn write(handle: &Handle, block: &Block) {
    let data = block.pattern();
    if block.unmapped {
        handle.write_unmapped(block.page, 0, &data).unwrap();
    } else {
        handle.write_page(block.page, 0, &data).unwrap();
    }
}

/// Checks every byte of the block; returns how many.
fn verify(handle: &Handle, block: &Block) -> u64 {
    let mut back = vec![0; block.bytes()];
    if block.unmapped {
        handle.read_unmapped(block.page, 0, &mut back).unwrap();
    } else {
        handle.read_page(block.page, 0, &mut back).unwrap();
    }
    assert!(
        back == block.pattern(),
        "block at PFN {} (order {}, writer {}, generation {}) was overwritten",
        block.page.pfn().0,
        block.order.0,
        block.writer,
        block.generation
    );
    back.len() as u64
}

fn held_pages(held: &[Block]) -> u64 {
    held.iter().map(|block| block.order.nr_pages()).sum()
}

/// One thread's storm on CPU `thread` until `deadline`; then it frees all it holds.
fn storm(
    allocator: Arc<SharedPageAllocator>,
    thread: u16,
    remote: Arc<Mutex<Vec<Block>>>,
    deadline: Instant,
) -> Tally {
    let handle = allocator.register_cpu_arc(CpuId(thread)).unwrap();
    let mut rng = MachineRng::new(0x5702_u64 + u64::from(thread));
    let writer = u64::from(thread);
    let mut tally = Tally::default();
    let mut held: Vec<Block> = Vec::new();
    let mut generation = 0u64;
    let mut new_block = |page: Page, order: Order, unmapped: bool| {
        generation += 1;
        Block {
            page,
            order,
            writer,
            generation,
            unmapped,
        }
    };
    while Instant::now() < deadline {
        tally.operations += 1;
        let order = Order(ORDERS[rng.below(ORDERS.len() as u64) as usize]);
        let room = held_pages(&held) + order.nr_pages() + 16 <= PAGES_PER_THREAD;
        match rng.below(10) {
            0..=2 if room => match handle.alloc_pages(Gfp::KERNEL, order, NodeId(0)) {
                Ok(page) => {
                    let block = new_block(page, order, false);
                    write(&handle, &block);
                    held.push(block);
                }
                // An order-9 block may not be had on a fragmented arena.
                Err(AllocError::NoMemory { order }) if order.0 > 3 => {}
                Err(err) => panic!("thread {thread}: {err}"),
            },
            3 if room => {
                let mut batch = Vec::new();
                handle
                    .alloc_pages_bulk_vec(Gfp::KERNEL, NodeId(0), 8, &mut batch)
                    .unwrap();
                for page in batch {
                    let block = new_block(page, Order(0), false);
                    write(&handle, &block);
                    held.push(block);
                }
            }
            4 if room => {
                let order = Order(order.0.min(1));
                let page = handle.alloc_pages(UNMAPPED, order, NodeId(0)).unwrap();
                let block = new_block(page, order, true);
                write(&handle, &block);
                held.push(block);
            }
            5 | 6 if !held.is_empty() => {
                let block = held.swap_remove(rng.below(held.len() as u64) as usize);
                tally.verified_bytes += verify(&handle, &block);
                handle.free_pages(block.page, block.order).unwrap();
            }
            7 if !held.is_empty() => {
                // Hand a block to whichever thread takes from the queue next.
                let block = held.swap_remove(rng.below(held.len() as u64) as usize);
                remote.lock().unwrap().push(block);
            }
            8 => {
                let taken: Vec<Block> = {
                    let mut queue = remote.lock().unwrap();
                    let keep = queue.len().saturating_sub(8);
                    queue.split_off(keep)
                };
                for block in taken {
                    tally.verified_bytes += verify(&handle, &block);
                    handle.free_pages(block.page, block.order).unwrap();
                }
            }
            _ => {
                let singles: Vec<Block> = held
                    .iter()
                    .filter(|block| block.order.0 == 0)
                    .take(16)
                    .copied()
                    .collect();
                for block in &singles {
                    tally.verified_bytes += verify(&handle, block);
                }
                let pages: Vec<Page> = singles.iter().map(|block| block.page).collect();
                handle.free_pages_bulk(&pages).unwrap();
                held.retain(|block| !pages.contains(&block.page));
            }
        }
    }
    for block in held {
        tally.verified_bytes += verify(&handle, &block);
        handle.free_pages(block.page, block.order).unwrap();
    }
    tally
}

fn storm_secs() -> u64 {
    std::env::var("PAGEFRAME_STORM_SECS")
        .ok()
        .and_then(|secs| secs.parse().ok())
        .unwrap_or(DEFAULT_SECS)
        .min(MAX_SECS)
}

#[test]
fn threads_storm_a_memfd_arena_and_every_byte_survives() {
    let threads = std::thread::available_parallelism()
        .map_or(2, |count| count.get())
        .clamp(2, 16);
    let desc = MachineDesc::uniform(ARENA_MIB * MIB, 1, threads).unwrap();
    let allocator = match SharedPageAllocator::boot_arena(
        &desc,
        AllocOptions::KERNEL,
        11,
        ArenaOptions::default(),
    ) {
        Ok(allocator) => Arc::new(allocator),
        Err(err) => {
            println!("skipped: this host cannot make a memfd arena ({err})");
            return;
        }
    };
    allocator.check_invariants().unwrap();
    let boot_free = allocator.nr_free_pages();
    let remote = Arc::new(Mutex::new(Vec::new()));
    let deadline = Instant::now() + Duration::from_secs(storm_secs());
    let workers: Vec<_> = (0..threads as u16)
        .map(|thread| {
            let (allocator, remote) = (Arc::clone(&allocator), Arc::clone(&remote));
            std::thread::spawn(move || storm(allocator, thread, remote, deadline))
        })
        .collect();
    let tallies: Vec<Tally> = workers
        .into_iter()
        .map(|worker| worker.join().unwrap())
        .collect();
    // What is still queued is freed, after its check, on CPU 0.
    let cpu = allocator.register_cpu_arc(CpuId(0)).unwrap();
    let mut verified: u64 = tallies.iter().map(|tally| tally.verified_bytes).sum();
    for block in remote.lock().unwrap().drain(..) {
        verified += verify(&cpu, &block);
        cpu.free_pages(block.page, block.order).unwrap();
    }
    drop(cpu);
    allocator.drain_all_pages();
    allocator.check_invariants().unwrap();
    assert_eq!(allocator.nr_allocated_pages(), 0);
    // Unmapped pageblocks stay on their own lists until released.
    allocator.release_unmapped_pageblocks();
    allocator.drain_all_pages();
    allocator.check_invariants().unwrap();
    assert_eq!(allocator.nr_free_pages(), boot_free);
    let operations: u64 = tallies.iter().map(|tally| tally.operations).sum();
    assert!(operations > 0 && verified > 0);
    eprintln!(
        "arena storm: {threads} threads, {operations} operations, {} MiB verified",
        verified / MIB
    );
}
