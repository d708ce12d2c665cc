//! The terminal summary printed at the end of `rtlab run`.

use crate::digest::{MetricRow, RunDigest, LATENCY_SHARE_OF_PERIOD};
use crate::model::RunResult;
use crate::{Exporter, ReportError};
use rtlab_analysis::exceedance::format_interval;
use rtlab_analysis::units::{format_us, format_us_f};
use std::fmt::Write;

/// Tables per metric (per CPU and all CPUs), the exceedance statement, the environment
/// warnings and the conclusion line.
pub struct TerminalSummary;

/// Human title of a metric.
pub fn metric_title(metric: &str) -> String {
    match metric {
        "timer.latency" => "Timer latency".into(),
        "timer.jitter" => "Period jitter".into(),
        other => other.to_string(),
    }
}

/// "1000 µs", "1.5 ms", "2 s": a period or duration for people.
pub fn format_period(ns: i64) -> String {
    let ns = ns as f64;
    if ns >= 1e9 {
        format!("{} s", trim(ns / 1e9))
    } else if ns >= 1e6 {
        format!("{} ms", trim(ns / 1e6))
    } else {
        format!("{} µs", trim(ns / 1e3))
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.1}");
    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
}

fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn policy_name(run: &RunResult) -> String {
    let p = &run.realtime;
    if p.policy.is_realtime() {
        format!("{} {}", p.policy.kernel_name(), p.priority)
    } else {
        p.policy.kernel_name().to_string()
    }
}

const COLUMNS: [&str; 12] =
    ["count", "overruns", "lost", "min", "mean", "stddev", "p50", "p99", "p99.9", "p99.99", "p99.999", "max"];

fn table_row(out: &mut String, row: &MetricRow) {
    let cpu = row.cpu.map(|c| c.to_string()).unwrap_or_else(|| "all".into());
    let _ = write!(out, "  {cpu:>4} {:>10} {:>8} {:>6}", row.count, row.overruns, row.lost);
    match &row.summary {
        Some(s) => {
            let cells = [
                format_us(s.min),
                format_us_f(s.mean),
                format_us_f(s.stddev),
                format_us(s.p50),
                format_us(s.p99),
                format_us(s.p99_9),
                format_us(s.p99_99),
                format_us(s.p99_999),
                format_us(s.max),
            ];
            for c in cells {
                let _ = write!(out, " {c:>8}");
            }
        }
        None => out.push_str("   (no samples)"),
    }
    out.push('\n');
}

impl Exporter for TerminalSummary {
    fn export(&self, run: &RunResult) -> Result<String, ReportError> {
        let digest = RunDigest::of(run)?;
        let mut out = String::new();
        let e = &run.experiment;
        let _ = writeln!(
            out,
            "rtlab {} · {} · {} CPU{} · interval {} · {} · {:.1} s{}",
            run.label,
            e.probes.join(", "),
            e.cpus.len(),
            if e.cpus.len() == 1 { "" } else { "s" },
            format_period(e.interval_ns as i64),
            policy_name(run),
            run.duration_s,
            if run.simulated { " · SIMULATED CLOCK" } else { "" }
        );
        if !run.realtime.real_time_results {
            let _ = writeln!(out, "!! NOT REAL-TIME RESULTS: {}", run.realtime.notes.join(" "));
        }
        if run.interrupted {
            out.push_str("!! INTERRUPTED: partial results, the run was stopped before its end.\n");
        }
        for metric in &digest.metrics {
            let _ = writeln!(out, "\n{} (µs)", metric_title(&metric.metric));
            let _ = write!(out, "  {:>4} {:>10} {:>8} {:>6}", "CPU", COLUMNS[0], COLUMNS[1], COLUMNS[2]);
            for c in &COLUMNS[3..] {
                let _ = write!(out, " {c:>8}");
            }
            out.push('\n');
            for row in &metric.rows {
                table_row(&mut out, row);
            }
        }
        if let Some(x) = &digest.exceedance {
            let _ = writeln!(
                out,
                "\nExceedance: one sample in 100,000 exceeds the p99.999 threshold of {} µs; at {} samples/s (all CPUs) that is once every {}.",
                format_us(x.threshold_ns),
                thousands(x.sample_rate_hz.round() as u64),
                format_interval(x.interval_s)
            );
            if !x.is_supported() {
                let _ = writeln!(
                    out,
                    "  This run has {} samples, fewer than the {} that put 10 samples above it: the p99.999 here is close to the maximum.",
                    thousands(x.samples),
                    thousands(x.samples_for_support)
                );
            }
        }
        let lost: u64 = digest.metrics.first().map(|m| m.overall().lost).unwrap_or(0);
        if lost > 0 {
            let _ = writeln!(
                out,
                "\n!! {} raw samples were lost (the writer fell behind); histograms are complete.",
                thousands(lost)
            );
        }
        if !run.warnings.is_empty() {
            out.push_str("\nThis host may distort the results:\n");
            for w in &run.warnings {
                let _ = writeln!(out, "  ! {}: {}", w.code, w.message);
            }
        }
        if let Some(c) = &digest.conclusion {
            let prefix = match (run.realtime.real_time_results, run.interrupted) {
                (false, _) => "Conclusion (not real-time results)",
                (true, true) => "Conclusion (interrupted run)",
                (true, false) => "Conclusion",
            };
            let _ = writeln!(
                out,
                "\n{prefix}: {} was at most {} µs over {} samples (99.9 % within {} µs); by Akamina's {:.0} % rule this machine suits periodic tasks of {} or longer.",
                metric_title(&c.metric).to_lowercase(),
                format_us(c.worst_ns),
                thousands(c.samples),
                format_us(c.p99_9_ns),
                LATENCY_SHARE_OF_PERIOD * 100.0,
                format_period(c.shortest_period_ns)
            );
        } else {
            out.push_str("\nConclusion: no samples were taken.\n");
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_formats() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(1_500_000), "1,500,000");
        assert_eq!(format_period(1_000_000), "1 ms");
        assert_eq!(format_period(304_000_000), "304 ms");
        assert_eq!(format_period(50_000), "50 µs");
        assert_eq!(format_period(1_500_000_000), "1.5 s");
    }
}
