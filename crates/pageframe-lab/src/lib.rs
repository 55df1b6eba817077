//! The pageframe laboratory.
