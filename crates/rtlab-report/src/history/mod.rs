//! `rtlab history`'s views rendered: terminal text, Markdown, JSON (the
//! [`HistoryReport`] itself) and a self-contained HTML page in the report's style with SVG
//! figures ([`html`], [`figures`]). The statistics are computed by `rtlab-history` into
//! `rtlab_results::history::report`'s types; the tables here ([`tables`]) are the same
//! cells in every format.

pub mod figures;
pub mod html;

use crate::ReportError;
use rtlab_analysis::units::{format_signed_us, format_us, thousands};
use rtlab_results::history::range::short_utc;
use rtlab_results::history::report::{span_words, HistogramView, HistoryReport, BIN_NS};
use std::fmt::Write;

/// The output formats of `rtlab history`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HistoryFormat {
    Terminal,
    Markdown,
    Json,
    Html,
}

/// The report in one format.
pub fn render(report: &HistoryReport, format: HistoryFormat) -> Result<String, ReportError> {
    match format {
        HistoryFormat::Terminal => Ok(terminal(report)),
        HistoryFormat::Markdown => Ok(markdown(report)),
        HistoryFormat::Json => json(report),
        HistoryFormat::Html => html::page(report),
    }
}

/// A table as data: the same cells in the terminal, Markdown and HTML.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryTable {
    pub id: &'static str,
    pub title: String,
    pub columns: Vec<String>,
    /// Per column: numbers (right-aligned) or words.
    pub numeric: Vec<bool>,
    pub rows: Vec<Vec<String>>,
    pub notes: Vec<String>,
}

fn us(ns: Option<i64>) -> String {
    ns.map_or_else(|| "-".into(), format_us)
}

/// "rtlab history: board-1, timer.latency".
pub fn title(report: &HistoryReport) -> String {
    let mut hosts: Vec<&str> = Vec::new();
    for s in &report.sessions {
        if !hosts.contains(&s.hostname.as_str()) {
            hosts.push(&s.hostname);
        }
    }
    let phase = report.phase.as_deref().map(|p| format!(", phase {p}")).unwrap_or_default();
    format!("rtlab history: {}, {}{phase}", hosts.join(", "), report.metric)
}

/// "2026-11-20 10:00 to 2026-11-22 10:00 UTC · 3 sessions · 2,880 rows".
pub fn subtitle(report: &HistoryReport) -> String {
    format!(
        "{} to {} UTC · {} session{} · {} row{} · {}",
        short_utc(report.first_ns),
        short_utc(report.last_ns),
        report.sessions.len(),
        if report.sessions.len() == 1 { "" } else { "s" },
        thousands(report.rows.len() as u64),
        if report.rows.len() == 1 { "" } else { "s" },
        report.database
    )
}

/// The sessions of the range.
pub fn sessions_table(report: &HistoryReport) -> HistoryTable {
    let rows = report
        .sessions
        .iter()
        .map(|s| {
            let mut began = Vec::new();
            if let Some(k) = &s.previous_kernel {
                began.push(format!("kernel changed from {k}"));
            }
            if let Some(g) = s.gap_before_ns.filter(|g| *g > s.window_ns as i64) {
                began.push(format!("after a gap of {}", span_words(g)));
            }
            let ended = match (&s.ended_ns, &s.end_reason) {
                (Some(t), Some(r)) => format!("{} ({r})", short_utc(*t)),
                (Some(t), None) => short_utc(*t),
                (None, _) => "not cleanly (running or killed)".into(),
            };
            vec![
                s.id.to_string(),
                short_utc(s.started_ns),
                ended,
                s.hostname.clone(),
                format!("{} ({})", s.kernel_release, s.preemption),
                span_words(s.window_ns as i64),
                thousands(s.rows as u64),
                began.join("; "),
            ]
        })
        .collect();
    HistoryTable {
        id: "sessions",
        title: "Sessions (each start of rtlab monitor)".into(),
        columns: ["session", "started (UTC)", "ended", "host", "kernel", "window", "rows", "began"]
            .map(String::from)
            .to_vec(),
        numeric: vec![true, false, false, false, false, true, true, false],
        rows,
        notes: Vec::new(),
    }
}

/// Kernel changes and gaps.
pub fn events_table(report: &HistoryReport) -> HistoryTable {
    HistoryTable {
        id: "events",
        title: "Kernel changes and gaps".into(),
        columns: vec!["when (UTC)".into(), "event".into()],
        numeric: vec![false, false],
        rows: report.events.iter().map(|e| vec![short_utc(e.at_ns), e.text.clone()]).collect(),
        notes: if report.events.is_empty() {
            vec!["None in this range.".into()]
        } else {
            vec!["A gap is marked where the monitor restarted later than one window after its last window.".into()]
        },
    }
}

/// Percentiles per UTC day.
pub fn days_table(report: &HistoryReport) -> HistoryTable {
    HistoryTable {
        id: "days",
        title: format!("Percentiles per day, {} (µs, all CPUs)", report.metric),
        columns: ["day (UTC)", "rows", "samples", "p50", "p99", "p99.9", "max", "overruns", "lost", "kernels"]
            .map(String::from)
            .to_vec(),
        numeric: vec![false, true, true, true, true, true, true, true, true, false],
        rows: report
            .days
            .iter()
            .map(|d| {
                vec![
                    d.day.clone(),
                    thousands(d.rows as u64),
                    thousands(d.count),
                    us(d.p50_ns),
                    us(d.p99_ns),
                    us(d.p99_9_ns),
                    us(d.max_ns),
                    thousands(d.overruns),
                    thousands(d.lost),
                    d.kernels.join(", "),
                ]
            })
            .collect(),
        notes: vec!["Maxima are exact; percentiles come from the merged histograms (within 0.1 %).".into()],
    }
}

/// The last day and the whole range side by side.
pub fn histograms_table(report: &HistoryReport) -> HistoryTable {
    let row = |name: &str, h: &HistogramView| {
        vec![
            name.to_string(),
            if h.rows == 0 { "-".into() } else { format!("{} to {}", short_utc(h.since_ns), short_utc(h.until_ns)) },
            thousands(h.count),
            us(h.min_ns),
            us(h.p50_ns),
            us(h.p99_ns),
            us(h.p99_9_ns),
            us(h.max_ns),
        ]
    };
    HistoryTable {
        id: "histograms",
        title: format!("Last day and whole range, {} (µs, all CPUs)", report.metric),
        columns: ["", "UTC", "samples", "min", "p50", "p99", "p99.9", "max"].map(String::from).to_vec(),
        numeric: vec![false, false, true, true, true, true, true, true],
        rows: vec![row("last day", &report.last_day), row("range", &report.range)],
        notes: vec!["The last day: the 24 hours before the range's last row ended.".into()],
    }
}

/// Before vs after, with the bootstrap's intervals; None without a comparison.
pub fn regression_table(report: &HistoryReport) -> Option<HistoryTable> {
    let r = report.regression.as_ref()?;
    let mut rows: Vec<Vec<String>> = r
        .quantiles
        .iter()
        .map(|q| {
            vec![
                q.name.clone(),
                format_us(q.before_ns),
                format_us(q.after_ns),
                format_signed_us(q.difference_ns),
                format!("{} to {}", format_signed_us(q.low_ns), format_signed_us(q.high_ns)),
                q.change.clone(),
            ]
        })
        .collect();
    let max_difference = match (r.before.max_ns, r.after.max_ns) {
        (Some(a), Some(b)) => format_signed_us(b - a),
        _ => "-".into(),
    };
    rows.push(vec![
        "max".into(),
        us(r.before.max_ns),
        us(r.after.max_ns),
        max_difference,
        "exact: no interval".into(),
        String::new(),
    ]);
    let side = |name: &str, s: &rtlab_results::history::report::RangeSide| {
        format!(
            "{name}: {} to {} UTC, {} rows, {} samples, kernel {}.",
            short_utc(s.since_ns),
            short_utc(s.until_ns),
            thousands(s.rows as u64),
            thousands(s.count),
            s.kernels.join(", ")
        )
    };
    Some(HistoryTable {
        id: "regression",
        title: format!("Regression check: {}", r.basis),
        columns: ["", "before (µs)", "after (µs)", "Δ (µs)", "95 % CI of Δ (µs)", "after vs before"]
            .map(String::from)
            .to_vec(),
        numeric: vec![false, true, true, true, false, false],
        rows,
        notes: vec![side("Before", &r.before), side("After", &r.after), r.method.clone()],
    })
}

/// Every table, in page order.
pub fn tables(report: &HistoryReport) -> Vec<HistoryTable> {
    let mut out = Vec::new();
    out.extend(regression_table(report));
    out.push(days_table(report));
    out.push(histograms_table(report));
    out.push(events_table(report));
    out.push(sessions_table(report));
    out
}

fn text_table(out: &mut String, table: &HistoryTable) {
    let width =
        |i: usize| std::iter::once(&table.columns).chain(&table.rows).map(|r| r[i].chars().count()).max().unwrap_or(0);
    let widths: Vec<usize> = (0..table.columns.len()).map(width).collect();
    let _ = writeln!(out, "{}", table.title);
    for row in std::iter::once(&table.columns).chain(&table.rows) {
        let mut line = String::from(" ");
        for (i, cell) in row.iter().enumerate() {
            let pad = " ".repeat(widths[i].saturating_sub(cell.chars().count()));
            let gap = if i == 0 { " " } else { "  " };
            if table.numeric[i] {
                let _ = write!(line, "{gap}{pad}{cell}");
            } else {
                let _ = write!(line, "{gap}{cell}{pad}");
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    for n in &table.notes {
        let _ = writeln!(out, "  {n}");
    }
}

/// Eight levels of a sparkline.
const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
/// Characters per line of the maxima over time.
const SPARK_WIDTH: usize = 60;

/// The maximum of every row as sparklines, one line per UTC day (rows grouped so that a
/// line holds at most [`SPARK_WIDTH`] characters; each character is the largest maximum of
/// its group), the scale from 0 to the range's maximum.
pub fn maxima_lines(report: &HistoryReport) -> Vec<String> {
    let top = report.rows.iter().filter_map(|r| r.max_ns).max().unwrap_or(0).max(1);
    let mut out = Vec::new();
    for day in &report.days {
        let of_day: Vec<Option<i64>> = report
            .rows
            .iter()
            .filter(|r| rtlab_results::history::range::day_start_ns(r.start_ns) == day.start_ns)
            .map(|r| r.max_ns)
            .collect();
        let per_char = of_day.len().div_ceil(SPARK_WIDTH).max(1);
        let line: String = of_day
            .chunks(per_char)
            .map(|group| match group.iter().flatten().max() {
                Some(&m) => BARS[((m as f64 / top as f64) * 7.0).round().clamp(0.0, 7.0) as usize],
                None => ' ',
            })
            .collect();
        out.push(format!("{}  {line:<width$}  max {}", day.day, us(day.max_ns), width = SPARK_WIDTH));
    }
    out
}

/// A histogram's non-empty bins as (start ns, width ns, count), joined into wider bins (1,
/// 2, 5, 10 µs, ...) until at most `lines` remain.
pub fn grouped_bins(view: &HistogramView, lines: usize) -> Vec<(u64, u64, u64)> {
    let mut width = BIN_NS;
    let steps = [1u64, 2, 5];
    let mut k = 0;
    loop {
        let mut groups: Vec<(u64, u64, u64)> = Vec::new();
        for &(start, count) in &view.bins {
            let at = start / width * width;
            match groups.last_mut() {
                Some(g) if g.0 == at => g.2 += count,
                _ => groups.push((at, width, count)),
            }
        }
        if groups.len() <= lines || width >= 1_000_000_000 {
            return groups;
        }
        k += 1;
        width = steps[k % 3] * 10u64.pow((k / 3) as u32) * BIN_NS;
    }
}

/// Text bars of a histogram on a log count scale.
fn histogram_lines(out: &mut String, name: &str, view: &HistogramView) {
    let groups = grouped_bins(view, 24);
    let Some(width) = groups.first().map(|g| g.1) else {
        let _ = writeln!(out, "{name}: no samples");
        return;
    };
    let most = groups.iter().map(|g| g.2).max().unwrap_or(1) as f64;
    let _ = writeln!(
        out,
        "{name} ({} samples; {} µs bins{}; bar length: log10 of the count)",
        thousands(view.count),
        width / 1000,
        if width > BIN_NS { ", joined from 1 µs bins to fit" } else { "" }
    );
    for (start, w, count) in groups {
        let bar = ((count as f64).log10() + 1.0) / (most.log10() + 1.0) * 40.0;
        let _ = writeln!(
            out,
            "  {:>8} - {:<8} {:>12}  {}",
            format_us(start as i64),
            format_us((start + w) as i64),
            thousands(count),
            "#".repeat(bar.round().max(1.0) as usize)
        );
    }
}

/// The histograms of the last day and of the range (one when the last day is the range).
fn histograms(out: &mut String, report: &HistoryReport) {
    if last_day_is_range(report) {
        histogram_lines(out, "Histogram of the range (all of it within the last day)", &report.range);
    } else {
        histogram_lines(out, "Histogram of the last day", &report.last_day);
        out.push('\n');
        histogram_lines(out, "Histogram of the range", &report.range);
    }
}

/// Whether the last day holds every row of the range.
pub fn last_day_is_range(report: &HistoryReport) -> bool {
    report.last_day.rows == report.range.rows
}

/// Text for a terminal.
pub fn terminal(report: &HistoryReport) -> String {
    let mut out = format!("{}\n{}\n", title(report), subtitle(report));
    if let Some(r) = &report.regression {
        let _ = writeln!(out, "\nRegression check ({}): {}", r.basis, r.headline);
    }
    out.push('\n');
    for table in tables(report) {
        text_table(&mut out, &table);
        out.push('\n');
    }
    let _ = writeln!(out, "Maximum per row over time, one line per UTC day (▁ = 0 … █ = the range's maximum):");
    for line in maxima_lines(report) {
        let _ = writeln!(out, "  {}", line.trim_end());
    }
    out.push('\n');
    histograms(&mut out, report);
    if !report.notes.is_empty() {
        out.push('\n');
        for n in &report.notes {
            let _ = writeln!(out, "{n}");
        }
    }
    out
}

fn markdown_table(out: &mut String, table: &HistoryTable) {
    use crate::markdown::escape as md;
    let _ = writeln!(out, "\n## {}\n", md(&table.title));
    let row = |cells: &[String]| {
        format!(
            "| {} |\n",
            cells.iter().map(|c| if c.is_empty() { " ".into() } else { md(c) }).collect::<Vec<_>>().join(" | ")
        )
    };
    out.push_str(&row(&table.columns));
    out.push_str(&row(&table
        .numeric
        .iter()
        .map(|n| if *n { "---:".to_string() } else { ":---".to_string() })
        .collect::<Vec<_>>()));
    for r in &table.rows {
        out.push_str(&row(r));
    }
    if !table.notes.is_empty() {
        out.push('\n');
        for n in &table.notes {
            let _ = writeln!(out, "- {}", md(n));
        }
    }
}

/// Markdown, for pasting into an issue or a lab notebook.
pub fn markdown(report: &HistoryReport) -> String {
    use crate::markdown::escape as md;
    let mut out = format!("# {}\n\n{}\n", md(&title(report)), md(&subtitle(report)));
    if let Some(r) = &report.regression {
        let _ = writeln!(out, "\n**{}** ({})", md(&r.headline), md(&r.basis));
    }
    for table in tables(report) {
        markdown_table(&mut out, &table);
    }
    out.push_str("\n## Maximum per row over time\n\nOne line per UTC day (▁ = 0 … █ = the range's maximum):\n\n```\n");
    for line in maxima_lines(report) {
        let _ = writeln!(out, "{}", line.trim_end());
    }
    out.push_str("```\n\n## Histograms\n\n```\n");
    histograms(&mut out, report);
    out.push_str("```\n");
    if !report.notes.is_empty() {
        out.push('\n');
        for n in &report.notes {
            let _ = writeln!(out, "- {}", md(n));
        }
    }
    out
}

/// The [`HistoryReport`] as JSON (`"schema": "rtlab.history/1"`, docs/history.md).
pub fn json(report: &HistoryReport) -> Result<String, ReportError> {
    let mut text = serde_json::to_string_pretty(report).map_err(|e| ReportError::Encode(e.to_string()))?;
    text.push('\n');
    Ok(text)
}

#[cfg(test)]
mod tests;
