//! Checks of a `rtlab run -P timerlat` result, for the tests that can run the tracer: a host
//! kernel with it (tests/probe_timerlat.rs) or the PREEMPT_RT guest (tests/guest_kernels.rs).
//! Structure and counts only, never latencies (a TCG guest's time is emulated).

use super::{measurements, u};
use serde_json::Value;

/// Whether this kernel has the tracer (root or not: without root the real-run test says why
/// and fails under CI=true).
pub fn has_timerlat() -> bool {
    let listed = ["/sys/kernel/tracing/available_tracers", "/sys/kernel/debug/tracing/available_tracers"]
        .iter()
        .find_map(|path| std::fs::read_to_string(path).ok());
    match listed {
        Some(tracers) => tracers.split_whitespace().any(|t| t == "timerlat"),
        // tracefs not mounted: rtlab's own check mounts it (as root) and looks.
        None => rtlab_sys::tracefs::timerlat::check_support().is_ok(),
    }
}

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

/// Checks a history written by `rtlab monitor -P timerlat -w <window_s> -D <duration_s>`:
/// one session that ended at its duration and says it measured with timerlat; whole windows
/// that tile the time, each with `timerlat.thread` and `timerlat.irq` per CPU (histograms
/// and moments agreeing); per CPU over the session, the periods the tracer ran (samples,
/// lost, skipped) within the same generous factor of `duration_s / period` as a run, and
/// the same activations seen from the irq side as from the thread side (the one in flight
/// at the end and the one whose irq came before tracing excepted). Structure only.
pub fn check_timerlat_history(db: &std::path::Path, window_s: u64, duration_s: u64) {
    use rtlab_history::HistoryDb;
    use rtlab_results::history::Resolution;
    let history = HistoryDb::open_existing(db).unwrap();
    history.integrity_check().unwrap();
    let sessions = history.sessions().unwrap();
    assert_eq!(sessions.len(), 1);
    let session = &sessions[0];
    assert_eq!(session.end_reason.as_deref(), Some("duration"));
    assert_eq!(session.settings.probe, "timerlat");
    assert_eq!(session.settings.policy, rtlab_results::host::Policy::Fifo);
    let period_ns = session.settings.interval_ns;
    let cpus = &session.settings.cpus;
    let windows = history.windows(None, None).unwrap();
    assert_eq!(windows.len() as u64, duration_s.div_ceil(window_s), "one window per --window of --duration");
    for w in &windows {
        let r = &w.record;
        assert_eq!((r.resolution, r.merged), (Resolution::Window, 1));
        // The history returns a window's rows by CPU and metric name.
        let mut names: Vec<(usize, &str)> = r.metrics.iter().map(|m| (m.cpu, m.metric.as_str())).collect();
        names.sort();
        let expected: Vec<(usize, &str)> =
            cpus.iter().flat_map(|&c| [(c, "timerlat.irq"), (c, "timerlat.thread")]).collect();
        assert_eq!(names, expected);
        for m in &r.metrics {
            let h = rtlab_analysis::LatencyHistogram::decode(&m.histogram).unwrap();
            assert_eq!(h.count(), m.moments.count, "{} cpu{}", m.metric, m.cpu);
            if m.metric == "timerlat.irq" {
                assert_eq!(m.overruns, 0, "skipped periods are the thread's");
            }
        }
    }
    for pair in windows.windows(2) {
        assert_eq!(pair[0].record.end_ns, pair[1].record.start_ns, "windows tile the time");
    }
    assert_eq!(
        windows.last().unwrap().record.end_ns - windows[0].record.start_ns,
        (duration_s * 1_000_000_000) as i64,
        "the last window ends at --duration"
    );
    for &cpu in cpus {
        let total = |metric: &str, f: &dyn Fn(&rtlab_results::history::WindowMetric) -> u64| -> u64 {
            windows.iter().flat_map(|w| &w.record.metrics).filter(|m| m.metric == metric && m.cpu == cpu).map(f).sum()
        };
        let thread = total("timerlat.thread", &|m| m.moments.count);
        let irq = total("timerlat.irq", &|m| m.moments.count);
        assert!(thread > 0 && irq > 0, "cpu{cpu}");
        let thread_lost = total("timerlat.thread", &|m| m.lost);
        let irq_lost = total("timerlat.irq", &|m| m.lost);
        let skipped = total("timerlat.thread", &|m| m.overruns);
        let what = format!("cpu{cpu}: thread {thread} lost {thread_lost} skipped {skipped}, irq {irq} lost {irq_lost}");
        assert!((thread + irq_lost).abs_diff(irq + thread_lost) <= 2, "activations differ by side: {what}");
        let expected = (duration_s * 1_000_000_000 / period_ns) as f64;
        let periods = (thread + thread_lost + skipped) as f64;
        assert!(periods >= expected / 2.0 && periods <= expected * 1.1, "{periods} periods vs {expected}: {what}");
        // A reader that miscounted (records as lost) would show here; the trace rarely loses.
        assert!((thread_lost + irq_lost) as f64 <= 0.05 * periods, "{what}");
    }
    // The history reads back as a run of the timerlat probe.
    let run = history.run_of_range(Default::default()).unwrap();
    assert_eq!(run.experiment.probes, ["timerlat"]);
    assert!(run.measurements.iter().all(|m| m.probe == "timerlat"));
    assert_eq!(run.measurements.len(), 2 * cpus.len());
}
