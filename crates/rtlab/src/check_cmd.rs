//! `rtlab check TASKSET [--platform RESULT]`: schedulability of a task set with the
//! platform's measured activation latency and task-switch time (docs/check.md).
//!
//! The platform figures are taken from a saved run at the chosen statistic, all CPUs
//! combined, in the run's worst scenario for that figure: the activation latency from the
//! periodic wake-up latency (timer.latency, else jitter.latency, else rtla's timerlat.thread),
//! the task-switch time from switch.futex (else another switch.* metric). `--jitter` and
//! `--switch` override them. The analysis itself is rtlab_analysis::schedulability.

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
use serde::Serialize;
use std::fmt::Write;

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
        Some(_) if args.platform.is_none() => {
            return Err(usage("--jitter-stat chooses the statistic of the --platform run's figures: give --platform"))
        }
        Some(text) => parse_jitter_stat(text)?,
    };
    let jitter_flag = args.jitter.as_deref().map(|t| flag_time("--jitter", t)).transpose()?;
    let switch_flag = args.switch.as_deref().map(|t| flag_time("--switch", t)).transpose()?;
    let platform = match &args.platform {
        Some(path) => {
            let run = RunResult::load(path).map_err(|e| usage(format!("--platform {e}")))?;
            Some((path.display().to_string(), run))
        }
        None => None,
    };

    let activation = match (jitter_flag, &platform) {
        (Some(ns), _) => Figure::by_hand("--jitter", ns),
        (None, Some((path, run))) => match worst_figure(run, &ACTIVATION_METRICS, statistic)? {
            Some(figure) => figure,
            None => {
                return Err(usage(format!(
                    "--platform {path}: the run measured no periodic wake-up latency ({}): \
                     measure one with `rtlab run --probe timer`, or give --jitter",
                    ACTIVATION_METRICS.join(", ")
                )))
            }
        },
        (None, None) => Figure::none("neither --platform nor --jitter given"),
    };
    let switch = match (switch_flag, &platform) {
        (Some(ns), _) => Figure::by_hand("--switch", ns),
        (None, Some((_, run))) => {
            let mut metrics: Vec<&str> = vec![SWITCH_METRIC];
            metrics.extend(run.metrics().into_iter().filter(|m| m.starts_with("switch.") && *m != SWITCH_METRIC));
            worst_figure(run, &metrics, statistic)?.unwrap_or_else(|| {
                Figure::none("the platform run has no switch.* measurement; measure it with `rtlab run --probe switch`")
            })
        }
        (None, None) => Figure::none("neither --platform nor --switch given"),
    };

    let overheads = Overheads { activation_latency_ns: activation.ns, switch_ns: switch.ns };
    let analysis = analyse(&set, overheads);
    let tolerated = tolerated_activation_latency(&set, overheads.switch_ns);
    let report = CheckReport {
        schema: CHECK_SCHEMA,
        taskset: TasksetInfo { file: shown, name: set.name.clone(), format: set.format, tasks: set.tasks.len() },
        platform: platform.as_ref().map(|(path, run)| PlatformInfo {
            run: path.clone(),
            label: run.label.clone(),
            statistic: statistic.to_string(),
            simulated: run.simulated,
            real_time_results: run.realtime.real_time_results,
        }),
        margin: tolerated.and_then(|t| margin(t, activation.ns)),
        tolerated_activation_latency_ns: tolerated,
        activation_latency: activation,
        switch,
        schedulable: analysis.schedulable,
        analysis,
    };
    let output = match args.format {
        CheckFormat::Json => serde_json::to_string_pretty(&report).context("cannot encode the JSON output")? + "\n",
        CheckFormat::Terminal => terminal(&report, &set, statistic),
    };
    crate::print(&output)?;
    Ok(if report.schedulable { EXIT_OK } else { EXIT_NOT_MET })
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
    /// Every task meets its deadline (the exit code: 0, else 1).
    schedulable: bool,
    analysis: Analysis,
}

#[derive(Debug, Serialize)]
struct TasksetInfo {
    file: String,
    name: Option<String>,
    format: TaskSetFormat,
    tasks: usize,
}

#[derive(Debug, Serialize)]
struct PlatformInfo {
    run: String,
    label: String,
    statistic: String,
    simulated: bool,
    real_time_results: bool,
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
    /// Measured in the --platform run.
    Platform {
        metric: String,
        statistic: String,
        /// The scenario where the statistic is worst (the figure is taken from it).
        scenario: String,
        samples: u64,
        /// The statistic as measured (a latency can be negative: the figure is then 0).
        measured_ns: i64,
    },
    /// Given by hand.
    Flag { flag: String },
    /// Not charged: 0.
    None { reason: String },
}

impl Figure {
    fn by_hand(flag: &str, ns: u64) -> Figure {
        Figure { ns, source: Source::Flag { flag: flag.to_string() } }
    }

    fn none(reason: &str) -> Figure {
        Figure { ns: 0, source: Source::None { reason: reason.to_string() } }
    }

    /// "48.0 µs (timer.latency p99.999, all CPUs, worst scenario \"idle\": 120,000 samples)".
    fn describe(&self) -> String {
        match &self.source {
            Source::Platform { metric, statistic, scenario, samples, measured_ns } => {
                let clamped = if *measured_ns < 0 {
                    format!(" (measured {} µs, charged as 0)", format_us(*measured_ns))
                } else {
                    String::new()
                };
                format!(
                    "{} µs{clamped}: {metric} {statistic}, all CPUs, worst scenario {scenario:?} ({} samples)",
                    format_us(signed(self.ns)),
                    thousands(*samples)
                )
            }
            Source::Flag { flag } => format!("{} µs (given by {flag})", format_us(signed(self.ns))),
            Source::None { reason } => format!("0: {reason}"),
        }
    }
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

/// The figure of the first of `metrics` the run measured: the statistic over all CPUs of each
/// scenario, the worst scenario's. None when the run measured none of them.
fn worst_figure(run: &RunResult, metrics: &[&str], statistic: Statistic) -> anyhow::Result<Option<Figure>> {
    for metric in metrics {
        let mut worst: Option<(i64, &str, u64)> = None;
        for scenario in &run.scenarios {
            let measurements: Vec<&Measurement> =
                run.measurements_of(&scenario.name, metric).filter(|m| m.count > 0).collect();
            if measurements.is_empty() {
                continue;
            }
            let samples = measurements.iter().map(|m| m.count).sum();
            let Some(value) = statistic_of(&measurements, statistic)
                .with_context(|| format!("--platform: {metric} in scenario {:?}", scenario.name))?
            else {
                continue;
            };
            if worst.is_none_or(|(v, _, _)| value > v) {
                worst = Some((value, &scenario.name, samples));
            }
        }
        if let Some((measured_ns, scenario, samples)) = worst {
            return Ok(Some(Figure {
                ns: u64::try_from(measured_ns).unwrap_or(0),
                source: Source::Platform {
                    metric: metric.to_string(),
                    statistic: statistic.to_string(),
                    scenario: scenario.to_string(),
                    samples,
                    measured_ns,
                },
            }));
        }
    }
    Ok(None)
}

/// The statistic of one metric over several CPUs, ns (rounded up for pWCET: a bound).
fn statistic_of(measurements: &[&Measurement], statistic: Statistic) -> anyhow::Result<Option<i64>> {
    if let Statistic::Pwcet(probability) = statistic {
        let config = PwcetConfig { probabilities: vec![probability], ..PwcetConfig::default() };
        let tail = rtlab_report::pwcet::analyse(measurements, &config)
            .map_err(|e| usage(format!("cannot estimate pwcet({probability:e}): {e}")))?;
        return Ok(tail.pwcet_ns(probability).map(|ns| ns.ceil() as i64));
    }
    let combined = rtlab_report::digest::combine(measurements)?;
    Ok(combined.histogram.as_ref().and_then(|histogram| statistic.of(histogram, &combined.moments)))
}

/// A percentile of fewer samples than it needs to differ from the maximum is the maximum:
/// "timer.latency: p99.999 of 19,979 samples is their maximum; it takes 100,000 to tell them apart".
fn thin_percentile(figure: &Figure, statistic: Statistic) -> Option<String> {
    let (Source::Platform { metric, samples, .. }, Statistic::Percentile(p)) = (&figure.source, statistic) else {
        return None;
    };
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
    if let Some(p) = &report.platform {
        let _ = writeln!(out, "Platform: {} (label {:?})", p.run, p.label);
        if p.simulated {
            let _ = writeln!(out, "  ! the platform run is simulated: its figures do not describe any machine");
        } else if !p.real_time_results {
            let _ = writeln!(out, "  ! the platform run has no real-time results (no SCHED_FIFO or memory lock)");
        }
    }
    let _ = writeln!(out, "Activation latency (added to every J): {}", report.activation_latency.describe());
    if let Source::Platform { metric, .. } = &report.activation_latency.source {
        if metric != ACTIVATION_METRICS[0] {
            let _ = writeln!(
                out,
                "  (the run has no {}: {metric}, the same periodic wake-up, stands in)",
                ACTIVATION_METRICS[0]
            );
        }
    }
    let _ = writeln!(out, "Task switch CS (charged twice per job): {}", report.switch.describe());
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
    let _ = writeln!(out, "Verdict: {}", if report.schedulable { "SCHEDULABLE" } else { "NOT SCHEDULABLE" });
    out
}

/// "Activation latency: tolerates 212.0 µs; measured p99.999 48.0 µs: margin 4.4x".
fn tolerance_line(report: &CheckReport) -> String {
    let Some(tolerated) = report.tolerated_activation_latency_ns else {
        return "Activation latency: none tolerated (a deadline is missed even with no activation latency)".into();
    };
    let tolerates = format!("tolerates {} µs", format_us(signed(tolerated)));
    let charged = &report.activation_latency;
    let what = match &charged.source {
        Source::Platform { statistic, .. } => format!("measured {statistic} {} µs", format_us(signed(charged.ns))),
        Source::Flag { flag } => format!("given {} µs ({flag})", format_us(signed(charged.ns))),
        Source::None { .. } => return format!("Activation latency: {tolerates}; none charged"),
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
        let figure = |samples| Figure {
            ns: 1,
            source: Source::Platform {
                metric: "timer.latency".into(),
                statistic: "p99.999".into(),
                scenario: "idle".into(),
                samples,
                measured_ns: 1,
            },
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
