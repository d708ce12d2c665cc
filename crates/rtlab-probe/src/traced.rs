//! A probe's samples split with the kernel trace taken while it ran (`rtlab run --split`):
//! reads the probe's raw samples, finds each measuring thread in the trace, cuts every
//! sample with [`crate::split`], records the parts as metrics of their own and explains the
//! worst samples.
//!
//! Main types:
//! - [`SplitSettings`]: which samples to explain and the measuring threads' priority.
//! - [`ThreadSplit`]: per thread, how many samples were split, why the others were not, how
//!   exactly the parts add up, and the explanations.
//! - [`apply_split`]: adds the part metrics to a finished [`ProbeOutput`] and returns the
//!   per-thread account.

use crate::raw::{read_all, RawSample};
use crate::recorder::MetricRecorder;
use crate::split::{self, Explanation, SplitParts, Stimulus, Unsplit, WakeSample};
use crate::{ProbeError, ProbeOutput};
pub use rtlab_results::split::{part_metrics, SplitCounts};
use rtlab_sys::tracefs::event::{EventKind, KernelEvent};
use rtlab_sys::tracefs::TraceCapture;
use std::collections::BTreeSet;

/// Which samples to explain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SplitSettings {
    /// Explain samples above this; None: each thread's `default_explained` worst.
    pub explain_above_ns: Option<u64>,
    /// At most this many explanations per thread (the worst).
    pub max_explained: usize,
    pub default_explained: usize,
    /// The measuring threads' kernel priority (SCHED_FIFO p: 99 - p; SCHED_OTHER: 120).
    pub thread_prio: i32,
    pub histogram_max_ns: u64,
}

/// How one thread's samples were split, and its explained spikes.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadSplit {
    pub counts: SplitCounts,
    /// The first sample's time (raw `expected_ns`): explanations are placed from here.
    pub window_start_ns: u64,
    /// Samples above `explain_above_ns` (0 without a threshold).
    pub above_threshold: u64,
    pub explanations: Vec<Explanation>,
}

/// What the split of one probe found.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeSplitAccount {
    pub threads: Vec<ThreadSplit>,
    /// Kernel events decoded for the split (the measuring threads' CPUs; for net all CPUs).
    pub events: u64,
}

/// The kernel's priority of a thread at `policy` `priority` (what `sched_switch` reports).
pub fn kernel_prio(realtime: bool, priority: i32) -> i32 {
    if realtime {
        99 - priority
    } else {
        120
    }
}

/// Splits every thread of `output` (a `timer` or `net` probe run with raw samples) with
/// `capture`, appends the three part metrics to each thread and returns the account.
pub fn apply_split(
    output: &mut ProbeOutput,
    capture: &TraceCapture,
    settings: &SplitSettings,
) -> Result<ProbeSplitAccount, ProbeError> {
    let Some(names) = part_metrics(&output.probe) else {
        return Err(ProbeError::Config(format!("{} has no interrupt/scheduling split", output.probe)));
    };
    let stimulus = if output.probe == "net" { Stimulus::Datagram } else { Stimulus::Timer };
    let trace = |e: rtlab_sys::tracefs::TraceError| ProbeError::Unavailable {
        probe: output.probe.clone(),
        what: "the kernel trace".into(),
        reason: e.to_string(),
    };
    // A datagram wakes its receiver from the sender's CPU: the split needs every CPU.
    let merged = match stimulus {
        Stimulus::Datagram => Some(capture.all_events().map_err(trace)?),
        Stimulus::Timer => None,
    };
    let mut accounts = Vec::new();
    let mut events = merged.as_ref().map_or(0, |m| m.len() as u64);
    for thread in &mut output.threads {
        let cpu_events = capture.events_of_cpu(thread.cpu).map_err(trace)?;
        if merged.is_none() {
            events += cpu_events.len() as u64;
        }
        let (at, samples) = wake_samples(thread, stimulus)?;
        let comm = format!("rtlab-{}/{}", output.probe, thread.cpu);
        let tid = thread_tid(&cpu_events, thread.cpu as u32, &comm, stimulus, &samples);
        let results = match tid {
            Some(tid) => split::split_samples(merged.as_deref().unwrap_or(&cpu_events), tid, stimulus, &samples),
            None => vec![Err(Unsplit::NoSwitchIn); samples.len()],
        };
        let planned_ns = thread.cycles.saturating_mul(thread.interval_ns).max(1);
        let mut recorders = names
            .iter()
            .map(|name| MetricRecorder::new(*name, settings.histogram_max_ns, planned_ns, None, 0))
            .collect::<Result<Vec<_>, _>>()?;
        let window_start = at.iter().copied().min().unwrap_or(0);
        for r in &mut recorders {
            r.start(window_start);
        }
        let mut account = ThreadSplit {
            counts: SplitCounts {
                cpu: thread.cpu,
                tid,
                samples: samples.len() as u64,
                split: 0,
                unsplit: Vec::new(),
                sum_within_1us: 0,
                switch_in_inferred: 0,
                max_sum_error_ns: 0,
            },
            window_start_ns: window_start,
            above_threshold: 0,
            explanations: Vec::new(),
        };
        for ((sample, result), &at_ns) in samples.iter().zip(&results).zip(&at) {
            match result {
                Ok(parts) => {
                    account.counts.split += 1;
                    account.counts.switch_in_inferred += u64::from(parts.switch_in_inferred);
                    let error = (parts.first_ns + parts.sched_ns + parts.return_ns - sample.latency_ns()).abs();
                    account.counts.max_sum_error_ns = account.counts.max_sum_error_ns.max(error);
                    if error <= 1_000 {
                        account.counts.sum_within_1us += 1;
                    }
                    let cpu = thread.cpu as u32;
                    recorders[0].record(at_ns, parts.first_ns, cpu, 0);
                    recorders[1].record(at_ns, parts.sched_ns, cpu, 0);
                    recorders[2].record(at_ns, parts.return_ns, cpu, 0);
                }
                Err(reason) => match account.counts.unsplit.iter_mut().find(|(r, _)| r == reason) {
                    Some((_, n)) => *n += 1,
                    None => account.counts.unsplit.push((*reason, 1)),
                },
            }
        }
        if let Some(tid) = tid {
            let chosen = spikes_to_explain(&samples, settings, &mut account.above_threshold);
            account.explanations = chosen
                .into_iter()
                .map(|i| {
                    let parts: Option<SplitParts> = results[i].ok();
                    split::explain(&cpu_events, tid, settings.thread_prio, stimulus, &samples[i], parts, &capture.steal)
                })
                .collect();
        }
        thread.metrics.extend(recorders.into_iter().map(MetricRecorder::finish));
        accounts.push(account);
    }
    Ok(ProbeSplitAccount { threads: accounts, events })
}

/// The measuring thread's id in the trace. Another rtlab running at the same time has
/// threads of the same name on the same CPU: for a timer, the one whose armed expiries are
/// this thread's samples' due times is it.
fn thread_tid(events: &[KernelEvent], cpu: u32, comm: &str, stimulus: Stimulus, samples: &[WakeSample]) -> Option<i32> {
    let named = split::find_tid(events, cpu, comm)?;
    if stimulus != Stimulus::Timer {
        return Some(named);
    }
    let wanted = split::truncated_comm(comm);
    let mut candidates: Vec<i32> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::SchedSwitch { next_comm, next_pid, .. }
                if e.cpu == cpu && split::truncated_comm(next_comm) == wanted =>
            {
                Some(*next_pid)
            }
            _ => None,
        })
        .collect();
    candidates.sort_unstable();
    candidates.dedup();
    if candidates.len() < 2 {
        return Some(named);
    }
    let due: BTreeSet<i64> = samples.iter().map(|s| s.due_ns as i64).collect();
    let armed_for_us = |pid: i32| {
        events
            .iter()
            .filter(|e| e.pid == pid)
            .filter(|e| match e.kind {
                EventKind::HrtimerStart { expires_ns, .. } => {
                    due.range(expires_ns.saturating_sub(split::MAX_TIMER_SLACK_NS)..=expires_ns).next().is_some()
                }
                _ => false,
            })
            .count()
    };
    candidates.into_iter().max_by_key(|&pid| armed_for_us(pid))
}

/// Indices of the samples to explain, worst first: every sample above the threshold (the
/// worst `max_explained` of them), else the `default_explained` worst.
fn spikes_to_explain(samples: &[WakeSample], settings: &SplitSettings, above: &mut u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..samples.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(samples[i].latency_ns()));
    let keep = match settings.explain_above_ns {
        Some(threshold) => {
            let n = samples.iter().filter(|s| s.latency_ns() > threshold as i64).count();
            *above = n as u64;
            n.min(settings.max_explained)
        }
        None => settings.default_explained.min(samples.len()),
    };
    order.truncate(keep);
    order
}

/// The thread's samples as wake-ups, with the time each is recorded at (its raw
/// `expected_ns`), from its raw sample files.
fn wake_samples(thread: &crate::ThreadOutput, stimulus: Stimulus) -> Result<(Vec<u64>, Vec<WakeSample>), ProbeError> {
    let raw_of = |metric: &str| -> Result<Vec<RawSample>, ProbeError> {
        let file = thread
            .metrics
            .iter()
            .find(|m| m.metric == metric)
            .and_then(|m| m.raw_file.as_ref())
            .ok_or_else(|| ProbeError::Config(format!("--split needs the raw samples of {metric}")))?;
        Ok(read_all(file)?)
    };
    let cpu = thread.cpu as u32;
    match stimulus {
        Stimulus::Timer => {
            let raw = raw_of("timer.latency")?;
            let at = raw.iter().map(|s| s.expected_ns).collect();
            let samples = raw
                .iter()
                .map(|s| WakeSample {
                    cpu,
                    due_ns: s.expected_ns,
                    wake_ns: s.expected_ns.saturating_add_signed(s.value_ns),
                })
                .collect();
            Ok((at, samples))
        }
        Stimulus::Datagram => {
            // The three net files align record by record (all recorded at the send's
            // monotonic time): wake = send + latency; receive = wake - activation (the
            // activation is a CLOCK_REALTIME difference, the same length on CLOCK_MONOTONIC
            // within the sample).
            let activation = raw_of("net.activation")?;
            let latency = raw_of("net.latency")?;
            let mut at = Vec::with_capacity(activation.len());
            let mut samples = Vec::with_capacity(activation.len());
            for (a, l) in activation.iter().zip(&latency) {
                if a.expected_ns != l.expected_ns {
                    continue;
                }
                let wake_ns = l.expected_ns.saturating_add_signed(l.value_ns);
                at.push(a.expected_ns);
                samples.push(WakeSample { cpu, due_ns: wake_ns.saturating_add_signed(-a.value_ns), wake_ns });
            }
            Ok((at, samples))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(ts_ns: u64, pid: i32, kind: EventKind) -> KernelEvent {
        KernelEvent { ts_ns, cpu: 0, pid, kind }
    }

    fn switch_to(ts_ns: u64, pid: i32) -> KernelEvent {
        event(
            ts_ns,
            0,
            EventKind::SchedSwitch {
                prev_comm: "swapper/0".into(),
                prev_pid: 0,
                prev_prio: 120,
                prev_state: 0,
                next_comm: "rtlab-timer/0".into(),
                next_pid: pid,
                next_prio: 4,
            },
        )
    }

    fn armed(ts_ns: u64, pid: i32, expires_ns: i64) -> KernelEvent {
        event(ts_ns, pid, EventKind::HrtimerStart { timer: 1, function: 2, expires_ns })
    }

    #[test]
    fn another_rtlab_s_thread_of_the_same_name_is_told_apart_by_its_expiries() {
        // Thread 7 (another rtlab) is switched in more often; thread 9 armed our due times.
        let events = vec![
            switch_to(10, 7),
            switch_to(20, 7),
            switch_to(30, 7),
            armed(40, 7, 5_000_500),
            switch_to(50, 9),
            armed(60, 9, 1_000_000),
            armed(70, 9, 2_000_001),
        ];
        let samples = [
            WakeSample { cpu: 0, due_ns: 1_000_000, wake_ns: 1_000_050 },
            WakeSample { cpu: 0, due_ns: 2_000_000, wake_ns: 2_000_050 },
        ];
        assert_eq!(split::find_tid(&events, 0, "rtlab-timer/0"), Some(7));
        assert_eq!(thread_tid(&events, 0, "rtlab-timer/0", Stimulus::Timer, &samples), Some(9));
        // A name with no other thread: the only one.
        assert_eq!(thread_tid(&events[4..], 0, "rtlab-timer/0", Stimulus::Timer, &samples), Some(9));
        assert_eq!(thread_tid(&events, 0, "rtlab-timer/1", Stimulus::Timer, &samples), None);
    }
}
