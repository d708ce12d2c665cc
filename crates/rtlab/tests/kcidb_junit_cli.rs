//! The CI outputs read by their real consumers: `rtlab export --format kcidb` of a run and of
//! a suite validated by kcidb-io (KernelCI's own schema package), and `rtlab report --format
//! junit` parsed by junitparser, both from PyPI.
//!
//! They live in a Python virtual environment that `./run-tests` creates and fills when it is
//! missing: `$RTLAB_PYVENV`, default `${XDG_CACHE_HOME:-$HOME/.cache}/rtlab/pyvenv`. Without
//! it these tests say so and return, except under CI=true, where they fail: the real
//! validators must have run.

mod common;

use common::rtlab;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The virtual environment's python, where it has both packages.
fn python() -> Option<&'static PathBuf> {
    static PYTHON: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let found = PYTHON.get_or_init(|| {
        let venv = std::env::var_os("RTLAB_PYVENV").map(PathBuf::from).unwrap_or_else(|| {
            let cache = std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache"));
            cache.join("rtlab/pyvenv")
        });
        let python = venv.join("bin/python");
        let ok = std::process::Command::new(&python)
            .args(["-c", "import kcidb_io, junitparser"])
            .output()
            .is_ok_and(|o| o.status.success());
        if ok {
            Ok(python)
        } else {
            Err(format!(
                "{} has no kcidb-io and junitparser (./run-tests installs them from PyPI; or set RTLAB_PYVENV)",
                venv.display()
            ))
        }
    });
    match found {
        Ok(p) => Some(p),
        Err(why) => {
            assert_ne!(std::env::var("CI").as_deref(), Ok("true"), "{why}, and CI=true: the real validators must run");
            eprintln!("not run: {why}");
            None
        }
    }
}

/// kcidb-io's validator on a submission: the latest schema (which must be v5), validating
/// exactly that version, then a summary of the tests as kcidb-io counts them.
const VALIDATE_KCIDB: &str = r#"
import json, sys, collections
import kcidb_io
schema = kcidb_io.schema.LATEST
data = json.load(open(sys.argv[1]))
assert schema.major == 5, f"kcidb-io's latest schema is v{schema.major}.{schema.minor}, not v5"
assert schema.is_compatible_exactly(data), "not exactly this schema version"
schema.validate_exactly(data)
counts = {k: len(data.get(k, [])) for k in ("checkouts", "builds", "tests")}
counts["objects"] = schema.count(data)
statuses = collections.Counter(t.get("status", "") for t in data.get("tests", []))
print(json.dumps({"schema": f"v{schema.major}.{schema.minor}", "valid": True, "counts": counts, "statuses": statuses}))
"#;

/// junitparser on a JUnit file: per suite, its counts, properties and cases' outcomes.
const READ_JUNIT: &str = r#"
import json, sys
from junitparser import JUnitXml, TestSuite, Failure, Error, Skipped
xml = JUnitXml.fromfile(sys.argv[1])
suites = [xml] if isinstance(xml, TestSuite) else list(xml)
out = []
for s in suites:
    cases = []
    for c in s:
        kinds = [type(r).__name__ for r in c.result]
        cases.append({"name": c.name, "result": kinds[0] if kinds else "Passed"})
    out.append({
        "name": s.name, "tests": s.tests, "failures": s.failures, "errors": s.errors,
        "properties": {p.name: p.value for p in s.properties()},
        "cases": cases,
    })
print(json.dumps(out))
"#;

fn python_json(python: &Path, script: &str, file: &Path) -> Value {
    let output = std::process::Command::new(python).arg("-c").arg(script).arg(file).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{} rejected {}:\n{}{}",
        python.display(),
        file.display(),
        stdout,
        String::from_utf8_lossy(&output.stderr)
    );
    eprintln!("{}: {}", file.display(), stdout.trim());
    serde_json::from_str(stdout.trim()).unwrap()
}

/// A short simulated run with `require`; returns its directory after checking the exit code.
fn simulated_run(dir: &Path, label: &str, require: &str, exit: i32) -> PathBuf {
    let out = dir.join(label);
    let output = rtlab()
        .args(["run", "--simulate", "11", "--samples", "2000", "--load", "idle", "--settle", "0s", "-q"])
        .args(["--label", label, "--require", require, "--output"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(exit), "{label}: {}", String::from_utf8_lossy(&output.stderr));
    out
}

fn export_kcidb(result: &Path, out: &Path, extra: &[&str]) {
    let output =
        rtlab().arg("export").arg(result).args(["--format", "kcidb", "-o"]).arg(out).args(extra).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
}

fn junit(results: &[&Path], out: &Path) -> i32 {
    let output = rtlab().arg("report").args(results).args(["--format", "junit", "-o"]).arg(out).output().unwrap();
    output.status.code().unwrap()
}

fn tests_of(file: &Path) -> Vec<Value> {
    let data: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    data["tests"].as_array().unwrap().clone()
}

fn requirement_tests(tests: &[Value]) -> Vec<(String, String)> {
    tests
        .iter()
        .filter(|t| t["path"].as_str().unwrap().contains(".requirement."))
        .map(|t| (t["path"].as_str().unwrap().to_string(), t["status"].as_str().unwrap().to_string()))
        .collect()
}

#[test]
fn runs_validate_with_kcidb_io_and_their_junit_reads_with_junitparser() {
    let Some(python) = python() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let pass = simulated_run(tmp.path(), "pass", "timer max < 10s", 0);
    let fail = simulated_run(tmp.path(), "fail", "timer max < 1us", 1);
    // Two seconds of samples cannot support a pWCET at 1e-9: undecided (exit 1).
    let undecided = simulated_run(tmp.path(), "undecided", "timer pwcet(1e-9) < 10s", 1);

    let mut junit_runs = Vec::new();
    for (dir, status) in [(&pass, "PASS"), (&fail, "FAIL"), (&undecided, "ERROR")] {
        let file = dir.with_extension("kcidb.json");
        export_kcidb(dir, &file, &[]);
        let summary = python_json(python, VALIDATE_KCIDB, &file);
        assert_eq!(summary["schema"], "v5.3");
        assert_eq!((summary["counts"]["checkouts"].as_u64(), summary["counts"]["builds"].as_u64()), (Some(1), Some(1)));
        let tests = tests_of(&file);
        assert_eq!(summary["counts"]["tests"].as_u64(), Some(tests.len() as u64));
        let checks = requirement_tests(&tests);
        assert_eq!(checks.len(), 1, "{checks:?}");
        assert_eq!(checks[0].1, status, "{checks:?}");
        if status == "ERROR" {
            let t = tests.iter().find(|t| t["status"] == "ERROR").unwrap();
            assert!(t["misc"]["reason"].as_str().unwrap().starts_with("undecided: "), "{t}");
        }
        // The statistics of each CPU and of all together are DONE with seconds.
        for stat in ["p50", "p99", "p99_9", "max"] {
            let t = tests.iter().find(|t| t["path"] == format!("rtlab.timer.latency.idle.{stat}")).unwrap();
            assert_eq!((t["status"].as_str(), t["number"]["unit"].as_str()), (Some("DONE"), Some("s")));
        }
        assert!(tests.iter().any(|t| t["path"].as_str().unwrap().starts_with("rtlab.timer.latency.idle.pwcet_")));
        junit_runs.push(dir.as_path());
    }

    // Flags: another origin, a CI's own IDs, tests only; still valid.
    let file = tmp.path().join("flags.kcidb.json");
    export_kcidb(
        &pass,
        &file,
        &[
            "--origin",
            "my_lab",
            "--checkout-id",
            "c1",
            "--build-id",
            "maestro:b1",
            "--test-id-prefix",
            "job1:",
            "--tests-only",
        ],
    );
    let summary = python_json(python, VALIDATE_KCIDB, &file);
    assert_eq!((summary["counts"]["checkouts"].as_u64(), summary["counts"]["builds"].as_u64()), (Some(0), Some(0)));
    assert!(tests_of(&file)
        .iter()
        .all(|t| t["build_id"] == "maestro:b1" && t["id"].as_str().unwrap().starts_with("my_lab:job1:rtlab.")));

    // JUnit of the three runs: one suite each, one case each, host/kernel/samples properties.
    let xml = tmp.path().join("junit.xml");
    assert_eq!(junit(&junit_runs, &xml), 1, "one check failed, one undecided");
    let suites = python_json(python, READ_JUNIT, &xml);
    let suites = suites.as_array().unwrap();
    assert_eq!(suites.len(), 3);
    let expected =
        [("rtlab.pass", 0, 0, "Passed"), ("rtlab.fail", 1, 0, "Failure"), ("rtlab.undecided", 0, 1, "Error")];
    for (suite, (name, failures, errors, result)) in suites.iter().zip(expected) {
        assert_eq!(suite["name"], name);
        assert_eq!(
            (suite["tests"].as_u64(), suite["failures"].as_u64(), suite["errors"].as_u64()),
            (Some(1), Some(failures), Some(errors)),
            "{suite}"
        );
        assert_eq!(suite["cases"][0]["result"], result, "{suite}");
        let properties = &suite["properties"];
        assert_eq!(properties["host"], "simulated", "{properties}");
        assert!(!properties["kernel"].as_str().unwrap().is_empty());
        // --samples 2000 per CPU, every metric (latency and jitter) of every CPU.
        let samples: u64 = properties["samples"].as_str().unwrap().parse().unwrap();
        assert!(samples >= 2000, "{properties}");
    }
}

const SUITE: &str = r#"
[suite]
name = "mini-ci"
title = "Two conditions for the CI exports"

[experiment]
probe = "timer"
interval = "1ms"
require = ["timer max < 10s"]

[[condition]]
name = "first"
title = "First"
samples = 2000
quick = { samples = 300 }

[[condition]]
name = "second"
title = "Second"
samples = 2000
quick = { samples = 300 }
"#;

#[test]
fn a_quick_suite_validates_with_kcidb_io() {
    let Some(python) = python() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("mini.toml");
    std::fs::write(&file, SUITE).unwrap();
    let suite = tmp.path().join("suite");
    let output = rtlab()
        .arg("suite")
        .arg(&file)
        .args(["--simulate", "5", "--quick", "--label", "ci", "-q", "--output"])
        .arg(&suite)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));

    let out = tmp.path().join("suite.kcidb.json");
    export_kcidb(&suite, &out, &[]);
    let summary = python_json(python, VALIDATE_KCIDB, &out);
    assert_eq!(summary["schema"], "v5.3");
    let tests = tests_of(&out);
    for condition in ["first", "second"] {
        let node = format!("rtlab.mini-ci.{condition}.timer.latency");
        assert!(
            tests.iter().any(|t| t["path"].as_str().unwrap().starts_with(&node) && t["status"] == "DONE"),
            "{node}"
        );
        let checks: Vec<_> = requirement_tests(&tests)
            .into_iter()
            .filter(|(p, _)| p.starts_with(&format!("rtlab.mini-ci.{condition}.")))
            .collect();
        assert_eq!(checks.iter().map(|(_, s)| s.as_str()).collect::<Vec<_>>(), ["PASS"], "{checks:?}");
    }
    // One build for the suite, and the tests' IDs unique (the validator does not check that).
    assert_eq!(summary["counts"]["builds"].as_u64(), Some(1));
    let mut ids: Vec<&str> = tests.iter().map(|t| t["id"].as_str().unwrap()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), tests.len());

    // csv refuses a suite and kcidb's flags: one line, exit 2.
    let output = rtlab().arg("export").arg(&suite).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let output = rtlab().arg("export").arg(suite.join("first")).args(["--origin", "x"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--origin is for --format kcidb only"));
    for bad in [&["--origin", "Bad-Origin"][..], &["--build-id", "maestro:b1"][..]] {
        let output = rtlab().arg("export").arg(&suite).args(["--format", "kcidb"]).args(bad).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!((output.status.code(), stderr.lines().count()), (Some(2), 1), "{bad:?}: {stderr}");
    }
}
