//! A memory cgroup limit over the reclaim layer (try_charge_memcg(),
//! try_to_free_mem_cgroup_pages(), mem_cgroup_resize_max()): charges past
//! the limit reclaim the cgroup's own lists, never the machine's
//! watermarks; cgroup reclaim is not counted as direct reclaim; a limit
//! below what reclaim can free is EBUSY and keeps the old one; a charge
//! nothing can make room for is ENOMEM; reclaim decides on the cgroup's
//! statistics as last flushed. Invariants (the charged pages within the
//! limit among them) and page conservation after every step.

mod common;

use common::{assert_conserved, boot, one_node, read_whole, sized_file};
use pageframe::reclaim::{FileId, LruList, Mm, MmConfig, MmError, ReclaimEvent};
use pageframe::{CpuId, LocalPageAllocator, NodeId};

const PAGE: u64 = 4096;
const CPU: CpuId = CpuId(0);
/// 16 MiB in pages.
const LIMIT: u64 = 4096;

/// 256 MiB, one node: far more than the limit, so no watermark is met.
fn machine() -> LocalPageAllocator {
    boot(&one_node(256, 2))
}

fn checked(mm: &Mm) {
    mm.check_invariants().unwrap();
    assert_conserved(mm.allocator(), mm.nr_file_pages() + mm.nr_anon_pages());
    assert!(mm.memcg_usage() <= mm.memcg_limit().unwrap_or(u64::MAX));
}

/// Reads the whole file in 1 MiB calls, checking after each: all of it.
fn read_all(mm: &mut Mm, file: FileId) {
    let size = mm.file_size(file).unwrap();
    assert_eq!(read_whole(mm, file, |mm| checked(mm)), size);
}

fn count(mm: &Mm, event: ReclaimEvent) -> u64 {
    mm.counters().get(event)
}

/// A stream twice the limit is read in full within it; the reclaim is the
/// cgroup's (pgscan_file), not the machine's (no allocstall, no
/// pgscan_direct, no kswapd).
#[test]
fn a_stream_past_the_limit_is_read_within_it_by_cgroup_reclaim() {
    let allocator = machine();
    let mut mm = Mm::new(&allocator, MmConfig::default());
    mm.set_memcg_limit(CPU, Some(LIMIT)).unwrap();
    assert_eq!(mm.memcg_limit(), Some(LIMIT));
    let file = sized_file(&mut mm, 2 * LIMIT);
    read_all(&mut mm, file);
    let cached = mm.nr_file_pages();
    assert!(cached <= LIMIT && cached > LIMIT - 128, "{cached} cached");
    assert!(count(&mm, ReclaimEvent::PgscanFile) >= LIMIT);
    assert!(count(&mm, ReclaimEvent::PgstealFile) >= LIMIT);
    for global in [
        ReclaimEvent::PgscanDirect,
        ReclaimEvent::PgstealDirect,
        ReclaimEvent::PgscanKswapd,
        ReclaimEvent::AllocstallNormal,
        ReclaimEvent::AllocstallDma32,
        ReclaimEvent::AllocstallMovable,
    ] {
        assert_eq!(count(&mm, global), 0, "{global:?}");
    }
    // The file's last pages are the ones cached: the stream evicted its
    // own start, oldest first.
    let pages = mm.file_pages(file).unwrap();
    assert_eq!(pages.last().unwrap().0, 2 * LIMIT - 1);
    assert!(pages.first().unwrap().0 >= LIMIT);
}

/// Without a limit nothing changes: the same reads on a machine that never
/// set one give the same pages, and `memcg_limit` says there is none.
#[test]
fn no_limit_is_no_cgroup() {
    let allocator = machine();
    let mut mm = Mm::new(&allocator, MmConfig::default());
    assert_eq!(mm.memcg_limit(), None);
    let file = sized_file(&mut mm, 2 * LIMIT);
    read_all(&mut mm, file);
    assert_eq!(mm.nr_file_pages(), 2 * LIMIT);
    assert_eq!(count(&mm, ReclaimEvent::PgscanFile), 0);
    // Setting "unlimited" keeps every page.
    mm.set_memcg_limit(CPU, None).unwrap();
    assert_eq!(mm.nr_file_pages(), 2 * LIMIT);
    checked(&mm);
}

/// Lowering the limit below the usage reclaims down to it; below what can
/// be reclaimed (anon, with no swap) it is EBUSY, the old limit kept.
#[test]
fn lowering_the_limit_reclaims_or_is_ebusy() {
    let allocator = machine();
    let mut mm = Mm::new(&allocator, MmConfig::default());
    let file = sized_file(&mut mm, LIMIT);
    read_all(&mut mm, file);
    let pid = mm.spawn(CPU).unwrap();
    mm.touch(pid, 0, 1024).unwrap();
    mm.set_memcg_limit(CPU, Some(2048)).unwrap();
    checked(&mm);
    assert!(mm.memcg_usage() <= 2048);
    assert_eq!(mm.nr_anon_pages(), 1024);
    let err = mm.set_memcg_limit(CPU, Some(512)).unwrap_err();
    assert!(
        matches!(err, MmError::LimitBusy { limit: 512, .. }),
        "{err}"
    );
    assert_eq!(err.name(), "EBUSY");
    assert_eq!(mm.memcg_limit(), Some(2048));
    // Reclaim took every file page trying; the anon pages stay.
    assert_eq!(mm.nr_file_pages(), 0);
    assert_eq!(mm.nr_anon_pages(), 1024);
    checked(&mm);
    // A CPU that does not exist is refused before anything is reclaimed.
    assert!(mm.set_memcg_limit(CpuId(9), Some(0)).is_err());
    assert_eq!(mm.memcg_limit(), Some(2048));
}

/// A charge nothing can make room for fails with ENOMEM: anon pages past
/// the limit stop at it, and a read then gets no page (nothing read).
#[test]
fn a_charge_with_nothing_to_reclaim_is_enomem() {
    let allocator = machine();
    let mut mm = Mm::new(&allocator, MmConfig::default());
    mm.set_memcg_limit(CPU, Some(1024)).unwrap();
    let pid = mm.spawn(CPU).unwrap();
    let err = mm.touch(pid, 0, 2048).unwrap_err();
    assert!(matches!(err, MmError::OverLimit { limit: 1024 }), "{err}");
    assert_eq!(err.name(), "ENOMEM");
    assert_eq!(mm.nr_anon_pages(), 1024);
    checked(&mm);
    let file = sized_file(&mut mm, 16);
    let err = mm.read(CPU, file, 0, 16 * PAGE).unwrap_err();
    assert_eq!(err.name(), "ENOMEM");
    assert_eq!(mm.nr_file_pages(), 0);
    checked(&mm);
    // The exit uncharges: the file reads now.
    mm.exit(pid).unwrap();
    assert_eq!(mm.read(CPU, file, 0, 16 * PAGE).unwrap(), 16 * PAGE);
    checked(&mm);
}

/// A file read twice is active; a stream then deactivates it only while
/// reclaim sees the inactive list as low. In a cgroup reclaim sees the
/// lists as last flushed: without a flush during the stream, the "low"
/// of its start holds throughout and the active file is deactivated
/// much further than with the statistics flushed as it goes.
#[test]
fn reclaim_in_a_cgroup_decides_on_the_statistics_as_last_flushed() {
    let run = |flush_each_mib: bool| {
        let allocator = machine();
        let mut mm = Mm::new(&allocator, MmConfig::default());
        mm.set_memcg_limit(CPU, Some(LIMIT)).unwrap();
        let hot = sized_file(&mut mm, LIMIT / 2);
        read_all(&mut mm, hot);
        read_all(&mut mm, hot);
        assert_eq!(mm.lru_pages(NodeId(0), LruList::ActiveFile), LIMIT / 2);
        mm.memcg_flush_stats();
        let stream = sized_file(&mut mm, 2 * LIMIT);
        let size = mm.file_size(stream).unwrap();
        let mut at = 0;
        while at < size {
            mm.read(CPU, stream, at, 1 << 20).unwrap();
            if flush_each_mib {
                mm.memcg_flush_stats();
            }
            at += 1 << 20;
            checked(&mm);
        }
        mm.lru_pages(NodeId(0), LruList::ActiveFile)
    };
    let (stale, fresh) = (run(false), run(true));
    assert!(
        stale + 512 < fresh,
        "active pages left: {stale} (stale statistics), {fresh} (flushed)"
    );
}
