//! Suites: a published evaluation's tables, as data. A suite file (`suites/*.toml`,
//! docs/suites/README.md) names the paper's tables as cells of (condition, metric,
//! statistic) with the paper's values as printed; `rtlab suite` runs one `rtlab run` per
//! condition and saves suite.json ([`SuiteRecord`], `"schema": "rtlab.suite/1"`), whose
//! tables hold this machine's values beside the paper's.
//!
//! This module is plain data: the specifications ([`TableSpec`], [`FigureSpec`]) and their
//! checks, the statistics ([`StatisticSpec`]), suite.json ([`SuiteRecord`]) and its atomic
//! I/O. The computation of a table's cells from the conditions' runs and the rendering are
//! in the `rtlab-suite` crate.

use crate::ResultsError;
use rtlab_analysis::requirement::main_metric_of;
use rtlab_analysis::units::{format_us, parse_time_ns};

use crate::run::{Measurement, RunResult, Setting};
use crate::verdict::Verdict;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::Path;

/// The `schema` of suite.json.
pub const SUITE_SCHEMA: &str = "rtlab.suite/1";

/// A suite file's mistake: which part and what is wrong (the caller adds the file name).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{at}: {reason}")]
pub struct SpecError {
    /// Where: "table \"table-6\" column 2", "figure \"fig-10\"".
    pub at: String,
    pub reason: String,
}

fn spec_error(at: impl Into<String>, reason: impl Into<String>) -> SpecError {
    SpecError { at: at.into(), reason: reason.into() }
}

/// A statistic of one distribution (all CPUs of a condition's metric together).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StatisticSpec {
    Min,
    Max,
    Mean,
    Stddev,
    Count,
    /// 0 < p < 100.
    Percentile(f64),
    /// The range between two percentiles: the central 97 % is range(p1.5,p98.5).
    Range(f64, f64),
    /// The fixed-width bin (edges at multiples of the width, in ns, from 0) that holds the
    /// most samples, and its share: Akamina's Table 5, "the majority of the measurements
    /// (97%) ... within the range of single measurement bin" (0.5 µs for t1, 2 µs for t2).
    Bin(u64),
    /// The share of samples below a bound, in ns: the Xenomai/RTAI paper's "nearly all
    /// latencies are below 2 µs" is `below(2us)`.
    Below(u64),
}

/// The grammar, quoted in parse errors.
pub const STATISTIC_GRAMMAR: &str = "min, max, mean, stddev, count, pNN[.N], range(pA,pB), bin(WIDTH) or below(TIME)";

impl StatisticSpec {
    pub fn parse(text: &str) -> Result<StatisticSpec, String> {
        let t = text.trim();
        let bad = |why: &str| format!("statistic {text:?}: {why}; use {STATISTIC_GRAMMAR}");
        let percent = |p: &str| -> Result<f64, String> {
            let digits = p.trim().strip_prefix('p').ok_or_else(|| bad("a percentile starts with 'p'"))?;
            let value: f64 = digits.parse().map_err(|_| bad("not a number after 'p'"))?;
            if !(value > 0.0 && value < 100.0) {
                return Err(bad("a percentile lies strictly between 0 and 100"));
            }
            Ok(value)
        };
        Ok(match t {
            "min" => StatisticSpec::Min,
            "max" => StatisticSpec::Max,
            "mean" => StatisticSpec::Mean,
            "stddev" => StatisticSpec::Stddev,
            "count" => StatisticSpec::Count,
            _ if t.starts_with("range(") && t.ends_with(')') => {
                let inner = &t["range(".len()..t.len() - 1];
                let (a, b) = inner.split_once(',').ok_or_else(|| bad("range takes two percentiles"))?;
                let (a, b) = (percent(a)?, percent(b)?);
                if a >= b {
                    return Err(bad("the first percentile of a range must be the lower"));
                }
                StatisticSpec::Range(a, b)
            }
            _ if t.starts_with("bin(") && t.ends_with(')') => {
                let width =
                    parse_time_ns(&t["bin(".len()..t.len() - 1]).map_err(|e| bad(&format!("the bin width: {e}")))?;
                if width == 0 {
                    return Err(bad("a bin is wider than 0"));
                }
                StatisticSpec::Bin(width)
            }
            _ if t.starts_with("below(") && t.ends_with(')') => StatisticSpec::Below(
                parse_time_ns(&t["below(".len()..t.len() - 1]).map_err(|e| bad(&format!("the bound: {e}")))?,
            ),
            _ if t.starts_with('p') => StatisticSpec::Percentile(percent(t)?),
            _ => return Err(bad("unknown statistic")),
        })
    }
}

impl fmt::Display for StatisticSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StatisticSpec::Min => f.write_str("min"),
            StatisticSpec::Max => f.write_str("max"),
            StatisticSpec::Mean => f.write_str("mean"),
            StatisticSpec::Stddev => f.write_str("stddev"),
            StatisticSpec::Count => f.write_str("count"),
            StatisticSpec::Percentile(p) => write!(f, "p{p}"),
            StatisticSpec::Range(a, b) => write!(f, "range(p{a},p{b})"),
            StatisticSpec::Bin(width_ns) => write!(f, "bin({width_ns}ns)"),
            StatisticSpec::Below(bound_ns) => write!(f, "below({bound_ns}ns)"),
        }
    }
}

/// Which measurements of a condition's metric a cell takes (all of them by default).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Selector {
    /// The `jitter` probe's task period, e.g. "300us".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period: Option<String>,
    /// The `sweep` probe's (and stimulus probes') rate in Hz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// One CPU only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<usize>,
}

impl Selector {
    pub fn is_empty(&self) -> bool {
        self.period.is_none() && self.rate.is_none() && self.cpu.is_none()
    }

    fn period_ns(&self) -> Result<Option<u64>, String> {
        self.period.as_deref().map(|p| parse_time_ns(p).map_err(|e| format!("where.period: {e}"))).transpose()
    }

    pub fn matches(&self, m: &Measurement) -> bool {
        let period_ok = match self.period_ns() {
            Ok(Some(ns)) => (Setting::Period.of(m) - ns as f64).abs() < 0.5,
            Ok(None) => true,
            Err(_) => false,
        };
        let rate_ok = self.rate.is_none_or(|r| (Setting::Rate.of(m) - r).abs() <= 1e-6 * r.abs().max(1.0));
        period_ok && rate_ok && self.cpu.is_none_or(|c| m.cpu == c)
    }

    /// "at period 300us, CPU 1": for reasons and notes.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(p) = &self.period {
            parts.push(format!("period {p}"));
        }
        if let Some(r) = self.rate {
            parts.push(format!("rate {r} Hz"));
        }
        if let Some(c) = self.cpu {
            parts.push(format!("CPU {c}"));
        }
        parts.join(", ")
    }
}

/// One column of a paper table: its title and the parts of the cell it fixes. In the
/// configuration layout every column names a condition, a metric and a statistic; in the
/// settings layout ([`RowSpec`]) a row may fix any of them instead.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColumnSpec {
    pub title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statistic: Option<String>,
    /// The condition run's scenario, when it measured several.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario: Option<String>,
    #[serde(default, rename = "where", skip_serializing_if = "Option::is_none")]
    pub selector: Option<Selector>,
    /// A difference of ranges, the paper's way: Akamina's context switch range is the t2
    /// bin less the t1 bin ([t2 low − t1 high, t2 high − t1 low]). The cell's range less
    /// this one, taken from the same condition, scenario and measurements.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minus: Option<Subtrahend>,
}

/// The range a [`ColumnSpec::minus`] subtracts: a metric and a range statistic.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Subtrahend {
    pub metric: String,
    pub statistic: String,
}

/// A row of the paper, as printed: its label and one value per column ("" = none).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PaperRow {
    pub label: String,
    pub values: Vec<String>,
}

/// A row of a settings-layout table (Dodiu's periods, rates, or min/max): its title, the
/// parts of the cell it fixes (overriding the column's), and the paper's values as printed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RowSpec {
    pub title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statistic: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario: Option<String>,
    #[serde(default, rename = "where", skip_serializing_if = "Option::is_none")]
    pub selector: Option<Selector>,
    #[serde(default)]
    pub paper: Vec<String>,
}

/// Unit of a table's values (the paper's and ours).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    Ns,
    #[default]
    Us,
    Ms,
}

impl Unit {
    pub fn symbol(self) -> &'static str {
        match self {
            Unit::Ns => "ns",
            Unit::Us => "µs",
            Unit::Ms => "ms",
        }
    }

    /// A value in this unit: ns as integers, µs with one decimal, ms with three.
    pub fn format(self, ns: i64) -> String {
        match self {
            Unit::Ns => ns.to_string(),
            Unit::Us => format_us(ns),
            Unit::Ms => format!("{:.3}", ns as f64 / 1e6),
        }
    }
}

/// One paper table of a suite.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableSpec {
    /// Anchor and key: "table-6".
    pub id: String,
    pub title: String,
    /// "Akamina et al. 2004, Table 6".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Header of the first column: "OS Option", "Task period (µs)".
    #[serde(default = "default_row_header")]
    pub row_header: String,
    #[serde(default)]
    pub unit: Unit,
    pub columns: Vec<ColumnSpec>,
    /// Configuration layout: the paper's configurations; this machine's runs are added as
    /// rows below them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paper_rows: Vec<PaperRow>,
    /// Settings layout: one row per setting; every column gets the paper's value and this
    /// machine's beside it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rows: Vec<RowSpec>,
    /// Sentences under the table: substitutions, how to read it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

fn default_row_header() -> String {
    "Configuration".into()
}

/// The two shapes a paper table takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Rows are configurations (the paper's, then this machine's runs): Akamina Tables 4-6.
    Configurations,
    /// Rows are settings of one configuration (periods, rates, statistics): Dodiu Tables 1-3.
    Settings,
}

/// A cell fully specified: what to compute from which condition's run.
#[derive(Debug, Clone, PartialEq)]
pub struct CellSpec {
    pub condition: String,
    /// Full metric name (`timer` is `timer.latency`).
    pub metric: String,
    pub statistic: StatisticSpec,
    pub scenario: Option<String>,
    pub selector: Selector,
    /// The range subtracted from this cell's (metric, statistic), see [`ColumnSpec::minus`].
    pub minus: Option<(String, StatisticSpec)>,
}

impl StatisticSpec {
    /// Whether its value is a range (what a difference of ranges takes).
    pub fn is_range(self) -> bool {
        matches!(self, StatisticSpec::Range(..) | StatisticSpec::Bin(_))
    }
}

/// What the checks of a table need to know about the suite's conditions.
pub struct ConditionNames<'a> {
    /// Condition name and the load scenarios its run measures, in order.
    pub conditions: &'a [(String, Vec<String>)],
}

impl TableSpec {
    pub fn layout(&self) -> Layout {
        if self.rows.is_empty() {
            Layout::Configurations
        } else {
            Layout::Settings
        }
    }

    /// The cells, row by row: one row in the configuration layout, one per [`RowSpec`] in
    /// the settings layout. Checks that every cell is complete, names an existing
    /// condition (and scenario) and a statistic that parses.
    pub fn cells(&self, names: &ConditionNames) -> Result<Vec<Vec<CellSpec>>, SpecError> {
        let table = format!("table {:?}", self.id);
        if self.columns.is_empty() {
            return Err(spec_error(&table, "has no columns"));
        }
        let rows: Vec<Option<&RowSpec>> = match self.layout() {
            Layout::Configurations => vec![None],
            Layout::Settings => self.rows.iter().map(Some).collect(),
        };
        let mut out = Vec::new();
        for (r, row) in rows.iter().enumerate() {
            let mut cells = Vec::new();
            for (c, column) in self.columns.iter().enumerate() {
                let at = match row {
                    None => format!("{table} column {} ({:?})", c + 1, column.title),
                    Some(row) => {
                        format!("{table} row {} ({:?}) column {} ({:?})", r + 1, row.title, c + 1, column.title)
                    }
                };
                let pick = |from_row: Option<&Option<String>>, from_column: &Option<String>, key: &str| {
                    from_row
                        .and_then(|v| v.clone())
                        .or_else(|| from_column.clone())
                        .ok_or_else(|| spec_error(&at, format!("no {key} (give it in the column or the row)")))
                };
                let condition = pick(row.map(|r| &r.condition), &column.condition, "condition")?;
                let metric = main_metric_of(pick(row.map(|r| &r.metric), &column.metric, "metric")?.trim());
                let statistic_text = pick(row.map(|r| &r.statistic), &column.statistic, "statistic")?;
                let statistic = StatisticSpec::parse(&statistic_text).map_err(|e| spec_error(&at, e))?;
                let scenario = row.and_then(|r| r.scenario.clone()).or_else(|| column.scenario.clone());
                let selector = merge_selectors(column.selector.as_ref(), row.and_then(|r| r.selector.as_ref()));
                selector.period_ns().map_err(|e| spec_error(&at, e))?;
                let Some((_, scenarios)) = names.conditions.iter().find(|(n, _)| *n == condition) else {
                    let known: Vec<&str> = names.conditions.iter().map(|(n, _)| n.as_str()).collect();
                    return Err(spec_error(
                        &at,
                        format!("condition {condition:?} is not a condition of this suite ({})", known.join(", ")),
                    ));
                };
                match &scenario {
                    Some(s) if !scenarios.contains(s) => {
                        return Err(spec_error(
                            &at,
                            format!(
                                "condition {condition:?} has no scenario {s:?} (it measures {})",
                                scenarios.join(", ")
                            ),
                        ))
                    }
                    None if scenarios.len() > 1 => {
                        return Err(spec_error(
                            &at,
                            format!(
                                "condition {condition:?} measures several scenarios ({}): name one with `scenario`",
                                scenarios.join(", ")
                            ),
                        ))
                    }
                    _ => {}
                }
                if metric.is_empty() || metric.contains(char::is_whitespace) {
                    return Err(spec_error(&at, format!("metric {metric:?} is not a metric name")));
                }
                let minus = match &column.minus {
                    None => None,
                    Some(m) => {
                        let minus_statistic = StatisticSpec::parse(&m.statistic).map_err(|e| spec_error(&at, e))?;
                        if !statistic.is_range() || !minus_statistic.is_range() {
                            return Err(spec_error(
                                &at,
                                "minus subtracts a range from a range: both statistics are range(pA,pB) or bin(WIDTH)",
                            ));
                        }
                        let minus_metric = main_metric_of(m.metric.trim());
                        if minus_metric.is_empty() || minus_metric.contains(char::is_whitespace) {
                            return Err(spec_error(
                                &at,
                                format!("minus: metric {minus_metric:?} is not a metric name"),
                            ));
                        }
                        Some((minus_metric, minus_statistic))
                    }
                };
                cells.push(CellSpec { condition, metric, statistic, scenario, selector, minus });
            }
            out.push(cells);
        }
        Ok(out)
    }

    /// Every check of the table: its id, its cells and the paper's values.
    pub fn check(&self, names: &ConditionNames) -> Result<(), SpecError> {
        let table = format!("table {:?}", self.id);
        check_id(&self.id).map_err(|e| spec_error(&table, e))?;
        self.cells(names)?;
        if !self.paper_rows.is_empty() && !self.rows.is_empty() {
            return Err(spec_error(
                &table,
                "give either paper_rows (rows are configurations) or rows (rows are settings), not both",
            ));
        }
        for (i, row) in self.paper_rows.iter().enumerate() {
            if row.values.len() != self.columns.len() {
                return Err(spec_error(
                    format!("{table} paper_rows {} ({:?})", i + 1, row.label),
                    format!("has {} values for {} columns", row.values.len(), self.columns.len()),
                ));
            }
        }
        for (i, row) in self.rows.iter().enumerate() {
            if !row.paper.is_empty() && row.paper.len() != self.columns.len() {
                return Err(spec_error(
                    format!("{table} rows {} ({:?})", i + 1, row.title),
                    format!("paper has {} values for {} columns", row.paper.len(), self.columns.len()),
                ));
            }
        }
        Ok(())
    }
}

fn merge_selectors(column: Option<&Selector>, row: Option<&Selector>) -> Selector {
    let column = column.cloned().unwrap_or_default();
    let Some(row) = row else { return column };
    Selector {
        period: row.period.clone().or(column.period),
        rate: row.rate.or(column.rate),
        cpu: row.cpu.or(column.cpu),
    }
}

/// Ids are used as anchors and in file names: letters, digits, '-' and '_'.
pub fn check_id(id: &str) -> Result<(), String> {
    if id.is_empty() || id.len() > 64 || !id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_')) {
        return Err(format!("id {id:?}: use 1 to 64 letters, digits, '-' or '_'"));
    }
    Ok(())
}

/// The kinds of figures a suite may ask for.
pub const FIGURE_KINDS: [&str; 4] = ["cumulative", "histogram", "timeseries", "per-sample"];

/// A figure of the paper, drawn from some conditions' runs of one metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FigureSpec {
    pub id: String,
    pub title: String,
    /// One of [`FIGURE_KINDS`].
    pub kind: String,
    pub metric: String,
    /// The conditions drawn, overlaid (cumulative, histogram, per-sample) or one panel each
    /// (timeseries).
    pub conditions: Vec<String>,
    /// cumulative: show only the top N % of samples (Akamina's top 2 %, 3 %, 20 %).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_percent: Option<f64>,
    /// cumulative, histogram: the paper's fixed bins, e.g. "2us" ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bin_width: Option<String>,
    /// ... and how many (the last bin's end is the largest latency the paper could record).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bin_count: Option<u64>,
    /// Which measurements of the metric (one task period, one stimulus rate, one CPU), as a
    /// table cell's `where`.
    #[serde(default, rename = "where", skip_serializing_if = "Option::is_none")]
    pub selector: Option<Selector>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl FigureSpec {
    pub fn metric_name(&self) -> String {
        main_metric_of(self.metric.trim())
    }

    /// The bins, ns wide and how many, when the figure asks for the paper's fixed bins.
    pub fn bins(&self) -> Result<Option<(u64, u64)>, SpecError> {
        let at = format!("figure {:?}", self.id);
        match (&self.bin_width, self.bin_count) {
            (None, None) => Ok(None),
            (Some(w), Some(n)) => {
                let width = parse_time_ns(w).map_err(|e| spec_error(&at, format!("bin_width: {e}")))?;
                if width == 0 || n == 0 || n > 1_000_000 {
                    return Err(spec_error(&at, "bin_width must be > 0 and bin_count between 1 and 1,000,000"));
                }
                Ok(Some((width, n)))
            }
            _ => Err(spec_error(&at, "give bin_width and bin_count together")),
        }
    }

    pub fn check(&self, names: &ConditionNames) -> Result<(), SpecError> {
        let at = format!("figure {:?}", self.id);
        check_id(&self.id).map_err(|e| spec_error(&at, e))?;
        if !FIGURE_KINDS.contains(&self.kind.as_str()) {
            return Err(spec_error(&at, format!("kind {:?}: use one of {}", self.kind, FIGURE_KINDS.join(", "))));
        }
        if self.conditions.is_empty() {
            return Err(spec_error(&at, "names no conditions"));
        }
        for c in &self.conditions {
            if !names.conditions.iter().any(|(n, _)| n == c) {
                return Err(spec_error(&at, format!("condition {c:?} is not a condition of this suite")));
            }
        }
        if let Some(top) = self.top_percent {
            if !(top > 0.0 && top <= 100.0) || self.kind != "cumulative" {
                return Err(spec_error(&at, "top_percent is a percentage in (0, 100] of a cumulative figure"));
            }
        }
        if let Some(selector) = &self.selector {
            selector.period_ns().map_err(|e| spec_error(&at, e))?;
        }
        self.bins()?;
        Ok(())
    }
}

/// A table cell's value for one configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum CellValue {
    /// A time statistic in ns (mean and stddev rounded to whole ns).
    Time {
        ns: i64,
    },
    Count {
        count: u64,
    },
    /// Two percentiles: the range that holds the samples between them; or the difference
    /// of two such ranges (a column's `minus`).
    Range {
        from_ns: i64,
        to_ns: i64,
    },
    /// The fullest fixed-width bin, [from, to), and the share of the samples in it (0..=1).
    Bin {
        from_ns: i64,
        to_ns: i64,
        share: f64,
    },
    /// A share of the samples (0..=1), shown as a percentage.
    Share {
        share: f64,
    },
    /// Why there is no value.
    NotMeasured {
        reason: String,
    },
}

impl CellValue {
    /// As shown in a table, in `unit` ("12.5", "3.5 – 4.0", "1,500,000", "not measured: ...").
    pub fn text(&self, unit: Unit) -> String {
        match self {
            CellValue::Time { ns } => unit.format(*ns),
            CellValue::Count { count } => rtlab_analysis::units::thousands(*count),
            CellValue::Range { from_ns, to_ns } => format!("{} – {}", unit.format(*from_ns), unit.format(*to_ns)),
            CellValue::Bin { from_ns, to_ns, share } => {
                format!("{} – {} ({:.1} %)", unit.format(*from_ns), unit.format(*to_ns), share * 100.0)
            }
            CellValue::Share { share } => format!("{:.2} %", share * 100.0),
            CellValue::NotMeasured { reason } => format!("not measured: {reason}"),
        }
    }
}

/// One configuration's values of a table: `values[row][column]` (one row in the
/// configuration layout).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeasuredRows {
    /// The suite's label.
    pub label: String,
    pub values: Vec<Vec<CellValue>>,
}

/// A table of suite.json: the specification (with the paper's values) and this machine's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuiteTable {
    pub spec: TableSpec,
    pub measured: MeasuredRows,
}

/// The suite as described in its file's `[suite]` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteInfo {
    /// "akamina-2004".
    pub name: String,
    pub title: String,
    /// The full citation.
    #[serde(default)]
    pub paper: String,
    /// The docs page mapping the paper's set-up onto rtlab's.
    #[serde(default)]
    pub docs: String,
    #[serde(default)]
    pub summary: String,
    /// The paper's hardware and era, shown beside its values.
    #[serde(default)]
    pub paper_era: String,
}

/// How a condition of a suite ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConditionStatus {
    /// Measured as asked.
    Done,
    /// Measured, but not all of it: its loads failed or it was interrupted (see `reason`).
    Incomplete,
    /// Nothing was measured (see `reason`); the other conditions still ran.
    Failed,
    /// Not started: the suite was interrupted before it.
    NotRun,
}

/// One condition of a suite run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConditionRecord {
    pub name: String,
    pub title: String,
    /// The run's results directory, relative to the suite directory ("unloaded").
    pub directory: String,
    /// The run's label: `<suite label>-<condition>`.
    pub run_label: String,
    pub status: ConditionStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Capabilities it needs ("split").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub needs: Vec<String>,
    /// Of those, the ones this rtlab lacks, with why: the cells that need them are "not
    /// measured".
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gaps: Vec<String>,
    /// What the run measured, in a line: "timer every 10 ms, 1,500,000 samples, load idle".
    pub plan: String,
}

impl ConditionRecord {
    /// It ran without a capability it needs (`gaps`): the cells that need it are "not
    /// measured", the others are measured; the suite is not complete (exit 3).
    pub fn is_degraded(&self) -> bool {
        !self.gaps.is_empty() && matches!(self.status, ConditionStatus::Done | ConditionStatus::Incomplete)
    }
}

/// suite.json: a suite run, everything its report needs besides the runs' own run.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuiteRecord {
    pub schema: String,
    pub suite: SuiteInfo,
    /// The configuration's name (the suite's label), e.g. the kernel.
    pub label: String,
    /// Durations scaled down (`--quick`): not the paper's sample counts.
    pub quick: bool,
    /// The paper's long variant (`--long`).
    pub long: bool,
    /// The suite file used: a path, or "built-in akamina-2004".
    pub file: String,
    /// Its text, so the run can be repeated exactly.
    pub file_text: String,
    pub tool_version: String,
    /// RFC 3339.
    pub start_time: String,
    pub end_time: String,
    /// Stopped by SIGINT/SIGTERM: conditions after the one running then are `not-run`.
    pub interrupted: bool,
    /// The runs came from the simulated clock (tests).
    #[serde(default)]
    pub simulated: bool,
    /// The machine: hostname, kernel release, preemption model, CPU (from the first run).
    pub machine: String,
    pub requirements: Vec<String>,
    pub conditions: Vec<ConditionRecord>,
    pub tables: Vec<SuiteTable>,
    pub figures: Vec<FigureSpec>,
    /// The runs' verdicts against the suite's requirements, combined.
    pub verdict: Option<Verdict>,
    /// The paper's own conclusions, recomputed from this machine's runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub judgements: Vec<JudgementResult>,
}

/// What a `[[judgement]]` (rtlab_results::judgement::JudgementSpec) gave on this machine:
/// suite.json `judgements`. Here, beside the record that holds it, so that the record does
/// not depend on the specification's module.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgementResult {
    pub id: String,
    pub title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    pub paper: String,
    pub kind: String,
    /// One line per fact computed ("500 µs: not met: t2 unloaded max 9,327.7 µs").
    pub findings: Vec<String>,
    /// The paper's conclusion, recomputed for this machine, in a sentence.
    pub conclusion: String,
    /// Whether this machine passes the paper's test (None: the rule does not say, or it
    /// could not be computed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub met: Option<bool>,
    /// The cells' values in ns (NaN-free; None where not measured), for comparisons
    /// across suite runs (`lower-by`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values_ns: Vec<Option<i64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reading: Option<String>,
    /// The rule's percent (a `lower-by` needs it to compare suite runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percent: Option<f64>,
}

impl SuiteRecord {
    /// Reads and checks a suite.json (or a suite directory holding one).
    pub fn load(path: &Path) -> Result<SuiteRecord, ResultsError> {
        let file = if path.is_dir() { path.join("suite.json") } else { path.to_path_buf() };
        let shown = file.display().to_string();
        let invalid = |reason: String| ResultsError::Invalid { path: shown.clone(), reason };
        let text = std::fs::read_to_string(&file).map_err(|e| invalid(format!("cannot read it ({e})")))?;
        let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| invalid(format!("not JSON ({e})")))?;
        match value.get("schema").and_then(|s| s.as_str()) {
            Some(SUITE_SCHEMA) => {}
            Some(other) => return Err(invalid(format!("schema {other:?} is not {SUITE_SCHEMA:?}"))),
            None => return Err(invalid(format!("no \"schema\" field (expected {SUITE_SCHEMA:?})"))),
        }
        let record: SuiteRecord = serde_json::from_value(value).map_err(|e| invalid(e.to_string()))?;
        for t in &record.tables {
            let rows = match t.spec.layout() {
                Layout::Configurations => 1,
                Layout::Settings => t.spec.rows.len(),
            };
            if t.measured.values.len() != rows || t.measured.values.iter().any(|r| r.len() != t.spec.columns.len()) {
                return Err(invalid(format!("table {:?}: its values do not match its columns and rows", t.spec.id)));
            }
        }
        Ok(record)
    }

    /// Writes suite.json atomically into `dir`.
    pub fn save(&self, dir: &Path) -> Result<std::path::PathBuf, ResultsError> {
        let path = dir.join("suite.json");
        let text = serde_json::to_string_pretty(self).map_err(|e| ResultsError::Encode(e.to_string()))?;
        crate::run::write_atomically(&path, text.as_bytes())?;
        Ok(path)
    }

    /// True when `path` is a suite directory or a suite.json.
    pub fn is_suite(path: &Path) -> bool {
        if path.is_dir() {
            path.join("suite.json").is_file()
        } else {
            path.file_name().is_some_and(|n| n == "suite.json")
        }
    }
}

/// A suite directory read back: suite.json and the run of every condition that has one.
#[derive(Debug, Clone)]
pub struct LoadedSuite {
    /// The directory as given.
    pub dir: std::path::PathBuf,
    pub record: SuiteRecord,
    /// Per condition of `record`, its run (None when it has no readable run.json).
    pub runs: Vec<Option<RunResult>>,
}

impl LoadedSuite {
    /// Reads `path` (a suite directory or its suite.json) and the runs of its conditions.
    pub fn load(path: &Path) -> Result<LoadedSuite, ResultsError> {
        let record = SuiteRecord::load(path)?;
        let dir = if path.is_dir() { path.to_path_buf() } else { crate::run::results_dir(path) };
        let runs = record
            .conditions
            .iter()
            .map(|c| {
                let run_json = dir.join(&c.directory).join("run.json");
                run_json.is_file().then(|| RunResult::load(&run_json)).transpose()
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(LoadedSuite { dir, record, runs })
    }

    /// The run of condition `name`, if it has one.
    pub fn run_of(&self, name: &str) -> Option<&RunResult> {
        let i = self.record.conditions.iter().position(|c| c.name == name)?;
        self.runs.get(i).and_then(Option::as_ref)
    }
}
