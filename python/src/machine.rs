//! `Machine`: one booted pageframe machine (a `LocalPageAllocator`) owned by
//! a Python object. Single pages and bulk arrays are allocated and freed by
//! PFN; every kernel-format view renders as text (the Python layer parses
//! them into dicts and DataFrames). The object stays on the thread that made
//! it (`unsendable`); its calls are short and keep the GIL.

use crate::errors::{alloc_error, desc_error, free_error, invalid, with_errno};

/// ENOENT: no such file (an unknown sysctl's /proc/sys/vm entry).
const ENOENT: i32 = pageframe::Errno::ENOENT as i32;
use pageframe::{CpuId, Gfp, LocalPageAllocator, MachineDesc, NodeId, Order, Page, Pfn};
use pageframe_lab::machine_args::MachineArgs;
use pageframe_lab::trace::gfp_names;
use pyo3::prelude::*;
use std::path::PathBuf;

/// A booted machine. `Machine(mem="64G", nodes=4, cmdline="numa=fake=4U")`
/// takes what the command line's machine flags take; `config` is a TOML
/// machine file.
#[pyclass(unsendable, subclass, module = "pageframe._native")]
pub struct Machine {
    allocator: LocalPageAllocator,
    desc: MachineDesc,
}

impl Machine {
    fn cpu(
        &self,
        cpu: u16,
    ) -> PyResult<pageframe::CpuHandle<&pageframe::PageAllocator<pageframe::Local>, pageframe::Local>>
    {
        self.allocator
            .cpu(CpuId(cpu))
            .map_err(|err| invalid(err.to_string()))
    }
}

/// GFP flags from kernel names (`GFP_KERNEL|__GFP_ZERO`), `None` for GFP_KERNEL.
fn gfp_of(names: Option<&str>) -> PyResult<Gfp> {
    match names {
        None => Ok(Gfp::KERNEL),
        Some(names) => gfp_names::parse_gfp(names)
            .map(Gfp::from_bits_truncate)
            .ok_or_else(|| invalid(format!("unknown GFP flags '{names}'"))),
    }
}

#[pymethods]
impl Machine {
    /// Boots a machine from a description (file < flags < cmdline, as the CLI).
    #[new]
    #[pyo3(signature = (mem=None, nodes=None, cpus=None, cmdline=None, config=None, dma=false, dma32=false, max_order=None, pageblock_order=None, page_size=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        mem: Option<String>,
        nodes: Option<usize>,
        cpus: Option<usize>,
        cmdline: Option<String>,
        config: Option<PathBuf>,
        dma: bool,
        dma32: bool,
        max_order: Option<u8>,
        pageblock_order: Option<u8>,
        page_size: Option<String>,
    ) -> PyResult<Machine> {
        let args = MachineArgs {
            config,
            mem,
            nodes,
            cpus,
            cmdline,
            dma,
            dma32,
            max_order,
            pageblock_order,
            page_size,
        };
        let desc = args.to_desc().map_err(desc_error)?;
        let allocator = LocalPageAllocator::boot(&desc).map_err(desc_error)?;
        Ok(Machine { allocator, desc })
    }

    /// Total memory, bytes.
    #[getter]
    fn total_bytes(&self) -> u64 {
        self.desc.total_bytes()
    }

    /// Number of CPUs.
    #[getter]
    fn nr_cpus(&self) -> usize {
        self.desc.nr_cpus()
    }

    /// Allocates `1 << order` pages on `node` from `cpu`; returns the PFN.
    #[pyo3(signature = (order=0, node=0, cpu=0, gfp=None))]
    fn alloc(&self, order: u8, node: u16, cpu: u16, gfp: Option<&str>) -> PyResult<u64> {
        let page = self
            .cpu(cpu)?
            .alloc_pages(gfp_of(gfp)?, Order(order), NodeId(node))
            .map_err(alloc_error)?;
        Ok(page.pfn().0)
    }

    /// Frees the block at `pfn`, allocated at `order`.
    #[pyo3(signature = (pfn, order=0, cpu=0))]
    fn free(&self, pfn: u64, order: u8, cpu: u16) -> PyResult<()> {
        self.cpu(cpu)?
            .free_pages(Page::from_pfn(Pfn(pfn)), Order(order))
            .map_err(free_error)
    }

    /// Allocates up to `count` order-0 pages at once (`alloc_pages_bulk`);
    /// returns their PFNs (fewer when memory runs short, as the kernel's).
    #[pyo3(signature = (count, node=0, cpu=0, gfp=None))]
    fn alloc_bulk(
        &self,
        count: usize,
        node: u16,
        cpu: u16,
        gfp: Option<&str>,
    ) -> PyResult<Vec<u64>> {
        let mut pages = Vec::with_capacity(count);
        self.cpu(cpu)?
            .alloc_pages_bulk_vec(gfp_of(gfp)?, NodeId(node), count, &mut pages)
            .map_err(alloc_error)?;
        Ok(pages.iter().map(|page| page.pfn().0).collect())
    }

    /// Frees order-0 pages by PFN (`free_pages_bulk`); on an error none of
    /// the pages after the bad one is freed.
    #[pyo3(signature = (pfns, cpu=0))]
    fn free_bulk(&self, pfns: Vec<u64>, cpu: u16) -> PyResult<()> {
        let pages: Vec<Page> = pfns
            .into_iter()
            .map(|pfn| Page::from_pfn(Pfn(pfn)))
            .collect();
        self.cpu(cpu)?.free_pages_bulk(&pages).map_err(free_error)
    }

    /// Writes `value` to a page-allocator sysctl (`vm.min_free_kbytes`,
    /// ...) as `printf %s value > /proc/sys/vm/NAME` would; EINVAL (as
    /// the kernel answers) leaves every value as it was, except what a bad
    /// `lowmem_reserve_ratio` vector stored before its bad value.
    fn write_sysctl(&mut self, name: &str, value: &str) -> PyResult<()> {
        let sysctl = pageframe::VmSysctl::from_name(name)
            .ok_or_else(|| with_errno(ENOENT, format!("no sysctl '{name}'")))?;
        self.allocator
            .write_sysctl(sysctl, value)
            .map_err(|errno| with_errno(errno.code(), format!("{name}={value}: {errno}")))
    }

    /// A kernel-format view as text (`buddyinfo`, `pagetypeinfo`,
    /// `zoneinfo`, `vmstat`, `shuffle`, `sysctl`).
    fn view(&self, name: &str) -> PyResult<String> {
        pageframe::proc::render(&self.allocator, name).ok_or_else(|| {
            invalid(format!(
                "unknown view '{name}' (known: {})",
                pageframe::proc::VIEWS.join(", ")
            ))
        })
    }

    /// Checks every invariant of the allocator.
    fn check_invariants(&self) -> PyResult<()> {
        self.allocator
            .check_invariants()
            .map_err(|err| crate::errors::PageframeError::new_err(err.to_string()))
    }
}

/// The names of the views.
#[pyfunction]
pub fn views() -> Vec<&'static str> {
    pageframe::proc::VIEWS.to_vec()
}
