//! The suite's own ext4: a 64 MiB image in the temporary directory on a
//! loop device with direct I/O (so the image's own page cache takes no
//! page), made with the `encrypt` feature and mounted beside it; unmounted,
//! detached and removed when dropped.
//!
//! Why its own file system: since 6.16 ext4 caches a regular file in large
//! folios unless the file system has the `encrypt` (or `verity`) feature
//! (ext4_should_enable_large_folio()), and a large folio changes what the
//! suite compares — which reads mark a page accessed (filemap_read()'s
//! pos_same_folio() is per folio) and the readahead windows
//! (page_cache_ra_order()) — while pageframe's page cache, like ext4 before
//! 6.16, is order 0. No file is encrypted. A kernel that cannot mount the
//! feature (built without fs encryption) gets a plain ext4; one before 6.16
//! has order-0 folios on it anyway. The host's own file systems are not
//! touched.

use crate::conform::ConformError;
use crate::ext4_mount::Ext4Mount;
use crate::zram_serve::{LoopDevice, LoopIo};
use std::path::{Path, PathBuf};

/// Size of the image.
const IMAGE_BYTES: u64 = 64 << 20;

/// A mounted scratch ext4.
pub struct ScratchFs {
    image: PathBuf,
    mount: Option<Ext4Mount>,
    device: Option<LoopDevice>,
}

impl ScratchFs {
    /// Makes and mounts the file system under `parent`. `Ok(Err(reason))`
    /// when this host cannot (no mkfs.ext4, no loop device): the suite is
    /// then skipped with the reason.
    pub fn make(parent: &Path) -> Result<Result<ScratchFs, String>, ConformError> {
        let stem = format!("pageframe-pagecache-{}", std::process::id());
        let mut scratch = ScratchFs {
            image: parent.join(format!("{stem}.img")),
            mount: None,
            device: None,
        };
        std::fs::File::create(&scratch.image)
            .and_then(|file| file.set_len(IMAGE_BYTES))
            .map_err(|err| ConformError::Host(format!("{}: {err}", scratch.image.display())))?;
        let device = match LoopDevice::attach(&scratch.image, 4096, LoopIo::Direct) {
            Ok(device) => device,
            Err(err) => return Ok(Err(format!("no loop device for the scratch ext4: {err}"))),
        };
        let device_path = device.path().to_path_buf();
        scratch.device = Some(device);
        let mount_point = parent.join(format!("{stem}.mnt"));
        let mut failures = Vec::new();
        for features in [&["-O", "encrypt"][..], &[]] {
            match Ext4Mount::make(&device_path, mount_point.clone(), features, "") {
                Ok(mount) => {
                    scratch.mount = Some(mount);
                    return Ok(Ok(scratch));
                }
                Err(err) => failures.push(err),
            }
        }
        Ok(Err(format!(
            "no scratch ext4 could be made: {}",
            failures.join("; ")
        )))
    }

    /// Where it is mounted.
    pub fn dir(&self) -> &Path {
        self.mount.as_ref().map_or(Path::new(""), Ext4Mount::dir)
    }

    /// The sysfs `queue` directory of its loop device.
    pub fn queue(&self) -> Option<PathBuf> {
        let name = self.device.as_ref()?.path().file_name()?.to_owned();
        Some(Path::new("/sys/block").join(name).join("queue"))
    }
}

impl Drop for ScratchFs {
    fn drop(&mut self) {
        // Unmounted first; the loop device then detaches when its last
        // opener goes.
        self.mount = None;
        self.device = None;
        let _ = std::fs::remove_file(&self.image);
    }
}
