//! Experiment `unmapped-populate`: reproduces the headline of gfp-unmapped.txt,
//! the guest-memory populate latency of Firecracker's performance tests.
//! A region of guest memory is populated by writing data into freshly
//! allocated pages that must end up outside the direct map, three ways:
//!
//! - `baseline` (secretmem and the secret-free patches): a mapped zeroed
//!   page, the data written through the direct map, then that one page
//!   removed from the direct map with its own TLB shootdown.
//! - `gfp_unmapped` (the series): `__GFP_UNMAPPED | __GFP_ZERO`, the data
//!   written through this CPU's mermap window; the first allocation of each
//!   pageblock unmaps the whole 2 MiB block with one shootdown.
//! - `skip_flush` (the document's upper bound): the baseline without the
//!   removal, so no flush at all.
//!
//! Two more rows run `gfp_unmapped` with a mermap option beyond the series
//! (both off by default in the library), because a user-space mermap slot
//! is a system call in the agent where the kernel's is a PTE write:
//! `gfp_unmapped_span512` maps a pageblock per slot, and
//! `gfp_unmapped_fileio` maps nothing and copies with `pwrite`/`pread` of
//! the memfd. Neither has a figure of its own in the document; they show
//! the series' figure for `gfp_unmapped`.
//!
//! Each variant runs `samples` samples on a real memfd arena (timed with
//! `Instant` over the populate loop only; verification, freeing and giving
//! the unmapped pageblocks back to the direct map are outside the timing),
//! while a second thread of the process spins on the other CPU so that every
//! `mprotect` is a real cross-CPU shootdown. The same three loops then run
//! once on a large simulated machine, where the backing's cost model charges
//! each event and `modelled_ms` is the charge.
//!
//! Not owned here: the allocator and the backings (crate `pageframe`); the
//! summary table and the report page.

mod host;
mod memory;
mod plot;
mod populate;
pub mod rows;
#[cfg(test)]
mod tests;

use super::{Experiment, ExperimentError, RunOptions, Scale};
use crate::observe;
use crate::params::{Param, Params};
use crate::plots::Plot;
use crate::report::{round_to, Report, Row};
use crate::summary::Headline;
use host::Placement;
use memory::{machine_bytes, MemoryNeed};
use pageframe::backing::{CostSource, MermapAccess, SimCosts};
use populate::{ArenaVariant, Measured, Spinner};
use rows::PopulateRow;

/// Bytes per page of both machines.
const PAGE_SIZE: u64 = 4096;
/// Bytes per pageblock (pageblock_order 9): what one `gfp_unmapped`
/// conversion unmaps with one flush.
pub const PAGEBLOCK_BYTES: u64 = 2 << 20;

/// One way of populating the region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// Mapped zeroed page, direct-map write, then one page unmapped and flushed.
    Baseline,
    /// `__GFP_UNMAPPED | __GFP_ZERO` and a write through the mermap.
    GfpUnmapped,
    /// `gfp_unmapped` with the mermap mapping aligned spans of
    /// [`MERMAP_SPAN_PAGES`] pages per slot (a user-space option beyond the
    /// series: a slot costs a system call here, a PTE write in the kernel).
    GfpUnmappedSpan,
    /// `gfp_unmapped` with the mermap's bytes copied by file I/O on the
    /// memfd instead of through window mappings ([`MermapAccess::FileIo`],
    /// a user-space option beyond the series).
    GfpUnmappedFileIo,
    /// The baseline without removing the page from the direct map.
    SkipFlush,
}

/// The variants, in the document's row order, then the span and file I/O
/// variants.
pub const VARIANTS: [Variant; 5] = [
    Variant::Baseline,
    Variant::GfpUnmapped,
    Variant::SkipFlush,
    Variant::GfpUnmappedSpan,
    Variant::GfpUnmappedFileIo,
];

/// Pages per mermap slot of the span variant: one pageblock.
pub const MERMAP_SPAN_PAGES: u32 = 512;

/// The document's figures of a variant.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reference {
    /// Mean populate latency, ms.
    pub mean_ms: f64,
    /// Fastest sample, ms.
    pub min_ms: f64,
    /// Slowest sample, ms.
    pub max_ms: f64,
    /// Change of the mean against the baseline (None for the baseline).
    pub delta: Option<f64>,
}

/// Samples per variant in the document.
pub const REFERENCE_SAMPLES: u64 = 30;
/// The most memory one variant populates on the real arena in all
/// (region_mib x samples), MiB: 4 times the full scale's 2 GiB x 30. Each
/// bound alone allows 8 GiB x 1000 samples x 5 variants, hours of work.
pub const MAX_POPULATED_MIB: i64 = 1 << 18;

impl Variant {
    /// The name of its rows.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Baseline => "baseline",
            Variant::GfpUnmapped => "gfp_unmapped",
            Variant::SkipFlush => "skip_flush",
            Variant::GfpUnmappedSpan => "gfp_unmapped_span512",
            Variant::GfpUnmappedFileIo => "gfp_unmapped_fileio",
        }
    }

    /// True for the variants that allocate `__GFP_UNMAPPED` pages.
    pub fn is_unmapped(self) -> bool {
        matches!(
            self,
            Variant::GfpUnmapped | Variant::GfpUnmappedSpan | Variant::GfpUnmappedFileIo
        )
    }

    /// Pages per mermap slot.
    pub fn mermap_span(self) -> u32 {
        if self == Variant::GfpUnmappedSpan {
            MERMAP_SPAN_PAGES
        } else {
            1
        }
    }

    /// How the arena's mermap reaches pages.
    pub fn mermap_access(self) -> MermapAccess {
        if self == Variant::GfpUnmappedFileIo {
            MermapAccess::FileIo
        } else {
            MermapAccess::Window
        }
    }

    /// The document's figures (gfp-unmapped.txt, "Performance"; the
    /// baseline is printed as 1.04 s, 1.02 s and 1.10 s).
    pub fn reference(self) -> Reference {
        match self {
            Variant::Baseline => Reference {
                mean_ms: 1040.0,
                min_ms: 1020.0,
                max_ms: 1100.0,
                delta: None,
            },
            Variant::GfpUnmapped | Variant::GfpUnmappedSpan | Variant::GfpUnmappedFileIo => {
                Reference {
                    mean_ms: 313.02,
                    min_ms: 299.48,
                    max_ms: 343.25,
                    delta: Some(-0.700),
                }
            }
            Variant::SkipFlush => Reference {
                mean_ms: 325.80,
                min_ms: 307.91,
                max_ms: 333.30,
                delta: Some(-0.688),
            },
        }
    }
}

/// The fraction by which `ms` differs from the baseline's, None for the
/// baseline itself.
fn delta(variant: Variant, ms: f64, baseline_ms: Option<f64>) -> Option<f64> {
    match baseline_ms {
        Some(base) if variant != Variant::Baseline && base > 0.0 => {
            Some(round_to(ms / base - 1.0, 3))
        }
        _ => None,
    }
}

/// The row of an arena variant.
fn arena_row(measured: &Measured, baseline_ms: Option<f64>) -> PopulateRow {
    let variant = measured.variant;
    let reference = variant.reference();
    let ms = &measured.samples_ms;
    let min = ms.iter().copied().fold(f64::INFINITY, f64::min);
    let max = ms.iter().copied().fold(0.0, f64::max);
    let mean = measured.mean_ms();
    let host = &measured.host;
    let per_sample = |count| Some(round_to(measured.per_sample(count), 1));
    PopulateRow {
        variant: variant.name().into(),
        backing: "arena".into(),
        samples: ms.len() as u64,
        mean_ms: Some(round_to(mean, 2)),
        min_ms: Some(round_to(min, 2)),
        histogram: Some(sparkline(ms, 8)),
        max_ms: Some(round_to(max, 2)),
        modelled_ms: None,
        delta_vs_baseline: delta(variant, mean, baseline_ms),
        reference_mean_ms: reference.mean_ms,
        reference_delta: reference.delta,
        tlb_flushes: round_to(measured.global_flushes_per_sample(), 1),
        local_flushes: round_to(measured.local_flushes_per_sample(), 1),
        pages: measured.pages,
        cv: Some(round_to(measured.cv(), 3)),
        ipis_populating_cpu: per_sample(host.ipis_populating_cpu),
        ipis_other_cpus: per_sample(host.ipis_other_cpus),
        syscalls: per_sample(host.syscalls),
        minor_faults: per_sample(host.minor_faults),
        major_faults: per_sample(host.major_faults),
        agent_minor_faults: per_sample(host.agent_minor_faults),
    }
}

/// The row of a simulated variant: one sample, its modelled time.
fn sim_row(measured: &Measured, baseline_ms: Option<f64>) -> PopulateRow {
    let variant = measured.variant;
    let reference = variant.reference();
    PopulateRow {
        variant: variant.name().into(),
        backing: "sim".into(),
        samples: 1,
        mean_ms: None,
        min_ms: None,
        histogram: None,
        max_ms: None,
        modelled_ms: Some(round_to(measured.modelled_ms, 2)),
        delta_vs_baseline: delta(variant, measured.modelled_ms, baseline_ms),
        reference_mean_ms: reference.mean_ms,
        reference_delta: reference.delta,
        tlb_flushes: round_to(measured.global_flushes_per_sample(), 1),
        local_flushes: round_to(measured.local_flushes_per_sample(), 1),
        pages: measured.pages,
        cv: None,
        ipis_populating_cpu: None,
        ipis_other_cpus: None,
        syscalls: None,
        minor_faults: None,
        major_faults: None,
        agent_minor_faults: None,
    }
}

/// A histogram of `samples` in `bins` equal bins from min to max, one block
/// character per bin: `▁` for an empty bin, `▂`..`█` for one sample up to
/// the fullest bin (the document's histogram column).
pub fn sparkline(samples: &[f64], bins: usize) -> String {
    const LEVELS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    if samples.is_empty() || bins == 0 {
        return String::new();
    }
    let min = samples.iter().copied().fold(f64::INFINITY, f64::min);
    let max = samples.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut counts = vec![0usize; bins];
    for &sample in samples {
        let at = if max > min {
            (((sample - min) / (max - min)) * bins as f64) as usize
        } else {
            0
        };
        counts[at.min(bins - 1)] += 1;
    }
    let fullest = counts.iter().copied().max().unwrap_or(1).max(1);
    counts
        .iter()
        .map(|&count| {
            if count == 0 {
                LEVELS[0]
            } else {
                // 1..=7: any sample shows above an empty bin.
                LEVELS[1 + (count * 6).div_ceil(fullest).min(6)]
            }
        })
        .collect()
}

fn notes(
    region_bytes: u64,
    samples: usize,
    sim_region_bytes: u64,
    (costs, cost_source): (SimCosts, &CostSource),
) -> Vec<String> {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|line| line.starts_with("model name"))
                .and_then(|line| line.split(':').nth(1))
                .map(|name| name.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|text| text.trim().to_string())
        .unwrap_or_else(|_| "unknown".into());
    let cores = std::thread::available_parallelism().map_or(0, |cores| cores.get());
    let mut notes = vec![
        format!(
            "arena rows: {} MiB region ({} pages) populated per sample, {samples} samples per variant, on a memfd arena of {} MiB mapped with MAP_POPULATE (one node, 2 CPUs; 8/7 of the region plus 64 MiB plus 1/256 of the region, so that the high watermark and the per-CPU lists, which may grow to an eighth of the zone, stay free beside it, checked after boot); time = Instant over the populate loop only; host {cpu}, {cores} CPUs, Linux {kernel}",
            region_bytes >> 20,
            region_bytes / PAGE_SIZE,
            machine_bytes(region_bytes).unwrap_or(0) >> 20,
        ),
        "a flush in user space: each unmap_direct is one mprotect(PROT_NONE) of the arena's direct-map range; the host kernel then shoots down the TLBs of every CPU running this process, and a second thread spins on the other CPU throughout so each is a real cross-CPU IPI; tlb_flushes = global flushes per sample, local_flushes = mermap window wraps and fallbacks per sample".into(),
        "the data: one page of seeded random bytes, stamped with the page's index; after every sample (untimed) a seeded random set of pages is read back (through the mermap where unmapped) and compared; check_invariants once per variant".into(),
        "on the arena, each CPU's mermap window lives in an agent process forked at arena creation and pinned to one host CPU, the user-space counterpart of the series' mm-local region: no other CPU ever runs that address space, so mapping a slot (UFFDIO_CONTINUE of the page in the agent's view of the memfd, one call per run of slots: a PTE write without a fault; MADV_POPULATE_WRITE, a fault per page, where userfaultfd is missing) interrupts nobody and a wrap (one MADV_DONTNEED per run of adjacent slot pages) flushes only the agent's CPU; requests reach the agent through a shared ring, which the populating thread fills and hands over once per ring (512 requests), on the same CPU; the direct map stays the process's own mapping, shared by its threads, so unmapping from it still shoots down the spinner's CPU".into(),
        "host counts, per sample: ipis_populating_cpu / ipis_other_cpus = TLB shootdowns received (the TLB row of /proc/interrupts, per host CPU, read before and after each timed loop; a paravirtual host may skip the IPI to a preempted vCPU), syscalls = the backing's host system calls (mprotect, pwrite/pread, the agents' ioctl/madvise/futex/getrusage and their posters' futex calls), minor_faults / major_faults = getrusage of the process (all threads), agent_minor_faults = the agents' minor faults (0 when slot entries are written with UFFDIO_CONTINUE, one per page on the MADV_POPULATE_WRITE fallback); cv = standard deviation over mean of the samples".into(),
        "stability: the populating thread is pinned to the first host CPU and the spinner to the second (unpinned, the spinner sometimes shared the populating CPU and no shootdown was cross-CPU); all variants boot first and then sample in turn, after one untimed warm-up sample each; the memfd is faulted in at creation (MAP_POPULATE) and the host's shmem THP setting is left as it is (per-page mprotect splits a huge page anyway)".into(),
        format!("gfp_unmapped_span{MERMAP_SPAN_PAGES}: the same allocations with MermapConfig::span_pages = {MERMAP_SPAN_PAGES} (an option beyond the series, off by default): one mmap maps an aligned pageblock of the memfd into a window slot and later gets inside it reuse the live mapping, so the mermap costs one syscall per pageblock as the direct-map change does; the price is that neighbouring unmapped pages are reachable through this CPU's window until it wraps"),
        "gfp_unmapped_fileio: the same allocations with MermapConfig::access = FileIo (an option beyond the series, off by default): slots are handed out, wrapped and counted as before but map nothing; __GFP_ZERO and the write are pwrites at the page's offset in the memfd (about 0.6 µs per 4 KiB here), copied by the host kernel through its own mapping as guest_memfd's write() does, so no second user-space mapping of the page ever exists".into(),
        "the machine's one emulated node is host memory without mbind (every emulated node would share host node 0); reference = gfp-unmapped.txt, Firecracker populate_latency on Sapphire Rapids, 30 samples".into(),
    ];
    if sim_region_bytes > 0 {
        notes.push(format!(
            "sim rows: {} GiB region ({} pages) populated once per variant on a simulated machine of {:.1} GiB (sized as the arenas are); modelled_ms = the cost model's charge (prices from {cost_source}: protection change {} ns, global flush {} ns, local flush {} ns, zero page {} ns, mermap map {} ns, copy {} ps/byte), plus, for the mapped variants, the same per-byte copy price for the direct-map write the simulation has no bytes for",
            sim_region_bytes >> 30,
            sim_region_bytes / PAGE_SIZE,
            machine_bytes(sim_region_bytes).unwrap_or(0) as f64 / (1u64 << 30) as f64,
            costs.protection_change,
            costs.global_flush,
            costs.local_flush,
            costs.zero_page,
            costs.mermap_map,
            costs.copy_byte_ps,
        ));
    }
    notes
}

/// The experiment `unmapped-populate`.
pub struct UnmappedPopulate;

impl Experiment for UnmappedPopulate {
    fn name(&self) -> &'static str {
        "unmapped-populate"
    }

    fn source(&self) -> &'static str {
        "gfp-unmapped.txt"
    }

    fn about(&self) -> &'static str {
        "guest-memory populate latency: per-page unmap and flush, __GFP_UNMAPPED with the mermap, no flush"
    }

    fn check(&self, params: &Params) -> Result<(), ExperimentError> {
        // The calibration file is an input of the run like its config: one
        // that does not parse (PAGEFRAME_SIM_COSTS=/dev/zero) was found only
        // after the arenas had been built and timed.
        SimCosts::resolve().map_err(ExperimentError::failed)?;
        super::check_product(
            params,
            ["region_mib", "samples"],
            MAX_POPULATED_MIB,
            "MiB populated per variant",
        )
    }

    /// The parameters (config file keys) with their defaults at `scale`.
    fn params(&self, scale: Scale) -> Vec<Param> {
        let (region_mib, samples, sim_region_gib) = match scale {
            Scale::Quick => (64, 10, 4),
            Scale::Full => (2048, REFERENCE_SAMPLES as i64, 256),
        };
        vec![
            Param::int(
                "region_mib",
                "Guest memory populated per sample on the real arena, MiB (the machine is 8/7 of that plus 64 MiB plus 1/256 of it)",
                region_mib,
                2,
                8192,
            ),
            Param::int(
                "samples",
                "Timed samples of each variant on the real arena (after one untimed warm-up sample)",
                samples,
                1,
                1000,
            ),
            Param::int(
                "sim_region_gib",
                "Region populated once per variant on the simulated machine, GiB (0: no simulated rows)",
                sim_region_gib,
                0,
                512,
            ),
        ]
    }

    fn run(&self, options: &RunOptions, params: &Params) -> Result<Report, ExperimentError> {
        // Whole pageblocks, so that `gfp_unmapped` converts exactly
        // region / 2 MiB of them.
        let region_bytes = (params.int("region_mib") as u64) << 20;
        let region_bytes = region_bytes.div_ceil(PAGEBLOCK_BYTES) * PAGEBLOCK_BYTES;
        let samples = params.int("samples") as usize;
        let sim_region_bytes = (params.int("sim_region_gib") as u64) << 30;
        // Refused before anything is allocated when the host cannot hold
        // every arena at once (no swap: the OOM killer would end the run).
        MemoryNeed::of(region_bytes, VARIANTS.len() as u64, sim_region_bytes)
            .ok_or_else(|| ExperimentError::failed("region_mib/sim_region_gib: sizes overflow"))?
            .check(crate::host_memory::available())
            .map_err(ExperimentError::failed)?;
        // Read again (a sweep or a library caller may not have checked),
        // still before the arena work.
        let (costs, cost_source) = SimCosts::resolve().map_err(ExperimentError::failed)?;
        let sim_steps = if sim_region_bytes > 0 { 3 } else { 0 };
        let steps = (VARIANTS.len() * samples + sim_steps) as u64;
        let mut done = 0u64;
        let mut tick = || {
            done += 1;
            observe::progress(done, steps);
        };
        observe::progress(0, steps);

        // The populating thread on one host CPU, a spinner on another; every
        // variant boots first, then the samples run in turn, variant by
        // variant, so that drift of the host hits them all alike. One untimed
        // warm-up sample each (first touches of the ring and the metadata).
        let placement = Placement::pin();
        let mut variants = VARIANTS
            .into_iter()
            .enumerate()
            .map(|(at, variant)| {
                ArenaVariant::boot(
                    variant,
                    region_bytes / PAGE_SIZE,
                    options.seed.wrapping_add(at as u64),
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        {
            // A second CPU busy in this mm: each mprotect must interrupt it.
            let _spinner = Spinner::start(placement.spinner_cpu);
            for round in 0..=samples {
                for variant in &mut variants {
                    variant.sample(round == 0, placement.populating_cpu)?;
                    if round > 0 {
                        tick();
                    }
                }
            }
        }
        drop(placement);
        let arena = variants
            .into_iter()
            .map(ArenaVariant::finish)
            .collect::<Result<Vec<_>, _>>()?;
        let mut sim = Vec::new();
        if sim_region_bytes > 0 {
            for (at, variant) in VARIANTS.into_iter().take(3).enumerate() {
                sim.push(populate::on_sim(
                    variant,
                    sim_region_bytes / PAGE_SIZE,
                    options.seed.wrapping_add(at as u64),
                    costs,
                )?);
                tick();
            }
        }
        observe::progress(steps, steps);

        let baseline_ms = arena.first().map(Measured::mean_ms);
        let sim_baseline_ms = sim.first().map(|measured| measured.modelled_ms);
        let rows = arena
            .iter()
            .map(|measured| arena_row(measured, baseline_ms))
            .chain(
                sim.iter()
                    .map(|measured| sim_row(measured, sim_baseline_ms)),
            )
            .map(|typed| Row::from_typed(&typed))
            .collect::<Result<Vec<Row>, _>>()
            .map_err(ExperimentError::failed)?;
        Ok(Report {
            experiment: "unmapped-populate".into(),
            seed: options.seed,
            scale: options.scale.name().into(),
            rows,
            notes: notes(
                region_bytes,
                samples,
                sim_region_bytes,
                (costs, &cost_source),
            ),
        })
    }

    /// The change of the mean populate latency against the baseline on
    /// the real arena, for `gfp_unmapped` and `skip_flush` (document:
    /// -70.0% and -68.8%).
    fn headline(&self, report: &Report) -> Option<Headline> {
        let arena = |variant: &str| {
            report
                .results_as::<PopulateRow>()
                .find(|row| row.variant == variant && row.backing == "arena")
        };
        let (unmapped, skip) = (arena("gfp_unmapped")?, arena("skip_flush")?);
        let ours = (unmapped.delta_vs_baseline?, skip.delta_vs_baseline?);
        let reference = unmapped.reference_delta.zip(skip.reference_delta);
        let percent = |(a, b): (f64, f64)| format!("{:+.1}%, {:+.1}%", a * 100.0, b * 100.0);
        Some(Headline {
            metric: "populate latency vs baseline: gfp_unmapped, skip_flush".into(),
            ours: percent(ours),
            document: reference.map_or("-".into(), percent),
            direction_matches: reference
                .map(|(a, b)| (a < 0.0) == (ours.0 < 0.0) && (b < 0.0) == (ours.1 < 0.0)),
        })
    }

    fn plots(&self, report: &Report) -> Vec<Plot> {
        plot::plots(report)
    }
}
