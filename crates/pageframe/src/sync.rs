//! Locks as a type parameter: the same allocator code runs single-threaded
//! with [`Local`] (a `RefCell`: no atomics, `!Sync`) or shared between threads
//! with [`Shared`] (a test-and-test-and-set spinlock, as the kernel's zone and
//! pcp locks are spinlocks).
//!
//! Lock order, everywhere in the crate: a per-CPU pcp lock, then a zone lock.
//! No code holds two zone locks or two pcp locks at once.
//!
//! The lock-free words ([`SpinLock`]'s flag, [`StatCounter`], the pageblock
//! words) take their atomics from [`atomic`], which is `std`'s normally and
//! loom's in a `--cfg loom` build, so the loom models (`tests/loom_*.rs`)
//! check these very types.

use std::cell::{RefCell, RefMut, UnsafeCell};
use std::ops::{Deref, DerefMut};

use atomic::{AtomicBool, AtomicU64, Ordering};

/// The atomics of the crate's lock-free words: `std`'s, or loom's under `--cfg loom`.
pub mod atomic {
    #[cfg(loom)]
    pub use loom::sync::atomic::*;
    #[cfg(not(loom))]
    pub use std::sync::atomic::*;
}

/// Gives the CPU to another thread while spinning (loom's scheduler point
/// under `--cfg loom`).
#[inline]
fn yield_now() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::thread::yield_now();
}

/// The spin-wait hint (a loom scheduler point under `--cfg loom`).
#[inline]
fn spin_loop() {
    #[cfg(loom)]
    loom::hint::spin_loop();
    #[cfg(not(loom))]
    std::hint::spin_loop();
}

/// A family of locks the allocator can be built with.
pub trait LockFamily: 'static {
    /// A lock around a `T`.
    type Lock<T>;
    /// The guard of a held lock.
    type Guard<'a, T: 'a>: DerefMut<Target = T>;
    /// True when the allocator may be used from several threads at once.
    const CONCURRENT: bool;

    /// A new, unlocked lock.
    fn new<T>(value: T) -> Self::Lock<T>;
    /// Takes the lock, waiting for it. Returns the guard and whether the lock
    /// was contended (another holder had to be waited for).
    fn lock<T>(lock: &Self::Lock<T>) -> (Self::Guard<'_, T>, bool);
    /// Takes the lock if it is free.
    fn try_lock<T>(lock: &Self::Lock<T>) -> Option<Self::Guard<'_, T>>;
}

/// Single-threaded locks: a `RefCell` each. The allocator is then `!Sync`.
pub enum Local {}

impl LockFamily for Local {
    type Lock<T> = RefCell<T>;
    type Guard<'a, T: 'a> = RefMut<'a, T>;
    const CONCURRENT: bool = false;

    fn new<T>(value: T) -> RefCell<T> {
        RefCell::new(value)
    }

    #[inline]
    fn lock<T>(lock: &RefCell<T>) -> (RefMut<'_, T>, bool) {
        (lock.borrow_mut(), false)
    }

    #[inline]
    fn try_lock<T>(lock: &RefCell<T>) -> Option<RefMut<'_, T>> {
        lock.try_borrow_mut().ok()
    }
}

/// Thread-safe locks: a spinlock each.
pub enum Shared {}

impl LockFamily for Shared {
    type Lock<T> = SpinLock<T>;
    type Guard<'a, T: 'a> = SpinGuard<'a, T>;
    const CONCURRENT: bool = true;

    fn new<T>(value: T) -> SpinLock<T> {
        SpinLock::new(value)
    }

    #[inline]
    fn lock<T>(lock: &SpinLock<T>) -> (SpinGuard<'_, T>, bool) {
        lock.lock()
    }

    #[inline]
    fn try_lock<T>(lock: &SpinLock<T>) -> Option<SpinGuard<'_, T>> {
        lock.try_lock()
    }
}

/// A test-and-test-and-set spinlock that yields the CPU after a short spin,
/// so that more threads than cores (the 4-thread run on 2 cores) still progress.
pub struct SpinLock<T> {
    locked: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: the lock hands out access to `value` to one thread at a time, so it
// is shareable whenever `T` can be sent between threads.
unsafe impl<T: Send> Sync for SpinLock<T> {}
// SAFETY: moving the lock moves the `T`.
unsafe impl<T: Send> Send for SpinLock<T> {}

impl<T> SpinLock<T> {
    /// A new, unlocked spinlock.
    pub fn new(value: T) -> SpinLock<T> {
        SpinLock {
            locked: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    /// Takes the lock if it is free.
    #[inline]
    pub fn try_lock(&self) -> Option<SpinGuard<'_, T>> {
        if !self.locked.load(Ordering::Relaxed)
            && self
                .locked
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        {
            Some(SpinGuard { lock: self })
        } else {
            None
        }
    }

    /// Takes the lock; the flag says whether it had to wait.
    #[inline]
    pub fn lock(&self) -> (SpinGuard<'_, T>, bool) {
        if let Some(guard) = self.try_lock() {
            return (guard, false);
        }
        (self.lock_contended(), true)
    }

    #[cold]
    fn lock_contended(&self) -> SpinGuard<'_, T> {
        let mut spins = 0u32;
        loop {
            while self.locked.load(Ordering::Relaxed) {
                spins += 1;
                if spins % 64 == 0 {
                    yield_now();
                } else {
                    spin_loop();
                }
            }
            if let Some(guard) = self.try_lock() {
                return guard;
            }
        }
    }
}

/// Access to a locked [`SpinLock`]; unlocks on drop.
pub struct SpinGuard<'a, T> {
    lock: &'a SpinLock<T>,
}

impl<T> Deref for SpinGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard exists only while this thread holds the lock.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for SpinGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard exists only while this thread holds the lock, and
        // `&mut self` makes this the only reference handed out through it.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for SpinGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.lock.locked.store(false, Ordering::Release);
    }
}

/// A counter with one writer at a time (the holder of some lock, or the owner
/// of a CPU) and any number of readers: the increment is a plain load and
/// store, never a locked read-modify-write, like the kernel's `__count_vm_events()`.
#[derive(Default)]
pub struct StatCounter(AtomicU64);

impl StatCounter {
    /// Adds `delta`. The caller must be the only writer.
    #[inline]
    pub fn add(&self, delta: u64) {
        self.0.store(
            self.0.load(Ordering::Relaxed).wrapping_add(delta),
            Ordering::Relaxed,
        );
    }

    /// The current value.
    #[inline]
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// Sets the value. The caller must be the only writer.
    #[inline]
    pub fn set(&self, value: u64) {
        self.0.store(value, Ordering::Relaxed)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn spinlock_excludes_and_counts_contention() {
        let lock = Arc::new(SpinLock::new(0u64));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let lock = Arc::clone(&lock);
                std::thread::spawn(move || {
                    for _ in 0..10_000 {
                        *lock.lock().0 += 1;
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(*lock.lock().0, 40_000);
        let guard = lock.try_lock().unwrap();
        assert!(lock.try_lock().is_none());
        drop(guard);
    }

    #[test]
    fn local_lock_try_lock_fails_while_held() {
        let cell = Local::new(1);
        let guard = Local::try_lock(&cell).unwrap();
        assert!(Local::try_lock(&cell).is_none());
        drop(guard);
        assert!(Local::try_lock(&cell).is_some());
    }
}
