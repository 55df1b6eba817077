//! The shadow-node shrinker: the page cache's tree nodes that hold shadow
//! entries and no page, listed per node in the order they came to hold only
//! shadows (the `shadow_nodes` list_lru), counted in `workingset_nodes`,
//! and pruned under reclaim once they are more than an eighth of the
//! node's LRU pages: shadows beyond that describe refault distances longer
//! than any active list could be, and their nodes cost memory. mirrors
//! workingset_update_node(), count_shadow_nodes() and
//! scan_shadow_nodes()/shadow_lru_isolate() of mm/workingset.c and
//! do_shrink_slab() of mm/shrinker.c (6.12), which shrink_node_memcgs()
//! runs after each shrink_lruvec().
//!
//! A file's tree node is a block of `XA_CHUNK_SIZE` (64) offsets; a file
//! whose only entry is at offset 0 keeps it in the tree's root, not in a
//! node. A listed node stays where it is while it holds only shadows, and
//! leaves the list when a page is added to it or its last shadow goes.
//! Pruning takes nodes from the oldest end and deletes every shadow in
//! them (`workingset_nodereclaim`, `slabs_scanned` for what the shrinker
//! scanned). The shrinker has no seek cost (`seeks` 0): each call aims at
//! half the excess, plus work deferred from calls that did less than a
//! batch (SHRINK_BATCH), at most twice the excess.
//!
//! A node is listed on the NUMA node of the page whose shadow it holds
//! first (the kernel lists it on the node its memory came from, which is
//! where the task that first filled it ran). One memory cgroup at most, so
//! one list per node; the LRU pages it is measured against are the
//! cgroup's as last flushed (`memcg`), else exact — as a kernel with
//! memory cgroups counts them (the root's for a task outside any), less
//! the cgroup's slab pages it also adds, which this model does not have
//! (a kernel without memory cgroups measures the node's present pages).
//!
//! Invariants (checked by `check_shadow_nodes`): a file block is listed
//! exactly when it holds only shadows (and is a node), once, on one list.

use super::{FileId, Mm, ReclaimEvent};
use crate::error::InvariantError;
use std::collections::BTreeMap;

/// Offsets per tree node (`XA_CHUNK_SIZE`).
pub(super) const XA_CHUNK_SIZE: u64 = 64;
/// `XA_CHUNK_SHIFT`: shadow nodes are kept up to LRU pages >> (6 - 3).
const XA_CHUNK_SHIFT: u32 = 6;
/// `SHRINK_BATCH`: objects a shrinker scans per call of its scan.
const SHRINK_BATCH: u64 = 128;

/// The offsets of tree block `block` (a block of a `u64` offset: the
/// last block ends at `u64::MAX`).
fn block_offsets(block: u64) -> std::ops::RangeInclusive<u64> {
    let first = block * XA_CHUNK_SIZE;
    first..=first + (XA_CHUNK_SIZE - 1)
}

/// The listed nodes and the shrinker's state.
#[derive(Clone, Debug, Default)]
pub(super) struct ShadowNodes {
    /// Per NUMA node, the listed (file, block) by the order they joined.
    lists: Vec<BTreeMap<u64, (FileId, u64)>>,
    /// Each listed (file, block): its list and its place in it.
    listed: BTreeMap<(FileId, u64), (u16, u64)>,
    /// The next place to take.
    next: u64,
    /// Per NUMA node, the shrinker's deferred scan count (`nr_deferred`).
    deferred: Vec<u64>,
}

impl ShadowNodes {
    pub(super) fn new(nodes: usize) -> ShadowNodes {
        ShadowNodes {
            lists: vec![BTreeMap::new(); nodes],
            deferred: vec![0; nodes],
            ..ShadowNodes::default()
        }
    }

    /// `workingset_nodes`: the listed nodes.
    pub(super) fn count(&self) -> u64 {
        self.listed.len() as u64
    }

    fn add(&mut self, key: (FileId, u64), node: u16) {
        let at = self.next;
        self.next += 1;
        self.lists[node as usize].insert(at, key);
        self.listed.insert(key, (node, at));
    }

    fn remove(&mut self, key: (FileId, u64)) {
        if let Some((node, at)) = self.listed.remove(&key) {
            self.lists[node as usize].remove(&at);
        }
    }
}

impl Mm<'_> {
    /// workingset_update_node() for the blocks of `file` whose entries at
    /// offsets `range` changed: a listed block there may have stopped
    /// holding only shadows, the range's first and last blocks may have
    /// started to, and block 0 turns into a node, or back, as the file's
    /// other entries come and go.
    pub(super) fn update_shadow_nodes(
        &mut self,
        file: FileId,
        range: std::ops::RangeInclusive<u64>,
    ) {
        let (first, last) = (range.start() / XA_CHUNK_SIZE, range.end() / XA_CHUNK_SIZE);
        if first == last {
            // One block (a page added or removed): it, and block 0 only
            // when that holds shadows (the one that can turn into a node
            // or back as other blocks change).
            self.update_shadow_node(file, first);
            let slot = &self.files[file.0 as usize];
            let block_zero_shadows = slot
                .shadows
                .first_key_value()
                .is_some_and(|(&index, _)| index < XA_CHUNK_SIZE);
            if first != 0 && block_zero_shadows {
                self.update_shadow_node(file, 0);
            }
            return;
        }
        let mut blocks: Vec<u64> = self
            .shadow_nodes
            .listed
            .range((file, first)..=(file, last))
            .map(|(&(_, block), _)| block)
            .collect();
        blocks.extend([first, last, 0]);
        blocks.sort_unstable();
        blocks.dedup();
        for block in blocks {
            self.update_shadow_node(file, block);
        }
    }

    /// Lists or unlists one block of `file` by what it holds now.
    fn update_shadow_node(&mut self, file: FileId, block: u64) {
        let key = (file, block);
        match self.shadow_only_node(file, block) {
            Some(node) if !self.shadow_nodes.listed.contains_key(&key) => {
                self.shadow_nodes.add(key, node);
            }
            Some(_) => {}
            None => self.shadow_nodes.remove(key),
        }
    }

    /// The NUMA node to list block `block` of `file` on, when it is a tree
    /// node holding shadows and no page.
    fn shadow_only_node(&self, file: FileId, block: u64) -> Option<u16> {
        let slot = &self.files[file.0 as usize];
        let offsets = block_offsets(block);
        let (_, shadow) = slot.shadows.range(offsets.clone()).next()?;
        if slot.pages.range(offsets).next().is_some() {
            return None;
        }
        // An entry at offset 0 alone lives in the tree's root.
        let last_entry = slot
            .shadows
            .keys()
            .next_back()
            .max(slot.pages.keys().next_back());
        (last_entry != Some(&0)).then_some(shadow.node())
    }

    /// shrink_slab() of the shadow-node shrinker on `node` at `priority`
    /// (do_shrink_slab() with `seeks` 0): the excess over the node's limit
    /// (count_shadow_nodes()), half of it plus the deferred work scanned in
    /// batches, the rest deferred. Returns the nodes freed.
    pub(super) fn shrink_shadow_nodes(&mut self, node: usize, priority: u32) -> u64 {
        let freeable = self.shadow_node_excess(node);
        if freeable == 0 {
            return 0;
        }
        let deferred = std::mem::take(&mut self.shadow_nodes.deferred[node]);
        let delta = freeable / 2;
        let mut total_scan = ((deferred >> priority) + delta).min(2 * freeable);
        let (mut scanned, mut freed) = (0u64, 0u64);
        while total_scan >= SHRINK_BATCH || total_scan >= freeable {
            let nr_to_scan = total_scan.min(SHRINK_BATCH);
            freed += self.scan_shadow_nodes(node, nr_to_scan);
            self.counters.add(ReclaimEvent::SlabsScanned, nr_to_scan);
            total_scan -= nr_to_scan;
            scanned += nr_to_scan;
        }
        self.shadow_nodes.deferred[node] =
            (deferred + delta).saturating_sub(scanned).min(2 * freeable);
        freed
    }

    /// count_shadow_nodes(): how many more shadow-only nodes `node` lists
    /// than an eighth of its LRU pages (one node per 8 pages, 64 entries
    /// each: a density of 1/8 of the eligible refaults at worst).
    fn shadow_node_excess(&self, node: usize) -> u64 {
        let nodes = self.shadow_nodes.lists[node].len() as u64;
        let (active_file, inactive_file) = self.stat_lists(node, true);
        let (active_anon, inactive_anon) = self.stat_lists(node, false);
        let pages = active_file + inactive_file + active_anon + inactive_anon;
        nodes.saturating_sub(pages >> (XA_CHUNK_SHIFT - 3))
    }

    /// scan_shadow_nodes(): deletes up to `nr` listed nodes of `node`,
    /// oldest first, with every shadow in them (shadow_lru_isolate()).
    fn scan_shadow_nodes(&mut self, node: usize, nr: u64) -> u64 {
        let oldest: Vec<(FileId, u64)> = self.shadow_nodes.lists[node]
            .values()
            .take(nr as usize)
            .copied()
            .collect();
        for &(file, block) in &oldest {
            self.shadow_nodes.remove((file, block));
            let offsets = block_offsets(block);
            let shadows = &mut self.files[file.0 as usize].shadows;
            let doomed: Vec<u64> = shadows.range(offsets).map(|(&index, _)| index).collect();
            for index in doomed {
                shadows.remove(&index);
            }
            self.counters.add(ReclaimEvent::WorkingsetNodereclaim, 1);
            // Without the block's shadows, block 0 may stop being a node.
            self.update_shadow_node(file, 0);
        }
        oldest.len() as u64
    }

    /// The invariants of the module header.
    pub(super) fn check_shadow_nodes(&self) -> Result<(), InvariantError> {
        let mut expected = BTreeMap::new();
        for (at, slot) in self.files.iter().enumerate() {
            let file = FileId(at as u32);
            let mut blocks: Vec<u64> = slot
                .shadows
                .keys()
                .map(|&index| index / XA_CHUNK_SIZE)
                .collect();
            blocks.dedup();
            for block in blocks {
                if self.shadow_only_node(file, block).is_some() {
                    expected.insert((file, block), ());
                }
            }
        }
        let listed: Vec<_> = self.shadow_nodes.listed.keys().copied().collect();
        let on_lists: usize = self.shadow_nodes.lists.iter().map(BTreeMap::len).sum();
        if listed != expected.keys().copied().collect::<Vec<_>>() || on_lists != listed.len() {
            return Err(InvariantError(format!(
                "{} shadow-only nodes listed ({on_lists} on the lists), {} hold only shadows",
                listed.len(),
                expected.len()
            )));
        }
        Ok(())
    }
}
