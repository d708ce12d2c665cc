//! `rtlab history DB` and `rtlab report/compare DB` driven through the binary, on histories
//! made here with known values (docs/history.md).

mod common;

use common::rtlab;
use rtlab_history::HistoryDb;
use rtlab_results::history::fixtures::{self, host};
use rtlab_results::history::{MonitorSettings, Resolution, WindowMetric, WindowRecord};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// 2026-11-20 00:00:00 UTC.
const T0: i64 = 1_795_132_800_000_000_000;
const MINUTE: i64 = 60_000_000_000;
const HOUR: i64 = 60 * MINUTE;
const DAY: i64 = 24 * HOUR;

fn settings() -> MonitorSettings {
    fixtures::settings(&["rtlab", "monitor"])
}

/// CPU `cpu`: 1000 samples from `base` in 10 ns steps.
fn metric(cpu: usize, base: i64) -> WindowMetric {
    fixtures::metric(cpu, (0..1000).map(|j| base + j * 10), 0, 0)
}

fn window(start: i64, base: i64) -> WindowRecord {
    WindowRecord {
        start_ns: start,
        end_ns: start + MINUTE,
        resolution: Resolution::Window,
        merged: 1,
        phase: "idle".into(),
        metrics: vec![metric(0, base), metric(1, base + 1_000)],
        activity: None,
    }
}

/// Kernel 6.1-rt for three windows from T0 (10 to 21 µs), then, a day later, kernel 6.6-rt
/// for three windows 5 µs slower.
fn history(dir: &Path) -> PathBuf {
    let path = dir.join("monitor.db");
    let mut db = HistoryDb::open(&path).unwrap();
    let one = db.begin_session(&host("6.1-rt"), &settings(), T0).unwrap();
    for i in 0..3 {
        db.append_window(one.id, &window(T0 + i * MINUTE, 10_000)).unwrap();
    }
    db.end_session(one.id, T0 + 3 * MINUTE, "SIGTERM").unwrap();
    let two = db.begin_session(&host("6.6-rt"), &settings(), T0 + DAY).unwrap();
    for i in 0..3 {
        db.append_window(two.id, &window(T0 + DAY + i * MINUTE, 15_000)).unwrap();
    }
    path
}

/// Exit code, stdout, stderr.
fn run(args: &[&str], db: &Path) -> (i32, String, String) {
    let output =
        rtlab().args(args.iter().map(|a| if *a == "DB" { db.as_os_str() } else { a.as_ref() })).output().unwrap();
    (
        output.status.code().unwrap(),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

#[test]
fn history_on_the_terminal() {
    let tmp = tempfile::tempdir().unwrap();
    let db = history(tmp.path());
    let (code, out, err) = run(&["history", "DB"], &db);
    assert_eq!((code, err.as_str()), (0, ""));
    let out = out.replace(&db.display().to_string(), "DB");
    assert!(out.contains(
        "Regression check (before and after the kernel change 6.1-rt → 6.6-rt on 2026-11-21 00:00 UTC): p99.9 worse by 5.0 µs"
    ));
    insta::assert_snapshot!(out);
}

#[test]
fn history_html_goes_beside_the_database() {
    let tmp = tempfile::tempdir().unwrap();
    let db = history(tmp.path());
    let (code, out, err) = run(&["history", "DB", "-f", "html"], &db);
    assert_eq!((code, err.as_str()), (0, ""), "{out}");
    let page = tmp.path().join("monitor-history.html");
    assert!(out.ends_with(&format!("History: {}\n", page.display())), "{out}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.ends_with("</html>\n"));
    assert_eq!(html.matches("<svg class=\"rtlab-svg\"").count(), 3);
    // Markdown and JSON go to stdout, or to -o.
    let (code, md, _) = run(&["history", "DB", "--format", "md"], &db);
    assert_eq!(code, 0);
    assert!(md.starts_with("# rtlab history: board-1, timer.latency\n"), "{md}");
    let out_file = tmp.path().join("h.json");
    let (code, _, _) = run(&["history", "DB", "-f", "json", "-o", out_file.to_str().unwrap()], &db);
    assert_eq!(code, 0);
    let json: Value = serde_json::from_str(&std::fs::read_to_string(out_file).unwrap()).unwrap();
    assert_eq!(json["schema"], "rtlab.history/1");
}

#[test]
fn ranges_and_explicit_comparisons() {
    let tmp = tempfile::tempdir().unwrap();
    let db = history(tmp.path());
    let json = |args: &[&str]| -> Value {
        let mut all = vec!["history", "DB", "-f", "json"];
        all.extend_from_slice(args);
        let (code, out, err) = run(&all, &db);
        assert_eq!(code, 0, "{err}");
        serde_json::from_str(&out).unwrap()
    };
    let whole = json(&[]);
    assert_eq!(whole["rows"].as_array().unwrap().len(), 6);
    assert_eq!(whole["range"]["max_ns"], 25_990);
    assert_eq!(whole["days"][0]["max_ns"], 20_990);
    // The second day only: the kernel change is at its start, so nothing comes before it.
    let second = json(&["--since", "2026-11-21"]);
    assert_eq!(second["rows"].as_array().unwrap().len(), 3);
    assert_eq!(second["since_ns"], T0 + DAY);
    assert!(second["regression"].is_null());
    let notes = second["notes"].to_string();
    assert!(notes.contains("No regression check: before and after the kernel change"), "{notes}");
    // RFC 3339 and a date and time name the same instant.
    assert_eq!(json(&["--until", "2026-11-20T00:02:00Z"])["rows"], json(&["--until", "2026-11-20 00:02"])["rows"]);
    assert_eq!(json(&["--until", "2026-11-20T00:02:00Z"])["rows"].as_array().unwrap().len(), 2);
    // Explicit ranges: the first window against the next two of the same kernel.
    let explicit =
        json(&["--before", "..2026-11-20T00:01:00Z", "--after", "2026-11-20T00:01:00Z..2026-11-20T00:03:00Z"]);
    let r = &explicit["regression"];
    assert!(r["basis"].as_str().unwrap().starts_with("the ranges given"), "{r}");
    assert_eq!((r["before"]["rows"].as_u64(), r["after"]["rows"].as_u64()), (Some(1), Some(2)));
    assert_eq!(r["quantiles"][2]["change"], "within noise");
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let db = history(tmp.path());
    let text = tmp.path().join("notes.txt");
    std::fs::write(&text, "hello").unwrap();
    // A damaged database: the header survives, the pages after it do not.
    let damaged = tmp.path().join("damaged.db");
    let mut bytes = std::fs::read(&db).unwrap();
    for b in bytes.iter_mut().skip(100) {
        *b = 0xA5;
    }
    std::fs::write(&damaged, bytes).unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["history", text.to_str().unwrap()], "not an rtlab history database"),
        (vec!["history", "/nonexistent/monitor.db"], "no such file"),
        (vec!["history", damaged.to_str().unwrap()], "history"),
        (vec!["history", "DB", "--since", "2030-01-01"], "no windows from 2030-01-01 00:00 to the end"),
        (vec!["history", "DB", "--since", "yesterday"], "--since: \"yesterday\" is not a time"),
        (vec!["history", "DB", "--since", "2026-11-22", "--until", "2026-11-21"], "is not before --until"),
        (vec!["history", "DB", "--metric", "timer.jitter"], "no metric \"timer.jitter\""),
        (vec!["history", "DB", "--before", "2026-11-20"], "--after"),
        (vec!["history", "DB", "--before", "2026-11-20", "--after", "2026-11-21.."], "expected a range T..T"),
        (vec!["history", "DB", "--before", "..2026-11-19", "--after", "2026-11-21.."], "--before: no windows"),
        (
            vec!["report", text.to_str().unwrap(), "--since", "7d"],
            "--since/--until select a range of a monitor database",
        ),
        (vec!["report", "DB", "--since", "2030-01-01", "-f", "md"], "no windows from"),
    ];
    for (args, expected) in cases {
        let (code, out, err) = run(&args, &db);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}: partial output {out}");
        assert!(err.contains(expected), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        // clap's own usage errors (a flag that needs another) come with their usage lines.
        if expected != "--after" {
            assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        }
    }
}

#[test]
fn report_and_compare_read_a_range_of_the_history_as_a_run() {
    let tmp = tempfile::tempdir().unwrap();
    let db = history(tmp.path());
    let (code, out, err) = run(&["report", "DB", "--until", "2026-11-21", "-f", "json"], &db);
    assert_eq!(code, 0, "{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    let text = report.to_string();
    assert!(text.contains("board-1 history 2026-11-20 00:00–00:03"), "{text}");
    assert!(text.contains("6.1-rt") && !text.contains("6.6-rt"), "only the first kernel's range");
    // The HTML report of the whole history, and a comparison of the two kernels' days.
    let html = tmp.path().join("r.html");
    let (code, out, err) = run(&["report", "DB", "-o", html.to_str().unwrap()], &db);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Read from the monitor history"), "{out}");
    assert!(std::fs::read_to_string(&html).unwrap().contains("board-1 history 2026-11-20 00:00–11-21 00:03"));
    let copy = tmp.path().join("copy.db");
    std::fs::copy(&db, &copy).unwrap();
    let (code, out, err) = run(
        &[
            "compare",
            "DB",
            copy.to_str().unwrap(),
            "--since",
            "2026-11-21",
            "-o",
            tmp.path().join("c.html").to_str().unwrap(),
        ],
        &db,
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("kernel 6.6-rt"), "{out}");
}

/// A history that only `rtlab monitor -P timerlat` wrote: its views default to
/// timerlat.thread, and it reads back as a run of the timerlat probe.
#[test]
fn a_timerlat_history_defaults_to_its_thread_latency() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("monitor.db");
    let mut db = HistoryDb::open(&path).unwrap();
    let mut timerlat = settings();
    timerlat.probe = "timerlat".into();
    let session = db.begin_session(&host("6.1-rt"), &timerlat, T0).unwrap();
    let rename = |mut m: WindowMetric, name: &str| {
        m.metric = name.into();
        m
    };
    for i in 0..2 {
        let mut w = window(T0 + i * MINUTE, 10_000);
        w.metrics = vec![rename(metric(0, 20_000), "timerlat.thread"), rename(metric(0, 5_000), "timerlat.irq")];
        db.append_window(session.id, &w).unwrap();
    }
    db.end_session(session.id, T0 + 2 * MINUTE, "duration").unwrap();
    drop(db);
    let (code, stdout, stderr) = run(&["history", "DB", "-f", "json"], &path);
    assert_eq!(code, 0, "{stderr}");
    let json: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(json["metric"], "timerlat.thread", "{stdout}");
    let (code, _, stderr) = run(&["history", "DB", "--metric", "timer.latency"], &path);
    assert_eq!(code, 2);
    assert!(stderr.contains("timerlat.irq, timerlat.thread"), "names what it holds: {stderr}");
    let (code, stdout, stderr) = run(&["report", "DB", "-f", "json"], &path);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("\"timerlat.thread\""), "{stdout}");
}
