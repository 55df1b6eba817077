//! What both backings hold and do alike: the geometry and mapped state
//! ([`DirectMap`]), the mermap over the backing's own slot layer, and the
//! event counters. The mermap accessors (zero, write, read through a CPU's
//! window) live here once; a backing adds only how its bytes are reached.
//!
//! Invariants: those of its three parts; the counters count every event
//! of the direct map and the mermap.

use super::costs::SimCosts;
use super::counters::{BackingCounters, EventCounters};
use super::direct_map::DirectMap;
use super::mermap::{Mermap, MermapConfig, MermapSlots};
use super::BackingError;
use crate::types::{CpuId, Pfn};

/// The state both backings share; `S` is the backing's slot layer.
#[derive(Debug)]
pub(crate) struct BackingCore<S: MermapSlots> {
    pub(crate) direct_map: DirectMap,
    pub(crate) mermap: Mermap<S>,
    pub(crate) counters: EventCounters,
}

impl<S: MermapSlots> BackingCore<S> {
    /// `nr_pages` pages of `page_size` bytes, all mapped, a mermap window
    /// for each of `nr_cpus` CPUs over `slots`, charging `costs`.
    pub(crate) fn new(
        nr_pages: u64,
        page_size: usize,
        nr_cpus: usize,
        mermap: MermapConfig,
        slots: S,
        costs: SimCosts,
    ) -> Result<BackingCore<S>, BackingError> {
        Ok(BackingCore {
            mermap: Mermap::new(mermap, nr_cpus, slots)?,
            direct_map: DirectMap::new(nr_pages, page_size)?,
            counters: EventCounters::new(costs),
        })
    }

    /// Zeroes pages through `cpu`'s mermap window (Backing::zero_unmapped).
    pub(crate) fn zero_unmapped(
        &self,
        cpu: CpuId,
        start: Pfn,
        nr_pages: u64,
    ) -> Result<(), BackingError> {
        self.mermap
            .zero(&self.direct_map, &self.counters, cpu, start, nr_pages)
    }

    /// Copies bytes into a page through `cpu`'s window (Backing::write_unmapped).
    pub(crate) fn write_unmapped(
        &self,
        cpu: CpuId,
        pfn: Pfn,
        offset: usize,
        bytes: &[u8],
    ) -> Result<(), BackingError> {
        self.mermap
            .write(&self.direct_map, &self.counters, cpu, pfn, offset, bytes)
    }

    /// Copies bytes out of a page through `cpu`'s window (Backing::read_unmapped).
    pub(crate) fn read_unmapped(
        &self,
        cpu: CpuId,
        pfn: Pfn,
        offset: usize,
        out: &mut [u8],
    ) -> Result<(), BackingError> {
        self.mermap
            .read(&self.direct_map, &self.counters, cpu, pfn, offset, out)
    }

    /// The counters' snapshot.
    pub(crate) fn counters(&self) -> BackingCounters {
        self.counters.snapshot()
    }
}
