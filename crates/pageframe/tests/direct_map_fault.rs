//! Proves at the OS level that the arena's direct map means what it says: a
//! read through the direct map of an unmapped page kills the process with
//! SIGSEGV, and reads of mapped (or remapped) pages succeed. Twice: on the
//! backing alone, and through the allocator, where a secret written into a
//! `__GFP_UNMAPPED` page cannot be read at its `page_address()` while the
//! same steps on a `GFP_KERNEL` page read the secret back.
//!
//! Each parent test re-runs this test binary on one child test, in its own
//! process marked as a child (`common::run_child`); unmarked, the child
//! tests do nothing, so a plain `cargo test` passes them trivially.

mod common;

use common::{in_child, run_child};
use std::os::unix::process::ExitStatusExt;

use std::ptr::NonNull;

use pageframe::backing::{ArenaBacking, ArenaConfig, Backing, MermapConfig};
use pageframe::{
    AllocOptions, ArenaOptions, CpuId, Gfp, LocalPageAllocator, MachineDesc, NodeId, Order, Pfn,
};

fn arena() -> ArenaBacking {
    ArenaBacking::new(ArenaConfig {
        nr_pages: 16,
        page_size: 4096,
        nr_cpus: 1,
        populate: true,
        node_ranges: Vec::new(),
        mermap: MermapConfig::default(),
    })
    .unwrap()
}

/// Reads `len` bytes at `addr`, a direct-map address of an arena that the
/// caller keeps alive, with `len` inside that page.
fn read_at(addr: NonNull<u8>, len: usize) -> Vec<u8> {
    (0..len)
        // SAFETY: the caller's arena maps `addr..addr + len` for as long as
        // this runs; if the page is unmapped the read faults, which is what
        // the tests look for (a fault, not undefined behaviour, since the
        // range is owned by this process and mprotect'ed, not freed).
        .map(|at| unsafe { addr.as_ptr().add(at).read_volatile() })
        .collect()
}

/// Reads the first byte of `pfn` through the direct map.
fn read_direct(backing: &ArenaBacking, pfn: u64) -> u8 {
    read_at(backing.direct_map_ptr(Pfn(pfn)).unwrap(), 1)[0]
}

const SECRET: &[u8] = b"guest key material";

/// Boots an arena-backed allocator, allocates a page with `gfp`, writes
/// `SECRET` into it through the mermap and reads it back at its
/// direct-map address (`CpuHandle::page_ptr`).
fn read_secret_at_page_address(gfp: Gfp) -> Vec<u8> {
    let desc = MachineDesc::uniform(16 << 20, 1, 1).unwrap();
    let allocator =
        LocalPageAllocator::boot_arena(&desc, AllocOptions::KERNEL, 0, ArenaOptions::default())
            .unwrap();
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let page = cpu.alloc_pages(gfp, Order(0), NodeId(0)).unwrap();
    cpu.write_unmapped(page, 0, SECRET).unwrap();
    read_at(cpu.page_ptr(page).unwrap(), SECRET.len())
}

#[test]
fn child_reads_an_unmapped_page() {
    if !in_child() {
        return;
    }
    let backing = arena();
    backing.unmap_direct(Pfn(3), 1).unwrap();
    read_direct(&backing, 3);
    unreachable!("the read of an unmapped page returned");
}

#[test]
fn child_reads_mapped_and_remapped_pages() {
    if !in_child() {
        return;
    }
    let backing = arena();
    assert_eq!(read_direct(&backing, 2), 0);
    backing.unmap_direct(Pfn(3), 4).unwrap();
    backing.remap_direct(Pfn(3), 4).unwrap();
    assert_eq!(read_direct(&backing, 5), 0);
}

#[test]
fn child_reads_an_unmapped_allocation() {
    if !in_child() {
        return;
    }
    read_secret_at_page_address(Gfp::KERNEL | Gfp::UNMAPPED);
    unreachable!("the read of a __GFP_UNMAPPED page returned");
}

#[test]
fn child_reads_a_kernel_allocation() {
    if !in_child() {
        return;
    }
    assert_eq!(read_secret_at_page_address(Gfp::KERNEL), SECRET);
}

/// Runs child test `name` and asserts that it died of SIGSEGV.
fn assert_child_faults(name: &str) {
    let (status, printed) = run_child(name);
    assert_eq!(
        status.signal(),
        Some(libc::SIGSEGV),
        "child ended with {status}:\n{printed}"
    );
}

/// Runs child test `name` and asserts that it passed.
fn assert_child_passes(name: &str) {
    let (status, printed) = run_child(name);
    assert!(status.success(), "child ended with {status}:\n{printed}");
}

#[test]
fn reading_an_unmapped_page_through_the_direct_map_faults() {
    assert_child_faults("child_reads_an_unmapped_page");
}

#[test]
fn mapped_and_remapped_pages_read_fine() {
    assert_child_passes("child_reads_mapped_and_remapped_pages");
}

#[test]
fn an_unmapped_allocation_faults_at_its_page_address() {
    assert_child_faults("child_reads_an_unmapped_allocation");
}

#[test]
fn a_kernel_allocation_reads_back_at_its_page_address() {
    assert_child_passes("child_reads_a_kernel_allocation");
}
