//! The bisect gate's answer as text (`rtlab gate`, `rtlab run --gate`): one line per
//! statistic with the baseline, the candidate, their ratio, the 95 % interval of the
//! difference, the allowance and the decision; a line per reason the candidate cannot be
//! judged; and a last line with the answer and its exit code. docs/gate.md.

use rtlab_analysis::gate::{Answer, Decision, GateReport, StatisticJudgement};
use rtlab_analysis::units::{format_signed_us, format_us};
use std::fmt::Write;

/// The whole answer, ending in the line `gate: good|bad|cannot judge (exit N): ...`.
pub fn gate_text(report: &GateReport) -> String {
    let mut out = String::new();
    for s in &report.statistics {
        let _ = writeln!(out, "{}", statistic_line(s));
    }
    for problem in &report.candidate_problems {
        let _ = writeln!(out, "  ! candidate: {problem}");
    }
    let _ = writeln!(out, "{}", answer_line(report));
    out
}

fn value(ns: Option<i64>) -> String {
    ns.map_or_else(|| "-".to_string(), |ns| format!("{} µs", format_us(ns)))
}

/// `idle timer.latency p99.9: baseline 2138.1 µs, candidate 3207.2 µs, ratio 1.50, Δ
/// +1069.1 µs (95 % CI +980.3 to +1220.5 µs, allowed +213.8 µs): worse`
pub fn statistic_line(s: &StatisticJudgement) -> String {
    let mut line = format!(
        "{} {} {}: baseline {}, candidate {}",
        s.scenario,
        s.metric,
        s.statistic,
        value(s.baseline_ns),
        value(s.candidate_ns)
    );
    if let Some(ratio) = s.ratio() {
        let _ = write!(line, ", ratio {ratio:.2}");
    }
    if let Some(d) = &s.difference {
        let _ = write!(
            line,
            ", Δ {} µs ({:.0} % CI {} to {} µs, allowed {} µs)",
            format_signed_us(d.difference_ns),
            d.confidence * 100.0,
            format_signed_us(d.low_ns),
            format_signed_us(d.high_ns),
            format_signed_us(s.allowance_ns)
        );
    }
    match &s.decision {
        Decision::CannotJudge(why) => {
            let _ = write!(line, ": cannot judge: {why}");
        }
        decision => {
            let _ = write!(line, ": {}", decision.word());
        }
    }
    line
}

/// `gate: bad (exit 1): ...`: the answer, its exit code for `git bisect run`, and why.
pub fn answer_line(report: &GateReport) -> String {
    let head = format!("gate: {} (exit {})", report.answer.word(), report.answer.exit_code());
    let beyond = format!("by more than {} with 95 % confidence", report.tolerance.text());
    match report.answer {
        Answer::Good => format!("{head}: no statistic of {} is worse than the baseline {beyond}", report.metric),
        Answer::Bad => format!("{head}: worse than the baseline {beyond}: {}", report.reasons().join(", ")),
        Answer::CannotJudge => format!("{head}: {}", report.reasons().join("; ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtlab_analysis::gate::{judge_statistic, Indices, Series, Tolerance, DEFAULT_STATISTICS, DEFAULT_TOLERANCE};
    use rtlab_analysis::{LatencyHistogram, DEFAULT_MAX_NS};

    /// `n` samples 1..=n µs, times `scale`.
    fn uniform(n: i64, scale: f64) -> LatencyHistogram {
        let mut h = LatencyHistogram::new(DEFAULT_MAX_NS).unwrap();
        (1..=n).for_each(|i| h.record((i as f64 * 1000.0 * scale) as i64));
        h
    }

    fn report(candidate: &LatencyHistogram, tolerance: Tolerance, problems: Vec<String>) -> GateReport {
        let base = uniform(20_000, 1.0);
        let series = |h| Series { histogram: h, censoring: None };
        let statistics = DEFAULT_STATISTICS
            .iter()
            .map(|s| {
                judge_statistic(
                    "idle",
                    "timer.latency",
                    *s,
                    &series(&base),
                    &series(candidate),
                    tolerance,
                    Indices { baseline: 0, candidate: 1 },
                )
            })
            .collect();
        GateReport::new("timer.latency", tolerance, statistics, problems)
    }

    #[test]
    fn gate_bad() {
        let r = report(&uniform(20_000, 1.5), DEFAULT_TOLERANCE, Vec::new());
        assert_eq!(r.answer.exit_code(), 1);
        insta::assert_snapshot!("gate_bad", gate_text(&r));
    }

    #[test]
    fn gate_good() {
        let r = report(&uniform(20_000, 1.02), DEFAULT_TOLERANCE, Vec::new());
        assert_eq!(r.answer.exit_code(), 0);
        insta::assert_snapshot!("gate_good", gate_text(&r));
    }

    #[test]
    fn gate_good_within_an_absolute_tolerance() {
        let r = report(&uniform(20_000, 1.002), Tolerance::Absolute(50_000), Vec::new());
        insta::assert_snapshot!("gate_absolute", gate_text(&r));
    }

    #[test]
    fn gate_cannot_judge_too_few_samples() {
        let r = report(&uniform(5_000, 1.0), DEFAULT_TOLERANCE, Vec::new());
        assert_eq!(r.answer.exit_code(), 125);
        insta::assert_snapshot!("gate_too_few", gate_text(&r));
    }

    #[test]
    fn gate_cannot_judge_a_disturbed_candidate() {
        let problems = vec!["steal 12.5 % on CPU 1 in scenario \"idle\", above the limit of 5 %".to_string()];
        let r = report(&uniform(20_000, 1.5), DEFAULT_TOLERANCE, problems);
        assert_eq!(r.answer.exit_code(), 125);
        insta::assert_snapshot!("gate_disturbed", gate_text(&r));
    }
}
