//! The ipc and switch probes through the binary, about 2 s each on this machine. Only
//! structure, counts and consistency are checked, never an absolute latency.

mod common;

use common::{check_measurement, i, measurements, rtlab, run_json, u, Expect};
use serde_json::Value;
use std::path::Path;

/// `rtlab run --load idle --quiet -o DIR ARGS...`; asserts exit 0 and returns run.json.
fn run(out: &Path, args: &[&str]) -> Value {
    let output = rtlab().args(["run", "--load", "idle", "--quiet", "-o"]).arg(out).args(args).output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "rtlab run {args:?}; stderr:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    run_json(out)
}

/// Checks one stimulus measurement: counts add up, samples were taken, statistics are
/// ordered; returns its median.
fn check_stimulus_measurement(m: &Value) -> i64 {
    let what = format!("{} ({})", m["metric"], m["thread"]);
    let (count, cycles, overruns) = (u(m, "count"), u(m, "cycles"), u(m, "overruns"));
    assert_eq!(count + overruns, cycles, "{what}: count + overruns == cycles");
    assert!(count > 0, "{what}: no samples");
    assert_eq!(u(m, "lost"), 0, "{what}: lost samples");
    check_measurement(m, &Expect::default());
    assert!(i(&m["summary"], "min") >= 0, "{what}: a wake-up before its stimulus");
    i(&m["summary"], "p50")
}

fn notes(run: &Value) -> Vec<String> {
    run["realtime"]["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap().to_string()).collect()
}

fn check_ipc(mechanism: &str) {
    let dir = tempfile::tempdir().unwrap();
    let probe = format!("ipc:{mechanism}");
    let run = run(&dir.path().join("out"), &["-P", &probe, "-D", "2s"]);
    let metric = format!("{probe}.latency");
    let ms = measurements(&run, &metric);
    assert_eq!(ms.len(), 1, "one {metric} measurement");
    assert_eq!(run["measurements"].as_array().unwrap().len(), 1, "only {metric}");
    let m = ms[0];
    check_stimulus_measurement(m);
    // 2 s at the default 1 kHz: the receiver takes 2000 stimuli.
    assert_eq!(u(m, "cycles"), 2000, "{metric}: cycles == duration x rate");
    assert_eq!(u(m, "interval_ns"), 1_000_000);
    assert_eq!(m["probe"], probe);
    assert_eq!(m["thread"], format!("{probe}/{}", u(m, "cpu")));
    assert_eq!(m["details"]["mechanism"], mechanism);
    assert_eq!(m["details"]["rate_hz"].as_f64(), Some(1000.0));
    // Two CPUs: by default the trigger runs on the other one.
    assert_ne!(u(&m["details"], "trigger_cpu"), u(m, "cpu"));
    assert!(!notes(&run).iter().any(|n| n.contains("shares CPU")), "{:?}", notes(&run));
}

#[test]
fn ipc_eventfd() {
    check_ipc("eventfd");
}

#[test]
fn ipc_pipe() {
    check_ipc("pipe");
}

#[test]
fn ipc_futex() {
    check_ipc("futex");
}

#[test]
fn ipc_mqueue() {
    check_ipc("mqueue");
}

#[test]
fn ipc_signal() {
    check_ipc("signal");
}

#[test]
fn ipc_trigger_on_the_receivers_cpu_is_noted() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let run = run(&out, &["-P", "ipc:futex", "-D", "2s", "--trigger-cpu", "same", "--raw"]);
    let m = measurements(&run, "ipc:futex.latency")[0];
    check_stimulus_measurement(m);
    assert_eq!(u(&m["details"], "trigger_cpu"), u(m, "cpu"));
    let cpu = u(m, "cpu");
    assert!(
        notes(&run).iter().any(|n| n.starts_with("ipc:futex: ") && n.contains(&format!("shares CPU {cpu}"))),
        "the notes say the trigger shares the CPU: {:?}",
        notes(&run)
    );
    // The raw file is named after the rate and CPU, and holds every recorded sample.
    let raw = m["raw_file"].as_str().unwrap();
    assert!(raw.ends_with(&format!("ipc-futex-latency-1000hz-cpu{cpu}.bin")), "{raw}");
    assert!(out.join(raw).is_file());
    assert_eq!(u(m, "raw_samples"), u(m, "count"));
}

fn detail_int(m: &Value, key: &str) -> i64 {
    m["details"][key].as_i64().unwrap_or_else(|| panic!("{} has no integer {key}: {}", m["metric"], m["details"]))
}

/// Checks both switch variants; returns the futex variant's median.
fn check_switch(run: &Value) -> i64 {
    let mut futex_median = None;
    for variant in ["futex", "sem"] {
        let metric = format!("switch.{variant}");
        let ms = measurements(run, &metric);
        assert_eq!(ms.len(), 1, "one {metric} measurement");
        let m = ms[0];
        let median = check_stimulus_measurement(m);
        if variant == "futex" {
            futex_median = Some(median);
        }
        assert_eq!(m["probe"], "switch");
        assert_eq!(m["thread"], format!("switch/{variant}"));
        assert_eq!(m["details"]["variant"], variant);
        let switches = detail_int(m, "burst_switches");
        let total = detail_int(m, "burst_total_ns");
        assert_eq!(switches, 10_000, "the default burst");
        assert!(total > 0);
        let per_switch = m["details"]["burst_per_switch_ns"].as_f64().unwrap();
        assert!((per_switch - total as f64 / switches as f64).abs() < 1e-6 * per_switch.max(1.0));
    }
    futex_median.unwrap()
}

#[test]
fn switch_both_variants_and_the_burst() {
    let dir = tempfile::tempdir().unwrap();
    let run = run(&dir.path().join("out"), &["-P", "switch", "-D", "2s"]);
    assert_eq!(run["measurements"].as_array().unwrap().len(), 2);
    check_switch(&run);
    // The variants share the 2 s: 1000 periods each at 1 kHz.
    for m in run["measurements"].as_array().unwrap() {
        assert_eq!(u(m, "cycles"), 1000, "{}", m["metric"]);
    }
}

/// The acceptance's pair: switch and ipc:futex across CPUs in one run, both medians there.
#[test]
fn switch_and_ipc_futex_in_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let run = run(&dir.path().join("out"), &["-P", "switch,ipc:futex", "-D", "4s"]);
    let switch_median = check_switch(&run);
    let futex = measurements(&run, "ipc:futex.latency");
    assert_eq!(futex.len(), 1);
    let futex_median = check_stimulus_measurement(futex[0]);
    assert!(switch_median >= 0 && futex_median >= 0);
    assert_ne!(u(&futex[0]["details"], "trigger_cpu"), u(futex[0], "cpu"), "ipc:futex runs across CPUs");
    assert_eq!(run["experiment"]["probes"], serde_json::json!(["switch", "ipc:futex"]));
}

/// A mechanism the host refuses fails cleanly: exit 3 with the reason. RLIMIT_MSGQUEUE 0
/// (set with util-linux's prlimit) makes mq_open fail even for root.
#[test]
fn ipc_mqueue_refused_exits_3_with_the_reason() {
    if std::process::Command::new("prlimit").arg("--version").output().is_err() {
        eprintln!("prlimit is not installed; skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let output = std::process::Command::new("prlimit")
        .args([
            "--msgqueue=0",
            common::rtlab_path(),
            "run",
            "--load",
            "idle",
            "--quiet",
            "-P",
            "ipc:mqueue",
            "-D",
            "1s",
        ])
        .arg("-o")
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "stderr:\n{stderr}");
    assert!(stderr.contains("POSIX message queue is not available") && stderr.contains("mq_open"), "{stderr}");
    assert!(!dir.path().join("out").join("run.json").exists());
}
