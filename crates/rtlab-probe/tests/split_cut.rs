//! `split_samples` and `find_tid` against exact oracles on synthetic event streams.

mod split_scenario;

use proptest::prelude::*;
use rtlab_probe::split::{find_tid, split_samples, SplitParts, Stimulus, Unsplit, WakeSample};
use rtlab_sys::tracefs::event::Vector;
use split_scenario::*;

fn sample(due_ns: u64, wake_ns: u64) -> WakeSample {
    WakeSample { cpu: 0, due_ns, wake_ns }
}

fn parts(first_ns: i64, sched_ns: i64, return_ns: i64, handled_at_ns: u64, switched_in_at_ns: u64) -> SplitParts {
    SplitParts { first_ns, sched_ns, return_ns, handled_at_ns, switched_in_at_ns, switch_in_inferred: false }
}

/// One sleep of the thread on an idle CPU: armed at `due - 9_900`, timer IRQ at `irq`,
/// switched in at `switch_in`.
fn idle_sleep(sc: &mut Scenario, due: u64, irq: u64, switch_in: u64) {
    sc.arm(due - 9_900, TID, TIMER, due as i64)
        .switch(due - 9_800, THREAD, IDLE)
        .timer_irq(irq, 0)
        .switch(switch_in, IDLE, THREAD);
}

#[test]
fn timer_sample_on_an_idle_cpu_is_cut_at_the_kernel_s_clock_read_and_the_switch() {
    // Vector entry, then the clock read that finds the timer expired (the expiry's `now`),
    // then the callback: the handling starts at the clock read, on the due time's clock.
    let mut sc = Scenario::on(0);
    sc.arm(100, TID, TIMER, 10_000)
        .switch(200, THREAD, IDLE)
        .vector_in(10_290, 0, Vector::LocalTimer)
        .expire_in_now(10_310, 10_300, 0, TIMER)
        .waking(10_320, 0, THREAD)
        .expire_out(10_340, 0, TIMER)
        .vector_out(10_360, 0, Vector::LocalTimer)
        .switch(10_500, IDLE, THREAD);
    let got = split_samples(&sc.events, TID, Stimulus::Timer, &[sample(10_000, 10_700)]);
    assert_eq!(got, vec![Ok(parts(300, 200, 200, 10_300, 10_500))]);
}

#[test]
fn without_vector_tracing_the_handling_starts_at_the_clock_read_too() {
    let mut sc = Scenario::on(0);
    sc.arm(100, TID, TIMER, 10_000)
        .switch(200, THREAD, IDLE)
        .expire_in_now(10_310, 10_305, 0, TIMER)
        .waking(10_320, 0, THREAD)
        .expire_out(10_340, 0, TIMER)
        .switch(10_500, IDLE, THREAD);
    let got = split_samples(&sc.events, TID, Stimulus::Timer, &[sample(10_000, 10_700)]);
    assert_eq!(got, vec![Ok(parts(305, 195, 200, 10_305, 10_500))]);
}

#[test]
fn an_expiry_in_another_vector_starts_at_its_clock_read() {
    // A tick's local_timer entry and exit, then the expiry seen inside a reschedule vector.
    let mut sc = Scenario::on(0);
    sc.arm(100, TID, TIMER, 10_000)
        .switch(200, THREAD, IDLE)
        .vector_in(9_000, 0, Vector::LocalTimer)
        .vector_out(9_050, 0, Vector::LocalTimer)
        .vector_in(10_200, 0, Vector::Reschedule)
        .expire_in_now(10_250, 10_240, 0, TIMER)
        .vector_out(10_260, 0, Vector::Reschedule)
        .switch(10_400, IDLE, THREAD);
    let got = split_samples(&sc.events, TID, Stimulus::Timer, &[sample(10_000, 10_450)]);
    assert_eq!(got, vec![Ok(parts(240, 160, 50, 10_240, 10_400))]);
}

#[test]
fn a_timer_expired_on_hrtimer_interrupt_s_re_read_clock_is_not_early() {
    // What this VM does (docs/split.md, "One clock"): the tick's interrupt enters 10 µs before
    // the thread's due time and expires the tick with now = due - 9.9 µs; the tick's
    // callback runs 15 µs; hrtimer_interrupt then finds the next expiry (the thread's) past,
    // re-reads the clock (now = due + 5.2 µs) and expires it in the same vector. The
    // interrupt latency is 5.2 µs, not -10 µs.
    let mut sc = Scenario::on(0);
    sc.arm(100, TID, TIMER, 100_000)
        .switch(200, THREAD, IDLE)
        .vector_in(90_000, 0, Vector::LocalTimer)
        .expire_in_now(90_200, 90_100, 0, 0xdead)
        .expire_out(105_000, 0, 0xdead)
        .expire_in_now(105_300, 105_200, 0, TIMER)
        .waking(105_400, 0, THREAD)
        .expire_out(105_500, 0, TIMER)
        .vector_out(105_600, 0, Vector::LocalTimer)
        .switch(106_000, IDLE, THREAD);
    let got = split_samples(&sc.events, TID, Stimulus::Timer, &[sample(100_000, 107_000)]);
    assert_eq!(got, vec![Ok(parts(5_200, 800, 1_000, 105_200, 106_000))]);
}

#[test]
fn a_clock_read_traced_after_its_callback_is_capped_at_the_callback() {
    // Cannot happen on one clock; if a trace said so, the handling would not start after
    // the callback it led to.
    let mut sc = Scenario::on(0);
    sc.arm(100, TID, TIMER, 10_000)
        .switch(200, THREAD, IDLE)
        .expire_in_now(10_300, 10_900, 0, TIMER)
        .switch(10_500, IDLE, THREAD);
    let got = split_samples(&sc.events, TID, Stimulus::Timer, &[sample(10_000, 10_700)]);
    assert_eq!(got, vec![Ok(parts(300, 200, 200, 10_300, 10_500))]);
}

#[test]
fn the_timer_is_matched_by_expiry_and_thread_and_the_last_arming_counts() {
    let mut sc = Scenario::on(0);
    sc.arm(50, STRESS.pid, 0xbeef, 10_000) // another task, same expiry: not ours
        .arm(100, TID, 0x1111, 20_000) // ours, another expiry
        .arm(150, TID, 0x2222, 10_000) // ours, re-armed below with another timer address
        .arm(160, TID, TIMER, 10_000)
        .switch(200, THREAD, IDLE)
        .vector_in(10_050, 0, Vector::LocalTimer)
        .expire_in(10_060, 0, 0x2222) // the stale address: ignored
        .expire_out(10_070, 0, 0x2222)
        .vector_out(10_080, 0, Vector::LocalTimer)
        .timer_irq(10_400, 0)
        .switch(10_500, IDLE, THREAD);
    let got = split_samples(&sc.events, TID, Stimulus::Timer, &[sample(10_000, 10_600)]);
    assert_eq!(got, vec![Ok(parts(400, 100, 100, 10_400, 10_500))]);
}

#[test]
fn a_thread_still_running_at_its_expiry_has_no_scheduling_part() {
    let mut sc = Scenario::on(0);
    sc.arm(9_950, TID, TIMER, 10_000).timer_irq(10_020, TID);
    let got = split_samples(&sc.events, TID, Stimulus::Timer, &[sample(10_000, 10_200)]);
    assert_eq!(got, vec![Ok(parts(20, 0, 180, 10_020, 10_020))]);
}

#[test]
fn missing_events_give_the_reason() {
    // Never armed.
    let mut sc = Scenario::on(0);
    sc.switch(200, THREAD, IDLE).timer_irq(10_300, 0).switch(10_500, IDLE, THREAD);
    let got = split_samples(&sc.events, TID, Stimulus::Timer, &[sample(10_000, 10_700)]);
    assert_eq!(got, vec![Err(Unsplit::NoTimerArmed)]);

    // Armed, but the expiry is traced after the wake-up (not this sample's).
    let mut sc = Scenario::on(0);
    sc.arm(100, TID, TIMER, 10_000).switch(200, THREAD, IDLE).timer_irq(10_800, 0);
    let got = split_samples(&sc.events, TID, Stimulus::Timer, &[sample(10_000, 10_700)]);
    assert_eq!(got, vec![Err(Unsplit::NoHandling)]);

    // Handled while another task ran, never switched in before the wake-up.
    let mut sc = Scenario::on(0);
    sc.arm(100, TID, TIMER, 10_000)
        .switch(200, THREAD, STRESS)
        .timer_irq(10_300, STRESS.pid)
        .switch(10_800, STRESS, THREAD);
    let got = split_samples(&sc.events, TID, Stimulus::Timer, &[sample(10_000, 10_700)]);
    assert_eq!(got, vec![Err(Unsplit::NoSwitchIn)]);

    // A switch to the thread on another CPU does not count.
    let mut sc = Scenario::on(0);
    sc.arm(100, TID, TIMER, 10_000).switch(200, THREAD, STRESS).timer_irq(10_300, STRESS.pid);
    sc.cpu(1).switch(10_500, STRESS, THREAD);
    let got = split_samples(&sc.merged(), TID, Stimulus::Timer, &[sample(10_000, 10_700)]);
    assert_eq!(got, vec![Err(Unsplit::NoSwitchIn)]);
}

#[test]
fn lost_events_near_the_sample_on_its_cpu_make_it_unsplit() {
    let due = 5_000_000;
    let build = |lost_cpu: u32, lost_at: u64| {
        let mut sc = Scenario::on(0);
        idle_sleep(&mut sc, due, due + 300, due + 500);
        sc.cpu(lost_cpu).lost(lost_at);
        split_samples(&sc.merged(), TID, Stimulus::Timer, &[sample(due, due + 700)])
    };
    assert_eq!(build(0, due - 500_000), vec![Err(Unsplit::EventsLost)]);
    assert_eq!(build(0, due + 400), vec![Err(Unsplit::EventsLost)]);
    assert_eq!(build(0, due - 1_000_000), vec![Err(Unsplit::EventsLost)]);
    let fine = vec![Ok(parts(300, 200, 200, due + 300, due + 500))];
    assert_eq!(build(0, due - 1_000_001), fine);
    assert_eq!(build(0, due + 701), fine);
    assert_eq!(build(1, due + 400), fine);
}

#[test]
fn a_timer_of_an_isolated_cpu_expired_on_a_housekeeping_cpu_is_split_there() {
    // nohz_full/isolcpus: the thread on CPU 1 arms its timer, the kernel queues it on CPU 0,
    // CPU 0's timer interrupt expires it and wakes the thread, which CPU 1 then switches in.
    let due = 5_000_000;
    let build = |lost: Option<(u32, u64)>| {
        let mut sc = Scenario::on(1);
        sc.arm(due - 9_900, TID, TIMER, due as i64).switch(due - 9_800, THREAD, IDLE);
        sc.cpu(0).timer_irq(due + 300, STRESS.pid);
        sc.cpu(1).switch(due + 500, IDLE, THREAD);
        if let Some((cpu, at)) = lost {
            sc.cpu(cpu).lost(at);
        }
        split_samples(&sc.merged(), TID, Stimulus::Timer, &[WakeSample { cpu: 1, due_ns: due, wake_ns: due + 700 }])
    };
    assert_eq!(build(None), vec![Ok(parts(300, 200, 200, due + 300, due + 500))]);
    // The handling CPU's events must be complete as well as the thread's.
    assert_eq!(build(Some((0, due + 100))), vec![Err(Unsplit::EventsLost)]);
    assert_eq!(build(Some((1, due + 100))), vec![Err(Unsplit::EventsLost)]);
    assert_eq!(build(Some((0, due + 400))), vec![Ok(parts(300, 200, 200, due + 300, due + 500))], "after the expiry");
}

#[test]
fn datagram_sample_is_cut_at_the_receivers_waking_and_its_switch_in() {
    let due = 1_000_000;
    let mut sc = Scenario::on(1);
    sc.waking(due - 2_500, 77, THREAD); // too early: an earlier datagram's
    sc.waking(due - 1_000, 77, THREAD); // the softirq on CPU 1 wakes the receiver
    sc.cpu(2).switch(due + 100, IDLE, THREAD); // not the receiver's CPU
    sc.cpu(0).switch(due + 400, IDLE, THREAD);
    let got =
        split_samples(&sc.merged(), TID, Stimulus::Datagram, &[WakeSample { cpu: 0, due_ns: due, wake_ns: due + 900 }]);
    assert_eq!(got, vec![Ok(parts(-1_000, 1_400, 500, due - 1_000, due + 400))]);

    let mut sc = Scenario::on(1);
    sc.waking(due + 950, 77, THREAD);
    let got =
        split_samples(&sc.events, TID, Stimulus::Datagram, &[WakeSample { cpu: 0, due_ns: due, wake_ns: due + 900 }]);
    assert_eq!(got, vec![Err(Unsplit::NoHandling)]);
}

#[test]
fn many_samples_come_back_in_order_one_result_each() {
    let period = 1_000_000u64;
    let mut sc = Scenario::on(0);
    let mut samples = Vec::new();
    let mut expected = Vec::new();
    for k in 1..=30_000u64 {
        let due = k * period;
        let irq_delay = 100 + k % 7 * 10;
        let sched = 200 + k % 5;
        if k % 1000 == 0 {
            // The expiry of this sleep was not traced.
            sc.arm(due - 9_900, TID, TIMER, due as i64).switch(due - 9_800, THREAD, IDLE).switch(
                due + 900,
                IDLE,
                THREAD,
            );
            expected.push(Err(Unsplit::NoHandling));
        } else {
            idle_sleep(&mut sc, due, due + irq_delay, due + irq_delay + sched);
            expected.push(Ok(parts(irq_delay as i64, sched as i64, 50, due + irq_delay, due + irq_delay + sched)));
        }
        samples.push(sample(due, due + irq_delay + sched + 50));
    }
    assert_eq!(split_samples(&sc.events, TID, Stimulus::Timer, &samples), expected);
}

#[test]
fn find_tid_takes_the_most_frequent_switch_in_of_the_name_on_that_cpu() {
    let named = |pid: i32, comm: &'static str| Task { pid, comm, prio: PRIO };
    let mut sc = Scenario::on(0);
    sc.switch(10, IDLE, named(600, "rtlab-timer-0"))
        .switch(20, named(600, "rtlab-timer-0"), IDLE)
        .switch(30, IDLE, named(500, "rtlab-timer-0"))
        .switch(40, named(500, "rtlab-timer-0"), IDLE)
        .switch(50, IDLE, named(500, "rtlab-timer-0"));
    sc.cpu(1).switch(60, IDLE, named(700, "rtlab-timer-0")).switch(61, IDLE, named(700, "rtlab-timer-0"));
    sc.switch(62, IDLE, named(700, "rtlab-timer-0"));
    let events = sc.merged();
    assert_eq!(find_tid(&events, 0, "rtlab-timer-0"), Some(500));
    assert_eq!(find_tid(&events, 1, "rtlab-timer-0"), Some(700));
    assert_eq!(find_tid(&events, 2, "rtlab-timer-0"), None);
    assert_eq!(find_tid(&events, 0, "other"), None);
}

#[test]
fn find_tid_compares_the_first_15_bytes_and_breaks_ties_by_first_seen() {
    let mut sc = Scenario::on(0);
    sc.switch(10, IDLE, Task { pid: 42, comm: "rtlab-sampler-c", prio: PRIO }).switch(
        20,
        IDLE,
        Task { pid: 41, comm: "rtlab-sampler-c", prio: PRIO },
    );
    assert_eq!(find_tid(&sc.events, 0, "rtlab-sampler-cpu1"), Some(42));
    assert_eq!(find_tid(&sc.events, 0, "rtlab-sampler-c"), Some(42));
    assert_eq!(find_tid(&sc.events, 0, "rtlab-sampler-"), None);
}

proptest! {
    /// Whatever the timings, a split sample's parts add up to its latency exactly and the
    /// instants are the traced ones.
    #[test]
    fn split_parts_add_up_to_the_latency(
        irq_delay in 0u64..5_000_000,
        vector_early in 0u64..200_000,
        sched in 0u64..1_000_000,
        ret in 0u64..100_000,
    ) {
        // The kernel's clock read finds the timer expired (now >= due), whenever the vector
        // that led to it was entered (up to 200 µs before the due time: a tick's).
        let due = 10_000_000u64;
        let now = due + irq_delay;
        let switch_in = now + 60 + sched;
        let mut sc = Scenario::on(0);
        sc.arm(due - 300_000, TID, TIMER, due as i64)
            .switch(due - 299_000, THREAD, IDLE)
            .vector_in(now.min(due) - vector_early, 0, Vector::LocalTimer)
            .expire_in_now(now + 10, now, 0, TIMER)
            .waking(now + 20, 0, THREAD)
            .vector_out(now + 50, 0, Vector::LocalTimer)
            .switch(switch_in, IDLE, THREAD);
        let s = sample(due, switch_in + ret);
        let got = split_samples(&sc.events, TID, Stimulus::Timer, &[s]);
        prop_assert_eq!(got.len(), 1);
        let p = got[0].expect("split");
        prop_assert_eq!(p.first_ns + p.sched_ns + p.return_ns, s.latency_ns());
        prop_assert_eq!(p.handled_at_ns, now);
        prop_assert!(p.first_ns >= 0, "the interrupt latency is never negative on one clock");
        prop_assert_eq!(p.switched_in_at_ns, switch_in);
    }
}

#[test]
fn a_switch_out_of_idle_the_kernel_did_not_record_is_inferred_at_the_interrupt_exit() {
    // Idle CPU, timer handled, no sched_switch to the thread (some kernels drop the switch out
    // of the idle task): the switch is taken at the end of the idle CPU's last handler.
    let mut sc = Scenario::on(0);
    sc.arm(100, TID, TIMER, 10_000).switch(200, THREAD, IDLE).timer_irq(10_300, 0);
    let got = split_samples(&sc.events, TID, Stimulus::Timer, &[sample(10_000, 10_700)]);
    let mut expected = parts(300, 60, 340, 10_300, 10_360);
    expected.switch_in_inferred = true;
    assert_eq!(got, vec![Ok(expected)]);

    // Not when anything but the idle task's interrupts ran in between.
    let mut sc = Scenario::on(0);
    sc.arm(100, TID, TIMER, 10_000).switch(200, THREAD, IDLE).timer_irq(10_300, 0).switch(10_400, IDLE, STRESS);
    let got = split_samples(&sc.events, TID, Stimulus::Timer, &[sample(10_000, 10_700)]);
    assert_eq!(got, vec![Err(Unsplit::NoSwitchIn)]);
}

#[test]
fn a_local_timer_entry_long_before_the_expiry_does_not_move_the_handling() {
    // An interrupt entered 485 µs before the due time, its exit not traced; the thread's
    // timer expires in it with now = due + 9.99 µs: the handling starts there.
    let mut sc = Scenario::on(0);
    sc.arm(100, TID, TIMER, 1_000_000).switch(200, THREAD, IDLE);
    sc.vector_in(515_000, 0, Vector::LocalTimer)
        .expire_in_now(1_010_000, 1_009_990, 0, TIMER)
        .waking(1_010_020, 0, THREAD)
        .expire_out(1_010_040, 0, TIMER)
        .vector_out(1_010_060, 0, Vector::LocalTimer)
        .switch(1_010_100, IDLE, THREAD);
    let got = split_samples(&sc.events, TID, Stimulus::Timer, &[sample(1_000_000, 1_010_200)]);
    assert_eq!(got, vec![Ok(parts(9_990, 110, 100, 1_009_990, 1_010_100))]);
}
