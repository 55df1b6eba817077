//! The slab allocator's invariant walk (see the equations in the parent
//! module's header): every slab, every free list, every counter.

use super::{SlabAllocator, NO_OBJ};
use crate::error::InvariantError;
use crate::page_source::PageSource;

impl<P: PageSource> SlabAllocator<P> {
    /// Checks the invariants in the module header.
    pub fn check_invariants(&self) -> Result<(), InvariantError> {
        let fail = |message: String| Err(InvariantError(message));
        let mut mapped_pages = 0u64;
        for (index, cache) in self.caches.iter().enumerate() {
            let (mut slabs, mut objects, mut active, mut pages) = (0u64, 0u64, 0u64, 0u64);
            for (_, slab) in self
                .slabs
                .iter()
                .filter(|(_, slab)| slab.cache as usize == index)
            {
                slabs += 1;
                objects += u64::from(slab.objects);
                active += u64::from(slab.inuse);
                pages += slab.order.nr_pages();
                let mut free = 0u32;
                let mut cursor = slab.freelist;
                while cursor != NO_OBJ {
                    if slab.is_allocated(usize::from(cursor)) || free > u32::from(slab.objects) {
                        return fail(format!(
                            "{}: free list of slab {} is broken",
                            cache.name, slab.pfn
                        ));
                    }
                    free += 1;
                    cursor = slab.next_free[usize::from(cursor)];
                }
                if free != u32::from(slab.objects - slab.inuse) {
                    return fail(format!(
                        "{}: slab {} has {free} free objects, inuse {} of {}",
                        cache.name, slab.pfn, slab.inuse, slab.objects
                    ));
                }
                let bits: u32 = slab.allocated.iter().map(|word| word.count_ones()).sum();
                if bits != u32::from(slab.inuse) {
                    return fail(format!(
                        "{}: slab {} allocated bits {bits} != inuse",
                        cache.name, slab.pfn
                    ));
                }
                let partial_ok = if slab.inuse == slab.objects {
                    !slab.on_partial
                } else {
                    slab.on_partial
                };
                if !partial_ok {
                    return fail(format!(
                        "{}: slab {} wrongly on/off the partial list",
                        cache.name, slab.pfn
                    ));
                }
                for page in 0..slab.order.nr_pages() {
                    if !self.page_to_slab.contains_key(&slab.pfn.offset(page)) {
                        return fail(format!(
                            "{}: page {} of a slab is unmapped",
                            cache.name,
                            slab.pfn.offset(page)
                        ));
                    }
                }
                mapped_pages += slab.order.nr_pages();
            }
            if slabs != cache.nr_slabs
                || objects != cache.total_objects
                || active != cache.active_objects
                || pages != cache.pages
            {
                return fail(format!(
                    "{}: counters (slabs {}, objects {}, active {}, pages {}) != slabs ({slabs}, {objects}, {active}, {pages})",
                    cache.name, cache.nr_slabs, cache.total_objects, cache.active_objects, cache.pages
                ));
            }
            if let Err(err) = cache.partial.check(&self.slabs) {
                return fail(format!("{}: partial list: {err}", cache.name));
            }
        }
        if mapped_pages != self.page_to_slab.len() as u64 {
            return fail(format!(
                "page map has {} pages, slabs hold {mapped_pages}",
                self.page_to_slab.len()
            ));
        }
        Ok(())
    }
}
