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
//! estimates with confidence intervals, diagnostics, curves for the figures, warnings).

use crate::AnalysisError;
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
    /// Bootstrap resamples for the confidence intervals.
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

/// Points of the figures, ns and probabilities.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct TailCurves {
    /// Empirical per-activation exceedance probability of each observed value.
    pub empirical: Vec<(f64, f64)>,
    /// The chosen fit's per-activation exceedance curve, down to the smallest probability.
    pub fitted: Vec<(f64, f64)>,
    /// QQ plot: (fitted quantile, observed value) for each fitted observation.
    pub qq: Vec<(f64, f64)>,
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
}

impl PwcetAnalysis {
    /// pWCET at a per-activation exceedance probability from the chosen fit, ns.
    pub fn pwcet_ns(&self, probability: f64) -> Option<f64> {
        let _ = probability;
        todo!("issue 8: EVT")
    }
}

/// Fits the tail of `input` and estimates the pWCET. Errors when there is too little data
/// to fit anything (fewer than 10 blocks and fewer than 10 exceedances).
pub fn analyse(input: &TailInput, config: &PwcetConfig) -> Result<PwcetAnalysis, AnalysisError> {
    let _ = (input, config);
    todo!("issue 8: EVT")
}
