//! The text of an integer sysctl under /proc/sys: what a write stores and
//! what a read shows. mirrors __do_proc_dointvec() with
//! do_proc_dointvec_minmax_conv(), proc_get_long(), strtoul_lenient() and
//! proc_skip_spaces() of kernel/sysctl.c (6.12).
//!
//! A write parses up to one value per slot, each optionally signed and in
//! C notation (`0x10` is 16, `010` is 8), separated by blanks; each value
//! must fit an `int` and the sysctl's bounds. Values are stored in turn, so
//! a bad value after good ones leaves the good ones stored and fails the
//! write; text after the last slot is ignored. A write of only blanks is
//! EINVAL, while a write of zero bytes succeeds and stores nothing (the
//! handler then runs as after any successful write). Only the first
//! `PAGE_SIZE - 1` bytes are read.

use crate::Errno;

/// `TMPBUFLEN`: a number (with its sign) of `TMPBUFLEN - 1` characters or
/// more is refused, as it could be two numbers or a number and junk.
const TMPBUFLEN: usize = 22;

/// What may follow a number (`proc_wspace_sep`).
const SEPARATORS: [u8; 3] = [b' ', b'\t', b'\n'];

/// What a write to an integer sysctl stored, and how it ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct IntWrite {
    /// The values converted and stored, from the first slot on.
    pub stored: Vec<i32>,
    /// EINVAL when a value failed to parse, to convert or to fit the
    /// bounds (after the values before it were stored), or when text of
    /// one byte or more held no value at all.
    pub result: Result<(), Errno>,
}

/// `isspace()` of the kernel's ctype table: the C blanks and the Latin-1
/// no-break space.
fn is_space(byte: u8) -> bool {
    matches!(byte, b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | b' ' | 0xa0)
}

/// The text with its leading blanks skipped (proc_skip_spaces()).
fn skip_spaces(text: &[u8]) -> &[u8] {
    let blanks = text.iter().take_while(|byte| is_space(**byte)).count();
    &text[blanks..]
}

/// The value of a digit in bases up to 16, if it is one.
fn digit_value(byte: u8) -> Option<u64> {
    match byte.to_ascii_lowercase() {
        digit @ b'0'..=b'9' => Some(u64::from(digit - b'0')),
        letter @ b'a'..=b'f' => Some(u64::from(letter - b'a') + 10),
        _ => None,
    }
}

/// An unsigned number in C notation at the start of `text` (which starts
/// with a digit): its value and the bytes it took; `None` when it overflows
/// 64 bits. mirrors strtoul_lenient() with base 0
/// (_parse_integer_fixup_radix() then _parse_integer()).
fn parse_unsigned(text: &[u8]) -> Option<(u64, usize)> {
    let hex_prefix = text.first() == Some(&b'0')
        && text.get(1).map(u8::to_ascii_lowercase) == Some(b'x')
        && text.get(2).is_some_and(u8::is_ascii_hexdigit);
    let (base, skip) = match text.first() {
        Some(b'0') if hex_prefix => (16, 2),
        Some(b'0') => (8, 0),
        _ => (10, 0),
    };
    let mut value = 0u64;
    let mut overflow = false;
    let mut used = 0;
    for digit in text[skip..].iter().map_while(|byte| digit_value(*byte)) {
        if digit >= base {
            break;
        }
        match value.checked_mul(base).and_then(|v| v.checked_add(digit)) {
            Some(next) => value = next,
            None => overflow = true,
        }
        used += 1;
    }
    (!overflow).then_some((value, skip + used))
}

/// One signed number at the start of `text` (not empty, blanks skipped):
/// whether it is negative, its magnitude and the rest of the text. mirrors
/// proc_get_long() with `proc_wspace_sep` as the allowed followers.
fn get_long(text: &[u8]) -> Result<(bool, u64, &[u8]), Errno> {
    let window = &text[..text.len().min(TMPBUFLEN - 1)];
    let negative = window.first() == Some(&b'-') && text.len() > 1;
    let start = usize::from(negative);
    if !window.get(start).is_some_and(u8::is_ascii_digit) {
        return Err(Errno::EINVAL);
    }
    let (magnitude, used) = parse_unsigned(&window[start..]).ok_or(Errno::EINVAL)?;
    let end = start + used;
    if end == TMPBUFLEN - 1 {
        return Err(Errno::EINVAL);
    }
    if end < text.len() && !SEPARATORS.contains(&text[end]) {
        return Err(Errno::EINVAL);
    }
    Ok((negative, magnitude, &text[end..]))
}

/// The `int` a parsed number stands for, if it fits the type and
/// `[min, max]`. mirrors do_proc_dointvec_minmax_conv().
fn convert(negative: bool, magnitude: u64, min: i32, max: i32) -> Option<i32> {
    let value = if negative {
        0i64.checked_sub(i64::try_from(magnitude).ok()?)?
    } else {
        i64::try_from(magnitude).ok()?
    };
    let value = i32::try_from(value).ok()?;
    (min..=max).contains(&value).then_some(value)
}

/// Parses a write of `text` to an integer sysctl of `slots` values bounded
/// by `[min, max]`, on a kernel of `page_size`-byte pages.
pub(crate) fn parse_int_write(
    text: &[u8],
    slots: usize,
    min: i32,
    max: i32,
    page_size: usize,
) -> IntWrite {
    if text.is_empty() {
        // `!*lenp`: nothing is parsed and the write succeeds.
        return IntWrite {
            stored: Vec::new(),
            result: Ok(()),
        };
    }
    let mut left = &text[..text.len().min(page_size.saturating_sub(1))];
    let mut stored = Vec::new();
    let mut error = None;
    while !left.is_empty() && stored.len() < slots {
        left = skip_spaces(left);
        if left.is_empty() {
            break;
        }
        let parsed = get_long(left).and_then(|(negative, magnitude, rest)| {
            let value = convert(negative, magnitude, min, max).ok_or(Errno::EINVAL)?;
            Ok((value, rest))
        });
        match parsed {
            Ok((value, rest)) => {
                stored.push(value);
                left = rest;
            }
            Err(errno) => {
                error = Some(errno);
                break;
            }
        }
    }
    let result = match (stored.is_empty(), error) {
        (true, error) => Err(error.unwrap_or(Errno::EINVAL)),
        (false, Some(errno)) => Err(errno),
        (false, None) => Ok(()),
    };
    IntWrite { stored, result }
}

/// What reading the sysctl shows: the values separated by tabs, then a
/// newline.
pub(crate) fn render_ints(values: &[i64]) -> String {
    let values: Vec<String> = values.iter().map(i64::to_string).collect();
    format!("{}\n", values.join("\t"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(text: &str) -> IntWrite {
        parse_int_write(text.as_bytes(), 1, 0, i32::MAX, 4096)
    }

    fn stored(text: &str, slots: usize) -> (Vec<i32>, Result<(), Errno>) {
        let parsed = parse_int_write(text.as_bytes(), slots, i32::MIN, i32::MAX, 4096);
        (parsed.stored, parsed.result)
    }

    #[test]
    fn numbers_parse_as_the_kernel_parses_them() {
        assert_eq!(write("4096\n").stored, [4096]);
        assert_eq!(write("  \t42").stored, [42]);
        assert_eq!(write("0x10").stored, [16]);
        assert_eq!(write("0X1f").stored, [31]);
        assert_eq!(write("010").stored, [8]);
        assert_eq!(write("0").stored, [0]);
        assert_eq!(write("-0").stored, [0]);
        assert_eq!(write("2147483647").stored, [i32::MAX]);
        // Text after the only slot is not read.
        assert_eq!(write("7 8 junk").stored, [7]);
        assert_eq!(stored("-2147483648", 1), (vec![i32::MIN], Ok(())));
    }

    #[test]
    fn bad_numbers_are_einval_and_store_nothing() {
        assert_eq!(
            write(""),
            IntWrite {
                stored: Vec::new(),
                result: Ok(())
            }
        );
        for text in [
            "   \n",
            "abc",
            "12abc",
            "08",
            "0x",
            "0xg",
            "-",
            "+5",
            "1.5",
            "2147483648",
            "-1",
            "4096\r",
            "4096\0",
            "99999999999999999999999",
            "000000000000000000004096",
        ] {
            let parsed = write(text);
            assert_eq!(parsed.result, Err(Errno::EINVAL), "{text:?}");
            assert!(parsed.stored.is_empty(), "{text:?}");
        }
        assert_eq!(stored("-2147483649", 1).1, Err(Errno::EINVAL));
        // A value outside the bounds.
        let bounded = parse_int_write(b"3001", 1, 1, 3000, 4096);
        assert_eq!(bounded.result, Err(Errno::EINVAL));
        assert_eq!(
            parse_int_write(b"0", 1, 1, 3000, 4096).stored,
            Vec::<i32>::new()
        );
    }

    #[test]
    fn a_vector_keeps_the_values_before_a_bad_one() {
        assert_eq!(stored("1 2\t3\n4", 4), (vec![1, 2, 3, 4], Ok(())));
        assert_eq!(stored("1 2 3 4 5 6", 4), (vec![1, 2, 3, 4], Ok(())));
        assert_eq!(stored("1 2", 4), (vec![1, 2], Ok(())));
        assert_eq!(stored("1 x 3", 4), (vec![1], Err(Errno::EINVAL)));
        // The Latin-1 no-break space is a blank before a number, but not
        // one of the separators allowed after it.
        assert_eq!(
            parse_int_write(b"\xa02", 4, i32::MIN, i32::MAX, 4096).stored,
            [2]
        );
        let after = parse_int_write(b"1\xa02", 4, i32::MIN, i32::MAX, 4096);
        assert_eq!(after.result, Err(Errno::EINVAL));
        assert!(after.stored.is_empty());
    }

    #[test]
    fn only_a_page_less_one_byte_is_read() {
        let mut text = " ".repeat(4095);
        text.push('5');
        assert_eq!(write(&text).result, Err(Errno::EINVAL));
        let mut text = " ".repeat(4094);
        text.push('5');
        assert_eq!(write(&text).stored, [5]);
        assert_eq!(
            parse_int_write(text.as_bytes(), 1, 0, 9, usize::MAX).stored,
            [5]
        );
    }

    #[test]
    fn reads_are_tab_separated_lines() {
        assert_eq!(render_ints(&[67584]), "67584\n");
        assert_eq!(render_ints(&[256, 256, 32, 0]), "256\t256\t32\t0\n");
    }
}
