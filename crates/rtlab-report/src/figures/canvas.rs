//! The drawing layer over plotters' SVG backend: one chart shape for every figure (axes in
//! plot space, see [`super::axis`]), lines clipped to the plotting area and thinned to what
//! a screen can show, dashed bound lines, out-of-range triangles, legends below the chart
//! (never over the data) and text lines.
//!
//! Text is laid out by the browser: plotters' SVG backend writes `<text>` elements and,
//! without its `ttf` feature, estimates their width itself, so no font is needed to build.

use super::axis::Axis;
use super::axis::PlotRange;
use super::palette::{GRID, GRID_LIGHT, INK};
use plotters::coord::cartesian::Cartesian2d;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

pub type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
type Coord = Cartesian2d<PlotRange, PlotRange>;

/// Width of every figure in SVG units (the page scales it to its column).
pub const WIDTH: u32 = 960;
pub const FONT: &str = "sans-serif";
/// Font sizes as plotters takes them (its SVG backend writes size / 1.24 as font-size).
pub const TICK_SIZE: f64 = 18.0;
pub const TEXT_SIZE: f64 = 19.0;
/// Height of one legend row.
pub const LEGEND_ROW: u32 = 24;

/// A drawing failed (plotters reports backend errors; the SVG backend writes to a string,
/// so in practice this does not happen).
#[derive(Debug)]
pub struct DrawError(pub String);

impl<E: std::error::Error + Send + Sync> From<DrawingAreaErrorKind<E>> for DrawError {
    fn from(e: DrawingAreaErrorKind<E>) -> Self {
        DrawError(e.to_string())
    }
}

pub type Drawn<T = ()> = Result<T, DrawError>;

/// Renders a `height`-tall figure and returns its `<svg>` element, ready to be placed inline
/// in HTML: scalable (viewBox), labelled for screen readers, no namespace URL.
pub fn svg(height: u32, label: &str, draw: impl FnOnce(&Area) -> Drawn) -> Drawn<String> {
    svg_sized(WIDTH, height, label, draw)
}

/// [`svg`] at another width: a figure placed beside a table is narrower, so that its text
/// keeps its size when the page scales it into half a column.
pub fn svg_sized(width: u32, height: u32, label: &str, draw: impl FnOnce(&Area) -> Drawn) -> Drawn<String> {
    let mut buffer = String::new();
    {
        let root = SVGBackend::with_string(&mut buffer, (width, height)).into_drawing_area();
        root.fill(&WHITE)?;
        draw(&root)?;
        root.present()?;
    }
    let body = buffer.split_once('\n').map(|(_, rest)| rest).unwrap_or("");
    Ok(format!(
        "<svg class=\"rtlab-svg\" viewBox=\"0 0 {width} {height}\" width=\"{width}\" height=\"{height}\" role=\"img\" \
         aria-label=\"{label}\"><title>{label}</title>\n{body}",
        label = crate::text::escape(label)
    ))
}

/// How one legend entry is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    Line,
    Dashed,
    /// A filled band (the history's gaps).
    Band,
}

#[derive(Debug, Clone)]
pub struct LegendItem {
    pub text: String,
    pub colour: RGBColor,
    pub mark: Mark,
}

/// Estimated width of `text` at `size` (plotters units), in SVG units.
fn text_width(text: &str, size: f64) -> f64 {
    text.chars().count() as f64 * size / 1.24 * 0.56
}

/// Legend items laid out in rows across a figure `width` wide: (x, row) of each.
fn legend_layout(items: &[LegendItem], width: u32) -> Vec<(i32, u32)> {
    let mut out = Vec::new();
    let (mut x, mut row) = (16.0, 0u32);
    for item in items {
        let w = 40.0 + text_width(&item.text, TEXT_SIZE) + 24.0;
        if x > 16.0 && x + w > width as f64 - 16.0 {
            x = 16.0;
            row += 1;
        }
        out.push((x as i32, row));
        x += w;
    }
    out
}

/// Height the legend of `items` needs.
pub fn legend_height(items: &[LegendItem]) -> u32 {
    legend_height_in(items, WIDTH)
}

/// Height the legend of `items` needs in a figure `width` wide.
pub fn legend_height_in(items: &[LegendItem], width: u32) -> u32 {
    legend_layout(items, width).last().map(|(_, row)| (row + 1) * LEGEND_ROW + 8).unwrap_or(0)
}

/// Draws the legend into `area` (which should be [`legend_height`] tall).
pub fn legend(area: &Area, items: &[LegendItem]) -> Drawn {
    for (item, (x, row)) in items.iter().zip(legend_layout(items, area.dim_in_pixel().0)) {
        let y = (row * LEGEND_ROW + LEGEND_ROW / 2) as i32;
        let style = ShapeStyle { color: item.colour.to_rgba(), filled: true, stroke_width: 3 };
        match item.mark {
            Mark::Line => area.draw(&PathElement::new(vec![(x, y), (x + 32, y)], style))?,
            Mark::Dashed => {
                for dash in 0..3 {
                    let start = x + dash * 12;
                    area.draw(&PathElement::new(vec![(start, y), (start + 7, y)], style))?;
                }
            }
            Mark::Band => area.draw(&Rectangle::new([(x, y - 8), (x + 32, y + 8)], style))?,
        }
        area.draw(&Text::new(item.text.clone(), (x + 40, y), text_style(TEXT_SIZE, INK, HPos::Left)))?;
    }
    Ok(())
}

pub fn text_style(size: f64, colour: RGBColor, h: HPos) -> TextStyle<'static> {
    TextStyle { color: colour.to_backend_color(), pos: Pos::new(h, VPos::Center), ..(FONT, size).into_font().into() }
}

/// A line of text across `area` at height `y`, starting at x = 16 (`bold` for titles).
pub fn text_line(area: &Area, text: &str, y: i32, colour: RGBColor, bold: bool) -> Drawn {
    let font = if bold { (FONT, TEXT_SIZE).into_font().style(FontStyle::Bold) } else { (FONT, TEXT_SIZE).into_font() };
    let style = TextStyle { color: colour.to_backend_color(), pos: Pos::new(HPos::Left, VPos::Center), ..font.into() };
    area.draw(&Text::new(text.to_string(), (16, y), style))?;
    Ok(())
}

/// A chart on `area` in the figures' look: margins, axes, ticks, grid and axis titles; the x
/// ticks read `x_label` of the data value (the history's times), the y ticks the axis's own.
pub(crate) type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Coord>;

pub(crate) fn chart<'a, 'b>(
    area: &'a Area<'b>,
    x: &Axis,
    y: &Axis,
    x_label: &dyn Fn(f64) -> String,
    x_desc: &str,
    y_desc: &str,
) -> Drawn<Chart<'a, 'b>> {
    let mut chart = ChartBuilder::on(area)
        .margin_top(10)
        .margin_right(28)
        .margin_left(8)
        .x_label_area_size(54)
        .y_label_area_size(84)
        .build_cartesian_2d(x.coord(), y.coord())?;
    {
        let (xa, ya) = (x.clone(), y.clone());
        let x_formatter = move |v: &f64| x_label(xa.from_plot(*v));
        let y_formatter = move |v: &f64| ya.label(ya.from_plot(*v));
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .x_label_formatter(&x_formatter)
            .y_label_formatter(&y_formatter)
            .label_style((FONT, TICK_SIZE).into_font().color(&INK))
            .axis_desc_style((FONT, TEXT_SIZE).into_font().color(&INK))
            .bold_line_style(GRID)
            .light_line_style(GRID_LIGHT)
            .axis_style(INK)
            .draw()?;
    }
    Ok(chart)
}

/// A chart on an area: axes, ticks, grid and axis titles, and the drawing operations in data
/// units.
pub struct Plot<'a, 'b> {
    chart: ChartContext<'a, SVGBackend<'b>, Coord>,
    pub x: Axis,
    pub y: Axis,
}

impl<'a, 'b> Plot<'a, 'b> {
    pub fn new(area: &'a Area<'b>, x: Axis, y: Axis, x_desc: &str, y_desc: &str) -> Drawn<Plot<'a, 'b>> {
        let xa = x.clone();
        let chart = chart(area, &x, &y, &move |v| xa.label(v), x_desc, y_desc)?;
        Ok(Plot { chart, x, y })
    }

    fn to_plot(&self, (x, y): (f64, f64)) -> (f64, f64) {
        (self.x.to_plot(x), self.y.to_plot(y))
    }

    fn limits(&self) -> ((f64, f64), (f64, f64)) {
        (self.x.plot_limits(), self.y.plot_limits())
    }

    /// A polyline through `points` (data units), clipped to the plotting area and thinned
    /// to about a pixel.
    pub fn line(&mut self, points: &[(f64, f64)], colour: RGBColor, width: u32) -> Drawn {
        let style = ShapeStyle { color: colour.to_rgba(), filled: false, stroke_width: width };
        let plotted: Vec<(f64, f64)> = points.iter().map(|&p| self.to_plot(p)).collect();
        let (xl, yl) = self.limits();
        // A hair wider than the axes: points on an edge (a histogram's floor) stay inside
        // despite rounding, so the line is not cut there.
        let widen = |(lo, hi): (f64, f64)| (lo - (hi - lo) * 1e-6, hi + (hi - lo) * 1e-6);
        for piece in clip_polyline(&plotted, widen(xl), widen(yl)) {
            let thin = thin(&piece, xl, yl);
            self.chart.draw_series(LineSeries::new(thin, style))?;
        }
        Ok(())
    }

    /// A dashed polyline through `points` (data units), clipped to the plotting area.
    pub fn dashed_line(&mut self, points: &[(f64, f64)], colour: RGBColor, width: u32) -> Drawn {
        let style = ShapeStyle { color: colour.to_rgba(), filled: false, stroke_width: width };
        let plotted: Vec<(f64, f64)> = points.iter().map(|&p| self.to_plot(p)).collect();
        let (xl, yl) = self.limits();
        for piece in clip_polyline(&plotted, xl, yl) {
            self.chart.draw_series(DashedLineSeries::new(piece, 9, 6, style))?;
        }
        Ok(())
    }

    /// A dashed vertical line across the plot at `x` (data units), `label` beside it near
    /// the top (`at_top`) or the bottom; `slot` staggers the labels of several lines.
    pub fn vertical_bound(&mut self, x: f64, colour: RGBColor, label: &str, at_top: bool, slot: usize) -> Drawn {
        let (xl, yl) = self.limits();
        let px = self.x.to_plot(x);
        // Label left of the line when it is in the right part of the plot, else right of it.
        let (h, dx) = if px > xl.0 + (xl.1 - xl.0) * 0.6 { (HPos::Right, -6) } else { (HPos::Left, 6) };
        let step = 20 * slot as i32;
        let (end, dy) = if at_top { ((px, yl.1), 14 + step) } else { ((px, yl.0), -14 - step) };
        let other = if at_top { (px, yl.0) } else { (px, yl.1) };
        self.dashed(px >= xl.0 && px <= xl.1, [other, end], (dx, dy), h, colour, label)
    }

    /// A dashed horizontal line across the plot at `y` (data units), `label` above its right
    /// end.
    pub fn horizontal_bound(&mut self, y: f64, colour: RGBColor, label: &str) -> Drawn {
        let (xl, yl) = self.limits();
        let py = self.y.to_plot(y);
        self.dashed(py >= yl.0 && py <= yl.1, [(xl.0, py), (xl.1, py)], (-6, -13), HPos::Right, colour, label)
    }

    /// Small dots at `points` (data units) inside the plot.
    pub fn dots(&mut self, points: &[(f64, f64)], colour: RGBColor) -> Drawn {
        let (xl, yl) = self.limits();
        let style = ShapeStyle { color: colour.to_rgba(), filled: true, stroke_width: 1 };
        let inside: Vec<(f64, f64)> = points
            .iter()
            .map(|&p| self.to_plot(p))
            .filter(|&(x, y)| x >= xl.0 && x <= xl.1 && y >= yl.0 && y <= yl.1)
            .collect();
        self.chart.draw_series(inside.into_iter().map(|p| Circle::new(p, 3, style)))?;
        Ok(())
    }

    /// A dashed line from `ends[0]` to `ends[1]` (plot space), `label` at `offset` pixels from
    /// its second end; nothing when not `visible`.
    fn dashed(
        &mut self,
        visible: bool,
        ends: [(f64, f64); 2],
        offset: (i32, i32),
        h: HPos,
        colour: RGBColor,
        label: &str,
    ) -> Drawn {
        if !visible {
            return Ok(());
        }
        let style = ShapeStyle { color: colour.to_rgba(), filled: false, stroke_width: 2 };
        self.chart.draw_series(DashedLineSeries::new(ends.to_vec(), 8, 5, style))?;
        if !label.is_empty() {
            let element =
                EmptyElement::at(ends[1]) + Text::new(label.to_string(), offset, text_style(TICK_SIZE, colour, h));
            self.chart.plotting_area().draw(&element)?;
        }
        Ok(())
    }

    /// A short horizontal tick at `(x, y)` (data units): where a percentile requirement sits
    /// on a cumulative curve.
    pub fn crosshair(&mut self, at: (f64, f64), colour: RGBColor) -> Drawn {
        let (xl, yl) = self.limits();
        let (px, py) = self.to_plot(at);
        if px < xl.0 || px > xl.1 || py < yl.0 || py > yl.1 {
            return Ok(());
        }
        let style = ShapeStyle { color: colour.to_rgba(), filled: false, stroke_width: 2 };
        self.chart
            .plotting_area()
            .draw(&(EmptyElement::at((px, py)) + PathElement::new(vec![(-10, 0), (10, 0)], style)))?;
        Ok(())
    }

    /// Filled triangles on the top edge at these x (data units): samples above the y range.
    pub fn triangles_at_top(&mut self, xs: &[f64], colour: RGBColor) -> Drawn {
        let (xl, yl) = self.limits();
        let style = ShapeStyle { color: colour.to_rgba(), filled: true, stroke_width: 1 };
        let mut last_px = f64::NEG_INFINITY;
        let min_gap = (xl.1 - xl.0) / 400.0;
        for &x in xs {
            let px = self.x.to_plot(x).clamp(xl.0, xl.1);
            if px - last_px < min_gap {
                continue;
            }
            last_px = px;
            self.chart.plotting_area().draw(&(EmptyElement::at((px, yl.1)) + TriangleMarker::new((0, 6), 6, style)))?;
        }
        Ok(())
    }
}

/// Splits a polyline (plot space) into the pieces inside the rectangle, cutting segments at
/// its edges (Liang-Barsky).
pub fn clip_polyline(points: &[(f64, f64)], (x0, x1): (f64, f64), (y0, y1): (f64, f64)) -> Vec<Vec<(f64, f64)>> {
    let mut pieces: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut current: Vec<(f64, f64)> = Vec::new();
    let inside = |(x, y): (f64, f64)| x >= x0 && x <= x1 && y >= y0 && y <= y1;
    if points.len() == 1 && inside(points[0]) {
        return vec![points.to_vec()];
    }
    for pair in points.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        if !(a.0.is_finite() && a.1.is_finite() && b.0.is_finite() && b.1.is_finite()) {
            continue;
        }
        let (dx, dy) = (b.0 - a.0, b.1 - a.1);
        let (mut t0, mut t1) = (0.0f64, 1.0f64);
        let mut visible = true;
        for (p, q) in [(-dx, a.0 - x0), (dx, x1 - a.0), (-dy, a.1 - y0), (dy, y1 - a.1)] {
            if p == 0.0 {
                if q < 0.0 {
                    visible = false;
                    break;
                }
            } else {
                let r = q / p;
                if p < 0.0 {
                    t0 = t0.max(r);
                } else {
                    t1 = t1.min(r);
                }
            }
        }
        if !visible || t0 > t1 {
            if !current.is_empty() {
                pieces.push(std::mem::take(&mut current));
            }
            continue;
        }
        // The ends themselves when not cut (a + (b - a) is not always b in floating point).
        let start = if t0 > 0.0 { (a.0 + t0 * dx, a.1 + t0 * dy) } else { a };
        let end = if t1 < 1.0 { (a.0 + t1 * dx, a.1 + t1 * dy) } else { b };
        if current.last() != Some(&start) {
            if !current.is_empty() {
                pieces.push(std::mem::take(&mut current));
            }
            current.push(start);
        }
        current.push(end);
        if t1 < 1.0 {
            pieces.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        pieces.push(current);
    }
    pieces
}

/// Drops points closer than about half a pixel (1/1600 of the axis span in x and in y) to
/// the last one kept; always keeps the first and last.
pub fn thin(points: &[(f64, f64)], (x0, x1): (f64, f64), (y0, y1): (f64, f64)) -> Vec<(f64, f64)> {
    let (tx, ty) = ((x1 - x0) / 1600.0, (y1 - y0) / 1600.0);
    let mut out: Vec<(f64, f64)> = Vec::with_capacity(points.len().min(4096));
    for (i, &p) in points.iter().enumerate() {
        let keep = match out.last() {
            None => true,
            Some(&(lx, ly)) => (p.0 - lx).abs() > tx || (p.1 - ly).abs() > ty || i + 1 == points.len(),
        };
        if keep {
            out.push(p);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clipping_cuts_at_the_edges() {
        let pieces =
            clip_polyline(&[(-1.0, 0.5), (0.5, 0.5), (0.5, 2.0), (0.7, 0.5), (0.9, 0.5)], (0.0, 1.0), (0.0, 1.0));
        assert_eq!(pieces.len(), 2, "{pieces:?}");
        assert_eq!(pieces[0], vec![(0.0, 0.5), (0.5, 0.5), (0.5, 1.0)]);
        assert_eq!(pieces[1].last(), Some(&(0.9, 0.5)));
        assert!(clip_polyline(&[(2.0, 2.0), (3.0, 3.0)], (0.0, 1.0), (0.0, 1.0)).is_empty());
        assert!(clip_polyline(&[], (0.0, 1.0), (0.0, 1.0)).is_empty());
    }

    #[test]
    fn thinning_keeps_the_shape_ends() {
        let points: Vec<(f64, f64)> =
            (0..100_000).map(|i| (i as f64 / 100_000.0, (i as f64 / 100_000.0).powi(2))).collect();
        let thin = thin(&points, (0.0, 1.0), (0.0, 1.0));
        assert!(thin.len() < 3300, "{}", thin.len());
        assert_eq!(thin.first(), points.first());
        assert_eq!(thin.last(), points.last());
    }

    #[test]
    fn legend_wraps_into_rows() {
        let item = |t: &str| LegendItem { text: t.into(), colour: INK, mark: Mark::Line };
        assert_eq!(legend_height(&[]), 0);
        let one = legend_height(&[item("idle")]);
        let many: Vec<LegendItem> = (0..12).map(|i| item(&format!("configuration number {i}"))).collect();
        assert!(legend_height(&many) > 2 * one);
    }
}
