//! The host's memory as /proc/meminfo gives it, for the checks that refuse
//! a run the host cannot hold before anything is allocated (there is no
//! swap here: a run that does not fit is killed by the OOM killer part way).
//!
//! Owns nothing; reads /proc/meminfo when asked.

/// The host's `MemAvailable`, in bytes; `None` when /proc/meminfo cannot
/// be read or lacks it.
pub fn available() -> Option<u64> {
    meminfo_bytes(
        &std::fs::read_to_string("/proc/meminfo").ok()?,
        "MemAvailable:",
    )
}

/// The host's `MemTotal`, in bytes; `None` when /proc/meminfo cannot be
/// read or lacks it.
pub fn total() -> Option<u64> {
    meminfo_bytes(&std::fs::read_to_string("/proc/meminfo").ok()?, "MemTotal:")
}

/// `bytes` in GiB with one decimal, as the memory checks' messages give it.
pub fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

/// `bytes` in GiB with one decimal, or in MiB below 1 GiB, for a message
/// that adds a small figure to a large one.
pub fn gib_or_mib(bytes: u64) -> String {
    if bytes < 1 << 30 {
        format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
    } else {
        gib(bytes)
    }
}

/// The value of `key` (`MemAvailable:`) in /proc/meminfo's text, in bytes
/// (the file gives kB).
fn meminfo_bytes(text: &str, key: &str) -> Option<u64> {
    text.lines()
        .find_map(|line| line.strip_prefix(key))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse::<u64>().ok())
        .and_then(|kib| kib.checked_mul(1024))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mem_available_is_read_in_bytes() {
        let text = "MemTotal:       24542060 kB\nMemFree:          812300 kB\nMemAvailable:   22101844 kB\n";
        assert_eq!(
            meminfo_bytes(text, "MemAvailable:"),
            Some(22_101_844 * 1024)
        );
        assert_eq!(meminfo_bytes(text, "MemTotal:"), Some(24_542_060 * 1024));
        assert_eq!(gib_or_mib(24 << 20), "24.0 MiB");
        assert_eq!(gib_or_mib(3 << 29), "1.5 GiB");
        assert_eq!(meminfo_bytes(text, "SwapTotal:"), None);
        assert_eq!(
            meminfo_bytes("MemAvailable: lots kB\n", "MemAvailable:"),
            None
        );
        assert_eq!(
            meminfo_bytes("MemAvailable: 18446744073709551615 kB\n", "MemAvailable:"),
            None
        );
    }
}
