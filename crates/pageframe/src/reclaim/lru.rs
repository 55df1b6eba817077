//! The per-page state the reclaim layer keeps (owner, page flags) and the
//! per-node LRU lists threaded through it, as `struct lruvec` and the
//! `folio->lru` links are in the kernel.
//!
//! Owns: one `PageMeta` per PFN of the machine and one `Lruvec` per
//! node. Lists are doubly linked through `prev`/`next` PFNs; the head is
//! the most recently added page (`lruvec_add_folio()` adds with
//! list_add()), reclaim takes from the tail (`lru_to_folio()`). Each list
//! also counts its pages per zone type, as the kernel keeps
//! `NR_ZONE_LRU_BASE + lru` per zone (`lruvec_lru_size()`,
//! zone_reclaimable_pages()).
//!
//! Invariants (checked by `Lru::check`): a page is on at most one list, the
//! one its `lru` field names; walking each list from head to tail visits
//! exactly `counts[list]` pages whose links agree both ways, and
//! `zone_counts[zone][list]` of them in each zone; every page on a list has
//! an owner, and every owned page is on a list of its kind.

use crate::error::InvariantError;
use crate::reclaim::{FileId, Pid};
use crate::types::ZoneType;

/// No page: the end of a list.
const NIL: u64 = u64::MAX;

/// The four evictable LRU lists, in the kernel's `enum lru_list` order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LruList {
    /// `LRU_INACTIVE_ANON`.
    InactiveAnon = 0,
    /// `LRU_ACTIVE_ANON`.
    ActiveAnon = 1,
    /// `LRU_INACTIVE_FILE`.
    InactiveFile = 2,
    /// `LRU_ACTIVE_FILE`.
    ActiveFile = 3,
}

impl LruList {
    /// Every list, in order.
    pub const ALL: [LruList; 4] = [
        LruList::InactiveAnon,
        LruList::ActiveAnon,
        LruList::InactiveFile,
        LruList::ActiveFile,
    ];

    /// The inactive or active list of anon (`file == false`) or file pages.
    pub fn of(file: bool, active: bool) -> LruList {
        LruList::ALL[2 * file as usize + active as usize]
    }

    /// `is_file_lru()`.
    pub fn is_file(self) -> bool {
        matches!(self, LruList::InactiveFile | LruList::ActiveFile)
    }

    /// `is_active_lru()`.
    pub fn is_active(self) -> bool {
        matches!(self, LruList::ActiveAnon | LruList::ActiveFile)
    }

    /// The kernel's name of the list's node counter (`nr_inactive_file`).
    pub fn stat_name(self) -> &'static str {
        match self {
            LruList::InactiveAnon => "nr_inactive_anon",
            LruList::ActiveAnon => "nr_active_anon",
            LruList::InactiveFile => "nr_inactive_file",
            LruList::ActiveFile => "nr_active_file",
        }
    }
}

/// Who holds a page the reclaim layer knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// Not a page cache or anon page (free, or allocated by someone else).
    None,
    /// Page `index` of a file's page cache.
    File {
        /// The file.
        file: FileId,
        /// The page offset in the file.
        index: u64,
    },
    /// Virtual page `vpn` of a process's anonymous memory.
    Anon {
        /// The process.
        pid: Pid,
        /// The virtual page number.
        vpn: u64,
    },
}

/// `PG_referenced`.
pub(super) const REFERENCED: u8 = 1 << 0;
/// `PG_dirty`.
pub(super) const DIRTY: u8 = 1 << 1;
/// `PG_reclaim`: reclaim asked for writeback; rotate to the inactive tail
/// when it completes.
pub(super) const RECLAIM: u8 = 1 << 2;
/// The accessed ("young") bit of the page's PTE, for mapped (anon) pages.
pub(super) const YOUNG: u8 = 1 << 3;
/// `PG_readahead`: reaching this page cache page starts the next
/// readahead window.
pub(super) const READAHEAD: u8 = 1 << 4;
/// `PG_workingset`: the page was on an active list (deactivated by
/// reclaim, or refaulted as working set); its shadow says so.
pub(super) const WORKINGSET: u8 = 1 << 5;
/// `PG_locked`: a readahead page whose window is still being allocated
/// (its read not yet submitted); reclaim keeps it. Only inside a call.
pub(super) const LOCKED: u8 = 1 << 6;

/// What the reclaim layer knows of one PFN.
#[derive(Clone, Copy, Debug)]
pub(super) struct PageMeta {
    pub(super) owner: Owner,
    pub(super) lru: Option<LruList>,
    pub(super) node: u16,
    pub(super) zone: ZoneType,
    pub(super) flags: u8,
    prev: u64,
    next: u64,
}

impl PageMeta {
    const EMPTY: PageMeta = PageMeta {
        owner: Owner::None,
        lru: None,
        node: 0,
        zone: ZoneType::Dma,
        flags: 0,
        prev: NIL,
        next: NIL,
    };

    pub(super) fn test(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
}

/// One node's lists (`struct lruvec`).
#[derive(Clone, Debug)]
pub(super) struct Lruvec {
    head: [u64; 4],
    tail: [u64; 4],
    counts: [u64; 4],
    /// `counts` by zone type.
    zone_counts: [[u64; 4]; ZoneType::COUNT],
}

impl Lruvec {
    fn new() -> Lruvec {
        Lruvec {
            head: [NIL; 4],
            tail: [NIL; 4],
            counts: [0; 4],
            zone_counts: [[0; 4]; ZoneType::COUNT],
        }
    }
}

/// Every page's state and every node's lists.
pub(super) struct Lru {
    pages: Vec<PageMeta>,
    vecs: Vec<Lruvec>,
}

impl Lru {
    /// Pages `0..end_pfn` on `nodes` nodes, all unowned.
    pub(super) fn new(end_pfn: u64, nodes: usize) -> Lru {
        Lru {
            pages: vec![PageMeta::EMPTY; end_pfn as usize],
            vecs: vec![Lruvec::new(); nodes],
        }
    }

    pub(super) fn meta(&self, pfn: u64) -> &PageMeta {
        &self.pages[pfn as usize]
    }

    pub(super) fn meta_mut(&mut self, pfn: u64) -> &mut PageMeta {
        &mut self.pages[pfn as usize]
    }

    /// Pages on `list` of `node` (`lruvec_page_state(NR_LRU_BASE + lru)`).
    pub(super) fn count(&self, node: usize, list: LruList) -> u64 {
        self.vecs[node].counts[list as usize]
    }

    /// Pages on `list` of `node` in zones up to `highest_zone`
    /// (`lruvec_lru_size(lruvec, lru, zone_idx)`).
    pub(super) fn count_up_to(&self, node: usize, list: LruList, highest_zone: ZoneType) -> u64 {
        self.vecs[node].zone_counts[..=highest_zone.index()]
            .iter()
            .map(|counts| counts[list as usize])
            .sum()
    }

    /// Pages on `list` of `node` in zone type `zone`
    /// (`zone_page_state(zone, NR_ZONE_LRU_BASE + lru)`).
    pub(super) fn count_in_zone(&self, node: usize, list: LruList, zone: ZoneType) -> u64 {
        self.vecs[node].zone_counts[zone.index()][list as usize]
    }

    /// The oldest page of a list (`lru_to_folio()`).
    pub(super) fn tail(&self, node: usize, list: LruList) -> Option<u64> {
        let tail = self.vecs[node].tail[list as usize];
        (tail != NIL).then_some(tail)
    }

    /// The next older page on the same list.
    pub(super) fn prev(&self, pfn: u64) -> Option<u64> {
        let prev = self.pages[pfn as usize].prev;
        (prev != NIL).then_some(prev)
    }

    /// Takes ownership of a fresh page of `node`'s zone `zone` and puts it
    /// on `list`'s head (`folio_add_lru()`).
    pub(super) fn adopt(
        &mut self,
        pfn: u64,
        (node, zone): (u16, ZoneType),
        owner: Owner,
        list: LruList,
        flags: u8,
    ) {
        let meta = &mut self.pages[pfn as usize];
        meta.owner = owner;
        meta.node = node;
        meta.zone = zone;
        meta.flags = flags;
        self.add(pfn, list, false);
    }

    /// Takes a page off its list and forgets it (the page is being freed).
    pub(super) fn release(&mut self, pfn: u64) {
        self.del(pfn);
        self.pages[pfn as usize] = PageMeta::EMPTY;
    }

    /// Moves a page to the head (or tail) of `list`.
    pub(super) fn move_to(&mut self, pfn: u64, list: LruList, at_tail: bool) {
        self.del(pfn);
        self.add(pfn, list, at_tail);
    }

    /// `lruvec_add_folio()` / `lruvec_add_folio_tail()`.
    fn add(&mut self, pfn: u64, list: LruList, at_tail: bool) {
        let node = self.pages[pfn as usize].node as usize;
        let vec = &mut self.vecs[node];
        let at = list as usize;
        let meta = &mut self.pages[pfn as usize];
        meta.lru = Some(list);
        if at_tail {
            meta.next = NIL;
            meta.prev = vec.tail[at];
        } else {
            meta.prev = NIL;
            meta.next = vec.head[at];
        }
        let (prev, next) = (meta.prev, meta.next);
        match prev {
            NIL => vec.head[at] = pfn,
            prev => self.pages[prev as usize].next = pfn,
        }
        match next {
            NIL => vec.tail[at] = pfn,
            next => self.pages[next as usize].prev = pfn,
        }
        vec.counts[at] += 1;
        vec.zone_counts[self.pages[pfn as usize].zone.index()][at] += 1;
    }

    /// `lruvec_del_folio()`; nothing when the page is on no list.
    fn del(&mut self, pfn: u64) {
        let meta = self.pages[pfn as usize];
        let Some(list) = meta.lru else { return };
        let vec = &mut self.vecs[meta.node as usize];
        let at = list as usize;
        match meta.prev {
            NIL => vec.head[at] = meta.next,
            prev => self.pages[prev as usize].next = meta.next,
        }
        match meta.next {
            NIL => vec.tail[at] = meta.prev,
            next => self.pages[next as usize].prev = meta.prev,
        }
        vec.counts[at] -= 1;
        vec.zone_counts[meta.zone.index()][at] -= 1;
        let meta = &mut self.pages[pfn as usize];
        meta.lru = None;
        meta.prev = NIL;
        meta.next = NIL;
    }

    /// The PFNs of a list from head (newest) to tail (oldest).
    pub(super) fn walk(&self, node: usize, list: LruList) -> Vec<u64> {
        let mut out = Vec::new();
        let mut at = self.vecs[node].head[list as usize];
        while at != NIL && out.len() as u64 <= self.vecs[node].counts[list as usize] {
            out.push(at);
            at = self.pages[at as usize].next;
        }
        out
    }

    /// Owned pages: (file pages, anon pages) counted over the page array.
    pub(super) fn owned(&self) -> (u64, u64) {
        let mut counts = (0, 0);
        for meta in &self.pages {
            match meta.owner {
                Owner::File { .. } => counts.0 += 1,
                Owner::Anon { .. } => counts.1 += 1,
                Owner::None => {}
            }
        }
        counts
    }

    /// The invariants of the module header.
    pub(super) fn check(&self) -> Result<(), InvariantError> {
        let fail = |what: String| Err(InvariantError(what));
        let mut listed = 0u64;
        for (node, vec) in self.vecs.iter().enumerate() {
            for list in LruList::ALL {
                let pages = self.walk(node, list);
                if pages.len() as u64 != vec.counts[list as usize] {
                    return fail(format!(
                        "node {node} {}: {} pages listed, count {}",
                        list.stat_name(),
                        pages.len(),
                        vec.counts[list as usize]
                    ));
                }
                let mut prev = NIL;
                let mut in_zone = [0u64; ZoneType::COUNT];
                for &pfn in &pages {
                    let meta = &self.pages[pfn as usize];
                    in_zone[meta.zone.index()] += 1;
                    let kind_ok = match meta.owner {
                        Owner::File { .. } => list.is_file(),
                        Owner::Anon { .. } => !list.is_file(),
                        Owner::None => false,
                    };
                    if meta.lru != Some(list) || meta.prev != prev || meta.node as usize != node {
                        return fail(format!(
                            "PFN {pfn}: links or list of {} broken",
                            list.stat_name()
                        ));
                    }
                    if !kind_ok {
                        return fail(format!(
                            "PFN {pfn} on {} has owner {:?}",
                            list.stat_name(),
                            meta.owner
                        ));
                    }
                    prev = pfn;
                }
                if prev != vec.tail[list as usize] {
                    return fail(format!("node {node} {}: tail mismatch", list.stat_name()));
                }
                let counted = vec.zone_counts.map(|counts| counts[list as usize]);
                if counted != in_zone {
                    return fail(format!(
                        "node {node} {}: {in_zone:?} pages per zone listed, counts {counted:?}",
                        list.stat_name()
                    ));
                }
                listed += pages.len() as u64;
            }
        }
        let (file, anon) = self.owned();
        if file + anon != listed {
            return fail(format!(
                "{file} file + {anon} anon pages owned, {listed} on LRU lists"
            ));
        }
        Ok(())
    }
}
