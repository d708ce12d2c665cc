//! The cyclictest exporters. Round trips on real cyclictest 2.40 files (import, then
//! export): the histogram file and the JSON come back byte for byte; other layouts come
//! back as rt-tests 2.4's layout with equal buckets and footer. Snapshots of a native
//! rtlab run (not imported: buckets from its HDR histogram, no cycle lists) and of an
//! imported one with odd JSON.

use rtlab_analysis::{LatencyHistogram, Moments, Summary};
use rtlab_formats::export::cyclictest::{CyclictestHist, CyclictestJson};
use rtlab_formats::export::Selection;
use rtlab_formats::import::{import, ImportFormat, ImportOptions, SourceFile};
use rtlab_results::run::RunResult;
use rtlab_results::set::{ReportExporter, ReportSet, SourcedRun};
use std::path::Path;

fn fixture_bytes(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import/cyclictest").join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn imported(name: &str) -> RunResult {
    import(
        ImportFormat::Cyclictest,
        &[SourceFile { path: name.into(), bytes: fixture_bytes(name) }],
        &ImportOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

fn set_of(run: RunResult) -> ReportSet {
    ReportSet { runs: vec![SourcedRun { source: "run".into(), run }], verdict: None }
}

fn hist(run: RunResult) -> String {
    CyclictestHist::default().render(&set_of(run)).unwrap()
}

fn json(run: RunResult) -> String {
    CyclictestJson::default().render(&set_of(run)).unwrap()
}

/// Per thread, the non-empty (bucket, count) rows of a histogram file (the first
/// `threads` columns: -H adds one).
fn buckets(text: &str, threads: usize) -> Vec<Vec<(u64, u64)>> {
    let mut out = vec![Vec::new(); threads];
    let mut inside = false;
    for line in text.lines() {
        if line.contains("# Histogram") && !line.contains("Overflow") {
            inside = true;
        } else if line.starts_with('#') {
            inside = false;
        } else if inside && !line.trim().is_empty() {
            let mut words = line.split_whitespace();
            let bucket: u64 = words.next().unwrap().parse().unwrap();
            for (t, count) in words.take(threads).enumerate() {
                let count: u64 = count.parse().unwrap();
                if count > 0 {
                    out[t].push((bucket, count));
                }
            }
        }
    }
    out
}

/// Footer values per label, the first `threads` of each.
fn footer(text: &str, threads: usize) -> Vec<(String, Vec<u64>)> {
    ["# Min Latencies:", "# Avg Latencies:", "# Max Latencies:", "# Histogram Overflows:"]
        .iter()
        .map(|label| {
            let line = text.lines().find(|l| l.starts_with(label)).unwrap();
            let values = line[label.len()..].split_whitespace().take(threads).map(|v| v.parse().unwrap()).collect();
            (label.to_string(), values)
        })
        .collect()
}

#[test]
fn real_histogram_files_come_back_byte_for_byte() {
    for name in ["real-2.4-h400.hist", "real-2.4-overflow.hist", "old-4threads.hist"] {
        let original = String::from_utf8(fixture_bytes(name)).unwrap();
        let exported = hist(imported(name));
        assert!(exported == original, "{name}: the export differs:\n{exported}");
    }
}

#[test]
fn real_json_files_come_back_byte_for_byte() {
    for name in ["real-2.4-h400.json", "real-2.4-overflow.json", "real-2.4-nohist.json"] {
        let original = String::from_utf8(fixture_bytes(name)).unwrap();
        let exported = json(imported(name));
        assert!(exported == original, "{name}: the export differs:\n{exported}");
    }
}

#[test]
fn other_layouts_come_back_with_equal_buckets_and_footer() {
    for (name, threads) in [
        ("newer-2threads.hist", 2),
        ("newer-others.hist", 1),
        ("newer-histofall-1thread.hist", 1),
        ("real-2.4-stdout.txt", 2),
        ("real-2.4-histofall.txt", 2),
    ] {
        let original = String::from_utf8(fixture_bytes(name)).unwrap();
        let exported = hist(imported(name));
        assert_eq!(buckets(&exported, threads), buckets(&original, threads), "{name}: buckets");
        assert_eq!(footer(&exported, threads), footer(&original, threads), "{name}: footer");
        assert!(exported.contains("# Total: "), "{name}: 2.4 layout");
        // And the export imports again to the same measurements.
        let again = import(
            ImportFormat::Cyclictest,
            &[SourceFile { path: "again".into(), bytes: exported.clone().into_bytes() }],
            &ImportOptions::default(),
        )
        .unwrap();
        assert_eq!(again.measurements, imported(name).measurements, "{name}: re-import");
    }
}

#[test]
fn json_of_a_run_gives_its_histogram_file() {
    // The JSON and the histogram file of one cyclictest run: the JSON has no overflow cycle
    // numbers, so those overflows are all "others"; every other line is the same.
    let from_json = hist(imported("real-2.4-h400.json"));
    let original = String::from_utf8(fixture_bytes("real-2.4-h400.hist")).unwrap();
    let without_lists = |text: &str| -> Vec<String> {
        text.lines().filter(|l| !l.starts_with("# Thread ")).map(str::to_string).collect()
    };
    assert_eq!(without_lists(&from_json), without_lists(&original));
    assert!(from_json.contains("# Thread 0: # 00002 others\n"), "{from_json}");
}

#[test]
fn histogram_file_gives_cyclictest_json_that_lava_reads() {
    let exported = json(imported("real-2.4-h400.hist"));
    let value: serde_json::Value = serde_json::from_str(&exported).unwrap();
    let real: serde_json::Value = serde_json::from_slice(&fixture_bytes("real-2.4-h400.json")).unwrap();
    // LAVA's parse_rt_tests_results.py: num_threads, thread[i] min/avg/max, return_code.
    assert_eq!(value["num_threads"], real["num_threads"]);
    assert_eq!(value["return_code"], 0);
    assert_eq!(value["resolution_in_ns"], 0);
    for t in ["0", "1"] {
        for key in ["histogram", "cycles", "min", "max", "cpu"] {
            assert_eq!(value["thread"][t][key], real["thread"][t][key], "thread {t} {key}");
        }
        // The histogram file's Avg is truncated to a whole µs.
        let (avg, real_avg) = (value["thread"][t]["avg"].as_f64().unwrap(), real["thread"][t]["avg"].as_f64().unwrap());
        assert_eq!(avg, real_avg.trunc());
    }
    for key in ["cmdline:", "rt_test_version:", "start_time", "end_time", "sysinfo"] {
        assert!(value.get(key).is_some(), "{key}");
    }
}

/// The 2-CPU simulated fixture with small latency histograms written in: a native run,
/// whose buckets come from its HDR histogram (highest equivalent value, truncated to µs).
fn native_run() -> RunResult {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/simulated-2cpu.run.json");
    let mut run = RunResult::load(&path).unwrap();
    let samples: [&[i64]; 2] = [&[1_500, 2_999, 3_000, 12_345, 7_999, 3_001, 2_000], &[900, 4_200, 4_999, 15_000]];
    for m in run.measurements.iter_mut().filter(|m| m.metric == "timer.latency") {
        let mut histogram = LatencyHistogram::new(rtlab_analysis::DEFAULT_MAX_NS).unwrap();
        let mut moments = Moments::new();
        for &v in samples[m.cpu] {
            histogram.record(v);
            moments.record(v);
        }
        m.count = moments.count;
        m.cycles = moments.count;
        m.summary = Summary::from_parts(&histogram, &moments);
        m.moments = moments;
        m.histogram = histogram.encode().unwrap();
    }
    run.check().unwrap();
    run
}

#[test]
fn native_run_as_cyclictest_histogram() {
    let text = hist(native_run());
    // Up to the largest sample (15 µs): 16 buckets, nothing overflows.
    assert_eq!(text.lines().filter(|l| !l.starts_with('#') && !l.is_empty()).count(), 16);
    assert_eq!(buckets(&text, 2)[0], [(1, 1), (2, 2), (3, 2), (7, 1), (12, 1)]);
    insta::assert_snapshot!("cyclictest_hist_native", text);
}

#[test]
fn native_run_as_cyclictest_json() {
    let text = json(native_run());
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(value["thread"]["0"]["cycles"], 7);
    assert_eq!(value["thread"]["1"]["max"], 15);
    insta::assert_snapshot!("cyclictest_json_native", text);
}

#[test]
fn imported_json_quirks_as_both_formats() {
    insta::assert_snapshot!("cyclictest_hist_quirks", hist(imported("quirks.json")));
    insta::assert_snapshot!("cyclictest_json_quirks", json(imported("quirks.json")));
}

#[test]
fn newer_json_without_histogram_as_json_but_not_as_histogram() {
    let run = imported("newer-nohist.json");
    let text = json(run.clone());
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(value["thread"]["1"]["cycles"], 6666);
    assert_eq!(value["thread"]["1"]["avg"], 6.01);
    assert_eq!(value["sysinfo"]["realtime"], 1);
    assert_eq!(value["start_time"], "Tue, 03 Mar 2026 10:00:00 +0100");
    let err = CyclictestHist::default().render(&set_of(run)).unwrap_err();
    assert!(err.to_string().contains("use --format cyclictest-json"), "{err}");
}

#[test]
fn one_run_one_metric() {
    let two = ReportSet {
        runs: vec![
            SourcedRun { source: "a".into(), run: native_run() },
            SourcedRun { source: "b".into(), run: native_run() },
        ],
        verdict: None,
    };
    let err = CyclictestHist::default().render(&two).unwrap_err();
    assert!(err.to_string().contains("describes one run; 2 were given"), "{err}");
    let jitter = CyclictestJson { selection: Selection { metric: Some("timer.jitter".into()), scenario: None } };
    let value: serde_json::Value = serde_json::from_str(&jitter.render(&set_of(native_run())).unwrap()).unwrap();
    assert_eq!(value["thread"]["0"]["cycles"], 4999);
}

/// cyclictest has no scenarios: a run with several gives one only when asked by name, and
/// then exactly that scenario's threads.
#[test]
fn one_scenario_at_a_time() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/simulated-two-scenarios.run.json");
    let run = RunResult::load(&path).unwrap();
    let several = "the run has several scenarios (idle, cpu:threads=1+proc-read): choose one with --scenario";
    let err = CyclictestHist::default().render(&set_of(run.clone())).unwrap_err();
    assert!(err.to_string().contains(several), "{err}");
    let err = CyclictestJson::default().render(&set_of(run.clone())).unwrap_err();
    assert!(err.to_string().contains(several), "{err}");

    let mut maxima = Vec::new();
    for scenario in ["idle", "cpu:threads=1+proc-read"] {
        let selection = Selection { metric: None, scenario: Some(scenario.into()) };
        let text = CyclictestJson { selection: selection.clone() }.render(&set_of(run.clone())).unwrap();
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        let mut threads: Vec<_> = run.measurements_of(scenario, "timer.latency").collect();
        threads.sort_by_key(|m| m.cpu);
        assert_eq!(value["num_threads"], threads.len());
        for (i, m) in threads.iter().enumerate() {
            let thread = &value["thread"][i.to_string()];
            assert_eq!(thread["cpu"], m.cpu);
            assert_eq!(thread["cycles"], m.count, "{scenario} CPU {}", m.cpu);
            assert_eq!(thread["max"], m.moments.max().unwrap() / 1000, "{scenario} CPU {}", m.cpu);
        }
        let hist = CyclictestHist { selection }.render(&set_of(run.clone())).unwrap();
        let max_line = footer(&hist, threads.len()).into_iter().find(|(label, _)| label == "# Max Latencies:").unwrap();
        assert_eq!(max_line.1, threads.iter().map(|m| (m.moments.max().unwrap() / 1000) as u64).collect::<Vec<_>>());
        maxima.push(max_line.1);
    }
    assert_ne!(maxima[0], maxima[1], "the fixture's scenarios differ, so a mix-up would show");
}
