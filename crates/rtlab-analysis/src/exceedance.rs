//! Exceedance intervals: how a per-sample probability translates into wall time.
//!
//! Akamina et al. (2004): at 100 Hz, a 99.999 % threshold is exceeded by one sample in
//! 100,000, i.e. once every 1,000 s, "one every 17 minutes".

use crate::{LatencyHistogram, Moments};
use serde::{Deserialize, Serialize};

/// Expected wall time in seconds between samples above a threshold that a fraction
/// `probability_above` of samples exceed, at `sample_rate_hz` samples per second.
pub fn interval_s(probability_above: f64, sample_rate_hz: f64) -> Option<f64> {
    (probability_above > 0.0 && sample_rate_hz > 0.0).then(|| 1.0 / (probability_above * sample_rate_hz))
}

/// Samples needed for the nearest-rank quantile `quantile` to rest on at least 10 samples
/// above it; below that the percentile is close to the maximum and says little more than it.
pub fn samples_for_support(quantile: f64) -> u64 {
    (10.0 / (1.0 - quantile)).round() as u64
}

/// The exceedance statement for one percentile threshold of one metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Exceedance {
    /// Quantile of the threshold, e.g. 0.99999.
    pub quantile: f64,
    pub threshold_ns: i64,
    /// Samples per second the statement refers to.
    pub sample_rate_hz: f64,
    /// Expected seconds between samples above the threshold.
    pub interval_s: f64,
    /// Samples behind the threshold in this run.
    pub samples: u64,
    /// Samples needed for the threshold to rest on at least 10 samples above it; below that
    /// the percentile is close to the maximum and says little more than it.
    pub samples_for_support: u64,
}

impl Exceedance {
    pub fn new(quantile: f64, threshold_ns: i64, sample_rate_hz: f64, samples: u64) -> Option<Self> {
        let above = 1.0 - quantile;
        Some(Self {
            quantile,
            threshold_ns,
            sample_rate_hz,
            interval_s: interval_s(above, sample_rate_hz)?,
            samples,
            samples_for_support: samples_for_support(quantile),
        })
    }

    /// Expected number of samples above the threshold in this run.
    pub fn expected_above(&self) -> f64 {
        self.samples as f64 * (1.0 - self.quantile)
    }

    /// Whether this run has enough samples for the threshold to mean more than the maximum.
    pub fn is_supported(&self) -> bool {
        self.samples >= self.samples_for_support
    }
}

/// Samples at or above `bound_ns` (those that break a requirement "< bound"), counted from the
/// histogram: a bucket that straddles the bound counts whole, so the count is within the
/// histogram's precision, and it is exact at the ends (0 when the exact maximum is below the
/// bound, every sample when the exact minimum is at or above it).
pub fn count_at_or_above(histogram: &LatencyHistogram, moments: &Moments, bound_ns: i64) -> u64 {
    match (moments.min(), moments.max()) {
        (_, Some(max)) if max < bound_ns => 0,
        (Some(min), _) if min >= bound_ns => moments.count,
        (None, _) => 0,
        _ => histogram.buckets().filter(|&(value, _)| value as i64 >= bound_ns).map(|(_, count)| count).sum(),
    }
}

/// Human wording of a duration in seconds: "850 ms", "45 s", "17 min", "2.8 h", "3.2 days".
pub fn format_interval(seconds: f64) -> String {
    if seconds < 1.0 {
        format!("{:.0} ms", seconds * 1e3)
    } else if seconds < 90.0 {
        format!("{} s", trim(seconds))
    } else if seconds < 90.0 * 60.0 {
        format!("{} min", trim(seconds / 60.0))
    } else if seconds < 48.0 * 3600.0 {
        format!("{} h", trim(seconds / 3600.0))
    } else {
        format!("{} days", trim(seconds / 86400.0))
    }
}

fn trim(value: f64) -> String {
    if value >= 10.0 {
        format!("{value:.0}")
    } else {
        format!("{value:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn akamina_one_every_17_minutes() {
        let e = Exceedance::new(0.99999, 420_000, 100.0, 1_500_000).unwrap();
        assert!((e.interval_s - 1000.0).abs() < 1e-6);
        assert_eq!(format_interval(e.interval_s), "17 min");
        assert!((e.expected_above() - 15.0).abs() < 1e-6);
        assert!(e.is_supported());
    }

    #[test]
    fn short_runs_do_not_support_the_five_nines() {
        let e = Exceedance::new(0.99999, 1, 1000.0, 30_000).unwrap();
        assert_eq!(e.samples_for_support, 1_000_000);
        assert!(!e.is_supported());
        assert_eq!(format_interval(e.interval_s), "1.7 min");
    }

    #[test]
    fn counts_samples_at_or_above_a_bound() {
        let mut h = LatencyHistogram::new(crate::DEFAULT_MAX_NS).unwrap();
        let mut m = Moments::new();
        for v in [10_000, 20_000, 30_000, 600_000, 700_000] {
            h.record(v);
            m.record(v);
        }
        assert_eq!(count_at_or_above(&h, &m, 500_000), 2);
        assert_eq!(count_at_or_above(&h, &m, 700_001), 0);
        assert_eq!(count_at_or_above(&h, &m, 700_000), 1);
        assert_eq!(count_at_or_above(&h, &m, 1), 5);
        assert_eq!(count_at_or_above(&h, &Moments::new(), 1), 0);
    }

    #[test]
    fn wording() {
        assert_eq!(format_interval(0.25), "250 ms");
        assert_eq!(format_interval(3600.0 * 2.8), "2.8 h");
        assert_eq!(format_interval(86400.0 * 3.2), "3.2 days");
        assert_eq!(interval_s(0.0, 100.0), None);
    }
}
