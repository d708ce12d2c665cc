//! `rtlab suite list` and `rtlab suite NAME|FILE`: the published evaluations, end to end.
//! A suite file ([`file`]) describes the paper's conditions (one `rtlab run` each) and its
//! tables and figures; [`run`] runs the conditions and writes the suite directory.

pub mod file;
mod run;

use crate::cli::SuiteArgs;
use crate::errors::{usage, EXIT_OK};
use file::{format_duration, Mode, SuiteFile, BUILT_IN};

pub fn cmd_suite(args: &SuiteArgs) -> anyhow::Result<u8> {
    if args.name == "list" {
        if args.quick || args.long || args.label.is_some() || args.output.is_some() {
            return Err(usage("suite list takes no other option"));
        }
        crate::print(&list_text()?)?;
        return Ok(EXIT_OK);
    }
    let suite = SuiteFile::find(&args.name)?;
    let mode = if args.quick {
        Mode::Quick
    } else if args.long {
        if !suite.has_long() {
            return Err(usage(format!(
                "--long: suite {} has no long variant (none of its conditions has `long` keys)",
                suite.info.name
            )));
        }
        Mode::Long
    } else {
        Mode::Full
    };
    run::run_suite(&suite, mode, args)
}

/// The built-in suites: name, conditions, full and --quick durations, title.
fn list_text() -> anyhow::Result<String> {
    let mut rows = vec![[
        "NAME".to_string(),
        "CONDITIONS".to_string(),
        "FULL".to_string(),
        "--quick".to_string(),
        "TITLE".to_string(),
    ]];
    for (name, text) in BUILT_IN {
        let suite = SuiteFile::parse(text, &format!("built-in {name}"))?;
        let conditions: Vec<&str> = suite.conditions.iter().map(|c| c.name.as_str()).collect();
        let mut full = format_duration(suite.estimate(Mode::Full)?);
        if suite.has_long() {
            full.push_str(&format!(" (--long {})", format_duration(suite.estimate(Mode::Long)?)));
        }
        rows.push([
            suite.info.name.clone(),
            conditions.join(", "),
            full,
            format_duration(suite.estimate(Mode::Quick)?),
            suite.info.title.clone(),
        ]);
    }
    let mut widths = [0usize; 5];
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut text = String::new();
    for row in &rows {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i + 1 == row.len() {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell}{}  ", " ".repeat(widths[i] - cell.chars().count())));
            }
        }
        text.push_str(line.trim_end());
        text.push('\n');
    }
    text.push_str(
        "\nDurations are measuring and settle time; `rtlab suite NAME --quick` runs every condition scaled down.\n\
         A suite file of your own: `rtlab suite path/to/suite.toml` (format: docs/suites/README.md).\n",
    );
    Ok(text)
}
