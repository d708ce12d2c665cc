//! Shared by the fuzz targets (fuzz_targets/) and, through `#[path]`, by
//! crates/rtlab-report/tests/import_fuzz_regressions.rs: one definition of what an import
//! must do with any input.

pub mod harness;
