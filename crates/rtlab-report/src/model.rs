//! run.json: the saved result of a run. Documented in docs/run-json.md.

use crate::ReportError;
use rtlab_analysis::{HistogramEncoding, LatencyHistogram, Moments, Summary};
use rtlab_sys::activity::Activity;
use rtlab_sys::sched::Policy;
use rtlab_sys::sysinfo::{Distortion, SystemInfo};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::Path;

pub const SCHEMA: &str = "rtlab.run/1";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub schema: String,
    pub tool: ToolInfo,
    pub command_line: Vec<String>,
    pub label: String,
    /// RFC 3339 wall-clock times.
    pub start_time: String,
    pub end_time: String,
    /// Wall time spent sampling, in seconds.
    pub duration_s: f64,
    /// The run was stopped by SIGINT/SIGTERM; measurements hold what was taken until then.
    pub interrupted: bool,
    /// Samples came from the simulated clock (tests), not from this machine.
    pub simulated: bool,
    pub realtime: RealtimeStatus,
    pub host: SystemInfo,
    pub experiment: Experiment,
    /// Loads that ran during the measurement (none yet: unloaded runs).
    pub loads: Vec<serde_json::Value>,
    /// System activity during the measurement window.
    pub activity: Option<Activity>,
    pub measurements: Vec<Measurement>,
    /// What on this host may distort the results.
    pub warnings: Vec<Distortion>,
    pub resources: Resources,
    /// Verdict against a requirement, when one was given.
    pub verdict: Option<serde_json::Value>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolInfo {
    pub name: String,
    pub version: String,
    pub commit: Option<String>,
}

/// What real-time conditions the sampling threads actually had.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RealtimeStatus {
    /// False when the threads could not run with a real-time policy and locked memory:
    /// such results do not describe what a real-time task would see.
    pub real_time_results: bool,
    pub policy: Policy,
    pub priority: i32,
    pub memory_locked: bool,
    pub dma_latency_held: bool,
    /// Timer slack set on the sampling threads (1 ns when not real-time).
    pub timer_slack_ns: Option<u64>,
    /// Why the conditions differ from what was asked, one sentence each.
    pub notes: Vec<String>,
}

/// The resolved experiment: every default made explicit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Experiment {
    pub probes: Vec<String>,
    pub interval_ns: u64,
    pub policy: Policy,
    pub priority: i32,
    pub cpus: Vec<usize>,
    /// Measured window per thread; None when bounded by samples.
    pub duration_ns: Option<u64>,
    /// Samples per thread; None when bounded by duration.
    pub samples_per_cpu: Option<u64>,
    pub warmup_samples: u64,
    pub histogram_max_ns: u64,
    pub raw: bool,
    pub dma_latency: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resources {
    pub peak_rss_kib: Option<u64>,
}

/// One metric of one probe thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    pub probe: String,
    /// "probe.metric", e.g. "timer.latency".
    pub metric: String,
    pub cpu: usize,
    pub thread: String,
    /// Samples recorded.
    pub count: u64,
    /// Periods due in the measured window so far: always count + overruns. Without an
    /// interruption it is also duration / interval.
    pub cycles: u64,
    pub overruns: u64,
    pub lost: u64,
    /// Period of the sampling thread, to turn counts into rates.
    pub interval_ns: u64,
    pub summary: Option<Summary>,
    /// Exact sums, so CPUs combine exactly.
    pub moments: Moments,
    pub histogram: HistogramEncoding,
    /// Largest sample per second of the run (block maxima); null for a second without samples.
    pub per_second_max_ns: Vec<Option<i64>>,
    /// Seconds each entry of `per_second_max_ns` covers: 1, unless the run was longer than
    /// a week (memory stays bounded; entries then cover whole-second blocks).
    #[serde(default = "one_second")]
    pub block_s: u64,
    /// Raw sample file relative to the results directory.
    pub raw_file: Option<String>,
    /// Samples in the raw file.
    pub raw_samples: Option<u64>,
}

fn one_second() -> u64 {
    1
}

impl RunResult {
    /// Reads and checks a run.json (or a results directory holding one).
    pub fn load(path: &Path) -> Result<RunResult, ReportError> {
        let file = if path.is_dir() { path.join("run.json") } else { path.to_path_buf() };
        let shown = file.display().to_string();
        let invalid = |reason: String| ReportError::Invalid { path: shown.clone(), reason };
        let text = std::fs::read_to_string(&file).map_err(|e| invalid(format!("cannot read it ({e})")))?;
        let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| invalid(format!("not JSON ({e})")))?;
        match value.get("schema").and_then(|s| s.as_str()) {
            Some(SCHEMA) => {}
            Some(other) => return Err(invalid(format!("schema {other:?} is not {SCHEMA:?}"))),
            None => return Err(invalid(format!("no \"schema\" field: not an rtlab run.json (expected {SCHEMA:?})"))),
        }
        let run: RunResult = serde_json::from_value(value).map_err(|e| invalid(e.to_string()))?;
        run.check().map_err(invalid)?;
        Ok(run)
    }

    /// Internal consistency: what a damaged or hand-edited file would break.
    pub fn check(&self) -> Result<(), String> {
        for m in &self.measurements {
            let what = format!("measurement {} on CPU {}", m.metric, m.cpu);
            let histogram = LatencyHistogram::decode(&m.histogram).map_err(|e| format!("{what}: {e}"))?;
            if histogram.count() != m.count || m.moments.count != m.count {
                return Err(format!(
                    "{what}: count {} disagrees with its histogram ({}) or moments ({})",
                    m.count,
                    histogram.count(),
                    m.moments.count
                ));
            }
            if let Some(s) = &m.summary {
                let ordered = [s.min, s.p50, s.p90, s.p99, s.p99_9, s.p99_99, s.p99_999, s.max];
                if s.count != m.count || ordered.windows(2).any(|w| w[0] > w[1]) {
                    return Err(format!("{what}: summary is inconsistent"));
                }
            } else if m.count > 0 {
                return Err(format!("{what}: samples but no summary"));
            }
            if m.interval_ns == 0 {
                return Err(format!("{what}: interval_ns is 0"));
            }
        }
        Ok(())
    }

    /// Writes run.json atomically: temporary file, fsync, rename, fsync of the directory.
    pub fn save(&self, dir: &Path) -> Result<std::path::PathBuf, ReportError> {
        let path = dir.join("run.json");
        let text = serde_json::to_string_pretty(self).map_err(|e| ReportError::Encode(e.to_string()))?;
        write_atomically(&path, text.as_bytes())?;
        Ok(path)
    }

    /// Measurements of one metric, in CPU order.
    pub fn measurements_of<'a>(&'a self, metric: &'a str) -> impl Iterator<Item = &'a Measurement> + 'a {
        self.measurements.iter().filter(move |m| m.metric == metric)
    }

    /// Metric names in first-seen order.
    pub fn metrics(&self) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        for m in &self.measurements {
            if !names.contains(&m.metric.as_str()) {
                names.push(&m.metric);
            }
        }
        names
    }
}

/// Temporary file + fsync + rename + directory fsync.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), ReportError> {
    let shown = path.display().to_string();
    let io = |source| ReportError::Io { path: shown.clone(), source };
    let dir = path.parent().unwrap_or(Path::new("."));
    let file_name = path.file_name().and_then(|n| n.to_str()).unwrap_or("out");
    let tmp = dir.join(format!(".{file_name}.tmp-{}", std::process::id()));
    let mut file = std::fs::File::create(&tmp).map_err(io)?;
    file.write_all(bytes).and_then(|_| file.sync_all()).map_err(io)?;
    drop(file);
    std::fs::rename(&tmp, path).map_err(io)?;
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}
