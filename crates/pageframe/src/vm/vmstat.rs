//! Views of the vm layer: its `/proc/vmstat` counters (appended to the page
//! allocator's) and a `/proc/<pid>/numa_maps`-style listing per task.

use super::page_table::PTE_WRITTEN;
use super::{Pid, Vm};
use crate::proc::vmstat_counters;
use crate::types::Pfn;

impl Vm<'_> {
    /// The vm layer's counters in /proc/vmstat order and names.
    pub fn vm_counters(&self) -> Vec<(String, u64)> {
        let counters = self.counters;
        [
            ("pgfault", counters.pgfault),
            ("numa_pte_updates", counters.numa_pte_updates),
            ("numa_huge_pte_updates", 0),
            ("numa_hint_faults", counters.numa_hint_faults),
            ("numa_hint_faults_local", counters.numa_hint_faults_local),
            ("numa_pages_migrated", counters.numa_pages_migrated),
            ("pgmigrate_success", counters.pgmigrate_success),
            ("pgmigrate_fail", counters.pgmigrate_fail),
        ]
        .into_iter()
        .map(|(name, value)| (name.to_string(), value))
        .collect()
    }

    /// `/proc/vmstat`: the page allocator's counters, then the vm layer's.
    pub fn vmstat(&self) -> String {
        vmstat_counters(self.allocator)
            .into_iter()
            .chain(self.vm_counters())
            .map(|(name, value)| format!("{name} {value}\n"))
            .collect()
    }

    /// `/proc/<pid>/numa_maps`: one line per VMA with its policy and the
    /// pages it has on each node (`anon=`, `dirty=`, `N<node>=`).
    pub fn numa_maps(&self, pid: Pid) -> Option<String> {
        let task = self.tasks.get(&pid)?;
        let shift = self.page_shift();
        let mut out = String::new();
        for vma in task.mm.vmas.values() {
            let policy = vma.policy.or(task.policy);
            let policy_text = match policy {
                None => "default".to_string(),
                Some(policy) => match policy.mode {
                    super::mempolicy::Mode::Local => "local".to_string(),
                    mode => format!(
                        "{}:{}",
                        mode.name(),
                        super::format_nodestring(&policy.nodes)
                    ),
                },
            };
            let mut per_node = vec![0u64; self.allocator.nr_nodes()];
            let mut anon = 0;
            let mut dirty = 0;
            for pte in vma.ptes.iter().filter(|pte| pte.is_present()) {
                anon += 1;
                if pte.flags & PTE_WRITTEN != 0 {
                    dirty += 1;
                }
                if let Some(node) = self.pfn_node(Pfn(pte.pfn as u64)) {
                    per_node[node.index()] += 1;
                }
            }
            out.push_str(&format!(
                "{:012x} {policy_text} anon={anon}",
                vma.start << shift
            ));
            if dirty > 0 {
                out.push_str(&format!(" dirty={dirty}"));
            }
            for (node, pages) in per_node.iter().enumerate().filter(|(_, pages)| **pages > 0) {
                out.push_str(&format!(" N{node}={pages}"));
            }
            out.push_str(&format!(" kernelpagesize_kB={}\n", (1u64 << shift) / 1024));
        }
        Some(out)
    }
}
