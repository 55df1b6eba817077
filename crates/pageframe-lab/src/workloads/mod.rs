//! Workloads that feed a memory-side cache with physical addresses: a
//! STREAM-like bandwidth kernel over memory taken page by page on first
//! touch, as a process does, and a managed-runtime heap with a hot/warm/cold
//! object mix over pages placed however the caller placed them.

pub mod heap;
pub mod stream;

use pageframe::{CpuId, Gfp, LocalPageAllocator, NodeId, Order};

/// A process's anonymous memory: virtual pages backed on first touch by an
/// order-0 page from the allocator (GFP_HIGHUSER_MOVABLE on the process's CPU
/// and node), as a page fault would.
///
/// Invariant: `frames[v]` is 0 for an untouched page, else PFN + 1.
pub struct FirstTouchSpace {
    frames: Vec<u64>,
    cpu: CpuId,
    node: NodeId,
    page_shift: u32,
}

impl FirstTouchSpace {
    /// A space of `bytes` (rounded up to pages), nothing touched yet.
    pub fn new(allocator: &LocalPageAllocator, bytes: u64, cpu: CpuId, node: NodeId) -> Self {
        let page_shift = allocator.layout().page_shift as u32;
        let pages = bytes.div_ceil(1 << page_shift) as usize;
        FirstTouchSpace {
            frames: vec![0; pages],
            cpu,
            node,
            page_shift,
        }
    }

    /// Bytes of the space.
    pub fn bytes(&self) -> u64 {
        (self.frames.len() as u64) << self.page_shift
    }

    /// Touches every page in order (a runtime zeroing its heap).
    pub fn touch_all(&mut self, allocator: &LocalPageAllocator) -> Result<(), String> {
        for page in 0..self.frames.len() {
            self.fault(allocator, page)?;
        }
        Ok(())
    }

    #[cold]
    fn fault(&mut self, allocator: &LocalPageAllocator, page: usize) -> Result<u64, String> {
        if self.frames[page] == 0 {
            let cpu = allocator.cpu(self.cpu).map_err(|err| err.to_string())?;
            let block = cpu
                .alloc_pages(Gfp::HIGHUSER_MOVABLE, Order(0), self.node)
                .map_err(|err| format!("first touch of page {page}: {err}"))?;
            self.frames[page] = block.pfn().0 + 1;
        }
        Ok(self.frames[page] - 1)
    }

    /// The physical address of virtual address `addr`, faulting it in.
    #[inline]
    pub fn phys(&mut self, allocator: &LocalPageAllocator, addr: u64) -> Result<u64, String> {
        let page = (addr >> self.page_shift) as usize;
        let mut frame = self.frames[page];
        if frame == 0 {
            frame = self.fault(allocator, page)? + 1;
        }
        Ok(((frame - 1) << self.page_shift) | (addr & ((1 << self.page_shift) - 1)))
    }

    /// The physical address of a touched page's address (no allocator).
    #[inline]
    pub fn phys_touched(&self, addr: u64) -> u64 {
        let frame = self.frames[(addr >> self.page_shift) as usize] - 1;
        (frame << self.page_shift) | (addr & ((1 << self.page_shift) - 1))
    }

    /// The PFNs backing the space, in virtual order (untouched pages skipped).
    pub fn pfns(&self) -> impl Iterator<Item = u64> + '_ {
        self.frames
            .iter()
            .filter(|&&frame| frame != 0)
            .map(|frame| frame - 1)
    }

    /// Gives every touched page back to the allocator.
    pub fn release(&mut self, allocator: &LocalPageAllocator) -> Result<(), String> {
        let cpu = allocator.cpu(self.cpu).map_err(|err| err.to_string())?;
        for frame in &mut self.frames {
            if *frame != 0 {
                cpu.free_pages(
                    pageframe::Page::from_pfn(pageframe::Pfn(*frame - 1)),
                    Order(0),
                )
                .map_err(|err| err.to_string())?;
                *frame = 0;
            }
        }
        Ok(())
    }
}
