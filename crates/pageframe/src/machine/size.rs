//! Byte sizes with the kernel's K/M/G/T suffixes (`memparse()`), and the
//! reverse for messages.

use super::error::DescError;

/// Parses `4096`, `64K`, `2M`, `16G`, `1T` (suffixes are binary, case-insensitive,
/// an optional trailing `B` or `iB` is accepted) into bytes. mirrors memparse().
pub fn parse_size(field: &str, text: &str) -> Result<u64, DescError> {
    let trimmed = text.trim();
    let lower = trimmed.to_ascii_lowercase();
    let body = lower
        .strip_suffix("ib")
        .or_else(|| lower.strip_suffix('b'))
        .unwrap_or(&lower);
    let (digits, shift) = match body.char_indices().last() {
        Some((at, 'k')) => (&body[..at], 10),
        Some((at, 'm')) => (&body[..at], 20),
        Some((at, 'g')) => (&body[..at], 30),
        Some((at, 't')) => (&body[..at], 40),
        Some((at, 'p')) => (&body[..at], 50),
        _ => (body, 0),
    };
    let bad = || {
        DescError::new(
            field,
            format!("'{trimmed}' is not a size (use e.g. 4096, 64K, 2M, 16G, 1T)"),
        )
    };
    let value: u64 = if let Some(hex) = digits.strip_prefix("0x") {
        u64::from_str_radix(hex, 16).map_err(|_| bad())?
    } else {
        digits.parse().map_err(|_| bad())?
    };
    value
        .checked_mul(1u64 << shift)
        .ok_or_else(|| DescError::new(field, format!("'{trimmed}' is too large")))
}

/// Formats a byte count with the largest binary suffix that divides it.
pub fn format_size(bytes: u64) -> String {
    const UNITS: [(u32, &str); 5] = [(50, "P"), (40, "T"), (30, "G"), (20, "M"), (10, "K")];
    for (shift, unit) in UNITS {
        if bytes >= 1u64 << shift && bytes % (1u64 << shift) == 0 {
            return format!("{}{}", bytes >> shift, unit);
        }
    }
    bytes.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_suffixes() {
        assert_eq!(parse_size("mem", "4096").unwrap(), 4096);
        assert_eq!(parse_size("mem", "64K").unwrap(), 64 << 10);
        assert_eq!(parse_size("mem", "2m").unwrap(), 2 << 20);
        assert_eq!(parse_size("mem", "16G").unwrap(), 16 << 30);
        assert_eq!(parse_size("mem", "1TiB").unwrap(), 1 << 40);
        assert_eq!(parse_size("mem", "0x1000").unwrap(), 4096);
    }

    #[test]
    fn rejects_garbage_naming_the_field() {
        let err = parse_size("node[1].mem", "12X").unwrap_err();
        assert!(err.to_string().starts_with("node[1].mem:"), "{err}");
        assert!(parse_size("mem", "").is_err());
        assert!(parse_size("mem", "99999999999T").is_err());
    }

    #[test]
    fn formats_round_sizes() {
        assert_eq!(format_size(16 << 30), "16G");
        assert_eq!(format_size(3 << 20), "3M");
        assert_eq!(format_size(1000), "1000");
    }
}
