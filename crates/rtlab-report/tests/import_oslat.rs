//! `--from oslat`: real `oslat --json` files from the development VM (see
//! tests/fixtures/import/oslat/README.md). Oracles: the files' own figures, read here with
//! serde_json independently of the importer.

use rtlab_formats::import::oslat::{LOOPS_BELOW_1US, OSLAT_AVG_US, OSLAT_MAX_US};
use rtlab_formats::import::{import, ImportFormat, ImportOptions, SourceFile};
use rtlab_report::Exporter;
use rtlab_results::run::{Detail, RunResult};
use serde_json::Value;
use std::path::Path;

fn fixture(name: &str) -> SourceFile {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import/oslat").join(name);
    SourceFile { path: name.to_string(), bytes: std::fs::read(&path).unwrap_or_else(|e| panic!("{name}: {e}")) }
}

fn run_of(name: &str) -> RunResult {
    let run = import(ImportFormat::Oslat, &[fixture(name)], &ImportOptions::default()).unwrap();
    run.check().unwrap();
    run
}

#[test]
fn every_loop_of_a_microsecond_or_more_is_a_gap_and_the_last_bucket_is_censored() {
    for (name, buckets) in [("oslat-1cpu.json", 32u64), ("oslat-2cpu-b8.json", 8)] {
        let file = fixture(name);
        let json: Value = serde_json::from_slice(&file.bytes).unwrap();
        let run = run_of(name);
        let threads = json["thread"].as_object().unwrap();
        assert_eq!(run.measurements.len(), threads.len());
        for (thread, m) in threads.values().zip(&run.measurements) {
            let histogram = thread["histogram"].as_object().unwrap();
            let count = |k: u64| histogram.get(&k.to_string()).and_then(Value::as_u64).unwrap_or(0);
            let gaps: u64 = (2..=buckets).map(count).sum();
            assert_eq!(m.metric, "noise.gap");
            assert_eq!(m.cpu as u64, thread["cpu"].as_u64().unwrap());
            assert_eq!(m.count, gaps, "{name}: every loop of 1 µs and more, overflows included");
            assert_eq!(m.details.get(LOOPS_BELOW_1US), Some(&Detail::Int(count(1) as i64)));
            assert_eq!(m.details.get("source_overflows"), Some(&Detail::Int(count(buckets) as i64)));
            let max_us = thread["max"].as_i64().unwrap();
            assert_eq!(m.details.get(OSLAT_MAX_US), Some(&Detail::Int(max_us)));
            assert_eq!(m.details.get(OSLAT_AVG_US), Some(&Detail::Float(thread["avg"].as_f64().unwrap())));
            let s = m.summary.as_ref().unwrap();
            // oslat's max is its loop's whole µs rounded up: the gap's lower bound is 1 µs less.
            assert_eq!(s.max, (max_us - 1) * 1000);
            assert_eq!(s.min, 1000, "the smallest gap bucket is [1, 2) µs");
            // The source's exact mean of the gaps, from oslat's avg over every loop: the
            // censored gaps make it at least the histogram's mean (they sit at the bound).
            let loops: u64 = (1..=buckets).map(count).sum();
            let avg = thread["avg"].as_f64().unwrap();
            let exact = ((avg * loops as f64 - count(1) as f64) / gaps as f64 - 1.0) * 1000.0;
            let Some(Detail::Float(source_avg)) = m.details.get("source_avg_ns") else { panic!("no source_avg_ns") };
            assert!((source_avg - exact).abs() < 1e-6 * exact.max(1.0), "{source_avg} vs {exact}");
            let mean = m.moments.mean().unwrap();
            assert!(*source_avg + 1.0 >= mean, "{source_avg} < {mean}");
            // The censored loops sit at the last bucket's lower bound, below the max.
            assert!(s.p99_9 >= (buckets as i64 - 1) * 1000 || count(buckets) * 1000 < gaps);
        }
        let info = run.imported.as_ref().unwrap();
        assert!(info.source_line().contains("oslat 2.40"), "{}", info.source_line());
    }
}

#[test]
fn the_terminal_summary_of_an_import() {
    let text = rtlab_report::terminal::TerminalSummary.export(&run_of("oslat-2cpu-b8.json")).unwrap();
    insta::assert_snapshot!("oslat_2cpu_b8_terminal", text);
}

#[test]
fn bad_files_are_one_line_errors() {
    let bad = |text: &str| {
        let file = SourceFile { path: "x.json".into(), bytes: text.as_bytes().to_vec() };
        import(ImportFormat::Oslat, &[file], &ImportOptions::default()).unwrap_err().to_string()
    };
    assert!(bad("{").contains("not valid JSON"));
    assert!(bad(r#"{"cmdline:": "cyclictest -D 5", "thread": {}}"#).contains("not oslat"));
    assert!(bad(r#"{"thread": {}}"#).contains("no threads"));
    let out_of_range = r#"{"thread": {"0": {"cpu": 1, "min": 1, "avg": 1.0, "max": 2, "histogram": {"33": 1}}}}"#;
    assert!(bad(out_of_range).contains("bucket \"33\""), "{}", bad(out_of_range));
    let max_lies = r#"{"thread": {"0": {"cpu": 1, "min": 1, "avg": 1.0, "max": 2, "histogram": {"1": 5, "9": 1}}}}"#;
    assert!(bad(max_lies).contains("highest non-empty bucket"), "{}", bad(max_lies));
}
