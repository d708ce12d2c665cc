//! The reports of the new probes (jitter, sleep, net, ipc, switch, sweep) on a run derived
//! from the fixtures (tests/common): the terminal summary's paper-shaped tables, the
//! report's tables in every format, the conclusion of runs without a timer probe, and
//! nothing of it where those probes did not run.

mod common;

use common::{
    derived_probes_run, fixture_path, only, sleep_other_run as sleep_other, DERIVED, PERIODS_NS, SWEEP_RATES_HZ,
};
use rtlab_report::csv_report::CsvReport;
use rtlab_report::digest::RunDigest;
use rtlab_report::markdown::MarkdownReport;
use rtlab_report::tables::{probes::scenario_tables, report_tables, text_table, Table};
use rtlab_report::terminal::TerminalSummary;
use rtlab_report::Exporter;
use rtlab_results::run::RunResult;
use rtlab_results::set::{ReportExporter, ReportSet, SourcedRun};

/// Ids of the tables the new probes add to a report.
const PROBE_TABLES: [&str; 5] =
    ["jitter-per-period", "sweep-per-rate", "switch-min-max", "sleep-overshoot", "ipc-latency"];

fn set_of(runs: Vec<RunResult>) -> ReportSet {
    let runs = runs.into_iter().map(|run| SourcedRun { source: format!("{}/run.json", run.label), run }).collect();
    ReportSet { runs, verdict: None }
}

fn probe_tables(set: &ReportSet) -> Vec<Table> {
    report_tables(set).unwrap().into_iter().filter(|t| PROBE_TABLES.contains(&t.id.as_str())).collect()
}

/// The saved fixture is what the generator makes (rewrite it with RTLAB_UPDATE_FIXTURES=1).
#[test]
fn the_derived_fixture_is_up_to_date() {
    let made = serde_json::to_string_pretty(&derived_probes_run()).unwrap();
    let path = fixture_path(DERIVED);
    if std::env::var_os("RTLAB_UPDATE_FIXTURES").is_some() {
        std::fs::write(&path, &made).unwrap();
    }
    let saved = std::fs::read_to_string(&path).expect("the derived fixture exists");
    assert!(saved == made, "tests/fixtures/{DERIVED} is stale: run the tests with RTLAB_UPDATE_FIXTURES=1");
    RunResult::load(&path).expect("the derived fixture loads");
}

#[test]
fn terminal_summary_of_every_probe() {
    let text = TerminalSummary.export(&derived_probes_run()).unwrap();
    // The paper-shaped tables fit a terminal (prose lines under them wrap as prose does).
    let run = derived_probes_run();
    for scenario in &run.scenarios {
        for table in scenario_tables(&run, &scenario.name).unwrap() {
            let shown = text_table(&table);
            for line in shown.lines().skip(1).take(table.rows.len() + 1) {
                assert!(line.chars().count() <= 110, "{} is too wide: {line:?}", table.id);
            }
        }
    }
    insta::assert_snapshot!("terminal_probes", text);
}

/// The terminal tables come after the per-metric tables of their scenario, one of each.
#[test]
fn terminal_tables_per_scenario() {
    let run = derived_probes_run();
    let text = TerminalSummary.export(&run).unwrap();
    for title in [
        "Period jitter per task period, all CPUs together (µs) (after Dodiu et al., Table 1)",
        "Sleep overshoot: measured minus requested sleep (µs) (after Dankwardt, sleep benchmark)",
        "Network latencies of one datagram (µs) (after Regnier et al., Table 1)",
        "Wake-up latency per IPC mechanism (µs) (after rt-tests pmqtest, ptsematest, sigwaittest)",
        "Task-switch time, low to high priority on one CPU (µs) (after Dodiu et al., Table 3; RTAI switches)",
        "Latency per stimulus rate (net), all CPUs together (µs) (after Dodiu et al., Table 2)",
    ] {
        assert_eq!(text.matches(title).count(), 2, "{title}: once per scenario");
    }
    let first_metric = text.find("Period jitter (all periods) (µs)").unwrap();
    assert!(text.find("Period jitter per task period").unwrap() > first_metric);
    // The interval is the timer probe's: not shown for a run without it.
    assert!(!text.lines().next().unwrap().contains("interval"), "{}", text.lines().next().unwrap());
}

/// Dodiu Table 1 per scenario: one row per period, the CPUs of a period together.
#[test]
fn jitter_rows_combine_the_cpus_of_each_period() {
    let run = derived_probes_run();
    for scenario in &run.scenarios {
        let tables = scenario_tables(&run, &scenario.name).unwrap();
        let table = tables.iter().find(|t| t.id == "jitter-per-period").unwrap();
        let periods: Vec<u64> = table.csv_rows.iter().map(|r| r[0].parse().unwrap()).collect();
        assert_eq!(periods, PERIODS_NS);
        for row in &table.csv_rows {
            let period: u64 = row[0].parse().unwrap();
            let of_period = run
                .measurements
                .iter()
                .filter(|m| m.scenario == scenario.name && m.metric == "jitter.jitter" && m.interval_ns == period);
            let (count, overruns, max) = of_period
                .fold((0, 0, 0), |(c, o, x), m| (c + m.count, o + m.overruns, x.max(m.summary.as_ref().unwrap().max)));
            assert_eq!(row[4], count.to_string(), "samples of {period}");
            assert_eq!(row[5], overruns.to_string(), "overruns of {period}");
            assert_eq!(row[2], max.to_string(), "max of {period}");
        }
    }
}

/// Dodiu Table 2 across configurations: one row per rate, one column per configuration.
#[test]
fn sweep_table_has_a_column_per_configuration() {
    let tables = probe_tables(&set_of(vec![derived_probes_run()]));
    let t = tables.iter().find(|t| t.id == "sweep-per-rate").unwrap();
    assert_eq!(t.columns, ["rate (Hz)", "idle", "cpu:threads=1+proc-read"]);
    let rates: Vec<f64> = t.csv_rows.iter().map(|r| r[0].parse().unwrap()).collect();
    assert_eq!(rates, SWEEP_RATES_HZ);
    let jitter = tables.iter().find(|t| t.id == "jitter-per-period").unwrap();
    assert_eq!(jitter.columns.len(), 1 + 2 * 2, "min and max per configuration");
}

#[test]
fn report_tables_of_every_probe() {
    let tables = probe_tables(&set_of(vec![derived_probes_run()]));
    let ids: Vec<&str> = tables.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, PROBE_TABLES);
    for t in &tables {
        for (row, raw) in t.rows.iter().zip(&t.csv_rows) {
            assert_eq!(row.len(), t.columns.len(), "{}", t.id);
            assert_eq!(raw.len(), t.columns.len(), "{}", t.id);
        }
    }
    insta::assert_snapshot!("probe_tables_json", serde_json::to_string_pretty(&tables).unwrap());
    let text: String = tables.iter().map(|t| text_table(t) + "\n").collect();
    insta::assert_snapshot!("probe_tables_text", text);
}

/// A comparison: two runs side by side (the sleep run under SCHED_OTHER has only sleep).
#[test]
fn markdown_and_csv_of_the_probe_tables() {
    let set = set_of(vec![derived_probes_run(), sleep_other()]);
    let titles: Vec<String> = probe_tables(&set).iter().map(|t| t.title.clone()).collect();
    assert_eq!(titles.len(), PROBE_TABLES.len());
    let md = MarkdownReport.render(&set).unwrap();
    let sections: Vec<&str> = md.split("\n## ").filter(|s| titles.iter().any(|t| s.starts_with(t.as_str()))).collect();
    assert_eq!(sections.len(), titles.len());
    insta::assert_snapshot!("probe_tables_markdown", sections.join("\n## "));
    let csv = CsvReport.render(&set).unwrap();
    let blocks: Vec<&str> = csv
        .split("\r\n\r\n")
        .filter(|b| PROBE_TABLES.iter().any(|id| b.starts_with(&format!("table,{id},"))))
        .collect();
    assert_eq!(blocks.len(), PROBE_TABLES.len());
    insta::assert_snapshot!("probe_tables_csv", blocks.join("\n\n").replace("\r\n", "\n"));
}

#[test]
fn no_probe_tables_without_the_probes() {
    let timer = RunResult::load(&fixture_path("simulated-two-scenarios.run.json")).unwrap();
    assert!(probe_tables(&set_of(vec![timer.clone()])).is_empty());
    assert!(scenario_tables(&timer, "idle").unwrap().is_empty());
    let text = TerminalSummary.export(&timer).unwrap();
    assert!(!text.contains("after Dodiu"));
    let sleep = probe_tables(&set_of(vec![sleep_other()]));
    assert_eq!(sleep.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), ["sleep-overshoot"]);
}

/// The main metric is the first probe's: what the conclusion and the exceedance speak of.
#[test]
fn the_main_metric_is_the_first_probes() {
    for (probes, main) in [
        (&["jitter"][..], "jitter.jitter"),
        (&["sleep"][..], "sleep.overshoot"),
        (&["net"][..], "net.activation"),
        (&["ipc:eventfd", "ipc:futex"][..], "ipc:eventfd.latency"),
        (&["switch"][..], "switch.futex"),
        (&["sweep"][..], "sweep.latency"),
        (&["sleep", "jitter"][..], "sleep.overshoot"),
    ] {
        let run = only(derived_probes_run(), probes, "subset");
        let digest = RunDigest::of(&run).unwrap();
        for s in &digest.scenarios {
            assert_eq!(s.main_metric.as_deref(), Some(main), "{probes:?}");
        }
        assert_eq!(digest.conclusion.as_ref().unwrap().metric, main, "{probes:?}");
    }
}

/// Akamina's 5 % rule speaks of a periodic task's wake-up latency: for the jitter probe
/// its jitter.latency, for the others nothing.
#[test]
fn conclusions_without_a_timer_probe() {
    let jitter = only(derived_probes_run(), &["jitter"], "jitter");
    let c = RunDigest::of(&jitter).unwrap().conclusion.unwrap();
    assert_eq!(c.rule_metric.as_deref(), Some("jitter.latency"));
    let worst = c.rule_worst_ns.unwrap();
    assert_eq!(c.shortest_period_ns, Some(worst * 20));
    let text = TerminalSummary.export(&jitter).unwrap();
    let line = text.lines().find(|l| l.starts_with("Conclusion")).unwrap();
    assert!(line.contains("period jitter (all periods) was at most") && line.contains("Akamina"), "{line}");
    insta::assert_snapshot!("terminal_jitter_only", text);

    let text = TerminalSummary.export(&sleep_other()).unwrap();
    let line = text.lines().find(|l| l.starts_with("Conclusion")).unwrap();
    assert!(line.contains("sleep overshoot was at most") && !line.contains("Akamina"), "{line}");
    assert!(text.contains("SCHED_OTHER"));
    insta::assert_snapshot!("terminal_sleep_other", text);

    for probes in [&["switch"][..], &["net"][..], &["ipc:futex"][..], &["sweep"][..]] {
        let run = only(derived_probes_run(), probes, "subset");
        let c = RunDigest::of(&run).unwrap().conclusion.unwrap();
        assert_eq!((c.shortest_period_ns, c.rule_metric), (None, None), "{probes:?}");
        let text = TerminalSummary.export(&run).unwrap();
        assert!(!text.contains("Akamina"), "{probes:?}");
    }
}

/// The JSON summary of a timer run keeps its conclusion's shape (no new fields).
#[test]
fn json_summary_conclusion_of_a_timer_run_is_unchanged() {
    let timer = RunResult::load(&fixture_path("simulated-2cpu.run.json")).unwrap();
    let doc: serde_json::Value =
        serde_json::from_str(&rtlab_report::json::JsonSummary::default().export(&timer).unwrap()).unwrap();
    let mut keys: Vec<&String> = doc["conclusion"].as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["metric", "p99_9_ns", "samples", "scenario", "shortest_period_ns", "worst_ns"]);
}

/// A scenario measures its probes one after another: a check's evidence is the metric's
/// own window (998 sleeps of 50 ms; 1 s per jitter period), not the whole scenario's.
#[test]
fn checks_count_the_metrics_own_window() {
    let set = set_of(vec![derived_probes_run()]);
    let requirements =
        ["sleep max < 2ms", "jitter max < 1ms"].map(|r| rtlab_analysis::requirement::parse_requirement(r).unwrap());
    let verdict = rtlab_report::verdict::judge(&set, &requirements).unwrap();
    for c in &verdict.checks {
        let expected = if c.requirement.metric == "sleep.overshoot" { 998.0 * 0.05 } else { 6.0 };
        assert!((c.duration_s - expected).abs() < 0.01, "{}: {} s", c.requirement.text, c.duration_s);
    }
    // A run of one probe keeps the scenario's duration.
    let timer = RunResult::load(&fixture_path("simulated-two-scenarios.run.json")).unwrap();
    let verdict = rtlab_report::verdict::judge(
        &set_of(vec![timer.clone()]),
        &[rtlab_analysis::requirement::parse_requirement("timer max < 1ms").unwrap()],
    )
    .unwrap();
    assert_eq!(verdict.checks[0].duration_s, timer.scenarios[0].duration_s);
}
