//! The heap's conflict rate per benchmark run on a machine aged by the
//! reclaim layer's workload (`pageframe::reclaim::aging`), without and
//! with shuffle: a machine 8x a direct-mapped memory-side cache, a heap 3x
//! the cache measured with the shuffle-cache experiment's object mix.
//!
//! `cargo run --release -p pageframe-lab --example reclaim_aging -- [runs] [seed]`

use pageframe::machine::{apply_cmdline, MemorySideCache};
use pageframe::reclaim::{AgingConfig, AgingWorkload};
use pageframe::{AllocOptions, CpuId, LocalPageAllocator, MachineDesc};
use pageframe_lab::workloads::heap::{conflict_rate, HeapMix};

const CACHE: u64 = 64 << 20;
const LINE: u64 = 64;
const ACCESSES: u64 = 12_000_000;

fn main() {
    let mut args = std::env::args().skip(1);
    let runs: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(20);
    let seed: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(1);
    let memory = 8 * CACHE;
    for shuffle in [false, true] {
        let mut desc = MachineDesc::uniform(memory, 1, 2).expect("machine");
        desc.memory_side_cache = Some(MemorySideCache {
            size: CACHE,
            line: LINE,
            per_node: false,
        });
        let cmdline = format!("page_alloc.shuffle={}", shuffle as u8);
        apply_cmdline(&mut desc, &cmdline).expect("cmdline");
        let allocator =
            LocalPageAllocator::boot_seeded(&desc, AllocOptions::default(), seed).expect("boot");
        let page_shift = allocator.layout().page_shift as u32;
        let config =
            AgingConfig::for_machine((3 * CACHE) >> page_shift, memory >> page_shift, CpuId(0));
        let mut workload = AgingWorkload::new(&allocator, config, seed ^ 0xa9e).expect("workload");
        let started = std::time::Instant::now();
        let mut rates = Vec::new();
        for _ in 0..runs {
            let rate = workload
                .benchmark_run(|pfns| {
                    conflict_rate(
                        pfns,
                        HeapMix::default(),
                        page_shift,
                        (CACHE, LINE),
                        ACCESSES,
                    )
                })
                .expect("run");
            rates.push(rate.expect("cache geometry"));
        }
        workload.mm().check_invariants().expect("invariants");
        let text: Vec<String> = rates.iter().map(|r| format!("{:.3}", r)).collect();
        println!(
            "shuffle={shuffle} ({:.1} s): {}",
            started.elapsed().as_secs_f64(),
            text.join(" ")
        );
        print!("{}", workload.mm().vmstat());
        print!("{}", workload.mm().meminfo().render(page_shift as u8));
    }
}
