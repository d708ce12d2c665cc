//! Real measurements of about 2 s on this machine. Only structure, counts and consistency
//! are checked: the development VM has multi-millisecond hypervisor spikes, so no
//! assertion looks at an absolute latency.

mod common;

use common::{check_timer_run, euid, i, measurements, nearest_rank, online_cpus, rtlab, run_json, u, Expect};
use serde_json::Value;

/// The main shape: `run --duration 2s --quiet --output DIR` at the default 1 ms interval.
#[test]
fn two_second_run_on_every_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output =
        rtlab().args(["run", "--load", "idle", "--duration", "2s", "--quiet", "--output"]).arg(&out).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "stderr:\n{}", String::from_utf8_lossy(&output.stderr));
    assert!(output.stdout.is_empty(), "--quiet printed:\n{}", String::from_utf8_lossy(&output.stdout));

    let run = run_json(&out);
    let cpus = online_cpus(&run);
    check_timer_run(
        &run,
        &Expect { cpus: cpus.clone(), cycles: Some(2000), seconds: Some(2..=3), ..Default::default() },
    );
    assert_eq!(run["simulated"], false);
    assert_eq!(run["experiment"]["interval_ns"], 1_000_000);
    assert_eq!(run["experiment"]["duration_ns"], 2_000_000_000u64);
    assert_eq!(run["experiment"]["cpus"], serde_json::json!(cpus));
    for m in measurements(&run, "timer.latency") {
        assert_eq!(u(m, "interval_ns"), 1_000_000);
        assert!(m["raw_file"].is_null() && m["raw_samples"].is_null(), "raw output without --raw");
    }
    let duration = run["duration_s"].as_f64().unwrap();
    assert!((1.9..30.0).contains(&duration), "duration_s {duration}");
    if euid() == 0 {
        assert_eq!(run["realtime"]["real_time_results"], true, "root gets real-time results: {}", run["realtime"]);
        assert_eq!(run["realtime"]["policy"], "fifo");
        assert_eq!(run["realtime"]["priority"], 95);
        assert_eq!(run["realtime"]["memory_locked"], true);
    }
    // Nothing else in the results directory without --raw.
    let mut names: Vec<String> =
        std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(names, ["report.html", "run.json"], "stray files in the results directory");
}

/// `--json`: stdout is one JSON document with the summary schema, nothing else.
#[test]
fn json_summary_on_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output =
        rtlab().args(["run", "--load", "idle", "--duration", "2s", "--json", "--output"]).arg(&out).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "stderr:\n{}", String::from_utf8_lossy(&output.stderr));
    let summary: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!("stdout is not one JSON document ({e}):\n{}", String::from_utf8_lossy(&output.stdout))
    });
    assert_eq!(summary["schema"], "rtlab.summary/1");
    assert_eq!(summary["interrupted"], false);
    assert_eq!(summary["simulated"], false);

    // The summary agrees with run.json.
    let run = run_json(&out);
    let cpus = online_cpus(&run);
    check_timer_run(
        &run,
        &Expect { cpus: cpus.clone(), cycles: Some(2000), seconds: Some(2..=3), ..Default::default() },
    );
    assert_eq!(summary["real_time_results"], run["realtime"]["real_time_results"]);
    let metrics = summary["scenarios"][0]["metrics"].as_array().unwrap();
    let names: Vec<&str> = metrics.iter().map(|m| m["metric"].as_str().unwrap()).collect();
    assert_eq!(names, ["timer.latency", "timer.jitter"]);
    for metric in metrics {
        let rows = metric["rows"].as_array().unwrap();
        let per_cpu = measurements(&run, metric["metric"].as_str().unwrap());
        // One row per CPU, plus the row of all CPUs when there are several.
        assert_eq!(rows.len(), cpus.len() + usize::from(cpus.len() > 1));
        for (row, m) in rows.iter().zip(&per_cpu) {
            assert_eq!(row["cpu"], m["cpu"]);
            assert_eq!(row["count"], m["count"]);
            assert_eq!(row["summary"], m["summary"]);
        }
        if cpus.len() > 1 {
            let all = rows.last().unwrap();
            assert!(all["cpu"].is_null());
            let total: u64 = per_cpu.iter().map(|m| u(m, "count")).sum();
            assert_eq!(u(all, "count"), total);
            let s = &all["summary"];
            assert_eq!(i(s, "max"), per_cpu.iter().map(|m| i(&m["summary"], "max")).max().unwrap());
            assert_eq!(i(s, "min"), per_cpu.iter().map(|m| i(&m["summary"], "min")).min().unwrap());
            let ordered = common::ordered_summary(s);
            assert!(ordered.windows(2).all(|w| w[0].1 <= w[1].1), "combined summary unordered: {s}");
        }
    }
    assert_eq!(summary["conclusion"]["metric"], "timer.latency");
}

/// Without --quiet or --json: the terminal summary, ending with the results path.
#[test]
fn terminal_summary_names_the_results() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output = rtlab()
        .args(["run", "--load", "idle", "--samples", "300", "--cpus", "0", "--output"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "stderr:\n{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(stdout.contains("Timer latency (µs)"), "{stdout}");
    assert!(stdout.contains("Period jitter (µs)"), "{stdout}");
    assert!(stdout.contains("Conclusion"), "{stdout}");
    let last = stdout.lines().last().unwrap();
    assert_eq!(last, format!("Results: {}", out.join("run.json").display()));
    check_timer_run(&run_json(&out), &Expect { cpus: vec![0], samples: Some(300), ..Default::default() });
}

#[test]
fn samples_bound_the_run_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    rtlab()
        .args(["run", "--load", "idle", "--samples", "500", "--cpus", "0", "--quiet", "--output"])
        .arg(&out)
        .assert()
        .success();
    let run = run_json(&out);
    check_timer_run(&run, &Expect { cpus: vec![0], samples: Some(500), ..Default::default() });
    assert_eq!(run["experiment"]["samples_per_cpu"], 500);
    assert!(run["experiment"]["duration_ns"].is_null());
}

#[test]
fn warmup_samples_are_not_counted() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    rtlab()
        .args(["run", "--load", "idle", "--warmup", "100", "--samples", "300", "--cpus", "0", "--quiet", "--output"])
        .arg(&out)
        .assert()
        .success();
    let run = run_json(&out);
    check_timer_run(&run, &Expect { cpus: vec![0], samples: Some(300), ..Default::default() });
    assert_eq!(run["experiment"]["warmup_samples"], 100);
}

/// `--raw`: the raw files hold exactly the histogram's samples, and `export --format csv`
/// reproduces the summary.
#[test]
fn raw_samples_and_csv_export_agree_with_the_summary() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    rtlab()
        .args(["run", "--load", "idle", "--raw", "--interval", "200us", "--duration", "2s", "--quiet", "--output"])
        .arg(&out)
        .assert()
        .success();
    let run = run_json(&out);
    let cpus = online_cpus(&run);
    check_timer_run(
        &run,
        &Expect { cpus: cpus.clone(), cycles: Some(10_000), seconds: Some(2..=3), ..Default::default() },
    );
    assert_eq!(run["experiment"]["raw"], true);

    let latency = measurements(&run, "timer.latency");
    let mut total = 0;
    for m in &latency {
        let count = u(m, "count");
        assert_eq!(u(m, "raw_samples"), count, "raw_samples == count on CPU {}", m["cpu"]);
        let file = out.join(m["raw_file"].as_str().expect("raw_file is set"));
        let size = std::fs::metadata(&file).unwrap().len();
        assert_eq!(size, 16 + 24 * count, "{}: size of a 16-byte header and 24-byte records", file.display());
        total += count;
    }
    // Only the main metric carries a raw file.
    for m in measurements(&run, "timer.jitter") {
        assert!(m["raw_file"].is_null(), "timer.jitter has a raw file");
    }

    let csv = dir.path().join("samples.csv");
    let output = rtlab().args(["export", "--format", "csv", "--output"]).arg(&csv).arg(&out).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "stderr:\n{}", String::from_utf8_lossy(&output.stderr));
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("scenario,probe,metric,cpu,expected_ns,value_ns,overrun"));
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len() as u64, total, "one row per sample");

    for m in &latency {
        let cpu = u(m, "cpu");
        let mut values = Vec::new();
        let mut flags = Vec::new();
        let mut previous_expected = 0u64;
        for row in &rows {
            let cols: Vec<&str> = row.split(',').collect();
            assert_eq!(cols.len(), 7, "row {row:?}");
            if cols[3].parse::<u64>().unwrap() != cpu {
                continue;
            }
            assert_eq!(&cols[..3], ["idle", "timer", "timer.latency"]);
            let expected: u64 = cols[4].parse().unwrap();
            assert!(
                expected > previous_expected,
                "CPU {cpu}: expiries not increasing ({previous_expected} then {expected})"
            );
            // Expiries are whole intervals apart.
            if previous_expected > 0 {
                assert_eq!((expected - previous_expected) % 200_000, 0, "CPU {cpu}: expiries off the 200 µs grid");
            }
            previous_expected = expected;
            values.push(cols[5].parse::<i64>().unwrap());
            assert!(cols[6] == "0" || cols[6] == "1", "row {row:?}: overrun column");
            flags.push(cols[6] == "1");
        }
        assert_eq!(values.len() as u64, u(m, "count"), "CPU {cpu}: CSV rows");
        // Each flagged wake-up skipped at least one expiry. Only skipped expiries inside
        // the measured window count as overruns, so the last sample may be flagged
        // without adding one.
        let flagged_inside = flags[..flags.len() - 1].iter().filter(|&&f| f).count() as u64;
        assert!(
            flagged_inside <= u(m, "overruns"),
            "CPU {cpu}: {flagged_inside} flagged rows, {} overruns",
            m["overruns"]
        );
        if u(m, "overruns") > 0 {
            assert!(flags.iter().any(|&f| f), "CPU {cpu}: overruns but no flagged row");
        }
        values.sort_unstable();
        let s = &m["summary"];
        assert_eq!(values[0], i(s, "min"), "CPU {cpu}: min");
        assert_eq!(*values.last().unwrap(), i(s, "max"), "CPU {cpu}: max");
        // Every reported percentile is the exact nearest-rank value within the histogram's
        // precision (3 significant digits: 0.1 %).
        for (key, q) in
            [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p99.9", 0.999), ("p99.99", 0.9999), ("p99.999", 0.99999)]
        {
            let exact = nearest_rank(&values, q);
            let reported = i(s, key);
            assert!(
                (reported - exact).abs() as f64 <= exact.abs() as f64 * 0.001,
                "CPU {cpu}: {key} {reported} vs nearest-rank {exact} from the raw samples"
            );
        }
        // The report's cumulative curve at a latency x lies between the exact share of raw
        // samples <= x(1 - 0.1 %) and <= x(1 + 0.1 %).
        let encoded: rtlab_analysis::HistogramEncoding = serde_json::from_value(m["histogram"].clone()).unwrap();
        let curve =
            rtlab_analysis::curve::CumulativeCurve::of(&rtlab_analysis::LatencyHistogram::decode(&encoded).unwrap());
        let share_at_or_below =
            |x: f64| values.partition_point(|&v| (v as f64) <= x) as f64 * 100.0 / values.len() as f64;
        for q in [0.1, 0.5, 0.9, 0.99, 0.999] {
            let x = nearest_rank(&values, q);
            let percent = curve.percent_at(x as u64);
            let (low, high) = (share_at_or_below(x as f64 * 0.999), share_at_or_below(x as f64 * 1.001));
            assert!(
                percent >= low - 1e-9 && percent <= high + 1e-9,
                "CPU {cpu}: curve at {x} ns is {percent} %, exact share between {low} and {high} %"
            );
        }
        let sum: i128 = values.iter().map(|&v| v as i128).sum();
        assert_eq!(sum, m["moments"]["sum"].as_i64().unwrap() as i128, "CPU {cpu}: moments.sum");
    }

    // CSV on stdout is the same document.
    let output = rtlab().args(["export", "--format", "csv"]).arg(out.join("run.json")).output().unwrap();
    assert!(output.status.success());
    assert_eq!(String::from_utf8(output.stdout).unwrap(), text);
}

/// A damaged raw file is refused, not silently exported short.
#[test]
fn export_refuses_a_truncated_raw_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    rtlab()
        .args(["run", "--load", "idle", "--raw", "--samples", "200", "--cpus", "0", "--quiet", "--output"])
        .arg(&out)
        .assert()
        .success();
    let run = run_json(&out);
    let file = out.join(measurements(&run, "timer.latency")[0]["raw_file"].as_str().unwrap());
    let bytes = std::fs::read(&file).unwrap();
    assert_eq!(bytes.len(), 16 + 24 * 200);
    assert_eq!(&bytes[..8], b"RTLABRAW");

    // Not a whole number of records.
    std::fs::write(&file, &bytes[..bytes.len() - 5]).unwrap();
    let csv = dir.path().join("x.csv");
    let output = rtlab().args(["export", "--output"]).arg(&csv).arg(&out).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("truncated"), "{stderr}");
    assert!(!csv.exists(), "a partial CSV was left behind");

    // Whole records missing: fewer samples than run.json records.
    std::fs::write(&file, &bytes[..bytes.len() - 48]).unwrap();
    let output = rtlab().args(["export", "--output"]).arg(&csv).arg(&out).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("198") && stderr.contains("200"), "{stderr}");
    assert!(!csv.exists(), "a partial CSV was left behind");
}

/// run.json round trip on a real run: load, serialize, load again gives the same result.
#[test]
fn real_run_json_round_trip() {
    use rtlab_results::run::RunResult;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    rtlab().args(["run", "--load", "idle", "--samples", "300", "--quiet", "--output"]).arg(&out).assert().success();
    let first = RunResult::load(&out).expect("run.json loads");
    let copy = dir.path().join("copy");
    std::fs::create_dir(&copy).unwrap();
    first.save(&copy).unwrap();
    let second = RunResult::load(&copy).expect("the saved copy loads");
    assert_eq!(first, second);
    assert_eq!(serde_json::to_value(&first).unwrap(), serde_json::to_value(&second).unwrap());
}

/// `--policy other` asks for an ordinary task: it runs (priority defaults to 0), with 1 ns
/// timer slack, and the result says it is not a real-time result.
#[test]
fn policy_other_is_not_a_real_time_result() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output = rtlab()
        .args(["run", "--load", "idle", "--policy", "other", "--samples", "200", "--cpus", "0", "--output"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "stderr:\n{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(stdout.contains("NOT REAL-TIME RESULTS"), "{stdout}");
    let run = run_json(&out);
    check_timer_run(&run, &Expect { cpus: vec![0], samples: Some(200), ..Default::default() });
    let rt = &run["realtime"];
    assert_eq!(rt["real_time_results"], false);
    assert_eq!(rt["policy"], "other");
    assert_eq!(rt["priority"], 0);
    assert_eq!(rt["timer_slack_ns"], 1);
    assert!(!rt["notes"].as_array().unwrap().is_empty(), "no note says why: {rt}");
    assert_eq!(run["experiment"]["policy"], "other");
}

/// `--policy rr` with an explicit priority is what the threads get (as root).
#[test]
fn policy_rr_with_priority() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    rtlab()
        .args([
            "run",
            "--load",
            "idle",
            "--policy",
            "rr",
            "--priority",
            "10",
            "--samples",
            "200",
            "--cpus",
            "0",
            "--quiet",
            "--output",
        ])
        .arg(&out)
        .assert()
        .success();
    let run = run_json(&out);
    check_timer_run(&run, &Expect { cpus: vec![0], samples: Some(200), ..Default::default() });
    assert_eq!(run["experiment"]["policy"], "rr");
    assert_eq!(run["experiment"]["priority"], 10);
    if euid() == 0 {
        assert_eq!(run["realtime"]["policy"], "rr");
        assert_eq!(run["realtime"]["priority"], 10);
        assert_eq!(run["realtime"]["real_time_results"], true);
    }
}
