//! Helpers shared by the integration tests: small machines whose invariant
//! walk is cheap, the four /proc views captured together (to prove that a
//! refused call changed nothing, byte for byte), where a PFN lives, and the
//! conservation check `free + pcp + allocated == managed`.
//!
//! Every test binary compiles this module and uses a different subset of it.
#![allow(dead_code)]

use pageframe::machine::MemRange;
use pageframe::proc;
use pageframe::LockFamily;
use pageframe::ZoneSnapshot;
use pageframe::{
    AllocError, CpuId, Gfp, LocalPageAllocator, MachineDesc, NodeId, Order, Page, PageAllocator,
    Pfn, ZoneType,
};

/// Bytes in a MiB.
pub const MIB: u64 = 1 << 20;

/// A one-node machine of `mem_mib` MiB with `cpus` CPUs.
pub fn one_node(mem_mib: u64, cpus: usize) -> MachineDesc {
    MachineDesc::uniform(mem_mib * MIB, 1, cpus).unwrap()
}

/// Boots a description as a single-threaded allocator and checks it.
pub fn boot(desc: &MachineDesc) -> LocalPageAllocator {
    let allocator = LocalPageAllocator::boot(desc).unwrap();
    allocator.check_invariants().unwrap();
    allocator
}

/// One node whose memory has a hole: `[0, 16M)` and `[32M, 48M)`.
///
/// ```text
///  PFN 0          4096          8192         12288
///  |   memory     |    hole      |   memory    |
/// ```
pub fn holey_machine() -> MachineDesc {
    let mut desc = one_node(32, 2);
    desc.nodes[0].ranges = vec![
        MemRange {
            start: 0,
            size: 16 * MIB,
        },
        MemRange {
            start: 32 * MIB,
            size: 16 * MIB,
        },
    ];
    desc
}

/// The four kernel-format views of an allocator at one moment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcViews {
    pub buddyinfo: String,
    pub pagetypeinfo: String,
    pub zoneinfo: String,
    pub vmstat: String,
    pub sysctl: String,
}

impl ProcViews {
    pub fn capture<L: LockFamily>(allocator: &PageAllocator<L>) -> ProcViews {
        ProcViews {
            buddyinfo: proc::buddyinfo(allocator),
            pagetypeinfo: proc::pagetypeinfo(allocator),
            zoneinfo: proc::zoneinfo(allocator),
            vmstat: proc::vmstat(allocator),
            sysctl: proc::sysctl(allocator),
        }
    }
}

/// Asserts that `refused` leaves every view byte-for-byte unchanged and the
/// invariants intact, and returns what it returned.
pub fn assert_unchanged<L: LockFamily, T>(
    allocator: &PageAllocator<L>,
    refused: impl FnOnce() -> T,
) -> T {
    let before = ProcViews::capture(allocator);
    let result = refused();
    allocator.check_invariants().unwrap();
    let after = ProcViews::capture(allocator);
    assert_eq!(before.buddyinfo, after.buddyinfo, "buddyinfo changed");
    assert_eq!(
        before.pagetypeinfo, after.pagetypeinfo,
        "pagetypeinfo changed"
    );
    assert_eq!(before.zoneinfo, after.zoneinfo, "zoneinfo changed");
    assert_eq!(before.vmstat, after.vmstat, "vmstat changed");
    assert_eq!(before.sysctl, after.sysctl, "a sysctl changed");
    result
}

/// [`assert_unchanged`] for a refused call that takes the allocator
/// mutably (memory hotplug): the views and the layout stay as they were.
pub fn assert_unchanged_mut<L: LockFamily, T>(
    allocator: &mut PageAllocator<L>,
    refused: impl FnOnce(&mut PageAllocator<L>) -> T,
) -> T {
    let (before, layout) = (ProcViews::capture(allocator), allocator.layout().clone());
    let result = refused(allocator);
    allocator.check_invariants().unwrap();
    assert_eq!(before, ProcViews::capture(allocator), "a view changed");
    assert_eq!(&layout, allocator.layout(), "the layout changed");
    result
}

/// A counter of /proc/vmstat by name.
pub fn vmstat_value<L: LockFamily>(allocator: &PageAllocator<L>, name: &str) -> u64 {
    proc::vmstat_counters(allocator)
        .into_iter()
        .find(|(counter, _)| counter == name)
        .unwrap_or_else(|| panic!("no vmstat counter {name}"))
        .1
}

/// The index (in `zone_snapshots()` order) of the zone holding `pfn`.
pub fn zone_index_of<L: LockFamily>(allocator: &PageAllocator<L>, pfn: Pfn) -> usize {
    allocator
        .layout()
        .zones()
        .position(|zone| zone.present.iter().any(|range| range.contains(pfn)))
        .unwrap_or_else(|| panic!("PFN {pfn} is in no zone"))
}

/// The node and zone type holding `pfn`.
pub fn placement_of<L: LockFamily>(allocator: &PageAllocator<L>, pfn: Pfn) -> (NodeId, ZoneType) {
    let zone = allocator
        .layout()
        .zones()
        .nth(zone_index_of(allocator, pfn))
        .unwrap();
    (zone.node, zone.zone_type)
}

/// Asserts that a block of `order` at `page` is aligned and lies wholly in
/// one present range.
pub fn assert_block_in_memory<L: LockFamily>(
    allocator: &PageAllocator<L>,
    page: Page,
    order: Order,
) {
    let pfn = page.pfn();
    assert!(
        pfn.is_aligned(order),
        "PFN {pfn} not aligned to order {order}"
    );
    let last = pfn.offset(order.nr_pages() - 1);
    assert!(
        allocator
            .layout()
            .zones()
            .flat_map(|zone| zone.present.iter())
            .any(|range| range.contains(pfn) && range.contains(last)),
        "order-{order} block at {pfn} is not inside one memory range"
    );
}

/// Checks the invariants and that exactly `allocated` pages are held, and
/// that every zone's pages add up: `free + pcp + allocated == managed`.
pub fn assert_conserved<L: LockFamily>(allocator: &PageAllocator<L>, allocated: u64) {
    allocator.check_invariants().unwrap();
    assert_eq!(allocator.nr_allocated_pages(), allocated);
    let zones = allocator.zone_snapshots();
    let free: u64 = zones.iter().map(|zone| zone.free).sum();
    let pcp: u64 = zones.iter().map(ZoneSnapshot::pcp_pages).sum();
    let managed: u64 = zones.iter().map(|zone| zone.managed).sum();
    assert_eq!(free, allocator.nr_free_pages());
    assert_eq!(free + pcp + allocated, managed);
}

/// Pages of a list of held blocks.
pub fn pages_held(held: &[(Page, Order)]) -> u64 {
    held.iter().map(|(_, order)| order.nr_pages()).sum()
}

/// The snapshot of the first populated zone of type `zone_type` on `node`.
pub fn zone_of_type<L: LockFamily>(
    allocator: &PageAllocator<L>,
    node: NodeId,
    zone_type: ZoneType,
) -> ZoneSnapshot {
    allocator
        .zone_snapshots()
        .into_iter()
        .find(|zone| zone.node == node && zone.zone_type == zone_type && zone.is_populated())
        .unwrap_or_else(|| panic!("node {node} has no populated {zone_type:?} zone"))
}

/// Allocates blocks of `order` with `gfp` on `cpu`, preferring `node`,
/// until the allocator says `NoMemory`; checks the invariants after every
/// call and that each block lies in memory.
pub fn allocate_until_oom(
    allocator: &LocalPageAllocator,
    cpu: CpuId,
    gfp: Gfp,
    order: Order,
    node: NodeId,
) -> Vec<Page> {
    let handle = allocator.cpu(cpu).unwrap();
    let mut pages = Vec::new();
    loop {
        let result = handle.alloc_pages(gfp, order, node);
        allocator.check_invariants().unwrap();
        match result {
            Ok(page) => {
                assert_block_in_memory(allocator, page, order);
                pages.push(page);
            }
            Err(err) => {
                assert_eq!(err, AllocError::NoMemory { order });
                return pages;
            }
        }
    }
}

/// The environment variable that marks a test process as a child run by
/// [`run_child`].
const CHILD_ENV: &str = "PAGEFRAME_TEST_CHILD";

/// Runs test `name` of the running test binary alone in a child process
/// (marked by [`in_child`]); returns how it ended and what it printed. For
/// tests whose expected outcome is a fatal signal such as SIGSEGV.
pub fn run_child(name: &str) -> (std::process::ExitStatus, String) {
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, "1")
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    (output.status, printed)
}

/// Whether this process is a child started by [`run_child`]; child tests
/// do nothing otherwise, so a plain `cargo test` passes them trivially.
pub fn in_child() -> bool {
    std::env::var_os(CHILD_ENV).is_some()
}

/// A file of `pages` 4 KiB pages, all a hole (ftruncate(2) of a new file),
/// through the reclaim layer.
pub fn sized_file(mm: &mut pageframe::reclaim::Mm, pages: u64) -> pageframe::reclaim::FileId {
    let file = mm.create_file();
    mm.truncate(CpuId(0), file, (pages * 4096) as i64).unwrap();
    file
}

/// Reads the whole of `file` on CPU 0 in 1 MiB calls, each reading
/// something, running `check` after each; returns the bytes read.
pub fn read_whole(
    mm: &mut pageframe::reclaim::Mm,
    file: pageframe::reclaim::FileId,
    mut check: impl FnMut(&mut pageframe::reclaim::Mm),
) -> u64 {
    let size = mm.file_size(file).unwrap();
    let (mut at, mut read) = (0, 0);
    while at < size {
        let got = mm.read(CpuId(0), file, at, MIB).unwrap();
        assert!(got > 0, "nothing read at {at} of {size}");
        read += got;
        at += MIB;
        check(mm);
    }
    read
}
