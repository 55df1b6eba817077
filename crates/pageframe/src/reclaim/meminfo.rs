//! The `/proc/meminfo` view of the reclaim layer's machine: the lines
//! meminfo_proc_show() prints that pageframe has, each `label`, the value
//! in kB right-aligned in 8 columns, ` kB`; MemAvailable as
//! si_mem_available() estimates it (mm/show_mem.c, 6.12).

use super::lru::LruList;
use super::Mm;

/// `/proc/meminfo`'s values, in pages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Meminfo {
    /// MemTotal: managed pages.
    pub total: u64,
    /// MemFree: `NR_FREE_PAGES` (per-CPU lists excluded).
    pub free: u64,
    /// MemAvailable: free pages less the reserves, plus the page cache
    /// less what must stay (half of it, or the low watermarks).
    pub available: u64,
    /// Cached: page cache pages.
    pub cached: u64,
    /// Active(anon).
    pub active_anon: u64,
    /// Inactive(anon).
    pub inactive_anon: u64,
    /// Active(file).
    pub active_file: u64,
    /// Inactive(file).
    pub inactive_file: u64,
    /// Dirty.
    pub dirty: u64,
    /// AnonPages.
    pub anon_pages: u64,
}

impl Meminfo {
    /// The text, as `/proc/meminfo` lays it out, for pages of `1 << page_shift` bytes
    /// (a value too large for a u64 shows as `u64::MAX`).
    pub fn render(&self, page_shift: u8) -> String {
        let kb = |pages: u64| {
            let bytes = u128::from(pages)
                .checked_shl(u32::from(page_shift))
                .filter(|_| page_shift < 64)
                .unwrap_or(u128::MAX);
            u64::try_from(bytes >> 10).unwrap_or(u64::MAX)
        };
        let lines: [(&str, u64); 19] = [
            ("MemTotal:", self.total),
            ("MemFree:", self.free),
            ("MemAvailable:", self.available),
            ("Buffers:", 0),
            ("Cached:", self.cached),
            ("SwapCached:", 0),
            ("Active:", self.active_anon + self.active_file),
            ("Inactive:", self.inactive_anon + self.inactive_file),
            ("Active(anon):", self.active_anon),
            ("Inactive(anon):", self.inactive_anon),
            ("Active(file):", self.active_file),
            ("Inactive(file):", self.inactive_file),
            ("Unevictable:", 0),
            ("Mlocked:", 0),
            ("SwapTotal:", 0),
            ("SwapFree:", 0),
            ("Dirty:", self.dirty),
            ("Writeback:", 0),
            ("AnonPages:", self.anon_pages),
        ];
        lines
            .iter()
            .map(|(label, pages)| format!("{label:<16}{:>8} kB\n", kb(*pages)))
            .collect()
    }
}

impl Mm<'_> {
    /// The machine's `/proc/meminfo` values.
    pub fn meminfo(&self) -> Meminfo {
        let sum = |list: LruList| -> u64 {
            (0..self.nr_nodes())
                .map(|node| self.lru.count(node, list))
                .sum()
        };
        let (mut total, mut wmark_low, mut totalreserve) = (0u64, 0u64, 0u64);
        for zone in &self.zones {
            let (_, watermarks) = self.zone_free(zone);
            total += zone.managed;
            wmark_low += watermarks.low;
            // calculate_totalreserve_pages(), computed when the watermarks
            // are set up, where the boost is reset: the unboosted high mark
            // (the low mark above is read now, boost and all).
            let boost = self.allocator.zone_watermark_boost(zone.index).unwrap_or(0);
            let high = watermarks.high.saturating_sub(boost);
            let reserve = zone.lowmem_reserve.iter().copied().max().unwrap_or(0) + high;
            totalreserve += reserve.min(zone.managed);
        }
        let free = self.allocator.nr_free_pages();
        let (active_file, inactive_file) = (sum(LruList::ActiveFile), sum(LruList::InactiveFile));
        let pagecache = active_file + inactive_file;
        let pagecache = pagecache - (pagecache / 2).min(wmark_low);
        Meminfo {
            total,
            free,
            available: (free + pagecache).saturating_sub(totalreserve),
            cached: self.nr_file,
            active_anon: sum(LruList::ActiveAnon),
            inactive_anon: sum(LruList::InactiveAnon),
            active_file,
            inactive_file,
            dirty: self.nr_dirty,
            anon_pages: self.nr_anon,
        }
    }
}
