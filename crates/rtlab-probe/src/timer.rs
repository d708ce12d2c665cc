//! The timer probe: cyclictest's measurement.
//!
//! One thread per selected CPU, pinned, at the requested policy and priority, sleeps with
//! `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)` until expiries spaced by whole
//! intervals. Per wake-up it records the timer latency (wake-up time minus programmed
//! expiry, signed ns) and the period jitter |s[i+1] - (s[i] + k T)| between consecutive
//! recorded wake-ups, k being the number of periods between their expiries (Dodiu et al.;
//! with s = expiry + latency this is |latency[i+1] - latency[i]|, correct across overruns).
//! A wake-up so late that later expiries already passed skips them: each is an overrun, and
//! the late sample itself is still recorded.

use crate::clock::{MonotonicClock, SimulatedClock, WakeClock};
use crate::live::LiveStats;
use crate::raw::SampleTap;
use crate::raw::{RawDrain, RawWriter, FLAG_OVERRUN};
use crate::recorder::{tapped_raw_target, MetricRecorder};
use crate::workers::{run_workers, Ending, Worker};
use crate::{Probe, ProbeError, ProbeOutput, ThreadOutput};
use rtlab_sys::clock::SleepOutcome;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

pub use crate::{ClockKind, ThreadSetup};

pub const LATENCY_METRIC: &str = "timer.latency";
pub const JITTER_METRIC: &str = "timer.jitter";

/// When a sampling thread stops (besides a stop request).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndCondition {
    /// After this many periods of the measured window (duration / interval): recorded
    /// samples plus overruns add up to it.
    Cycles(u64),
    /// After this many recorded samples.
    Samples(u64),
    /// Only at a stop request (`rtlab monitor`): the samples leave through the sample tap,
    /// and the thread's own per-second maxima keep only their fixed minimum.
    Never,
}

/// Validated configuration of a timer probe.
#[derive(Debug, Clone)]
pub struct TimerConfig {
    pub cpus: Vec<usize>,
    pub interval_ns: u64,
    pub warmup: u64,
    pub end: EndCondition,
    pub histogram_max_ns: u64,
    /// Directory for raw sample files; None: no raw output.
    pub raw_dir: Option<PathBuf>,
    pub raw_ring_capacity: usize,
    pub clock: ClockKind,
    pub setup: ThreadSetup,
    /// Prefix of the metric and thread names: "timer", or "jitter" when the jitter probe
    /// runs the timer at one of its periods.
    pub name: &'static str,
    /// Where the latency samples also go while the probe runs (`--split`, and the windows
    /// of `rtlab monitor`).
    pub split_tap: Option<SampleTap>,
}

struct PreparedThread {
    cpu: usize,
    latency: MetricRecorder,
    jitter: MetricRecorder,
    live: Arc<LiveStats>,
}

/// A timer probe with everything allocated; see the module documentation.
pub struct TimerProbe {
    config: TimerConfig,
    threads: Vec<PreparedThread>,
    raw_drains: Vec<RawDrain>,
}

impl TimerProbe {
    /// Validates the configuration and allocates every thread's histograms, per-second
    /// maxima and raw ring.
    pub fn new(config: TimerConfig) -> Result<Self, ProbeError> {
        let live = config.cpus.iter().map(|&cpu| Arc::new(LiveStats::new(cpu))).collect();
        Self::with_live(config, live)
    }

    /// As [`new`](Self::new), publishing progress into the given counters (one per CPU, in
    /// `cpus` order): the jitter probe shows its periods one after another in one display.
    pub fn with_live(config: TimerConfig, live: Vec<Arc<LiveStats>>) -> Result<Self, ProbeError> {
        if config.interval_ns == 0 {
            return Err(ProbeError::Config("the interval must be greater than 0".into()));
        }
        if config.cpus.is_empty() || live.len() != config.cpus.len() {
            return Err(ProbeError::Config("no CPU selected".into()));
        }
        match config.end {
            EndCondition::Cycles(0) | EndCondition::Samples(0) => {
                return Err(ProbeError::Config("the run must take at least one sample".into()))
            }
            _ => {}
        }
        let planned_ns = planned_ns(&config);
        let mut threads = Vec::with_capacity(config.cpus.len());
        let mut raw_drains = Vec::new();
        for (&cpu, live) in config.cpus.iter().zip(live) {
            let metric = |m: &str| format!("{}.{m}", config.name);
            let latency_metric = metric("latency");
            let raw = tapped_raw_target(
                config.raw_dir.as_deref(),
                &raw_file_name(config.name, config.interval_ns, cpu),
                config.raw_ring_capacity,
                &mut raw_drains,
                config.split_tap.as_ref().map(|tap| (tap, cpu, latency_metric.as_str())),
            );
            threads.push(PreparedThread {
                cpu,
                latency: MetricRecorder::new(latency_metric, config.histogram_max_ns, planned_ns, raw, 0)?,
                jitter: MetricRecorder::new(metric("jitter"), config.histogram_max_ns, planned_ns, None, 0)?,
                live,
            });
        }
        Ok(Self { config, threads, raw_drains })
    }
}

/// `timer-cpu0.bin`; with the period for the jitter probe: `jitter-300us-cpu0.bin`.
fn raw_file_name(name: &str, interval_ns: u64, cpu: usize) -> String {
    if name == "timer" {
        format!("timer-cpu{cpu}.bin")
    } else {
        format!("{name}-{}-cpu{cpu}.bin", period_tag(interval_ns))
    }
}

/// "1ms", "300us", "1500ns": a period in a file name.
pub fn period_tag(ns: u64) -> String {
    if ns.is_multiple_of(1_000_000) {
        format!("{}ms", ns / 1_000_000)
    } else if ns.is_multiple_of(1_000) {
        format!("{}us", ns / 1_000)
    } else {
        format!("{ns}ns")
    }
}

/// Expected length of the measured window. A samples-bounded run may take longer than
/// planned (overruns); its extra time folds into the last block.
fn planned_ns(config: &TimerConfig) -> u64 {
    match config.end {
        EndCondition::Cycles(n) => n.saturating_mul(config.interval_ns),
        EndCondition::Samples(n) => n.saturating_mul(config.interval_ns).saturating_mul(2),
        EndCondition::Never => 0,
    }
}

impl Probe for TimerProbe {
    fn name(&self) -> &'static str {
        self.config.name
    }

    fn live(&self) -> Vec<Arc<LiveStats>> {
        self.threads.iter().map(|t| t.live.clone()).collect()
    }

    fn run(self: Box<Self>, stop: Arc<AtomicBool>) -> Result<ProbeOutput, ProbeError> {
        let TimerProbe { config, threads, raw_drains } = *self;
        let writer = RawWriter::for_drains(raw_drains)?;
        let workers = threads
            .into_iter()
            .map(|thread| {
                let cpu = thread.cpu;
                let stop = stop.clone();
                let config = config.clone();
                Worker {
                    cpu,
                    name: format!("rtlab-{}/{cpu}", config.name),
                    body: Box::new(move || run_thread(thread, &config, &stop).map(Some)),
                }
            })
            .collect();
        // A stop request must not wait for the next expiry (the interval may be long).
        let wake = matches!(config.clock, ClockKind::Monotonic);
        let (threads, raw_written) = run_workers(workers, &stop, Ending::Independent, writer, wake)?;
        Ok(ProbeOutput { probe: config.name.into(), threads, raw_written, notes: Vec::new() })
    }
}

fn run_thread(mut thread: PreparedThread, config: &TimerConfig, stop: &AtomicBool) -> Result<ThreadOutput, ProbeError> {
    let cpu = thread.cpu;
    let mut state = LoopState::default();
    let params =
        LoopParams { interval_ns: config.interval_ns, warmup: config.warmup, end: config.end, cpu: cpu as u32 };
    let interrupted = match config.clock {
        ClockKind::Monotonic => {
            let _setup = config.setup.apply(cpu)?;
            sample_loop(&mut MonotonicClock, &mut thread, &mut state, &params, stop)
                .map_err(|source| ProbeError::Sampling { cpu, source })?
        }
        ClockKind::Simulated { seed, scale_permille } => {
            let mut clock = SimulatedClock::new(seed, cpu as u64, config.interval_ns).with_scale(scale_permille);
            sample_loop(&mut clock, &mut thread, &mut state, &params, stop)
                .map_err(|source| ProbeError::Sampling { cpu, source })?
        }
    };
    Ok(ThreadOutput {
        cpu,
        thread_name: format!("{}/{cpu}", config.name),
        cycles: state.cycles,
        overruns: state.overruns,
        lost: thread.latency.lost(),
        interrupted,
        block_s: thread.latency.block_s(),
        interval_ns: config.interval_ns,
        details: Vec::new(),
        // Finishing drops the raw sink, which tells the writer this ring is done.
        metrics: vec![thread.latency.finish(), thread.jitter.finish()],
    })
}

struct LoopParams {
    interval_ns: u64,
    warmup: u64,
    end: EndCondition,
    cpu: u32,
}

#[derive(Default)]
struct LoopState {
    cycles: u64,
    overruns: u64,
}

/// The real-time loop. Touches only preallocated memory; its only system calls are the
/// clock read and the sleep.
fn sample_loop<C: WakeClock>(
    clock: &mut C,
    thread: &mut PreparedThread,
    state: &mut LoopState,
    params: &LoopParams,
    stop: &AtomicBool,
) -> rtlab_sys::Result<bool> {
    let interval = params.interval_ns;
    let mut next = clock.now_ns() + interval;

    // Warm-up: same schedule, nothing recorded.
    let mut warm = 0;
    while warm < params.warmup {
        if stop.load(Relaxed) {
            return Ok(true);
        }
        if clock.sleep_until_ns(next)? == SleepOutcome::Interrupted {
            continue;
        }
        let now = clock.now_ns();
        next += interval;
        if now >= next {
            next += ((now - next) / interval + 1) * interval;
        }
        warm += 1;
    }

    thread.latency.start(next);
    thread.jitter.start(next);
    let mut previous_latency: Option<i64> = None;
    loop {
        if stop.load(Relaxed) {
            return Ok(true);
        }
        match params.end {
            EndCondition::Cycles(n) if state.cycles >= n => return Ok(false),
            EndCondition::Samples(n) if thread.latency.moments().count >= n => return Ok(false),
            _ => {}
        }
        if clock.sleep_until_ns(next)? == SleepOutcome::Interrupted {
            continue;
        }
        let now = clock.now_ns();
        let expected = next;
        let latency = now as i64 - expected as i64;
        state.cycles += 1;
        next += interval;
        let mut flags = 0;
        if now >= next {
            let mut skipped = (now - next) / interval + 1;
            next += skipped * interval;
            if let EndCondition::Cycles(n) = params.end {
                // Only expiries inside the measured window count as overruns.
                skipped = skipped.min(n.saturating_sub(state.cycles));
            }
            state.overruns += skipped;
            state.cycles += skipped;
            flags = FLAG_OVERRUN;
        }

        thread.latency.record(expected, latency, params.cpu, flags);
        if let Some(previous) = previous_latency {
            thread.jitter.record(expected, (latency - previous).abs(), params.cpu, flags);
        }
        previous_latency = Some(latency);

        let m = thread.latency.moments();
        thread.live.publish(m.count, state.overruns, thread.latency.lost(), m.min, m.max, m.sum as i64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtlab_analysis::Moments;

    /// Wakes each sleep at deadline + the next scripted latency.
    struct ScriptedClock {
        now: u64,
        latencies: Vec<u64>,
        next: usize,
        wake_times: Vec<u64>,
    }

    impl WakeClock for ScriptedClock {
        fn now_ns(&mut self) -> u64 {
            self.now
        }
        fn sleep_until_ns(&mut self, deadline_ns: u64) -> rtlab_sys::Result<SleepOutcome> {
            let latency = self.latencies[self.next % self.latencies.len()];
            self.next += 1;
            self.now = self.now.max(deadline_ns) + latency;
            self.wake_times.push(self.now);
            Ok(SleepOutcome::Expired)
        }
    }

    fn config(end: EndCondition, warmup: u64) -> TimerConfig {
        TimerConfig {
            cpus: vec![0],
            interval_ns: 1_000,
            warmup,
            end,
            histogram_max_ns: 1_000_000_000,
            raw_dir: None,
            raw_ring_capacity: 16,
            clock: ClockKind::simulated(0),
            setup: ThreadSetup::unchanged(),
            name: "timer",
            split_tap: None,
        }
    }

    fn run_scripted(latencies: Vec<u64>, end: EndCondition, warmup: u64) -> (LoopState, PreparedThread, Vec<u64>) {
        let probe = TimerProbe::new(config(end, warmup)).unwrap();
        let mut thread = probe.threads.into_iter().next().unwrap();
        let mut clock = ScriptedClock { now: 0, latencies, next: 0, wake_times: Vec::new() };
        let mut state = LoopState::default();
        let params = LoopParams { interval_ns: 1_000, warmup, end, cpu: 0 };
        let interrupted = sample_loop(&mut clock, &mut thread, &mut state, &params, &AtomicBool::new(false)).unwrap();
        assert!(!interrupted);
        (state, thread, clock.wake_times)
    }

    #[test]
    fn overruns_are_counted_and_the_late_sample_recorded() {
        // Interval 1 µs. The third wake-up is 2.5 periods late: it skips two expiries.
        let (state, thread, _) = run_scripted(vec![10, 20, 2_500, 30, 5, 5, 5, 5, 5, 5], EndCondition::Cycles(10), 0);
        assert_eq!(state.overruns, 2);
        assert_eq!(thread.latency.moments().count + state.overruns, 10);
        assert_eq!(state.cycles, 10);
        assert_eq!(thread.latency.moments().max, 2_500);
        assert_eq!(thread.latency.finish().histogram.count(), 8);
    }

    #[test]
    fn period_jitter_follows_dodiu_across_overruns() {
        let latencies = vec![10, 20, 2_500, 30, 5, 700, 1_999, 1_000, 3, 40];
        let (state, thread, wakes) = run_scripted(latencies, EndCondition::Samples(40), 0);
        // Oracle: |s[i+1] - (s[i] + k T)| where k is the number of whole periods between
        // the two expiries the wake-ups belong to (expiries lie on the grid start + n T).
        let start = 0u64;
        let expiry_of = |wake: u64, latency: u64| wake - latency;
        let mut latencies_seen = Vec::new();
        let mut script = [10u64, 20, 2_500, 30, 5, 700, 1_999, 1_000, 3, 40].iter().cycle();
        for &w in &wakes {
            latencies_seen.push((w, *script.next().unwrap()));
        }
        let mut expected = Moments::new();
        for pair in latencies_seen.windows(2) {
            let (s0, l0) = pair[0];
            let (s1, l1) = pair[1];
            let (e0, e1) = (expiry_of(s0, l0), expiry_of(s1, l1));
            assert_eq!((e0 - start) % 1_000, 0, "expiries stay on the period grid");
            let k = (e1 - e0) / 1_000;
            expected.record(((s1 - s0) as i64 - (k * 1_000) as i64).abs());
        }
        assert_eq!(*thread.jitter.moments(), expected);
        assert_eq!(thread.jitter.finish().histogram.count(), 39);
        assert!(state.overruns > 0);
    }

    #[test]
    fn warmup_samples_are_not_recorded() {
        let (_, thread, wakes) = run_scripted(vec![1_000_000_000 / 4, 7], EndCondition::Samples(5), 3);
        assert_eq!(thread.latency.moments().count, 5);
        assert!(wakes.len() >= 8);
    }

    #[test]
    fn per_second_maxima_are_the_block_maxima() {
        // 1 µs period, 3.5 s of cycles would be too many; use a long period instead.
        let mut cfg = config(EndCondition::Cycles(6), 0);
        cfg.interval_ns = 500_000_000;
        let probe = TimerProbe::new(cfg).unwrap();
        let mut thread = probe.threads.into_iter().next().unwrap();
        let mut clock = ScriptedClock { now: 0, latencies: vec![1, 9, 3, 4, 8, 2], next: 0, wake_times: Vec::new() };
        let mut state = LoopState::default();
        let params = LoopParams { interval_ns: 500_000_000, warmup: 0, end: EndCondition::Cycles(6), cpu: 0 };
        sample_loop(&mut clock, &mut thread, &mut state, &params, &AtomicBool::new(false)).unwrap();
        assert_eq!(&thread.latency.finish().per_second_max[..3], &[Some(9), Some(4), Some(8)]);
    }

    #[test]
    fn stop_request_ends_the_loop_as_interrupted() {
        let probe = TimerProbe::new(config(EndCondition::Cycles(1_000), 0)).unwrap();
        let mut thread = probe.threads.into_iter().next().unwrap();
        let mut clock = ScriptedClock { now: 0, latencies: vec![1], next: 0, wake_times: Vec::new() };
        let mut state = LoopState::default();
        let params = LoopParams { interval_ns: 1_000, warmup: 0, end: EndCondition::Cycles(1_000), cpu: 0 };
        let interrupted = sample_loop(&mut clock, &mut thread, &mut state, &params, &AtomicBool::new(true)).unwrap();
        assert!(interrupted);
        assert_eq!(thread.latency.moments().count, 0);
    }

    #[test]
    fn invalid_configurations_are_rejected() {
        let mut c = config(EndCondition::Cycles(10), 0);
        c.interval_ns = 0;
        assert!(TimerProbe::new(c).is_err());
        let mut c = config(EndCondition::Samples(0), 0);
        assert!(TimerProbe::new(c.clone()).is_err());
        c.end = EndCondition::Samples(1);
        c.cpus.clear();
        assert!(TimerProbe::new(c).is_err());
    }

    #[test]
    fn simulated_probe_runs_end_to_end() {
        let probe = Box::new(TimerProbe::new(config(EndCondition::Cycles(50_000), 0)).unwrap());
        let output = probe.run(Arc::new(AtomicBool::new(false))).unwrap();
        let t = &output.threads[0];
        assert_eq!(t.metrics[0].moments.count + t.overruns, 50_000);
        assert!(t.overruns > 0, "the simulation produces overruns");
        assert_eq!(t.metrics[1].moments.count, t.metrics[0].moments.count - 1);
        assert_eq!(t.metrics[0].histogram.count(), t.metrics[0].moments.count);
    }
}
