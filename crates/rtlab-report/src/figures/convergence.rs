//! "Long enough?": the stop rule's statistic over the run (docs/stop-rule.md), one panel pair
//! per configuration measured in windows: above, the statistic with its 95 % interval; below,
//! the interval's relative half-width against the target. A plain run has one point and no
//! curve, so it gets no figure (its answer is in the table line).

use super::axis::Axis;
use super::canvas::{self, text_line, Drawn, Plot};
use super::palette::{self, INK};
use super::{trim, Figure};
use rtlab_analysis::convergence::Convergence;
use rtlab_results::set::ReportSet;

const TITLE_H: u32 = 30;
const CHART_H: u32 = 220;

/// The configurations whose convergence has a curve (two points or more).
pub fn curves(set: &ReportSet) -> Vec<(String, usize, &Convergence)> {
    set.configurations()
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let conv = c.run.scenario(c.scenario)?.convergence.as_ref()?;
            (conv.curve.len() >= 2).then(|| (c.name.clone(), i, conv))
        })
        .collect()
}

/// The figure, None when no configuration has a curve.
pub fn figure(set: &ReportSet) -> Drawn<Option<Figure>> {
    let curves = curves(set);
    if curves.is_empty() {
        return Ok(None);
    }
    let panel_h = 2 * (TITLE_H + CHART_H);
    let statistic = curves[0].2.statistic.clone();
    let svg = canvas::svg(panel_h * curves.len() as u32, &format!("{statistic} over time"), |root| {
        let panels = root.split_evenly((curves.len(), 1));
        for (area, (name, index, c)) in panels.iter().zip(&curves) {
            let colour = palette::configuration(*index);
            let (top, bottom) = area.split_vertically(TITLE_H + CHART_H);
            let end = c.curve.last().map_or(1.0, |p| p.elapsed_s).max(1e-3);
            let x = Axis::fixed(0.0, end);
            // Above: the value and the interval's ends, µs.
            let (title, chart) = top.split_vertically(TITLE_H);
            let line = format!("{name} — {} of {}: {}", c.statistic, c.metric, c.answer);
            text_line(&title, &line, (TITLE_H / 2 + 4) as i32, colour, true)?;
            let us = |ns: f64| ns / 1e3;
            let value: Vec<(f64, f64)> = c.curve.iter().map(|p| (p.elapsed_s, us(p.value_ns))).collect();
            let low: Vec<(f64, f64)> = c.curve.iter().map(|p| (p.elapsed_s, us(p.low_ns))).collect();
            let high: Vec<(f64, f64)> =
                c.curve.iter().filter_map(|p| p.high_ns.map(|h| (p.elapsed_s, us(h)))).collect();
            let top_us = high.iter().chain(&value).map(|p| p.1).fold(0.0f64, f64::max).max(1e-3) * 1.05;
            let bottom_us = low.iter().map(|p| p.1).fold(f64::INFINITY, f64::min).min(top_us).max(0.0) * 0.95;
            let mut plot = Plot::new(
                &chart,
                x.clone(),
                Axis::fixed(bottom_us, top_us),
                "time measured (s)",
                &format!("{} (µs) and 95 % interval", c.statistic),
            )?;
            plot.dashed_line(&low, colour, 1)?;
            plot.dashed_line(&high, colour, 1)?;
            plot.line(&value, colour, 2)?;
            plot.dots(&value, colour)?;
            // Below: the relative half-width (%), with the target.
            let (title, chart) = bottom.split_vertically(TITLE_H);
            let target = c.target * 100.0;
            let widths: Vec<(f64, f64)> =
                c.curve.iter().filter_map(|p| p.half_width.map(|h| (p.elapsed_s, h * 100.0))).collect();
            let open = c.curve.len() - widths.len();
            let note =
                if open > 0 { format!("; {open} windows without an interval are left out") } else { String::new() };
            let line = format!("half-width of the 95 % interval, target ±{}%{note}", trim(target));
            text_line(&title, &line, (TITLE_H / 2 + 4) as i32, INK, false)?;
            let top_pct = widths.iter().map(|p| p.1).fold(target, f64::max) * 1.1;
            let mut plot = Plot::new(&chart, x, Axis::fixed(0.0, top_pct), "time measured (s)", "± % of the value")?;
            plot.horizontal_bound(target, INK, "target")?;
            plot.line(&widths, colour, 2)?;
            plot.dots(&widths, colour)?;
        }
        Ok(())
    })?;
    Ok(Some(Figure {
        id: "fig-convergence".into(),
        title: format!("Long enough? {statistic} over time"),
        description: "The stop rule's statistic after each window (rtlab run --until): above, its value with the ends \
                      of its 95 % interval (dashed); below, the interval's half-width relative to the value, with the \
                      target. The run stops once the half-width has stayed within the target for the required \
                      windows (docs/stop-rule.md)."
            .into(),
        svg,
    }))
}
