//! `rtlab completions SHELL` and `rtlab manpage`: generated from the command-line
//! definition (stub: filled in by its author).

use crate::cli::{CompletionsArgs, ManpageArgs};

pub fn cmd_completions(_args: &CompletionsArgs) -> anyhow::Result<u8> {
    anyhow::bail!("completions are not written yet")
}

pub fn cmd_manpage(_args: &ManpageArgs) -> anyhow::Result<u8> {
    anyhow::bail!("the manual page is not written yet")
}
