//! report.html: a self-contained page (inline SVG and CSS, no scripts, no fonts, no network)
//! with, on its first screen, what was compared, the verdict and every reason not to trust
//! the numbers; then the key figures, the figures of each metric, the tables, the loads and
//! the hosts.

use crate::digest::{MetricRow, RunDigest};
use crate::figures::{self, palette, Figure, MetricFigures, TableFigure};
use crate::tables::{self, Table};
use crate::text::{escape, metric_title};
use crate::ReportError;
use rtlab_analysis::units::{format_us, thousands};
use rtlab_results::run::RunResult;
use rtlab_results::set::{Configuration, ReportExporter, ReportSet};
use rtlab_results::verdict::{Outcome, Verdict};
use std::fmt::Write;

/// The HTML report of a [`ReportSet`].
#[derive(Debug, Default)]
pub struct HtmlReport;

/// The report's style sheet (also the suite report's).
pub const CSS: &str = r#"
:root { --ink: #222; --muted: #5a5a5a; --line: #d8d8d8; --bad: #b00020; --warn: #8a5300; --good: #17672e; }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
  color: var(--ink); background: #fafafa; }
main { max-width: 1180px; margin: 0 auto; padding: 24px 28px 64px; background: #fff; }
h1 { font-size: 1.75rem; margin: 0 0 4px; }
h2 { font-size: 1.35rem; margin: 40px 0 12px; padding-bottom: 4px; border-bottom: 2px solid var(--ink); }
h3 { font-size: 1.1rem; margin: 24px 0 6px; }
.subtitle { color: var(--muted); margin: 0 0 16px; }
.runs { margin: 0 0 16px; padding-left: 1.2em; }
.banner { border-radius: 6px; padding: 12px 16px; margin: 12px 0; }
.banner h2, .banner h3 { margin: 0 0 6px; border: 0; padding: 0; font-size: 1.15rem; }
.banner ul { margin: 4px 0 0; padding-left: 1.2em; }
.danger { background: var(--bad); color: #fff; }
.warning { background: #fff4e0; border: 2px solid #e0a030; }
.verdict { border: 3px solid; }
.verdict.met { border-color: var(--good); background: #eaf6ee; }
.verdict.not-met { border-color: var(--bad); background: #fdecef; }
.verdict.undecided { border-color: var(--warn); background: #fff4e0; }
.verdict .word { font-size: 1.5rem; font-weight: 700; margin-right: 8px; }
.verdict.met .word { color: var(--good); }
.verdict.not-met .word { color: var(--bad); }
.verdict.undecided .word { color: var(--warn); }
table { border-collapse: collapse; margin: 8px 0; font-size: 0.92rem; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 8px; text-align: right; vertical-align: top; }
th:first-child, td:first-child, .l { text-align: left; }
.nw { white-space: nowrap; }
.verdict table { font-size: 0.85rem; }
thead th { border-bottom: 2px solid var(--ink); background: #f3f3f3; }
tbody tr:nth-child(even) { background: #fafafa; }
.scroll { overflow-x: auto; }
.swatch { display: inline-block; width: 14px; height: 14px; border-radius: 3px; margin-right: 6px; vertical-align: -2px; }
.source, .notes, .muted { color: var(--muted); font-size: 0.9rem; }
.notes { margin: 4px 0 0; padding-left: 1.2em; }
nav ul { columns: 2; padding-left: 1.2em; }
figure.rtlab-figure { margin: 20px 0 28px; }
figure.rtlab-figure figcaption { margin-bottom: 6px; }
figure.rtlab-figure figcaption strong { display: block; font-size: 1.05rem; }
.beside { display: flex; flex-wrap: wrap; gap: 0 28px; align-items: flex-start; }
.beside > .beside-table { flex: 0 1 auto; max-width: 100%; }
.beside > figure.rtlab-figure { flex: 1 1 520px; min-width: 0; margin-top: 8px; }
svg.rtlab-svg { display: block; width: 100%; height: auto; max-width: 960px; border: 1px solid var(--line); }
pre { background: #f5f5f5; padding: 10px; overflow-x: auto; font-size: 0.85rem; }
footer { margin-top: 48px; color: var(--muted); font-size: 0.85rem; }
"#;

impl ReportExporter for HtmlReport {
    type Error = ReportError;

    fn render(&self, set: &ReportSet) -> Result<String, ReportError> {
        let configurations = set.configurations();
        let digests: Vec<RunDigest> = set.runs.iter().map(|r| RunDigest::of(&r.run)).collect::<Result<_, _>>()?;
        let figures = figures::report_figures(set)?;
        let tail_figures = figures::tail_figures(set)?;
        let table_figures = [figures::table_figures(set)?, tables::split::report_figures(set)].concat();
        let tables = tables::report_tables(set)?;

        let mut page = String::with_capacity(1 << 20);
        let title = page_title(set);
        page_start(&mut page, &title, "");
        header(&mut page, set, &title);
        verdict(&mut page, set.effective_verdict().as_ref(), &tables, &configurations);
        warnings(&mut page, set);
        key_figures(&mut page, set, &configurations, &digests);
        long_enough(&mut page, set)?;
        let (tail_tables, tables): (Vec<&Table>, Vec<&Table>) =
            tables.iter().filter(|t| t.id != VERDICT_TABLE).partition(|t| tables::tail::is_tail_table(&t.id));
        contents(&mut page, &figures, &tables, &table_figures, !tail_figures.is_empty());
        for metric in &figures {
            figure_section(&mut page, metric);
        }
        let refusals: Vec<(String, Vec<(String, String)>)> = crate::pwcet::report_tails(set)?
            .iter()
            .map(|tail| (tail.metric.clone(), tables::tail::refusals(tail)))
            .collect();
        tail_section(&mut page, &tail_figures, &tail_tables, &refusals, &configurations);
        if !tables.is_empty() {
            page.push_str("<h2 id=\"tables\">Tables</h2>\n");
            for table in &tables {
                let beside = table_figures.iter().find(|f| f.table_id == table.id).map(|f| &f.figure);
                table_section(&mut page, table, &configurations, beside);
            }
        }
        hosts(&mut page, set);
        footer(&mut page, set);
        page.push_str("</main>\n</body>\n</html>\n");
        Ok(page)
    }
}

/// "rtlab report: rt-board vs stock" / "rtlab report: vm".
fn page_title(set: &ReportSet) -> String {
    let mut labels: Vec<&str> = Vec::new();
    for r in &set.runs {
        if !labels.contains(&r.run.label.as_str()) {
            labels.push(&r.run.label);
        }
    }
    match labels.len() {
        0 => "rtlab report: no runs".into(),
        1..=4 => format!("rtlab report: {}", labels.join(" vs ")),
        n => format!("rtlab report: {} runs ({}, …)", n, labels[..3].join(", ")),
    }
}

/// "2026-11-21 05:57" from an RFC 3339 time.
pub fn short_time(rfc3339: &str) -> String {
    let t = rfc3339.replacen('T', " ", 1);
    t.get(..16).unwrap_or(&t).to_string()
}

fn header(page: &mut String, set: &ReportSet, title: &str) {
    let _ = writeln!(page, "<header>\n<h1>{}</h1>", escape(title));
    let _ = writeln!(
        page,
        "<p class=\"subtitle\">{} run{}, {} configuration{} (a configuration is one load scenario of one run)</p>",
        set.runs.len(),
        if set.runs.len() == 1 { "" } else { "s" },
        set.configurations().len(),
        if set.configurations().len() == 1 { "" } else { "s" }
    );
    page.push_str("<ul class=\"runs\">\n");
    for sourced in &set.runs {
        let run = &sourced.run;
        let host = &run.host;
        // Imported runs leave what their source did not record empty: show only what is known.
        let mut parts: Vec<String> = Vec::new();
        if !host.hostname.is_empty() {
            parts.push(host.hostname.clone());
        }
        if !host.kernel_release.is_empty() {
            parts.push(format!("kernel {} ({})", host.kernel_release, crate::host::preemption_name(host)));
        }
        if !host.cpu_model.is_empty() {
            parts.push(host.cpu_model.clone());
        }
        if !run.start_time.is_empty() {
            parts.push(format!(
                "{} to {} ({:.0} s measured)",
                short_time(&run.start_time),
                short_time(&run.end_time),
                run.duration_s
            ));
        }
        parts.push(format!(
            "scenarios {}",
            run.scenarios.iter().map(|s| s.name.as_str()).collect::<Vec<_>>().join(", ")
        ));
        let _ = writeln!(page, "<li><strong>{}</strong>: {}</li>", escape(&run.label), escape(&parts.join(" · ")));
    }
    page.push_str("</ul>\n");
    for sourced in &set.runs {
        if let Some(info) = &sourced.run.imported {
            let _ = writeln!(
                page,
                "<div class=\"imported\"><p><strong>{}</strong>: imported from {}</p>",
                escape(&sourced.run.label),
                escape(&info.source_line())
            );
            list(page, "notes", &info.describe().iter().collect::<Vec<_>>());
            page.push_str("</div>\n");
        }
    }
    page.push_str("</header>\n");
}

/// The verdict box's class: "met", "not-met" or "undecided" (also the suite report's).
pub fn verdict_class(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Met => "met",
        Outcome::NotMet => "not-met",
        Outcome::Undecided => "undecided",
    }
}

/// Id of the verdict's table among [`tables::report_tables`]: shown in the verdict box.
const VERDICT_TABLE: &str = "verdict-checks";

fn verdict(page: &mut String, verdict: Option<&Verdict>, tables: &[Table], configurations: &[Configuration]) {
    let Some(verdict) = verdict else { return };
    let class = verdict_class(verdict.outcome());
    let word = verdict.word();
    let _ = writeln!(
        page,
        "<section class=\"banner verdict {class}\" id=\"verdict\">\n<h2><span class=\"word\">{word}</span></h2>\n\
         <p><strong>{}</strong></p>",
        escape(&verdict.summary)
    );
    match tables.iter().find(|t| t.id == VERDICT_TABLE) {
        Some(table) => {
            let shown = Table {
                notes: table.notes.iter().filter(|n| **n != verdict.summary).cloned().collect(),
                ..table.clone()
            };
            table_body(page, &shown, configurations);
        }
        None => list(page, "notes", &verdict.caveats.iter().collect::<Vec<_>>()),
    }
    page.push_str("</section>\n");
}

/// A `<ul class=...>` of escaped items; nothing when there are none.
pub(crate) fn list<S: AsRef<str>>(page: &mut String, class: &str, items: &[S]) {
    if items.is_empty() {
        return;
    }
    let _ = writeln!(page, "<ul class=\"{class}\">");
    for item in items {
        let _ = writeln!(page, "<li>{}</li>", escape(item.as_ref()));
    }
    page.push_str("</ul>\n");
}

/// What makes a run's numbers untrustworthy or incomplete, most serious first.
fn run_warnings(run: &RunResult) -> (Vec<String>, Vec<String>) {
    let mut serious = Vec::new();
    let mut other = Vec::new();
    if run.interrupted {
        serious.push("the run was interrupted: measurements hold only what was taken until then.".to_string());
    }
    for s in &run.scenarios {
        if let Some(why) = &s.load_failure {
            serious
                .push(format!("scenario {}: a load failed, so it was not measured under its full load: {why}", s.name));
        } else if s.interrupted && !run.interrupted {
            serious.push(format!("scenario {} was cut short.", s.name));
        }
        if let Some(why) = &s.raw_stopped {
            serious.push(format!("scenario {}: {why}.", s.name));
        }
    }
    serious.extend(run.split.iter().flat_map(|s| s.warnings()).map(|w| format!("kernel split: {w}.")));
    if run.host.virtualization.guest && !run.warnings.iter().any(|w| w.code == "virtual-machine") {
        other.push(format!(
            "running in a virtual machine ({}): the hypervisor can delay wake-ups by milliseconds.",
            run.host.virtualization.hypervisor.as_deref().unwrap_or("unknown hypervisor")
        ));
    }
    other.extend(run.warnings.iter().map(|w| w.message.clone()));
    let lost: u64 = run.measurements.iter().map(|m| m.lost).sum();
    if lost > 0 {
        let why = if run.scenarios.iter().any(|s| s.raw_stopped.is_some()) {
            "not written for want of space, or the writer could not keep up"
        } else {
            "the writer could not keep up"
        };
        other.push(format!("{} raw samples were lost ({why}); the histograms hold them.", thousands(lost)));
    }
    (serious, other)
}

/// Runs with the same lines, together: (labels, lines), in first-seen order. Runs without
/// lines (`lines` gives None) are left out.
fn grouped(set: &ReportSet, lines: impl Fn(&RunResult) -> Option<Vec<String>>) -> Vec<(Vec<String>, Vec<String>)> {
    let mut groups: Vec<(Vec<String>, Vec<String>)> = Vec::new();
    for run in set.runs.iter().map(|r| &r.run) {
        let Some(lines) = lines(run) else { continue };
        match groups.iter_mut().find(|(_, l)| *l == lines) {
            Some((labels, _)) => labels.push(run.label.clone()),
            None => groups.push((vec![run.label.clone()], lines)),
        }
    }
    groups
}

/// "run a" / "runs a, b".
fn runs_named(labels: &[String]) -> String {
    format!("{} {}", if labels.len() == 1 { "run" } else { "runs" }, escape(&labels.join(", ")))
}

/// The banners: not real-time results, incomplete runs, what may distort the results. Runs
/// that share a banner's content (the same host, the same privileges) share the banner.
fn warnings(page: &mut String, set: &ReportSet) {
    page.push_str("<section id=\"warnings\">\n");
    let not_real_time = grouped(set, |run| (!run.realtime.real_time_results).then(|| run.realtime.notes.clone()));
    for (labels, notes) in &not_real_time {
        let _ = writeln!(
            page,
            "<div class=\"banner danger not-real-time\">\n<h3>NOT REAL-TIME RESULTS: {}</h3>\n<p>The sampling threads \
             did not run with a real-time policy and locked memory: these numbers do not describe what a real-time \
             task would see.</p>",
            runs_named(labels)
        );
        list(page, "", &notes.iter().collect::<Vec<_>>());
        page.push_str("</div>\n");
    }
    let incomplete = grouped(set, |run| Some(run_warnings(run).0).filter(|l| !l.is_empty()));
    for (labels, lines) in &incomplete {
        let _ = writeln!(page, "<div class=\"banner danger\">\n<h3>INCOMPLETE: {}</h3>", runs_named(labels));
        list(page, "", &lines.iter().collect::<Vec<_>>());
        page.push_str("</div>\n");
    }
    let distortions = grouped(set, |run| Some(run_warnings(run).1).filter(|l| !l.is_empty()));
    for (labels, lines) in &distortions {
        let _ = writeln!(
            page,
            "<div class=\"banner warning\">\n<h3>What may distort the results of {}</h3>",
            runs_named(labels)
        );
        list(page, "", &lines.iter().collect::<Vec<_>>());
        page.push_str("</div>\n");
    }
    page.push_str("</section>\n");
}

/// "name" with its colour swatch.
fn swatch(index: usize, name: &str) -> String {
    format!(
        "<span class=\"swatch\" style=\"background:{}\"></span>{}",
        palette::css(palette::configuration(index)),
        escape(name)
    )
}

fn overall<'a>(digests: &'a [RunDigest], c: &Configuration, metric: &str) -> Option<&'a MetricRow> {
    let digest = digests.get(c.run_index)?;
    let scenario = digest.scenarios.iter().find(|s| s.name == c.scenario)?;
    Some(scenario.metric(metric)?.overall())
}

fn key_figures(page: &mut String, set: &ReportSet, configurations: &[Configuration], digests: &[RunDigest]) {
    let mut metrics: Vec<&str> = Vec::new();
    for m in set.runs.iter().flat_map(|r| r.run.metrics()) {
        if !metrics.contains(&m) {
            metrics.push(m);
        }
    }
    let kernel = |run: &RunResult| format!("{} · {}", run.host.kernel_release, crate::host::preemption_name(&run.host));
    // The kernel is in the header; a column only when the configurations differ in it.
    let kernels_differ = set.runs.iter().any(|r| kernel(&r.run) != kernel(&set.runs[0].run));
    page.push_str("<section id=\"key-figures\">\n<h2>Key figures</h2>\n");
    for metric in metrics {
        let _ = write!(
            page,
            "<h3>{} (µs, all CPUs)</h3>\n<div class=\"scroll\"><table>\n<thead><tr><th>configuration</th>{}\
             <th class=\"l\">loads</th><th>samples</th><th>min</th><th>mean</th><th>p50</th><th>p99</th>\
             <th>p99.9</th><th>p99.999</th><th>max</th><th>overruns</th><th>lost</th></tr></thead>\n<tbody>\n",
            escape(&metric_title(metric)),
            if kernels_differ { "<th class=\"l\">kernel</th>" } else { "" }
        );
        for (index, c) in configurations.iter().enumerate() {
            let Some(row) = overall(digests, c, metric) else { continue };
            let loads = c.run.scenario(c.scenario).map(|s| s.loads.iter().map(|l| l.name.as_str()).collect::<Vec<_>>());
            let loads = match loads {
                Some(l) if !l.is_empty() => l.join(" + "),
                _ => "none".into(),
            };
            let _ = write!(page, "<tr><td class=\"nw\">{}</td>", swatch(index, &c.name));
            if kernels_differ {
                let _ = write!(page, "<td class=\"l\">{}</td>", escape(&kernel(c.run)));
            }
            let _ = write!(page, "<td class=\"l\">{}</td><td>{}</td>", escape(&loads), thousands(row.count));
            match &row.summary {
                Some(s) => {
                    for cell in [
                        escape(&s.format_us("min")),
                        escape(&s.format_us("mean")),
                        escape(&s.format_us("p50")),
                        escape(&s.format_us("p99")),
                        escape(&s.format_us("p99.9")),
                        escape(&s.format_us("p99.999")),
                        format!("<strong>{}</strong>", escape(&s.format_us("max"))),
                    ] {
                        let _ = write!(page, "<td>{cell}</td>");
                    }
                }
                None => page.push_str("<td colspan=\"7\">no samples</td>"),
            }
            let _ = writeln!(page, "<td>{}</td><td>{}</td></tr>", thousands(row.overruns), thousands(row.lost));
        }
        page.push_str("</tbody></table></div>\n");
    }
    page.push_str("</section>\n");
}

/// "Long enough?" (docs/stop-rule.md): one table line per configuration that has the stop
/// rule's answer, and the convergence curve of those measured in windows. Nothing for runs
/// saved before it existed.
fn long_enough(page: &mut String, set: &ReportSet) -> Result<(), ReportError> {
    let answers: Vec<(String, &rtlab_analysis::convergence::Convergence)> = set
        .configurations()
        .iter()
        .filter_map(|c| Some((c.name.clone(), c.run.scenario(c.scenario)?.convergence.as_ref()?)))
        .collect();
    if answers.is_empty() {
        return Ok(());
    }
    page.push_str(
        "<section id=\"long-enough\">\n<h2>Long enough?</h2>\n<div class=\"scroll\"><table>\n<thead><tr>\
         <th class=\"l\">configuration</th><th class=\"l\">statistic</th><th>target</th><th>half-width</th>\
         <th>measured</th><th class=\"l\">answer</th></tr></thead>\n<tbody>\n",
    );
    for (name, c) in &answers {
        let _ = writeln!(
            page,
            "<tr><td class=\"nw\">{}</td><td class=\"l\">{} of {}</td><td>±{:.1} %</td><td>{}</td><td>{}</td>\
             <td class=\"l\">{}</td></tr>",
            escape(name),
            escape(&c.statistic),
            escape(&c.metric),
            c.target * 100.0,
            c.half_width.map_or("open".to_string(), rtlab_analysis::convergence::percent_text),
            escape(&rtlab_analysis::exceedance::format_interval(c.elapsed_s)),
            escape(&c.answer)
        );
    }
    page.push_str("</tbody></table></div>\n");
    let figure =
        figures::convergence::figure(set).map_err(|e| ReportError::Encode(format!("cannot draw a figure: {}", e.0)))?;
    if let Some(f) = figure {
        figure_element(page, &f);
    }
    page.push_str("</section>\n");
    Ok(())
}

fn contents(
    page: &mut String,
    figures: &[MetricFigures],
    tables: &[&Table],
    table_figures: &[TableFigure],
    tail: bool,
) {
    page.push_str("<nav>\n<h2>Contents</h2>\n<ul>\n");
    for metric in figures {
        for f in &metric.figures {
            let _ = writeln!(page, "<li><a href=\"#{}\">{}</a></li>", escape(&f.id), escape(&f.title));
        }
    }
    if tail {
        page.push_str("<li><a href=\"#tail\">Tail analysis: pWCET</a></li>\n");
    }
    for t in tables {
        let _ = writeln!(page, "<li><a href=\"#table-{}\">{}</a></li>", escape(&t.id), escape(&t.title));
        for f in table_figures.iter().filter(|f| f.table_id == t.id) {
            let _ = writeln!(page, "<li><a href=\"#{}\">{}</a></li>", escape(&f.figure.id), escape(&f.figure.title));
        }
    }
    page.push_str("<li><a href=\"#hosts\">Host details</a></li>\n");
    page.push_str("</ul>\n</nav>\n");
}

fn figure_section(page: &mut String, metric: &MetricFigures) {
    let _ = writeln!(
        page,
        "<section class=\"metric\" id=\"metric-{}\">\n<h2>{}</h2>",
        figures::slug(&metric.metric),
        escape(&metric.title)
    );
    list(page, "notes", &metric.notes.iter().collect::<Vec<_>>());
    for f in &metric.figures {
        figure_element(page, f);
    }
    page.push_str("</section>\n");
}

/// Opens a self-contained page in the report's look: the head with `title` and the report's
/// CSS followed by `extra_css`, then `<body><main>`.
pub fn page_start(page: &mut String, title: &str, extra_css: &str) {
    let _ = write!(
        page,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{CSS}{extra_css}</style>\n</head>\n<body>\n<main>\n",
        escape(title)
    );
}

pub(crate) fn figure_element(page: &mut String, f: &Figure) {
    let _ = writeln!(
        page,
        "<figure class=\"rtlab-figure\" id=\"{}\">\n<figcaption><strong>{}</strong>{}</figcaption>\n{}</figure>",
        escape(&f.id),
        escape(&f.title),
        escape(&f.description),
        f.svg
    );
}

/// The tail section: per metric, a box saying which pWCETs are not defensible and why (where
/// any is not), the pWCET table and its warnings, the figures (or why there are none), then
/// the model selection, the fits and the tests.
fn tail_section(
    page: &mut String,
    tails: &[MetricFigures],
    tables: &[&Table],
    refusals: &[(String, Vec<(String, String)>)],
    configurations: &[Configuration],
) {
    if tails.is_empty() {
        return;
    }
    page.push_str(
        "<section id=\"tail\">\n<h2>Tail analysis: pWCET</h2>\n<p class=\"muted\">The latency exceeded with a \
         given probability per activation, extrapolated from the measured tail by extreme value theory. An estimate \
         is only as good as its assumptions: read the tests and warnings with it.</p>\n",
    );
    // The titles of the tables and figures name the metric.
    for metric in tails {
        // The estimates and the warnings that qualify them, the figures, then model selection,
        // fits and tests.
        let [estimates, warnings, rest @ ..] = tables::tail::table_ids(&metric.metric);
        let refused = refusals.iter().find(|(m, _)| *m == metric.metric).map(|(_, r)| r.as_slice()).unwrap_or(&[]);
        refusal_box(page, &metric.title, refused);
        for table in [estimates, warnings].iter().flat_map(|id| tables.iter().filter(move |t| t.id == *id)) {
            // The refusals are in the box above: not again under the table.
            let boxed: Vec<String> = refused.iter().map(|(name, r)| tables::tail::refusal_note(name, r)).collect();
            let notes = table.notes.iter().filter(|n| !boxed.contains(n)).cloned().collect();
            table_section(page, &Table { notes, ..(*table).clone() }, configurations, None);
        }
        list(page, "notes", &metric.notes.iter().collect::<Vec<_>>());
        for f in &metric.figures {
            figure_element(page, f);
        }
        for table in rest.iter().flat_map(|id| tables.iter().filter(move |t| t.id == *id)) {
            table_section(page, table, configurations, None);
        }
    }
    page.push_str("</section>\n");
}

/// Above a metric's pWCET table, per configuration whose pWCET is not defensible: the refusal
/// with its reasons and remedies, and that the table's values are fitted ones.
fn refusal_box(page: &mut String, title: &str, refused: &[(String, String)]) {
    if refused.is_empty() {
        return;
    }
    let _ = writeln!(
        page,
        "<div class=\"banner warning refusal\">\n<h3>pWCET of {}: not defensible from this run</h3>\n<ul>",
        escape(title)
    );
    for (name, refusal) in refused {
        let why = refusal.strip_prefix("not defensible from this run").unwrap_or(refusal);
        let why = why.trim_start_matches([' ', '—', ':']).trim_end_matches('.');
        let _ = writeln!(page, "<li><strong>{}</strong>: {}.</li>", escape(name), escape(why));
    }
    let _ = writeln!(
        page,
        "</ul>\n<p>The table below still shows the fitted values, marked \"{}\": they are the model's, not a pWCET \
         to quote.</p>\n</div>",
        crate::pwcet::NOT_DEFENSIBLE_LABEL
    );
}

/// A table with its title and source; with a chart of the same figures beside it (the
/// jitter and sweep probes' tables), the two side by side where the page is wide enough.
fn table_section(page: &mut String, table: &Table, configurations: &[Configuration], beside: Option<&Figure>) {
    let _ = writeln!(
        page,
        "<section class=\"rtlab-table\" id=\"table-{}\">\n<h3>{}</h3>",
        escape(&table.id),
        escape(&table.title)
    );
    if let Some(source) = &table.source {
        let _ = writeln!(page, "<p class=\"source\">After {}</p>", escape(source));
    }
    match beside {
        Some(figure) => {
            // The notes go under both, so that their text does not widen the table's side.
            page.push_str("<div class=\"beside\">\n<div class=\"beside-table\">\n");
            table_body(page, &Table { notes: Vec::new(), ..table.clone() }, configurations);
            page.push_str("</div>\n");
            figure_element(page, figure);
            page.push_str("</div>\n");
            list(page, "notes", &table.notes.iter().collect::<Vec<_>>());
        }
        None => table_body(page, table, configurations),
    }
    page.push_str("</section>\n");
}

/// Numbers ("1,234", "-5.2", "+0.4", "17 min", "-", a bound "< 1e-10", "∞") align right,
/// words left.
fn looks_numeric(cell: &str) -> bool {
    let bound = cell.strip_prefix("< ").is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()));
    cell == "-"
        || cell == "∞"
        || bound
        || cell.starts_with(|c: char| c.is_ascii_digit())
        || (cell.len() > 1 && cell.starts_with(['+', '-']))
}

/// A table's header, rows and notes; a column named after a configuration gets its colour.
fn table_body(page: &mut String, table: &Table, configurations: &[Configuration]) {
    page.push_str("<div class=\"scroll\"><table>\n<thead><tr>");
    // A header sits over its cells: left over a column of words.
    let words = |i: usize| {
        let mut cells = table.rows.iter().filter_map(|r| r.get(i)).filter(|c| !c.is_empty() && *c != "-").peekable();
        cells.peek().is_some() && cells.all(|c| !looks_numeric(c))
    };
    for (i, c) in table.columns.iter().enumerate() {
        match configurations.iter().position(|k| k.name == *c) {
            Some(index) => {
                let _ = write!(page, "<th class=\"nw\">{}</th>", swatch(index, c));
            }
            None if i > 0 && words(i) => {
                let _ = write!(page, "<th class=\"l\">{}</th>", escape(c));
            }
            None => {
                let _ = write!(page, "<th>{}</th>", escape(c));
            }
        }
    }
    page.push_str("</tr></thead>\n<tbody>\n");
    for row in &table.rows {
        page.push_str("<tr>");
        for cell in row {
            let class = if looks_numeric(cell) { "" } else { " class=\"l\"" };
            let _ = write!(page, "<td{class}>{}</td>", escape(cell));
        }
        page.push_str("</tr>\n");
    }
    page.push_str("</tbody></table></div>\n");
    list(page, "notes", &table.notes.iter().collect::<Vec<_>>());
}

/// Everything known about each host, folded away: the tables hold the summary.
fn hosts(page: &mut String, set: &ReportSet) {
    page.push_str("<section id=\"hosts\">\n<h2>Host details</h2>\n");
    for sourced in &set.runs {
        let run = &sourced.run;
        let p = &run.realtime;
        let _ = writeln!(
            page,
            "<details>\n<summary>Run {} ({})</summary>\n<p>Sampling threads: {} priority {}, memory {}locked, \
             /dev/cpu_dma_latency {}held; period {} µs, CPUs {:?}. Read from {}.</p>\n<pre>{}</pre>\n</details>",
            escape(&run.label),
            escape(&run.host.hostname),
            p.policy.kernel_name(),
            p.priority,
            if p.memory_locked { "" } else { "not " },
            if p.dma_latency_held { "" } else { "not " },
            format_us(run.experiment.interval_ns as i64),
            run.experiment.cpus,
            escape(&sourced.source),
            escape(&crate::host::format_host(&run.host, &run.warnings))
        );
    }
    page.push_str("</section>\n");
}

fn footer(page: &mut String, set: &ReportSet) {
    page.push_str("<footer>\n");
    for sourced in &set.runs {
        let run = &sourced.run;
        let _ = writeln!(
            page,
            "<p>{}: {} {}{} · <code>{}</code></p>",
            escape(&run.label),
            escape(&run.tool.name),
            escape(&run.tool.version),
            run.tool.commit.as_ref().map(|c| format!(" ({})", escape(c))).unwrap_or_default(),
            escape(&run.command_line.join(" "))
        );
    }
    page.push_str(
        "<p>Made by rtlab from the saved run.json files: every figure can be regenerated from them.</p>\n</footer>\n",
    );
}
