//! The process that makes a case's calls on the host: forked with the
//! case's descriptors, moved into the case's cgroup and pinned to one CPU,
//! it runs one call per command byte and answers with its result. It uses
//! only memory made before the fork and raw system calls. The pages its
//! stack copies on write are in the baseline, read after a first no-op
//! command ([`NO_OP`]).

use super::case_files::{CaseFiles, SharedBuffer};
use super::cases::{Case, Step};
use super::memcg::Memcg;
use crate::conform::process::{close, errno, kernel_error, pin, pipe, read_exact, write_exact};
use crate::conform::ConformError;
use crate::host_anon::{map_private_pages, touch_pages};
use std::ffi::CString;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;

/// The command that runs no call (the worker's warm-up).
pub(super) const NO_OP: u8 = u8::MAX;

/// The worker of one case, stopped (and waited for) when dropped.
pub(super) struct Worker {
    pid: i32,
    commands: i32,
    results: i32,
}

impl Worker {
    /// Forks the worker for `case` with the files' descriptors, in
    /// `memcg`, pinned to `cpu`.
    pub(super) fn start(
        case: &Case<'_>,
        files: &CaseFiles,
        buffer: &SharedBuffer,
        memcg: &Memcg,
        cpu: usize,
    ) -> Result<Worker, ConformError> {
        let paths: Vec<CString> = files
            .paths
            .iter()
            .map(|path| CString::new(path.as_os_str().as_bytes()))
            .collect::<Result<_, _>>()
            .map_err(|err| ConformError::Kernel(format!("a file name: {err}")))?;
        let mut fds: Vec<i32> = files.files.iter().map(|file| file.as_raw_fd()).collect();
        let anon_pages = case
            .steps
            .iter()
            .map(|step| match step {
                Step::Touch(pages) => *pages as usize,
                _ => 0,
            })
            .max()
            .unwrap_or(0);
        let (command_read, command_write) = pipe()?;
        let (result_read, result_write) = pipe()?;
        // SAFETY: the child runs the case's calls with raw system calls on
        // memory made before the fork, allocates nothing, and leaves with
        // _exit.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(kernel_error("fork"));
        }
        if pid == 0 {
            close(command_write);
            close(result_read);
            let mut anon: *mut u8 = std::ptr::null_mut();
            let mut command = [0u8; 1];
            while read_exact(command_read, &mut command) {
                let result = match case.steps.get(command[0] as usize) {
                    Some(step) => execute(step, &mut fds, &paths, buffer, &mut anon, anon_pages),
                    None => 0,
                };
                if !write_exact(result_write, &result.to_ne_bytes()) {
                    break;
                }
            }
            // SAFETY: leaves without the parent's atexit handlers.
            unsafe { libc::_exit(0) };
        }
        close(command_read);
        close(result_write);
        let worker = Worker {
            pid,
            commands: command_write,
            results: result_read,
        };
        memcg.attach(pid)?;
        pin(pid, cpu)?;
        Ok(worker)
    }

    /// Runs step `index` (or the no-op) and returns its result.
    pub(super) fn run(&self, index: u8) -> Result<i64, ConformError> {
        let mut result = [0u8; 8];
        if !write_exact(self.commands, &[index]) || !read_exact(self.results, &mut result) {
            return Err(ConformError::Kernel("the case's worker stopped".into()));
        }
        Ok(i64::from_ne_bytes(result))
    }

    /// Stops the worker and waits for it.
    pub(super) fn stop(mut self) {
        self.finish();
    }

    fn finish(&mut self) {
        if self.pid > 0 {
            close(self.commands);
            close(self.results);
            let mut status = 0;
            // SAFETY: waits for the worker forked in `start`.
            unsafe { libc::waitpid(self.pid, &mut status, 0) };
            self.pid = 0;
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.finish();
    }
}

/// One call, in the worker: the result, or minus the errno.
fn execute(
    step: &Step,
    fds: &mut [i32],
    paths: &[CString],
    buffer: &SharedBuffer,
    anon: &mut *mut u8,
    anon_pages: usize,
) -> i64 {
    let ret = |value: i64| {
        if value < 0 {
            -i64::from(errno())
        } else {
            value
        }
    };
    // SAFETY (all calls below): descriptors are the case's files (or -1
    // after an unlink, which the kernel refuses with EBADF); reads and
    // writes stay inside the shared buffer, sized for the largest call of
    // the case; the anonymous mapping is the worker's own.
    unsafe {
        match *step {
            Step::Read(file, pos, len) => ret(libc::pread(
                fds[file],
                buffer.base.cast(),
                len as usize,
                pos as libc::off_t,
            ) as i64),
            Step::Write(file, pos, len) => ret(libc::pwrite(
                fds[file],
                buffer.base.cast(),
                len as usize,
                pos as libc::off_t,
            ) as i64),
            Step::Fsync(file) => ret(i64::from(libc::fsync(fds[file]))),
            Step::Truncate(file, len) => ret(i64::from(libc::ftruncate(fds[file], len))),
            Step::DontNeed(file, offset, len) => -i64::from(libc::posix_fadvise(
                fds[file],
                offset,
                len,
                libc::POSIX_FADV_DONTNEED,
            )),
            Step::Unlink(file) => {
                libc::close(fds[file]);
                fds[file] = -1;
                ret(i64::from(libc::unlink(paths[file].as_ptr())))
            }
            Step::Touch(pages) => {
                if anon.is_null() {
                    match map_private_pages(anon_pages) {
                        Some(map) => *anon = map,
                        None => return -i64::from(errno()),
                    }
                }
                touch_pages(*anon, pages as usize);
                pages as i64
            }
        }
    }
}
