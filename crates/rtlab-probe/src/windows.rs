//! The windows of `rtlab monitor`: a probe's samples, taken from its sample tap on the
//! non-real-time side, cut into consecutive windows.
//!
//! Window k covers `[start + k W, start + (k + 1) W)` of CLOCK_MONOTONIC expiries, W being
//! `--window`; each is saved with unix times. What a window holds per CPU depends on the
//! probe ([`WindowSource`]): the timer probe's latency and period jitter (|l[i] - l[i-1]|
//! between consecutive samples, as the timer probe defines it), or the timerlat tracer's
//! thread and irq latencies. Each with exact moments, an HDR histogram, the exposition's
//! bucket counts, and what did not become a sample: overruns (expiries skipped after a late
//! wake-up) and lost samples (expiries missing without an overrun). The timer probe's are
//! found from the gaps in its exact grid of expiries; the timerlat probe counts its own
//! from the tracer's sequence numbers and hands them over with its samples.
//!
//! A window closes when every CPU has delivered a sample of a later window (of each metric
//! the probe delivers: timerlat's thread and irq records come apart), or `grace`
//! after its end when a CPU delivers nothing (a stalled thread must not hold the history
//! back). A sample that arrives after its window closed is counted in the oldest open
//! window and in [`WindowAggregator::late`], so that no sample is lost silently.

use crate::raw::{TappedSamples, Unrecorded};
use rtlab_analysis::{LatencyHistogram, Moments};
use rtlab_results::history::{Resolution, WindowMetric, WindowRecord};
use rtlab_results::monitor::{bucket_index, BucketCounts};
use std::collections::BTreeMap;

pub const LATENCY: &str = "timer.latency";
pub const JITTER: &str = "timer.jitter";
pub const TIMERLAT_THREAD: &str = "timerlat.thread";
pub const TIMERLAT_IRQ: &str = "timerlat.irq";

/// The probe whose samples the windows hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowSource {
    /// `timer.latency` and the `timer.jitter` derived from it; missing expiries are found
    /// from the gaps between consecutive samples (the probe's expiries are an exact grid).
    Timer,
    /// `timerlat.thread` and `timerlat.irq`; missing activations come counted by the probe
    /// ([`TappedSamples::unrecorded`]): the records' expiries are not an exact grid.
    Timerlat,
}

impl WindowSource {
    /// The metrics of each CPU, in the order of a window's records; the first is the one the
    /// windows are closed and shown by.
    pub fn metrics(self) -> &'static [&'static str] {
        match self {
            WindowSource::Timer => &[LATENCY, JITTER],
            WindowSource::Timerlat => &[TIMERLAT_THREAD, TIMERLAT_IRQ],
        }
    }

    /// The metric a window's line shows.
    pub fn main_metric(self) -> &'static str {
        self.metrics()[0]
    }

    /// How many of [`metrics`](Self::metrics) the probe delivers (the others are derived):
    /// a window closes when each of them has passed its end on every CPU.
    fn delivered(self) -> usize {
        match self {
            WindowSource::Timer => 1,
            WindowSource::Timerlat => 2,
        }
    }
}

/// A closed window and, per metric of its record, the exposition's bucket counts.
#[derive(Debug, Clone, PartialEq)]
pub struct ClosedWindow {
    pub index: u64,
    pub record: WindowRecord,
    pub buckets: Vec<BucketCounts>,
}

struct Series {
    cpu: usize,
    metric: &'static str,
    histogram: LatencyHistogram,
    moments: Moments,
    buckets: BucketCounts,
    overruns: u64,
    lost: u64,
}

impl Series {
    fn record(&mut self, value_ns: i64) {
        self.histogram.record(value_ns);
        self.moments.record(value_ns);
        self.buckets[bucket_index(value_ns)] += 1;
    }
}

struct OpenWindow {
    series: Vec<Series>,
}

#[derive(Default, Clone, Copy)]
struct CpuStream {
    last_expected: Option<u64>,
    last_overran: bool,
    last_latency: Option<i64>,
    /// Expiry of the newest sample delivered, per delivered metric (the timerlat probe hands
    /// a CPU's thread and irq records over in separate chunks).
    seen_through: [u64; 2],
}

/// Cuts tapped samples into windows; see the module documentation.
pub struct WindowAggregator {
    source: WindowSource,
    cpus: Vec<usize>,
    interval_ns: u64,
    window_ns: u64,
    histogram_max_ns: u64,
    grace_ns: u64,
    /// CLOCK_MONOTONIC of the first window's start.
    start_mono_ns: u64,
    /// Unix time minus CLOCK_MONOTONIC, fixed for the session.
    unix_offset_ns: i64,
    streams: Vec<CpuStream>,
    open: BTreeMap<u64, OpenWindow>,
    /// Windows below this index are closed.
    next_to_close: u64,
    late: u64,
    /// `--duration`: expiries from here on are past the monitoring (not recorded, counted).
    end_mono_ns: Option<u64>,
    beyond_end: u64,
}

impl WindowAggregator {
    /// `start_mono_ns` is where window 0 starts; `unix_offset_ns` turns CLOCK_MONOTONIC into
    /// unix time for the records.
    pub fn new(
        source: WindowSource,
        cpus: &[usize],
        interval_ns: u64,
        window_ns: u64,
        histogram_max_ns: u64,
        start_mono_ns: u64,
        unix_offset_ns: i64,
    ) -> Self {
        Self {
            source,
            cpus: cpus.to_vec(),
            interval_ns: interval_ns.max(1),
            window_ns: window_ns.max(1),
            histogram_max_ns,
            grace_ns: 2_000_000_000 + 2 * interval_ns,
            start_mono_ns,
            unix_offset_ns,
            streams: vec![CpuStream::default(); cpus.len()],
            open: BTreeMap::new(),
            next_to_close: 0,
            late: 0,
            end_mono_ns: None,
            beyond_end: 0,
        }
    }

    /// Ends the monitoring at CLOCK_MONOTONIC `end_mono_ns` (`--duration`): samples of later
    /// expiries, taken while the threads were being stopped, are left out and counted in
    /// [`beyond_end`](Self::beyond_end), as `rtlab run` stops at a fixed number of periods.
    pub fn ending_at(mut self, end_mono_ns: u64) -> Self {
        self.end_mono_ns = Some(end_mono_ns);
        self
    }

    /// Samples left out because their expiry came at or after the end.
    pub fn beyond_end(&self) -> u64 {
        self.beyond_end
    }

    /// Samples that arrived after their window had closed (counted in a later window).
    pub fn late(&self) -> u64 {
        self.late
    }

    /// The window that CLOCK_MONOTONIC `mono_ns` falls in.
    pub fn index_at(&self, mono_ns: u64) -> u64 {
        mono_ns.saturating_sub(self.start_mono_ns) / self.window_ns
    }

    /// CLOCK_MONOTONIC start of window `index`.
    pub fn start_of(&self, index: u64) -> u64 {
        self.start_mono_ns + index * self.window_ns
    }

    fn window(&mut self, index: u64) -> &mut OpenWindow {
        let histogram_max_ns = self.histogram_max_ns;
        let cpus = &self.cpus;
        let metrics = self.source.metrics();
        self.open.entry(index).or_insert_with(|| OpenWindow {
            series: cpus
                .iter()
                .flat_map(|&cpu| metrics.iter().map(move |&metric| (cpu, metric)))
                .map(|(cpu, metric)| Series {
                    cpu,
                    metric,
                    // The maximum was accepted by the probe with the same value.
                    histogram: LatencyHistogram::new(histogram_max_ns).expect("valid histogram maximum"),
                    moments: Moments::new(),
                    buckets: [0; rtlab_results::monitor::LATENCY_BUCKETS_NS.len() + 1],
                    overruns: 0,
                    lost: 0,
                })
                .collect(),
        })
    }

    /// Takes one chunk of a CPU's samples of one metric (in order, as the probe delivered
    /// them). Metrics the windows do not hold (timerlat.user) are left out.
    pub fn add(&mut self, tapped: &TappedSamples) {
        let Some(slot) = self.cpus.iter().position(|&c| c == tapped.cpu) else { return };
        let Some(metric) = self.source.metrics().iter().position(|&m| m == tapped.metric) else { return };
        match self.source {
            WindowSource::Timer if metric == 0 => self.add_timer(slot, tapped),
            WindowSource::Timer => {}
            WindowSource::Timerlat => self.add_counted(slot, metric, tapped),
        }
    }

    /// The window a sample of expiry `expected_ns` is counted in: its own, or the oldest
    /// open one when its own has closed (counted as late). None past the end.
    fn window_of_sample(&mut self, expected_ns: u64) -> Option<u64> {
        if self.end_mono_ns.is_some_and(|end| expected_ns >= end) {
            self.beyond_end += 1;
            return None;
        }
        let index = self.index_at(expected_ns);
        if index < self.next_to_close {
            self.late += 1;
            return Some(self.next_to_close);
        }
        Some(index)
    }

    /// Timer samples: the latency, its jitter, and the expiries missing between two samples.
    fn add_timer(&mut self, slot: usize, tapped: &TappedSamples) {
        let per_cpu = self.source.metrics().len();
        for sample in &tapped.samples {
            let Some(index) = self.window_of_sample(sample.expected_ns) else { continue };
            let mut stream = self.streams[slot];
            // Expiries between the previous sample and this one that produced no sample,
            // counted in the windows they fell in.
            if let Some(previous) = stream.last_expected {
                self.count_missing(slot * per_cpu, previous, sample.expected_ns, stream.last_overran);
            }
            let jitter = stream.last_latency.map(|previous| (sample.value_ns - previous).abs());
            let window = self.window(index);
            let [latency, jitter_series] = &mut window.series[per_cpu * slot..per_cpu * slot + 2] else {
                unreachable!("two series per CPU")
            };
            latency.record(sample.value_ns);
            if let Some(j) = jitter {
                jitter_series.record(j);
            }
            stream.last_expected = Some(sample.expected_ns);
            stream.last_overran = sample.overran();
            stream.last_latency = Some(sample.value_ns);
            stream.seen_through[0] = stream.seen_through[0].max(sample.expected_ns);
            self.streams[slot] = stream;
        }
    }

    /// Samples whose missing expiries the probe counted: each sample where its expiry fell,
    /// each [`Unrecorded`] run of expiries spread over the windows it covers.
    fn add_counted(&mut self, slot: usize, metric: usize, tapped: &TappedSamples) {
        let series = slot * self.source.metrics().len() + metric;
        for sample in &tapped.samples {
            let Some(index) = self.window_of_sample(sample.expected_ns) else { continue };
            self.window(index).series[series].record(sample.value_ns);
            let seen = &mut self.streams[slot].seen_through[metric];
            *seen = (*seen).max(sample.expected_ns);
        }
        for &Unrecorded { expected_ns, lost, overruns } in &tapped.unrecorded {
            let interval = self.interval_ns;
            for (count, overran) in [(lost, false), (overruns, true)] {
                if count == 0 {
                    continue;
                }
                // The expiries expected, expected + I, ...: strictly between one period
                // before the first and one after the last, cut at the end.
                let mut next = expected_ns.saturating_add(count.saturating_mul(interval));
                if let Some(end) = self.end_mono_ns {
                    next = next.min(end.max(expected_ns));
                }
                self.count_missing(series, expected_ns.saturating_sub(interval), next, overran);
            }
        }
    }

    /// The expiries strictly between `previous` and `next` (a CPU's consecutive samples) as
    /// overruns (after an overrun sample) or lost samples of `series`, each in the window it
    /// fell in (a window already closed passes its share to the oldest open one).
    fn count_missing(&mut self, series: usize, previous: u64, next: u64, overran: bool) {
        let interval = self.interval_ns;
        let Some(first) = previous.checked_add(interval).filter(|&f| f < next) else { return };
        let last = previous + (next - previous - 1) / interval * interval;
        let mut index = self.index_at(first);
        loop {
            let start = self.start_of(index).max(first);
            let end = self.start_of(index + 1).min(last + 1);
            if start < end {
                let count = (end - 1 - previous) / interval - (start - 1 - previous) / interval;
                let target = index.max(self.next_to_close);
                let latency = &mut self.window(target).series[series];
                if overran {
                    latency.overruns += count;
                } else {
                    latency.lost += count;
                }
            }
            if self.start_of(index + 1) > last {
                break;
            }
            index += 1;
        }
    }

    /// Closes the windows that are complete at CLOCK_MONOTONIC `now_mono_ns`: every CPU has
    /// delivered a sample past their end, or their end is `grace` ago. `phase_of` names the
    /// load phase of a window.
    pub fn close_ready(&mut self, now_mono_ns: u64, phase_of: &dyn Fn(u64) -> String) -> Vec<ClosedWindow> {
        let delivered = self.source.delivered();
        let delivered_through =
            self.streams.iter().flat_map(|s| s.seen_through[..delivered].iter().copied()).min().unwrap_or(0);
        let mut closed = Vec::new();
        loop {
            let index = self.next_to_close;
            let end = self.start_of(index + 1);
            let complete = delivered_through >= end || now_mono_ns >= end.saturating_add(self.grace_ns);
            if !complete || end > now_mono_ns {
                break;
            }
            closed.push(self.close(index, end, phase_of(index)));
        }
        closed
    }

    /// Closes every open window at a stop; the last one ends at `now_mono_ns`.
    pub fn close_all(&mut self, now_mono_ns: u64, phase_of: &dyn Fn(u64) -> String) -> Vec<ClosedWindow> {
        let now_mono_ns = self.end_mono_ns.map_or(now_mono_ns, |end| end.min(now_mono_ns));
        // A window that would start at the stop has no time in it.
        let last = self.open.keys().next_back().copied().unwrap_or(0).max(self.index_at(now_mono_ns.saturating_sub(1)));
        let mut closed = Vec::new();
        while self.next_to_close <= last {
            let index = self.next_to_close;
            let end = self.start_of(index + 1).min(now_mono_ns.max(self.start_of(index) + 1));
            closed.push(self.close(index, end, phase_of(index)));
        }
        closed
    }

    fn close(&mut self, index: u64, end_mono_ns: u64, phase: String) -> ClosedWindow {
        self.window(index);
        let window = self.open.remove(&index).expect("created above");
        self.next_to_close = index + 1;
        let mut metrics = Vec::with_capacity(window.series.len());
        let mut buckets = Vec::with_capacity(window.series.len());
        for series in window.series {
            metrics.push(WindowMetric {
                cpu: series.cpu,
                metric: series.metric.to_string(),
                moments: series.moments,
                // Encoding a histogram we built cannot fail; an empty one stands in if it did.
                histogram: series.histogram.encode().unwrap_or_else(|_| empty_encoding(self.histogram_max_ns)),
                overruns: series.overruns,
                lost: series.lost,
            });
            buckets.push(series.buckets);
        }
        let unix = |mono: u64| mono as i64 + self.unix_offset_ns;
        ClosedWindow {
            index,
            record: WindowRecord {
                start_ns: unix(self.start_of(index)),
                end_ns: unix(end_mono_ns),
                resolution: Resolution::Window,
                merged: 1,
                phase,
                metrics,
                activity: None,
            },
            buckets,
        }
    }
}

fn empty_encoding(max_ns: u64) -> rtlab_analysis::HistogramEncoding {
    LatencyHistogram::new(max_ns).and_then(|h| h.encode()).expect("an empty histogram encodes")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raw::{RawSample, FLAG_OVERRUN};

    const MS: u64 = 1_000_000;

    fn chunk(cpu: usize, samples: &[(u64, i64, bool)]) -> TappedSamples {
        TappedSamples {
            cpu,
            metric: LATENCY.into(),
            samples: samples
                .iter()
                .map(|&(expected_ns, value_ns, overran)| RawSample {
                    expected_ns,
                    value_ns,
                    cpu: cpu as u32,
                    flags: if overran { FLAG_OVERRUN } else { 0 },
                })
                .collect(),
            unrecorded: Vec::new(),
        }
    }

    fn idle(_: u64) -> String {
        "idle".into()
    }

    #[test]
    fn samples_land_in_their_windows_and_everything_adds_up() {
        // 1 ms interval, 10 ms windows starting at 100 ms; unix = mono + 1 s.
        let mut agg =
            WindowAggregator::new(WindowSource::Timer, &[0, 1], MS, 10 * MS, 1_000_000_000, 100 * MS, 1_000_000_000);
        // CPU 0: expiries 101..=120 ms, 18 samples: 105 overran (skips 106, 107), 113 missing (lost).
        let mut cpu0 = Vec::new();
        for e in 101..=120u64 {
            if e == 106 || e == 107 || e == 113 {
                continue;
            }
            cpu0.push((e * MS, (e as i64) * 10, e == 105));
        }
        agg.add(&chunk(0, &cpu0));
        assert!(agg.close_ready(111 * MS, &idle).is_empty(), "CPU 1 has delivered nothing yet");
        agg.add(&chunk(1, &[(101 * MS, 7, false), (111 * MS, 9, false)]));
        let closed = agg.close_ready(112 * MS, &idle);
        assert_eq!(closed.len(), 1);
        let w = &closed[0].record;
        assert_eq!((w.start_ns, w.end_ns), (1_100 * MS as i64, 1_110 * MS as i64));
        let cpu0 = &w.metrics[0];
        assert_eq!((cpu0.cpu, cpu0.metric.as_str()), (0, LATENCY));
        // 101..=109 minus 106, 107: 7 samples; 105 overran, skipping two.
        assert_eq!((cpu0.moments.count, cpu0.overruns, cpu0.lost), (7, 2, 0));
        assert_eq!((cpu0.moments.min, cpu0.moments.max), (1010, 1090));
        let jitter0 = &w.metrics[1];
        assert_eq!((jitter0.metric.as_str(), jitter0.moments.count), (JITTER, 6));
        assert_eq!(jitter0.moments.max, 30, "|1080 - 1050| across the overrun");
        // CPU 1's jump from 101 to 111 is nine lost samples, in the window they fell in.
        assert_eq!((w.metrics[2].moments.count, w.metrics[2].lost), (1, 8));
        let rest = agg.close_all(125 * MS, &idle);
        assert_eq!(rest.len(), 2, "110..120 and the partial 120..125");
        let second = &rest[0].record;
        assert_eq!((second.metrics[0].moments.count, second.metrics[0].lost), (9, 1));
        assert_eq!(second.metrics[2].lost, 1, "expiry 110");
        assert_eq!(rest[1].record.end_ns, 1_125 * MS as i64);
        assert_eq!(rest[1].record.metrics[0].moments.count, 1, "expiry 120");
        // Exposition buckets hold every sample.
        for window in closed.iter().chain(&rest) {
            for (metric, buckets) in window.record.metrics.iter().zip(&window.buckets) {
                assert_eq!(buckets.iter().sum::<u64>(), metric.moments.count);
            }
        }
    }

    #[test]
    fn a_stall_across_windows_counts_its_expiries_where_they_fell() {
        let mut agg = WindowAggregator::new(WindowSource::Timer, &[0], MS, 10 * MS, 1_000_000_000, 0, 0);
        // Expiry 5 ms, then nothing until 35 ms: 29 expiries missing, no overrun flag (lost).
        agg.add(&chunk(0, &[(5 * MS, 1, false), (35 * MS, 2, true), (38 * MS, 3, false)]));
        let closed = agg.close_all(40 * MS, &idle);
        let lost: Vec<u64> = closed.iter().map(|c| c.record.metrics[0].lost).collect();
        assert_eq!(lost, [4, 10, 10, 5]);
        // 35 overran: 36 and 37 are its overruns.
        assert_eq!(closed[3].record.metrics[0].overruns, 2);
        // Every expiry from the first sample to the last is a sample, an overrun or lost.
        let accounted: u64 = closed
            .iter()
            .map(|c| c.record.metrics[0].moments.count + c.record.metrics[0].overruns + c.record.metrics[0].lost)
            .sum();
        assert_eq!(accounted, (38 - 5) + 1);
    }

    #[test]
    fn a_silent_cpu_holds_a_window_only_for_the_grace() {
        let mut agg = WindowAggregator::new(WindowSource::Timer, &[0, 1], MS, 10 * MS, 1_000_000_000, 0, 0);
        agg.add(&chunk(0, &[(5 * MS, 1, false), (15 * MS, 1, false)]));
        assert!(agg.close_ready(20 * MS, &idle).is_empty());
        let closed = agg.close_ready(10 * MS + agg.grace_ns, &idle);
        assert_eq!(closed.len(), 1);
        assert_eq!(closed[0].record.metrics[2].moments.count, 0, "CPU 1 had nothing");
        // A sample of the closed window arriving now is counted, in the next window, as late.
        agg.add(&chunk(1, &[(6 * MS, 3, false)]));
        assert_eq!(agg.late(), 1);
        let rest = agg.close_all(30 * MS, &idle);
        assert_eq!(rest[0].record.metrics[2].moments.count, 1);
    }

    #[test]
    fn an_end_leaves_out_later_expiries_and_the_last_window_ends_there() {
        let mut agg =
            WindowAggregator::new(WindowSource::Timer, &[0], MS, 10 * MS, 1_000_000_000, 0, 0).ending_at(20 * MS);
        agg.add(&chunk(0, &[(5 * MS, 1, false), (15 * MS, 1, false), (20 * MS, 1, false), (21 * MS, 1, false)]));
        let closed = agg.close_all(23 * MS, &idle);
        assert_eq!(closed.len(), 2, "no window after the end");
        assert_eq!(closed[1].record.end_ns, 20 * MS as i64);
        assert_eq!(agg.beyond_end(), 2);
    }

    fn timerlat_chunk(metric: &str, samples: &[(u64, i64)], unrecorded: &[Unrecorded]) -> TappedSamples {
        TappedSamples {
            cpu: 0,
            metric: metric.into(),
            samples: samples
                .iter()
                .map(|&(expected_ns, value_ns)| RawSample { expected_ns, value_ns, cpu: 0, flags: 0 })
                .collect(),
            unrecorded: unrecorded.to_vec(),
        }
    }

    #[test]
    fn timerlat_windows_take_the_probes_own_accounting_and_spread_it_where_it_fell() {
        // 1 ms period, 10 ms windows, ending at 30 ms.
        let mut agg =
            WindowAggregator::new(WindowSource::Timerlat, &[0], MS, 10 * MS, 1_000_000_000, 0, 0).ending_at(30 * MS);
        // Records off the exact grid (a trace's expiries are the record's time minus its
        // latency): no gap accounting may be made of them.
        let thread: Vec<(u64, i64)> = (1..=29).filter(|e| !(5..=16).contains(e)).map(|e| (e * MS + 3, 50)).collect();
        let irq: Vec<(u64, i64)> =
            (1..=29).filter(|e| !(5..=16).contains(e) && *e != 20).map(|e| (e * MS - 2, 20)).collect();
        let lost = |expected_ns, lost| Unrecorded { expected_ns, lost, overruns: 0 };
        // Activations 5..=16 gave no record; 20's irq record was lost; after 29, whose thread
        // was late, two periods were skipped: 30 is past the end, 31 too.
        agg.add(&timerlat_chunk(
            TIMERLAT_THREAD,
            &thread,
            &[lost(5 * MS, 12), Unrecorded { expected_ns: 30 * MS, lost: 0, overruns: 2 }],
        ));
        agg.add(&timerlat_chunk(TIMERLAT_IRQ, &irq, &[lost(5 * MS, 12), lost(20 * MS, 1)]));
        agg.add(&timerlat_chunk("timerlat.user", &[(3 * MS, 1)], &[]));
        let closed = agg.close_all(35 * MS, &idle);
        assert_eq!(closed.len(), 3);
        let of = |w: &ClosedWindow, metric: &str| {
            let m = w.record.metrics.iter().find(|m| m.metric == metric).unwrap();
            (m.moments.count, m.lost, m.overruns)
        };
        // Window 0: 1..=4 recorded, 5..=9 lost. Window 1: 10..=16 lost, 17..=19 recorded.
        assert_eq!(of(&closed[0], TIMERLAT_THREAD), (4, 5, 0));
        assert_eq!(of(&closed[1], TIMERLAT_THREAD), (3, 7, 0));
        assert_eq!(of(&closed[2], TIMERLAT_THREAD), (10, 0, 0));
        assert_eq!(of(&closed[0], TIMERLAT_IRQ), (4, 5, 0));
        assert_eq!(of(&closed[1], TIMERLAT_IRQ), (3, 7, 0));
        assert_eq!(of(&closed[2], TIMERLAT_IRQ), (9, 1, 0));
        // Per window: timerlat.thread then timerlat.irq, no jitter, no user.
        let names: Vec<&str> = closed[0].record.metrics.iter().map(|m| m.metric.as_str()).collect();
        assert_eq!(names, [TIMERLAT_THREAD, TIMERLAT_IRQ]);
        // Every activation in the 30 ms is a sample or lost, on both metrics.
        for metric in [TIMERLAT_THREAD, TIMERLAT_IRQ] {
            let all: u64 = closed.iter().map(|w| of(w, metric)).map(|(n, lost, over)| n + lost + over).sum();
            assert_eq!(all, 29, "{metric}");
        }
        assert_eq!((agg.late(), agg.beyond_end()), (0, 0));
    }

    #[test]
    fn a_timerlat_window_waits_for_the_irq_records_of_its_activations() {
        let mut agg = WindowAggregator::new(WindowSource::Timerlat, &[0], MS, 10 * MS, 1_000_000_000, 0, 0);
        // The reader hands a batch's thread records over before its irq records.
        agg.add(&timerlat_chunk(TIMERLAT_THREAD, &[(9 * MS, 50), (11 * MS, 50)], &[]));
        assert!(agg.close_ready(12 * MS, &idle).is_empty(), "the irq records of 9 ms are still coming");
        agg.add(&timerlat_chunk(TIMERLAT_IRQ, &[(9 * MS, 20), (11 * MS, 20)], &[]));
        let closed = agg.close_ready(12 * MS, &idle);
        assert_eq!(closed.len(), 1);
        let counts: Vec<u64> = closed[0].record.metrics.iter().map(|m| m.moments.count).collect();
        assert_eq!(counts, [1, 1]);
        assert_eq!(agg.late(), 0);
    }

    #[test]
    fn phases_name_the_windows() {
        let mut agg = WindowAggregator::new(WindowSource::Timer, &[0], MS, 10 * MS, 1_000_000_000, 0, 0);
        agg.add(&chunk(0, &[(MS, 1, false), (11 * MS, 1, false), (21 * MS, 1, false)]));
        let phase = |i: u64| if i.is_multiple_of(2) { "idle".to_string() } else { "loaded".to_string() };
        let closed = agg.close_ready(25 * MS, &phase);
        let phases: Vec<_> = closed.iter().map(|c| c.record.phase.as_str()).collect();
        assert_eq!(phases, ["idle", "loaded"]);
    }
}
