//! A mermap agent's view of the arena's memfd, whose page-table entries are
//! written and dropped explicitly: the OS side of a user-space mermap window.
//!
//! Writing entries: the view is registered with a userfaultfd in minor-fault
//! mode, and `UFFDIO_CONTINUE` over a run of pages installs the entry of
//! each page already in the file, in one call and without a fault — the
//! closest user space gets to the kernel's PTE write (mirrors what
//! mfill_atomic_install_pte() (6.12) does per page). The registration asks
//! for `SIGBUS` on a miss, so touching a page whose entry was not written
//! kills the process instead of mapping it silently: only pages in live
//! slots are reachable. Where userfaultfd is unavailable (no kernel support,
//! a seccomp filter), the view falls back on `MADV_POPULATE_WRITE`, a write
//! fault per page (the agents' fault count tells the two apart).
//! Dropping entries is `MADV_DONTNEED`, which flushes the TLB of the CPUs
//! that ran this address space (one, for a pinned agent).
//!
//! Invariants: the userfaultfd, when present, covers the whole view, and
//! lives exactly as long as it.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;

use super::super::BackingError;
use super::Mapping;

/// `UFFD_API`, the protocol version asked for.
const UFFD_API: u64 = 0xAA;
/// `UFFD_USER_MODE_ONLY`: only user-mode faults are reported (allowed
/// without privileges).
const UFFD_USER_MODE_ONLY: libc::c_int = 1;
/// `UFFD_FEATURE_SIGBUS`: a fault in the range is a `SIGBUS`.
const UFFD_FEATURE_SIGBUS: u64 = 1 << 7;
/// `UFFD_FEATURE_MINOR_SHMEM`: minor-fault mode on shmem (a memfd).
const UFFD_FEATURE_MINOR_SHMEM: u64 = 1 << 10;
/// `UFFDIO_REGISTER_MODE_MINOR`.
const UFFDIO_REGISTER_MODE_MINOR: u64 = 1 << 2;
/// `_IOWR(0xAA, 0x3F, struct uffdio_api)`.
const UFFDIO_API: libc::c_ulong = 0xC018_AA3F;
/// `_IOWR(0xAA, 0x00, struct uffdio_register)`.
const UFFDIO_REGISTER: libc::c_ulong = 0xC020_AA00;
/// `_IOWR(0xAA, 0x07, struct uffdio_continue)`.
const UFFDIO_CONTINUE: libc::c_ulong = 0xC020_AA07;

/// `struct uffdio_api`.
#[repr(C)]
struct UffdioApi {
    api: u64,
    features: u64,
    ioctls: u64,
}

/// `struct uffdio_range`.
#[repr(C)]
struct UffdioRange {
    start: u64,
    len: u64,
}

/// `struct uffdio_register`.
#[repr(C)]
struct UffdioRegister {
    range: UffdioRange,
    mode: u64,
    ioctls: u64,
}

/// `struct uffdio_continue`.
#[repr(C)]
struct UffdioContinue {
    range: UffdioRange,
    mode: u64,
    mapped: i64,
}

/// The errno of the call that just failed.
fn last_errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// A shared view of a file whose page-table entries are written explicitly.
#[derive(Debug)]
pub(crate) struct SlotView {
    view: Mapping,
    /// The userfaultfd the view is registered with (minor mode), if any.
    uffd: Option<OwnedFd>,
    page_size: usize,
}

impl SlotView {
    /// `len` bytes of the file `file_fd` from offset 0, shared, read-write,
    /// no entry written; pages of `page_size` bytes.
    pub(crate) fn new(
        file_fd: i32,
        len: usize,
        page_size: usize,
    ) -> Result<SlotView, BackingError> {
        let view = Mapping::lazy_view(file_fd, len)?;
        let uffd = register_minor(&view).ok();
        Ok(SlotView {
            view,
            uffd,
            page_size,
        })
    }

    /// The address of byte `offset` when `offset..offset + len` lies inside.
    pub(crate) fn at(&self, offset: usize, len: usize) -> Result<NonNull<u8>, BackingError> {
        self.view.at(offset, len)
    }

    /// Writes the entries of the pages of `offset..offset + len` (pages
    /// whose entry is already there are left as they are; a page the file
    /// does not hold yet is allocated by a write fault). Returns the errno
    /// on failure.
    pub(crate) fn write_entries(&self, offset: usize, len: usize) -> Result<(), i32> {
        let addr = self.view.at(offset, len).map_err(|_| libc::EINVAL)?;
        let Some(uffd) = &self.uffd else {
            return self.advise(addr, len, libc::MADV_POPULATE_WRITE);
        };
        let (mut start, end) = (addr.as_ptr() as u64, addr.as_ptr() as u64 + len as u64);
        while start < end {
            let mut request = UffdioContinue {
                range: UffdioRange {
                    start,
                    len: end - start,
                },
                mode: 0,
                mapped: 0,
            };
            // SAFETY: the range lies inside the registered view (checked by
            // `at`); the call writes only `request` and page-table entries
            // of pages the file already holds, changing no byte.
            let result = unsafe { libc::ioctl(uffd.as_raw_fd(), UFFDIO_CONTINUE, &mut request) };
            let done = u64::try_from(request.mapped).unwrap_or(0);
            match (result, last_errno()) {
                (0, _) => return Ok(()),
                // An entry already there (a page in two live slots): skip it.
                (_, libc::EEXIST) => start += done + self.page_size as u64,
                (_, libc::EAGAIN) => start += done,
                // A hole of the file (a sparse arena): the page is first
                // allocated, by a write fault.
                (_, libc::EFAULT) => {
                    let page = start + done;
                    let at = NonNull::new(page as *mut u8).ok_or(libc::EFAULT)?;
                    self.advise(at, self.page_size, libc::MADV_POPULATE_WRITE)?;
                    start = page + self.page_size as u64;
                }
                (_, errno) => return Err(errno),
            }
        }
        Ok(())
    }

    /// Drops the entries of `offset..offset + len` (a flush of the CPUs
    /// that ran this address space). Returns the errno on failure.
    pub(crate) fn drop_entries(&self, offset: usize, len: usize) -> Result<(), i32> {
        let addr = self.view.at(offset, len).map_err(|_| libc::EINVAL)?;
        self.advise(addr, len, libc::MADV_DONTNEED)
    }

    fn advise(&self, addr: NonNull<u8>, len: usize, advice: i32) -> Result<(), i32> {
        // SAFETY: the caller checked that `addr..addr + len` lies inside the
        // view; populating changes no byte, and dropping the entries of a
        // shared file mapping loses nothing (the file keeps the bytes).
        if unsafe { libc::madvise(addr.as_ptr().cast(), len, advice) } != 0 {
            return Err(last_errno());
        }
        Ok(())
    }
}

/// A userfaultfd with `view` registered in minor-fault mode, faults there
/// raising `SIGBUS`.
fn register_minor(view: &Mapping) -> Result<OwnedFd, i32> {
    let flags = libc::O_CLOEXEC | UFFD_USER_MODE_ONLY;
    // SAFETY: userfaultfd takes flags only and returns a new descriptor.
    let fd = unsafe { libc::syscall(libc::SYS_userfaultfd, flags) };
    let fd = i32::try_from(fd)
        .ok()
        .filter(|&fd| fd >= 0)
        .ok_or_else(last_errno)?;
    // SAFETY: `fd` was just returned by userfaultfd and nothing else owns it.
    let uffd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut api = UffdioApi {
        api: UFFD_API,
        features: UFFD_FEATURE_SIGBUS | UFFD_FEATURE_MINOR_SHMEM,
        ioctls: 0,
    };
    // SAFETY: the handshake reads and writes `api` only.
    if unsafe { libc::ioctl(uffd.as_raw_fd(), UFFDIO_API, &mut api) } != 0 {
        return Err(last_errno());
    }
    let mut register = UffdioRegister {
        range: UffdioRange {
            start: view.start().as_ptr() as u64,
            len: view.len as u64,
        },
        mode: UFFDIO_REGISTER_MODE_MINOR,
        ioctls: 0,
    };
    // SAFETY: registers the view, which this process mapped and which
    // outlives the descriptor (both belong to one `SlotView`); writes
    // `register` only.
    if unsafe { libc::ioctl(uffd.as_raw_fd(), UFFDIO_REGISTER, &mut register) } != 0 {
        return Err(last_errno());
    }
    Ok(uffd)
}

#[cfg(test)]
mod tests {
    use super::super::{host_page_size, memfd, Mapping};
    use super::*;

    /// A memfd of `pages` pages, the first `filled` written with their index
    /// through a direct mapping, and a slot view of it.
    fn file_and_view(pages: usize, filled: usize) -> (OwnedFd, Mapping, SlotView, usize) {
        let page = host_page_size().unwrap();
        let file = memfd(c"slot-view-test", (pages * page) as u64).unwrap();
        let direct = Mapping::shared(&file, pages * page, false).unwrap();
        for index in 0..filled {
            // SAFETY: the byte lies inside the direct mapping, which no
            // other thread uses.
            unsafe { *direct.at(index * page, 1).unwrap().as_ptr() = index as u8 + 1 };
        }
        let view = SlotView::new(file.as_raw_fd(), pages * page, page).unwrap();
        (file, direct, view, page)
    }

    fn first_byte(view: &SlotView, page: usize, index: usize) -> u8 {
        // SAFETY: the caller wrote the page's entry; the byte lies inside.
        unsafe { *view.at(index * page, 1).unwrap().as_ptr() }
    }

    #[test]
    fn written_entries_reach_the_file_pages_and_survive_a_second_write() {
        let (_file, _direct, view, page) = file_and_view(8, 8);
        view.write_entries(2 * page, 4 * page).unwrap();
        // Pages 3 and 4 already have their entries: left as they are.
        view.write_entries(3 * page, 2 * page).unwrap();
        view.write_entries(page, 6 * page).unwrap();
        for index in 1..7 {
            assert_eq!(first_byte(&view, page, index), index as u8 + 1);
        }
        view.drop_entries(page, 6 * page).unwrap();
        view.write_entries(5 * page, page).unwrap();
        assert_eq!(first_byte(&view, page, 5), 6);
    }

    #[test]
    fn a_hole_of_the_file_is_allocated_zeroed() {
        let (_file, direct, view, page) = file_and_view(4, 2);
        view.write_entries(0, 4 * page).unwrap();
        assert_eq!(first_byte(&view, page, 1), 2);
        assert_eq!(first_byte(&view, page, 3), 0);
        // SAFETY: the page's entry was just written; single-threaded test.
        unsafe { *view.at(3 * page, 1).unwrap().as_ptr() = 9 };
        // SAFETY: inside the direct mapping of the same file.
        assert_eq!(unsafe { *direct.at(3 * page, 1).unwrap().as_ptr() }, 9);
    }

    #[test]
    fn ranges_outside_the_view_are_refused() {
        let (_file, _direct, view, page) = file_and_view(4, 4);
        assert_eq!(view.write_entries(3 * page, 2 * page), Err(libc::EINVAL));
        assert_eq!(view.drop_entries(usize::MAX, page), Err(libc::EINVAL));
    }
}
