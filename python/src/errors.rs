//! The one Python exception, `pageframe.PageframeError`, a subclass of
//! `OSError`: `errno` is the Linux error number the kernel would return
//! where there is one (ENOMEM for an allocation that found no memory,
//! EINVAL for a bad argument), `None` otherwise.

use pageframe::{AllocError, DescError, Errno, FreeError};
use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;

pyo3::create_exception!(
    _native,
    PageframeError,
    PyOSError,
    "A pageframe error; errno is the Linux error number where there is one."
);

/// EAGAIN: Linux's "try again" (not among the policy calls' `Errno`s).
const EAGAIN: i32 = 11;

/// An error carrying `errno`.
pub fn with_errno(errno: i32, message: String) -> PyErr {
    PageframeError::new_err((errno, message))
}

/// A bad argument (EINVAL).
pub fn invalid(message: String) -> PyErr {
    with_errno(Errno::EINVAL.code(), message)
}

/// A machine description that does not lay out (EINVAL).
pub fn desc_error(err: DescError) -> PyErr {
    invalid(err.to_string())
}

/// An allocation failure, with the errno the kernel's callers see.
pub fn alloc_error(err: AllocError) -> PyErr {
    let errno = match err {
        AllocError::NoMemory { .. } => Errno::ENOMEM.code(),
        AllocError::NoSuchNode(_) => Errno::ENODEV.code(),
        AllocError::WouldBlock { .. } => EAGAIN,
        AllocError::Backing(_) => Errno::EIO.code(),
        _ => Errno::EINVAL.code(),
    };
    with_errno(errno, err.to_string())
}

/// A refused free (EINVAL: the page is not a block the caller may free).
pub fn free_error(err: FreeError) -> PyErr {
    invalid(err.to_string())
}

/// An error without an errno (an experiment or a file that failed).
pub fn failed(message: impl std::fmt::Display) -> PyErr {
    PageframeError::new_err(message.to_string())
}
