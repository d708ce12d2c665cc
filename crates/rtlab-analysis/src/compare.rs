//! "Is B better than A?": whether the difference between two configurations in a quantile
//! (the median, p99.9) is larger than the noise of measuring it.
//!
//! Method: a Poisson bootstrap over the histogram buckets. Each replicate draws every
//! bucket's count from Poisson(count) (the bootstrap of a histogram: resampling n samples
//! with replacement, with the sample count itself left free) and recomputes the quantile;
//! [`REPLICATES`] replicates of A and of B give the distribution of B − A, and its 2.5 %
//! and 97.5 % points are a 95 % confidence interval of the difference. The difference is
//! significant when the interval excludes 0. Seeds are fixed, so a report is reproducible.
//!
//! Only the buckets near the quantile matter one by one: those whose ranks lie within ten
//! standard deviations (plus ten samples) of the quantile's rank are drawn individually,
//! the buckets below and above that window as one Poisson draw each (a sum of independent
//! Poisson counts is Poisson), which keeps the bootstrap of a 1.5-million-sample histogram
//! to a few buckets per replicate without changing its distribution.
//!
//! Caveat: the bootstrap treats samples as independent. Latency samples are autocorrelated
//! in time (spikes come in bursts: a load phase, a hypervisor hiccup), so the interval is
//! optimistic, most of all for a high percentile that a few bursts decide.

use crate::{nearest_rank, percentile, LatencyHistogram};
use rand::rngs::Xoshiro256PlusPlus;
use rand::SeedableRng;
use rand_distr::{Distribution, Poisson};
use serde::{Deserialize, Serialize};

/// Bootstrap replicates per configuration and quantile.
pub const REPLICATES: usize = 1000;
/// Confidence of the interval.
pub const CONFIDENCE: f64 = 0.95;
/// Base seed of the replicates ("rtlab" in ASCII).
pub const SEED: u64 = 0x72_74_6c_61_62;

/// The seed of the replicates of configuration `index` (its place in `rtlab compare`'s
/// list of runs and scenarios) and quantile `q`: one per configuration and quantile, so the
/// same inputs give the same report, and the gate's interval is compare's.
pub fn seed_for(index: usize, q: f64) -> u64 {
    SEED.wrapping_add((index as u64) << 8).wrapping_add((q * 1000.0) as u64)
}

/// Bootstrap replicates of one quantile of one histogram.
#[derive(Debug, Clone, PartialEq)]
pub struct QuantileReplicates {
    /// Quantile, 0..1.
    pub quantile: f64,
    /// The quantile of the histogram itself, ns.
    pub estimate_ns: i64,
    /// One value per replicate (a replicate that drew no sample at all is left out).
    pub replicates: Vec<i64>,
}

/// Draws `replicates` bootstrap replicates of quantile `q` of `histogram`; None when it is
/// empty.
pub fn bootstrap_quantile(
    histogram: &LatencyHistogram,
    q: f64,
    replicates: usize,
    seed: u64,
) -> Option<QuantileReplicates> {
    let estimate_ns = percentile(histogram, q)?;
    let buckets: Vec<(u64, u64)> = histogram.buckets().collect();
    let total: u64 = buckets.iter().map(|(_, c)| c).sum();
    let window = Window::around(&buckets, total, q);
    let draw = |count: u64| (count > 0).then(|| Poisson::new(count as f64).ok()).flatten();
    let below = draw(window.below);
    let above = draw(window.above);
    let inside: Vec<(u64, Option<Poisson<f64>>)> =
        buckets[window.first..=window.last].iter().map(|&(value, count)| (value, draw(count))).collect();
    let value_below = buckets[window.first.saturating_sub(1)].0;
    let value_above = buckets[(window.last + 1).min(buckets.len() - 1)].0;

    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut sample = |d: &Option<Poisson<f64>>| d.as_ref().map_or(0, |d| d.sample(&mut rng) as u64);
    let mut counts = vec![0u64; inside.len()];
    let mut values = Vec::with_capacity(replicates);
    for _ in 0..replicates {
        let low = sample(&below);
        let mut n = low + sample(&above);
        for (slot, (_, d)) in counts.iter_mut().zip(&inside) {
            *slot = sample(d);
            n += *slot;
        }
        if n == 0 {
            continue;
        }
        let rank = nearest_rank(q, n);
        let value = if rank <= low {
            value_below
        } else {
            let mut cumulative = low;
            let found = counts.iter().zip(&inside).find(|(c, _)| {
                cumulative += **c;
                cumulative >= rank
            });
            found.map_or(value_above, |(_, (v, _))| *v)
        };
        values.push(value as i64);
    }
    Some(QuantileReplicates { quantile: q, estimate_ns, replicates: values })
}

/// The buckets drawn one by one (`first..=last`) and the counts below and above them.
struct Window {
    first: usize,
    last: usize,
    below: u64,
    above: u64,
}

impl Window {
    fn around(buckets: &[(u64, u64)], total: u64, q: f64) -> Window {
        let rank = nearest_rank(q, total) as f64;
        let margin = 10.0 * (total as f64 * q * (1.0 - q)).sqrt() + 10.0;
        let (from, to) = (rank - margin, rank + margin);
        let mut cumulative = 0u64;
        let (mut first, mut last) = (None, 0);
        let (mut below, mut above) = (0u64, 0u64);
        for (i, &(_, count)) in buckets.iter().enumerate() {
            let before = cumulative as f64;
            cumulative += count;
            if (cumulative as f64) < from {
                below += count;
            } else if before > to {
                above += count;
            } else {
                first.get_or_insert(i);
                last = i;
            }
        }
        Window { first: first.unwrap_or(0), last, below, above }
    }
}

/// Which way B moved from A, for a latency (lower is better).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// B is lower than A beyond the noise.
    Lower,
    /// B is higher than A beyond the noise.
    Higher,
    /// The interval contains 0: no difference that the data can tell from noise.
    WithinNoise,
}

/// B − A in one quantile, with its bootstrap confidence interval; ns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuantileDifference {
    pub quantile: f64,
    pub a_ns: i64,
    pub b_ns: i64,
    /// b_ns - a_ns.
    pub difference_ns: i64,
    pub low_ns: i64,
    pub high_ns: i64,
    pub confidence: f64,
    pub replicates: usize,
}

impl QuantileDifference {
    pub fn change(&self) -> Change {
        if self.low_ns > 0 {
            Change::Higher
        } else if self.high_ns < 0 {
            Change::Lower
        } else {
            Change::WithinNoise
        }
    }

    pub fn significant(&self) -> bool {
        self.change() != Change::WithinNoise
    }
}

/// B − A from the replicates of each, paired in order (they are independent draws); None
/// when either has no replicate.
pub fn difference(a: &QuantileReplicates, b: &QuantileReplicates, confidence: f64) -> Option<QuantileDifference> {
    let mut differences: Vec<i64> = a.replicates.iter().zip(&b.replicates).map(|(a, b)| b - a).collect();
    if differences.is_empty() {
        return None;
    }
    differences.sort_unstable();
    let n = differences.len() as u64;
    let tail = (1.0 - confidence) / 2.0;
    let at = |q: f64| differences[nearest_rank(q, n) as usize - 1];
    Some(QuantileDifference {
        quantile: a.quantile,
        a_ns: a.estimate_ns,
        b_ns: b.estimate_ns,
        difference_ns: b.estimate_ns - a.estimate_ns,
        low_ns: at(tail),
        high_ns: at(1.0 - tail),
        confidence,
        replicates: differences.len(),
    })
}

/// B − A in quantile `q` with [`REPLICATES`] replicates at [`CONFIDENCE`], the replicates
/// of A seeded with `seed` and those of B with `seed + 1`.
pub fn compare_quantile(a: &LatencyHistogram, b: &LatencyHistogram, q: f64, seed: u64) -> Option<QuantileDifference> {
    let a = bootstrap_quantile(a, q, REPLICATES, seed)?;
    let b = bootstrap_quantile(b, q, REPLICATES, seed.wrapping_add(1))?;
    difference(&a, &b, CONFIDENCE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DEFAULT_MAX_NS;

    /// A skewed latency-like distribution: a body around 20 µs and a sparse tail to ~2 ms,
    /// scaled by `scale`.
    fn histogram(n: u64, scale: f64, seed: u64) -> LatencyHistogram {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let body = rand_distr::Normal::new(20_000.0, 2_000.0).unwrap();
        let tail = rand_distr::Exp::new(1.0 / 150_000.0).unwrap();
        let mut h = LatencyHistogram::new(DEFAULT_MAX_NS).unwrap();
        for i in 0..n {
            let v: f64 = if i % 100 == 0 { 20_000.0 + tail.sample(&mut rng) } else { body.sample(&mut rng) };
            h.record((v * scale).max(0.0) as i64);
        }
        h
    }

    #[test]
    fn identical_histograms_are_within_noise() {
        let a = histogram(200_000, 1.0, 1);
        for q in [0.5, 0.999] {
            let d = compare_quantile(&a, &a.clone(), q, SEED).unwrap();
            assert_eq!(d.difference_ns, 0);
            assert!(d.low_ns <= 0 && d.high_ns >= 0, "{d:?}");
            assert_eq!(d.change(), Change::WithinNoise);
            assert_eq!(d.replicates, REPLICATES);
        }
    }

    #[test]
    fn two_samples_of_one_distribution_are_within_noise() {
        let a = histogram(100_000, 1.0, 1);
        let b = histogram(100_000, 1.0, 2);
        let d = compare_quantile(&a, &b, 0.5, SEED).unwrap();
        assert_eq!(d.change(), Change::WithinNoise, "{d:?}");
    }

    #[test]
    fn a_shifted_distribution_is_significant() {
        let a = histogram(100_000, 1.0, 1);
        let b = histogram(100_000, 1.05, 2);
        let d = compare_quantile(&a, &b, 0.5, SEED).unwrap();
        assert_eq!(d.change(), Change::Higher, "{d:?}");
        assert!(d.low_ns > 0 && d.difference_ns > 500, "{d:?}");
        let back = compare_quantile(&b, &a, 0.5, SEED).unwrap();
        assert_eq!(back.change(), Change::Lower, "{back:?}");
        // A 5 % shift of a tail that 100 samples decide is not something the p99.9 can
        // tell from noise.
        let tail = compare_quantile(&a, &b, 0.999, SEED).unwrap();
        assert!(tail.high_ns - tail.low_ns > d.high_ns - d.low_ns, "{tail:?} vs {d:?}");
    }

    #[test]
    fn reproducible_with_a_fixed_seed() {
        let a = histogram(50_000, 1.0, 1);
        let b = histogram(50_000, 1.02, 2);
        assert_eq!(compare_quantile(&a, &b, 0.999, 7), compare_quantile(&a, &b, 0.999, 7));
    }

    /// The windowed bootstrap against drawing every bucket: the same interval within a
    /// little Monte-Carlo noise.
    #[test]
    fn the_window_does_not_change_the_distribution() {
        let h = histogram(20_000, 1.0, 3);
        let buckets: Vec<(u64, u64)> = h.buckets().collect();
        for q in [0.5, 0.99] {
            let windowed = bootstrap_quantile(&h, q, 1000, 11).unwrap();
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(12);
            let full: Vec<i64> = (0..1000)
                .map(|_| {
                    let drawn: Vec<(u64, u64)> = buckets
                        .iter()
                        .map(|&(v, c)| (v, Poisson::new(c as f64).unwrap().sample(&mut rng) as u64))
                        .collect();
                    let rank = nearest_rank(q, drawn.iter().map(|(_, c)| c).sum());
                    let mut cumulative = 0;
                    drawn
                        .iter()
                        .find(|(_, c)| {
                            cumulative += c;
                            cumulative >= rank
                        })
                        .unwrap()
                        .0 as i64
                })
                .collect();
            let spread = |values: &[i64]| {
                let mut v = values.to_vec();
                v.sort_unstable();
                let n = v.len() as u64;
                (v[nearest_rank(0.025, n) as usize - 1], v[nearest_rank(0.975, n) as usize - 1])
            };
            let (wl, wh) = spread(&windowed.replicates);
            let (fl, fh) = spread(&full);
            let width = (fh - fl).max(1) as f64;
            assert!(
                ((wl - fl).abs() as f64) < 0.25 * width + 50.0 && ((wh - fh).abs() as f64) < 0.25 * width + 50.0,
                "q {q}: windowed {wl}..{wh}, full {fl}..{fh}"
            );
        }
    }

    #[test]
    fn empty_and_tiny_histograms() {
        let empty = LatencyHistogram::new(DEFAULT_MAX_NS).unwrap();
        assert!(bootstrap_quantile(&empty, 0.5, 10, 1).is_none());
        let mut one = LatencyHistogram::new(DEFAULT_MAX_NS).unwrap();
        one.record(1000);
        let r = bootstrap_quantile(&one, 0.5, 100, 1).unwrap();
        assert!(r.replicates.len() < 100 && r.replicates.iter().all(|&v| (1000..=1001).contains(&v)), "{r:?}");
        let d = compare_quantile(&one, &one, 0.999, 1).unwrap();
        assert_eq!(d.change(), Change::WithinNoise);
    }
}
