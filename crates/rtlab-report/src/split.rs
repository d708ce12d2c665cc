//! The run.json `split` section of `rtlab run --split`: which tracing backend cut the
//! samples, what it cost, how many samples were split, and the explained spikes.
//!
//! Main types:
//! - [`SplitRun`]: the section (backend, overhead, per-thread coverage, explanations).
//! - [`SplitCoverage`]: per scenario, probe and CPU: samples, samples split, why the others
//!   were not, and how closely the three parts add up to the sample.
//! - [`ExplainedSpike`]: an [`rtlab_probe::split::Explanation`] with where it was measured.

use rtlab_probe::split::{Explanation, Unsplit};
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
    pub cpu: usize,
    /// The thread's id found in the trace.
    pub tid: Option<i32>,
    pub samples: u64,
    pub split: u64,
    /// Samples not split, by reason.
    pub unsplit: Vec<(Unsplit, u64)>,
    /// Samples whose three parts add up to the sample within 1 µs.
    pub sum_within_1us: u64,
    /// Largest |first + sched + return - sample| over the split samples.
    pub max_sum_error_ns: i64,
}

/// One explained spike.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExplainedSpike {
    pub scenario: String,
    pub probe: String,
    pub cpu: usize,
    pub explanation: Explanation,
}
