//! `--format openmetrics`: the runs' summaries and histogram buckets as an OpenMetrics text
//! exposition (1.0.0), which is also valid Prometheus text format 0.0.4 (docs/export/openmetrics.md).
//! Written for the node_exporter textfile collector, a Pushgateway, or any OpenMetrics parser.
//!
//! Every measurement (run × scenario × metric × thread) is one series, labelled `run`,
//! `scenario`, `metric`, `cpu` and `thread`, in seconds (the OpenMetrics base unit):
//! - `rtlab_sample_seconds` (summary): the report's percentiles as quantiles, exact
//!   `_count` and `_sum`;
//! - `rtlab_sample_min_seconds`, `_max_`, `_mean_` (gauges): exact;
//! - `rtlab_sample_histogram_seconds` (histogram): cumulative buckets on a fixed 1-2-5
//!   ladder from 100 ns up to the first rung above the largest sample, and `+Inf`;
//! - imported series whose source clipped samples (censored data): quantiles that are only
//!   lower bounds move to `rtlab_sample_quantile_lower_bound_seconds`, with
//!   `rtlab_sample_censored` and `rtlab_sample_censored_above_seconds`; a mean without the
//!   source's own and the histogram buckets between the bound and the max are left out;
//! - `rtlab_scenario_duration_seconds` (gauge): each scenario's measuring time;
//! - with a verdict, `rtlab_requirement_met` (1 met, 0 not), `rtlab_requirement_undecided`,
//!   `rtlab_requirement_measured_seconds`, `rtlab_requirement_bound_seconds` per requirement and
//!   configuration, `rtlab_verdict_met` and `rtlab_verdict_undecided`.

use crate::FormatError;
use rtlab_analysis::LatencyHistogram;
use rtlab_results::run::Measurement;
use rtlab_results::set::{ReportExporter, ReportSet};
use rtlab_results::verdict::Verdict;
use std::collections::HashSet;
use std::fmt::Write;

/// The OpenMetrics exposition of every run of the set.
#[derive(Debug, Clone, Default)]
pub struct OpenMetrics;

/// The smallest bucket boundary: 100 ns (context switches and IPC wake-ups are sub-µs).
const FIRST_RUNG_NS: i64 = 100;

impl ReportExporter for OpenMetrics {
    type Error = FormatError;

    fn render(&self, set: &ReportSet) -> Result<String, FormatError> {
        let series = all_series(set)?;
        let ladder = bucket_ladder(series.iter().filter_map(|s| s.measurement.moments.max()).max());
        let mut out = String::new();
        write_summaries(&mut out, &series);
        for (statistic, help) in [
            ("min", "Smallest sample of the series (exact)."),
            ("max", "Largest sample of the series (exact)."),
            ("mean", "Mean of the series' samples (exact sum / count)."),
        ] {
            write_extreme(&mut out, &series, statistic, help);
        }
        write_censoring(&mut out, &series);
        write_histograms(&mut out, &series, &ladder);
        write_scenarios(&mut out, set);
        if let Some(verdict) = set.effective_verdict() {
            write_verdict(&mut out, set, &verdict);
        }
        out.push_str("# EOF\n");
        Ok(out)
    }
}

/// One measurement with its rendered label set (without `quantile`/`le`).
struct Series<'a> {
    labels: String,
    measurement: &'a Measurement,
    histogram: LatencyHistogram,
}

fn all_series(set: &ReportSet) -> Result<Vec<Series<'_>>, FormatError> {
    let names = run_names(set);
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for (sourced, run_name) in set.runs.iter().zip(&names) {
        for m in &sourced.run.measurements {
            let labels = label_set(&[
                ("run", run_name),
                ("scenario", &m.scenario),
                ("metric", &m.metric),
                ("cpu", &m.cpu.to_string()),
                ("thread", &m.thread),
            ]);
            if !seen.insert(labels.clone()) {
                return Err(FormatError::Invalid {
                    path: sourced.source.clone(),
                    reason: format!(
                        "two measurements of {} in scenario {:?} on CPU {} share the thread name {:?}",
                        m.metric, m.scenario, m.cpu, m.thread
                    ),
                });
            }
            out.push(Series { labels, measurement: m, histogram: LatencyHistogram::decode(&m.histogram)? });
        }
    }
    Ok(out)
}

/// The `run` label of each run: its label, numbered "#2", "#3"... when runs share one, so
/// that no two series of a comparison collide.
fn run_names(set: &ReportSet) -> Vec<String> {
    let labels: Vec<&str> = set.runs.iter().map(|r| r.run.label.as_str()).collect();
    labels
        .iter()
        .enumerate()
        .map(|(i, label)| {
            let before = labels[..i].iter().filter(|l| *l == label).count();
            if before == 0 {
                label.to_string()
            } else {
                format!("{label} #{}", before + 1)
            }
        })
        .collect()
}

pub(crate) fn family(out: &mut String, name: &str, kind: &str, unit: Option<&str>, help: &str) {
    let _ = writeln!(out, "# TYPE {name} {kind}");
    if let Some(unit) = unit {
        let _ = writeln!(out, "# UNIT {name} {unit}");
    }
    let _ = writeln!(out, "# HELP {name} {help}");
}

fn write_summaries(out: &mut String, series: &[Series]) {
    let name = "rtlab_sample_seconds";
    family(
        out,
        name,
        "summary",
        Some("seconds"),
        "Samples of an rtlab metric (label metric) on one thread: the report's percentiles from its HDR histogram \
         (within 0.1 %), exact count and sum.",
    );
    for s in series {
        let m = s.measurement;
        if let Some(summary) = m.summary.as_ref().filter(|_| m.count > 0) {
            // A quantile that is only a lower bound (censored data) is not the quantile: it goes
            // to rtlab_sample_quantile_lower_bound_seconds instead.
            for (quantile, value) in quantiles(summary, false) {
                let _ = writeln!(out, "{name}{{{},quantile=\"{quantile}\"}} {}", s.labels, seconds(value.into()));
            }
        }
        let _ = writeln!(out, "{name}_count{{{}}} {}", s.labels, m.count);
        // `_sum` is a counter: a negative one (a signed metric) is left out, and so is a
        // lower bound (censored data without the source's mean).
        if m.moments.sum >= 0 && !sum_is_lower_bound(m) {
            let _ = writeln!(out, "{name}_sum{{{}}} {}", s.labels, seconds(m.moments.sum));
        }
    }
}

/// The summary's quantiles that are lower bounds (censored data), or the others. OpenMetrics
/// quantile values are never negative: a signed metric's quantiles below 0 are left out (min
/// and mean still show them).
fn quantiles(summary: &rtlab_analysis::Summary, lower_bounds: bool) -> impl Iterator<Item = (f64, i64)> + '_ {
    rtlab_analysis::SUMMARY_PERCENTILES
        .iter()
        .zip(summary.percentiles())
        .filter(move |(_, (figure, value))| *value >= 0 && summary.is_lower_bound(figure) == lower_bounds)
        .map(|((_, quantile), (_, value))| (*quantile, value))
}

/// Censored series (imports whose source clipped samples, docs/interop.md): the quantiles
/// known only from below, and how many samples the source clipped from which bound.
fn write_censoring(out: &mut String, series: &[Series]) {
    let censored: Vec<(&Series, &rtlab_analysis::Summary, &rtlab_analysis::censored::Censoring)> = series
        .iter()
        .filter_map(|s| {
            let summary = s.measurement.summary.as_ref()?;
            Some((s, summary, summary.censored.as_ref()?))
        })
        .collect();
    if censored.is_empty() {
        return;
    }
    let name = "rtlab_sample_quantile_lower_bound_seconds";
    family(
        out,
        name,
        "gauge",
        Some("seconds"),
        "A quantile of an imported series that lies among samples the source clipped: the true quantile is at least \
         this (it is absent from rtlab_sample_seconds).",
    );
    for (s, summary, _) in &censored {
        for (quantile, value) in quantiles(summary, true) {
            let _ = writeln!(out, "{name}{{{},quantile=\"{quantile}\"}} {}", s.labels, seconds(value.into()));
        }
    }
    let name = "rtlab_sample_censored";
    family(
        out,
        name,
        "gauge",
        None,
        "Samples of an imported series that lay beyond the source's histogram (cyclictest's overflows, rtla's over:).",
    );
    for (s, _, c) in &censored {
        let _ = writeln!(out, "{name}{{{}}} {}", s.labels, c.count);
    }
    let name = "rtlab_sample_censored_above_seconds";
    family(out, name, "gauge", Some("seconds"), "Every censored sample of the series is at least this.");
    for (s, _, c) in &censored {
        let _ = writeln!(out, "{name}{{{}}} {}", s.labels, seconds(c.above_ns.into()));
    }
}

fn write_extreme(out: &mut String, series: &[Series], statistic: &str, help: &str) {
    let name = format!("rtlab_sample_{statistic}_seconds");
    family(out, &name, "gauge", Some("seconds"), help);
    for s in series {
        // A mean or max of censored data without the source's own figure is a lower bound.
        if s.measurement.summary.as_ref().is_some_and(|summary| summary.is_lower_bound(statistic)) {
            continue;
        }
        let moments = &s.measurement.moments;
        let value = match statistic {
            "min" => moments.min().map(|v| seconds(v.into())),
            "max" => moments.max().map(|v| seconds(v.into())),
            _ => moments.mean().map(|ns| float(ns / 1e9)),
        };
        if let Some(value) = value {
            let _ = writeln!(out, "{name}{{{}}} {value}", s.labels);
        }
    }
}

fn write_histograms(out: &mut String, series: &[Series], ladder: &[i64]) {
    let name = "rtlab_sample_histogram_seconds";
    family(
        out,
        name,
        "histogram",
        Some("seconds"),
        "Samples of an rtlab metric on one thread, cumulative on a 1-2-5 ladder: a sample within 0.1 % below a \
         boundary may be counted in the next bucket (HDR histogram precision).",
    );
    for s in series {
        let m = s.measurement;
        // Samples a source clipped are recorded at its bound: how many lie at or below a
        // boundary from the bound up to the exact max is unknown, so those buckets are left out.
        let censored_from = m.summary.as_ref().and_then(|summary| summary.censored.as_ref()).map(|c| c.above_ns);
        for &rung in ladder {
            if censored_from.is_some_and(|bound| rung >= bound) && m.moments.max().is_some_and(|max| rung < max) {
                continue;
            }
            let at_or_below = cumulative_count(&s.histogram, m, rung);
            let _ = writeln!(out, "{name}_bucket{{{},le=\"{}\"}} {at_or_below}", s.labels, seconds(rung.into()));
        }
        let _ = writeln!(out, "{name}_bucket{{{},le=\"+Inf\"}} {}", s.labels, m.count);
        // OpenMetrics: `_count` only with `_sum`, and `_sum` never negative.
        if m.moments.sum >= 0 && !sum_is_lower_bound(m) {
            let _ = writeln!(out, "{name}_count{{{}}} {}", s.labels, m.count);
            let _ = writeln!(out, "{name}_sum{{{}}} {}", s.labels, seconds(m.moments.sum));
        }
    }
}

/// The sum of a censored series whose source gave no mean is only a lower bound.
fn sum_is_lower_bound(m: &Measurement) -> bool {
    m.summary.as_ref().is_some_and(|summary| summary.is_lower_bound("mean"))
}

/// Samples at or below `rung` ns: all of them from the exact max up, none below the exact
/// min; between, the HDR buckets whose whole range is at or below the rung (a bucket that
/// straddles it counts above: never more samples below a boundary than there were).
pub fn cumulative_count(histogram: &LatencyHistogram, m: &Measurement, rung: i64) -> u64 {
    match (m.moments.min(), m.moments.max()) {
        (Some(_), Some(max)) if rung >= max => m.count,
        (Some(min), Some(_)) if rung < min => 0,
        (Some(_), Some(_)) => {
            let rung = rung.max(0).unsigned_abs();
            // Saturating: the counts come from a file.
            histogram
                .buckets()
                .filter(|&(highest, _)| highest <= rung)
                .fold(0u64, |n, (_, count)| n.saturating_add(count))
        }
        _ => 0,
    }
}

/// 100 ns, 200 ns, 500 ns, 1 µs, ... up to the first rung at or above `max_ns`.
pub fn bucket_ladder(max_ns: Option<i64>) -> Vec<i64> {
    let top = max_ns.unwrap_or(0);
    let mut ladder = Vec::new();
    let mut decade = FIRST_RUNG_NS;
    loop {
        for step in [1, 2, 5] {
            let Some(rung) = decade.checked_mul(step) else { return ladder };
            ladder.push(rung);
            if rung >= top {
                return ladder;
            }
        }
        let Some(next) = decade.checked_mul(10) else { return ladder };
        decade = next;
    }
}

fn write_scenarios(out: &mut String, set: &ReportSet) {
    let name = "rtlab_scenario_duration_seconds";
    family(out, name, "gauge", Some("seconds"), "Time the scenario spent measuring.");
    for (sourced, run_name) in set.runs.iter().zip(run_names(set)) {
        for s in &sourced.run.scenarios {
            let labels = label_set(&[("run", &run_name), ("scenario", &s.name)]);
            let _ = writeln!(out, "{name}{{{labels}}} {}", float(s.duration_s));
        }
    }
}

fn write_verdict(out: &mut String, set: &ReportSet, verdict: &Verdict) {
    // Checks name their run by label; a comparison of runs sharing a label cannot tell
    // them apart, so the first such run's name stands for all.
    let names = run_names(set);
    let run_name = |label: &str| {
        let index = set.runs.iter().position(|r| r.run.label == label);
        index.and_then(|i| names.get(i).cloned()).unwrap_or_else(|| label.to_string())
    };
    let mut seen = HashSet::new();
    let checks: Vec<(String, &rtlab_results::verdict::Check)> = verdict
        .checks
        .iter()
        .map(|c| {
            let labels = label_set(&[
                ("run", &run_name(&c.run_label)),
                ("scenario", &c.scenario),
                ("requirement", &c.requirement.text),
            ]);
            (labels, c)
        })
        // The same requirement given twice is the same series.
        .filter(|(labels, _)| seen.insert(labels.clone()))
        .collect();

    let name = "rtlab_requirement_met";
    family(out, name, "gauge", None, "1 when the requirement was met in the configuration, else 0.");
    for (labels, c) in &checks {
        let _ = writeln!(out, "{name}{{{labels}}} {}", u8::from(c.met));
    }
    let name = "rtlab_requirement_undecided";
    family(
        out,
        name,
        "gauge",
        None,
        "1 when the requirement could not be decided in the configuration (a pwcet(P) not defensible from the run), else 0.",
    );
    for (labels, c) in &checks {
        let _ = writeln!(out, "{name}{{{labels}}} {}", u8::from(c.undecided.is_some()));
    }
    let name = "rtlab_requirement_measured_seconds";
    family(out, name, "gauge", Some("seconds"), "The statistic the requirement bounds, as measured.");
    for (labels, c) in &checks {
        if let Some(measured) = c.measured_ns {
            let _ = writeln!(out, "{name}{{{labels}}} {}", seconds(measured.into()));
        }
    }
    let name = "rtlab_requirement_bound_seconds";
    family(out, name, "gauge", Some("seconds"), "The requirement's bound: met when the statistic is below it.");
    for (labels, c) in &checks {
        let _ = writeln!(out, "{name}{{{labels}}} {}", seconds(c.requirement.bound_ns.into()));
    }
    let name = "rtlab_verdict_met";
    family(out, name, "gauge", None, "1 when every requirement was met in every configuration, else 0.");
    let _ = writeln!(out, "{name} {}", u8::from(verdict.met));
    let name = "rtlab_verdict_undecided";
    family(out, name, "gauge", None, "1 when no requirement failed but some could not be decided, else 0.");
    let _ = writeln!(out, "{name} {}", u8::from(verdict.undecided));
}

/// `name="value",...` with the values escaped.
fn label_set(pairs: &[(&str, &str)]) -> String {
    pairs.iter().map(|(name, value)| format!("{name}=\"{}\"", escape_label(value))).collect::<Vec<_>>().join(",")
}

/// Label value escaping of both formats: backslash, double quote, line feed.
pub fn escape_label(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// ns as seconds, exactly: "0.000002863", "2.5", "0".
pub fn seconds(ns: i128) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    let abs = ns.unsigned_abs();
    let (whole, fraction) = (abs / 1_000_000_000, abs % 1_000_000_000);
    if fraction == 0 {
        return format!("{sign}{whole}");
    }
    let digits = format!("{fraction:09}");
    format!("{sign}{whole}.{}", digits.trim_end_matches('0'))
}

/// A float value as both formats read it (a hand-edited run.json can hold anything).
fn float(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn censored_quantiles_are_lower_bounds_and_clipped_buckets_are_left_out() {
        // A real `rtla timerlat top` of the PREEMPT_RT guest: no distribution, every sample
        // censored at the min (14 µs), exact count, mean and max.
        let text = "  0 00:00:10   |          IRQ Timer Latency (us)        |         Thread Timer Latency (us)\n\
                    CPU COUNT      |      cur       min       avg       max |      cur       min       avg       max\n  \
                    0 #2873      |      211        14      2347     67913 |      378        54      2787     68204\n";
        let file = crate::import::SourceFile { path: "top.txt".into(), bytes: text.as_bytes().to_vec() };
        let run = crate::import::import(crate::import::ImportFormat::Rtla, &[file], &Default::default()).unwrap();
        let set = ReportSet { runs: vec![rtlab_results::set::SourcedRun { source: "top".into(), run }], verdict: None };
        let text = OpenMetrics.render(&set).unwrap();
        let irq = |line: &str| line.contains("metric=\"timerlat.irq\"");
        let lines: Vec<&str> = text.lines().filter(|l| irq(l)).collect();
        // p50..p99.9 only from below; p99.99 of 2,873 samples is the exact max.
        assert!(lines.contains(&"rtlab_sample_quantile_lower_bound_seconds{run=\"top\",scenario=\"imported\",metric=\"timerlat.irq\",cpu=\"0\",thread=\"cpu000\",quantile=\"0.99\"} 0.000014"), "{text}");
        assert!(
            !lines.iter().any(|l| l.starts_with("rtlab_sample_seconds{") && l.contains("quantile=\"0.5\"")),
            "{text}"
        );
        assert!(
            lines.iter().any(|l| l.starts_with("rtlab_sample_seconds{") && l.contains("quantile=\"0.9999\"} 0.067913")),
            "{text}"
        );
        assert!(lines.iter().any(|l| l.starts_with("rtlab_sample_censored{") && l.ends_with("} 2873")), "{text}");
        assert!(
            lines.iter().any(|l| l.starts_with("rtlab_sample_mean_seconds{") && l.ends_with("} 0.002347")),
            "rtla's exact avg: {text}"
        );
        // No bucket between the bound and the max: their counts are unknown.
        let buckets: Vec<&str> =
            lines.iter().copied().filter(|l| l.starts_with("rtlab_sample_histogram_seconds_bucket")).collect();
        assert!(buckets.iter().any(|l| l.contains("le=\"0.00001\"} 0")), "{buckets:?}");
        assert!(!buckets.iter().any(|l| l.contains("le=\"0.001\"")), "{buckets:?}");
        assert!(buckets.iter().any(|l| l.contains("le=\"+Inf\"} 2873")), "{buckets:?}");
    }

    #[test]
    fn seconds_are_exact_decimals() {
        assert_eq!(seconds(2_863), "0.000002863");
        assert_eq!(seconds(2_500_000_000), "2.5");
        assert_eq!(seconds(0), "0");
        assert_eq!(seconds(-1_500), "-0.0000015");
        assert_eq!(seconds(100), "0.0000001");
    }

    #[test]
    fn the_ladder_ends_at_the_first_rung_at_or_above_the_max() {
        assert_eq!(bucket_ladder(None), vec![100]);
        assert_eq!(bucket_ladder(Some(1_000)), vec![100, 200, 500, 1_000]);
        assert_eq!(bucket_ladder(Some(1_001)), vec![100, 200, 500, 1_000, 2_000]);
        assert_eq!(bucket_ladder(Some(i64::MAX)).last(), Some(&5_000_000_000_000_000_000));
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape_label("a\\b\"c\nd µs"), "a\\\\b\\\"c\\nd µs");
    }
}
