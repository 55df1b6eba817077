//! The events of a page-allocator trace, as the kernel's kmem tracepoints
//! (include/trace/events/kmem.h) report them, with the vmstat worker's runs
//! (include/trace/events/workqueue.h), and a whole trace: events in
//! timestamp order plus the recording's metadata (host state at start and
//! end, lost events, caps).
//!
//! Timestamps count in the trace's clock ([`TraceClock`]): nanoseconds for
//! the clocks tracefs prints as seconds, plain ticks for those it prints as
//! integers (`counter`, `uptime`, `x86-tsc`).
//!
//! Invariant: `Trace::events` is sorted by `timestamp` (ties keep the
//! order they were recorded in); `Trace::check_invariants` verifies it.

use super::TraceError;

/// Which tracepoint an event came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum EventKind {
    /// `mm_page_alloc`: a block handed out (pcp or zone).
    Alloc = 0,
    /// `mm_page_free`: a block freed by `__free_pages()` and friends.
    Free = 1,
    /// `mm_page_free_batched`: an order-0 page freed through a batch.
    FreeBatched = 2,
    /// `mm_page_alloc_zone_locked`: a block taken from the buddy lists under
    /// the zone lock; `percpu_refill` tells a pcp refill from a direct one.
    ZoneLocked = 3,
    /// `mm_page_pcpu_drain`: a block returned from a pcp list to the buddy.
    PcpuDrain = 4,
    /// `mm_page_alloc_extfrag`: a fallback to another migratetype.
    Extfrag = 5,
    /// `workqueue_execute_start` of `vmstat_update`: the vmstat worker ran
    /// on this CPU (refresh_cpu_vm_stats(), whose decay_pcp_high() decays
    /// each zone's pcp `high` and drains what lies above it). No block.
    VmstatWork = 6,
}

impl EventKind {
    /// Every kind, in tag order.
    pub const ALL: [EventKind; 7] = [
        EventKind::Alloc,
        EventKind::Free,
        EventKind::FreeBatched,
        EventKind::ZoneLocked,
        EventKind::PcpuDrain,
        EventKind::Extfrag,
        EventKind::VmstatWork,
    ];

    /// The tracepoint's name.
    pub fn tracepoint(self) -> &'static str {
        match self {
            EventKind::Alloc => "mm_page_alloc",
            EventKind::Free => "mm_page_free",
            EventKind::FreeBatched => "mm_page_free_batched",
            EventKind::ZoneLocked => "mm_page_alloc_zone_locked",
            EventKind::PcpuDrain => "mm_page_pcpu_drain",
            EventKind::Extfrag => "mm_page_alloc_extfrag",
            EventKind::VmstatWork => "workqueue_execute_start",
        }
    }

    /// The tracepoint's system (its directory under `events/`).
    pub fn system(self) -> &'static str {
        match self {
            EventKind::VmstatWork => "workqueue",
            _ => "kmem",
        }
    }

    /// How summaries name the kind: the tracepoint, or for the worker's
    /// runs the work function the recording keeps.
    pub fn label(self) -> &'static str {
        match self {
            EventKind::VmstatWork => "vmstat_update",
            kind => kind.tracepoint(),
        }
    }

    /// The kind of a tracepoint name, bare or prefixed with its system
    /// (`kmem:mm_page_alloc`, as perf prints it).
    pub fn from_tracepoint(name: &str) -> Option<EventKind> {
        EventKind::ALL.into_iter().find(|kind| {
            let bare = name
                .strip_prefix(kind.system())
                .and_then(|rest| rest.strip_prefix(':'))
                .unwrap_or(name);
            kind.tracepoint() == bare
        })
    }

    /// The kind with tag `tag` (its discriminant).
    pub fn from_tag(tag: u8) -> Option<EventKind> {
        EventKind::ALL.get(tag as usize).copied()
    }
}

/// One event. Fields a tracepoint does not have are zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceEvent {
    /// Time since the first event of the trace, in the trace's
    /// [`TraceClock`] (nanoseconds unless the clock counts ticks).
    pub timestamp: u64,
    /// The tracepoint.
    pub kind: EventKind,
    /// The CPU the event fired on.
    pub cpu: u16,
    /// Order of the block (`order`; `alloc_order` for extfrag).
    pub order: u8,
    /// `migratetype` (`alloc_migratetype` for extfrag); -1 when the kernel
    /// reports none.
    pub migratetype: i8,
    /// The host's PFN of the block (0 for a vmstat worker run, which has none).
    pub pfn: u64,
    /// `gfp_flags` of an allocation, the kernel's bits.
    pub gfp: u32,
    /// Extfrag: `fallback_order`.
    pub fallback_order: u8,
    /// Extfrag: `fallback_migratetype`.
    pub fallback_migratetype: i8,
    /// Zone-locked: `percpu_refill`; extfrag: `change_ownership`.
    pub flag: bool,
}

impl TraceEvent {
    /// An event of `kind` with every field zero.
    pub fn new(kind: EventKind, timestamp: u64, cpu: u16, pfn: u64) -> TraceEvent {
        TraceEvent {
            timestamp,
            kind,
            cpu,
            order: 0,
            migratetype: 0,
            pfn,
            gfp: 0,
            fallback_order: 0,
            fallback_migratetype: 0,
            flag: false,
        }
    }
}

/// What a trace's timestamps count. tracefs prints the clocks that run in
/// nanoseconds (`local`, `global`, `mono`, `boot`, `perf`, …) as seconds
/// with a fraction, and the others (`counter`, `uptime` in jiffies,
/// `x86-tsc` in TSC cycles) as bare integers (print_trace_fmt() and the
/// `in_ns` field of the kernel's trace_clocks[] table): their ticks have
/// no time unit a replay could use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceClock {
    /// Nanoseconds.
    Nanoseconds,
    /// Ticks of a clock with no known time unit.
    Ticks,
}

impl TraceClock {
    /// The metadata key that records the clock.
    const META_KEY: &'static str = "clock";

    /// The metadata value for this clock.
    fn meta_value(self) -> &'static str {
        match self {
            TraceClock::Nanoseconds => "ns",
            TraceClock::Ticks => "ticks",
        }
    }
}

/// The metadata key that says whether a recording traced the vmstat
/// worker's runs: [`VMSTAT_WORKER_TRACED`], or why not.
pub const VMSTAT_WORKER_KEY: &str = "vmstat_worker";
/// [`VMSTAT_WORKER_KEY`]'s value when it did.
pub const VMSTAT_WORKER_TRACED: &str = "traced";

/// A recorded or imported trace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trace {
    /// Named facts about the recording, in insertion order: `source`,
    /// `command`, `cpus`, `lost_events`, `event_cap`, and the host's files
    /// at start and end (see [`super::host::HOST_FILES`]).
    pub meta: Vec<(String, String)>,
    /// Events in timestamp order.
    pub events: Vec<TraceEvent>,
}

impl Trace {
    /// The value of metadata `key`.
    pub fn meta(&self, key: &str) -> Option<&str> {
        self.meta
            .iter()
            .find(|(name, _)| name == key)
            .map(|(_, value)| value.as_str())
    }

    /// Sets metadata `key`, replacing an earlier value.
    pub fn set_meta(&mut self, key: &str, value: impl Into<String>) {
        let value = value.into();
        match self.meta.iter_mut().find(|(name, _)| name == key) {
            Some(entry) => entry.1 = value,
            None => self.meta.push((key.to_string(), value)),
        }
    }

    /// What the timestamps count: nanoseconds unless the metadata says
    /// ticks (traces written before the key existed are in nanoseconds).
    pub fn clock(&self) -> TraceClock {
        match self.meta(TraceClock::META_KEY) {
            Some(value) if value == TraceClock::Ticks.meta_value() => TraceClock::Ticks,
            _ => TraceClock::Nanoseconds,
        }
    }

    /// Records what the timestamps count.
    pub fn set_clock(&mut self, clock: TraceClock) {
        self.set_meta(TraceClock::META_KEY, clock.meta_value());
    }

    /// True when the trace shows when the vmstat worker ran on each CPU:
    /// the recording traced its runs (metadata [`VMSTAT_WORKER_KEY`] is
    /// [`VMSTAT_WORKER_TRACED`]; a CPU it never ran on shows none), or the
    /// trace holds some (a text import with the workqueue event).
    pub fn records_vmstat_worker(&self) -> bool {
        self.meta(VMSTAT_WORKER_KEY) == Some(VMSTAT_WORKER_TRACED)
            || self
                .events
                .iter()
                .any(|event| event.kind == EventKind::VmstatWork)
    }

    /// Events of each kind, in [`EventKind::ALL`] order.
    pub fn counts(&self) -> [u64; EventKind::ALL.len()] {
        let mut counts = [0u64; EventKind::ALL.len()];
        for event in &self.events {
            counts[event.kind as usize] += 1;
        }
        counts
    }

    /// Highest CPU number seen, plus one (0 for an empty trace).
    pub fn nr_cpus_seen(&self) -> usize {
        self.events
            .iter()
            .map(|event| event.cpu as usize + 1)
            .max()
            .unwrap_or(0)
    }

    /// Sorts events by timestamp (stable) and rebases timestamps so that the
    /// first event is at 0.
    pub fn normalize(&mut self) {
        self.events.sort_by_key(|event| event.timestamp);
        if let Some(first) = self.events.first().map(|event| event.timestamp) {
            for event in &mut self.events {
                event.timestamp -= first;
            }
        }
    }

    /// Checks that events are in timestamp order, orders are plausible, a
    /// vmstat worker run carries no block's fields, and there are at most [`super::MAX_TRACE_EVENTS`] of them.
    pub fn check_invariants(&self) -> Result<(), TraceError> {
        if self.events.len() > super::MAX_TRACE_EVENTS {
            return Err(TraceError::Invariant(format!(
                "{} events, over the limit of {}",
                self.events.len(),
                super::MAX_TRACE_EVENTS
            )));
        }
        for (index, pair) in self.events.windows(2).enumerate() {
            if pair[1].timestamp < pair[0].timestamp {
                return Err(TraceError::Invariant(format!(
                    "event {} is earlier than event {index}",
                    index + 1
                )));
            }
        }
        if let Some(index) = self.events.iter().position(|event| {
            event.kind == EventKind::VmstatWork
                && *event != TraceEvent::new(event.kind, event.timestamp, event.cpu, 0)
        }) {
            return Err(TraceError::Invariant(format!(
                "event {index} is a vmstat worker run with a block's fields set"
            )));
        }
        if let Some(index) = self
            .events
            .iter()
            .position(|event| event.order > super::MAX_TRACE_ORDER)
        {
            return Err(TraceError::Invariant(format!(
                "event {index} has order {} above {}",
                self.events[index].order,
                super::MAX_TRACE_ORDER
            )));
        }
        Ok(())
    }
}
