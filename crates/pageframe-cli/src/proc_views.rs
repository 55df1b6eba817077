//! `pageframe proc`: boot the machine, churn it if asked, and print the
//! views in the kernel's formats. With more than one view, each is headed
//! `==> /proc/<view> <==`, as `head` heads files.

use crate::error::CliError;
use crate::plan::ProcPlan;
use pageframe::LocalPageAllocator;
use pageframe_lab::churn::churn;
use std::io::Write;

/// Boots, churns and prints.
pub fn execute(plan: &ProcPlan, out: &mut dyn Write) -> Result<(), CliError> {
    let mut allocator = LocalPageAllocator::boot_seeded(
        &plan.machine,
        pageframe::AllocOptions::default(),
        plan.seed,
    )?;
    allocator
        .apply_hotplug(&plan.machine.hotplug)
        .map_err(|(step, err)| CliError::Invalid(format!("config hotplug[{step}]: {err}")))?;
    if let Some((ops, seed)) = plan.churn {
        churn(&allocator, ops, seed);
    }
    let headed = plan.views.len() > 1;
    for (index, view) in plan.views.iter().enumerate() {
        if headed {
            if index > 0 {
                writeln!(out)?;
            }
            writeln!(out, "==> /proc/{view} <==")?;
        }
        let object_ops = plan
            .churn
            .map_or(pageframe_lab::object_views::DEFAULT_OPS, |(ops, _)| ops);
        let text =
            match pageframe_lab::object_views::render(&allocator, view, object_ops, plan.seed) {
                Some(rendered) => rendered.map_err(CliError::Invalid)?,
                None => pageframe::proc::render(&allocator, view)
                    .ok_or_else(|| CliError::Invalid(format!("unknown view '{view}'")))?,
            };
        out.write_all(text.as_bytes())?;
    }
    Ok(())
}
