//! The `jitter` (Dodiu Table 1) and `sleep` (Dankwardt) probes through the binary. Only
//! counts, structure and invariants are checked, never an absolute latency: the VM's
//! hypervisor wakes threads milliseconds late at random.

mod common;

use common::{check_measurement, euid, i, measurements, online_cpus, rtlab, run_json, u, Expect};
use serde_json::Value;
use std::path::Path;

const DEFAULT_PERIODS_NS: [u64; 6] = [300_000, 500_000, 1_000_000, 2_000_000, 5_000_000, 10_000_000];

/// `rtlab run --load idle --quiet --output DIR ARGS`, expecting exit 0; returns run.json.
fn run_ok(dir: &Path, args: &[&str]) -> Value {
    let out = dir.join("out");
    let output = rtlab().args(["run", "--load", "idle", "--quiet", "--output"]).arg(&out).args(args).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "rtlab {args:?}; stderr:\n{}", String::from_utf8_lossy(&output.stderr));
    run_json(&out)
}

fn period_tag(ns: u64) -> String {
    if ns.is_multiple_of(1_000_000) {
        format!("{}ms", ns / 1_000_000)
    } else {
        format!("{}us", ns / 1_000)
    }
}

/// Checks the jitter measurements of a run that was not interrupted: per period, in the
/// order given, one `jitter.latency` and one `jitter.jitter` per CPU, and each period takes
/// exactly its share of the duration divided by the period, recorded or overrun.
fn check_jitter(run: &Value, periods_ns: &[u64], share_ns: u64) {
    let cpus = online_cpus(run);
    let latency = measurements(run, "jitter.latency");
    let jitter = measurements(run, "jitter.jitter");
    assert_eq!(latency.len(), periods_ns.len() * cpus.len(), "one jitter.latency per period and CPU");
    assert_eq!(jitter.len(), latency.len(), "one jitter.jitter per period and CPU");
    for (index, (l, j)) in latency.iter().zip(&jitter).enumerate() {
        let period = periods_ns[index / cpus.len()];
        let cpu = cpus[index % cpus.len()];
        let what = format!("period {period} ns on CPU {cpu}");
        for m in [l, j] {
            assert_eq!(m["probe"], "jitter", "{what}");
            assert_eq!(u(m, "cpu"), cpu, "{what}");
            assert_eq!(m["thread"], format!("jitter/{}/{cpu}", period_tag(period)), "{what}: thread name");
            assert_eq!(u(m, "interval_ns"), period, "{what}: interval_ns is the period");
            assert_eq!(u(&m["details"], "period_ns"), period, "{what}: details.period_ns");
            assert_eq!(u(m, "lost"), 0, "{what}: lost");
            check_measurement(m, &Expect::default());
        }
        let cycles = u(l, "cycles");
        assert_eq!(cycles, share_ns / period, "{what}: cycles == share / period");
        assert_eq!(u(l, "count") + u(l, "overruns"), cycles, "{what}: count + overruns == share / period");
        assert_eq!(u(j, "count"), u(l, "count") - 1, "{what}: one jitter sample per pair of wake-ups");
        assert_eq!((u(j, "cycles"), u(j, "overruns")), (cycles, u(l, "overruns")), "{what}: same thread");
        assert!(i(&j["summary"], "min") >= 0, "{what}: period jitter is an absolute value");
    }
}

/// Dodiu's six periods on the simulated clock, 1 s each: the counts are exact and the
/// same seed gives the same run.
#[test]
fn jitter_default_periods_take_their_share_simulated() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_ok(dir.path(), &["--probe", "jitter", "--simulate", "42", "--duration", "6s"]);
    assert_eq!(run["simulated"], true);
    assert_eq!(run["experiment"]["probes"], serde_json::json!(["jitter"]));
    check_jitter(&run, &DEFAULT_PERIODS_NS, 1_000_000_000);
    let overruns: u64 = measurements(&run, "jitter.latency").iter().map(|m| u(m, "overruns")).sum();
    assert!(overruns > 0, "the simulation makes overruns, so the subtraction is exercised");

    let again_dir = tempfile::tempdir().unwrap();
    let again = run_ok(again_dir.path(), &["--probe", "jitter", "--simulate", "42", "--duration", "6s"]);
    assert_eq!(run["measurements"], again["measurements"], "the simulated clock is deterministic");
}

/// Two periods on the real clock: cycles are counted by expiry, so each period's count
/// plus its overruns is exactly its share divided by the period.
#[test]
fn jitter_two_periods_real_clock() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_ok(dir.path(), &["--probe", "jitter", "--periods", "500us,2ms", "--duration", "2s"]);
    assert_eq!(run["interrupted"], false);
    check_jitter(&run, &[500_000, 2_000_000], 1_000_000_000);
    let duration = run["duration_s"].as_f64().unwrap();
    assert!((1.9..30.0).contains(&duration), "duration_s {duration}: the periods run one after the other");
}

/// Checks a short `sleep` run: 22 sleeps of 5 ms taken, the first 2 discarded.
fn check_short_sleep(run: &Value) -> &Value {
    let all = run["measurements"].as_array().unwrap();
    assert_eq!(all.len(), 1, "only the sleep measurement");
    let m = measurements(run, "sleep.overshoot")[0];
    check_measurement(m, &Expect::default());
    assert_eq!(m["probe"], "sleep");
    assert_eq!(u(m, "count"), 20, "22 taken, 2 discarded");
    assert_eq!(u(m, "cycles"), 20, "cycles are the recorded samples");
    assert_eq!(u(m, "overruns"), 0);
    assert_eq!(u(m, "lost"), 0);
    assert_eq!(u(m, "interval_ns"), 5_000_000, "interval_ns is the requested sleep");
    let details = &m["details"];
    assert_eq!(u(details, "requested_ns"), 5_000_000);
    assert_eq!(u(details, "discarded"), 2);
    // The per-sample plot: every recorded sample, in order, agreeing with the moments.
    let sequence: Vec<i64> = m["sequence_ns"].as_array().unwrap().iter().map(|v| v.as_i64().unwrap()).collect();
    assert_eq!(sequence.len(), 20);
    let moments = &m["moments"];
    assert_eq!(sequence.iter().min().copied(), Some(i(moments, "min")));
    assert_eq!(sequence.iter().max().copied(), Some(i(moments, "max")));
    assert_eq!(sequence.iter().sum::<i64>(), i(moments, "sum"));
    // A relative sleep that was not interrupted never ends before the requested time.
    assert!(sequence.iter().all(|&v| v >= 0), "negative overshoot in {sequence:?}");
    m
}

fn sleep_notes(run: &Value) -> Vec<String> {
    let notes = run["realtime"]["notes"].as_array().unwrap();
    notes.iter().filter_map(|n| n.as_str()).filter(|n| n.starts_with("sleep:")).map(str::to_string).collect()
}

#[test]
fn sleep_short_run_records_all_but_the_discarded() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_ok(dir.path(), &["--probe", "sleep", "--samples", "22", "--sleep", "5ms"]);
    let m = check_short_sleep(&run);
    assert!(m["details"]["timer_slack_ns"].is_u64(), "timer_slack_ns detail: {}", m["details"]);
    if euid() == 0 {
        assert_eq!(run["realtime"]["policy"], "fifo");
        assert!(sleep_notes(&run).is_empty(), "a real-time sleep needs no slack note: {:?}", sleep_notes(&run));
    }
}

/// `--policy other`: the thread keeps the default timer slack (an ordinary task's) and the
/// run says so.
#[test]
fn sleep_as_an_ordinary_task_keeps_the_timer_slack() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_ok(dir.path(), &["--probe", "sleep", "--samples", "22", "--sleep", "5ms", "--policy", "other"]);
    let m = check_short_sleep(&run);
    let slack = u(&m["details"], "timer_slack_ns");
    assert!(slack > 1, "an ordinary task's timer slack is left alone, got {slack} ns");
    let notes = sleep_notes(&run);
    assert!(
        notes.iter().any(|n| n.contains("SCHED_OTHER") && n.contains(&format!("{slack} ns"))),
        "the slack in effect is noted: {notes:?}"
    );
}

/// Both probes in one run, each with half of the explicit duration.
#[test]
fn jitter_and_sleep_share_an_explicit_duration() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_ok(dir.path(), &["--probe", "jitter,sleep", "--duration", "4s"]);
    assert_eq!(run["experiment"]["probes"], serde_json::json!(["jitter", "sleep"]));
    check_jitter(&run, &DEFAULT_PERIODS_NS, 2_000_000_000 / 6);
    let sleeps = measurements(&run, "sleep.overshoot");
    assert_eq!(sleeps.len(), 1);
    let m = sleeps[0];
    check_measurement(m, &Expect::default());
    // 2 s of 50 ms sleeps, the first two discarded; every sleep ends inside the share.
    let count = u(m, "count");
    assert!((1..=38).contains(&count), "{count} sleeps recorded in 2 s");
    assert_eq!(u(&m["details"], "discarded"), 2);
    assert_eq!(m["sequence_ns"].as_array().unwrap().len() as u64, count);
}

#[test]
fn periods_without_the_jitter_probe_is_a_usage_error() {
    let cwd = tempfile::tempdir().unwrap();
    let output = rtlab()
        .current_dir(cwd.path())
        .args(["run", "--load", "idle", "--quiet", "--probe", "sleep", "--periods", "1ms"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--periods"), "{stderr}");
    assert_eq!(std::fs::read_dir(cwd.path()).unwrap().count(), 0, "nothing created");
}
