//! The words the reports use for causes of delay, and the `split` object of the `rtlab run
//! --json` summary ([`SplitSummary`]). The section itself is
//! [`rtlab_results::split::SplitRun`]; its tables and figure are in [`crate::tables::split`].

use rtlab_results::run::RunResult;
use rtlab_results::set::Configuration;
use rtlab_results::split::{part_metrics, Cause, CauseKind, SplitCoverage, SplitOverhead, SplitRun};
use serde::Serialize;

/// How many samples the split covered, for a figure or table of `metric` when it is a part
/// metric of the split (`timer.irq`, `timer.sched`, `timer.return`, `net.wakeup`, ...): one
/// sentence per configuration whose run has the split, "timer.irq from 9,977 of 10,000
/// samples (not split: no switch-in 23)." (" of <configuration>" after the metric when there
/// are several). The wording is [`SplitRun::coverage_text`], the suite tables' too. Nothing
/// for other metrics.
pub fn coverage_sentences(configurations: &[Configuration], metric: &str) -> Vec<String> {
    let probe = metric.split('.').next().unwrap_or_default();
    if !part_metrics(probe).is_some_and(|parts| parts.contains(&metric)) {
        return Vec::new();
    }
    configurations
        .iter()
        .filter_map(|c| {
            let text = c.run.split.as_ref()?.coverage_text(c.scenario, probe)?;
            let of = if configurations.len() > 1 { format!(" of {}", c.name) } else { String::new() };
            Some(format!("{metric}{of} {text}."))
        })
        .collect()
}

/// What a cause is, in words.
pub fn cause_words(kind: CauseKind) -> &'static str {
    match kind {
        CauseKind::IrqDelayedIdle => "timer IRQ delayed: CPU leaving idle",
        CauseKind::IrqDelayedTask => "timer IRQ delayed: held off by a task",
        CauseKind::IrqHandler => "IRQ handler",
        CauseKind::Softirq => "softirq",
        CauseKind::BlockingTask => "blocking task",
        CauseKind::HigherPriorityThread => "higher-priority thread",
        CauseKind::OwnThread => "own path (wake-up, switch, return)",
        CauseKind::Unaccounted => "unaccounted (no guest event)",
    }
}

/// Every cause kind, in the order legends list them.
pub const CAUSE_KINDS: [CauseKind; 8] = [
    CauseKind::IrqDelayedIdle,
    CauseKind::IrqDelayedTask,
    CauseKind::IrqHandler,
    CauseKind::Softirq,
    CauseKind::BlockingTask,
    CauseKind::HigherPriorityThread,
    CauseKind::OwnThread,
    CauseKind::Unaccounted,
];

/// A cause without its duration: "softirq NET_RX", "blocking task stress-ng (pid 4242, prio 120)".
pub fn cause_label(cause: &Cause, probe: &str) -> String {
    let mut text = cause_words(cause.kind).to_string();
    if probe == "net" {
        // Before a datagram's handling the receiver's wake-up waits, not a timer interrupt.
        text = text.replace("timer IRQ delayed", "wake-up delayed");
    }
    // Handler names already say what they are ("softirq NET_RX"): no word twice.
    let name = cause.name.strip_prefix("softirq ").filter(|_| cause.kind == CauseKind::Softirq).unwrap_or(&cause.name);
    if !name.is_empty() {
        text.push(' ');
        text.push_str(name);
    }
    let ids: Vec<String> =
        cause.pid.map(|p| format!("pid {p}")).into_iter().chain(cause.prio.map(|p| format!("prio {p}"))).collect();
    if !ids.is_empty() {
        text.push_str(&format!(" ({})", ids.join(", ")));
    }
    text
}

/// "softirq NET_RX 90.0 µs (29 %)": a cause with its duration and share of the sample.
pub fn cause_text(cause: &Cause, latency_ns: i64, probe: &str) -> String {
    format!(
        "{} {} µs ({})",
        cause_label(cause, probe),
        rtlab_analysis::units::format_us(cause.ns),
        share_text(cause.ns, latency_ns)
    )
}

/// "29 %", "<1 %".
pub fn share_text(part_ns: i64, whole_ns: i64) -> String {
    if whole_ns <= 0 {
        return "-".into();
    }
    let share = part_ns as f64 / whole_ns as f64 * 100.0;
    if share > 0.0 && share < 1.0 {
        "<1 %".into()
    } else {
        format!("{share:.0} %")
    }
}

/// The `split` object of the `rtlab run --json` summary: the statement and per thread the
/// coverage; the explanations are in run.json.
#[derive(Debug, Clone, Serialize)]
pub struct SplitSummary<'a> {
    pub backend: &'a str,
    pub backend_detail: &'a str,
    pub backend_choice: &'a str,
    pub overhead: Option<&'a SplitOverhead>,
    pub events: u64,
    pub events_lost: u64,
    pub samples: u64,
    pub split: u64,
    /// `split / samples` (1 without samples).
    pub split_share: f64,
    pub coverage: Vec<CoverageSummary<'a>>,
    pub explain_above_ns: Option<u64>,
    pub above_threshold: u64,
    pub explained: usize,
    /// [`SplitRun::warnings`].
    pub warnings: Vec<String>,
}

/// One thread's coverage with the medians of its three parts (from the part metrics'
/// summaries; null when the run holds no such measurement).
#[derive(Debug, Clone, Serialize)]
pub struct CoverageSummary<'a> {
    pub scenario: &'a str,
    pub probe: &'a str,
    pub cpu: usize,
    pub tid: Option<i32>,
    pub samples: u64,
    pub split: u64,
    pub sum_within_1us: u64,
    pub switch_in_inferred: u64,
    pub max_sum_error_ns: i64,
    /// Interrupt latency (timer) or wake-up (net).
    pub median_first_ns: Option<i64>,
    pub median_sched_ns: Option<i64>,
    pub median_return_ns: Option<i64>,
}

/// The medians of the three parts of one thread, from `run`'s measurements.
pub fn part_medians(run: &RunResult, coverage: &SplitCoverage) -> [Option<i64>; 3] {
    let Some(metrics) = part_metrics(&coverage.probe) else { return [None; 3] };
    metrics.map(|metric| {
        run.measurements_of(&coverage.scenario, metric)
            .find(|m| m.cpu == coverage.counts.cpu)
            .and_then(|m| m.summary.as_ref())
            .map(|s| s.p50)
    })
}

impl<'a> SplitSummary<'a> {
    pub fn of(run: &'a RunResult, split: &'a SplitRun) -> SplitSummary<'a> {
        let (samples, split_samples) = split.totals();
        SplitSummary {
            backend: &split.backend,
            backend_detail: &split.backend_detail,
            backend_choice: &split.backend_choice,
            overhead: split.overhead.as_ref(),
            events: split.events,
            events_lost: split.events_lost,
            samples,
            split: split_samples,
            split_share: if samples == 0 { 1.0 } else { split_samples as f64 / samples as f64 },
            coverage: split
                .coverage
                .iter()
                .map(|c| {
                    let [first, sched, ret] = part_medians(run, c);
                    CoverageSummary {
                        scenario: &c.scenario,
                        probe: &c.probe,
                        cpu: c.counts.cpu,
                        tid: c.counts.tid,
                        samples: c.counts.samples,
                        split: c.counts.split,
                        sum_within_1us: c.counts.sum_within_1us,
                        switch_in_inferred: c.counts.switch_in_inferred,
                        max_sum_error_ns: c.counts.max_sum_error_ns,
                        median_first_ns: first,
                        median_sched_ns: sched,
                        median_return_ns: ret,
                    }
                })
                .collect(),
            explain_above_ns: split.explain_above_ns,
            above_threshold: split.above_threshold,
            explained: split.explanations.len(),
            warnings: split.warnings(),
        }
    }
}
