//! `rtlab suite list` and `rtlab suite NAME`: the published evaluations, end to end.

use crate::cli::SuiteArgs;

pub fn cmd_suite(args: &SuiteArgs) -> anyhow::Result<u8> {
    let _ = args;
    anyhow::bail!("rtlab suite is not implemented yet")
}
