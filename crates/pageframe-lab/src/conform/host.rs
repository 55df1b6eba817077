//! What the suites read from the running host: root, the kernel command
//! line, CPU counts and sysctls. `/proc/zoneinfo`-shaped text is read by
//! [`crate::trace::host::parse_zoneinfo`], on the host's file and on
//! pageframe's view alike, so both sides are read the same way.

use super::ConformError;

/// True when the process runs as root.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A host file as text.
pub fn read(path: &str) -> Result<String, ConformError> {
    std::fs::read_to_string(path).map_err(|err| ConformError::Host(format!("{path}: {err}")))
}

/// A host file holding one number (a sysctl).
pub fn read_number(path: &str) -> Result<u64, ConformError> {
    let text = read(path)?;
    text.trim()
        .parse()
        .map_err(|err| ConformError::Host(format!("{path}: '{}': {err}", text.trim())))
}

/// The value of `name=` on the kernel command line, if given.
pub fn cmdline_param(name: &str) -> Result<Option<String>, ConformError> {
    let cmdline = read("/proc/cmdline")?;
    let prefix = format!("{name}=");
    Ok(cmdline
        .split_whitespace()
        .take_while(|word| *word != "--")
        .filter_map(|word| word.strip_prefix(prefix.as_str()))
        .last()
        .map(str::to_string))
}

/// How many CPUs a sysfs list such as `0-3,8` names.
pub fn count_in_list(path: &str) -> Result<usize, ConformError> {
    let text = read(path)?;
    let mut count = 0usize;
    for part in text.trim().split(',').filter(|part| !part.is_empty()) {
        let bad = |err: std::num::ParseIntError| ConformError::Host(format!("{path}: {err}"));
        let (first, last) = match part.split_once('-') {
            Some((first, last)) => (
                first.trim().parse::<usize>().map_err(bad)?,
                last.trim().parse::<usize>().map_err(bad)?,
            ),
            None => {
                let id = part.trim().parse::<usize>().map_err(bad)?;
                (id, id)
            }
        };
        count += last.saturating_sub(first) + 1;
    }
    Ok(count)
}

/// A lock on the host's memory-management state between suites and
/// processes: the suites that read the host's watermarks and per-CPU lists
/// hold it shared, the `sysctl` suite, which changes them for a moment,
/// holds it exclusive (flock(2) on a file in the temporary directory;
/// released when dropped).
pub struct HostStateLock {
    _file: std::fs::File,
}

impl HostStateLock {
    /// Waits for the lock: `exclusive` for a suite that writes host state.
    pub fn take(exclusive: bool) -> Result<HostStateLock, ConformError> {
        let path = std::env::temp_dir().join("pageframe-conform-host.lock");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|err| ConformError::Host(format!("{}: {err}", path.display())))?;
        let operation = if exclusive {
            libc::LOCK_EX
        } else {
            libc::LOCK_SH
        };
        // SAFETY: flock on a descriptor this function owns; no memory is
        // passed.
        let done = unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&file), operation) };
        if done != 0 {
            let err = std::io::Error::last_os_error();
            return Err(ConformError::Host(format!(
                "flock {}: {err}",
                path.display()
            )));
        }
        Ok(HostStateLock { _file: file })
    }
}

/// Writes `text` to a host sysctl in one write(2), as `echo -n` does: the
/// Linux errno when the kernel refuses it.
pub fn write_sysctl(path: &str, text: &[u8]) -> Result<Result<(), i32>, ConformError> {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|err| ConformError::Host(format!("{path}: {err}")))?;
    Ok(match file.write(text) {
        Ok(_) => Ok(()),
        Err(err) => Err(err
            .raw_os_error()
            .ok_or_else(|| ConformError::Host(format!("{path}: {err}")))?),
    })
}
