//! The zone flags the allocation and free fast paths read: the kernel's
//! `zone->flags` bits `ZONE_BELOW_HIGH` and `ZONE_RECLAIM_ACTIVE`, in one
//! atomic byte, so that a free reads both with one load (as the kernel's
//! test_bit() calls read one word).
//!
//! Any CPU may set or clear a bit at any time; each change is one atomic
//! read-modify-write of the byte (set_bit()/clear_bit()), so the two bits
//! never overwrite each other.

use std::sync::atomic::{AtomicU8, Ordering};

use crate::pcp::ZonePressure;

/// `ZONE_BELOW_HIGH`: an allocation found the zone below its high
/// watermark; per-CPU frees then shrink `high`. Cleared by a pcp drain that
/// finds the zone above it again.
const BELOW_HIGH: u8 = 1 << 0;
/// `ZONE_RECLAIM_ACTIVE`: kswapd is balancing the zone's node.
const RECLAIM_ACTIVE: u8 = 1 << 1;

/// One zone's flags.
#[derive(Default)]
pub(crate) struct ZoneFlags(AtomicU8);

impl ZoneFlags {
    /// `test_bit(ZONE_BELOW_HIGH)`.
    #[inline]
    pub(crate) fn below_high(&self) -> bool {
        self.0.load(Ordering::Relaxed) & BELOW_HIGH != 0
    }

    /// Sets or clears `ZONE_BELOW_HIGH`.
    #[inline]
    pub(crate) fn set_below_high(&self, on: bool) {
        self.set(BELOW_HIGH, on);
    }

    /// Sets or clears `ZONE_RECLAIM_ACTIVE`.
    pub(crate) fn set_reclaim_active(&self, on: bool) {
        self.set(RECLAIM_ACTIVE, on);
    }

    /// Both flags, as the per-CPU sizing reads them, with one load.
    #[inline]
    pub(crate) fn pressure(&self) -> ZonePressure {
        let bits = self.0.load(Ordering::Relaxed);
        ZonePressure {
            below_high: bits & BELOW_HIGH != 0,
            reclaim_active: bits & RECLAIM_ACTIVE != 0,
        }
    }

    fn set(&self, bit: u8, on: bool) {
        if on {
            self.0.fetch_or(bit, Ordering::Relaxed);
        } else {
            self.0.fetch_and(!bit, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bits_are_independent() {
        let flags = ZoneFlags::default();
        assert_eq!(flags.pressure(), ZonePressure::default());
        flags.set_below_high(true);
        flags.set_reclaim_active(true);
        flags.set_below_high(false);
        assert!(!flags.below_high());
        assert_eq!(
            flags.pressure(),
            ZonePressure {
                below_high: false,
                reclaim_active: true
            }
        );
        flags.set_below_high(true);
        flags.set_reclaim_active(false);
        assert!(flags.below_high());
        assert!(!flags.pressure().reclaim_active);
    }
}
