//! `zram bench`: how fast the kernel's 4 KiB writes reach a served device,
//! beside the two devices that bound it. Each point is a fresh device of
//! exactly the bytes written, `writers` threads each writing its own
//! contiguous share of it with synchronous 4 KiB `pwrite`s opened
//! `O_DIRECT` (so `writers` requests are in flight at once: 1 is a single
//! synchronous stream, queue depth 1), timed from the first write to the
//! last thread's end; the result is bytes / time in MB/s (10^6 bytes).
//! The devices: the served pageframe zram (FUSE behind a direct-I/O loop
//! device, [`ZramServer`]); a direct-I/O loop device over a tmpfs file (the
//! loop driver's own round trip, no FUSE); and a real /dev/zram (lz4). The
//! pages written are the first bytes of the kernel tarball's tar stream
//! (real text, some same-filled pages), or, when no tarball was named and
//! the default one is not installed, deterministic text-like pages,
//! labelled as such. A tarball named but unreadable is an error.
//!
//! Owns: one device at a time (served device, loop device and its tmpfs
//! file, or real zram), given back after its point, on error and on
//! Ctrl-C (SIGINT and SIGTERM end the run after the current point).

use super::real_zram::RealZram;
use super::{io_error, say, DeviceConfig, LoopDevice, LoopIo, ServeConfig, ServeError, ZramServer};
use crate::signals::SignalFlag;
use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Instant;

const PAGE: usize = 4096;

/// What to measure.
#[derive(Clone, Debug)]
pub struct BenchConfig {
    /// The served device (its `disk_bytes` is the bytes written per point).
    pub device: DeviceConfig,
    /// FUSE session threads of the served device.
    pub fuse_threads: usize,
    /// Writes in flight of each point, in order.
    pub writers: Vec<usize>,
    /// The kernel tarball whose tar stream gives the pages; `None`: the
    /// default one ([`crate::corpus::DEFAULT_TARBALL`]) if it is readable,
    /// else text-like pages.
    pub tarball: Option<PathBuf>,
}

/// Refuses a bench of `disk_bytes` per point that the host cannot hold:
/// the pages written are held whole beside one device's copy of them (the
/// tmpfs file of the loop point; the zram pools hold less). `available` is
/// the host's `MemAvailable` (`None`: the host does not say, nothing is
/// refused). Checked before anything is reserved: a reservation a little
/// under the host's memory succeeds (overcommit) and is then filled until
/// the OOM killer comes.
pub fn check_host_memory(disk_bytes: u64, available: Option<u64>) -> Result<(), String> {
    let Some(available) = available else {
        return Ok(());
    };
    if disk_bytes
        .checked_mul(2)
        .is_some_and(|need| need <= available)
    {
        return Ok(());
    }
    Err(format!(
        "the bench holds the pages it writes and a device's copy of them (2 x {}), more than the host's MemAvailable of {}",
        pageframe::machine::format_size(disk_bytes),
        crate::host_memory::gib(available)
    ))
}

/// The pages written: `bytes` of the tarball's tar stream, or text-like
/// pages when no tarball was named and the default one cannot give them;
/// with a label. A named tarball that cannot is the error.
pub(super) fn pages(named: Option<&Path>, bytes: usize) -> Result<(Vec<u8>, String), ServeError> {
    let tarball = named.unwrap_or(Path::new(crate::corpus::DEFAULT_TARBALL));
    // The bytes are held whole: a size past memory is an error, not an abort.
    let mut data = Vec::new();
    data.try_reserve_exact(bytes).map_err(|_| ServeError::Io {
        what: format!("holding the {} MiB to write", bytes >> 20),
        err: std::io::ErrorKind::OutOfMemory.into(),
    })?;
    let read = crate::files::open_input(tarball).and_then(|file| {
        xz2::read::XzDecoder::new(std::io::BufReader::new(file))
            .take(bytes as u64)
            .read_to_end(&mut data)
    });
    match (read, named) {
        (Ok(len), _) if len == bytes => {
            let label = format!(
                "the first {} MiB of {}'s tar stream",
                bytes >> 20,
                tarball.display()
            );
            return Ok((data, label));
        }
        (Ok(len), Some(_)) => {
            return Err(ServeError::Io {
                what: format!("reading {}", tarball.display()),
                err: std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!("its tar stream has {len} bytes, fewer than the {bytes} to write"),
                ),
            })
        }
        (Err(err), Some(_)) => return Err(io_error(format!("reading {}", tarball.display()))(err)),
        (_, None) => {}
    }
    data.clear();
    let mut line = 0u64;
    while data.len() < bytes {
        data.extend_from_slice(format!("line {line} value {}\n", line * 7919 % 65_521).as_bytes());
        line += 1;
    }
    data.truncate(bytes);
    let label = format!(
        "NOT THE TARBALL ({} unreadable): {} MiB of text-like lines",
        tarball.display(),
        bytes >> 20
    );
    Ok((data, label))
}

/// Writes `data` (whole pages) to `device` from `writers` threads, each its
/// own contiguous share, 4 KiB `O_DIRECT` writes; MB/s.
fn write_rate(device: &Path, data: &[u8], writers: usize) -> Result<f64, ServeError> {
    let nr_pages = data.len() / PAGE;
    let share = nr_pages.div_ceil(writers.max(1));
    let files = (0..writers)
        .map(|_| {
            OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_DIRECT)
                .open(device)
                .map_err(io_error(format!("opening {}", device.display())))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let started = Instant::now();
    let results: Vec<std::io::Result<()>> = std::thread::scope(|scope| {
        let workers: Vec<_> = files
            .iter()
            .enumerate()
            .map(|(writer, file)| {
                scope.spawn(move || -> std::io::Result<()> {
                    // O_DIRECT wants an aligned buffer: the aligned page of
                    // a two-page vector.
                    let mut buffer = vec![0u8; 2 * PAGE];
                    let start = buffer.as_ptr().align_offset(PAGE);
                    let end = ((writer + 1) * share).min(nr_pages);
                    for page in writer * share..end {
                        let aligned = &mut buffer[start..start + PAGE];
                        aligned.copy_from_slice(&data[page * PAGE..(page + 1) * PAGE]);
                        file.write_all_at(aligned, (page * PAGE) as u64)?;
                    }
                    Ok(())
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|worker| {
                worker
                    .join()
                    .unwrap_or_else(|_| Err(std::io::Error::other("a writer panicked")))
            })
            .collect()
    });
    let seconds = started.elapsed().as_secs_f64();
    for result in results {
        result.map_err(io_error(format!("writing {}", device.display())))?;
    }
    Ok(data.len() as f64 / seconds.max(1e-9) / 1e6)
}

/// A file in tmpfs, removed on drop.
struct TmpfsFile(PathBuf);

impl Drop for TmpfsFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The devices measured.
#[derive(Clone, Copy)]
enum Measured {
    Served,
    LoopOverTmpfs,
    RealZram,
}

impl Measured {
    /// In the order printed.
    const ALL: [Measured; 3] = [
        Measured::Served,
        Measured::LoopOverTmpfs,
        Measured::RealZram,
    ];

    fn name(self, config: &BenchConfig) -> String {
        match self {
            Measured::Served => format!(
                "served pageframe zram ({}, {}, {} FUSE thread{})",
                config.device.backend.label(),
                config.device.compressor.name(),
                config.fuse_threads,
                if config.fuse_threads == 1 { "" } else { "s" }
            ),
            Measured::LoopOverTmpfs => "loop (direct I/O) over a tmpfs file".into(),
            Measured::RealZram => "real /dev/zram (lz4)".into(),
        }
    }
}

/// One point: a fresh device of the kind `measured`, `data` written with
/// `writers` in flight.
fn point(
    config: &BenchConfig,
    measured: Measured,
    data: &[u8],
    writers: usize,
) -> Result<f64, ServeError> {
    let bytes = data.len() as u64;
    let tag = format!("pageframe-zram-bench-{}", std::process::id());
    match measured {
        Measured::Served => {
            let server = ZramServer::start(ServeConfig {
                device: DeviceConfig {
                    disk_bytes: bytes,
                    ..config.device
                },
                mountpoint: std::env::temp_dir().join(&tag),
                io: LoopIo::Direct,
                threads: config.fuse_threads,
            })?;
            let rate = write_rate(server.block_device(), data, writers)?;
            server.stop()?;
            Ok(rate)
        }
        Measured::LoopOverTmpfs => {
            let file = TmpfsFile(Path::new("/dev/shm").join(&tag));
            OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&file.0)
                .and_then(|handle| handle.set_len(bytes))
                .map_err(io_error(format!("creating {}", file.0.display())))?;
            let loop_dev = LoopDevice::attach(&file.0, PAGE as u32, LoopIo::Direct).map_err(
                io_error(format!("attaching a loop device to {}", file.0.display())),
            )?;
            write_rate(loop_dev.path(), data, writers)
        }
        Measured::RealZram => {
            let zram = RealZram::create(bytes, "lz4").map_err(ServeError::RealZram)?;
            write_rate(&zram.device(), data, writers)
        }
    }
}

/// The load average (1 minute) now.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|text| text.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

/// Measures every device at every `writers` count and prints a table
/// (MB/s) to `out`, with what was written and the load average before and
/// after.
pub fn bench(config: &BenchConfig, out: &mut dyn Write) -> Result<(), ServeError> {
    if let Some(reason) = super::unsupported_reason() {
        return Err(ServeError::Unsupported(reason));
    }
    let signals = SignalFlag::install();
    let bytes = usize::try_from(config.device.disk_bytes)
        .map_err(|_| ServeError::Unsupported("the size does not fit in memory".into()))?;
    let (data, label) = pages(config.tarball.as_deref(), bytes)?;
    say(
        out,
        format!(
            "4 KiB O_DIRECT writes, {label}, a fresh device per point; MB/s; load average {} at the start",
            load_average()
        ),
    )?;
    let header: Vec<String> = config
        .writers
        .iter()
        .map(|writers| format!("{writers} in flight"))
        .collect();
    say(out, format!("| device | {} |", header.join(" | ")))?;
    say(out, format!("|---|{}", "---:|".repeat(header.len())))?;
    for measured in Measured::ALL {
        let mut cells = Vec::new();
        for writers in &config.writers {
            if signals.raised() {
                return Err(ServeError::Interrupted);
            }
            cells.push(format!("{:.0}", point(config, measured, &data, *writers)?));
        }
        say(
            out,
            format!("| {} | {} |", measured.name(config), cells.join(" | ")),
        )?;
    }
    say(out, format!("load average {} at the end", load_average()))
}
