//! Experiment `zram-untar`: the afmalloc document's fragmentation test on
//! real data, in one of two workloads (parameter `workload`):
//!
//! - `ext4-trace` (the default): the block trace of the real thing — ext4
//!   mounted with `discard` on a zram, the kernel tree untarred, directories
//!   removed, rounds — replayed on each allocator with the compressed sizes
//!   of the chosen codec, the real kernel's mm_stat of the same run beside
//!   when the trace carries it (its `replay` module). The quick-scale trace
//!   ships in `traces/`; `--fs ext4` (root) records a new one at the run's
//!   scale (its `live` module; `record_beside`: a real /dev/zram beside the
//!   served device at once, or none) and replays it; `--trace FILE`
//!   replays another. With `--fs ext4` or `kernel_replay`
//!   (root) the trace is also replayed on a real /dev/zram
//!   (`zram_serve::kernel_replay`): the kernel's zsmalloc given the same
//!   stream, a column beside. With `kernel_runs = N` (root) the workload
//!   also runs N times alone on a fresh real /dev/zram, and every row is
//!   judged against the kernel's band per step (its `band` module).
//!   The workload lives in its `ext4_trace` module.
//! - `files`: the model without a file system, below.
//!
//! In `files`, a zram device over each allocator — zsmalloc with
//! zspages of at most 4 pages (the document's 2014 zsmalloc), zsmalloc at
//! today's default 8, afmalloc — receives a kernel source tree file by file
//! ("untar", each file's pages written to free slots), then loses
//! `drivers`, `arch`, `fs`, `sound` and `include` in that order (each file's
//! slots discarded, as ext4 mounted with `discard` does); that is one round.
//! After every step a row gives mm_stat's sizes and the overhead
//! `used − compressed` (and for afmalloc the real overhead: metadata and
//! the chunks' internal fragmentation), beside the document's figures. A
//! last row per allocator shows the state after `compact()`.
//!
//! The corpus is the tarball of `RunOptions::corpus` (default Debian's
//! linux-source-6.1), streamed through xz, read once, compressed once (in
//! parallel; compression does not depend on the allocator) and written to
//! every device in every round. Without a tarball the experiment says how to
//! get one and runs on files found on this machine, labelled as such.

mod band;
mod ext4_trace;
mod live;
mod plot;
mod replay;

pub use ext4_trace::check_replay_trace;
pub mod rows;

use super::{Experiment, ExperimentError, RunOptions, Scale};
use crate::corpus::{self, Corpus, Sampling};
use crate::observe;
use crate::params::{Param, Params};
use crate::plots::Plot;
use crate::report::{round_to, Report, Row};
use crate::summary::Headline;
use pageframe::page_source::CpuPages;
use pageframe::zram::{Backend, Compressor, Prepared, Zram, ZramConfig};
use pageframe::{CpuId, LocalPageAllocator, MachineDesc};
use rows::{FilesRow, ReferenceRatios, ReferenceSizes, Sizes};
use std::io::Read;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// Size of each real or served device of the live runs.
const LIVE_DISK_BYTES: u64 = 4 << 30;
/// The directories removed after each untar, in the document's order.
pub const REMOVED: [&str; 5] = ["drivers", "arch", "fs", "sound", "include"];
/// The allocators compared.
pub const BACKENDS: [Backend; 3] = [
    Backend::Zsmalloc { chain_size: 4 },
    Backend::Zsmalloc { chain_size: 8 },
    Backend::Afmalloc,
];

const MIB: f64 = (1u64 << 20) as f64;
/// Progress units: loading, compressing, then each step.
const LOAD_UNITS: u64 = 100;
const PREPARE_UNITS: u64 = 100;
const STEP_UNITS: u64 = 10;

/// Counts the compressed bytes read, for progress.
struct Counting<R> {
    inner: R,
    read: Arc<AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let len = self.inner.read(buf)?;
        self.read.fetch_add(len as u64, Ordering::Relaxed);
        Ok(len)
    }
}

/// The tarball the run reads: `--corpus`, else [`corpus::DEFAULT_TARBALL`].
fn corpus_path(options: &RunOptions) -> PathBuf {
    options
        .corpus
        .clone()
        .unwrap_or_else(|| PathBuf::from(corpus::DEFAULT_TARBALL))
}

/// The tarball, or the fallback corpus with a note saying so.
fn load(
    path: &Path,
    sampling: Sampling,
    fallback_mib: usize,
    total: u64,
    notes: &mut Vec<String>,
) -> Result<Corpus, ExperimentError> {
    let sampled = if sampling.one_in > 1 {
        format!(
            ", one regular file in {} (sample_one_in; full scale reads every file)",
            sampling.one_in
        )
    } else {
        String::new()
    };
    match crate::files::open_input(path) {
        Ok(file) => {
            let size = file.metadata().map(|meta| meta.len()).unwrap_or(0).max(1);
            let read = Arc::new(AtomicU64::new(0));
            let counting = Counting {
                inner: std::io::BufReader::with_capacity(1 << 20, file),
                read: Arc::clone(&read),
            };
            let reader = xz2::read::XzDecoder::new(counting);
            let corpus =
                corpus::from_tar(reader, &path.display().to_string(), true, sampling, |_| {
                    observe::progress(read.load(Ordering::Relaxed) * LOAD_UNITS / size, total);
                })
                .map_err(|err| ExperimentError::Failed(format!("{}: {err}", path.display())))?;
            notes.push(format!(
                "corpus: {} streamed through xz{sampled}: {} files, {} pages ({:.2} MiB)",
                corpus.label,
                corpus.files.len(),
                corpus.nr_pages(),
                corpus.pages.len() as f64 / MIB
            ));
            Ok(corpus)
        }
        Err(err) => {
            let corpus = corpus::from_dirs(&corpus::fallback_roots(), fallback_mib << 20, sampling);
            if corpus.nr_pages() == 0 {
                return Err(ExperimentError::Failed(format!(
                    "no corpus: {} ({err}) and no files found for the fallback",
                    path.display()
                )));
            }
            notes.push(format!(
                "NOT THE SOURCE DOCUMENT'S DATA: {} is missing ({err}); install it with `apt-get install linux-source-6.1` (Debian) or pass another kernel .tar.xz with --corpus. This run used a {}{sampled}: {} files, {} pages ({:.2} MiB); the directories removed are its five largest, largest first",
                path.display(),
                corpus.label,
                corpus.files.len(),
                corpus.nr_pages(),
                corpus.pages.len() as f64 / MIB
            ));
            Ok(corpus)
        }
    }
}

/// Same-page test and compression of every page, on up to `threads`
/// threads (at most 16).
fn prepare(
    corpus: &Corpus,
    compressor: Compressor,
    threads: NonZeroUsize,
    total: u64,
) -> Result<Vec<Prepared>, ExperimentError> {
    let nr_pages = corpus.nr_pages();
    let threads = threads.get().min(16);
    let chunk = nr_pages.div_ceil(threads).max(1);
    let done = AtomicUsize::new(0);
    let parts: Vec<Result<Vec<Prepared>, String>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..nr_pages)
            .step_by(chunk)
            .map(|start| {
                let done = &done;
                scope.spawn(move || {
                    let mut out = Vec::with_capacity(chunk);
                    for index in start..(start + chunk).min(nr_pages) {
                        out.push(
                            Prepared::new(compressor, corpus.page(index))
                                .map_err(|err| err.to_string())?,
                        );
                        if index % 1024 == 0 {
                            done.fetch_add(1024, Ordering::Relaxed);
                        }
                    }
                    Ok(out)
                })
            })
            .collect();
        while workers.iter().any(|worker| !worker.is_finished()) {
            std::thread::sleep(std::time::Duration::from_millis(50));
            let fraction = done.load(Ordering::Relaxed).min(nr_pages) as u64 * PREPARE_UNITS
                / nr_pages.max(1) as u64;
            observe::progress(LOAD_UNITS + fraction, total);
        }
        workers
            .into_iter()
            .map(|worker| {
                worker
                    .join()
                    .unwrap_or_else(|_| Err("a compression thread panicked".into()))
            })
            .collect()
    });
    let mut prepared = Vec::with_capacity(nr_pages);
    for part in parts {
        prepared.extend(part.map_err(ExperimentError::Failed)?);
    }
    Ok(prepared)
}

/// The file system's view: each file's slots (the file→slots map) and the
/// free slots. Directories are path prefixes: removing one discards every
/// file under it.
struct Tree {
    slots: Vec<Option<Vec<u32>>>,
    free: Vec<u32>,
}

impl Tree {
    fn new(corpus: &Corpus) -> Tree {
        Tree {
            slots: vec![None; corpus.files.len()],
            free: (0..corpus.nr_pages() as u32).rev().collect(),
        }
    }

    /// Writes every file; a file that exists is replaced (tar unlinks it
    /// first, so its blocks are discarded before the new ones are written).
    fn untar(
        &mut self,
        zram: &mut Zram<'_>,
        corpus: &Corpus,
        prepared: &[Prepared],
    ) -> Result<(), ExperimentError> {
        for (index, file) in corpus.files.iter().enumerate() {
            self.unlink(zram, index)?;
            let mut slots = Vec::with_capacity(file.nr_pages);
            for page in &prepared[file.first_page..file.first_page + file.nr_pages] {
                let slot = self
                    .free
                    .pop()
                    .ok_or_else(|| ExperimentError::failed("device full"))?;
                zram.write_prepared(slot as usize, page)
                    .map_err(ExperimentError::failed)?;
                slots.push(slot);
            }
            self.slots[index] = Some(slots);
        }
        Ok(())
    }

    fn unlink(&mut self, zram: &mut Zram<'_>, index: usize) -> Result<(), ExperimentError> {
        for slot in self.slots[index].take().unwrap_or_default() {
            zram.discard(slot as usize)
                .map_err(ExperimentError::failed)?;
            self.free.push(slot);
        }
        Ok(())
    }

    /// `rm -r dir`: discards the slots of every file under it.
    fn remove(
        &mut self,
        zram: &mut Zram<'_>,
        corpus: &Corpus,
        dir: &str,
    ) -> Result<(), ExperimentError> {
        for (index, file) in corpus.files.iter().enumerate() {
            if corpus::is_under(&file.path, dir) {
                self.unlink(zram, index)?;
            }
        }
        Ok(())
    }
}

/// The document's figures per step: (orig, compr, used, overhead ratio %,
/// real overhead ratio %) for zsmalloc and afmalloc, by round.
struct Reference {
    round: u32,
    zsmalloc: [(f64, f64, f64, f64); 6],
    afmalloc: [(f64, f64, f64, f64, f64); 6],
}

const REFERENCES: [Reference; 4] = [
    Reference {
        round: 1,
        zsmalloc: [
            (526.23, 199.18, 209.81, 5.34),
            (288.68, 97.45, 104.08, 6.80),
            (177.68, 61.14, 66.93, 9.47),
            (146.83, 47.34, 52.79, 11.51),
            (124.52, 38.87, 44.30, 13.96),
            (104.29, 31.70, 36.83, 16.19),
        ],
        afmalloc: [
            (526.27, 199.18, 206.37, 4.02, 3.61),
            (288.71, 97.45, 101.25, 6.01, 3.90),
            (177.71, 61.14, 63.44, 7.19, 3.76),
            (146.86, 47.34, 49.20, 8.39, 3.93),
            (124.55, 38.88, 40.41, 9.54, 3.95),
            (104.32, 31.70, 32.96, 10.81, 3.96),
        ],
    },
    Reference {
        round: 2,
        zsmalloc: [
            (535.59, 200.30, 211.77, 5.73),
            (294.84, 98.28, 106.24, 8.11),
            (179.99, 61.58, 69.34, 12.60),
            (148.67, 47.75, 55.19, 15.57),
            (125.98, 39.26, 46.62, 18.75),
            (105.05, 32.03, 39.18, 22.32),
        ],
        afmalloc: [
            (535.59, 200.30, 207.59, 4.60, 3.64),
            (294.84, 98.27, 102.14, 6.34, 3.94),
            (179.99, 61.58, 63.91, 8.09, 3.78),
            (148.67, 47.75, 49.64, 9.37, 3.95),
            (125.98, 39.26, 40.82, 10.78, 3.97),
            (105.05, 32.03, 33.30, 12.81, 3.98),
        ],
    },
    Reference {
        round: 9,
        zsmalloc: [
            (535.59, 200.31, 211.88, 5.77),
            (294.84, 98.28, 106.62, 8.49),
            (179.99, 61.59, 73.83, 19.88),
            (148.67, 47.76, 59.58, 24.76),
            (125.98, 39.27, 51.10, 30.14),
            (105.05, 32.04, 43.68, 36.31),
        ],
        afmalloc: [
            (535.59, 200.30, 207.60, 4.46, 3.64),
            (294.84, 98.27, 102.14, 6.29, 3.94),
            (179.99, 61.58, 63.91, 13.39, 3.79),
            (148.67, 47.75, 49.64, 16.71, 3.96),
            (125.98, 39.26, 40.82, 19.15, 3.98),
            (105.05, 32.03, 33.31, 21.97, 3.98),
        ],
    },
    Reference {
        round: 10,
        zsmalloc: [
            (535.59, 200.31, 211.89, 5.78),
            (294.84, 98.28, 106.68, 8.55),
            (179.99, 61.59, 74.14, 20.37),
            (148.67, 47.76, 59.94, 25.50),
            (125.98, 39.27, 51.46, 31.04),
            (105.05, 32.04, 44.01, 37.35),
        ],
        afmalloc: [
            (535.59, 200.31, 207.60, 4.62, 3.64),
            (294.84, 98.28, 102.15, 6.97, 3.94),
            (179.99, 61.58, 63.91, 14.74, 3.79),
            (148.67, 47.75, 49.64, 18.36, 3.96),
            (125.98, 39.26, 40.82, 21.28, 3.98),
            (105.05, 32.03, 33.31, 25.71, 3.98),
        ],
    },
];

/// The document's figures for a step: (orig, compr, used, ratio, real ratio).
pub fn reference(
    backend: Backend,
    round: u32,
    step: usize,
) -> Option<(f64, f64, f64, f64, Option<f64>)> {
    let reference = REFERENCES
        .iter()
        .find(|reference| reference.round == round)?;
    match backend {
        Backend::Afmalloc => reference
            .afmalloc
            .get(step)
            .map(|(orig, compr, used, ratio, real)| (*orig, *compr, *used, *ratio, Some(*real))),
        Backend::Zsmalloc { .. } => reference
            .zsmalloc
            .get(step)
            .map(|(orig, compr, used, ratio)| (*orig, *compr, *used, *ratio, None)),
    }
}

/// The report row of a typed row.
fn typed(row: &impl serde::Serialize) -> Result<Row, ExperimentError> {
    Row::from_typed(row).map_err(ExperimentError::failed)
}

/// The row of a step of the `files` workload.
fn row(
    zram: &Zram<'_>,
    backend: Backend,
    round: u32,
    step: &str,
    step_index: usize,
    whole_kernel: bool,
) -> FilesRow {
    let stat = zram.mm_stat();
    let pool = zram.pool().stats();
    let compr = stat.compr_data_size as f64;
    let used = stat.mem_used_total as f64;
    let overhead = used - compr;
    let ratio = |bytes: f64| {
        if compr > 0.0 {
            100.0 * bytes / compr
        } else {
            0.0
        }
    };
    let real = (backend == Backend::Afmalloc).then_some(pool.real_overhead_bytes as f64);
    let reference = reference(backend, round, step_index);
    FilesRow {
        sizes: Sizes {
            allocator: backend.label(),
            round,
            step: step.into(),
            orig_size: round_to(stat.orig_data_size as f64 / MIB, 2),
            compr_size: round_to(compr / MIB, 2),
            used_size: round_to(used / MIB, 2),
            overhead: round_to(overhead / MIB, 2),
            overhead_ratio: round_to(ratio(overhead), 2),
            real_overhead: real.map(|real| round_to(real / MIB, 2)),
            real_overhead_ratio: real.map(|real| round_to(ratio(real), 2)),
        },
        // Sizes compare only when the whole tarball was written.
        reference_sizes: whole_kernel.then(|| ReferenceSizes {
            reference_orig_size: reference.map(|figures| figures.0),
            reference_compr_size: reference.map(|figures| figures.1),
            reference_used_size: reference.map(|figures| figures.2),
        }),
        reference: ReferenceRatios {
            reference_overhead_ratio: reference.map(|figures| figures.3),
            reference_real_overhead_ratio: reference.and_then(|figures| figures.4),
        },
        pages_compacted: None,
    }
}

/// The experiment `zram-untar`.
pub struct ZramUntar;

impl Experiment for ZramUntar {
    fn name(&self) -> &'static str {
        "zram-untar"
    }

    fn source(&self) -> &'static str {
        "afmalloc.txt"
    }

    fn about(&self) -> &'static str {
        "zram overhead of zsmalloc and afmalloc while kernel source is untarred and its directories removed, round after round"
    }

    /// The parameters of `zram-untar` with their defaults.
    fn params(&self, scale: Scale) -> Vec<Param> {
        let (rounds, one_in, fallback_mib) = match scale {
            Scale::Quick => (3, 4, 96),
            Scale::Full => (10, 1, 512),
        };
        vec![
            Param::choice(
                "workload",
                "ext4-trace: the real ext4 workload's block trace replayed (the shipped one, --trace FILE, or recorded now with --fs ext4); files: file contents written page by page, no file system",
                "ext4-trace",
                &["ext4-trace", "files"],
            ),
            Param::choice(
                "codec",
                "The compressor whose sizes are stored: lz4 (zram's default and the kernel run's), lzo (the document's), zstd",
                "lz4",
                &["lz4", "lzo", "zstd"],
            ),
            Param::bool(
                "kernel_replay",
                "Also replay the trace on a real /dev/zram (root; always with --fs ext4): the kernel's zsmalloc given the same block stream, a column beside",
                false,
            ),
            Param::int(
                "kernel_runs",
                "Also run the workload this many times alone on a fresh real /dev/zram (root; needs the tarball) and judge every row against the kernel's band, min - 2 to max + 2 points per step (0: no band)",
                0,
                0,
                20,
            ),
            Param::choice(
                "kernel_runs_with",
                "What runs beside the real /dev/zram in the kernel_runs: alone (nothing: one untar, the document's conditions and those of the default recording, record_beside = none) or served (a fresh served pageframe zram receiving the same workload at once: two untars, the conditions of record_beside = kernel)",
                "alone",
                &["served", "alone"],
            ),
            Param::choice(
                "record_beside",
                "What runs beside the served pageframe zram while --fs ext4 records the trace: none (the served device alone, one untar, the document's conditions) or kernel (a real /dev/zram receiving the same workload at once, its mm_stat in the kernel_* columns; two untars at once change ext4's discard timing)",
                "none",
                &["none", "kernel"],
            ),
            Param::int(
                "rounds",
                "Untar-and-remove rounds (the document: 10)",
                rounds,
                1,
                100,
            ),
            Param::int(
                "sample_one_in",
                "Keep one file in this many of the corpus (1: every file)",
                one_in,
                1,
                1000,
            ),
            Param::int(
                "zstd_level",
                "The zstd level when codec is zstd (files; traces carry level 3)",
                3,
                1,
                22,
            ),
            Param::int(
                "fallback_mib",
                "MiB of files to gather when there is no kernel tarball",
                fallback_mib,
                1,
                8192,
            ),
        ]
    }

    fn run(&self, options: &RunOptions, params: &Params) -> Result<Report, ExperimentError> {
        if options.fs_ext4 || params.choice("workload") == "ext4-trace" {
            return ext4_trace::run(options, params);
        }
        let rounds = params.int("rounds") as u32;
        let sampling = Sampling {
            one_in: params.int("sample_one_in") as usize,
        };
        let compressor = match params.choice("codec") {
            "lzo" => Compressor::Lzo,
            "zstd" => Compressor::Zstd {
                level: params.int("zstd_level") as i32,
            },
            _ => Compressor::Lz4,
        };
        let total =
            LOAD_UNITS + PREPARE_UNITS + BACKENDS.len() as u64 * u64::from(rounds) * 6 * STEP_UNITS;
        let mut notes = Vec::new();
        let corpus = load(
            &corpus_path(options),
            sampling,
            params.int("fallback_mib") as usize,
            total,
            &mut notes,
        )?;
        let prepared = prepare(&corpus, compressor, options.threads, total)?;
        let removed: Vec<String> = if corpus.kernel_source {
            REMOVED.iter().map(|dir| dir.to_string()).collect()
        } else {
            corpus.largest_tops(REMOVED.len())
        };
        let whole_kernel = corpus.kernel_source && sampling.one_in == 1;
        let mut rows = Vec::new();
        let mut done = LOAD_UNITS + PREPARE_UNITS;
        for backend in BACKENDS {
            let machine_bytes = ((corpus.pages.len() as u64 * 2).max(1 << 30)).next_power_of_two();
            let machine = MachineDesc::uniform(machine_bytes, 1, 1)?;
            let allocator = LocalPageAllocator::boot(&machine)?;
            let cpu = allocator.cpu(CpuId(0)).map_err(ExperimentError::failed)?;
            let pool = backend
                .create(CpuPages::new(cpu))
                .map_err(ExperimentError::failed)?;
            let config = ZramConfig {
                compressor,
                ..ZramConfig::new(corpus.nr_pages().max(1))
            };
            let mut zram = Zram::new(pool, config).map_err(ExperimentError::failed)?;
            let mut tree = Tree::new(&corpus);
            for round in 1..=rounds {
                tree.untar(&mut zram, &corpus, &prepared)?;
                rows.push(typed(&row(
                    &zram,
                    backend,
                    round,
                    "untar",
                    0,
                    whole_kernel,
                ))?);
                done += STEP_UNITS;
                observe::progress(done, total);
                for (at, dir) in removed.iter().enumerate() {
                    tree.remove(&mut zram, &corpus, dir)?;
                    rows.push(typed(&row(
                        &zram,
                        backend,
                        round,
                        &format!("rm {dir}"),
                        at + 1,
                        whole_kernel,
                    ))?);
                    done += STEP_UNITS;
                    observe::progress(done, total);
                }
            }
            let freed = zram.compact().map_err(ExperimentError::failed)?;
            zram.check_invariants().map_err(ExperimentError::failed)?;
            rows.push(typed(&FilesRow {
                pages_compacted: Some(freed),
                ..row(&zram, backend, rounds, "compact", usize::MAX, whole_kernel)
            })?);
            notes.push(format!(
                "{} mm_stat after compact: {}",
                backend.label(),
                zram.mm_stat().to_string().trim_end()
            ));
        }
        observe::progress(total, total);
        notes.push(format!(
            "sizes in MiB; ratios in % of compr_size; {} compression; overhead = used_size - compr_size (used_size: the allocator's pages, for afmalloc the pages of its slabs, the document's SUnreclaim delta); real_overhead (afmalloc): metadata + chunk rounding",
            compressor.name()
        ));
        notes.push("reference_*: the document's figures (Linux 3.17 source, lzo, zsmalloc of 2014 with merged classes and 4-page zspages, ext4 on zram); its first single-round table for round 1, the last two blocks of its 10-round table for rounds 9 and 10, the block after round 1 for round 2; zsmalloc figures are beside both zsmalloc rows".into());
        Ok(Report {
            experiment: "zram-untar".into(),
            seed: options.seed,
            scale: options.scale.name().into(),
            rows,
            notes,
        })
    }

    /// The range of zsmalloc's overhead ratio over every step and round
    /// beside the range of afmalloc's real overhead ratio (the document:
    /// zsmalloc 5–38 %, afmalloc real 3.6–4.0 %).
    fn headline(&self, report: &Report) -> Option<Headline> {
        let sizes: Vec<Sizes> = report.results_as().collect();
        let range = |allocator: &str, value: fn(&Sizes) -> Option<f64>| {
            let values: Vec<f64> = sizes
                .iter()
                .filter(|row| row.allocator.starts_with(allocator) && row.step != "compact")
                .filter_map(value)
                .collect();
            let min = values.iter().copied().fold(f64::INFINITY, f64::min);
            let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            (!values.is_empty()).then_some((min, max))
        };
        let zsmalloc = range("zsmalloc", |row| Some(row.overhead_ratio))?;
        let afmalloc = range("afmalloc", |row| row.real_overhead_ratio)?;
        Some(Headline {
            metric: "overhead ratio, zsmalloc vs afmalloc real".into(),
            ours: format!(
                "zsmalloc {:.1}–{:.1}% vs afmalloc {:.1}–{:.1}%",
                zsmalloc.0, zsmalloc.1, afmalloc.0, afmalloc.1
            ),
            document: "zsmalloc 5.3–37.4% vs afmalloc 3.6–4.0%".into(),
            direction_matches: Some(afmalloc.1 < zsmalloc.1),
        })
    }

    fn plots(&self, report: &Report) -> Vec<Plot> {
        plot::plots(report)
    }
}

#[cfg(test)]
mod tests;
