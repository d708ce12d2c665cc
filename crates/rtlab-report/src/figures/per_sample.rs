//! Every sample in the order it was taken (Dankwardt, Figs 2-11: the sleep overshoot of
//! each of the 1000 nanosleep calls, kernels overlaid): x = sample number, y = the sample
//! (µs), every configuration overlaid. Drawn from `sequence_ns`, which the probes that keep
//! their samples in order (`sleep`) save in run.json.

use super::axis::Axis;
use super::canvas::{self, legend, legend_height, Drawn, LegendItem, Mark, Plot};
use super::palette::INK;
use super::{requirement_label, requirement_short, Figure, MetricData};

const CHART_HEIGHT: u32 = 440;

/// The figure, or None when no configuration kept its samples in order.
pub(super) fn figure(data: &MetricData) -> Drawn<Option<Figure>> {
    let with: Vec<_> = data.series.iter().filter(|s| !s.sequence_ns.is_empty()).collect();
    if with.is_empty() {
        return Ok(None);
    }
    let longest = with.iter().map(|s| s.sequence_ns.len()).max().unwrap_or(1);
    let values = || with.iter().flat_map(|s| s.sequence_ns.iter().map(|&v| v as f64 / 1e3));
    let hi = data.bounds_us().fold(values().fold(0.0, f64::max), |hi, b| hi.max(b * 1.05));
    let lo = values().filter(|v| *v > 0.0).fold(f64::INFINITY, f64::min);
    // Log when a few late wake-ups are decades above the typical overshoot (any VM), so
    // that both show; linear from 0 otherwise.
    let y = if lo.is_finite() && hi / lo > super::axis::LOG_RATIO { Axis::log(lo, hi) } else { Axis::linear(0.0, hi) };
    let x = Axis::linear(0.0, longest as f64);
    let mut items: Vec<LegendItem> =
        with.iter().map(|s| LegendItem { text: s.name.clone(), colour: s.colour, mark: Mark::Line }).collect();
    items.extend(data.requirements.iter().map(|r| LegendItem {
        text: requirement_label(r),
        colour: INK,
        mark: Mark::Dashed,
    }));
    let y_desc = format!("{} (µs{})", data.title.to_lowercase(), if y.is_log() { ", log scale" } else { "" });
    let svg = canvas::svg(CHART_HEIGHT + legend_height(&items), &format!("{} per sample", data.title), |root| {
        let (chart, below) = root.split_vertically(CHART_HEIGHT);
        let mut plot = Plot::new(&chart, x, y, "sample number (in the order taken)", &y_desc)?;
        let single = data.requirements.len() == 1;
        for r in &data.requirements {
            let label = if single { requirement_short(r) } else { String::new() };
            plot.horizontal_bound(r.bound_ns as f64 / 1e3, INK, &label)?;
        }
        for s in &with {
            let points: Vec<(f64, f64)> =
                s.sequence_ns.iter().enumerate().map(|(i, &v)| ((i + 1) as f64, v as f64 / 1e3)).collect();
            plot.line(&points, s.colour, 1)?;
        }
        legend(&below, &items)
    })?;
    Ok(Some(Figure {
        id: format!("fig-per-sample-{}", data.slug),
        title: format!("{} per sample", data.title),
        description: "Every sample in the order it was taken, configurations overlaid (Dankwardt, Figs 2-11: the \
                      overshoot of each sleep beyond the time requested, after the discarded first ones). A flat \
                      band is a steady timer; each spike is one late wake-up."
            .into(),
        svg,
    }))
}
