//! Which slots of a zram device hold a page: one bit per slot, and one bit
//! per word of those bits, set while the word has a bit set. A discard of
//! a range then visits a word per 4096 slots and the stored slots only,
//! where a walk of the table visits every slot: file systems discard their
//! free space, most of it empty slots, and a block trace of discards over
//! a large device would otherwise cost a walk of it per record. (The
//! kernel walks every page of a discard, zram_bio_discard(); pageframe's
//! count of them in `notify_free` is the same.)
//!
//! Invariant (checked by the device's `check_invariants`): a slot's bit is
//! set exactly when its table entry is not empty, and a summary bit exactly
//! when its word is not zero.

/// Bits per word.
const WORD: usize = 64;

/// The index; see the module header.
#[derive(Clone, Debug, Default)]
pub(super) struct StoredSlots {
    /// One bit per slot.
    bits: Vec<u64>,
    /// One bit per word of `bits`.
    summary: Vec<u64>,
}

impl StoredSlots {
    /// An index of `slots` empty slots; `None` when it cannot be allocated.
    pub(super) fn new(slots: usize) -> Option<StoredSlots> {
        let words = slots.div_ceil(WORD);
        let mut bits = Vec::new();
        bits.try_reserve_exact(words).ok()?;
        bits.resize(words, 0);
        Some(StoredSlots {
            bits,
            summary: vec![0; words.div_ceil(WORD)],
        })
    }

    /// Marks `slot` stored.
    pub(super) fn set(&mut self, slot: usize) {
        let word = slot / WORD;
        self.bits[word] |= 1 << (slot % WORD);
        self.summary[word / WORD] |= 1 << (word % WORD);
    }

    /// Marks `slot` empty.
    pub(super) fn clear(&mut self, slot: usize) {
        let word = slot / WORD;
        self.bits[word] &= !(1 << (slot % WORD));
        if self.bits[word] == 0 {
            self.summary[word / WORD] &= !(1 << (word % WORD));
        }
    }

    /// Whether `slot` is marked stored.
    pub(super) fn is_set(&self, slot: usize) -> bool {
        self.bits[slot / WORD] & (1 << (slot % WORD)) != 0
    }

    /// The first stored slot in `[from, end)`, if any.
    pub(super) fn next_in(&self, from: usize, end: usize) -> Option<usize> {
        let mut word = from / WORD;
        // The bits of the first word at or after `from`.
        let mut mask = u64::MAX << (from % WORD);
        while word * WORD < end {
            let group = word / WORD;
            // Skip words whose summary bit (and all after it in the group)
            // is clear.
            let live = self.summary[group] & (u64::MAX << (word % WORD));
            if live == 0 {
                word = (group + 1) * WORD;
                mask = u64::MAX;
                continue;
            }
            let next_word = group * WORD + live.trailing_zeros() as usize;
            if next_word != word {
                word = next_word;
                mask = u64::MAX;
                continue;
            }
            let bits = self.bits[word] & mask;
            if bits != 0 {
                let slot = word * WORD + bits.trailing_zeros() as usize;
                return (slot < end).then_some(slot);
            }
            word += 1;
            mask = u64::MAX;
        }
        None
    }

    /// Whether the summary agrees with the bits.
    pub(super) fn summary_agrees(&self) -> bool {
        self.bits.iter().enumerate().all(|(word, bits)| {
            let marked = self.summary[word / WORD] & (1 << (word % WORD)) != 0;
            marked == (*bits != 0)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stored slots of `[from, end)`, by `next_in`.
    fn walk(index: &StoredSlots, from: usize, end: usize) -> Vec<usize> {
        let mut found = Vec::new();
        let mut at = from;
        while let Some(slot) = index.next_in(at, end) {
            found.push(slot);
            at = slot + 1;
        }
        found
    }

    #[test]
    fn next_in_finds_the_stored_slots_of_a_range_in_order() {
        let mut index = StoredSlots::new(20_000).unwrap();
        let stored = [0usize, 63, 64, 4095, 4096, 9000, 19_999];
        for slot in stored {
            index.set(slot);
        }
        assert!(index.summary_agrees());
        assert_eq!(walk(&index, 0, 20_000), stored);
        assert_eq!(walk(&index, 1, 4096), [63, 64, 4095]);
        assert_eq!(walk(&index, 4096, 9000), [4096]);
        assert_eq!(walk(&index, 9001, 19_999), Vec::<usize>::new());
        assert_eq!(walk(&index, 5, 5), Vec::<usize>::new());
        index.clear(63);
        index.clear(64);
        assert!(index.summary_agrees());
        assert_eq!(walk(&index, 0, 100), [0]);
        assert!(index.is_set(0) && !index.is_set(63));
    }

    proptest::proptest! {
        /// Random marks and clears over 3 summary groups: every walk of a
        /// range finds what a set finds, and the summary agrees.
        #[test]
        fn walks_match_a_set(
            ops in proptest::collection::vec((0usize..12_000, proptest::bool::ANY), 1..400),
            ranges in proptest::collection::vec((0usize..12_001, 0usize..12_001), 1..8),
        ) {
            let mut index = StoredSlots::new(12_000).unwrap();
            let mut model = std::collections::BTreeSet::new();
            for (slot, set) in ops {
                if set {
                    index.set(slot);
                    model.insert(slot);
                } else {
                    index.clear(slot);
                    model.remove(&slot);
                }
            }
            proptest::prop_assert!(index.summary_agrees());
            for (from, end) in ranges {
                let found = walk(&index, from, end);
                let expected: Vec<usize> = model.range(from..end.max(from)).copied().collect();
                proptest::prop_assert_eq!(found, expected);
            }
        }
    }
}
