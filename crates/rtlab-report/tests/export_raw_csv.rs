//! `rtlab export --format csv` (rtlab_formats::raw_csv) on the saved fixtures, given small
//! raw sample files of their own: the exact CSV, and that the samples of a run's scenarios
//! stay apart (the default `rtlab run` measures `idle`, then `mixed`, with the same probe on
//! the same CPUs). A real run's export is checked by crates/rtlab/tests (simulated.rs,
//! real_runs.rs).

mod common;

use common::fixture_path;
use rtlab_formats::raw_csv::{export_raw_csv, HEADER};
use rtlab_results::raw::{header, RawSample, FLAG_OVERRUN};
use rtlab_results::run::RunResult;
use std::path::Path;

/// The fixture with a raw file for each `timer.latency` measurement, written under `dir`:
/// two samples per file, whose values say which scenario and CPU they belong to
/// (scenario index × 1000 + CPU × 100 + sample), the second of the loaded CPU 1 overran.
fn with_raw_files(name: &str, dir: &Path) -> RunResult {
    let mut run = RunResult::load(&fixture_path(name)).expect("the fixture loads");
    let scenarios: Vec<String> = run.scenarios.iter().map(|s| s.name.clone()).collect();
    for m in run.measurements.iter_mut().filter(|m| m.metric == "timer.latency") {
        let index = scenarios.iter().position(|s| *s == m.scenario).unwrap();
        let relative = format!("samples/{}/timer-cpu{}.bin", index + 1, m.cpu);
        let file = dir.join(&relative);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let mut bytes = header().to_vec();
        for i in 0..2u64 {
            let overran = index == 1 && m.cpu == 1 && i == 1;
            let sample = RawSample {
                expected_ns: 1_000_000 * (i + 1),
                value_ns: (index as i64 * 1000) + (m.cpu as i64 * 100) + i as i64,
                cpu: m.cpu as u32,
                flags: if overran { FLAG_OVERRUN } else { 0 },
            };
            bytes.extend_from_slice(&sample.to_bytes());
        }
        std::fs::write(&file, bytes).unwrap();
        m.raw_file = Some(relative);
        m.raw_samples = Some(2);
    }
    run
}

fn export(run: &RunResult, dir: &Path) -> String {
    let mut out = Vec::new();
    let rows = export_raw_csv(run, dir, &mut out).expect("the export succeeds");
    let text = String::from_utf8(out).unwrap();
    assert_eq!(rows as usize, text.lines().count() - 1, "one row per sample, after the header");
    text
}

#[test]
fn every_row_names_its_scenario() {
    let tmp = tempfile::tempdir().unwrap();
    let run = with_raw_files("simulated-two-scenarios.run.json", tmp.path());
    let text = export(&run, tmp.path());
    assert_eq!(
        text,
        "scenario,probe,metric,cpu,expected_ns,value_ns,overrun\n\
         idle,timer,timer.latency,0,1000000,0,0\n\
         idle,timer,timer.latency,0,2000000,1,0\n\
         idle,timer,timer.latency,1,1000000,100,0\n\
         idle,timer,timer.latency,1,2000000,101,0\n\
         cpu:threads=1+proc-read,timer,timer.latency,0,1000000,1000,0\n\
         cpu:threads=1+proc-read,timer,timer.latency,0,2000000,1001,0\n\
         cpu:threads=1+proc-read,timer,timer.latency,1,1000000,1100,0\n\
         cpu:threads=1+proc-read,timer,timer.latency,1,2000000,1101,1\n"
    );
    // Each (probe, metric, cpu, expected_ns) occurs once per scenario: without the scenario
    // column the rows could not be told apart.
    let keys: std::collections::HashSet<Vec<&str>> =
        text.lines().skip(1).map(|l| l.split(',').skip(1).take(4).collect()).collect();
    assert_eq!(keys.len(), 4, "{text}");
}

#[test]
fn a_single_scenario_run_has_the_same_columns() {
    let tmp = tempfile::tempdir().unwrap();
    let run = with_raw_files("simulated-2cpu.run.json", tmp.path());
    let text = export(&run, tmp.path());
    assert_eq!(HEADER, "scenario,probe,metric,cpu,expected_ns,value_ns,overrun");
    assert_eq!(
        text,
        "scenario,probe,metric,cpu,expected_ns,value_ns,overrun\n\
         idle,timer,timer.latency,0,1000000,0,0\n\
         idle,timer,timer.latency,0,2000000,1,0\n\
         idle,timer,timer.latency,1,1000000,100,0\n\
         idle,timer,timer.latency,1,2000000,101,0\n"
    );
}

#[test]
fn a_scenario_name_with_a_comma_or_a_quote_is_quoted() {
    let tmp = tempfile::tempdir().unwrap();
    let mut run = with_raw_files("simulated-two-scenarios.run.json", tmp.path());
    let loaded = run.scenarios[1].name.clone();
    for m in run.measurements.iter_mut().filter(|m| m.scenario == loaded) {
        m.scenario = "cpu, \"hot\"".into();
    }
    let text = export(&run, tmp.path());
    assert!(text.contains("\n\"cpu, \"\"hot\"\"\",timer,timer.latency,1,2000000,1101,1\n"), "{text}");
    assert!(text.contains("\nidle,timer,timer.latency,1,2000000,101,0\n"), "{text}");
}
