//! The pageframe side of the mempolicy suite: a machine booted with the
//! host's node and CPU counts, and for each case a fresh vm with one task
//! (CAP_SYS_NICE, as root) on CPU 0 making the calls.

use pageframe::vm::{NumaBalancingConfig, Pid, Vm};
use pageframe::{CpuId, LocalPageAllocator, MachineDesc};

use super::{execute, Case, Side, PAGE};
use crate::conform::ConformError;

/// Memory per node of the booted machine: the cases touch a few pages.
const NODE_BYTES: u64 = 64 << 20;

/// The host's NUMA shape, as the kernel counts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostTopology {
    /// Possible nodes (`nr_node_ids`, from `/sys/devices/system/node/possible`).
    pub nodes: usize,
    /// Possible CPUs (from `/sys/devices/system/cpu/possible`).
    pub cpus: usize,
}

impl HostTopology {
    /// Reads the host's node and CPU counts from sysfs.
    pub fn read() -> Result<HostTopology, ConformError> {
        Ok(HostTopology {
            nodes: last_in_list("/sys/devices/system/node/possible")? + 1,
            cpus: last_in_list("/sys/devices/system/cpu/possible")? + 1,
        })
    }
}

/// The highest id of a sysfs list such as `0-3,8`.
fn last_in_list(path: &str) -> Result<usize, ConformError> {
    let text = std::fs::read_to_string(path)
        .map_err(|err| ConformError::Host(format!("{path}: {err}")))?;
    text.trim()
        .split(',')
        .filter_map(|part| part.rsplit('-').next())
        .map(|id| id.trim().parse::<usize>())
        .try_fold(0, |max, id| id.map(|id| max.max(id)))
        .map_err(|err| ConformError::Host(format!("{path}: {err}")))
}

/// One task of a vm, making the calls.
struct Model<'v, 'a> {
    vm: &'v mut Vm<'a>,
    pid: Pid,
}

fn code(result: Result<u64, pageframe::Errno>) -> Result<i64, i32> {
    result
        .map(|value| value as i64)
        .map_err(pageframe::Errno::code)
}

/// A pid argument as the vm takes it (the same bits as the kernel's int).
fn pid_arg(pid: i32) -> u32 {
    pid as u32
}

impl Side for Model<'_, '_> {
    fn own_pid(&self) -> i32 {
        self.pid.0 as i32
    }

    fn map(&mut self, pages: usize) -> Result<u64, String> {
        self.vm
            .mmap(self.pid, pages as u64 * PAGE)
            .map_err(|err| format!("mmap: {err}"))
    }

    fn unmap(&mut self, addr: u64, pages: usize) -> Result<(), String> {
        self.vm
            .munmap(self.pid, addr, pages as u64 * PAGE)
            .map_err(|err| format!("munmap: {err}"))
    }

    fn touch(&mut self, addr: u64, write: bool) -> Result<(), String> {
        self.vm
            .access(self.pid, addr, write)
            .map(drop)
            .map_err(|err| format!("access: {err}"))
    }

    fn set_mempolicy(
        &mut self,
        mode: i32,
        nmask: Option<&[u64]>,
        maxnode: u64,
    ) -> Result<i64, i32> {
        code(
            self.vm
                .set_mempolicy(self.pid, mode, nmask, maxnode)
                .map(|()| 0),
        )
    }

    fn get_mempolicy(
        &mut self,
        policy: Option<&mut i32>,
        nmask: Option<&mut [u64]>,
        maxnode: u64,
        addr: u64,
        flags: u64,
    ) -> Result<i64, i32> {
        code(
            self.vm
                .sys_get_mempolicy(self.pid, policy, nmask, maxnode, addr, flags)
                .map(|()| 0),
        )
    }

    fn mbind(
        &mut self,
        addr: u64,
        len: u64,
        mode: i32,
        nmask: Option<&[u64]>,
        maxnode: u64,
        flags: u32,
    ) -> Result<i64, i32> {
        code(
            self.vm
                .mbind(self.pid, addr, len, mode, nmask, maxnode, flags)
                .map(|()| 0),
        )
    }

    fn migrate_pages(
        &mut self,
        pid: i32,
        maxnode: u64,
        old: Option<&[u64]>,
        new: Option<&[u64]>,
    ) -> Result<i64, i32> {
        code(
            self.vm
                .migrate_pages(self.pid, pid_arg(pid), maxnode, old, new),
        )
    }

    fn set_mempolicy_home_node(
        &mut self,
        addr: u64,
        len: u64,
        home_node: u64,
        flags: u64,
    ) -> Result<i64, i32> {
        code(
            self.vm
                .set_mempolicy_home_node(self.pid, addr, len, home_node, flags)
                .map(|()| 0),
        )
    }

    fn move_pages(
        &mut self,
        pid: i32,
        pages: &[u64],
        nodes: Option<&[i32]>,
        status: &mut [i32],
        flags: u32,
    ) -> Result<i64, i32> {
        code(
            self.vm
                .move_pages(self.pid, pid_arg(pid), pages, nodes, status, flags),
        )
    }
}

/// Runs `cases` on a pageframe machine shaped like `host`.
pub(crate) fn run(host: &HostTopology, cases: &[Case]) -> Result<Vec<String>, ConformError> {
    let desc = MachineDesc::uniform(NODE_BYTES * host.nodes as u64, host.nodes, host.cpus)
        .map_err(|err| ConformError::Boot(err.to_string()))?;
    let allocator =
        LocalPageAllocator::boot(&desc).map_err(|err| ConformError::Boot(err.to_string()))?;
    let mut results = Vec::with_capacity(cases.len());
    for case in cases {
        let mut vm = Vm::new(&allocator, NumaBalancingConfig::default());
        let pid = vm
            .spawn(CpuId(0), &[], 0)
            .map_err(|err| ConformError::Boot(format!("spawn: {err}")))?;
        vm.set_capable(pid, true)
            .map_err(|err| ConformError::Boot(format!("capable: {err}")))?;
        let text = execute(&mut Model { vm: &mut vm, pid }, case)
            .map_err(|message| ConformError::Boot(format!("{}: {message}", case.name)))?;
        vm.check_invariants()
            .map_err(|err| ConformError::Boot(format!("{}: vm invariants: {err}", case.name)))?;
        vm.exit(pid)
            .map_err(|err| ConformError::Boot(format!("exit: {err}")))?;
        results.push(text);
    }
    Ok(results)
}
