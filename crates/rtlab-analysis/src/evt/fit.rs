//! One fit: a model (GEV, Gumbel, GPD) by an estimator (PWM, MLE) on the data it needs (block
//! maxima with their block size, or exceedances of a threshold with the sample count), and the
//! per-activation probabilities it implies.

use super::distributions::{Gev, Gpd, Gumbel};
use super::sample::Observations;
use super::{mle, pwm, Estimator, FitFailure, TailModel};

/// What a fit is made from.
#[derive(Debug, Clone)]
pub(crate) enum FitData {
    /// Block maxima; each block holds `samples_per_block` samples.
    Blocks { maxima: Observations, samples_per_block: f64 },
    /// The samples above `threshold` out of `total_samples`.
    Exceedances { exceedances: Observations, threshold: f64, total_samples: f64 },
}

impl FitData {
    pub fn observations(&self) -> &Observations {
        match self {
            FitData::Blocks { maxima, .. } => maxima,
            FitData::Exceedances { exceedances, .. } => exceedances,
        }
    }

    /// The same data with other counts (bootstrap replicate, split).
    pub fn with_counts(&self, counts: Vec<f64>) -> FitData {
        match self {
            FitData::Blocks { maxima, samples_per_block } => {
                FitData::Blocks { maxima: maxima.with_counts(counts), samples_per_block: *samples_per_block }
            }
            FitData::Exceedances { exceedances, threshold, total_samples } => FitData::Exceedances {
                exceedances: exceedances.with_counts(counts),
                threshold: *threshold,
                total_samples: *total_samples,
            },
        }
    }
}

/// A fitted distribution with what turns it into per-activation probabilities.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Model {
    /// Block maxima follow `gev` (shape 0 for a Gumbel); a block holds `samples_per_block`
    /// samples.
    Block { gev: Gev, samples_per_block: f64 },
    /// Values above the threshold follow `gpd`; a sample exceeds the threshold with
    /// probability `exceedance_rate`.
    Pot { gpd: Gpd, exceedance_rate: f64 },
}

impl Model {
    pub fn shape(&self) -> f64 {
        match self {
            Model::Block { gev, .. } => gev.shape,
            Model::Pot { gpd, .. } => gpd.shape,
        }
    }

    /// The value exceeded with per-activation probability p; None where the model says nothing
    /// (GPD: p above the exceedance rate, i.e. below the threshold).
    pub fn pwcet_ns(&self, p: f64) -> Option<f64> {
        if !(p > 0.0 && p < 1.0) {
            return None;
        }
        let value = match self {
            Model::Block { gev, samples_per_block } => gev.per_sample_quantile(p, *samples_per_block),
            Model::Pot { gpd, exceedance_rate } => {
                if p > *exceedance_rate {
                    return None;
                }
                gpd.quantile_of_sf(p / exceedance_rate)
            }
        };
        value.is_finite().then_some(value)
    }

    /// Per-activation probability that a sample exceeds x; None below a GPD's threshold.
    pub fn exceedance_probability(&self, x: f64) -> Option<f64> {
        match self {
            Model::Block { gev, samples_per_block } => Some(gev.per_sample_sf(x, *samples_per_block)),
            Model::Pot { gpd, exceedance_rate } => (x >= gpd.threshold).then(|| exceedance_rate * gpd.sf(x)),
        }
    }

    /// The upper end of the fitted observations' support (ξ < 0 only).
    pub fn endpoint(&self) -> Option<f64> {
        match self {
            Model::Block { gev, .. } => gev.endpoint().filter(|_| gev.shape < 0.0),
            Model::Pot { gpd, .. } => gpd.endpoint(),
        }
    }

    /// cdf and survival function of the fitted observations (block maxima or exceedances).
    pub fn cdf(&self, x: f64) -> f64 {
        match self {
            Model::Block { gev, .. } => gev.cdf(x),
            Model::Pot { gpd, .. } => gpd.cdf(x),
        }
    }

    pub fn sf(&self, x: f64) -> f64 {
        match self {
            Model::Block { gev, .. } => gev.sf(x),
            Model::Pot { gpd, .. } => gpd.sf(x),
        }
    }

    /// Quantile of the fitted observations' distribution.
    pub fn quantile(&self, probability: f64) -> f64 {
        match self {
            Model::Block { gev, .. } => gev.quantile(probability),
            Model::Pot { gpd, .. } => gpd.quantile(probability),
        }
    }

    /// (location or threshold, scale, shape).
    pub fn parameters(&self) -> (f64, f64, f64) {
        match self {
            Model::Block { gev, .. } => (gev.location, gev.scale, gev.shape),
            Model::Pot { gpd, .. } => (gpd.threshold, gpd.scale, gpd.shape),
        }
    }
}

/// Fits `model` by `estimator`; MLE starts from `start` when given (a bootstrap replicate of
/// the same fit), else from the PWM estimate.
pub(crate) fn fit(
    model: TailModel,
    estimator: Estimator,
    data: &FitData,
    start: Option<&Model>,
) -> Result<Model, FitFailure> {
    match (model, data) {
        (TailModel::Gev | TailModel::Gumbel, FitData::Blocks { maxima, samples_per_block }) => {
            let n = *samples_per_block;
            let block = |gev: Gev| Model::Block { gev, samples_per_block: n };
            let start_gev = match start {
                Some(Model::Block { gev, .. }) => Some(*gev),
                _ => None,
            };
            match (model, estimator) {
                (TailModel::Gev, Estimator::Pwm) => Ok(block(pwm::gev(maxima)?)),
                (TailModel::Gev, Estimator::Mle) => {
                    let start = match start_gev {
                        Some(gev) => gev,
                        None => pwm::gev(maxima).or_else(|_| pwm::gumbel(maxima).map(|g| g.as_gev()))?,
                    };
                    Ok(block(mle::gev(maxima, start)?))
                }
                (_, Estimator::Pwm) => Ok(block(pwm::gumbel(maxima)?.as_gev())),
                (_, Estimator::Mle) => {
                    let start = match start_gev {
                        Some(gev) => Gumbel { location: gev.location, scale: gev.scale },
                        None => pwm::gumbel(maxima)?,
                    };
                    Ok(block(mle::gumbel(maxima, start)?.as_gev()))
                }
            }
        }
        (TailModel::Exponential, FitData::Exceedances { exceedances, threshold, total_samples }) => {
            // The MLE (and the PWM estimate) of an exponential's scale is the mean excess.
            let exceedance_rate = exceedances.total() / total_samples;
            if !(exceedance_rate > 0.0 && exceedance_rate <= 1.0) {
                return Err(FitFailure::new("no samples above the threshold"));
            }
            let mean_excess = exceedances.iter().map(|(x, c)| (x - threshold) * c).sum::<f64>() / exceedances.total();
            let gpd = Gpd::new(*threshold, mean_excess, 0.0)
                .ok_or_else(|| FitFailure::new("every sample above the threshold equals it"))?;
            Ok(Model::Pot { gpd, exceedance_rate })
        }
        (TailModel::Gpd, FitData::Exceedances { exceedances, threshold, total_samples }) => {
            let exceedance_rate = exceedances.total() / total_samples;
            if !(exceedance_rate > 0.0 && exceedance_rate <= 1.0) {
                return Err(FitFailure::new("no samples above the threshold"));
            }
            let pot = |gpd: Gpd| Model::Pot { gpd, exceedance_rate };
            match estimator {
                Estimator::Pwm => Ok(pot(pwm::gpd(exceedances, *threshold)?)),
                Estimator::Mle => {
                    let start = match start {
                        Some(Model::Pot { gpd, .. }) => *gpd,
                        _ => pwm::gpd(exceedances, *threshold).unwrap_or(Gpd {
                            threshold: *threshold,
                            scale: 1.0,
                            shape: 0.0,
                        }),
                    };
                    Ok(pot(mle::gpd(exceedances, start)?))
                }
            }
        }
        _ => Err(FitFailure::new("the model does not fit this kind of data")),
    }
}

/// Log-likelihood of the fitted observations (block maxima, or exceedances above the threshold)
/// under `model`: Σ count · ln density. The likelihood-ratio tests of ξ = 0 compare two of them.
pub(crate) fn log_likelihood(model: &Model, observations: &Observations) -> f64 {
    observations
        .iter()
        .map(|(x, c)| {
            c * match model {
                Model::Block { gev, .. } => gev.log_density(x),
                Model::Pot { gpd, .. } => gpd.log_density(x),
            }
        })
        .sum()
}
