//! Independent jobs of one experiment on up to `RunOptions::threads`
//! threads: [`map_in_order`]. Each job must be deterministic on its own
//! (its own machine, its own seeded RNG), so the results are the same on
//! any number of threads; only the wall time changes.
//!
//! The calling thread works too, and is the one that reports progress
//! (`observe` ignores worker threads): it always runs the first item, so
//! an experiment puts first the job whose progress and machine the
//! observer should see. The other jobs are taken in order from a shared
//! counter, so a slow job does not hold up the others' start.

use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicUsize, Ordering};

/// `job` applied to every item, on up to `threads` threads (the calling
/// thread one of them, which runs the first item), the results in the
/// items' order. After each job the calling thread finishes, `on_progress`
/// gets the number of jobs finished so far on all threads. A job that panics on a worker thread
/// gives `Err` with its message once every other job has finished; on the
/// calling thread it unwinds as it would without threads.
pub fn map_in_order<T, R>(
    threads: NonZeroUsize,
    items: &[T],
    job: impl Fn(&T) -> R + Sync,
    on_progress: impl Fn(usize),
) -> Result<Vec<R>, String>
where
    T: Sync,
    R: Send,
{
    // Item 0 is the calling thread's before any worker starts.
    let next = AtomicUsize::new(1);
    let finished = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            let at = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(at) else {
                return done;
            };
            done.push((at, job(item)));
            finished.fetch_add(1, Ordering::Relaxed);
        }
    };
    let workers = (threads.get() - 1).min(items.len().saturating_sub(1));
    let mut results: Vec<Option<R>> = items.iter().map(|_| None).collect();
    let mut panicked = None;
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers).map(|_| scope.spawn(work)).collect();
        let mut at = 0;
        while let Some(item) = items.get(at) {
            results[at] = Some(job(item));
            on_progress(finished.fetch_add(1, Ordering::Relaxed) + 1);
            at = next.fetch_add(1, Ordering::Relaxed);
        }
        for handle in handles {
            match handle.join() {
                Ok(done) => {
                    for (at, result) in done {
                        results[at] = Some(result);
                    }
                }
                Err(payload) => {
                    let message = payload
                        .downcast_ref::<&str>()
                        .map(|text| text.to_string())
                        .or_else(|| payload.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "a worker thread panicked".into());
                    panicked.get_or_insert(message);
                }
            }
        }
    });
    if let Some(message) = panicked {
        return Err(message);
    }
    Ok(results
        .into_iter()
        .map(|result| result.expect("every item taken once by one thread"))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// One thread or several, the results come back in the items' order,
    /// every job runs once, and the calling thread's last progress report
    /// counts jobs it did not run itself.
    #[test]
    fn results_are_in_order_on_any_number_of_threads() {
        let items: Vec<u64> = (0..37).collect();
        for threads in [1, 2, 5, 64] {
            let runs = AtomicUsize::new(0);
            let reported = Cell::new(0);
            let squares = map_in_order(
                NonZeroUsize::new(threads).unwrap(),
                &items,
                |&item| {
                    runs.fetch_add(1, Ordering::Relaxed);
                    item * item
                },
                |finished| reported.set(reported.get().max(finished)),
            )
            .unwrap();
            assert_eq!(squares, items.iter().map(|i| i * i).collect::<Vec<_>>());
            assert_eq!(runs.load(Ordering::Relaxed), items.len());
            assert!(reported.get() >= 1 && reported.get() <= items.len());
        }
        let none: Vec<u64> = map_in_order(NonZeroUsize::MIN, &[], |&x: &u64| x, |_| {}).unwrap();
        assert!(none.is_empty());
    }

    /// The first item always runs on the calling thread, however many
    /// threads there are.
    #[test]
    fn the_first_item_runs_on_the_calling_thread() {
        let caller = std::thread::current().id();
        let items: Vec<u64> = (0..16).collect();
        for _ in 0..20 {
            let threads = map_in_order(
                NonZeroUsize::new(4).unwrap(),
                &items,
                |_| std::thread::current().id(),
                |_| {},
            )
            .unwrap();
            assert_eq!(threads[0], caller);
        }
    }

    /// A job that panics on a worker thread is an error, not a crash; the
    /// jobs left still run on the calling thread. (The caller's jobs are
    /// slowed so that the worker surely takes one.)
    #[test]
    fn a_worker_panic_is_an_error() {
        let items: Vec<u64> = (0..8).collect();
        let caller = std::thread::current().id();
        let ran = AtomicUsize::new(0);
        let outcome = map_in_order(
            NonZeroUsize::new(2).unwrap(),
            &items,
            |&item| {
                if std::thread::current().id() != caller {
                    panic!("job {item} failed on a worker");
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
                ran.fetch_add(1, Ordering::Relaxed);
                item
            },
            |_| {},
        );
        let message = outcome.unwrap_err();
        assert!(message.ends_with("failed on a worker"), "{message}");
        assert_eq!(ran.load(Ordering::Relaxed), items.len() - 1);
    }
}
