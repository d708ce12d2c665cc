//! What `rtlab monitor` exposes to Prometheus (docs/monitor.md): running totals since the
//! monitor started, updated once per closed window, so that every scrape sees whole
//! windows and no count ever goes backwards.

use crate::history::{HostIdentity, WindowRecord};
use serde::{Deserialize, Serialize};

/// Upper bounds (`le`) of the exposed histogram buckets, ns: 1-2-5 steps from 1 µs to 10 s,
/// fine where real-time latencies live and wide enough for a hypervisor's worst.
pub const LATENCY_BUCKETS_NS: [u64; 22] = [
    1_000,
    2_000,
    5_000,
    10_000,
    20_000,
    50_000,
    100_000,
    200_000,
    500_000,
    1_000_000,
    2_000_000,
    5_000_000,
    10_000_000,
    20_000_000,
    50_000_000,
    100_000_000,
    200_000_000,
    500_000_000,
    1_000_000_000,
    2_000_000_000,
    5_000_000_000,
    10_000_000_000,
];

/// Index of the bucket a value falls in: the first bound at or above it, or
/// `LATENCY_BUCKETS_NS.len()` (+Inf).
pub fn bucket_index(value_ns: i64) -> usize {
    LATENCY_BUCKETS_NS.partition_point(|&bound| (bound as i128) < value_ns as i128)
}

/// Samples of one window per bucket of [`LATENCY_BUCKETS_NS`] (not cumulative; the last
/// entry is above 10 s), counted exactly from the samples (not from the HDR histogram,
/// whose bucket edges do not fall on these bounds).
pub type BucketCounts = [u64; LATENCY_BUCKETS_NS.len() + 1];

/// Running totals of one metric of one CPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeriesTotals {
    pub cpu: usize,
    pub metric: String,
    /// Per bucket, not cumulative.
    pub buckets: Vec<u64>,
    pub count: u64,
    pub sum_ns: i128,
    /// A negative sample was seen: OpenMetrics then has no `_sum` for the histogram.
    pub negative_seen: bool,
    pub overruns: u64,
    pub lost: u64,
    /// Largest sample of the last closed window that had samples of this series.
    pub window_max_ns: Option<i64>,
}

/// Everything the `/metrics` endpoint shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MonitorTotals {
    pub version: String,
    pub commit: String,
    pub identity: HostIdentity,
    pub windows: u64,
    pub last_window_end_ns: Option<i64>,
    pub series: Vec<SeriesTotals>,
    /// Closed windows the history has not stored yet (it could not: a full disk).
    pub windows_unstored: u64,
    /// Closed windows given up unstored (too many waited).
    pub windows_dropped: u64,
}

impl MonitorTotals {
    pub fn new(version: &str, commit: &str, identity: HostIdentity) -> Self {
        Self {
            version: version.into(),
            commit: commit.into(),
            identity,
            windows: 0,
            last_window_end_ns: None,
            series: Vec::new(),
            windows_unstored: 0,
            windows_dropped: 0,
        }
    }

    /// Adds a closed window; `buckets[i]` belongs to `record.metrics[i]`.
    pub fn add_window(&mut self, record: &WindowRecord, buckets: &[BucketCounts]) {
        self.windows += record.merged;
        self.last_window_end_ns = Some(self.last_window_end_ns.map_or(record.end_ns, |e| e.max(record.end_ns)));
        for (metric, counts) in record.metrics.iter().zip(buckets) {
            let index = match self.series.iter().position(|s| s.cpu == metric.cpu && s.metric == metric.metric) {
                Some(i) => i,
                None => {
                    self.series.push(SeriesTotals {
                        cpu: metric.cpu,
                        metric: metric.metric.clone(),
                        buckets: vec![0; LATENCY_BUCKETS_NS.len() + 1],
                        count: 0,
                        sum_ns: 0,
                        negative_seen: false,
                        overruns: 0,
                        lost: 0,
                        window_max_ns: None,
                    });
                    self.series.sort_by(|a, b| (&a.metric, a.cpu).cmp(&(&b.metric, b.cpu)));
                    self.series.iter().position(|s| s.cpu == metric.cpu && s.metric == metric.metric).expect("added")
                }
            };
            let series = &mut self.series[index];
            for (total, add) in series.buckets.iter_mut().zip(counts) {
                *total += add;
            }
            series.count += metric.moments.count;
            series.sum_ns += metric.moments.sum;
            series.overruns += metric.overruns;
            series.lost += metric.lost;
            if metric.moments.count > 0 {
                series.negative_seen |= metric.moments.min < 0;
                series.window_max_ns = Some(metric.moments.max);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_fall_in_the_first_bucket_at_or_above_them() {
        assert_eq!(bucket_index(-5), 0);
        assert_eq!(bucket_index(1_000), 0);
        assert_eq!(bucket_index(1_001), 1);
        assert_eq!(bucket_index(10_000_000_000), LATENCY_BUCKETS_NS.len() - 1);
        assert_eq!(bucket_index(10_000_000_001), LATENCY_BUCKETS_NS.len());
        assert_eq!(bucket_index(i64::MAX), LATENCY_BUCKETS_NS.len());
    }
}
