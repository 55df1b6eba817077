//! Errors of the page cache, process and reclaim calls, each with the errno
//! Linux returns for the same call, checked in the order Linux checks
//! (pread(2)/pwrite(2): a negative position, then the descriptor, then the
//! buffer, then the range; open(2), read(2), write(2),
//! ftruncate(2), unlink(2), kill(2) on a gone process, and ENOMEM when the
//! allocation slow path gives up), and EINVAL for an aging workload's
//! config that cannot run.

use crate::page_alloc::{AllocError, CpuError, FreeError};
use crate::reclaim::{AgingConfigError, FileId, Owner, Pid};
use crate::types::NodeId;

/// An error of the reclaim layer's calls. Bad input leaves all state unchanged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MmError {
    /// The file was deleted (its descriptor is closed): EBADF, as read(2),
    /// write(2) and ftruncate(2) return on a closed descriptor.
    #[error("EBADF: file {0} was deleted")]
    BadFile(FileId),
    /// No such file, or it was deleted already: ENOENT, as unlink(2).
    #[error("ENOENT: no file {0}")]
    NoSuchFile(FileId),
    /// A negative length or an offset whose end overflows: EINVAL, as
    /// do_ftruncate() and rw_verify_area().
    #[error("EINVAL: length {0} is invalid")]
    InvalidLength(i64),
    /// A negative file position: EINVAL, as pread(2) and pwrite(2) return
    /// before they look at the descriptor.
    #[error("EINVAL: position {0} is negative")]
    NegativePosition(i64),
    /// A length no user buffer can have: EFAULT, as access_ok() fails for
    /// a buffer that would end past the user address space.
    #[error("EFAULT: no user buffer of {0} bytes fits the address space")]
    BadAddress(u64),
    /// Beyond the file system's maximum file size: EFBIG, as
    /// inode_newsize_ok() and generic_write_check_limits().
    #[error("EFBIG: {size} bytes is beyond the maximum file size {max}")]
    FileTooBig {
        /// The size asked for.
        size: u64,
        /// The file system's `s_maxbytes`.
        max: u64,
    },
    /// No such process, or it exited: ESRCH.
    #[error("ESRCH: no process {0}")]
    NoSuchProcess(Pid),
    /// The slow path gave up after reclaim: ENOMEM.
    #[error("ENOMEM: {0}")]
    NoMemory(AllocError),
    /// The allocator refused the request itself (bad order, node or flags).
    #[error("allocation refused: {0}")]
    Alloc(AllocError),
    /// A CPU that does not exist.
    #[error("{0}")]
    Cpu(CpuError),
    /// A node that does not exist: ENODEV.
    #[error("ENODEV: no node {0}")]
    NoSuchNode(NodeId),
    /// A page cache or anon page passed to a free: EBUSY.
    #[error("EBUSY: PFN {pfn} belongs to {owner:?}")]
    PageInUse {
        /// The page.
        pfn: u64,
        /// Who holds it.
        owner: Owner,
    },
    /// A free the allocator refused.
    #[error("{0}")]
    Free(FreeError),
    /// The memory cgroup's charge failed: its limit is reached and reclaim
    /// could not make room (try_charge_memcg()): ENOMEM.
    #[error("ENOMEM: the memory cgroup is at its limit of {limit} pages")]
    OverLimit {
        /// The limit in pages.
        limit: u64,
    },
    /// A memory cgroup limit below its usage that reclaim could not reach
    /// (mem_cgroup_resize_max()): EBUSY; the old limit stays.
    #[error("EBUSY: {usage} pages charged, reclaim cannot bring them to the limit {limit}")]
    LimitBusy {
        /// The pages charged when reclaim gave up.
        usage: u64,
        /// The limit asked for.
        limit: u64,
    },
    /// An aging workload's config that cannot run: EINVAL.
    #[error("EINVAL: {0}")]
    InvalidAgingConfig(AgingConfigError),
}

impl MmError {
    /// The positive Linux error number.
    pub fn code(&self) -> i32 {
        match self {
            MmError::BadFile(_) => 9,
            MmError::NoSuchFile(_) => 2,
            MmError::InvalidLength(_)
            | MmError::NegativePosition(_)
            | MmError::Alloc(_)
            | MmError::Cpu(_)
            | MmError::Free(_)
            | MmError::InvalidAgingConfig(_) => 22,
            MmError::FileTooBig { .. } => 27,
            MmError::NoSuchProcess(_) => 3,
            MmError::NoMemory(_) | MmError::OverLimit { .. } => 12,
            MmError::NoSuchNode(_) => 19,
            MmError::BadAddress(_) => 14,
            MmError::PageInUse { .. } | MmError::LimitBusy { .. } => 16,
        }
    }

    /// The symbolic errno name (`EBADF`).
    pub fn name(&self) -> &'static str {
        match self.code() {
            9 => "EBADF",
            2 => "ENOENT",
            27 => "EFBIG",
            3 => "ESRCH",
            12 => "ENOMEM",
            19 => "ENODEV",
            14 => "EFAULT",
            16 => "EBUSY",
            _ => "EINVAL",
        }
    }
}

impl From<AllocError> for MmError {
    fn from(err: AllocError) -> MmError {
        match err {
            AllocError::NoMemory { .. } | AllocError::WouldBlock { .. } => MmError::NoMemory(err),
            other => MmError::Alloc(other),
        }
    }
}

impl From<CpuError> for MmError {
    fn from(err: CpuError) -> MmError {
        MmError::Cpu(err)
    }
}

impl From<AgingConfigError> for MmError {
    fn from(err: AgingConfigError) -> MmError {
        MmError::InvalidAgingConfig(err)
    }
}
