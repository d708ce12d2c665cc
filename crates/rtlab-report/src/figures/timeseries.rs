//! Time series over the run, one panel per configuration (Regnier et al., Figs 5-8): every
//! sample when the run saved raw samples, per-second maxima otherwise; samples above the
//! panel's range as triangles on its top edge; "M SD Mn Mx" under each panel.

use super::axis::Axis;
use super::canvas::{self, text_line, Drawn, Plot};
use super::palette::INK;
use super::{requirement_short, trim, Figure, MetricData, Series};
use rtlab_results::raw::RawReader;

/// Heights of one panel: title line, chart, caption line.
const TITLE_H: u32 = 30;
const CHART_H: u32 = 230;
const CAPTION_H: u32 = 30;
/// Columns samples are reduced to (about one per pixel of the plotting area).
const COLUMNS: usize = 840;

/// What one panel shows.
struct Trace {
    /// (x s, y µs) polyline; NaN values break it.
    points: Vec<(f64, f64)>,
    /// Per-second maxima get dots (few points); raw samples do not.
    dots: bool,
    /// Top of the y range, µs.
    top_us: f64,
    duration_s: f64,
    what: &'static str,
}

/// Every raw sample of a configuration reduced per column to its (min, max) in ns.
type Columns = Vec<Option<(i64, i64)>>;

pub(super) fn figure(data: &MetricData, notes: &mut Vec<String>) -> Drawn<Figure> {
    let raw: Vec<Option<Columns>> = data
        .series
        .iter()
        .map(|s| {
            if s.raw_files.is_empty() {
                return None;
            }
            raw_columns(s)
                .map_err(|e| {
                    notes.push(format!(
                        "{}: raw samples unreadable ({e}); the time series shows per-second maxima.",
                        s.name
                    ))
                })
                .ok()
        })
        .collect();
    let (raw_top, block_top) = y_tops_us(data, &raw);
    let traces: Vec<Trace> = data
        .series
        .iter()
        .zip(&raw)
        .map(|(s, columns)| match columns {
            Some(c) => raw_trace(s, c, raw_top),
            None => block_trace(s, block_top),
        })
        .collect();
    let bottom = data.min_us().min(0.0);
    let panel_h = TITLE_H + CHART_H + CAPTION_H;
    let height = panel_h * data.series.len().max(1) as u32;
    let y_desc = format!("{} (µs)", data.title.to_lowercase());
    let svg = canvas::svg(height, &format!("{} over time", data.title), |root| {
        let panels = root.split_evenly((data.series.len().max(1), 1));
        for ((area, s), t) in panels.iter().zip(&data.series).zip(&traces) {
            let (title, rest) = area.split_vertically(TITLE_H);
            let (chart, caption) = rest.split_vertically(CHART_H);
            let above: Vec<f64> = t.points.iter().filter(|p| p.1 > t.top_us).map(|p| p.0).collect();
            let marks = if above.is_empty() { "" } else { ", ▲ above it" };
            let line = format!("{} — {}; y range to {} µs{marks}", s.name, t.what, trim(t.top_us));
            text_line(&title, &line, (TITLE_H / 2 + 4) as i32, s.colour, true)?;
            let x = Axis::fixed(0.0, t.duration_s.max(1e-3));
            let y = Axis::fixed(bottom, t.top_us);
            let mut plot = Plot::new(&chart, x, y, "time since the start of the measurement (s)", &y_desc)?;
            // One bound is labelled on its line; several are named in the description (their
            // labels would collide where the bounds are close on a panel's scale).
            let single = data.requirements.len() == 1;
            for r in &data.requirements {
                let label = if single { requirement_short(r) } else { String::new() };
                plot.horizontal_bound(r.bound_ns as f64 / 1e3, INK, &label)?;
            }
            plot.line(&t.points, s.colour, 1)?;
            if t.dots {
                plot.dots(&t.points, s.colour)?;
            }
            plot.triangles_at_top(&above, s.colour)?;
            text_line(&caption, &moments_caption(s), (CAPTION_H / 2) as i32, INK, false)?;
        }
        Ok(())
    })?;
    let bounds = if data.requirements.len() > 1 {
        let named: Vec<String> = data
            .requirements
            .iter()
            .map(|r| format!("{} at {} µs", requirement_short(r), trim(r.bound_ns as f64 / 1e3)))
            .collect();
        format!(" Dashed lines: the requirement bounds ({}).", named.join(", "))
    } else {
        String::new()
    };
    Ok(Figure {
        id: format!("fig-timeseries-{}", data.slug),
        title: format!("{} over time", data.title),
        description: format!(
            "One panel per configuration, all CPUs together (Regnier et al., Figs 5-8): every sample when the run saved \
             raw samples (--raw), else the largest sample of each second. Samples above a panel's y range are \
             triangles on its top edge. Under each panel: mean (M), standard deviation (SD), minimum (Mn) and maximum \
             (Mx) of all samples.{bounds}"
        ),
        svg,
    })
}

/// "M 12.3 µs   SD 4.5 µs   Mn 1.5 µs   Mx 2936.6 µs   (10,000 samples)" (em spaces: SVG
/// collapses ordinary ones).
pub(super) fn moments_caption(s: &Series) -> String {
    let m = &s.moments;
    match (m.mean(), m.stddev(), m.min(), m.max()) {
        (Some(mean), Some(sd), Some(min), Some(max)) => format!(
            "M {} µs\u{2003}\u{2003}SD {} µs\u{2003}\u{2003}Mn {} µs\u{2003}\u{2003}Mx {} µs\u{2003}\u{2003}({} samples)",
            trim(mean / 1e3),
            trim(sd / 1e3),
            trim(min as f64 / 1e3),
            trim(max as f64 / 1e3),
            rtlab_analysis::units::thousands(m.count)
        ),
        _ => "no samples".into(),
    }
}

/// Tops of the y ranges, µs, for panels of raw samples and panels of per-second maxima:
/// twice the typical value (the largest p99 of the configurations with raw samples; the
/// median per-second maximum), raised to include every requirement bound, but no higher
/// than the largest sample. The panels of one kind share their range, so they compare.
fn y_tops_us(data: &MetricData, raw: &[Option<Columns>]) -> (f64, f64) {
    let p99 = data
        .series
        .iter()
        .zip(raw)
        .filter(|(_, c)| c.is_some())
        .filter_map(|(s, _)| s.summary.as_ref().map(|s| s.p99))
        .max()
        .unwrap_or(0) as f64
        / 1e3;
    let mut maxima: Vec<i64> = data
        .series
        .iter()
        .zip(raw)
        .filter(|(_, c)| c.is_none())
        .flat_map(|(s, _)| s.per_second_max_ns.iter().flatten().copied())
        .collect();
    maxima.sort_unstable();
    let median = maxima.get(maxima.len() / 2).copied().unwrap_or(0) as f64 / 1e3;
    let top = |typical: f64| {
        let wanted = data.bounds_us().fold(typical * 2.0, |top, b| top.max(b * 1.1));
        let top = wanted.min(data.max_us() * 1.02);
        if top > 0.0 {
            top
        } else {
            1.0
        }
    };
    (top(p99), top(median))
}

fn block_trace(s: &Series, top_us: f64) -> Trace {
    let block = s.block_s as f64;
    let points = s
        .per_second_max_ns
        .iter()
        .enumerate()
        .map(|(i, v)| ((i as f64 + 0.5) * block, v.map(|ns| ns as f64 / 1e3).unwrap_or(f64::NAN)))
        .collect();
    let blocks = s.per_second_max_ns.len() as f64 * block;
    Trace {
        points,
        dots: s.per_second_max_ns.len() <= 300,
        top_us,
        duration_s: blocks.max(s.duration_s),
        what: "largest sample of each second, all CPUs",
    }
}

/// Reads every raw sample of `s` into [`COLUMNS`] columns of time: (min, max) per column.
fn raw_columns(s: &Series) -> Result<Columns, rtlab_results::ResultsError> {
    let mut readers = Vec::new();
    let mut firsts = Vec::new();
    for path in &s.raw_files {
        let mut reader = RawReader::open(path)?;
        if let Some(first) = reader.next_sample()? {
            firsts.push(first);
            readers.push(reader);
        }
    }
    let t0 = firsts.iter().map(|f| f.expected_ns).min().unwrap_or(0);
    let span_ns = (s.duration_s * 1e9).max(1.0);
    let mut columns: Columns = vec![None; COLUMNS];
    let mut add = |expected_ns: u64, value_ns: i64| {
        let column = ((expected_ns.saturating_sub(t0) as f64 / span_ns * COLUMNS as f64) as usize).min(COLUMNS - 1);
        let c = columns[column].get_or_insert((value_ns, value_ns));
        c.0 = c.0.min(value_ns);
        c.1 = c.1.max(value_ns);
    };
    for (mut reader, first) in readers.into_iter().zip(firsts) {
        add(first.expected_ns, first.value_ns);
        while let Some(sample) = reader.next_sample()? {
            add(sample.expected_ns, sample.value_ns);
        }
    }
    Ok(columns)
}

/// A zigzag through each column's min and max: drawn, it covers the column's extent.
fn raw_trace(s: &Series, columns: &Columns, top_us: f64) -> Trace {
    let duration_s = s.duration_s.max(1e-9);
    let points = zigzag(columns, duration_s);
    Trace { points, dots: false, top_us, duration_s, what: "every sample, all CPUs" }
}

/// The zigzag's points (x in s, y in µs) over `duration_s`: a NaN point breaks the line.
/// Fewer samples than columns (20 Hz for 20 s) leave columns empty between neighbours: the
/// line joins across gaps up to twice the average spacing, and breaks at longer ones
/// (samples missing).
fn zigzag(columns: &Columns, duration_s: f64) -> Vec<(f64, f64)> {
    let x_of = |column: usize| (column as f64 + 0.5) / COLUMNS as f64 * duration_s;
    let mut points = Vec::with_capacity(2 * COLUMNS);
    let filled = columns.iter().filter(|c| c.is_some()).count().max(1);
    let joined_gap = (2.0 * COLUMNS as f64 / filled as f64).floor() as usize;
    let mut empty = 0usize;
    for (column, extent) in columns.iter().enumerate() {
        match extent {
            Some((lo, hi)) => {
                if empty > joined_gap && !points.is_empty() {
                    points.push((x_of(column - 1), f64::NAN));
                }
                empty = 0;
                let (lo, hi) = (*lo as f64 / 1e3, *hi as f64 / 1e3);
                // Alternate the order so that consecutive columns join at the same end.
                if column % 2 == 0 {
                    points.extend([(x_of(column), lo), (x_of(column), hi)]);
                } else {
                    points.extend([(x_of(column), hi), (x_of(column), lo)]);
                }
            }
            None => empty += 1,
        }
    }
    points
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sparse_series_is_one_line_and_a_long_gap_breaks_it() {
        // 400 samples over 840 columns: every other column or so.
        let mut columns: Columns = vec![None; COLUMNS];
        for c in (0..COLUMNS).step_by(2) {
            columns[c] = Some((1_000, 2_000));
        }
        let points = zigzag(&columns, 20.0);
        assert!(points.iter().all(|p| p.1.is_finite()), "joined across one empty column");
        // A hole of 100 columns (samples missing) breaks the line once.
        for c in columns.iter_mut().skip(300).take(100) {
            *c = None;
        }
        let breaks = zigzag(&columns, 20.0).iter().filter(|p| p.1.is_nan()).count();
        assert_eq!(breaks, 1);
        // A dense series: a hole of 3 columns breaks it.
        let mut dense: Columns = vec![Some((1, 2)); COLUMNS];
        dense[10] = None;
        dense[11] = None;
        dense[12] = None;
        assert_eq!(zigzag(&dense, 1.0).iter().filter(|p| p.1.is_nan()).count(), 1);
    }
}
