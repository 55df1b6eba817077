//! Page tables: the entry of one virtual page ([`Pte`], with the side state
//! the kernel keeps in `struct page` or the PTE) and a VMA's table of them
//! ([`PageTable`]).
//!
//! A PTE is 16 bytes and holds, beside the PFN, the per-page side state the
//! kernel keeps in `struct page` or the PTE: PROT_NONE for NUMA hinting, the
//! last cpupid and the scan time. Pages are never shared between address
//! spaces, so per-PTE and per-page state coincide. A page read before it is
//! ever written maps the shared zero page (`PTE_ZERO`), which is not a page
//! of the machine: it is neither counted in RSS nor migrated.
//!
//! A [`PageTable`] is built as the kernel's is at its last level: leaf
//! tables of [`PTES_PER_TABLE`] entries (`PTRS_PER_PTE`), one per aligned
//! run of virtual pages that has any entry, found by their index in an
//! ordered map (the upper levels). A lookup is one search among the leaf
//! tables and an index; a scan of a range walks whole leaves in order. Each
//! leaf keeps a bitmap of the slots that hold an entry, so an entry is
//! stored or absent, never "present with flags 0".
//!
//! Invariants: every leaf has at least one stored slot; `len` is the number
//! of stored slots of all leaves; a stored entry is PRESENT or ZERO (the
//! VMA layer's rule, checked by `vm::invariants`).

use std::collections::BTreeMap;

/// The PTE maps a page.
pub const PTE_PRESENT: u8 = 1 << 0;
/// The PTE is PROT_NONE for a NUMA hinting fault.
pub const PTE_PROTNONE: u8 = 1 << 1;
/// The page was written (dirty; `was_writable` for hinting faults).
pub const PTE_WRITTEN: u8 = 1 << 2;
/// The entry maps the shared zero page (a read before any write).
pub const PTE_ZERO: u8 = 1 << 3;

/// `last_cpupid` of a page nobody has faulted on: every bit set.
pub const CPUPID_UNSET: u32 = u32::MAX;
/// Bits of the pid kept in a cpupid (`LAST__PID_SHIFT`).
pub const CPUPID_PID_BITS: u32 = 8;

/// One page-table entry with its page's side state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pte {
    /// The PFN, when present.
    pub pfn: u32,
    /// `page_cpupid_last()`: CPU and low pid bits of the last hinting fault.
    pub last_cpupid: u32,
    /// Simulated ms at which the scanner last made it PROT_NONE.
    pub scan_time_ms: u32,
    /// `PTE_*` bits.
    pub flags: u8,
}

impl Pte {
    /// The empty entry.
    pub const NONE: Pte = Pte {
        pfn: 0,
        last_cpupid: CPUPID_UNSET,
        scan_time_ms: 0,
        flags: 0,
    };

    /// True when a page is mapped.
    #[inline]
    pub fn is_present(&self) -> bool {
        self.flags & PTE_PRESENT != 0
    }

    /// True when a NUMA hinting fault is armed.
    #[inline]
    pub fn is_protnone(&self) -> bool {
        self.flags & PTE_PROTNONE != 0
    }

    /// True when the entry maps the shared zero page.
    #[inline]
    pub fn is_zero_page(&self) -> bool {
        self.flags & PTE_ZERO != 0
    }
}

/// Entries per leaf table: `PTRS_PER_PTE` of x86-64 (a 4 KiB table of
/// 8-byte entries).
pub const PTES_PER_TABLE: u64 = 512;
/// Words of a leaf's bitmap of stored slots.
const STORED_WORDS: usize = (PTES_PER_TABLE / 64) as usize;

/// One leaf table: its entries and which slots hold one.
#[derive(Clone)]
struct Leaf {
    stored: [u64; STORED_WORDS],
    ptes: [Pte; PTES_PER_TABLE as usize],
}

impl Leaf {
    fn empty() -> Box<Leaf> {
        Box::new(Leaf {
            stored: [0; STORED_WORDS],
            ptes: [Pte::NONE; PTES_PER_TABLE as usize],
        })
    }

    fn is_stored(&self, slot: usize) -> bool {
        self.stored[slot / 64] & (1 << (slot % 64)) != 0
    }

    /// Marks `slot` as holding an entry, or not.
    fn set_stored(&mut self, slot: usize, stored: bool) {
        let bit = 1 << (slot % 64);
        if stored {
            self.stored[slot / 64] |= bit;
        } else {
            self.stored[slot / 64] &= !bit;
        }
    }

    fn len(&self) -> usize {
        self.stored
            .iter()
            .map(|word| word.count_ones() as usize)
            .sum()
    }

    /// The stored slots at or after `from` and before `to`, in order.
    fn slots(&self, from: usize, to: usize) -> impl Iterator<Item = usize> + '_ {
        stored_slots(&self.stored, from, to)
    }
}

/// The set bits of `stored` at or after `from` and before `to`, in order.
fn stored_slots(
    stored: &[u64; STORED_WORDS],
    from: usize,
    to: usize,
) -> impl Iterator<Item = usize> + '_ {
    let to = to.min(PTES_PER_TABLE as usize);
    (from / 64..to.div_ceil(64)).flat_map(move |word| {
        let base = word * 64;
        let low = from.saturating_sub(base);
        let high = to - base;
        let below_high = if high >= 64 {
            u64::MAX
        } else {
            (1 << high) - 1
        };
        let mut bits = stored[word] & (u64::MAX << low) & below_high;
        std::iter::from_fn(move || {
            (bits != 0).then(|| {
                let bit = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                base + bit
            })
        })
    })
}

/// A VMA's page table: the entries that map something, by virtual page
/// (see the module header for its layout).
#[derive(Clone, Default)]
pub struct PageTable {
    leaves: BTreeMap<u64, Box<Leaf>>,
    len: usize,
}

/// The stored entries by virtual page, as the map it models prints.
impl std::fmt::Debug for PageTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.entries()).finish()
    }
}

/// The leaf index and slot of `vpn`.
fn split_vpn(vpn: u64) -> (u64, usize) {
    (vpn / PTES_PER_TABLE, (vpn % PTES_PER_TABLE) as usize)
}

impl PageTable {
    /// The entry of `vpn`, if it maps something.
    pub fn get(&self, vpn: u64) -> Option<&Pte> {
        let (leaf, slot) = split_vpn(vpn);
        let leaf = self.leaves.get(&leaf)?;
        leaf.is_stored(slot).then(|| &leaf.ptes[slot])
    }

    /// The entry of `vpn`, mutably, if it maps something.
    pub fn get_mut(&mut self, vpn: u64) -> Option<&mut Pte> {
        let (leaf, slot) = split_vpn(vpn);
        let leaf = self.leaves.get_mut(&leaf)?;
        if leaf.is_stored(slot) {
            Some(&mut leaf.ptes[slot])
        } else {
            None
        }
    }

    /// The stored entries, lowest page first.
    pub fn iter(&self) -> impl Iterator<Item = &Pte> {
        self.entries().map(|(_, pte)| pte)
    }

    /// The stored entries with their virtual page, lowest first.
    pub fn entries(&self) -> impl Iterator<Item = (u64, &Pte)> {
        self.leaves.iter().flat_map(|(&index, leaf)| {
            leaf.slots(0, PTES_PER_TABLE as usize)
                .map(move |slot| (index * PTES_PER_TABLE + slot as u64, &leaf.ptes[slot]))
        })
    }

    /// The stored entries of `[start, end)`, mutably, lowest first.
    pub(crate) fn range_mut(
        &mut self,
        start: u64,
        end: u64,
    ) -> impl Iterator<Item = (u64, &mut Pte)> {
        let (first, _) = split_vpn(start);
        let last = split_vpn(end.max(start)).0;
        self.leaves
            .range_mut(first..=last)
            .flat_map(move |(&index, leaf)| {
                let base = index * PTES_PER_TABLE;
                let from = start.saturating_sub(base).min(PTES_PER_TABLE) as usize;
                let to = end.saturating_sub(base).min(PTES_PER_TABLE) as usize;
                let Leaf { stored, ptes } = &mut **leaf;
                let mut ptes = &mut ptes[..];
                let mut consumed = 0;
                // Each stored slot once, in order: split the slice as we go.
                stored_slots(stored, from, to).map(move |slot| {
                    let rest = std::mem::take(&mut ptes);
                    let (pte, after) = rest[slot - consumed..]
                        .split_first_mut()
                        .expect("a slot inside its leaf");
                    ptes = after;
                    consumed = slot + 1;
                    (base + slot as u64, pte)
                })
            })
    }

    /// Stores the entry of `vpn`.
    pub(crate) fn insert(&mut self, vpn: u64, pte: Pte) {
        let (leaf, slot) = split_vpn(vpn);
        let leaf = self.leaves.entry(leaf).or_insert_with(Leaf::empty);
        if !leaf.is_stored(slot) {
            leaf.set_stored(slot, true);
            self.len += 1;
        }
        leaf.ptes[slot] = pte;
    }

    /// Moves the entries of pages `at` and up into a new table.
    pub(crate) fn split_off(&mut self, at: u64) -> PageTable {
        let (index, slot) = split_vpn(at);
        let mut tail = self.leaves.split_off(&index);
        if slot != 0 {
            if let Some(leaf) = tail.get_mut(&index) {
                let mut head = Leaf::empty();
                for moved in leaf.slots(0, slot).collect::<Vec<_>>() {
                    head.ptes[moved] = leaf.ptes[moved];
                    head.set_stored(moved, true);
                    leaf.set_stored(moved, false);
                }
                if leaf.len() == 0 {
                    tail.remove(&index);
                }
                if head.len() > 0 {
                    self.leaves.insert(index, head);
                }
            }
        }
        let tail = PageTable {
            len: tail.values().map(|leaf| leaf.len()).sum(),
            leaves: tail,
        };
        self.len -= tail.len;
        tail
    }

    /// Number of stored entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when nothing is mapped.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Checks the table's own invariants (module header): no empty leaf,
    /// `len` the stored slots.
    pub(crate) fn check_invariants(&self) -> Result<(), String> {
        let mut stored = 0;
        for (&index, leaf) in &self.leaves {
            let in_leaf = leaf.len();
            if in_leaf == 0 {
                return Err(format!("page table leaf {index} has no entry"));
            }
            stored += in_leaf;
        }
        if stored != self.len {
            return Err(format!(
                "page table counts {} entries, its leaves hold {stored}",
                self.len
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Clone, Debug)]
    enum Op {
        Insert(u64, u32),
        Touch(u64, u64),
        Split(u64),
    }

    /// Pages near leaf boundaries, so that ranges and splits cut leaves.
    fn vpn() -> impl Strategy<Value = u64> {
        (0u64..6, 0u64..PTES_PER_TABLE).prop_map(|(leaf, slot)| leaf * PTES_PER_TABLE + slot)
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (vpn(), any::<u32>()).prop_map(|(vpn, pfn)| Op::Insert(vpn, pfn)),
            2 => (vpn(), vpn()).prop_map(|(a, b)| Op::Touch(a, b)),
            1 => vpn().prop_map(Op::Split),
        ]
    }

    fn entry(pfn: u32) -> Pte {
        Pte {
            pfn,
            flags: PTE_PRESENT,
            ..Pte::NONE
        }
    }

    /// Checks `table` against the model: the same entries in the same
    /// order, by every accessor.
    fn same(table: &PageTable, model: &BTreeMap<u64, Pte>) {
        table.check_invariants().unwrap();
        assert_eq!(table.len(), model.len());
        assert_eq!(table.is_empty(), model.is_empty());
        let entries: Vec<(u64, Pte)> = table.entries().map(|(vpn, pte)| (vpn, *pte)).collect();
        let expected: Vec<(u64, Pte)> = model.iter().map(|(&vpn, &pte)| (vpn, pte)).collect();
        assert_eq!(entries, expected);
        assert_eq!(table.iter().count(), model.len());
        for vpn in (0..6 * PTES_PER_TABLE).step_by(97) {
            assert_eq!(table.get(vpn), model.get(&vpn));
        }
    }

    proptest! {
        /// Random inserts, range updates and splits (the tail kept as the
        /// table half the time) leave the table equal to a BTreeMap.
        #[test]
        fn the_table_behaves_as_an_ordered_map(ops in prop::collection::vec(op(), 1..60)) {
            let (mut table, mut model) = (PageTable::default(), BTreeMap::new());
            for op in ops {
                match op {
                    Op::Insert(vpn, pfn) => {
                        table.insert(vpn, entry(pfn));
                        model.insert(vpn, entry(pfn));
                    }
                    Op::Touch(start, end) => {
                        let touched: Vec<u64> = table
                            .range_mut(start, end)
                            .map(|(vpn, pte)| {
                                pte.flags |= PTE_PROTNONE;
                                vpn
                            })
                            .collect();
                        let expected: Vec<u64> = if start < end {
                            model.range(start..end).map(|(&vpn, _)| vpn).collect()
                        } else {
                            Vec::new()
                        };
                        prop_assert_eq!(&touched, &expected);
                        for vpn in expected {
                            model.get_mut(&vpn).unwrap().flags |= PTE_PROTNONE;
                        }
                        if let Some(&vpn) = model.keys().next() {
                            let pte = table.get_mut(vpn).unwrap();
                            pte.pfn ^= 1;
                            model.get_mut(&vpn).unwrap().pfn ^= 1;
                        }
                    }
                    Op::Split(at) => {
                        let tail = table.split_off(at);
                        let model_tail = model.split_off(&at);
                        same(&tail, &model_tail);
                        if at % 2 == 0 {
                            table = tail;
                            model = model_tail;
                        }
                    }
                }
                same(&table, &model);
            }
        }
    }
}
