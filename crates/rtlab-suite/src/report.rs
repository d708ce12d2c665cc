//! The suite report: the paper's tables with the paper's rows and this machine's (one row per
//! suite label in a comparison), the paper's figures drawn from the conditions' runs, the
//! verdict, and links to each condition's own report. As text for the terminal, Markdown,
//! and a self-contained HTML page (the style of [`rtlab_report::html`]).

use rtlab_analysis::curve::fixed_bins;
use rtlab_analysis::units::thousands;
use rtlab_analysis::LatencyHistogram;
use rtlab_report::figures::{self, Figure};
use rtlab_report::html::short_time;
use rtlab_report::markdown::escape as md;
use rtlab_report::tables::{text_table, Table};
use rtlab_report::text::{capitalised, escape};
use rtlab_report::ReportError;
use rtlab_results::run::RunResult;
use rtlab_results::set::{run_warnings, ReportSet, SourcedRun};
use rtlab_results::split::part_metrics;
use rtlab_results::suite::{
    CellValue, ConditionNames, ConditionStatus, FigureSpec, Layout, LoadedSuite, Selector, SuiteRecord, SuiteTable,
    TableSpec,
};
use rtlab_results::verdict::{Outcome, Verdict};
use std::fmt::Write;

/// The sentence every quick suite report carries, at the top.
pub const QUICK_NOTICE: &str = "quick: durations scaled down, not the paper's sample counts";
/// How the paper's values are labelled.
pub const PUBLISHED: &str = "published figures: other hardware and era";

/// What a cell of a laid-out table holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CellKind {
    /// A row's or column's name.
    Label,
    /// As printed in the paper.
    Paper,
    /// Measured by rtlab.
    Measured,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ViewCell {
    pub text: String,
    pub kind: CellKind,
    /// Set when the value could not be measured: why.
    pub not_measured: Option<String>,
}

/// A paper table laid out for people: the paper's rows, then the measured ones (or, in the
/// settings layout, the paper's column then the measured ones).
#[derive(Debug, Clone, PartialEq)]
pub struct TableView {
    pub id: String,
    pub title: String,
    pub source: Option<String>,
    /// "µs".
    pub unit: String,
    pub columns: Vec<ViewCell>,
    pub rows: Vec<Vec<ViewCell>>,
    pub notes: Vec<String>,
}

fn label_cell(text: &str) -> ViewCell {
    ViewCell { text: text.to_string(), kind: CellKind::Label, not_measured: None }
}

fn paper_cell(text: &str) -> ViewCell {
    ViewCell { text: text.to_string(), kind: CellKind::Paper, not_measured: None }
}

fn measured_cell(value: Option<&CellValue>, table: &SuiteTable) -> ViewCell {
    match value {
        Some(CellValue::NotMeasured { reason }) => {
            ViewCell { text: "not measured".into(), kind: CellKind::Measured, not_measured: Some(reason.clone()) }
        }
        Some(v) => ViewCell { text: v.text(table.spec.unit), kind: CellKind::Measured, not_measured: None },
        None => ViewCell {
            text: "not measured".into(),
            kind: CellKind::Measured,
            not_measured: Some("this suite run has no such cell".into()),
        },
    }
}

/// The suites of a report or comparison must all be runs of one suite.
pub fn check_same_suite(suites: &[LoadedSuite]) -> Result<(), ReportError> {
    let Some(first) = suites.first() else {
        return Err(ReportError::Usage { what: "suite report".into(), reason: "no suite directory given".into() });
    };
    for s in suites {
        if s.record.suite.name != first.record.suite.name {
            return Err(ReportError::Usage {
                what: "compare".into(),
                reason: format!(
                    "{} is a run of suite {}, {} of suite {}: compare runs of one suite (or their condition \
                     directories, which are ordinary results directories)",
                    first.dir.display(),
                    first.record.suite.name,
                    s.dir.display(),
                    s.record.suite.name
                ),
            });
        }
    }
    Ok(())
}

/// Every paper table of the suites' runs: the first suite's tables, with one measured row (or
/// column) per suite, in the order given.
pub fn table_views(suites: &[LoadedSuite]) -> Result<Vec<TableView>, ReportError> {
    check_same_suite(suites)?;
    let first = &suites[0].record;
    let labels = display_labels(suites);
    let mut views = Vec::new();
    for table in &first.tables {
        // The same table of every suite run (matched by id; a suite file edited between runs
        // may lack it).
        let measured: Vec<(&str, Option<&SuiteTable>)> = suites
            .iter()
            .zip(&labels)
            .map(|(s, label)| (label.as_str(), s.record.tables.iter().find(|x| x.spec.id == table.spec.id)))
            .collect();
        let spec = &table.spec;
        let unit = spec.unit.symbol().to_string();
        let mut notes = spec.notes.clone();
        let (columns, rows) = match spec.layout() {
            Layout::Configurations => {
                let mut columns = vec![label_cell(&spec.row_header)];
                columns.extend(spec.columns.iter().map(|c| label_cell(&c.title)));
                let mut rows = Vec::new();
                for paper in &spec.paper_rows {
                    let mut row = vec![label_cell(&format!("{} (paper)", paper.label))];
                    row.extend(paper.values.iter().map(|v| paper_cell(v)));
                    rows.push(row);
                }
                for (label, m) in &measured {
                    let mut row = vec![label_cell(&format!("{label} (rtlab)"))];
                    for c in 0..spec.columns.len() {
                        let value = m.and_then(|m| m.measured.values.first()).and_then(|r| r.get(c));
                        row.push(measured_cell(value, m.unwrap_or(table)));
                    }
                    rows.push(row);
                }
                (columns, rows)
            }
            Layout::Settings => {
                // A paper column only where the paper printed a value in some row: an empty
                // column says nothing, and the paper may print only some statistics.
                let has_paper: Vec<bool> = (0..spec.columns.len())
                    .map(|c| spec.rows.iter().any(|r| r.paper.get(c).is_some_and(|v| !v.trim().is_empty())))
                    .collect();
                let mut columns = vec![label_cell(&spec.row_header)];
                for (c, column) in spec.columns.iter().enumerate() {
                    if has_paper.get(c).copied().unwrap_or(false) {
                        columns.push(label_cell(&format!("{} (paper)", column.title)));
                    }
                    for (label, _) in &measured {
                        columns.push(label_cell(&format!("{} ({label})", column.title)));
                    }
                }
                let mut rows = Vec::new();
                for (r, row_spec) in spec.rows.iter().enumerate() {
                    let mut row = vec![label_cell(&row_spec.title)];
                    for c in 0..spec.columns.len() {
                        if has_paper.get(c).copied().unwrap_or(false) {
                            row.push(paper_cell(row_spec.paper.get(c).map(String::as_str).unwrap_or("")));
                        }
                        for (_, m) in &measured {
                            let value = m.and_then(|m| m.measured.values.get(r)).and_then(|r| r.get(c));
                            row.push(measured_cell(value, m.unwrap_or(table)));
                        }
                    }
                    rows.push(row);
                }
                (columns, rows)
            }
        };
        let quick = if suites.iter().any(|s| s.record.quick) { ", quick: not the paper's sample counts" } else { "" };
        let labels_said = measured.iter().map(|(l, _)| format!("\"({l})\"")).collect::<Vec<_>>().join(", ");
        let any_paper = rows.iter().flatten().any(|c| c.kind == CellKind::Paper);
        notes.push(match (spec.layout(), any_paper) {
            (Layout::Configurations, _) => format!(
                "Values in {unit}. Rows marked \"(paper)\": as printed ({PUBLISHED}); rows marked \"(rtlab)\": \
                 measured by rtlab{quick}."
            ),
            (Layout::Settings, true) => format!(
                "Values in {unit}. Columns marked \"(paper)\": as printed ({PUBLISHED}); columns marked \
                 {labels_said}: measured by rtlab{quick}."
            ),
            (Layout::Settings, false) => {
                format!("Values in {unit}. Columns marked {labels_said}: measured by rtlab{quick}.")
            }
        });
        for (suite, label) in suites.iter().zip(&labels) {
            let said_label = if suites.len() > 1 { format!(" ({label})") } else { String::new() };
            for line in split_coverage_lines(spec, suite) {
                notes.push(format!("{line}{said_label}."));
            }
        }
        views.push(TableView {
            id: spec.id.clone(),
            title: spec.title.clone(),
            source: spec.source.clone(),
            unit,
            columns,
            rows,
            notes,
        });
    }
    Ok(views)
}

/// How many samples the split covered, for every condition whose split metrics (`timer.irq`,
/// `timer.sched`, ...) the table shows, from its run.json's `split.coverage`: "timer.irq of
/// unloaded from 9,977 of 10,000 samples (not split: no switch-in 23)". The samples the split
/// could not cut are counted here, not dropped silently. Nothing for a condition whose run has
/// no split (its cells say why).
pub fn split_coverage_lines(spec: &TableSpec, suite: &LoadedSuite) -> Vec<String> {
    let scenarios: Vec<(String, Vec<String>)> = suite
        .record
        .conditions
        .iter()
        .zip(&suite.runs)
        .map(|(c, run)| {
            let names = run.as_ref().map(|r| r.scenarios.iter().map(|s| s.name.clone()).collect::<Vec<_>>());
            (c.name.clone(), names.filter(|n| !n.is_empty()).unwrap_or_else(|| vec!["idle".into()]))
        })
        .collect();
    let Ok(cells) = spec.cells(&ConditionNames { conditions: &scenarios }) else { return Vec::new() };
    // (condition, scenario, probe) -> the split metrics shown, in order.
    type Shown = (String, Option<String>, String);
    let mut shown: Vec<(Shown, Vec<String>)> = Vec::new();
    for cell in cells.iter().flatten() {
        let probe = cell.metric.split('.').next().unwrap_or_default().to_string();
        if !part_metrics(&probe).is_some_and(|parts| parts.contains(&cell.metric.as_str())) {
            continue;
        }
        let key = (cell.condition.clone(), cell.scenario.clone(), probe);
        match shown.iter_mut().find(|(k, _)| *k == key) {
            Some((_, metrics)) if !metrics.contains(&cell.metric) => metrics.push(cell.metric.clone()),
            Some(_) => {}
            None => shown.push((key, vec![cell.metric.clone()])),
        }
    }
    let mut lines = Vec::new();
    for ((condition, scenario, probe), metrics) in shown {
        let Some(index) = suite.record.conditions.iter().position(|c| c.name == condition) else { continue };
        let Some(run) = suite.runs.get(index).and_then(Option::as_ref) else { continue };
        let Some(split) = &run.split else { continue };
        let Some(scenario) = scenario.or_else(|| run.scenarios.first().map(|s| s.name.clone())) else { continue };
        let Some(coverage) = split.coverage_text(&scenario, &probe) else { continue };
        let line = format!("{} of {condition} {coverage}", metrics.join(", "));
        lines.push(line);
    }
    lines
}

/// The suites' labels, numbered where several suites share one ("stock #1", "stock #2").
pub fn display_labels(suites: &[LoadedSuite]) -> Vec<String> {
    let labels: Vec<&str> = suites.iter().map(|s| s.record.label.as_str()).collect();
    labels
        .iter()
        .enumerate()
        .map(|(i, l)| {
            if labels.iter().filter(|x| *x == l).count() > 1 {
                format!("{l} #{}", labels[..=i].iter().filter(|x| *x == l).count())
            } else {
                l.to_string()
            }
        })
        .collect()
}

/// A view as a plain [`Table`]: cells not measured become "not measured (N)" with the reason
/// as note N, each reason once.
pub fn plain_table(view: &TableView) -> Table {
    let mut reasons: Vec<String> = Vec::new();
    let mut rows = Vec::new();
    for row in &view.rows {
        let mut out = Vec::new();
        for cell in row {
            match &cell.not_measured {
                Some(reason) => {
                    let n = match reasons.iter().position(|r| r == reason) {
                        Some(i) => i + 1,
                        None => {
                            reasons.push(reason.clone());
                            reasons.len()
                        }
                    };
                    out.push(format!("not measured ({n})"));
                }
                None => out.push(cell.text.clone()),
            }
        }
        rows.push(out);
    }
    let mut notes: Vec<String> =
        reasons.iter().enumerate().map(|(i, r)| format!("({}) not measured: {r}", i + 1)).collect();
    notes.extend(view.notes.iter().cloned());
    Table {
        id: view.id.clone(),
        title: view.title.clone(),
        source: view.source.clone(),
        columns: view.columns.iter().map(|c| c.text.clone()).collect(),
        csv_rows: rows.clone(),
        rows,
        notes,
    }
}

/// One line on the mode: "full: the paper's sample counts", "quick: ...".
fn mode_line(record: &SuiteRecord) -> String {
    if record.quick {
        QUICK_NOTICE.to_string()
    } else if record.long {
        "long: the paper's long-duration variant".into()
    } else {
        "full: the paper's sample counts".into()
    }
}

fn status_word(status: ConditionStatus) -> &'static str {
    match status {
        ConditionStatus::Done => "done",
        ConditionStatus::Incomplete => "incomplete",
        ConditionStatus::Failed => "FAILED",
        ConditionStatus::NotRun => "not run",
    }
}

/// A paper's judgement as the report shows it: what the paper concludes, then per suite
/// label what this machine gave, and (for statements between configurations) the pairs.
pub struct JudgementView {
    pub id: String,
    pub title: String,
    pub source: Option<String>,
    pub paper: String,
    pub reading: Option<String>,
    /// (label, findings, conclusion, met).
    pub per_label: Vec<(String, Vec<String>, String, Option<bool>)>,
    /// `lower-by` between the suite runs compared.
    pub across: Vec<String>,
}

/// The judgements of the first suite's file, with every suite's results.
pub fn judgement_views(suites: &[LoadedSuite]) -> Vec<JudgementView> {
    let labels = display_labels(suites);
    let mut views: Vec<JudgementView> = Vec::new();
    for (s, label) in suites.iter().zip(&labels) {
        for j in &s.record.judgements {
            let view = match views.iter_mut().position(|v| v.id == j.id) {
                Some(i) => &mut views[i],
                None => {
                    views.push(JudgementView {
                        id: j.id.clone(),
                        title: j.title.clone(),
                        source: j.source.clone(),
                        paper: j.paper.clone(),
                        reading: j.reading.clone(),
                        per_label: Vec::new(),
                        across: Vec::new(),
                    });
                    views.last_mut().expect("just pushed")
                }
            };
            view.per_label.push((label.clone(), j.findings.clone(), j.conclusion.clone(), j.met));
        }
    }
    for view in &mut views {
        let lower_by: Vec<(String, Option<i64>)> = suites
            .iter()
            .zip(&labels)
            .filter_map(|(s, label)| {
                let j = s.record.judgements.iter().find(|j| j.id == view.id && j.kind == "lower-by")?;
                Some((label.clone(), crate::judge::lower_by_value(&j.values_ns)))
            })
            .collect();
        if lower_by.len() > 1 {
            let percent = suites[0].record.judgements.iter().find(|j| j.id == view.id).and_then(|j| j.percent);
            let percent = percent.unwrap_or(0.0);
            view.across = crate::judge::lower_by_pairs(percent, &lower_by);
            if view.across.is_empty() {
                view.across.push("No configuration's value is lower than another's.".into());
            }
        }
    }
    views
}

fn met_word(met: Option<bool>) -> &'static str {
    match met {
        Some(true) => "yes",
        Some(false) => "no",
        None => "-",
    }
}

/// The suite's tables and outcome for the terminal: a header, every table, the conditions,
/// the verdict.
pub fn terminal_text(suites: &[LoadedSuite]) -> Result<String, ReportError> {
    let views = table_views(suites)?;
    let first = &suites[0].record;
    let mut out = String::new();
    let _ = writeln!(out, "Suite {}: {}", first.suite.name, first.suite.title);
    if !first.suite.paper_era.is_empty() {
        let _ = writeln!(out, "  paper: {PUBLISHED} ({})", first.suite.paper_era);
    }
    for s in suites {
        let r = &s.record;
        let _ = writeln!(out, "  {}: {} · {}{}", r.label, r.machine, mode_line(r), interrupted_suffix(r));
    }
    for view in &views {
        out.push('\n');
        out.push_str(&text_table(&plain_table(view)));
    }
    let judgements = judgement_views(suites);
    if !judgements.is_empty() {
        out.push_str("\nThe paper's judgement, recomputed for this machine:\n");
    }
    for j in &judgements {
        let source = j.source.as_deref().map(|s| format!(" ({s})")).unwrap_or_default();
        let _ = writeln!(out, "\n  {}{source}", j.title);
        let _ = writeln!(out, "    Paper: {}", j.paper);
        if let Some(reading) = &j.reading {
            let _ = writeln!(out, "    rtlab's reading: {reading}");
        }
        for (label, findings, conclusion, _) in &j.per_label {
            let who = if suites.len() > 1 { format!("{label}: ") } else { String::new() };
            for f in findings {
                let _ = writeln!(out, "    - {who}{f}");
            }
            let _ = writeln!(out, "    => {who}{conclusion}");
        }
        for line in &j.across {
            let _ = writeln!(out, "    => {line}");
        }
    }
    out.push_str("\nConditions:\n");
    for s in suites {
        for c in &s.record.conditions {
            let who = if suites.len() > 1 { format!("{} · ", s.record.label) } else { String::new() };
            let why = c.reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default();
            let _ = writeln!(
                out,
                "  {who}{} ({}): {}{why} — {}",
                c.name,
                c.plan,
                status_word(c.status),
                s.dir.join(&c.directory).display()
            );
        }
    }
    for s in suites {
        if let Some(v) = &s.record.verdict {
            let who = if suites.len() > 1 { format!(" ({})", s.record.label) } else { String::new() };
            let _ = writeln!(out, "\nVerdict{who}: {}", v.summary);
        }
    }
    Ok(out)
}

fn interrupted_suffix(r: &SuiteRecord) -> &'static str {
    if r.interrupted {
        " · INTERRUPTED: only the conditions measured until then"
    } else {
        ""
    }
}

/// The suite report as Markdown.
pub fn markdown(suites: &[LoadedSuite]) -> Result<String, ReportError> {
    let views = table_views(suites)?;
    let first = &suites[0].record;
    let mut out = format!("# Suite {}: {}\n\n", first.suite.name, md(&first.suite.title));
    if suites.iter().any(|s| s.record.quick) {
        let _ = writeln!(out, "> **{QUICK_NOTICE}.**\n");
    }
    if !first.suite.paper.is_empty() {
        let _ = writeln!(out, "Paper: {}\n", md(&first.suite.paper));
    }
    if !first.suite.paper_era.is_empty() {
        let _ = writeln!(out, "Paper's values: {PUBLISHED} ({}).\n", md(&first.suite.paper_era));
    }
    for s in suites {
        let r = &s.record;
        let _ = writeln!(out, "- **{}**: {} · {}{}", md(&r.label), md(&r.machine), mode_line(r), interrupted_suffix(r));
    }
    for view in &views {
        let table = plain_table(view);
        let _ = writeln!(out, "\n## {}\n", md(&table.title));
        if let Some(source) = &table.source {
            let _ = writeln!(out, "*{}; values in {}.*\n", md(source), view.unit);
        }
        let row = |cells: &[String]| format!("| {} |\n", cells.iter().map(|c| md(c)).collect::<Vec<_>>().join(" | "));
        out.push_str(&row(&table.columns));
        let align: Vec<String> =
            (0..table.columns.len()).map(|i| if i == 0 { ":---".into() } else { "---:".into() }).collect();
        out.push_str(&row(&align));
        for (cells, view_row) in table.rows.iter().zip(&view.rows) {
            // This machine's rows in bold, the paper's as printed.
            let measured = view_row.iter().any(|c| c.kind == CellKind::Measured)
                && !view_row.iter().any(|c| c.kind == CellKind::Paper);
            let cells: Vec<String> =
                if measured { cells.iter().map(|c| format!("**{c}**")).collect() } else { cells.clone() };
            out.push_str(&row(&cells));
        }
        for note in &table.notes {
            let _ = writeln!(out, "\n{}", md(note));
        }
    }
    let judgements = judgement_views(suites);
    if !judgements.is_empty() {
        out.push_str("\n## The paper's judgement, recomputed for this machine\n");
    }
    for j in &judgements {
        let source = j.source.as_deref().map(|s| format!(" *({})*", md(s))).unwrap_or_default();
        let _ = writeln!(out, "\n### {}{source}\n\n> {}\n", md(&j.title), md(&j.paper));
        if let Some(reading) = &j.reading {
            let _ = writeln!(out, "rtlab's reading: {}\n", md(reading));
        }
        for (label, findings, conclusion, met) in &j.per_label {
            let who = if suites.len() > 1 { format!("{}: ", md(label)) } else { String::new() };
            for f in findings {
                let _ = writeln!(out, "- {who}{}", md(f));
            }
            let _ = writeln!(out, "\n**{who}{}** (passes the paper's test: {})\n", md(conclusion), met_word(*met));
        }
        for line in &j.across {
            let _ = writeln!(out, "- **{}**", md(line));
        }
    }
    out.push_str("\n## Conditions\n\n");
    for s in suites {
        for c in &s.record.conditions {
            let who = if suites.len() > 1 { format!("{} · ", md(&s.record.label)) } else { String::new() };
            let why = c.reason.as_deref().map(|r| format!(": {}", md(r))).unwrap_or_default();
            let _ = writeln!(
                out,
                "- {who}**{}** ({}; {}): {}{why}",
                md(&c.name),
                md(&c.title),
                md(&c.plan),
                status_word(c.status)
            );
        }
    }
    for s in suites {
        if let Some(v) = &s.record.verdict {
            let _ = writeln!(out, "\n**Verdict ({}):** {}", md(&s.record.label), md(&v.summary));
        }
    }
    Ok(out)
}

/// A figure of a suite: its specification, and the figure or why it could not be drawn.
pub type SuiteFigure = (FigureSpec, Result<Figure, String>);

/// The figures of the suite, drawn from the conditions' runs: one curve per condition (per
/// suite label and condition in a comparison). A figure with no data is a note instead.
pub fn suite_figures(suites: &[LoadedSuite]) -> Result<Vec<SuiteFigure>, ReportError> {
    check_same_suite(suites)?;
    let mut out = Vec::new();
    for spec in &suites[0].record.figures {
        out.push((spec.clone(), suite_figure(suites, spec)?));
    }
    Ok(out)
}

fn suite_figure(suites: &[LoadedSuite], spec: &FigureSpec) -> Result<Result<Figure, String>, ReportError> {
    let metric = spec.metric_name();
    let bins = spec.bins().map_err(|e| ReportError::Usage { what: "suite figure".into(), reason: e.to_string() })?;
    let mut runs = Vec::new();
    let mut missing: Vec<String> = Vec::new();
    let mut overflow = 0u64;
    for s in suites {
        for name in &spec.conditions {
            let shown = if suites.len() > 1 { format!("{} · {name}", s.record.label) } else { name.clone() };
            let Some(run) = s.run_of(name) else {
                missing.push(format!("{shown}: no run"));
                continue;
            };
            let selected = |m: &&rtlab_results::run::Measurement| {
                m.metric == metric && spec.selector.as_ref().is_none_or(|s| s.matches(m))
            };
            if !run.measurements.iter().any(|m| selected(&m)) {
                let gaps = s.record.conditions.iter().find(|c| &c.name == name).map(|c| c.gaps.join("; "));
                missing.push(match gaps.filter(|g| !g.is_empty()) {
                    Some(g) => format!("{shown}: {g}"),
                    None => format!(
                        "{shown}: the run has no {metric} measurements{}",
                        spec.selector.as_ref().map(|s| format!(" at {}", s.describe())).unwrap_or_default()
                    ),
                });
                continue;
            }
            let mut run = figure_run(run, &metric, spec.selector.as_ref(), &shown);
            if let Some((width, count)) = bins {
                overflow += rebin(&mut run, width, count)?;
            }
            runs.push(SourcedRun { source: s.dir.join(name).display().to_string(), run });
        }
    }
    if runs.is_empty() {
        return Ok(Err(format!("Not measured: {}.", join_reasons(&missing))));
    }
    let set = ReportSet { runs, verdict: None };
    let drawn = match spec.kind.as_str() {
        "cumulative" => figures::cumulative_figure(&set, &metric, spec.top_percent)?,
        // The report's own figure of this kind for the metric, every condition in it.
        kind => {
            let id = format!("fig-{kind}-{}", figures::slug(&metric));
            figures::report_figures(&set)?.into_iter().flat_map(|m| m.figures).find(|f| f.id == id)
        }
    };
    let Some(mut figure) = drawn else {
        return Ok(Err("no samples".into()));
    };
    figure.id = spec.id.clone();
    figure.title = spec.title.clone();
    if let Some((width, count)) = bins {
        let _ = write!(
            figure.description,
            " Computed from the samples counted in the paper's {} bins of {} µs (up to {} µs), as the paper reduced \
             its data{}.",
            thousands(count),
            rtlab_report::figures::trim(width as f64 / 1e3),
            rtlab_report::figures::trim((width * count) as f64 / 1e3),
            if overflow > 0 {
                format!("; {} samples beyond the last bin are drawn at its end", thousands(overflow))
            } else {
                String::new()
            }
        );
    }
    if !missing.is_empty() {
        let _ = write!(figure.description, " Not drawn: {}.", join_reasons(&missing));
    }
    Ok(Ok(figure))
}

/// "who: why" items, those with the same reason joined: "unloaded, loaded: why".
fn join_reasons(items: &[String]) -> String {
    let mut grouped: Vec<(Vec<&str>, &str)> = Vec::new();
    for item in items {
        let (who, why) = item.split_once(": ").unwrap_or((item.as_str(), ""));
        match grouped.iter_mut().find(|(_, w)| *w == why) {
            Some((whos, _)) => whos.push(who),
            None => grouped.push((vec![who], why)),
        }
    }
    grouped.iter().map(|(whos, why)| format!("{}: {why}", whos.join(", "))).collect::<Vec<_>>().join("; ")
}

/// The run as one configuration of a figure: named `shown`, holding only `metric`.
fn figure_run(run: &RunResult, metric: &str, selector: Option<&Selector>, shown: &str) -> RunResult {
    let mut run = run.clone();
    run.label = shown.to_string();
    run.measurements.retain(|m| m.metric == metric && selector.is_none_or(|s| s.matches(m)));
    // One scenario per configuration: the metric's (a condition's first).
    if let Some(first) = run.measurements.first().map(|m| m.scenario.clone()) {
        run.scenarios.retain(|s| s.name == first);
        run.measurements.retain(|m| m.scenario == first);
    }
    // A figure of one run names its curve by the scenario: name both as the figure shows it.
    for s in &mut run.scenarios {
        s.name = shown.to_string();
    }
    for m in &mut run.measurements {
        m.scenario = shown.to_string();
    }
    run
}

/// Replaces every histogram of `run` by the paper's data reduction: counts in `count` bins of
/// `width_ns`, each bin's samples at its upper edge (so the curve says "samples <= the bin's
/// end", as a curve from bin counts does). Returns the samples beyond the last bin (recorded
/// at its end).
fn rebin(run: &mut RunResult, width_ns: u64, count: u64) -> Result<u64, ReportError> {
    let end = width_ns.saturating_mul(count);
    let mut overflow = 0;
    for m in &mut run.measurements {
        let h = LatencyHistogram::decode(&m.histogram)?;
        let mut binned = LatencyHistogram::resolving(end.max(2), width_ns)?;
        for bin in fixed_bins(&h, width_ns) {
            if bin.start_ns >= end {
                overflow += bin.count;
                binned.record_n(end as i64, bin.count);
            } else {
                binned.record_n((bin.start_ns + width_ns - 1) as i64, bin.count);
            }
        }
        m.histogram = binned.encode()?;
    }
    Ok(overflow)
}

/// The suite report as a self-contained HTML page. `link_prefix` is prepended to each
/// condition's directory in links ("" when the page is written into the suite directory).
pub fn html(suites: &[LoadedSuite], link_prefixes: &[String]) -> Result<String, ReportError> {
    let views = table_views(suites)?;
    let figures = suite_figures(suites)?;
    let first = &suites[0].record;
    let mut page = String::with_capacity(1 << 20);
    let title = if suites.len() == 1 {
        format!("Suite {} · {}", first.suite.name, first.label)
    } else {
        format!(
            "Suite {} · {}",
            first.suite.name,
            suites.iter().map(|s| s.record.label.as_str()).collect::<Vec<_>>().join(" vs ")
        )
    };
    rtlab_report::html::page_start(&mut page, &title, SUITE_CSS);
    let _ = writeln!(page, "<header>\n<h1>{}</h1>", escape(&first.suite.title));
    let _ = writeln!(page, "<p class=\"subtitle\">rtlab suite <strong>{}</strong></p>", escape(&first.suite.name));
    if suites.iter().any(|s| s.record.quick) {
        let _ = writeln!(
            page,
            "<div class=\"banner quick\"><h2>{}</h2>This report's runs are shorter than the paper's: the maxima and \
             the 99.999 % thresholds rest on far fewer samples, so they are not comparable with the paper's. Run the \
             suite without --quick for the paper's experiment.</div>",
            escape(&capitalised(QUICK_NOTICE))
        );
    }
    for s in suites.iter().filter(|s| s.record.interrupted) {
        let _ = writeln!(
            page,
            "<div class=\"banner danger\"><h2>Interrupted</h2>The suite run {} was stopped: it holds only the \
             conditions measured until then.</div>",
            escape(&s.record.label)
        );
    }
    page.push_str("<table class=\"facts\">\n");
    let fact = |page: &mut String, name: &str, value: &str| {
        let _ = writeln!(page, "<tr><th>{}</th><td>{value}</td></tr>", escape(name));
    };
    if !first.suite.paper.is_empty() {
        fact(&mut page, "Paper", &escape(&first.suite.paper));
    }
    if !first.suite.summary.is_empty() {
        fact(&mut page, "Experiment", &escape(&first.suite.summary));
    }
    for s in suites {
        let r = &s.record;
        let name = if suites.len() == 1 { "This machine".to_string() } else { format!("Machine of {}", r.label) };
        fact(
            &mut page,
            &name,
            &format!(
                "<strong>{}</strong> · {} · {} · {} to {}",
                escape(&r.label),
                escape(&r.machine),
                escape(&mode_line(r)),
                escape(&short_time(&r.start_time)),
                escape(&short_time(&r.end_time))
            ),
        );
    }
    fact(
        &mut page,
        "Published figures",
        &format!(
            "<span class=\"paper-tag\">{}</span>{}",
            escape(PUBLISHED),
            if first.suite.paper_era.is_empty() {
                String::new()
            } else {
                format!(": {}", escape(&first.suite.paper_era))
            }
        ),
    );
    if !first.suite.docs.is_empty() {
        fact(
            &mut page,
            "Set-up and substitutions",
            &format!("{} (in the rtlab repository)", escape(&first.suite.docs)),
        );
    }
    fact(&mut page, "Suite file", &escape(&first.file));
    page.push_str("</table>\n</header>\n");

    for s in suites {
        if let Some(v) = &s.record.verdict {
            verdict_box(&mut page, v, &s.record, suites.len() > 1);
        }
    }

    page.push_str("<h2 id=\"tables\">The paper's tables</h2>\n");
    let _ = writeln!(page, "<p class=\"muted\">{}</p>", tables_intro(suites, &views));
    for view in &views {
        table_html(&mut page, view);
    }

    let judgements = judgement_views(suites);
    if !judgements.is_empty() {
        page.push_str("<h2 id=\"judgement\">The paper's judgement, recomputed for this machine</h2>\n");
    }
    for j in &judgements {
        let source =
            j.source.as_deref().map(|s| format!(" <span class=\"muted\">({})</span>", escape(s))).unwrap_or_default();
        let _ = writeln!(
            page,
            "<section class=\"judgement\" id=\"{}\"><h3>{}{source}</h3>\n<blockquote>{}</blockquote>",
            escape(&j.id),
            escape(&j.title),
            escape(&j.paper)
        );
        if let Some(reading) = &j.reading {
            let _ = writeln!(page, "<p class=\"muted\">rtlab's reading: {}</p>", escape(reading));
        }
        for (label, findings, conclusion, met) in &j.per_label {
            let who = if suites.len() > 1 { format!("<strong>{}</strong>: ", escape(label)) } else { String::new() };
            page.push_str("<ul class=\"notes\">");
            for f in findings {
                let _ = write!(page, "<li>{who}{}</li>", escape(f));
            }
            page.push_str("</ul>\n");
            let class = match met {
                Some(true) => "met",
                Some(false) => "not-met",
                None => "open",
            };
            let _ = writeln!(page, "<p class=\"conclusion {class}\">{who}{}</p>", escape(conclusion));
        }
        if !j.across.is_empty() {
            page.push_str("<ul class=\"notes\">");
            for line in &j.across {
                let _ = write!(page, "<li><strong>{}</strong></li>", escape(line));
            }
            page.push_str("</ul>\n");
        }
        page.push_str("</section>\n");
    }

    if !figures.is_empty() {
        page.push_str("<h2 id=\"figures\">The paper's figures, from this machine's runs</h2>\n");
        for (spec, figure) in &figures {
            match figure {
                Ok(f) => {
                    let source = spec.source.as_deref().map(|s| format!(" ({})", escape(s))).unwrap_or_default();
                    let notes: String = spec.notes.iter().map(|n| format!("<li>{}</li>", escape(n))).collect();
                    let notes = if notes.is_empty() { notes } else { format!("<ul class=\"notes\">{notes}</ul>") };
                    let _ = writeln!(
                        page,
                        "<figure class=\"rtlab-figure\" id=\"{}\"><figcaption><strong>{}</strong>{}{source}{notes}</figcaption>\n{}\n</figure>",
                        escape(&f.id),
                        escape(&f.title),
                        escape(&f.description),
                        f.svg
                    );
                }
                Err(why) => {
                    let _ = writeln!(
                        page,
                        "<div class=\"missing-figure\" id=\"{}\"><strong>{}</strong><p>{}</p></div>",
                        escape(&spec.id),
                        escape(&spec.title),
                        escape(why)
                    );
                }
            }
        }
    }

    page.push_str("<h2 id=\"conditions\">Conditions</h2>\n<div class=\"scroll\"><table>\n<thead><tr>");
    let many = suites.len() > 1;
    if many {
        page.push_str("<th>Label</th>");
    }
    page.push_str("<th>Condition</th><th class=\"l\">What ran</th><th class=\"l\">Status</th><th class=\"l\">Report</th></tr></thead>\n<tbody>\n");
    for (s, prefix) in suites.iter().zip(link_prefixes.iter().chain(std::iter::repeat(&String::new()))) {
        for (c, run) in s.record.conditions.iter().zip(&s.runs) {
            page.push_str("<tr>");
            if many {
                let _ = write!(page, "<td>{}</td>", escape(&s.record.label));
            }
            let why = c.reason.as_deref().map(|r| format!(": {}", escape(r))).unwrap_or_default();
            let gaps = if c.gaps.is_empty() {
                String::new()
            } else {
                format!("<br><span class=\"muted\">not measured: {}</span>", escape(&c.gaps.join("; ")))
            };
            let link = if run.is_some() {
                let href = format!("{prefix}{}/report.html", c.directory);
                format!("<a href=\"{}\">{}</a>", escape(&href), escape(&href))
            } else {
                "-".into()
            };
            let _ = writeln!(
                page,
                "<td><strong>{}</strong><br>{}</td><td class=\"l\">{}</td><td class=\"l\">{}{why}{gaps}</td><td class=\"l\">{link}</td></tr>",
                escape(&c.name),
                escape(&c.title),
                escape(&c.plan),
                status_word(c.status)
            );
        }
    }
    page.push_str("</tbody></table></div>\n");

    let warnings = qualifying_warnings(suites);
    if !warnings.is_empty() {
        page.push_str("<h2 id=\"warnings\">What qualifies these results</h2>\n<ul class=\"notes\">\n");
        for (who, w) in &warnings {
            let _ = writeln!(page, "<li><strong>{}</strong>: {}</li>", escape(who), escape(w));
        }
        page.push_str("</ul>\n");
    }
    let _ = writeln!(
        page,
        "<footer>Written by rtlab {} from suite.json and the conditions' run.json; `rtlab report SUITE_DIR` writes it \
         again.</footer>",
        escape(&first.tool_version)
    );
    page.push_str("</main>\n</body>\n</html>\n");
    Ok(page)
}

/// The warnings of the conditions' runs, each once: a warning every run of a suite carries
/// (the host's: a virtual machine, no isolated CPU) under "All conditions", the others
/// under their condition. Pairs of (whom it concerns, warning).
fn qualifying_warnings(suites: &[LoadedSuite]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let many = suites.len() > 1;
    for s in suites {
        let per_condition: Vec<(&str, Vec<String>)> = s
            .record
            .conditions
            .iter()
            .zip(&s.runs)
            .filter_map(|(c, run)| run.as_ref().map(|r| (c.name.as_str(), run_warnings(r, false, None))))
            .collect();
        let everywhere = |w: &String| per_condition.len() > 1 && per_condition.iter().all(|(_, ws)| ws.contains(w));
        let label = |who: &str| if many { format!("{} · {who}", s.record.label) } else { who.to_string() };
        let mut push = |who: String, w: &String| {
            if !out.iter().any(|(o, x)| *o == who && x == w) {
                out.push((who, w.clone()));
            }
        };
        for (_, ws) in &per_condition {
            for w in ws.iter().filter(|w| everywhere(w)) {
                push(label("All conditions"), w);
            }
        }
        for (name, ws) in &per_condition {
            for w in ws.iter().filter(|w| !everywhere(w)) {
                push(label(name), w);
            }
        }
    }
    out
}

/// The sentence above the tables, true to their layouts: the paper's values are rows (one
/// configuration per row) or columns (one setting per row) or absent, and this machine's
/// rows or columns are "rtlab" or named by the suite labels.
fn tables_intro(suites: &[LoadedSuite], views: &[TableView]) -> String {
    let layouts: Vec<Layout> =
        suites.first().map(|s| s.record.tables.iter().map(|t| t.spec.layout()).collect()).unwrap_or_default();
    let has_paper = |layout: Layout| {
        views
            .iter()
            .zip(&layouts)
            .any(|(v, l)| *l == layout && v.rows.iter().flatten().any(|c| c.kind == CellKind::Paper))
    };
    let labels: Vec<String> =
        display_labels(suites).iter().map(|l| format!("<span class=\"rtlab-tag\">({})</span>", escape(l))).collect();
    let mut parts = Vec::new();
    if layouts.contains(&Layout::Configurations) {
        parts.push(format!(
            "In a table with one configuration per row, the paper's rows are marked <span class=\"paper-tag\">(paper)\
             </span> ({}) and this machine's values are the <span class=\"rtlab-tag\">(rtlab)</span> rows.",
            escape(PUBLISHED)
        ));
    }
    if layouts.contains(&Layout::Settings) {
        let paper = if has_paper(Layout::Settings) {
            format!(
                "the paper's values are the columns marked <span class=\"paper-tag\">(paper)</span> ({}, only where \
                 the paper printed that value) and ",
                escape(PUBLISHED)
            )
        } else {
            String::new()
        };
        parts.push(format!(
            "In a table with one setting per row, {paper}this machine's values are the columns marked {}.",
            labels.join(", ")
        ));
    }
    parts.join(" ")
}

const SUITE_CSS: &str = r#"
.banner.quick { background: #fff1c2; border: 3px solid #c98a00; font-size: 1.05rem; }
.banner.quick h2 { font-size: 1.3rem; color: #6b4700; }
table.facts th { text-align: left; white-space: nowrap; padding-right: 16px; color: var(--muted); font-weight: 600; }
table.facts td { text-align: left; }
table.paper-table td.paper { color: #555; font-style: italic; background: #f4f4f4; }
table.paper-table tr.measured td { background: #e8f1fb; font-weight: 600; border-top: 1px solid #9cc0e6; }
table.paper-table tr.measured td.label::before { content: "▶ "; color: #2a6fb0; }
table.paper-table td.measured { background: #e8f1fb; font-weight: 600; }
table.paper-table td.not-measured { color: #8a5300; font-weight: 400; font-size: 0.82rem; max-width: 16em; text-align: left; }
.paper-tag, .rtlab-tag { display: inline-block; padding: 0 6px; border-radius: 4px; font-size: 0.85rem; }
.paper-tag { background: #eee; color: #555; font-style: italic; }
.rtlab-tag { background: #e8f1fb; color: #1d4f80; font-weight: 600; }
.missing-figure { border: 1px dashed var(--line); padding: 10px 14px; margin: 16px 0; color: var(--muted); }
.missing-figure strong { color: var(--ink); }
section.judgement { border-left: 4px solid var(--line); padding: 2px 14px; margin: 14px 0; }
section.judgement blockquote { margin: 6px 0; font-style: italic; color: #444; }
section.judgement p.conclusion { font-weight: 600; padding: 6px 10px; border-radius: 4px; }
section.judgement p.conclusion.met { background: #e6f4ea; }
section.judgement p.conclusion.not-met { background: #fdecea; }
section.judgement p.conclusion.open { background: #eef2f7; }
"#;

fn verdict_box(page: &mut String, v: &Verdict, record: &SuiteRecord, labelled: bool) {
    let class = rtlab_report::html::verdict_class(v.outcome());
    let who = if labelled { format!(" ({})", escape(&record.label)) } else { String::new() };
    let summary = v.summary.strip_prefix(&format!("{}: ", v.word())).unwrap_or(&v.summary);
    let _ = writeln!(
        page,
        "<div class=\"banner verdict {class}\"><span class=\"word\">{}</span>Requirement{who}: {}<br>{}",
        v.word(),
        escape(&record.requirements.join("; ")),
        escape(summary)
    );
    page.push_str("<ul>\n");
    for c in &v.checks {
        let measured = match (c.measured_ns, c.margin_ns) {
            (Some(m), Some(margin)) => format!(
                "{} µs (margin {} µs), {} samples",
                rtlab_analysis::units::format_us(m),
                rtlab_analysis::units::format_us(margin),
                thousands(c.samples)
            ),
            _ => match &c.undecided {
                Some(why) => format!("undecided: pWCET {}", why.trim_end_matches('.')),
                None => "not measured".into(),
            },
        };
        let _ = writeln!(
            page,
            "<li>{} {} · {}: {}</li>",
            match c.outcome() {
                Outcome::Met => "✔",
                Outcome::NotMet => "✘",
                Outcome::Undecided => "?",
            },
            escape(&c.run_label),
            escape(&c.requirement.text),
            escape(&measured)
        );
    }
    page.push_str("</ul>\n");
    if !v.caveats.is_empty() {
        page.push_str("<p class=\"muted\">Caveats:</p>\n<ul class=\"notes\">\n");
        for c in &v.caveats {
            let _ = writeln!(page, "<li>{}</li>", escape(c));
        }
        page.push_str("</ul>\n");
    }
    page.push_str("</div>\n");
}

fn table_html(page: &mut String, view: &TableView) {
    let _ = writeln!(page, "<h3 id=\"{}\">{}</h3>", escape(&view.id), escape(&view.title));
    if let Some(source) = &view.source {
        let _ = writeln!(page, "<p class=\"source\">{} · values in {}</p>", escape(source), escape(&view.unit));
    }
    page.push_str("<div class=\"scroll\"><table class=\"paper-table\">\n<thead><tr>");
    for c in &view.columns {
        let _ = write!(page, "<th>{}</th>", escape(&c.text));
    }
    page.push_str("</tr></thead>\n<tbody>\n");
    for row in &view.rows {
        let measured_row = !row.iter().any(|c| c.kind == CellKind::Paper);
        page.push_str(if measured_row { "<tr class=\"measured\">" } else { "<tr>" });
        for (i, cell) in row.iter().enumerate() {
            let mut classes = vec![match cell.kind {
                CellKind::Label => "label",
                CellKind::Paper => "paper",
                CellKind::Measured => "measured",
            }];
            let text = match &cell.not_measured {
                Some(reason) => {
                    classes.push("not-measured");
                    format!("not measured: {reason}")
                }
                None => cell.text.clone(),
            };
            if i == 0 {
                classes.push("l");
            }
            let _ = write!(page, "<td class=\"{}\">{}</td>", classes.join(" "), escape(&text));
        }
        page.push_str("</tr>\n");
    }
    page.push_str("</tbody></table></div>\n");
    if !view.notes.is_empty() {
        page.push_str("<ul class=\"notes\">\n");
        for n in &view.notes {
            let _ = writeln!(page, "<li>{}</li>", escape(n));
        }
        page.push_str("</ul>\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view_cell(text: &str, kind: CellKind, not_measured: Option<&str>) -> ViewCell {
        ViewCell { text: text.into(), kind, not_measured: not_measured.map(str::to_string) }
    }

    #[test]
    fn not_measured_cells_become_numbered_notes_each_reason_once() {
        let view = TableView {
            id: "t".into(),
            title: "T".into(),
            source: None,
            unit: "µs".into(),
            columns: vec![label_cell("OS"), label_cell("a"), label_cell("b")],
            rows: vec![
                vec![label_cell("x (paper)"), paper_cell("1"), paper_cell("2")],
                vec![
                    label_cell("y (rtlab)"),
                    view_cell("not measured", CellKind::Measured, Some("why")),
                    view_cell("not measured", CellKind::Measured, Some("why")),
                ],
                vec![
                    label_cell("z (rtlab)"),
                    view_cell("3.0", CellKind::Measured, None),
                    view_cell("not measured", CellKind::Measured, Some("other")),
                ],
            ],
            notes: vec!["A note.".into()],
        };
        let table = plain_table(&view);
        assert_eq!(table.rows[1], vec!["y (rtlab)", "not measured (1)", "not measured (1)"]);
        assert_eq!(table.rows[2], vec!["z (rtlab)", "3.0", "not measured (2)"]);
        assert_eq!(table.notes, vec!["(1) not measured: why", "(2) not measured: other", "A note."]);
    }

    #[test]
    fn reasons_shared_by_several_conditions_are_said_once() {
        let items = ["a: why".to_string(), "b: why".to_string(), "c: other".to_string()];
        assert_eq!(join_reasons(&items), "a, b: why; c: other");
    }
}
