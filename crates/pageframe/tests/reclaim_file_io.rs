//! File calls of the reclaim layer: readahead, filemap_read()'s accessed
//! marks, POSIX_FADV_DONTNEED, and ext4's zeroing of a partial last page
//! on truncation (dirtied where the file has data, clean in a hole). The sequences with
//! a `measured` note hold the page counts this kernel (Linux 6.18, ext4 with
//! order-0 folios on a loop device with `read_ahead_kb` 2560 and
//! `max_sectors_kb` 1280) gave for the same calls, 2026-11-28, through
//! `pageframe conform pagecache`; pages are conserved after every call.

mod common;

use common::{assert_conserved, boot, one_node};
use pageframe::reclaim::{FileId, LruList, Mm, MmConfig};
use pageframe::{CpuId, LocalPageAllocator, NodeId};

const PAGE: u64 = 4096;
const CPU: CpuId = CpuId(0);

fn machine() -> LocalPageAllocator {
    boot(&one_node(256, 2))
}

/// The loop device's queue the measured sequences ran on.
fn measured_device() -> MmConfig {
    MmConfig {
        read_ahead_kb: 2560,
        max_sectors_kb: 1280,
        ..MmConfig::default()
    }
}

fn conserved(mm: &Mm) {
    mm.check_invariants().unwrap();
    assert_conserved(mm.allocator(), mm.nr_file_pages() + mm.nr_anon_pages());
}

/// A file of `pages` pages, written, synced and dropped from the cache.
fn cold_file(mm: &mut Mm, pages: u64) -> FileId {
    let file = mm.create_file();
    mm.write(CPU, file, 0, pages * PAGE).unwrap();
    mm.fsync(file).unwrap();
    assert_eq!(mm.fadvise_dontneed(CPU, file, 0, 0).unwrap(), pages);
    assert!(mm.file_pages(file).unwrap().is_empty());
    file
}

fn lists(mm: &Mm) -> (u64, u64) {
    (
        mm.lru_pages(NodeId(0), LruList::ActiveFile),
        mm.lru_pages(NodeId(0), LruList::InactiveFile),
    )
}

/// Reads each (page, pages) and checks the cached pages after each.
fn reads_cache(mm: &mut Mm, file: FileId, reads: &[(u64, u64)], cached: &[u64]) {
    for (&(page, pages), &want) in reads.iter().zip(cached) {
        assert_eq!(
            mm.read(CPU, file, page * PAGE, pages * PAGE).unwrap(),
            pages * PAGE
        );
        assert_eq!(
            mm.nr_file_pages(),
            want,
            "after reading {pages} at page {page}"
        );
        conserved(mm);
    }
}

#[test]
fn page_by_page_reads_ramp_the_window_as_measured() {
    let allocator = machine();
    let mut mm = Mm::new(&allocator, measured_device());
    let file = cold_file(&mut mm, 1024);
    let reads: Vec<(u64, u64)> = (0..40).map(|page| (page, 1)).collect();
    let mut cached = vec![4, 20, 20, 20];
    cached.extend([84; 16]);
    cached.extend([212; 20]);
    reads_cache(&mut mm, file, &reads, &cached);
    assert_eq!(lists(&mm), (0, 212));
}

#[test]
fn interleaved_streams_and_backward_reads_as_measured() {
    let allocator = machine();
    let mut mm = Mm::new(&allocator, measured_device());
    let file = cold_file(&mut mm, 1024);
    reads_cache(
        &mut mm,
        file,
        &[(0, 16), (512, 16), (16, 16), (528, 16), (32, 64), (544, 64)],
        &[64, 80, 208, 224, 480, 544],
    );
    let backwards = cold_file(&mut mm, 512);
    let before = mm.nr_file_pages();
    let cached: Vec<u64> = [1, 2, 3, 5, 9].iter().map(|n| before + n).collect();
    reads_cache(
        &mut mm,
        backwards,
        &[(300, 1), (299, 1), (298, 1), (296, 2), (200, 4)],
        &cached,
    );
}

#[test]
fn re_reads_mark_pages_once_per_read_as_measured() {
    let allocator = machine();
    let mut mm = Mm::new(&allocator, measured_device());
    let file = cold_file(&mut mm, 256);
    reads_cache(&mut mm, file, &[(0, 1), (0, 4)], &[4, 20]);
    assert_eq!(lists(&mm), (0, 20));
    reads_cache(&mut mm, file, &[(2, 1)], &[20]);
    assert_eq!(lists(&mm), (1, 19));
    reads_cache(&mut mm, file, &[(0, 64)], &[212]);
    assert_eq!(lists(&mm), (4, 208));
}

#[test]
fn small_reads_in_one_page_mark_it_once() {
    let allocator = machine();
    let mut mm = Mm::new(&allocator, MmConfig::default());
    let file = cold_file(&mut mm, 2);
    // filemap_read(): a read that starts in the page the last one ended in
    // does not mark that page again.
    for (pos, len) in [(0, 3000), (3000, 3000), (6000, 1000)] {
        assert_eq!(mm.read(CPU, file, pos, len).unwrap(), len);
        assert_eq!(lists(&mm), (0, 2));
    }
    // A read from page 0 after one that ended in page 1 marks both again.
    assert_eq!(mm.read(CPU, file, 0, 2 * PAGE).unwrap(), 2 * PAGE);
    assert_eq!(lists(&mm), (2, 0));
    conserved(&mm);
}

#[test]
fn the_default_window_is_128_kib_and_never_passes_the_end() {
    let allocator = machine();
    let mut mm = Mm::new(&allocator, MmConfig::default());
    let file = cold_file(&mut mm, 100);
    // get_init_ra_size(1, 32) = 4, then get_next_ra_size() 4 -> 8 -> 16 -> 32.
    reads_cache(
        &mut mm,
        file,
        &[(0, 1), (1, 1), (4, 1), (12, 1)],
        &[4, 12, 28, 60],
    );
    // The next window would end at page 92 + 32: it stops at the end.
    reads_cache(&mut mm, file, &[(28, 1)], &[92]);
    reads_cache(&mut mm, file, &[(60, 1)], &[100]);
    let pages = mm.file_pages(file).unwrap();
    assert_eq!(pages.last().unwrap().0, 99);
}

#[test]
fn readahead_off_reads_only_the_pages_asked_for() {
    let allocator = machine();
    let config = MmConfig {
        read_ahead_kb: 0,
        ..MmConfig::default()
    };
    let mut mm = Mm::new(&allocator, config);
    let file = cold_file(&mut mm, 64);
    reads_cache(&mut mm, file, &[(0, 1), (1, 1), (10, 3)], &[1, 2, 5]);
}

#[test]
fn dontneed_drops_whole_clean_pages_as_measured() {
    let allocator = machine();
    let mut mm = Mm::new(&allocator, measured_device());
    let file = cold_file(&mut mm, 256);
    reads_cache(&mut mm, file, &[(0, 256)], &[256]);
    for ((offset, len), cached) in [
        ((10 * PAGE + 100, 20 * PAGE), 237),
        ((100 * PAGE, 1), 237),
        ((200 * PAGE, 56 * PAGE), 181),
    ] {
        mm.fadvise_dontneed(CPU, file, offset as i64, len as i64)
            .unwrap();
        assert_eq!(mm.nr_file_pages(), cached);
        conserved(&mm);
    }
    // A range that ends the file takes its partial last page.
    let short = mm.create_file();
    mm.write(CPU, short, 0, 10 * PAGE + 100).unwrap();
    mm.fsync(short).unwrap();
    let before = mm.nr_file_pages();
    mm.fadvise_dontneed(CPU, short, 5 * PAGE as i64, 5 * PAGE as i64 + 100)
        .unwrap();
    assert_eq!(mm.nr_file_pages(), before - 6);
    conserved(&mm);
}

#[test]
fn dontneed_writes_back_dirty_pages_and_keeps_them() {
    let allocator = machine();
    let mut mm = Mm::new(&allocator, MmConfig::default());
    let file = cold_file(&mut mm, 32);
    mm.read(CPU, file, 0, 32 * PAGE).unwrap();
    mm.write(CPU, file, 0, 8 * PAGE).unwrap();
    assert_eq!(mm.nr_dirty(), 8);
    assert_eq!(mm.fadvise_dontneed(CPU, file, 0, 0).unwrap(), 24);
    assert_eq!((mm.nr_file_pages(), mm.nr_dirty()), (8, 0));
    // Clean now: a second call drops them.
    assert_eq!(mm.fadvise_dontneed(CPU, file, 0, 0).unwrap(), 8);
    conserved(&mm);
}

#[test]
fn dontneed_takes_offsets_as_the_kernel_does() {
    let allocator = machine();
    let mut mm = Mm::new(&allocator, MmConfig::default());
    let file = cold_file(&mut mm, 16);
    mm.read(CPU, file, 0, 16 * PAGE).unwrap();
    let vmstat = mm.vmstat();
    // A negative length is EINVAL, with nothing changed.
    let err = mm.fadvise_dontneed(CPU, file, 0, -1).unwrap_err();
    assert_eq!(err.name(), "EINVAL");
    assert_eq!((mm.nr_file_pages(), mm.vmstat()), (16, vmstat));
    // A negative offset far below 0 names no page ...
    assert_eq!(
        mm.fadvise_dontneed(CPU, file, -5 * PAGE as i64, PAGE as i64)
            .unwrap(),
        0
    );
    // ... but -1 with a page's length wraps to "the whole file" (measured:
    // the kernel dropped all 16 pages).
    assert_eq!(mm.fadvise_dontneed(CPU, file, -1, PAGE as i64).unwrap(), 16);
    assert_eq!(
        mm.fadvise_dontneed(CPU, file, i64::MAX, i64::MAX).unwrap(),
        0
    );
    mm.delete_file(CPU, file).unwrap();
    let err = mm.fadvise_dontneed(CPU, file, 0, 0).unwrap_err();
    assert_eq!(err.name(), "EBADF");
    conserved(&mm);
}

#[test]
fn truncating_into_a_page_zeroes_it_through_the_cache() {
    let allocator = machine();
    let mut mm = Mm::new(&allocator, MmConfig::default());
    let file = cold_file(&mut mm, 256);
    mm.read(CPU, file, 0, 256 * PAGE).unwrap();
    mm.truncate(CPU, file, 128 * PAGE as i64).unwrap();
    assert_eq!((mm.nr_file_pages(), mm.nr_dirty()), (128, 0));
    // Measured: the page holding the new end is marked accessed (it was
    // read once, so it is activated) and dirtied.
    mm.truncate(CPU, file, 100 * PAGE as i64 + 5).unwrap();
    assert_eq!((mm.nr_file_pages(), mm.nr_dirty()), (101, 1));
    assert_eq!(lists(&mm), (1, 100));
    // Not cached: it is read in first. Growing zeroes nothing.
    let cold = cold_file(&mut mm, 64);
    mm.truncate(CPU, cold, 10 * PAGE as i64 + 5).unwrap();
    assert_eq!(mm.file_pages(cold).unwrap().len(), 1);
    mm.truncate(CPU, cold, 20 * PAGE as i64 + 7).unwrap();
    assert_eq!(mm.file_pages(cold).unwrap().len(), 1);
    // The first file's zeroed page went with the journal commit of the
    // second file's fsync (in `cold_file`): only the second's is dirty.
    assert_eq!(mm.nr_dirty(), 1);
    conserved(&mm);
}

#[test]
fn truncating_into_a_hole_caches_the_page_clean_as_measured() {
    let allocator = machine();
    let mut mm = Mm::new(&allocator, MmConfig::default());
    let sparse = mm.create_file();
    mm.truncate(CPU, sparse, 100 * PAGE as i64).unwrap();
    mm.truncate(CPU, sparse, 50 * PAGE as i64 + 5).unwrap();
    assert_eq!((mm.nr_file_pages(), mm.nr_dirty()), (1, 0));
    // Eight pages of data, then one written at page 64 past a hole.
    let file = cold_file(&mut mm, 8);
    mm.write(CPU, file, 64 * PAGE, PAGE).unwrap();
    assert_eq!((mm.nr_file_pages(), mm.nr_dirty()), (2, 1));
    // Into the hole: page 64 goes, page 30 is cached clean.
    mm.truncate(CPU, file, 30 * PAGE as i64 + 9).unwrap();
    assert_eq!((mm.nr_file_pages(), mm.nr_dirty()), (2, 0));
    // Into the data: page 30 goes, page 4 is read in and dirtied.
    mm.truncate(CPU, file, 4 * PAGE as i64 + 9).unwrap();
    assert_eq!((mm.nr_file_pages(), mm.nr_dirty()), (2, 1));
    conserved(&mm);
}

#[test]
fn readahead_stops_where_memory_does_and_the_read_goes_on() {
    let allocator = boot(&one_node(16, 2));
    let mut mm = Mm::new(&allocator, measured_device());
    let file = mm.create_file();
    mm.truncate(CPU, file, 1 << 40).unwrap();
    // Far more than the machine holds: readahead windows fail part way
    // (`__GFP_NORETRY`), reclaim makes room, and every read still returns.
    for chunk in 0..64u64 {
        let read = mm.read(CPU, file, chunk * 64 * PAGE, 64 * PAGE).unwrap();
        assert_eq!(read, 64 * PAGE);
    }
    conserved(&mm);
}

#[test]
fn writes_past_the_end_zero_through_the_cache_as_measured() {
    let allocator = machine();
    let mut mm = Mm::new(&allocator, MmConfig::default());
    // A write inside an empty file's first page marks the page accessed:
    // a read then activates it ...
    let empty = mm.create_file();
    mm.write(CPU, empty, 100, 100).unwrap();
    mm.read(CPU, empty, 0, 10).unwrap();
    assert_eq!(lists(&mm), (1, 0));
    // ... and a write from the start of a page does not.
    let from_start = mm.create_file();
    mm.write(CPU, from_start, 0, 100).unwrap();
    mm.read(CPU, from_start, 0, 10).unwrap();
    assert_eq!(lists(&mm), (1, 1));
    // Past a partial last page, that page's rest is zeroed too: it was
    // marked by the first write, so it is activated.
    let two = mm.create_file();
    mm.write(CPU, two, 2861, 28).unwrap();
    mm.write(CPU, two, PAGE, PAGE).unwrap();
    assert_eq!(lists(&mm), (2, 2));
    // A write inside the file marks nothing.
    let inside = cold_file(&mut mm, 2);
    mm.write(CPU, inside, 100, 10).unwrap();
    mm.read(CPU, inside, 0, 10).unwrap();
    assert_eq!(lists(&mm), (2, 3));
    conserved(&mm);
}

#[test]
fn a_commit_writes_zeroed_pages_that_have_blocks() {
    let allocator = machine();
    let mut mm = Mm::new(&allocator, MmConfig::default());
    let file = cold_file(&mut mm, 8);
    let other = cold_file(&mut mm, 1);
    // Zeroed through the cache with its block allocated: ordered data.
    mm.truncate(CPU, file, 4 * PAGE as i64 + 9).unwrap();
    assert_eq!(mm.nr_dirty(), 1);
    // An fsync of a file with nothing in the transaction commits nothing.
    assert_eq!(mm.fsync(other).unwrap(), 0);
    assert_eq!(mm.nr_dirty(), 1);
    // A read makes the other file's atime due: its fsync commits, and the
    // commit writes the zeroed page.
    mm.read(CPU, other, 0, 10).unwrap();
    assert_eq!(mm.fsync(other).unwrap(), 1);
    assert_eq!(mm.nr_dirty(), 0);
    // A zeroed page of a delayed allocation (never written back) stays
    // dirty through a commit.
    let fresh = mm.create_file();
    mm.write(CPU, fresh, 0, 4 * PAGE).unwrap();
    mm.truncate(CPU, fresh, 2 * PAGE as i64 + 9).unwrap();
    mm.write(CPU, other, 0, 10).unwrap();
    mm.fsync(other).unwrap();
    assert_eq!(mm.nr_dirty(), 3);
    conserved(&mm);
}

#[test]
fn a_negative_length_is_einval_before_a_closed_descriptor() {
    let allocator = machine();
    let mut mm = Mm::new(&allocator, MmConfig::default());
    let file = mm.create_file();
    mm.delete_file(CPU, file).unwrap();
    assert_eq!(mm.truncate(CPU, file, -1).unwrap_err().name(), "EINVAL");
    assert_eq!(mm.truncate(CPU, file, 0).unwrap_err().name(), "EBADF");
    assert_eq!(
        mm.fadvise_dontneed(CPU, file, 0, -1).unwrap_err().name(),
        "EBADF"
    );
}

/// POSIX_FADV_DONTNEED from a negative offset starts no writeback (the
/// range's first page index is past every page) and drops only clean
/// pages: dirty ones stay dirty, as on 6.18 (`conform pagecache`, "drop
/// from a negative offset with dirty pages").
#[test]
fn dontneed_from_a_negative_offset_keeps_dirty_pages() {
    let allocator = pageframe::LocalPageAllocator::boot(
        &pageframe::MachineDesc::uniform(64 << 20, 1, 1).unwrap(),
    )
    .unwrap();
    let mut mm = Mm::new(&allocator, MmConfig::default());
    let cpu = pageframe::CpuId(0);
    let file = mm.create_file();
    mm.truncate(cpu, file, 16 * 4096).unwrap();
    mm.read(cpu, file, 0, 16 * 4096).unwrap();
    mm.write(cpu, file, 0, 3 * 4096).unwrap();
    assert_eq!(mm.fadvise_dontneed(cpu, file, -1, 0).unwrap(), 13);
    assert_eq!((mm.nr_file_pages(), mm.nr_dirty()), (3, 3));
    mm.fsync(file).unwrap();
    assert_eq!(mm.fadvise_dontneed(cpu, file, -1, 0).unwrap(), 3);
    assert_eq!(mm.nr_file_pages(), 0);
    mm.check_invariants().unwrap();
}

/// A readahead window larger than memory ends where memory does: its
/// pages are locked until the window is allocated, so reclaim run by the
/// window's own allocations cannot evict its start, and a read of a file
/// 8x the memory reads each page in about once (not once per window).
#[test]
fn a_window_larger_than_memory_does_not_evict_itself() {
    for config in [
        MmConfig {
            read_ahead_kb: u32::MAX,
            ..MmConfig::default()
        },
        MmConfig {
            max_sectors_kb: u32::MAX,
            ..MmConfig::default()
        },
    ] {
        let allocator = pageframe::LocalPageAllocator::boot(
            &pageframe::MachineDesc::uniform(4 << 20, 1, 1).unwrap(),
        )
        .unwrap();
        let mut mm = Mm::new(&allocator, config);
        let cpu = pageframe::CpuId(0);
        let file = mm.create_file();
        let bytes = 32u64 << 20;
        mm.truncate(cpu, file, bytes as i64).unwrap();
        assert_eq!(mm.read(cpu, file, 0, bytes).unwrap(), bytes);
        let read_in_kib = mm.counters().get(pageframe::reclaim::ReclaimEvent::Pgpgin);
        assert!(
            read_in_kib <= 2 * (bytes >> 10),
            "{read_in_kib} KiB read in for {} KiB",
            bytes >> 10
        );
        mm.check_invariants().unwrap();
    }
}
