//! The allocator a replay runs, as a set of policy switches: the kernel
//! command line's shuffle, the fallback order and the per-CPU list sizing.
//! Two policies replaying the same trace compare two allocators on the
//! same real workload.

use pageframe::{AllocOptions, FallbackOrder, PcpSizing};

/// One allocator to replay on: its name (in report keys), kernel command
/// line and allocator options.
#[derive(Clone, Debug, PartialEq)]
pub struct ReplayPolicy {
    /// Short name: `kernel`, or the switches that differ from it.
    pub name: String,
    /// Kernel command line (`page_alloc.shuffle=1`, ...).
    pub cmdline: String,
    /// Fallback order and pcp sizing.
    pub alloc: AllocOptions,
}

impl ReplayPolicy {
    /// The traced kernel's own policy: no switch.
    pub fn kernel() -> ReplayPolicy {
        ReplayPolicy::with_switches(false, FallbackOrder::Kernel, PcpSizing::KERNEL)
    }

    /// The kernel's policy with these switches; named after the ones that
    /// differ from it (`shuffle`, `fallback=reversed`, `pcp_high_fraction=8`,
    /// `pcp_batch=31`, joined by `+`), `kernel` when none does.
    pub fn with_switches(
        shuffle: bool,
        fallback_order: FallbackOrder,
        pcp: PcpSizing,
    ) -> ReplayPolicy {
        let mut names = Vec::new();
        if shuffle {
            names.push("shuffle".to_string());
        }
        if fallback_order != FallbackOrder::Kernel {
            names.push(format!("fallback={}", fallback_order.name()));
        }
        if pcp.high_fraction != 0 {
            names.push(format!("pcp_high_fraction={}", pcp.high_fraction));
        }
        if let Some(batch) = pcp.batch {
            names.push(format!("pcp_batch={batch}"));
        }
        ReplayPolicy {
            name: if names.is_empty() {
                "kernel".to_string()
            } else {
                names.join("+")
            },
            cmdline: if shuffle {
                "page_alloc.shuffle=1".to_string()
            } else {
                String::new()
            },
            alloc: AllocOptions {
                fallback_order,
                pcp,
                ..AllocOptions::KERNEL
            },
        }
    }

    /// The policy in words, for report notes: its name, command line and
    /// switches.
    pub fn describe(&self) -> String {
        format!(
            "{} (cmdline \"{}\", fallback order {}, pcp high fraction {}, pcp batch {})",
            self.name,
            self.cmdline,
            self.alloc.fallback_order.name(),
            self.alloc.pcp.high_fraction,
            self.alloc
                .pcp
                .batch
                .map_or_else(|| "zone_batchsize()".to_string(), |batch| batch.to_string())
        )
    }
}
