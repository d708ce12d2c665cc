//! Runs on the hidden simulated clock (`--simulate SEED`): instant and identical on every
//! machine, so their terminal and JSON summaries are snapshot-tested, and their run.json
//! must satisfy the same invariants as a real run (the simulation includes overruns).

mod common;

use common::{check_timer_run, measurements, redact, rtlab, run_json, u, Expect};
use rtlab_results::run::RunResult;
use serde_json::Value;
use std::path::Path;

/// stdout of a simulated run into `dir`, with the directory replaced by "[DIR]".
fn simulated_stdout(dir: &Path, args: &[&str]) -> String {
    let output = rtlab().args(["run", "--output"]).arg(dir).args(args).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "stderr:\n{}", String::from_utf8_lossy(&output.stderr));
    assert!(output.stderr.is_empty(), "stderr:\n{}", String::from_utf8_lossy(&output.stderr));
    redact(&String::from_utf8(output.stdout).unwrap(), dir)
}

#[test]
fn terminal_summary_snapshot() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sim");
    let stdout = simulated_stdout(&dir, &["--simulate", "42", "--samples", "20000"]);
    assert_eq!(stdout.lines().last().unwrap(), "Results: [DIR]/run.json");
    insta::assert_snapshot!("terminal_summary_simulate_42", stdout);
}

#[test]
fn json_summary_snapshot() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sim");
    let stdout = simulated_stdout(&dir, &["--simulate", "42", "--samples", "20000", "--json"]);
    let summary: Value = serde_json::from_str(&stdout).expect("stdout is one JSON document");
    assert_eq!(summary["schema"], "rtlab.summary/1");
    assert_eq!(summary["simulated"], true);
    insta::assert_snapshot!("json_summary_simulate_42", stdout);
}

/// The simulated run.json, with what depends on the build or the invocation replaced and
/// the compressed histograms (whose bytes depend on the compressor's version) elided.
#[test]
fn run_json_snapshot() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sim");
    simulated_stdout(&dir, &["--simulate", "42", "--samples", "2000", "--cpus", "1", "--quiet"]);
    let mut run = run_json(&dir);
    check_timer_run(&run, &Expect { cpus: vec![1], samples: Some(2000), ..Default::default() });
    run["command_line"] = "[command line]".into();
    run["tool"]["version"] = "[version]".into();
    run["tool"]["commit"] = "[commit]".into();
    for m in run["measurements"].as_array_mut().unwrap() {
        m["histogram"]["data"] = "[hdr-v2-deflate-base64]".into();
    }
    insta::assert_json_snapshot!("run_json_simulate_42_cpu1", run);
}

#[test]
fn simulated_runs_are_identical() {
    let tmp = tempfile::tempdir().unwrap();
    for args in
        [&["--simulate", "42", "--samples", "20000"][..], &["--simulate", "42", "--samples", "20000", "--json"][..]]
    {
        let a = simulated_stdout(&tmp.path().join(format!("a{}", args.len())), args);
        let b = simulated_stdout(&tmp.path().join(format!("b{}", args.len())), args);
        assert_eq!(a, b, "two runs of rtlab run {args:?} differ");
    }
    // run.json too, apart from the command line that names the directory.
    let mut a = run_json(&tmp.path().join("a4"));
    let mut b = run_json(&tmp.path().join("b4"));
    a["command_line"] = Value::Null;
    b["command_line"] = Value::Null;
    assert_eq!(a, b, "two simulated run.json differ");
    // A different seed gives different samples.
    let c = simulated_stdout(&tmp.path().join("c"), &["--simulate", "43", "--samples", "20000", "--json"]);
    assert_ne!(simulated_stdout(&tmp.path().join("d"), &["--simulate", "42", "--samples", "20000", "--json"]), c);
}

#[test]
fn simulated_samples_run_invariants() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sim");
    simulated_stdout(&dir, &["--simulate", "42", "--samples", "20000", "--quiet"]);
    let run = run_json(&dir);
    // The simulated host has CPUs 0 and 1 whatever this machine has.
    check_timer_run(
        &run,
        &Expect { cpus: vec![0, 1], samples: Some(20_000), seconds: Some(20..=22), ..Default::default() },
    );
    assert_eq!(run["simulated"], true);
    assert_eq!(run["realtime"]["real_time_results"], false, "simulated samples are not real-time results");
    for m in measurements(&run, "timer.latency") {
        assert!(u(m, "overruns") > 0, "CPU {}: the simulation's spikes must overrun", m["cpu"]);
    }
}

#[test]
fn simulated_duration_run_invariants() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sim");
    let started = std::time::Instant::now();
    simulated_stdout(&dir, &["--simulate", "7", "--duration", "60s", "--quiet"]);
    assert!(started.elapsed().as_secs() < 30, "a simulated run must not take real time");
    let run = run_json(&dir);
    check_timer_run(
        &run,
        &Expect { cpus: vec![0, 1], cycles: Some(60_000), seconds: Some(60..=61), ..Default::default() },
    );
    assert_eq!(run["duration_s"], 60.0);
    for m in measurements(&run, "timer.latency") {
        assert!(u(m, "overruns") > 0, "CPU {}: the simulation's spikes must overrun", m["cpu"]);
        assert!(u(m, "count") < 60_000);
    }
}

#[test]
fn simulated_warmup_and_interval() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sim");
    simulated_stdout(
        &dir,
        &["--simulate", "9", "--interval", "100us", "--duration", "3s", "--warmup", "50", "--cpus", "0", "--quiet"],
    );
    let run = run_json(&dir);
    check_timer_run(&run, &Expect { cpus: vec![0], cycles: Some(30_000), seconds: Some(3..=4), ..Default::default() });
    assert_eq!(measurements(&run, "timer.latency")[0]["interval_ns"], 100_000);
}

/// Raw samples of a simulated run exported as CSV: the head is deterministic (snapshot)
/// and the values reproduce the summary.
#[test]
fn simulated_raw_csv() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sim");
    simulated_stdout(&dir, &["--simulate", "5", "--samples", "5000", "--cpus", "0", "--raw", "--quiet"]);
    let run = run_json(&dir);
    check_timer_run(&run, &Expect { cpus: vec![0], samples: Some(5000), ..Default::default() });
    let m = measurements(&run, "timer.latency")[0];
    assert_eq!(u(m, "raw_samples"), 5000);
    let output = rtlab().args(["export", "--format", "csv"]).arg(&dir).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let csv = String::from_utf8(output.stdout).unwrap();
    assert_eq!(csv.lines().count(), 5001);
    let head: Vec<&str> = csv.lines().take(12).collect();
    insta::assert_snapshot!("raw_csv_head_simulate_5", head.join("\n"));

    let mut values: Vec<i64> = csv.lines().skip(1).map(|l| l.split(',').nth(5).unwrap().parse().unwrap()).collect();
    let flagged = csv.lines().skip(1).filter(|l| l.ends_with(",1")).count() as u64;
    assert!(flagged > 0 && flagged <= u(m, "overruns"));
    values.sort_unstable();
    let s = &m["summary"];
    assert_eq!(values[0], common::i(s, "min"));
    assert_eq!(*values.last().unwrap(), common::i(s, "max"));
    for (name, q) in [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p99.9", 0.999)] {
        let exact = common::nearest_rank(&values, q);
        let reported = common::i(s, name);
        assert!(
            (reported - exact).abs() as f64 <= exact as f64 * 0.001,
            "{name}: summary {reported} vs nearest-rank {exact} of the raw samples"
        );
    }
}

/// Raw samples of a run with two load scenarios: every row names its scenario, and each
/// scenario's rows are its own raw files' samples (the same CPUs and expiries in both
/// scenarios, so nothing else tells them apart).
#[test]
fn simulated_raw_csv_of_two_scenarios() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sim");
    simulated_stdout(
        &dir,
        &[
            "--simulate",
            "5",
            "--samples",
            "300",
            "--cpus",
            "0",
            "--load",
            "idle,cpu",
            "--settle",
            "100ms",
            "--raw",
            "--quiet",
        ],
    );
    let run = run_json(&dir);
    let output = rtlab().args(["export", "--format", "csv"]).arg(&dir).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let csv = String::from_utf8(output.stdout).unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("scenario,probe,metric,cpu,expected_ns,value_ns,overrun"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    for m in measurements(&run, "timer.latency") {
        let scenario = m["scenario"].as_str().unwrap();
        let of_scenario: Vec<&Vec<&str>> = rows.iter().filter(|r| r[0] == scenario).collect();
        assert_eq!(of_scenario.len() as u64, u(m, "raw_samples"), "{scenario}");
        assert_eq!(of_scenario.len() as u64, u(m, "count"), "{scenario}");
        let max = of_scenario.iter().map(|r| r[5].parse::<i64>().unwrap()).max().unwrap();
        assert_eq!(max, common::i(&m["summary"], "max"), "{scenario}: the largest of its rows is its max");
    }
    let scenarios: Vec<&str> = rows.iter().map(|r| r[0]).fold(Vec::new(), |mut v, s| {
        if v.last() != Some(&s) {
            v.push(s);
        }
        v
    });
    assert_eq!(scenarios, ["idle", "cpu"], "one block per scenario, in the order measured");
    // The header and the first rows of each scenario.
    let heads: Vec<&str> = csv
        .lines()
        .take(1)
        .chain(
            ["idle", "cpu"].iter().flat_map(|s| csv.lines().filter(move |l| l.starts_with(&format!("{s},"))).take(3)),
        )
        .collect();
    insta::assert_snapshot!("raw_csv_two_scenarios_simulate_5", heads.join("\n"));
}

/// run.json round trip: load, serialize, load again: equal. Several seeds, so that many
/// different floating-point means and deviations go through the text form.
#[test]
fn run_json_round_trip() {
    let tmp = tempfile::tempdir().unwrap();
    for seed in 1..=12u64 {
        let dir = tmp.path().join(format!("seed{seed}"));
        let samples = (1000 + 997 * seed).to_string();
        simulated_stdout(&dir, &["--simulate", &seed.to_string(), "--samples", &samples, "--quiet"]);
        let first = RunResult::load(&dir).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let text = serde_json::to_string_pretty(&first).unwrap();
        let copy = tmp.path().join(format!("copy{seed}"));
        std::fs::create_dir(&copy).unwrap();
        std::fs::write(copy.join("run.json"), &text).unwrap();
        let second = RunResult::load(&copy).unwrap_or_else(|e| panic!("seed {seed}, copy: {e}"));
        assert_eq!(first, second, "seed {seed}: the round trip changed the result");
        // And the text is stable from then on.
        assert_eq!(serde_json::to_string_pretty(&second).unwrap(), text, "seed {seed}");
        // The saved file itself reads back to the same value.
        assert_eq!(serde_json::to_value(&first).unwrap(), run_json(&dir), "seed {seed}");
    }
}
