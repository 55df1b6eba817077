//! A secret-memory pool (memfd_secret()): pages taken out of the direct map,
//! reachable only through a CPU's mermap window. A direct-map access is a
//! typed error, and a freed region is cleared before anyone else gets it.
//!
//! Run: `cargo run --release -p pageframe --example secret_pool`

use pageframe::policies::SecretRegion;
use pageframe::{
    AccessError, AllocOptions, ArenaOptions, CpuId, Errno, Gfp, LocalPageAllocator, MachineDesc,
    NodeId, Order,
};

pub fn main() -> Result<(), Box<dyn std::error::Error>> {
    let machine = MachineDesc::uniform(64 << 20, 1, 2)?;
    let allocator =
        LocalPageAllocator::boot_arena(&machine, AllocOptions::KERNEL, 7, ArenaOptions::default())?;
    let cpu = allocator.cpu(CpuId(0))?;

    // Four zeroed pages from unmapped pageblocks; the allocator converts a
    // whole pageblock out of the direct map to serve them.
    let region = SecretRegion::alloc(&cpu, 4, NodeId(0))?;
    assert!(allocator.nr_unmapped_pageblocks() >= 1);
    let secret = b"-----BEGIN PRIVATE KEY----- not really";
    // The write straddles the first two pages; it goes through the mermap.
    let offset = 4096 - 10;
    region.write(&cpu, offset, secret)?;
    let mut back = vec![0u8; secret.len()];
    region.read(&cpu, offset, &mut back)?;
    assert_eq!(back, secret);

    // Through the direct map the page is not there: EFAULT, nothing copied.
    let first = region.pages()[0];
    let mut peek = [0xaau8; 16];
    let err = cpu.read_page(first, 0, &mut peek).unwrap_err();
    assert_eq!(err, AccessError::NotMapped(first.pfn()));
    assert_eq!(err.errno(), Errno::EFAULT);
    assert_eq!(peek, [0xaa; 16]);
    println!("direct-map read of PFN {}: {err}", first.pfn());

    // Freeing clears every page. Take the pages back without __GFP_ZERO
    // (the per-CPU list returns the last page freed first) and look.
    let freed = region.pages().to_vec();
    region.free(&cpu)?;
    let again = cpu.alloc_pages(Gfp::KERNEL | Gfp::UNMAPPED, Order(0), NodeId(0))?;
    assert!(
        freed.contains(&again),
        "the per-CPU list hands back a freed page"
    );
    let mut page = vec![0xffu8; 4096];
    cpu.read_unmapped(again, 0, &mut page)?;
    assert!(page.iter().all(|&byte| byte == 0));
    cpu.free_pages(again, Order(0))?;

    // With the pages home, the unmapped pageblocks can return to the
    // direct map.
    cpu.drain_pcp();
    let released = allocator.release_unmapped_pageblocks();
    assert_eq!(allocator.nr_unmapped_pageblocks(), 0);
    allocator.check_invariants()?;
    println!("secret pages cleared on free; {released} pageblock(s) back in the direct map");
    Ok(())
}
