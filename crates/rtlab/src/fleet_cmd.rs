//! `rtlab fleet`.

use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct FleetArgs {
    /// Prometheus' base URL (http://HOST:PORT), the server that scrapes the boards
    #[arg(long, value_name = "URL")]
    pub prometheus: String,
}

pub fn cmd_fleet(args: &FleetArgs) -> anyhow::Result<u8> {
    let _ = args;
    Err(crate::errors::usage("rtlab fleet is not built yet".to_string()))
}
