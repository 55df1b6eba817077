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
//! The trace also gives those pages' host frames, and [`list_host_pcp`]
//! keeps their buddy structure: each host pageblock they lie in gets a
//! held pageblock of ours, the frames their offsets in it, so that what
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
use pageframe::{
    CpuHandle, Gfp, Local, LocalPageAllocator, MigrateType, Order, Page, Pfn, ZoneType,
};
use std::collections::{BTreeMap, HashMap, HashSet};

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

/// What [`list_host_pcp`] listed.
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

/// Lists each CPU's pages as the host's at the trace's start: per zone and
/// CPU of ours that the host's zoneinfo lists, its `high` set to the
/// host's, then `count:` pages freed onto its lists, list by list as
/// [`HostPcpStart::infer`] finds them, the rest on
/// [`HostPcpStart::unrefilled_lists`], each while blocks last. With the
/// host's free lists copied, each block is a spare held block of the list's
/// migratetype (joined into one block of its order): allocating it would
/// take a block the host had free; without them, it is allocated on the
/// CPU with that migratetype. Blocks of orders 1..=3 are freed between
/// order-0 pages where there are any: a run of them would start
/// free_high()'s drains, which the host's lists, full at the start, did not
/// show.
pub fn list_host_pcp<H: std::ops::Deref<Target = LocalPageAllocator>>(
    trace: &Trace,
    allocator: &LocalPageAllocator,
    handles: &[CpuHandle<H, Local>],
    mut host_free: Option<&mut HostFreeStart>,
) -> PcpCopy {
    let Some(zoneinfo) = host_file(trace, Moment::Start, "zoneinfo") else {
        return PcpCopy::default();
    };
    let pageblock_order = allocator.layout().pageblock_order.0;
    let spans = super::host::parse_zone_spans(&zoneinfo);
    let inferred = HostPcpStart::infer(trace, &spans, pageblock_order);
    let zones = allocator.zone_snapshots();
    let mut copy = PcpCopy::default();
    for host in parse_pcp(&zoneinfo) {
        let Some((index, zone)) = zones.iter().enumerate().find(|(_, zone)| {
            zone.node.0 == host.node && zone.zone_type.name() == host.zone && zone.managed > 0
        }) else {
            continue;
        };
        let Some(handle) = handles.get(host.cpu) else {
            continue;
        };
        let host_zone = spans
            .iter()
            .position(|span| span.node == host.node && span.zone == host.zone);
        allocator.set_pcp_high(index, handle.cpu(), host.high);
        let span = zone.start_pfn..zone.start_pfn + zone.spanned;
        let zone_bits = match zone.zone_type {
            ZoneType::Dma => Gfp::DMA,
            ZoneType::Dma32 => Gfp::DMA32,
            _ => Gfp::HIGHUSER,
        };
        // One block for a list: a spare held block of the list's type when
        // the free lists were copied (allocating would take a block the
        // host had free), else one allocated on the CPU. A host frame the
        // trace shows keeps its offset in a held pageblock of ours taken
        // for its host pageblock (per migratetype), so that two such frames
        // are buddies here when they were there.
        let mut blocks: HashMap<(u8, u64), u64> = HashMap::new();
        let block_pages = 1u64 << pageblock_order;
        let mut at_host_offset = 0u64;
        let mut take = |order: u8, migratetype: u8, host_pfn: Option<u64>| -> Option<Page> {
            let kind = MigrateType::from_index(usize::from(migratetype))?;
            if let Some(free) = host_free.as_deref_mut() {
                let mapped = host_pfn.and_then(|host_pfn| {
                    let key = (migratetype, host_pfn / block_pages);
                    let base = match blocks.get(&key) {
                        Some(&base) => base,
                        None => {
                            let base = free.take_spare(index, kind, Order(pageblock_order))?.0;
                            blocks.insert(key, base);
                            base
                        }
                    };
                    Some(Pfn(base + host_pfn % block_pages))
                });
                let pfn = match mapped {
                    Some(pfn) => pfn,
                    None => free.take_spare(index, kind, Order(order))?,
                };
                if order > 0 {
                    allocator.join_allocated_pages(pfn, Order(order)).ok()?;
                }
                if mapped.is_some() {
                    at_host_offset += 1u64 << order;
                }
                return Some(Page::from_pfn(pfn));
            }
            let gfp = zone_bits
                | match kind {
                    MigrateType::Movable => Gfp::MOVABLE,
                    MigrateType::Reclaimable => Gfp::KERNEL | Gfp::RECLAIMABLE,
                    _ => Gfp::KERNEL,
                };
            let page = handle.alloc_pages(gfp, Order(order), zone.node).ok()?;
            if span.contains(&page.pfn().0) {
                return Some(page);
            }
            let _ = handle.free_pages(page, Order(order));
            None
        };
        // Per list (order, migratetype), the blocks from its tail to its
        // head: those the trace drains, then those it never shows, then
        // those it allocates (the first allocated freed last, so that it
        // is listed first).
        let mut plans: BTreeMap<(u8, u8), [Vec<Page>; 3]> = BTreeMap::new();
        // The trace's lists first, as far as `count` goes.
        let mut left = u64::from(host.count);
        for list in host_zone
            .into_iter()
            .flat_map(|host_zone| inferred.of(host.cpu, host_zone))
        {
            let plan = plans.entry((list.order, list.migratetype)).or_default();
            let block = 1u64 << list.order;
            let known = [(0, &list.drained), (2, &list.allocated)];
            for (at, pfns) in known {
                for &host_pfn in pfns.iter() {
                    if left < block {
                        break;
                    }
                    let Some(page) = take(list.order, list.migratetype, Some(host_pfn)) else {
                        break;
                    };
                    plan[at].push(page);
                    left -= block;
                    copy.as_traced += block;
                }
            }
            plan[2].reverse();
        }
        // The rest on lists the trace did not refill, each while blocks
        // of its type last (without a trace: Movable order 0), between a
        // list's drained and allocated blocks.
        let rest = host_zone.map_or_else(
            || vec![(0, MigrateType::Movable as u8)],
            |host_zone| inferred.unrefilled_lists(host.cpu, host_zone, pageblock_order),
        );
        for (order, migratetype) in rest {
            while left >= 1u64 << order {
                let Some(page) = take(order, migratetype, None) else {
                    break;
                };
                plans.entry((order, migratetype)).or_default()[1].push(page);
                left -= 1u64 << order;
            }
        }
        copy.dropped += left;
        copy.at_host_offset += at_host_offset;
        let mut single = Vec::new();
        let mut larger = Vec::new();
        for ((order, _), plan) in plans {
            let pages = plan.into_iter().flatten();
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
    }
}
