//! The terminal summary printed at the end of `rtlab run`.

use crate::digest::{MetricRow, RunDigest, LATENCY_SHARE_OF_PERIOD};
use crate::tables::text_table;
use crate::text::{conclusion_prefix, format_amount, format_rate, metric_title, policy_name, top_rates};
use crate::{Exporter, ReportError};
use rtlab_analysis::censored::LOWER_BOUND_SIGN;
use rtlab_analysis::exceedance::format_interval;
use rtlab_analysis::units::{format_period, format_us, thousands};
use rtlab_results::activity::Activity;
use rtlab_results::run::{RunResult, Scenario};
use rtlab_results::verdict::{Outcome, Verdict};
use std::fmt::Write;

/// Tables per metric (per CPU and all CPUs), the exceedance statement, the environment
/// warnings and the conclusion line.
pub struct TerminalSummary;

const COLUMNS: [&str; 12] =
    ["count", "overruns", "lost", "min", "mean", "stddev", "p50", "p99", "p99.9", "p99.99", "p99.999", "max"];

fn table_row(out: &mut String, row: &MetricRow) {
    let cpu = row.cpu.map(|c| c.to_string()).unwrap_or_else(|| "all".into());
    let _ = write!(out, "  {cpu:>4} {:>10} {:>8} {:>6}", row.count, row.overruns, row.lost);
    match &row.summary {
        Some(s) => {
            for c in COLUMNS[3..].iter().map(|name| s.format_us(name)) {
                let _ = write!(out, " {c:>8}");
            }
        }
        None => out.push_str("   (no samples)"),
    }
    out.push('\n');
}

fn metric_table(out: &mut String, metric: &crate::digest::MetricDigest) {
    let _ = writeln!(out, "\n{} (µs)", metric_title(&metric.metric));
    let _ = write!(out, "  {:>4} {:>10} {:>8} {:>6}", "CPU", COLUMNS[0], COLUMNS[1], COLUMNS[2]);
    for c in &COLUMNS[3..] {
        let _ = write!(out, " {c:>8}");
    }
    out.push('\n');
    // The jitter and sweep probes measure one step (period, rate) after another: a line
    // names each step above its CPUs' rows.
    let stepped = metric.rows.iter().any(|r| r.step.is_some());
    let mut current: Option<&str> = None;
    for row in &metric.rows {
        if stepped && row.step.as_deref() != current {
            current = row.step.as_deref();
            let _ = writeln!(out, "  {}", current.map(|s| format!("at {s}:")).unwrap_or_else(|| "together:".into()));
        }
        table_row(out, row);
    }
}

/// The loads of a scenario and what each achieved: rates, then CPU time.
fn loads_lines(out: &mut String, scenario: &Scenario) {
    for load in &scenario.loads {
        let figures: Vec<String> = load
            .achieved
            .iter()
            .filter(|i| i.unit.ends_with("/s") || i.unit.ends_with("/min") || i.unit == "CPUs")
            .take(4)
            .map(|i| format!("{} {}", format_amount(i.value), i.name))
            .collect();
        let cpu = load.cpu_seconds.map(|c| format!(" · {c:.1} CPU-s")).unwrap_or_default();
        let _ = writeln!(out, "  {:<12} {}{cpu}", load.name, figures.join(", "));
        if let Some(why) = &load.died_early {
            let _ = writeln!(out, "  !! {} stopped early: {why}", load.name);
        }
    }
}

/// One line of system activity: the busiest interrupt and softirq lines, context switches
/// and CPU use, so a reader sees that a load was there ("IRQ 24 95k/s").
pub fn activity_line(activity: &Activity) -> String {
    let total_irq: f64 = activity.interrupts_per_s.iter().map(|r| r.per_s).sum();
    let busy: Vec<String> = activity.cpus.iter().map(|c| format!("{:.0} %", c.busy * 100.0)).collect();
    let steal = activity.cpus.iter().map(|c| c.steal).fold(0.0, f64::max);
    let mut line = format!("interrupts {}/s ({})", format_rate(total_irq), top_rates(&activity.interrupts_per_s, true));
    if !activity.softirqs_per_s.is_empty() {
        let _ = write!(line, "; softirqs {}", top_rates(&activity.softirqs_per_s, false));
    }
    let _ = write!(
        line,
        "; {} context switches/s; CPU busy {}; steal up to {:.0} %",
        format_rate(activity.context_switches_per_s),
        busy.join(" / "),
        steal * 100.0
    );
    line
}

/// Why a scenario has no exceedance interval when its p99.999 lies beyond the source's
/// histogram (censored data); None otherwise.
pub fn censored_exceedance_line(sd: &crate::digest::ScenarioDigest) -> Option<String> {
    let s = sd.main()?.overall().summary.as_ref().filter(|s| s.is_lower_bound("p99.999"))?;
    Some(format!(
        "Exceedance: not given: the p99.999 threshold lies beyond the source's histogram ({}), where the source kept no \
         samples.",
        s.format_us("p99.999") + " µs"
    ))
}

/// Statistics of the side-by-side table: label and how to read it from a row.
const SIDE_BY_SIDE: [&str; 9] = ["samples", "min", "mean", "p50", "p99", "p99.9", "p99.999", "max", "overruns"];

fn side_by_side_cell(row: &MetricRow, statistic: &str) -> String {
    let Some(s) = &row.summary else { return "-".into() };
    match statistic {
        "samples" => thousands(row.count),
        "overruns" => thousands(row.overruns),
        "min" | "mean" | "p50" | "p99" | "p99.9" | "p99.999" => s.format_us(statistic),
        _ => s.format_us("max"),
    }
}

/// One column per scenario, the statistics of all CPUs together.
fn side_by_side(out: &mut String, digest: &RunDigest) {
    let width = digest.scenarios.iter().map(|s| s.name.chars().count()).max().unwrap_or(0).max(10);
    let label_width = digest.metrics().iter().map(|m| metric_title(m).chars().count()).max().unwrap_or(0).max(16);
    let _ = write!(out, "\nSide by side, all CPUs (µs) {:>pad$}", "", pad = label_width - 6);
    for s in &digest.scenarios {
        let _ = write!(out, " {:>width$}", s.name);
    }
    out.push('\n');
    for metric in digest.metrics() {
        let title = metric_title(metric);
        for (i, statistic) in SIDE_BY_SIDE.iter().enumerate() {
            let label = if i == 0 { title.as_str() } else { "" };
            let _ = write!(out, "  {label:<label_width$} {statistic:>20}");
            for s in &digest.scenarios {
                let cell = s.metric(metric).map(|m| side_by_side_cell(m.overall(), statistic));
                let _ = write!(out, " {:>width$}", cell.unwrap_or_else(|| "-".into()));
            }
            out.push('\n');
        }
    }
}

impl Exporter for TerminalSummary {
    fn export(&self, run: &RunResult) -> Result<String, ReportError> {
        let digest = RunDigest::of(run)?;
        let mut out = String::new();
        let e = &run.experiment;
        let scenarios = if run.scenarios.len() > 1 {
            format!(" · {} scenarios ({})", run.scenarios.len(), e.loads.join(", "))
        } else {
            String::new()
        };
        // The interval is the timer probe's; the other probes state their own settings.
        let interval = if e.probes.iter().any(|p| p == "timer") {
            format!(" · interval {}", format_period(e.interval_ns as i64))
        } else {
            String::new()
        };
        let plural = if e.cpus.len() == 1 { "" } else { "s" };
        // An import states its source and what of it is exact instead of rtlab's set-up.
        let setup = match &run.imported {
            Some(_) if run.duration_s > 0.0 => format!("thread{plural}{interval} · {:.1} s", run.duration_s),
            Some(_) => format!("thread{plural}{interval}"),
            None => format!(
                "CPU{plural}{interval} · {}{scenarios} · {:.1} s{}",
                policy_name(run),
                run.duration_s,
                if run.simulated { " · SIMULATED CLOCK" } else { "" }
            ),
        };
        let _ = writeln!(out, "rtlab {} · {} · {} {setup}", run.label, e.probes.join(", "), e.cpus.len());
        if let Some(info) = &run.imported {
            // The source's own set-up: nothing rtlab observed to note.
            let _ = writeln!(out, "Imported: {}", info.source_line());
            for line in info.describe() {
                let _ = writeln!(out, "  {line}");
            }
        } else if !run.realtime.real_time_results {
            let _ = writeln!(out, "!! NOT REAL-TIME RESULTS: {}", run.realtime.notes.join(" "));
        } else {
            // Real-time results can still carry notes on how a probe ran (a trigger on the
            // receiver's CPU, loopback delivery): the reader must see them.
            for note in &run.realtime.notes {
                let _ = writeln!(out, "Note: {note}");
            }
        }
        if run.interrupted {
            out.push_str("!! INTERRUPTED: partial results, the run was stopped before its end.\n");
        }
        // A single unloaded scenario needs no heading: the run is just "the measurement".
        let headings = run.scenarios.len() > 1 || run.scenarios.iter().any(Scenario::is_loaded);
        for (scenario, sd) in run.scenarios.iter().zip(&digest.scenarios) {
            if headings {
                let loads = if scenario.is_loaded() {
                    scenario.loads.iter().map(|l| l.name.as_str()).collect::<Vec<_>>().join(" + ")
                } else {
                    "no load".into()
                };
                let settle = if scenario.is_loaded() {
                    format!(" · settled {:.1} s", scenario.settle_s)
                } else {
                    String::new()
                };
                let _ = writeln!(out, "\n== {}: {loads}{settle} · {:.1} s ==", scenario.name, scenario.duration_s);
                if scenario.is_loaded() {
                    out.push_str("Loads achieved:\n");
                    loads_lines(&mut out, scenario);
                }
                if let Some(why) = &scenario.load_failure {
                    let _ =
                        writeln!(out, "!! NOT FULLY LOADED: {why}; these measurements do not show the loaded case.");
                }
                if scenario.interrupted {
                    out.push_str("!! This scenario was interrupted.\n");
                }
            }
            for metric in &sd.metrics {
                metric_table(&mut out, metric);
            }
            for table in crate::tables::probes::scenario_tables(run, &scenario.name)? {
                out.push('\n');
                out.push_str(&text_table(&table));
            }
            out.push_str(&crate::tables::taskset::terminal_section(run, &scenario.name));
            out.push_str(&crate::tables::split::terminal_section(run, &scenario.name));
            out.push_str(&crate::tables::noise::terminal_section(run, &scenario.name));
            out.push('\n');
            if let Some(a) = &scenario.activity {
                let _ = writeln!(out, "Activity: {}", activity_line(a));
            }
            // The exceedance interval assumes one stream of samples at a steady rate; a task
            // set's jobs are several tasks at their own periods, so it means nothing there.
            if let Some(x) = sd.exceedance.as_ref().filter(|_| run.taskset.is_none()) {
                let _ = writeln!(
                    out,
                    "Exceedance: one sample in 100,000 exceeds the p99.999 threshold of {} µs; at {} samples/s (all CPUs) that is once every {}.",
                    format_us(x.threshold_ns),
                    thousands(x.sample_rate_hz.round() as u64),
                    format_interval(x.interval_s)
                );
                if !x.is_supported() {
                    let _ = writeln!(
                        out,
                        "  This {} has {} samples, fewer than the {} that put 10 samples above it: the p99.999 here is close to the maximum.",
                        if run.scenarios.len() > 1 { "scenario" } else { "run" },
                        thousands(x.samples),
                        thousands(x.samples_for_support)
                    );
                }
            }
            if let Some(line) = censored_exceedance_line(sd).filter(|_| run.taskset.is_none()) {
                let _ = writeln!(out, "{line}");
            }
            if let Some(line) = crate::pwcet::summary_line(run, &scenario.name, sd.main_metric.as_deref())? {
                let _ = writeln!(out, "{line}");
            }
            // "Long enough?" (docs/stop-rule.md): absent in runs saved before it existed.
            if let Some(c) = &scenario.convergence {
                let _ = writeln!(out, "Long enough? {} ({}).", c.answer, c.metric);
            }
            let lost: u64 = sd.main().map(|m| m.overall().lost).unwrap_or(0);
            if let Some(why) = &scenario.raw_stopped {
                let _ = writeln!(out, "!! {why}.");
            } else if lost > 0 {
                let _ = writeln!(
                    out,
                    "!! {} raw samples were lost (the writer fell behind); histograms are complete.",
                    thousands(lost)
                );
            }
        }
        if digest.scenarios.len() > 1 {
            side_by_side(&mut out, &digest);
        }
        if !run.warnings.is_empty() {
            out.push_str("\nThis host may distort the results:\n");
            for w in &run.warnings {
                let _ = writeln!(out, "  ! {}: {}", w.code, w.message);
            }
        }
        if let Some(line) = crate::tables::taskset::conclusion(run) {
            out.push_str(&line);
        } else if let Some(c) = &digest.conclusion {
            let prefix = conclusion_prefix(run);
            let under = if digest.scenarios.len() > 1 {
                format!("under {} (the worst scenario), ", c.scenario)
            } else {
                String::new()
            };
            let what = metric_title(&c.metric).to_lowercase();
            // Figures beyond a source's histogram are lower bounds (censored data).
            let worst = if c.worst_is_lower_bound {
                format!("at least {} µs (beyond the source's histogram)", format_us(c.worst_ns))
            } else {
                format!("at most {} µs", format_us(c.worst_ns))
            };
            let p99_9 = if c.p99_9_is_lower_bound {
                format!("p99.9 {LOWER_BOUND_SIGN} {} µs", format_us(c.p99_9_ns))
            } else {
                format!("99.9 % within {} µs", format_us(c.p99_9_ns))
            };
            let _ =
                write!(out, "\n{prefix}: {under}{what} was {worst} over {} samples ({p99_9})", thousands(c.samples));
            // Akamina's rule, where the run measured a periodic task's wake-up latency.
            let rule = format!("by Akamina's {:.0} % rule", LATENCY_SHARE_OF_PERIOD * 100.0);
            match (c.shortest_period_ns, &c.rule_metric, c.rule_worst_ns) {
                (Some(period), None, _) => {
                    let _ = writeln!(
                        out,
                        "; {rule} this machine suits periodic tasks of {} or longer.",
                        format_period(period)
                    );
                }
                (Some(period), Some(metric), Some(worst)) => {
                    let _ = writeln!(
                        out,
                        "; {} was at most {} µs, so {rule} this machine suits periodic tasks of {} or longer.",
                        metric_title(metric).to_lowercase(),
                        format_us(worst),
                        format_period(period)
                    );
                }
                _ => out.push_str(".\n"),
            }
        } else {
            out.push_str("\nConclusion: no samples were taken.\n");
        }
        if let Some(v) = &run.verdict {
            out.push('\n');
            out.push_str(&verdict_text(v));
        }
        Ok(out)
    }
}

/// The verdict for a terminal or a CI log: the sentence, one line per check, the caveats.
pub fn verdict_text(verdict: &Verdict) -> String {
    let mut out = format!("Verdict: {}\n", verdict.summary);
    for c in &verdict.checks {
        let measured = match (c.measured_ns, c.margin_ns, &c.undecided) {
            (Some(m), Some(margin), _) => format!(
                "{}{} µs (margin {} µs), {} samples in {:.1} s, {} at or above the bound",
                if c.lower_bound { format!("{LOWER_BOUND_SIGN} ") } else { String::new() },
                format_us(m),
                format_us(margin),
                thousands(c.samples),
                c.duration_s,
                thousands(c.samples_above_bound)
            ),
            (_, _, Some(_)) => format!(
                "undecided, {} samples in {:.1} s, {} at or above the bound",
                thousands(c.samples),
                c.duration_s,
                thousands(c.samples_above_bound)
            ),
            _ => "not measured".into(),
        };
        let mark = match c.outcome() {
            Outcome::Met => " ok ",
            Outcome::NotMet => "FAIL",
            Outcome::Undecided => " ?? ",
        };
        let _ = writeln!(out, "  [{mark}] {} · {} {}: {measured}", c.requirement.text, c.run_label, c.scenario);
        if let Some(why) = &c.undecided {
            let what = if c.requirement.needs_tail_analysis() { "pWCET: " } else { "" };
            let _ = writeln!(out, "         {what}{}", why.trim_end_matches('.'));
        }
        for note in &c.notes {
            let _ = writeln!(out, "         {note}");
        }
    }
    for caveat in &verdict.caveats {
        let _ = writeln!(out, "  ! {caveat}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::cut_cell;

    #[test]
    fn number_formats() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(1_500_000), "1,500,000");
        assert_eq!(format_period(1_000_000), "1 ms");
        assert_eq!(format_period(304_000_000), "304 ms");
        assert_eq!(format_period(50_000), "50 µs");
        assert_eq!(format_period(1_500_000_000), "1.5 s");
    }

    #[test]
    fn task_set_response_metrics_are_titled_by_task() {
        assert_eq!(metric_title("taskset.control.response"), "Response time of task control");
        assert_eq!(metric_title("taskset.a.b.response"), "Response time of task a.b");
        assert_eq!(metric_title("ipc:futex.latency"), "ipc:futex wake-up latency");
    }

    #[test]
    fn long_cells_are_cut_keeping_whose_value_it_is() {
        let title = "Worst-case interrupt latency at 1 kHz rate (stock)";
        let cut = cut_cell(title, 40);
        assert!(cut.chars().count() <= 40);
        assert_eq!(cut, "Worst-case interrupt latency at… (stock)");
        assert_eq!(cut_cell("short (paper)", 40), "short (paper)");
        // No suffix, or one too long to keep: an ordinary cut.
        let plain = "a".repeat(50);
        assert_eq!(cut_cell(&plain, 40), "a".repeat(39) + "…");
        let long_suffix = format!("x ({})", "b".repeat(45));
        assert_eq!(cut_cell(&long_suffix, 40).chars().count(), 40);
        assert!(cut_cell(&long_suffix, 40).ends_with('…'));
    }
}
