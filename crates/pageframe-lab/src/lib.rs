//! The pageframe laboratory: experiments that reproduce the source
//! documents' results on pageframe, the workloads they run, machine
//! descriptions from files and flags, and reports in the output contract's
//! formats. The `pageframe` command is a thin layer over this crate.

pub mod cache_model;
pub mod callgrind;
pub mod churn;
pub mod conform;
pub mod corpus;
pub mod experiments;
pub mod ext4_mount;
pub mod files;
pub mod host_anon;
pub mod host_layout;
pub mod host_memory;
pub mod machine_args;
pub mod object_views;
pub mod observe;
pub mod parallel;
pub mod params;
pub mod peers;
pub mod perf_table;
pub mod plots;
pub mod pmbench;
pub mod reclaim_views;
pub mod report;
pub mod signals;
pub mod site;
pub mod summary;
pub mod sweep;
pub mod timing;
pub mod trace;
pub mod workloads;
pub mod zram_serve;
