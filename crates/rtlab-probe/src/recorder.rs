//! What every sampling loop records per metric, in one preallocated place: the histogram,
//! exact moments, block maxima (per-second maxima), the raw-sample ring, and optionally the
//! first samples in order (for per-sample plots of short probes such as `sleep`).

use crate::raw::{channel, tapped_channel, RawDrain, RawSample, RawSink, SampleTap};
use crate::{MetricOutput, ProbeError};
use rtlab_analysis::{LatencyHistogram, Moments};
use std::path::{Path, PathBuf};

/// At most this many block maxima are kept (7 days of seconds, 4.8 MB per metric), so
/// memory stays bounded whatever the run length.
pub const MAX_BLOCKS: u64 = 7 * 86_400;

/// Width of one block-maximum entry and how many to preallocate for a window of
/// `planned_ns`: one per second, or for windows longer than [`MAX_BLOCKS`] seconds,
/// whole-second blocks wide enough to fit. Time beyond the plan folds into the last slot.
pub fn block_layout(planned_ns: u64) -> (u64, usize) {
    let planned_s = planned_ns / 1_000_000_000 + 1;
    let block_s = planned_s.div_ceil(MAX_BLOCKS).max(1);
    (block_s * 1_000_000_000, (planned_s / block_s) as usize + 2)
}

/// Where a recorder's raw samples go, when raw output or the split asked for them.
pub struct RawTarget {
    pub sink: RawSink,
    /// The raw file; None when the samples only go to a [`SampleTap`].
    pub path: Option<PathBuf>,
}

/// Creates the ring for one raw file `dir/file_name` (the writer creates the file) and
/// queues its drain for the probe's [`crate::raw::RawWriter`]. None without a raw directory.
pub fn raw_target(
    dir: Option<&Path>,
    file_name: &str,
    capacity: usize,
    drains: &mut Vec<RawDrain>,
) -> Option<RawTarget> {
    tapped_raw_target(dir, file_name, capacity, drains, None)
}

/// [`raw_target`] whose samples also go to `tap` (as `metric` of `cpu`): with a tap and no
/// raw directory, a ring without a file.
pub fn tapped_raw_target(
    dir: Option<&Path>,
    file_name: &str,
    capacity: usize,
    drains: &mut Vec<RawDrain>,
    tap: Option<(&SampleTap, usize, &str)>,
) -> Option<RawTarget> {
    let path = dir.map(|d| d.join(file_name));
    let (sink, drain) = match (tap, &path) {
        (Some((tap, cpu, metric)), _) => tapped_channel(path.clone(), capacity, tap.clone(), cpu, metric),
        (None, Some(path)) => channel(path.clone(), capacity),
        (None, None) => return None,
    };
    drains.push(drain);
    Some(RawTarget { sink, path })
}

/// One metric of one sampling thread. Everything is allocated and touched in [`new`];
/// [`record`] only writes into it.
///
/// [`new`]: MetricRecorder::new
/// [`record`]: MetricRecorder::record
pub struct MetricRecorder {
    metric: String,
    histogram: LatencyHistogram,
    moments: Moments,
    per_block_max: Vec<i64>,
    block_ns: u64,
    window_start_ns: u64,
    last_slot: usize,
    raw: Option<RawTarget>,
    lost: u64,
    sequence: Vec<i64>,
    sequence_limit: usize,
}

impl MetricRecorder {
    /// `planned_ns`: expected length of the measured window (sizes the block maxima);
    /// `keep_sequence`: how many of the first samples to keep in order (0: none).
    pub fn new(
        metric: impl Into<String>,
        histogram_max_ns: u64,
        planned_ns: u64,
        raw: Option<RawTarget>,
        keep_sequence: usize,
    ) -> Result<Self, ProbeError> {
        let mut histogram = LatencyHistogram::new(histogram_max_ns)?;
        // Write every page now so the loop never takes a first-touch fault.
        histogram.prefault();
        let (block_ns, slots) = block_layout(planned_ns);
        // Touch the sequence's pages too, then empty it (capacity stays).
        let mut sequence = vec![0; keep_sequence];
        sequence.clear();
        Ok(Self {
            metric: metric.into(),
            histogram,
            moments: Moments::new(),
            per_block_max: vec![i64::MIN; slots],
            block_ns,
            window_start_ns: 0,
            last_slot: 0,
            raw,
            lost: 0,
            sequence,
            sequence_limit: keep_sequence,
        })
    }

    /// Marks the start of the measured window: block maxima count from here.
    pub fn start(&mut self, window_start_ns: u64) {
        self.window_start_ns = window_start_ns;
    }

    /// Records one sample. `at_ns` places it in time (its expected or stimulus time, on the
    /// clock of [`start`](Self::start)); it is also the raw record's `expected_ns`.
    /// No allocation, no lock, no system call.
    #[inline]
    pub fn record(&mut self, at_ns: u64, value_ns: i64, cpu: u32, flags: u32) {
        self.histogram.record(value_ns);
        self.moments.record(value_ns);
        let slot =
            ((at_ns.saturating_sub(self.window_start_ns) / self.block_ns) as usize).min(self.per_block_max.len() - 1);
        self.last_slot = self.last_slot.max(slot);
        if value_ns > self.per_block_max[slot] {
            self.per_block_max[slot] = value_ns;
        }
        if self.sequence.len() < self.sequence_limit {
            self.sequence.push(value_ns);
        }
        if let Some(raw) = self.raw.as_mut() {
            if !raw.sink.push(RawSample { expected_ns: at_ns, value_ns, cpu, flags }) {
                self.lost += 1;
            }
        }
    }

    pub fn moments(&self) -> &Moments {
        &self.moments
    }

    /// Raw samples the writer could not take in time.
    pub fn lost(&self) -> u64 {
        self.lost
    }

    /// Block width in whole seconds.
    pub fn block_s(&self) -> u64 {
        self.block_ns / 1_000_000_000
    }

    /// The finished metric. Drops the raw sink, which tells the writer this ring is done.
    pub fn finish(self) -> MetricOutput {
        let used = if self.moments.count == 0 { 0 } else { self.last_slot + 1 };
        let per_second_max = self.per_block_max[..used.min(self.per_block_max.len())]
            .iter()
            .map(|&v| (v != i64::MIN).then_some(v))
            .collect();
        MetricOutput {
            metric: self.metric,
            histogram: self.histogram,
            moments: self.moments,
            per_second_max,
            raw_file: self.raw.and_then(|r| r.path),
            sequence: (self.sequence_limit > 0).then_some(self.sequence),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_histogram_moments_blocks_and_sequence() {
        let mut r = MetricRecorder::new("x.y", 1_000_000_000, 3_000_000_000, None, 3).unwrap();
        r.start(10);
        for (at, v) in [(10, 5), (500_000_010, 9), (1_000_000_010, 3), (2_500_000_000, 4), (2_600_000_000, 2)] {
            r.record(at, v, 0, 0);
        }
        let out = r.finish();
        assert_eq!(out.moments.count, 5);
        assert_eq!(out.histogram.count(), 5);
        assert_eq!(out.per_second_max, vec![Some(9), Some(3), Some(4)]);
        assert_eq!(out.sequence, Some(vec![5, 9, 3]));
        assert_eq!(out.raw_file, None);
    }

    #[test]
    fn late_samples_fold_into_the_last_block() {
        let mut r = MetricRecorder::new("x.y", 1_000_000, 1_000_000_000, None, 0).unwrap();
        r.start(0);
        r.record(u64::MAX / 2, 7, 0, 0);
        let out = r.finish();
        assert_eq!(out.per_second_max.last(), Some(&Some(7)));
        assert_eq!(out.sequence, None);
    }

    #[test]
    fn block_maxima_memory_is_bounded_for_any_run_length() {
        let (block_ns, slots) = block_layout(30 * 86_400 * 1_000_000_000);
        assert_eq!(block_ns, 5_000_000_000);
        assert!(slots as u64 <= MAX_BLOCKS + 2);
        assert_eq!(block_layout(10_000_000_000).0, 1_000_000_000);
    }
}
