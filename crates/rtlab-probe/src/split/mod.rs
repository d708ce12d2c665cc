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

pub(crate) use attribution::CpuContext;
pub use attribution::{explain, CONTEXT_LOOKBACK_NS, EVENTS_LOST_NAME};
pub use cut::{
    find_tid, split_samples, COMM_BYTES, DATAGRAM_WAKING_ALLOWANCE_NS, LOST_LOOKBACK_NS, MAX_TIMER_SLACK_NS,
};
pub(crate) use cut::{parts_at, truncated_comm};
pub use summary::duration as format_duration;

use serde::{Deserialize, Serialize};

pub use rtlab_results::split::{
    Cause, CauseKind, Explanation, SplitParts, Unsplit, WakeSample, NET_RETURN_METRIC, NET_SCHED_METRIC,
    NET_WAKEUP_METRIC, TIMER_IRQ_METRIC, TIMER_RETURN_METRIC, TIMER_SCHED_METRIC,
};

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

/// Gaps without any traced event longer than this, in a context that would normally
/// produce events, count as unaccounted time.
pub const UNACCOUNTED_GAP_NS: i64 = 50_000;
