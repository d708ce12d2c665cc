use super::*;
use rtlab_history::HistoryDb;
pub(crate) use rtlab_results::history::fixtures::{self, host};
use rtlab_results::history::range::{TimeRange, DAY_NS};
use rtlab_results::history::report::{EventKind, HistoryQuery};
use rtlab_results::history::{MonitorSettings, Resolution, WindowMetric, WindowRecord};

/// 2026-11-20 00:00:00 UTC.
pub(crate) const T0: i64 = 1_795_132_800_000_000_000;
const MINUTE: i64 = 60_000_000_000;
const HOUR: i64 = 60 * MINUTE;

pub(crate) fn settings() -> MonitorSettings {
    fixtures::settings(&["rtlab", "monitor", "--window", "1m"])
}

fn metric(cpu: usize, values: impl IntoIterator<Item = i64>) -> WindowMetric {
    fixtures::metric(cpu, values, 1, 0)
}

/// A window at `start`: CPU 0 has 1000 samples from `base` in 10 ns steps (the last one
/// replaced by `spike` when given), CPU 1 one sample of 12 µs.
fn window(start: i64, base: i64, spike: Option<i64>) -> WindowRecord {
    let cpu0 = (0..1000).map(|j| if j == 999 { spike.unwrap_or(base + j * 10) } else { base + j * 10 });
    WindowRecord {
        start_ns: start,
        end_ns: start + MINUTE,
        resolution: Resolution::Window,
        merged: 1,
        phase: "idle".into(),
        metrics: vec![metric(0, cpu0), metric(1, [12_000])],
        activity: None,
    }
}

/// Session 1 (kernel 6.1-rt) from T0: four windows, 10.00 to 19.99 µs, a 50 µs spike in the
/// third. Killed; session 2 (kernel 6.6-rt) starts a day and an hour later: four windows, 5 µs
/// slower (15.00 to 24.99 µs).
pub(crate) fn fixture(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("monitor.db");
    let mut db = HistoryDb::open(&path).unwrap();
    let one = db.begin_session(&host("6.1-rt"), &settings(), T0).unwrap();
    for i in 0..4 {
        db.append_window(one.id, &window(T0 + i * MINUTE, 10_000, (i == 2).then_some(50_000))).unwrap();
    }
    let two = db.begin_session(&host("6.6-rt"), &settings(), T0 + DAY_NS + HOUR).unwrap();
    for i in 0..4 {
        db.append_window(two.id, &window(T0 + DAY_NS + HOUR + i * MINUTE, 15_000, None)).unwrap();
    }
    db.end_session(two.id, T0 + DAY_NS + HOUR + 4 * MINUTE, "SIGTERM").unwrap();
    path
}

fn report_of(path: &std::path::Path, query: HistoryQuery) -> HistoryReport {
    let mut report = HistoryDb::open_existing(path).unwrap().history_report(&query).unwrap();
    report.database = "monitor.db".into();
    report
}

fn default_query() -> HistoryQuery {
    HistoryQuery { range: TimeRange::default(), metric: "timer.latency".into(), compare: None, phase: None }
}

#[test]
fn the_views_have_exact_figures() {
    let dir = tempfile::tempdir().unwrap();
    let r = report_of(&fixture(dir.path()), default_query());
    assert_eq!(r.rows.len(), 8);
    assert_eq!((r.first_ns, r.last_ns), (T0, T0 + DAY_NS + HOUR + 4 * MINUTE));
    let maxima: Vec<Option<i64>> = r.rows.iter().map(|p| p.max_ns).collect();
    assert_eq!(maxima[..4], [Some(19_990), Some(19_990), Some(50_000), Some(19_990)]);
    assert!(maxima[4..].iter().all(|m| *m == Some(24_990)));
    assert!(r.rows.iter().all(|p| p.count == 1001 && p.overruns == 2));
    // Per day: exact maxima and counts; the medians of the two days 5 µs apart.
    assert_eq!(r.days.len(), 2);
    assert_eq!((r.days[0].day.as_str(), r.days[0].max_ns, r.days[0].count), ("2026-11-20", Some(50_000), 4004));
    assert_eq!((r.days[1].day.as_str(), r.days[1].max_ns, r.days[1].rows), ("2026-11-21", Some(24_990), 4));
    assert_eq!(r.days[1].kernels, vec!["6.6-rt".to_string()]);
    let (p50a, p50b) = (r.days[0].p50_ns.unwrap(), r.days[1].p50_ns.unwrap());
    assert!((p50b - p50a - 5_000).abs() <= 30, "{p50a} {p50b}");
    // The gap (from the last window of session 1 to session 2) and the kernel change.
    assert_eq!(r.events.len(), 2);
    assert_eq!((r.events[0].kind, r.events[0].at_ns), (EventKind::Gap, T0 + 4 * MINUTE));
    assert_eq!(r.events[0].gap_ns, Some(DAY_NS + HOUR - 4 * MINUTE));
    assert_eq!((r.events[1].kind, r.events[1].at_ns), (EventKind::KernelChange, T0 + DAY_NS + HOUR));
    assert_eq!(r.events[1].text, "kernel 6.1-rt → 6.6-rt");
    // The last day holds session 2 only; the range both.
    assert_eq!((r.last_day.rows, r.last_day.count, r.last_day.max_ns), (4, 4004, Some(24_990)));
    assert_eq!((r.range.count, r.range.min_ns, r.range.max_ns), (8008, Some(10_000), Some(50_000)));
    assert_eq!(r.range.bins.iter().map(|b| b.1).sum::<u64>(), 8008);
    assert!(r.range.bins.iter().all(|b| b.0 % 1000 == 0));
    // Regression: before and after the kernel change, every quantile worse by about 5 µs.
    let g = r.regression.as_ref().expect("a kernel change in the range");
    assert!(g.basis.contains("6.1-rt → 6.6-rt"), "{}", g.basis);
    assert_eq!((g.before.rows, g.before.count, g.before.max_ns), (4, 4004, Some(50_000)));
    assert_eq!((g.after.rows, g.after.kernels.clone()), (4, vec!["6.6-rt".to_string()]));
    let names: Vec<&str> = g.quantiles.iter().map(|q| q.name.as_str()).collect();
    assert_eq!(names, ["p50", "p99", "p99.9"]);
    for q in &g.quantiles {
        assert_eq!(q.change, "worse", "{q:?}");
        assert!((q.difference_ns - 5_000).abs() <= 30, "{q:?}");
        assert!(q.low_ns > 0 && q.low_ns <= q.difference_ns && q.difference_ns <= q.high_ns, "{q:?}");
    }
    assert!(g.headline.starts_with("p99.9 worse by 5.0 µs (95 % CI +"), "{}", g.headline);
}

#[test]
fn ranges_select_and_explicit_comparisons() {
    let dir = tempfile::tempdir().unwrap();
    let path = fixture(dir.path());
    // Only the first day: no kernel change, so no comparison, and it says why.
    let mut query = default_query();
    query.range = TimeRange::new(None, Some(T0 + DAY_NS));
    let r = report_of(&path, query.clone());
    assert_eq!((r.rows.len(), r.days.len(), r.events.len()), (4, 1, 0));
    assert!(r.regression.is_none());
    assert!(r.notes.iter().any(|n| n.starts_with("No regression check: no kernel change")));
    // Two explicit ranges of the same kernel: the first two windows against the next two.
    query.compare = Some((
        TimeRange::new(Some(T0), Some(T0 + 2 * MINUTE)),
        TimeRange::new(Some(T0 + 2 * MINUTE), Some(T0 + 4 * MINUTE)),
    ));
    let r = report_of(&path, query);
    let g = r.regression.unwrap();
    assert!(g.basis.starts_with("the ranges given"), "{}", g.basis);
    assert_eq!((g.before.max_ns, g.after.max_ns), (Some(19_990), Some(50_000)));
    assert_eq!(g.quantiles[0].change, "within noise", "{:?}", g.quantiles[0]);
    // An empty range and an unknown metric are errors that say so.
    let db = HistoryDb::open_existing(&path).unwrap();
    let mut empty = default_query();
    empty.range = TimeRange::new(Some(T0 + 10 * DAY_NS), None);
    let e = db.history_report(&empty).unwrap_err().to_string();
    assert!(e.contains("no windows from 2026-11-30 00:00 to the end"), "{e}");
    let mut other = default_query();
    other.metric = "timer.jitter".into();
    let e = db.history_report(&other).unwrap_err().to_string();
    assert!(e.contains("no metric \"timer.jitter\" in the range (it holds timer.latency)"), "{e}");
}

#[test]
fn a_range_is_a_run_that_the_report_reads() {
    use rtlab_results::set::{ReportExporter, ReportSet, SourcedRun};
    let dir = tempfile::tempdir().unwrap();
    let path = fixture(dir.path());
    let db = HistoryDb::open_existing(&path).unwrap();
    let run = db.run_of_range(TimeRange::default()).unwrap();
    run.check().unwrap();
    assert_eq!(run.scenarios.len(), 1);
    assert_eq!(run.scenarios[0].name, "idle");
    assert_eq!(run.scenarios[0].duration_s, 480.0);
    assert_eq!(run.measurements.len(), 2);
    let cpu0 = &run.measurements[0];
    assert_eq!((cpu0.cpu, cpu0.count, cpu0.overruns, cpu0.cycles), (0, 8000, 8, 8008));
    assert_eq!(cpu0.moments.max, 50_000);
    assert_eq!(cpu0.block_s, 60);
    assert_eq!(cpu0.per_second_max_ns[..3], [Some(19_990), Some(19_990), Some(50_000)]);
    assert_eq!(cpu0.per_second_max_ns.len(), 8);
    assert_eq!(run.host.kernel_release, "6.6-rt");
    assert_eq!(run.label, "board-1 history 2026-11-20 00:00–11-21 01:04");
    assert_eq!((run.start_time.as_str(), run.end_time.as_str()), ("2026-11-20T00:00:00Z", "2026-11-21T01:04:00Z"));
    assert!(run.realtime.notes[0].starts_with("Read from the monitor history"), "{:?}", run.realtime.notes);
    assert!(run.realtime.notes.iter().any(|n| n.contains("spans kernels 6.1-rt, 6.6-rt")));
    // A range of one session: its kernel and only its rows.
    let first = db.run_of_range(TimeRange::new(None, Some(T0 + DAY_NS))).unwrap();
    assert_eq!((first.host.kernel_release.as_str(), first.measurements[0].count), ("6.1-rt", 4000));
    // The report renders it like any run.
    let set = ReportSet { runs: vec![SourcedRun { source: "monitor.db".into(), run: run.clone() }], verdict: None };
    let html = crate::html::HtmlReport.render(&set).unwrap();
    assert!(html.contains("board-1 history 2026-11-20 00:00–11-21 01:04"));
    crate::Exporter::export(&crate::terminal::TerminalSummary, &run).unwrap();
    crate::markdown::MarkdownReport.render(&set).unwrap();
    let e = db.run_of_range(TimeRange::new(Some(T0 + 10 * DAY_NS), None)).unwrap_err().to_string();
    assert!(e.contains("no windows from"), "{e}");
}

#[test]
fn history_terminal() {
    let dir = tempfile::tempdir().unwrap();
    insta::assert_snapshot!(terminal(&report_of(&fixture(dir.path()), default_query())));
}

#[test]
fn history_markdown() {
    let dir = tempfile::tempdir().unwrap();
    insta::assert_snapshot!(markdown(&report_of(&fixture(dir.path()), default_query())));
}

#[test]
fn history_json() {
    let dir = tempfile::tempdir().unwrap();
    let text = json(&report_of(&fixture(dir.path()), default_query())).unwrap();
    let back: HistoryReport = serde_json::from_str(&text).unwrap();
    assert_eq!(back.schema, "rtlab.history/1");
    // The bins are many lines: the snapshot keeps the rest.
    let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
    for view in ["last_day", "range"] {
        let bins = value[view]["bins"].as_array().unwrap().len();
        value[view]["bins"] = serde_json::json!(format!("{bins} bins"));
    }
    insta::assert_snapshot!(serde_json::to_string_pretty(&value).unwrap());
}

#[test]
fn history_html() {
    let dir = tempfile::tempdir().unwrap();
    let page = html::page(&report_of(&fixture(dir.path()), default_query())).unwrap();
    assert!(page.contains("<span class=\"word\">WORSE</span> p99.9 worse by 5.0 µs"));
    assert_eq!(page.matches("<svg class=\"rtlab-svg\"").count(), 3);
    assert!(page.contains("kernel 6.1-rt → 6.6-rt"));
    // The SVG paths are long; the snapshot keeps the page's words and structure.
    let text: String = page
        .lines()
        .filter(|l| {
            !l.starts_with("<path")
                && !l.starts_with("<polyline")
                && !l.starts_with("<circle")
                && !l.starts_with("<line")
                && !l.starts_with("<rect")
                && !l.starts_with("<text")
                && !l.starts_with("<polygon")
        })
        .collect::<Vec<_>>()
        .join("\n");
    insta::assert_snapshot!(text);
}

#[test]
fn many_rows_are_dots_one_per_pixel_at_most() {
    let dir = tempfile::tempdir().unwrap();
    let mut r = report_of(&fixture(dir.path()), default_query());
    let template = r.rows[0].clone();
    r.rows = (0..5000)
        .map(|i| {
            let mut row = template.clone();
            row.start_ns = T0 + i * MINUTE;
            row.end_ns = row.start_ns + MINUTE;
            row.max_ns = Some(10_000 + (i % 7) * 1_000);
            row
        })
        .collect();
    r.last_ns = T0 + 5000 * MINUTE;
    let svg = figures::maxima(&r).unwrap().svg;
    let dots = svg.matches("<circle").count();
    // 7 values over 900 pixel columns: at most 7 × 900 dots, and far fewer than 5000 rows.
    assert!(dots > 7 * 500 / 10 && dots <= 7 * 901, "{dots}");
    assert!(svg.contains("maximum per row (dots)"));
}

#[test]
fn thinned_rows_keep_the_views_exact() {
    use rtlab_history::Retention;
    let dir = tempfile::tempdir().unwrap();
    let path = fixture(dir.path());
    // Three days after T0, the first session's windows (older than two days) become one
    // hourly row; the second session's stay windows.
    let outcome = HistoryDb::open(&path).unwrap().thin(T0 + 3 * DAY_NS, &Retention::keeping(90 * DAY_NS)).unwrap();
    assert_eq!(outcome.merged_into_hours, 4);
    let r = report_of(&path, default_query());
    assert_eq!(r.rows.len(), 5);
    assert_eq!((r.rows[0].resolution, r.rows[0].merged, r.rows[0].max_ns), (Resolution::Hour, 4, Some(50_000)));
    assert_eq!((r.days[0].max_ns, r.days[0].count), (Some(50_000), 4004));
    assert_eq!(r.range.count, 8008);
    assert!(r.notes.iter().any(|n| n.starts_with("1 of the 5 rows are hourly or daily merges")), "{:?}", r.notes);
    assert_eq!(r.regression.as_ref().unwrap().before.max_ns, Some(50_000));
    let run = HistoryDb::open_existing(&path).unwrap().run_of_range(TimeRange::default()).unwrap();
    run.check().unwrap();
    assert_eq!(run.measurements[0].per_second_max_ns[0], Some(50_000));
    assert_eq!(run.measurements[0].per_second_max_ns.len(), 5);
    assert!(run.realtime.notes.iter().any(|n| n.starts_with("1 of the rows are hourly or daily merges")));
}

#[test]
fn phases_of_a_load_schedule() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("schedule.db");
    let mut db = HistoryDb::open(&path).unwrap();
    let session = db.begin_session(&host("6.1-rt"), &settings(), T0).unwrap();
    for i in 0..4 {
        let mut w = window(T0 + i * MINUTE, if i % 2 == 0 { 10_000 } else { 30_000 }, None);
        w.phase = if i % 2 == 0 { "idle".into() } else { "cpu+io".into() };
        db.append_window(session.id, &w).unwrap();
    }
    drop(db);
    let r = report_of(&path, default_query());
    assert!(r.notes[0].starts_with("The range holds the load-schedule phases idle, cpu+io"), "{:?}", r.notes);
    let loaded = report_of(&path, HistoryQuery { phase: Some("cpu+io".into()), ..default_query() });
    assert_eq!((loaded.rows.len(), loaded.range.max_ns), (2, Some(39_990)));
    assert!(title(&loaded).ends_with(", phase cpu+io"));
    let db = HistoryDb::open_existing(&path).unwrap();
    let e = db.history_report(&HistoryQuery { phase: Some("hackbench".into()), ..default_query() }).unwrap_err();
    assert!(e
        .to_string()
        .contains("no rows of phase \"hackbench\" from the beginning to the end (it holds idle, cpu+io)"));
    // As a run: one scenario per phase, the loaded one naming its loads.
    let run = db.run_of_range(TimeRange::default()).unwrap();
    run.check().unwrap();
    let names: Vec<&str> = run.scenarios.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["idle", "cpu+io"]);
    assert!(!run.scenarios[0].is_loaded());
    let loads: Vec<&str> = run.scenarios[1].loads.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(loads, ["cpu", "io"]);
    assert_eq!(run.measurements_of("cpu+io", "timer.latency").map(|m| m.count).sum::<u64>(), 2002);
}
