//! `rtlab history`.

use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// The monitor database (rtlab monitor --db)
    #[arg(value_name = "DB")]
    pub db: PathBuf,
}

pub fn cmd_history(args: &HistoryArgs) -> anyhow::Result<u8> {
    let _ = args;
    Err(crate::errors::usage("rtlab history is not built yet".to_string()))
}
