//! Maximum likelihood for the GEV, the Gumbel and the GPD, with counts (tied values weigh by
//! their count).
//!
//! The optimiser is a damped Newton method (Levenberg-Marquardt damping, backtracking on the
//! negative log-likelihood) with the analytic gradient and Hessian, started from the PWM
//! estimate. With exact second derivatives it converges in a handful of iterations, which is
//! what keeps a few hundred bootstrap refits of 3600 block maxima fast even in a debug build;
//! at the optimum the Hessian is the observed information (its positive definiteness is the
//! convergence check).
//!
//! The data are mapped to unit range first (x → (x - c)/s), so the parameters are O(1) whatever
//! the unit. The shape is kept inside (-1, 1): below -1 the GEV and GPD likelihoods are
//! unbounded (Smith 1985), above 1 the distribution has no mean; an optimum on that bound is
//! reported as not converged.

use super::distributions::{shape_logs, Gev, Gpd, Gumbel};
use super::sample::Observations;
use super::FitFailure;

/// The shape stays strictly inside this interval.
pub(crate) const SHAPE_BOUND: f64 = 1.0;
/// Newton iterations before giving up.
const MAX_ITERATIONS: usize = 200;

/// g(s) = (ln(1+s) - s/(1+s))/s² and its derivative, continuous at s = 0; the ξ-derivatives
/// of the GEV and GPD log-densities are z² g(ξz) and z³ g'(ξz), so they stay exact at ξ = 0.
/// `log1p_s` is ln(1 + s), which the caller has computed already.
fn g_and_derivative(s: f64, log1p_s: f64) -> (f64, f64) {
    if s.abs() < 1e-3 {
        // g(s) = Σ_{m≥0} a_m s^m with a_m = (-1)^m (m+1)/(m+2); 7 terms leave < 1e-20 here,
        // where the closed form below would lose digits to cancellation.
        let (mut g, mut dg, mut power, mut previous) = (0.0, 0.0, 1.0, 0.0);
        for m in 0..7 {
            let sign = if m % 2 == 0 { 1.0 } else { -1.0 };
            let a = sign * (m as f64 + 1.0) / (m as f64 + 2.0);
            g += a * power;
            dg += a * m as f64 * previous;
            previous = power;
            power *= s;
        }
        (g, dg)
    } else {
        let t = 1.0 + s;
        let h = log1p_s - s / t;
        (h / (s * s), 1.0 / (s * t * t) - 2.0 * h / (s * s * s))
    }
}

/// The negative log-likelihood, its gradient and Hessian at θ.
type Derivatives<const D: usize> = (f64, [f64; D], [[f64; D]; D]);

/// GEV negative log-likelihood at θ = (μ, σ, ξ); +∞ outside the support or the bounds.
fn gev_nll(data: &Observations, theta: &[f64; 3]) -> f64 {
    let [mu, sigma, xi] = *theta;
    if !(sigma > 0.0) || !(xi.abs() < SHAPE_BOUND) {
        return f64::INFINITY;
    }
    let ln_sigma = sigma.ln();
    let mut total = 0.0;
    for (&x, &c) in data.values.iter().zip(&data.counts) {
        if c <= 0.0 {
            continue;
        }
        let Some((_, e)) = shape_logs(xi, (x - mu) / sigma) else {
            return f64::INFINITY;
        };
        total += c * (ln_sigma + (1.0 + xi) * e + (-e).exp());
    }
    if total.is_nan() {
        f64::INFINITY
    } else {
        total
    }
}

/// GEV negative log-likelihood with its gradient and Hessian in (μ, σ, ξ). The formulas are the
/// derivatives of ℓ = -ln σ - (1+ξ) e - w, e = ln(1+ξz)/ξ, w = e^(-e), written through
/// q = z² g(ξz) so that ξ = 0 (Gumbel) needs no special case.
fn gev_derivatives(data: &Observations, theta: &[f64; 3]) -> Option<Derivatives<3>> {
    let [mu, sigma, xi] = *theta;
    if !(sigma > 0.0) || !(xi.abs() < SHAPE_BOUND) {
        return None;
    }
    let mut value = 0.0;
    let mut grad = [0.0; 3];
    let mut hess = [[0.0; 3]; 3];
    let ln_sigma = sigma.ln();
    for (&x, &c) in data.values.iter().zip(&data.counts) {
        if c <= 0.0 {
            continue;
        }
        let z = (x - mu) / sigma;
        let s = xi * z;
        let (log1p_s, e) = shape_logs(xi, z)?;
        let t = 1.0 + s;
        let w = (-e).exp();
        let a = 1.0 + xi - w;
        let st = sigma * t;
        let (g, dg) = g_and_derivative(s, log1p_s);
        let q = z * z * g;
        let dq = z * z * z * dg;
        let l_mu = a / st;
        let l_sigma = z * l_mu - 1.0 / sigma;
        let l_xi = (1.0 - w) * q - z / t;
        let l_mu_mu = (xi * a - w) / (st * st);
        let l_mu_sigma = -(a + w * z) / (st * st);
        let l_mu_xi = ((1.0 - w * q) * t - a * z) / (sigma * t * t);
        let l_sigma_sigma = -z / sigma * l_mu + z * l_mu_sigma + 1.0 / (sigma * sigma);
        let l_sigma_xi = z * l_mu_xi;
        let l_xi_xi = -w * q * q + (1.0 - w) * dq + z * z / (t * t);
        value += c * (ln_sigma + (1.0 + xi) * e + w);
        grad[0] -= c * l_mu;
        grad[1] -= c * l_sigma;
        grad[2] -= c * l_xi;
        hess[0][0] -= c * l_mu_mu;
        hess[0][1] -= c * l_mu_sigma;
        hess[0][2] -= c * l_mu_xi;
        hess[1][1] -= c * l_sigma_sigma;
        hess[1][2] -= c * l_sigma_xi;
        hess[2][2] -= c * l_xi_xi;
    }
    hess[1][0] = hess[0][1];
    hess[2][0] = hess[0][2];
    hess[2][1] = hess[1][2];
    finite(value, &grad, &hess).then_some((value, grad, hess))
}

fn gumbel_nll(data: &Observations, theta: &[f64; 2]) -> f64 {
    gev_nll(data, &[theta[0], theta[1], 0.0])
}

/// The (μ, σ) block of the GEV derivatives at ξ = 0.
fn gumbel_derivatives(data: &Observations, theta: &[f64; 2]) -> Option<Derivatives<2>> {
    let (value, g, h) = gev_derivatives(data, &[theta[0], theta[1], 0.0])?;
    Some((value, [g[0], g[1]], [[h[0][0], h[0][1]], [h[1][0], h[1][1]]]))
}

/// GPD negative log-likelihood of the excesses (values over threshold 0) at θ = (σ, ξ).
fn gpd_nll(excesses: &Observations, theta: &[f64; 2]) -> f64 {
    let [sigma, xi] = *theta;
    if !(sigma > 0.0) || !(xi.abs() < SHAPE_BOUND) {
        return f64::INFINITY;
    }
    let ln_sigma = sigma.ln();
    let mut total = 0.0;
    for (&y, &c) in excesses.values.iter().zip(&excesses.counts) {
        if c <= 0.0 {
            continue;
        }
        let Some((_, e)) = shape_logs(xi, y / sigma) else {
            return f64::INFINITY;
        };
        total += c * (ln_sigma + (1.0 + xi) * e);
    }
    if total.is_nan() {
        f64::INFINITY
    } else {
        total
    }
}

/// Derivatives of ℓ = -ln σ - (1+ξ) e, e = ln(1 + ξ y/σ)/ξ.
fn gpd_derivatives(excesses: &Observations, theta: &[f64; 2]) -> Option<Derivatives<2>> {
    let [sigma, xi] = *theta;
    if !(sigma > 0.0) || !(xi.abs() < SHAPE_BOUND) {
        return None;
    }
    let ln_sigma = sigma.ln();
    let mut value = 0.0;
    let mut grad = [0.0; 2];
    let mut hess = [[0.0; 2]; 2];
    for (&y, &c) in excesses.values.iter().zip(&excesses.counts) {
        if c <= 0.0 {
            continue;
        }
        let z = y / sigma;
        let s = xi * z;
        let (log1p_s, e) = shape_logs(xi, z)?;
        let t = 1.0 + s;
        let (g, dg) = g_and_derivative(s, log1p_s);
        let l_sigma = ((1.0 + xi) * z / t - 1.0) / sigma;
        let l_xi = z * z * g - z / t;
        let l_sigma_sigma = 1.0 / (sigma * sigma) - (1.0 + xi) * z * (1.0 + t) / (sigma * sigma * t * t);
        let l_sigma_xi = z / (sigma * t) - (1.0 + xi) * z * z / (sigma * t * t);
        let l_xi_xi = z * z * z * dg + z * z / (t * t);
        value += c * (ln_sigma + (1.0 + xi) * e);
        grad[0] -= c * l_sigma;
        grad[1] -= c * l_xi;
        hess[0][0] -= c * l_sigma_sigma;
        hess[0][1] -= c * l_sigma_xi;
        hess[1][1] -= c * l_xi_xi;
    }
    hess[1][0] = hess[0][1];
    finite(value, &grad, &hess).then_some((value, grad, hess))
}

fn finite<const D: usize>(value: f64, grad: &[f64; D], hess: &[[f64; D]; D]) -> bool {
    value.is_finite() && grad.iter().all(|g| g.is_finite()) && hess.iter().flatten().all(|h| h.is_finite())
}

/// Solves M x = b for a symmetric positive definite M by Cholesky; None if M is not.
fn cholesky_solve<const D: usize>(m: &[[f64; D]; D], b: &[f64; D]) -> Option<[f64; D]> {
    let mut l = [[0.0; D]; D];
    for i in 0..D {
        for j in 0..=i {
            let sum = m[i][j] - (0..j).map(|k| l[i][k] * l[j][k]).sum::<f64>();
            if i == j {
                if !(sum > 0.0) {
                    return None;
                }
                l[i][i] = sum.sqrt();
            } else {
                l[i][j] = sum / l[j][j];
            }
        }
    }
    let mut y = [0.0; D];
    for i in 0..D {
        let mut sum = b[i];
        for k in 0..i {
            sum -= l[i][k] * y[k];
        }
        y[i] = sum / l[i][i];
    }
    let mut x = [0.0; D];
    for i in (0..D).rev() {
        let mut sum = y[i];
        for k in i + 1..D {
            sum -= l[k][i] * x[k];
        }
        x[i] = sum / l[i][i];
    }
    x.iter().all(|v| v.is_finite()).then_some(x)
}

/// Damped Newton minimisation from `start`; `derivatives` gives the value, gradient and Hessian
/// (None where they do not exist, e.g. outside the support). Converged when the Hessian is
/// positive definite and the Newton decrement gᵀH⁻¹g (twice the decrease a full Newton step
/// promises) is below 1e-8 (1 + |f|); that last Newton step is taken when it does not increase
/// f. A trial step is evaluated with its derivatives, which the next iteration reuses: one pass
/// over the data per iteration.
fn minimise<const D: usize>(
    derivatives: impl Fn(&[f64; D]) -> Option<Derivatives<D>>,
    value: impl Fn(&[f64; D]) -> f64,
    start: [f64; D],
) -> Result<[f64; D], FitFailure> {
    let mut theta = start;
    let (mut f, mut grad, mut hess) =
        derivatives(&theta).ok_or_else(|| FitFailure::new("the likelihood is not defined at the start"))?;
    let mut damping = 0.0f64;
    for _ in 0..MAX_ITERATIONS {
        let minus_grad = grad.map(|g| -g);
        if let Some(step) = cholesky_solve(&hess, &minus_grad) {
            let decrement: f64 = -step.iter().zip(&grad).map(|(s, g)| s * g).sum::<f64>();
            if decrement <= 1e-8 * (1.0 + f.abs()) {
                let last = add(&theta, &step);
                return Ok(if value(&last) <= f { last } else { theta });
            }
        }
        let mut accepted = false;
        while damping <= 1e12 {
            let mut m = hess;
            for (i, row) in m.iter_mut().enumerate() {
                row[i] += damping * hess[i][i].abs().max(1e-12);
            }
            if let Some(step) = cholesky_solve(&m, &minus_grad) {
                let next = add(&theta, &step);
                if let Some((f_next, g_next, h_next)) = derivatives(&next).filter(|(f_next, _, _)| *f_next <= f) {
                    (theta, f, grad, hess) = (next, f_next, g_next, h_next);
                    accepted = true;
                    break;
                }
            }
            damping = (damping * 10.0).max(1e-4);
        }
        if !accepted {
            return Err(FitFailure::new("no step improves the likelihood short of its optimum"));
        }
        damping = if damping > 1e-3 { damping / 10.0 } else { 0.0 };
    }
    Err(FitFailure::new(format!("no convergence in {MAX_ITERATIONS} iterations")))
}

fn add<const D: usize>(a: &[f64; D], b: &[f64; D]) -> [f64; D] {
    let mut out = *a;
    for (o, x) in out.iter_mut().zip(b) {
        *o += x;
    }
    out
}

/// [`minimise`] from the first start where the likelihood is defined.
fn minimise_from_any<const D: usize>(
    derivatives: impl Fn(&[f64; D]) -> Option<Derivatives<D>>,
    value: impl Fn(&[f64; D]) -> f64,
    starts: &[[f64; D]],
) -> Result<[f64; D], FitFailure> {
    let start =
        starts.iter().find(|s| value(s).is_finite()).ok_or_else(|| FitFailure::new("no start inside the support"))?;
    minimise(derivatives, value, *start)
}

fn shape_inside(shape: f64) -> Result<(), FitFailure> {
    if shape.abs() > SHAPE_BOUND - 1e-3 {
        return Err(FitFailure::new(format!(
            "the shape ran to the bound ({shape:.3}): the likelihood has no interior maximum"
        )));
    }
    Ok(())
}

/// GEV by maximum likelihood from `start` (the PWM fit, or a previous fit for a bootstrap
/// replicate); the Gumbel with the same location and scale is tried as a start when `start` leaves
/// observations outside the support.
pub(crate) fn gev(data: &Observations, start: Gev) -> Result<Gev, FitFailure> {
    let (center, scale) = data.unit_range()?;
    let unit = data.standardized(center, scale);
    let starts = [
        [(start.location - center) / scale, start.scale / scale, start.shape],
        [(start.location - center) / scale, start.scale / scale, 0.0],
    ];
    let [mu, sigma, xi] = minimise_from_any(|t| gev_derivatives(&unit, t), |t| gev_nll(&unit, t), &starts)?;
    shape_inside(xi)?;
    Gev::new(center + scale * mu, scale * sigma, xi).ok_or_else(|| FitFailure::new("invalid optimum"))
}

/// Gumbel by maximum likelihood.
pub(crate) fn gumbel(data: &Observations, start: Gumbel) -> Result<Gumbel, FitFailure> {
    let (center, scale) = data.unit_range()?;
    let unit = data.standardized(center, scale);
    let start = [(start.location - center) / scale, start.scale / scale];
    let [mu, sigma] = minimise(|t| gumbel_derivatives(&unit, t), |t| gumbel_nll(&unit, t), start)?;
    Gumbel::new(center + scale * mu, scale * sigma).ok_or_else(|| FitFailure::new("invalid optimum"))
}

/// GPD of the values above `start.threshold` by maximum likelihood; the exponential (ξ = 0) with
/// the mean excess as scale is tried as a start when `start` puts an excess beyond the end.
pub(crate) fn gpd(exceedances: &Observations, start: Gpd) -> Result<Gpd, FitFailure> {
    let threshold = start.threshold;
    let scale = exceedances.excess_range(threshold)?;
    let unit = exceedances.standardized(threshold, scale);
    let mean_excess = unit.iter().map(|(y, c)| y * c).sum::<f64>() / unit.total();
    let starts = [[start.scale / scale, start.shape], [mean_excess, 0.0]];
    let [sigma, xi] = minimise_from_any(|t| gpd_derivatives(&unit, t), |t| gpd_nll(&unit, t), &starts)?;
    shape_inside(xi)?;
    Gpd::new(threshold, scale * sigma, xi).ok_or_else(|| FitFailure::new("invalid optimum"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Observations {
        Observations::from_pairs([(0.1, 2.0), (0.35, 1.0), (0.5, 3.0), (0.9, 1.0), (1.4, 2.0), (2.6, 1.0)]).unwrap()
    }

    /// Central differences of `f` (value) and of the gradient.
    fn check_derivatives<const D: usize>(
        value: impl Fn(&[f64; D]) -> f64,
        derivatives: impl Fn(&[f64; D]) -> Option<Derivatives<D>>,
        theta: [f64; D],
    ) {
        let (f, g, h) = derivatives(&theta).unwrap();
        assert!((f - value(&theta)).abs() < 1e-12 * (1.0 + f.abs()));
        let step = 1e-6;
        for i in 0..D {
            let (mut up, mut down) = (theta, theta);
            up[i] += step;
            down[i] -= step;
            let numeric = (value(&up) - value(&down)) / (2.0 * step);
            assert!((numeric - g[i]).abs() < 1e-6 * (1.0 + g[i].abs()), "grad {i} at {theta:?}: {numeric} vs {}", g[i]);
            let (_, g_up, _) = derivatives(&up).unwrap();
            let (_, g_down, _) = derivatives(&down).unwrap();
            for j in 0..D {
                let numeric = (g_up[j] - g_down[j]) / (2.0 * step);
                assert!(
                    (numeric - h[i][j]).abs() < 1e-5 * (1.0 + h[i][j].abs()),
                    "hess {i}{j} at {theta:?}: {numeric} vs {}",
                    h[i][j]
                );
            }
        }
    }

    #[test]
    fn gev_derivatives_match_finite_differences() {
        let data = sample();
        for xi in [-0.4, -0.1, -1e-9, 0.0, 1e-9, 0.02, 0.3] {
            check_derivatives(|t| gev_nll(&data, t), |t| gev_derivatives(&data, t), [0.5, 1.0, xi]);
        }
    }

    #[test]
    fn gumbel_and_gpd_derivatives_match_finite_differences() {
        let data = sample();
        check_derivatives(|t| gumbel_nll(&data, t), |t| gumbel_derivatives(&data, t), [0.4, 0.7]);
        for xi in [-0.3, -1e-9, 0.0, 0.04, 0.5] {
            check_derivatives(|t| gpd_nll(&data, t), |t| gpd_derivatives(&data, t), [0.8, xi]);
        }
    }

    #[test]
    fn series_and_closed_form_of_g_agree() {
        for s in [0.000999, -0.000999, 0.0011, -0.0011] {
            let (g, dg) = g_and_derivative(s, s.ln_1p());
            let t = 1.0 + s;
            let h = s.ln_1p() - s / t;
            assert!((g - h / (s * s)).abs() < 1e-12);
            assert!((dg - (1.0 / (s * t * t) - 2.0 * h / (s * s * s))).abs() < 1e-9);
        }
        assert_eq!(g_and_derivative(0.0, 0.0), (0.5, -2.0 / 3.0));
    }
}
