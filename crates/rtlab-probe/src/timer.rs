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
use crate::raw::{channel, RawDrain, RawSample, RawSink, RawWriter, FLAG_OVERRUN};
use crate::{MetricOutput, Probe, ProbeError, ProbeOutput, ThreadOutput};
use rtlab_analysis::{LatencyHistogram, Moments};
use rtlab_sys::clock::SleepOutcome;
use rtlab_sys::sched::Policy;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

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
}

/// Which clock the sampling loop uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockKind {
    Monotonic,
    /// Deterministic virtual time (tests, snapshots); no thread set-up is done.
    Simulated {
        seed: u64,
    },
}

/// How each sampling thread prepares itself before the first sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadSetup {
    pub pin_to_cpu: bool,
    pub policy: Policy,
    pub priority: i32,
    /// Timer slack to set on the thread (1 ns when not real-time).
    pub timer_slack_ns: Option<u64>,
    pub prefault_stack_bytes: usize,
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
}

struct PreparedThread {
    cpu: usize,
    latency: LatencyHistogram,
    jitter: LatencyHistogram,
    latency_per_second: Vec<i64>,
    jitter_per_second: Vec<i64>,
    raw: Option<RawSink>,
    raw_file: Option<PathBuf>,
    live: Arc<LiveStats>,
    /// Width of one per-second-maximum entry (1 s unless the run is longer than a week).
    block_ns: u64,
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
        if config.interval_ns == 0 {
            return Err(ProbeError::Config("the interval must be greater than 0".into()));
        }
        if config.cpus.is_empty() {
            return Err(ProbeError::Config("no CPU selected".into()));
        }
        match config.end {
            EndCondition::Cycles(0) | EndCondition::Samples(0) => {
                return Err(ProbeError::Config("the run must take at least one sample".into()))
            }
            _ => {}
        }
        let (block_ns, seconds) = block_layout(&config);
        let mut threads = Vec::with_capacity(config.cpus.len());
        let mut raw_drains = Vec::new();
        for &cpu in &config.cpus {
            let mut latency = LatencyHistogram::new(config.histogram_max_ns)?;
            let mut jitter = LatencyHistogram::new(config.histogram_max_ns)?;
            // Write every page now so the loop never takes a first-touch fault.
            latency.prefault();
            jitter.prefault();
            let (raw, raw_file) = match &config.raw_dir {
                Some(dir) => {
                    let path = dir.join(format!("timer-cpu{cpu}.bin"));
                    let (sink, drain) = channel(path.clone(), config.raw_ring_capacity);
                    raw_drains.push(drain);
                    (Some(sink), Some(path))
                }
                None => (None, None),
            };
            threads.push(PreparedThread {
                cpu,
                latency,
                jitter,
                latency_per_second: vec![i64::MIN; seconds],
                jitter_per_second: vec![i64::MIN; seconds],
                raw,
                raw_file,
                live: Arc::new(LiveStats::new(cpu)),
                block_ns,
            });
        }
        Ok(Self { config, threads, raw_drains })
    }
}

/// At most this many block maxima are kept (7 days of seconds, 4.8 MB per metric), so
/// memory stays bounded whatever the run length.
pub const MAX_BLOCKS: u64 = 7 * 86_400;

/// Width of one block-maximum entry and how many to preallocate: one per second, or for
/// runs longer than [`MAX_BLOCKS`] seconds, whole-second blocks wide enough to fit. A
/// samples-bounded run may take longer than planned (overruns); its extra time folds into
/// the last slot.
fn block_layout(config: &TimerConfig) -> (u64, usize) {
    let planned_ns = match config.end {
        EndCondition::Cycles(n) => n.saturating_mul(config.interval_ns),
        EndCondition::Samples(n) => n.saturating_mul(config.interval_ns).saturating_mul(2),
    };
    let planned_s = planned_ns / 1_000_000_000 + 1;
    let block_s = planned_s.div_ceil(MAX_BLOCKS).max(1);
    (block_s * 1_000_000_000, (planned_s / block_s) as usize + 2)
}

impl Probe for TimerProbe {
    fn name(&self) -> &'static str {
        "timer"
    }

    fn live(&self) -> Vec<Arc<LiveStats>> {
        self.threads.iter().map(|t| t.live.clone()).collect()
    }

    fn run(self: Box<Self>, stop: Arc<AtomicBool>) -> Result<ProbeOutput, ProbeError> {
        let TimerProbe { config, threads, raw_drains } = *self;
        if matches!(config.clock, ClockKind::Monotonic) {
            rtlab_sys::clock::install_wake_handler().map_err(|source| ProbeError::Setup {
                cpu: config.cpus[0],
                what: "install the wake-up signal handler",
                source,
            })?;
        }
        let writer =
            if raw_drains.is_empty() { None } else { Some(RawWriter::spawn(raw_drains, Duration::from_millis(5))?) };
        let mut handles = Vec::with_capacity(threads.len());
        for thread in threads {
            let cpu = thread.cpu;
            let stop = stop.clone();
            let config = config.clone();
            let handle = std::thread::Builder::new()
                .name(format!("rtlab-timer/{cpu}"))
                .spawn(move || run_thread(thread, &config, &stop))
                .map_err(|source| ProbeError::Setup {
                    cpu,
                    what: "spawn thread",
                    source: rtlab_sys::SysError::Os { op: "spawn", source },
                })?;
            handles.push((cpu, handle));
        }
        // A stop request must not wait for the next expiry (the interval may be long):
        // interrupt the threads' sleeps until they have all finished.
        if matches!(config.clock, ClockKind::Monotonic) {
            use std::os::unix::thread::JoinHandleExt;
            // Poll slowly while sampling (this thread's wake-ups are interference too),
            // quickly once a stop is requested.
            while handles.iter().any(|(_, h)| !h.is_finished()) {
                let stopping = stop.load(Relaxed);
                if stopping {
                    for (_, handle) in handles.iter().filter(|(_, h)| !h.is_finished()) {
                        let _ = rtlab_sys::clock::wake_thread(handle.as_pthread_t());
                    }
                }
                std::thread::sleep(Duration::from_millis(if stopping { 20 } else { 100 }));
            }
        }
        let mut outputs = Vec::with_capacity(handles.len());
        let mut first_error = None;
        for (cpu, handle) in handles {
            match handle.join() {
                Ok(Ok(output)) => outputs.push(output),
                Ok(Err(e)) => {
                    // Stop the others: a run with a failed thread is not a result.
                    stop.store(true, Relaxed);
                    first_error.get_or_insert(e);
                }
                Err(_) => {
                    stop.store(true, Relaxed);
                    first_error.get_or_insert(ProbeError::ThreadPanicked { cpu });
                }
            }
        }
        let raw_written = match writer {
            Some(w) => w.finish()?,
            None => vec![0; outputs.len()],
        };
        if let Some(e) = first_error {
            return Err(e);
        }
        Ok(ProbeOutput { probe: "timer".into(), threads: outputs, raw_written })
    }
}

fn run_thread(mut thread: PreparedThread, config: &TimerConfig, stop: &AtomicBool) -> Result<ThreadOutput, ProbeError> {
    let cpu = thread.cpu;
    let mut state = LoopState::default();
    let params =
        LoopParams { interval_ns: config.interval_ns, warmup: config.warmup, end: config.end, cpu: cpu as u32 };
    let interrupted = match config.clock {
        ClockKind::Monotonic => {
            let setup = config.setup;
            let setup_err = |what, source| ProbeError::Setup { cpu, what, source };
            let _affinity = if setup.pin_to_cpu {
                Some(rtlab_sys::sched::AffinityGuard::pin_current_thread(cpu).map_err(|e| setup_err("pin to CPU", e))?)
            } else {
                None
            };
            let _slack = match setup.timer_slack_ns {
                Some(ns) => Some(
                    rtlab_sys::slack::TimerSlackGuard::set_current_thread(ns)
                        .map_err(|e| setup_err("set timer slack", e))?,
                ),
                None => None,
            };
            let _scheduling = if setup.policy.is_realtime() {
                Some(
                    rtlab_sys::sched::SchedulingGuard::set_current_thread(setup.policy, setup.priority)
                        .map_err(|e| setup_err("set scheduling policy", e))?,
                )
            } else {
                None
            };
            rtlab_sys::memory::prefault_stack(setup.prefault_stack_bytes);
            sample_loop(&mut MonotonicClock, &mut thread, &mut state, &params, stop)
                .map_err(|source| ProbeError::Sampling { cpu, source })?
        }
        ClockKind::Simulated { seed } => {
            let mut clock = SimulatedClock::new(seed, cpu as u64, config.interval_ns);
            sample_loop(&mut clock, &mut thread, &mut state, &params, stop)
                .map_err(|source| ProbeError::Sampling { cpu, source })?
        }
    };
    // Dropping the sink tells the writer this ring is finished.
    drop(thread.raw.take());
    let per_second = |slots: &[i64], moments: &Moments| {
        let used = if moments.count == 0 { 0 } else { state.last_slot + 1 };
        slots[..used.min(slots.len())].iter().map(|&v| (v != i64::MIN).then_some(v)).collect()
    };
    Ok(ThreadOutput {
        cpu,
        thread_name: format!("timer/{cpu}"),
        cycles: state.cycles,
        overruns: state.overruns,
        lost: state.lost,
        interrupted,
        block_s: thread.block_ns / 1_000_000_000,
        raw_file: thread.raw_file.clone(),
        metrics: vec![
            MetricOutput {
                metric: LATENCY_METRIC.into(),
                per_second_max: per_second(&thread.latency_per_second, &state.latency),
                histogram: thread.latency,
                moments: state.latency,
            },
            MetricOutput {
                metric: JITTER_METRIC.into(),
                per_second_max: per_second(&thread.jitter_per_second, &state.jitter),
                histogram: thread.jitter,
                moments: state.jitter,
            },
        ],
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
    lost: u64,
    last_slot: usize,
    latency: Moments,
    jitter: Moments,
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

    let window_start = next;
    let mut previous_latency: Option<i64> = None;
    let slots = thread.latency_per_second.len();
    loop {
        if stop.load(Relaxed) {
            return Ok(true);
        }
        match params.end {
            EndCondition::Cycles(n) if state.cycles >= n => return Ok(false),
            EndCondition::Samples(n) if state.latency.count >= n => return Ok(false),
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

        thread.latency.record(latency);
        state.latency.record(latency);
        let slot = (((expected - window_start) / thread.block_ns) as usize).min(slots - 1);
        state.last_slot = slot;
        if latency > thread.latency_per_second[slot] {
            thread.latency_per_second[slot] = latency;
        }
        if let Some(previous) = previous_latency {
            let jitter = (latency - previous).abs();
            thread.jitter.record(jitter);
            state.jitter.record(jitter);
            if jitter > thread.jitter_per_second[slot] {
                thread.jitter_per_second[slot] = jitter;
            }
        }
        previous_latency = Some(latency);

        if let Some(raw) = thread.raw.as_mut() {
            if !raw.push(RawSample { expected_ns: expected, value_ns: latency, cpu: params.cpu, flags }) {
                state.lost += 1;
            }
        }
        thread.live.publish(
            state.latency.count,
            state.overruns,
            state.lost,
            state.latency.min,
            state.latency.max,
            state.latency.sum as i64,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            clock: ClockKind::Simulated { seed: 0 },
            setup: ThreadSetup {
                pin_to_cpu: false,
                policy: Policy::Other,
                priority: 0,
                timer_slack_ns: None,
                prefault_stack_bytes: 0,
            },
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
        assert_eq!(state.latency.count + state.overruns, 10);
        assert_eq!(state.cycles, 10);
        assert_eq!(state.latency.max, 2_500);
        assert_eq!(thread.latency.count(), 8);
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
        assert_eq!(state.jitter, expected);
        assert_eq!(thread.jitter.count(), 39);
        assert!(state.overruns > 0);
    }

    #[test]
    fn warmup_samples_are_not_recorded() {
        let (state, _, wakes) = run_scripted(vec![1_000_000_000 / 4, 7], EndCondition::Samples(5), 3);
        assert_eq!(state.latency.count, 5);
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
        assert_eq!(&thread.latency_per_second[..3], &[9, 4, 8]);
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
        assert_eq!(state.latency.count, 0);
    }

    #[test]
    fn block_maxima_memory_is_bounded_for_any_run_length() {
        let mut c = config(EndCondition::Cycles(30 * 86_400), 0);
        c.interval_ns = 1_000_000_000;
        let (block_ns, slots) = block_layout(&c);
        assert_eq!(block_ns, 5_000_000_000);
        assert!(slots as u64 <= MAX_BLOCKS + 2);
        let short = config(EndCondition::Cycles(10_000), 0);
        assert_eq!(block_layout(&short).0, 1_000_000_000);
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
