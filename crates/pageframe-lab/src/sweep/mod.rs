//! Parameter sweeps: one experiment run at every point of the cross product
//! seeds × parameter values × machine shapes of a spec file ([`spec`]), each
//! point one deterministic run whose result is kept in its own file
//! ([`run`]), gathered into one table and a report page ([`gather`](mod@gather)).
//!
//! The local executor is a thread pool over [`run::run_point`]; a cluster
//! engine (Ray, through the Python package) calls the same function on its
//! workers and stores the records the same way, so both leave the same
//! results directory, and either can resume what the other started.

pub mod gather;
pub mod run;
pub mod spec;

pub use gather::{gather, Gathered};
pub use run::{pending, run_local, run_point, PointRecord};
pub use spec::{Point, Sweep};

#[cfg(test)]
mod tests;
