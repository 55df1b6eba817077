//! Replay of a zram block trace (see `zram_serve::block_trace`) on a
//! pageframe zram: every write stores an object of the size the trace gives
//! for the chosen codec (or a same page), every discard frees its slots, and
//! every step mark yields a row, with the real kernel's figures beside when
//! the trace carries them. The replay is deterministic: the same trace gives
//! the same rows.

use super::rows::{KernelSizes, ReferenceRatios, ReplayRow, Sizes};
use super::{reference, REMOVED};
use crate::experiments::ExperimentError;
use crate::host_memory::{gib, gib_or_mib};
use crate::report::round_to;
use crate::zram_serve::block_trace::{
    addressed_pages, RealStat, TraceRecord, MAX_OBJECT_SIZE, TRACE_CODECS,
};
use pageframe::page_source::CpuPages;
use pageframe::zram::{Backend, Compressor, Prepared, Zram, ZramConfig, KEEP_ORIGINAL_FROM};
use pageframe::{CpuId, LocalPageAllocator, MachineDesc, MetadataCost};

const PAGE: usize = 4096;
const MIB: f64 = (1u64 << 20) as f64;

/// The trace shipped with the repository: the quick-scale ext4 workload
/// (the whole linux-source-6.1 tree, three rounds) recorded on a served
/// pageframe zram (lz4, zsmalloc chain 8) alone: its steps carry no kernel
/// figures.
pub const SHIPPED: &[u8] = include_bytes!("../../../../../traces/zram-untar-ext4-quick.pfzt");
/// Its name in notes.
pub const SHIPPED_NAME: &str = "traces/zram-untar-ext4-quick.pfzt";

/// Stand-ins for compressed pages by size: the replay stores sizes, not data.
struct Objects {
    compressor: Compressor,
    by_size: Vec<Option<Prepared>>,
    same: Prepared,
}

impl Objects {
    fn new(compressor: Compressor) -> Objects {
        Objects {
            compressor,
            by_size: Vec::new(),
            same: Prepared::Same {
                element: 0,
                page_len: PAGE,
            },
        }
    }

    fn of_size(&mut self, size: usize) -> &Prepared {
        if self.by_size.len() <= size {
            self.by_size.resize(size + 1, None);
        }
        let compressor = self.compressor;
        self.by_size[size].get_or_insert_with(|| Prepared::Compressed {
            compressor,
            bytes: vec![0; size].into(),
            original: (size * 4 >= PAGE * KEEP_ORIGINAL_FROM).then(|| vec![0; PAGE].into()),
            page_len: PAGE,
        })
    }
}

/// A step's figures (bytes).
#[derive(Clone, Debug, PartialEq)]
pub struct StepFigures {
    /// Round.
    pub round: u32,
    /// Step label.
    pub label: String,
    /// `orig_data_size`, `compr_data_size`, `mem_used_total`.
    pub orig: u64,
    /// See above.
    pub compr: u64,
    /// See above.
    pub used: u64,
    /// The pool's real overhead.
    pub real_overhead: u64,
    /// The kernel's figures, when recorded.
    pub kernel: Option<RealStat>,
}

/// The machine a replay of `records` runs on (the pages the trace
/// addresses, at least 1 GiB, rounded up to a power of two) and its
/// device's slots.
fn machine_of(records: &[TraceRecord]) -> Result<(MachineDesc, usize), ExperimentError> {
    let pages = addressed_pages(records);
    let machine_bytes = pages
        .checked_mul(PAGE as u64)
        .and_then(|bytes| bytes.max(1 << 30).checked_next_power_of_two())
        .ok_or_else(|| {
            ExperimentError::failed(format!("the trace addresses {pages} pages: too many"))
        })?;
    let slots = usize::try_from(pages).map_err(ExperimentError::failed)?;
    Ok((MachineDesc::uniform(machine_bytes, 1, 1)?, slots))
}

/// Bytes a step costs in each allocator's report, beside its label: its
/// figures, its row and the row's JSON or table text (measured: 4.1 KiB a
/// row for `--format json`, the largest; 100 000 steps of a one-byte label
/// peaked at 1.2 GB).
const STEP_ROW_BYTES: u64 = 6 << 10;
/// Copies of a step's label the figures, rows and output hold per
/// allocator (measured: some 10).
const STEP_LABEL_COPIES: u64 = 16;
/// The stand-in objects [`Objects`] builds, at most one of each size:
/// every size up to [`MAX_OBJECT_SIZE`] and a page kept beside each.
const OBJECTS_BYTES: u64 =
    (MAX_OBJECT_SIZE as u64 * MAX_OBJECT_SIZE as u64) / 2 + MAX_OBJECT_SIZE as u64 * PAGE as u64;

/// What a stored object costs beyond its bytes: its handle, its slot's
/// page in the simulation's store and its share of the zspage's metadata
/// (measured: two million pages written whole peaked at 17.1 GB on two
/// allocators, 4.27 KB a page).
const OBJECT_OVERHEAD_BYTES: u64 = 256;

/// Refuses a replay of `records` (the trace `name`) on `allocators` at
/// once (of [`BACKENDS`](super::BACKENDS) in all) that would hold more
/// than `available` bytes (the host's `MemAvailable`; `None`: unknown, not
/// checked). The reader's limits (2^25 records, 2^24 pages) let a trace
/// of a few hundred bytes ask for tens of GB: a million step marks (3
/// million rows) or two million pages written whole (8 GiB an allocator).
///
/// An estimate, erring high: each allocator holds the objects live at the
/// trace's peak (a page each at most, twice its size for the class
/// rounding and fragmentation the pools show, under 40 % in every run
/// measured, and the overhead of an object), its machine's page metadata,
/// its slot table and stand-in objects; each step costs every allocator a
/// row. The shipped trace is estimated at 1.0 GiB an allocator; it peaks
/// at 1.3 GB for two.
pub fn check_host_holds(
    records: &[TraceRecord],
    name: &str,
    allocators: usize,
    available: Option<u64>,
) -> Result<(), ExperimentError> {
    let Some(available) = available else {
        return Ok(());
    };
    let (machine, slots) = machine_of(records)?;
    let layout = machine
        .layout()
        .map_err(|err| ExperimentError::failed(err.message))?;
    let per_allocator = peak_object_bytes(records, slots)
        .saturating_add(MetadataCost::for_layout(&layout).total_bytes())
        .saturating_add(ZramConfig::new(slots).table_bytes())
        .saturating_add(OBJECTS_BYTES);
    let (steps, step_bytes) = records
        .iter()
        .filter_map(|record| match record {
            TraceRecord::Step { label, .. } => Some(label.len() as u64),
            _ => None,
        })
        .fold((0u64, 0u64), |(steps, bytes), label| {
            let step = STEP_ROW_BYTES.saturating_add(label.saturating_mul(STEP_LABEL_COPIES));
            (steps + 1, bytes.saturating_add(step))
        });
    let rows = step_bytes.saturating_mul(super::BACKENDS.len() as u64);
    let held = std::mem::size_of_val(records) as u64;
    let need = per_allocator
        .saturating_mul(allocators as u64)
        .saturating_add(rows)
        .saturating_add(held);
    if need <= available {
        return Ok(());
    }
    Err(ExperimentError::failed(format!(
        "{name}: replaying it would hold about {} ({allocators} allocators at once, {} each for the pages it stores, and {} for the rows of its {steps} step marks), more than the host's MemAvailable of {}",
        gib_or_mib(need),
        gib_or_mib(per_allocator),
        gib_or_mib(rows),
        gib(available)
    )))
}

/// What the objects live at once cost at most over a replay of `records`
/// on `slots` slots, in bytes: each written page at twice its largest size
/// of [`TRACE_CODECS`], at most a page, and [`OBJECT_OVERHEAD_BYTES`] (a
/// same-filled page costs nothing), until it is overwritten or discarded.
fn peak_object_bytes(records: &[TraceRecord], slots: usize) -> u64 {
    let mut cost = vec![0u16; slots];
    let (mut live, mut peak) = (0u64, 0u64);
    for record in records {
        match record {
            TraceRecord::Write { page, sizes } => {
                let new = sizes.map_or(0, |sizes| {
                    let largest = sizes.iter().max().copied().unwrap_or(0) as u64;
                    ((2 * largest).min(PAGE as u64) + OBJECT_OVERHEAD_BYTES) as u16
                });
                let old = std::mem::replace(&mut cost[*page as usize], new);
                live = live - u64::from(old) + u64::from(new);
                peak = peak.max(live);
            }
            TraceRecord::Discard { first, pages } => {
                for slot in &mut cost[*first as usize..(first + pages) as usize] {
                    live -= u64::from(std::mem::take(slot));
                }
            }
            TraceRecord::Step { .. } => {}
        }
    }
    peak
}

/// Replays `records` on `backend` with the sizes of `codec` (an index of
/// [`TRACE_CODECS`]); returns the figures at every step mark.
pub fn replay(
    records: &[TraceRecord],
    backend: Backend,
    codec: usize,
) -> Result<Vec<StepFigures>, ExperimentError> {
    let compressor = TRACE_CODECS[codec];
    let (machine, slots) = machine_of(records)?;
    let allocator = LocalPageAllocator::boot(&machine)?;
    let cpu = allocator.cpu(CpuId(0)).map_err(ExperimentError::failed)?;
    let pool = backend
        .create(CpuPages::new(cpu))
        .map_err(ExperimentError::failed)?;
    let config = ZramConfig {
        compressor,
        ..ZramConfig::new(slots)
    };
    let mut zram = Zram::new(pool, config).map_err(ExperimentError::failed)?;
    let mut objects = Objects::new(compressor);
    let mut steps = Vec::new();
    for record in records {
        match record {
            TraceRecord::Write { page, sizes } => {
                let object = match sizes {
                    None => &objects.same,
                    Some(sizes) => objects.of_size(sizes[codec] as usize),
                };
                zram.write_prepared(*page as usize, object)
                    .map_err(ExperimentError::failed)?;
            }
            TraceRecord::Discard { first, pages } => {
                let first = usize::try_from(*first).map_err(ExperimentError::failed)?;
                let pages = usize::try_from(*pages).map_err(ExperimentError::failed)?;
                zram.discard_range(first, pages)
                    .map_err(ExperimentError::failed)?;
            }
            TraceRecord::Step { round, label, real } => {
                let stat = zram.mm_stat();
                steps.push(StepFigures {
                    round: *round,
                    label: label.clone(),
                    orig: stat.orig_data_size,
                    compr: stat.compr_data_size,
                    used: stat.mem_used_total,
                    real_overhead: zram.pool().stats().real_overhead_bytes,
                    kernel: *real,
                });
            }
        }
    }
    zram.check_invariants().map_err(ExperimentError::failed)?;
    Ok(steps)
}

/// The index of a step label among the document's steps (0: untar, then
/// the removals in order).
fn step_index(label: &str) -> Option<usize> {
    if label == "untar" {
        return Some(0);
    }
    let dir = label.strip_prefix("rm ")?;
    REMOVED
        .iter()
        .position(|removed| *removed == dir)
        .map(|at| at + 1)
}

/// The overhead `used - compr` of the kernel's figures, in % of `compr`,
/// rounded as the rows are.
pub fn kernel_ratio(kernel: &RealStat) -> f64 {
    let compr = kernel.compr as f64;
    round_to(ratio(kernel.used as f64 - compr, compr), 2)
}

fn ratio(bytes: f64, compr: f64) -> f64 {
    if compr > 0.0 {
        100.0 * bytes / compr
    } else {
        0.0
    }
}

/// The row of a replayed step.
pub fn row(backend: Backend, step: &StepFigures) -> ReplayRow {
    let compr = step.compr as f64;
    let overhead = step.used as f64 - compr;
    let real = (backend == Backend::Afmalloc).then_some(step.real_overhead as f64);
    let kernel_sizes = step.kernel.map(|kernel| KernelSizes {
        kernel_orig_size: round_to(kernel.orig as f64 / MIB, 2),
        kernel_compr_size: round_to(kernel.compr as f64 / MIB, 2),
        kernel_used_size: round_to(kernel.used as f64 / MIB, 2),
    });
    let kernel_overhead_ratio = step.kernel.as_ref().map(kernel_ratio);
    let reference = step_index(&step.label).and_then(|at| reference(backend, step.round, at));
    ReplayRow {
        sizes: Sizes {
            allocator: backend.label(),
            round: step.round,
            step: step.label.clone(),
            orig_size: round_to(step.orig as f64 / MIB, 2),
            compr_size: round_to(compr / MIB, 2),
            used_size: round_to(step.used as f64 / MIB, 2),
            overhead: round_to(overhead / MIB, 2),
            overhead_ratio: round_to(ratio(overhead, compr), 2),
            real_overhead: real.map(|real| round_to(real / MIB, 2)),
            real_overhead_ratio: real.map(|real| round_to(ratio(real, compr), 2)),
        },
        kernel_sizes,
        kernel_overhead_ratio,
        kernel_replay_overhead_ratio: None,
        kernel_band: None,
        reference: ReferenceRatios {
            reference_overhead_ratio: reference.map(|figures| figures.3),
            reference_real_overhead_ratio: reference.and_then(|figures| figures.4),
        },
    }
}
