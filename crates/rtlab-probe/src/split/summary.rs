//! The one-line summary of an explained spike: its biggest causes in the order they
//! happened, in words ("timer IRQ 4.1 ms late with the CPU idle and no guest event
//! (unaccounted; steal +4.0 ms), then stress-ng-cpu (pid 812, prio 120) ran 35 µs").

use super::attribution::{ChargedCause, EVENTS_LOST_NAME};
use super::{CauseKind, Stimulus};

/// At most this many causes are named; the rest are counted.
pub const SUMMARY_CAUSES: usize = 3;

/// Causes smaller than this fraction of the latency are not named (beyond the first).
const NAMED_SHARE: f64 = 0.05;

pub struct SummaryInput<'a> {
    pub stimulus: Stimulus,
    pub latency_ns: i64,
    /// Largest first.
    pub causes: &'a [ChargedCause],
    pub idle_gap_before_handling_ns: i64,
    pub steal_ns: Option<u64>,
}

/// See the module documentation.
pub fn summarize(input: &SummaryInput) -> String {
    if input.latency_ns < 0 {
        return format!("woke {} before the due time (clock skew)", duration(-input.latency_ns));
    }
    if input.causes.is_empty() {
        return "no delay".to_string();
    }
    let threshold = (input.latency_ns as f64 * NAMED_SHARE) as i64;
    let mut named: Vec<&ChargedCause> = input
        .causes
        .iter()
        .enumerate()
        .filter(|(rank, c)| *rank == 0 || c.cause.ns >= threshold)
        .map(|(_, c)| c)
        .take(SUMMARY_CAUSES)
        .collect();
    let rest: i64 = input.causes.iter().skip(named.len()).map(|c| c.cause.ns).sum();
    let rest_count = input.causes.len() - named.len();
    named.sort_by_key(|c| c.first_at_ns);
    let mut line = named.iter().map(|c| phrase(input, c)).collect::<Vec<_>>().join(", then ");
    if rest_count > 0 {
        let causes = if rest_count == 1 { "cause" } else { "causes" };
        line.push_str(&format!(" (+{rest_count} smaller {causes}, {})", duration(rest)));
    }
    line
}

fn phrase(input: &SummaryInput, charged: &ChargedCause) -> String {
    let cause = &charged.cause;
    let ns = duration(cause.ns);
    let handling = match input.stimulus {
        Stimulus::Timer => "timer IRQ",
        Stimulus::Datagram => "wake-up",
    };
    let task = || match (cause.pid, cause.prio) {
        (Some(pid), Some(prio)) => format!("{} (pid {pid}, prio {prio})", cause.name),
        (Some(pid), None) => format!("{} (pid {pid})", cause.name),
        _ => cause.name.clone(),
    };
    match cause.kind {
        CauseKind::Unaccounted if cause.name == EVENTS_LOST_NAME => format!("{ns} in which the kernel lost events"),
        CauseKind::Unaccounted => {
            let steal = match input.steal_ns {
                Some(0) => "; no steal".to_string(),
                Some(steal) => format!("; steal +{}", duration(steal as i64)),
                None => String::new(),
            };
            if input.idle_gap_before_handling_ns * 2 > cause.ns {
                format!("{handling} {ns} late with the CPU idle and no guest event (unaccounted{steal})")
            } else {
                format!("{ns} with no guest event (unaccounted{steal})")
            }
        }
        CauseKind::IrqDelayedIdle => format!("{handling} {ns} late leaving idle"),
        CauseKind::IrqDelayedTask => format!("{handling} held off {ns} while {} ran", task()),
        CauseKind::IrqHandler => format!("IRQ handler {} ran {ns}", cause.name),
        CauseKind::Softirq => format!("{} ran {ns}", cause.name),
        CauseKind::BlockingTask => format!("{} ran {ns}", task()),
        CauseKind::HigherPriorityThread => format!("higher-priority {} ran {ns} first", task()),
        CauseKind::OwnThread => format!("the thread's own wake-up path {ns}"),
    }
}

/// "4.1 ms", "35 µs", "2.5 µs", "800 ns".
pub fn duration(ns: i64) -> String {
    let magnitude = ns.unsigned_abs();
    if magnitude >= 1_000_000 {
        format!("{:.1} ms", ns as f64 / 1e6)
    } else if magnitude >= 10_000 {
        format!("{:.0} µs", ns as f64 / 1e3)
    } else if magnitude >= 1_000 {
        format!("{:.1} µs", ns as f64 / 1e3)
    } else {
        format!("{ns} ns")
    }
}
