//! Probes through the reclaim layer (`pageframe::reclaim`): the aging
//! workload of shuffle-cache (`AgingWorkload`: reads of a data set twice
//! the memory, logs, helper processes, kswapd and direct reclaim), repeated
//! benchmark runs of a heap 3x a direct-mapped memory-side cache on a
//! machine 8x the cache, the heap pre-touched by the probe (the workload's
//! `benchmark_run_with` hook), varied in what the issue left unprobed:
//!
//! - several CPUs pre-touching the heap at once, as a JVM's parallel
//!   pre-touch does: threads claim chunks of the heap in address order and
//!   fault them page by page, interleaved; each CPU's pcp list is refilled
//!   in batches from the buddy (`rmqueue_bulk()`), so each thread's chunks
//!   get runs of contiguous frames; the run's other work then rotates over
//!   the threads' CPUs (the workload's `work_cpus`);
//! - a file read on another CPU while the heap is pre-touched: the two
//!   CPUs' pcp refills alternate, the case `zone_batchsize()` clamps the
//!   batch to 2^n - 1 for (a power-of-two batch would give each task half
//!   the colours);
//! - a hot file that stays resident (the workload's `hot_file_pages`): a
//!   slice of it is re-read after every data-set read, so its pages are
//!   activated and stay on the active file list while the data set cycles
//!   through the inactive one;
//! - a generational heap: the classes in contiguous virtual ranges, hot
//!   first (a young generation touched first), instead of hashed pages;
//!   with the default mix, and with a hot tenth of the heap taking 85% of
//!   the accesses (the generational mix whose contiguous placement gives
//!   the document's fresh 8%, see `placements`);
//! - the cache's set mapping: a cache of 48 MiB (a non-power-of-two size,
//!   as six channels of DRAM give), indexed by physical address modulo its
//!   size.
//!
//! Printed per probe, seed and shuffle setting: run 1 (fresh) and the mean
//! of runs 9–16 (aged) of the conflict rate and colour sharers, the largest
//! colour-bit bias of the aged runs, and random placement of the heap among
//! the machine's frames through the same cache and stream (mean of two
//! draws) with the sharers it is expected to have; the machine's
//! `Active(file)` pages and the hot file's cached pages at the end.

use pageframe::machine::{apply_cmdline, MemorySideCache};
use pageframe::reclaim::{AgingConfig, AgingWorkload, FileId, Mm, MmError, Pid};
use pageframe::{AllocOptions, CpuId, LocalPageAllocator, MachineDesc, MachineRng};
use pageframe_lab::cache_model::{colour_bit_bias, colour_sharers, random_colour_sharers};
use pageframe_lab::workloads::heap::{conflict_rate, ClassLayout, HeapMix};

const LINE: u64 = 64;
const ACCESSES: u64 = 12_000_000;
const RUNS: u64 = 16;

/// What one probe varies.
#[derive(Clone, Copy, Debug)]
pub struct MmProbe {
    pub name: &'static str,
    /// Threads pre-touching the heap, one per CPU (the machine has at
    /// least 2 CPUs); with more than one, the run's work rotates over them.
    pub threads: u16,
    /// Pages of a pre-touch chunk a thread claims.
    pub pretouch_chunk: u64,
    /// Pages a thread faults before the next thread runs.
    pub grain: u64,
    /// The hot file, in eighths of the cache (0: none).
    pub hot_file_eighths: u64,
    /// Whether another CPU reads a file sequentially while the heap is
    /// pre-touched, a grain per grain of heap faults.
    pub concurrent_reader: bool,
    /// The heap's object mix and class layout.
    pub mix: HeapMix,
    /// The cache in MiB (64 = a power of two as the experiment has it).
    pub cache_mib: u64,
}

impl MmProbe {
    /// The experiment's workload: one thread, the default (hashed) mix, no
    /// hot file, no concurrent reader.
    fn baseline() -> MmProbe {
        MmProbe {
            name: "baseline",
            threads: 1,
            pretouch_chunk: u64::MAX,
            grain: 256,
            hot_file_eighths: 0,
            concurrent_reader: false,
            mix: HeapMix::default(),
            cache_mib: 64,
        }
    }
}

/// The probes run by `aging_probes mm`.
pub fn probes() -> Vec<MmProbe> {
    let base = MmProbe::baseline();
    let threads = |name, threads, pretouch_chunk, grain| MmProbe {
        name,
        threads,
        pretouch_chunk,
        grain,
        ..base
    };
    let generational_mix = HeapMix {
        layout: ClassLayout::Generational,
        ..base.mix
    };
    let generational = MmProbe {
        name: "generational",
        mix: generational_mix,
        ..base
    };
    vec![
        base,
        threads("2 threads, 4 MiB chunks, page grain", 2, 1024, 1),
        threads("8 threads, 4 MiB chunks, page grain", 8, 1024, 1),
        threads("8 threads, 256 KiB chunks, 16-page grain", 8, 64, 16),
        MmProbe {
            name: "reader on CPU 1 during pre-touch",
            grain: 1,
            concurrent_reader: true,
            ..base
        },
        MmProbe {
            name: "reader on CPU 1 during pre-touch, 64-page grain",
            grain: 64,
            concurrent_reader: true,
            ..base
        },
        MmProbe {
            name: "hot file 1/2 cache",
            hot_file_eighths: 4,
            ..base
        },
        MmProbe {
            name: "hot file 1 cache",
            hot_file_eighths: 8,
            ..base
        },
        generational,
        MmProbe {
            name: "generational, 8 threads",
            mix: generational_mix,
            ..threads("", 8, 1024, 1)
        },
        MmProbe {
            name: "48 MiB cache",
            cache_mib: 48,
            ..base
        },
        MmProbe {
            name: "generational, 48 MiB cache",
            cache_mib: 48,
            ..generational
        },
        MmProbe {
            name: "generational, hot 10% of pages / 85%",
            mix: HeapMix {
                hot_pages: 100,
                ..generational_mix
            },
            ..base
        },
    ]
}

/// One measurement of a heap placement.
#[derive(Clone, Copy, Debug, Default)]
struct Sample {
    rate: f64,
    sharers: f64,
    bias: f64,
}

/// The cache geometry: `cache_pages` colours, emulated in a power-of-two
/// cache of `sim_pages` by renumbering frames so that a frame's set is its
/// PFN modulo `cache_pages` and its tag the quotient.
#[derive(Clone, Copy)]
struct Geometry {
    cache_pages: u64,
    sim_pages: u64,
    page_shift: u32,
}

impl Geometry {
    fn measure(&self, pfns: &[u64], mix: HeapMix) -> Sample {
        let renumbered: Vec<u64> = pfns
            .iter()
            .map(|&pfn| (pfn / self.cache_pages) * self.sim_pages + pfn % self.cache_pages)
            .collect();
        let rate = conflict_rate(
            &renumbered,
            mix,
            self.page_shift,
            (self.sim_pages << self.page_shift, LINE),
            ACCESSES,
        )
        .expect("cache geometry");
        Sample {
            rate,
            sharers: colour_sharers(pfns, self.cache_pages),
            bias: colour_bit_bias(pfns, self.cache_pages),
        }
    }
}

/// The heap's pre-touch as a probe varies it (the hook of
/// `AgingWorkload::benchmark_run_with`), and the concurrent reader's place
/// in the data set.
struct Pretouch {
    probe: MmProbe,
    heap_pages: u64,
    /// Pages faulted between kswapd runs (the workload's chunk).
    kswapd_every: u64,
    dataset: Vec<FileId>,
    file_pages: u64,
    page_bytes: u64,
    /// The concurrent reader's next page in the data set.
    reader_cursor: u64,
}

impl Pretouch {
    /// Pre-touches the heap by the probe's threads; the heap's processes,
    /// one per thread.
    fn run(&mut self, mm: &mut Mm<'_>) -> Result<Vec<Pid>, MmError> {
        let threads = self.probe.threads as usize;
        let pids = (0..threads)
            .map(|t| mm.spawn(CpuId(t as u16)))
            .collect::<Result<Vec<Pid>, MmError>>()?;
        let heap_pages = self.heap_pages;
        let chunk = self.probe.pretouch_chunk.min(heap_pages);
        let mut next = 0u64;
        let mut cursor: Vec<Option<(u64, u64)>> = vec![None; threads];
        let (mut since_kswapd, mut done) = (0, 0);
        while done < heap_pages {
            for t in 0..threads {
                if cursor[t].is_none() && next < heap_pages {
                    cursor[t] = Some((next, (next + chunk).min(heap_pages)));
                    next += chunk;
                }
                let Some((at, end)) = cursor[t] else { continue };
                let count = self.probe.grain.min(end - at);
                mm.touch(pids[t], at, count)?;
                cursor[t] = (at + count < end).then_some((at + count, end));
                (since_kswapd, done) = (since_kswapd + count, done + count);
                if self.probe.concurrent_reader {
                    self.read_along(mm, count)?;
                }
                if since_kswapd >= self.kswapd_every {
                    mm.kswapd_run_all()?;
                    since_kswapd = 0;
                }
            }
        }
        Ok(pids)
    }

    /// The concurrent reader: the next `pages` of the data set, read in
    /// order on the CPU after the heap's threads.
    fn read_along(&mut self, mm: &mut Mm<'_>, pages: u64) -> Result<(), MmError> {
        let cpu = CpuId(self.probe.threads);
        let at = self.reader_cursor % (self.file_pages * self.dataset.len() as u64);
        let (file, page) = (
            self.dataset[(at / self.file_pages) as usize],
            at % self.file_pages,
        );
        let pages = pages.min(self.file_pages - page);
        mm.read(cpu, file, page * self.page_bytes, pages * self.page_bytes)?;
        self.reader_cursor = at + pages;
        Ok(())
    }
}

/// Runs one probe on one machine; prints one line.
pub fn run(probe: MmProbe, shuffle: bool, seed: u64) {
    let cache = probe.cache_mib << 20;
    let memory = 8 * cache;
    let cpus = (probe.threads + probe.concurrent_reader as u16).max(2);
    let mut desc = MachineDesc::uniform(memory, 1, cpus as usize).expect("machine");
    desc.memory_side_cache = Some(MemorySideCache {
        size: cache,
        line: LINE,
        per_node: false,
    });
    apply_cmdline(&mut desc, &format!("page_alloc.shuffle={}", shuffle as u8)).expect("cmdline");
    let allocator =
        LocalPageAllocator::boot_seeded(&desc, AllocOptions::default(), seed).expect("boot");
    let page_shift = allocator.layout().page_shift as u32;
    let (cache_pages, memory_pages) = (cache >> page_shift, memory >> page_shift);
    let geometry = Geometry {
        cache_pages,
        sim_pages: cache_pages.next_power_of_two(),
        page_shift,
    };
    let heap_pages = 3 * cache_pages;
    // The heap's threads' CPUs take the run's work in turn.
    let config = AgingConfig {
        work_cpus: probe.threads,
        hot_file_pages: cache_pages * probe.hot_file_eighths / 8,
        ..AgingConfig::for_machine(heap_pages, memory_pages, CpuId(0))
    };
    let mut workload = AgingWorkload::new(&allocator, config, seed ^ 0xa9e).expect("workload");
    let mut pretouch = Pretouch {
        probe,
        heap_pages,
        kswapd_every: config.chunk_pages,
        dataset: workload.dataset().to_vec(),
        file_pages: config.dataset_file_pages,
        page_bytes: 1 << page_shift,
        reader_cursor: 0,
    };
    let samples: Vec<Sample> = (0..RUNS)
        .map(|_| {
            workload
                .benchmark_run_with(
                    |mm| pretouch.run(mm),
                    |pfns| geometry.measure(pfns, probe.mix),
                )
                .expect("benchmark run")
        })
        .collect();
    workload.mm().check_invariants().expect("invariants");
    let aged = &samples[RUNS as usize / 2..];
    let mean = |f: fn(&Sample) -> f64| aged.iter().map(f).sum::<f64>() / aged.len() as f64;
    let max_bias = aged.iter().map(|s| s.bias).fold(0.0, f64::max);
    let random: Vec<Sample> = (0..2)
        .map(|draw| {
            let pfns = random_placement(heap_pages, memory_pages, seed ^ (0x5eed + draw));
            geometry.measure(&pfns, probe.mix)
        })
        .collect();
    let random_rate = random.iter().map(|s| s.rate).sum::<f64>() / random.len() as f64;
    let active_file = workload.mm().meminfo().active_file;
    let hot_cached = workload.hot_file().map_or(0, |file| {
        workload.mm().file_pages(file).expect("hot file").len()
    });
    println!(
        "{:<44} shuffle={} seed {seed}: fresh {:.3}/{:.2}  aged {:.3}/{:.2} bias {max_bias:.3}  random {random_rate:.3}/{:.2}  active(file) {active_file} hot cached {hot_cached}",
        probe.name,
        shuffle as u8,
        samples[0].rate,
        samples[0].sharers,
        mean(|s| s.rate),
        mean(|s| s.sharers),
        random_colour_sharers(heap_pages, memory_pages, cache_pages),
    );
}

/// `pages` distinct frames drawn uniformly from the first `memory_pages`,
/// in draw order.
pub fn random_placement(pages: u64, memory_pages: u64, seed: u64) -> Vec<u64> {
    let mut rng = MachineRng::new(seed);
    let mut frames: Vec<u64> = (0..memory_pages).collect();
    for at in 0..pages as usize {
        let pick = at + rng.below(memory_pages - at as u64) as usize;
        frames.swap(at, pick);
    }
    frames.truncate(pages as usize);
    frames
}
