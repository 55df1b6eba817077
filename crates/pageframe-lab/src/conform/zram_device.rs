//! A real zram device for the zsmalloc suite: added through
//! `/sys/class/zram-control/hot_add`, reset and re-initialised between
//! measurements, written one page at a time with `O_DIRECT` (so each write
//! has reached zsmalloc when it returns), and removed with `hot_remove` when
//! dropped — on every path, errors and panics included.

use super::ConformError;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};

/// The control directory of zram.
pub const ZRAM_CONTROL: &str = "/sys/class/zram-control";

/// Size of the device: more slots than any class has objects per zspage.
const DISK_SIZE: &str = "32M";

/// Page size of the writes (4 KiB, the suite's only page size).
pub const PAGE: usize = 4096;

/// One page, aligned for `O_DIRECT`.
#[repr(C, align(4096))]
pub struct AlignedPage(pub [u8; PAGE]);

/// `mm_stat` of a zram device (Documentation/admin-guide/blockdev/zram.rst).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MmStat {
    /// Compressed bytes stored (a huge page counts `PAGE_SIZE`).
    pub compr_data_size: u64,
    /// Bytes of pages zsmalloc holds.
    pub mem_used_total: u64,
    /// Pages stored uncompressed.
    pub huge_pages: u64,
}

/// A hot-added zram device, removed on drop.
pub struct ZramDevice {
    id: u32,
    file: Option<File>,
}

fn write_attr(path: &str, value: &str) -> Result<(), ConformError> {
    std::fs::write(path, value)
        .map_err(|err| ConformError::Kernel(format!("{path} <- {value}: {err}")))
}

impl ZramDevice {
    /// Adds a device and initialises it with `algorithm`.
    pub fn add(algorithm: &str) -> Result<ZramDevice, ConformError> {
        let path = format!("{ZRAM_CONTROL}/hot_add");
        let id = std::fs::read_to_string(&path)
            .map_err(|err| ConformError::Kernel(format!("{path}: {err}")))?
            .trim()
            .parse::<u32>()
            .map_err(|err| ConformError::Kernel(format!("{path}: {err}")))?;
        let mut device = ZramDevice { id, file: None };
        device.init(algorithm)?;
        Ok(device)
    }

    fn attr(&self, name: &str) -> String {
        format!("/sys/block/zram{}/{name}", self.id)
    }

    fn init(&mut self, algorithm: &str) -> Result<(), ConformError> {
        write_attr(&self.attr("comp_algorithm"), algorithm)?;
        write_attr(&self.attr("disksize"), DISK_SIZE)?;
        let path = format!("/dev/zram{}", self.id);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_DIRECT)
            .open(&path)
            .map_err(|err| ConformError::Kernel(format!("{path}: {err}")))?;
        self.file = Some(file);
        Ok(())
    }

    /// Empties the device (its pool is destroyed) and initialises it again.
    pub fn reset(&mut self, algorithm: &str) -> Result<(), ConformError> {
        self.file = None;
        write_attr(&self.attr("reset"), "1")?;
        self.init(algorithm)
    }

    /// Slots (pages) of the device.
    pub fn slots(&self) -> u64 {
        (32 << 20) / PAGE as u64
    }

    /// Writes `page` to slot `slot`.
    pub fn write(&self, slot: u64, page: &AlignedPage) -> Result<(), ConformError> {
        let file = self
            .file
            .as_ref()
            .ok_or_else(|| ConformError::Kernel("the device is not open".into()))?;
        file.write_all_at(&page.0, slot * PAGE as u64)
            .map_err(|err| ConformError::Kernel(format!("write to zram{}: {err}", self.id)))
    }

    /// The device's `mm_stat`.
    pub fn mm_stat(&self) -> Result<MmStat, ConformError> {
        let path = self.attr("mm_stat");
        let text = std::fs::read_to_string(&path)
            .map_err(|err| ConformError::Kernel(format!("{path}: {err}")))?;
        let fields: Vec<u64> = text
            .split_whitespace()
            .map(|field| field.parse().unwrap_or(0))
            .collect();
        if fields.len() < 8 {
            return Err(ConformError::Kernel(format!("{path}: '{}'", text.trim())));
        }
        Ok(MmStat {
            compr_data_size: fields[1],
            mem_used_total: fields[2],
            huge_pages: fields[7],
        })
    }
}

impl Drop for ZramDevice {
    fn drop(&mut self) {
        self.file = None;
        // Errors cannot be reported from drop; a reset first lets the
        // removal succeed even while the device holds data.
        let _ = std::fs::write(self.attr("reset"), "1");
        let _ = std::fs::write(format!("{ZRAM_CONTROL}/hot_remove"), self.id.to_string());
    }
}
