//! Minimum and maximum per step of a probe that varies a setting, as a chart beside its
//! table: the jitter probe's period jitter per task period (Dodiu et al., Table 1) and the
//! sweep probe's latency per stimulus rate (Table 2). x = the period or rate, y = the
//! minimum (dashed) and maximum (solid) of each configuration, all CPUs together.

use super::axis::Axis;
use super::canvas::{self, legend, legend_height_in, Drawn, LegendItem, Mark, Plot};
use super::Figure;
use plotters::style::RGBColor;

/// The chart sits beside its table: narrower than the other figures (whose width is
/// [`canvas::WIDTH`]), so that its text stays legible at half a column.
const WIDTH: u32 = 640;
const CHART_HEIGHT: u32 = 400;

/// One configuration's steps: (x, min µs, max µs), x ascending.
pub(crate) struct StepSeries {
    pub name: String,
    pub colour: RGBColor,
    pub points: Vec<(f64, f64, f64)>,
}

/// What the chart is about.
pub(crate) struct StepChart<'a> {
    pub id: String,
    pub title: String,
    pub description: String,
    /// "task period (µs)", "stimulus rate (Hz)".
    pub x_desc: &'a str,
    /// "period jitter (µs)".
    pub y_desc: String,
}

/// An axis over `lo..=hi` (> 0): log when the steps spread over a factor of 4 or more
/// (Dodiu's periods 300 µs to 10 ms, rates 500 Hz to 10 kHz), padded so that the first and
/// last steps' dots are inside.
fn step_axis(lo: f64, hi: f64) -> Axis {
    if lo > 0.0 && hi / lo >= 4.0 {
        Axis::log(lo / 1.2, hi * 1.2)
    } else {
        let pad = ((hi - lo) * 0.05).max(hi.abs() * 0.05).max(1e-9);
        Axis::linear((lo - pad).max(0.0), hi + pad)
    }
}

pub(super) fn figure(chart: StepChart, series: &[StepSeries]) -> Drawn<Figure> {
    let xs = || series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let x = step_axis(xs().fold(f64::INFINITY, f64::min), xs().fold(0.0, f64::max));
    let ys = || series.iter().flat_map(|s| s.points.iter().flat_map(|p| [p.1, p.2]));
    let hi = ys().fold(0.0, f64::max);
    let lo = ys().filter(|v| *v > 0.0).fold(f64::INFINITY, f64::min);
    let y = if lo.is_finite() && hi / lo > super::axis::LOG_RATIO { Axis::log(lo, hi) } else { Axis::linear(0.0, hi) };
    // On a log axis a minimum of 0 would fall off the bottom: it sits on the floor instead.
    let floor = if y.is_log() { y.lo } else { f64::NEG_INFINITY };
    let mut items = Vec::new();
    for s in series {
        items.push(LegendItem { text: format!("{} max", s.name), colour: s.colour, mark: Mark::Line });
        items.push(LegendItem { text: format!("{} min", s.name), colour: s.colour, mark: Mark::Dashed });
    }
    let x_desc = format!("{}{}", chart.x_desc, if x.is_log() { ", log scale" } else { "" });
    let y_desc = format!("{}{}", chart.y_desc, if y.is_log() { ", log scale" } else { "" });
    let svg = canvas::svg_sized(WIDTH, CHART_HEIGHT + legend_height_in(&items, WIDTH), &chart.title, |root| {
        let (area, below) = root.split_vertically(CHART_HEIGHT);
        let mut plot = Plot::new(&area, x, y, &x_desc, &y_desc)?;
        for s in series {
            let max: Vec<(f64, f64)> = s.points.iter().map(|p| (p.0, p.2.max(floor))).collect();
            let min: Vec<(f64, f64)> = s.points.iter().map(|p| (p.0, p.1.max(floor))).collect();
            plot.line(&max, s.colour, 2)?;
            plot.dots(&max, s.colour)?;
            plot.dashed_line(&min, s.colour, 2)?;
            plot.dots(&min, s.colour)?;
        }
        legend(&below, &items)
    })?;
    Ok(Figure { id: chart.id, title: chart.title, description: chart.description, svg })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dodiu_steps_get_a_log_axis_holding_every_step() {
        let periods = step_axis(300.0, 10_000.0);
        assert!(periods.is_log());
        assert!(periods.lo < 300.0 && periods.hi > 10_000.0, "{periods:?}");
        let close = step_axis(1_000.0, 2_000.0);
        assert!(!close.is_log());
        assert!(close.lo < 1_000.0 && close.hi > 2_000.0, "{close:?}");
        let one = step_axis(500.0, 500.0);
        assert!(one.lo < 500.0 && one.hi > 500.0, "{one:?}");
    }
}
