//! The figures of the report's tail section, per metric with every configuration overlaid
//! (each in its colour): the exceedance probability per activation on a log axis (measured
//! points, the fitted tail, the pWCET estimates with their confidence intervals, requirement
//! bounds), the QQ plot of the chosen fit, and the threshold stability plot (the GPD shape
//! ξ with its 95 % interval and the mean excess at each candidate threshold, the chosen
//! threshold marked). A configuration whose pWCET is not defensible is named "fitted, not
//! defensible" in the legends. The points come from [`rtlab_analysis::evt::TailCurves`]; this
//! module only draws.

use super::axis::Axis;
use super::canvas::{self, legend, legend_height, text_line, Area, Drawn, LegendItem, Mark, Plot};
use super::palette::{self, INK};
use super::{requirement_label, requirement_short, slug, Figure};
use crate::pwcet::NOT_DEFENSIBLE_LABEL;
use crate::pwcet::{fit_name, format_probability, MetricTail, TailAnalysis};
use crate::text::metric_title;
use plotters::style::RGBColor;
use rtlab_analysis::requirement::Statistic;

/// Height of the chart part of a figure (the legend comes below).
const CHART_HEIGHT: u32 = 460;

/// Heights of the stability figure's two panels: the shape ξ, the mean excess.
const SHAPE_PANEL_HEIGHT: u32 = 400;
const EXCESS_PANEL_HEIGHT: u32 = 340;

/// The shape axis of the stability figure shows at most this range: the interval of ξ above
/// a threshold with a dozen samples can span several units and would flatten the rest.
const SHAPE_AXIS_LIMITS: (f64, f64) = (-1.5, 2.5);

/// The fitted line is not drawn further right than this many times the largest sample: a
/// heavy tail's 1e-12 quantile can be absurdly far out, and the axis would hide the data.
const MAX_EXTRAPOLATION: f64 = 100.0;

/// One configuration's analysis, with its colour.
struct Drawable<'t> {
    name: &'t str,
    colour: RGBColor,
    tail: &'t TailAnalysis,
}

/// The tail figures of one metric; configurations without an analysis get a sentence in
/// `notes` instead, and with none at all there is no figure.
pub(super) fn figures(tail: &MetricTail, notes: &mut Vec<String>) -> Drawn<Vec<Figure>> {
    let title = metric_title(&tail.metric);
    let mut drawable = Vec::new();
    for (index, c, t) in &tail.configurations {
        match (&t.outcome, t.analysis()) {
            (_, Some(a)) if !a.curves.fitted.is_empty() || !a.curves.empirical.is_empty() => {
                drawable.push(Drawable { name: &c.name, colour: palette::configuration(*index), tail: t })
            }
            (Err(why), _) => notes.push(format!("pWCET of {}: {}: {}.", title, c.name, why.trim_end_matches('.'))),
            _ => notes.push(format!("pWCET of {}: {}: the analysis has no curve to draw.", title, c.name)),
        }
    }
    if drawable.is_empty() {
        return Ok(Vec::new());
    }
    let slug = slug(&tail.metric);
    let fits: Vec<String> =
        drawable.iter().filter_map(|d| d.tail.chosen_fit().map(|f| format!("{}: {}", d.name, fit_name(f)))).collect();
    let probabilities: Vec<String> = tail.config.probabilities.iter().map(|p| format_probability(*p)).collect();
    let on_bounds = if tail.requirements.is_empty() {
        String::new()
    } else {
        " Dashed vertical lines are requirement bounds; on a pwcet(p) bound the short tick marks p: a fitted line \
         that passes below the tick meets it."
            .to_string()
    };
    let observed_max_us =
        drawable.iter().filter_map(|d| d.tail.observed_max_ns).max().map_or(0.0, |ns| ns as f64 / 1e3);
    let cap_us = if observed_max_us > 0.0 { observed_max_us * MAX_EXTRAPOLATION } else { f64::INFINITY };
    // Estimates beyond the axis are named, so that no reader takes their absence for none.
    let beyond: Vec<String> = drawable
        .iter()
        .filter_map(|d| {
            let far: Vec<String> = d
                .tail
                .analysis()?
                .estimates
                .iter()
                // NaN counts as off the edge too.
                .filter(|e| e.value_ns.is_nan() || e.value_ns / 1e3 > cap_us)
                .map(|e| format_probability(e.probability))
                .collect();
            (!far.is_empty()).then(|| format!("{} at {}", d.name, far.join(" and ")))
        })
        .collect();
    let beyond = if beyond.is_empty() {
        String::new()
    } else {
        format!(
            " The pWCET lies more than {MAX_EXTRAPOLATION:.0} times beyond the largest sample, off the right edge, for \
             {} (see the table): a tail that heavy makes the extrapolation doubtful.",
            beyond.join("; ")
        )
    };
    let refused: Vec<&str> = drawable
        .iter()
        .filter(|d| d.tail.analysis().is_some_and(|a| !a.defensibility.defensible))
        .map(|d| d.name)
        .collect();
    let refused = if refused.is_empty() {
        String::new()
    } else {
        format!(
            " The pWCET of {} is not defensible from this run (the reasons are given with the pWCET table): its line and \
             bars are the fitted model's, not estimates to quote.",
            refused.join(", ")
        )
    };
    let mut figures = vec![Figure {
        id: format!("fig-pwcet-exceedance-{slug}"),
        title: format!("{title}: pWCET, exceedance probability per activation (log scale)"),
        description: format!(
            "The probability that one activation exceeds each latency. Dots: the measured tail; line: the fitted \
             model ({}); horizontal bars: the pWCET at {} per activation with its {:.0} % confidence interval, the \
             short vertical mark on each bar being the estimate. Right of the last dot the line extrapolates: that \
             part is the model, not a measurement.{refused}{beyond}{on_bounds}",
            fits.join("; "),
            probabilities.join(", "),
            tail.config.confidence * 100.0
        ),
        svg: exceedance_svg(tail, &title, &drawable, cap_us)?,
    }];
    if drawable.iter().any(|d| d.tail.analysis().is_some_and(|a| !a.curves.qq.is_empty())) {
        figures.push(Figure {
            id: format!("fig-pwcet-qq-{slug}"),
            title: format!("{title}: QQ plot of the tail fit"),
            description: "Each value the model was fitted to against the value the fitted model expects at its rank. \
                          On the dashed diagonal the model fits; points that bend above it on the right mean the \
                          measured tail is heavier than the model, and its pWCET too low."
                .into(),
            svg: qq_svg(&title, &drawable)?,
        });
    }
    if drawable.iter().any(|d| d.tail.analysis().is_some_and(|a| !a.curves.stability.is_empty())) {
        let chosen: Vec<String> = drawable
            .iter()
            .filter_map(|d| {
                let u = d.tail.analysis()?.threshold_ns?;
                Some(format!("{} {} µs", d.name, rtlab_analysis::units::format_us_f(u)))
            })
            .collect();
        let chosen = if chosen.is_empty() {
            String::new()
        } else {
            format!(" The dashed vertical lines mark the threshold the analysis chose ({}).", chosen.join("; "))
        };
        figures.push(Figure {
            id: format!("fig-pwcet-stability-{slug}"),
            title: format!("{title}: threshold stability of the tail fit"),
            description: format!(
                "Top: the shape ξ of a generalized Pareto distribution fitted by maximum likelihood to the samples \
                 above each candidate threshold, with its {confidence:.0} % interval as a vertical bar. Bottom: the \
                 mean excess, the mean of (sample − threshold) over the samples above it (the mean residual life \
                 plot). Above a threshold from which the GPD describes the tail, ξ stays level within its \
                 intervals and the mean excess follows a straight line (level for ξ = 0, rising for a heavy tail, \
                 falling for a bounded one); a good threshold is the lowest from which that holds. Further right \
                 fewer samples remain, so the bars widen and the points scatter.{chosen}",
                confidence = 95.0
            ),
            svg: stability_svg(&title, &drawable)?,
        });
    }
    Ok(figures)
}

/// Height of the key line under the legend.
const KEY_HEIGHT: u32 = 28;

/// A chart, its legend below it, and under the legend a line saying how the marks read (the
/// PNG export has no caption to say it).
fn with_legend(items: &[LegendItem], key: &str, label: &str, draw: impl FnOnce(&Area) -> Drawn) -> Drawn<String> {
    let legend_h = legend_height(items);
    canvas::svg(CHART_HEIGHT + legend_h + KEY_HEIGHT, label, |root| {
        let (chart, below) = root.split_vertically(CHART_HEIGHT);
        draw(&chart)?;
        let (legend_area, key_area) = below.split_vertically(legend_h);
        legend(&legend_area, items)?;
        text_line(&key_area, key, (KEY_HEIGHT / 2) as i32, INK, false)
    })
}

/// The configurations' legend entries; one whose pWCET is not defensible says so.
fn configuration_items(drawable: &[Drawable]) -> Vec<LegendItem> {
    drawable
        .iter()
        .map(|d| {
            let refused = d.tail.analysis().is_some_and(|a| !a.defensibility.defensible);
            let text = if refused { format!("{} ({NOT_DEFENSIBLE_LABEL})", d.name) } else { d.name.to_string() };
            LegendItem { text, colour: d.colour, mark: Mark::Line }
        })
        .collect()
}

/// Finite, positive points only (a log axis cannot show the others).
fn finite(points: &[(f64, f64)]) -> impl Iterator<Item = (f64, f64)> + '_ {
    points.iter().copied().filter(|(x, y)| x.is_finite() && y.is_finite() && *y > 0.0)
}

/// Keeps one point per ~2 pixels in plot space: thousands of equal-looking dots only make
/// the SVG heavy.
fn thin_dots(points: &[(f64, f64)], x: &Axis, y: &Axis) -> Vec<(f64, f64)> {
    let (x0, x1) = x.plot_limits();
    let (y0, y1) = y.plot_limits();
    let (tx, ty) = ((x1 - x0) / 450.0, (y1 - y0) / 230.0);
    let mut kept: Vec<(f64, f64)> = Vec::new();
    for &(px, py) in points {
        let (qx, qy) = (x.to_plot(px), y.to_plot(py));
        let near = kept
            .iter()
            .rev()
            .take(64)
            .any(|&(kx, ky)| (x.to_plot(kx) - qx).abs() < tx && (y.to_plot(ky) - qy).abs() < ty);
        if !near {
            kept.push((px, py));
        }
    }
    kept
}

/// The exceedance figure; its latency axis stops at `cap_us`.
fn exceedance_svg(tail: &MetricTail, title: &str, drawable: &[Drawable], cap_us: f64) -> Drawn<String> {
    let mut xs: Vec<f64> = Vec::new();
    let mut ys: Vec<f64> = Vec::new();
    for d in drawable {
        let Some(a) = d.tail.analysis() else { continue };
        for (v, p) in finite(&a.curves.empirical).chain(finite(&a.curves.fitted)) {
            xs.push(v / 1e3);
            ys.push(p);
        }
        for e in &a.estimates {
            xs.extend([e.value_ns, e.ci_low_ns, e.ci_high_ns].iter().filter(|v| v.is_finite()).map(|v| v / 1e3));
            ys.push(e.probability);
        }
    }
    xs.extend(tail.requirements.iter().map(|r| r.bound_ns as f64 / 1e3 * 1.05));
    ys.extend(tail.config.probabilities.iter().copied());
    let positive = |v: &&f64| v.is_finite() && **v > 0.0;
    let x_lo = xs.iter().filter(positive).copied().fold(f64::INFINITY, f64::min);
    let x_hi = xs.iter().filter(|v| v.is_finite()).copied().fold(0.0, f64::max).min(cap_us);
    let y_lo = ys.iter().filter(positive).copied().fold(1.0, f64::min);
    let y_hi = ys.iter().filter(positive).copied().fold(0.0, f64::max).min(1.0);
    let x = Axis::auto(if x_lo.is_finite() { x_lo * 0.95 } else { 0.0 }, x_hi);
    let y = Axis::log(y_lo / 2.0, y_hi.max(y_lo * 10.0));
    let mut items = configuration_items(drawable);
    items.extend(tail.requirements.iter().map(|r| LegendItem {
        text: requirement_label(r),
        colour: INK,
        mark: Mark::Dashed,
    }));
    let key = format!(
        "Dots: measured · line: fitted model · bars: pWCET at {} with its {:.0} % CI",
        tail.config.probabilities.iter().map(|p| format_probability(*p)).collect::<Vec<_>>().join(", "),
        tail.config.confidence * 100.0
    );
    with_legend(&items, &key, &format!("{title} pWCET exceedance"), |area| {
        let x_desc = format!("{} (µs{})", title.to_lowercase(), if x.is_log() { ", log scale" } else { "" });
        let mut plot = Plot::new(area, x.clone(), y.clone(), &x_desc, "exceedance probability per activation (log)")?;
        for (slot, r) in tail.requirements.iter().enumerate() {
            let bound_us = r.bound_ns as f64 / 1e3;
            plot.vertical_bound(bound_us, INK, &requirement_short(r), true, slot)?;
            if let Statistic::Pwcet(p) = r.statistic {
                plot.crosshair((bound_us, p), INK)?;
            }
        }
        for d in drawable {
            let Some(a) = d.tail.analysis() else { continue };
            let empirical: Vec<(f64, f64)> = finite(&a.curves.empirical).map(|(v, p)| (v / 1e3, p)).collect();
            plot.dots(&thin_dots(&empirical, &x, &y), d.colour)?;
            let fitted: Vec<(f64, f64)> = finite(&a.curves.fitted).map(|(v, p)| (v / 1e3, p)).collect();
            plot.line(&fitted, d.colour, 2)?;
            for e in &a.estimates {
                let p = e.probability;
                if e.ci_low_ns.is_finite() && e.ci_high_ns.is_finite() {
                    plot.line(&[(e.ci_low_ns / 1e3, p), (e.ci_high_ns / 1e3, p)], d.colour, 3)?;
                }
                if e.value_ns.is_finite() {
                    // A vertical mark a little above and below the bar (a factor on the log axis).
                    plot.line(&[(e.value_ns / 1e3, p * 2.2), (e.value_ns / 1e3, p / 2.2)], d.colour, 3)?;
                }
            }
        }
        Ok(())
    })
}

fn qq_svg(title: &str, drawable: &[Drawable]) -> Drawn<String> {
    let points: Vec<(f64, f64)> = drawable
        .iter()
        .filter_map(|d| d.tail.analysis())
        .flat_map(|a| a.curves.qq.iter().copied())
        .filter(|(f, o)| f.is_finite() && o.is_finite())
        .map(|(f, o)| (f / 1e3, o / 1e3))
        .collect();
    let lo = points.iter().flat_map(|&(f, o)| [f, o]).fold(f64::INFINITY, f64::min);
    let hi = points.iter().flat_map(|&(f, o)| [f, o]).fold(f64::NEG_INFINITY, f64::max);
    let (lo, hi) = if lo.is_finite() && hi.is_finite() { (lo, hi) } else { (0.0, 1.0) };
    let pad = (hi - lo).abs() * 0.03;
    let axis = Axis::auto(if lo > 0.0 && lo - pad <= 0.0 { lo * 0.97 } else { lo - pad }, hi + pad);
    let mut items = configuration_items(drawable);
    items.push(LegendItem { text: "y = x: the model fits exactly".into(), colour: INK, mark: Mark::Dashed });
    let key = "Dots: each value fitted, against the fitted model's quantile at its rank";
    with_legend(&items, key, &format!("{title} QQ plot"), |area| {
        let scale = if axis.is_log() { ", log scale" } else { "" };
        let mut plot = Plot::new(
            area,
            axis.clone(),
            axis.clone(),
            &format!("quantile of the fitted model (µs{scale})"),
            &format!("measured (µs{scale})"),
        )?;
        let diagonal: Vec<(f64, f64)> = (0..=64)
            .map(|i| {
                let t = i as f64 / 64.0;
                let (p0, p1) = axis.plot_limits();
                let v = axis.from_plot(p0 + (p1 - p0) * t);
                (v, v)
            })
            .collect();
        plot.dashed_line(&diagonal, INK, 2)?;
        for d in drawable {
            let Some(a) = d.tail.analysis() else { continue };
            let qq: Vec<(f64, f64)> = a
                .curves
                .qq
                .iter()
                .filter(|(f, o)| f.is_finite() && o.is_finite())
                .map(|(f, o)| (f / 1e3, o / 1e3))
                .collect();
            plot.dots(&thin_dots(&qq, &axis, &axis), d.colour)?;
        }
        Ok(())
    })
}

/// The threshold stability figure: two panels over the candidate thresholds, the GPD shape ξ
/// with its interval (bars) and the mean excess, each configuration in its colour, the chosen
/// threshold as a dashed vertical line in both.
fn stability_svg(title: &str, drawable: &[Drawable]) -> Drawn<String> {
    // (colour, [(threshold µs, ξ, ξ low, ξ high, mean excess µs)], chosen threshold µs)
    type Points = Vec<(f64, f64, f64, f64, f64)>;
    let series: Vec<(RGBColor, Points, Option<f64>)> = drawable
        .iter()
        .filter_map(|d| {
            let a = d.tail.analysis()?;
            let points: Points = a
                .curves
                .stability
                .iter()
                .map(|s| (s.threshold_ns / 1e3, s.shape, s.shape_low, s.shape_high, s.mean_excess_ns / 1e3))
                .filter(|(u, xi, ..)| u.is_finite() && xi.is_finite())
                .collect();
            let chosen = a.threshold_ns.map(|u| u / 1e3).filter(|u| u.is_finite());
            (!points.is_empty()).then_some((d.colour, points, chosen))
        })
        .collect();
    let us: Vec<f64> = series
        .iter()
        .flat_map(|(_, points, chosen)| points.iter().map(|p| p.0).chain(*chosen))
        .filter(|u| u.is_finite())
        .collect();
    let u_lo = us.iter().copied().fold(f64::INFINITY, f64::min);
    let u_hi = us.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let (u_lo, u_hi) = if u_lo.is_finite() && u_hi.is_finite() { (u_lo, u_hi) } else { (0.0, 1.0) };
    let pad = (u_hi - u_lo).abs() * 0.02;
    let x = Axis::auto(if u_lo > 0.0 && u_lo - pad <= 0.0 { u_lo * 0.98 } else { u_lo - pad }, u_hi + pad);
    // The shape axis covers the estimates, their intervals and 0, within SHAPE_AXIS_LIMITS.
    let shapes = series.iter().flat_map(|(_, points, _)| points.iter().flat_map(|p| [p.1, p.2, p.3]));
    let (s_lo, s_hi) = shapes.filter(|v| v.is_finite()).fold((0.0f64, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let shape_axis = Axis::linear(s_lo.max(SHAPE_AXIS_LIMITS.0), s_hi.min(SHAPE_AXIS_LIMITS.1).max(0.1));
    let excess: Vec<f64> =
        series.iter().flat_map(|(_, points, _)| points.iter().map(|p| p.4)).filter(|v| v.is_finite()).collect();
    let e_hi = excess.iter().copied().fold(0.0, f64::max);
    let excess_axis = Axis::linear(0.0, if e_hi > 0.0 { e_hi * 1.05 } else { 1.0 });

    // The ξ = 0 line is named in the legend: a label on the line itself would sit among the
    // scattered estimates of the highest thresholds.
    let mut items = configuration_items(drawable);
    items.push(LegendItem { text: "ξ = 0: an exponential tail".into(), colour: INK, mark: Mark::Dashed });
    let key = "Dots: ξ (top) and mean excess (bottom) at each candidate u · bars: 95 % interval · dashed: u used";
    let x_desc = format!("threshold u (µs{})", if x.is_log() { ", log scale" } else { "" });
    let legend_h = legend_height(&items);
    let height = SHAPE_PANEL_HEIGHT + EXCESS_PANEL_HEIGHT + legend_h + KEY_HEIGHT;
    canvas::svg(height, &format!("{title} threshold stability"), |root| {
        let (top, rest) = root.split_vertically(SHAPE_PANEL_HEIGHT);
        let (bottom, below) = rest.split_vertically(EXCESS_PANEL_HEIGHT);
        {
            let mut plot = Plot::new(&top, x.clone(), shape_axis.clone(), &x_desc, "shape ξ of the GPD above u")?;
            plot.horizontal_bound(0.0, INK, "")?;
            for (slot, (colour, points, chosen)) in series.iter().enumerate() {
                if let Some(u) = chosen {
                    let label = format!("u = {} µs", crate::figures::trim(*u));
                    plot.vertical_bound(*u, *colour, &label, true, slot)?;
                }
                for &(u, _, low, high, _) in points {
                    if low.is_finite() && high.is_finite() {
                        plot.line(&[(u, low), (u, high)], *colour, 1)?;
                    }
                }
                let line: Vec<(f64, f64)> = points.iter().map(|p| (p.0, p.1)).collect();
                plot.line(&line, *colour, 2)?;
                plot.dots(&line, *colour)?;
            }
        }
        {
            let mut plot = Plot::new(&bottom, x.clone(), excess_axis.clone(), &x_desc, "mean excess above u (µs)")?;
            for (slot, (colour, points, chosen)) in series.iter().enumerate() {
                if let Some(u) = chosen {
                    plot.vertical_bound(*u, *colour, "", true, slot)?;
                }
                let line: Vec<(f64, f64)> = points.iter().map(|p| (p.0, p.4)).filter(|(_, e)| e.is_finite()).collect();
                plot.line(&line, *colour, 2)?;
                plot.dots(&line, *colour)?;
            }
        }
        let (legend_area, key_area) = below.split_vertically(legend_h);
        legend(&legend_area, &items)?;
        text_line(&key_area, key, (KEY_HEIGHT / 2) as i32, INK, false)
    })
}
