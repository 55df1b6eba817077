//! zram: a compressed page store over any [`Zpool`] — a device of
//! `nr_slots` page-sized slots with write, read and discard, as
//! drivers/block/zram/zram_drv.c has it for whole-page I/O.
//!
//! Owns: the slot table (per slot: empty, a "same page" element, or a pool
//! handle with its stored size and the huge flag), the compression stream,
//! the device statistics (`mm_stat`, `io_stat`) and the pool. Does not own:
//! the pool's pages (its [`crate::page_source::PageSource`]).
//!
//! Behaviour mirrors zram_drv.c (6.1):
//! - a page filled with one repeated machine word is a "same page": the
//!   word is kept in the slot, nothing is allocated (page_same_filled());
//! - otherwise the page is compressed; a compressed size at or above the
//!   pool's [`Zpool::huge_class_size`] is stored uncompressed as a whole page
//!   and counted in `huge_pages` (__zram_bvec_write());
//! - the memory limit is checked after the allocation, against the pool's
//!   total pages: over it, the new object is freed, the write fails with
//!   ENOMEM and the slot keeps what it had (__zram_bvec_write());
//! - `mem_used_max` follows the pool's pages after every allocation
//!   (update_used_max()); a discard frees the slot's object
//!   (zram_free_page()) and counts in `notify_free`.
//!
//! Invariants (checked by [`Zram::check_invariants`]):
//! `pages_stored == same_pages + Σ stored slots`;
//! `compr_data_size == Σ size of stored slots`;
//! `huge_pages == stored slots with the huge flag`;
//! `pool objects == stored slots`; the pool's own invariants hold; the
//! stored-slot index marks exactly the slots that are not empty.
//!
//! Locking: none; `&mut self` (the kernel's per-slot bit lock is the
//! caller's business when a device is shared, e.g. a `Mutex<Zram>`).
//!
//! ```
//! use pageframe::page_source::CpuPages;
//! use pageframe::zram::{Backend, Zram, ZramConfig};
//! use pageframe::{CpuId, LocalPageAllocator, MachineDesc};
//!
//! let allocator = LocalPageAllocator::boot(&MachineDesc::uniform(64 << 20, 1, 1)?)?;
//! let pool = Backend::Afmalloc.create(CpuPages::new(allocator.cpu(CpuId(0))?))?;
//! let mut zram = Zram::new(pool, ZramConfig::new(16))?;
//! let page: Vec<u8> = b"compressible ".iter().copied().cycle().take(4096).collect();
//! zram.write(3, &page)?;
//! let mut back = vec![0; 4096];
//! zram.read(3, &mut back)?;
//! assert_eq!(back, page);
//! assert!(zram.mm_stat().compr_data_size < 4096);
//! zram.check_invariants()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod compress;
mod invariants;
mod stored_slots;

pub use compress::Compressor;

use crate::error::Errno;
use crate::page_source::PageSource;
use crate::slab::SlabParams;
use crate::zpool::afmalloc::{AfConfig, AfPool};
use crate::zpool::zsmalloc::{ZsConfig, ZsPool};
use crate::zpool::ZpoolError;
use crate::zpool::{Zpool, ZpoolHandle};
use compress::Stream;
use std::marker::PhantomData;
use stored_slots::StoredSlots;
use thiserror::Error;

/// Why a zram operation failed. Nothing changed on any error.
#[derive(Debug, Error)]
pub enum ZramError {
    /// The slot is past the end of the device (the kernel's invalid_io).
    #[error("slot {slot} is outside the device of {nr_slots} slots")]
    BadSlot {
        /// The slot asked for.
        slot: usize,
        /// Slots in the device.
        nr_slots: usize,
    },
    /// A page buffer that is not exactly one page.
    #[error("a page is {page_size} bytes, got {len}")]
    BadPage {
        /// Bytes given.
        len: usize,
        /// Bytes per page.
        page_size: usize,
    },
    /// The write would take the pool past the device's memory limit.
    #[error("memory limit of {limit} bytes reached")]
    Limit {
        /// The limit (`mem_limit`).
        limit: u64,
    },
    /// The pool failed.
    #[error(transparent)]
    Pool(#[from] ZpoolError),
    /// Compression or decompression failed (corrupt data).
    #[error("codec: {0}")]
    Codec(String),
    /// A device configuration that is not accepted.
    #[error("invalid zram configuration: {0}")]
    Config(String),
}

impl ZramError {
    /// The errno the kernel's block layer would see.
    pub fn errno(&self) -> Errno {
        match self {
            ZramError::BadSlot { .. } | ZramError::BadPage { .. } | ZramError::Config(_) => {
                Errno::EINVAL
            }
            ZramError::Limit { .. } | ZramError::Pool(ZpoolError::NoMemory(_)) => Errno::ENOMEM,
            ZramError::Pool(ZpoolError::Limit(_)) => Errno::ENOMEM,
            ZramError::Pool(_) | ZramError::Codec(_) => Errno::EIO,
        }
    }
}

/// The allocator behind a device, chosen per device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// zsmalloc with zspages of at most `chain_size` pages (4..=16).
    Zsmalloc {
        /// `CONFIG_ZSMALLOC_CHAIN_SIZE`.
        chain_size: u32,
    },
    /// afmalloc over a private slab allocator.
    Afmalloc,
}

impl Backend {
    /// A short name: `zsmalloc-chain8`, `afmalloc`.
    pub fn label(self) -> String {
        match self {
            Backend::Zsmalloc { chain_size } => format!("zsmalloc-chain{chain_size}"),
            Backend::Afmalloc => "afmalloc".into(),
        }
    }

    /// Parses a [`Backend::label`]: `zsmalloc-chain<N>` (N in 4..=16),
    /// `zsmalloc` (chain 8, today's default) or `afmalloc`.
    pub fn parse(text: &str) -> Option<Backend> {
        match text {
            "afmalloc" => Some(Backend::Afmalloc),
            "zsmalloc" => Some(Backend::Zsmalloc { chain_size: 8 }),
            _ => text
                .strip_prefix("zsmalloc-chain")?
                .parse()
                .ok()
                .filter(|chain_size| (4..=16).contains(chain_size))
                .map(|chain_size| Backend::Zsmalloc { chain_size }),
        }
    }

    /// Creates the pool over `source`. Any other [`Zpool`] can be given to
    /// [`Zram::new`] directly.
    pub fn create<'a, P: PageSource + 'a>(
        self,
        source: P,
    ) -> Result<Box<dyn Zpool + 'a>, ZpoolError> {
        self.build(
            source,
            |pool| Box::new(pool) as _,
            |pool| Box::new(pool) as _,
        )
    }

    /// [`Backend::create`] over a source that may move between threads: the
    /// pool may then too (a device behind a lock that several threads
    /// serve, e.g. a FUSE session).
    pub fn create_send<'a, P: PageSource + Send + 'a>(
        self,
        source: P,
    ) -> Result<Box<dyn Zpool + Send + 'a>, ZpoolError> {
        self.build(
            source,
            |pool| Box::new(pool) as _,
            |pool| Box::new(pool) as _,
        )
    }

    /// Builds the pool and hands it to `zsmalloc` or `afmalloc` to box.
    fn build<P: PageSource, B>(
        self,
        source: P,
        zsmalloc: impl FnOnce(ZsPool<P>) -> B,
        afmalloc: impl FnOnce(AfPool<P>) -> B,
    ) -> Result<B, ZpoolError> {
        Ok(match self {
            Backend::Zsmalloc { chain_size } => zsmalloc(ZsPool::new(
                source,
                ZsConfig {
                    chain_size,
                    ..ZsConfig::default()
                },
            )?),
            Backend::Afmalloc => {
                let page_size = source.page_size();
                afmalloc(AfPool::new(
                    source,
                    SlabParams::new(1, page_size),
                    AfConfig::default(),
                )?)
            }
        })
    }
}

/// Device options (`disksize`, `comp_algorithm`, `mem_limit`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZramConfig {
    /// Slots (pages) of the device.
    pub nr_slots: usize,
    /// The compressor.
    pub compressor: Compressor,
    /// `mem_limit` in bytes; 0 is no limit.
    pub mem_limit: u64,
}

impl ZramConfig {
    /// A device of `nr_slots` pages, lz4, no limit.
    pub fn new(nr_slots: usize) -> ZramConfig {
        ZramConfig {
            nr_slots,
            compressor: Compressor::Lz4,
            mem_limit: 0,
        }
    }

    /// Bytes of the slot table [`Zram::new`] allocates for this device (the
    /// kernel's `table` of zram_meta_alloc()), to refuse a size the host
    /// cannot hold before trying.
    pub fn table_bytes(&self) -> u64 {
        (self.nr_slots as u64).saturating_mul(std::mem::size_of::<Slot>() as u64)
    }
}

/// What one slot holds (`struct zram_table_entry`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    Empty,
    /// `ZRAM_SAME` with its element.
    Same(u64),
    /// An object of the pool; `size == page size` when huge.
    Stored {
        handle: ZpoolHandle,
        size: u32,
        huge: bool,
    },
}

/// A page made ready to write: the result of the same-page test and of the
/// compression, which depend only on the page and the compressor. A
/// workload writing one corpus to several devices prepares it once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Prepared {
    /// One word repeated over the page.
    Same {
        /// The word.
        element: u64,
        /// Bytes of the page it was made from.
        page_len: usize,
    },
    /// The compressed bytes, and the page itself when the compressed size is
    /// at least [`KEEP_ORIGINAL_FROM`] of a page (any pool may then store it
    /// uncompressed).
    Compressed {
        /// The compressor that made `bytes`: only a device with the same
        /// one can read them back.
        compressor: Compressor,
        /// Compressed bytes.
        bytes: Box<[u8]>,
        /// The original page, kept for large compressed sizes.
        original: Option<Box<[u8]>>,
        /// Bytes of the page it was made from.
        page_len: usize,
    },
}

/// A [`Prepared`] page keeps its original when it compressed to at least
/// this fraction (numerator over 4) of a page: below every huge threshold of
/// the pools here (zsmalloc's is ~3.2 KiB at chain 4..16, afmalloc's 3 KiB).
pub const KEEP_ORIGINAL_FROM: usize = 2;

impl Prepared {
    /// Tests and compresses `page`.
    pub fn new(compressor: Compressor, page: &[u8]) -> Result<Prepared, ZramError> {
        let page_len = page.len();
        if let Some(element) = page_same_filled(page) {
            return Ok(Prepared::Same { element, page_len });
        }
        let bytes = compressor.compress_page(page)?;
        let original =
            (bytes.len() * 4 >= page.len() * KEEP_ORIGINAL_FROM).then(|| page.to_vec().into());
        Ok(Prepared::Compressed {
            compressor,
            bytes: bytes.into(),
            original,
            page_len,
        })
    }
}

/// The device counters (`struct zram_stats`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ZramStats {
    /// Pages in the device, same pages included.
    pub pages_stored: u64,
    /// Bytes of the stored objects (huge ones count a whole page).
    pub compr_data_size: u64,
    /// Same pages stored.
    pub same_pages: u64,
    /// Huge pages stored now.
    pub huge_pages: u64,
    /// Huge pages stored since the device was created.
    pub huge_pages_since: u64,
    /// Most pool pages ever held.
    pub max_used_pages: u64,
    /// Reads.
    pub num_reads: u64,
    /// Writes.
    pub num_writes: u64,
    /// Reads that failed.
    pub failed_reads: u64,
    /// Writes that failed.
    pub failed_writes: u64,
    /// Requests outside the device.
    pub invalid_io: u64,
    /// Discards of slots (`notify_free`).
    pub notify_free: u64,
}

/// A zram device over a boxed pool: by default any [`Zpool`]; with
/// `P = dyn Zpool + Send` (see [`Backend::create_send`]) the device itself
/// may move between threads.
pub struct Zram<'a, P: Zpool + ?Sized + 'a = dyn Zpool + 'a> {
    pool: Box<P>,
    config: ZramConfig,
    page_size: usize,
    huge_class_size: usize,
    table: Vec<Slot>,
    /// Which slots of `table` are not empty.
    stored: StoredSlots,
    stream: Stream,
    stats: ZramStats,
    /// Scratch for reads of compressed objects.
    scratch: Vec<u8>,
    /// The pool's lifetime, which the default `P` names.
    lifetime: PhantomData<&'a ()>,
}

/// The word a page is filled with, if it is (page_same_filled()).
pub fn page_same_filled(page: &[u8]) -> Option<u64> {
    let mut words = page
        .chunks_exact(8)
        .map(|word| u64::from_ne_bytes(word.try_into().expect("8 bytes")));
    let first = words.next()?;
    // The last word first: most pages that differ, differ there too.
    let last = u64::from_ne_bytes(page[page.len() - 8..].try_into().expect("8 bytes"));
    (last == first && words.all(|word| word == first)).then_some(first)
}

impl<'a, P: Zpool + ?Sized + 'a> Zram<'a, P> {
    /// A device over `pool` (zram_add() + disksize_store()).
    pub fn new(pool: Box<P>, config: ZramConfig) -> Result<Zram<'a, P>, ZramError> {
        if config.nr_slots == 0 {
            return Err(ZramError::Config("a device needs at least one slot".into()));
        }
        let stream = Stream::new(config.compressor)?;
        let page_size = pool.max_size();
        if page_size < 8 || page_size % 8 != 0 {
            return Err(ZramError::Config(format!("page size {page_size}")));
        }
        // The slot table is one allocation, as zram_meta_alloc()'s vzalloc();
        // one that cannot be reserved is an error (the kernel's ENOMEM), not
        // an abort. (With overcommit, only sizes far past memory fail here.)
        let mut table = Vec::new();
        table.try_reserve_exact(config.nr_slots).map_err(|_| {
            ZramError::Config(format!(
                "a table of {} slots does not fit in memory",
                config.nr_slots
            ))
        })?;
        table.resize(config.nr_slots, Slot::Empty);
        let stored = StoredSlots::new(config.nr_slots).ok_or_else(|| {
            ZramError::Config(format!(
                "an index of {} slots does not fit in memory",
                config.nr_slots
            ))
        })?;
        Ok(Zram {
            huge_class_size: pool.huge_class_size(),
            pool,
            config,
            page_size,
            table,
            stored,
            stream,
            stats: ZramStats::default(),
            scratch: vec![0; page_size],
            lifetime: PhantomData,
        })
    }

    /// The configuration.
    pub fn config(&self) -> ZramConfig {
        self.config
    }

    /// The pool.
    pub fn pool(&self) -> &P {
        self.pool.as_ref()
    }

    /// Counters.
    pub fn stats(&self) -> ZramStats {
        self.stats
    }

    /// Bytes per page (slot).
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// The compressed size from which pages are stored whole.
    pub fn huge_class_size(&self) -> usize {
        self.huge_class_size
    }

    /// Sets `mem_limit` (mem_limit_store()); 0 removes it.
    pub fn set_mem_limit(&mut self, bytes: u64) {
        self.config.mem_limit = bytes;
    }

    /// Sets `mem_used_max` to the current use (mem_used_max_store()).
    pub fn reset_mem_used_max(&mut self) {
        self.stats.max_used_pages = self.pool.total_pages();
    }

    fn check_slot(&mut self, slot: usize) -> Result<(), ZramError> {
        if slot >= self.table.len() {
            self.stats.invalid_io += 1;
            return Err(ZramError::BadSlot {
                slot,
                nr_slots: self.table.len(),
            });
        }
        Ok(())
    }

    fn check_page(&self, len: usize) -> Result<(), ZramError> {
        if len != self.page_size {
            return Err(ZramError::BadPage {
                len,
                page_size: self.page_size,
            });
        }
        Ok(())
    }

    /// Writes a page to `slot` (zram_bvec_write() for a whole page).
    pub fn write(&mut self, slot: usize, page: &[u8]) -> Result<(), ZramError> {
        self.check_slot(slot)?;
        self.check_page(page.len())?;
        self.stats.num_writes += 1;
        let result = match page_same_filled(page) {
            Some(element) => {
                self.store(slot, Slot::Same(element));
                Ok(())
            }
            None => match self.stream.compress(page) {
                Ok(len) => {
                    let compressed = std::mem::take(&mut self.stream.buffer);
                    let result = self.store_object(slot, &compressed[..len], page);
                    self.stream.buffer = compressed;
                    result
                }
                Err(err) => Err(err),
            },
        };
        if result.is_err() {
            self.stats.failed_writes += 1;
        }
        result
    }

    /// Writes a page prepared with [`Prepared::new`] and the device's
    /// compressor; the same as [`Zram::write`] of the page, minus the work
    /// already done. Everything is validated before anything changes: a
    /// page of another size, or compressed with another compressor (which
    /// this device could never decompress), is refused and the slot keeps
    /// what it had.
    pub fn write_prepared(&mut self, slot: usize, page: &Prepared) -> Result<(), ZramError> {
        self.check_slot(slot)?;
        self.check_prepared(page)?;
        self.stats.num_writes += 1;
        let result = match page {
            Prepared::Same { element, .. } => {
                self.store(slot, Slot::Same(*element));
                Ok(())
            }
            Prepared::Compressed {
                bytes, original, ..
            } => self.store_object(slot, bytes, original.as_deref().unwrap_or(&[])),
        };
        if result.is_err() {
            self.stats.failed_writes += 1;
        }
        result
    }

    /// Checks a prepared page against the device: its page size, its
    /// compressor, and that a page reaching the huge threshold kept its
    /// original (of a page's size) to store whole.
    fn check_prepared(&self, page: &Prepared) -> Result<(), ZramError> {
        match page {
            Prepared::Same { page_len, .. } => self.check_page(*page_len),
            Prepared::Compressed {
                compressor,
                bytes,
                original,
                page_len,
            } => {
                self.check_page(*page_len)?;
                // Decompression depends on the algorithm, not the level.
                if compressor.name() != self.config.compressor.name() {
                    return Err(ZramError::Config(format!(
                        "a page prepared with {} written to a {} device",
                        compressor.name(),
                        self.config.compressor.name()
                    )));
                }
                if bytes.len() >= self.huge_class_size {
                    match original {
                        Some(original) => self.check_page(original.len()),
                        None => Err(ZramError::Config(
                            "a prepared page without its original reached the huge threshold"
                                .into(),
                        )),
                    }
                } else {
                    Ok(())
                }
            }
        }
    }

    /// Allocates, checks the limit, copies and installs an object
    /// (the allocation half of __zram_bvec_write()).
    fn store_object(
        &mut self,
        slot: usize,
        compressed: &[u8],
        page: &[u8],
    ) -> Result<(), ZramError> {
        let huge = compressed.len() >= self.huge_class_size;
        let (data, size) = if huge {
            self.check_page(page.len())?;
            (page, self.page_size)
        } else {
            (compressed, compressed.len())
        };
        let handle = self.pool.malloc(size)?;
        let alloced_pages = self.pool.total_pages();
        self.stats.max_used_pages = self.stats.max_used_pages.max(alloced_pages);
        let limit_pages = self.config.mem_limit / self.page_size as u64;
        if self.config.mem_limit != 0 && alloced_pages > limit_pages {
            self.pool.free(handle)?;
            return Err(ZramError::Limit {
                limit: self.config.mem_limit,
            });
        }
        if let Err(err) = self.pool.write(handle, data) {
            self.pool.free(handle)?;
            return Err(err.into());
        }
        self.stats.compr_data_size += size as u64;
        self.store(
            slot,
            Slot::Stored {
                handle,
                size: size as u32,
                huge,
            },
        );
        Ok(())
    }

    /// Replaces what `slot` holds with `new` (zram_free_page() then set).
    fn store(&mut self, slot: usize, new: Slot) {
        // The old object's free cannot fail for a live handle; if the pool
        // says otherwise its invariants are broken, which check_invariants
        // reports.
        let _ = self.free_slot(slot);
        match new {
            Slot::Same(_) => self.stats.same_pages += 1,
            Slot::Stored { huge: true, .. } => {
                self.stats.huge_pages += 1;
                self.stats.huge_pages_since += 1;
            }
            _ => {}
        }
        self.stats.pages_stored += 1;
        if !matches!(new, Slot::Empty) {
            self.stored.set(slot);
        }
        self.table[slot] = new;
    }

    /// Empties a slot (zram_free_page()).
    fn free_slot(&mut self, slot: usize) -> Result<(), ZramError> {
        let old = std::mem::replace(&mut self.table[slot], Slot::Empty);
        if !matches!(old, Slot::Empty) {
            self.stored.clear(slot);
        }
        match old {
            Slot::Empty => return Ok(()),
            Slot::Same(_) => self.stats.same_pages -= 1,
            Slot::Stored { handle, size, huge } => {
                if huge {
                    self.stats.huge_pages -= 1;
                }
                self.stats.compr_data_size -= u64::from(size);
                self.pool.free(handle)?;
            }
        }
        self.stats.pages_stored -= 1;
        Ok(())
    }

    /// Reads `slot` into `page`; an empty slot reads as zeros
    /// (__zram_bvec_read() / zram_read_from_zspool()).
    pub fn read(&mut self, slot: usize, page: &mut [u8]) -> Result<(), ZramError> {
        self.check_slot(slot)?;
        self.check_page(page.len())?;
        self.stats.num_reads += 1;
        let result = match self.table[slot] {
            Slot::Empty => {
                page.fill(0);
                Ok(())
            }
            Slot::Same(element) => {
                // zram_fill_page()
                for word in page.chunks_exact_mut(8) {
                    word.copy_from_slice(&element.to_ne_bytes());
                }
                Ok(())
            }
            Slot::Stored {
                handle, huge: true, ..
            } => self.pool.read(handle, page).map_err(ZramError::from),
            Slot::Stored { handle, size, .. } => {
                let mut scratch = std::mem::take(&mut self.scratch);
                let src = &mut scratch[..size as usize];
                let result = match self.pool.read(handle, src) {
                    Ok(()) => self.stream.decompress(src, page),
                    Err(err) => Err(err.into()),
                };
                self.scratch = scratch;
                result
            }
        };
        if result.is_err() {
            self.stats.failed_reads += 1;
        }
        result
    }

    /// Discards `slot` (zram_bio_discard() / zram_slot_free_notify()).
    pub fn discard(&mut self, slot: usize) -> Result<(), ZramError> {
        self.check_slot(slot)?;
        self.stats.notify_free += 1;
        self.free_slot(slot)
    }

    /// Discards `pages` slots from `first`, as one discard request of that
    /// range (zram_bio_discard()): each slot is counted in `notify_free`
    /// and the stored ones are freed. A range past the device is refused
    /// whole (`invalid_io`, as valid_io_request() refuses the request) and
    /// nothing changes. Visits the stored slots only (`stored_slots`). A
    /// pool that fails to free a live handle (its invariants are broken,
    /// which `check_invariants` reports) stops the discard there.
    pub fn discard_range(&mut self, first: usize, pages: usize) -> Result<(), ZramError> {
        let Some(end) = first
            .checked_add(pages)
            .filter(|end| *end <= self.table.len())
        else {
            self.stats.invalid_io += 1;
            return Err(ZramError::BadSlot {
                slot: first.saturating_add(pages).saturating_sub(1),
                nr_slots: self.table.len(),
            });
        };
        self.stats.notify_free += pages as u64;
        let mut at = first;
        while let Some(slot) = self.stored.next_in(at, end) {
            self.free_slot(slot)?;
            at = slot + 1;
        }
        Ok(())
    }

    /// True when `slot` holds a page.
    pub fn is_stored(&self, slot: usize) -> bool {
        !matches!(self.table.get(slot), None | Some(Slot::Empty))
    }

    /// Compacts the pool (compact_store()); returns the pages freed.
    pub fn compact(&mut self) -> Result<u64, ZramError> {
        Ok(self.pool.compact()?)
    }

    /// The nine `mm_stat` figures, in order (mm_stat_show()).
    pub fn mm_stat(&self) -> MmStat {
        let page = self.page_size as u64;
        MmStat {
            orig_data_size: self.stats.pages_stored * page,
            compr_data_size: self.stats.compr_data_size,
            mem_used_total: self.pool.total_pages() * page,
            mem_limit: self.config.mem_limit / page * page,
            mem_used_max: self.stats.max_used_pages * page,
            same_pages: self.stats.same_pages,
            pages_compacted: self.pool.stats().pages_compacted,
            huge_pages: self.stats.huge_pages,
            huge_pages_since: self.stats.huge_pages_since,
        }
    }

    /// `io_stat` as the kernel prints it (io_stat_show()): failed_reads,
    /// failed_writes, invalid_io, notify_free.
    pub fn io_stat(&self) -> String {
        format!(
            "{:>8} {:>8} {:>8} {:>8}\n",
            self.stats.failed_reads,
            self.stats.failed_writes,
            self.stats.invalid_io,
            self.stats.notify_free
        )
    }
}

/// The figures of `mm_stat`, in the kernel's column order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MmStat {
    /// Bytes of the pages stored (same pages included).
    pub orig_data_size: u64,
    /// Bytes of the compressed objects.
    pub compr_data_size: u64,
    /// Bytes of the pool's pages.
    pub mem_used_total: u64,
    /// The memory limit in bytes (0: none).
    pub mem_limit: u64,
    /// Most bytes the pool ever held.
    pub mem_used_max: u64,
    /// Same pages stored.
    pub same_pages: u64,
    /// Pages freed by compaction.
    pub pages_compacted: u64,
    /// Huge pages stored.
    pub huge_pages: u64,
    /// Huge pages stored since creation.
    pub huge_pages_since: u64,
}

impl std::fmt::Display for MmStat {
    /// The line of `/sys/block/zram<id>/mm_stat` (`%8llu` each, one space apart).
    fn fmt(&self, out: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            out,
            "{:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
            self.orig_data_size,
            self.compr_data_size,
            self.mem_used_total,
            self.mem_limit,
            self.mem_used_max,
            self.same_pages,
            self.pages_compacted,
            self.huge_pages,
            self.huge_pages_since
        )
    }
}

#[cfg(test)]
mod tests;
