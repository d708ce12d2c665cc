//! `rtlab check`: exit codes (0 schedulable, 1 not, 2 malformed set or bad flag), the terminal
//! and JSON outputs, and the platform figures taken from saved runs (the report crate's
//! fixtures, and a simulated run made here).

mod common;

use common::{measurements, repo_root as repo, rtlab, run_json};
use serde_json::Value;
use std::path::Path;

fn example(name: &str) -> String {
    repo().join("examples/tasksets").join(name).display().to_string()
}

fn fixture(name: &str) -> String {
    repo().join("crates/rtlab-report/tests/fixtures").join(name).display().to_string()
}

/// Runs `rtlab check ARGS`: (exit code, stdout, stderr).
fn check(args: &[&str]) -> (i32, String, String) {
    let output = rtlab().arg("check").args(args).output().unwrap();
    (
        output.status.code().unwrap(),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

fn check_json(args: &[&str]) -> (i32, Value) {
    let mut all = args.to_vec();
    all.extend(["--format", "json"]);
    let (code, stdout, stderr) = check(&all);
    assert!(stderr.is_empty(), "{stderr}");
    (code, serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{stdout}")))
}

/// Paths differ between machines: the snapshots hold them relative to the repository.
fn redact(text: &str) -> String {
    text.replace(&repo().display().to_string(), "[REPO]")
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn a_feasible_set_without_platform_exits_0_and_says_nothing_was_charged() {
    let (code, stdout, stderr) = check(&[&example("three-tasks.toml")]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stderr.is_empty());
    assert!(stdout.contains("Activation latency (added to every J): 0: neither --platform nor --jitter given"));
    assert!(stdout.contains("Task switch CS (charged twice per job): 0: neither --platform nor --switch given"));
    insta::assert_snapshot!("three_tasks_no_platform", redact(&stdout));
}

#[test]
fn an_overloaded_set_exits_1_and_names_the_tasks_that_miss() {
    let (code, stdout, _) = check(&[&example("overload.toml")]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("Response-time analysis: tasks miss their deadlines: filter, logger"), "{stdout}");
    assert!(stdout.contains("Verdict: NOT SCHEDULABLE"));
    assert!(stdout.contains("Activation latency: none tolerated"));
}

#[test]
fn given_overheads_and_json_structure() {
    // ctrl: R = J + C' = 100 + (5000 + 2·5) µs = 5110 µs; filter: w = 8010 + 5010 = 13020,
    // R = 13120 µs; logger: w = 10010 + 5010 + 8010 = 23030, R = 23130 µs.
    let (code, json) = check_json(&[&example("three-tasks.toml"), "--jitter", "100us", "--switch", "5us"]);
    assert_eq!(code, 0);
    assert_eq!(json["schema"], "rtlab.check/1");
    assert_eq!(json["schedulable"], true);
    assert_eq!(json["platform"], Value::Null);
    assert_eq!(json["activation_latency"]["ns"], 100_000);
    assert_eq!(json["activation_latency"]["from"], "flag");
    assert_eq!(json["activation_latency"]["flag"], "--jitter");
    assert_eq!(json["switch"]["ns"], 5_000);
    let analysis = &json["analysis"];
    assert_eq!(analysis["order"], "deadline-monotonic");
    assert_eq!(analysis["overheads"]["activation_latency_ns"], 100_000);
    let tasks = analysis["tasks"].as_array().unwrap();
    let rows: Vec<(&str, i64, u64, u64, i64)> = tasks
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap(),
                t["priority"].as_i64().unwrap(),
                t["response_ns"].as_u64().unwrap(),
                t["deadline_ns"].as_u64().unwrap(),
                t["slack_ns"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        vec![
            ("ctrl", 90, 5_110_000, 40_000_000, 34_890_000),
            ("filter", 89, 13_120_000, 80_000_000, 66_880_000),
            ("logger", 88, 23_130_000, 100_000_000, 76_870_000)
        ]
    );
    for t in tasks {
        assert_eq!(t["schedulable"], true);
        for key in ["wcet_ns", "period_ns", "blocking_ns", "release_jitter_ns", "charged_wcet_ns", "laxity_ns"] {
            assert!(t[key].is_number(), "{key} in {t}");
        }
        for key in ["utilization", "density"] {
            assert!(t[key].is_f64(), "{key} in {t}");
        }
    }
    // The tolerated latency is the boundary (rtlab-analysis tests it); here: ctrl's
    // D - C' = 40000 - 5010 µs binds first.
    assert_eq!(json["tolerated_activation_latency_ns"], 34_990_000);
    let margin = json["margin"].as_f64().unwrap();
    assert!((margin - 349.9).abs() < 1e-9, "{margin}");
    insta::assert_json_snapshot!("three_tasks_json_given_overheads", redact_json(json));
}

fn redact_json(mut json: Value) -> Value {
    if let Some(file) = json["taskset"]["file"].as_str() {
        json["taskset"]["file"] = Value::String(redact(file));
    }
    if let Some(run) = json["platform"]["run"].as_str() {
        json["platform"]["run"] = Value::String(redact(run));
    }
    json
}

#[test]
fn malformed_sets_exit_2_naming_the_task_and_field() {
    let tmp = tempfile::tempdir().unwrap();
    let cases = [
        (
            "negative.toml",
            "[[task]]\nname = \"ctrl\"\nC = \"-2ms\"\nT = \"10ms\"\n",
            "task \"ctrl\": C: \"-2ms\" is negative",
        ),
        (
            "c-over-d.toml",
            "[[task]]\nname = \"ctrl\"\nC = \"9ms\"\nT = \"10ms\"\nD = \"8ms\"\n",
            "task \"ctrl\": C: 9ms exceeds the deadline D = 8ms",
        ),
        ("no-period.toml", "[[task]]\nname = \"ctrl\"\nC = \"2ms\"\n", "task \"ctrl\": T: missing"),
        (
            "cycle.toml",
            "[[task]]\nname = \"a\"\nC = \"1ms\"\nT = \"10ms\"\nabove = [\"b\"]\n\
             [[task]]\nname = \"b\"\nC = \"1ms\"\nT = \"10ms\"\nabove = [\"a\"]\n",
            ": above: a cyclic priority spec",
        ),
        (
            "unknown.toml",
            "[[task]]\nname = \"ctrl\"\nC = \"1ms\"\nT = \"10ms\"\nwcet = \"1ms\"\n",
            "task \"ctrl\": wcet: unknown key",
        ),
        (
            "rt-app.json",
            "{ \"tasks\": { \"ctrl\": { \"run\": 1000, \"sleep\": 9000 } } }",
            "task \"ctrl\": sleep: an rt-app event outside rtlab's periodic model",
        ),
    ];
    for (name, text, expected) in cases {
        let path = write(tmp.path(), name, text);
        let (code, stdout, stderr) = check(&[&path]);
        assert_eq!(code, 2, "{name}: {stdout}{stderr}");
        assert!(stdout.is_empty(), "{name}: nothing on stdout: {stdout}");
        assert_eq!(stderr.lines().count(), 1, "{name}: one line: {stderr}");
        assert!(stderr.starts_with(&format!("rtlab: error: {path}: ")), "{stderr}");
        assert!(stderr.contains(expected), "{name}: {stderr:?} lacks {expected:?}");
    }
}

#[test]
fn bad_flags_exit_2_naming_the_flag() {
    let set = example("three-tasks.toml");
    let platform = fixture("simulated-2cpu.run.json");
    let cases: [(&[&str], &str); 6] = [
        (&["--jitter", "5"], "--jitter: "),
        (&["--switch", "fast"], "--switch: "),
        (&["--jitter-stat", "p99"], "--jitter-stat chooses the statistic of the --platform run"),
        (&["--platform", &platform, "--jitter-stat", "mean"], "--jitter-stat \"mean\""),
        (&["--platform", &platform, "--jitter-stat", "p100"], "--jitter-stat \"p100\""),
        (&["--platform", "/nonexistent/run.json"], "--platform /nonexistent/run.json"),
    ];
    for (flags, expected) in cases {
        let mut args = vec![set.as_str()];
        args.extend_from_slice(flags);
        let (code, stdout, stderr) = check(&args);
        assert_eq!(code, 2, "{flags:?}: {stdout}{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(expected), "{flags:?}: {stderr:?} lacks {expected:?}");
    }
    let (code, _, stderr) = check(&["/nonexistent.toml"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("/nonexistent.toml: cannot read the task set"), "{stderr}");
}

/// The largest sample of `metric` in each scenario: the oracle of `--jitter-stat max`.
fn max_per_scenario(run: &Value, metric: &str) -> Vec<(String, i64)> {
    let mut maxima: Vec<(String, i64)> = Vec::new();
    for m in measurements(run, metric) {
        let scenario = m["scenario"].as_str().unwrap().to_string();
        let max = m["summary"]["max"].as_i64().unwrap();
        match maxima.iter_mut().find(|(s, _)| *s == scenario) {
            Some((_, v)) => *v = (*v).max(max),
            None => maxima.push((scenario, max)),
        }
    }
    maxima
}

#[test]
fn platform_figures_come_from_the_worst_scenario_of_the_run() {
    // This fixture has no timer.latency: the jitter probe's wake-up latency stands in, and
    // its switch probe gives CS.
    let path = fixture("derived-probes.run.json");
    let run = common::read_json(Path::new(&path));
    let (code, json) = check_json(&[&example("three-tasks.toml"), "--platform", &path]);
    assert_eq!(code, 0);
    assert_eq!(json["platform"]["statistic"], "max");
    assert_eq!(json["platform"]["simulated"], run["simulated"]);
    for (figure, metric) in [("activation_latency", "jitter.latency"), ("switch", "switch.futex")] {
        let f = &json[figure];
        assert_eq!(f["from"], "platform");
        assert_eq!(f["metric"], metric);
        let (scenario, worst) = max_per_scenario(&run, metric).into_iter().max_by_key(|(_, v)| *v).unwrap();
        assert_eq!(f["scenario"], scenario.as_str(), "{figure}");
        assert_eq!(f["measured_ns"], worst, "{figure}");
        assert_eq!(f["ns"], worst.max(0), "{figure}");
    }
    assert_eq!(json["analysis"]["overheads"]["switch_ns"], json["switch"]["ns"]);

    let (_, stdout, _) = check(&[&example("three-tasks.toml"), "--platform", &path, "--jitter-stat", "p99.9"]);
    assert!(stdout.contains("(the run has no timer.latency: jitter.latency, the same periodic wake-up, stands in)"));
    assert!(stdout.contains("jitter.latency p99.9, all CPUs, worst scenario"), "{stdout}");
    insta::assert_snapshot!("three_tasks_derived_probes_p99_9", redact(&stdout));
}

#[test]
fn a_platform_run_without_switch_charges_no_switch_time_and_says_so() {
    let path = fixture("simulated-2cpu.run.json");
    let (code, json) = check_json(&[&example("three-tasks.toml"), "--platform", &path, "--jitter-stat", "p99.99"]);
    assert_eq!(code, 0);
    assert_eq!(json["activation_latency"]["metric"], "timer.latency");
    assert_eq!(json["activation_latency"]["statistic"], "p99.99");
    assert_eq!(json["switch"]["ns"], 0);
    assert_eq!(json["switch"]["from"], "none");
    // --switch overrides, and the platform still gives the activation latency.
    let (_, json) = check_json(&[&example("three-tasks.toml"), "--platform", &path, "--switch", "7us"]);
    assert_eq!(json["switch"]["ns"], 7_000);
    assert_eq!(json["activation_latency"]["from"], "platform");
    let (_, stdout, _) = check(&[&example("three-tasks.toml"), "--platform", &path]);
    assert!(stdout.contains("Task switch CS (charged twice per job): 0: the platform run has no switch.* measurement"));
    assert!(stdout.contains("! the platform run is simulated"));
    let tolerance = stdout.lines().find(|l| l.starts_with("Activation latency: tolerates")).unwrap();
    assert!(tolerance.contains("; measured max ") && tolerance.contains(": margin "), "{tolerance}");
}

#[test]
fn a_run_made_here_is_a_platform() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("platform");
    let output =
        rtlab().args(["run", "--simulate", "1", "-D", "2s", "--load", "idle", "-q", "-o"]).arg(&dir).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let run = run_json(&dir);
    let worst = max_per_scenario(&run, "timer.latency").into_iter().map(|(_, v)| v).max().unwrap();

    let dir_text = dir.display().to_string();
    let (code, json) = check_json(&[&example("three-tasks.toml"), "--platform", &dir_text]);
    assert_eq!(code, 0);
    assert_eq!(json["activation_latency"]["measured_ns"], worst);
    assert_eq!(json["platform"]["run"], dir_text.as_str());
    // A latency the set cannot take: the burns-wellings set C has no slack at all.
    let (code, json) = check_json(&[&example("burns-wellings-set-c.toml"), "--platform", &dir_text]);
    assert_eq!(code, if worst > 0 { 1 } else { 0 });
    assert_eq!(json["tolerated_activation_latency_ns"], 0);
}

#[test]
fn rt_app_sets_are_recognised_by_content() {
    let tmp = tempfile::tempdir().unwrap();
    // No .json extension: the content decides.
    let copy = write(tmp.path(), "workload.conf", &std::fs::read_to_string(example("rt-app.json")).unwrap());
    let (code, json) = check_json(&[&copy]);
    assert_eq!(code, 0);
    assert_eq!(json["taskset"]["format"], "rt-app");
    assert_eq!(json["analysis"]["order"], "given");
    let names: Vec<&str> =
        json["analysis"]["tasks"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["audio", "ctrl", "video"]);
}

/// pWCET of the platform's activation latency, from the EVT analysis of its run: a light tail
/// (the report crate's fixture exponential-300s, tests/synthetic_tails.rs) gives a number,
/// charged as any figure.
#[test]
fn pwcet_statistic_of_the_platform() {
    let light = fixture("exponential-300s.run.json");
    let (code, json) =
        check_json(&[&example("three-tasks.toml"), "--platform", &light, "--jitter-stat", "pwcet(1e-9)"]);
    assert_eq!(code, 0, "{json:#}");
    assert_eq!(json["verdict"], "schedulable");
    assert_eq!(json["undecided"], Value::Null);
    assert_eq!(json["activation_latency"]["from"], "platform");
    assert_eq!(json["activation_latency"]["statistic"], "pwcet(1e-9)");
    // 5 µs + 20 µs × ln(1e9) = 419.5 µs is the true pWCET(1e-9) of the fixture's tail.
    let ns = json["activation_latency"]["ns"].as_u64().unwrap();
    assert!((ns as f64 / 419_465.0 - 1.0).abs() < 0.2, "{ns}");
}

/// A platform whose pWCET is not defensible (the fixture trending-300s: a tail that grows
/// over the run): the figure is not charged, and the verdict is UNDECIDED with the reasons,
/// exit 1; a set that misses a deadline even without the figure is NOT SCHEDULABLE.
#[test]
fn a_pwcet_that_is_not_defensible_leaves_the_check_undecided() {
    let trending = fixture("trending-300s.run.json");
    let three = example("three-tasks.toml");
    let args = [three.as_str(), "--platform", &trending, "--jitter-stat", "pwcet(1e-9)"];
    let (code, stdout, stderr) = check(&args);
    assert_eq!(code, 1, "{stdout}");
    assert!(stderr.is_empty(), "{stderr}");
    let refused = "timer.latency pwcet(1e-9) under \"idle\": not defensible from this run — ";
    assert!(stdout.contains(&format!("Activation latency (added to every J): not charged: {refused}")), "{stdout}");
    assert!(stdout.contains("Activation latency: tolerates 35000.0 µs; its pwcet(1e-9) is not defensible: no margin"));
    let verdict = stdout.lines().last().unwrap();
    assert!(verdict.starts_with(&format!("Verdict: UNDECIDED: {refused}")), "{stdout}");
    assert!(verdict.contains("not stationary"), "{verdict}");

    let (code, json) = check_json(&args);
    assert_eq!(code, 1);
    assert_eq!(json["verdict"], "undecided");
    assert_eq!(json["schedulable"], false);
    assert_eq!(json["analysis"]["schedulable"], true, "schedulable without the figure");
    let figure = &json["activation_latency"];
    assert_eq!(
        (&figure["from"], &figure["ns"], &figure["statistic"]),
        (&Value::from("undecided"), &Value::from(0), &Value::from("pwcet(1e-9)"))
    );
    let first = &figure["refused"][0];
    assert_eq!((&first["metric"], &first["scenario"]), (&Value::from("timer.latency"), &Value::from("idle")));
    let refusal = first["refusal"].as_str().unwrap();
    assert!(refusal.starts_with("not defensible from this run — "), "{refusal}");
    assert!(json["undecided"].as_str().unwrap().ends_with(refusal), "{json:#}");
    assert_eq!(json["tolerated_activation_latency_ns"], 35_000_000);
    assert_eq!(json["margin"], Value::Null);

    // Deadlines missed even without the activation latency are missed with it.
    let overload = example("overload.toml");
    let (code, json) = check_json(&[&overload, "--platform", &trending, "--jitter-stat", "pwcet(1e-9)"]);
    assert_eq!(code, 1);
    assert_eq!(json["verdict"], "not-schedulable");
    assert_eq!(json["undecided"], Value::Null);
    assert_eq!(json["activation_latency"]["from"], "undecided");

    // A bad statistic is still a usage error, in one line.
    let (code, stdout, stderr) = check(&[&three, "--platform", &trending, "--jitter-stat", "pwcet(2)"]);
    assert_eq!(code, 2, "{stdout}");
    assert!(stderr.starts_with("rtlab: error: --jitter-stat"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

/// A suite with a timer condition and a jitter condition (what --simulate drives). The
/// jitter condition has 20 times the samples: on the simulated clock (seed 3) its wake-up
/// latency is the worse.
const PLATFORM_SUITE: &str = r#"
[suite]
name = "mini-platform"
title = "A timer and a jitter condition"

[experiment]
cpus = "0,1"

[[condition]]
name = "timer-idle"
title = "Timer, idle"
probe = "timer"
interval = "1ms"
samples = 300

[[condition]]
name = "jitter-idle"
title = "Jitter, idle"
probe = "jitter"
periods = "300us,1ms"
samples = 3000

[[table]]
id = "t"
title = "T"
columns = [ { title = "max", condition = "timer-idle", metric = "timer", statistic = "max" } ]
"#;

/// Runs PLATFORM_SUITE on the simulated clock into `dir/suite`, then adds a third condition,
/// "switch-minimal", whose run is the report crate's derived-probes fixture (switch.futex,
/// switch.sem and jitter.latency, among others), as a suite that measured task switches
/// would have it.
fn simulated_suite(dir: &Path, seed: &str) -> std::path::PathBuf {
    let file = dir.join("mini-platform.toml");
    std::fs::write(&file, PLATFORM_SUITE).unwrap();
    let out = dir.join("suite");
    let output = rtlab()
        .arg("suite")
        .arg(&file)
        .args(["--simulate", seed, "--label", "sim", "-q", "--output"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    std::fs::create_dir(out.join("switch-minimal")).unwrap();
    std::fs::copy(fixture("derived-probes.run.json"), out.join("switch-minimal/run.json")).unwrap();
    let mut suite = common::read_json(&out.join("suite.json"));
    suite["conditions"].as_array_mut().unwrap().push(serde_json::json!({
        "name": "switch-minimal",
        "title": "Task switch, minimum load",
        "directory": "switch-minimal",
        "run_label": "sim-switch-minimal",
        "status": "done",
        "plan": "switch and more (a fixture)",
    }));
    std::fs::write(out.join("suite.json"), serde_json::to_string_pretty(&suite).unwrap()).unwrap();
    out
}

/// One run's value of `--jitter-stat max` for a figure, the oracle: the first of `metrics`
/// the run measured, its worst scenario's largest sample (scenario, metric, value).
fn run_max(run: &Value, metrics: &[&str]) -> Option<(String, String, i64)> {
    metrics.iter().find_map(|metric| {
        max_per_scenario(run, metric)
            .into_iter()
            .reduce(|a, b| if b.1 > a.1 { b } else { a })
            .map(|(scenario, value)| (scenario, metric.to_string(), value))
    })
}

/// The worst of several runs (the first of equal ones): (index, scenario, metric, value).
fn worst_of(runs: &[&Value], metrics: &[&str]) -> (usize, String, String, i64) {
    let mut worst: Option<(usize, String, String, i64)> = None;
    for (i, run) in runs.iter().enumerate() {
        if let Some((scenario, metric, value)) = run_max(run, metrics) {
            if worst.as_ref().is_none_or(|w| value > w.3) {
                worst = Some((i, scenario, metric, value));
            }
        }
    }
    worst.expect("some run measured the figure")
}

const WAKE_UP: [&str; 3] = ["timer.latency", "jitter.latency", "timerlat.thread"];

#[test]
fn a_suite_directory_is_a_platform_and_each_figure_names_its_condition() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = simulated_suite(tmp.path(), "3");
    let conditions = ["timer-idle", "jitter-idle", "switch-minimal"];
    let runs: Vec<Value> = conditions.iter().map(|c| run_json(&suite.join(c))).collect();
    let run_refs: Vec<&Value> = runs.iter().collect();
    let suite_text = suite.display().to_string();

    let (code, json) = check_json(&[&example("three-tasks.toml"), "--platform", &suite_text]);
    assert_eq!(code, 0);
    // The activation latency: the worst of every condition's wake-up latency (timer.latency
    // in timer-idle, jitter.latency in jitter-idle and in the switch fixture).
    let (i, scenario, metric, value) = worst_of(&run_refs, &WAKE_UP);
    let a = &json["activation_latency"];
    assert_eq!(a["from"], "platform");
    assert_eq!(a["condition"], conditions[i]);
    assert_eq!(a["suite"], "mini-platform");
    assert_eq!(a["run"], suite.join(conditions[i]).display().to_string().as_str());
    assert_eq!(a["label"], runs[i]["label"]);
    assert_eq!(a["metric"], metric.as_str());
    assert_eq!(a["scenario"], scenario.as_str());
    assert_eq!(a["measured_ns"], value);
    assert_eq!(a["ns"], value.max(0));
    let candidates = a["candidates"].as_array().unwrap();
    assert_eq!(candidates.len(), 3, "{a}");
    for (c, (condition, run)) in candidates.iter().zip(conditions.iter().zip(&runs)) {
        let (_, metric, value) = run_max(run, &WAKE_UP).unwrap();
        assert_eq!(c["condition"], *condition);
        assert_eq!((c["metric"].as_str().unwrap(), c["measured_ns"].as_i64().unwrap()), (metric.as_str(), value));
    }
    assert_eq!(candidates[0]["metric"], "timer.latency");
    assert_eq!(candidates[1]["metric"], "jitter.latency", "the jitter probe's wake-up latency, not its period jitter");
    // Each run's own preferred metric competes: timer.latency of one condition does not hide
    // the worse jitter.latency of another.
    assert_eq!((conditions[i], metric.as_str()), ("jitter-idle", "jitter.latency"), "{a}");
    // CS: only the switch condition measured task switches.
    let (_, scenario, _, value) = worst_of(&[&runs[2]], &["switch.futex"]);
    let cs = &json["switch"];
    assert_eq!((cs["condition"].as_str(), cs["metric"].as_str()), (Some("switch-minimal"), Some("switch.futex")));
    assert_eq!((cs["scenario"].as_str().unwrap(), cs["measured_ns"].as_i64().unwrap()), (scenario.as_str(), value));
    assert_eq!(cs["candidates"].as_array().unwrap().len(), 1);
    // platform: the suite given, and each condition's run.
    let p = &json["platform"];
    assert_eq!(p["run"], suite_text.as_str());
    assert_eq!(p["label"], "sim");
    assert_eq!(p["inputs"][0]["kind"], "suite");
    assert_eq!(p["inputs"][0]["suite"], "mini-platform");
    let sources: Vec<&str> =
        p["sources"].as_array().unwrap().iter().map(|s| s["condition"].as_str().unwrap()).collect();
    assert_eq!(sources, conditions);

    // The terminal names the condition, its directory and label, and the other candidates.
    let (code, stdout, stderr) = check(&[&example("three-tasks.toml"), "--platform", &suite_text]);
    assert_eq!(code, 0, "{stderr}");
    let a_line = stdout.lines().find(|l| l.starts_with("Activation latency (added")).unwrap();
    let named = format!(
        "{metric} max, all CPUs, condition {:?} of suite mini-platform ({}, label {}), worst scenario",
        conditions[i],
        suite.join(conditions[i]).display(),
        runs[i]["label"]
    );
    assert!(a_line.contains(&named), "{a_line:?} lacks {named:?}");
    assert!(stdout.contains("  (the worst of 3 runs: condition \"timer-idle\" timer.latency "), "{stdout}");
    assert!(
        stdout.contains(
            "  (condition \"jitter-idle\" has no timer.latency: jitter.latency, the same periodic wake-up, stands in)"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("Task switch CS (charged twice per job): "), "{stdout}");
    assert!(
        stdout.contains("switch.futex max, all CPUs, condition \"switch-minimal\" of suite mini-platform"),
        "{stdout}"
    );
    assert!(stdout.contains(&format!(
        "Platform: suite mini-platform (label \"sim\") in {suite_text}: the runs of 3 conditions \
         (timer-idle, jitter-idle, switch-minimal)"
    )));
    // suite.json itself names the suite as well.
    let (_, by_file) =
        check_json(&[&example("three-tasks.toml"), "--platform", &suite.join("suite.json").display().to_string()]);
    assert_eq!(by_file["activation_latency"]["measured_ns"], json["activation_latency"]["measured_ns"]);
    assert_eq!(by_file["activation_latency"]["condition"], json["activation_latency"]["condition"]);
}

#[test]
fn several_platforms_charge_the_worst_of_all_their_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let mut dirs = Vec::new();
    for seed in ["1", "2"] {
        let dir = tmp.path().join(format!("run-{seed}"));
        let output = rtlab()
            .args(["run", "--simulate", seed, "-D", "2s", "--load", "idle", "-q", "-o"])
            .arg(&dir)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
        dirs.push(dir);
    }
    let runs: Vec<Value> = dirs.iter().map(|d| run_json(d)).collect();
    let texts: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    let (worst, scenario, _, value) = worst_of(&runs.iter().collect::<Vec<_>>(), &WAKE_UP);
    // Either order: the worse run is charged, and named.
    for order in [[0, 1], [1, 0]] {
        let (code, json) =
            check_json(&[&example("three-tasks.toml"), "--platform", &texts[order[0]], "--platform", &texts[order[1]]]);
        assert_eq!(code, 0);
        let a = &json["activation_latency"];
        assert_eq!(a["measured_ns"], value);
        assert_eq!(a["run"], texts[worst].as_str());
        assert_eq!(a["condition"], Value::Null);
        assert_eq!(a["scenario"], scenario.as_str());
        assert_eq!(a["candidates"].as_array().unwrap().len(), 2);
        assert_eq!(json["platform"]["run"], Value::Null, "several inputs: no single run");
        assert_eq!(json["platform"]["inputs"].as_array().unwrap().len(), 2);
        assert_eq!(json["switch"]["from"], "none");
    }
    let (_, stdout, _) = check(&[&example("three-tasks.toml"), "--platform", &texts[0], "--platform", &texts[1]]);
    assert!(stdout.contains("Platform: 2 inputs, each figure the worst of their runs"), "{stdout}");
    assert!(stdout.contains(&format!("timer.latency max, all CPUs, run {} (label ", texts[worst])), "{stdout}");
    assert!(stdout.contains("0: none of the 2 platform runs has a switch.* measurement"), "{stdout}");

    // A suite and runs together: every run of both is a candidate.
    let suite = simulated_suite(tmp.path(), "3");
    let suite_text = suite.display().to_string();
    let mut all: Vec<Value> = runs.clone();
    all.extend(["timer-idle", "jitter-idle", "switch-minimal"].iter().map(|c| run_json(&suite.join(c))));
    let (i, _, metric, value) = worst_of(&all.iter().collect::<Vec<_>>(), &WAKE_UP);
    let (code, json) = check_json(&[
        &example("three-tasks.toml"),
        "--platform",
        &texts[0],
        "--platform",
        &suite_text,
        "--platform",
        &texts[1],
    ]);
    assert_eq!(code, 0);
    let a = &json["activation_latency"];
    assert_eq!((a["measured_ns"].as_i64(), a["metric"].as_str()), (Some(value), Some(metric.as_str())));
    assert_eq!(a["candidates"].as_array().unwrap().len(), 5);
    assert_eq!(a["condition"].is_null(), i < 2, "{a}");
    assert_eq!(json["switch"]["condition"], "switch-minimal");
    let kinds: Vec<&str> =
        json["platform"]["inputs"].as_array().unwrap().iter().map(|i| i["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["run", "suite", "run"]);
}

#[test]
fn platforms_that_are_not_one_exit_2_in_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let set = example("three-tasks.toml");
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let damaged = tmp.path().join("damaged");
    std::fs::create_dir(&damaged).unwrap();
    std::fs::write(damaged.join("suite.json"), "{\"schema\": \"rtlab.suite/1\",").unwrap();

    // A suite whose conditions measured no wake-up latency: their runs keep only the period
    // jitter (timer.jitter, jitter.jitter), which is no activation latency.
    let suite = simulated_suite(tmp.path(), "3");
    for condition in ["timer-idle", "jitter-idle", "switch-minimal"] {
        let path = suite.join(condition).join("run.json");
        let mut run = common::read_json(&path);
        run["measurements"].as_array_mut().unwrap().retain(|m| !WAKE_UP.contains(&m["metric"].as_str().unwrap()));
        std::fs::write(&path, serde_json::to_string(&run).unwrap()).unwrap();
    }
    let suite_text = suite.display().to_string();
    // ... which still gives CS when the activation latency is given by hand.
    let (code, json) = check_json(&[&set, "--platform", &suite_text, "--jitter", "10us"]);
    assert_eq!(code, 0);
    assert_eq!(json["switch"]["condition"], "switch-minimal");

    // A suite without any run.
    let no_runs = tmp.path().join("no-runs");
    std::fs::create_dir(&no_runs).unwrap();
    std::fs::copy(suite.join("suite.json"), no_runs.join("suite.json")).unwrap();

    let (e, d, n) = (empty.display().to_string(), damaged.display().to_string(), no_runs.display().to_string());
    let cases: [(&[&str], String); 5] = [
        (
            &["--platform", &e],
            format!("--platform {e}: neither a results directory (no run.json) nor a suite directory (no suite.json)"),
        ),
        (&["--platform", &d], format!("--platform {d}/suite.json: not a valid rtlab result: not JSON")),
        (
            &["--platform", &suite_text],
            format!(
                "--platform {suite_text}: no condition of suite mini-platform measured a periodic wake-up latency \
                 (timer.latency, jitter.latency, timerlat.thread)"
            ),
        ),
        (
            &["--platform", &suite_text, "--platform", &suite.join("switch-minimal").display().to_string()],
            "--platform: none of the 4 runs of the 2 inputs measured a periodic wake-up latency".to_string(),
        ),
        (&["--platform", &n], format!("--platform {n}: no condition of suite mini-platform has a run")),
    ];
    for (flags, expected) in cases {
        let mut args = vec![set.as_str()];
        args.extend_from_slice(flags);
        let (code, stdout, stderr) = check(&args);
        assert_eq!(code, 2, "{flags:?}: {stdout}{stderr}");
        assert!(stdout.is_empty(), "{stdout}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with(&format!("rtlab: error: {expected}")), "{flags:?}: {stderr:?} lacks {expected:?}");
    }
}
