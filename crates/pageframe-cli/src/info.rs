//! `pageframe info`: boot the machine and describe it — nodes and zones with
//! spanned/present/managed pages, CPUs, distances, where each `reserve_mem=`
//! entry lies, the boot time, what the
//! per-page metadata costs, the process's resident set, min_free_kbytes.
//!
//! The boot time and resident set vary from run to run; everything else is
//! a function of the machine description.

use crate::error::CliError;
use pageframe::machine::format_size;
use pageframe::{AllocOptions, ArenaOptions, CpuId, LocalPageAllocator, MachineDesc};
use std::io::Write;
use std::time::Instant;

/// `pageframe info`, validated.
#[derive(Debug)]
pub struct InfoPlan {
    /// The machine to boot.
    pub machine: MachineDesc,
    /// Boot it over a real memfd arena instead of the simulation.
    pub arena: bool,
    /// Sysctl writes made after boot, in order.
    pub sysctl: Vec<(pageframe::VmSysctl, String)>,
}

/// Boots the machine and prints what it is and what it cost.
pub fn execute(plan: &InfoPlan, out: &mut dyn Write) -> Result<(), CliError> {
    let started = Instant::now();
    let mut allocator = if plan.arena {
        LocalPageAllocator::boot_arena(
            &plan.machine,
            AllocOptions::KERNEL,
            0,
            ArenaOptions::default(),
        )?
    } else {
        LocalPageAllocator::boot(&plan.machine)?
    };
    let boot_time = started.elapsed();
    crate::proc_views::apply_sysctl_writes(&mut allocator, &plan.sysctl)?;
    pageframe_lab::machine_args::apply_hotplug_steps(&mut allocator, &plan.machine)?;
    let layout = allocator.layout();
    let page_bytes = 1u64 << layout.page_shift;
    let present_pages = layout.present_pages();
    writeln!(
        out,
        "machine: {} node(s), {} CPU(s), {} present in {} of physical addresses",
        layout.nodes.len(),
        layout.nr_cpus(),
        format_size(present_pages * page_bytes),
        format_size(layout.end_pfn.0 * page_bytes),
    )?;
    writeln!(
        out,
        "geometry: {} pages, max_order {}, pageblock_order {}",
        format_size(page_bytes),
        layout.max_order,
        layout.pageblock_order
    )?;
    let snapshots = allocator.zone_snapshots();
    let mut zones = layout.zones().zip(&snapshots);
    for node in &layout.nodes {
        let distances: Vec<String> = layout.distance[node.id.index()]
            .iter()
            .map(u8::to_string)
            .collect();
        writeln!(
            out,
            "node {}: CPUs {}, distances {}",
            node.id,
            cpu_list(&node.cpus),
            distances.join(" ")
        )?;
        for (zone, snapshot) in zones.by_ref().take(node.zones.len()) {
            if !zone.is_populated() {
                continue;
            }
            writeln!(
                out,
                "  zone {:<8} spanned {:>11}  present {:>11}  managed {:>11}  ({})",
                zone.zone_type.name(),
                zone.spanned_pages(),
                zone.present_pages(),
                snapshot.managed,
                format_size(zone.present_pages() * page_bytes)
            )?;
        }
    }
    for (name, range) in &layout.reserve_mem {
        // The kernel's boot log line for each reserve_mem= entry.
        writeln!(
            out,
            "reserve_mem {name}: {:#x}-{:#x} ({})",
            range.start,
            range.end() - 1,
            format_size(range.size)
        )?;
    }
    writeln!(out, "backing: {}", allocator.backing().describe())?;
    writeln!(out, "boot time: {:.3} ms", boot_time.as_secs_f64() * 1e3)?;
    let metadata = allocator.metadata_cost();
    // Hotplug steps may offline every page: the tables stay (they span the
    // PFNs), with no page to share them.
    let per_present_page = match present_pages {
        0 => "no present page".to_string(),
        pages => format!(
            "{:.3} bytes per present page",
            metadata.total_bytes() as f64 / pages as f64
        ),
    };
    writeln!(
        out,
        "metadata: {per_present_page} ({} B memmap record per PFN, {} B per {}-page pageblock; {} in all)",
        metadata.memmap_record_bytes,
        metadata.pageblock_record_bytes,
        layout.pageblock_order.nr_pages(),
        mebibytes(metadata.total_bytes())
    )?;
    match resident_bytes() {
        Some(bytes) => writeln!(out, "resident set: {}", mebibytes(bytes))?,
        None => writeln!(out, "resident set: unknown (no /proc/self/status)")?,
    }
    writeln!(out, "min_free_kbytes: {}", allocator.min_free_kbytes())?;
    Ok(())
}

/// CPUs as the kernel prints a cpulist: `0-3,8,10-11`; `none` when empty.
fn cpu_list(cpus: &[CpuId]) -> String {
    let mut ids: Vec<u16> = cpus.iter().map(|cpu| cpu.0).collect();
    ids.sort_unstable();
    let mut runs: Vec<(u16, u16)> = Vec::new();
    for id in ids {
        match runs.last_mut() {
            Some((_, last)) if *last + 1 == id => *last = id,
            _ => runs.push((id, id)),
        }
    }
    if runs.is_empty() {
        return "none".to_string();
    }
    runs.iter()
        .map(|&(first, last)| {
            if first == last {
                first.to_string()
            } else {
                format!("{first}-{last}")
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

fn mebibytes(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
}

/// The resident set of this process: `VmRSS` of /proc/self/status, which is
/// in kB whatever the page size (statm counts pages of a size it does not
/// state).
fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
    let kilobytes: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kilobytes << 10)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_collapse_runs() {
        let cpus = |ids: &[u16]| ids.iter().map(|&id| CpuId(id)).collect::<Vec<_>>();
        assert_eq!(cpu_list(&cpus(&[0, 1, 2, 3, 8, 10, 11])), "0-3,8,10-11");
        assert_eq!(cpu_list(&cpus(&[5])), "5");
        assert_eq!(cpu_list(&[]), "none");
    }
}
