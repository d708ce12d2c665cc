//! The sleep probe (Dankwardt 2002): relative `nanosleep(D)` (default 50 ms), N samples
//! (default 1000), the first two discarded as in the paper; metric `sleep.overshoot` =
//! measured sleep - requested, per sample, kept in order for the per-sample plot.
//!
//! One thread on the receiver CPU, set up like every sampling thread (pinned, policy,
//! priority, stack). Per sample: t0 = CLOCK_MONOTONIC, a relative
//! `clock_nanosleep(CLOCK_MONOTONIC, 0, D)`, t1 = CLOCK_MONOTONIC; the overshoot is
//! (t1 - t0) - D, recorded at t0. A sleep cut short by a signal (EINTR: the stop request)
//! did not sleep D and is no sample: the loop checks the stop flag and sleeps again.
//!
//! With a sample budget of N, N sleeps are taken and the first `discard` are not recorded
//! (N - discard recorded); with a duration, sleeps are started while they can end within
//! it, counted from the first sleep (the discarded ones included), and at least one is
//! recorded.

use crate::live::LiveStats;
use crate::raw::{RawDrain, RawWriter};
use crate::recorder::{raw_target, MetricRecorder};
use crate::workers::{run_workers, Ending, Worker};
use crate::{Budget, Detail, Probe, ProbeError, ProbeOutput, Sampling, ThreadOutput};
use rtlab_sys::clock::{monotonic_ns, sleep_relative_ns, SleepOutcome};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

pub const DEFAULT_REQUEST_NS: u64 = 50_000_000;
pub const DEFAULT_SAMPLES: u64 = 1_000;
/// The paper discards the first two samples (cold cache).
pub const DISCARDED: u64 = 2;

pub const OVERSHOOT_METRIC: &str = "sleep.overshoot";
/// At most this many samples are kept in order for the per-sample plot (800 KB).
pub const MAX_SEQUENCE: u64 = 100_000;

#[derive(Debug, Clone)]
pub struct SleepConfig {
    pub cpu: usize,
    pub request_ns: u64,
    /// Samples taken (recorded = taken - `discard`), or a duration.
    pub sampling: Sampling,
    pub discard: u64,
}

/// When the sampling loop ends (besides a stop request).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SleepEnd {
    /// After this many recorded samples.
    Recorded(u64),
    /// Sleeps that end within this long from the first one (discarded ones included), at
    /// least one recorded.
    Elapsed(u64),
}

pub struct SleepProbe {
    config: SleepConfig,
    end: SleepEnd,
    overshoot: MetricRecorder,
    raw_drains: Vec<RawDrain>,
    live: Arc<LiveStats>,
}

impl SleepProbe {
    /// Validates the configuration and allocates the histogram, block maxima, the in-order
    /// sequence and the raw ring.
    pub fn new(config: SleepConfig) -> Result<Self, ProbeError> {
        if config.request_ns == 0 {
            return Err(ProbeError::Config("the requested sleep must be greater than 0".into()));
        }
        let (end, planned_ns, expected_samples) = match config.sampling.budget {
            Budget::Samples(n) => {
                if n <= config.discard {
                    return Err(ProbeError::Config(format!(
                        "{n} samples leave none once the first {} are discarded; take more",
                        config.discard
                    )));
                }
                let recorded = n - config.discard;
                // Overshoots lengthen the run; time beyond the plan folds into the last block.
                (SleepEnd::Recorded(recorded), n.saturating_mul(config.request_ns).saturating_mul(2), recorded)
            }
            Budget::Duration { ns } => (SleepEnd::Elapsed(ns), ns, (ns / config.request_ns).max(1)),
        };
        let mut raw_drains = Vec::new();
        let raw = raw_target(
            config.sampling.raw_dir.as_deref(),
            &format!("sleep-cpu{}.bin", config.cpu),
            config.sampling.raw_ring_capacity,
            &mut raw_drains,
        );
        let keep_sequence = sequence_len(expected_samples);
        let overshoot =
            MetricRecorder::new(OVERSHOOT_METRIC, config.sampling.histogram_max_ns, planned_ns, raw, keep_sequence)?;
        let live = Arc::new(LiveStats::new(config.cpu));
        Ok(Self { config, end, overshoot, raw_drains, live })
    }
}

impl Probe for SleepProbe {
    fn name(&self) -> &'static str {
        "sleep"
    }

    fn live(&self) -> Vec<Arc<LiveStats>> {
        vec![self.live.clone()]
    }

    fn run(self: Box<Self>, stop: Arc<AtomicBool>) -> Result<ProbeOutput, ProbeError> {
        let SleepProbe { config, end, overshoot, raw_drains, live } = *self;
        let writer = RawWriter::for_drains(raw_drains)?;
        let cpu = config.cpu;
        let realtime = config.sampling.setup.policy.is_realtime();
        let thread_stop = stop.clone();
        let worker = Worker {
            cpu,
            name: format!("rtlab-sleep/{cpu}"),
            body: Box::new(move || run_thread(&config, end, overshoot, &live, &thread_stop).map(Some)),
        };
        // A stop request must not wait for the end of a long sleep.
        let (threads, raw_written) = run_workers(vec![worker], &stop, Ending::Independent, writer, true)?;
        let mut notes = Vec::new();
        if !realtime {
            if let Some(slack) = threads.iter().find_map(|t| detail_int(t, "timer_slack_ns")) {
                notes.push(if slack > 1 {
                    format!(
                        "the sleeping thread ran as SCHED_OTHER with the timer slack in effect, {slack} ns: what an \
                         ordinary task gets (the kernel may end each sleep up to that much late to group wake-ups)"
                    )
                } else {
                    format!("the sleeping thread ran as SCHED_OTHER with a timer slack of {slack} ns")
                });
            }
        }
        Ok(ProbeOutput { probe: "sleep".into(), threads, raw_written, notes })
    }
}

/// How many samples to keep in order: all that are expected, up to [`MAX_SEQUENCE`].
fn sequence_len(expected_samples: u64) -> usize {
    expected_samples.min(MAX_SEQUENCE) as usize
}

fn detail_int(thread: &ThreadOutput, key: &str) -> Option<i64> {
    thread.details.iter().find_map(|(k, v)| match v {
        Detail::Int(i) if k == key => Some(*i),
        _ => None,
    })
}

fn run_thread(
    config: &SleepConfig,
    end: SleepEnd,
    mut overshoot: MetricRecorder,
    live: &LiveStats,
    stop: &AtomicBool,
) -> Result<ThreadOutput, ProbeError> {
    let cpu = config.cpu;
    let _setup = config.sampling.setup.apply(cpu)?;
    // Read here: the slack is per thread, and this is the one the sleeps run with.
    let timer_slack_ns = rtlab_sys::slack::current_timer_slack_ns();
    let mut progress = LoopProgress::default();
    let interrupted = sample_loop(config, end, &mut overshoot, live, stop, &mut progress)
        .map_err(|source| ProbeError::Sampling { cpu, source })?;
    let recorded = overshoot.moments().count;
    let as_int = |v: u64| Detail::Int(i64::try_from(v).unwrap_or(i64::MAX));
    Ok(ThreadOutput {
        cpu,
        thread_name: format!("sleep/{cpu}"),
        // Each recorded sample is one requested sleep; none can be skipped.
        cycles: recorded,
        overruns: 0,
        lost: overshoot.lost(),
        interrupted,
        block_s: overshoot.block_s(),
        interval_ns: config.request_ns,
        details: vec![
            ("requested_ns".into(), as_int(config.request_ns)),
            ("discarded".into(), as_int(progress.discarded)),
            ("timer_slack_ns".into(), as_int(timer_slack_ns)),
        ],
        metrics: vec![overshoot.finish()],
    })
}

#[derive(Default)]
struct LoopProgress {
    discarded: u64,
}

/// The real-time loop: two clock reads and the sleep per sample, nothing else.
fn sample_loop(
    config: &SleepConfig,
    end: SleepEnd,
    overshoot: &mut MetricRecorder,
    live: &LiveStats,
    stop: &AtomicBool,
    progress: &mut LoopProgress,
) -> rtlab_sys::Result<bool> {
    let request = config.request_ns;
    let mut window_end = None;
    loop {
        if stop.load(Relaxed) {
            return Ok(true);
        }
        let recorded = overshoot.moments().count;
        if let SleepEnd::Recorded(n) = end {
            if recorded >= n {
                return Ok(false);
            }
        }
        let t0 = monotonic_ns();
        if let SleepEnd::Elapsed(ns) = end {
            let window_end = *window_end.get_or_insert(t0.saturating_add(ns));
            // The probe keeps to its share of the run: no sleep that cannot end inside it.
            if recorded > 0 && t0.saturating_add(request) > window_end {
                return Ok(false);
            }
        }
        if sleep_relative_ns(request)? == SleepOutcome::Interrupted {
            // Cut short: not a sleep of the requested length.
            continue;
        }
        let t1 = monotonic_ns();
        if progress.discarded < config.discard {
            // The paper's cold-cache samples: taken, not recorded.
            progress.discarded += 1;
            continue;
        }
        if recorded == 0 {
            overshoot.start(t0);
        }
        overshoot.record(t0, (t1 - t0) as i64 - request as i64, config.cpu as u32, 0);
        let m = overshoot.moments();
        live.publish(m.count, 0, overshoot.lost(), m.min, m.max, m.sum as i64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ThreadSetup;
    use rtlab_sys::sched::Policy;
    use std::time::Duration;

    fn config(budget: Budget, request_ns: u64, discard: u64) -> SleepConfig {
        SleepConfig {
            cpu: 0,
            request_ns,
            sampling: Sampling {
                budget,
                histogram_max_ns: 1_000_000_000,
                raw_dir: None,
                raw_ring_capacity: 16,
                setup: ThreadSetup {
                    pin_to_cpu: false,
                    policy: Policy::Other,
                    priority: 0,
                    timer_slack_ns: Some(1),
                    prefault_stack_bytes: 0,
                },
            },
            discard,
        }
    }

    #[test]
    fn takes_n_records_n_minus_discarded() {
        let probe = Box::new(SleepProbe::new(config(Budget::Samples(7), 1_000_000, 2)).unwrap());
        let output = probe.run(Arc::new(AtomicBool::new(false))).unwrap();
        let t = &output.threads[0];
        let m = &t.metrics[0];
        assert_eq!(m.metric, OVERSHOOT_METRIC);
        assert_eq!(m.moments.count, 5);
        assert_eq!(m.histogram.count(), 5);
        assert_eq!(m.sequence.as_ref().map(Vec::len), Some(5));
        assert_eq!(t.cycles, 5);
        assert_eq!(t.overruns, 0);
        assert_eq!(t.interval_ns, 1_000_000);
        assert_eq!(detail_int(t, "requested_ns"), Some(1_000_000));
        assert_eq!(detail_int(t, "discarded"), Some(2));
        assert_eq!(detail_int(t, "timer_slack_ns"), Some(1), "the set-up's slack is in effect in the thread");
        // A completed relative sleep never ends early.
        assert!(m.moments.min >= 0);
        assert_eq!(output.notes.len(), 1, "SCHED_OTHER is noted");
    }

    #[test]
    fn a_duration_bounds_the_run() {
        let probe = Box::new(SleepProbe::new(config(Budget::Duration { ns: 50_000_000 }, 5_000_000, 2)).unwrap());
        let started = std::time::Instant::now();
        let output = probe.run(Arc::new(AtomicBool::new(false))).unwrap();
        let t = &output.threads[0];
        // 10 sleeps fit at most; two are discarded.
        assert!((1..=8).contains(&t.metrics[0].moments.count), "{}", t.metrics[0].moments.count);
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn a_duration_shorter_than_one_sleep_still_records_one() {
        let probe = Box::new(SleepProbe::new(config(Budget::Duration { ns: 1_000 }, 1_000_000, 2)).unwrap());
        let output = probe.run(Arc::new(AtomicBool::new(false))).unwrap();
        assert_eq!(output.threads[0].metrics[0].moments.count, 1);
    }

    #[test]
    fn a_stop_cuts_a_long_sleep_short() {
        let probe = Box::new(SleepProbe::new(config(Budget::Samples(10), 30_000_000_000, 0)).unwrap());
        let stop = Arc::new(AtomicBool::new(false));
        let stopper = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(200));
                stop.store(true, Relaxed);
            })
        };
        let started = std::time::Instant::now();
        let output = probe.run(stop).unwrap();
        stopper.join().unwrap();
        assert!(started.elapsed() < Duration::from_secs(10), "the stop waited for the sleep");
        let t = &output.threads[0];
        assert!(t.interrupted);
        assert_eq!(t.metrics[0].moments.count, 0, "the interrupted sleep is no sample");
        assert_eq!(t.cycles, 0);
    }

    #[test]
    fn invalid_configurations_are_rejected() {
        assert!(matches!(SleepProbe::new(config(Budget::Samples(2), 1_000, 2)), Err(ProbeError::Config(_))));
        assert!(matches!(SleepProbe::new(config(Budget::Samples(5), 0, 2)), Err(ProbeError::Config(_))));
        assert!(SleepProbe::new(config(Budget::Samples(3), 1_000, 2)).is_ok());
    }

    #[test]
    fn the_sequence_is_bounded() {
        assert_eq!(sequence_len(998), 998);
        assert_eq!(sequence_len(10_000_000), MAX_SEQUENCE as usize);
    }
}
