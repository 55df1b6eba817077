//! The live-kernel side of the mempolicy suite: the real system calls
//! (through `libc::syscall`), run in a forked child so that the policies it
//! sets and the ranges it maps never touch the calling process. The child
//! is single-threaded, so no other thread maps into the holes a case makes.
//! It sends one line per case back through a pipe.

use std::io::Read;
use std::os::fd::FromRawFd;

use super::{execute, Case, Side, PAGE};
use crate::conform::process::{errno, write_exact};
use crate::conform::{errno_label, ConformError};

/// A call that changes nothing, to see whether the kernel has it.
type Probe = (&'static str, fn() -> i64);

/// Why the suite cannot run here, if it cannot: not root, or the kernel
/// lacks the calls (probed with calls that change nothing).
pub(crate) fn skip_reason() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root (MOVE_ALL and moving pages need CAP_SYS_NICE)".to_string());
    }
    let probes: [Probe; 4] = [
        // SAFETY: NULL out-parameters with flags 0 write nothing.
        ("get_mempolicy", || unsafe {
            libc::syscall(
                libc::SYS_get_mempolicy,
                0usize,
                0usize,
                0usize,
                0usize,
                0usize,
            )
        }),
        // SAFETY: maxnode 0 and NULL masks read nothing; the empty new mask
        // is EINVAL before anything moves.
        ("migrate_pages", || unsafe {
            libc::syscall(libc::SYS_migrate_pages, 0, 0usize, 0usize, 0usize)
        }),
        // SAFETY: zero pages: nothing is read or written.
        ("move_pages", || unsafe {
            libc::syscall(libc::SYS_move_pages, 0, 0usize, 0usize, 0usize, 0usize, 0)
        }),
        // SAFETY: flags 1 is EINVAL before any VMA is looked at (5.17+).
        ("set_mempolicy_home_node", || unsafe {
            libc::syscall(
                libc::SYS_set_mempolicy_home_node,
                0usize,
                0usize,
                0usize,
                1usize,
            )
        }),
    ];
    for (name, probe) in probes {
        if probe() < 0 && errno() == libc::ENOSYS {
            return Some(format!("{name}: ENOSYS (kernel without NUMA or migration)"));
        }
    }
    None
}

/// A raw syscall return as `Ok(value)` or `Err(errno)`.
fn result(ret: i64) -> Result<i64, i32> {
    if ret < 0 {
        Err(errno())
    } else {
        Ok(ret)
    }
}

fn ptr_or_null<T>(slice: Option<&[T]>) -> usize {
    slice.map_or(0, |slice| slice.as_ptr() as usize)
}

/// This process, making the calls.
struct LiveKernel;

impl Side for LiveKernel {
    fn own_pid(&self) -> i32 {
        // SAFETY: getpid has no preconditions.
        unsafe { libc::getpid() }
    }

    fn map(&mut self, pages: usize) -> Result<u64, String> {
        // SAFETY: a fresh private anonymous mapping; no existing memory is
        // affected.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                pages * PAGE as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if addr == libc::MAP_FAILED {
            return Err(format!("mmap: {}", errno_label(errno())));
        }
        Ok(addr as u64)
    }

    fn unmap(&mut self, addr: u64, pages: usize) -> Result<(), String> {
        // SAFETY: `addr` is inside a mapping this side made for the case;
        // nothing else refers to it.
        let ret = unsafe { libc::munmap(addr as *mut libc::c_void, pages * PAGE as usize) };
        if ret != 0 {
            return Err(format!("munmap: {}", errno_label(errno())));
        }
        Ok(())
    }

    fn touch(&mut self, addr: u64, write: bool) -> Result<(), String> {
        let ptr = addr as *mut u8;
        if write {
            // SAFETY: `addr` is a mapped, writable page of the case's region.
            unsafe { ptr.write_volatile(1) };
        } else {
            // SAFETY: as above, readable.
            unsafe { ptr.read_volatile() };
        }
        Ok(())
    }

    fn set_mempolicy(
        &mut self,
        mode: i32,
        nmask: Option<&[u64]>,
        maxnode: u64,
    ) -> Result<i64, i32> {
        // SAFETY: `nmask` is NULL or a buffer at least as long as the bits
        // any case lets the kernel read (see MASK_WORDS).
        result(unsafe { libc::syscall(libc::SYS_set_mempolicy, mode, ptr_or_null(nmask), maxnode) })
    }

    fn get_mempolicy(
        &mut self,
        policy: Option<&mut i32>,
        nmask: Option<&mut [u64]>,
        maxnode: u64,
        addr: u64,
        flags: u64,
    ) -> Result<i64, i32> {
        let policy = policy.map_or(0, |policy| policy as *mut i32 as usize);
        let nmask = nmask.map_or(0, |mask| mask.as_mut_ptr() as usize);
        // SAFETY: the out-parameters are NULL or live buffers; the kernel
        // writes at most a page of bits, and cases asking for more than the
        // buffer fail with EINVAL before writing.
        result(unsafe {
            libc::syscall(libc::SYS_get_mempolicy, policy, nmask, maxnode, addr, flags)
        })
    }

    fn mbind(
        &mut self,
        addr: u64,
        len: u64,
        mode: i32,
        nmask: Option<&[u64]>,
        maxnode: u64,
        flags: u32,
    ) -> Result<i64, i32> {
        // SAFETY: changes only the policy of the case's own ranges (or
        // fails); `nmask` as in set_mempolicy.
        result(unsafe {
            libc::syscall(
                libc::SYS_mbind,
                addr,
                len,
                mode as libc::c_ulong,
                ptr_or_null(nmask),
                maxnode,
                flags,
            )
        })
    }

    fn migrate_pages(
        &mut self,
        pid: i32,
        maxnode: u64,
        old: Option<&[u64]>,
        new: Option<&[u64]>,
    ) -> Result<i64, i32> {
        // SAFETY: the masks are NULL or buffers as in set_mempolicy; pages
        // move between nodes, their contents stay.
        result(unsafe {
            libc::syscall(
                libc::SYS_migrate_pages,
                pid,
                maxnode,
                ptr_or_null(old),
                ptr_or_null(new),
            )
        })
    }

    fn set_mempolicy_home_node(
        &mut self,
        addr: u64,
        len: u64,
        home_node: u64,
        flags: u64,
    ) -> Result<i64, i32> {
        // SAFETY: changes only the policies of the case's own ranges (or
        // fails); no user memory is read or written.
        result(unsafe {
            libc::syscall(
                libc::SYS_set_mempolicy_home_node,
                addr,
                len,
                home_node,
                flags,
            )
        })
    }

    fn move_pages(
        &mut self,
        pid: i32,
        pages: &[u64],
        nodes: Option<&[i32]>,
        status: &mut [i32],
        flags: u32,
    ) -> Result<i64, i32> {
        // SAFETY: `pages`, `nodes` (or NULL) and `status` hold `pages.len()`
        // entries each.
        result(unsafe {
            libc::syscall(
                libc::SYS_move_pages,
                pid,
                pages.len(),
                pages.as_ptr(),
                ptr_or_null(nodes),
                status.as_mut_ptr(),
                flags,
            )
        })
    }
}

/// Runs `cases` in a forked child; one result per case.
pub(crate) fn run_in_child(cases: &[Case]) -> Result<Vec<String>, ConformError> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Err(ConformError::Kernel(format!(
            "pipe: {}",
            errno_label(errno())
        )));
    }
    let [read_fd, write_fd] = fds;
    // SAFETY: the child only runs the cases (syscalls and allocations; glibc
    // keeps malloc usable after fork) and leaves with _exit, never returning
    // into the caller's code.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(ConformError::Kernel(format!(
            "fork: {}",
            errno_label(errno())
        )));
    }
    if pid == 0 {
        // SAFETY: the child's copy of the read end is not used.
        unsafe { libc::close(read_fd) };
        let mut side = LiveKernel;
        let mut status = 0;
        for case in cases {
            let line = match execute(&mut side, case) {
                Ok(text) => format!("{text}\n"),
                Err(message) => {
                    status = 1;
                    format!("ERROR {message}\n")
                }
            };
            write_exact(write_fd, line.as_bytes());
        }
        // SAFETY: leaves the child without running the parent's atexit
        // handlers or destructors.
        unsafe { libc::_exit(status) };
    }
    // SAFETY: the parent's copy of the write end is not used; closing it
    // lets the read see end of file when the child exits.
    unsafe { libc::close(write_fd) };
    // SAFETY: `read_fd` is a pipe end this function owns from here on.
    let mut reader = unsafe { std::fs::File::from_raw_fd(read_fd) };
    let mut text = String::new();
    let read = reader.read_to_string(&mut text);
    let mut wait_status = 0;
    // SAFETY: waits for the child forked above.
    unsafe { libc::waitpid(pid, &mut wait_status, 0) };
    read.map_err(|err| ConformError::Kernel(format!("reading the child's results: {err}")))?;
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    if let Some(error) = lines.iter().find(|line| line.starts_with("ERROR ")) {
        return Err(ConformError::Kernel(error.clone()));
    }
    if lines.len() != cases.len() || !libc::WIFEXITED(wait_status) {
        return Err(ConformError::Kernel(format!(
            "the child gave {} results for {} cases (wait status {wait_status:#x})",
            lines.len(),
            cases.len()
        )));
    }
    Ok(lines)
}
