//! The mempolicy conformance suite against the live kernel: every case
//! must give the same result on the kernel and on pageframe. Without root
//! (or without the calls) the suite reports itself skipped, and so does
//! this test, printing the reason.

use pageframe_lab::conform::{mempolicy, SuiteOutcome};

#[test]
fn mempolicy_suite_matches_the_kernel() {
    let result = mempolicy::run().expect("the suite runs");
    match &result.outcome {
        SuiteOutcome::Skipped { reason } => {
            println!("conform mempolicy skipped: {reason}");
        }
        SuiteOutcome::Ran(rows) => {
            assert!(rows.len() >= 3000, "{} cases", rows.len());
            let diffs = result.diffs().count();
            assert_eq!(diffs, 0, "\n{}", result.render(false));
        }
    }
}
