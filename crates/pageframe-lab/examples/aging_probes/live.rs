//! The question of the other probes asked of the host's kernel
//! (`aging_probes live [seed] [runs]`): does a real machine, aged by the
//! shuffle-cache workload, place a benchmark's heap on part of a
//! memory-side cache's colours (what the document's 21% needs), or at
//! random (what every model gives)?
//!
//! Each run maps and pre-touches a heap of three cache sizes (order-0
//! faults: `MADV_NOHUGEPAGE`), reads its frames from /proc/self/pagemap,
//! measures them in the experiment's cache model (a direct-mapped cache of
//! 1 GiB indexed by physical address, the experiment's heap mix), then does
//! the aging workload's work while the heap is held — reads of a data set
//! twice the host's memory through the page cache (sparse files: their
//! holes are read into page-cache folios like data, with no disk I/O), a
//! log written and rotated, a short-lived helper mapping per chunk — and
//! unmaps the heap (its pages freed as at exit). Before the first run the
//! page cache is dropped and memory compacted, so run 1 is as fresh as a
//! running host gets.
//!
//! Needs root (pagemap hides frame numbers, /proc/iomem addresses, and
//! drop_caches from others) and memory: refuses to start unless the heap
//! fits twice in MemAvailable. The files go to a new directory
//! `pageframe-live-aging.PID` in `$PAGEFRAME_LIVE_DIR` (default /var/tmp;
//! on a disk file system, not tmpfs), deleted at the end. It changes the host's state: caches
//! dropped, memory compacted, the page cache filled with the data set.
//! The seed draws the random reference only: where the heap lands is the
//! host kernel's choice, and differs from one call to the next.

use super::mm_probes::random_placement;
use pageframe_lab::cache_model::{colour_bit_bias, colour_sharers};
use pageframe_lab::host_anon::{map_private_pages, touch_pages, PAGE_BYTES as HOST_PAGE_BYTES};
use pageframe_lab::host_layout::system_ram;
use pageframe_lab::workloads::heap::{conflict_rate, HeapMix};
use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The host's base page, which pagemap has an entry for.
const PAGE_BYTES: u64 = HOST_PAGE_BYTES as u64;
/// The modelled memory-side cache: 1 GiB, as the full scale has it.
const CACHE_BYTES: u64 = 1 << 30;
const LINE: u64 = 64;
/// The full scale's measured accesses.
const ACCESSES: u64 = 200_000_000;
const DATASET_FILES: u64 = 16;
/// Chunks a data set file is read in (`AgingConfig::for_machine`).
const CHUNKS_PER_FILE: u64 = 64;
const LOGS_KEPT: u64 = 4;

/// An anonymous private mapping, unmapped on drop.
struct Anon {
    addr: *mut libc::c_void,
    len: usize,
}

impl Anon {
    /// Maps `len` bytes without transparent huge pages and writes a byte of
    /// each page, so that every page is faulted in, in address order.
    fn pretouched(len: usize) -> io::Result<Anon> {
        let pages = len / PAGE_BYTES as usize;
        let base = map_private_pages(pages).ok_or_else(io::Error::last_os_error)?;
        // SAFETY: `base` starts the writable mapping of `pages` pages just
        // made.
        unsafe { touch_pages(base, pages) };
        Ok(Anon {
            addr: base.cast(),
            len: pages * PAGE_BYTES as usize,
        })
    }

    /// The frame of each page, in address order (pagemap's bits 0–54 of a
    /// present page); an error if a page is not present or the frame is
    /// hidden (not root).
    fn frames(&self) -> io::Result<Vec<u64>> {
        let pages = self.len / PAGE_BYTES as usize;
        let mut pagemap = File::open("/proc/self/pagemap")?;
        pagemap.seek(SeekFrom::Start(self.addr as u64 / PAGE_BYTES * 8))?;
        let mut entries = vec![0u8; pages * 8];
        pagemap.read_exact(&mut entries)?;
        entries
            .chunks_exact(8)
            .map(|entry| {
                let entry = u64::from_le_bytes(entry.try_into().expect("8 bytes"));
                let pfn = entry & ((1 << 55) - 1);
                if entry >> 63 == 0 || pfn == 0 {
                    return Err(io::Error::other(
                        "pagemap gave no frame (a page not present, or not root)",
                    ));
                }
                Ok(pfn)
            })
            .collect()
    }
}

impl Drop for Anon {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `pretouched`, unmapped once.
        unsafe { libc::munmap(self.addr, self.len) };
    }
}

/// The data set (sparse files), its read cursor, and the rotated logs.
struct Work {
    dir: PathBuf,
    file_bytes: u64,
    cursor: u64,
    buffer: Vec<u8>,
}

impl Work {
    /// A new directory of its own in `parent` (never one that exists: the
    /// drop deletes it whole), holding the data set's sparse files.
    fn create(parent: &Path, memory: u64) -> io::Result<Work> {
        let dir = parent.join(format!("pageframe-live-aging.{}", std::process::id()));
        fs::create_dir(&dir)?;
        let file_bytes = (2 * memory / DATASET_FILES).next_multiple_of(PAGE_BYTES);
        for file in 0..DATASET_FILES {
            File::create(dir.join(format!("data{file}")))?.set_len(file_bytes)?;
        }
        let chunk = (file_bytes / CHUNKS_PER_FILE).next_multiple_of(PAGE_BYTES);
        Ok(Work {
            dir,
            file_bytes,
            cursor: 0,
            buffer: vec![0; chunk as usize],
        })
    }

    /// One run's work: `memory` bytes of the data set read in chunks, each
    /// with its share of the run's log (a 64th of memory) and a helper
    /// mapping of a quarter chunk; then the logs rotated.
    fn run(&mut self, run: u64, memory: u64) -> io::Result<()> {
        let chunk = self.buffer.len() as u64;
        let chunks = memory.div_ceil(chunk);
        let log_chunk = (memory / 64 / chunks).next_multiple_of(PAGE_BYTES) as usize;
        let mut log = File::create(self.dir.join(format!("log{run}")))?;
        for _ in 0..chunks {
            let (file, offset) = (self.cursor / self.file_bytes, self.cursor % self.file_bytes);
            let mut data = File::open(self.dir.join(format!("data{file}")))?;
            data.seek(SeekFrom::Start(offset))?;
            let len = chunk.min(self.file_bytes - offset) as usize;
            data.read_exact(&mut self.buffer[..len])?;
            self.cursor = (self.cursor + len as u64) % (self.file_bytes * DATASET_FILES);
            log.write_all(&self.buffer[..log_chunk.min(len)])?;
            drop(Anon::pretouched(chunk as usize / 4)?);
        }
        // Runs count from 1: run LOGS_KEPT + 1 deletes the first log.
        if run > LOGS_KEPT {
            fs::remove_file(self.dir.join(format!("log{}", run - LOGS_KEPT)))?;
        }
        Ok(())
    }
}

impl Drop for Work {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// The heap's placement in the cache model.
fn measure(frames: &[u64]) -> (f64, f64, f64) {
    let cache_pages = CACHE_BYTES / PAGE_BYTES;
    let rate = conflict_rate(
        frames,
        HeapMix::default(),
        12,
        (CACHE_BYTES, LINE),
        ACCESSES,
    )
    .expect("cache geometry");
    (
        rate,
        colour_sharers(frames, cache_pages),
        colour_bit_bias(frames, cache_pages),
    )
}

/// `name`'s value in /proc/vmstat (0 when absent).
fn vmstat(name: &str) -> u64 {
    fs::read_to_string("/proc/vmstat")
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or(0)
}

pub fn run(seed: u64, runs: u64) {
    if let Err(error) = try_run(seed, runs) {
        println!("live probe stopped: {error}");
    }
}

fn try_run(seed: u64, runs: u64) -> io::Result<()> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(io::Error::other(
            "not root (pagemap hides frame numbers from others)",
        ));
    }
    let ram = system_ram(&fs::read_to_string("/proc/iomem")?)
        .ok_or_else(|| io::Error::other("/proc/iomem names no System RAM"))?;
    let memory = pageframe_lab::host_memory::total()
        .ok_or_else(|| io::Error::other("no MemTotal in /proc/meminfo"))?;
    let heap = 3 * CACHE_BYTES;
    let available = pageframe_lab::host_memory::available().unwrap_or(0);
    if available < 2 * heap {
        return Err(io::Error::other(format!(
            "MemAvailable {available} bytes holds the {heap}-byte heap less than twice"
        )));
    }
    // The random reference: the heap's frames drawn from the host's RAM.
    let ram_frames: Vec<u64> = ram
        .iter()
        .flat_map(|&(start, end)| start.div_ceil(PAGE_BYTES)..end / PAGE_BYTES)
        .collect();
    let heap_pages = heap / PAGE_BYTES;
    let random: Vec<u64> = random_placement(heap_pages, ram_frames.len() as u64, seed)
        .into_iter()
        .map(|at| ram_frames[at as usize])
        .collect();
    let (rate, sharers, bias) = measure(&random);
    println!(
        "host: {:.1} GiB of RAM in {} ranges; cache 1 GiB, heap 3 GiB; random placement {rate:.3} / sharers {sharers:.2} / bias {bias:.3}",
        (ram_frames.len() as u64 * PAGE_BYTES) as f64 / (1u64 << 30) as f64,
        ram.len()
    );
    let parent = std::env::var_os("PAGEFRAME_LIVE_DIR")
        .map_or_else(|| PathBuf::from("/var/tmp"), PathBuf::from);
    let mut work = Work::create(&parent, memory)?;
    fs::write("/proc/sys/vm/drop_caches", "3")?;
    fs::write("/proc/sys/vm/compact_memory", "1")?;
    let counters = ["pgscan_kswapd", "pgscan_direct", "allocstall_normal"];
    let start: Vec<u64> = counters.iter().map(|name| vmstat(name)).collect();
    let mut aged = (0.0, 0.0, 0u32);
    for run in 1..=runs {
        let anon = Anon::pretouched(heap as usize)?;
        let (rate, sharers, bias) = measure(&anon.frames()?);
        if run > runs / 2 {
            aged = (aged.0 + rate, aged.1 + sharers, aged.2 + 1);
        }
        work.run(run, memory)?;
        drop(anon);
        let since: Vec<String> = counters
            .iter()
            .zip(&start)
            .map(|(name, start)| format!("{name} {}", vmstat(name).saturating_sub(*start)))
            .collect();
        println!(
            "run {run:>2}: conflicts {rate:.3}  sharers {sharers:.2}  bias {bias:.3}  ({})",
            since.join(", ")
        );
    }
    if aged.2 > 0 {
        let runs_aged = f64::from(aged.2);
        println!(
            "aged (mean of the last {} runs): conflicts {:.3}  sharers {:.2}",
            aged.2,
            aged.0 / runs_aged,
            aged.1 / runs_aged
        );
    }
    Ok(())
}
