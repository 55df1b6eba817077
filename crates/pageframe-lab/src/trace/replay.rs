//! Replaying a trace on a simulated machine: each `mm_page_alloc` becomes
//! an `alloc_pages()` on the same CPU with the same GFP flags and order,
//! and each `mm_page_free` of a block frees our block for it. A block the
//! trace frees before it allocates it was allocated before the trace
//! began: the replay holds a stand-in of the same order for it from the
//! start (see [`ReplayOptions::hold_pretrace`]), so that its free reaches
//! our per-CPU lists as the kernel's did.
//!
//! Before the stand-ins, a machine the host's shape gets the host's free
//! lists as they stood at the trace's start, the rest of its memory held
//! (see [`ReplayOptions::host_free_start`] and [`super::host_free`]); after
//! them, each CPU's per-CPU lists as the host's ([`ReplayOptions::host_pcp_start`]).
//!
//! `mm_page_free_batched` is not a second free: the kernel's batched free
//! (free_unref_folios()) prepares each page first, which emits
//! `mm_page_free` (free_pages_prepare()), then emits `mm_page_free_batched`
//! for the same page as it puts it on a per-CPU list. So a batched event
//! frees only a block still live (its `mm_page_free` was lost); otherwise
//! it is counted as the mark it is.
//!
//! The host's PFNs are only names here: `live` maps a host PFN to the block
//! our allocator gave for it (our PFN and order), so a host bigger than the
//! replay machine still replays (with `fit`). Pcp refills, drains and
//! fallbacks are the replay allocator's own; the trace's are counted beside
//! them (see [`compare`](mod@super::compare)). Our fallbacks are the
//! engine's own count of what `mm_page_alloc_extfrag` would report
//! ([`pageframe::ExtfragKey`]): one per claim or steal, keyed as the
//! tracepoint keys it.
//!
//! The machine: [`replay_machine`] (in `replay_machine.rs`, with the
//! host's saved sysctls written to it once booted). Policy switches: the
//! kernel command line (`cmdline`: shuffle, ...) and the allocator's
//! options (`alloc`: fallback order, pcp sizing).
//!
//! Deterministic: the machine boots with `options.seed` and nothing else
//! is random.

use super::decay::VmstatWorker;
use super::event::{EventKind, Trace};
use super::frag::{fragmentation_index, unusable_free_index};
use super::host::kernel_release;
use super::host_free::copy_host_free_lists;
use super::host_pcp::{plan_host_pcp, HostLists};
use super::live::LiveBlocks;
pub use super::replay_machine::replay_machine;
use super::replay_machine::{host_pfn_end, write_host_sysctls};
pub use super::replay_options::ReplayOptions;
use super::TraceError;
use pageframe::{
    AllocOptions, CpuId, FreeHighThreshold, Gfp, LocalPageAllocator, MachineDesc, MigrateType,
    NodeId, Order, Pfn,
};
use std::collections::{BTreeMap, HashSet};

/// GFP bits replayed: the kernel's bits 0-22 that pageframe gives meaning
/// to, less `__GFP_ZERO`. Higher kernel bits (`__GFP_ZEROTAGS`,
/// `__GFP_NO_OBJ_EXT`...) mean nothing to pageframe, and zeroing changes a
/// page's contents, never which page is chosen, while the simulated
/// backing's zeroing bookkeeping would cost the replay a tenth of its time.
const REPLAYED_GFP_BITS: u32 = ((1 << 23) - 1) & !Gfp::ZERO.bits();

/// Both fragmentation indices per order at one point of the replay.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FragSample {
    /// Events replayed so far.
    pub events: u64,
    /// Trace time of the last of them, in the trace's clock ([`super::TraceClock`]).
    pub timestamp: u64,
    /// Free blocks per order over all zones.
    pub nr_free: Vec<u64>,
    /// Unusable free index per order (thousandths).
    pub unusable: Vec<i64>,
    /// Fragmentation index per order (thousandths).
    pub fragmentation: Vec<i64>,
}

impl FragSample {
    /// Both indices of every order from free blocks per order.
    pub fn from_nr_free(events: u64, timestamp: u64, nr_free: Vec<u64>) -> FragSample {
        let orders = 0..nr_free.len() as u32;
        FragSample {
            events,
            timestamp,
            unusable: orders
                .clone()
                .map(|o| unusable_free_index(&nr_free, o))
                .collect(),
            fragmentation: orders.map(|o| fragmentation_index(&nr_free, o)).collect(),
            nr_free,
        }
    }
}

/// A fallback, keyed as `mm_page_alloc_extfrag` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FallbackKey {
    /// Order of the request.
    pub order: u8,
    /// Migratetype requested.
    pub migratetype: i8,
    /// Migratetype of the block used.
    pub fallback_migratetype: i8,
    /// Whether the block changed hands.
    pub change_ownership: bool,
}

/// Counts of one replay, beside the trace's own counts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReplayCounts {
    /// Allocations replayed.
    pub allocs: u64,
    /// Allocations the host failed (PFN -1), skipped.
    pub host_failed_allocs: u64,
    /// Allocations our allocator failed.
    pub failed_allocs: u64,
    /// Allocations above the machine's largest order, skipped.
    pub unreplayable_allocs: u64,
    /// Frees of our blocks.
    pub frees: u64,
    /// Blocks the trace frees before it allocates them (allocated before
    /// it began), held from the start by stand-ins of the same order.
    pub pretrace_held: u64,
    /// Frees of blocks allocated before the trace began without a stand-in
    /// (not held, or the stand-in could not be allocated) or by a failed
    /// replay, skipped.
    pub frees_unknown: u64,
    /// Of those, frees of a block the trace freed before and never
    /// allocated since: allocated without an `mm_page_alloc` event (6.12's
    /// alloc_pages_bulk() takes pages from a per-CPU list without one).
    pub frees_after_untraced_alloc: u64,
    /// Pages listed on the per-CPU lists before the replay, copying the
    /// host's lists at the trace's start.
    pub host_pcp_pages: u64,
    /// Of those, pages on the lists the trace shows the host had them on
    /// (see [`super::host_pcp`]).
    pub host_pcp_as_traced: u64,
    /// Of those, pages at their host frame's offset in a pageblock of ours.
    pub host_pcp_at_host_offset: u64,
    /// Pages the host listed that the copy could not list.
    pub host_pcp_dropped: u64,
    /// Free blocks placed before the replay as the host's free lists stood
    /// at the trace's start (see [`ReplayOptions::host_free_start`]).
    pub host_free_placed: u64,
    /// The host's free blocks that did not fit on our machine.
    pub host_free_unplaced: u64,
    /// `mm_page_free_batched` events that followed their page's
    /// `mm_page_free` (the same free, marked as batched).
    pub batched_marks: u64,
    /// Frees whose order differed from the allocation's (freed with ours).
    pub free_order_mismatches: u64,
    /// Host PFNs allocated again while we still held them (a free the trace
    /// missed): our block is freed first.
    pub reallocated_live: u64,
    /// Frees our allocator refused (should stay 0).
    pub free_errors: u64,
    /// Trace: `mm_page_alloc_zone_locked` with `percpu_refill`, in pages.
    pub trace_refill_pages: u64,
    /// Trace: runs of refill events on one CPU (one `rmqueue_bulk()` each;
    /// a fallback event inside a run does not end it).
    pub trace_refill_calls: u64,
    /// Trace: pages drained from pcp lists (`mm_page_pcpu_drain`).
    pub trace_drain_pages: u64,
    /// Trace: runs of the vmstat worker it recorded, over all CPUs.
    pub trace_vmstat_runs: u64,
    /// Ours: the vmstat worker's passes over one CPU's lists the replay
    /// made ([`super::PcpDecay`]).
    pub vmstat_passes: u64,
    /// Trace: `mm_page_alloc_extfrag` per key, sorted by key.
    pub trace_fallbacks: Vec<(FallbackKey, u64)>,
    /// Ours: the engine's fallbacks per key, as the tracepoint reports
    /// them, sorted by key.
    pub fallbacks: Vec<(FallbackKey, u64)>,
    /// Ours: blocks still allocated at the end.
    pub live_at_end: u64,
}

/// Everything a replay produced.
#[derive(Clone, Debug)]
pub struct ReplayOutcome {
    /// The machine that ran.
    pub machine: MachineDesc,
    /// Counters.
    pub counts: ReplayCounts,
    /// Fragmentation over time.
    pub samples: Vec<FragSample>,
    /// Our /proc/buddyinfo and /proc/pagetypeinfo at the start and end.
    pub buddyinfo_start: String,
    /// At the end.
    pub buddyinfo_end: String,
    /// Our /proc/pagetypeinfo at the end.
    pub pagetypeinfo_end: String,
    /// Our zone counters summed at the end: claims, steals, pcp refills,
    /// pcp drain pages.
    pub extfrag_claim: u64,
    /// Steals.
    pub extfrag_steal: u64,
    /// `rmqueue_bulk()` calls.
    pub pcp_refill: u64,
    /// Pages those calls moved.
    pub pcp_refill_pages: u64,
    /// Pages drained from pcp lists.
    pub pcp_drain_pages: u64,
    /// Pages on the per-CPU lists at the end, over all zones and CPUs.
    pub pcp_pages_end: u64,
    /// The per-CPU lists' `high` at the end, summed over zones and CPUs.
    pub pcp_high_end: u64,
    /// Pageblocks per migratetype at the end, over all zones.
    pub pageblocks: [u64; 5],
}

/// Replays a trace. Deterministic for a given trace and options.
pub fn replay(trace: &Trace, options: &ReplayOptions) -> Result<ReplayOutcome, TraceError> {
    trace.check_invariants()?;
    let mut desc = replay_machine(trace, options)?;
    // The report shows no vm event: counting them would only cost time.
    // The rule for high-order free runs: the one asked for, else the traced
    // kernel's when the trace names its kernel.
    let free_high = options
        .free_high
        .or_else(|| {
            kernel_release(trace).and_then(|release| FreeHighThreshold::of_release(&release))
        })
        .unwrap_or(options.alloc.free_high);
    let alloc_options = AllocOptions {
        vm_events: false,
        free_high,
        ..options.alloc
    };
    let boot = |desc: &MachineDesc| {
        LocalPageAllocator::boot_seeded(desc, alloc_options, options.seed)
            .map_err(|err| TraceError::Machine(err.to_string()))
    };
    let mut allocator = boot(&desc)?;
    // A host-shaped machine takes the host's THP setting from its
    // min_free_kbytes: only khugepaged raises it above the boot-time value
    // (set_recommended_min_free_kbytes()), and with it the watermarks and
    // the per-CPU lists' high_min, which zone_highsize() takes from them.
    let host_min_free = trace
        .meta("host.start.min_free_kbytes")
        .and_then(|text| text.trim().parse::<u64>().ok());
    if options.machine.is_none()
        && !desc.transparent_hugepage
        && host_min_free.is_some_and(|host| host > allocator.min_free_kbytes())
    {
        desc.transparent_hugepage = true;
        allocator = boot(&desc)?;
    }
    if options.machine.is_none() {
        write_host_sysctls(trace, options, &mut allocator)?;
    }
    // A machine file's [[hotplug]] steps are part of the machine it
    // describes (`proc` and `info` show it after them): the trace replays
    // on the machine they leave, as a trace recorded after the memory was
    // added would have run, rather than on its boot memory alone.
    crate::machine_args::apply_hotplug_steps(&mut allocator, &desc)
        .map_err(|err| TraceError::Machine(err.to_string()))?;
    let layout = allocator.layout();
    let nr_cpus = allocator.nr_cpus();
    let handles = (0..nr_cpus)
        .map(|cpu| allocator.cpu(CpuId(cpu as u16)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| TraceError::Machine(err.to_string()))?;
    // Per traced CPU: the handle it replays on and that CPU's node.
    let targets: Vec<(usize, NodeId)> = (0..trace.nr_cpus_seen())
        .map(|cpu| (cpu % nr_cpus, layout.cpu_node[cpu % nr_cpus]))
        .collect();
    let mut counts = ReplayCounts::default();
    let mut live = LiveBlocks::with_span(host_pfn_end(trace).unwrap_or(0));
    let max_order = layout.max_order.0;
    set_up_start(
        trace,
        options,
        &allocator,
        &handles,
        &targets,
        &mut live,
        &mut counts,
    );
    // What the set-up did is not the trace's: counted from here.
    let setup = EventTotals::of(&allocator);
    let buddyinfo_start = pageframe::proc::buddyinfo(&allocator);
    let mut samples = Vec::new();
    let sample_every = trace.events.len().div_ceil(options.samples.max(1)).max(1);
    let mut until_sample = 0usize;
    let mut last_refill_cpu: Vec<bool> = vec![false; trace.nr_cpus_seen()];
    // Host blocks the trace freed and has not allocated since.
    let mut freed_untaken: HashSet<u64> = HashSet::new();
    let mut worker = VmstatWorker::new(options.decay_on(trace), nr_cpus);
    // The trace's fallbacks per key (a damaged trace may name millions).
    let mut trace_fallbacks: BTreeMap<FallbackKey, u64> = BTreeMap::new();

    for (index, event) in trace.events.iter().enumerate() {
        counts.vmstat_passes += worker.passes_due(&allocator, event.timestamp);
        if until_sample == 0 {
            until_sample = sample_every;
            samples.push(FragSample::from_nr_free(
                index as u64,
                event.timestamp,
                allocator.nr_free_blocks_per_order(),
            ));
        }
        until_sample -= 1;
        let cpu = event.cpu as usize;
        let is_refill = event.kind == EventKind::ZoneLocked && event.flag;
        // A fallback fires inside rmqueue_bulk() when the refill steals
        // (__rmqueue() -> steal_suitable_fallback()): it does not end the run.
        if !is_refill && event.kind != EventKind::Extfrag {
            last_refill_cpu[cpu] = false;
        }
        let (target, node) = targets[cpu];
        let handle = &handles[target];
        worker.touch(target);
        match event.kind {
            EventKind::Alloc => {
                if event.pfn == u64::MAX {
                    counts.host_failed_allocs += 1;
                    continue;
                }
                freed_untaken.remove(&event.pfn);
                if event.order > max_order {
                    counts.unreplayable_allocs += 1;
                    continue;
                }
                let gfp = Gfp::from_bits_truncate(event.gfp & REPLAYED_GFP_BITS);
                let page = match handle.alloc_pages(gfp, Order(event.order), node) {
                    Ok(page) => page,
                    Err(_) => {
                        counts.failed_allocs += 1;
                        continue;
                    }
                };
                counts.allocs += 1;
                let ours = page.pfn().0;
                if let Some((old_pfn, old_order)) = live.insert(event.pfn, ours, event.order) {
                    counts.reallocated_live += 1;
                    let page = pageframe::Page::from_pfn(Pfn(old_pfn));
                    if handle.free_pages(page, Order(old_order)).is_err() {
                        counts.free_errors += 1;
                    }
                }
            }
            EventKind::FreeBatched if !live.contains(event.pfn) => counts.batched_marks += 1,
            EventKind::Free | EventKind::FreeBatched => match live.remove(event.pfn) {
                Some((our_pfn, order)) => {
                    if event.kind == EventKind::Free && order != event.order {
                        counts.free_order_mismatches += 1;
                    }
                    let page = pageframe::Page::from_pfn(Pfn(our_pfn));
                    match handle.free_pages(page, Order(order)) {
                        Ok(()) => counts.frees += 1,
                        Err(_) => counts.free_errors += 1,
                    }
                    freed_untaken.insert(event.pfn);
                }
                None => {
                    counts.frees_unknown += 1;
                    if freed_untaken.contains(&event.pfn) {
                        counts.frees_after_untraced_alloc += 1;
                    }
                }
            },
            EventKind::ZoneLocked => {
                if is_refill {
                    counts.trace_refill_pages += 1 << event.order.min(63);
                    if !last_refill_cpu[cpu] {
                        counts.trace_refill_calls += 1;
                        last_refill_cpu[cpu] = true;
                    }
                }
            }
            EventKind::PcpuDrain => counts.trace_drain_pages += 1 << event.order.min(63),
            EventKind::VmstatWork => {
                counts.trace_vmstat_runs += 1;
                // A machine with fewer CPUs than the trace (`--fit`) takes
                // each of its CPUs' runs from one traced CPU, the one of
                // the same number: the kernel's worker passes over a CPU
                // about once a second, not once per CPU folded onto it.
                if cpu == target {
                    counts.vmstat_passes += worker.traced_run(&allocator, CpuId(target as u16));
                }
            }
            EventKind::Extfrag => {
                let key = FallbackKey {
                    order: event.order,
                    migratetype: event.migratetype,
                    fallback_migratetype: event.fallback_migratetype,
                    change_ownership: event.flag,
                };
                *trace_fallbacks.entry(key).or_insert(0) += 1;
            }
        }
    }
    samples.push(FragSample::from_nr_free(
        trace.events.len() as u64,
        trace.events.last().map_or(0, |event| event.timestamp),
        allocator.nr_free_blocks_per_order(),
    ));
    counts.live_at_end = live.len() as u64;
    let events = EventTotals::of(&allocator).since(&setup);
    let mut fallbacks: BTreeMap<FallbackKey, u64> = BTreeMap::new();
    for &(key, count) in &events.extfrag {
        let key = FallbackKey {
            order: key.alloc_order.0,
            migratetype: key.alloc_migratetype as i8,
            fallback_migratetype: key.fallback_migratetype as i8,
            change_ownership: key.change_ownership,
        };
        *fallbacks.entry(key).or_insert(0) += count;
    }
    counts.fallbacks = fallbacks.into_iter().collect();
    counts.trace_fallbacks = trace_fallbacks.into_iter().collect();
    drop(handles);
    if options.check_invariants {
        allocator
            .check_invariants()
            .map_err(|err| TraceError::Invariant(err.to_string()))?;
    }
    let snapshots = allocator.zone_snapshots();
    let pcp_sum = |field: fn(&pageframe::PcpSnapshot) -> u32| -> u64 {
        snapshots
            .iter()
            .flat_map(|zone| &zone.pcp)
            .map(|pcp| u64::from(field(pcp)))
            .sum()
    };
    let mut pageblocks = [0u64; 5];
    for zone in &snapshots {
        for (total, count) in pageblocks.iter_mut().zip(zone.pageblocks) {
            *total += count;
        }
    }
    Ok(ReplayOutcome {
        machine: desc,
        counts,
        samples,
        buddyinfo_start,
        buddyinfo_end: pageframe::proc::buddyinfo(&allocator),
        pagetypeinfo_end: pageframe::proc::pagetypeinfo(&allocator),
        extfrag_claim: events.extfrag_claim,
        extfrag_steal: events.extfrag_steal,
        pcp_refill: events.pcp_refill,
        pcp_refill_pages: events.pcp_refill_pages,
        pcp_drain_pages: events.pcp_drain_pages,
        pcp_pages_end: pcp_sum(|pcp| pcp.count),
        pcp_high_end: pcp_sum(|pcp| pcp.high),
        pageblocks,
    })
}

/// The state the trace starts from, on a fresh machine: the stand-ins of
/// blocks allocated before the trace ([`ReplayOptions::hold_pretrace`]),
/// before them the host's free lists ([`ReplayOptions::host_free_start`]),
/// after them the host's per-CPU lists ([`ReplayOptions::host_pcp_start`]);
/// what each did goes into `counts`, each stand-in into `live`. `targets`
/// gives per traced CPU the handle it replays on and that CPU's node.
fn set_up_start<H: std::ops::Deref<Target = LocalPageAllocator>>(
    trace: &Trace,
    options: &ReplayOptions,
    allocator: &LocalPageAllocator,
    handles: &[pageframe::CpuHandle<H, pageframe::Local>],
    targets: &[(usize, NodeId)],
    live: &mut LiveBlocks,
    counts: &mut ReplayCounts,
) {
    let layout = allocator.layout();
    let max_order = layout.max_order.0;
    let pretrace = if options.hold_pretrace {
        pretrace_blocks(trace, max_order)
    } else {
        Vec::new()
    };
    // The zone a movable stand-in comes from on each node: its highest.
    let stand_in_zone: Vec<Option<usize>> = (0..layout.nodes.len())
        .map(|node| highest_zone(allocator, NodeId(node as u16)))
        .collect();
    // The host's per-CPU lists, read once: the free-list copy keeps room
    // for them, and they are listed after the stand-ins.
    let host_lists = options
        .host_pcp_start
        .then(|| HostLists::read(trace, allocator, handles.len()))
        .flatten();
    let mut host_free = None;
    if options.host_free_start && options.machine.is_none() {
        let mut extra = vec![vec![0u64; usize::from(max_order) + 1]; allocator.nr_zones()];
        for &(_, order, cpu) in &pretrace {
            let zone = stand_in_zone[targets[usize::from(cpu)].1.index()];
            if let (Some(zone), 1..) = (zone, order) {
                extra[zone][usize::from(order)] += 1;
            }
        }
        // Held pageblocks for the blocks the per-CPU lists will take at
        // their host offsets, kept out of the free lists' placing.
        let keep = host_lists.as_ref().map_or_else(Vec::new, |lists| {
            lists.pageblocks_wanted(allocator.nr_zones())
        });
        host_free = copy_host_free_lists(trace, allocator, &handles[0], &extra, &keep);
        if let Some(copy) = &host_free {
            counts.host_free_placed = copy.placed;
            counts.host_free_unplaced = copy.unplaced;
        }
    }
    for &(host_pfn, order, cpu) in &pretrace {
        let (target, node) = targets[usize::from(cpu)];
        let spare = match (&mut host_free, stand_in_zone[node.index()]) {
            (Some(copy), Some(zone)) if order == 0 => {
                copy.take_spare(zone, MigrateType::Movable, Order(0))
            }
            _ => None,
        };
        let ours = spare.or_else(|| {
            let page = handles[target].alloc_pages(Gfp::HIGHUSER_MOVABLE, Order(order), node);
            page.ok().map(|page| page.pfn())
        });
        if let Some(ours) = ours {
            live.insert(host_pfn, ours.0, order);
            counts.pretrace_held += 1;
        }
    }
    if host_free.is_some() {
        // The stand-ins' refills leave blocks listed that the host had free.
        allocator.drain_all_pages();
    }
    if let Some(host_lists) = &host_lists {
        if let Some(copy) = &mut host_free {
            copy.release_kept();
        }
        let copy = plan_host_pcp(host_lists, allocator, handles, host_free.as_mut())
            .list(allocator, handles);
        counts.host_pcp_pages = copy.listed;
        counts.host_pcp_as_traced = copy.as_traced;
        counts.host_pcp_at_host_offset = copy.at_host_offset;
        counts.host_pcp_dropped = copy.dropped;
    }
}

/// The blocks allocated before the trace, each as `(host PFN, order,
/// freeing CPU)`: a pass over the trace finds every host block whose first
/// event is an `mm_page_free` (a batched event only marks such a free; a
/// block freed again after the trace allocated and freed it lost an event,
/// and stays unknown). Each gets a stand-in of the same order before the
/// replay starts (movable, as most of a running host's memory is: page
/// cache and user memory), entered in `live` under the host PFN; a
/// stand-in that cannot be had leaves that free to be skipped.
fn pretrace_blocks(trace: &Trace, max_order: u8) -> Vec<(u64, u8, u16)> {
    let mut touched = std::collections::HashSet::new();
    let mut blocks = Vec::new();
    for event in &trace.events {
        match event.kind {
            EventKind::Alloc => {
                touched.insert(event.pfn);
            }
            EventKind::Free if touched.insert(event.pfn) && event.order <= max_order => {
                blocks.push((event.pfn, event.order, event.cpu));
            }
            _ => {}
        }
    }
    blocks
}

/// The highest zone of `node` with memory: where a movable allocation
/// preferring that node starts.
fn highest_zone(allocator: &LocalPageAllocator, node: NodeId) -> Option<usize> {
    let zones = allocator.zone_snapshots();
    (0..zones.len())
        .filter(|&index| zones[index].node == node && zones[index].managed > 0)
        .max_by_key(|&index| zones[index].zone_type)
}

/// The allocator's event counters the report shows, summed over zones.
/// Taken after the replay's set-up (stand-ins, the host's lists) and at
/// the end; the report gives the difference, as the kernel's counterparts
/// of the set-up happened before the trace.
struct EventTotals {
    extfrag: Vec<(pageframe::ExtfragKey, u64)>,
    extfrag_claim: u64,
    extfrag_steal: u64,
    pcp_refill: u64,
    pcp_refill_pages: u64,
    pcp_drain_pages: u64,
}

impl EventTotals {
    fn of(allocator: &LocalPageAllocator) -> EventTotals {
        let zones = allocator.zone_snapshots();
        let sum = |field: fn(&pageframe::ZoneEvents) -> u64| -> u64 {
            zones.iter().map(|zone| field(&zone.zone_events)).sum()
        };
        EventTotals {
            extfrag: allocator.extfrag_events(),
            extfrag_claim: sum(|events| events.extfrag_claim),
            extfrag_steal: sum(|events| events.extfrag_steal),
            pcp_refill: sum(|events| events.pcp_refill),
            pcp_refill_pages: sum(|events| events.pcp_refill_pages),
            pcp_drain_pages: sum(|events| events.pcp_drain_pages),
        }
    }

    /// What was counted after `before` (counters only grow).
    fn since(self, before: &EventTotals) -> EventTotals {
        let extfrag = self
            .extfrag
            .into_iter()
            .filter_map(|(key, count)| {
                let earlier = before
                    .extfrag
                    .iter()
                    .find(|(seen, _)| *seen == key)
                    .map_or(0, |(_, count)| *count);
                (count > earlier).then(|| (key, count - earlier))
            })
            .collect();
        EventTotals {
            extfrag,
            extfrag_claim: self.extfrag_claim - before.extfrag_claim,
            extfrag_steal: self.extfrag_steal - before.extfrag_steal,
            pcp_refill: self.pcp_refill - before.pcp_refill,
            pcp_refill_pages: self.pcp_refill_pages - before.pcp_refill_pages,
            pcp_drain_pages: self.pcp_drain_pages - before.pcp_drain_pages,
        }
    }
}
