//! Reclaim-layer views for `pageframe proc`: `/proc/meminfo`, and the
//! machine aged by `--aging RUNS` benchmark runs of the reclaim layer's
//! aging workload ([`pageframe::reclaim::AgingWorkload`]) before any view
//! is printed, so that every view (buddyinfo, zoneinfo, meminfo, vmstat
//! with the reclaim counters) shows a machine whose free memory came back
//! from page cache reclaim and process exits.
//!
//! The workload's proportions are shuffle-cache's: a heap three eighths of
//! the managed memory (3x a memory-side cache of an eighth of it), a data
//! set twice the memory ([`AgingConfig::for_machine`]). Run 0 is the fresh
//! machine: its meminfo is the allocator's free memory and nothing cached.
//!
//! Same machine, runs and seed: same output, byte for byte. Progress goes
//! to `observe::progress`, one report per run.

use crate::observe;
use pageframe::reclaim::{AgingConfig, AgingWorkload, Mm, MmError};
use pageframe::{CpuId, LocalPageAllocator};

/// The views that need the reclaim layer, as `pageframe proc` accepts them.
pub const VIEWS: [&str; 1] = ["meminfo"];

/// The most benchmark runs of `--aging`: each reads as much as the memory
/// through the page cache (a 1 GiB machine takes a quarter to two thirds
/// of a second a run here).
pub const MAX_AGING_RUNS: u64 = 10_000;

/// The most page-sized reads of all `--aging` runs together (runs times
/// the machine's pages): each run reads as much as the memory, at about
/// 2.5 µs a page here, so about twenty minutes.
pub const MAX_AGING_PAGE_READS: u64 = 1 << 29;

/// Host bytes of one entry of the reclaim layer's maps (a page cache
/// page, an anonymous page or a shadow: a `BTreeMap<u64, _>` entry and its
/// share of a node).
const MAP_ENTRY_BYTES: u64 = 32;

/// The heap's share of the managed memory, as a fraction: shuffle-cache's
/// heap of 3x a cache on a machine of 8x the cache.
const HEAP_SHARE: (u64, u64) = (3, 8);

/// Host bytes the reclaim views take for a machine of `end_pfn` PFNs and
/// `present` pages aged by `runs` runs: the layer's per-PFN state, and
/// after any run a map entry per page (the page cache fills memory) and
/// two more (the shadows of a data set twice the memory, at most). An
/// upper estimate: `proc meminfo --mem 4G --aging 2` peaks at 135 MB here,
/// against 177 MB estimated with the allocator's own tables.
pub fn host_bytes(end_pfn: u64, present: u64, runs: u64) -> u64 {
    let state = end_pfn.saturating_mul(Mm::host_bytes_per_pfn());
    let maps = if runs > 0 {
        present.saturating_mul(3 * MAP_ENTRY_BYTES)
    } else {
        0
    };
    state.saturating_add(maps)
}

/// A machine aged by the workload (or fresh, after 0 runs).
pub struct AgedMachine<'a> {
    workload: AgingWorkload<'a>,
}

impl<'a> AgedMachine<'a> {
    /// Runs `runs` benchmark runs of the aging workload seeded with `seed`
    /// on `allocator`, all on CPU 0, checking the reclaim layer's
    /// invariants after each. A machine too small for the workload or a
    /// run that cannot fault its heap is an error naming the run.
    pub fn age(
        allocator: &'a LocalPageAllocator,
        runs: u64,
        seed: u64,
    ) -> Result<AgedMachine<'a>, String> {
        let managed = allocator.managed_pages();
        let heap_pages = managed / HEAP_SHARE.1 * HEAP_SHARE.0;
        let config = AgingConfig::for_machine(heap_pages, managed, CpuId(0));
        let mut workload = AgingWorkload::new(allocator, config, seed)
            .map_err(|err| format!("aging workload: {err}"))?;
        for run in 1..=runs {
            workload
                .benchmark_run(|_| ())
                .map_err(|err: MmError| format!("aging run {run} of {runs}: {err}"))?;
            workload
                .mm()
                .check_invariants()
                .map_err(|err| format!("aging run {run} of {runs}: {err}"))?;
            observe::progress(run, runs);
        }
        Ok(AgedMachine { workload })
    }

    /// Benchmark runs done.
    pub fn runs(&self) -> u64 {
        self.workload.runs()
    }

    /// The reclaim layer over the machine.
    pub fn mm(&self) -> &Mm<'a> {
        self.workload.mm()
    }

    /// `/proc/meminfo`.
    pub fn meminfo(&self) -> String {
        let page_shift = self.mm().allocator().layout().page_shift;
        self.mm().meminfo().render(page_shift)
    }

    /// `/proc/vmstat`: the allocator's counters, then the reclaim layer's
    /// (LRU sizes, refaults, page cache, and the reclaim events).
    pub fn vmstat(&self) -> String {
        let mut text = pageframe::proc::vmstat(self.mm().allocator());
        text.push_str(&self.mm().vmstat());
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pageframe::MachineDesc;

    fn value(text: &str, label: &str) -> u64 {
        text.lines()
            .find_map(|line| line.strip_prefix(label))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|number| number.parse().ok())
            .unwrap_or_else(|| panic!("no {label} in\n{text}"))
    }

    /// A fresh machine caches nothing; after runs its page cache is most of
    /// the memory, kswapd has scanned and reclaimed, and the same seed
    /// prints the same bytes.
    #[test]
    fn aging_fills_the_page_cache_and_reclaims_deterministically() {
        let machine = MachineDesc::uniform(64 << 20, 1, 2).unwrap();
        let render = |runs| {
            let allocator =
                LocalPageAllocator::boot_seeded(&machine, pageframe::AllocOptions::default(), 7)
                    .unwrap();
            let aged = AgedMachine::age(&allocator, runs, 7).unwrap();
            assert_eq!(aged.runs(), runs);
            (aged.meminfo(), aged.vmstat())
        };
        let (fresh, fresh_vmstat) = render(0);
        assert_eq!(value(&fresh, "Cached:"), 0);
        assert_eq!(value(&fresh, "MemFree:"), value(&fresh, "MemTotal:"));
        assert_eq!(value(&fresh_vmstat, "pgscan_kswapd "), 0);
        let (aged, aged_vmstat) = render(3);
        let total = value(&aged, "MemTotal:");
        assert!(value(&aged, "Cached:") > total / 2, "{aged}");
        assert!(value(&aged, "MemFree:") < total / 4, "{aged}");
        assert_eq!(value(&aged, "AnonPages:"), 0, "every process exited");
        assert!(value(&aged_vmstat, "pgsteal_kswapd ") > 0, "{aged_vmstat}");
        assert!(value(&aged_vmstat, "pgscan_kswapd ") >= value(&aged_vmstat, "pgsteal_kswapd "));
        assert_eq!(render(3), (aged, aged_vmstat));
    }
}
