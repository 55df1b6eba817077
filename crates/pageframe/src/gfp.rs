//! GFP flags and what they mean to the allocator: the highest zone allowed
//! (`gfp_zone()`), the migratetype (`gfp_migratetype()`), and the internal
//! allocation flags (`gfp_to_alloc_flags()`).
//!
//! Bit values are the kernel's (include/linux/gfp_types.h) so that flags
//! printed by a kernel can be pasted here. `__GFP_UNMAPPED` takes the first bit
//! above the kernel's own.

use crate::freetype::{FreeType, FreeTypeFlags, MigrateType};
use crate::types::{Order, ZoneType};
use bitflags::bitflags;
use thiserror::Error;

bitflags! {
    /// Allocation flags (`gfp_t`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct Gfp: u32 {
        /// `__GFP_DMA`: ZONE_DMA, which pageframe does not model.
        const DMA = 0x01;
        /// `__GFP_HIGHMEM`: with MOVABLE, allows ZONE_MOVABLE.
        const HIGHMEM = 0x02;
        /// `__GFP_DMA32`: memory below 4 GiB.
        const DMA32 = 0x04;
        /// `__GFP_MOVABLE`: the page can be migrated.
        const MOVABLE_BIT = 0x08;
        /// `__GFP_RECLAIMABLE`: the page belongs to a reclaimable cache.
        const RECLAIMABLE = 0x10;
        /// `__GFP_HIGH`: the caller is high priority and may use part of the min reserve.
        const HIGH = 0x20;
        /// `__GFP_IO`: may start physical IO.
        const IO = 0x40;
        /// `__GFP_FS`: may call into the filesystem.
        const FS = 0x80;
        /// `__GFP_ZERO`: return zeroed pages.
        const ZERO = 0x100;
        /// `__GFP_DIRECT_RECLAIM`: the caller may sleep and reclaim.
        const DIRECT_RECLAIM = 0x400;
        /// `__GFP_KSWAPD_RECLAIM`: wake kswapd at the low watermark.
        const KSWAPD_RECLAIM = 0x800;
        /// `__GFP_NOWARN`: no failure report.
        const NOWARN = 0x2000;
        /// `__GFP_RETRY_MAYFAIL`.
        const RETRY_MAYFAIL = 0x4000;
        /// `__GFP_NOFAIL`.
        const NOFAIL = 0x8000;
        /// `__GFP_NORETRY`.
        const NORETRY = 0x10000;
        /// `__GFP_MEMALLOC`: may use all reserves.
        const MEMALLOC = 0x20000;
        /// `__GFP_COMP`: a compound page.
        const COMP = 0x40000;
        /// `__GFP_NOMEMALLOC`: never use the emergency reserves.
        const NOMEMALLOC = 0x80000;
        /// `__GFP_HARDWALL`: enforce the cpuset memory policy.
        const HARDWALL = 0x100000;
        /// `__GFP_THISNODE`: no fallback to other nodes.
        const THISNODE = 0x200000;
        /// `__GFP_ACCOUNT`: charge to the memory cgroup.
        const ACCOUNT = 0x400000;
        /// `__GFP_UNMAPPED`: pages removed from the direct map (the series under study).
        const UNMAPPED = 0x4000000;

        /// `__GFP_RECLAIM`.
        const RECLAIM = Self::DIRECT_RECLAIM.bits() | Self::KSWAPD_RECLAIM.bits();
        /// `GFP_ATOMIC`: cannot sleep, may use reserves.
        const ATOMIC = Self::HIGH.bits() | Self::KSWAPD_RECLAIM.bits();
        /// `GFP_KERNEL`: ordinary kernel allocations.
        const KERNEL = Self::RECLAIM.bits() | Self::IO.bits() | Self::FS.bits();
        /// `GFP_NOWAIT`: cannot sleep, no reserves.
        const NOWAIT = Self::KSWAPD_RECLAIM.bits() | Self::NOWARN.bits();
        /// `GFP_USER`: user-space allocations the kernel also touches.
        const USER = Self::KERNEL.bits() | Self::HARDWALL.bits();
        /// `GFP_HIGHUSER`.
        const HIGHUSER = Self::USER.bits() | Self::HIGHMEM.bits();
        /// `GFP_HIGHUSER_MOVABLE`: user pages that can migrate, ZONE_MOVABLE allowed.
        const HIGHUSER_MOVABLE = Self::HIGHUSER.bits() | Self::MOVABLE_BIT.bits();
        /// `GFP_KERNEL | __GFP_MOVABLE`: movable, but not from ZONE_MOVABLE.
        const MOVABLE = Self::KERNEL.bits() | Self::MOVABLE_BIT.bits();
    }
}

bitflags! {
    /// The allocator's internal flags (`ALLOC_*` in mm/internal.h).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
    pub struct AllocFlags: u32 {
        /// Watermark index bit 0 (`ALLOC_WMARK_LOW`); no bits is `ALLOC_WMARK_MIN`.
        const WMARK_LOW = 0x01;
        /// `ALLOC_WMARK_HIGH`.
        const WMARK_HIGH = 0x02;
        /// `ALLOC_NO_WATERMARKS`.
        const NO_WATERMARKS = 0x04;
        /// `ALLOC_OOM`: the OOM victim may dip further.
        const OOM = 0x08;
        /// `ALLOC_NON_BLOCK`: the caller cannot block (atomic).
        const NON_BLOCK = 0x10;
        /// `ALLOC_MIN_RESERVE`: `__GFP_HIGH`, may use half the min reserve.
        const MIN_RESERVE = 0x20;
        /// `ALLOC_CPUSET`.
        const CPUSET = 0x40;
        /// `ALLOC_NOFRAGMENT`: avoid mixing pageblocks, prefer remote nodes first.
        const NOFRAGMENT = 0x100;
        /// `ALLOC_HIGHATOMIC`: may use the high-order atomic reserve.
        const HIGHATOMIC = 0x200;
        /// `ALLOC_KSWAPD`: may wake kswapd.
        const KSWAPD = 0x800;
        /// `ALLOC_NOBLOCK` (the `__GFP_UNMAPPED` series): the caller cannot
        /// wait for a TLB shootdown, so no pageblock may change its mapping.
        const NOBLOCK = 0x1000;
    }
}

impl AllocFlags {
    /// `ALLOC_RESERVES`: flags that allow the reserves below the watermark.
    pub const RESERVES: AllocFlags = AllocFlags::NON_BLOCK
        .union(AllocFlags::MIN_RESERVE)
        .union(AllocFlags::HIGHATOMIC)
        .union(AllocFlags::OOM);

    /// Which watermark applies: 0 min, 1 low, 2 high (`alloc_flags & ALLOC_WMARK_MASK`).
    #[inline]
    pub fn watermark_index(self) -> usize {
        (self.bits() & 0x3) as usize
    }
}

/// A GFP combination the kernel calls bad, or this build does not provide;
/// the page allocator reports it as `AllocError::Unsupported`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("unsupported GFP flags: {0}")]
pub struct GfpError(pub &'static str);

/// What a GFP mask asks of the allocator, decoded once per call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GfpRequest {
    /// Highest zone type the allocation may use.
    pub highest_zone: ZoneType,
    /// The freetype of the lists to allocate from.
    pub freetype: FreeType,
    /// No fallback to other nodes.
    pub this_node: bool,
    /// Zero the pages.
    pub zero: bool,
}

/// What the zone, mobility and mapping bits of a mask ask for, or why they
/// are refused.
type Decoded = Result<(ZoneType, FreeType), &'static str>;

/// The bits [`decode`] reads: `__GFP_DMA`, `__GFP_HIGHMEM`, `__GFP_DMA32`,
/// `__GFP_MOVABLE`, `__GFP_RECLAIMABLE` (the low five), and `__GFP_UNMAPPED`.
const fn decode_index(bits: u32) -> usize {
    (bits & 0x1f) as usize
        | if bits & Gfp::UNMAPPED.bits() != 0 {
            0x20
        } else {
            0
        }
}

/// The mask bits of a [`decode_index`].
const fn decode_bits(index: usize) -> u32 {
    let unmapped = if index & 0x20 != 0 {
        Gfp::UNMAPPED.bits()
    } else {
        0
    };
    index as u32 & 0x1f | unmapped
}

/// Every decoding, computed at compile time: the kernel's GFP_ZONE_TABLE
/// and GFP_ZONE_BAD, extended by mobility and mapping. `None` where
/// [`decode`] refuses the combination; the error path decodes again for
/// the reason, so that the table stays a few bytes an entry.
const DECODE_TABLE: [Option<(ZoneType, FreeType)>; 64] = {
    let mut table: [Option<(ZoneType, FreeType)>; 64] = [None; 64];
    let mut index = 0;
    while index < 64 {
        table[index] = match decode(decode_bits(index)) {
            Ok(decoded) => Some(decoded),
            Err(_) => None,
        };
        index += 1;
    }
    table
};

/// Decodes zone, migratetype and freetype; mirrors gfp_zone() and
/// gfp_migratetype(). Combinations the kernel calls bad are errors.
const fn decode(bits: u32) -> Decoded {
    let gfp = Gfp::from_bits_retain(bits);
    if gfp.contains(Gfp::DMA) {
        return Err("__GFP_DMA: allocations restricted to ZONE_DMA are not modelled");
    }
    let highest_zone = if gfp.contains(Gfp::DMA32) {
        if gfp.contains(Gfp::HIGHMEM) {
            return Err("__GFP_DMA32 with __GFP_HIGHMEM (GFP_ZONE_BAD)");
        }
        ZoneType::Dma32
    } else if gfp.contains(Gfp::HIGHMEM) && gfp.contains(Gfp::MOVABLE_BIT) {
        ZoneType::Movable
    } else {
        ZoneType::Normal
    };
    let migratetype = match (
        gfp.contains(Gfp::MOVABLE_BIT),
        gfp.contains(Gfp::RECLAIMABLE),
    ) {
        (false, false) => MigrateType::Unmovable,
        (true, false) => MigrateType::Movable,
        (false, true) => MigrateType::Reclaimable,
        (true, true) => return Err("__GFP_MOVABLE with __GFP_RECLAIMABLE"),
    };
    let flags = if gfp.contains(Gfp::UNMAPPED) {
        if matches!(migratetype, MigrateType::Reclaimable) {
            return Err("__GFP_UNMAPPED with __GFP_RECLAIMABLE has no freetype");
        }
        FreeTypeFlags::UNMAPPED
    } else {
        FreeTypeFlags::NONE
    };
    Ok((highest_zone, FreeType { migratetype, flags }))
}

impl Gfp {
    /// Decodes zone, migratetype and freetype (gfp_zone() and
    /// gfp_migratetype(), a table lookup as in the kernel). Combinations
    /// the kernel calls bad are errors.
    #[inline]
    pub(crate) fn request(self) -> Result<GfpRequest, GfpError> {
        match DECODE_TABLE[decode_index(self.bits())] {
            Some((highest_zone, freetype)) => Ok(GfpRequest {
                highest_zone,
                freetype,
                this_node: self.contains(Gfp::THISNODE),
                zero: self.contains(Gfp::ZERO),
            }),
            None => Err(self.refusal()),
        }
    }

    /// Why [`Self::request`] refuses this mask.
    #[cold]
    fn refusal(self) -> GfpError {
        GfpError(
            decode(decode_bits(decode_index(self.bits())))
                .err()
                .unwrap_or_default(),
        )
    }

    /// Flags of the slow path; mirrors gfp_to_alloc_flags() (cpusets and
    /// real-time tasks aside, which pageframe does not model).
    pub fn slowpath_alloc_flags(self, order: Order) -> AllocFlags {
        let mut flags = AllocFlags::CPUSET;
        if self.contains(Gfp::HIGH) {
            flags |= AllocFlags::MIN_RESERVE;
        }
        if self.contains(Gfp::KSWAPD_RECLAIM) {
            flags |= AllocFlags::KSWAPD;
        }
        if !self.contains(Gfp::DIRECT_RECLAIM) {
            if !self.contains(Gfp::NOMEMALLOC) {
                flags |= AllocFlags::NON_BLOCK;
                // Only a high-order request that may dip into the min
                // reserve (`__GFP_HIGH`, GFP_ATOMIC) may use, and so
                // create, the HIGHATOMIC reserve (6.3+); GFP_NOWAIT may not.
                if order > Order(0) && flags.contains(AllocFlags::MIN_RESERVE) {
                    flags |= AllocFlags::HIGHATOMIC;
                }
            }
            if flags.contains(AllocFlags::MIN_RESERVE) {
                flags.remove(AllocFlags::CPUSET);
            }
        }
        flags | self.noblock_flag()
    }

    /// Flags of the fast path: the low watermark (`ALLOC_WMARK_LOW`).
    pub fn fastpath_alloc_flags(self) -> AllocFlags {
        let mut flags = AllocFlags::WMARK_LOW | AllocFlags::CPUSET;
        if self.contains(Gfp::KSWAPD_RECLAIM) {
            flags |= AllocFlags::KSWAPD;
        }
        flags | self.noblock_flag()
    }

    /// `ALLOC_NOBLOCK` for callers that may not sleep (no `__GFP_DIRECT_RECLAIM`).
    #[inline]
    fn noblock_flag(self) -> AllocFlags {
        if self.contains(Gfp::DIRECT_RECLAIM) {
            AllocFlags::empty()
        } else {
            AllocFlags::NOBLOCK
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zones_and_migratetypes_as_the_kernel_maps_them() {
        let cases = [
            (Gfp::KERNEL, ZoneType::Normal, MigrateType::Unmovable),
            (Gfp::USER, ZoneType::Normal, MigrateType::Unmovable),
            (
                Gfp::HIGHUSER_MOVABLE,
                ZoneType::Movable,
                MigrateType::Movable,
            ),
            (Gfp::MOVABLE, ZoneType::Normal, MigrateType::Movable),
            (
                Gfp::KERNEL | Gfp::RECLAIMABLE,
                ZoneType::Normal,
                MigrateType::Reclaimable,
            ),
            (
                Gfp::KERNEL | Gfp::DMA32,
                ZoneType::Dma32,
                MigrateType::Unmovable,
            ),
            (Gfp::ATOMIC, ZoneType::Normal, MigrateType::Unmovable),
        ];
        for (gfp, zone, migratetype) in cases {
            let request = gfp.request().unwrap();
            assert_eq!(
                (request.highest_zone, request.freetype.migratetype),
                (zone, migratetype),
                "{gfp:?}"
            );
        }
    }

    #[test]
    fn bad_combinations_are_errors() {
        assert!(Gfp::DMA.request().is_err());
        assert!((Gfp::MOVABLE | Gfp::RECLAIMABLE).request().is_err());
        assert!((Gfp::KERNEL | Gfp::RECLAIMABLE | Gfp::UNMAPPED)
            .request()
            .is_err());
        let unmapped = (Gfp::KERNEL | Gfp::UNMAPPED).request().unwrap();
        assert_eq!(unmapped.freetype, FreeType::UNMAPPED_UNMOVABLE);
    }

    #[test]
    fn atomic_gets_reserves_and_highatomic_for_high_orders() {
        let flags = Gfp::ATOMIC.slowpath_alloc_flags(Order(3));
        assert!(flags
            .contains(AllocFlags::MIN_RESERVE | AllocFlags::NON_BLOCK | AllocFlags::HIGHATOMIC));
        assert!(!flags.contains(AllocFlags::CPUSET));
        assert_eq!(flags.watermark_index(), 0);
        let kernel = Gfp::KERNEL.slowpath_alloc_flags(Order(3));
        assert!(!kernel.intersects(AllocFlags::RESERVES));
        assert_eq!(Gfp::KERNEL.fastpath_alloc_flags().watermark_index(), 1);
    }

    /// gfp_to_alloc_flags() (6.3+): a non-blocking high-order request may
    /// use the HIGHATOMIC reserve only with `__GFP_HIGH`; GFP_NOWAIT gets
    /// ALLOC_NON_BLOCK and no more.
    #[test]
    fn nowait_high_orders_get_no_highatomic_reserve() {
        let nowait = Gfp::NOWAIT.slowpath_alloc_flags(Order(3));
        assert!(nowait.contains(AllocFlags::NON_BLOCK));
        assert!(!nowait.intersects(AllocFlags::HIGHATOMIC | AllocFlags::MIN_RESERVE));
        let high = (Gfp::NOWAIT | Gfp::HIGH).slowpath_alloc_flags(Order(3));
        assert!(high.contains(AllocFlags::HIGHATOMIC | AllocFlags::MIN_RESERVE));
        assert!(!Gfp::ATOMIC
            .slowpath_alloc_flags(Order(0))
            .contains(AllocFlags::HIGHATOMIC));
    }
}
