use crate::{LatencyHistogram, Moments};
use serde::{Deserialize, Serialize};

/// The percentiles every summary carries: (name used in output, quantile).
pub const SUMMARY_PERCENTILES: [(&str, f64); 6] =
    [("p50", 0.50), ("p90", 0.90), ("p99", 0.99), ("p99.9", 0.999), ("p99.99", 0.9999), ("p99.999", 0.99999)];

/// Summary statistics of one metric, in ns. Min, max, mean and stddev are exact (from
/// [`Moments`]); percentiles come from the histogram and are within its precision (0.1 %).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub count: u64,
    pub min: i64,
    pub max: i64,
    pub mean: f64,
    pub stddev: f64,
    pub p50: i64,
    pub p90: i64,
    pub p99: i64,
    #[serde(rename = "p99.9")]
    pub p99_9: i64,
    #[serde(rename = "p99.99")]
    pub p99_99: i64,
    #[serde(rename = "p99.999")]
    pub p99_999: i64,
    /// What the source clipped and which figures are therefore lower bounds (imports of
    /// overflowing histograms, [`crate::censored`]). Absent for uncensored data and in
    /// run.json files written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub censored: Option<crate::censored::Censoring>,
}

impl Summary {
    /// None when there are no samples.
    pub fn from_parts(histogram: &LatencyHistogram, moments: &Moments) -> Option<Summary> {
        let (min, max) = (moments.min()?, moments.max()?);
        let p = |q| percentile(histogram, q).map(|v| v.clamp(min, max)).unwrap_or(max);
        Some(Summary {
            count: moments.count,
            min,
            max,
            mean: moments.mean()?,
            stddev: moments.stddev()?,
            p50: p(0.50),
            p90: p(0.90),
            p99: p(0.99),
            p99_9: p(0.999),
            p99_99: p(0.9999),
            p99_999: p(0.99999),
            censored: None,
        })
    }

    /// The summary of recorded data of which `censoring` was clipped (None: as
    /// [`Summary::from_parts`]): its lower bounds marked ([`crate::censored::Censoring::apply`]).
    pub fn from_censored_parts(
        histogram: &LatencyHistogram,
        moments: &Moments,
        censoring: Option<crate::censored::Censoring>,
    ) -> Option<Summary> {
        let summary = Summary::from_parts(histogram, moments)?;
        Some(match censoring {
            Some(c) => c.apply(summary),
            None => summary,
        })
    }

    /// The percentile values in [`SUMMARY_PERCENTILES`] order, to change in place.
    pub(crate) fn percentile_slots(&mut self) -> [&mut i64; 6] {
        [&mut self.p50, &mut self.p90, &mut self.p99, &mut self.p99_9, &mut self.p99_99, &mut self.p99_999]
    }

    /// The percentile values in [`SUMMARY_PERCENTILES`] order.
    pub fn percentiles(&self) -> [(&'static str, i64); 6] {
        [
            ("p50", self.p50),
            ("p90", self.p90),
            ("p99", self.p99),
            ("p99.9", self.p99_9),
            ("p99.99", self.p99_99),
            ("p99.999", self.p99_999),
        ]
    }
}

/// Nearest-rank position (1-based) of quantile `q` among `n` sorted samples:
/// the smallest rank r with r/n >= q. `q` is taken to nine decimals so that decimal
/// quantiles such as 0.99999 are exact (no floating-point off-by-one at n = 100000).
pub fn nearest_rank(q: f64, n: u64) -> u64 {
    if n == 0 {
        return 0;
    }
    const SCALE: u128 = 1_000_000_000;
    let q_scaled = (q.clamp(0.0, 1.0) * SCALE as f64).round() as u128;
    let rank = (q_scaled * n as u128).div_ceil(SCALE);
    (rank as u64).clamp(1, n)
}

/// The nearest-rank `q` quantile of the histogram, as the highest value equivalent to the
/// bucket that holds it (so it is never below the true sample, and above it by less than
/// the bucket width). None for an empty histogram.
pub fn percentile(histogram: &LatencyHistogram, q: f64) -> Option<i64> {
    let hdr = histogram.hdr();
    let rank = nearest_rank(q, hdr.len());
    if rank == 0 {
        return None;
    }
    let mut cumulative = 0u64;
    for bucket in hdr.iter_recorded() {
        cumulative += bucket.count_at_value();
        if cumulative >= rank {
            return Some(hdr.highest_equivalent(bucket.value_iterated_to()) as i64);
        }
    }
    Some(hdr.max() as i64)
}

/// The fixed-width bin holding the most samples: [from, to) in ns, and its count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FullestBin {
    pub from_ns: u64,
    pub to_ns: u64,
    pub count: u64,
}

impl FullestBin {
    /// Its share of `total` samples (0..=1).
    pub fn share(&self, total: u64) -> f64 {
        if total == 0 {
            0.0
        } else {
            self.count as f64 / total as f64
        }
    }
}

/// The bin [k·width, (k+1)·width) that holds the most samples (the lower one on a tie), as a
/// paper's data reduction counted them into fixed bins (Akamina et al., Table 5: "the range of
/// single measurement bin", 0.5 µs for t1 and 2 µs for t2). Counted from the histogram's
/// buckets, each assigned by its middle value: a sample within one bucket (0.1 % of its
/// value) of an edge may land in the neighbouring bin. None without samples or width.
pub fn fullest_bin(histogram: &LatencyHistogram, width_ns: u64) -> Option<FullestBin> {
    if width_ns == 0 {
        return None;
    }
    let hdr = histogram.hdr();
    let mut best: Option<(u64, u64)> = None; // (bin index, count)
    let mut current: Option<(u64, u64)> = None;
    let close = |done: (u64, u64), best: &mut Option<(u64, u64)>| {
        if best.is_none_or(|(_, count)| done.1 > count) {
            *best = Some(done);
        }
    };
    // Buckets come in increasing value order, so the bins do too.
    for (value, count) in histogram.buckets() {
        let bin = hdr.median_equivalent(value) / width_ns;
        current = match current {
            Some((b, c)) if b == bin => Some((b, c + count)),
            Some(done) => {
                close(done, &mut best);
                Some((bin, count))
            }
            None => Some((bin, count)),
        };
    }
    if let Some(done) = current {
        close(done, &mut best);
    }
    let (bin, count) = best?;
    Some(FullestBin { from_ns: bin * width_ns, to_ns: (bin + 1) * width_ns, count })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DEFAULT_MAX_NS;
    use proptest::prelude::*;

    fn oracle(sorted: &[i64], q: f64) -> i64 {
        sorted[nearest_rank(q, sorted.len() as u64) as usize - 1]
    }

    #[test]
    fn nearest_rank_is_exact_for_decimal_quantiles() {
        assert_eq!(nearest_rank(0.99999, 100_000), 99_999);
        assert_eq!(nearest_rank(0.5, 1), 1);
        assert_eq!(nearest_rank(0.5, 2), 1);
        assert_eq!(nearest_rank(0.5, 3), 2);
        assert_eq!(nearest_rank(0.999, 1000), 999);
        assert_eq!(nearest_rank(1.0, 7), 7);
        assert_eq!(nearest_rank(0.0, 7), 1);
    }

    #[test]
    fn empty_histogram_has_no_summary() {
        let h = LatencyHistogram::new(DEFAULT_MAX_NS).unwrap();
        assert_eq!(Summary::from_parts(&h, &Moments::new()), None);
        assert_eq!(percentile(&h, 0.5), None);
    }

    proptest! {
        /// Every summary percentile is within the histogram's precision of the exact
        /// nearest-rank value of the sorted samples, and the summary is ordered.
        #[test]
        fn summary_matches_sorted_array_oracle(mut values in proptest::collection::vec(0i64..10_000_000_000, 1..2000)) {
            let mut h = LatencyHistogram::new(DEFAULT_MAX_NS).unwrap();
            let mut m = Moments::new();
            for &v in &values { h.record(v); m.record(v); }
            values.sort_unstable();
            let s = Summary::from_parts(&h, &m).unwrap();
            prop_assert_eq!(s.count, values.len() as u64);
            prop_assert_eq!(s.min, values[0]);
            prop_assert_eq!(s.max, *values.last().unwrap());
            for ((name, q), (_, got)) in SUMMARY_PERCENTILES.iter().zip(s.percentiles()) {
                let exact = oracle(&values, *q).min(DEFAULT_MAX_NS as i64);
                let tolerance = (exact as f64 / 1000.0).ceil() as i64 + 1;
                prop_assert!(got >= exact.min(s.max) && got - exact <= tolerance,
                    "{}: got {} exact {}", name, got, exact);
            }
            let ordered = [s.min, s.p50, s.p90, s.p99, s.p99_9, s.p99_99, s.p99_999, s.max];
            prop_assert!(ordered.windows(2).all(|w| w[0] <= w[1]), "not ordered: {:?}", ordered);
        }
    }
}
