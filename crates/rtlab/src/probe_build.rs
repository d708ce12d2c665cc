//! Building the probes of a validated [`RunPlan`]: each [`ProbeChoice`] with its budget
//! becomes a prepared [`rtlab_probe::Probe`] (everything its sampling threads touch
//! allocated before the run starts).

use crate::experiment::RunPlan;
use rtlab_probe::ipc::{IpcConfig, IpcProbe, Mechanism};
use rtlab_probe::jitter::{JitterConfig, JitterProbe};
use rtlab_probe::net::{NetConfig, NetProbe};
use rtlab_probe::noise::{NoiseConfig, NoiseProbe};
use rtlab_probe::remote::{DeltaEstimate, RemoteConfig, RemoteProbe};
use rtlab_probe::sleep::{SleepConfig, SleepProbe};
use rtlab_probe::sweep::{SweepConfig, SweepProbe, SweptProbe};
use rtlab_probe::switch::{SwitchConfig, SwitchProbe, SwitchVariant};
use rtlab_probe::taskset::{TasksetConfig, TasksetProbe};
use rtlab_probe::timer::{EndCondition, TimerConfig, TimerProbe};
use rtlab_probe::timerlat::{TimerlatProbe, TimerlatProbeConfig};
use rtlab_probe::{Budget, ClockKind, Probe, ProbeError, Sampling, Stimulus, ThreadSetup};
use std::path::PathBuf;

use crate::probe_plan::ProbeChoice;

/// What a probe is built with in one scenario.
pub struct BuildContext {
    pub setup: ThreadSetup,
    pub raw_dir: Option<PathBuf>,
    pub clock: ClockKind,
    /// With `--split --raw`: where the kernel trace of this probe is spooled.
    pub trace_dir: Option<PathBuf>,
    /// With `--split`: where the timer or net probe hands its samples to the split; for the
    /// noise probe, where its gaps go to their attribution.
    pub split_tap: Option<rtlab_probe::raw::SampleTap>,
    /// `remote`: δ, calibrated before the loads or given (None: not known yet, while the
    /// probe is only checked).
    pub remote_delta: Option<rtlab_probe::remote::DeltaEstimate>,
}

/// Each probe's budget in a scenario: with `--samples`, that many per thread; with a
/// duration, the time-bounded probes share it equally; `sleep` without an explicit
/// duration takes its paper's 1000 samples and leaves the duration to the others.
pub fn budget_of(plan: &RunPlan, probe: ProbeChoice) -> Budget {
    if let Some(n) = plan.samples {
        return Budget::Samples(n);
    }
    let duration = plan.duration_ns.unwrap_or(crate::plan_values::DEFAULT_DURATION_NS);
    if probe == ProbeChoice::Sleep && !plan.duration_explicit {
        return Budget::Samples(rtlab_probe::sleep::DEFAULT_SAMPLES);
    }
    let sharing = plan.probes.iter().filter(|p| plan.duration_explicit || **p != ProbeChoice::Sleep).count();
    Budget::Duration { ns: duration / sharing.max(1) as u64 }
}

/// Expected wall time of one probe, for the progress display.
pub fn expected_ns(plan: &RunPlan, probe: ProbeChoice) -> u64 {
    match budget_of(plan, probe) {
        Budget::Duration { ns } => ns,
        Budget::Samples(n) => {
            let s = &plan.probe_settings;
            let period = match probe {
                ProbeChoice::Timer | ProbeChoice::Timerlat => plan.interval_ns,
                ProbeChoice::Jitter => s.periods_ns.iter().sum::<u64>(),
                ProbeChoice::Sleep => s.sleep_ns,
                ProbeChoice::Sweep => s.sweep_rates_hz.iter().map(|r| (1e9 / r) as u64).sum(),
                ProbeChoice::Taskset => {
                    plan.taskset.as_ref().and_then(|t| t.analysis.tasks.iter().map(|t| t.period_ns).max()).unwrap_or(0)
                }
                other => (1e9 / s.rates_hz.get(other.name()).copied().unwrap_or(1_000.0)) as u64,
            };
            n.saturating_mul(period)
        }
    }
}

/// The remote probe's configuration (the station comes from the plan).
pub fn remote_config(
    plan: &RunPlan,
    stimulus: Stimulus,
    sampling: Sampling,
    delta: Option<DeltaEstimate>,
) -> Result<RemoteConfig, ProbeError> {
    let station = plan
        .station
        .as_ref()
        .ok_or_else(|| ProbeError::Config("remote: no station was given (--station HOST:PORT --key FILE)".into()))?;
    let delta = delta.or_else(|| given_delta(plan));
    Ok(RemoteConfig {
        stimulus,
        sampling,
        station: station.address,
        key: station.key.clone(),
        delta,
        calibrating: false,
        interface: plan.probe_settings.interface.clone(),
    })
}

/// δ as `--delta` gave it: a time (no spread), or a stored calibration held with its spread.
pub fn given_delta(plan: &RunPlan) -> Option<DeltaEstimate> {
    let settings = &plan.probe_settings;
    if let Some(stored) = &settings.delta_stored {
        return Some(DeltaEstimate::from(stored));
    }
    settings.delta_given_ns.map(|ns| DeltaEstimate::given(ns as i64))
}

/// δ for the remote probe, calibrated against the idle station before any load starts
/// (Regnier: "estimated by carrying out the first experiment without E_L"), unless --delta
/// gave it.
pub fn calibrate_remote(
    plan: &RunPlan,
    setup: ThreadSetup,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> Result<Option<DeltaEstimate>, ProbeError> {
    if !plan.probes.contains(&ProbeChoice::Remote) {
        return Ok(None);
    }
    if let Some(given) = given_delta(plan) {
        return Ok(Some(given));
    }
    let s = &plan.probe_settings;
    let stimulus = Stimulus {
        receiver_cpu: s.receiver_cpu,
        trigger_cpu: s.trigger_cpu,
        rate_hz: s.rates_hz.get("remote").copied().unwrap_or(rtlab_probe::remote::DEFAULT_RATE_HZ),
        trigger_setup: ThreadSetup {
            priority: if setup.policy.is_realtime() { s.trigger_priority } else { 0 },
            ..setup
        },
    };
    let sampling = Sampling {
        // Replaced by calibrate() with the calibration's own.
        budget: Budget::Samples(rtlab_probe::remote::CALIBRATION_MIN_STIMULI),
        histogram_max_ns: plan.histogram_max_ns,
        raw_dir: None,
        raw_ring_capacity: rtlab_probe::raw::DEFAULT_RING_CAPACITY,
        setup,
    };
    let config = remote_config(plan, stimulus, sampling, None)?;
    rtlab_probe::remote::calibrate(config, stop).map(Some)
}

/// Builds one probe: everything its threads touch is allocated here, and its mechanism is
/// set up (a missing one fails here, before sampling).
pub fn build(plan: &RunPlan, probe: ProbeChoice, context: &BuildContext) -> Result<Box<dyn Probe>, ProbeError> {
    let s = &plan.probe_settings;
    let budget = budget_of(plan, probe);
    let sampling = |budget: Budget| Sampling {
        budget,
        histogram_max_ns: plan.histogram_max_ns,
        raw_dir: context.raw_dir.clone(),
        raw_ring_capacity: rtlab_probe::raw::DEFAULT_RING_CAPACITY,
        setup: context.setup,
    };
    let trigger_setup = ThreadSetup {
        priority: if context.setup.policy.is_realtime() { s.trigger_priority } else { 0 },
        ..context.setup
    };
    let stimulus = |name: &str, same_cpu: bool| Stimulus {
        receiver_cpu: s.receiver_cpu,
        trigger_cpu: if same_cpu { s.receiver_cpu } else { s.trigger_cpu },
        rate_hz: s.rates_hz.get(name).copied().unwrap_or(1_000.0),
        trigger_setup,
    };
    let net = |budget: Budget| NetConfig {
        stimulus: stimulus("net", false),
        sampling: sampling(budget),
        bind: s.bind.as_ref().and_then(|b| b.parse().ok()),
        interface: s.interface.clone(),
        name: "net",
        split_tap: context.split_tap.clone(),
    };
    let ipc = |m: Mechanism, budget: Budget| IpcConfig {
        mechanism: m,
        stimulus: stimulus(m.probe_name(), false),
        sampling: sampling(budget),
        name: m.probe_name(),
    };
    let timer = |name: &'static str, interval_ns: u64, budget: Budget| TimerConfig {
        cpus: plan.cpus.clone(),
        interval_ns,
        warmup: plan.warmup,
        end: match budget {
            Budget::Samples(n) => EndCondition::Samples(n),
            Budget::Duration { .. } => EndCondition::Cycles(budget.cycles(interval_ns)),
        },
        histogram_max_ns: plan.histogram_max_ns,
        raw_dir: context.raw_dir.clone(),
        raw_ring_capacity: rtlab_probe::raw::DEFAULT_RING_CAPACITY,
        clock: context.clock,
        setup: context.setup,
        name,
        split_tap: context.split_tap.clone(),
    };
    Ok(match probe {
        ProbeChoice::Timer => Box::new(TimerProbe::new(timer("timer", plan.interval_ns, budget))?),
        ProbeChoice::Jitter => Box::new(JitterProbe::new(JitterConfig {
            periods_ns: s.periods_ns.clone(),
            budget,
            timer: timer("jitter", s.periods_ns[0], budget),
        })?),
        ProbeChoice::Sleep => {
            let mut sampling = sampling(budget);
            // Dankwardt's comparison: an ordinary task keeps the default timer slack, which
            // is what `--policy other` asks to see (a refused SCHED_FIFO still gets 1 ns).
            if plan.policy == rtlab_results::host::Policy::Other {
                sampling.setup.timer_slack_ns = None;
            }
            Box::new(SleepProbe::new(SleepConfig {
                cpu: s.receiver_cpu,
                request_ns: s.sleep_ns,
                sampling,
                discard: s.sleep_discarded,
            })?)
        }
        ProbeChoice::Net => Box::new(NetProbe::new(net(budget))?),
        ProbeChoice::Remote => Box::new(RemoteProbe::new(remote_config(
            plan,
            stimulus("remote", false),
            sampling(budget),
            context.remote_delta,
        )?)?),
        ProbeChoice::Ipc(m) => Box::new(IpcProbe::new(ipc(m, budget))?),
        ProbeChoice::Timerlat => Box::new(TimerlatProbe::new(TimerlatProbeConfig {
            cpus: plan.cpus.clone(),
            period_ns: plan.interval_ns,
            budget: Some(budget),
            histogram_max_ns: plan.histogram_max_ns,
            thread_priority: plan.timerlat_priority,
            tap: None,
        })?),
        ProbeChoice::Switch => Box::new(SwitchProbe::new(SwitchConfig {
            stimulus: stimulus("switch", true),
            sampling: sampling(budget),
            variants: vec![SwitchVariant::Futex, SwitchVariant::Semaphore],
            burst_switches: rtlab_probe::switch::DEFAULT_BURST_SWITCHES,
        })?),
        ProbeChoice::Sweep => {
            let swept = match ProbeChoice::parse(&s.sweep_of) {
                Some(ProbeChoice::Ipc(m)) => SweptProbe::Ipc(ipc(m, budget)),
                _ => SweptProbe::Net(net(budget)),
            };
            Box::new(SweepProbe::new(SweepConfig { rates_hz: s.sweep_rates_hz.clone(), budget, swept })?)
        }
        ProbeChoice::Noise => {
            let Budget::Duration { ns: duration_ns } = budget else {
                return Err(ProbeError::Config(
                    "the busy loop runs for a duration (--duration), not a sample count".into(),
                ));
            };
            Box::new(NoiseProbe::new(NoiseConfig {
                cpus: plan.cpus.clone(),
                duration_ns,
                threshold_ns: plan
                    .probe_settings
                    .noise_threshold_ns
                    .unwrap_or(rtlab_probe::noise::DEFAULT_THRESHOLD_NS),
                histogram_max_ns: plan.histogram_max_ns,
                raw_dir: context.raw_dir.clone(),
                raw_ring_capacity: rtlab_probe::raw::DEFAULT_RING_CAPACITY,
                clock: context.clock,
                setup: context.setup,
                tap: context.split_tap.clone(),
            })?)
        }
        ProbeChoice::Taskset => {
            let taskset = plan
                .taskset
                .as_ref()
                .ok_or_else(|| ProbeError::Config("no task set was given (--taskset FILE)".into()))?;
            let Budget::Duration { ns: window_ns } = budget else {
                return Err(ProbeError::Config("a task set runs for a duration, not a sample count".into()));
            };
            Box::new(TasksetProbe::new(TasksetConfig {
                tasks: taskset.task_specs(),
                cpu: taskset.cpu,
                window_ns,
                histogram_max_ns: plan.histogram_max_ns,
                raw_dir: context.raw_dir.clone(),
                raw_ring_capacity: rtlab_probe::raw::DEFAULT_RING_CAPACITY,
                clock: context.clock,
                setup: context.setup,
            })?)
        }
    })
}
