//! The populate loop of each variant, on a real arena (timed, verified) and
//! on a simulated machine (charged by the cost model), and the spinning
//! thread that makes every flush a cross-CPU shootdown.
//!
//! Every sample starts from a fully mapped machine with every page free:
//! after the timed loop (untimed) the pages are verified, put back into the
//! direct map where the variant took them out, freed, the per-CPU lists
//! drained and wholly free unmapped pageblocks given back to the direct map.

use super::host::{HostCost, HostSnapshot};
use super::memory::machine_bytes;
use super::{Variant, PAGE_SIZE};
use crate::experiments::ExperimentError;
use pageframe::backing::{pin_current_thread, Backing, MermapConfig, SimBacking, SimCosts};
use pageframe::{
    AllocOptions, ArenaOptions, CpuHandle, CpuId, Gfp, LocalPageAllocator, MachineDesc, MachineRng,
    NodeId, Order, Page, PageAllocator, Pfn,
};
use pageframe::{Local, LockFamily};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

type Handle<'a> = CpuHandle<&'a PageAllocator<Local>, Local>;

/// Pages read back after each sample, beside the first and the last.
const VERIFIED_PER_SAMPLE: usize = 64;

/// What one variant measured.
#[derive(Clone, Debug)]
pub struct Measured {
    /// The variant.
    pub variant: Variant,
    /// Pages populated per sample.
    pub pages: u64,
    /// Wall time of each sample's populate loop, ms (empty on the simulation).
    pub samples_ms: Vec<f64>,
    /// The cost model's charge for the populate loop, ms (0 on an arena).
    pub modelled_ms: f64,
    /// Global flushes during the timed loops, all samples together.
    pub global_flushes: u64,
    /// Local (mermap) flushes during the timed loops, all samples together.
    pub local_flushes: u64,
    /// Timed loops run.
    pub loops: u64,
    /// What the timed loops cost the host, all samples together (zero on
    /// the simulation).
    pub host: HostCost,
}

impl Measured {
    /// Mean sample, ms.
    pub fn mean_ms(&self) -> f64 {
        self.samples_ms.iter().sum::<f64>() / self.samples_ms.len().max(1) as f64
    }

    /// Coefficient of variation of the samples (standard deviation over
    /// mean); 0 with fewer than two samples.
    pub fn cv(&self) -> f64 {
        let n = self.samples_ms.len();
        let mean = self.mean_ms();
        if n < 2 || mean <= 0.0 {
            return 0.0;
        }
        let variance = self
            .samples_ms
            .iter()
            .map(|ms| (ms - mean) * (ms - mean))
            .sum::<f64>()
            / (n - 1) as f64;
        variance.sqrt() / mean
    }

    /// `count` (summed over the timed loops) per timed loop.
    pub fn per_sample(&self, count: u64) -> f64 {
        count as f64 / self.loops.max(1) as f64
    }

    /// Global flushes per timed loop.
    pub fn global_flushes_per_sample(&self) -> f64 {
        self.global_flushes as f64 / self.loops.max(1) as f64
    }

    /// Local flushes per timed loop.
    pub fn local_flushes_per_sample(&self) -> f64 {
        self.local_flushes as f64 / self.loops.max(1) as f64
    }
}

/// A thread spinning until dropped: another CPU running this mm, which an
/// `mprotect` that removes translations must interrupt. Pinned to its own
/// host CPU, away from the populating thread's: left to the scheduler it
/// sometimes shared the populating CPU, and then no shootdown was
/// cross-CPU (the baseline's fourfold swings between runs).
pub struct Spinner {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Spinner {
    /// Starts the spinning thread on host CPU `cpu` (no thread without one).
    pub fn start(cpu: Option<usize>) -> Spinner {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = cpu.map(|cpu| {
            std::thread::spawn(move || {
                let _ = pin_current_thread(&[cpu]);
                while !flag.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })
        });
        Spinner { stop, thread }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn gfp_of(variant: Variant) -> Gfp {
    match variant {
        Variant::GfpUnmapped | Variant::GfpUnmappedSpan | Variant::GfpUnmappedFileIo => {
            Gfp::KERNEL | Gfp::UNMAPPED | Gfp::ZERO
        }
        Variant::Baseline | Variant::SkipFlush => Gfp::KERNEL | Gfp::ZERO,
    }
}

/// One machine for a region of `region_pages` pages: one node of
/// [`machine_bytes`], 2 CPUs.
fn machine(region_pages: u64) -> Result<MachineDesc, ExperimentError> {
    let bytes = region_pages
        .checked_mul(PAGE_SIZE)
        .and_then(machine_bytes)
        .ok_or_else(|| {
            ExperimentError::failed(format!("a region of {region_pages} pages is too large"))
        })?;
    Ok(MachineDesc::uniform(bytes, 1, 2)?)
}

/// Checks that `region_pages` can be held without pressing on the
/// allocator: after them, the zones' free pages still cover their high
/// watermarks and the largest `high` of every per-CPU list, so no
/// allocation of the populate loop crosses a watermark (the slack of
/// [`machine_bytes`], checked against the allocator's own figures).
pub(super) fn check_headroom<L: LockFamily>(
    allocator: &PageAllocator<L>,
    region_pages: u64,
) -> Result<(), ExperimentError> {
    let (mut free, mut kept) = (0u64, 0u64);
    for zone in (0..allocator.nr_zones()).filter_map(|index| allocator.zone_snapshot(index)) {
        free += zone.free;
        kept += zone.watermarks.high
            + zone
                .pcp
                .iter()
                .map(|pcp| u64::from(pcp.high_max))
                .sum::<u64>();
    }
    if free < region_pages + kept {
        return Err(ExperimentError::failed(format!(
            "a machine of {free} free pages cannot hold a region of {region_pages} pages above its high watermarks and per-CPU lists ({kept} pages)"
        )));
    }
    Ok(())
}

/// A page of seeded random bytes.
fn page_data(seed: u64) -> Vec<u8> {
    let mut rng = MachineRng::new(seed);
    let mut data = vec![0u8; PAGE_SIZE as usize];
    for chunk in data.chunks_mut(8) {
        chunk.copy_from_slice(&rng.next_u64().to_le_bytes()[..chunk.len()]);
    }
    data
}

/// Stamps the page's index into the data, so a page holding another page's
/// bytes fails verification.
fn stamp(data: &mut [u8], index: u64) {
    data[..8].copy_from_slice(&index.to_le_bytes());
}

/// The timed populate loop: `pages` pages allocated, written (when the
/// backing has bytes) and, for the baseline, taken out of the direct map one
/// by one. The pages land in `held`, in allocation order.
fn populate(
    cpu: &Handle<'_>,
    backing: &dyn Backing,
    variant: Variant,
    pages: u64,
    data: &mut [u8],
    with_bytes: bool,
    held: &mut Vec<Page>,
) -> Result<(), ExperimentError> {
    let gfp = gfp_of(variant);
    for index in 0..pages {
        let page = cpu
            .alloc_pages(gfp, Order(0), NodeId(0))
            .map_err(ExperimentError::failed)?;
        if variant.is_unmapped() {
            stamp(data, index);
            cpu.write_unmapped(page, 0, data)
                .map_err(ExperimentError::failed)?;
        } else {
            if with_bytes {
                stamp(data, index);
                cpu.write_page(page, 0, data)
                    .map_err(ExperimentError::failed)?;
            }
            if variant == Variant::Baseline {
                backing
                    .unmap_direct(page.pfn(), 1)
                    .map_err(ExperimentError::failed)?;
            }
        }
        held.push(page);
    }
    // The populate is done when every byte is in its page: the arena's
    // mermap agents may still hold the last ring of requests.
    backing.wait_for_mermap().map_err(ExperimentError::failed)
}

/// Reads back the first, the last and a seeded random set of the held pages.
fn verify(
    cpu: &Handle<'_>,
    variant: Variant,
    held: &[Page],
    data: &mut [u8],
    rng: &mut MachineRng,
) -> Result<(), ExperimentError> {
    let mut out = vec![0u8; data.len()];
    let last = held.len() as u64 - 1;
    let picks = [0, last]
        .into_iter()
        .chain((0..VERIFIED_PER_SAMPLE).map(|_| rng.below(last + 1)));
    for index in picks {
        let page = held[index as usize];
        stamp(data, index);
        match variant {
            Variant::SkipFlush => cpu
                .read_page(page, 0, &mut out)
                .map_err(ExperimentError::failed)?,
            Variant::Baseline
            | Variant::GfpUnmapped
            | Variant::GfpUnmappedSpan
            | Variant::GfpUnmappedFileIo => cpu
                .read_unmapped(page, 0, &mut out)
                .map_err(ExperimentError::failed)?,
        }
        if out != data {
            return Err(ExperimentError::failed(format!(
                "{}: page {index} (PFN {}) does not hold the bytes written to it",
                variant.name(),
                page.pfn()
            )));
        }
    }
    Ok(())
}

/// Undoes a sample: pages back into the direct map (baseline, one call per
/// run of adjacent pages), freed, the per-CPU lists drained, free unmapped
/// pageblocks given back.
fn release(
    allocator: &PageAllocator<Local>,
    cpu: &Handle<'_>,
    variant: Variant,
    held: &mut Vec<Page>,
) -> Result<(), ExperimentError> {
    if variant == Variant::Baseline {
        let mut pfns: Vec<Pfn> = held.iter().map(|page| page.pfn()).collect();
        pfns.sort_unstable();
        for (start, nr_pages) in adjacent_runs(&pfns) {
            allocator
                .backing()
                .remap_direct(start, nr_pages)
                .map_err(ExperimentError::failed)?;
        }
    }
    for page in held.drain(..) {
        cpu.free_pages(page, Order(0))
            .map_err(ExperimentError::failed)?;
    }
    allocator.drain_all_pages();
    allocator.release_unmapped_pageblocks();
    if allocator.nr_unmapped_pageblocks() != 0 {
        return Err(ExperimentError::failed(format!(
            "{}: {} unmapped pageblocks left after the sample",
            variant.name(),
            allocator.nr_unmapped_pageblocks()
        )));
    }
    Ok(())
}

/// The runs of adjacent PFNs in sorted `pfns`, as (first, length).
pub(super) fn adjacent_runs(pfns: &[Pfn]) -> Vec<(Pfn, u64)> {
    let mut runs: Vec<(Pfn, u64)> = Vec::new();
    for &pfn in pfns {
        match runs.last_mut() {
            Some((start, len)) if start.0 + *len == pfn.0 => *len += 1,
            _ => runs.push((pfn, 1)),
        }
    }
    runs
}

/// One variant on its own real arena, sampled in turn with the others (so
/// that drift of the host hits every variant alike).
pub struct ArenaVariant {
    allocator: PageAllocator<Local>,
    data: Vec<u8>,
    rng: MachineRng,
    held: Vec<Page>,
    measured: Measured,
}

impl ArenaVariant {
    /// Boots `variant`'s arena: a machine for `pages` pages, populated.
    pub fn boot(variant: Variant, pages: u64, seed: u64) -> Result<ArenaVariant, ExperimentError> {
        let arena = ArenaOptions {
            populate: true,
            mermap: MermapConfig {
                span_pages: variant.mermap_span(),
                access: variant.mermap_access(),
                ..MermapConfig::default()
            },
        };
        let allocator =
            LocalPageAllocator::boot_arena(&machine(pages)?, AllocOptions::default(), seed, arena)
                .map_err(ExperimentError::failed)?;
        check_headroom(&allocator, pages)?;
        Ok(ArenaVariant {
            allocator,
            data: page_data(seed),
            rng: MachineRng::new(seed ^ 0x5eed),
            held: Vec::with_capacity(pages as usize),
            measured: Measured {
                variant,
                pages,
                samples_ms: Vec::new(),
                modelled_ms: 0.0,
                global_flushes: 0,
                local_flushes: 0,
                loops: 0,
                host: HostCost::default(),
            },
        })
    }

    /// One sample: populate (timed and counted unless `warm_up`), verify,
    /// release. The populating thread runs on host CPU `populating_cpu`.
    pub fn sample(&mut self, warm_up: bool, populating_cpu: usize) -> Result<(), ExperimentError> {
        let cpu = self
            .allocator
            .cpu(CpuId(0))
            .map_err(ExperimentError::failed)?;
        let backing = self.allocator.backing();
        let (variant, pages) = (self.measured.variant, self.measured.pages);
        let before = backing.counters();
        let host_before = HostSnapshot::take(backing);
        let start = Instant::now();
        populate(
            &cpu,
            backing,
            variant,
            pages,
            &mut self.data,
            true,
            &mut self.held,
        )?;
        let elapsed = start.elapsed();
        let host_after = HostSnapshot::take(backing);
        let after = backing.counters();
        if !warm_up {
            let measured = &mut self.measured;
            measured.samples_ms.push(elapsed.as_secs_f64() * 1e3);
            measured.global_flushes += after.tlb_flush_global - before.tlb_flush_global;
            measured.local_flushes += after.tlb_flush_local - before.tlb_flush_local;
            measured.loops += 1;
            measured
                .host
                .add(host_before.until(&host_after, populating_cpu));
        }
        verify(&cpu, variant, &self.held, &mut self.data, &mut self.rng)?;
        release(&self.allocator, &cpu, variant, &mut self.held)
    }

    /// Checks the machine and returns what the samples measured.
    pub fn finish(self) -> Result<Measured, ExperimentError> {
        crate::observe::machine(
            &format!("{}, arena, after its samples", self.measured.variant.name()),
            &self.allocator,
        );
        self.allocator
            .check_invariants()
            .map_err(ExperimentError::failed)?;
        Ok(self.measured)
    }
}

/// One populate loop of `variant` on a simulated machine; the cost model's
/// charge is the result. The simulation has no bytes to write through the
/// direct map, so the mapped variants are charged the model's copy price for
/// their page of data, as the mermap write of `gfp_unmapped` is.
pub fn on_sim(
    variant: Variant,
    pages: u64,
    seed: u64,
    costs: SimCosts,
) -> Result<Measured, ExperimentError> {
    let layout = machine(pages)?.layout()?;
    let backing = SimBacking::new(
        layout.end_pfn.0,
        PAGE_SIZE as usize,
        layout.nr_cpus(),
        costs,
        MermapConfig::default(),
    )
    .map_err(ExperimentError::failed)?;
    let allocator = LocalPageAllocator::boot_layout_on(
        layout,
        AllocOptions::default(),
        seed,
        Arc::new(backing),
    )
    .map_err(ExperimentError::failed)?;
    check_headroom(&allocator, pages)?;
    let cpu = allocator.cpu(CpuId(0)).map_err(ExperimentError::failed)?;
    let backing = allocator.backing();
    // Charged, never read back: the bytes of a region larger than the host
    // need not be kept.
    backing.set_contents_kept(false);
    let mut data = vec![0u8; PAGE_SIZE as usize];
    let mut held = Vec::with_capacity(pages as usize);
    let before = backing.counters();
    populate(&cpu, backing, variant, pages, &mut data, false, &mut held)?;
    let after = backing.counters();
    let mut modelled_ns = (after.sim_ns - before.sim_ns) as f64;
    if !variant.is_unmapped() {
        // Saturating, as the backing's own charge: the price is from a file.
        let copy_ps = pages
            .saturating_mul(PAGE_SIZE)
            .saturating_mul(costs.copy_byte_ps);
        modelled_ns += copy_ps as f64 / 1000.0;
    }
    release(&allocator, &cpu, variant, &mut held)?;
    allocator
        .check_invariants()
        .map_err(ExperimentError::failed)?;
    Ok(Measured {
        variant,
        pages,
        samples_ms: Vec::new(),
        modelled_ms: modelled_ns / 1e6,
        global_flushes: after.tlb_flush_global - before.tlb_flush_global,
        local_flushes: after.tlb_flush_local - before.tlb_flush_local,
        loops: 1,
        host: HostCost::default(),
    })
}
