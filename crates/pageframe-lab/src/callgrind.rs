//! Instruction counts measured by callgrind: the stable figure on a noisy
//! machine, beside the nanoseconds and cycles of the timed rounds.
//!
//! The measuring process (the `pageframe` binary) runs itself again under
//! `valgrind --tool=callgrind` with the hidden command [`PROBE_COMMAND`]
//! and a probe name. The probe process runs each case twice: a warm-up,
//! then the measured operations between two calls of [`segment_boundary`];
//! callgrind dumps its counters before every such call
//! (`--dump-before`, all parts in one file), so the part after each
//! boundary pair holds exactly one case's instructions. The probe prints one
//! line per case, `<key> <operations>`, and the measuring side divides.
//!
//! Only a binary that handles [`PROBE_COMMAND`] (by calling
//! [`crate::experiments::callgrind_probe`], which knows the experiments'
//! probes) can be re-run this way; it says so with [`enable_probe`]. Elsewhere (the test harness, a library
//! user) and without valgrind, [`measure`] returns why not — the figure is
//! then missing, never estimated.

use std::collections::HashMap;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};

/// The hidden first argument that makes the `pageframe` binary run a probe.
pub const PROBE_COMMAND: &str = "__callgrind-probe";

/// Set by a binary that handles [`PROBE_COMMAND`] (see [`enable_probe`]).
static PROBE_HOST: AtomicBool = AtomicBool::new(false);

/// Declares that the running executable answers [`PROBE_COMMAND`] by
/// calling [`crate::experiments::callgrind_probe`], so that [`measure`] may run it under callgrind.
pub fn enable_probe() {
    PROBE_HOST.store(true, Ordering::Relaxed);
}

/// Why instruction counts are missing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unavailable {
    /// `valgrind` is not installed (`.ci/run` installs Debian's).
    NoValgrind,
    /// The running executable cannot be re-run as a probe.
    NotProbeHost,
    /// valgrind ran but the probe failed or its output did not parse.
    Failed(String),
}

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unavailable::NoValgrind => f.write_str("valgrind is not installed"),
            Unavailable::NotProbeHost => {
                f.write_str("not run from the pageframe binary, which callgrind re-runs")
            }
            Unavailable::Failed(why) => write!(f, "callgrind failed: {why}"),
        }
    }
}

/// Marks a segment boundary in a probe process: callgrind dumps its
/// counters before each call. Kept out of line so that the symbol exists.
#[inline(never)]
pub fn segment_boundary() {
    std::hint::black_box(());
}

/// The symbol pattern `--dump-before` matches.
const BOUNDARY_PATTERN: &str = "*callgrind::segment_boundary*";

/// Runs one probe case in a probe process: `run` once to warm up, then
/// again between two boundaries; prints `<key> <operations>` with the
/// operations the measured run reports.
pub fn probe_case<E>(key: &str, mut run: impl FnMut() -> Result<usize, E>) -> Result<(), E> {
    run()?;
    segment_boundary();
    let operations = run()?;
    segment_boundary();
    println!("{key} {operations}");
    Ok(())
}

/// Instructions per operation of every case of probe `name`, by key.
pub fn measure(name: &str) -> Result<HashMap<String, f64>, Unavailable> {
    if !PROBE_HOST.load(Ordering::Relaxed) {
        return Err(Unavailable::NotProbeHost);
    }
    let exe = std::env::current_exe().map_err(|err| Unavailable::Failed(err.to_string()))?;
    let out_file =
        std::env::temp_dir().join(format!("pageframe-callgrind.{}.out", std::process::id()));
    let output = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!("--dump-before={BOUNDARY_PATTERN}"))
        .arg("--combine-dumps=yes")
        .arg(format!("--callgrind-out-file={}", out_file.display()))
        .arg(exe)
        .arg(PROBE_COMMAND)
        .arg(name)
        .output();
    let output = match output {
        Ok(output) => output,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return Err(Unavailable::NoValgrind)
        }
        Err(err) => return Err(Unavailable::Failed(err.to_string())),
    };
    let dump = std::fs::read_to_string(&out_file);
    let _ = std::fs::remove_file(&out_file);
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let last = stderr.lines().last().unwrap_or("no output").to_string();
        return Err(Unavailable::Failed(format!("{}: {last}", output.status)));
    }
    let dump = dump.map_err(|err| Unavailable::Failed(err.to_string()))?;
    per_operation(&String::from_utf8_lossy(&output.stdout), &dump).map_err(Unavailable::Failed)
}

/// Pairs the probe's `<key> <operations>` lines with the dump's parts:
/// part 1 is start-up and the first warm-up, then each case has its
/// measured part followed by the next warm-up's.
fn per_operation(stdout: &str, dump: &str) -> Result<HashMap<String, f64>, String> {
    let parts: Vec<u64> = dump
        .lines()
        .filter_map(|line| line.strip_prefix("summary:"))
        .map(|count| count.trim().parse::<u64>())
        .collect::<Result<_, _>>()
        .map_err(|err| format!("bad summary line: {err}"))?;
    let mut costs = HashMap::new();
    for (case, line) in stdout.lines().enumerate() {
        let (key, operations) = line
            .rsplit_once(' ')
            .ok_or_else(|| format!("bad probe line '{line}'"))?;
        let operations: u64 = operations
            .parse()
            .map_err(|_| format!("bad probe line '{line}'"))?;
        let instructions = parts
            .get(2 * case + 1)
            .ok_or_else(|| format!("no callgrind part for '{key}'"))?;
        costs.insert(
            key.to_string(),
            *instructions as f64 / operations.max(1) as f64,
        );
    }
    Ok(costs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_pair_with_cases() {
        let dump = "part: 1\nsummary: 5000\ntotals: 5000\npart: 2\nsummary: 2000\n\
                    part: 3\nsummary: 77\npart: 4\nsummary: 9000\npart: 5\nsummary: 10\n";
        let costs = per_operation("a 10\nb 100\n", dump).unwrap();
        assert_eq!(costs["a"], 200.0);
        assert_eq!(costs["b"], 90.0);
        assert!(per_operation("c 1\nd 1\ne 1\n", dump).is_err());
        assert!(per_operation("nonsense\n", dump).is_err());
    }

    #[test]
    fn a_test_harness_is_not_a_probe_host() {
        assert_eq!(measure("bulk"), Err(Unavailable::NotProbeHost));
    }
}
