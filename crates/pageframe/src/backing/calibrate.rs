//! Calibration of the simulation's prices on the host's real arena, and
//! the file that carries them to the simulation.
//!
//! [`calibrate`] times, on [`ArenaBacking`]s, each event the [`SimCosts`]
//! model charges: unmapping a page from the direct map while a second
//! thread spins on another host CPU (a protection change and a shootdown)
//! and while it sleeps (the change alone; the difference is the global
//! flush), zeroing and copying a page through the direct map, and the
//! mermap's zeroing with one slot per window (every get a map and a local
//! flush) against 64 slots (a flush per 64 maps), from which the local flush
//! and the map (all the mermap costs beyond zeroing) are solved.
//!
//! The file is `key = integer` lines, `#` comments: the six prices of
//! [`SimCosts`] by the names of [`SimCosts::FILE_KEYS`]. [`SimCosts::resolve`]
//! finds it (the `PAGEFRAME_SIM_COSTS` environment variable, else
//! [`SIM_COSTS_FILE`] in the current directory) or falls back on the
//! documented defaults, and says which.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use super::os::{allowed_cpus, pin_current_thread};
use super::{ArenaBacking, ArenaConfig, Backing, BackingError, MermapConfig, SimCosts};
use crate::types::{CpuId, Pfn};

/// The calibration file's default name, in the current directory.
pub const SIM_COSTS_FILE: &str = "pageframe-sim-costs.toml";
/// The environment variable naming a calibration file.
pub const SIM_COSTS_ENV: &str = "PAGEFRAME_SIM_COSTS";

/// The most pages [`calibrate`] times per arena (4 GiB of 4 KiB pages; it
/// builds and fills two arenas of this size).
pub const CALIBRATE_MAX_PAGES: u64 = 1 << 20;
/// The most pages times rounds (the warm-up included) [`calibrate`] times:
/// a few minutes on a current host.
pub const CALIBRATE_MAX_PAGE_ROUNDS: u64 = 1 << 24;
/// The largest calibration file [`SimCosts::resolve`] reads (one is a few
/// hundred bytes).
pub const SIM_COSTS_MAX_BYTES: u64 = 64 << 10;

/// Where a simulation's prices came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CostSource {
    /// The documented defaults ([`SimCosts::default`]): no file found.
    Defaults,
    /// A calibration file, at this path.
    File(String),
}

impl std::fmt::Display for CostSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CostSource::Defaults => f.write_str("documented defaults (no calibration file)"),
            CostSource::File(path) => write!(f, "calibration file {path}"),
        }
    }
}

impl SimCosts {
    /// The file's keys, in the order of the fields.
    pub const FILE_KEYS: [&'static str; 6] = [
        "protection_change_ns",
        "global_flush_ns",
        "local_flush_ns",
        "zero_page_ns",
        "mermap_map_ns",
        "copy_byte_ps",
    ];

    fn fields_mut(&mut self) -> [&mut u64; 6] {
        [
            &mut self.protection_change,
            &mut self.global_flush,
            &mut self.local_flush,
            &mut self.zero_page,
            &mut self.mermap_map,
            &mut self.copy_byte_ps,
        ]
    }

    /// The prices as a calibration file, after the `header` comment lines.
    pub fn to_file_text(&self, header: &[String]) -> String {
        let mut costs = *self;
        let mut text: String = header.iter().map(|line| format!("# {line}\n")).collect();
        for (key, value) in Self::FILE_KEYS.iter().zip(costs.fields_mut()) {
            text.push_str(&format!("{key} = {value}\n"));
        }
        text
    }

    /// Parses a calibration file: every key once, nothing else; an error
    /// names the line.
    pub fn from_file_text(text: &str) -> Result<SimCosts, String> {
        let mut costs = SimCosts::NONE;
        let mut seen = [false; 6];
        for (number, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = || format!("line {}: expected `key = integer`: {line:?}", number + 1);
            let (key, value) = line.split_once('=').ok_or_else(bad)?;
            let at = Self::FILE_KEYS
                .iter()
                .position(|known| *known == key.trim())
                .ok_or_else(|| format!("line {}: unknown key {:?}", number + 1, key.trim()))?;
            if std::mem::replace(&mut seen[at], true) {
                return Err(format!("line {}: {} given twice", number + 1, key.trim()));
            }
            *costs.fields_mut()[at] = value.trim().parse().map_err(|_| bad())?;
        }
        match seen.iter().position(|seen| !seen) {
            Some(missing) => Err(format!("{} is missing", Self::FILE_KEYS[missing])),
            None => Ok(costs),
        }
    }

    /// The prices the simulation should charge: the calibration file named
    /// by `PAGEFRAME_SIM_COSTS`, else [`SIM_COSTS_FILE`] in the current
    /// directory, else the defaults. A file that exists but does not parse
    /// is an error.
    pub fn resolve() -> Result<(SimCosts, CostSource), String> {
        let path = std::env::var(SIM_COSTS_ENV).ok().or_else(|| {
            std::path::Path::new(SIM_COSTS_FILE)
                .exists()
                .then(|| SIM_COSTS_FILE.to_string())
        });
        match path {
            None => Ok((SimCosts::default(), CostSource::Defaults)),
            Some(path) => {
                let text = read_bounded(&path).map_err(|err| format!("calibration file {err}"))?;
                let costs = SimCosts::from_file_text(&text)
                    .map_err(|err| format!("calibration file {path}: {err}"))?;
                Ok((costs, CostSource::File(path)))
            }
        }
    }
}

/// A calibration file's text, refused past [`SIM_COSTS_MAX_BYTES`] (the
/// environment may name any file: `/dev/zero` must not fill memory, and a
/// FIFO reads as empty rather than waiting for a writer).
fn read_bounded(path: &str) -> Result<String, String> {
    use std::io::Read;
    let mut text = String::new();
    super::os::open_input(std::path::Path::new(path))
        .and_then(|file| file.take(SIM_COSTS_MAX_BYTES + 1).read_to_string(&mut text))
        .map_err(|err| format!("{path}: {err}"))?;
    if text.len() as u64 > SIM_COSTS_MAX_BYTES {
        return Err(format!(
            "{path}: over the limit of {} KiB",
            SIM_COSTS_MAX_BYTES >> 10
        ));
    }
    Ok(text)
}

/// Whether [`calibrate`] accepts `nr_pages` and `rounds`: at least 1024
/// pages and one round, at most [`CALIBRATE_MAX_PAGES`] pages and
/// [`CALIBRATE_MAX_PAGE_ROUNDS`] pages times rounds (the warm-up round
/// included).
pub fn calibrate_check(nr_pages: u64, rounds: u32) -> Result<(), BackingError> {
    if nr_pages < 1024 || rounds == 0 {
        return Err(BackingError::Unsupported(
            "calibration needs at least 1024 pages and one round",
        ));
    }
    if nr_pages > CALIBRATE_MAX_PAGES {
        return Err(BackingError::Unsupported(
            "calibration times at most 1048576 pages (two arenas of 4 GiB)",
        ));
    }
    if nr_pages.saturating_mul(u64::from(rounds) + 1) > CALIBRATE_MAX_PAGE_ROUNDS {
        return Err(BackingError::Unsupported(
            "calibration times at most 16777216 pages x (rounds + 1) (a few minutes)",
        ));
    }
    Ok(())
}

/// Times each priced event on a real arena of `nr_pages` pages (at least
/// 1024), `rounds` times over after a warm-up round, and keeps each raw
/// timing's fastest round (the least disturbed by other load) before the
/// prices are solved from them. Returns the prices. The bounds are
/// [`calibrate_check`]'s.
pub fn calibrate(nr_pages: u64, rounds: u32) -> Result<SimCosts, BackingError> {
    calibrate_check(nr_pages, rounds)?;
    let cpus = allowed_cpus()?;
    pin_current_thread(&cpus[..1])?;
    let spinner = Spinner::start(cpus.get(1).copied());
    let measured = measure(nr_pages, rounds, &spinner);
    drop(spinner);
    pin_current_thread(&cpus)?;
    measured
}

/// A thread on another host CPU, spinning in this address space (so that a
/// flush must interrupt it) or, while paused, asleep (so that none must).
struct Spinner {
    flags: Arc<(AtomicBool, AtomicBool)>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Spinner {
    fn start(cpu: Option<usize>) -> Spinner {
        let flags = Arc::new((AtomicBool::new(false), AtomicBool::new(false)));
        let shared = Arc::clone(&flags);
        let thread = cpu.map(|cpu| {
            std::thread::spawn(move || {
                let _ = pin_current_thread(&[cpu]);
                let (stop, paused) = &*shared;
                while !stop.load(Ordering::Relaxed) {
                    if paused.load(Ordering::Relaxed) {
                        std::thread::sleep(std::time::Duration::from_millis(1));
                    } else {
                        std::hint::spin_loop();
                    }
                }
            })
        });
        Spinner { flags, thread }
    }

    fn pause(&self, paused: bool) {
        self.flags.1.store(paused, Ordering::Relaxed);
        // Long enough for the spinner to notice and fall asleep.
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        self.flags.0.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Nanoseconds per item of `run` over `items` items.
fn per_item(
    items: u64,
    run: impl FnOnce() -> Result<(), BackingError>,
) -> Result<f64, BackingError> {
    let start = Instant::now();
    run()?;
    Ok(start.elapsed().as_nanos() as f64 / items as f64)
}

fn arena(nr_pages: u64, slots_per_cpu: u32) -> Result<ArenaBacking, BackingError> {
    ArenaBacking::new(ArenaConfig {
        nr_pages,
        page_size: 4096,
        nr_cpus: 1,
        populate: true,
        node_ranges: Vec::new(),
        mermap: MermapConfig {
            slots_per_cpu,
            ..MermapConfig::default()
        },
    })
}

/// The raw timings, ns per page: unmap with the spinner spinning and
/// asleep, zeroing and a page copy through the direct map, the mermap's
/// zeroing with one slot and with 64 slots per window.
const RAW: usize = 6;

fn measure(nr_pages: u64, rounds: u32, spinner: &Spinner) -> Result<SimCosts, BackingError> {
    let wide = arena(nr_pages, 64)?;
    let narrow = arena(nr_pages, 1)?;
    let page = vec![0x5au8; 4096];
    let unmap_each = |backing: &ArenaBacking| {
        let ns = per_item(nr_pages, || {
            (0..nr_pages).try_for_each(|pfn| backing.unmap_direct(Pfn(pfn), 1))
        });
        backing.remap_direct(Pfn(0), nr_pages)?;
        ns
    };
    // The mermap: every get maps and zeroes; one slot per window wraps at
    // every get, 64 slots once per 64 gets. The direct-map pointer waits
    // for the agents, ending each timing.
    let mermap = |backing: &ArenaBacking| {
        per_item(nr_pages, || {
            backing.zero_unmapped(CpuId(0), Pfn(0), nr_pages)?;
            backing
                .direct_map_ptr(Pfn(0))
                .map(drop)
                .ok_or(BackingError::Unsupported("the mermap agents failed"))
        })
    };
    let mut best = [f64::INFINITY; RAW];
    for _ in 0..=rounds {
        spinner.pause(false);
        let spinning = unmap_each(&wide)?;
        spinner.pause(true);
        let quiet = unmap_each(&wide)?;
        let round: [f64; RAW] = [
            spinning,
            quiet,
            per_item(nr_pages, || wide.zero_mapped(Pfn(0), nr_pages))?,
            per_item(nr_pages, || {
                (0..nr_pages).try_for_each(|pfn| wide.write_mapped(Pfn(pfn), 0, &page))
            })?,
            mermap(&narrow)?,
            mermap(&wide)?,
        ];
        for (best, value) in best.iter_mut().zip(round) {
            *best = best.min(value);
        }
    }
    let [spinning, quiet, zero, copy, every, one_in_64] = best;
    let local_flush = ((every - one_in_64) * 64.0 / 63.0).max(0.0);
    let prices = [
        quiet,
        (spinning - quiet).max(0.0),
        local_flush,
        zero,
        (one_in_64 - zero - local_flush / 64.0).max(0.0),
        copy * 1000.0 / 4096.0,
    ];
    let mut costs = SimCosts::NONE;
    for (field, value) in costs.fields_mut().into_iter().zip(prices) {
        *field = value.round() as u64;
    }
    Ok(costs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_round_trips_and_bad_files_name_their_line() {
        let costs = SimCosts::default();
        let text = costs.to_file_text(&["calibrated by a test".into()]);
        assert!(text.starts_with("# calibrated by a test\n"));
        assert_eq!(SimCosts::from_file_text(&text), Ok(costs));
        let missing = text.replace("zero_page_ns = 150\n", "");
        assert_eq!(
            SimCosts::from_file_text(&missing),
            Err("zero_page_ns is missing".into())
        );
        let twice = format!("{text}copy_byte_ps = 1\n");
        assert!(SimCosts::from_file_text(&twice)
            .unwrap_err()
            .contains("twice"));
        assert!(SimCosts::from_file_text("speed = 3")
            .unwrap_err()
            .contains("unknown key"));
        assert!(SimCosts::from_file_text("zero_page_ns = fast")
            .unwrap_err()
            .starts_with("line 1"));
    }

    #[test]
    fn calibration_refuses_a_tiny_arena() {
        assert!(matches!(
            calibrate(16, 1),
            Err(BackingError::Unsupported(_))
        ));
    }

    #[test]
    fn calibration_refuses_an_arena_past_memory_or_rounds_past_minutes() {
        // Regression: --pages 2^30 built and filled two 4 TiB arenas (the
        // host's memory gone) and --rounds 2^32-1 ran for days.
        assert_eq!(calibrate_check(CALIBRATE_MAX_PAGES, 15), Ok(()));
        for (pages, rounds) in [
            (CALIBRATE_MAX_PAGES + 1, 1),
            (u64::MAX, 1),
            (1024, u32::MAX),
            (CALIBRATE_MAX_PAGES, 16),
        ] {
            assert!(
                matches!(calibrate(pages, rounds), Err(BackingError::Unsupported(_))),
                "{pages} pages, {rounds} rounds"
            );
        }
    }

    #[test]
    fn a_calibration_file_past_the_limit_is_refused_unread() {
        // Regression: PAGEFRAME_SIM_COSTS=/dev/zero read until memory ran out.
        let err = read_bounded("/dev/zero").unwrap_err();
        assert!(err.starts_with("/dev/zero: over the limit"), "{err}");
        assert!(read_bounded("/nonexistent-calibration").is_err());
    }

    #[test]
    fn a_calibration_fifo_without_a_writer_reads_as_empty() {
        // Regression: a FIFO as the calibration file blocked in open().
        let dir = std::env::temp_dir().join(format!("pageframe-costs-fifo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join(SIM_COSTS_FILE);
        let _ = std::fs::remove_file(&fifo);
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.unwrap().success());
        assert_eq!(read_bounded(fifo.to_str().unwrap()).unwrap(), "");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
