//! RunResult::load refuses damaged or foreign files with ResultsError::Invalid, naming the
//! file and the problem (a later `report` or `compare` must never work on a broken result).

use rtlab_results::run::RunResult;
use rtlab_results::ResultsError;
use serde_json::Value;
use std::path::Path;

fn fixture_text() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../rtlab-report/tests/fixtures/simulated-2cpu.run.json");
    std::fs::read_to_string(path).unwrap()
}

fn fixture_value() -> Value {
    serde_json::from_str(&fixture_text()).unwrap()
}

/// Loads `text` from a file and returns the reason of the Invalid error; checks that the
/// error names the file.
fn rejected(text: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.json");
    std::fs::write(&path, text).unwrap();
    match RunResult::load(&path) {
        Ok(_) => panic!("a damaged run.json was accepted"),
        Err(ResultsError::Invalid { path: shown, reason }) => {
            assert_eq!(shown, path.display().to_string(), "the error names the file");
            // Also through the directory.
            match RunResult::load(dir.path()) {
                Err(ResultsError::Invalid { reason: again, .. }) => assert_eq!(again, reason),
                other => panic!("loading the directory gave {other:?}"),
            }
            reason
        }
        Err(other) => panic!("expected ResultsError::Invalid, got {other:?}"),
    }
}

fn rejected_value(value: &Value) -> String {
    rejected(&serde_json::to_string_pretty(value).unwrap())
}

fn assert_names(reason: &str, needles: &[&str]) {
    for needle in needles {
        assert!(reason.contains(needle), "reason does not name {needle:?}: {reason}");
    }
}

#[test]
fn the_fixture_itself_loads() {
    let run = RunResult::load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../rtlab-report/tests/fixtures/simulated-2cpu.run.json"),
    )
    .expect("the fixture loads");
    assert_eq!(run.measurements.len(), 4);
}

#[test]
fn truncated_file() {
    let text = fixture_text();
    for cut in [text.len() / 2, text.len() - 3, 1] {
        let reason = rejected(&text[..cut]);
        assert_names(&reason, &["not JSON"]);
    }
}

#[test]
fn empty_file() {
    assert_names(&rejected(""), &["not JSON"]);
}

#[test]
fn count_disagreeing_with_the_histogram() {
    let mut v = fixture_value();
    let count = v["measurements"][0]["count"].as_u64().unwrap();
    v["measurements"][0]["count"] = (count - 1).into();
    assert_names(&rejected_value(&v), &["timer.latency", "CPU 0", "count", "histogram"]);
}

#[test]
fn moments_disagreeing_with_the_count() {
    let mut v = fixture_value();
    let count = v["measurements"][1]["moments"]["count"].as_u64().unwrap();
    v["measurements"][1]["moments"]["count"] = (count + 1).into();
    assert_names(&rejected_value(&v), &["timer.jitter", "moments"]);
}

#[test]
fn unordered_summary() {
    let mut v = fixture_value();
    let s = &mut v["measurements"][0]["summary"];
    let (p50, p90) = (s["p50"].clone(), s["p90"].clone());
    s["p50"] = p90;
    s["p90"] = p50;
    assert_names(&rejected_value(&v), &["timer.latency", "summary"]);

    let mut v = fixture_value();
    let s = &mut v["measurements"][2]["summary"];
    s["min"] = (s["max"].as_i64().unwrap() + 1).into();
    assert_names(&rejected_value(&v), &["summary", "CPU 1"]);
}

#[test]
fn summary_count_disagreeing() {
    let mut v = fixture_value();
    let s = &mut v["measurements"][0]["summary"];
    s["count"] = (s["count"].as_u64().unwrap() + 7).into();
    assert_names(&rejected_value(&v), &["summary"]);
}

#[test]
fn samples_without_a_summary() {
    let mut v = fixture_value();
    v["measurements"][0]["summary"] = Value::Null;
    assert_names(&rejected_value(&v), &["summary"]);
}

#[test]
fn zero_interval() {
    let mut v = fixture_value();
    v["measurements"][0]["interval_ns"] = 0.into();
    assert_names(&rejected_value(&v), &["interval_ns"]);
}

#[test]
fn damaged_histogram() {
    let original = fixture_value();
    let data = original["measurements"][0]["histogram"]["data"].as_str().unwrap().to_string();
    for damaged in [data[..data.len() / 2].to_string(), "@@@".to_string(), String::new()] {
        let mut v = original.clone();
        v["measurements"][0]["histogram"]["data"] = damaged.into();
        assert_names(&rejected_value(&v), &["timer.latency", "histogram"]);
    }
}

#[test]
fn histogram_of_another_run() {
    // A histogram swapped in from another measurement: decodes fine, counts disagree.
    let mut v = fixture_value();
    let jitter = v["measurements"][1]["histogram"].clone();
    v["measurements"][0]["histogram"] = jitter;
    assert_names(&rejected_value(&v), &["count"]);
}

#[test]
fn no_schema() {
    let mut v = fixture_value();
    v.as_object_mut().unwrap().remove("schema");
    assert_names(&rejected_value(&v), &["schema", "rtlab.run/1"]);
    assert_names(&rejected(r#"{"some": "other tool"}"#), &["schema"]);
    assert_names(&rejected("[1, 2, 3]"), &["schema"]);
}

#[test]
fn wrong_schema() {
    let mut v = fixture_value();
    v["schema"] = "rtlab.run/2".into();
    assert_names(&rejected_value(&v), &["rtlab.run/2", "rtlab.run/1"]);
    v["schema"] = "rtlab.summary/1".into();
    assert_names(&rejected_value(&v), &["rtlab.summary/1"]);
}

#[test]
fn missing_field() {
    let mut v = fixture_value();
    v.as_object_mut().unwrap().remove("measurements");
    assert_names(&rejected_value(&v), &["measurements"]);
}

#[test]
fn wrong_type() {
    let mut v = fixture_value();
    v["measurements"][0]["count"] = "many".into();
    assert_names(&rejected_value(&v), &["invalid type"]);
}

#[test]
fn missing_file_is_invalid_input() {
    let dir = tempfile::tempdir().unwrap();
    match RunResult::load(&dir.path().join("nothing-here")) {
        Err(ResultsError::Invalid { path, reason }) => {
            assert!(path.contains("nothing-here"));
            assert!(reason.contains("cannot read"), "{reason}");
        }
        other => panic!("expected Invalid, got {other:?}"),
    }
    // A directory without a run.json.
    match RunResult::load(dir.path()) {
        Err(ResultsError::Invalid { path, .. }) => assert!(path.ends_with("run.json"), "{path}"),
        other => panic!("expected Invalid, got {other:?}"),
    }
}
