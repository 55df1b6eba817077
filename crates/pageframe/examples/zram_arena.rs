//! A zram device whose compressed pages live in the arena: the zsmalloc pool
//! takes its pages from the allocator (through one CPU's handle), so the
//! compressed data occupies real memfd memory. Write pages, read them back,
//! print `mm_stat`, and see every page return when the device goes away.
//!
//! Run: `cargo run --release -p pageframe --example zram_arena`

use pageframe::page_source::CpuPages;
use pageframe::zram::{Backend, Compressor, Zram, ZramConfig};
use pageframe::{AllocOptions, ArenaOptions, CpuId, LocalPageAllocator, MachineDesc};

const PAGE: usize = 4096;
const SLOTS: usize = 1024;

/// Slot contents: every eighth page zero-filled (zram keeps no data for
/// it), the rest compressible text.
fn page(slot: usize) -> Vec<u8> {
    if slot % 8 == 0 {
        return vec![0; PAGE];
    }
    format!("swap slot {slot}: anonymous memory, mostly text\n")
        .bytes()
        .cycle()
        .take(PAGE)
        .collect()
}

pub fn main() -> Result<(), Box<dyn std::error::Error>> {
    let machine = MachineDesc::uniform(64 << 20, 1, 1)?;
    let allocator =
        LocalPageAllocator::boot_arena(&machine, AllocOptions::KERNEL, 1, ArenaOptions::default())?;
    let free_at_boot = allocator.nr_free_pages();

    let pool =
        Backend::Zsmalloc { chain_size: 8 }.create(CpuPages::new(allocator.cpu(CpuId(0))?))?;
    let config = ZramConfig {
        compressor: Compressor::Lz4,
        ..ZramConfig::new(SLOTS)
    };
    let mut zram = Zram::new(pool, config)?;
    for slot in 0..SLOTS {
        zram.write(slot, &page(slot))?;
    }
    let mut out = vec![0; PAGE];
    for slot in 0..SLOTS {
        zram.read(slot, &mut out)?;
        assert_eq!(out, page(slot));
    }
    zram.check_invariants()?;

    let stat = zram.mm_stat();
    println!("mm_stat: {}", stat.to_string().trim_end());
    let zero_pages = SLOTS.div_ceil(8) as u64;
    assert_eq!(stat.same_pages, zero_pages);
    assert_eq!(stat.orig_data_size, SLOTS as u64 * PAGE as u64);
    assert!(stat.compr_data_size < stat.orig_data_size / 4);
    // The pool's pages are allocator pages: fewer are free.
    assert!(allocator.nr_free_pages() < free_at_boot);

    // Dropping the device destroys the pool and frees its pages.
    drop(zram);
    allocator.drain_pcp(CpuId(0))?;
    assert_eq!(allocator.nr_free_pages(), free_at_boot);
    allocator.check_invariants()?;
    println!("{SLOTS} slots verified; every pool page back in the allocator");
    Ok(())
}
