//! Curves derived from a [`LatencyHistogram`] for the figures of a report: the cumulative
//! percentage curve (Akamina et al., Figs 7-12), its complement for a log-scale exceedance
//! view, and fixed-width bins for a log-scale histogram (Regnier et al., Fig 9).
//!
//! Exactness: an HDR bucket holds every sample between its lowest and highest equivalent
//! value, so "samples <= x" is exact when x is a bucket boundary. [`CumulativeCurve`] keeps
//! one point at each boundary of every non-empty bucket; between the two boundaries of one
//! bucket the curve is interpolated (that is the histogram's precision, 0.1 % of the value).

use crate::nearest_rank;
use crate::LatencyHistogram;

/// `at_or_below` samples are <= `value_ns` (exactly).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CumulativePoint {
    pub value_ns: u64,
    pub at_or_below: u64,
}

/// The cumulative distribution of a histogram at its bucket boundaries, ascending in value
/// and in count. Empty for an empty histogram.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CumulativeCurve {
    /// Samples in the histogram.
    pub total: u64,
    /// For every non-empty bucket: (lowest equivalent value - 1, samples before it) and
    /// (highest equivalent value, samples up to and including it). The first point's count
    /// is 0 unless the first bucket starts at 0.
    pub points: Vec<CumulativePoint>,
}

/// `fraction_above` of the samples are > `value_ns` (exactly).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExceedancePoint {
    pub value_ns: u64,
    pub fraction_above: f64,
}

impl CumulativeCurve {
    pub fn of(histogram: &LatencyHistogram) -> CumulativeCurve {
        let hdr = histogram.hdr();
        let mut points: Vec<CumulativePoint> = Vec::new();
        let mut cumulative = 0u64;
        for bucket in hdr.iter_recorded() {
            let value = bucket.value_iterated_to();
            let low = hdr.lowest_equivalent(value);
            if low > 0 && points.last().is_none_or(|p| p.value_ns < low - 1) {
                points.push(CumulativePoint { value_ns: low - 1, at_or_below: cumulative });
            }
            cumulative += bucket.count_at_value();
            points.push(CumulativePoint { value_ns: hdr.highest_equivalent(value), at_or_below: cumulative });
        }
        CumulativeCurve { total: cumulative, points }
    }

    /// Percentage (0-100) of samples <= `point`.
    pub fn percent(&self, point: &CumulativePoint) -> f64 {
        if self.total == 0 {
            return 0.0;
        }
        point.at_or_below as f64 * 100.0 / self.total as f64
    }

    /// Percentage of samples <= `x_ns`: exact at bucket boundaries, interpolated linearly
    /// inside a bucket. 0 below the first sample, 100 from the last bucket on.
    pub fn percent_at(&self, x_ns: u64) -> f64 {
        let i = self.points.partition_point(|p| p.value_ns <= x_ns);
        if i == 0 {
            return 0.0;
        }
        let below = &self.points[i - 1];
        let Some(above) = self.points.get(i) else { return self.percent(below) };
        let span = (above.value_ns - below.value_ns) as f64;
        let t = (x_ns - below.value_ns) as f64 / span;
        let at = below.at_or_below as f64 + t * (above.at_or_below - below.at_or_below) as f64;
        at * 100.0 / self.total as f64
    }

    /// The nearest-rank `q` quantile read from the curve: the first boundary whose count
    /// reaches the rank (the same value as [`crate::percentile`]). None when empty.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        let rank = nearest_rank(q, self.total);
        if rank == 0 {
            return None;
        }
        let i = self.points.partition_point(|p| p.at_or_below < rank);
        self.points.get(i).or(self.points.last()).map(|p| p.value_ns)
    }

    /// The complement at the same boundaries: fraction of samples above each value, from
    /// 1 (or less) down to 0 at the last point. The smallest non-zero fraction is
    /// 1 / [`Self::total`].
    pub fn exceedance(&self) -> Vec<ExceedancePoint> {
        if self.total == 0 {
            return Vec::new();
        }
        let total = self.total as f64;
        self.points
            .iter()
            .map(|p| ExceedancePoint {
                value_ns: p.value_ns,
                fraction_above: (self.total - p.at_or_below) as f64 / total,
            })
            .collect()
    }

    /// The points whose percentage is at least `from_percent`, preceded by the boundary
    /// just below it (so a zoom on the top percents starts on the axis): the data of
    /// "top 2 %" views.
    pub fn from_percent(&self, from_percent: f64) -> &[CumulativePoint] {
        let i = self.points.partition_point(|p| self.percent(p) < from_percent);
        &self.points[i.saturating_sub(1)..]
    }
}

/// One fixed-width bin of a histogram: `count` samples in `[start_ns, start_ns + width)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bin {
    pub start_ns: u64,
    pub count: u64,
}

/// The histogram re-binned into bins of `width_ns` (e.g. 1 µs, Regnier et al. Fig 9):
/// non-empty bins only, ascending. Each HDR bucket's count goes whole into the bin that
/// holds the bucket's midpoint, so the counts add up to the histogram's. Buckets narrower
/// than a bin (below about 1 ms for 1 µs bins) land in the right bin unless they straddle
/// a bin boundary; wider buckets (the far tail) put their samples in one bin of their range.
/// Empty for `width_ns` 0.
pub fn fixed_bins(histogram: &LatencyHistogram, width_ns: u64) -> Vec<Bin> {
    if width_ns == 0 {
        return Vec::new();
    }
    let hdr = histogram.hdr();
    let mut bins: Vec<Bin> = Vec::new();
    for bucket in hdr.iter_recorded() {
        let value = bucket.value_iterated_to();
        let low = hdr.lowest_equivalent(value);
        let high = hdr.highest_equivalent(value);
        let middle = low + (high - low) / 2;
        let start_ns = middle - middle % width_ns;
        match bins.last_mut() {
            Some(last) if last.start_ns == start_ns => last.count += bucket.count_at_value(),
            _ => bins.push(Bin { start_ns, count: bucket.count_at_value() }),
        }
    }
    bins
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{percentile, DEFAULT_MAX_NS};
    use proptest::prelude::*;

    fn histogram_of(values: &[i64]) -> LatencyHistogram {
        let mut h = LatencyHistogram::new(DEFAULT_MAX_NS).unwrap();
        for &v in values {
            h.record(v);
        }
        h
    }

    /// 1 ..= 1000 µs, one sample each.
    fn one_to_thousand_us() -> Vec<i64> {
        (1..=1000).map(|us| us * 1000).collect()
    }

    #[test]
    fn half_the_samples_are_at_or_below_500_us() {
        let curve = CumulativeCurve::of(&histogram_of(&one_to_thousand_us()));
        assert_eq!(curve.total, 1000);
        let at = curve.percent_at(500_000);
        // Exactly 50 % are <= 500 µs; the bucket holding 500 µs is 256 ns wide (0.05 %).
        assert!((at - 50.0).abs() <= 0.1, "{at}");
        assert_eq!(curve.percent_at(0), 0.0);
        assert_eq!(curve.percent_at(999), 0.0);
        assert_eq!(curve.percent_at(2_000_000), 100.0);
        assert_eq!(curve.points.last().unwrap().at_or_below, 1000);
    }

    #[test]
    fn points_are_exact_at_bucket_boundaries() {
        let values = [0, 1, 5, 5, 2047, 2048, 2049, 100_000, 100_010, 7_000_000];
        let curve = CumulativeCurve::of(&histogram_of(&values));
        for p in &curve.points {
            let exact = values.iter().filter(|&&v| v as u64 <= p.value_ns).count() as u64;
            assert_eq!(p.at_or_below, exact, "at {} ns", p.value_ns);
        }
        assert!(curve.points.windows(2).all(|w| w[0].value_ns < w[1].value_ns));
        assert!(curve.points.windows(2).all(|w| w[0].at_or_below <= w[1].at_or_below));
    }

    #[test]
    fn exceedance_goes_down_to_one_over_count_then_zero() {
        let mut values: Vec<i64> = vec![10_000; 99_999];
        values.push(500_000);
        let curve = CumulativeCurve::of(&histogram_of(&values));
        let ex = curve.exceedance();
        let last_nonzero = ex.iter().rev().find(|p| p.fraction_above > 0.0).unwrap();
        assert!((last_nonzero.fraction_above - 1e-5).abs() < 1e-12);
        assert!(last_nonzero.value_ns < 500_000);
        assert_eq!(ex.last().unwrap().fraction_above, 0.0);
        assert_eq!(ex.first().unwrap().fraction_above, 1.0);
    }

    #[test]
    fn zoom_starts_just_below_the_percentage() {
        let curve = CumulativeCurve::of(&histogram_of(&one_to_thousand_us()));
        let top = curve.from_percent(98.0);
        assert!(curve.percent(&top[0]) < 98.0);
        assert!(curve.percent(&top[1]) >= 98.0);
        assert_eq!(top.last(), curve.points.last());
    }

    #[test]
    fn empty_histogram_has_empty_curves() {
        let curve = CumulativeCurve::of(&histogram_of(&[]));
        assert_eq!(curve.total, 0);
        assert!(curve.points.is_empty());
        assert_eq!(curve.quantile(0.5), None);
        assert_eq!(curve.percent_at(10), 0.0);
        assert!(curve.exceedance().is_empty());
        assert!(curve.from_percent(98.0).is_empty());
        assert!(fixed_bins(&histogram_of(&[]), 1000).is_empty());
    }

    #[test]
    fn one_microsecond_bins_count_every_sample() {
        let values = one_to_thousand_us();
        let bins = fixed_bins(&histogram_of(&values), 1000);
        assert_eq!(bins.iter().map(|b| b.count).sum::<u64>(), 1000);
        assert!(bins.windows(2).all(|w| w[0].start_ns < w[1].start_ns));
        // Small values: buckets of 1-2 ns fall in exactly their bin.
        let small = fixed_bins(&histogram_of(&[100, 999, 1000, 1500, 1999, 2500]), 1000);
        assert_eq!(
            small,
            vec![Bin { start_ns: 0, count: 2 }, Bin { start_ns: 1000, count: 3 }, Bin { start_ns: 2000, count: 1 }]
        );
        assert!(fixed_bins(&histogram_of(&values), 0).is_empty());
    }

    proptest! {
        /// Percentiles read from the cumulative curve agree with nearest rank on the raw
        /// values within the histogram's precision (0.1 %), and with `percentile`.
        #[test]
        fn curve_quantiles_match_nearest_rank(mut values in proptest::collection::vec(0i64..50_000_000, 1..3000),
                                              q in 0.0f64..=1.0) {
            let h = histogram_of(&values);
            let curve = CumulativeCurve::of(&h);
            values.sort_unstable();
            for q in [q, 0.5, 0.9, 0.99, 0.999, 0.99999] {
                let exact = values[nearest_rank(q, values.len() as u64) as usize - 1];
                let got = curve.quantile(q).unwrap() as i64;
                let tolerance = (exact as f64 / 1000.0).ceil() as i64 + 1;
                prop_assert!(got >= exact && got - exact <= tolerance, "q {}: got {} exact {}", q, got, exact);
                prop_assert_eq!(Some(got), percentile(&h, q));
            }
            // And the percentage at each sample value is the exact share within one bucket.
            let x = values[values.len() / 2];
            let exact_percent = values.iter().filter(|&&v| v <= x).count() as f64 * 100.0 / values.len() as f64;
            let share_in_bucket = {
                let hdr = h.hdr();
                let (lo, hi) = (hdr.lowest_equivalent(x as u64) as i64, hdr.highest_equivalent(x as u64) as i64);
                values.iter().filter(|&&v| v >= lo && v <= hi).count() as f64 * 100.0 / values.len() as f64
            };
            prop_assert!((curve.percent_at(x as u64) - exact_percent).abs() <= share_in_bucket + 1e-9);
        }
    }
}
