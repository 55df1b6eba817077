//! The arena's mermap agents: the user-space counterpart of the series'
//! mm-local region. A CPU's mermap window must live in an address space
//! that only that CPU runs, so that mapping a slot interrupts nobody and a
//! wrap flushes only locally. In user space every thread of a process shares
//! one address space, and changing a mapping in it shoots down the TLB of
//! every CPU running one of its threads; so the windows live in separate
//! processes instead, forked at arena creation, each pinned to one host CPU
//! from its first instruction (its address space never runs anywhere else).
//!
//! An agent maps the arena's memfd once, whole, with no entry written (a
//! [`SlotView`]). A slot map writes the page-table entries of the slot's
//! pages (`UFFDIO_CONTINUE`, no fault; `MADV_POPULATE_WRITE` where
//! userfaultfd is missing; the maps of a batch of requests up to the next
//! flush are merged into runs of adjacent pages, one call per run); a flush
//! of slots drops them (`MADV_DONTNEED` over each run of adjacent slot
//! pages, which flushes the TLB of the one CPU that ran the agent: a local
//! flush), except pages another live slot still maps. Between the two,
//! zeroing and copying go through the agent's view. A page is thus
//! reachable in an agent only while it is in a live slot of one of its
//! windows, as in a mermap window; touching any other page of the view is a
//! `SIGBUS` (with userfaultfd), which the poster sees as the agent's death.
//!
//! Requests travel through a ring per window in memory shared with the
//! agent: map, zero, write (the bytes ride in the ring), read (the bytes come
//! back in the ring) and flush. Posting does not wake the agent: the poster
//! wakes it only when the ring is full or it must see the results (a read,
//! a drain), so a populate loop posts a ring's worth of pages and then
//! switches to the agent once, on the same CPU. Results are complete when
//! [`WindowAgents::drain_all`] returns; the arena drains before any access
//! that could observe the pages by another path, and before a post to a
//! window other than the last one posted to, so requests take effect in the
//! order they were posted, across windows too. An agent's failure is
//! recorded in its window and returned by the next post or drain there.
//!
//! Invariants, per window: `tail <= head <= tail + RING_ENTRIES` (wrapping
//! counters); entries `tail..head` are posted and not yet done; only the
//! agent advances `tail`, only the thread holding the window's mermap lock
//! advances `head`; an entry's bytes are not reused before `tail` passes it.
//!
//! Lock order: none of its own; posting happens under the caller's window
//! lock, draining under none.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

use super::os::{
    allowed_cpus, child_alive, close_all_but, exit_child, fork_pinned, futex_wait, futex_wake,
    kill_and_reap, own_faults, own_pid, parent_pid, shared_anonymous, Mapping, SlotView,
};
use super::BackingError;

/// Requests each window's ring holds.
const RING_ENTRIES: u32 = 512;
/// How long a sleeper waits before checking on its peer, ms.
const PEER_CHECK_MS: u64 = 200;
/// Bytes of an agent's header and of a window's two header lines.
const LINE: usize = 64;
/// Bytes per ring entry: three words (op and slot, offset, length).
const ENTRY_BYTES: usize = 24;
/// `pending_window` when no window was posted to yet.
const NO_WINDOW: usize = usize::MAX;

/// What an entry asks.
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
enum Op {
    Map = 1,
    Zero = 2,
    Write = 3,
    Read = 4,
    Flush = 5,
}

impl Op {
    fn from_word(word: u32) -> Option<Op> {
        [Op::Map, Op::Zero, Op::Write, Op::Read, Op::Flush]
            .into_iter()
            .find(|op| *op as u32 == word)
    }
}

/// Where things are in the shared memory: per agent a line (doorbell at 0,
/// syscalls at 8, minor faults at 16); per window a line with `head` and
/// the error word, a line with `tail`, the entries, a page of bytes per
/// entry, and the agent's slot table (first byte and length per slot).
#[derive(Clone, Copy, Debug)]
struct RingView {
    base: *mut u8,
    page_size: usize,
    window_slots: usize,
    nr_windows: usize,
    nr_agents: usize,
}

// SAFETY: a `RingView` is the address of shared memory that lives as long
// as its owner (`WindowAgents`, or the agent process); every access through
// it is an atomic or is ordered by the ring's head and tail as the module
// documentation states.
unsafe impl Send for RingView {}
// SAFETY: see `Send`.
unsafe impl Sync for RingView {}

impl RingView {
    fn entries_start() -> usize {
        2 * LINE
    }

    fn data_start(&self) -> usize {
        (Self::entries_start() + RING_ENTRIES as usize * ENTRY_BYTES).next_multiple_of(LINE)
    }

    fn slots_start(&self) -> usize {
        self.data_start() + RING_ENTRIES as usize * self.page_size
    }

    fn window_bytes(&self) -> usize {
        (self.slots_start() + self.window_slots * 16).next_multiple_of(LINE)
    }

    fn len(&self) -> usize {
        self.nr_agents * LINE + self.nr_windows * self.window_bytes()
    }

    fn window(&self, window: usize) -> usize {
        self.nr_agents * LINE + window * self.window_bytes()
    }

    /// The shared memory at byte `offset`, which the layout keeps inside.
    fn at(&self, offset: usize) -> *mut u8 {
        // SAFETY: every offset the methods compute lies inside the `len()`
        // bytes of shared memory `base` starts.
        unsafe { self.base.add(offset) }
    }

    fn word32(&self, offset: usize) -> &AtomicU32 {
        // SAFETY: the offset is 4-byte aligned inside the shared memory,
        // which outlives `self`'s owner; it is only accessed atomically.
        unsafe { &*self.at(offset).cast::<AtomicU32>() }
    }

    fn word64(&self, offset: usize) -> &AtomicU64 {
        // SAFETY: as in `word32`, 8-byte aligned.
        unsafe { &*self.at(offset).cast::<AtomicU64>() }
    }

    fn doorbell(&self, agent: usize) -> &AtomicU32 {
        self.word32(agent * LINE)
    }

    fn agent_syscalls(&self, agent: usize) -> &AtomicU64 {
        self.word64(agent * LINE + 8)
    }

    fn agent_faults(&self, agent: usize) -> &AtomicU64 {
        self.word64(agent * LINE + 16)
    }

    fn head(&self, window: usize) -> &AtomicU32 {
        self.word32(self.window(window))
    }

    fn error(&self, window: usize) -> &AtomicU32 {
        self.word32(self.window(window) + 4)
    }

    fn tail(&self, window: usize) -> &AtomicU32 {
        self.word32(self.window(window) + LINE)
    }

    fn entry(&self, window: usize, index: u32) -> *mut u64 {
        let at = (index % RING_ENTRIES) as usize * ENTRY_BYTES;
        self.at(self.window(window) + Self::entries_start() + at)
            .cast()
    }

    /// The page of bytes of entry `index`.
    fn data(&self, window: usize, index: u32) -> *mut u8 {
        let at = (index % RING_ENTRIES) as usize * self.page_size;
        self.at(self.window(window) + self.data_start() + at)
    }

    fn slot(&self, window: usize, slot: usize) -> *mut u64 {
        self.at(self.window(window) + self.slots_start() + slot * 16)
            .cast()
    }
}

/// Events the agents add to a backing's counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct AgentCounts {
    /// System calls made for the mermap: futex waits and wakes of posters
    /// and agents, the agents' entry-writing (`ioctl` or `madvise`),
    /// entry-dropping (`madvise`) and getrusage calls.
    pub(crate) syscalls: u64,
    /// Minor faults the agents took (one per page installed on the
    /// `MADV_POPULATE_WRITE` fallback, none with userfaultfd).
    pub(crate) minor_faults: u64,
}

/// The mermap agents of one arena and their rings. Dropping it kills them.
#[derive(Debug)]
pub(crate) struct WindowAgents {
    ring: RingView,
    /// The shared memory `ring` points into.
    _shared: Mapping,
    /// `(pid, host CPU)` of each agent; window `w` is served by agent
    /// `w % agents.len()`.
    agents: Vec<(i32, usize)>,
    /// The window posted to last (`NO_WINDOW` at first).
    pending_window: AtomicUsize,
    /// System calls posters made (futex waits and wakes).
    syscalls: AtomicU64,
}

impl WindowAgents {
    /// Forks one agent per host CPU this thread may run on, up to one per
    /// window, each pinned to its CPU, mapping `file_len` bytes of `file`;
    /// windows of `window_slots` slots, pages of `page_size` bytes.
    pub(crate) fn spawn(
        file: &OwnedFd,
        file_len: usize,
        page_size: usize,
        nr_windows: usize,
        window_slots: usize,
    ) -> Result<WindowAgents, BackingError> {
        let host_cpus = allowed_cpus()?;
        let nr_agents = nr_windows.min(host_cpus.len()).max(1);
        let mut ring = RingView {
            base: std::ptr::null_mut(),
            page_size,
            window_slots,
            nr_windows,
            nr_agents,
        };
        let shared = shared_anonymous(ring.len())?;
        ring.base = shared.start().as_ptr();
        let mut agents = WindowAgents {
            ring,
            _shared: shared,
            agents: Vec::with_capacity(nr_agents),
            pending_window: AtomicUsize::new(NO_WINDOW),
            syscalls: AtomicU64::new(0),
        };
        let (parent, fd) = (own_pid(), file.as_raw_fd());
        for (agent, &cpu) in host_cpus.iter().enumerate().take(nr_agents) {
            let pid = fork_pinned(cpu, || agent_main(ring, agent, fd, file_len, parent))?;
            agents.agents.push((pid, cpu));
        }
        Ok(agents)
    }

    /// The host CPU of each agent.
    pub(crate) fn host_cpus(&self) -> Vec<usize> {
        self.agents.iter().map(|&(_, cpu)| cpu).collect()
    }

    /// What the agents and their posters have counted so far.
    pub(crate) fn counts(&self) -> AgentCounts {
        let mut counts = AgentCounts {
            syscalls: self.syscalls.load(Ordering::Relaxed),
            minor_faults: 0,
        };
        for agent in 0..self.agents.len() {
            counts.syscalls += self.ring.agent_syscalls(agent).load(Ordering::Relaxed);
            counts.minor_faults += self.ring.agent_faults(agent).load(Ordering::Relaxed);
        }
        counts
    }

    /// Maps `len` bytes of the file from `offset` into slot `slot` of
    /// `window` (installs their page-table entries in the agent).
    pub(crate) fn map(
        &self,
        window: usize,
        slot: u32,
        offset: u64,
        len: usize,
    ) -> Result<(), BackingError> {
        self.post(window, Op::Map, slot, offset, len as u64, None)
            .map(drop)
    }

    /// Zeroes `len` bytes of the file from `offset`, in a live slot.
    pub(crate) fn zero(&self, window: usize, offset: u64, len: usize) -> Result<(), BackingError> {
        self.post(window, Op::Zero, 0, offset, len as u64, None)
            .map(drop)
    }

    /// Copies `bytes` to the file at `offset`, in a live slot's page.
    pub(crate) fn write(
        &self,
        window: usize,
        offset: u64,
        bytes: &[u8],
    ) -> Result<(), BackingError> {
        self.post(
            window,
            Op::Write,
            0,
            offset,
            bytes.len() as u64,
            Some(bytes),
        )
        .map(drop)
    }

    /// Copies the file's bytes at `offset`, in a live slot's page, into
    /// `out`, once every earlier request of every window is done.
    pub(crate) fn read(
        &self,
        window: usize,
        offset: u64,
        out: &mut [u8],
    ) -> Result<(), BackingError> {
        self.drain_all()?;
        let index = self.post(window, Op::Read, 0, offset, out.len() as u64, None)?;
        self.drain(window)?;
        // SAFETY: the agent filled `out.len() <= page_size` bytes of the
        // entry's page before passing `tail` over it (acquired by `drain`),
        // and nobody posts to this window before the caller releases its
        // window lock, so the bytes are not reused while they are copied.
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.ring.data(window, index),
                out.as_mut_ptr(),
                out.len(),
            )
        };
        Ok(())
    }

    /// Drops slots `first..first + count` of `window` (a local flush).
    pub(crate) fn flush(&self, window: usize, first: u32, count: u32) -> Result<(), BackingError> {
        self.post(window, Op::Flush, first, 0, u64::from(count), None)
            .map(drop)
    }

    /// Waits until every request posted so far is done.
    pub(crate) fn drain_all(&self) -> Result<(), BackingError> {
        for window in 0..self.ring.nr_windows {
            let (head, tail) = (self.ring.head(window), self.ring.tail(window));
            if head.load(Ordering::Relaxed) != tail.load(Ordering::Acquire) {
                self.drain(window)?;
            }
            self.take_error(window)?;
        }
        Ok(())
    }

    fn drain(&self, window: usize) -> Result<(), BackingError> {
        let head = self.ring.head(window).load(Ordering::Acquire);
        // Another thread may post meanwhile: `tail` reaching or passing the
        // head seen here (wrapping counters) is what counts.
        self.wait_tail(window, |tail| tail.wrapping_sub(head) as i32 >= 0)
    }

    /// Posts one request to `window`'s ring (waking its agent only when the
    /// ring is full); returns its index.
    fn post(
        &self,
        window: usize,
        op: Op,
        slot: u32,
        offset: u64,
        len: u64,
        bytes: Option<&[u8]>,
    ) -> Result<u32, BackingError> {
        let bytes_op = matches!(op, Op::Zero | Op::Write | Op::Read);
        if window >= self.ring.nr_windows || bytes_op && len > self.ring.page_size as u64 {
            return Err(BackingError::Os {
                call: "mermap agent",
                errno: libc::EINVAL,
            });
        }
        let previous = self.pending_window.swap(window, Ordering::AcqRel);
        if previous != window && previous != NO_WINDOW {
            self.drain(previous)?;
        }
        let head = self.ring.head(window).load(Ordering::Relaxed);
        self.wait_tail(window, |tail| head.wrapping_sub(tail) < RING_ENTRIES)?;
        let entry = self.ring.entry(window, head);
        // SAFETY: entry `head` lies in the ring and is free (`tail` passed
        // it a whole ring ago); only this poster, holding the window lock,
        // writes it, and the agent reads it after the release store below.
        unsafe {
            entry.write(u64::from(op as u32) | u64::from(slot) << 32);
            entry.add(1).write(offset);
            entry.add(2).write(len);
        }
        if let Some(bytes) = bytes {
            // SAFETY: `bytes.len() <= page_size` (checked above) bytes of
            // the entry's free page, which `bytes` (caller memory) cannot
            // overlap; published by the release store below.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    bytes.as_ptr(),
                    self.ring.data(window, head),
                    bytes.len(),
                )
            };
        }
        self.ring
            .head(window)
            .store(head.wrapping_add(1), Ordering::Release);
        Ok(head)
    }

    /// Returns once `done(tail)` holds for `window`, waking its agent and
    /// sleeping meanwhile; fails if the agent recorded an error or died.
    fn wait_tail(&self, window: usize, done: impl Fn(u32) -> bool) -> Result<(), BackingError> {
        let (pid, _) = self.agents[window % self.agents.len()];
        loop {
            let tail = self.ring.tail(window).load(Ordering::Acquire);
            self.take_error(window)?;
            if done(tail) {
                return Ok(());
            }
            let doorbell = self.ring.doorbell(window % self.agents.len());
            doorbell.fetch_add(1, Ordering::Release);
            futex_wake(doorbell);
            let woken = futex_wait(self.ring.tail(window), tail, PEER_CHECK_MS);
            self.syscalls.fetch_add(2, Ordering::Relaxed);
            if !woken && !child_alive(pid) {
                return Err(BackingError::Os {
                    call: "mermap agent",
                    errno: libc::ESRCH,
                });
            }
        }
    }

    fn take_error(&self, window: usize) -> Result<(), BackingError> {
        match self.ring.error(window).swap(0, Ordering::Acquire) {
            0 => Ok(()),
            errno => Err(BackingError::Os {
                call: "mermap agent",
                errno: errno as i32,
            }),
        }
    }
}

impl Drop for WindowAgents {
    fn drop(&mut self) {
        for &(pid, _) in &self.agents {
            kill_and_reap(pid);
        }
    }
}

/// An agent's life, in the forked child: close the parent's descriptors
/// but the memfd, map it, then serve its windows' rings until the parent is
/// gone. Allocates nothing, takes no lock, never returns.
fn agent_main(ring: RingView, agent: usize, fd: i32, file_len: usize, parent: i32) -> ! {
    close_all_but(fd);
    let Ok(view) = SlotView::new(fd, file_len, ring.page_size) else {
        exit_child(1)
    };
    let doorbell = ring.doorbell(agent);
    loop {
        let seen = doorbell.load(Ordering::Acquire);
        let mut worked = false;
        let mut window = agent;
        while window < ring.nr_windows {
            worked |= serve(&ring, agent, window, &view);
            window += ring.nr_agents;
        }
        if worked {
            ring.agent_faults(agent)
                .store(own_faults().0, Ordering::Relaxed);
            ring.agent_syscalls(agent).fetch_add(1, Ordering::Relaxed);
            continue;
        }
        let woken = futex_wait(doorbell, seen, PEER_CHECK_MS);
        ring.agent_syscalls(agent).fetch_add(1, Ordering::Relaxed);
        if !woken && parent_pid() != parent {
            exit_child(0);
        }
    }
}

/// Does every posted request of `window`; false when there was none. The
/// requests are taken in segments that end at a flush: first the slot maps
/// of the segment, their pages merged into runs of adjacent pages with one
/// entry-writing call each (the page-table entries written in a batch),
/// then its accesses in order, then the flush.
fn serve(ring: &RingView, agent: usize, window: usize, view: &SlotView) -> bool {
    let head = ring.head(window).load(Ordering::Acquire);
    let mut tail = ring.tail(window).load(Ordering::Relaxed);
    if head == tail {
        return false;
    }
    let fail = |errno: i32| ring.error(window).store(errno as u32, Ordering::Release);
    while tail != head {
        let mut end = tail;
        let mut run: Option<(usize, usize)> = None;
        while end != head {
            let (op, slot, offset, len) = read_entry(ring, window, end);
            match op {
                Some(Op::Flush) => break,
                Some(Op::Map) => match record_slot(ring, window, slot, offset, len) {
                    Ok((start, bytes)) => {
                        run = extend_run(ring, agent, view, run, start, bytes, true).unwrap_or_else(
                            |errno| {
                                fail(errno);
                                None
                            },
                        )
                    }
                    Err(errno) => fail(errno),
                },
                _ => {}
            }
            end = end.wrapping_add(1);
        }
        if let Err(errno) = finish_run(ring, agent, view, run, true) {
            fail(errno);
        }
        while tail != end {
            let (op, _, offset, len) = read_entry(ring, window, tail);
            match op {
                Some(Op::Map) => {}
                Some(op) => {
                    if let Err(errno) = access(ring, window, view, tail, op, offset, len) {
                        fail(errno);
                    }
                }
                None => fail(libc::EINVAL),
            }
            tail = tail.wrapping_add(1);
        }
        if tail != head {
            let (_, slot, _, count) = read_entry(ring, window, tail);
            if let Err(errno) = flush(ring, agent, window, view, slot, count) {
                fail(errno);
            }
            tail = tail.wrapping_add(1);
        }
    }
    ring.tail(window).store(tail, Ordering::Release);
    futex_wake(ring.tail(window));
    ring.agent_syscalls(agent).fetch_add(1, Ordering::Relaxed);
    true
}

/// Entry `index` of `window`: its op, slot, offset and length.
fn read_entry(ring: &RingView, window: usize, index: u32) -> (Option<Op>, usize, u64, u64) {
    let entry = ring.entry(window, index);
    // SAFETY: entries `tail..head` were written before the release store of
    // `head` the agent acquired, and their poster leaves them alone until
    // `tail` passes them.
    let (word, offset, len) = unsafe { (entry.read(), entry.add(1).read(), entry.add(2).read()) };
    (
        Op::from_word(word as u32),
        (word >> 32) as usize,
        offset,
        len,
    )
}

/// Records that slot `slot` of `window` maps `len` bytes from `offset`;
/// returns them as a byte range of the agent's view.
fn record_slot(
    ring: &RingView,
    window: usize,
    slot: usize,
    offset: u64,
    len: u64,
) -> Result<(usize, usize), i32> {
    let start = usize::try_from(offset).map_err(|_| libc::EINVAL)?;
    let bytes = usize::try_from(len).map_err(|_| libc::EINVAL)?;
    if slot >= ring.window_slots {
        return Err(libc::EINVAL);
    }
    let record = ring.slot(window, slot);
    // SAFETY: the slot table belongs to this agent alone.
    unsafe {
        record.write(offset);
        record.add(1).write(len);
    }
    Ok((start, bytes))
}

/// Adds `start..start + bytes` to `run` when it overlaps or touches it;
/// otherwise applies `run` (populate or drop its page-table entries) and
/// starts a new one.
fn extend_run(
    ring: &RingView,
    agent: usize,
    view: &SlotView,
    run: Option<(usize, usize)>,
    start: usize,
    bytes: usize,
    populate: bool,
) -> Result<Option<(usize, usize)>, i32> {
    let end = start.checked_add(bytes).ok_or(libc::EINVAL)?;
    match run {
        Some((first, run_end)) if start <= run_end && end >= first => {
            Ok(Some((first.min(start), run_end.max(end))))
        }
        _ => {
            finish_run(ring, agent, view, run, populate)?;
            Ok(Some((start, end)))
        }
    }
}

/// Applies `run`, if any: one call writing or dropping its entries.
fn finish_run(
    ring: &RingView,
    agent: usize,
    view: &SlotView,
    run: Option<(usize, usize)>,
    populate: bool,
) -> Result<(), i32> {
    match run {
        Some((first, end)) => {
            ring.agent_syscalls(agent).fetch_add(1, Ordering::Relaxed);
            if populate {
                view.write_entries(first, end - first)
            } else {
                view.drop_entries(first, end - first)
            }
        }
        None => Ok(()),
    }
}

/// Drops slots `first..first + count` of `window`: their page-table
/// entries, one `MADV_DONTNEED` per run of adjacent pages (a local flush).
/// A slot whose pages another live slot of the window also maps (the
/// reserved slot's page inside a live span) keeps its entries: they share
/// them here, and the other slot's flush drops them.
fn flush(
    ring: &RingView,
    agent: usize,
    window: usize,
    view: &SlotView,
    first: usize,
    count: u64,
) -> Result<(), i32> {
    let count = usize::try_from(count).map_err(|_| libc::EINVAL)?;
    let end = first
        .checked_add(count)
        .filter(|&end| end <= ring.window_slots)
        .ok_or(libc::EINVAL)?;
    let live = |slot: usize| {
        let record = ring.slot(window, slot);
        // SAFETY: the slot table belongs to this agent alone.
        unsafe { (record.read() as usize, record.add(1).read() as usize) }
    };
    // Only the slots outside the flushed ones can share a page: for a
    // whole window's wrap that is the reserved slot alone.
    let shared = |start: usize, bytes: usize| {
        (0..first)
            .chain(end..ring.window_slots)
            .map(live)
            .any(|(other, other_bytes)| {
                other_bytes > 0
                    && other < start.saturating_add(bytes)
                    && start < other.saturating_add(other_bytes)
            })
    };
    let mut run = None;
    for slot in first..end {
        let (start, bytes) = live(slot);
        // SAFETY: the slot table belongs to this agent alone.
        unsafe { ring.slot(window, slot).add(1).write(0) };
        if bytes > 0 && !shared(start, bytes) {
            run = extend_run(ring, agent, view, run, start, bytes, false)?;
        }
    }
    finish_run(ring, agent, view, run, false)
}

/// Zeroes, writes or reads `len` bytes of the agent's view at `offset`,
/// through the bytes of entry `index`; the errno on failure.
fn access(
    ring: &RingView,
    window: usize,
    view: &SlotView,
    index: u32,
    op: Op,
    offset: u64,
    len: u64,
) -> Result<(), i32> {
    let offset = usize::try_from(offset).map_err(|_| libc::EINVAL)?;
    let len = usize::try_from(len).map_err(|_| libc::EINVAL)?;
    let page = view.at(offset, len).map_err(|_| libc::EINVAL)?.as_ptr();
    let data = ring.data(window, index);
    // SAFETY: `page` starts `len` bytes of the agent's mapping of the file
    // (checked by `at`); `data` is the entry's page of bytes, `len <=
    // page_size` (checked by the poster), which the poster leaves alone
    // until `tail` passes the entry; the two cannot overlap (one is the
    // file's mapping, the other the ring).
    unsafe {
        match op {
            Op::Zero => std::ptr::write_bytes(page, 0, len),
            Op::Write => std::ptr::copy_nonoverlapping(data, page, len),
            Op::Read => std::ptr::copy_nonoverlapping(page, data, len),
            Op::Map | Op::Flush => return Err(libc::EINVAL),
        }
    }
    Ok(())
}
