//! `--from rtla`: `rtla timerlat hist` and `rtla osnoise hist` output. The fixtures
//! (tests/fixtures/import/rtla, see its README) are rendered from rtla's own format strings:
//! the kernel documentation's published examples (6.1 layout) and synthetic runs in the 6.1
//! and 6.16 layouts. Oracles are the numbers printed in the files.

use rtlab_formats::import::{import, rtla, ImportFormat, ImportOptions, SeriesData, SourceFile, SourceHistogram};
use rtlab_results::run::RunResult;
use std::path::Path;

fn fixture(name: &str) -> SourceFile {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import/rtla").join(name);
    SourceFile { path: format!("rtla/{name}"), bytes: std::fs::read(&path).unwrap_or_else(|e| panic!("{name}: {e}")) }
}

fn text_file(name: &str, text: &str) -> SourceFile {
    SourceFile { path: name.to_string(), bytes: text.as_bytes().to_vec() }
}

fn run_of(file: SourceFile) -> RunResult {
    let run = import(ImportFormat::Rtla, &[file], &ImportOptions::default()).unwrap();
    run.check().unwrap();
    run
}

fn histogram(data: &SeriesData) -> &SourceHistogram {
    match data {
        SeriesData::Histogram(h) => h,
        other => panic!("not a histogram: {other:?}"),
    }
}

/// (metric, cpu, thread, count, min ns, max ns) of every measurement.
fn rows(run: &RunResult) -> Vec<(String, usize, String, u64, i64, i64)> {
    run.measurements
        .iter()
        .map(|m| {
            let s = m.summary.as_ref().unwrap();
            (m.metric.clone(), m.cpu, m.thread.clone(), m.count, s.min, s.max)
        })
        .collect()
}

fn error_of(files: &[SourceFile]) -> String {
    import(ImportFormat::Rtla, files, &ImportOptions::default()).unwrap_err().to_string()
}

#[test]
fn the_kernel_documentation_example_imports_column_by_column() {
    let run = run_of(fixture("timerlat-6.1-docs-example.txt"));
    // From the example's summary rows (µs): min, max per IRQ/Thr column of CPUs 0-4.
    let mins = [0, 1, 0, 1, 0, 1, 0, 1, 0, 1];
    let maxes = [16, 36, 15, 58, 24, 44, 21, 46, 13, 50];
    let expected: Vec<_> = (0..10)
        .map(|i| {
            let metric = if i % 2 == 0 { "timerlat.irq" } else { "timerlat.thread" };
            (metric.to_string(), i / 2, format!("cpu{:03}", i / 2), 600_002, mins[i] * 1000, maxes[i] * 1000)
        })
        .collect();
    assert_eq!(rows(&run), expected);
    assert!(run.measurements.iter().all(|m| m.probe == "timerlat" && m.scenario == "imported"));
    let info = run.imported.as_ref().unwrap();
    assert_eq!(info.layouts, ["rtla-timerlat-histogram"]);
    assert_eq!(info.source_tool.as_deref(), Some("rtla timerlat hist"));
    assert_eq!((info.bucket_ns, info.resolution_ns), (Some(1000), 1000));
    assert_eq!(info.exact, ["count", "min", "max"]);
    assert_eq!(info.bounded, ["mean", "stddev", "percentiles"]);
    assert_eq!(run.duration_s, 600.0);
    assert_eq!(run.experiment.interval_ns, 1_000_000);
    assert!(info.assumed.iter().any(|a| a.starts_with("interval 1 ms")), "{:?}", info.assumed);
}

#[test]
fn bucket_totals_and_summary_rows_are_taken_as_printed() {
    let parsed = rtla::parse(&[fixture("timerlat-6.1-docs-example.txt")], &ImportOptions::default()).unwrap();
    let irq0 = histogram(&parsed.series[0].data);
    // Column IRQ-000: buckets 0..16 µs as printed; nothing over.
    assert_eq!(irq0.width_ns, 1000);
    assert_eq!(irq0.buckets.iter().map(|b| b.1).sum::<u64>(), 600_002);
    assert_eq!(irq0.buckets.first(), Some(&(0, 276_489)));
    assert_eq!(irq0.buckets.iter().find(|b| b.0 == 16_000), Some(&(16_000, 2)));
    assert_eq!((irq0.overflows, irq0.count, irq0.avg_ns), (0, Some(600_002), Some(0.0)));
    let thr4 = histogram(&parsed.series[9].data);
    assert_eq!((thr4.min_ns, thr4.max_ns, thr4.avg_ns), (Some(1000), Some(50_000), Some(5000.0)));
}

#[test]
fn user_columns_nanoseconds_and_the_all_block() {
    let file = fixture("timerlat-6.16-user-ns.txt");
    let run = run_of(file.clone());
    let expected = [
        ("timerlat.irq", 0, 301, 1217, 11_250),
        ("timerlat.thread", 0, 301, 3113, 25_003),
        ("timerlat.user", 0, 302, 3945, 25_900),
        ("timerlat.irq", 2, 250, 906, 2868),
        ("timerlat.thread", 2, 251, 2712, 7777),
    ];
    let expected: Vec<_> = expected
        .iter()
        .map(|&(metric, cpu, count, min, max)| (metric.to_string(), cpu, format!("cpu{cpu:03}"), count, min, max))
        .collect();
    // The ALL block repeats these: it is checked, not imported; Usr-002 counted nothing.
    assert_eq!(rows(&run), expected);
    let info = run.imported.as_ref().unwrap();
    assert_eq!((info.bucket_ns, info.resolution_ns), (Some(500), 1));
    assert!(info.notes.iter().any(|n| n.contains("Usr-002: no samples")), "{:?}", info.notes);
    assert!(info.notes.iter().any(|n| n.contains("1 lines after the histogram")), "{:?}", info.notes);
    assert_eq!(run.duration_s, 3725.0);

    let parsed = rtla::parse(&[file], &ImportOptions::default()).unwrap();
    for (series, over) in parsed.series.iter().zip([1, 1, 1, 0, 0]) {
        let h = histogram(&series.data);
        assert_eq!(h.overflows, over, "{}", series.metric);
        // Every sample once: buckets plus overflows make the count row.
        assert_eq!(h.buckets.iter().map(|b| b.1).sum::<u64>() + h.overflows, h.count.unwrap());
        // Index 9500 is the last printed: beyond it lies entry 20 (at least 10000 ns).
        assert_eq!(h.overflow_from_ns, 10_000);
    }
}

#[test]
fn thread_only_columns_with_zeros_and_overflows() {
    let file = fixture("timerlat-6.1-thread-zeros.txt");
    let run = run_of(file.clone());
    assert_eq!(
        rows(&run),
        [
            ("timerlat.thread".to_string(), 1, "cpu001".to_string(), 402, 4000, 480_000),
            ("timerlat.thread".to_string(), 3, "cpu003".to_string(), 401, 6000, 101_000),
        ]
    );
    let parsed = rtla::parse(&[file], &ImportOptions::default()).unwrap();
    let h = histogram(&parsed.series[0].data);
    // --with-zeros prints all 10 entries of 10 µs: the overflows start exactly at 100 µs.
    assert_eq!((h.width_ns, h.overflows, h.overflow_from_ns), (10_000, 2, 100_000));
    let m = &run.measurements[0];
    // One overflow at the bound, the largest at the exact max.
    assert_eq!(m.moments.max, 480_000);
    assert_eq!(m.details.get("source_overflows"), Some(&rtlab_results::run::Detail::Int(2)));
}

#[test]
fn osnoise_documentation_example() {
    let run = run_of(fixture("osnoise-6.1-docs-example.txt"));
    let counts = [55215, 54649, 54703, 54620, 54714, 55003, 54499, 55461, 54668, 55052, 55309, 54880];
    let maxes = [30, 30, 20, 20, 30, 40, 40, 40, 40, 50, 50, 50];
    let expected: Vec<_> = (0..12)
        .map(|c| ("osnoise.noise".to_string(), c, format!("cpu{c:03}"), counts[c], 0, maxes[c] * 1000))
        .collect();
    assert_eq!(rows(&run), expected);
    assert!(run.measurements.iter().all(|m| m.probe == "osnoise"));
    let info = run.imported.as_ref().unwrap();
    assert_eq!(info.layouts, ["rtla-osnoise-histogram"]);
    assert_eq!(info.bucket_ns, Some(10_000));
    assert_eq!(run.experiment.interval_ns, 1_000_000_000);
    assert!(info.assumed.iter().any(|a| a.starts_with("interval 1 s: osnoise's default period")));
}

#[test]
fn osnoise_decimal_averages() {
    let parsed = rtla::parse(&[fixture("osnoise-6.16-avg.txt")], &ImportOptions::default()).unwrap();
    let averages: Vec<_> = parsed.series.iter().map(|s| histogram(&s.data).avg_ns).collect();
    assert_eq!(averages, [Some(5200.0), Some(3770.0)]);
    let run = run_of(fixture("osnoise-6.16-avg.txt"));
    assert_eq!(rows(&run)[0], ("osnoise.noise".to_string(), 0, "cpu000".to_string(), 121, 1000, 38_000));
}

#[test]
fn timerlat_top_imports_its_summary_table() {
    // The screen clear and colours rtla prints without -q are no obstacle.
    let run = run_of(fixture("timerlat-top.txt"));
    assert_eq!(
        rows(&run),
        [
            ("timerlat.irq".to_string(), 0, "cpu000".to_string(), 10001, 0, 12_000),
            ("timerlat.thread".to_string(), 0, "cpu000".to_string(), 10001, 2_000, 31_000),
            ("timerlat.irq".to_string(), 1, "cpu001".to_string(), 10001, 0, 9_000),
            ("timerlat.thread".to_string(), 1, "cpu001".to_string(), 10001, 2_000, 27_000),
        ]
    );
    assert_eq!(run.scenarios[0].duration_s, 10.0);
}

/// The documentation example with one line replaced.
fn docs_with(line: usize, replacement: &str) -> SourceFile {
    let text = String::from_utf8(fixture("timerlat-6.1-docs-example.txt").bytes).unwrap();
    let lines: Vec<&str> = text.lines().enumerate().map(|(i, l)| if i + 1 == line { replacement } else { l }).collect();
    text_file("docs.txt", &(lines.join("\n") + "\n"))
}

#[test]
fn damaged_files_name_the_line_and_the_reason() {
    let text = String::from_utf8(fixture("timerlat-6.1-docs-example.txt").bytes).unwrap();
    let count_line = text.lines().position(|l| l.starts_with("count:")).unwrap() + 1;
    let min_line = count_line + 1;
    let cases = [
        (docs_with(count_line, "count:   600002    600002    600002    600002    600002    600002    600002    600002    600002    600001 "),
         format!("docs.txt:{count_line}: Thr-004: count 600001, but its buckets and over: hold 600002")),
        (docs_with(6, "1        318327     35487    388149"),
         "docs.txt:6: 3 values where the header names 10 columns".to_string()),
        (docs_with(6, "1        318327     35487    388149     30024     94531     48382     83082     71078    388026     -5 "),
         "docs.txt:6: \"-5\" is not a count".to_string()),
        (docs_with(7, "0          3282    122584      4019    126527     28231    109012     23311     89309      4568     98739 "),
         "docs.txt:7: bucket index 0 does not follow the previous one".to_string()),
        (docs_with(min_line, "min:          3         1         0         1         0         1         0         1         0         1 "),
         format!("docs.txt:{min_line}: IRQ-000: min 3000 ns is not in the lowest non-empty bucket (0 ns)")),
        (docs_with(4, "   IRQ-000   Thr-000"),
         "docs.txt:4: the rows have no bucket index (printed with --no-index): rtlab cannot tell the buckets from the summary rows".to_string()),
        (docs_with(4, "Index   IRQ-000   Thr-000   CPU-001"),
         "docs.txt:4: \"CPU-001\" is not a column of an rtla timerlat histogram".to_string()),
        (docs_with(2, "# Time unit is fortnights (ft)"), "docs.txt:2: unknown time unit \"fortnights (ft)\"".to_string()),
    ];
    for (file, expected) in cases {
        assert_eq!(error_of(&[file]), expected);
    }
    // Truncated before "over:": never a partial import.
    let cut: String = text.lines().take(20).map(|l| format!("{l}\n")).collect();
    assert_eq!(
        error_of(&[text_file("cut.txt", &cut)]),
        "cut.txt: the histogram has no \"over:\" row: the file is truncated"
    );
    // Two histograms in one file.
    let twice = format!("{text}{text}");
    let second_header = text.lines().count() + 1;
    assert_eq!(
        error_of(&[text_file("twice.txt", &twice)]),
        format!("twice.txt:{second_header}: a second histogram starts here: import each run's output on its own")
    );
    // Not text, not rtla.
    let mut binary = text.as_bytes().to_vec();
    binary.splice(100..100, [0xff, 0xfe]);
    assert_eq!(error_of(&[SourceFile { path: "bin".into(), bytes: binary }]), "bin:4: not UTF-8 text");
    assert!(error_of(&[text_file("other.txt", "hello\n")]).starts_with("other.txt: not an rtla histogram"));
    assert!(error_of(&[fixture("osnoise-6.16-avg.txt"), fixture("osnoise-6.16-avg.txt")])
        .contains("rtla prints one histogram per run"));
}

#[test]
fn an_all_block_that_disagrees_with_the_cpus_is_an_error() {
    let text = String::from_utf8(fixture("timerlat-6.16-user-ns.txt").bytes).unwrap();
    // The ALL block's max row is the last one.
    let at = text.rfind("max:      11250").unwrap();
    let bad = format!("{}max:      11251{}", &text[..at], &text[at + "max:      11250".len()..]);
    let line = text[..at].lines().count() + 1;
    assert_eq!(
        error_of(&[text_file("all.txt", &bad)]),
        format!("all.txt:{line}: ALL IRQ max 11251 is not the largest per-CPU max")
    );
}

#[test]
fn fuzzed_inputs_never_panic_and_what_imports_is_consistent() {
    let fixtures = [
        "timerlat-6.1-docs-example.txt",
        "timerlat-6.16-user-ns.txt",
        "timerlat-6.1-thread-zeros.txt",
        "osnoise-6.1-docs-example.txt",
        "osnoise-6.16-avg.txt",
        "timerlat-top.txt",
    ];
    let seeds: Vec<Vec<SourceFile>> = fixtures.iter().map(|f| vec![fixture(f)]).collect();
    let tried = fuzz::run(ImportFormat::Rtla, &seeds);
    assert!(tried > 1000, "{tried} inputs");
}

/// The mutation fuzzer shared by the three importers' tests.
#[path = "import_rtla/fuzz.rs"]
mod fuzz;
