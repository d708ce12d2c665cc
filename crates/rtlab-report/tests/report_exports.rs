//! Snapshot tests of the whole-report exporters (Markdown, CSV, JSON) on the two fixtures
//! (tests/fixtures: one scenario; two scenarios, unloaded and loaded), alone and compared,
//! and the verdict on them against bounds just below and just above the observed maximum.

use rtlab_analysis::requirement::parse_requirement;
use rtlab_report::csv_report::CsvReport;
use rtlab_report::json_report::JsonReport;
use rtlab_report::markdown::MarkdownReport;
use rtlab_report::verdict::judge;
use rtlab_results::run::RunResult;
use rtlab_results::set::{ReportExporter, ReportSet, SourcedRun};
use std::path::Path;

const ONE: &str = "simulated-2cpu.run.json";
const TWO: &str = "simulated-two-scenarios.run.json";

fn fixture(name: &str) -> SourcedRun {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name);
    let run = RunResult::load(&path).expect("the fixture loads");
    SourcedRun { source: format!("tests/fixtures/{name}"), run }
}

fn set(names: &[&str]) -> ReportSet {
    ReportSet { runs: names.iter().map(|n| fixture(n)).collect(), verdict: None }
}

/// The largest timer.latency sample of a fixture (all scenarios, all CPUs), from run.json.
fn observed_max(set: &ReportSet) -> i64 {
    set.runs
        .iter()
        .flat_map(|r| &r.run.measurements)
        .filter(|m| m.metric == "timer.latency")
        .filter_map(|m| m.summary.as_ref().map(|s| s.max))
        .max()
        .unwrap()
}

fn with_requirement(mut set: ReportSet, text: &str) -> ReportSet {
    let requirement = parse_requirement(text).unwrap();
    set.verdict = Some(judge(&set, &[requirement]).unwrap());
    set
}

#[test]
fn markdown_of_one_scenario() {
    insta::assert_snapshot!("markdown_one", MarkdownReport.render(&set(&[ONE])).unwrap());
}

#[test]
fn markdown_of_two_scenarios_with_a_verdict() {
    let set = with_requirement(set(&[TWO]), "timer max < 2ms");
    insta::assert_snapshot!("markdown_two", MarkdownReport.render(&set).unwrap());
}

#[test]
fn markdown_of_a_comparison() {
    insta::assert_snapshot!("markdown_compare", MarkdownReport.render(&set(&[ONE, TWO])).unwrap());
}

#[test]
fn csv_of_one_scenario() {
    insta::assert_snapshot!("csv_one", CsvReport.render(&set(&[ONE])).unwrap());
}

#[test]
fn csv_of_two_scenarios() {
    let text = CsvReport.render(&set(&[TWO])).unwrap();
    assert!(text.lines().all(|l| !l.contains('\n')));
    insta::assert_snapshot!("csv_two", text);
}

/// The report's tables have a column or a row per configuration (a scenario of a run), so
/// the CSV and the JSON keep a run's scenarios apart: each scenario's figures are its own.
#[test]
fn csv_and_json_keep_the_scenarios_apart() {
    let set = set(&[TWO]);
    let run = &set.runs[0].run;
    let loaded = "cpu:threads=1+proc-read";
    let of = |scenario: &str| {
        let threads: Vec<_> = run.measurements_of(scenario, "timer.latency").collect();
        let samples: u64 = threads.iter().map(|m| m.count).sum();
        (samples, threads.iter().filter_map(|m| m.moments.max()).max().unwrap())
    };
    let ((idle_n, idle_max), (loaded_n, loaded_max)) = (of("idle"), of(loaded));
    assert_ne!(idle_max, loaded_max, "the fixture's scenarios differ, so a mix-up would show");

    let csv = CsvReport.render(&set).unwrap();
    let section: Vec<&str> = csv
        .split("\r\n\r\n")
        .find(|s| s.starts_with("table,percentiles-timer.latency,"))
        .expect("the percentiles table")
        .lines()
        .collect();
    assert_eq!(section[1], format!("statistic,idle,{loaded}"));
    assert!(section.contains(&format!("samples,{idle_n},{loaded_n}").as_str()), "{section:?}");
    assert!(section.contains(&format!("max,{idle_max},{loaded_max}").as_str()), "{section:?}");
    let moments: Vec<&str> = csv.lines().filter(|l| l.starts_with("timer.latency,")).collect();
    assert!(moments.iter().any(|l| l.starts_with("timer.latency,idle,") && l.ends_with(&format!(",{idle_max}"))));
    assert!(moments
        .iter()
        .any(|l| l.starts_with(&format!("timer.latency,{loaded},")) && l.ends_with(&format!(",{loaded_max}"))));

    let json: serde_json::Value = serde_json::from_str(&JsonReport.render(&set).unwrap()).unwrap();
    let scenarios: Vec<&str> =
        json["configurations"].as_array().unwrap().iter().map(|c| c["scenario"].as_str().unwrap()).collect();
    assert_eq!(scenarios, ["idle", loaded]);
    let table = json["tables"].as_array().unwrap().iter().find(|t| t["id"] == "percentiles-timer.latency").unwrap();
    assert_eq!(table["columns"], serde_json::json!(["statistic", "idle", loaded]));
    let max_row = table["csv_rows"].as_array().unwrap().iter().find(|r| r[0] == "max").unwrap();
    assert_eq!(*max_row, serde_json::json!(["max", idle_max.to_string(), loaded_max.to_string()]));
}

#[test]
fn json_of_one_scenario() {
    let text = JsonReport.render(&set(&[ONE])).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(value["schema"], "rtlab.report/1");
    assert_eq!(value["verdict"], serde_json::Value::Null);
    insta::assert_snapshot!("json_one", text);
}

#[test]
fn json_of_two_scenarios_with_a_verdict() {
    let set = with_requirement(set(&[TWO]), "timer p99 < 50us");
    let text = JsonReport.render(&set).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(value["verdict"]["met"], true);
    assert_eq!(value["configurations"].as_array().unwrap().len(), 2);
    insta::assert_snapshot!("json_two", text);
}

#[test]
fn verdict_just_below_and_just_above_the_observed_max() {
    for names in [&[ONE][..], &[TWO][..], &[ONE, TWO][..]] {
        let max = observed_max(&set(names));
        let below = parse_requirement(&format!("timer max < {}ns", max)).unwrap();
        let above = parse_requirement(&format!("timer max < {}ns", max + 1)).unwrap();
        let set = set(names);
        let v = judge(&set, &[below]).unwrap();
        assert!(!v.met, "{names:?}: a bound equal to the max is not met: {}", v.summary);
        assert!(v.summary.starts_with("NOT MET"), "{}", v.summary);
        let failed: Vec<_> = v.checks.iter().filter(|c| !c.met).collect();
        assert_eq!(failed.len(), 1, "only the configuration that holds the max fails");
        assert_eq!(failed[0].margin_ns, Some(0));
        assert_eq!(failed[0].samples_above_bound, 1);
        let v = judge(&set, &[above]).unwrap();
        assert!(v.met, "{names:?}: {}", v.summary);
        assert!(v.checks.iter().all(|c| c.samples_above_bound == 0 && c.exceedance_interval_s.is_none()));
        assert!(v.summary.contains("0.0 µs below"), "{}", v.summary);
    }
}

#[test]
fn every_format_carries_the_verdict_first() {
    let set = with_requirement(set(&[TWO]), "timer max < 500us");
    let md = MarkdownReport.render(&set).unwrap();
    let verdict_at = md.find("## Verdict: NOT MET").unwrap();
    assert!(verdict_at < md.find("## Timer latency").unwrap());
    let csv = CsvReport.render(&set).unwrap();
    assert!(
        csv.starts_with("table,verdict-checks,Requirement checks: NOT MET,\"raw values: times in ns"),
        "{}",
        &csv[..80]
    );
    let json: serde_json::Value = serde_json::from_str(&JsonReport.render(&set).unwrap()).unwrap();
    assert_eq!(json["verdict"]["met"], false);
    assert_eq!(json["tables"][0]["id"], "verdict-checks");
}
