//! The `slab` conformance suite: the geometry of every kmalloc cache in the
//! host's `/proc/slabinfo` (object size, objects per slab, pages per slab)
//! beside pageframe's SLUB, whose slab parameters follow the host (present
//! CPUs and `slub_min_objects=`/`slub_min_order=`/`slub_max_order=`).
//!
//! The kmalloc families (`kmalloc-`, `kmalloc-cg-`, `kmalloc-rcl-`,
//! `dma-kmalloc-`, `kmalloc-rnd-NN-`) share one geometry per size, which
//! pageframe's `kmalloc-N` cache has. Named caches (`kmalloc_buckets`,
//! `dentry`, ...) hold structures whose size depends on the kernel's
//! configuration: they are not cases (see the README).

use super::host::{cmdline_param, count_in_list, is_root, read};
use super::{ConformError, ConformRow, SuiteOutcome, SuiteResult};
use pageframe::page_source::CpuPages;
use pageframe::slab::{SlabAllocator, SlabParams};
use pageframe::{CpuId, LocalPageAllocator, MachineDesc};

/// The suite's name.
const SUITE: &str = "slab";

/// Prefixes of the kmalloc cache families of SLUB (6.12).
const FAMILY_PREFIXES: [&str; 4] = ["kmalloc-cg-", "kmalloc-rcl-", "dma-kmalloc-", "kmalloc-"];

/// One geometry line of `/proc/slabinfo`.
struct SlabLine {
    name: String,
    objsize: u64,
    objperslab: u64,
    pagesperslab: u64,
}

/// The kmalloc size a cache name stands for (`kmalloc-cg-2k` → 2048), or
/// `None` for a named cache.
fn kmalloc_size(name: &str) -> Option<u32> {
    let mut rest = FAMILY_PREFIXES
        .iter()
        .find_map(|prefix| name.strip_prefix(prefix))?;
    // kmalloc-rnd-NN-SIZE (CONFIG_RANDOM_KMALLOC_CACHES).
    if let Some(random) = rest.strip_prefix("rnd-") {
        rest = random.split_once('-')?.1;
    }
    match rest.strip_suffix('k') {
        Some(kib) => kib.parse::<u32>().ok()?.checked_mul(1024),
        None => rest.parse().ok(),
    }
}

fn parse_slabinfo(text: &str) -> Vec<SlabLine> {
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.starts_with("slabinfo"))
        .filter_map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            let number = |index: usize| words.get(index)?.parse::<u64>().ok();
            Some(SlabLine {
                name: words.first()?.to_string(),
                objsize: number(3)?,
                objperslab: number(4)?,
                pagesperslab: number(5)?,
            })
        })
        .collect()
}

fn geometry(objsize: u64, objperslab: u64, pagesperslab: u64) -> String {
    format!("objsize {objsize}, {objperslab} per slab, {pagesperslab} pages per slab")
}

/// The slab parameters of the host: calculate_order() (6.12) scales with
/// the present CPUs (all possible ones when at most one is present) unless
/// `slub_min_objects=` is given.
fn host_params() -> Result<SlabParams, ConformError> {
    let present = count_in_list("/sys/devices/system/cpu/present")?;
    let cpus = if present <= 1 {
        count_in_list("/sys/devices/system/cpu/possible")?
    } else {
        present
    };
    let mut params = SlabParams::new(cpus as u32, 4096);
    let param = |names: [&str; 2]| -> Result<Option<u32>, ConformError> {
        for name in names {
            if let Some(value) = cmdline_param(name)? {
                return value
                    .parse()
                    .map(Some)
                    .map_err(|err| ConformError::Host(format!("{name}={value}: {err}")));
            }
        }
        Ok(None)
    };
    if let Some(objects) = param(["slub_min_objects", "slab_min_objects"])? {
        params.min_objects = objects;
    }
    if let Some(order) = param(["slub_min_order", "slab_min_order"])? {
        params.min_order = u8::try_from(order).unwrap_or(u8::MAX);
    }
    if let Some(order) = param(["slub_max_order", "slab_max_order"])? {
        params.max_order = u8::try_from(order).unwrap_or(u8::MAX);
    }
    Ok(params)
}

/// Runs the suite; skipped without root (`/proc/slabinfo` is root's) or on
/// a page size other than 4 KiB.
pub fn run() -> Result<SuiteResult, ConformError> {
    let skipped = |reason: &str| Ok(SuiteResult::skipped(SUITE, reason));
    if !is_root() {
        return skipped("not root (/proc/slabinfo is readable by root only)");
    }
    // SAFETY: sysconf has no preconditions.
    if unsafe { libc::sysconf(libc::_SC_PAGESIZE) } != 4096 {
        return skipped("the host's pages are not 4 KiB");
    }
    let host = parse_slabinfo(&read("/proc/slabinfo")?);
    let params = host_params()?;
    let desc =
        MachineDesc::uniform(64 << 20, 1, 1).map_err(|err| ConformError::Boot(err.to_string()))?;
    let allocator =
        LocalPageAllocator::boot(&desc).map_err(|err| ConformError::Boot(err.to_string()))?;
    let cpu = allocator
        .cpu(CpuId(0))
        .map_err(|err| ConformError::Boot(err.to_string()))?;
    let slab = SlabAllocator::new(CpuPages::new(cpu), params)
        .map_err(|err| ConformError::Boot(err.to_string()))?;
    let ours = slab.slabinfo_rows();
    let mut rows = Vec::new();
    for line in &host {
        let Some(size) = kmalloc_size(&line.name) else {
            continue;
        };
        let name = pageframe::slab::kmalloc_cache_name(size);
        let pageframe = ours
            .iter()
            .find(|row| row.name == name)
            .map(|row| {
                geometry(
                    u64::from(row.objsize),
                    u64::from(row.objperslab),
                    row.pagesperslab,
                )
            })
            .unwrap_or_else(|| "no such kmalloc cache".to_string());
        rows.push(ConformRow::compare(
            format!("{} geometry", line.name),
            geometry(line.objsize, line.objperslab, line.pagesperslab),
            pageframe,
        ));
    }
    Ok(SuiteResult {
        suite: SUITE,
        outcome: SuiteOutcome::Ran(rows),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn family_names_map_to_sizes_and_named_caches_do_not() {
        assert_eq!(kmalloc_size("kmalloc-8"), Some(8));
        assert_eq!(kmalloc_size("kmalloc-cg-2k"), Some(2048));
        assert_eq!(kmalloc_size("dma-kmalloc-192"), Some(192));
        assert_eq!(kmalloc_size("kmalloc-rcl-8k"), Some(8192));
        assert_eq!(kmalloc_size("kmalloc-rnd-03-96"), Some(96));
        assert_eq!(kmalloc_size("kmalloc_buckets"), None);
        assert_eq!(kmalloc_size("dentry"), None);
    }

    #[test]
    fn slabinfo_lines_parse() {
        let text = "slabinfo - version: 2.1\n# name <active_objs>\nkmalloc-8 1536 1536 8 512 1 : tunables 0 0 0 : slabdata 3 3 0\n";
        let lines = parse_slabinfo(text);
        assert_eq!(lines.len(), 1);
        assert_eq!(
            (lines[0].objsize, lines[0].objperslab, lines[0].pagesperslab),
            (8, 512, 1)
        );
    }
}
