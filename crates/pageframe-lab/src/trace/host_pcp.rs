//! What the host's per-CPU lists held at the trace's start, list by list,
//! as far as the trace tells.
//!
//! /proc/zoneinfo gives each CPU's `count:` per zone, not which of its
//! lists (migratetype and order) the pages were on, and a replay that puts
//! them all on one list serves allocations from it that the host served by
//! refilling another: the shipped trace's CPU 0 had 9 542 pages listed, of
//! which its Movable order-0 list held 60.
//!
//! The trace tells more. A page the trace allocates without a refill
//! having taken it from the buddy lists (`mm_page_alloc_zone_locked` with
//! `percpu_refill=1`, or a direct `mm_page_alloc_zone_locked`) and without
//! freeing it first was on a per-CPU list when the trace began: on the list
//! of the allocating CPU, of the allocation's migratetype and order
//! (rmqueue_pcplist() serves a request from that one list); so was a page
//! drained (`mm_page_pcpu_drain`, with its list's migratetype) on the same
//! terms. So each list's count at the start is at least what the trace
//! took of it, and exactly that for a list the trace refilled: a list is
//! refilled only once empty. What zoneinfo counts beyond those sat on
//! lists the trace never refilled.
//!
//! The trace also gives those pages' host frames, and [`plan_host_pcp`]
//! keeps their buddy structure: each host pageblock holding two of them or
//! more gets a held pageblock of ours ([`super::host_pageblocks`]), the
//! frames their offsets in it, so that what
//! they merge with when they come back to the buddy lists is what they
//! merged with on the host, as far as the trace shows it. (Taken from runs
//! of held memory instead, the listed pages drained back whole and merged
//! up to MAX_PAGE_ORDER.) A list is filled tail to head: the pages the
//! trace drains (drains take a list's oldest), then the ones it never
//! shows, then the ones it allocates, the first allocated last.
//!
//! Invariants: [`PcpListStart::pages`] is `1 << order` times the frames in
//! `allocated` and `drained`; the lists of a [`HostPcpStart`] are sorted by
//! CPU, zone, order, then migratetype (the kernel's per-CPU list index
//! order).

use super::event::{EventKind, Trace};
use super::host::{host_file, parse_pcp, HostZoneSpan, Moment};
use super::host_free::HostFreeStart;
use super::host_pageblocks::HostPageblocks;
use pageframe::{CpuHandle, Gfp, Local, LocalPageAllocator, MigrateType, Order, Page, ZoneType};
use std::collections::{BTreeMap, HashSet};

/// One per-CPU list of the host at the trace's start, as the trace shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PcpListStart {
    /// The CPU.
    pub cpu: usize,
    /// The zone, an index into the spans given to [`HostPcpStart::infer`].
    pub zone: usize,
    /// The list's order.
    pub order: u8,
    /// The list's migratetype (0 Unmovable, 1 Movable, 2 Reclaimable).
    pub migratetype: u8,
    /// Pages the trace allocated or drained from it that were listed at
    /// the start.
    pub pages: u64,
    /// The host PFNs of those the trace allocated, in the trace's order
    /// (the list's head at the start first).
    pub allocated: Vec<u64>,
    /// The host PFNs of those drained (`mm_page_pcpu_drain`), in the
    /// trace's order (the list's tail at the start first).
    pub drained: Vec<u64>,
    /// Whether the trace refilled it: then `pages` is all it held.
    pub refilled: bool,
}

/// The per-CPU lists the trace shows, at its start.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostPcpStart {
    /// Every list the trace allocated from or refilled.
    pub lists: Vec<PcpListStart>,
}

/// The highest order a per-CPU list serves besides the pageblock order
/// (PAGE_ALLOC_COSTLY_ORDER).
const COSTLY_ORDER: u8 = 3;

impl HostPcpStart {
    /// Reads the trace's allocations and refills; `spans` are the host's
    /// zones (from its zoneinfo at the start), which place each PFN, and
    /// `pageblock_order` the host's (its per-CPU lists serve orders up to
    /// PAGE_ALLOC_COSTLY_ORDER and the pageblock order). Events of a PFN in
    /// no zone, or a CPU past `u16`, are left out.
    pub fn infer(trace: &Trace, spans: &[HostZoneSpan], pageblock_order: u8) -> HostPcpStart {
        let zone_of = |pfn: u64| {
            spans.iter().position(|span| {
                (span.start_pfn..span.start_pfn.saturating_add(span.spanned)).contains(&pfn)
            })
        };
        let listed_order = |order: u8| order <= COSTLY_ORDER || order == pageblock_order;
        let mut lists: BTreeMap<(usize, usize, u8, u8), PcpListStart> = BTreeMap::new();
        fn entry(
            lists: &mut BTreeMap<(usize, usize, u8, u8), PcpListStart>,
            cpu: u16,
            zone: usize,
            order: u8,
            migratetype: u8,
        ) -> &mut PcpListStart {
            let cpu = usize::from(cpu);
            lists
                .entry((cpu, zone, order, migratetype))
                .or_insert_with(|| PcpListStart {
                    cpu,
                    zone,
                    order,
                    migratetype,
                    pages: 0,
                    refilled: false,
                    allocated: Vec::new(),
                    drained: Vec::new(),
                })
        }
        let mut from_buddy = HashSet::new();
        let mut freed = HashSet::new();
        for event in &trace.events {
            let Ok(migratetype) = u8::try_from(event.migratetype) else {
                continue;
            };
            match event.kind {
                EventKind::ZoneLocked => {
                    from_buddy.insert(event.pfn);
                    if event.flag && migratetype < 3 && listed_order(event.order) {
                        if let Some(zone) = zone_of(event.pfn) {
                            entry(&mut lists, event.cpu, zone, event.order, migratetype).refilled =
                                true;
                        }
                    }
                }
                EventKind::Free => {
                    freed.insert(event.pfn);
                }
                EventKind::Alloc | EventKind::PcpuDrain if event.pfn != u64::MAX => {
                    let was_listed = !from_buddy.remove(&event.pfn) && !freed.contains(&event.pfn);
                    if was_listed && migratetype < 3 && listed_order(event.order) {
                        if let Some(zone) = zone_of(event.pfn) {
                            let list = entry(&mut lists, event.cpu, zone, event.order, migratetype);
                            list.pages = list.pages.saturating_add(1u64 << event.order);
                            if event.kind == EventKind::Alloc {
                                list.allocated.push(event.pfn);
                            } else {
                                list.drained.push(event.pfn);
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        HostPcpStart {
            lists: lists.into_values().collect(),
        }
    }

    /// The lists of `cpu` in `zone`.
    pub fn of(&self, cpu: usize, zone: usize) -> impl Iterator<Item = &PcpListStart> {
        self.lists
            .iter()
            .filter(move |list| list.cpu == cpu && list.zone == zone)
    }

    /// Where pages a CPU's zone listed beyond what the trace took may go,
    /// best first: the lists the trace did not refill (so it never emptied
    /// them on the host either), order 0 first, Movable first within an
    /// order (most pageblocks are Movable, so its held blocks last). Empty
    /// when the trace refilled every list (zoneinfo then
    /// counted more than the trace took, which LIFO lists refilled only
    /// when empty cannot give).
    pub fn unrefilled_lists(&self, cpu: usize, zone: usize, pageblock_order: u8) -> Vec<(u8, u8)> {
        let refilled: Vec<(u8, u8)> = self
            .of(cpu, zone)
            .filter(|list| list.refilled)
            .map(|list| (list.order, list.migratetype))
            .collect();
        (0..=COSTLY_ORDER)
            .chain([pageblock_order])
            .flat_map(|order| [1, 0, 2].map(|migratetype| (order, migratetype)))
            .filter(|key| !refilled.contains(key))
            .collect()
    }
}

/// One CPU's lists in one zone at the trace's start, as the host's
/// zoneinfo gave them, on a CPU and zone the replay machine has.
struct HostCpuLists {
    /// The CPU (also the index of its handle).
    cpu: usize,
    /// Our zone (an index of `zone_snapshots()`).
    zone: usize,
    /// The host's zone (an index of its zoneinfo's spans), when known.
    host_zone: Option<usize>,
    /// The host's `count:`.
    count: u32,
    /// The host's `high:`.
    high: u32,
}

/// The host's per-CPU lists at the trace's start, read once for the
/// set-up: every (CPU, zone) of the host's zoneinfo that the machine has (a
/// CPU below its count, a zone of ours with managed pages), and what the
/// trace shows of each list ([`HostPcpStart::infer`]).
pub struct HostLists {
    cpus: Vec<HostCpuLists>,
    inferred: HostPcpStart,
    pageblock_order: u8,
}

impl HostLists {
    /// The lists of `trace`'s host on `allocator`'s first `nr_cpus` CPUs;
    /// `None` when the trace saved no zoneinfo (a text import).
    pub fn read(
        trace: &Trace,
        allocator: &LocalPageAllocator,
        nr_cpus: usize,
    ) -> Option<HostLists> {
        let zoneinfo = host_file(trace, Moment::Start, "zoneinfo")?;
        let pageblock_order = allocator.layout().pageblock_order.0;
        let spans = super::host::parse_zone_spans(&zoneinfo);
        let zones = allocator.zone_snapshots();
        let cpus = parse_pcp(&zoneinfo)
            .into_iter()
            .filter(|host| host.cpu < nr_cpus)
            .filter_map(|host| {
                let zone = zones.iter().position(|zone| {
                    zone.node.0 == host.node
                        && zone.zone_type.name() == host.zone
                        && zone.managed > 0
                })?;
                let host_zone = spans
                    .iter()
                    .position(|span| span.node == host.node && span.zone == host.zone);
                Some(HostCpuLists {
                    cpu: host.cpu,
                    zone,
                    host_zone,
                    count: host.count,
                    high: host.high,
                })
            })
            .collect();
        Some(HostLists {
            cpus,
            inferred: HostPcpStart::infer(trace, &spans, pageblock_order),
            pageblock_order,
        })
    }

    /// Whole held pageblocks for the blocks above order 0 that the trace
    /// shows on the lists, as far as each CPU's `count:` goes (taken
    /// highest order first, as [`plan_host_pcp`] takes them): one per
    /// pageblock-order block, and room for the order 1..=3 blocks packed
    /// together; per zone of ours (`nr_zones` of them) and migratetype (0
    /// Unmovable, 1 Movable, 2 Reclaimable). The copy of the host's free
    /// lists keeps that many out of its placing
    /// ([`super::host_free::copy_host_free_lists`]): on a host with much
    /// free memory no aligned room is left otherwise, and such a block is
    /// not listed (the untar trace of 2026-11-28 05:30 lost 13 of CPU 1's
    /// 26 order-9 blocks, and its replay refilled 81 times against the
    /// kernel's 59). An order 1..=3 block keeps its host offset only while
    /// a pageblock is left for its host pageblock, as an order-0 frame
    /// does; past that it takes room of its order in any held memory,
    /// which the packed room ensures.
    pub fn pageblocks_wanted(&self, nr_zones: usize) -> Vec<[u64; 3]> {
        let mut wanted = vec![[0u64; 3]; nr_zones];
        for host in &self.cpus {
            let Some(host_zone) = host.host_zone else {
                continue;
            };
            let mut left = u64::from(host.count);
            // Per migratetype: pageblock-order blocks, pages in order 1..=3 blocks.
            let mut needed = [(0u64, 0u64); 3];
            let mut lists: Vec<&PcpListStart> = self.inferred.of(host.cpu, host_zone).collect();
            lists.sort_by_key(|list| std::cmp::Reverse(list.order));
            for list in lists {
                let block = 1u64 << list.order;
                let taken = (list.pages / block).min(left / block);
                left -= taken * block;
                let need = &mut needed[usize::from(list.migratetype)];
                if list.order == self.pageblock_order {
                    need.0 += taken;
                } else if list.order > 0 {
                    need.1 += taken * block;
                }
            }
            let Some(zone) = wanted.get_mut(host.zone) else {
                continue;
            };
            for (slot, (whole, pages)) in needed.into_iter().enumerate() {
                zone[slot] += whole + pages.div_ceil(1u64 << self.pageblock_order);
            }
        }
        wanted
    }
}

/// What [`plan_host_pcp`] and [`PcpPlan::list`] listed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PcpCopy {
    /// Pages listed, over all CPUs and zones.
    pub listed: u64,
    /// Of those, pages on lists the trace showed (the rest went to a list
    /// the trace did not refill).
    pub as_traced: u64,
    /// Of those, pages at their host frame's offset in a pageblock of ours
    /// taken for the host's pageblock.
    pub at_host_offset: u64,
    /// Pages zoneinfo counted that no list could take: beyond what the
    /// trace took when it refilled every list, a part of a block, or
    /// memory the machine could not give.
    pub dropped: u64,
}

/// One CPU's lists in one zone, planned: the blocks taken for each list
/// (order, migratetype), from its tail to its head: those the trace
/// drains, then those it never shows, then those it allocates (the first
/// allocated freed last, so that it is listed first).
struct PlannedLists {
    /// Our zone (an index of `zone_snapshots()`).
    zone: usize,
    /// The CPU's handle (an index of the handles given).
    cpu: usize,
    /// The host's `high:` for it.
    high: u32,
    /// Per list, its blocks in three runs (drained, unseen, allocated).
    lists: BTreeMap<(u8, u8), [Vec<Page>; 3]>,
}

/// Where the planning of one CPU's lists in one zone stands.
struct Planning {
    /// The host's zone (an index of its zoneinfo's spans).
    host_zone: Option<usize>,
    /// Pages of the host's `count:` not yet taken.
    left: u64,
}

/// The host's per-CPU lists planned: every block taken, none listed yet
/// ([`PcpPlan::list`] lists them). The blocks the trace shows are taken for
/// every CPU before any list's remainder, the highest order first, so that
/// those above order 0 find the aligned room kept for them
/// ([`HostLists::pageblocks_wanted`]) before order-0 frames take it.
#[derive(Default)]
pub struct PcpPlan {
    cpus: Vec<PlannedLists>,
    copy: PcpCopy,
}

/// Plans each CPU's lists as the host's at the trace's start: per zone and
/// CPU of ours that the host's zoneinfo lists, `count:` pages, list by
/// list as [`HostPcpStart::infer`] finds them, the rest on
/// [`HostPcpStart::unrefilled_lists`], each while blocks last. With the
/// host's free lists copied, each block is a spare held block of the list's
/// migratetype (joined into one block of its order), or a frame the trace
/// shows at its host offset in a held pageblock of ours taken for its host
/// pageblock when two traced frames or more lie there
/// ([`super::host_pageblocks`], whose unused pages are lent while the
/// traced lists are planned): allocating it would take a block the host
/// had free; without them, it is allocated on the CPU with that
/// migratetype.
pub fn plan_host_pcp<H: std::ops::Deref<Target = LocalPageAllocator>>(
    host_lists: &HostLists,
    allocator: &LocalPageAllocator,
    handles: &[CpuHandle<H, Local>],
    mut host_free: Option<&mut HostFreeStart>,
) -> PcpPlan {
    let pageblock_order = host_lists.pageblock_order;
    let block_pages = 1u64 << pageblock_order;
    let inferred = &host_lists.inferred;
    let zones = allocator.zone_snapshots();
    let mut plan = PcpPlan::default();
    let mut state: Vec<Planning> = Vec::new();
    for host in &host_lists.cpus {
        plan.cpus.push(PlannedLists {
            zone: host.zone,
            cpu: host.cpu,
            high: host.high,
            lists: BTreeMap::new(),
        });
        state.push(Planning {
            host_zone: host.host_zone,
            left: u64::from(host.count),
        });
    }
    let mut pageblocks = HostPageblocks::new(
        host_lists.cpus.iter().flat_map(|host| {
            host.host_zone.into_iter().flat_map(move |host_zone| {
                inferred.of(host.cpu, host_zone).flat_map(|list| {
                    list.drained
                        .iter()
                        .chain(&list.allocated)
                        .map(|&host_pfn| (list.migratetype, host_pfn))
                })
            })
        }),
        block_pages,
    );
    // One block for a list; `host_pfn` maps it into a held pageblock of
    // `pageblocks`, which also lend their unused pages while planned.
    let take = |host_free: Option<&mut HostFreeStart>,
                mut pageblocks: Option<&mut HostPageblocks>,
                planned: &PlannedLists,
                order: u8,
                migratetype: u8,
                host_pfn: Option<u64>|
     -> Option<(Page, bool)> {
        let kind = MigrateType::from_index(usize::from(migratetype))?;
        let zone = &zones[planned.zone];
        if let Some(free) = host_free {
            let mapped = host_pfn
                .zip(pageblocks.as_deref_mut())
                .and_then(|(host_pfn, blocks)| {
                    blocks.map(free, planned.zone, migratetype, order, host_pfn)
                });
            let pfn = match mapped {
                Some(pfn) => pfn,
                None => match free.take_spare(planned.zone, kind, Order(order)) {
                    Some(pfn) => pfn,
                    // The spare memory is in the pageblocks taken whole.
                    None => pageblocks?.take_unused(planned.zone, migratetype, order)?,
                },
            };
            if order > 0 {
                allocator.join_allocated_pages(pfn, Order(order)).ok()?;
            }
            return Some((Page::from_pfn(pfn), mapped.is_some()));
        }
        let zone_bits = match zone.zone_type {
            ZoneType::Dma => Gfp::DMA,
            ZoneType::Dma32 => Gfp::DMA32,
            _ => Gfp::HIGHUSER,
        };
        let gfp = zone_bits
            | match kind {
                MigrateType::Movable => Gfp::MOVABLE,
                MigrateType::Reclaimable => Gfp::KERNEL | Gfp::RECLAIMABLE,
                _ => Gfp::KERNEL,
            };
        let handle = &handles[planned.cpu];
        let page = handle.alloc_pages(gfp, Order(order), zone.node).ok()?;
        if (zone.start_pfn..zone.start_pfn + zone.spanned).contains(&page.pfn().0) {
            return Some((page, false));
        }
        let _ = handle.free_pages(page, Order(order));
        None
    };
    // The trace's lists of every CPU first, as far as `count` goes, the
    // highest order first: a block above order 0 needs aligned room, which
    // order-0 frames would otherwise use up (`HostLists::pageblocks_wanted`).
    let mut traced: Vec<(usize, &PcpListStart)> = Vec::new();
    for (at, (planned, planning)) in plan.cpus.iter().zip(&state).enumerate() {
        if let Some(host_zone) = planning.host_zone {
            traced.extend(inferred.of(planned.cpu, host_zone).map(|list| (at, list)));
        }
    }
    traced.sort_by_key(|(_, list)| std::cmp::Reverse(list.order));
    for (at, list) in traced {
        let planned = &mut plan.cpus[at];
        let Planning { left, .. } = &mut state[at];
        let block = 1u64 << list.order;
        let mut runs: [Vec<Page>; 3] = Default::default();
        for (at, pfns) in [(0, &list.drained), (2, &list.allocated)] {
            for &host_pfn in pfns {
                if *left < block {
                    break;
                }
                let Some((page, mapped)) = take(
                    host_free.as_deref_mut(),
                    Some(&mut pageblocks),
                    planned,
                    list.order,
                    list.migratetype,
                    Some(host_pfn),
                ) else {
                    break;
                };
                runs[at].push(page);
                *left -= block;
                plan.copy.as_traced += block;
                if mapped {
                    plan.copy.at_host_offset += block;
                }
            }
        }
        runs[2].reverse();
        let entry = planned
            .lists
            .entry((list.order, list.migratetype))
            .or_default();
        for (into, run) in entry.iter_mut().zip(runs) {
            into.extend(run);
        }
    }
    // What the traced frames left of the pageblocks taken for them is
    // spare again, and no longer theirs to lend.
    if let Some(free) = host_free.as_deref_mut() {
        pageblocks.give_back(free);
    }
    // The rest on lists the trace did not refill, each while blocks of its
    // type last (without a trace: Movable order 0), between a list's
    // drained and allocated blocks.
    for (planned, planning) in plan.cpus.iter_mut().zip(&mut state) {
        let Planning { host_zone, left } = planning;
        let rest = host_zone.map_or_else(
            || vec![(0, MigrateType::Movable as u8)],
            |host_zone| inferred.unrefilled_lists(planned.cpu, host_zone, pageblock_order),
        );
        for (order, migratetype) in rest {
            while *left >= 1u64 << order {
                let Some((page, _)) = take(
                    host_free.as_deref_mut(),
                    None,
                    planned,
                    order,
                    migratetype,
                    None,
                ) else {
                    break;
                };
                planned.lists.entry((order, migratetype)).or_default()[1].push(page);
                *left -= 1u64 << order;
            }
        }
        plan.copy.dropped += *left;
    }
    plan
}

impl PcpPlan {
    /// Lists the planned blocks: each CPU's `high` in each zone set to the
    /// host's, then its blocks freed onto its lists. Blocks of orders 1..=3
    /// are freed between order-0 pages where there are any: a run of them
    /// would start free_high()'s drains, which the host's lists, full at
    /// the start, did not show.
    pub fn list<H: std::ops::Deref<Target = LocalPageAllocator>>(
        self,
        allocator: &LocalPageAllocator,
        handles: &[CpuHandle<H, Local>],
    ) -> PcpCopy {
        let mut copy = self.copy;
        for planned in self.cpus {
            let handle = &handles[planned.cpu];
            allocator.set_pcp_high(planned.zone, handle.cpu(), planned.high);
            let mut single = Vec::new();
            let mut larger = Vec::new();
            for ((order, _), runs) in planned.lists {
                let pages = runs.into_iter().flatten();
                if order == 0 {
                    single.extend(pages);
                } else {
                    larger.extend(pages.map(|page| (page, order)));
                }
            }
            let mut single = single.into_iter();
            for (block, order) in larger {
                if handle.free_pages(block, Order(order)).is_ok() {
                    copy.listed += 1u64 << order;
                }
                if let Some(page) = single.next() {
                    if handle.free_pages(page, Order(0)).is_ok() {
                        copy.listed += 1;
                    }
                }
            }
            for page in single {
                if handle.free_pages(page, Order(0)).is_ok() {
                    copy.listed += 1;
                }
            }
        }
        copy
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::event::TraceEvent;

    fn event(
        kind: EventKind,
        cpu: u16,
        pfn: u64,
        order: u8,
        migratetype: i8,
        flag: bool,
    ) -> TraceEvent {
        let mut event = TraceEvent::new(kind, 0, cpu, pfn);
        event.order = order;
        event.migratetype = migratetype;
        event.flag = flag;
        event
    }

    /// Allocations and drains not refilled nor freed first count toward
    /// their list, with their host frames; refilled pages, freed pages,
    /// failed allocations, orders no list serves and PFNs in no zone do
    /// not; a refill marks its list.
    #[test]
    fn the_trace_shows_what_each_list_held() {
        use EventKind::{Alloc, Free, PcpuDrain, ZoneLocked};
        let spans = [HostZoneSpan {
            node: 0,
            zone: "Normal".into(),
            start_pfn: 1000,
            spanned: 1000,
        }];
        let trace = Trace {
            events: vec![
                event(Alloc, 0, 1000, 0, 1, false),
                event(Alloc, 0, 1004, 2, 1, false),
                event(ZoneLocked, 0, 1100, 0, 1, true),
                event(Alloc, 0, 1100, 0, 1, false),
                event(Free, 1, 1200, 0, 0, false),
                event(Alloc, 1, 1200, 0, 0, false),
                event(Alloc, 1, 1201, 0, 0, false),
                event(Alloc, 1, u64::MAX, 0, 0, false),
                event(Alloc, 1, 1512, 5, 1, false),
                event(Alloc, 1, 5000, 0, 1, false),
                event(Alloc, 1, 1300, 0, -1, false),
                event(PcpuDrain, 1, 1400, 0, 0, false),
                event(Free, 1, 1401, 0, 0, false),
                event(PcpuDrain, 1, 1401, 0, 0, false),
            ],
            ..Trace::default()
        };
        let inferred = HostPcpStart::infer(&trace, &spans, 9);
        let list =
            |cpu, order, migratetype, allocated: &[u64], drained: &[u64], refilled| PcpListStart {
                cpu,
                zone: 0,
                order,
                migratetype,
                pages: ((allocated.len() + drained.len()) as u64) << order,
                refilled,
                allocated: allocated.to_vec(),
                drained: drained.to_vec(),
            };
        // A drained page counts as listed unless freed first.
        assert_eq!(
            inferred.lists,
            vec![
                list(0, 0, 1, &[1000], &[], true),
                list(0, 2, 1, &[1004], &[], false),
                list(1, 0, 0, &[1201], &[1400], false)
            ]
        );
        // CPU 0's Movable order-0 list was refilled: the rest goes to
        // Unmovable order 0, then Reclaimable, then order 1.
        let rest = inferred.unrefilled_lists(0, 0, 9);
        assert_eq!(&rest[..3], &[(0, 0), (0, 2), (1, 1)]);
        assert_eq!(rest.len(), 14);
        assert_eq!(inferred.unrefilled_lists(1, 0, 9)[0], (0, 1));
    }

    #[test]
    fn zone_spans_are_read_from_zoneinfo() {
        let zoneinfo = "Node 0, zone      DMA\n  pages free 3840\n        spanned  4095\n  start_pfn:           1\n\
                        Node 0, zone   Normal\n        spanned  1000\n  start_pfn:           4096\n\
                        Node 0, zone  Movable\n  pages free     0\n";
        let spans = super::super::host::parse_zone_spans(zoneinfo);
        assert_eq!(spans.len(), 2);
        assert_eq!(
            (spans[1].zone.as_str(), spans[1].start_pfn, spans[1].spanned),
            ("Normal", 4096, 1000)
        );
        // A damaged text's repeats, unknown names and far nodes are left
        // out, so that placing a PFN looks at a bounded number of spans.
        let zone = |node: usize, name: &str| {
            format!("Node {node}, zone {name}\n        spanned  1\n  start_pfn:           1\n")
        };
        let mut damaged = String::new();
        for copy in 0..1000 {
            damaged += &zone(0, "Normal");
            damaged += &zone(copy, "Normal");
            damaged += &zone(0, &format!("Zone{copy}"));
        }
        let spans = super::super::host::parse_zone_spans(&damaged);
        assert_eq!(spans.len(), pageframe::MAX_NUMNODES);
    }
}
