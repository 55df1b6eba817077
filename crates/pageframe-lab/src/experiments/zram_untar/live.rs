//! The live runs of `zram-untar` (root): the series' workload on the
//! kernel's own ext4. [`record`] (`--fs ext4`) runs it on a pageframe zram
//! served as a block device (zsmalloc chain 8, lz4; its block trace
//! recorded), either alone (one untar, the document's conditions) or at
//! the same time on a real /dev/zram beside it (lz4; this kernel's
//! zsmalloc), whose mm_stat is then written into the trace at every step. [`kernel_runs`] (`kernel_runs`) runs it on a fresh real
//! /dev/zram several times, for the kernel's band: each run beside a fresh
//! served device (as a recording with a kernel beside), or alone. Per round: `tar x`
//! of the tarball, then `rm -r` of each removed directory, a `sync` after
//! each and a wait until the devices are quiet (ext4's discards trail the
//! commit).
//!
//! Owns: the mounts, the real zram devices and the served device, all
//! given back on return, on error and on Ctrl-C (guards drop in reverse
//! order: unmount, reset and remove the zram, detach the loop, unmount FUSE).

use super::band::KernelStep;
use super::replay::kernel_ratio;
use super::REMOVED;
use crate::corpus::{self, Sampling};
use crate::experiments::ExperimentError;
use crate::ext4_mount::Ext4Mount;
use crate::signals::SignalFlag;
use crate::zram_serve::block_trace::{TraceRecord, TraceWriter};
use crate::zram_serve::real_zram::RealZram;
use crate::zram_serve::trace_sizes::TraceSizes;
use crate::zram_serve::{self, DeviceConfig, LoopIo, ServeConfig, ZramServer, TRACE_LEVEL};
use pageframe::zram::{Backend, Compressor, MmStat};
use std::io::{Read, Write};
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// What the live run needs.
pub struct LiveOptions {
    /// The kernel .tar.xz, for notes.
    pub tarball: PathBuf,
    /// Rounds of untar and removals.
    pub rounds: u32,
    /// Where the block trace goes.
    pub trace: PathBuf,
    /// Size of each device.
    pub disk_bytes: u64,
    /// Whether a real /dev/zram receives the same workload at the same
    /// time (two untars at once); without it the served device runs alone
    /// and the trace's steps carry no kernel figures.
    pub kernel_beside: bool,
    /// Threads for the trace sizes of the tarball's pages, computed before
    /// the recording.
    pub threads: NonZeroUsize,
}

/// What a recording gave besides its trace file.
pub struct Recording {
    /// The served device's own mm_stat at every step (the replay of chain
    /// 8 with lz4 must give the same).
    pub served: Vec<MmStat>,
    /// How the trace's sizes were made, for the report's notes.
    pub note: String,
}

fn failed(what: impl std::fmt::Display) -> ExperimentError {
    ExperimentError::Failed(what.to_string())
}

/// `tar x` of `tar` into each directory at once.
fn untar(tar: &[u8], dirs: &[&Path]) -> Result<(), ExperimentError> {
    std::thread::scope(|scope| {
        let workers: Vec<_> = dirs
            .iter()
            .map(|dir| {
                scope.spawn(move || -> Result<(), String> {
                    let mut child = Command::new("tar")
                        .args(["-x", "-C"])
                        .arg(dir)
                        .stdin(Stdio::piped())
                        .stderr(Stdio::piped())
                        .spawn()
                        .map_err(|err| format!("tar: {err}"))?;
                    let written = child.stdin.take().map(|mut stdin| stdin.write_all(tar));
                    let output = child.wait_with_output().map_err(|err| err.to_string())?;
                    if !output.status.success() || !matches!(written, Some(Ok(()))) {
                        return Err(format!(
                            "tar -x -C {}: {}",
                            dir.display(),
                            String::from_utf8_lossy(&output.stderr).trim()
                        ));
                    }
                    Ok(())
                })
            })
            .collect();
        for worker in workers {
            worker
                .join()
                .map_err(|_| failed("a tar thread panicked"))?
                .map_err(failed)?;
        }
        Ok(())
    })
}

/// `rm -r <top>/<dir>` under each mount, for every top-level directory.
fn remove(dirs: &[&Path], removed: &str) -> Result<(), ExperimentError> {
    for dir in dirs {
        let tops =
            std::fs::read_dir(dir).map_err(|err| failed(format!("{}: {err}", dir.display())))?;
        for top in tops.flatten() {
            let target = top.path().join(removed);
            if target.is_dir() {
                std::fs::remove_dir_all(&target)
                    .map_err(|err| failed(format!("{}: {err}", target.display())))?;
            }
        }
    }
    Ok(())
}

fn sync() {
    // SAFETY: sync() has no preconditions.
    unsafe { libc::sync() };
}

/// The I/O counters of a block device (/sys/block/NAME/stat: reads,
/// writes, in flight, discards …).
fn block_stat(device: &Path) -> Vec<u64> {
    let name = device.file_name().unwrap_or_default();
    std::fs::read_to_string(Path::new("/sys/block").join(name).join("stat"))
        .unwrap_or_default()
        .split_whitespace()
        .map(|field| field.parse().unwrap_or(0))
        .collect()
}

/// `sync`, then waits until the devices are quiet: ext4 issues the
/// discards of a commit from a work item after the commit
/// (ext4_process_freed_data() queues s_discard_work), so they trail `sync`,
/// and zram counts no discard in its block statistics. Quiet: nothing in
/// flight, and neither the block counters nor the stored sizes (`orig` of
/// each device, from `stored`) moved for three seconds (at most two
/// minutes, or until Ctrl-C). No further `sync` while waiting: each would
/// commit again.
fn settle(devices: &[&Path], stored: impl Fn() -> Vec<u64>, signals: &SignalFlag) {
    const IN_FLIGHT: usize = 8;
    const QUIET_SECONDS: u32 = 3;
    sync();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let mut last = (Vec::new(), Vec::new());
    let mut quiet = 0;
    loop {
        let now: (Vec<Vec<u64>>, Vec<u64>) = (
            devices.iter().map(|device| block_stat(device)).collect(),
            stored(),
        );
        let idle = now
            .0
            .iter()
            .all(|stat| stat.get(IN_FLIGHT).copied().unwrap_or(0) == 0);
        quiet = if idle && now == last { quiet + 1 } else { 0 };
        if quiet >= QUIET_SECONDS || signals.raised() || std::time::Instant::now() >= deadline {
            return;
        }
        last = now;
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
}

/// The tarball at `path`, decompressed (the runs feed it to `tar x`).
pub fn load_tarball(path: &Path) -> Result<Vec<u8>, ExperimentError> {
    let mut tar = Vec::new();
    crate::files::open_input(path)
        .map(|file| xz2::read::XzDecoder::new(std::io::BufReader::new(file)))
        .and_then(|mut reader| reader.read_to_end(&mut tar))
        .map_err(|err| failed(format!("{}: {err}", path.display())))?;
    Ok(tar)
}

/// Pages of file data in the tarball `tar` (each file rounded up to whole
/// 4 KiB pages): what one untar round writes, besides ext4's own blocks.
pub fn data_pages(tar: &[u8]) -> Result<u64, ExperimentError> {
    let mut pages = 0u64;
    let mut archive = tar::Archive::new(tar);
    let entries = archive
        .entries()
        .map_err(|err| failed(format!("the tarball: {err}")))?;
    for entry in entries {
        let entry = entry.map_err(|err| failed(format!("the tarball: {err}")))?;
        if entry.header().entry_type().is_file() {
            pages = pages.saturating_add(entry.size().div_ceil(4096));
        }
    }
    Ok(pages)
}

/// The series' steps on the mounts `dirs`, `rounds` times: after each
/// step `after(round, label)` (which settles and reads the devices).
/// Stops with an error on Ctrl-C.
fn run_series(
    tar: &[u8],
    dirs: &[&Path],
    rounds: u32,
    signals: &SignalFlag,
    mut after: impl FnMut(u32, String) -> Result<(), ExperimentError>,
) -> Result<(), ExperimentError> {
    for round in 1..=rounds {
        let steps = std::iter::once(None).chain(REMOVED.iter().map(Some));
        for removed in steps {
            if signals.raised() {
                return Err(failed("interrupted"));
            }
            let label = match removed {
                None => {
                    untar(tar, dirs)?;
                    "untar".to_string()
                }
                Some(dir) => {
                    remove(dirs, dir)?;
                    format!("rm {dir}")
                }
            };
            after(round, label)?;
        }
    }
    Ok(())
}

/// A scratch directory, removed (when empty) on drop: declared before
/// the mounts in it, so it goes after them.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        Scratch(std::env::temp_dir().join(format!("{name}-{}", std::process::id())))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// A served pageframe zram as the live runs use it: zsmalloc chain 8, lz4,
/// direct I/O, FUSE on `mountpoint`.
fn serve(disk_bytes: u64, mountpoint: PathBuf) -> Result<ZramServer, ExperimentError> {
    ZramServer::start(ServeConfig {
        device: DeviceConfig {
            backend: Backend::Zsmalloc { chain_size: 8 },
            compressor: Compressor::Lz4,
            disk_bytes,
            memory_bytes: 0,
        },
        mountpoint,
        io: LoopIo::Direct,
        // One FUSE thread: each request's pages are stored in order, as
        // zram stores a bio's pages one after the other in the submitter's
        // context (zram_bio_write()). With two, the pages of two requests
        // of one writeback interleave page by page, which real zram does
        // not see.
        threads: 1,
    })
    .map_err(failed)
}

/// The trace sizes of every page of every regular file in `tar` (a file's
/// last page zero-padded, as the page cache writes it back), and how long
/// they took.
fn tarball_trace_sizes(
    tar: &[u8],
    threads: NonZeroUsize,
) -> Result<(TraceSizes, f64), ExperimentError> {
    let started = std::time::Instant::now();
    let corpus = corpus::from_tar(tar, "tarball", true, Sampling { one_in: 1 }, |_| {})
        .map_err(|err| failed(format!("the tarball's pages: {err}")))?;
    let table = TraceSizes::of_corpus(&corpus, threads).map_err(failed)?;
    Ok((table, started.elapsed().as_secs_f64()))
}

/// Runs the workload live and writes the trace; returns the served
/// device's own mm_stat at every step (the replay of chain 8 with lz4 must
/// give the same). The trace sizes of the tarball's pages are computed
/// first, so that the served device's write path only looks them up and
/// takes the kernel's writeback about as fast as a real zram (see
/// `zram_serve::trace_sizes`).
pub fn record(options: &LiveOptions, tar: &[u8]) -> Result<Recording, ExperimentError> {
    if let Some(reason) = zram_serve::unsupported_reason() {
        return Err(failed(format!(
            "--fs ext4 runs the workload for real: {reason}"
        )));
    }
    let (table, table_seconds) = tarball_trace_sizes(tar, options.threads)?;
    let table_pages = table.len();
    let signals = SignalFlag::install();
    let scratch = Scratch::new("pageframe-zram-untar");
    let server = serve(options.disk_bytes, scratch.0.join("fuse"))?;
    if server.device().use_trace_sizes(table).is_err() {
        return Err(failed("the served device already had trace sizes"));
    }
    let real = match options.kernel_beside {
        true => Some(RealZram::create(options.disk_bytes, "lz4").map_err(failed)?),
        false => None,
    };
    let writer = TraceWriter::create(&options.trace, TRACE_LEVEL)
        .map_err(|err| failed(format!("{}: {err}", options.trace.display())))?;
    server.device().set_trace(Some(writer));
    let ours = Ext4Mount::make(
        server.block_device(),
        scratch.0.join("pageframe"),
        &[],
        "discard",
    )
    .map_err(failed)?;
    let theirs = match &real {
        Some(real) => Some(
            Ext4Mount::make(&real.device(), scratch.0.join("kernel"), &[], "discard")
                .map_err(failed)?,
        ),
        None => None,
    };
    let dirs: Vec<&Path> = std::iter::once(&ours)
        .chain(&theirs)
        .map(|mount| mount.dir())
        .collect();
    let mut devices = vec![server.block_device().to_path_buf()];
    devices.extend(real.iter().map(RealZram::device));
    let devices: Vec<&Path> = devices.iter().map(PathBuf::as_path).collect();
    let mut served = Vec::new();
    run_series(tar, &dirs, options.rounds, &signals, |round, label| {
        settle(
            &devices,
            || {
                let mut stored = vec![server.device().mm_stat().orig_data_size];
                stored.extend(
                    real.iter()
                        .map(|real| real.mm_stat().map_or(0, |stat| stat.orig)),
                );
                stored
            },
            &signals,
        );
        let real = match &real {
            Some(real) => Some(real.mm_stat().map_err(failed)?),
            None => None,
        };
        let step = TraceRecord::Step { round, label, real };
        server
            .device()
            .trace_record(&step)
            .map_err(|err| failed(format!("{}: {err}", options.trace.display())))?;
        served.push(server.device().mm_stat());
        Ok(())
    })?;
    drop(ours);
    drop(theirs);
    drop(real);
    if let Some(writer) = server.device().set_trace(None) {
        let not_recorded = writer
            .finish()
            .map_err(|err| failed(format!("{}: {err}", options.trace.display())))?;
        if not_recorded > 0 {
            // The rounds check (rounds_that_fit) keeps a recording short of this.
            return Err(failed(format!(
                "{}: the trace filled up; {not_recorded} records were not written",
                options.trace.display()
            )));
        }
    }
    let (found, computed) = server
        .device()
        .trace_sizes()
        .map_or((0, 0), TraceSizes::found_and_computed);
    server.stop().map_err(failed)?;
    Ok(Recording {
        served,
        note: format!(
            "trace sizes: {found} page writes took theirs from the tarball's {table_pages} distinct pages (hashed and compressed with lz4, lzo and zstd in {table_seconds:.1} s before the recording), {computed} (ext4's metadata and journal) were compressed as they arrived; partial-page writes, patched under the device lock, are compressed there and not counted"
        ),
    })
}

/// One kernel run: how long it took and its overhead ratio at every step.
pub struct KernelRun {
    /// Wall-clock time of the run, mkfs to teardown.
    pub seconds: f64,
    /// The kernel's ratio after every step, in order.
    pub steps: Vec<KernelStep>,
}

/// Runs the workload `runs` times on a fresh real /dev/zram (lz4) of
/// `disk_bytes` with a fresh ext4 (`mount -o discard`), the same steps and
/// settling as [`record`] — `beside` a fresh served pageframe zram at the
/// same time as [`record`] runs it with a kernel beside (two
/// untars at once), or alone; the kernel's overhead ratio after every step
/// of every run. Each run's devices and mounts are gone before the next
/// starts, and on error or Ctrl-C.
pub fn kernel_runs(
    tar: &[u8],
    rounds: u32,
    disk_bytes: u64,
    runs: usize,
    beside: bool,
) -> Result<Vec<KernelRun>, ExperimentError> {
    let unsupported = if beside {
        zram_serve::unsupported_reason()
    } else {
        // SAFETY: geteuid() has no preconditions.
        (unsafe { libc::geteuid() } != 0).then(|| "not root".to_string())
    };
    if let Some(reason) = unsupported.or_else(|| {
        (!Path::new("/sys/class/zram-control").exists())
            .then(|| "no zram (/sys/class/zram-control)".to_string())
    }) {
        return Err(failed(format!(
            "kernel_runs runs the workload on real /dev/zram devices: {reason}"
        )));
    }
    let signals = SignalFlag::install();
    let mut done = Vec::with_capacity(runs);
    for run in 0..runs {
        let started = std::time::Instant::now();
        let scratch = Scratch::new(&format!("pageframe-zram-untar-kernel-{run}"));
        let server = match beside {
            true => Some(serve(disk_bytes, scratch.0.join("fuse"))?),
            false => None,
        };
        let real = RealZram::create(disk_bytes, "lz4").map_err(failed)?;
        let ours = match &server {
            Some(server) => Some(
                Ext4Mount::make(
                    server.block_device(),
                    scratch.0.join("pageframe"),
                    &[],
                    "discard",
                )
                .map_err(failed)?,
            ),
            None => None,
        };
        let theirs = Ext4Mount::make(&real.device(), scratch.0.join("kernel"), &[], "discard")
            .map_err(failed)?;
        let dirs: Vec<&Path> = ours
            .iter()
            .chain(std::iter::once(&theirs))
            .map(|mount| mount.dir())
            .collect();
        let mut devices: Vec<PathBuf> = server
            .iter()
            .map(|server| server.block_device().to_path_buf())
            .collect();
        devices.push(real.device());
        let devices: Vec<&Path> = devices.iter().map(PathBuf::as_path).collect();
        let mut steps = Vec::new();
        run_series(tar, &dirs, rounds, &signals, |round, label| {
            settle(
                &devices,
                || {
                    let mut stored: Vec<u64> = server
                        .iter()
                        .map(|server| server.device().mm_stat().orig_data_size)
                        .collect();
                    stored.push(real.mm_stat().map_or(0, |stat| stat.orig));
                    stored
                },
                &signals,
            );
            let stat = real.mm_stat().map_err(failed)?;
            steps.push(KernelStep {
                round,
                label,
                ratio: kernel_ratio(&stat),
            });
            Ok(())
        })?;
        drop(theirs);
        drop(ours);
        drop(real);
        if let Some(server) = server {
            server.stop().map_err(failed)?;
        }
        done.push(KernelRun {
            seconds: started.elapsed().as_secs_f64(),
            steps,
        });
    }
    Ok(done)
}
