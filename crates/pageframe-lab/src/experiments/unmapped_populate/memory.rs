//! What a run of `unmapped-populate` holds of host memory, and the check
//! that refuses to start a run the host cannot hold (no swap here: a run
//! that does not fit is killed by the OOM killer part way).
//!
//! Each variant's machine is the region plus a slack for the allocator's own
//! needs ([`machine_bytes`]): the zone's high watermark and the per-CPU
//! lists stay free beside the populated region, so the region never presses
//! on the allocator (no watermark is crossed, nothing is reclaimed); after
//! boot [`super::populate`] checks this against the allocator's own
//! watermarks. An arena is a memfd of the machine's size, faulted in at
//! creation, so it holds all of that memory while it lives; every variant's
//! arena lives through the whole sampling phase (the variants are sampled in
//! turn), and the simulated machines come after the arenas are gone, one at
//! a time.
//!
//! Invariants: the sizes are computed with checked arithmetic from the
//! parameters (bounded when the config is read); the check reads
//! `MemAvailable` once, before anything is allocated.

use super::{PAGEBLOCK_BYTES, PAGE_SIZE};
use crate::host_memory::gib;

/// Memory of each machine for the zone's high watermark at small regions:
/// twice `min_free_kbytes` plus 0.2% of the zone stay under 64 MiB up to
/// a region of 8 GiB (`min_free_kbytes` is 11.6 MiB there).
const WATERMARK_BYTES: u64 = 64 << 20;
/// The proportional part of the watermark room: region / 256, over the 0.2%
/// of the zone that the high watermark's two steps take at large regions.
const WATERMARK_SHIFT: u32 = 8;
/// The per-CPU lists may together grow to 1/8 of the zone (their `high_max`,
/// zone_highsize() with MIN_PERCPU_PAGELIST_HIGH_FRACTION), so the machine
/// is 8/7 of the region and the watermark room.
const PCP_SHARE: (u64, u64) = (8, 7);
/// Host bytes per page of a machine beyond the page's own bytes: the
/// memmap record (16), the list of pages held by a sample (8), the
/// page-table entries of the direct map (8) and of the mermap agents'
/// views of the memfd (8 each, two agents), the mapped-state bit, with
/// room for the allocator's allocations that grow with the machine. (A run
/// of five 512 MiB regions on 662 MiB arenas, with 16 GiB simulated,
/// measured 3315 MiB of shared memory and at most 86 MiB beside it.)
const BOOKKEEPING_BYTES_PER_PAGE: u64 = 64;
/// Memory left to the rest of the host beside the run.
pub const HOST_MARGIN_BYTES: u64 = 1 << 30;

/// Bytes of the emulated machine that populates `region_bytes`: 8/7 of
/// the region plus 64 MiB plus region / 256, in whole pageblocks; `None` on
/// overflow.
pub fn machine_bytes(region_bytes: u64) -> Option<u64> {
    let (numerator, denominator) = PCP_SHARE;
    region_bytes
        .checked_add(WATERMARK_BYTES)?
        .checked_add(region_bytes >> WATERMARK_SHIFT)?
        .checked_mul(numerator)?
        .div_ceil(denominator)
        .checked_next_multiple_of(PAGEBLOCK_BYTES)
}

/// What a run holds of host memory at its peak, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryNeed {
    /// The sampling phase: every variant's arena populated at once, with
    /// its bookkeeping.
    pub arenas: u64,
    /// The largest simulated machine's bookkeeping (0 without simulated
    /// rows); it has no bytes of its own.
    pub sim: u64,
}

impl MemoryNeed {
    /// The need of `arenas` arenas populating `region_bytes` each, and of a
    /// simulated machine populating `sim_region_bytes`; `None` on overflow.
    pub fn of(region_bytes: u64, arenas: u64, sim_region_bytes: u64) -> Option<MemoryNeed> {
        let bookkeeping =
            |machine: u64| (machine / PAGE_SIZE).checked_mul(BOOKKEEPING_BYTES_PER_PAGE);
        let arena_machine = machine_bytes(region_bytes)?;
        let arena = arena_machine.checked_add(bookkeeping(arena_machine)?)?;
        let sim = if sim_region_bytes == 0 {
            0
        } else {
            bookkeeping(machine_bytes(sim_region_bytes)?)?
        };
        Some(MemoryNeed {
            arenas: arena.checked_mul(arenas)?,
            sim,
        })
    }

    /// The peak: the larger phase.
    pub fn peak(&self) -> u64 {
        self.arenas.max(self.sim)
    }

    /// Refuses a run whose peak and [`HOST_MARGIN_BYTES`] do not fit in
    /// `available` bytes (the host's `MemAvailable`; `None` when the host
    /// does not say, and then nothing is refused). The error is one line
    /// naming both figures.
    pub fn check(&self, available: Option<u64>) -> Result<(), String> {
        let Some(available) = available else {
            return Ok(());
        };
        let wanted = self.peak().saturating_add(HOST_MARGIN_BYTES);
        if available >= wanted {
            return Ok(());
        }
        Err(format!(
            "needs {} of host memory ({} at its peak, {} left to the host), but MemAvailable is {}; use --scale quick or smaller region_mib/sim_region_gib in a config file",
            gib(wanted),
            gib(self.peak()),
            gib(HOST_MARGIN_BYTES),
            gib(available),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;

    #[test]
    fn machines_are_eight_sevenths_of_the_region_and_watermarks_in_pageblocks() {
        // Quick scale: (64 MiB + 64 MiB + 256 KiB) * 8/7 = 146.6 MiB.
        assert_eq!(machine_bytes(64 * MIB), Some(148 * MIB));
        // Full scale: (2 GiB + 64 MiB + 8 MiB) * 8/7 = 2422.9 MiB, where it
        // was twice the region plus 64 MiB (4160 MiB).
        assert_eq!(machine_bytes(2048 * MIB), Some(2424 * MIB));
        assert_eq!(machine_bytes(2 * MIB), Some(76 * MIB));
        assert_eq!(machine_bytes(u64::MAX - MIB), None);
        for region in [2 * MIB, 64 * MIB, 2048 * MIB, 8192 * MIB, 512 * GIB] {
            let machine = machine_bytes(region).unwrap();
            assert_eq!(machine % PAGEBLOCK_BYTES, 0, "{region}");
            // The per-CPU lists' 1/8 and the watermark room fit beside it.
            assert!(
                machine - machine / 8 >= region + WATERMARK_BYTES + region / 256,
                "{region}"
            );
        }
    }

    #[test]
    fn the_peak_is_every_arena_at_once_or_the_simulated_machine() {
        let full = MemoryNeed::of(2048 * MIB, 5, 256 * GIB).unwrap();
        // 5 arenas of 2424 MiB, each with 64 bytes per page of bookkeeping
        // (37.9 MiB): 12.0 GiB, about half of this 23 GiB host.
        assert_eq!(full.arenas, 5 * (2424 * MIB + 2424 * MIB / 64));
        // (256 GiB + 64 MiB + 1 GiB) * 8/7 = 300 836.6 MiB of machine.
        assert_eq!(full.sim, 300_838 * MIB / 64);
        assert_eq!(full.peak(), full.arenas);
        let quick = MemoryNeed::of(64 * MIB, 5, 4 * GIB).unwrap();
        assert_eq!(quick.arenas, 5 * (148 * MIB + 148 * MIB / 64));
        assert_eq!(quick.sim, 4774 * MIB / 64);
        assert_eq!(MemoryNeed::of(64 * MIB, 5, 0).unwrap().sim, 0);
        // Only the simulated machine at its largest outgrows the arenas.
        let sim_heavy = MemoryNeed::of(64 * MIB, 5, 512 * GIB).unwrap();
        assert_eq!(sim_heavy.peak(), sim_heavy.sim);
        assert_eq!(MemoryNeed::of(u64::MAX / 2, 5, 0), None);
    }

    #[test]
    fn the_check_refuses_a_host_without_the_peak_and_the_margin() {
        let full = MemoryNeed::of(2048 * MIB, 5, 256 * GIB).unwrap();
        let wanted = full.peak() + HOST_MARGIN_BYTES;
        assert_eq!(full.check(Some(wanted)), Ok(()));
        assert_eq!(full.check(Some(23 * GIB)), Ok(()));
        assert_eq!(full.check(None), Ok(()));
        let error = full.check(Some(wanted - 1)).unwrap_err();
        assert_eq!(
            error,
            "needs 13.0 GiB of host memory (12.0 GiB at its peak, 1.0 GiB left to the host), but MemAvailable is 13.0 GiB; use --scale quick or smaller region_mib/sim_region_gib in a config file"
        );
        assert!(!error.contains('\n'));
        assert!(full
            .check(Some(8 * GIB))
            .unwrap_err()
            .contains("MemAvailable is 8.0 GiB"));
    }
}
