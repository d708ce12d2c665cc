//! The monitor's history as data (docs/history.md): what `rtlab monitor` records and what its
//! readers get back. The SQLite store that keeps them is `rtlab-history`'s (`HistoryDb`):
//! this crate compiles no SQLite.
//!
//! `rtlab monitor` closes a [`WindowRecord`] every `--window`: per CPU and metric the HDR
//! histogram, exact moments, overruns and lost samples, plus the system activity. Every
//! start of the monitor opens a [`Session`] that carries the host's identity
//! ([`HostIdentity`]) and how it measured ([`MonitorSettings`]); a session records the gap
//! since the previous window and a kernel change since the previous session. Old windows are
//! merged, exactly, into hourly and daily rows ([`Resolution`], [`WindowRecord::merge`]).
//!
//! [`range`]: a time range and the UTC dates of the history; [`report`]: `rtlab history`'s
//! views as data (`HistoryReport`).

use crate::activity::Activity;
use crate::host::SystemInfo;
use crate::ResultsError;
use rtlab_analysis::{HistogramEncoding, LatencyHistogram, Moments};
use serde::{Deserialize, Serialize};

/// Who was measured: what the OSADL farm prints beside each board's plot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostIdentity {
    pub hostname: String,
    pub kernel_release: String,
    /// "PREEMPT_RT", "PREEMPT_DYNAMIC", ...
    pub preemption: String,
    /// FNV-1a 64 of the kernel command line, hex: tells two boot configurations apart
    /// without storing the line in every window (it is in the session's host).
    pub cmdline_hash: String,
}

impl HostIdentity {
    pub fn of(host: &SystemInfo) -> Self {
        let preemption = serde_json::to_value(host.preemption_model)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_else(|| "unknown".into());
        Self {
            hostname: host.hostname.clone(),
            kernel_release: host.kernel_release.clone(),
            preemption,
            cmdline_hash: format!("{:016x}", fnv1a64(host.kernel_cmdline.as_bytes())),
        }
    }
}

/// Not a cryptographic hash: it only has to tell command lines apart, and needs no crate.
fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}

/// How a session measured (kept with it, so a range of the history can be read as a run).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MonitorSettings {
    pub rtlab_version: String,
    pub command_line: Vec<String>,
    /// "timer" or "timerlat" (histories written before `-P timerlat` hold no field: timer).
    #[serde(default = "timer_probe", skip_serializing_if = "is_timer_probe")]
    pub probe: String,
    pub interval_ns: u64,
    pub window_ns: u64,
    pub cpus: Vec<usize>,
    pub policy: crate::host::Policy,
    pub priority: i32,
    pub histogram_max_ns: u64,
    /// The load schedule, as given ("idle:5m,hackbench:5m"); empty without one.
    pub schedule: String,
    /// Whether the measuring threads ran at a real-time policy with memory locked.
    pub real_time: bool,
    pub notes: Vec<String>,
}

fn timer_probe() -> String {
    "timer".into()
}

fn is_timer_probe(probe: &String) -> bool {
    probe == "timer"
}

/// One start of the monitor.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    pub id: i64,
    pub started_ns: i64,
    pub ended_ns: Option<i64>,
    pub end_reason: Option<String>,
    pub identity: HostIdentity,
    /// The kernel of the previous session, when it differs from this one's.
    pub previous_kernel: Option<String>,
    /// Time from the previous session's last window to this session's start.
    pub gap_before_ns: Option<i64>,
    pub host: SystemInfo,
    pub settings: MonitorSettings,
}

/// What a row of `windows` covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Resolution {
    /// One monitor window as measured.
    Window,
    /// The windows of one hour, merged.
    Hour,
    /// The windows of one day, merged.
    Day,
}

impl Resolution {
    pub fn as_str(self) -> &'static str {
        match self {
            Resolution::Window => "window",
            Resolution::Hour => "hour",
            Resolution::Day => "day",
        }
    }

    /// The inverse of [`Resolution::as_str`].
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "window" => Some(Resolution::Window),
            "hour" => Some(Resolution::Hour),
            "day" => Some(Resolution::Day),
            _ => None,
        }
    }
}

/// One metric of one CPU in a window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WindowMetric {
    pub cpu: usize,
    pub metric: String,
    pub moments: Moments,
    pub histogram: HistogramEncoding,
    /// Expiries skipped because a wake-up came later than the next one.
    pub overruns: u64,
    /// Samples that did not reach the window (the ring from the measuring thread was full).
    pub lost: u64,
}

/// A closed window, as the monitor hands it over, or a merge of windows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WindowRecord {
    pub start_ns: i64,
    pub end_ns: i64,
    pub resolution: Resolution,
    /// Monitor windows in this record (1 for a window).
    pub merged: u64,
    pub phase: String,
    pub metrics: Vec<WindowMetric>,
    pub activity: Option<Activity>,
}

impl WindowRecord {
    /// The largest sample of `metric` over every CPU; None when nothing was recorded.
    pub fn max_of(&self, metric: &str) -> Option<i64> {
        self.metrics.iter().filter(|m| m.metric == metric && m.moments.count > 0).map(|m| m.moments.max).max()
    }

    /// `other` merged into this record (same session, later or earlier): exact, as every
    /// part adds up. The activity of a merge is not kept.
    pub fn merge(&mut self, other: &WindowRecord) -> Result<(), ResultsError> {
        self.start_ns = self.start_ns.min(other.start_ns);
        self.end_ns = self.end_ns.max(other.end_ns);
        self.merged += other.merged;
        self.activity = None;
        for theirs in &other.metrics {
            match self.metrics.iter_mut().find(|m| m.cpu == theirs.cpu && m.metric == theirs.metric) {
                Some(mine) => {
                    let mut histogram = decode(&mine.histogram)?;
                    histogram.merge(&decode(&theirs.histogram)?).map_err(history_error)?;
                    mine.histogram = histogram.encode().map_err(history_error)?;
                    mine.moments.merge(&theirs.moments);
                    mine.overruns += theirs.overruns;
                    mine.lost += theirs.lost;
                }
                None => self.metrics.push(theirs.clone()),
            }
        }
        self.metrics.sort_by(|a, b| (a.cpu, &a.metric).cmp(&(b.cpu, &b.metric)));
        Ok(())
    }
}

fn decode(encoding: &HistogramEncoding) -> Result<LatencyHistogram, ResultsError> {
    LatencyHistogram::decode(encoding).map_err(history_error)
}

fn history_error(e: impl std::fmt::Display) -> ResultsError {
    ResultsError::History { path: String::new(), reason: e.to_string() }
}

#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;
pub mod range;
pub mod report;
