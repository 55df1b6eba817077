//! A memory cgroup of the host for one case: made fresh (so that its
//! `memory.stat` counts only the case's pages), read, and removed when
//! dropped. cgroup v1 (`memory.stat` keys `cache`, `rss`, `dirty`) and v2
//! (`file`, `anon`, `file_dirty`) are both read into [`LruCounts`], with
//! the refault counters (`workingset_*_file`; v1's `memory.stat` has only
//! the refaults, so there activations and restores are the host's
//! `/proc/vmstat` totals, whose change over a call of a quiet host is the
//! cgroup's). Reading `memory.stat` flushes the cgroup's statistics, so
//! the kernel's next refault decisions see the lists as they are.

use crate::conform::ConformError;
use std::path::{Path, PathBuf};

/// The counts a case compares, in pages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LruCounts {
    /// Page cache pages (`NR_FILE_PAGES`).
    pub file: u64,
    /// Active file LRU pages.
    pub active_file: u64,
    /// Inactive file LRU pages.
    pub inactive_file: u64,
    /// Dirty page cache pages.
    pub dirty: u64,
    /// Mapped anonymous pages (`NR_ANON_MAPPED`).
    pub anon: u64,
    /// Active anon LRU pages.
    pub active_anon: u64,
    /// Inactive anon LRU pages.
    pub inactive_anon: u64,
    /// Pages read back that had a shadow entry (`workingset_refault_file`).
    pub refault_file: u64,
    /// Refaults activated (`workingset_activate_file`).
    pub activate_file: u64,
    /// Activated refaults that had been active (`workingset_restore_file`).
    pub restore_file: u64,
}

/// Which cgroup interface the host mounts the memory controller with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Version {
    V1,
    V2,
}

/// Where the host mounts the memory controller.
#[derive(Clone, Debug)]
pub struct MemcgRoot {
    path: PathBuf,
    version: Version,
}

impl MemcgRoot {
    /// The memory controller's mount, from `/proc/self/mountinfo`: a
    /// cgroup v1 hierarchy with the `memory` option, else a cgroup v2
    /// mount whose root delegates `memory` to its children. `None` when
    /// neither is there.
    pub fn find() -> Result<Option<MemcgRoot>, ConformError> {
        let mountinfo = crate::conform::host::read("/proc/self/mountinfo")?;
        let mut v2 = None;
        for line in mountinfo.lines() {
            // ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS ... - TYPE SOURCE SUPER
            let Some((left, right)) = line.split_once(" - ") else {
                continue;
            };
            let Some(mount_point) = left.split(' ').nth(4) else {
                continue;
            };
            let mut fields = right.split(' ');
            let (fs_type, super_options) = (fields.next(), fields.nth(1));
            match fs_type {
                Some("cgroup")
                    if super_options.is_some_and(|o| o.split(',').any(|o| o == "memory")) =>
                {
                    return Ok(Some(MemcgRoot {
                        path: PathBuf::from(mount_point),
                        version: Version::V1,
                    }));
                }
                Some("cgroup2") if v2.is_none() => {
                    let control = Path::new(mount_point).join("cgroup.subtree_control");
                    let delegated = std::fs::read_to_string(control)
                        .is_ok_and(|text| text.split_whitespace().any(|c| c == "memory"));
                    if delegated {
                        v2 = Some(MemcgRoot {
                            path: PathBuf::from(mount_point),
                            version: Version::V2,
                        });
                    }
                }
                _ => {}
            }
        }
        Ok(v2)
    }

    /// A fresh child cgroup named `name`.
    pub fn create(&self, name: &str) -> Result<Memcg, ConformError> {
        let path = self.path.join(name);
        if path.exists() {
            // A run that was killed left it; it holds no task.
            let _ = std::fs::remove_dir(&path);
        }
        std::fs::create_dir(&path)
            .map_err(|err| ConformError::Kernel(format!("mkdir {}: {err}", path.display())))?;
        Ok(Memcg {
            path,
            version: self.version,
        })
    }
}

/// A memory cgroup made for one case, removed when dropped (its tasks
/// have exited by then; pages still charged to it do not stop the removal).
pub struct Memcg {
    path: PathBuf,
    version: Version,
}

impl Memcg {
    /// Limits the cgroup's memory to `bytes` (`memory.limit_in_bytes`,
    /// `memory.max`): charges beyond it reclaim the cgroup's own pages.
    pub fn limit(&self, bytes: u64) -> Result<(), ConformError> {
        let knob = match self.version {
            Version::V1 => "memory.limit_in_bytes",
            Version::V2 => "memory.max",
        };
        let path = self.path.join(knob);
        std::fs::write(&path, bytes.to_string())
            .map_err(|err| ConformError::Kernel(format!("{} <- {bytes}: {err}", path.display())))
    }

    /// Moves process `pid` into the cgroup.
    pub fn attach(&self, pid: i32) -> Result<(), ConformError> {
        let procs = self.path.join("cgroup.procs");
        std::fs::write(&procs, pid.to_string())
            .map_err(|err| ConformError::Kernel(format!("{} <- {pid}: {err}", procs.display())))
    }

    /// The cgroup's counts from `memory.stat`.
    pub fn counts(&self, page_size: u64) -> Result<LruCounts, ConformError> {
        let path = self.path.join("memory.stat");
        let text = std::fs::read_to_string(&path)
            .map_err(|err| ConformError::Kernel(format!("{}: {err}", path.display())))?;
        let count = |text: &str, key: &str| -> Result<u64, ConformError> {
            text.lines()
                .find_map(|line| {
                    let (name, value) = line.split_once(' ')?;
                    (name == key).then(|| value.trim().parse::<u64>().ok())?
                })
                .ok_or_else(|| ConformError::Kernel(format!("{}: no '{key}'", path.display())))
        };
        let value = |key: &str| count(&text, key).map(|bytes| bytes / page_size);
        let vmstat;
        let activations = match self.version {
            Version::V1 => {
                vmstat = crate::conform::host::read("/proc/vmstat")?;
                &vmstat
            }
            Version::V2 => &text,
        };
        let (file, anon, dirty) = match self.version {
            Version::V1 => ("cache", "rss", "dirty"),
            Version::V2 => ("file", "anon", "file_dirty"),
        };
        Ok(LruCounts {
            file: value(file)?,
            active_file: value("active_file")?,
            inactive_file: value("inactive_file")?,
            dirty: value(dirty)?,
            anon: value(anon)?,
            active_anon: value("active_anon")?,
            inactive_anon: value("inactive_anon")?,
            // 0 where the kernel does not count them (before 5.9).
            refault_file: count(&text, "workingset_refault_file").unwrap_or(0),
            activate_file: count(activations, "workingset_activate_file").unwrap_or(0),
            restore_file: count(activations, "workingset_restore_file").unwrap_or(0),
        })
    }
}

impl Drop for Memcg {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.path);
    }
}
