//! The run.json `split` section of `rtlab run --split`: which tracing backend cut the
//! samples, what it cost, how many samples were split, and the explained spikes.
//!
//! Main types:
//! - [`SplitRun`]: the section (backend, overhead, per-thread coverage, explanations).
//! - [`SplitCoverage`]: per scenario, probe and CPU: samples, samples split, why the others
//!   were not, and how closely the three parts add up to the sample.
//! - [`ExplainedSpike`]: an [`Explanation`] (the causes of one spike, adding up to it) with
//!   where it was measured.
//! - [`SplitCounts`], [`Unsplit`]: how one thread's samples were split, and why some were not.
//!
//! `rtlab-probe` cuts the samples and explains the spikes; the reports' words for the causes
//! are in `rtlab-report`.

use serde::{Deserialize, Serialize};

/// Metric names of the timer split.
pub const TIMER_IRQ_METRIC: &str = "timer.irq";
pub const TIMER_SCHED_METRIC: &str = "timer.sched";
pub const TIMER_RETURN_METRIC: &str = "timer.return";
/// Metric names of the net split (of `net.activation`).
pub const NET_WAKEUP_METRIC: &str = "net.wakeup";
pub const NET_SCHED_METRIC: &str = "net.sched";
pub const NET_RETURN_METRIC: &str = "net.return";

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
    /// The kernel dropped events in the interval, or the split's bounded window dropped
    /// them before the sample came.
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

/// How one thread's samples were split: the counts run.json keeps (its `split.coverage`
/// entries flatten them beside their scenario and probe).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SplitCounts {
    pub cpu: usize,
    /// The thread's id found in the trace.
    pub tid: Option<i32>,
    pub samples: u64,
    pub split: u64,
    /// Samples not split, by reason.
    pub unsplit: Vec<(Unsplit, u64)>,
    /// Samples whose three parts add up to the sample within 1 µs.
    pub sum_within_1us: u64,
    /// Split samples whose switch-in the kernel did not record and was taken at the end of
    /// the idle CPU's last interrupt (docs/split.md).
    #[serde(default)]
    pub switch_in_inferred: u64,
    /// Largest |first + sched + return - sample| over the split samples.
    pub max_sum_error_ns: i64,
}

/// The metric names of a probe's three parts, or None for a probe without a split.
pub fn part_metrics(probe: &str) -> Option<[&'static str; 3]> {
    match probe {
        "timer" => Some([TIMER_IRQ_METRIC, TIMER_SCHED_METRIC, TIMER_RETURN_METRIC]),
        "net" => Some([NET_WAKEUP_METRIC, NET_SCHED_METRIC, NET_RETURN_METRIC]),
        _ => None,
    }
}

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

    /// How many samples of `probe` in `scenario` the split covered, over every thread: "from
    /// 9,977 of 10,000 samples (not split: no switch-in 23)", with "; 5 with the switch-in
    /// inferred (not recorded by the kernel)" when some were. The samples the split could not
    /// cut are counted, not dropped silently. None when the split has no thread of them. The
    /// wording of every table and figure built from split metrics (run and suite reports).
    pub fn coverage_text(&self, scenario: &str, probe: &str) -> Option<String> {
        let entries: Vec<&SplitCoverage> =
            self.coverage.iter().filter(|c| c.probe == probe && c.scenario == scenario).collect();
        if entries.is_empty() {
            return None;
        }
        let thousands = rtlab_analysis::units::thousands;
        let samples: u64 = entries.iter().map(|c| c.counts.samples).sum();
        let covered: u64 = entries.iter().map(|c| c.counts.split).sum();
        let mut unsplit: Vec<(Unsplit, u64)> = Vec::new();
        for (why, n) in entries.iter().flat_map(|c| &c.counts.unsplit) {
            match unsplit.iter_mut().find(|(w, _)| w == why) {
                Some((_, total)) => *total += n,
                None => unsplit.push((*why, *n)),
            }
        }
        let reasons: Vec<String> = unsplit
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(why, n)| format!("{} {}", unsplit_words(*why), thousands(*n)))
            .collect();
        let mut text = format!("from {} of {} samples", thousands(covered), thousands(samples));
        if !reasons.is_empty() {
            text.push_str(&format!(" (not split: {})", reasons.join(", ")));
        } else if covered < samples {
            text.push_str(&format!(" ({} not split)", thousands(samples - covered)));
        }
        let inferred: u64 = entries.iter().map(|c| c.counts.switch_in_inferred).sum();
        if inferred > 0 {
            text.push_str(&format!(
                "; {} with the switch-in inferred (not recorded by the kernel)",
                thousands(inferred)
            ));
        }
        Some(text)
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
                rtlab_analysis::units::format_period(i64::try_from(window).unwrap_or(i64::MAX))
            ),
            (Some(steal), None) => {
                format!("steal {} µs", rtlab_analysis::units::format_us(i64::try_from(steal).unwrap_or(i64::MAX)))
            }
            _ => "steal not read".into(),
        }
    }
}
