//! The verdict: each requirement judged against every scenario of every run, with the
//! evidence behind it ([`rtlab_results::verdict::Verdict`], saved in run.json "verdict" and
//! shown first in every report).

use crate::digest::combine;
use crate::pwcet::{fit_data, fit_name, format_per_hour, format_probability, TailAnalysis};
use crate::ReportError;
use rtlab_analysis::censored::{Censoring, Figure};
use rtlab_analysis::exceedance::{count_at_or_above, Exceedance};
use rtlab_analysis::requirement::{Requirement, Statistic};
use rtlab_analysis::units::{format_us_f, thousands};
use rtlab_results::run::{Measurement, RunResult};
use rtlab_results::set::{run_warnings, Configuration, ReportSet};
use rtlab_results::verdict::{Check, Verdict};

/// The host distortions that qualify a verdict (the others are in the report's warnings).
pub const CAVEAT_CODES: [&str; 3] = ["virtual-machine", "not-preempt-rt", "no-rt-privilege"];

/// Judges every requirement against every configuration (run × scenario) of `set`.
pub fn judge(set: &ReportSet, requirements: &[Requirement]) -> Result<Verdict, ReportError> {
    let runs: Vec<&RunResult> = set.runs.iter().map(|r| &r.run).collect();
    judge_configurations(&set.configurations(), &runs, requirements)
}

/// Judges every requirement against every scenario of one run (what `rtlab run --require`
/// saves in run.json).
pub fn judge_run(run: &RunResult, requirements: &[Requirement]) -> Result<Verdict, ReportError> {
    judge_configurations(&Configuration::of_run(run), &[run], requirements)
}

fn judge_configurations(
    configurations: &[Configuration],
    runs: &[&RunResult],
    requirements: &[Requirement],
) -> Result<Verdict, ReportError> {
    let mut checks = Vec::new();
    let mut little_evidence = false;
    for requirement in requirements {
        for c in configurations {
            let judged = check(requirement, c, requirements)?;
            little_evidence |= judged.little_evidence;
            checks.push(judged.check);
        }
    }
    let mut caveats: Vec<String> =
        runs.iter().flat_map(|run| run_warnings(run, runs.len() > 1, Some(&CAVEAT_CODES))).collect();
    if little_evidence {
        caveats.push("some checks rest on little evidence: see their notes".into());
    }
    if requirements.is_empty() {
        return Ok(Verdict {
            met: true,
            undecided: false,
            checks,
            caveats,
            summary: "No requirement was given.".into(),
        });
    }
    Ok(Verdict::from_checks(checks, caveats))
}

/// A check and whether its notes qualify it (a thin percentile, an EVT warning), as opposed
/// to notes that only describe it (a pWCET's confidence interval and fit).
struct Judged {
    check: Check,
    little_evidence: bool,
}

fn check(requirement: &Requirement, c: &Configuration, requirements: &[Requirement]) -> Result<Judged, ReportError> {
    let measurements: Vec<&Measurement> = c.run.measurements_of(c.scenario, &requirement.metric).collect();
    // The metric's own window when the scenario also measured other probes.
    let scenario_s = c.scenario_info().map_or(0.0, |s| s.duration_s);
    let duration_s = crate::per_setting::metric_window_s(c.run, scenario_s, &measurements);
    let mut check = Check {
        requirement: requirement.clone(),
        run_label: c.run.label.clone(),
        scenario: c.scenario.to_string(),
        measured_ns: None,
        margin_ns: None,
        met: false,
        undecided: None,
        lower_bound: false,
        samples: 0,
        duration_s,
        samples_above_bound: 0,
        exceedance_interval_s: None,
        notes: Vec::new(),
    };
    let unjudged = |check: Check| Ok(Judged { check, little_evidence: false });
    if measurements.is_empty() {
        check.notes.push(format!("{} was not measured in this configuration", requirement.metric));
        return unjudged(check);
    }
    let all = combine(&measurements)?;
    check.samples = all.row.count;
    let Some(histogram) = all.histogram.filter(|_| all.row.count > 0) else {
        check.notes.push("no samples were taken".into());
        return unjudged(check);
    };
    let mut warned = false;
    // What the sources clipped (censored data): figures beyond it are lower bounds.
    let censoring = all.row.summary.as_ref().and_then(|s| s.censored.clone());
    let measured = match requirement.statistic {
        Statistic::Pwcet(probability) => {
            let config = crate::pwcet::config_for(&requirement.metric, requirements);
            // A censored tail is refused by the tail analysis (no estimate).
            let tail = crate::pwcet::measurements_tail(&measurements, &requirement.metric, &config)?;
            let evidence = tail.as_ref().map(|t| pwcet_evidence(t, probability, config.confidence));
            // Without a quotable estimate the measurements can still decide: samples above
            // the bound at a rate surely above the probability break the requirement.
            let breach = match (&evidence, all.moments.max()) {
                (Some(PwcetEvidence::Estimate { .. }), _) | (_, None) => None,
                (_, Some(max)) => {
                    let above = count_at_or_above(&histogram, &all.moments, requirement.bound_ns);
                    measured_breach(above, all.row.count, probability).then_some((above, max))
                }
            };
            match (evidence, breach) {
                (Some(PwcetEvidence::Estimate { value, notes, warned: evt_warned }), _) => {
                    check.notes.extend(notes);
                    warned = evt_warned;
                    Some(value)
                }
                (evidence, Some((above, max))) => {
                    check.notes.push(format!(
                        "{} of {} samples are at or above the bound: at a rate whose 95 % lower bound ({}) is above {}, \
                         so pwcet({}) is at least the largest sample, {} µs, without any extrapolation",
                        thousands(above),
                        thousands(all.row.count),
                        format_per_hour(BREACH_LOWER_BOUND_ONE / all.row.count as f64),
                        format_probability(probability),
                        format_probability(probability),
                        format_us_f(max as f64)
                    ));
                    match evidence {
                        Some(PwcetEvidence::NotDefensible { refusal, .. }) => {
                            check.notes.push(format!("the estimate itself is {refusal}"))
                        }
                        Some(PwcetEvidence::None(why)) => check.notes.push(why),
                        _ => {}
                    }
                    Some(max)
                }
                (Some(PwcetEvidence::NotDefensible { refusal, notes }), None) => {
                    // Neither met nor failed: the estimate is not quoted. The samples above
                    // the bound are counted all the same (they are measured, not estimated).
                    check.undecided = Some(refusal);
                    check.notes.extend(notes);
                    count_above(&mut check, &histogram, &all.moments, requirement.bound_ns, duration_s);
                    return unjudged(check);
                }
                (Some(PwcetEvidence::None(why)), None) => {
                    // No estimate at all (too little data for any fit): as undecided as a refused one.
                    check.undecided = Some(why);
                    count_above(&mut check, &histogram, &all.moments, requirement.bound_ns, duration_s);
                    return unjudged(check);
                }
                (None, None) => None,
            }
        }
        _ => requirement.measure(&histogram, &all.moments)?,
    };
    let Some(measured) = measured else {
        if check.notes.is_empty() {
            check.notes.push("no samples were taken".into());
        }
        return unjudged(check);
    };
    let bound = requirement.bound_ns;
    let lower_bound =
        censoring.as_ref().and_then(|c| censored_lower_bound(c, requirement.statistic, measured, &all.moments));
    // The source's exact max bounds every percentile from above, clipped or not.
    let exact_max_below_bound = |c: &Censoring| {
        matches!(requirement.statistic, Statistic::Percentile(_))
            && c.exact.iter().any(|e| e == "max")
            && all.moments.max().is_some_and(|max| max < bound)
    };
    let measured = match (lower_bound, &censoring) {
        (Some(at_least), Some(c)) if at_least < bound && exact_max_below_bound(c) => {
            let max = all.moments.max().unwrap_or(at_least);
            check.lower_bound = true;
            check.notes.push(format!(
                "{} lies beyond the source's histogram: at least {} µs, and at most the source's exact max, {} µs, \
                 below the bound",
                requirement.statistic,
                format_us_f(at_least as f64),
                format_us_f(max as f64)
            ));
            check.measured_ns = Some(at_least);
            // The headroom that is certain: from the largest value the statistic can have.
            check.margin_ns = Some(bound - max);
            check.met = true;
            count_above(&mut check, &histogram, &all.moments, bound, duration_s);
            return Ok(Judged { check, little_evidence: true });
        }
        (Some(at_least), Some(c)) if at_least < bound => {
            // Below the bound, yet the true value may lie anywhere above it: neither met nor failed.
            check.undecided = Some(format!(
                "{} lies beyond the source's histogram: it is at least {} µs, but {} of {} samples were clipped at {} µs \
                 and the source kept nothing that tells whether it stays below the {} µs bound",
                requirement.statistic,
                format_us_f(at_least as f64),
                thousands(c.count),
                thousands(all.row.count),
                format_us_f(c.above_ns as f64),
                format_us_f(bound as f64)
            ));
            count_above(&mut check, &histogram, &all.moments, bound, duration_s);
            note_clipped_count(&mut check, c, bound, &all.moments);
            return unjudged(check);
        }
        (Some(at_least), Some(_)) => {
            check.lower_bound = true;
            check.notes.push(format!(
                "{} lies beyond the source's histogram: at least {} µs, already at or above the bound",
                requirement.statistic,
                format_us_f(at_least as f64)
            ));
            at_least
        }
        _ => measured,
    };
    check.measured_ns = Some(measured);
    check.margin_ns = Some(bound - measured);
    check.met = measured < bound;
    count_above(&mut check, &histogram, &all.moments, bound, duration_s);
    if let Some(c) = &censoring {
        note_clipped_count(&mut check, c, bound, &all.moments);
    }
    if let Statistic::Percentile(p) = requirement.statistic {
        let support = Exceedance::new(p / 100.0, measured, all.row.sample_rate_hz, check.samples);
        if let Some(e) = support.filter(|e| !e.is_supported()) {
            check.notes.push(format!(
                "p{p} from {} samples rests on fewer than 10 samples above it ({} needed): here it is close to the max",
                thousands(check.samples),
                thousands(e.samples_for_support)
            ));
        }
        // Percentiles are within 0.1 % (the histogram's precision): too close to call.
        if (measured - bound).abs() as f64 <= measured.abs() as f64 / 1000.0 + 1.0 {
            check.notes.push("the percentile is within the histogram's precision (0.1 %) of the bound".into());
        }
    }
    if all.row.lost > 0 {
        check.notes.push(format!("{} raw samples were lost (the histograms are complete)", thousands(all.row.lost)));
    }
    // A pWCET's notes always describe its estimate; they qualify it only with a warning.
    let little_evidence = match requirement.statistic {
        Statistic::Pwcet(_) => warned || all.row.lost > 0,
        _ => !check.notes.is_empty(),
    };
    Ok(Judged { check, little_evidence })
}

/// The lower bound that `measured` (a statistic of data of which `censoring` was clipped)
/// stands for, when it is one; None when the statistic is exact.
fn censored_lower_bound(
    censoring: &Censoring,
    statistic: Statistic,
    measured: i64,
    moments: &rtlab_analysis::Moments,
) -> Option<i64> {
    let figure = match statistic {
        Statistic::Max => Figure::Max,
        Statistic::Mean => Figure::Mean,
        Statistic::Percentile(p) => Figure::Quantile(p / 100.0),
        // Refused by the tail analysis: a measured breach (the largest sample) is a lower bound too.
        Statistic::Pwcet(_) => return Some(measured),
    };
    censoring.lower_bound_of(figure, measured, moments.max()?)
}

/// Says that the count of samples above a bound beyond the clipping is only a lower bound
/// (unless the source's exact max lies below the bound).
fn note_clipped_count(check: &mut Check, c: &Censoring, bound: i64, moments: &rtlab_analysis::Moments) {
    let below_exact_max = c.exact.iter().any(|e| e == "max") && moments.max().is_some_and(|m| m < bound);
    if bound > c.above_ns && !below_exact_max {
        check.notes.push(format!(
            "the {} samples clipped at {} µs may lie above the bound too: the count above it is a lower bound",
            thousands(c.count),
            format_us_f(c.above_ns as f64)
        ));
    }
}

/// The samples at or above `bound` and the wall time between them.
fn count_above(
    check: &mut Check,
    histogram: &rtlab_analysis::LatencyHistogram,
    moments: &rtlab_analysis::Moments,
    bound: i64,
    duration_s: f64,
) {
    check.samples_above_bound = count_at_or_above(histogram, moments, bound);
    check.exceedance_interval_s =
        (check.samples_above_bound > 0 && duration_s > 0.0).then(|| duration_s / check.samples_above_bound as f64);
}

/// The 95 % lower confidence bound of a Poisson mean when one event was seen, −ln 0.95; for
/// more events the bound is larger, so k/n events give a rate of at least this / n.
const BREACH_LOWER_BOUND_ONE: f64 = 0.051_293_294_387_550_53;

/// Whether `above` of `samples` at or above a bound show, without extrapolation, that one
/// activation exceeds it with probability above `probability`: at least one sample above, and
/// the rate's 95 % lower bound for one event, −ln 0.95 / n, above the probability (then the
/// largest sample is a 95 % lower bound of pwcet(probability)). Conservative for more events.
fn measured_breach(above: u64, samples: u64, probability: f64) -> bool {
    above > 0 && samples > 0 && BREACH_LOWER_BOUND_ONE / samples as f64 > probability
}

/// What a tail analysis says about the pWCET at one probability.
enum PwcetEvidence {
    /// The estimate rounded to ns, with the notes that describe it (confidence interval, fit)
    /// and the analysis' warnings, and whether there were any warnings.
    Estimate { value: i64, notes: Vec<String>, warned: bool },
    /// The analysis was made but its pWCET is not defensible: the refusal ("not defensible
    /// from this run — <reasons>; <remedies>") and notes without the number (the fit, where
    /// the value is shown).
    NotDefensible { refusal: String, notes: Vec<String> },
    /// No estimate, and why.
    None(String),
}

/// The pWCET at `probability` from a tail analysis, when it can be quoted.
fn pwcet_evidence(tail: &TailAnalysis, probability: f64, confidence: f64) -> PwcetEvidence {
    let analysis = match &tail.outcome {
        Ok(a) => a,
        Err(why) => return PwcetEvidence::None(format!("no pWCET: {why}")),
    };
    let fit_note = tail
        .chosen_fit()
        .map(|fit| format!("fit: {} of {}, ξ = {:.3}", fit_name(fit), fit_data(fit, tail.block_seconds()), fit.shape));
    if let Some(refusal) = analysis.defensibility.refusal() {
        let mut notes: Vec<String> = fit_note.into_iter().collect();
        notes.push("the fitted value is in the report's tail section, marked as not defensible".into());
        return PwcetEvidence::NotDefensible { refusal, notes };
    }
    let Some(value) = analysis.pwcet_ns(probability).filter(|v| v.is_finite()) else {
        // A GPD describes only the samples above its threshold: a larger probability is a
        // percentile's question.
        return PwcetEvidence::None(format!(
            "no pWCET: the fitted tail gives no value at {} (it describes rarer events only; a percentile answers \
             this one)",
            format_probability(probability)
        ));
    };
    let mut notes = Vec::new();
    if let Some(e) = tail.estimate(probability) {
        notes.push(format!(
            "pWCET at {} per activation ({} per hour at {} samples/s): {:.0} % confidence interval {} to {} µs",
            format_probability(probability),
            format_per_hour(e.per_hour_probability),
            thousands(tail.sample_rate_hz.round() as u64),
            confidence * 100.0,
            format_us_f(e.ci_low_ns),
            format_us_f(e.ci_high_ns)
        ));
    }
    notes.extend(fit_note);
    notes.extend(analysis.warnings.iter().map(|w| format!("EVT: {}", w.trim_end_matches('.'))));
    let value = value.round().clamp(i64::MIN as f64, i64::MAX as f64) as i64;
    PwcetEvidence::Estimate { value, notes, warned: !analysis.warnings.is_empty() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtlab_analysis::requirement::parse_requirement;

    fn fixture() -> RunResult {
        let text = include_str!("../tests/fixtures/simulated-two-scenarios.run.json");
        serde_json::from_str(text).unwrap()
    }

    fn requirements(texts: &[&str]) -> Vec<Requirement> {
        texts.iter().map(|t| parse_requirement(t).unwrap()).collect()
    }

    #[test]
    fn a_bound_above_every_maximum_is_met() {
        let run = fixture();
        let v = judge_run(&run, &requirements(&["timer max < 5ms"])).unwrap();
        assert!(v.met, "{v:?}");
        assert_eq!(v.checks.len(), 2);
        assert!(v.checks.iter().all(|c| c.samples == 6000 && c.samples_above_bound == 0));
        assert!(v.checks.iter().all(|c| c.exceedance_interval_s.is_none()));
        // The closest check: the loaded scenario's 2.99 ms.
        assert_eq!(
            v.summary,
            "MET: all 2 checks passed; the closest: timer.latency max was 2993.0 µs under cpu:threads=1+proc-read, \
             2007.0 µs below the 5 ms bound."
        );
        assert!(v.caveats.iter().any(|c| c.contains("not real-time results")), "{:?}", v.caveats);
    }

    #[test]
    fn a_bound_below_the_maximum_is_not_met_with_its_evidence() {
        let run = fixture();
        let v = judge_run(&run, &requirements(&["timer max < 500us", "timer p50 < 1ms"])).unwrap();
        assert!(!v.met);
        assert_eq!(v.checks.len(), 4);
        let worst = &v.checks[1];
        assert_eq!(worst.scenario, "cpu:threads=1+proc-read");
        assert_eq!(worst.measured_ns, Some(2_992_961));
        assert_eq!(worst.margin_ns, Some(500_000 - 2_992_961));
        assert!(worst.samples_above_bound > 0);
        let interval = worst.exceedance_interval_s.unwrap();
        assert!((interval - 3.007 / worst.samples_above_bound as f64).abs() < 1e-9);
        assert!(v.checks[2].met && v.checks[3].met, "the median is far below 1 ms");
        assert!(v.summary.starts_with("NOT MET: 2 of 4 checks failed; the worst: timer.latency max was 2993.0 µs"));
        assert!(v.summary.ends_with("2493.0 µs above the 500 µs bound."), "{}", v.summary);
    }

    #[test]
    fn an_unmeasured_metric_fails_and_a_thin_percentile_is_noted() {
        let run = fixture();
        let v = judge_run(&run, &requirements(&["net max < 1ms", "timer p99.999 < 10ms"])).unwrap();
        assert!(!v.met);
        assert!(v.checks[..2].iter().all(|c| c.measured_ns.is_none() && !c.met));
        assert!(v.summary.contains("net.activation has no samples under idle"), "{}", v.summary);
        let p = &v.checks[2];
        assert!(p.met);
        assert!(p.notes.iter().any(|n| n.contains("close to the max")), "{:?}", p.notes);
    }

    /// 300 s at 1 kHz on two CPUs of independent samples with an exponential tail: a
    /// defensible pWCET (tests/synthetic_tails.rs makes it).
    fn light_tail() -> RunResult {
        serde_json::from_str(include_str!("../tests/fixtures/exponential-300s.run.json")).unwrap()
    }

    #[test]
    fn pwcet_is_judged_from_the_tail_analysis() {
        let run = light_tail();
        let v = judge_run(&run, &requirements(&["timer pwcet(1e-9) < 10s", "timer pwcet(1e-9) < 10us"])).unwrap();
        let (met, not_met) = (&v.checks[0], &v.checks[1]);
        let measured = met.measured_ns.expect("an estimate");
        assert_eq!(not_met.measured_ns, Some(measured), "one analysis, one estimate");
        assert!(met.met && !not_met.met);
        assert_eq!(met.margin_ns, Some(10_000_000_000 - measured));
        assert_eq!(not_met.margin_ns, Some(10_000 - measured));
        assert!(!v.met);
        assert!(v.summary.starts_with("NOT MET: 1 of 2 checks failed; the worst: timer.latency pwcet(1e-9) was"));
        // The notes carry the confidence interval and the fit.
        let notes = met.notes.join("\n");
        assert!(notes.contains("pWCET at 1e-9 per activation"), "{notes}");
        assert!(notes.contains("% confidence interval"), "{notes}");
        assert!(notes.contains("fit: "), "{notes}");
        assert_eq!(met.samples, run.measurements_of("idle", "timer.latency").map(|m| m.count).sum::<u64>());
        // Samples above the bound are counted from the histogram as for any statistic.
        assert_eq!(met.samples_above_bound, 0);
        assert!(not_met.samples_above_bound > 0);
    }

    #[test]
    fn a_requirement_probability_outside_the_table_gets_its_interval() {
        let run = light_tail();
        let v = judge_run(&run, &requirements(&["timer pwcet(1e-7) < 10s"])).unwrap();
        let check = &v.checks[0];
        assert!(check.met, "{check:?}");
        assert!(check.notes.iter().any(|n| n.starts_with("pWCET at 1e-7 per activation")), "{:?}", check.notes);
    }

    #[test]
    fn too_little_data_is_undecided_with_the_reason() {
        let mut run = fixture();
        // Two seconds of two CPUs, 4 samples each: too few block maxima and too few samples
        // above any threshold.
        for m in &mut run.measurements {
            let mut h = rtlab_analysis::LatencyHistogram::new(run.experiment.histogram_max_ns).unwrap();
            let mut moments = rtlab_analysis::Moments::new();
            for v in 0..4 {
                h.record(10_000 + v * 100);
                moments.record(10_000 + v * 100);
            }
            m.count = 4;
            m.cycles = 4;
            m.overruns = 0;
            m.summary = rtlab_analysis::Summary::from_parts(&h, &moments);
            m.moments = moments;
            m.histogram = h.encode().unwrap();
            m.per_second_max_ns = vec![Some(10_300), Some(10_200)];
        }
        run.check().unwrap();
        let v = judge_run(&run, &requirements(&["timer pwcet(1e-9) < 10s"])).unwrap();
        let check = &v.checks[0];
        assert!(!check.met && check.measured_ns.is_none());
        assert!(v.undecided, "{v:?}");
        assert_eq!(check.samples, 8);
        let why = check.undecided.as_deref().unwrap_or_default();
        assert!(
            why.starts_with("no pWCET: the tail analysis could not be made: 2 block maxima and"),
            "{:?}",
            check.notes
        );
        assert!(
            v.summary.starts_with(
                "UNDECIDED: 2 of 2 checks undecided; the first: timer.latency pwcet(1e-9) under idle: no pWCET: the tail analysis"
            ),
            "{}",
            v.summary
        );
        // Samples above the bound at a rate surely above 1e-9 decide it without a fit.
        let v = judge_run(&run, &requirements(&["timer pwcet(1e-9) < 10.2us"])).unwrap();
        assert!(!v.met && !v.undecided, "{v:?}");
        let check = &v.checks[0];
        assert_eq!(check.measured_ns, Some(10_300));
        assert!(check.notes[0].starts_with("4 of 8 samples are at or above the bound"), "{:?}", check.notes);
        assert!(
            check.notes[0]
                .ends_with("so pwcet(1e-9) is at least the largest sample, 10.3 µs, without any extrapolation"),
            "{:?}",
            check.notes
        );
        assert!(
            v.summary.starts_with("NOT MET: 2 of 2 checks failed; the worst: timer.latency pwcet(1e-9) was 10.3 µs"),
            "{}",
            v.summary
        );
    }

    #[test]
    fn a_measured_breach_needs_a_rate_surely_above_the_probability() {
        // One sample in 10,000 above: rate ≥ 5.1e-6 at 95 %, so above 1e-9 but not above 1e-3.
        assert!(measured_breach(1, 10_000, 1e-9));
        assert!(!measured_breach(1, 10_000, 1e-3));
        assert!(!measured_breach(0, 10_000, 1e-9));
        assert!(!measured_breach(1, 0, 1e-9));
    }

    #[test]
    fn a_pwcet_that_is_not_defensible_is_not_quoted() {
        let run = light_tail();
        let measurements: Vec<&Measurement> = run.measurements_of("idle", "timer.latency").collect();
        let config = rtlab_analysis::evt::PwcetConfig::default();
        let mut tail = crate::pwcet::measurements_tail(&measurements, "timer.latency", &config).unwrap().unwrap();
        let mut analysis = (*tail.outcome.clone().unwrap()).clone();
        assert!(matches!(pwcet_evidence(&tail, 1e-9, 0.95), PwcetEvidence::Estimate { .. }));
        analysis.defensibility = rtlab_analysis::evt::Defensibility {
            defensible: false,
            reasons: vec!["the first and second halves of the run differ".into()],
            remedies: vec!["keep the conditions the same for the whole run".into()],
        };
        tail.outcome = Ok(std::sync::Arc::new(analysis));
        let PwcetEvidence::NotDefensible { refusal, notes } = pwcet_evidence(&tail, 1e-9, 0.95) else {
            panic!("a refusal");
        };
        assert_eq!(
            refusal,
            "not defensible from this run — the first and second halves of the run differ; keep the conditions the \
             same for the whole run"
        );
        assert!(notes[0].starts_with("fit: "), "{notes:?}");
        assert!(notes.iter().all(|n| !n.contains("confidence interval")), "no number: {notes:?}");
    }

    #[test]
    fn saved_verdicts_combine() {
        let run = fixture();
        let a = judge_run(&run, &requirements(&["timer max < 5ms"])).unwrap();
        let b = judge_run(&run, &requirements(&["timer max < 1ms"])).unwrap();
        let both = Verdict::combine(&[&a, &b]).unwrap();
        assert!(!both.met);
        assert_eq!(both.checks.len(), 4);
        assert_eq!(both.caveats, a.caveats);
        assert_eq!(Verdict::combine(&[]), None);
    }
}
