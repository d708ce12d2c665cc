//! `rtlab completions SHELL` and `rtlab manpage`: shell completion scripts (clap_complete)
//! and the manual page (clap_mangen), generated from the command-line definition in
//! [`crate::cli`] so they never drift from it. docs/install.md says where to put them.

use crate::cli::{Cli, CompletionsArgs, ManpageArgs, ShellArg};
use anyhow::Context;
use clap::{Command, CommandFactory};
use clap_complete::Shell;
use std::io::Write;

pub fn cmd_completions(args: &CompletionsArgs) -> anyhow::Result<u8> {
    let script = completion_script(args.shell);
    crate::print(&script)?;
    Ok(crate::errors::EXIT_OK)
}

pub fn cmd_manpage(_args: &ManpageArgs) -> anyhow::Result<u8> {
    let page = manual_page().context("rendering the manual page")?;
    crate::print(&page)?;
    Ok(crate::errors::EXIT_OK)
}

/// The completion script for `shell`, completing the command name `rtlab`.
pub fn completion_script(shell: ShellArg) -> String {
    let shell = match shell {
        ShellArg::Bash => Shell::Bash,
        ShellArg::Zsh => Shell::Zsh,
        ShellArg::Fish => Shell::Fish,
    };
    let mut command = public_command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "rtlab", &mut script);
    String::from_utf8_lossy(&script).into_owned()
}

/// One page, rtlab(1): the top-level sections, then a COMMANDS section with each
/// subcommand's synopsis, description and options, then the exit status. One page rather
/// than one per subcommand so that a single documented command installs all of it.
pub fn manual_page() -> std::io::Result<String> {
    let mut command = public_command().disable_help_subcommand(true);
    command.build();
    let top = clap_mangen::Man::new(command.clone()).title("RTLAB");
    let mut page = Vec::new();
    top.render_title(&mut page)?;
    top.render_name_section(&mut page)?;
    top.render_synopsis_section(&mut page)?;
    top.render_description_section(&mut page)?;
    top.render_options_section(&mut page)?;

    writeln!(page, ".SH COMMANDS")?;
    writeln!(page, "With no command, rtlab runs \\fBrtlab run\\fR.")?;
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = sub.get_bin_name().unwrap_or_else(|| sub.get_name());
        writeln!(page, ".SS \"{name}\"")?;
        let man = clap_mangen::Man::new(sub.clone());
        page.extend(section_body(|w| man.render_synopsis_section(w))?);
        writeln!(page, ".PP")?;
        page.extend(section_body(|w| man.render_description_section(w))?);
        page.extend(section_body(|w| man.render_options_section(w))?);
    }

    page.extend_from_slice(EXIT_STATUS_SECTION.as_bytes());
    top.render_version_section(&mut page)?;
    Ok(with_one_preamble(&String::from_utf8_lossy(&page)))
}

/// Every section clap_mangen renders opens with the same two lines defining `\\*(Aq`:
/// the page needs them once, after its `.TH` title line, which by convention comes first.
fn with_one_preamble(page: &str) -> String {
    let is_preamble = |line: &&str| line.starts_with(".ie \\n(.g .ds Aq") || line.starts_with(".el .ds Aq");
    let preamble: Vec<&str> = page.lines().filter(is_preamble).take(2).collect();
    let mut out = String::with_capacity(page.len());
    for line in page.lines().filter(|line| !is_preamble(line)) {
        out.push_str(line);
        out.push('\n');
        if line.starts_with(".TH ") {
            for defining in &preamble {
                out.push_str(defining);
                out.push('\n');
            }
        }
    }
    out
}

/// The exit codes (README.md "Exit codes"), in roff.
const EXIT_STATUS_SECTION: &str = r#".SH "EXIT STATUS"
.TP
\fB0\fR
The run finished and its results were written.
.TP
\fB1\fR
A requirement (\fB\-\-require\fR) was not met; the results and the report are written.
.TP
\fB2\fR
Bad usage or bad input: an invalid option or value, an unusable output directory, a
damaged or unrecognised file (\fBimport\fR names the file, the line and the reason).
.TP
\fB3\fR
Cannot measure as asked: the environment does not allow it, a scenario's loads failed,
or raw samples (\fB\-\-raw\fR) stopped because the file system was nearly full; in the last
two cases the results and the report are written and marked first.
.TP
\fB130\fR
Interrupted by SIGINT or SIGTERM: the partial results were written, marked interrupted.
"#;

/// A section clap_mangen rendered, without its `.SH` heading, so it can sit under a
/// subcommand's `.SS` heading instead.
fn section_body(render: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) -> std::io::Result<Vec<u8>> {
    let mut section = Vec::new();
    render(&mut section)?;
    let text = String::from_utf8_lossy(&section);
    let body: String = text.lines().filter(|line| !line.starts_with(".SH ")).map(|line| format!("{line}\n")).collect();
    Ok(body.into_bytes())
}

/// The command line as users see it: [`Cli`] without its hidden subcommands
/// (`__load-host` is rtlab's own), which clap_complete would otherwise offer.
pub fn public_command() -> Command {
    without_hidden_subcommands(Cli::command())
}

fn without_hidden_subcommands(command: Command) -> Command {
    if command.get_subcommands().all(|s| !s.is_hide_set()) {
        return command.mut_subcommands(without_hidden_subcommands);
    }
    // clap cannot remove a subcommand: rebuild this level from what users see.
    let visible: Vec<Command> =
        command.get_subcommands().filter(|s| !s.is_hide_set()).cloned().map(without_hidden_subcommands).collect();
    let mut rebuilt = Command::new(command.get_name().to_string())
        .args(command.get_arguments().cloned())
        .subcommands(visible)
        .subcommand_required(command.is_subcommand_required_set());
    if let Some(version) = command.get_version() {
        rebuilt = rebuilt.version(version.to_string());
    }
    if let Some(about) = command.get_about() {
        rebuilt = rebuilt.about(about.clone());
    }
    if let Some(long_about) = command.get_long_about() {
        rebuilt = rebuilt.long_about(long_about.clone());
    }
    rebuilt
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn public_command_keeps_every_visible_subcommand_and_drops_the_hidden_one() {
        let full = Cli::command();
        let public = public_command();
        let names = |c: &Command, hidden: bool| -> Vec<String> {
            c.get_subcommands().filter(|s| hidden || !s.is_hide_set()).map(|s| s.get_name().to_string()).collect()
        };
        assert_eq!(names(&public, true), names(&full, false));
        assert!(!names(&public, true).contains(&"__load-host".to_string()));
        assert_eq!(public.get_version(), full.get_version());
        assert_eq!(public.get_long_about().map(|s| s.to_string()), full.get_long_about().map(|s| s.to_string()));
    }

    #[test]
    fn public_command_parses_what_the_real_one_parses() {
        let args = ["rtlab", "import", "--from", "cyclictest", "hist.txt", "--unit", "ns"];
        public_command().try_get_matches_from(args).expect("public command accepts import");
        Cli::try_parse_from(args).expect("cli accepts import");
    }

    #[test]
    fn section_body_drops_only_the_heading() {
        let body = section_body(|w| w.write_all(b".SH OPTIONS\n.TP\n\\fB\\-h\\fR\n")).expect("renders");
        assert_eq!(String::from_utf8(body).expect("utf-8"), ".TP\n\\fB\\-h\\fR\n");
    }
}
