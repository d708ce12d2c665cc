//! Schedulability of a task set on one CPU under fixed priorities (Dodiu et al. 2010 and
//! the classic tests): per-task u = C/T, ch = C/D, laxity L = D - C; the Liu-Layland bound
//! n(2^(1/n) - 1), the hyperbolic bound (Bini, Buttazzo, Buttazzo 2003: Π(u_i + 1) ≤ 2), and
//! exact response-time analysis with release jitter, blocking and context-switch overhead
//! (Joseph & Pandya 1986; Audsley et al. 1993):
//! `w = C' + B + Σ_{j ∈ hp} ceil((w + J_j)/T_j) C'_j`, `R = J + w`, `C' = C + 2 CS`,
//! where J is the task's own release jitter plus the platform's activation latency.
//! Priorities: as given, else rate-monotonic, deadline-monotonic when some D < T.
//! Tasks of equal priority run FIFO under SCHED_FIFO: each counts the others as
//! interfering (in hp), which is safe and exact for a job released just after them.
//!
//! Times are integer ns; the iteration runs in u128 with saturating arithmetic, so no input
//! overflows (a saturated sum is far past any deadline).

use crate::taskset::TaskSet;
use serde::{Deserialize, Serialize};

/// The highest SCHED_FIFO priority the analysis assigns (rate-/deadline-monotonic or
/// relative orders): the next tasks get 89, 88, ... down to 1. It stays below rtlab's
/// measuring threads (95) and leaves room above for the kernel's own threads.
pub const ASSIGNED_TOP_PRIORITY: i32 = 90;

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
    /// Every task gave its priority (numbers), or the set orders them with `above`.
    Given,
    RateMonotonic,
    DeadlineMonotonic,
}

/// What the Liu-Layland and hyperbolic bounds are applied to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BoundBasis {
    /// U = Σ C/T: every D = T.
    Utilization,
    /// CH = Σ C/D: some D < T, each task taken as if its period were D (still sufficient).
    Density,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskAnalysis {
    pub name: String,
    /// Effective SCHED_FIFO priority (higher runs first).
    pub priority: i32,
    /// C, T, D, B as in the set, ns.
    pub wcet_ns: u64,
    pub period_ns: u64,
    pub deadline_ns: u64,
    pub blocking_ns: u64,
    /// Release jitter charged: the task's own J plus the activation latency, ns.
    pub release_jitter_ns: u64,
    /// C' = C + 2 CS, ns.
    pub charged_wcet_ns: u64,
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
    /// How the priorities were set, one sentence.
    pub order_rule: String,
    pub overheads: Overheads,
    /// Highest priority first (file order among equals).
    pub tasks: Vec<TaskAnalysis>,
    /// U = Σ C/T.
    pub utilization: f64,
    /// CH = Σ C/D.
    pub density: f64,
    /// n(2^(1/n) - 1).
    pub liu_layland_bound: f64,
    /// U ≤ the bound (CH ≤ the bound when some D < T); sufficient only. Like the hyperbolic
    /// bound it leaves out blocking, jitter and switch overhead: the exact test has them.
    pub liu_layland_passed: bool,
    /// Π (u_i + 1) (Π (ch_i + 1) when some D < T).
    pub hyperbolic_product: f64,
    /// The product ≤ 2 (sufficient only).
    pub hyperbolic_passed: bool,
    /// What the two bounds were applied to.
    pub bound_basis: BoundBasis,
    /// The priorities are rate-monotonic (deadline-monotonic for the density basis), which
    /// the two bounds assume; when false their verdicts prove nothing for this order.
    pub bounds_apply: bool,
    /// Every task's R ≤ D (exact).
    pub schedulable: bool,
}

/// The Liu-Layland utilization bound n(2^(1/n) - 1); 1 for n = 0 (nothing to bound).
pub fn liu_layland_bound(n: usize) -> f64 {
    if n == 0 {
        return 1.0;
    }
    let n = n as f64;
    n * (2f64.powf(1.0 / n) - 1.0)
}

/// Effective priorities of a task set, per task in file order.
#[derive(Debug, Clone, PartialEq)]
pub struct PriorityAssignment {
    pub order: PriorityOrder,
    pub rule: String,
    /// SCHED_FIFO priority of each task, in the set's order.
    pub priorities: Vec<i32>,
}

/// The priorities the analysis (and `rtlab run --taskset`) uses: the numbers when every task
/// gives one; the `above` order when the set has one (tasks it leaves unordered in rate- or
/// deadline-monotonic order); else rate-monotonic, deadline-monotonic when some D < T.
/// Assigned orders get distinct priorities from [`ASSIGNED_TOP_PRIORITY`] down (1 at the
/// least; ties of T or D go to the earlier task in the file). An invalid set (see
/// [`TaskSet::validate`]) is ordered as well as it can be, never rejected here.
pub fn assign_priorities(set: &TaskSet) -> PriorityAssignment {
    let n = set.tasks.len();
    let deadline_monotonic = set.has_constrained_deadlines();
    let monotonic_name = if deadline_monotonic { "deadline-monotonic" } else { "rate-monotonic" };
    let all_numeric = n > 0 && set.tasks.iter().all(|t| t.priority.is_some());
    if all_numeric {
        return PriorityAssignment {
            order: PriorityOrder::Given,
            rule: "given: each task's priority as written (equal priorities run FIFO)".into(),
            priorities: set.tasks.iter().map(|t| t.priority.unwrap_or(0)).collect(),
        };
    }
    let relative = set.tasks.iter().any(|t| !t.above.is_empty());
    let ranked: Vec<usize> = match relative.then(|| set.relative_order()).and_then(Result::ok) {
        Some(order) => order,
        None => {
            let key = set.monotonic_key();
            let mut order: Vec<usize> = (0..n).collect();
            order.sort_by_key(|&i| key(i));
            order
        }
    };
    let mut priorities = vec![1; n];
    for (rank, &i) in ranked.iter().enumerate() {
        let rank = i32::try_from(rank).unwrap_or(i32::MAX);
        priorities[i] = ASSIGNED_TOP_PRIORITY.saturating_sub(rank).max(1);
    }
    let (order, rule) = if relative {
        (
            PriorityOrder::Given,
            format!("given relatively (\"above\"); tasks it leaves unordered in {monotonic_name} order"),
        )
    } else if deadline_monotonic {
        (
            PriorityOrder::DeadlineMonotonic,
            "deadline-monotonic: shorter deadline D, higher priority (some D < T)".into(),
        )
    } else {
        (PriorityOrder::RateMonotonic, "rate-monotonic: shorter period T, higher priority".into())
    };
    PriorityAssignment { order, rule, priorities }
}

/// Analyses `set` with `overheads`.
pub fn analyse(set: &TaskSet, overheads: Overheads) -> Analysis {
    let assignment = assign_priorities(set);
    let responses = response_times(set, &assignment.priorities, overheads);
    let mut tasks: Vec<(usize, TaskAnalysis)> = set
        .tasks
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let response_ns = responses.get(i).copied().flatten();
            let slack_ns = response_ns.map(|r| signed(t.deadline_ns).saturating_sub(signed(r)));
            (
                i,
                TaskAnalysis {
                    name: t.name.clone(),
                    priority: assignment.priorities.get(i).copied().unwrap_or(1),
                    wcet_ns: t.wcet_ns,
                    period_ns: t.period_ns,
                    deadline_ns: t.deadline_ns,
                    blocking_ns: t.blocking_ns,
                    release_jitter_ns: t.jitter_ns.saturating_add(overheads.activation_latency_ns),
                    charged_wcet_ns: t.wcet_ns.saturating_add(overheads.switch_ns.saturating_mul(2)),
                    utilization: ratio(t.wcet_ns, t.period_ns),
                    density: ratio(t.wcet_ns, t.deadline_ns),
                    laxity_ns: signed(t.deadline_ns).saturating_sub(signed(t.wcet_ns)),
                    response_ns,
                    slack_ns,
                    schedulable: response_ns.is_some(),
                },
            )
        })
        .collect();
    tasks.sort_by_key(|(i, t)| (std::cmp::Reverse(t.priority), *i));
    let tasks: Vec<TaskAnalysis> = tasks.into_iter().map(|(_, t)| t).collect();

    let bound_basis = if set.has_constrained_deadlines() { BoundBasis::Density } else { BoundBasis::Utilization };
    let utilization: f64 = tasks.iter().map(|t| t.utilization).sum();
    let density: f64 = tasks.iter().map(|t| t.density).sum();
    let liu_layland_bound = liu_layland_bound(set.tasks.len());
    let (bounded, divisor): (f64, fn(&crate::taskset::Task) -> u64) = match bound_basis {
        BoundBasis::Utilization => (utilization, |t| t.period_ns),
        BoundBasis::Density => (density, |t| t.deadline_ns),
    };
    let hyperbolic_product: f64 = set.tasks.iter().map(|t| ratio(t.wcet_ns, divisor(t)) + 1.0).product();
    let hyperbolic_passed = hyperbolic_holds(set, divisor).unwrap_or(hyperbolic_product <= 2.0);
    let bounds_apply = priorities_are_monotonic(set, &assignment.priorities, divisor);
    Analysis {
        order: assignment.order,
        order_rule: assignment.rule,
        overheads,
        schedulable: tasks.iter().all(|t| t.schedulable),
        tasks,
        utilization,
        density,
        liu_layland_bound,
        liu_layland_passed: bounded <= liu_layland_bound,
        hyperbolic_product,
        hyperbolic_passed,
        bound_basis,
        bounds_apply,
    }
}

/// The largest activation latency (ns) with which every deadline is still met, found by
/// search, with `switch_ns` charged; None when the set misses a deadline even at 0.
/// Response times only grow with the activation latency (it adds to every J), so the
/// search is a binary search between 0 (schedulable) and one past the longest deadline
/// (every R ≥ J > D there).
pub fn tolerated_activation_latency(set: &TaskSet, switch_ns: u64) -> Option<u64> {
    let priorities = assign_priorities(set).priorities;
    let meets = |latency: u64| {
        let overheads = Overheads { activation_latency_ns: latency, switch_ns };
        response_times(set, &priorities, overheads).iter().all(Option::is_some)
    };
    if !meets(0) {
        return None;
    }
    let mut good = 0u64;
    let mut bad = set.tasks.iter().map(|t| t.deadline_ns).max().unwrap_or(0).saturating_add(1);
    if meets(bad) {
        // Only a set without tasks (or of zero-cost tasks with no deadlines to speak of).
        return Some(bad);
    }
    while bad - good > 1 {
        let middle = good + (bad - good) / 2;
        if meets(middle) {
            good = middle;
        } else {
            bad = middle;
        }
    }
    Some(good)
}

/// R for every task (file order) under `priorities`; None where the iteration passes D.
pub fn response_times(set: &TaskSet, priorities: &[i32], overheads: Overheads) -> Vec<Option<u64>> {
    let latency = u128::from(overheads.activation_latency_ns);
    let charged = |c: u64| u128::from(c).saturating_add(u128::from(overheads.switch_ns).saturating_mul(2));
    let priority_of = |i: usize| priorities.get(i).copied().unwrap_or(1);
    (0..set.tasks.len())
        .map(|i| {
            let task = &set.tasks[i];
            let own_jitter = u128::from(task.jitter_ns).saturating_add(latency);
            let deadline = u128::from(task.deadline_ns);
            let base = charged(task.wcet_ns).saturating_add(u128::from(task.blocking_ns));
            // Equal priorities interfere (FIFO): hp(i) is every other task at ≥ i's priority.
            let interfering: Vec<(u128, u128, u128)> = (0..set.tasks.len())
                .filter(|&j| j != i && priority_of(j) >= priority_of(i))
                .map(|j| {
                    let t = &set.tasks[j];
                    (u128::from(t.period_ns), u128::from(t.jitter_ns).saturating_add(latency), charged(t.wcet_ns))
                })
                .collect();
            let mut w = base;
            loop {
                if own_jitter.saturating_add(w) > deadline {
                    return None;
                }
                let mut next = base;
                for &(period, jitter, cost) in &interfering {
                    let jobs = ceil_div(w.saturating_add(jitter), period)?;
                    next = next.saturating_add(jobs.saturating_mul(cost));
                }
                if next == w {
                    // ≤ D < 2^64: fits.
                    return u64::try_from(own_jitter + w).ok();
                }
                w = next;
            }
        })
        .collect()
}

/// ceil(a / b); None for b = 0 (a task without a period interferes without bound).
fn ceil_div(a: u128, b: u128) -> Option<u128> {
    if b == 0 {
        return None;
    }
    Some(a.div_ceil(b))
}

fn ratio(numerator: u64, denominator: u64) -> f64 {
    numerator as f64 / denominator as f64
}

fn signed(ns: u64) -> i64 {
    i64::try_from(ns).unwrap_or(i64::MAX)
}

/// Π (C_i + X_i) ≤ 2 Π X_i in exact integers (X = T or D), None when the products do not
/// fit in u128 (the floating-point product decides then).
fn hyperbolic_holds(set: &TaskSet, divisor: fn(&crate::taskset::Task) -> u64) -> Option<bool> {
    let mut left: u128 = 1;
    let mut right: u128 = 2;
    for t in &set.tasks {
        let x = u128::from(divisor(t));
        left = left.checked_mul(u128::from(t.wcet_ns).checked_add(x)?)?;
        right = right.checked_mul(x)?;
    }
    Some(left <= right)
}

/// Shorter T (or D) never has a lower priority, and different T (or D) never share one.
fn priorities_are_monotonic(set: &TaskSet, priorities: &[i32], key: fn(&crate::taskset::Task) -> u64) -> bool {
    let tasks = &set.tasks;
    (0..tasks.len()).all(|i| {
        (0..tasks.len()).all(|j| {
            let (pi, pj) = (priorities.get(i), priorities.get(j));
            key(&tasks[i]) >= key(&tasks[j]) || pi > pj
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::taskset::{Task, TaskSetFormat};

    fn set(tasks: Vec<Task>) -> TaskSet {
        TaskSet { name: None, format: TaskSetFormat::Toml, tasks }
    }

    #[test]
    fn a_single_task_responds_in_c_plus_overheads() {
        let s = set(vec![Task::periodic("a", 2_000, 10_000)]);
        let a = analyse(&s, Overheads { activation_latency_ns: 300, switch_ns: 50 });
        assert_eq!(a.tasks[0].response_ns, Some(300 + 2_000 + 100));
        assert_eq!(a.tasks[0].slack_ns, Some(10_000 - 2_400));
        assert_eq!(tolerated_activation_latency(&s, 50), Some(10_000 - 2_100));
    }

    #[test]
    fn a_zero_period_does_not_panic() {
        let mut broken = Task::periodic("z", 1, 0);
        broken.deadline_ns = 0;
        let s = set(vec![Task::periodic("a", 1, 10), broken]);
        let a = analyse(&s, Overheads::default());
        assert!(!a.schedulable);
    }

    #[test]
    fn huge_values_saturate_instead_of_overflowing() {
        let s = set(vec![Task::periodic("a", u64::MAX / 2, u64::MAX), Task::periodic("b", u64::MAX / 2, u64::MAX)]);
        let a = analyse(&s, Overheads { activation_latency_ns: u64::MAX, switch_ns: u64::MAX });
        assert!(!a.schedulable);
        assert_eq!(tolerated_activation_latency(&s, u64::MAX), None);
    }
}
