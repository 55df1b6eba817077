//! One thread of a `scaling` measurement: pinned to its own core, it warms
//! up, waits for the others, then runs its timed share of a pattern and
//! reports the window it ran in and the CPU time it used.
//!
//! What the harness itself does must not be what is measured. Three
//! choices keep it out of the figures; pinning and the hand-off buffers
//! were each seen to hold two remote-free threads to one thread's rate on
//! a 2-core VM:
//! - **Pinning.** Threads that hand pages to each other through a blocking
//!   channel were woken onto the waker's core by the scheduler and then took
//!   turns on one core (each thread on the run queue for a third of the
//!   window). A registered CPU is a CPU: thread `i` runs on the `i`-th
//!   allowed core, as CPU `i`'s code runs on CPU `i` in the kernel.
//! - **Steady state only.** Each thread first runs a warm-up (first refills
//!   of the per-CPU lists from the buddy lists, hand-off buffers allocated,
//!   threads started and pinned); the window opens after a barrier that all
//!   threads pass once warm, and each thread's window closes when its own
//!   last page is freed.
//! - **Hand-off buffers.** Pages are allocated into a thread-local array and
//!   copied into the hand-off buffer in one pass, and a received buffer is
//!   reused for the thread's next hand-off. Writing each page into a buffer
//!   whose lines the other core holds, between the allocator's locked
//!   operations (the pcp lock), exposed one cross-core transfer per 8 pages
//!   to the allocation loop: 23 ns per allocation instead of 7.5 when the
//!   two vCPUs sat far apart on the host. The per-page traffic that remains
//!   (the freeing CPU reads and claims the page's memmap record) is the
//!   allocator's own, as a remote `free_unref_page()` touches the page's
//!   `struct page`.

use pageframe::backing::{own_thread_cpu_time, pin_current_thread};
use pageframe::{CpuHandle, Gfp, NodeId, Order, Page, SharedPageAllocator};
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::{Arc, Barrier};
use std::time::Instant;

/// Pages a thread hands to its neighbour at a time in `remote-free`.
pub const HANDOFF: usize = 1024;
/// Hand-offs a thread may have sent ahead of those it received back in
/// `remote-free`, so that a thread finds its neighbour's pages waiting
/// rather than sleeping on the channel until they come: the pattern
/// measures the allocator's cross-CPU frees, not the threads' wake-ups.
/// At most the channel's capacity, so that a send never blocks.
pub const HANDOFFS_AHEAD: usize = 2;
/// Hand-offs a channel holds.
pub const CHANNEL_CAPACITY: usize = 8;
/// Pages each thread allocates and frees before the timed window, in whole
/// hand-offs.
pub const WARMUP_PAGES: usize = 8 * HANDOFF;

/// The access pattern of a measurement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// Each thread frees what it allocated: the per-CPU fast path.
    Local,
    /// Each thread frees what the previous thread allocated.
    RemoteFree,
}

impl Pattern {
    /// The name in the rows.
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Local => "local",
            Pattern::RemoteFree => "remote-free",
        }
    }
}

/// A thread's timed window.
pub struct Window {
    /// When the thread started its timed pages.
    pub start: Instant,
    /// When it freed its last one.
    pub end: Instant,
    /// CPU time the thread used in the window, in seconds.
    pub cpu_seconds: f64,
}

/// What one thread needs: its CPU, the core it runs on, and its two ends of
/// the hand-off ring.
pub struct Worker {
    /// The thread's registered CPU.
    pub handle: CpuHandle<Arc<SharedPageAllocator>, pageframe::Shared>,
    /// The host core it is pinned to.
    pub core: usize,
    /// Where its neighbour's hand-offs arrive.
    pub receiver: Receiver<Vec<Page>>,
    /// Where its own hand-offs go.
    pub next: SyncSender<Vec<Page>>,
}

impl Worker {
    /// Runs the thread: pin, warm up, wait at `barrier`, then `pages` timed
    /// pages of `pattern`.
    pub fn run(
        mut self,
        pattern: Pattern,
        pages: usize,
        barrier: &Barrier,
    ) -> Result<Window, String> {
        pin_current_thread(&[self.core]).map_err(|err| err.to_string())?;
        let mut state = HandOffs::default();
        self.pages(pattern, WARMUP_PAGES, &mut state)?;
        barrier.wait();
        let cpu_before = own_thread_cpu_time();
        let start = Instant::now();
        self.pages(pattern, pages, &mut state)?;
        let end = Instant::now();
        Ok(Window {
            start,
            end,
            cpu_seconds: own_thread_cpu_time()
                .saturating_sub(cpu_before)
                .as_secs_f64(),
        })
    }

    fn pages(
        &mut self,
        pattern: Pattern,
        pages: usize,
        state: &mut HandOffs,
    ) -> Result<(), String> {
        match pattern {
            Pattern::Local => self.local(pages),
            Pattern::RemoteFree => self.remote_free(pages, state),
        }
    }

    // Inlined into the loops, as the allocator's fast paths are meant to be
    // inlined into their callers: a call per page would be measured too.
    #[inline(always)]
    fn alloc(&self) -> Result<Page, String> {
        self.handle
            .alloc_pages(Gfp::KERNEL, Order(0), NodeId(0))
            .map_err(|err| err.to_string())
    }

    #[inline(always)]
    fn free(&self, page: Page) -> Result<(), String> {
        self.handle
            .free_pages(page, Order(0))
            .map_err(|err| err.to_string())
    }

    fn local(&self, pages: usize) -> Result<(), String> {
        for _ in 0..pages {
            self.free(self.alloc()?)?;
        }
        Ok(())
    }

    /// `pages` pages (whole hand-offs) allocated here and sent on, and as
    /// many received from the previous thread and freed here. Ends with
    /// nothing in flight, so that the next phase starts level.
    fn remote_free(&mut self, pages: usize, state: &mut HandOffs) -> Result<(), String> {
        let mut sent = 0;
        let mut received = 0;
        while received < pages {
            while sent < pages && sent < received + HANDOFFS_AHEAD * HANDOFF {
                state.refill.clear();
                for _ in 0..HANDOFF {
                    let page = self.alloc()?;
                    state.refill.push(page);
                }
                let mut batch = state
                    .spare
                    .pop()
                    .unwrap_or_else(|| Vec::with_capacity(HANDOFF));
                batch.extend_from_slice(&state.refill);
                self.next.send(batch).map_err(|err| err.to_string())?;
                sent += HANDOFF;
            }
            let mut batch = self.receiver.recv().map_err(|err| err.to_string())?;
            received += batch.len();
            for page in batch.drain(..) {
                self.free(page)?;
            }
            state.spare.push(batch);
        }
        Ok(())
    }
}

/// A thread's hand-off buffers, kept across its phases.
#[derive(Default)]
struct HandOffs {
    /// The pages of the hand-off being allocated.
    refill: Vec<Page>,
    /// Emptied buffers received, reused for the next hand-offs.
    spare: Vec<Vec<Page>>,
}
