//! Replay of a zram block trace (see `zram_serve::block_trace`) on a
//! pageframe zram: every write stores an object of the size the trace gives
//! for the chosen codec (or a same page), every discard frees its slots, and
//! every step mark yields a row, with the real kernel's figures beside when
//! the trace carries them. The replay is deterministic: the same trace gives
//! the same rows.

use super::rows::{KernelSizes, ReferenceRatios, ReplayRow, Sizes};
use super::{reference, REMOVED};
use crate::experiments::ExperimentError;
use crate::report::round_to;
use crate::zram_serve::block_trace::{addressed_pages, RealStat, TraceRecord, TRACE_CODECS};
use pageframe::page_source::CpuPages;
use pageframe::zram::{Backend, Compressor, Prepared, Zram, ZramConfig, KEEP_ORIGINAL_FROM};
use pageframe::{CpuId, LocalPageAllocator, MachineDesc};

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

/// Replays `records` on `backend` with the sizes of `codec` (an index of
/// [`TRACE_CODECS`]); returns the figures at every step mark.
pub fn replay(
    records: &[TraceRecord],
    backend: Backend,
    codec: usize,
) -> Result<Vec<StepFigures>, ExperimentError> {
    let compressor = TRACE_CODECS[codec];
    let pages = addressed_pages(records);
    let machine_bytes = pages
        .checked_mul(PAGE as u64)
        .and_then(|bytes| bytes.max(1 << 30).checked_next_power_of_two())
        .ok_or_else(|| {
            ExperimentError::failed(format!("the trace addresses {pages} pages: too many"))
        })?;
    let slots = usize::try_from(pages).map_err(ExperimentError::failed)?;
    let allocator = LocalPageAllocator::boot(&MachineDesc::uniform(machine_bytes, 1, 1)?)?;
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
