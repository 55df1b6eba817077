//! Live recording from tracefs: a private tracefs instance (the global
//! buffer is neither needed nor disturbed), the six kmem events and the
//! vmstat worker's runs (`workqueue_execute_start` of `vmstat_update`) enabled,
//! every CPU's `trace_pipe_raw` drained without loss while a command runs
//! (or for a duration), and the host's state saved at start and end.
//!
//! The instance is removed when [`InstanceGuard`] drops: on success, on
//! error, and on Ctrl-C (SIGINT and SIGTERM only raise a flag while
//! recording, so the loop ends and the guard runs). Lost events are counted
//! from the sub-buffers' missed-events flags and each CPU's `stats` file.
//! Signal handling is per process: run one recording at a time.

use super::event::{EventKind, Trace, TraceEvent, VMSTAT_WORKER_KEY, VMSTAT_WORKER_TRACED};
use super::host::{count_cpu_list, snapshot_into, Moment};
use super::tracefs::{EventFormat, RecordDecoder};
use super::{TraceError, MAX_TRACE_EVENTS};
use crate::signals::SignalFlag;
use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// The tracefs mount point.
pub const TRACEFS: &str = "/sys/kernel/tracing";

/// What to record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecordTarget {
    /// Run this command (program and arguments) and trace until it exits.
    Command(Vec<String>),
    /// Trace the whole machine for this long.
    Duration(Duration),
}

/// Recording options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordOptions {
    /// What to trace.
    pub target: RecordTarget,
    /// Per-CPU ring buffer size in KiB (`buffer_size_kb`).
    pub buffer_kb_per_cpu: u64,
    /// Keep at most this many events (the earliest, after merging the CPUs
    /// by time); later ones are counted in the `events_over_cap` metadata.
    /// `None` keeps all up to [`MAX_TRACE_EVENTS`], where the recording
    /// stops.
    pub max_events: Option<usize>,
}

impl RecordOptions {
    /// Defaults: 16 MiB per CPU, no cap.
    pub fn new(target: RecordTarget) -> RecordOptions {
        RecordOptions {
            target,
            buffer_kb_per_cpu: 16 * 1024,
            max_events: None,
        }
    }
}

/// Why recording cannot run here, when it cannot (not root, no tracefs).
pub fn unavailable_reason() -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let uid = status
        .lines()
        .find_map(|line| line.strip_prefix("Uid:"))
        .and_then(|rest| rest.split_whitespace().nth(1).map(str::to_string));
    if uid.as_deref() != Some("0") {
        return Some("recording needs root (tracefs instances)".to_string());
    }
    if !Path::new(TRACEFS).join("instances").is_dir() {
        let mounted = Command::new("mount")
            .args(["-t", "tracefs", "nodev", TRACEFS])
            .status()
            .map(|status| status.success())
            .unwrap_or(false);
        if !mounted || !Path::new(TRACEFS).join("instances").is_dir() {
            return Some(format!("tracefs is not available at {TRACEFS}"));
        }
    }
    None
}

/// A tracefs instance that is removed (tracing off, then rmdir) when dropped.
pub struct InstanceGuard {
    path: PathBuf,
}

impl InstanceGuard {
    /// Creates `instances/pageframe-<pid>-<n>`, first removing instances
    /// that earlier recordings left behind (their process is gone).
    pub fn create() -> Result<InstanceGuard, TraceError> {
        let instances = Path::new(TRACEFS).join("instances");
        if let Ok(entries) = std::fs::read_dir(&instances) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().to_string();
                if let Some(rest) = name.strip_prefix("pageframe-") {
                    let pid = rest.split('-').next().unwrap_or(rest);
                    if !Path::new("/proc").join(pid).exists() {
                        let _ = std::fs::remove_dir(entry.path());
                    }
                }
            }
        }
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let serial = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = instances.join(format!("pageframe-{}-{serial}", std::process::id()));
        std::fs::create_dir(&path).map_err(|err| TraceError::io(&path, err))?;
        Ok(InstanceGuard { path })
    }

    /// The instance directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn write(&self, file: &str, value: &str) -> Result<(), TraceError> {
        let path = self.path.join(file);
        std::fs::write(&path, value).map_err(|err| TraceError::io(&path, err))
    }

    fn read(&self, file: &str) -> Result<String, TraceError> {
        let path = self.path.join(file);
        std::fs::read_to_string(&path).map_err(|err| TraceError::io(&path, err))
    }
}

impl Drop for InstanceGuard {
    fn drop(&mut self) {
        let _ = std::fs::write(self.path.join("tracing_on"), "0");
        let _ = std::fs::remove_dir(&self.path);
    }
}

/// One CPU's raw pipe.
struct CpuPipe {
    cpu: u16,
    file: File,
}

/// Events collected so far and what was lost.
struct Collector {
    decoder: RecordDecoder,
    events: Vec<TraceEvent>,
    missed: u64,
    missed_unknown: u64,
    subbuffer: Vec<u8>,
}

impl Collector {
    /// Reads every whole sub-buffer a CPU has ready; returns how many.
    fn drain(&mut self, pipe: &mut CpuPipe) -> Result<usize, TraceError> {
        let mut pages = 0;
        loop {
            match pipe.file.read(&mut self.subbuffer) {
                Ok(0) => return Ok(pages),
                Ok(len) => {
                    pages += 1;
                    let missed = self.decoder.decode_subbuffer(
                        &self.subbuffer[..len],
                        pipe.cpu,
                        &mut self.events,
                    )?;
                    match missed {
                        0 => {}
                        u64::MAX => self.missed_unknown += 1,
                        count => self.missed += count,
                    }
                }
                Err(err) if err.kind() == ErrorKind::WouldBlock => return Ok(pages),
                Err(err) if err.kind() == ErrorKind::Interrupted => continue,
                Err(err) => {
                    return Err(TraceError::Tracefs(format!(
                        "reading cpu{} trace_pipe_raw: {err}",
                        pipe.cpu
                    )))
                }
            }
        }
    }
}

/// Sums a counter (`overrun:`, `dropped events:`) over the CPUs' stats files.
fn stats_total(instance: &InstanceGuard, cpus: &[u16], key: &str) -> u64 {
    cpus.iter()
        .filter_map(|cpu| instance.read(&format!("per_cpu/cpu{cpu}/stats")).ok())
        .filter_map(|text| {
            text.lines()
                .find_map(|line| line.strip_prefix(key))
                .and_then(|value| value.trim().parse::<u64>().ok())
        })
        .sum()
}

/// An event's directory in the instance.
fn event_dir(kind: EventKind) -> String {
    format!("events/{}/{}", kind.system(), kind.tracepoint())
}

/// Enables the vmstat worker's runs: `workqueue_execute_start` filtered in
/// the kernel to the work function `vmstat_update`, by name where the
/// kernel's filters take the `.function` modifier, else by its address in
/// /proc/kallsyms. Every record it then yields is one run of the worker on
/// its CPU. On failure the event is left off and the reason returned: the
/// recording goes on without it (a replay then decays by the clock).
fn enable_vmstat_worker(instance: &InstanceGuard) -> Result<EventFormat, String> {
    let dir = event_dir(EventKind::VmstatWork);
    let format = instance
        .read(&format!("{dir}/format"))
        .and_then(|text| EventFormat::parse(EventKind::VmstatWork, &text))
        .map_err(|err| err.to_string())?;
    let filter = format!("{dir}/filter");
    if instance
        .write(&filter, "function.function == vmstat_update")
        .is_err()
    {
        let address = vmstat_update_address().ok_or(
            "the kernel's filters lack `.function` and /proc/kallsyms has no vmstat_update",
        )?;
        instance
            .write(&filter, &format!("function == {address:#x}"))
            .map_err(|err| err.to_string())?;
    }
    instance
        .write(&format!("{dir}/enable"), "1")
        .map_err(|err| err.to_string())?;
    Ok(format)
}

/// `vmstat_update`'s address from /proc/kallsyms (0 when hidden from us).
fn vmstat_update_address() -> Option<u64> {
    let symbols = std::fs::read_to_string("/proc/kallsyms").ok()?;
    symbols.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        let address = u64::from_str_radix(words.next()?, 16).ok()?;
        let _kind = words.next()?;
        (words.next()? == "vmstat_update" && address != 0).then_some(address)
    })
}

/// Records a trace as root. The instance is removed whatever happens.
pub fn record(options: &RecordOptions) -> Result<Trace, TraceError> {
    if let Some(reason) = unavailable_reason() {
        return Err(TraceError::Tracefs(reason));
    }
    let instance = InstanceGuard::create()?;
    instance.write("tracing_on", "0")?;
    instance.write("buffer_size_kb", &options.buffer_kb_per_cpu.to_string())?;
    instance.write("options/overwrite", "0")?;
    instance.write("trace_clock", "mono")?;
    let mut formats = Vec::new();
    for kind in EventKind::ALL
        .into_iter()
        .filter(|kind| kind.system() == "kmem")
    {
        let dir = event_dir(kind);
        formats.push(EventFormat::parse(
            kind,
            &instance.read(&format!("{dir}/format"))?,
        )?);
        instance.write(&format!("{dir}/enable"), "1")?;
    }
    let vmstat_worker = match enable_vmstat_worker(&instance) {
        Ok(format) => {
            formats.push(format);
            VMSTAT_WORKER_TRACED.to_string()
        }
        Err(reason) => format!("not traced: {reason}"),
    };
    let subbuffer_bytes = instance
        .read("buffer_subbuf_size_kb")
        .ok()
        .and_then(|text| text.trim().parse::<usize>().ok())
        .unwrap_or(4)
        * 1024;
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    let mut pipes = Vec::new();
    for entry in std::fs::read_dir(instance.path().join("per_cpu"))
        .map_err(|err| TraceError::io(&instance.path().join("per_cpu"), err))?
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().to_string();
        let Some(cpu) = name.strip_prefix("cpu").and_then(|n| n.parse::<u16>().ok()) else {
            continue;
        };
        let path = entry.path().join("trace_pipe_raw");
        let file = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&path)
            .map_err(|err| TraceError::io(&path, err))?;
        pipes.push(CpuPipe { cpu, file });
    }
    pipes.sort_by_key(|pipe| pipe.cpu);
    let cpus: Vec<u16> = pipes.iter().map(|pipe| pipe.cpu).collect();

    let mut trace = Trace::default();
    trace.set_meta("source", "tracefs instance, per-CPU trace_pipe_raw");
    trace.set_meta(VMSTAT_WORKER_KEY, vmstat_worker);
    trace.set_meta(
        "cpus",
        count_cpu_list(&online).unwrap_or(pipes.len()).to_string(),
    );
    trace.set_meta(
        "command",
        match &options.target {
            RecordTarget::Command(argv) => argv.join(" "),
            RecordTarget::Duration(duration) => format!("whole machine for {duration:?}"),
        },
    );
    let mut collector = Collector {
        decoder: RecordDecoder::new(&formats)?,
        events: Vec::new(),
        missed: 0,
        missed_unknown: 0,
        subbuffer: vec![0u8; subbuffer_bytes],
    };
    let signals = SignalFlag::install();
    snapshot_into(&mut trace, Moment::Start);
    instance.write("tracing_on", "1")?;
    let started = Instant::now();
    let mut child = match &options.target {
        RecordTarget::Command(argv) => {
            let (program, args) = argv
                .split_first()
                .ok_or_else(|| TraceError::Invalid("an empty command".to_string()))?;
            Some(
                Command::new(program)
                    .args(args)
                    .spawn()
                    .map_err(|err| TraceError::Invalid(format!("cannot run {program}: {err}")))?,
            )
        }
        RecordTarget::Duration(_) => None,
    };
    let mut exit_status = None;
    loop {
        let mut pages = 0;
        for pipe in &mut pipes {
            match collector.drain(pipe) {
                Ok(count) => pages += count,
                Err(err) => {
                    if let Some(child) = &mut child {
                        let _ = child.kill();
                        let _ = child.wait();
                    }
                    return Err(err);
                }
            }
        }
        // A trace holds at most MAX_TRACE_EVENTS: the recording ends there
        // (a command is still waited for below).
        let full = collector.events.len() >= MAX_TRACE_EVENTS;
        let done = full
            || match (&mut child, &options.target) {
                (Some(child), _) => {
                    exit_status = child
                        .try_wait()
                        .map_err(|err| TraceError::Invalid(err.to_string()))?;
                    exit_status.is_some()
                }
                (None, RecordTarget::Duration(duration)) => started.elapsed() >= *duration,
                (None, RecordTarget::Command(_)) => true,
            };
        if signals.raised() {
            if let Some(child) = &mut child {
                let _ = child.kill();
                let _ = child.wait();
            }
            return Err(TraceError::Invalid(
                "interrupted; nothing saved".to_string(),
            ));
        }
        if done {
            break;
        }
        if pages == 0 {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    instance.write("tracing_on", "0")?;
    for pipe in &mut pipes {
        while collector.drain(pipe)? > 0 {}
    }
    drop(signals);
    if let (Some(child), None) = (&mut child, exit_status) {
        exit_status = Some(
            child
                .wait()
                .map_err(|err| TraceError::Invalid(err.to_string()))?,
        );
    }
    snapshot_into(&mut trace, Moment::End);
    let dropped = stats_total(&instance, &cpus, "dropped events:");
    let overrun = stats_total(&instance, &cpus, "overrun:");
    trace.set_meta("elapsed_ns", started.elapsed().as_nanos().to_string());
    trace.set_meta(
        "lost_events",
        (collector.missed + dropped + overrun).to_string(),
    );
    trace.set_meta(
        "lost_subbuffers_uncounted",
        collector.missed_unknown.to_string(),
    );
    if let Some(status) = exit_status {
        trace.set_meta("command_status", status.to_string());
    }
    trace.events = collector.events;
    trace.normalize();
    let cap = options
        .max_events
        .unwrap_or(MAX_TRACE_EVENTS)
        .min(MAX_TRACE_EVENTS);
    if options.max_events.is_some() || trace.events.len() > cap {
        let over_cap = trace.events.len().saturating_sub(cap);
        trace.events.truncate(cap);
        trace.set_meta("event_cap", cap.to_string());
        trace.set_meta("events_over_cap", over_cap.to_string());
    }
    Ok(trace)
}
