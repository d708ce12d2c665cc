//! Argument and input validation: every bad option or damaged input is refused before
//! anything starts, with exit code 2, a one-line error naming the problem, and no results
//! directory left behind.

mod common;

use common::rtlab;
use std::path::Path;
use std::time::Duration;

/// Entries of a directory (to prove that nothing was created).
fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect()
}

/// Runs rtlab with `args` in an empty working directory and checks: exit 2, the error on
/// the first line of stderr (rtlab's own errors are exactly one line; clap's add a usage
/// hint below it), every `needles` in that line, nothing on stdout, and the working
/// directory still empty.
fn refused(args: &[&str], needles: &[&str]) -> String {
    let cwd = tempfile::tempdir().unwrap();
    let output = rtlab().current_dir(cwd.path()).args(args).timeout(Duration::from_secs(15)).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(output.status.code(), Some(2), "rtlab {args:?}: exit code; stderr:\n{stderr}\nstdout:\n{stdout}");
    assert!(stdout.is_empty(), "rtlab {args:?}: wrote to stdout:\n{stdout}");
    let first = stderr.lines().next().unwrap_or_default().to_string();
    if first.starts_with("rtlab: error:") {
        assert_eq!(stderr.lines().count(), 1, "rtlab {args:?}: the error is not one line:\n{stderr}");
    } else {
        assert!(first.starts_with("error:"), "rtlab {args:?}: stderr does not start with an error line:\n{stderr}");
    }
    for needle in needles {
        assert!(first.contains(needle), "rtlab {args:?}: error line does not name {needle:?}: {first}");
    }
    assert!(entries(cwd.path()).is_empty(), "rtlab {args:?}: created {:?}", entries(cwd.path()));
    first
}

/// Each bad `run` option, both with the default results directory (under the working
/// directory) and with an explicit `--output`.
fn refused_run(options: &[&str], needles: &[&str]) {
    let mut args = vec!["run", "--load", "idle", "--quiet"];
    args.extend_from_slice(options);
    refused(&args, needles);
    args.extend_from_slice(&["--output", "out"]);
    refused(&args, needles);
}

#[test]
fn interval_zero() {
    refused_run(&["--interval", "0"], &["--interval"]);
}

#[test]
fn interval_zero_with_unit() {
    refused_run(&["--interval", "0us"], &["--interval"]);
}

#[test]
fn interval_not_a_time() {
    refused_run(&["--interval", "fast"], &["--interval", "fast"]);
}

#[test]
fn priority_zero() {
    refused_run(&["--priority", "0"], &["--priority", "0"]);
}

#[test]
fn priority_above_99() {
    refused_run(&["--priority", "100"], &["--priority", "100"]);
}

#[test]
fn priority_negative() {
    refused_run(&["--priority", "-3"], &["--priority", "-3"]);
}

#[test]
fn priority_with_policy_other() {
    refused_run(&["--policy", "other", "--priority", "5"], &["--priority", "5"]);
}

#[test]
fn policy_unknown() {
    refused_run(&["--policy", "deadline"], &["deadline"]);
}

#[test]
fn cpu_not_online() {
    refused_run(&["--cpus", "99"], &["--cpus", "99"]);
}

#[test]
fn cpu_list_malformed() {
    refused_run(&["--cpus", "x"], &["--cpus", "x"]);
}

#[test]
fn duration_unknown_unit() {
    refused_run(&["--duration", "10parsecs"], &["--duration", "10parsecs"]);
}

#[test]
fn duration_without_unit() {
    refused_run(&["--duration", "10"], &["--duration", "unit"]);
}

#[test]
fn duration_shorter_than_interval() {
    refused_run(&["--duration", "500us", "--interval", "1ms"], &["--duration"]);
}

#[test]
fn duration_and_samples_together() {
    refused_run(&["--duration", "5s", "--samples", "10"], &["--duration", "--samples"]);
}

#[test]
fn samples_zero() {
    refused_run(&["--samples", "0"], &["--samples"]);
}

#[test]
fn samples_not_a_number() {
    refused_run(&["--samples", "many"], &["many"]);
}

#[test]
fn label_with_path() {
    refused_run(&["--label", "../x"], &["--label", "../x"]);
}

#[test]
fn histogram_max_too_small() {
    refused_run(&["--histogram-max", "0ns"], &["--histogram-max"]);
}

#[test]
fn unknown_flag() {
    refused(&["run", "--bogus"], &["--bogus"]);
    refused(&["--bogus"], &["--bogus"]);
}

#[test]
fn unknown_subcommand() {
    refused(&["frobnicate"], &["frobnicate"]);
}

#[test]
fn output_already_holding_a_run_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("run.json"), "{}").unwrap();
    let output =
        rtlab().args(["run", "--load", "idle", "--quiet", "--samples", "10", "--output"]).arg(&out).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.starts_with("rtlab: error:") && stderr.contains("run.json"), "{stderr}");
    // The earlier result is untouched.
    assert_eq!(std::fs::read_to_string(out.join("run.json")).unwrap(), "{}");
}

// ---------------------------------------------------------------------------------------
// export of bad inputs

/// A small valid result (simulated: instant and deterministic) to damage.
fn simulated_result(dir: &Path) -> serde_json::Value {
    rtlab()
        .args(["run", "--simulate", "3", "--samples", "200", "--cpus", "0", "--quiet", "--output"])
        .arg(dir)
        .assert()
        .success();
    common::run_json(dir)
}

/// `export` of `target` fails with exit 2, one error line naming every needle, and leaves
/// no output file behind.
fn export_refused(target: &Path, needles: &[&str]) {
    let work = tempfile::tempdir().unwrap();
    let csv = work.path().join("out.csv");
    let output = rtlab()
        .args(["export", "--format", "csv", "--output"])
        .arg(&csv)
        .arg(target)
        .timeout(Duration::from_secs(15))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "export {}: exit code; stderr:\n{stderr}", target.display());
    assert!(stderr.starts_with("rtlab: error:"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "the error is not one line:\n{stderr}");
    for needle in needles {
        assert!(stderr.contains(needle), "export error does not name {needle:?}: {stderr}");
    }
    assert!(entries(work.path()).is_empty(), "export left {:?} behind", entries(work.path()));
}

/// A path that does not exist is the user's bad input (exit 2), not an environment error.
#[test]
fn export_of_nonexistent_directory() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-result");
    export_refused(&missing, &["no-such-result"]);
}

#[test]
fn export_of_garbage_run_json() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("run.json"), "this is { not JSON").unwrap();
    export_refused(dir.path(), &["run.json", "not JSON"]);
}

#[test]
fn export_of_foreign_json() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("run.json"), r#"{"name": "something else", "values": [1, 2, 3]}"#).unwrap();
    export_refused(dir.path(), &["run.json", "schema"]);
}

#[test]
fn export_of_wrong_schema() {
    let dir = tempfile::tempdir().unwrap();
    let mut run = simulated_result(&dir.path().join("src"));
    run["schema"] = "rtlab.run/99".into();
    let bad = dir.path().join("bad");
    std::fs::create_dir(&bad).unwrap();
    std::fs::write(bad.join("run.json"), serde_json::to_string(&run).unwrap()).unwrap();
    export_refused(&bad, &["rtlab.run/99", "rtlab.run/1"]);
    // The file path works as well as the directory.
    export_refused(&bad.join("run.json"), &["rtlab.run/99"]);
}

#[test]
fn export_of_damaged_histogram() {
    let dir = tempfile::tempdir().unwrap();
    let original = simulated_result(&dir.path().join("src"));
    let data = original["measurements"][0]["histogram"]["data"].as_str().unwrap().to_string();
    let damages = [
        ("truncated", data[..data.len() / 2].to_string()),
        ("not-base64", "!!! not base64 !!!".to_string()),
        ("empty", String::new()),
    ];
    for (name, damaged) in damages {
        let mut run = original.clone();
        run["measurements"][0]["histogram"]["data"] = damaged.into();
        let bad = dir.path().join(name);
        std::fs::create_dir(&bad).unwrap();
        std::fs::write(bad.join("run.json"), serde_json::to_string(&run).unwrap()).unwrap();
        export_refused(&bad, &["histogram", "timer.latency"]);
    }
}

#[test]
fn export_of_inconsistent_counts() {
    let dir = tempfile::tempdir().unwrap();
    let mut run = simulated_result(&dir.path().join("src"));
    let count = run["measurements"][0]["count"].as_u64().unwrap();
    run["measurements"][0]["count"] = (count + 1).into();
    let bad = dir.path().join("bad");
    std::fs::create_dir(&bad).unwrap();
    std::fs::write(bad.join("run.json"), serde_json::to_string(&run).unwrap()).unwrap();
    export_refused(&bad, &["count"]);
}

#[test]
fn export_of_run_without_raw_samples_names_the_option() {
    let dir = tempfile::tempdir().unwrap();
    simulated_result(dir.path());
    export_refused(dir.path(), &["--raw"]);
}

// ---------------------------------------------------------------------------------------
// Bugs found by these tests (ignored until fixed; run with `cargo test -- --ignored`).

/// Regression (was a bug): the default duration (30 s) is not checked against the interval, while the same
/// value given explicitly is: `--interval 1h --duration 30s` exits 2 ("--duration 30s is
/// shorter than one interval"), but `--interval 1h` alone is accepted, records
/// `duration_ns: 30 s` in run.json and measures one 1-hour cycle instead (the simulated
/// clock makes that instant here; a real run sleeps for an hour).
#[test]
fn interval_longer_than_the_default_duration() {
    refused_run(&["--interval", "1h", "--simulate", "1"], &["--interval"]);
}

/// Regression (was a bug): huge values pass validation and abort the process while the probe preallocates
/// its per-second maxima: `run --interval 18446744073709551615` (a bare number is µs,
/// saturated to u64::MAX ns) or `--samples 18446744073709551615` ask
/// `TimerProbe::new` for `vec![i64::MIN; u64::MAX / 1e9]` ("memory allocation of
/// 147573952600 bytes failed", SIGABRT, exit 134, a backtrace instead of a one-line error).
/// Both values fail the 147 GB allocation at once, so this test cannot exhaust memory.
#[test]
fn huge_values_are_refused_not_aborted() {
    refused_run(&["--interval", "18446744073709551615", "--simulate", "1"], &["--interval"]);
    refused_run(&["--samples", "18446744073709551615", "--simulate", "1"], &["--samples"]);
}

/// The probes' options: an unknown probe, a probe twice, an option for a probe that is not
/// run, and malformed values are all refused before anything starts.
#[test]
fn bad_probe_options_are_refused() {
    refused_run(&["--probe", "cyclic"], &["--probe", "cyclic", "unknown probe"]);
    refused_run(&["--probe", "ipc:carrier-pigeon"], &["ipc:carrier-pigeon"]);
    refused_run(&["--probe", "timer,timer"], &["timer", "twice"]);
    refused_run(&["--rate", "20"], &["--rate", "no effect"]);
    refused_run(&["--periods", "1ms"], &["--periods", "no effect"]);
    refused_run(&["--probe", "jitter", "--periods", "5us"], &["--periods", "shorter than 10us"]);
    refused_run(&["--probe", "jitter", "--periods", "300,,1ms"], &["--periods"]);
    refused_run(&["--probe", "sleep", "--sleep", "0s"], &["--sleep"]);
    refused_run(&["--probe", "ipc:futex", "--rate", "fast"], &["--rate", "not a rate"]);
    refused_run(&["--probe", "ipc:futex", "--rate", "1000000"], &["--rate", "100 kHz"]);
    refused_run(&["--probe", "ipc:futex", "--trigger-cpu", "99"], &["--trigger-cpu", "not an online CPU"]);
    refused_run(&["--probe", "ipc:futex", "--trigger-cpu", "left"], &["--trigger-cpu"]);
    refused_run(&["--probe", "net", "--bind", "localhost:80"], &["--bind", "not an IP address"]);
    refused_run(&["--probe", "sweep", "--sweep-of", "timer"], &["--sweep-of", "net or ipc"]);
    refused_run(&["--probe", "sweep", "--rates", "500,0"], &["--rates"]);
    refused_run(&["--probe", "net", "--simulate", "1"], &["--simulate", "net"]);
}
