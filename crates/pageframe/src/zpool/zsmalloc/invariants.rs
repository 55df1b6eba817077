//! The zsmalloc invariant walk (see the equations in the parent module's
//! header): zspages, free lists, fullness lists, counters and handles.

use super::{ZsPool, ALLOCATED, FREE_END, NIL, NR_FULLNESS_GROUPS};
use crate::error::InvariantError;
use crate::page_source::PageSource;

impl<P: PageSource> ZsPool<P> {
    /// Checks the invariants in the module header.
    pub fn check_invariants(&self) -> Result<(), InvariantError> {
        let fail = |message: String| Err(InvariantError(message));
        let mut pages = 0u64;
        let mut zspages_per_class = vec![0u64; self.classes.len()];
        let mut inuse_per_class = vec![0u64; self.classes.len()];
        for (id, zspage) in self.zspages.iter().enumerate() {
            let Some(zspage) = zspage else { continue };
            let index = usize::from(zspage.class);
            let geometry = self.table.classes[index];
            if geometry.merged_into != index {
                return fail(format!("zspage {id} is in merged class {index}"));
            }
            if zspage.pages.len() != geometry.pages_per_zspage {
                return fail(format!("zspage {id} has {} pages", zspage.pages.len()));
            }
            pages += zspage.pages.len() as u64;
            zspages_per_class[index] += 1;
            inuse_per_class[index] += u64::from(zspage.inuse);
            let mut free = 0usize;
            let mut cursor = zspage.freeobj;
            while cursor != FREE_END {
                if free > geometry.objs_per_zspage || zspage.slots[cursor as usize] & ALLOCATED != 0
                {
                    return fail(format!("zspage {id}: broken free list"));
                }
                free += 1;
                cursor = zspage.slots[cursor as usize];
            }
            if free + zspage.inuse as usize != geometry.objs_per_zspage {
                return fail(format!(
                    "zspage {id}: {free} free + {} inuse != {}",
                    zspage.inuse, geometry.objs_per_zspage
                ));
            }
            if usize::from(zspage.fullness) != self.fullness_group(zspage) {
                return fail(format!("zspage {id} in the wrong fullness group"));
            }
            for (obj, word) in zspage.slots.iter().enumerate() {
                if word & ALLOCATED != 0 {
                    let entry = self.handles[(word & !ALLOCATED) as usize];
                    if entry.zspage != id as u32 || entry.obj_idx != obj as u32 {
                        return fail(format!("zspage {id} object {obj}: handle points elsewhere"));
                    }
                }
            }
        }
        if pages != self.stats.pages_allocated {
            return fail(format!(
                "pages_allocated {} but zspages hold {pages}",
                self.stats.pages_allocated
            ));
        }
        for (index, state) in self.classes.iter().enumerate() {
            let geometry = self.table.classes[index];
            if state.objs_allocated != zspages_per_class[index] * geometry.objs_per_zspage as u64
                || state.objs_inuse != inuse_per_class[index]
            {
                return fail(format!("class {index}: object counters are off"));
            }
            for group in 0..NR_FULLNESS_GROUPS {
                let mut listed = 0u64;
                let mut cursor = state.heads[group];
                let mut prev = NIL;
                while cursor != NIL {
                    let zspage = self.zspages[cursor as usize].as_ref();
                    let Some(zspage) = zspage else {
                        return fail(format!("class {index} group {group} lists a freed zspage"));
                    };
                    if usize::from(zspage.fullness) != group || zspage.prev != prev {
                        return fail(format!("class {index} group {group}: broken list"));
                    }
                    listed += 1;
                    prev = cursor;
                    cursor = zspage.next;
                }
                if listed != state.groups[group] {
                    return fail(format!(
                        "class {index} group {group}: {listed} listed, counter {}",
                        state.groups[group]
                    ));
                }
            }
        }
        let live = self
            .handles
            .iter()
            .filter(|entry| entry.zspage != NIL)
            .count() as u64;
        let inuse: u64 = inuse_per_class.iter().sum();
        if live != inuse || live != self.stats.objects {
            return fail(format!(
                "{live} live handles, {inuse} objects in use, {} counted",
                self.stats.objects
            ));
        }
        if self.data.nr_blocks() > pages as usize {
            return fail("page contents kept for pages the pool does not hold".into());
        }
        Ok(())
    }
}
