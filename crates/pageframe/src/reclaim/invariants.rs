//! The reclaim layer's invariants: pages conserved (every page is free,
//! page cache, anon, or other, exactly once), LRU lists consistent with
//! their counts, files and processes consistent with their pages, extent
//! maps well formed and within their file, the readahead mark on page
//! cache pages only, no page left locked, shadow entries where no page is
//! (`workingset`), the memory cgroup within its limit.

use super::lru::{Owner, DIRTY, LOCKED, READAHEAD};
use super::{FileId, Mm, Pid};
use crate::error::InvariantError;

impl Mm<'_> {
    /// Checks the allocator's invariants (free + per-CPU + allocated ==
    /// managed in every zone), then that the page cache, anon and other
    /// pages together are at most the allocated ones (the rest belong to
    /// callers of the bare allocator), that the LRU lists hold exactly the
    /// page cache and anon pages, and that each file's and process's pages
    /// name it as their owner.
    pub fn check_invariants(&self) -> Result<(), InvariantError> {
        self.allocator.check_invariants()?;
        self.lru.check()?;
        let fail = |what: String| Err(InvariantError(what));
        let (file, anon) = self.lru.owned();
        if file != self.nr_file || anon != self.nr_anon {
            return fail(format!(
                "{file} file and {anon} anon pages owned, counters say {} and {}",
                self.nr_file, self.nr_anon
            ));
        }
        if file + anon > self.memcg_max {
            return fail(format!(
                "{} pages charged to the memory cgroup, over its limit {}",
                file + anon,
                self.memcg_max
            ));
        }
        let handed_out: u64 = self.other_pages.values().map(|order| 1u64 << order.0).sum();
        if handed_out != self.nr_other {
            return fail(format!(
                "{} blocks of {handed_out} pages handed out, {} counted",
                self.other_pages.len(),
                self.nr_other
            ));
        }
        if let Some(pfn) = self
            .other_pages
            .keys()
            .find(|&&pfn| self.owner(pfn) != Owner::None)
        {
            return fail(format!(
                "handed-out PFN {pfn} is also a page cache or anon page"
            ));
        }
        let mut blocks = self.other_pages.iter().peekable();
        while let Some((&pfn, order)) = blocks.next() {
            let end = pfn.saturating_add(1u64 << order.0);
            if let Some((&next, _)) = blocks.peek() {
                if next < end {
                    return fail(format!("handed-out blocks at PFN {pfn} and {next} overlap"));
                }
            }
        }
        // Every LRU page records the node and zone its PFN is in (the
        // lists and per-zone counts are kept by them).
        let owned_pfns = self
            .files
            .iter()
            .flat_map(|slot| slot.pages.values())
            .chain(
                self.processes
                    .iter()
                    .flat_map(|process| process.pages.values()),
            );
        for &pfn in owned_pfns {
            let meta = self.lru.meta(pfn);
            if (meta.node, meta.zone) != self.place_of(pfn) {
                return fail(format!(
                    "PFN {pfn} recorded on node {} zone {:?}, is in {:?}",
                    meta.node,
                    meta.zone,
                    self.place_of(pfn)
                ));
            }
        }
        let allocated = self.allocator.nr_allocated_pages();
        if file + anon + self.nr_other > allocated {
            return fail(format!(
                "{file} file + {anon} anon + {} other pages, only {allocated} allocated",
                self.nr_other
            ));
        }
        let page_shift = self.allocator.layout().page_shift as u32;
        let (mut cached, mut dirty) = (0u64, 0u64);
        for (at, slot) in self.files.iter().enumerate() {
            let id = FileId(at as u32);
            if slot.deleted && (!slot.pages.is_empty() || slot.size != 0) {
                return fail(format!("deleted file {id} keeps pages or a size"));
            }
            let limit = slot.size.div_ceil(1 << page_shift);
            for extents in [&slot.data, &slot.allocated] {
                extents
                    .check()
                    .map_err(|what| InvariantError(format!("file {id}: {what}")))?;
            }
            if slot.data.end() > limit {
                return fail(format!(
                    "file {id} has data at page {} beyond its size {}",
                    slot.data.end() - 1,
                    slot.size
                ));
            }
            let mut file_dirty = 0u64;
            for (&index, &pfn) in &slot.pages {
                let meta = self.lru.meta(pfn);
                if meta.test(LOCKED) {
                    return fail(format!("file {id} page {index} left locked"));
                }
                if meta.owner != (Owner::File { file: id, index }) {
                    return fail(format!(
                        "file {id} page {index}: PFN {pfn} owned by {:?}",
                        meta.owner
                    ));
                }
                if index >= limit {
                    return fail(format!(
                        "file {id} page {index} beyond its size {}",
                        slot.size
                    ));
                }
                file_dirty += meta.test(DIRTY) as u64;
            }
            if file_dirty != slot.dirty {
                return fail(format!(
                    "file {id} has {file_dirty} dirty pages, counts {}",
                    slot.dirty
                ));
            }
            dirty += file_dirty;
            cached += slot.pages.len() as u64;
        }
        if cached != self.nr_file || dirty != self.nr_dirty {
            return fail(format!(
                "files hold {cached} pages ({dirty} dirty), counters say {} ({})",
                self.nr_file, self.nr_dirty
            ));
        }
        self.check_shadows()?;
        self.check_shadow_nodes()?;
        let mut mapped = 0u64;
        for (at, process) in self.processes.iter().enumerate() {
            let pid = Pid(at as u32);
            if process.exited && !process.pages.is_empty() {
                return fail(format!("exited process {pid} keeps pages"));
            }
            for (&vpn, &pfn) in &process.pages {
                let meta = self.lru.meta(pfn);
                if meta.owner != (Owner::Anon { pid, vpn }) {
                    return fail(format!("process {pid} page {vpn}: PFN {pfn} not its own"));
                }
                if meta.test(READAHEAD) {
                    return fail(format!("anon page {vpn} of {pid} has the readahead mark"));
                }
            }
            mapped += process.pages.len() as u64;
        }
        if mapped != self.nr_anon {
            return fail(format!(
                "processes hold {mapped} pages, counter says {}",
                self.nr_anon
            ));
        }
        Ok(())
    }
}
