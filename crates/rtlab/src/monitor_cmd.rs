//! `rtlab monitor`.

use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct MonitorArgs {
    /// The history database
    #[arg(long, default_value = "results/monitor.db")]
    pub db: PathBuf,
}

pub fn cmd_monitor(args: &MonitorArgs) -> anyhow::Result<u8> {
    let _ = args;
    Err(crate::errors::usage("rtlab monitor is not built yet".to_string()))
}
