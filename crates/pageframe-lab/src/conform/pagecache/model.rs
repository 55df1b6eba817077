//! A case on pageframe: the same files made cold the same way (written,
//! synced, `POSIX_FADV_DONTNEED`), the same calls on the reclaim layer's
//! [`Mm`] by one process on CPU 0 of a one-node machine, and the counts
//! read after each. The machine has room for every case's pages without
//! reclaim, or the memory the host's cgroup was limited to.

use super::cases::{Case, Step};
use super::memcg::LruCounts;
use super::CaseRun;
use crate::conform::ConformError;
use pageframe::reclaim::{FileId, LruList, Mm, MmConfig, MmError, Pid};
use pageframe::{CpuId, LocalPageAllocator, MachineDesc, NodeId};

/// The machine's memory when the case is not limited: room for every
/// case's pages without reclaim.
pub const UNLIMITED_BYTES: u64 = 1 << 30;

const CPU: CpuId = CpuId(0);

/// The counts of `mm`'s one node.
fn counts(mm: &Mm<'_>) -> LruCounts {
    let list = |list: LruList| mm.lru_pages(NodeId(0), list);
    let workingset = mm.workingset(NodeId(0));
    LruCounts {
        file: mm.nr_file_pages(),
        active_file: list(LruList::ActiveFile),
        inactive_file: list(LruList::InactiveFile),
        dirty: mm.nr_dirty(),
        anon: mm.nr_anon_pages(),
        active_anon: list(LruList::ActiveAnon),
        inactive_anon: list(LruList::InactiveAnon),
        refault_file: workingset.refault_file,
        activate_file: workingset.activate_file,
        restore_file: workingset.restore_file,
    }
}

/// A call's result as the worker reports it: the value, or minus the errno.
fn result(outcome: Result<u64, MmError>) -> i64 {
    match outcome {
        Ok(value) => i64::try_from(value).unwrap_or(i64::MAX),
        Err(err) => -i64::from(err.code()),
    }
}

/// Runs `case` on a fresh machine of `memory_bytes` whose reclaim layer
/// has `config`.
pub fn run_case(
    case: &Case<'_>,
    config: MmConfig,
    memory_bytes: u64,
) -> Result<CaseRun, ConformError> {
    let desc = MachineDesc::uniform(memory_bytes, 1, 2)
        .map_err(|err| ConformError::Boot(err.to_string()))?;
    let allocator =
        LocalPageAllocator::boot(&desc).map_err(|err| ConformError::Boot(err.to_string()))?;
    let mut mm = Mm::new(&allocator, config);
    let setup = |err: MmError| ConformError::Boot(format!("making the case's files: {err}"));
    let mut files = Vec::new();
    for &size in case.files {
        let file = mm.create_file();
        if size > 0 {
            mm.write(CPU, file, 0, size).map_err(setup)?;
        }
        mm.fsync(file).map_err(setup)?;
        mm.fadvise_dontneed(CPU, file, 0, 0).map_err(setup)?;
        files.push(file);
    }
    let baseline = counts(&mm);
    let mut process: Option<Pid> = None;
    let mut steps = Vec::new();
    for step in case.steps {
        let outcome = run_step(&mut mm, &files, &mut process, step);
        steps.push((result(outcome), counts(&mm)));
    }
    if let Some(pid) = process {
        mm.exit(pid)
            .map_err(|err| ConformError::Boot(format!("exit: {err}")))?;
    }
    mm.check_invariants()
        .map_err(|err| ConformError::Boot(format!("after the case: {err}")))?;
    Ok(CaseRun {
        baseline,
        steps,
        exited: counts(&mm),
    })
}

fn run_step(
    mm: &mut Mm<'_>,
    files: &[FileId],
    process: &mut Option<Pid>,
    step: &Step,
) -> Result<u64, MmError> {
    match *step {
        Step::Read(file, pos, len) => mm.read(CPU, files[file], pos, len),
        Step::Write(file, pos, len) => mm.write(CPU, files[file], pos, len),
        Step::Fsync(file) => mm.fsync(files[file]).map(|_| 0),
        Step::Truncate(file, len) => mm.truncate(CPU, files[file], len).map(|()| 0),
        Step::DontNeed(file, offset, len) => mm
            .fadvise_dontneed(CPU, files[file], offset, len)
            .map(|_| 0),
        Step::Unlink(file) => mm.delete_file(CPU, files[file]).map(|()| 0),
        Step::Touch(pages) => {
            let pid = match *process {
                Some(pid) => pid,
                None => *process.insert(mm.spawn(CPU)?),
            };
            mm.touch(pid, 0, pages).map(|()| pages)
        }
    }
}
