//! zsmalloc as current Linux has it: objects of any size up to a page packed
//! into zspages (chains of order-0 pages) of 255 size classes.
//!
//! Owns: the size classes, the zspages, the handle table and the bytes of
//! its pages ([`PageData`]). Does not own: the pages (a [`PageSource`]).
//!
//! Behaviour mirrors mm/zsmalloc.c:
//! - the handle size (8 B) is added to every request and the sum picks the
//!   class (zs_malloc()); classes are 16 B apart from 32 B to PAGE_SIZE;
//!   each class chains the number of pages (up to the chain size, default 8)
//!   that wastes least; neighbours with equal geometry merge ([`class`]);
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

pub mod class;
mod compact;
mod invariants;
mod stat;

pub use class::{ClassGeometry, ClassTable, DEFAULT_CHAIN_SIZE, ZS_HANDLE_SIZE};
pub use stat::zs_classes;

use super::{Zpool, ZpoolHandle, ZpoolStats};
use crate::error::{InvariantError, ZpoolError};
use crate::gfp::Gfp;
use crate::page_source::{BlockId, PageData, PageSource};
use crate::types::{Order, Pfn};

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

const NIL: u32 = u32::MAX;
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
    /// Head zspage of each fullness list.
    heads: [u32; NR_FULLNESS_GROUPS],
    /// Zspages per fullness group.
    groups: [u64; NR_FULLNESS_GROUPS],
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
    prev: u32,
    next: u32,
    pages: Box<[Pfn]>,
    /// The pages' simulated contents, page by page.
    blocks: Box<[BlockId]>,
    /// Per object: `ALLOCATED | handle slot` or the next free object.
    slots: Box<[u32]>,
}

/// One entry of the handle table.
#[derive(Clone, Copy)]
struct HandleEntry {
    generation: u32,
    /// zspage id, or NIL when the entry is free.
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
    zspages: Vec<Option<Zspage>>,
    free_zspage_ids: Vec<u32>,
    handles: Vec<HandleEntry>,
    free_handles: Vec<u32>,
    data: PageData,
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
        let classes = vec![ClassState::default_with_nil(); table.classes.len()];
        Ok(ZsPool {
            source,
            config,
            page_shift: page_size.trailing_zeros(),
            table,
            classes,
            zspages: Vec::new(),
            free_zspage_ids: Vec::new(),
            handles: Vec::new(),
            free_handles: Vec::new(),
            data: PageData::new(page_size),
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
        if zspage_id == NIL {
            zspage_id = self.alloc_zspage(index)?;
        }
        let slot = self.cache_alloc_handle();
        let obj_idx = self.obj_malloc(zspage_id, slot);
        let entry = &mut self.handles[slot as usize];
        entry.zspage = zspage_id;
        entry.obj_idx = obj_idx;
        entry.size = size as u32;
        let handle = (u64::from(entry.generation) << 32) | u64::from(slot + 1);
        if !self.table.is_huge(index) {
            self.write_obj_bytes(zspage_id, obj_idx, 0, &handle.to_le_bytes());
        }
        self.fix_fullness_group(zspage_id);
        self.stats.objects += 1;
        self.stats.stored_bytes += size as u64;
        Ok(handle)
    }

    /// Frees an object (zs_free()). A handle that is not live is an error.
    pub fn zs_free(&mut self, handle: ZpoolHandle) -> Result<(), ZpoolError> {
        let slot = self.handle_slot(handle)?;
        let entry = self.handles[slot];
        self.obj_free(entry.zspage, entry.obj_idx);
        let zspage_id = entry.zspage;
        if self.fix_fullness_group(zspage_id) == ZS_INUSE_RATIO_0 {
            self.free_zspage(zspage_id)?;
        }
        let entry = &mut self.handles[slot];
        entry.zspage = NIL;
        entry.generation = entry.generation.wrapping_add(1);
        self.free_handles.push(slot as u32);
        self.stats.objects -= 1;
        self.stats.stored_bytes -= u64::from(entry.size);
        Ok(())
    }

    /// Validates a handle; returns its table slot.
    #[inline]
    fn handle_slot(&self, handle: ZpoolHandle) -> Result<usize, ZpoolError> {
        let low = (handle & 0xffff_ffff) as usize;
        if low == 0 || low > self.handles.len() {
            return Err(ZpoolError::InvalidHandle(handle));
        }
        let entry = &self.handles[low - 1];
        if entry.zspage == NIL || u64::from(entry.generation) != handle >> 32 {
            return Err(ZpoolError::InvalidHandle(handle));
        }
        Ok(low - 1)
    }

    fn cache_alloc_handle(&mut self) -> u32 {
        match self.free_handles.pop() {
            Some(slot) => slot,
            None => {
                self.handles.push(HandleEntry {
                    generation: 1,
                    zspage: NIL,
                    obj_idx: 0,
                    size: 0,
                });
                (self.handles.len() - 1) as u32
            }
        }
    }

    /// The fullest non-full zspage of the class (find_get_zspage()).
    #[inline]
    fn find_get_zspage(&self, index: usize) -> u32 {
        let heads = &self.classes[index].heads;
        (ZS_INUSE_RATIO_0..=ZS_INUSE_RATIO_99)
            .rev()
            .map(|group| heads[group])
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
        let blocks: Box<[BlockId]> = pages
            .iter()
            .map(|pfn| self.data.attach(*pfn, Order(0)))
            .collect();
        let objs = geometry.objs_per_zspage as u32;
        let slots: Box<[u32]> = (0..objs)
            .map(|obj| if obj + 1 < objs { obj + 1 } else { FREE_END })
            .collect();
        let zspage = Zspage {
            class: index as u16,
            fullness: ZS_INUSE_RATIO_0 as u8,
            inuse: 0,
            freeobj: 0,
            prev: NIL,
            next: NIL,
            pages: pages.into_boxed_slice(),
            blocks,
            slots,
        };
        let id = match self.free_zspage_ids.pop() {
            Some(id) => {
                self.zspages[id as usize] = Some(zspage);
                id
            }
            None => {
                self.zspages.push(Some(zspage));
                (self.zspages.len() - 1) as u32
            }
        };
        self.insert_zspage(id, ZS_INUSE_RATIO_0);
        self.classes[index].objs_allocated += u64::from(objs);
        self.stats.pages_allocated += geometry.pages_per_zspage as u64;
        Ok(id)
    }

    /// Frees an empty zspage's pages (free_zspage()).
    fn free_zspage(&mut self, id: u32) -> Result<(), ZpoolError> {
        self.remove_zspage(id);
        let zspage = self.zspages[id as usize].take().expect("zspage to free");
        debug_assert_eq!(zspage.inuse, 0);
        self.free_zspage_ids.push(id);
        let index = usize::from(zspage.class);
        let geometry = self.table.classes[index];
        self.classes[index].objs_allocated -= geometry.objs_per_zspage as u64;
        self.stats.pages_allocated -= geometry.pages_per_zspage as u64;
        for pfn in zspage.pages.iter() {
            self.data.detach(*pfn);
            self.source
                .free_pages(*pfn, Order(0))
                .map_err(ZpoolError::PageFree)?;
        }
        Ok(())
    }

    /// Takes the first free object of a zspage for handle `slot` (obj_malloc()).
    #[inline]
    fn obj_malloc(&mut self, zspage_id: u32, slot: u32) -> u32 {
        let zspage = self.zspages[zspage_id as usize].as_mut().expect("zspage");
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
        let zspage = self.zspages[zspage_id as usize].as_mut().expect("zspage");
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
        let zspage = self.zspages[id as usize].as_ref().expect("zspage");
        let group = self.fullness_group(zspage);
        if group != usize::from(zspage.fullness) {
            self.remove_zspage(id);
            self.insert_zspage(id, group);
        }
        group
    }

    /// Adds a zspage at the head of its group's list (insert_zspage()).
    fn insert_zspage(&mut self, id: u32, group: usize) {
        let class = usize::from(self.zspages[id as usize].as_ref().expect("zspage").class);
        let head = self.classes[class].heads[group];
        if head != NIL {
            self.zspages[head as usize].as_mut().expect("head").prev = id;
        }
        let zspage = self.zspages[id as usize].as_mut().expect("zspage");
        zspage.prev = NIL;
        zspage.next = head;
        zspage.fullness = group as u8;
        let state = &mut self.classes[class];
        state.heads[group] = id;
        state.groups[group] += 1;
    }

    /// Takes a zspage off its group's list (remove_zspage()).
    fn remove_zspage(&mut self, id: u32) {
        let zspage = self.zspages[id as usize].as_mut().expect("zspage");
        let (prev, next, class, group) = (
            zspage.prev,
            zspage.next,
            usize::from(zspage.class),
            usize::from(zspage.fullness),
        );
        zspage.prev = NIL;
        zspage.next = NIL;
        if prev != NIL {
            self.zspages[prev as usize].as_mut().expect("prev").next = next;
        } else {
            self.classes[class].heads[group] = next;
        }
        if next != NIL {
            self.zspages[next as usize].as_mut().expect("next").prev = prev;
        }
        self.classes[class].groups[group] -= 1;
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

    /// Writes `data` at byte `at` of an object, splitting it over two pages
    /// when the object spans them. The only writer of object bytes.
    #[inline]
    fn write_obj_bytes(&mut self, zspage_id: u32, obj: u32, at: usize, data: &[u8]) {
        let zspage = self.zspages[zspage_id as usize].as_ref().expect("zspage");
        let place = self.place(usize::from(zspage.class), obj);
        let start = place.offset + at;
        let page_size = self.page_size();
        let (page_index, start) = (place.page_index + start / page_size, start % page_size);
        let first_len = data.len().min(page_size - start);
        let first = zspage.blocks[page_index];
        let second = zspage.blocks.get(page_index + 1).copied();
        self.data.bytes_mut(first)[start..start + first_len].copy_from_slice(&data[..first_len]);
        if first_len < data.len() {
            let second = second.expect("a spanning object has a next page");
            self.data.bytes_mut(second)[..data.len() - first_len]
                .copy_from_slice(&data[first_len..]);
        }
    }

    /// Reads bytes at `at` of an object into `out`, joining two pages when
    /// the object spans them. The only reader of object bytes.
    #[inline]
    fn read_obj_bytes(&self, zspage_id: u32, obj: u32, at: usize, out: &mut [u8]) {
        let zspage = self.zspages[zspage_id as usize].as_ref().expect("zspage");
        let place = self.place(usize::from(zspage.class), obj);
        let start = place.offset + at;
        let page_size = self.page_size();
        let (page_index, start) = (place.page_index + start / page_size, start % page_size);
        let first_len = out.len().min(page_size - start);
        let rest = out.len() - first_len;
        out[..first_len]
            .copy_from_slice(&self.data.bytes(zspage.blocks[page_index])[start..start + first_len]);
        if rest > 0 {
            out[first_len..]
                .copy_from_slice(&self.data.bytes(zspage.blocks[page_index + 1])[..rest]);
        }
    }

    /// Writes `data` to the start of the object (zs_obj_write()).
    pub fn zs_obj_write(&mut self, handle: ZpoolHandle, data: &[u8]) -> Result<(), ZpoolError> {
        let (zspage, obj_idx, header) = self.object_bytes_at(handle, data.len())?;
        self.write_obj_bytes(zspage, obj_idx, header, data);
        Ok(())
    }

    /// Where the bytes of a live object start (zspage, object index, header
    /// bytes to skip), after checking that `len` bytes fit its class.
    fn object_bytes_at(
        &self,
        handle: ZpoolHandle,
        len: usize,
    ) -> Result<(u32, u32, usize), ZpoolError> {
        let slot = self.handle_slot(handle)?;
        let entry = self.handles[slot];
        let index = usize::from(
            self.zspages[entry.zspage as usize]
                .as_ref()
                .expect("zspage")
                .class,
        );
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

    /// Maps an object for reading (zs_obj_read_begin()): a view of the
    /// page's bytes when the object lies in one page, else its bytes copied
    /// into `local_copy` (at least a page long). The view is the object's
    /// whole capacity; the caller takes the prefix it stored.
    pub fn zs_obj_read_begin<'a>(
        &'a self,
        handle: ZpoolHandle,
        local_copy: &'a mut [u8],
    ) -> Result<&'a [u8], ZpoolError> {
        let slot = self.handle_slot(handle)?;
        let entry = self.handles[slot];
        let zspage = self.zspages[entry.zspage as usize]
            .as_ref()
            .expect("zspage");
        let index = usize::from(zspage.class);
        let size = self.table.classes[index].size;
        let header = if self.table.is_huge(index) {
            0
        } else {
            ZS_HANDLE_SIZE
        };
        let place = self.place(index, entry.obj_idx);
        if place.offset + size <= self.page_size() {
            let bytes = self.data.bytes(zspage.blocks[place.page_index]);
            return Ok(&bytes[place.offset + header..place.offset + size]);
        }
        if local_copy.len() < size {
            return Err(ZpoolError::OutOfBounds {
                len: size,
                capacity: local_copy.len(),
            });
        }
        self.read_obj_bytes(entry.zspage, entry.obj_idx, 0, &mut local_copy[..size]);
        Ok(&local_copy[header..size])
    }

    /// Ends a read mapping (zs_obj_read_end()); nothing to undo here, but the
    /// handle is checked so that a pairing bug shows up.
    pub fn zs_obj_read_end(&self, handle: ZpoolHandle) -> Result<(), ZpoolError> {
        self.handle_slot(handle).map(|_| ())
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
                    groups: state.groups,
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

impl ClassState {
    fn default_with_nil() -> ClassState {
        ClassState {
            heads: [NIL; NR_FULLNESS_GROUPS],
            ..ClassState::default()
        }
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
        self.read_obj_bytes(zspage, obj_idx, header, out);
        Ok(())
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
        for zspage in self.zspages.drain(..).flatten() {
            for pfn in zspage.pages.iter() {
                let _ = self.source.free_pages(*pfn, Order(0));
            }
        }
    }
}
