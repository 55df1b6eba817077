//! Which pages of a file hold data on the file system (blocks written, as
//! an ext4 extent tree records them, with 4 KiB blocks: a block per page);
//! the rest below the size are holes. Kept as disjoint, non-adjacent page
//! ranges, so a file written sequentially is one range however large.
//!
//! Invariant (`check`): the ranges are non-empty, sorted, and neither
//! overlap nor touch.

use std::collections::BTreeMap;

/// A file's written pages.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Extents {
    /// First page -> the page after the range.
    ranges: BTreeMap<u64, u64>,
}

impl Extents {
    /// Records pages `[first, end)` as written.
    pub(super) fn insert(&mut self, first: u64, end: u64) {
        if first >= end {
            return;
        }
        let (mut first, mut end) = (first, end);
        // A range that starts before `first` and reaches it joins.
        if let Some((&start, &stop)) = self.ranges.range(..=first).next_back() {
            if stop >= first {
                first = start;
                end = end.max(stop);
            }
        }
        // Ranges that start inside `[first, end]` join.
        let joined: Vec<(u64, u64)> = self
            .ranges
            .range(first..=end)
            .map(|(&start, &stop)| (start, stop))
            .collect();
        for (start, stop) in joined {
            self.ranges.remove(&start);
            end = end.max(stop);
        }
        self.ranges.insert(first, end);
    }

    /// Forgets every page from `first` on (a truncation).
    pub(super) fn truncate(&mut self, first: u64) {
        let beyond: Vec<u64> = self
            .ranges
            .range(first..)
            .map(|(&start, _)| start)
            .collect();
        for start in beyond {
            self.ranges.remove(&start);
        }
        if let Some((&start, stop)) = self.ranges.range_mut(..first).next_back() {
            if *stop > first {
                *stop = first;
            }
            debug_assert!(start < *stop);
        }
    }

    /// Whether page `index` holds data.
    pub(super) fn contains(&self, index: u64) -> bool {
        self.ranges
            .range(..=index)
            .next_back()
            .is_some_and(|(_, &stop)| index < stop)
    }

    /// The page after the last written one (0 when none is).
    pub(super) fn end(&self) -> u64 {
        self.ranges.values().next_back().copied().unwrap_or(0)
    }

    /// The ranges are non-empty, sorted, apart.
    pub(super) fn check(&self) -> Result<(), String> {
        let mut last_stop = None;
        for (&start, &stop) in &self.ranges {
            if start >= stop || last_stop.is_some_and(|last| start <= last) {
                return Err(format!(
                    "extent [{start}, {stop}) after one ending at {last_stop:?}"
                ));
            }
            last_stop = Some(stop);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::Extents;

    #[test]
    fn ranges_join_split_and_answer() {
        let mut data = Extents::default();
        data.insert(10, 20);
        data.insert(30, 40);
        data.insert(20, 30);
        assert_eq!(data.ranges.len(), 1);
        data.insert(50, 60);
        data.insert(5, 55);
        assert_eq!(data.ranges.iter().collect::<Vec<_>>(), [(&5, &60)]);
        data.truncate(25);
        assert!(data.contains(24) && !data.contains(25) && !data.contains(4));
        assert_eq!(data.end(), 25);
        data.insert(100, 101);
        data.truncate(100);
        assert_eq!(data.end(), 25);
        data.truncate(0);
        assert_eq!(data.end(), 0);
        data.check().unwrap();
    }
}
