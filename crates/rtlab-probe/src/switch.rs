//! The switch probe (Dodiu et al. 2010 Table 3; Xenomai switchtest; RTAI `switches`): on one
//! CPU a low-priority task makes a blocked high-priority task runnable and the
//! high-priority task records when it runs: the task-switch time, per sample, through a
//! futex (`switch.futex`, the main metric) and a POSIX semaphore (`switch.sem`); plus the
//! RTAI figure: N back-to-back switches, total time, time per switch.
//!
//! Per sample, the low task (the ipc probe's trigger, on the high task's CPU) reads
//! CLOCK_MONOTONIC (t0), publishes it and wakes the high task (FUTEX_WAKE / sem_post); the
//! high task preempts it, reads the clock (t1) on return from its wait and records t1 - t0.
//! The burst: the low task reads the clock, then N/2 times wakes the high task and blocks
//! until the high task wakes it back (two futexes or two semaphores, no clock read inside),
//! then reads the clock again: total / N per switch.

use crate::ipc::{run_pair, Channel, PreparedPair};
use crate::live::LiveStats;
use crate::rate_tag;
use crate::recorder::{raw_target, MetricRecorder};
use crate::workers::{run_workers, Ending, Worker};
use crate::{Detail, Probe, ProbeError, ProbeOutput, Sampling, Stimulus, ThreadSetup};
use rtlab_sys::clock::{monotonic_ns, sleep_relative_ns};
use rtlab_sys::ipc::{Futex, FutexWait, Semaphore, WaitOutcome};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::Arc;

pub const DEFAULT_RATE_HZ: f64 = 1_000.0;
/// Back-to-back switches of the RTAI-style figure, per variant.
pub const DEFAULT_BURST_SWITCHES: u64 = 10_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SwitchVariant {
    Futex,
    Semaphore,
}

impl SwitchVariant {
    /// "futex", "sem": the metric `switch.<name>` and the thread `switch/<name>`.
    pub fn name(self) -> &'static str {
        match self {
            SwitchVariant::Futex => "futex",
            SwitchVariant::Semaphore => "sem",
        }
    }
}

#[derive(Debug, Clone)]
pub struct SwitchConfig {
    /// Both tasks run on `stimulus.receiver_cpu`; `trigger_cpu` is ignored.
    pub stimulus: Stimulus,
    /// Shared by the variants (a duration is split equally).
    pub sampling: Sampling,
    pub variants: Vec<SwitchVariant>,
    pub burst_switches: u64,
}

/// One direction of the burst's ping-pong.
enum Bell {
    /// The word counts the rings; a waiter waits while it holds the count it last saw.
    Futex(Futex),
    Semaphore(Semaphore),
}

impl Bell {
    fn new(variant: SwitchVariant) -> rtlab_sys::Result<Bell> {
        Ok(match variant {
            SwitchVariant::Futex => Bell::Futex(Futex::new(0)),
            SwitchVariant::Semaphore => Bell::Semaphore(Semaphore::new(0)?),
        })
    }

    fn ring(&self) -> rtlab_sys::Result<()> {
        match self {
            Bell::Futex(f) => {
                f.word().fetch_add(1, Release);
                f.wake(1).map(|_| ())
            }
            Bell::Semaphore(s) => s.post(),
        }
    }

    /// Blocks until rung once more than `seen` (futex) or once (semaphore).
    fn wait(&self, seen: &mut u32) -> rtlab_sys::Result<WaitOutcome<()>> {
        match self {
            Bell::Futex(f) => loop {
                let word = f.word().load(Acquire);
                if word != *seen {
                    *seen = word;
                    return Ok(WaitOutcome::Ready(()));
                }
                if f.wait(word)? == FutexWait::Interrupted {
                    return Ok(WaitOutcome::Interrupted);
                }
            },
            Bell::Semaphore(s) => s.wait(),
        }
    }
}

/// The burst's two bells and what its tasks share.
struct Burst {
    to_high: Bell,
    to_low: Bell,
    high_ready: AtomicBool,
    /// Set by the low task when the burst completed.
    total_ns: AtomicU64,
    done: AtomicBool,
}

struct PreparedVariant {
    variant: SwitchVariant,
    pair: PreparedPair,
    burst: Burst,
}

pub struct SwitchProbe {
    config: SwitchConfig,
    variants: Vec<PreparedVariant>,
    live: Arc<LiveStats>,
}

impl SwitchProbe {
    pub fn new(config: SwitchConfig) -> Result<Self, ProbeError> {
        if config.variants.is_empty() {
            return Err(ProbeError::Config("switch: no variant to measure".into()));
        }
        if !(config.stimulus.rate_hz.is_finite() && config.stimulus.rate_hz > 0.0) {
            return Err(ProbeError::Config("switch: the rate must be a positive number".into()));
        }
        let cpu = config.stimulus.receiver_cpu;
        let live = Arc::new(LiveStats::new(cpu));
        let period_ns = config.stimulus.period_ns();
        let budget = config.sampling.budget.share(config.variants.len());
        let unavailable = |variant: SwitchVariant, e: rtlab_sys::SysError| ProbeError::Unavailable {
            probe: "switch".into(),
            what: format!("the {} variant", variant.name()),
            reason: e.to_string(),
        };
        let mut variants = Vec::with_capacity(config.variants.len());
        for &variant in &config.variants {
            let channel = match variant {
                SwitchVariant::Futex => Channel::futex(),
                SwitchVariant::Semaphore => Channel::semaphore().map_err(|e| unavailable(variant, e))?,
            };
            let mut raw_drains = Vec::new();
            let raw = raw_target(
                config.sampling.raw_dir.as_deref(),
                &format!("switch-{}-{}hz-cpu{cpu}.bin", variant.name(), rate_tag(config.stimulus.rate_hz)),
                config.sampling.raw_ring_capacity,
                &mut raw_drains,
            );
            let recorder = MetricRecorder::new(
                format!("switch.{}", variant.name()),
                config.sampling.histogram_max_ns,
                budget.planned_ns(period_ns),
                raw,
                0,
            )?;
            let pair = PreparedPair {
                channel,
                recorder,
                raw_drains,
                stimuli: budget.cycles(period_ns),
                period_ns,
                receiver_cpu: cpu,
                trigger_cpu: cpu,
                receiver_setup: config.sampling.setup,
                trigger_setup: config.stimulus.trigger_setup,
                live: live.clone(),
                receiver_thread: format!("rtlab-swhi/{cpu}"),
                trigger_thread: format!("rtlab-swlo/{cpu}"),
            };
            let burst = Burst {
                to_high: Bell::new(variant).map_err(|e| unavailable(variant, e))?,
                to_low: Bell::new(variant).map_err(|e| unavailable(variant, e))?,
                high_ready: AtomicBool::new(false),
                total_ns: AtomicU64::new(0),
                done: AtomicBool::new(false),
            };
            variants.push(PreparedVariant { variant, pair, burst });
        }
        Ok(Self { config, variants, live })
    }
}

impl Probe for SwitchProbe {
    fn name(&self) -> &'static str {
        "switch"
    }

    fn live(&self) -> Vec<Arc<LiveStats>> {
        vec![self.live.clone()]
    }

    fn run(self: Box<Self>, stop: Arc<AtomicBool>) -> Result<ProbeOutput, ProbeError> {
        let SwitchProbe { config, variants, .. } = *self;
        let cpu = config.stimulus.receiver_cpu;
        let round_trips = config.burst_switches.div_ceil(2);
        let mut output = ProbeOutput {
            probe: "switch".into(),
            threads: Vec::new(),
            raw_written: Vec::new(),
            notes: switch_notes(&config.stimulus.trigger_setup, &config.sampling.setup),
        };
        for PreparedVariant { variant, pair, burst } in variants {
            if stop.load(Relaxed) {
                break;
            }
            let (mut thread, raw_written) = run_pair(pair, &stop)?;
            thread.thread_name = format!("switch/{}", variant.name());
            // Extended, not replaced: the raw writer may have left its account there.
            thread.details.extend([
                ("variant".into(), Detail::Text(variant.name().into())),
                ("rate_hz".into(), Detail::Float(config.stimulus.rate_hz)),
            ]);
            if !thread.interrupted && round_trips > 0 {
                if let Some(total_ns) =
                    run_burst(burst, round_trips, cpu, config.sampling.setup, config.stimulus.trigger_setup, &stop)?
                {
                    let switches = 2 * round_trips;
                    thread.details.extend([
                        ("burst_switches".into(), Detail::Int(switches as i64)),
                        ("burst_total_ns".into(), Detail::Int(total_ns as i64)),
                        ("burst_per_switch_ns".into(), Detail::Float(total_ns as f64 / switches as f64)),
                    ]);
                }
            }
            output.threads.push(thread);
            output.raw_written.extend(raw_written);
        }
        Ok(output)
    }
}

/// The RTAI figure: `round_trips` low -> high -> low ping-pongs on `cpu`, timed by the
/// low task from before the first wake-up to after the last one. None when stopped.
fn run_burst(
    burst: Burst,
    round_trips: u64,
    cpu: usize,
    high_setup: ThreadSetup,
    low_setup: ThreadSetup,
    stop: &Arc<AtomicBool>,
) -> Result<Option<u64>, ProbeError> {
    let burst = Arc::new(burst);
    let group_stop = Arc::new(AtomicBool::new(false));
    let high = {
        let (burst, group_stop) = (burst.clone(), group_stop.clone());
        Worker {
            cpu,
            name: format!("rtlab-swhi/{cpu}"),
            body: Box::new(move || {
                let _setup = high_setup.apply(cpu)?;
                burst.high_ready.store(true, Release);
                let mut seen = 0;
                while !group_stop.load(Relaxed) {
                    let woken = burst.to_high.wait(&mut seen).map_err(|source| ProbeError::Sampling { cpu, source })?;
                    if woken == WaitOutcome::Ready(()) {
                        burst.to_low.ring().map_err(|source| ProbeError::Sampling { cpu, source })?;
                    }
                }
                Ok(None)
            }),
        }
    };
    let low = {
        let (burst, group_stop) = (burst.clone(), group_stop.clone());
        Worker {
            cpu,
            name: format!("rtlab-swlo/{cpu}"),
            body: Box::new(move || {
                let _setup = low_setup.apply(cpu)?;
                let result = ping_pong(&burst, round_trips, &group_stop);
                // Let the high task see the end now rather than at the next stop signal.
                group_stop.store(true, Relaxed);
                let _ = burst.to_high.ring();
                result.map_err(|source| ProbeError::Sampling { cpu, source })?;
                Ok(None)
            }),
        }
    };
    run_workers(vec![high, low], stop, Ending::Coupled { group_stop }, None, true)?;
    Ok(burst.done.load(Acquire).then(|| burst.total_ns.load(Acquire)))
}

/// The low task's part of the burst: no clock read between the first and the last switch.
fn ping_pong(burst: &Burst, round_trips: u64, group_stop: &AtomicBool) -> rtlab_sys::Result<()> {
    while !burst.high_ready.load(Acquire) {
        if group_stop.load(Relaxed) {
            return Ok(());
        }
        sleep_relative_ns(200_000)?;
    }
    // The high task blocks in its first wait right after it says it is ready.
    sleep_relative_ns(1_000_000)?;
    let mut seen = 0;
    let t0 = monotonic_ns();
    for _ in 0..round_trips {
        burst.to_high.ring()?;
        while burst.to_low.wait(&mut seen)? == WaitOutcome::Interrupted {
            if group_stop.load(Relaxed) {
                return Ok(());
            }
        }
    }
    let t1 = monotonic_ns();
    burst.total_ns.store(t1 - t0, Release);
    burst.done.store(true, Release);
    Ok(())
}

/// What the reader must know when the set-up does not make the woken task preempt.
fn switch_notes(low: &ThreadSetup, high: &ThreadSetup) -> Vec<String> {
    let mut notes = Vec::new();
    if !high.policy.is_realtime() {
        notes.push(
            "the tasks run SCHED_OTHER: the woken task does not necessarily preempt the waker, so a sample may \
             include the rest of the waker's run"
                .into(),
        );
    } else if low.policy.is_realtime() && low.priority >= high.priority {
        notes.push(format!(
            "the low task runs at priority {}, not below the high task's {}: the woken task waits for the waker \
             to block instead of preempting it",
            low.priority, high.priority
        ));
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Budget;

    fn setup() -> ThreadSetup {
        ThreadSetup::unchanged()
    }

    fn config(samples: u64, burst_switches: u64) -> SwitchConfig {
        SwitchConfig {
            stimulus: Stimulus { receiver_cpu: 0, trigger_cpu: 1, rate_hz: 2_000.0, trigger_setup: setup() },
            sampling: Sampling {
                budget: Budget::Samples(samples),
                histogram_max_ns: 10_000_000_000,
                raw_dir: None,
                raw_ring_capacity: 1024,
                setup: setup(),
            },
            variants: vec![SwitchVariant::Futex, SwitchVariant::Semaphore],
            burst_switches,
        }
    }

    fn detail<'a>(t: &'a crate::ThreadOutput, key: &str) -> &'a Detail {
        &t.details.iter().find(|(k, _)| k == key).unwrap_or_else(|| panic!("no {key}")).1
    }

    #[test]
    fn both_variants_measure_and_burst() {
        let probe = Box::new(SwitchProbe::new(config(100, 1_000)).unwrap());
        let output = probe.run(Arc::new(AtomicBool::new(false))).unwrap();
        assert_eq!(output.probe, "switch");
        let names: Vec<_> = output.threads.iter().map(|t| t.thread_name.as_str()).collect();
        assert_eq!(names, ["switch/futex", "switch/sem"]);
        for (t, metric) in output.threads.iter().zip(["switch.futex", "switch.sem"]) {
            assert_eq!(t.metrics[0].metric, metric);
            assert_eq!(t.cycles, 100);
            assert_eq!(t.metrics[0].moments.count + t.overruns, t.cycles);
            assert!(t.metrics[0].moments.min >= 0);
            assert_eq!(*detail(t, "burst_switches"), Detail::Int(1_000));
            let Detail::Int(total) = *detail(t, "burst_total_ns") else { panic!("burst_total_ns") };
            assert!(total > 0);
            assert_eq!(*detail(t, "burst_per_switch_ns"), Detail::Float(total as f64 / 1_000.0));
        }
        assert!(output.notes.iter().any(|n| n.contains("SCHED_OTHER")));
    }

    #[test]
    fn bells_ping_pong_and_stop() {
        for variant in [SwitchVariant::Futex, SwitchVariant::Semaphore] {
            let burst = Burst {
                to_high: Bell::new(variant).unwrap(),
                to_low: Bell::new(variant).unwrap(),
                high_ready: AtomicBool::new(false),
                total_ns: AtomicU64::new(0),
                done: AtomicBool::new(false),
            };
            let total = run_burst(burst, 50, 0, setup(), setup(), &Arc::new(AtomicBool::new(false))).unwrap();
            assert!(total.unwrap() > 0, "{variant:?}");
        }
    }

    #[test]
    fn no_variant_is_a_configuration_error() {
        let mut c = config(10, 0);
        c.variants.clear();
        assert!(matches!(SwitchProbe::new(c), Err(ProbeError::Config(_))));
    }

    #[test]
    fn no_burst_without_burst_switches() {
        let mut c = config(20, 0);
        c.variants = vec![SwitchVariant::Semaphore];
        let output = Box::new(SwitchProbe::new(c).unwrap()).run(Arc::new(AtomicBool::new(false))).unwrap();
        assert!(output.threads[0].details.iter().all(|(k, _)| !k.starts_with("burst")));
    }
}
