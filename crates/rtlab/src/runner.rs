//! The lifecycle of `rtlab run`, in a fixed order like rtla's tools: check, set the
//! system up (every change held by a guard that restores it), measure, collect, save.

use crate::errors::{environment, usage};
use crate::experiment::{RunPlan, ScenarioPlan};
use crate::probe_build;
use crate::probe_build::BuildContext;
use crate::probe_plan::ProbeChoice;
use crate::progress::{self, Progress};
use anyhow::Context;
use rtlab_analysis::Summary;
use rtlab_load::host::LoadHost;
use rtlab_probe::traced::StreamingSplit;
use rtlab_probe::{ClockKind, Probe, ProbeError, ProbeOutput, ThreadSetup};
use rtlab_results::host::{Policy, SystemInfo};
use rtlab_results::run::{Experiment, Measurement, RealtimeStatus, Resources, RunResult, Scenario, ToolInfo, SCHEMA};
use rtlab_sys::activity::{activity_between, ActivitySnapshot};
use rtlab_sys::sched::SchedulingGuard;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const STACK_PREFAULT_BYTES: usize = 256 * 1024;

/// System settings held for the duration of the measurement; dropping restores them.
pub struct SystemGuards {
    _memory: Option<rtlab_sys::memory::MemoryLockGuard>,
    _dma_latency: Option<rtlab_sys::pmqos::DmaLatencyGuard>,
}

/// The host a run describes: the fixed simulated one with the simulated clock (identical
/// results on every machine), else this machine.
pub fn host_of(simulate: Option<u64>) -> SystemInfo {
    if simulate.is_some() {
        crate::simulated_host::simulated_host()
    } else {
        rtlab_sys::sysinfo::collect()
    }
}

/// The stop flag of a measurement. First SIGINT/SIGTERM: set it (the sampling stops and what
/// was measured is kept). Second: exit at once with the interrupted code.
pub fn stop_on_signals() -> anyhow::Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // Registered first, so it runs before the exit: on the second signal, unmount the
        // tracefs this run mounted for --split (a no-op when it mounted nothing).
        rtlab_sys::tracefs::mount::register_emergency_unmount(signal, stop.clone())
            .context("cannot install the signal handlers")?;
        signal_hook::flag::register_conditional_shutdown(
            signal,
            i32::from(crate::errors::EXIT_INTERRUPTED),
            stop.clone(),
        )
        .and_then(|_| signal_hook::flag::register(signal, stop.clone()))
        .context("cannot install the signal handlers")?;
    }
    Ok(stop)
}

/// The start and end times as saved: the epoch for a simulated run (identical results on
/// every machine), else RFC 3339.
pub fn time_texts(
    simulated: bool,
    start: chrono::DateTime<chrono::Local>,
    end: chrono::DateTime<chrono::Local>,
) -> (String, String) {
    if simulated {
        ("1970-01-01T00:00:00+00:00".to_string(), "1970-01-01T00:00:00+00:00".to_string())
    } else {
        (start.to_rfc3339(), end.to_rfc3339())
    }
}

/// The outcome of a finished (or interrupted) run.
pub struct Finished {
    pub result: RunResult,
    pub run_json: std::path::PathBuf,
    /// A scenario whose loads could not start or stopped early: saved and marked, but the
    /// run did not measure what was asked.
    pub failed_to_load: Option<String>,
    /// Raw samples stopped being written because the file system was (nearly) full: saved
    /// and marked (the scenarios' `raw_stopped`), but not every sample asked for was kept.
    pub raw_stopped: Option<String>,
}

/// Whether the calling process may run a thread at `policy`/`priority`: tried on a
/// short-lived thread so the main thread's own scheduling never changes.
fn try_realtime(policy: Policy, priority: i32) -> Result<(), String> {
    std::thread::spawn(move || {
        SchedulingGuard::set_current_thread(policy, priority).map(drop).map_err(|e| e.to_string())
    })
    .join()
    .unwrap_or_else(|_| Err("probe thread panicked".into()))
}

/// Each scenario creates its own `samples/<n>-<name>/` when raw samples are asked for.
fn prepare_output_dir(dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)
        .map_err(|e| usage(format!("--output {}: cannot create the directory: {e}", dir.display())))?;
    Ok(())
}

/// The real-time conditions of a measurement: what was asked, what could be had, and the
/// guards that hold them (dropping them restores the system).
pub struct RealtimeConditions {
    pub guards: SystemGuards,
    pub status: RealtimeStatus,
    /// How the measuring threads are set up under these conditions.
    pub setup: ThreadSetup,
}

/// Tries the asked policy and priority, locks memory and holds /dev/cpu_dma_latency at 0
/// (with `dma_latency`); each failure becomes a note and a weaker condition, not an error.
pub fn realtime_conditions(asked: Policy, priority: i32, dma_latency: bool, simulated: bool) -> RealtimeConditions {
    let mut notes = Vec::new();
    let mut policy = asked;
    let mut guards = SystemGuards { _memory: None, _dma_latency: None };
    let mut memory_locked = false;
    let mut dma_latency_held = false;
    if simulated {
        notes.push("samples come from a simulated clock, not from this machine.".to_string());
    } else {
        if policy.is_realtime() {
            if let Err(e) = try_realtime(policy, priority) {
                notes.push(format!(
                    "no permission for {} priority {} ({e}); measured as SCHED_OTHER with 1 ns timer slack. Run as root or grant CAP_SYS_NICE (or raise RLIMIT_RTPRIO) for real-time results.",
                    policy.kernel_name(), priority
                ));
                policy = Policy::Other;
            }
        } else {
            notes.push("--policy other asked for an ordinary task: these are not real-time results.".to_string());
        }
        match rtlab_sys::memory::MemoryLockGuard::lock_all() {
            Ok(g) => {
                guards._memory = Some(g);
                memory_locked = true;
            }
            Err(e) => notes.push(format!(
                "memory could not be locked ({e}); page faults may add latency. Run as root or raise RLIMIT_MEMLOCK."
            )),
        }
        if dma_latency {
            match rtlab_sys::pmqos::DmaLatencyGuard::hold(0) {
                Ok(g) => {
                    guards._dma_latency = Some(g);
                    dma_latency_held = true;
                }
                Err(e) => notes.push(format!(
                    "/dev/cpu_dma_latency could not be held at 0 ({e}); deep idle states may add latency."
                )),
            }
        }
    }
    let real_time_results = !simulated && policy.is_realtime() && memory_locked;
    let timer_slack_ns = (!policy.is_realtime() && !simulated).then_some(1);
    let setup = ThreadSetup {
        pin_to_cpu: !simulated,
        policy,
        priority: if policy.is_realtime() { priority } else { 0 },
        timer_slack_ns,
        prefault_stack_bytes: STACK_PREFAULT_BYTES,
    };
    RealtimeConditions {
        guards,
        status: RealtimeStatus {
            real_time_results,
            policy,
            priority: if policy.is_realtime() { priority } else { 0 },
            memory_locked,
            dma_latency_held,
            timer_slack_ns,
            notes,
        },
        setup,
    }
}

pub fn run(
    plan: &RunPlan,
    host: SystemInfo,
    command_line: Vec<String>,
    stop: Arc<AtomicBool>,
) -> anyhow::Result<Finished> {
    let simulated = plan.simulate.is_some();
    if plan.output.join("run.json").exists() {
        return Err(usage(format!(
            "--output {}: already holds a run.json; choose another directory",
            plan.output.display()
        )));
    }

    let RealtimeConditions { guards, status: mut realtime, setup } =
        realtime_conditions(plan.policy, plan.priority, plan.dma_latency, simulated);
    // Every probe is built once before any load starts or anything is written: a
    // configuration it refuses (exit 2) or a mechanism this host lacks (no POSIX message
    // queues, no socket timestamps; exit 3) fails here, cleanly.
    for &probe in &plan.probes {
        let clock = if simulated { ClockKind::simulated(0) } else { ClockKind::Monotonic };
        let context =
            BuildContext { setup, raw_dir: None, clock, trace_dir: None, split_tap: None, remote_delta: None };
        drop(probe_build::build(plan, probe, &context).map_err(|e| probe_error(probe, e))?);
    }
    // δ of the remote probe, measured while the station is idle: before any load.
    if plan.probes.contains(&crate::probe_plan::ProbeChoice::Remote) && probe_build::given_delta(plan).is_none() {
        progress::note(plan, "Calibrating δ against the idle station");
    }
    let remote_delta = probe_build::calibrate_remote(plan, setup, stop.clone())
        .map_err(|e| probe_error(crate::probe_plan::ProbeChoice::Remote, e))?;
    // --split with tracefs on a host booted without it: mounted for the run (as root),
    // unmounted when `_tracefs_mount` drops at the end of the run, on every path.
    let (_tracefs_mount, split_backend) = if plan.split {
        let (mount, backend) = crate::split_run::prepare_backend(plan)?;
        (mount, Some(backend))
    } else {
        (None, None)
    };
    // -P noise: the gaps are attributed from a kernel trace where tracefs is usable (as root
    // mounted for the run like --split's); otherwise they are recorded unattributed.
    let noise_tracing = crate::noise_run::prepare(plan);
    prepare_output_dir(&plan.output)?;
    // A δ calibrated here is stored beside run.json, to be held by later runs (--delta DIR).
    if let (Some(delta), None) = (remote_delta, probe_build::given_delta(plan)) {
        let stored = rtlab_results::delta::StoredDelta {
            schema: rtlab_results::delta::DELTA_SCHEMA.into(),
            mean_ns: delta.mean_ns,
            sd_ns: delta.sd_ns,
            min_ns: delta.min_ns,
            max_ns: delta.max_ns,
            samples: delta.samples,
            rate_hz: delta.rate_hz,
            station: plan.probe_settings.station.clone().unwrap_or_default(),
            calibrated_at: chrono::Local::now().to_rfc3339(),
            hostname: host.hostname.clone(),
            kernel: host.kernel_release.clone(),
            read_from: None,
        };
        stored.write(&plan.output).with_context(|| "cannot store the δ calibration: check the output directory")?;
    }
    // Scratch directories of loads whose rtlab was killed (SIGKILL runs no destructor).
    if plan.loaded_scenarios().next().is_some() {
        let parent = plan.scratch.clone().unwrap_or_else(rtlab_load::default_scratch_parent);
        let _ = rtlab_load::remove_stale_scratch(&parent);
    }

    let start_time = chrono::Local::now();
    let mut scenarios = Vec::new();
    let mut measurements = Vec::new();
    let mut sampling_s = 0.0;
    let mut failed_to_load = None;
    let mut raw_stopped = None;
    let mut splits = Vec::new();
    let mut noise = NoiseCollected::default();
    for (index, planned) in plan.scenarios.iter().enumerate() {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let tracing = Tracing { split: split_backend.as_ref(), noise: noise_tracing.as_ref() };
        let mut outcome = measure_scenario(plan, index, planned, setup, tracing, remote_delta, &stop)?;
        splits.append(&mut outcome.splits);
        noise.cpus.append(&mut outcome.noise.cpus);
        noise.description = noise.description.or(outcome.noise.description);
        for note in outcome.noise.notes {
            if !noise.notes.contains(&note) {
                noise.notes.push(note);
            }
        }
        for note in outcome.notes {
            if !realtime.notes.contains(&note) {
                realtime.notes.push(note);
            }
        }
        sampling_s += outcome.scenario.duration_s;
        if failed_to_load.is_none() {
            failed_to_load = outcome
                .scenario
                .load_failure
                .clone()
                .map(|why| format!("scenario {:?} was not measured under its full load: {why}", planned.name));
        }
        if raw_stopped.is_none() {
            raw_stopped = outcome.scenario.raw_stopped.clone().map(|why| format!("scenario {:?}: {why}", planned.name));
        }
        scenarios.push(outcome.scenario);
        measurements.extend(outcome.measurements);
    }
    let end_time = chrono::Local::now();
    drop(guards);

    let interrupted = stop.load(Ordering::SeqCst) || scenarios.iter().any(|s| s.interrupted);
    let warnings = rtlab_sys::sysinfo::distortions(&host, &plan.cpus);
    let (start_text, end_text) = time_texts(simulated, start_time, end_time);
    let mut result = RunResult {
        schema: SCHEMA.into(),
        tool: ToolInfo {
            name: "rtlab".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            commit: Some(env!("RTLAB_COMMIT").into()),
        },
        command_line,
        label: plan.label.clone(),
        start_time: start_text,
        end_time: end_text,
        duration_s: sampling_s,
        interrupted,
        simulated,
        realtime,
        host,
        experiment: Experiment {
            probes: plan.probes.iter().map(|p| p.name().to_string()).collect(),
            interval_ns: plan.interval_ns,
            policy: plan.policy,
            priority: plan.priority,
            cpus: plan.cpus.clone(),
            duration_ns: plan.duration_ns.filter(|_| plan.samples.is_none()),
            samples_per_cpu: plan.samples,
            warmup_samples: plan.warmup,
            histogram_max_ns: plan.histogram_max_ns,
            raw: plan.raw,
            dma_latency: plan.dma_latency,
            loads: plan.scenarios.iter().map(|s| s.name.clone()).collect(),
            presets: plan.presets.clone(),
            load_cpus: plan.load_cpus.clone(),
            settle_ns: plan.settle_ns,
            probe_settings: plan.probe_settings.clone(),
        },
        scenarios,
        measurements,
        warnings,
        resources: Resources { peak_rss_kib: if simulated { None } else { rtlab_sys::memory::peak_rss_kib() } },
        verdict: None,
        imported: None,
        taskset: None,
        split: split_backend.map(|backend| crate::split_run::section(plan, backend, splits)),
        noise: plan
            .probes
            .contains(&ProbeChoice::Noise)
            .then(|| crate::noise_run::section(plan, &noise_tracing, noise.description, &noise.notes, noise.cpus)),
    };
    if let Some(t) = &plan.taskset {
        let section = rtlab_results::taskset::TasksetRun::new(
            t.file.clone(),
            t.set.clone(),
            t.cpu,
            t.analysis.clone(),
            t.notes.clone(),
            &result,
        );
        result.taskset = Some(section);
    }
    result.check().map_err(|e| environment(format!("internal inconsistency in the results: {e}")))?;
    if !plan.requirements.is_empty() {
        let verdict = rtlab_report::verdict::judge_run(&result, &plan.requirements)
            .map_err(|e| environment(format!("cannot judge the requirements: {e}")))?;
        result.verdict = Some(verdict);
    }
    let run_json =
        result.save(&plan.output).with_context(|| format!("cannot write the results to {}", plan.output.display()))?;
    Ok(Finished { result, run_json, failed_to_load, raw_stopped })
}

/// What one scenario produced.
struct ScenarioOutcome {
    scenario: Scenario,
    measurements: Vec<Measurement>,
    /// The probes' notes on how they ran.
    notes: Vec<String>,
    /// With --split: each split probe's account.
    splits: Vec<crate::split_run::ProbeSplit>,
    /// With the noise probe: its CPUs' figures and causes.
    noise: NoiseCollected,
}

/// The noise probe's findings so far.
#[derive(Default)]
struct NoiseCollected {
    cpus: Vec<rtlab_results::noise::NoiseCpu>,
    /// The first tracing session's description.
    description: Option<String>,
    /// Why a session could not attribute (it failed to start or to be collected).
    notes: Vec<String>,
}

/// The kernel tracing of a run: the split's backend (--split) and the noise probe's.
#[derive(Clone, Copy)]
struct Tracing<'a> {
    split: Option<&'a crate::split_run::Backend>,
    noise: Option<&'a crate::noise_run::NoiseTracing>,
}

/// A probe that cannot be set up or fails while sampling is an environment error (exit 3);
/// a configuration it refuses is a usage error (exit 2).
fn probe_error(probe: ProbeChoice, e: ProbeError) -> anyhow::Error {
    match e {
        ProbeError::Config(why) if probe == ProbeChoice::Taskset => usage(format!("--taskset: {why}")),
        ProbeError::Config(why) => usage(format!("--probe {}: {why}", probe.name())),
        // Unavailable already names the probe.
        e @ ProbeError::Unavailable { .. } => environment(format!("{e}; nothing was saved")),
        other => environment(format!("probe {}: {other}; nothing was saved", probe.name())),
    }
}

/// Directory name of a scenario's raw samples: its position and a file-safe form of its name.
fn scenario_dir_name(index: usize, name: &str) -> String {
    let safe: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '_' }).collect();
    format!("{}-{}", index + 1, safe.chars().take(48).collect::<String>())
}

/// One scenario: start its loads, let them settle, measure while watching them, stop them.
fn measure_scenario(
    plan: &RunPlan,
    index: usize,
    planned: &ScenarioPlan,
    setup: ThreadSetup,
    tracing: Tracing<'_>,
    remote_delta: Option<rtlab_probe::remote::DeltaEstimate>,
    stop: &Arc<AtomicBool>,
) -> anyhow::Result<ScenarioOutcome> {
    let split_backend = tracing.split;
    let simulated = plan.simulate.is_some();
    let name = planned.name.as_str();
    let mut scenario = Scenario {
        name: name.to_string(),
        loads: Vec::new(),
        load_failure: None,
        raw_stopped: None,
        settle_s: 0.0,
        duration_s: 0.0,
        interrupted: false,
        activity: None,
        convergence: None,
    };
    // Loads first: the load host's supervisor is a fork of rtlab, and memory allocated
    // after the fork (the probe's) is never shared copy-on-write with it.
    let mut host = None;
    // Remote loads: the station's counters before and after are the evidence that the
    // floods arrived there.
    // Without them the scenario is still measured; a note says why the evidence is missing.
    let mut station_notes = Vec::new();
    let mut station_before = match (&plan.station, planned.spec.contains("remote:")) {
        (Some(station), true) => match station_status(station, None) {
            Ok(before) => Some(before),
            Err(e) => {
                station_notes.push(format!("scenario {name:?}: the station's counters before the loads: {e}"));
                None
            }
        },
        _ => None,
    };
    if !planned.is_unloaded() {
        let exe = std::env::current_exe().context("cannot find the rtlab executable to run the loads")?;
        progress::note(plan, &format!("Starting the loads of {name:?}; measuring in {}", format_ns(plan.settle_ns)));
        match LoadHost::start(&exe, &planned.spec, plan.load_cpus.as_deref(), plan.scratch.as_deref()) {
            Ok(h) => host = Some(h),
            // Checked before anything ran; only the first scenario can still meet this.
            Err(e) if e.is_usage_error() && index == 0 => return Err(usage(e.to_string())),
            Err(e) => {
                scenario.load_failure = Some(format!("the loads could not start: {e}"));
                return Ok(ScenarioOutcome {
                    scenario,
                    measurements: Vec::new(),
                    notes: Vec::new(),
                    splits: Vec::new(),
                    noise: NoiseCollected::default(),
                });
            }
        }
        let settle_started = Instant::now();
        while settle_started.elapsed() < Duration::from_nanos(plan.settle_ns) && !stop.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(50));
        }
        scenario.settle_s = settle_started.elapsed().as_secs_f64();
    }

    let clock = match plan.simulate {
        // Each scenario its own stream, so that scenarios differ as real ones would.
        Some(seed) => {
            ClockKind::Simulated { seed: seed.wrapping_add(index as u64), scale_permille: plan.simulate_scale_permille }
        }
        None => ClockKind::Monotonic,
    };
    let raw_dir = plan.raw.then(|| plan.output.join("samples").join(scenario_dir_name(index, name)));
    if let Some(dir) = &raw_dir {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let activity_start = (!simulated).then(ActivitySnapshot::take).transpose().ok().flatten();
    let mut measurements = Vec::new();
    let mut notes = Vec::new();
    let mut splits = Vec::new();
    let mut noise = NoiseCollected::default();
    let mut raw_account = RawAccount::default();
    let mut convergence = None;
    let mut outcome = Ok(());
    for (probe_index, &choice) in plan.probes.iter().enumerate() {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        // The split takes the samples and the trace while the probe runs; the trace's pages
        // are kept only with --raw.
        let split = match split_backend {
            Some(backend) => crate::split_run::streaming_split(plan, backend, choice)?,
            None => None,
        };
        let trace_dir = (split.is_some() && plan.raw)
            .then(|| plan.output.join("trace").join(scenario_dir_name(index, name)).join(choice.name()));
        let (split_tap, split) = split.unzip();
        // The noise probe's gaps go to their attribution through the same kind of tap.
        let noise_untraced = match tracing.noise.map(|t| &t.usable) {
            Some(Err(why)) => Some(why.clone()),
            Some(Ok(())) => None,
            None => Some("not traced (simulated run)".to_string()),
        };
        let (split_tap, noise_trace) = match (choice, &noise_untraced) {
            (ProbeChoice::Noise, None) => {
                let (tap, trace) = crate::noise_run::attribution(plan);
                (Some(tap), Some(trace))
            }
            _ => (split_tap, None),
        };
        let context = BuildContext { setup, raw_dir: raw_dir.clone(), clock, trace_dir, split_tap, remote_delta };
        let title = match (plan.scenarios.len(), plan.probes.len()) {
            (1, 1) => name.to_string(),
            (1, n) => format!("{} ({}/{n})", choice.name(), probe_index + 1),
            (s, 1) => format!("{name} ({}/{s})", index + 1),
            (s, n) => format!("{name} ({}/{s}) · {} ({}/{n})", index + 1, choice.name(), probe_index + 1),
        };
        let split = split.zip(split_backend);
        let job = ProbeJob { choice, context: &context, split, noise: noise_trace, title: &title };
        // --until: the probe in windows until its statistic converges (crate::until).
        let measured = match &plan.until {
            Some(until) => {
                measure_windows(plan, until, job, &mut host, &mut scenario, stop).map(|(output, elapsed, decision)| {
                    convergence = Some(decision);
                    (output, elapsed, None, None)
                })
            }
            None => measure_probe(plan, job, &mut host, &mut scenario, stop),
        };
        match measured {
            Ok((mut output, elapsed, traced, noise_traced)) => {
                if choice == ProbeChoice::Noise {
                    let (traced, untraced) = match noise_traced {
                        Some(Ok(t)) => (Some(t), None),
                        Some(Err(why)) => (None, Some(why)),
                        None => (None, noise_untraced.clone()),
                    };
                    if let (Some(why), None) = (&untraced, &noise_untraced) {
                        noise.notes.push(format!("scenario {name:?}: the gaps are unattributed: {why}"));
                    }
                    if let Some(t) = &traced {
                        noise.description.get_or_insert_with(|| t.description.clone());
                        if t.events_lost > 0 {
                            noise.notes.push(format!(
                                "scenario {name:?}: the kernel dropped {} trace events (full buffer); the gaps around them are unattributed",
                                t.events_lost
                            ));
                        }
                    }
                    noise.cpus.extend(crate::noise_run::cpus_of(&output, name, traced.as_ref(), untraced.as_deref()));
                }
                if let Some((capture, split)) = traced {
                    match crate::split_run::split_probe(&mut output, &capture, split, name) {
                        Ok(split) => splits.push(split),
                        Err(e) => {
                            outcome = Err(e);
                            break;
                        }
                    }
                }
                scenario.duration_s += elapsed;
                for note in &output.notes {
                    let note = format!("{}: {note}", choice.name());
                    if !notes.contains(&note) {
                        notes.push(note);
                    }
                }
                raw_account.add(&output);
                measurements.extend(measurements_of(&output, name, &plan.output)?);
                if output.threads.iter().any(|t| t.interrupted) {
                    scenario.interrupted = true;
                }
            }
            Err(e) => {
                outcome = Err(e);
                break;
            }
        }
    }
    let activity = activity_start.and_then(|a| ActivitySnapshot::take().ok().map(|b| activity_between(&a, &b)));
    if let Some(h) = host {
        match h.stop() {
            Ok(reports) => {
                if scenario.load_failure.is_none() {
                    scenario.load_failure =
                        reports.iter().find_map(|r| r.died_early.as_ref().map(|why| format!("{}: {why}", r.name)));
                }
                scenario.loads = reports;
                if let (Some(station), Some((client, before))) = (&plan.station, station_before.take()) {
                    match station_status(station, Some(client)) {
                        Ok((_, after)) => add_station_evidence(&mut scenario.loads, &before, &after),
                        Err(e) => station_notes
                            .push(format!("scenario {name:?}: the station's counters after the loads: {e}")),
                    }
                }
            }
            Err(e) => {
                scenario.load_failure.get_or_insert(format!("the loads did not report: {e}"));
            }
        }
    }
    outcome?;
    scenario.raw_stopped = raw_account.stopped();
    scenario.interrupted |= stop.load(Ordering::SeqCst);
    scenario.activity = activity;
    // "Long enough?": the stop rule's decision, or a plain run's answer for its duration.
    scenario.convergence = convergence.or_else(|| crate::until::decide_plain(&measurements, scenario.duration_s));
    notes.extend(station_notes);
    Ok(ScenarioOutcome { scenario, measurements, notes, splits, noise })
}

/// The station's counters now, on a control session (opened when `client` is None).
fn station_status(
    station: &crate::probe_plan::StationTarget,
    client: Option<rtlab_station::client::StationClient>,
) -> anyhow::Result<(rtlab_station::client::StationClient, rtlab_station::protocol::StationCounters)> {
    let mut client = match client {
        Some(c) => c,
        None => rtlab_station::client::StationClient::connect(station.address, station.key.clone())
            .map_err(|e| environment(format!("--station: {e}")))?,
    };
    let counters = client.status().map_err(|e| environment(format!("--station: {e}")))?;
    Ok((client, counters))
}

/// Appends to each remote load's report what the station received meanwhile, per second
/// of the station's clock, and the station's interrupt and NET_RX softirq rates.
fn add_station_evidence(
    loads: &mut [rtlab_results::load::LoadReport],
    before: &rtlab_station::protocol::StationCounters,
    after: &rtlab_station::protocol::StationCounters,
) {
    use rtlab_results::load::Intensity;
    let seconds = after.station_time_ns.saturating_sub(before.station_time_ns) as f64 / 1e9;
    if seconds <= 0.0 {
        return;
    }
    let rate = |a: u64, b: u64| a.saturating_sub(b) as f64 / seconds;
    for load in loads.iter_mut().filter(|l| l.name.starts_with("remote:")) {
        let received = match load.name.as_str() {
            "remote:udp-flood" => Some(Intensity::new(
                "station: datagrams/s received",
                rate(after.sink_packets, before.sink_packets),
                "packets/s",
            )),
            "remote:comms" => {
                Some(Intensity::new("station: MB/s echoed", rate(after.comms_bytes, before.comms_bytes) / 1e6, "MB/s"))
            }
            "remote:ping-flood" => Some(Intensity::new(
                "station: echo replies/s (its kernel)",
                rate(after.icmp_echo_replies, before.icmp_echo_replies),
                "packets/s",
            )),
            _ => None,
        };
        load.achieved.extend(received);
        load.achieved.push(Intensity::new("station: interrupts/s", rate(after.interrupts, before.interrupts), "1/s"));
        load.achieved.push(Intensity::new(
            "station: NET_RX softirqs/s",
            rate(after.net_rx_softirqs, before.net_rx_softirqs),
            "1/s",
        ));
    }
}

/// What became of a scenario's raw samples: written, and not written because the raw
/// writer stopped for want of space (rtlab_probe::raw::reserve_bytes).
#[derive(Default)]
struct RawAccount {
    written: u64,
    not_written: u64,
    why: Option<String>,
}

impl RawAccount {
    fn add(&mut self, output: &ProbeOutput) {
        use rtlab_probe::workers::{RAW_NOT_WRITTEN, RAW_STOPPED};
        use rtlab_probe::Detail;
        self.written += output.raw_written.iter().map(|(_, n)| n).sum::<u64>();
        for thread in &output.threads {
            for (key, value) in &thread.details {
                match (key.as_str(), value) {
                    (RAW_NOT_WRITTEN, Detail::Int(n)) => self.not_written += u64::try_from(*n).unwrap_or(0),
                    (RAW_STOPPED, Detail::Text(why)) if self.why.is_none() => self.why = Some(why.clone()),
                    _ => {}
                }
            }
        }
    }

    /// The scenario's `raw_stopped` sentence, when samples were not written.
    fn stopped(&self) -> Option<String> {
        use rtlab_analysis::units::thousands;
        (self.not_written > 0).then(|| {
            format!(
                "raw samples stopped at {}: {}; {} samples not written (counted as lost; the histograms hold every \
                 sample)",
                thousands(self.written),
                self.why.as_deref().unwrap_or("the file system was full"),
                thousands(self.not_written)
            )
        })
    }
}

/// One probe of a scenario to measure: what it is built with, its split (with --split) and
/// the title of its progress bar.
struct ProbeJob<'a> {
    choice: ProbeChoice,
    context: &'a BuildContext,
    /// With --split: the split and its backend.
    split: Option<(StreamingSplit, &'a crate::split_run::Backend)>,
    /// The noise probe's attribution, when its CPUs can be traced.
    noise: Option<rtlab_probe::noise_trace::NoiseTrace>,
    title: &'a str,
}

/// The noise probe's attribution when its session ran, or why it could not.
type NoiseOutcome = Option<Result<crate::noise_run::NoiseTraced, String>>;

/// A split probe's trace session, stopped, and its split, to be finished.
type Traced = (crate::split_run::SessionSummary, StreamingSplit);

/// One probe in a scenario: build it (allocating everything its threads touch), sample on
/// a driver thread while showing progress and watching the loads, and return its output
/// with the seconds it sampled.
fn measure_probe(
    plan: &RunPlan,
    job: ProbeJob<'_>,
    host: &mut Option<LoadHost>,
    scenario: &mut Scenario,
    stop: &Arc<AtomicBool>,
) -> anyhow::Result<(ProbeOutput, f64, Option<Traced>, NoiseOutcome)> {
    let ProbeJob { choice, context, split, noise, title } = job;
    let simulated = plan.simulate.is_some();
    let probe: Box<dyn Probe> = probe_build::build(plan, choice, context).map_err(|e| probe_error(choice, e))?;
    let live = probe.live();
    // Tracing starts after the probe is built (its allocations are not traced) and stops
    // when it has joined; the session's guard removes its tracefs instance on every path.
    let session = match split {
        Some((split, backend)) => {
            let split = Arc::new(std::sync::Mutex::new(split));
            Some((crate::split_run::start_tracing(backend, context.trace_dir.as_deref(), split.clone())?, split))
        }
        None => None,
    };
    // The noise probe's session: one that cannot start leaves the gaps unattributed.
    let noise_session = noise.map(|trace| crate::noise_run::start(plan, trace));
    let started = Instant::now();
    let driver_stop = stop.clone();
    let driver = std::thread::Builder::new()
        .name("rtlab-probe".into())
        .spawn(move || (probe.run(driver_stop), Instant::now()))
        .context("cannot start the probe thread")?;
    let mut progress = Progress::new(plan, live, simulated, title.to_string(), probe_build::expected_ns(plan, choice));
    while !driver.is_finished() {
        progress.tick(started.elapsed());
        if let (Some(h), None) = (host.as_mut(), &scenario.load_failure) {
            scenario.load_failure = h.check_alive();
        }
        // A simulated probe finishes in virtual time: poll it often (--until runs many windows).
        std::thread::sleep(Duration::from_millis(if simulated { 2 } else { 100 }));
    }
    progress.finish();
    let (outcome, sampling_ended) = match driver.join() {
        Ok(joined) => joined,
        Err(_) => return Err(environment("the probe thread panicked; nothing was saved")),
    };
    let traced = match session {
        Some((session, split)) => {
            let capture = session.stop()?;
            // The session's reader has stopped and let go of the split.
            let split = Arc::try_unwrap(split)
                .map_err(|_| environment("--split: the trace reader still held the split; nothing was saved"))?
                .into_inner()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            Some((capture, split))
        }
        None => None,
    };
    let noise_traced = noise_session.map(|session| session.and_then(crate::noise_run::NoiseSession::stop));
    let output = outcome.map_err(|e| probe_error(choice, e))?;
    let elapsed = if simulated {
        // Virtual time: per period (jitter runs its periods one after another), the
        // measured window of the longest thread; the periods add up.
        let mut windows: Vec<(u64, f64)> = Vec::new();
        for t in &output.threads {
            let window = t.cycles as f64 * t.interval_ns as f64 / 1e9;
            match windows.iter_mut().find(|(interval, _)| *interval == t.interval_ns) {
                Some((_, longest)) => *longest = longest.max(window),
                None => windows.push((t.interval_ns, window)),
            }
        }
        windows.iter().map(|(_, w)| w).sum()
    } else {
        // The probe thread's own end time: the main thread polls and may notice it late.
        sampling_ended.duration_since(started).as_secs_f64()
    };
    Ok((output, elapsed, traced, noise_traced))
}

/// `--until`: the probe of a scenario measured window after window (each a whole run of the
/// probe, so the real-time loop is the ordinary one), merged, and judged between windows;
/// stops when the statistic has converged, at --max-duration, or on a stop request.
fn measure_windows(
    plan: &RunPlan,
    until: &crate::until::UntilPlan,
    job: ProbeJob<'_>,
    host: &mut Option<LoadHost>,
    scenario: &mut Scenario,
    stop: &Arc<AtomicBool>,
) -> anyhow::Result<(ProbeOutput, f64, rtlab_analysis::convergence::Convergence)> {
    let ProbeJob { choice, context, title, .. } = job;
    let mut merged: Option<ProbeOutput> = None;
    let (mut elapsed_s, mut curve, mut rule) = (0.0f64, Vec::new(), None);
    for window in 0u64.. {
        let remaining_ns = until.max_duration_ns.saturating_sub((elapsed_s * 1e9).round() as u64);
        // The first window always runs: a scenario has an output even when stopped at once.
        if window > 0 && (stop.load(Ordering::SeqCst) || remaining_ns < plan.interval_ns.max(1_000_000)) {
            break;
        }
        let mut window_plan = plan.clone();
        window_plan.duration_ns = Some(until.window_ns.min(remaining_ns));
        window_plan.duration_explicit = true;
        window_plan.samples = None;
        window_plan.warmup = if window == 0 { plan.warmup } else { 0 };
        // A simulated clock draws a new stream per window (the same seed would repeat it).
        let mut clock = context.clock;
        if let ClockKind::Simulated { seed, .. } = &mut clock {
            *seed = seed.wrapping_add(window.wrapping_mul(0x9E37_79B9));
        }
        let window_context = BuildContext {
            setup: context.setup,
            raw_dir: None,
            clock,
            trace_dir: None,
            split_tap: None,
            remote_delta: context.remote_delta,
        };
        let window_title = format!("{title} · window {}", window + 1);
        let window_job = ProbeJob { choice, context: &window_context, split: None, noise: None, title: &window_title };
        let (output, elapsed, _, _) = measure_probe(&window_plan, window_job, host, scenario, stop)?;
        elapsed_s += elapsed;
        match merged.as_mut() {
            Some(m) => crate::until::merge_window(m, output)?,
            None => merged = Some(output),
        }
        let Some(so_far) = merged.as_ref() else { break };
        let measurements = measurements_of(so_far, &scenario.name, &plan.output)?;
        let rule = rule.get_or_insert_with(|| {
            let main = measurements.first().map(|m| m.metric.clone()).unwrap_or_default();
            crate::until::rule_of(Some(until), &main)
        });
        if let Some(point) = crate::until::point(rule, &measurements, elapsed_s) {
            progress::note(
                plan,
                &format!(
                    "{}: {} {} after {}",
                    scenario.name,
                    rule.statistic,
                    point.half_width.map_or("not bounded yet".to_string(), rtlab_analysis::convergence::percent_text),
                    rtlab_analysis::exceedance::format_interval(elapsed_s)
                ),
            );
            curve.push(point);
        }
        if rule.converged(&curve) || merged.as_ref().is_some_and(|m| m.threads.iter().any(|t| t.interrupted)) {
            break;
        }
    }
    let output = merged.ok_or_else(|| environment("--until: no window was measured"))?;
    let rule = rule.unwrap_or_else(|| crate::until::rule_of(Some(until), ""));
    let interrupted = stop.load(Ordering::SeqCst);
    Ok((output, elapsed_s, crate::until::decide_until(&rule, until, curve, elapsed_s, interrupted)))
}

fn format_ns(ns: u64) -> String {
    format!("{:.1} s", ns as f64 / 1e9)
}

fn measurements_of(output: &ProbeOutput, scenario: &str, dir: &Path) -> anyhow::Result<Vec<Measurement>> {
    let mut measurements = Vec::new();
    for thread in &output.threads {
        for metric in &thread.metrics {
            let raw = metric.raw_file.as_ref();
            let written = raw.map(|path| output.raw_written.iter().find(|(p, _)| p == path).map_or(0, |(_, n)| *n));
            measurements.push(Measurement {
                scenario: scenario.to_string(),
                probe: output.probe.clone(),
                metric: metric.metric.clone(),
                cpu: thread.cpu,
                thread: thread.thread_name.clone(),
                count: metric.moments.count,
                cycles: thread.cycles,
                overruns: thread.overruns,
                lost: thread.lost,
                interval_ns: thread.interval_ns,
                summary: Summary::from_parts(&metric.histogram, &metric.moments),
                moments: metric.moments,
                histogram: metric.histogram.encode()?,
                per_second_max_ns: metric.per_second_max.clone(),
                block_s: thread.block_s,
                raw_file: raw.map(|p| p.strip_prefix(dir).unwrap_or(p).to_string_lossy().into_owned()),
                raw_samples: written,
                details: thread.details.iter().cloned().collect(),
                sequence_ns: metric.sequence.clone(),
            });
        }
    }
    Ok(measurements)
}
