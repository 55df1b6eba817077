//! Address spaces: VMAs of anonymous memory, each with its sparse page
//! table, and `mmap` / `munmap` (with VMA splitting), within a 47-bit user
//! address space and the kernel's overcommit heuristic.
//!
//! Page tables are lazy: a VMA's [`PageTable`] (`page_table`) holds only
//! the leaf tables of entries that map something, so memory follows what is
//! touched, not what is mapped.
//!
//! Invariants: VMAs are disjoint, keyed by their first page, inside
//! `[0, TASK_SIZE)`; every stored entry lies inside its VMA and is PRESENT
//! or ZERO (never both); PROT_NONE ⇒ PRESENT.

use std::collections::BTreeMap;

use super::mempolicy::MemPolicy;
use super::page_table::{PageTable, Pte};
use super::{Task, Vm};
use crate::error::Errno;
use crate::page_alloc::Page;
use crate::types::{Order, Pfn};

/// An anonymous mapping `[start, end)` in pages.
#[derive(Clone, Debug)]
pub struct Vma {
    /// First virtual page.
    pub start: u64,
    /// One past the last virtual page.
    pub end: u64,
    /// Page offset of `start` in the mapping (`vm_pgoff`), for interleave.
    pub pgoff: u64,
    /// The VMA policy (mbind); `None` falls back to the task's.
    pub policy: Option<MemPolicy>,
    /// Its page table.
    pub ptes: PageTable,
}

impl Vma {
    /// Splits off `[at, end)` into a new VMA.
    fn split_off(&mut self, at: u64) -> Vma {
        let tail = self.ptes.split_off(at);
        let vma = Vma {
            start: at,
            end: self.end,
            pgoff: self.pgoff + (at - self.start),
            policy: self.policy,
            ptes: tail,
        };
        self.end = at;
        vma
    }
}

/// An address space (`mm_struct`).
#[derive(Clone, Debug)]
pub struct Mm {
    /// VMAs by first page.
    pub vmas: BTreeMap<u64, Vma>,
    /// Next free virtual page for mmap.
    pub mmap_next: u64,
    /// Pages mapped (`get_mm_rss()`).
    pub rss: u64,
    /// `numa_next_scan`, simulated ms.
    pub numa_next_scan_ms: u64,
    /// `numa_scan_offset`, a virtual page.
    pub numa_scan_offset: u64,
    /// `numa_scan_seq`: completed passes over the address space.
    pub numa_scan_seq: u32,
}

/// `TASK_SIZE` of x86-64 with 4-level page tables: user addresses are
/// below 2^47 (less one guard page, as `TASK_SIZE_MAX`).
pub const TASK_SIZE: u64 = (1 << 47) - 4096;

/// First virtual page handed out by mmap (a 1 GiB-aligned, arbitrary base).
const MMAP_BASE_PAGE: u64 = 0x1_0000;

impl Mm {
    pub(crate) fn new(numa_next_scan_ms: u64) -> Mm {
        Mm {
            vmas: BTreeMap::new(),
            mmap_next: MMAP_BASE_PAGE,
            rss: 0,
            numa_next_scan_ms,
            numa_scan_offset: 0,
            numa_scan_seq: 0,
        }
    }

    /// The VMA holding virtual page `vpn`.
    pub fn find_vma(&self, vpn: u64) -> Option<&Vma> {
        self.vmas
            .range(..=vpn)
            .next_back()
            .map(|(_, vma)| vma)
            .filter(|vma| vpn < vma.end)
    }

    /// The VMA holding `vpn`, mutably.
    pub fn find_vma_mut(&mut self, vpn: u64) -> Option<&mut Vma> {
        self.vmas
            .range_mut(..=vpn)
            .next_back()
            .map(|(_, vma)| vma)
            .filter(|vma| vpn < vma.end)
    }

    /// The PTE of `vpn`, when it maps something.
    pub fn pte(&self, vpn: u64) -> Option<&Pte> {
        self.find_vma(vpn)?.ptes.get(vpn)
    }

    /// Splits VMAs so that `vpn` is a VMA boundary (if it is inside one).
    pub(crate) fn split_at(&mut self, vpn: u64) {
        let Some(vma) = self.find_vma_mut(vpn) else {
            return;
        };
        if vma.start == vpn {
            return;
        }
        let tail = vma.split_off(vpn);
        self.vmas.insert(vpn, tail);
    }

    /// True when every page of `[start, end)` is inside some VMA.
    pub fn covers(&self, start: u64, end: u64) -> bool {
        let mut at = start;
        while at < end {
            match self.find_vma(at) {
                Some(vma) => at = vma.end,
                None => return false,
            }
        }
        true
    }
}

impl Vm<'_> {
    /// log2 of the page size.
    pub fn page_shift(&self) -> u32 {
        self.allocator.layout().page_shift as u32
    }

    /// Maps `len` bytes of private anonymous memory; returns the address.
    /// No page (and no page-table entry) exists until first touch. EINVAL
    /// for a zero length; ENOMEM when the length is more than the machine's
    /// memory (the overcommit heuristic of __vm_enough_memory(),
    /// OVERCOMMIT_GUESS, 6.12: no swap here) or no room is left below
    /// [`TASK_SIZE`] (get_unmapped_area()).
    pub fn mmap(&mut self, pid: super::Pid, len: u64) -> Result<u64, Errno> {
        let shift = self.page_shift();
        if len == 0 {
            return Err(Errno::EINVAL);
        }
        let pages = len.div_ceil(1 << shift);
        if pages > TASK_SIZE >> shift {
            return Err(Errno::ENOMEM);
        }
        let totalram_pages = self.totalram_pages;
        let task = self.tasks.get_mut(&pid).ok_or(Errno::ESRCH)?;
        if pages > totalram_pages {
            return Err(Errno::ENOMEM);
        }
        let start = task.mm.mmap_next;
        // Leave one guard page so that adjacent mappings stay separate VMAs.
        let next = start
            .checked_add(pages)
            .and_then(|end| end.checked_add(1))
            .filter(|next| *next <= TASK_SIZE >> shift)
            .ok_or(Errno::ENOMEM)?;
        task.mm.mmap_next = next;
        task.mm.vmas.insert(
            start,
            Vma {
                start,
                end: start + pages,
                pgoff: 0,
                policy: None,
                ptes: PageTable::default(),
            },
        );
        Ok(start << shift)
    }

    /// Unmaps `[addr, addr + len)`, freeing every page in it; holes are
    /// fine (as munmap). EINVAL for an unaligned address, a zero length or a
    /// range reaching past [`TASK_SIZE`] (mirrors do_vmi_munmap(), 6.12).
    pub fn munmap(&mut self, pid: super::Pid, addr: u64, len: u64) -> Result<(), Errno> {
        let shift = self.page_shift();
        let page_mask = (1u64 << shift) - 1;
        if addr & page_mask != 0 || addr > TASK_SIZE || len > TASK_SIZE - addr {
            return Err(Errno::EINVAL);
        }
        let len = (len + page_mask) & !page_mask;
        if len == 0 {
            return Err(Errno::EINVAL);
        }
        let start = addr >> shift;
        let end = (addr + len) >> shift;
        let mut task = self.tasks.remove(&pid).ok_or(Errno::ESRCH)?;
        self.unmap_range(&mut task, start, end);
        self.tasks.insert(pid, task);
        Ok(())
    }

    /// Removes `[start, end)` from a task's address space and frees its pages.
    pub(crate) fn unmap_range(&mut self, task: &mut Task, start: u64, end: u64) {
        task.mm.split_at(start);
        task.mm.split_at(end);
        let starts: Vec<u64> = task.mm.vmas.range(start..end).map(|(at, _)| *at).collect();
        let cpu = self.allocator.cpu(task.cpu).expect("a task's CPU exists");
        for at in starts {
            let vma = task.mm.vmas.remove(&at).expect("listed");
            for pte in vma.ptes.iter().filter(|pte| pte.is_present()) {
                cpu.free_pages(Page::from_pfn(Pfn(pte.pfn as u64)), Order(0))
                    .expect("a mapped page is an allocated order-0 page");
                self.pages_mapped -= 1;
                self.pages_freed += 1;
                task.mm.rss -= 1;
            }
        }
    }
}
