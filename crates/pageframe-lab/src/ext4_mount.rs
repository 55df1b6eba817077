//! An ext4 made on a block device and mounted, for the experiments and
//! suites that run the kernel's own file system: mkfs.ext4 with its inode
//! tables and journal written at once (so nothing of it runs in the
//! background later), then mount; unmounted, and its directory removed,
//! when dropped.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs a tool; its stderr, naming the command, on failure.
pub fn run_tool(program: &str, args: &[&str]) -> Result<(), String> {
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

/// A mounted ext4.
pub struct Ext4Mount {
    dir: PathBuf,
}

impl Ext4Mount {
    /// Makes an ext4 on `device` (with `mkfs_args` before the device, such
    /// as `-O encrypt`) and mounts it at `dir` with `mount_options` (none
    /// when empty).
    pub fn make(
        device: &Path,
        dir: PathBuf,
        mkfs_args: &[&str],
        mount_options: &str,
    ) -> Result<Ext4Mount, String> {
        let device = device.to_str().ok_or("device path")?;
        let mut args = vec!["-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"];
        args.extend_from_slice(mkfs_args);
        args.push(device);
        run_tool("mkfs.ext4", &args)?;
        std::fs::create_dir_all(&dir).map_err(|err| format!("{}: {err}", dir.display()))?;
        let dir_text = dir.to_str().ok_or("mount path")?;
        let mut mount = vec!["-t", "ext4"];
        if !mount_options.is_empty() {
            mount.extend(["-o", mount_options]);
        }
        mount.extend([device, dir_text]);
        if let Err(err) = run_tool("mount", &mount) {
            let _ = std::fs::remove_dir(&dir);
            return Err(err);
        }
        Ok(Ext4Mount { dir })
    }

    /// Where it is mounted.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for Ext4Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.dir).status();
        let _ = std::fs::remove_dir(&self.dir);
    }
}
