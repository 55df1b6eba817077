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

use super::error::MmError;
use super::{FileId, Mm, MmConfig};
use crate::page_alloc::LocalPageAllocator;
use crate::rng::MachineRng;
use crate::types::CpuId;

/// Sizes of the aging workload, in pages.
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
    /// CPU of the benchmark and of every other activity.
    pub cpu: CpuId,
}

impl AgingConfig {
    /// The workload for a heap of `heap_pages` on a machine of
    /// `memory_pages`: a data set twice the memory in 16 files, a run
    /// reading as much as the memory, 1/64 of a file per read, logs of
    /// 1/64 of the memory per run (four kept), helpers of 1/4 of a read.
    pub fn for_machine(heap_pages: u64, memory_pages: u64, cpu: CpuId) -> AgingConfig {
        let dataset_files = 16;
        let dataset_file_pages = (2 * memory_pages / dataset_files as u64).max(1);
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
        }
    }
}

/// The aging workload: a reclaim layer and the files the runs use.
pub struct AgingWorkload<'a> {
    mm: Mm<'a>,
    config: AgingConfig,
    dataset: Vec<FileId>,
    logs: Vec<FileId>,
    rng: MachineRng,
    runs: u64,
}

impl<'a> AgingWorkload<'a> {
    /// Creates the data set files (their sizes only: nothing is cached
    /// until read) over `allocator`; the RNG is seeded with `seed`.
    pub fn new(
        allocator: &'a LocalPageAllocator,
        config: AgingConfig,
        seed: u64,
    ) -> Result<AgingWorkload<'a>, MmError> {
        let mut mm = Mm::new(allocator, MmConfig::default());
        let page_bytes = 1u64 << allocator.layout().page_shift;
        let size = config
            .dataset_file_pages
            .checked_mul(page_bytes)
            .and_then(|size| i64::try_from(size).ok())
            .ok_or(MmError::InvalidLength(i64::MAX))?;
        let mut dataset = Vec::new();
        for _ in 0..config.dataset_files {
            let file = mm.create_file();
            mm.truncate(config.cpu, file, size)?;
            dataset.push(file);
        }
        Ok(AgingWorkload {
            mm,
            config,
            dataset,
            logs: Vec::new(),
            rng: MachineRng::new(seed),
            runs: 0,
        })
    }

    /// The reclaim layer (for its counters, meminfo and invariants).
    pub fn mm(&self) -> &Mm<'a> {
        &self.mm
    }

    /// Benchmark runs done.
    pub fn runs(&self) -> u64 {
        self.runs
    }

    /// One benchmark run: the heap is pre-touched, `measure` gets its PFNs
    /// in virtual address order, then the run works, exits, and the logs
    /// rotate. Returns what `measure` returned.
    pub fn benchmark_run<T>(&mut self, measure: impl FnOnce(&[u64]) -> T) -> Result<T, MmError> {
        let cpu = self.config.cpu;
        let pid = self.mm.spawn(cpu)?;
        let mut touched = 0;
        while touched < self.config.heap_pages {
            let count = self
                .config
                .chunk_pages
                .min(self.config.heap_pages - touched);
            self.mm.touch(pid, touched, count)?;
            touched += count;
            self.mm.kswapd_run_all()?;
        }
        let pfns: Vec<u64> = self
            .mm
            .process_pages(pid)?
            .into_iter()
            .map(|(_, pfn)| pfn)
            .collect();
        let measured = measure(&pfns);
        self.mm.exit(pid)?;
        self.work()?;
        self.rotate_logs()?;
        self.mm.kswapd_run_all()?;
        self.runs += 1;
        Ok(measured)
    }

    /// The run's work: reads of random data set files at random offsets,
    /// log appends, and a short-lived helper per chunk; kswapd after each.
    fn work(&mut self) -> Result<(), MmError> {
        let cpu = self.config.cpu;
        let page_bytes = 1u64 << self.mm.allocator().layout().page_shift;
        let log = self.mm.create_file();
        self.logs.push(log);
        let chunks = self
            .config
            .read_pages_per_run
            .div_ceil(self.config.chunk_pages);
        let log_per_chunk = self.config.log_pages_per_run.div_ceil(chunks.max(1));
        for _ in 0..chunks {
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
            let end = self.mm.file_size(log)?;
            self.mm.write(cpu, log, end, log_per_chunk * page_bytes)?;
            let helper = self.mm.spawn(cpu)?;
            self.mm.touch(helper, 0, self.config.helper_pages)?;
            self.mm.exit(helper)?;
            self.mm.kswapd_run_all()?;
        }
        self.mm.sync();
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
