//! Snapshot tests of the exporters on a saved result (a run.json made by a simulated run,
//! `rtlab run --simulate 42 --samples 5000 --label fixture`, under tests/fixtures/) and on
//! variants of it built in code, one per branch of the output: single CPU, real-time,
//! interrupted, host warnings, lost raw samples, no samples at all. A second fixture holds
//! two scenarios (`--simulate 7 --samples 3000 --load idle,cpu:threads=1+proc-read`, with
//! activity figures written in by hand, since a simulated run records none).

use rtlab_analysis::units::thousands;
use rtlab_analysis::{LatencyHistogram, Moments};
use rtlab_report::json::JsonSummary;
use rtlab_report::terminal::TerminalSummary;
use rtlab_report::Exporter;
use rtlab_results::host::Distortion;
use rtlab_results::run::RunResult;
use std::path::{Path, PathBuf};

fn fixture_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

fn fixture() -> RunResult {
    RunResult::load(&fixture_path("simulated-2cpu.run.json")).expect("the fixture loads")
}

/// One CPU, real-time conditions obtained, interrupted, with host warnings and lost raw
/// samples: every optional line of the terminal summary.
fn variant() -> RunResult {
    let mut run = fixture();
    run.label = "variant".into();
    run.simulated = false;
    run.interrupted = true;
    run.realtime.real_time_results = true;
    run.realtime.memory_locked = true;
    run.realtime.dma_latency_held = true;
    run.realtime.notes.clear();
    run.experiment.cpus = vec![0];
    run.measurements.retain(|m| m.cpu == 0);
    for m in run.measurements.iter_mut().filter(|m| m.metric == "timer.latency") {
        m.lost = 1234;
    }
    run.warnings = vec![
        Distortion {
            code: "virtual-machine".into(),
            message: "running in a virtual machine: the hypervisor can delay wake-ups by milliseconds".into(),
        },
        Distortion { code: "no-isolated-cpus".into(), message: "measuring CPU 0 is not isolated".into() },
    ];
    run.check().expect("the variant is consistent");
    run
}

/// A run stopped before its first sample.
fn empty() -> RunResult {
    let mut run = fixture();
    run.label = "empty".into();
    run.interrupted = true;
    run.experiment.cpus = vec![0];
    run.measurements.retain(|m| m.cpu == 0);
    let empty = LatencyHistogram::new(run.experiment.histogram_max_ns).unwrap().encode().unwrap();
    for m in &mut run.measurements {
        m.count = 0;
        m.cycles = 0;
        m.overruns = 0;
        m.summary = None;
        m.moments = Moments::new();
        m.histogram = empty.clone();
        m.per_second_max_ns.clear();
    }
    run.check().expect("an empty run is consistent");
    run
}

#[test]
fn terminal_summary_of_the_fixture() {
    insta::assert_snapshot!("terminal_fixture", TerminalSummary.export(&fixture()).unwrap());
}

#[test]
fn json_summary_of_the_fixture() {
    let text = JsonSummary::default().export(&fixture()).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(value["schema"], "rtlab.summary/1");
    insta::assert_snapshot!("json_fixture", text);
}

#[test]
fn json_summary_names_the_run_json() {
    let exporter = JsonSummary { run_json: Some("results/x/run.json".into()) };
    let value: serde_json::Value = serde_json::from_str(&exporter.export(&fixture()).unwrap()).unwrap();
    assert_eq!(value["run_json"], "results/x/run.json");
}

#[test]
fn terminal_summary_of_the_variant() {
    let text = TerminalSummary.export(&variant()).unwrap();
    // One CPU: no "all" row.
    assert!(!text.contains("   all "), "{text}");
    insta::assert_snapshot!("terminal_variant", text);
}

#[test]
fn json_summary_of_the_variant() {
    insta::assert_snapshot!("json_variant", JsonSummary::default().export(&variant()).unwrap());
}

#[test]
fn terminal_summary_of_an_empty_run() {
    insta::assert_snapshot!("terminal_empty", TerminalSummary.export(&empty()).unwrap());
}

#[test]
fn json_summary_of_an_empty_run() {
    let text = JsonSummary::default().export(&empty()).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(value["conclusion"].is_null());
    assert!(value["exceedance"].is_null());
    insta::assert_snapshot!("json_empty", text);
}

/// The exporters read only the saved result: the same input gives the same output.
#[test]
fn exporters_are_pure() {
    let run = fixture();
    assert_eq!(TerminalSummary.export(&run).unwrap(), TerminalSummary.export(&run.clone()).unwrap());
    assert_eq!(JsonSummary::default().export(&run).unwrap(), JsonSummary::default().export(&fixture()).unwrap());
}

/// The JSON summary agrees with run.json: per-CPU rows are the saved summaries, and the
/// row of all CPUs combines them exactly (counts add up; min and max are the extremes).
#[test]
fn json_summary_agrees_with_the_measurements() {
    let run = fixture();
    let doc: serde_json::Value = serde_json::from_str(&JsonSummary::default().export(&run).unwrap()).unwrap();
    for metric in doc["scenarios"][0]["metrics"].as_array().unwrap() {
        let name = metric["metric"].as_str().unwrap();
        let saved: Vec<_> = run.measurements_of("idle", name).collect();
        let rows = metric["rows"].as_array().unwrap();
        assert_eq!(rows.len(), saved.len() + 1);
        for (row, m) in rows.iter().zip(&saved) {
            assert_eq!(row["cpu"], m.cpu);
            assert_eq!(row["count"], m.count);
            assert_eq!(row["summary"], serde_json::to_value(&m.summary).unwrap());
        }
        let all = rows.last().unwrap();
        assert!(all["cpu"].is_null());
        assert_eq!(all["count"].as_u64().unwrap(), saved.iter().map(|m| m.count).sum::<u64>());
        assert_eq!(all["overruns"].as_u64().unwrap(), saved.iter().map(|m| m.overruns).sum::<u64>());
        let s = &all["summary"];
        let min = saved.iter().map(|m| m.summary.as_ref().unwrap().min).min().unwrap();
        let max = saved.iter().map(|m| m.summary.as_ref().unwrap().max).max().unwrap();
        assert_eq!(s["min"], min);
        assert_eq!(s["max"], max);
        let keys = ["min", "p50", "p90", "p99", "p99.9", "p99.99", "p99.999", "max"];
        let values: Vec<i64> = keys.iter().map(|k| s[*k].as_i64().unwrap()).collect();
        assert!(values.windows(2).all(|w| w[0] <= w[1]), "combined summary unordered: {s}");
        // Each combined percentile lies between the CPUs' own.
        for key in &keys[1..7] {
            let own: Vec<i64> = saved
                .iter()
                .map(|m| serde_json::to_value(m.summary.as_ref().unwrap()).unwrap()[*key].as_i64().unwrap())
                .collect();
            let v = s[*key].as_i64().unwrap();
            let (lo, hi) = (*own.iter().min().unwrap(), *own.iter().max().unwrap());
            // Within the histogram's precision (0.1 %).
            assert!(
                v as f64 >= lo as f64 * 0.999 && v as f64 <= hi as f64 * 1.001,
                "{name} {key}: {v} outside [{lo}, {hi}]"
            );
        }
    }
}

/// save then load gives the same result, and the file is written atomically (nothing
/// else left in the directory).
#[test]
fn save_and_load_round_trip() {
    let run = fixture();
    let dir = tempfile::tempdir().unwrap();
    let path = run.save(dir.path()).unwrap();
    assert_eq!(path, dir.path().join("run.json"));
    let back = RunResult::load(dir.path()).unwrap();
    assert_eq!(back, run);
    let again = RunResult::load(&path).unwrap();
    assert_eq!(again, run);
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["run.json"]);
    // Saving over an existing run.json replaces it whole.
    let mut changed = run.clone();
    changed.label = "changed".into();
    changed.save(dir.path()).unwrap();
    assert_eq!(RunResult::load(dir.path()).unwrap().label, "changed");
}

fn two_scenarios() -> RunResult {
    RunResult::load(&fixture_path("simulated-two-scenarios.run.json")).expect("the fixture loads")
}

#[test]
fn terminal_summary_of_two_scenarios() {
    insta::assert_snapshot!("terminal_two_scenarios", TerminalSummary.export(&two_scenarios()).unwrap());
}

#[test]
fn json_summary_of_two_scenarios() {
    insta::assert_snapshot!("json_two_scenarios", JsonSummary::default().export(&two_scenarios()).unwrap());
}

/// Side by side: one column per scenario, the figures of each scenario's all-CPUs row; the
/// conclusion speaks of the worse scenario.
#[test]
fn two_scenarios_side_by_side_and_worst_conclusion() {
    let run = two_scenarios();
    let digest = rtlab_report::digest::RunDigest::of(&run).unwrap();
    assert_eq!(digest.scenarios.len(), 2);
    assert!(!digest.scenarios[0].loaded && digest.scenarios[1].loaded);
    let worst = digest.scenarios.iter().max_by_key(|s| s.metrics[0].overall().summary.as_ref().unwrap().max).unwrap();
    let conclusion = digest.conclusion.as_ref().unwrap();
    assert_eq!(conclusion.scenario, worst.name);
    let text = TerminalSummary.export(&run).unwrap();
    let header = text.lines().find(|l| l.starts_with("Side by side")).expect("a side-by-side table");
    assert!(header.contains("idle") && header.contains("cpu:threads=1+proc-read"), "{header}");
    for s in &digest.scenarios {
        let count = s.metrics[0].overall().count;
        let samples_row = text.lines().find(|l| l.trim_start().starts_with("Timer latency") && l.contains("samples"));
        let samples_row = samples_row.expect("a samples row");
        assert!(samples_row.contains(&thousands(count)), "{samples_row} lacks {count}");
    }
    assert!(text.contains("Loads achieved:") && text.contains("proc-read"));
    assert!(text.contains("IRQ 24 95k/s") && text.contains("NET_RX 180k/s"), "{text}");
}

/// A measurement naming a scenario that run.json does not have is refused.
#[test]
fn measurement_of_an_unknown_scenario_is_refused() {
    let mut run = two_scenarios();
    run.measurements[0].scenario = "nowhere".into();
    let err = run.check().unwrap_err();
    assert!(err.contains("nowhere"), "{err}");
    let mut run = two_scenarios();
    run.scenarios[1].name = "idle".into();
    assert!(run.check().unwrap_err().contains("twice"));
}
