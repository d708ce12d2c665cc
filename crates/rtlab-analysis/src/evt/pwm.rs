//! Probability-weighted moments (PWM) estimators: GEV (Hosking, Wallis & Wood 1985), Gumbel
//! and GPD with a known threshold (Hosking & Wallis 1987).
//!
//! The sample PWMs are the unbiased b_r = n⁻¹ Σ_j [(j-1)…(j-r)]/[(n-1)…(n-r)] x_(j) over the
//! ascending order statistics, summed in closed form over each run of tied values so that a
//! histogram's (value, count) tail costs one term per distinct value.
//!
//! GEV: the shape solves (3b₂ - b₀)/(2b₁ - b₀) = (3^ξ - 1)/(2^ξ - 1) exactly (bisection; the
//! function is monotone), where Hosking, Wallis & Wood publish the polynomial approximation
//! k ≈ 7.8590c + 2.9554c² of the same root (k = -ξ); the exact root is what L-moment software
//! (Hosking's `pelgev`, lmoments3) computes, so results can be checked against it.

use super::distributions::{Gev, Gpd, Gumbel};
use super::sample::Observations;
use super::FitFailure;
use statrs::consts::EULER_MASCHERONI;
use statrs::function::gamma::ln_gamma;

/// b₀, b₁, b₂ (unbiased); None with fewer than 3 observations.
pub(crate) fn sample_pwms(observations: &Observations) -> Option<[f64; 3]> {
    let n = observations.total();
    if !(n >= 3.0) {
        return None;
    }
    let (mut s0, mut s1, mut s2) = (0.0, 0.0, 0.0);
    let mut before = 0.0; // observations below the current value: its ranks are before+1..=before+c
    for (v, c) in observations.iter() {
        let a = before;
        // Σ_{i<c} (a+i) and Σ_{i<c} (a+i)(a+i-1), i.e. Σ (j-1) and Σ (j-1)(j-2) over the run.
        let sum_i = c * (c - 1.0) / 2.0;
        let sum_i2 = (c - 1.0) * c * (2.0 * c - 1.0) / 6.0;
        let r1 = c * a + sum_i;
        let r2 = c * a * (a - 1.0) + (2.0 * a - 1.0) * sum_i + sum_i2;
        s0 += c * v;
        s1 += r1 * v;
        s2 += r2 * v;
        before += c;
    }
    Some([s0 / n, s1 / (n * (n - 1.0)), s2 / (n * (n - 1.0) * (n - 2.0))])
}

/// (Γ(1 - ξ) - 1)/ξ, continuous at ξ = 0 (γ there).
fn gamma_ratio(shape: f64) -> f64 {
    if shape.abs() < 1e-6 {
        EULER_MASCHERONI + (std::f64::consts::PI.powi(2) / 12.0 + EULER_MASCHERONI * EULER_MASCHERONI / 2.0) * shape
    } else {
        ln_gamma(1.0 - shape).exp_m1() / shape
    }
}

/// (3^ξ - 1)/(2^ξ - 1), increasing in ξ from 1 (ξ → -∞) to 2 (ξ = 1); ln 3/ln 2 at ξ = 0.
fn pwm_ratio(shape: f64) -> f64 {
    if shape == 0.0 {
        3f64.ln() / 2f64.ln()
    } else {
        (shape * 3f64.ln()).exp_m1() / (shape * 2f64.ln()).exp_m1()
    }
}

/// Shapes the GEV PWM estimator searches; beyond 1 the mean (b₀) does not exist.
const GEV_SHAPE_RANGE: (f64, f64) = (-5.0, 0.99);

/// GEV by probability-weighted moments.
pub(crate) fn gev(observations: &Observations) -> Result<Gev, FitFailure> {
    let (center, scale) = observations.unit_range()?;
    let unit = observations.standardized(center, scale);
    let [b0, b1, b2] = sample_pwms(&unit).ok_or_else(|| FitFailure::new("fewer than 3 observations"))?;
    let l2 = 2.0 * b1 - b0;
    let ratio = (3.0 * b2 - b0) / l2;
    let (mut low, mut high) = GEV_SHAPE_RANGE;
    let inside = l2 > 0.0 && ratio > pwm_ratio(low) && ratio < pwm_ratio(high);
    if !inside {
        return Err(FitFailure::new(format!(
            "the sample's PWM ratio {ratio:.4} gives a shape outside [{low}, {high}]"
        )));
    }
    for _ in 0..100 {
        let mid = 0.5 * (low + high);
        if pwm_ratio(mid) < ratio {
            low = mid;
        } else {
            high = mid;
        }
    }
    let shape = 0.5 * (low + high);
    let unit_scale = if shape == 0.0 {
        l2 / 2f64.ln()
    } else {
        l2 * shape / (ln_gamma(1.0 - shape).exp() * (shape * 2f64.ln()).exp_m1())
    };
    let unit_location = b0 - unit_scale * gamma_ratio(shape);
    Gev::new(center + scale * unit_location, scale * unit_scale, shape)
        .ok_or_else(|| FitFailure::new("PWM gave invalid parameters"))
}

/// Gumbel by probability-weighted moments: σ = (2b₁ - b₀)/ln 2, μ = b₀ - γσ.
pub(crate) fn gumbel(observations: &Observations) -> Result<Gumbel, FitFailure> {
    let (center, scale) = observations.unit_range()?;
    let unit = observations.standardized(center, scale);
    let [b0, b1, _] = sample_pwms(&unit).ok_or_else(|| FitFailure::new("fewer than 3 observations"))?;
    let unit_scale = (2.0 * b1 - b0) / 2f64.ln();
    let unit_location = b0 - EULER_MASCHERONI * unit_scale;
    Gumbel::new(center + scale * unit_location, scale * unit_scale)
        .ok_or_else(|| FitFailure::new("PWM gave invalid parameters"))
}

/// GPD of the values above `threshold` by probability-weighted moments (Hosking & Wallis
/// 1987): with l₁ = b₀ and l₂ = 2b₁ - b₀ of the excesses, ξ = 2 - l₁/l₂, σ = (1 - ξ) l₁.
pub(crate) fn gpd(exceedances: &Observations, threshold: f64) -> Result<Gpd, FitFailure> {
    let scale = exceedances.excess_range(threshold)?;
    let excesses = exceedances.standardized(threshold, scale);
    let [b0, b1, _] = sample_pwms(&excesses).ok_or_else(|| FitFailure::new("fewer than 3 exceedances"))?;
    let l2 = 2.0 * b1 - b0;
    if !(l2 > 0.0) {
        return Err(FitFailure::new("all exceedances are equal"));
    }
    let shape = 2.0 - b0 / l2;
    Gpd::new(threshold, scale * (1.0 - shape) * b0, shape).ok_or_else(|| FitFailure::new("PWM gave invalid parameters"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tied_runs_equal_expanded_sums() {
        let tied = Observations::from_pairs([(1.0, 3.0), (2.0, 2.0), (5.0, 4.0)]).unwrap();
        let expanded: Vec<f64> = tied.ranked().collect();
        let n = expanded.len() as f64;
        let mut b = [0.0; 3];
        for (j, x) in expanded.iter().enumerate() {
            let j = j as f64 + 1.0;
            b[0] += x / n;
            b[1] += (j - 1.0) / (n - 1.0) * x / n;
            b[2] += (j - 1.0) * (j - 2.0) / ((n - 1.0) * (n - 2.0)) * x / n;
        }
        let got = sample_pwms(&tied).unwrap();
        for r in 0..3 {
            assert!((got[r] - b[r]).abs() < 1e-14, "b{r}: {} vs {}", got[r], b[r]);
        }
    }

    #[test]
    fn pwm_ratio_is_continuous_at_zero() {
        assert!((pwm_ratio(1e-12) - pwm_ratio(0.0)).abs() < 1e-10);
        assert!((gamma_ratio(1e-6 * 1.0001) - gamma_ratio(0.0)).abs() < 1e-5);
        assert!((gamma_ratio(2e-6) - gamma_ratio(0.999e-6)).abs() < 1e-5);
    }

    #[test]
    fn equal_observations_fail() {
        let same = Observations::from_values(&[7.0; 20]).unwrap();
        assert!(gev(&same).is_err());
        assert!(gumbel(&same).is_err());
        assert!(gpd(&same, 5.0).is_err());
    }
}
