//! Imports that know what the source clipped (censored data). The fixtures are real files:
//! `cyclictest -m -p 90 -i 1000 -l 3000 -h 20 -q` on the development VM (2,566 of 3,000
//! samples beyond the 20 µs histogram; one and two threads), and `rtla timerlat hist` /
//! `rtla osnoise hist` from Debian's PREEMPT_RT 6.1 kernel under QEMU (TCG), with small
//! histograms (`-E 20 -b 1`, `-E 30 -b 50`) so that most samples are in `over:`. Oracles are
//! the source's own footer and summary lines.

use rtlab_analysis::requirement::parse_requirement;
use rtlab_formats::import::{import, ImportFormat, ImportOptions, SourceFile};
use rtlab_report::terminal::TerminalSummary;
use rtlab_report::Exporter;
use rtlab_results::run::{Measurement, RunResult};
use rtlab_results::set::{ReportExporter, ReportSet, SourcedRun};
use rtlab_results::verdict::Outcome;
use std::path::Path;

fn fixture(dir: &str, name: &str) -> SourceFile {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import").join(dir).join(name);
    SourceFile { path: format!("{dir}/{name}"), bytes: std::fs::read(&path).unwrap_or_else(|e| panic!("{name}: {e}")) }
}

fn imported(format: ImportFormat, dir: &str, name: &str) -> RunResult {
    let run = import(format, &[fixture(dir, name)], &ImportOptions::default()).unwrap();
    run.check().unwrap();
    // run.json keeps the censoring: written and read back, nothing changes.
    let again: RunResult = serde_json::from_str(&serde_json::to_string(&run).unwrap()).unwrap();
    assert_eq!(again, run);
    run
}

fn cyclictest(name: &str) -> RunResult {
    imported(ImportFormat::Cyclictest, "cyclictest", name)
}

fn rtla(name: &str) -> RunResult {
    imported(ImportFormat::Rtla, "rtla", name)
}

fn measurement<'a>(run: &'a RunResult, metric: &str, cpu: usize) -> &'a Measurement {
    run.measurements.iter().find(|m| m.metric == metric && m.cpu == cpu).unwrap()
}

fn lower_bounds(m: &Measurement) -> Vec<String> {
    m.summary.as_ref().unwrap().censored.as_ref().map(|c| c.lower_bound.clone()).unwrap_or_default()
}

fn verdict(run: &RunResult, requirement: &str) -> rtlab_results::verdict::Verdict {
    rtlab_report::verdict::judge_run(run, &[parse_requirement(requirement).unwrap()]).unwrap()
}

#[test]
fn cyclictest_h20_gives_the_sources_mean_and_lower_bounds_beyond_the_histogram() {
    // Footer: Total 434, Min 9, Avg 50, Max 2066, Histogram Overflows 2566.
    let run = cyclictest("real-2.4-h20-overflowing.hist");
    let m = measurement(&run, "timer.latency", 0);
    let s = m.summary.as_ref().unwrap();
    assert_eq!((m.count, s.min, s.max), (3000, 9_000, 2_066_000));
    assert_eq!(s.mean, 50_000.0, "cyclictest's own Avg, not the buckets' 20.2 µs");
    let c = s.censored.as_ref().unwrap();
    assert_eq!((c.above_ns, c.count), (20_000, 2566));
    assert_eq!(c.exact, ["min", "max", "mean"]);
    // 434 samples lie within the histogram: every rank above 434 lands among the clipped.
    assert_eq!(c.lower_bound, ["stddev", "p50", "p90", "p99", "p99.9"]);
    assert_eq!((s.p50, s.p99, s.p99_9), (20_000, 20_000, 20_000), "shown as the bound they are at least");
    // p99.99 of 3,000 is the 3,000th sample: cyclictest's exact max.
    assert_eq!((s.p99_99, s.p99_999), (2_066_000, 2_066_000));
    let info = run.imported.as_ref().unwrap();
    assert!(info.exact.iter().any(|e| e.starts_with("mean")), "{:?}", info.exact);
    assert!(!info.bounded.contains(&"percentiles".to_string()), "no claim of 1 µs for clipped percentiles");
    assert!(info.censored[0].contains("2,566 of 3,000 samples"), "{:?}", info.censored);
}

#[test]
fn two_threads_combine_into_one_censored_row() {
    // Avg 64 and 73 µs over 1,500 samples each; overflows 1,394 and 1,380.
    let run = cyclictest("real-2.4-h20-2threads-overflowing.hist");
    let set = ReportSet { runs: vec![SourcedRun { source: "h20".into(), run: run.clone() }], verdict: None };
    let digest = rtlab_report::digest::RunDigest::of(&set.runs[0].run).unwrap();
    let all = digest.scenarios[0].metric("timer.latency").unwrap().overall();
    let s = all.summary.as_ref().unwrap();
    assert_eq!(all.cpu, None);
    assert_eq!(s.mean, (64_000.0 * 1500.0 + 73_000.0 * 1500.0) / 3000.0);
    let c = s.censored.as_ref().unwrap();
    assert_eq!((c.above_ns, c.count), (20_000, 1394 + 1380));
    assert!(s.is_lower_bound("p50") && s.is_lower_bound("stddev") && !s.is_lower_bound("max"));
}

#[test]
fn a_requirement_on_a_clipped_statistic_is_never_met() {
    let run = cyclictest("real-2.4-h20-overflowing.hist");
    // p99 is at least 20 µs: below 50 µs it may or may not be.
    let v = verdict(&run, "timer p99 < 50us");
    assert_eq!(v.outcome(), Outcome::Undecided, "{}", v.summary);
    let check = &v.checks[0];
    assert_eq!((check.measured_ns, check.margin_ns), (None, None));
    assert!(check.undecided.as_deref().unwrap().contains("lies beyond the source's histogram"), "{check:?}");
    // At least 20 µs already breaks 10 µs.
    let v = verdict(&run, "timer p99 < 10us");
    assert_eq!(v.outcome(), Outcome::NotMet);
    assert!(v.checks[0].lower_bound && v.checks[0].measured_ns == Some(20_000));
    assert!(v.summary.contains("was ≥ 20.0 µs"), "{}", v.summary);
    // The source's own mean and max decide as any exact figure does.
    assert_eq!(verdict(&run, "timer mean < 100us").outcome(), Outcome::Met);
    assert_eq!(verdict(&run, "timer mean < 30us").outcome(), Outcome::NotMet);
    assert_eq!(verdict(&run, "timer max < 5ms").outcome(), Outcome::Met);
    // pWCET refuses the censored tail.
    let v = verdict(&run, "timer pwcet(1e-9) < 5ms");
    assert_eq!(v.outcome(), Outcome::Undecided);
    assert!(v.checks[0].undecided.as_deref().unwrap().contains("the tail is censored"), "{:?}", v.checks[0]);
}

#[test]
fn rtla_timerlat_hist_from_the_rt_guest_gives_rtlas_avg() {
    // rtla timerlat hist -d 10s -E 20 -b 1 -c 0: over 2999 / 3002, avg 1791 and 2686 µs.
    let run = rtla("timerlat-6.1-rt-guest-E20-b1.txt");
    let irq = measurement(&run, "timerlat.irq", 0);
    let s = irq.summary.as_ref().unwrap();
    assert_eq!((irq.count, s.min, s.max, s.mean), (3002, 8_000, 74_457_000, 1_791_000.0));
    assert_eq!(lower_bounds(irq), ["stddev", "p50", "p90", "p99", "p99.9"]);
    // Every thread sample overflowed: at least the source's min, 96 µs.
    let thread = measurement(&run, "timerlat.thread", 0);
    let s = thread.summary.as_ref().unwrap();
    assert_eq!((s.mean, s.p50), (2_686_000.0, 96_000));
    assert!(s.stddev > 1_000_000.0, "the exact max alone spreads the samples: {}", s.stddev);
    assert_eq!(verdict(&run, "timerlat.irq mean < 300us").outcome(), Outcome::NotMet);
    assert_eq!(verdict(&run, "timerlat.irq p99 < 300us").outcome(), Outcome::Undecided);
    assert_eq!(verdict(&run, "timerlat.thread p50 < 50us").outcome(), Outcome::NotMet);
}

#[test]
fn rtla_two_cpus_and_osnoise_from_the_rt_guest() {
    // -E 30 -b 50 -c 0-1: over 1393/1439/1407/1443, avg 2621/3065/2720/3171 µs.
    let run = rtla("timerlat-6.1-rt-guest-E30-b50.txt");
    for (metric, cpu, count, over, avg) in [
        ("timerlat.irq", 0, 2763, 1393, 2621),
        ("timerlat.thread", 0, 2763, 1439, 3065),
        ("timerlat.irq", 1, 2643, 1407, 2720),
        ("timerlat.thread", 1, 2643, 1443, 3171),
    ] {
        let m = measurement(&run, metric, cpu);
        let s = m.summary.as_ref().unwrap();
        let c = s.censored.as_ref().unwrap();
        assert_eq!((m.count, c.count, c.above_ns, s.mean), (count, over, 1_500_000, avg as f64 * 1000.0));
        // About half overflowed: the median may be exact or not, the p90 is not.
        assert!(s.is_lower_bound("p90") && !s.is_lower_bound("max"));
        assert_eq!(s.is_lower_bound("p50"), 2 * over >= count, "{metric} cpu{cpu}");
    }
    // rtla osnoise hist -E 20 -b 1: over 4521 of 11565, avg 644 µs.
    let run = rtla("osnoise-6.1-rt-guest-E20-b1.txt");
    let m = measurement(&run, "osnoise.noise", 0);
    let s = m.summary.as_ref().unwrap();
    assert_eq!((m.count, s.mean), (11565, 644_000.0));
    assert!(!s.is_lower_bound("p50") && s.is_lower_bound("p90"));
}

#[test]
fn rtla_timerlat_top_from_the_rt_guest_imports_exact_figures_and_censored_percentiles() {
    // rtla timerlat top -d 10s -q: per CPU, COUNT and IRQ / thread min, avg, max (µs).
    let run = rtla("timerlat-top-6.1-rt-guest.txt");
    let expected = [
        ("timerlat.irq", 0, 2873, 14, 2347, 67913),
        ("timerlat.thread", 0, 2873, 54, 2787, 68204),
        ("timerlat.irq", 1, 2710, 21, 2639, 81780),
        ("timerlat.thread", 1, 2710, 74, 3012, 82004),
    ];
    for (metric, cpu, count, min, avg, max) in expected {
        let m = measurement(&run, metric, cpu);
        let s = m.summary.as_ref().unwrap();
        assert_eq!(
            (m.count, s.min, s.mean, s.max),
            (count, min * 1000, avg as f64 * 1000.0, max * 1000),
            "{metric} cpu{cpu}"
        );
        // Nothing but the extremes and the mean is known: every percentile is at least the min.
        let c = s.censored.as_ref().unwrap();
        assert_eq!((c.above_ns, c.count), (min * 1000, count), "{metric} cpu{cpu}");
        // (p99.99 of fewer than 10,000 samples is the max: exact.)
        assert!(["p50", "p99", "p99.9"].iter().all(|p| s.is_lower_bound(p)), "{metric} cpu{cpu}");
        assert!(!s.is_lower_bound("max") && !s.is_lower_bound("mean") && !s.is_lower_bound("min"));
    }
    assert_eq!(run.imported.as_ref().unwrap().layouts, ["rtla-timerlat-top"]);

    // A percentile is decided only where the exact min or max decides it.
    let outcome = |requirement: &str| verdict(&run, requirement).outcome();
    assert_eq!(outcome("timerlat.irq p99 < 100ms"), Outcome::Met, "below every CPU's exact max");
    assert_eq!(outcome("timerlat.irq p99 < 10us"), Outcome::NotMet, "below every CPU's exact min");
    assert_eq!(outcome("timerlat.irq p99 < 1ms"), Outcome::Undecided, "between the min and the max");
    // Both CPUs' exact means weighted by their counts: (2873 × 2787 + 2710 × 3012) / 5583 = 2896 µs.
    assert_eq!(outcome("timerlat.thread mean < 2.8ms"), Outcome::NotMet);
    assert_eq!(outcome("timerlat.thread mean < 3ms"), Outcome::Met);
    assert_eq!(outcome("timerlat.thread max < 90ms"), Outcome::Met);
    let met = verdict(&run, "timerlat.irq p99 < 100ms");
    let check = &met.checks[0];
    assert!(check.lower_bound && check.notes.iter().any(|n| n.contains("at most the source's exact max")), "{check:?}");
    assert_eq!(check.margin_ns, Some(100_000_000 - 81_780_000), "the headroom from the exact max");
}

#[test]
fn rtla_osnoise_top_from_the_rt_guest_is_refused_with_the_line() {
    let name = "osnoise-top-6.1-rt-guest.txt";
    let error = import(ImportFormat::Rtla, &[fixture("rtla", name)], &ImportOptions::default()).unwrap_err();
    assert!(error.to_string().contains("`rtla osnoise top` output"), "{name}: {error}");
}

#[test]
fn a_summary_without_censoring_loads_as_before() {
    let json = r#"{"count":1,"min":1,"max":1,"mean":1.0,"stddev":0.0,"p50":1,"p90":1,"p99":1,"p99.9":1,"p99.99":1,"p99.999":1}"#;
    let s: rtlab_analysis::Summary = serde_json::from_str(json).unwrap();
    assert!(s.censored.is_none() && !s.is_lower_bound("p99"));
    assert_eq!(serde_json::to_string(&s).unwrap(), json, "nothing is added to uncensored data");
}

fn set_of(run: RunResult) -> ReportSet {
    ReportSet { runs: vec![SourcedRun { source: "imported".into(), run }], verdict: None }
}

#[test]
fn terminal_summary_of_the_overflowing_cyclictest_file() {
    let mut run = cyclictest("real-2.4-h20-overflowing.hist");
    run.verdict =
        Some(rtlab_report::verdict::judge_run(&run, &[parse_requirement("timer p99 < 50us").unwrap()]).unwrap());
    insta::assert_snapshot!(TerminalSummary.export(&run).unwrap());
}

#[test]
fn terminal_summary_of_the_overflowing_rtla_file() {
    insta::assert_snapshot!(TerminalSummary.export(&rtla("timerlat-6.1-rt-guest-E20-b1.txt")).unwrap());
}

#[test]
fn exports_mark_lower_bounds() {
    let set = set_of(cyclictest("real-2.4-h20-overflowing.hist"));
    let md = rtlab_report::markdown::MarkdownReport.render(&set).unwrap();
    let csv = rtlab_report::csv_report::CsvReport.render(&set).unwrap();
    let json = rtlab_report::json_report::JsonReport.render(&set).unwrap();
    let html = rtlab_report::html::HtmlReport.render(&set).unwrap();
    assert!(md.contains("≥ 20.0") && csv.contains("≥20000") && json.contains("≥ 20.0") && html.contains("≥ 20.0"));
    insta::assert_snapshot!("censored_markdown", md);
    insta::assert_snapshot!("censored_csv", csv);
}
