//! `rtlab check TASKSET [--platform RESULT]`: schedulability of a task set with the
//! platform's measured activation latency and task-switch time.

use crate::cli::CheckArgs;

pub fn cmd_check(args: &CheckArgs) -> anyhow::Result<u8> {
    let _ = args;
    anyhow::bail!("rtlab check is not implemented yet")
}
