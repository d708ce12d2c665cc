//! `explain` against exact oracles on synthetic event streams, and its invariant (the causes
//! sum to the latency) over random streams.

mod split_scenario;

use proptest::prelude::*;
use rtlab_probe::split::{
    explain, split_samples, Cause, CauseKind, SplitParts, Stimulus, WakeSample, EVENTS_LOST_NAME,
};
use rtlab_sys::tracefs::event::{EventKind, KernelEvent, Vector};
use rtlab_sys::tracefs::StealSample;
use split_scenario::*;

const D: u64 = 10_000_000_000;

fn cause(kind: CauseKind, name: &str, pid: Option<i32>, prio: Option<i32>, ns: i64) -> Cause {
    Cause { kind, name: name.to_string(), pid, prio, ns }
}

fn own(ns: i64) -> Cause {
    cause(CauseKind::OwnThread, COMM, Some(TID), Some(PRIO), ns)
}

fn idle_blocking(ns: i64) -> Cause {
    cause(CauseKind::BlockingTask, "idle", Some(0), None, ns)
}

fn local_timer(ns: i64) -> Cause {
    cause(CauseKind::IrqHandler, "local_timer", None, None, ns)
}

fn unaccounted(ns: i64) -> Cause {
    cause(CauseKind::Unaccounted, "", None, None, ns)
}

fn task(kind: CauseKind, t: Task, ns: i64) -> Cause {
    cause(kind, t.comm, Some(t.pid), Some(t.prio), ns)
}

fn steal(ts_ns: u64, cpu: u32, steal_ns: u64) -> StealSample {
    StealSample { ts_ns, cpu, steal_ns }
}

/// The thread armed its timer for `D` and went to sleep, leaving `next` on the CPU.
fn asleep(next: Task) -> Scenario {
    let mut sc = Scenario::on(0);
    sc.arm(D - 900_000, TID, TIMER, D as i64).switch(D - 899_000, THREAD, next);
    sc
}

fn explain_timer(sc: &Scenario, wake_ns: u64, steal: &[StealSample]) -> rtlab_probe::split::Explanation {
    let sample = WakeSample { cpu: 0, due_ns: D, wake_ns };
    let parts = split_samples(&sc.events, TID, Stimulus::Timer, &[sample]).pop().and_then(Result::ok);
    explain(&sc.events, TID, PRIO, Stimulus::Timer, &sample, parts, steal)
}

#[test]
fn a_late_timer_irq_on_an_idle_cpu_with_nothing_traced_is_unaccounted_with_steal() {
    let irq = D + 4_100_000;
    let mut sc = asleep(IDLE);
    sc.timer_irq(irq, 0).switch(irq + 100, IDLE, THREAD);
    let readings = [
        steal(D - 5_000_000, 0, 100),
        steal(D - 1_000_000, 0, 1_000),
        steal(D + 10_000_000, 1, 9_999_999), // another CPU
        steal(D + 20_000_000, 0, 4_001_000),
        steal(D + 30_000_000, 0, 9_000_000),
    ];
    let got = explain_timer(&sc, irq + 150, &readings);
    assert_eq!(got.latency_ns, 4_100_150);
    assert_eq!(
        got.parts,
        Some(SplitParts {
            first_ns: 4_100_000,
            sched_ns: 100,
            return_ns: 50,
            handled_at_ns: irq,
            switched_in_at_ns: irq + 100,
            switch_in_inferred: false
        })
    );
    assert_eq!(got.causes, vec![unaccounted(4_100_000), local_timer(60), own(50), idle_blocking(40)]);
    assert_eq!((got.steal_ns, got.steal_window_ns), (Some(4_000_000), Some(21_000_000)));
    assert_eq!(
        got.summary,
        "timer IRQ 4.1 ms late with the CPU idle and no guest event (unaccounted; steal +4.0 ms) \
         (+3 smaller causes, 150 ns)"
    );
}

#[test]
fn a_cpu_hog_holds_off_the_timer_irq_and_then_blocks_the_thread() {
    let irq = D + 20_000;
    let mut sc = asleep(STRESS);
    sc.timer_irq(irq, STRESS.pid).switch(irq + 35_060, STRESS, THREAD);
    let got = explain_timer(&sc, irq + 35_110, &[]);
    assert_eq!(
        got.causes,
        vec![
            task(CauseKind::BlockingTask, STRESS, 35_000),
            task(CauseKind::IrqDelayedTask, STRESS, 20_000),
            local_timer(60),
            own(50),
        ]
    );
    assert_eq!((got.steal_ns, got.steal_window_ns), (None, None));
    assert_eq!(
        got.summary,
        "timer IRQ held off 20 µs while stress-ng-cpu (pid 812, prio 120) ran, \
         then stress-ng-cpu (pid 812, prio 120) ran 35 µs (+2 smaller causes, 110 ns)"
    );
}

#[test]
fn a_long_silence_before_the_timer_irq_while_a_task_is_current_is_unaccounted_and_names_the_task() {
    // 3 ms with the timer due and nothing traced while stress-ng-cpu is current: a guest does
    // not hold interrupts off that long, the vCPU did not run; the task stays on record.
    let irq = D + 3_000_000;
    let mut sc = asleep(STRESS);
    sc.timer_irq(irq, STRESS.pid).switch(irq + 100, STRESS, THREAD);
    let got = explain_timer(&sc, irq + 150, &[]);
    assert_eq!(
        got.causes,
        vec![
            cause(
                CauseKind::Unaccounted,
                "while stress-ng-cpu was current",
                Some(STRESS.pid),
                Some(STRESS.prio),
                3_000_000
            ),
            local_timer(60),
            own(50),
            task(CauseKind::BlockingTask, STRESS, 40),
        ]
    );
    assert_eq!(got.causes.iter().map(|c| c.ns).sum::<i64>(), got.latency_ns);
}

#[test]
fn nested_handlers_are_charged_innermost_first_and_never_twice() {
    let irq = D + 1_000;
    let mut sc = asleep(IDLE);
    sc.vector_in(irq, 0, Vector::LocalTimer)
        .irq_in(irq + 100, 0, 11, "virtio0")
        .irq_out(irq + 300, 0, 11)
        .expire_in_now(irq + 350, irq + 340, 0, TIMER)
        .waking(irq + 360, 0, THREAD)
        .expire_out(irq + 380, 0, TIMER)
        .vector_out(irq + 400, 0, Vector::LocalTimer)
        .softirq_in(irq + 410, 0, 3)
        .irq_in(irq + 500, 0, 11, "virtio0")
        .irq_out(irq + 520, 0, 11)
        .softirq_out(irq + 600, 0, 3)
        .switch(irq + 700, IDLE, THREAD);
    let got = explain_timer(&sc, irq + 800, &[]);
    // The handling starts at the kernel's clock read, inside the vector: what came before
    // it in the vector is still the vector's (or the nested handler's) time.
    assert_eq!(got.parts.map(|p| p.handled_at_ns), Some(irq + 340));
    assert_eq!(
        got.causes,
        vec![
            cause(CauseKind::IrqDelayedIdle, "", None, None, 1_000),
            cause(CauseKind::IrqHandler, "irq 11 virtio0", None, None, 220),
            local_timer(200),
            cause(CauseKind::Softirq, "softirq NET_RX", None, None, 170),
            idle_blocking(110),
            own(100),
        ]
    );
    assert_eq!(
        got.summary,
        "timer IRQ 1.0 µs late leaving idle, then IRQ handler local_timer ran 200 ns, \
         then IRQ handler irq 11 virtio0 ran 220 ns (+3 smaller causes, 380 ns)"
    );
}

#[test]
fn threads_switched_in_after_the_handling_are_higher_priority_only_if_above_the_thread() {
    let irq = D + 1_000;
    let mut sc = asleep(STRESS);
    sc.timer_irq(irq, STRESS.pid).switch(irq + 100, STRESS, MIGRATION).switch(irq + 5_100, MIGRATION, LOW_RT).switch(
        irq + 8_100,
        LOW_RT,
        THREAD,
    );
    let got = explain_timer(&sc, irq + 8_200, &[]);
    assert_eq!(
        got.causes,
        vec![
            task(CauseKind::HigherPriorityThread, MIGRATION, 5_000),
            task(CauseKind::BlockingTask, LOW_RT, 3_000),
            task(CauseKind::IrqDelayedTask, STRESS, 1_000),
            own(100),
            local_timer(60),
            task(CauseKind::BlockingTask, STRESS, 40),
        ]
    );
    assert_eq!(
        got.summary,
        "timer IRQ held off 1.0 µs while stress-ng-cpu (pid 812, prio 120) ran, \
         then higher-priority migration/0 (pid 15, prio 0) ran 5.0 µs first, \
         then rt-low (pid 900, prio 49) ran 3.0 µs (+3 smaller causes, 200 ns)"
    );
}

#[test]
fn a_higher_priority_thread_already_running_at_the_handling_is_a_blocking_task() {
    let irq = D + 1_000;
    let mut sc = asleep(MIGRATION);
    sc.timer_irq(irq, MIGRATION.pid).switch(irq + 2_060, MIGRATION, THREAD);
    let got = explain_timer(&sc, irq + 2_110, &[]);
    assert_eq!(
        got.causes,
        vec![
            task(CauseKind::BlockingTask, MIGRATION, 2_000),
            task(CauseKind::IrqDelayedTask, MIGRATION, 1_000),
            local_timer(60),
            own(50),
        ]
    );
}

#[test]
fn the_context_at_the_due_time_is_replayed_from_earlier_events() {
    // The stress task was switched in half a second before; a device IRQ it was interrupted
    // by is still running at the due time.
    let build = |irq_exit: u64| {
        let mut sc = Scenario::on(0);
        sc.arm(D - 600_000_000, TID, TIMER, D as i64)
            .switch(D - 500_000_000, THREAD, STRESS)
            .irq_in(D - 10_000, STRESS.pid, 11, "virtio0")
            .irq_out(irq_exit, STRESS.pid, 11)
            .timer_irq(irq_exit + 10, STRESS.pid)
            .switch(irq_exit + 100, STRESS, THREAD);
        explain_timer(&sc, irq_exit + 150, &[])
    };
    let got = build(D + 20_000);
    assert_eq!(
        got.causes,
        vec![
            cause(CauseKind::IrqHandler, "irq 11 virtio0", None, None, 20_000),
            local_timer(60),
            own(50),
            task(CauseKind::BlockingTask, STRESS, 30),
            task(CauseKind::IrqDelayedTask, STRESS, 10),
        ]
    );
    // The same handler "running" for 60 µs with nothing traced: the vCPU was not running.
    let got = build(D + 60_000);
    assert_eq!(got.causes.first(), Some(&unaccounted(60_000)));
    assert_eq!(got.causes.iter().map(|c| c.ns).sum::<i64>(), got.latency_ns);
}

#[test]
fn time_before_lost_events_is_unaccounted_and_the_sample_is_explained_without_parts() {
    let irq = D + 5_000;
    let mut sc = asleep(IDLE);
    sc.lost(D + 3_000).timer_irq(irq, 0).switch(irq + 100, IDLE, THREAD);
    let got = explain_timer(&sc, irq + 150, &[]);
    assert_eq!(got.parts, None);
    assert_eq!(
        got.causes,
        vec![
            cause(CauseKind::Unaccounted, EVENTS_LOST_NAME, None, None, 3_000),
            cause(CauseKind::IrqDelayedIdle, "", None, None, 2_000),
            local_timer(60),
            own(50),
            idle_blocking(40),
        ]
    );
    assert!(got.summary.starts_with("3.0 µs in which the kernel lost events, then timer IRQ 2.0 µs late leaving idle"));
}

#[test]
fn a_long_silence_while_the_thread_runs_is_unaccounted_and_zero_steal_is_said() {
    let irq = D + 1_000;
    let wake = irq + 100 + 70_000;
    let mut sc = asleep(IDLE);
    sc.timer_irq(irq, 0).switch(irq + 100, IDLE, THREAD);
    let got = explain_timer(&sc, wake, &[steal(D - 1, 0, 500), steal(wake + 1, 0, 500)]);
    assert_eq!(
        got.causes,
        vec![
            unaccounted(70_000),
            cause(CauseKind::IrqDelayedIdle, "", None, None, 1_000),
            local_timer(60),
            idle_blocking(40)
        ]
    );
    assert_eq!((got.steal_ns, got.steal_window_ns), (Some(0), Some(wake + 1 - (D - 1))));
    assert_eq!(got.summary, "70 µs with no guest event (unaccounted; no steal) (+3 smaller causes, 1.1 µs)");
}

#[test]
fn explain_splits_the_sample_itself_when_given_no_parts() {
    let irq = D + 2_000;
    let mut sc = asleep(IDLE);
    sc.timer_irq(irq, 0).switch(irq + 100, IDLE, THREAD);
    let sample = WakeSample { cpu: 0, due_ns: D, wake_ns: irq + 150 };
    let without = explain(&sc.events, TID, PRIO, Stimulus::Timer, &sample, None, &[]);
    let with = explain_timer(&sc, irq + 150, &[]);
    assert_eq!(without, with);
    assert_eq!(without.parts.map(|p| (p.first_ns, p.sched_ns, p.return_ns)), Some((2_000, 100, 50)));
}

#[test]
fn a_datagram_wake_up_is_explained_from_the_receivers_cpu() {
    // The receive and the waking happen on CPU 0 itself here (softirq NET_RX).
    let mut sc = Scenario::on(0);
    sc.switch(D - 100_000, THREAD, IDLE)
        .irq_in(D - 3_000, 0, 11, "virtio0-input")
        .irq_out(D - 2_500, 0, 11)
        .softirq_in(D - 2_400, 0, 3)
        .waking(D + 500, 0, THREAD)
        .softirq_out(D + 1_500, 0, 3)
        .switch(D + 1_600, IDLE, THREAD);
    let sample = WakeSample { cpu: 0, due_ns: D, wake_ns: D + 1_700 };
    let got = explain(&sc.events, TID, PRIO, Stimulus::Datagram, &sample, None, &[]);
    assert_eq!(got.parts.map(|p| (p.first_ns, p.sched_ns, p.return_ns)), Some((500, 1_100, 100)));
    assert_eq!(
        got.causes,
        vec![cause(CauseKind::Softirq, "softirq NET_RX", None, None, 1_500), idle_blocking(100), own(100)]
    );
    assert_eq!(
        got.summary,
        "softirq NET_RX ran 1.5 µs, then idle (pid 0) ran 100 ns, then the thread's own wake-up path 100 ns"
    );
}

#[test]
fn a_sample_that_woke_before_its_due_time_keeps_the_sum() {
    let sc = asleep(IDLE);
    let got = explain_timer(&sc, D - 40, &[]);
    assert_eq!(got.causes.iter().map(|c| c.ns).sum::<i64>(), -40);
    assert_eq!(got.summary, "woke 40 ns before the due time (clock skew)");
}

/// Random event kinds over a small vocabulary, so that entries, exits and switches collide.
fn arbitrary_kind() -> impl Strategy<Value = EventKind> {
    let pids = prop::sample::select(vec![0, TID, STRESS.pid, MIGRATION.pid, LOW_RT.pid]);
    let vectors = prop::sample::select(Vector::ALL.to_vec());
    prop_oneof![
        (vectors.clone()).prop_map(|vector| EventKind::VectorEntry { vector }),
        (vectors).prop_map(|vector| EventKind::VectorExit { vector }),
        (0..3i32).prop_map(|irq| EventKind::IrqEntry { irq, name: format!("dev{irq}") }),
        (0..3i32).prop_map(|irq| EventKind::IrqExit { irq }),
        (0..12u32).prop_map(|vec| EventKind::SoftirqEntry { vec }),
        (0..12u32).prop_map(|vec| EventKind::SoftirqExit { vec }),
        (D as i64 - 1_000_000..D as i64 + 5_000_000).prop_map(|now_ns| EventKind::HrtimerExpireEntry {
            timer: TIMER,
            function: WAKEUP_FN,
            now_ns
        }),
        Just(EventKind::HrtimerExpireExit { timer: TIMER }),
        Just(EventKind::HrtimerStart { timer: TIMER, function: WAKEUP_FN, expires_ns: D as i64 }),
        Just(EventKind::SchedWaking { pid: TID, comm: COMM.into(), prio: PRIO, target_cpu: 0 }),
        (pids.clone(), pids, 0..140i32, 0..140i32).prop_map(|(prev, next, prev_prio, next_prio)| {
            EventKind::SchedSwitch {
                prev_comm: format!("t{prev}").as_str().into(),
                prev_pid: prev,
                prev_prio,
                prev_state: 0,
                next_comm: format!("t{next}").as_str().into(),
                next_pid: next,
                next_prio,
            }
        }),
        Just(EventKind::Lost { events: 1 }),
    ]
}

fn arbitrary_events() -> impl Strategy<Value = Vec<KernelEvent>> {
    let pids = prop::sample::select(vec![0, TID, STRESS.pid, MIGRATION.pid, LOW_RT.pid]);
    prop::collection::vec((0u64..120_000, 0u32..2, pids, arbitrary_kind()), 0..80).prop_map(|raw| {
        let mut ts = D - 1_000_000;
        raw.into_iter()
            .map(|(gap, cpu, pid, kind)| {
                ts += gap;
                KernelEvent { ts_ns: ts, cpu, pid, kind }
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Whatever the events, the causes sum to the latency, largest first, merged by
    /// (kind, name, pid), none empty; split parts sum to it too.
    #[test]
    fn causes_always_sum_to_the_latency(
        events in arbitrary_events(),
        wake_offset in -1_000i64..4_000_000,
        thread_prio in 0i32..140,
        datagram in any::<bool>(),
    ) {
        let stimulus = if datagram { Stimulus::Datagram } else { Stimulus::Timer };
        let sample = WakeSample { cpu: 0, due_ns: D, wake_ns: (D as i64 + wake_offset) as u64 };
        let split = split_samples(&events, TID, stimulus, &[sample]);
        prop_assert_eq!(split.len(), 1);
        if let Some(Ok(parts)) = split.first() {
            prop_assert_eq!(parts.first_ns + parts.sched_ns + parts.return_ns, sample.latency_ns());
            prop_assert!(parts.switched_in_at_ns <= sample.wake_ns);
        }
        let parts = split.first().and_then(|r| r.ok());
        let got = explain(&events, TID, thread_prio, stimulus, &sample, parts, &[]);
        prop_assert_eq!(got.causes.iter().map(|c| c.ns).sum::<i64>(), sample.latency_ns());
        prop_assert!(got.causes.windows(2).all(|w| w[0].ns >= w[1].ns));
        if sample.latency_ns() >= 0 {
            prop_assert!(got.causes.iter().all(|c| c.ns > 0));
        }
        for (i, a) in got.causes.iter().enumerate() {
            for b in got.causes.iter().skip(i + 1) {
                prop_assert!((a.kind, &a.name, a.pid) != (b.kind, &b.name, b.pid));
            }
        }
        prop_assert!(!got.summary.is_empty());
    }
}
