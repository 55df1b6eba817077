//! What a sample costs the host, read around each timed loop: TLB
//! shootdowns received per host CPU (the `TLB` row of /proc/interrupts),
//! the process's minor and major faults (getrusage), and the backing's host
//! counters (system calls, the mermap agents' faults). Also where the
//! threads run: the populating thread and the spinner are pinned to two
//! different host CPUs, so every sample has the same placement.

use pageframe::backing::{allowed_cpus, own_faults, pin_current_thread, Backing};

/// Counts read at one instant.
#[derive(Clone, Debug, Default)]
pub struct HostSnapshot {
    /// TLB shootdowns received so far, per host CPU (empty when the row is
    /// missing, as on a host without it).
    tlb_per_cpu: Vec<u64>,
    minor_faults: u64,
    major_faults: u64,
    syscalls: u64,
    agent_minor_faults: u64,
}

/// What happened between two snapshots.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HostCost {
    /// Shootdowns received by the populating thread's host CPU.
    pub ipis_populating_cpu: u64,
    /// Shootdowns received by every other host CPU.
    pub ipis_other_cpus: u64,
    /// The process's minor faults.
    pub minor_faults: u64,
    /// The process's major faults.
    pub major_faults: u64,
    /// The backing's host system calls.
    pub syscalls: u64,
    /// Minor faults of the mermap agents.
    pub agent_minor_faults: u64,
}

impl HostCost {
    /// Adds `other` in.
    pub fn add(&mut self, other: HostCost) {
        self.ipis_populating_cpu += other.ipis_populating_cpu;
        self.ipis_other_cpus += other.ipis_other_cpus;
        self.minor_faults += other.minor_faults;
        self.major_faults += other.major_faults;
        self.syscalls += other.syscalls;
        self.agent_minor_faults += other.agent_minor_faults;
    }
}

impl HostSnapshot {
    /// The counts now.
    pub fn take(backing: &dyn Backing) -> HostSnapshot {
        let (minor_faults, major_faults) = own_faults();
        let host = backing.host_counters();
        HostSnapshot {
            tlb_per_cpu: tlb_shootdowns(),
            minor_faults,
            major_faults,
            syscalls: host.syscalls,
            agent_minor_faults: host.agent_minor_faults,
        }
    }

    /// The cost from `self` to `later`, the populating thread running on
    /// host CPU `populating_cpu`.
    pub fn until(&self, later: &HostSnapshot, populating_cpu: usize) -> HostCost {
        let mut cost = HostCost {
            minor_faults: later.minor_faults.saturating_sub(self.minor_faults),
            major_faults: later.major_faults.saturating_sub(self.major_faults),
            syscalls: later.syscalls.saturating_sub(self.syscalls),
            agent_minor_faults: later
                .agent_minor_faults
                .saturating_sub(self.agent_minor_faults),
            ..HostCost::default()
        };
        for (cpu, (before, after)) in self.tlb_per_cpu.iter().zip(&later.tlb_per_cpu).enumerate() {
            let received = after.saturating_sub(*before);
            if cpu == populating_cpu {
                cost.ipis_populating_cpu += received;
            } else {
                cost.ipis_other_cpus += received;
            }
        }
        cost
    }
}

/// The `TLB` row of /proc/interrupts: shootdowns received per host CPU.
fn tlb_shootdowns() -> Vec<u64> {
    let text = std::fs::read_to_string("/proc/interrupts").unwrap_or_default();
    text.lines()
        .find_map(|line| line.trim_start().strip_prefix("TLB:"))
        .map(parse_counts)
        .unwrap_or_default()
}

/// The leading numbers of an interrupt row (one per CPU; the description
/// after them is not a number).
fn parse_counts(row: &str) -> Vec<u64> {
    row.split_whitespace()
        .map_while(|field| field.parse().ok())
        .collect()
}

/// The host CPUs of the populating thread and the spinner, when the process
/// may use two; the populating thread is pinned to the first until dropped.
pub struct Placement {
    /// The populating thread's host CPU.
    pub populating_cpu: usize,
    /// The spinner's host CPU (`None` on a one-CPU host: no shootdown can
    /// be cross-CPU there).
    pub spinner_cpu: Option<usize>,
    saved: Vec<usize>,
}

impl Placement {
    /// Pins the calling thread to the first CPU it may use.
    pub fn pin() -> Placement {
        let saved = allowed_cpus().unwrap_or_default();
        let populating_cpu = saved.first().copied().unwrap_or(0);
        let _ = pin_current_thread(&[populating_cpu]);
        Placement {
            populating_cpu,
            spinner_cpu: saved.get(1).copied(),
            saved,
        }
    }
}

impl Drop for Placement {
    fn drop(&mut self) {
        if !self.saved.is_empty() {
            let _ = pin_current_thread(&self.saved);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interrupt_rows_parse_up_to_the_description() {
        assert_eq!(
            parse_counts("    5588556    4678214   TLB shootdowns"),
            vec![5_588_556, 4_678_214]
        );
        assert_eq!(parse_counts(" TLB shootdowns"), Vec::<u64>::new());
    }
}
