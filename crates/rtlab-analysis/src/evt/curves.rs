//! The points of the tail figures: the empirical per-activation exceedance curve, the chosen
//! fit's curve extrapolated to the smallest probability asked for, and the QQ plot.
//!
//! Empirical probabilities come from the tail's (value, count) pairs when there are any
//! (P(X ≥ v) = samples at or above v / all samples: direct per-activation frequencies),
//! otherwise from the block maxima: the r-th largest of m has per-block exceedance r/(m+1)
//! (Weibull plotting position), turned per activation by 1 - (1 - p_block)^(1/n). Long curves
//! are thinned on a log scale of rank, keeping the top of the tail whole.

use super::fit::{FitData, Model};
use super::sample::{log_spaced_ranks, Observations};
use super::{TailCurves, FITTED_CURVE_POINTS, MAX_FIGURE_POINTS};

/// Values at the given ranks counted from the top (1 = largest), ranks ascending.
fn values_at_ranks_from_top(observations: &Observations, ranks: &[usize]) -> Vec<f64> {
    let mut out = Vec::with_capacity(ranks.len());
    let mut ranks = ranks.iter().peekable();
    let mut above = 0.0;
    for (value, count) in observations.iter().collect::<Vec<_>>().into_iter().rev() {
        above += count;
        while let Some(&&r) = ranks.peek() {
            if r as f64 > above {
                break;
            }
            out.push(value);
            ranks.next();
        }
    }
    out
}

/// Per-activation probability of a per-block one, for blocks of n samples.
fn per_activation(p_block: f64, n: f64) -> f64 {
    -((-p_block).ln_1p() / n).exp_m1()
}

pub(crate) fn tail_curves(
    chosen: &Model,
    chosen_data: &FitData,
    tail: &Observations,
    total_samples: f64,
    maxima: &Observations,
    samples_per_block: f64,
    probabilities: &[f64],
) -> TailCurves {
    let empirical = empirical(tail, total_samples, maxima, samples_per_block);
    let qq = qq(chosen, chosen_data.observations());
    let start = match (chosen, chosen_data) {
        (Model::Block { samples_per_block, .. }, FitData::Blocks { maxima, .. }) => {
            let m = maxima.total();
            per_activation(m / (m + 1.0), *samples_per_block)
        }
        (Model::Pot { exceedance_rate, .. }, _) => *exceedance_rate,
        _ => 0.0,
    };
    let smallest_empirical = empirical.iter().map(|(_, p)| *p).fold(f64::INFINITY, f64::min);
    let end = probabilities.iter().copied().fold(smallest_empirical.min(start / 10.0), f64::min);
    let fitted = if start > 0.0 && end > 0.0 && end < start {
        let (ln_start, ln_end) = (start.ln(), end.ln());
        (0..FITTED_CURVE_POINTS)
            .map(|i| (ln_start + (ln_end - ln_start) * i as f64 / (FITTED_CURVE_POINTS - 1) as f64).exp())
            .filter_map(|p| chosen.pwcet_ns(p.min(start)).map(|v| (v, p)))
            .collect()
    } else {
        Vec::new()
    };
    TailCurves { empirical, fitted, qq, stability: Vec::new() }
}

fn empirical(
    tail: &Observations,
    total_samples: f64,
    maxima: &Observations,
    samples_per_block: f64,
) -> Vec<(f64, f64)> {
    if tail.total() > 0.0 && total_samples > 0.0 {
        let descending: Vec<(f64, f64)> = tail.iter().collect::<Vec<_>>().into_iter().rev().collect();
        let mut at_or_above = 0.0;
        let all: Vec<(f64, f64)> = descending
            .iter()
            .map(|&(v, c)| {
                at_or_above += c;
                (v, at_or_above / total_samples)
            })
            .collect();
        let mut points: Vec<(f64, f64)> =
            log_spaced_ranks(all.len(), MAX_FIGURE_POINTS).iter().filter_map(|r| all.get(r - 1).copied()).collect();
        points.reverse();
        return points;
    }
    let m = maxima.total().round() as usize;
    let ranks = log_spaced_ranks(m, MAX_FIGURE_POINTS);
    let values = values_at_ranks_from_top(maxima, &ranks);
    let mut points: Vec<(f64, f64)> = ranks
        .iter()
        .zip(values)
        .map(|(&r, v)| (v, per_activation(r as f64 / (m as f64 + 1.0), samples_per_block)))
        .collect();
    points.reverse();
    points
}

/// (fitted quantile, observed value) at the Weibull plotting positions j/(m+1), ascending.
fn qq(chosen: &Model, observations: &Observations) -> Vec<(f64, f64)> {
    let m = observations.total().round() as usize;
    let ranks = log_spaced_ranks(m, MAX_FIGURE_POINTS);
    let values = values_at_ranks_from_top(observations, &ranks);
    let mut points: Vec<(f64, f64)> = ranks
        .iter()
        .zip(values)
        .map(|(&r, v)| (chosen.quantile(1.0 - r as f64 / (m as f64 + 1.0)), v))
        .filter(|(q, _)| q.is_finite())
        .collect();
    points.reverse();
    points
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_from_the_top_with_counts() {
        let o = Observations::from_pairs([(1.0, 2.0), (5.0, 1.0), (9.0, 3.0)]).unwrap();
        assert_eq!(values_at_ranks_from_top(&o, &[1, 3, 4, 5, 6]), vec![9.0, 9.0, 5.0, 1.0, 1.0]);
    }

    #[test]
    fn per_activation_of_per_block() {
        // (1 - p)^100 = 1 - 0.01 → p ≈ 1.005e-4.
        let p = per_activation(0.01, 100.0);
        assert!(((1.0 - p).powi(100) - 0.99).abs() < 1e-15);
    }
}
