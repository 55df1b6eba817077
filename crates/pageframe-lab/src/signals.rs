//! Ctrl-C for long-running commands that hold system state (a tracefs
//! instance, mounts, loop devices): while a [`SignalFlag`] lives, SIGINT and
//! SIGTERM only raise a flag, so the command notices, tears its state down
//! and returns. Signal handling is per process: one flag at a time.

use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_signal: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// SIGINT/SIGTERM raise a flag while this lives; the default actions come
/// back when it drops.
pub struct SignalFlag;

impl SignalFlag {
    /// Installs the handlers, the flag lowered.
    pub fn install() -> SignalFlag {
        INTERRUPTED.store(false, Ordering::SeqCst);
        let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        // SAFETY: the handler only stores to an atomic, which is
        // async-signal-safe; signal() has no other precondition.
        unsafe {
            libc::signal(libc::SIGINT, handler);
            libc::signal(libc::SIGTERM, handler);
        }
        SignalFlag
    }

    /// True once SIGINT or SIGTERM came.
    pub fn raised(&self) -> bool {
        INTERRUPTED.load(Ordering::SeqCst)
    }
}

impl Drop for SignalFlag {
    fn drop(&mut self) {
        // SAFETY: restoring the default disposition has no precondition.
        unsafe {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGTERM, libc::SIG_DFL);
        }
    }
}
