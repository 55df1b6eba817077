//! Proves at the OS level that the arena's direct map means what it says: a
//! read through the direct map of an unmapped page kills the process with
//! SIGSEGV, and reads of mapped (or remapped) pages succeed.
//!
//! Each parent test re-runs this test binary on one child test, in its own
//! process, with `CHILD_ENV` set; without it the child tests do nothing, so a
//! plain `cargo test` passes them trivially.

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, ExitStatus};

use pageframe::backing::{ArenaBacking, ArenaConfig, Backing, MermapConfig};
use pageframe::Pfn;

const CHILD_ENV: &str = "PAGEFRAME_DIRECT_MAP_FAULT_CHILD";

/// Runs test `name` of this binary alone in a child process; returns how it
/// ended and what it printed.
fn run_child(name: &str) -> (ExitStatus, String) {
    let binary = std::env::current_exe().unwrap();
    let output = Command::new(binary)
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, "1")
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    (output.status, printed)
}

fn in_child() -> bool {
    std::env::var_os(CHILD_ENV).is_some()
}

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

/// Reads the first byte of `pfn` through the direct map.
fn read_direct(backing: &ArenaBacking, pfn: u64) -> u8 {
    let addr = backing.direct_map_ptr(Pfn(pfn)).unwrap();
    // SAFETY: the address is inside the arena's direct map, which lives as
    // long as `backing`; if the page is unmapped the read faults, which is
    // what the tests look for (a fault, not undefined behaviour, since the
    // range is owned by this process and mprotect'ed, not freed).
    unsafe { addr.as_ptr().read_volatile() }
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
fn reading_an_unmapped_page_through_the_direct_map_faults() {
    let (status, printed) = run_child("child_reads_an_unmapped_page");
    assert_eq!(
        status.signal(),
        Some(libc::SIGSEGV),
        "child ended with {status}:\n{printed}"
    );
}

#[test]
fn mapped_and_remapped_pages_read_fine() {
    let (status, printed) = run_child("child_reads_mapped_and_remapped_pages");
    assert!(status.success(), "child ended with {status}:\n{printed}");
}
