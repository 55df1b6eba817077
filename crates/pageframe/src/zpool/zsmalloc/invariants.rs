//! The zsmalloc invariant walk (see the equations in the parent module's
//! header): zspages, free lists, fullness lists, counters and handles.

use super::{ZsPool, ALLOCATED, FREE_END, NR_FULLNESS_GROUPS};
use crate::error::InvariantError;
use crate::page_source::PageSource;

impl<P: PageSource> ZsPool<P> {
    /// Checks the invariants in the module header.
    pub fn check_invariants(&self) -> Result<(), InvariantError> {
        let fail = |message: String| Err(InvariantError(message));
        let mut pages = 0u64;
        let mut zspages_per_class = vec![0u64; self.classes.len()];
        let mut inuse_per_class = vec![0u64; self.classes.len()];
        for (id, zspage) in self.zspages.iter() {
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
                    let entry = self.handles.get(word & !ALLOCATED);
                    if !entry.is_some_and(|entry| entry.zspage == id && entry.obj_idx == obj as u32)
                    {
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
                let listed = state.lists[group]
                    .check(&self.zspages)
                    .map_err(|err| InvariantError(format!("class {index} group {group}: {err}")))?;
                if listed.iter().any(|id| {
                    self.zspages
                        .get(*id)
                        .map(|zspage| usize::from(zspage.fullness))
                        != Some(group)
                }) {
                    return fail(format!("class {index} group {group}: broken list"));
                }
            }
        }
        self.handles.check().map_err(InvariantError)?;
        self.zspages.check().map_err(InvariantError)?;
        if let Some(mapped) = self.mapped.get() {
            if self.handles.id_of(mapped).is_none() {
                return fail(format!("mapped handle {mapped:#x} is not live"));
            }
        }
        let live = self.handles.len() as u64;
        let inuse: u64 = inuse_per_class.iter().sum();
        if live != inuse || live != self.stats.objects {
            return fail(format!(
                "{live} live handles, {inuse} objects in use, {} counted",
                self.stats.objects
            ));
        }
        Ok(())
    }
}
