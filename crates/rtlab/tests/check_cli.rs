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

/// pWCET of the platform's activation latency, from the EVT analysis of its run.
#[test]
fn pwcet_statistic_of_the_platform() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("platform");
    let output =
        rtlab().args(["run", "--simulate", "3", "-D", "60s", "--load", "idle", "-q", "-o"]).arg(&dir).output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    let dir_text = dir.display().to_string();
    let (code, json) =
        check_json(&[&example("three-tasks.toml"), "--platform", &dir_text, "--jitter-stat", "pwcet(1e-9)"]);
    assert!(code == 0 || code == 1);
    assert_eq!(json["activation_latency"]["statistic"], "pwcet(1e-9)");
    assert!(json["activation_latency"]["ns"].as_u64().unwrap() > 0);
}
