//! The tables of the probes that are not the timer, in the shapes of the papers they come
//! from: the jitter probe's period jitter per period (Dodiu et al., Table 1), the sweep
//! probe's latency per stimulus rate (Table 2), the switch probe's task-switch time (Table 3
//! and RTAI's `switches`), the sleep probe's overshoot (Dankwardt), the net probe's
//! latencies (Regnier et al., Table 1) and the ipc probes' wake-up latency per mechanism
//! (rt-tests' pmqtest, ptsematest, sigwaittest).
//!
//! Two forms: [`scenario_tables`], one scenario of one run as the terminal summary prints
//! it (a row per period, rate, variant or mechanism, several statistics), and
//! [`report_tables`], every configuration of a report side by side.

use super::{headers, new_table, percentile_cell, push_row, Cell, Column, Table};
use crate::digest::combine;
use crate::per_setting::{steps, Step, JITTER_METRIC, JITTER_TABLE, SWEEP_METRIC, SWEEP_TABLE};
use crate::text::policy_name;
use crate::ReportError;
use rtlab_analysis::units::format_period;
use rtlab_results::run::{detail_f64, detail_i64, detail_text, Measurement, RunResult, Setting};

const DODIU_1: &str = "Dodiu et al., Table 1";
const DODIU_2: &str = "Dodiu et al., Table 2";
const DODIU_3: &str = "Dodiu et al., Table 3; RTAI switches";
const DANKWARDT: &str = "Dankwardt, sleep benchmark";
const REGNIER_1: &str = "Regnier et al., Table 1";
const RT_TESTS: &str = "rt-tests pmqtest, ptsematest, sigwaittest";

/// The net probe's metrics in the order of the event: send, kernel receive, task running.
const NET_METRICS: [(&str, &str); 3] = [
    ("net.delivery", "delivery (send → kernel rx)"),
    ("net.activation", "activation (kernel rx → task)"),
    ("net.latency", "end to end (send → task)"),
];

fn of<'a>(run: &'a RunResult, scenario: &str, metric: &str) -> Vec<&'a Measurement> {
    run.measurements.iter().filter(|m| m.scenario == scenario && m.metric == metric).collect()
}

/// Metrics of `run` in first-seen order that `keep` selects.
fn metrics_where(run: &RunResult, keep: impl Fn(&str) -> bool) -> Vec<String> {
    run.metrics().into_iter().filter(|m| keep(m)).map(str::to_string).collect()
}

fn is_ipc(metric: &str) -> bool {
    metric.starts_with("ipc:") && metric.ends_with(".latency")
}

fn is_switch(metric: &str) -> bool {
    metric.starts_with("switch.")
}

fn setting_cell(setting: Setting, value: f64) -> Cell {
    Cell { shown: setting.label(value), raw: setting.raw(value) }
}

/// A rate in Hz: "20", "12.5".
fn rate_cell(hz: f64) -> Cell {
    Cell { shown: Setting::Rate.label(hz), raw: hz.to_string() }
}

/// A time in ns kept with three decimals of µs (one switch takes a few µs).
fn fine_us(ns: f64) -> Cell {
    Cell { shown: format!("{:.3}", ns / 1e3), raw: format!("{ns:.1}") }
}

fn step_cells(step: &Step, statistics: &[&str]) -> Vec<Cell> {
    statistics.iter().map(|s| percentile_cell(&step.combined, s)).collect()
}

/// One scenario of one run: the tables of every probe measured there, for the terminal.
pub fn scenario_tables(run: &RunResult, scenario: &str) -> Result<Vec<Table>, ReportError> {
    let one = [Entry { name: None, run, scenario }];
    let mut tables = Vec::new();
    tables.extend(jitter_steps_table(run, scenario)?);
    tables.extend(sleep_table(&one));
    tables.extend(net_table(run, scenario)?);
    tables.extend(ipc_table(&one)?);
    tables.extend(switch_steps_table(run, scenario)?);
    tables.extend(sweep_steps_table(run, scenario)?);
    Ok(tables)
}

/// Every configuration of a report: the papers' tables with configurations side by side.
pub(super) fn report_tables(columns: &[Column]) -> Result<Vec<Table>, ReportError> {
    let entries: Vec<Entry> = columns
        .iter()
        .map(|c| Entry { name: Some(c.config.name.clone()), run: c.config.run, scenario: c.config.scenario })
        .collect();
    let mut tables = Vec::new();
    tables.extend(per_setting_table(&entries, JITTER_METRIC, Setting::Period)?);
    tables.extend(per_setting_table(&entries, SWEEP_METRIC, Setting::Rate)?);
    tables.extend(switch_table(&entries)?);
    tables.extend(sleep_table(&entries));
    tables.extend(ipc_table(&entries)?);
    Ok(tables)
}

/// One configuration: a run's scenario, named when the table has several.
struct Entry<'a> {
    name: Option<String>,
    run: &'a RunResult,
    scenario: &'a str,
}

impl<'a> Entry<'a> {
    fn measurements(&self, metric: &str) -> Vec<&'a Measurement> {
        of(self.run, self.scenario, metric)
    }
}

/// Dodiu Table 1 for one scenario: per period, min and max period jitter, p99.9, samples.
fn jitter_steps_table(run: &RunResult, scenario: &str) -> Result<Option<Table>, ReportError> {
    let measurements = of(run, scenario, JITTER_METRIC);
    if measurements.is_empty() {
        return Ok(None);
    }
    let mut table = new_table(
        JITTER_TABLE,
        "Period jitter per task period, all CPUs together (µs)",
        Some(DODIU_1),
        headers(&["period (µs)", "min jitter", "max jitter", "p99.9", "samples", "overruns"]),
    );
    for step in steps(&measurements, Setting::Period)? {
        let mut cells = vec![setting_cell(Setting::Period, step.value)];
        cells.extend(step_cells(&step, &["min", "max", "p99.9", "samples", "overruns"]));
        push_row(&mut table, cells);
    }
    table.notes.push(
        "Period jitter: how far each wake-up is from one period after the previous one. The periods were measured one after another, each for its share of the run."
            .into(),
    );
    Ok(Some(table))
}

/// Dodiu Table 2 for one scenario: per stimulus rate, min, max, p99.9, samples.
fn sweep_steps_table(run: &RunResult, scenario: &str) -> Result<Option<Table>, ReportError> {
    let measurements = of(run, scenario, SWEEP_METRIC);
    if measurements.is_empty() {
        return Ok(None);
    }
    let mut table = new_table(
        SWEEP_TABLE,
        &format!("Latency per stimulus rate ({}), all CPUs together (µs)", stimuli(&measurements)),
        Some(DODIU_2),
        headers(&["rate (Hz)", "min", "max", "p99.9", "samples", "missed"]),
    );
    for step in steps(&measurements, Setting::Rate)? {
        let mut cells = vec![setting_cell(Setting::Rate, step.value)];
        cells.extend(step_cells(&step, &["min", "max", "p99.9", "samples", "overruns"]));
        push_row(&mut table, cells);
    }
    table.notes.push(
        "Latency: stimulus sent to the receiving task running. Missed: stimuli sent that produced no sample. The rates were measured one after another."
            .into(),
    );
    Ok(Some(table))
}

/// "net", "ipc:eventfd": the swept probes named by `stimulus`.
fn stimuli(measurements: &[&Measurement]) -> String {
    let mut names: Vec<&str> = Vec::new();
    for m in measurements {
        let name = detail_text(m, "stimulus").unwrap_or("stimulus");
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names.join(", ")
}

/// Dodiu Tables 1 and 2 across configurations: per period (or rate), the min and max of
/// each configuration (Table 1) or its max (Table 2).
fn per_setting_table(entries: &[Entry], metric: &str, setting: Setting) -> Result<Option<Table>, ReportError> {
    let mut with: Vec<(&Entry, Vec<Step>, Vec<&Measurement>)> = Vec::new();
    for e in entries {
        let measurements = e.measurements(metric);
        if !measurements.is_empty() {
            with.push((e, steps(&measurements, setting)?, measurements));
        }
    }
    if with.is_empty() {
        return Ok(None);
    }
    let mut values: Vec<f64> = with.iter().flat_map(|(_, steps, _)| steps.iter().map(|s| s.value)).collect();
    values.sort_by(f64::total_cmp);
    values.dedup_by(|a, b| (*a - *b).abs() < 1e-3);
    let name = |e: &Entry| e.name.clone().unwrap_or_default();
    let (mut table, statistics): (Table, &[&str]) = match setting {
        Setting::Period => {
            let mut header = vec![setting.header().to_string()];
            for (e, _, _) in &with {
                header.extend([format!("{} min", name(e)), format!("{} max", name(e))]);
            }
            let table = new_table(
                JITTER_TABLE,
                "Period jitter per task period: minimum and maximum per configuration (µs)",
                Some(DODIU_1),
                header,
            );
            (table, &["min", "max"])
        }
        Setting::Rate => {
            let all: Vec<&Measurement> = with.iter().flat_map(|(_, _, m)| m.iter().copied()).collect();
            let mut header = vec![setting.header().to_string()];
            header.extend(with.iter().map(|(e, _, _)| name(e)));
            let table = new_table(
                SWEEP_TABLE,
                &format!("Latency per stimulus rate ({}): maximum per configuration (µs)", stimuli(&all)),
                Some(DODIU_2),
                header,
            );
            (table, &["max"])
        }
    };
    for value in values {
        let mut cells = vec![setting_cell(setting, value)];
        for (_, steps, _) in &with {
            match steps.iter().find(|s| (s.value - value).abs() < 1e-3) {
                Some(step) => cells.extend(step_cells(step, statistics)),
                None => cells.extend(statistics.iter().map(|_| Cell::none())),
            }
        }
        push_row(&mut table, cells);
    }
    table.notes.push(match setting {
        Setting::Period => "All CPUs of a period together. Unloaded and loaded configurations side by side are Dodiu's minimum and full load. The chart beside the table draws the same figures.".into(),
        Setting::Rate => "The largest stimulus-to-task latency at each rate, all CPUs together; the chart beside the table draws the minimum too, and the percentiles tables the whole distribution of all rates together. Unloaded and loaded configurations side by side are Dodiu's minimum and full load.".into(),
    });
    Ok(Some(table))
}

/// The RTAI-style burst figure of a switch measurement: switches, total ns, ns per switch.
fn burst(m: &Measurement) -> Option<(i64, i64, f64)> {
    let switches = detail_i64(m, "burst_switches")?;
    let total = detail_i64(m, "burst_total_ns")?;
    let per = detail_f64(m, "burst_per_switch_ns").unwrap_or(if switches > 0 {
        total as f64 / switches as f64
    } else {
        f64::NAN
    });
    Some((switches, total, per))
}

/// "futex", "sem": a switch metric's variant.
fn variant(metric: &str, measurements: &[&Measurement]) -> String {
    measurements
        .iter()
        .find_map(|m| detail_text(m, "variant"))
        .map(str::to_string)
        .unwrap_or_else(|| metric.trim_start_matches("switch.").to_string())
}

/// Dodiu Table 3 and RTAI's `switches` for one scenario: per variant, the per-sample
/// statistics and the burst figure.
fn switch_steps_table(run: &RunResult, scenario: &str) -> Result<Option<Table>, ReportError> {
    let mut table = new_table(
        "switch-times",
        "Task-switch time, low to high priority on one CPU (µs)",
        Some(DODIU_3),
        headers(&[
            "variant",
            "min",
            "max",
            "mean",
            "p99.9",
            "samples",
            "burst switches",
            "burst total (µs)",
            "per switch (µs)",
        ]),
    );
    for metric in metrics_where(run, is_switch) {
        let measurements = of(run, scenario, &metric);
        if measurements.is_empty() {
            continue;
        }
        let all = combine(&measurements)?;
        let mut cells = vec![Cell::text(variant(&metric, &measurements))];
        cells.extend(["min", "max", "mean", "p99.9", "samples"].iter().map(|s| percentile_cell(&all, s)));
        match measurements.iter().find_map(|m| burst(m)) {
            Some((switches, total, per)) => {
                cells.extend([Cell::count(switches.max(0) as u64), Cell::us(total), fine_us(per)])
            }
            None => cells.extend((0..3).map(|_| Cell::none())),
        }
        push_row(&mut table, cells);
    }
    if table.rows.is_empty() {
        return Ok(None);
    }
    table.notes.push(
        "Per sample: a low-priority task wakes a blocked high-priority task and the high-priority task records when it runs. Burst: back-to-back switches timed as one, total over count (RTAI's figure)."
            .into(),
    );
    Ok(Some(table))
}

/// Dodiu Table 3 across configurations: min and max per variant, and the time per switch of
/// the burst.
fn switch_table(entries: &[Entry]) -> Result<Option<Table>, ReportError> {
    let mut metrics: Vec<String> = Vec::new();
    for e in entries {
        for m in metrics_where(e.run, is_switch) {
            if !metrics.contains(&m) && !e.measurements(&m).is_empty() {
                metrics.push(m);
            }
        }
    }
    let with: Vec<&Entry> = entries.iter().filter(|e| metrics.iter().any(|m| !e.measurements(m).is_empty())).collect();
    if with.is_empty() {
        return Ok(None);
    }
    let mut header = headers(&["variant", "statistic"]);
    header.extend(with.iter().map(|e| e.name.clone().unwrap_or_default()));
    let mut table = new_table("switch-min-max", "Task-switch time per configuration (µs)", Some(DODIU_3), header);
    for metric in &metrics {
        let per_entry: Vec<Vec<&Measurement>> = with.iter().map(|e| e.measurements(metric)).collect();
        let name = per_entry.iter().find(|m| !m.is_empty()).map(|m| variant(metric, m)).unwrap_or_default();
        for statistic in ["min", "max", "per switch (burst)"] {
            let mut cells = vec![Cell::text(&name), Cell::text(statistic)];
            for measurements in &per_entry {
                if measurements.is_empty() {
                    cells.push(Cell::none());
                } else if statistic.starts_with("per switch") {
                    cells.push(Cell::or_none(measurements.iter().find_map(|m| burst(m)), |(_, _, per)| fine_us(per)));
                } else {
                    cells.push(percentile_cell(&combine(measurements)?, statistic));
                }
            }
            push_row(&mut table, cells);
        }
    }
    table.notes.push(
        "min and max of the per-sample switch times; per switch: the burst of back-to-back switches, total time over count (RTAI's switches). Unloaded and loaded configurations side by side are Dodiu's minimum and maximum load."
            .into(),
    );
    Ok(Some(table))
}

/// The sleep probe (Dankwardt): requested sleep, samples, overshoot, timer slack.
fn sleep_table(entries: &[Entry]) -> Option<Table> {
    let named = entries.iter().any(|e| e.name.is_some());
    let mut header: Vec<&str> = if named { vec!["configuration", "policy"] } else { vec![] };
    header.extend(["requested", "samples", "discarded", "mean", "min", "max", "p99.9", "timer slack (µs)"]);
    let mut table = new_table(
        "sleep-overshoot",
        "Sleep overshoot: measured minus requested sleep (µs)",
        Some(DANKWARDT),
        headers(&header),
    );
    for e in entries {
        for m in e.measurements("sleep.overshoot") {
            let mut cells = Vec::new();
            if named {
                cells.extend([Cell::text(e.name.clone().unwrap_or_default()), Cell::text(policy_name(e.run))]);
            }
            let requested = detail_i64(m, "requested_ns").unwrap_or(m.interval_ns as i64);
            cells.push(Cell { shown: format_period(requested), raw: requested.to_string() });
            let Ok(all) = combine(&[m]) else { continue };
            cells.push(percentile_cell(&all, "samples"));
            cells.push(Cell::or_none(detail_i64(m, "discarded"), |d| Cell::count(d.max(0) as u64)));
            cells.extend(["mean", "min", "max", "p99.9"].iter().map(|s| percentile_cell(&all, s)));
            let slack = |ns: i64| Cell { shown: format!("{:.3}", ns as f64 / 1e3), raw: ns.to_string() };
            cells.push(Cell::or_none(detail_i64(m, "timer_slack_ns"), slack));
            push_row(&mut table, cells);
        }
    }
    if table.rows.is_empty() {
        return None;
    }
    table.notes.push(
        "A relative nanosleep of the requested time, the first samples discarded (cold caches, as in the paper). The timer slack of a SCHED_OTHER task lets the kernel wake it that much later."
            .into(),
    );
    Some(table)
}

/// The ipc probes: wake-up latency per mechanism.
fn ipc_table(entries: &[Entry]) -> Result<Option<Table>, ReportError> {
    let named = entries.iter().any(|e| e.name.is_some());
    let mut header: Vec<&str> = vec!["mechanism"];
    if named {
        header.push("configuration");
    }
    header.extend(["CPU rx/tx", "rate (Hz)", "min", "mean", "p50", "p99.9", "max", "samples", "missed"]);
    let mut table =
        new_table("ipc-latency", "Wake-up latency per IPC mechanism (µs)", Some(RT_TESTS), headers(&header));
    let mut metrics: Vec<String> = Vec::new();
    for e in entries {
        for m in metrics_where(e.run, is_ipc) {
            if !metrics.contains(&m) {
                metrics.push(m);
            }
        }
    }
    let mut same_cpu = false;
    for metric in &metrics {
        for e in entries {
            let measurements = e.measurements(metric);
            let Some(first) = measurements.first() else { continue };
            let all = combine(&measurements)?;
            let mechanism = detail_text(first, "mechanism")
                .map(str::to_string)
                .unwrap_or_else(|| metric.trim_start_matches("ipc:").trim_end_matches(".latency").to_string());
            let mut cells = vec![Cell::text(mechanism)];
            if named {
                cells.push(Cell::text(e.name.clone().unwrap_or_default()));
            }
            let trigger = detail_i64(first, "trigger_cpu");
            same_cpu |= trigger == Some(first.cpu as i64);
            cells.push(Cell::text(match trigger {
                Some(t) => format!("{}/{t}", first.cpu),
                None => format!("{}/-", first.cpu),
            }));
            cells.push(Cell::or_none(detail_f64(first, "rate_hz"), rate_cell));
            cells.extend(
                ["min", "mean", "p50", "p99.9", "max", "samples", "overruns"].iter().map(|s| percentile_cell(&all, s)),
            );
            push_row(&mut table, cells);
        }
    }
    if table.rows.is_empty() {
        return Ok(None);
    }
    table.notes.push(
        "Wake-up latency: the trigger's timestamp before it signals to the receiver running. CPU rx/tx: the receiver's and the trigger's CPU. Missed: signals that woke no sample."
            .into(),
    );
    if same_cpu {
        table.notes.push(
            "Where the trigger shares the receiver's CPU, the receiver runs only once the lower-priority trigger is preempted: the latency includes that switch.".into(),
        );
    }
    Ok(Some(table))
}

/// Regnier et al. Table 1 for the net probe: M, SD, Mn, Mx per metric, samples, datagrams
/// lost; the settings under it.
fn net_table(run: &RunResult, scenario: &str) -> Result<Option<Table>, ReportError> {
    let mut table = new_table(
        "net-latencies",
        "Network latencies of one datagram (µs)",
        Some(REGNIER_1),
        headers(&["metric", "M", "SD", "Mn", "Mx", "p99.9", "samples", "lost datagrams"]),
    );
    let mut settings: Option<&Measurement> = None;
    for (metric, what) in NET_METRICS {
        let measurements = of(run, scenario, metric);
        if measurements.is_empty() {
            continue;
        }
        if settings.is_none() || metric == "net.activation" {
            settings = measurements.first().copied();
        }
        let all = combine(&measurements)?;
        let mut cells = vec![Cell::text(what)];
        cells.extend(
            ["mean", "stddev", "min", "max", "p99.9", "samples", "overruns"].iter().map(|s| percentile_cell(&all, s)),
        );
        push_row(&mut table, cells);
    }
    let Some(m) = settings else { return Ok(None) };
    let mut said = Vec::new();
    if let Some(rate) = detail_f64(m, "rate_hz") {
        said.push(format!("{} datagrams/s", Setting::Rate.label(rate)));
    }
    match detail_i64(m, "trigger_cpu") {
        Some(t) => said.push(format!("trigger on CPU {t}, receiver on CPU {}", m.cpu)),
        None => said.push(format!("receiver on CPU {}", m.cpu)),
    }
    if let Some(t) = detail_text(m, "timestamping") {
        said.push(format!("receive timestamps: {t}"));
    }
    if let Some(a) = detail_text(m, "address") {
        said.push(format!("address {a}"));
    }
    table.notes.push(format!("{}.", said.join("; ")));
    table.notes.push(
        "Lost datagrams: sent in the measured window but not received. Delivery + activation = send to task running, on one clock."
            .into(),
    );
    Ok(Some(table))
}
