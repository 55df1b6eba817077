//! The plumbing of the suites' child processes (mempolicy, pagecache):
//! pipes, pinning to a CPU, errno (their anonymous mappings: `host_anon`). What a forked child calls (`errno`, `close`, `read_exact`,
//! `write_exact`) makes raw system calls only, no allocation and no lock,
//! as a child of a multi-threaded process must; the rest runs in the
//! suite's own process.

use crate::conform::ConformError;
use std::fs::File;
use std::mem::ManuallyDrop;
use std::os::fd::FromRawFd;

/// The last errno as a positive number.
pub(crate) fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

pub(crate) fn kernel_error(what: &str) -> ConformError {
    ConformError::Kernel(format!("{what}: {}", std::io::Error::last_os_error()))
}

/// Pins process `pid` (0: the caller) to `cpu`.
pub(crate) fn pin(pid: i32, cpu: usize) -> Result<(), ConformError> {
    // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET writes inside it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` is below CPU_SETSIZE (checked by the caller's choice).
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` is a valid cpu_set_t of the size passed.
    if unsafe { libc::sched_setaffinity(pid, std::mem::size_of::<libc::cpu_set_t>(), &set) } != 0 {
        return Err(kernel_error("sched_setaffinity"));
    }
    Ok(())
}

/// A pipe: (read end, write end).
pub(crate) fn pipe() -> Result<(i32, i32), ConformError> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(kernel_error("pipe"));
    }
    Ok((fds[0], fds[1]))
}

pub(crate) fn close(fd: i32) {
    // SAFETY: closes a descriptor the caller owns and no longer uses.
    unsafe { libc::close(fd) };
}

/// Reads exactly `buf.len()` bytes from `fd`, or fails (end of file or
/// an error).
pub(crate) fn read_exact(fd: i32, buf: &mut [u8]) -> bool {
    use std::io::Read;
    // SAFETY: borrows a descriptor the caller owns; ManuallyDrop keeps it
    // open.
    let mut file = ManuallyDrop::new(unsafe { File::from_raw_fd(fd) });
    file.read_exact(buf).is_ok()
}

/// Writes all of `buf` to `fd`, or fails.
pub(crate) fn write_exact(fd: i32, buf: &[u8]) -> bool {
    use std::io::Write;
    // SAFETY: as in `read_exact`.
    let mut file = ManuallyDrop::new(unsafe { File::from_raw_fd(fd) });
    file.write_all(buf).is_ok()
}
