//! The served device: a pageframe [`Zram`] behind a lock, addressed in
//! bytes as a file is, and the block trace of what reaches it.
//!
//! Owns: the zram (its pool over a thread-safe page allocator of its own),
//! the optional [`TraceWriter`] and the optional [`TraceSizes`] its write
//! records take their sizes from. Invariant: every byte range written
//! lands in whole-page slots (a partial page is read, patched and written
//! back, as zram_bvec_write() does for a partial bio); a punched range frees
//! only the slots it covers whole (zram_bio_discard() skips the partial
//! pages at its ends). Lock order: the device lock only; compression runs
//! before it is taken.

use super::block_trace::{TraceRecord, TraceWriter};
use super::trace_sizes::TraceSizes;
use crate::host_memory::{gib, gib_or_mib};
use pageframe::machine::format_size;
use pageframe::page_source::CpuPages;
use pageframe::zpool::Zpool;
use pageframe::zram::{Backend, Compressor, MmStat, Prepared, Zram, ZramConfig, ZramError};
use pageframe::{CpuId, MachineDesc, MetadataCost, SharedPageAllocator};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// Bytes per slot.
pub const PAGE: usize = 4096;

/// What the device is made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceConfig {
    /// The allocator.
    pub backend: Backend,
    /// The compressor.
    pub compressor: Compressor,
    /// Size of the device (`disksize`), a multiple of the page.
    pub disk_bytes: u64,
    /// Memory the pool may take (the machine's size); 0: as much as the disk.
    pub memory_bytes: u64,
}

impl DeviceConfig {
    /// The memory the pool may take: `memory_bytes`, or the disk's size.
    pub fn pool_bytes(&self) -> u64 {
        if self.memory_bytes == 0 {
            self.disk_bytes
        } else {
            self.memory_bytes
        }
    }

    /// The one-node machine the pool's pages come from: the pool's memory
    /// rounded up to a power of two, at least 16 MiB.
    pub fn machine(&self) -> Result<MachineDesc, DeviceError> {
        let bytes = self
            .pool_bytes()
            .max(16 << 20)
            .checked_next_power_of_two()
            .ok_or_else(|| {
                DeviceError::Config(format!(
                    "a pool of {} needs a machine past 16E",
                    format_size(self.pool_bytes())
                ))
            })?;
        MachineDesc::uniform(bytes, 1, 1).map_err(|err| DeviceError::Config(err.to_string()))
    }

    /// Refuses a device the host cannot hold: its slot table and its
    /// machine's page metadata together more than `available` bytes (the
    /// host's `MemAvailable`; `None`: not checked), or a machine that
    /// cannot be laid out. The message names the flags to change.
    pub fn check_host(&self, available: Option<u64>) -> Result<(), DeviceError> {
        let pool_flag = if self.memory_bytes == 0 {
            format!("--size {}", format_size(self.disk_bytes))
        } else {
            format!("--memory {}", format_size(self.memory_bytes))
        };
        let refuse = |message: String| DeviceError::Config(format!("{pool_flag}: {message}"));
        let layout = self
            .machine()
            .map_err(|err| refuse(err.to_string()))?
            .layout()
            .map_err(|err| refuse(err.message))?;
        let metadata = MetadataCost::for_layout(&layout).total_bytes();
        let nr_slots = usize::try_from(self.disk_bytes / PAGE as u64).unwrap_or(usize::MAX);
        let table = ZramConfig::new(nr_slots).table_bytes();
        match available {
            Some(available) if table.saturating_add(metadata) > available => {
                Err(DeviceError::Config(format!(
                    "--size {}{}: the device's slot table ({}) and its machine's page metadata ({}) take more than the host's MemAvailable of {}",
                    format_size(self.disk_bytes),
                    match self.memory_bytes {
                        0 => String::new(),
                        bytes => format!(" with --memory {}", format_size(bytes)),
                    },
                    gib_or_mib(table),
                    gib_or_mib(metadata),
                    gib(available)
                )))
            }
            _ => Ok(()),
        }
    }
}

/// Why the device could not be made.
#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    /// A size that is not usable.
    #[error("{0}")]
    Config(String),
    /// The machine or the pool could not be made.
    #[error("{0}")]
    Build(String),
}

struct State {
    zram: Zram<'static, dyn Zpool + Send>,
    trace: Option<TraceWriter>,
    page: Vec<u8>,
}

impl State {
    /// Stores a prepared page in `slot` and traces it when recording
    /// (`record`, made outside the lock, or made here). The record is made
    /// before the slot changes, so a failing one changes nothing.
    fn store(
        &mut self,
        slot: usize,
        prepared: &Prepared,
        record: Option<TraceRecord>,
        page: &[u8],
    ) -> Result<(), ZramError> {
        let State { zram, trace, .. } = self;
        let Some(trace) = trace else {
            return zram.write_prepared(slot, prepared);
        };
        let record = match record {
            Some(record) => record,
            None => TraceRecord::write_of(slot as u64, page)?,
        };
        zram.write_prepared(slot, prepared)?;
        trace
            .record(&record)
            .map_err(|err| ZramError::Codec(err.to_string()))
    }
}

/// The part of a byte range that falls in one page slot.
struct Piece {
    /// The slot.
    slot: usize,
    /// Where the part starts within the slot.
    within: usize,
    /// Where the part starts within the range.
    done: usize,
    /// Its length: `PAGE` exactly when it covers the whole slot.
    len: usize,
}

/// The range `[offset, offset + len)` split at slot boundaries, in order
/// (the caller has checked it lies on the device).
fn pieces(offset: u64, len: usize) -> impl Iterator<Item = Piece> {
    let mut done = 0usize;
    std::iter::from_fn(move || {
        if done >= len {
            return None;
        }
        let at = offset + done as u64;
        let within = (at % PAGE as u64) as usize;
        let piece = Piece {
            slot: (at / PAGE as u64) as usize,
            within,
            done,
            len: (PAGE - within).min(len - done),
        };
        done += piece.len;
        Some(piece)
    })
}

/// A zram addressed in bytes.
pub struct Device {
    state: Mutex<State>,
    /// Whether a trace is being recorded (read without the lock, to make
    /// trace records outside it).
    tracing: AtomicBool,
    /// The sizes of known pages, when given (see [`Device::use_trace_sizes`]).
    trace_sizes: OnceLock<TraceSizes>,
    config: DeviceConfig,
}

impl Device {
    /// Builds the device.
    pub fn new(config: DeviceConfig) -> Result<Device, DeviceError> {
        if config.disk_bytes == 0 || config.disk_bytes % PAGE as u64 != 0 {
            return Err(DeviceError::Config(format!(
                "disk size {} is not a positive multiple of {PAGE}",
                config.disk_bytes
            )));
        }
        let nr_slots = usize::try_from(config.disk_bytes / PAGE as u64)
            .map_err(|_| DeviceError::Config("disk size too large".into()))?;
        let build = |err: String| DeviceError::Build(err);
        let machine = config.machine()?;
        let allocator =
            Arc::new(SharedPageAllocator::boot(&machine).map_err(|err| build(err.to_string()))?);
        let cpu = allocator
            .register_cpu_arc(CpuId(0))
            .map_err(|err| build(err.to_string()))?;
        let pool = config
            .backend
            .create_send(CpuPages::new(cpu))
            .map_err(|err| build(err.to_string()))?;
        let zram = Zram::new(
            pool,
            ZramConfig {
                compressor: config.compressor,
                ..ZramConfig::new(nr_slots)
            },
        )
        .map_err(|err| build(err.to_string()))?;
        Ok(Device {
            state: Mutex::new(State {
                zram,
                trace: None,
                page: vec![0; PAGE],
            }),
            tracing: AtomicBool::new(false),
            trace_sizes: OnceLock::new(),
            config,
        })
    }

    /// The configuration.
    pub fn config(&self) -> DeviceConfig {
        self.config
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while the lock was held left a consistent zram (each
        // operation changes it at the end); go on with it.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Starts recording a block trace into `writer`.
    pub fn set_trace(&self, writer: Option<TraceWriter>) -> Option<TraceWriter> {
        let mut state = self.lock();
        self.tracing.store(writer.is_some(), Ordering::Relaxed);
        std::mem::replace(&mut state.trace, writer)
    }

    /// Makes the write records of whole pages take their sizes from
    /// `sizes` (a page not in it is compressed as before); a device takes
    /// one table for its life, a second is given back.
    pub fn use_trace_sizes(&self, sizes: TraceSizes) -> Result<(), TraceSizes> {
        self.trace_sizes.set(sizes)
    }

    /// The table given to [`Device::use_trace_sizes`], if any.
    pub fn trace_sizes(&self) -> Option<&TraceSizes> {
        self.trace_sizes.get()
    }

    /// Appends a record to the trace (a step mark), if recording.
    pub fn trace_record(&self, record: &TraceRecord) -> std::io::Result<()> {
        match self.lock().trace.as_mut() {
            Some(trace) => trace.record(record),
            None => Ok(()),
        }
    }

    /// `mm_stat` of the device.
    pub fn mm_stat(&self) -> MmStat {
        self.lock().zram.mm_stat()
    }

    /// The pool's real overhead in bytes (see `ZpoolStats`).
    pub fn real_overhead_bytes(&self) -> u64 {
        self.lock().zram.pool().stats().real_overhead_bytes
    }

    /// Checks the zram's invariants.
    pub fn check_invariants(&self) -> Result<(), pageframe::InvariantError> {
        self.lock().zram.check_invariants()
    }

    /// Checks that `[offset, offset + len)` lies in the device.
    fn range(&self, offset: u64, len: u64) -> Result<(), ZramError> {
        match offset.checked_add(len) {
            Some(end) if end <= self.config.disk_bytes => Ok(()),
            _ => Err(ZramError::BadSlot {
                slot: usize::try_from(offset / PAGE as u64).unwrap_or(usize::MAX),
                nr_slots: (self.config.disk_bytes / PAGE as u64) as usize,
            }),
        }
    }

    /// Reads `out.len()` bytes at `offset`.
    pub fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), ZramError> {
        self.range(offset, out.len() as u64)?;
        let mut state = self.lock();
        let State { zram, page, .. } = &mut *state;
        for Piece {
            slot,
            within,
            done,
            len,
        } in pieces(offset, out.len())
        {
            if len == PAGE {
                zram.read(slot, &mut out[done..done + PAGE])?;
            } else {
                zram.read(slot, page)?;
                out[done..done + len].copy_from_slice(&page[within..within + len]);
            }
        }
        Ok(())
    }

    /// Writes `data` at `offset`. A whole page is compressed (and its
    /// trace record made) before the device lock is taken, as
    /// zram_write_page() compresses before it takes the slot's lock, so
    /// several FUSE threads compress at once; a partial page is read,
    /// patched and compressed under the lock.
    pub fn write(&self, offset: u64, data: &[u8]) -> Result<(), ZramError> {
        self.range(offset, data.len() as u64)?;
        for Piece {
            slot,
            within,
            done,
            len,
        } in pieces(offset, data.len())
        {
            if len == PAGE {
                let whole = &data[done..done + PAGE];
                let prepared = Prepared::new(self.config.compressor, whole)?;
                let record = if self.tracing.load(Ordering::Relaxed) {
                    Some(match self.trace_sizes.get() {
                        Some(table) => TraceRecord::Write {
                            page: slot as u64,
                            sizes: table.sizes(whole)?,
                        },
                        None => TraceRecord::write_of(slot as u64, whole)?,
                    })
                } else {
                    None
                };
                self.lock().store(slot, &prepared, record, whole)?;
            } else {
                let mut state = self.lock();
                let mut page = std::mem::take(&mut state.page);
                let patched = state.zram.read(slot, &mut page).and_then(|()| {
                    page[within..within + len].copy_from_slice(&data[done..done + len]);
                    let prepared = Prepared::new(self.config.compressor, &page)?;
                    state.store(slot, &prepared, None, &page)
                });
                state.page = page;
                patched?;
            }
        }
        Ok(())
    }

    /// Frees the slots wholly inside `[offset, offset + len)`
    /// (fallocate(PUNCH_HOLE) from the loop driver's discard).
    pub fn punch_hole(&self, offset: u64, len: u64) -> Result<(), ZramError> {
        let len = len.min(self.config.disk_bytes.saturating_sub(offset));
        self.range(offset, len)?;
        let first = offset.div_ceil(PAGE as u64);
        let end = (offset + len) / PAGE as u64;
        if first >= end {
            return Ok(());
        }
        let mut state = self.lock();
        for slot in first..end {
            state.zram.discard(slot as usize)?;
        }
        if let Some(trace) = state.trace.as_mut() {
            trace
                .record(&TraceRecord::Discard {
                    first,
                    pages: end - first,
                })
                .map_err(|err| ZramError::Codec(err.to_string()))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(disk_bytes: u64, memory_bytes: u64) -> DeviceConfig {
        DeviceConfig {
            backend: Backend::parse("zsmalloc-chain8").unwrap(),
            compressor: Compressor::Lz4,
            disk_bytes,
            memory_bytes,
        }
    }

    /// The slot table and the machine's metadata are counted together, and
    /// the message names the flags given.
    #[test]
    fn a_device_past_the_hosts_memory_is_refused() {
        let gib = 1u64 << 30;
        assert!(config(gib, 0).check_host(Some(gib)).is_ok());
        assert!(config(15 << 60, 0).check_host(None).is_err());
        let err = config(4 << 40, 0).check_host(Some(20 * gib)).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("--size 4T: the device's slot table"),
            "{err}"
        );
        let err = config(gib, 8 << 40).check_host(Some(20 * gib)).unwrap_err();
        assert!(
            err.to_string().starts_with("--size 1G with --memory 8T:"),
            "{err}"
        );
        let err = config(gib, 15 << 60).check_host(None).unwrap_err();
        assert!(err.to_string().starts_with("--memory 15E:"), "{err}");
    }
}
