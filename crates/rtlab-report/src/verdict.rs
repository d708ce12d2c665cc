//! The verdict: each requirement judged against every scenario of every run, with the
//! evidence behind it. Saved in run.json "verdict" and shown first in every report.

use rtlab_analysis::requirement::Requirement;
use serde::{Deserialize, Serialize};

/// All requirements against all configurations; `met` only if every check is met.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub met: bool,
    pub checks: Vec<Check>,
    /// Environment caveats that qualify the verdict (VM, not PREEMPT_RT, no RT privilege,
    /// too few samples for the percentile, interrupted run, load failure...).
    pub caveats: Vec<String>,
    /// One sentence for people: "NOT MET: timer.latency max was 5555.3 µs under mixed,
    /// 5055.3 µs above the 500 µs bound."
    pub summary: String,
}

/// One requirement against one configuration (run label + scenario).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    pub requirement: Requirement,
    pub run_label: String,
    pub scenario: String,
    /// None when the metric was not measured in this configuration (then `met` is false).
    pub measured_ns: Option<i64>,
    /// bound - measured: positive = headroom, negative = exceeded by.
    pub margin_ns: Option<i64>,
    pub met: bool,
    /// Evidence: samples of the metric (all CPUs), seconds measured.
    pub samples: u64,
    pub duration_s: f64,
    /// Samples above the bound, counted from the histogram (within its precision).
    pub samples_above_bound: u64,
    /// Expected wall time between samples above the bound at the observed sample rate;
    /// None when no sample was above it.
    pub exceedance_interval_s: Option<f64>,
    /// Why this check cannot be trusted far, e.g. "p99.999 from 20,000 samples is the max".
    pub notes: Vec<String>,
}
