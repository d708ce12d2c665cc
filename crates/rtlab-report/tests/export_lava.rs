//! `--format lava` (rtlab_formats::export::lava) on the saved fixtures: one test set per
//! scenario, every statistic of every thread with its measurement, pWCET figures handed in
//! by the caller, and the requirements judged as `rtlab report --require` does. Snapshots;
//! crates/rtlab/tests/lava_cli.rs runs LAVA's real scripts on the binary's output.

mod common;

use common::fixture_path;
use rtlab_analysis::requirement::parse_requirement;
use rtlab_formats::export::lava::{run_lines, LavaReport, LavaResult, Line, PwcetFigure};
use rtlab_report::verdict::judge;
use rtlab_results::run::RunResult;
use rtlab_results::set::{ReportExporter, ReportSet, SourcedRun};

fn judged(name: &str, requirements: &[&str]) -> ReportSet {
    let run = RunResult::load(&fixture_path(name)).expect("the fixture loads");
    let mut set = ReportSet { runs: vec![SourcedRun { source: name.into(), run }], verdict: None };
    let requirements: Vec<_> = requirements.iter().map(|r| parse_requirement(r).unwrap()).collect();
    if !requirements.is_empty() {
        set.verdict = Some(judge(&set, &requirements).unwrap());
    }
    set
}

#[test]
fn lava_of_two_scenarios_with_requirements_and_pwcet() {
    let set = judged("simulated-two-scenarios.run.json", &["timer max < 2900us", "timer p50 < 1ms"]);
    let label = set.runs[0].run.label.clone();
    let pwcet = vec![
        PwcetFigure {
            run_label: label.clone(),
            scenario: "idle".into(),
            metric: "timer.latency".into(),
            probability: 1e-9,
            value: Ok(3_456_789.4),
        },
        PwcetFigure {
            run_label: label,
            scenario: "cpu:threads=1+proc-read".into(),
            metric: "timer.latency".into(),
            probability: 1e-9,
            value: Err("not defensible from this run — only 4 block maxima".into()),
        },
    ];
    let text = LavaReport { pwcet: pwcet.clone() }.render(&set).unwrap();
    insta::assert_snapshot!("lava_two_scenarios", text);
    // Sets balanced, one per scenario; the failed check fails with its reason first.
    let lines = run_lines(&set, &pwcet);
    let starts = lines.iter().filter(|l| matches!(l, Line::StartSet(_))).count();
    let stops = lines.iter().filter(|l| matches!(l, Line::StopSet)).count();
    assert_eq!((starts, stops), (2, 2));
    assert!(lines.iter().any(|l| matches!(l, Line::Case(c) if c.result == LavaResult::Fail && c.reason.is_some())));
}

#[test]
fn lava_of_a_run_without_requirements_is_measurements_only() {
    let set = judged("simulated-2cpu.run.json", &[]);
    let text = LavaReport::default().render(&set).unwrap();
    insta::assert_snapshot!("lava_two_cpus", text);
    assert!(text.lines().filter(|l| l.starts_with("<LAVA_SIGNAL_TESTCASE")).all(|l| l.contains("RESULT=pass")));
}
