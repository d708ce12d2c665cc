//! Running a probe's threads: set each one up (pin, timer slack, policy, stack), start
//! them, cut their blocking calls short when they must stop, join them, and turn a failed
//! or panicked thread into an error for the whole probe.

use crate::raw::{RawOutcome, RawWriter};
use crate::{Detail, ProbeError, ThreadOutput, ThreadSetup};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

/// The settings a thread holds while it samples; dropping restores them.
pub struct AppliedSetup {
    _affinity: Option<rtlab_sys::sched::AffinityGuard>,
    _slack: Option<rtlab_sys::slack::TimerSlackGuard>,
    _scheduling: Option<rtlab_sys::sched::SchedulingGuard>,
}

impl ThreadSetup {
    /// Applies this set-up to the calling thread: pin to `cpu`, timer slack, policy and
    /// priority (real-time policies only), stack prefault. Call it first in the thread.
    pub fn apply(&self, cpu: usize) -> Result<AppliedSetup, ProbeError> {
        let setup_err = |what, source| ProbeError::Setup { cpu, what, source };
        let affinity = if self.pin_to_cpu {
            Some(rtlab_sys::sched::AffinityGuard::pin_current_thread(cpu).map_err(|e| setup_err("pin to CPU", e))?)
        } else {
            None
        };
        let slack = match self.timer_slack_ns {
            Some(ns) => Some(
                rtlab_sys::slack::TimerSlackGuard::set_current_thread(ns)
                    .map_err(|e| setup_err("set timer slack", e))?,
            ),
            None => None,
        };
        let scheduling = if self.policy.is_realtime() {
            Some(
                rtlab_sys::sched::SchedulingGuard::set_current_thread(self.policy, self.priority)
                    .map_err(|e| setup_err("set scheduling policy", e))?,
            )
        } else {
            None
        };
        rtlab_sys::memory::prefault_stack(self.prefault_stack_bytes);
        Ok(AppliedSetup { _affinity: affinity, _slack: slack, _scheduling: scheduling })
    }
}

/// One thread of a probe. `body` returns the thread's measurements, or None for a thread
/// that measures nothing itself (a trigger).
pub struct Worker {
    pub cpu: usize,
    /// Thread name (at most 15 bytes are kept by the kernel).
    pub name: String,
    pub body: Box<dyn FnOnce() -> Result<Option<ThreadOutput>, ProbeError> + Send>,
}

/// The threads' outputs in worker order, and the samples written per raw file.
pub type WorkersOutput = (Vec<ThreadOutput>, Vec<(PathBuf, u64)>);

/// How the threads of a probe end.
pub enum Ending {
    /// Each thread ends on its own (the timer probe's threads on each CPU).
    Independent,
    /// The threads depend on each other (a trigger and its receiver): when one finishes,
    /// or a stop is requested, `group_stop` is set and the others are woken. The threads
    /// watch `group_stop`, not the run's stop flag.
    Coupled { group_stop: Arc<AtomicBool> },
}

/// Starts the workers, waits for them, finishes the raw writer. The blocking calls of the
/// threads are cut short with [`rtlab_sys::clock::WAKE_SIGNAL`] (they see EINTR) when they
/// must stop, so a stop never waits for a long period or a stimulus that will not come.
/// Returns the threads' outputs in worker order and the samples written per raw file.
pub fn run_workers(
    workers: Vec<Worker>,
    stop: &Arc<AtomicBool>,
    ending: Ending,
    writer: Option<RawWriter>,
    wake_signal: bool,
) -> Result<WorkersOutput, ProbeError> {
    if wake_signal {
        let cpu = workers.first().map_or(0, |w| w.cpu);
        rtlab_sys::clock::install_wake_handler().map_err(|source| ProbeError::Setup {
            cpu,
            what: "install the wake-up signal handler",
            source,
        })?;
    }
    let mut handles = Vec::with_capacity(workers.len());
    let mut spawn_error = None;
    for worker in workers {
        let cpu = worker.cpu;
        match std::thread::Builder::new().name(worker.name).spawn(worker.body) {
            Ok(handle) => handles.push((cpu, handle)),
            Err(source) => {
                spawn_error = Some(ProbeError::Setup {
                    cpu,
                    what: "spawn thread",
                    source: rtlab_sys::SysError::Os { op: "spawn", source },
                });
                break;
            }
        }
    }
    if spawn_error.is_some() {
        // The started threads must not wait for a peer that never came.
        stop.store(true, Relaxed);
        if let Ending::Coupled { group_stop } = &ending {
            group_stop.store(true, Relaxed);
        }
    }
    if wake_signal {
        use std::os::unix::thread::JoinHandleExt;
        // Poll slowly while sampling (this thread's wake-ups are interference too), quickly
        // once the threads must stop.
        while handles.iter().any(|(_, h)| !h.is_finished()) {
            let ending_now = match &ending {
                Ending::Independent => stop.load(Relaxed),
                Ending::Coupled { group_stop } => {
                    if stop.load(Relaxed) || handles.iter().any(|(_, h)| h.is_finished()) {
                        group_stop.store(true, Relaxed);
                    }
                    group_stop.load(Relaxed)
                }
            };
            if ending_now {
                for (_, handle) in handles.iter().filter(|(_, h)| !h.is_finished()) {
                    let _ = rtlab_sys::clock::wake_thread(handle.as_pthread_t());
                }
            }
            std::thread::sleep(Duration::from_millis(if ending_now { 20 } else { 100 }));
        }
    }
    let mut outputs = Vec::with_capacity(handles.len());
    let mut first_error = spawn_error;
    for (cpu, handle) in handles {
        match handle.join() {
            Ok(Ok(Some(output))) => outputs.push(output),
            Ok(Ok(None)) => {}
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
        Some(w) => {
            let outcome = w.finish()?;
            account_not_written(&mut outputs, &outcome);
            outcome.written()
        }
        None => Vec::new(),
    };
    if let Some(e) = first_error {
        return Err(e);
    }
    Ok((outputs, raw_written))
}

/// Detail of a thread whose raw samples were not all written because the writer stopped
/// (the file system was nearly full): how many, and why (docs/raw-samples.md).
pub const RAW_NOT_WRITTEN: &str = "raw_not_written";
/// Detail: why the raw writer stopped, one sentence.
pub const RAW_STOPPED: &str = "raw_stopped";

/// Samples the raw writer took but did not write count as the thread's `lost`, like those
/// a full ring refused, so that for each raw file `raw_samples + lost == count` still holds;
/// the thread also gets the details [`RAW_NOT_WRITTEN`] and [`RAW_STOPPED`].
fn account_not_written(threads: &mut [ThreadOutput], outcome: &RawOutcome) {
    for thread in threads {
        let not_written: u64 =
            thread.metrics.iter().filter_map(|m| m.raw_file.as_deref()).map(|path| outcome.not_written(path)).sum();
        if not_written == 0 {
            continue;
        }
        thread.lost += not_written;
        thread.details.push((RAW_NOT_WRITTEN.into(), Detail::Int(i64::try_from(not_written).unwrap_or(i64::MAX))));
        if let Some(stop) = &outcome.stop {
            thread.details.push((RAW_STOPPED.into(), Detail::Text(stop.to_string())));
        }
    }
}

/// For a trigger of [`run_receiver_and_trigger`]: waits (1 ms sleeps) until its receiver
/// is set up (its set-up is not part of any stimulus's latency). False when the group
/// stopped first.
pub fn wait_for_receiver(group_stop: &AtomicBool, ready: &AtomicBool) -> Result<bool, rtlab_sys::SysError> {
    while !ready.load(std::sync::atomic::Ordering::Acquire) {
        if group_stop.load(Relaxed) {
            return Ok(false);
        }
        rtlab_sys::clock::sleep_relative_ns(1_000_000)?;
    }
    Ok(true)
}

/// A receiver and the trigger that stimulates it, on their CPUs, coupled
/// ([`Ending::Coupled`]): the receiver is called with (group stop, run stop, ready) and sets
/// ready once it is set up; the trigger, called with (group stop, ready), waits for it;
/// when either ends or a stop is requested, both stop. The receiver's output is the
/// probe's thread output.
pub fn run_receiver_and_trigger<R, T>(
    (receiver_cpu, receiver_name): (usize, String),
    receive: R,
    trigger_cpu: usize,
    trigger: T,
    stop: &Arc<AtomicBool>,
    writer: Option<RawWriter>,
) -> Result<WorkersOutput, ProbeError>
where
    R: FnOnce(&AtomicBool, &AtomicBool, &AtomicBool) -> Result<ThreadOutput, ProbeError> + Send + 'static,
    T: FnOnce(&AtomicBool, &AtomicBool) -> Result<(), ProbeError> + Send + 'static,
{
    let group_stop = Arc::new(AtomicBool::new(false));
    let ready = Arc::new(AtomicBool::new(false));
    let workers = vec![
        Worker {
            cpu: receiver_cpu,
            name: receiver_name,
            body: Box::new({
                let (group_stop, stop, ready) = (group_stop.clone(), stop.clone(), ready.clone());
                move || receive(&group_stop, &stop, &ready).map(Some)
            }),
        },
        Worker {
            cpu: trigger_cpu,
            name: format!("rtlab-tx/{trigger_cpu}"),
            body: Box::new({
                let (group_stop, ready) = (group_stop.clone(), ready.clone());
                move || trigger(&group_stop, &ready).map(|()| None)
            }),
        },
    ];
    run_workers(workers, stop, Ending::Coupled { group_stop }, writer, true)
}
