//! `reserve_mem=size:align:name` (Linux 6.11+): memory reserved at boot by
//! name, for pstore and the like, placed by memblock's own allocator.
//! mirrors reserve_mem() and memblock_phys_alloc() of mm/memblock.c.
//!
//! Parsing (`ReserveMem::parse`) checks what reserve_mem() checks: a size
//! above zero, `:` after it and after the alignment, an alignment raised to
//! the cache line (SMP_CACHE_BYTES, 64 on x86-64), a name of 1 to 15 bytes
//! that is not all spaces and not already used, at most
//! [`RESERVE_MEM_MAX_ENTRIES`] entries. Placement (`place`) happens when the
//! machine is laid out, after `mem=`, as the kernel runs the handler after
//! setup_arch() trimmed memory: top-down, the highest aligned range of
//! memory not reserved yet (memblock_find_in_range_node() without
//! bottom-up), above the first page. Where the kernel warns and boots on,
//! pageframe refuses the description naming the parameter.

use super::desc::MemRange;
use super::error::DescError;
use super::pfn_range::{merge_sorted, subtract, PfnRange};
use super::size::{format_size, parse_size};

/// Most `reserve_mem=` entries (RESERVE_MEM_MAX_ENTRIES).
pub const RESERVE_MEM_MAX_ENTRIES: usize = 8;
/// Longest name plus its NUL (RESERVE_MEM_NAME_SIZE).
const RESERVE_MEM_NAME_SIZE: usize = 16;
/// The least alignment (SMP_CACHE_BYTES on x86-64).
const SMP_CACHE_BYTES: u64 = 64;

/// One `reserve_mem=` entry as given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReserveMem {
    /// Bytes to reserve (above zero).
    pub size: u64,
    /// Alignment of the start, at least 64 bytes.
    pub align: u64,
    /// The name it is found by.
    pub name: String,
}

impl ReserveMem {
    /// Parses `size:align:name` as reserve_mem() does; `earlier` are the
    /// entries already given (for the count and the names).
    pub fn parse(value: &str, earlier: &[ReserveMem]) -> Result<ReserveMem, DescError> {
        const FIELD: &str = "cmdline reserve_mem";
        let bad = |why: &str| DescError::new(FIELD, format!("'{value}': {why}"));
        if earlier.len() >= RESERVE_MEM_MAX_ENTRIES {
            return Err(bad(&format!(
                "at most {RESERVE_MEM_MAX_ENTRIES} reservations (EBUSY)"
            )));
        }
        let mut parts = value.splitn(3, ':');
        let (Some(size), Some(align), Some(name)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(bad("not size:align:name (EINVAL)"));
        };
        let size = parse_size(FIELD, size)?;
        if size == 0 {
            return Err(bad("a size of zero (EINVAL)"));
        }
        let align = parse_size(FIELD, align)?.max(SMP_CACHE_BYTES);
        if !align.is_power_of_two() {
            return Err(bad("the alignment is not a power of two (EINVAL)"));
        }
        if name.is_empty() || name.len() >= RESERVE_MEM_NAME_SIZE || name.trim().is_empty() {
            return Err(bad(&format!(
                "a name of 1 to {} bytes, not all spaces (EINVAL)",
                RESERVE_MEM_NAME_SIZE - 1
            )));
        }
        if earlier.iter().any(|entry| entry.name == name) {
            return Err(bad(&format!("'{name}' is reserved already (EBUSY)")));
        }
        Ok(ReserveMem {
            size,
            align,
            name: name.to_string(),
        })
    }
}

/// Places each entry, in order, top-down in `memory` (sorted page ranges)
/// outside `reserved` (sorted, merged page ranges), which gains each
/// placement's pages. Returns each entry's name and bytes.
pub(super) fn place(
    entries: &[ReserveMem],
    memory: &[PfnRange],
    reserved: &mut Vec<PfnRange>,
    page_shift: u32,
) -> Result<Vec<(String, MemRange)>, DescError> {
    let page = 1u64 << page_shift;
    let mut placed = Vec::with_capacity(entries.len());
    for entry in entries {
        let free = subtract(memory, reserved);
        // memblock_find_in_range_node(): never below the first page.
        let start = free.iter().rev().find_map(|range| {
            let low = (range.start.0 << page_shift).max(page);
            let high = range.end.0 << page_shift;
            let start = high.checked_sub(entry.size)? / entry.align * entry.align;
            (start >= low).then_some(start)
        });
        let Some(start) = start else {
            return Err(DescError::new(
                "cmdline reserve_mem",
                format!(
                    "no free memory for {} aligned to {} ('{}', ENOMEM)",
                    format_size(entry.size),
                    format_size(entry.align),
                    entry.name
                ),
            ));
        };
        let range = MemRange {
            start,
            size: entry.size,
        };
        reserved.push(PfnRange {
            start: crate::types::Pfn(start >> page_shift),
            end: crate::types::Pfn(range.end().div_ceil(page)),
        });
        merge_sorted(reserved);
        placed.push((entry.name.clone(), range));
    }
    Ok(placed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Pfn;

    fn pfns(start: u64, end: u64) -> PfnRange {
        PfnRange {
            start: Pfn(start),
            end: Pfn(end),
        }
    }

    #[test]
    fn parse_checks_what_the_kernel_checks() {
        let one = ReserveMem::parse("12M:4096:oops", &[]).unwrap();
        assert_eq!(
            (one.size, one.align, one.name.as_str()),
            (12 << 20, 4096, "oops")
        );
        assert_eq!(ReserveMem::parse("1M:0:a", &[]).unwrap().align, 64);
        for bad in [
            "0:4096:a",
            "1M",
            "1M:4096",
            "1M:4096:",
            "1M:4096:   ",
            "1M:4096:sixteen-bytes-xx",
            "x:4096:a",
            "1M:3000:a",
        ] {
            let err = ReserveMem::parse(bad, &[]).unwrap_err();
            assert_eq!(err.field, "cmdline reserve_mem", "{bad}");
        }
        let err = ReserveMem::parse("1M:0:oops", std::slice::from_ref(&one)).unwrap_err();
        assert!(err.to_string().contains("EBUSY"), "{err}");
        let full = vec![one; RESERVE_MEM_MAX_ENTRIES];
        assert!(ReserveMem::parse("1M:0:other", &full).is_err());
    }

    #[test]
    fn placement_is_top_down_aligned_and_skips_reserved_memory() {
        let entries = [
            ReserveMem::parse("8K:64K:a", &[]).unwrap(),
            ReserveMem::parse("1M:1M:b", &[]).unwrap(),
        ];
        let memory = [pfns(0, 1024), pfns(2048, 4096)];
        // The top 16 pages are reserved already.
        let mut reserved = vec![pfns(4080, 4096)];
        let placed = place(&entries, &memory, &mut reserved, 12).unwrap();
        // a: the highest 64 KiB-aligned start with 8 KiB free below 4080.
        assert_eq!(placed[0].1.start, (4080 * 4096 - 8192) / 65536 * 65536);
        // b: the highest 1 MiB-aligned MiB below a.
        assert_eq!(placed[1].1.start, 14 << 20);
        assert_eq!(
            reserved,
            [pfns(3584, 3840), pfns(4064, 4066), pfns(4080, 4096)]
        );
        let too_big = [ReserveMem::parse("9M:0:c", &[]).unwrap()];
        assert!(place(&too_big, &memory, &mut reserved, 12).is_err());
    }
}
