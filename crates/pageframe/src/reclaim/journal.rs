//! ext4's journal (jbd2, data=ordered) as far as the page cache sees it:
//! which files have changes in the running transaction, and the pages ext4
//! zeroed through the cache since the last commit, which a commit writes
//! first (ext4_jbd2_inode_add_write()). An fsync(2) commits only when its
//! file has changes in the running transaction (ext4_fsync_journal());
//! sync(2) always does. The journal's own timer (a commit every 5 s) is not
//! modelled: time does not pass here.
//!
//! A file's inode joins the transaction when its size, times or blocks
//! change: a write or a truncation (mtime, ctime), writeback of dirty pages
//! (delayed allocation gives them blocks), and a read whose atime update
//! relatime allows (atime not newer than mtime or ctime: the first read
//! after a change). Invariant: after a commit no file is in the
//! transaction and no page is ordered.

use super::{FileId, Mm};

/// A file's inode as the journal sees it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct InodeState {
    /// The inode has changes in the running transaction.
    in_transaction: bool,
    /// mtime or ctime is not older than atime: relatime updates atime at
    /// the next read.
    atime_due: bool,
}

impl InodeState {
    /// A created file: in the transaction, atime equal to mtime.
    pub(super) fn created() -> InodeState {
        InodeState {
            in_transaction: true,
            atime_due: true,
        }
    }
}

impl Mm<'_> {
    /// The file's size or mtime/ctime changed.
    pub(super) fn inode_changed(&mut self, file: FileId) {
        self.files[file.0 as usize].inode = InodeState::created();
    }

    /// Writeback allocated the file's delayed blocks: its extent tree
    /// changed.
    pub(super) fn inode_allocated(&mut self, file: FileId) {
        self.files[file.0 as usize].inode.in_transaction = true;
    }

    /// file_accessed() after a read: relatime's atime update, when due,
    /// puts the inode in the transaction.
    pub(super) fn inode_accessed(&mut self, file: FileId) {
        let inode = &mut self.files[file.0 as usize].inode;
        if inode.atime_due {
            *inode = InodeState {
                in_transaction: true,
                atime_due: false,
            };
        }
    }

    /// A page of `file` zeroed and dirtied through the cache: ordered data
    /// of the running transaction.
    pub(super) fn journal_order(&mut self, file: FileId, index: u64) {
        self.ordered_data.push((file, index));
    }

    /// A truncation of `file` to `keep` pages (0: its deletion) takes its
    /// ordered pages past the new end out of the transaction.
    pub(super) fn journal_truncate(&mut self, file: FileId, keep: u64) {
        self.ordered_data
            .retain(|&(ordered, index)| ordered != file || index < keep);
    }

    /// The commit at an fsync of `file`, if the file has changes in the
    /// running transaction. Returns the pages written.
    pub(super) fn fsync_commit(&mut self, file: FileId) -> u64 {
        if self.files[file.0 as usize].inode.in_transaction {
            self.journal_commit()
        } else {
            0
        }
    }

    /// A commit: the ordered pages still cached are written back, but for
    /// those whose block delayed allocation has not given yet (the
    /// commit's writeback maps no block: ext4_journal_submit_inode_data_buffers()
    /// writes with `can_map` 0), and no file is in the transaction any
    /// more. Returns the pages written.
    pub(super) fn journal_commit(&mut self) -> u64 {
        let mut written = 0;
        for (file, index) in std::mem::take(&mut self.ordered_data) {
            let slot = &self.files[file.0 as usize];
            if !slot.allocated.contains(index) {
                continue;
            }
            if let Some(&pfn) = slot.pages.get(&index) {
                written += self.end_writeback(pfn) as u64;
            }
        }
        for slot in &mut self.files {
            slot.inode.in_transaction = false;
        }
        written
    }
}
