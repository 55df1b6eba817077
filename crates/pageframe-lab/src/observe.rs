//! What a running experiment tells whoever runs it, without knowing who
//! that is: how far it has got ([`progress`]) and its machine at the end
//! ([`machine`], for `--proc`). Both are no-ops unless the caller installed
//! an observer with [`observed`], so experiments call them freely and tests
//! and benchmarks pay nothing.
//!
//! The observer is per thread: install it on the thread that calls the
//! experiment; calls from an experiment's worker threads are ignored.

use pageframe::LockFamily;
use pageframe::PageAllocator;
use std::cell::RefCell;

/// Receives an experiment's progress and, if views were asked for, the
/// kernel-format views of its machine.
pub struct Observer<'a> {
    /// Called with (steps done, steps in all).
    pub on_progress: Box<dyn FnMut(u64, u64) + 'a>,
    /// Views to render when the experiment shows its machine (names of
    /// `pageframe::proc::VIEWS`).
    pub views: Vec<&'static str>,
    /// The views rendered: (label of the machine, view, text). Each call of
    /// [`machine`] replaces what an earlier one left.
    pub rendered: Vec<(String, &'static str, String)>,
}

thread_local! {
    static CURRENT: RefCell<Option<Observer<'static>>> = const { RefCell::new(None) };
}

/// Runs `body` with `observer` installed on this thread; returns the body's
/// result and the views the experiment rendered.
pub fn observed<T>(
    observer: Observer<'static>,
    body: impl FnOnce() -> T,
) -> (T, Vec<(String, &'static str, String)>) {
    let previous = CURRENT.with(|current| current.borrow_mut().replace(observer));
    let result = body();
    let observer = CURRENT.with(|current| std::mem::replace(&mut *current.borrow_mut(), previous));
    (
        result,
        observer
            .map(|observer| observer.rendered)
            .unwrap_or_default(),
    )
}

/// Reports that `done` of `total` steps are done.
pub fn progress(done: u64, total: u64) {
    CURRENT.with(|current| {
        if let Ok(mut current) = current.try_borrow_mut() {
            if let Some(observer) = current.as_mut() {
                (observer.on_progress)(done, total);
            }
        }
    });
}

/// Shows the experiment's machine as it is now, under `label` (which of the
/// experiment's machines it is). Call it on the last machine of the run.
pub fn machine<L: LockFamily>(label: &str, allocator: &PageAllocator<L>) {
    CURRENT.with(|current| {
        if let Ok(mut current) = current.try_borrow_mut() {
            if let Some(observer) = current.as_mut() {
                observer.rendered = observer
                    .views
                    .iter()
                    .filter_map(|view| {
                        pageframe::proc::render(allocator, view)
                            .map(|text| (label.to_string(), *view, text))
                    })
                    .collect();
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;

    #[test]
    fn progress_and_views_reach_the_observer_only_while_installed() {
        progress(1, 2);
        let seen = Arc::new(AtomicU64::new(0));
        let counter = Arc::clone(&seen);
        let machine_desc = pageframe::MachineDesc::uniform(64 << 20, 1, 1).unwrap();
        let allocator = pageframe::LocalPageAllocator::boot(&machine_desc).unwrap();
        let ((), views) = observed(
            Observer {
                on_progress: Box::new(move |done, _| counter.store(done, Ordering::Relaxed)),
                views: vec!["buddyinfo"],
                rendered: Vec::new(),
            },
            || {
                progress(3, 4);
                machine("test machine", &allocator);
            },
        );
        assert_eq!(seen.load(Ordering::Relaxed), 3);
        assert_eq!(views.len(), 1);
        assert_eq!(views[0].1, "buddyinfo");
        assert!(views[0].2.starts_with("Node 0, zone"), "{}", views[0].2);
        progress(4, 4);
        assert_eq!(seen.load(Ordering::Relaxed), 3);
    }
}
