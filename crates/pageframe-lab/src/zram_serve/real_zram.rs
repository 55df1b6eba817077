//! A real /dev/zram device of the running kernel, hot-added through
//! /sys/class/zram-control with a compressor and a disk size, and removed
//! (reset, then hot_remove) on drop. Needs root.
//!
//! Owns: the device number it was given; nothing else.

use super::block_trace::RealStat;
use std::path::PathBuf;

/// A hot-added zram device, removed on drop.
pub struct RealZram {
    id: u32,
}

impl RealZram {
    /// Hot-adds a device using `algorithm` (e.g. `lz4`) with `disk_bytes`
    /// of disk.
    pub fn create(disk_bytes: u64, algorithm: &str) -> Result<RealZram, String> {
        let id: u32 = std::fs::read_to_string("/sys/class/zram-control/hot_add")
            .map_err(|err| format!("zram hot_add: {err}"))?
            .trim()
            .parse()
            .map_err(|err| format!("zram hot_add: {err}"))?;
        let zram = RealZram { id };
        zram.set("comp_algorithm", algorithm)?;
        zram.set("disksize", &disk_bytes.to_string())?;
        Ok(zram)
    }

    fn sys(&self, file: &str) -> PathBuf {
        PathBuf::from(format!("/sys/block/zram{}/{file}", self.id))
    }

    fn set(&self, file: &str, value: &str) -> Result<(), String> {
        std::fs::write(self.sys(file), value)
            .map_err(|err| format!("writing {}: {err}", self.sys(file).display()))
    }

    /// `/dev/zramN`.
    pub fn device(&self) -> PathBuf {
        PathBuf::from(format!("/dev/zram{}", self.id))
    }

    /// The nine numbers of `mm_stat`.
    pub fn mm_stat_fields(&self) -> Result<Vec<u64>, String> {
        let text = std::fs::read_to_string(self.sys("mm_stat"))
            .map_err(|err| format!("reading mm_stat: {err}"))?;
        text.split_whitespace()
            .map(|field| {
                field
                    .parse()
                    .map_err(|err| format!("mm_stat {text:?}: {err}"))
            })
            .collect()
    }

    /// `orig_data_size`, `compr_data_size` and `mem_used_total`.
    pub fn mm_stat(&self) -> Result<RealStat, String> {
        match self.mm_stat_fields()?[..] {
            [orig, compr, used, ..] => Ok(RealStat { orig, compr, used }),
            ref fields => Err(format!("mm_stat has {} fields", fields.len())),
        }
    }
}

impl Drop for RealZram {
    fn drop(&mut self) {
        let _ = std::fs::write(self.sys("reset"), "1");
        let _ = std::fs::write("/sys/class/zram-control/hot_remove", self.id.to_string());
    }
}
