//! `rtlab run --raw` on a file system that fills up: the raw samples stop before it is
//! full, run.json and report.html are written and marked, and the run exits 3. A real
//! 2 MiB tmpfs is mounted for it, so the test needs root (CI runs as root: there a missing
//! privilege is a failure, not a skip).

mod common;

use common::tmpfs::{may_mount, Tmpfs};
use common::{measurements, rtlab, run_json, u};
use std::path::PathBuf;

#[test]
fn raw_samples_stop_before_the_file_system_is_full_and_the_run_is_saved() {
    if !may_mount() {
        return;
    }
    let fs = Tmpfs::mount("2m");
    let out = fs.path().join("out");
    // 2 CPUs at 20 kHz for 10 s: 400,000 samples, 9.6 MB of raw samples for 2 MiB. The
    // simulated clock makes it take a second.
    let output = rtlab()
        .args(["run", "--simulate", "7", "--raw", "--load", "idle", "--interval", "50us", "--duration", "10s"])
        .args(["--quiet", "--output"])
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "exit code; stderr: {stderr}");
    assert!(stderr.contains("raw samples stopped at"), "{stderr}");
    assert!(stderr.contains("the results, marked so, are in"), "{stderr}");

    // run.json is complete and consistent (rtlab's own reader checks it).
    let run = run_json(&out);
    rtlab_results::run::RunResult::load(&out.join("run.json")).expect("run.json loads");
    let why = run["scenarios"][0]["raw_stopped"].as_str().expect("the scenario says why raw samples stopped");
    assert!(why.starts_with("raw samples stopped at "), "{why}");
    assert!(
        why.contains("the file system had less than 1.0 MiB free, the reserve kept for run.json and report.html"),
        "{why}"
    );
    assert!(why.contains("samples not written (counted as lost"), "{why}");

    // Counts add up: every sample is in the histogram; in the raw file or not written.
    let latency = measurements(&run, "timer.latency");
    assert_eq!(latency.len(), 2);
    let (mut written, mut not_written) = (0, 0);
    for m in &latency {
        let count = u(m, "count");
        assert_eq!(count + u(m, "overruns"), 200_000, "the histograms hold every sample");
        assert_eq!(u(m, "raw_samples") + u(m, "lost"), count, "raw_samples + lost == count");
        let file = out.join(m["raw_file"].as_str().unwrap());
        let records = rtlab_results::raw::read_all(&file).expect("a raw file of whole records");
        assert_eq!(records.len() as u64, u(m, "raw_samples"), "{}", file.display());
        written += u(m, "raw_samples");
        // Ring overflows (the simulated clock outruns the writer) are lost too; the rest
        // of the lost samples were not written.
        let details = &m["details"];
        if !details["raw_not_written"].is_null() {
            assert!(u(details, "raw_not_written") <= u(m, "lost"));
            not_written += u(details, "raw_not_written");
            assert!(details["raw_stopped"].as_str().unwrap().contains("the reserve kept for run.json"));
        }
    }
    assert!(written > 0, "some samples were written before the reserve was reached");
    assert!(not_written > 0, "samples were not written");
    assert!(why.contains(&thousands(not_written)), "{why} should count {not_written}");
    assert!(why.starts_with(&format!("raw samples stopped at {}:", thousands(written))), "{why}");
    let jitter = measurements(&run, "timer.jitter");
    for (l, j) in latency.iter().zip(&jitter) {
        assert_eq!(u(j, "lost"), u(l, "lost"), "the jitter metric has its thread's lost");
    }

    // The report was written, and shows the warning.
    let html = std::fs::read_to_string(out.join("report.html")).expect("report.html");
    assert!(html.contains("</html>"), "report.html is whole");
    assert!(html.contains("INCOMPLETE"), "the report has the incomplete banner");
    assert!(html.contains("raw samples stopped at"), "the report shows why raw samples stopped");

    // The reserve held: the file system is not full.
    let space = rtlab_sys::statvfs::space_of(&std::fs::File::open(&out).unwrap()).unwrap();
    assert!(space.available_bytes > 0, "the tmpfs is full");

    // The saved samples export.
    let export = rtlab().args(["export"]).arg(&out).output().unwrap();
    assert!(export.status.success(), "export: {}", String::from_utf8_lossy(&export.stderr));
    assert_eq!(export.stdout.iter().filter(|&&b| b == b'\n').count() as u64, written + 1, "CSV header + rows");
    drop(fs);
}

#[test]
fn a_run_that_fits_says_nothing_about_the_file_system() {
    if !may_mount() {
        return;
    }
    let fs = Tmpfs::mount("2m");
    let out: PathBuf = fs.path().join("out");
    // 2 × 2,000 samples: 96 KB of raw samples.
    rtlab()
        .args(["run", "--simulate", "7", "--raw", "--load", "idle", "--samples", "2000", "--quiet", "--output"])
        .arg(&out)
        .assert()
        .code(0);
    let run = run_json(&out);
    assert!(run["scenarios"][0].get("raw_stopped").is_none(), "{}", run["scenarios"][0]);
    for m in measurements(&run, "timer.latency") {
        assert_eq!(u(m, "raw_samples") + u(m, "lost"), u(m, "count"));
        assert!(m["details"].get("raw_not_written").is_none());
    }
}

/// 12345678 -> "12,345,678", as the messages write counts.
fn thousands(n: u64) -> String {
    rtlab_analysis::units::thousands(n)
}
