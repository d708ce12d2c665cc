//! Spike attribution: the window from a sample's due time to its wake-up, on its CPU, cut
//! into slices at every traced event and each slice charged to what the CPU was doing.
//!
//! The CPU's context at the due time (current task, open handlers) is replayed from the
//! events of up to [`CONTEXT_LOOKBACK_NS`] before it; the walk then applies each event in the
//! window in turn. A slice goes to the innermost open handler, else to the current task,
//! classified by whether the handling of the stimulus had started (see `docs/split.md`).
//! Slices of idle, of the thread itself or of a handler longer than
//! [`super::UNACCOUNTED_GAP_NS`] are unaccounted time: nothing was traced although the CPU
//! would have produced events had it run. The causes therefore sum exactly to the latency.

use std::collections::HashMap;

use rtlab_sys::tracefs::event::{EventKind, KernelEvent, Vector, SOFTIRQ_NAMES};
use rtlab_sys::tracefs::StealSample;

use super::{cut, summary, Cause, CauseKind, Explanation, SplitParts, Stimulus, WakeSample, UNACCOUNTED_GAP_NS};

/// How far before the due time events are replayed to know the CPU's context.
pub const CONTEXT_LOOKBACK_NS: u64 = 1_000_000_000;

/// The name of unaccounted time that ends where the kernel dropped events.
pub const EVENTS_LOST_NAME: &str = "events lost";

/// Explains one sample of thread `tid` (priority `thread_prio`, kernel scale) from the
/// events of its CPU (time order) and the steal readings.
///
/// Without `parts` the sample is split from the same events if it can be; failing that,
/// the handling is taken to start at the thread's first traced wake-up in the window (or at
/// the due time). The causes always sum to `latency_ns`; see `docs/split.md` for the rules.
pub fn explain(
    events: &[KernelEvent],
    tid: i32,
    thread_prio: i32,
    stimulus: Stimulus,
    sample: &WakeSample,
    parts: Option<SplitParts>,
    steal: &[StealSample],
) -> Explanation {
    let parts = parts.or_else(|| cut::split_single(events, tid, stimulus, sample).ok());
    let handled_at = parts.map(|p| p.handled_at_ns).unwrap_or_else(|| fallback_handling(events, tid, sample));
    let (steal_ns, steal_window_ns) = steal_over(steal, sample).unzip();
    let walk = Walk::run(events, tid, thread_prio, sample, handled_at, parts.map(|p| p.switched_in_at_ns));
    let mut causes = walk.causes;
    // Largest first; ties in a fixed order so that the output is reproducible.
    causes.sort_by(|a, b| {
        b.cause.ns.cmp(&a.cause.ns).then(a.first_at_ns.cmp(&b.first_at_ns)).then(a.cause.name.cmp(&b.cause.name))
    });
    let latency_ns = sample.latency_ns();
    let summary = summary::summarize(&summary::SummaryInput {
        stimulus,
        latency_ns,
        causes: &causes,
        idle_gap_before_handling_ns: walk.idle_gap_before_handling_ns,
        steal_ns,
    });
    Explanation {
        sample: *sample,
        latency_ns,
        parts,
        causes: causes.into_iter().map(|c| c.cause).collect(),
        steal_ns,
        steal_window_ns,
        summary,
    }
}

/// Without a split, the handling is taken to start at the thread's first traced wake-up in
/// the window (or at the due time): the best guess, never later than the truth.
fn fallback_handling(events: &[KernelEvent], tid: i32, sample: &WakeSample) -> u64 {
    let first = events.partition_point(|event| event.ts_ns < sample.due_ns);
    events
        .iter()
        .skip(first)
        .take_while(|event| event.ts_ns <= sample.wake_ns)
        .find(|event| {
            event.cpu == sample.cpu
                && matches!(event.kind, EventKind::SchedWaking { pid, .. } | EventKind::SchedWakeup { pid, .. } if pid == tid)
        })
        .map_or(sample.due_ns, |event| event.ts_ns)
}

/// Steal of the sample's CPU over the narrowest pair of readings around the sample: the
/// last at or before the due time and the first at or after the wake-up.
fn steal_over(steal: &[StealSample], sample: &WakeSample) -> Option<(u64, u64)> {
    let of_cpu = || steal.iter().filter(|reading| reading.cpu == sample.cpu);
    let before = of_cpu().filter(|reading| reading.ts_ns <= sample.due_ns).max_by_key(|reading| reading.ts_ns)?;
    let after = of_cpu().filter(|reading| reading.ts_ns >= sample.wake_ns).min_by_key(|reading| reading.ts_ns)?;
    Some((after.steal_ns.saturating_sub(before.steal_ns), after.ts_ns - before.ts_ns))
}

/// A handler open on the CPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Handler {
    Vector(Vector),
    Irq {
        irq: i32,
        name: String,
    },
    Softirq(u32),
    /// An hrtimer callback seen outside any traced vector (irq_vectors not available).
    Hrtimer(u64),
}

impl Handler {
    pub(crate) fn cause(&self) -> (CauseKind, String) {
        match self {
            Handler::Vector(vector) => (CauseKind::IrqHandler, vector.tracepoint().to_string()),
            Handler::Irq { irq, name } => (CauseKind::IrqHandler, format!("irq {irq} {name}")),
            Handler::Softirq(vec) => {
                let name = SOFTIRQ_NAMES.get(*vec as usize).map_or_else(|| vec.to_string(), |name| name.to_string());
                (CauseKind::Softirq, format!("softirq {name}"))
            }
            Handler::Hrtimer(_) => (CauseKind::IrqHandler, "hrtimer".to_string()),
        }
    }
}

/// What the CPU was doing at one instant (also the noise probe's gap walk).
#[derive(Debug, Default)]
pub(crate) struct CpuContext {
    /// The current task (None until an event says).
    pub(crate) current: Option<i32>,
    /// Whether the current task was switched in after the handling started (a
    /// higher-priority thread that ran first, rather than one that was already running).
    current_switched_in_after_handling: bool,
    pub(crate) handlers: Vec<Handler>,
}

impl CpuContext {
    pub(crate) fn apply(&mut self, event: &KernelEvent, handling_started: bool) {
        if !matches!(event.kind, EventKind::Lost { .. } | EventKind::SchedSwitch { .. })
            && self.current != Some(event.pid)
        {
            // Every event names the current task: this corrects a missed switch.
            self.current = Some(event.pid);
            self.current_switched_in_after_handling = false;
        }
        match &event.kind {
            EventKind::SchedSwitch { next_pid, .. } => {
                self.current = Some(*next_pid);
                self.current_switched_in_after_handling = handling_started;
                // Switches happen in task context only: any handler still open lost its exit.
                self.handlers.clear();
            }
            EventKind::VectorEntry { vector } => self.handlers.push(Handler::Vector(*vector)),
            EventKind::VectorExit { vector } => self.close(|h| *h == Handler::Vector(*vector)),
            EventKind::IrqEntry { irq, name } => self.handlers.push(Handler::Irq { irq: *irq, name: name.clone() }),
            EventKind::IrqExit { irq } => self.close(|h| matches!(h, Handler::Irq { irq: open, .. } if open == irq)),
            EventKind::SoftirqEntry { vec } => self.handlers.push(Handler::Softirq(*vec)),
            EventKind::SoftirqExit { vec } => self.close(|h| *h == Handler::Softirq(*vec)),
            EventKind::HrtimerExpireEntry { timer, .. } if self.handlers.is_empty() => {
                self.handlers.push(Handler::Hrtimer(*timer));
            }
            EventKind::HrtimerExpireExit { timer } if self.handlers.last() == Some(&Handler::Hrtimer(*timer)) => {
                self.handlers.pop();
            }
            // What was open when the kernel dropped events is not known any more.
            EventKind::Lost { .. } => self.handlers.clear(),
            _ => {}
        }
    }

    /// Closes the innermost open handler matching `is_it` and any opened inside it (their
    /// exits were lost); an exit with no matching entry (entered before the replay) is ignored.
    fn close(&mut self, is_it: impl Fn(&Handler) -> bool) {
        if let Some(position) = self.handlers.iter().rposition(is_it) {
            self.handlers.truncate(position);
        }
    }
}

/// A merged cause with the instant it was first charged (for the summary's order).
#[derive(Debug, Clone)]
pub struct ChargedCause {
    pub cause: Cause,
    pub first_at_ns: u64,
}

/// The walk over the window.
struct Walk<'a> {
    tid: i32,
    thread_prio: i32,
    handled_at: u64,
    tasks: HashMap<i32, (&'a str, i32)>,
    causes: Vec<ChargedCause>,
    /// Unaccounted time before the handling with the CPU idle: the hypervisor's signature.
    idle_gap_before_handling_ns: i64,
}

impl<'a> Walk<'a> {
    fn run(
        events: &'a [KernelEvent],
        tid: i32,
        thread_prio: i32,
        sample: &WakeSample,
        handled_at: u64,
        switched_in_at: Option<u64>,
    ) -> Walk<'a> {
        let mut walk = Walk {
            tid,
            thread_prio,
            handled_at,
            tasks: HashMap::new(),
            causes: Vec::new(),
            idle_gap_before_handling_ns: 0,
        };
        let latency = sample.latency_ns();
        if latency <= 0 {
            // Nothing to walk; a negative latency (clock skew) stays with the thread so that
            // the causes still sum to it.
            if latency < 0 {
                walk.add(CauseKind::OwnThread, String::new(), Some(tid), Some(thread_prio), latency, sample.due_ns);
            }
            return walk;
        }
        let replay_from = events.partition_point(|e| e.ts_ns < sample.due_ns.saturating_sub(CONTEXT_LOOKBACK_NS));
        let on_cpu: Vec<&KernelEvent> = events
            .get(replay_from..)
            .unwrap_or_default()
            .iter()
            .take_while(|e| e.ts_ns < sample.wake_ns.saturating_add(CONTEXT_LOOKBACK_NS))
            .filter(|e| e.cpu == sample.cpu)
            .collect();
        for event in &on_cpu {
            walk.learn_task(event);
        }
        let mut context = CpuContext::default();
        let in_window = on_cpu.partition_point(|e| e.ts_ns <= sample.due_ns);
        for event in on_cpu.iter().take(in_window) {
            context.apply(event, handled_at <= event.ts_ns);
        }
        if context.current.is_none() {
            // Nothing traced before: the first event in the window names the task.
            context.current = on_cpu.get(in_window).map(|e| e.pid);
        }

        // Cut instants: the window's events and the two boundaries, in time order.
        let mut cut_at = sample.due_ns;
        let mut boundaries: Vec<u64> = [Some(handled_at), switched_in_at]
            .into_iter()
            .flatten()
            .filter(|&b| b > sample.due_ns && b < sample.wake_ns)
            .collect();
        boundaries.sort_unstable();
        let mut boundaries = boundaries.into_iter().peekable();
        let window = on_cpu.iter().skip(in_window).take_while(|e| e.ts_ns < sample.wake_ns);
        for event in window {
            while let Some(boundary) = boundaries.next_if(|&b| b <= event.ts_ns) {
                walk.cross_boundary(&mut context, &mut cut_at, boundary, switched_in_at);
            }
            let ends_in_lost_events = matches!(event.kind, EventKind::Lost { .. });
            walk.charge(&context, cut_at, event.ts_ns, ends_in_lost_events);
            cut_at = event.ts_ns.max(cut_at);
            context.apply(event, handled_at <= event.ts_ns);
        }
        for boundary in boundaries {
            walk.cross_boundary(&mut context, &mut cut_at, boundary, switched_in_at);
        }
        walk.charge(&context, cut_at, sample.wake_ns, false);
        walk
    }

    /// Charges up to a boundary and moves the cut there.
    fn cross_boundary(
        &mut self,
        context: &mut CpuContext,
        cut_at: &mut u64,
        boundary: u64,
        switched_in_at: Option<u64>,
    ) {
        self.charge(context, *cut_at, boundary, false);
        *cut_at = boundary.max(*cut_at);
        // An inferred switch-in has no sched_switch event: the thread runs from here.
        if Some(boundary) == switched_in_at {
            context.current = Some(self.tid);
        }
    }

    fn learn_task(&mut self, event: &'a KernelEvent) {
        match &event.kind {
            EventKind::SchedSwitch { prev_comm, prev_pid, prev_prio, next_comm, next_pid, next_prio, .. } => {
                self.tasks.entry(*prev_pid).or_insert((prev_comm.as_str(), *prev_prio));
                self.tasks.entry(*next_pid).or_insert((next_comm.as_str(), *next_prio));
            }
            EventKind::SchedWaking { pid, comm, prio, .. } | EventKind::SchedWakeup { pid, comm, prio, .. } => {
                self.tasks.entry(*pid).or_insert((comm.as_str(), *prio));
            }
            _ => {}
        }
    }

    /// Charges [from, to) to what `context` says the CPU was doing.
    fn charge(&mut self, context: &CpuContext, from: u64, to: u64, ends_in_lost_events: bool) {
        let ns = to.saturating_sub(from) as i64;
        if ns == 0 {
            return;
        }
        if ends_in_lost_events {
            self.add(CauseKind::Unaccounted, EVENTS_LOST_NAME.to_string(), None, None, ns, from);
            return;
        }
        let handling_started = self.handled_at <= from;
        let gap = ns > UNACCOUNTED_GAP_NS;
        if let Some(handler) = context.handlers.last() {
            let (kind, name) = handler.cause();
            if gap {
                self.add(CauseKind::Unaccounted, String::new(), None, None, ns, from);
            } else {
                self.add(kind, name, None, None, ns, from);
            }
            return;
        }
        let pid = context.current.unwrap_or(0);
        let (comm, prio) = self.task(pid);
        let (kind, suspicious) = if pid == self.tid {
            (CauseKind::OwnThread, true)
        } else if !handling_started {
            if pid == 0 {
                (CauseKind::IrqDelayedIdle, true)
            } else {
                // A guest does not hold interrupts off for this long; a long silence with
                // the timer due is the vCPU not running as often as a task's doing.
                (CauseKind::IrqDelayedTask, true)
            }
        } else if pid == 0 {
            (CauseKind::BlockingTask, true)
        } else if prio.is_some_and(|p| p < self.thread_prio) && context.current_switched_in_after_handling {
            (CauseKind::HigherPriorityThread, false)
        } else {
            (CauseKind::BlockingTask, false)
        };
        if gap && suspicious {
            if pid == 0 && !handling_started {
                self.idle_gap_before_handling_ns += ns;
            }
            if kind == CauseKind::IrqDelayedTask {
                // Which task was current stays on record: it may have held interrupts off.
                self.add(CauseKind::Unaccounted, format!("while {comm} was current"), Some(pid), prio, ns, from);
            } else {
                self.add(CauseKind::Unaccounted, String::new(), None, None, ns, from);
            }
            return;
        }
        let (name, pid, prio) = match kind {
            CauseKind::IrqDelayedIdle => (String::new(), None, None),
            _ => (comm, Some(pid), prio),
        };
        self.add(kind, name, pid, prio, ns, from);
    }

    /// Name and priority of a task as the events give them.
    fn task(&self, pid: i32) -> (String, Option<i32>) {
        if pid == 0 {
            return ("idle".to_string(), None);
        }
        match self.tasks.get(&pid) {
            Some((comm, prio)) => (comm.to_string(), Some(*prio)),
            None => (format!("pid {pid}"), None),
        }
    }

    fn add(&mut self, kind: CauseKind, name: String, pid: Option<i32>, prio: Option<i32>, ns: i64, at: u64) {
        if let Some(existing) =
            self.causes.iter_mut().find(|c| c.cause.kind == kind && c.cause.name == name && c.cause.pid == pid)
        {
            existing.cause.ns += ns;
            return;
        }
        self.causes.push(ChargedCause { cause: Cause { kind, name, pid, prio, ns }, first_at_ns: at });
    }
}
