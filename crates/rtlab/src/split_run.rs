//! `rtlab run --split`: the backend choice (exit 3 when none is usable), the tracing session
//! around each timer/net probe, the split of its samples, and the run.json `split` section.

use crate::cli::SplitBackendArg;
use crate::errors::environment;
use crate::experiment::RunPlan;
use crate::probe_plan::ProbeChoice;
use anyhow::Context;
use rtlab_probe::raw::SampleTap;
use rtlab_probe::traced::{kernel_prio, SplitSettings, SplitSource, StreamingSplit, ThreadSplit};
use rtlab_probe::ProbeOutput;
use rtlab_results::split::{
    ExplainedSpike, SplitCoverage, SplitOverhead, SplitRun, DEFAULT_EXPLAINED_PER_THREAD, MAX_EXPLAINED_PER_THREAD,
};
use rtlab_sys::tracefs::ebpf::EbpfSession;
use rtlab_sys::tracefs::{self, TraceConfig, TraceSession};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Ring buffer per traced CPU: seconds of events even under load, so that a reader kept off
/// the CPU for a while loses nothing.
const BUFFER_KB_PER_CPU: usize = 16 * 1024;

/// The tracing overhead measured by bench/split-overhead (docs/PERFORMANCE.md section 5),
/// per backend: median over interleaved rounds of the median timer latency with the split
/// over without, on the development machine.
pub fn measured_overhead(backend: &str) -> Option<(f64, &'static str)> {
    const SOURCE: &str = "bench/split-overhead on the development VM (2 vCPU Firecracker, 6.18 PREEMPT_DYNAMIC), 2026-11-26: median of 30 interleaved rounds (two runs of 15, order rotating) of 10 s, timer 1 ms, idle";
    match backend {
        "ebpf" => Some((1.03, SOURCE)),
        "tracefs" => Some((1.07, SOURCE)),
        _ => None,
    }
}

/// The backend chosen for this run and why.
#[derive(Debug, Clone)]
pub struct Backend {
    pub name: &'static str,
    pub choice: String,
}

impl Backend {
    /// What the split cuts samples with: the eBPF backend's records or tracefs' events.
    pub fn source(&self) -> SplitSource {
        if self.name == "ebpf" {
            SplitSource::WakeUpRecords
        } else {
            SplitSource::KernelEvents
        }
    }
}

/// The run's backend, with tracefs mounted (and the tracing lock taken) when that backend
/// reads it: the eBPF backend needs neither. The eBPF programs are loaded once first (the
/// kernel's verifier is the last word on them): where it refuses them, `ebpf` is exit 3
/// and `auto` takes tracefs.
pub fn prepare_backend(plan: &RunPlan) -> anyhow::Result<(Option<MountedTracing>, Backend)> {
    let mut auto_refused = None;
    match plan.split_backend {
        SplitBackendArg::Ebpf => {
            let backend = choose_backend(plan)?;
            return match tracefs::ebpf::check_loadable() {
                Ok(()) => Ok((None, backend)),
                Err(e) => Err(environment(format!("--split-backend ebpf: {e}"))),
            };
        }
        SplitBackendArg::Auto => {
            if let Ok(backend) = choose_backend(plan) {
                if backend.source() == SplitSource::WakeUpRecords {
                    match tracefs::ebpf::check_loadable() {
                        Ok(()) => return Ok((None, backend)),
                        Err(e) => auto_refused = Some(e.to_string()),
                    }
                }
            }
        }
        SplitBackendArg::Tracefs => {}
    }
    let mount = mount_tracing()?;
    let backend = match auto_refused {
        Some(why) => choose_named("tracefs", &format!("--split-backend auto: tracefs, not ebpf: {why}"))?,
        None => choose_backend(plan)?,
    };
    let backend = with_mount_note(backend, Some(&mount));
    Ok((Some(mount), backend))
}

/// The backend `--split-backend` asks for if it is usable; else exit 3 naming what it
/// lacks (not root: what every backend lacks, said once). `auto`: ebpf where it can do the
/// plan's split (only timer probes, no `--explain-above`) and is usable, else tracefs.
pub fn choose_backend(plan: &RunPlan) -> anyhow::Result<Backend> {
    let name = match plan.split_backend {
        SplitBackendArg::Tracefs => "tracefs",
        SplitBackendArg::Ebpf => "ebpf",
        SplitBackendArg::Auto => {
            let timer_only = plan.probes.iter().all(|p| *p == ProbeChoice::Timer);
            let why_not = if !timer_only {
                Some("the ebpf backend splits timer samples only".to_string())
            } else if plan.explain_above_ns.is_some() {
                Some("--explain-above needs every event".to_string())
            } else {
                tracefs::ebpf::check_support().err().map(|e| e.to_string())
            };
            match why_not {
                None => return choose_named("ebpf", "--split-backend auto: ebpf can do this split"),
                Some(why) => {
                    return choose_named("tracefs", &format!("--split-backend auto: tracefs, not ebpf: {why}"))
                }
            }
        }
    };
    choose_named(name, "")
}

/// The backend `name` if usable, its choice text opening with `why` (if any).
fn choose_named(name: &'static str, why: &str) -> anyhow::Result<Backend> {
    let Some(offered) = tracefs::support().into_iter().find(|b| b.name == name) else {
        return Err(environment(format!("--split: this rtlab has no {name} backend")));
    };
    if offered.usable {
        let choice = format!("{} ({})", offered.name, offered.detail);
        let choice = if why.is_empty() { choice } else { format!("{why}; {choice}") };
        return Ok(Backend { name: offered.name, choice });
    }
    match tracefs::unprivileged_blocker() {
        // Not root: the one blocker of every tracing backend, said once, with what to do
        // (the eBPF backend's is its own).
        Some(blocker) if name != "ebpf" => Err(environment(format!("--split needs kernel tracing: {blocker}"))),
        _ => Err(environment(format!(
            "--split needs kernel tracing, which is not usable here: {}: {}",
            offered.name, offered.detail
        ))),
    }
}

/// The tracing lock of a `--split` run, and tracefs if this run mounted it; dropping it
/// unmounts what it mounted (unless another rtlab still uses it) and says so on stderr, once.
#[derive(Debug)]
pub struct MountedTracing(tracefs::mount::TracefsMount, &'static str);

impl MountedTracing {
    /// What this run mounted, if anything.
    pub fn kind(&self) -> Option<tracefs::mount::MountKind> {
        self.0.kind()
    }
}

impl Drop for MountedTracing {
    fn drop(&mut self) {
        let Some(kind) = self.0.kind() else { return };
        let mounted = kind.describe();
        match self.0.release() {
            Some(tracefs::mount::Release::Unmounted(_)) => {
                eprintln!("rtlab: mounted {mounted} for {}; unmounted at the end", self.1)
            }
            Some(tracefs::mount::Release::LeftMounted(_, why)) => {
                eprintln!("rtlab: mounted {mounted} for {}; left it mounted at the end: {why}", self.1)
            }
            None => {}
        }
    }
}

/// As root: the tracing lock for the run, and tracefs mounted when it is not (debugfs'
/// `tracing/` where only that can be mounted). Not root: nothing ([`choose_backend`] then
/// says how to mount it). A failed mount is exit 3 naming the command to run by hand.
fn mount_tracing() -> anyhow::Result<MountedTracing> {
    tracefs::mount::TracefsMount::acquire()
        .map(|m| MountedTracing(m, "the split"))
        .map_err(|e| environment(format!("--split needs kernel tracing: {e}")))
}

/// As [`mount_tracing`] for another user of the trace (`purpose`: "the noise probe's
/// attribution"); the error is the mount's own, for the caller to report.
pub fn mount_tracing_for(purpose: &'static str) -> Result<MountedTracing, tracefs::TraceError> {
    tracefs::mount::TracefsMount::acquire().map(|m| MountedTracing(m, purpose))
}

/// The backend choice with what rtlab mounted for it, for run.json's `split.backend_choice`.
fn with_mount_note(mut backend: Backend, mount: Option<&MountedTracing>) -> Backend {
    if let Some(kind) = mount.and_then(MountedTracing::kind) {
        backend.choice.push_str(&format!(
            "; tracefs was not mounted: rtlab mounted {} for this run and unmounts it at the end (unless another rtlab still traces there)",
            kind.describe()
        ));
    }
    backend
}

/// The CPUs traced: every online one (a datagram wakes its receiver from the sender's CPU).
fn traced_cpus() -> anyhow::Result<Vec<usize>> {
    rtlab_sys::sched::online_cpus().context("--split: cannot list the online CPUs")
}

/// A running split session of either backend.
pub enum SplitSession {
    Tracefs(Box<TraceSession>),
    Ebpf(EbpfSession),
}

/// What a stopped session says for run.json.
pub struct SessionSummary {
    pub events_lost: u64,
    pub description: String,
}

impl SplitSession {
    /// Stops tracing; the split has everything once this returns.
    pub fn stop(self) -> anyhow::Result<SessionSummary> {
        let collected =
            |e: tracefs::TraceError| environment(format!("--split: the kernel trace could not be collected: {e}"));
        Ok(match self {
            SplitSession::Tracefs(session) => {
                let capture = session.stop().map_err(collected)?;
                SessionSummary { events_lost: capture.events_lost, description: capture.description }
            }
            SplitSession::Ebpf(session) => {
                let capture = session.stop().map_err(collected)?;
                SessionSummary { events_lost: capture.dropped, description: capture.description }
            }
        })
    }
}

/// Starts the session of `backend` feeding `split`: tracefs traces every CPU, the pages
/// also spooled into `dir` (--raw); eBPF follows this process's timer threads.
pub fn start_tracing(
    backend: &Backend,
    dir: Option<&Path>,
    split: Arc<Mutex<StreamingSplit>>,
) -> anyhow::Result<SplitSession> {
    if backend.source() == SplitSource::WakeUpRecords {
        return EbpfSession::start(split).map(SplitSession::Ebpf).map_err(|e| environment(format!("--split: {e}")));
    }
    if let Some(dir) = dir {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let config = TraceConfig {
        cpus: traced_cpus()?,
        buffer_kb_per_cpu: BUFFER_KB_PER_CPU,
        spool_dir: dir.map(Path::to_path_buf),
    };
    TraceSession::start_streaming(config, split)
        .map(|session| SplitSession::Tracefs(Box::new(session)))
        .map_err(|e| environment(format!("--split: {e}")))
}

/// The split of `choice` (timer or net; None for a probe without one) and the tap its
/// samples reach it through.
pub fn streaming_split(
    plan: &RunPlan,
    backend: &Backend,
    choice: ProbeChoice,
) -> anyhow::Result<Option<(SampleTap, StreamingSplit)>> {
    let interval_ns = match choice {
        ProbeChoice::Timer => plan.interval_ns,
        ProbeChoice::Net => {
            (1e9 / plan.probe_settings.rates_hz.get("net").copied().unwrap_or(1_000.0)).round().max(1.0) as u64
        }
        _ => return Ok(None),
    };
    let settings = SplitSettings {
        explain_above_ns: plan.explain_above_ns,
        max_explained: MAX_EXPLAINED_PER_THREAD,
        default_explained: DEFAULT_EXPLAINED_PER_THREAD,
        thread_prio: kernel_prio(plan.policy.is_realtime(), plan.priority),
        histogram_max_ns: plan.histogram_max_ns,
    };
    let planned_ns = crate::probe_build::expected_ns(plan, choice);
    StreamingSplit::new(choice.name(), backend.source(), settings, interval_ns, planned_ns, &traced_cpus()?)
        .map(Some)
        .map_err(|e| environment(format!("--split: {e}")))
}

/// One split probe of one scenario.
#[derive(Debug, Clone)]
pub struct ProbeSplit {
    pub scenario: String,
    pub probe: String,
    pub threads: Vec<ThreadSplit>,
    pub events: u64,
    pub events_lost: u64,
    pub description: String,
}

/// Finishes `split` (the last samples and events), adding the part metrics to `output`.
pub fn split_probe(
    output: &mut ProbeOutput,
    capture: &SessionSummary,
    split: StreamingSplit,
    scenario: &str,
) -> anyhow::Result<ProbeSplit> {
    let account = split.finish(output).map_err(|e| environment(format!("--split: {e}; nothing was saved")))?;
    Ok(ProbeSplit {
        scenario: scenario.to_string(),
        probe: output.probe.clone(),
        threads: account.threads,
        events: account.events,
        events_lost: capture.events_lost,
        description: format!(
            "{}; the split worked through them during the run, holding at most {} events at once{}",
            capture.description,
            account.peak_window_events,
            match account.events_dropped {
                0 => String::new(),
                n => format!(
                    "; it dropped {n} events samples could still have needed (its window is bounded: a late \
                     reader or sample tap, or a load that traces more than the bound holds); the samples that did \
                     need them count as events lost"
                ),
            }
        ),
    })
}

/// The run.json `split` section.
pub fn section(plan: &RunPlan, backend: Backend, splits: Vec<ProbeSplit>) -> SplitRun {
    let mut coverage = Vec::new();
    let mut explanations = Vec::new();
    let mut above_threshold = 0;
    for split in &splits {
        for t in &split.threads {
            above_threshold += t.above_threshold;
            coverage.push(SplitCoverage {
                scenario: split.scenario.clone(),
                probe: split.probe.clone(),
                counts: t.counts.clone(),
            });
            explanations.extend(t.explanations.iter().map(|e| ExplainedSpike {
                scenario: split.scenario.clone(),
                probe: split.probe.clone(),
                cpu: t.counts.cpu,
                at_s: Some(e.sample.due_ns.saturating_sub(t.window_start_ns) as f64 / 1e9),
                explanation: e.clone(),
            }));
        }
    }
    SplitRun {
        backend: backend.name.to_string(),
        // Every probe of every scenario had its own session, set up alike: the first one says
        // what they all did.
        backend_detail: match (splits.first(), splits.len()) {
            (None, _) => String::new(),
            (Some(first), 1) => first.description.clone(),
            (Some(first), n) => format!("{} (one session per probe and scenario, {n} alike)", first.description),
        },
        backend_choice: backend.choice,
        overhead: measured_overhead(backend.name)
            .map(|(ratio, source)| SplitOverhead { median_ratio: ratio, source: source.into() }),
        coverage,
        events: splits.iter().map(|s| s.events).sum(),
        events_lost: splits.iter().map(|s| s.events_lost).sum(),
        explain_above_ns: plan.explain_above_ns,
        above_threshold,
        explanations,
    }
}
