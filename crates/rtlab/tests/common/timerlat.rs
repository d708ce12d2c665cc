//! Checks of a `rtlab run -P timerlat` result, for the tests that can run the tracer: a host
//! kernel with it (tests/probe_timerlat.rs) or the PREEMPT_RT guest (tests/guest_kernels.rs).
//! Structure and counts only, never latencies (a TCG guest's time is emulated).

use super::{measurements, u};
use serde_json::Value;

/// Every CPU of the run has `timerlat.irq` and `timerlat.thread`; every activation is
/// accounted for (the identity of docs/probes/timerlat.md), the records pair (no thread
/// before its irq, nothing out of order), the counts agree with the details, the periods the
/// tracer ran (activations and the periods it skipped after late wake-ups: `cycles`) are
/// within a generous factor of `duration_s / period` (emulated time: at least half, at most
/// 10 % more), and nothing was lost in the ring buffer without being counted.
pub fn check_timerlat_run(run: &Value, duration_s: f64) {
    assert_eq!(run["interrupted"], false);
    let cpus: Vec<u64> = run["experiment"]["cpus"].as_array().unwrap().iter().map(|c| c.as_u64().unwrap()).collect();
    let threads = measurements(run, "timerlat.thread");
    let irqs = measurements(run, "timerlat.irq");
    assert_eq!(threads.len(), cpus.len() * run["scenarios"].as_array().unwrap().len(), "one timerlat.thread per CPU");
    assert_eq!(irqs.len(), threads.len(), "one timerlat.irq per CPU");
    for t in &threads {
        let irq =
            irqs.iter().find(|m| m["cpu"] == t["cpu"] && m["scenario"] == t["scenario"]).expect("irq beside thread");
        assert_eq!(t["probe"], "timerlat");
        let d = &t["details"];
        let n = |k: &str| u(d, k);
        let what = format!("CPU {} in {}: {d}", t["cpu"], t["scenario"]);
        assert_eq!(
            n("activations"),
            n("paired")
                + n("irq_without_thread")
                + n("irq_in_flight_at_end")
                + n("irq_before_tracing")
                + n("thread_without_irq")
                + n("no_record"),
            "activations do not add up: {what}"
        );
        assert_eq!(u(t, "count"), n("paired") + n("irq_before_tracing") + n("thread_without_irq"), "{what}");
        assert!(n("irq_before_tracing") <= 1 && n("irq_in_flight_at_end") <= 1, "{what}");
        assert_eq!(u(irq, "count"), n("paired") + n("irq_without_thread") + n("irq_in_flight_at_end"), "{what}");
        assert_eq!(n("thread_before_irq"), 0, "a thread record below its irq record: {what}");
        assert_eq!(n("out_of_order"), 0, "{what}");
        assert_eq!(u(t, "overruns"), n("skipped_periods"), "{what}");
        assert_eq!(u(t, "lost"), n("irq_without_thread") + n("no_record"), "{what}");
        assert_eq!(
            u(t, "count") + u(t, "overruns") + u(t, "lost") + n("irq_in_flight_at_end"),
            u(t, "cycles"),
            "{what}"
        );
        // Records are lost only where the ring buffer says so.
        let missing = n("irq_without_thread") + n("thread_without_irq") + n("no_record");
        if missing > 0 {
            assert!(
                n("ring_lost_markers") + n("ring_overrun") + n("ring_dropped") > 0,
                "records missing silently: {what}"
            );
        }
        let expected = duration_s * 1e9 / u(t, "interval_ns") as f64;
        let cycles = u(t, "cycles") as f64;
        assert!(cycles >= expected / 2.0 && cycles <= expected * 1.1, "cycles {cycles} vs {expected} expected: {what}");
        assert!(u(irq, "count") > 0 && t["summary"]["p50"].is_i64());
        assert!(d["thread_policy"].as_str().unwrap().starts_with("SCHED_FIFO"));
        assert!(d["user_threads"].as_str().is_some());
    }
}

/// The one line `-P timerlat` prints on a kernel without the tracer (exit 3).
pub fn check_no_tracer_error(stderr: &str) {
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(lines[0].contains("this kernel has no timerlat tracer"), "{stderr}");
    assert!(lines[0].contains("linux-image-rt-amd64"), "names the kernels that have it: {stderr}");
}
