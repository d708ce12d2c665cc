//! `rtlab report --format lava` through LAVA's real `lava-test-case` and `lava-test-set`
//! (Debian's lava-dispatcher, extracted by ./run-tests into ~/.cache/rtlab/lava, never
//! installed), deployed as LAVA deploys them (`#!/bin/sh` and a blank line before the
//! script) with LAVA_RESULT_DIR in a temporary directory: a simulated run, a run with a
//! failed and an undecided requirement, a --quick suite on the simulated clock, and the test
//! definition contrib/lava/rtlab.yaml run the way LAVA composes its run.sh.
//!
//! What each output must hold: every signal LAVA's parser accepts (`<LAVA_SIGNAL_(\S+)
//! ([^>]+)>`, KEY=VALUE fields), IDs of `[-_a-zA-Z0-9.]` and at most 100 characters, unique,
//! every measurement a float with its units, results pass/fail/skip/unknown as the run says,
//! a reason line before every fail and unknown, test sets balanced and not nested, and the
//! signal lines rtlab prints without the scripts byte for byte those the scripts print.
//! Without the scripts (or python3-yaml, for the definition) the tests say so and pass,
//! except under CI=true, where they fail.

mod common;

use common::{redact, repo_root, rtlab, rtlab_path, run_json};
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

/// Where ./run-tests extracts lava-dispatcher (RTLAB_LAVA_DIR overrides it).
fn lava_root() -> PathBuf {
    if let Some(dir) = std::env::var_os("RTLAB_LAVA_DIR") {
        return dir.into();
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache"));
    cache.join("rtlab/lava")
}

/// LAVA's lava_test_shell directory, or None (a failure under CI=true).
fn lava_test_shell() -> Option<PathBuf> {
    let dir = lava_root().join("usr/lib/python3/dist-packages/lava_dispatcher/lava_test_shell");
    if dir.join("lava-test-case").is_file() && dir.join("lava-test-set").is_file() {
        return Some(dir);
    }
    let why = format!(
        "LAVA's lava-test-case is not in {} (./run-tests extracts Debian's lava-dispatcher there when run as root)",
        dir.display()
    );
    assert_ne!(std::env::var("CI").as_deref(), Ok("true"), "{why}, and CI=true: this test must run in CI");
    eprintln!("skipped: {why}");
    None
}

/// A bin directory holding LAVA's scripts as its overlay writes them onto the board.
fn deploy_scripts(shell_dir: &Path, into: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let bin = into.join("lava-bin");
    std::fs::create_dir_all(&bin).unwrap();
    for name in ["lava-test-case", "lava-test-set", "lava-common-functions"] {
        let text = std::fs::read_to_string(shell_dir.join(name)).unwrap();
        let path = bin.join(name);
        // lava_dispatcher/actions/deploy/overlay.py: "#!%s\n\n" % lava_test_sh_cmd, then the file.
        std::fs::write(&path, format!("#!/bin/sh\n\n{text}")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    bin
}

fn path_with(bin: &Path) -> std::ffi::OsString {
    let mut dirs = vec![bin.to_path_buf()];
    dirs.extend(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()));
    std::env::join_paths(dirs).unwrap()
}

/// `rtlab report ARGS --format lava` with the scripts on PATH, and without: (stdout with,
/// stdout without, exit code, LAVA_RESULT_DIR).
fn report_both(tmp: &Path, bin: &Path, results: &[&Path], extra: &[&str]) -> (String, String, i32, PathBuf) {
    let result_dir = tmp.join(format!("lava-results-{}", results.len() + extra.len()));
    std::fs::create_dir_all(&result_dir).unwrap();
    let with = rtlab()
        .arg("report")
        .args(results)
        .args(["--format", "lava"])
        .args(extra)
        .env("PATH", path_with(bin))
        .env("LAVA_RESULT_DIR", &result_dir)
        .env_remove("KMSG")
        .output()
        .unwrap();
    let without = rtlab().arg("report").args(results).args(["--format", "lava"]).args(extra).output().unwrap();
    assert_eq!(with.status.code(), without.status.code());
    assert!(with.stderr.is_empty(), "{}", String::from_utf8_lossy(&with.stderr));
    (
        String::from_utf8(with.stdout).unwrap(),
        String::from_utf8(without.stdout).unwrap(),
        with.status.code().unwrap(),
        result_dir,
    )
}

/// One test case as LAVA's dispatcher reads its signal.
#[derive(Debug, Clone)]
struct Case {
    id: String,
    result: String,
    measurement: Option<f64>,
    units: Option<String>,
    set: Option<String>,
    /// The text line before the signal.
    reason: Option<String>,
}

/// Parses `text` as lava_dispatcher does (actions/test/shell.py: the pattern
/// `<LAVA_SIGNAL_(\S+) ([^>]+)>`, `handle_testcase`, connection.py's SignalMatch) and checks
/// every rule; returns the test cases in order.
fn parse_signals(text: &str) -> Vec<Case> {
    let id_ok = |id: &str| {
        !id.is_empty()
            && id.len() <= 100
            && id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    let mut cases: Vec<Case> = Vec::new();
    let mut set: Option<String> = None;
    let mut previous: Option<&str> = None;
    let mut ids = HashSet::new();
    let mut sets = HashSet::new();
    for line in text.lines() {
        let Some(signal) = line.strip_prefix("<LAVA_SIGNAL_") else {
            assert!(!line.contains("<LAVA_SIGNAL"), "a signal inside a text line: {line}");
            previous = Some(line);
            continue;
        };
        let body = signal.strip_suffix('>').unwrap_or_else(|| panic!("unterminated signal: {line}"));
        assert!(!body.contains('>'), "'>' ends LAVA's match early: {line}");
        let (name, params) = body.split_once(' ').unwrap_or_else(|| panic!("a signal without parameters: {line}"));
        let params: Vec<&str> = params.split_whitespace().collect();
        match name {
            "TESTSET" => match params[..] {
                ["START", name] => {
                    assert!(set.is_none(), "test set {name} starts inside {set:?}");
                    assert!(id_ok(name), "test set name {name:?}");
                    assert!(sets.insert(name.to_string()), "test set {name} twice");
                    set = Some(name.to_string());
                }
                ["STOP"] => assert!(set.take().is_some(), "a test set stops that did not start"),
                _ => panic!("bad TESTSET signal: {line}"),
            },
            "TESTCASE" => {
                let mut fields = BTreeMap::new();
                for p in params {
                    let parts: Vec<&str> = p.split('=').collect();
                    assert_eq!(parts.len(), 2, "malformed parameter {p:?} (handle_testcase): {line}");
                    fields.insert(parts[0].to_lowercase(), parts[1].to_string());
                }
                let id = fields.remove("test_case_id").expect("TEST_CASE_ID");
                assert!(id_ok(&id), "test case ID {id:?} uses characters LAVA does not allow");
                assert!(ids.insert(id.clone()), "test case {id} twice");
                let result = fields.remove("result").expect("RESULT");
                assert!(["pass", "fail", "skip", "unknown"].contains(&result.as_str()), "{line}");
                let measurement = fields.remove("measurement").map(|m| {
                    let v: f64 = m.parse().unwrap_or_else(|_| panic!("measurement {m:?} is not a float: {line}"));
                    assert!(v.is_finite(), "{line}");
                    v
                });
                let units = fields.remove("units");
                assert_eq!(measurement.is_some(), units.is_some(), "a measurement needs its units: {line}");
                if let Some(u) = &units {
                    assert_eq!(u, "us");
                }
                assert!(fields.is_empty(), "unexpected fields {fields:?}");
                let reason = previous.filter(|p| p.starts_with(&format!("rtlab: {id}: {result}: "))).map(String::from);
                if result != "pass" {
                    assert!(reason.is_some(), "no reason line before {result} {id}");
                }
                cases.push(Case { id, result, measurement, units, set: set.clone(), reason });
            }
            other => panic!("rtlab emits no {other} signal: {line}"),
        }
        previous = None;
    }
    assert!(set.is_none(), "test set {set:?} never stops");
    cases
}

/// What lava-test-case wrote under LAVA_RESULT_DIR agrees with the signals.
fn check_result_files(result_dir: &Path, cases: &[Case]) {
    for c in cases {
        let dir = result_dir.join("results").join(&c.id);
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok().map(|s| s.trim_end().to_string());
        assert_eq!(read("result").as_deref(), Some(c.result.as_str()), "{}", c.id);
        assert_eq!(read("measurement").map(|m| m.parse::<f64>().unwrap()), c.measurement, "{}", c.id);
        assert_eq!(read("units"), c.units, "{}", c.id);
    }
}

fn case<'a>(cases: &'a [Case], id: &str) -> &'a Case {
    cases.iter().find(|c| c.id == id).unwrap_or_else(|| panic!("no test case {id}"))
}

/// A simulated run into `dir`; returns its exit code.
fn simulated_run(dir: &Path, extra: &[&str]) -> i32 {
    let out = rtlab()
        .args(["run", "--simulate", "7", "--samples", "3000", "--load", "idle,cpu", "-q", "-o"])
        .arg(dir)
        .args(extra)
        .output()
        .unwrap();
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", String::from_utf8_lossy(&out.stderr));
    out.status.code().unwrap()
}

#[test]
fn a_run_is_one_test_set_per_scenario_with_every_statistic() {
    let Some(shell) = lava_test_shell() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let bin = deploy_scripts(&shell, tmp.path());
    let run_dir = tmp.path().join("run");
    assert_eq!(simulated_run(&run_dir, &["--require", "timer p50 < 1s"]), 0);
    let (with, without, code, result_dir) = report_both(tmp.path(), &bin, &[&run_dir], &[]);
    assert_eq!(code, 0);
    assert_eq!(with, without, "rtlab's own signal lines are not what LAVA's scripts print");
    let cases = parse_signals(&with);
    check_result_files(&result_dir, &cases);

    // Every statistic of every thread, in its scenario's test set, equal to run.json's.
    let run = run_json(&run_dir);
    let mut expected = 0;
    for m in run["measurements"].as_array().unwrap() {
        let scenario = m["scenario"].as_str().unwrap();
        let (metric, cpu) = (m["metric"].as_str().unwrap(), m["cpu"].as_u64().unwrap());
        for statistic in ["p50", "p99", "p99.9", "p99.99", "max"] {
            let id = format!("{}.{metric}.cpu{cpu}.{statistic}", scenario.replace([':', '=', '+'], "_"));
            let c = case(&cases, &id);
            let ns = m["summary"][statistic].as_i64().unwrap();
            assert_eq!(c.result, "pass");
            assert_eq!(c.measurement, Some(ns as f64 / 1000.0), "{id}");
            assert_eq!(c.set.as_deref(), Some(id.split('.').next().unwrap()));
            expected += 1;
        }
    }
    assert!(expected >= 2 * 2 * 2 * 5, "two scenarios, two metrics, at least two CPUs");
    // The met requirement on each scenario, with the measured p50.
    for scenario in ["idle", "cpu"] {
        let c = case(&cases, &format!("{scenario}.require.timer.latency.p50.lt-1000000us"));
        assert_eq!((c.result.as_str(), c.set.as_deref()), ("pass", Some(scenario)));
        assert!(c.measurement.is_some());
    }
    // pWCET: a value in µs, or unknown with why it cannot be quoted.
    let pwcet: Vec<&Case> = cases.iter().filter(|c| c.id.contains(".all.pwcet-")).collect();
    assert_eq!(pwcet.len(), 2 * 3, "two scenarios, three probabilities: {pwcet:?}");
    for c in pwcet {
        match c.result.as_str() {
            "pass" => assert!(c.measurement.unwrap() > 0.0),
            "unknown" => assert!(c.measurement.is_none() && c.reason.as_ref().unwrap().contains("pWCET")),
            other => panic!("pWCET {other}"),
        }
    }
    // "Long enough?" per scenario, as run.json's decision says.
    for scenario in run["scenarios"].as_array().unwrap() {
        let name = scenario["name"].as_str().unwrap();
        let decision = &scenario["convergence"];
        let (metric, statistic) = (decision["metric"].as_str().unwrap(), decision["statistic"].as_str().unwrap());
        let c = case(&cases, &format!("{name}.long-enough.{metric}.{statistic}"));
        let converged = decision["converged"].as_bool().unwrap();
        assert_eq!(c.result, if converged { "pass" } else { "unknown" }, "{c:?}");
        assert_eq!(c.set.as_deref(), Some(name));
        let value_us = decision["value_ns"].as_f64().map(|ns| (ns / 1000.0 * 1000.0).round() / 1000.0);
        assert_eq!(c.measurement, value_us, "{c:?}");
    }
    // The caveat of a simulated run comes first, as text.
    assert!(with.lines().next().unwrap().starts_with("rtlab: run "));
    assert!(with.contains("caveat: not real-time results"));
}

#[test]
fn a_failed_requirement_fails_and_an_undecided_one_is_unknown() {
    let Some(shell) = lava_test_shell() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let bin = deploy_scripts(&shell, tmp.path());
    let run_dir = tmp.path().join("run");
    assert_eq!(simulated_run(&run_dir, &["--require", "timer max < 1us"]), 1);
    // Judged again at report time (instead of the saved verdict), with a pWCET that 3,000
    // samples cannot support and a metric the run did not measure.
    let extra =
        ["--require", "timer max < 1us", "--require", "timer pwcet(1e-9) < 1s", "--require", "switch max < 1ms"];
    let (with, without, code, result_dir) = report_both(tmp.path(), &bin, &[&run_dir], &extra);
    assert_eq!(code, 1, "not met: exit 1, as every report format");
    assert_eq!(with, without);
    let cases = parse_signals(&with);
    check_result_files(&result_dir, &cases);
    let run = run_json(&run_dir);
    let max_of = |scenario: &str| {
        run["measurements"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["scenario"] == scenario && m["metric"] == "timer.latency")
            .map(|m| m["summary"]["max"].as_i64().unwrap())
            .max()
            .unwrap()
    };
    for scenario in ["idle", "cpu"] {
        let failed = case(&cases, &format!("{scenario}.require.timer.latency.max.lt-1us"));
        assert_eq!(failed.result, "fail");
        assert_eq!(failed.measurement, Some(max_of(scenario) as f64 / 1000.0));
        assert!(failed.reason.as_ref().unwrap().contains("required < 1.000 us"), "{failed:?}");
        let undecided = case(&cases, &format!("{scenario}.require.timer.latency.pwcet-1e-9.lt-1000000us"));
        assert_eq!((undecided.result.as_str(), undecided.measurement), ("unknown", None));
        assert!(undecided.reason.as_ref().unwrap().contains("undecided"), "{undecided:?}");
        let unmeasured = case(&cases, &format!("{scenario}.require.switch.futex.max.lt-1000us"));
        assert_eq!((unmeasured.result.as_str(), unmeasured.measurement), ("unknown", None));
    }
    // Only the requirements are not pass.
    assert!(cases
        .iter()
        .filter(|c| c.result != "pass")
        .all(|c| c.id.contains(".require.") || c.id.contains(".pwcet-") || c.id.contains(".long-enough.")));
}

#[test]
fn a_suite_is_a_status_per_condition_and_a_set_per_scenario() {
    let Some(shell) = lava_test_shell() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let bin = deploy_scripts(&shell, tmp.path());
    let suite_dir = tmp.path().join("suite");
    let out = std::process::Command::new(rtlab_path())
        .args(["suite", "akamina-2004", "--quick", "--simulate", "3", "-q", "-o"])
        .arg(&suite_dir)
        .output()
        .unwrap();
    // Exit 3: a simulated run has no interrupt/activation split, which the suite needs.
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    let (with, without, code, result_dir) = report_both(tmp.path(), &bin, &[&suite_dir], &[]);
    assert_eq!(code, 1, "the suite's requirement is not met");
    assert_eq!(with, without);
    let cases = parse_signals(&with);
    check_result_files(&result_dir, &cases);
    let suite: Value = common::read_json(&suite_dir.join("suite.json"));
    for condition in suite["conditions"].as_array().unwrap() {
        let name = condition["name"].as_str().unwrap();
        // Measured without the split it needs: rtlab cannot judge the condition as a whole.
        let status = case(&cases, &format!("{name}.status"));
        assert_eq!((status.result.as_str(), status.set.as_deref()), ("unknown", None));
        assert!(status.reason.as_ref().unwrap().contains("split"));
        let run = run_json(&suite_dir.join(condition["directory"].as_str().unwrap()));
        for scenario in run["scenarios"].as_array().unwrap() {
            let set = format!("{name}.{}", scenario["name"].as_str().unwrap().replace([':', '=', '+', '/'], "_"));
            let in_set: Vec<&Case> = cases.iter().filter(|c| c.set.as_deref() == Some(&set)).collect();
            assert!(in_set.iter().any(|c| c.id == format!("{set}.timer.latency.cpu0.max")), "{set}: {in_set:?}");
            let required = case(&cases, &format!("{set}.require.timer.latency.max.lt-500us"));
            assert_eq!(required.result, "fail");
        }
    }
    let judgement = case(&cases, "judgements.requirement");
    assert_eq!((judgement.result.as_str(), judgement.set.as_deref()), ("fail", Some("judgements")));
    insta::assert_snapshot!("lava_suite_akamina_quick_simulate_3", redact(&without, tmp.path()));
}

/// The keys of LAVA's test definition schema (lava_common/schemas/test/testdef.py) that
/// contrib/lava/rtlab.yaml uses, read with python3-yaml as LAVA reads it (yaml.safe_load).
fn test_definition() -> Option<Value> {
    let path = repo_root().join("contrib/lava/rtlab.yaml");
    let script = "import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))";
    let out = std::process::Command::new("python3").args(["-c", script]).arg(&path).output();
    match out {
        Ok(out) if out.status.success() => Some(serde_json::from_slice(&out.stdout).unwrap()),
        other => {
            let why = format!("python3 with yaml cannot read {} ({other:?})", path.display());
            assert_ne!(std::env::var("CI").as_deref(), Ok("true"), "{why}, and CI=true: this test must run in CI");
            eprintln!("skipped: {why}");
            None
        }
    }
}

#[test]
fn the_test_definition_runs_as_lava_runs_it() {
    let Some(shell) = lava_test_shell() else { return };
    let Some(def) = test_definition() else { return };
    assert_eq!(def["metadata"]["format"], "Lava-Test Test Definition 1.0");
    let name = def["metadata"]["name"].as_str().unwrap();
    // DEFAULT_TESTDEF_NAME_CLASS of lava_common/constants.py.
    assert!(name.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '-'), "{name}");
    assert!(def["metadata"]["description"].is_string());
    let params = def["params"].as_object().unwrap();
    for p in ["RTLAB", "SUITE", "PROBE", "DURATION", "LOADS", "REQUIRE"] {
        assert!(params.contains_key(p), "params.{p}");
    }
    assert!(def["install"]["steps"].is_array());

    // run.sh as lava_dispatcher's TestRunnerAction writes it: the params (then the job's
    // parameters) as NAME='value', `set -e`, the steps, run with the scripts on PATH.
    let tmp = tempfile::tempdir().unwrap();
    let bin = deploy_scripts(&shell, tmp.path());
    let output = tmp.path().join("results");
    let job = [
        ("RTLAB", rtlab_path().to_string()),
        ("DURATION", String::new()),
        ("LOADS", "idle,cpu".to_string()),
        ("REQUIRE", "timer p50 < 1s; timer max < 1us".to_string()),
        ("EXTRA_ARGS", "--simulate 7 --samples 3000".to_string()),
        ("OUTPUT", output.display().to_string()),
    ];
    let mut run_sh = String::from("###default parameters from test definition###\n");
    for (k, v) in params {
        run_sh.push_str(&format!("{k}='{}'\n", v.as_str().unwrap_or_default()));
    }
    run_sh.push_str("######\n###test parameters from job submission###\n");
    for (k, v) in &job {
        run_sh.push_str(&format!("{k}='{v}'\n"));
    }
    run_sh.push_str("######\nset -e\n");
    for step in def["run"]["steps"].as_array().unwrap() {
        run_sh.push_str(step.as_str().unwrap());
        run_sh.push('\n');
    }
    let script = tmp.path().join("run.sh");
    std::fs::write(&script, &run_sh).unwrap();
    let result_dir = tmp.path().join("lava-results");
    std::fs::create_dir_all(&result_dir).unwrap();
    let out = std::process::Command::new("/bin/sh")
        .arg("-e")
        .arg(&script)
        .current_dir(repo_root())
        .env("PATH", path_with(&bin))
        .env("LAVA_RESULT_DIR", &result_dir)
        .env_remove("KMSG")
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "run.sh failed: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let cases = parse_signals(&stdout);
    check_result_files(&result_dir, &cases);
    assert_eq!(case(&cases, "idle.require.timer.latency.p50.lt-1000000us").result, "pass");
    assert_eq!(case(&cases, "cpu.require.timer.latency.max.lt-1us").result, "fail");
    assert!(case(&cases, "idle.timer.latency.cpu0.p99.9").measurement.is_some());
    assert!(stdout.contains("rtlab: exit status 1;"), "{stdout}");
}

#[test]
fn lava_output_to_a_file_is_the_signal_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let run_dir = tmp.path().join("run");
    simulated_run(&run_dir, &[]);
    let file = tmp.path().join("lava.txt");
    let out = rtlab().arg("report").arg(&run_dir).args(["--format", "lava", "-o"]).arg(&file).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stdout = rtlab().arg("report").arg(&run_dir).args(["--format", "lava"]).output().unwrap().stdout;
    assert_eq!(std::fs::read(&file).unwrap(), stdout);
    // Without requirements: measurements only, every one passes (pWCET and "long enough?"
    // may be unknown).
    let cases = parse_signals(&String::from_utf8(stdout).unwrap());
    assert!(cases.iter().all(|c| c.result == "pass" || c.id.contains(".pwcet-") || c.id.contains(".long-enough.")));
}
