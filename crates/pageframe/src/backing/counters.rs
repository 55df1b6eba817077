//! What a backing counts: protection changes, TLB flushes, zeroing, mermap use,
//! and, for the simulation, the time each event is charged.
//!
//! [`EventCounters`] is the live, shared form (one atomic per event, updated
//! with relaxed ordering: the counters order nothing, they only add up);
//! [`BackingCounters`] is a snapshot of it. Both backings record through the
//! same methods, so an event is counted the same way whatever the backing.
//!
//! Invariants of a snapshot taken while no operation runs:
//! `tlb_flush_global == direct_map_unmaps`,
//! `tlb_flush_local == mermap_wraps + mermap_fallbacks`, and
//! `sim_ns == floor(sim_ps / 1000)` where `sim_ps` sums, per event, its
//! [`SimCosts`] price (all zero for a real arena), saturating at u64::MAX.

use std::sync::atomic::{AtomicU64, Ordering};

use super::costs::SimCosts;

/// A snapshot of a backing's event counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BackingCounters {
    /// `unmap_direct` calls (protection changes that removed pages).
    pub direct_map_unmaps: u64,
    /// Pages removed from the direct map.
    pub pages_unmapped: u64,
    /// `remap_direct` calls.
    pub direct_map_remaps: u64,
    /// Pages put back into the direct map.
    pub pages_remapped: u64,
    /// Global TLB flushes (shootdowns of every CPU).
    pub tlb_flush_global: u64,
    /// Local TLB flushes (the mermap window of one CPU).
    pub tlb_flush_local: u64,
    /// Pages zeroed, through the direct map or the mermap.
    pub pages_zeroed: u64,
    /// Pages mapped into a mermap slot (window slots and the reserved slot).
    pub mermap_maps: u64,
    /// Times a CPU's mermap window wrapped (each one local flush).
    pub mermap_wraps: u64,
    /// `mermap_get` failures served by the reserved slot (each one local flush).
    pub mermap_fallbacks: u64,
    /// Bytes written through the mermap.
    pub mermap_bytes_written: u64,
    /// Bytes read through the mermap.
    pub mermap_bytes_read: u64,
    /// Simulated time charged, in nanoseconds (0 for a real arena).
    pub sim_ns: u64,
}

/// What a real arena cost its host beyond the events of [`BackingCounters`]
/// (all zero for the simulation). Not deterministic: futex waits depend on
/// scheduling.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostCounters {
    /// System calls made for the direct map and the mermap: one `mprotect`
    /// per protection change, the file I/O calls, the mermap agents'
    /// `ioctl` (`UFFDIO_CONTINUE`), `madvise`, `futex` and `getrusage` calls
    /// and their posters' futex calls.
    pub syscalls: u64,
    /// Minor faults the mermap agents took (none when slot entries are
    /// written with `UFFDIO_CONTINUE`; one per page on the
    /// `MADV_POPULATE_WRITE` fallback).
    pub agent_minor_faults: u64,
}

/// The live counters of one backing, and the prices it charges per event.
#[derive(Debug)]
pub(crate) struct EventCounters {
    costs: SimCosts,
    direct_map_unmaps: AtomicU64,
    pages_unmapped: AtomicU64,
    direct_map_remaps: AtomicU64,
    pages_remapped: AtomicU64,
    tlb_flush_global: AtomicU64,
    tlb_flush_local: AtomicU64,
    pages_zeroed: AtomicU64,
    mermap_maps: AtomicU64,
    mermap_wraps: AtomicU64,
    mermap_fallbacks: AtomicU64,
    mermap_bytes_written: AtomicU64,
    mermap_bytes_read: AtomicU64,
    /// Picoseconds, so that sub-nanosecond per-byte prices add up exactly.
    sim_ps: AtomicU64,
}

fn add(counter: &AtomicU64, amount: u64) {
    counter.fetch_add(amount, Ordering::Relaxed);
}

/// Adds `ps` to the charged time, saturating: prices come from a file, and
/// an absurd one must give a huge figure, not a wrapped small one.
fn charge_ps(sim_ps: &AtomicU64, ps: u64) {
    // The closure always returns Some: the update cannot fail.
    let _ = sim_ps.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |total| {
        Some(total.saturating_add(ps))
    });
}

impl EventCounters {
    /// Zeroed counters charging `costs` per event.
    pub(crate) fn new(costs: SimCosts) -> EventCounters {
        EventCounters {
            costs,
            direct_map_unmaps: AtomicU64::new(0),
            pages_unmapped: AtomicU64::new(0),
            direct_map_remaps: AtomicU64::new(0),
            pages_remapped: AtomicU64::new(0),
            tlb_flush_global: AtomicU64::new(0),
            tlb_flush_local: AtomicU64::new(0),
            pages_zeroed: AtomicU64::new(0),
            mermap_maps: AtomicU64::new(0),
            mermap_wraps: AtomicU64::new(0),
            mermap_fallbacks: AtomicU64::new(0),
            mermap_bytes_written: AtomicU64::new(0),
            mermap_bytes_read: AtomicU64::new(0),
            sim_ps: AtomicU64::new(0),
        }
    }

    fn charge_ns(&self, ns: u64) {
        charge_ps(&self.sim_ps, ns.saturating_mul(1000));
    }

    /// One protection change removing `nr_pages` pages, then its global flush.
    pub(crate) fn direct_map_unmap(&self, nr_pages: u64) {
        add(&self.direct_map_unmaps, 1);
        add(&self.pages_unmapped, nr_pages);
        add(&self.tlb_flush_global, 1);
        self.charge_ns(
            self.costs
                .protection_change
                .saturating_add(self.costs.global_flush),
        );
    }

    /// One protection change putting `nr_pages` pages back (no flush).
    pub(crate) fn direct_map_remap(&self, nr_pages: u64) {
        add(&self.direct_map_remaps, 1);
        add(&self.pages_remapped, nr_pages);
        self.charge_ns(self.costs.protection_change);
    }

    /// `nr_pages` pages cleared.
    pub(crate) fn pages_zeroed(&self, nr_pages: u64) {
        add(&self.pages_zeroed, nr_pages);
        self.charge_ns(self.costs.zero_page.saturating_mul(nr_pages));
    }

    /// One page mapped into a mermap slot.
    pub(crate) fn mermap_map(&self) {
        add(&self.mermap_maps, 1);
        self.charge_ns(self.costs.mermap_map);
    }

    /// A CPU's window wrapped: one local flush of the whole window.
    pub(crate) fn mermap_wrap(&self) {
        add(&self.mermap_wraps, 1);
        add(&self.tlb_flush_local, 1);
        self.charge_ns(self.costs.local_flush);
    }

    /// A failed `mermap_get` served by the reserved slot, flushed after use.
    pub(crate) fn mermap_fallback(&self) {
        add(&self.mermap_fallbacks, 1);
        add(&self.tlb_flush_local, 1);
        self.charge_ns(self.costs.local_flush);
    }

    /// `bytes` copied into a page through the mermap.
    pub(crate) fn bytes_written(&self, bytes: usize) {
        add(&self.mermap_bytes_written, bytes as u64);
        charge_ps(
            &self.sim_ps,
            self.costs.copy_byte_ps.saturating_mul(bytes as u64),
        );
    }

    /// `bytes` copied out of a page through the mermap.
    pub(crate) fn bytes_read(&self, bytes: usize) {
        add(&self.mermap_bytes_read, bytes as u64);
        charge_ps(
            &self.sim_ps,
            self.costs.copy_byte_ps.saturating_mul(bytes as u64),
        );
    }

    /// The counters now.
    pub(crate) fn snapshot(&self) -> BackingCounters {
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        BackingCounters {
            direct_map_unmaps: load(&self.direct_map_unmaps),
            pages_unmapped: load(&self.pages_unmapped),
            direct_map_remaps: load(&self.direct_map_remaps),
            pages_remapped: load(&self.pages_remapped),
            tlb_flush_global: load(&self.tlb_flush_global),
            tlb_flush_local: load(&self.tlb_flush_local),
            pages_zeroed: load(&self.pages_zeroed),
            mermap_maps: load(&self.mermap_maps),
            mermap_wraps: load(&self.mermap_wraps),
            mermap_fallbacks: load(&self.mermap_fallbacks),
            mermap_bytes_written: load(&self.mermap_bytes_written),
            mermap_bytes_read: load(&self.mermap_bytes_read),
            sim_ns: load(&self.sim_ps) / 1000,
        }
    }
}
