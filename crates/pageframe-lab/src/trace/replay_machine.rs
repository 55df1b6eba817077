//! The machine a replay boots (`replay_machine`): the one given, else one
//! shaped like the traced host from the zoneinfo (and memory map) the
//! recording saved, else one of the host's managed memory; the policy
//! switches of the command line; checks of its size against the traced
//! host and of its page metadata against this host's memory; and, once it
//! is booted, the host's saved sysctls written to it (`write_host_sysctls`).

use super::event::Trace;
use super::host::{host_bytes, host_cpus, host_file, Moment};
use super::replay_options::ReplayOptions;
use super::TraceError;
use crate::machine_args::check_host_holds;
use pageframe::machine::apply_cmdline;
use pageframe::{LocalPageAllocator, MachineDesc, VmSysctl};

/// The machine a replay boots: the given one, else one with the host's
/// zones (from the saved zoneinfo), else one of the host's managed memory;
/// then the policy switches. Checks the size against the traced host,
/// and its page metadata against this host's memory.
pub fn replay_machine(trace: &Trace, options: &ReplayOptions) -> Result<MachineDesc, TraceError> {
    let host_cpus = host_cpus(trace);
    let host_memory = host_bytes(trace);
    let shaped = || shaped_from_zoneinfo(trace, host_cpus);
    let mut desc = match options.machine.clone().or_else(shaped) {
        Some(desc) => desc,
        None => {
            // Without saved zoneinfo (an imported text trace), the highest
            // PFN seen bounds the host's memory from below.
            let bytes = host_memory
                .unwrap_or_else(|| host_pfn_end(trace).unwrap_or(1 << 18).saturating_mul(4096));
            let block = 2u64 << 20;
            let bytes = bytes.div_ceil(block).saturating_mul(block).max(64 << 20);
            let mut desc = MachineDesc::uniform(bytes, 1, host_cpus)
                .map_err(|err| TraceError::Machine(err.to_string()))?;
            let zoneinfo = host_file(trace, Moment::Start, "zoneinfo").unwrap_or_default();
            let host_has = |name: &str| {
                zoneinfo.lines().any(|line| {
                    line.split_whitespace().collect::<Vec<_>>()[..].ends_with(&["zone", name])
                })
            };
            desc.dma32 = host_has("DMA32") && bytes > 4 << 30;
            desc.dma = host_has("DMA") && bytes > 16 << 20;
            desc
        }
    };
    if !options.cmdline.trim().is_empty() {
        apply_cmdline(&mut desc, &options.cmdline)
            .map_err(|err| TraceError::Machine(err.to_string()))?;
    }
    if !options.fit {
        let cpus_seen = trace.nr_cpus_seen();
        if cpus_seen > desc.nr_cpus() {
            return Err(TraceError::Mismatch(format!(
                "the trace uses {cpus_seen} CPUs, the replay machine has {}; \
                 give a machine with more CPUs or fit the trace to it",
                desc.nr_cpus()
            )));
        }
        if let Some(host) = host_memory {
            // What the machine boots with, after a `mem=` on the command
            // line, and what the machine file's hotplug steps add and take
            // away (the replay runs on the machine they leave).
            let machine = desc
                .hotplug
                .iter()
                .fold(desc.bytes_within_mem_limit(), |bytes, step| {
                    if step.online {
                        bytes.saturating_add(step.size)
                    } else {
                        bytes.saturating_sub(step.size)
                    }
                });
            if host > machine {
                return Err(TraceError::Mismatch(format!(
                    "the traced host managed {} MiB, the replay machine has {} MiB; \
                     give a bigger machine or fit the trace to it",
                    host >> 20,
                    machine >> 20
                )));
            }
        }
    }
    // A trace's saved zoneinfo or highest PFN may claim terabytes: a 6 KiB
    // trace whose zoneinfo managed 1.5e9 pages booted 19 GB and ran a minute.
    let layout = desc
        .layout()
        .map_err(|err| TraceError::Machine(err.to_string()))?;
    check_host_holds(&layout, crate::host_memory::available()).map_err(|err| {
        let shaped = match options.machine {
            Some(_) => "",
            None => {
                " (shaped like the traced host: give a smaller machine and fit the trace to it)"
            }
        };
        TraceError::Machine(format!("{err}{shaped}"))
    })?;
    Ok(desc)
}

/// A machine with the traced host's zones, from the zoneinfo saved at the
/// start ([`crate::host_layout::from_zoneinfo`]: spans, present pages, the
/// unmanaged ones reserved; the memory at the host's `System RAM` bytes
/// when the recording saved `/proc/iomem`), when the pagetypeinfo saved beside it counts,
/// in each zone, the pageblocks of its present pages; `None` otherwise. (A
/// guest whose memory a balloon or virtio-mem took shows present pages that
/// are neither managed nor counted in pageblocks: reserving them would
/// give a machine the host did not have.)
fn shaped_from_zoneinfo(trace: &Trace, cpus: usize) -> Option<MachineDesc> {
    let zones = super::host::parse_zoneinfo(&host_file(trace, Moment::Start, "zoneinfo")?);
    let blocks =
        super::host::parse_pagetypeinfo(&host_file(trace, Moment::Start, "pagetypeinfo")?).blocks;
    let pageblock_pages = 1u64 << MachineDesc::default().pageblock_order;
    let counted = zones
        .iter()
        .filter(|zone| zone.field("present").unwrap_or(0) > 0)
        .all(|zone| {
            let present = zone.field("present").unwrap_or(0);
            let host: u64 = blocks
                .iter()
                .filter(|line| line.node as usize == zone.node && line.zone == zone.name)
                .flat_map(|line| line.counts.iter().map(|(_, count)| *count))
                .fold(0, u64::saturating_add);
            (present / pageblock_pages..=present.div_ceil(pageblock_pages)).contains(&host)
        });
    if !counted {
        return None;
    }
    let ram = host_file(trace, Moment::Start, "iomem")
        .and_then(|iomem| crate::host_layout::system_ram(&iomem));
    crate::host_layout::from_zoneinfo(&zones, ram.as_deref(), cpus)
}

/// One past the highest host PFN any event of `trace` names, if any.
pub(super) fn host_pfn_end(trace: &Trace) -> Option<u64> {
    trace
        .events
        .iter()
        .filter(|event| event.pfn != u64::MAX)
        .map(|event| event.pfn.saturating_add(1 << event.order.min(63)))
        .max()
}

/// Writes the sysctls the recording saved to a machine shaped like its
/// host ([`crate::host_layout::write_host_sysctls`]: where they differ from
/// the machine's own, e.g. a min_free_kbytes set by hand);
/// `vm.percpu_pagelist_high_fraction` only when `--pcp-high-fraction` did
/// not choose it. A saved value the kernel would refuse is a damaged trace.
pub(super) fn write_host_sysctls(
    trace: &Trace,
    options: &ReplayOptions,
    allocator: &mut LocalPageAllocator,
) -> Result<(), TraceError> {
    crate::host_layout::write_host_sysctls(
        allocator,
        |sysctl| host_file(trace, Moment::Start, sysctl.name()),
        |sysctl| {
            sysctl == VmSysctl::PercpuPagelistHighFraction && options.alloc.pcp.high_fraction != 0
        },
    )
    .map_err(|(sysctl, text, errno)| {
        TraceError::Invalid(format!(
            "host.start.{}: {:?} is not a value the kernel holds ({errno})",
            sysctl.name(),
            text.trim()
        ))
    })
}
