//! Kernel command-line parameters that shape the machine, parsed as the
//! kernel's early_param handlers do.

use super::desc::MachineDesc;
use super::size::parse_size;
use crate::error::DescError;

/// Applies a kernel command line (`"movablecore=2G mem=16G"`) to a
/// description. Known parameters: `mem=`, `movablecore=`, `kernelcore=`.
/// Any other parameter is an error naming it, and the description is left
/// unchanged on error.
pub fn apply_cmdline(desc: &mut MachineDesc, cmdline: &str) -> Result<(), DescError> {
    let mut updated = desc.clone();
    for param in cmdline.split_whitespace() {
        let (key, value) = param.split_once('=').unwrap_or((param, ""));
        let field = format!("cmdline {key}");
        match key {
            "mem" => updated.mem_limit = Some(parse_size(&field, value)?),
            "movablecore" => {
                updated.movablecore = Some(parse_percent_or_size(&field, value, desc)?)
            }
            "kernelcore" => updated.kernelcore = Some(parse_percent_or_size(&field, value, desc)?),
            _ => {
                return Err(DescError::new(
                    "cmdline",
                    format!("unknown parameter '{key}' (known: mem=, movablecore=, kernelcore=)"),
                ))
            }
        }
    }
    *desc = updated;
    Ok(())
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
