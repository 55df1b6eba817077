//! A case on the live kernel: its files made cold on the scratch ext4, one
//! worker process in a fresh memory cgroup making the calls on command
//! (`worker`), and after each call the cgroup's counts read exactly
//! (`drain`).

use super::case_files::{CaseFiles, SharedBuffer};
use super::cases::{Case, Step};
use super::drain::drain;
use super::memcg::Memcg;
use super::worker::{Worker, NO_OP};
use super::CaseRun;
use crate::conform::ConformError;
use std::path::Path;

/// Runs `case` (number `case_number`) on the host, in a fresh cgroup made
/// by `make_memcg`, with its files in `dir`, on `cpu`.
pub fn run_case(
    case: &Case<'_>,
    case_number: usize,
    dir: &Path,
    make_memcg: impl FnOnce() -> Result<Memcg, ConformError>,
    cpu: usize,
) -> Result<CaseRun, ConformError> {
    let files = CaseFiles::make(dir, case_number, case.files)?;
    let largest = case.steps.iter().map(Step::buffer_bytes).max().unwrap_or(0);
    let buffer = SharedBuffer::new(largest as usize)?;
    let memcg = make_memcg()?;
    let page = 4096;
    let worker = Worker::start(case, &files, &buffer, &memcg, cpu)?;
    // The suite's descriptors go, so that an unlink frees the cache.
    let mut files = files;
    files.files.clear();
    worker.run(NO_OP)?;
    drain(&memcg, cpu)?;
    let baseline = memcg.counts(page)?;
    let mut steps = Vec::new();
    for index in 0..case.steps.len() {
        let index = u8::try_from(index)
            .ok()
            .filter(|&index| index != NO_OP)
            .ok_or_else(|| ConformError::Kernel(format!("case '{}': too many steps", case.name)))?;
        let result = worker.run(index)?;
        drain(&memcg, cpu)?;
        steps.push((result, memcg.counts(page)?));
    }
    worker.stop();
    drain(&memcg, cpu)?;
    let exited = memcg.counts(page)?;
    drop(files);
    Ok(CaseRun {
        baseline,
        steps,
        exited,
    })
}
