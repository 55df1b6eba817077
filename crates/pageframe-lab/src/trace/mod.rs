//! Page-allocator traces of real kernels, and their replay on pageframe:
//! "what would *my* workload's allocations do under this allocator?".
//!
//! A trace holds the kmem tracepoints `mm_page_alloc`, `mm_page_free`,
//! `mm_page_free_batched`, `mm_page_alloc_zone_locked`,
//! `mm_page_pcpu_drain` and `mm_page_alloc_extfrag` with CPU and time, the
//! vmstat worker's runs (`workqueue_execute_start` of `vmstat_update`), plus
//! the host's /proc state at start and end. It is recorded live from a
//! private tracefs instance ([`record()`]), imported from text ([`import()`]),
//! stored as a `.pftrace` file ([`format`](mod@format)), and replayed
//! ([`run_replay`]).
//!
//! # How the CLI calls this module
//!
//! ```text
//! pageframe trace record -o FILE -- CMD...
//!     let trace = trace::record(&RecordOptions::new(RecordTarget::Command(argv)))?;
//!     trace::write_file(&path, &trace)?;            // print trace::summary(&trace)
//! pageframe trace record -o FILE --duration S [--max-events N]
//!     RecordTarget::Duration(Duration::from_secs_f64(s)); options.max_events = n;
//! pageframe trace import FILE [-o OUT]
//!     let trace = trace::import(&path)?;           // text (trace, trace_pipe,
//!     trace::write_file(&out, &trace)?;            // trace-cmd report, perf script)
//!                                                  // or a .pftrace file
//! pageframe trace replay FILE [--machine/--mem/--cpus ...] [--cmdline "page_alloc.shuffle=1"]
//!                        [--seed N] [--fit] [--plot OUT.svg] [--format table|json|csv]
//!     let trace = trace::import(&path)?;
//!     let options = ReplayOptions { machine: Some(desc) /* or None: host-shaped */,
//!                                   cmdline, seed, fit, ..Default::default() };
//!     let report = trace::run_replay(&trace, &options)?;
//!     rows: report.rows (ReplayRow::to_report_row() gives report::Row);
//!     plot: trace::plot::write_svg(&trace, &report, &out)?;
//!                        [--fallback-order kernel|reversed] [--pcp-high-fraction N]
//!                        [--pcp-batch N]
//!     options.alloc = AllocOptions { fallback_order, pcp: PcpSizing::new(n, batch)?, .. };
//!                        [--skip-pretrace-frees] [--empty-pcp-start] [--fresh-free-lists]
//!     options.hold_pretrace / host_pcp_start / host_free_start = false
//!     (the set-up that starts the replay where the host stood: stand-ins,
//!     the host's per-CPU lists, its free lists from [`host_free`])
//! experiment `trace-replay` (in `run all`):
//!     trace::replay_policies(&trace, seed, samples, &[ReplayPolicy::kernel(), other])
//!     over trace::shipped_trace_path(): one ReplayReport per policy;
//!     trace::run_experiment(seed) gives the kernel's and shuffle's rows
//!     with the policy in `key`.
//! ```
//!
//! Every error is a [`TraceError`] whose `Display` is one line naming the
//! byte offset, line number or mismatch; the CLI prints it and exits 2.
//! Policy switches: the kernel command line (`page_alloc.shuffle=`, ...),
//! the fallback order and the per-CPU list sizing ([`ReplayPolicy`]).

pub mod compare;
pub mod decay;
pub mod event;
pub mod format;
pub mod frag;
pub mod gfp_names;
pub mod host;
pub mod host_free;
pub mod host_pageblocks;
pub mod host_pcp;
pub mod live;
pub mod plot;
pub mod policy;
pub mod record;
pub mod replay;
mod replay_machine;
mod replay_options;
pub mod text_import;
pub mod tracefs;

pub use compare::{compare, section_totals, ReplayRow};
pub use decay::PcpDecay;
pub use event::{EventKind, Trace, TraceClock, TraceEvent};
pub use format::{decode, encode, read_file, write_file};
pub use policy::ReplayPolicy;
pub use record::{record, RecordOptions, RecordTarget};
pub use replay::{replay, FragSample, ReplayOptions, ReplayOutcome};

use std::path::{Path, PathBuf};

/// Largest order a trace event may carry.
pub const MAX_TRACE_ORDER: u8 = 20;

/// The most events a trace may hold (1 GiB of events in memory; a busy
/// host's kmem tracepoints fire about a million times a second, so this is
/// half a minute of the busiest recording).
pub const MAX_TRACE_EVENTS: usize = 1 << 25;

/// The largest `.pftrace` file read: [`MAX_TRACE_EVENTS`] events take at
/// most 31 bytes each encoded (tag, order, three varints, the alloc's
/// migratetype and gfp), plus a MiB for the metadata.
pub const MAX_TRACE_FILE_BYTES: u64 = (MAX_TRACE_EVENTS as u64) * 32 + (1 << 20);

/// What can go wrong with a trace. `Display` is one line.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The file ends inside a section.
    #[error("truncated trace: {what} at byte offset {offset} runs past the end of the file")]
    Truncated {
        /// Where the section starts.
        offset: u64,
        /// Which section.
        what: String,
    },
    /// The file is not a pageframe trace.
    #[error("not a pageframe trace: magic at byte offset {offset} is \"{found}\", expected \"PGFTRACE\" (text traces go through import)")]
    Foreign {
        /// Always 0.
        offset: u64,
        /// What the file starts with.
        found: String,
    },
    /// A file [`import()`] reads as neither: binary, but not a pageframe
    /// trace.
    #[error("not a pageframe trace: magic at byte offset 0 is \"{found}\", expected \"PGFTRACE\"; nor a text trace: a NUL byte in its first {scanned} bytes")]
    Binary {
        /// Bytes looked at for a NUL.
        scanned: usize,
        /// What the file starts with.
        found: String,
    },
    /// A field makes no sense.
    #[error("corrupt trace at byte offset {offset}: {reason}")]
    Corrupt {
        /// Where.
        offset: u64,
        /// Why.
        reason: String,
    },
    /// A text trace line naming one of our events lacks a field.
    #[error("text trace line {line}: {reason}")]
    Text {
        /// Line number, from 1.
        line: usize,
        /// Why.
        reason: String,
    },
    /// A file could not be read or written.
    #[error("{path}: {message}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        message: String,
    },
    /// tracefs refused or returned something unexpected.
    #[error("tracefs: {0}")]
    Tracefs(String),
    /// The trace does not fit the replay machine.
    #[error("mismatch: {0}")]
    Mismatch(String),
    /// The replay machine could not be described or booted.
    #[error("replay machine: {0}")]
    Machine(String),
    /// Bad arguments.
    #[error("{0}")]
    Invalid(String),
    /// A structure's invariant does not hold.
    #[error("invariant: {0}")]
    Invariant(String),
}

impl TraceError {
    /// An I/O error on `path`.
    pub fn io(path: &Path, err: std::io::Error) -> TraceError {
        TraceError::Io {
            path: path.to_path_buf(),
            message: err.to_string(),
        }
    }
}

/// Reads a trace file of any supported kind: a `.pftrace` file (by its
/// magic) or text output of tracefs, `trace-cmd report` or `perf script`.
pub fn import(path: &Path) -> Result<Trace, TraceError> {
    use std::io::BufRead;
    let file = crate::files::open_input(path).map_err(|err| TraceError::io(path, err))?;
    let mut reader = std::io::BufReader::with_capacity(64 << 10, file);
    let head = reader.fill_buf().map_err(|err| TraceError::io(path, err))?;
    if head.starts_with(format::MAGIC) {
        return read_file(path);
    }
    if head.contains(&0) {
        // Binary but not ours (decode() would call a short file truncated,
        // and send the reader to import, where it is).
        return Err(TraceError::Binary {
            scanned: head.len(),
            found: format::magic_text(head),
        });
    }
    let trace = text_import::import_reader(reader)?;
    trace.check_invariants()?;
    Ok(trace)
}

/// One paragraph about a trace: events per kind, CPUs, lost events, source.
pub fn summary(trace: &Trace) -> String {
    let counts = trace.counts();
    let kinds: Vec<String> = EventKind::ALL
        .iter()
        .zip(counts)
        .map(|(kind, count)| match kind {
            EventKind::VmstatWork if !trace.records_vmstat_worker() => {
                format!("{} not recorded", kind.label())
            }
            kind => format!("{} {count}", kind.label()),
        })
        .collect();
    let last = trace.events.last().map_or(0, |event| event.timestamp);
    let span = match trace.clock() {
        TraceClock::Nanoseconds => format!("{:.3} s", last as f64 / 1e9),
        TraceClock::Ticks => format!("{last} clock ticks (a trace clock with no time unit)"),
    };
    format!(
        "{} events over {span} on {} CPUs ({}); lost events: {}; source: {}",
        trace.events.len(),
        host::host_cpus(trace),
        kinds.join(", "),
        trace.meta("lost_events").unwrap_or("unknown"),
        trace.meta("source").unwrap_or("unknown"),
    )
}

/// A replay's report: typed rows beside the kernel's figures, and the
/// fragmentation series for plots.
#[derive(Clone, Debug)]
pub struct ReplayReport {
    /// The side-by-side rows.
    pub rows: Vec<ReplayRow>,
    /// The replay's own outcome (series, /proc views, counters).
    pub outcome: ReplayOutcome,
}

/// Replays `trace` and compares: the `trace replay` command's whole work.
/// Deterministic: the same trace and options give the same rows.
pub fn run_replay(trace: &Trace, options: &ReplayOptions) -> Result<ReplayReport, TraceError> {
    let outcome = replay(trace, options)?;
    let rows = compare(trace, &outcome);
    Ok(ReplayReport { rows, outcome })
}

/// A replay's rows and notes as a report (`trace replay`'s output and the
/// Python package's `replay`); `file` is the trace's path, named in a note.
pub fn replay_report(
    file: &Path,
    trace: &Trace,
    report: &ReplayReport,
    options: &ReplayOptions,
) -> crate::report::Report {
    crate::report::Report {
        experiment: "trace-replay".into(),
        seed: options.seed,
        scale: "trace".into(),
        rows: report.rows.iter().map(|row| row.to_report_row()).collect(),
        notes: replay_notes(file, trace, report, options),
    }
}

/// The notes under a replay's rows: the trace, the machine, and what the
/// replay could not take from the trace.
fn replay_notes(
    file: &Path,
    trace: &Trace,
    report: &ReplayReport,
    options: &ReplayOptions,
) -> Vec<String> {
    let cmdline = options.cmdline.trim();
    let mut notes = vec![
        format!("{}: {}", file.display(), summary(trace)),
        format!(
            "replayed on {} MiB, {} CPUs{}",
            report.outcome.machine.bytes_within_mem_limit() >> 20,
            report.outcome.machine.nr_cpus(),
            if cmdline.is_empty() {
                String::new()
            } else {
                format!(", cmdline \"{cmdline}\"")
            }
        ),
    ];
    if host::host_file(trace, host::Moment::Start, "zoneinfo").is_none() {
        notes.push(
            "the trace carries no host state from its start (a text import): \
             the replay starts on a freshly booted machine with empty per-CPU \
             lists; `pageframe trace record` keeps the host's /proc files"
                .to_string(),
        );
    }
    notes.extend(host_work_notes(trace));
    let untraced = report.outcome.counts.frees_after_untraced_alloc;
    if untraced > 0 {
        notes.push(format!(
            "frees of blocks the trace had freed and not allocated since \
             ({untraced}): those blocks were allocated without an mm_page_alloc event (the \
             kernel's alloc_pages_bulk() takes pages from a per-CPU list without \
             one: vmalloc, as for kernel stacks, and page pools; so does \
             compaction's free scanner, from the buddy lists); the replay skips \
             those frees, and the host's lists lost those pages at a time the \
             trace does not show"
        ));
    }
    if options.machine.is_none() {
        notes.extend(reserved_memory_note(trace, report));
    }
    let unrecorded = match trace.meta(event::VMSTAT_WORKER_KEY) {
        Some(why) => format!("the recording kept no vmstat worker runs ({why})"),
        None => "the trace does not record the vmstat worker's runs \
                 (`pageframe trace record` keeps them)"
            .to_string(),
    };
    match (options.pcp_decay, options.decay_on(trace)) {
        (PcpDecay::Worker, PcpDecay::Timer) => notes.push(format!(
            "{unrecorded}: the per-CPU lists' high was decayed once a second \
             of its time instead"
        )),
        (PcpDecay::Worker, PcpDecay::Off) => notes.push(format!(
            "{unrecorded}, and its clock counts ticks, not time: the \
             per-CPU lists' high was not decayed"
        )),
        (PcpDecay::Timer, PcpDecay::Off) => notes.push(
            "the trace's clock counts ticks, not time: the vmstat worker's \
             once-a-second decay of the per-CPU lists' high was not run"
                .to_string(),
        ),
        _ => {}
    }
    notes
}

/// What the host's /proc/vmstat shows it did during the recording besides
/// the traced allocations and frees: compaction (told by its own counters:
/// `pgmigrate_success` also counts NUMA balancing's and demotion's moves),
/// which moves pages without
/// an allocation event (its free scanner isolates its targets from the
/// buddy lists; a moved page's later free is of a block the replay never
/// saw) and which pageframe does not run; and reclaim, whose frees the
/// trace shows and the replay makes, but which pageframe's page allocator
/// does not start.
fn host_work_notes(trace: &Trace) -> Vec<String> {
    let growth = |name| host::vmstat_growth(trace, name).unwrap_or(0);
    let mut notes = Vec::new();
    let (isolated, stalls, woken, migrated) = (
        growth("compact_isolated"),
        growth("compact_stall"),
        growth("compact_daemon_wake"),
        growth("pgmigrate_success"),
    );
    if isolated > 0 || stalls > 0 {
        notes.push(format!(
            "the host compacted memory during the trace (/proc/vmstat: \
             compact_isolated +{isolated}, compact_stall +{stalls}, \
             compact_daemon_wake +{woken}, pgmigrate_success +{migrated}); \
             pageframe does not compact, and \
             pages compaction moved have no allocation event: expect more \
             failed allocations, frees of unknown blocks and smaller free \
             blocks at the end than the kernel's"
        ));
    }
    let (kswapd, direct) = (growth("pgsteal_kswapd"), growth("pgsteal_direct"));
    if kswapd > 0 || direct > 0 {
        notes.push(format!(
            "the host reclaimed pages during the trace (/proc/vmstat: \
             pgsteal_kswapd +{kswapd}, pgsteal_direct +{direct}); the replay \
             frees them where the trace does (blocks from before the trace \
             are held by stand-ins), but its page allocator starts no \
             reclaim of its own"
        ));
    }
    notes
}

/// Why the pageblock counts differ when they do: the kernel's
/// /proc/pagetypeinfo counts the pageblocks of its present memory,
/// memblock reservations (the memmap, the kernel image, firmware tables)
/// included. A replay machine shaped from the trace's zoneinfo has them
/// too (reserved); one of the host's managed memory, which a replay boots
/// when the saved pagetypeinfo does not count the pageblocks of the present
/// pages (a guest whose balloon took memory) or there is no zoneinfo,
/// counts fewer.
fn reserved_memory_note(trace: &Trace, report: &ReplayReport) -> Option<String> {
    let (kernel, ours) = section_totals(&report.rows, "pageblocks");
    if kernel <= ours {
        return None;
    }
    let zones = host::parse_zoneinfo(&host::host_file(trace, host::Moment::End, "zoneinfo")?);
    let sum = |key| {
        zones
            .iter()
            .filter_map(|zone| zone.field(key))
            .fold(0u64, u64::saturating_add)
    };
    let (present, managed) = (sum("present"), sum("managed"));
    Some(format!(
        "the kernel's pageblock counts ({kernel} in all) cover its present memory, \
         {present} pages, of which {} are not managed (reserved at boot: the memmap, \
         the kernel image, firmware; or taken by a balloon or virtio-mem in a guest) \
         and never free; this machine's ({ours}) cover the host's managed memory",
        present.saturating_sub(managed)
    ))
}

/// The trace shipped with the repository (recorded on a 2-CPU machine).
pub fn shipped_trace_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../traces/kernel-untar-build.pftrace")
}

/// `trace` replayed under each of `policies` on a host-shaped machine with
/// `samples` fragmentation samples: each policy's name and report, in the
/// policies' order.
pub fn replay_policies(
    trace: &Trace,
    seed: u64,
    samples: usize,
    policies: &[ReplayPolicy],
) -> Result<Vec<(String, ReplayReport)>, TraceError> {
    policies
        .iter()
        .map(|policy| {
            let options = ReplayOptions {
                cmdline: policy.cmdline.clone(),
                alloc: policy.alloc,
                seed,
                samples,
                ..ReplayOptions::default()
            };
            Ok((policy.name.clone(), run_replay(trace, &options)?))
        })
        .collect()
}

/// The shipped trace replayed under the kernel's policy and with shuffle
/// ([`replay_policies`]); each row's key starts with the policy's name.
pub fn run_experiment(seed: u64) -> Result<Vec<ReplayRow>, TraceError> {
    let trace = import(&shipped_trace_path())?;
    let samples = ReplayOptions::default().samples;
    let policies = [
        ReplayPolicy::kernel(),
        ReplayPolicy::with_switches(
            true,
            pageframe::FallbackOrder::Kernel,
            pageframe::PcpSizing::KERNEL,
        ),
    ];
    let mut rows = Vec::new();
    for (policy, report) in replay_policies(&trace, seed, samples, &policies)? {
        for mut row in report.rows {
            row.key = format!("{policy}: {}", row.key);
            rows.push(row);
        }
    }
    Ok(rows)
}
