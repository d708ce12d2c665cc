//! Reports of an imported run (tests/fixtures/imported-histogram.run.json: two threads of a
//! cyclictest-like histogram, one with overflows, built by `import::build_run`): every
//! format says where the run came from and which statistics are exact or bounded, and
//! leaves out what the source did not record instead of showing empty fields.

use rtlab_report::markdown::MarkdownReport;
use rtlab_report::terminal::TerminalSummary;
use rtlab_report::Exporter;
use rtlab_results::run::RunResult;
use rtlab_results::set::{ReportExporter, ReportSet, SourcedRun};
use std::path::Path;

fn imported() -> RunResult {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/imported-histogram.run.json");
    RunResult::load(&path).expect("the imported fixture loads and passes the consistency check")
}

fn set() -> ReportSet {
    ReportSet { runs: vec![SourcedRun { source: "imported".into(), run: imported() }], verdict: None }
}

#[test]
fn the_fixture_is_marked_imported_with_exact_and_bounded_statistics() {
    let run = imported();
    let info = run.imported.as_ref().expect("marked imported");
    assert_eq!(info.from, "cyclictest");
    assert_eq!(info.bucket_ns, Some(1000));
    assert_eq!(info.exact, ["count", "min", "max"]);
    // Two overflows of thread 0: one at the 20 ms bound, the largest at the footer max.
    let t0 = &run.measurements[0];
    assert_eq!(t0.moments.max, 23_456_000);
    assert_eq!(t0.count, t0.cycles);
}

#[test]
fn terminal_summary_states_the_source_and_what_is_exact() {
    insta::assert_snapshot!(TerminalSummary.export(&imported()).unwrap());
}

#[test]
fn markdown_states_the_source_and_what_is_exact() {
    let md = MarkdownReport.render(&set()).unwrap();
    assert!(md.contains("## Run cyclictest: imported from cyclictest (cyclictest-histogram): old/cyclictest.hist"));
    assert!(md.contains("- Bounded by the source's 1 µs histogram buckets"));
    assert!(md.contains("- Not recorded by the source (left empty): host,"));
}

#[test]
fn html_header_shows_only_what_the_source_recorded() {
    let html = rtlab_report::html::HtmlReport.render(&set()).unwrap();
    assert!(html.contains("<div class=\"imported\">"));
    assert!(
        html.contains("Exact (at the source&#39;s resolution of 1 µs): count, min, max.")
            || html.contains("Exact (at the source's resolution of 1 µs): count, min, max.")
    );
    assert!(!html.contains("kernel  ("), "an unknown kernel is left out, not shown empty");
    assert!(!html.contains("(0 s measured)"));
}
