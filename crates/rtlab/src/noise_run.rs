//! `rtlab run -P noise`: the kernel trace that attributes the busy loop's gaps (on by
//! default where tracefs is usable: as root rtlab mounts it for the run, as `--split` does),
//! the session around each noise probe, and the run.json `noise` section.

use crate::experiment::RunPlan;
use crate::split_run::MountedTracing;
use rtlab_probe::noise::{GAPS, LARGEST_GAP_NS, NOISE_NS, RUNTIME_NS, THRESHOLD_NS};
use rtlab_probe::noise_trace::{CauseTally, LoopPriority, NoiseAccount, NoiseTrace};
use rtlab_probe::raw::SampleTap;
use rtlab_probe::traced::kernel_prio;
use rtlab_probe::{Detail, ProbeOutput};
use rtlab_results::noise::{NoiseCpu, NoiseRun};
use rtlab_sys::tracefs::{self, TraceConfig, TraceSession};
use std::sync::{Arc, Mutex};

/// Ring buffer per traced CPU: a busy loop's CPU produces few events (its ticks and what
/// interrupts it), so 4 MiB holds seconds of them even when the reader is held off.
const BUFFER_KB_PER_CPU: usize = 4 * 1024;

/// Whether the gaps of this run can be attributed, and tracefs if this run mounted it.
pub struct NoiseTracing {
    _mount: Option<MountedTracing>,
    /// Ok: tracefs is usable; Err: why the gaps stay unattributed.
    pub usable: Result<(), String>,
}

/// For a run with the noise probe (not simulated): mounts tracefs as root when needed and
/// checks that the tracefs session can be used. Never an error: without tracing the gaps
/// are recorded and said to be unattributed.
pub fn prepare(plan: &RunPlan) -> Option<NoiseTracing> {
    if plan.simulate.is_some() || !plan.probes.contains(&crate::probe_plan::ProbeChoice::Noise) {
        return None;
    }
    let mount = match crate::split_run::mount_tracing_for("the noise probe's attribution") {
        Ok(m) => Some(m),
        Err(e) => {
            return Some(NoiseTracing { _mount: None, usable: Err(format!("tracefs could not be mounted: {e}")) })
        }
    };
    let usable = match tracefs::support().into_iter().find(|b| b.name == "tracefs") {
        Some(b) if b.usable => Ok(()),
        Some(b) => Err(tracefs::unprivileged_blocker().unwrap_or(b.detail)),
        None => Err("this rtlab has no tracefs session".into()),
    };
    Some(NoiseTracing { _mount: mount, usable })
}

/// The attribution of one noise probe: the tap its gaps go through and the consumer of the
/// trace.
pub fn attribution(plan: &RunPlan) -> (SampleTap, NoiseTrace) {
    let (tap, gaps) = SampleTap::new();
    let priority = LoopPriority {
        realtime: plan.policy.is_realtime(),
        kernel_prio: kernel_prio(plan.policy.is_realtime(), plan.priority),
    };
    (tap, NoiseTrace::new(gaps, priority, &plan.cpus))
}

/// A running session feeding the attribution.
pub struct NoiseSession {
    session: TraceSession,
    trace: Arc<Mutex<NoiseTrace>>,
}

/// Starts tracing the noise probe's CPUs; an error says why (the gaps then stay
/// unattributed).
pub fn start(plan: &RunPlan, trace: NoiseTrace) -> Result<NoiseSession, String> {
    let trace = Arc::new(Mutex::new(trace));
    let config = TraceConfig { cpus: plan.cpus.clone(), buffer_kb_per_cpu: BUFFER_KB_PER_CPU, spool_dir: None };
    // The session's reader thread must not share a CPU with a busy loop (it would run only
    // while the loop is throttled): it is started from a thread kept to the other CPUs.
    let housekeeping: Vec<usize> = rtlab_sys::sched::online_cpus()
        .map(|online| online.into_iter().filter(|c| !plan.cpus.contains(c)).collect())
        .unwrap_or_default();
    let shared = trace.clone();
    let session = std::thread::spawn(move || {
        if !housekeeping.is_empty() {
            let _ = rtlab_sys::sched::restrict_current_thread(&housekeeping);
        }
        TraceSession::start_streaming(config, shared)
    })
    .join()
    .map_err(|_| "the thread starting the trace session panicked".to_string())?;
    session.map(|session| NoiseSession { session, trace }).map_err(|e| e.to_string())
}

/// What a stopped session attributed, and what it did.
pub struct NoiseTraced {
    pub account: NoiseAccount,
    pub description: String,
    pub events_lost: u64,
}

impl NoiseSession {
    /// Stops tracing and works through the last gaps.
    pub fn stop(self) -> Result<NoiseTraced, String> {
        let capture = self.session.stop().map_err(|e| format!("the kernel trace could not be collected: {e}"))?;
        let trace = Arc::try_unwrap(self.trace)
            .map_err(|_| "the trace reader still held the attribution".to_string())?
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Ok(NoiseTraced { account: trace.finish(), description: capture.description, events_lost: capture.events_lost })
    }
}

fn detail_u64(details: &[(String, Detail)], key: &str) -> u64 {
    details
        .iter()
        .find(|(k, _)| k == key)
        .and_then(|(_, v)| match v {
            Detail::Int(n) => u64::try_from(*n).ok(),
            _ => None,
        })
        .unwrap_or(0)
}

/// Per CPU of the finished probe: its figures and the gaps' causes. Gaps that did not reach
/// the attribution (no trace: `untraced` says why; or lost from the sampling thread's ring)
/// are unattributed, never "hardware".
pub fn cpus_of(
    output: &ProbeOutput,
    scenario: &str,
    traced: Option<&NoiseTraced>,
    untraced: Option<&str>,
) -> Vec<NoiseCpu> {
    output
        .threads
        .iter()
        .map(|t| {
            let d = &t.details;
            let (runtime_ns, noise_ns, gaps) =
                (detail_u64(d, RUNTIME_NS), detail_u64(d, NOISE_NS), detail_u64(d, GAPS));
            let mut tally =
                traced.and_then(|tr| tr.account.cpus.get(&t.cpu)).cloned().unwrap_or_else(CauseTally::default);
            let missing_gaps = gaps.saturating_sub(tally.gaps);
            let missing_ns = noise_ns.saturating_sub(tally.ns);
            let why = match untraced {
                Some(_) => "no kernel tracing",
                None => "lost before the attribution (sampling ring full)",
            };
            tally.add_unattributed(why, missing_gaps, missing_ns);
            NoiseCpu {
                scenario: scenario.to_string(),
                cpu: t.cpu,
                threshold_ns: detail_u64(d, THRESHOLD_NS),
                runtime_ns,
                noise_ns,
                noise_percent: NoiseCpu::percent(noise_ns, runtime_ns),
                gaps,
                largest_gap_ns: detail_u64(d, LARGEST_GAP_NS),
                causes: tally.sorted(),
            }
        })
        .collect()
}

/// The kernel's RT throttling, in words, for this run's policy.
pub fn rt_throttling_text(plan: &RunPlan) -> String {
    if !plan.policy.is_realtime() {
        return "the busy loop ran SCHED_OTHER: other tasks share its CPU, and their time is charged to 'thread'"
            .into();
    }
    match rtlab_sys::sysinfo::rt_throttling() {
        Some((runtime, _)) if runtime < 0 => {
            "RT throttling is off (sched_rt_runtime_us = -1): the busy loop keeps its CPU".into()
        }
        Some((runtime, period)) => {
            let held_ms = (period - runtime).max(0) as f64 / 1_000.0;
            format!(
                "sched_rt_runtime_us = {runtime} of sched_rt_period_us = {period}: the kernel may hold a real-time busy \
                 loop off its CPU for {held_ms:.0} ms of every {:.0} ms (RT throttling; from Linux 6.12 the fair \
                 server does so only while normal tasks wait there). That time is charged to 'RT throttling', not to \
                 the hardware",
                period as f64 / 1_000.0
            )
        }
        None => "the RT throttling settings could not be read".into(),
    }
}

/// The run.json section.
pub fn section(
    plan: &RunPlan,
    tracing: &Option<NoiseTracing>,
    description: Option<String>,
    notes: &[String],
    cpus: Vec<NoiseCpu>,
) -> NoiseRun {
    let cpus_choice = plan.noise_cpus.clone().unwrap_or_default();
    let attributed = tracing.as_ref().is_some_and(|t| t.usable.is_ok()) && notes.is_empty();
    let tracing_text = match (tracing.as_ref().map(|t| &t.usable), description) {
        (Some(Ok(())), Some(d)) if notes.is_empty() => d,
        (Some(Ok(())), d) => format!("{}{}", d.map(|d| format!("{d}; ")).unwrap_or_default(), notes.join("; ")),
        (Some(Err(why)), _) => format!("not traced, the gaps are unattributed (not \"hardware\"): {why}"),
        (None, _) => "not traced (simulated run): the gaps are unattributed".into(),
    };
    NoiseRun { attributed, tracing: tracing_text, rt_throttling: rt_throttling_text(plan), cpus_choice, cpus }
}
