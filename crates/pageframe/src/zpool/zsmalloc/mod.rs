//! zsmalloc as current Linux has it: objects of any size up to a page packed
//! into zspages (chains of order-0 pages) of 255 size classes.
//!
//! Owns: the size classes, the zspages and the handle table. Does not own:
//! the pages (a [`PageSource`]) nor their bytes, which live in the backing.
//! A zspage resolves its pages once, when it is made
//! ([`PageSource::page_buffers`]), and copies objects through those
//! buffers; its buffers are dropped before its pages are freed, so they
//! never outlive the pages. A zspage whose pages do not resolve (unmapped
//! pages, a source without the fast path) copies through the page source.
//!
//! Behaviour mirrors mm/zsmalloc.c:
//! - the handle size (8 B) is added to every request and the sum picks the
//!   class (zs_malloc()); classes are 16 B apart from 32 B to PAGE_SIZE;
//!   each class chains the number of pages (up to the chain size, default 8)
//!   that wastes least; neighbours with equal geometry merge ([`ClassTable`]);
//! - objects may span two pages; a non-huge object starts with its handle;
//!   huge classes (one object per page) keep the handle beside the page;
//! - zspages sit in fullness groups 0, 10, .., 90, 99, 100 % and allocation
//!   takes the fullest non-full one (find_get_zspage()); an emptied zspage
//!   is freed at once;
//! - zs_compact() moves objects from the sparsest zspages into the fullest
//!   of each class and frees the emptied ones.
//!
//! Handles index a handle table (the kernel's handle cache holds one word
//! per object); a generation in the upper half makes a stale handle an
//! error instead of a free of someone else's object.
//!
//! Invariants (checked by [`ZsPool::check_invariants`]): per class
//! `objs_allocated == objs_per_zspage × zspages`, `objs_inuse == Σ inuse`,
//! each zspage is in the list of its fullness group and the group counters
//! match the lists; per zspage `free list length + inuse == objs_per_zspage`;
//! each live handle points at an allocated object that points back at it;
//! `pages_allocated == Σ pages_per_zspage` over zspages.

mod class;
mod compact;
mod invariants;
mod stat;

pub use class::{ClassGeometry, ClassTable, DEFAULT_CHAIN_SIZE, ZS_HANDLE_SIZE};
pub use stat::zs_classes;

use std::cell::Cell;

use super::{Zpool, ZpoolHandle, ZpoolStats};
use crate::error::InvariantError;
use crate::gfp::Gfp;
use crate::page_source::{PageBuffers, PageSource};
use crate::slab::id_slots::IdSlots;
use crate::slab::index_list::{IndexList, Linked, Links, NIL};
use crate::types::{Order, Pfn};
use crate::zpool::ZpoolError;

/// Fullness groups: 0 %, 10 .. 90 %, 99 %, 100 % (`enum fullness_group`).
pub const NR_FULLNESS_GROUPS: usize = 12;
/// `ZS_INUSE_RATIO_0`.
pub const ZS_INUSE_RATIO_0: usize = 0;
/// `ZS_INUSE_RATIO_10`.
pub const ZS_INUSE_RATIO_10: usize = 1;
/// `ZS_INUSE_RATIO_99`.
pub const ZS_INUSE_RATIO_99: usize = 10;
/// `ZS_INUSE_RATIO_100`.
pub const ZS_INUSE_RATIO_100: usize = 11;

/// `OBJ_ALLOCATED_TAG` on an object's slot word.
const ALLOCATED: u32 = 1 << 31;
/// End of a zspage's free list (untagged, unlike `NIL`).
const FREE_END: u32 = ALLOCATED - 1;

/// Pool options. Defaults are the kernel's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZsConfig {
    /// `CONFIG_ZSMALLOC_CHAIN_SIZE`: most pages per zspage, 4..=16.
    pub chain_size: u32,
    /// GFP flags of zspage pages (zram: `GFP_NOIO | __GFP_HIGHMEM | __GFP_MOVABLE`).
    pub gfp: Gfp,
}

impl Default for ZsConfig {
    fn default() -> ZsConfig {
        ZsConfig {
            chain_size: DEFAULT_CHAIN_SIZE,
            gfp: (Gfp::KERNEL - Gfp::IO - Gfp::FS) | Gfp::HIGHMEM | Gfp::MOVABLE_BIT,
        }
    }
}

/// Per-class state (`struct size_class`).
#[derive(Clone, Debug, Default)]
struct ClassState {
    /// The zspages of each fullness group.
    lists: [IndexList; NR_FULLNESS_GROUPS],
    /// `ZS_OBJS_ALLOCATED`.
    objs_allocated: u64,
    /// `ZS_OBJS_INUSE`.
    objs_inuse: u64,
}

/// A zspage: a chain of order-0 pages of one class.
struct Zspage {
    class: u16,
    fullness: u8,
    inuse: u32,
    /// First free object, `FREE_END` when full.
    freeobj: u32,
    /// Its place on its fullness group's list.
    links: Links,
    pages: Box<[Pfn]>,
    /// The pages resolved for direct copies, if they could be; dropped
    /// before the pages are freed.
    buffers: Option<PageBuffers>,
    /// Per object: `ALLOCATED | handle slot` or the next free object.
    slots: Box<[u32]>,
}

/// One entry of the handle table.
#[derive(Clone, Copy, Debug)]
struct HandleEntry {
    /// zspage id.
    zspage: u32,
    obj_idx: u32,
    /// The size asked for (zram keeps it beside the handle; kept here for
    /// accounting).
    size: u32,
}

/// Counters of a pool (`struct zs_pool_stats` and friends).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ZsPoolStats {
    /// `pages_allocated`.
    pub pages_allocated: u64,
    /// `pages_compacted`.
    pub pages_compacted: u64,
    /// Live objects.
    pub objects: u64,
    /// Bytes asked for by live objects.
    pub stored_bytes: u64,
}

/// A zsmalloc pool.
pub struct ZsPool<P: PageSource> {
    source: P,
    config: ZsConfig,
    table: ClassTable,
    page_shift: u32,
    classes: Vec<ClassState>,
    zspages: IdSlots<Zspage>,
    /// The handle table: a handle names one life of one entry.
    handles: IdSlots<HandleEntry>,
    /// The handle mapped by [`ZsPool::zs_obj_read_begin`], until
    /// [`ZsPool::zs_obj_read_end`]: one mapping at a time (the one CPU's
    /// per-CPU area). A `Cell` because a read mapping takes `&self`.
    mapped: Cell<Option<ZpoolHandle>>,
    stats: ZsPoolStats,
    /// Scratch for compaction and spanning copies.
    scratch: Vec<u8>,
}

/// Where an object lives: the zspage's pages, the byte offset in the first
/// page it touches, and its page index.
struct ObjPlace {
    page_index: usize,
    offset: usize,
}

/// Bytes of an object split at a page boundary: (page index in the zspage,
/// offset in that page, length) for the first page and the second (length
/// 0 when the bytes lie in one page).
type ObjPieces = [(usize, usize, usize); 2];

impl<P: PageSource> ZsPool<P> {
    /// A pool (zs_create_pool()).
    pub fn new(source: P, config: ZsConfig) -> Result<ZsPool<P>, ZpoolError> {
        if !class::CHAIN_SIZE_RANGE.contains(&config.chain_size) {
            return Err(ZpoolError::Config(format!(
                "chain size {} is outside 4..=16",
                config.chain_size
            )));
        }
        let page_size = source.page_size();
        let table = ClassTable::new(page_size, config.chain_size as usize);
        let classes = vec![ClassState::default(); table.classes.len()];
        Ok(ZsPool {
            source,
            config,
            page_shift: page_size.trailing_zeros(),
            table,
            classes,
            zspages: IdSlots::default(),
            handles: IdSlots::default(),
            mapped: Cell::new(None),
            stats: ZsPoolStats::default(),
            scratch: vec![0; page_size],
        })
    }

    /// The class geometry.
    pub fn class_table(&self) -> &ClassTable {
        &self.table
    }

    /// The configuration.
    pub fn config(&self) -> ZsConfig {
        self.config
    }

    /// Counters.
    pub fn pool_stats(&self) -> ZsPoolStats {
        self.stats
    }

    /// The page source.
    pub fn source_mut(&mut self) -> &mut P {
        &mut self.source
    }

    /// `zs_huge_class_size()`.
    pub fn huge_class_size(&self) -> usize {
        self.table.huge_class_size
    }

    /// Pages held (`zs_get_total_pages()`).
    pub fn get_total_pages(&self) -> u64 {
        self.stats.pages_allocated
    }

    #[inline]
    fn page_size(&self) -> usize {
        1 << self.page_shift
    }

    /// Bytes a caller may store in an object of class `index`.
    #[inline]
    fn capacity(&self, index: usize) -> usize {
        let size = self.table.classes[index].size;
        if self.table.is_huge(index) {
            size
        } else {
            size - ZS_HANDLE_SIZE
        }
    }

    /// Allocates an object of `size` bytes (zs_malloc()).
    pub fn zs_malloc(&mut self, size: usize) -> Result<ZpoolHandle, ZpoolError> {
        if size == 0 || size > self.page_size() {
            return Err(ZpoolError::InvalidSize {
                size,
                max: self.page_size(),
            });
        }
        let index =
            self.table.classes[self.table.size_class_index(size + ZS_HANDLE_SIZE)].merged_into;
        let mut zspage_id = self.find_get_zspage(index);
        let fresh = zspage_id == NIL;
        if fresh {
            zspage_id = self.alloc_zspage(index)?;
        }
        // The object's first word is its handle; written before anything
        // is committed, so a failing write changes nothing.
        let handle = self.handles.next_handle();
        let obj_idx = self.zspages.get(zspage_id).expect("zspage").freeobj;
        if !self.table.is_huge(index) {
            if let Err(err) = self.write_obj_bytes(zspage_id, obj_idx, 0, &handle.to_le_bytes()) {
                if fresh {
                    self.free_zspage(zspage_id)?;
                }
                return Err(err);
            }
        }
        let slot = self.handles.insert(HandleEntry {
            zspage: zspage_id,
            obj_idx,
            size: size as u32,
        });
        debug_assert_eq!(self.handles.handle(slot), handle);
        let allocated = self.obj_malloc(zspage_id, slot);
        debug_assert_eq!(allocated, obj_idx);
        self.fix_fullness_group(zspage_id);
        self.stats.objects += 1;
        self.stats.stored_bytes += size as u64;
        Ok(handle)
    }

    /// Frees an object (zs_free()). A handle that is not live is an error.
    pub fn zs_free(&mut self, handle: ZpoolHandle) -> Result<(), ZpoolError> {
        let slot = self.handle_slot(handle)?;
        let entry = self.handles.remove(slot).expect("live handle");
        if self.mapped.get() == Some(handle) {
            self.mapped.set(None);
        }
        self.obj_free(entry.zspage, entry.obj_idx);
        let zspage_id = entry.zspage;
        self.stats.objects -= 1;
        self.stats.stored_bytes -= u64::from(entry.size);
        if self.fix_fullness_group(zspage_id) == ZS_INUSE_RATIO_0 {
            self.free_zspage(zspage_id)?;
        }
        Ok(())
    }

    /// Validates a handle; returns its table slot.
    #[inline]
    fn handle_slot(&self, handle: ZpoolHandle) -> Result<u32, ZpoolError> {
        self.handles
            .id_of(handle)
            .ok_or(ZpoolError::InvalidHandle(handle))
    }

    /// The entry of a live handle slot.
    #[inline]
    fn entry(&self, slot: u32) -> HandleEntry {
        *self.handles.get(slot).expect("live handle")
    }

    /// The fullest non-full zspage of the class (find_get_zspage()).
    #[inline]
    fn find_get_zspage(&self, index: usize) -> u32 {
        let lists = &self.classes[index].lists;
        (ZS_INUSE_RATIO_0..=ZS_INUSE_RATIO_99)
            .rev()
            .map(|group| lists[group].head())
            .find(|head| *head != NIL)
            .unwrap_or(NIL)
    }

    /// Allocates a zspage of order-0 pages, all or none (alloc_zspage()).
    fn alloc_zspage(&mut self, index: usize) -> Result<u32, ZpoolError> {
        let geometry = self.table.classes[index];
        let mut pages = Vec::with_capacity(geometry.pages_per_zspage);
        for _ in 0..geometry.pages_per_zspage {
            match self.source.alloc_pages(self.config.gfp, Order(0)) {
                Ok(pfn) => pages.push(pfn),
                Err(err) => {
                    for pfn in pages {
                        self.source
                            .free_pages(pfn, Order(0))
                            .map_err(ZpoolError::PageFree)?;
                    }
                    return Err(ZpoolError::NoMemory(err));
                }
            }
        }
        // init_zspage(): every object free, linked in address order.
        let objs = geometry.objs_per_zspage as u32;
        let slots: Box<[u32]> = (0..objs)
            .map(|obj| if obj + 1 < objs { obj + 1 } else { FREE_END })
            .collect();
        let buffers = self.source.page_buffers(&pages, Order(0));
        let zspage = Zspage {
            class: index as u16,
            fullness: ZS_INUSE_RATIO_0 as u8,
            inuse: 0,
            freeobj: 0,
            links: Links::UNLINKED,
            pages: pages.into_boxed_slice(),
            buffers,
            slots,
        };
        let id = self.zspages.insert(zspage);
        self.insert_zspage(id, ZS_INUSE_RATIO_0);
        self.classes[index].objs_allocated += u64::from(objs);
        self.stats.pages_allocated += geometry.pages_per_zspage as u64;
        Ok(id)
    }

    /// Frees an empty zspage's pages (free_zspage()).
    fn free_zspage(&mut self, id: u32) -> Result<(), ZpoolError> {
        self.remove_zspage(id);
        let mut zspage = self.zspages.remove(id).expect("zspage to free");
        debug_assert_eq!(zspage.inuse, 0);
        zspage.buffers = None;
        let index = usize::from(zspage.class);
        let geometry = self.table.classes[index];
        self.classes[index].objs_allocated -= geometry.objs_per_zspage as u64;
        self.stats.pages_allocated -= geometry.pages_per_zspage as u64;
        for pfn in zspage.pages.iter() {
            self.source
                .free_pages(*pfn, Order(0))
                .map_err(ZpoolError::PageFree)?;
        }
        Ok(())
    }

    /// Takes the first free object of a zspage for handle `slot` (obj_malloc()).
    #[inline]
    fn obj_malloc(&mut self, zspage_id: u32, slot: u32) -> u32 {
        let zspage = self.zspages.get_mut(zspage_id).expect("zspage");
        let obj = zspage.freeobj;
        debug_assert_ne!(obj, FREE_END);
        zspage.freeobj = zspage.slots[obj as usize];
        zspage.slots[obj as usize] = ALLOCATED | slot;
        zspage.inuse += 1;
        let index = usize::from(zspage.class);
        self.classes[index].objs_inuse += 1;
        obj
    }

    /// Returns an object to its zspage's free list (obj_free()).
    #[inline]
    fn obj_free(&mut self, zspage_id: u32, obj: u32) {
        let zspage = self.zspages.get_mut(zspage_id).expect("zspage");
        zspage.slots[obj as usize] = zspage.freeobj;
        zspage.freeobj = obj;
        zspage.inuse -= 1;
        let index = usize::from(zspage.class);
        self.classes[index].objs_inuse -= 1;
    }

    /// The fullness group of a zspage (get_fullness_group()).
    #[inline]
    fn fullness_group(&self, zspage: &Zspage) -> usize {
        let objs = self.table.classes[usize::from(zspage.class)].objs_per_zspage as u32;
        if zspage.inuse == 0 {
            ZS_INUSE_RATIO_0
        } else if zspage.inuse == objs {
            ZS_INUSE_RATIO_100
        } else {
            // Integer division would put 1 of 127 at 0 %; it belongs in 10 %.
            (100 * zspage.inuse / objs) as usize / 10 + 1
        }
    }

    /// Moves a zspage to the list of its current group (fix_fullness_group()).
    #[inline]
    fn fix_fullness_group(&mut self, id: u32) -> usize {
        let zspage = self.zspages.get(id).expect("zspage");
        let group = self.fullness_group(zspage);
        if group != usize::from(zspage.fullness) {
            self.remove_zspage(id);
            self.insert_zspage(id, group);
        }
        group
    }

    /// Adds a zspage at the head of its group's list (insert_zspage()).
    fn insert_zspage(&mut self, id: u32, group: usize) {
        let zspage = self.zspages.get_mut(id).expect("zspage");
        zspage.fullness = group as u8;
        let class = usize::from(zspage.class);
        self.classes[class].lists[group].push_front(&mut self.zspages, id);
    }

    /// Takes a zspage off its group's list (remove_zspage()).
    fn remove_zspage(&mut self, id: u32) {
        let zspage = self.zspages.get(id).expect("zspage");
        let (class, group) = (usize::from(zspage.class), usize::from(zspage.fullness));
        self.classes[class].lists[group].remove(&mut self.zspages, id);
    }

    /// Where object `obj` of a zspage of class `index` starts.
    #[inline]
    fn place(&self, index: usize, obj: u32) -> ObjPlace {
        let offset = obj as usize * self.table.classes[index].size;
        ObjPlace {
            page_index: offset >> self.page_shift,
            offset: offset & (self.page_size() - 1),
        }
    }

    /// The pieces of bytes `at..at + len` of object `obj` of a zspage, split
    /// at the page boundary when the object spans two pages. The bytes lie
    /// inside the object (its callers check them against the class size),
    /// so every piece lies inside one of the zspage's pages.
    #[inline]
    fn obj_pieces(&self, zspage: &Zspage, obj: u32, at: usize, len: usize) -> ObjPieces {
        let place = self.place(usize::from(zspage.class), obj);
        let start = place.offset + at;
        let page_size = self.page_size();
        let (page_index, start) = (place.page_index + start / page_size, start % page_size);
        let first_len = len.min(page_size - start);
        let rest = len - first_len;
        debug_assert!(page_index < zspage.pages.len());
        debug_assert!(rest == 0 || page_index + 1 < zspage.pages.len());
        [(page_index, start, first_len), (page_index + 1, 0, rest)]
    }

    /// Writes `data` at byte `at` of an object, splitting it over two pages
    /// when the object spans them. The only writer of object bytes.
    #[inline]
    fn write_obj_bytes(
        &mut self,
        zspage_id: u32,
        obj: u32,
        at: usize,
        data: &[u8],
    ) -> Result<(), ZpoolError> {
        let zspage = self.zspages.get(zspage_id).expect("zspage");
        let [(first, start, first_len), (second, _, rest)] =
            self.obj_pieces(zspage, obj, at, data.len());
        let zspage = self.zspages.get_mut(zspage_id).expect("zspage");
        if let Some(buffers) = zspage.buffers.as_mut() {
            // SAFETY: the zspage holds its pages until free_zspage (or the
            // pool's drop), which drops the buffers before freeing them.
            unsafe {
                buffers.write(first, start, &data[..first_len]);
                if rest > 0 {
                    buffers.write(second, 0, &data[first_len..]);
                }
            }
            return Ok(());
        }
        self.source
            .write(zspage.pages[first], start, &data[..first_len])?;
        if rest > 0 {
            self.source
                .write(zspage.pages[second], 0, &data[first_len..])?;
        }
        Ok(())
    }

    /// Reads bytes at `at` of an object into `out`, joining two pages when
    /// the object spans them. The only reader of object bytes.
    #[inline]
    fn read_obj_bytes(
        &self,
        zspage_id: u32,
        obj: u32,
        at: usize,
        out: &mut [u8],
    ) -> Result<(), ZpoolError> {
        let zspage = self.zspages.get(zspage_id).expect("zspage");
        let [(first, start, first_len), (second, _, rest)] =
            self.obj_pieces(zspage, obj, at, out.len());
        if let Some(buffers) = zspage.buffers.as_ref() {
            // SAFETY: as in `write_obj_bytes`: the zspage still holds its pages.
            unsafe {
                buffers.read(first, start, &mut out[..first_len]);
                if rest > 0 {
                    buffers.read(second, 0, &mut out[first_len..]);
                }
            }
            return Ok(());
        }
        self.source
            .read(zspage.pages[first], start, &mut out[..first_len])?;
        if rest > 0 {
            self.source
                .read(zspage.pages[second], 0, &mut out[first_len..])?;
        }
        Ok(())
    }

    /// Writes `data` to the start of the object (zs_obj_write()).
    pub fn zs_obj_write(&mut self, handle: ZpoolHandle, data: &[u8]) -> Result<(), ZpoolError> {
        let (zspage, obj_idx, header) = self.object_bytes_at(handle, data.len())?;
        self.write_obj_bytes(zspage, obj_idx, header, data)
    }

    /// Where the bytes of a live object start (zspage, object index, header
    /// bytes to skip), after checking that `len` bytes fit its class.
    fn object_bytes_at(
        &self,
        handle: ZpoolHandle,
        len: usize,
    ) -> Result<(u32, u32, usize), ZpoolError> {
        let slot = self.handle_slot(handle)?;
        let entry = self.entry(slot);
        let index = usize::from(self.zspages.get(entry.zspage).expect("zspage").class);
        let capacity = self.capacity(index);
        if len > capacity {
            return Err(ZpoolError::OutOfBounds { len, capacity });
        }
        let header = if self.table.is_huge(index) {
            0
        } else {
            ZS_HANDLE_SIZE
        };
        Ok((entry.zspage, entry.obj_idx, header))
    }

    /// Maps an object for reading (zs_obj_read_begin()): its bytes copied
    /// into `local_copy` (at least the class size long; a page always
    /// fits), whether it lies in one page or spans two, as page contents are
    /// only ever copied out of the backing. The view is the object's whole
    /// capacity; the caller takes the prefix it stored. One mapping at a
    /// time: a second begin before [`Self::zs_obj_read_end`] is
    /// `AlreadyMapped` and changes nothing.
    pub fn zs_obj_read_begin<'a>(
        &self,
        handle: ZpoolHandle,
        local_copy: &'a mut [u8],
    ) -> Result<&'a [u8], ZpoolError> {
        let slot = self.handle_slot(handle)?;
        if let Some(mapped) = self.mapped.get() {
            return Err(ZpoolError::AlreadyMapped(mapped));
        }
        let entry = self.entry(slot);
        let zspage = self.zspages.get(entry.zspage).expect("zspage");
        let index = usize::from(zspage.class);
        let size = self.table.classes[index].size;
        let header = if self.table.is_huge(index) {
            0
        } else {
            ZS_HANDLE_SIZE
        };
        if local_copy.len() < size {
            return Err(ZpoolError::OutOfBounds {
                len: size,
                capacity: local_copy.len(),
            });
        }
        self.read_obj_bytes(entry.zspage, entry.obj_idx, 0, &mut local_copy[..size])?;
        self.mapped.set(Some(handle));
        Ok(&local_copy[header..size])
    }

    /// Ends the read mapping of `handle` (zs_obj_read_end()); `NotMapped`
    /// when `handle` is not the mapped one.
    pub fn zs_obj_read_end(&self, handle: ZpoolHandle) -> Result<(), ZpoolError> {
        self.handle_slot(handle)?;
        if self.mapped.get() != Some(handle) {
            return Err(ZpoolError::NotMapped(handle));
        }
        self.mapped.set(None);
        Ok(())
    }

    /// Per-class figures for the `classes` view.
    pub(crate) fn class_rows(&self) -> impl Iterator<Item = stat::ClassRow> + '_ {
        (0..self.table.classes.len())
            .filter(|index| self.table.classes[*index].merged_into == *index)
            .map(|index| {
                let geometry = self.table.classes[index];
                let state = &self.classes[index];
                stat::ClassRow {
                    index,
                    size: geometry.size,
                    groups: state.lists.map(|list| u64::from(list.len())),
                    obj_allocated: state.objs_allocated,
                    obj_used: state.objs_inuse,
                    pages_used: state.objs_allocated / geometry.objs_per_zspage as u64
                        * geometry.pages_per_zspage as u64,
                    pages_per_zspage: geometry.pages_per_zspage,
                    freeable: self.zs_can_compact(index),
                }
            })
    }
}

impl Linked for Zspage {
    fn links(&self) -> &Links {
        &self.links
    }
    fn links_mut(&mut self) -> &mut Links {
        &mut self.links
    }
}

impl<P: PageSource> Zpool for ZsPool<P> {
    fn name(&self) -> &'static str {
        "zsmalloc"
    }

    fn max_size(&self) -> usize {
        self.page_size()
    }

    fn huge_class_size(&self) -> usize {
        self.table.huge_class_size
    }

    fn malloc(&mut self, size: usize) -> Result<ZpoolHandle, ZpoolError> {
        self.zs_malloc(size)
    }

    fn free(&mut self, handle: ZpoolHandle) -> Result<(), ZpoolError> {
        self.zs_free(handle)
    }

    fn write(&mut self, handle: ZpoolHandle, data: &[u8]) -> Result<(), ZpoolError> {
        self.zs_obj_write(handle, data)
    }

    fn read(&self, handle: ZpoolHandle, out: &mut [u8]) -> Result<(), ZpoolError> {
        let (zspage, obj_idx, header) = self.object_bytes_at(handle, out.len())?;
        self.read_obj_bytes(zspage, obj_idx, header, out)
    }

    fn compact(&mut self) -> Result<u64, ZpoolError> {
        self.zs_compact()
    }

    fn total_pages(&self) -> u64 {
        self.stats.pages_allocated
    }

    fn stats(&self) -> ZpoolStats {
        let used = self.stats.pages_allocated * self.page_size() as u64;
        ZpoolStats {
            objects: self.stats.objects,
            stored_bytes: self.stats.stored_bytes,
            used_pages: self.stats.pages_allocated,
            real_overhead_bytes: used.saturating_sub(self.stats.stored_bytes),
            pages_compacted: self.stats.pages_compacted,
        }
    }

    fn check_invariants(&self) -> Result<(), InvariantError> {
        ZsPool::check_invariants(self)
    }
}

impl<P: PageSource> Drop for ZsPool<P> {
    /// Gives every zspage's pages back (zs_destroy_pool()).
    fn drop(&mut self) {
        for mut zspage in self.zspages.drain() {
            zspage.buffers = None;
            for pfn in zspage.pages.iter() {
                let _ = self.source.free_pages(*pfn, Order(0));
            }
        }
    }
}
