//! Log-scale histograms with 1 µs bins (Regnier et al., Fig 9): all CPUs combined with the
//! configurations overlaid, and one panel per configuration with a line per CPU.

use super::axis::Axis;
use super::canvas::{self, legend, legend_height, text_line, Drawn, LegendItem, Mark, Plot};
use super::palette;
use super::{Figure, MetricData};
use rtlab_analysis::curve::{fixed_bins, Bin};
use rtlab_analysis::LatencyHistogram;

/// Bin width: 1 µs.
const BIN_NS: u64 = 1000;
const CHART_HEIGHT: u32 = 400;
const PANEL_TITLE_H: u32 = 30;
const PANEL_CHART_H: u32 = 260;
/// Counts are drawn from here (a log axis has no 0): an empty bin sits on the bottom edge.
const FLOOR: f64 = 0.5;

pub(super) fn figures(data: &MetricData) -> Drawn<Vec<Figure>> {
    let combined: Vec<Vec<Bin>> = data.series.iter().map(|s| fixed_bins(&s.combined, BIN_NS)).collect();
    let per_cpu: Vec<Vec<(usize, Vec<Bin>)>> = data
        .series
        .iter()
        .map(|s| s.cpus.iter().map(|(cpu, h): &(usize, LatencyHistogram)| (*cpu, fixed_bins(h, BIN_NS))).collect())
        .collect();
    let most = combined.iter().flatten().map(|b| b.count).max().unwrap_or(1);
    let x = data.latency_axis(data.min_us().max(0.5));
    let y = Axis::log(FLOOR, most as f64 * 1.5);
    let x_desc = format!("{} (µs{})", data.title.to_lowercase(), if x.is_log() { ", log scale" } else { "" });
    let y_desc = "samples per 1 µs bin (log)";

    let items: Vec<LegendItem> =
        data.series.iter().map(|s| LegendItem { text: s.name.clone(), colour: s.colour, mark: Mark::Line }).collect();
    let legend_h = legend_height(&items);
    let svg = canvas::svg(CHART_HEIGHT + legend_h, &format!("{} histogram", data.title), |root| {
        let (chart, below) = root.split_vertically(CHART_HEIGHT);
        let mut plot = Plot::new(&chart, x.clone(), y.clone(), &x_desc, y_desc)?;
        for (s, bins) in data.series.iter().zip(&combined) {
            plot.line(&steps(bins), s.colour, 1)?;
        }
        legend(&below, &items)
    })?;
    let mut figures = vec![Figure {
        id: format!("fig-histogram-{}", data.slug),
        title: format!("{}: histogram, 1 µs bins, all CPUs", data.title),
        description: "Samples per 1 µs of latency on a log count axis (Regnier et al., Fig 9): the body on the left, \
                      single rare samples as short bars at the bottom on the right."
            .into(),
        svg,
    }];

    if data.series.iter().any(|s| s.cpus.len() > 1) {
        let cpu_items = |cpus: &[(usize, Vec<Bin>)]| -> Vec<LegendItem> {
            cpus.iter()
                .enumerate()
                .map(|(i, (cpu, _))| LegendItem {
                    text: format!("CPU {cpu}"),
                    colour: palette::cpu(i),
                    mark: Mark::Line,
                })
                .collect()
        };
        let legend_hs: Vec<u32> = per_cpu.iter().map(|c| legend_height(&cpu_items(c))).collect();
        let height: u32 = legend_hs.iter().map(|h| PANEL_TITLE_H + PANEL_CHART_H + h).sum();
        let svg = canvas::svg(height.max(1), &format!("{} histogram per CPU", data.title), |root| {
            let mut rest = root.clone();
            for ((s, cpus), legend_h) in data.series.iter().zip(&per_cpu).zip(&legend_hs) {
                let (panel, remaining) = rest.split_vertically(PANEL_TITLE_H + PANEL_CHART_H + legend_h);
                rest = remaining;
                let (title, body) = panel.split_vertically(PANEL_TITLE_H);
                let (chart, below) = body.split_vertically(PANEL_CHART_H);
                text_line(&title, &s.name, (PANEL_TITLE_H / 2 + 4) as i32, s.colour, true)?;
                let mut plot = Plot::new(&chart, x.clone(), y.clone(), &x_desc, y_desc)?;
                for (i, (_, bins)) in cpus.iter().enumerate() {
                    plot.line(&steps(bins), palette::cpu(i), 1)?;
                }
                legend(&below, &cpu_items(cpus))?;
            }
            Ok(())
        })?;
        figures.push(Figure {
            id: format!("fig-histogram-per-cpu-{}", data.slug),
            title: format!("{}: histogram per CPU, 1 µs bins", data.title),
            description: "The same histogram for each CPU of each configuration: a CPU that differs from its \
                          siblings (interrupts routed to it, a housekeeping task) shows here."
                .into(),
            svg,
        });
    }
    Ok(figures)
}

/// The outline of the bars (µs, count): up and down each bin, on the floor between
/// non-adjacent bins.
fn steps(bins: &[Bin]) -> Vec<(f64, f64)> {
    let mut points = Vec::with_capacity(bins.len() * 4);
    let mut end: Option<u64> = None;
    for b in bins {
        let (start, count) = (b.start_ns, b.count as f64);
        if end != Some(start) {
            if let Some(e) = end {
                points.push((e as f64 / 1e3, FLOOR));
            }
            points.push((start as f64 / 1e3, FLOOR));
        }
        points.push((start as f64 / 1e3, count));
        points.push(((start + BIN_NS) as f64 / 1e3, count));
        end = Some(start + BIN_NS);
    }
    if let Some(e) = end {
        points.push((e as f64 / 1e3, FLOOR));
    }
    points
}
