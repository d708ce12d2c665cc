//! Schedulability of a task set on one CPU under fixed priorities (Dodiu et al. 2010 and
//! the classic tests): per-task u = C/T, ch = C/D, laxity L = D - C; the Liu-Layland bound
//! n(2^(1/n) - 1), the hyperbolic bound, and exact response-time analysis with release
//! jitter, blocking and context-switch overhead:
//! `w = C' + B + Σ_{j ∈ hp} ceil((w + J_j)/T_j) C'_j`, `R = J + w`, `C' = C + 2 CS`.
//! Priorities: as given, else rate-monotonic, deadline-monotonic when some D < T.

use crate::taskset::TaskSet;
use serde::{Deserialize, Serialize};

/// Platform figures the analysis charges to every task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Overheads {
    /// Activation latency added to each task's release jitter, ns.
    pub activation_latency_ns: u64,
    /// Task-switch time CS, charged twice per job, ns.
    pub switch_ns: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PriorityOrder {
    /// Every task gave its priority.
    Given,
    RateMonotonic,
    DeadlineMonotonic,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskAnalysis {
    pub name: String,
    /// Effective SCHED_FIFO priority (higher runs first).
    pub priority: i32,
    /// u = C/T.
    pub utilization: f64,
    /// ch = C/D.
    pub density: f64,
    /// L = D - C, ns.
    pub laxity_ns: i64,
    /// Worst-case response time R; None when the iteration passes the deadline (then
    /// the task is not schedulable).
    pub response_ns: Option<u64>,
    /// D - R, ns.
    pub slack_ns: Option<i64>,
    pub schedulable: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    pub order: PriorityOrder,
    pub overheads: Overheads,
    /// Highest priority first.
    pub tasks: Vec<TaskAnalysis>,
    /// U = Σ C/T.
    pub utilization: f64,
    /// CH = Σ C/D.
    pub density: f64,
    /// n(2^(1/n) - 1).
    pub liu_layland_bound: f64,
    /// U ≤ the bound (sufficient only; meaningful for D = T).
    pub liu_layland_passed: bool,
    /// Π (u_i + 1).
    pub hyperbolic_product: f64,
    /// Π (u_i + 1) ≤ 2 (sufficient only).
    pub hyperbolic_passed: bool,
    /// Every task's R ≤ D (exact).
    pub schedulable: bool,
}

/// The Liu-Layland utilization bound n(2^(1/n) - 1).
pub fn liu_layland_bound(n: usize) -> f64 {
    let _ = n;
    todo!("issue 8: schedulability")
}

/// Analyses `set` with `overheads`.
pub fn analyse(set: &TaskSet, overheads: Overheads) -> Analysis {
    let _ = (set, overheads);
    todo!("issue 8: schedulability")
}

/// The largest activation latency (ns) with which every deadline is still met, found by
/// search, with `switch_ns` charged; None when the set misses a deadline even at 0.
pub fn tolerated_activation_latency(set: &TaskSet, switch_ns: u64) -> Option<u64> {
    let _ = (set, switch_ns);
    todo!("issue 8: schedulability")
}
