//! The tests around a fit, each a statistic with its p-value:
//! - before fitting, on the block maxima in time order: Ljung-Box (autocorrelation), the
//!   Wald-Wolfowitz runs test above/below the median (clustering, trends), and the two-sample
//!   Kolmogorov-Smirnov test between the first and second half (a change of distribution);
//! - after fitting, on held-out observations: one-sample Kolmogorov-Smirnov and Anderson-Darling
//!   against the fitted distribution.
//!
//! p-values: Ljung-Box from the χ² distribution (statrs' regularized gamma function), the runs
//! test from its normal approximation (statrs' erfc), Kolmogorov-Smirnov from the asymptotic
//! Kolmogorov distribution with Stephens' small-sample correction (Numerical Recipes' series),
//! Anderson-Darling from Marsaglia & Marsaglia's (2004) asymptotic formula for a fully specified
//! distribution (held-out data are independent of the fit, so the fit is treated as given).

use super::sample::Observations;
use statrs::function::erf::erfc;
use statrs::function::gamma::checked_gamma_ur;

/// A statistic and its p-value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct TestResult {
    pub statistic: f64,
    pub p_value: f64,
}

/// Most lags of the Ljung-Box test.
pub(crate) const LJUNG_BOX_MAX_LAGS: usize = 20;

/// Lags used for a series of n: min(20, n/4).
pub(crate) fn ljung_box_lags(n: usize) -> usize {
    LJUNG_BOX_MAX_LAGS.min(n / 4)
}

/// Ljung-Box Q = n(n+2) Σ_{k≤h} r_k²/(n-k) against χ²(h); None for fewer than 8 values or a
/// constant series.
pub(crate) fn ljung_box(series: &[f64], lags: usize) -> Option<TestResult> {
    let n = series.len();
    if n < 8 || lags == 0 || lags >= n {
        return None;
    }
    let mean = series.iter().sum::<f64>() / n as f64;
    let centered: Vec<f64> = series.iter().map(|x| x - mean).collect();
    let variance: f64 = centered.iter().map(|d| d * d).sum();
    if !(variance > 0.0) || !variance.is_finite() {
        return None;
    }
    let nf = n as f64;
    let mut q = 0.0;
    for k in 1..=lags {
        let r: f64 = centered.iter().zip(&centered[k..]).map(|(a, b)| a * b).sum::<f64>() / variance;
        q += r * r / (nf - k as f64);
    }
    q *= nf * (nf + 2.0);
    Some(TestResult { statistic: q, p_value: chi_square_sf(q, lags as f64) })
}

/// P(χ²(dof) > x).
pub(crate) fn chi_square_sf(x: f64, dof: f64) -> f64 {
    if !(x > 0.0) {
        return 1.0;
    }
    if x.is_infinite() {
        return 0.0;
    }
    checked_gamma_ur(dof / 2.0, x / 2.0).unwrap_or(f64::NAN)
}

/// Two-sided p-value of a standard normal statistic.
pub(crate) fn normal_two_sided(z: f64) -> f64 {
    erfc(z.abs() / std::f64::consts::SQRT_2)
}

/// Wald-Wolfowitz runs test of the signs of x - median (values equal to the median left out);
/// the statistic is the normal z of the number of runs. None when one side is empty.
pub(crate) fn runs_test(series: &[f64]) -> Option<TestResult> {
    let mut sorted: Vec<f64> = series.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    if n < 2 {
        return None;
    }
    let median = if n % 2 == 1 { sorted[n / 2] } else { 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]) };
    let signs: Vec<bool> = series.iter().filter(|&&x| x != median).map(|&x| x > median).collect();
    let above = signs.iter().filter(|&&s| s).count() as f64;
    let below = signs.len() as f64 - above;
    if above == 0.0 || below == 0.0 {
        return None;
    }
    let runs = 1 + signs.windows(2).filter(|w| w[0] != w[1]).count();
    let total = above + below;
    let mean = 1.0 + 2.0 * above * below / total;
    let variance = 2.0 * above * below * (2.0 * above * below - total) / (total * total * (total - 1.0));
    if !(variance > 0.0) {
        return None;
    }
    let z = (runs as f64 - mean) / variance.sqrt();
    Some(TestResult { statistic: z, p_value: normal_two_sided(z) })
}

/// Q_KS(λ) = 2 Σ (-1)^(j-1) e^(-2j²λ²), the Kolmogorov distribution's survival function.
pub(crate) fn kolmogorov_sf(lambda: f64) -> f64 {
    if !(lambda > 0.0) {
        return 1.0;
    }
    if lambda < 1.18 {
        // The complementary series converges fast for small λ (Numerical Recipes 3, 6.14.56).
        let y = (-std::f64::consts::PI.powi(2) / (8.0 * lambda * lambda)).exp();
        let sum = y + y.powi(9) + y.powi(25) + y.powi(49);
        (1.0 - (2.0 * std::f64::consts::PI).sqrt() / lambda * sum).clamp(0.0, 1.0)
    } else {
        let x = (-2.0 * lambda * lambda).exp();
        (2.0 * (x - x.powi(4) + x.powi(9))).clamp(0.0, 1.0)
    }
}

/// p-value of a Kolmogorov-Smirnov distance D with effective sample size n (Stephens 1970).
fn kolmogorov_p(distance: f64, n: f64) -> f64 {
    let root = n.sqrt();
    kolmogorov_sf((root + 0.12 + 0.11 / root) * distance)
}

/// Two-sample Kolmogorov-Smirnov test; None if either sample is empty.
pub(crate) fn ks_two_sample(a: &[f64], b: &[f64]) -> Option<TestResult> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let mut a = a.to_vec();
    let mut b = b.to_vec();
    a.sort_by(f64::total_cmp);
    b.sort_by(f64::total_cmp);
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (mut i, mut j, mut distance) = (0, 0, 0.0f64);
    while i < a.len() && j < b.len() {
        // Step past every copy of the smaller value in both samples, so ties count together.
        let x = a[i].min(b[j]);
        while i < a.len() && a[i] == x {
            i += 1;
        }
        while j < b.len() && b[j] == x {
            j += 1;
        }
        distance = distance.max((i as f64 / na - j as f64 / nb).abs());
    }
    let effective = na * nb / (na + nb);
    Some(TestResult { statistic: distance, p_value: kolmogorov_p(distance, effective) })
}

/// One-sample Kolmogorov-Smirnov test of the observations against a continuous cdf.
pub(crate) fn ks_one_sample(observations: &Observations, cdf: impl Fn(f64) -> f64) -> Option<TestResult> {
    let n = observations.total();
    if !(n >= 1.0) {
        return None;
    }
    let (mut before, mut distance) = (0.0, 0.0f64);
    for (x, c) in observations.iter() {
        let f = cdf(x);
        distance = distance.max((before + c) / n - f).max(f - before / n);
        before += c;
    }
    Some(TestResult { statistic: distance, p_value: kolmogorov_p(distance, n) })
}

/// One-sample Anderson-Darling test against a continuous distribution given by its cdf and
/// survival function (for precision in the upper tail). An observation outside the support
/// gives A² = ∞ (reported as f64::MAX), p = 0.
pub(crate) fn anderson_darling(
    observations: &Observations,
    cdf: impl Fn(f64) -> f64,
    sf: impl Fn(f64) -> f64,
) -> Option<TestResult> {
    let n = observations.total();
    if !(n >= 1.0) {
        return None;
    }
    // Σ_{i=1}^{n} (2i-1)/n [ln F(x_(i)) + ln S(x_(n+1-i))] = Σ_i [(2i-1) ln F(x_(i)) + (2(n-i)+1) ln S(x_(i))]/n.
    let mut sum = 0.0;
    let mut before = 0.0;
    for (x, c) in observations.iter() {
        // Σ over ranks i = before+1..=before+c of (2i-1) and of (2(n-i)+1).
        let ranks_sum = c * (2.0 * before + c + 1.0) / 2.0;
        let lower_weight = 2.0 * ranks_sum - c;
        let upper_weight = c * (2.0 * n + 1.0) - 2.0 * ranks_sum;
        sum += lower_weight * cdf(x).ln() + upper_weight * sf(x).ln();
        before += c;
    }
    let statistic = -n - sum / n;
    // ∞ (an observation outside the support) is reported as f64::MAX: JSON has no infinity.
    let statistic = if statistic.is_nan() { f64::MAX } else { statistic.min(f64::MAX) };
    Some(TestResult { statistic, p_value: anderson_darling_sf(statistic) })
}

/// P(A² > z) for a fully specified distribution, asymptotic (Marsaglia & Marsaglia 2004,
/// `adinf`; their finite-n correction is below 0.005 for n ≥ 10 and left out).
pub(crate) fn anderson_darling_sf(z: f64) -> f64 {
    if !(z > 0.0) {
        return 1.0;
    }
    if z >= 1e3 {
        return 0.0;
    }
    let cdf = if z < 2.0 {
        (-1.233_714_1 / z).exp() / z.sqrt()
            * (2.000_12 + (0.247_105 - (0.064_982_1 - (0.034_796_2 - (0.011_672 - 0.001_686_91 * z) * z) * z) * z) * z)
    } else {
        (-(1.0776 - (2.30695 - (0.43424 - (0.082433 - (0.008056 - 0.000_314_6 * z) * z) * z) * z) * z).exp()).exp()
    };
    (1.0 - cdf).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kolmogorov_distribution_known_points() {
        // Q_KS(1.3581) = 0.05, Q_KS(1.6276) = 0.01, Q_KS(0.8276) = 0.5 (tables of the distribution).
        assert!((kolmogorov_sf(1.3581) - 0.05).abs() < 2e-4);
        assert!((kolmogorov_sf(1.6276) - 0.01).abs() < 1e-4);
        assert!((kolmogorov_sf(0.8276) - 0.5).abs() < 1e-3);
        // Continuous where the two series meet.
        assert!((kolmogorov_sf(1.18 - 1e-9) - kolmogorov_sf(1.18)).abs() < 1e-7);
        assert_eq!(kolmogorov_sf(0.0), 1.0);
    }

    #[test]
    fn anderson_darling_asymptotic_critical_values() {
        // Case 0 (fully specified) critical values: 1.933 (10 %), 2.492 (5 %), 3.857 (1 %).
        assert!((anderson_darling_sf(1.933) - 0.10).abs() < 2e-3);
        assert!((anderson_darling_sf(2.492) - 0.05).abs() < 1e-3);
        assert!((anderson_darling_sf(3.857) - 0.01).abs() < 5e-4);
    }

    #[test]
    fn chi_square_tail() {
        // P(χ²(20) > 31.410) = 0.05.
        assert!((chi_square_sf(31.410, 20.0) - 0.05).abs() < 1e-4);
        assert_eq!(chi_square_sf(0.0, 3.0), 1.0);
    }

    #[test]
    fn runs_of_an_alternating_and_a_sorted_series() {
        let alternating: Vec<f64> = (0..40).map(|i| (i % 2) as f64).collect();
        let r = runs_test(&alternating).unwrap();
        assert!(r.statistic > 5.0 && r.p_value < 1e-6);
        let sorted: Vec<f64> = (0..40).map(f64::from).collect();
        let r = runs_test(&sorted).unwrap();
        assert!(r.statistic < -5.0 && r.p_value < 1e-6);
        assert!(runs_test(&[3.0; 10]).is_none());
    }

    #[test]
    fn ks_two_sample_distance_with_ties() {
        let r = ks_two_sample(&[1.0, 2.0, 2.0, 3.0], &[2.0, 2.0, 4.0, 5.0]).unwrap();
        // F_a(3) = 1, F_b(3) = 0.5.
        assert_eq!(r.statistic, 0.5);
        assert_eq!(ks_two_sample(&[1.0, 2.0], &[1.0, 2.0]).unwrap().statistic, 0.0);
    }

    #[test]
    fn one_sample_tests_of_uniform_points() {
        let points = Observations::from_values(&(1..100).map(|i| i as f64 / 100.0).collect::<Vec<_>>()).unwrap();
        let cdf = |x: f64| x.clamp(0.0, 1.0);
        let ks = ks_one_sample(&points, cdf).unwrap();
        assert!(ks.statistic < 0.011 && ks.p_value > 0.99);
        let ad = anderson_darling(&points, cdf, |x| 1.0 - x.clamp(0.0, 1.0)).unwrap();
        assert!(ad.statistic < 0.1 && ad.p_value > 0.99);
        let outside = Observations::from_values(&[0.5, 1.5]).unwrap();
        assert_eq!(anderson_darling(&outside, cdf, |x| 1.0 - x.clamp(0.0, 1.0)).unwrap().p_value, 0.0);
    }
}
