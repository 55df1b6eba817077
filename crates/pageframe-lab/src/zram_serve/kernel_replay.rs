//! A block trace replayed on a real /dev/zram of the running kernel (root):
//! the kernel's own zsmalloc given exactly the stream the trace recorded,
//! to set beside pageframe's replay of the same trace (same stream, two
//! allocators: any difference is the allocator's).
//!
//! The trace carries sizes, not data, so each write becomes a synthetic
//! page that the kernel's lz4 compresses to the trace's lz4 size: `k`
//! pseudo-random bytes, then zeros. The size of every `k` is measured on
//! the kernel first (a calibration device, one page per length, the growth
//! of `compr_data_size`). A size no length gives (below the smallest, or
//! one the lengths step over) takes the nearest measured size; a size at or
//! above the largest non-huge size measured is written as a page the
//! kernel stores huge. Same-filled writes are zero pages; a discard is
//! `BLKDISCARD` of its range (zram_bio_discard() frees every whole page in
//! it); a step mark reads mm_stat.
//!
//! Owns: two hot-added zram devices in turn (calibration, then replay),
//! both removed before returning.

use super::block_trace::{addressed_pages, RealStat, TraceRecord};
use super::real_zram::RealZram;
use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};

const PAGE: usize = 4096;
/// `BLKDISCARD` (`_IO(0x12, 119)`, include/uapi/linux/fs.h).
const BLKDISCARD: libc::c_ulong = 0x1277;

/// What the kernel's zram showed at each step of the trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelReplay {
    /// mm_stat's sizes at each step mark, in trace order.
    pub steps: Vec<RealStat>,
    /// Compressed writes.
    pub writes: u64,
    /// Of them, writes stored with a size other than the trace's (no
    /// length of the synthetic page gives that size exactly).
    pub inexact_writes: u64,
    /// For each compressed size `0..=4096`, whether a write of that size
    /// is stored exactly (a page length gives it, or both are huge).
    pub exact_sizes: Vec<bool>,
}

/// A page-aligned page buffer (O_DIRECT needs one), without unsafe: the
/// aligned window of a two-page vector.
struct AlignedPage {
    bytes: Vec<u8>,
    start: usize,
}

impl AlignedPage {
    fn new() -> AlignedPage {
        let bytes = vec![0u8; 2 * PAGE];
        let start = bytes.as_ptr().align_offset(PAGE);
        AlignedPage { bytes, start }
    }

    /// Fills the page with `random` pseudo-random bytes, then zeros.
    fn fill(&mut self, random: usize) -> &[u8] {
        let page = &mut self.bytes[self.start..self.start + PAGE];
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        for (at, byte) in page.iter_mut().enumerate() {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            *byte = if at < random { (state >> 24) as u8 } else { 0 };
        }
        page
    }
}

fn open_direct(zram: &RealZram) -> Result<File, String> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(zram.device())
        .map_err(|err| format!("{}: {err}", zram.device().display()))
}

fn write_page(device: &File, page: &[u8], slot: u64) -> Result<(), String> {
    let offset = slot
        .checked_mul(PAGE as u64)
        .ok_or_else(|| format!("slot {slot} out of range"))?;
    device
        .write_at(page, offset)
        .map_err(|err| format!("writing slot {slot}: {err}"))
        .and_then(|written| match written {
            PAGE => Ok(()),
            short => Err(format!("writing slot {slot}: {short} bytes written")),
        })
}

/// The synthetic page length to write for each trace size `0..=PAGE`,
/// and the size the kernel stores for each length, measured.
struct Calibration {
    length_of_size: Vec<usize>,
    size_of_length: Vec<u64>,
    /// The largest size measured that is not stored huge.
    largest_small: usize,
}

impl Calibration {
    /// Whether a write of `size` is stored with that size (or, like the
    /// trace's, huge).
    fn is_exact(&self, size: usize) -> bool {
        let stored = self.size_of_length[self.length_of_size[size]] as usize;
        stored == size || (size > self.largest_small && stored == PAGE)
    }
}

fn calibrate(page: &mut AlignedPage) -> Result<Calibration, String> {
    let zram = RealZram::create(((PAGE + 1) * PAGE) as u64, "lz4")?;
    let device = open_direct(&zram)?;
    let mut size_of_length = vec![0u64; PAGE + 1];
    let mut last = 0;
    // Length 0 (a zero page) is same-filled: no compressed size.
    for (length, size) in size_of_length.iter_mut().enumerate().skip(1) {
        write_page(&device, page.fill(length), length as u64)?;
        let compr = zram.mm_stat()?.compr;
        *size = compr.saturating_sub(last);
        last = compr;
    }
    // The first length giving each size.
    let mut exact = vec![None; PAGE + 1];
    for length in (1..=PAGE).rev() {
        let size = size_of_length[length] as usize;
        if size <= PAGE {
            exact[size] = Some(length);
        }
    }
    let huge_length = exact[PAGE].ok_or("no length of the synthetic page is stored huge")?;
    let largest_small = (0..PAGE)
        .rev()
        .find(|size| exact[*size].is_some())
        .ok_or("no length of the synthetic page is stored compressed")?;
    let nearest = |size: usize| -> usize {
        (0..=PAGE)
            .flat_map(|distance| [size.checked_sub(distance), size.checked_add(distance)])
            .flatten()
            .find_map(|candidate| exact.get(candidate).copied().flatten())
            .unwrap_or(huge_length)
    };
    let length_of_size = (0..=PAGE)
        .map(|size| {
            if size > largest_small {
                huge_length
            } else {
                nearest(size)
            }
        })
        .collect();
    Ok(Calibration {
        length_of_size,
        size_of_length,
        largest_small,
    })
}

/// Replays `records` on a new real zram (lz4) with the trace's lz4 sizes
/// (`sizes[0]`); returns mm_stat at every step mark.
pub fn replay_on_kernel(records: &[TraceRecord]) -> Result<KernelReplay, String> {
    let mut page = AlignedPage::new();
    let calibration = calibrate(&mut page)?;
    let disk_bytes = addressed_pages(records)
        .checked_mul(PAGE as u64)
        .ok_or("the trace addresses more pages than a disk can have")?;
    let zram = RealZram::create(disk_bytes, "lz4")?;
    let device = open_direct(&zram)?;
    let mut replay = KernelReplay {
        steps: Vec::new(),
        writes: 0,
        inexact_writes: 0,
        exact_sizes: (0..=PAGE).map(|size| calibration.is_exact(size)).collect(),
    };
    for record in records {
        match record {
            TraceRecord::Write { page: slot, sizes } => {
                let length = match sizes {
                    None => 0,
                    Some(sizes) => {
                        let size = (sizes[0] as usize).min(PAGE);
                        let length = calibration.length_of_size[size];
                        replay.writes += 1;
                        if !calibration.is_exact(size) {
                            replay.inexact_writes += 1;
                        }
                        length
                    }
                };
                write_page(&device, page.fill(length), *slot)?;
            }
            TraceRecord::Discard { first, pages } => {
                let range = [
                    first.saturating_mul(PAGE as u64),
                    pages.saturating_mul(PAGE as u64),
                ];
                // SAFETY: BLKDISCARD reads two u64 (start, length) from the
                // pointer, which points at `range`, alive for the call.
                let result = unsafe { libc::ioctl(device.as_raw_fd(), BLKDISCARD, range.as_ptr()) };
                if result != 0 {
                    return Err(format!(
                        "discarding pages {first}..+{pages}: {}",
                        std::io::Error::last_os_error()
                    ));
                }
            }
            TraceRecord::Step { .. } => replay.steps.push(zram.mm_stat()?),
        }
    }
    Ok(replay)
}
