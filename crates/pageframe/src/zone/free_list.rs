//! Free-list primitives: add at head or tail, delete, move between freetypes.
//! mirrors __add_to_free_list(), __del_page_from_free_list(), move_to_free_list()
//! with the free-page accounting of account_freepages().

use super::Zone;
use crate::frames::Frames;
use crate::freetype::MigrateType;
use crate::memmap::{PageInfo, PageState, NIL};
use crate::types::Order;

impl Zone {
    #[inline]
    fn account(&mut self, freetype: usize, pages: u64, add: bool) {
        let counter = if freetype == MigrateType::Isolate.index() {
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
        pfn: u32,
        order: u8,
        freetype: usize,
        tail: bool,
    ) {
        let memmap = &frames.memmap;
        memmap.set_info(pfn, PageInfo::new(PageState::Buddy, Order(order), freetype));
        let list = &mut self.free_area[order as usize].lists[freetype];
        if tail {
            memmap.set_next(pfn, NIL);
            memmap.set_prev(pfn, list.tail);
            if list.tail == NIL {
                list.head = pfn;
            } else {
                memmap.set_next(list.tail, pfn);
            }
            list.tail = pfn;
        } else {
            memmap.set_prev(pfn, NIL);
            memmap.set_next(pfn, list.head);
            if list.head == NIL {
                list.tail = pfn;
            } else {
                memmap.set_prev(list.head, pfn);
            }
            list.head = pfn;
        }
        self.free_area[order as usize].nr_free += 1;
        self.account(freetype, 1 << order, true);
    }

    /// Takes the free block at `pfn` off its list and clears its record.
    #[inline]
    pub(crate) fn del_from_free_list(
        &mut self,
        frames: &Frames,
        pfn: u32,
        order: u8,
        freetype: usize,
    ) {
        let memmap = &frames.memmap;
        let (next, prev) = (memmap.next(pfn), memmap.prev(pfn));
        let list = &mut self.free_area[order as usize].lists[freetype];
        if prev == NIL {
            list.head = next;
        } else {
            memmap.set_next(prev, next);
        }
        if next == NIL {
            list.tail = prev;
        } else {
            memmap.set_prev(next, prev);
        }
        memmap.set_info(pfn, PageInfo::UNTRACKED);
        self.free_area[order as usize].nr_free -= 1;
        self.account(freetype, 1 << order, false);
    }

    /// Moves a free block to the tail of another freetype's list.
    #[inline]
    pub(crate) fn move_to_free_list(
        &mut self,
        frames: &Frames,
        pfn: u32,
        order: u8,
        from: usize,
        to: usize,
    ) {
        self.del_from_free_list(frames, pfn, order, from);
        self.add_to_free_list(frames, pfn, order, to, true);
    }

    /// The first block on a list, if any.
    #[inline]
    pub(crate) fn first_on_list(&self, order: usize, freetype: usize) -> Option<u32> {
        let head = self.free_area[order].lists[freetype].head;
        (head != NIL).then_some(head)
    }
}
