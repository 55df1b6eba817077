//! Half-open PFN ranges and the walks over sorted lists of them that the
//! layout and memblock-style placement share (subtraction, intersection,
//! merging).
//!
//! Invariant of the list helpers' inputs: sorted by start and disjoint
//! (merge_sorted() makes any list so).

use crate::types::Pfn;

/// A half-open range of PFNs `[start, end)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PfnRange {
    /// First PFN.
    pub start: Pfn,
    /// One past the last PFN.
    pub end: Pfn,
}

impl PfnRange {
    /// Number of pages in the range.
    pub fn len(&self) -> u64 {
        self.end.0 - self.start.0
    }

    /// True when the range holds no page.
    pub fn is_empty(&self) -> bool {
        self.end.0 <= self.start.0
    }

    /// The range from the first range's start to the last one's end, for
    /// sorted ranges (a zone's span over its present memory); empty at PFN 0
    /// when there are none.
    pub fn covering(sorted: &[PfnRange]) -> PfnRange {
        match (sorted.first(), sorted.last()) {
            (Some(first), Some(last)) => PfnRange {
                start: first.start,
                end: last.end,
            },
            _ => PfnRange {
                start: Pfn(0),
                end: Pfn(0),
            },
        }
    }

    /// True when `pfn` is in the range.
    pub fn contains(&self, pfn: Pfn) -> bool {
        self.start <= pfn && pfn < self.end
    }
}

/// Sorted, disjoint `ranges` less sorted, disjoint `cuts`, in one pass
/// over both (a cut is looked at again only for each range it overlaps).
pub(crate) fn subtract(ranges: &[PfnRange], cuts: &[PfnRange]) -> Vec<PfnRange> {
    let mut left = Vec::with_capacity(ranges.len() + cuts.len());
    let mut first_cut = 0;
    for range in ranges {
        while cuts
            .get(first_cut)
            .is_some_and(|cut| cut.end <= range.start)
        {
            first_cut += 1;
        }
        let mut start = range.start;
        for cut in cuts[first_cut..]
            .iter()
            .take_while(|cut| cut.start < range.end)
        {
            if start < cut.start {
                left.push(PfnRange {
                    start,
                    end: cut.start,
                });
            }
            start = start.max(cut.end);
        }
        if start < range.end {
            left.push(PfnRange {
                start,
                end: range.end,
            });
        }
    }
    left
}

/// The overlaps of sorted, disjoint `ranges` with sorted, disjoint `others`,
/// in one pass over both.
pub(crate) fn intersect(ranges: &[PfnRange], others: &[PfnRange]) -> Vec<PfnRange> {
    let (mut at, mut other) = (0, 0);
    let mut both = Vec::new();
    while let (Some(a), Some(b)) = (ranges.get(at), others.get(other)) {
        let part = PfnRange {
            start: a.start.max(b.start),
            end: a.end.min(b.end),
        };
        if !part.is_empty() {
            both.push(part);
        }
        if a.end <= b.end {
            at += 1;
        } else {
            other += 1;
        }
    }
    both
}

/// Sorts ranges and merges those that overlap or touch.
pub(crate) fn merge_sorted(ranges: &mut Vec<PfnRange>) {
    ranges.sort_unstable_by_key(|range| range.start);
    let mut merged: Vec<PfnRange> = Vec::with_capacity(ranges.len());
    for range in ranges.drain(..) {
        match merged.last_mut() {
            Some(last) if range.start <= last.end => last.end = last.end.max(range.end),
            _ => merged.push(range),
        }
    }
    *ranges = merged;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subtract_and_intersect_walk_sorted_ranges() {
        let r = |start: u64, end: u64| PfnRange {
            start: Pfn(start),
            end: Pfn(end),
        };
        let ranges = [r(0, 10), r(20, 30), r(40, 50)];
        // A cut over a range's end and the next one's start, one inside a
        // range, one between ranges, one past them all.
        let cuts = [r(5, 25), r(27, 28), r(32, 35), r(45, 60)];
        assert_eq!(
            subtract(&ranges, &cuts),
            [r(0, 5), r(25, 27), r(28, 30), r(40, 45)]
        );
        assert_eq!(
            intersect(&ranges, &cuts),
            [r(5, 10), r(20, 25), r(27, 28), r(45, 50)]
        );
        assert_eq!(subtract(&ranges, &[]), ranges);
        assert!(intersect(&ranges, &[]).is_empty());
    }
}
