//! "Long enough?": the stop rule of `rtlab run --until converged[:STATISTIC]`.
//!
//! A percentile's 95 % interval is the distribution-free order-statistic interval: among n
//! samples, the ranks `n q ∓ z √(n q (1 − q))` (the normal approximation of the binomial
//! count of samples below the true quantile) bound it, whatever the distribution. Its
//! half-width, relative to the estimate, shrinks as 1/√n; that scaling turns a half-width now
//! into the time still needed. A pWCET's interval is its EVT fit's (bootstrap) interval, and
//! counts only when the fit's diagnostics pass (the analysis is defensible).
//!
//! A run converges when the half-width has stayed at or below the target in each of the last
//! [`WINDOWS_REQUIRED`] windows: one lucky window does not stop it. [`Exceedance`] says how
//! many samples a percentile needs to mean more than the maximum; this makes it a decision.
//!
//! [`Exceedance`]: crate::exceedance::Exceedance

use crate::exceedance::format_interval;
use crate::requirement::Statistic;
use crate::summary::nearest_rank;
use crate::{LatencyHistogram, Moments};
use serde::{Deserialize, Serialize};

/// The default statistic: the main metric's p99.99.
pub const DEFAULT_STATISTIC: Statistic = Statistic::Percentile(99.99);
/// The default target: a relative 95 % half-width of 5 %.
pub const DEFAULT_TARGET: f64 = 0.05;
/// Consecutive windows whose half-width must be at or below the target.
pub const WINDOWS_REQUIRED: usize = 3;
/// The per-activation probability of `converged:pwcet` without one.
pub const DEFAULT_PWCET_PROBABILITY: f64 = 1e-9;
/// z of a two-sided 95 % interval.
const Z95: f64 = 1.959_963_984_540_054;

/// The statistic a stop rule may watch: a percentile or a pWCET (max and mean are refused:
/// a maximum has no interval that shrinks with n).
pub fn parse_stop_statistic(text: &str) -> Result<Statistic, String> {
    let text = text.trim();
    if text == "pwcet" {
        return Ok(Statistic::Pwcet(DEFAULT_PWCET_PROBABILITY));
    }
    match crate::requirement::parse_statistic(text)? {
        s @ (Statistic::Percentile(_) | Statistic::Pwcet(_)) => Ok(s),
        other => Err(format!(
            "{other} has no interval that narrows with more samples; use a percentile (p99.99) or pwcet[(P)]"
        )),
    }
}

/// A statistic's value and 95 % interval, ns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    pub value_ns: f64,
    pub low_ns: f64,
    /// None: the upper bound lies beyond the largest sample (too few samples above it).
    pub high_ns: Option<f64>,
}

impl Interval {
    /// Half the interval's width relative to the value (0.031 = ±3.1 %); None when the
    /// interval is open above or the value is not positive.
    pub fn half_width(&self) -> Option<f64> {
        let high = self.high_ns?;
        (self.value_ns > 0.0).then(|| (high - self.low_ns) / 2.0 / self.value_ns)
    }

    pub fn contains(&self, value_ns: f64) -> bool {
        value_ns >= self.low_ns && self.high_ns.is_none_or(|h| value_ns <= h)
    }
}

/// The 1-based ranks bounding quantile `q` among `n` samples at 95 %: (low, high), high None
/// when it is beyond n. Widened outward to whole ranks.
pub fn rank_interval(q: f64, n: u64) -> Option<(u64, Option<u64>)> {
    if n == 0 {
        return None;
    }
    let nf = n as f64;
    let spread = Z95 * (nf * q * (1.0 - q)).sqrt();
    let low = (nf * q - spread).floor().max(1.0) as u64;
    let high = (nf * q + spread).ceil() + 1.0;
    Some((low.min(n), (high <= nf).then_some(high as u64)))
}

/// Fewest samples for which the upper rank of quantile `q` exists.
pub fn samples_for_upper_bound(q: f64) -> u64 {
    let open = |n: u64| rank_interval(q, n).is_some_and(|(_, h)| h.is_none());
    // The smallest n whose upper rank exists, by bisection (open for small n, closed beyond).
    let (mut lo, mut hi) = (1u64, 2u64);
    while open(hi) {
        lo = hi;
        hi = hi.saturating_mul(2);
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if open(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

/// The bucket holding a 1-based rank of the histogram: (lowest, highest) value equivalent to
/// it, clamped to the exact extremes. An interval's ends are taken outward (low from the
/// lowest, high from the highest), so the histogram's precision never narrows it.
pub fn bucket_at_rank(histogram: &LatencyHistogram, moments: &Moments, rank: u64) -> Option<(i64, i64)> {
    let (min, max) = (moments.min()?, moments.max()?);
    let hdr = histogram.hdr();
    let mut cumulative = histogram.below_zero();
    if rank <= cumulative {
        return Some((min, min.max(0).min(max)));
    }
    for bucket in hdr.iter_recorded() {
        cumulative += bucket.count_at_value();
        if cumulative >= rank {
            let v = bucket.value_iterated_to();
            let clamp = |x: u64| (x as i64).clamp(min, max);
            return Some((clamp(hdr.lowest_equivalent(v)), clamp(hdr.highest_equivalent(v))));
        }
    }
    Some((max, max))
}

/// Percentile `percent` (99.99) of one distribution with its order-statistic interval; the
/// value as [`crate::percentile`] gives it (the highest value of its bucket).
pub fn percentile_interval(histogram: &LatencyHistogram, moments: &Moments, percent: f64) -> Option<Interval> {
    let q = percent / 100.0;
    let n = moments.count;
    let (low, high) = rank_interval(q, n)?;
    let at = |rank| bucket_at_rank(histogram, moments, rank);
    Some(Interval {
        value_ns: at(nearest_rank(q, n))?.1 as f64,
        low_ns: at(low)?.0 as f64,
        high_ns: match high {
            Some(h) => Some(at(h)?.1 as f64),
            None => None,
        },
    })
}

/// One point of the convergence curve: the statistic after `elapsed_s` of measuring.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConvergencePoint {
    pub elapsed_s: f64,
    /// Samples behind the statistic (of the CPU it was worst on; all CPUs for pWCET).
    pub samples: u64,
    pub value_ns: f64,
    pub low_ns: f64,
    /// Absent when the interval is open above.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub high_ns: Option<f64>,
    /// Relative half-width; absent when the interval is open above or the fit not defensible.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub half_width: Option<f64>,
    /// The CPU whose interval was widest (percentiles), absent for pWCET (all CPUs together).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<usize>,
    /// Why the point cannot count (pWCET not defensible, too few samples); absent when it can.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_usable: Option<String>,
}

impl ConvergencePoint {
    /// A percentile point from one CPU's interval.
    pub fn from_interval(elapsed_s: f64, samples: u64, interval: Interval, cpu: Option<usize>) -> Self {
        ConvergencePoint {
            elapsed_s,
            samples,
            value_ns: interval.value_ns,
            low_ns: interval.low_ns,
            high_ns: interval.high_ns,
            half_width: interval.half_width(),
            cpu,
            not_usable: None,
        }
    }

    /// Whether this point is at or below the target.
    pub fn within(&self, target: f64) -> bool {
        self.not_usable.is_none() && self.half_width.is_some_and(|h| h <= target)
    }
}

/// The worst of several CPUs' points (widest interval; an open one is the widest).
pub fn worst(points: impl IntoIterator<Item = ConvergencePoint>) -> Option<ConvergencePoint> {
    let key = |p: &ConvergencePoint| match (&p.not_usable, p.half_width) {
        (Some(_), _) | (None, None) => f64::INFINITY,
        (None, Some(h)) => h,
    };
    points.into_iter().reduce(|a, b| if key(&b) > key(&a) { b } else { a })
}

/// The stop rule's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct StopRule {
    pub metric: String,
    pub statistic: Statistic,
    pub target: f64,
    pub windows_required: usize,
}

impl StopRule {
    /// Whether the curve so far has converged: its last `windows_required` points within target.
    pub fn converged(&self, curve: &[ConvergencePoint]) -> bool {
        curve.len() >= self.windows_required
            && curve[curve.len() - self.windows_required..].iter().all(|p| p.within(self.target))
    }
}

/// The decision of one scenario, as run.json keeps it (`scenarios[].convergence`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Convergence {
    pub metric: String,
    /// "p99.99", "pwcet(1e-9)".
    pub statistic: String,
    /// Relative half-width target (0.05).
    pub target: f64,
    /// `--until`: the run stopped by the rule ("until"); else the answer for the duration a
    /// plain run had ("duration").
    pub mode: String,
    /// With --until: windows that had to be within target, their length and the limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub windows_required: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_duration_s: Option<f64>,
    /// Long enough.
    pub converged: bool,
    /// Seconds measured.
    pub elapsed_s: f64,
    /// The last point's half-width and value (absent when open or not usable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub half_width: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_ns: Option<f64>,
    /// When not converged: about how many more seconds at this rate (1/√n scaling).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub more_s: Option<f64>,
    /// The sentence printed ("long enough for p99.99 (±3.1 %) after 14 min").
    pub answer: String,
    /// The statistic after each window (one point for a plain run).
    pub curve: Vec<ConvergencePoint>,
}

/// How a scenario ended, for the sentence.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Ending {
    /// A plain run: its duration ended.
    Duration,
    /// --until: converged, or reached the limit (s).
    Limit(f64),
    /// SIGINT/SIGTERM.
    Interrupted,
}

/// Seconds more to reach `target` from half-width `h` after `elapsed_s`: n grows with time and
/// the half-width falls as 1/√n, so the total time scales with (h / target)².
pub fn more_seconds(h: f64, target: f64, elapsed_s: f64) -> f64 {
    (elapsed_s * ((h / target).powi(2) - 1.0)).max(0.0)
}

/// "±3.1 %".
pub fn percent_text(h: f64) -> String {
    let p = h * 100.0;
    if p < 10.0 {
        format!("±{p:.1} %")
    } else {
        format!("±{p:.0} %")
    }
}

/// The decision from a curve: converged per the rule (a plain run: its one point within
/// target), the sentence and the time still needed.
pub fn decide(rule: &StopRule, curve: Vec<ConvergencePoint>, elapsed_s: f64, ending: Ending) -> Convergence {
    let statistic = rule.statistic.to_string();
    let last = curve.last().cloned();
    let converged = match ending {
        Ending::Duration => last.as_ref().is_some_and(|p| p.within(rule.target)),
        _ => rule.converged(&curve),
    };
    let when = format_interval(elapsed_s);
    let at = match ending {
        Ending::Duration => format!("after {when}"),
        Ending::Limit(limit) => format!("at the {} limit", format_interval(limit)),
        Ending::Interrupted => format!("when interrupted after {when}"),
    };
    let wanted = percent_text(rule.target);
    let mut more_s = None;
    let answer = match &last {
        _ if converged => {
            let h = last.as_ref().and_then(|p| p.half_width).unwrap_or(rule.target);
            format!("long enough for {statistic} ({}) after {when}", percent_text(h))
        }
        None => format!("not long enough: no {} samples to judge {statistic} {at}", rule.metric),
        Some(p) => match (&p.not_usable, p.half_width) {
            (Some(why), _) => format!("not long enough: {statistic} {why} {at}"),
            (None, Some(h)) if h <= rule.target => format!(
                "not long enough: {statistic} is {} now but not yet for {} windows {at}",
                percent_text(h),
                rule.windows_required
            ),
            (None, Some(h)) => {
                let more = more_seconds(h, rule.target, elapsed_s);
                more_s = Some(more);
                format!(
                    "not long enough: {statistic} still {} (target {wanted}) {at}; about {} more at this rate",
                    percent_text(h),
                    format_interval(more)
                )
            }
            (None, None) => match rule.statistic {
                Statistic::Percentile(percent) => {
                    let needed = samples_for_upper_bound(percent / 100.0);
                    let more = (p.samples > 0).then(|| elapsed_s * (needed as f64 / p.samples as f64 - 1.0).max(0.0));
                    more_s = more;
                    let tail = more
                        .map(|m| format!("; at least {} more at this rate", format_interval(m)))
                        .unwrap_or_default();
                    format!(
                        "not long enough: {statistic} has no upper 95 % bound yet (it needs {} samples per CPU) {at}{tail}",
                        crate::units::thousands(needed)
                    )
                }
                _ => format!("not long enough: {statistic} has no interval yet {at}"),
            },
        },
    };
    let window_s = curve.windows(2).last().map(|w| w[1].elapsed_s - w[0].elapsed_s);
    let until = !matches!(ending, Ending::Duration);
    Convergence {
        metric: rule.metric.clone(),
        statistic,
        target: rule.target,
        mode: if until { "until" } else { "duration" }.into(),
        windows_required: until.then_some(rule.windows_required),
        window_s: window_s.filter(|_| until),
        max_duration_s: match ending {
            Ending::Limit(l) => Some(l),
            _ => None,
        },
        converged,
        elapsed_s,
        half_width: last.as_ref().and_then(|p| p.half_width),
        value_ns: last.as_ref().map(|p| p.value_ns),
        more_s,
        answer,
        curve,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DEFAULT_MAX_NS;

    fn rule(target: f64) -> StopRule {
        StopRule { metric: "timer.latency".into(), statistic: DEFAULT_STATISTIC, target, windows_required: 3 }
    }

    fn point(elapsed_s: f64, h: Option<f64>) -> ConvergencePoint {
        ConvergencePoint {
            elapsed_s,
            samples: (elapsed_s * 1000.0) as u64,
            value_ns: 100_000.0,
            low_ns: 100_000.0 * (1.0 - h.unwrap_or(0.5)),
            high_ns: h.map(|h| 100_000.0 * (1.0 + h)),
            half_width: h,
            cpu: Some(0),
            not_usable: None,
        }
    }

    #[test]
    fn ranks_bracket_the_quantile_and_open_above_for_few_samples() {
        let (low, high) = rank_interval(0.5, 10_000).unwrap();
        assert!(low < 5000 && high.unwrap() > 5000);
        assert_eq!(rank_interval(0.9999, 1000).unwrap().1, None);
        let n = samples_for_upper_bound(0.9999);
        assert!(rank_interval(0.9999, n).unwrap().1.is_some());
        assert!(rank_interval(0.9999, n - 100).unwrap().1.is_none());
        // About six samples above it: the upper rank must exist.
        assert!((40_000..80_000).contains(&n), "{n}");
    }

    #[test]
    fn interval_of_a_uniform_distribution_covers_its_quantile_and_narrows() {
        let mut widths = Vec::new();
        for n in [10_000i64, 1_000_000] {
            let mut h = LatencyHistogram::new(DEFAULT_MAX_NS).unwrap();
            let mut m = Moments::new();
            // Evenly spaced values 1..=n µs·(1/n) spread: exact quantiles.
            for i in 1..=n {
                let v = 1_000 + i * 1_000_000 / n;
                h.record(v);
                m.record(v);
            }
            let i = percentile_interval(&h, &m, 99.0).unwrap();
            assert!(i.contains(1_000.0 + 990_000.0), "{i:?}");
            widths.push(i.half_width().unwrap());
        }
        // 100 times the samples: about a tenth of the width (within the histogram's precision).
        assert!(widths[1] < widths[0] / 5.0, "{widths:?}");
    }

    #[test]
    fn converges_only_after_the_required_windows() {
        let r = rule(0.05);
        let curve = vec![point(10.0, Some(0.2)), point(20.0, Some(0.04)), point(30.0, Some(0.03))];
        assert!(!r.converged(&curve));
        let mut longer = curve.clone();
        longer.push(point(40.0, Some(0.03)));
        assert!(r.converged(&longer));
        let d = decide(&r, longer, 40.0, Ending::Limit(600.0));
        assert!(d.converged);
        assert_eq!(d.answer, "long enough for p99.99 (±3.0 %) after 40 s");
        assert_eq!(d.mode, "until");
        assert_eq!(d.window_s, Some(10.0));
    }

    #[test]
    fn not_long_enough_says_how_much_more() {
        let d = decide(&rule(0.05), vec![point(3600.0, Some(0.18))], 3600.0, Ending::Limit(3600.0));
        assert!(!d.converged);
        // (0.18 / 0.05)² = 12.96: about 12 h more.
        assert_eq!(
            d.answer,
            "not long enough: p99.99 still ±18 % (target ±5.0 %) at the 60 min limit; about 12 h more at this rate"
        );
        assert!((d.more_s.unwrap() - 3600.0 * 11.96).abs() < 1.0);
        let plain = decide(&rule(0.05), vec![point(20.0, None)], 20.0, Ending::Duration);
        assert!(plain.answer.starts_with("not long enough: p99.99 has no upper 95 % bound yet"), "{}", plain.answer);
        assert!(plain.more_s.unwrap() > 0.0);
        assert_eq!(plain.mode, "duration");
        assert_eq!(plain.window_s, None);
        let good = decide(&rule(0.05), vec![point(20.0, Some(0.01))], 20.0, Ending::Duration);
        assert!(good.converged, "a plain run's one point within target is long enough");
    }

    #[test]
    fn stop_statistics() {
        assert_eq!(parse_stop_statistic("p99.9"), Ok(Statistic::Percentile(99.9)));
        assert_eq!(parse_stop_statistic("pwcet"), Ok(Statistic::Pwcet(1e-9)));
        assert_eq!(parse_stop_statistic("pwcet(1e-6)"), Ok(Statistic::Pwcet(1e-6)));
        assert!(parse_stop_statistic("max").is_err());
        assert!(parse_stop_statistic("bogus").is_err());
    }
}
