//! `--from jitterdebugger`: results.json and/or samples.raw. The real-* fixtures are real
//! jitterdebugger 0.3 runs on the development VM (see tests/fixtures/import/jitterdebugger/
//! README.md); the synthetic one follows their formats byte for byte. Oracles: the files'
//! own figures, read here independently of the importer.

use rtlab_formats::import::jitterdebugger::{self, HISTOGRAM_CAP_NS, RECORD_BYTES};
use rtlab_formats::import::{import, ImportFormat, ImportOptions, SeriesData, SourceFile, SourceUnit};
use rtlab_results::run::RunResult;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

#[path = "import_rtla/fuzz.rs"]
mod fuzz;

fn fixture(dir: &str, name: &str) -> SourceFile {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import/jitterdebugger").join(dir).join(name);
    SourceFile {
        path: format!("{dir}/{name}"),
        bytes: std::fs::read(&path).unwrap_or_else(|e| panic!("{dir}/{name}: {e}")),
    }
}

fn both(dir: &str) -> Vec<SourceFile> {
    vec![fixture(dir, "results.json"), fixture(dir, "samples.raw")]
}

fn run_of(files: &[SourceFile], options: &ImportOptions) -> RunResult {
    let run = import(ImportFormat::Jitterdebugger, files, options).unwrap();
    run.check().unwrap();
    run
}

fn error_of(files: &[SourceFile]) -> String {
    import(ImportFormat::Jitterdebugger, files, &ImportOptions::default()).unwrap_err().to_string()
}

/// results.json's per-thread (count, min, max) in ns, read with serde_json.
fn results_figures(file: &SourceFile) -> BTreeMap<usize, (u64, i64, i64)> {
    let json: Value = serde_json::from_slice(&file.bytes).unwrap();
    let unit = json["sysinfo"]["resolution_in_ns"].as_i64().unwrap();
    json["cpu"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| {
            let n = |f: &str| v[f].as_i64().unwrap();
            (k.parse().unwrap(), (n("count") as u64, n("min") * unit, n("max") * unit))
        })
        .collect()
}

/// samples.raw's values per thread, decoded here from the documented record layout.
fn raw_values(file: &SourceFile, unit: i64) -> BTreeMap<usize, Vec<i64>> {
    assert_eq!(file.bytes.len() % RECORD_BYTES, 0);
    let mut threads: BTreeMap<usize, Vec<i64>> = BTreeMap::new();
    for record in file.bytes.chunks_exact(RECORD_BYTES) {
        let thread = u32::from_le_bytes(record[0..4].try_into().unwrap()) as usize;
        let value = u64::from_le_bytes(record[20..28].try_into().unwrap()) as i64;
        threads.entry(thread).or_default().push(value * unit);
    }
    threads
}

/// (cpu, thread, count, min, max) of every measurement.
fn rows(run: &RunResult) -> Vec<(usize, String, u64, i64, i64)> {
    run.measurements
        .iter()
        .map(|m| {
            let s = m.summary.as_ref().unwrap();
            (m.cpu, m.thread.clone(), m.count, s.min, s.max)
        })
        .collect()
}

#[test]
fn a_real_run_imports_every_sample_including_those_above_the_histogram_cap() {
    let files = both("real-us");
    let run = run_of(&files, &ImportOptions::default());
    let figures = results_figures(&files[0]);
    let raw = raw_values(&files[1], 1000);
    // The real files: 300 samples per thread counted, 599 records saved (thread 1's last
    // sample was not written), thread 1's max 1009 µs above the 1000 µs histogram cap.
    assert_eq!(files[1].bytes.len() / RECORD_BYTES, 599);
    assert_eq!(raw.values().map(Vec::len).collect::<Vec<_>>(), [300, 299]);
    assert_eq!(figures[&1], (300, 14_000, 1_009_000));
    assert_eq!(raw[&1].iter().filter(|&&v| v >= HISTOGRAM_CAP_NS).count(), 1);
    let expected: Vec<_> =
        figures.iter().map(|(&id, &(count, min, max))| (id, format!("T:{id}"), count, min, max)).collect();
    assert_eq!(rows(&run), expected);
    let info = run.imported.as_ref().unwrap();
    assert_eq!(info.layouts, ["jitterdebugger-results", "jitterdebugger-samples"]);
    assert_eq!(info.bucket_ns, None, "every sample imported");
    assert!(info.bounded.is_empty());
    assert!(
        info.notes.iter().any(|n| n.starts_with("thread 1: samples.raw lacks 1 of the 300 samples")),
        "{:?}",
        info.notes
    );
    assert_eq!(run.host.hostname, "vm");
    assert_eq!(run.experiment.priority, 80);
    assert!(info.assumed.iter().any(|a| a.starts_with("priority 80")));
    // Per-second maxima from the records' wake-up times.
    let m = &run.measurements[1];
    assert_eq!(m.per_second_max_ns.iter().flatten().max(), Some(&1_009_000));
    // Samples: every statistic exact; the sum is the records' plus the recovered sample.
    let recorded_sum: i64 = raw[&1].iter().sum();
    let recovered = m.moments.sum as i64 - recorded_sum;
    assert!((0..HISTOGRAM_CAP_NS).contains(&recovered), "the recovered sample is below the cap: {recovered}");
}

#[test]
fn results_json_alone_counts_samples_beyond_the_cap_as_overflows() {
    let file = fixture("real-us", "results.json");
    let run = run_of(std::slice::from_ref(&file), &ImportOptions::default());
    assert_eq!(rows(&run), [(0, "T:0".into(), 300, 10_000, 41_000), (1, "T:1".into(), 300, 14_000, 1_009_000)]);
    let parsed = jitterdebugger::parse(&[file], &ImportOptions::default()).unwrap();
    let SeriesData::Histogram(h) = &parsed.series[1].data else { panic!("a histogram") };
    assert_eq!((h.width_ns, h.overflows, h.overflow_from_ns, h.max_ns), (1000, 1, HISTOGRAM_CAP_NS, Some(1_009_000)));
    assert_eq!(h.buckets.iter().map(|b| b.1).sum::<u64>(), 299);
    let info = run.imported.as_ref().unwrap();
    assert_eq!((info.bucket_ns, info.exact.clone()), (Some(1000), vec!["count".into(), "min".into(), "max".into()]));
}

#[test]
fn samples_raw_alone_is_every_saved_sample_in_an_assumed_unit() {
    let file = fixture("real-us", "samples.raw");
    let raw = raw_values(&file, 1000);
    let run = run_of(std::slice::from_ref(&file), &ImportOptions::default());
    let expected: Vec<_> = raw
        .iter()
        .map(|(&id, v)| (id, format!("T:{id}"), v.len() as u64, *v.iter().min().unwrap(), *v.iter().max().unwrap()))
        .collect();
    assert_eq!(rows(&run), expected);
    let info = run.imported.as_ref().unwrap();
    assert!(info.assumed.iter().any(|a| a.starts_with("values in µs: samples.raw does not record its resolution")));
    // --unit ns reads the same records as nanoseconds.
    let ns = run_of(&[file], &ImportOptions { unit: Some(SourceUnit::Ns), ..Default::default() });
    assert_eq!(ns.measurements[1].summary.as_ref().unwrap().max, 1009);
}

#[test]
fn nanosecond_runs_keep_their_resolution() {
    let files = both("real-ns");
    let run = run_of(&files, &ImportOptions::default());
    let figures = results_figures(&files[0]);
    let expected: Vec<_> =
        figures.iter().map(|(&id, &(count, min, max))| (id, format!("T:{id}"), count, min, max)).collect();
    assert_eq!(rows(&run), expected);
    assert_eq!(expected[1], (1, "T:1".into(), 200, 18_221, 74_525));
    assert_eq!(run.imported.as_ref().unwrap().resolution_ns, 1);
}

#[test]
fn threads_limited_by_affinity_have_no_cpu() {
    let run = run_of(&both("real-affinity"), &ImportOptions::default());
    assert_eq!(rows(&run), [(0, "T:0".into(), 200, 11_000, 41_000)]);
    let info = run.imported.as_ref().unwrap();
    assert!(info.notes.iter().any(|n| n.starts_with("the CPU of each thread is not recorded")), "{:?}", info.notes);
    assert!(!info.assumed.iter().any(|a| a.starts_with("thread N ran on CPU N")));
}

#[test]
fn samples_lost_above_the_cap_stay_counted_at_their_lower_bound() {
    let files = both("synthetic-tail-above-cap");
    let run = run_of(&files, &ImportOptions::default());
    // Thread 0: all 40 saved (two above the cap); thread 1: 50 counted, 47 saved, lost:
    // 1200 µs, 21 µs and the max 3000 µs.
    assert_eq!(rows(&run), [(0, "T:0".into(), 40, 12_000, 2_500_000), (1, "T:1".into(), 50, 20_000, 3_000_000)]);
    let parsed = jitterdebugger::parse(&files, &ImportOptions::default()).unwrap();
    assert!(matches!(parsed.series[0].data, SeriesData::Samples(ref v) if v.len() == 40));
    let SeriesData::Histogram(h) = &parsed.series[1].data else { panic!("thread 1 is a histogram") };
    assert_eq!((h.overflows, h.overflow_from_ns, h.max_ns), (2, HISTOGRAM_CAP_NS, Some(3_000_000)));
    assert_eq!(h.buckets.iter().map(|b| b.1).sum::<u64>(), 48, "47 saved + the 21 µs one recovered");
    // The 1200 µs sample counts at 1000 µs (censored), but results.json's avg (108.7 µs)
    // gives the exact sum: the mean is the source's.
    let raw = raw_values(&files[1], 1000);
    let saved: i64 = raw[&1].iter().sum();
    assert_eq!(run.measurements[1].moments.sum as i64, saved + 21_000 + 1_200_000 + 3_000_000);
    let s = run.measurements[1].summary.as_ref().unwrap();
    assert_eq!(s.mean, 108_700.0);
    assert_eq!(s.censored.as_ref().map(|c| (c.above_ns, c.count)), Some((HISTOGRAM_CAP_NS, 2)));
    let info = run.imported.as_ref().unwrap();
    assert!(info.exact.iter().any(|e| e.starts_with("mean")), "{:?}", info.exact);
    assert!(info
        .notes
        .iter()
        .any(|n| n.contains("thread 1: samples.raw lacks 3 of the 50") && n.contains("2 at or above it")));
}

#[test]
fn damaged_or_mismatched_files_name_the_file_and_the_place() {
    let mut raw = fixture("real-us", "samples.raw");
    raw.bytes.truncate(599 * RECORD_BYTES - 10);
    assert_eq!(
        error_of(&[raw]),
        "real-us/samples.raw: truncated: 16762 bytes is not a whole number of 28-byte records; record 598 at byte \
         offset 16744 has only 18 bytes"
    );
    let mut raw = fixture("real-us", "samples.raw");
    raw.bytes[28 * 7 + 12..28 * 7 + 20].copy_from_slice(&2_000_000_000u64.to_le_bytes());
    assert_eq!(
        error_of(&[raw]),
        "real-us/samples.raw: record 7 at byte offset 196: tv_nsec 2000000000 is not below one second (not a \
         samples.raw, or damaged)"
    );
    let mut raw = fixture("real-us", "samples.raw");
    raw.bytes[28 * 3..28 * 3 + 4].copy_from_slice(&5000u32.to_le_bytes());
    assert!(error_of(&[raw]).starts_with("real-us/samples.raw: record 3 at byte offset 84: thread number 5000"));
    // Results of one run, samples of another.
    let error = error_of(&[fixture("real-us", "results.json"), fixture("real-ns", "samples.raw")]);
    assert!(error.starts_with("real-us/results.json:13: thread 0: "), "{error}");
    assert!(error.contains("real-ns/samples.raw disagrees: are both files from the same run?"), "{error}");
    // Not JSON after all.
    let mut json = fixture("real-us", "results.json");
    json.bytes.truncate(200);
    assert!(error_of(&[json]).starts_with("real-us/results.json:9: not JSON: EOF while parsing"));
    let json = SourceFile { path: "r.json".into(), bytes: br#"{"version": 3, "cpu": {"x": {}}}"#.to_vec() };
    assert_eq!(error_of(&[json]), "r.json:1: thread key \"x\" is not a thread number");
    let json = SourceFile {
        path: "r.json".into(),
        bytes: b"{\n \"cpu\": {\n  \"0\": {\"histogram\": {\"1000\": 1}, \"count\": 1, \"min\": 1000, \"max\": 1000}}}"
            .to_vec(),
    };
    assert_eq!(
        error_of(&[json]),
        "r.json:3: thread 0: histogram key 1000 is beyond jitterdebugger's 1000 µs histogram"
    );
    let json = SourceFile {
        path: "r.json".into(),
        bytes: b"{\"cpu\": {\"0\": {\"histogram\": {\"5\": 1}, \"count\": 3, \"min\": 5, \"max\": 7}}}".to_vec(),
    };
    assert_eq!(
        error_of(&[json]),
        "r.json:1: thread 0: 2 samples are missing from the histogram but max is 7 µs (only samples of 1000 µs and \
         more are left out of it)"
    );
    assert!(error_of(&[fixture("real-us", "results.json"), fixture("real-ns", "results.json")])
        .starts_with("real-ns/results.json: a second results.json"));
    assert_eq!(error_of(&[SourceFile { path: "empty".into(), bytes: vec![] }]), "empty: samples.raw holds no record");
}

#[test]
fn inputs_that_once_crashed_the_importer() {
    // Found by the fuzzer: a cpus_online of u64::MAX made run.json's host list that many CPUs.
    assert_eq!(
        error_of(&both("fuzz-crash-cpus-online")),
        "fuzz-crash-cpus-online/results.json:9: \"cpus_online\" 18446744073709551615 is not a CPU count"
    );
}

#[test]
fn fuzzed_inputs_never_panic_and_what_imports_is_consistent() {
    let seeds = vec![
        both("fuzz-crash-cpus-online"),
        both("real-us"),
        both("real-ns"),
        both("synthetic-tail-above-cap"),
        vec![fixture("real-affinity", "results.json")],
        vec![fixture("synthetic-tail-above-cap", "samples.raw")],
    ];
    let tried = fuzz::run(ImportFormat::Jitterdebugger, &seeds);
    assert!(tried > 1000, "{tried} inputs");
}
