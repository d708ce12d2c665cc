//! `rtlab history`'s page: self-contained (inline SVG and CSS, no scripts), in the report's
//! style. First screen: what was measured, the regression check's answer and the maxima over
//! time; then the histograms, the percentiles per day, the kernel changes and gaps, and the
//! sessions.

use super::{figures, tables, title, HistoryTable};
use crate::figures::Figure;
use crate::html::{figure_element, list};
use crate::text::escape;
use crate::ReportError;
use rtlab_analysis::units::{format_us, thousands};
use rtlab_results::history::range::short_utc;
use rtlab_results::history::report::HistoryReport;
use std::fmt::Write;

/// The page's own rules, on top of the report's style sheet.
const HISTORY_CSS: &str = r#"
.verdict.neutral { border-color: var(--line); background: #f5f5f5; }
.verdict.neutral .word { color: var(--ink); }
.facts { display: flex; gap: 12px; margin: 12px 0 4px; flex-wrap: wrap; }
.fact { border: 1px solid var(--line); border-radius: 6px; padding: 6px 14px; min-width: 8em; }
.fact .n { display: block; font-size: 1.45rem; font-weight: 700; line-height: 1.1; }
.fact.bad { border-color: var(--bad); background: #fdecef; }
code { font-size: 0.92em; }
#table-sessions td:not(:last-child), #table-events td:first-child, #table-histograms td { white-space: nowrap; }
"#;

/// The whole page.
pub fn page(report: &HistoryReport) -> Result<String, ReportError> {
    let figures = figures::all(report)?;
    let tables = tables(report);
    let mut page = String::with_capacity(256 << 10);
    let title = title(report);
    crate::html::page_start(&mut page, &title, HISTORY_CSS);
    header(&mut page, report, &title);
    regression_box(&mut page, report);
    // The percentiles per day are a figure from two days on (one day is its table's row).
    let figures: Vec<Figure> =
        figures.into_iter().enumerate().filter(|(i, _)| *i != 2 || report.days.len() > 1).map(|(_, f)| f).collect();
    contents(&mut page, &figures, &tables);
    let table = |id: &str| tables.iter().find(|t| t.id == id);
    let figure = |i: usize| figures.get(i);
    page.push_str("<section id=\"over-time\">\n<h2>Over time</h2>\n");
    if let Some(f) = figure(0) {
        figure_element(&mut page, f);
    }
    if let Some(t) = table("events") {
        table_section(&mut page, t);
    }
    page.push_str("</section>\n<section id=\"distribution\">\n<h2>Histograms</h2>\n");
    if let Some(f) = figure(1) {
        figure_element(&mut page, f);
    }
    if let Some(t) = table("histograms") {
        table_section(&mut page, t);
    }
    page.push_str("</section>\n<section id=\"per-day\">\n<h2>Per day</h2>\n");
    if let Some(t) = table("days") {
        table_section(&mut page, t);
    }
    if let Some(f) = figure(2) {
        figure_element(&mut page, f);
    }
    page.push_str("</section>\n");
    if let Some(t) = table("regression") {
        page.push_str("<section id=\"regression\">\n<h2>Regression check</h2>\n");
        table_section(&mut page, t);
        page.push_str("</section>\n");
    }
    page.push_str("<section id=\"sessions\">\n<h2>Sessions</h2>\n");
    if let Some(t) = table("sessions") {
        table_section(&mut page, t);
    }
    page.push_str("</section>\n<footer>\n");
    // Why there is no regression check is said at the top.
    let notes: Vec<String> = report.notes.iter().filter(|n| !n.starts_with("No regression check")).cloned().collect();
    list(&mut page, "notes", &notes);
    let _ = writeln!(
        page,
        "<p>Made by <code>rtlab history</code> from {}: every figure can be regenerated from it. The same views: \
         <code>--format terminal|markdown|json</code>; a range as a run: <code>rtlab report DB --since … --until …</code>.</p>\n</footer>",
        escape(&report.database)
    );
    page.push_str("</main>\n</body>\n</html>\n");
    Ok(page)
}

fn header(page: &mut String, report: &HistoryReport, title: &str) {
    let _ = writeln!(page, "<header>\n<h1>{}</h1>", escape(title));
    let _ = writeln!(
        page,
        "<p class=\"subtitle\">{} to {} UTC · {} · {}</p>",
        short_utc(report.first_ns),
        short_utc(report.last_ns),
        escape(&kernels_line(report)),
        escape(&report.database)
    );
    let worst = report.range.max_ns;
    let last_day = report.last_day.max_ns;
    let changes = report.events.iter().filter(|e| e.kind == rtlab_results::history::report::EventKind::KernelChange);
    let gaps = report.events.iter().filter(|e| e.kind == rtlab_results::history::report::EventKind::Gap).count();
    page.push_str("<div class=\"facts\">\n");
    let fact = |page: &mut String, value: String, what: &str| {
        let _ = writeln!(page, "<div class=\"fact\"><span class=\"n\">{}</span>{}</div>", escape(&value), escape(what));
    };
    fact(page, worst.map_or("-".into(), |v| format!("{} µs", format_us(v))), "maximum, whole range");
    fact(page, last_day.map_or("-".into(), |v| format!("{} µs", format_us(v))), "maximum, last day");
    fact(page, report.range.p99_9_ns.map_or("-".into(), |v| format!("{} µs", format_us(v))), "p99.9, whole range");
    fact(page, thousands(report.range.count), "samples");
    fact(page, changes.count().to_string(), "kernel changes");
    fact(page, gaps.to_string(), "gaps");
    page.push_str("</div>\n</header>\n");
}

/// "kernel 6.1-rt (PREEMPT_RT), then 6.6-rt (PREEMPT_RT)".
fn kernels_line(report: &HistoryReport) -> String {
    let mut kernels: Vec<String> = Vec::new();
    for s in &report.sessions {
        let k = format!("{} ({})", s.kernel_release, s.preemption);
        if kernels.last() != Some(&k) {
            kernels.push(k);
        }
    }
    format!("kernel {}", kernels.join(", then "))
}

fn regression_box(page: &mut String, report: &HistoryReport) {
    let Some(r) = &report.regression else {
        let why = report.notes.iter().find(|n| n.starts_with("No regression check")).cloned().unwrap_or_default();
        let _ = writeln!(page, "<p class=\"muted\" id=\"verdict\">{}</p>", escape(&why));
        return;
    };
    let headline = r.quantiles.iter().find(|q| q.name == "p99.9").or(r.quantiles.last());
    let (class, word) = match headline.map(|q| q.change.as_str()) {
        Some("worse") => ("not-met", "WORSE"),
        Some("better") => ("met", "BETTER"),
        Some(_) => ("neutral", "NO CHANGE"),
        None => ("neutral", "NOT COMPARED"),
    };
    let _ = writeln!(
        page,
        "<section class=\"banner verdict {class}\" id=\"verdict\">\n<h2><span class=\"word\">{word}</span> \
         {}</h2>\n<p>Regression check {}.</p>",
        escape(&r.headline),
        escape(&r.basis)
    );
    let lines: Vec<String> = r.quantiles.iter().filter(|q| Some(*q) != headline).map(|q| q.sentence.clone()).collect();
    list(page, "", &lines);
    page.push_str("<p class=\"muted\"><a href=\"#regression\">The table and how to read it</a></p>\n</section>\n");
}

fn contents(page: &mut String, figures: &[Figure], tables: &[HistoryTable]) {
    page.push_str("<nav>\n<h2>Contents</h2>\n<ul>\n");
    for f in figures {
        let _ = writeln!(page, "<li><a href=\"#{}\">{}</a></li>", escape(&f.id), escape(&f.title));
    }
    for t in tables {
        let _ = writeln!(page, "<li><a href=\"#table-{}\">{}</a></li>", t.id, escape(&t.title));
    }
    page.push_str("</ul>\n</nav>\n");
}

fn table_section(page: &mut String, table: &HistoryTable) {
    let _ = writeln!(
        page,
        "<section class=\"rtlab-table\" id=\"table-{}\">\n<h3>{}</h3>\n<div class=\"scroll\"><table>\n<thead><tr>",
        table.id,
        escape(&table.title)
    );
    for (c, numeric) in table.columns.iter().zip(&table.numeric) {
        let class = if *numeric { "" } else { " class=\"l\"" };
        let _ = write!(page, "<th{class}>{}</th>", escape(c));
    }
    page.push_str("</tr></thead>\n<tbody>\n");
    for row in &table.rows {
        page.push_str("<tr>");
        for (cell, numeric) in row.iter().zip(&table.numeric) {
            let class = if *numeric { "" } else { " class=\"l\"" };
            let _ = write!(page, "<td{class}>{}</td>", escape(cell));
        }
        page.push_str("</tr>\n");
    }
    page.push_str("</tbody></table></div>\n");
    list(page, "notes", &table.notes);
    page.push_str("</section>\n");
}
