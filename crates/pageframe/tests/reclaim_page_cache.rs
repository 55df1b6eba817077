//! The reclaim layer's page cache and processes: reads allocate in offset
//! order and age pages as folio_mark_accessed() does, writes dirty and
//! fsync cleans, truncation and deletion free pages, exits free anon pages
//! in address order, and bad calls return Linux's errno with nothing
//! changed. Pages are conserved after every step.

mod common;

use common::{assert_conserved, boot, one_node, MIB};
use pageframe::reclaim::{FileId, LruList, Mm, MmConfig, MmError, Owner, Pid, ReclaimEvent};
use pageframe::{CpuId, LocalPageAllocator, NodeId};

const PAGE: u64 = 4096;
const CPU: CpuId = CpuId(0);

fn conserved(mm: &Mm) {
    mm.check_invariants().unwrap();
    assert_conserved(mm.allocator(), mm.nr_file_pages() + mm.nr_anon_pages());
}

fn lru(mm: &Mm, list: LruList) -> u64 {
    mm.lru_pages(NodeId(0), list)
}

/// A file's cached pages as (offset, PFN).
type CachedPages = Result<Vec<(u64, u64)>, MmError>;

/// Everything a refused call must leave unchanged.
fn state(mm: &Mm, file: FileId) -> (CachedPages, u64, u64, String) {
    (
        mm.file_pages(file),
        mm.allocator().nr_free_pages(),
        mm.nr_dirty(),
        mm.vmstat(),
    )
}

fn machine() -> LocalPageAllocator {
    boot(&one_node(64, 2))
}

#[test]
fn sequential_read_allocates_in_offset_order_and_second_read_activates() {
    let allocator = machine();
    let mut mm = Mm::new(&allocator, MmConfig::default());
    let file = mm.create_file();
    mm.truncate(CPU, file, (100 * PAGE) as i64).unwrap();
    assert_eq!(mm.read(CPU, file, 0, 100 * PAGE).unwrap(), 100 * PAGE);
    let pages = mm.file_pages(file).unwrap();
    assert_eq!(pages.len(), 100);
    for (at, &(index, pfn)) in pages.iter().enumerate() {
        assert_eq!(index, at as u64);
        assert_eq!(mm.owner(pfn), Owner::File { file, index });
    }
    // A fresh machine hands out ascending PFNs for ascending offsets.
    assert!(pages.windows(2).all(|w| w[1].1 == w[0].1 + 1));
    assert_eq!(lru(&mm, LruList::InactiveFile), 100);
    assert_eq!(mm.counters().get(ReclaimEvent::Pgactivate), 0);
    conserved(&mm);
    // Read again: referenced inactive pages are activated.
    assert_eq!(mm.read(CPU, file, 0, 10 * PAGE).unwrap(), 10 * PAGE);
    assert_eq!(lru(&mm, LruList::ActiveFile), 10);
    assert_eq!(lru(&mm, LruList::InactiveFile), 90);
    assert_eq!(mm.counters().get(ReclaimEvent::Pgactivate), 10);
    assert_eq!(mm.meminfo().cached, 100);
    assert_eq!(mm.meminfo().active_file, 10);
    // Reads stop at the end of the file.
    assert_eq!(
        mm.read(CPU, file, 99 * PAGE + 10, 5 * PAGE).unwrap(),
        PAGE - 10
    );
    assert_eq!(mm.read(CPU, file, 200 * PAGE, PAGE).unwrap(), 0);
    assert_eq!(mm.file_pages(file).unwrap().len(), 100);
    // No memory pressure: no reclaim, kswapd asleep.
    assert_eq!(mm.counters().get(ReclaimEvent::PgscanKswapd), 0);
    assert_eq!(mm.counters().get(ReclaimEvent::PgscanDirect), 0);
    assert_eq!(mm.counters().get(ReclaimEvent::AllocstallMovable), 0);
    conserved(&mm);
}

#[test]
fn write_dirties_fsync_cleans_and_sizes_grow() {
    let allocator = machine();
    let mut mm = Mm::new(&allocator, MmConfig::default());
    let file = mm.create_file();
    assert_eq!(mm.write(CPU, file, PAGE / 2, 3 * PAGE).unwrap(), 3 * PAGE);
    assert_eq!(mm.file_size(file).unwrap(), 3 * PAGE + PAGE / 2);
    assert_eq!(mm.file_pages(file).unwrap().len(), 4);
    assert_eq!(mm.nr_dirty(), 4);
    assert_eq!(mm.meminfo().dirty, 4);
    assert_eq!(mm.counters().get(ReclaimEvent::NrDirtied), 4);
    conserved(&mm);
    assert_eq!(mm.fsync(file).unwrap(), 4);
    assert_eq!(mm.nr_dirty(), 0);
    assert_eq!(mm.counters().get(ReclaimEvent::NrWritten), 4);
    assert_eq!(mm.counters().get(ReclaimEvent::Pgpgout), 16);
    assert_eq!(mm.fsync(file).unwrap(), 0);
    conserved(&mm);
}

#[test]
fn truncate_frees_whole_pages_past_the_size_and_keeps_the_straddling_one() {
    let allocator = machine();
    let mut mm = Mm::new(&allocator, MmConfig::default());
    let file = mm.create_file();
    mm.write(CPU, file, 0, 10 * PAGE).unwrap();
    let free = allocator.nr_free_pages();
    mm.truncate(CPU, file, (3 * PAGE + 1) as i64).unwrap();
    let offsets: Vec<u64> = mm.file_pages(file).unwrap().iter().map(|p| p.0).collect();
    assert_eq!(offsets, vec![0, 1, 2, 3]);
    assert_eq!(mm.file_size(file).unwrap(), 3 * PAGE + 1);
    assert_eq!(mm.nr_dirty(), 4);
    // Freed pages sit on the per-CPU list or the buddy lists.
    assert!(allocator.nr_free_pages() >= free);
    conserved(&mm);
    // Growing only sets the size.
    mm.truncate(CPU, file, (50 * PAGE) as i64).unwrap();
    assert_eq!(mm.file_size(file).unwrap(), 50 * PAGE);
    assert_eq!(mm.file_pages(file).unwrap().len(), 4);
    mm.truncate(CPU, file, 0).unwrap();
    assert!(mm.file_pages(file).unwrap().is_empty());
    assert_eq!(mm.nr_dirty(), 0);
    conserved(&mm);
}

#[test]
fn bad_truncations_are_einval_and_efbig_and_change_nothing() {
    let allocator = machine();
    let config = MmConfig {
        max_file_bytes: 64 * PAGE,
        ..MmConfig::default()
    };
    let mut mm = Mm::new(&allocator, config);
    let file = mm.create_file();
    mm.write(CPU, file, 0, 8 * PAGE).unwrap();
    let before = state(&mm, file);
    let err = mm.truncate(CPU, file, -1).unwrap_err();
    assert_eq!((err.code(), err.name()), (22, "EINVAL"));
    let err = mm.truncate(CPU, file, (64 * PAGE + 1) as i64).unwrap_err();
    assert_eq!((err.code(), err.name()), (27, "EFBIG"));
    // A write starting at the limit is EFBIG; one crossing it is cut short.
    let err = mm.write(CPU, file, 64 * PAGE, 1).unwrap_err();
    assert_eq!(err.name(), "EFBIG");
    let err = mm.read(CPU, file, u64::MAX - 1, 10).unwrap_err();
    assert_eq!(err.name(), "EINVAL");
    assert_eq!(state(&mm, file), before);
    mm.truncate(CPU, file, (64 * PAGE) as i64).unwrap();
    assert_eq!(mm.write(CPU, file, 63 * PAGE, 2 * PAGE).unwrap(), PAGE);
    assert_eq!(mm.file_size(file).unwrap(), 64 * PAGE);
    conserved(&mm);
}

#[test]
fn deleted_files_answer_ebadf_and_enoent() {
    let allocator = machine();
    let mut mm = Mm::new(&allocator, MmConfig::default());
    let file = mm.create_file();
    let other = mm.create_file();
    mm.write(CPU, file, 0, 20 * PAGE).unwrap();
    mm.write(CPU, other, 0, 5 * PAGE).unwrap();
    mm.delete_file(CPU, file).unwrap();
    assert_eq!(mm.nr_file_pages(), 5);
    assert_eq!(mm.nr_dirty(), 5);
    conserved(&mm);
    let before = state(&mm, other);
    for err in [
        mm.read(CPU, file, 0, PAGE).unwrap_err(),
        mm.write(CPU, file, 0, PAGE).unwrap_err(),
        mm.truncate(CPU, file, 0).unwrap_err(),
        mm.fsync(file).unwrap_err(),
        mm.file_size(file).unwrap_err(),
    ] {
        assert_eq!((err.code(), err.name()), (9, "EBADF"), "{err}");
    }
    let err = mm.delete_file(CPU, file).unwrap_err();
    assert_eq!((err.code(), err.name()), (2, "ENOENT"));
    let err = mm.delete_file(CPU, FileId(99)).unwrap_err();
    assert_eq!(err.name(), "ENOENT");
    assert_eq!(mm.read(CPU, FileId(99), 0, 1).unwrap_err().name(), "EBADF");
    assert_eq!(state(&mm, other), before);
    conserved(&mm);
}

/// pread(2) and pwrite(2) check as Linux does, in its order: a negative
/// position (EINVAL) before the descriptor (EBADF), the descriptor before
/// the buffer (EFAULT for a length no user buffer can have), the buffer
/// before the range (EINVAL for an end past the largest offset). Measured
/// on 6.18: pread(closed fd, pos -1) is EINVAL, pread(closed fd, 100 bytes
/// at i64::MAX - 10) EBADF, a count of 2^63 EFAULT.
#[test]
fn reads_and_writes_check_position_descriptor_buffer_then_range() {
    let allocator = machine();
    let mut mm = Mm::new(&allocator, MmConfig::default());
    let (live, gone) = (mm.create_file(), mm.create_file());
    mm.write(CPU, live, 0, 3 * PAGE).unwrap();
    mm.delete_file(CPU, gone).unwrap();
    let before = state(&mm, live);
    let near_end = i64::MAX as u64 - 10;
    for (file, pos, len, expected) in [
        (gone, u64::MAX, 1, "EINVAL"),
        (gone, 1 << 63, 0, "EINVAL"),
        (gone, 0, 1 << 63, "EBADF"),
        (gone, near_end, 100, "EBADF"),
        (live, 0, 1 << 63, "EFAULT"),
        (live, 0, i64::MAX as u64, "EFAULT"),
        (live, 0, u64::MAX, "EFAULT"),
        (live, near_end, 100, "EINVAL"),
        (live, u64::MAX, 0, "EINVAL"),
    ] {
        let read = mm.read(CPU, file, pos, len).unwrap_err();
        let write = mm.write(CPU, file, pos, len).unwrap_err();
        assert_eq!(
            (read.name(), write.name()),
            (expected, expected),
            "{pos} {len}"
        );
    }
    // The range's EINVAL names the length, not the position.
    let err = mm.read(CPU, live, near_end, 100).unwrap_err();
    assert_eq!(err, MmError::InvalidLength(100));
    // A length a buffer can have reads up to the end of the file.
    assert_eq!(mm.read(CPU, live, 0, 1 << 40).unwrap(), 3 * PAGE);
    assert_eq!(state(&mm, live).0, before.0);
    conserved(&mm);
}

/// The layer frees only the blocks it handed out, at their order: a page
/// allocated around it is refused (and stays allocated), so a count of
/// pages could not let it free one for another.
#[test]
fn free_pages_takes_back_only_what_it_handed_out() {
    let allocator = machine();
    let mut mm = Mm::new(&allocator, MmConfig::default());
    let gfp = pageframe::Gfp::KERNEL;
    let mine = mm
        .alloc_pages(CPU, gfp, pageframe::Order(1), NodeId(0))
        .unwrap();
    let foreign = allocator
        .cpu(CPU)
        .unwrap()
        .alloc_pages(gfp, pageframe::Order(0), NodeId(0))
        .unwrap();
    let err = mm
        .free_pages(CPU, foreign, pageframe::Order(0))
        .unwrap_err();
    assert_eq!(err.name(), "EINVAL", "{err}");
    let err = mm.free_pages(CPU, mine, pageframe::Order(0)).unwrap_err();
    assert_eq!(err.name(), "EINVAL", "{err}");
    mm.check_invariants().unwrap();
    mm.free_pages(CPU, mine, pageframe::Order(1)).unwrap();
    allocator
        .cpu(CPU)
        .unwrap()
        .free_pages(foreign, pageframe::Order(0))
        .unwrap();
    conserved(&mm);
}

/// A memory cgroup limit of `PAGE_COUNTER_MAX` pages or more is no limit
/// (page_counter_memparse() clamps it; 6.18 reads such a limit back as
/// 9223372036854771712, the "unlimited" value).
#[test]
fn a_limit_past_the_page_counter_is_no_limit() {
    let allocator = machine();
    let mut mm = Mm::new(&allocator, MmConfig::default());
    let page_counter_max = i64::MAX as u64 / PAGE;
    mm.set_memcg_limit(CPU, Some(page_counter_max - 1)).unwrap();
    assert_eq!(mm.memcg_limit(), Some(page_counter_max - 1));
    for pages in [page_counter_max, u64::MAX - 1, u64::MAX] {
        mm.set_memcg_limit(CPU, Some(pages)).unwrap();
        assert_eq!(mm.memcg_limit(), None, "{pages}");
    }
}

#[test]
fn exit_frees_anon_pages_and_gone_processes_are_esrch() {
    let allocator = machine();
    let mut mm = Mm::new(&allocator, MmConfig::default());
    let pid = mm.spawn(CPU).unwrap();
    mm.touch(pid, 10, 30).unwrap();
    mm.touch(pid, 0, 5).unwrap();
    let pages = mm.process_pages(pid).unwrap();
    assert_eq!(pages.len(), 35);
    assert!(pages
        .iter()
        .all(|&(vpn, pfn)| mm.owner(pfn) == Owner::Anon { pid, vpn }));
    assert_eq!(lru(&mm, LruList::InactiveAnon), 35);
    assert_eq!(mm.meminfo().anon_pages, 35);
    conserved(&mm);
    // Touching again allocates nothing.
    mm.touch(pid, 0, 40).unwrap();
    assert_eq!(mm.nr_anon_pages(), 40);
    let free = allocator.nr_free_pages();
    let err = mm.touch(pid, u64::MAX - 1, 4).unwrap_err();
    assert_eq!(err.name(), "EINVAL");
    assert_eq!(mm.nr_anon_pages(), 40);
    assert_eq!(allocator.nr_free_pages(), free);
    assert_eq!(mm.exit(pid).unwrap(), 40);
    assert_eq!(mm.nr_anon_pages(), 0);
    conserved(&mm);
    for err in [
        mm.exit(pid).unwrap_err(),
        mm.touch(pid, 0, 1).unwrap_err(),
        mm.process_pages(Pid(7)).unwrap_err(),
    ] {
        assert_eq!((err.code(), err.name()), (3, "ESRCH"));
    }
    let err = mm.spawn(CpuId(9)).unwrap_err();
    assert_eq!(err.name(), "EINVAL");
}

#[test]
fn meminfo_has_the_kernel_layout() {
    let allocator = machine();
    let mut mm = Mm::new(&allocator, MmConfig::default());
    let file = mm.create_file();
    mm.write(CPU, file, 0, 3 * PAGE).unwrap();
    let info = mm.meminfo();
    let zones = allocator.zone_snapshots();
    assert_eq!(
        info.total,
        zones.iter().map(|zone| zone.managed).sum::<u64>()
    );
    assert!(info.total * PAGE <= 64 * MIB && info.total * PAGE > 60 * MIB);
    assert_eq!(info.free, allocator.nr_free_pages());
    // si_mem_available(): free - totalreserve + cache - min(cache / 2, low).
    let reserve: u64 = zones
        .iter()
        .map(|zone| {
            (zone.lowmem_reserve.iter().max().unwrap() + zone.watermarks.high).min(zone.managed)
        })
        .sum();
    assert_eq!(info.available, info.free + 3 - 1 - reserve);
    let text = info.render(12);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 19);
    assert_eq!(
        lines[0],
        format!("MemTotal:       {:>8} kB", info.total * 4)
    );
    assert_eq!(lines[4], "Cached:               12 kB");
    assert_eq!(lines[11], "Inactive(file):       12 kB");
    assert_eq!(lines[16], "Dirty:                12 kB");
    assert!(lines
        .iter()
        .all(|line| line.len() == 27 && line.ends_with(" kB")));
}

#[test]
fn one_read_or_write_moves_at_most_max_rw_count() {
    // Regression: a read of an 8 EiB sparse file, or a write as long,
    // allocated (and reclaimed) page after page for ever; the kernel cuts
    // every call at MAX_RW_COUNT, INT_MAX rounded down to a page.
    const MAX_RW_COUNT: u64 = i32::MAX as u64 & !(PAGE - 1);
    let allocator = machine();
    let mut mm = Mm::new(&allocator, MmConfig::default());
    let file = mm.create_file();
    mm.truncate(CPU, file, i64::MAX).unwrap();
    // 64 TiB: as long as a user buffer can be (a longer one is EFAULT).
    let huge = 1 << 46;
    assert_eq!(mm.read(CPU, file, 0, huge).unwrap(), MAX_RW_COUNT);
    conserved(&mm);
    assert_eq!(mm.write(CPU, file, PAGE, huge).unwrap(), MAX_RW_COUNT);
    conserved(&mm);
    // Past the largest offset, still EINVAL (rw_verify_area()).
    assert!(matches!(
        mm.read(CPU, file, i64::MAX as u64 - PAGE + 1, PAGE),
        Err(MmError::InvalidLength(_))
    ));
    mm.delete_file(CPU, file).unwrap();
    conserved(&mm);
}

/// The meminfo text for any page size a caller names: kB as the page size
/// gives them, saturating where they would not fit; never a panic.
#[test]
fn meminfo_renders_any_page_shift() {
    let info = pageframe::reclaim::Meminfo {
        total: 3,
        cached: u64::MAX,
        ..Default::default()
    };
    let total_kb = |text: &str| -> u64 {
        let line = text
            .lines()
            .find(|line| line.starts_with("MemTotal:"))
            .unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    };
    assert_eq!(total_kb(&info.render(12)), 12);
    assert_eq!(total_kb(&info.render(16)), 192);
    assert_eq!(total_kb(&info.render(9)), 1);
    assert_eq!(total_kb(&info.render(0)), 0);
    assert_eq!(total_kb(&info.render(80)), u64::MAX);
    assert_eq!(total_kb(&info.render(255)), u64::MAX);
    // u64::MAX pages of 4 KiB are more kB than a u64 holds.
    assert!(info.render(12).contains(&u64::MAX.to_string()));
}
