//! `zram serve`: a pageframe zram exposed to the running kernel as a block
//! device. A FUSE file system serves one file, `disk`, whose reads, writes
//! and hole punches go to the zram's slots; a loop device over that file is
//! the block device (the loop driver turns discards into hole punches), on
//! which the kernel's own mkfs.ext4 and `mount -o discard` work. The file
//! system's `mm_stat` shows the device's figures while it runs.
//!
//! `throughput` measures how fast the kernel's 4 KiB writes reach it.
//!
//! Owns: the FUSE session (its threads), the loop device and the mount
//! directory, all given back on [`ZramServer::stop`] or drop: the loop
//! device is detached first, then the FUSE mount is unmounted and its
//! threads joined, then the directory removed. Needs root (mount, loop).

pub mod block_trace;
pub mod device;
mod fs;
pub mod kernel_replay;
mod loop_dev;
pub mod real_zram;
pub mod throughput;
pub mod trace_sizes;

pub use device::{Device, DeviceConfig, DeviceError};
pub use fs::{DISK_NAME, MM_STAT_NAME};
pub use loop_dev::{LoopDevice, LoopIo};

use crate::signals::SignalFlag;
use block_trace::TraceWriter;
use fuser::{BackgroundSession, Config, MountOption, SessionACL};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use trace_sizes::TraceSizes;

/// Why serving failed.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// Not root, or no FUSE or loop support.
    #[error("cannot serve a block device here: {0}")]
    Unsupported(String),
    /// The device could not be made.
    #[error(transparent)]
    Device(#[from] DeviceError),
    /// A real /dev/zram could not be set up.
    #[error("real zram: {0}")]
    RealZram(String),
    /// SIGINT or SIGTERM came.
    #[error("interrupted")]
    Interrupted,
    /// A system call failed.
    #[error("{what}: {err}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        err: std::io::Error,
    },
}

fn io_error(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> ServeError {
    let what = what.into();
    move |err| ServeError::Io { what, err }
}

/// How to serve.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    /// The device.
    pub device: DeviceConfig,
    /// Where to mount the FUSE file system: a directory, created (and then
    /// removed at teardown) if it does not exist; one that exists is left.
    pub mountpoint: PathBuf,
    /// How the loop device reaches the file.
    pub io: LoopIo,
    /// FUSE session threads.
    pub threads: usize,
}

/// Why this process cannot serve, if it cannot: not root, or no
/// `/dev/fuse` or `/dev/loop-control`.
pub fn unsupported_reason() -> Option<String> {
    // SAFETY: geteuid() has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root (mounting FUSE and attaching loop devices need root)".into());
    }
    ["/dev/fuse", "/dev/loop-control"]
        .iter()
        .find(|path| !Path::new(path).exists())
        .map(|path| format!("{path} is missing"))
}

/// A served device.
pub struct ZramServer {
    device: Arc<Device>,
    session: Option<BackgroundSession>,
    loop_dev: Option<LoopDevice>,
    loop_path: PathBuf,
    mountpoint: PathBuf,
    /// The mountpoint did not exist before `start` made it: teardown
    /// removes it.
    created_mountpoint: bool,
}

impl ZramServer {
    /// Builds the device, mounts the FUSE file system and attaches a loop
    /// device to its `disk`.
    pub fn start(config: ServeConfig) -> Result<ZramServer, ServeError> {
        if let Some(reason) = unsupported_reason() {
            return Err(ServeError::Unsupported(reason));
        }
        let device = Arc::new(Device::new(config.device)?);
        let created_mountpoint = !config.mountpoint.exists();
        std::fs::create_dir_all(&config.mountpoint).map_err(io_error(format!(
            "creating {}",
            config.mountpoint.display()
        )))?;
        let mut options = Config::default();
        options.mount_options = vec![
            MountOption::FSName("pageframe-zram".into()),
            MountOption::Subtype("pageframe".into()),
            MountOption::RW,
        ];
        options.acl = SessionACL::Owner;
        options.n_threads = Some(config.threads.max(1));
        options.clone_fd = config.threads > 1;
        let mut server = ZramServer {
            device: Arc::clone(&device),
            session: None,
            loop_dev: None,
            loop_path: PathBuf::new(),
            mountpoint: config.mountpoint.clone(),
            created_mountpoint,
        };
        let session = fuser::spawn_mount(
            fs::ZramFs::new(device, config.io == LoopIo::Buffered),
            &config.mountpoint,
            &options,
        )
        .map_err(io_error(format!(
            "mounting FUSE on {}",
            config.mountpoint.display()
        )))?;
        server.session = Some(session);
        let disk = config.mountpoint.join(DISK_NAME);
        let loop_dev = LoopDevice::attach(&disk, device::PAGE as u32, config.io).map_err(
            io_error(format!("attaching a loop device to {}", disk.display())),
        )?;
        server.loop_path = loop_dev.path().to_path_buf();
        let limits = loop_dev.present_as_zram();
        server.loop_dev = Some(loop_dev);
        limits.map_err(io_error(format!(
            "setting the queue limits of {}",
            server.loop_path.display()
        )))?;
        Ok(server)
    }

    /// The block device (`/dev/loopN`).
    pub fn block_device(&self) -> &Path {
        &self.loop_path
    }

    /// The FUSE mount (holding `disk` and `mm_stat`).
    pub fn mountpoint(&self) -> &Path {
        &self.mountpoint
    }

    /// The device.
    pub fn device(&self) -> &Arc<Device> {
        &self.device
    }

    /// Tears everything down, reporting the first failure.
    pub fn stop(mut self) -> Result<(), ServeError> {
        self.teardown()
    }

    fn teardown(&mut self) -> Result<(), ServeError> {
        let mut first_error = None;
        if let Some(loop_dev) = self.loop_dev.take() {
            drop(loop_dev);
            // The loop driver lets go of the file asynchronously.
            let name = self.loop_path.file_name().unwrap_or_default().to_owned();
            let backing = Path::new("/sys/block").join(name).join("loop/backing_file");
            let deadline = Instant::now() + Duration::from_secs(10);
            while backing.exists() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            if backing.exists() {
                first_error.get_or_insert(ServeError::Io {
                    what: format!("detaching {}", self.loop_path.display()),
                    err: std::io::Error::from_raw_os_error(libc::EBUSY),
                });
            }
        }
        if let Some(session) = self.session.take() {
            if let Err(err) = session.umount_and_join() {
                first_error.get_or_insert(ServeError::Io {
                    what: format!("unmounting {}", self.mountpoint.display()),
                    err,
                });
            }
        }
        if self.created_mountpoint {
            let _ = std::fs::remove_dir(&self.mountpoint);
        }
        first_error.map_or(Ok(()), Err)
    }
}

/// Serves until SIGINT or SIGTERM: says where the device is, then prints
/// the mm_stat line every `interval` when it changed (never when zero), and
/// writes the block trace to `trace` if given, its write records taking
/// their sizes from `trace_sizes` when given. Tears down before returning.
pub fn serve_until_signalled(
    config: ServeConfig,
    trace: Option<&Path>,
    trace_sizes: Option<TraceSizes>,
    interval: Duration,
    out: &mut dyn std::io::Write,
) -> Result<(), ServeError> {
    let signals = SignalFlag::install();
    let device = config.device;
    let server = ZramServer::start(config)?;
    if let Some(table) = trace_sizes {
        // A fresh device has no table yet.
        let _ = server.device().use_trace_sizes(table);
    }
    if let Some(path) = trace {
        let writer = TraceWriter::create(path, TRACE_LEVEL)
            .map_err(io_error(format!("creating {}", path.display())))?;
        server.device().set_trace(Some(writer));
    }
    say(
        out,
        format!(
            "pageframe zram ({}, {}, {} MiB) on {}; mm_stat in {}; Ctrl-C stops",
            device.backend.label(),
            device.compressor.name(),
            device.disk_bytes >> 20,
            server.block_device().display(),
            server.mountpoint().join(MM_STAT_NAME).display()
        ),
    )?;
    let mut last = None;
    // An interval past what the clock can add never comes, as 0 never does.
    let mut next = Instant::now()
        .checked_add(interval)
        .filter(|_| !interval.is_zero());
    while !signals.raised() {
        std::thread::sleep(Duration::from_millis(50));
        if next.is_some_and(|at| Instant::now() >= at) {
            next = next.and_then(|at| at.checked_add(interval));
            let stat = server.device().mm_stat();
            if last != Some(stat) {
                last = Some(stat);
                say(out, format!("mm_stat {}", stat.to_string().trim_end()))?;
            }
        }
    }
    let writer = server.device().set_trace(None);
    let stopped = server.stop();
    if let (Some(writer), Some(path)) = (writer, trace) {
        let not_recorded = writer
            .finish()
            .map_err(io_error(format!("writing {}", path.display())))?;
        if not_recorded > 0 {
            say(
                out,
                format!(
                    "{} is full: it ends where it reached the most a trace holds; {not_recorded} later records were not written",
                    path.display()
                ),
            )?;
        }
    }
    stopped?;
    say(out, "stopped: loop device detached, FUSE unmounted".into())
}

/// zstd level of block traces.
pub const TRACE_LEVEL: i32 = 9;

impl Drop for ZramServer {
    fn drop(&mut self) {
        let _ = self.teardown();
    }
}

/// Writes one line of a command's output and flushes it, so that a long
/// run shows each line as it comes.
pub(crate) fn say(out: &mut dyn std::io::Write, text: String) -> Result<(), ServeError> {
    writeln!(out, "{text}")
        .and_then(|()| out.flush())
        .map_err(io_error("writing output"))
}

#[cfg(test)]
mod tests;
