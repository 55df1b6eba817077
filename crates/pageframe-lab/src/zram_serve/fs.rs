//! The FUSE file system that serves a [`Device`]: a root directory with
//! `disk` (the device as a file: read, write, fallocate(PUNCH_HOLE)) and
//! `mm_stat` (the device's mm_stat line, read-only).
//!
//! Owns: nothing but a reference to the device. The kernel's requests may
//! come from several session threads; the device's lock orders them.

use super::device::Device;
use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, InitFlags,
    KernelConfig, LockOwner, OpenFlags, ReplyAttr, ReplyData, ReplyDirectory, ReplyEmpty,
    ReplyEntry, ReplyOpen, ReplyWrite, Request, WriteFlags,
};
use pageframe::zram::ZramError;
use pageframe::Errno as PfErrno;
use std::ffi::OsStr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

const ROOT: INodeNo = INodeNo(1);
const DISK: INodeNo = INodeNo(2);
const MM_STAT: INodeNo = INodeNo(3);
/// The file of the device.
pub const DISK_NAME: &str = "disk";
/// The file of the statistics.
pub const MM_STAT_NAME: &str = "mm_stat";
/// Largest write the kernel sends in one request.
const MAX_WRITE: u32 = 1 << 20;
/// Most background (asynchronous) requests the kernel keeps in flight.
const MAX_BACKGROUND: u16 = 128;
const TTL: Duration = Duration::from_secs(1);

/// The file system.
pub struct ZramFs {
    device: Arc<Device>,
    writeback_cache: bool,
}

impl ZramFs {
    /// Serves `device`; with `writeback_cache` the kernel gathers writes in
    /// its page cache and sends them in large requests (for a buffered loop
    /// device), else each request comes as it is made.
    pub fn new(device: Arc<Device>, writeback_cache: bool) -> ZramFs {
        ZramFs {
            device,
            writeback_cache,
        }
    }

    fn attr(&self, ino: INodeNo) -> Option<FileAttr> {
        let (kind, perm, size) = match ino {
            ROOT => (FileType::Directory, 0o755, 0),
            DISK => (
                FileType::RegularFile,
                0o600,
                self.device.config().disk_bytes,
            ),
            MM_STAT => (FileType::RegularFile, 0o444, 4096),
            _ => return None,
        };
        let now = SystemTime::UNIX_EPOCH;
        Some(FileAttr {
            ino,
            size,
            blocks: size.div_ceil(512),
            atime: now,
            mtime: now,
            ctime: now,
            crtime: now,
            kind,
            perm,
            nlink: if kind == FileType::Directory { 2 } else { 1 },
            uid: 0,
            gid: 0,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        })
    }
}

/// The errno the kernel gets for a failed device operation: a pool out of
/// memory or over its limit is a full device (ENOSPC).
fn errno(err: &ZramError) -> Errno {
    match err.errno() {
        PfErrno::ENOMEM => Errno::ENOSPC,
        PfErrno::EINVAL => Errno::EINVAL,
        _ => Errno::EIO,
    }
}

impl Filesystem for ZramFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        let _ = config.set_max_write(MAX_WRITE);
        // The loop driver keeps up to its queue depth of direct requests in
        // flight, each an asynchronous (background) FUSE request: let them
        // all through instead of fuser's default 16.
        let _ = config.set_max_background(MAX_BACKGROUND);
        let _ = config.set_congestion_threshold(MAX_BACKGROUND / 4 * 3);
        let mut wanted = InitFlags::FUSE_BIG_WRITES | InitFlags::FUSE_ASYNC_DIO;
        if self.writeback_cache {
            wanted |= InitFlags::FUSE_WRITEBACK_CACHE;
        }
        let _ = config.add_capabilities(wanted);
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let ino = match (parent, name.to_str()) {
            (ROOT, Some(DISK_NAME)) => DISK,
            (ROOT, Some(MM_STAT_NAME)) => MM_STAT,
            _ => return reply.error(Errno::ENOENT),
        };
        match self.attr(ino) {
            Some(attr) => reply.entry(&TTL, &attr, Generation(0)),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.attr(ino) {
            Some(attr) => reply.attr(&TTL, &attr),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        match ino {
            // The statistics change under the page cache: read them direct.
            MM_STAT => reply.opened(FileHandle(0), FopenFlags::FOPEN_DIRECT_IO),
            // Without the writeback cache the loop device opens the disk
            // O_DIRECT: let its writes run in parallel (no inode lock).
            DISK if !self.writeback_cache => reply.opened(
                FileHandle(0),
                FopenFlags::FOPEN_DIRECT_IO | FopenFlags::FOPEN_PARALLEL_DIRECT_WRITES,
            ),
            DISK => reply.opened(FileHandle(0), FopenFlags::empty()),
            _ => reply.error(Errno::EISDIR),
        }
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        match ino {
            DISK => {
                let disk = self.device.config().disk_bytes;
                let len = u64::from(size).min(disk.saturating_sub(offset)) as usize;
                let mut buffer = vec![0u8; len];
                match self.device.read(offset, &mut buffer) {
                    Ok(()) => reply.data(&buffer),
                    Err(err) => reply.error(errno(&err)),
                }
            }
            MM_STAT => {
                let text = self.device.mm_stat().to_string();
                let bytes = text.as_bytes();
                let start = (offset as usize).min(bytes.len());
                let end = start.saturating_add(size as usize).min(bytes.len());
                reply.data(&bytes[start..end]);
            }
            _ => reply.error(Errno::EISDIR),
        }
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        if ino != DISK {
            return reply.error(Errno::EACCES);
        }
        if offset >= self.device.config().disk_bytes {
            return reply.error(Errno::ENOSPC);
        }
        match self.device.write(offset, data) {
            Ok(()) => reply.written(data.len() as u32),
            Err(err) => reply.error(errno(&err)),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        if ino != ROOT {
            return reply.error(Errno::ENOTDIR);
        }
        let entries = [
            (ROOT, FileType::Directory, "."),
            (ROOT, FileType::Directory, ".."),
            (DISK, FileType::RegularFile, DISK_NAME),
            (MM_STAT, FileType::RegularFile, MM_STAT_NAME),
        ];
        for (index, (ino, kind, name)) in entries.iter().enumerate().skip(offset as usize) {
            if reply.add(*ino, index as u64 + 1, *kind, name) {
                break;
            }
        }
        reply.ok();
    }

    fn fallocate(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        if ino != DISK {
            return reply.error(Errno::EACCES);
        }
        let punch = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
        if mode & libc::FALLOC_FL_PUNCH_HOLE == 0 {
            // Plain allocation: every slot of the device already exists.
            return reply.ok();
        }
        if mode & !punch != 0 {
            return reply.error(Errno::EOPNOTSUPP);
        }
        match self.device.punch_hole(offset, length) {
            Ok(()) => reply.ok(),
            Err(err) => reply.error(errno(&err)),
        }
    }
}
