//! The stop rule, `rtlab run --until converged[:STATISTIC]` (docs/stop-rule.md), on the
//! simulated clock: its decision in run.json and the report, its coverage of the true
//! quantile over seeds (the quick configuration of bench/stop-rule-calibration), and its
//! usage errors.

mod common;

use common::rtlab;
use serde_json::Value;
use std::path::Path;

fn run_json(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap()
}

/// p99 of the simulated distribution (crates/rtlab-probe/src/clock.rs): with probability
/// 399/400, 1.5 µs + an exponential of mean 2 µs; with 1/400, a spike of one to three
/// periods. p99 lies in the exponential part: 1.5 µs + 2 µs · ln(0.9975 / 0.0075).
fn simulated_p99_ns() -> f64 {
    1_500.0 + 2_000.0 * (0.9975f64 / 0.0075).ln()
}

#[test]
fn stop_rule_covers_the_true_quantile() {
    let tmp = tempfile::tempdir().unwrap();
    let truth = simulated_p99_ns();
    let seeds = 20;
    let (mut covered, mut converged) = (0, 0);
    for seed in 1..=seeds {
        let dir = tmp.path().join(format!("s{seed}"));
        let out = rtlab()
            .args(["run", "--simulate", &seed.to_string(), "-c", "0", "-L", "idle", "-q"])
            .args(["--until", "converged:p99", "--target", "5%", "--window", "2s", "--max-duration", "10m", "-o"])
            .arg(&dir)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        let c = &run_json(&dir)["scenarios"][0]["convergence"];
        let last = c["curve"].as_array().unwrap().last().unwrap().clone();
        let (low, high) = (last["low_ns"].as_f64().unwrap(), last["high_ns"].as_f64().unwrap());
        if low <= truth && truth <= high {
            covered += 1;
        }
        if c["converged"] == true {
            converged += 1;
            // The rule: the last three windows within target.
            let curve = c["curve"].as_array().unwrap();
            assert!(curve.len() >= 3);
            assert!(curve[curve.len() - 3..].iter().all(|p| p["half_width"].as_f64().unwrap() <= 0.05));
        }
    }
    assert_eq!(converged, seeds, "p99 at ±5 % converges in well under 10 minutes");
    assert!(covered * 10 >= seeds * 9, "coverage {covered}/{seeds} below 90 %");
}

#[test]
fn until_records_the_decision_and_the_report_draws_the_curve() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("until");
    let out = rtlab()
        .args(["run", "--simulate", "7", "-c", "0", "-L", "idle"])
        .args(["--until", "converged", "--window", "5s", "--max-duration", "10m", "-o"])
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let line = stdout.lines().find(|l| l.starts_with("Long enough? ")).expect(&stdout);
    assert!(line.starts_with("Long enough? long enough for p99.99 (±"), "{line}");
    let run = run_json(&dir);
    let c = &run["scenarios"][0]["convergence"];
    assert_eq!(c["mode"], "until");
    assert_eq!(c["statistic"], "p99.99");
    assert_eq!(c["metric"], "timer.latency");
    assert_eq!(c["windows_required"], 3);
    assert_eq!(c["converged"], true);
    let elapsed = c["elapsed_s"].as_f64().unwrap();
    assert_eq!(run["scenarios"][0]["duration_s"].as_f64().unwrap(), elapsed);
    assert_eq!(c["curve"].as_array().unwrap().len() as f64, elapsed / 5.0, "one point per window");
    assert!(elapsed < 600.0);
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("id=\"long-enough\"") && html.contains("id=\"fig-convergence\""));
    // KCIDB carries the decision in the misc of the judged metric's tests.
    let out = rtlab().args(["export", "--format", "kcidb"]).arg(&dir).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let kcidb: Value = serde_json::from_slice(&out.stdout).unwrap();
    let judged: Vec<&Value> =
        kcidb["tests"].as_array().unwrap().iter().filter_map(|t| t["misc"].get("long_enough")).collect();
    assert!(!judged.is_empty());
    assert!(judged.iter().all(|l| l["converged"] == true && l["statistic"] == "p99.99" && l["mode"] == "until"));
}

#[test]
fn a_limit_too_short_to_converge_says_how_much_more() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("short");
    let out = rtlab()
        .args(["run", "--simulate", "3", "-c", "0", "-L", "idle", "-q"])
        .args(["--until", "converged:p99.99", "--target", "1%", "--window", "1s", "--max-duration", "30s", "-o"])
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let c = &run_json(&dir)["scenarios"][0]["convergence"];
    assert_eq!(c["converged"], false);
    assert_eq!(c["elapsed_s"].as_f64().unwrap(), 30.0);
    let answer = c["answer"].as_str().unwrap();
    assert!(answer.starts_with("not long enough: p99.99 ") && answer.contains("at the 30 s limit"), "{answer}");
    assert!(answer.contains("more at this rate"), "{answer}");
    assert!(c["more_s"].as_f64().unwrap() > 0.0);
}

#[test]
fn a_plain_run_answers_for_the_duration_it_had() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("plain");
    let out = rtlab().args(["run", "--simulate", "5", "-L", "idle", "-D", "10s", "-o"]).arg(&dir).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let c = &run_json(&dir)["scenarios"][0]["convergence"];
    assert_eq!(c["mode"], "duration");
    assert_eq!(c["curve"].as_array().unwrap().len(), 1);
    assert!(c.get("window_s").is_none() && c.get("windows_required").is_none());
    assert_eq!(c["converged"], false, "10 s hold too few samples to bound p99.99");
    assert!(String::from_utf8(out.stdout)
        .unwrap()
        .contains("Long enough? not long enough: p99.99 has no upper 95 % bound yet"));
}

#[test]
fn bad_rules_are_usage_errors() {
    let cases: &[&[&str]] = &[
        &["--until", "forever"],
        &["--until", "converged:max"],
        &["--until", "converged:p99", "--target", "150%"],
        &["--until", "converged", "--max-duration", "20s"],
        &["--until", "converged", "-P", "timer,switch"],
        &["--until", "converged", "-P", "sleep"],
        &["--until", "converged", "--raw"],
        &["--until", "converged", "-D", "10s"],
        &["--max-duration", "10m"],
    ];
    for args in cases {
        let out = rtlab()
            .args(["run", "--simulate", "1", "-L", "idle", "-o", "/nonexistent/x"])
            .args(*args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}
