//! Confidence intervals of the pWCET by a nonparametric Poisson bootstrap of the fitted
//! observations, refitted with the chosen model and estimator.
//!
//! Each replicate draws every observation's count from Poisson(count) (Hanley & MacGibbon
//! 2006: the bootstrap of a weighted sample without fixing its size; `compare` uses the same
//! for histograms), so a histogram tail costs one draw per distinct value; for peaks over a
//! threshold the number of exceedances varies too, and with it the exceedance rate, which is
//! part of the pWCET's uncertainty. MLE refits start from the full-sample fit. The interval is
//! the percentile interval of the replicates' pWCET.
//!
//! Like every bootstrap it treats the observations as independent: with autocorrelated maxima
//! (the Ljung-Box and runs diagnostics say so) the interval is too narrow.

use super::fit::{fit, FitData, Model};
use super::{Estimator, TailModel};
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use rand_distr::{Distribution, Poisson};

/// Fewest observations a replicate is refitted from.
const MIN_REPLICATE_OBSERVATIONS: f64 = 10.0;

/// The refitted replicates and how many could not be refitted.
#[derive(Debug, Clone, Default)]
pub(crate) struct Replicates {
    pub models: Vec<Model>,
    pub failed: usize,
}

pub(crate) fn replicates(
    model: TailModel,
    estimator: Estimator,
    data: &FitData,
    chosen: &Model,
    resamples: usize,
    seed: u64,
) -> Replicates {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let counts = &data.observations().counts;
    let unit = UnitPoisson::new();
    let mut out = Replicates::default();
    for _ in 0..resamples {
        let drawn: Vec<f64> = counts
            .iter()
            .map(
                |&c| {
                    if c == 1.0 {
                        unit.sample(&mut rng)
                    } else {
                        Poisson::new(c).map_or(0.0, |d| d.sample(&mut rng))
                    }
                },
            )
            .collect();
        if drawn.iter().sum::<f64>() < MIN_REPLICATE_OBSERVATIONS {
            out.failed += 1;
            continue;
        }
        match fit(model, estimator, &data.with_counts(drawn), Some(chosen)) {
            Ok(m) => out.models.push(m),
            Err(_) => out.failed += 1,
        }
    }
    out
}

/// Poisson(1) by inversion of its cdf: block maxima nearly all have count 1, and this is several
/// times cheaper than the general sampler in a debug build (the report's tests run one).
struct UnitPoisson {
    cdf: [f64; 20],
}

impl UnitPoisson {
    fn new() -> UnitPoisson {
        let mut cdf = [0.0; 20];
        let (mut term, mut sum) = ((-1.0f64).exp(), 0.0);
        for (k, slot) in cdf.iter_mut().enumerate() {
            sum += term;
            *slot = sum;
            term /= k as f64 + 1.0;
        }
        UnitPoisson { cdf }
    }

    fn sample(&self, rng: &mut Xoshiro256PlusPlus) -> f64 {
        let u: f64 = rng.random();
        // P(X > 19) < 1e-18: the last entry stands for the rest.
        self.cdf.iter().position(|&c| u < c).unwrap_or(self.cdf.len() - 1) as f64
    }
}

/// The (low, high) percentile interval at `confidence` of the values (linear interpolation
/// between order statistics); None without values.
pub(crate) fn percentile_interval(values: &mut [f64], confidence: f64) -> Option<(f64, f64)> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let tail = (1.0 - confidence) / 2.0;
    Some((interpolate(values, tail), interpolate(values, 1.0 - tail)))
}

fn interpolate(sorted: &[f64], q: f64) -> f64 {
    let position = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let below = position.floor() as usize;
    let above = (below + 1).min(sorted.len() - 1);
    let fraction = position - below as f64;
    match (sorted.get(below), sorted.get(above)) {
        (Some(a), Some(b)) => a + (b - a) * fraction,
        _ => f64::NAN,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_poisson_has_mean_and_variance_one() {
        let unit = UnitPoisson::new();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let draws: Vec<f64> = (0..100_000).map(|_| unit.sample(&mut rng)).collect();
        let mean = draws.iter().sum::<f64>() / draws.len() as f64;
        let variance = draws.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / draws.len() as f64;
        assert!((mean - 1.0).abs() < 0.01 && (variance - 1.0).abs() < 0.02, "{mean} {variance}");
        assert!((unit.cdf[0] - (-1.0f64).exp()).abs() < 1e-15);
    }

    #[test]
    fn percentile_interval_interpolates() {
        let mut v: Vec<f64> = (0..=100).rev().map(f64::from).collect();
        let (low, high) = percentile_interval(&mut v, 0.9).unwrap();
        assert!((low - 5.0).abs() < 1e-12 && (high - 95.0).abs() < 1e-12);
        assert_eq!(percentile_interval(&mut [], 0.9), None);
        assert_eq!(percentile_interval(&mut [3.0], 0.95), Some((3.0, 3.0)));
    }
}
