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
use crate::zram_serve::{LoopDevice, LoopIo};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Size of the image.
const IMAGE_BYTES: u64 = 64 << 20;

/// A mounted scratch ext4.
pub struct ScratchFs {
    mount_point: PathBuf,
    image: PathBuf,
    mounted: bool,
    device: Option<LoopDevice>,
}

/// Runs a tool; its stderr on failure.
fn run(program: &str, args: &[&str]) -> Result<(), String> {
    let output = Command::new(program)
        .args(args)
        .output()
        .map_err(|err| format!("{program}: {err}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{program} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

impl ScratchFs {
    /// Makes and mounts the file system under `parent`. `Ok(Err(reason))`
    /// when this host cannot (no mkfs.ext4, no loop device): the suite is
    /// then skipped with the reason.
    pub fn make(parent: &Path) -> Result<Result<ScratchFs, String>, ConformError> {
        let stem = format!("pageframe-pagecache-{}", std::process::id());
        let mut scratch = ScratchFs {
            mount_point: parent.join(format!("{stem}.mnt")),
            image: parent.join(format!("{stem}.img")),
            mounted: false,
            device: None,
        };
        let host = |what: &str, err: std::io::Error| ConformError::Host(format!("{what}: {err}"));
        std::fs::File::create(&scratch.image)
            .and_then(|file| file.set_len(IMAGE_BYTES))
            .map_err(|err| host(&scratch.image.display().to_string(), err))?;
        let device = match LoopDevice::attach(&scratch.image, 4096, LoopIo::Direct) {
            Ok(device) => device,
            Err(err) => return Ok(Err(format!("no loop device for the scratch ext4: {err}"))),
        };
        let device_path = device.path().to_string_lossy().into_owned();
        scratch.device = Some(device);
        std::fs::create_dir_all(&scratch.mount_point)
            .map_err(|err| host(&scratch.mount_point.display().to_string(), err))?;
        let mount_point = scratch.mount_point.to_string_lossy().into_owned();
        let mut failures = Vec::new();
        for features in [&["-O", "encrypt"][..], &[]] {
            let mut args = vec!["-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"];
            args.extend_from_slice(features);
            args.push(&device_path);
            let made = run("mkfs.ext4", &args)
                .and_then(|()| run("mount", &["-t", "ext4", &device_path, &mount_point]));
            match made {
                Ok(()) => {
                    scratch.mounted = true;
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
        &self.mount_point
    }

    /// The sysfs `queue` directory of its loop device.
    pub fn queue(&self) -> Option<PathBuf> {
        let name = self.device.as_ref()?.path().file_name()?.to_owned();
        Some(Path::new("/sys/block").join(name).join("queue"))
    }
}

impl Drop for ScratchFs {
    fn drop(&mut self) {
        if self.mounted {
            let _ = Command::new("umount").arg(&self.mount_point).status();
        }
        let _ = std::fs::remove_dir(&self.mount_point);
        // The loop device detaches when its last opener goes.
        self.device = None;
        let _ = std::fs::remove_file(&self.image);
    }
}
