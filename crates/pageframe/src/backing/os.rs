//! The arena's OS layer, and the only place in the crate with system calls:
//! a memfd, [`Mapping`]s of it or of reserved address space, positioned
//! reads and writes of the memfd, the host's page size and NUMA nodes, and
//! what the mermap agents need: shared memory, fork with CPU pinning,
//! futexes, descriptor and process housekeeping, and opening an input file
//! without waiting for a writer.
//!
//! Preconditions are checked, not assumed: every [`Mapping`] method that
//! names a byte range checks that it lies inside the mapping (`EINVAL`
//! otherwise), so no call can reach memory the mapping does not own.
//! A failed call returns [`BackingError::Os`] with its errno and leaves what
//! it was given as it was; resources are owned (`OwnedFd`, `Mapping`) so an
//! early return releases whatever was built.

use std::ffi::CStr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;

use super::BackingError;

mod slot_view;
pub(crate) use slot_view::SlotView;

/// The error of the OS call that just failed.
fn os_error(call: &'static str) -> BackingError {
    BackingError::Os {
        call,
        errno: std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO),
    }
}

/// Bytes per page of the host.
pub(crate) fn host_page_size() -> Result<usize, BackingError> {
    // SAFETY: sysconf reads a configuration value; no memory is passed.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size).map_err(|_| os_error("sysconf"))
}

/// An anonymous in-memory file (memfd) of `len` bytes, sparse: holes cost
/// nothing.
pub(crate) fn memfd(name: &CStr, len: u64) -> Result<OwnedFd, BackingError> {
    // SAFETY: `name` is a NUL-terminated string that outlives the call.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(os_error("memfd_create"));
    }
    // SAFETY: `fd` was just returned by memfd_create and nothing else owns it.
    let file = unsafe { OwnedFd::from_raw_fd(fd) };
    let len = libc::off_t::try_from(len).map_err(|_| BackingError::Os {
        call: "ftruncate",
        errno: libc::EFBIG,
    })?;
    // SAFETY: ftruncate on a descriptor we own; no memory is passed.
    if unsafe { libc::ftruncate(file.as_raw_fd(), len) } != 0 {
        return Err(os_error("ftruncate"));
    }
    Ok(file)
}

/// The source of [`write_zeros_at`]: one host page of zeros.
static ZEROS: [u8; 4096] = [0; 4096];

/// Writes all of `bytes` into `file` at byte `offset` (`pwrite`), without
/// any mapping of the file in this process: the host kernel copies through
/// its own.
pub(crate) fn write_all_at(file: &OwnedFd, bytes: &[u8], offset: u64) -> Result<(), BackingError> {
    transfer_all("pwrite", bytes.len(), offset, |done, at| {
        let rest = &bytes[done..];
        // SAFETY: `rest` is a live slice readable for `rest.len()` bytes for
        // the whole call, and pwrite only reads that many from it; `file` is
        // an open descriptor we borrow.
        unsafe { libc::pwrite(file.as_raw_fd(), rest.as_ptr().cast(), rest.len(), at) }
    })
}

/// Fills `out` from `file` at byte `offset` (`pread`). Reading past the end
/// of the file is `EIO`.
pub(crate) fn read_exact_at(
    file: &OwnedFd,
    out: &mut [u8],
    offset: u64,
) -> Result<(), BackingError> {
    transfer_all("pread", out.len(), offset, |done, at| {
        let rest = &mut out[done..];
        // SAFETY: `rest` is exclusively borrowed and writable for
        // `rest.len()` bytes for the whole call, and pread writes at most
        // that many into it; `file` is an open descriptor we borrow.
        unsafe { libc::pread(file.as_raw_fd(), rest.as_mut_ptr().cast(), rest.len(), at) }
    })
}

/// Writes `len` zero bytes into `file` at byte `offset`, with `pwrite`s
/// from a static page of zeros. (Not `fallocate`: a memfd supports only
/// `FALLOC_FL_PUNCH_HOLE`, which frees the pages and zaps every mapping of
/// the range, our direct map included, with a shootdown; see
/// shmem_fallocate().)
pub(crate) fn write_zeros_at(file: &OwnedFd, offset: u64, len: usize) -> Result<(), BackingError> {
    let mut done = 0;
    while done < len {
        let chunk = (len - done).min(ZEROS.len());
        write_all_at(file, &ZEROS[..chunk], offset + done as u64)?;
        done += chunk;
    }
    Ok(())
}

/// Moves `len` bytes with `io(done, file_offset)`, one pread or pwrite of
/// the bytes from `done` on at `file_offset`, returning what the call
/// returned: continues after short transfers and retries calls interrupted
/// by a signal (`EINTR`). A call that moves nothing (end of file) is `EIO`;
/// an offset past `off_t` is `EOVERFLOW`.
fn transfer_all(
    call: &'static str,
    len: usize,
    offset: u64,
    mut io: impl FnMut(usize, libc::off_t) -> isize,
) -> Result<(), BackingError> {
    let mut done = 0;
    while done < len {
        let at = offset
            .checked_add(done as u64)
            .and_then(|at| libc::off_t::try_from(at).ok())
            .ok_or(BackingError::Os {
                call,
                errno: libc::EOVERFLOW,
            })?;
        match io(done, at) {
            moved if moved > 0 => done += moved as usize,
            0 => {
                return Err(BackingError::Os {
                    call,
                    errno: libc::EIO,
                })
            }
            _ => match os_error(call) {
                BackingError::Os {
                    errno: libc::EINTR, ..
                } => continue,
                error => return Err(error),
            },
        }
    }
    Ok(())
}

/// A range of the process's address space this value owns and unmaps on drop.
#[derive(Debug)]
pub(crate) struct Mapping {
    addr: NonNull<u8>,
    len: usize,
}

// SAFETY: a `Mapping` is an address range, not a reference to its bytes: the
// range stays mapped until the `Mapping` is dropped, whatever thread drops it,
// and the methods reached through `&Mapping` are system calls on the range,
// which the kernel serialises. Accessing the bytes themselves is up to the
// owner's `unsafe` code, which states why no two threads race on a page.
unsafe impl Send for Mapping {}
// SAFETY: see `Send` above; `&Mapping` offers no unsynchronised byte access.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// `len` bytes of `file` from offset 0, shared and read-write: the direct
    /// map. `populate` faults every page in (`MAP_POPULATE`).
    pub(crate) fn shared(
        file: &OwnedFd,
        len: usize,
        populate: bool,
    ) -> Result<Mapping, BackingError> {
        let populate = if populate { libc::MAP_POPULATE } else { 0 };
        Mapping::new(
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | populate,
            file.as_raw_fd(),
        )
    }

    /// `len` bytes of `file` from offset 0, shared and read-write, nothing
    /// faulted in.
    fn lazy_view(file_fd: i32, len: usize) -> Result<Mapping, BackingError> {
        Mapping::new(
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            file_fd,
        )
    }

    /// `len` bytes of address space, inaccessible and without backing memory.
    pub(crate) fn reserve(len: usize) -> Result<Mapping, BackingError> {
        Mapping::new(
            len,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
        )
    }

    fn new(len: usize, prot: i32, flags: i32, fd: i32) -> Result<Mapping, BackingError> {
        // SAFETY: a new mapping at an address the kernel picks (no MAP_FIXED),
        // so no existing mapping is touched; `fd` is open or -1 for anonymous.
        let addr = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, flags, fd, 0) };
        if addr == libc::MAP_FAILED {
            return Err(os_error("mmap"));
        }
        let addr = NonNull::new(addr.cast::<u8>()).ok_or(BackingError::Os {
            call: "mmap",
            errno: libc::EFAULT,
        })?;
        Ok(Mapping { addr, len })
    }

    /// The first byte of the mapping.
    pub(crate) fn start(&self) -> NonNull<u8> {
        self.addr
    }

    /// The address of byte `offset` when `offset..offset + len` lies inside.
    pub(crate) fn at(&self, offset: usize, len: usize) -> Result<NonNull<u8>, BackingError> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len => {
                // SAFETY: `offset <= self.len`, so the result is inside the
                // mapping or one past its end, and it is not null.
                Ok(unsafe { self.addr.add(offset) })
            }
            _ => Err(BackingError::Os {
                call: "mapping range",
                errno: libc::EINVAL,
            }),
        }
    }

    /// Makes `offset..offset + len` inaccessible (`writable` false) or
    /// read-write again (`mprotect`). Making pages inaccessible flushes their
    /// translations from every CPU running this process.
    pub(crate) fn protect(
        &self,
        offset: usize,
        len: usize,
        writable: bool,
    ) -> Result<(), BackingError> {
        let addr = self.at(offset, len)?;
        let prot = if writable {
            libc::PROT_READ | libc::PROT_WRITE
        } else {
            libc::PROT_NONE
        };
        // SAFETY: the range lies inside this mapping (checked by `at`), which
        // this value owns; changing its protection touches nothing else.
        if unsafe { libc::mprotect(addr.as_ptr().cast(), len, prot) } != 0 {
            return Err(os_error("mprotect"));
        }
        Ok(())
    }

    /// Maps `len` bytes of `file` from `file_offset` over `offset..offset +
    /// len`, shared, read-write and populated.
    pub(crate) fn map_file_at(
        &self,
        offset: usize,
        len: usize,
        file: &OwnedFd,
        file_offset: u64,
    ) -> Result<(), BackingError> {
        let addr = self.at(offset, len)?;
        let file_offset = libc::off_t::try_from(file_offset).map_err(|_| BackingError::Os {
            call: "mmap",
            errno: libc::EOVERFLOW,
        })?;
        let flags = libc::MAP_SHARED | libc::MAP_FIXED | libc::MAP_POPULATE;
        let prot = libc::PROT_READ | libc::PROT_WRITE;
        // SAFETY: MAP_FIXED replaces only `offset..offset + len` of this
        // mapping (checked by `at`), which this value owns and whose previous
        // contents nobody holds a reference to.
        let mapped = unsafe {
            libc::mmap(
                addr.as_ptr().cast(),
                len,
                prot,
                flags,
                file.as_raw_fd(),
                file_offset,
            )
        };
        if mapped == libc::MAP_FAILED {
            return Err(os_error("mmap"));
        }
        Ok(())
    }

    /// Keeps the whole mapping out of processes forked from this one
    /// (`MADV_DONTFORK`): a child finds nothing at its addresses.
    pub(crate) fn dont_fork(&self) -> Result<(), BackingError> {
        // SAFETY: advice over exactly this mapping; it changes only what a
        // future fork copies.
        let result =
            unsafe { libc::madvise(self.addr.as_ptr().cast(), self.len, libc::MADV_DONTFORK) };
        if result != 0 {
            return Err(os_error("madvise"));
        }
        Ok(())
    }

    /// Bytes in the mapping.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Binds `offset..offset + len` to host node `node` (`mbind`, MPOL_BIND):
    /// pages faulted in from now on come from that node.
    pub(crate) fn bind(&self, offset: usize, len: usize, node: u32) -> Result<(), BackingError> {
        let addr = self.at(offset, len)?;
        let bits_per_word = u64::BITS as usize;
        let mut mask = vec![0u64; node as usize / bits_per_word + 1];
        mask[node as usize / bits_per_word] |= 1 << (node as usize % bits_per_word);
        // The kernel reads `maxnode - 1` bits (get_nodes()), hence the + 1.
        let maxnode = mask.len() * bits_per_word + 1;
        // SAFETY: the range lies inside this mapping (checked by `at`); `mask`
        // holds `maxnode - 1` bits and outlives the call, which only reads it.
        let result = unsafe {
            libc::syscall(
                libc::SYS_mbind,
                addr.as_ptr(),
                len,
                libc::MPOL_BIND,
                mask.as_ptr(),
                maxnode,
                0,
            )
        };
        if result != 0 {
            return Err(os_error("mbind"));
        }
        Ok(())
    }

    /// Faults every page in for writing (`MADV_POPULATE_WRITE`), after a
    /// binding so that each page comes from its node.
    pub(crate) fn populate_write(&self) -> Result<(), BackingError> {
        // SAFETY: advice over exactly this mapping; populating does not change
        // contents.
        let result = unsafe {
            libc::madvise(
                self.addr.as_ptr().cast(),
                self.len,
                libc::MADV_POPULATE_WRITE,
            )
        };
        if result != 0 {
            return Err(os_error("madvise"));
        }
        Ok(())
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the range was mapped by `Mapping::new` and is owned by this
        // value, which is going away; pointers handed out from it are valid
        // only for the owner's lifetime, which ends here. A failure could only
        // mean the range is already gone, so it is ignored.
        unsafe { libc::munmap(self.addr.as_ptr().cast(), self.len) };
    }
}

/// Shared anonymous memory of `len` bytes, zeroed, read-write, faulted in
/// on first touch: it stays shared with every process forked from this one
/// afterwards.
pub(crate) fn shared_anonymous(len: usize) -> Result<Mapping, BackingError> {
    Mapping::new(
        len,
        libc::PROT_READ | libc::PROT_WRITE,
        libc::MAP_SHARED | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
        -1,
    )
}

/// Host CPUs the calling thread may run on, ascending (at least one).
pub fn allowed_cpus() -> Result<Vec<usize>, BackingError> {
    // SAFETY: an all-zero cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a writable cpu_set_t of the size passed.
    if unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) } != 0 {
        return Err(os_error("sched_getaffinity"));
    }
    // SAFETY: CPU_ISSET only reads the set, for CPUs below its capacity.
    let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect();
    if cpus.is_empty() {
        return Err(BackingError::Os {
            call: "sched_getaffinity",
            errno: libc::EINVAL,
        });
    }
    Ok(cpus)
}

/// Restricts the calling thread to the host CPUs `cpus` (sched_setaffinity).
pub fn pin_current_thread(cpus: &[usize]) -> Result<(), BackingError> {
    // SAFETY: an all-zero cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(BackingError::Os {
                call: "sched_setaffinity",
                errno: libc::EINVAL,
            });
        }
        // SAFETY: `cpu` is below the set's capacity (checked above).
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: `set` is a valid cpu_set_t of the size passed; it is only read.
    if unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) } != 0 {
        return Err(os_error("sched_setaffinity"));
    }
    Ok(())
}

/// Forks a child process that runs `child` pinned to host CPU `cpu` from its
/// first instruction, so its address space never runs anywhere else; the
/// calling thread's CPU set is restored in the parent. Returns the child's
/// pid. `child` runs in a copy of this address space in which only the
/// calling thread exists: it must not allocate, lock, panic or return into
/// the caller's code (the child exits when it returns).
pub(crate) fn fork_pinned(cpu: usize, child: impl FnOnce()) -> Result<i32, BackingError> {
    let saved = allowed_cpus()?;
    pin_current_thread(&[cpu])?;
    // SAFETY: fork duplicates the process; the child runs `child` only,
    // which by contract uses no lock or allocator state another thread of
    // the parent might have held at the fork, and never returns.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        child();
        exit_child(0);
    }
    let error = (pid < 0).then(|| os_error("fork"));
    pin_current_thread(&saved)?;
    match error {
        Some(error) => Err(error),
        None => Ok(pid),
    }
}

/// Ends a forked child at once, without running the parent's exit handlers.
pub(crate) fn exit_child(code: i32) -> ! {
    // SAFETY: _exit ends the process; nothing is unwound or flushed.
    unsafe { libc::_exit(code) }
}

/// Closes every descriptor of the calling (forked) process but `keep`, so
/// that a child holds no pipe or file of its parent open.
pub(crate) fn close_all_but(keep: i32) {
    // SAFETY: close_range closes descriptors of this process only; `keep` is
    // left open. Errors (an old kernel) leave descriptors open, harmlessly.
    unsafe {
        if keep > 0 {
            libc::syscall(libc::SYS_close_range, 0u32, (keep - 1) as u32, 0u32);
        }
        libc::syscall(libc::SYS_close_range, (keep + 1) as u32, u32::MAX, 0u32);
    }
}

/// The parent's pid of the calling process.
pub(crate) fn parent_pid() -> i32 {
    // SAFETY: getppid has no arguments and cannot fail.
    unsafe { libc::getppid() }
}

/// The calling process's pid.
pub(crate) fn own_pid() -> i32 {
    // SAFETY: getpid has no arguments and cannot fail.
    unsafe { libc::getpid() }
}

/// Sends SIGKILL to `pid` and reaps it.
pub(crate) fn kill_and_reap(pid: i32) {
    // SAFETY: signals and waits for a child this process forked; a child
    // already gone makes both calls fail harmlessly.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        libc::waitpid(pid, std::ptr::null_mut(), 0);
    }
}

/// True while child `pid` has not exited (a child that has is left for
/// [`kill_and_reap`] to reap).
pub(crate) fn child_alive(pid: i32) -> bool {
    // SAFETY: an all-zero siginfo_t is valid; waitid fills it.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let id = libc::id_t::try_from(pid).unwrap_or(0);
    let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
    // SAFETY: a non-blocking, non-reaping wait for one child of this
    // process; `info` is a writable siginfo_t.
    let result = unsafe { libc::waitid(libc::P_PID, id, &mut info, flags) };
    // SAFETY: waitid filled `info` (si_pid is 0 when no child has exited).
    result == 0 && unsafe { info.si_pid() } == 0
}

/// Sleeps while the shared word at `word` holds `expected`, at most
/// `timeout_ms`; returns false on timeout. Spurious wake-ups return true.
pub(crate) fn futex_wait(
    word: &std::sync::atomic::AtomicU32,
    expected: u32,
    timeout_ms: u64,
) -> bool {
    let timeout = libc::timespec {
        tv_sec: (timeout_ms / 1000) as libc::time_t,
        tv_nsec: ((timeout_ms % 1000) * 1_000_000) as libc::c_long,
    };
    // SAFETY: `word` is a live, aligned 32-bit word (in memory shared between
    // processes, hence no FUTEX_PRIVATE_FLAG); `timeout` outlives the call.
    let result = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            &timeout as *const libc::timespec,
            std::ptr::null::<u32>(),
            0u32,
        )
    };
    !(result != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ETIMEDOUT))
}

/// Wakes every process sleeping in [`futex_wait`] on `word`.
pub(crate) fn futex_wake(word: &std::sync::atomic::AtomicU32) {
    // SAFETY: `word` is a live, aligned 32-bit word; waking reads nothing else.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE,
            i32::MAX,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            0u32,
        )
    };
}

/// Minor and major faults the calling process has taken, all its threads
/// together (getrusage).
pub fn own_faults() -> (u64, u64) {
    // SAFETY: an all-zero rusage is valid; getrusage fills it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a writable rusage.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let count = |faults: libc::c_long| u64::try_from(faults).unwrap_or(0);
    (count(usage.ru_minflt), count(usage.ru_majflt))
}

/// The CPU time the calling thread has used (CLOCK_THREAD_CPUTIME_ID);
/// zero if the clock cannot be read.
pub fn own_thread_cpu_time() -> std::time::Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid, writable timespec; the clock id is a constant
    // every Linux supports.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) } != 0 {
        return std::time::Duration::ZERO;
    }
    let seconds = u64::try_from(now.tv_sec).unwrap_or(0);
    let nanos = u32::try_from(now.tv_nsec).unwrap_or(0);
    std::time::Duration::new(seconds, nanos)
}

/// Opens `path` for reading without waiting for a writer: a FIFO that no
/// one writes to reads as empty, where open() blocked for ever (deaf to
/// Ctrl-C); a pipe with a writer (`--config <(...)`) reads as usual. A
/// named FIFO must therefore have its writer open before the command opens
/// it: one that opens later is not waited for. Every input file of the
/// command goes through it (the lab as `files::open_input`).
pub fn open_input(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    // Reads wait for data again, as on a file opened plainly.
    // SAFETY: fcntl on a descriptor this function owns; F_GETFL and
    // F_SETFL have no other precondition.
    let cleared = unsafe {
        let flags = libc::fcntl(file.as_raw_fd(), libc::F_GETFL);
        flags >= 0 && libc::fcntl(file.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK) >= 0
    };
    if !cleared {
        return Err(std::io::Error::last_os_error());
    }
    Ok(file)
}

/// Online NUMA nodes of the host (/sys/devices/system/node/online), at least
/// one.
pub fn host_numa_nodes() -> usize {
    host_online_nodes().len()
}

/// The ids of the host's online NUMA nodes, ascending; `[0]` when the list
/// cannot be read or parsed.
pub(crate) fn host_online_nodes() -> Vec<u32> {
    std::fs::read_to_string("/sys/devices/system/node/online")
        .ok()
        .and_then(|list| parse_node_list(&list))
        .filter(|nodes| !nodes.is_empty())
        .unwrap_or_else(|| vec![0])
}

/// Parses a kernel node list such as `0`, `0-3` or `0,2-3`.
fn parse_node_list(list: &str) -> Option<Vec<u32>> {
    let mut nodes = Vec::new();
    for part in list.trim().split(',') {
        let (first, last): (u32, u32) = match part.split_once('-') {
            Some((first, last)) => (first.parse().ok()?, last.parse().ok()?),
            None => {
                let node = part.parse().ok()?;
                (node, node)
            }
        };
        if first > last {
            return None;
        }
        nodes.extend(first..=last);
    }
    Some(nodes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_lists_parse_as_the_kernel_writes_them() {
        assert_eq!(parse_node_list("0\n"), Some(vec![0]));
        assert_eq!(parse_node_list("0-3"), Some(vec![0, 1, 2, 3]));
        assert_eq!(parse_node_list("0,2-3"), Some(vec![0, 2, 3]));
        assert_eq!(parse_node_list("3-1"), None);
        assert_eq!(parse_node_list("x"), None);
        assert!(host_numa_nodes() >= 1);
    }

    #[test]
    fn positioned_io_moves_bytes_and_reports_errno() {
        let file = memfd(c"pageframe-os-test", 3 * 4096).unwrap();
        write_all_at(&file, b"through the file", 5000).unwrap();
        let mut out = [0u8; 16];
        read_exact_at(&file, &mut out, 5000).unwrap();
        assert_eq!(&out, b"through the file");
        // Two chunks of the zero page, across a page boundary.
        write_zeros_at(&file, 4999, 4096 + 2).unwrap();
        read_exact_at(&file, &mut out, 5000).unwrap();
        assert_eq!(out, [0; 16]);
        assert_eq!(
            read_exact_at(&file, &mut out, 3 * 4096 - 8),
            Err(BackingError::Os {
                call: "pread",
                errno: libc::EIO
            }),
            "short read at the end of the file"
        );
        assert_eq!(
            write_all_at(&file, b"x", u64::MAX),
            Err(BackingError::Os {
                call: "pwrite",
                errno: libc::EOVERFLOW
            })
        );
        let interrupted = std::cell::Cell::new(0);
        let result = transfer_all("pwrite", 10, 0, |done, _| {
            if interrupted.replace(interrupted.get() + 1) == 0 {
                // SAFETY: writes the calling thread's errno, nothing else.
                unsafe { *libc::__errno_location() = libc::EINTR };
                return -1;
            }
            (10 - done).min(3) as isize
        });
        assert_eq!(result, Ok(()));
        assert_eq!(interrupted.get(), 5, "one EINTR, then 3 + 3 + 3 + 1 bytes");
    }

    #[test]
    fn mapping_ranges_are_checked() {
        let mapping = Mapping::reserve(8192).unwrap();
        assert!(mapping.at(4096, 4096).is_ok());
        assert!(mapping.at(4096, 4097).is_err());
        assert!(mapping.at(usize::MAX, 2).is_err());
        assert!(mapping.protect(8192, 1, true).is_err());
    }
}
