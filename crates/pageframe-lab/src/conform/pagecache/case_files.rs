//! What a case's worker uses from before its fork: its files (made, synced
//! and dropped from the cache, so that every case starts cold; removed when
//! dropped) and its read and write buffer (a shared anonymous mapping,
//! faulted in by the suite: shmem charged to the suite and never copied on
//! write, so the worker's calls fault no page of the case's cgroup).

use crate::conform::process::kernel_error;
use crate::conform::ConformError;
use crate::host_anon::{touch_pages, PAGE_BYTES};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// A shared anonymous mapping, faulted in by its maker.
pub(super) struct SharedBuffer {
    pub(super) base: *mut u8,
    len: usize,
}

impl SharedBuffer {
    pub(super) fn new(len: usize) -> Result<SharedBuffer, ConformError> {
        let len = len.max(1);
        // SAFETY: a new mapping of the kernel's choosing; nothing else is
        // touched.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(kernel_error("mmap of the case's buffer"));
        }
        let base = base.cast::<u8>();
        // SAFETY: `base` starts the writable mapping of `len` bytes made
        // above, which covers `len.div_ceil(PAGE_BYTES)` pages.
        unsafe { touch_pages(base, len.div_ceil(PAGE_BYTES)) };
        Ok(SharedBuffer { base, len })
    }
}

impl Drop for SharedBuffer {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `new`.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

/// A case's files: made, synced and dropped from the cache; removed when
/// dropped.
pub(super) struct CaseFiles {
    pub(super) paths: Vec<PathBuf>,
    pub(super) files: Vec<std::fs::File>,
}

impl CaseFiles {
    pub(super) fn make(
        dir: &Path,
        case_number: usize,
        sizes: &[u64],
    ) -> Result<CaseFiles, ConformError> {
        let mut made = CaseFiles {
            paths: Vec::new(),
            files: Vec::new(),
        };
        for (at, &size) in sizes.iter().enumerate() {
            let path = dir.join(format!(
                "pageframe-pagecache-{}-{case_number}-{at}",
                std::process::id()
            ));
            made.paths.push(path.clone());
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(&path)
                .map_err(|err| ConformError::Kernel(format!("{}: {err}", path.display())))?;
            let chunk = vec![0x5au8; 1 << 20];
            let mut left = size;
            while left > 0 {
                let this = left.min(chunk.len() as u64) as usize;
                std::io::Write::write_all(&mut &file, &chunk[..this])
                    .map_err(|err| ConformError::Kernel(format!("{}: {err}", path.display())))?;
                left -= this as u64;
            }
            file.sync_all()
                .map_err(|err| ConformError::Kernel(format!("{}: {err}", path.display())))?;
            drop_cache(&file, &path, size)?;
            made.files.push(file);
        }
        // A journal commit, so that no file is in the running transaction
        // as none is on pageframe's side (each of its fsyncs commits).
        if let Some(file) = made.files.last() {
            // SAFETY: syncfs on a descriptor this function owns.
            if unsafe { libc::syncfs(file.as_raw_fd()) } != 0 {
                return Err(kernel_error("syncfs"));
            }
        }
        Ok(made)
    }
}

impl Drop for CaseFiles {
    fn drop(&mut self) {
        for path in &self.paths {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Drops a synced file's pages from the cache and checks none is left
/// (mincore() of a mapping of it, made through a descriptor opened with
/// `O_NOATIME`: mmap() updates the atime otherwise, which would put the
/// inode in the journal's running transaction, where pageframe's file is
/// not).
fn drop_cache(file: &std::fs::File, path: &Path, size: u64) -> Result<(), ConformError> {
    let fd = file.as_raw_fd();
    let no_atime = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOATIME)
        .open(path)
        .map_err(|err| ConformError::Kernel(format!("{}: {err}", path.display())))?;
    // SAFETY: advice on a descriptor this function borrows.
    let advised = unsafe { libc::posix_fadvise(fd, 0, 0, libc::POSIX_FADV_DONTNEED) };
    if advised != 0 {
        return Err(ConformError::Kernel(format!(
            "fadvise {}: errno {advised}",
            path.display()
        )));
    }
    if size == 0 {
        return Ok(());
    }
    let pages = size.div_ceil(4096) as usize;
    // SAFETY: a new read-only mapping of the file, unmapped below; mincore
    // writes one byte per page into `resident`, which has `pages` bytes.
    let cached = unsafe {
        let map = libc::mmap(
            std::ptr::null_mut(),
            size as usize,
            libc::PROT_READ,
            libc::MAP_SHARED,
            no_atime.as_raw_fd(),
            0,
        );
        if map == libc::MAP_FAILED {
            return Err(kernel_error("mmap for mincore"));
        }
        let mut resident = vec![0u8; pages];
        let done = libc::mincore(map, size as usize, resident.as_mut_ptr());
        libc::munmap(map, size as usize);
        if done != 0 {
            return Err(kernel_error("mincore"));
        }
        resident.iter().filter(|&&byte| byte & 1 != 0).count()
    };
    if cached != 0 {
        return Err(ConformError::Kernel(format!(
            "{}: {cached} pages still cached after POSIX_FADV_DONTNEED",
            path.display()
        )));
    }
    Ok(())
}
