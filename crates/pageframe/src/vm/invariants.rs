//! The vm layer's invariants, checked in full (for tests, after every
//! operation): page tables agree with the memmap and pages are conserved.

use std::collections::HashSet;

use super::mm::TASK_SIZE;
use super::Vm;
use crate::error::InvariantError;
use crate::memmap::{FrameIdx, PageState};
use crate::types::Pfn;

impl Vm<'_> {
    /// Checks, for every task: VMAs disjoint, below TASK_SIZE, holding only
    /// their own entries; PROT_NONE ⇒ present; zero page ⇒ not present; every present PTE maps a distinct PFN whose
    /// memmap record is an allocated order-0 head; per-task RSS equals its
    /// present PTEs; and `allocated − freed == mapped == Σ present PTEs`.
    pub fn check_invariants(&self) -> Result<(), InvariantError> {
        let fail = |message: String| Err(InvariantError(message));
        let memmap = &self.allocator.frames.memmap;
        let mut seen = HashSet::new();
        for task in self.tasks.values() {
            let mut previous_end = 0;
            let mut present = 0;
            let task_end = TASK_SIZE >> self.page_shift();
            for (start, vma) in &task.mm.vmas {
                if *start != vma.start
                    || vma.start >= vma.end
                    || vma.start < previous_end
                    || vma.end > task_end
                {
                    return fail(format!(
                        "pid {}: VMA {:#x}..{:#x} misplaced",
                        task.pid.0, vma.start, vma.end
                    ));
                }
                previous_end = vma.end;
                if let Err(why) = vma.ptes.check_invariants() {
                    return fail(format!(
                        "pid {}: VMA {:#x}..{:#x}: {why}",
                        task.pid.0, vma.start, vma.end
                    ));
                }
                for (vpn, pte) in vma.ptes.entries() {
                    if vpn < vma.start || vpn >= vma.end {
                        return fail(format!(
                            "pid {}: VMA {:#x}..{:#x} holds the entry of page {vpn:#x}",
                            task.pid.0, vma.start, vma.end
                        ));
                    }
                    if !pte.is_present() {
                        if pte.is_protnone() || !pte.is_zero_page() {
                            return fail(format!(
                                "pid {}: page {vpn:#x} stored but neither present nor the zero page (flags {:#x})",
                                task.pid.0, pte.flags
                            ));
                        }
                        continue;
                    }
                    if pte.is_zero_page() {
                        return fail(format!(
                            "pid {}: page {vpn:#x} both present and the zero page",
                            task.pid.0
                        ));
                    }
                    present += 1;
                    let pfn = Pfn(pte.pfn as u64);
                    if !memmap.covers(pfn) {
                        return fail(format!(
                            "pid {}: PTE maps PFN {pfn} outside the memmap",
                            task.pid.0
                        ));
                    }
                    let info = memmap.info(FrameIdx::covered(pfn));
                    if info.state() != PageState::Allocated || info.order().0 != 0 {
                        return fail(format!(
                            "pid {}: PTE maps PFN {pfn} whose memmap says {:?} order {}",
                            task.pid.0,
                            info.state(),
                            info.order()
                        ));
                    }
                    if !seen.insert(pte.pfn) {
                        return fail(format!("PFN {pfn} is mapped twice"));
                    }
                }
            }
            if present != task.mm.rss {
                return fail(format!(
                    "pid {}: rss {} but {present} present PTEs",
                    task.pid.0, task.mm.rss
                ));
            }
        }
        if seen.len() as u64 != self.pages_mapped {
            return fail(format!(
                "{} pages mapped but {} present PTEs",
                self.pages_mapped,
                seen.len()
            ));
        }
        if self.pages_allocated - self.pages_freed != self.pages_mapped {
            return fail(format!(
                "pages not conserved: allocated {} − freed {} ≠ mapped {}",
                self.pages_allocated, self.pages_freed, self.pages_mapped
            ));
        }
        Ok(())
    }
}
