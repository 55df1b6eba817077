//! The vmstat worker's pass over the per-CPU lists during a replay:
//! vmstat_update() calls decay_pcp_high() for each zone of its CPU, which
//! lowers the lists' `high` by an eighth toward `high_min` and drains what
//! lies above it. When the passes run is [`PcpDecay`]; [`VmstatWorker`]
//! runs them, at the worker's runs a trace recorded or once a second of
//! its time.

use super::event::{Trace, TraceClock};
use pageframe::{CpuId, LocalPageAllocator};

/// When a replay runs the vmstat worker's pass over the per-CPU lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PcpDecay {
    /// At each run of the worker the trace recorded, on that run's CPU (the
    /// kernel's vmstat_update() runs about once a second on a CPU with
    /// counters to fold, and not at all on an idle one; where in its
    /// second is not known otherwise). A trace that did not record the
    /// worker falls back to [`PcpDecay::Timer`].
    Worker,
    /// Once a second of the trace's time from its first event, on every
    /// CPU (`sysctl_stat_interval`); not on a clock of ticks
    /// ([`TraceClock::Ticks`]), which gives no seconds.
    Timer,
    /// Never: `high` moves only with allocations and frees.
    Off,
}

impl PcpDecay {
    /// How the decay runs on `trace` when asked for `self`: as asked where
    /// the trace allows it, else the next one down (the worker's runs, the
    /// clock, none).
    pub fn on(self, trace: &Trace) -> PcpDecay {
        let by_time = trace.clock() == TraceClock::Nanoseconds;
        match self {
            PcpDecay::Worker if trace.records_vmstat_worker() => PcpDecay::Worker,
            PcpDecay::Worker | PcpDecay::Timer if by_time => PcpDecay::Timer,
            _ => PcpDecay::Off,
        }
    }
}

/// The vmstat worker's period (`sysctl_stat_interval`, HZ jiffies).
const VMSTAT_INTERVAL_NS: u64 = 1_000_000_000;

/// The worker's passes over a replay's lists, as [`PcpDecay`] (already
/// decided for the trace, [`PcpDecay::on`]) has them run.
///
/// A timed pass visits only the CPUs whose lists may still decay: a CPU
/// whose last pass found nothing further (`high` at `high_min`, nothing
/// above it) is settled, and stays so until the replay allocates or frees
/// on it ([`VmstatWorker::touch`]): decay_pcp_high() reads only that CPU's
/// own lists, which other CPUs can only shorten (a drain). The passes are
/// counted per CPU of the machine as before; a trace of events a second
/// apart on a machine of 65 535 CPUs no longer costs a walk of them all
/// per event.
#[derive(Clone, Debug)]
pub struct VmstatWorker {
    decay: PcpDecay,
    /// The trace time of the next once-a-second pass.
    next_ns: u64,
    /// The CPUs not settled (sorted before each pass, which visits them in
    /// ascending order as a pass over every CPU does: the drains' order
    /// shapes the buddy lists).
    unsettled: Vec<u16>,
    /// Per CPU: whether it is in `unsettled`.
    listed: Vec<bool>,
}

impl VmstatWorker {
    /// A worker over `nr_cpus` CPUs (every one not settled) that runs as
    /// `decay` says, the first timed pass a second after the trace's first
    /// event.
    pub fn new(decay: PcpDecay, nr_cpus: usize) -> VmstatWorker {
        let nr_cpus = nr_cpus.min(usize::from(u16::MAX) + 1);
        VmstatWorker {
            decay,
            next_ns: VMSTAT_INTERVAL_NS,
            unsettled: (0..nr_cpus).map(|cpu| cpu as u16).collect(),
            listed: vec![true; nr_cpus],
        }
    }

    /// The replay allocated or freed on `cpu`: its lists may decay again.
    pub fn touch(&mut self, cpu: usize) {
        if let Some(listed) = self.listed.get_mut(cpu) {
            if !*listed {
                *listed = true;
                self.unsettled.push(cpu as u16);
            }
        }
    }

    /// By the clock: the passes over every CPU's lists due by `timestamp`,
    /// or fewer when no list has further to decay (a gap of hours in a
    /// trace is a few passes). Returns the passes made, counted per CPU.
    pub fn passes_due(&mut self, allocator: &LocalPageAllocator, timestamp: u64) -> u64 {
        if self.decay != PcpDecay::Timer || timestamp < self.next_ns {
            return 0;
        }
        let passes = (timestamp - self.next_ns) / VMSTAT_INTERVAL_NS + 1;
        self.next_ns = self
            .next_ns
            .saturating_add(passes.saturating_mul(VMSTAT_INTERVAL_NS));
        let mut made = 0;
        self.unsettled.sort_unstable();
        for _ in 0..passes {
            let listed = &mut self.listed;
            self.unsettled.retain(|&cpu| {
                // Every CPU of the machine exists: the call cannot fail.
                let more = allocator.decay_pcp_high(CpuId(cpu)).unwrap_or(false);
                listed[usize::from(cpu)] = more;
                more
            });
            made += allocator.nr_cpus() as u64;
            if self.unsettled.is_empty() {
                break;
            }
        }
        made
    }

    /// At a run of the worker the trace recorded on `cpu`: one pass over
    /// that CPU's lists when the runs are followed. Returns the passes made.
    pub fn traced_run(&self, allocator: &LocalPageAllocator, cpu: CpuId) -> u64 {
        if self.decay != PcpDecay::Worker {
            return 0;
        }
        // A CPU the caller names from the machine's handles: the call
        // cannot fail.
        let _ = allocator.decay_pcp_high(cpu);
        1
    }
}
