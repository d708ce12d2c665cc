//! `rtlab report`, `rtlab compare` and `--require`, driven through the binary on simulated
//! runs (`--simulate SEED`: instant and identical everywhere, so outputs are snapshots).

mod common;

use common::{measurements, redact, rtlab, run_json};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A quiet simulated run of `samples` per CPU into `dir`, with `extra` arguments; returns
/// the exit code and stdout.
fn simulated(dir: &Path, seed: u64, samples: u64, extra: &[&str]) -> (i32, String) {
    let output = rtlab()
        .args(["run", "--simulate", &seed.to_string(), "--samples", &samples.to_string(), "--load", "idle", "-q"])
        .arg("-o")
        .arg(dir)
        .args(extra)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.is_empty(), "stderr:\n{stderr}");
    (output.status.code().unwrap(), String::from_utf8(output.stdout).unwrap())
}

/// The largest timer.latency sample of a saved run.
fn observed_max(dir: &Path) -> i64 {
    let run = run_json(dir);
    measurements(&run, "timer.latency").iter().map(|m| m["summary"]["max"].as_i64().unwrap()).max().unwrap()
}

/// A saved simulated run (seed 42, 2000 samples per CPU) in `tmp/name`.
fn saved_run(tmp: &Path, name: &str, seed: u64) -> PathBuf {
    let dir = tmp.join(name);
    let (code, _) = simulated(&dir, seed, 2000, &[]);
    assert_eq!(code, 0);
    dir
}

#[test]
fn require_below_the_observed_max_exits_1_and_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let max = observed_max(&saved_run(tmp.path(), "probe", 42));
    // The same seed measures the same samples: a bound equal to the max is just below it
    // (the requirement is strict).
    let dir = tmp.path().join("below");
    let (code, stdout) = simulated(&dir, 42, 2000, &["--require", &format!("timer max < {max}ns")]);
    assert_eq!(code, 1, "stdout:\n{stdout}");
    assert!(stdout.starts_with("Verdict: NOT MET: 1 of 1 check failed;"), "{stdout}");
    assert!(stdout.contains(&format!("equal to the {:.1} µs bound", max as f64 / 1000.0)), "{stdout}");
    let verdict = &run_json(&dir)["verdict"];
    assert_eq!(verdict["met"], false);
    assert_eq!(verdict["checks"][0]["measured_ns"], max);
    assert_eq!(verdict["checks"][0]["margin_ns"], 0);
    assert_eq!(verdict["checks"][0]["samples_above_bound"], 1);
    assert!(dir.join("report.html").is_file(), "run writes report.html");
}

#[test]
fn require_above_the_observed_max_exits_0() {
    let tmp = tempfile::tempdir().unwrap();
    let max = observed_max(&saved_run(tmp.path(), "probe", 42));
    let dir = tmp.path().join("above");
    let (code, stdout) = simulated(&dir, 42, 2000, &["--require", &format!("timer max < {}ns", max + 1)]);
    assert_eq!(code, 0, "stdout:\n{stdout}");
    assert!(stdout.starts_with("Verdict: MET"), "{stdout}");
    let verdict = &run_json(&dir)["verdict"];
    assert_eq!(verdict["met"], true);
    assert_eq!(verdict["checks"][0]["margin_ns"], 1);
    assert_eq!(verdict["checks"][0]["exceedance_interval_s"], Value::Null);
}

#[test]
fn the_terminal_and_json_summaries_carry_the_verdict() {
    let tmp = tempfile::tempdir().unwrap();
    let output = rtlab()
        .args(["run", "--simulate", "5", "--samples", "1000", "--load", "idle", "--require", "timer p99 < 1ms"])
        .arg("-o")
        .arg(tmp.path().join("text"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let stdout = String::from_utf8(output.stdout).unwrap();
    let verdict_at = stdout.find("Verdict: MET").expect("a verdict line");
    assert!(stdout[verdict_at..].contains("[ ok ] timer.latency p99 < 1ms · simulated idle: "), "{stdout}");
    assert!(stdout.contains("Report: ") && stdout.trim_end().ends_with("run.json"), "{stdout}");

    let output = rtlab()
        .args([
            "run",
            "--simulate",
            "5",
            "--samples",
            "1000",
            "--load",
            "idle",
            "--json",
            "--require",
            "timer max < 1us",
        ])
        .arg("-o")
        .arg(tmp.path().join("json"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let summary: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(summary["verdict"]["met"], false);
    assert_eq!(summary["verdict"]["checks"][0]["requirement"]["text"], "timer.latency max < 1us");
}

#[test]
fn bad_requirements_exit_2_before_anything_runs() {
    let tmp = tempfile::tempdir().unwrap();
    for (expression, expected) in [
        ("timer max <= 500us", "only \"<\" is allowed"),
        ("timer maximum < 500us", "unknown statistic \"maximum\""),
        ("timer max < 500", "missing unit"),
        ("timer pwcet(1e-15x) < 1ms", "the probability is not a number"),
        ("timer pwcet(1) < 1ms", "the probability must be between 0 and 1"),
    ] {
        let dir = tmp.path().join("never");
        let output = rtlab()
            .args(["run", "--simulate", "1", "--samples", "100", "-q", "--require", expression])
            .arg("-o")
            .arg(&dir)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{expression}");
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert!(stderr.starts_with("rtlab: error: --require: invalid requirement"), "{stderr}");
        assert!(stderr.contains(expected), "{expression}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(!dir.exists(), "{expression}: nothing may run");
    }
}

/// The report crate's fixture `name` (tests/synthetic_tails.rs makes the pWCET ones).
fn fixture(name: &str) -> PathBuf {
    common::repo_root().join("crates/rtlab-report/tests/fixtures").join(name)
}

/// `rtlab report FIXTURE --require REQUIREMENT --format json`: exit code, the report.
fn judged(fixture_name: &str, requirement: &str) -> (i32, Value) {
    let (code, json) = report(&fixture(fixture_name), &["--format", "json", "--require", requirement]);
    (code, serde_json::from_str(&json).unwrap())
}

#[test]
fn pwcet_requirements_are_judged_from_the_tail_analysis() {
    // A light tail whose pWCET is defensible (exponential-300s: 600,000 samples, 300 per-second
    // maxima). A bound of 1 µs is far below any estimate; twice the estimate is far above it.
    let (code, report) = judged("exponential-300s.run.json", "timer pwcet(1e-9) < 1us");
    assert_eq!(code, 1, "{report:#}");
    let verdict = &report["verdict"];
    assert_eq!((&verdict["met"], &verdict["undecided"]), (&Value::Bool(false), &Value::Bool(false)));
    let summary = verdict["summary"].as_str().unwrap();
    assert!(summary.starts_with("NOT MET: 1 of 1 check failed; the worst: timer.latency pwcet(1e-9) was"), "{summary}");
    let check = &verdict["checks"][0];
    assert_eq!(check["undecided"], Value::Null);
    let estimate = check["measured_ns"].as_i64().expect("an estimate in ns");
    assert_eq!(check["margin_ns"].as_i64(), Some(1_000 - estimate));
    let notes: Vec<&str> = check["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
    assert!(notes[0].starts_with("pWCET at 1e-9 per activation"), "{notes:?}");
    assert!(notes[0].contains("95 % confidence interval"), "{notes:?}");
    assert!(notes.iter().any(|n| n.starts_with("fit: ")), "{notes:?}");
    // The JSON report's tail entry: defensible, with the analysis' choices.
    let entry = &report["pwcet"][0]["analysis"];
    assert_eq!(entry["defensibility"]["defensible"], true, "{entry:#}");
    assert_eq!(entry["refusal"], Value::Null);
    assert!(entry["threshold_ns"].as_f64().is_some() && entry["blocks_merged"].as_u64().is_some(), "{entry:#}");
    assert!(
        entry["selection"].is_array() && entry["threshold_because"].is_string() && entry["blocks_because"].is_string()
    );

    let (code, report) = judged("exponential-300s.run.json", &format!("timer pwcet(1e-9) < {}ns", 2 * estimate));
    assert_eq!(code, 0);
    let summary = report["verdict"]["summary"].as_str().unwrap();
    assert!(summary.starts_with("MET: all 1 check passed; the closest: timer.latency pwcet(1e-9) was"), "{summary}");
    assert_eq!(report["verdict"]["checks"][0]["measured_ns"].as_i64(), Some(estimate), "one analysis, one estimate");

    // The tail tables are in the report.
    let ids: Vec<&str> = report["tables"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap()).collect();
    for id in ["pwcet-timer.latency", "pwcet-fits-timer.latency", "pwcet-tests-timer.latency"] {
        assert!(ids.contains(&id), "{id}: {ids:?}");
    }

    // Too little data for any fit: undecided, with the reason, and no crash.
    let thin = tempfile::tempdir().unwrap();
    let thin = thin.path().join("thin");
    let output = rtlab()
        .args([
            "run",
            "--simulate",
            "1",
            "--samples",
            "4",
            "--load",
            "idle",
            "-q",
            "--require",
            "timer pwcet(1e-9) < 10s",
        ])
        .arg("-o")
        .arg(&thin)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        stdout
            .contains("UNDECIDED: timer.latency pwcet(1e-9) under idle: no pWCET: the tail analysis could not be made"),
        "{stdout}"
    );
    let check = &run_json(&thin)["verdict"]["checks"][0];
    assert_eq!(check["measured_ns"], Value::Null);
    assert!(check["undecided"].as_str().unwrap().contains("run longer"), "{check}");
}

/// A pwcet(P) requirement on a run whose pWCET is not defensible is neither met nor failed:
/// UNDECIDED with the reasons, exit 1, everywhere the verdict shows; the headline has no
/// number. A requirement that fails beside it makes the verdict NOT MET.
#[test]
fn a_pwcet_that_is_not_defensible_leaves_the_requirement_undecided() {
    let undecided = "UNDECIDED: timer.latency pwcet(1e-9) under idle: not defensible from this run — ";
    // A saved run whose tail grows over the run (trending-300s): not stationary.
    // The bound is above every sample, so only the estimate could decide it.
    let (code, judged_report) = judged("trending-300s.run.json", "timer pwcet(1e-9) < 1s");
    assert_eq!(code, 1, "{judged_report:#}");
    let verdict = &judged_report["verdict"];
    assert_eq!((&verdict["met"], &verdict["undecided"]), (&Value::Bool(false), &Value::Bool(true)));
    assert!(verdict["summary"].as_str().unwrap().starts_with(undecided), "{verdict:#}");
    let check = &verdict["checks"][0];
    let refusal = check["undecided"].as_str().expect("why it is undecided");
    assert!(refusal.starts_with("not defensible from this run — ") && refusal.contains("not stationary"), "{refusal}");
    assert_eq!(
        (&check["met"], &check["measured_ns"], &check["margin_ns"]),
        (&Value::Bool(false), &Value::Null, &Value::Null)
    );
    assert_eq!(judged_report["pwcet"][0]["analysis"]["defensibility"]["defensible"], false);
    assert_eq!(judged_report["pwcet"][0]["analysis"]["refusal"], refusal);
    let (code, max) = judged("trending-300s.run.json", "timer max < 100us");
    assert_eq!((code, &max["verdict"]["undecided"]), (1, &Value::Bool(false)), "a plain max is decided");
    // Samples above the bound at a rate surely above 1e-9 decide it without the estimate.
    let (code, broken) = judged("trending-300s.run.json", "timer pwcet(1e-9) < 1us");
    assert_eq!(
        (code, &broken["verdict"]["met"], &broken["verdict"]["undecided"]),
        (1, &Value::Bool(false), &Value::Bool(false))
    );
    let check = &broken["verdict"]["checks"][0];
    assert_eq!(check["undecided"], Value::Null);
    assert!(check["notes"][0].as_str().unwrap().ends_with("without any extrapolation"), "{check:#}");
    assert!(
        check["notes"][1].as_str().unwrap().starts_with("the estimate itself is not defensible from this run — "),
        "{check:#}"
    );

    // The same through `rtlab run`: the terminal verdict and headline, run.json, --json.
    // The simulated clock's tail (rare wake-ups one to three periods late) is not defensible
    // from 60 s (seed 1).
    let tmp = tempfile::tempdir().unwrap();
    let run = |name: &str, extra: &[&str]| {
        let output = rtlab()
            .args(["run", "--simulate", "1", "-D", "60s", "--load", "idle", "--require", "timer pwcet(1e-9) < 1s"])
            .args(extra)
            .arg("-o")
            .arg(tmp.path().join(name))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.is_empty(), "stderr:\n{stderr}");
        (output.status.code().unwrap(), String::from_utf8(output.stdout).unwrap())
    };
    let (code, stdout) = run("text", &[]);
    assert_eq!(code, 1, "{stdout}");
    let headline = stdout.lines().find(|l| l.starts_with("pWCET: ")).expect("a pWCET line");
    assert!(headline.starts_with("pWCET: not defensible from this run — "), "{headline}");
    assert!(!headline.contains(" µs at "), "no number: {headline}");
    assert!(stdout.contains(&format!("Verdict: {undecided}")), "{stdout}");
    assert!(stdout.contains("  [ ?? ] timer.latency pwcet(1e-9) < 1s · simulated idle: undecided, "), "{stdout}");
    let saved = &run_json(&tmp.path().join("text"))["verdict"];
    assert_eq!((&saved["met"], &saved["undecided"]), (&Value::Bool(false), &Value::Bool(true)));
    assert!(saved["checks"][0]["undecided"].as_str().unwrap().starts_with("not defensible from this run — "));

    let (code, stdout) = run("json", &["--json"]);
    assert_eq!(code, 1);
    let summary: Value = serde_json::from_str(&stdout).unwrap();
    assert!(summary["verdict"]["summary"].as_str().unwrap().starts_with(undecided), "{summary:#}");
    let pwcet = &summary["scenarios"][0]["pwcet"];
    assert_eq!((&pwcet["metric"], &pwcet["estimate"]), (&Value::from("timer.latency"), &Value::Null), "{pwcet:#}");
    assert_eq!(pwcet["defensibility"]["defensible"], false);
    assert!(pwcet["not_quoted"].as_str().unwrap().starts_with("not defensible from this run — "), "{pwcet:#}");

    let (code, stdout) = run("quiet", &["-q"]);
    assert_eq!(code, 1);
    assert!(stdout.starts_with(&format!("Verdict: {undecided}")), "{stdout}");

    // `report` of the saved run without --require judges by its saved verdict: exit 1.
    let (code, md) = report(&tmp.path().join("quiet"), &["--format", "md"]);
    assert_eq!(code, 1);
    assert!(md.contains(&format!("## Verdict: UNDECIDED\n\n{undecided}")), "{md}");
    // A failed requirement beside it: NOT MET.
    let (code, stdout) = run("both", &["-q", "--require", "timer max < 1us"]);
    assert_eq!(code, 1);
    assert!(
        stdout.starts_with("Verdict: NOT MET: 1 of 2 checks failed, 1 undecided; the worst: timer.latency max"),
        "{stdout}"
    );
}

#[test]
fn the_experiment_file_takes_requirements() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("lab.toml");
    std::fs::write(&file, "load = \"idle\"\nsamples = 500\nrequire = [\"timer max < 1us\"]\n").unwrap();
    let output = rtlab()
        .args(["run", "--simulate", "3", "-q", "-e"])
        .arg(&file)
        .arg("-o")
        .arg(tmp.path().join("run"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "every simulated sample is above 1 µs");
    // The command line replaces the file's requirements.
    let output = rtlab()
        .args(["run", "--simulate", "3", "-q", "--require", "timer max < 1s", "-e"])
        .arg(&file)
        .arg("-o")
        .arg(tmp.path().join("run2"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
}

/// `rtlab report DIR --format F` on stdout, with the results directory redacted.
fn report(dir: &Path, args: &[&str]) -> (i32, String) {
    let output = rtlab().arg("report").arg(dir).args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.is_empty(), "stderr:\n{stderr}");
    (output.status.code().unwrap(), redact(&String::from_utf8(output.stdout).unwrap(), dir))
}

#[test]
fn report_formats_snapshots() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = saved_run(tmp.path(), "sim", 42);
    let (code, md) = report(&dir, &["--format", "md"]);
    assert_eq!(code, 0);
    insta::assert_snapshot!("report_md_simulate_42", md);
    let (_, csv) = report(&dir, &["--format", "csv"]);
    insta::assert_snapshot!("report_csv_simulate_42", csv);
    let (_, json) = report(&dir, &["--format", "json", "--require", "timer p99.9 < 10ms"]);
    let value: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(value["schema"], "rtlab.report/1");
    assert_eq!(value["verdict"]["met"], true);
    insta::assert_snapshot!("report_json_simulate_42", json);
    assert!(!dir.join("report.md").exists() && !tmp.path().join("rtlab-report.html").exists());
}

#[test]
fn report_writes_html_into_the_results_directory_and_judges_requirements() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = saved_run(tmp.path(), "sim", 42);
    std::fs::remove_file(dir.join("report.html")).unwrap();
    let (code, stdout) = report(&dir, &["--require", "timer max < 100us"]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("Verdict: NOT MET"), "{stdout}");
    assert!(stdout.trim_end().ends_with("Report: [DIR]/report.html"), "{stdout}");
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    // --output elsewhere, and a met requirement.
    let out = tmp.path().join("mine.md");
    let (code, stdout) =
        report(&dir, &["--format", "md", "--require", "timer max < 1s", "--output", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{stdout}");
    assert!(std::fs::read_to_string(&out).unwrap().starts_with("# rtlab report\n\n## Verdict: MET"));
}

#[test]
fn report_on_a_damaged_or_foreign_file_exits_2_naming_the_problem() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = saved_run(tmp.path(), "sim", 42);
    let text = std::fs::read_to_string(dir.join("run.json")).unwrap();
    let cases = [
        ("truncated.json", text[..text.len() / 2].to_string(), "not JSON"),
        ("foreign.json", "{\"name\": \"something else\"}".to_string(), "no \"schema\" field"),
        ("future.json", text.replace("rtlab.run/1", "rtlab.run/9"), "schema \"rtlab.run/9\" is not \"rtlab.run/1\""),
        ("damaged.json", text.replacen("\"count\": 2000", "\"count\": 1999", 1), "disagrees with its histogram"),
    ];
    for (name, content, expected) in cases {
        let path = tmp.path().join(name);
        std::fs::write(&path, content).unwrap();
        let output = rtlab().arg("report").arg(&path).args(["--format", "md"]).output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{name}");
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert!(stderr.contains(expected) && stderr.contains(name), "{name}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(output.stdout.is_empty());
    }
    let output = rtlab().args(["report", "/nonexistent/run.json"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn compare_of_two_runs_writes_the_html_file() {
    let tmp = tempfile::tempdir().unwrap();
    let a = saved_run(tmp.path(), "a", 42);
    let b = saved_run(tmp.path(), "b", 43);
    let output = rtlab().current_dir(tmp.path()).arg("compare").arg(&a).arg(&b).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(stdout.contains("simulated #1 (A, the baseline)"), "{stdout}");
    assert!(stdout.contains("Is B better than A? Timer latency (timer.latency), each against A = simulated #1"));
    assert!(stdout.trim_end().ends_with("Report: rtlab-compare.html"), "{stdout}");
    let html = std::fs::read_to_string(tmp.path().join("rtlab-compare.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    // Markdown on stdout instead, the same tables.
    let output = rtlab().arg("compare").arg(&a).arg(&b).args(["--format", "md"]).output().unwrap();
    let md = String::from_utf8(output.stdout).unwrap();
    assert!(md.contains("## Is B better than A?"), "{md}");
    assert!(md.contains("| simulated #2 | "), "{md}");
}

/// The `fig-...` ids of the figures of an HTML report.
fn figure_ids(html: &str) -> Vec<String> {
    html.split("<figure class=\"rtlab-figure\" id=\"")
        .skip(1)
        .map(|rest| rest.split('"').next().unwrap().to_string())
        .collect()
}

/// `rtlab ARGS` in `cwd`: exit code, stdout, stderr; None (after saying so) when the host
/// has no font to draw the figures' text with.
fn png_command(cwd: &Path, args: &[&std::ffi::OsStr]) -> Option<(i32, String, String)> {
    let output = rtlab().current_dir(cwd).args(args).output().unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    if output.status.code() == Some(3) && stderr.contains("fonts-dejavu-core") {
        eprintln!("skipped: {stderr}");
        return None;
    }
    Some((output.status.code().unwrap(), String::from_utf8(output.stdout).unwrap(), stderr))
}

#[test]
fn report_format_png_writes_one_png_per_figure() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = saved_run(tmp.path(), "sim", 42);
    let expected = figure_ids(&std::fs::read_to_string(dir.join("report.html")).unwrap());
    assert!(expected.len() >= 8, "{expected:?}");
    // Default: figures/ in the results directory, one line per file written.
    let Some((code, stdout, stderr)) =
        png_command(tmp.path(), &["report".as_ref(), dir.as_os_str(), "--format=png".as_ref()])
    else {
        return;
    };
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");
    let written: Vec<&str> = stdout.lines().collect();
    let wanted: Vec<String> =
        expected.iter().map(|id| dir.join("figures").join(format!("{id}.png")).display().to_string()).collect();
    assert_eq!(written, wanted);
    for path in &written {
        let png = std::fs::read(path).unwrap();
        assert_eq!(png[..8], [0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1a, b'\n'], "{path}");
        assert!(png.len() > 10_000, "{path}: {} bytes", png.len());
    }
    // compare: ./rtlab-figures/; with requirements, the verdict first and its exit code.
    let other = saved_run(tmp.path(), "other", 43);
    let (code, stdout, stderr) = png_command(
        tmp.path(),
        &[
            "compare".as_ref(),
            dir.as_os_str(),
            other.as_os_str(),
            "-f".as_ref(),
            "png".as_ref(),
            "--require".as_ref(),
            "timer max < 100us".as_ref(),
        ],
    )
    .unwrap();
    assert_eq!(code, 1, "{stderr}");
    assert!(stdout.starts_with("Verdict: NOT MET"), "{stdout}");
    // The tail section's figures come after the metrics' own.
    assert!(stdout.trim_end().ends_with("rtlab-figures/fig-pwcet-qq-timer-latency.png"), "{stdout}");
    assert!(tmp.path().join("rtlab-figures").join(format!("{}.png", expected[0])).is_file());
    // --output: a new nested directory is created.
    let nested = tmp.path().join("a/b");
    let (code, _, stderr) = png_command(
        tmp.path(),
        &["report".as_ref(), dir.as_os_str(), "--format=png".as_ref(), "-o".as_ref(), nested.as_os_str()],
    )
    .unwrap();
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(std::fs::read_dir(&nested).unwrap().count(), expected.len());
}

#[test]
fn report_format_png_into_a_file_exits_2() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = saved_run(tmp.path(), "sim", 42);
    let file = dir.join("run.json");
    let Some((code, stdout, stderr)) = png_command(
        tmp.path(),
        &["report".as_ref(), dir.as_os_str(), "--format=png".as_ref(), "--output".as_ref(), file.as_os_str()],
    ) else {
        return;
    };
    assert_eq!(code, 2, "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("--output: cannot create the figure directory") && stderr.contains("run.json"), "{stderr}");
}
