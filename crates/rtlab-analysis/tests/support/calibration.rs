//! The pWCET calibration study, shared by the full study (`examples/pwcet_calibration.rs`, run
//! by `bench/pwcet-calibration`) and its fast version in the tests
//! (`tests/pwcet_calibration.rs`).
//!
//! Twelve latency distributions whose quantile at a per-sample exceedance of 1e-9 is known
//! exactly ([`Family::truth_ns`]: closed forms, or bisection of a closed-form survival function
//! for the gamma, the Beta and the mixture). Besides tails that reach their extreme-value limit
//! quickly (exponential, Gumbel, GEV, reversed Weibull) they include tails that converge to it
//! slowly (lognormal, gamma, Weibull with shape below and above 1) and a Beta with a finite end
//! point. Each replication draws n i.i.d. samples from a fixed seed and builds the
//! [`TailInput`] a run at 100 Hz hands to the analysis (as `tail_input` in
//! crates/rtlab-report/src/pwcet.rs does): the maxima of consecutive blocks of 100 samples
//! (per-second maxima), the top 5 % of the samples (at least 2000) as ascending (value, 1)
//! pairs, all n samples, 100 Hz. It runs [`analyse`] with the default [`PwcetConfig`] and keeps
//! the chosen fit's pWCET(1e-9), its 95 % interval, the model and whether the analysis found
//! the estimate defensible (and why not). [`summarise`] turns the replications of one family
//! and size into the figures of the table ([`markdown_table`]) and [`target_failures`] checks
//! them against the targets.
//!
//! An analysis that errors (or panics) is an error row of the table, never a panic here.

#![allow(dead_code)]
// the example and the test each use part of it
// `!(x >= limit)` on purpose: a NaN figure misses the target, as it would not with `x < limit`.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

use rand::distr::Open01;
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use rand_distr::StandardNormal;
use rtlab_analysis::evt::{analyse, Gev, PwcetConfig, TailInput, TailModel};
use statrs::function::erf::{erfc, erfc_inv};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The per-sample exceedance probability of the pWCET studied.
pub const PROBABILITY: f64 = 1e-9;
/// Samples per block maximum: per-second maxima of a run at 100 Hz.
pub const SAMPLES_PER_BLOCK: usize = 100;
pub const SAMPLE_RATE_HZ: f64 = 100.0;
/// The tail handed over: this share of the samples (rtlab-report's `TAIL_SHARE`) ...
pub const TAIL_SHARE: f64 = 0.05;
/// ... but at least this many (`TAIL_MIN_SAMPLES`).
pub const TAIL_MIN_SAMPLES: usize = 2000;

/// The sample size the targets are for.
pub const TARGET_SAMPLES: usize = 200_000;
/// Exponential and Gumbel tails: median |relative error| at most 5 %.
pub const MAX_MEDIAN_ABS_ERROR: f64 = 0.05;
/// The first light-tailed families: the 5th percentile of the signed relative error at least
/// -10 % (in 95 % of replications the estimate is no more than 10 % below the truth).
pub const MIN_P5_ERROR: f64 = -0.10;
/// Every family: the median signed relative error of the replications that give a number
/// (defensible ones) between these ...
pub const MEDIAN_ERROR_RANGE: (f64, f64) = (-0.10, 0.35);
/// ... and in at least this share of the replications the 95 % interval covers the truth or the
/// pWCET is refused with its reason.
pub const MIN_COVERAGE: f64 = 0.90;
/// Bounded families: at most this share refused (a bounded tail gives a number).
pub const MAX_BOUNDED_REFUSED: f64 = 0.10;

/// A distribution with a known pWCET. Values in ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// 10 µs + Exp(scale 5 µs).
    Exponential,
    /// Gumbel μ = 20 µs, σ = 2 µs.
    Gumbel,
    /// GEV ξ = 0.1, μ = 20 µs, σ = 2 µs.
    Gev01,
    /// GEV ξ = 0.3, μ = 20 µs, σ = 2 µs.
    Gev03,
    /// Lognormal with median 20 µs and σ of the logarithm 0.3.
    Lognormal,
    /// Reversed Weibull F(x) = exp(-((60 µs - x)/20 µs)^3) below 60 µs: the GEV with ξ = -1/3,
    /// μ = 40 µs, σ = 20/3 µs.
    BoundedWeibull,
    /// With probability 1 - 1e-3 a Gumbel μ = 20 µs σ = 1 µs, with 1e-3 a spike 4 ms + Exp(3 ms):
    /// a quiet body and rare hypervisor-like stalls.
    Spikes,
    /// Lognormal with median 20 µs and σ of the logarithm 0.5: a tail that is light in the
    /// limit (ξ = 0) but, at the probabilities a run sees and far beyond, as heavy as a GPD
    /// with ξ ≈ 0.065; the exponential of its top 2 % is 35 % low at 1e-9.
    LognormalWide,
    /// 10 µs + Gamma(shape 2, scale 5 µs): P(X > 10 µs + 5 µs·y) = e^(-y)(1 + y).
    Gamma,
    /// 10 µs + Weibull(shape 0.5, scale 1 µs), a stretched exponential:
    /// P(X > 10 µs + y) = exp(-√(y / 1 µs)). Light in the limit, heavy at every level a run sees.
    WeibullStretched,
    /// 10 µs + Weibull(shape 2, scale 10 µs), a compressed exponential:
    /// P(X > 10 µs + y) = exp(-(y / 10 µs)²). Light in the limit, lighter than exponential.
    WeibullCompressed,
    /// 20 µs + 40 µs·Beta(2, 5): end point 60 µs, P(X > 20 µs + 40 µs·b) = (1 - b)^5 (1 + 5b),
    /// so the GPD limit has ξ = -1/5.
    BetaBounded,
}

/// Spike probability of [`Family::Spikes`].
const SPIKE_WEIGHT: f64 = 1e-3;
const SPIKE_START_NS: f64 = 4e6;
const SPIKE_SCALE_NS: f64 = 3e6;
const SPIKE_BODY: (f64, f64) = (20_000.0, 1_000.0);
const WEIBULL_END_NS: f64 = 60_000.0;
const WEIBULL_SCALE_NS: f64 = 20_000.0;
const WEIBULL_POWER: f64 = 3.0;
/// Offset and scale of [`Family::Gamma`] (shape 2).
const GAMMA: (f64, f64) = (10_000.0, 5_000.0);
/// Offset and scale of [`Family::WeibullStretched`] (shape 1/2) and
/// [`Family::WeibullCompressed`] (shape 2).
const STRETCHED: (f64, f64) = (10_000.0, 1_000.0);
const COMPRESSED: (f64, f64) = (10_000.0, 10_000.0);
/// Start and width of [`Family::BetaBounded`].
const BETA: (f64, f64) = (20_000.0, 40_000.0);

impl Family {
    /// In the order of the table: light tails, slowly converging ones, heavy, bounded, mixture.
    pub const ALL: [Family; 12] = [
        Family::Exponential,
        Family::Gumbel,
        Family::Gamma,
        Family::WeibullCompressed,
        Family::Lognormal,
        Family::LognormalWide,
        Family::WeibullStretched,
        Family::Gev01,
        Family::Gev03,
        Family::BoundedWeibull,
        Family::BetaBounded,
        Family::Spikes,
    ];

    /// The family's number in the replication seeds: fixed, so that a family's replications do
    /// not change when families are added or the table is reordered.
    fn seed_index(self) -> u64 {
        match self {
            Family::Exponential => 0,
            Family::Gumbel => 1,
            Family::Gev01 => 2,
            Family::Gev03 => 3,
            Family::Lognormal => 4,
            Family::BoundedWeibull => 5,
            Family::Spikes => 6,
            Family::LognormalWide => 7,
            Family::Gamma => 8,
            Family::WeibullStretched => 9,
            Family::WeibullCompressed => 10,
            Family::BetaBounded => 11,
        }
    }

    /// Short name for the command line.
    pub fn id(self) -> &'static str {
        match self {
            Family::Exponential => "exponential",
            Family::Gumbel => "gumbel",
            Family::Gev01 => "gev0.1",
            Family::Gev03 => "gev0.3",
            Family::Lognormal => "lognormal",
            Family::BoundedWeibull => "reversed-weibull",
            Family::Spikes => "spikes",
            Family::LognormalWide => "lognormal0.5",
            Family::Gamma => "gamma",
            Family::WeibullStretched => "weibull0.5",
            Family::WeibullCompressed => "weibull2",
            Family::BetaBounded => "beta",
        }
    }

    pub fn from_id(id: &str) -> Option<Family> {
        Family::ALL.into_iter().find(|f| f.id() == id)
    }

    /// The name in the table.
    pub fn name(self) -> &'static str {
        match self {
            Family::Exponential => "exponential: 10 µs + Exp(5 µs)",
            Family::Gumbel => "Gumbel μ 20 µs σ 2 µs",
            Family::Gev01 => "GEV ξ 0.1 μ 20 µs σ 2 µs",
            Family::Gev03 => "GEV ξ 0.3 μ 20 µs σ 2 µs",
            Family::Lognormal => "lognormal: median 20 µs, σ_log 0.3",
            Family::BoundedWeibull => "bounded: reversed Weibull, end 60 µs (ξ −1/3)",
            Family::Spikes => "Gumbel 20 µs σ 1 µs + 0.1 % spikes 4 ms + Exp(3 ms)",
            Family::LognormalWide => "lognormal: median 20 µs, σ_log 0.5",
            Family::Gamma => "gamma: 10 µs + Gamma(2, 5 µs)",
            Family::WeibullStretched => "Weibull shape 0.5: 10 µs + 1 µs·W(0.5)",
            Family::WeibullCompressed => "Weibull shape 2: 10 µs + 10 µs·W(2)",
            Family::BetaBounded => "bounded: 20 µs + 40 µs·Beta(2, 5), end 60 µs (ξ −1/5)",
        }
    }

    /// The families the 5th-percentile target is for (exponential, Gumbel, lognormal σ_log 0.3,
    /// reversed Weibull).
    pub fn light_tailed(self) -> bool {
        matches!(self, Family::Exponential | Family::Gumbel | Family::Lognormal | Family::BoundedWeibull)
    }

    /// The families with a finite end point.
    pub fn bounded(self) -> bool {
        matches!(self, Family::BoundedWeibull | Family::BetaBounded)
    }

    /// The GEV of the block-maxima families.
    fn gev(self) -> Option<Gev> {
        match self {
            Family::Gumbel => Gev::new(20_000.0, 2_000.0, 0.0),
            Family::Gev01 => Gev::new(20_000.0, 2_000.0, 0.1),
            Family::Gev03 => Gev::new(20_000.0, 2_000.0, 0.3),
            _ => None,
        }
    }

    /// One sample, ns. Inverse transform of the survival function where there is one (so the
    /// far tail keeps full precision), ziggurat normal for the lognormal.
    pub fn sample(self, rng: &mut Xoshiro256PlusPlus) -> f64 {
        // u in (0, 1): the survival probability of the sample.
        let u: f64 = rng.sample(Open01);
        match self {
            Family::Exponential => 10_000.0 - 5_000.0 * u.ln(),
            Family::Gumbel | Family::Gev01 | Family::Gev03 => match self.gev() {
                // -ln F(x) = -ln(1 - u).
                Some(gev) => gev.quantile_of_minus_log_cdf(-(-u).ln_1p()),
                None => f64::NAN,
            },
            Family::Lognormal | Family::LognormalWide => {
                let z: f64 = rng.sample(StandardNormal);
                20_000.0 * (self.sigma_log() * z).exp()
            }
            Family::BoundedWeibull => weibull_quantile_of_sf(u),
            // The sum of two exponentials; u is one survival probability, v the other.
            Family::Gamma => {
                let v: f64 = rng.sample(Open01);
                GAMMA.0 - GAMMA.1 * (u.ln() + v.ln())
            }
            Family::WeibullStretched => STRETCHED.0 + STRETCHED.1 * u.ln().powi(2),
            Family::WeibullCompressed => COMPRESSED.0 + COMPRESSED.1 * (-u.ln()).sqrt(),
            // Beta(2, 5) is the second smallest of six uniforms (its order statistic).
            Family::BetaBounded => {
                let mut v = [0.0f64; 6];
                for x in &mut v {
                    *x = rng.sample(Open01);
                }
                v.sort_by(f64::total_cmp);
                BETA.0 + BETA.1 * v[1]
            }
            Family::Spikes => {
                if u < SPIKE_WEIGHT {
                    let v: f64 = rng.sample(Open01);
                    SPIKE_START_NS - SPIKE_SCALE_NS * v.ln()
                } else {
                    let v: f64 = rng.sample(Open01);
                    SPIKE_BODY.0 - SPIKE_BODY.1 * (-(-v).ln_1p()).ln()
                }
            }
        }
    }

    /// P(X > x), exact: the check of [`Family::truth_ns`].
    pub fn sf(self, x: f64) -> f64 {
        match self {
            Family::Exponential => {
                if x <= 10_000.0 {
                    1.0
                } else {
                    (-(x - 10_000.0) / 5_000.0).exp()
                }
            }
            Family::Gumbel | Family::Gev01 | Family::Gev03 => self.gev().map_or(f64::NAN, |g| g.sf(x)),
            Family::Lognormal | Family::LognormalWide => {
                if x <= 0.0 {
                    1.0
                } else {
                    normal_sf((x / 20_000.0).ln() / self.sigma_log())
                }
            }
            Family::Gamma => {
                let y = ((x - GAMMA.0) / GAMMA.1).max(0.0);
                (-y).exp() * (1.0 + y)
            }
            Family::WeibullStretched => (-((x - STRETCHED.0) / STRETCHED.1).max(0.0).sqrt()).exp(),
            Family::WeibullCompressed => (-((x - COMPRESSED.0) / COMPRESSED.1).max(0.0).powi(2)).exp(),
            Family::BetaBounded => {
                let b = ((x - BETA.0) / BETA.1).clamp(0.0, 1.0);
                (1.0 - b).powi(5) * (1.0 + 5.0 * b)
            }
            Family::BoundedWeibull => {
                if x >= WEIBULL_END_NS {
                    0.0
                } else {
                    -(-((WEIBULL_END_NS - x) / WEIBULL_SCALE_NS).powf(WEIBULL_POWER)).exp_m1()
                }
            }
            Family::Spikes => {
                let body = Gev { location: SPIKE_BODY.0, scale: SPIKE_BODY.1, shape: 0.0 }.sf(x);
                let spike = if x <= SPIKE_START_NS { 1.0 } else { (-(x - SPIKE_START_NS) / SPIKE_SCALE_NS).exp() };
                (1.0 - SPIKE_WEIGHT) * body + SPIKE_WEIGHT * spike
            }
        }
    }

    /// The value one sample exceeds with probability `p`, ns.
    pub fn truth_ns(self, p: f64) -> f64 {
        match self {
            Family::Exponential => 10_000.0 - 5_000.0 * p.ln(),
            Family::Gumbel | Family::Gev01 | Family::Gev03 => {
                self.gev().map_or(f64::NAN, |g| g.per_sample_quantile(p, 1.0))
            }
            Family::Lognormal | Family::LognormalWide => 20_000.0 * (self.sigma_log() * normal_quantile_of_sf(p)).exp(),
            Family::BoundedWeibull => weibull_quantile_of_sf(p),
            Family::WeibullStretched => STRETCHED.0 + STRETCHED.1 * p.ln().powi(2),
            Family::WeibullCompressed => COMPRESSED.0 + COMPRESSED.1 * (-p.ln()).sqrt(),
            // Closed-form survival functions (integer shapes), inverted by bisection to the last
            // bit: exact to the accuracy of exp and powi, about 1e-15.
            Family::Spikes => bisect_sf(|x| self.sf(x), p, 0.0, 1e12),
            Family::Gamma => bisect_sf(|x| self.sf(x), p, GAMMA.0, 1e12),
            Family::BetaBounded => bisect_sf(|x| self.sf(x), p, BETA.0, BETA.0 + BETA.1),
        }
    }

    /// σ of the logarithm of the lognormal families.
    fn sigma_log(self) -> f64 {
        match self {
            Family::LognormalWide => 0.5,
            _ => 0.3,
        }
    }
}

/// The x with P(X > x) = q of the bounded family: 60 µs - 20 µs (-ln(1 - q))^(1/3).
fn weibull_quantile_of_sf(q: f64) -> f64 {
    WEIBULL_END_NS - WEIBULL_SCALE_NS * (-(-q).ln_1p()).powf(1.0 / WEIBULL_POWER)
}

/// The x in [low, high] with sf(x) = p, for a non-increasing sf, by bisection to the last bit.
pub fn bisect_sf(sf: impl Fn(f64) -> f64, p: f64, mut low: f64, mut high: f64) -> f64 {
    for _ in 0..2000 {
        let mid = 0.5 * (low + high);
        if !(mid > low && mid < high) {
            break;
        }
        if sf(mid) > p {
            low = mid;
        } else {
            high = mid;
        }
    }
    0.5 * (low + high)
}

/// P(Z > z) of the standard normal (statrs' erfc: relative error about 5e-11 here, enough to
/// check a quantile, not to polish one).
pub fn normal_sf(z: f64) -> f64 {
    0.5 * erfc(z / std::f64::consts::SQRT_2)
}

/// The z with P(Z > z) = q of the standard normal: √2 erfc⁻¹(2q) (statrs, Boost's rational
/// approximations, accurate to a few ulps; the test checks it against tabulated values). No
/// Newton step: statrs' erfc is less accurate than its inverse, so a step would make it worse.
pub fn normal_quantile_of_sf(q: f64) -> f64 {
    std::f64::consts::SQRT_2 * erfc_inv(2.0 * q)
}

/// The input a run at 100 Hz gives the analysis for these samples (in time order).
pub fn tail_input(samples: &[f64]) -> TailInput {
    let block_maxima_ns =
        samples.chunks(SAMPLES_PER_BLOCK).map(|c| c.iter().copied().fold(f64::NEG_INFINITY, f64::max)).collect();
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let wanted = ((samples.len() as f64 * TAIL_SHARE).ceil() as usize).max(TAIL_MIN_SAMPLES).min(samples.len());
    let tail_ns = sorted[sorted.len() - wanted..].iter().map(|&v| (v, 1)).collect();
    TailInput {
        block_maxima_ns,
        samples_per_block: SAMPLES_PER_BLOCK as f64,
        tail_ns,
        total_samples: samples.len() as u64,
        sample_rate_hz: SAMPLE_RATE_HZ,
    }
}

/// One replication to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Job {
    pub family: Family,
    pub samples: usize,
    pub seed: u64,
}

/// What one replication's analysis gave.
#[derive(Debug, Clone, PartialEq)]
pub struct Replication {
    /// The chosen fit's pWCET(1e-9) and its interval, ns.
    pub value_ns: f64,
    pub ci_low_ns: f64,
    pub ci_high_ns: f64,
    pub defensible: bool,
    /// Why not, when not defensible.
    pub reasons: Vec<String>,
    /// `fits[chosen].model`.
    pub model: TailModel,
    /// The chosen fit's ξ.
    pub shape: f64,
    /// Broken structure invariants of any estimate (interval not around the value, a value that
    /// is not finite), one sentence each.
    pub violations: Vec<String>,
}

/// A replication's analysis, or why there is none.
pub type Outcome = Result<Replication, String>;

/// Draws the samples of `job`, builds the input and analyses it.
pub fn replicate(job: &Job) -> Outcome {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(job.seed);
    let samples: Vec<f64> = (0..job.samples).map(|_| job.family.sample(&mut rng)).collect();
    let input = tail_input(&samples);
    let config = PwcetConfig::default();
    let analysis = match catch_unwind(AssertUnwindSafe(|| analyse(&input, &config))) {
        Ok(Ok(analysis)) => analysis,
        Ok(Err(e)) => return Err(format!("analyse failed: {e}")),
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            return Err(format!("analyse panicked: {message}"));
        }
    };
    let Some(fit) = analysis.chosen_fit() else {
        return Err(format!("no chosen fit (chosen = {} of {} fits)", analysis.chosen, analysis.fits.len()));
    };
    let Some(estimate) = analysis.estimates.iter().find(|e| e.probability == PROBABILITY) else {
        return Err("no estimate at 1e-9".into());
    };
    let mut violations = Vec::new();
    for e in &analysis.estimates {
        let finite = e.value_ns.is_finite() && e.ci_low_ns.is_finite() && e.ci_high_ns.is_finite();
        if !finite {
            violations.push(format!(
                "pWCET({:e}) {} with interval [{}, {}] is not finite",
                e.probability, e.value_ns, e.ci_low_ns, e.ci_high_ns
            ));
        } else if !(e.ci_low_ns <= e.value_ns && e.value_ns <= e.ci_high_ns) {
            violations.push(format!(
                "pWCET({:e}) {:.1} ns is outside its interval [{:.1}, {:.1}]",
                e.probability, e.value_ns, e.ci_low_ns, e.ci_high_ns
            ));
        }
    }
    Ok(Replication {
        value_ns: estimate.value_ns,
        ci_low_ns: estimate.ci_low_ns,
        ci_high_ns: estimate.ci_high_ns,
        defensible: analysis.defensibility.defensible,
        reasons: analysis.defensibility.reasons.clone(),
        model: fit.model,
        shape: fit.shape,
        violations,
    })
}

/// SplitMix64's output function: distinct inputs, unrelated seeds.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The seed of replication `r` of `family` at `samples` samples in the study seeded `seed`.
pub fn replication_seed(seed: u64, family: Family, samples: usize, r: usize) -> u64 {
    let f = family.seed_index();
    mix(mix(mix(mix(seed) ^ f) ^ samples as u64) ^ r as u64)
}

/// Runs the jobs on `threads` threads; the outcomes in the jobs' order.
pub fn run(jobs: &[Job], threads: usize) -> Vec<Outcome> {
    let next = AtomicUsize::new(0);
    let mut outcomes: Vec<Outcome> = vec![Err("not run".into()); jobs.len()];
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads.max(1))
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(job) = jobs.get(i) else { break };
                        done.push((i, replicate(job)));
                    }
                    done
                })
            })
            .collect();
        for worker in workers {
            // replicate catches the analysis's panics, so a worker only fails on a bug here;
            // its jobs then stay "not run".
            if let Ok(done) = worker.join() {
                for (i, outcome) in done {
                    if let Some(slot) = outcomes.get_mut(i) {
                        *slot = outcome;
                    }
                }
            }
        }
    });
    outcomes
}

/// The figures of one family at one sample size.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub family: Family,
    pub samples: usize,
    pub truth_ns: f64,
    pub replications: usize,
    /// Analyses that failed, with why.
    pub errors: Vec<String>,
    /// Analyses that gave an estimate (refused or not).
    pub analysed: usize,
    /// ... of which not defensible.
    pub refused: usize,
    /// Of the signed relative errors value/truth - 1 of every analysed replication: the
    /// median, the median of |error|, the 5th percentile (linear interpolation between order
    /// statistics, R's type 7). NaN without replications.
    pub median_error: f64,
    /// The median signed error of the defensible replications (those that give a number); NaN
    /// when every one was refused.
    pub median_answered_error: f64,
    pub median_abs_error: f64,
    pub p5_error: f64,
    /// Intervals covering the truth: of every analysed replication, of the defensible ones.
    pub covered: usize,
    pub covered_defensible: usize,
    /// Refused with at least one reason (a refusal without one is also an invariant violation).
    pub refused_with_reason: usize,
    /// How often each model was chosen, most often first.
    pub models: Vec<(TailModel, usize)>,
    /// Median ξ of the chosen fits.
    pub median_shape: f64,
    /// Refusal reasons (up to their first parenthesis) and in how many replications.
    pub reasons: Vec<(String, usize)>,
    /// Structure invariants broken, with the replication's seed.
    pub violations: Vec<String>,
}

impl Summary {
    pub fn defensible(&self) -> usize {
        self.analysed - self.refused
    }
    /// Coverage of every analysed replication's interval.
    pub fn coverage(&self) -> f64 {
        self.covered as f64 / self.analysed as f64
    }
    /// Replications whose interval covers the truth or that were refused with a reason.
    pub fn covered_or_refused(&self) -> usize {
        self.covered_defensible + self.refused_with_reason
    }
}

/// The `q` quantile (0..1) of ascending values, R's type 7; NaN when empty.
pub fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let h = (sorted.len() - 1) as f64 * q.clamp(0.0, 1.0);
    let (i, frac) = (h.floor() as usize, h - h.floor());
    let low = sorted[i];
    let high = sorted.get(i + 1).copied().unwrap_or(low);
    low + frac * (high - low)
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    quantile_sorted(&sorted, 0.5)
}

/// The figures of the replications of one family at one size.
pub fn summarise(family: Family, samples: usize, replications: &[(Job, Outcome)]) -> Summary {
    let truth_ns = family.truth_ns(PROBABILITY);
    let mut errors = Vec::new();
    let mut relative = Vec::new();
    let mut answered = Vec::new();
    let mut shapes = Vec::new();
    let (mut refused, mut covered, mut covered_defensible, mut refused_with_reason) = (0, 0, 0, 0);
    let mut models: Vec<(TailModel, usize)> = Vec::new();
    let mut reasons: Vec<(String, usize)> = Vec::new();
    let mut violations = Vec::new();
    for (job, outcome) in replications {
        let r = match outcome {
            Ok(r) => r,
            Err(e) => {
                errors.push(format!("seed {}: {e}", job.seed));
                continue;
            }
        };
        relative.push(r.value_ns / truth_ns - 1.0);
        shapes.push(r.shape);
        let covers = r.ci_low_ns <= truth_ns && truth_ns <= r.ci_high_ns;
        covered += usize::from(covers);
        if r.defensible {
            covered_defensible += usize::from(covers);
            answered.push(r.value_ns / truth_ns - 1.0);
        } else {
            refused += 1;
            if r.reasons.iter().any(|reason| !reason.trim().is_empty()) {
                refused_with_reason += 1;
            } else {
                violations.push(format!("seed {}: refused without a reason", job.seed));
            }
            let mut shorts: Vec<String> =
                r.reasons.iter().map(|reason| reason.split('(').next().unwrap_or(reason).trim().to_string()).collect();
            shorts.sort();
            shorts.dedup();
            for short in shorts {
                match reasons.iter_mut().find(|(s, _)| *s == short) {
                    Some((_, n)) => *n += 1,
                    None => reasons.push((short, 1)),
                }
            }
        }
        match models.iter_mut().find(|(m, _)| *m == r.model) {
            Some((_, n)) => *n += 1,
            None => models.push((r.model, 1)),
        }
        violations.extend(r.violations.iter().map(|v| format!("seed {}: {v}", job.seed)));
    }
    models.sort_by_key(|m| std::cmp::Reverse(m.1));
    reasons.sort_by_key(|r| std::cmp::Reverse(r.1));
    let abs: Vec<f64> = relative.iter().map(|e| e.abs()).collect();
    let mut sorted = relative.clone();
    sorted.sort_by(f64::total_cmp);
    Summary {
        family,
        samples,
        truth_ns,
        replications: replications.len(),
        errors,
        analysed: relative.len(),
        refused,
        median_error: quantile_sorted(&sorted, 0.5),
        median_answered_error: median(&answered),
        median_abs_error: median(&abs),
        p5_error: quantile_sorted(&sorted, 0.05),
        covered,
        covered_defensible,
        refused_with_reason,
        models,
        median_shape: median(&shapes),
        reasons,
        violations,
    }
}

/// The jobs of a study: `replications` of each family at each size, seeded from `seed`.
pub fn jobs(families: &[Family], sizes: &[usize], replications: usize, seed: u64) -> Vec<Job> {
    let mut out = Vec::new();
    for &family in families {
        for &samples in sizes {
            for r in 0..replications {
                out.push(Job { family, samples, seed: replication_seed(seed, family, samples, r) });
            }
        }
    }
    out
}

/// Runs a whole study and summarises it per family and size, in the order of the arguments.
pub fn study(families: &[Family], sizes: &[usize], replications: usize, seed: u64, threads: usize) -> Vec<Summary> {
    let jobs = jobs(families, sizes, replications, seed);
    let outcomes = run(&jobs, threads);
    let mut paired: Vec<(Job, Outcome)> = jobs.into_iter().zip(outcomes).collect();
    let mut out = Vec::new();
    for &family in families {
        for &samples in sizes {
            let (these, rest): (Vec<_>, Vec<_>) =
                paired.into_iter().partition(|(j, _)| j.family == family && j.samples == samples);
            paired = rest;
            out.push(summarise(family, samples, &these));
        }
    }
    out
}

/// The targets this summary misses, one sentence each; empty when it meets them. They are
/// asserted for [`TARGET_SAMPLES`] ([`is_target_size`]); the table shows them for every size.
/// - every family the tool answers in at least half the replications: the median signed
///   error of the replications that give a number within [`MEDIAN_ERROR_RANGE`] (a family it
///   refuses in most meets this target by refusing, with its reason — the issue's "otherwise
///   the tool refuses"; the median of the few it answers says nothing of the method);
/// - every family: in at least [`MIN_COVERAGE`] of the replications the interval
///   covers the truth or the pWCET is refused with its reason; no analysis failed;
/// - bounded families: at most [`MAX_BOUNDED_REFUSED`] refused;
/// - exponential and Gumbel: median |error| at most [`MAX_MEDIAN_ABS_ERROR`];
/// - the first light-tailed families ([`Family::light_tailed`]): 5th percentile error at least
///   [`MIN_P5_ERROR`].
pub fn target_failures(s: &Summary) -> Vec<String> {
    let mut out = Vec::new();
    if !s.errors.is_empty() {
        out.push(format!("{} of {} analyses failed", s.errors.len(), s.replications));
    }
    if s.analysed == 0 {
        out.push("no replication was analysed".into());
        return out;
    }
    let (low, high) = MEDIAN_ERROR_RANGE;
    if s.defensible() > 0
        && 2 * s.defensible() >= s.analysed
        && !(s.median_answered_error >= low && s.median_answered_error <= high)
    {
        out.push(format!(
            "median error {:+.1} % outside {:+.0} % to {:+.0} %",
            100.0 * s.median_answered_error,
            100.0 * low,
            100.0 * high
        ));
    }
    let acceptable = s.covered_or_refused() as f64 / s.analysed as f64;
    if !(acceptable >= MIN_COVERAGE) {
        out.push(format!("CI covers or refused {:.0} % < {:.0} %", 100.0 * acceptable, 100.0 * MIN_COVERAGE));
    }
    if s.family.bounded() && !(s.refused as f64 / s.analysed as f64 <= MAX_BOUNDED_REFUSED) {
        out.push(format!(
            "bounded tail refused in {:.0} % > {:.0} %",
            100.0 * s.refused as f64 / s.analysed as f64,
            100.0 * MAX_BOUNDED_REFUSED
        ));
    }
    if matches!(s.family, Family::Exponential | Family::Gumbel) && !(s.median_abs_error <= MAX_MEDIAN_ABS_ERROR) {
        out.push(format!("median |error| {:.1} % > {:.0} %", 100.0 * s.median_abs_error, 100.0 * MAX_MEDIAN_ABS_ERROR));
    }
    if s.family.light_tailed() && !(s.p5_error >= MIN_P5_ERROR) {
        out.push(format!("5th percentile error {:+.1} % < {:.0} %", 100.0 * s.p5_error, 100.0 * MIN_P5_ERROR));
    }
    out
}

/// Whether the targets are asserted at this summary's sample size.
pub fn is_target_size(s: &Summary) -> bool {
    s.samples == TARGET_SAMPLES
}

pub fn model_name(model: TailModel) -> &'static str {
    match model {
        TailModel::Gev => "GEV",
        TailModel::Gumbel => "Gumbel",
        TailModel::Gpd => "GPD",
        TailModel::Exponential => "exponential",
    }
}

fn percent(x: f64, signed: bool) -> String {
    if !x.is_finite() {
        "—".into()
    } else if signed {
        format!("{:+.1} %", 100.0 * x)
    } else {
        format!("{:.1} %", 100.0 * x)
    }
}

fn ratio(part: usize, whole: usize) -> String {
    if whole == 0 {
        "—".into()
    } else {
        let share = 100.0 * part as f64 / whole as f64;
        // One decimal below 1 % and above 99 %: "0 %" or "100 %" with exceptions in it misleads.
        if (part > 0 && share < 1.0) || (part < whole && share > 99.0) {
            format!("{part}/{whole} ({share:.1} %)")
        } else {
            format!("{part}/{whole} ({share:.0} %)")
        }
    }
}

/// Thousands separated by commas: 200,000.
pub fn thousands(n: usize) -> String {
    rtlab_analysis::units::thousands(n as u64)
}

/// The table: one row per family and size.
pub fn markdown_table(summaries: &[Summary]) -> String {
    let mut out = String::from(
        "| family | samples | true pWCET(1e-9) | median error | median error, answered | median \\|error\\| | 5th percentile error | CI covers | CI covers or refused | refused | errors | chosen model | median ξ̂ | targets |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for s in summaries {
        let models: Vec<String> = s.models.iter().map(|(m, n)| format!("{} {n}", model_name(*m))).collect();
        let failures = target_failures(s);
        let targets = match (is_target_size(s), failures.is_empty()) {
            (true, true) => "met".to_string(),
            (true, false) => format!("**not met**: {}", failures.join("; ")),
            (false, true) => "(met)".to_string(),
            (false, false) => format!("(missed: {})", failures.join("; ")),
        }
        .replace('|', "\\|");
        let errors = if s.violations.is_empty() {
            s.errors.len().to_string()
        } else {
            format!("{} (+{} invariant violations)", s.errors.len(), s.violations.len())
        };
        out.push_str(&format!(
            "| {} | {} | {:.1} µs | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            s.family.name(),
            thousands(s.samples),
            s.truth_ns / 1000.0,
            percent(s.median_error, true),
            percent(s.median_answered_error, true),
            percent(s.median_abs_error, false),
            percent(s.p5_error, true),
            ratio(s.covered, s.analysed),
            ratio(s.covered_or_refused(), s.analysed),
            ratio(s.refused, s.analysed),
            errors,
            if models.is_empty() { "—".into() } else { models.join(", ") },
            if s.median_shape.is_finite() { format!("{:+.3}", s.median_shape) } else { "—".into() },
            targets,
        ));
    }
    out
}

/// Refusal reasons, failed analyses and broken invariants per row, for under the table.
pub fn notes(summaries: &[Summary]) -> String {
    let mut out = String::new();
    for s in summaries {
        let row = format!("{}, {} samples", s.family.name(), thousands(s.samples));
        for (reason, n) in &s.reasons {
            out.push_str(&format!("- {row}: {n} refused with the reason: {reason}\n"));
        }
        for e in s.errors.iter().take(3) {
            out.push_str(&format!("- {row}: error: {e}\n"));
        }
        if s.errors.len() > 3 {
            out.push_str(&format!("- {row}: {} more errors\n", s.errors.len() - 3));
        }
        for v in s.violations.iter().take(3) {
            out.push_str(&format!("- {row}: invariant broken: {v}\n"));
        }
        if s.violations.len() > 3 {
            out.push_str(&format!("- {row}: {} more invariant violations\n", s.violations.len() - 3));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use statrs::distribution::ContinuousCDF;

    /// Upper normal quantiles from the tables (and Python's `statistics.NormalDist`, Wichura's
    /// AS241, at the lower tail where it is exact).
    #[test]
    fn normal_quantile_matches_known_values() {
        for (q, z) in [
            (0.5, 0.0),
            (0.025, 1.959_963_984_540_054),
            (1e-3, 3.090_232_306_167_813),
            (1e-6, 4.753_424_308_822_899),
            (1e-9, 5.997_807_015_007_686_5),
            (1e-12, 7.034_483_825_301_132),
        ] {
            let got = normal_quantile_of_sf(q);
            assert!((got - z).abs() <= 1e-13 * z.abs().max(1.0), "z({q}) = {got}, expected {z}");
            assert!((normal_sf(got) / q - 1.0).abs() < 1e-9, "sf(z({q})) = {}", normal_sf(got));
        }
    }

    /// Each truth is the value the family's survival function gives 1e-9, and the closed forms
    /// agree with the crate's distributions and with independent computations.
    #[test]
    fn truths_are_the_1e9_quantiles() {
        for family in Family::ALL {
            let truth = family.truth_ns(PROBABILITY);
            let sf = family.sf(truth);
            assert!((sf / PROBABILITY - 1.0).abs() < 1e-6, "{family:?}: sf({truth}) = {sf:e}");
        }
        let close = |a: f64, b: f64| (a / b - 1.0).abs() < 1e-12;
        // Values from Python's math module, closed forms.
        assert!(close(Family::Exponential.truth_ns(1e-9), 113_616.329_184_732_05));
        assert!(close(Family::Gumbel.truth_ns(1e-9), 61_446.531_672_892_82));
        assert!(close(Family::Lognormal.truth_ns(1e-9), 120_913.374_750_404_7));
        assert!(close(Family::BoundedWeibull.truth_ns(1e-9), 59_979.999_999_996_67));
        // The bounded family is the GEV with ξ = -1/3, μ = 40 µs, σ = 20/3 µs.
        let bounded = Gev::new(40_000.0, 20_000.0 / 3.0, -1.0 / 3.0).map(|g| g.per_sample_quantile(1e-9, 1.0));
        assert!(bounded.is_some_and(|b| close(b, Family::BoundedWeibull.truth_ns(1e-9))), "{bounded:?}");
        // The mixture's tail is the spikes': 4 ms + 3 ms ln(1e-3/1e-9).
        let spikes = SPIKE_START_NS + SPIKE_SCALE_NS * (SPIKE_WEIGHT / 1e-9).ln();
        assert!((Family::Spikes.truth_ns(1e-9) / spikes - 1.0).abs() < 1e-9);
        // Closed forms (Python's math module): 20 µs e^(0.5 z), 10 µs + 1 µs ln²(1e9),
        // 10 µs + 10 µs √ln(1e9); and the bisection of the closed-form survival functions
        // e^(-y)(1 + y) and (1 - b)^5 (1 + 5b) in Python's floats.
        assert!(close(Family::LognormalWide.truth_ns(1e-9), 401_270.507_052_728_85));
        assert!(close(Family::WeibullStretched.truth_ns(1e-9), 439_453.746_948_750_2));
        assert!(close(Family::WeibullCompressed.truth_ns(1e-9), 55_522.813_881_554_39));
        assert!(close(Family::Gamma.truth_ns(1e-9), 129_698.639_327_869_85));
        assert!(close(Family::BetaBounded.truth_ns(1e-9), 59_556.149_562_926));
        // Independently of the closed forms: statrs' regularized incomplete gamma and beta
        // functions give the same survival probability (to their accuracy, about 1e-10 here).
        let gamma =
            statrs::distribution::Gamma::new(2.0, 1.0 / GAMMA.1).map(|g| g.sf(Family::Gamma.truth_ns(1e-9) - GAMMA.0));
        assert!(gamma.is_ok_and(|q| (q / 1e-9 - 1.0).abs() < 1e-6), "{gamma:?}");
        let beta = statrs::distribution::Beta::new(2.0, 5.0)
            .map(|b| b.sf((Family::BetaBounded.truth_ns(1e-9) - BETA.0) / BETA.1));
        assert!(beta.is_ok_and(|q| (q / 1e-9 - 1.0).abs() < 1e-6), "{beta:?}");
        // GEV ξ = 0.1: μ + σ ((-ln(1 - p))^(-ξ) - 1)/ξ.
        let gev = 20_000.0 + 2_000.0 * ((-(-1e-9f64).ln_1p()).powf(-0.1) - 1.0) / 0.1;
        assert!(close(Family::Gev01.truth_ns(1e-9), gev));
    }

    /// The samplers draw from the families: the empirical exceedance of a mid quantile.
    #[test]
    fn samplers_follow_their_families() {
        for family in Family::ALL {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
            let samples: Vec<f64> = (0..100_000).map(|_| family.sample(&mut rng)).collect();
            for q in [0.5, 0.1, 0.01] {
                let x = bisect_sf(|x| family.sf(x), q, -1e6, 1e12);
                let share = samples.iter().filter(|&&v| v > x).count() as f64 / samples.len() as f64;
                // Five binomial standard deviations.
                let sd = (q * (1.0 - q) / samples.len() as f64).sqrt();
                assert!((share - q).abs() < 5.0 * sd, "{family:?}: {share} above the {q} quantile {x}");
            }
        }
    }

    #[test]
    fn input_is_what_a_run_at_100_hz_gives() {
        let samples: Vec<f64> = (0..20_000).map(|i| ((i * 7919) % 20_000) as f64).collect();
        let input = tail_input(&samples);
        assert_eq!(input.block_maxima_ns.len(), 200);
        assert_eq!(input.tail_ns.len(), 2000);
        assert_eq!(input.tail_ns.first(), Some(&(18_000.0, 1)));
        assert!(input.tail_ns.windows(2).all(|w| w[0].0 <= w[1].0));
        assert_eq!((input.total_samples, input.samples_per_block, input.sample_rate_hz), (20_000, 100.0, 100.0));
        let big: Vec<f64> = (0..200_000).map(|i| i as f64).collect();
        assert_eq!(tail_input(&big).tail_ns.len(), 10_000);
    }

    #[test]
    fn quantiles_interpolate() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(quantile_sorted(&v, 0.5), 50.5);
        assert!((quantile_sorted(&v, 0.05) - 5.95).abs() < 1e-12);
        assert!(quantile_sorted(&[], 0.5).is_nan());
        assert_eq!(thousands(200_000), "200,000");
        assert_eq!(thousands(20_000), "20,000");
        assert_eq!(thousands(999), "999");
        assert_eq!(ratio(1, 200), "1/200 (0.5 %)");
        assert_eq!(ratio(199, 200), "199/200 (99.5 %)");
        assert_eq!(ratio(0, 200), "0/200 (0 %)");
        assert_eq!(ratio(3, 200), "3/200 (2 %)");
    }
}
