//! The interrupt/scheduling split of wake-up samples, and the attribution of their spikes,
//! from kernel trace events (pure: no I/O; the events come from
//! [`rtlab_sys::tracefs::TraceCapture`]).
//!
//! Main types:
//! - [`WakeSample`]: one sample as the probe saw it: when the stimulus was due (a timer's
//!   programmed expiry; a datagram's kernel receive time) and when the thread ran in user
//!   space, both CLOCK_MONOTONIC.
//! - [`SplitParts`]: the sample cut in three at kernel events. Timer: interrupt latency
//!   (expiry to the start of the timer interrupt handling that expiry), scheduling part
//!   (handler to the thread switched in), return to user (switch-in to the user timestamp).
//!   Net: wake-up (receive to `sched_waking` of the receiver), scheduling part, return to
//!   user. The three always add up to the sample (they are differences of consecutive
//!   instants).
//! - [`Unsplit`]: why a sample could not be cut (its events are missing or were dropped).
//! - [`Explanation`]: a spike as a list of [`Cause`]s, each a duration in ns, summing to the
//!   sample: timer IRQ delayed, IRQ/softirq handlers (innermost only, so nested time is not
//!   counted twice), the task that ran or blocked, higher-priority threads, the thread's own
//!   path, and time no guest event accounts for (with the steal counter over the interval).
//!
//! The method (boundaries, attribution rules, unaccounted time, limits) is described in
//! `docs/split.md`; `cut` implements the split, `attribution` the explanation and `summary`
//! its one-line wording.

mod attribution;
mod cut;
mod summary;

pub use attribution::{explain, CONTEXT_LOOKBACK_NS, EVENTS_LOST_NAME};
pub(crate) use cut::truncated_comm;
pub use cut::{
    find_tid, split_samples, COMM_BYTES, DATAGRAM_WAKING_ALLOWANCE_NS, LOST_LOOKBACK_NS, MAX_TIMER_SLACK_NS,
};
pub use summary::duration as format_duration;

use serde::{Deserialize, Serialize};

/// Metric names of the timer split.
pub const TIMER_IRQ_METRIC: &str = "timer.irq";
pub const TIMER_SCHED_METRIC: &str = "timer.sched";
pub const TIMER_RETURN_METRIC: &str = "timer.return";
/// Metric names of the net split (of `net.activation`).
pub const NET_WAKEUP_METRIC: &str = "net.wakeup";
pub const NET_SCHED_METRIC: &str = "net.sched";
pub const NET_RETURN_METRIC: &str = "net.return";

/// What started the wake-up being split.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stimulus {
    /// The thread's own absolute timer (`clock_nanosleep`): `due_ns` is the programmed
    /// expiry, matched to the thread's `hrtimer_start`.
    Timer,
    /// A datagram: `due_ns` is the kernel receive time; the first boundary is the
    /// receiver's `sched_waking`.
    Datagram,
}

/// One sample to split.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WakeSample {
    /// CPU of the measuring thread.
    pub cpu: u32,
    /// When the stimulus was due (CLOCK_MONOTONIC ns).
    pub due_ns: u64,
    /// When the thread read the clock in user space (CLOCK_MONOTONIC ns).
    pub wake_ns: u64,
}

impl WakeSample {
    pub fn latency_ns(&self) -> i64 {
        self.wake_ns as i64 - self.due_ns as i64
    }
}

/// A sample cut at two kernel instants. `first_ns + second_ns + return_ns` equals the
/// sample's latency exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SplitParts {
    /// Timer: interrupt latency. Net: receive to wake-up.
    pub first_ns: i64,
    /// Scheduling part: to the thread switched in.
    pub sched_ns: i64,
    /// Switch-in to the user-space timestamp.
    pub return_ns: i64,
    /// The kernel instants: start of the handling (timer IRQ entry, or `sched_waking`) and
    /// switch-in.
    pub handled_at_ns: u64,
    pub switched_in_at_ns: u64,
    /// The kernel recorded no switch to the thread, and the CPU was idle from the handling
    /// to the wake-up: the switch from the idle task is taken at the end of the last
    /// handler the idle CPU ran (the idle loop switches as soon as the interrupt returns).
    #[serde(default)]
    pub switch_in_inferred: bool,
}

/// Why a sample has no split.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unsplit {
    /// No `hrtimer_start` of the thread with this expiry (timer) was traced.
    NoTimerArmed,
    /// No timer expiry / wake-up of the thread between the due time and the wake-up.
    NoHandling,
    /// No switch to the thread between the handling and the wake-up.
    NoSwitchIn,
    /// The kernel dropped events in the interval.
    EventsLost,
}

/// What a cause of delay is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CauseKind {
    /// Before the timer interrupt was handled, the CPU was idle: leaving idle.
    IrqDelayedIdle,
    /// Before the timer interrupt was handled, a task ran with interrupts (or the timer)
    /// held off.
    IrqDelayedTask,
    /// A hard IRQ handler or vector (the timer's own included) ran.
    IrqHandler,
    /// A softirq ran.
    Softirq,
    /// A task other than the measuring thread ran (or held the CPU) after the wake-up.
    BlockingTask,
    /// A task of higher priority than the measuring thread ran first.
    HigherPriorityThread,
    /// The measuring thread's own path: wake-up, switch, return to user space.
    OwnThread,
    /// No guest event accounts for this time (a gap longer than the threshold with nothing
    /// traced): in a VM, the hypervisor not running the vCPU.
    Unaccounted,
}

/// One contribution to a spike.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cause {
    pub kind: CauseKind,
    /// Handler name ("local_timer", "irq 11 virtio0", "softirq NET_RX"), task comm, or ""
    /// for idle / unaccounted.
    pub name: String,
    pub pid: Option<i32>,
    /// The kernel priority of the task (0..99 real-time, lower is higher; 100..139 other).
    pub prio: Option<i32>,
    pub ns: i64,
}

/// A spike explained.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Explanation {
    pub sample: WakeSample,
    pub latency_ns: i64,
    pub parts: Option<SplitParts>,
    /// Largest first: the causes sum to `latency_ns`.
    pub causes: Vec<Cause>,
    /// Steal time of the CPU over the narrowest window of steal readings that covers the
    /// sample, with that window's length: the hypervisor's own account.
    pub steal_ns: Option<u64>,
    pub steal_window_ns: Option<u64>,
    /// One line: the biggest causes in words.
    pub summary: String,
}

/// Gaps without any traced event longer than this, in a context that would normally
/// produce events, count as unaccounted time.
pub const UNACCOUNTED_GAP_NS: i64 = 50_000;
