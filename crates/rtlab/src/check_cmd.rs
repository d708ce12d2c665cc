//! `rtlab check TASKSET [--platform RESULT]...`: schedulability of a task set with the
//! platform's measured activation latency and task-switch time (docs/check.md).
//!
//! The platform is one or more saved runs: each `--platform` is a results directory (one
//! run) or a suite directory (the run of every condition). Per run and figure the metric is
//! the first it measured of the preference order: the activation latency from the periodic
//! wake-up latency (timer.latency, else jitter.latency, else rtla's timerlat.thread), the
//! task-switch time from switch.futex (else another switch.* metric). The figure is the
//! worst value of the chosen statistic, all CPUs combined, over every run and scenario, and
//! the output names the run (and the suite condition) and scenario it came from. `--jitter`
//! and `--switch` override them. The analysis itself is rtlab_analysis::schedulability.

use crate::cli::{CheckArgs, CheckFormat};
use crate::errors::{usage, EXIT_NOT_MET, EXIT_OK};
use anyhow::Context;
use rtlab_analysis::evt::PwcetConfig;
use rtlab_analysis::requirement::Statistic;
use rtlab_analysis::schedulability::{analyse, tolerated_activation_latency, Analysis, BoundBasis, Overheads};
use rtlab_analysis::taskset::{TaskSet, TaskSetFormat};
use rtlab_analysis::units::{format_period, format_us, parse_time_ns, thousands};
use rtlab_report::tables::{text_table, Table};
use rtlab_results::run::{Measurement, RunResult};
use rtlab_results::suite::{LoadedSuite, SuiteRecord};
use serde::Serialize;
use std::fmt::Write;
use std::path::Path;

/// Schema of `rtlab check --format json`.
pub const CHECK_SCHEMA: &str = "rtlab.check/1";

/// Metrics whose samples are the activation latency of a periodic task, in order of
/// preference: the timer probe's, the jitter probe's (the same wake-up at several periods),
/// rtla timerlat's thread latency (imported).
const ACTIVATION_METRICS: [&str; 3] = ["timer.latency", "jitter.latency", "timerlat.thread"];

/// The switch probe's main metric; any other `switch.*` metric stands in for it.
const SWITCH_METRIC: &str = "switch.futex";

pub fn cmd_check(args: &CheckArgs) -> anyhow::Result<u8> {
    let shown = args.taskset.display().to_string();
    let set = crate::probe_plan::read_taskset(&args.taskset, &shown)?;

    let statistic = match &args.jitter_stat {
        None => Statistic::Max,
        Some(_) if args.platform.is_empty() => {
            return Err(usage("--jitter-stat chooses the statistic of the --platform run's figures: give --platform"))
        }
        Some(text) => parse_jitter_stat(text)?,
    };
    let jitter_flag = args.jitter.as_deref().map(|t| flag_time("--jitter", t)).transpose()?;
    let switch_flag = args.switch.as_deref().map(|t| flag_time("--switch", t)).transpose()?;
    let platform = if args.platform.is_empty() { None } else { Some(Platform::load(&args.platform)?) };

    let activation = match (jitter_flag, &platform) {
        (Some(ns), _) => Figure::by_hand("--jitter", ns),
        (None, Some(platform)) => {
            match worst_figure(&platform.candidates, |_| ACTIVATION_METRICS.to_vec(), statistic)? {
                Some(figure) => figure,
                None => {
                    return Err(usage(format!(
                        "{} ({}): measure one with `rtlab run --probe timer`, or give --jitter",
                        platform.none_measured("periodic wake-up latency"),
                        ACTIVATION_METRICS.join(", ")
                    )))
                }
            }
        }
        (None, None) => Figure::none("neither --platform nor --jitter given"),
    };
    let switch = match (switch_flag, &platform) {
        (Some(ns), _) => Figure::by_hand("--switch", ns),
        (None, Some(platform)) => worst_figure(&platform.candidates, switch_metrics, statistic)?.unwrap_or_else(|| {
            let reason = if platform.is_one_run() {
                "the platform run has no switch.* measurement".to_string()
            } else {
                format!("none of the {} platform runs has a switch.* measurement", platform.candidates.len())
            };
            Figure::none(&format!("{reason}; measure it with `rtlab run --probe switch`"))
        }),
        (None, None) => Figure::none("neither --platform nor --switch given"),
    };

    // A figure that is not defensible is charged as 0: the analysis then gives the response
    // times without it, which only grow with it.
    let overheads = Overheads { activation_latency_ns: activation.ns, switch_ns: switch.ns };
    let analysis = analyse(&set, overheads);
    let tolerated = tolerated_activation_latency(&set, overheads.switch_ns);
    let refusals: Vec<String> = [&activation, &switch].into_iter().filter_map(Figure::refusal).collect();
    // A deadline missed even without the undecided figures is missed with them.
    let (verdict, undecided) = match (analysis.schedulable, refusals.is_empty()) {
        (false, _) => (CheckVerdict::NotSchedulable, None),
        (true, true) => (CheckVerdict::Schedulable, None),
        (true, false) => (CheckVerdict::Undecided, Some(refusals.join("; "))),
    };
    let report = CheckReport {
        schema: CHECK_SCHEMA,
        taskset: TasksetInfo { file: shown, name: set.name.clone(), format: set.format, tasks: set.tasks.len() },
        platform: platform.as_ref().map(|p| p.info(statistic)),
        margin: tolerated.and_then(|t| margin(t, activation.ns)),
        tolerated_activation_latency_ns: tolerated,
        activation_latency: activation,
        switch,
        schedulable: verdict == CheckVerdict::Schedulable,
        verdict,
        undecided,
        analysis,
    };
    let output = match args.format {
        CheckFormat::Json => serde_json::to_string_pretty(&report).context("cannot encode the JSON output")? + "\n",
        CheckFormat::Terminal => terminal(&report, &set, statistic),
    };
    crate::print(&output)?;
    // UNDECIDED exits as NOT SCHEDULABLE does: not shown to be schedulable.
    Ok(if report.schedulable { EXIT_OK } else { EXIT_NOT_MET })
}

/// What `rtlab check` concludes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
enum CheckVerdict {
    Schedulable,
    NotSchedulable,
    /// Schedulable without a platform figure that is not defensible (a `pwcet(P)` whose
    /// analysis refuses): whether it is with it cannot be told. Exit 1.
    Undecided,
}

impl CheckVerdict {
    fn word(self) -> &'static str {
        match self {
            CheckVerdict::Schedulable => "SCHEDULABLE",
            CheckVerdict::NotSchedulable => "NOT SCHEDULABLE",
            CheckVerdict::Undecided => "UNDECIDED",
        }
    }
}

/// Everything `rtlab check --format json` prints (docs/check.md).
#[derive(Debug, Serialize)]
struct CheckReport {
    schema: &'static str,
    taskset: TasksetInfo,
    /// The --platform run, if given.
    platform: Option<PlatformInfo>,
    /// The activation latency charged to every task's release jitter.
    activation_latency: Figure,
    /// The task-switch time CS charged twice per job.
    switch: Figure,
    /// Largest activation latency that keeps every deadline (with `switch` charged).
    tolerated_activation_latency_ns: Option<u64>,
    /// tolerated / charged activation latency; None when either is missing or 0.
    margin: Option<f64>,
    /// The verdict is SCHEDULABLE: every task meets its deadline with every figure charged
    /// (the exit code: 0, else 1). False when undecided.
    schedulable: bool,
    verdict: CheckVerdict,
    /// Why the verdict is undecided: each figure that is not defensible, with its reasons;
    /// null otherwise.
    undecided: Option<String>,
    analysis: Analysis,
}

#[derive(Debug, Serialize)]
struct TasksetInfo {
    file: String,
    name: Option<String>,
    format: TaskSetFormat,
    tasks: usize,
}

/// `platform` of the JSON output. `run`, `label`, `simulated` and `real_time_results` are
/// those of rtlab.check/1's first version (one results directory); `inputs` and `sources`
/// describe several.
#[derive(Debug, Serialize)]
struct PlatformInfo {
    /// The path given, when one --platform was (a results directory or a suite directory).
    run: Option<String>,
    /// Its label: the run's, or the suite's (None with several --platform).
    label: Option<String>,
    statistic: String,
    /// Some source run is simulated.
    simulated: bool,
    /// Every source run has real-time results.
    real_time_results: bool,
    /// The --platform paths, in the order given.
    inputs: Vec<InputInfo>,
    /// Every run the figures were taken from (a suite's: one per condition with a run).
    sources: Vec<SourceInfo>,
}

/// One --platform path.
#[derive(Debug, Clone, Serialize)]
struct InputInfo {
    path: String,
    /// "run" or "suite".
    kind: &'static str,
    /// The run's label, or the suite's.
    label: String,
    /// The suite's name (null for a run).
    suite: Option<String>,
    /// A suite's conditions whose runs are sources (empty for a run).
    conditions: Vec<String>,
    /// A suite's conditions without a run (failed or not run): nothing is taken from them.
    conditions_without_run: Vec<String>,
}

/// One run the platform figures may come from.
#[derive(Debug, Clone, Serialize)]
struct SourceInfo {
    #[serde(flatten)]
    origin: Origin,
    simulated: bool,
    real_time_results: bool,
}

/// Where a run comes from: its results directory and label, and for a suite's run its
/// condition and the suite's name.
#[derive(Debug, Clone, PartialEq, Serialize)]
struct Origin {
    /// The results directory (for a plain run: the path given).
    run: String,
    label: String,
    condition: Option<String>,
    suite: Option<String>,
}

impl Origin {
    /// `condition "jitter-ping"` or `results/a`: in the list of candidates.
    fn short(&self) -> String {
        match &self.condition {
            Some(condition) => format!("condition {condition:?}"),
            None => self.run.clone(),
        }
    }

    /// `condition "jitter-ping" of suite dodiu-2010 (results/d/jitter-ping, label "stock-jitter-ping")`
    /// or `run results/a (label "a")`.
    fn long(&self) -> String {
        match (&self.condition, &self.suite) {
            (Some(condition), Some(suite)) => {
                format!("condition {condition:?} of suite {suite} ({}, label {:?})", self.run, self.label)
            }
            _ => format!("run {} (label {:?})", self.run, self.label),
        }
    }
}

/// A run of the platform, loaded.
struct Candidate {
    origin: Origin,
    run: RunResult,
}

/// The --platform paths read: every run the figures may come from.
struct Platform {
    inputs: Vec<InputInfo>,
    candidates: Vec<Candidate>,
}

impl Platform {
    /// Reads every --platform path: a suite directory (or its suite.json) gives the run of
    /// each condition that has one, anything else is read as one run (a results directory
    /// or its run.json). Suites and runs may be mixed.
    fn load(paths: &[std::path::PathBuf]) -> anyhow::Result<Platform> {
        let mut platform = Platform { inputs: Vec::new(), candidates: Vec::new() };
        for path in paths {
            let shown = path.display().to_string();
            if SuiteRecord::is_suite(path) {
                platform.add_suite(path, &shown)?;
            } else if path.is_dir() && !path.join("run.json").exists() {
                return Err(usage(format!(
                    "--platform {shown}: neither a results directory (no run.json) nor a suite directory (no suite.json)"
                )));
            } else {
                let run = RunResult::load(path).map_err(|e| usage(one_line(&format!("--platform {e}"))))?;
                platform.inputs.push(InputInfo {
                    path: shown.clone(),
                    kind: "run",
                    label: run.label.clone(),
                    suite: None,
                    conditions: Vec::new(),
                    conditions_without_run: Vec::new(),
                });
                let origin = Origin { run: shown, label: run.label.clone(), condition: None, suite: None };
                platform.candidates.push(Candidate { origin, run });
            }
        }
        Ok(platform)
    }

    fn add_suite(&mut self, path: &Path, shown: &str) -> anyhow::Result<()> {
        let suite = LoadedSuite::load(path).map_err(|e| usage(one_line(&format!("--platform {e}"))))?;
        let name = suite.record.suite.name.clone();
        let mut with_run = Vec::new();
        let mut without_run = Vec::new();
        for (condition, run) in suite.record.conditions.iter().zip(suite.runs) {
            let Some(run) = run else {
                without_run.push(condition.name.clone());
                continue;
            };
            with_run.push(condition.name.clone());
            let origin = Origin {
                run: suite.dir.join(&condition.directory).display().to_string(),
                label: run.label.clone(),
                condition: Some(condition.name.clone()),
                suite: Some(name.clone()),
            };
            self.candidates.push(Candidate { origin, run });
        }
        if with_run.is_empty() {
            return Err(usage(format!(
                "--platform {shown}: no condition of suite {name} has a run (every one failed or was not run)"
            )));
        }
        self.inputs.push(InputInfo {
            path: shown.to_string(),
            kind: "suite",
            label: suite.record.label.clone(),
            suite: Some(name),
            conditions: with_run,
            conditions_without_run: without_run,
        });
        Ok(())
    }

    /// One results directory: the output reads as it always has.
    fn is_one_run(&self) -> bool {
        self.inputs.len() == 1 && self.inputs[0].kind == "run"
    }

    /// "--platform results/a: the run measured no WHAT", "--platform results/d: no condition
    /// of suite dodiu-2010 measured a WHAT", "--platform: none of the 3 runs of 2 inputs
    /// measured a WHAT": an error.
    fn none_measured(&self, what: &str) -> String {
        match self.inputs.as_slice() {
            [one] if one.kind == "run" => format!("--platform {}: the run measured no {what}", one.path),
            [one] => format!(
                "--platform {}: no condition of suite {} measured a {what}",
                one.path,
                one.suite.as_deref().unwrap_or_default()
            ),
            inputs => format!(
                "--platform: none of the {} runs of the {} inputs measured a {what}",
                self.candidates.len(),
                inputs.len()
            ),
        }
    }

    fn info(&self, statistic: Statistic) -> PlatformInfo {
        let one = (self.inputs.len() == 1).then(|| &self.inputs[0]);
        PlatformInfo {
            run: one.map(|i| i.path.clone()),
            label: one.map(|i| i.label.clone()),
            statistic: statistic.to_string(),
            simulated: self.candidates.iter().any(|c| c.run.simulated),
            real_time_results: self.candidates.iter().all(|c| c.run.realtime.real_time_results),
            inputs: self.inputs.clone(),
            sources: self
                .candidates
                .iter()
                .map(|c| SourceInfo {
                    origin: c.origin.clone(),
                    simulated: c.run.simulated,
                    real_time_results: c.run.realtime.real_time_results,
                })
                .collect(),
        }
    }
}

/// An error message on one line (a serde message may hold a line break).
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A platform figure charged by the analysis and where it comes from.
#[derive(Debug, Clone, Serialize)]
struct Figure {
    ns: u64,
    #[serde(flatten)]
    source: Source,
}

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "from", rename_all = "kebab-case")]
enum Source {
    /// Measured in a --platform run: the worst of them.
    Platform(Box<Measured>),
    /// Given by hand.
    Flag { flag: String },
    /// Not charged: 0.
    None { reason: String },
    /// Not charged (0): the statistic (a pWCET) is not defensible in some run and scenario
    /// that measured the figure, so the worst cannot be told.
    Undecided(Box<Refused>),
}

/// A platform figure that cannot be quoted: the runs and scenarios whose pWCET is not
/// defensible, and the values of those where it is.
#[derive(Debug, Clone, Serialize)]
struct Refused {
    statistic: String,
    /// Every run and scenario whose statistic is not defensible, in order.
    refused: Vec<RefusedValue>,
    /// The runs' defensible values (each its worst defensible scenario's), as for a
    /// measured figure; they do not bound the figure.
    candidates: Vec<RunValue>,
}

/// One run and scenario whose pWCET is not defensible.
#[derive(Debug, Clone, Serialize)]
struct RefusedValue {
    metric: String,
    scenario: String,
    samples: u64,
    /// "not defensible from this run — <reasons>; <remedies>"
    refusal: String,
    #[serde(flatten)]
    origin: Origin,
}

/// A platform figure: the worst of the candidate runs' values.
#[derive(Debug, Clone, Serialize)]
struct Measured {
    /// The metric, statistic, scenario and run it was taken from.
    #[serde(flatten)]
    worst: RunValue,
    statistic: String,
    /// Every run that measured the figure, with its value (its worst scenario's), in the
    /// order of the --platform paths and a suite's conditions.
    candidates: Vec<RunValue>,
}

/// One run's value of a figure: its preferred metric's statistic in its worst scenario.
#[derive(Debug, Clone, Serialize)]
struct RunValue {
    metric: String,
    /// The scenario where the statistic is worst.
    scenario: String,
    samples: u64,
    /// The statistic as measured (a latency can be negative: the figure is then 0).
    measured_ns: i64,
    #[serde(flatten)]
    origin: Origin,
}

impl Figure {
    fn by_hand(flag: &str, ns: u64) -> Figure {
        Figure { ns, source: Source::Flag { flag: flag.to_string() } }
    }

    fn none(reason: &str) -> Figure {
        Figure { ns: 0, source: Source::None { reason: reason.to_string() } }
    }

    /// "48.0 µs: timer.latency p99.999, all CPUs, worst scenario \"idle\" (120,000 samples)";
    /// with several runs (`one_run` false) the run (and condition) is named before the scenario.
    fn describe(&self, one_run: bool) -> String {
        match &self.source {
            Source::Platform(measured) => {
                let RunValue { metric, scenario, samples, measured_ns, origin } = &measured.worst;
                let clamped = if *measured_ns < 0 {
                    format!(" (measured {} µs, charged as 0)", format_us(*measured_ns))
                } else {
                    String::new()
                };
                let run = if one_run { String::new() } else { format!("{}, ", origin.long()) };
                format!(
                    "{} µs{clamped}: {metric} {}, all CPUs, {run}worst scenario {scenario:?} ({} samples)",
                    format_us(signed(self.ns)),
                    measured.statistic,
                    thousands(*samples)
                )
            }
            Source::Flag { flag } => format!("{} µs (given by {flag})", format_us(signed(self.ns))),
            Source::None { reason } => format!("0: {reason}"),
            Source::Undecided(refused) => {
                let first = refused.refused.first().map(|r| refused_text(&refused.statistic, r, one_run));
                let more = match refused.refused.len() {
                    0 | 1 => String::new(),
                    n => format!(" (and {} more, below)", n - 1),
                };
                format!("not charged: {}{more}", first.unwrap_or_default())
            }
        }
    }

    /// Why the figure is undecided, one clause per run and scenario whose statistic is not
    /// defensible; None when it is not undecided.
    fn refusal(&self) -> Option<String> {
        let Source::Undecided(refused) = &self.source else { return None };
        let one_run = refused.refused.iter().all(|r| r.origin == refused.refused[0].origin);
        let texts: Vec<String> = refused.refused.iter().map(|r| refused_text(&refused.statistic, r, one_run)).collect();
        Some(texts.join("; "))
    }
}

/// "timer.latency pwcet(1e-9) under \"idle\": not defensible from this run — …" (with the
/// run named when `one_run` is false).
fn refused_text(statistic: &str, r: &RefusedValue, one_run: bool) -> String {
    let run = if one_run { String::new() } else { format!(" of {}", r.origin.long()) };
    format!("{} {statistic} under {:?}{run}: {}", r.metric, r.scenario, r.refusal.trim_end_matches('.'))
}

/// `--jitter-stat`: max, pNN[.N] or pwcet(P) (the statistics of the requirement grammar that
/// bound a worst case; the mean does not).
fn parse_jitter_stat(text: &str) -> anyhow::Result<Statistic> {
    let bad = |why: &str| {
        usage(format!("--jitter-stat {text:?}: {why}; use max, pNN[.N] (p99.999) or pwcet(P) (pwcet(1e-9))"))
    };
    let compact: String = text.trim().to_ascii_lowercase().chars().filter(|c| !c.is_whitespace()).collect();
    match rtlab_analysis::requirement::parse_statistic(&compact) {
        Ok(Statistic::Mean) => Err(bad("the mean does not bound the latencies a task may meet")),
        Ok(statistic) => Ok(statistic),
        Err(why) => Err(bad(&why)),
    }
}

fn flag_time(flag: &str, text: &str) -> anyhow::Result<u64> {
    if text.trim_start().starts_with('-') {
        return Err(usage(format!("{flag} {text:?}: a time cannot be negative")));
    }
    parse_time_ns(text).map_err(|e| usage(format!("{flag}: {e}")))
}

/// The switch probe's main metric, then the run's other switch.* metrics.
fn switch_metrics(run: &RunResult) -> Vec<&str> {
    let mut metrics: Vec<&str> = vec![SWITCH_METRIC];
    metrics.extend(run.metrics().into_iter().filter(|m| m.starts_with("switch.") && *m != SWITCH_METRIC));
    metrics
}

/// The figure over every candidate run: per run, the first of `metrics_of(run)` it measured
/// (the statistic over all CPUs of each scenario, the worst scenario's); then the worst run's
/// (the first of equal ones). Undecided when the statistic (a pWCET) is not defensible in
/// some run and scenario. None when no run measured any of them.
fn worst_figure<'a>(
    candidates: &'a [Candidate],
    metrics_of: impl Fn(&'a RunResult) -> Vec<&'a str>,
    statistic: Statistic,
) -> anyhow::Result<Option<Figure>> {
    let mut values: Vec<RunValue> = Vec::new();
    let mut refused: Vec<RefusedValue> = Vec::new();
    for candidate in candidates {
        let (value, run_refused) = run_value(candidate, &metrics_of(&candidate.run), statistic)?;
        values.extend(value);
        refused.extend(run_refused);
    }
    if !refused.is_empty() {
        return Ok(Some(Figure {
            ns: 0,
            source: Source::Undecided(Box::new(Refused {
                statistic: statistic.to_string(),
                refused,
                candidates: values,
            })),
        }));
    }
    let mut worst: Option<&RunValue> = None;
    for value in &values {
        if worst.is_none_or(|w| value.measured_ns > w.measured_ns) {
            worst = Some(value);
        }
    }
    let Some(worst) = worst.cloned() else { return Ok(None) };
    Ok(Some(Figure {
        ns: u64::try_from(worst.measured_ns).unwrap_or(0),
        source: Source::Platform(Box::new(Measured { worst, statistic: statistic.to_string(), candidates: values })),
    }))
}

/// One run's value: the first of `metrics` it measured, in the scenario where the statistic
/// (all CPUs combined) is worst, and that metric's scenarios whose statistic (a pWCET) is not
/// defensible. (None, []) when the run measured none of them.
fn run_value(
    candidate: &Candidate,
    metrics: &[&str],
    statistic: Statistic,
) -> anyhow::Result<(Option<RunValue>, Vec<RefusedValue>)> {
    let run = &candidate.run;
    for metric in metrics {
        let mut worst: Option<(i64, &str, u64)> = None;
        let mut refused = Vec::new();
        for scenario in &run.scenarios {
            let measurements: Vec<&Measurement> =
                run.measurements_of(&scenario.name, metric).filter(|m| m.count > 0).collect();
            if measurements.is_empty() {
                continue;
            }
            let samples = measurements.iter().map(|m| m.count).sum();
            let value = statistic_of(&measurements, statistic).with_context(|| {
                format!("--platform {}: {metric} in scenario {:?}", candidate.origin.run, scenario.name)
            })?;
            let value = match value {
                StatisticValue::Value(value) => value,
                StatisticValue::None => continue,
                StatisticValue::NotDefensible(refusal) => {
                    refused.push(RefusedValue {
                        metric: metric.to_string(),
                        scenario: scenario.name.clone(),
                        samples,
                        refusal,
                        origin: candidate.origin.clone(),
                    });
                    continue;
                }
            };
            if worst.is_none_or(|(v, _, _)| value > v) {
                worst = Some((value, &scenario.name, samples));
            }
        }
        let value = worst.map(|(measured_ns, scenario, samples)| RunValue {
            metric: metric.to_string(),
            scenario: scenario.to_string(),
            samples,
            measured_ns,
            origin: candidate.origin.clone(),
        });
        if value.is_some() || !refused.is_empty() {
            return Ok((value, refused));
        }
    }
    Ok((None, Vec::new()))
}

/// A statistic of one metric over several CPUs.
enum StatisticValue {
    /// ns (rounded up for pWCET: a bound).
    Value(i64),
    /// No value (no samples; a fitted tail that gives none at the probability).
    None,
    /// A pWCET that is not defensible: the analysis' refusal.
    NotDefensible(String),
}

/// The statistic of one metric over several CPUs.
fn statistic_of(measurements: &[&Measurement], statistic: Statistic) -> anyhow::Result<StatisticValue> {
    if let Statistic::Pwcet(probability) = statistic {
        let config = PwcetConfig { probabilities: vec![probability], ..PwcetConfig::default() };
        let tail = match rtlab_report::pwcet::analyse(measurements, &config) {
            Ok(tail) => tail,
            // Too little data for any fit: as undecided as a refused estimate.
            Err(rtlab_report::ReportError::Analysis(rtlab_analysis::AnalysisError::Pwcet(why))) => {
                return Ok(StatisticValue::NotDefensible(format!(
                    "not defensible from this run — the tail analysis could not be made: {why}"
                )))
            }
            Err(e) => return Err(usage(format!("cannot estimate pwcet({probability:e}): {e}"))),
        };
        return Ok(match tail.defensible_pwcet_ns(probability) {
            Ok(Some(ns)) => StatisticValue::Value(ns.ceil() as i64),
            Ok(None) => StatisticValue::None,
            Err(refusal) => StatisticValue::NotDefensible(refusal),
        });
    }
    let combined = rtlab_report::digest::combine(measurements)?;
    let value = combined.histogram.as_ref().and_then(|histogram| statistic.of(histogram, &combined.moments));
    Ok(value.map_or(StatisticValue::None, StatisticValue::Value))
}

/// A percentile of fewer samples than it needs to differ from the maximum is the maximum:
/// "timer.latency: p99.999 of 19,979 samples is their maximum; it takes 100,000 to tell them apart".
fn thin_percentile(figure: &Figure, statistic: Statistic) -> Option<String> {
    let (Source::Platform(measured), Statistic::Percentile(p)) = (&figure.source, statistic) else {
        return None;
    };
    let RunValue { metric, samples, .. } = &measured.worst;
    let needed = (1.0 / (1.0 - p / 100.0)).round();
    ((*samples as f64) < needed).then(|| {
        format!(
            "{metric}: {statistic} of {} samples is their maximum; it takes {} to tell them apart",
            thousands(*samples),
            thousands(needed as u64)
        )
    })
}

fn margin(tolerated: u64, charged: u64) -> Option<f64> {
    (charged > 0).then(|| tolerated as f64 / charged as f64)
}

fn signed(ns: u64) -> i64 {
    i64::try_from(ns).unwrap_or(i64::MAX)
}

fn us_or_dash(ns: Option<i64>) -> String {
    ns.map_or_else(|| "-".to_string(), format_us)
}

/// The terminal report: where the figures come from, the per-task table, the set's tests,
/// the tolerated activation latency, the verdict.
fn terminal(report: &CheckReport, set: &TaskSet, statistic: Statistic) -> String {
    let a = &report.analysis;
    let mut out = String::new();
    let name = report.taskset.name.as_deref().map(|n| format!(", {n:?}")).unwrap_or_default();
    let _ = writeln!(
        out,
        "Task set: {} ({}, {} task{}{name})",
        report.taskset.file,
        report.taskset.format.describe(),
        report.taskset.tasks,
        if report.taskset.tasks == 1 { "" } else { "s" }
    );
    let one_run = report.platform.as_ref().is_none_or(|p| p.inputs.len() == 1 && p.inputs[0].kind == "run");
    if let Some(p) = &report.platform {
        platform_lines(&mut out, p);
    }
    let _ = writeln!(out, "Activation latency (added to every J): {}", report.activation_latency.describe(one_run));
    if let Source::Platform(measured) = &report.activation_latency.source {
        let metric = &measured.worst.metric;
        if metric != ACTIVATION_METRICS[0] {
            let which = if one_run { "the run".to_string() } else { measured.worst.origin.short() };
            let _ = writeln!(
                out,
                "  ({which} has no {}: {metric}, the same periodic wake-up, stands in)",
                ACTIVATION_METRICS[0]
            );
        }
    }
    if let Some(note) = candidates_note(&report.activation_latency) {
        let _ = writeln!(out, "  ({note})");
    }
    let _ = writeln!(out, "Task switch CS (charged twice per job): {}", report.switch.describe(one_run));
    if let Some(note) = candidates_note(&report.switch) {
        let _ = writeln!(out, "  ({note})");
    }
    for figure in [&report.activation_latency, &report.switch] {
        for line in refused_lines(figure, one_run) {
            let _ = writeln!(out, "  ({line})");
        }
    }
    for figure in [&report.activation_latency, &report.switch] {
        if let Some(note) = thin_percentile(figure, statistic) {
            let _ = writeln!(out, "  ({note})");
        }
    }
    let _ = writeln!(out, "Priorities: {}", a.order_rule);
    out.push('\n');

    let with_blocking = a.tasks.iter().any(|t| t.blocking_ns > 0);
    let with_jitter = a.tasks.iter().any(|t| t.release_jitter_ns > 0);
    let mut columns: Vec<String> =
        ["task", "prio", "C", "T", "D", "u", "ch", "L (µs)"].iter().map(|s| s.to_string()).collect();
    if with_blocking {
        columns.push("B (µs)".into());
    }
    if with_jitter {
        columns.push("J (µs)".into());
    }
    columns.extend(["R (µs)", "slack (µs)", "verdict"].iter().map(|s| s.to_string()));
    let rows: Vec<Vec<String>> = a
        .tasks
        .iter()
        .map(|t| {
            let mut row = vec![
                t.name.clone(),
                t.priority.to_string(),
                format_period(signed(t.wcet_ns)),
                format_period(signed(t.period_ns)),
                format_period(signed(t.deadline_ns)),
                format!("{:.3}", t.utilization),
                format!("{:.3}", t.density),
                format_us(t.laxity_ns),
            ];
            if with_blocking {
                row.push(format_us(signed(t.blocking_ns)));
            }
            if with_jitter {
                row.push(format_us(signed(t.release_jitter_ns)));
            }
            row.push(t.response_ns.map_or_else(|| "> D".to_string(), |r| format_us(signed(r))));
            row.push(us_or_dash(t.slack_ns));
            row.push(if t.schedulable { "ok".into() } else { "MISSES".into() });
            row
        })
        .collect();
    let table = Table {
        id: "check".into(),
        title: "Response-time analysis (highest priority first)".into(),
        source: None,
        columns,
        csv_rows: rows.clone(),
        rows,
        notes: vec![],
    };
    out.push_str(&text_table(&table));
    out.push('\n');

    let n = set.tasks.len();
    let _ = writeln!(out, "U = {:.3}, CH = {:.3} (n = {n})", a.utilization, a.density);
    let (quantity, value, product) = match a.bound_basis {
        BoundBasis::Utilization => ("U", a.utilization, "Π(u+1)"),
        BoundBasis::Density => ("CH", a.density, "Π(ch+1)"),
    };
    if a.bounds_apply {
        let basis = match a.bound_basis {
            BoundBasis::Utilization => "sufficient test, without overheads",
            BoundBasis::Density => "sufficient test on C/D as some D < T, without overheads",
        };
        let judged = |passed: bool| if passed { "passes" } else { "inconclusive" };
        let _ = writeln!(
            out,
            "Liu-Layland: {quantity} {value:.3} {} {:.4}: {} ({basis})",
            if a.liu_layland_passed { "≤" } else { ">" },
            a.liu_layland_bound,
            judged(a.liu_layland_passed)
        );
        let _ = writeln!(
            out,
            "Hyperbolic: {product} {:.3} {} 2: {} ({basis})",
            a.hyperbolic_product,
            if a.hyperbolic_passed { "≤" } else { ">" },
            judged(a.hyperbolic_passed)
        );
    } else {
        let why = "not applicable: the priorities are not rate-/deadline-monotonic";
        let _ = writeln!(out, "Liu-Layland: {quantity} {value:.3}, bound {:.4}: {why}", a.liu_layland_bound);
        let _ = writeln!(out, "Hyperbolic: {product} {:.3}, bound 2: {why}", a.hyperbolic_product);
    }
    let missing: Vec<&str> = a.tasks.iter().filter(|t| !t.schedulable).map(|t| t.name.as_str()).collect();
    if missing.is_empty() {
        let _ = writeln!(out, "Response-time analysis: every task meets its deadline (exact)");
    } else {
        let tasks = if missing.len() == 1 { "1 task misses its deadline" } else { "tasks miss their deadlines" };
        let _ = writeln!(out, "Response-time analysis: {tasks}: {}", missing.join(", "));
    }
    let _ = writeln!(out, "{}", tolerance_line(report));
    match &report.undecided {
        Some(why) => {
            let _ = writeln!(out, "Verdict: {}: {}.", report.verdict.word(), why.trim_end_matches('.'));
        }
        None => {
            let _ = writeln!(out, "Verdict: {}", report.verdict.word());
        }
    }
    out
}

/// "Platform: results/vm (label \"vm\")" for one run; a suite and its conditions; one line
/// per input when there are several; and warnings for simulated runs or runs without
/// real-time results.
fn platform_lines(out: &mut String, p: &PlatformInfo) {
    let describe = |input: &InputInfo| match input.kind {
        "suite" => {
            let with_run = &input.conditions;
            let mut text = format!(
                "suite {} (label {:?}) in {}: the runs of {} condition{} ({})",
                input.suite.as_deref().unwrap_or_default(),
                input.label,
                input.path,
                with_run.len(),
                if with_run.len() == 1 { "" } else { "s" },
                with_run.join(", ")
            );
            if !input.conditions_without_run.is_empty() {
                let _ = write!(text, "; without a run: {}", input.conditions_without_run.join(", "));
            }
            text
        }
        _ => format!("{} (label {:?})", input.path, input.label),
    };
    match p.inputs.as_slice() {
        [one] => {
            let _ = writeln!(out, "Platform: {}", describe(one));
        }
        inputs => {
            let _ = writeln!(out, "Platform: {} inputs, each figure the worst of their runs", inputs.len());
            for input in inputs {
                let _ = writeln!(out, "  {}", describe(input));
            }
        }
    }
    let one_source = p.sources.len() == 1;
    let simulated: Vec<String> = p.sources.iter().filter(|s| s.simulated).map(|s| s.origin.short()).collect();
    let not_real_time: Vec<String> =
        p.sources.iter().filter(|s| !s.simulated && !s.real_time_results).map(|s| s.origin.short()).collect();
    if one_source && !simulated.is_empty() {
        let _ = writeln!(out, "  ! the platform run is simulated: its figures do not describe any machine");
    } else if simulated.len() == p.sources.len() {
        let _ = writeln!(out, "  ! the platform runs are simulated: their figures do not describe any machine");
    } else if !simulated.is_empty() {
        let _ = writeln!(out, "  ! simulated, so describing no machine: {}", simulated.join(", "));
    }
    if one_source && !not_real_time.is_empty() {
        let _ = writeln!(out, "  ! the platform run has no real-time results (no SCHED_FIFO or memory lock)");
    } else if !not_real_time.is_empty() {
        let _ =
            writeln!(out, "  ! without real-time results (no SCHED_FIFO or memory lock): {}", not_real_time.join(", "));
    }
}

/// With several runs that measured a figure: "the worst of 2 runs: condition \"jitter-idle\"
/// 22.0 µs, condition \"jitter-ping\" 812.3 µs" (each run's metric when they differ).
fn candidates_note(figure: &Figure) -> Option<String> {
    let Source::Platform(measured) = &figure.source else { return None };
    let candidates = &measured.candidates;
    if candidates.len() < 2 {
        return None;
    }
    let mixed = candidates.iter().any(|c| c.metric != candidates[0].metric);
    let values: Vec<String> = candidates
        .iter()
        .map(|c| {
            let metric = if mixed { format!(" {}", c.metric) } else { String::new() };
            format!("{}{metric} {} µs", c.origin.short(), format_us(c.measured_ns))
        })
        .collect();
    Some(format!("the worst of {} runs: {}", candidates.len(), values.join(", ")))
}

/// An undecided figure's runs and scenarios after the first (which its line names), then
/// the values of those where the statistic is defensible, which do not bound it.
fn refused_lines(figure: &Figure, one_run: bool) -> Vec<String> {
    let Source::Undecided(refused) = &figure.source else { return Vec::new() };
    let mut lines: Vec<String> =
        refused.refused.iter().skip(1).map(|r| refused_text(&refused.statistic, r, one_run)).collect();
    if !refused.candidates.is_empty() {
        let values: Vec<String> = refused
            .candidates
            .iter()
            .map(|c| {
                let run = if one_run { String::new() } else { format!("{} ", c.origin.short()) };
                format!("{run}{} under {:?} {} µs", c.metric, c.scenario, format_us(c.measured_ns))
            })
            .collect();
        lines.push(format!("defensible elsewhere, but no bound while the above is not: {}", values.join(", ")));
    }
    lines
}

/// "Activation latency: tolerates 212.0 µs; measured p99.999 48.0 µs: margin 4.4x".
fn tolerance_line(report: &CheckReport) -> String {
    let Some(tolerated) = report.tolerated_activation_latency_ns else {
        return "Activation latency: none tolerated (a deadline is missed even with no activation latency)".into();
    };
    // With CS not charged (not defensible) the tolerance is an upper bound.
    let at_most = if matches!(report.switch.source, Source::Undecided(_)) { "at most " } else { "" };
    let tolerates = format!("tolerates {at_most}{} µs", format_us(signed(tolerated)));
    let charged = &report.activation_latency;
    let what = match &charged.source {
        Source::Platform(measured) => {
            format!("measured {} {} µs", measured.statistic, format_us(signed(charged.ns)))
        }
        Source::Flag { flag } => format!("given {} µs ({flag})", format_us(signed(charged.ns))),
        Source::None { .. } => return format!("Activation latency: {tolerates}; none charged"),
        Source::Undecided(refused) => {
            return format!("Activation latency: {tolerates}; its {} is not defensible: no margin", refused.statistic)
        }
    };
    let margin = match report.margin {
        Some(m) => format!("margin {m:.1}x"),
        None => "margin unbounded (0 charged)".into(),
    };
    format!("Activation latency: {tolerates}; {what}: {margin}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_stat_grammar() {
        assert_eq!(parse_jitter_stat("max").unwrap(), Statistic::Max);
        assert_eq!(parse_jitter_stat("p99.999").unwrap(), Statistic::Percentile(99.999));
        assert_eq!(parse_jitter_stat("pwcet(1e-9)").unwrap(), Statistic::Pwcet(1e-9));
        for bad in ["mean", "p100", "p", "p9x", "pwcet(2)", "pwcet(x)", "", "median"] {
            assert!(parse_jitter_stat(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn a_percentile_of_too_few_samples_is_called_the_maximum() {
        let figure = |samples| {
            let worst = RunValue {
                metric: "timer.latency".into(),
                scenario: "idle".into(),
                samples,
                measured_ns: 1,
                origin: Origin { run: "r".into(), label: "r".into(), condition: None, suite: None },
            };
            Figure {
                ns: 1,
                source: Source::Platform(Box::new(Measured {
                    candidates: vec![worst.clone()],
                    worst,
                    statistic: "p99.999".into(),
                })),
            }
        };
        let p = Statistic::Percentile(99.999);
        assert_eq!(
            thin_percentile(&figure(99_999), p).as_deref(),
            Some("timer.latency: p99.999 of 99,999 samples is their maximum; it takes 100,000 to tell them apart")
        );
        assert_eq!(thin_percentile(&figure(100_000), p), None);
        assert_eq!(thin_percentile(&figure(10), Statistic::Max), None);
    }

    #[test]
    fn margins() {
        assert_eq!(margin(212, 48).map(|m| format!("{m:.1}")), Some("4.4".into()));
        assert_eq!(margin(212, 0), None);
    }
}
