//! Peer allocators measured beside pageframe: what a user could pick instead.
//!
//! - `buddy_system_allocator`'s `FrameAllocator`: a buddy allocator of frame
//!   numbers (free lists are `BTreeSet`s);
//! - `buddy-alloc`: a buddy allocator that keeps its metadata inside the
//!   memory it manages, here 4 KiB leaves of a real buffer;
//! - `vec-stack`: a `Vec<u32>` of free PFNs, the floor no page allocator with
//!   real bookkeeping (orders, merging, counters, checks) can beat.

use std::alloc::{alloc, dealloc, Layout};

/// Frames every peer manages.
pub const PEER_FRAMES: usize = 1 << 16;
const PAGE_SIZE: usize = 4096;

/// One peer, able to allocate and free blocks of `1 << order` frames.
pub trait PeerAllocator {
    /// The name used in report rows.
    fn name(&self) -> &'static str;
    /// Allocates a block; `None` when out of memory or unsupported.
    fn alloc(&mut self, order: u8) -> Option<usize>;
    /// Frees a block returned by [`PeerAllocator::alloc`] with the same order.
    fn free(&mut self, block: usize, order: u8);
}

/// `buddy_system_allocator::FrameAllocator` over [`PEER_FRAMES`] frames.
pub struct BuddySystem(buddy_system_allocator::FrameAllocator<33>);

impl BuddySystem {
    /// A frame allocator holding frames `0..PEER_FRAMES`.
    pub fn new() -> BuddySystem {
        let mut frames = buddy_system_allocator::FrameAllocator::<33>::new();
        frames.add_frame(0, PEER_FRAMES);
        BuddySystem(frames)
    }
}

impl Default for BuddySystem {
    fn default() -> BuddySystem {
        BuddySystem::new()
    }
}

impl PeerAllocator for BuddySystem {
    fn name(&self) -> &'static str {
        "buddy_system_allocator"
    }

    #[inline]
    fn alloc(&mut self, order: u8) -> Option<usize> {
        self.0.alloc(1 << order)
    }

    #[inline]
    fn free(&mut self, block: usize, order: u8) {
        self.0.dealloc(block, 1 << order)
    }
}

/// `buddy_alloc::BuddyAlloc` over a page-aligned buffer of [`PEER_FRAMES`] pages.
pub struct BuddyAllocCrate {
    allocator: buddy_alloc::buddy_alloc::BuddyAlloc,
    buffer: *mut u8,
    layout: Layout,
}

impl BuddyAllocCrate {
    /// A buddy-alloc heap with 4 KiB leaves; `None` if the buffer cannot be had.
    pub fn new() -> Option<BuddyAllocCrate> {
        let layout = Layout::from_size_align(PEER_FRAMES * PAGE_SIZE, PAGE_SIZE).ok()?;
        // SAFETY: the layout has a non-zero size.
        let buffer = unsafe { alloc(layout) };
        if buffer.is_null() {
            return None;
        }
        let param = buddy_alloc::BuddyAllocParam::new(buffer, layout.size(), PAGE_SIZE);
        // SAFETY: `buffer..buffer + size` is a live allocation owned by this
        // struct, used by nothing else, and freed only after the allocator.
        let allocator = unsafe { buddy_alloc::buddy_alloc::BuddyAlloc::new(param) };
        Some(BuddyAllocCrate {
            allocator,
            buffer,
            layout,
        })
    }
}

impl PeerAllocator for BuddyAllocCrate {
    fn name(&self) -> &'static str {
        "buddy-alloc"
    }

    #[inline]
    fn alloc(&mut self, order: u8) -> Option<usize> {
        let block = self.allocator.malloc(PAGE_SIZE << order);
        (!block.is_null()).then_some(block as usize)
    }

    #[inline]
    fn free(&mut self, block: usize, _order: u8) {
        self.allocator.free(block as *mut u8)
    }
}

impl Drop for BuddyAllocCrate {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout; the allocator that
        // pointed into it is not used after this.
        unsafe { dealloc(self.buffer, self.layout) }
    }
}

/// A stack of free PFNs: order 0 only.
pub struct VecStack(Vec<u32>);

impl VecStack {
    /// A stack holding PFNs `0..PEER_FRAMES`.
    pub fn new() -> VecStack {
        VecStack((0..PEER_FRAMES as u32).collect())
    }

    /// Pops up to `out.len()` PFNs into `out`; returns how many.
    #[inline]
    pub fn pop_bulk(&mut self, out: &mut [u32]) -> usize {
        let take = out.len().min(self.0.len());
        let from = self.0.len() - take;
        out[..take].copy_from_slice(&self.0[from..]);
        self.0.truncate(from);
        take
    }

    /// Pushes PFNs back.
    #[inline]
    pub fn push_bulk(&mut self, pfns: &[u32]) {
        self.0.extend_from_slice(pfns);
    }
}

impl Default for VecStack {
    fn default() -> VecStack {
        VecStack::new()
    }
}

impl PeerAllocator for VecStack {
    fn name(&self) -> &'static str {
        "vec-stack"
    }

    #[inline]
    fn alloc(&mut self, order: u8) -> Option<usize> {
        if order != 0 {
            return None;
        }
        self.0.pop().map(|pfn| pfn as usize)
    }

    #[inline]
    fn free(&mut self, block: usize, _order: u8) {
        self.0.push(block as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(peer: &mut dyn PeerAllocator, order: u8) {
        let blocks: Vec<usize> = (0..8).map(|_| peer.alloc(order).expect("memory")).collect();
        let mut unique = blocks.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(
            unique.len(),
            blocks.len(),
            "{} handed out a block twice",
            peer.name()
        );
        for block in blocks {
            peer.free(block, order);
        }
    }

    #[test]
    fn every_peer_allocates_distinct_blocks() {
        round_trip(&mut BuddySystem::new(), 0);
        round_trip(&mut BuddySystem::new(), 3);
        round_trip(&mut BuddyAllocCrate::new().unwrap(), 0);
        round_trip(&mut VecStack::new(), 0);
        assert_eq!(VecStack::new().alloc(1), None);
    }

    #[test]
    fn vec_stack_bulk_pops_and_pushes() {
        let mut stack = VecStack::new();
        let mut out = [0u32; 4];
        assert_eq!(stack.pop_bulk(&mut out), 4);
        stack.push_bulk(&out);
        assert_eq!(stack.0.len(), PEER_FRAMES);
    }
}
