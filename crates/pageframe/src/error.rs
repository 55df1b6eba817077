//! The error vocabulary every layer shares: [`InvariantError`] (what a
//! `check_invariants()` reports) and [`Errno`] (Linux error numbers). It
//! uses no other module, so any layer may use it.
//!
//! Each layer's own error type lives in that layer and is converted at the
//! boundary: `DescError` in `machine`, `GfpError` in `gfp`, `BootError`,
//! `AllocError`, `FreeError`, `AccessError` and `CpuError` in `page_alloc`,
//! `HotplugError` in `page_alloc::hotplug`, `SlabError` in `slab`, `ZpoolError`
//! in `zpool`, `ZramError` in `zram`. The crate root re-exports them.
//! Every error leaves the structure it was returned from exactly as it was
//! before the call.

use thiserror::Error;

/// A broken invariant, found by a `check_invariants()`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("invariant broken: {0}")]
pub struct InvariantError(pub String);

/// A Linux error number, as the memory-policy calls return it (`-errno` in
/// the kernel). The numeric values are Linux's (include/uapi/asm-generic/errno-base.h),
/// so results compare one to one with a kernel's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Error)]
#[repr(i32)]
pub enum Errno {
    /// Operation not permitted.
    #[error("EPERM: operation not permitted")]
    EPERM = 1,
    /// No such file or directory (a page not present, for move_pages).
    #[error("ENOENT: no such page")]
    ENOENT = 2,
    /// No such process.
    #[error("ESRCH: no such process")]
    ESRCH = 3,
    /// I/O error (a strict mbind found pages it could not move).
    #[error("EIO: misplaced pages could not be moved")]
    EIO = 5,
    /// Out of memory.
    #[error("ENOMEM: out of memory")]
    ENOMEM = 12,
    /// Permission denied.
    #[error("EACCES: permission denied")]
    EACCES = 13,
    /// Bad address.
    #[error("EFAULT: bad address")]
    EFAULT = 14,
    /// Device or resource busy.
    #[error("EBUSY: busy")]
    EBUSY = 16,
    /// No such device (a node that does not exist or has no memory).
    #[error("ENODEV: no such node")]
    ENODEV = 19,
    /// Invalid argument.
    #[error("EINVAL: invalid argument")]
    EINVAL = 22,
    /// Operation not supported (set_mempolicy_home_node on a policy that
    /// is neither BIND nor PREFERRED_MANY).
    #[error("EOPNOTSUPP: operation not supported")]
    EOPNOTSUPP = 95,
}

impl Errno {
    /// The positive Linux error number.
    pub fn code(self) -> i32 {
        self as i32
    }

    /// The symbolic name (`EINVAL`).
    pub fn name(self) -> &'static str {
        match self {
            Errno::EPERM => "EPERM",
            Errno::ENOENT => "ENOENT",
            Errno::ESRCH => "ESRCH",
            Errno::EIO => "EIO",
            Errno::ENOMEM => "ENOMEM",
            Errno::EACCES => "EACCES",
            Errno::EFAULT => "EFAULT",
            Errno::EBUSY => "EBUSY",
            Errno::ENODEV => "ENODEV",
            Errno::EINVAL => "EINVAL",
            Errno::EOPNOTSUPP => "EOPNOTSUPP",
        }
    }
}
