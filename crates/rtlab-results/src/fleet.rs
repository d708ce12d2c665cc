//! The fleet overview (`rtlab fleet --format json`, `"schema": "rtlab.fleet/1"`,
//! docs/fleet.md): every board a Prometheus server scrapes, as plain data. `rtlab fleet`
//! builds it from Prometheus' query API; `rtlab_report::fleet` renders it.
//!
//! Latencies are integer ns, times Unix seconds with their UTC RFC 3339 spelling beside
//! them. A figure Prometheus had no data for is `null`.

use rtlab_analysis::requirement::Requirement;
use serde::{Deserialize, Serialize};

/// The `schema` value of this version.
pub const FLEET_SCHEMA: &str = "rtlab.fleet/1";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FleetReport {
    /// "rtlab.fleet/1".
    pub schema: String,
    /// The Prometheus server asked (its base URL as given).
    pub prometheus: String,
    /// The evaluation time of every query: "today" is the 24 h before it, "this week" the 7 days.
    pub generated_at_unix: f64,
    pub generated_at: String,
    /// The metric of the worst-latency columns ("timer.latency").
    pub metric: String,
    /// A board whose last window closed longer ago than this is silent (`--silent-after`).
    pub silent_after_s: f64,
    /// `--require`, each judged on every board's worst of today.
    pub requirements: Vec<Requirement>,
    pub summary: FleetSummary,
    /// One per board (Prometheus `instance`), sorted by instance.
    pub boards: Vec<Board>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FleetSummary {
    pub boards: usize,
    /// Boards that break at least one requirement.
    pub breaking: usize,
    pub silent: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Board {
    /// Prometheus' `instance` label (the scrape target, "board-a:9464"): the board's key.
    pub instance: String,
    /// Prometheus' `job` label.
    pub job: String,
    /// From `rtlab_host_info` (the most recent series); null when the board never exposed it
    /// within the week.
    pub hostname: Option<String>,
    pub kernel_release: Option<String>,
    pub preemption: Option<String>,
    /// Largest window maximum of [`FleetReport::metric`] over all CPUs in the last 24 h.
    pub worst_today_ns: Option<i64>,
    /// The same over the last 7 days.
    pub worst_week_ns: Option<i64>,
    /// The same over the 6 days before the last 24 h (what the trend compares with).
    pub worst_previous_days_ns: Option<i64>,
    pub trend: Trend,
    /// The latest change of `kernel_release` within the week; null when there was none.
    pub last_kernel_change: Option<KernelChange>,
    /// Prometheus' `up` of the board's last scrape: null when Prometheus no longer scrapes it.
    pub up: Option<bool>,
    /// `rtlab_last_window_end_timestamp_seconds`: when the board's last window closed.
    pub last_window_end_unix: Option<f64>,
    pub last_window_end: Option<String>,
    /// Why the board counts as silent; null when it is not.
    pub silent: Option<Silence>,
    /// Increase of `rtlab_overruns_total` / `rtlab_lost_total` (all metrics and CPUs) in the
    /// last 24 h, rounded.
    pub overruns_today: Option<u64>,
    pub lost_today: Option<u64>,
    /// Every requirement judged on this board.
    pub judgements: Vec<BoardJudgement>,
}

impl Board {
    /// True when the board breaks at least one requirement.
    pub fn breaks(&self) -> bool {
        self.judgements.iter().any(|j| j.broken)
    }
}

/// Today's worst against the 6 days before.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trend {
    /// Today's worst exceeds the previous 6 days' worst by more than 10 %.
    Higher,
    /// Today's worst is at most 10 % above the previous days' worst.
    Steady,
    /// No data in the 6 days before today to compare with.
    New,
    /// No data today.
    NoData,
}

/// The margin above the previous days' worst before today counts as [`Trend::Higher`].
pub const TREND_MARGIN: f64 = 0.10;

impl Trend {
    /// Today's worst against the worst of the 6 days before.
    pub fn of(today_ns: Option<i64>, previous_ns: Option<i64>) -> Trend {
        match (today_ns, previous_ns) {
            (None, _) => Trend::NoData,
            (Some(_), None) => Trend::New,
            (Some(t), Some(p)) if t as f64 > p as f64 * (1.0 + TREND_MARGIN) => Trend::Higher,
            _ => Trend::Steady,
        }
    }

    pub fn word(&self) -> &'static str {
        match self {
            Trend::Higher => "higher",
            Trend::Steady => "steady",
            Trend::New => "new",
            Trend::NoData => "no data",
        }
    }
}

/// A kernel change: `from` was last seen at `at`, `to` is the board's current kernel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelChange {
    /// When the previous kernel was last seen (to the minute): the board rebooted after it.
    /// Null when Prometheus has no minute step with it (seen only within the last minute).
    pub at_unix: Option<f64>,
    pub at: Option<String>,
    pub from: String,
    pub to: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SilenceReason {
    /// Prometheus' last scrape failed (`up == 0`).
    Down,
    /// Prometheus does not scrape the board any more (no `up` series now).
    NotScraped,
    /// The monitor answers but closed no window for longer than `--silent-after`.
    NoWindow,
    /// No window end was seen within the week.
    NeverClosed,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Silence {
    pub reason: SilenceReason,
    /// Seconds since the last window closed, when known.
    pub for_s: Option<f64>,
}

impl Silence {
    pub fn words(&self) -> &'static str {
        match self.reason {
            SilenceReason::Down => "scrape failing (up = 0)",
            SilenceReason::NotScraped => "not scraped any more",
            SilenceReason::NoWindow => "no window closed",
            SilenceReason::NeverClosed => "no window in 7 d",
        }
    }
}

/// One requirement on one board, judged on the board's worst of today.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BoardJudgement {
    /// The requirement's text ("timer.latency max < 100us").
    pub requirement: String,
    /// The board's worst of today of the requirement's metric; null without data.
    pub worst_today_ns: Option<i64>,
    pub bound_ns: i64,
    /// True when the worst reached the bound (a requirement holds when strictly below it).
    pub broken: bool,
}

impl FleetReport {
    /// Counts of [`FleetSummary`] from the boards.
    pub fn summarise(boards: &[Board]) -> FleetSummary {
        FleetSummary {
            boards: boards.len(),
            breaking: boards.iter().filter(|b| b.breaks()).count(),
            silent: boards.iter().filter(|b| b.silent.is_some()).count(),
        }
    }

    /// True when any board breaks a requirement (`rtlab fleet` exits 1).
    pub fn any_broken(&self) -> bool {
        self.boards.iter().any(Board::breaks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trend_compares_today_with_the_previous_days() {
        assert_eq!(Trend::of(None, Some(5)), Trend::NoData);
        assert_eq!(Trend::of(Some(5), None), Trend::New);
        assert_eq!(Trend::of(Some(110_000), Some(100_000)), Trend::Steady);
        assert_eq!(Trend::of(Some(110_001), Some(100_000)), Trend::Higher);
        assert_eq!(Trend::of(Some(20_000), Some(100_000)), Trend::Steady);
    }

    #[test]
    fn enums_are_snake_case_in_json() {
        assert_eq!(serde_json::to_string(&Trend::NoData).unwrap(), "\"no_data\"");
        assert_eq!(serde_json::to_string(&SilenceReason::NotScraped).unwrap(), "\"not_scraped\"");
    }
}
