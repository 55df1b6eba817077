//! The row fields (columns) of `unmapped-populate`: one home for each name, used by
//! the run that writes the rows and by the headline and plots that read
//! them.

/// Column `variant`.
pub const VARIANT: &str = "variant";
/// Column `backing`.
pub const BACKING: &str = "backing";
/// Column `samples`.
pub const SAMPLES: &str = "samples";
/// Column `mean_ms`.
pub const MEAN_MS: &str = "mean_ms";
/// Column `min_ms`.
pub const MIN_MS: &str = "min_ms";
/// Column `histogram`.
pub const HISTOGRAM: &str = "histogram";
/// Column `max_ms`.
pub const MAX_MS: &str = "max_ms";
/// Column `modelled_ms`.
pub const MODELLED_MS: &str = "modelled_ms";
/// Column `delta_vs_baseline`.
pub const DELTA_VS_BASELINE: &str = "delta_vs_baseline";
/// Column `reference_mean_ms`.
pub const REFERENCE_MEAN_MS: &str = "reference_mean_ms";
/// Column `reference_delta`.
pub const REFERENCE_DELTA: &str = "reference_delta";
/// Column `tlb_flushes`.
pub const TLB_FLUSHES: &str = "tlb_flushes";
/// Column `local_flushes`.
pub const LOCAL_FLUSHES: &str = "local_flushes";
/// Column `pages`.
pub const PAGES: &str = "pages";
/// Column `cv`: coefficient of variation of the samples (arena rows).
pub const CV: &str = "cv";
/// Column `ipis_populating_cpu`: TLB shootdowns received per sample by the
/// populating thread's host CPU (/proc/interrupts).
pub const IPIS_POPULATING_CPU: &str = "ipis_populating_cpu";
/// Column `ipis_other_cpus`: TLB shootdowns received per sample by every
/// other host CPU.
pub const IPIS_OTHER_CPUS: &str = "ipis_other_cpus";
/// Column `syscalls`: the backing's host system calls per sample.
pub const SYSCALLS: &str = "syscalls";
/// Column `minor_faults`: the process's minor faults per sample.
pub const MINOR_FAULTS: &str = "minor_faults";
/// Column `major_faults`: the process's major faults per sample.
pub const MAJOR_FAULTS: &str = "major_faults";
/// Column `agent_minor_faults`: the mermap agents' minor faults per sample.
pub const AGENT_MINOR_FAULTS: &str = "agent_minor_faults";
