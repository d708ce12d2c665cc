//! Schedulability against exact oracles: textbook task sets whose response times are
//! published, sets whose response times are derived by hand from the response-time equation
//! (the iteration is written out in the comment), the Liu-Layland bound for n = 1..10, the
//! hyperbolic bound at its boundary, and the tolerated activation latency at its boundary.
//!
//! Times in the textbook sets are abstract units; they are scaled to ms here (× 1e6 ns), which
//! leaves every response time the same number of ms.

use rtlab_analysis::schedulability::{
    analyse, assign_priorities, liu_layland_bound, tolerated_activation_latency, BoundBasis, Overheads, PriorityOrder,
    ASSIGNED_TOP_PRIORITY,
};
use rtlab_analysis::taskset::{Task, TaskSet, TaskSetFormat};

const MS: u64 = 1_000_000;

/// (name, C, T, D) in ms; D = 0 means D = T.
fn set(tasks: &[(&str, u64, u64, u64)]) -> TaskSet {
    TaskSet {
        name: None,
        format: TaskSetFormat::Toml,
        tasks: tasks
            .iter()
            .map(|&(name, c, t, d)| {
                let mut task = Task::periodic(name, c * MS, t * MS);
                if d > 0 {
                    task.deadline_ns = d * MS;
                }
                task
            })
            .collect(),
    }
}

/// Response times in ms by task name (None: misses its deadline).
fn responses(set: &TaskSet, overheads: Overheads) -> Vec<(String, Option<u64>)> {
    let analysis = analyse(set, overheads);
    let mut by_name: Vec<(String, Option<u64>)> =
        analysis.tasks.iter().map(|t| (t.name.clone(), t.response_ns.map(|r| r / MS))).collect();
    by_name.sort();
    by_name
}

fn expect(pairs: &[(&str, Option<u64>)]) -> Vec<(String, Option<u64>)> {
    let mut v: Vec<(String, Option<u64>)> = pairs.iter().map(|(n, r)| (n.to_string(), *r)).collect();
    v.sort();
    v
}

/// Joseph & Pandya (1986), "Finding response times in a real-time system", the worked
/// example of Burns & Wellings, Real-Time Systems and Programming Languages (response-time
/// analysis): a (T 7, C 3), b (T 12, C 3), c (T 20, C 5), rate-monotonic.
/// R_a = 3; R_b = 3 + ceil(6/7)·3 = 6; R_c: 5 → 11 → 14 → 17 → 20 → 20, R_c = 20.
#[test]
fn joseph_pandya_burns_wellings() {
    let s = set(&[("a", 3, 7, 0), ("b", 3, 12, 0), ("c", 5, 20, 0)]);
    assert_eq!(responses(&s, Overheads::default()), expect(&[("a", Some(3)), ("b", Some(6)), ("c", Some(20))]));
    let a = analyse(&s, Overheads::default());
    assert_eq!(a.order, PriorityOrder::RateMonotonic);
    assert!(a.schedulable);
    // U = 3/7 + 3/12 + 5/20 = 0.9286 > 0.7798: the sufficient bound fails, the exact test passes.
    assert!((a.utilization - (3.0 / 7.0 + 0.25 + 0.25)).abs() < 1e-12);
    assert!(!a.liu_layland_passed);
    assert!(a.bounds_apply);
    // Every deadline is met with no margin for c (R = D): not even 1 ns of activation latency.
    assert_eq!(tolerated_activation_latency(&s, 0), Some(0));
    let slack: Vec<Option<i64>> = a.tasks.iter().map(|t| t.slack_ns).collect();
    assert_eq!(slack, vec![Some(4 * MS as i64), Some(6 * MS as i64), Some(0)]);
}

/// Burns & Wellings, Real-Time Systems and Programming Languages, "task set C":
/// a (T 80, C 40), b (T 40, C 10), c (T 20, C 5); U = 1.0, which fails the Liu-Layland test,
/// yet R_c = 5, R_b = 10 + ceil(15/20)·5 = 15, R_a: 40 → 60 → 75 → 80 → 80, R_a = 80 = D.
#[test]
fn burns_wellings_task_set_c_full_utilisation() {
    let s = set(&[("a", 40, 80, 0), ("b", 10, 40, 0), ("c", 5, 20, 0)]);
    assert_eq!(responses(&s, Overheads::default()), expect(&[("a", Some(80)), ("b", Some(15)), ("c", Some(5))]));
    let a = analyse(&s, Overheads::default());
    assert!(a.schedulable);
    assert!((a.utilization - 1.0).abs() < 1e-12);
    assert!(!a.liu_layland_passed);
    // Π(u + 1) = 1.5 · 1.25 · 1.25 = 2.34 > 2.
    assert!((a.hyperbolic_product - 2.34375).abs() < 1e-12);
    assert!(!a.hyperbolic_passed);
}

/// Burns & Wellings, "task set B": a (T 50, C 12), b (T 40, C 10), c (T 30, C 10),
/// U = 0.82: c = 10, b = 10 + ceil(20/30)·10 = 20, a: 12 → 32 → 42 → 52 > 50: a misses.
#[test]
fn burns_wellings_task_set_b_misses() {
    let s = set(&[("a", 12, 50, 0), ("b", 10, 40, 0), ("c", 10, 30, 0)]);
    assert_eq!(responses(&s, Overheads::default()), expect(&[("a", None), ("b", Some(20)), ("c", Some(10))]));
    let a = analyse(&s, Overheads::default());
    assert!(!a.schedulable);
    let missed = a.tasks.iter().find(|t| t.name == "a").unwrap();
    assert!(!missed.schedulable);
    assert_eq!(missed.slack_ns, None);
    assert_eq!(tolerated_activation_latency(&s, 0), None);
}

/// Buttazzo, Hard Real-Time Computing Systems, deadline-monotonic example:
/// τ1 (C 1, T 4, D 3), τ2 (1, 5, 4), τ3 (2, 6, 5), τ4 (1, 11, 10). CH = 1/3 + 1/4 + 2/5 + 1/10
/// = 1.083 fails the density bound, yet R1 = 1, R2 = 2, R3 = 2 → 4 → 4, R4: 1 → 5 → 6 → 7 →
/// 9 → 10 → 10, R4 = 10 = D4.
#[test]
fn buttazzo_deadline_monotonic() {
    let s = set(&[("t1", 1, 4, 3), ("t2", 1, 5, 4), ("t3", 2, 6, 5), ("t4", 1, 11, 10)]);
    assert_eq!(
        responses(&s, Overheads::default()),
        expect(&[("t1", Some(1)), ("t2", Some(2)), ("t3", Some(4)), ("t4", Some(10))])
    );
    let a = analyse(&s, Overheads::default());
    assert_eq!(a.order, PriorityOrder::DeadlineMonotonic);
    assert_eq!(a.bound_basis, BoundBasis::Density);
    assert!(a.bounds_apply);
    assert!(!a.liu_layland_passed);
    assert!(a.schedulable);
    let names: Vec<&str> = a.tasks.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["t1", "t2", "t3", "t4"], "highest priority first");
}

/// Release jitter and blocking (Audsley, Burns, Richardson, Tindell & Wellings 1993:
/// w = C + B + Σ ceil((w + J_j)/T_j) C_j, R = J + w), on the Joseph & Pandya set with
/// J_a = 1 and B_b = 1, derived by hand:
/// R_a = 1 + 3 = 4;
/// b: w = 3 + 1 + ceil((w + 1)/7)·3: 4 → 7 → 10 → 10, R_b = 10;
/// c: w = 5 + ceil((w + 1)/7)·3 + ceil(w/12)·3: 5 → 11 → 14 → 20 → 20, R_c = 20
/// (at w = 14 a's jitter brings a third job of a into the window: ceil(15/7) = 3).
#[test]
fn jitter_and_blocking_by_hand() {
    let mut s = set(&[("a", 3, 7, 0), ("b", 3, 12, 0), ("c", 5, 20, 0)]);
    s.tasks[0].jitter_ns = MS;
    s.tasks[1].blocking_ns = MS;
    assert_eq!(responses(&s, Overheads::default()), expect(&[("a", Some(4)), ("b", Some(10)), ("c", Some(20))]));
    // The platform's activation latency adds to every task's J: 1 ms more pushes c past 20.
    let late = Overheads { activation_latency_ns: MS, switch_ns: 0 };
    assert_eq!(responses(&s, late), expect(&[("a", Some(5)), ("b", Some(11)), ("c", None)]));
    let a = analyse(&s, late);
    assert_eq!(a.tasks[0].release_jitter_ns, 2 * MS);
}

/// Context-switch overhead, C' = C + 2 CS (Burns & Wellings; Katcher et al. 1993), by hand on
/// the Joseph & Pandya set in units of 0.1 ms (C 30, 30, 50; T 70, 120, 200) with CS = 1:
/// C' = 32, 32, 52; R_a = 32; R_b = 32 + 32 = 64; c: 52 → 116 → 148 → 212 > 200: misses.
#[test]
fn switch_overhead_by_hand() {
    const UNIT: u64 = 100_000;
    let mut s = set(&[("a", 3, 7, 0), ("b", 3, 12, 0), ("c", 5, 20, 0)]);
    for t in &mut s.tasks {
        // 1 ms = 10 units.
        t.wcet_ns = t.wcet_ns / MS * 10 * UNIT;
        t.period_ns = t.period_ns / MS * 10 * UNIT;
        t.deadline_ns = t.period_ns;
    }
    let a = analyse(&s, Overheads { activation_latency_ns: 0, switch_ns: UNIT });
    let r: Vec<Option<u64>> = a.tasks.iter().map(|t| t.response_ns.map(|r| r / UNIT)).collect();
    assert_eq!(r, vec![Some(32), Some(64), None]);
    assert_eq!(a.tasks[0].charged_wcet_ns, 32 * UNIT);
    assert!(!a.schedulable);
}

/// Equal priorities run FIFO: each task counts the other as interfering. a (C 2, T 10) and
/// b (C 3, T 15), both at priority 50: R_a = 2 + 3 = 5, R_b = 3 + 2 = 5.
#[test]
fn equal_priorities_interfere_both_ways() {
    let mut s = set(&[("a", 2, 10, 0), ("b", 3, 15, 0)]);
    for t in &mut s.tasks {
        t.priority = Some(50);
    }
    assert_eq!(responses(&s, Overheads::default()), expect(&[("a", Some(5)), ("b", Some(5))]));
    let a = analyse(&s, Overheads::default());
    assert_eq!(a.order, PriorityOrder::Given);
    assert!(!a.bounds_apply, "equal priorities for different periods are not rate-monotonic");
}

/// Given priorities are used as written, even against rate-monotonic order: b (the longer
/// period) above a. R_b = 3, R_a = 2 + 3 = 5.
#[test]
fn given_priorities_win_over_rate_monotonic() {
    let mut s = set(&[("a", 2, 10, 0), ("b", 3, 15, 0)]);
    s.tasks[0].priority = Some(10);
    s.tasks[1].priority = Some(20);
    let a = analyse(&s, Overheads::default());
    assert_eq!(a.tasks[0].name, "b");
    assert_eq!(a.tasks[0].priority, 20);
    assert_eq!(responses(&s, Overheads::default()), expect(&[("a", Some(5)), ("b", Some(3))]));
    assert!(!a.bounds_apply);
}

#[test]
fn assigned_priorities_count_down_from_the_top() {
    let s = set(&[("slow", 1, 100, 0), ("fast", 1, 10, 0), ("mid", 1, 50, 0), ("mid2", 1, 50, 0)]);
    let p = assign_priorities(&s);
    assert_eq!(p.order, PriorityOrder::RateMonotonic);
    // fast, mid, mid2 (equal T: file order), slow.
    assert_eq!(
        p.priorities,
        vec![ASSIGNED_TOP_PRIORITY - 3, ASSIGNED_TOP_PRIORITY, ASSIGNED_TOP_PRIORITY - 1, ASSIGNED_TOP_PRIORITY - 2]
    );
    let mut relative = s.clone();
    relative.tasks[0].above = vec!["fast".into()];
    let p = assign_priorities(&relative);
    assert_eq!(p.order, PriorityOrder::Given);
    // slow must be above fast; mid and mid2 are free: mid, mid2, slow, fast.
    assert_eq!(
        p.priorities,
        vec![ASSIGNED_TOP_PRIORITY - 2, ASSIGNED_TOP_PRIORITY - 3, ASSIGNED_TOP_PRIORITY, ASSIGNED_TOP_PRIORITY - 1]
    );
}

#[test]
fn more_tasks_than_priorities_share_the_lowest() {
    let tasks: Vec<(String, u64)> = (0..100).map(|i| (format!("t{i}"), 1000 + i)).collect();
    let s = TaskSet {
        name: None,
        format: TaskSetFormat::Toml,
        tasks: tasks.iter().map(|(n, t)| Task::periodic(n.clone(), 1, *t)).collect(),
    };
    let p = assign_priorities(&s);
    assert_eq!(p.priorities[0], ASSIGNED_TOP_PRIORITY);
    assert_eq!(p.priorities[89], 1);
    assert_eq!(p.priorities[99], 1);
    // The analysis is made with those shared priorities: still valid, only more pessimistic.
    assert!(analyse(&s, Overheads::default()).schedulable);
}

/// n(2^(1/n) - 1) for n = 1..10 against the formula and the published values (Liu & Layland
/// 1973; Buttazzo, Table 4.x): 1.0, 0.8284, 0.7798, 0.7568, 0.7435, 0.7348, 0.7286, 0.7241,
/// 0.7205, 0.7177; decreasing towards ln 2.
#[test]
fn liu_layland_bound_for_one_to_ten_tasks() {
    let published = [1.0, 0.8284, 0.7798, 0.7568, 0.7435, 0.7348, 0.7286, 0.7241, 0.7205, 0.7177];
    for (i, &value) in published.iter().enumerate() {
        let n = i + 1;
        let bound = liu_layland_bound(n);
        let formula = n as f64 * (2f64.powf(1.0 / n as f64) - 1.0);
        assert_eq!(bound, formula, "n = {n}");
        assert!((bound - value).abs() < 5e-5, "n = {n}: {bound} vs {value}");
        if n > 1 {
            assert!(bound < liu_layland_bound(n - 1));
        }
        assert!(bound > std::f64::consts::LN_2);
    }
    assert!((liu_layland_bound(2) - 2.0 * (2f64.sqrt() - 1.0)).abs() < 1e-15);
    assert!((liu_layland_bound(1_000_000) - std::f64::consts::LN_2).abs() < 1e-6);
}

/// Bini, Buttazzo & Buttazzo (2003): Π(u_i + 1) ≤ 2 is sufficient for rate-monotonic
/// priorities and beats Liu-Layland: u = 0.6 and 0.25 give U = 0.85 > 0.8284 but
/// Π = 1.6 · 1.25 = 2 exactly, which passes (checked in exact arithmetic). With T 10 and 20:
/// R_1 = 6, R_2 = 5 → 11 → 17 → 17.
#[test]
fn hyperbolic_bound_at_its_boundary() {
    let s = set(&[("a", 6, 10, 0), ("b", 5, 20, 0)]);
    let a = analyse(&s, Overheads::default());
    assert!(!a.liu_layland_passed);
    assert!(a.hyperbolic_passed);
    assert!((a.hyperbolic_product - 2.0).abs() < 1e-12);
    assert_eq!(responses(&s, Overheads::default()), expect(&[("a", Some(6)), ("b", Some(17))]));
    // 1 ns more on b's C tips the product over 2.
    let mut over = s.clone();
    over.tasks[1].wcet_ns += 1;
    assert!(!analyse(&over, Overheads::default()).hyperbolic_passed);
}

/// The tolerated activation latency is the boundary: schedulable at it, not 1 ns above.
/// By hand for (C 20, T 50), (10, 80), (30, 100) ms: with A = 10 ms, R = 30, 40 and
/// c: w = 30 + ceil((w + 10)/50)·20 + ceil((w + 10)/80)·10: 30 → 60 → 80 → 90 → 90,
/// R_c = 10 + 90 = 100 = D; any more and c's window takes a third job of a.
#[test]
fn tolerated_latency_is_the_boundary() {
    let s = set(&[("a", 20, 50, 0), ("b", 10, 80, 0), ("c", 30, 100, 0)]);
    let tolerated = tolerated_activation_latency(&s, 0).unwrap();
    assert_eq!(tolerated, 10 * MS);
    let at = analyse(&s, Overheads { activation_latency_ns: tolerated, switch_ns: 0 });
    assert!(at.schedulable);
    assert_eq!(at.tasks.iter().map(|t| t.response_ns.unwrap() / MS).collect::<Vec<_>>(), vec![30, 40, 100]);
    assert!(!analyse(&s, Overheads { activation_latency_ns: tolerated + 1, switch_ns: 0 }).schedulable);

    // Switch overhead eats into it; the boundary property holds for any CS.
    for switch_ns in [1, 1_000, 100_000, 250_000] {
        let t = tolerated_activation_latency(&s, switch_ns).unwrap();
        assert!(t < tolerated);
        assert!(analyse(&s, Overheads { activation_latency_ns: t, switch_ns }).schedulable);
        assert!(!analyse(&s, Overheads { activation_latency_ns: t + 1, switch_ns }).schedulable);
    }
}

/// Dodiu's per-task figures: u = C/T, ch = C/D, L = D - C; U and CH.
#[test]
fn dodiu_figures() {
    let s = set(&[("ctrl", 2, 10, 8), ("log", 5, 50, 0)]);
    let a = analyse(&s, Overheads::default());
    let ctrl = a.tasks.iter().find(|t| t.name == "ctrl").unwrap();
    assert!((ctrl.utilization - 0.2).abs() < 1e-12);
    assert!((ctrl.density - 0.25).abs() < 1e-12);
    assert_eq!(ctrl.laxity_ns, 6 * MS as i64);
    assert!((a.utilization - 0.3).abs() < 1e-12);
    assert!((a.density - 0.35).abs() < 1e-12);
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    fn arbitrary_set() -> impl Strategy<Value = TaskSet> {
        prop::collection::vec((1u64..50, 1u64..200, 0u64..20, 0u64..20), 1..6).prop_map(|tasks| TaskSet {
            name: None,
            format: TaskSetFormat::Toml,
            tasks: tasks
                .into_iter()
                .enumerate()
                .map(|(i, (c, extra, b, j))| {
                    let mut t = Task::periodic(format!("t{i}"), c * 1000, (c + extra) * 1000);
                    t.blocking_ns = b * 100;
                    t.jitter_ns = j * 100;
                    t
                })
                .collect(),
        })
    }

    proptest! {
        /// R never falls when the activation latency or the switch time grows, R ≥ J + C'
        /// when found, and the tolerated latency is exactly the boundary.
        #[test]
        fn monotone_and_bounded(s in arbitrary_set(), latency in 0u64..50_000, switch_ns in 0u64..5_000) {
            let base = analyse(&s, Overheads { activation_latency_ns: latency, switch_ns });
            let more = analyse(&s, Overheads { activation_latency_ns: latency + 1000, switch_ns: switch_ns + 100 });
            for (a, b) in base.tasks.iter().zip(&more.tasks) {
                prop_assert_eq!(&a.name, &b.name);
                if let Some(rb) = b.response_ns {
                    prop_assert!(a.response_ns.is_some_and(|ra| ra <= rb));
                }
                if let Some(r) = a.response_ns {
                    prop_assert!(r >= a.release_jitter_ns + a.charged_wcet_ns + a.blocking_ns);
                    prop_assert!(r <= a.deadline_ns);
                }
            }
            let meets = |latency: u64| analyse(&s, Overheads { activation_latency_ns: latency, switch_ns }).schedulable;
            match tolerated_activation_latency(&s, switch_ns) {
                Some(t) => {
                    prop_assert!(meets(t));
                    prop_assert!(!meets(t + 1));
                }
                None => prop_assert!(!meets(0)),
            }
        }
    }
}
