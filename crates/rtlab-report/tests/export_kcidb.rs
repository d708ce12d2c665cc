//! `--format kcidb` on the saved fixtures: the submission's structure checked against the
//! run it came from (every number a DONE test in seconds, each check PASS/FAIL/ERROR, no
//! nulls, paths and IDs in the schema's alphabet), plus snapshots. The real validator
//! (kcidb-io from PyPI) reads the binary's output in crates/rtlab/tests/kcidb_junit_cli.rs.

mod common;

use common::{fixture_path, DERIVED};
use rtlab_analysis::requirement::parse_requirement;
use rtlab_formats::export::kcidb::{KcidbIds, KcidbReport, PwcetFigure, PwcetValue};
use rtlab_report::verdict::judge;
use rtlab_results::run::RunResult;
use rtlab_results::set::{ReportExporter, ReportSet, SourcedRun};
use rtlab_results::suite::SuiteRecord;
use serde_json::Value;

const TWO_CPUS: &str = "simulated-2cpu.run.json";

fn load(name: &str) -> RunResult {
    RunResult::load(&fixture_path(name)).expect("the fixture loads")
}

fn set_of(runs: Vec<RunResult>, requirements: &[&str]) -> ReportSet {
    let runs = runs.into_iter().map(|run| SourcedRun { source: format!("{}.run.json", run.label), run }).collect();
    let mut set = ReportSet { runs, verdict: None };
    if !requirements.is_empty() {
        let requirements: Vec<_> = requirements.iter().map(|r| parse_requirement(r).unwrap()).collect();
        set.verdict = Some(judge(&set, &requirements).unwrap());
    }
    set
}

fn pwcet(run: &str, scenario: &str, estimate: Result<f64, &str>) -> PwcetFigure {
    PwcetFigure {
        run_label: run.into(),
        scenario: scenario.into(),
        metric: "timer.latency".into(),
        probability: 1e-9,
        estimate: estimate
            .map(|ns| PwcetValue {
                value_ns: ns,
                ci_low_ns: ns * 0.9,
                ci_high_ns: ns * 1.5,
                confidence: 0.95,
                fit: "GPD (MLE) fit of 250 samples above 60.1 µs".into(),
            })
            .map_err(str::to_string),
    }
}

fn render(exporter: &KcidbReport, set: &ReportSet) -> (String, Value) {
    let text = exporter.render(set).unwrap();
    let value: Value = serde_json::from_str(&text).unwrap();
    (text, value)
}

/// Everything the schema forbids or requires everywhere: no nulls anywhere, IDs
/// `origin:...`, paths dot-separated `[a-zA-Z0-9_-]` segments, statuses from the enum,
/// `number` only with value/unit/prefix.
fn assert_schema_invariants(v: &Value) {
    fn no_nulls(v: &Value, at: &str) {
        match v {
            Value::Null => panic!("null at {at}"),
            Value::Array(a) => a.iter().enumerate().for_each(|(i, x)| no_nulls(x, &format!("{at}[{i}]"))),
            Value::Object(o) => o.iter().for_each(|(k, x)| no_nulls(x, &format!("{at}.{k}"))),
            _ => {}
        }
    }
    no_nulls(v, "$");
    assert_eq!(v["version"], serde_json::json!({"major": 5, "minor": 3}));
    let id_ok = |id: &str| {
        let (origin, _) = id.split_once(':').unwrap_or_else(|| panic!("no origin in {id:?}"));
        !origin.is_empty() && origin.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    };
    for t in v["tests"].as_array().unwrap() {
        let o = t.as_object().unwrap();
        for k in o.keys() {
            assert!(
                [
                    "id",
                    "origin",
                    "build_id",
                    "path",
                    "status",
                    "number",
                    "start_time",
                    "duration",
                    "environment",
                    "comment",
                    "misc"
                ]
                .contains(&k.as_str()),
                "unknown field {k}"
            );
        }
        assert!(id_ok(t["id"].as_str().unwrap()) && id_ok(t["build_id"].as_str().unwrap()), "{t}");
        let path = t["path"].as_str().unwrap();
        assert!(
            path.split('.')
                .all(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')),
            "{path}"
        );
        let status = t["status"].as_str().unwrap();
        assert!(["FAIL", "ERROR", "MISS", "PASS", "DONE", "SKIP"].contains(&status), "{status}");
        if let Some(n) = t.get("number") {
            assert!(["FAIL", "ERROR", "PASS", "DONE"].contains(&status), "a number with {status}");
            assert_eq!((n["unit"].as_str(), n["prefix"].as_str()), (Some("s"), Some("metric")), "{n}");
            assert!(n["value"].as_f64().unwrap().is_finite());
        }
        if ["ERROR", "SKIP"].contains(&status) {
            assert!(t["misc"]["reason"].as_str().is_some_and(|r| !r.is_empty()), "no reason: {t}");
        }
    }
}

fn by_path<'a>(v: &'a Value, path: &str) -> &'a Value {
    v["tests"].as_array().unwrap().iter().find(|t| t["path"] == path).unwrap_or_else(|| panic!("no test {path}"))
}

#[test]
fn a_run_is_a_checkout_a_build_and_a_test_per_statistic_and_check() {
    let run = load(TWO_CPUS);
    let set = set_of(vec![run.clone()], &["timer max < 500us", "timer p99 < 1ms", "net max < 1ms"]);
    let exporter = KcidbReport { pwcet: vec![pwcet("fixture", "idle", Ok(2_991_234.5))], ..KcidbReport::default() };
    let (text, v) = render(&exporter, &set);
    assert_schema_invariants(&v);
    assert_eq!(v["checkouts"][0]["id"], "rtlab:6.0.0-simulated");
    assert_eq!(v["builds"][0]["id"], "rtlab:6.0.0-simulated:simulated");
    assert_eq!(v["builds"][0]["checkout_id"], "rtlab:6.0.0-simulated");
    let tests = v["tests"].as_array().unwrap();
    // 2 metrics x (all CPUs + 2 CPUs) x 4 statistics, 1 pWCET, 3 checks.
    assert_eq!(tests.len(), 2 * 3 * 4 + 1 + 3);
    assert!(tests
        .iter()
        .all(|t| t["id"].as_str().unwrap()
            == format!("rtlab:simulated:19700101T000000Z:{}", t["path"].as_str().unwrap())));

    // The statistics are the run's, in seconds.
    for m in run.measurements_of("idle", "timer.latency") {
        let s = m.summary.as_ref().unwrap();
        for (name, seg, ns) in [("p50", "p50", s.p50), ("p99.9", "p99_9", s.p99_9), ("max", "max", s.max)] {
            let t = by_path(&v, &format!("rtlab.timer.latency.idle.cpu{}.{seg}", m.cpu));
            assert_eq!(t["status"], "DONE");
            assert_eq!(t["number"]["value"].as_f64().unwrap(), ns as f64 / 1e9, "{name}");
            assert_eq!(t["misc"]["value_ns"], ns);
            assert_eq!(t["misc"]["samples"], m.count);
        }
    }
    let overall_max =
        run.measurements_of("idle", "timer.latency").map(|m| m.summary.as_ref().unwrap().max).max().unwrap();
    let t = by_path(&v, "rtlab.timer.latency.idle.max");
    assert_eq!(t["number"]["value"].as_f64().unwrap(), overall_max as f64 / 1e9);
    assert_eq!(t["misc"]["cpus"], serde_json::json!([0, 1]));
    assert_eq!(t["misc"]["samples"], 10_000);
    assert_eq!(t["environment"]["misc"]["kernel_release"], "6.0.0-simulated");
    assert_eq!(t["environment"]["misc"]["host"], "simulated");

    let pw = by_path(&v, "rtlab.timer.latency.idle.pwcet_1e-9");
    assert_eq!((pw["status"].as_str(), pw["number"]["value"].as_f64()), (Some("DONE"), Some(2_991_234.5 / 1e9)));

    // Checks: not met -> FAIL with the measured value; met -> PASS; not measured -> ERROR.
    let fail = by_path(&v, "rtlab.timer.latency.idle.requirement.max_lt_500us");
    assert_eq!(fail["status"], "FAIL");
    assert_eq!(fail["number"]["value"].as_f64().unwrap(), overall_max as f64 / 1e9);
    assert_eq!(by_path(&v, "rtlab.timer.latency.idle.requirement.p99_lt_1ms")["status"], "PASS");
    let error = by_path(&v, "rtlab.net.activation.idle.requirement.max_lt_1ms");
    assert_eq!(error["status"], "ERROR");
    assert!(error.get("number").is_none());
    assert_eq!(error["misc"]["reason"], "net.activation was not measured in this configuration");
    insta::assert_snapshot!("kcidb_two_cpus", text);
}

#[test]
fn flags_set_the_ids_and_tests_only_leaves_out_the_parents() {
    let set = set_of(vec![load(TWO_CPUS)], &["timer p99 < 1ms"]);
    let ids = KcidbIds {
        origin: Some("my_lab".into()),
        checkout_id: Some("abc123".into()),
        build_id: Some("my_lab:b-42".into()),
        test_id_prefix: Some("job-7.".into()),
        tests_only: false,
    };
    let exporter = KcidbReport { ids: ids.clone(), ..KcidbReport::default() };
    let (_, v) = render(&exporter, &set);
    assert_schema_invariants(&v);
    assert_eq!(v["checkouts"][0]["id"], "my_lab:abc123");
    assert_eq!(v["checkouts"][0]["origin"], "my_lab");
    assert_eq!(
        (v["builds"][0]["id"].as_str(), v["builds"][0]["checkout_id"].as_str()),
        (Some("my_lab:b-42"), Some("my_lab:abc123"))
    );
    let t = by_path(&v, "rtlab.timer.latency.idle.requirement.p99_lt_1ms");
    assert_eq!(t["id"], "my_lab:job-7.rtlab.timer.latency.idle.requirement.p99_lt_1ms");
    assert_eq!((t["origin"].as_str(), t["build_id"].as_str()), (Some("my_lab"), Some("my_lab:b-42")));

    // Another origin's build: written as ours, refused; with --tests-only, the tests join it.
    let foreign = KcidbIds { build_id: Some("maestro:b-42".into()), ..ids.clone() };
    let error = KcidbReport { ids: foreign.clone(), ..KcidbReport::default() }.render(&set).unwrap_err().to_string();
    assert!(error.contains("give --tests-only"), "{error}");
    let only = KcidbReport { ids: KcidbIds { tests_only: true, ..foreign }, ..KcidbReport::default() };
    let (_, v) = render(&only, &set);
    assert!(v.get("checkouts").is_none() && v.get("builds").is_none());
    assert!(v["tests"].as_array().unwrap().iter().all(|t| t["build_id"] == "maestro:b-42" && t["origin"] == "my_lab"));

    let bad = KcidbReport {
        ids: KcidbIds { origin: Some("My-Lab".into()), ..KcidbIds::default() },
        ..KcidbReport::default()
    };
    let error = bad.render(&set).unwrap_err().to_string();
    assert!(error.contains("is not a KCIDB origin"), "{error}");
}

#[test]
fn a_pwcet_that_cannot_be_quoted_is_skipped_with_its_reason() {
    let set = set_of(vec![load(TWO_CPUS)], &[]);
    let exporter = KcidbReport {
        pwcet: vec![pwcet("fixture", "idle", Err("not defensible from this run — too few blocks"))],
        ..KcidbReport::default()
    };
    let (_, v) = render(&exporter, &set);
    assert_schema_invariants(&v);
    let t = by_path(&v, "rtlab.timer.latency.idle.pwcet_1e-9");
    assert_eq!(t["status"], "SKIP");
    assert!(t.get("number").is_none());
    assert_eq!(t["misc"]["reason"], "not defensible from this run — too few blocks");
    // Without requirements there are no PASS/FAIL tests.
    assert!(v["tests"].as_array().unwrap().iter().all(|t| t["status"] != "PASS" && t["status"] != "FAIL"));
}

/// Probes with steps (the jitter probe's periods, the sweep probe's rates): one node per
/// step, since merging steps would mix settings.
#[test]
fn probes_with_steps_have_a_node_per_step() {
    let set = set_of(vec![load(DERIVED)], &[]);
    let (_, v) = render(&KcidbReport::default(), &set);
    assert_schema_invariants(&v);
    let lines: Vec<String> = v["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let number = t.get("number").map(|n| format!(" {}", n["value"])).unwrap_or_default();
            format!("{} {}{number}", t["path"].as_str().unwrap(), t["status"].as_str().unwrap())
        })
        .collect();
    assert!(lines.iter().any(|l| l.contains(".period_300us.p99_9 DONE")), "{lines:#?}");
    insta::assert_snapshot!("kcidb_derived_probes_paths", lines.join("\n"));
}

/// A suite: the conditions' runs under `rtlab.<suite>.<condition>`, a failed condition
/// ERROR, one never started SKIP, the paper's judgements PASS/FAIL/DONE.
#[test]
fn a_suite_has_its_conditions_and_judgements() {
    let run = load(TWO_CPUS);
    let record: SuiteRecord = serde_json::from_value(serde_json::json!({
        "schema": "rtlab.suite/1",
        "suite": {"name": "akamina-2004", "title": "Akamina"},
        "label": "fixture-suite",
        "quick": true,
        "long": false,
        "file": "built-in akamina-2004",
        "file_text": "",
        "tool_version": "0.1.0",
        "start_time": "2026-11-29T05:00:00Z",
        "end_time": "2026-11-29T05:01:00Z",
        "interrupted": true,
        "simulated": true,
        "machine": "simulated",
        "requirements": ["timer max < 500us"],
        "conditions": [
            {"name": "unloaded", "title": "Unloaded", "directory": "unloaded", "run_label": "fixture", "status": "done", "plan": "timer"},
            {"name": "comms", "title": "Under comms", "directory": "comms", "run_label": "suite-comms", "status": "failed", "reason": "the comms load did not start", "plan": "timer"},
            {"name": "late", "title": "Late", "directory": "late", "run_label": "suite-late", "status": "not-run", "plan": "timer"}
        ],
        "tables": [],
        "figures": [],
        "verdict": null,
        "judgements": [
            {"id": "t2-500us", "title": "Meets 500 µs", "paper": "yes", "kind": "requirement", "findings": ["max 2,991 µs"], "conclusion": "not met", "met": false},
            {"id": "range", "title": "The 97 % range", "paper": "-", "kind": "range", "findings": [], "conclusion": "3 – 9 µs"}
        ]
    }))
    .unwrap();
    let set = set_of(vec![run], &["timer max < 500us"]);
    let exporter = KcidbReport { suite: Some(record), ..KcidbReport::default() };
    let (_, v) = render(&exporter, &set);
    assert_schema_invariants(&v);
    assert_eq!(by_path(&v, "rtlab.akamina-2004.unloaded.timer.latency.idle.cpu1.p99")["status"], "DONE");
    assert_eq!(
        by_path(&v, "rtlab.akamina-2004.unloaded.timer.latency.idle.requirement.max_lt_500us")["status"],
        "FAIL"
    );
    let failed = by_path(&v, "rtlab.akamina-2004.comms");
    assert_eq!(
        (failed["status"].as_str(), failed["misc"]["reason"].as_str()),
        (Some("ERROR"), Some("the comms load did not start"))
    );
    assert_eq!(by_path(&v, "rtlab.akamina-2004.late")["status"], "SKIP");
    assert_eq!(by_path(&v, "rtlab.akamina-2004.judgement.t2-500us")["status"], "FAIL");
    assert_eq!(by_path(&v, "rtlab.akamina-2004.judgement.range")["status"], "DONE");
    // The suite's start names the tests.
    let id = by_path(&v, "rtlab.akamina-2004.late")["id"].as_str().unwrap().to_string();
    assert_eq!(id, "rtlab:simulated:20261129T050000Z:rtlab.akamina-2004.late");
}
