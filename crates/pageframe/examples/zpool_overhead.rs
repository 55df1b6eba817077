//! The afmalloc document's accounting, on the size model: store objects
//! grouped into "directories" (contiguous runs, as untar writes files dir by
//! dir), then remove the directories largest first, printing after each
//! step what the document prints: compressed size, memory used, overhead
//! (`used - compressed`) and its ratio, and for afmalloc the real overhead
//! (metadata + internal fragmentation). Sizes come from the seeded model in
//! `pageframe::zpool::CompressedSizes`, not from real compressed data.
//!
//! Run: `cargo run --release -p pageframe --example zpool_overhead [seed]`

use pageframe::page_source::CpuPages;
use pageframe::slab::SlabParams;
use pageframe::zpool::afmalloc::{AfConfig, AfPool};
use pageframe::zpool::zsmalloc::{ZsConfig, ZsPool};
use pageframe::zpool::CompressedSizes;
use pageframe::zpool::{Zpool, ZpoolHandle};
use pageframe::{CpuId, LocalPageAllocator, MachineDesc};

/// Objects stored (4 KiB pages: ~512 MiB of original data, as the document's untar).
const OBJECTS: usize = 131_072;
/// Directory shares of the objects, in write order; removed largest first
/// (the document removes drivers, arch, fs, sound, include).
const DIRECTORIES: [(&str, u32); 6] = [
    ("arch", 21),
    ("drivers", 45),
    ("fs", 6),
    ("include", 4),
    ("sound", 4),
    ("rest", 20),
];

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

fn run(pool: &mut dyn Zpool, seed: u64) {
    let mut sizes = CompressedSizes::new(seed, 4096);
    let data = vec![0x3cu8; 4096];
    let total: u32 = DIRECTORIES.iter().map(|(_, share)| share).sum();
    let mut dirs: Vec<(&str, Vec<ZpoolHandle>)> = Vec::new();
    for (name, share) in DIRECTORIES {
        let count = OBJECTS * share as usize / total as usize;
        let handles = (0..count)
            .map(|_| {
                let size = sizes.next_size();
                let handle = pool.malloc(size).expect("memory");
                pool.write(handle, &data[..size]).expect("write");
                handle
            })
            .collect();
        dirs.push((name, handles));
    }
    println!("{}", pool.name());
    println!(
        "step           orig_size  compr_size  used_size   overhead  ratio   real    real-ratio"
    );
    let mut order: Vec<usize> = (0..dirs.len() - 1).collect();
    order.sort_by_key(|index| std::cmp::Reverse(dirs[*index].1.len()));
    let mut step = String::from("untar");
    let mut removed = order.into_iter();
    loop {
        let stats = pool.stats();
        let live: usize = dirs.iter().map(|(_, handles)| handles.len()).sum();
        let used = stats.used_pages * 4096;
        let overhead = used as i64 - stats.stored_bytes as i64;
        println!(
            "{step:<14} {:>8.2}MB {:>8.2}MB {:>8.2}MB {:>8.2}MB {:>6.2}% {:>6.2}MB {:>6.2}%",
            mib(live as u64 * 4096),
            mib(stats.stored_bytes),
            mib(used),
            overhead as f64 / (1 << 20) as f64,
            100.0 * overhead as f64 / stats.stored_bytes as f64,
            mib(stats.real_overhead_bytes),
            100.0 * stats.real_overhead_bytes as f64 / stats.stored_bytes as f64,
        );
        let Some(index) = removed.next() else { break };
        let (name, handles) = &mut dirs[index];
        for handle in handles.drain(..) {
            pool.free(handle).expect("free");
        }
        step = format!("rm {name}");
    }
    let freed = pool.compact().expect("compact");
    let stats = pool.stats();
    println!(
        "{:<14} {freed} pages freed; used {:.2}MB, overhead {:.2}%\n",
        "compact",
        mib(stats.used_pages * 4096),
        100.0 * (stats.used_pages as f64 * 4096.0 - stats.stored_bytes as f64)
            / stats.stored_bytes as f64
    );
}

fn main() {
    let seed = std::env::args()
        .nth(1)
        .and_then(|arg| arg.parse().ok())
        .unwrap_or(42);
    println!("seed {seed}, {OBJECTS} objects of the compressed-size model\n");
    let allocator =
        LocalPageAllocator::boot(&MachineDesc::uniform(2 << 30, 1, 2).expect("machine"))
            .expect("boot");
    let cpu = || CpuPages::new(allocator.cpu(CpuId(0)).expect("cpu"));
    run(
        &mut ZsPool::new(cpu(), ZsConfig::default()).expect("pool"),
        seed,
    );
    run(
        &mut AfPool::new(cpu(), SlabParams::new(2, 4096), AfConfig::default()).expect("pool"),
        seed,
    );
}
