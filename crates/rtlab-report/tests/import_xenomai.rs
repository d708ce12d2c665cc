//! `--from xenomai`: the `latency` log and its `-g` histogram file. The fixtures are
//! rendered from latency.c's format strings (see tests/fixtures/import/xenomai/README.md);
//! oracles are the files' own figures, read here independently of the importer.

use rtlab_formats::import::{import, xenomai, ImportFormat, ImportOptions, SeriesData, SourceFile};
use rtlab_results::run::{Detail, RunResult};
use std::path::Path;

#[path = "import_rtla/fuzz.rs"]
mod fuzz;

fn fixture(name: &str) -> SourceFile {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import/xenomai").join(name);
    SourceFile {
        path: format!("xenomai/{name}"),
        bytes: std::fs::read(&path).unwrap_or_else(|e| panic!("{name}: {e}")),
    }
}

fn text_file(name: &str, text: &str) -> SourceFile {
    SourceFile { path: name.to_string(), bytes: text.as_bytes().to_vec() }
}

fn run_of(files: &[SourceFile]) -> RunResult {
    let run = import(ImportFormat::Xenomai, files, &ImportOptions::default()).unwrap();
    run.check().unwrap();
    run
}

fn error_of(files: &[SourceFile]) -> String {
    import(ImportFormat::Xenomai, files, &ImportOptions::default()).unwrap_err().to_string()
}

fn text(file: &SourceFile) -> String {
    String::from_utf8(file.bytes.clone()).unwrap()
}

/// µs with three decimals -> ns.
fn ns(field: &str) -> i64 {
    (field.trim().parse::<f64>().unwrap() * 1000.0).round() as i64
}

/// The RTD lines' max column, in ns.
fn rtd_maxima(log: &SourceFile) -> Vec<Option<i64>> {
    text(log).lines().filter_map(|l| l.strip_prefix("RTD|")).map(|l| Some(ns(l.split('|').nth(2).unwrap()))).collect()
}

/// The RTS line's min, avg, max (ns) and overruns.
fn rts(log: &SourceFile) -> (i64, i64, i64, u64) {
    let text = text(log);
    let line = text.lines().find_map(|l| l.strip_prefix("RTS|")).unwrap();
    let f: Vec<&str> = line.split('|').collect();
    (ns(f[0]), ns(f[1]), ns(f[2]), f[3].trim().parse().unwrap())
}

/// The -g data: (x, count) pairs whose x has a fractional .5 (bucket centres): hits = count - 1.
fn gnuplot_hits(file: &SourceFile) -> u64 {
    text(file)
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let mut t = l.split_whitespace();
            let (x, c) = (t.next()?, t.next()?);
            (x.contains('.') && x.parse::<f64>().is_ok()).then(|| c.parse::<u64>().unwrap() - 1)
        })
        .sum()
}

#[test]
fn log_and_histogram_give_the_distribution_the_exact_extremes_and_each_second() {
    let (log, gnuplot) = (fixture("user-1ms.log"), fixture("user-1ms.gnuplot"));
    let run = run_of(&[log.clone(), gnuplot.clone()]);
    let (min, avg, max, overruns) = rts(&log);
    assert_eq!((min, avg, max, overruns), (1100, 3073, 40_608, 0));
    let m = &run.measurements[0];
    assert_eq!((m.probe.as_str(), m.metric.as_str(), m.thread.as_str()), ("timer", "timer.latency", "latency"));
    // 25 RTD lines of 1000 samples (1 s at 1 ms), and the interrupted last second's 400 in
    // the histogram only; the -g file's counts minus one add up.
    assert_eq!(gnuplot_hits(&gnuplot), 25_400);
    assert_eq!(m.count, 25_400);
    let s = m.summary.as_ref().unwrap();
    assert_eq!((s.min, s.max), (min, max));
    assert_eq!(m.per_second_max_ns, rtd_maxima(&log));
    assert_eq!(m.per_second_max_ns.len(), 25);
    assert_eq!(m.per_second_max_ns[17], Some(38_541));
    assert_eq!(m.details.get("source_avg_ns"), Some(&Detail::Float(3073.0)));
    assert_eq!(m.details.get("xenomai_mode"), Some(&Detail::Text("periodic user-mode task".into())));
    assert_eq!((m.interval_ns, run.experiment.priority, run.duration_s), (1_000_000, 99, 26.0));
    let info = run.imported.as_ref().unwrap();
    assert_eq!(info.layouts, ["xenomai-latency", "xenomai-histogram"]);
    assert_eq!(info.bucket_ns, Some(1000));
    assert_eq!(info.source_tool.as_deref(), Some("xenomai latency (Xenomai/cobalt v3.2.4)"));
    assert!(info.assumed.is_empty(), "{:?}", info.assumed);
    assert_eq!((run.host.hostname.as_str(), run.host.kernel_release.as_str()), ("rtbox", "5.10.209-xeno"));
    // The build arguments' second line swallowed the first edge line ("...pkgconfig1 1").
    assert!(info.notes.iter().any(|n| n.contains("xeno-config --info")), "{:?}", info.notes);
}

#[test]
fn the_log_alone_is_a_summary_with_per_second_maxima() {
    let log = fixture("user-1ms.log");
    let parsed = xenomai::parse(std::slice::from_ref(&log), &ImportOptions::default()).unwrap();
    let (min, avg, max, _) = rts(&log);
    assert_eq!(parsed.series[0].data, SeriesData::SummaryOnly { min_ns: min, avg_ns: avg as f64, max_ns: max });
    let run = run_of(std::slice::from_ref(&log));
    let m = &run.measurements[0];
    assert_eq!(m.count, 0);
    assert_eq!(m.per_second_max_ns, rtd_maxima(&log));
    assert_eq!(m.details.get("source_max_ns"), Some(&Detail::Int(40_608)));
    let info = run.imported.as_ref().unwrap();
    assert_eq!(info.exact, ["min", "mean", "max"]);
    assert!(info.notes.iter().any(|n| n.contains("give the file written with latency -g")));
}

#[test]
fn the_histogram_alone_carries_its_header() {
    let gnuplot = fixture("user-1ms.gnuplot");
    let run = run_of(&[gnuplot]);
    let m = &run.measurements[0];
    let s = m.summary.as_ref().unwrap();
    assert_eq!((m.count, s.min, s.max, m.interval_ns), (25_400, 1100, 40_608, 1_000_000));
    assert!(m.per_second_max_ns.is_empty());
}

#[test]
fn negative_latencies_saturated_cells_overruns_and_mode_switches() {
    let (log, gnuplot) = (fixture("kernel-100us.log"), fixture("kernel-100us.gnuplot"));
    let run = run_of(&[log.clone(), gnuplot.clone()]);
    let (min, _, max, overruns) = rts(&log);
    assert_eq!((min, max, overruns), (-800, 31_234, 3));
    let m = &run.measurements[0];
    assert_eq!(gnuplot_hits(&gnuplot), 30_000);
    let s = m.summary.as_ref().unwrap();
    assert_eq!((m.count, s.min, s.max, m.overruns, m.cycles), (30_000, -800, 31_234, 3, 30_003));
    assert_eq!(m.interval_ns, 100_000);
    assert_eq!(m.details.get("mode_switches"), Some(&Detail::Int(1)));
    // Cells of 500 ns, the last (39: 19.5 µs) holding 19.6, 25 and 31.234 µs.
    assert_eq!(m.details.get("source_overflows"), Some(&Detail::Int(3)));
    assert_eq!(m.per_second_max_ns, rtd_maxima(&log));
    let info = run.imported.as_ref().unwrap();
    assert_eq!(info.bucket_ns, Some(500));
    for needle in ["the last bucket (19.500 µs)", "min -0.800 µs is negative", "involuntary mode switches"] {
        assert!(info.notes.iter().any(|n| n.contains(needle)), "{needle}: {:?}", info.notes);
    }
    let parsed = xenomai::parse(&[log, gnuplot], &ImportOptions::default()).unwrap();
    let SeriesData::Histogram(h) = &parsed.series[0].data else { panic!("a histogram") };
    assert_eq!((h.width_ns, h.overflows, h.overflow_from_ns), (500, 3, 19_500));
    assert!(h.buckets.contains(&(-800, 1)), "the min placed exactly");
}

#[test]
fn hsd_lines_need_the_default_bucket_size() {
    // kernel-100us ran with -B 500: its HSD indices do not fit 1 µs buckets.
    let error = error_of(&[fixture("kernel-100us.log")]);
    assert!(
        error.starts_with(
            "xenomai/kernel-100us.log:14: a bucket lies above the max 31.234 µs: the HSD buckets do not fit"
        ),
        "{error}"
    );
}

#[test]
fn a_headerless_xenomai_2_histogram() {
    let gnuplot = fixture("xenomai-2.6.gnuplot");
    let run = run_of(std::slice::from_ref(&gnuplot));
    let m = &run.measurements[0];
    let s = m.summary.as_ref().unwrap();
    // Without the header only the buckets are known: lower bounds of the first and last.
    assert_eq!((m.count, s.min, s.max), (gnuplot_hits(&gnuplot), 2000, 55_000));
    assert_eq!(m.count, 20_000);
    let info = run.imported.as_ref().unwrap();
    assert!(info.assumed.iter().any(|a| a.starts_with("interval 1 ms")));
    assert!(info.notes.iter().any(|n| n.contains("no header (Xenomai 2.x)")));
}

#[test]
fn a_log_cut_short_is_summarised_from_its_rtd_lines() {
    let log = fixture("cut-short.log");
    let parsed = xenomai::parse(std::slice::from_ref(&log), &ImportOptions::default()).unwrap();
    // min / max of the RTD columns, the mean of their averages (as latency computes it).
    let text = text(&log);
    let rows: Vec<Vec<i64>> =
        text.lines().filter_map(|l| l.strip_prefix("RTD|")).map(|l| l.split('|').take(3).map(ns).collect()).collect();
    let min = rows.iter().map(|r| r[0]).min().unwrap();
    let max = rows.iter().map(|r| r[2]).max().unwrap();
    let avg = rows.iter().map(|r| r[1]).sum::<i64>() / rows.len() as i64;
    assert_eq!(parsed.series[0].data, SeriesData::SummaryOnly { min_ns: min, avg_ns: avg as f64, max_ns: max });
    assert_eq!((min, max, rows.len()), (700, 14_253, 4));
    assert!(parsed.notes.iter().any(|n| n.starts_with("no RTS line")));
    assert_eq!((parsed.interval_ns, parsed.priority), (Some(100_000), Some(95)));
}

#[test]
fn a_histogram_written_into_the_log_with_a_spike_in_the_unreported_last_second() {
    let log = fixture("inline-gnuplot.log");
    let run = run_of(std::slice::from_ref(&log));
    let m = &run.measurements[0];
    let s = m.summary.as_ref().unwrap();
    // RTS says max 8.8 µs; the last second's 12.345 µs sample is in the 12 µs bucket only.
    assert_eq!(rts(&log).2, 8800);
    assert_eq!((m.count, s.min, s.max), (gnuplot_hits(&log), 1500, 12_000));
    assert_eq!(m.count, 10_003);
    assert_eq!(m.per_second_max_ns, rtd_maxima(&log));
    let info = run.imported.as_ref().unwrap();
    assert!(info.notes.iter().any(|n| n.starts_with("the histogram holds samples above the recorded max 8.800 µs")));
}

#[test]
fn damaged_or_mismatched_files_name_the_file_and_line() {
    // A log of one run with the histogram of another.
    let error = error_of(&[fixture("user-1ms.log"), fixture("kernel-100us.gnuplot")]);
    assert_eq!(
        error,
        "xenomai/kernel-100us.gnuplot:1: period in µs: 100 here, 1000 before: the files are not from the same run"
    );
    let log = text(&fixture("user-1ms.log"));
    let damaged = log.replacen("RTD|      1.100|      3.092|", "RTD|      1.100|      3.0x2|", 1);
    assert_eq!(error_of(&[text_file("bad.log", &damaged)]), "bad.log:8: lat avg \"3.0x2\" is not a latency in µs");
    let damaged = log.replacen("RTD|      1.100|      3.092|     10.317|       0|", "RTD|      1.100|      3.092|", 1);
    assert_eq!(error_of(&[text_file("bad.log", &damaged)]), "bad.log:8: 5 fields where the RTH header names 7");
    let damaged = format!("{log}RTD|      1.100|      3.092|     10.317|       0|     0|      1.100|     10.317\n");
    let line = log.lines().count() + 1;
    assert_eq!(
        error_of(&[text_file("bad.log", &damaged)]),
        format!("bad.log:{line}: an RTD line after the RTS summary: a second run starts here")
    );
    let gnuplot = text(&fixture("user-1ms.gnuplot"));
    let (index, data_line) = gnuplot.lines().enumerate().find(|(_, l)| l.starts_with("3.5 ")).unwrap();
    let damaged = gnuplot.replacen(data_line, "3.5 64x7", 1);
    assert_eq!(
        error_of(&[text_file("bad.gnuplot", &damaged)]),
        format!("bad.gnuplot:{}: \"3.5 64x7\" is not a \"latency count\" pair of a latency -g histogram", index + 1)
    );
    let damaged = gnuplot.replacen(data_line, &data_line.replacen("3.5", "3.25", 1), 1);
    assert!(error_of(&[text_file("bad.gnuplot", &damaged)]).contains("not latency's -g layout"));
    let damaged = gnuplot.replacen("#       1.100|", "#      99.100|", 1);
    assert_eq!(error_of(&[text_file("bad.gnuplot", &damaged)]), "bad.gnuplot:3: min above max");
    assert!(error_of(&[fixture("user-1ms.log"), fixture("cut-short.log")])
        .starts_with("xenomai/cut-short.log: a second latency log"));
    assert_eq!(
        error_of(&[text_file("empty.txt", "")]),
        "empty.txt: neither a latency log (RTx| lines) nor a latency -g histogram"
    );
    let mut binary = fixture("user-1ms.log");
    binary.bytes[300] = 0xff;
    assert_eq!(error_of(&[binary]), "xenomai/user-1ms.log:7: not UTF-8 text");
}

#[test]
fn inputs_that_once_crashed_the_importer() {
    // Found by the fuzzer: an RTS duration of 18446744073709551615 hours overflowed the
    // seconds; such a duration is not read, the -g header's is.
    let run = run_of(&[fixture("fuzz-crash-duration.log"), fixture("fuzz-crash-duration.gnuplot")]);
    assert_eq!((run.duration_s, run.measurements[0].count), (26.0, 25_400));
}

#[test]
fn fuzzed_inputs_never_panic_and_what_imports_is_consistent() {
    let seeds = vec![
        vec![fixture("fuzz-crash-duration.log"), fixture("fuzz-crash-duration.gnuplot")],
        vec![fixture("user-1ms.log"), fixture("user-1ms.gnuplot")],
        vec![fixture("kernel-100us.log"), fixture("kernel-100us.gnuplot")],
        vec![fixture("xenomai-2.6.gnuplot")],
        vec![fixture("cut-short.log")],
        vec![fixture("inline-gnuplot.log")],
    ];
    let tried = fuzz::run(ImportFormat::Xenomai, &seeds);
    assert!(tried > 1000, "{tried} inputs");
}
