//! `rtlab history`'s views of a history, as plain data ([`HistoryReport`], JSON schema
//! `rtlab.history/1`): every statistic is computed once, by `rtlab-history`
//! (`HistoryDb::history_report`); `rtlab_report::history` only renders it (terminal,
//! Markdown, JSON, HTML).
//!
//! - the maximum of every row over time and per UTC day, with kernel changes (sessions
//!   whose kernel differs from the previous session's) and gaps (a restart later than one
//!   window after the last window) marked;
//! - the latency histogram in 1 µs bins of the last day and of the whole range;
//! - percentiles per UTC day (p50, p99, p99.9, max, count);
//! - a regression check between two ranges (by default before and after the last kernel
//!   change of the range) with `rtlab_analysis::compare`'s bootstrap.

use super::range::TimeRange;
use super::Resolution;
use serde::{Deserialize, Serialize};

/// The `schema` of [`HistoryReport`]'s JSON.
pub const HISTORY_SCHEMA: &str = "rtlab.history/1";

/// Width of the histogram bins: 1 µs, as the OSADL plots.
pub const BIN_NS: u64 = 1000;

/// The quantiles compared between two ranges.
pub const COMPARED: [(&str, f64); 3] = [("p50", 0.5), ("p99", 0.99), ("p99.9", 0.999)];

/// What `rtlab history` was asked.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HistoryQuery {
    pub range: TimeRange,
    /// "timer.latency".
    pub metric: String,
    /// The two ranges to compare; None: before and after the last kernel change.
    pub compare: Option<(TimeRange, TimeRange)>,
    /// Only the rows of this load-schedule phase; None: every phase together.
    pub phase: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryReport {
    pub schema: String,
    /// The database, as given.
    pub database: String,
    pub metric: String,
    /// The load-schedule phase the views are limited to (`--phase`); null: every phase.
    #[serde(default)]
    pub phase: Option<String>,
    /// The range asked for (unix ns; null: open).
    pub since_ns: Option<i64>,
    pub until_ns: Option<i64>,
    /// What the rows of the range cover: the first row's start, the last row's end.
    pub first_ns: i64,
    pub last_ns: i64,
    /// The sessions with rows in the range, oldest first.
    pub sessions: Vec<SessionView>,
    /// Every row of the range, oldest first: all CPUs together.
    pub rows: Vec<RowPoint>,
    /// Per UTC day: percentiles of all CPUs together.
    pub days: Vec<DayRow>,
    /// Kernel changes and gaps inside the range, in time order.
    pub events: Vec<HistoryEvent>,
    /// The 24 hours before the range's last row ended.
    pub last_day: HistogramView,
    /// The whole range.
    pub range: HistogramView,
    /// Before vs after; None when there is nothing to compare (no kernel change in the range
    /// and no --before/--after), with the reason in `notes`.
    pub regression: Option<Regression>,
    /// What the reader should know, one sentence each.
    pub notes: Vec<String>,
}

/// A session, as the views show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionView {
    pub id: i64,
    pub started_ns: i64,
    pub ended_ns: Option<i64>,
    pub end_reason: Option<String>,
    pub hostname: String,
    pub kernel_release: String,
    pub preemption: String,
    pub cmdline_hash: String,
    pub previous_kernel: Option<String>,
    pub gap_before_ns: Option<i64>,
    pub window_ns: u64,
    pub interval_ns: u64,
    pub schedule: String,
    /// Rows of this session in the range.
    pub rows: usize,
}

/// One row of the history (a window, or an hourly or daily merge).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RowPoint {
    pub start_ns: i64,
    pub end_ns: i64,
    pub session_id: i64,
    pub resolution: Resolution,
    pub merged: u64,
    pub phase: String,
    /// Samples of the metric, all CPUs.
    pub count: u64,
    /// The largest sample of the metric over every CPU; null without samples.
    pub max_ns: Option<i64>,
    pub overruns: u64,
    pub lost: u64,
}

/// One UTC day.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DayRow {
    /// "2026-11-20".
    pub day: String,
    pub start_ns: i64,
    pub rows: usize,
    pub count: u64,
    pub p50_ns: Option<i64>,
    pub p99_ns: Option<i64>,
    pub p99_9_ns: Option<i64>,
    /// Exact (from the moments).
    pub max_ns: Option<i64>,
    pub overruns: u64,
    pub lost: u64,
    /// The kernels measured that day.
    pub kernels: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    KernelChange,
    Gap,
}

/// A kernel change (at the session's start) or a gap (from the last window before a
/// restart to the restart).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryEvent {
    pub kind: EventKind,
    pub at_ns: i64,
    /// A gap's length; null for a kernel change.
    pub gap_ns: Option<i64>,
    pub session_id: i64,
    pub from_kernel: Option<String>,
    pub to_kernel: Option<String>,
    /// "kernel 6.1-rt → 6.6-rt", "gap of 2 h 5 min".
    pub text: String,
}

/// A histogram of a range in 1 µs bins, with its figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistogramView {
    pub since_ns: i64,
    pub until_ns: i64,
    pub rows: usize,
    pub count: u64,
    pub min_ns: Option<i64>,
    pub p50_ns: Option<i64>,
    pub p99_ns: Option<i64>,
    pub p99_9_ns: Option<i64>,
    pub max_ns: Option<i64>,
    /// Non-empty 1 µs bins: (start ns, samples).
    pub bins: Vec<(u64, u64)>,
}

/// One side of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RangeSide {
    pub since_ns: i64,
    pub until_ns: i64,
    pub rows: usize,
    pub count: u64,
    pub max_ns: Option<i64>,
    pub kernels: Vec<String>,
}

/// After − before in one quantile, with its bootstrap confidence interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuantileChange {
    /// "p99.9".
    pub name: String,
    pub quantile: f64,
    pub before_ns: i64,
    pub after_ns: i64,
    pub difference_ns: i64,
    pub low_ns: i64,
    pub high_ns: i64,
    pub confidence: f64,
    pub replicates: usize,
    /// "worse" (after is higher), "better", or "within noise" (the interval contains 0).
    pub change: String,
    /// "p99.9 worse by 12.3 µs (95 % CI +10.2 to +14.0 µs)".
    pub sentence: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Regression {
    /// Why these two ranges: "before and after the kernel change 6.1-rt → 6.6-rt on ...".
    pub basis: String,
    pub before: RangeSide,
    pub after: RangeSide,
    pub quantiles: Vec<QuantileChange>,
    /// The p99.9 sentence: the answer in one line.
    pub headline: String,
    /// How to read the interval (the bootstrap's assumptions).
    pub method: String,
}

/// "2 h 5 min", "45 s", "3 d 4 h".
pub fn span_words(ns: i64) -> String {
    let s = ns.max(0) / 1_000_000_000;
    let parts: Vec<String> = [(s / 86_400, "d"), (s / 3600 % 24, "h"), (s / 60 % 60, "min")]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, unit)| format!("{n} {unit}"))
        .collect();
    if parts.is_empty() {
        format!("{s} s")
    } else {
        parts.join(" ")
    }
}
