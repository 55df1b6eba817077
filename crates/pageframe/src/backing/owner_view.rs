//! An owner's view: chosen pages of the arena mapped, in order, into one
//! fresh range of this process that no forked process inherits, while the
//! direct map keeps them unmapped. The user-space counterpart of a
//! `memfd_secret()` mapping, which puts the pages into the page tables of
//! their owner's mm only.
//!
//! Invariant: the view's range maps exactly the pages it was built from,
//! read-write, for its lifetime; dropping it unmaps the range.

use std::os::fd::OwnedFd;
use std::ptr::NonNull;

use super::os::Mapping;
use super::BackingError;
use crate::types::Pfn;

/// Pages of an arena mapped into a range of their owner's. See the module
/// documentation.
#[derive(Debug)]
pub struct OwnerView {
    mapping: Mapping,
}

impl OwnerView {
    /// Maps `pfns` (pages of `page_size` bytes of `file`), in order, into a
    /// new range; runs of adjacent pages take one call each.
    pub(crate) fn new(
        file: &OwnedFd,
        page_size: usize,
        pfns: &[Pfn],
    ) -> Result<OwnerView, BackingError> {
        let len = pfns
            .len()
            .checked_mul(page_size)
            .filter(|&len| len > 0)
            .ok_or(BackingError::Unsupported("an owner view needs pages"))?;
        let mapping = Mapping::reserve(len)?;
        let mut at = 0;
        while at < pfns.len() {
            let run = pfns[at..]
                .windows(2)
                .take_while(|pair| pair[1].0 == pair[0].0 + 1)
                .count()
                + 1;
            mapping.map_file_at(
                at * page_size,
                run * page_size,
                file,
                pfns[at].0 * page_size as u64,
            )?;
            at += run;
        }
        mapping.dont_fork()?;
        Ok(OwnerView { mapping })
    }

    /// The first byte of the view.
    pub fn as_ptr(&self) -> NonNull<u8> {
        self.mapping.start()
    }

    /// Bytes in the view.
    pub fn len(&self) -> usize {
        self.mapping.len()
    }

    /// True for an empty view (never: a view has at least one page).
    pub fn is_empty(&self) -> bool {
        self.mapping.len() == 0
    }

    /// Copies `bytes` to byte `offset` of the view; `OutOfRange`-style
    /// `Os { EINVAL }` when they do not fit, nothing copied.
    pub fn write(&self, offset: usize, bytes: &[u8]) -> Result<(), BackingError> {
        let dst = self.mapping.at(offset, bytes.len())?;
        // SAFETY: `at` checked the range lies inside the view, mapped
        // read-write for its lifetime; the view's owner serialises accesses;
        // `bytes` is caller memory outside it; bytes are copied, no
        // reference to the shared memory is made.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst.as_ptr(), bytes.len()) };
        Ok(())
    }

    /// Copies bytes from byte `offset` of the view into `out`.
    pub fn read(&self, offset: usize, out: &mut [u8]) -> Result<(), BackingError> {
        let src = self.mapping.at(offset, out.len())?;
        // SAFETY: as in `write`, source and destination swapped.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), out.as_mut_ptr(), out.len()) };
        Ok(())
    }
}
