//! What the bisect gate reads from two runs: per scenario the metric's histogram of all
//! CPUs together with what was clipped of it, and each run's conditions (interrupted, loads
//! that failed, steal, RT throttling, real-time or not). The judging itself is
//! [`rtlab_analysis::gate`]'s; docs/gate.md.

use crate::run::{merged_histogram, Measurement, RunResult};
use rtlab_analysis::censored::Censoring;
use rtlab_analysis::gate::{
    baseline_problems, judge_statistic, GateReport, Indices, Limits, RunConditions, Series, Tolerance, WorstShare,
};
use rtlab_analysis::requirement::{main_metric_of, Statistic};
use rtlab_analysis::LatencyHistogram;

/// What the gate is asked: the metric (None: the baseline's main metric), the statistics,
/// the tolerance and the limits of a run's disturbances.
#[derive(Debug, Clone, PartialEq)]
pub struct GateSettings {
    pub metric: Option<String>,
    pub statistics: Vec<Statistic>,
    pub tolerance: Tolerance,
    pub limits: Limits,
}

impl Default for GateSettings {
    fn default() -> Self {
        GateSettings {
            metric: None,
            statistics: rtlab_analysis::gate::DEFAULT_STATISTICS.to_vec(),
            tolerance: rtlab_analysis::gate::DEFAULT_TOLERANCE,
            limits: Limits::default(),
        }
    }
}

/// One metric of one scenario, all CPUs together.
pub struct GateSeries {
    pub histogram: LatencyHistogram,
    pub censoring: Option<Censoring>,
}

impl GateSeries {
    /// The metric in the scenario; None when it has no samples there.
    pub fn of(run: &RunResult, scenario: &str, metric: &str) -> Result<Option<GateSeries>, String> {
        let measurements: Vec<&Measurement> = run.measurements_of(scenario, metric).collect();
        let histogram =
            merged_histogram(&measurements).map_err(|e| format!("{metric} in scenario {scenario:?}: {e}"))?;
        let censoring =
            Censoring::merge(measurements.iter().map(|m| m.summary.as_ref().and_then(|s| s.censored.as_ref())));
        Ok(histogram.filter(|h| h.count() > 0).map(|histogram| GateSeries { histogram, censoring }))
    }

    pub fn series(&self) -> Series<'_> {
        Series { histogram: &self.histogram, censoring: self.censoring.as_ref() }
    }
}

/// The metric the gate judges: the one asked for (a probe name means its main metric), else
/// the main metric of the baseline's first probe (as a summary concludes on), else its
/// first metric.
pub fn gate_metric(baseline: &RunResult, asked: Option<&str>) -> Result<String, String> {
    let metrics = baseline.metrics();
    if let Some(asked) = asked {
        let wanted = main_metric_of(asked.trim());
        return if metrics.contains(&wanted.as_str()) {
            Ok(wanted)
        } else {
            Err(format!("the baseline has no metric {wanted:?} (it has {})", metrics.join(", ")))
        };
    }
    let first = metrics.first().ok_or("the baseline has no measurements")?;
    let main = main_metric_of(first.split('.').next().unwrap_or(first));
    Ok(if metrics.contains(&main.as_str()) { main } else { first.to_string() })
}

/// How the run was measured, as far as it can spoil a comparison.
pub fn conditions_of(run: &RunResult) -> RunConditions {
    let measured = |cpu: usize| run.experiment.cpus.is_empty() || run.experiment.cpus.contains(&cpu);
    let mut steal: Option<WorstShare> = None;
    for scenario in &run.scenarios {
        for cpu in scenario.activity.iter().flat_map(|a| &a.cpus).filter(|c| measured(c.cpu)) {
            if steal.as_ref().is_none_or(|w| cpu.steal > w.share) {
                steal = Some(WorstShare { share: cpu.steal, cpu: cpu.cpu, scenario: scenario.name.clone() });
            }
        }
    }
    let mut throttling: Option<WorstShare> = None;
    for cpu in run.noise.iter().flat_map(|n| &n.cpus).filter(|c| c.runtime_ns > 0) {
        let share = cpu.ns_of(crate::noise::NoiseCauseKind::RtThrottling) as f64 / cpu.runtime_ns as f64;
        if throttling.as_ref().is_none_or(|w| share > w.share) {
            throttling = Some(WorstShare { share, cpu: cpu.cpu, scenario: cpu.scenario.clone() });
        }
    }
    RunConditions {
        interrupted: run.interrupted || run.scenarios.iter().any(|s| s.interrupted),
        load_failures: run
            .scenarios
            .iter()
            .filter_map(|s| {
                s.load_failure
                    .as_ref()
                    .map(|why| format!("scenario {:?} was not measured under its loads: {why}", s.name))
            })
            .collect(),
        steal,
        throttling,
        real_time_results: run.realtime.real_time_results,
    }
}

/// Checks that the baseline can serve: it has the metric, and every statistic asked for
/// can be judged in it (enough samples, not censored) in each scenario that has the
/// metric, and it was not disturbed. The metric on success; every problem otherwise.
pub fn check_baseline(baseline: &RunResult, settings: &GateSettings) -> Result<String, Vec<String>> {
    let metric = gate_metric(baseline, settings.metric.as_deref()).map_err(|e| vec![e])?;
    let mut problems = Vec::new();
    let mut judged = 0;
    for scenario in &baseline.scenarios {
        match GateSeries::of(baseline, &scenario.name, &metric) {
            Ok(Some(s)) => {
                judged += 1;
                problems.extend(baseline_problems(&scenario.name, &s.series(), &settings.statistics));
            }
            Ok(None) => {}
            Err(e) => problems.push(e),
        }
    }
    if judged == 0 && problems.is_empty() {
        problems.push(format!("the baseline has no samples of {metric}"));
    }
    let conditions = conditions_of(baseline);
    problems.extend(conditions.disturbances(&settings.limits, conditions.real_time_results));
    if problems.is_empty() {
        Ok(metric)
    } else {
        Err(problems)
    }
}

/// Judges `candidate` against `baseline` (which [`check_baseline`] has passed, giving
/// `metric`): every scenario of the baseline with samples of the metric, each statistic.
pub fn judge(baseline: &RunResult, candidate: &RunResult, metric: &str, settings: &GateSettings) -> GateReport {
    let mut problems = conditions_of(candidate).disturbances(&settings.limits, baseline.realtime.real_time_results);
    let mut statistics = Vec::new();
    for (b_index, scenario) in baseline.scenarios.iter().enumerate() {
        let Ok(Some(base)) = GateSeries::of(baseline, &scenario.name, metric) else { continue };
        let Some(c_index) = candidate.scenarios.iter().position(|s| s.name == scenario.name) else {
            problems.push(format!("no scenario {:?} (the baseline's) in the candidate", scenario.name));
            continue;
        };
        let cand = match GateSeries::of(candidate, &scenario.name, metric) {
            Ok(Some(c)) => c,
            Ok(None) => {
                problems.push(format!(
                    "no samples of {metric} in scenario {:?}: the probe measured nothing",
                    scenario.name
                ));
                continue;
            }
            Err(e) => {
                problems.push(e);
                continue;
            }
        };
        // The configurations' places in `rtlab compare BASELINE CANDIDATE`, for its seeds.
        let indices = Indices { baseline: b_index, candidate: baseline.scenarios.len() + c_index };
        for statistic in &settings.statistics {
            statistics.push(judge_statistic(
                &scenario.name,
                metric,
                *statistic,
                &base.series(),
                &cand.series(),
                settings.tolerance,
                indices,
            ));
        }
    }
    GateReport::new(metric, settings.tolerance, statistics, problems)
}
