//! Cumulative percentage curves (Akamina et al., Figs 7-12) and the exceedance view.

use super::axis::Axis;
use super::canvas::{self, legend, legend_height, Area, Drawn, LegendItem, Mark, Plot};
use super::palette::INK;
use super::{requirement_label, requirement_percent, requirement_short, Figure, MetricData};

/// Height of the chart part of a figure (the legend comes below).
const CHART_HEIGHT: u32 = 440;

/// Zooms on the top percents: Akamina's top 20 % (Fig 12), 3 % (Fig 11), 2 % (Figs 8, 9).
const ZOOMS: [f64; 3] = [20.0, 3.0, 2.0];

pub(super) fn figures(data: &MetricData) -> Drawn<Vec<Figure>> {
    let full_x = data.latency_axis(data.min_us());
    let on_bounds = if data.requirements.is_empty() {
        ""
    } else {
        " Dashed lines are requirement bounds; the short tick on a line marks the percentage it bounds (100 % for \
         max): a curve that passes above the tick meets it."
    };
    let mut figures = vec![Figure {
        id: format!("fig-cumulative-{}", data.slug),
        title: format!("{}: cumulative percentage", data.title),
        description: format!(
            "Share of samples at or below each latency (Akamina et al., Figs 7 and 10). A curve further left and \
             steeper is better; where it reaches 100 % is the largest sample.{on_bounds}"
        ),
        svg: cumulative_svg(data, &format!("{} cumulative", data.title), full_x.clone(), 0.0)?,
    }];
    for top in ZOOMS {
        figures.push(zoom(data, top, on_bounds)?);
    }
    figures.push(Figure {
        id: format!("fig-exceedance-{}", data.slug),
        title: format!("{}: exceedance (log scale)", data.title),
        description: "Fraction of samples above each latency, on a log axis: 1e-3 is one sample in a thousand, 1e-5 \
                      one in 100,000 (the 99.999 % threshold). Each curve ends at one over its sample count."
            .into(),
        svg: exceedance_svg(data, full_x)?,
    });
    Ok(figures)
}

/// The cumulative curve from `100 - top` % to 100 %.
fn zoom(data: &MetricData, top: f64, on_bounds: &str) -> Drawn<Figure> {
    let from = 100.0 - top;
    let lo = data
        .series
        .iter()
        .filter_map(|s| s.curve.quantile(from / 100.0))
        .min()
        .map(|ns| ns as f64 / 1e3)
        .unwrap_or(0.0);
    Ok(Figure {
        id: format!("fig-cumulative-top{top}-{}", data.slug),
        title: format!("{}: top {top} % of samples", data.title),
        description: format!(
            "The cumulative curve from {from} % to 100 % (Akamina et al., Figs 8, 9, 11, 12): how the slowest \
             {top} % of samples spread out. A curve that turns right early has a long tail.{on_bounds}"
        ),
        svg: cumulative_svg(data, &format!("{} top {top} %", data.title), data.latency_axis(lo), from)?,
    })
}

/// One figure: the whole cumulative curve, or its top `top_percent` % (a suite's figure).
pub(super) fn figure(data: &MetricData, top_percent: Option<f64>) -> Drawn<Figure> {
    let on_bounds = if data.requirements.is_empty() {
        ""
    } else {
        " Dashed lines are requirement bounds; a curve that passes above the tick on a line meets it."
    };
    match top_percent {
        Some(top) if top < 100.0 => zoom(data, top, on_bounds),
        _ => Ok(Figure {
            id: format!("fig-cumulative-{}", data.slug),
            title: format!("{}: cumulative percentage", data.title),
            description: format!(
                "Share of samples at or below each latency. A curve further left and steeper is better; where it \
                 reaches 100 % is the largest sample.{on_bounds}"
            ),
            svg: cumulative_svg(data, &format!("{} cumulative", data.title), data.latency_axis(data.min_us()), 0.0)?,
        }),
    }
}

/// Legend: every configuration, then the requirements.
fn legend_items(data: &MetricData) -> Vec<LegendItem> {
    let mut items: Vec<LegendItem> =
        data.series.iter().map(|s| LegendItem { text: s.name.clone(), colour: s.colour, mark: Mark::Line }).collect();
    items.extend(data.requirements.iter().map(|r| LegendItem {
        text: requirement_label(r),
        colour: INK,
        mark: Mark::Dashed,
    }));
    items
}

/// A chart and its legend below it.
fn with_legend(data: &MetricData, label: &str, draw: impl FnOnce(&Area) -> Drawn) -> Drawn<String> {
    let items = legend_items(data);
    let legend_h = legend_height(&items);
    canvas::svg(CHART_HEIGHT + legend_h, label, |root| {
        let (chart, below) = root.split_vertically(CHART_HEIGHT);
        draw(&chart)?;
        legend(&below, &items)
    })
}

/// The requirement bounds as dashed vertical lines; on cumulative views (`cumulative`) with
/// a tick at the percentage each bounds and the labels at the bottom (the top is crowded
/// there), on the exceedance view with the labels at the top.
fn bounds(plot: &mut Plot, data: &MetricData, cumulative: bool) -> Drawn {
    for (slot, r) in data.requirements.iter().enumerate() {
        let bound_us = r.bound_ns as f64 / 1e3;
        plot.vertical_bound(bound_us, INK, &requirement_short(r), !cumulative, slot)?;
        if let (true, Some(p)) = (cumulative, requirement_percent(r)) {
            plot.crosshair((bound_us, p), INK)?;
        }
    }
    Ok(())
}

fn cumulative_svg(data: &MetricData, label: &str, x: Axis, from_percent: f64) -> Drawn<String> {
    let y = if from_percent > 0.0 { Axis::fixed(from_percent, 100.0) } else { Axis::fixed(0.0, 100.0) };
    with_legend(data, label, |area| {
        let x_desc = format!("{} (µs{})", data.title.to_lowercase(), if x.is_log() { ", log scale" } else { "" });
        let mut plot = Plot::new(area, x, y, &x_desc, "samples ≤ x (%)")?;
        bounds(&mut plot, data, true)?;
        for s in &data.series {
            let points: Vec<(f64, f64)> = s
                .curve
                .from_percent(from_percent)
                .iter()
                .map(|p| (p.value_ns as f64 / 1e3, s.curve.percent(p)))
                .collect();
            plot.line(&points, s.colour, 2)?;
        }
        Ok(())
    })
}

fn exceedance_svg(data: &MetricData, x: Axis) -> Drawn<String> {
    let most = data.series.iter().map(|s| s.curve.total).max().unwrap_or(1).max(1);
    // Down to one sample of the largest run, and at least to 1e-6 so that 1e-5 shows.
    let floor = 10f64.powf((1.0 / most as f64).log10().floor()).min(1e-6);
    let y = Axis::log(floor, 1.0);
    with_legend(data, &format!("{} exceedance", data.title), |area| {
        let x_desc = format!("{} (µs{})", data.title.to_lowercase(), if x.is_log() { ", log scale" } else { "" });
        let mut plot = Plot::new(area, x, y, &x_desc, "fraction of samples > x (log)")?;
        bounds(&mut plot, data, false)?;
        for s in &data.series {
            let points: Vec<(f64, f64)> =
                s.curve.exceedance().iter().map(|p| (p.value_ns as f64 / 1e3, p.fraction_above)).collect();
            plot.line(&points, s.colour, 2)?;
        }
        Ok(())
    })
}
