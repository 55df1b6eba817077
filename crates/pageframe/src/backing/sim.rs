//! The simulated backing: page contents in a sparse store, every event
//! counted and charged a price in simulated time, so that a TiB machine runs
//! the same code paths as a real arena at the cost of a bitmap (one bit per
//! page), a directory of the store and the pages actually written.
//!
//! Invariants: those of the [`Backing`] trait, with "reachable through the
//! direct map" read as "its state bit says mapped"; `sim_ns` is the sum of
//! the [`SimCosts`] prices of the events counted so far. The mermap's access
//! mode is accepted and changes nothing: without a file, a window slot and
//! file I/O are the same bookkeeping, counted and charged alike.

use std::ptr::NonNull;

use super::core::BackingCore;
use super::costs::SimCosts;
use super::counters::BackingCounters;
use super::direct_map::{page_pieces, DirectMap};
use super::mermap::{MermapConfig, MermapSlots};
use super::page_store::PageStore;
use super::{Backing, BackingError, BackingKind};
use crate::machine::format_size;
use crate::types::{CpuId, Pfn};

/// The simulation's slots: a page in a slot is its PFN, reached in the
/// store; mapping and flushing only cost what the counters charge. With no
/// file to reach, both [`MermapAccess`](super::MermapAccess) modes behave
/// alike.
#[derive(Debug)]
struct SimSlots {
    store: PageStore,
}

impl MermapSlots for SimSlots {
    type Page = Pfn;

    fn map_slot(
        &self,
        _cpu: usize,
        _slot: u32,
        first: Pfn,
        _nr_pages: u64,
    ) -> Result<Pfn, BackingError> {
        Ok(first)
    }

    fn page_in_span(&self, first: Pfn, index: u64) -> Pfn {
        Pfn(first.0 + index)
    }

    fn zero_page(&self, page: Pfn) -> Result<(), BackingError> {
        self.store.zero(page, 1);
        Ok(())
    }

    fn write(&self, page: Pfn, offset: usize, bytes: &[u8]) -> Result<(), BackingError> {
        self.store.write(page, offset, bytes)
    }

    fn read(&self, page: Pfn, offset: usize, out: &mut [u8]) -> Result<(), BackingError> {
        self.store.read(page, offset, out);
        Ok(())
    }

    fn flush_slots(&self, _cpu: usize, _first: u32, _count: u32) -> Result<(), BackingError> {
        Ok(())
    }
}

/// A backing whose bytes live in a sparse store: mapped state, page
/// contents, counters and simulated time.
#[derive(Debug)]
pub struct SimBacking {
    core: BackingCore<SimSlots>,
}

impl SimBacking {
    /// A simulated backing of `nr_pages` pages of `page_size` bytes (a power
    /// of two), all mapped, with a mermap window for each of `nr_cpus` CPUs,
    /// charging `costs`. Fails on an empty backing, no CPU, a bad page size,
    /// an invalid `mermap`, or no memory for the state bitmap
    /// (`nr_pages / 8` bytes, zeroed lazily by the OS) or the store's
    /// directory (`nr_pages / 64` bytes).
    pub fn new(
        nr_pages: u64,
        page_size: usize,
        nr_cpus: usize,
        costs: SimCosts,
        mermap: MermapConfig,
    ) -> Result<SimBacking, BackingError> {
        DirectMap::check_geometry(nr_pages, page_size)?;
        let slots = SimSlots {
            store: PageStore::new(nr_pages, page_size)?,
        };
        Ok(SimBacking {
            core: BackingCore::new(nr_pages, page_size, nr_cpus, mermap, slots, costs)?,
        })
    }

    fn store(&self) -> &PageStore {
        &self.core.mermap.slots().store
    }

    /// Pages whose contents the store holds (written and not zeroed since).
    pub fn nr_pages_stored(&self) -> u64 {
        self.store().nr_written()
    }
}

impl Backing for SimBacking {
    fn kind(&self) -> BackingKind {
        BackingKind::Sim
    }

    fn page_size(&self) -> usize {
        self.core.direct_map.page_size()
    }

    fn nr_pages(&self) -> u64 {
        self.core.direct_map.nr_pages()
    }

    fn direct_map_ptr(&self, _pfn: Pfn) -> Option<NonNull<u8>> {
        None
    }

    fn is_direct_mapped(&self, pfn: Pfn) -> bool {
        self.core.direct_map.is_mapped(pfn)
    }

    fn page_bytes(&self, pfn: Pfn) -> Option<NonNull<u8>> {
        if !self.is_direct_mapped(pfn) {
            return None;
        }
        self.store().page_bytes(pfn)
    }

    fn unmap_direct(&self, start: Pfn, nr_pages: u64) -> Result<(), BackingError> {
        self.core
            .direct_map
            .set_valid(&self.core.counters, start, nr_pages, false, |_| Ok(()))
    }

    fn remap_direct(&self, start: Pfn, nr_pages: u64) -> Result<(), BackingError> {
        self.core
            .direct_map
            .set_valid(&self.core.counters, start, nr_pages, true, |_| Ok(()))
    }

    fn write_mapped(&self, pfn: Pfn, offset: usize, bytes: &[u8]) -> Result<(), BackingError> {
        let start = self
            .core
            .direct_map
            .check_mapped_bytes(pfn, offset, bytes.len())?;
        let page_size = self.core.direct_map.page_size();
        let first = start / page_size as u64;
        let in_first = (start % page_size as u64) as usize;
        if in_first + bytes.len() <= page_size {
            // The common case: the bytes lie in one page.
            return self.store().write(Pfn(first), in_first, bytes);
        }
        for (page, in_page, from, len) in page_pieces(page_size, in_first, bytes.len()) {
            self.store()
                .write(Pfn(first + page as u64), in_page, &bytes[from..from + len])?;
        }
        Ok(())
    }

    fn read_mapped(&self, pfn: Pfn, offset: usize, out: &mut [u8]) -> Result<(), BackingError> {
        let start = self
            .core
            .direct_map
            .check_mapped_bytes(pfn, offset, out.len())?;
        let page_size = self.core.direct_map.page_size();
        let first = start / page_size as u64;
        let in_first = (start % page_size as u64) as usize;
        if in_first + out.len() <= page_size {
            self.store().read(Pfn(first), in_first, out);
            return Ok(());
        }
        for (page, in_page, to, len) in page_pieces(page_size, in_first, out.len()) {
            self.store()
                .read(Pfn(first + page as u64), in_page, &mut out[to..to + len]);
        }
        Ok(())
    }

    fn zero_mapped(&self, start: Pfn, nr_pages: u64) -> Result<(), BackingError> {
        self.core.direct_map.check_mapped(start, nr_pages)?;
        self.store().zero(start, nr_pages);
        self.core.counters.pages_zeroed(nr_pages);
        Ok(())
    }

    fn zero_unmapped(&self, cpu: CpuId, start: Pfn, nr_pages: u64) -> Result<(), BackingError> {
        self.core.zero_unmapped(cpu, start, nr_pages)
    }

    fn write_unmapped(
        &self,
        cpu: CpuId,
        pfn: Pfn,
        offset: usize,
        bytes: &[u8],
    ) -> Result<(), BackingError> {
        self.core.write_unmapped(cpu, pfn, offset, bytes)
    }

    fn read_unmapped(
        &self,
        cpu: CpuId,
        pfn: Pfn,
        offset: usize,
        out: &mut [u8],
    ) -> Result<(), BackingError> {
        self.core.read_unmapped(cpu, pfn, offset, out)
    }

    fn set_contents_kept(&self, kept: bool) {
        self.store().set_kept(kept);
    }

    fn counters(&self) -> BackingCounters {
        self.core.counters()
    }

    fn describe(&self) -> String {
        let map = &self.core.direct_map;
        let bytes = (map.nr_pages()).saturating_mul(map.page_size() as u64);
        format!(
            "sim: {} in {} pages of {} bytes, contents in a sparse store, mermap {} slots x {} CPUs",
            format_size(bytes),
            map.nr_pages(),
            map.page_size(),
            self.core.mermap.config().slots_per_cpu,
            self.core.mermap.nr_cpus(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: prices come from a calibration file anyone can edit.
    /// Prices near u64::MAX overflowed the sum of a protection change and
    /// its flush (a panic with overflow checks) and wrapped the running
    /// total (a small figure in release); the charge saturates now.
    #[test]
    fn absurd_prices_saturate_the_charge() {
        let costs = SimCosts {
            protection_change: u64::MAX,
            global_flush: u64::MAX,
            local_flush: u64::MAX,
            zero_page: u64::MAX,
            mermap_map: u64::MAX,
            copy_byte_ps: u64::MAX,
        };
        let backing = SimBacking::new(1024, 4096, 2, costs, MermapConfig::default()).unwrap();
        backing.unmap_direct(Pfn(0), 512).unwrap();
        backing.remap_direct(Pfn(0), 512).unwrap();
        backing.zero_mapped(Pfn(0), 4).unwrap();
        assert_eq!(backing.counters().sim_ns, u64::MAX / 1000);
    }

    #[test]
    fn sim_charges_each_event_its_price() {
        let costs = SimCosts::default();
        let backing = SimBacking::new(1024, 4096, 2, costs, MermapConfig::default()).unwrap();
        backing.unmap_direct(Pfn(0), 512).unwrap();
        backing.remap_direct(Pfn(0), 512).unwrap();
        backing.zero_mapped(Pfn(0), 4).unwrap();
        backing
            .write_unmapped(CpuId(0), Pfn(1), 0, &[0; 10])
            .unwrap();
        let expected_ps = 1000
            * (2 * costs.protection_change
                + costs.global_flush
                + 4 * costs.zero_page
                + costs.mermap_map)
            + 10 * costs.copy_byte_ps;
        assert_eq!(backing.counters().sim_ns, expected_ps / 1000);
    }

    #[test]
    fn sim_of_a_tebibyte_is_cheap_and_checks_its_geometry() {
        let pages = 1 << 28;
        let backing = SimBacking::new(
            pages,
            4096,
            64,
            SimCosts::default(),
            MermapConfig::default(),
        )
        .unwrap();
        backing.unmap_direct(Pfn(pages - 1), 1).unwrap();
        assert!(!backing.is_direct_mapped(Pfn(pages - 1)));
        assert!(backing.is_direct_mapped(Pfn(pages - 2)));
        let new = |pages, page_size, cpus| {
            SimBacking::new(
                pages,
                page_size,
                cpus,
                SimCosts::NONE,
                MermapConfig::default(),
            )
        };
        for bad in [
            new(0, 4096, 1),
            new(1, 3000, 1),
            new(1, 4096, 0),
            new(u64::MAX, 4096, 1),
        ] {
            assert!(matches!(bad, Err(BackingError::Unsupported(_))));
        }
    }
}
