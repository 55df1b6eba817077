//! A workload that ages a machine the way a server's life does: repeated
//! runs of a benchmark whose heap is pre-touched at start and freed at
//! exit, on a machine that also reads a data set larger than memory through
//! the page cache, writes and rotates logs, and runs short-lived helper
//! processes. Free memory then comes back from reclaim (in LRU order) and
//! exits (in address order), and the heap of each run is built from it.
//!
//! Nothing here is fitted to a result: the sizes derive from the heap and
//! the machine's memory ([`AgingConfig::for_machine`]), the choices from a
//! seeded RNG. The first run on a fresh machine touches its heap before any
//! other activity, so it is placed as a fresh machine places it.
//!
//! Order of one run ([`AgingWorkload::benchmark_run`]): spawn, pre-touch
//! the heap (faults through the slow path; kswapd runs between chunks),
//! hand the heap's PFNs to the caller's measurement, then the run's work:
//! read the data set and write the log in chunks, with a helper process
//! per chunk, kswapd running after each; exit; rotate the logs.
//!
//! Two options vary the work, both off by default: a hot file, a slice of
//! which is re-read after every data-set read so that it stays resident on
//! the active file list ([`AgingConfig::hot_file_pages`]), and the work's
//! chunks rotating over several CPUs ([`AgingConfig::work_cpus`]). A caller
//! that builds the heap its own way (several threads faulting it, say)
//! hands its pre-touch to [`AgingWorkload::benchmark_run_with`]; the rest
//! of the run is the workload's.
//!
//! Invariant: the config was validated by [`AgingWorkload::new`], so every
//! size in bytes fits a file offset and every CPU of the work exists.

use super::error::MmError;
use super::{FileId, Mm, MmConfig, Pid};
use crate::page_alloc::LocalPageAllocator;
use crate::rng::MachineRng;
use crate::types::CpuId;

/// Sizes of the aging workload, in pages, and its options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AgingConfig {
    /// The benchmark's heap.
    pub heap_pages: u64,
    /// Files of the data set.
    pub dataset_files: u32,
    /// Pages of each data set file.
    pub dataset_file_pages: u64,
    /// Data set pages read per run.
    pub read_pages_per_run: u64,
    /// Pages per read (and per kswapd step).
    pub chunk_pages: u64,
    /// Log pages written per run.
    pub log_pages_per_run: u64,
    /// Logs kept; older ones are deleted at rotation.
    pub logs_kept: u32,
    /// Anon pages of the helper process started per chunk.
    pub helper_pages: u64,
    /// CPU of the benchmark, of log rotation, and of the work's first chunk.
    pub cpu: CpuId,
    /// CPUs the run's work rotates over: chunk `n` of a run (its read, hot
    /// file re-read, log write and helper process) runs on CPU
    /// `cpu + n % work_cpus`. 1 (the default): all on `cpu`.
    pub work_cpus: u16,
    /// Pages of a hot file (0, the default: none). After every data-set
    /// read, the next sixteenth of it (at least a page, wrapping at its end)
    /// is read again on the same CPU; a page read twice while on the
    /// inactive list is activated, so the file stays resident on the
    /// active file list while the data set cycles through the inactive one.
    pub hot_file_pages: u64,
}

/// Why [`AgingWorkload::new`] refused an [`AgingConfig`] (EINVAL).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AgingConfigError {
    /// `dataset_files` is 0: the runs would have nothing to read.
    #[error("the data set has no files")]
    NoDatasetFiles,
    /// `chunk_pages` is 0: a run's reads would never end.
    #[error("chunk_pages is 0")]
    ZeroChunk,
    /// `work_cpus` is 0: the work would have no CPU.
    #[error("work_cpus is 0")]
    NoWorkCpus,
    /// CPUs `cpu .. cpu + work_cpus` are not all CPUs of the machine.
    #[error("{count} work CPUs from CPU {first} go beyond the machine's {nr_cpus} CPUs")]
    CpusBeyondMachine {
        /// `cpu`.
        first: CpuId,
        /// `work_cpus`.
        count: u16,
        /// CPUs of the machine.
        nr_cpus: usize,
    },
    /// A size whose bytes do not fit a file offset (`loff_t`); for
    /// `hot_file_pages`, the end of its last re-read (a sixteenth past it).
    #[error("{field} of {pages} pages is beyond the largest file offset")]
    TooLarge {
        /// The config field.
        field: &'static str,
        /// Its value.
        pages: u64,
    },
    /// More pages than a run can hold or do on this machine: a heap or
    /// helper larger than its managed memory (no swap: it could never be
    /// resident), or more than [`MAX_WORK_FACTOR`] times the memory read
    /// or written per run.
    #[error("{field} of {pages} pages is more than the {limit} this machine allows")]
    TooMuchWork {
        /// The config field.
        field: &'static str,
        /// Its value.
        pages: u64,
        /// The most this machine allows.
        limit: u64,
    },
    /// More data set files than [`MAX_DATASET_FILES`].
    #[error("{0} data set files, more than {MAX_DATASET_FILES}")]
    TooManyFiles(u32),
}

/// The most a run may read or write, in multiples of the machine's
/// managed memory (a server's run reads its memory's worth in the default
/// workload).
pub const MAX_WORK_FACTOR: u64 = 64;

/// The most files a data set may have (each is a file of the page cache,
/// created at the start).
pub const MAX_DATASET_FILES: u32 = 1 << 16;

impl AgingConfig {
    /// The workload for a heap of `heap_pages` on a machine of
    /// `memory_pages`: a data set twice the memory in 16 files, a run
    /// reading as much as the memory, 1/64 of a file per read, logs of
    /// 1/64 of the memory per run (four kept), helpers of 1/4 of a read;
    /// all the work on `cpu`, no hot file.
    pub fn for_machine(heap_pages: u64, memory_pages: u64, cpu: CpuId) -> AgingConfig {
        let dataset_files = 16;
        let dataset_file_pages = (memory_pages.saturating_mul(2) / dataset_files as u64).max(1);
        let chunk_pages = (dataset_file_pages / 64).max(1);
        AgingConfig {
            heap_pages,
            dataset_files,
            dataset_file_pages,
            read_pages_per_run: memory_pages,
            chunk_pages,
            log_pages_per_run: (memory_pages / 64).max(1),
            logs_kept: 4,
            helper_pages: (chunk_pages / 4).max(1),
            cpu,
            work_cpus: 1,
            hot_file_pages: 0,
        }
    }

    /// Checks that the workload can run on `allocator` without a size
    /// overflowing or a CPU missing.
    fn validate(&self, allocator: &LocalPageAllocator) -> Result<(), AgingConfigError> {
        if self.dataset_files == 0 {
            return Err(AgingConfigError::NoDatasetFiles);
        }
        if self.chunk_pages == 0 {
            return Err(AgingConfigError::ZeroChunk);
        }
        if self.work_cpus == 0 {
            return Err(AgingConfigError::NoWorkCpus);
        }
        let nr_cpus = allocator.nr_cpus();
        let last_cpu = usize::from(self.cpu.0) + usize::from(self.work_cpus) - 1;
        if last_cpu >= nr_cpus {
            return Err(AgingConfigError::CpusBeyondMachine {
                first: self.cpu,
                count: self.work_cpus,
                nr_cpus,
            });
        }
        if self.dataset_files > MAX_DATASET_FILES {
            return Err(AgingConfigError::TooManyFiles(self.dataset_files));
        }
        let page_bytes = page_bytes(allocator);
        // The hot file's re-read starts anywhere in it and reads a
        // sixteenth (at least a page) on: its end must be an offset too.
        let hot_reread_end = self
            .hot_file_pages
            .saturating_add((self.hot_file_pages / 16).max(1));
        for (field, pages) in [
            ("dataset_file_pages", self.dataset_file_pages),
            ("chunk_pages", self.chunk_pages),
            ("log_pages_per_run", self.log_pages_per_run),
        ] {
            file_bytes(field, pages, page_bytes)?;
        }
        file_bytes("hot_file_pages", hot_reread_end, page_bytes).map_err(|_| {
            AgingConfigError::TooLarge {
                field: "hot_file_pages",
                pages: self.hot_file_pages,
            }
        })?;
        let managed = allocator.managed_pages();
        let work = managed.saturating_mul(MAX_WORK_FACTOR);
        for (field, pages, limit) in [
            ("heap_pages", self.heap_pages, managed),
            ("helper_pages", self.helper_pages, managed),
            ("read_pages_per_run", self.read_pages_per_run, work),
            ("log_pages_per_run", self.log_pages_per_run, work),
        ] {
            if pages > limit {
                return Err(AgingConfigError::TooMuchWork {
                    field,
                    pages,
                    limit,
                });
            }
        }
        Ok(())
    }
}

/// Bytes of a page of `allocator`'s machine.
fn page_bytes(allocator: &LocalPageAllocator) -> u64 {
    1u64 << allocator.layout().page_shift
}

/// `pages` in bytes, as a file size; TooLarge beyond the largest offset.
fn file_bytes(field: &'static str, pages: u64, page_bytes: u64) -> Result<i64, AgingConfigError> {
    pages
        .checked_mul(page_bytes)
        .and_then(|bytes| i64::try_from(bytes).ok())
        .ok_or(AgingConfigError::TooLarge { field, pages })
}

/// The hot file and where its next re-read starts.
#[derive(Clone, Copy, Debug)]
struct HotFile {
    file: FileId,
    /// Its size in pages (not 0).
    pages: u64,
    /// The next re-read's first page, modulo `pages`.
    cursor: u64,
}

/// The aging workload: a reclaim layer and the files the runs use.
pub struct AgingWorkload<'a> {
    mm: Mm<'a>,
    config: AgingConfig,
    dataset: Vec<FileId>,
    hot: Option<HotFile>,
    logs: Vec<FileId>,
    rng: MachineRng,
    runs: u64,
}

impl<'a> AgingWorkload<'a> {
    /// Creates the data set files, then the hot file if any (their sizes
    /// only: nothing is cached until read) over `allocator`; the RNG is
    /// seeded with `seed`. A config that cannot run is
    /// [`MmError::InvalidAgingConfig`], before anything is created.
    pub fn new(
        allocator: &'a LocalPageAllocator,
        config: AgingConfig,
        seed: u64,
    ) -> Result<AgingWorkload<'a>, MmError> {
        config.validate(allocator)?;
        let mut mm = Mm::new(allocator, MmConfig::default());
        let page_bytes = page_bytes(allocator);
        let size = file_bytes("dataset_file_pages", config.dataset_file_pages, page_bytes)?;
        let mut dataset = Vec::new();
        for _ in 0..config.dataset_files {
            let file = mm.create_file();
            mm.truncate(config.cpu, file, size)?;
            dataset.push(file);
        }
        let hot = match config.hot_file_pages {
            0 => None,
            pages => {
                let file = mm.create_file();
                let size = file_bytes("hot_file_pages", pages, page_bytes)?;
                mm.truncate(config.cpu, file, size)?;
                Some(HotFile {
                    file,
                    pages,
                    cursor: 0,
                })
            }
        };
        Ok(AgingWorkload {
            mm,
            config,
            dataset,
            hot,
            logs: Vec::new(),
            rng: MachineRng::new(seed),
            runs: 0,
        })
    }

    /// The reclaim layer (for its counters, meminfo and invariants).
    pub fn mm(&self) -> &Mm<'a> {
        &self.mm
    }

    /// The sizes and options.
    pub fn config(&self) -> AgingConfig {
        self.config
    }

    /// The data set's files.
    pub fn dataset(&self) -> &[FileId] {
        &self.dataset
    }

    /// The hot file, when [`AgingConfig::hot_file_pages`] is not 0.
    pub fn hot_file(&self) -> Option<FileId> {
        self.hot.map(|hot| hot.file)
    }

    /// Benchmark runs done.
    pub fn runs(&self) -> u64 {
        self.runs
    }

    /// One benchmark run: the heap is pre-touched, `measure` gets its PFNs
    /// in virtual address order, then the run works, exits, and the logs
    /// rotate. Returns what `measure` returned.
    pub fn benchmark_run<T>(&mut self, measure: impl FnOnce(&[u64]) -> T) -> Result<T, MmError> {
        let config = self.config;
        self.benchmark_run_with(|mm| pretouch_heap(mm, &config), measure)
    }

    /// One benchmark run whose heap `pretouch` builds instead of the
    /// benchmark's own pre-touch: it gets the reclaim layer and returns the
    /// heap's processes (distinct, live); when it fails, it leaves no
    /// process of its own behind. `measure` gets the PFNs of all their
    /// pages ordered by virtual page (then PFN), the processes exit in the
    /// order given, and the run goes on as [`Self::benchmark_run`].
    pub fn benchmark_run_with<T>(
        &mut self,
        pretouch: impl FnOnce(&mut Mm<'a>) -> Result<Vec<Pid>, MmError>,
        measure: impl FnOnce(&[u64]) -> T,
    ) -> Result<T, MmError> {
        let pids = pretouch(&mut self.mm)?;
        let mut pages = Vec::new();
        for &pid in &pids {
            pages.extend(self.mm.process_pages(pid)?);
        }
        pages.sort_unstable();
        let pfns: Vec<u64> = pages.into_iter().map(|(_, pfn)| pfn).collect();
        let measured = measure(&pfns);
        for pid in pids {
            self.mm.exit(pid)?;
        }
        self.work()?;
        self.rotate_logs()?;
        self.mm.kswapd_run_all()?;
        self.runs += 1;
        Ok(measured)
    }

    /// The run's work: reads of random data set files at random offsets,
    /// each followed by the hot file's re-read, log appends, and a
    /// short-lived helper per chunk, the chunks rotating over the work
    /// CPUs; kswapd after each.
    fn work(&mut self) -> Result<(), MmError> {
        let page_bytes = page_bytes(self.mm.allocator());
        let log = self.mm.create_file();
        self.logs.push(log);
        let chunks = self
            .config
            .read_pages_per_run
            .div_ceil(self.config.chunk_pages);
        let log_per_chunk = self.config.log_pages_per_run.div_ceil(chunks.max(1));
        for chunk in 0..chunks {
            // Below cpu + work_cpus, a CPU of the machine (validated).
            let cpu = CpuId(self.config.cpu.0 + (chunk % u64::from(self.config.work_cpus)) as u16);
            let file = self.dataset[self.rng.below(self.dataset.len() as u64) as usize];
            let start = self.rng.below(
                self.config
                    .dataset_file_pages
                    .saturating_sub(self.config.chunk_pages)
                    + 1,
            );
            self.mm.read(
                cpu,
                file,
                start * page_bytes,
                self.config.chunk_pages * page_bytes,
            )?;
            self.reread_hot(cpu, page_bytes)?;
            let end = self.mm.file_size(log)?;
            self.mm.write(cpu, log, end, log_per_chunk * page_bytes)?;
            let helper = self.mm.spawn(cpu)?;
            let touched = self.mm.touch(helper, 0, self.config.helper_pages);
            // The helper exits whether or not its memory could be had.
            self.mm.exit(helper)?;
            touched?;
            self.mm.kswapd_run_all()?;
        }
        self.mm.sync();
        Ok(())
    }

    /// Reads the hot file's next sixteenth on `cpu`, if there is a hot file.
    fn reread_hot(&mut self, cpu: CpuId, page_bytes: u64) -> Result<(), MmError> {
        let Some(hot) = self.hot.as_mut() else {
            return Ok(());
        };
        let slice = (hot.pages / 16).max(1);
        let at = hot.cursor % hot.pages;
        self.mm
            .read(cpu, hot.file, at * page_bytes, slice * page_bytes)?;
        hot.cursor = at + slice;
        Ok(())
    }

    /// Deletes the oldest logs beyond `logs_kept`.
    fn rotate_logs(&mut self) -> Result<(), MmError> {
        while self.logs.len() > self.config.logs_kept as usize {
            let oldest = self.logs.remove(0);
            self.mm.delete_file(self.config.cpu, oldest)?;
        }
        Ok(())
    }
}

/// The benchmark's own pre-touch: one process on `config.cpu` faults the
/// heap in chunks, kswapd running after each.
fn pretouch_heap(mm: &mut Mm<'_>, config: &AgingConfig) -> Result<Vec<Pid>, MmError> {
    let pid = mm.spawn(config.cpu)?;
    let mut touched = 0;
    while touched < config.heap_pages {
        let count = config.chunk_pages.min(config.heap_pages - touched);
        if let Err(err) = mm
            .touch(pid, touched, count)
            .and_then(|()| mm.kswapd_run_all())
        {
            // A benchmark that cannot have its heap exits (its memory
            // freed), and the run fails.
            mm.exit(pid)?;
            return Err(err);
        }
        touched += count;
    }
    Ok(vec![pid])
}
