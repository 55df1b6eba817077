//! The `mempolicy` conformance suite: every case runs on the live kernel
//! (real `set_mempolicy`, `get_mempolicy`, `mbind`, `migrate_pages`,
//! `move_pages`, `set_mempolicy_home_node` in a forked child, so the
//! calling process keeps its own policy and address space) and on a
//! pageframe machine booted like the host (its nodes and CPUs from
//! `/sys/devices/system/node`), and the two results are compared.
//!
//! A case is a layout of mapped regions (pages untouched, read — the zero
//! page —, written, or unmapped), an optional task policy set first, calls
//! made before (their results shown too), and one call. Its result is the call's return (value or errno), its
//! out-parameters, then the state after it: the task policy, the policy of
//! every page, and the `move_pages` status of every page — so a call that
//! fails but changed something shows as a DIFF too.
//!
//! Differences pageframe keeps on purpose are in [`NOT_MODELLED`].

mod cases;
mod edge_cases;
mod kernel;
mod model;
mod names;
mod random;

use super::{errno_label, ConformError, ConformRow, SuiteOutcome, SuiteResult};
pub use cases::all_cases;
pub use random::random_cases;

/// What pageframe deliberately does not model in this suite, with the
/// reason (none makes a listed case differ on a host the suite runs on).
pub const NOT_MODELLED: &[(&str, &str)] = &[
    (
        "il_weight of weighted interleave",
        "the kernel advances it only for allocations outside any VMA, which simulated tasks never make; MPOL_F_NODE after WEIGHTED_INTERLEAVE is the next node after il_prev, as Linux answers while il_weight is 0",
    ),
    (
        "a move_pages batch that fails to migrate",
        "Linux stops the call with the count of pages left; pageframe gives each page -ENOMEM and goes on (pages only fail to move when a node is full)",
    ),
    (
        "ptrace_may_access()",
        "modelled as: the caller itself, or a caller with CAP_SYS_NICE",
    ),
];

/// Page size of the cases (4 KiB, as x86-64 and pageframe's machines).
pub(crate) const PAGE: u64 = 4096;

/// A pid no task has (above any `pid_max`): the ESRCH cases.
pub(crate) const MISSING_PID: i32 = 0x3fff_ffff;

/// What a page of a case's region is before the call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageState {
    /// Mapped, never touched.
    Untouched,
    /// Read once: maps the shared zero page.
    Read,
    /// Written once: a page of its own.
    Written,
    /// Unmapped after the region was mapped (a hole).
    Hole,
}

/// An address argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Addr {
    /// 0 (NULL).
    Null,
    /// An address outside every region, as is (a low page below
    /// `mmap_min_addr`, an address above user space, a non-canonical one):
    /// no mapping of either side is ever there.
    Raw(u64),
    /// Byte `offset` into page `page` of region `region`.
    Page {
        /// Index of the region.
        region: usize,
        /// Page in the region.
        page: usize,
        /// Bytes into the page.
        offset: u64,
    },
}

impl Addr {
    /// The start of page `page` of region `region`.
    pub fn page(region: usize, page: usize) -> Addr {
        Addr::Page {
            region,
            page,
            offset: 0,
        }
    }
}

/// A pid argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PidArg {
    /// This value, as is: 0 (the caller), or a pid that names no process
    /// (`MISSING_PID`, negative ones).
    Raw(i32),
    /// The caller's own pid, spelled out (not 0).
    Own,
}

impl PidArg {
    /// A readable name.
    pub fn name(self) -> String {
        match self {
            PidArg::Raw(0) => "self".to_string(),
            PidArg::Raw(MISSING_PID) => "missing".to_string(),
            PidArg::Raw(pid) => pid.to_string(),
            PidArg::Own => "own".to_string(),
        }
    }
}

/// A node bitmap argument: `None` is a NULL pointer.
pub type MaskArg = Option<Vec<usize>>;

/// The call under test.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Call {
    /// `set_mempolicy(mode, nmask, maxnode)`.
    SetMempolicy {
        /// Mode with flags.
        mode: i32,
        /// Nodes of the bitmap.
        mask: MaskArg,
        /// `maxnode`.
        maxnode: u64,
    },
    /// `get_mempolicy(policy, nmask, maxnode, addr, flags)`.
    GetMempolicy {
        /// Pass a `policy` pointer.
        want_policy: bool,
        /// Pass an `nmask` buffer.
        want_mask: bool,
        /// `maxnode`.
        maxnode: u64,
        /// `addr`.
        addr: Addr,
        /// `flags`.
        flags: u64,
    },
    /// `mbind(addr, len, mode, nmask, maxnode, flags)`.
    Mbind {
        /// Start.
        addr: Addr,
        /// Length in bytes.
        len: u64,
        /// Mode with flags.
        mode: i32,
        /// Nodes of the bitmap.
        mask: MaskArg,
        /// `maxnode`.
        maxnode: u64,
        /// `MPOL_MF_*`.
        flags: u32,
    },
    /// `migrate_pages(pid, maxnode, old, new)`.
    MigratePages {
        /// The target.
        pid: PidArg,
        /// `maxnode`.
        maxnode: u64,
        /// Old nodes.
        old: MaskArg,
        /// New nodes.
        new: MaskArg,
    },
    /// `set_mempolicy_home_node(start, len, home_node, flags)`.
    SetMempolicyHomeNode {
        /// Start.
        addr: Addr,
        /// Length in bytes.
        len: u64,
        /// The home node.
        home_node: u64,
        /// Flags (none is valid).
        flags: u64,
    },
    /// `move_pages(pid, count, pages, nodes, status, flags)`.
    MovePages {
        /// The target.
        pid: PidArg,
        /// The pages.
        pages: Vec<Addr>,
        /// Target nodes; `None` queries.
        nodes: Option<Vec<i32>>,
        /// `MPOL_MF_*`.
        flags: u32,
    },
}

/// One case of the suite.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Case {
    /// Readable name with the arguments.
    pub name: String,
    /// Regions mapped first, page by page.
    pub layout: Vec<Vec<PageState>>,
    /// A task policy set before the call: (mode, nodes).
    pub prior: Option<(i32, Vec<usize>)>,
    /// Calls made after the prior policy and before the call, each with
    /// its result shown (state the call then sees: VMA policies, split
    /// VMAs, moved pages).
    pub before: Vec<Call>,
    /// The call.
    pub call: Call,
}

/// The calls of one side (the live kernel or pageframe), in the syscalls'
/// terms: `Ok(return value)` or `Err(errno)`.
pub(crate) trait Side {
    /// The pid of the task making the calls.
    fn own_pid(&self) -> i32;
    /// Maps `pages` pages of private anonymous memory.
    fn map(&mut self, pages: usize) -> Result<u64, String>;
    /// Unmaps `pages` pages at `addr`.
    fn unmap(&mut self, addr: u64, pages: usize) -> Result<(), String>;
    /// Reads or writes the page at `addr`.
    fn touch(&mut self, addr: u64, write: bool) -> Result<(), String>;
    /// `set_mempolicy`.
    fn set_mempolicy(&mut self, mode: i32, nmask: Option<&[u64]>, maxnode: u64)
        -> Result<i64, i32>;
    /// `get_mempolicy`.
    fn get_mempolicy(
        &mut self,
        policy: Option<&mut i32>,
        nmask: Option<&mut [u64]>,
        maxnode: u64,
        addr: u64,
        flags: u64,
    ) -> Result<i64, i32>;
    /// `mbind`.
    #[allow(clippy::too_many_arguments)]
    fn mbind(
        &mut self,
        addr: u64,
        len: u64,
        mode: i32,
        nmask: Option<&[u64]>,
        maxnode: u64,
        flags: u32,
    ) -> Result<i64, i32>;
    /// `migrate_pages`.
    fn migrate_pages(
        &mut self,
        pid: i32,
        maxnode: u64,
        old: Option<&[u64]>,
        new: Option<&[u64]>,
    ) -> Result<i64, i32>;
    /// `set_mempolicy_home_node`.
    fn set_mempolicy_home_node(
        &mut self,
        addr: u64,
        len: u64,
        home_node: u64,
        flags: u64,
    ) -> Result<i64, i32>;
    /// `move_pages`.
    fn move_pages(
        &mut self,
        pid: i32,
        pages: &[u64],
        nodes: Option<&[i32]>,
        status: &mut [i32],
        flags: u32,
    ) -> Result<i64, i32>;
}

/// Words of every bitmap buffer: a page of bits, the most either call
/// reads or writes (get_nodes() and copy_nodes_to_user() fail with EINVAL
/// above that before touching the buffer), so any `maxnode` is safe.
pub(crate) const MASK_WORDS: usize = 512;
/// What an output word holds before the call (to see what was written).
const WORD_SENTINEL: u64 = 0x5a5a_5a5a_5a5a_5a5a;
/// What `policy` and each status hold before the call.
const INT_SENTINEL: i32 = -99_999;

/// A bitmap buffer with `nodes` set.
fn mask_buffer(nodes: &[usize]) -> Vec<u64> {
    let mut words = vec![0u64; MASK_WORDS];
    for node in nodes {
        words[node / 64] |= 1 << (node % 64);
    }
    words
}

fn show_ret(result: Result<i64, i32>) -> String {
    match result {
        Ok(value) => format!("={value}"),
        Err(code) => errno_label(code),
    }
}

fn show_int(value: i32) -> String {
    if value == INT_SENTINEL {
        "-".to_string()
    } else if value < 0 {
        format!("-{}", errno_label(-value))
    } else {
        value.to_string()
    }
}

/// The words a call wrote: `index:hex` for each non-zero written word and
/// the count of words it zeroed.
fn show_mask(words: &[u64]) -> String {
    let written: Vec<String> = words
        .iter()
        .enumerate()
        .filter(|(_, word)| **word != WORD_SENTINEL && **word != 0)
        .map(|(index, word)| format!("{index}:{word:x}"))
        .collect();
    let zeroed = words.iter().filter(|word| **word == 0).count();
    format!("[{}] zeroed={zeroed}", written.join(" "))
}

/// Runs one case on one side; returns its result text.
pub(crate) fn execute(side: &mut dyn Side, case: &Case) -> Result<String, String> {
    let mut bases = Vec::new();
    for region in &case.layout {
        bases.push(side.map(region.len())?);
    }
    for (region, base) in case.layout.iter().zip(&bases) {
        for (page, state) in region.iter().enumerate() {
            let addr = base + page as u64 * PAGE;
            match state {
                PageState::Untouched => {}
                PageState::Read => side.touch(addr, false)?,
                PageState::Written => side.touch(addr, true)?,
                PageState::Hole => side.unmap(addr, 1)?,
            }
        }
    }
    let resolve = |addr: Addr| match addr {
        Addr::Null => 0,
        Addr::Raw(addr) => addr,
        Addr::Page {
            region,
            page,
            offset,
        } => bases[region] + page as u64 * PAGE + offset,
    };
    let mut out = String::new();
    if let Some((mode, nodes)) = &case.prior {
        let words = mask_buffer(nodes);
        let result = side.set_mempolicy(*mode, Some(&words), 1025);
        out.push_str(&format!("prior {} ", show_ret(result)));
    }
    for call in &case.before {
        out.push_str(&run_call(side, call, &resolve));
        out.push_str(" ; ");
    }
    out.push_str(&run_call(side, &case.call, &resolve));
    out.push_str(" | after: ");
    out.push_str(&state_after(side, &case.layout, &bases));
    for (region, base) in case.layout.iter().zip(&bases) {
        side.unmap(*base, region.len())?;
    }
    side.set_mempolicy(0, None, 0)
        .map_err(|code| format!("resetting the policy: {}", errno_label(code)))?;
    Ok(out)
}

/// Makes `call` on `side`; its result text.
fn run_call(side: &mut dyn Side, call: &Call, resolve: &dyn Fn(Addr) -> u64) -> String {
    let mut out = String::new();
    match call {
        Call::SetMempolicy {
            mode,
            mask,
            maxnode,
        } => {
            let words = mask.as_deref().map(mask_buffer);
            out.push_str(&show_ret(side.set_mempolicy(
                *mode,
                words.as_deref(),
                *maxnode,
            )));
        }
        Call::GetMempolicy {
            want_policy,
            want_mask,
            maxnode,
            addr,
            flags,
        } => {
            let mut policy = INT_SENTINEL;
            let mut words = vec![WORD_SENTINEL; MASK_WORDS];
            let result = side.get_mempolicy(
                want_policy.then_some(&mut policy),
                want_mask.then_some(&mut words[..]),
                *maxnode,
                resolve(*addr),
                *flags,
            );
            out.push_str(&format!(
                "{} policy={} mask={}",
                show_ret(result),
                show_int(policy),
                show_mask(&words)
            ));
        }
        Call::Mbind {
            addr,
            len,
            mode,
            mask,
            maxnode,
            flags,
        } => {
            let words = mask.as_deref().map(mask_buffer);
            let result = side.mbind(
                resolve(*addr),
                *len,
                *mode,
                words.as_deref(),
                *maxnode,
                *flags,
            );
            out.push_str(&show_ret(result));
        }
        Call::MigratePages {
            pid,
            maxnode,
            old,
            new,
        } => {
            let old = old.as_deref().map(mask_buffer);
            let new = new.as_deref().map(mask_buffer);
            let pid = pid_value(side, *pid);
            let result = side.migrate_pages(pid, *maxnode, old.as_deref(), new.as_deref());
            out.push_str(&show_ret(result));
        }
        Call::SetMempolicyHomeNode {
            addr,
            len,
            home_node,
            flags,
        } => {
            let result = side.set_mempolicy_home_node(resolve(*addr), *len, *home_node, *flags);
            out.push_str(&show_ret(result));
        }
        Call::MovePages {
            pid,
            pages,
            nodes,
            flags,
        } => {
            let addrs: Vec<u64> = pages.iter().map(|addr| resolve(*addr)).collect();
            let mut status = vec![INT_SENTINEL; addrs.len()];
            let pid = pid_value(side, *pid);
            let result = side.move_pages(pid, &addrs, nodes.as_deref(), &mut status, *flags);
            let shown: Vec<String> = status.iter().map(|value| show_int(*value)).collect();
            out.push_str(&format!(
                "{} status=[{}]",
                show_ret(result),
                shown.join(",")
            ));
        }
    }
    out
}

fn pid_value(side: &dyn Side, pid: PidArg) -> i32 {
    match pid {
        PidArg::Raw(pid) => pid,
        PidArg::Own => side.own_pid(),
    }
}

/// The task policy, each page's policy and each page's `move_pages` status.
fn state_after(side: &mut dyn Side, layout: &[Vec<PageState>], bases: &[u64]) -> String {
    let mut policy = INT_SENTINEL;
    let mut words = vec![WORD_SENTINEL; MASK_WORDS];
    let result = side.get_mempolicy(Some(&mut policy), Some(&mut words), 1025, 0, 0);
    let mut out = format!(
        "task {} {} {}",
        show_ret(result),
        show_int(policy),
        show_mask(&words)
    );
    let mut addrs = Vec::new();
    for (region, base) in layout.iter().zip(bases) {
        addrs.extend((0..region.len()).map(|page| base + page as u64 * PAGE));
    }
    let mut policies = Vec::new();
    for addr in &addrs {
        let mut policy = INT_SENTINEL;
        let mut words = vec![WORD_SENTINEL; MASK_WORDS];
        let result = side.get_mempolicy(Some(&mut policy), Some(&mut words), 1025, *addr, 2);
        policies.push(match result {
            Ok(_) => format!("{}:{:x}", show_int(policy), words[0]),
            Err(code) => errno_label(code),
        });
    }
    let mut status = vec![INT_SENTINEL; addrs.len()];
    let result = side.move_pages(0, &addrs, None, &mut status, 0);
    let shown: Vec<String> = status.iter().map(|value| show_int(*value)).collect();
    out.push_str(&format!(
        " pages=[{}] stat {} [{}]",
        policies.join(","),
        show_ret(result),
        shown.join(",")
    ));
    out
}

/// Runs every case of [`all_cases`] on the live kernel and on pageframe.
/// Skipped (not failed) when not root or when the kernel lacks the calls.
pub fn run() -> Result<SuiteResult, ConformError> {
    run_cases(&all_cases())
}

/// How often a case the kernel answered differently is run on it again.
const KERNEL_RETRIES: usize = 3;

/// Runs each case whose kernel result differs from pageframe's on the
/// kernel again (`rerun`, a new child), up to [`KERNEL_RETRIES`] times,
/// and takes a result that agrees: the host's compaction may have been
/// moving one of the child's pages, and migrate_pages() counts a page it
/// finds under migration (a migration entry in its page table,
/// queue_folios_pte_range()) as one it could not move. Seen in CI on a
/// busy host: 1 to 7 such pages in 8 of 20 000 random cases. pageframe's
/// answer is not re-run; a difference that stays is reported.
fn rerun_differing(
    kernel: &mut [String],
    model: &[String],
    cases: &[Case],
    mut rerun: impl FnMut(&Case) -> Result<Vec<String>, ConformError>,
) -> Result<(), ConformError> {
    for ((kernel, model), case) in kernel.iter_mut().zip(model).zip(cases) {
        for _ in 0..KERNEL_RETRIES {
            if kernel == model {
                break;
            }
            if rerun(case)?.first() == Some(model) {
                kernel.clone_from(model);
            }
        }
    }
    Ok(())
}

/// Runs `cases` on both sides (see [`run`]).
pub fn run_cases(cases: &[Case]) -> Result<SuiteResult, ConformError> {
    let suite = "mempolicy";
    if let Some(reason) = kernel::skip_reason() {
        return Ok(SuiteResult {
            suite,
            outcome: SuiteOutcome::Skipped { reason },
        });
    }
    let host = model::HostTopology::read()?;
    let mut kernel_results = kernel::run_in_child(cases)?;
    let model_results = model::run(&host, cases)?;
    rerun_differing(&mut kernel_results, &model_results, cases, |case| {
        kernel::run_in_child(std::slice::from_ref(case))
    })?;
    let rows = cases
        .iter()
        .zip(kernel_results)
        .zip(model_results)
        .map(|((case, kernel), model)| ConformRow::compare(case.name.clone(), kernel, model))
        .collect();
    Ok(SuiteResult {
        suite,
        outcome: SuiteOutcome::Ran(rows),
    })
}
