//! Timing requirements: `<metric> <statistic> < <bound>` (DESIGN.md), e.g. `timer max < 500us`,
//! `net.activation p99.999 < 100us`, and their evaluation against a distribution.

use serde::{Deserialize, Serialize};

/// Which figure of a distribution a requirement bounds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Statistic {
    Max,
    Mean,
    /// A percentile, 0 < p < 100 (`p99.999` is 99.999).
    Percentile(f64),
    /// Probabilistic WCET at an exceedance probability (`pwcet(1e-9)`); needs the EVT
    /// analysis (not available yet: evaluating it is an error that says so).
    Pwcet(f64),
}

/// One parsed requirement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Requirement {
    /// As written by the user, normalised ("timer.latency max < 500us").
    pub text: String,
    /// Full metric name: a probe name alone means its main metric (`timer` = `timer.latency`).
    pub metric: String,
    pub statistic: Statistic,
    /// The bound in ns; the requirement holds when the statistic is strictly below it.
    pub bound_ns: i64,
}

/// Parses one requirement. Errors are one line, naming what is wrong and the grammar.
pub fn parse_requirement(text: &str) -> Result<Requirement, crate::AnalysisError> {
    let _ = text;
    todo!("helper R1")
}
