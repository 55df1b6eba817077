//! Anonymous mappings of the host's memory, for the runs that make the
//! kernel fault pages in (the conform suites' children, `aging_probes
//! live`). Raw system calls only: a forked child may use them.
//!
//! Owns nothing; a mapping's owner unmaps it (or its process exits).

/// A private anonymous mapping of `pages` pages that THP leaves alone
/// (`MADV_NOHUGEPAGE`, for a host with THP `always`); `None` when mmap
/// fails. A raw call: a forked child may use it.
pub fn map_private_pages(pages: usize) -> Option<*mut u8> {
    let len = pages * PAGE_BYTES;
    // SAFETY: a new mapping of the kernel's choosing; nothing else is
    // touched.
    let map = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if map == libc::MAP_FAILED {
        return None;
    }
    // SAFETY: advice on the mapping just made, of that length.
    unsafe { libc::madvise(map, len, libc::MADV_NOHUGEPAGE) };
    Some(map.cast())
}

/// Writes one byte to each of the first `pages` pages at `base`.
///
/// # Safety
///
/// `base` must start a writable mapping of at least `pages` pages.
pub unsafe fn touch_pages(base: *mut u8, pages: usize) {
    for page in 0..pages {
        // SAFETY: inside the mapping, by the caller's promise.
        unsafe { base.add(page * PAGE_BYTES).write_volatile(1) };
    }
}

/// The host's page size, which the live runs require to be 4 KiB.
pub const PAGE_BYTES: usize = 4096;
