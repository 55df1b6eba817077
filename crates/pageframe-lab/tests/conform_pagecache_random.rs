//! Random page cache programs against the live kernel: a seeded batch of
//! [`pagecache::random_programs`] must leave the same counts after every
//! call on the kernel and on pageframe. Without root (or without a memory
//! cgroup, a loop device or mkfs.ext4) the suite reports itself skipped, and
//! so does this test, printing the reason.
//!
//! `PAGEFRAME_PCFUZZ_SEED` and `PAGEFRAME_PCFUZZ_PROGRAMS` choose another
//! batch (the default batch of 150 programs runs in a few seconds).

mod common;

use common::{diff_rows, env_or};
use pageframe_lab::conform::{pagecache, SuiteOutcome};

#[test]
fn random_page_cache_programs_match_the_kernel() {
    let seed = env_or("PAGEFRAME_PCFUZZ_SEED", 2026);
    let count = env_or("PAGEFRAME_PCFUZZ_PROGRAMS", 150) as usize;
    let programs = pagecache::random_programs(seed, count);
    let cases: Vec<pagecache::Case<'_>> = programs.iter().map(|p| p.as_case()).collect();
    let result = pagecache::run_cases(&cases).expect("the suite runs");
    match &result.outcome {
        SuiteOutcome::Skipped { reason } => {
            println!("random page cache programs skipped: {reason}");
        }
        SuiteOutcome::Ran(rows) => {
            let calls: usize = programs.iter().map(|p| p.steps.len() + 1).sum();
            assert_eq!(rows.len(), calls);
            let diffs = diff_rows(&result);
            println!(
                "seed {seed}: {count} programs, {} rows, {} DIFF",
                rows.len(),
                diffs.len()
            );
            // The programs that differ, whole, to replay by hand.
            for program in &programs {
                let prefix = format!("{} ", program.name);
                let differs = result.diffs().any(|row| {
                    row.case.starts_with(&prefix)
                        || row.case.starts_with(&format!("{}:", program.name))
                });
                if differs {
                    println!(
                        "{}: files {:?}, calls {:?}",
                        program.name, program.files, program.steps
                    );
                }
            }
            assert!(diffs.is_empty(), "seed {seed}:\n{}", diffs.join("\n"));
        }
    }
}
