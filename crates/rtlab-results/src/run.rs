//! run.json: the saved result of a run. Documented in docs/run-json.md.

use crate::activity::Activity;
use crate::host::{Distortion, Policy, SystemInfo};
use crate::taskset::{TaskResult, TasksetRun, PROBE};
use crate::ResultsError;
use rtlab_analysis::schedulability::Analysis;
use rtlab_analysis::taskset::TaskSet;
use rtlab_analysis::{HistogramEncoding, LatencyHistogram, Moments, Summary};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::Path;

/// The run.json schema this crate reads and writes.
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
    /// The load scenarios, in the order they were measured ("idle", then "mixed", ...).
    /// Every measurement names one of them.
    pub scenarios: Vec<Scenario>,
    pub measurements: Vec<Measurement>,
    /// What on this host may distort the results.
    pub warnings: Vec<Distortion>,
    pub resources: Resources,
    /// Verdict against the requirements (`--require`), when any were given.
    pub verdict: Option<crate::verdict::Verdict>,
    /// Set when this run was converted by `rtlab import` from another tool's files rather
    /// than measured by rtlab: what it came from and which figures are exact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imported: Option<ImportInfo>,
    /// Set by `rtlab run --taskset`: the task set, its analysis and per task the measured
    /// response times and deadline misses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taskset: Option<TasksetRun>,
    /// Set by `rtlab run --split`: the tracing backend, how the samples were split and the
    /// explained spikes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<crate::split::SplitRun>,
    /// Set by `rtlab run -P noise`: per scenario and CPU the busy loop's noise and its gaps'
    /// time per cause (docs/probes/noise.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise: Option<crate::noise::NoiseRun>,
}

/// Where an imported run came from, and what of it is known. Fields of [`RunResult`] that
/// the source did not record are left empty (empty strings and lists, `unknown`, 0 overruns)
/// and listed in `not_recorded`; nothing is invented.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportInfo {
    /// `--from` value: "cyclictest", "rtla", "jitterdebugger", "xenomai".
    pub from: String,
    /// The layout recognised: "cyclictest-histogram", "cyclictest-verbose", "cyclictest-json",
    /// "rtla-timerlat-histogram", "rtla-timerlat-top", "rtla-osnoise-histogram", "jitterdebugger-results",
    /// "jitterdebugger-samples", "xenomai-latency", "xenomai-histogram" (several when files
    /// were combined).
    pub layouts: Vec<String>,
    /// The files as given to `rtlab import`.
    pub files: Vec<String>,
    /// The source tool and its version when recorded ("cyclictest 2.40").
    pub source_tool: Option<String>,
    /// The source's own command line when recorded.
    pub source_command_line: Option<String>,
    /// Width of the source's histogram buckets in ns; None when every sample was imported.
    pub bucket_ns: Option<u64>,
    /// Resolution of the source's values in ns (1000 when it wrote whole µs).
    pub resolution_ns: u64,
    /// Statistics reproduced exactly (at `resolution_ns`): "count", "min", "max", ...
    pub exact: Vec<String>,
    /// Statistics bounded by the bucket width: the true value lies in [shown, shown +
    /// bucket_ns). Mean and percentiles of a histogram-only source.
    pub bounded: Vec<String>,
    /// Values taken from an option or the tool's documented default because the source does
    /// not record them, one sentence each ("interval 1000 µs: cyclictest's default; a
    /// histogram file does not record -i").
    pub assumed: Vec<String>,
    /// Parts of run.json the source has no record of (left empty): "host", "loads", ...
    pub not_recorded: Vec<String>,
    /// Anything else the reader should know about the conversion.
    pub notes: Vec<String>,
    /// One sentence per series whose source clipped samples beyond its histogram (censored
    /// data): how many, from which bound, and which figures are the source's own. Which
    /// statistics are lower bounds is in each measurement's `summary.censored`. Absent
    /// when nothing was clipped.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub censored: Vec<String>,
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    /// Load scenarios as asked ("idle", "regnier", "cpu+proc-read"), measured one after the
    /// other, each for the whole duration (or sample count).
    pub loads: Vec<String>,
    /// Scenario presets of the experiment file: name -> loads ("disk+proc-read").
    #[serde(default)]
    pub presets: std::collections::BTreeMap<String, String>,
    /// CPUs the loads may run on; None = every online CPU.
    pub load_cpus: Option<Vec<usize>>,
    /// Time between starting a scenario's loads and starting to measure.
    pub settle_ns: u64,
    /// Parameters of the probes other than the timer, resolved.
    #[serde(default)]
    pub probe_settings: ProbeSettings,
}

/// The probes' own parameters, every default explicit. A run that did not use a probe
/// still records its defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ProbeSettings {
    /// `jitter`: the periods, measured one after the other.
    pub periods_ns: Vec<u64>,
    /// `sleep`: the requested relative sleep.
    pub sleep_ns: u64,
    /// `sleep`: samples discarded at the start (the paper's cold-cache two).
    pub sleep_discarded: u64,
    /// `net`, `ipc:*`, `switch`: stimulus rate per probe, e.g. {"net": 20, "ipc:futex": 1000}.
    pub rates_hz: std::collections::BTreeMap<String, f64>,
    /// `sweep`: the swept probe and its rates.
    pub sweep_of: String,
    pub sweep_rates_hz: Vec<f64>,
    /// The receiver's CPU of the stimulus probes (`switch`: both tasks').
    pub receiver_cpu: usize,
    /// The trigger's CPU of `net` and `ipc:*`.
    pub trigger_cpu: usize,
    /// The trigger's priority (lower than the receiver's).
    pub trigger_priority: i32,
    /// `net`: receiver address and interface.
    pub bind: Option<String>,
    pub interface: Option<String>,
    /// `remote` and remote loads: the station's HOST:PORT.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub station: Option<String>,
    /// `remote`: δ given with --delta (None: calibrated before the loads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta_given_ns: Option<u64>,
    /// `remote`: the stored calibration `--delta FILE` held (None: given as a time, or
    /// calibrated before the loads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta_stored: Option<crate::delta::StoredDelta>,
    /// `noise`: gaps longer than this are recorded (--noise-threshold); absent when the run
    /// had no noise probe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_threshold_ns: Option<u64>,
}

/// One load scenario of a run: the loads that ran, what they achieved, and what the system
/// did meanwhile. An unloaded scenario ("idle") has no loads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scenario {
    /// As asked: a preset ("akamina"), a load spec, or loads joined with "+".
    pub name: String,
    /// One entry per load, with its resolved parameters and achieved intensity.
    pub loads: Vec<crate::load::LoadReport>,
    /// Set when a load stopped working before the measurement ended (it died, or its
    /// program exited): this scenario's measurements were not taken under the full load.
    pub load_failure: Option<String>,
    /// Set when raw samples (`--raw`) stopped being written in this scenario because the
    /// file system was nearly full (free space below the raw writer's reserve) or full
    /// (ENOSPC, EDQUOT): one sentence saying where, why and how many were not written. The
    /// histograms hold every sample; those not written count as `lost`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_stopped: Option<String>,
    /// Seconds the loads ran before measuring began.
    pub settle_s: f64,
    /// Wall time spent sampling in this scenario, in seconds.
    pub duration_s: f64,
    /// The scenario was cut short by SIGINT/SIGTERM.
    pub interrupted: bool,
    /// System activity during this scenario's measurement window.
    pub activity: Option<Activity>,
    /// "Long enough?": the stop rule's decision (`--until converged`), or for a plain run the
    /// same answer for the duration it had (docs/stop-rule.md). Absent in files written
    /// before it existed and when there was nothing to judge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub convergence: Option<rtlab_analysis::convergence::Convergence>,
}

impl Scenario {
    /// True when loads ran (anything but an empty scenario such as "idle").
    pub fn is_loaded(&self) -> bool {
        !self.loads.is_empty()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resources {
    pub peak_rss_kib: Option<u64>,
}

/// One metric of one probe thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// Name of the [`Scenario`] this was measured under.
    pub scenario: String,
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
    /// Probe-specific facts: `period_ns` (jitter), `rate_hz` and `stimulus` (sweep),
    /// `requested_ns` (sleep), `trigger_cpu`, `timestamping` (net), `burst_switches`,
    /// `burst_total_ns`, `burst_per_switch_ns` (switch), ... (docs/run-json.md).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub details: std::collections::BTreeMap<String, Detail>,
    /// Every sample in order, for probes that keep them (`sleep`, for per-sample plots).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequence_ns: Option<Vec<i64>>,
}

impl ImportInfo {
    /// One line naming the source: "cyclictest (cyclictest-histogram): a.hist".
    pub fn source_line(&self) -> String {
        let tool = self.source_tool.as_deref().map(|t| format!(", {t}")).unwrap_or_default();
        format!("{} ({}{tool}): {}", self.from, self.layouts.join(" + "), self.files.join(", "))
    }

    /// What a reader must know to trust the figures of an imported run, one sentence each:
    /// which statistics are exact, which bounded by the bucket width, what was assumed and
    /// what the source did not record.
    pub fn describe(&self) -> Vec<String> {
        let mut lines = Vec::new();
        let resolution = if self.resolution_ns >= 1000 && self.resolution_ns.is_multiple_of(1000) {
            format!("{} µs", self.resolution_ns / 1000)
        } else {
            format!("{} ns", self.resolution_ns)
        };
        if !self.exact.is_empty() {
            lines.push(format!("Exact (at the source's resolution of {resolution}): {}.", self.exact.join(", ")));
        }
        if !self.bounded.is_empty() {
            let width =
                self.bucket_ns.map_or_else(|| "bucket".to_string(), |w| rtlab_analysis::units::format_period(w as i64));
            lines.push(format!(
                "Bounded by the source's {width} histogram buckets (the true value lies between the figure shown and \
                 {width} above it): {}.",
                self.bounded.join(", ")
            ));
        }
        for a in &self.assumed {
            lines.push(format!("Assumed: {a}."));
        }
        if !self.not_recorded.is_empty() {
            lines.push(format!("Not recorded by the source (left empty): {}.", self.not_recorded.join(", ")));
        }
        for c in &self.censored {
            lines.push(format!("Censored: {c}."));
        }
        lines.extend(self.notes.iter().cloned());
        lines.iter_mut().for_each(|l| *l = l.replace("..", "."));
        lines
    }
}

/// A probe-specific fact about a measurement, kept in run.json beside its statistics
/// (`period_ns` of a jitter period, `rate_hz` of a sweep step, a switch burst's total).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Detail {
    Int(i64),
    Float(f64),
    Text(String),
}

/// An integer detail (`period_ns`, `requested_ns`, `burst_switches`); a float one is
/// rounded.
pub fn detail_i64(m: &Measurement, key: &str) -> Option<i64> {
    match m.details.get(key)? {
        Detail::Int(v) => Some(*v),
        Detail::Float(v) if v.is_finite() => Some(v.round() as i64),
        _ => None,
    }
}

/// A numeric detail (`rate_hz`, `burst_per_switch_ns`).
pub fn detail_f64(m: &Measurement, key: &str) -> Option<f64> {
    match m.details.get(key)? {
        Detail::Int(v) => Some(*v as f64),
        Detail::Float(v) => Some(*v),
        Detail::Text(_) => None,
    }
}

/// A text detail (`stimulus`, `mechanism`, `timestamping`).
pub fn detail_text<'a>(m: &'a Measurement, key: &str) -> Option<&'a str> {
    match m.details.get(key)? {
        Detail::Text(v) => Some(v),
        _ => None,
    }
}

/// What a probe varies between its steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setting {
    /// The task period of the `jitter` probe, ns: detail `period_ns`, else `interval_ns`.
    Period,
    /// The stimulus rate of the `sweep` probe, Hz: detail `rate_hz`, else 1e9 / `interval_ns`.
    Rate,
}

impl Setting {
    /// The setting `m` was measured at (ns for a period, Hz for a rate).
    pub fn of(self, m: &Measurement) -> f64 {
        match self {
            Setting::Period => detail_i64(m, "period_ns").map(|p| p as f64).unwrap_or(m.interval_ns as f64),
            Setting::Rate => detail_f64(m, "rate_hz").unwrap_or(1e9 / m.interval_ns.max(1) as f64),
        }
    }

    /// The setting as people read it: a period in µs ("300", "1000"), a rate in Hz ("500",
    /// "12.5").
    pub fn label(self, value: f64) -> String {
        let value = match self {
            Setting::Period => value / 1e3,
            Setting::Rate => value,
        };
        let text = format!("{value:.1}");
        text.strip_suffix(".0").map(str::to_string).unwrap_or(text)
    }

    /// The raw value for CSV: a period in ns, a rate in Hz.
    pub fn raw(self, value: f64) -> String {
        match self {
            Setting::Period => format!("{value:.0}"),
            Setting::Rate => value.to_string(),
        }
    }

    /// Column header: "period (µs)", "rate (Hz)".
    pub fn header(self) -> &'static str {
        match self {
            Setting::Period => "period (µs)",
            Setting::Rate => "rate (Hz)",
        }
    }

    /// Whether `a` and `b` are the same step (rates within a millihertz).
    pub fn same(self, a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-3
    }
}

/// The task-set section is made from a run's measurements: here, beside the run, so that
/// [`crate::taskset`] stays plain data.
impl TasksetRun {
    /// The section of `run` (its scenarios and `taskset.*` measurements) for `set`, run from
    /// `file` on `cpu` and compared with `analysis`. Tasks appear in the analysis' order
    /// (highest priority first) within each scenario; a scenario that measured nothing (its
    /// loads failed, an interruption) has no entries.
    pub fn new(
        file: String,
        set: TaskSet,
        cpu: usize,
        analysis: Analysis,
        notes: Vec<String>,
        run: &RunResult,
    ) -> TasksetRun {
        let throttling = &run.host.rt_throttling;
        let rt_throttling_share = match (throttling.enabled(), throttling.runtime_us, throttling.period_us) {
            (true, Some(runtime), Some(period)) if period > 0 => Some(runtime as f64 / period as f64),
            _ => None,
        };
        let mut section = TasksetRun { file, set, cpu, analysis, results: Vec::new(), notes, rt_throttling_share };
        if let Some(share) = section.throttled_share() {
            section.notes.push(format!(
                "The set asks for {:.0} % of the CPU but the host's RT throttling lets real-time tasks use {:.0} % of each \
                 period: once throttled, even the highest-priority task waits for the next period.",
                section.analysis.utilization * 100.0,
                share * 100.0
            ));
        }
        for scenario in &run.scenarios {
            let of_scenario: Vec<&Measurement> =
                run.measurements.iter().filter(|m| m.scenario == scenario.name && m.probe == PROBE).collect();
            for task in &section.analysis.tasks {
                let Some(m) = of_scenario.iter().find(|m| detail_text(m, "task") == Some(task.name.as_str())) else {
                    continue;
                };
                let count = |key| detail_i64(m, key).map_or(0, |v| v.max(0) as u64);
                let worst_response_ns = m.summary.as_ref().map(|s| s.max);
                let exceeds_analysis = match (worst_response_ns, task.response_ns) {
                    (Some(worst), Some(r)) => worst > i64::try_from(r).unwrap_or(i64::MAX),
                    _ => false,
                };
                section.results.push(TaskResult {
                    task: task.name.clone(),
                    scenario: scenario.name.clone(),
                    priority: detail_i64(m, "priority").map_or(task.priority, |p| p as i32),
                    wcet_ns: task.wcet_ns,
                    period_ns: task.period_ns,
                    deadline_ns: task.deadline_ns,
                    metric: m.metric.clone(),
                    jobs_released: count("jobs_released"),
                    jobs_completed: count("jobs_completed"),
                    deadline_misses: count("deadline_misses"),
                    worst_response_ns,
                    worst_lateness_ns: detail_i64(m, "worst_lateness_ns"),
                    worst_wake_up_ns: detail_i64(m, "worst_wake_up_ns"),
                    analysed_response_ns: task.response_ns,
                    exceeds_analysis,
                    explanation: None,
                });
            }
        }
        let explanations: Vec<Option<String>> = section
            .results
            .iter()
            .map(|r| {
                let excess = section.excess_text(r)?;
                Some(format!("{excess}; {}", section.platform_text(&r.scenario)))
            })
            .collect();
        for (r, why) in section.results.iter_mut().zip(explanations) {
            r.explanation = why;
        }
        section
    }
}

fn one_second() -> u64 {
    1
}

impl RunResult {
    /// Reads and checks a run.json (or a results directory holding one).
    pub fn load(path: &Path) -> Result<RunResult, ResultsError> {
        let file = if path.is_dir() { path.join("run.json") } else { path.to_path_buf() };
        let shown = file.display().to_string();
        let invalid = |reason: String| ResultsError::Invalid { path: shown.clone(), reason };
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
        for (i, s) in self.scenarios.iter().enumerate() {
            if self.scenarios[..i].iter().any(|earlier| earlier.name == s.name) {
                return Err(format!("scenario {:?} appears twice", s.name));
            }
        }
        for m in &self.measurements {
            let what = format!("measurement {} on CPU {} (scenario {:?})", m.metric, m.cpu, m.scenario);
            if self.scenario(&m.scenario).is_none() {
                return Err(format!("{what}: no such scenario in \"scenarios\""));
            }
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
        if let Some(noise) = &self.noise {
            noise.check()?;
        }
        Ok(())
    }

    /// Writes run.json atomically: temporary file, fsync, rename, fsync of the directory.
    pub fn save(&self, dir: &Path) -> Result<std::path::PathBuf, ResultsError> {
        let path = dir.join("run.json");
        let text = serde_json::to_string_pretty(self).map_err(|e| ResultsError::Encode(e.to_string()))?;
        write_atomically(&path, text.as_bytes())?;
        Ok(path)
    }

    /// Measurements of one metric in one scenario, in CPU order.
    pub fn measurements_of<'a>(
        &'a self,
        scenario: &'a str,
        metric: &'a str,
    ) -> impl Iterator<Item = &'a Measurement> + 'a {
        self.measurements.iter().filter(move |m| m.scenario == scenario && m.metric == metric)
    }

    /// The scenario named `name`.
    pub fn scenario(&self, name: &str) -> Option<&Scenario> {
        self.scenarios.iter().find(|s| s.name == name)
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

/// The histograms of `measurements` (one metric, several CPUs) merged into one; None for no
/// measurements.
pub fn merged_histogram(
    measurements: &[&Measurement],
) -> Result<Option<LatencyHistogram>, rtlab_analysis::AnalysisError> {
    let mut merged: Option<LatencyHistogram> = None;
    for m in measurements {
        let h = LatencyHistogram::decode(&m.histogram)?;
        match merged.as_mut() {
            Some(all) => all.merge(&h)?,
            None => merged = Some(h),
        }
    }
    Ok(merged)
}

/// The results directory of a result given as a directory or as its run.json: what raw
/// sample paths (`raw_file`) are relative to.
pub fn results_dir(result: &Path) -> std::path::PathBuf {
    if result.is_dir() {
        result.to_path_buf()
    } else {
        result.parent().map(Path::to_path_buf).unwrap_or_default()
    }
}

/// Temporary file + fsync + rename + directory fsync.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), ResultsError> {
    let shown = path.display().to_string();
    let io = |source| ResultsError::Io { path: shown.clone(), source };
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
