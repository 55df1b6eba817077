//! A pmbench-like workload over the vm layer, with an access-cost model.
//!
//! pmbench maps a region, touches it, then times random accesses to its
//! working set and reports accesses per second and a latency histogram.
//! Here each process is a [`pageframe::vm`] task; its accesses cost
//! `cpu_ns + local_ns × distance / 10` (SLIT distance from the accessing
//! CPU's node to the page's node; 10 local, 21 remote by default), writes
//! `write_factor` times the memory part.
//!
//! Speed: real pmbench does ~10⁷ accesses per process-second; simulating
//! each one for 64 processes over 200 s would be 10¹¹ steps. We do not need
//! them one by one. For a page-granular pattern the expected cost of one
//! access is Σ_node mass\[node\] × latency(node), where mass\[node\] is the
//! pattern's probability of hitting a page on that node. That mass is kept
//! exactly and incrementally: it changes only when a page is first touched
//! or migrates, and both are reported by the vm. So a tick of Δt costs O(1)
//! per process, plus the hinting faults. Those are resolved per armed page:
//! a page the scanner made PROT_NONE is touched during a tick with
//! probability 1 − exp(−n·w) (n accesses in the tick, w the page's weight),
//! rolled on the machine's seeded RNG; a touched page takes its hinting
//! fault through the vm (which may migrate it), an untouched one stays armed.
//! The fault and migration costs are charged to the process's time.

use pageframe::vm::FaultKind;
use pageframe::vm::{Pid, Vm};
use pageframe::{MachineRng, NodeId};
use std::sync::Arc;

/// How a process picks the pages it accesses.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pattern {
    /// Every page of the working set alike (pmbench's default).
    Uniform,
    /// A normal distribution centred on the working set, `sigma` as a
    /// fraction of its size.
    Normal {
        /// Standard deviation over working-set size.
        sigma: f64,
    },
    /// Zipf with exponent `s` over the pages in order.
    Zipf {
        /// The exponent.
        s: f64,
    },
    /// A sequential sweep: every page once per pass (weights uniform).
    Linear,
}

impl Pattern {
    /// The probability of each of `pages` pages (summing to 1).
    pub fn weights(self, pages: usize) -> Vec<f64> {
        let raw: Vec<f64> = (0..pages)
            .map(|page| match self {
                Pattern::Uniform | Pattern::Linear => 1.0,
                Pattern::Normal { sigma } => {
                    let x = (page as f64 + 0.5) / pages as f64 - 0.5;
                    (-(x * x) / (2.0 * sigma * sigma)).exp()
                }
                Pattern::Zipf { s } => 1.0 / ((page + 1) as f64).powf(s),
            })
            .collect();
        let total: f64 = raw.iter().sum();
        raw.into_iter().map(|weight| weight / total).collect()
    }
}

/// Per-access costs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CostModel {
    /// The benchmark's own work per access, ns.
    pub cpu_ns: f64,
    /// Memory latency at SLIT distance 10, ns; proportional to distance.
    pub local_ns: f64,
    /// Writes cost this many times the memory latency of a read.
    pub write_factor: f64,
    /// Fraction of accesses that are reads.
    pub read_ratio: f64,
    /// One NUMA hinting fault (trap, handler, PTE restore), ns.
    pub hint_fault_ns: f64,
    /// Migrating one 4 KiB page (isolate, allocate, copy, remap, flush), ns.
    pub migrate_ns: f64,
}

impl Default for CostModel {
    fn default() -> CostModel {
        CostModel {
            cpu_ns: 40.0,
            local_ns: 90.0,
            write_factor: 1.0,
            read_ratio: 1.0,
            hint_fault_ns: 1500.0,
            migrate_ns: 4000.0,
        }
    }
}

impl CostModel {
    /// Mean cost of one access at SLIT `distance`.
    pub fn access_ns(&self, distance: u8) -> f64 {
        let memory = self.local_ns * distance as f64 / 10.0;
        self.cpu_ns + memory * (self.read_ratio + (1.0 - self.read_ratio) * self.write_factor)
    }
}

/// Accesses by latency, in power-of-two nanosecond buckets (as pmbench's
/// histogram): bucket `b` holds latencies in `[2^b, 2^(b+1))` ns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LatencyHistogram {
    /// Accesses per bucket.
    pub buckets: [f64; 32],
}

impl LatencyHistogram {
    /// Adds `count` accesses of `ns` each.
    pub fn add(&mut self, ns: f64, count: f64) {
        let bucket = (ns.max(1.0).log2() as usize).min(31);
        self.buckets[bucket] += count;
    }

    /// Total accesses.
    pub fn total(&self) -> f64 {
        self.buckets.iter().sum()
    }
}

/// One pmbench process.
pub struct Process {
    /// Its task.
    pub pid: Pid,
    /// Its CPU's node.
    pub node: NodeId,
    /// Address of its mapping.
    pub base: u64,
    /// Pages mapped.
    pub map_pages: u64,
    weights: Arc<Vec<f64>>,
    /// Pattern mass on each node.
    mass: Vec<f64>,
    /// Pages mapped on each node (first touches plus migrations in, minus
    /// migrations out).
    pages: Vec<u64>,
    /// Armed pages not yet touched.
    pending: Vec<u64>,
    /// Accesses done (scaled, not simulated one by one).
    pub accesses: f64,
    /// Simulated ns spent in hinting faults and migrations.
    pub fault_ns: f64,
    /// Latency histogram.
    pub histogram: LatencyHistogram,
}

/// What a tick did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TickStats {
    /// Accesses done.
    pub accesses: f64,
    /// Hinting faults taken.
    pub hint_faults: u64,
    /// Pages migrated by them.
    pub migrated: u64,
}

impl Process {
    /// Maps `map_pages` pages for `pid` (at least the working set); the
    /// working set is its first `weights.len()` pages, accessed with those
    /// weights. [`Process::populate`] then touches the map (pmbench's
    /// set-up pass), in pieces so that callers can interleave several
    /// processes' set-up.
    pub fn new(
        vm: &mut Vm<'_>,
        pid: Pid,
        map_pages: u64,
        weights: Arc<Vec<f64>>,
    ) -> Result<Process, String> {
        let pages = map_pages.max(weights.len() as u64);
        let base = vm
            .mmap(pid, pages << vm.page_shift())
            .map_err(|err| format!("mmap: {err}"))?;
        let task = vm.task(pid).ok_or("no such task")?;
        let node = vm
            .cpu_node(task.cpu)
            .ok_or("the task's CPU is not the machine's")?;
        Ok(Process {
            pid,
            node,
            base,
            map_pages: pages,
            weights,
            mass: vec![0.0; vm.allocator().nr_nodes()],
            pages: vec![0; vm.allocator().nr_nodes()],
            pending: Vec::new(),
            accesses: 0.0,
            fault_ns: 0.0,
            histogram: LatencyHistogram::default(),
        })
    }

    /// Touches pages `[from, to)` of the working set (first-touch faults;
    /// pages already mapped are left as they are).
    pub fn populate(&mut self, vm: &mut Vm<'_>, from: usize, to: usize) -> Result<(), String> {
        let shift = vm.page_shift();
        for page in from..to.min(self.map_pages as usize) {
            let access = vm
                .access(self.pid, self.base + ((page as u64) << shift), true)
                .map_err(|err| format!("first touch of page {page}: {err}"))?;
            if access.fault == FaultKind::FirstTouch {
                self.mass[access.node.index()] += self.weights.get(page).copied().unwrap_or(0.0);
                self.pages[access.node.index()] += 1;
            }
        }
        Ok(())
    }

    /// Pages of the mapping on each node, as the process's faults and
    /// migrations placed them.
    pub fn pages_per_node(&self) -> &[u64] {
        &self.pages
    }

    /// Pages of the working set on each node, as the pattern's mass.
    pub fn mass(&self) -> &[f64] {
        &self.mass
    }

    /// pmbench's score: accesses per simulated second over `seconds`.
    pub fn score(&self, seconds: f64) -> f64 {
        self.accesses / seconds
    }

    /// Runs `dt_ns` of simulated time (see the module comment for how).
    pub fn tick(
        &mut self,
        vm: &mut Vm<'_>,
        cost: &CostModel,
        distance: &[Vec<u8>],
        dt_ns: f64,
        rng: &mut MachineRng,
    ) -> Result<TickStats, String> {
        let shift = vm.page_shift();
        let mut stats = TickStats::default();
        let mean_ns: f64 = self
            .mass
            .iter()
            .enumerate()
            .map(|(node, mass)| mass * cost.access_ns(distance[self.node.index()][node]))
            .sum::<f64>()
            .max(1e-9);
        let expected_accesses = dt_ns / mean_ns;
        vm.drain_marked(self.pid, &mut self.pending);
        let mut fault_ns = 0.0;
        let mut still_pending = Vec::new();
        for vpn in std::mem::take(&mut self.pending) {
            let page = (vpn - (self.base >> shift)) as usize;
            let weight = self.weights.get(page).copied().unwrap_or(0.0);
            let touch = 1.0 - (-expected_accesses * weight).exp();
            let roll = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
            if roll >= touch {
                still_pending.push(vpn);
                continue;
            }
            let write = cost.read_ratio < 1.0 && roll < touch * (1.0 - cost.read_ratio);
            let access = vm
                .access(self.pid, vpn << shift, write)
                .map_err(|err| format!("access to page {page}: {err}"))?;
            if let FaultKind::Hint { migrated_from } = access.fault {
                stats.hint_faults += 1;
                fault_ns += cost.hint_fault_ns;
                if let Some(from) = migrated_from {
                    stats.migrated += 1;
                    fault_ns += cost.migrate_ns;
                    self.mass[from.index()] -= weight;
                    self.mass[access.node.index()] += weight;
                    self.pages[from.index()] -= 1;
                    self.pages[access.node.index()] += 1;
                }
            }
        }
        self.pending = still_pending;
        let busy = (dt_ns - fault_ns).max(0.0);
        let accesses = busy / mean_ns;
        for (node, mass) in self.mass.iter().enumerate() {
            if *mass > 0.0 {
                self.histogram.add(
                    cost.access_ns(distance[self.node.index()][node]),
                    accesses * mass,
                );
            }
        }
        self.fault_ns += fault_ns.min(dt_ns);
        self.accesses += accesses;
        stats.accesses = accesses;
        Ok(stats)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pageframe::vm::NumaBalancingConfig;
    use pageframe::{CpuId, LocalPageAllocator, MachineDesc};

    #[test]
    fn pattern_weights_are_distributions() {
        for pattern in [
            Pattern::Uniform,
            Pattern::Linear,
            Pattern::Normal { sigma: 0.1 },
            Pattern::Zipf { s: 1.0 },
        ] {
            let weights = pattern.weights(1000);
            let total: f64 = weights.iter().sum();
            assert!((total - 1.0).abs() < 1e-9, "{pattern:?}");
        }
        let zipf = Pattern::Zipf { s: 1.0 }.weights(10);
        assert!(zipf.windows(2).all(|pair| pair[0] > pair[1]));
        let normal = Pattern::Normal { sigma: 0.1 }.weights(100);
        assert!(normal[50] > normal[0] * 100.0);
    }

    #[test]
    fn cost_is_proportional_to_distance() {
        let cost = CostModel::default();
        assert_eq!(cost.access_ns(10), 130.0);
        assert!((cost.access_ns(21) - 229.0).abs() < 1e-9);
        let writes = CostModel {
            read_ratio: 0.5,
            write_factor: 2.0,
            ..cost
        };
        assert_eq!(writes.access_ns(10), 40.0 + 90.0 * 1.5);
    }

    /// A process whose memory is all remote runs at the remote rate; its
    /// histogram holds every access it made.
    #[test]
    fn remote_memory_costs_throughput() {
        let allocator =
            LocalPageAllocator::boot(&MachineDesc::uniform(64 << 20, 2, 2).unwrap()).unwrap();
        let distance = allocator.layout().distance.clone();
        let mut vm = Vm::new(
            &allocator,
            NumaBalancingConfig {
                mode: 0,
                ..NumaBalancingConfig::default()
            },
        );
        let mut rng = MachineRng::new(1);
        let cost = CostModel::default();
        let mut rates = Vec::new();
        for cpu in [0, 1] {
            let pid = vm.spawn(CpuId(cpu), &[], 0).unwrap();
            // Both processes' memory on node 0.
            vm.set_mempolicy(pid, pageframe::vm::mempolicy::MPOL_BIND, Some(&[1]), 65)
                .unwrap();
            let weights = Arc::new(Pattern::Uniform.weights(256));
            let mut process = Process::new(&mut vm, pid, 512, weights).unwrap();
            process.populate(&mut vm, 0, 512).unwrap();
            assert!((process.mass()[0] - 1.0).abs() < 1e-9);
            assert_eq!(process.pages_per_node(), &[512, 0]);
            process
                .tick(&mut vm, &cost, &distance, 1e9, &mut rng)
                .unwrap();
            assert!((process.histogram.total() - process.accesses).abs() < 1e-6);
            rates.push(process.score(1.0));
        }
        let ratio = rates[0] / rates[1];
        assert!(
            (ratio - cost.access_ns(20) / cost.access_ns(10)).abs() < 1e-9,
            "{ratio}"
        );
        vm.check_invariants().unwrap();
    }
}
