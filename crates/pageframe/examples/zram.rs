//! A zram device over zsmalloc and over afmalloc: write text-like pages, a
//! zero page and an incompressible page, read them back, discard some,
//! compact, and print `mm_stat` and `io_stat` as /sys/block/zram0 shows them.
//!
//! Run: `cargo run --release -p pageframe --example zram`

use pageframe::page_source::CpuPages;
use pageframe::zram::{Backend, Compressor, Zram, ZramConfig};
use pageframe::{CpuId, LocalPageAllocator, MachineDesc};

const PAGE: usize = 4096;

fn page(slot: usize) -> Vec<u8> {
    match slot % 16 {
        0 => vec![0; PAGE],
        15 => {
            let mut state = slot as u64 | 1;
            (0..PAGE)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state as u8
                })
                .collect()
        }
        _ => format!("slot {slot}: the quick brown fox jumps over the lazy dog\n")
            .bytes()
            .cycle()
            .take(PAGE)
            .collect(),
    }
}

pub fn main() -> Result<(), Box<dyn std::error::Error>> {
    let allocator = LocalPageAllocator::boot(&MachineDesc::uniform(256 << 20, 1, 1)?)?;
    for backend in [Backend::Zsmalloc { chain_size: 8 }, Backend::Afmalloc] {
        let pool = backend.create(CpuPages::new(allocator.cpu(CpuId(0))?))?;
        let config = ZramConfig {
            compressor: Compressor::Zstd { level: 3 },
            ..ZramConfig::new(4096)
        };
        let mut zram = Zram::new(pool, config)?;
        for slot in 0..4096 {
            zram.write(slot, &page(slot))?;
        }
        let mut out = vec![0; PAGE];
        for slot in (0..4096).step_by(97) {
            zram.read(slot, &mut out)?;
            assert_eq!(out, page(slot));
        }
        for slot in (0..4096).filter(|slot| slot % 3 != 0) {
            zram.discard(slot)?;
        }
        let freed = zram.compact()?;
        zram.check_invariants()?;
        println!("{} ({freed} pages compacted)", backend.label());
        println!("mm_stat: {}", zram.mm_stat().to_string().trim_end());
        println!("io_stat: {}", zram.io_stat().trim_end());
    }
    Ok(())
}
