//! Byte sizes with the kernel's K/M/G/T suffixes (`memparse()`), and the
//! reverse for messages.

use super::error::DescError;

/// Parses `4096`, `64K`, `2M`, `16G`, `1T`, `1P`, `1E` (suffixes are binary,
/// case-insensitive, an optional trailing `B` or `iB` is accepted) into
/// bytes; a size past 2^64 - 1 (`16E`) is "too large". mirrors memparse().
pub fn parse_size(field: &str, text: &str) -> Result<u64, DescError> {
    let trimmed = text.trim();
    let lower = trimmed.to_ascii_lowercase();
    let bad = || {
        DescError::new(
            field,
            format!("'{trimmed}' is not a size (use e.g. 4096, 64K, 2M, 16G, 1T)"),
        )
    };
    // The number is as long as its digits go (simple_strtoull()), so that
    // a hex number may end in b or e; the suffix is what follows.
    let (radix, number) = match lower.strip_prefix("0x") {
        Some(hex) => (16, hex),
        None => (10, lower.as_str()),
    };
    let digits_end = number
        .find(|c: char| !c.is_digit(radix))
        .unwrap_or(number.len());
    let (digits, suffix) = number.split_at(digits_end);
    let unit = suffix
        .strip_suffix("ib")
        .or_else(|| suffix.strip_suffix('b'))
        .unwrap_or(suffix);
    let shift = match unit {
        "" => 0,
        "k" => 10,
        "m" => 20,
        "g" => 30,
        "t" => 40,
        "p" => 50,
        "e" => 60,
        _ => return Err(bad()),
    };
    let value = u64::from_str_radix(digits, radix).map_err(|_| {
        if !digits.is_empty() && digits.chars().all(|c| c.is_digit(radix)) {
            DescError::new(field, format!("'{trimmed}' is too large"))
        } else {
            bad()
        }
    })?;
    value
        .checked_mul(1u64 << shift)
        .ok_or_else(|| DescError::new(field, format!("'{trimmed}' is too large")))
}

/// Formats a byte count with the largest binary suffix that divides it.
pub fn format_size(bytes: u64) -> String {
    const UNITS: [(u32, &str); 6] = [
        (60, "E"),
        (50, "P"),
        (40, "T"),
        (30, "G"),
        (20, "M"),
        (10, "K"),
    ];
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
        assert_eq!(parse_size("mem", "0x1e").unwrap(), 0x1e);
        assert_eq!(parse_size("mem", "0x1G").unwrap(), 1 << 30);
        assert_eq!(parse_size("mem", "4096b").unwrap(), 4096);
    }

    #[test]
    fn rejects_garbage_naming_the_field() {
        let err = parse_size("node[1].mem", "12X").unwrap_err();
        assert!(err.to_string().starts_with("node[1].mem:"), "{err}");
        assert!(parse_size("mem", "").is_err());
        assert!(parse_size("mem", "99999999999T").is_err());
        for garbage in ["G", "0x", "1.5G", "-1", "+1", "1 G", "1GG", "x1", "1kk"] {
            assert!(parse_size("mem", garbage).is_err(), "{garbage}");
        }
        assert!(parse_size("mem", "99999999999999999999")
            .unwrap_err()
            .to_string()
            .ends_with("is too large"));
    }

    #[test]
    fn exabytes_parse_and_sixteen_of_them_are_too_large() {
        // Regression: memparse()'s E suffix was "not a size", so 16E (2^64)
        // was a syntax error rather than too large.
        assert_eq!(parse_size("mem", "1E").unwrap(), 1 << 60);
        assert_eq!(parse_size("mem", "15e").unwrap(), 15 << 60);
        let err = parse_size("mem", "16E").unwrap_err();
        assert_eq!(err.to_string(), "mem: '16E' is too large");
    }

    #[test]
    fn formats_round_sizes() {
        assert_eq!(format_size(16 << 30), "16G");
        assert_eq!(format_size(3 << 20), "3M");
        assert_eq!(format_size(15 << 60), "15E");
        assert_eq!(format_size(1000), "1000");
    }
}
