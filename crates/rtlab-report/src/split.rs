//! The run.json `split` section of `rtlab run --split`: which tracing backend cut the
//! samples, what it cost, how many samples were split, and the explained spikes.
//!
//! Main types:
//! - [`SplitRun`]: the section (backend, overhead, per-thread coverage, explanations).
//! - [`SplitCoverage`]: per scenario, probe and CPU: samples, samples split, why the others
//!   were not, and how closely the three parts add up to the sample.
//! - [`ExplainedSpike`]: an [`rtlab_probe::split::Explanation`] with where it was measured.
//! - [`SplitSummary`]: the section in brief, for the `rtlab run --json` summary.
//!
//! The words the reports use for causes and unsplit reasons are here too, so that every
//! format says the same; the tables and the figure are in [`crate::tables::split`].

use crate::model::RunResult;
use rtlab_probe::split::{Cause, CauseKind, Explanation, Unsplit};
use rtlab_probe::traced::SplitCounts;
use serde::{Deserialize, Serialize};

/// The `split` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SplitRun {
    /// "tracefs", "ebpf" or "timerlat".
    pub backend: String,
    /// What the backend did (instance, trace clock, buffer size, events and filters).
    pub backend_detail: String,
    /// The backends this kernel offered and why the chosen one was chosen.
    pub backend_choice: String,
    /// The tracing overhead as measured by the split bench.
    pub overhead: Option<SplitOverhead>,
    pub coverage: Vec<SplitCoverage>,
    /// Kernel events decoded, all CPUs, and events the kernel dropped (full buffer).
    pub events: u64,
    pub events_lost: u64,
    /// Samples above this are explained; None: the run's top samples are.
    pub explain_above_ns: Option<u64>,
    /// Samples above the threshold (all scenarios and threads), explained or not: only the
    /// worst [`MAX_EXPLAINED_PER_THREAD`] per thread are kept.
    pub above_threshold: u64,
    pub explanations: Vec<ExplainedSpike>,
}

/// At most this many explanations are kept per thread (the worst ones).
pub const MAX_EXPLAINED_PER_THREAD: usize = 20;
/// Without `--explain-above`, the worst samples explained per thread.
pub const DEFAULT_EXPLAINED_PER_THREAD: usize = 3;

/// The measured cost of tracing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SplitOverhead {
    /// Median timer latency with `--split` over the median without, in one interleaved
    /// bench run.
    pub median_ratio: f64,
    /// Where the figure comes from (bench script, date, machine).
    pub source: String,
}

/// How well one thread's samples were split.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SplitCoverage {
    pub scenario: String,
    pub probe: String,
    /// In run.json beside `scenario` and `probe`, as if they were this struct's own fields.
    #[serde(flatten)]
    pub counts: SplitCounts,
}

/// One explained spike.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExplainedSpike {
    pub scenario: String,
    pub probe: String,
    pub cpu: usize,
    /// Seconds from the start of the scenario's measurement to the sample's due time, when
    /// the runner knows it (older files: absent; the reports then show the due time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_s: Option<f64>,
    pub explanation: Explanation,
}

impl SplitRun {
    /// Samples and split samples over every thread.
    pub fn totals(&self) -> (u64, u64) {
        self.coverage.iter().fold((0, 0), |(samples, split), c| (samples + c.counts.samples, split + c.counts.split))
    }

    /// What a reader must see before trusting the parts, one sentence each: the threads with
    /// fewer than [`MIN_SPLIT_SHARE`] of their samples split, and dropped events.
    pub fn warnings(&self) -> Vec<String> {
        self.coverage.iter().filter_map(SplitCoverage::warning).chain(self.lost_warning()).collect()
    }

    /// The kernel dropped events: a sentence saying so.
    pub fn lost_warning(&self) -> Option<String> {
        (self.events_lost > 0).then(|| {
            format!(
                "the kernel dropped {} trace events (full buffer): samples in those intervals were not split",
                self.events_lost
            )
        })
    }

    /// "median latency ×1.042 with tracing (bench/split-overhead.sh, ...)" or "not measured".
    pub fn overhead_text(&self) -> String {
        match &self.overhead {
            Some(o) => format!("median latency ×{:.3} with tracing ({})", o.median_ratio, o.source),
            None => "not measured".into(),
        }
    }

    /// Which samples were explained: "samples above 100 µs" / "the 3 worst samples per thread".
    pub fn explained_text(&self) -> String {
        let threshold = match self.explain_above_ns {
            Some(ns) => format!(
                "{} samples above {} µs, {} explained",
                self.above_threshold,
                rtlab_analysis::units::format_us(i64::try_from(ns).unwrap_or(i64::MAX)),
                self.explanations.len()
            ),
            None => format!(
                "the {DEFAULT_EXPLAINED_PER_THREAD} worst samples per thread explained ({} in all)",
                self.explanations.len()
            ),
        };
        if self.explain_above_ns.is_some() && (self.explanations.len() as u64) < self.above_threshold {
            format!("{threshold} (at most the {MAX_EXPLAINED_PER_THREAD} worst per thread are kept)")
        } else {
            threshold
        }
    }
}

/// Below this share of split samples, a thread's parts do not describe its samples: the
/// reports warn (the acceptance asks for 99 %).
pub const MIN_SPLIT_SHARE: f64 = 0.99;

impl SplitCoverage {
    /// Split samples over samples (1 when there were none).
    pub fn split_share(&self) -> f64 {
        if self.counts.samples == 0 {
            1.0
        } else {
            self.counts.split as f64 / self.counts.samples as f64
        }
    }

    /// Fewer than [`MIN_SPLIT_SHARE`] of this thread's samples were split: a sentence saying so.
    pub fn warning(&self) -> Option<String> {
        (self.split_share() < MIN_SPLIT_SHARE).then(|| {
            format!(
                "only {:.1} % of the samples of {} on CPU {} ({}) were split, fewer than {:.0} % (not split: {}); \
                 its part metrics hold the split samples only",
                self.split_share() * 100.0,
                self.probe,
                self.counts.cpu,
                self.scenario,
                MIN_SPLIT_SHARE * 100.0,
                self.unsplit_text()
            )
        })
    }

    /// "events lost 6, no switch-in 4" / "none".
    pub fn unsplit_text(&self) -> String {
        let reasons: Vec<String> = self
            .counts
            .unsplit
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(why, n)| format!("{} {n}", unsplit_words(*why)))
            .collect();
        if reasons.is_empty() {
            "none".into()
        } else {
            reasons.join(", ")
        }
    }
}

/// Why a sample was not split, in words.
pub fn unsplit_words(why: Unsplit) -> &'static str {
    match why {
        Unsplit::NoTimerArmed => "no timer armed",
        Unsplit::NoHandling => "no handling",
        Unsplit::NoSwitchIn => "no switch-in",
        Unsplit::EventsLost => "events lost",
    }
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

impl ExplainedSpike {
    /// "at 2.345 s" (into the scenario) or, without that, the due time on CLOCK_MONOTONIC.
    pub fn when_text(&self) -> String {
        match self.at_s {
            Some(s) => format!("at {s:.3} s"),
            None => format!("due {:.6} s (monotonic)", self.explanation.sample.due_ns as f64 / 1e9),
        }
    }

    /// "steal 4.05 ms over 10 ms" / "steal not read".
    pub fn steal_text(&self) -> String {
        match (self.explanation.steal_ns, self.explanation.steal_window_ns) {
            (Some(steal), Some(window)) => format!(
                "steal {} µs over {}",
                rtlab_analysis::units::format_us(i64::try_from(steal).unwrap_or(i64::MAX)),
                crate::terminal::format_period(i64::try_from(window).unwrap_or(i64::MAX))
            ),
            (Some(steal), None) => {
                format!("steal {} µs", rtlab_analysis::units::format_us(i64::try_from(steal).unwrap_or(i64::MAX)))
            }
            _ => "steal not read".into(),
        }
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

/// The metrics of the three parts of `probe`'s samples: (first, scheduling, return); None
/// for a probe without a split. The probe's own list, so the report names what it measured.
pub use rtlab_probe::traced::part_metrics;

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
