//! "Long enough?" in `rtlab run`: the stop rule of `--until converged[:STATISTIC]` and the
//! same answer for a plain run (docs/stop-rule.md).
//!
//! With --until each scenario's probe is measured in windows: each window is one run of the
//! probe (built, run for `--window`, joined), so the real-time loop is the ordinary one and
//! the statistic is computed here, between windows, from the histograms the finished window
//! handed over, merged into the scenario's. Each scenario stops when its statistic has
//! converged or at --max-duration, whichever comes first.

use crate::errors::usage;
use crate::probe_plan::ProbeChoice;
use rtlab_analysis::convergence::{
    self, Convergence, ConvergencePoint, Ending, StopRule, DEFAULT_STATISTIC, DEFAULT_TARGET, WINDOWS_REQUIRED,
};
use rtlab_analysis::requirement::Statistic;
use rtlab_analysis::units::parse_time_ns;
use rtlab_probe::ProbeOutput;
use rtlab_results::run::Measurement;

/// Default window and limit.
pub const DEFAULT_WINDOW_NS: u64 = 10_000_000_000;
pub const DEFAULT_MAX_DURATION_NS: u64 = 3_600_000_000_000;

/// A validated `--until`.
#[derive(Debug, Clone)]
pub struct UntilPlan {
    /// The metric, when named (`converged:timer.jitter:p99.9`); else the probe's main metric.
    pub metric: Option<String>,
    pub statistic: Statistic,
    pub target: f64,
    pub window_ns: u64,
    pub max_duration_ns: u64,
}

/// `5%`, `5 %` or `0.05`: a relative half-width in (0, 1).
fn parse_target(text: &str) -> anyhow::Result<f64> {
    let t = text.trim();
    let value = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|v| v / 100.0),
        None => t.parse::<f64>(),
    }
    .map_err(|_| usage(format!("--target {text:?}: give a percentage such as 5% (or 0.05)")))?;
    if !(value > 0.0 && value < 1.0) {
        return Err(usage(format!("--target {text:?}: must lie between 0 % and 100 %")));
    }
    Ok(value)
}

/// Checks `--until` and its companions against the run's other options.
pub fn resolve(args: &crate::cli::RunArgs, probes: &[ProbeChoice]) -> anyhow::Result<Option<UntilPlan>> {
    let Some(rule) = &args.until else { return Ok(None) };
    let rest = rule.trim().strip_prefix("converged").ok_or_else(|| {
        usage(format!("--until {rule:?}: the rule is converged[:STATISTIC] or converged:METRIC:STATISTIC"))
    })?;
    let (metric, statistic) = match rest.strip_prefix(':') {
        None if rest.is_empty() => (None, DEFAULT_STATISTIC),
        None => return Err(usage(format!("--until {rule:?}: write converged:STATISTIC, e.g. converged:p99.9"))),
        Some(spec) => {
            let (metric, stat) = match spec.rsplit_once(':') {
                Some((m, s)) => (Some(m.trim().to_string()), s),
                None => (None, spec),
            };
            let statistic =
                convergence::parse_stop_statistic(stat).map_err(|e| usage(format!("--until {rule:?}: {e}")))?;
            (metric, statistic)
        }
    };
    // Caught by clap on the command line; an experiment file may still combine them.
    if args.duration.is_some() || args.samples.is_some() {
        return Err(usage("--until measures until the statistic converges: leave out duration and samples (the limit is --max-duration)"));
    }
    let target = args.target.as_deref().map(parse_target).transpose()?.unwrap_or(DEFAULT_TARGET);
    let time = |flag: &str, text: Option<&str>, default: u64| -> anyhow::Result<u64> {
        text.map(|t| parse_time_ns(t).map_err(|e| usage(format!("{flag}: {e}"))))
            .transpose()
            .map(|v| v.unwrap_or(default))
    };
    let window_ns = time("--window", args.window.as_deref(), DEFAULT_WINDOW_NS)?;
    let max_duration_ns = time("--max-duration", args.max_duration.as_deref(), DEFAULT_MAX_DURATION_NS)?;
    if window_ns < 1_000_000_000 {
        return Err(usage("--window: at least 1s (a window's per-second maxima feed the pWCET)"));
    }
    if max_duration_ns > crate::plan_values::MAX_RUN_NS {
        return Err(usage("--max-duration: at most 366d"));
    }
    if max_duration_ns < window_ns.saturating_mul(WINDOWS_REQUIRED as u64) {
        return Err(usage(format!(
            "--max-duration holds fewer than {WINDOWS_REQUIRED} windows of {} s: the rule needs {WINDOWS_REQUIRED} windows within target; give a longer limit or a shorter --window",
            window_ns / 1_000_000_000
        )));
    }
    let refuse = |why: &str| Err(usage(format!("--until: {why}")));
    match probes {
        [ProbeChoice::Timer | ProbeChoice::Net | ProbeChoice::Ipc(_) | ProbeChoice::Switch] => {}
        [one] => {
            return refuse(&format!("measures timer, net, ipc or switch in windows; {} is not one of them", one.name()))
        }
        _ => return refuse("measures one probe in windows; give --probe with one probe"),
    }
    if args.raw {
        return refuse("--raw is not kept across windows; leave out one of them");
    }
    if args.split {
        return refuse("--split is not kept across windows; leave out one of them");
    }
    if args.taskset.is_some() {
        return refuse("a task set is not measured in windows; leave out one of them");
    }
    Ok(Some(UntilPlan { metric, statistic, target, window_ns, max_duration_ns }))
}

/// Adds a finished window's output to the scenario's: histograms merged, counts added,
/// per-second maxima appended, notes kept once.
pub fn merge_window(into: &mut ProbeOutput, window: ProbeOutput) -> anyhow::Result<()> {
    if into.threads.len() != window.threads.len() {
        return Err(crate::errors::environment("a window's probe threads differ from the first window's"));
    }
    for (a, b) in into.threads.iter_mut().zip(window.threads) {
        a.cycles += b.cycles;
        a.overruns += b.overruns;
        a.lost += b.lost;
        a.interrupted |= b.interrupted;
        for (ma, mb) in a.metrics.iter_mut().zip(b.metrics) {
            ma.histogram
                .merge(&mb.histogram)
                .map_err(|e| crate::errors::environment(format!("merging a window's histogram: {e}")))?;
            ma.moments.merge(&mb.moments);
            ma.per_second_max.extend(mb.per_second_max);
        }
    }
    for note in window.notes {
        if !into.notes.contains(&note) {
            into.notes.push(note);
        }
    }
    Ok(())
}

/// The rule of a scenario: the asked one, or the default (p99.99 of `metric`).
pub fn rule_of(until: Option<&UntilPlan>, metric: &str) -> StopRule {
    StopRule {
        metric: until.and_then(|u| u.metric.clone()).unwrap_or_else(|| metric.to_string()),
        statistic: until.map_or(DEFAULT_STATISTIC, |u| u.statistic),
        target: until.map_or(DEFAULT_TARGET, |u| u.target),
        windows_required: WINDOWS_REQUIRED,
    }
}

/// The statistic of `rule` over the scenario's measurements so far, as a curve point: the
/// widest CPU's interval for a percentile, the fit over all CPUs for pWCET. None when no
/// measurement has the metric.
pub fn point(rule: &StopRule, measurements: &[Measurement], elapsed_s: f64) -> Option<ConvergencePoint> {
    let ours: Vec<&Measurement> = measurements.iter().filter(|m| m.metric == rule.metric && m.count > 0).collect();
    if ours.is_empty() {
        return None;
    }
    match rule.statistic {
        Statistic::Percentile(percent) => convergence::worst(ours.iter().filter_map(|m| {
            let histogram = rtlab_analysis::LatencyHistogram::decode(&m.histogram).ok()?;
            let interval = convergence::percentile_interval(&histogram, &m.moments, percent)?;
            Some(ConvergencePoint::from_interval(elapsed_s, m.count, interval, Some(m.cpu)))
        })),
        Statistic::Pwcet(probability) => {
            let samples = ours.iter().map(|m| m.count).sum();
            let unusable = |why: String| ConvergencePoint {
                elapsed_s,
                samples,
                value_ns: 0.0,
                low_ns: 0.0,
                high_ns: None,
                half_width: None,
                cpu: None,
                not_usable: Some(why),
            };
            let config = rtlab_analysis::evt::PwcetConfig { probabilities: vec![probability], ..Default::default() };
            let analysis = match rtlab_report::pwcet::analyse(&ours, &config) {
                Ok(a) => a,
                Err(e) => return Some(unusable(format!("has no fit yet ({e})"))),
            };
            let Some(estimate) = analysis.estimates.first() else {
                return Some(unusable("has no estimate yet".into()));
            };
            let mut p = ConvergencePoint::from_interval(
                elapsed_s,
                samples,
                convergence::Interval {
                    value_ns: estimate.value_ns,
                    low_ns: estimate.ci_low_ns,
                    high_ns: estimate.ci_high_ns.is_finite().then_some(estimate.ci_high_ns),
                },
                None,
            );
            if !analysis.defensibility.defensible {
                p.not_usable = Some(format!("is not defensible ({})", analysis.defensibility.reasons.join("; ")));
            }
            Some(p)
        }
        // Refused by parse_stop_statistic: no interval that narrows.
        Statistic::Max | Statistic::Mean => None,
    }
}

/// The decision of a scenario measured in windows.
pub fn decide_until(
    rule: &StopRule,
    until: &UntilPlan,
    curve: Vec<ConvergencePoint>,
    elapsed_s: f64,
    interrupted: bool,
) -> Convergence {
    let ending = if interrupted { Ending::Interrupted } else { Ending::Limit(until.max_duration_ns as f64 / 1e9) };
    let mut decision = convergence::decide(rule, curve, elapsed_s, ending);
    decision.window_s = Some(until.window_ns as f64 / 1e9);
    decision.max_duration_s = Some(until.max_duration_ns as f64 / 1e9);
    decision.windows_required = Some(rule.windows_required);
    decision.mode = "until".into();
    decision
}

/// A plain run's answer for the duration it had: the default rule on the scenario's
/// measurements, one point. None when the scenario measured nothing.
pub fn decide_plain(measurements: &[Measurement], elapsed_s: f64) -> Option<Convergence> {
    let metric = measurements.iter().find(|m| m.count > 0)?.metric.clone();
    let rule = rule_of(None, &metric);
    let p = point(&rule, measurements, elapsed_s)?;
    Some(convergence::decide(&rule, vec![p], elapsed_s, Ending::Duration))
}
