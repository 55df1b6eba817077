//! A VMM-style guest-memory pool: one machine over a memfd arena, shared by
//! vCPU threads. Each thread registers its own CPU, takes guest pages one
//! block and one bulk batch at a time, fills them, reads them back and
//! returns them. At the end every page is free again and the allocator's
//! invariants hold.
//!
//! Run: `cargo run --release -p pageframe --example guest_memory_pool`

use std::sync::Arc;
use std::thread;

use pageframe::{
    AllocOptions, ArenaOptions, CpuId, Gfp, MachineDesc, Order, Page, SharedPageAllocator,
};

/// vCPU threads, one per CPU of the machine.
const VCPUS: usize = 4;
/// Rounds of allocate, fill, verify, free per thread.
const ROUNDS: usize = 8;
/// Order-0 guest pages taken per round with one bulk call.
const BULK_PAGES: usize = 64;

/// The byte a vCPU writes into guest page `index` of a round: differs
/// between threads and pages, so a mixed-up page shows.
fn pattern(vcpu: usize, index: usize) -> u8 {
    (vcpu * 31 + index * 7 + 1) as u8
}

pub fn main() -> Result<(), Box<dyn std::error::Error>> {
    // 128 MiB on two NUMA nodes, four CPUs; the memmap describes it and a
    // memfd arena holds the bytes (the direct map).
    let machine = MachineDesc::uniform(128 << 20, 2, VCPUS)?;
    let allocator = Arc::new(SharedPageAllocator::boot_arena(
        &machine,
        AllocOptions::KERNEL,
        42,
        ArenaOptions::default(),
    )?);
    let page_size = 1usize << allocator.layout().page_shift;
    let free_at_boot = allocator.nr_free_pages();

    let vcpus: Vec<_> = (0..VCPUS)
        .map(|vcpu| {
            // A handle is the thread's claim on its CPU (and its per-CPU
            // lists); the Arc form can move into the thread.
            let cpu = allocator.register_cpu_arc(CpuId(vcpu as u16))?;
            let node = allocator.layout().cpu_node[vcpu];
            Ok(thread::spawn(move || -> Result<usize, String> {
                let mut verified = 0;
                let mut bytes = vec![0u8; page_size];
                for _ in 0..ROUNDS {
                    // Guest RAM is movable user memory; one order-2 block
                    // stands for a small contiguous region, the bulk batch
                    // for scattered 4 KiB guest pages.
                    let block = cpu
                        .alloc_pages(Gfp::HIGHUSER_MOVABLE, Order(2), node)
                        .map_err(|err| err.to_string())?;
                    let mut pages: Vec<Page> = vec![block];
                    cpu.alloc_pages_bulk_vec(Gfp::HIGHUSER_MOVABLE, node, BULK_PAGES, &mut pages)
                        .map_err(|err| err.to_string())?;
                    for (index, &page) in pages.iter().enumerate() {
                        bytes.fill(pattern(vcpu, index));
                        cpu.write_page(page, 0, &bytes)
                            .map_err(|err| err.to_string())?;
                    }
                    for (index, &page) in pages.iter().enumerate() {
                        cpu.read_page(page, 0, &mut bytes)
                            .map_err(|err| err.to_string())?;
                        assert!(bytes.iter().all(|&byte| byte == pattern(vcpu, index)));
                        verified += 1;
                    }
                    cpu.free_pages(block, Order(2))
                        .map_err(|err| err.to_string())?;
                    cpu.free_pages_bulk(&pages[1..])
                        .map_err(|err| err.to_string())?;
                }
                Ok(verified)
            }))
        })
        .collect::<Result<_, pageframe::CpuError>>()?;

    let mut verified = 0;
    for vcpu in vcpus {
        verified += vcpu.join().map_err(|_| "a vCPU thread panicked")??;
    }
    assert_eq!(verified, VCPUS * ROUNDS * (BULK_PAGES + 1));

    // The threads have ended and their handles with them: empty every
    // CPU's lists, and every page is back on the buddy lists.
    for cpu in 0..VCPUS {
        allocator.drain_pcp(CpuId(cpu as u16))?;
    }
    assert_eq!(allocator.nr_free_pages(), free_at_boot);
    allocator.check_invariants()?;
    println!("{VCPUS} vCPUs verified {verified} guest pages; all {free_at_boot} pages free again");
    Ok(())
}
