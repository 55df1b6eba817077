//! The page allocator's sysctls under /proc/sys/vm, read and written as
//! text: `min_free_kbytes`, `watermark_boost_factor`,
//! `watermark_scale_factor`, `percpu_pagelist_high_fraction` and
//! `lowmem_reserve_ratio`. A write does what its handler in
//! mm/page_alloc.c (6.12) does:
//!
//! | sysctl | accepted | then |
//! |---|---|---|
//! | min_free_kbytes | 0..=INT_MAX | remembered as the user's value; setup_per_zone_wmarks() |
//! | watermark_scale_factor | 1..=3000 | setup_per_zone_wmarks() |
//! | watermark_boost_factor | 0..=INT_MAX | read at the next boost; boosts in force stay |
//! | percpu_pagelist_high_fraction | 0, or 8..=INT_MAX | zone_set_pageset_high_and_batch() if it changed |
//! | lowmem_reserve_ratio | any int per zone | below 1 becomes 0; setup_per_zone_lowmem_reserve() |
//!
//! A write of zero bytes stores nothing but still runs the handler (so it
//! makes the current min_free_kbytes the user's value).
//! setup_per_zone_wmarks() recomputes every zone's watermarks (dropping any
//! boost) and then its per-CPU high and batch, which follow the low
//! watermark; the per-CPU lists are not drained (the next free or the
//! vmstat decay brings them under a lower `high`). A refused write changes
//! nothing, except that `lowmem_reserve_ratio`, like the kernel's handler,
//! ignores a parse error: the values before the bad one are stored and the
//! write succeeds. The text is parsed as the kernel parses it
//! (`sysctl_text`). Writes take `&mut self`: no CPU handle is alive.

use super::sysctl_text::{parse_int_write, render_ints};
use super::{AllocOptions, PageAllocator};
use crate::alloc_policy::PcpSizing;
use crate::machine::DescError;
use crate::sync::LockFamily;
use crate::types::ZoneType;
use crate::Errno;

/// A page-allocator sysctl of /proc/sys/vm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VmSysctl {
    /// `vm.min_free_kbytes`: the memory, in KiB, the zones' min watermarks
    /// share.
    MinFreeKbytes,
    /// `vm.watermark_boost_factor`: how far a fallback may boost a zone's
    /// watermarks, in ten-thousandths of its high watermark.
    WatermarkBoostFactor,
    /// `vm.watermark_scale_factor`: the gap between a zone's watermarks, in
    /// ten-thousandths of its managed pages.
    WatermarkScaleFactor,
    /// `vm.percpu_pagelist_high_fraction`: 0 sizes the per-CPU lists from
    /// the low watermark; N sizes them from 1/N of the zone.
    PercpuPagelistHighFraction,
    /// `vm.lowmem_reserve_ratio`: one ratio per zone type.
    LowmemReserveRatio,
}

impl VmSysctl {
    /// Every sysctl, in the kernel's table order.
    pub const ALL: [VmSysctl; 5] = [
        VmSysctl::MinFreeKbytes,
        VmSysctl::WatermarkBoostFactor,
        VmSysctl::WatermarkScaleFactor,
        VmSysctl::PercpuPagelistHighFraction,
        VmSysctl::LowmemReserveRatio,
    ];

    /// The file's name under /proc/sys/vm.
    pub const fn name(self) -> &'static str {
        match self {
            VmSysctl::MinFreeKbytes => "min_free_kbytes",
            VmSysctl::WatermarkBoostFactor => "watermark_boost_factor",
            VmSysctl::WatermarkScaleFactor => "watermark_scale_factor",
            VmSysctl::PercpuPagelistHighFraction => "percpu_pagelist_high_fraction",
            VmSysctl::LowmemReserveRatio => "lowmem_reserve_ratio",
        }
    }

    /// The sysctl `name` names: `vm.min_free_kbytes`, `vm/min_free_kbytes`,
    /// `/proc/sys/vm/min_free_kbytes` or plain `min_free_kbytes`.
    pub fn from_name(name: &str) -> Option<VmSysctl> {
        let plain = ["/proc/sys/vm/", "vm.", "vm/"]
            .iter()
            .find_map(|prefix| name.strip_prefix(prefix))
            .unwrap_or(name);
        VmSysctl::ALL
            .into_iter()
            .find(|sysctl| sysctl.name() == plain)
    }

    /// The values a write takes (the table's `maxlen / sizeof(int)`).
    fn slots(self) -> usize {
        match self {
            VmSysctl::LowmemReserveRatio => ZoneType::COUNT,
            _ => 1,
        }
    }

    /// The bounds a written value must lie in (the table's `extra1` and
    /// `extra2`; an `int` otherwise).
    fn bounds(self) -> (i32, i32) {
        match self {
            VmSysctl::MinFreeKbytes
            | VmSysctl::WatermarkBoostFactor
            | VmSysctl::PercpuPagelistHighFraction => (0, i32::MAX),
            VmSysctl::WatermarkScaleFactor => (1, 3000),
            VmSysctl::LowmemReserveRatio => (i32::MIN, i32::MAX),
        }
    }

    /// Whether `value` is one the sysctl can hold: in its bounds, and for
    /// the per-CPU fraction what [`PcpSizing::check`] takes.
    fn holds(self, value: u64) -> bool {
        let (min, max) = self.bounds();
        let in_bounds = i64::try_from(value)
            .is_ok_and(|value| (i64::from(min.max(0))..=i64::from(max)).contains(&value));
        in_bounds
            && (self != VmSysctl::PercpuPagelistHighFraction
                || u32::try_from(value)
                    .is_ok_and(|fraction| PcpSizing::new(fraction, None).is_ok()))
    }
}

impl AllocOptions {
    /// The option fields a sysctl also sets, checked as a write of them
    /// would be: a [`DescError`] naming the first that no write could set.
    pub(crate) fn check_sysctl_fields(&self) -> Result<(), DescError> {
        let fields = [
            (VmSysctl::WatermarkBoostFactor, self.watermark_boost_factor),
            (
                VmSysctl::WatermarkScaleFactor,
                u64::from(self.watermark_scale_factor),
            ),
            (
                VmSysctl::PercpuPagelistHighFraction,
                u64::from(self.pcp.high_fraction),
            ),
        ]
        .into_iter()
        .chain(
            self.lowmem_reserve_ratio
                .iter()
                .map(|ratio| (VmSysctl::LowmemReserveRatio, u64::from(*ratio))),
        );
        for (sysctl, value) in fields {
            if !sysctl.holds(value) {
                let (min, max) = sysctl.bounds();
                return Err(DescError::new(
                    sysctl.name(),
                    format!(
                        "{value} is not a value vm.{} takes ({}..={max})",
                        sysctl.name(),
                        min.max(0)
                    ),
                ));
            }
        }
        Ok(())
    }
}

impl<L: LockFamily> PageAllocator<L> {
    /// The sysctl's values.
    pub fn sysctl_values(&self, sysctl: VmSysctl) -> Vec<u64> {
        match sysctl {
            VmSysctl::MinFreeKbytes => vec![self.min_free_kbytes],
            VmSysctl::WatermarkBoostFactor => vec![self.options.watermark_boost_factor],
            VmSysctl::WatermarkScaleFactor => vec![u64::from(self.options.watermark_scale_factor)],
            VmSysctl::PercpuPagelistHighFraction => vec![u64::from(self.options.pcp.high_fraction)],
            VmSysctl::LowmemReserveRatio => self
                .options
                .lowmem_reserve_ratio
                .iter()
                .map(|ratio| u64::from(*ratio))
                .collect(),
        }
    }

    /// The sysctl as reading /proc/sys/vm/NAME shows it: `67584\n`, a
    /// vector's values separated by tabs.
    pub fn read_sysctl(&self, sysctl: VmSysctl) -> String {
        let values: Vec<i64> = self
            .sysctl_values(sysctl)
            .into_iter()
            .map(|value| i64::try_from(value).unwrap_or(i64::MAX))
            .collect();
        render_ints(&values)
    }

    /// Writes `text` to the sysctl, as `printf %s text > /proc/sys/vm/NAME`
    /// does, and recomputes what its handler recomputes (see the module
    /// header). EINVAL for text the kernel refuses, leaving every value as
    /// it was (`lowmem_reserve_ratio` keeps what it stored before a bad
    /// value and succeeds, as the kernel's handler does).
    pub fn write_sysctl(&mut self, sysctl: VmSysctl, text: impl AsRef<[u8]>) -> Result<(), Errno> {
        let (min, max) = sysctl.bounds();
        let page_size = 1usize << self.layout.page_shift;
        let write = parse_int_write(text.as_ref(), sysctl.slots(), min, max, page_size);
        // A scalar's value once the write succeeded (within the bounds, so
        // not negative); `None` after a write of zero bytes, which keeps
        // the value but still runs the handler.
        let scalar = || -> Result<Option<u32>, Errno> {
            write.result?;
            write
                .stored
                .first()
                .map(|value| u32::try_from(*value).map_err(|_| Errno::EINVAL))
                .transpose()
        };
        match sysctl {
            VmSysctl::MinFreeKbytes => {
                let value = scalar()?.map_or(self.min_free_kbytes, u64::from);
                self.min_free_kbytes = value;
                self.user_min_free_kbytes = Some(value);
                self.setup_per_zone_wmarks();
            }
            VmSysctl::WatermarkScaleFactor => {
                let value = scalar()?.unwrap_or(self.options.watermark_scale_factor);
                self.options.watermark_scale_factor = value;
                self.setup_per_zone_wmarks();
            }
            VmSysctl::WatermarkBoostFactor => {
                if let Some(value) = scalar()? {
                    self.options.watermark_boost_factor = u64::from(value);
                    self.set_boost_limits(true);
                }
            }
            VmSysctl::PercpuPagelistHighFraction => {
                let value = scalar()?.unwrap_or(self.options.pcp.high_fraction);
                if !sysctl.holds(u64::from(value)) {
                    return Err(Errno::EINVAL);
                }
                if value != self.options.pcp.high_fraction {
                    self.options.pcp.high_fraction = value;
                    self.set_pageset_high_and_batch();
                }
            }
            VmSysctl::LowmemReserveRatio => {
                // lowmem_reserve_ratio_sysctl_handler() ignores the parse's
                // result: what was stored stays, negative values become 0.
                for (ratio, value) in self
                    .options
                    .lowmem_reserve_ratio
                    .iter_mut()
                    .zip(&write.stored)
                {
                    *ratio = u32::try_from(*value).unwrap_or(0);
                }
                self.setup_lowmem_reserve();
            }
        }
        Ok(())
    }
}
