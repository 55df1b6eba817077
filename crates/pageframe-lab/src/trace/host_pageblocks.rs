//! Pageblocks of ours taken whole for the host's pageblocks that hold
//! frames the trace shows on per-CPU lists at its start
//! ([`super::host_pcp::plan_host_pcp`]): each traced frame goes to its host
//! offset, so that two listed frames are buddies here when they were there
//! (on any CPU's lists), and what they merge with when drained is what
//! they merged with on the host, as far as the trace shows it.
//!
//! A host pageblock gets one of ours only if it holds two traced frames or
//! more: a frame alone has no listed buddy to keep, and a whole pageblock
//! for it would keep spare memory from the other lists. The pages no
//! traced frame takes are lent to blocks that find no other spare memory
//! while the traced lists are planned ([`HostPageblocks::take_unused`]),
//! and are given back to the spare memory once they are
//! ([`HostPageblocks::give_back`]) — but each pageblock keeps its last
//! unused page held for good, so that it never comes back to the buddy
//! lists whole (its buddy may be a free block the host showed).
//!
//! Invariants: a page of a mapped pageblock is taken at most once
//! (`used`), `unused` counts the pages not taken, and at least one is
//! never taken (neither [`HostPageblocks::map`] nor
//! [`HostPageblocks::take_unused`] takes a pageblock's last unused page).

use super::host_free::HostFreeStart;
use pageframe::{MigrateType, Pfn};
use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Key: (migratetype, host pageblock number).
type Key = (u8, u64);

/// One pageblock of ours taken for a host pageblock.
struct MappedPageblock {
    /// Its first PFN.
    base: u64,
    /// Our zone (an index of `zone_snapshots()`).
    zone: usize,
    /// Which of its pages a listed block took.
    used: Vec<bool>,
    /// How many of them none took.
    unused: usize,
    /// No page below it is unused.
    low: usize,
}

impl MappedPageblock {
    /// Marks `pages` pages from `offset` taken, if none is.
    fn claim(&mut self, offset: usize, pages: usize) -> bool {
        let Some(run) = self.used.get_mut(offset..offset.saturating_add(pages)) else {
            return false;
        };
        if run.iter().any(|&used| used) {
            return false;
        }
        run.fill(true);
        self.unused -= pages;
        true
    }

    /// The page held for good: the last one none took.
    fn held(&self) -> Option<usize> {
        self.used.iter().rposition(|&used| !used)
    }
}

/// The host pageblocks mapped so far, and the traced frames in each.
pub struct HostPageblocks {
    mapped: BTreeMap<Key, MappedPageblock>,
    /// Traced frames per key.
    framed: HashMap<Key, u32>,
    /// Pages per pageblock.
    block_pages: u64,
}

impl HostPageblocks {
    /// Counts the traced frames (`(migratetype, host PFN)`) per host
    /// pageblock of `block_pages` pages; a frame listed twice (the
    /// inference saw it on two lists) counts once.
    pub fn new(frames: impl IntoIterator<Item = (u8, u64)>, block_pages: u64) -> HostPageblocks {
        let distinct: BTreeSet<(u8, u64)> = frames.into_iter().collect();
        let mut framed: HashMap<Key, u32> = HashMap::new();
        for (migratetype, host_pfn) in distinct {
            *framed
                .entry((migratetype, host_pfn / block_pages))
                .or_default() += 1;
        }
        HostPageblocks {
            mapped: BTreeMap::new(),
            framed,
            block_pages,
        }
    }

    /// Our frame for a traced block of `2^order` pages at `host_pfn` on a
    /// list of `migratetype` in our zone `zone`: at its host offset in the
    /// pageblock of ours for its host pageblock (taken whole from `free`
    /// the first time). `None` when its host pageblock holds no other
    /// traced frame, when its pageblock of ours is in another zone, when
    /// another block took its frames or they are the pageblock's last
    /// unused ones, or when no pageblock is left.
    pub fn map(
        &mut self,
        free: &mut HostFreeStart,
        zone: usize,
        migratetype: u8,
        order: u8,
        host_pfn: u64,
    ) -> Option<Pfn> {
        let kind = MigrateType::from_index(usize::from(migratetype))?;
        let key = (migratetype, host_pfn / self.block_pages);
        if self.framed.get(&key).is_none_or(|&frames| frames < 2) {
            return None;
        }
        let block = match self.mapped.entry(key) {
            Entry::Occupied(block) => block.into_mut(),
            Entry::Vacant(vacant) => {
                let base = free.take_pageblock(zone, kind)?.0;
                vacant.insert(MappedPageblock {
                    base,
                    zone,
                    used: vec![false; self.block_pages as usize],
                    unused: self.block_pages as usize,
                    low: 0,
                })
            }
        };
        let offset = (host_pfn % self.block_pages) as usize;
        let pages = 1usize << order;
        // The last unused page stays held, whoever asks.
        (block.zone == zone && block.unused > pages && block.claim(offset, pages))
            .then(|| Pfn(block.base + offset as u64))
    }

    /// An aligned block of `2^order` pages no traced frame took, from the
    /// pageblocks of `zone` mapped for `migratetype`, each keeping its last
    /// unused page held: its first PFN, marked taken.
    pub fn take_unused(&mut self, zone: usize, migratetype: u8, order: u8) -> Option<Pfn> {
        let pages = 1usize << order;
        self.mapped
            .range_mut((migratetype, 0)..=(migratetype, u64::MAX))
            .map(|(_, block)| block)
            .filter(|block| block.zone == zone && block.unused > pages)
            .find_map(|block| {
                let held = block.held()?;
                while block.used.get(block.low).is_some_and(|&used| used) {
                    block.low += 1;
                }
                let from = block.low - block.low % pages;
                let offset = (from..held).step_by(pages).find(|&offset| {
                    offset + pages <= held
                        && block.used[offset..offset + pages].iter().all(|&used| !used)
                })?;
                block
                    .claim(offset, pages)
                    .then(|| Pfn(block.base + offset as u64))
            })
    }

    /// Gives the pages no block took back to `free`'s spare memory, but
    /// for each pageblock's last unused one; consumed, so that nothing is
    /// lent or mapped from them afterwards.
    pub fn give_back(self, free: &mut HostFreeStart) {
        for ((zone, migratetype), runs) in self.unused_ranges() {
            if let Some(kind) = MigrateType::from_index(usize::from(migratetype)) {
                free.give_back(zone, kind, runs);
            }
        }
    }

    /// Per zone and migratetype (so that each spare list is sorted once),
    /// the runs of pages no block took, each pageblock's last unused page
    /// left out.
    fn unused_ranges(&self) -> BTreeMap<(usize, u8), Vec<std::ops::Range<u64>>> {
        let mut runs: BTreeMap<(usize, u8), Vec<std::ops::Range<u64>>> = BTreeMap::new();
        for (&(migratetype, _), block) in &self.mapped {
            let Some(held) = block.held() else {
                continue;
            };
            runs.entry((block.zone, migratetype)).or_default().extend(
                unused_runs(&block.used[..held])
                    .map(|run| block.base + run.start as u64..block.base + run.end as u64),
            );
        }
        runs
    }
}

/// The runs of unused pages in `used`, lowest first.
fn unused_runs(used: &[bool]) -> impl Iterator<Item = std::ops::Range<usize>> + '_ {
    let mut at = 0;
    std::iter::from_fn(move || {
        let start = at + used.get(at..)?.iter().position(|&used| !used)?;
        let end = used[start..]
            .iter()
            .position(|&used| used)
            .map_or(used.len(), |len| start + len);
        at = end;
        Some(start..end)
    })
}

#[cfg(test)]
mod tests {
    use super::{unused_runs, HostPageblocks, MappedPageblock};

    /// Traced frames keep their offsets, a lone frame is not mapped, lent
    /// and given-back pages never include the pageblock's last unused one.
    #[test]
    fn a_mapped_pageblock_keeps_one_page_held() {
        let movable = 1u8;
        let mut blocks =
            HostPageblocks::new([(movable, 1000), (movable, 1001), (movable, 5000)], 8);
        assert_eq!(blocks.framed.get(&(movable, 125)), Some(&2));
        assert_eq!(blocks.framed.get(&(movable, 625)), Some(&1));
        // Mapped by hand: the spare memory is HostFreeStart's to give.
        blocks.mapped.insert(
            (movable, 125),
            MappedPageblock {
                base: 64,
                zone: 0,
                used: vec![false; 8],
                unused: 8,
                low: 0,
            },
        );
        let block = blocks.mapped.get_mut(&(movable, 125)).unwrap();
        assert!(block.claim(0, 1) && block.claim(1, 1) && !block.claim(1, 1));
        assert_eq!(block.unused, 6);
        // Lent: offsets 2..4 (order 1), then 4, 5, 6; 7 stays held.
        assert_eq!(blocks.take_unused(0, movable, 1).map(|pfn| pfn.0), Some(66));
        let lent: Vec<u64> = std::iter::from_fn(|| blocks.take_unused(0, movable, 0))
            .map(|pfn| pfn.0)
            .collect();
        assert_eq!(lent, vec![68, 69, 70]);
        assert_eq!(blocks.take_unused(1, movable, 0), None, "another zone");
        let block = &blocks.mapped[&(movable, 125)];
        assert_eq!((block.unused, block.held()), (1, Some(7)));
        // The held page is not mapped either, even for a frame there.
        let block = blocks.mapped.get_mut(&(movable, 125)).unwrap();
        assert!(!(block.unused > 1 && block.claim(7, 1)));
        assert_eq!(block.held(), Some(7));
        // Nothing left to give back: the held page is not given.
        assert!(blocks.unused_ranges().values().all(Vec::is_empty));
    }

    /// What is given back is every unused run but the last unused page,
    /// per zone and migratetype; a duplicate frame counts once.
    #[test]
    fn given_back_runs_leave_the_last_unused_page() {
        let mut blocks = HostPageblocks::new([(1, 9), (1, 9), (0, 17), (0, 18)], 8);
        assert_eq!(blocks.framed.get(&(1, 1)), Some(&1), "9 counted once");
        for (key, base, zone) in [((1u8, 1u64), 0u64, 0usize), ((0, 2), 8, 1)] {
            blocks.mapped.insert(
                key,
                MappedPageblock {
                    base,
                    zone,
                    used: vec![false; 8],
                    unused: 8,
                    low: 0,
                },
            );
        }
        let block = blocks.mapped.get_mut(&(1, 1)).unwrap();
        assert!(block.claim(1, 1) && block.claim(4, 2));
        let runs = blocks.unused_ranges();
        assert_eq!(runs[&(0, 1)], vec![0..1, 2..4, 6..7], "7 stays held");
        assert_eq!(runs[&(1, 0)], vec![8..15], "15 stays held");
    }

    #[test]
    fn unused_runs_are_the_gaps_between_used_pages() {
        let used = [true, false, false, true, false, true, true, false];
        let runs: Vec<_> = unused_runs(&used).collect();
        assert_eq!(runs, vec![1..3, 4..5, 7..8]);
        assert_eq!(unused_runs(&[true, true]).count(), 0);
        assert_eq!(unused_runs(&[false; 4]).collect::<Vec<_>>(), vec![0..4]);
    }
}
