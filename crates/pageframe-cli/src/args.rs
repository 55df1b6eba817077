//! The command line as clap sees it: subcommands, flags and their help.
//! Values stay strings where the lab has its own parser (sizes, formats,
//! scales, view and experiment names), so that a bad value gets the lab's
//! one-line message; [`crate::plan`] checks them.

use clap::{Args, Parser, Subcommand};
use pageframe_lab::machine_args::MachineArgs;
use std::path::PathBuf;

/// The pageframe laboratory: the Linux page allocator, simulated.
#[derive(Debug, Parser)]
#[command(name = "pageframe", version)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run experiments (a comma-separated list, or `all`) and print their
    /// reports.
    Run(RunArgs),
    /// Boot a machine, churn it if asked, and print kernel-format views.
    Proc(ProcArgs),
    /// Boot a machine and print its zones, CPUs, boot time and memory costs.
    Info(InfoArgs),
    /// Run `bulk` and `scaling` and print the README's performance section.
    PerfTable(PerfTableArgs),
    /// Print an experiment's parameters (or every one's, with `all`) as
    /// commented TOML with the defaults, to edit and pass to `run --config`.
    Config(ConfigArgs),
    /// Run conformance suites: the same cases on the live kernel and on
    /// pageframe booted like the host, compared row by row.
    #[command(after_help = CONFORM_EXIT_STATUS)]
    Conform(ConformArgs),
    /// Record, import or replay page-allocator traces of real kernels.
    #[command(subcommand)]
    Trace(TraceCommand),
    /// Run an experiment at every point of a spec file's seeds x parameters
    /// x machine shapes, into one table and a report page.
    Sweep(SweepArgs),
    /// Serve a pageframe zram to the running kernel.
    #[command(subcommand)]
    Zram(ZramCommand),
    /// Measure the simulated backing's prices (protection change, global
    /// and local flush, mermap map, zeroing, copying) on a real arena of
    /// this host and write them where the simulation reads them.
    Calibrate(CalibrateArgs),
}

/// `pageframe sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// The spec (TOML): experiment, scale, seeds, [params] lists, [shapes.NAME] tables.
    // This doc comment is the --help text: its brackets are TOML, not links.
    #[allow(rustdoc::broken_intra_doc_links)]
    pub spec: PathBuf,
    /// The results directory: one file per point in DIR/points, DIR/results.csv,
    /// DIR/index.html. A re-run skips the points already done there.
    /// Default: the spec's name without .toml, plus `-results`.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Points run at once (default: every core).
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Run the points on the Ray cluster at ADDRESS (`auto`, `ray://host:10001`,
    /// `local` for a new local instance) through the Python package
    /// (`python3 -m pageframe.sweep`; PAGEFRAME_PYTHON names another interpreter).
    #[arg(long, value_name = "ADDRESS")]
    pub ray: Option<String>,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
}

/// `pageframe zram`.
#[derive(Debug, Subcommand)]
pub enum ZramCommand {
    /// Serve a pageframe zram as a block device (root): a FUSE file behind a
    /// loop device, on which mkfs.ext4 and `mount -o discard` work; prints
    /// the device and its mm_stat until Ctrl-C, then detaches and unmounts.
    Serve(ZramServeArgs),
    /// Measure 4 KiB O_DIRECT write throughput (MB/s) of a served pageframe
    /// zram at several writes in flight, beside a direct-I/O loop device over
    /// a tmpfs file and a real /dev/zram (root; a fresh device per point).
    Bench(ZramBenchArgs),
}

/// `pageframe zram bench`.
#[derive(Debug, Args)]
pub struct ZramBenchArgs {
    /// The allocator of the served device: zsmalloc-chain4 … zsmalloc-chain16, or afmalloc.
    #[arg(long, default_value = "zsmalloc-chain8")]
    pub backend: String,
    /// The compressor of the served device: lz4, lzo, zstd or zstd:LEVEL.
    #[arg(long, default_value = "lz4")]
    pub codec: String,
    /// FUSE session threads of the served device.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// Bytes written per point (and each device's size), e.g. 64M.
    #[arg(long, default_value = "64M")]
    pub size: String,
    /// Writes in flight per point, comma-separated (each a thread doing
    /// synchronous writes; 1 is queue depth 1).
    #[arg(long, default_value = "1,4,16")]
    pub writers: String,
    /// The kernel tarball whose tar stream gives the pages written.
    #[arg(long, value_name = "FILE", help = format!(
        "The kernel tarball whose tar stream gives the pages written; a file named here must give them all [default: {}, or text-like pages, labelled, when it is not installed]",
        pageframe_lab::corpus::DEFAULT_TARBALL,
    ))]
    pub corpus: Option<PathBuf>,
}

/// `pageframe zram serve`.
#[derive(Debug, Args)]
pub struct ZramServeArgs {
    /// The allocator: zsmalloc-chain4 … zsmalloc-chain16, or afmalloc.
    #[arg(long, default_value = "zsmalloc-chain8")]
    pub backend: String,
    /// The compressor: lz4, lzo, zstd or zstd:LEVEL.
    #[arg(long, default_value = "lz4")]
    pub codec: String,
    /// Size of the device (disksize), e.g. 2G.
    #[arg(long, default_value = "1G")]
    pub size: String,
    /// Memory the pool may take (beyond it writes fail with ENOSPC);
    /// default: the device's size.
    #[arg(long)]
    pub memory: Option<String>,
    /// Where to mount the FUSE file system (a directory; made if missing,
    /// and then removed at exit; one that exists is left).
    #[arg(long, value_name = "DIR")]
    pub mountpoint: Option<PathBuf>,
    /// FUSE session threads.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// Attach the loop device buffered instead of with direct I/O.
    #[arg(long)]
    pub buffered: bool,
    /// Record a block trace of the device's writes and discards here.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// With --trace: a .tar.xz whose files' pages get their trace sizes
    /// computed before serving, so that recording does not slow the
    /// device (other pages are compressed as they arrive).
    #[arg(long, value_name = "TAR.XZ")]
    pub trace_corpus: Option<PathBuf>,
    /// Seconds between mm_stat lines (printed when changed; 0: never).
    #[arg(long, default_value_t = 5)]
    pub interval: u64,
}

/// `pageframe calibrate`.
#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// The file to write (the simulation reads PAGEFRAME_SIM_COSTS, else
    /// this name in the current directory).
    #[arg(long, value_name = "FILE", default_value = pageframe::backing::SIM_COSTS_FILE)]
    pub out: PathBuf,
    /// Pages of the arena timed per round (at least 1024, at most
    /// 1048576; pages x (rounds + 1) at most 16777216).
    #[arg(long, default_value_t = 8192)]
    pub pages: u64,
    /// Timed rounds after a warm-up; each price keeps its fastest round.
    #[arg(long, default_value_t = 3)]
    pub rounds: u32,
}

/// The exit statuses of `conform`, printed under its help.
const CONFORM_EXIT_STATUS: &str = "Exit status: 0 when no suite found a DIFF that is not listed as not modelled (skipped suites do not fail: without root a suite is skipped with the reason), 1 when one did, 2 on bad input or when a suite could not run.";

/// `pageframe conform`.
#[derive(Debug, Args)]
pub struct ConformArgs {
    /// Suites, comma-separated or as several arguments; `all` (the default)
    /// for every one.
    #[arg(value_name = "SUITE", help = format!(
        "Suites, comma-separated or several arguments: {}; or `all` (the default)",
        pageframe_lab::conform::suites::names().join(", ")
    ))]
    pub suites: Vec<String>,
    /// Output format: table or json (one object).
    #[arg(long, default_value = "table")]
    pub format: String,
    /// Print the MATCH rows too (the table shows only DIFF rows otherwise).
    #[arg(long, short = 'v', visible_alias = "verbose")]
    pub all: bool,
    /// Also write the results (every row) as DIR/conform.json, which the
    /// report page of `pageframe run --out DIR` then shows.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// `pageframe trace`.
#[derive(Debug, Subcommand)]
pub enum TraceCommand {
    /// Record the kmem page-allocator events live (root, tracefs) while a
    /// command runs or for a duration, into a .pftrace file.
    Record(TraceRecordArgs),
    /// Read a text trace (tracefs, trace-cmd report, perf script) or a
    /// .pftrace file, print its summary, and write it as .pftrace with -o.
    Import(TraceImportArgs),
    /// Replay a trace on pageframe and print the kernel's figures beside
    /// pageframe's.
    Replay(Box<TraceReplayArgs>),
}

/// `pageframe trace record`.
#[derive(Debug, Args)]
pub struct TraceRecordArgs {
    /// The .pftrace file to write.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: PathBuf,
    /// Record for this many seconds instead of while a command runs.
    #[arg(long, value_name = "SECS", conflicts_with = "command")]
    pub duration: Option<f64>,
    /// Keep the first N events (1 to 33554432, the most a trace holds).
    #[arg(long, value_name = "N")]
    pub max_events: Option<usize>,
    /// The command to trace, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// `pageframe trace import`.
#[derive(Debug, Args)]
pub struct TraceImportArgs {
    /// The trace to read.
    pub file: PathBuf,
    /// Write it as a .pftrace file here.
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    pub output: Option<PathBuf>,
}

/// `pageframe trace replay`.
#[derive(Debug, Args)]
pub struct TraceReplayArgs {
    /// The trace to replay (.pftrace or text).
    pub file: PathBuf,
    /// The machine (default: shaped like the traced host); --cmdline gives
    /// the policy switches (page_alloc.shuffle=1, ...).
    #[command(flatten)]
    pub machine: MachineOptions,
    /// Seed of the machine's random choices.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Accept a machine smaller than the traced host (CPUs folded, failed
    /// allocations counted).
    #[arg(long)]
    pub fit: bool,
    /// Skip the frees of blocks allocated before the trace began, instead
    /// of holding a stand-in for each from the start.
    #[arg(long)]
    pub skip_pretrace_frees: bool,
    /// Start the per-CPU lists empty at their boot `high`, instead of where
    /// the host's stood at the trace's start (its saved zoneinfo).
    #[arg(long)]
    pub empty_pcp_start: bool,
    /// Start from a freshly booted machine's free memory, instead of free
    /// lists laid out as the host's were at the trace's start (its saved
    /// pagetypeinfo) with the rest of memory held.
    #[arg(long)]
    pub fresh_free_lists: bool,
    /// Do not run the vmstat worker's decay of each CPU's `high` (and drain
    /// above it), which by default runs at each run of the worker the trace
    /// recorded, or once a second of its time in a trace without them.
    #[arg(long, conflicts_with = "pcp_decay_timer")]
    pub no_pcp_decay: bool,
    /// Run that decay once a second of the trace's time on every CPU, even
    /// where the trace recorded the worker's runs.
    #[arg(long)]
    pub pcp_decay_timer: bool,
    /// When a run of order 1-3 frees drains the per-CPU lists: 6.12 (at a
    /// batch) or 6.16 (at a batch plus half of high_min); default: the
    /// traced kernel's, else 6.12.
    #[arg(long, value_name = "RULE")]
    pub free_high: Option<String>,
    /// The fallback table a request walks when its migratetype's lists are
    /// empty: kernel (Linux's `fallbacks[]`) or reversed (each type tries
    /// the kernel's second choice first).
    #[arg(long, value_name = "ORDER", default_value = "kernel")]
    pub fallback_order: String,
    /// vm.percpu_pagelist_high_fraction: per-CPU list high is the zone's
    /// managed pages / N split over its CPUs (0: the kernel's default,
    /// from the low watermark; else at least 8).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub pcp_high_fraction: u32,
    /// Per-CPU list batch in pages instead of the kernel's zone_batchsize().
    #[arg(long, value_name = "PAGES")]
    pub pcp_batch: Option<u32>,
    /// Output format: table, json or csv.
    #[arg(long, default_value = "table")]
    pub format: String,
    /// Also write the fragmentation indices over time as an SVG plot.
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
}

/// `pageframe config`.
#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// The experiment, a comma-separated list of them, or `all`.
    pub experiment: String,
    /// Print the defaults of this scale: quick or full.
    #[arg(long, default_value = "quick")]
    pub scale: String,
}

/// `pageframe perf-table`.
#[derive(Debug, Args)]
pub struct PerfTableArgs {
    /// Also write the section into this file, between its perf-table markers.
    #[arg(long, value_name = "FILE")]
    pub write: Option<PathBuf>,
    /// Size of the runs: quick or full.
    #[arg(long, default_value = "quick")]
    pub scale: String,
}

/// `pageframe run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The experiments to run, comma-separated, or `all`.
    #[arg(value_name = "EXPERIMENTS", help = format!(
        "Experiments, comma-separated, run in the order given: {}; or `all` for every one in that order",
        pageframe_lab::experiments::names().join(", ")
    ))]
    pub experiments: String,
    /// Size of the run: quick or full.
    #[arg(long, default_value = "quick")]
    pub scale: String,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Output format: table, json or csv.
    #[arg(long, default_value = "table")]
    pub format: String,
    /// Also write each experiment's JSON, CSV and plots (SVG, PNG) and one
    /// report page, DIR/index.html, into DIR. Each file is written whole
    /// (to a temporary, then renamed): a stopped run leaves none half-written.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Experiment parameters from a TOML file.
    #[arg(long, value_name = "FILE", help = format!(
        "Experiment parameters from a TOML file, one [experiment] table each (`pageframe config <experiment>` prints the defaults); at most {} KiB",
        pageframe_lab::files::MAX_CONFIG_BYTES >> 10
    ))]
    pub config: Option<PathBuf>,
    /// After each experiment, print these views of its machine,
    /// comma-separated: buddyinfo, pagetypeinfo, zoneinfo, vmstat.
    #[arg(long = "proc", value_name = "VIEWS")]
    pub proc_views: Option<String>,
    /// No progress bars (they are off anyway when stdout is not a terminal).
    #[arg(long, short)]
    pub quiet: bool,
    /// The kernel source tarball (.tar.xz) of zram-untar.
    #[arg(long, value_name = "FILE", help = format!(
        "The kernel source tarball (.tar.xz) of zram-untar; default {} (Debian: apt-get install linux-source-6.1). Read page by page: a file over {} MiB or files kept over {} MiB in all are an error",
        pageframe_lab::corpus::DEFAULT_TARBALL,
        pageframe_lab::corpus::MAX_FILE_BYTES >> 20,
        pageframe_lab::corpus::MAX_CORPUS_BYTES >> 20,
    ))]
    pub corpus: Option<PathBuf>,
    /// zram-untar: run the workload for real on this file system (ext4;
    /// root): on a served pageframe zram alone (or with a real /dev/zram
    /// beside it at once: `record_beside = "kernel"`), recording the block
    /// trace (see --trace), then replay it.
    #[arg(long, value_name = "FS")]
    pub fs: Option<String>,
    /// zram-untar: the block trace to replay (default: the shipped
    /// quick-scale trace), or with --fs the one to write (default:
    /// zram-untar-ext4-SCALE.pfzt here).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
}

/// `pageframe proc`.
#[derive(Debug, Args)]
pub struct ProcArgs {
    /// Views, comma-separated: buddyinfo, pagetypeinfo, zoneinfo, vmstat,
    /// shuffle (Y or N), sysctl (the vm sysctls, as `sysctl` prints them),
    /// meminfo (the reclaim layer's /proc/meminfo; see --aging);
    /// slabinfo and zs-classes run a seeded slab / zsmalloc workload of
    /// --churn operations (default 20000) first.
    pub views: String,
    /// The machine.
    #[command(flatten)]
    pub machine: MachineOptions,
    /// Age the machine with this many random operations before printing.
    #[arg(long, value_name = "OPS", help = format!(
        "Age the machine with this many random operations before printing; at most {} (a few minutes; a progress bar shows on a terminal)",
        pageframe_lab::churn::MAX_OPS
    ))]
    pub churn: Option<u64>,
    /// Age the machine with this many benchmark runs of the reclaim
    /// layer's aging workload before printing.
    #[arg(long, value_name = "RUNS", conflicts_with = "churn", help = format!(
        "Age the machine with this many runs of a benchmark on a machine that reads files through the page cache (a heap of 3/8 of the memory pre-touched and freed at exit, a data set twice the memory, kswapd and direct reclaim), as shuffle-cache's aging does; at most {}; vmstat then adds the reclaim counters",
        pageframe_lab::reclaim_views::MAX_AGING_RUNS
    ))]
    pub aging: Option<u64>,
    /// Seed of the churn, the object workloads and the aging.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Sysctl writes after boot.
    #[command(flatten)]
    pub sysctl: SysctlOptions,
}

/// `pageframe info`.
#[derive(Debug, Args)]
pub struct InfoArgs {
    /// The machine.
    #[command(flatten)]
    pub machine: MachineOptions,
    /// Sysctl writes after boot.
    #[command(flatten)]
    pub sysctl: SysctlOptions,
    /// Back the machine with real memory (a memfd arena of its size, the
    /// direct map, the mermap windows) instead of the simulation.
    #[arg(long)]
    pub arena: bool,
}

/// Writes to the page allocator's sysctls, made after boot and before the
/// machine file's hotplug steps (as sysctl.conf is applied at boot).
#[derive(Debug, Args)]
pub struct SysctlOptions {
    /// `vm.NAME=VALUE`, as written to /proc/sys/vm/NAME; repeatable, applied
    /// in order: vm.min_free_kbytes, vm.watermark_boost_factor,
    /// vm.watermark_scale_factor, vm.percpu_pagelist_high_fraction,
    /// vm.lowmem_reserve_ratio ("256 256 32 0").
    #[arg(long = "sysctl", value_name = "NAME=VALUE")]
    pub writes: Vec<String>,
}

/// The machine options shared by `proc` and `info`. Later sources win:
/// the file, then these flags, then the command line.
#[derive(Debug, Args)]
pub struct MachineOptions {
    /// A TOML machine description.
    #[arg(long, value_name = "FILE", help = format!(
        "A TOML machine description (see examples/machines/); at most {} KiB",
        pageframe_lab::files::MAX_CONFIG_BYTES >> 10
    ))]
    pub config: Option<PathBuf>,
    /// Memory of the machine (4096, 64K, 2M, 16G, 1T); default 4G.
    #[arg(long, value_name = "SIZE")]
    pub mem: Option<String>,
    /// NUMA nodes sharing the memory equally; default 1.
    #[arg(long, value_name = "N")]
    pub nodes: Option<usize>,
    /// CPUs, spread over the nodes; default 2.
    #[arg(long, value_name = "N")]
    pub cpus: Option<usize>,
    /// Kernel command line: mem=, movablecore=, kernelcore=,
    /// page_alloc.shuffle=, page_alloc.shuffle_order=, numa=fake=N[U],
    /// transparent_hugepage=.
    // This doc comment is the --help text: `N[U]` is syntax, not a link.
    #[allow(rustdoc::broken_intra_doc_links)]
    #[arg(long, value_name = "STR")]
    pub cmdline: Option<String>,
    /// Put memory below 16 MiB in a DMA zone.
    #[arg(long)]
    pub dma: bool,
    /// Put memory below 4 GiB in a DMA32 zone.
    #[arg(long)]
    pub dma32: bool,
    /// MAX_PAGE_ORDER, inclusive; default 10.
    #[arg(long, value_name = "N")]
    pub max_order: Option<u8>,
    /// pageblock_order; default 9.
    #[arg(long, value_name = "N")]
    pub pageblock_order: Option<u8>,
    /// Page size, a power of two from 4K to 64K; default 4K.
    #[arg(long, value_name = "SIZE")]
    pub page_size: Option<String>,
}

impl From<MachineOptions> for MachineArgs {
    fn from(options: MachineOptions) -> MachineArgs {
        MachineArgs {
            config: options.config,
            mem: options.mem,
            nodes: options.nodes,
            cpus: options.cpus,
            cmdline: options.cmdline,
            dma: options.dma,
            dma32: options.dma32,
            max_order: options.max_order,
            pageblock_order: options.pageblock_order,
            page_size: options.page_size,
        }
    }
}

/// clap's message for a usage error as one line: its first paragraph
/// (the message and, for a missing argument, the argument's name) without
/// the `error:` prefix, then the usage line, without the tips.
///
/// `pageframe run` gives `the following required arguments were not
/// provided: <EXPERIMENTS> (usage: pageframe run <EXPERIMENTS>)`.
pub fn one_line(err: &clap::Error) -> String {
    let rendered = err.render().to_string();
    let message: Vec<&str> = rendered
        .lines()
        .map(str::trim)
        .take_while(|line| !line.is_empty())
        .collect();
    let message = message.join(" ");
    let message = message.strip_prefix("error: ").unwrap_or(&message);
    let usage = rendered
        .lines()
        .find_map(|line| line.trim().strip_prefix("Usage: "));
    match usage {
        Some(usage) => format!("{message} (usage: {usage})"),
        None => message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn usage_error(args: &[&str]) -> String {
        let err = Cli::try_parse_from(args).expect_err("a usage error");
        one_line(&err)
    }

    #[test]
    fn a_missing_experiment_is_one_whole_line() {
        let message = usage_error(&["pageframe", "run"]);
        assert_eq!(
            message,
            "the following required arguments were not provided: <EXPERIMENTS> (usage: pageframe run <EXPERIMENTS>)"
        );
    }

    #[test]
    fn a_bad_value_names_the_flag() {
        let message = usage_error(&["pageframe", "run", "all", "--seed", "x"]);
        assert!(!message.contains('\n'), "{message}");
        assert!(message.contains("for '--seed <SEED>'"), "{message}");
    }
}
