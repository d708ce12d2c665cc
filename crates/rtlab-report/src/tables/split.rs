//! The `split` section of a `rtlab run --split` run ([`rtlab_results::split::SplitRun`]) in every
//! format: a "Kernel split" statement (backend, why it was chosen, its measured overhead,
//! events decoded and lost), the coverage per thread with the medians of the three parts, and
//! the explained spikes with their causes. The tables serve Markdown, CSV, the JSON report and
//! HTML; the terminal summary prints the same per scenario ([`terminal_section`]); the HTML
//! report draws the causes of each spike as a stacked bar beside the explanations table
//! ([`report_figures`]).
//!
//! The part metrics themselves (`timer.irq`, `timer.sched`, ...) are ordinary measurements:
//! their percentile tables, figures and Akamina's Table 5 come from the general tables.

use super::{headers, new_table, push_row, Cell, Table};
use crate::figures::{Figure, TableFigure};
use crate::split::{cause_label, cause_text, cause_words, part_medians, share_text, CAUSE_KINDS};
use crate::tables::text_table;
use crate::text::{capitalised, escape};
use rtlab_analysis::units::{format_us, thousands};
use rtlab_results::run::RunResult;
use rtlab_results::set::ReportSet;
use rtlab_results::split::{
    unsplit_words, CauseKind, ExplainedSpike, SplitCoverage, SplitRun, DEFAULT_EXPLAINED_PER_THREAD,
    MAX_EXPLAINED_PER_THREAD,
};
use std::fmt::Write;

/// Id prefixes of the tables (with `-<run label>` when a report has several runs).
pub const STATEMENT_TABLE: &str = "split-backend";
pub const COVERAGE_TABLE: &str = "split-coverage";
pub const EXPLANATIONS_TABLE: &str = "split-explanations";

fn percent(part: u64, whole: u64) -> Cell {
    if whole == 0 {
        return Cell::none();
    }
    let share = part as f64 / whole as f64;
    Cell { shown: format!("{:.1} %", share * 100.0), raw: format!("{share:.6}") }
}

/// The name of the first part of `probe`'s samples.
fn first_part_name(probe: &str) -> &'static str {
    match probe {
        "net" => "wake-up",
        _ => "interrupt latency",
    }
}

/// The first part's column header for these threads: what it is for all of them.
fn first_part_header(coverage: &[&SplitCoverage]) -> String {
    let timer = coverage.iter().any(|c| c.probe != "net");
    let net = coverage.iter().any(|c| c.probe == "net");
    match (timer, net) {
        (true, true) => "interrupt latency / net wake-up".into(),
        (false, true) => "wake-up".into(),
        _ => "interrupt latency".into(),
    }
}

/// The statement: backend, why, overhead, events, samples split, what was explained.
pub fn statement_table(split: &SplitRun, id: &str, title_suffix: &str) -> Table {
    let mut table = new_table(
        id,
        &format!("Kernel split: tracing backend{title_suffix}"),
        None,
        vec!["what".into(), "value".into()],
    );
    let (samples, split_samples) = split.totals();
    let rows = [
        ("backend", format!("{}: {}", split.backend, split.backend_detail)),
        ("why this backend", split.backend_choice.clone()),
        ("tracing overhead", split.overhead_text()),
        // Values open with words, so that they read (and align) as text.
        (
            "kernel events",
            match split.backend.as_str() {
                "ebpf" => format!(
                    "one record per wake-up: {} read, {} dropped",
                    thousands(split.events),
                    thousands(split.events_lost)
                ),
                _ => format!("decoded {}, lost {}", thousands(split.events), thousands(split.events_lost)),
            },
        ),
        (
            "samples",
            format!(
                "split {} of {} ({})",
                thousands(split_samples),
                thousands(samples),
                percent(split_samples, samples).shown
            ),
        ),
        ("spikes", spikes_text(split)),
    ];
    for (what, value) in rows {
        push_row(&mut table, vec![Cell::text(what), Cell::text(value)]);
    }
    table.notes.push(
        "Each sample is cut at two kernel instants into interrupt latency (timer expiry to its interrupt \
         handler; net: receive to wake-up), scheduling part (to the thread switched in) and return to user \
         space; the three add up to the sample."
            .into(),
    );
    table
}

/// How the coverage table is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CoverageShape {
    /// Everything, with a warning note for dropped events (reports).
    Full,
    /// For a terminal: without the medians (printed as sentences under it) and without the
    /// dropped-events warning (the statement above prints it).
    Terminal,
}

/// Per thread: samples, split, parts adding up within 1 µs, the worst sum error, why the rest
/// were not split, and the medians of the three parts.
pub fn coverage_table(
    run: &RunResult,
    split: &SplitRun,
    scenario: Option<&str>,
    id: &str,
    title_suffix: &str,
    shape: CoverageShape,
) -> Table {
    let rows: Vec<&SplitCoverage> =
        split.coverage.iter().filter(|c| scenario.is_none_or(|s| c.scenario == s)).collect();
    let first = first_part_header(&rows);
    let mut columns = headers(&[
        "scenario",
        "probe",
        "CPU",
        "samples",
        "split",
        "split %",
        "within 1 µs",
        "switch-in inferred",
        "max sum error (µs)",
        "not split",
        &format!("median {first} (µs)"),
        "median scheduling part (µs)",
        "median return to user (µs)",
    ]);
    let terminal = shape == CoverageShape::Terminal;
    if terminal {
        columns.truncate(columns.len() - 3);
    }
    let mut table = new_table(id, &format!("Kernel split: samples split per thread{title_suffix}"), None, columns);
    for c in &rows {
        let [first, sched, ret] = part_medians(run, c);
        let mut cells = vec![
            Cell::text(&c.scenario),
            Cell::text(&c.probe),
            Cell::text(c.counts.cpu.to_string()),
            Cell::count(c.counts.samples),
            Cell::count(c.counts.split),
            percent(c.counts.split, c.counts.samples),
            percent(c.counts.sum_within_1us, c.counts.samples),
            Cell::count(c.counts.switch_in_inferred),
            Cell::us(c.counts.max_sum_error_ns),
            Cell {
                shown: c.unsplit_text(),
                raw: c
                    .counts
                    .unsplit
                    .iter()
                    .map(|(w, n)| format!("{}={n}", unsplit_words(*w)))
                    .collect::<Vec<_>>()
                    .join(";"),
            },
            Cell::or_none(first, Cell::us),
            Cell::or_none(sched, Cell::us),
            Cell::or_none(ret, Cell::us),
        ];
        if terminal {
            cells.truncate(cells.len() - 3);
        }
        push_row(&mut table, cells);
    }
    table.notes.push(
        "Within 1 µs: samples whose three parts add up to the measured latency within 1 µs, of all samples; \
         switch-in inferred: split samples whose switch to the thread the kernel did not record, taken at the end \
         of the idle CPU's last interrupt (docs/split.md); \
         max sum error: the largest |parts − latency| of a split sample."
            .to_string()
            + if terminal { "" } else { " Medians from the part metrics." },
    );
    let lost = split.lost_warning().filter(|_| !terminal);
    for w in rows.iter().filter_map(|c| c.warning()).chain(lost) {
        table.notes.push(format!("WARNING: {w}."));
    }
    table
}

/// The split parts of a spike: first, scheduling, return ("-" when it was not split).
fn part_cells(spike: &ExplainedSpike) -> [Cell; 3] {
    match &spike.explanation.parts {
        Some(p) => [Cell::us(p.first_ns), Cell::us(p.sched_ns), Cell::us(p.return_ns)],
        None => [Cell::none(), Cell::none(), Cell::none()],
    }
}

/// Per explained spike: where, when, how big, its parts, its causes, steal and the summary.
pub fn explanations_table(split: &SplitRun, scenario: Option<&str>, id: &str, title_suffix: &str) -> Option<Table> {
    let spikes: Vec<&ExplainedSpike> =
        split.explanations.iter().filter(|e| scenario.is_none_or(|s| e.scenario == s)).collect();
    if spikes.is_empty() {
        return None;
    }
    let columns = [
        "scenario",
        "probe",
        "CPU",
        "when",
        "latency (µs)",
        "interrupt latency / wake-up (µs)",
        "scheduling (µs)",
        "return (µs)",
        "causes",
        "steal",
        "summary",
    ];
    let mut table = new_table(id, &format!("Kernel split: explained spikes{title_suffix}"), None, headers(&columns));
    for spike in &spikes {
        let e = &spike.explanation;
        let causes: Vec<String> = e.causes.iter().map(|c| cause_text(c, e.latency_ns, &spike.probe)).collect();
        let raw_causes: Vec<String> =
            e.causes.iter().map(|c| format!("{:?}:{}:{}ns", c.kind, c.name, c.ns).to_lowercase()).collect();
        let [first, sched, ret] = part_cells(spike);
        push_row(
            &mut table,
            vec![
                Cell::text(&spike.scenario),
                Cell::text(&spike.probe),
                Cell::text(spike.cpu.to_string()),
                Cell {
                    shown: spike.when_text(),
                    raw: spike.at_s.map(|s| format!("{s:.6}")).unwrap_or_else(|| e.sample.due_ns.to_string()),
                },
                Cell::us(e.latency_ns),
                first,
                sched,
                ret,
                Cell { shown: causes.join("; "), raw: raw_causes.join(";") },
                Cell { shown: spike.steal_text(), raw: e.steal_ns.map(|s| s.to_string()).unwrap_or_default() },
                Cell::text(&e.summary),
            ],
        );
    }
    table.notes.push(format!("{}.", capitalised(&split.explained_text())));
    table.notes.push(
        "Causes, largest first, add up to the sample: time before the timer interrupt was handled (CPU leaving \
         idle, or a task holding it off), interrupt and softirq handlers (innermost only), the task that held the \
         CPU, higher-priority threads, the thread's own path, and time no guest event accounts for (in a VM, the \
         hypervisor; compare the steal time over the interval)."
            .into(),
    );
    Some(table)
}

/// What was explained, opening with words: "above 100.0 µs: 7 samples, 3 explained".
fn spikes_text(split: &SplitRun) -> String {
    if split.backend == "ebpf" {
        return "none explained: the ebpf backend records one record per wake-up, not the events that explain a \
                spike (--split-backend tracefs, with --explain-above T for every sample above T)"
            .into();
    }
    match split.explain_above_ns {
        Some(ns) => format!(
            "above {} µs: {} samples, {} explained{}",
            format_us(i64::try_from(ns).unwrap_or(i64::MAX)),
            thousands(split.above_threshold),
            split.explanations.len(),
            if (split.explanations.len() as u64) < split.above_threshold {
                format!(" (at most the {MAX_EXPLAINED_PER_THREAD} worst per thread are kept)")
            } else {
                String::new()
            }
        ),
        None => format!(
            "the worst {DEFAULT_EXPLAINED_PER_THREAD} samples per thread explained ({} in all)",
            split.explanations.len()
        ),
    }
}

/// Table ids and title suffix of `run` in a report of one or several runs.
fn naming(run: &RunResult, many: bool) -> (String, String) {
    if many {
        (format!("-{}", run.label), format!(", {}", run.label))
    } else {
        (String::new(), String::new())
    }
}

/// The split tables of a report: per run with a split section, the statement, the coverage
/// and the explanations.
pub fn report_tables(set: &ReportSet) -> Vec<Table> {
    let many = set.runs.len() > 1;
    let mut tables = Vec::new();
    for sourced in &set.runs {
        let run = &sourced.run;
        let Some(split) = &run.split else { continue };
        let (id, suffix) = naming(run, many);
        tables.push(statement_table(split, &format!("{STATEMENT_TABLE}{id}"), &suffix));
        tables.push(coverage_table(run, split, None, &format!("{COVERAGE_TABLE}{id}"), &suffix, CoverageShape::Full));
        tables.extend(explanations_table(split, None, &format!("{EXPLANATIONS_TABLE}{id}"), &suffix));
    }
    tables
}

/// The terminal summary's split part for one scenario: before the first scenario's the
/// statement; then the coverage, per CPU the median parts, warnings, and the spikes.
pub fn terminal_section(run: &RunResult, scenario: &str) -> String {
    let Some(split) = &run.split else { return String::new() };
    let mut out = String::new();
    if run.scenarios.first().is_some_and(|s| s.name == scenario) {
        let (samples, split_samples) = split.totals();
        let _ = writeln!(out, "\nKernel split: {} ({})", split.backend, split.backend_detail);
        let _ = writeln!(out, "  chosen: {}", split.backend_choice);
        let _ = writeln!(out, "  tracing overhead: {}", split.overhead_text());
        let _ = writeln!(
            out,
            "  {} kernel events decoded, {} lost; {} of {} samples split",
            thousands(split.events),
            thousands(split.events_lost),
            thousands(split_samples),
            thousands(samples)
        );
        if let Some(w) = split.lost_warning() {
            let _ = writeln!(out, "!! {w}.");
        }
    }
    let coverage: Vec<&SplitCoverage> = split.coverage.iter().filter(|c| c.scenario == scenario).collect();
    if coverage.is_empty() && !split.explanations.iter().any(|e| e.scenario == scenario) {
        return out;
    }
    out.push('\n');
    let table = coverage_table(run, split, Some(scenario), COVERAGE_TABLE, "", CoverageShape::Terminal);
    out.push_str(&text_table(&table));
    for c in &coverage {
        let [first, sched, ret] = part_medians(run, c);
        let us = |v: Option<i64>| v.map(|ns| format!("{} µs", format_us(ns))).unwrap_or_else(|| "not measured".into());
        let _ = writeln!(
            out,
            "CPU {} ({}): median {} {}, median scheduling part {}, median return to user {}",
            c.counts.cpu,
            c.probe,
            first_part_name(&c.probe),
            us(first),
            us(sched),
            us(ret)
        );
    }
    for w in coverage.iter().filter_map(|c| c.warning()) {
        let _ = writeln!(out, "!! FEW SAMPLES SPLIT: {w}.");
    }
    let spikes: Vec<&ExplainedSpike> = split.explanations.iter().filter(|e| e.scenario == scenario).collect();
    if !spikes.is_empty() {
        let _ = writeln!(out, "\nExplained spikes: {}.", split.explained_text());
        // The terminal shows each thread's worst few; run.json and the report hold them all.
        let mut per_thread: std::collections::HashMap<(&str, usize), usize> = std::collections::HashMap::new();
        let mut hidden = 0;
        for spike in spikes {
            let count = per_thread.entry((spike.probe.as_str(), spike.cpu)).or_insert(0);
            *count += 1;
            if *count > TERMINAL_SPIKES_PER_THREAD {
                hidden += 1;
                continue;
            }
            terminal_spike(&mut out, spike);
        }
        if hidden > 0 {
            let _ = writeln!(
                out,
                "  ({hidden} more explained spikes, {TERMINAL_SPIKES_PER_THREAD} worst per thread shown here: all are in run.json and the report)"
            );
        }
    }
    out
}

/// Explained spikes the terminal summary shows per thread (the worst).
pub const TERMINAL_SPIKES_PER_THREAD: usize = 3;

fn terminal_spike(out: &mut String, spike: &ExplainedSpike) {
    let e = &spike.explanation;
    let parts = match &e.parts {
        Some(p) => format!(
            " = {} {} + scheduling {} + return {} µs",
            first_part_name(&spike.probe),
            format_us(p.first_ns),
            format_us(p.sched_ns),
            format_us(p.return_ns)
        ),
        None => " (not split)".into(),
    };
    let _ = writeln!(
        out,
        "  {} CPU {} {}: {} µs{parts}; {}",
        spike.probe,
        spike.cpu,
        spike.when_text(),
        format_us(e.latency_ns),
        spike.steal_text()
    );
    let width = e.causes.iter().map(|c| cause_label(c, &spike.probe).chars().count()).max().unwrap_or(0);
    for c in &e.causes {
        let label = cause_label(c, &spike.probe);
        let _ = writeln!(out, "    {label:<width$} {:>9} µs {:>5}", format_us(c.ns), share_text(c.ns, e.latency_ns));
    }
    if !e.summary.is_empty() {
        let _ = writeln!(out, "    {}", e.summary);
    }
}

/// The colour of a cause kind in the spike bars (Okabe-Ito, with grey for unaccounted time).
pub fn cause_colour(kind: CauseKind) -> &'static str {
    match kind {
        CauseKind::IrqDelayedIdle => "#56B4E9",
        CauseKind::IrqDelayedTask => "#8C564B",
        CauseKind::IrqHandler => "#D55E00",
        CauseKind::Softirq => "#E69F00",
        CauseKind::BlockingTask => "#CC79A7",
        CauseKind::HigherPriorityThread => "#0072B2",
        CauseKind::OwnThread => "#009E73",
        CauseKind::Unaccounted => "#7F7F7F",
    }
}

const FIGURE_WIDTH: f64 = 960.0;
/// Estimated width of a character of 14 px sans-serif text (the browser lays text out).
const CHAR_WIDTH: f64 = 7.6;
const ROW_HEIGHT: f64 = 30.0;
const LEGEND_ROW: f64 = 24.0;

/// The causes of each explained spike as a horizontal bar, as shares of the sample (the
/// label gives its latency), one colour per cause kind, the legend below.
pub fn spikes_figure(split: &SplitRun, id: &str, title: &str) -> Option<Figure> {
    if split.explanations.is_empty() {
        return None;
    }
    let kinds: Vec<CauseKind> = CAUSE_KINDS
        .into_iter()
        .filter(|k| split.explanations.iter().any(|s| s.explanation.causes.iter().any(|c| c.kind == *k)))
        .collect();
    // The legend: as many entries per row as fit (about 9 px per character at 14 px).
    let mut legend = Vec::new();
    let (mut x, mut row) = (12.0, 0.0);
    for kind in &kinds {
        let w = 26.0 + cause_words(*kind).chars().count() as f64 * CHAR_WIDTH + 20.0;
        if x > 12.0 && x + w > FIGURE_WIDTH - 12.0 {
            x = 12.0;
            row += 1.0;
        }
        legend.push((x, row, *kind));
        x += w;
    }
    let legend_rows = legend.last().map_or(0.0, |l| l.1 + 1.0);
    let top = 34.0;
    let bars_height = split.explanations.len() as f64 * ROW_HEIGHT;
    let height = top + bars_height + 12.0 + legend_rows * LEGEND_ROW + 8.0;
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        "<svg class=\"rtlab-svg\" viewBox=\"0 0 {FIGURE_WIDTH} {height}\" width=\"{FIGURE_WIDTH}\" height=\"{height}\" \
         role=\"img\" aria-label=\"{t}\"><title>{t}</title>\n<rect width=\"100%\" height=\"100%\" fill=\"#FFFFFF\"/>",
        t = escape(title)
    );
    let labels: Vec<String> = split
        .explanations
        .iter()
        .map(|s| format!("CPU {} {} · {} µs", s.cpu, s.when_text(), format_us(s.explanation.latency_ns)))
        .collect();
    let label_width = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0) as f64 * CHAR_WIDTH + 16.0;
    let bar_x = label_width.clamp(200.0, FIGURE_WIDTH / 2.0) + 12.0;
    let bar_width = FIGURE_WIDTH - bar_x - 16.0;
    let _ = writeln!(
        svg,
        "<text x=\"{bar_x}\" y=\"20\" font-family=\"sans-serif\" font-size=\"14\" fill=\"#222222\">share of the \
         sample's latency: 0 %</text><text x=\"{}\" y=\"20\" font-family=\"sans-serif\" font-size=\"14\" \
         fill=\"#222222\" text-anchor=\"end\">100 %</text>",
        bar_x + bar_width
    );
    for (i, (spike, label)) in split.explanations.iter().zip(&labels).enumerate() {
        let e = &spike.explanation;
        let y = top + i as f64 * ROW_HEIGHT;
        let _ = writeln!(
            svg,
            "<text x=\"{:.0}\" y=\"{}\" font-family=\"sans-serif\" font-size=\"14\" fill=\"#222222\" \
             text-anchor=\"end\">{}</text>",
            bar_x - 12.0,
            y + ROW_HEIGHT / 2.0 + 5.0,
            escape(label)
        );
        // Widths from the running sum, so the segments meet and end exactly at the bar's end.
        let total: i64 = e.causes.iter().map(|c| c.ns.max(0)).sum::<i64>().max(1);
        let mut done = 0i64;
        for c in &e.causes {
            let start = bar_x + bar_width * done as f64 / total as f64;
            done += c.ns.max(0);
            let end = bar_x + bar_width * done as f64 / total as f64;
            if end <= start {
                continue;
            }
            let _ = writeln!(
                svg,
                "<rect x=\"{start:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{}\" stroke=\"#FFFFFF\" \
                 stroke-width=\"1\"><title>{}</title></rect>",
                y + 4.0,
                end - start,
                ROW_HEIGHT - 8.0,
                cause_colour(c.kind),
                escape(&cause_text(c, e.latency_ns, &spike.probe))
            );
        }
    }
    let legend_top = top + bars_height + 12.0;
    for (x, row, kind) in legend {
        let y = legend_top + row * LEGEND_ROW;
        let _ = writeln!(
            svg,
            "<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"18\" height=\"14\" fill=\"{}\"/><text x=\"{:.1}\" y=\"{:.1}\" \
             font-family=\"sans-serif\" font-size=\"14\" fill=\"#222222\">{}</text>",
            y + 3.0,
            cause_colour(kind),
            x + 26.0,
            y + 15.0,
            escape(cause_words(kind))
        );
    }
    svg.push_str("</svg>\n");
    Some(Figure {
        id: id.to_string(),
        title: title.to_string(),
        description: " Each bar is one explained sample; its segments are the causes that delayed it, as shares of \
                      the sample's latency (hover for names and µs)."
            .into(),
        svg,
    })
}

/// The HTML report's spike bars, each beside its run's explanations table.
pub fn report_figures(set: &ReportSet) -> Vec<TableFigure> {
    let many = set.runs.len() > 1;
    let mut out = Vec::new();
    for sourced in &set.runs {
        let run = &sourced.run;
        let Some(split) = &run.split else { continue };
        let (id, suffix) = naming(run, many);
        let title = format!("What delayed the explained spikes{suffix}");
        if let Some(figure) = spikes_figure(split, &format!("fig-{EXPLANATIONS_TABLE}{id}"), &title) {
            out.push(TableFigure { table_id: format!("{EXPLANATIONS_TABLE}{id}"), figure });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtlab_results::split::Cause;
    use rtlab_results::split::SplitCounts;

    fn coverage(probe: &str) -> SplitCoverage {
        SplitCoverage { scenario: "idle".into(), probe: probe.into(), counts: SplitCounts::default() }
    }

    #[test]
    fn the_first_part_is_named_for_the_probes_shown() {
        let (timer, net) = (coverage("timer"), coverage("net"));
        assert_eq!(first_part_header(&[&timer]), "interrupt latency");
        assert_eq!(first_part_header(&[&net]), "wake-up");
        assert_eq!(first_part_header(&[&timer, &net]), "interrupt latency / net wake-up");
        assert_eq!(first_part_name("net"), "wake-up");
        // No samples: nothing to warn about, and no share to show.
        assert_eq!(timer.warning(), None);
        assert_eq!(percent(0, 0).shown, "-");
    }

    #[test]
    fn causes_in_words() {
        let softirq =
            Cause { kind: CauseKind::Softirq, name: "softirq NET_RX".into(), pid: None, prio: None, ns: 90_000 };
        assert_eq!(cause_text(&softirq, 312_000, "timer"), "softirq NET_RX 90.0 µs (29 %)");
        let task =
            Cause { kind: CauseKind::BlockingTask, name: "stress-ng".into(), pid: Some(7), prio: Some(120), ns: 1_000 };
        assert_eq!(cause_text(&task, 1_000_000, "timer"), "blocking task stress-ng (pid 7, prio 120) 1.0 µs (<1 %)");
        let idle = Cause { kind: CauseKind::IrqDelayedIdle, name: String::new(), pid: None, prio: None, ns: 0 };
        assert_eq!(cause_label(&idle, "timer"), "timer IRQ delayed: CPU leaving idle");
        assert_eq!(cause_label(&idle, "net"), "wake-up delayed: CPU leaving idle");
        assert_eq!(share_text(1, 0), "-");
        for kind in CAUSE_KINDS {
            assert!(cause_colour(kind).starts_with('#'));
        }
        let colours: std::collections::BTreeSet<_> = CAUSE_KINDS.iter().map(|k| cause_colour(*k)).collect();
        assert_eq!(colours.len(), CAUSE_KINDS.len(), "one colour per kind");
    }

    #[test]
    fn no_figure_without_explanations_and_bars_end_at_the_bar_end() {
        let mut split = SplitRun {
            backend: "tracefs".into(),
            backend_detail: String::new(),
            backend_choice: String::new(),
            overhead: None,
            coverage: Vec::new(),
            events: 0,
            events_lost: 0,
            explain_above_ns: None,
            above_threshold: 0,
            explanations: Vec::new(),
        };
        assert!(spikes_figure(&split, "f", "t").is_none());
        let causes = vec![
            Cause { kind: CauseKind::Unaccounted, name: String::new(), pid: None, prio: None, ns: 2 },
            Cause { kind: CauseKind::OwnThread, name: String::new(), pid: None, prio: None, ns: 1 },
        ];
        split.explanations.push(ExplainedSpike {
            scenario: "idle".into(),
            probe: "timer".into(),
            cpu: 0,
            at_s: Some(1.0),
            explanation: rtlab_results::split::Explanation {
                sample: rtlab_results::split::WakeSample { cpu: 0, due_ns: 0, wake_ns: 3 },
                latency_ns: 3,
                parts: None,
                causes,
                steal_ns: None,
                steal_window_ns: None,
                summary: String::new(),
            },
        });
        let svg = spikes_figure(&split, "f", "t & <u>").unwrap().svg;
        assert!(svg.contains("aria-label=\"t &amp; &lt;u&gt;\""), "{svg}");
        assert_eq!(svg.matches("<rect x=").count(), 2 + 2, "two segments, two legend swatches");
    }
}
