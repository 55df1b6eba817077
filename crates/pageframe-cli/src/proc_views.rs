//! `pageframe proc`: boot the machine, churn or age it if asked, and print
//! the views in the kernel's formats. With more than one view, each is
//! headed `==> /proc/<view> <==`, as `head` heads files. Long work (a churn
//! or an object workload of [`LONG_OPS`] operations or more, an aging of
//! [`LONG_AGING_RUNS`] runs or more) shows a progress bar per step on
//! stderr when it is a terminal; the views print after.

use crate::error::CliError;
use crate::progress::Progress;
use pageframe::{LocalPageAllocator, MachineDesc};
use pageframe_lab::churn::churn;
use pageframe_lab::object_views;
use pageframe_lab::observe::{self, Observer};
use pageframe_lab::reclaim_views::{self, AgedMachine};
use std::io::{IsTerminal, Write};

/// `pageframe proc`, validated.
#[derive(Debug)]
pub struct ProcPlan {
    /// The machine to boot.
    pub machine: MachineDesc,
    /// View names, each one of `pageframe::proc::VIEWS` or of the lab's
    /// object or reclaim views.
    pub views: Vec<&'static str>,
    /// Benchmark runs of the reclaim layer's aging workload before
    /// printing (seeded with `seed`).
    pub aging: Option<u64>,
    /// Random operations before printing, and their seed.
    pub churn: Option<(u64, u64)>,
    /// Seed of the object-allocator workloads (slabinfo, zs-classes).
    pub seed: u64,
    /// Sysctl writes made after boot, in order.
    pub sysctl: Vec<(pageframe::VmSysctl, String)>,
}

impl ProcPlan {
    /// Refuses, before anything boots, a workload the host cannot hold or
    /// that would run for hours: the aging's page reads past
    /// [`reclaim_views::MAX_AGING_PAGE_READS`], or the allocator's tables,
    /// the reclaim views' state and the object workloads' contents past
    /// the host's `MemAvailable` (for the machine as booted; memory a
    /// hotplug step adds later is not counted).
    pub fn check_workload(&self) -> Result<(), CliError> {
        let object_views = self
            .views
            .iter()
            .filter(|view| object_views::VIEWS.contains(*view));
        if let (Some(view), Some(_)) = (object_views.clone().next(), self.aging) {
            // Their workloads allocate from the bare allocator, which
            // cannot reclaim the aged machine's page cache: they would find
            // no memory and print an empty view.
            return Err(CliError::Invalid(format!(
                "{view} runs its workload on the bare allocator, which cannot reclaim an aged machine's page cache: ask for it without --aging"
            )));
        }
        let layout = self.machine.layout()?;
        let present = layout.present_pages();
        let runs = self.aging.unwrap_or(0);
        if runs.saturating_mul(present) > reclaim_views::MAX_AGING_PAGE_READS {
            return Err(CliError::Invalid(format!(
                "--aging {runs}: {runs} runs of {present} pages each read more than the limit of {} pages",
                reclaim_views::MAX_AGING_PAGE_READS
            )));
        }
        let page_bytes = 1u64 << layout.page_shift;
        let mut bytes = pageframe::MetadataCost::for_layout(&layout).total_bytes();
        if self.aging.is_some()
            || self
                .views
                .iter()
                .any(|view| reclaim_views::VIEWS.contains(view))
        {
            bytes =
                bytes.saturating_add(reclaim_views::host_bytes(layout.end_pfn.0, present, runs));
        }
        let ops = self.churn.map_or(object_views::DEFAULT_OPS, |(ops, _)| ops);
        for _ in object_views {
            let present_bytes = present.saturating_mul(page_bytes);
            bytes = bytes.saturating_add(object_views::host_bytes(present_bytes, ops, page_bytes));
        }
        match pageframe_lab::host_memory::available() {
            Some(available) if bytes > available => Err(CliError::Invalid(format!(
                "these views of this machine would hold about {}, more than the host's MemAvailable of {}",
                pageframe_lab::host_memory::gib(bytes),
                pageframe_lab::host_memory::gib(available)
            ))),
            _ => Ok(()),
        }
    }
}

/// Operations from which a step shows a progress bar.
pub const LONG_OPS: u64 = 1 << 22;

/// Aging runs from which the aging step shows a progress bar.
pub const LONG_AGING_RUNS: u64 = 20;

/// Runs `body` with its `observe::progress` driving bar `index`.
fn with_bar<T>(progress: &Progress, index: usize, body: impl FnOnce() -> T) -> T {
    let observer = Observer {
        on_progress: progress.start(index),
        views: Vec::new(),
        rendered: Vec::new(),
    };
    let (result, _) = observe::observed(observer, body);
    progress.finish(index, String::new());
    result
}

/// Makes the `--sysctl` writes in order, as `proc` and `info` do after
/// boot; a refused write is an error naming it (the writes before it are
/// made).
pub fn apply_sysctl_writes(
    allocator: &mut LocalPageAllocator,
    writes: &[(pageframe::VmSysctl, String)],
) -> Result<(), CliError> {
    for (sysctl, value) in writes {
        allocator.write_sysctl(*sysctl, value).map_err(|errno| {
            CliError::Invalid(format!("--sysctl vm.{}={value}: {errno}", sysctl.name()))
        })?;
    }
    Ok(())
}

/// Boots, churns and prints.
pub fn execute(plan: &ProcPlan, out: &mut dyn Write) -> Result<(), CliError> {
    let mut allocator = LocalPageAllocator::boot_seeded(
        &plan.machine,
        pageframe::AllocOptions::default(),
        plan.seed,
    )?;
    apply_sysctl_writes(&mut allocator, &plan.sysctl)?;
    pageframe_lab::machine_args::apply_hotplug_steps(&mut allocator, &plan.machine)?;
    let object_ops = plan.churn.map_or(object_views::DEFAULT_OPS, |(ops, _)| ops);
    let needs_reclaim = plan
        .views
        .iter()
        .any(|view| reclaim_views::VIEWS.contains(view));
    let aging_runs = plan.aging.unwrap_or(0);
    let mut steps: Vec<&str> = Vec::new();
    if plan.churn.is_some() {
        steps.push("churn");
    }
    if plan.aging.is_some() {
        steps.push("aging");
    }
    steps.extend(
        plan.views
            .iter()
            .filter(|view| object_views::VIEWS.contains(*view)),
    );
    let long = object_ops >= LONG_OPS || aging_runs >= LONG_AGING_RUNS;
    let progress = Progress::new(long && std::io::stderr().is_terminal(), &steps);
    if let Some((ops, seed)) = plan.churn {
        with_bar(&progress, 0, || churn(&allocator, ops, seed));
    }
    // The reclaim layer over the machine, aged if asked (0 runs: fresh).
    let aged = if plan.aging.is_some() || needs_reclaim {
        let age = || AgedMachine::age(&allocator, aging_runs, plan.seed);
        let aged = match steps.iter().position(|step| *step == "aging") {
            Some(index) => with_bar(&progress, index, age),
            None => age(),
        };
        Some(aged.map_err(CliError::Invalid)?)
    } else {
        None
    };
    let mut texts = Vec::new();
    for view in &plan.views {
        let step = steps.iter().position(|step| step == view);
        let rendered = match step {
            Some(index) => with_bar(&progress, index, || {
                object_views::render(&allocator, view, object_ops, plan.seed)
            }),
            None => None,
        };
        texts.push(match (rendered, &aged) {
            (Some(rendered), _) => {
                rendered.map_err(|err| CliError::Invalid(format!("{view}: {err}")))?
            }
            (None, Some(aged)) if *view == "meminfo" => aged.meminfo(),
            (None, Some(aged)) if *view == "vmstat" && plan.aging.is_some() => aged.vmstat(),
            (None, _) => pageframe::proc::render(&allocator, view)
                .ok_or_else(|| CliError::Invalid(format!("unknown view '{view}'")))?,
        });
    }
    progress.clear();
    let headed = plan.views.len() > 1;
    for (index, (view, text)) in plan.views.iter().zip(&texts).enumerate() {
        if headed {
            if index > 0 {
                writeln!(out)?;
            }
            writeln!(out, "==> /proc/{view} <==")?;
        }
        out.write_all(text.as_bytes())?;
    }
    Ok(())
}
