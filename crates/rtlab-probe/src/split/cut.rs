//! Cutting samples at kernel instants: [`split_samples`] and [`find_tid`].
//!
//! Timer: the thread's last `hrtimer_start` with `expires == due_ns` (plus its timer slack,
//! at most [`MAX_TIMER_SLACK_NS`]) before the wake-up names
//! the timer; the `now` of its `hrtimer_expire_entry` (the kernel's clock read that found it
//! expired, on the clock of the due time) is the start of the handling; the next
//! `sched_switch` to the thread is the switch-in.
//! Datagram: the first `sched_waking` of the thread at or after the receive time (less a
//! small allowance) is the first boundary; the next switch to it on its CPU the second.
//!
//! Cost: one hash map of the thread's timer starts and one list of lost-event instants are
//! built in a single pass; each sample then scans only the events from its own arming (or
//! receive time) to its wake-up, so a run costs O(events + samples · log events), never
//! O(samples × events).

use std::collections::{BTreeMap, HashMap};

use rtlab_sys::tracefs::event::{EventKind, KernelEvent};

use super::{SplitParts, Stimulus, Unsplit, WakeSample};

/// A wake-up may be traced a little before the datagram's receive timestamp (the two are
/// taken on different paths): the first boundary is searched from this much before it.
pub const DATAGRAM_WAKING_ALLOWANCE_NS: u64 = 2_000;

/// Events dropped this long before the due time can still hide the sample's arming or
/// context, so they make the sample unsplit too.
pub const LOST_LOOKBACK_NS: u64 = 1_000_000;

/// `hrtimer_start` reports the expiry plus the thread's timer slack (0 for real-time
/// threads, 1 ns where rtlab sets it for SCHED_OTHER, 50 µs by default): the thread's start
/// with the nearest expiry at or this much after the due time names the sample's timer.
pub const MAX_TIMER_SLACK_NS: i64 = 100_000;

/// The kernel keeps this many bytes of a thread name (`TASK_COMM_LEN` less the NUL).
pub const COMM_BYTES: usize = 15;

/// The thread id of the measuring thread named `comm` on `cpu`, from the events (the
/// kernel keeps 15 bytes of a thread name).
/// Several threads of that name: the one switched in most often (ties: the first seen).
pub fn find_tid(events: &[KernelEvent], cpu: u32, comm: &str) -> Option<i32> {
    let wanted = truncated_comm(comm);
    // pid -> (switches to it, first index seen): most frequent wins, ties go to the first.
    let mut counts: HashMap<i32, (u64, usize)> = HashMap::new();
    for (index, event) in events.iter().enumerate() {
        if event.cpu != cpu {
            continue;
        }
        if let EventKind::SchedSwitch { next_comm, next_pid, .. } = &event.kind {
            if truncated_comm(next_comm) == wanted {
                counts.entry(*next_pid).or_insert((0, index)).0 += 1;
            }
        }
    }
    counts
        .into_iter()
        .max_by(|(_, (count_a, first_a)), (_, (count_b, first_b))| count_a.cmp(count_b).then(first_b.cmp(first_a)))
        .map(|(pid, _)| pid)
}

/// The first [`COMM_BYTES`] bytes of a name, as the kernel stores it.
pub(crate) fn truncated_comm(comm: &str) -> &[u8] {
    let bytes = comm.as_bytes();
    bytes.get(..COMM_BYTES).unwrap_or(bytes)
}

/// Splits `samples` (in time order, all of thread `tid`) with `events` (time order; for a
/// timer the thread's CPU's events, for a datagram all CPUs' events merged). One result per
/// sample, in order.
///
/// A `Lost` marker on the sample's CPU from [`LOST_LOOKBACK_NS`] before the due time to the
/// wake-up makes it [`Unsplit::EventsLost`] whatever else was found. Cost: linear in the
/// events plus, per sample, the events between its arming (or receive time) and its wake-up.
pub fn split_samples(
    events: &[KernelEvent],
    tid: i32,
    stimulus: Stimulus,
    samples: &[WakeSample],
) -> Vec<Result<SplitParts, Unsplit>> {
    let index = EventIndex::build(events, tid);
    samples.iter().map(|sample| split_one(events, &index, tid, stimulus, sample)).collect()
}

/// Splits one sample (used by `explain` when it is given no parts).
pub(crate) fn split_single(
    events: &[KernelEvent],
    tid: i32,
    stimulus: Stimulus,
    sample: &WakeSample,
) -> Result<SplitParts, Unsplit> {
    let index = EventIndex::build(events, tid);
    split_one(events, &index, tid, stimulus, sample)
}

/// What one pass over the events finds for all samples.
struct EventIndex {
    /// The thread's `hrtimer_start`s by programmed expiry: indices into the events, in order.
    timer_starts: BTreeMap<i64, Vec<usize>>,
    /// Per CPU, the instants of `Lost` markers, in order.
    lost: HashMap<u32, Vec<u64>>,
}

impl EventIndex {
    fn build(events: &[KernelEvent], tid: i32) -> EventIndex {
        let mut timer_starts: BTreeMap<i64, Vec<usize>> = BTreeMap::new();
        let mut lost: HashMap<u32, Vec<u64>> = HashMap::new();
        for (index, event) in events.iter().enumerate() {
            match &event.kind {
                EventKind::HrtimerStart { expires_ns, .. } if event.pid == tid => {
                    timer_starts.entry(*expires_ns).or_default().push(index);
                }
                EventKind::Lost { .. } => lost.entry(event.cpu).or_default().push(event.ts_ns),
                _ => {}
            }
        }
        EventIndex { timer_starts, lost }
    }

    /// Whether events were dropped on `cpu` within [from, to].
    fn lost_between(&self, cpu: u32, from: u64, to: u64) -> bool {
        let Some(instants) = self.lost.get(&cpu) else { return false };
        let first_at_or_after = instants.partition_point(|&ts| ts < from);
        instants.get(first_at_or_after).is_some_and(|&ts| ts <= to)
    }
}

fn split_one(
    events: &[KernelEvent],
    index: &EventIndex,
    tid: i32,
    stimulus: Stimulus,
    sample: &WakeSample,
) -> Result<SplitParts, Unsplit> {
    if index.lost_between(sample.cpu, sample.due_ns.saturating_sub(LOST_LOOKBACK_NS), sample.wake_ns) {
        return Err(Unsplit::EventsLost);
    }
    let (handled_at_ns, handling_index, thread_was_current) = match stimulus {
        Stimulus::Timer => timer_handling(events, index, tid, sample)?,
        Stimulus::Datagram => datagram_handling(events, tid, sample)?,
    };
    let (switched_in_at_ns, switch_in_inferred) = if thread_was_current {
        (handled_at_ns, false)
    } else {
        match switch_in_after(events, handling_index, tid, sample) {
            Some(ts) => (ts, false),
            None => (switch_from_idle(events, handling_index, tid, sample).ok_or(Unsplit::NoSwitchIn)?, true),
        }
    };
    let mut parts = parts_at(sample, handled_at_ns, switched_in_at_ns);
    parts.switch_in_inferred = switch_in_inferred;
    Ok(parts)
}

/// When the kernel recorded no switch to the thread (some kernels drop the `sched_switch`
/// out of the idle task: docs/split.md): if the sample's CPU ran nothing but the idle task's
/// interrupts from the handling on, the switch came right after the last of them. None when
/// any other task ran or switched, or the CPU was not idle.
fn switch_from_idle(events: &[KernelEvent], handling_index: usize, tid: i32, sample: &WakeSample) -> Option<u64> {
    let handling = events.get(handling_index)?;
    if handling.cpu == sample.cpu && handling.pid != 0 {
        return None;
    }
    let mut last_idle_event = (handling.cpu == sample.cpu).then_some(handling.ts_ns);
    for event in events.iter().skip(handling_index + 1).take_while(|e| e.ts_ns <= sample.wake_ns) {
        if event.cpu != sample.cpu {
            continue;
        }
        match (&event.kind, event.pid) {
            (EventKind::SchedSwitch { .. } | EventKind::Lost { .. }, _) => return None,
            (_, 0) => last_idle_event = Some(event.ts_ns),
            (_, pid) if pid == tid => break,
            _ => return None,
        }
    }
    last_idle_event
}

/// The parts of a sample cut at two instants: differences of consecutive instants, so they
/// add up to the latency exactly.
pub(crate) fn parts_at(sample: &WakeSample, handled_at_ns: u64, switched_in_at_ns: u64) -> SplitParts {
    let signed = |ns: u64| ns as i64;
    SplitParts {
        first_ns: signed(handled_at_ns) - signed(sample.due_ns),
        sched_ns: signed(switched_in_at_ns) - signed(handled_at_ns),
        return_ns: signed(sample.wake_ns) - signed(switched_in_at_ns),
        handled_at_ns,
        switched_in_at_ns,
        switch_in_inferred: false,
    }
}

/// Timer: (start of the handling, index of `hrtimer_expire_entry`, whether the thread itself
/// was the interrupted task).
fn timer_handling(
    events: &[KernelEvent],
    index: &EventIndex,
    tid: i32,
    sample: &WakeSample,
) -> Result<(u64, usize, bool), Unsplit> {
    let due = i64::try_from(sample.due_ns).map_err(|_| Unsplit::NoTimerArmed)?;
    let (_, starts) =
        index.timer_starts.range(due..=due.saturating_add(MAX_TIMER_SLACK_NS)).next().ok_or(Unsplit::NoTimerArmed)?;
    let start_index = starts
        .iter()
        .rev()
        .copied()
        .find(|&i| events.get(i).is_some_and(|event| event.ts_ns <= sample.wake_ns))
        .ok_or(Unsplit::NoTimerArmed)?;
    let Some(EventKind::HrtimerStart { timer, .. }) = events.get(start_index).map(|event| &event.kind) else {
        return Err(Unsplit::NoTimerArmed);
    };
    let expire_index = events
        .iter()
        .enumerate()
        .skip(start_index + 1)
        .take_while(|(_, event)| event.ts_ns <= sample.wake_ns)
        .find(|(_, event)| matches!(event.kind, EventKind::HrtimerExpireEntry { timer: t, .. } if t == *timer))
        .map(|(i, _)| i)
        .ok_or(Unsplit::NoHandling)?;
    let expire = events.get(expire_index).ok_or(Unsplit::NoHandling)?;
    // A timer armed on an isolated or tick-less CPU is queued on a housekeeping CPU
    // (nohz_full, isolcpus; timer_migration) and expires there: the handling is on that CPU,
    // and its events must be complete too.
    if expire.cpu != sample.cpu
        && index.lost_between(expire.cpu, sample.due_ns.saturating_sub(LOST_LOOKBACK_NS), expire.ts_ns)
    {
        return Err(Unsplit::EventsLost);
    }
    // The handling starts at the kernel's own clock read that found the timer expired: the
    // same clock as the due time, so never before it. Not the enclosing vector entry: that
    // interrupt is often raised for an earlier timer (the tick), this one being expired only
    // when hrtimer_interrupt re-read the clock (docs/split.md, "One clock").
    // The read precedes the callback; a trace saying otherwise (another trace clock) is
    // capped at the callback.
    let handled_at = match expire.kind {
        EventKind::HrtimerExpireEntry { now_ns, .. } => {
            u64::try_from(now_ns).map_or(expire.ts_ns, |now| now.min(expire.ts_ns))
        }
        _ => expire.ts_ns,
    };
    Ok((handled_at, expire_index, expire.cpu == sample.cpu && expire.pid == tid))
}

/// Datagram: (the receiver's first `sched_waking` at or after the receive time less the
/// allowance, its index, whether the receiver was already current: never known here).
fn datagram_handling(events: &[KernelEvent], tid: i32, sample: &WakeSample) -> Result<(u64, usize, bool), Unsplit> {
    let from = sample.due_ns.saturating_sub(DATAGRAM_WAKING_ALLOWANCE_NS);
    let first = events.partition_point(|event| event.ts_ns < from);
    events
        .iter()
        .enumerate()
        .skip(first)
        .take_while(|(_, event)| event.ts_ns <= sample.wake_ns)
        .find(|(_, event)| matches!(event.kind, EventKind::SchedWaking { pid, .. } if pid == tid))
        .map(|(i, event)| (event.ts_ns, i, false))
        .ok_or(Unsplit::NoHandling)
}

/// The first switch to `tid` on the sample's CPU after the event at `after_index`, no later
/// than the wake-up.
fn switch_in_after(events: &[KernelEvent], after_index: usize, tid: i32, sample: &WakeSample) -> Option<u64> {
    events
        .iter()
        .skip(after_index + 1)
        .take_while(|event| event.ts_ns <= sample.wake_ns)
        .find(|event| {
            event.cpu == sample.cpu && matches!(event.kind, EventKind::SchedSwitch { next_pid, .. } if next_pid == tid)
        })
        .map(|event| event.ts_ns)
}
