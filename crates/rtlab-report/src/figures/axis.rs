//! Axes: linear or logarithmic, with round limits and ticks a person reads at a glance
//! (1-2-5 steps). Charts are drawn in "plot space" (log10 of the value on a log axis), so
//! every figure uses one coordinate type whatever its scales.

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use std::ops::Range;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    Linear,
    Log,
}

/// One axis in data units (µs, %, fraction, count, s).
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    pub scale: Scale,
    pub lo: f64,
    pub hi: f64,
    /// Tick step of a linear axis (data units).
    step: f64,
}

/// Data spanning more than this ratio (max / min) get a log axis from [`Axis::auto`].
pub const LOG_RATIO: f64 = 50.0;

impl Axis {
    /// A linear axis covering `lo..=hi`, widened to round limits.
    pub fn linear(lo: f64, hi: f64) -> Axis {
        let (lo, hi) = sane(lo, hi, 0.0, 1.0);
        let step = nice_step((hi - lo) / 6.0);
        Axis { scale: Scale::Linear, lo: (lo / step).floor() * step, hi: (hi / step).ceil() * step, step }
    }

    /// A linear axis with exactly these limits (zooms: 98 % to 100 %).
    pub fn fixed(lo: f64, hi: f64) -> Axis {
        let (lo, hi) = sane(lo, hi, 0.0, 1.0);
        Axis { scale: Scale::Linear, lo, hi, step: nice_step((hi - lo) / 6.0) }
    }

    /// A logarithmic axis covering `lo..=hi` (both > 0), widened to 1-2-5 limits.
    pub fn log(lo: f64, hi: f64) -> Axis {
        let lo = if lo.is_finite() && lo > 0.0 { lo } else { 1.0 };
        let hi = if hi.is_finite() && hi > lo { hi } else { lo * 10.0 };
        let (lo, hi) = (round_125(lo, false), round_125(hi, true));
        Axis { scale: Scale::Log, lo, hi: if hi > lo { hi } else { lo * 10.0 }, step: 0.0 }
    }

    /// Log when the data spread over more than [`LOG_RATIO`] (a latency tail three decades
    /// above the median), linear otherwise.
    pub fn auto(lo: f64, hi: f64) -> Axis {
        if lo > 0.0 && hi / lo > LOG_RATIO {
            Axis::log(lo, hi)
        } else {
            Axis::linear(lo.min(hi), hi)
        }
    }

    pub fn is_log(&self) -> bool {
        self.scale == Scale::Log
    }

    /// The value in plot space. Values a log axis cannot show (<= 0) go far below it.
    pub fn to_plot(&self, value: f64) -> f64 {
        match self.scale {
            Scale::Linear => value,
            Scale::Log if value > 0.0 => value.log10(),
            Scale::Log => self.lo.log10() - 10.0,
        }
    }

    pub fn from_plot(&self, plot: f64) -> f64 {
        match self.scale {
            Scale::Linear => plot,
            Scale::Log => 10f64.powf(plot),
        }
    }

    /// (low, high) in plot space.
    pub fn plot_limits(&self) -> (f64, f64) {
        (self.to_plot(self.lo), self.to_plot(self.hi))
    }

    /// Labelled ticks, in data units.
    pub fn ticks(&self) -> Vec<f64> {
        match self.scale {
            Scale::Linear => {
                let first = (self.lo / self.step - 1e-9).ceil() as i64;
                let last = (self.hi / self.step + 1e-9).floor() as i64;
                (first..=last).map(|k| k as f64 * self.step).collect()
            }
            Scale::Log => {
                let decades = (self.hi / self.lo).log10();
                let mantissas: &[f64] = if decades <= 2.5 { &[1.0, 2.0, 5.0] } else { &[1.0] };
                self.log_points(mantissas)
            }
        }
    }

    /// Unlabelled grid lines between the ticks.
    pub fn minor_ticks(&self) -> Vec<f64> {
        match self.scale {
            Scale::Linear => {
                let step = self.step / 2.0;
                let first = (self.lo / step - 1e-9).ceil() as i64;
                let last = (self.hi / step + 1e-9).floor() as i64;
                (first..=last).map(|k| k as f64 * step).collect()
            }
            Scale::Log => self.log_points(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]),
        }
    }

    fn log_points(&self, mantissas: &[f64]) -> Vec<f64> {
        let mut out = Vec::new();
        let first = self.lo.log10().floor() as i32;
        let last = self.hi.log10().ceil() as i32;
        for exponent in first..=last {
            for m in mantissas {
                let v = m * 10f64.powi(exponent);
                if v >= self.lo * (1.0 - 1e-9) && v <= self.hi * (1.0 + 1e-9) {
                    out.push(v);
                }
            }
        }
        out
    }

    /// The plotters coordinate: plot-space range with our ticks as key points.
    pub fn coord(&self) -> PlotRange {
        let (lo, hi) = self.plot_limits();
        PlotRange {
            lo,
            hi,
            major: self.ticks().iter().map(|&v| self.to_plot(v)).collect(),
            minor: self.minor_ticks().iter().map(|&v| self.to_plot(v)).collect(),
        }
    }

    /// A tick label: "0.5", "20", "1000", "1e-5".
    pub fn label(&self, value: f64) -> String {
        match self.scale {
            Scale::Linear => {
                let decimals = (-self.step.log10().floor()).max(0.0) as usize;
                format!("{value:.decimals$}")
            }
            Scale::Log => format_log_tick(value),
        }
    }
}

/// A plot-space coordinate for plotters: linear from `lo` to `hi`, ticks and grid lines
/// where [`Axis`] put them.
#[derive(Debug, Clone)]
pub struct PlotRange {
    lo: f64,
    hi: f64,
    major: Vec<f64>,
    minor: Vec<f64>,
}

impl Ranged for PlotRange {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let t = ((value - self.lo) / (self.hi - self.lo)).clamp(-4.0, 5.0);
        let t = if t.is_finite() { t } else { 0.0 };
        limit.0 + (t * (limit.1 - limit.0) as f64).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            self.minor.clone()
        } else {
            self.major.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }
}

/// "1000", "2", "0.5", "0.01", "1e-5", "2e-6".
pub fn format_log_tick(value: f64) -> String {
    if value >= 0.01 {
        let s = format!("{value:.2}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        let exponent = value.log10().floor();
        let mantissa = (value / 10f64.powf(exponent)).round();
        if mantissa == 1.0 {
            format!("1e{exponent}")
        } else {
            format!("{mantissa}e{exponent}")
        }
    }
}

/// Finite limits with hi > lo (a single value gets a unit-wide range around it).
fn sane(lo: f64, hi: f64, default_lo: f64, default_hi: f64) -> (f64, f64) {
    match (lo.is_finite(), hi.is_finite()) {
        (true, true) if hi > lo => (lo, hi),
        (true, true) => {
            let pad = (lo.abs() * 0.1).max(1.0);
            (lo - pad, lo + pad)
        }
        _ => (default_lo, default_hi),
    }
}

/// The 1-2-5 step at or above `raw`.
fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let magnitude = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * magnitude).find(|&s| s >= raw * (1.0 - 1e-9)).unwrap_or(10.0 * magnitude)
}

/// The 1-2-5 value at or below (`up` false) or at or above (`up` true) `value` > 0.
fn round_125(value: f64, up: bool) -> f64 {
    let magnitude = 10f64.powf(value.log10().floor());
    let candidates = [1.0, 2.0, 5.0, 10.0].map(|m| m * magnitude);
    if up {
        candidates.into_iter().find(|&c| c >= value * (1.0 - 1e-9)).unwrap_or(10.0 * magnitude)
    } else {
        candidates.into_iter().rev().find(|&c| c <= value * (1.0 + 1e-9)).unwrap_or(magnitude)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_axes_have_round_limits_and_ticks() {
        let a = Axis::linear(1.5, 37.2);
        assert_eq!((a.lo, a.hi), (0.0, 40.0));
        assert_eq!(a.ticks(), vec![0.0, 10.0, 20.0, 30.0, 40.0]);
        let zoom = Axis::fixed(98.0, 100.0);
        assert_eq!(zoom.ticks(), vec![98.0, 98.5, 99.0, 99.5, 100.0]);
        assert_eq!(zoom.label(98.5), "98.5");
    }

    #[test]
    fn log_axes_have_125_limits() {
        let a = Axis::log(1.5, 2936.6);
        assert_eq!((a.lo, a.hi), (1.0, 5000.0));
        assert_eq!(a.ticks(), vec![1.0, 10.0, 100.0, 1000.0]);
        let narrow = Axis::log(3.0, 70.0);
        assert_eq!(narrow.ticks(), vec![2.0, 5.0, 10.0, 20.0, 50.0, 100.0]);
        assert!((a.to_plot(100.0) - 2.0).abs() < 1e-12);
        assert!((a.from_plot(3.0) - 1000.0).abs() < 1e-9);
    }

    #[test]
    fn auto_picks_log_for_long_tails() {
        assert!(Axis::auto(2.0, 3000.0).is_log());
        assert!(!Axis::auto(2.0, 30.0).is_log());
        assert!(!Axis::auto(0.0, 3000.0).is_log());
    }

    #[test]
    fn degenerate_input_gives_an_axis() {
        for (lo, hi) in [(5.0, 5.0), (f64::NAN, 1.0), (3.0, 1.0), (0.0, 0.0)] {
            let a = Axis::linear(lo, hi);
            assert!(a.hi > a.lo, "{lo} {hi}: {a:?}");
            let l = Axis::log(lo, hi);
            assert!(l.hi > l.lo && l.lo > 0.0, "{lo} {hi}: {l:?}");
        }
    }

    #[test]
    fn tick_labels() {
        assert_eq!(format_log_tick(1e-5), "1e-5");
        assert_eq!(format_log_tick(2e-6), "2e-6");
        assert_eq!(format_log_tick(0.1), "0.1");
        assert_eq!(format_log_tick(1000.0), "1000");
        assert_eq!(format_log_tick(0.5), "0.5");
    }
}
