//! The figures of `rtlab history`'s page, as inline SVG in the report's look (same width,
//! fonts, grid and palette as `crate::figures`):
//!
//! - the maximum of every row over time, one colour per kernel, the daily maximum as a
//!   step line, kernel changes as labelled dashed lines and gaps as grey bands (the OSADL
//!   farm's "latency maxima over time", with what it lacks: gaps and per-row detail);
//! - the histogram in 1 µs bins on a log count axis, the last day over the whole range
//!   (OSADL's latency plot);
//! - the percentiles per day (p50, p99, p99.9, max) over the days.

use crate::figures::axis::Axis;
use crate::figures::canvas::{chart, legend, legend_height, svg, text_style, DrawError, LegendItem, Mark, TICK_SIZE};
use crate::figures::palette::{self, INK};
use crate::figures::{slug, Figure};
use plotters::prelude::*;
use plotters::style::text_anchor::HPos;
use rtlab_results::history::range::{utc_day, DAY_NS};
use rtlab_results::history::report::{EventKind, HistoryReport, BIN_NS};

const CHART_HEIGHT: u32 = 420;
/// Counts are drawn from here on a log axis (which has no 0).
const FLOOR: f64 = 0.5;
const GAP_FILL: RGBColor = RGBColor(0xE4, 0xE4, 0xE4);
const CHANGE: RGBColor = RGBColor(0xB0, 0x00, 0x20);
/// From this many rows on, the maxima are dots rather than a line.
const DENSE_ROWS: usize = 300;

/// The time axis of a range: its unit (ns per unit), origin and tick labels.
struct TimeAxis {
    origin_ns: i64,
    unit_ns: i64,
    /// "s", "min", "h", "d".
    unit: &'static str,
}

impl TimeAxis {
    fn of(first_ns: i64, last_ns: i64) -> Self {
        let span = (last_ns - first_ns).max(1);
        let (unit_ns, unit) = match span {
            s if s <= 15 * 60_000_000_000 => (1_000_000_000, "s"),
            s if s <= 15 * 3_600_000_000_000 => (60_000_000_000, "min"),
            s if s <= 4 * DAY_NS => (3_600_000_000_000, "h"),
            _ => (DAY_NS, "d"),
        };
        // Ticks on whole units of the day (midnight for days).
        let origin_unit = if unit == "d" { DAY_NS } else { unit_ns.clamp(60_000_000_000, 3_600_000_000_000) };
        Self { origin_ns: first_ns.div_euclid(origin_unit) * origin_unit, unit_ns, unit }
    }

    fn value(&self, ns: i64) -> f64 {
        (ns - self.origin_ns) as f64 / self.unit_ns as f64
    }

    fn label(&self, value: f64) -> String {
        let ns = self.origin_ns + (value * self.unit_ns as f64).round() as i64;
        let seconds = ns.div_euclid(1_000_000_000).rem_euclid(86_400);
        let day = utc_day(ns);
        let month_day = day.get(5..).unwrap_or(&day).to_string();
        match self.unit {
            "s" => format!("{:02}:{:02}:{:02}", seconds / 3600, seconds / 60 % 60, seconds % 60),
            "min" => format!("{:02}:{:02}", seconds / 3600, seconds / 60 % 60),
            "h" if seconds == 0 => month_day,
            "h" => format!("{:02}:{:02}", seconds / 3600, seconds / 60 % 60),
            _ => month_day,
        }
    }

    fn description(&self, first_ns: i64) -> String {
        format!("time (UTC, from {})", utc_day(first_ns))
    }
}

/// The distinct kernels in session order, for colours.
fn kernels(report: &HistoryReport) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in &report.sessions {
        if !out.contains(&s.kernel_release) {
            out.push(s.kernel_release.clone());
        }
    }
    out
}

/// A latency axis in µs over `lo..hi` µs: log when the data spread wide.
fn latency_axis(lo_us: f64, hi_us: f64) -> Axis {
    Axis::auto(lo_us.max(0.1), hi_us.max(lo_us.max(0.1) * 1.5))
}

/// The maxima over time.
pub fn maxima(report: &HistoryReport) -> Result<Figure, DrawError> {
    let t = TimeAxis::of(report.first_ns, report.last_ns);
    let x = Axis::fixed(t.value(report.first_ns), t.value(report.last_ns).max(t.value(report.first_ns) + 1e-9));
    let values: Vec<f64> = report.rows.iter().filter_map(|r| r.max_ns).map(|v| v as f64 / 1e3).collect();
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(0.0, f64::max);
    // Headroom above the data for the labels of the kernel changes.
    let y = latency_axis(if lo.is_finite() { lo * 0.8 } else { 1.0 }, hi * 3.0);
    let kernels = kernels(report);
    let kernel_of = |session_id: i64| {
        let k = report.sessions.iter().find(|s| s.id == session_id).map(|s| s.kernel_release.as_str());
        kernels.iter().position(|x| Some(x.as_str()) == k).unwrap_or(0)
    };
    let mut items: Vec<LegendItem> = kernels
        .iter()
        .enumerate()
        .map(|(i, k)| LegendItem {
            text: format!(
                "maximum per {}, kernel {k}",
                if report.rows.len() > DENSE_ROWS { "row (dots)" } else { "row" }
            ),
            colour: palette::configuration(i),
            mark: Mark::Line,
        })
        .collect();
    items.push(LegendItem { text: "daily maximum".into(), colour: INK, mark: Mark::Dashed });
    if report.events.iter().any(|e| e.kind == EventKind::KernelChange) {
        items.push(LegendItem { text: "kernel change".into(), colour: CHANGE, mark: Mark::Dashed });
    }
    if report.events.iter().any(|e| e.kind == EventKind::Gap) {
        items.push(LegendItem { text: "gap (no measurement)".into(), colour: GAP_FILL, mark: Mark::Band });
    }
    let legend_h = legend_height(&items);
    let title = format!("Maximum per row over time, {}", report.metric);
    let x_desc = t.description(report.first_ns);
    let svg = svg(CHART_HEIGHT + legend_h, &title, |root| {
        let (upper, below) = root.split_vertically(CHART_HEIGHT);
        let label = |v: f64| t.label(v);
        let mut chart = chart(&upper, &x, &y, &label, &x_desc, "maximum (µs)")?;
        let p = |ns: i64, us: f64| (x.to_plot(t.value(ns)), y.to_plot(us));
        let (ylo, yhi) = y.plot_limits();
        for e in report.events.iter().filter(|e| e.kind == EventKind::Gap) {
            let (x0, x1) = (x.to_plot(t.value(e.at_ns)), x.to_plot(t.value(e.at_ns + e.gap_ns.unwrap_or(0))));
            chart.draw_series(std::iter::once(Rectangle::new([(x0, ylo), (x1, yhi)], GAP_FILL.filled())))?;
        }
        // One polyline per run of rows that follow each other (same kernel, no gap).
        let mut piece: Vec<(f64, f64)> = Vec::new();
        let mut piece_kernel = usize::MAX;
        let mut last_end = i64::MIN;
        let mut pieces: Vec<(usize, Vec<(f64, f64)>)> = Vec::new();
        for r in &report.rows {
            let Some(max) = r.max_ns else { continue };
            let k = kernel_of(r.session_id);
            let window = (r.end_ns - r.start_ns).max(1);
            if k != piece_kernel || r.start_ns - last_end > window / 2 {
                if !piece.is_empty() {
                    pieces.push((piece_kernel, std::mem::take(&mut piece)));
                }
                piece_kernel = k;
            }
            piece.push(p((r.start_ns + r.end_ns) / 2, max as f64 / 1e3));
            last_end = r.end_ns;
        }
        if !piece.is_empty() {
            pieces.push((piece_kernel, piece));
        }
        // Few rows: lines through them. Many (more than the plot has room to join): a dot
        // per row, one per pixel at most, so that a band and its spikes stay readable.
        let dense = report.rows.len() > DENSE_ROWS;
        let (x0, x1) = x.plot_limits();
        let mut seen = std::collections::HashSet::new();
        for (k, points) in pieces {
            let style = ShapeStyle { color: palette::configuration(k).to_rgba(), filled: false, stroke_width: 1 };
            if dense {
                let dots: Vec<(f64, f64)> = points
                    .into_iter()
                    .filter(|&(px, py)| {
                        let cell = (((px - x0) / (x1 - x0) * 900.0) as i64, ((py - ylo) / (yhi - ylo) * 400.0) as i64);
                        seen.insert(cell)
                    })
                    .collect();
                chart.draw_series(dots.into_iter().map(|q| Circle::new(q, 2, style.filled())))?;
            } else if points.len() == 1 {
                chart.draw_series(points.iter().map(|&q| Circle::new(q, 3, style.filled())))?;
            } else {
                chart.draw_series(LineSeries::new(points, style))?;
            }
        }
        let day_style = ShapeStyle { color: INK.to_rgba(), filled: false, stroke_width: 2 };
        for d in &report.days {
            let Some(max) = d.max_ns else { continue };
            let from = d.start_ns.max(report.first_ns);
            let to = (d.start_ns + DAY_NS).min(report.last_ns);
            let us = max as f64 / 1e3;
            chart.draw_series(DashedLineSeries::new(vec![p(from, us), p(to, us)], 8, 5, day_style))?;
        }
        let change_style = ShapeStyle { color: CHANGE.to_rgba(), filled: false, stroke_width: 2 };
        for (slot, e) in report.events.iter().filter(|e| e.kind == EventKind::KernelChange).enumerate() {
            let px = x.to_plot(t.value(e.at_ns));
            chart.draw_series(DashedLineSeries::new(vec![(px, ylo), (px, yhi)], 8, 5, change_style))?;
            let (xl0, xl1) = x.plot_limits();
            let (h, dx) = if px > xl0 + (xl1 - xl0) * 0.6 { (HPos::Right, -6) } else { (HPos::Left, 6) };
            let label = Text::new(e.text.clone(), (dx, 14 + 22 * (slot % 3) as i32), text_style(TICK_SIZE, CHANGE, h));
            chart.plotting_area().draw(&(EmptyElement::at((px, yhi)) + label))?;
        }
        legend(&below, &items)
    })?;
    Ok(Figure {
        id: format!("fig-history-maxima-{}", slug(&report.metric)),
        title,
        description: " The largest sample of each row (a window, or an hourly or daily merge) over every CPU, in \
                      time order; the dashed black steps are each UTC day's maximum, red dashed lines the kernel \
                      changes, grey bands the gaps when nothing was measured."
            .into(),
        svg,
    })
}

/// The outline of the bars (µs, count): up and down each bin, on the floor between
/// non-adjacent bins.
fn steps(bins: &[(u64, u64)]) -> Vec<(f64, f64)> {
    let mut points = Vec::with_capacity(bins.len() * 4);
    let mut end: Option<u64> = None;
    for &(start, count) in bins {
        if end != Some(start) {
            if let Some(e) = end {
                points.push((e as f64 / 1e3, FLOOR));
            }
            points.push((start as f64 / 1e3, FLOOR));
        }
        points.push((start as f64 / 1e3, count as f64));
        points.push(((start + BIN_NS) as f64 / 1e3, count as f64));
        end = Some(start + BIN_NS);
    }
    if let Some(e) = end {
        points.push((e as f64 / 1e3, FLOOR));
    }
    points
}

/// The histograms of the range and of the last day.
pub fn histogram(report: &HistoryReport) -> Result<Figure, DrawError> {
    let mut views = vec![("whole range", &report.range, palette::configuration(0))];
    if super::last_day_is_range(report) {
        views[0].0 = "whole range (all within the last day)";
    } else {
        views.push(("last day", &report.last_day, palette::configuration(1)));
    }
    let lo = views.iter().filter_map(|(_, v, _)| v.bins.first()).map(|b| b.0).min().unwrap_or(0) as f64 / 1e3;
    let hi =
        views.iter().filter_map(|(_, v, _)| v.bins.last()).map(|b| b.0 + BIN_NS).max().unwrap_or(BIN_NS) as f64 / 1e3;
    let most = views.iter().flat_map(|(_, v, _)| &v.bins).map(|b| b.1).max().unwrap_or(1);
    let x = Axis::auto(lo.max(0.5), hi);
    let y = Axis::log(FLOOR, most as f64 * 1.5);
    let items: Vec<LegendItem> = views
        .iter()
        .map(|(name, v, colour)| LegendItem {
            text: format!("{name} ({} samples)", rtlab_analysis::units::thousands(v.count)),
            colour: *colour,
            mark: Mark::Line,
        })
        .collect();
    let legend_h = legend_height(&items);
    let title = format!("Histogram, 1 µs bins: last day and whole range, {}", report.metric);
    let x_desc = format!("latency (µs{})", if x.is_log() { ", log scale" } else { "" });
    let svg = svg(CHART_HEIGHT + legend_h, &title, |root| {
        let (upper, below) = root.split_vertically(CHART_HEIGHT);
        let label = |v: f64| x.label(v);
        let mut chart = chart(&upper, &x, &y, &label, &x_desc, "samples per 1 µs bin (log)")?;
        for (_, view, colour) in &views {
            let points: Vec<(f64, f64)> =
                steps(&view.bins).into_iter().map(|(a, b)| (x.to_plot(a), y.to_plot(b))).collect();
            let style = ShapeStyle { color: colour.to_rgba(), filled: false, stroke_width: 1 };
            chart.draw_series(LineSeries::new(points, style))?;
        }
        legend(&below, &items)
    })?;
    Ok(Figure {
        id: format!("fig-history-histogram-{}", slug(&report.metric)),
        title,
        description: " Samples per 1 µs of latency on a log count axis, all CPUs together (the OSADL QA farm's \
                      plot): the last day over the whole range, so that a day that differs stands out."
            .into(),
        svg,
    })
}

/// One statistic of a day.
type DayStatistic = fn(&rtlab_results::history::report::DayRow) -> Option<i64>;

/// The percentiles per day.
pub fn days(report: &HistoryReport) -> Result<Figure, DrawError> {
    let series: [(&str, DayStatistic); 4] =
        [("p50", |d| d.p50_ns), ("p99", |d| d.p99_ns), ("p99.9", |d| d.p99_9_ns), ("max", |d| d.max_ns)];
    let all: Vec<f64> =
        report.days.iter().flat_map(|d| series.iter().filter_map(move |(_, f)| f(d))).map(|v| v as f64 / 1e3).collect();
    let lo = all.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = all.iter().copied().fold(0.0, f64::max);
    let y = latency_axis(if lo.is_finite() { lo * 0.8 } else { 1.0 }, hi * 1.1);
    let n = report.days.len();
    let x = Axis::fixed(-0.5, n as f64 - 0.5);
    let items: Vec<LegendItem> = series
        .iter()
        .enumerate()
        .map(|(i, (name, _))| LegendItem { text: (*name).into(), colour: palette::cpu(i), mark: Mark::Line })
        .collect();
    let legend_h = legend_height(&items);
    let title = format!("Percentiles per day, {}", report.metric);
    let svg = svg(CHART_HEIGHT + legend_h, &title, |root| {
        let (upper, below) = root.split_vertically(CHART_HEIGHT);
        let days = &report.days;
        let label = move |v: f64| {
            let i = v.round();
            if (v - i).abs() < 1e-6 && i >= 0.0 {
                days.get(i as usize).map(|d| d.day.get(5..).unwrap_or(&d.day).to_string()).unwrap_or_default()
            } else {
                String::new()
            }
        };
        let mut chart = chart(&upper, &x, &y, &label, "day (UTC)", "µs")?;
        for (i, (_, f)) in series.iter().enumerate() {
            let points: Vec<(f64, f64)> = report
                .days
                .iter()
                .enumerate()
                .filter_map(|(k, d)| f(d).map(|v| (x.to_plot(k as f64), y.to_plot(v as f64 / 1e3))))
                .collect();
            let style = ShapeStyle { color: palette::cpu(i).to_rgba(), filled: false, stroke_width: 2 };
            chart.draw_series(LineSeries::new(points.clone(), style))?;
            chart.draw_series(points.into_iter().map(|q| Circle::new(q, 4, style.filled())))?;
        }
        legend(&below, &items)
    })?;
    Ok(Figure {
        id: format!("fig-history-days-{}", slug(&report.metric)),
        title,
        description: " Each UTC day's median, p99, p99.9 and maximum, all CPUs together: a slow drift shows in \
                      the p99.9 before the maximum jumps."
            .into(),
        svg,
    })
}

/// Every figure of the page, in order.
pub fn all(report: &HistoryReport) -> Result<Vec<Figure>, crate::ReportError> {
    let draw = |e: DrawError| crate::ReportError::Encode(format!("cannot draw a figure: {}", e.0));
    Ok(vec![maxima(report).map_err(draw)?, histogram(report).map_err(draw)?, days(report).map_err(draw)?])
}
