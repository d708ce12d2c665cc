//! The report as Markdown (GitHub tables), for pasting into an issue: the verdict and the
//! warnings first, then every table of [`report_tables`].

use crate::tables::{report_tables, Table};
use crate::ReportError;
use rtlab_results::set::{ReportExporter, ReportSet};
use std::fmt::Write;

#[derive(Debug, Default)]
pub struct MarkdownReport;

/// Text made safe inside a GitHub table row: pipes escaped, line breaks as spaces.
pub fn escape(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// A cell's text made safe inside a GitHub table row.
fn cell(text: &str) -> String {
    let text = escape(text);
    if text.is_empty() {
        " ".into()
    } else {
        text
    }
}

/// Column `i` holds figures ("1,500", "-0.4", "97 %"), apart from empty or "-" cells.
fn numeric_column(table: &Table, i: usize) -> bool {
    let cells: Vec<&str> =
        table.rows.iter().filter_map(|r| r.get(i)).map(|c| c.as_str()).filter(|c| !c.is_empty() && *c != "-").collect();
    !cells.is_empty()
        && cells.iter().all(|c| c.trim_start_matches(['+', '-']).starts_with(|ch: char| ch.is_ascii_digit()))
}

fn table(out: &mut String, table: &Table) {
    let _ = writeln!(out, "\n## {}\n", table.title);
    if let Some(source) = &table.source {
        let _ = writeln!(out, "*After {source}.*\n");
    }
    let row = |cells: &[String]| format!("| {} |\n", cells.iter().map(|c| cell(c)).collect::<Vec<_>>().join(" | "));
    out.push_str(&row(&table.columns));
    // Figures to the right, words to the left.
    let align: Vec<String> = (0..table.columns.len())
        .map(|i| if i > 0 && numeric_column(table, i) { "---:".into() } else { ":---".into() })
        .collect();
    out.push_str(&row(&align));
    for r in &table.rows {
        out.push_str(&row(r));
    }
    for note in &table.notes {
        let _ = writeln!(out, "\n{note}");
    }
}

impl ReportExporter for MarkdownReport {
    type Error = ReportError;

    fn render(&self, set: &ReportSet) -> Result<String, ReportError> {
        let tables = report_tables(set)?;
        let mut out = String::from("# rtlab report\n");
        if let Some(v) = set.effective_verdict() {
            let _ = writeln!(out, "\n## Verdict: {}\n\n{}", v.word(), v.summary);
        }
        let warnings = set.warnings();
        if !warnings.is_empty() {
            out.push_str("\n## Warnings\n\n");
            for w in warnings {
                let _ = writeln!(out, "- {w}");
            }
        }
        for sourced in set.runs.iter().filter(|r| r.run.imported.is_some()) {
            if let Some(info) = &sourced.run.imported {
                let _ = writeln!(
                    out,
                    "\n## Run {}: imported from {}\n",
                    cell(&sourced.run.label),
                    cell(&info.source_line())
                );
                for line in info.describe() {
                    let _ = writeln!(out, "- {}", cell(&line));
                }
            }
        }
        out.push_str("\n## Configurations\n\n");
        for c in &set.configurations() {
            let host = &c.run.host;
            let source = set.runs.get(c.run_index).map(|r| r.source.as_str()).unwrap_or_default();
            let _ = writeln!(
                out,
                "- **{}**: run {}, scenario {}, kernel {} ({}), from `{source}`",
                cell(&c.name),
                cell(&c.run.label),
                cell(c.scenario),
                cell(&host.kernel_release),
                crate::host::preemption_name(host)
            );
        }
        for t in &tables {
            table(&mut out, t);
        }
        Ok(out)
    }
}
