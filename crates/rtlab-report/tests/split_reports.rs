//! The `split` section of `rtlab run --split` in every format, on a fixture run: the 2-CPU
//! fixture with the three part metrics (`timer.irq`, `timer.sched`, `timer.return`, adding up
//! to `timer.latency` sample by sample) and a split section with explained spikes covering
//! every cause kind. Also: run.json with a split section round-trips, one without it still
//! parses, and a run without `--split` shows nothing of it.

mod common;

use common::{fixture_path, measurement, Rng, Thread};
use rtlab_report::csv_report::CsvReport;
use rtlab_report::html::HtmlReport;
use rtlab_report::json::JsonSummary;
use rtlab_report::json_report::JsonReport;
use rtlab_report::markdown::MarkdownReport;
use rtlab_report::split::CAUSE_KINDS;
use rtlab_report::tables::split::{COVERAGE_TABLE, EXPLANATIONS_TABLE, STATEMENT_TABLE};
use rtlab_report::tables::{report_tables, Table};
use rtlab_report::terminal::TerminalSummary;
use rtlab_report::Exporter;
use rtlab_results::run::RunResult;
use rtlab_results::set::{ReportExporter, ReportSet, SourcedRun};
use rtlab_results::split::{
    Cause, CauseKind, ExplainedSpike, Explanation, SplitCounts, SplitCoverage, SplitOverhead, SplitParts, SplitRun,
    Unsplit, WakeSample, DEFAULT_EXPLAINED_PER_THREAD,
};

const SPLIT_TABLES: [&str; 3] = [STATEMENT_TABLE, COVERAGE_TABLE, EXPLANATIONS_TABLE];
const PART_METRICS: [&str; 3] = ["timer.irq", "timer.sched", "timer.return"];

fn cause(kind: CauseKind, name: &str, pid: Option<i32>, prio: Option<i32>, ns: i64) -> Cause {
    Cause { kind, name: name.into(), pid, prio, ns }
}

fn parts(first_ns: i64, sched_ns: i64, return_ns: i64, due_ns: u64) -> SplitParts {
    let handled_at_ns = due_ns + first_ns as u64;
    SplitParts {
        first_ns,
        sched_ns,
        return_ns,
        handled_at_ns,
        switched_in_at_ns: handled_at_ns + sched_ns as u64,
        switch_in_inferred: false,
    }
}

/// One spike of thread `cpu`: due at `due_ns`, its causes (largest first) add up to it.
fn spike(
    cpu: usize,
    at_s: Option<f64>,
    due_ns: u64,
    split: Option<(i64, i64, i64)>,
    causes: Vec<Cause>,
) -> ExplainedSpike {
    let latency_ns: i64 = causes.iter().map(|c| c.ns).sum();
    let summary = causes
        .iter()
        .take(2)
        .map(|c| format!("{} {:.0} µs", rtlab_report::split::cause_label(c, "timer"), c.ns as f64 / 1e3))
        .collect::<Vec<_>>()
        .join(", then ");
    ExplainedSpike {
        scenario: "idle".into(),
        probe: "timer".into(),
        cpu,
        at_s,
        explanation: Explanation {
            sample: WakeSample { cpu: cpu as u32, due_ns, wake_ns: due_ns + latency_ns as u64 },
            latency_ns,
            parts: split.map(|(a, b, c)| parts(a, b, c, due_ns)),
            causes,
            steal_ns: Some(if latency_ns > 1_000_000 { 4_050_000 } else { 0 }),
            steal_window_ns: Some(10_000_000),
            summary: format!("mostly {summary}"),
        },
    }
}

/// The split section of the fixture: 2 CPUs, CPU 1 just above 99 % split, four spikes that
/// between them have every cause kind.
fn split_section() -> SplitRun {
    use CauseKind::*;
    SplitRun {
        backend: "tracefs".into(),
        backend_detail: "instance rtlab-4711, trace clock mono, 1024 KiB per CPU, events timer:hrtimer_start, \
                         timer:hrtimer_expire_entry, sched:sched_waking, sched:sched_switch, irq:*, filtered to \
                         tids 1201, 1202"
            .into(),
        backend_choice: "timerlat tracer: not in this kernel; ebpf: not built in; tracefs: available".into(),
        overhead: Some(SplitOverhead {
            median_ratio: 1.042,
            source: "bench/split-overhead.sh, 2026-11-21, 2-vCPU KVM guest".into(),
        }),
        coverage: vec![
            SplitCoverage {
                scenario: "idle".into(),
                probe: "timer".into(),
                counts: SplitCounts {
                    cpu: 0,
                    tid: Some(1201),
                    samples: 5000,
                    split: 4996,
                    unsplit: vec![(Unsplit::EventsLost, 3), (Unsplit::NoSwitchIn, 1)],
                    sum_within_1us: 4996,
                    switch_in_inferred: 0,
                    max_sum_error_ns: 0,
                },
            },
            SplitCoverage {
                scenario: "idle".into(),
                probe: "timer".into(),
                counts: SplitCounts {
                    cpu: 1,
                    tid: Some(1202),
                    samples: 5000,
                    split: 4951,
                    unsplit: vec![(Unsplit::NoTimerArmed, 49)],
                    sum_within_1us: 4950,
                    switch_in_inferred: 12,
                    max_sum_error_ns: 1_200,
                },
            },
        ],
        events: 1_234_567,
        events_lost: 42,
        explain_above_ns: Some(100_000),
        above_threshold: 7,
        explanations: vec![
            spike(
                0,
                Some(2.345),
                1_002_345_000_000,
                Some((4_105_000, 100_000, 10_300)),
                vec![
                    cause(Unaccounted, "", None, None, 4_100_000),
                    cause(OwnThread, "timer/0", Some(1201), Some(4), 107_300),
                    cause(IrqHandler, "local_timer", None, None, 8_000),
                ],
            ),
            spike(
                1,
                Some(3.5),
                1_003_500_000_000,
                Some((40_000, 240_000, 32_000)),
                vec![
                    cause(BlockingTask, "stress-ng-cpu", Some(4242), Some(120), 150_000),
                    cause(Softirq, "softirq NET_RX", None, None, 90_000),
                    cause(IrqDelayedTask, "stress-ng-cpu", Some(4242), Some(120), 40_000),
                    cause(OwnThread, "timer/1", Some(1202), Some(4), 32_000),
                ],
            ),
            spike(
                1,
                None,
                1_004_100_000_000,
                None,
                vec![
                    cause(HigherPriorityThread, "ktimers/1", Some(21), Some(1), 70_000),
                    cause(IrqDelayedIdle, "", None, None, 60_000),
                    cause(OwnThread, "timer/1", Some(1202), Some(4), 30_000),
                    cause(IrqHandler, "irq 11 virtio0", None, None, 20_000),
                ],
            ),
        ],
    }
}

/// The 2-CPU fixture as a `--split` run: per CPU the three parts drawn from a fixed-seed
/// generator, `timer.latency` their sums, and the split section.
fn split_run() -> RunResult {
    let mut run = RunResult::load(&fixture_path("simulated-2cpu.run.json")).expect("the fixture loads");
    run.label = "split".into();
    run.command_line.extend(["--split", "--explain-above", "100us"].iter().map(|s| s.to_string()));
    let max_ns = run.experiment.histogram_max_ns;
    let mut rng = Rng::new(7);
    let mut measurements = Vec::new();
    for cpu in [0usize, 1] {
        let latency = run
            .measurements
            .iter()
            .find(|m| m.metric == "timer.latency" && m.cpu == cpu)
            .expect("the fixture has timer.latency per CPU")
            .clone();
        let n = latency.count as usize;
        let irq: Vec<i64> =
            (0..n).map(|_| rng.latency(2_500.0 + cpu as f64 * 500.0, 800.0, 0.001, (50_000.0, 4_000_000.0))).collect();
        let sched: Vec<i64> = (0..n).map(|_| rng.latency(6_000.0, 1_500.0, 0.002, (40_000.0, 250_000.0))).collect();
        let ret: Vec<i64> = (0..n).map(|_| rng.latency(1_200.0, 200.0, 0.0, (0.0, 0.0))).collect();
        let sums: Vec<i64> = (0..n).map(|i| irq[i] + sched[i] + ret[i]).collect();
        let thread = |metric| Thread {
            scenario: "idle",
            probe: "timer",
            metric,
            thread: latency.thread.clone(),
            cpu,
            interval_ns: latency.interval_ns,
            overruns: latency.overruns,
            details: Vec::new(),
            keep_sequence: false,
        };
        measurements.push(measurement(&latency, max_ns, thread("timer.latency"), &sums));
        for (metric, values) in PART_METRICS.into_iter().zip([&irq, &sched, &ret]) {
            measurements.push(measurement(&latency, max_ns, thread(metric), values));
        }
    }
    // Keep the fixture's jitter measurements after the new ones, in CPU order.
    measurements.extend(run.measurements.iter().filter(|m| m.metric == "timer.jitter").cloned());
    run.measurements = measurements;
    run.split = Some(split_section());
    run.check().expect("the split fixture is consistent");
    run
}

fn set_of(runs: Vec<RunResult>) -> ReportSet {
    let runs = runs.into_iter().map(|run| SourcedRun { source: format!("{}/run.json", run.label), run }).collect();
    ReportSet { runs, verdict: None }
}

fn split_tables(set: &ReportSet) -> Vec<Table> {
    report_tables(set).unwrap().into_iter().filter(|t| t.id.starts_with("split-")).collect()
}

#[test]
fn fixture_spikes_cover_every_cause_kind_and_add_up() {
    let split = split_section();
    for kind in CAUSE_KINDS {
        assert!(
            split.explanations.iter().any(|s| s.explanation.causes.iter().any(|c| c.kind == kind)),
            "{kind:?} missing from the fixture"
        );
    }
    for s in &split.explanations {
        let e = &s.explanation;
        assert_eq!(e.causes.iter().map(|c| c.ns).sum::<i64>(), e.latency_ns);
        assert_eq!(e.sample.latency_ns(), e.latency_ns);
        if let Some(p) = &e.parts {
            assert_eq!(p.first_ns + p.sched_ns + p.return_ns, e.latency_ns);
        }
    }
}

#[test]
fn run_json_with_a_split_section_round_trips() {
    let run = split_run();
    let dir = std::env::temp_dir().join(format!("rtlab-split-roundtrip-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = run.save(&dir).unwrap();
    let loaded = RunResult::load(&path).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    // The split section exactly (the measurements' float statistics may differ in the last
    // bit through serde_json's float parsing: not this section's business).
    assert_eq!(loaded.split, Some(split_section()));
    assert_eq!(loaded.measurements.len(), run.measurements.len());
    // Through serde_json directly too, and the section is spelled as documented.
    let value = serde_json::to_value(&run).unwrap();
    assert_eq!(value["split"]["backend"], "tracefs");
    assert_eq!(value["split"]["coverage"][0]["unsplit"][0], serde_json::json!(["events_lost", 3]));
    assert_eq!(value["split"]["explanations"][1]["explanation"]["causes"][1]["kind"], "softirq");
    assert_eq!(value["split"]["explanations"][0]["at_s"], 2.345);
    assert!(value["split"]["explanations"][2].get("at_s").is_none(), "absent when unknown");
    assert_eq!(serde_json::from_value::<RunResult>(value).unwrap().split, run.split);
}

#[test]
fn run_json_without_a_split_section_still_parses() {
    let run = RunResult::load(&fixture_path("simulated-2cpu.run.json")).unwrap();
    assert_eq!(run.split, None);
    let text = serde_json::to_string(&run).unwrap();
    assert!(!text.contains("\"split\""), "no split key written for a run without --split");
    // An explanation without `at_s` (written before it existed) parses.
    let mut value = serde_json::to_value(split_run()).unwrap();
    value["split"]["explanations"][0].as_object_mut().unwrap().remove("at_s");
    let parsed: RunResult = serde_json::from_value(value).unwrap();
    assert_eq!(parsed.split.unwrap().explanations[0].at_s, None);
}

#[test]
fn terminal_summary_of_a_split_run() {
    let text = TerminalSummary.export(&split_run()).unwrap();
    // The acceptance: the medians of both parts per CPU.
    for cpu in [0, 1] {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("CPU {cpu} (timer): median interrupt latency ")))
            .unwrap_or_else(|| panic!("no median line for CPU {cpu}:\n{text}"));
        assert!(line.contains(", median scheduling part "), "{line}");
    }
    for title in [
        "Interrupt latency (timer expiry to IRQ handler) (µs)",
        "Scheduling part (IRQ handler to thread switched in) (µs)",
        "Return to user space (switch-in to user timestamp) (µs)",
    ] {
        assert!(text.contains(title), "{title}");
    }
    assert!(text.contains("Kernel split: tracefs"));
    assert!(text.contains("7 samples above 100.0 µs, 3 explained"));
    assert!(!text.contains("FEW SAMPLES SPLIT"), "both CPUs have at least 99 % split");
    insta::assert_snapshot!("split_terminal", text);
}

#[test]
fn few_samples_split_is_a_loud_warning_everywhere() {
    let mut run = split_run();
    let split = run.split.as_mut().unwrap();
    split.coverage[1].counts.split = 4_900;
    split.coverage[1].counts.unsplit = vec![(Unsplit::NoTimerArmed, 60), (Unsplit::NoHandling, 40)];
    let text = TerminalSummary.export(&run).unwrap();
    let warning = text.lines().find(|l| l.starts_with("!! FEW SAMPLES SPLIT")).expect("a loud warning");
    assert!(warning.contains("98.0 %") && warning.contains("CPU 1"), "{warning}");
    assert_eq!(text.matches("!! FEW SAMPLES SPLIT").count(), 1, "only CPU 1");
    let set = set_of(vec![run.clone()]);
    let coverage = split_tables(&set).into_iter().find(|t| t.id == COVERAGE_TABLE).unwrap();
    assert!(coverage.notes.iter().any(|n| n.starts_with("WARNING: only 98.0 %")), "{:?}", coverage.notes);
    let html = HtmlReport.render(&set).unwrap();
    let banners = &html[html.find("<section id=\"warnings\">").unwrap()..html.find("</section>").unwrap()];
    assert!(banners.contains("kernel split: only 98.0 %"), "{banners}");
    let json: serde_json::Value = serde_json::from_str(&JsonSummary::default().export(&run).unwrap()).unwrap();
    assert_eq!(json["split"]["warnings"].as_array().unwrap().len(), 2, "CPU 1 and the lost events");
}

#[test]
fn json_summary_of_a_split_run() {
    let text = JsonSummary::default().export(&split_run()).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let cpu0 = &json["split"]["coverage"][0];
    assert!(cpu0["median_first_ns"].as_i64().unwrap() > 0);
    assert!(cpu0["median_sched_ns"].as_i64().unwrap() > 0);
    assert_eq!(json["split"]["samples"], 10_000);
    assert_eq!(json["split"]["explained"], 3);
    // RTLAB_SPLIT_FIXTURE=DIR saves the fixture run there, to give it to `rtlab report` by hand.
    if let Some(dir) = std::env::var_os("RTLAB_SPLIT_FIXTURE") {
        split_run().save(std::path::Path::new(&dir)).unwrap();
    }
    insta::assert_snapshot!("split_json_summary", serde_json::to_string_pretty(&json["split"]).unwrap());
    // Without --split, no split key.
    let plain = RunResult::load(&fixture_path("simulated-2cpu.run.json")).unwrap();
    assert!(!JsonSummary::default().export(&plain).unwrap().contains("\"split\""));
}

#[test]
fn report_tables_of_a_split_run() {
    let set = set_of(vec![split_run()]);
    let tables = split_tables(&set);
    let ids: Vec<&str> = tables.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, SPLIT_TABLES);
    for t in &tables {
        for (row, raw) in t.rows.iter().zip(&t.csv_rows) {
            assert_eq!(row.len(), t.columns.len(), "{}", t.id);
            assert_eq!(raw.len(), t.columns.len(), "{}", t.id);
        }
    }
    // The part metrics are ordinary metrics: their percentile tables and Akamina's Table 5.
    let all = report_tables(&set).unwrap();
    let titles: Vec<&str> = all.iter().map(|t| t.title.as_str()).collect();
    for metric in PART_METRICS {
        assert!(
            all.iter().any(|t| t.rows.iter().any(|r| r.iter().any(|c| c.contains(metric))) || t.title.contains(metric)),
            "{metric} in no table: {titles:?}"
        );
    }
    assert!(all.iter().any(|t| t.source.as_deref().is_some_and(|s| s.contains("Table 5"))), "{titles:?}");
    insta::assert_snapshot!("split_tables_json", serde_json::to_string_pretty(&tables).unwrap());
}

#[test]
fn markdown_csv_and_json_reports_of_a_split_run() {
    let set = set_of(vec![split_run()]);
    let titles: Vec<String> = split_tables(&set).iter().map(|t| t.title.clone()).collect();
    let md = MarkdownReport.render(&set).unwrap();
    let sections: Vec<&str> = md.split("\n## ").filter(|s| titles.iter().any(|t| s.starts_with(t.as_str()))).collect();
    assert_eq!(sections.len(), titles.len());
    insta::assert_snapshot!("split_markdown", sections.join("\n## "));
    let csv = CsvReport.render(&set).unwrap();
    let blocks: Vec<&str> = csv
        .split("\r\n\r\n")
        .filter(|b| SPLIT_TABLES.iter().any(|id| b.starts_with(&format!("table,{id},"))))
        .collect();
    assert_eq!(blocks.len(), SPLIT_TABLES.len());
    insta::assert_snapshot!("split_csv", blocks.join("\n\n").replace("\r\n", "\n"));
    let report: serde_json::Value = serde_json::from_str(&JsonReport.render(&set).unwrap()).unwrap();
    let ids: Vec<&str> = report["tables"].as_array().unwrap().iter().filter_map(|t| t["id"].as_str()).collect();
    for id in SPLIT_TABLES {
        assert!(ids.contains(&id), "{id} not in the JSON report");
    }
}

/// The `<section>` of table `id`.
fn table_section<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html
        .find(&format!("<section class=\"rtlab-table\" id=\"table-{id}\""))
        .unwrap_or_else(|| panic!("no table {id}"));
    let end = html[start..].find("</section>").expect("section closes") + start;
    &html[start..end]
}

#[test]
fn html_report_of_a_split_run() {
    let set = set_of(vec![split_run()]);
    let html = HtmlReport.render(&set).unwrap();
    for metric in PART_METRICS {
        let slug = metric.replace('.', "-");
        assert!(html.contains(&format!("id=\"metric-{slug}\"")), "no figures of {metric}");
        assert!(html.contains(&format!("id=\"fig-cumulative-{slug}\"")), "no cumulative curve of {metric}");
    }
    assert!(html.contains("Interrupt latency (timer expiry to IRQ handler)"));
    let explained = table_section(&html, EXPLANATIONS_TABLE);
    assert!(explained.contains("<div class=\"beside\">"), "the spike bars sit with their table");
    let figure_start = explained.find("<figure").unwrap();
    let figure = &explained[figure_start..];
    assert_eq!(figure.matches("text-anchor=\"end\">CPU ").count(), 3, "one labelled bar per spike");
    for kind in CAUSE_KINDS {
        let words = rtlab_report::split::cause_words(kind);
        assert!(figure.contains(&format!(">{}</text>", rtlab_report::text::escape(words))), "legend lacks {words}");
    }
    assert!(figure.contains("softirq NET_RX 90.0 µs (29 %)"), "segments name their cause");
    insta::assert_snapshot!("split_html_sections", {
        let mut shown = String::new();
        for id in SPLIT_TABLES {
            shown.push_str(table_section(&html, id));
            shown.push_str("</section>\n");
        }
        shown
    });
}

#[test]
fn nothing_of_the_split_without_it() {
    let run = RunResult::load(&fixture_path("simulated-2cpu.run.json")).unwrap();
    let text = TerminalSummary.export(&run).unwrap();
    assert!(!text.contains("Kernel split"));
    let set = set_of(vec![run]);
    assert!(split_tables(&set).is_empty());
    assert!(!HtmlReport.render(&set).unwrap().contains("split-"));
}

#[test]
fn without_a_threshold_the_top_samples_are_explained() {
    let mut split = split_section();
    split.explain_above_ns = None;
    split.above_threshold = 0;
    assert_eq!(
        split.explained_text(),
        format!("the {DEFAULT_EXPLAINED_PER_THREAD} worst samples per thread explained (3 in all)")
    );
    split.overhead = None;
    assert_eq!(split.overhead_text(), "not measured");
}

#[test]
fn two_runs_get_one_set_of_tables_each() {
    let mut other = split_run();
    other.label = "other".into();
    let set = set_of(vec![split_run(), other]);
    let ids: Vec<String> = split_tables(&set).into_iter().map(|t| t.id).collect();
    let expected: Vec<String> =
        ["split", "other"].iter().flat_map(|l| SPLIT_TABLES.iter().map(move |t| format!("{t}-{l}"))).collect();
    assert_eq!(ids, expected);
    let html = HtmlReport.render(&set).unwrap();
    assert!(html.contains("id=\"fig-split-explanations-other\""));
}

#[test]
fn figures_and_tables_of_part_metrics_say_how_many_samples_the_split_covered() {
    let set = set_of(vec![split_run()]);
    // Both threads: 9,947 of 10,000 split; 3 + 1 + 49 not split by reason; 12 inferred.
    let said = "from 9,947 of 10,000 samples (not split: events lost 3, no switch-in 1, no timer armed 49); 12 \
                with the switch-in inferred (not recorded by the kernel).";
    let figures = rtlab_report::figures::report_figures(&set).unwrap();
    for metric in PART_METRICS {
        let of_metric = figures.iter().find(|f| f.metric == metric).expect("the part metric has figures");
        assert!(!of_metric.figures.is_empty());
        for figure in &of_metric.figures {
            assert!(figure.description.ends_with(&format!("{metric} {said}")), "{}", figure.description);
        }
    }
    let latency = figures.iter().find(|f| f.metric == "timer.latency").unwrap();
    assert!(latency.figures.iter().all(|f| !f.description.contains("samples (not split")), "t2 is not split");
    let cumulative = rtlab_report::figures::cumulative_figure(&set, "timer.irq", None).unwrap().unwrap();
    assert!(cumulative.description.ends_with(&format!("timer.irq {said}")), "{}", cumulative.description);

    let tables = report_tables(&set).unwrap();
    let percentiles = tables.iter().find(|t| t.id == "percentiles-timer.irq").unwrap();
    assert!(percentiles.notes.contains(&format!("timer.irq {said}")), "{:?}", percentiles.notes);
    let range = tables.iter().find(|t| t.source.as_deref().is_some_and(|s| s.contains("Table 5"))).unwrap();
    assert!(range.notes.contains(&format!("timer.irq {said}")), "{:?}", range.notes);
    let latency = tables.iter().find(|t| t.id == "percentiles-timer.latency").unwrap();
    assert!(latency.notes.iter().all(|n| !n.contains("samples (not split")), "{:?}", latency.notes);

    // Two runs: each sentence names its configuration.
    let mut other = split_run();
    other.label = "other".into();
    let two = set_of(vec![split_run(), other]);
    let figures = rtlab_report::figures::report_figures(&two).unwrap();
    let irq = figures.iter().find(|f| f.metric == "timer.irq").unwrap();
    assert!(irq.figures[0].description.contains("timer.irq of split "), "{}", irq.figures[0].description);
    assert!(irq.figures[0].description.contains("timer.irq of other "), "{}", irq.figures[0].description);
}
