//! What the importers must do with any input, checked the same way by the fuzz targets and
//! by the regression test in rtlab-report (which includes this file with `#[path]`).
//!
//! One input becomes one or more imports: the bytes as one file under each name the format's
//! files go by (a parser may tell a file's role from its name, e.g. jitterdebugger's
//! `results.json` and `samples.raw`), and, for the formats that take two files, the bytes
//! split at the first [`SEPARATOR`] into two files. Every import must return: an error
//! that names one of the files in one line, or a run that holds its invariants. A panic,
//! an abort (allocation failure) or a broken invariant is a crash.

use rtlab_analysis::LatencyHistogram;
use rtlab_formats::import::{
    import, ImportError, ImportFormat, ImportOptions, SourceFile, IMPORTED_SCENARIO, MAX_VALUE_NS,
};
use rtlab_report::Exporter;
use rtlab_results::run::RunResult;

/// Splits a two-file input: never in UTF-8 text, so a text first file (results.json, a
/// Xenomai log) always ends at the first one, and the second file may hold any bytes.
pub const SEPARATOR: u8 = 0xFF;

/// The names one file of `format` is imported under.
pub fn single_file_names(format: ImportFormat) -> &'static [&'static str] {
    match format {
        ImportFormat::Cyclictest => &["cyclictest.hist", "cyclictest.json"],
        ImportFormat::Rtla => &["timerlat_hist.txt"],
        ImportFormat::Jitterdebugger => &["results.json", "samples.raw"],
        ImportFormat::Xenomai => &["latency.log", "histogram.dat"],
        ImportFormat::Oslat => &["oslat.json"],
    }
}

/// The names of the two files of a two-file format, in the order `rtlab import` documents.
pub fn file_pair_names(format: ImportFormat) -> Option<[&'static str; 2]> {
    match format {
        ImportFormat::Jitterdebugger => Some(["results.json", "samples.raw"]),
        ImportFormat::Xenomai => Some(["latency.log", "histogram.dat"]),
        ImportFormat::Cyclictest | ImportFormat::Rtla | ImportFormat::Oslat => None,
    }
}

/// The file sets one input is imported as (see the module documentation).
pub fn file_sets(format: ImportFormat, data: &[u8]) -> Vec<Vec<SourceFile>> {
    let file = |name: &str, bytes: &[u8]| SourceFile { path: name.to_string(), bytes: bytes.to_vec() };
    let mut sets: Vec<Vec<SourceFile>> = single_file_names(format).iter().map(|name| vec![file(name, data)]).collect();
    if let Some([first_name, second_name]) = file_pair_names(format) {
        if let Some(at) = data.iter().position(|&b| b == SEPARATOR) {
            let (first, rest) = data.split_at(at);
            sets.push(vec![file(first_name, first), file(second_name, &rest[1..])]);
        }
    }
    sets
}

/// Imports `data` every way [`file_sets`] gives and checks each outcome; panics (a crash for
/// the fuzzer, a failure for the test) when an import breaks a rule.
pub fn exercise(format: ImportFormat, data: &[u8]) {
    for files in file_sets(format, data) {
        let outcome = import(format, &files, &ImportOptions::default());
        check_outcome(format, &files, &outcome);
    }
}

/// The rules for one import's outcome.
pub fn check_outcome(format: ImportFormat, files: &[SourceFile], outcome: &Result<RunResult, ImportError>) {
    match outcome {
        Ok(run) => check_run(format, files, run),
        Err(error) => check_error(files, error),
    }
}

/// An error names one of the given files (or the format, when no file was given), a line
/// from 1 when it names one, and a reason, all on one line.
pub fn check_error(files: &[SourceFile], error: &ImportError) {
    let shown = error.to_string();
    assert!(
        files.iter().any(|f| f.path == error.file) || (files.is_empty() && !error.file.is_empty()),
        "the error names no given file: {shown:?}"
    );
    assert_ne!(error.line, Some(0), "lines count from 1: {shown:?}");
    assert!(!error.reason.trim().is_empty(), "the error gives no reason: {shown:?}");
    assert!(!shown.contains('\n') && !shown.contains('\r'), "the error is not one line: {shown:?}");
}

/// A run holds what run.json promises: the model's own check, every count matching its
/// histogram and moments, ordered summaries within the value limits, the import marked,
/// and a run.json that can be written and read back and summarized.
pub fn check_run(format: ImportFormat, files: &[SourceFile], run: &RunResult) {
    if let Err(why) = run.check() {
        panic!("the imported run fails its check: {why}");
    }
    let info = run.imported.as_ref().unwrap_or_else(|| panic!("the run is not marked as imported"));
    assert_eq!(info.from, format.name());
    let given: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(info.files, given, "the run does not list the imported files");
    assert!(!run.measurements.is_empty(), "an import succeeded without a measurement");

    for m in &run.measurements {
        let what = format!("{} {} (CPU {})", m.metric, m.thread, m.cpu);
        assert_eq!(m.scenario, IMPORTED_SCENARIO, "{what}");
        let histogram = LatencyHistogram::decode(&m.histogram).unwrap_or_else(|e| panic!("{what}: histogram: {e}"));
        assert_eq!(histogram.count(), m.count, "{what}: histogram count");
        assert_eq!(m.moments.count, m.count, "{what}: moments count");
        assert_eq!(m.count.checked_add(m.overruns), Some(m.cycles), "{what}: cycles != count + overruns");
        assert!(m.interval_ns > 0, "{what}: interval 0");
        match &m.summary {
            None => assert_eq!(m.count, 0, "{what}: samples without a summary"),
            Some(s) => {
                assert_eq!(s.count, m.count, "{what}: summary count");
                let ordered = [s.min, s.p50, s.p90, s.p99, s.p99_9, s.p99_99, s.p99_999, s.max];
                assert!(ordered.windows(2).all(|w| w[0] <= w[1]), "{what}: percentiles out of order: {ordered:?}");
                assert_eq!(Some(s.min), m.moments.min(), "{what}: summary min");
                assert_eq!(Some(s.max), m.moments.max(), "{what}: summary max");
                assert!(s.min.abs() <= MAX_VALUE_NS && s.max.abs() <= MAX_VALUE_NS, "{what}: beyond the limit");
                assert!(s.mean.is_finite() && s.stddev.is_finite() && s.stddev >= 0.0, "{what}: mean/stddev {s:?}");
                // The mean of exact sums, within a rounding of the extremes.
                assert!(
                    s.mean >= s.min as f64 - 1.0 && s.mean <= s.max as f64 + 1.0,
                    "{what}: mean {} outside [{}, {}]",
                    s.mean,
                    s.min,
                    s.max
                );
            }
        }
    }

    let json = serde_json::to_string(run).unwrap_or_else(|e| panic!("run.json cannot be written: {e}"));
    let reread: RunResult = serde_json::from_str(&json).unwrap_or_else(|e| panic!("run.json cannot be read back: {e}"));
    assert_eq!(reread.measurements.len(), run.measurements.len());
    if let Err(why) = rtlab_report::terminal::TerminalSummary.export(run) {
        panic!("the imported run cannot be summarized: {why}");
    }
}
