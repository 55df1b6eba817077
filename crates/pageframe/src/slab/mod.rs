//! A SLUB-like slab allocator: kmem caches of fixed-size objects carved
//! out of page blocks, and the kmalloc caches on top.
//!
//! Owns: the caches, their slabs and the per-cache partial list. Does not
//! own: the pages (they come from a [`PageSource`], i.e. the public
//! page-allocator API) nor their bytes, which live in the backing. A slab
//! resolves its pages once, when it is made ([`PageSource::page_buffers`]),
//! and objects are copied through those buffers; a slab drops them before
//! its pages are freed. Slabs whose pages do not resolve, and
//! kmalloc_large blocks, copy through the page source.
//!
//! Behaviour mirrors mm/slub.c where it matters for memory use:
//! - each cache prefers slabs of the order calculate_order() picks and falls
//!   back to the minimum order (`get_order(size)`) when the page allocator
//!   cannot give the preferred one (allocate_slab(), counted as
//!   `order_fallback`);
//! - a node keeps a list of partial slabs; allocation takes the first
//!   partial slab, a new slab goes to the head, a full slab leaves the list,
//!   a free into a full slab puts it back at the tail;
//! - a free that empties a slab discards it to the page allocator when the
//!   node already has `min_partial` partial slabs (__slab_free());
//! - `kmem_cache_shrink` discards every empty slab and puts the fullest
//!   partial slabs first (__kmem_cache_do_shrink()).
//!
//! Simplifications (documented deviations): one node list per cache (the
//! node of the page source), no per-CPU slab (the head of the partial list
//! plays its part), in-order free lists (no CONFIG_SLAB_FREELIST_RANDOM),
//! free pointers kept beside the objects rather than inside them.
//!
//! Object addresses are physical: `pfn << page_shift | offset`, so an
//! object of a high-order slab lies in the page it would lie in.
//!
//! Invariants (per cache, checked by [`SlabAllocator::check_invariants`]):
//! `nr_slabs == |slabs of the cache|`, `total_objects == Σ slab.objects`,
//! `active == Σ slab.inuse`, a slab is on the partial list iff
//! `0 < inuse < objects` or (it is empty and was kept), `free list length ==
//! objects - inuse`, and the pages map names exactly the pages of live slabs.
//!
//! ```
//! use pageframe::page_source::CpuPages;
//! use pageframe::slab::{SlabAllocator, SlabParams};
//! use pageframe::{CpuId, Gfp, LocalPageAllocator, MachineDesc};
//!
//! let allocator = LocalPageAllocator::boot(&MachineDesc::uniform(64 << 20, 1, 1)?)?;
//! let pages = CpuPages::new(allocator.cpu(CpuId(0))?);
//! let mut slab = SlabAllocator::new(pages, SlabParams::new(1, 4096))?;
//! let dentry = slab.kmem_cache_create("dentry", 192, 8)?;
//! let object = slab.kmem_cache_alloc(dentry, Gfp::KERNEL)?;
//! slab.write(object, 0, b"name")?;
//! let buffer = slab.kmalloc(100, Gfp::KERNEL)?; // from kmalloc-128
//! slab.kfree(buffer)?;
//! slab.kmem_cache_free(dentry, object)?;
//! slab.check_invariants()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod error;
pub(crate) mod id_slots;
pub(crate) mod index_list;
mod invariants;
mod kmalloc;
mod order;
mod slabinfo;

pub use error::SlabError;
pub use kmalloc::{kmalloc_cache_name, kmalloc_index, KMALLOC_MAX_CACHE_SIZE, KMALLOC_SIZES};
pub use order::{calculate_order, get_order, min_partial, SlabParams, MAX_PARTIAL, MIN_PARTIAL};
pub use slabinfo::{slabinfo, SlabInfo};

use crate::gfp::Gfp;
use crate::page_source::{PageBuffers, PageSource, PfnMap};
use crate::types::{Order, Pfn};
use id_slots::IdSlots;
use index_list::{IndexList, Linked, Links, NIL};

/// An object address: `pfn << page_shift | offset` (a physical address).
pub type ObjAddr = u64;

/// Names a kmem cache of one [`SlabAllocator`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CacheId(pub u32);

/// "No object" in a slab's free list.
const NO_OBJ: u16 = u16::MAX;

/// One slab: a block of `1 << order` pages cut into `objects` objects.
struct Slab {
    cache: u32,
    pfn: Pfn,
    order: Order,
    objects: u16,
    inuse: u16,
    /// First free object; `NO_OBJ` when full.
    freelist: u16,
    /// Per object: the next free object (meaningful while free).
    next_free: Box<[u16]>,
    /// Per object: allocated bit.
    allocated: Box<[u64]>,
    on_partial: bool,
    /// Its place on the cache's partial list.
    links: Links,
    /// Its pages resolved for direct copies, if they could be; dropped
    /// before the pages are freed.
    buffers: Option<PageBuffers>,
}

impl Linked for Slab {
    fn links(&self) -> &Links {
        &self.links
    }
    fn links_mut(&mut self) -> &mut Links {
        &mut self.links
    }
}

impl Slab {
    fn is_allocated(&self, index: usize) -> bool {
        self.allocated[index / 64] & (1 << (index % 64)) != 0
    }

    fn set_allocated(&mut self, index: usize, value: bool) {
        if value {
            self.allocated[index / 64] |= 1 << (index % 64);
        } else {
            self.allocated[index / 64] &= !(1 << (index % 64));
        }
    }
}

/// Counters of one cache (a subset of SLUB's `stat_item`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Objects allocated.
    pub allocs: u64,
    /// Objects freed.
    pub frees: u64,
    /// Slabs allocated (`ALLOC_SLAB`).
    pub alloc_slab: u64,
    /// Slabs freed (`FREE_SLAB`).
    pub free_slab: u64,
    /// Slabs that had to fall back to the minimum order (`ORDER_FALLBACK`).
    pub order_fallback: u64,
}

/// A kmem cache (`struct kmem_cache` with its one `kmem_cache_node`).
pub struct KmemCache {
    name: String,
    object_size: u32,
    size: u32,
    align: u32,
    /// Preferred order and objects per slab of that order (`s->oo`).
    order: Order,
    objects: u32,
    /// Minimum order and its objects (`s->min`).
    min_order: Order,
    min_objects: u32,
    min_partial: u32,
    gfp: Gfp,
    // kmem_cache_node:
    partial: IndexList,
    nr_slabs: u64,
    total_objects: u64,
    active_objects: u64,
    pages: u64,
    stats: CacheStats,
}

impl KmemCache {
    /// The cache's name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The size asked for at creation (`object_size`).
    pub fn object_size(&self) -> u32 {
        self.object_size
    }
    /// The size of a slot, aligned (`size`).
    pub fn size(&self) -> u32 {
        self.size
    }
    /// The alignment.
    pub fn align(&self) -> u32 {
        self.align
    }
    /// The preferred slab order.
    pub fn order(&self) -> Order {
        self.order
    }
    /// Objects per slab of the preferred order.
    pub fn objects_per_slab(&self) -> u32 {
        self.objects
    }
    /// The fallback order.
    pub fn min_order(&self) -> Order {
        self.min_order
    }
    /// `min_partial`.
    pub fn min_partial(&self) -> u32 {
        self.min_partial
    }
    /// Slabs on the partial list.
    pub fn nr_partial(&self) -> u32 {
        self.partial.len()
    }
    /// Slabs of the cache.
    pub fn nr_slabs(&self) -> u64 {
        self.nr_slabs
    }
    /// Objects in all slabs.
    pub fn total_objects(&self) -> u64 {
        self.total_objects
    }
    /// Objects allocated.
    pub fn active_objects(&self) -> u64 {
        self.active_objects
    }
    /// Pages held by the cache's slabs.
    pub fn nr_pages(&self) -> u64 {
        self.pages
    }
    /// Counters.
    pub fn stats(&self) -> CacheStats {
        self.stats
    }
}

/// A slab allocator over a page source.
pub struct SlabAllocator<P: PageSource> {
    source: P,
    params: SlabParams,
    page_shift: u32,
    caches: Vec<KmemCache>,
    slabs: IdSlots<Slab>,
    /// Every page of every slab → the slab's id (virt_to_slab()).
    page_to_slab: PfnMap<u32>,
    /// kmalloc_large() blocks: head PFN → order.
    large: PfnMap<Order>,
    /// kmalloc caches by kmalloc_index().
    kmalloc: [Option<CacheId>; KMALLOC_SIZES.len()],
}

impl<P: PageSource> SlabAllocator<P> {
    /// A slab allocator with the kmalloc caches created
    /// (create_kmalloc_caches()).
    pub fn new(source: P, params: SlabParams) -> Result<SlabAllocator<P>, SlabError> {
        let page_size = source.page_size();
        if !page_size.is_power_of_two() || page_size != params.page_size {
            return Err(SlabError::Invalid(format!(
                "page size {page_size} does not match the parameters' {}",
                params.page_size
            )));
        }
        let params = params.clamped().map_err(SlabError::Invalid)?;
        let mut slab = SlabAllocator {
            source,
            params,
            page_shift: page_size.trailing_zeros(),
            caches: Vec::new(),
            slabs: IdSlots::default(),
            page_to_slab: PfnMap::default(),
            large: PfnMap::default(),
            kmalloc: [None; KMALLOC_SIZES.len()],
        };
        for (index, size) in KMALLOC_SIZES.iter().enumerate() {
            let name = kmalloc_cache_name(*size);
            let id = slab.kmem_cache_create(&name, *size, 8)?;
            slab.kmalloc[index] = Some(id);
        }
        Ok(slab)
    }

    /// The page source.
    pub fn source(&self) -> &P {
        &self.source
    }

    /// The page source, mutably (for tests that inject failures).
    pub fn source_mut(&mut self) -> &mut P {
        &mut self.source
    }

    /// Bytes per page.
    pub fn page_size(&self) -> usize {
        1 << self.page_shift
    }

    /// The boot parameters.
    pub fn params(&self) -> &SlabParams {
        &self.params
    }

    /// Every cache, oldest first.
    pub fn caches(&self) -> impl Iterator<Item = (CacheId, &KmemCache)> {
        self.caches
            .iter()
            .enumerate()
            .map(|(index, cache)| (CacheId(index as u32), cache))
    }

    /// One cache.
    pub fn cache(&self, id: CacheId) -> Result<&KmemCache, SlabError> {
        self.caches
            .get(id.0 as usize)
            .ok_or(SlabError::NoSuchCache(id.0))
    }

    /// Pages held by all slabs and kmalloc_large blocks.
    pub fn nr_pages(&self) -> u64 {
        let slab_pages: u64 = self.caches.iter().map(|cache| cache.pages).sum();
        let large: u64 = self.large.values().map(|order| order.nr_pages()).sum();
        slab_pages + large
    }

    /// Creates a cache of `size`-byte objects aligned to `align` (a power of
    /// two; at least the word size is used). Mirrors kmem_cache_create() and
    /// calculate_sizes() for a cache without debugging.
    pub fn kmem_cache_create(
        &mut self,
        name: &str,
        size: u32,
        align: u32,
    ) -> Result<CacheId, SlabError> {
        if name.is_empty() {
            return Err(SlabError::Invalid("empty cache name".into()));
        }
        let largest = self.page_size() << self.params.max_page_order;
        if size == 0 {
            return Err(SlabError::Invalid("object size 0".into()));
        }
        if size as usize > largest {
            return Err(SlabError::Invalid(format!(
                "object size {size} is larger than a max_page_order {} block ({largest} bytes)",
                self.params.max_page_order
            )));
        }
        if align != 0 && !align.is_power_of_two() {
            return Err(SlabError::Invalid(format!("alignment {align}")));
        }
        let align = align.max(8);
        let slot = size.checked_next_multiple_of(align).ok_or_else(|| {
            SlabError::Invalid(format!(
                "object size {size} aligned to {align} bytes is 2^32 bytes or more"
            ))
        })?;
        let order = calculate_order(&self.params, slot)
            .ok_or_else(|| SlabError::Invalid(format!("object size {size} fits no slab")))?;
        let min_order = get_order(u64::from(slot), self.page_size());
        let objects = self.params.order_objects(order, slot);
        let min_objects = self.params.order_objects(min_order, slot);
        if objects as usize >= usize::from(NO_OBJ) {
            return Err(SlabError::Invalid(format!("{objects} objects per slab")));
        }
        let id = CacheId(self.caches.len() as u32);
        self.caches.push(KmemCache {
            name: name.to_string(),
            object_size: size,
            size: slot,
            align,
            order: Order(order),
            objects,
            min_order: Order(min_order),
            min_objects,
            min_partial: min_partial(slot),
            gfp: Gfp::KERNEL,
            partial: IndexList::EMPTY,
            nr_slabs: 0,
            total_objects: 0,
            active_objects: 0,
            pages: 0,
            stats: CacheStats::default(),
        });
        Ok(id)
    }

    /// Allocates an object (slab_alloc_node(): first partial slab, else a
    /// new slab).
    pub fn kmem_cache_alloc(&mut self, cache: CacheId, gfp: Gfp) -> Result<ObjAddr, SlabError> {
        let index = cache.0 as usize;
        if index >= self.caches.len() {
            return Err(SlabError::NoSuchCache(cache.0));
        }
        let mut slab_id = self.caches[index].partial.head();
        if slab_id == NIL {
            slab_id = self.new_slab(index, gfp)?;
            self.add_partial(index, slab_id, false);
        }
        let size = self.caches[index].size as u64;
        let slab = self.slabs.get_mut(slab_id).expect("partial slab exists");
        let object = slab.freelist;
        debug_assert_ne!(object, NO_OBJ, "a partial slab has a free object");
        slab.freelist = slab.next_free[usize::from(object)];
        slab.set_allocated(usize::from(object), true);
        slab.inuse += 1;
        let full = slab.inuse == slab.objects;
        let addr = (slab.pfn.0 << self.page_shift) + u64::from(object) * size;
        if full {
            self.remove_partial(index, slab_id);
        }
        let cache = &mut self.caches[index];
        cache.active_objects += 1;
        cache.stats.allocs += 1;
        Ok(addr)
    }

    /// Frees an object to `cache` (kmem_cache_free()). A foreign address, an
    /// object of another cache or a double free is an error and changes
    /// nothing.
    pub fn kmem_cache_free(&mut self, cache: CacheId, addr: ObjAddr) -> Result<(), SlabError> {
        let (slab_id, object) = self.locate(addr)?;
        let owner = self.slabs.get(slab_id).expect("located").cache;
        if owner != cache.0 {
            let given = self
                .caches
                .get(cache.0 as usize)
                .map(|cache| cache.name.clone())
                .unwrap_or_else(|| format!("cache #{}", cache.0));
            return Err(SlabError::WrongCache {
                addr,
                actual: self.caches[owner as usize].name.clone(),
                given,
            });
        }
        self.free_located(slab_id, object)
    }

    /// The slab and object index of `addr`; errors for anything that is not
    /// the start of an allocated object.
    fn locate(&self, addr: ObjAddr) -> Result<(u32, u16), SlabError> {
        let pfn = Pfn(addr >> self.page_shift);
        let slab_id = *self
            .page_to_slab
            .get(&pfn)
            .ok_or(SlabError::NotObject(addr))?;
        let slab = self.slabs.get(slab_id).expect("mapped slab");
        let offset = addr - (slab.pfn.0 << self.page_shift);
        let size = u64::from(self.caches[slab.cache as usize].size);
        if offset % size != 0 || offset / size >= u64::from(slab.objects) {
            return Err(SlabError::NotObject(addr));
        }
        let object = (offset / size) as u16;
        if !slab.is_allocated(usize::from(object)) {
            return Err(SlabError::DoubleFree(addr));
        }
        Ok((slab_id, object))
    }

    /// Mirrors __slab_free() once the object is known to be allocated.
    fn free_located(&mut self, slab_id: u32, object: u16) -> Result<(), SlabError> {
        let slab = self.slabs.get_mut(slab_id).expect("located");
        let index = slab.cache as usize;
        let was_full = slab.inuse == slab.objects;
        slab.next_free[usize::from(object)] = slab.freelist;
        slab.freelist = object;
        slab.set_allocated(usize::from(object), false);
        slab.inuse -= 1;
        let empty = slab.inuse == 0;
        let cache = &mut self.caches[index];
        cache.active_objects -= 1;
        cache.stats.frees += 1;
        if was_full && !empty {
            self.add_partial(index, slab_id, true);
            return Ok(());
        }
        if empty {
            if was_full {
                // A one-object slab: it was on no list.
                self.add_partial(index, slab_id, true);
            }
            if self.caches[index].partial.len() >= self.caches[index].min_partial {
                self.remove_partial(index, slab_id);
                self.discard_slab(slab_id)?;
            }
        }
        Ok(())
    }

    /// Allocates and initialises a slab (allocate_slab()): the preferred
    /// order without reclaim, else the minimum order with the caller's flags.
    fn new_slab(&mut self, index: usize, gfp: Gfp) -> Result<u32, SlabError> {
        let cache = &self.caches[index];
        let flags = gfp | cache.gfp.intersection(Gfp::RECLAIMABLE);
        let (order, objects) = (cache.order, cache.objects);
        let (min_order, min_objects) = (cache.min_order, cache.min_objects);
        let comp = if order.0 > 0 { Gfp::COMP } else { Gfp::empty() };
        let mut first = (flags | comp | Gfp::NOWARN | Gfp::NORETRY) - Gfp::NOFAIL;
        if first.contains(Gfp::DIRECT_RECLAIM) && order > min_order {
            first = (first | Gfp::NOMEMALLOC) - Gfp::RECLAIM;
        }
        let (pfn, order, objects) = match self.source.alloc_pages(first, order) {
            Ok(pfn) => (pfn, order, objects),
            Err(_) => {
                let comp = if min_order.0 > 0 {
                    Gfp::COMP
                } else {
                    Gfp::empty()
                };
                match self.source.alloc_pages(flags | comp, min_order) {
                    Ok(pfn) => {
                        self.caches[index].stats.order_fallback += 1;
                        (pfn, min_order, min_objects)
                    }
                    Err(source) => {
                        return Err(SlabError::NoMemory {
                            cache: self.caches[index].name.clone(),
                            source,
                        })
                    }
                }
            }
        };
        let objects16 = objects as u16;
        let next_free: Box<[u16]> = (0..objects16)
            .map(|object| {
                if object + 1 < objects16 {
                    object + 1
                } else {
                    NO_OBJ
                }
            })
            .collect();
        let slab = Slab {
            cache: index as u32,
            pfn,
            order,
            objects: objects16,
            inuse: 0,
            freelist: 0,
            next_free,
            allocated: vec![0u64; (objects as usize).div_ceil(64)].into_boxed_slice(),
            on_partial: false,
            links: Links::UNLINKED,
            buffers: self.source.page_buffers(&[pfn], order),
        };
        let id = self.slabs.insert(slab);
        for page in 0..order.nr_pages() {
            self.page_to_slab.insert(pfn.offset(page), id);
        }
        let cache = &mut self.caches[index];
        cache.nr_slabs += 1;
        cache.total_objects += u64::from(objects);
        cache.pages += order.nr_pages();
        cache.stats.alloc_slab += 1;
        Ok(id)
    }

    /// Returns an empty slab's pages (discard_slab()).
    fn discard_slab(&mut self, slab_id: u32) -> Result<(), SlabError> {
        let mut slab = self.slabs.remove(slab_id).expect("slab to discard");
        debug_assert_eq!(slab.inuse, 0);
        slab.buffers = None;
        for page in 0..slab.order.nr_pages() {
            self.page_to_slab.remove(&slab.pfn.offset(page));
        }
        let cache = &mut self.caches[slab.cache as usize];
        cache.nr_slabs -= 1;
        cache.total_objects -= u64::from(slab.objects);
        cache.pages -= slab.order.nr_pages();
        cache.stats.free_slab += 1;
        self.source
            .free_pages(slab.pfn, slab.order)
            .map_err(SlabError::PageFree)
    }

    fn add_partial(&mut self, index: usize, slab_id: u32, tail: bool) {
        let slab = self.slabs.get_mut(slab_id).expect("slab");
        debug_assert!(!slab.on_partial);
        slab.on_partial = true;
        let partial = &mut self.caches[index].partial;
        if tail {
            partial.push_back(&mut self.slabs, slab_id);
        } else {
            partial.push_front(&mut self.slabs, slab_id);
        }
    }

    fn remove_partial(&mut self, index: usize, slab_id: u32) {
        let slab = self.slabs.get_mut(slab_id).expect("slab");
        debug_assert!(slab.on_partial);
        slab.on_partial = false;
        self.caches[index].partial.remove(&mut self.slabs, slab_id);
    }

    /// The partial slabs of a cache, head first.
    fn partial_ids(&self, index: usize) -> Vec<u32> {
        self.caches[index].partial.ids(&self.slabs).collect()
    }

    /// Discards every empty slab of the cache and orders the partial list
    /// fullest first; returns the pages freed. Mirrors __kmem_cache_do_shrink().
    pub fn kmem_cache_shrink(&mut self, cache: CacheId) -> Result<u64, SlabError> {
        let index = cache.0 as usize;
        if index >= self.caches.len() {
            return Err(SlabError::NoSuchCache(cache.0));
        }
        let mut ids = self.partial_ids(index);
        for id in &ids {
            self.remove_partial(index, *id);
        }
        let mut freed = 0;
        let mut keep = Vec::new();
        for id in ids.drain(..) {
            let slab = self.slabs.get(id).expect("partial");
            if slab.inuse == 0 {
                freed += slab.order.nr_pages();
                self.discard_slab(id)?;
            } else {
                keep.push((slab.objects - slab.inuse, id));
            }
        }
        // Stable: equally free slabs keep their order.
        keep.sort_by_key(|(free, _)| *free);
        for (_, id) in keep {
            self.add_partial(index, id, true);
        }
        Ok(freed)
    }

    /// Shrinks every cache; returns the pages freed.
    pub fn shrink_all(&mut self) -> Result<u64, SlabError> {
        let mut freed = 0;
        for index in 0..self.caches.len() {
            freed += self.kmem_cache_shrink(CacheId(index as u32))?;
        }
        Ok(freed)
    }

    /// Allocates `size` bytes: from the smallest kmalloc cache that fits, or
    /// above `KMALLOC_MAX_CACHE_SIZE` straight from the page allocator
    /// (kmalloc_large()).
    pub fn kmalloc(&mut self, size: usize, gfp: Gfp) -> Result<ObjAddr, SlabError> {
        if size == 0 {
            return Err(SlabError::Invalid("kmalloc of 0 bytes".into()));
        }
        match kmalloc_index(size) {
            Some(index) => {
                let cache = self.kmalloc[index].expect("kmalloc caches exist");
                self.kmem_cache_alloc(cache, gfp)
            }
            None => {
                let order = get_order(size as u64, self.page_size());
                if order > self.params.max_page_order {
                    return Err(SlabError::Invalid(format!("kmalloc of {size} bytes")));
                }
                let pfn = self
                    .source
                    .alloc_pages(gfp | Gfp::COMP, Order(order))
                    .map_err(|source| SlabError::NoMemory {
                        cache: "kmalloc_large".into(),
                        source,
                    })?;
                self.large.insert(pfn, Order(order));
                Ok(pfn.0 << self.page_shift)
            }
        }
    }

    /// Frees a kmalloc'd object (kfree()).
    pub fn kfree(&mut self, addr: ObjAddr) -> Result<(), SlabError> {
        if addr & ((1 << self.page_shift) - 1) == 0 {
            let pfn = Pfn(addr >> self.page_shift);
            if let Some(order) = self.large.get(&pfn).copied() {
                self.large.remove(&pfn);
                return self
                    .source
                    .free_pages(pfn, order)
                    .map_err(SlabError::PageFree);
            }
        }
        let (slab_id, object) = self.locate(addr)?;
        self.free_located(slab_id, object)
    }

    /// The usable size of an allocated object (ksize()).
    pub fn ksize(&self, addr: ObjAddr) -> Result<usize, SlabError> {
        let (.., size) = self.object_block(addr)?;
        Ok(size)
    }

    /// The kmalloc cache `size` bytes go to, if any.
    pub fn kmalloc_cache(&self, size: usize) -> Option<CacheId> {
        kmalloc_index(size).and_then(|index| self.kmalloc[index])
    }

    /// (block head PFN, its slab (`None` for a kmalloc_large block), offset
    /// of the object in the block, usable size).
    fn object_block(&self, addr: ObjAddr) -> Result<(Pfn, Option<u32>, usize, usize), SlabError> {
        let pfn = Pfn(addr >> self.page_shift);
        if addr & ((1 << self.page_shift) - 1) == 0 {
            if let Some(order) = self.large.get(&pfn) {
                return Ok((pfn, None, 0, self.page_size() << order.0));
            }
        }
        let (slab_id, _) = self.locate(addr)?;
        let slab = self.slabs.get(slab_id).expect("located");
        let offset = (addr - (slab.pfn.0 << self.page_shift)) as usize;
        let size = self.caches[slab.cache as usize].size as usize;
        Ok((slab.pfn, Some(slab_id), offset, size))
    }

    /// Copies `data` into the object at `offset`, in the slab's pages.
    pub fn write(&mut self, addr: ObjAddr, offset: usize, data: &[u8]) -> Result<(), SlabError> {
        let (pfn, slab_id, start, size) = self.object_block(addr)?;
        check_object_span(offset, data.len(), size)?;
        let slab = slab_id.and_then(|id| self.slabs.get_mut(id));
        if let Some(buffers) = slab.and_then(|slab| slab.buffers.as_mut()) {
            // SAFETY: a slab holds its pages until discard_slab (or the
            // allocator's drop), which drops its buffers before freeing them.
            unsafe { buffers.write_run(start + offset, data) };
            return Ok(());
        }
        self.source.write(pfn, start + offset, data)?;
        Ok(())
    }

    /// Copies `out.len()` bytes of the object from `offset` into `out`.
    pub fn read(&self, addr: ObjAddr, offset: usize, out: &mut [u8]) -> Result<(), SlabError> {
        let (pfn, slab_id, start, size) = self.object_block(addr)?;
        check_object_span(offset, out.len(), size)?;
        let slab = slab_id.and_then(|id| self.slabs.get(id));
        if let Some(buffers) = slab.and_then(|slab| slab.buffers.as_ref()) {
            // SAFETY: as in `write`: the slab still holds its pages.
            unsafe { buffers.read_run(start + offset, out) };
            return Ok(());
        }
        self.source.read(pfn, start + offset, out)?;
        Ok(())
    }

    /// The slab an allocated object lives in: (cache, head PFN, objects in
    /// use, objects). `None` for anything else.
    pub fn slab_occupancy(&self, addr: ObjAddr) -> Option<(CacheId, Pfn, u32, u32)> {
        let (slab_id, _) = self.locate(addr).ok()?;
        let slab = self.slabs.get(slab_id)?;
        Some((
            CacheId(slab.cache),
            slab.pfn,
            u32::from(slab.inuse),
            u32::from(slab.objects),
        ))
    }
}

/// An error unless `len` bytes at `offset` lie in an object of `size`
/// bytes. Overflow-proof: `offset + len` is never computed, so an offset
/// near `usize::MAX` cannot wrap past the check into the next object.
fn check_object_span(offset: usize, len: usize, size: usize) -> Result<(), SlabError> {
    if offset > size || len > size - offset {
        return Err(SlabError::OutOfBounds { offset, len, size });
    }
    Ok(())
}

impl<P: PageSource> Drop for SlabAllocator<P> {
    /// Gives every slab and kmalloc_large block back to the page allocator
    /// (kmem_cache_destroy() of every cache, leaked objects included).
    fn drop(&mut self) {
        for mut slab in self.slabs.drain() {
            slab.buffers = None;
            let _ = self.source.free_pages(slab.pfn, slab.order);
        }
        for (pfn, order) in self.large.drain() {
            let _ = self.source.free_pages(pfn, order);
        }
    }
}
