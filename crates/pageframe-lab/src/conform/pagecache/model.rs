//! A case on pageframe: the same files made cold the same way (written,
//! synced, `POSIX_FADV_DONTNEED`), the same calls on the reclaim layer's
//! [`Mm`] by one process on CPU 0 of a one-node machine, and the counts
//! read after each. The machine has room for every case's pages without
//! reclaim; a case the host runs in a cgroup with a memory limit runs
//! under the same limit on the reclaim layer's memory cgroup.

use super::cases::{Case, Step};
use super::drain::DRAIN_PAGES;
use super::memcg::LruCounts;
use super::CaseRun;
use crate::conform::ConformError;
use pageframe::reclaim::{FileId, LruList, Mm, MmConfig, MmError, Pid};
use pageframe::{CpuId, LocalPageAllocator, MachineDesc, NodeId};

/// The machine's memory: room for every case's pages without reclaim.
const MACHINE_BYTES: u64 = 1 << 30;

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

/// Runs `case` on a fresh machine whose reclaim layer has `config`, its
/// calls under a memory cgroup limit of `limit_bytes` when there is one
/// (set once the files are made).
pub fn run_case(
    case: &Case<'_>,
    config: MmConfig,
    limit_bytes: Option<u64>,
) -> Result<CaseRun, ConformError> {
    let desc = MachineDesc::uniform(MACHINE_BYTES, 1, 2)
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
    if let Some(bytes) = limit_bytes {
        mm.set_memcg_limit(CPU, Some(bytes / super::P))
            .map_err(|err| ConformError::Boot(format!("the memory limit: {err}")))?;
    }
    let baseline = read_cgroup(&mut mm)?;
    let mut process: Option<Pid> = None;
    let mut steps = Vec::new();
    for step in case.steps {
        let outcome = run_step(&mut mm, &files, &mut process, step);
        steps.push((result(outcome), read_cgroup(&mut mm)?));
    }
    if let Some(pid) = process {
        mm.exit(pid)
            .map_err(|err| ConformError::Boot(format!("exit: {err}")))?;
    }
    let exited = read_cgroup(&mut mm)?;
    mm.check_invariants()
        .map_err(|err| ConformError::Boot(format!("after the case: {err}")))?;
    Ok(CaseRun {
        baseline,
        steps,
        exited,
    })
}

/// The counts as the host reads them, with what its reading does to the
/// cgroup (`drain`): first a process faults [`DRAIN_PAGES`] anonymous
/// pages and exits (under a limit, its charges reclaim as many page cache
/// pages, which the host's counts show), then `memory.stat` is read, which
/// flushes the cgroup's statistics.
fn read_cgroup(mm: &mut Mm<'_>) -> Result<LruCounts, ConformError> {
    let failed = |err: MmError| ConformError::Boot(format!("the drainer: {err}"));
    let pid = mm.spawn(CPU).map_err(failed)?;
    let touched = mm.touch(pid, 0, DRAIN_PAGES as u64);
    mm.exit(pid).map_err(failed)?;
    touched.map_err(failed)?;
    mm.memcg_flush_stats();
    Ok(counts(mm))
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
