//! The three tail distributions: generalized extreme value (GEV), Gumbel (GEV with ξ = 0) and
//! generalized Pareto (GPD), with cdf, survival function, quantile and log-density.
//!
//! Sign convention: ξ > 0 is the heavy (Fréchet, Pareto) tail, ξ = 0 the light exponential
//! tail (Gumbel, exponential), ξ < 0 a bounded tail (Weibull type). This is the convention of
//! Coles (2001) and of R's `evd`/`ismev`/`extRemes`; scipy's `genextreme` uses c = -ξ (its
//! `genpareto` uses c = ξ), Hosking's papers use k = -ξ for both.
//!
//! Every formula goes through ln(1 + ξz)/ξ and (e^(ξl) - 1)/ξ computed with `ln_1p`/`exp_m1`
//! (and a series where ξz is tiny), so the functions are continuous at ξ = 0 and keep full
//! precision at survival probabilities of 1e-12.

/// ln(1 + ξ z)/ξ, which is z at ξ = 0; None outside the support (1 + ξ z ≤ 0) or for NaN.
pub(crate) fn shape_log(shape: f64, z: f64) -> Option<f64> {
    shape_logs(shape, z).map(|(_, e)| e)
}

/// ln(1 + ξ z) and [`shape_log`]: the likelihood's derivatives need both.
pub(crate) fn shape_logs(shape: f64, z: f64) -> Option<(f64, f64)> {
    let s = shape * z;
    if !(s > -1.0) || !z.is_finite() {
        return None;
    }
    let log1p_s = s.ln_1p();
    // ln(1+s)/ξ = z (1 - s/2 + s²/3 - ...); exact at ξ = 0 where s/ξ would be 0/0.
    let e = if s.abs() < 1e-8 { z * (1.0 - s / 2.0 + s * s / 3.0) } else { log1p_s / shape };
    Some((log1p_s, e))
}

/// (e^(ξ l) - 1)/ξ, the inverse of [`shape_log`]; l at ξ = 0.
pub(crate) fn shape_exp(shape: f64, l: f64) -> f64 {
    let s = shape * l;
    if s.abs() < 1e-8 {
        l * (1.0 + s / 2.0 + s * s / 6.0)
    } else {
        s.exp_m1() / shape
    }
}

/// Generalized extreme value distribution: F(x) = exp(-(1 + ξ (x - μ)/σ)^(-1/ξ)).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gev {
    pub location: f64,
    pub scale: f64,
    pub shape: f64,
}

impl Gev {
    /// None unless the parameters are finite and the scale positive.
    pub fn new(location: f64, scale: f64, shape: f64) -> Option<Gev> {
        let valid = location.is_finite() && scale.is_finite() && scale > 0.0 && shape.is_finite();
        valid.then_some(Gev { location, scale, shape })
    }

    /// (1 + ξ z)^(-1/ξ) = e^(-shape_log), the "reduced" variable w with F = e^(-w); None
    /// outside the support.
    fn reduced_log(&self, x: f64) -> Option<f64> {
        shape_log(self.shape, (x - self.location) / self.scale)
    }

    /// The lower (ξ > 0) or upper (ξ < 0) end of the support; none for ξ = 0.
    pub fn endpoint(&self) -> Option<f64> {
        (self.shape != 0.0).then(|| self.location - self.scale / self.shape)
    }

    pub fn cdf(&self, x: f64) -> f64 {
        match self.reduced_log(x) {
            Some(e) => (-(-e).exp()).exp(),
            None => self.outside(x, 0.0, 1.0),
        }
    }

    /// 1 - F(x), precise where it is tiny.
    pub fn sf(&self, x: f64) -> f64 {
        match self.reduced_log(x) {
            Some(e) => -(-(-e).exp()).exp_m1(),
            None => self.outside(x, 1.0, 0.0),
        }
    }

    pub fn log_density(&self, x: f64) -> f64 {
        match self.reduced_log(x) {
            Some(e) => -self.scale.ln() - (1.0 + self.shape) * e - (-e).exp(),
            None => f64::NEG_INFINITY,
        }
    }

    /// The value of a cdf or survival function outside the support: below its lower end
    /// (ξ > 0, or x = -∞) or above its upper end (ξ < 0, or x = +∞).
    fn outside(&self, x: f64, below: f64, above: f64) -> f64 {
        if x.is_nan() {
            f64::NAN
        } else if x < self.location {
            below
        } else {
            above
        }
    }

    /// The x with F(x) = probability (0..1).
    pub fn quantile(&self, probability: f64) -> f64 {
        self.quantile_of_minus_log_cdf(-probability.ln())
    }

    /// The x with -ln F(x) = y: precise for the far tail, where F is 1 - 1e-12 but y is known
    /// exactly (y = -n ln(1 - p) for a block of n samples each exceeding x with probability p).
    pub fn quantile_of_minus_log_cdf(&self, y: f64) -> f64 {
        self.location + self.scale * shape_exp(self.shape, -y.ln())
    }

    /// The value exceeded with probability `p` by each of `n` independent samples whose
    /// maximum follows this distribution.
    pub fn per_sample_quantile(&self, p: f64, n: f64) -> f64 {
        self.quantile_of_minus_log_cdf(-n * (-p).ln_1p())
    }

    /// The per-sample exceedance probability of x: (1 - p)^n = F(x).
    pub fn per_sample_sf(&self, x: f64, n: f64) -> f64 {
        match self.reduced_log(x) {
            Some(e) => -(-(-e).exp() / n).exp_m1(),
            None => self.outside(x, 1.0, 0.0),
        }
    }
}

/// Gumbel distribution: F(x) = exp(-exp(-(x - μ)/σ)), the GEV with ξ = 0.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gumbel {
    pub location: f64,
    pub scale: f64,
}

impl Gumbel {
    pub fn new(location: f64, scale: f64) -> Option<Gumbel> {
        Gev::new(location, scale, 0.0).map(|_| Gumbel { location, scale })
    }
    pub fn as_gev(&self) -> Gev {
        Gev { location: self.location, scale: self.scale, shape: 0.0 }
    }
    pub fn cdf(&self, x: f64) -> f64 {
        self.as_gev().cdf(x)
    }
    pub fn sf(&self, x: f64) -> f64 {
        self.as_gev().sf(x)
    }
    pub fn log_density(&self, x: f64) -> f64 {
        self.as_gev().log_density(x)
    }
    pub fn quantile(&self, probability: f64) -> f64 {
        self.as_gev().quantile(probability)
    }
}

/// Generalized Pareto distribution of the values above a threshold u:
/// P(X > x | X > u) = (1 + ξ (x - u)/σ)^(-1/ξ) for x ≥ u.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gpd {
    pub threshold: f64,
    pub scale: f64,
    pub shape: f64,
}

impl Gpd {
    pub fn new(threshold: f64, scale: f64, shape: f64) -> Option<Gpd> {
        let valid = threshold.is_finite() && scale.is_finite() && scale > 0.0 && shape.is_finite();
        valid.then_some(Gpd { threshold, scale, shape })
    }

    /// ln of the survival function's reciprocal, (1/ξ) ln(1 + ξ y/σ); None beyond the upper
    /// end (ξ < 0); 0 at and below the threshold.
    fn reduced_log(&self, x: f64) -> Option<f64> {
        let excess = x - self.threshold;
        if excess <= 0.0 {
            return Some(0.0);
        }
        shape_log(self.shape, excess / self.scale)
    }

    /// The upper end of the support (ξ < 0 only).
    pub fn endpoint(&self) -> Option<f64> {
        (self.shape < 0.0).then(|| self.threshold - self.scale / self.shape)
    }

    pub fn cdf(&self, x: f64) -> f64 {
        match self.reduced_log(x) {
            Some(e) => -(-e).exp_m1(),
            None if x.is_nan() => f64::NAN,
            None => 1.0,
        }
    }

    pub fn sf(&self, x: f64) -> f64 {
        match self.reduced_log(x) {
            Some(e) => (-e).exp(),
            None if x.is_nan() => f64::NAN,
            None => 0.0,
        }
    }

    pub fn log_density(&self, x: f64) -> f64 {
        if !(x >= self.threshold) {
            return f64::NEG_INFINITY;
        }
        match self.reduced_log(x) {
            Some(e) => -self.scale.ln() - (1.0 + self.shape) * e,
            None => f64::NEG_INFINITY,
        }
    }

    pub fn quantile(&self, probability: f64) -> f64 {
        self.quantile_of_sf((-probability).ln_1p().exp())
    }

    /// The x with P(X > x | X > u) = q, precise for tiny q.
    pub fn quantile_of_sf(&self, q: f64) -> f64 {
        self.threshold + self.scale * shape_exp(self.shape, -q.ln())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gumbel_matches_closed_form() {
        let g = Gumbel::new(10.0, 2.0).unwrap();
        let x = 13.0;
        let z: f64 = 1.5;
        assert!((g.cdf(x) - (-(-z).exp()).exp()).abs() < 1e-15);
        assert!((g.log_density(x) - (-(2.0f64).ln() - z - (-z).exp())).abs() < 1e-14);
        assert!((g.quantile(0.5) - (10.0 - 2.0 * (-(0.5f64.ln())).ln())).abs() < 1e-12);
    }

    #[test]
    fn support_ends() {
        let heavy = Gev::new(0.0, 1.0, 0.5).unwrap();
        assert_eq!(heavy.endpoint(), Some(-2.0));
        assert_eq!(heavy.cdf(-3.0), 0.0);
        assert_eq!(heavy.sf(-3.0), 1.0);
        assert_eq!(heavy.log_density(-3.0), f64::NEG_INFINITY);
        let bounded = Gev::new(0.0, 1.0, -0.5).unwrap();
        assert_eq!(bounded.endpoint(), Some(2.0));
        assert_eq!(bounded.cdf(3.0), 1.0);
        assert_eq!(bounded.sf(3.0), 0.0);
        let gpd = Gpd::new(5.0, 1.0, -0.25).unwrap();
        assert_eq!(gpd.endpoint(), Some(9.0));
        assert_eq!(gpd.sf(10.0), 0.0);
        assert_eq!(gpd.sf(4.0), 1.0);
        assert_eq!(gpd.quantile_of_sf(0.0), 9.0);
    }

    #[test]
    fn invalid_parameters_are_refused() {
        assert!(Gev::new(0.0, 0.0, 0.1).is_none());
        assert!(Gev::new(f64::NAN, 1.0, 0.1).is_none());
        assert!(Gpd::new(0.0, -1.0, 0.1).is_none());
        assert!(Gumbel::new(0.0, f64::INFINITY).is_none());
    }

    #[test]
    fn per_sample_probabilities_are_precise_at_1e_12() {
        let g = Gev::new(100.0, 10.0, 0.1).unwrap();
        for p in [1e-6, 1e-9, 1e-12] {
            let x = g.per_sample_quantile(p, 1000.0);
            let back = g.per_sample_sf(x, 1000.0);
            assert!((back / p - 1.0).abs() < 1e-9, "{p}: {back}");
        }
    }
}
