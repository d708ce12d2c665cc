//! `rtlab report --format hdr-log|junit|openmetrics|cyclictest-hist|cyclictest-json` through
//! the binary, on the saved fixtures of rtlab-report: what goes to stdout or to `-o FILE`,
//! and the exit codes (0, 1 when a requirement is not met with the document still written,
//! 2 for what cannot be exported, with one line saying why). The documents' contents are
//! checked by rtlab-report's tests/export_interchange.rs and export_cyclictest.rs.

mod common;

use common::rtlab;
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../rtlab-report/tests/fixtures").join(name)
}

const TWO_CPUS: &str = "simulated-2cpu.run.json";
const TWO_SCENARIOS: &str = "simulated-two-scenarios.run.json";

/// Exit code, stdout, stderr of `rtlab report FIXTURE ARGS...`.
fn report(name: &str, args: &[&str]) -> (i32, String, String) {
    let output = rtlab().arg("report").arg(fixture(name)).args(args).output().unwrap();
    (
        output.status.code().expect("an exit code"),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

#[test]
fn junit_not_met_exits_1_and_still_writes_the_xml() {
    let (code, stdout, stderr) = report(TWO_CPUS, &["--format", "junit", "--require", "timer max < 500us"]);
    assert_eq!(code, 1, "stderr: {stderr}");
    assert!(stderr.is_empty(), "{stderr}");
    assert!(stdout.starts_with(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"rtlab\" tests=\"1\" failures=\"1\""
    ));
    assert!(
        stdout.contains("<failure message=\"timer.latency max was 2936.598 µs under idle; required &lt; 500.000 µs")
    );
    assert!(stdout.ends_with("</testsuites>\n"));
}

#[test]
fn junit_met_exits_0() {
    let (code, stdout, _) = report(TWO_CPUS, &["--format", "junit", "--require", "timer max < 5ms"]);
    assert_eq!(code, 0);
    assert!(stdout.contains("tests=\"1\" failures=\"0\" errors=\"0\""), "{stdout}");
}

#[test]
fn junit_without_requirements_exits_2_with_one_line() {
    let (code, stdout, stderr) = report(TWO_CPUS, &["--format", "junit"]);
    assert_eq!(code, 2);
    assert!(stdout.is_empty(), "{stdout}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("rtlab: error: ") && stderr.contains("junit needs requirements: give --require"));
}

#[test]
fn openmetrics_goes_to_stdout_or_to_the_output_file() {
    let (code, stdout, stderr) = report(TWO_CPUS, &["--format", "openmetrics"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.starts_with("# TYPE rtlab_sample_seconds summary\n"), "{stdout}");
    assert!(stdout.ends_with("# EOF\n"));

    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("rtlab.prom");
    let (code, text, stderr) =
        report(TWO_CPUS, &["--format", "openmetrics", "--require", "timer p99 < 1ms", "-o", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(written.contains(
        "rtlab_requirement_met{run=\"fixture\",scenario=\"idle\",requirement=\"timer.latency p99 < 1ms\"} 1\n"
    ));
    // The same exposition, with the verdict's families before "# EOF".
    assert!(written.starts_with(stdout.strip_suffix("# EOF\n").unwrap()));
    // The terminal gets the summary and where the file went, not the exposition.
    assert!(text.contains(&format!("Report: {}", file.display())), "{text}");
    assert!(!text.contains("# EOF"));
}

#[test]
fn hdr_log_of_a_two_scenario_run_needs_a_scenario() {
    let (code, stdout, stderr) = report(TWO_SCENARIOS, &["--format", "hdr-log"]);
    assert_eq!(code, 2);
    assert!(stdout.is_empty());
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("several scenarios (idle, cpu:threads=1+proc-read): choose one with --scenario"),
        "{stderr}"
    );

    let (code, stdout, stderr) = report(TWO_SCENARIOS, &["--format", "hdr-log", "--scenario", "idle"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.starts_with("#[Histogram log format version 1.3]\n"));
    assert_eq!(stdout.lines().filter(|l| l.starts_with("Tag=cpu")).count(), 2);
}

/// cyclictest has no scenarios: its files of a two-scenario run need `--scenario`, and each
/// then holds that scenario's threads alone.
#[test]
fn cyclictest_of_a_two_scenario_run_needs_a_scenario() {
    for format in ["cyclictest-hist", "cyclictest-json"] {
        let (code, stdout, stderr) = report(TWO_SCENARIOS, &["--format", format]);
        assert_eq!(code, 2, "{format}: {stderr}");
        assert!(stdout.is_empty(), "{stdout}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert_eq!(
            stderr,
            format!(
                "rtlab: error: --format {format}: the run has several scenarios (idle, cpu:threads=1+proc-read): \
                 choose one with --scenario\n"
            )
        );
    }
    let mut maxima = Vec::new();
    for scenario in ["idle", "cpu:threads=1+proc-read"] {
        let (code, stdout, stderr) = report(TWO_SCENARIOS, &["--format", "cyclictest-json", "--scenario", scenario]);
        assert_eq!(code, 0, "{stderr}");
        let value: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(value["num_threads"], 2);
        maxima.push((value["thread"]["0"]["max"].clone(), value["thread"]["1"]["max"].clone()));
    }
    // The fixture's maxima per scenario and CPU, in whole µs as cyclictest prints them.
    assert_eq!(maxima, [(2697.into(), 2815.into()), (2135.into(), 2992.into())]);
}

#[test]
fn hdr_log_names_the_metrics_there_are() {
    let (code, _, stderr) = report(TWO_CPUS, &["--format", "hdr-log", "--metric", "net"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("no metric \"net\" in scenario \"idle\" (it has timer.latency, timer.jitter)"), "{stderr}");
}
