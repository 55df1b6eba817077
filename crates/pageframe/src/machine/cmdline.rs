//! Kernel command-line parameters that shape the machine, parsed as the
//! kernel's early_param handlers do.

use super::desc::{MachineDesc, NumaFake};
use super::error::DescError;
use super::reserve_mem::ReserveMem;
use super::size::parse_size;

/// Applies a kernel command line (`"movablecore=2G mem=16G"`) to a
/// description. Known parameters: `mem=`, `movablecore=`, `kernelcore=`,
/// `page_alloc.shuffle=`, `page_alloc.shuffle_order=`, `numa=fake=`,
/// `transparent_hugepage=`, `reserve_mem=`.
/// Any other parameter is an error naming it, and the description is left
/// unchanged on error.
pub fn apply_cmdline(desc: &mut MachineDesc, cmdline: &str) -> Result<(), DescError> {
    let mut updated = desc.clone();
    for param in cmdline.split_whitespace() {
        // A bare boolean key (`page_alloc.shuffle`) means Y, as
        // param_set_bool() reads a missing value; `key=` gives "".
        let (key, value, bare) = match param.split_once('=') {
            Some((key, value)) => (key, value, false),
            None => (param, "", true),
        };
        let field = format!("cmdline {key}");
        match key {
            "mem" => updated.mem_limit = Some(parse_size(&field, value)?),
            "movablecore" => {
                updated.movablecore = Some(parse_percent_or_size(&field, value, desc)?)
            }
            "kernelcore" => updated.kernelcore = Some(parse_percent_or_size(&field, value, desc)?),
            // mirrors page_alloc_shuffle(): SHUFFLE_FORCE_DISABLE sticks and
            // clears any enable; an enable is ignored once disabled.
            "page_alloc.shuffle" => match if bare { Some(true) } else { kstrtobool(value) } {
                Some(true) => updated.shuffle.enable = !updated.shuffle.force_disable,
                Some(false) => {
                    updated.shuffle.force_disable = true;
                    updated.shuffle.enable = false;
                }
                None => {
                    return Err(DescError::new(
                        field,
                        format!("'{value}' is not a boolean (Y, N, true, false, 1, 0, on, off)"),
                    ))
                }
            },
            "page_alloc.shuffle_order" => {
                let order = value
                    .parse::<u8>()
                    .ok()
                    .filter(|&order| order <= updated.max_order)
                    .ok_or_else(|| {
                        DescError::new(
                            &field,
                            format!("'{value}' is not an order from 0 to {}", updated.max_order),
                        )
                    })?;
                updated.shuffle.order = Some(order);
            }
            "numa" => updated.numa_fake = Some(parse_numa_fake(&field, value)?),
            "reserve_mem" => {
                let entry = ReserveMem::parse(value, &updated.reserve_mem)?;
                updated.reserve_mem.push(entry);
            }
            // mirrors setup_transparent_hugepage(): always, madvise or never.
            "transparent_hugepage" => {
                updated.transparent_hugepage = match value {
                    "always" | "madvise" => true,
                    "never" => false,
                    _ => {
                        return Err(DescError::new(
                            field,
                            format!("'{value}' is not always, madvise or never"),
                        ))
                    }
                }
            }
            _ => {
                return Err(DescError::new(
                    "cmdline",
                    format!("unknown parameter '{key}' (known: mem=, movablecore=, kernelcore=, page_alloc.shuffle=, page_alloc.shuffle_order=, numa=fake=, transparent_hugepage=, reserve_mem=)"),
                ))
            }
        }
    }
    *desc = updated;
    Ok(())
}

/// A kernel boolean parameter (param_set_bool(): y/Y/1/n/N/0, and on/off).
/// mirrors kstrtobool(): the first character decides (`y`, `Y`, `t`,
/// `T`, `1`; `n`, `N`, `f`, `F`, `0`), or the second after an `o` (`on`,
/// `off`); anything else, the empty string too, is EINVAL.
fn kstrtobool(value: &str) -> Option<bool> {
    let bytes = value.as_bytes();
    match bytes.first()? {
        b'y' | b'Y' | b't' | b'T' | b'1' => Some(true),
        b'n' | b'N' | b'f' | b'F' | b'0' => Some(false),
        b'o' | b'O' => match bytes.get(1)? {
            b'n' | b'N' => Some(true),
            b'f' | b'F' => Some(false),
            _ => None,
        },
        _ => None,
    }
}

/// `numa=fake=N` or `numa=fake=NU`. mirrors numa_emu_cmdline().
fn parse_numa_fake(field: &str, value: &str) -> Result<NumaFake, DescError> {
    let bad = || {
        DescError::new(
            field,
            format!("'{value}' is not fake=N or fake=NU with N from 1 to 1024"),
        )
    };
    let spec = value.strip_prefix("fake=").ok_or_else(bad)?;
    let (digits, uniform) = match spec.strip_suffix(['U', 'u']) {
        Some(digits) => (digits, true),
        None => (spec, false),
    };
    let count: u16 = digits
        .parse()
        .ok()
        .filter(|count| (1..=1024).contains(count))
        .ok_or_else(bad)?;
    Ok(if uniform {
        NumaFake::Uniform(count)
    } else {
        NumaFake::Interleave(count)
    })
}

/// `kernelcore=`/`movablecore=` take a size or a percentage of memory
/// (cmdline_parse_core()).
fn parse_percent_or_size(field: &str, value: &str, desc: &MachineDesc) -> Result<u64, DescError> {
    if let Some(percent) = value.strip_suffix('%') {
        let percent: u64 = percent
            .parse()
            .ok()
            .filter(|&percent| percent <= 100)
            .ok_or_else(|| {
                DescError::new(
                    field,
                    format!("'{value}' is not a percentage from 0% to 100%"),
                )
            })?;
        return Ok((desc.total_bytes() as u128 * percent as u128 / 100) as u64);
    }
    parse_size(field, value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn applies_known_parameters() {
        let mut desc = MachineDesc::default();
        apply_cmdline(&mut desc, "movablecore=1G  mem=2G").unwrap();
        assert_eq!(desc.movablecore, Some(1 << 30));
        assert_eq!(desc.mem_limit, Some(2 << 30));
        apply_cmdline(&mut desc, "kernelcore=50%").unwrap();
        assert_eq!(desc.kernelcore, Some(2 << 30));
    }

    #[test]
    fn shuffle_force_disable_wins_in_either_order() {
        let mut desc = MachineDesc::default();
        apply_cmdline(&mut desc, "page_alloc.shuffle=1").unwrap();
        assert!(desc.shuffle_enabled());
        apply_cmdline(&mut desc, "page_alloc.shuffle=0 page_alloc.shuffle=Y").unwrap();
        assert!(!desc.shuffle_enabled());
        let mut cached = MachineDesc {
            memory_side_cache: Some(crate::machine::MemorySideCache {
                size: 1 << 30,
                line: 64,
                per_node: false,
            }),
            ..MachineDesc::default()
        };
        assert!(cached.shuffle_enabled(), "a memory-side cache enables it");
        apply_cmdline(
            &mut cached,
            "page_alloc.shuffle=N page_alloc.shuffle_order=9",
        )
        .unwrap();
        assert!(!cached.shuffle_enabled());
        assert_eq!(cached.shuffle_order(), 9);
        assert!(apply_cmdline(&mut cached, "page_alloc.shuffle_order=11").is_err());
        assert!(apply_cmdline(&mut cached, "page_alloc.shuffle=maybe").is_err());
    }

    /// Booleans read as kstrtobool() reads them: by the first character
    /// (the second after an `o`); `key=` with nothing is EINVAL, a bare key
    /// is Y.
    #[test]
    fn shuffle_booleans_read_as_kstrtobool_does() {
        let values = [
            ("yes", true),
            ("ON", true),
            ("1x", true),
            ("true", true),
            ("no", false),
            ("false", false),
            ("F", false),
        ];
        for (value, enabled) in values {
            let mut desc = MachineDesc::default();
            apply_cmdline(&mut desc, &format!("page_alloc.shuffle={value}")).unwrap();
            assert_eq!(desc.shuffle_enabled(), enabled, "{value}");
        }
        let mut desc = MachineDesc::default();
        apply_cmdline(&mut desc, "page_alloc.shuffle").unwrap();
        assert!(desc.shuffle_enabled(), "a bare key is Y");
        for bad in ["", "o", "ox", "maybe", "2"] {
            let before = desc.clone();
            let param = format!("page_alloc.shuffle={bad}");
            assert!(apply_cmdline(&mut desc, &param).is_err(), "{param}");
            assert_eq!(desc, before, "{param} changed the description");
        }
    }

    #[test]
    fn transparent_hugepage_takes_the_kernel_words() {
        let mut desc = MachineDesc::default();
        apply_cmdline(&mut desc, "transparent_hugepage=madvise").unwrap();
        assert!(desc.transparent_hugepage);
        apply_cmdline(&mut desc, "transparent_hugepage=never").unwrap();
        assert!(!desc.transparent_hugepage);
        apply_cmdline(&mut desc, "transparent_hugepage=always").unwrap();
        let before = desc.clone();
        let err = apply_cmdline(&mut desc, "transparent_hugepage=sometimes").unwrap_err();
        assert_eq!(err.field, "cmdline transparent_hugepage");
        assert_eq!(desc, before, "a bad value changes nothing");
    }

    #[test]
    fn numa_fake_forms() {
        let mut desc = MachineDesc::default();
        apply_cmdline(&mut desc, "numa=fake=4U").unwrap();
        assert_eq!(desc.numa_fake, Some(NumaFake::Uniform(4)));
        apply_cmdline(&mut desc, "numa=fake=2").unwrap();
        assert_eq!(desc.numa_fake, Some(NumaFake::Interleave(2)));
        for bad in ["numa=fake=", "numa=fake=0", "numa=on", "numa=fake=xU"] {
            assert_eq!(
                apply_cmdline(&mut desc, bad).unwrap_err().field,
                "cmdline numa"
            );
        }
    }

    #[test]
    fn unknown_or_bad_parameter_changes_nothing() {
        let mut desc = MachineDesc::default();
        let before = desc.clone();
        assert_eq!(
            apply_cmdline(&mut desc, "mem=1G bogus=1")
                .unwrap_err()
                .field,
            "cmdline"
        );
        assert_eq!(
            apply_cmdline(&mut desc, "mem=1Q").unwrap_err().field,
            "cmdline mem"
        );
        assert_eq!(
            apply_cmdline(&mut desc, "kernelcore=120%")
                .unwrap_err()
                .field,
            "cmdline kernelcore"
        );
        assert_eq!(desc, before);
    }
}
