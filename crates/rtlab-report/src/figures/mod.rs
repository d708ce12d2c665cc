//! The figures of a report, as inline SVG: for every metric, the papers' views of its
//! distribution with every configuration of the [`ReportSet`] overlaid, each configuration
//! in the same colour everywhere. Catalogue and reading guide: docs/figures.md.
//!
//! - cumulative percentage curve (Akamina et al., Figs 7 and 10), zooms on the top 20 %,
//!   3 % and 2 % (Figs 8, 9, 11, 12), and the complementary view on a log axis that shows
//!   the tail down to one sample in a million ([`cumulative`]);
//! - time series over the run, one panel per configuration, samples above the range as
//!   triangles on the top edge, "M SD Mn Mx" under each panel (Regnier et al., Figs 5-8):
//!   every sample when the run saved raw samples, per-second maxima otherwise
//!   ([`timeseries`]);
//! - log-scale histogram with 1 µs bins, all CPUs combined and per CPU (Regnier et al.,
//!   Fig 9) ([`histogram`]);
//! - the sleep probe's overshoot per sample, configurations overlaid (Dankwardt, Figs
//!   2-11) ([`per_sample`], for the metrics of shape [`MetricShape::PerSample`]);
//! - beside the tables of the jitter and sweep probes (Dodiu et al., Tables 1 and 2): the
//!   minimum and maximum per period or stimulus rate ([`per_step`], [`table_figures`]);
//! - the tail section's pWCET figures: exceedance probability per activation on a log axis,
//!   measured and fitted, the fit's QQ plot, and the threshold stability plot (the GPD shape
//!   and the mean excess at each candidate threshold) ([`tail`], [`tail_figures`]).
//!
//! The statistics come from `rtlab_analysis::curve` and the saved histograms; this module
//! only draws.

pub mod axis;
pub(crate) mod canvas;
pub mod convergence;
mod cumulative;
mod histogram;
pub mod palette;
mod per_sample;
mod per_step;
mod tail;
mod timeseries;

use crate::digest::{combine, Combined};
use crate::per_setting::{
    in_measured_order, metric_window_s, steps, JITTER_METRIC, JITTER_TABLE, SWEEP_METRIC, SWEEP_TABLE,
};
use crate::text::metric_title;
use crate::ReportError;
use plotters::style::RGBColor;
use rtlab_analysis::curve::CumulativeCurve;
use rtlab_analysis::requirement::{Requirement, Statistic};
use rtlab_analysis::{LatencyHistogram, Moments, Summary};
use rtlab_results::run::{results_dir, Measurement, RunResult, Setting};
use rtlab_results::set::{Configuration, ReportSet};
use std::path::{Path, PathBuf};

/// One figure: an id for anchors and tests ("fig-cumulative-timer-latency"), a title, a
/// sentence on how to read it, and the `<svg>` element.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    pub id: String,
    pub title: String,
    pub description: String,
    pub svg: String,
}

/// The figures of one metric.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricFigures {
    /// "timer.latency".
    pub metric: String,
    /// "Timer latency".
    pub title: String,
    pub figures: Vec<Figure>,
    /// What could not be drawn as asked (an unreadable raw sample file, ...).
    pub notes: Vec<String>,
}

/// Which figures a metric gets. Every metric is a latency-like distribution; the sleep
/// probe's overshoot is also read sample by sample. (The jitter and sweep probes' charts per
/// period or rate belong to their tables: [`table_figures`].)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum MetricShape {
    /// Cumulative curves, zooms, exceedance, time series, 1 µs histograms.
    Distribution,
    /// Every sample in the order taken (from `sequence_ns`), then the distribution's figures.
    PerSample,
}

/// The shape of `metric`'s figures.
pub fn shape_of(metric: &str) -> MetricShape {
    match metric {
        "sleep.overshoot" => MetricShape::PerSample,
        _ => MetricShape::Distribution,
    }
}

/// A figure that belongs beside a table (`tables::report_tables`' id `table_id`) rather than
/// among its metric's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct TableFigure {
    pub table_id: String,
    pub figure: Figure,
}

/// "timer.latency" -> "timer-latency", for ids.
pub fn slug(text: &str) -> String {
    text.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect()
}

/// One configuration's data for one metric.
pub(crate) struct Series {
    /// Legend name ([`Configuration::name`]).
    pub name: String,
    pub colour: RGBColor,
    /// All CPUs together.
    pub combined: LatencyHistogram,
    pub curve: CumulativeCurve,
    pub cpus: Vec<(usize, LatencyHistogram)>,
    /// Exact mean/SD/min/max of all CPUs together.
    pub moments: Moments,
    pub summary: Option<Summary>,
    /// Largest sample per block over all CPUs.
    pub per_second_max_ns: Vec<Option<i64>>,
    pub block_s: u64,
    /// Raw sample files of every CPU, when the run saved them for this metric.
    pub raw_files: Vec<PathBuf>,
    /// Measured window of this metric, s.
    pub duration_s: f64,
    /// Every sample in the order taken, when the probe kept them (`sleep`).
    pub sequence_ns: Vec<i64>,
}

/// Everything one metric's figures are drawn from.
pub(crate) struct MetricData {
    pub metric: String,
    pub slug: String,
    pub title: String,
    pub series: Vec<Series>,
    pub requirements: Vec<Requirement>,
}

impl MetricData {
    /// Largest sample of any configuration, µs.
    pub fn max_us(&self) -> f64 {
        self.series.iter().filter_map(|s| s.moments.max()).max().unwrap_or(0) as f64 / 1e3
    }

    /// Smallest sample of any configuration, µs.
    pub fn min_us(&self) -> f64 {
        self.series.iter().filter_map(|s| s.moments.min()).min().unwrap_or(0) as f64 / 1e3
    }

    /// Requirement bounds, µs.
    pub fn bounds_us(&self) -> impl Iterator<Item = f64> + '_ {
        self.requirements.iter().map(|r| r.bound_ns as f64 / 1e3)
    }

    /// Latency axis covering the data and the requirement bounds from `lo_us` up.
    pub fn latency_axis(&self, lo_us: f64) -> axis::Axis {
        let hi = self.bounds_us().fold(self.max_us(), |hi, b| hi.max(b * 1.05));
        axis::Axis::auto(lo_us.max(0.1), hi)
    }
}

/// A requirement in legends: "requirement: timer.latency max < 500us".
pub(crate) fn requirement_label(r: &Requirement) -> String {
    format!("requirement: {}", r.text)
}

/// A requirement beside its bound line, without the metric the figure is about:
/// "max < 500us".
pub(crate) fn requirement_short(r: &Requirement) -> String {
    r.text.strip_prefix(&r.metric).map(str::trim).unwrap_or(&r.text).to_string()
}

/// "500", "12.5": a value with one decimal, without a trailing ".0".
pub fn trim(value: f64) -> String {
    let s = format!("{value:.1}");
    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
}

/// The percentile a requirement bounds (99.999 for `p99.999`), if it is one.
pub(crate) fn requirement_percent(r: &Requirement) -> Option<f64> {
    match r.statistic {
        Statistic::Percentile(p) => Some(p),
        Statistic::Max => Some(100.0),
        _ => None,
    }
}

/// Every figure of the report of `set`, grouped by metric in first-seen order.
pub fn report_figures(set: &ReportSet) -> Result<Vec<MetricFigures>, ReportError> {
    let configurations = set.configurations();
    let mut metrics: Vec<&str> = Vec::new();
    for sourced in &set.runs {
        for metric in sourced.run.metrics() {
            if !metrics.contains(&metric) {
                metrics.push(metric);
            }
        }
    }
    let mut out = Vec::new();
    for metric in metrics {
        let mut notes = Vec::new();
        let data = metric_data(set, &configurations, metric, &mut notes)?;
        let figures = match shape_of(metric) {
            MetricShape::Distribution => distribution_figures(&data, &mut notes),
            MetricShape::PerSample => per_sample::figure(&data).and_then(|first| {
                let mut figures: Vec<Figure> = first.into_iter().collect();
                figures.extend(distribution_figures(&data, &mut notes)?);
                Ok(figures)
            }),
        }
        .map_err(|e| ReportError::Encode(format!("figure of {metric}: {}", e.0)))?;
        let figures = with_split_coverage(figures, &configurations, metric);
        out.push(MetricFigures { metric: data.metric, title: data.title, figures, notes });
    }
    Ok(out)
}

/// One metric's series over `configurations`, with the requirements on it.
fn metric_data(
    set: &ReportSet,
    configurations: &[Configuration],
    metric: &str,
    notes: &mut Vec<String>,
) -> Result<MetricData, ReportError> {
    let mut series = Vec::new();
    for (index, configuration) in configurations.iter().enumerate() {
        if let Some(s) = series_of(set, configuration, index, metric, notes)? {
            series.push(s);
        }
    }
    Ok(MetricData {
        metric: metric.to_string(),
        slug: slug(metric),
        title: metric_title(metric),
        series,
        requirements: requirements_of(set, metric),
    })
}

/// One cumulative percentage curve of `metric`, every configuration of `set` overlaid
/// (Akamina et al., Figs 7 and 10), or its top `top_percent` % (Figs 8, 9, 11, 12): the
/// figures of a suite. None when no configuration has samples of `metric`.
pub fn cumulative_figure(
    set: &ReportSet,
    metric: &str,
    top_percent: Option<f64>,
) -> Result<Option<Figure>, ReportError> {
    let mut notes = Vec::new();
    let data = metric_data(set, &set.configurations(), metric, &mut notes)?;
    if data.series.iter().all(|s| s.curve.total == 0) {
        return Ok(None);
    }
    let figure = cumulative::figure(&data, top_percent)
        .map_err(|e| ReportError::Encode(format!("figure of {metric}: {}", e.0)))?;
    Ok(with_split_coverage(vec![figure], &set.configurations(), metric).pop())
}

/// The figures of a split part metric (`timer.irq`, ...) say under them how many samples the
/// split covered ([`crate::split::coverage_sentences`]).
fn with_split_coverage(mut figures: Vec<Figure>, configurations: &[Configuration], metric: &str) -> Vec<Figure> {
    let sentences = crate::split::coverage_sentences(configurations, metric);
    if !sentences.is_empty() {
        for figure in &mut figures {
            figure.description = format!("{} {}", figure.description.trim_end(), sentences.join(" "));
        }
    }
    figures
}

fn distribution_figures(data: &MetricData, notes: &mut Vec<String>) -> canvas::Drawn<Vec<Figure>> {
    if data.series.iter().all(|s| s.curve.total == 0) {
        notes.push(format!("{}: no samples, nothing to draw.", data.title));
        return Ok(Vec::new());
    }
    let mut figures = cumulative::figures(data)?;
    figures.push(timeseries::figure(data, notes)?);
    figures.extend(histogram::figures(data)?);
    Ok(figures)
}

/// Requirements on `metric`: those of the set's verdict, else those the runs were judged by.
fn requirements_of(set: &ReportSet, metric: &str) -> Vec<Requirement> {
    let verdicts: Vec<&rtlab_results::verdict::Verdict> = match &set.verdict {
        Some(v) => vec![v],
        None => set.runs.iter().filter_map(|r| r.run.verdict.as_ref()).collect(),
    };
    let mut out: Vec<Requirement> = Vec::new();
    for check in verdicts.iter().flat_map(|v| &v.checks) {
        let r = &check.requirement;
        if r.metric == metric && !out.iter().any(|o| o.text == r.text) {
            out.push(r.clone());
        }
    }
    out
}

fn series_of(
    set: &ReportSet,
    configuration: &Configuration,
    index: usize,
    metric: &str,
    notes: &mut Vec<String>,
) -> Result<Option<Series>, ReportError> {
    let run: &RunResult = configuration.run;
    let measurements: Vec<&Measurement> = run.measurements_of(configuration.scenario, metric).collect();
    let Some(first) = measurements.first() else { return Ok(None) };
    let Combined { histogram: Some(combined), moments, .. } = combine(&measurements)? else { return Ok(None) };
    // The jitter and sweep probes hold one measurement per CPU and step (period, rate): a
    // CPU's histogram merges its steps.
    let mut cpus: Vec<(usize, LatencyHistogram)> = Vec::new();
    for m in &measurements {
        let h = LatencyHistogram::decode(&m.histogram)?;
        match cpus.iter_mut().find(|(cpu, _)| *cpu == m.cpu) {
            Some((_, all)) => all.merge(&h)?,
            None => cpus.push((m.cpu, h)),
        }
    }
    cpus.sort_by_key(|(cpu, _)| *cpu);
    // Steps were measured one after another: their per-second maxima follow each other
    // (the CPUs of a step side by side).
    let block_s = first.block_s.max(1);
    let steps = in_measured_order(&measurements);
    let mut per_second_max_ns: Vec<Option<i64>> = Vec::new();
    for step in &steps {
        let blocks = step.iter().map(|m| m.per_second_max_ns.len()).max().unwrap_or(0);
        per_second_max_ns.extend(
            (0..blocks).map(|i| step.iter().filter_map(|m| m.per_second_max_ns.get(i).copied().flatten()).max()),
        );
    }
    let dir = results_dir(Path::new(&set.runs[configuration.run_index].source));
    let raw_files: Vec<PathBuf> =
        measurements.iter().filter_map(|m| m.raw_file.as_ref().map(|f| dir.join(f))).collect();
    let raw_files = if raw_files.len() == measurements.len() && raw_files.iter().all(|f| f.is_file()) {
        raw_files
    } else {
        if !raw_files.is_empty() {
            notes.push(format!(
                "{}: raw sample files of {} not found next to the run.json; the time series shows per-second maxima.",
                metric_title(metric),
                configuration.name
            ));
        }
        Vec::new()
    };
    let scenario_s = run.scenario(configuration.scenario).map(|s| s.duration_s).unwrap_or(run.duration_s);
    // A scenario of several probes (or steps) measured them one after another: this
    // metric's window is its own share.
    let duration_s = metric_window_s(run, scenario_s, &measurements);
    let sequence_ns: Vec<i64> = measurements.iter().filter_map(|m| m.sequence_ns.as_ref()).flatten().copied().collect();
    Ok(Some(Series {
        name: configuration.name.clone(),
        colour: palette::configuration(index),
        curve: CumulativeCurve::of(&combined),
        summary: Summary::from_censored_parts(&combined, &moments, crate::digest::merged_censoring(&measurements)),
        combined,
        cpus,
        moments,
        per_second_max_ns,
        block_s,
        raw_files,
        duration_s,
        sequence_ns,
    }))
}

/// Every figure of the report of `set`, in the order the HTML report shows them: each
/// metric's figures, the tail section's, then the charts beside the tables. For exports that take the figures
/// without the page around them (`--format png`).
pub fn all_figures(set: &ReportSet) -> Result<Vec<Figure>, ReportError> {
    let mut out: Vec<Figure> = report_figures(set)?.into_iter().flat_map(|metric| metric.figures).collect();
    out.extend(tail_figures(set)?.into_iter().flat_map(|metric| metric.figures));
    out.extend(table_figures(set)?.into_iter().map(|t| t.figure));
    Ok(out)
}

/// The figures of the report's tail section, one [`MetricFigures`] per metric of
/// [`crate::pwcet::report_tails`]: the pWCET exceedance curve, the QQ plot and the threshold
/// stability plot, every configuration overlaid; where there is too little data, a sentence
/// in `notes` instead.
pub fn tail_figures(set: &ReportSet) -> Result<Vec<MetricFigures>, ReportError> {
    crate::pwcet::report_tails(set)?.iter().map(metric_tail_figures).collect()
}

/// The tail section's figures of one metric ([`tail_figures`]).
pub fn metric_tail_figures(metric: &crate::pwcet::MetricTail) -> Result<MetricFigures, ReportError> {
    let mut notes = Vec::new();
    let figures = tail::figures(metric, &mut notes)
        .map_err(|e| ReportError::Encode(format!("pWCET figure of {}: {}", metric.metric, e.0)))?;
    Ok(MetricFigures { title: metric_title(&metric.metric), metric: metric.metric.clone(), figures, notes })
}

/// The charts beside the tables of the jitter and sweep probes: minimum and maximum per
/// period (Dodiu et al., Table 1) or stimulus rate (Table 2), every configuration.
pub fn table_figures(set: &ReportSet) -> Result<Vec<TableFigure>, ReportError> {
    let configurations = set.configurations();
    let mut out = Vec::new();
    for (metric, setting, table_id) in
        [(JITTER_METRIC, Setting::Period, JITTER_TABLE), (SWEEP_METRIC, Setting::Rate, SWEEP_TABLE)]
    {
        let mut series = Vec::new();
        for (index, c) in configurations.iter().enumerate() {
            let measurements: Vec<&Measurement> = c.run.measurements_of(c.scenario, metric).collect();
            if measurements.is_empty() {
                continue;
            }
            let points: Vec<(f64, f64, f64)> = steps(&measurements, setting)?
                .iter()
                .filter_map(|step| {
                    let s = step.combined.row.summary.as_ref()?;
                    let x = match setting {
                        Setting::Period => step.value / 1e3,
                        Setting::Rate => step.value,
                    };
                    Some((x, s.min as f64 / 1e3, s.max as f64 / 1e3))
                })
                .collect();
            if !points.is_empty() {
                series.push(per_step::StepSeries {
                    name: c.name.clone(),
                    colour: palette::configuration(index),
                    points,
                });
            }
        }
        if series.is_empty() {
            continue;
        }
        let chart = match setting {
            Setting::Period => per_step::StepChart {
                id: format!("fig-per-period-{}", slug(metric)),
                title: "Period jitter per task period: minimum and maximum".into(),
                description: "The table beside it as a chart (Dodiu et al., Table 1): per task period, the largest \
                              (solid) and smallest (dashed) period jitter of each configuration, all CPUs together."
                    .into(),
                x_desc: "task period (µs)",
                y_desc: "period jitter (µs)".into(),
            },
            Setting::Rate => per_step::StepChart {
                id: format!("fig-per-rate-{}", slug(metric)),
                title: "Latency per stimulus rate: minimum and maximum".into(),
                description: "Per stimulus rate (Dodiu et al., Table 2), the largest (solid) and smallest (dashed) \
                              stimulus-to-task latency of each configuration, all CPUs together."
                    .into(),
                x_desc: "stimulus rate (Hz)",
                y_desc: "latency (µs)".into(),
            },
        };
        let figure = per_step::figure(chart, &series)
            .map_err(|e| ReportError::Encode(format!("figure of {metric} per step: {}", e.0)))?;
        out.push(TableFigure { table_id: table_id.to_string(), figure });
    }
    Ok(out)
}
