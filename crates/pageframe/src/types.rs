//! Newtypes for the spaces the allocator works in: page frame numbers, orders,
//! nodes, CPUs, zone types and node masks. Nothing here allocates or locks.
//!
//! Invariant: a value of one space is never used as another; conversions are
//! explicit (`Pfn::index`, `NodeId::index`, ...).

use std::fmt;

/// A page frame number: the physical address divided by the page size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[repr(transparent)]
pub struct Pfn(pub u64);

impl Pfn {
    /// The PFN as an index into per-page tables.
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }

    /// The PFN `nr` pages further on. For PFNs of a machine (below 2^32,
    /// `FrameIdx`) and counts within it; [`Pfn::checked_offset`] for a PFN
    /// or count a caller gave that nothing has checked yet.
    #[inline]
    pub fn offset(self, nr: u64) -> Pfn {
        Pfn(self.0 + nr)
    }

    /// The PFN `nr` pages further on; `None` past `u64::MAX`.
    #[inline]
    pub fn checked_offset(self, nr: u64) -> Option<Pfn> {
        self.0.checked_add(nr).map(Pfn)
    }

    /// True when the PFN is a multiple of `1 << order`, for any order (of
    /// 64 or more only PFN 0 is), without computing `1 << order`.
    #[inline]
    pub fn is_aligned(self, order: Order) -> bool {
        // trailing_zeros() of 0 is 64: the min keeps 0 aligned above that.
        self.0.trailing_zeros() >= u32::from(order.0).min(u64::BITS)
    }
}

impl fmt::Display for Pfn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

/// A block size as a power of two of pages: order `n` is `1 << n` pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[repr(transparent)]
pub struct Order(pub u8);

// Written out rather than derived: the derived comparisons go through
// `partial_cmp`, which the allocator's hot paths (an order against a limit)
// did not always fold back into one integer compare.
impl PartialOrd for Order {
    #[inline]
    fn partial_cmp(&self, other: &Order) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }

    #[inline]
    fn lt(&self, other: &Order) -> bool {
        self.0 < other.0
    }

    #[inline]
    fn le(&self, other: &Order) -> bool {
        self.0 <= other.0
    }

    #[inline]
    fn gt(&self, other: &Order) -> bool {
        self.0 > other.0
    }

    #[inline]
    fn ge(&self, other: &Order) -> bool {
        self.0 >= other.0
    }
}

impl Ord for Order {
    #[inline]
    fn cmp(&self, other: &Order) -> std::cmp::Ordering {
        self.0.cmp(&other.0)
    }
}

impl Order {
    /// Number of pages in a block of this order. For an order of a machine
    /// (at most its `max_order`, itself at most 20: every order the
    /// allocator takes is checked against it first); an order of 64 or more
    /// would overflow: [`Order::checked_nr_pages`] for one not yet checked.
    #[inline]
    pub const fn nr_pages(self) -> u64 {
        1u64 << self.0
    }

    /// Number of pages in a block of this order; `None` when it does not
    /// fit in a `u64` (order 64 or more).
    #[inline]
    pub const fn checked_nr_pages(self) -> Option<u64> {
        1u64.checked_shl(self.0 as u32)
    }

    /// The order as an index into per-order tables.
    #[inline]
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for Order {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Forward to the integer so that width and alignment apply.
        fmt::Display::fmt(&self.0, f)
    }
}

/// A NUMA node number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[repr(transparent)]
pub struct NodeId(pub u16);

impl NodeId {
    /// The node as an index into per-node tables.
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Forward to the integer so that width and alignment apply:
        // /proc/pagetypeinfo prints nodes with `Node %4d`.
        fmt::Display::fmt(&self.0, f)
    }
}

/// A CPU number. The caller decides what a CPU is: a simulated CPU, or a
/// thread registered with the shared allocator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[repr(transparent)]
pub struct CpuId(pub u16);

impl CpuId {
    /// The CPU as an index into per-CPU tables.
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for CpuId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Forward to the integer so that width and alignment apply.
        fmt::Display::fmt(&self.0, f)
    }
}

/// A zone's index in the machine's zone table: node by node, lowest zone
/// type first (the order of `MachineLayout::zones()`). At most
/// MAX_NUMNODES x ZoneType::COUNT zones, so it fits 16 bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[repr(transparent)]
pub struct ZoneIdx(pub u16);

impl ZoneIdx {
    /// The zone as an index into per-zone tables.
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for ZoneIdx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// Zone types, lowest first, as in `enum zone_type` of x86-64 (without
/// HIGHMEM, which x86-64 does not have, and DEVICE, which holds no memory the
/// page allocator manages).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ZoneType {
    /// Memory below 16 MiB, for ISA-style DMA. Optional.
    Dma = 0,
    /// Memory below 4 GiB, for devices with 32-bit DMA. Optional.
    Dma32 = 1,
    /// Memory for every kind of allocation.
    Normal = 2,
    /// Memory only for movable allocations (`movablecore=`, `kernelcore=`).
    Movable = 3,
}

impl ZoneType {
    /// Number of zone types.
    pub const COUNT: usize = 4;
    /// All zone types, lowest first.
    pub const ALL: [ZoneType; 4] = [
        ZoneType::Dma,
        ZoneType::Dma32,
        ZoneType::Normal,
        ZoneType::Movable,
    ];

    /// The kernel's zone name, as printed in /proc views.
    pub fn name(self) -> &'static str {
        match self {
            ZoneType::Dma => "DMA",
            ZoneType::Dma32 => "DMA32",
            ZoneType::Normal => "Normal",
            ZoneType::Movable => "Movable",
        }
    }

    /// The zone type as an index into per-zone-type tables.
    #[inline]
    pub fn index(self) -> usize {
        self as usize
    }
}

/// Largest node count a [`Nodemask`] holds.
pub const MAX_NUMNODES: usize = 256;

/// A set of nodes, as `nodemask_t`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Nodemask {
    bits: [u64; MAX_NUMNODES / 64],
}

impl Nodemask {
    /// The empty mask.
    pub const NONE: Nodemask = Nodemask {
        bits: [0; MAX_NUMNODES / 64],
    };

    /// The mask of nodes `0..nr_nodes`.
    pub fn first(nr_nodes: usize) -> Nodemask {
        let mut mask = Nodemask::NONE;
        for node in 0..nr_nodes.min(MAX_NUMNODES) {
            mask.set(NodeId(node as u16));
        }
        mask
    }

    /// The mask holding one node.
    pub fn of(node: NodeId) -> Nodemask {
        let mut mask = Nodemask::NONE;
        mask.set(node);
        mask
    }

    /// Adds a node; nodes at or above [`MAX_NUMNODES`] are ignored.
    pub fn set(&mut self, node: NodeId) {
        if node.index() < MAX_NUMNODES {
            self.bits[node.index() / 64] |= 1 << (node.index() % 64);
        }
    }

    /// Removes a node.
    pub fn clear(&mut self, node: NodeId) {
        if node.index() < MAX_NUMNODES {
            self.bits[node.index() / 64] &= !(1 << (node.index() % 64));
        }
    }

    /// True when the node is in the mask.
    #[inline]
    pub fn contains(&self, node: NodeId) -> bool {
        node.index() < MAX_NUMNODES
            && self.bits[node.index() / 64] & (1 << (node.index() % 64)) != 0
    }

    /// True when no node is set.
    pub fn is_empty(&self) -> bool {
        self.bits.iter().all(|&word| word == 0)
    }

    /// Number of nodes in the mask.
    pub fn weight(&self) -> usize {
        self.bits
            .iter()
            .map(|word| word.count_ones() as usize)
            .sum()
    }

    /// The nodes in the mask, lowest first.
    pub fn iter(&self) -> impl Iterator<Item = NodeId> + '_ {
        (0..MAX_NUMNODES)
            .filter(|&node| self.contains(NodeId(node as u16)))
            .map(|node| NodeId(node as u16))
    }
}

impl fmt::Debug for Nodemask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set()
            .entries(self.iter().map(|node| node.0))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodemask_set_clear_and_iterate() {
        let mut mask = Nodemask::NONE;
        assert!(mask.is_empty());
        mask.set(NodeId(3));
        mask.set(NodeId(70));
        assert!(mask.contains(NodeId(3)) && mask.contains(NodeId(70)));
        assert_eq!(mask.weight(), 2);
        assert_eq!(mask.iter().collect::<Vec<_>>(), vec![NodeId(3), NodeId(70)]);
        mask.clear(NodeId(3));
        assert!(!mask.contains(NodeId(3)));
        assert_eq!(Nodemask::first(4).weight(), 4);
    }

    #[test]
    fn pfn_alignment() {
        assert!(Pfn(1024).is_aligned(Order(10)));
        assert!(!Pfn(1536).is_aligned(Order(10)));
        assert_eq!(Order(9).nr_pages(), 512);
    }

    #[test]
    fn orders_and_offsets_a_caller_gives_do_not_overflow() {
        // Order(64).nr_pages() overflowed the shift (a panic in a debug
        // build, 1 page in a release build), and is_aligned() with it.
        assert_eq!(Order(63).checked_nr_pages(), Some(1 << 63));
        assert_eq!(Order(64).checked_nr_pages(), None);
        assert_eq!(Order(255).checked_nr_pages(), None);
        assert!(!Pfn(1 << 40).is_aligned(Order(64)));
        assert!(!Pfn(u64::MAX).is_aligned(Order(255)));
        assert!(Pfn(1 << 63).is_aligned(Order(63)));
        assert!(Pfn(0).is_aligned(Order(255)));
        assert_eq!(Pfn(u64::MAX).checked_offset(1), None);
        assert_eq!(Pfn(u64::MAX - 1).checked_offset(1), Some(Pfn(u64::MAX)));
    }
}
