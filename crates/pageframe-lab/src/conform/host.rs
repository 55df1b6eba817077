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
