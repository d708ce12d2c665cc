use crate::AnalysisError;
use base64::Engine;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Default histogram ceiling: 10 s in ns. Every plausible latency fits.
pub const DEFAULT_MAX_NS: u64 = 10_000_000_000;
/// Significant digits: bucket width at most 1/1024 of the value, so percentiles are
/// exact to 0.1 %.
pub const SIGNIFICANT_DIGITS: u8 = 3;

/// A bounded HDR histogram of ns values. All memory is allocated by [`LatencyHistogram::new`];
/// [`LatencyHistogram::record`] never allocates or resizes. Values below 0 are recorded
/// as 0 and values above the ceiling as the ceiling, and both are counted, so nothing is
/// lost silently (exact extremes live in [`crate::Moments`]).
#[derive(Debug, Clone)]
pub struct LatencyHistogram {
    counts: Histogram<u64>,
    below_zero: u64,
    above_max: u64,
}

/// Serialized form stored in run.json: the standard HdrHistogram V2 compressed encoding
/// (base64), readable by HdrHistogram libraries in other languages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistogramEncoding {
    /// Always "hdr-v2-deflate-base64".
    pub encoding: String,
    pub unit: String,
    pub highest_trackable: u64,
    pub significant_digits: u8,
    /// Samples below 0 ns, recorded in the 0 bucket.
    pub below_zero: u64,
    /// Samples above `highest_trackable`, recorded at the ceiling.
    pub above_max: u64,
    pub data: String,
}

const ENCODING_NAME: &str = "hdr-v2-deflate-base64";

impl LatencyHistogram {
    /// A histogram covering 0..=`max_ns` at [`SIGNIFICANT_DIGITS`].
    pub fn new(max_ns: u64) -> Result<Self, AnalysisError> {
        let mut counts = Histogram::new_with_bounds(1, max_ns.max(2), SIGNIFICANT_DIGITS)
            .map_err(|e| AnalysisError::Histogram(format!("{e:?}")))?;
        // Never grow: the real-time loop must not allocate.
        counts.auto(false);
        Ok(Self { counts, below_zero: 0, above_max: 0 })
    }

    /// Records one value. No allocation, no failure: out-of-range values are clamped and
    /// counted.
    #[inline]
    pub fn record(&mut self, value_ns: i64) {
        let value = if value_ns < 0 {
            self.below_zero += 1;
            0
        } else {
            value_ns as u64
        };
        let high = self.counts.high();
        let value = if value > high {
            self.above_max += 1;
            high
        } else {
            value
        };
        self.counts.saturating_record(value);
    }

    /// A histogram covering 0..=`max_ns` at `significant_digits` (1..=5). Imports use more
    /// digits than [`SIGNIFICANT_DIGITS`] so that a source's fixed-width buckets stay apart
    /// (see [`LatencyHistogram::resolving`]).
    pub fn with_precision(max_ns: u64, significant_digits: u8) -> Result<Self, AnalysisError> {
        let mut counts = Histogram::new_with_bounds(1, max_ns.max(2), significant_digits)
            .map_err(|e| AnalysisError::Histogram(format!("{e:?}")))?;
        counts.auto(false);
        Ok(Self { counts, below_zero: 0, above_max: 0 })
    }

    /// The least precise histogram covering 0..=`max_ns` whose buckets are nowhere wider
    /// than `width_ns`: values `width_ns` apart never share a bucket, so a source histogram
    /// of that bucket width is held exactly. Falls back to 5 digits (the most HDR offers).
    pub fn resolving(max_ns: u64, width_ns: u64) -> Result<Self, AnalysisError> {
        for digits in SIGNIFICANT_DIGITS..5 {
            let h = Self::with_precision(max_ns, digits)?;
            if h.counts.equivalent_range(h.counts.high()) <= width_ns.max(1) {
                return Ok(h);
            }
        }
        Self::with_precision(max_ns, 5)
    }

    /// Records `count` samples of one value (imports of bucketed sources). Clamped and
    /// counted like [`LatencyHistogram::record`].
    pub fn record_n(&mut self, value_ns: i64, count: u64) {
        if count == 0 {
            return;
        }
        let value = if value_ns < 0 {
            self.below_zero += count;
            0
        } else {
            value_ns as u64
        };
        let high = self.counts.high();
        let value = if value > high {
            self.above_max += count;
            high
        } else {
            value
        };
        self.counts.saturating_record_n(value, count);
    }

    /// Significant digits this histogram keeps.
    pub fn significant_digits(&self) -> u8 {
        self.counts.sigfig()
    }

    /// Writes every count once so that the pages are resident before sampling starts
    /// (with `mlockall(MCL_FUTURE)` they then stay). Clears the histogram.
    pub fn prefault(&mut self) {
        self.counts.reset();
        self.below_zero = 0;
        self.above_max = 0;
    }

    pub fn count(&self) -> u64 {
        self.counts.len()
    }

    pub fn highest_trackable(&self) -> u64 {
        self.counts.high()
    }

    pub fn below_zero(&self) -> u64 {
        self.below_zero
    }

    pub fn above_max(&self) -> u64 {
        self.above_max
    }

    /// The underlying HDR histogram, for iteration by the analysis functions.
    pub fn hdr(&self) -> &Histogram<u64> {
        &self.counts
    }

    /// Adds `other` into `self` (used to combine CPUs). May allocate: never call it in the
    /// sampling loop.
    /// A histogram of a larger range (a monitor history whose sessions ran with different
    /// `--histogram-max`) widens this one to hold its values.
    pub fn merge(&mut self, other: &LatencyHistogram) -> Result<(), AnalysisError> {
        let widen = other.counts.max() > self.counts.high();
        if widen {
            self.counts.auto(true);
        }
        let added = self.counts.add(&other.counts);
        if widen {
            self.counts.auto(false);
        }
        added.map_err(|e| AnalysisError::Histogram(format!("cannot merge histograms: {e:?}")))?;
        self.below_zero += other.below_zero;
        self.above_max += other.above_max;
        Ok(())
    }

    /// Bucket-wise (value, count) pairs of every non-empty bucket, value being the bucket's
    /// highest equivalent value in ns.
    pub fn buckets(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.counts.iter_recorded().map(|v| (self.counts.highest_equivalent(v.value_iterated_to()), v.count_at_value()))
    }

    pub fn encode(&self) -> Result<HistogramEncoding, AnalysisError> {
        let mut bytes = Vec::new();
        V2DeflateSerializer::new()
            .serialize(&self.counts, &mut bytes)
            .map_err(|e| AnalysisError::Histogram(format!("cannot serialize: {e:?}")))?;
        Ok(HistogramEncoding {
            encoding: ENCODING_NAME.to_string(),
            unit: "ns".to_string(),
            highest_trackable: self.counts.high(),
            significant_digits: self.counts.sigfig(),
            below_zero: self.below_zero,
            above_max: self.above_max,
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
        })
    }

    pub fn decode(encoded: &HistogramEncoding) -> Result<Self, AnalysisError> {
        if encoded.encoding != ENCODING_NAME {
            return Err(AnalysisError::Histogram(format!(
                "unknown histogram encoding {:?} (expected {ENCODING_NAME:?})",
                encoded.encoding
            )));
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded.data.as_bytes())
            .map_err(|e| AnalysisError::Histogram(format!("histogram data is not base64: {e}")))?;
        let counts: Histogram<u64> = Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|e| AnalysisError::Histogram(format!("histogram data is damaged: {e:?}")))?;
        Ok(Self { counts, below_zero: encoded.below_zero, above_max: encoded.above_max })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clamps_and_counts_out_of_range() {
        let mut h = LatencyHistogram::new(1_000_000).unwrap();
        h.record(-5);
        h.record(2_000_000);
        h.record(500);
        assert_eq!(h.count(), 3);
        assert_eq!(h.below_zero(), 1);
        assert_eq!(h.above_max(), 1);
    }

    #[test]
    fn merging_a_wider_histogram_widens_this_one() {
        let mut narrow = LatencyHistogram::new(1_000_000).unwrap();
        narrow.record(500);
        let mut wide = LatencyHistogram::new(10_000_000_000).unwrap();
        wide.record(5_000_000_000);
        narrow.merge(&wide).unwrap();
        assert_eq!(narrow.count(), 2);
        assert!(narrow.hdr().max() >= 4_990_000_000);
        // Still bounded: recording does not grow it further.
        narrow.record(i64::MAX);
        assert_eq!(narrow.above_max(), 1);
    }

    #[test]
    fn encode_decode_round_trip() {
        let mut h = LatencyHistogram::new(DEFAULT_MAX_NS).unwrap();
        for v in [0, 1, 17_000, 17_001, 250_000, 9_999_999_999, 20_000_000_000] {
            h.record(v);
        }
        let encoded = h.encode().unwrap();
        let back = LatencyHistogram::decode(&encoded).unwrap();
        assert_eq!(back.count(), h.count());
        assert_eq!(back.above_max(), 1);
        assert_eq!(back.buckets().collect::<Vec<_>>(), h.buckets().collect::<Vec<_>>());
    }

    #[test]
    fn resolving_keeps_microsecond_buckets_apart_up_to_the_maximum() {
        let mut h = LatencyHistogram::resolving(20_000_000, 1000).unwrap();
        for us in [1u64, 17, 999, 1000, 1001, 19_998, 19_999, 20_000] {
            h.record_n((us * 1000) as i64, us);
        }
        let buckets: Vec<(u64, u64)> = h.buckets().map(|(v, c)| (v / 1000, c)).collect();
        assert_eq!(buckets.len(), 8);
        assert!(buckets.iter().all(|&(us, c)| us == c), "{buckets:?}");
        let back = LatencyHistogram::decode(&h.encode().unwrap()).unwrap();
        assert_eq!(back.significant_digits(), h.significant_digits());
    }

    #[test]
    fn damaged_data_is_an_error_not_a_panic() {
        let mut enc = LatencyHistogram::new(1000).unwrap().encode().unwrap();
        enc.data = "not base64!!".into();
        assert!(LatencyHistogram::decode(&enc).is_err());
        enc.data = base64::engine::general_purpose::STANDARD.encode(b"garbage bytes here");
        assert!(LatencyHistogram::decode(&enc).is_err());
    }
}
