//! Censored data: samples a source clipped. Another tool's histogram with a last bucket has
//! not seen the samples beyond it (cyclictest's "Histogram Overflows", rtla's "over:"): they
//! are right-censored at the overflow bound, known only to be at least it. Every statistic
//! that falls among them is a lower bound of the true one, and is shown and stored as such
//! ([`Censoring::lower_bound`]): `≥ 20.0 µs`.
//!
//! The censored samples are recorded at the bound (the largest at the source's exact max
//! when it has one), so a statistic of the recorded data is never above the true one; below
//! the bound the recorded and true distributions are the same, so a percentile below it is
//! as exact as any other.

use crate::{Moments, Summary};
use serde::{Deserialize, Serialize};

/// The sign that marks a lower bound in every output: the true value is at least the figure.
pub const LOWER_BOUND_SIGN: &str = "≥";

/// What a source clipped of one series (run.json: `summary.censored`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Censoring {
    /// Every censored sample is at least this, in ns (the source's overflow bound).
    pub above_ns: i64,
    /// Samples beyond the source's histogram.
    pub count: u64,
    /// The statistics the source recorded exactly despite the clipping: any of "min",
    /// "max", "mean" (cyclictest's footer, rtla's summary, Xenomai's RTS line,
    /// jitterdebugger's results.json).
    #[serde(default)]
    pub exact: Vec<String>,
    /// The statistics of the summary that are lower bounds of the true ones: "mean",
    /// "stddev", "p99", ..., "max", in the summary's order.
    #[serde(default)]
    pub lower_bound: Vec<String>,
}

/// Which figure of a distribution: the summary's names.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Figure {
    Min,
    Max,
    Mean,
    Stddev,
    /// A quantile 0..1.
    Quantile(f64),
}

impl Censoring {
    /// `count` samples at or above `above_ns`, the source's exact figures named in `exact`.
    pub fn new(above_ns: i64, count: u64, exact: &[&str]) -> Self {
        Self { above_ns, count, exact: exact.iter().map(|s| s.to_string()).collect(), lower_bound: Vec::new() }
    }

    /// The censoring of several series together (one metric on several CPUs): None when no
    /// series is censored. Censored from the lowest bound on, the counts added; a figure is
    /// exact only when every censored series has it exactly.
    pub fn merge<'a>(parts: impl IntoIterator<Item = Option<&'a Censoring>>) -> Option<Censoring> {
        let mut merged: Option<Censoring> = None;
        for part in parts.into_iter().flatten() {
            merged = Some(match merged {
                None => Censoring { lower_bound: Vec::new(), ..part.clone() },
                Some(m) => Censoring {
                    above_ns: m.above_ns.min(part.above_ns),
                    count: m.count.saturating_add(part.count),
                    exact: m.exact.into_iter().filter(|e| part.exact.contains(e)).collect(),
                    lower_bound: Vec::new(),
                },
            });
        }
        merged.filter(|c| c.count > 0)
    }

    fn is_exact(&self, name: &str) -> bool {
        self.exact.iter().any(|e| e == name)
    }

    /// The lower bound that `value` (this figure of the recorded data, whose max is `max`)
    /// stands for, when it is one: None when the figure is exact. A percentile at or beyond
    /// the bound lands among the censored samples and is only known to be at least the
    /// bound (unless it is the source's exact max); the mean without the source's own is
    /// that of samples placed at the bound; the stddev is never known.
    pub fn lower_bound_of(&self, figure: Figure, value: i64, max: i64) -> Option<i64> {
        if self.count == 0 {
            return None;
        }
        match figure {
            Figure::Quantile(_) => {
                let exact_max = self.is_exact("max") && value == max;
                // The bound's own histogram bucket reads a hair above the bound: the bound is
                // what is known. Well above it (several series merged, each clipped at its
                // own bound) the recorded value is the tighter lower bound.
                let in_bounds_bucket = value - self.above_ns <= self.above_ns / 1000;
                (value >= self.above_ns && !exact_max).then_some(if in_bounds_bucket { self.above_ns } else { value })
            }
            Figure::Min => (value >= self.above_ns && !self.is_exact("min")).then_some(value),
            Figure::Max => (!self.is_exact("max")).then_some(value),
            Figure::Mean => (!self.is_exact("mean")).then_some(value),
            Figure::Stddev => Some(value),
        }
    }

    /// Marks the figures of `summary` (of the recorded data) that are lower bounds, lowers a
    /// censored percentile to the bound (the recorded value is the bound's histogram bucket,
    /// a little above it, unless well above it), and attaches this censoring to the summary.
    pub fn apply(mut self, mut summary: Summary) -> Summary {
        self.lower_bound.clear();
        let max = summary.max;
        let mut mark = |name: &str, figure: Figure, value: i64| {
            let bound = self.lower_bound_of(figure, value, max);
            if bound.is_some() {
                self.lower_bound.push(name.to_string());
            }
            bound
        };
        mark("min", Figure::Min, summary.min);
        mark("mean", Figure::Mean, summary.mean.round() as i64);
        mark("stddev", Figure::Stddev, summary.stddev.round() as i64);
        for ((name, q), value) in crate::SUMMARY_PERCENTILES.iter().zip(summary.percentile_slots()) {
            if let Some(bound) = mark(name, Figure::Quantile(*q), *value) {
                *value = bound;
            }
        }
        mark("max", Figure::Max, max);
        summary.censored = (self.count > 0).then_some(self);
        summary
    }
}

impl Summary {
    /// The figure named `name` ("min", "mean", "stddev", "p50" ... "p99.999", "max") in ns.
    pub fn figure_ns(&self, name: &str) -> Option<f64> {
        Some(match name {
            "min" => self.min as f64,
            "max" => self.max as f64,
            "mean" => self.mean,
            "stddev" => self.stddev,
            _ => self.percentiles().iter().find(|(n, _)| *n == name)?.1 as f64,
        })
    }

    /// The figure named `name` in µs with one decimal, "≥ " before a lower bound: how every
    /// output writes a summary's figures. "-" for an unknown name.
    pub fn format_us(&self, name: &str) -> String {
        self.figure_ns(name).map_or_else(
            || "-".to_string(),
            |ns| {
                let value = crate::units::format_us_f(ns);
                if self.is_lower_bound(name) {
                    format!("{LOWER_BOUND_SIGN} {value}")
                } else {
                    value
                }
            },
        )
    }

    /// Whether the summary's figure `name` ("p99", "mean", "max", ...) is a lower bound.
    pub fn is_lower_bound(&self, name: &str) -> bool {
        self.censored.as_ref().is_some_and(|c| c.lower_bound.iter().any(|l| l == name))
    }
}

/// The moments of a censored series whose source recorded its exact mean: `exact` holds the
/// samples within the histogram, `censored` samples lie at or above `above_ns` and add up to
/// what the source's mean leaves for them (at least `censored · above_ns`, whatever the
/// source's rounding says). The sum of squares is the smallest one with those sums (the
/// censored samples all equal: Jensen), so the stddev is a lower bound of the true one.
pub fn moments_with_exact_mean(
    exact: &Moments,
    censored: u64,
    above_ns: i64,
    max_ns: Option<i64>,
    mean_ns: f64,
) -> Moments {
    if censored == 0 {
        return *exact;
    }
    // The source's exact max is one of the censored samples; the others are unknown.
    let mut known = *exact;
    if let Some(max) = max_ns {
        known.record(max);
    }
    let unknown = censored - u64::from(max_ns.is_some());
    let count = exact.count + censored;
    let total = (mean_ns * count as f64).round() as i128;
    let least = above_ns as i128 * unknown as i128;
    let unknown_sum = (total - known.sum).max(least);
    // Unknown samples all at unknown_sum / unknown minimise their sum of squares.
    let square =
        if unknown > 0 { (unknown_sum.unsigned_abs() * unknown_sum.unsigned_abs()) / unknown as u128 } else { 0 };
    Moments {
        count,
        min: if exact.count > 0 { exact.min.min(above_ns) } else { above_ns },
        max: max_ns.unwrap_or(above_ns).max(if exact.count > 0 { exact.max } else { above_ns }),
        sum: known.sum + unknown_sum,
        sum_of_squares: known.sum_of_squares + square,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LatencyHistogram;

    /// 10 exact samples 1..=10 µs and 5 censored at >= 20 µs (true values 25..=45 µs).
    fn recorded() -> (LatencyHistogram, Moments, Vec<i64>) {
        let mut h = LatencyHistogram::new(crate::DEFAULT_MAX_NS).unwrap();
        let mut m = Moments::new();
        for v in 1..=10 {
            h.record(v * 1000);
            m.record(v * 1000);
        }
        h.record_n(20_000, 5);
        m.record_n(20_000, 5);
        let mut truth: Vec<i64> = (1..=10).map(|v| v * 1000).collect();
        truth.extend([25_000, 30_000, 35_000, 40_000, 45_000]);
        (h, m, truth)
    }

    fn nearest_rank_of(sorted: &[i64], q: f64) -> i64 {
        sorted[crate::nearest_rank(q, sorted.len() as u64) as usize - 1]
    }

    #[test]
    fn percentiles_below_the_bound_are_exact_and_those_beyond_it_lower_bounds() {
        let (h, m, truth) = recorded();
        let summary = Censoring::new(20_000, 5, &[]).apply(Summary::from_parts(&h, &m).unwrap());
        // p50 (rank 8 of 15) is exact: 8 µs, as the sorted true samples say.
        assert_eq!(summary.p50 / 1000, nearest_rank_of(&truth, 0.5) / 1000);
        assert!(!summary.is_lower_bound("p50"));
        // p90 (rank 14) lands among the censored: at least 20 µs, truly 40 µs.
        assert!(summary.is_lower_bound("p90"));
        assert_eq!(summary.p90, 20_000);
        for ((name, q), value) in crate::SUMMARY_PERCENTILES.iter().zip(summary.percentiles()) {
            let truth = nearest_rank_of(&truth, *q);
            if summary.is_lower_bound(name) {
                assert!(value.1 <= truth, "{name}: {} is not a lower bound of {truth}", value.1);
            } else {
                assert!((value.1 - truth).abs() <= truth / 1000 + 1, "{name}: {} vs exact {truth}", value.1);
            }
        }
        let c = summary.censored.as_ref().unwrap();
        assert_eq!(c.lower_bound, ["mean", "stddev", "p90", "p99", "p99.9", "p99.99", "p99.999", "max"]);
        let true_mean = truth.iter().sum::<i64>() as f64 / truth.len() as f64;
        assert!(summary.mean < true_mean && summary.max < 45_000);
    }

    #[test]
    fn the_sources_exact_figures_are_not_lower_bounds() {
        let (_, _, truth) = recorded();
        // As an import records it: the exact samples, 4 censored at the bound, the largest
        // at the source's exact max.
        let mut h = LatencyHistogram::new(crate::DEFAULT_MAX_NS).unwrap();
        let mut m = Moments::new();
        for v in truth[..10].iter().copied().chain([20_000; 4]).chain([45_000]) {
            h.record(v);
            m.record(v);
        }
        let exact_mean = truth.iter().sum::<i64>() as f64 / truth.len() as f64;
        let summary = Censoring::new(20_000, 5, &["min", "max", "mean"])
            .apply(Summary { mean: exact_mean, ..Summary::from_parts(&h, &m).unwrap() });
        let c = summary.censored.as_ref().unwrap();
        assert_eq!(c.lower_bound, ["stddev", "p90"], "the stddev is never known");
        // p99 and above (rank 15 of 15) are the largest sample: the source's exact max.
        assert_eq!((summary.p99, summary.max), (45_000, 45_000));
        assert_eq!(summary.mean, exact_mean);
    }

    #[test]
    fn everything_censored_makes_the_min_a_lower_bound_unless_the_source_had_it() {
        let mut h = LatencyHistogram::new(crate::DEFAULT_MAX_NS).unwrap();
        let mut m = Moments::new();
        h.record_n(20_000, 3);
        m.record_n(20_000, 3);
        let s = Censoring::new(20_000, 3, &[]).apply(Summary::from_parts(&h, &m).unwrap());
        assert!(s.is_lower_bound("min") && s.is_lower_bound("p50"));
        let s = Censoring::new(20_000, 3, &["min"]).apply(Summary::from_parts(&h, &m).unwrap());
        assert!(!s.is_lower_bound("min"));
    }

    #[test]
    fn the_exact_mean_fixes_the_sum_and_gives_a_stddev_that_is_a_lower_bound() {
        let (_, _, truth) = recorded();
        let mut exact = Moments::new();
        truth[..10].iter().for_each(|&v| exact.record(v));
        let mut all = Moments::new();
        truth.iter().for_each(|&v| all.record(v));
        let mean = all.mean().unwrap();
        let m = moments_with_exact_mean(&exact, 5, 20_000, Some(45_000), mean);
        assert_eq!((m.count, m.min, m.max, m.sum), (15, 1000, 45_000, all.sum));
        assert_eq!(m.mean(), Some(mean));
        let (lower, truth_sd) = (m.stddev().unwrap(), all.stddev().unwrap());
        assert!(lower <= truth_sd && lower > 0.0, "{lower} vs {truth_sd}");
        // A source mean rounded below what the bound allows: the bound wins.
        let m = moments_with_exact_mean(&exact, 5, 20_000, None, 1000.0);
        assert_eq!(m.sum, exact.sum + 100_000);
        assert!(m.stddev().unwrap() >= 0.0);
        // Everything censored: the exact max alone still spreads the samples.
        let m = moments_with_exact_mean(&Moments::new(), 5, 20_000, Some(45_000), 35_000.0);
        assert_eq!((m.count, m.sum, m.max), (5, 175_000, 45_000));
        let truth = [25_000i64, 30_000, 35_000, 40_000, 45_000].iter().fold(Moments::new(), |mut t, &v| {
            t.record(v);
            t
        });
        assert!(m.stddev().unwrap() > 0.0 && m.stddev().unwrap() <= truth.stddev().unwrap());
        assert!(m.stddev().unwrap() >= 0.0);
    }

    #[test]
    fn merged_censoring_keeps_the_lowest_bound_and_only_common_exact_figures() {
        let a = Censoring::new(20_000, 3, &["min", "max", "mean"]);
        let b = Censoring::new(50_000, 4, &["max"]);
        let m = Censoring::merge([Some(&a), None, Some(&b)]).unwrap();
        assert_eq!((m.above_ns, m.count, m.exact.clone()), (20_000, 7, vec!["max".to_string()]));
        assert_eq!(Censoring::merge([None, None]), None);
    }

    #[test]
    fn a_percentile_well_above_the_lowest_bound_keeps_its_tighter_value() {
        let merged = Censoring::new(20_000, 5, &[]);
        assert_eq!(merged.lower_bound_of(Figure::Quantile(0.99), 20_010, 90_000), Some(20_000), "the bound's bucket");
        assert_eq!(merged.lower_bound_of(Figure::Quantile(0.99), 45_000, 90_000), Some(45_000));
        assert_eq!(merged.lower_bound_of(Figure::Quantile(0.5), 19_000, 90_000), None, "below the bound: exact");
    }

    #[test]
    fn a_lower_bound_is_written_with_its_sign() {
        let (h, m, _) = recorded();
        let s = Censoring::new(20_000, 5, &[]).apply(Summary::from_parts(&h, &m).unwrap());
        assert_eq!(
            (s.format_us("p50"), s.format_us("p99"), s.format_us("max")),
            ("8.0".into(), "≥ 20.0".into(), "≥ 20.0".into())
        );
        assert_eq!(s.format_us("p42"), "-");
    }
}
