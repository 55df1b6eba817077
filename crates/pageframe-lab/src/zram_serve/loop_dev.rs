//! A loop device over a file: attach with `LOOP_CONFIGURE` (what
//! `losetup --direct-io --sector-size` does), detach with `LOOP_CLR_FD`.
//!
//! Owns: the open `/dev/loopN`. Invariant: while a [`LoopDevice`] lives the
//! device is bound to its file; dropping it detaches (the kernel finishes
//! the detach when the last opener, e.g. a mount, goes: the device is
//! attached with `LO_FLAGS_AUTOCLEAR`).
//!
//! The kernel's loop driver turns a discard (`REQ_OP_DISCARD`) into
//! `fallocate(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE)` on the file
//! (lo_fallocate() in drivers/block/loop.c), which is how a file system's
//! discards reach the file's server.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

const LOOP_CTL_GET_FREE: libc::c_ulong = 0x4C82;
const LOOP_CONFIGURE: libc::c_ulong = 0x4C0A;
const LOOP_CLR_FD: libc::c_ulong = 0x4C01;
const LO_FLAGS_AUTOCLEAR: u32 = 4;
const LO_FLAGS_DIRECT_IO: u32 = 16;

/// `struct loop_info64` (include/uapi/linux/loop.h).
#[repr(C)]
struct LoopInfo64 {
    lo_device: u64,
    lo_inode: u64,
    lo_rdevice: u64,
    lo_offset: u64,
    lo_sizelimit: u64,
    lo_number: u32,
    lo_encrypt_type: u32,
    lo_encrypt_key_size: u32,
    lo_flags: u32,
    lo_file_name: [u8; 64],
    lo_crypt_name: [u8; 64],
    lo_encrypt_key: [u8; 32],
    lo_init: [u64; 2],
}

/// `struct loop_config`.
#[repr(C)]
struct LoopConfig {
    fd: u32,
    block_size: u32,
    info: LoopInfo64,
    reserved: [u64; 8],
}

/// How the loop device reaches its file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoopIo {
    /// `LO_FLAGS_DIRECT_IO`: every request goes to the file as it comes
    /// (the file server sees the block layer's writes, as zram does).
    Direct,
    /// Through the file's page cache, the FUSE file system in writeback-cache
    /// mode: writes reach the device late and gathered (faster, but not the
    /// block layer's own sequence).
    Buffered,
}

/// An attached loop device.
#[derive(Debug)]
pub struct LoopDevice {
    device: File,
    path: PathBuf,
}

impl LoopDevice {
    /// Attaches a free loop device to `backing` with `block_size`-byte
    /// logical blocks. Another process may take the device that
    /// `LOOP_CTL_GET_FREE` named before this one configures it (two serves
    /// starting at once): `EBUSY` then moves on to the next free device, as
    /// losetup does.
    pub fn attach(backing: &Path, block_size: u32, io: LoopIo) -> io::Result<LoopDevice> {
        /// Devices tried before a race is given up as an error.
        const ATTEMPTS: usize = 16;
        let control = OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/loop-control")?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(if io == LoopIo::Direct {
                libc::O_DIRECT
            } else {
                0
            })
            .open(backing)?;
        let mut info = LoopInfo64 {
            lo_device: 0,
            lo_inode: 0,
            lo_rdevice: 0,
            lo_offset: 0,
            lo_sizelimit: 0,
            lo_number: 0,
            lo_encrypt_type: 0,
            lo_encrypt_key_size: 0,
            lo_flags: LO_FLAGS_AUTOCLEAR,
            lo_file_name: [0; 64],
            lo_crypt_name: [0; 64],
            lo_encrypt_key: [0; 32],
            lo_init: [0; 2],
        };
        if io == LoopIo::Direct {
            info.lo_flags |= LO_FLAGS_DIRECT_IO;
        }
        let name = backing.as_os_str().as_encoded_bytes();
        let len = name.len().min(63);
        info.lo_file_name[..len].copy_from_slice(&name[..len]);
        let config = LoopConfig {
            fd: file.as_raw_fd() as u32,
            block_size,
            info,
            reserved: [0; 8],
        };
        let mut attempt = 0;
        let (device, path) = loop {
            // SAFETY: LOOP_CTL_GET_FREE takes no argument and returns a number.
            let number = unsafe { libc::ioctl(control.as_raw_fd(), LOOP_CTL_GET_FREE) };
            if number < 0 {
                return Err(io::Error::last_os_error());
            }
            let path = PathBuf::from(format!("/dev/loop{number}"));
            let device = OpenOptions::new().read(true).write(true).open(&path)?;
            // SAFETY: LOOP_CONFIGURE reads one `struct loop_config`, which
            // `config` is (repr(C), the uapi layout) and outlives the call.
            let result = unsafe {
                libc::ioctl(
                    device.as_raw_fd(),
                    LOOP_CONFIGURE,
                    &config as *const LoopConfig,
                )
            };
            if result >= 0 {
                break (device, path);
            }
            let err = io::Error::last_os_error();
            attempt += 1;
            if err.raw_os_error() != Some(libc::EBUSY) || attempt == ATTEMPTS {
                return Err(err);
            }
        };
        // The loop driver holds its own reference to the file now.
        drop(file);
        Ok(LoopDevice { device, path })
    }

    /// `/dev/loopN`.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Sets the queue limits and features a file system sees that differ
    /// between a loop device and the kernel's zram and that sysfs lets us
    /// change (zram_add() in Linux 6.12 sets them):
    /// - zram is not rotational (it leaves out `BLK_FEAT_ROTATIONAL`; a loop
    ///   device over a file with no block device under it is rotational,
    ///   and ext4's block allocator scans groups differently on rotational
    ///   devices);
    /// - zram has no volatile write cache (no `BLK_FEAT_WRITE_CACHE`), so
    ///   the block layer drops the flushes and FUA of ext4's journal
    ///   commits; loop declares one and turns every flush into an fsync of
    ///   its file, one more round trip through FUSE per commit;
    /// - zram asks for stable pages during writeback
    ///   (`BLK_FEAT_STABLE_WRITES`);
    /// - zram is bio-based, so the block layer's writeback throttling
    ///   (blk-wbt, on by default for a request-based device like loop)
    ///   never limits the writes and discards in flight to it: off
    ///   (`wbt_lat_usec` 0);
    /// - zram keeps the block layer's default largest request
    ///   (`BLK_SAFE_MAX_SECTORS`, 124 KiB in whole pages) where loop allows
    ///   1280 KiB.
    ///
    /// Block sizes, minimum I/O and discard granularity (4096) already
    /// match with 4 KiB logical blocks. What is left differs only where
    /// ext4 does not look: loop's `optimal_io_size` is 0, zram's 4096 (the
    /// block size, which mkfs.ext4 ignores), and loop splits discards at
    /// 4 GiB.
    pub fn present_as_zram(&self) -> io::Result<()> {
        let name = self.path.file_name().unwrap_or_default();
        let queue = Path::new("/sys/block").join(name).join("queue");
        std::fs::write(queue.join("rotational"), "0")?;
        std::fs::write(queue.join("write_cache"), "write through")?;
        std::fs::write(queue.join("stable_writes"), "1")?;
        // A kernel built without blk-wbt has no such file: nothing to turn off.
        match std::fs::write(queue.join("wbt_lat_usec"), "0") {
            Err(err) if err.kind() != io::ErrorKind::NotFound => return Err(err),
            _ => {}
        }
        std::fs::write(queue.join("max_sectors_kb"), ZRAM_MAX_SECTORS_KB)
    }
}

/// zram's largest request in KiB: `BLK_SAFE_MAX_SECTORS` (255 sectors)
/// rounded down to whole 4 KiB logical blocks.
const ZRAM_MAX_SECTORS_KB: &str = "124";

impl Drop for LoopDevice {
    fn drop(&mut self) {
        // SAFETY: LOOP_CLR_FD takes no argument. EBUSY (still mounted) is
        // fine: the device is autoclear and detaches at its last close.
        unsafe {
            libc::ioctl(self.device.as_raw_fd(), LOOP_CLR_FD);
        }
    }
}
