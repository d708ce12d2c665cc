//! Running a suite: one `rtlab run` per condition, then suite.json and the suite report.

use super::file::{Mode, SuiteFile};
use crate::cli::SuiteArgs;

pub fn run_suite(suite: &SuiteFile, mode: Mode, args: &SuiteArgs) -> anyhow::Result<u8> {
    let _ = (suite, mode, args);
    anyhow::bail!("running a suite is not implemented yet (the suite file is valid)")
}
