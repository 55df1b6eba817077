//! How a trace is replayed ([`ReplayOptions`]): the machine, the policy
//! switches, the seed, and which of the host's start state the replay
//! copies (stand-ins for blocks allocated before the trace, the per-CPU
//! lists, the free lists) and how the vmstat worker's decay runs.

use super::decay::PcpDecay;
use super::event::Trace;
use pageframe::{AllocOptions, FreeHighThreshold, MachineDesc};

/// How to replay.
#[derive(Clone, Debug, PartialEq)]
pub struct ReplayOptions {
    /// The machine; `None` boots one shaped like the traced host (its
    /// managed memory, CPUs and a DMA32 zone if it had one).
    pub machine: Option<MachineDesc>,
    /// Kernel command-line policy switches applied to the machine
    /// (`page_alloc.shuffle=1`, `page_alloc.shuffle_order=9`, ...).
    pub cmdline: String,
    /// The allocator's policy switches besides the command line's: the
    /// fallback order and the per-CPU list sizing (default: the kernel's).
    pub alloc: AllocOptions,
    /// The machine's RNG seed.
    pub seed: u64,
    /// Accept a machine smaller than the host (fewer CPUs: CPU `c` replays
    /// on `c % nr_cpus`; less memory: allocations may fail and are counted).
    pub fit: bool,
    /// Fragmentation samples over the trace, at most (plus one at the end).
    pub samples: usize,
    /// Check the allocator's invariants at the end (a walk of the whole
    /// memmap: about a fifth of the replay of the shipped trace). Tests
    /// turn it on; an error is [`super::TraceError::Invariant`].
    pub check_invariants: bool,
    /// Hold a stand-in for every block the trace frees before it allocates
    /// it (allocated before the trace began), so that its free reaches our
    /// per-CPU lists as the kernel's did; off, such frees are skipped.
    pub hold_pretrace: bool,
    /// Start each CPU's lists where the host's stood at the trace's start
    /// (its zoneinfo `count:` and `high:` per zone): pages listed on the
    /// lists the trace shows (see [`super::host_pcp`]) and `high` set, on a
    /// machine the host's shape. Off, the lists start empty at `high_min`,
    /// as after boot.
    pub host_pcp_start: bool,
    /// When the vmstat worker's pass over a CPU's lists runs: `high` decays
    /// by an eighth toward `high_min` and the pages above it are drained
    /// (decay_pcp_high() from vmstat_update()).
    pub pcp_decay: PcpDecay,
    /// Lay the free memory out as the host's /proc/pagetypeinfo showed it
    /// at the trace's start (free blocks per zone, migratetype and order;
    /// Unmovable and Reclaimable pageblocks) and hold the rest, as the
    /// host's workload held it (see [`super::host_free`]), on a machine the
    /// host's shape (`machine: None`). Off, or on a given machine, the
    /// replay starts on a freshly booted machine's free memory.
    pub host_free_start: bool,
    /// The rule for draining on high-order free runs; `None` takes the
    /// traced kernel's (from its release), else `alloc.free_high`.
    pub free_high: Option<FreeHighThreshold>,
}

impl ReplayOptions {
    /// How the decay runs on `trace`: as asked where the trace allows it,
    /// else the next one down (the worker's runs, the clock, none).
    pub fn decay_on(&self, trace: &Trace) -> PcpDecay {
        self.pcp_decay.on(trace)
    }
}

impl Default for ReplayOptions {
    fn default() -> ReplayOptions {
        ReplayOptions {
            machine: None,
            cmdline: String::new(),
            alloc: AllocOptions::KERNEL,
            seed: 42,
            fit: false,
            samples: 32,
            check_invariants: false,
            hold_pretrace: true,
            host_pcp_start: true,
            pcp_decay: PcpDecay::Worker,
            host_free_start: true,
            free_high: None,
        }
    }
}
