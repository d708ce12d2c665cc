//! The tables of a report, in the papers' shapes, as data: every format (terminal, Markdown,
//! CSV, HTML) renders the same [`Table`]s.
//!
//! Statistics are of all CPUs together (merged histograms, exact moments: [`combine`]).
//! Where each table comes from is in docs/reports.md.

use crate::digest::{combine, Combined};
use crate::host::{preemption_name, yes};
use crate::text::{format_amount, format_rate, metric_title, policy_name, top_rates};
use rtlab_analysis::censored::LOWER_BOUND_SIGN;
use rtlab_analysis::compare::{bootstrap_quantile, difference, Change, QuantileReplicates, CONFIDENCE, REPLICATES};
use rtlab_analysis::exceedance::format_interval;
use rtlab_analysis::units::{format_period, format_us, format_us_f, thousands};
use rtlab_analysis::{fullest_bin, LatencyHistogram, Summary};
use rtlab_results::run::Measurement;
use rtlab_results::set::{Configuration, ReportSet};
use rtlab_results::verdict::{Check, Outcome, Verdict};
use serde::Serialize;
use std::fmt::Write;

pub mod noise;
pub mod probes;
pub mod split;
pub mod tail;
pub mod taskset;

/// One table: a header row and rows of cells, already formatted for people (µs with one
/// decimal, counts with thousands separators); `csv_rows` keeps raw numbers for spreadsheets.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Table {
    /// Stable identifier, used for anchors and CSV file names: "latency-percentiles".
    pub id: String,
    pub title: String,
    /// Where the shape comes from: "Akamina et al., Tables 4 and 6"; None for rtlab's own.
    pub source: Option<String>,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// The same rows with unformatted values (ns as integers, no separators) for CSV.
    pub csv_rows: Vec<Vec<String>>,
    /// Sentences under the table (how to read it, caveats).
    pub notes: Vec<String>,
}

/// Pairs of (interrupt latency, activation latency) metrics measured from the same event:
/// Akamina's t1 (expiry to the interrupt handler, `timer.irq` of `--split`) and t2 (expiry
/// to the task running, the whole `timer.latency`). Table 5 is made for a configuration that
/// has both.
pub const LATENCY_PAIRS: [(&str, &str); 2] = [("timer.irq", "timer.latency"), ("net.delivery", "net.activation")];

/// Akamina's Table 5 bins: "the range of single measurement bin (0.5 µs for the interrupt
/// latency and 2 µs for the preemption latency)", holding the majority (97 %) of samples.
pub const TABLE_5_BIN_NS: (u64, u64) = (500, 2_000);

/// Every table of a report of `set`, in reading order: the verdict, per metric the
/// percentiles and "is B better than A?", the papers' tables, then loads, system activity
/// and environment.
pub fn report_tables(set: &ReportSet) -> Result<Vec<Table>, crate::ReportError> {
    let columns = gather(set)?;
    let metrics = metric_names(&columns);
    let mut tables = Vec::new();
    if let Some(v) = set.effective_verdict() {
        tables.push(verdict_table(&v));
    }
    for metric in &metrics {
        tables.push(percentile_table(metric, &columns));
    }
    for metric in &metrics {
        tables.extend(comparison_table(metric, &columns));
    }
    for metric in &metrics {
        tables.extend(extremes_table(metric, &columns));
    }
    if !metrics.is_empty() {
        tables.push(moments_table(&metrics, &columns));
    }
    for (interrupt, activation) in LATENCY_PAIRS {
        tables.extend(range_table(interrupt, activation, &columns));
    }
    tables.extend(probes::report_tables(&columns)?);
    tables.extend(tail::report_tables(set)?);
    tables.extend(taskset::report_tables(set));
    tables.extend(split::report_tables(set));
    tables.extend(loads_table(&columns));
    tables.extend(activity_table(&columns));
    tables.push(environment_table(set));
    Ok(tables)
}

/// A configuration with each of its metrics combined over CPUs.
struct Column<'a> {
    config: Configuration<'a>,
    metrics: Vec<(String, Combined)>,
}

impl Column<'_> {
    fn metric(&self, name: &str) -> Option<&Combined> {
        self.metrics.iter().find(|(m, _)| m == name).map(|(_, c)| c)
    }

    fn summary(&self, metric: &str) -> Option<&Summary> {
        self.metric(metric).and_then(|c| c.row.summary.as_ref())
    }

    fn loaded(&self) -> bool {
        self.config.scenario_info().is_some_and(|s| s.is_loaded())
    }
}

fn gather(set: &ReportSet) -> Result<Vec<Column<'_>>, crate::ReportError> {
    let mut columns = Vec::new();
    for config in set.configurations() {
        let mut metrics = Vec::new();
        for metric in config.run.metrics() {
            let measurements: Vec<&Measurement> = config.run.measurements_of(config.scenario, metric).collect();
            if !measurements.is_empty() {
                metrics.push((metric.to_string(), combine(&measurements)?));
            }
        }
        columns.push(Column { config, metrics });
    }
    Ok(columns)
}

fn metric_names(columns: &[Column]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for (name, _) in columns.iter().flat_map(|c| &c.metrics) {
        if !names.contains(name) {
            names.push(name.clone());
        }
    }
    names
}

/// A cell as people read it and as a spreadsheet takes it.
struct Cell {
    shown: String,
    raw: String,
}

impl Cell {
    fn text(text: impl Into<String>) -> Cell {
        let text = text.into();
        Cell { shown: text.clone(), raw: text }
    }

    fn none() -> Cell {
        Cell { shown: "-".into(), raw: String::new() }
    }

    fn us(ns: i64) -> Cell {
        Cell { shown: format_us(ns), raw: ns.to_string() }
    }

    fn us_f(ns: f64) -> Cell {
        Cell { shown: format_us_f(ns), raw: format!("{ns:.0}") }
    }

    /// A summary's figure ("p99", "mean", ...), "≥" before a lower bound (censored data) in
    /// both the shown and the raw value.
    fn figure(s: &Summary, name: &str) -> Cell {
        let Some(ns) = s.figure_ns(name) else { return Cell::none() };
        let raw = format!("{ns:.0}");
        let raw = if s.is_lower_bound(name) { format!("{LOWER_BOUND_SIGN}{raw}") } else { raw };
        Cell { shown: s.format_us(name), raw }
    }

    /// A difference: "+1.2" / "-0.4" / "0.0".
    fn signed_us(ns: i64) -> Cell {
        let shown = format_us(ns);
        let shown = match shown.trim_start_matches('-') {
            "0.0" => "0.0".to_string(),
            _ if ns > 0 => format!("+{shown}"),
            _ => shown,
        };
        Cell { shown, raw: ns.to_string() }
    }

    fn count(n: u64) -> Cell {
        Cell { shown: thousands(n), raw: n.to_string() }
    }

    /// A share of samples: "97.3 %" for people, the fraction for a spreadsheet.
    fn share(fraction: f64) -> Cell {
        Cell { shown: format!("{:.1} %", fraction * 100.0), raw: format!("{fraction:.6}") }
    }

    fn or_none<T>(value: Option<T>, cell: impl FnOnce(T) -> Cell) -> Cell {
        value.map_or_else(Cell::none, cell)
    }
}

fn new_table(id: &str, title: &str, source: Option<&str>, columns: Vec<String>) -> Table {
    Table {
        id: id.to_string(),
        title: title.to_string(),
        source: source.map(str::to_string),
        columns,
        rows: Vec::new(),
        csv_rows: Vec::new(),
        notes: Vec::new(),
    }
}

fn push_row(table: &mut Table, cells: Vec<Cell>) {
    let (shown, raw): (Vec<String>, Vec<String>) = cells.into_iter().map(|c| (c.shown, c.raw)).unzip();
    table.rows.push(shown);
    table.csv_rows.push(raw);
}

/// A header row from its titles.
fn headers(names: &[&str]) -> Vec<String> {
    names.iter().map(|c| c.to_string()).collect()
}

fn columns_of(first: &str, rest: impl IntoIterator<Item = String>) -> Vec<String> {
    std::iter::once(first.to_string()).chain(rest).collect()
}

fn title_of(metric: &str) -> String {
    let title = metric_title(metric);
    if title == metric {
        metric.to_string()
    } else {
        format!("{title} ({metric})")
    }
}

/// Samples needed for the nearest-rank quantile `q` to rest on 10 samples above it.
fn support_needed(q: f64) -> u64 {
    rtlab_analysis::exceedance::samples_for_support(q)
}

/// (h) The verdict's checks.
fn verdict_table(verdict: &Verdict) -> Table {
    let columns = [
        "requirement",
        "configuration",
        "measured (µs)",
        "bound (µs)",
        "margin (µs)",
        "met",
        "samples",
        "duration (s)",
        "samples ≥ bound",
        "one ≥ bound every",
        "notes",
    ];
    let mut table =
        new_table("verdict-checks", &format!("Requirement checks: {}", verdict.word()), None, headers(&columns));
    let many_runs = verdict.checks.iter().any(|c| verdict.checks.first().is_some_and(|f| f.run_label != c.run_label));
    for c in &verdict.checks {
        let configuration = if many_runs { format!("{} · {}", c.run_label, c.scenario) } else { c.scenario.clone() };
        push_row(
            &mut table,
            vec![
                Cell::text(&c.requirement.text),
                Cell::text(configuration),
                Cell::or_none(c.measured_ns, |ns| {
                    let cell = Cell::us(ns);
                    if c.lower_bound {
                        // Beyond the source's histogram (censored data): at least this.
                        Cell {
                            shown: format!("{LOWER_BOUND_SIGN} {}", cell.shown),
                            raw: format!("{LOWER_BOUND_SIGN}{}", cell.raw),
                        }
                    } else {
                        cell
                    }
                }),
                Cell::us(c.requirement.bound_ns),
                Cell::or_none(c.margin_ns, Cell::signed_us),
                Cell::text(match c.outcome() {
                    Outcome::Met => "yes",
                    Outcome::NotMet => "NO",
                    Outcome::Undecided => "undecided",
                }),
                Cell::count(c.samples),
                Cell { shown: format!("{:.1}", c.duration_s), raw: c.duration_s.to_string() },
                Cell::count(c.samples_above_bound),
                Cell::or_none(c.exceedance_interval_s, |s| Cell { shown: format_interval(s), raw: s.to_string() }),
                Cell::text(verdict_notes(c).join("; ")),
            ],
        );
    }
    table.notes.extend(verdict.caveats.iter().map(|c| format!("Caveat: {c}.")));
    table
}

/// A check's notes, after why it is undecided when it is ("pWCET: not defensible from this
/// run — …").
fn verdict_notes(c: &Check) -> Vec<String> {
    let mut notes: Vec<String> = c
        .undecided
        .iter()
        .map(|why| {
            let what = if c.requirement.needs_tail_analysis() { "pWCET: " } else { "" };
            format!("{what}{}", why.trim_end_matches('.'))
        })
        .collect();
    notes.extend(c.notes.iter().cloned());
    notes
}

/// The rows of (a): label and how to read it from a combined metric.
const PERCENTILE_ROWS: [&str; 13] =
    ["samples", "min", "mean", "stddev", "p50", "p90", "p99", "p99.9", "p99.99", "p99.999", "max", "overruns", "lost"];

fn percentile_cell(all: &Combined, statistic: &str) -> Cell {
    let row = &all.row;
    match statistic {
        "samples" => return Cell::count(row.count),
        "overruns" => return Cell::count(row.overruns),
        "lost" => return Cell::count(row.lost),
        _ => {}
    }
    let Some(s) = &row.summary else { return Cell::none() };
    Cell::figure(s, statistic)
}

/// (a) rtlab's own: every statistic of one metric, one column per configuration.
fn percentile_table(metric: &str, columns: &[Column]) -> Table {
    let mut table = new_table(
        &format!("percentiles-{metric}"),
        &format!("{}, all CPUs together (µs)", title_of(metric)),
        None,
        columns_of("statistic", columns.iter().map(|c| c.config.name.clone())),
    );
    for statistic in PERCENTILE_ROWS {
        let mut cells = vec![Cell::text(statistic)];
        cells.extend(
            columns.iter().map(|c| c.metric(metric).map_or_else(Cell::none, |m| percentile_cell(m, statistic))),
        );
        push_row(&mut table, cells);
    }
    table.notes.push(
        "Min, max, mean and standard deviation are exact; percentiles come from the merged histograms, within 0.1 %."
            .into(),
    );
    let fewest = columns.iter().filter_map(|c| c.metric(metric)).map(|m| m.row.count).min().unwrap_or(0);
    for (name, q) in [("p99.99", 0.9999), ("p99.999", 0.99999)] {
        if fewest > 0 && fewest < support_needed(q) {
            table.notes.push(format!(
                "Where there are fewer than {} samples, the {name} rests on fewer than 10 samples above it: it is close to the max.",
                thousands(support_needed(q))
            ));
        }
    }
    push_split_coverage(&mut table, metric, columns);
    table
}

/// A table of a split part metric (`timer.irq`, ...) says how many samples the split covered
/// ([`crate::split::coverage_sentences`]).
fn push_split_coverage(table: &mut Table, metric: &str, columns: &[Column]) {
    let configurations: Vec<Configuration> = columns.iter().map(|c| c.config.clone()).collect();
    table.notes.extend(crate::split::coverage_sentences(&configurations, metric));
}

/// Quantiles of the B-vs-A table.
const COMPARED: [(&str, f64); 2] = [("median", 0.5), ("p99.9", 0.999)];

/// "Is B better than A?": every configuration after the first against the first.
fn comparison_table(metric: &str, columns: &[Column]) -> Option<Table> {
    let with: Vec<(usize, &Column, &LatencyHistogram)> = columns
        .iter()
        .enumerate()
        .filter_map(|(i, c)| c.metric(metric).and_then(|m| m.histogram.as_ref()).map(|h| (i, c, h)))
        .filter(|(_, _, h)| h.count() > 0)
        .collect();
    let ((base_index, base, base_histogram), others) = with.split_first()?;
    if others.is_empty() {
        return None;
    }
    let replicates = |index: usize, histogram: &LatencyHistogram, q: f64| {
        // One seed per configuration and quantile: the same inputs give the same report.
        bootstrap_quantile(histogram, q, REPLICATES, rtlab_analysis::compare::seed_for(index, q))
    };
    let baseline: Vec<Option<QuantileReplicates>> =
        COMPARED.iter().map(|(_, q)| replicates(*base_index, base_histogram, *q)).collect();
    let mut table_columns = vec!["B".to_string()];
    for (name, _) in COMPARED {
        table_columns.extend([
            format!("Δ {name} (µs)"),
            format!("{name} CI low"),
            format!("{name} CI high"),
            format!("{name}: B vs A"),
        ]);
    }
    let mut table = new_table(
        &format!("b-vs-a-{metric}"),
        &format!("Is B better than A? {}, each against A = {}", title_of(metric), base.config.name),
        None,
        table_columns,
    );
    let mut censored = false;
    for (index, column, histogram) in others {
        let mut cells = vec![Cell::text(&column.config.name)];
        for ((name, q), a) in COMPARED.iter().zip(&baseline) {
            // A quantile beyond a source's histogram is a lower bound: no difference to quote.
            let figure = if *name == "median" { "p50" } else { name };
            let clipped = |c: &Column| c.summary(metric).is_some_and(|s| s.is_lower_bound(figure));
            if clipped(base) || clipped(column) {
                cells.extend([Cell::none(), Cell::none(), Cell::none(), Cell::text("censored")]);
                censored = true;
                continue;
            }
            let d = a.as_ref().zip(replicates(*index, histogram, *q)).and_then(|(a, b)| difference(a, &b, CONFIDENCE));
            match d {
                Some(d) => cells.extend([
                    Cell::signed_us(d.difference_ns),
                    Cell::signed_us(d.low_ns),
                    Cell::signed_us(d.high_ns),
                    Cell::text(match d.change() {
                        Change::Lower => "better",
                        Change::Higher => "worse",
                        Change::WithinNoise => "within noise",
                    }),
                ]),
                None => cells.extend((0..4).map(|_| Cell::none())),
            }
        }
        push_row(&mut table, cells);
    }
    if censored {
        table.notes.push(format!(
            "censored: the quantile lies beyond a source's histogram in A or B (a lower bound, shown {LOWER_BOUND_SIGN}): \
             their difference is unknown."
        ));
    }
    table.notes.push(format!(
        "Δ = B − A (negative: B is lower, i.e. better). CI: {:.0} % confidence interval from a Poisson bootstrap over the histogram buckets ({REPLICATES} replicates, fixed seed); \"within noise\" when it contains 0.",
        CONFIDENCE * 100.0
    ));
    table.notes.push(
        "Samples are autocorrelated in time (latency spikes come in bursts), so the interval is optimistic, most of all for the p99.9.".into(),
    );
    push_split_coverage(&mut table, metric, columns);
    Some(table)
}

fn max_and_threshold(column: Option<&Column>, metric: &str) -> [Cell; 2] {
    match column.and_then(|c| c.summary(metric)) {
        Some(s) => [Cell::figure(s, "max"), Cell::figure(s, "p99.999")],
        None => [Cell::none(), Cell::none()],
    }
}

/// (b) Akamina Tables 4 and 6: max and 99.999 % threshold per configuration, unloaded and
/// loaded side by side (a run's unloaded scenario beside each of its loaded ones).
fn extremes_table(metric: &str, columns: &[Column]) -> Option<Table> {
    let with: Vec<&Column> = columns.iter().filter(|c| c.summary(metric).is_some()).collect();
    if with.is_empty() {
        return None;
    }
    let mut table = new_table(
        &format!("max-p99999-{metric}"),
        &format!("{}: maximum and 99.999 % threshold, unloaded and loaded (µs)", title_of(metric)),
        Some("Akamina et al., Tables 4 and 6"),
        headers(&["configuration", "load", "unloaded max", "unloaded 99.999 %", "loaded max", "loaded 99.999 %"]),
    );
    let mut runs: Vec<usize> = with.iter().map(|c| c.config.run_index).collect();
    runs.dedup();
    for run_index in runs {
        let of_run: Vec<&Column> = with.iter().copied().filter(|c| c.config.run_index == run_index).collect();
        let unloaded: Vec<&Column> = of_run.iter().copied().filter(|c| !c.loaded()).collect();
        let loaded: Vec<&Column> = of_run.iter().copied().filter(|c| c.loaded()).collect();
        let label = &of_run[0].config.run.label;
        let mut row = |load: &str, u: Option<&Column>, l: Option<&Column>| {
            let mut cells = vec![Cell::text(label), Cell::text(load)];
            cells.extend(max_and_threshold(u, metric));
            cells.extend(max_and_threshold(l, metric));
            push_row(&mut table, cells);
        };
        match (unloaded.first(), loaded.is_empty()) {
            (Some(u), false) => {
                for l in &loaded {
                    row(l.config.scenario, Some(u), Some(l));
                }
                for extra in &unloaded[1..] {
                    row(extra.config.scenario, Some(extra), None);
                }
            }
            _ => {
                for c in &of_run {
                    if c.loaded() {
                        row(c.config.scenario, None, Some(c));
                    } else {
                        row(c.config.scenario, Some(c), None);
                    }
                }
            }
        }
    }
    table.notes.push(
        "One sample in 100,000 exceeds the 99.999 % threshold: at Akamina's 100 Hz control loop, once every 17 minutes."
            .into(),
    );
    let thin: Vec<&str> = with
        .iter()
        .filter(|c| c.metric(metric).is_some_and(|m| m.row.count < support_needed(0.99999)))
        .map(|c| c.config.name.as_str())
        .collect();
    if !thin.is_empty() {
        table.notes.push(format!(
            "With fewer than {} samples ({}), the 99.999 % threshold rests on fewer than 10 samples above it: it is close to the max.",
            thousands(support_needed(0.99999)),
            thin.join(", ")
        ));
    }
    push_split_coverage(&mut table, metric, columns);
    Some(table)
}

/// (c) Regnier Table 1: mean, SD, min and max per metric, load and configuration.
fn moments_table(metrics: &[String], columns: &[Column]) -> Table {
    let mut table = new_table(
        "mean-sd-min-max",
        "Mean, standard deviation, minimum and maximum per metric, load and configuration (µs)",
        Some("Regnier et al., Table 1"),
        headers(&["metric", "load", "configuration", "kernel", "preemption", "samples", "mean", "SD", "min", "max"]),
    );
    for metric in metrics {
        for c in columns {
            let Some(all) = c.metric(metric) else { continue };
            let host = &c.config.run.host;
            let mut cells = vec![
                Cell::text(metric),
                Cell::text(c.config.scenario),
                Cell::text(&c.config.run.label),
                Cell::text(&host.kernel_release),
                Cell::text(preemption_name(host)),
                Cell::count(all.row.count),
            ];
            match &all.row.summary {
                Some(s) => cells.extend(["mean", "stddev", "min", "max"].map(|name| Cell::figure(s, name))),
                None => cells.extend((0..4).map(|_| Cell::none())),
            }
            push_row(&mut table, cells);
        }
    }
    for metric in metrics {
        push_split_coverage(&mut table, metric, columns);
    }
    table
}

/// (d) Akamina Table 5, computed the paper's way: the single bin (0.5 µs for interrupt
/// latency, 2 µs for activation latency) holding the most samples, the share it holds, and
/// the context switch range as the difference of the two bins.
fn range_table(interrupt: &str, activation: &str, columns: &[Column]) -> Option<Table> {
    let (irq_width, act_width) = TABLE_5_BIN_NS;
    let mut table = new_table(
        &format!("range-97-{interrupt}-{activation}"),
        &format!(
            "Fullest bin of {interrupt} ({} µs bins) and {activation} ({} µs bins), and their difference, the context switch (µs)",
            format_us(irq_width as i64),
            format_us(act_width as i64)
        ),
        Some("Akamina et al., Table 5"),
        headers(&[
            "configuration",
            "interrupt latency from",
            "to",
            "share",
            "activation latency from",
            "to",
            "share",
            "context switch from",
            "to",
        ]),
    );
    for c in columns {
        let (Some(irq), Some(act)) = (c.metric(interrupt), c.metric(activation)) else { continue };
        let (Some(irq_hist), Some(act_hist)) = (irq.histogram.as_ref(), act.histogram.as_ref()) else { continue };
        let (Some(irq_bin), Some(act_bin)) = (fullest_bin(irq_hist, irq_width), fullest_bin(act_hist, act_width))
        else {
            continue;
        };
        let (irq_low, irq_high) = (irq_bin.from_ns as i64, irq_bin.to_ns as i64);
        let (act_low, act_high) = (act_bin.from_ns as i64, act_bin.to_ns as i64);
        push_row(
            &mut table,
            vec![
                Cell::text(&c.config.name),
                Cell::us(irq_low),
                Cell::us(irq_high),
                Cell::share(irq_bin.share(irq_hist.count())),
                Cell::us(act_low),
                Cell::us(act_high),
                Cell::share(act_bin.share(act_hist.count())),
                Cell::us(act_low - irq_high),
                Cell::us(act_high - irq_low),
            ],
        );
    }
    if table.rows.is_empty() {
        return None;
    }
    table.notes.push(format!(
        "As the paper counted: every sample in fixed bins ({} µs for {interrupt}, the interrupt latency t1; {} µs for {activation}, the activation latency t2; edges at multiples of the width), and the bin that holds the most samples, with its share (the paper's held 97 %). The context switch range is the paper's difference of the two bins: from the low edge of t2's less the high edge of t1's to the high edge of t2's less the low edge of t1's.",
        format_us(irq_width as i64),
        format_us(act_width as i64)
    ));
    push_split_coverage(&mut table, interrupt, columns);
    Some(table)
}

/// (e) What each load achieved, per configuration.
fn loads_table(columns: &[Column]) -> Option<Table> {
    let mut table = new_table(
        "loads",
        "Loads achieved",
        None,
        headers(&["configuration", "load", "figure", "value", "unit", "CPU-seconds", "died early"]),
    );
    for c in columns {
        let Some(scenario) = c.config.scenario_info() else { continue };
        for load in &scenario.loads {
            let cpu = Cell::or_none(load.cpu_seconds, |s| Cell { shown: format!("{s:.1}"), raw: s.to_string() });
            let died = Cell::text(load.died_early.clone().unwrap_or_default());
            let mut row = |figure: Cell, value: Cell, unit: Cell| {
                let cpu = Cell { shown: cpu.shown.clone(), raw: cpu.raw.clone() };
                let died = Cell { shown: died.shown.clone(), raw: died.raw.clone() };
                push_row(
                    &mut table,
                    vec![Cell::text(&c.config.name), Cell::text(&load.name), figure, value, unit, cpu, died],
                );
            };
            if load.achieved.is_empty() {
                row(Cell::none(), Cell::none(), Cell::none());
            }
            for figure in &load.achieved {
                row(
                    Cell::text(&figure.name),
                    Cell { shown: format_amount(figure.value), raw: figure.value.to_string() },
                    Cell::text(&figure.unit),
                );
            }
        }
        if let Some(why) = &scenario.load_failure {
            table.notes.push(format!("{}: not measured under its full load: {why}.", c.config.name));
        }
    }
    (!table.rows.is_empty()).then_some(table)
}

/// (f) System activity per configuration: evidence that a load was there.
fn activity_table(columns: &[Column]) -> Option<Table> {
    let with: Vec<(&Column, &rtlab_results::activity::Activity)> = columns
        .iter()
        .filter_map(|c| c.config.scenario_info().and_then(|s| s.activity.as_ref()).map(|a| (c, a)))
        .collect();
    if with.is_empty() {
        return None;
    }
    let mut table = new_table(
        "activity",
        "System activity while measuring",
        None,
        columns_of("", with.iter().map(|(c, _)| c.config.name.clone())),
    );
    let rates = |rates: &[rtlab_results::activity::IrqRate], prefix: bool| Cell {
        shown: if rates.is_empty() { "none".into() } else { top_rates(rates, prefix) },
        raw: rates.iter().take(3).map(|r| format!("{}={}", r.irq, r.per_s)).collect::<Vec<_>>().join(";"),
    };
    let rate = |per_s: f64| Cell { shown: format_rate(per_s), raw: per_s.to_string() };
    let share = |shares: Vec<f64>| Cell {
        shown: shares.iter().map(|s| format!("{:.0} %", s * 100.0)).collect::<Vec<_>>().join(" / "),
        raw: shares.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(";"),
    };
    type RowOf<'r> = Box<dyn Fn(&rtlab_results::activity::Activity) -> Cell + 'r>;
    let rows: Vec<(&str, RowOf)> = vec![
        ("interrupts/s, all lines", Box::new(|a| rate(a.interrupts_per_s.iter().map(|r| r.per_s).sum()))),
        ("busiest interrupt lines", Box::new(|a| rates(&a.interrupts_per_s, true))),
        ("busiest softirqs", Box::new(|a| rates(&a.softirqs_per_s, false))),
        ("context switches/s", Box::new(|a| rate(a.context_switches_per_s))),
        ("CPU busy", Box::new(|a| share(a.cpus.iter().map(|c| c.busy).collect()))),
        ("steal, most of any CPU", Box::new(|a| share(vec![a.cpus.iter().map(|c| c.steal).fold(0.0, f64::max)]))),
    ];
    for (label, cell) in rows {
        let mut cells = vec![Cell::text(label)];
        cells.extend(with.iter().map(|(_, a)| cell(a)));
        push_row(&mut table, cells);
    }
    Some(table)
}

/// (g) The environment of each run: host, real-time status, warnings.
fn environment_table(set: &ReportSet) -> Table {
    let mut names: Vec<String> = set.runs.iter().map(|r| r.run.label.clone()).collect();
    for i in 0..names.len() {
        if names.iter().filter(|n| **n == names[i]).count() > 1 {
            names[i] = format!("{} #{}", names[i], i + 1);
        }
    }
    let mut table = new_table("environment", "Environment", None, columns_of("", names));
    type RowOf = fn(&rtlab_results::run::RunResult, &str) -> String;
    let rows: [(&str, RowOf); 14] = [
        ("result", |_, source| source.to_string()),
        ("kernel", |r, _| r.host.kernel_release.clone()),
        ("preemption", |r, _| preemption_name(&r.host)),
        ("virtualization", |r, _| match (&r.host.virtualization.guest, &r.host.virtualization.hypervisor) {
            (true, Some(h)) => format!("guest of {h}"),
            (true, None) => "guest of an unknown hypervisor".into(),
            (false, _) => "none detected".into(),
        }),
        ("CPU", |r, _| format!("{} × {}", r.host.online_cpus.len(), r.host.cpu_model)),
        ("measured CPUs", |r, _| list(&r.experiment.cpus)),
        (
            "isolated CPUs",
            |r, _| if r.host.isolated_cpus.is_empty() { "none".into() } else { list(&r.host.isolated_cpus) },
        ),
        ("interval", |r, _| format_period(r.experiment.interval_ns as i64)),
        ("scheduling", |r, _| {
            format!("{}, memory {}locked", policy_name(r), if r.realtime.memory_locked { "" } else { "not " })
        }),
        ("real-time results", |r, _| {
            let notes = r.realtime.notes.join(" ");
            if notes.is_empty() {
                yes(r.realtime.real_time_results).to_string()
            } else {
                format!("{}: {notes}", yes(r.realtime.real_time_results))
            }
        }),
        ("warnings", |r, _| {
            if r.warnings.is_empty() {
                "none".into()
            } else {
                r.warnings.iter().map(|w| format!("{}: {}", w.code, w.message)).collect::<Vec<_>>().join("; ")
            }
        }),
        ("simulated clock", |r, _| yes(r.simulated).into()),
        ("interrupted", |r, _| yes(r.interrupted).into()),
        ("started", |r, _| r.start_time.clone()),
    ];
    for (label, value) in rows {
        let mut cells = vec![Cell::text(label)];
        cells.extend(set.runs.iter().map(|r| Cell::text(value(&r.run, &r.source))));
        push_row(&mut table, cells);
    }
    let mut cells = vec![Cell::text("sampling time (s)")];
    cells.extend(
        set.runs.iter().map(|r| Cell { shown: format!("{:.1}", r.run.duration_s), raw: r.run.duration_s.to_string() }),
    );
    push_row(&mut table, cells);
    table
}

fn list(cpus: &[usize]) -> String {
    cpus.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(",")
}

/// A [`Table`] as aligned text: the title (and its source), the header, the rows (the first
/// column left-aligned, the others right-aligned), then the notes.
pub fn text_table(table: &Table) -> String {
    // A long text cell (a warning) would push every other column off the screen: cut it;
    // the full text is printed under "Warnings".
    const MAX_CELL: usize = 40;
    let cut = |cell: &String| cut_cell(cell, MAX_CELL);
    let mut widths: Vec<usize> = table.columns.iter().map(|c| cut(c).chars().count()).collect();
    for row in &table.rows {
        for (i, cell) in row.iter().enumerate() {
            let n = cut(cell).chars().count();
            match widths.get_mut(i) {
                Some(w) => *w = (*w).max(n),
                None => widths.push(n),
            }
        }
    }
    let line = |cells: &[String]| {
        let mut text = String::from(" ");
        for (i, cell) in cells.iter().map(cut).enumerate() {
            let pad = " ".repeat(widths[i].saturating_sub(cell.chars().count()));
            if i == 0 {
                let _ = write!(text, " {cell}{pad}");
            } else {
                let _ = write!(text, "  {pad}{cell}");
            }
        }
        text.trim_end().to_string() + "\n"
    };
    let mut out = table.title.clone();
    if let Some(source) = &table.source {
        let _ = write!(out, " (after {source})");
    }
    out.push('\n');
    out.push_str(&line(&table.columns));
    for row in &table.rows {
        out.push_str(&line(row));
    }
    for note in &table.notes {
        let _ = writeln!(out, "  {note}");
    }
    out
}

/// `cell` in at most `max` characters: cut with "…", keeping a short closing "(...)" suffix
/// whole, since it says whose value a column holds ("(paper)", "(stock)").
pub(crate) fn cut_cell(cell: &str, max: usize) -> String {
    if cell.chars().count() <= max {
        return cell.to_string();
    }
    let suffix = cell
        .strip_suffix(')')
        .and_then(|c| c.rfind(" ("))
        .and_then(|at| cell.get(at..))
        .filter(|s| s.chars().count() <= max / 2);
    match suffix {
        Some(suffix) => {
            let head = cell.chars().take(max.saturating_sub(suffix.chars().count() + 1)).collect::<String>();
            format!("{}…{suffix}", head.trim_end())
        }
        None => cell.chars().take(max.saturating_sub(1)).collect::<String>() + "…",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtlab_analysis::Moments;
    use rtlab_results::run::RunResult;
    use rtlab_results::set::SourcedRun;

    fn fixture(text: &str) -> RunResult {
        serde_json::from_str(text).unwrap()
    }

    fn set_of(runs: Vec<RunResult>) -> ReportSet {
        let runs = runs.into_iter().map(|run| SourcedRun { source: format!("{}.run.json", run.label), run }).collect();
        ReportSet { runs, verdict: None }
    }

    /// A measurement of `metric` on CPU 0 of the run's first scenario with the given samples.
    fn measurement(run: &RunResult, metric: &str, values: impl Iterator<Item = i64>) -> Measurement {
        let mut m = run.measurements[0].clone();
        let mut h = LatencyHistogram::new(run.experiment.histogram_max_ns).unwrap();
        let mut moments = Moments::new();
        for v in values {
            h.record(v);
            moments.record(v);
        }
        m.metric = metric.to_string();
        m.count = moments.count;
        m.cycles = moments.count;
        m.overruns = 0;
        m.summary = Summary::from_parts(&h, &moments);
        m.moments = moments;
        m.histogram = h.encode().unwrap();
        m
    }

    #[test]
    fn akamina_table_5_where_both_metrics_exist() {
        let mut run = fixture(include_str!("../tests/fixtures/simulated-2cpu.run.json"));
        // Interrupt latency: 980 samples in [3.5, 4.0) µs, 20 at 6 µs; activation latency:
        // 975 in [12, 14) µs, 25 at 30 µs. The paper's Table 5 for these: 3.5 - 4.0 (98 %),
        // 12 - 14 (97.5 %), context switch 12 - 4.0 to 14 - 3.5 = 8.0 - 10.5.
        let irq = measurement(&run, "timer.irq", (0..1000).map(|i| if i < 980 { 3_500 + (i % 50) * 9 } else { 6_000 }));
        let act = measurement(
            &run,
            "timer.latency",
            (0..1000).map(|i| if i < 975 { 12_000 + (i % 100) * 19 } else { 30_000 }),
        );
        // t2 is the whole timer latency: the fixture's own is replaced by the known one.
        run.measurements.retain(|m| m.metric != "timer.latency");
        run.measurements.extend([irq, act]);
        run.check().unwrap();
        let tables = report_tables(&set_of(vec![run])).unwrap();
        let table = tables.iter().find(|t| t.id == "range-97-timer.irq-timer.latency").expect("Table 5 is made");
        assert_eq!(table.source.as_deref(), Some("Akamina et al., Table 5"));
        assert_eq!(table.rows.len(), 1);
        assert_eq!(
            table.csv_rows[0][1..],
            ["3500", "4000", "0.980000", "12000", "14000", "0.975000", "8000", "10500"].map(String::from)
        );
        assert_eq!(
            table.rows[0][1..],
            ["3.5", "4.0", "98.0 %", "12.0", "14.0", "97.5 %", "8.0", "10.5"].map(String::from)
        );
        assert_eq!(table.rows[0][0], "idle");
        // No net metrics: no Table 5 for them.
        assert!(!tables.iter().any(|t| t.id.starts_with("range-97-net")));
    }

    #[test]
    fn no_table_5_without_both_metrics() {
        let run = fixture(include_str!("../tests/fixtures/simulated-2cpu.run.json"));
        let tables = report_tables(&set_of(vec![run])).unwrap();
        assert!(!tables.iter().any(|t| t.id.starts_with("range-97")));
        assert!(tables.iter().any(|t| t.id == "percentiles-timer.latency"));
        assert!(!tables.iter().any(|t| t.id.starts_with("b-vs-a")), "one configuration: nothing to compare");
    }

    #[test]
    fn unloaded_and_loaded_side_by_side() {
        let run = fixture(include_str!("../tests/fixtures/simulated-two-scenarios.run.json"));
        let tables = report_tables(&set_of(vec![run])).unwrap();
        let t = tables.iter().find(|t| t.id == "max-p99999-timer.latency").unwrap();
        assert_eq!(
            t.rows,
            vec![vec!["two-scenarios", "cpu:threads=1+proc-read", "2815.4", "2815.4", "2993.0", "2993.0"]]
        );
        let b = tables.iter().find(|t| t.id == "b-vs-a-timer.latency").unwrap();
        assert_eq!(b.rows.len(), 1);
        assert_eq!(b.rows[0][0], "cpu:threads=1+proc-read");
        assert_eq!(b.rows[0].len(), b.columns.len());
        assert_eq!(b.csv_rows[0].len(), b.columns.len());
        for t in &tables {
            for (row, raw) in t.rows.iter().zip(&t.csv_rows) {
                assert_eq!(row.len(), t.columns.len(), "{}", t.id);
                assert_eq!(raw.len(), t.columns.len(), "{}", t.id);
            }
        }
    }
}
