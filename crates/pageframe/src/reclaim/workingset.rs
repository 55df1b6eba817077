//! Refault detection: the page cache remembers what reclaim evicted, so
//! that a page read back soon enough goes straight to the active list.
//! mirrors mm/workingset.c (6.12, the classic two-list LRU) and its
//! callers: workingset_eviction() in __remove_mapping(), workingset_refault()
//! in filemap_add_folio(), workingset_activation() in folio_mark_accessed(),
//! the aging in move_folios_to_lru(), and snapshot_refaults() with
//! prepare_scan_control()'s use of it.
//!
//! Each node's lruvec counts `nonresident_age`: it grows by one for every
//! page reclaim evicts from the file cache and every page activated (by
//! reclaim, by a second access, or by a refault), so that it advances as
//! the inactive list turns over. An evicted page cache page leaves a shadow
//! entry in its file at its offset: the node, the age at eviction, and
//! whether the page had been active (`PG_workingset`). When a read brings
//! the page back, the refault distance is the age now less the age then;
//! if it is at most the node's active file list, the page would have stayed
//! resident had the active list given it room, and it is added active
//! (`workingset_activate_file`), restored as working set when it had been
//! active (`workingset_restore_file`). Every such read counts
//! `workingset_refault_file`. Writes never refault (`__GFP_WRITE`): data
//! about to be overwritten is not working set. With no swap, anon pages are
//! never evicted and the working set is the active file list alone.
//!
//! Reclaim deactivates the active file list when refaults activated pages
//! since the last reclaim run on the node (a new working set is forming) or
//! when the inactive list is low; the snapshot is taken at the end of each
//! kswapd run, direct reclaim and memory cgroup reclaim (one snapshot per
//! node: the kernel keeps one per target lruvec, the root's for global
//! reclaim and the cgroup's for its own). In a memory cgroup both tests,
//! and the refault distance's comparison with the active list, read the
//! cgroup's statistics as last flushed (`memcg`).
//!
//! Shadows leave with their range on truncation, deletion and
//! `POSIX_FADV_DONTNEED` (mapping_try_invalidate() clears them), and are
//! replaced by any page added at their offset.
//!
//! Shadows are pruned by the shadow-node shrinker (`shadow_nodes`) once
//! the tree nodes holding only shadows exceed an eighth of the node's LRU
//! pages.
//!
//! Simplification: `bucket_order` is 0 (the kernel needs more only when
//! memory has more pages than the 40-odd bits a 64-bit shadow has room
//! for).
//!
//! Invariants (checked by `check_shadows`): a shadow lies at an offset of
//! a live file below its size, where no page is cached; its node exists
//! and its age is not ahead of that node's.

use super::lru::WORKINGSET;
use super::{FileId, Mm};
use crate::error::InvariantError;
use std::collections::BTreeMap;

/// What an evicted page leaves in its file's slot (a shadow entry).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Shadow {
    node: u16,
    /// The node's `nonresident_age` when the page was evicted.
    eviction: u64,
    /// The page had been active (`PG_workingset`).
    workingset: bool,
}

impl Shadow {
    /// The node the page was evicted from.
    pub(super) fn node(&self) -> u16 {
        self.node
    }
}

/// A file's shadow entries by page offset.
pub(super) type Shadows = BTreeMap<u64, Shadow>;

/// One node's refault state (in `struct lruvec` and its node stats).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WorkingsetStats {
    /// `lruvec->nonresident_age`.
    pub nonresident_age: u64,
    /// `workingset_refault_file`: pages read back that had a shadow.
    pub refault_file: u64,
    /// `workingset_activate_file`: refaults close enough to be activated.
    pub activate_file: u64,
    /// `workingset_restore_file`: activated refaults that had been active.
    pub restore_file: u64,
    /// `lruvec->refaults[WORKINGSET_FILE]`: `activate_file` at the end of
    /// the last reclaim run on the node.
    pub activate_file_snapshot: u64,
}

impl Mm<'_> {
    /// The refault counters and age of `node` (zeros for a node that does
    /// not exist).
    pub fn workingset(&self, node: crate::NodeId) -> WorkingsetStats {
        self.workingset
            .get(node.index())
            .copied()
            .unwrap_or_default()
    }

    /// workingset_age_nonresident(): `pages` more pages aged on `node`.
    pub(super) fn age_nonresident(&mut self, node: u16, pages: u64) {
        self.workingset[node as usize].nonresident_age += pages;
    }

    /// workingset_eviction(): the shadow reclaim leaves for `pfn`, a page
    /// cache page being evicted; ages its node by the page.
    pub(super) fn workingset_eviction(&mut self, pfn: u64) -> Shadow {
        let meta = *self.lru.meta(pfn);
        let shadow = Shadow {
            node: meta.node,
            eviction: self.workingset[meta.node as usize].nonresident_age,
            workingset: meta.test(WORKINGSET),
        };
        self.age_nonresident(meta.node, 1);
        shadow
    }

    /// workingset_refault() for a page being added to the page cache on
    /// `node` where `shadow` was (before it joins an LRU list): counts the
    /// refault on `node` and, when the refault distance (measured on the
    /// node of the eviction) is at most that node's active file list,
    /// counts an activation and ages `node`. Returns the page flags the
    /// page starts with and whether it goes on the active list.
    pub(super) fn workingset_refault(&mut self, node: u16, shadow: Shadow) -> (u8, bool) {
        self.workingset[node as usize].refault_file += 1;
        let evicted_on = shadow.node as usize;
        let distance = self.workingset[evicted_on].nonresident_age - shadow.eviction;
        let (workingset_size, _) = self.stat_lists(evicted_on, true);
        if distance > workingset_size {
            return (0, false);
        }
        self.age_nonresident(node, 1);
        let stats = &mut self.workingset[node as usize];
        stats.activate_file += 1;
        if shadow.workingset {
            stats.restore_file += 1;
            return (WORKINGSET, true);
        }
        (0, true)
    }

    /// snapshot_refaults(): reclaim on `node` ends; refault activations
    /// from now on count as new.
    pub(super) fn snapshot_refaults(&mut self, node: usize) {
        self.workingset[node].activate_file_snapshot = self.stat_activate_file(node);
    }

    /// prepare_scan_control()'s test: refaults activated pages on `node`
    /// since its last reclaim run.
    pub(super) fn refaults_since_snapshot(&self, node: usize) -> bool {
        self.stat_activate_file(node) != self.workingset[node].activate_file_snapshot
    }

    /// Removes the shadows of `file` at offsets `range`
    /// (clear_shadow_entries(), truncate_inode_pages_range()).
    pub(super) fn clear_shadows(&mut self, file: FileId, range: std::ops::RangeInclusive<u64>) {
        let shadows = &mut self.files[file.0 as usize].shadows;
        if range.is_empty() || shadows.is_empty() {
            return;
        }
        let doomed: Vec<u64> = shadows
            .range(range.clone())
            .map(|(&index, _)| index)
            .collect();
        for index in doomed {
            shadows.remove(&index);
        }
        self.update_shadow_nodes(file, range);
    }

    /// The invariants of the module header.
    pub(super) fn check_shadows(&self) -> Result<(), InvariantError> {
        let shift = self.page_shift();
        for (at, slot) in self.files.iter().enumerate() {
            let limit = slot.size.div_ceil(1 << shift);
            for (&index, shadow) in &slot.shadows {
                let what = if slot.deleted {
                    Some("in a deleted file".to_string())
                } else if index >= limit {
                    Some(format!("beyond the size {}", slot.size))
                } else if slot.pages.contains_key(&index) {
                    Some("where a page is cached".to_string())
                } else if self
                    .workingset
                    .get(shadow.node as usize)
                    .is_none_or(|stats| shadow.eviction > stats.nonresident_age)
                {
                    Some(format!("from node {} at a future age", shadow.node))
                } else {
                    None
                };
                if let Some(what) = what {
                    return Err(InvariantError(format!(
                        "file {at}: shadow at page {index} {what}"
                    )));
                }
            }
        }
        Ok(())
    }
}
