//! Processes and their anonymous memory: a page fault allocates a page on
//! first touch and puts it on the inactive anon list with its PTE young;
//! later touches set the young bit again; exit frees every page in
//! virtual address order, as zap_pte_range() walks the page tables.
//!
//! Owns: one [`Process`] per process ever spawned (an exited process keeps
//! an empty slot so that its pid answers ESRCH). Invariant: an exited
//! process has no pages; each page's owner is its (pid, virtual page).

use super::error::MmError;
use super::lru::{LruList, Owner, YOUNG};
use super::{Mm, Pid};
use crate::gfp::Gfp;
use crate::types::CpuId;
use std::collections::BTreeMap;

/// Virtual pages of a process's address space: a 47-bit user address
/// space of 4 KiB pages (`TASK_SIZE` on x86-64 with 4-level paging).
pub const TASK_PAGES: u64 = 1 << 35;

/// One process.
#[derive(Clone, Debug)]
pub(super) struct Process {
    pub(super) exited: bool,
    pub(super) cpu: CpuId,
    /// Virtual page to PFN.
    pub(super) pages: BTreeMap<u64, u64>,
}

impl Mm<'_> {
    fn live_process(&self, pid: Pid) -> Result<&Process, MmError> {
        match self.processes.get(pid.0 as usize) {
            Some(process) if !process.exited => Ok(process),
            _ => Err(MmError::NoSuchProcess(pid)),
        }
    }

    /// Starts a process running on `cpu`, with no memory.
    pub fn spawn(&mut self, cpu: CpuId) -> Result<Pid, MmError> {
        self.cpu_node(cpu)?;
        self.processes.push(Process {
            exited: false,
            cpu,
            pages: BTreeMap::new(),
        });
        Ok(Pid((self.processes.len() - 1) as u32))
    }

    /// Touches virtual pages `first..first + count` of `pid` in order: a
    /// missing page is faulted in (GFP_HIGHUSER_MOVABLE on the process's
    /// CPU, through the slow path and reclaim), a present one gets its
    /// young bit set. ESRCH for a gone process; EINVAL past the address
    /// space (checked before anything changes); ENOMEM when a fault fails,
    /// with the pages before it touched. mirrors do_anonymous_page() and
    /// folio_add_lru_vma().
    pub fn touch(&mut self, pid: Pid, first: u64, count: u64) -> Result<(), MmError> {
        let cpu = self.live_process(pid)?.cpu;
        let end = first
            .checked_add(count)
            .filter(|&end| end <= TASK_PAGES)
            .ok_or(MmError::InvalidLength(
                i64::try_from(count).unwrap_or(i64::MAX),
            ))?;
        let node = self.cpu_node(cpu)?;
        for vpn in first..end {
            match self.processes[pid.0 as usize].pages.get(&vpn) {
                Some(&pfn) => self.lru.meta_mut(pfn).flags |= YOUNG,
                None => {
                    let pfn = self.alloc_lru_page(cpu, node, Gfp::HIGHUSER_MOVABLE)?;
                    let place = self.place_of(pfn);
                    self.lru.adopt(
                        pfn,
                        place,
                        Owner::Anon { pid, vpn },
                        LruList::InactiveAnon,
                        YOUNG,
                    );
                    self.processes[pid.0 as usize].pages.insert(vpn, pfn);
                    self.nr_anon += 1;
                }
            }
        }
        Ok(())
    }

    /// The process's pages as (virtual page, PFN), in address order.
    pub fn process_pages(&self, pid: Pid) -> Result<Vec<(u64, u64)>, MmError> {
        Ok(self
            .live_process(pid)?
            .pages
            .iter()
            .map(|(&vpn, &pfn)| (vpn, pfn))
            .collect())
    }

    /// exit(2): frees every page of the process in address order on its
    /// CPU (exit_mmap() unmapping the VMAs in order). ESRCH when gone.
    pub fn exit(&mut self, pid: Pid) -> Result<u64, MmError> {
        let process = self.live_process(pid)?;
        let cpu = process.cpu;
        let pages: Vec<u64> = process.pages.values().copied().collect();
        for &pfn in &pages {
            self.free_owned(cpu, pfn)?;
        }
        self.processes[pid.0 as usize].exited = true;
        Ok(pages.len() as u64)
    }
}
