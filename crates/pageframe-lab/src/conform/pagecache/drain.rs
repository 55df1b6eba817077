//! Reading a case's cgroup exactly. New and activated pages wait in
//! per-CPU batches before they reach the LRU lists, so every CPU's batches
//! are drained (`drain_all_cpus`). And a cgroup's statistics are flushed to
//! `memory.stat` only after enough updates, so before that a short-lived
//! "drainer" process runs in the case's cgroup, pinned to the worker's CPU,
//! and faults and frees [`DRAIN_PAGES`] anonymous pages: they come and go
//! within it, and their updates pass the flush threshold.

use super::memcg::Memcg;
use crate::conform::process::{close, kernel_error, pin, pipe, read_exact, write_exact};
use crate::conform::ConformError;
use crate::host_anon::{map_private_pages, touch_pages};

/// Anonymous pages a drainer faults and frees.
pub(super) const DRAIN_PAGES: usize = 256;

/// Forks a drainer: it joins `memcg`, is pinned to `cpu`, faults and
/// frees [`DRAIN_PAGES`] anonymous pages and exits; returns when it has.
pub(super) fn drain(memcg: &Memcg, cpu: usize) -> Result<(), ConformError> {
    let (go_read, go_write) = pipe()?;
    // SAFETY: the child waits for one byte, maps and touches memory with
    // raw system calls, and leaves with _exit.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(kernel_error("fork"));
    }
    if pid == 0 {
        close(go_write);
        let mut byte = [0u8; 1];
        if read_exact(go_read, &mut byte) {
            if let Some(map) = map_private_pages(DRAIN_PAGES) {
                // SAFETY: the mapping just made has DRAIN_PAGES pages.
                unsafe { touch_pages(map, DRAIN_PAGES) };
            }
        }
        // SAFETY: leaves without the parent's atexit handlers.
        unsafe { libc::_exit(0) };
    }
    close(go_read);
    let placed = memcg.attach(pid).and_then(|()| pin(pid, cpu));
    if placed.is_ok() {
        write_exact(go_write, &[1]);
    }
    close(go_write);
    let mut status = 0;
    // SAFETY: waits for the child forked above.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    placed?;
    drain_all_cpus()
}

/// Drains every CPU's LRU batches (lru_add_drain_all()): a
/// migrate_pages(2) of this process from the first online node to itself
/// moves no page, but do_migrate_pages() first disables the batches
/// (lru_cache_disable()), which drains them all — the activations
/// included, which an exit leaves in its CPU's batch on this kernel.
fn drain_all_cpus() -> Result<(), ConformError> {
    let online = crate::conform::host::read("/sys/devices/system/node/online")?;
    let node: usize = online
        .trim()
        .split([',', '-'])
        .next()
        .and_then(|first| first.parse().ok())
        .filter(|&node| node < 64)
        .ok_or_else(|| ConformError::Host(format!("node/online: '{}'", online.trim())))?;
    let mask: [libc::c_ulong; 1] = [1 << node];
    // SAFETY: both node masks are one word, and `maxnode` says 64 bits.
    let done = unsafe {
        libc::syscall(
            libc::SYS_migrate_pages,
            0,
            64 as libc::c_ulong,
            mask.as_ptr(),
            mask.as_ptr(),
        )
    };
    if done < 0 {
        return Err(kernel_error("migrate_pages (to drain the LRU batches)"));
    }
    Ok(())
}
