//! The upper end of the profile-likelihood interval of a GPD's pWCET (Coles 2001, §4.3.3 and
//! §4.4.1): the largest return level that the likelihood of the exceedances does not reject.
//!
//! Why it is in the interval (docs/pwcet.md, "Confidence intervals"): the bootstrap's percentile
//! interval is about as wide as the sampling noise of ξ̂ around the threshold; a tail that is
//! still on its way to its limit (a lognormal, a stretched exponential) is heavier at 1e-9 than
//! where it was fitted, and the pWCET of the largest shape the data cannot reject is the
//! honest upper end. The profile is asymmetric in the direction of the extrapolation, which is
//! where the bootstrap of a near-exponential fit is short.
//!
//! With σ written through the return level, σ = (x − u)/h(ξ) where h(ξ) = ((ζ/p)^ξ − 1)/ξ,
//! the profile log-likelihood of x is ℓₚ(x) = max over ξ of ℓ((x − u)/h(ξ), ξ), and the upper
//! end is the x > x̂ where 2(ℓ̂ − ℓₚ(x)) reaches the χ²(1) quantile of the confidence level.
//! ℓₚ falls on both sides of x̂, so a bracket and a bisection find it; the inner maximum is a
//! golden-section search over ξ. The exceedance rate ζ is held at its estimate (its sampling
//! noise, about 1/√k relative, is small next to the extrapolation's).

use super::distributions::Gpd;
use super::sample::Observations;
use statrs::function::erf::erfc_inv;

/// Shapes searched around the MLE: ξ̂ ± this, inside the MLE's own bound (−1, 1).
const SHAPE_SPAN: f64 = 0.5;
const SHAPE_LIMIT: f64 = 0.999;
/// Relative precision of the upper end.
const TOLERANCE: f64 = 1e-4;

fn log_likelihood(gpd: &Gpd, exceedances: &Observations) -> f64 {
    exceedances.iter().map(|(x, c)| c * gpd.log_density(x)).sum()
}

/// h(ξ) = ((ζ/p)^ξ − 1)/ξ: the return level's excess over the threshold per unit of scale.
fn growth(shape: f64, log_ratio: f64) -> Option<f64> {
    let h = Gpd::new(0.0, 1.0, shape)?.quantile_of_sf((-log_ratio).exp());
    (h.is_finite() && h > 0.0).then_some(h)
}

/// ℓₚ(x): the GPD log-likelihood maximised over the shape with the return level held at x.
fn profile(x: f64, fitted: &Gpd, exceedances: &Observations, log_ratio: f64) -> f64 {
    let ll = |shape: f64| {
        growth(shape, log_ratio)
            .and_then(|h| Gpd::new(fitted.threshold, (x - fitted.threshold) / h, shape))
            .map_or(f64::NEG_INFINITY, |g| log_likelihood(&g, exceedances))
    };
    let (mut a, mut b) = ((fitted.shape - SHAPE_SPAN).max(-SHAPE_LIMIT), (fitted.shape + SHAPE_SPAN).min(SHAPE_LIMIT));
    let ratio = (5f64.sqrt() - 1.0) / 2.0;
    let (mut c, mut d) = (b - ratio * (b - a), a + ratio * (b - a));
    let (mut fc, mut fd) = (ll(c), ll(d));
    for _ in 0..40 {
        if (b - a) < 1e-5 {
            break;
        }
        if fc >= fd {
            b = d;
            (d, fd) = (c, fc);
            c = b - ratio * (b - a);
            fc = ll(c);
        } else {
            a = c;
            (c, fc) = (d, fd);
            d = a + ratio * (b - a);
            fd = ll(d);
        }
    }
    fc.max(fd).max(ll(fitted.shape))
}

/// The upper end of the `confidence` profile-likelihood interval of the value exceeded with
/// per-activation probability `p`, for the GPD `fitted` by maximum likelihood to `exceedances`
/// with exceedance rate `rate`. None where the model says nothing (p above the rate), or when
/// the likelihood cannot be evaluated.
pub(crate) fn upper_pwcet(fitted: &Gpd, exceedances: &Observations, rate: f64, p: f64, confidence: f64) -> Option<f64> {
    if !(p > 0.0 && p < rate && confidence > 0.0 && confidence < 1.0) {
        return None;
    }
    let log_ratio = (rate / p).ln();
    let estimate = fitted.threshold + fitted.scale * growth(fitted.shape, log_ratio)?;
    let best = log_likelihood(fitted, exceedances);
    if !(best.is_finite() && estimate > fitted.threshold) {
        return None;
    }
    // χ²(1) quantile of the confidence level: z² with z the two-sided normal quantile.
    let z = std::f64::consts::SQRT_2 * erfc_inv(1.0 - confidence);
    let cut = best - 0.5 * z * z;
    let excess = estimate - fitted.threshold;
    // Bracket: double the step above x̂ until the profile falls below the cut.
    let mut low = estimate;
    let mut step = 0.05 * excess;
    let mut high = estimate + step;
    let mut bracketed = false;
    for _ in 0..60 {
        if profile(high, fitted, exceedances, log_ratio) < cut {
            bracketed = true;
            break;
        }
        low = high;
        step *= 2.0;
        high = estimate + step;
    }
    if !bracketed {
        return None;
    }
    while (high - low) > TOLERANCE * excess {
        let mid = 0.5 * (low + high);
        if profile(mid, fitted, exceedances, log_ratio) >= cut {
            low = mid;
        } else {
            high = mid;
        }
    }
    Some(0.5 * (low + high))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Excesses at the exponential's quantiles: the MLE is ξ = 0 nearly, σ = the mean.
    fn exponential_quantiles(k: usize) -> Observations {
        let values: Vec<f64> = (1..=k).map(|i| 100.0 - 10.0 * (1.0 - (i as f64 - 0.5) / k as f64).ln()).collect();
        Observations::from_values(&values).unwrap()
    }

    #[test]
    fn upper_end_is_above_the_estimate_and_shrinks_with_more_data() {
        let p = 1e-9;
        let rate = 0.02;
        let estimate = |g: &Gpd| g.quantile_of_sf(p / rate);
        let mut widths = Vec::new();
        for k in [200, 800, 3200] {
            let e = exponential_quantiles(k);
            let mean = e.iter().map(|(x, c)| (x - 100.0) * c).sum::<f64>() / e.total();
            let fitted = Gpd::new(100.0, mean, 0.0).unwrap();
            let up = upper_pwcet(&fitted, &e, rate, p, 0.95).unwrap();
            assert!(up > estimate(&fitted), "k {k}: {up} not above {}", estimate(&fitted));
            widths.push(up / estimate(&fitted) - 1.0);
        }
        assert!(widths.windows(2).all(|w| w[1] < w[0]), "{widths:?}");
        // The profile of 3200 exceedances allows about ξ + 2·1/√3200 ≈ 0.035 at the most:
        // about +30 % on the extrapolated part at most, and more than the 1/√k of the scale alone.
        assert!(widths[2] > 0.05 && widths[2] < 0.4, "{widths:?}");
    }

    #[test]
    fn at_the_upper_end_the_likelihood_ratio_is_the_chi_square_quantile() {
        let e = exponential_quantiles(1000);
        let mean = e.iter().map(|(x, c)| (x - 100.0) * c).sum::<f64>() / e.total();
        let fitted = Gpd::new(100.0, mean, 0.0).unwrap();
        let (p, rate) = (1e-6, 0.01);
        let up = upper_pwcet(&fitted, &e, rate, p, 0.95).unwrap();
        let d = 2.0 * (log_likelihood(&fitted, &e) - profile(up, &fitted, &e, (rate / p).ln()));
        assert!((d - 3.841_458_820_694_124).abs() < 0.01, "{d}");
        assert_eq!(upper_pwcet(&fitted, &e, rate, 0.02, 0.95), None, "p above the rate");
    }
}
