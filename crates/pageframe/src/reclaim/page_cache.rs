//! Files and their page cache: pages by file offset, read(2) that fills
//! missing pages in offset order, write(2) that dirties them, writeback
//! that cleans them, ftruncate(2) and unlink(2) that free them.
//!
//! Owns: one [`FileSlot`] per file ever created (a deleted file keeps its
//! slot, empty, so that its id answers EBADF rather than naming another
//! file). Invariants: a file's pages all have offsets below
//! `ceil(size / PAGE_SIZE)` after a truncation (reads and writes only add
//! pages below the size); a deleted file has no pages; each page's owner
//! is its (file, offset).

use super::error::MmError;
use super::extents::Extents;
use super::journal::InodeState;
use super::lru::{LruList, Owner, DIRTY, READAHEAD, REFERENCED};
use super::readahead::RaState;
use super::workingset::Shadows;
use super::{FileId, Mm, ReclaimEvent, MAPPING_GFP};
use crate::types::CpuId;
use std::collections::BTreeMap;

/// One file.
#[derive(Clone, Debug, Default)]
pub(super) struct FileSlot {
    pub(super) deleted: bool,
    /// `i_size`, in bytes.
    pub(super) size: u64,
    /// Dirty pages (the inode is on the flusher's dirty list when nonzero).
    pub(super) dirty: u64,
    /// Page offset to PFN (`mapping->i_pages`).
    pub(super) pages: BTreeMap<u64, u64>,
    /// The descriptor's readahead state (`file->f_ra`).
    pub(super) ra: RaState,
    /// The pages written (the rest are holes).
    pub(super) data: Extents,
    /// The written pages whose blocks are allocated: written back once
    /// (ext4's delayed allocation gives a block at writeback).
    pub(super) allocated: Extents,
    /// The inode as ext4's journal sees it.
    pub(super) inode: InodeState,
    /// Shadow entries of pages reclaim evicted (`workingset`).
    pub(super) shadows: Shadows,
}

/// `FOLIO_BATCH_SIZE`: the pages one read batch holds.
const FOLIO_BATCH_SIZE: usize = 31;

impl Mm<'_> {
    pub(super) fn page_shift(&self) -> u32 {
        self.allocator.layout().page_shift as u32
    }

    fn live_file(&self, file: FileId) -> Result<&FileSlot, MmError> {
        match self.files.get(file.0 as usize) {
            Some(slot) if !slot.deleted => Ok(slot),
            _ => Err(MmError::BadFile(file)),
        }
    }

    /// The checks of pread(2) and pwrite(2) before any work, in the
    /// kernel's order (ksys_pread64(), vfs_read(), rw_verify_area()): a
    /// negative position (EINVAL), a deleted file (EBADF), a length no user
    /// buffer can have (EFAULT: access_ok() of a buffer at the lowest
    /// address user space maps, `mmap_min_addr`), an end past `loff_t`
    /// (EINVAL). Returns the file's size.
    fn check_rw(&self, file: FileId, pos: u64, len: u64) -> Result<u64, MmError> {
        let position = i64::try_from(pos).map_err(|_| MmError::NegativePosition(pos as i64))?;
        let size = self.live_file(file)?.size;
        if len > USER_BUFFER_MAX {
            return Err(MmError::BadAddress(len));
        }
        self.page_range(position as u64, len)?;
        Ok(size)
    }

    /// The page offsets `[first, end)` a byte range covers; EINVAL (with
    /// the length) when its end overflows `loff_t` (rw_verify_area()).
    fn page_range(&self, pos: u64, len: u64) -> Result<(u64, u64), MmError> {
        let end =
            pos.checked_add(len)
                .filter(|&end| end <= MAX_LOFF)
                .ok_or(MmError::InvalidLength(
                    i64::try_from(len).unwrap_or(i64::MAX),
                ))?;
        let shift = self.page_shift();
        Ok((pos >> shift, end.div_ceil(1 << shift)))
    }

    /// The most bytes one read or write moves, `MAX_RW_COUNT` (`INT_MAX`
    /// rounded down to a page): a longer call is cut short, so that no
    /// call runs for ever on a sparse file of exabytes. mirrors the clamp
    /// in vfs_read() and vfs_write(), after rw_verify_area().
    fn max_rw_count(&self) -> u64 {
        i32::MAX as u64 & !((1u64 << self.page_shift()) - 1)
    }

    /// Creates an empty file (creat(2)).
    pub fn create_file(&mut self) -> FileId {
        self.files.push(FileSlot {
            inode: InodeState::created(),
            ..FileSlot::default()
        });
        FileId((self.files.len() - 1) as u32)
    }

    /// A file's size in bytes; EBADF when deleted.
    pub fn file_size(&self, file: FileId) -> Result<u64, MmError> {
        Ok(self.live_file(file)?.size)
    }

    /// A file's cached pages as (offset, PFN), in offset order; EBADF when deleted.
    pub fn file_pages(&self, file: FileId) -> Result<Vec<(u64, u64)>, MmError> {
        Ok(self
            .live_file(file)?
            .pages
            .iter()
            .map(|(&index, &pfn)| (index, pfn))
            .collect())
    }

    /// pread(2) of `len` bytes at `pos` on `cpu`: bytes up to the end of
    /// the file are read, at most `MAX_RW_COUNT` (2 GiB less a page), in
    /// batches of up to `FOLIO_BATCH_SIZE` cached pages. A batch that finds
    /// its first page missing starts synchronous readahead; a batch that
    /// ends on the readahead mark starts the next window (`readahead`).
    /// Every page the read copies from is marked accessed, but for the
    /// first when the previous read on the file ended in it. Returns the
    /// bytes read (0 at or past the end); a short read when memory runs
    /// out part way, ENOMEM when nothing was read; before anything, EINVAL
    /// for a negative position, EBADF for a deleted file, EFAULT for more
    /// bytes than a user buffer can have, EINVAL for an end past the
    /// largest offset, in that order. mirrors filemap_read(),
    /// filemap_get_pages(), filemap_get_read_batch() and
    /// filemap_create_folio().
    pub fn read(&mut self, cpu: CpuId, file: FileId, pos: u64, len: u64) -> Result<u64, MmError> {
        let size = self.check_rw(file, pos, len)?;
        let node = self.cpu_node(cpu)?;
        let count = len.min(self.max_rw_count());
        if count == 0 {
            return Ok(0);
        }
        let shift = self.page_shift();
        let page_bytes = 1u64 << shift;
        let mut last_pos = self.files[file.0 as usize].ra.prev_pos;
        let (mut at, mut done) = (pos, 0u64);
        let mut failed = None;
        while at < size {
            let left = count - done;
            let index = at >> shift;
            // The page past the request's end (`last_index`); `at + left`
            // is within `loff_t` (page_range above).
            let last_index = (at + left).div_ceil(page_bytes);
            let mut batch = self.read_batch(file, index, last_index - 1);
            if batch.is_empty() {
                self.sync_readahead(cpu, node, file, index, last_index - index);
                batch = self.read_batch(file, index, last_index - 1);
            }
            if batch.is_empty() {
                match self.create_read_page(cpu, node, file, index) {
                    Ok(pfn) => batch.push((index, pfn)),
                    Err(err) => {
                        failed = Some(err);
                        break;
                    }
                }
            }
            let Some(&(last, last_pfn)) = batch.last() else {
                break;
            };
            if self.lru.meta(last_pfn).test(READAHEAD) {
                self.async_readahead(cpu, node, file, (last, last_pfn), last_index - last);
            }
            let end = size.min(at + left);
            // pos_same_folio(): the read goes on in the page the last one
            // ended in (`loff_t` shifts, so -1 is page -1).
            if (at as i64) >> shift != last_pos.wrapping_sub(1) >> shift {
                self.mark_page_accessed(batch[0].1);
            }
            for (position, &(page, pfn)) in batch.iter().enumerate() {
                if end < page << shift {
                    break;
                }
                if position > 0 {
                    self.mark_page_accessed(pfn);
                }
                let bytes = (end - at).min(page_bytes - (at & (page_bytes - 1)));
                at += bytes;
                done += bytes;
                last_pos = at as i64;
            }
            if done == count {
                break;
            }
        }
        self.files[file.0 as usize].ra.prev_pos = last_pos;
        self.inode_accessed(file);
        match failed {
            Some(err) if done == 0 => Err(err),
            _ => Ok(done),
        }
    }

    /// filemap_get_read_batch(): the cached pages from `index` on, up to
    /// `max` and `FOLIO_BATCH_SIZE` of them, stopping at the first missing
    /// one and after one with the readahead mark.
    fn read_batch(&self, file: FileId, index: u64, max: u64) -> Vec<(u64, u64)> {
        let mut batch = Vec::new();
        for (&page, &pfn) in self.files[file.0 as usize].pages.range(index..=max) {
            if page != index + batch.len() as u64 {
                break;
            }
            batch.push((page, pfn));
            if self.lru.meta(pfn).test(READAHEAD) || batch.len() == FOLIO_BATCH_SIZE {
                break;
            }
        }
        batch
    }

    /// pwrite(2) of `len` bytes at `pos` on `cpu`: grows the file, puts
    /// every page written in the cache (allocating missing ones) and
    /// dirties it, without marking it accessed; at most `MAX_RW_COUNT`
    /// bytes (2 GiB less a page) per call. A write past the end of the file
    /// has ext4 zero the gap's partial pages first, through the cache: the
    /// rest of the page holding the old end (`zero_partial_page`), and the
    /// start of the write's first page, which is marked accessed. The
    /// position, file, length and range are checked as [`Mm::read`] checks
    /// them; then EFBIG
    /// when `pos` is at or past the maximum file size (the write is cut
    /// short at it otherwise). mirrors generic_perform_write() and
    /// generic_write_check_limits().
    pub fn write(&mut self, cpu: CpuId, file: FileId, pos: u64, len: u64) -> Result<u64, MmError> {
        self.check_rw(file, pos, len)?;
        let node = self.cpu_node(cpu)?;
        let len = len.min(self.max_rw_count());
        let max = self.config.max_file_bytes;
        if len == 0 {
            return Ok(0);
        }
        if pos >= max {
            return Err(MmError::FileTooBig { size: pos, max });
        }
        let end = max.min(pos + len);
        let (first, last) = self.page_range(pos, end - pos)?;
        // A write that starts past the page holding the end of the file
        // zeroes the rest of that page first (ext4, 6.18).
        let old_size = self.files[file.0 as usize].size;
        let shift = self.page_shift();
        if old_size & ((1 << shift) - 1) != 0 && first > old_size >> shift {
            let page = self.grab_partial_page(cpu, node, file, old_size >> shift)?;
            self.zero_partial_page(file, page);
        }
        // A write that starts past the end of the file, inside a page, has
        // ext4 zero that page's bytes before it through the cache, which
        // marks the page accessed (measured on 6.18).
        let zeroes_before = pos > old_size && pos & ((1 << shift) - 1) != 0;
        let mut written_end = pos;
        for index in first..last {
            let pfn = match self.files[file.0 as usize].pages.get(&index) {
                Some(&pfn) => pfn,
                None => match self.alloc_lru_page(cpu, node, MAPPING_GFP) {
                    Ok(pfn) => {
                        self.insert_file_page(file, index, pfn, 0, true);
                        pfn
                    }
                    Err(err) if index == first => return Err(err),
                    Err(_) => break,
                },
            };
            if index == first && zeroes_before {
                self.mark_page_accessed(pfn);
            }
            self.set_dirty(file, pfn);
            written_end = end.min((index + 1) << self.page_shift());
        }
        let written_pages = written_end.div_ceil(1 << self.page_shift());
        let slot = &mut self.files[file.0 as usize];
        slot.size = slot.size.max(written_end);
        if written_end > pos {
            slot.data.insert(first, written_pages);
            self.inode_changed(file);
        }
        Ok(written_end - pos)
    }

    /// fsync(2): writes back the file's dirty pages (at once), then
    /// commits the journal if the file has changes in it (`journal`),
    /// which first writes the pages ext4 zeroed through the cache since the
    /// last commit, of any file. Returns the pages written; EBADF when
    /// deleted.
    pub fn fsync(&mut self, file: FileId) -> Result<u64, MmError> {
        let pages: Vec<u64> = self.live_file(file)?.pages.values().copied().collect();
        let written = pages
            .into_iter()
            .filter(|&pfn| self.end_writeback(pfn))
            .count() as u64;
        if written > 0 {
            // Delayed allocation: writing the pages allocates their blocks.
            self.inode_allocated(file);
        }
        Ok(written + self.fsync_commit(file))
    }

    /// sync(2): writes back every dirty page, file by file, then commits
    /// the journal; returns the pages written.
    pub fn sync(&mut self) -> u64 {
        // sync_fs() after the data: the journal commits.
        self.writeback_all() + self.journal_commit()
    }

    /// The flusher's writeback of every dirty page, file by file (what
    /// wakeup_flusher_threads() starts), without a journal commit: the
    /// files whose delayed blocks it allocates join the running
    /// transaction. Returns the pages written.
    pub(super) fn writeback_all(&mut self) -> u64 {
        let mut written = 0;
        for file in 0..self.files.len() {
            if self.files[file].dirty == 0 {
                continue;
            }
            let pages: Vec<u64> = self.files[file].pages.values().copied().collect();
            let file_written = pages
                .into_iter()
                .filter(|&pfn| self.end_writeback(pfn))
                .count() as u64;
            if file_written > 0 {
                self.inode_allocated(FileId(file as u32));
            }
            written += file_written;
        }
        written
    }

    /// posix_fadvise(2) `POSIX_FADV_DONTNEED` of `len` bytes at `offset`
    /// (`len` 0: to the end of the file) on `cpu`: writeback of the dirty
    /// pages in the range is started, then the clean cached pages wholly
    /// inside it leave the cache and are freed in offset order (the last,
    /// partial page too when the range reaches the end of the file). A page
    /// whose writeback was just started is kept, clean, as the kernel keeps
    /// a page still under writeback. Returns the pages freed (the call
    /// itself returns 0). EINVAL for a negative length (a negative offset
    /// is taken as the kernel takes it), EBADF for a deleted file; nothing
    /// changes on error. mirrors generic_fadvise()
    /// and mapping_try_invalidate().
    pub fn fadvise_dontneed(
        &mut self,
        cpu: CpuId,
        file: FileId,
        offset: i64,
        len: i64,
    ) -> Result<u64, MmError> {
        let size = self.live_file(file)?.size;
        if len < 0 {
            return Err(MmError::InvalidLength(len));
        }
        self.cpu_node(cpu)?;
        // generic_fadvise()'s unsigned arithmetic: `endbyte` is the range's
        // last byte, the end of `loff_t` when `len` is 0 or the sum wraps;
        // a negative offset is not refused.
        let len = len as u64;
        let endbyte = match (offset as u64).wrapping_add(len) {
            end if len == 0 || end < len => MAX_LOFF,
            end => end - 1,
        };
        let shift = self.page_shift();
        let page_mask = (1u64 << shift) - 1;
        // `(offset + PAGE_SIZE - 1) >> PAGE_SHIFT` in `loff_t`, as a page
        // index: a negative offset below -PAGE_SIZE + 1 names no page.
        let mut first = (offset.wrapping_add(page_mask as i64) >> shift) as u64;
        let mut last = endbyte >> shift;
        let mut none = false;
        if endbyte & page_mask != page_mask && Some(endbyte) != size.checked_sub(1) {
            // Only whole pages, unless the range ends the file.
            none = last == 0;
            last = last.saturating_sub(1);
        }
        if none {
            // Writeback is still started (it comes first in the kernel).
            (first, last) = (1, 0);
        }
        // The writeback range starts at `offset >> PAGE_SHIFT` as a page
        // index too: past every page for a negative offset.
        let (write_from, write_to) = ((offset >> shift) as u64, endbyte >> shift);
        let written: Vec<u64> = if write_from <= write_to {
            self.files[file.0 as usize]
                .pages
                .range(write_from..=write_to)
                .map(|(_, &pfn)| pfn)
                .collect()
        } else {
            Vec::new()
        };
        let under_writeback: std::collections::BTreeSet<u64> = written
            .into_iter()
            .filter(|&pfn| self.end_writeback(pfn))
            .collect();
        if !under_writeback.is_empty() {
            self.inode_allocated(file);
        }
        if first <= last {
            self.clear_shadows(file, first..=last);
        }
        // mapping_evict_folio() leaves dirty pages (a negative offset
        // starts no writeback) and pages under writeback.
        let doomed: Vec<u64> = if first <= last {
            self.files[file.0 as usize]
                .pages
                .range(first..=last)
                .map(|(_, &pfn)| pfn)
                .filter(|pfn| !under_writeback.contains(pfn) && !self.lru.meta(*pfn).test(DIRTY))
                .collect()
        } else {
            Vec::new()
        };
        for &pfn in &doomed {
            self.free_owned(cpu, pfn)?;
        }
        Ok(doomed.len() as u64)
    }

    /// ftruncate(2) to `length` bytes on `cpu`: pages wholly past the new
    /// size leave the cache and are freed in offset order, and the file
    /// system forgets their blocks; growing sets the size (a hole). The
    /// page that holds the end of the file afterwards (shrinking) or before
    /// (growing), if the end is inside it, has the rest zeroed through the
    /// cache, as ext4 zeroes the rest of the block (4 KiB blocks; growing
    /// too in 6.18, measured): see `zero_partial_page`. EINVAL for a
    /// negative length, EFBIG past the maximum file size, EBADF for a
    /// deleted file (a negative length is EINVAL first, as the kernel
    /// checks it before the descriptor); nothing changes on error (ENOMEM
    /// included: the page to zero is allocated first). mirrors do_ftruncate(), inode_newsize_ok(),
    /// truncate_inode_pages_range() and ext4_block_truncate_page().
    pub fn truncate(&mut self, cpu: CpuId, file: FileId, length: i64) -> Result<(), MmError> {
        // do_sys_ftruncate() refuses a negative length before it looks at
        // the descriptor.
        let size = u64::try_from(length).map_err(|_| MmError::InvalidLength(length))?;
        let old_size = self.live_file(file)?.size;
        if size > self.config.max_file_bytes {
            return Err(MmError::FileTooBig {
                size,
                max: self.config.max_file_bytes,
            });
        }
        let node = self.cpu_node(cpu)?;
        let shift = self.page_shift();
        let end = if size > old_size { old_size } else { size };
        let zeroed = match end & ((1 << shift) - 1) {
            0 => None,
            _ => Some(self.grab_partial_page(cpu, node, file, end >> shift)?),
        };
        let keep = size.div_ceil(1 << shift);
        self.drop_file_pages(cpu, file, keep)?;
        let slot = &mut self.files[file.0 as usize];
        slot.size = size;
        slot.data.truncate(keep);
        slot.allocated.truncate(keep);
        self.inode_changed(file);
        self.journal_truncate(file, keep);
        if let Some(page) = zeroed {
            self.zero_partial_page(file, page);
        }
        Ok(())
    }

    /// The page `index` of `file`, taken into the cache if missing (read
    /// in, or a zeroed page of a hole): (index, PFN).
    fn grab_partial_page(
        &mut self,
        cpu: CpuId,
        node: crate::types::NodeId,
        file: FileId,
        index: u64,
    ) -> Result<(u64, u64), MmError> {
        Ok(match self.files[file.0 as usize].pages.get(&index) {
            Some(&pfn) => (index, pfn),
            None => (index, self.create_read_page(cpu, node, file, index)?),
        })
    }

    /// ext4's zeroing of the rest of a file's last block through the page
    /// cache (ext4_block_truncate_page()): the page, taken with
    /// `FGP_ACCESSED`, is marked accessed; it is dirtied when the block
    /// holds data, and left clean in a hole. A dirtied page joins the
    /// journal's ordered data (ext4_jbd2_inode_add_write()), written at the
    /// next commit (`journal`).
    fn zero_partial_page(&mut self, file: FileId, (index, pfn): (u64, u64)) {
        self.mark_page_accessed(pfn);
        if self.files[file.0 as usize].data.contains(index) {
            self.set_dirty(file, pfn);
            self.journal_order(file, index);
        }
    }

    /// unlink(2) of the file's only name with its descriptor closed: the
    /// page cache is freed in offset order (truncate_inode_pages_final());
    /// the id then answers EBADF to every call, and ENOENT to another
    /// delete.
    pub fn delete_file(&mut self, cpu: CpuId, file: FileId) -> Result<(), MmError> {
        match self.files.get(file.0 as usize) {
            Some(slot) if !slot.deleted => {}
            _ => return Err(MmError::NoSuchFile(file)),
        }
        self.cpu_node(cpu)?;
        self.drop_file_pages(cpu, file, 0)?;
        let slot = &mut self.files[file.0 as usize];
        slot.deleted = true;
        slot.size = 0;
        slot.data = Extents::default();
        slot.allocated = Extents::default();
        self.journal_truncate(file, 0);
        Ok(())
    }

    /// Frees the file's pages at offsets `from..`, in offset order, and
    /// forgets the shadows there.
    fn drop_file_pages(&mut self, cpu: CpuId, file: FileId, from: u64) -> Result<(), MmError> {
        self.clear_shadows(file, from..=u64::MAX);
        let doomed: Vec<u64> = self.files[file.0 as usize]
            .pages
            .range(from..)
            .map(|(_, &pfn)| pfn)
            .collect();
        for pfn in doomed {
            self.free_owned(cpu, pfn)?;
        }
        Ok(())
    }

    /// Adds the fresh page `pfn` at `index` of `file` and onto the file
    /// LRU. A page added where reclaim left a shadow replaces it; unless
    /// it is added for a write (`__GFP_WRITE`), that is a refault, which
    /// may put it on the active list (`workingset`). mirrors
    /// filemap_add_folio().
    pub(super) fn insert_file_page(
        &mut self,
        file: FileId,
        index: u64,
        pfn: u64,
        flags: u8,
        gfp_write: bool,
    ) {
        let place = self.place_of(pfn);
        let shadow = self.files[file.0 as usize].shadows.remove(&index);
        let (refault_flags, active) = match shadow {
            Some(shadow) if !gfp_write => self.workingset_refault(place.0, shadow),
            _ => (0, false),
        };
        self.lru.adopt(
            pfn,
            place,
            Owner::File { file, index },
            LruList::of(true, active),
            flags | refault_flags,
        );
        self.files[file.0 as usize].pages.insert(index, pfn);
        self.nr_file += 1;
        self.update_shadow_nodes(file, index..=index);
    }

    /// folio_mark_accessed() of a page cache page: an inactive page already
    /// referenced is activated (and loses the mark), which ages its node's
    /// non-resident pages (workingset_activation()); otherwise it gains
    /// the mark.
    fn mark_page_accessed(&mut self, pfn: u64) {
        let meta = *self.lru.meta(pfn);
        let Some(list) = meta.lru else { return };
        if !list.is_active() && meta.test(REFERENCED) {
            self.lru
                .move_to(pfn, LruList::of(list.is_file(), true), false);
            self.lru.meta_mut(pfn).flags &= !REFERENCED;
            self.counters.add(ReclaimEvent::Pgactivate, 1);
            self.age_nonresident(meta.node, 1);
        } else if !meta.test(REFERENCED) {
            self.lru.meta_mut(pfn).flags |= REFERENCED;
        }
    }

    /// folio_mark_dirty() of a page of `file`.
    fn set_dirty(&mut self, file: FileId, pfn: u64) {
        let meta = self.lru.meta_mut(pfn);
        if !meta.test(DIRTY) {
            meta.flags |= DIRTY;
            self.files[file.0 as usize].dirty += 1;
            self.nr_dirty += 1;
            self.counters.add(ReclaimEvent::NrDirtied, 1);
        }
    }
}

/// The largest `loff_t`.
const MAX_LOFF: u64 = i64::MAX as u64;

/// The longest user buffer access_ok() lets through on x86-64 with 4-level
/// page tables: from `mmap_min_addr` (65536, the lowest address user space
/// can map) to `TASK_SIZE_MAX` (2^47 less a page). A read or write of more
/// bytes is EFAULT whatever buffer the caller has.
const USER_BUFFER_MAX: u64 = (1 << 47) - 4096 - 65536;
