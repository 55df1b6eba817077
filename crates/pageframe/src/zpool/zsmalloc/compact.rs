//! zsmalloc compaction (zs_compact()): per class, move objects from the
//! sparsest zspages into the fullest and free the zspages emptied.

use super::{
    ZsPool, ALLOCATED, NIL, ZS_INUSE_RATIO_0, ZS_INUSE_RATIO_10, ZS_INUSE_RATIO_100,
    ZS_INUSE_RATIO_99,
};
use crate::page_source::PageSource;
use crate::zpool::ZpoolError;

impl<P: PageSource> ZsPool<P> {
    /// Pages a class could free by compaction (zs_can_compact()).
    pub(super) fn zs_can_compact(&self, index: usize) -> u64 {
        let state = &self.classes[index];
        if state.objs_allocated <= state.objs_inuse {
            return 0;
        }
        let geometry = self.table.classes[index];
        let wasted = (state.objs_allocated - state.objs_inuse) / geometry.objs_per_zspage as u64;
        wasted * geometry.pages_per_zspage as u64
    }

    /// The first zspage of the lowest non-empty group from 10 % to 99 %
    /// (isolate_src_zspage()), or of the highest (isolate_dst_zspage()),
    /// taken off its list.
    fn isolate_zspage(&mut self, index: usize, sparsest: bool) -> u32 {
        let heads = self.classes[index].lists.map(|list| list.head());
        let mut groups = ZS_INUSE_RATIO_10..=ZS_INUSE_RATIO_99;
        let found = if sparsest {
            groups.find(|group| heads[*group] != NIL)
        } else {
            groups.rev().find(|group| heads[*group] != NIL)
        };
        match found {
            Some(group) => {
                let id = heads[group];
                self.remove_zspage(id);
                id
            }
            None => NIL,
        }
    }

    /// Moves the objects of `src` into `dst` until `dst` is full or `src`
    /// is empty, objects in address order (migrate_zspage()).
    fn migrate_zspage(&mut self, src: u32, dst: u32) -> Result<(), ZpoolError> {
        let index = usize::from(self.zspages.get(src).expect("src").class);
        let size = self.table.classes[index].size;
        let objs = self.table.classes[index].objs_per_zspage as u32;
        let mut scratch = std::mem::take(&mut self.scratch);
        for obj in 0..objs {
            let slot_word = self.zspages.get(src).expect("src").slots[obj as usize];
            if slot_word & ALLOCATED == 0 {
                continue;
            }
            let handle_slot = slot_word & !ALLOCATED;
            // zs_object_copy(): the whole slot, handle included, copied
            // before any metadata moves, so a failing copy changes nothing.
            let new_obj = self.zspages.get(dst).expect("dst").freeobj;
            let copied = self
                .read_obj_bytes(src, obj, 0, &mut scratch[..size])
                .and_then(|()| self.write_obj_bytes(dst, new_obj, 0, &scratch[..size]));
            if let Err(err) = copied {
                self.scratch = scratch;
                return Err(err);
            }
            let allocated = self.obj_malloc(dst, handle_slot);
            debug_assert_eq!(allocated, new_obj);
            let entry = self.handles.get_mut(handle_slot).expect("live handle");
            entry.zspage = dst;
            entry.obj_idx = new_obj;
            self.obj_free(src, obj);
            let dst_page = self.zspages.get(dst).expect("dst");
            if dst_page.inuse == objs {
                break;
            }
            if self.zspages.get(src).expect("src").inuse == 0 {
                break;
            }
        }
        self.scratch = scratch;
        Ok(())
    }

    /// Puts an isolated zspage back on its group's list (putback_zspage()).
    fn putback_zspage(&mut self, id: u32) -> usize {
        let group = self.fullness_group(self.zspages.get(id).expect("zspage"));
        self.insert_zspage(id, group);
        group
    }

    /// Compacts one class; returns the pages freed (__zs_compact()).
    fn compact_class(&mut self, index: usize) -> Result<u64, ZpoolError> {
        let mut freed = 0;
        let mut dst = NIL;
        while self.zs_can_compact(index) > 0 {
            if dst == NIL {
                dst = self.isolate_zspage(index, false);
                if dst == NIL {
                    break;
                }
            }
            let src = self.isolate_zspage(index, true);
            if src == NIL {
                break;
            }
            if let Err(err) = self.migrate_zspage(src, dst) {
                self.putback_zspage(src);
                self.putback_zspage(dst);
                return Err(err);
            }
            if self.putback_zspage(src) == ZS_INUSE_RATIO_0 {
                self.free_zspage(src)?;
                freed += self.table.classes[index].pages_per_zspage as u64;
            }
            let full = {
                let zspage = self.zspages.get(dst).expect("dst");
                self.fullness_group(zspage) == ZS_INUSE_RATIO_100
            };
            if full {
                self.putback_zspage(dst);
                dst = NIL;
            }
        }
        if dst != NIL {
            self.putback_zspage(dst);
        }
        Ok(freed)
    }

    /// Compacts every class, largest first; returns the pages freed and
    /// adds them to `pages_compacted` (zs_compact()).
    pub fn zs_compact(&mut self) -> Result<u64, ZpoolError> {
        let mut freed = 0;
        for index in (0..self.table.classes.len()).rev() {
            if self.table.classes[index].merged_into != index {
                continue;
            }
            freed += self.compact_class(index)?;
        }
        self.stats.pages_compacted += freed;
        Ok(freed)
    }
}
