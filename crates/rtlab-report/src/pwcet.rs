//! pWCET of a metric in a run: the measurements' block maxima and tail handed to
//! [`rtlab_analysis::evt`], for the verdict (`pwcet(P)` requirements), `rtlab check`
//! and the report's tail section.
//!
//! What a run provides ([`tail_input`]):
//! - block maxima: per block of `block_s` seconds (one second unless the run was longer
//!   than a week) the largest sample of any CPU; blocks in which no CPU took a sample are
//!   left out. Probes that measure one step after another (the jitter probe's periods, the
//!   sweep probe's rates) contribute their steps' blocks one after another;
//! - samples per block: the samples per second of all CPUs together times `block_s`;
//! - the upper tail: the largest [`TAIL_SHARE`] of the samples, at least [`TAIL_MIN_SAMPLES`]
//!   of them (all when there are fewer), as (value, count) from the merged histogram
//!   (values within its 0.1 % precision, the top one clamped to the exact maximum). The
//!   peaks-over-threshold fit picks its threshold inside it. Raw sample files are not read.
//!
//! A report asks for the same analysis several times (the verdict, the tables, the figures,
//! the terminal summary): [`configuration_tail`] keeps the results of the process's last 64
//! analyses, keyed by a hash of their input and their configuration, so each is computed
//! once.

use crate::digest::combine;
use crate::per_setting::in_measured_order;
use crate::ReportError;
use rtlab_analysis::evt::{Defensibility, PwcetAnalysis, PwcetConfig, PwcetEstimate, TailFit, TailInput, TailModel};
use rtlab_analysis::requirement::{Requirement, Statistic};
use rtlab_results::run::Measurement;
use rtlab_results::set::{Configuration, ReportSet};
use serde::Serialize;
use std::sync::{Arc, Mutex};

/// What the pWCET table's rows and the figures' legends of a not defensible analysis are
/// labelled (values and CIs stay, so that they can be examined, but not quoted).
pub const NOT_DEFENSIBLE_LABEL: &str = "fitted, not defensible";

/// Share of the samples handed over as the distribution's upper tail.
pub const TAIL_SHARE: f64 = 0.05;
/// Fewest samples handed over as the upper tail (when the run has that many).
pub const TAIL_MIN_SAMPLES: u64 = 2_000;

/// The tail input of one metric over several measurements (CPUs) of one scenario.
pub fn tail_input(measurements: &[&Measurement]) -> Result<TailInput, ReportError> {
    let all = combine(measurements)?;
    let total_samples = all.row.count;
    let block_s = block_s_of(measurements);
    // Block maxima step by step (steps were measured one after another), the CPUs of a step
    // side by side; the sample rate of each step weighted by its blocks.
    let mut block_maxima_ns = Vec::new();
    let (mut weighted_rate, mut weight) = (0.0, 0.0);
    for step in in_measured_order(measurements) {
        let blocks = step.iter().map(|m| m.per_second_max_ns.len()).max().unwrap_or(0);
        let before = block_maxima_ns.len();
        block_maxima_ns.extend(
            (0..blocks)
                .filter_map(|i| step.iter().filter_map(|m| m.per_second_max_ns.get(i).copied().flatten()).max())
                .map(|ns| ns as f64),
        );
        let taken = (block_maxima_ns.len() - before) as f64;
        let rate = combine(&step)?.row.sample_rate_hz;
        if taken > 0.0 && rate.is_finite() {
            weighted_rate += rate * taken;
            weight += taken;
        }
    }
    let sample_rate_hz = if weight > 0.0 { weighted_rate / weight } else { all.row.sample_rate_hz };
    let tail_ns = match (&all.histogram, all.moments.max()) {
        (Some(histogram), Some(max)) => {
            let wanted = ((total_samples as f64 * TAIL_SHARE).ceil() as u64).max(TAIL_MIN_SAMPLES).min(total_samples);
            let buckets: Vec<(u64, u64)> = histogram.buckets().collect();
            let mut tail: Vec<(f64, u64)> = Vec::new();
            let mut taken = 0u64;
            // Samples above the histogram's range count at the exact maximum.
            if histogram.above_max() > 0 {
                tail.push((max as f64, histogram.above_max()));
                taken += histogram.above_max();
            }
            for &(value, count) in buckets.iter().rev() {
                if taken >= wanted {
                    break;
                }
                tail.push(((value as f64).min(max as f64), count));
                taken += count;
            }
            tail.reverse();
            tail
        }
        _ => Vec::new(),
    };
    Ok(TailInput {
        block_maxima_ns,
        samples_per_block: sample_rate_hz * block_s as f64,
        tail_ns,
        total_samples,
        sample_rate_hz,
    })
}

/// Seconds each block maximum covers: the longest block of the measurements (at least 1).
fn block_s_of(measurements: &[&Measurement]) -> u64 {
    measurements.iter().map(|m| m.block_s).max().unwrap_or(1).max(1)
}

/// The tail analysis of one metric over several measurements (CPUs) of one scenario.
pub fn analyse(measurements: &[&Measurement], config: &PwcetConfig) -> Result<PwcetAnalysis, ReportError> {
    let input = tail_input(measurements)?;
    Ok(rtlab_analysis::evt::analyse(&input, config)?)
}

/// The analysis configuration of a metric: evt's defaults, with the probabilities of the
/// `pwcet(P)` requirements on it added to the table's (largest first), so that their
/// estimates come with a confidence interval.
pub fn config_for(metric: &str, requirements: &[Requirement]) -> PwcetConfig {
    let mut config = PwcetConfig::default();
    for r in requirements.iter().filter(|r| r.metric == metric) {
        if let Statistic::Pwcet(p) = r.statistic {
            if !config.probabilities.iter().any(|q| same_probability(*q, p)) {
                config.probabilities.push(p);
            }
        }
    }
    config.probabilities.sort_by(|a, b| b.total_cmp(a));
    config
}

/// Two probabilities as written by people (1e-9 and 1.0e-9) are the same.
pub fn same_probability(a: f64, b: f64) -> bool {
    (a - b).abs() <= a.abs().max(b.abs()) * 1e-9
}

/// The tail analysis of one metric in one configuration, or why there is none.
#[derive(Debug, Clone)]
pub struct TailAnalysis {
    pub metric: String,
    /// Samples of the metric, all CPUs.
    pub samples: u64,
    /// Blocks with samples (per-second maxima).
    pub blocks: usize,
    /// Seconds each block covers.
    pub block_s: u64,
    /// Samples per second, all CPUs.
    pub sample_rate_hz: f64,
    /// Largest sample, exact.
    pub observed_max_ns: Option<i64>,
    /// The analysis, or one sentence saying why it could not be made ("the tail analysis could
    /// not be made: 2 block maxima and 7 samples above a threshold: …").
    pub outcome: Result<Arc<PwcetAnalysis>, String>,
}

impl TailAnalysis {
    /// Seconds one block maximum of the chosen fit covers: the run's block (`block_s`) times
    /// the blocks the analysis merged so that the maxima are close to independent.
    pub fn block_seconds(&self) -> u64 {
        let merged = self.analysis().map_or(1, |a| a.blocks_merged.max(1));
        self.block_s.max(1).saturating_mul(merged as u64)
    }

    pub fn analysis(&self) -> Option<&PwcetAnalysis> {
        self.outcome.as_deref().ok()
    }

    /// The estimate at `probability` (with its confidence interval), if the table has it.
    pub fn estimate(&self, probability: f64) -> Option<&PwcetEstimate> {
        self.analysis()?.estimates.iter().find(|e| same_probability(e.probability, probability))
    }

    /// The fit the estimates come from.
    pub fn chosen_fit(&self) -> Option<&TailFit> {
        let a = self.analysis()?;
        a.fits.get(a.chosen)
    }
}

/// Analyses kept: a report of many configurations and metrics, with room to spare.
const CACHE_ENTRIES: usize = 64;

/// What identifies an analysis: a 64-bit hash of its input (a week-long run has 600,000 block
/// maxima: the input itself is not kept) with its sizes, and the configuration.
#[derive(Debug, Clone, PartialEq)]
struct CacheKey {
    input_hash: u64,
    blocks: usize,
    tail_values: usize,
    total_samples: u64,
    config: PwcetConfig,
}

impl CacheKey {
    fn of(input: &TailInput, config: &PwcetConfig) -> CacheKey {
        use std::hash::{Hash, Hasher};
        // SipHash with fixed keys: the same input hashes the same within the process.
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        for v in &input.block_maxima_ns {
            v.to_bits().hash(&mut hasher);
        }
        for (v, c) in &input.tail_ns {
            (v.to_bits(), c).hash(&mut hasher);
        }
        (input.samples_per_block.to_bits(), input.sample_rate_hz.to_bits()).hash(&mut hasher);
        CacheKey {
            input_hash: hasher.finish(),
            blocks: input.block_maxima_ns.len(),
            tail_values: input.tail_ns.len(),
            total_samples: input.total_samples,
            config: config.clone(),
        }
    }
}

type Outcome = Result<Arc<PwcetAnalysis>, String>;

/// The process's last analyses, newest last. The EVT analysis is a pure function of its
/// input: the cache only saves time.
static CACHE: Mutex<Vec<(CacheKey, Outcome)>> = Mutex::new(Vec::new());

fn cached(input: &TailInput, config: &PwcetConfig) -> Outcome {
    let key = CacheKey::of(input, config);
    let lookup = || -> Option<Outcome> {
        let cache = CACHE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        cache.iter().find(|(k, _)| *k == key).map(|(_, r)| r.clone())
    };
    if let Some(hit) = lookup() {
        return hit;
    }
    // Computed without holding the lock: other threads' analyses go on meanwhile.
    let outcome = rtlab_analysis::evt::analyse(input, config).map(Arc::new).map_err(|e| e.to_string());
    let mut cache = CACHE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if !cache.iter().any(|(k, _)| *k == key) {
        if cache.len() >= CACHE_ENTRIES {
            drop(cache.remove(0));
        }
        cache.push((key, outcome.clone()));
    }
    outcome
}

/// The tail analysis of `metric` in one configuration, computed once per process for the
/// same measurements and configuration; None when the configuration did not measure it.
pub fn configuration_tail(
    configuration: &Configuration,
    metric: &str,
    config: &PwcetConfig,
) -> Result<Option<TailAnalysis>, ReportError> {
    let measurements: Vec<&Measurement> = configuration.run.measurements_of(configuration.scenario, metric).collect();
    measurements_tail(&measurements, metric, config)
}

/// [`configuration_tail`] of the measurements of `metric` already picked out.
pub fn measurements_tail(
    measurements: &[&Measurement],
    metric: &str,
    config: &PwcetConfig,
) -> Result<Option<TailAnalysis>, ReportError> {
    if measurements.is_empty() {
        return Ok(None);
    }
    let input = tail_input(measurements)?;
    let observed_max_ns = measurements.iter().filter(|m| m.count > 0).map(|m| m.moments.max()).max().flatten();
    let outcome = if input.total_samples == 0 {
        Err("no samples were taken".to_string())
    } else if let Some(c) = crate::digest::merged_censoring(measurements) {
        // Censored data: the largest samples, all that extreme value theory fits, are unknown.
        Err(format!(
            "the tail is censored: {} samples lie beyond the source's histogram (at least {} µs each), so the largest \
             samples, which extreme value theory fits, are unknown",
            rtlab_analysis::units::thousands(c.count),
            rtlab_analysis::units::format_us(c.above_ns)
        ))
    } else {
        cached(&input, config).map_err(|why| {
            // The analysis' reason without its error's "pWCET: " prefix.
            let reason = why.trim_start_matches("pWCET: ").trim_end_matches('.');
            format!("the tail analysis could not be made: {reason}")
        })
    };
    Ok(Some(TailAnalysis {
        metric: metric.to_string(),
        samples: input.total_samples,
        blocks: input.block_maxima_ns.len(),
        block_s: block_s_of(measurements),
        sample_rate_hz: input.sample_rate_hz,
        observed_max_ns,
        outcome,
    }))
}

/// The requirements a report of `set` is judged by: those judged for it, else those saved
/// with its runs.
pub fn set_requirements(set: &ReportSet) -> Vec<Requirement> {
    let checks: Vec<&rtlab_results::verdict::Check> = match &set.verdict {
        Some(v) => v.checks.iter().collect(),
        None => set.runs.iter().filter_map(|r| r.run.verdict.as_ref()).flat_map(|v| &v.checks).collect(),
    };
    let mut out: Vec<Requirement> = Vec::new();
    for c in checks {
        if !out.iter().any(|r| r.text == c.requirement.text) {
            out.push(c.requirement.clone());
        }
    }
    out
}

/// The metrics a report's tail section covers, in first-seen order: the main metric of
/// each probe of each run (a probe whose main metric was not measured: its first metric),
/// then the metrics named by `pwcet(P)` requirements.
pub fn tail_metrics(set: &ReportSet, requirements: &[Requirement]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut add = |m: String| {
        if !out.contains(&m) {
            out.push(m);
        }
    };
    for run in set.runs.iter().map(|r| &r.run) {
        let measured = run.metrics();
        for probe in &run.experiment.probes {
            let main = crate::digest::main_metric(probe);
            let prefix = format!("{probe}.");
            if measured.contains(&main.as_str()) {
                add(main);
            } else if let Some(m) = measured.iter().find(|m| m.starts_with(&prefix)) {
                add(m.to_string());
            }
        }
    }
    for r in requirements {
        if matches!(r.statistic, Statistic::Pwcet(_))
            && set.runs.iter().any(|s| s.run.metrics().contains(&r.metric.as_str()))
        {
            add(r.metric.clone());
        }
    }
    out
}

/// One metric's tail analyses over the configurations of a report.
#[derive(Debug, Clone)]
pub struct MetricTail<'a> {
    pub metric: String,
    /// The `pwcet(P)` (and other) requirements on this metric.
    pub requirements: Vec<Requirement>,
    /// The configuration of the analyses ([`config_for`]).
    pub config: PwcetConfig,
    /// (configuration index in `ReportSet::configurations`, configuration, its analysis),
    /// for the configurations that measured the metric.
    pub configurations: Vec<(usize, Configuration<'a>, TailAnalysis)>,
}

/// The tail section of a report: per metric of [`tail_metrics`], every configuration's
/// analysis.
pub fn report_tails(set: &ReportSet) -> Result<Vec<MetricTail<'_>>, ReportError> {
    let requirements = set_requirements(set);
    let configurations = set.configurations();
    let mut out = Vec::new();
    for metric in tail_metrics(set, &requirements) {
        let config = config_for(&metric, &requirements);
        let mut analysed = Vec::new();
        for (index, c) in configurations.iter().enumerate() {
            if let Some(tail) = configuration_tail(c, &metric, &config)? {
                analysed.push((index, c.clone(), tail));
            }
        }
        if !analysed.is_empty() {
            let on_metric = requirements.iter().filter(|r| r.metric == metric).cloned().collect();
            out.push(MetricTail { metric, requirements: on_metric, config, configurations: analysed });
        }
    }
    Ok(out)
}

/// One metric of one configuration in the JSON report's `pwcet` list: the analysis without
/// its figures' points, or why there is none.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PwcetEntry {
    pub metric: String,
    /// The configuration's name ([`Configuration::name`]).
    pub configuration: String,
    pub samples: u64,
    pub blocks: usize,
    pub block_s: u64,
    pub sample_rate_hz: f64,
    pub observed_max_ns: Option<i64>,
    /// The per-activation probabilities of the table.
    pub probabilities: Vec<f64>,
    pub analysis: Option<PwcetEntryAnalysis>,
    /// Why there is no analysis.
    pub not_analysed: Option<String>,
}

/// [`PwcetAnalysis`] without `curves` (the figures' points). When `defensibility` says not
/// defensible, `estimates` are the fitted values, not to be quoted as the pWCET.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PwcetEntryAnalysis {
    /// Whether the pWCET can be quoted from this run; when not, why and what would help.
    pub defensibility: Defensibility,
    /// [`Defensibility::refusal`]: the sentence shown instead of the number; null when
    /// defensible.
    pub refusal: Option<String>,
    pub fits: Vec<TailFit>,
    pub chosen: usize,
    pub chosen_because: String,
    /// The tests behind the choice of model (ξ = 0 against a free shape, MBPTA-CV).
    pub selection: Vec<rtlab_analysis::evt::Diagnostic>,
    /// Input blocks merged into one block maximum, and why.
    pub blocks_merged: usize,
    pub blocks_because: String,
    /// The peaks-over-threshold threshold, ns (null without a tail), and why.
    pub threshold_ns: Option<f64>,
    pub threshold_because: String,
    pub estimates: Vec<PwcetEstimate>,
    pub diagnostics: Vec<rtlab_analysis::evt::Diagnostic>,
    pub goodness_of_fit: Vec<rtlab_analysis::evt::Diagnostic>,
    pub warnings: Vec<String>,
}

impl PwcetEntryAnalysis {
    pub fn of(a: &PwcetAnalysis) -> PwcetEntryAnalysis {
        PwcetEntryAnalysis {
            defensibility: a.defensibility.clone(),
            refusal: a.defensibility.refusal(),
            fits: a.fits.clone(),
            chosen: a.chosen,
            chosen_because: a.chosen_because.clone(),
            selection: a.selection.clone(),
            blocks_merged: a.blocks_merged,
            blocks_because: a.blocks_because.clone(),
            threshold_ns: a.threshold_ns,
            threshold_because: a.threshold_because.clone(),
            estimates: a.estimates.clone(),
            diagnostics: a.diagnostics.clone(),
            goodness_of_fit: a.goodness_of_fit.clone(),
            warnings: a.warnings.clone(),
        }
    }
}

/// The tail section as data, for the JSON report: every metric and configuration of
/// [`report_tails`].
pub fn report_entries(set: &ReportSet) -> Result<Vec<PwcetEntry>, ReportError> {
    let mut out = Vec::new();
    for tail in report_tails(set)? {
        for (_, c, t) in &tail.configurations {
            out.push(PwcetEntry {
                metric: tail.metric.clone(),
                configuration: c.name.clone(),
                samples: t.samples,
                blocks: t.blocks,
                block_s: t.block_s,
                sample_rate_hz: t.sample_rate_hz,
                observed_max_ns: t.observed_max_ns,
                probabilities: tail.config.probabilities.clone(),
                analysis: t.analysis().map(PwcetEntryAnalysis::of),
                not_analysed: t.outcome.as_ref().err().cloned(),
            });
        }
    }
    Ok(out)
}

/// The model and estimator of a fit as people name them: "GEV (PWM)", "GPD (MLE)".
pub fn fit_name(fit: &TailFit) -> String {
    let model = match fit.model {
        TailModel::Gev => "GEV",
        TailModel::Gumbel => "Gumbel",
        TailModel::Gpd => "GPD",
        TailModel::Exponential => "exponential",
    };
    let estimator = match fit.estimator {
        rtlab_analysis::evt::Estimator::Pwm => "PWM",
        rtlab_analysis::evt::Estimator::Mle => "MLE",
    };
    format!("{model} ({estimator})")
}

/// What a fit was fitted to: "60 per-second maxima", "2,000 exceedances of 812.3 µs".
pub fn fit_data(fit: &TailFit, block_s: u64) -> String {
    let n = rtlab_analysis::units::thousands(fit.observations as u64);
    match fit.model {
        TailModel::Gpd | TailModel::Exponential => {
            format!("{n} samples above {} µs", rtlab_analysis::units::format_us_f(fit.location_ns))
        }
        _ if block_s == 1 => format!("{n} per-second maxima"),
        _ => format!("{n} maxima of {block_s} s blocks"),
    }
}

/// A probability as the requirement grammar writes it (`Statistic`'s Display): "1e-9",
/// "2.5e-7", "5e-2".
pub fn format_probability(p: f64) -> String {
    format!("{p:e}")
}

/// A per-hour probability for people: "3.6e-3", "0.012", "≈1" when it is a near-certainty.
pub fn format_per_hour(p: f64) -> String {
    if !p.is_finite() {
        return "-".into();
    }
    if p >= 0.9995 {
        "≈1".into()
    } else if p >= 0.01 {
        format!("{p:.3}")
    } else if p <= 0.0 {
        "0".into()
    } else {
        let exponent = p.log10().floor();
        let mantissa = p / 10f64.powf(exponent);
        format!("{mantissa:.1}e{exponent}")
    }
}

/// The pWCET of a scenario's main metric as the terminal summary and `rtlab run --json`
/// state it: the estimate at [`SUMMARY_PROBABILITY`] with its confidence interval when it can
/// be quoted; otherwise no number and why (not defensible, or not estimated).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PwcetHeadline {
    pub metric: String,
    /// Per activation.
    pub probability: f64,
    /// The estimate and its confidence interval; null when it is not defensible or there is
    /// none (then `not_quoted` says why).
    pub estimate: Option<PwcetEstimate>,
    /// Confidence level of the interval (0.95).
    pub confidence: f64,
    /// The fit the estimate comes from: "GPD (MLE) fit of 1,000 samples above 14.1 µs"; null
    /// without an analysis.
    pub fit: Option<String>,
    /// Whether the analysis says the pWCET can be quoted, with its reasons and remedies; null
    /// when no analysis could be made.
    pub defensibility: Option<Defensibility>,
    /// Why there is no number: "not defensible from this run — <reasons>; <remedies>", or
    /// why it was not estimated; null when `estimate` is given.
    pub not_quoted: Option<String>,
    /// Warnings of the analysis (in the report's tail section).
    pub warnings: usize,
}

impl PwcetHeadline {
    /// The terminal summary's line: "pWCET: 2997.5 µs at 1e-9 per activation (…)", or
    /// "pWCET: not defensible from this run — <reasons>; <remedies>." without a number.
    pub fn line(&self) -> String {
        match (&self.estimate, &self.fit) {
            (Some(e), Some(fit)) => format!(
                "pWCET: {} µs at {} per activation ({} per hour; {:.0} % CI {} to {} µs; {fit}){}.",
                rtlab_analysis::units::format_us_f(e.value_ns),
                format_probability(self.probability),
                format_per_hour(e.per_hour_probability),
                self.confidence * 100.0,
                rtlab_analysis::units::format_us_f(e.ci_low_ns),
                rtlab_analysis::units::format_us_f(e.ci_high_ns),
                match self.warnings {
                    0 => String::new(),
                    1 => "; 1 warning: see the report's tail section".to_string(),
                    n => format!("; {n} warnings: see the report's tail section"),
                }
            ),
            _ => format!("pWCET: {}.", self.not_quoted.as_deref().unwrap_or("not estimated").trim_end_matches('.')),
        }
    }
}

/// The pWCET headline of a scenario's main metric ([`PwcetHeadline`]); None when the metric
/// has no samples there.
pub fn summary_headline(
    run: &rtlab_results::run::RunResult,
    scenario: &str,
    metric: Option<&str>,
) -> Result<Option<PwcetHeadline>, ReportError> {
    let Some(metric) = metric else { return Ok(None) };
    let measurements: Vec<&Measurement> = run.measurements_of(scenario, metric).collect();
    let requirements: Vec<Requirement> =
        run.verdict.iter().flat_map(|v| &v.checks).map(|c| c.requirement.clone()).collect();
    let config = config_for(metric, &requirements);
    // Without samples the summary already says so.
    let Some(tail) = measurements_tail(&measurements, metric, &config)?.filter(|t| t.samples > 0) else {
        return Ok(None);
    };
    Ok(Some(headline(&tail, SUMMARY_PROBABILITY, config.confidence)))
}

/// The headline of one tail analysis at `probability`.
pub fn headline(tail: &TailAnalysis, probability: f64, confidence: f64) -> PwcetHeadline {
    let analysis = tail.analysis();
    let refusal = analysis.and_then(|a| a.defensibility.refusal());
    let fit = tail.chosen_fit().map(|fit| format!("{} fit of {}", fit_name(fit), fit_data(fit, tail.block_seconds())));
    let estimate = tail.estimate(probability).filter(|_| refusal.is_none() && fit.is_some()).cloned();
    let not_quoted = match (&tail.outcome, refusal, &estimate) {
        (Err(why), _, _) => Some(format!("not estimated: {}", why.trim_end_matches('.'))),
        (Ok(_), Some(refusal), _) => Some(refusal),
        (Ok(_), None, None) => Some(format!("not estimated at {}", format_probability(probability))),
        (Ok(_), None, Some(_)) => None,
    };
    PwcetHeadline {
        metric: tail.metric.clone(),
        probability,
        estimate,
        confidence,
        fit,
        defensibility: analysis.map(|a| a.defensibility.clone()),
        not_quoted,
        warnings: analysis.map_or(0, |a| a.warnings.len()),
    }
}

/// The terminal summary's line on the pWCET of a scenario's main metric: the estimate at
/// 1e-9 per activation with its confidence interval and fit; "pWCET: not defensible from this
/// run — <reasons>; <remedies>." with no number when the analysis says it cannot be
/// quoted; or why there is none; None when the metric has no samples there.
pub fn summary_line(
    run: &rtlab_results::run::RunResult,
    scenario: &str,
    metric: Option<&str>,
) -> Result<Option<String>, ReportError> {
    Ok(summary_headline(run, scenario, metric)?.map(|h| h.line()))
}

/// The per-activation probability the terminal summary states the pWCET at.
pub const SUMMARY_PROBABILITY: f64 = 1e-9;

#[cfg(test)]
mod tests {
    use super::*;
    use rtlab_analysis::{LatencyHistogram, Moments, Summary};
    use rtlab_results::run::RunResult;

    fn fixture() -> RunResult {
        serde_json::from_str(include_str!("../tests/fixtures/simulated-2cpu.run.json")).unwrap()
    }

    /// A measurement on `cpu` holding `values`, one per second index in `per_second`.
    fn measurement(base: &Measurement, cpu: usize, values: &[i64], per_second: Vec<Option<i64>>) -> Measurement {
        let mut m = base.clone();
        let mut h = LatencyHistogram::new(10_000_000_000).unwrap();
        let mut moments = Moments::new();
        for &v in values {
            h.record(v);
            moments.record(v);
        }
        m.cpu = cpu;
        m.count = moments.count;
        m.cycles = moments.count;
        m.interval_ns = 1_000_000;
        m.summary = Summary::from_parts(&h, &moments);
        m.moments = moments;
        m.histogram = h.encode().unwrap();
        m.per_second_max_ns = per_second;
        m.details.clear();
        m
    }

    #[test]
    fn block_maxima_are_the_largest_of_any_cpu_per_second_without_empty_seconds() {
        let run = fixture();
        let base = &run.measurements[0];
        let a = measurement(base, 0, &[1_000, 2_000, 3_000], vec![Some(10), None, Some(30), Some(5)]);
        let b = measurement(base, 1, &[1_500, 2_500], vec![Some(20), None, Some(7)]);
        let input = tail_input(&[&a, &b]).unwrap();
        assert_eq!(input.block_maxima_ns, vec![20.0, 30.0, 5.0]);
        assert_eq!(input.total_samples, 5);
        // 1,000 periods per second each, all recorded: 2,000 samples per second together.
        assert!((input.sample_rate_hz - 2000.0).abs() < 1e-9, "{}", input.sample_rate_hz);
        assert!((input.samples_per_block - 2000.0).abs() < 1e-9);
    }

    #[test]
    fn a_block_of_several_seconds_holds_as_many_seconds_of_samples() {
        let run = fixture();
        let mut a = measurement(&run.measurements[0], 0, &[1_000], vec![Some(1_000)]);
        a.block_s = 60;
        let input = tail_input(&[&a]).unwrap();
        assert!((input.samples_per_block - 60_000.0).abs() < 1e-6, "{}", input.samples_per_block);
    }

    #[test]
    fn the_tail_is_the_top_five_percent_or_at_least_two_thousand_samples() {
        let run = fixture();
        let base = &run.measurements[0];
        // 100,000 distinct values 1..=100,000 µs: the top 5 % is 5,000 samples.
        let values: Vec<i64> = (1..=100_000).map(|v| v * 1_000).collect();
        let m = measurement(base, 0, &values, vec![Some(100_000_000)]);
        let input = tail_input(&[&m]).unwrap();
        let taken: u64 = input.tail_ns.iter().map(|(_, c)| c).sum();
        assert!((5_000..5_200).contains(&taken), "{taken}");
        assert!(input.tail_ns.windows(2).all(|w| w[0].0 < w[1].0), "ascending");
        assert_eq!(input.tail_ns.last().map(|(v, _)| *v), Some(100_000_000.0), "clamped to the exact max");
        assert!(input.tail_ns[0].0 > 94_000_000.0 && input.tail_ns[0].0 < 95_100_000.0, "{:?}", input.tail_ns[0]);

        // 10,000 samples: 5 % would be 500, at least 2,000 are taken.
        let small = measurement(base, 0, &values[..10_000], vec![Some(1)]);
        let taken: u64 = tail_input(&[&small]).unwrap().tail_ns.iter().map(|(_, c)| c).sum();
        assert!((2_000..2_020).contains(&taken), "{taken}");

        // Fewer than 2,000: all of them.
        let tiny = measurement(base, 0, &values[..300], vec![Some(1)]);
        let taken: u64 = tail_input(&[&tiny]).unwrap().tail_ns.iter().map(|(_, c)| c).sum();
        assert_eq!(taken, 300);
    }

    #[test]
    fn steps_follow_each_other() {
        use rtlab_results::run::Detail;
        let run = fixture();
        let base = &run.measurements[0];
        let mut a = measurement(base, 0, &[1_000], vec![Some(1), Some(2)]);
        let mut b = measurement(base, 0, &[2_000], vec![Some(3)]);
        a.details.insert("period_ns".into(), Detail::Int(1_000_000));
        b.details.insert("period_ns".into(), Detail::Int(500_000));
        let input = tail_input(&[&a, &b]).unwrap();
        assert_eq!(input.block_maxima_ns, vec![1.0, 2.0, 3.0]);
    }

    #[test]
    fn an_analysis_is_made_once_per_input_and_configuration() {
        let run = fixture();
        let measurements: Vec<&Measurement> = run.measurements_of("idle", "timer.latency").collect();
        let analysis = |config: &PwcetConfig| {
            let tail = measurements_tail(&measurements, "timer.latency", config).unwrap().unwrap();
            tail.outcome.expect("10,000 samples are enough for the GPD")
        };
        let default = PwcetConfig::default();
        let (first, again) = (analysis(&default), analysis(&default));
        assert!(Arc::ptr_eq(&first, &again), "the second is the cached first");
        let other = PwcetConfig { probabilities: vec![1e-6, 1e-7, 1e-9, 1e-12], ..PwcetConfig::default() };
        let different = analysis(&other);
        assert!(!Arc::ptr_eq(&first, &different));
        assert_eq!(different.estimates.len(), 4);
        assert_eq!(*first, analyse(&measurements, &default).unwrap(), "the cache gives what the analysis gives");
    }

    #[test]
    fn requirement_probabilities_join_the_table() {
        let r = |t: &str| rtlab_analysis::requirement::parse_requirement(t).unwrap();
        let config = config_for(
            "timer.latency",
            &[r("timer pwcet(1e-7) < 1ms"), r("timer pwcet(1e-9) < 1ms"), r("net pwcet(1e-3) < 1ms")],
        );
        assert_eq!(config.probabilities, vec![1e-6, 1e-7, 1e-9, 1e-12]);
    }

    #[test]
    fn probabilities_for_people() {
        assert_eq!(format_probability(1e-9), "1e-9");
        assert_eq!(format_probability(2.5e-7), "2.5e-7");
        assert_eq!(format_per_hour(3.6e-3), "3.6e-3");
        assert_eq!(format_per_hour(0.0123), "0.012");
        assert_eq!(format_per_hour(0.99999), "≈1");
        assert_eq!(format_per_hour(3.6e-9), "3.6e-9");
    }
}
