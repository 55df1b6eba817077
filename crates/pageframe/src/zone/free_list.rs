//! Free-list primitives: add at head or tail, delete, move between freetypes.
//! mirrors __add_to_free_list(), __del_page_from_free_list(), move_to_free_list()
//! with the free-page accounting of account_freepages().

use super::Zone;
use crate::frames::Frames;
use crate::freetype::{FreeType, FreeTypeIdx, MigrateType};
use crate::memmap::{FrameIdx, PageInfo, PageState};
use crate::types::Order;

impl Zone {
    #[inline]
    fn account(&mut self, freetype: FreeTypeIdx, pages: u64, add: bool) {
        let counter = if freetype == FreeTypeIdx::of(MigrateType::Isolate) {
            &mut self.nr_isolated_free
        } else {
            &mut self.nr_free
        };
        if add {
            *counter += pages;
        } else {
            *counter -= pages;
        }
    }

    /// Puts the free block at `pfn` on the list of `freetype`, at the head or
    /// the tail, and marks its record Buddy.
    #[inline]
    pub(crate) fn add_to_free_list(
        &mut self,
        frames: &Frames,
        pfn: FrameIdx,
        order: Order,
        freetype: FreeTypeIdx,
        tail: bool,
    ) {
        let memmap = &frames.memmap;
        memmap.set_info(pfn, PageInfo::new(PageState::Buddy, order, freetype));
        let list = &mut self.free_area[order.index()].lists[freetype.index()];
        if tail {
            memmap.set_next(pfn, FrameIdx::NIL);
            memmap.set_prev(pfn, list.tail);
            if list.tail == FrameIdx::NIL {
                list.head = pfn;
            } else {
                memmap.set_next(list.tail, pfn);
            }
            list.tail = pfn;
        } else {
            memmap.set_prev(pfn, FrameIdx::NIL);
            memmap.set_next(pfn, list.head);
            if list.head == FrameIdx::NIL {
                list.tail = pfn;
            } else {
                memmap.set_prev(list.head, pfn);
            }
            list.head = pfn;
        }
        self.free_area[order.index()].nr_free += 1;
        self.listed_orders[freetype.index()] |= 1 << order.0;
        self.account(freetype, order.nr_pages(), true);
    }

    /// Takes the free block at `pfn` off its list and clears its record.
    #[inline]
    pub(crate) fn del_from_free_list(
        &mut self,
        frames: &Frames,
        pfn: FrameIdx,
        order: Order,
        freetype: FreeTypeIdx,
    ) {
        self.unlink(frames, pfn, order, freetype);
        frames.memmap.set_info(pfn, PageInfo::UNTRACKED);
        let area = &mut self.free_area[order.index()];
        area.nr_free -= 1;
        if area.lists[freetype.index()].is_empty() {
            self.listed_orders[freetype.index()] &= !(1 << order.0);
        }
        self.account(freetype, order.nr_pages(), false);
    }

    /// Moves a free block to the tail of another freetype's list.
    #[inline]
    pub(crate) fn move_to_free_list(
        &mut self,
        frames: &Frames,
        pfn: FrameIdx,
        order: Order,
        from: FreeTypeIdx,
        to: FreeTypeIdx,
    ) {
        self.del_from_free_list(frames, pfn, order, from);
        self.add_to_free_list(frames, pfn, order, to, true);
    }

    /// Takes a free block of at least `min_order` off an unmapped list,
    /// largest first: (head PFN, order, freetype).
    pub(crate) fn take_free_unmapped_block(
        &mut self,
        frames: &Frames,
        min_order: Order,
    ) -> Option<(FrameIdx, Order, FreeType)> {
        for order in (min_order.0..=self.max_order.0).rev().map(Order) {
            for index in FreeTypeIdx::all() {
                let freetype = index.freetype();
                if !freetype.is_unmapped() {
                    continue;
                }
                if let Some(pfn) = self.first_on_list(order, index) {
                    self.del_from_free_list(frames, pfn, order, index);
                    return Some((pfn, order, freetype));
                }
            }
        }
        None
    }

    /// The first block on a list, if any.
    #[inline]
    pub(crate) fn first_on_list(&self, order: Order, freetype: FreeTypeIdx) -> Option<FrameIdx> {
        let head = self.free_area[order.index()].lists[freetype.index()].head;
        (head != FrameIdx::NIL).then_some(head)
    }

    /// Exchanges the places of two blocks on the same list (`list_swap()`):
    /// each takes the other's position, so a walk of the list meets them in
    /// swapped order. Counts and records do not change.
    pub(crate) fn swap_free_list_entries(
        &mut self,
        frames: &Frames,
        first: FrameIdx,
        second: FrameIdx,
        order: Order,
        freetype: FreeTypeIdx,
    ) {
        if first == second {
            return;
        }
        let memmap = &frames.memmap;
        // Where `second` sat: after its predecessor (FrameIdx::NIL: at the head).
        let mut position = memmap.prev(second);
        self.unlink(frames, second, order, freetype);
        self.replace_on_list(frames, first, second, order, freetype);
        if position == first {
            position = second;
        }
        self.insert_after(frames, position, first, order, freetype);
    }

    fn unlink(&mut self, frames: &Frames, pfn: FrameIdx, order: Order, freetype: FreeTypeIdx) {
        let memmap = &frames.memmap;
        let (next, prev) = (memmap.next(pfn), memmap.prev(pfn));
        let list = &mut self.free_area[order.index()].lists[freetype.index()];
        if prev == FrameIdx::NIL {
            list.head = next;
        } else {
            memmap.set_next(prev, next);
        }
        if next == FrameIdx::NIL {
            list.tail = prev;
        } else {
            memmap.set_prev(next, prev);
        }
    }

    /// Puts `new` where `old` is on the list; `old` is left unlinked.
    fn replace_on_list(
        &mut self,
        frames: &Frames,
        old: FrameIdx,
        new: FrameIdx,
        order: Order,
        freetype: FreeTypeIdx,
    ) {
        let memmap = &frames.memmap;
        let (next, prev) = (memmap.next(old), memmap.prev(old));
        memmap.set_next(new, next);
        memmap.set_prev(new, prev);
        let list = &mut self.free_area[order.index()].lists[freetype.index()];
        if prev == FrameIdx::NIL {
            list.head = new;
        } else {
            memmap.set_next(prev, new);
        }
        if next == FrameIdx::NIL {
            list.tail = new;
        } else {
            memmap.set_prev(next, new);
        }
    }

    /// Links `pfn` after `position` (FrameIdx::NIL: at the head).
    fn insert_after(
        &mut self,
        frames: &Frames,
        position: FrameIdx,
        pfn: FrameIdx,
        order: Order,
        freetype: FreeTypeIdx,
    ) {
        let memmap = &frames.memmap;
        let list = &mut self.free_area[order.index()].lists[freetype.index()];
        let next = if position == FrameIdx::NIL {
            list.head
        } else {
            memmap.next(position)
        };
        memmap.set_prev(pfn, position);
        memmap.set_next(pfn, next);
        if position == FrameIdx::NIL {
            list.head = pfn;
        } else {
            memmap.set_next(position, pfn);
        }
        if next == FrameIdx::NIL {
            list.tail = pfn;
        } else {
            memmap.set_prev(next, pfn);
        }
    }
}
