//! Migratetypes and freetypes: what the free lists are indexed by.
//!
//! A [`FreeType`] is a migratetype plus flags. The plain migratetypes come
//! first in the index space; the UNMAPPED variants follow (as the
//! `__GFP_UNMAPPED` series lays them out). Only (UNMOVABLE, UNMAPPED) is valid
//! by default; (MOVABLE, UNMAPPED) is reserved for a configuration that allows it.

use std::fmt;

/// The kernel's migratetypes, in the kernel's order (`enum migratetype`, no CMA).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum MigrateType {
    /// Kernel allocations that never move.
    Unmovable = 0,
    /// User and page-cache pages that compaction can move.
    Movable = 1,
    /// Caches the shrinkers can free.
    Reclaimable = 2,
    /// Reserve for high-order atomic allocations.
    HighAtomic = 3,
    /// Pageblocks being offlined or isolated; never allocated from.
    Isolate = 4,
}

/// Number of migratetypes that have per-CPU lists (`MIGRATE_PCPTYPES`).
pub const MIGRATE_PCPTYPES: usize = 3;
/// Number of migratetypes (`MIGRATE_TYPES`).
pub const MIGRATE_TYPES: usize = 5;

impl MigrateType {
    /// All migratetypes, in index order.
    pub const ALL: [MigrateType; MIGRATE_TYPES] = [
        MigrateType::Unmovable,
        MigrateType::Movable,
        MigrateType::Reclaimable,
        MigrateType::HighAtomic,
        MigrateType::Isolate,
    ];

    /// The name /proc/pagetypeinfo prints (`migratetype_names`).
    pub fn name(self) -> &'static str {
        match self {
            MigrateType::Unmovable => "Unmovable",
            MigrateType::Movable => "Movable",
            MigrateType::Reclaimable => "Reclaimable",
            MigrateType::HighAtomic => "HighAtomic",
            MigrateType::Isolate => "Isolate",
        }
    }

    /// The migratetype with index `index`, if any.
    pub const fn from_index(index: usize) -> Option<MigrateType> {
        if index < MigrateType::ALL.len() {
            Some(MigrateType::ALL[index])
        } else {
            None
        }
    }

    /// The type as an index.
    #[inline]
    pub fn index(self) -> usize {
        self as usize
    }

    /// True for the types with per-CPU lists.
    #[inline]
    pub fn is_pcptype(self) -> bool {
        self.index() < MIGRATE_PCPTYPES
    }

    /// Pages of these types merge with their buddies across pageblocks
    /// (`migratetype_is_mergeable()`): all but HIGHATOMIC and ISOLATE.
    #[inline]
    pub fn is_mergeable(self) -> bool {
        self.is_pcptype()
    }

    /// The fallback order when this type's lists are empty (`fallbacks[]`).
    /// Only the per-CPU types fall back.
    pub fn fallbacks(self) -> &'static [MigrateType] {
        match self {
            MigrateType::Unmovable => &[MigrateType::Reclaimable, MigrateType::Movable],
            MigrateType::Movable => &[MigrateType::Reclaimable, MigrateType::Unmovable],
            MigrateType::Reclaimable => &[MigrateType::Unmovable, MigrateType::Movable],
            MigrateType::HighAtomic | MigrateType::Isolate => &[],
        }
    }
}

impl fmt::Display for MigrateType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Freetype flags: properties of a pageblock besides its mobility.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct FreeTypeFlags(u8);

impl FreeTypeFlags {
    /// No flags: pages mapped in the direct map.
    pub const NONE: FreeTypeFlags = FreeTypeFlags(0);
    /// Pages removed from the direct map (`__GFP_UNMAPPED`).
    pub const UNMAPPED: FreeTypeFlags = FreeTypeFlags(1);

    /// True when every flag of `other` is set.
    pub fn contains(self, other: FreeTypeFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// The raw bits.
    pub fn bits(self) -> u8 {
        self.0
    }
}

/// Number of freetype indices: the plain migratetypes then (UNMOVABLE,
/// UNMAPPED) and (MOVABLE, UNMAPPED).
pub const NR_FREETYPES: usize = MIGRATE_TYPES + 2;

/// What a free list holds: a migratetype and flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FreeType {
    /// Mobility of the pages.
    pub migratetype: MigrateType,
    /// Mapping properties of the pages.
    pub flags: FreeTypeFlags,
}

impl FreeType {
    /// The plain freetype of a migratetype.
    #[inline]
    pub const fn plain(migratetype: MigrateType) -> FreeType {
        FreeType {
            migratetype,
            flags: FreeTypeFlags::NONE,
        }
    }

    /// (UNMOVABLE, UNMAPPED): the one unmapped freetype the series allows by default.
    pub const UNMAPPED_UNMOVABLE: FreeType = FreeType {
        migratetype: MigrateType::Unmovable,
        flags: FreeTypeFlags::UNMAPPED,
    };

    /// True for the freetypes of pages absent from the direct map.
    #[inline]
    pub fn is_unmapped(self) -> bool {
        self.flags.contains(FreeTypeFlags::UNMAPPED)
    }

    /// The same migratetype with the UNMAPPED flag flipped: the freetype a
    /// direct-map conversion takes its pageblock from.
    #[inline]
    pub fn with_mapping_flipped(self) -> FreeType {
        FreeType {
            migratetype: self.migratetype,
            flags: FreeTypeFlags(self.flags.0 ^ FreeTypeFlags::UNMAPPED.0),
        }
    }

    /// The index of the free list, or `None` for a combination that has no
    /// list (UNMAPPED with anything but UNMOVABLE or MOVABLE).
    #[inline]
    pub(crate) fn index(self) -> Option<FreeTypeIdx> {
        if !self.flags.contains(FreeTypeFlags::UNMAPPED) {
            return Some(FreeTypeIdx::of(self.migratetype));
        }
        match self.migratetype {
            MigrateType::Unmovable => Some(FreeTypeIdx(MIGRATE_TYPES)),
            MigrateType::Movable => Some(FreeTypeIdx(MIGRATE_TYPES + 1)),
            _ => None,
        }
    }

    /// The freetype of a list index.
    pub fn from_index(index: usize) -> Option<FreeType> {
        FreeTypeIdx::new(index).map(FreeTypeIdx::freetype)
    }
}

/// The index of a free list: a [`FreeType`] that has a list, as a number
/// `0..NR_FREETYPES` for per-freetype tables. The plain migratetypes come
/// first, at their own index, then (UNMOVABLE, UNMAPPED) and
/// (MOVABLE, UNMAPPED).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct FreeTypeIdx(usize);

impl FreeTypeIdx {
    /// The list index `index`, if it is below [`NR_FREETYPES`].
    #[inline]
    pub const fn new(index: usize) -> Option<FreeTypeIdx> {
        if index < NR_FREETYPES {
            Some(FreeTypeIdx(index))
        } else {
            None
        }
    }

    /// Decodes a byte that [`Self::index`] produced and a record stored
    /// (the memmap's packed word). Tables indexed by it stay bounds-checked.
    #[inline]
    pub(crate) const fn from_packed(bits: u8) -> FreeTypeIdx {
        debug_assert!((bits as usize) < NR_FREETYPES);
        FreeTypeIdx(bits as usize)
    }

    /// The list of a plain migratetype.
    #[inline]
    pub const fn of(migratetype: MigrateType) -> FreeTypeIdx {
        FreeTypeIdx(migratetype as usize)
    }

    /// Every list index, lowest first.
    pub fn all() -> impl Iterator<Item = FreeTypeIdx> {
        (0..NR_FREETYPES).map(FreeTypeIdx)
    }

    /// The index into per-freetype tables.
    #[inline]
    pub const fn index(self) -> usize {
        self.0
    }

    /// The freetype the list holds.
    #[inline]
    pub fn freetype(self) -> FreeType {
        match self.0 {
            MIGRATE_TYPES => FreeType::UNMAPPED_UNMOVABLE,
            index if index == MIGRATE_TYPES + 1 => FreeType {
                migratetype: MigrateType::Movable,
                flags: FreeTypeFlags::UNMAPPED,
            },
            index => FreeType::plain(MigrateType::ALL[index]),
        }
    }
}

impl fmt::Display for FreeTypeIdx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Forward to the integer so that width and alignment apply.
        fmt::Display::fmt(&self.0, f)
    }
}

impl fmt::Display for FreeType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.flags.contains(FreeTypeFlags::UNMAPPED) {
            write!(f, "{}-Unmapped", self.migratetype)
        } else {
            write!(f, "{}", self.migratetype)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freetype_indices_round_trip() {
        for index in 0..NR_FREETYPES {
            assert_eq!(
                FreeType::from_index(index).unwrap().index(),
                FreeTypeIdx::new(index)
            );
            assert_eq!(FreeTypeIdx::new(index).unwrap().index(), index);
        }
        let bad = FreeType {
            migratetype: MigrateType::Reclaimable,
            flags: FreeTypeFlags::UNMAPPED,
        };
        assert_eq!(bad.index(), None);
        assert_eq!(FreeTypeIdx::new(NR_FREETYPES), None);
    }

    #[test]
    fn fallbacks_match_the_kernel_table() {
        assert_eq!(
            MigrateType::Unmovable.fallbacks(),
            [MigrateType::Reclaimable, MigrateType::Movable]
        );
        assert_eq!(
            MigrateType::Movable.fallbacks(),
            [MigrateType::Reclaimable, MigrateType::Unmovable]
        );
        assert_eq!(
            MigrateType::Reclaimable.fallbacks(),
            [MigrateType::Unmovable, MigrateType::Movable]
        );
    }
}
