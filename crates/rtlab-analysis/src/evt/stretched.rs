//! The stretched-exponential (Weibull-type) tail beside a GPD with a positive shape
//! (docs/pwcet.md, "A positive shape that a light tail can fake").
//!
//! A tail whose log-survival falls like a power of x below 1 (Weibull with shape τ < 1, and
//! near it the lognormal) is light in the limit, but above any threshold a run can reach it
//! looks like a GPD with ξ > 0: its local shape falls only like 1/ln(1/p). The GPD then
//! extrapolates a shape the tail no longer has at 1e-9 and overestimates, by about 2× for a
//! Weibull with τ = 1/2. Nothing in a few thousand exceedances shows the decline, so the
//! analysis cannot choose between the two; what it can do is notice that both describe the
//! exceedances equally well and disagree at the target probability, and refuse to quote either.
//! The same holds the other way: an exponential kept because ξ = 0 was not rejected lies below
//! a stretched exponential that fits as well.
//!
//! The model, for x above the threshold u, with r = x/u:
//!   P(X > x | X > u) = exp(−(r^τ − 1)/c),   τ > 0, c > 0,
//! the Weibull-tail form of Gardes & Girard with its origin at 0 ns, where a latency starts.
//! For fixed τ the likelihood's c is the weighted mean of r^τ − 1, so the fit is a
//! one-dimensional search over ln τ.

use super::fit::{log_likelihood, FitData, Model};
use super::sample::Observations;

/// Range of ln τ searched: τ from 0.018, a tail nearly as heavy as a power law, to 12, far
/// lighter than a normal's (τ = 2).
const LOG_SHAPE_RANGE: (f64, f64) = (-4.0, 2.5);
/// Grid points of the coarse search before the golden-section refinement.
const GRID: usize = 40;

/// How far below the GPD's log-likelihood the stretched exponential's may lie and still
/// describe the exceedances as well: both have two parameters, so this is an AIC difference
/// below 4, "substantial support" for both (Burnham & Anderson 2002, §2.6).
pub(crate) const MAX_LOG_LIKELIHOOD_GAP: f64 = 2.0;
/// The GPD's pWCET may exceed the stretched exponential's by this factor before the choice
/// between them decides the answer: the +35 % an estimate may lie above the truth
/// (docs/pwcet.md, "Targets").
pub(crate) const MAX_PWCET_RATIO: f64 = 1.35;

/// The probability the two models are compared at when the run quotes rarer ones: the depth
/// the calibration targets are stated at (docs/pwcet.md, "Targets"). Beyond it every pair of
/// tail models parts, however well both fit.
pub(crate) const COMPARED_AT_MOST: f64 = 1e-9;

/// A chosen peaks-over-threshold model (GPD with ξ > 0, or exponential) and a stretched
/// exponential that fit the same exceedances equally well and part at the compared
/// probability: the refusal's evidence.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TailTypeConflict {
    /// ξ of the chosen model (0 for the exponential).
    pub chosen_shape: f64,
    pub stretched_shape: f64,
    pub exceedances: f64,
    /// ln L(stretched) − ln L(GPD by maximum likelihood): positive when the stretched
    /// exponential fits better.
    pub log_likelihood_gap: f64,
    pub probability: f64,
    pub chosen_ns: f64,
    pub stretched_ns: f64,
}

/// The conflict, when the chosen model is a GPD with ξ ≥ 0 on exceedances (`gpd_fit` is the
/// GPD fitted by maximum likelihood to the same exceedances, the best two-parameter fit whose
/// likelihood is compared), a stretched exponential (τ < 1) fits them within
/// [`MAX_LOG_LIKELIHOOD_GAP`], and at the compared probability — the rarest quoted one, but
/// not beyond [`COMPARED_AT_MOST`] — the two pWCETs differ by more than [`MAX_PWCET_RATIO`]
/// either way.
pub(crate) fn tail_type_conflict(
    chosen: &Model,
    gpd_fit: &Model,
    data: &FitData,
    probabilities: &[f64],
) -> Option<TailTypeConflict> {
    let (Model::Pot { gpd, exceedance_rate }, Model::Pot { .. }) = (chosen, gpd_fit) else {
        return None;
    };
    let FitData::Exceedances { exceedances, threshold, .. } = data else { return None };
    if !(gpd.shape >= 0.0) {
        return None;
    }
    let rarest = probabilities.iter().copied().filter(|p| *p > 0.0).min_by(f64::total_cmp)?;
    let probability = rarest.max(COMPARED_AT_MOST);
    let chosen_ns = chosen.pwcet_ns(probability)?;
    let stretched = StretchedTail::fit(exceedances, *threshold, *exceedance_rate)?;
    let stretched_ns = stretched.pwcet_ns(probability)?;
    let log_likelihood_gap = stretched.log_likelihood(exceedances) - log_likelihood(gpd_fit, exceedances);
    let ratio = chosen_ns / stretched_ns;
    let parts = ratio > MAX_PWCET_RATIO || ratio * MAX_PWCET_RATIO < 1.0;
    // τ ≥ 1 is an exponential or lighter tail: below a chosen exponential it is the known,
    // safe overestimate of a compressed tail (docs/pwcet.md), not a faked positive shape.
    let stretched_out = stretched.shape < 1.0;
    (stretched_out && log_likelihood_gap >= -MAX_LOG_LIKELIHOOD_GAP && parts).then(|| TailTypeConflict {
        chosen_shape: gpd.shape,
        stretched_shape: stretched.shape,
        exceedances: exceedances.total(),
        log_likelihood_gap,
        probability,
        chosen_ns,
        stretched_ns,
    })
}

/// A Weibull-type tail fitted above a threshold.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct StretchedTail {
    pub threshold: f64,
    /// τ: 1 is an exponential tail, below 1 a stretched exponential.
    pub shape: f64,
    /// c of exp(−(r^τ − 1)/c).
    pub scale: f64,
    /// Probability that a sample exceeds the threshold.
    pub exceedance_rate: f64,
}

impl StretchedTail {
    /// Maximum likelihood on the exceedances (values at or above `threshold`); None when the
    /// threshold is not positive (the origin at 0 ns would not lie below the data) or the
    /// exceedances are too few to have a spread.
    pub fn fit(exceedances: &Observations, threshold: f64, exceedance_rate: f64) -> Option<StretchedTail> {
        if !(threshold > 0.0 && exceedance_rate > 0.0 && exceedance_rate <= 1.0) {
            return None;
        }
        let points: Vec<(f64, f64)> = exceedances.iter().map(|(x, c)| ((x / threshold).max(1.0), c)).collect();
        let weight: f64 = points.iter().map(|&(_, c)| c).sum();
        if !(weight >= 2.0) || points.iter().all(|&(r, _)| r == 1.0) {
            return None;
        }
        let sum_log_r: f64 = points.iter().map(|&(r, c)| c * r.ln()).sum();
        let scale_at = |tau: f64| points.iter().map(|&(r, c)| c * (r.powf(tau) - 1.0)).sum::<f64>() / weight;
        // Profile log-likelihood without the constant −ln u per observation and the −1 that
        // the mean of (r^τ − 1)/c contributes at the optimum c.
        let profile = |log_tau: f64| {
            let tau = log_tau.exp();
            let c = scale_at(tau);
            if !(c > 0.0 && c.is_finite()) {
                return f64::NEG_INFINITY;
            }
            weight * (tau.ln() - c.ln()) + (tau - 1.0) * sum_log_r
        };
        let (low, high) = LOG_SHAPE_RANGE;
        let step = (high - low) / GRID as f64;
        let best = (0..=GRID).map(|i| low + step * i as f64).max_by(|a, b| profile(*a).total_cmp(&profile(*b)))?;
        let (mut a, mut b) = ((best - step).max(low), (best + step).min(high));
        let golden = (5f64.sqrt() - 1.0) / 2.0;
        for _ in 0..60 {
            let (m1, m2) = (b - golden * (b - a), a + golden * (b - a));
            if profile(m1) < profile(m2) {
                a = m1;
            } else {
                b = m2;
            }
        }
        let shape = ((a + b) / 2.0).exp();
        let scale = scale_at(shape);
        (scale > 0.0 && scale.is_finite()).then_some(StretchedTail { threshold, shape, scale, exceedance_rate })
    }

    /// ln density of one exceedance x (per ns, comparable with a GPD's on the same values).
    pub fn log_density(&self, x: f64) -> f64 {
        let r = x / self.threshold;
        if !(r >= 1.0) {
            return f64::NEG_INFINITY;
        }
        (self.shape / self.scale).ln() + (self.shape - 1.0) * r.ln()
            - (r.powf(self.shape) - 1.0) / self.scale
            - self.threshold.ln()
    }

    pub fn log_likelihood(&self, exceedances: &Observations) -> f64 {
        exceedances.iter().map(|(x, c)| c * self.log_density(x)).sum()
    }

    /// The value exceeded with per-activation probability p; None above the exceedance rate.
    pub fn pwcet_ns(&self, p: f64) -> Option<f64> {
        if !(p > 0.0 && p <= self.exceedance_rate) {
            return None;
        }
        let value = self.threshold * (1.0 + self.scale * (self.exceedance_rate / p).ln()).powf(1.0 / self.shape);
        value.is_finite().then_some(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::Xoshiro256PlusPlus;
    use rand::{RngExt, SeedableRng};

    /// Exceedances of u drawn exactly from the model: r = (1 + c·E)^(1/τ), E ~ Exp(1).
    fn draw(tail: &StretchedTail, n: usize, seed: u64) -> Observations {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let values: Vec<f64> = (0..n)
            .map(|_| {
                let e = -(1.0f64 - rng.random::<f64>()).ln();
                tail.threshold * (1.0 + tail.scale * e).powf(1.0 / tail.shape)
            })
            .collect();
        Observations::from_values(&values).unwrap()
    }

    #[test]
    fn the_fit_recovers_the_shape_and_scale_it_was_drawn_from() {
        for (shape, scale) in [(0.5, 0.3), (1.0, 0.1), (2.0, 0.05), (0.2, 2.0)] {
            let truth = StretchedTail { threshold: 20_000.0, shape, scale, exceedance_rate: 0.02 };
            let data = draw(&truth, 20_000, 7);
            let fitted = StretchedTail::fit(&data, truth.threshold, 0.02).unwrap();
            assert!((fitted.shape / shape - 1.0).abs() < 0.05, "τ {shape}: {fitted:?}");
            assert!((fitted.scale / scale - 1.0).abs() < 0.1, "c {scale}: {fitted:?}");
            // The fitted likelihood is at least the truth's: it is the maximum.
            assert!(fitted.log_likelihood(&data) >= truth.log_likelihood(&data) - 1e-6);
        }
    }

    #[test]
    fn the_quantile_inverts_the_survival_function_exactly() {
        // Weibull with shape 1/2 and scale 1 µs: P(X > x) = exp(−√(x/1000)). Above u = 16 µs
        // (√16 = 4): r^½ − 1 = (√x − 4)/4 ⇒ c = 1/4, rate e^−4.
        let tail = StretchedTail { threshold: 16_000.0, shape: 0.5, scale: 0.25, exceedance_rate: (-4f64).exp() };
        let p = 1e-9f64;
        let truth = 1000.0 * (1.0 / p).ln().powi(2);
        let value = tail.pwcet_ns(p).unwrap();
        assert!((value / truth - 1.0).abs() < 1e-12, "{value} vs {truth}");
        assert_eq!(tail.pwcet_ns(0.5), None, "above the exceedance rate");
        // The density integrates to 1 above the threshold (trapezoid in ln x).
        let (mut area, mut x) = (0.0, 16_000.0f64);
        while x < 1e9 {
            let next = x * 1.001;
            area += 0.5 * (tail.log_density(x).exp() + tail.log_density(next).exp()) * (next - x);
            x = next;
        }
        assert!((area - 1.0).abs() < 1e-4, "{area}");
    }

    /// The top 2 % of 200,000 samples of `draw_sample` as exceedances, and the GPD and the
    /// exponential fitted to them.
    fn tail_of(draw_sample: impl Fn(f64) -> f64, seed: u64) -> (FitData, Model, Model) {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut samples: Vec<f64> = (0..200_000).map(|_| draw_sample(rng.random::<f64>())).collect();
        samples.sort_by(f64::total_cmp);
        let threshold = samples[200_000 - 4001];
        let exceedances = Observations::from_values(&samples[200_000 - 4000..]).unwrap();
        let data = FitData::Exceedances { exceedances, threshold, total_samples: 200_000.0 };
        let gpd = super::super::fit::fit(super::super::TailModel::Gpd, super::super::Estimator::Mle, &data, None);
        let exponential =
            super::super::fit::fit(super::super::TailModel::Exponential, super::super::Estimator::Mle, &data, None);
        (data, gpd.unwrap(), exponential.unwrap())
    }

    #[test]
    fn a_stretched_exponential_tail_is_a_conflict_a_heavy_or_exponential_one_is_not() {
        const PROBABILITIES: [f64; 3] = [1e-6, 1e-9, 1e-12];
        // 10 µs + 1 µs·Weibull(1/2): light in the limit, a GPD shape of about 0.18 at its top
        // 2 %, a GPD pWCET(1e-9) about twice the truth (docs/pwcet.md).
        let weibull = |u: f64| 10_000.0 + 1000.0 * (-(1.0 - u).ln()).powi(2);
        for seed in 1..=3 {
            let (data, gpd, _) = tail_of(weibull, seed);
            let c = tail_type_conflict(&gpd, &gpd, &data, &PROBABILITIES).expect("a conflict");
            assert_eq!(c.probability, 1e-9, "compared at 1e-9, not at the rarer 1e-12");
            assert!(c.chosen_shape > 0.1 && c.stretched_shape < 0.7, "{c:?}");
            assert!(c.chosen_ns > MAX_PWCET_RATIO * c.stretched_ns, "{c:?}");
            assert!(c.log_likelihood_gap >= -MAX_LOG_LIKELIHOOD_GAP, "{c:?}");
            assert_eq!(c.exceedances, 4000.0);
        }
        // GPD ξ = 0.3 exactly: the stretched exponential is far below it at 1e-9 and the
        // likelihood rejects it.
        let pareto = |u: f64| 20_000.0 + 2000.0 * ((1.0 - u).powf(-0.3) - 1.0) / 0.3;
        // 10 µs + Exp(5 µs): the stretched exponential is the exponential (τ ≈ 1).
        let exponential = |u: f64| 10_000.0 - 5000.0 * (1.0 - u).ln();
        for seed in 1..=3 {
            let (data, gpd, _) = tail_of(pareto, seed);
            assert_eq!(tail_type_conflict(&gpd, &gpd, &data, &PROBABILITIES), None, "Pareto, seed {seed}");
            let (data, gpd, exp) = tail_of(exponential, seed);
            assert_eq!(tail_type_conflict(&exp, &gpd, &data, &PROBABILITIES), None, "exponential, seed {seed}");
        }
    }

    #[test]
    fn no_fit_without_a_positive_threshold_or_a_spread() {
        let data = Observations::from_values(&[5.0, 6.0, 7.0]).unwrap();
        assert_eq!(StretchedTail::fit(&data, 0.0, 0.1), None);
        assert_eq!(StretchedTail::fit(&data, -3.0, 0.1), None);
        let flat = Observations::from_pairs([(5.0, 10.0)]).unwrap();
        assert_eq!(StretchedTail::fit(&flat, 5.0, 0.1), None);
    }
}
