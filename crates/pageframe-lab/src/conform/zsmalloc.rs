//! The `zsmalloc` conformance suite: the geometry of every size class an
//! lz4-compressed page can reach through zram, measured on a real zram
//! device, beside pageframe's zsmalloc with chain size 8
//! (`CONFIG_ZSMALLOC_CHAIN_SIZE=8`, as the host).
//!
//! A page whose first `k` bytes are seeded random bytes and the rest zeros
//! compresses to about `k` bytes; pageframe's lz4 picks, for each class, a
//! `k` whose length is the largest the class takes. On the kernel, each
//! measurement starts from an empty device: the first write's growth of
//! `compr_data_size` is the object's length and of `mem_used_total` the
//! pages per zspage; further copies are written until `mem_used_total`
//! grows again, which counts the objects per zspage. Pageframe runs the
//! same procedure with `zs_malloc` of that length. Two more cases straddle
//! the huge threshold (zram stores a page whose compressed length reaches
//! `huge_class_size` uncompressed: `huge_pages` of `mm_stat`).
//!
//! Classes below the shortest lz4 output of a page that is not same-filled
//! cannot be reached through zram and are not cases (see the README).

use super::host::is_root;
use super::zram_device::{AlignedPage, MmStat, ZramDevice, PAGE, ZRAM_CONTROL};
use super::{ConformError, ConformRow, SuiteOutcome, SuiteResult};
use pageframe::page_source::CpuPages;
use pageframe::zpool::zsmalloc::{ZsConfig, ZsPool, ZS_HANDLE_SIZE};
use pageframe::zram::Compressor;
use pageframe::{CpuId, LocalPageAllocator, MachineDesc, MachineRng};

/// The suite's name.
const SUITE: &str = "zsmalloc";

/// The host's `CONFIG_ZSMALLOC_CHAIN_SIZE` (the default, 8).
const CHAIN_SIZE: u32 = 8;

/// Seed of the random page prefixes.
const SEED: u64 = 17;

/// A page of `random` seeded random bytes, then zeros (never same-filled).
fn page_with_prefix(random: usize) -> Box<AlignedPage> {
    let mut page = Box::new(AlignedPage([0; PAGE]));
    let mut rng = MachineRng::new(SEED);
    for byte in page.0.iter_mut().take(random) {
        *byte = rng.next_u64() as u8;
    }
    page.0[0] |= 1;
    page
}

/// pageframe's lz4 length of the page with each prefix length `1..PAGE`.
fn lengths_by_prefix() -> Result<Vec<(usize, usize)>, ConformError> {
    (1..PAGE)
        .map(|random| {
            Compressor::Lz4
                .compress_page(&page_with_prefix(random).0)
                .map(|out| (random, out.len()))
                .map_err(|err| ConformError::Boot(format!("lz4: {err}")))
        })
        .collect()
}

/// What storing copies of one object showed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stored {
    /// Compressed: its length, pages per zspage, objects per zspage.
    Zspage {
        length: u64,
        pages: u64,
        objects: u64,
    },
    /// Stored as an uncompressed huge page.
    Huge,
}

impl Stored {
    fn text(self) -> String {
        match self {
            Stored::Zspage {
                length,
                pages,
                objects,
            } => format!("length {length}: {pages} pages, {objects} objects per zspage"),
            Stored::Huge => "huge (stored uncompressed)".to_string(),
        }
    }
}

/// Attempts at finding a prefix whose kernel length falls in a class.
const CALIBRATION_ATTEMPTS: usize = 8;

/// Empties the device and writes the page with `random` random bytes to
/// its first slot.
fn first_write(device: &mut ZramDevice, random: usize) -> Result<MmStat, ConformError> {
    device.reset("lz4")?;
    device.write(0, &page_with_prefix(random))?;
    device.mm_stat()
}

/// A prefix length whose page the kernel compresses to a length in
/// `bottom < length <= top`, starting from pageframe's guess and moving by
/// the kernel's error (its lz4 and pageframe's differ by a few bytes), with
/// the device holding just that page; `None` when no attempt lands there.
fn calibrate(
    device: &mut ZramDevice,
    mut random: usize,
    bottom: u64,
    top: u64,
) -> Result<Option<(usize, MmStat)>, ConformError> {
    for _ in 0..CALIBRATION_ATTEMPTS {
        let stat = first_write(device, random)?;
        let length = stat.compr_data_size;
        if stat.huge_pages == 0 && length > bottom && length <= top {
            return Ok(Some((random, stat)));
        }
        let next = if stat.huge_pages > 0 {
            random.saturating_sub(8)
        } else if length > top {
            random.saturating_sub((length - top) as usize)
        } else {
            random + (top - length) as usize
        };
        if next == random || next == 0 || next >= PAGE {
            break;
        }
        random = next;
    }
    Ok(None)
}

/// The kernel's answer for the page with `random` random bytes, whose
/// first copy `first` is on the device: copies are written until a second
/// zspage is needed.
fn kernel_measure(
    device: &mut ZramDevice,
    random: usize,
    first: MmStat,
) -> Result<Stored, ConformError> {
    if first.huge_pages > 0 {
        return Ok(Stored::Huge);
    }
    let page = page_with_prefix(random);
    let pages = first.mem_used_total / PAGE as u64;
    for slot in 1..device.slots() {
        device.write(slot, &page)?;
        if device.mm_stat()?.mem_used_total / PAGE as u64 > pages {
            return Ok(Stored::Zspage {
                length: first.compr_data_size,
                pages,
                objects: slot,
            });
        }
    }
    Err(ConformError::Kernel(format!(
        "{} copies of a {}-byte object fit one zspage",
        device.slots(),
        first.compr_data_size
    )))
}

/// Pageframe's answer for an object of `length` bytes, the same way.
fn model_measure(allocator: &LocalPageAllocator, length: u64) -> Result<Stored, ConformError> {
    let boot = |err: String| ConformError::Boot(err);
    let cpu = allocator
        .cpu(CpuId(0))
        .map_err(|err| boot(err.to_string()))?;
    let config = ZsConfig {
        chain_size: CHAIN_SIZE,
        ..ZsConfig::default()
    };
    let mut pool = ZsPool::new(CpuPages::new(cpu), config).map_err(|err| boot(err.to_string()))?;
    let size = usize::try_from(length).map_err(|err| boot(err.to_string()))?;
    if size >= pool.huge_class_size() {
        return Ok(Stored::Huge);
    }
    let mut handles = vec![pool.zs_malloc(size).map_err(|err| boot(err.to_string()))?];
    let pages = pool.get_total_pages();
    let objects = loop {
        handles.push(pool.zs_malloc(size).map_err(|err| boot(err.to_string()))?);
        if pool.get_total_pages() > pages {
            break handles.len() as u64 - 1;
        }
    };
    for handle in handles {
        pool.zs_free(handle).map_err(|err| boot(err.to_string()))?;
    }
    Ok(Stored::Zspage {
        length,
        pages,
        objects,
    })
}

/// Why the suite cannot run here, if it cannot.
fn skip_reason() -> Option<String> {
    if !is_root() {
        return Some("not root (zram devices are added through sysfs)".into());
    }
    if !std::path::Path::new(ZRAM_CONTROL).exists() {
        return Some("no zram (zram-control missing: module not loaded?)".into());
    }
    // SAFETY: sysconf has no preconditions.
    if unsafe { libc::sysconf(libc::_SC_PAGESIZE) } != PAGE as libc::c_long {
        return Some("the host's pages are not 4 KiB".into());
    }
    None
}

/// Runs the suite; skipped without root or zram.
pub fn run() -> Result<SuiteResult, ConformError> {
    if let Some(reason) = skip_reason() {
        return Ok(SuiteResult {
            suite: SUITE,
            outcome: SuiteOutcome::Skipped { reason },
        });
    }
    let desc =
        MachineDesc::uniform(64 << 20, 1, 1).map_err(|err| ConformError::Boot(err.to_string()))?;
    let allocator =
        LocalPageAllocator::boot(&desc).map_err(|err| ConformError::Boot(err.to_string()))?;
    let table = {
        let cpu = allocator
            .cpu(CpuId(0))
            .map_err(|err| ConformError::Boot(err.to_string()))?;
        let config = ZsConfig {
            chain_size: CHAIN_SIZE,
            ..ZsConfig::default()
        };
        ZsPool::new(CpuPages::new(cpu), config)
            .map_err(|err| ConformError::Boot(err.to_string()))?
            .class_table()
            .clone()
    };
    let lengths = lengths_by_prefix()?;
    let guess = |top: usize| {
        lengths
            .iter()
            .filter(|(_, length)| *length <= top)
            .max_by_key(|(random, length)| (*length, std::cmp::Reverse(*random)))
            .map_or(1, |(random, _)| *random)
    };
    let mut device = match ZramDevice::add("lz4") {
        Ok(device) => device,
        Err(ConformError::Kernel(message)) if message.contains("comp_algorithm") => {
            return Ok(SuiteResult {
                suite: SUITE,
                outcome: SuiteOutcome::Skipped {
                    reason: format!("zram cannot use lz4: {message}"),
                },
            })
        }
        Err(err) => return Err(err),
    };
    let mut rows = Vec::new();
    // Each unmerged class below the huge threshold, at the largest object
    // length it takes (its size less the handle).
    let mut bottom = 0;
    for (index, class) in table.classes.iter().enumerate() {
        if class.merged_into != index {
            continue;
        }
        let top = class.size - ZS_HANDLE_SIZE;
        let range = (bottom, top);
        bottom = top;
        if top >= table.huge_class_size {
            break;
        }
        let case = format!("class of objects up to {top} bytes");
        match calibrate(&mut device, guess(top), range.0 as u64, top as u64)? {
            Some((random, first)) => {
                let kernel = kernel_measure(&mut device, random, first)?;
                let ours = match kernel {
                    Stored::Zspage { length, .. } => model_measure(&allocator, length)?,
                    Stored::Huge => model_measure(&allocator, top as u64)?,
                };
                rows.push(ConformRow::compare(case, kernel.text(), ours.text()));
            }
            // No page of lz4 output this short: unreachable through zram.
            None if top < lengths.iter().map(|(_, length)| *length).min().unwrap_or(0) => {}
            None => rows.push(ConformRow::compare(
                case,
                "no page compressed to a length in the class".into(),
                model_measure(&allocator, top as u64)?.text(),
            )),
        }
    }
    // The huge threshold: the page the kernel compresses to one byte below
    // huge_class_size, then the same page with one more random byte.
    let threshold = table.huge_class_size;
    let below = calibrate(
        &mut device,
        guess(threshold - 1),
        threshold as u64 - 2,
        threshold as u64 - 1,
    )?;
    let Some((random, first)) = below else {
        rows.push(ConformRow::compare(
            format!("page of lz4 length {}", threshold - 1),
            "no page compressed to this length".into(),
            model_measure(&allocator, threshold as u64 - 1)?.text(),
        ));
        return Ok(SuiteResult {
            suite: SUITE,
            outcome: SuiteOutcome::Ran(rows),
        });
    };
    let kernel = kernel_measure(&mut device, random, first)?;
    rows.push(ConformRow::compare(
        "longest page zram stores compressed".into(),
        kernel.text(),
        model_measure(&allocator, first.compr_data_size)?.text(),
    ));
    // One more random byte lengthens pageframe's lz4 output by `step`; the
    // kernel's page grows alike.
    let pf_length = |random: usize| {
        lengths
            .get(random.wrapping_sub(1))
            .map_or(0, |(_, length)| *length)
    };
    let step = pf_length(random + 1).saturating_sub(pf_length(random)) as u64;
    let longer = first_write(&mut device, random + 1)?;
    rows.push(ConformRow::compare(
        "that page with one more random byte".into(),
        kernel_measure(&mut device, random + 1, longer)?.text(),
        model_measure(&allocator, first.compr_data_size + step)?.text(),
    ));
    drop(device);
    Ok(SuiteResult {
        suite: SUITE,
        outcome: SuiteOutcome::Ran(rows),
    })
}
