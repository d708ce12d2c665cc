//! What the data decide before and around the fit (docs/pwcet.md, "Choices from the data"):
//! - the block size: input blocks (per-second maxima) are merged k at a time, the smallest k
//!   whose maxima pass the Ljung-Box test, so that they are close to independent;
//! - the threshold of the peaks over threshold: the lowest candidate above which the GPD shape
//!   is stable (it lies inside the 95 % interval of every higher candidate's shape);
//! - ξ = 0 or not: likelihood-ratio tests (GEV against Gumbel, GPD against exponential) and
//!   the MBPTA-CV test (the coefficient of variation of the excesses is 1 for an exponential).

use super::diagnostics::{chi_square_sf, ljung_box, ljung_box_lags, normal_two_sided, TestResult};
use super::fit::{fit, log_likelihood, FitData, Model};
use super::sample::Observations;
use super::{Estimator, ShapeAtThreshold, TailModel, MIN_BLOCKS, MIN_OBSERVATIONS};
use statrs::function::erf::erfc_inv;

/// Input blocks merged per block maximum that the block-size rule tries, smallest first.
pub const BLOCK_MERGES: [usize; 11] = [1, 2, 3, 5, 10, 20, 30, 60, 120, 300, 600];

/// The chosen block size and the block maxima it gives, in time order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BlockChoice {
    pub merged: usize,
    pub series: Vec<f64>,
    pub because: String,
}

/// Maxima of `k` consecutive values; a last, incomplete group is left out (its block would
/// hold fewer samples than the others).
pub(crate) fn merge_blocks(series: &[f64], k: usize) -> Vec<f64> {
    if k <= 1 {
        return series.to_vec();
    }
    series.chunks_exact(k).map(|c| c.iter().copied().fold(f64::NEG_INFINITY, f64::max)).collect()
}

/// The smallest merge of [`BLOCK_MERGES`] whose maxima pass Ljung-Box at `significance` and
/// still number at least [`MIN_BLOCKS`]; the input's own blocks when none does (the
/// diagnostics then say that the maxima are not independent).
pub(crate) fn block_size(series: &[f64], seconds_per_block: f64, significance: f64) -> BlockChoice {
    let own = |because: String| BlockChoice { merged: 1, series: series.to_vec(), because };
    if series.len() < MIN_BLOCKS {
        return own(format!(
            "the run's own blocks: {} are too few to merge (at least {MIN_BLOCKS} are kept)",
            series.len()
        ));
    }
    let mut tried = Vec::new();
    for k in BLOCK_MERGES {
        let merged = merge_blocks(series, k);
        if merged.len() < MIN_BLOCKS {
            break;
        }
        let Some(test) = ljung_box(&merged, ljung_box_lags(merged.len())) else {
            return own("the run's own blocks: their maxima are constant, so independence cannot be tested".into());
        };
        if test.p_value >= significance {
            let size = block_length(k as f64 * seconds_per_block);
            let because = if k == 1 {
                format!(
                    "the run's own blocks of {size}: their maxima pass the Ljung-Box test (p = {:.3})",
                    test.p_value
                )
            } else {
                format!(
                    "blocks of {size}, the shortest whose maxima pass the Ljung-Box test (p = {:.3}; shorter blocks: {})",
                    test.p_value,
                    tried.join(", ")
                )
            };
            return BlockChoice { merged: k, series: merged, because };
        }
        tried.push(format!("{} p {}", block_length(k as f64 * seconds_per_block), format_p_short(test.p_value)));
    }
    own(format!(
        "the run's own blocks: no block length up to {MIN_BLOCKS} blocks makes the maxima pass the Ljung-Box test ({})",
        tried.join(", ")
    ))
}

fn block_length(seconds: f64) -> String {
    if seconds >= 1.0 && (seconds - seconds.round()).abs() < 1e-9 {
        format!("{seconds:.0} s")
    } else {
        format!("{seconds:.3} s")
    }
}

fn format_p_short(p: f64) -> String {
    if p < 0.001 {
        "< 0.001".into()
    } else {
        format!("= {p:.3}")
    }
}

/// Smallest candidate number of exceedances of the threshold rule ...
pub const MIN_CANDIDATE_EXCEEDANCES: f64 = 50.0;
/// Largest share of all samples above a candidate threshold: below it the GPD's bias from
/// the distribution's body outweighs the variance it saves.
pub const MAX_EXCEEDANCE_SHARE: f64 = 0.02;
/// ... and the factor between candidates.
pub const CANDIDATE_STEP: f64 = 1.5;
/// z of the 95 % interval of a candidate's shape.
const Z95: f64 = 1.959_963_984_540_054;

/// The chosen threshold, the samples above it and the stability curve it was read from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ThresholdChoice {
    pub threshold: f64,
    pub exceedances: Observations,
    pub because: String,
    pub stability: Vec<ShapeAtThreshold>,
}

/// The largest tail value that leaves at least `target` samples strictly above it (ties make
/// them more), with those samples; the tail's smallest value when it holds fewer. None when
/// nothing lies above it.
pub(crate) fn peaks_over_threshold(tail: &Observations, target: f64) -> Option<(f64, Observations)> {
    let mut above = 0.0;
    let mut first_above = tail.values.len();
    while first_above > 1 && above < target {
        first_above -= 1;
        above += tail.counts.get(first_above).copied().unwrap_or(0.0);
    }
    let threshold = *tail.values.get(first_above.checked_sub(1)?)?;
    let exceedances = Observations {
        values: tail.values.get(first_above..)?.to_vec(),
        counts: tail.counts.get(first_above..)?.to_vec(),
    };
    (exceedances.total() > 0.0).then_some((threshold, exceedances))
}

/// Standard error of a GPD shape estimated by maximum likelihood from k exceedances,
/// (1 + ξ)/√k (Smith 1987; ξ > -1/2), never below 0.5/√k.
fn shape_se(shape: f64, k: f64) -> f64 {
    (1.0 + shape).max(0.5) / k.sqrt()
}

/// Candidate thresholds leaving 50, 75, 112, ... samples above them, up to everything the
/// tail holds above its smallest value; the GPD by maximum likelihood above each; the lowest
/// threshold whose shape agrees with every higher candidate's ([`stable_index`]). Candidates
/// whose fit fails are left out of the curve. None when fewer than [`MIN_OBSERVATIONS`] samples lie
/// above the tail's smallest value.
pub(crate) fn threshold(tail: &Observations, total_samples: f64) -> Option<ThresholdChoice> {
    let available = tail.total() - tail.counts.first().copied().unwrap_or(0.0);
    if available < MIN_OBSERVATIONS as f64 {
        return None;
    }
    let available = available.min((MAX_EXCEEDANCE_SHARE * total_samples).ceil().max(MIN_CANDIDATE_EXCEEDANCES));
    let mut targets = Vec::new();
    let mut target = MIN_CANDIDATE_EXCEEDANCES.min(available);
    loop {
        targets.push(target);
        if target >= available {
            break;
        }
        target = (target * CANDIDATE_STEP).ceil().min(available);
    }
    // Highest threshold first.
    let mut candidates: Vec<(ShapeAtThreshold, Observations)> = Vec::new();
    for target in targets {
        let Some((u, exceedances)) = peaks_over_threshold(tail, target) else { continue };
        if candidates.last().is_some_and(|(c, _)| c.threshold_ns == u) {
            continue;
        }
        let k = exceedances.total();
        let data = FitData::Exceedances { exceedances: exceedances.clone(), threshold: u, total_samples };
        let Ok(Model::Pot { gpd, .. }) = fit(TailModel::Gpd, Estimator::Mle, &data, None) else { continue };
        let se = shape_se(gpd.shape, k);
        let mean_excess_ns = exceedances.iter().map(|(x, c)| (x - u) * c).sum::<f64>() / k;
        candidates.push((
            ShapeAtThreshold {
                threshold_ns: u,
                exceedances: k.round() as usize,
                shape: gpd.shape,
                shape_low: gpd.shape - Z95 * se,
                shape_high: gpd.shape + Z95 * se,
                mean_excess_ns,
            },
            exceedances,
        ));
    }
    let chosen = stable_index(&candidates.iter().map(|(c, _)| c.clone()).collect::<Vec<_>>());
    let (threshold, exceedances, because) = match chosen {
        Some(i) => {
            let (c, e) = candidates.get(i)?;
            let because = if candidates.len() == 1 {
                format!("the only candidate threshold, with {} samples above it", c.exceedances)
            } else if i + 1 == candidates.len() {
                format!(
                    "the lowest of {} candidates: the shape above it (ξ = {:.3}) agrees with the shape above every higher one",
                    candidates.len(),
                    c.shape
                )
            } else {
                let below = &candidates[i + 1].0;
                format!(
                    "the lowest of {} candidates whose shape (ξ = {:.3}) agrees with the shape above every higher one; below it, with {} samples above, ξ = {:.3} does not",
                    candidates.len(),
                    c.shape,
                    below.exceedances,
                    below.shape
                )
            };
            (c.threshold_ns, e.clone(), because)
        }
        None => {
            // No candidate could be fitted: the old fixed rule, 1 % of the samples (50 to 1000).
            let target = (0.01 * total_samples).ceil().clamp(50.0, 1000.0);
            let (u, e) = peaks_over_threshold(tail, target)?;
            (u, e, "no candidate threshold could be fitted; the one leaving 1 % of the samples above it".into())
        }
    };
    let mut stability: Vec<ShapeAtThreshold> = candidates.into_iter().map(|(c, _)| c).collect();
    stability.reverse();
    Some(ThresholdChoice { threshold, exceedances, because, stability })
}

/// Index (highest threshold first) of the stable threshold: the lowest candidate whose shape
/// agrees with the shape above every higher candidate. For nested exceedances the difference
/// of two maximum-likelihood shapes has variance se²(higher) − se²(lower) (Hausman 1978), and
/// a difference beyond z of it rejects the lower one; z is Bonferroni-corrected for the higher
/// candidates compared (5 % in all), and only candidates with at least
/// [`MIN_COMPARED_EXCEEDANCES`] are compared, so that noise in the few-exceedance estimates
/// does not stop the scan. Scanning starts at the lowest threshold (the most data).
fn stable_index(candidates: &[ShapeAtThreshold]) -> Option<usize> {
    if candidates.is_empty() {
        return None;
    }
    for j in (0..candidates.len()).rev() {
        let lower = &candidates[j];
        // Shapes from fewer exceedances are too skewed for the normal approximation (the MLE of
        // ξ from 50 exceedances of an exponential reaches -0.5 now and then): they are drawn,
        // and can be chosen, but do not veto a lower threshold.
        let higher: Vec<&ShapeAtThreshold> =
            candidates[..j].iter().filter(|h| h.exceedances >= MIN_COMPARED_EXCEEDANCES).collect();
        if higher.is_empty() {
            return Some(j);
        }
        let z = std::f64::consts::SQRT_2 * erfc_inv(STABILITY_LEVEL / higher.len() as f64);
        let k_lower = lower.exceedances.max(1) as f64;
        let agrees = higher.iter().all(|h| {
            let k_higher = h.exceedances.max(1) as f64;
            let variance = (1.0 + lower.shape).max(0.5).powi(2) * (1.0 / k_higher - 1.0 / k_lower).max(0.0);
            (h.shape - lower.shape).abs() <= z * variance.sqrt()
        });
        if agrees {
            return Some(j);
        }
    }
    Some(0)
}

/// Fewest exceedances of a higher candidate whose shape is compared with a lower one's.
pub const MIN_COMPARED_EXCEEDANCES: usize = 100;

/// Family-wise level of the threshold stability comparisons.
pub const STABILITY_LEVEL: f64 = 0.05;

/// Likelihood-ratio test of ξ = 0: 2(ℓ(free) − ℓ(ξ = 0)) against χ²(1) (ξ = 0 is inside the
/// parameter space, so Wilks' theorem applies).
pub(crate) fn likelihood_ratio(free: &Model, zero: &Model, observations: &Observations) -> Option<TestResult> {
    let d = 2.0 * (log_likelihood(free, observations) - log_likelihood(zero, observations));
    if d.is_nan() {
        return None;
    }
    let d = d.max(0.0);
    Some(TestResult { statistic: d, p_value: chi_square_sf(d, 1.0) })
}

/// The MBPTA-CV test (Abella et al. 2017): the coefficient of variation of the excesses over
/// the threshold is 1 for an exponential tail, and its estimate from k excesses has standard
/// deviation 1/√k there; the statistic is the CV, the p-value two-sided from z = (CV − 1)√k.
pub(crate) fn coefficient_of_variation(exceedances: &Observations, threshold: f64) -> Option<TestResult> {
    let k = exceedances.total();
    if k < MIN_OBSERVATIONS as f64 {
        return None;
    }
    let mean = exceedances.iter().map(|(x, c)| (x - threshold) * c).sum::<f64>() / k;
    let variance = exceedances.iter().map(|(x, c)| (x - threshold - mean).powi(2) * c).sum::<f64>() / (k - 1.0);
    if !(mean > 0.0) || !variance.is_finite() {
        return None;
    }
    let cv = variance.sqrt() / mean;
    Some(TestResult { statistic: cv, p_value: normal_two_sided((cv - 1.0) * k.sqrt()) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evt::Gpd;

    #[test]
    fn merged_blocks_drop_an_incomplete_last_group() {
        assert_eq!(merge_blocks(&[1.0, 5.0, 2.0, 3.0, 9.0], 2), vec![5.0, 3.0]);
        assert_eq!(merge_blocks(&[1.0, 5.0], 1), vec![1.0, 5.0]);
    }

    #[test]
    fn stable_threshold_is_the_lowest_whose_shape_agrees_with_every_higher_one() {
        let c = |shape: f64, exceedances: usize| ShapeAtThreshold {
            threshold_ns: 0.0,
            exceedances,
            shape,
            shape_low: shape - 0.1,
            shape_high: shape + 0.1,
            mean_excess_ns: 1.0,
        };
        // Highest threshold first. The lowest (ξ = 0.8 from 10,000) disagrees with the spikes'
        // ξ ≈ 0 above 100 and 200; the next (ξ = 0.05 from 400) agrees with both.
        let candidates = [c(0.1, 100), c(-0.05, 200), c(0.05, 400), c(0.8, 10_000)];
        assert_eq!(stable_index(&candidates), Some(2));
        // Noise at few exceedances does not stop the lowest: 0.3 from 50 is within
        // z·(1.1)·√(1/50 − 1/10,000) ≈ 2.4 × 0.155 of 0.1.
        let noisy = [c(0.3, 50), c(0.02, 100), c(0.1, 10_000)];
        assert_eq!(stable_index(&noisy), Some(2));
        // A shape from fewer than 100 exceedances never vetoes: -0.49 from 50 (an exponential's
        // MLE now and then) against 0.0 from 4000 would be 3.5 standard deviations.
        let skewed = [c(-0.49, 50), c(-0.37, 75), c(0.0, 4000)];
        assert_eq!(stable_index(&skewed), Some(2));
        assert_eq!(stable_index(&candidates[..1]), Some(0));
        assert_eq!(stable_index(&[]), None);
    }

    #[test]
    fn coefficient_of_variation_of_exponential_quantiles_is_one() {
        // Excesses at the exponential's quantiles -ln(1 - (i - 0.5)/n): CV close to 1.
        let n = 2000;
        let values: Vec<f64> = (1..=n).map(|i| 100.0 - (1.0 - (i as f64 - 0.5) / n as f64).ln()).collect();
        let e = Observations::from_values(&values).unwrap();
        let t = coefficient_of_variation(&e, 100.0).unwrap();
        assert!((t.statistic - 1.0).abs() < 0.02, "{t:?}");
        assert!(t.p_value > 0.3, "{t:?}");
        // A uniform tail (bounded) has CV 1/√3.
        let uniform: Vec<f64> = (1..=n).map(|i| 100.0 + i as f64 / n as f64).collect();
        let t = coefficient_of_variation(&Observations::from_values(&uniform).unwrap(), 100.0).unwrap();
        assert!((t.statistic - 1.0 / 3f64.sqrt()).abs() < 0.01 && t.p_value < 1e-6, "{t:?}");
    }

    #[test]
    fn likelihood_ratio_of_a_model_against_itself_is_zero() {
        let values: Vec<f64> = (1..=200).map(|i| 10.0 + i as f64).collect();
        let o = Observations::from_values(&values).unwrap();
        let m = Model::Pot { gpd: Gpd::new(10.0, 50.0, 0.0).unwrap(), exceedance_rate: 0.01 };
        let t = likelihood_ratio(&m, &m, &o).unwrap();
        assert_eq!(t.statistic, 0.0);
        assert!((t.p_value - 1.0).abs() < 1e-12);
    }
}
