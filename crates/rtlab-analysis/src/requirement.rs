//! Timing requirements: `<metric> <statistic> < <bound>` (`rtlab run --require`, README.md),
//! e.g. `timer max < 500us`, `net.activation p99.999 < 100us`, and their evaluation against a distribution.

use crate::{percentile, AnalysisError, LatencyHistogram, Moments};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The grammar, quoted in every parse error.
pub const GRAMMAR: &str =
    "expected \"<metric> <statistic> < <bound>\" with statistic max, mean, pNN[.N] or pwcet(P), e.g. \"timer max < 500us\"";

/// Probes and their main metric: a probe name alone stands for it (`timer` = `timer.latency`).
/// The `ipc:<mechanism>` probes' main metric is `ipc:<mechanism>.latency`.
/// `timerlat` and `osnoise` are the metrics of imported rtla histograms.
pub const MAIN_METRICS: [(&str, &str); 9] = [
    ("timer", "timer.latency"),
    ("jitter", "jitter.jitter"),
    ("sleep", "sleep.overshoot"),
    ("net", "net.activation"),
    // Regnier's L_act as the second station measures it, as net's main metric is L_act.
    ("remote", "remote.act"),
    ("switch", "switch.futex"),
    ("sweep", "sweep.latency"),
    ("timerlat", "timerlat.thread"),
    ("osnoise", "osnoise.noise"),
];

/// The metric a name stands for: a probe's main metric for a probe name (`timer` ->
/// `timer.latency`, `ipc:futex` -> `ipc:futex.latency`), anything else as given.
pub fn main_metric_of(name: &str) -> String {
    if name.contains('.') {
        return name.to_string();
    }
    if name.starts_with("ipc:") {
        return format!("{name}.latency");
    }
    MAIN_METRICS.iter().find(|(probe, _)| *probe == name).map_or_else(|| name.to_string(), |(_, m)| m.to_string())
}

/// The mechanisms of the `ipc:<mechanism>` probes.
pub const IPC_MECHANISMS: [&str; 5] = ["eventfd", "pipe", "futex", "mqueue", "signal"];

/// Which figure of a distribution a requirement bounds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Statistic {
    Max,
    Mean,
    /// A percentile, 0 < p < 100 (`p99.999` is 99.999).
    Percentile(f64),
    /// Probabilistic WCET at a per-activation exceedance probability (`pwcet(1e-9)`):
    /// estimated from the tail by extreme value theory ([`crate::evt`]).
    Pwcet(f64),
}

impl fmt::Display for Statistic {
    /// The spelling the grammar accepts: `max`, `mean`, `p99.999`, `pwcet(1e-9)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Statistic::Max => f.write_str("max"),
            Statistic::Mean => f.write_str("mean"),
            Statistic::Percentile(p) => write!(f, "p{p}"),
            Statistic::Pwcet(probability) => write!(f, "pwcet({probability:e})"),
        }
    }
}

impl Statistic {
    /// This statistic of a distribution (histogram + exact moments), in ns: max and mean are
    /// exact, a percentile is the histogram's nearest-rank value (within its precision,
    /// clamped to the exact extremes). None without samples, and for pWCET, which needs the
    /// tail analysis of the measurements, not a histogram.
    pub fn of(&self, histogram: &LatencyHistogram, moments: &Moments) -> Option<i64> {
        let (min, max) = (moments.min()?, moments.max()?);
        match self {
            Statistic::Max => Some(max),
            Statistic::Mean => moments.mean().map(|m| m.round() as i64),
            Statistic::Percentile(p) => percentile(histogram, p / 100.0).map(|v| v.clamp(min, max)),
            Statistic::Pwcet(_) => None,
        }
    }

    /// The quantile (0..1) of a percentile statistic.
    pub fn quantile(&self) -> Option<f64> {
        match self {
            Statistic::Percentile(p) => Some(p / 100.0),
            _ => None,
        }
    }
}

/// One parsed requirement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Requirement {
    /// As written by the user, normalised ("timer.latency max < 500us").
    pub text: String,
    /// Full metric name: a probe name alone means its main metric (`timer` = `timer.latency`).
    pub metric: String,
    pub statistic: Statistic,
    /// The bound in ns; the requirement holds when the statistic is strictly below it.
    pub bound_ns: i64,
}

impl Requirement {
    /// True for a statistic estimated from the distribution's tail by extreme value theory
    /// (`pwcet(P)`): it needs the measurements' block maxima, not only a histogram, so
    /// [`Requirement::measure`] cannot give it; the verdict gets it from
    /// `rtlab_report::pwcet` (the EVT analysis of [`crate::evt`]).
    pub fn needs_tail_analysis(&self) -> bool {
        matches!(self.statistic, Statistic::Pwcet(_))
    }

    /// The statistic of a distribution (histogram + exact moments), in ns: max and mean are
    /// exact, a percentile is the histogram's nearest-rank value (within its precision,
    /// clamped to the exact extremes). None without samples. An error for `pwcet(P)`
    /// ([`Requirement::needs_tail_analysis`]): a histogram alone does not give it.
    pub fn measure(&self, histogram: &LatencyHistogram, moments: &Moments) -> Result<Option<i64>, AnalysisError> {
        if self.needs_tail_analysis() {
            return Err(AnalysisError::Requirement {
                text: self.text.clone(),
                reason: "pwcet is estimated from the tail analysis of the measurements (block maxima), not from a \
                         histogram"
                    .into(),
            });
        }
        Ok(self.statistic.of(histogram, moments))
    }
}

/// A bound in the largest unit that writes it as a whole number: "500us", "2ms", "1500ns".
pub fn format_bound(ns: i64) -> String {
    for (unit, scale) in [("s", 1_000_000_000), ("ms", 1_000_000), ("us", 1_000)] {
        if ns != 0 && ns % scale == 0 {
            return format!("{}{unit}", ns / scale);
        }
    }
    format!("{ns}ns")
}

/// Parses one requirement. Errors are one line, naming what is wrong and the grammar.
pub fn parse_requirement(text: &str) -> Result<Requirement, AnalysisError> {
    let fail =
        |reason: String| AnalysisError::Requirement { text: text.to_string(), reason: format!("{reason}; {GRAMMAR}") };
    if text.contains(['>', '=']) {
        return Err(fail(
            "only \"<\" is allowed: a requirement says the statistic stays strictly below a bound".into(),
        ));
    }
    let (left, bound_text) = match text.split_once('<') {
        Some((_, right)) if right.contains('<') => return Err(fail("more than one \"<\"".into())),
        Some(parts) => parts,
        None => return Err(fail("no \"<\"".into())),
    };
    let mut words = left.split_whitespace();
    let Some(metric_text) = words.next() else { return Err(fail("no metric before \"<\"".into())) };
    // The statistic may contain spaces ("pwcet( 1e-9 )"): everything after the metric.
    let statistic_text: String = words.collect::<Vec<_>>().concat().to_ascii_lowercase();
    if statistic_text.is_empty() {
        return Err(fail(format!("no statistic after the metric {metric_text:?}")));
    }
    let metric = parse_metric(metric_text).map_err(fail)?;
    let statistic = parse_statistic(&statistic_text).map_err(fail)?;
    let bound_text = bound_text.trim();
    if bound_text.is_empty() {
        return Err(fail("no bound after \"<\"".into()));
    }
    let bound = crate::units::parse_time_ns(bound_text).map_err(|e| match e {
        AnalysisError::Duration { reason, .. } => fail(format!("bound {bound_text:?}: {reason}")),
        other => fail(other.to_string()),
    })?;
    if bound == 0 {
        return Err(fail("the bound must be greater than 0".into()));
    }
    let bound_ns = i64::try_from(bound).map_err(|_| fail(format!("bound {bound_text:?} is too large")))?;
    Ok(Requirement { text: format!("{metric} {statistic} < {}", format_bound(bound_ns)), metric, statistic, bound_ns })
}

fn parse_metric(text: &str) -> Result<String, String> {
    let text = text.to_ascii_lowercase();
    let valid_part = |part: &str| {
        !part.is_empty() && part.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ':'))
    };
    match text.split_once('.') {
        Some((probe, metric)) if valid_part(probe) && valid_part(metric) => Ok(text),
        Some(_) => Err(format!("metric {text:?} is not \"probe\" or \"probe.metric\"")),
        None if !valid_part(&text) => Err(format!("metric {text:?} is not \"probe\" or \"probe.metric\"")),
        None => {
            if text.strip_prefix("ipc:").is_some_and(|m| IPC_MECHANISMS.contains(&m)) {
                return Ok(format!("{text}.latency"));
            }
            let main = MAIN_METRICS.iter().find(|(probe, _)| *probe == text).map(|(_, metric)| metric.to_string());
            main.ok_or_else(|| {
                let mut probes: Vec<&str> = MAIN_METRICS.iter().map(|(p, _)| *p).collect();
                probes.push("ipc:<mechanism>");
                format!(
                    "{text:?} is not a probe ({}); name a metric as probe.metric, e.g. timer.latency",
                    probes.join(", ")
                )
            })
        }
    }
}

/// Parses a statistic as the requirement grammar writes it: `max`, `mean`, `pNN[.N]`,
/// `pwcet(P)` (lower case; spaces inside `pwcet( P )` are the caller's to remove).
pub fn parse_statistic(text: &str) -> Result<Statistic, String> {
    match text {
        "max" => return Ok(Statistic::Max),
        "mean" => return Ok(Statistic::Mean),
        _ => {}
    }
    if let Some(inner) = text.strip_prefix("pwcet(").and_then(|rest| rest.strip_suffix(')')) {
        let probability: f64 = inner.parse().map_err(|_| format!("pwcet({inner}): the probability is not a number"))?;
        if !(probability > 0.0 && probability < 1.0) {
            return Err(format!("pwcet({inner}): the probability must be between 0 and 1, e.g. pwcet(1e-9)"));
        }
        return Ok(Statistic::Pwcet(probability));
    }
    if let Some(number) = text.strip_prefix('p') {
        let well_formed = !number.is_empty()
            && number.chars().all(|c| c.is_ascii_digit() || c == '.')
            && !number.starts_with('.')
            && !number.ends_with('.');
        let p: f64 = number
            .parse()
            .ok()
            .filter(|_| well_formed)
            .ok_or_else(|| format!("statistic {text:?}: a percentile is p followed by a number, e.g. p99.9"))?;
        if !(p > 0.0 && p < 100.0) {
            return Err(format!("statistic {text:?}: a percentile lies strictly between p0 and p100 (use max)"));
        }
        return Ok(Statistic::Percentile(p));
    }
    Err(format!("unknown statistic {text:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse(text: &str) -> Requirement {
        parse_requirement(text).unwrap_or_else(|e| panic!("{text:?}: {e}"))
    }

    #[test]
    fn the_design_examples() {
        let r = parse("timer max < 500us");
        assert_eq!(r.metric, "timer.latency");
        assert_eq!(r.statistic, Statistic::Max);
        assert_eq!(r.bound_ns, 500_000);
        assert_eq!(r.text, "timer.latency max < 500us");

        let r = parse("net.activation p99.999 < 100us");
        assert_eq!(r.metric, "net.activation");
        assert_eq!(r.statistic, Statistic::Percentile(99.999));
        assert!((r.statistic.quantile().unwrap() - 0.99999).abs() < 1e-12);
        assert_eq!(r.text, "net.activation p99.999 < 100us");

        let r = parse("timer.jitter mean < 2ms");
        assert_eq!((r.statistic, r.bound_ns), (Statistic::Mean, 2_000_000));

        let r = parse("timer pwcet(1e-9) < 1ms");
        assert_eq!(r.statistic, Statistic::Pwcet(1e-9));
        assert_eq!(r.text, "timer.latency pwcet(1e-9) < 1ms");
    }

    #[test]
    fn a_probe_name_alone_is_its_main_metric() {
        for (probe, metric) in [
            ("jitter", "jitter.jitter"),
            ("sleep", "sleep.overshoot"),
            ("net", "net.activation"),
            ("switch", "switch.futex"),
            ("sweep", "sweep.latency"),
            ("ipc:futex", "ipc:futex.latency"),
            ("ipc:mqueue", "ipc:mqueue.latency"),
        ] {
            assert_eq!(parse(&format!("{probe} max < 1ms")).metric, metric, "{probe}");
        }
        assert_eq!(parse("ipc:pipe.latency p99 < 1ms").metric, "ipc:pipe.latency");
        let unknown = parse_requirement("ipc:smoke max < 1ms").unwrap_err().to_string();
        assert!(unknown.contains("is not a probe"), "{unknown}");
    }

    #[test]
    fn whitespace_is_flexible() {
        for text in ["timer max<500us", "  timer   max  <  500 us ", "timer\tmax\t<\t500us", "TIMER MAX < 500µs"] {
            assert_eq!(parse(text).text, "timer.latency max < 500us", "{text:?}");
        }
        assert_eq!(parse("timer pwcet( 1e-9 ) < 1ms").statistic, Statistic::Pwcet(1e-9));
        assert_eq!(parse("timer p50 < 1.5ms").text, "timer.latency p50 < 1500us");
    }

    #[test]
    fn malformed_requirements_say_what_and_show_the_grammar() {
        let cases = [
            ("", "no \"<\""),
            ("timer max 500us", "no \"<\""),
            ("timer max <= 500us", "only \"<\""),
            ("timer max > 500us", "only \"<\""),
            ("timer max < 500us < 1ms", "more than one"),
            ("< 500us", "no metric"),
            ("timer < 500us", "no statistic"),
            ("timer max <", "no bound"),
            ("timer max < 500", "missing unit"),
            ("timer max < 0us", "greater than 0"),
            ("timer max < fast", "bound"),
            ("timer median < 1ms", "unknown statistic"),
            ("timer p100 < 1ms", "strictly between"),
            ("timer p0 < 1ms", "strictly between"),
            ("timer p < 1ms", "a percentile is p"),
            ("timer p99. < 1ms", "a percentile is p"),
            ("timer p-5 < 1ms", "a percentile is p"),
            ("timer pwcet(2) < 1ms", "between 0 and 1"),
            ("timer pwcet(x) < 1ms", "not a number"),
            ("tmer max < 1ms", "not a probe"),
            ("timer. max < 1ms", "probe.metric"),
            ("ti/mer max < 1ms", "probe.metric"),
        ];
        for (text, expected) in cases {
            let message = parse_requirement(text).expect_err(text).to_string();
            assert!(message.contains(expected), "{text:?}: {message}");
            assert!(message.contains(GRAMMAR), "{text:?}: {message}");
            assert!(!message.contains('\n'), "{text:?}: {message}");
        }
    }

    #[test]
    fn pwcet_is_evaluable_from_the_tail_analysis_only() {
        let r = parse("timer pwcet(1e-9) < 1ms");
        assert!(r.needs_tail_analysis());
        assert!(!parse("timer max < 1ms").needs_tail_analysis());
        assert!(!parse("timer p99.9 < 1ms").needs_tail_analysis());
    }

    #[test]
    fn measures_statistics() {
        let mut h = LatencyHistogram::new(crate::DEFAULT_MAX_NS).unwrap();
        let mut m = Moments::new();
        for v in 1..=1000i64 {
            h.record(v * 1000);
            m.record(v * 1000);
        }
        let at = |text: &str| parse(text).measure(&h, &m).unwrap().unwrap();
        assert_eq!(at("timer max < 1ms"), 1_000_000);
        assert_eq!(at("timer mean < 1ms"), 500_500);
        let p99 = at("timer p99 < 1ms");
        assert!((990_000..=990_000 + 990).contains(&p99), "{p99}");
        assert_eq!(parse("timer max < 1ms").measure(&h, &Moments::new()).unwrap(), None);
        let pwcet = parse("timer pwcet(1e-9) < 1ms").measure(&h, &m).unwrap_err().to_string();
        assert!(pwcet.contains("tail analysis"), "{pwcet}");
    }

    #[test]
    fn bounds_print_in_the_largest_whole_unit() {
        assert_eq!(format_bound(500_000), "500us");
        assert_eq!(format_bound(2_000_000), "2ms");
        assert_eq!(format_bound(1_500), "1500ns");
        assert_eq!(format_bound(3_000_000_000), "3s");
    }

    fn statistic_strategy() -> impl Strategy<Value = Statistic> {
        prop_oneof![
            Just(Statistic::Max),
            Just(Statistic::Mean),
            // Decimal percentiles as people write them: 1 to 99 with up to 5 decimals.
            (1u32..100, 0u32..100_000, 0usize..6).prop_map(|(whole, fraction, digits)| {
                let fraction = fraction % 10u32.pow(digits as u32);
                let text = if digits == 0 { format!("{whole}") } else { format!("{whole}.{fraction:0digits$}") };
                Statistic::Percentile(text.parse().unwrap())
            }),
            (1u32..10, 1i32..15).prop_map(|(m, e)| Statistic::Pwcet(format!("{m}e-{e}").parse().unwrap())),
        ]
    }

    proptest! {
        /// Parsing the normalised text gives the same requirement back.
        #[test]
        fn normalised_text_round_trips(
            metric in prop_oneof![Just("timer".to_string()), "[a-z]{1,8}\\.[a-z_]{1,10}"],
            statistic in statistic_strategy(),
            bound_ns in 1i64..1_000_000_000_000,
            spaces in 0usize..3,
        ) {
            let pad = " ".repeat(spaces);
            let text = format!("{pad}{metric}{pad} {statistic}{pad}<{pad}{bound_ns}ns{pad}");
            let parsed = parse_requirement(&text).unwrap();
            prop_assert_eq!(parsed.statistic, statistic);
            prop_assert_eq!(parsed.bound_ns, bound_ns);
            let again = parse_requirement(&parsed.text).unwrap();
            prop_assert_eq!(again, parsed);
        }

        /// Arbitrary text never panics: it parses or it is a one-line error.
        #[test]
        fn arbitrary_text_never_panics(text in "\\PC{0,40}") {
            if let Err(e) = parse_requirement(&text) {
                prop_assert!(!e.to_string().contains('\n'));
            }
        }
    }
}
