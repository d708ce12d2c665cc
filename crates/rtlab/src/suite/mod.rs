//! `rtlab suite list` and `rtlab suite NAME|FILE`: the published evaluations, end to end.
//! A suite file (rtlab-suite's `SuiteFile`) describes the paper's conditions (one `rtlab
//! run` each) and its tables and figures; [`plan`] reads a condition as `rtlab run` does,
//! [`run`] runs the conditions and writes the suite directory.

mod plan;
mod run;

use crate::cli::SuiteArgs;
use crate::errors::{usage, EXIT_OK};
use plan::PlanCheck;
use rtlab_suite::file::{format_duration, Mode, SuiteFile, BUILT_IN};

pub fn cmd_suite(args: &SuiteArgs) -> anyhow::Result<u8> {
    if args.name == "list" {
        if args.quick || args.long || args.label.is_some() || args.output.is_some() || args.check {
            return Err(usage("suite list takes no other option"));
        }
        crate::print(&list_text()?)?;
        return Ok(EXIT_OK);
    }
    let suite = SuiteFile::find(&args.name, &PlanCheck)?;
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
    if args.check {
        crate::print(&check_text(&suite, mode)?)?;
        return Ok(EXIT_OK);
    }
    run::run_suite(&suite, mode, args)
}

/// `suite FILE --check`: the file is valid (else exit 2 before this); what would run.
fn check_text(suite: &SuiteFile, mode: Mode) -> anyhow::Result<String> {
    let mut text = format!(
        "Suite {} ({}): valid; {} conditions, {} tables, {} figures{}; {} in this mode\n",
        suite.info.name,
        suite.source,
        suite.conditions.len(),
        suite.tables.len(),
        suite.figures.len(),
        match suite.judgements.len() {
            0 => String::new(),
            1 => ", 1 judgement".to_string(),
            n => format!(", {n} judgements"),
        },
        format_duration(suite.estimate(mode))
    );
    for c in &suite.conditions {
        let keys = c.keys(mode);
        // Presets can be long shell lines: their names are enough here.
        let shown: Vec<String> = keys
            .iter()
            .map(|(k, v)| match (k.as_str(), v.as_table()) {
                ("presets", Some(t)) => format!("presets {}", t.keys().cloned().collect::<Vec<_>>().join(", ")),
                _ => format!("{k} = {v}"),
            })
            .collect();
        let needs = if c.needs.is_empty() { String::new() } else { format!("; needs {}", c.needs.join(", ")) };
        text.push_str(&format!("  {} ({}): {}{needs}\n", c.name, c.title, shown.join(", ")));
    }
    Ok(text)
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
        let suite = SuiteFile::parse(text, &format!("built-in {name}"), &PlanCheck)?;
        let conditions: Vec<&str> = suite.conditions.iter().map(|c| c.name.as_str()).collect();
        let mut full = format_duration(suite.estimate(Mode::Full));
        if suite.has_long() {
            full.push_str(&format!(" (--long {})", format_duration(suite.estimate(Mode::Long))));
        }
        rows.push([
            suite.info.name.clone(),
            conditions.join(", "),
            full,
            format_duration(suite.estimate(Mode::Quick)),
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

/// `rtlab report SUITE_DIR` and `rtlab compare SUITE_DIR...`: the suite report (the paper's
/// tables with one row per suite label), as HTML (default: report.html in the suite
/// directory for one suite, else ./rtlab-compare.html) or Markdown (stdout), and the tables
/// on the terminal. Suite directories cannot be mixed with run directories.
pub fn cmd_report_suites(args: &crate::cli::ReportArgs, compare: bool) -> anyhow::Result<u8> {
    use crate::cli::ReportFormat;
    use rtlab_results::suite::{LoadedSuite, SuiteRecord};
    if let Some(run) = args.results.iter().find(|p| !SuiteRecord::is_suite(p)) {
        return Err(usage(format!(
            "{} is not a suite directory, the others are: give only suite directories (the paper's tables, one row \
             per suite label), or only results directories (a suite's conditions are results directories: \
             SUITE_DIR/CONDITION)",
            run.display()
        )));
    }
    if !args.require.is_empty() || args.metric.is_some() || args.scenario.is_some() {
        return Err(usage(
            "--require, --metric and --scenario apply to results directories: give the suite's condition \
             directories (SUITE_DIR/CONDITION) instead",
        ));
    }
    let suites = args.results.iter().map(|p| LoadedSuite::load(p)).collect::<Result<Vec<_>, _>>()?;
    rtlab_suite::report::check_same_suite(&suites)?;
    let not_met = suites.iter().any(|s| s.record.verdict.as_ref().is_some_and(|v| !v.met));
    let code = if not_met { crate::errors::EXIT_NOT_MET } else { EXIT_OK };
    match args.format {
        ReportFormat::Md => {
            let text = rtlab_suite::report::markdown(&suites)?;
            match &args.output {
                Some(path) => rtlab_results::run::write_atomically(path, text.as_bytes())
                    .map_err(|e| usage(format!("--output: cannot write the report: {e}")))?,
                None => crate::print(&text)?,
            }
        }
        ReportFormat::Html => {
            let single = suites.len() == 1 && !compare;
            let path = match &args.output {
                Some(p) => p.clone(),
                None if single => suites[0].dir.join("report.html"),
                None => "rtlab-compare.html".into(),
            };
            // Links to the conditions' reports, relative to where the page goes.
            let page_dir = path.parent().map(std::path::Path::to_path_buf).unwrap_or_default();
            let prefixes: Vec<String> = suites.iter().map(|s| link_prefix(&page_dir, &s.dir)).collect();
            let html = rtlab_suite::report::html(&suites, &prefixes)?;
            rtlab_results::run::write_atomically(&path, html.as_bytes()).map_err(|e| {
                crate::errors::output_error(args.output.is_some(), format!("cannot write the report: {e}"))
            })?;
            let mut text = rtlab_suite::report::terminal_text(&suites)?;
            text.push_str(&format!("Report: {}\n", path.display()));
            crate::print(&text)?;
        }
        ReportFormat::Lava => crate::lava_cmd::report_suites(args, &suites)?,
        other => {
            use clap::ValueEnum;
            let name = other.to_possible_value().map(|v| v.get_name().to_string()).unwrap_or_default();
            return Err(usage(format!(
                "--format {name}: a suite report is html, md or lava; the other formats work on the condition \
                 directories (SUITE_DIR/CONDITION)"
            )));
        }
    }
    Ok(code)
}

/// The path from `page_dir` to `suite_dir`, with a trailing '/', for links: "" when the
/// page is in the suite directory, the suite directory as given otherwise (absolute when
/// the page directory is not the current one).
fn link_prefix(page_dir: &std::path::Path, suite_dir: &std::path::Path) -> String {
    let same = |a: &std::path::Path, b: &std::path::Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    let here = if page_dir.as_os_str().is_empty() { std::path::Path::new(".") } else { page_dir };
    if same(here, suite_dir) {
        return String::new();
    }
    let shown = if same(here, std::path::Path::new(".")) {
        suite_dir.to_path_buf()
    } else {
        suite_dir.canonicalize().unwrap_or_else(|_| suite_dir.to_path_buf())
    };
    format!("{}/", shown.display().to_string().trim_end_matches('/'))
}
