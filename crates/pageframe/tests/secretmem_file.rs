//! The `memfd_secret()`-like file at the OS level: its owner's mapping
//! reads and writes the secret, while the same pages read through the
//! shared direct map kill the process with SIGSEGV, and a forked process
//! finds nothing at the owner's addresses; closing returns the pages to the
//! unmapped free lists.
//!
//! The fault tests re-run this binary on one child test, in its own
//! process marked as a child (`common::run_child`); unmarked, the child
//! tests do nothing.

mod common;

use common::{in_child, run_child};
use std::os::unix::process::ExitStatusExt;

use pageframe::policies::{SecretMemError, SecretMemFile};
use pageframe::{
    AllocOptions, ArenaOptions, CpuId, Errno, LocalPageAllocator, MachineDesc, NodeId,
    PageAllocator,
};

const SECRET: &[u8] = b"-----BEGIN PRIVATE KEY----- owner only";

fn arena() -> PageAllocator<pageframe::Local> {
    let machine = MachineDesc::uniform(64 << 20, 1, 2).unwrap();
    LocalPageAllocator::boot_arena(&machine, AllocOptions::KERNEL, 7, ArenaOptions::default())
        .unwrap()
}

/// Reads one byte at `addr` with a volatile load (faults if unmapped).
fn peek(addr: *const u8) -> u8 {
    // SAFETY: the caller keeps the mapping that holds `addr` alive; if the
    // page is not mapped here the load faults, which is what the tests
    // look for.
    unsafe { addr.read_volatile() }
}

#[test]
fn child_reads_the_owner_mapping_then_the_direct_map() {
    if !in_child() {
        return;
    }
    let allocator = arena();
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let mut file = SecretMemFile::create();
    file.set_size(&cpu, 3 * 4096 - 100, NodeId(0)).unwrap();
    let view = file.map(&cpu).unwrap();
    assert_eq!(view.len(), 3 * 4096);
    file.write(4096 - 8, SECRET).unwrap();
    let mut back = vec![0u8; SECRET.len()];
    file.read(4096 - 8, &mut back).unwrap();
    assert_eq!(back, SECRET);
    let page = file.region().unwrap().pages()[1];
    let direct = allocator.backing().direct_map_ptr(page.pfn()).unwrap();
    eprintln!(
        "owner mapping works; reading PFN {} through the direct map",
        page.pfn()
    );
    let byte = peek(direct.as_ptr());
    unreachable!("the direct map read {byte:#x}");
}

#[test]
fn child_forks_a_process_that_reads_the_owner_mapping() {
    if !in_child() {
        return;
    }
    let allocator = arena();
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let mut file = SecretMemFile::create();
    file.set_size(&cpu, 4096, NodeId(0)).unwrap();
    let addr = file.map(&cpu).unwrap().as_ptr().as_ptr();
    file.write(0, SECRET).unwrap();
    assert_eq!(peek(addr), SECRET[0], "the owner reads its mapping");
    // SAFETY: the forked child only loads one byte and exits; it takes no
    // lock and allocates nothing.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        peek(addr);
        // SAFETY: ends the forked child at once.
        unsafe { libc::_exit(0) };
    }
    let mut status = 0;
    // SAFETY: waits for the child just forked; `status` is writable.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(
        libc::WIFSIGNALED(status),
        "the forked process read the secret"
    );
    assert_eq!(libc::WTERMSIG(status), libc::SIGSEGV);
}

#[test]
fn the_direct_map_faults_while_the_owner_mapping_works() {
    let (status, printed) = run_child("child_reads_the_owner_mapping_then_the_direct_map");
    assert_eq!(
        status.signal(),
        Some(libc::SIGSEGV),
        "child ended with {status}:\n{printed}"
    );
    assert!(printed.contains("owner mapping works"), "{printed}");
}

#[test]
fn a_forked_process_does_not_inherit_the_owner_mapping() {
    let (status, printed) = run_child("child_forks_a_process_that_reads_the_owner_mapping");
    assert!(status.success(), "child ended with {status}:\n{printed}");
}

#[test]
fn close_returns_the_pages_to_the_unmapped_free_lists() {
    let allocator = arena();
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let mut file = SecretMemFile::create();
    assert_eq!(file.map(&cpu).unwrap_err(), SecretMemError::NotMapped);
    assert_eq!(file.write(0, b"x").unwrap_err().errno(), Errno::EFAULT);
    assert_eq!(
        file.set_size(&cpu, 0, NodeId(0)),
        Err(SecretMemError::BadSize)
    );
    file.set_size(&cpu, 2 * 4096, NodeId(0)).unwrap();
    assert_eq!(file.size(), 2 * 4096);
    assert_eq!(
        file.set_size(&cpu, 4096, NodeId(0)).unwrap_err().errno(),
        Errno::EINVAL,
        "sized once"
    );
    assert_eq!(file.size(), 2 * 4096, "a refused resize changes nothing");
    file.map(&cpu).unwrap();
    assert!(file.write(2 * 4096 - 1, b"xy").is_err(), "past the end");
    file.write(0, SECRET).unwrap();
    let pages: Vec<_> = file.region().unwrap().pages().to_vec();
    assert!(pages
        .iter()
        .all(|page| !allocator.backing().is_direct_mapped(page.pfn())));
    allocator.check_invariants().unwrap();
    let unmapped_blocks = allocator.nr_unmapped_pageblocks();
    assert!(unmapped_blocks >= 1);
    file.close(&cpu).unwrap();
    // Freed, cleared and still unmapped: the pageblock stays in the
    // unmapped pool until it is given back.
    assert!(pages
        .iter()
        .all(|page| !allocator.backing().is_direct_mapped(page.pfn())));
    let mut out = vec![0xffu8; 4096];
    // A freed page is no longer the handle's to read: read the backing.
    allocator
        .backing()
        .read_unmapped(CpuId(0), pages[0].pfn(), 0, &mut out)
        .unwrap();
    assert!(out.iter().all(|&byte| byte == 0), "cleared on close");
    assert_eq!(allocator.nr_unmapped_pageblocks(), unmapped_blocks);
    cpu.drain_pcp();
    assert_eq!(allocator.release_unmapped_pageblocks(), unmapped_blocks);
    allocator.check_invariants().unwrap();
}

#[test]
fn a_simulated_backing_has_no_owner_mapping() {
    let allocator =
        LocalPageAllocator::boot(&MachineDesc::uniform(64 << 20, 1, 1).unwrap()).unwrap();
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let mut file = SecretMemFile::create();
    file.set_size(&cpu, 4096, NodeId(0)).unwrap();
    let err = file.map(&cpu).unwrap_err();
    assert!(matches!(err, SecretMemError::Backing(_)), "{err:?}");
    file.close(&cpu).unwrap();
    allocator.check_invariants().unwrap();
}
