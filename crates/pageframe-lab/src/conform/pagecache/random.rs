//! Random programs for the pagecache suite: a seeded, deterministic
//! generator of files and calls that lean on what the fixed cases do not
//! enumerate — reads at any byte and length (inside windows, across the
//! end, far past it, through holes), writes that extend a file or leave a
//! hole, truncations up and down to any byte, cache drops of any range
//! (negative offsets and lengths included), unlinks and anonymous touches,
//! in any order.
//!
//! Owns only program construction: the programs run through the suite's
//! own machinery ([`super::run_cases`]). Invariants: every cache drop is
//! preceded by an fsync of its file, since what POSIX_FADV_DONTNEED does to
//! a dirty page depends on how fast the device writes it back (the kernel
//! keeps it while under writeback); a program's files stay far below the
//! scratch file system's 64 MiB; at most 24 calls per program.

use super::cases::{Case, Step, P};
use pageframe::MachineRng;

/// Files and calls, owned (a [`Case`] borrows them).
#[derive(Clone, Debug)]
pub struct Program {
    /// `random <seed>/<index>`.
    pub name: String,
    /// Sizes of the files in bytes.
    pub files: Vec<u64>,
    /// The calls.
    pub steps: Vec<Step>,
}

impl Program {
    /// The program as a case of the suite.
    pub fn as_case(&self) -> Case<'_> {
        Case {
            name: &self.name,
            files: &self.files,
            steps: &self.steps,
        }
    }
}

/// The largest file a program makes or grows to, in pages.
const MAX_FILE_PAGES: u64 = 1200;

/// A byte count: whole pages, or pages and some bytes.
fn bytes(rng: &mut MachineRng, max_pages: u64) -> u64 {
    let pages = rng.below(max_pages + 1);
    if rng.chance(1, 2) {
        pages * P
    } else {
        pages * P + rng.below(P)
    }
}

/// A length for a read or a write: a few bytes, a page, a window's worth,
/// or more than the readahead window.
fn length(rng: &mut MachineRng, size: u64) -> u64 {
    match rng.below(6) {
        0 => 1 + rng.below(200),
        1 => P,
        2 => (1 + rng.below(32)) * P,
        3 => bytes(rng, 64).max(1),
        4 => size.max(P),
        _ => (700 + rng.below(400)) * P,
    }
}

/// A position in or around a file of `size` bytes.
fn position(rng: &mut MachineRng, size: u64) -> u64 {
    let pages = size.div_ceil(P);
    match rng.below(5) {
        0 => 0,
        1 => bytes(rng, pages + 4),
        2 => rng.below(pages + 1) * P,
        3 => size,
        _ => bytes(rng, pages),
    }
}

fn program(rng: &mut MachineRng, seed: u64, index: usize) -> Program {
    let files: Vec<u64> = (0..1 + rng.below(3))
        .map(|_| match rng.below(4) {
            0 => 0,
            1 => bytes(rng, 8),
            _ => bytes(rng, 600),
        })
        .collect();
    let mut sizes = files.clone();
    let mut unlinked = vec![false; files.len()];
    let mut steps = Vec::new();
    let calls = 2 + rng.below(12);
    for _ in 0..calls {
        let file = rng.below(files.len() as u64) as usize;
        let size = sizes[file];
        match rng.below(16) {
            0..=5 => steps.push(Step::Read(file, position(rng, size), length(rng, size))),
            6..=8 => {
                let pos = position(rng, size);
                let len = length(rng, size).min(64 * P);
                if !unlinked[file] && pos + len <= MAX_FILE_PAGES * P {
                    sizes[file] = size.max(pos + len);
                    steps.push(Step::Write(file, pos, len));
                }
            }
            9 => steps.push(Step::Fsync(file)),
            10 | 11 => {
                let len = match rng.below(8) {
                    0 => -1,
                    _ => bytes(rng, (size.div_ceil(P) + 8).min(MAX_FILE_PAGES)) as i64,
                };
                if len >= 0 && !unlinked[file] {
                    sizes[file] = len as u64;
                }
                steps.push(Step::Truncate(file, len));
            }
            12 | 13 => {
                let offset = match rng.below(8) {
                    0 => -(rng.below(3 * P) as i64),
                    _ => position(rng, size) as i64,
                };
                let len = match rng.below(8) {
                    0 => -1,
                    1 => 0,
                    _ => length(rng, size) as i64,
                };
                steps.push(Step::Fsync(file));
                steps.push(Step::DontNeed(file, offset, len));
            }
            14 => {
                if rng.chance(1, 3) {
                    unlinked[file] = true;
                    steps.push(Step::Unlink(file));
                }
            }
            _ => steps.push(Step::Touch(1 + rng.below(300))),
        }
    }
    Program {
        name: format!("random {seed}/{index}"),
        files,
        steps,
    }
}

/// `count` programs of `seed`; the same every time.
pub fn random_programs(seed: u64, count: usize) -> Vec<Program> {
    let mut rng = MachineRng::new(seed);
    (0..count)
        .map(|index| program(&mut rng, seed, index))
        .collect()
}
