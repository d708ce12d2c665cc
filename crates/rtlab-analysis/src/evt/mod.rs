//! pWCET by extreme value theory: the measured tail of a latency distribution extrapolated
//! to exceedance probabilities no run can observe (1e-9 per activation).
//!
//! Conventions (documented in docs/pwcet.md):
//! - GEV: F(x) = exp(-(1 + ξ (x - μ)/σ)^(-1/ξ)), ξ > 0 heavy (Fréchet) tail, ξ = 0 Gumbel,
//!   ξ < 0 bounded (Weibull). scipy's `genextreme` uses c = -ξ; R's `evd`/`ismev` use ξ.
//! - GPD: P(X - u > y | X > u) = (1 + ξ y/σ)^(-1/ξ), the same sign of ξ (scipy `genpareto`
//!   c = ξ).
//! - Probabilities are per activation (per sample); a block maximum of n samples exceeds
//!   x with probability 1 - (1 - p)^n.
//!
//! Main types: [`TailInput`] (what a run provides), [`PwcetConfig`], [`PwcetAnalysis`] (fits,
//! estimates with confidence intervals, diagnostics, curves for the figures, warnings), and
//! the distributions [`Gev`], [`Gumbel`], [`Gpd`].
//!
//! Method (docs/pwcet.md says it in full): block maxima are fitted with a GEV and a Gumbel,
//! the samples above a threshold of the tail with a GPD, each by probability-weighted moments
//! (`pwm`) and maximum likelihood (`mle`); one fit is chosen by a fixed rule ([`analyse`]),
//! its pWCET gets a bootstrap confidence interval (`bootstrap`), the block maxima are tested
//! for independence and stationarity before, and the fit against held-out data after
//! (`diagnostics`).

// `!(x > 0.0)` is deliberate throughout: unlike `x <= 0.0` it is also true for NaN, which is
// what keeps an invalid number from passing a check.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

mod bootstrap;
mod curves;
mod defensible;
mod diagnostics;
pub mod distributions;
mod fit;
mod mle;
mod profile;
mod pwm;
mod sample;
mod select;
mod stretched;

pub use defensible::MAX_DEFENSIBLE_SHAPE;
pub use distributions::{Gev, Gpd, Gumbel};
pub use select::{BLOCK_MERGES, CANDIDATE_STEP, MIN_CANDIDATE_EXCEEDANCES, MIN_COMPARED_EXCEEDANCES};

use crate::AnalysisError;
use fit::{FitData, Model};
use rand::rngs::Xoshiro256PlusPlus;
use rand::SeedableRng;
use rand_distr::{Binomial, Distribution};
use sample::Observations;
use serde::{Deserialize, Serialize};

/// The default per-activation exceedance probabilities of a pWCET table.
pub const DEFAULT_PROBABILITIES: [f64; 3] = [1e-6, 1e-9, 1e-12];

/// What a run provides to the tail analysis: its block maxima in time order and/or its
/// largest samples (value, count), in ns.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TailInput {
    /// Maxima of consecutive blocks in time order (per-second maxima; blocks without samples
    /// left out).
    pub block_maxima_ns: Vec<f64>,
    /// Samples per block on average (sample rate x block length).
    pub samples_per_block: f64,
    /// The distribution's upper tail as (value ns, count), ascending, from raw samples or a
    /// histogram; may be empty. Peaks over a threshold are taken from it.
    pub tail_ns: Vec<(f64, u64)>,
    /// Samples in the whole distribution (tail and below).
    pub total_samples: u64,
    /// Samples per second, to turn per-activation probabilities into per-hour ones.
    pub sample_rate_hz: f64,
}

/// Which fit estimates the pWCET a requirement or a task-set check uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TailModel {
    /// Block maxima, generalized extreme value distribution.
    Gev,
    /// Block maxima, Gumbel (GEV with ξ = 0).
    Gumbel,
    /// Peaks over a threshold, generalized Pareto distribution.
    Gpd,
    /// Peaks over a threshold, exponential (GPD with ξ = 0).
    Exponential,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Estimator {
    /// Probability-weighted moments (Hosking).
    Pwm,
    /// Maximum likelihood.
    Mle,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PwcetConfig {
    /// Per-activation exceedance probabilities of the table.
    pub probabilities: Vec<f64>,
    /// Confidence level of the intervals (0.95).
    pub confidence: f64,
    /// Bootstrap resamples for the confidence intervals (200: about 0.2 s of CPU for a one-hour
    /// run's 3600 block maxima in a debug build; capped by [`BOOTSTRAP_BUDGET`]).
    pub bootstrap_resamples: usize,
    /// Seed of the bootstrap (results are reproducible).
    pub seed: u64,
    /// Significance level of the diagnostics (0.05).
    pub significance: f64,
}

impl Default for PwcetConfig {
    fn default() -> Self {
        PwcetConfig {
            probabilities: DEFAULT_PROBABILITIES.to_vec(),
            confidence: 0.95,
            bootstrap_resamples: 200,
            seed: 1,
            significance: 0.05,
        }
    }
}

/// One fitted tail model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TailFit {
    pub model: TailModel,
    pub estimator: Estimator,
    /// μ (GEV, Gumbel) or the threshold u (GPD), ns.
    pub location_ns: f64,
    /// σ, ns.
    pub scale_ns: f64,
    /// ξ (0 for Gumbel), convention above.
    pub shape: f64,
    /// Observations fitted (blocks, or exceedances over the threshold).
    pub observations: usize,
    /// GPD: the fraction of all samples above the threshold.
    pub exceedance_rate: Option<f64>,
    /// GEV, Gumbel: samples per block (turns a block's probability into a per-activation one).
    pub samples_per_block: Option<f64>,
}

/// pWCET at one probability from the chosen fit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PwcetEstimate {
    /// Per activation.
    pub probability: f64,
    /// The probability that at least one activation in an hour exceeds the value, at the
    /// run's sample rate.
    pub per_hour_probability: f64,
    pub value_ns: f64,
    /// Confidence interval (bootstrap), ns.
    pub ci_low_ns: f64,
    pub ci_high_ns: f64,
}

/// A statistical test and its outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Diagnostic {
    /// "Ljung-Box (20 lags)", "runs test", "Kolmogorov-Smirnov, first vs second half",
    /// "Kolmogorov-Smirnov, held-out blocks".
    pub test: String,
    /// What it was applied to ("block maxima").
    pub on: String,
    pub statistic: f64,
    pub p_value: f64,
    /// p-value at or above the significance level.
    pub passed: bool,
}

impl Diagnostic {
    /// A test's outcome on `on`, passed at p ≥ `significance`.
    fn of(test: String, on: &str, result: diagnostics::TestResult, significance: f64) -> Diagnostic {
        Diagnostic {
            test,
            on: on.into(),
            statistic: result.statistic,
            p_value: result.p_value,
            passed: result.p_value >= significance,
        }
    }
}

/// Points of the figures, ns and probabilities.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct TailCurves {
    /// Empirical per-activation exceedance probability of each observed value.
    pub empirical: Vec<(f64, f64)>,
    /// The chosen fit's per-activation exceedance curve, down to the smallest probability.
    pub fitted: Vec<(f64, f64)>,
    /// QQ plot: (fitted quantile, observed value) for each fitted observation.
    pub qq: Vec<(f64, f64)>,
    /// Threshold stability: the GPD shape and the mean excess at candidate thresholds,
    /// ascending (empty without a tail).
    pub stability: Vec<ShapeAtThreshold>,
}

/// The whole tail analysis of one distribution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PwcetAnalysis {
    /// Every fit made (GEV PWM/MLE, Gumbel, GPD PWM/MLE where there was enough data).
    pub fits: Vec<TailFit>,
    /// Index in `fits` of the one the estimates, curves and `pwcet_ns` use.
    pub chosen: usize,
    /// Why that one (one sentence).
    pub chosen_because: String,
    pub estimates: Vec<PwcetEstimate>,
    /// Independence and identical-distribution tests, before fitting.
    pub diagnostics: Vec<Diagnostic>,
    /// Goodness of fit on held-out data, after fitting.
    pub goodness_of_fit: Vec<Diagnostic>,
    pub curves: TailCurves,
    /// Tests failed, too few blocks, heavy tail (ξ > 0), ... one sentence each.
    pub warnings: Vec<String>,
    /// The tests behind the choice of model: likelihood ratio of ξ = 0 against a free shape
    /// (GEV against Gumbel, GPD against exponential) and the MBPTA-CV test of the exceedances.
    pub selection: Vec<Diagnostic>,
    /// Input blocks merged into one block maximum (1: the input's blocks as they are), chosen
    /// so that the maxima are close to independent.
    pub blocks_merged: usize,
    /// Why that block size (one sentence).
    pub blocks_because: String,
    /// The peaks-over-threshold threshold, ns, and why (one sentence); None without a tail.
    pub threshold_ns: Option<f64>,
    pub threshold_because: String,
    /// Whether the pWCET can be quoted from this run; when not, `estimates` still hold the
    /// fitted values, to be shown only marked as not defensible.
    pub defensibility: Defensibility,
}

/// Whether a run's pWCET can be defended, and if not why and what would help.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Defensibility {
    /// True when nothing speaks against the estimate.
    pub defensible: bool,
    /// Why not, one clause each ("the block maxima are autocorrelated (Ljung-Box p < 0.001)").
    pub reasons: Vec<String>,
    /// What would make it defensible, one clause each ("a longer run under a steady load").
    pub remedies: Vec<String>,
}

impl Defensibility {
    /// "not defensible from this run — <reasons>; <remedies>", None when defensible. The
    /// wording every place that would show the pWCET uses instead of the number.
    pub fn refusal(&self) -> Option<String> {
        if self.defensible {
            return None;
        }
        let mut text = format!("not defensible from this run — {}", self.reasons.join("; "));
        if !self.remedies.is_empty() {
            text.push_str("; ");
            text.push_str(&self.remedies.join("; "));
        }
        Some(text)
    }
}

/// The shape fitted above one candidate threshold (the threshold stability plot).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShapeAtThreshold {
    pub threshold_ns: f64,
    /// Samples above the threshold.
    pub exceedances: usize,
    /// ξ of the GPD by maximum likelihood, with its 95 % interval (normal approximation of
    /// the MLE, sd (1 + ξ)/√k).
    pub shape: f64,
    pub shape_low: f64,
    pub shape_high: f64,
    /// Mean of the excesses over the threshold, ns (the mean residual life plot).
    pub mean_excess_ns: f64,
}

impl PwcetAnalysis {
    /// pWCET at a per-activation exceedance probability from the chosen fit, ns, whether
    /// defensible or not (see [`PwcetAnalysis::defensible_pwcet_ns`]).
    pub fn pwcet_ns(&self, probability: f64) -> Option<f64> {
        self.fits.get(self.chosen)?.pwcet_ns(probability)
    }

    /// The pWCET when it can be quoted: Err with [`Defensibility::refusal`] when not.
    pub fn defensible_pwcet_ns(&self, probability: f64) -> Result<Option<f64>, String> {
        match self.defensibility.refusal() {
            Some(refusal) => Err(refusal),
            None => Ok(self.pwcet_ns(probability)),
        }
    }

    /// The chosen fit.
    pub fn chosen_fit(&self) -> Option<&TailFit> {
        self.fits.get(self.chosen)
    }
}

impl TailFit {
    fn from_model(model: TailModel, estimator: Estimator, fitted: &Model, observations: &Observations) -> TailFit {
        let (location_ns, scale_ns, shape) = fitted.parameters();
        let (samples_per_block, exceedance_rate) = match fitted {
            Model::Block { samples_per_block, .. } => (Some(*samples_per_block), None),
            Model::Pot { exceedance_rate, .. } => (None, Some(*exceedance_rate)),
        };
        TailFit {
            model,
            estimator,
            location_ns,
            scale_ns,
            shape,
            observations: observations.total().round() as usize,
            exceedance_rate,
            samples_per_block,
        }
    }

    fn model(&self) -> Option<Model> {
        match self.model {
            TailModel::Gev | TailModel::Gumbel => Some(Model::Block {
                gev: Gev::new(self.location_ns, self.scale_ns, self.shape)?,
                samples_per_block: self.samples_per_block.filter(|n| *n >= 1.0)?,
            }),
            TailModel::Gpd | TailModel::Exponential => Some(Model::Pot {
                gpd: Gpd::new(self.location_ns, self.scale_ns, self.shape)?,
                exceedance_rate: self.exceedance_rate.filter(|r| *r > 0.0 && *r <= 1.0)?,
            }),
        }
    }

    /// The value (ns) that one activation exceeds with probability `probability`; None outside
    /// (0, 1) or, for the GPD, above the exceedance rate (below the threshold the GPD says
    /// nothing).
    pub fn pwcet_ns(&self, probability: f64) -> Option<f64> {
        self.model()?.pwcet_ns(probability)
    }

    /// The probability that one activation exceeds `value_ns`; None below a GPD's threshold.
    pub fn exceedance_probability(&self, value_ns: f64) -> Option<f64> {
        self.model()?.exceedance_probability(value_ns)
    }
}

/// Probability that at least one of `rate_hz` × 3600 activations in an hour exceeds a value each
/// activation exceeds with probability `p`: 1 - (1 - p)^(rate·3600), precise for p = 1e-12.
pub fn per_hour_probability(p: f64, rate_hz: f64) -> f64 {
    -(rate_hz * 3600.0 * (-p).ln_1p()).exp_m1()
}

/// A fit that failed; the reason goes into a warning.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FitFailure(pub String);

impl FitFailure {
    pub(crate) fn new(reason: impl Into<String>) -> FitFailure {
        FitFailure(reason.into())
    }
}

/// Fewest block maxima (or exceedances) any fit is made from.
pub const MIN_OBSERVATIONS: usize = 10;
/// Fewest block maxima for the three-parameter GEV to be the chosen fit (and below which a
/// warning says to run longer).
pub const MIN_BLOCKS: usize = 30;
/// Fewest exceedances for the peaks over threshold to be the chosen approach and for a
/// defensible pWCET (below it a warning says so).
pub const MIN_EXCEEDANCES: usize = 50;
/// Most bootstrap refits × distinct values fitted (200 replicates up to 5000 values) ...
pub const BOOTSTRAP_BUDGET: usize = 1_000_000;
/// ... but never fewer replicates than this (unless configured so).
pub const MIN_BOOTSTRAP_RESAMPLES: usize = 20;
/// Shape above which the tail is so heavy that the extrapolation is unreliable.
pub const UNRELIABLE_SHAPE: f64 = 0.2;
/// Points of the fitted curve.
pub const FITTED_CURVE_POINTS: usize = 61;
/// Most points of the empirical curve and of the QQ plot (the top of the tail is kept whole).
pub const MAX_FIGURE_POINTS: usize = 500;

/// The error of this module (the crate's error type has no variant of its own for it yet).
fn pwcet_error(reason: impl std::fmt::Display) -> AnalysisError {
    AnalysisError::Pwcet(reason.to_string())
}

fn validate(input: &TailInput, config: &PwcetConfig) -> Result<(), AnalysisError> {
    if let Some(p) = config.probabilities.iter().find(|p| !(**p > 0.0 && **p < 1.0)) {
        return Err(pwcet_error(format!("probability {p} is not between 0 and 1")));
    }
    if !(config.confidence > 0.0 && config.confidence < 1.0) {
        return Err(pwcet_error(format!("confidence {} is not between 0 and 1", config.confidence)));
    }
    if !(config.significance > 0.0 && config.significance < 1.0) {
        return Err(pwcet_error(format!("significance {} is not between 0 and 1", config.significance)));
    }
    if input.block_maxima_ns.iter().any(|x| !x.is_finite()) {
        return Err(pwcet_error("a block maximum is not a finite number"));
    }
    let block_size_valid = input.samples_per_block >= 1.0 && input.samples_per_block.is_finite();
    if !input.block_maxima_ns.is_empty() && !block_size_valid {
        return Err(pwcet_error(format!(
            "{} samples per block: a block holds at least one sample",
            input.samples_per_block
        )));
    }
    if input.tail_ns.iter().any(|(x, _)| !x.is_finite()) {
        return Err(pwcet_error("a tail value is not a finite number"));
    }
    let tail_count: u64 = input.tail_ns.iter().map(|(_, c)| *c).fold(0, u64::saturating_add);
    if tail_count > input.total_samples {
        return Err(pwcet_error(format!(
            "the tail holds {tail_count} samples but the distribution only {}",
            input.total_samples
        )));
    }
    if !(input.sample_rate_hz > 0.0 && input.sample_rate_hz.is_finite()) {
        return Err(pwcet_error(format!("sample rate {} Hz: it must be positive", input.sample_rate_hz)));
    }
    Ok(())
}

/// Fits of the analysis, in the order of `PwcetAnalysis::fits`.
const FIT_ORDER: [(TailModel, Estimator); 7] = [
    (TailModel::Gev, Estimator::Mle),
    (TailModel::Gev, Estimator::Pwm),
    (TailModel::Gumbel, Estimator::Mle),
    (TailModel::Gumbel, Estimator::Pwm),
    (TailModel::Gpd, Estimator::Mle),
    (TailModel::Gpd, Estimator::Pwm),
    (TailModel::Exponential, Estimator::Mle),
];

fn model_name(model: TailModel) -> &'static str {
    match model {
        TailModel::Gev => "GEV",
        TailModel::Gumbel => "Gumbel",
        TailModel::Gpd => "GPD",
        TailModel::Exponential => "exponential",
    }
}

fn estimator_name(estimator: Estimator) -> &'static str {
    match estimator {
        Estimator::Pwm => "probability-weighted moments",
        Estimator::Mle => "maximum likelihood",
    }
}

/// One successful fit with what made it.
struct Made {
    tail_fit: TailFit,
    model: Model,
    data_index: usize,
}

/// Fits the tail of `input` and estimates the pWCET. Errors when there is too little data
/// to fit anything (fewer than 10 blocks and fewer than 10 exceedances).
pub fn analyse(input: &TailInput, config: &PwcetConfig) -> Result<PwcetAnalysis, AnalysisError> {
    validate(input, config)?;
    let mut warnings = Vec::new();
    let tail = Observations::from_pairs(input.tail_ns.iter().map(|&(v, c)| (v, c as f64)))
        .ok_or_else(|| pwcet_error("a tail value is not finite"))?;
    let total_samples = input.total_samples as f64;

    // The data choose the block size and the threshold before anything is fitted.
    let seconds_per_block = input.samples_per_block / input.sample_rate_hz;
    let block_choice = select::block_size(&input.block_maxima_ns, seconds_per_block, config.significance);
    let samples_per_block = input.samples_per_block * block_choice.merged as f64;
    let maxima =
        Observations::from_values(&block_choice.series).ok_or_else(|| pwcet_error("a block maximum is not finite"))?;
    let blocks = maxima.total() as usize;
    let pot = select::threshold(&tail, total_samples);
    let exceedance_count = pot.as_ref().map_or(0, |t| t.exceedances.total() as usize);
    if blocks < MIN_OBSERVATIONS && exceedance_count < MIN_OBSERVATIONS {
        return Err(pwcet_error(format!(
            "{blocks} block maxima and {exceedance_count} samples above a threshold: at least {MIN_OBSERVATIONS} of either are needed; run longer"
        )));
    }

    let mut data: Vec<FitData> = Vec::new();
    let mut made: Vec<Made> = Vec::new();
    if blocks >= MIN_OBSERVATIONS {
        data.push(FitData::Blocks { maxima: maxima.clone(), samples_per_block });
    }
    if let Some(t) = pot.as_ref().filter(|_| exceedance_count >= MIN_OBSERVATIONS) {
        data.push(FitData::Exceedances { exceedances: t.exceedances.clone(), threshold: t.threshold, total_samples });
    }
    for (model, estimator) in FIT_ORDER {
        for (data_index, d) in data.iter().enumerate() {
            let matches = matches!(
                (model, d),
                (TailModel::Gpd | TailModel::Exponential, FitData::Exceedances { .. })
                    | (TailModel::Gev | TailModel::Gumbel, FitData::Blocks { .. })
            );
            if !matches {
                continue;
            }
            match fit::fit(model, estimator, d, None) {
                Ok(fitted) => made.push(Made {
                    tail_fit: TailFit::from_model(model, estimator, &fitted, d.observations()),
                    model: fitted,
                    data_index,
                }),
                Err(FitFailure(reason)) => warnings.push(format!(
                    "The {} fit by {} failed ({reason}), so it is not among the fits.",
                    model_name(model),
                    estimator_name(estimator)
                )),
            }
        }
    }
    let selection = selection_tests(&made, &data, config.significance);
    // Asked only on the way to a bounded tail: a held-out fit of the exponential.
    let exponential_misfits = || {
        made.iter()
            .find(|m| m.tail_fit.model == TailModel::Exponential)
            .and_then(|m| data.get(m.data_index).map(|d| (m, d)))
            .is_some_and(|(m, d)| {
                held_out_tests(TailModel::Exponential, Estimator::Mle, d, &block_choice.series, &m.model, config)
                    .iter()
                    .any(|t| !t.passed)
            })
    };
    let (chosen, chosen_because) =
        choose(&made, &selection, blocks, exceedance_count, config.significance, exponential_misfits)
            .ok_or_else(|| pwcet_error(format!("no fit succeeded: {}", warnings.join(" "))))?;
    let Some(choice) = made.get(chosen) else {
        return Err(pwcet_error("no fit succeeded"));
    };
    let chosen_data = data.get(choice.data_index).ok_or_else(|| pwcet_error("no fit data"))?;
    let (model, estimator) = (choice.tail_fit.model, choice.tail_fit.estimator);

    let diagnostics = independence_diagnostics(&block_choice.series, config.significance);
    let goodness_of_fit = held_out_tests(model, estimator, chosen_data, &block_choice.series, &choice.model, config);

    // The bootstrap's cost is replicates × distinct values: bounded, so that a week of
    // per-second maxima does not take minutes.
    let distinct = chosen_data.observations().values.len().max(1);
    let resamples = config.bootstrap_resamples.min((BOOTSTRAP_BUDGET / distinct).max(MIN_BOOTSTRAP_RESAMPLES));
    if resamples < config.bootstrap_resamples {
        warnings.push(format!(
            "The bootstrap used {resamples} replicates instead of {} to bound its cost on {distinct} distinct values, so the confidence intervals are rougher.",
            config.bootstrap_resamples
        ));
    }
    let replicates = bootstrap::replicates(model, estimator, chosen_data, &choice.model, resamples, config.seed);
    // The interval spans the other shape model on the same data too (free shape when ξ = 0
    // was kept, ξ = 0 when the shape was fitted): whether ξ = 0 is a choice the data seldom
    // settle, and an interval of one model alone hides it (docs/pwcet.md, "Confidence
    // intervals").
    let alternative = alternative_fit(&made, chosen);
    let alternative_replicates = alternative.map(|a| {
        bootstrap::replicates(
            a.tail_fit.model,
            a.tail_fit.estimator,
            chosen_data,
            &a.model,
            resamples,
            config.seed ^ ALTERNATIVE_SEED,
        )
    });
    let free_shapes = free_shape_fits(&made, choice.data_index, chosen_data);
    let mut estimates = Vec::new();
    for &p in &config.probabilities {
        let Some(value_ns) = choice.model.pwcet_ns(p) else {
            warnings.push(format!(
                "No pWCET at {p:e}: the probability is above the rate at which samples exceed the GPD threshold, where a percentile of the measurements answers instead."
            ));
            continue;
        };
        let mut values: Vec<f64> = replicates.models.iter().filter_map(|m| m.pwcet_ns(p)).collect();
        let (mut ci_low_ns, mut ci_high_ns) =
            bootstrap::percentile_interval(&mut values, config.confidence).unwrap_or((value_ns, value_ns));
        if let Some(r) = &alternative_replicates {
            let mut values: Vec<f64> = r.models.iter().filter_map(|m| m.pwcet_ns(p)).collect();
            if let Some((low, high)) = bootstrap::percentile_interval(&mut values, config.confidence) {
                ci_low_ns = ci_low_ns.min(low);
                ci_high_ns = ci_high_ns.max(high);
            }
        }
        // Up to the largest pWCET of a GPD shape the exceedances do not reject (docs/pwcet.md,
        // "Confidence intervals"): what a tail heavier at p than at the threshold needs.
        for (gpd, exceedances, rate) in &free_shapes {
            if let Some(high) = profile::upper_pwcet(gpd, exceedances, *rate, p, config.confidence) {
                ci_high_ns = ci_high_ns.max(high);
            }
        }
        estimates.push(PwcetEstimate {
            probability: p,
            per_hour_probability: per_hour_probability(p, input.sample_rate_hz),
            value_ns,
            ci_low_ns,
            ci_high_ns,
        });
    }
    let mut shapes: Vec<f64> = replicates.models.iter().map(Model::shape).collect();
    let shape_interval = bootstrap::percentile_interval(&mut shapes, config.confidence);

    warnings.extend(diagnostic_warnings(&diagnostics, &goodness_of_fit, model));
    warnings.extend(data_warnings(input, blocks, exceedance_count, seconds_per_block * block_choice.merged as f64));
    if let Some(w) = shape_warning(&choice.model, model, shape_interval, config.confidence) {
        warnings.push(w);
    }
    if resamples > 0 && replicates.failed * 10 > resamples {
        warnings.push(format!(
            "{} of {} bootstrap refits failed, so the confidence intervals come from the {} others and are less certain.",
            replicates.failed,
            resamples,
            replicates.models.len()
        ));
    }
    if resamples == 0 {
        warnings.push("No bootstrap was asked for, so the confidence intervals are only the estimate itself.".into());
    } else if replicates.models.is_empty() {
        warnings.push(
            "No bootstrap replicate could be refitted, so the confidence intervals are only the estimate itself."
                .into(),
        );
    }
    // A positive shape a light tail can fake (docs/pwcet.md): compared with the GPD fitted
    // by maximum likelihood to the same exceedances, whichever estimator was chosen.
    let gpd_by_likelihood = made
        .iter()
        .find(|m| {
            m.tail_fit.model == TailModel::Gpd
                && m.tail_fit.estimator == Estimator::Mle
                && m.data_index == choice.data_index
        })
        .map_or(&choice.model, |m| &m.model);
    let tail_type = stretched::tail_type_conflict(&choice.model, gpd_by_likelihood, chosen_data, &config.probabilities);
    let defensibility = defensible::judge(&defensible::Evidence {
        diagnostics: &diagnostics,
        goodness_of_fit: &goodness_of_fit,
        model,
        shape: choice.model.shape(),
        blocks,
        exceedances: exceedance_count,
        input_blocks: input.block_maxima_ns.len(),
        seconds_per_block: seconds_per_block * block_choice.merged as f64,
        sample_rate_hz: input.sample_rate_hz,
        estimates: &estimates,
        significance: config.significance,
        tail_type: tail_type.as_ref(),
    });

    let mut curves = curves::tail_curves(
        &choice.model,
        chosen_data,
        &tail,
        total_samples,
        &maxima,
        samples_per_block,
        &config.probabilities,
    );
    let (threshold_ns, threshold_because) = match &pot {
        Some(t) => {
            curves.stability = t.stability.clone();
            (Some(t.threshold), t.because.clone())
        }
        None => (None, "no tail was given, so there is no threshold".into()),
    };
    Ok(PwcetAnalysis {
        fits: made.into_iter().map(|m| m.tail_fit).collect(),
        chosen,
        chosen_because,
        estimates,
        diagnostics,
        goodness_of_fit,
        curves,
        warnings,
        selection,
        blocks_merged: block_choice.merged,
        blocks_because: block_choice.because,
        threshold_ns,
        threshold_because,
        defensibility,
    })
}

/// Seed offset of the alternative model's bootstrap.
const ALTERNATIVE_SEED: u64 = 0x616c_7465;

/// The fit on the chosen fit's data with the other shape model: GPD (MLE, else PWM) for an
/// exponential and the other way round, GEV by MLE for a Gumbel and the other way round.
fn alternative_fit(made: &[Made], chosen: usize) -> Option<&Made> {
    let c = made.get(chosen)?;
    let find = |model: TailModel, estimator: Estimator| {
        made.iter()
            .find(|m| m.tail_fit.model == model && m.tail_fit.estimator == estimator && m.data_index == c.data_index)
    };
    match c.tail_fit.model {
        TailModel::Exponential => find(TailModel::Gpd, Estimator::Mle).or_else(|| find(TailModel::Gpd, Estimator::Pwm)),
        TailModel::Gpd => find(TailModel::Exponential, Estimator::Mle),
        TailModel::Gumbel => find(TailModel::Gev, Estimator::Mle),
        TailModel::Gev => find(TailModel::Gumbel, Estimator::Mle),
    }
}

/// The GPDs by maximum likelihood whose profile-likelihood upper ends the interval reaches
/// (docs/pwcet.md, "Confidence intervals"), each with its exceedances and exceedance rate: the
/// one above the chosen threshold, and one above the higher threshold that leaves a quarter of
/// those exceedances (when that is at least 1000), where a tail that grows heavier with the
/// level shows more of it. Empty for block maxima.
fn free_shape_fits(made: &[Made], data_index: usize, data: &FitData) -> Vec<(Gpd, Observations, f64)> {
    let FitData::Exceedances { exceedances, total_samples, .. } = data else { return Vec::new() };
    let mut out = Vec::new();
    let chosen = made.iter().find(|m| {
        m.tail_fit.model == TailModel::Gpd && m.tail_fit.estimator == Estimator::Mle && m.data_index == data_index
    });
    if let Some(Made { model: Model::Pot { gpd, exceedance_rate }, .. }) = chosen {
        out.push((*gpd, exceedances.clone(), *exceedance_rate));
    }
    let k = exceedances.total();
    let target = k / HIGHER_THRESHOLD_SHARE;
    if target >= MIN_HIGHER_EXCEEDANCES {
        if let Some((threshold, above)) = select::peaks_over_threshold(exceedances, target) {
            let higher = FitData::Exceedances { exceedances: above.clone(), threshold, total_samples: *total_samples };
            if let Ok(Model::Pot { gpd, exceedance_rate }) = fit::fit(TailModel::Gpd, Estimator::Mle, &higher, None) {
                out.push((gpd, above, exceedance_rate));
            }
        }
    }
    out
}

/// The higher threshold of [`free_shape_fits`] leaves 1/this of the chosen one's exceedances
/// ...
const HIGHER_THRESHOLD_SHARE: f64 = 4.0;
/// ... and is used only when that is at least this many: the profile of fewer exceedances
/// allows shapes so far above the estimate (ξ̂ + 0.2 from 100) that the interval says nothing.
const MIN_HIGHER_EXCEEDANCES: f64 = 1000.0;

/// A p-value of one test of ξ = 0 (both rejecting) below which a bounded tail is fitted without
/// the held-out test of the exponential: one exponential tail in a thousand gives that by chance.
const STRONG_REJECTION: f64 = 0.001;

const LRT_BLOCKS: &str = "likelihood ratio, GEV against Gumbel (ξ = 0)";
const LRT_POT: &str = "likelihood ratio, GPD against exponential (ξ = 0)";
const CV_TEST: &str = "MBPTA-CV, coefficient of variation of the excesses (1 if exponential)";

/// The tests of ξ = 0 behind the choice: a likelihood-ratio test on each kind of data whose
/// free and ξ = 0 fits by maximum likelihood both succeeded, and the MBPTA-CV test of the
/// exceedances. "passed" means ξ = 0 is not rejected.
fn selection_tests(made: &[Made], data: &[FitData], significance: f64) -> Vec<Diagnostic> {
    let find =
        |model: TailModel| made.iter().find(|m| m.tail_fit.model == model && m.tail_fit.estimator == Estimator::Mle);
    let mut out = Vec::new();
    for (free, zero, name, on) in [
        (TailModel::Gev, TailModel::Gumbel, LRT_BLOCKS, "block maxima"),
        (TailModel::Gpd, TailModel::Exponential, LRT_POT, "samples above the threshold"),
    ] {
        if let (Some(f), Some(z)) = (find(free), find(zero)) {
            if let Some(observations) = data.get(f.data_index).map(FitData::observations) {
                if let Some(r) = select::likelihood_ratio(&f.model, &z.model, observations) {
                    out.push(Diagnostic::of(name.into(), on, r, significance));
                }
            }
        }
    }
    for d in data {
        if let FitData::Exceedances { exceedances, threshold, .. } = d {
            if let Some(r) = select::coefficient_of_variation(exceedances, *threshold) {
                out.push(Diagnostic::of(CV_TEST.into(), "samples above the threshold", r, significance));
            }
        }
    }
    out
}

/// The rule choosing the fit behind the estimates (docs/pwcet.md, "Which fit is chosen"):
/// - with at least 50 samples above the threshold, peaks over threshold: the GPD (MLE, else
///   PWM) when ξ̂ > 0, whether or not ξ = 0 is rejected (the exponential would be the tighter
///   answer, not the safer one), and when the excesses' CV is above 1 and one test rejects
///   ξ = 0; otherwise the exponential, unless both the likelihood-ratio
///   and the MBPTA-CV tests reject ξ = 0 and either one does so at p < 0.001 or the
///   exponential fails a held-out goodness-of-fit test (a bounded tail underestimates when
///   wrong), then the bounded GPD;
/// - else with at least 10 block maxima, the Gumbel unless the likelihood-ratio test rejects
///   ξ = 0 or ξ̂ > 0, then the GEV by MLE (only with at least 30 maxima);
/// - else whatever fit was made.
fn choose(
    made: &[Made],
    selection: &[Diagnostic],
    blocks: usize,
    exceedances: usize,
    significance: f64,
    exponential_misfits: impl FnOnce() -> bool,
) -> Option<(usize, String)> {
    let find = |model: TailModel, estimator: Estimator| {
        made.iter().position(|m| m.tail_fit.model == model && m.tail_fit.estimator == estimator)
    };
    let either = |model: TailModel| find(model, Estimator::Mle).or_else(|| find(model, Estimator::Pwm));
    let named = |i: usize| {
        made.get(i).map_or(String::new(), |m| {
            format!("{} by {}", model_name(m.tail_fit.model), estimator_name(m.tail_fit.estimator))
        })
    };
    let test = |name: &str| selection.iter().find(|d| d.test == name);
    let rejects = |d: Option<&Diagnostic>| d.is_some_and(|d| d.p_value < significance);
    let p_of = |d: Option<&Diagnostic>| d.map_or("not made".to_string(), |d| format_p(d.p_value));

    if exceedances >= MIN_EXCEEDANCES {
        let (lrt, cv) = (test(LRT_POT), test(CV_TEST));
        let gpd = either(TailModel::Gpd);
        let shape = gpd.and_then(|i| made.get(i)).map_or(0.0, |m| m.tail_fit.shape);
        let heavier = cv.map_or(shape > 0.0, |d| d.statistic > 1.0) || shape > 0.0;
        let strongly = |d: Option<&Diagnostic>| d.is_some_and(|d| d.p_value < STRONG_REJECTION);
        let free = if heavier {
            rejects(lrt) || rejects(cv)
        } else {
            rejects(lrt) && rejects(cv) && (strongly(lrt) || strongly(cv) || exponential_misfits())
        };
        let tests = format!("likelihood ratio {}, MBPTA-CV {}", p_of(lrt), p_of(cv));
        if let (true, Some(i)) = (free, gpd) {
            let kind = if shape > 0.0 { "heavy" } else { "bounded" };
            let why = format!(
                "{exceedances} samples above the threshold; ξ = 0 is rejected ({tests}), so the shape is fitted (ξ = {shape:.3}, a {kind} tail)."
            );
            return Some((i, format!("{}: {why}", named(i))));
        }
        // A positive shape that the tests cannot tell from 0 cannot be ruled out either: the
        // exponential would be the tighter answer, not the safer one.
        if let (true, Some(i)) = (shape > 0.0, gpd) {
            let why = format!(
                "{exceedances} samples above the threshold; ξ = {shape:.3} is above 0 and ξ = 0 is not rejected ({tests}): the data allow the heavier tail, so it is used."
            );
            return Some((i, format!("{}: {why}", named(i))));
        }
        if let Some(i) = find(TailModel::Exponential, Estimator::Mle) {
            let why = if free {
                format!(
                    "{exceedances} samples above the threshold; ξ = 0 is rejected ({tests}) but no GPD fit succeeded."
                )
            } else if heavier || !(rejects(lrt) || rejects(cv)) {
                format!("{exceedances} samples above the threshold; ξ = 0 is not rejected ({tests}), so the light-tail model is used.")
            } else {
                format!("{exceedances} samples above the threshold; the evidence for a bounded tail ({tests}) is not enough to extrapolate below the light tail, so the light-tail model is used.")
            };
            return Some((i, format!("{}: {why}", named(i))));
        }
    }
    let few = format!(
        "{exceedances} samples above a threshold are too few for the peaks over threshold (at least {})",
        MIN_EXCEEDANCES
    );
    if blocks >= MIN_OBSERVATIONS {
        let lrt = test(LRT_BLOCKS);
        if blocks >= MIN_BLOCKS && rejects(lrt) {
            if let Some(i) = find(TailModel::Gev, Estimator::Mle) {
                let why = format!("{few}; on the {blocks} block maxima ξ = 0 is rejected (likelihood ratio {}), so the shape is fitted.", p_of(lrt));
                return Some((i, format!("{}: {why}", named(i))));
            }
        }
        // As for the exceedances: a positive shape not told from 0 is not ruled out either.
        if let Some(i) = find(TailModel::Gev, Estimator::Mle).filter(|_| blocks >= MIN_BLOCKS) {
            let shape = made.get(i).map_or(0.0, |m| m.tail_fit.shape);
            if shape > 0.0 {
                let why = format!("{few}; on the {blocks} block maxima ξ = {shape:.3} is above 0 and ξ = 0 is not rejected (likelihood ratio {}): the data allow the heavier tail, so it is used.", p_of(lrt));
                return Some((i, format!("{}: {why}", named(i))));
            }
        }
        if let Some(i) = either(TailModel::Gumbel) {
            let why = if blocks >= MIN_BLOCKS {
                format!("{few}; on the {blocks} block maxima ξ = 0 is not rejected (likelihood ratio {}), so the light-tail model is used.", p_of(lrt))
            } else {
                format!("{few}, and {blocks} block maxima are too few to fit a shape (at least {MIN_BLOCKS}), so ξ = 0 is assumed.")
            };
            return Some((i, format!("{}: {why}", named(i))));
        }
    }
    if let Some(i) = either(TailModel::Gpd).or_else(|| either(TailModel::Gev)) {
        return Some((i, format!("{}: the preferred fits failed; this one succeeded.", named(i))));
    }
    (!made.is_empty()).then(|| (0, format!("{}: the only fit that succeeded.", named(0))))
}

/// Ljung-Box, runs and two-half Kolmogorov-Smirnov tests of the block maxima in time order.
fn independence_diagnostics(series: &[f64], significance: f64) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let diagnostic = |test: String, result| Diagnostic::of(test, "block maxima", result, significance);
    let lags = diagnostics::ljung_box_lags(series.len());
    if let Some(r) = diagnostics::ljung_box(series, lags) {
        out.push(diagnostic(format!("Ljung-Box ({lags} lags)"), r));
    }
    if let Some(r) = diagnostics::runs_test(series) {
        out.push(diagnostic(RUNS_TEST.into(), r));
    }
    let (first, second) = series.split_at(series.len() / 2);
    if first.len() >= MIN_OBSERVATIONS / 2 {
        if let Some(r) = diagnostics::ks_two_sample(first, second) {
            out.push(diagnostic(HALVES_TEST.into(), r));
        }
    }
    out
}

const RUNS_TEST: &str = "runs test above/below the median";
const HALVES_TEST: &str = "Kolmogorov-Smirnov, first vs second half";

/// Kolmogorov-Smirnov and Anderson-Darling tests of held-out observations against the chosen
/// model refitted without them: the odd blocks against a fit of the even ones (time order,
/// `series`), or a random half of the exceedances (seeded) against a fit of the other half.
fn held_out_tests(
    model: TailModel,
    estimator: Estimator,
    data: &FitData,
    series: &[f64],
    chosen: &Model,
    config: &PwcetConfig,
) -> Vec<Diagnostic> {
    let (fit_data, test, what, on) = match data {
        FitData::Blocks { samples_per_block, .. } => {
            let even: Vec<f64> = series.iter().step_by(2).copied().collect();
            let odd: Vec<f64> = series.iter().skip(1).step_by(2).copied().collect();
            let (Some(even), Some(odd)) = (Observations::from_values(&even), Observations::from_values(&odd)) else {
                return Vec::new();
            };
            let fit_data = FitData::Blocks { maxima: even, samples_per_block: *samples_per_block };
            (fit_data, odd, "held-out blocks", "odd blocks, against a fit of the even blocks")
        }
        FitData::Exceedances { exceedances, .. } => {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(config.seed ^ HELD_OUT_SEED);
            let fit_counts: Vec<f64> = exceedances
                .counts
                .iter()
                .map(|&c| Binomial::new(c as u64, 0.5).map_or(0.0, |b| b.sample(&mut rng) as f64))
                .collect();
            let test_counts = exceedances.counts.iter().zip(&fit_counts).map(|(c, f)| c - f).collect();
            let test = exceedances.with_counts(test_counts);
            (
                data.with_counts(fit_counts),
                test,
                "held-out exceedances",
                "a random half of the exceedances, against a fit of the other half",
            )
        }
    };
    if fit_data.observations().total() < MIN_OBSERVATIONS as f64 || test.total() < MIN_OBSERVATIONS as f64 {
        return Vec::new();
    }
    let Ok(fitted) = fit::fit(model, estimator, &fit_data, Some(chosen)) else {
        return Vec::new();
    };
    let diagnostic = |test: String, result| Diagnostic::of(test, on, result, config.significance);
    let mut out = Vec::new();
    if let Some(r) = diagnostics::ks_one_sample(&test, |x| fitted.cdf(x)) {
        out.push(diagnostic(format!("Kolmogorov-Smirnov, {what}"), r));
    }
    // A bounded fit's end point is estimated from the other half: the larger half-sample
    // maximum lies beyond it about every other split, and Anderson-Darling would call that
    // impossible (A² = ∞). A held-out value at or beyond the fitted end point counts as lying at
    // the fitted 1 − 1/(2n) quantile, the finest resolution n held-out values have: a few such
    // values pass, many bunched there still fail.
    let end = fitted.endpoint();
    let top = 0.5 / test.total();
    let beyond = |x: f64| end.is_some_and(|e| x >= e);
    let cdf = |x: f64| if beyond(x) { 1.0 - top } else { fitted.cdf(x) };
    let sf = |x: f64| if beyond(x) { top } else { fitted.sf(x) };
    if let Some(r) = diagnostics::anderson_darling(&test, cdf, sf) {
        out.push(diagnostic(format!("Anderson-Darling, {what}"), r));
    }
    out
}

/// Seed offset of the held-out split (so it does not repeat the bootstrap's draws).
const HELD_OUT_SEED: u64 = 0x6865_6c64;

fn format_p(p: f64) -> String {
    if p < 0.001 {
        "p < 0.001".into()
    } else {
        format!("p = {p:.3}")
    }
}

/// One sentence per failed test, saying what the failure means.
fn diagnostic_warnings(diagnostics: &[Diagnostic], goodness_of_fit: &[Diagnostic], model: TailModel) -> Vec<String> {
    let mut out = Vec::new();
    for d in diagnostics.iter().filter(|d| !d.passed) {
        let p = format_p(d.p_value);
        out.push(if d.test.starts_with("Ljung-Box") {
            format!("The Ljung-Box test finds the block maxima autocorrelated ({p}): they are not independent as EVT assumes, so the pWCET and its interval are likely optimistic.")
        } else if d.test == RUNS_TEST {
            format!("The runs test finds the block maxima clustered above or below their median in time ({p}): a trend or phases of load, so they are not independent and identically distributed.")
        } else {
            format!("The first and second halves of the run have different block maxima (Kolmogorov-Smirnov {p}): conditions changed during the run, so no single distribution describes it.")
        });
    }
    for d in goodness_of_fit.iter().filter(|d| !d.passed) {
        let test = d.test.split(',').next().unwrap_or(&d.test);
        out.push(format!(
            "The {} fit does not describe the held-out data ({test} {}): the tail model is doubtful and the pWCET may be wrong in either direction.",
            model_name(model),
            format_p(d.p_value)
        ));
    }
    out
}

/// Too few blocks, too few exceedances, no block maxima to test.
fn data_warnings(input: &TailInput, blocks: usize, exceedances: usize, block_s: f64) -> Vec<String> {
    let mut out = Vec::new();
    if blocks == 0 {
        out.push("There are no block maxima: independence and stationarity could not be tested, and only the tail's GPD was fitted.".into());
    } else if blocks < MIN_BLOCKS {
        out.push(format!(
            "Only {blocks} block maxima (blocks of {block_s:.3} s): independence needs at least {MIN_BLOCKS} to be tested, so run for at least {:.0} s, and several minutes for useful intervals.",
            MIN_BLOCKS as f64 * block_s
        ));
    }
    let has_tail = !input.tail_ns.is_empty();
    if has_tail && exceedances < MIN_EXCEEDANCES {
        out.push(format!(
            "Only {exceedances} samples lie above the GPD threshold: at least {MIN_EXCEEDANCES} are needed for a usable fit; a longer run gives more."
        ));
    }
    out
}

/// The heavy-tail warning: ξ > 0 with a bootstrap interval above 0 (or no interval), or ξ at or
/// above [`UNRELIABLE_SHAPE`] in any case.
fn shape_warning(chosen: &Model, model: TailModel, interval: Option<(f64, f64)>, confidence: f64) -> Option<String> {
    let shape = chosen.shape();
    if model == TailModel::Gumbel || !(shape > 0.0) {
        return None;
    }
    if shape >= UNRELIABLE_SHAPE {
        return Some(format!(
            "The shape ξ = {shape:.3} is well above 0: the tail is heavy, the pWCET grows fast as the probability shrinks, and an extrapolation that far is unreliable."
        ));
    }
    match interval {
        Some((low, high)) if low > 0.0 => Some(format!(
            "The shape ξ = {shape:.3} ({:.0} % interval {low:.3} to {high:.3}) is above 0: the tail is heavy (unbounded), so the pWCET grows fast as the probability shrinks.",
            confidence * 100.0
        )),
        None => Some(format!(
            "The shape ξ = {shape:.3} is above 0: the tail is heavy (unbounded), so the pWCET grows fast as the probability shrinks."
        )),
        Some(_) => None,
    }
}
