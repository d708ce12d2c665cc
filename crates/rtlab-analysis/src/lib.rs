//! rtlab-analysis: statistics as pure functions, no I/O.
//!
//! Main types:
//! - [`LatencyHistogram`]: a bounded HDR histogram in ns (fixed maximum, 3 significant
//!   digits) whose `record` never allocates; it is what probe threads fill.
//! - [`Moments`]: exact count/min/max/sum/sum of squares, so min, max, mean and standard
//!   deviation are exact while percentiles come from the histogram.
//! - [`Summary`]: count, min, max, mean, stddev and the percentiles p50 ... p99.999.
//! - [`exceedance`]: how often a threshold is exceeded in wall time at a sample rate
//!   (Akamina's "one sample above it every 17 minutes").
//! - [`requirement`]: `<metric> <statistic> < <bound>` requirements, parsed and measured.
//! - [`convergence`]: "long enough?": a statistic's 95 % interval over time and the stop rule.
//! - [`compare`]: is B better than A? Bootstrap confidence intervals of quantile differences.
//! - [`gate`]: the bisect gate: is a candidate worse than a baseline beyond a tolerance, with
//!   95 % confidence (compare's bootstrap)? Good, bad, or cannot be judged, in `git bisect
//!   run`'s exit codes.
//! - [`curve`]: cumulative-percentage and exceedance curves, fixed-width bins (figures).
//! - [`units`]: parsing durations ("50us", "30s") and printing ns as µs.
//! - [`evt`]: pWCET from the tail by extreme value theory (GEV, Gumbel, GPD; PWM and MLE),
//!   with independence diagnostics and goodness of fit.
//! - [`taskset`]: task sets (C, T, D, priority, B, J) from TOML or rt-app JSON;
//!   [`schedulability`]: Liu-Layland, hyperbolic bound and response-time analysis.

pub mod censored;
pub mod compare;
pub mod convergence;
pub mod curve;
pub mod evt;
pub mod exceedance;
pub mod gate;
mod histogram;
mod moments;
pub mod requirement;
pub mod schedulability;
mod summary;
pub mod taskset;
pub mod units;

pub use histogram::{HistogramEncoding, LatencyHistogram, DEFAULT_MAX_NS, SIGNIFICANT_DIGITS};
pub use moments::Moments;
pub use summary::{fullest_bin, nearest_rank, percentile, FullestBin, Summary, SUMMARY_PERCENTILES};

/// Errors of the analysis crate.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum AnalysisError {
    #[error("histogram: {0}")]
    Histogram(String),
    #[error("invalid duration {text:?}: {reason}")]
    Duration { text: String, reason: String },
    #[error("invalid requirement {text:?}: {reason}")]
    Requirement { text: String, reason: String },
    #[error("pWCET: {0}")]
    Pwcet(String),
}
