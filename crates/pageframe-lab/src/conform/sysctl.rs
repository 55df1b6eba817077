//! The `sysctl` conformance suite: writes to the page allocator's sysctls
//! (`vm.min_free_kbytes`, `watermark_scale_factor`,
//! `watermark_boost_factor`, `percpu_pagelist_high_fraction`,
//! `lowmem_reserve_ratio`), each made on the live kernel and on pageframe
//! booted like the host (`HostMachine`), and compared by what they leave:
//! the write's result (`ok` or the errno), the value read back, and every
//! zone's watermarks, protection and per-CPU batch, high_min and high_max
//! in `/proc/zoneinfo`. The cases cover values in range, the bounds, C
//! notation (`0x`, octal), junk after a number, partial vectors, and a
//! write of zero bytes.
//!
//! The host is changed for the moment of a case: each sysctl's value is
//! read before the suite, and the one a case wrote is written back after
//! it, also when the case fails. Two effects last, as after any write of
//! these files: a write of min_free_kbytes makes it the kernel's
//! `user_min_free_kbytes` (kept through a later memory hotplug), and a
//! write of min_free_kbytes or watermark_scale_factor drops a watermark
//! boost in force. pageframe's machine starts from the host's values. The changes are small (min_free_kbytes halved or raised by a
//! MiB, a scale factor of at most 2%) so that kswapd has nothing to do. The
//! suite holds [`HostStateLock`] exclusive, so a `zoneinfo` suite of
//! another process does not read the host in between; it is not run by the
//! report page (`suites::PAGE_SKIPS`).

use super::host::{is_root, read, write_sysctl, HostStateLock};
use super::host_machine::HostMachine;
use super::zoneinfo::{zone_pairs, zone_rows, WATERMARKS};
use super::{errno_label, ConformError, ConformRow, SuiteOutcome, SuiteResult};
use crate::host_layout::write_host_sysctls;
use crate::trace::host::parse_zoneinfo;
use pageframe::{AllocOptions, LocalPageAllocator, VmSysctl};

/// The suite's name.
const SUITE: &str = "sysctl";

/// One case: a name, the sysctl, and the text written (built from the
/// host's value of the sysctl when it depends on it).
struct Case {
    name: &'static str,
    sysctl: VmSysctl,
    text: fn(u64) -> String,
}

/// The cases, in order.
const CASES: &[Case] = &[
    Case {
        name: "min_free_kbytes halved",
        sysctl: VmSysctl::MinFreeKbytes,
        text: |host| format!("{}\n", host / 2),
    },
    Case {
        name: "min_free_kbytes + 1 MiB",
        sysctl: VmSysctl::MinFreeKbytes,
        text: |host| format!("{}\n", host + 1024),
    },
    Case {
        name: "min_free_kbytes in hex",
        sysctl: VmSysctl::MinFreeKbytes,
        text: |_| "0x8000".into(),
    },
    Case {
        name: "min_free_kbytes with a second number",
        sysctl: VmSysctl::MinFreeKbytes,
        text: |host| format!("  {} 5\n", host.saturating_sub(1)),
    },
    Case {
        name: "min_free_kbytes negative",
        sysctl: VmSysctl::MinFreeKbytes,
        text: |_| "-1\n".into(),
    },
    Case {
        name: "min_free_kbytes with junk",
        sysctl: VmSysctl::MinFreeKbytes,
        text: |host| format!("{host}kB\n"),
    },
    Case {
        name: "min_free_kbytes past INT_MAX",
        sysctl: VmSysctl::MinFreeKbytes,
        text: |_| "2147483648\n".into(),
    },
    Case {
        name: "min_free_kbytes of zero bytes",
        sysctl: VmSysctl::MinFreeKbytes,
        text: |_| String::new(),
    },
    Case {
        name: "min_free_kbytes of blanks",
        sysctl: VmSysctl::MinFreeKbytes,
        text: |_| " \n".into(),
    },
    Case {
        name: "watermark_scale_factor 200",
        sysctl: VmSysctl::WatermarkScaleFactor,
        text: |_| "200\n".into(),
    },
    Case {
        name: "watermark_scale_factor 1",
        sysctl: VmSysctl::WatermarkScaleFactor,
        text: |_| "1".into(),
    },
    Case {
        name: "watermark_scale_factor 0",
        sysctl: VmSysctl::WatermarkScaleFactor,
        text: |_| "0\n".into(),
    },
    Case {
        name: "watermark_scale_factor 3001",
        sysctl: VmSysctl::WatermarkScaleFactor,
        text: |_| "3001\n".into(),
    },
    Case {
        name: "watermark_scale_factor octal",
        sysctl: VmSysctl::WatermarkScaleFactor,
        text: |_| "017\n".into(),
    },
    Case {
        name: "watermark_scale_factor 08",
        sysctl: VmSysctl::WatermarkScaleFactor,
        text: |_| "08\n".into(),
    },
    Case {
        name: "watermark_boost_factor 0",
        sysctl: VmSysctl::WatermarkBoostFactor,
        text: |_| "0\n".into(),
    },
    Case {
        name: "watermark_boost_factor -5",
        sysctl: VmSysctl::WatermarkBoostFactor,
        text: |_| "-5\n".into(),
    },
    Case {
        name: "percpu_pagelist_high_fraction 8",
        sysctl: VmSysctl::PercpuPagelistHighFraction,
        text: |_| "8\n".into(),
    },
    Case {
        name: "percpu_pagelist_high_fraction 100",
        sysctl: VmSysctl::PercpuPagelistHighFraction,
        text: |_| "100\n".into(),
    },
    Case {
        name: "percpu_pagelist_high_fraction 7",
        sysctl: VmSysctl::PercpuPagelistHighFraction,
        text: |_| "7\n".into(),
    },
    Case {
        name: "lowmem_reserve_ratio halved",
        sysctl: VmSysctl::LowmemReserveRatio,
        text: |_| "128\t128\t16\t0\t0\n".into(),
    },
    Case {
        name: "lowmem_reserve_ratio of two values",
        sysctl: VmSysctl::LowmemReserveRatio,
        text: |_| "64 512\n".into(),
    },
    Case {
        name: "lowmem_reserve_ratio with junk",
        sysctl: VmSysctl::LowmemReserveRatio,
        text: |_| "16 x 8\n".into(),
    },
    Case {
        name: "lowmem_reserve_ratio negative",
        sysctl: VmSysctl::LowmemReserveRatio,
        text: |_| "-3 1 0\n".into(),
    },
];

/// The path of a sysctl on the host.
fn path(sysctl: VmSysctl) -> String {
    format!("/proc/sys/vm/{}", sysctl.name())
}

/// The values of a sysctl's text, as many as pageframe's sysctl has (the
/// host's `lowmem_reserve_ratio` also has ZONE_DEVICE's).
fn values(text: &str, count: usize) -> String {
    let values: Vec<&str> = text.split_whitespace().take(count).collect();
    values.join(" ")
}

/// The host's sysctls as the suite found them.
struct Saved(Vec<(VmSysctl, String)>);

impl Saved {
    /// The saved text of `sysctl`.
    fn text(&self, sysctl: VmSysctl) -> &str {
        self.0
            .iter()
            .find(|(saved, _)| *saved == sysctl)
            .map_or("", |(_, text)| text.as_str())
    }

    /// Writes `sysctl`'s saved text back to the host.
    fn restore(&self, sysctl: VmSysctl) -> Result<(), ConformError> {
        write_sysctl(&path(sysctl), self.text(sysctl).as_bytes())?.map_err(|errno| {
            ConformError::Host(format!(
                "restoring {}: {}",
                path(sysctl),
                errno_label(errno)
            ))
        })
    }
}

/// Writes a case's sysctl back when dropped, also on an early return.
struct RestoreOnDrop<'a>(&'a Saved, VmSysctl);

impl Drop for RestoreOnDrop<'_> {
    fn drop(&mut self) {
        // Best effort on an early return; the case restores and checks
        // itself first.
        let _ = self.0.restore(self.1);
    }
}

/// The rows of one case, with the host in its saved state before it.
fn case_rows(
    case: &Case,
    host_machine: &HostMachine,
    saved: &Saved,
    rows: &mut Vec<ConformRow>,
) -> Result<(), ConformError> {
    let host_value = saved
        .text(case.sysctl)
        .split_whitespace()
        .next()
        .and_then(|value| value.parse().ok())
        .unwrap_or(0);
    let text = (case.text)(host_value);
    let mut allocator =
        LocalPageAllocator::boot_layout(host_machine.layout()?, AllocOptions::default())
            .map_err(|err| ConformError::Boot(err.to_string()))?;
    // The machine starts from the host's values where they are not the
    // defaults (a sysctl.conf), as the host does.
    write_host_sysctls(
        &mut allocator,
        |sysctl| Some(saved.text(sysctl).to_string()),
        |_| false,
    )
    .map_err(|(sysctl, text, errno)| {
        ConformError::Host(format!("{}: {text:?}: {errno}", path(sysctl)))
    })?;
    let ours_result = allocator.write_sysctl(case.sysctl, text.as_bytes());
    let restore = RestoreOnDrop(saved, case.sysctl);
    let host_result = write_sysctl(&path(case.sysctl), text.as_bytes())?;
    let host_back = read(&path(case.sysctl))?;
    let host_zones = parse_zoneinfo(&read("/proc/zoneinfo")?);
    saved.restore(case.sysctl)?;
    std::mem::forget(restore);
    let label = |result: Result<(), i32>| result.map_or_else(errno_label, |()| "ok".into());
    let prefix = format!("{} ({text:?}): ", case.name);
    rows.push(ConformRow::compare(
        format!("{prefix}result"),
        label(host_result),
        label(ours_result.map_err(|errno| errno.code())),
    ));
    let ours_back = allocator.read_sysctl(case.sysctl);
    let count = ours_back.split_whitespace().count();
    rows.push(ConformRow::compare(
        format!("{prefix}vm.{}", case.sysctl.name()),
        values(&host_back, count),
        values(&ours_back, count),
    ));
    let ours_zones = parse_zoneinfo(&pageframe::proc::zoneinfo(&allocator));
    for (zone, mine) in zone_pairs(&host_zones, &ours_zones) {
        zone_rows(&prefix, &WATERMARKS, zone, mine, rows);
    }
    Ok(())
}

/// Runs the suite; skipped without root (writing sysctls and reading
/// `/proc/iomem`'s addresses need it).
pub fn run() -> Result<SuiteResult, ConformError> {
    if !is_root() {
        return Ok(SuiteResult::skipped(
            SUITE,
            "not root (writing /proc/sys/vm needs it)",
        ));
    }
    let _lock = HostStateLock::take(true)?;
    let host_machine = HostMachine::read()?;
    let saved = Saved(
        VmSysctl::ALL
            .iter()
            .map(|sysctl| Ok((*sysctl, read(&path(*sysctl))?)))
            .collect::<Result<_, ConformError>>()?,
    );
    let mut rows = Vec::new();
    for case in CASES {
        case_rows(case, &host_machine, &saved, &mut rows)?;
    }
    Ok(SuiteResult {
        suite: SUITE,
        outcome: SuiteOutcome::Ran(rows),
    })
}
