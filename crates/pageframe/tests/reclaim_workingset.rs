//! Refault detection (mm/workingset.c): a page cache page reclaim evicted
//! leaves a shadow; read back within the active file list's size of
//! evictions and activations, it goes straight to the active list, and
//! such activations make the next reclaim deactivate the active list even
//! when the inactive list is not low. Streams longer than the working set
//! refault without activating; writes never refault; truncation, deletion
//! and POSIX_FADV_DONTNEED forget the shadows of their range. Invariants
//! and page conservation are checked after every step.

mod common;

use common::{assert_conserved, boot, one_node, read_whole, sized_file};
use pageframe::reclaim::{FileId, LruList, Mm, MmConfig, ReclaimEvent, WorkingsetStats};
use pageframe::{CpuId, LocalPageAllocator, NodeId};

const PAGE: u64 = 4096;
const CPU: CpuId = CpuId(0);

/// 64 MiB, one node: 16384 pages.
fn machine() -> LocalPageAllocator {
    boot(&one_node(64, 2))
}

fn checked(mm: &mut Mm) {
    mm.kswapd_run_all().unwrap();
    mm.check_invariants().unwrap();
    assert_conserved(mm.allocator(), mm.nr_file_pages() + mm.nr_anon_pages());
}

/// Reads the whole file once, in 1 MiB calls, checking after each.
fn read_all(mm: &mut Mm, file: FileId) {
    read_whole(mm, file, checked);
}

fn stats(mm: &Mm) -> WorkingsetStats {
    mm.workingset(NodeId(0))
}

fn vmstat_line(mm: &Mm, name: &str) -> u64 {
    mm.vmstat()
        .lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in vmstat"))
}

fn cached(mm: &Mm, file: FileId) -> u64 {
    mm.file_pages(file).unwrap().len() as u64
}

/// A hot file of `hot` pages read twice (active), a cold one of `cold`
/// pages read once, then a stream of `stream` pages read once, which
/// pushes the cold file out; returns the cold file.
fn hot_cold_stream(mm: &mut Mm, hot: u64, cold: u64, stream: u64) -> FileId {
    let hot = sized_file(mm, hot);
    read_all(mm, hot);
    read_all(mm, hot);
    let cold = sized_file(mm, cold);
    read_all(mm, cold);
    let stream = sized_file(mm, stream);
    read_all(mm, stream);
    cold
}

/// A hot file kept active, a cold file read once and then pushed out by a
/// stream: read back at once, every evicted page of the cold file refaults
/// within the active list's size and is activated; none had been active,
/// so none is restored.
#[test]
fn a_page_read_back_soon_after_eviction_is_activated() {
    let allocator = machine();
    let mut mm = Mm::new(&allocator, MmConfig::default());
    let cold = hot_cold_stream(&mut mm, 8192, 2048, 8192);
    assert!(mm.lru_pages(NodeId(0), LruList::ActiveFile) > 7168);
    let evicted = 2048 - cached(&mm, cold);
    assert!(
        evicted > 1024,
        "the stream evicted only {evicted} cold pages"
    );
    assert_eq!(stats(&mm).refault_file, 0);
    assert!(vmstat_line(&mm, "workingset_nodes") > 0);
    read_all(&mut mm, cold);
    let after = stats(&mm);
    assert_eq!(after.refault_file, evicted, "{after:?}");
    assert_eq!(after.activate_file, evicted, "{after:?}");
    assert_eq!(after.restore_file, 0, "{after:?}");
    assert_eq!(vmstat_line(&mm, "workingset_activate_file"), evicted);
}

/// With no active pages there is no working set to protect: a file twice
/// the memory read twice refaults on the second pass, and nothing is
/// activated (every refault distance is at least 1).
#[test]
fn a_stream_longer_than_the_working_set_refaults_without_activating() {
    let allocator = machine();
    let mut mm = Mm::new(&allocator, MmConfig::default());
    let stream = sized_file(&mut mm, 32768);
    read_all(&mut mm, stream);
    assert_eq!(stats(&mm).refault_file, 0);
    read_all(&mut mm, stream);
    let after = stats(&mm);
    assert!(after.refault_file > 16384, "{after:?}");
    assert_eq!(after.activate_file, 0, "{after:?}");
    assert_eq!(mm.lru_pages(NodeId(0), LruList::ActiveFile), 0);
    assert!(after.nonresident_age >= after.refault_file);
}

/// Refaults that activate pages make the next reclaim age the active list
/// though the inactive list is not low (prepare_scan_control()); without
/// them it is left alone.
#[test]
fn refault_activations_make_reclaim_deactivate() {
    let allocator = machine();
    let mut mm = Mm::new(&allocator, MmConfig::default());
    let cold = hot_cold_stream(&mut mm, 4096, 1024, 11264);
    assert!(cached(&mm, cold) < 1024, "the stream evicted no cold page");
    assert!(!mm.inactive_is_low(NodeId(0), LruList::InactiveFile));
    assert_eq!(mm.counters().get(ReclaimEvent::Pgrefill), 0);
    read_all(&mut mm, cold);
    assert!(stats(&mm).activate_file > 0, "{:?}", stats(&mm));
    assert!(!mm.inactive_is_low(NodeId(0), LruList::InactiveFile));
    assert!(
        mm.counters().get(ReclaimEvent::Pgrefill) > 0,
        "refaults activated {} pages and reclaim scanned no active page",
        stats(&mm).activate_file
    );
}

/// Writes replace shadows without a refault; POSIX_FADV_DONTNEED,
/// truncation and deletion forget the shadows of their range, so that a
/// later read of it is no refault.
#[test]
fn writes_dontneed_truncation_and_deletion_leave_no_refault() {
    let allocator = machine();
    let mut mm = Mm::new(&allocator, MmConfig::default());
    let cold = sized_file(&mut mm, 2048);
    read_all(&mut mm, cold);
    let stream = sized_file(&mut mm, 16384);
    read_all(&mut mm, stream);
    assert_eq!(cached(&mm, cold), 0, "the stream left cold pages");
    mm.delete_file(CPU, stream).unwrap();
    checked(&mut mm);
    // Pages 0..256 are overwritten: shadows replaced, no refault.
    mm.write(CPU, cold, 0, 256 * PAGE).unwrap();
    checked(&mut mm);
    assert_eq!(stats(&mm).refault_file, 0);
    // Pages 256..512 are dropped by fadvise, 1024.. by truncation.
    mm.fadvise_dontneed(CPU, cold, (256 * PAGE) as i64, (256 * PAGE) as i64)
        .unwrap();
    mm.truncate(CPU, cold, (1024 * PAGE) as i64).unwrap();
    checked(&mut mm);
    mm.read(CPU, cold, 256 * PAGE, 256 * PAGE).unwrap();
    checked(&mut mm);
    assert_eq!(stats(&mm).refault_file, 0, "read after DONTNEED refaulted");
    // Pages 512..1024 still have theirs.
    mm.read(CPU, cold, 512 * PAGE, 512 * PAGE).unwrap();
    checked(&mut mm);
    assert_eq!(stats(&mm).refault_file, 512);
    // Growing the file again gives holes, not shadows.
    mm.truncate(CPU, cold, (2048 * PAGE) as i64).unwrap();
    mm.read(CPU, cold, 1024 * PAGE, 1024 * PAGE).unwrap();
    checked(&mut mm);
    assert_eq!(stats(&mm).refault_file, 512);
    mm.delete_file(CPU, cold).unwrap();
    checked(&mut mm);
    assert_eq!(vmstat_line(&mm, "workingset_nodes"), 0);
}

/// The shadow-node shrinker (count_shadow_nodes(), do_shrink_slab()): a
/// stream of 16 times the memory leaves a shadow-only tree node per 64
/// pages it evicts, and reclaim prunes them, oldest first, to about an
/// eighth of the LRU pages (pruning starts once half the excess is a
/// batch of 128, so up to twice that above it). Measured on 6.18 (an `-O
/// encrypt` ext4, cgroup v1, statistics unflushed through the stream, as
/// the shrinker reads them: the limit it sees is 0): 512 MiB read in 1 MiB
/// calls under 4 MiB left 118–165 shadow-only nodes, under 16 MiB 220;
/// the model under the same limits leaves 116 and 196.
#[test]
fn shadow_nodes_are_pruned_to_an_eighth_of_the_lru() {
    let allocator = machine();
    let mut mm = Mm::new(&allocator, MmConfig::default());
    let pages = 16 * (64 << 20) / PAGE;
    let stream = sized_file(&mut mm, pages);
    read_all(&mut mm, stream);
    let lru: u64 = LruList::ALL
        .iter()
        .map(|&list| mm.lru_pages(NodeId(0), list))
        .sum();
    let nodes = vmstat_line(&mm, "workingset_nodes");
    let pruned = vmstat_line(&mm, "workingset_nodereclaim");
    let evicted_blocks = (pages - cached(&mm, stream)) / 64;
    assert!(
        nodes <= lru / 8 + 2 * 128,
        "{nodes} nodes for {lru} LRU pages"
    );
    assert!(nodes >= lru / 8, "{nodes} nodes for {lru} LRU pages");
    assert!(
        pruned > 0 && nodes + pruned >= evicted_blocks,
        "{}",
        mm.vmstat()
    );
    assert_eq!(vmstat_line(&mm, "slabs_scanned"), pruned);
    // The oldest went first: the stream's start has no shadow left.
    mm.read(CPU, stream, 0, PAGE).unwrap();
    assert_eq!(stats(&mm).refault_file, 0);
    checked(&mut mm);
}

/// Under a memory cgroup the shrinker measures the cgroup's LRU pages as
/// last flushed: unflushed since the cgroup began, it sees none, and
/// keeps shadow-only nodes under two batches (what 6.18 shows for a
/// stream in one call, see above); flushed often, it keeps an eighth of
/// them as without a cgroup.
#[test]
fn under_a_cgroup_the_shrinker_reads_the_flushed_lru() {
    for flush in [false, true] {
        let allocator = machine();
        let mut mm = Mm::new(&allocator, MmConfig::default());
        mm.set_memcg_limit(CPU, Some(4096)).unwrap();
        let pages = (512 << 20) / PAGE;
        let stream = sized_file(&mut mm, pages);
        read_whole(&mut mm, stream, |mm| {
            if flush {
                mm.memcg_flush_stats();
            }
        });
        let nodes = vmstat_line(&mm, "workingset_nodes");
        // Unflushed, the limit is 0 and pruning starts at an excess of two
        // batches, taking one: between half a batch and two remain.
        let (least, most) = if flush {
            (4096 / 8, 4096 / 8 + 2 * 128)
        } else {
            (64, 2 * 128)
        };
        assert!(
            (least..=most).contains(&nodes),
            "flush {flush}: {nodes} nodes"
        );
        mm.check_invariants().unwrap();
    }
}
