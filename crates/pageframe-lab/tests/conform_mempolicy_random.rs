//! Random mempolicy cases against the live kernel: a seeded batch of
//! [`mempolicy::random_cases`] must give the same result on the kernel and
//! on pageframe. Without root (or without the calls) the suite reports
//! itself skipped, and so does this test, printing the reason.
//!
//! `PAGEFRAME_MPFUZZ_SEED` and `PAGEFRAME_MPFUZZ_CASES` choose another
//! batch (the default batch of 20 000 runs in about a second);
//! `PAGEFRAME_MPFUZZ_SHOW=N` prints the first N cases with the kernel's
//! results.

mod common;

use common::{diff_rows, env_or};
use pageframe_lab::conform::{mempolicy, SuiteOutcome};

#[test]
fn random_mempolicy_cases_match_the_kernel() {
    let seed = env_or("PAGEFRAME_MPFUZZ_SEED", 2026);
    let count = env_or("PAGEFRAME_MPFUZZ_CASES", 20_000) as usize;
    let cases = mempolicy::random_cases(seed, count);
    let result = mempolicy::run_cases(&cases).expect("the suite runs");
    match &result.outcome {
        SuiteOutcome::Skipped { reason } => {
            println!("random mempolicy cases skipped: {reason}");
        }
        SuiteOutcome::Ran(rows) => {
            assert_eq!(rows.len(), count);
            let show = env_or("PAGEFRAME_MPFUZZ_SHOW", 0) as usize;
            for row in rows.iter().take(show) {
                println!("{}\n  {}", row.case, row.kernel);
            }
            let diffs = diff_rows(&result);
            println!("seed {seed}: {} cases, {} DIFF", count, diffs.len());
            assert!(diffs.is_empty(), "seed {seed}:\n{}", diffs.join("\n"));
        }
    }
}
