//! The statistics a summary shows, derived from a saved [`RunResult`]: per-CPU rows, all
//! CPUs combined, the exceedance interval of the p99.999 threshold, and the figures of the
//! conclusion. Presentation (text, JSON) happens in the exporters.

use crate::ReportError;
use rtlab_analysis::censored::Censoring;
use rtlab_analysis::exceedance::Exceedance;
use rtlab_analysis::{LatencyHistogram, Moments, Summary};
use rtlab_results::run::{detail_f64, detail_i64, Measurement, RunResult, Setting};
use serde::Serialize;

/// Akamina et al.'s criterion: activation latency under 5 % of the control period.
pub const LATENCY_SHARE_OF_PERIOD: f64 = 0.05;

/// Metrics Akamina's rule applies to: the wake-up latency of a periodic task (the timer
/// probe's, and the jitter probe's at each of its periods).
pub const PERIODIC_WAKE_UP: [&str; 2] = ["timer.latency", "jitter.latency"];

/// The main metric of a probe (the one `--require PROBE ...` names,
/// [`rtlab_analysis::requirement::MAIN_METRICS`]): what a summary's conclusion and
/// exceedance speak of. `ipc:futex` -> `ipc:futex.latency`.
pub fn main_metric(probe: &str) -> String {
    rtlab_analysis::requirement::MAIN_METRICS
        .iter()
        .find(|(p, _)| *p == probe)
        .map(|(_, metric)| metric.to_string())
        .unwrap_or_else(|| format!("{probe}.latency"))
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricRow {
    /// None for the row of all CPUs together.
    pub cpu: Option<usize>,
    pub count: u64,
    pub cycles: u64,
    pub overruns: u64,
    pub lost: u64,
    /// Samples per second actually recorded (count over the measured window).
    pub sample_rate_hz: f64,
    pub summary: Option<Summary>,
    /// The step of a probe that varies a setting: the jitter probe's period ("300 µs"),
    /// the sweep probe's stimulus rate ("500 Hz"); None for the row of all steps.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricDigest {
    pub metric: String,
    /// One row per CPU, then (with more than one CPU) the row of all CPUs.
    pub rows: Vec<MetricRow>,
}

impl MetricDigest {
    /// The row covering every CPU (the only row when there is one CPU).
    pub fn overall(&self) -> &MetricRow {
        self.rows.last().expect("a metric digest has rows")
    }
}

/// Figures behind the one-line conclusion.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Conclusion {
    /// The scenario these figures come from (the worst one, for the run's conclusion).
    pub scenario: String,
    pub metric: String,
    pub samples: u64,
    pub worst_ns: i64,
    pub p99_9_ns: i64,
    /// Shortest control period for which the worst observed wake-up latency stays within
    /// [`LATENCY_SHARE_OF_PERIOD`] of the period; None when the rule does not apply (the
    /// main metric is not the wake-up latency of a periodic task: sleep overshoot, switch
    /// time, stimulus latencies).
    pub shortest_period_ns: Option<i64>,
    /// The wake-up latency the rule was applied to, when it is not `metric` (the jitter
    /// probe's conclusion is about period jitter, its rule about `jitter.latency`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule_metric: Option<String>,
    /// The largest sample of `rule_metric`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule_worst_ns: Option<i64>,
    /// `worst_ns` is a lower bound: the source clipped the largest samples (censored data).
    /// Akamina's rule is then not applied.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub worst_is_lower_bound: bool,
    /// `p99_9_ns` is a lower bound (it lies beyond the source's histogram).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub p99_9_is_lower_bound: bool,
}

/// The digest of one load scenario.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScenarioDigest {
    pub name: String,
    /// Loads ran in this scenario.
    pub loaded: bool,
    /// A load stopped working before the end: not measured under the full load.
    pub load_failure: Option<String>,
    pub metrics: Vec<MetricDigest>,
    /// The main metric of the run's first probe measured here ([`main_metric`]).
    pub main_metric: Option<String>,
    /// Exceedance of the p99.999 threshold of the main metric, all CPUs together.
    pub exceedance: Option<Exceedance>,
    pub conclusion: Option<Conclusion>,
}

impl ScenarioDigest {
    /// The digest of `metric`, if measured.
    pub fn metric(&self, metric: &str) -> Option<&MetricDigest> {
        self.metrics.iter().find(|m| m.metric == metric)
    }

    /// The digest of the main metric.
    pub fn main(&self) -> Option<&MetricDigest> {
        self.main_metric.as_deref().and_then(|m| self.metric(m))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunDigest {
    /// One digest per scenario, in the order measured.
    pub scenarios: Vec<ScenarioDigest>,
    /// The conclusion of the scenario with the worst main-metric maximum: a machine is
    /// judged by its worst condition.
    pub conclusion: Option<Conclusion>,
}

impl RunDigest {
    pub fn of(run: &RunResult) -> Result<RunDigest, ReportError> {
        let mut scenarios = Vec::new();
        for scenario in &run.scenarios {
            scenarios.push(scenario_digest(run, &scenario.name, scenario.is_loaded(), &scenario.load_failure)?);
        }
        let conclusion = scenarios.iter().filter_map(|s| s.conclusion.clone()).max_by_key(|c| c.worst_ns);
        Ok(RunDigest { scenarios, conclusion })
    }

    /// Metric names in first-seen order over all scenarios.
    pub fn metrics(&self) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        for m in self.scenarios.iter().flat_map(|s| &s.metrics) {
            if !names.contains(&m.metric.as_str()) {
                names.push(&m.metric);
            }
        }
        names
    }
}

fn scenario_digest(
    run: &RunResult,
    name: &str,
    loaded: bool,
    load_failure: &Option<String>,
) -> Result<ScenarioDigest, ReportError> {
    let mut metrics = Vec::new();
    for metric in run.metrics() {
        let measurements: Vec<&Measurement> = run.measurements_of(name, metric).collect();
        if measurements.is_empty() {
            continue;
        }
        let mut rows: Vec<MetricRow> = measurements.iter().map(|m| row_of(m)).collect();
        if measurements.len() > 1 {
            rows.push(combined_row(&measurements)?);
        }
        metrics.push(MetricDigest { metric: metric.to_string(), rows });
    }
    let main_metric = main_of(run, &metrics);
    let main = main_metric.as_deref().and_then(|name| metrics.iter().find(|m| m.metric == name));
    let exceedance = main.and_then(|d| {
        let row = d.overall();
        // A threshold beyond the source's histogram has no exceedance interval to give.
        let s = row.summary.as_ref().filter(|s| !s.is_lower_bound("p99.999"))?;
        Exceedance::new(0.99999, s.p99_999, row.sample_rate_hz, row.count)
    });
    let conclusion = main.and_then(|d| {
        let s = d.overall().summary.as_ref()?;
        // The rule speaks of a periodic task's wake-up latency: the main metric itself, or
        // for the jitter probe (whose main metric is period jitter) its wake-up latency.
        let rule_metric = if PERIODIC_WAKE_UP.contains(&d.metric.as_str()) {
            Some(d.metric.as_str())
        } else if d.metric == "jitter.jitter" {
            Some("jitter.latency")
        } else {
            None
        };
        // A clipped maximum says nothing of the shortest period: the rule is not applied.
        let rule_worst = rule_metric
            .and_then(|r| metrics.iter().find(|m| m.metric == r))
            .and_then(|m| m.overall().summary.as_ref())
            .filter(|s| !s.is_lower_bound("max"))
            .map(|s| s.max);
        // Named separately only when the rule speaks of another metric than the conclusion.
        let (rule_metric, rule_worst_ns) = match rule_metric {
            Some(r) if r != d.metric && rule_worst.is_some() => (Some(r.to_string()), rule_worst),
            _ => (None, None),
        };
        Some(Conclusion {
            scenario: name.to_string(),
            metric: d.metric.clone(),
            samples: s.count,
            worst_ns: s.max,
            p99_9_ns: s.p99_9,
            shortest_period_ns: rule_worst.map(|worst| (worst.max(0) as f64 / LATENCY_SHARE_OF_PERIOD).ceil() as i64),
            rule_metric,
            rule_worst_ns,
            worst_is_lower_bound: s.is_lower_bound("max"),
            p99_9_is_lower_bound: s.is_lower_bound("p99.9"),
        })
    });
    Ok(ScenarioDigest {
        name: name.to_string(),
        loaded,
        load_failure: load_failure.clone(),
        metrics,
        main_metric,
        exceedance,
        conclusion,
    })
}

/// The main metric of the first of the run's probes that was measured in the scenario
/// (else one of that probe's metrics, else the first metric): a run of several probes is
/// summed up by the first one asked for.
fn main_of(run: &RunResult, metrics: &[MetricDigest]) -> Option<String> {
    let measured = |name: &str| metrics.iter().any(|m| m.metric == name);
    for probe in &run.experiment.probes {
        let main = main_metric(probe);
        if measured(&main) {
            return Some(main);
        }
        let prefix = format!("{probe}.");
        if let Some(m) = metrics.iter().find(|m| m.metric.starts_with(&prefix)) {
            return Some(m.metric.clone());
        }
    }
    metrics.first().map(|m| m.metric.clone())
}

fn rate(count: u64, cycles: u64, interval_ns: u64) -> f64 {
    let window_s = cycles as f64 * interval_ns as f64 / 1e9;
    if window_s > 0.0 {
        count as f64 / window_s
    } else {
        0.0
    }
}

/// "300 µs" for a jitter period, "500 Hz" for a sweep rate.
fn step_of(m: &Measurement) -> Option<String> {
    if let Some(period) = detail_i64(m, "period_ns") {
        return Some(rtlab_analysis::units::format_period(period));
    }
    detail_f64(m, "rate_hz").filter(|_| m.probe == "sweep").map(|hz| format!("{} Hz", Setting::Rate.label(hz)))
}

fn row_of(m: &Measurement) -> MetricRow {
    MetricRow {
        cpu: Some(m.cpu),
        count: m.count,
        cycles: m.cycles,
        overruns: m.overruns,
        lost: m.lost,
        sample_rate_hz: rate(m.count, m.cycles, m.interval_ns),
        summary: m.summary.clone(),
        step: step_of(m),
    }
}

/// One metric of several measurements (CPUs) together: the merged histogram, the exact
/// moments and the digest row. The verdict, the tables and the comparison start from it.
#[derive(Debug, Clone)]
pub struct Combined {
    /// None when there were no measurements.
    pub histogram: Option<LatencyHistogram>,
    pub moments: Moments,
    pub row: MetricRow,
}

/// Merges the histograms and moments of `measurements` (one metric, several CPUs).
pub fn combine(measurements: &[&Measurement]) -> Result<Combined, ReportError> {
    let histogram = rtlab_results::run::merged_histogram(measurements)?;
    let mut moments = Moments::new();
    let mut row = MetricRow {
        cpu: None,
        count: 0,
        cycles: 0,
        overruns: 0,
        lost: 0,
        sample_rate_hz: 0.0,
        summary: None,
        step: None,
    };
    for m in measurements {
        moments.merge(&m.moments);
        row.count += m.count;
        row.cycles += m.cycles;
        row.overruns += m.overruns;
        row.lost += m.lost;
        row.sample_rate_hz += rate(m.count, m.cycles, m.interval_ns);
    }
    let censoring = merged_censoring(measurements);
    row.summary = histogram.as_ref().and_then(|h| Summary::from_censored_parts(h, &moments, censoring));
    Ok(Combined { histogram, moments, row })
}

/// What the sources of `measurements` clipped, together (None when nothing was clipped).
pub fn merged_censoring(measurements: &[&Measurement]) -> Option<Censoring> {
    Censoring::merge(measurements.iter().map(|m| m.summary.as_ref().and_then(|s| s.censored.as_ref())))
}

fn combined_row(measurements: &[&Measurement]) -> Result<MetricRow, ReportError> {
    Ok(combine(measurements)?.row)
}
