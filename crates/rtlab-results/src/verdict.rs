//! The verdict saved in run.json (`verdict`): each requirement judged against every
//! scenario of every run, with the evidence behind it. `rtlab-report` judges; this is the
//! record of the judgement.

use rtlab_analysis::requirement::Requirement;
use rtlab_analysis::units::{format_period, format_us};
use serde::{Deserialize, Serialize};

/// All requirements against all configurations; `met` only if every check is met.
///
/// Three outcomes ([`Outcome`]): MET when every check is met; NOT MET when some check failed;
/// UNDECIDED when none failed but some could not be decided (a `pwcet(P)` whose pWCET is not
/// defensible from the run). `met` is false for both of the latter: a reader of `met` alone
/// treats an undecided verdict as not met, which is safe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub met: bool,
    /// No check failed but some are undecided (then `met` is false). Absent in run.json files
    /// written before it existed: false.
    #[serde(default)]
    pub undecided: bool,
    pub checks: Vec<Check>,
    /// Environment caveats that qualify the verdict (VM, not PREEMPT_RT, no RT privilege,
    /// too few samples for the percentile, interrupted run, load failure...).
    pub caveats: Vec<String>,
    /// One sentence for people: "NOT MET: timer.latency max was 5555.3 µs under mixed,
    /// 5055.3 µs above the 500 µs bound."
    pub summary: String,
}

/// One requirement against one configuration (run label + scenario).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    pub requirement: Requirement,
    pub run_label: String,
    pub scenario: String,
    /// None when the metric was not measured in this configuration (then `met` is false).
    pub measured_ns: Option<i64>,
    /// bound - measured: positive = headroom, negative = exceeded by.
    pub margin_ns: Option<i64>,
    pub met: bool,
    /// Why the check could not be decided, when it could not: the pWCET's refusal ("not
    /// defensible from this run — <reasons>; <remedies>"). Then `met` is false and
    /// `measured_ns` and `margin_ns` are null: the estimate is not quoted. Absent in run.json
    /// files written before it existed: null.
    #[serde(default)]
    pub undecided: Option<String>,
    /// `measured_ns` is a lower bound: the statistic lies beyond the source's histogram
    /// (censored data), so the check can fail but never pass. Absent when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lower_bound: bool,
    /// Evidence: samples of the metric (all CPUs), seconds measured.
    pub samples: u64,
    pub duration_s: f64,
    /// Samples above the bound, counted from the histogram (within its precision).
    pub samples_above_bound: u64,
    /// Expected wall time between samples above the bound at the observed sample rate;
    /// None when no sample was above it.
    pub exceedance_interval_s: Option<f64>,
    /// Why this check cannot be trusted far, e.g. "p99.999 from 20,000 samples is the max".
    pub notes: Vec<String>,
}

/// What a verdict or a check says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Met,
    NotMet,
    /// Neither met nor failed: the evidence does not allow a decision (a pWCET that is not
    /// defensible from the run). The exit code is that of NOT MET.
    Undecided,
}

impl Outcome {
    /// "MET", "NOT MET", "UNDECIDED".
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Met => "MET",
            Outcome::NotMet => "NOT MET",
            Outcome::Undecided => "UNDECIDED",
        }
    }
}

impl Check {
    /// "timer.latency max": what the check measured.
    pub fn what(&self) -> String {
        format!("{} {}", self.requirement.metric, self.requirement.statistic)
    }

    /// Met, failed, or undecided (not met with a reason why it could not be decided).
    pub fn outcome(&self) -> Outcome {
        match (self.met, &self.undecided) {
            (true, _) => Outcome::Met,
            (false, Some(_)) => Outcome::Undecided,
            (false, None) => Outcome::NotMet,
        }
    }
}

impl Verdict {
    /// The verdict of `checks`: met when there is at least one check and every one is met;
    /// not met when some check failed (or there is none); else undecided. The summary names
    /// the worst failed check, or the first undecided one, or the closest met one.
    pub fn from_checks(checks: Vec<Check>, caveats: Vec<String>) -> Verdict {
        let failed = checks.is_empty() || checks.iter().any(|c| c.outcome() == Outcome::NotMet);
        let undecided = !failed && checks.iter().any(|c| c.outcome() == Outcome::Undecided);
        let met = !failed && !undecided;
        let summary = summarize(&checks);
        Verdict { met, undecided, checks, caveats, summary }
    }

    /// MET, NOT MET or UNDECIDED.
    pub fn outcome(&self) -> Outcome {
        match (self.met, self.undecided) {
            (true, _) => Outcome::Met,
            (false, true) => Outcome::Undecided,
            (false, false) => Outcome::NotMet,
        }
    }

    /// Several verdicts (saved with different runs) as one; None for none.
    pub fn combine(verdicts: &[&Verdict]) -> Option<Verdict> {
        match verdicts {
            [] => None,
            [one] => Some((*one).clone()),
            many => {
                let checks = many.iter().flat_map(|v| v.checks.iter().cloned()).collect();
                let mut caveats: Vec<String> = Vec::new();
                for c in many.iter().flat_map(|v| &v.caveats) {
                    if !caveats.contains(c) {
                        caveats.push(c.clone());
                    }
                }
                Some(Verdict::from_checks(checks, caveats))
            }
        }
    }

    /// "MET", "NOT MET" or "UNDECIDED".
    pub fn word(&self) -> &'static str {
        self.outcome().word()
    }
}

/// A bound as people write it ("500 µs", "2 ms", "1.5 s") when that is exact, else in µs
/// with one decimal ("2881.8 µs").
fn bound_for_people(ns: i64) -> String {
    let exact = if ns >= 1_000_000 { ns % 100_000 == 0 } else { ns % 1_000 == 0 };
    if exact {
        format_period(ns)
    } else {
        format!("{} µs", format_us(ns))
    }
}

/// The one sentence of a verdict: the worst failed check (not measured, else the smallest
/// margin); without one, the first undecided check and why; else the closest met one.
fn summarize(checks: &[Check]) -> String {
    if checks.is_empty() {
        return "NOT MET: nothing was measured to check the requirements against.".into();
    }
    let of = |outcome: Outcome| checks.iter().filter(move |c| c.outcome() == outcome);
    let (failed, undecided) = (of(Outcome::NotMet).count(), of(Outcome::Undecided).count());
    let many_runs = checks.iter().any(|c| c.run_label != checks[0].run_label);
    let place = |c: &Check| {
        if many_runs {
            format!("under {} in run {}", c.scenario, c.run_label)
        } else {
            format!("under {}", c.scenario)
        }
    };
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    if failed == 0 {
        if let Some(first) = of(Outcome::Undecided).next() {
            let count = if undecided > 1 {
                format!("{undecided} of {} checks undecided; the first: ", checks.len())
            } else {
                String::new()
            };
            let why = first.undecided.as_deref().unwrap_or("it could not be decided").trim_end_matches('.');
            return format!("UNDECIDED: {count}{} {}: {why}.", first.what(), place(first));
        }
    }
    let met = failed == 0;
    // The worst of the failed checks, or the closest of the met ones.
    let judged = if met { of(Outcome::Met) } else { of(Outcome::NotMet) };
    // Not empty: a check failed, or every one was met.
    let worst = judged.min_by_key(|c| c.margin_ns.unwrap_or(i64::MIN)).unwrap_or(&checks[0]);
    let count = if met {
        format!("all {} check{} passed; ", checks.len(), plural(checks.len()))
    } else {
        let undecided = if undecided > 0 { format!(", {undecided} undecided") } else { String::new() };
        format!("{failed} of {} check{} failed{undecided}; ", checks.len(), plural(checks.len()))
    };
    let place = place(worst);
    let bound = bound_for_people(worst.requirement.bound_ns);
    let word = if met { "MET" } else { "NOT MET" };
    match (worst.measured_ns, worst.margin_ns) {
        (Some(measured), Some(margin)) => {
            let relation = match margin {
                m if m > 0 => format!("{} µs below the {bound} bound", format_us(m)),
                0 => format!("equal to the {bound} bound"),
                m => format!("{} µs above the {bound} bound", format_us(-m)),
            };
            let closest = if met { "the closest" } else { "the worst" };
            let sign = if worst.lower_bound {
                format!("{} ", rtlab_analysis::censored::LOWER_BOUND_SIGN)
            } else {
                String::new()
            };
            format!(
                "{word}: {count}{closest}: {} was {sign}{} µs {place}, {relation}.",
                worst.what(),
                format_us(measured)
            )
        }
        _ if worst.samples > 0 => format!(
            "{word}: {count}{} could not be estimated {place}: {}.",
            worst.what(),
            worst.notes.first().map_or("see its notes", |n| n.trim_end_matches('.'))
        ),
        _ => format!("{word}: {count}{} has no samples {place}.", worst.requirement.metric),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_for_people() {
        assert_eq!(bound_for_people(500_000), "500 µs");
        assert_eq!(bound_for_people(2_000_000), "2 ms");
        assert_eq!(bound_for_people(1_500_000_000), "1.5 s");
        assert_eq!(bound_for_people(2_881_799), "2881.8 µs");
        assert_eq!(bound_for_people(1_260), "1.3 µs");
    }

    fn check(text: &str, scenario: &str, measured_ns: Option<i64>, undecided: Option<&str>) -> Check {
        let requirement = rtlab_analysis::requirement::parse_requirement(text).unwrap();
        let margin_ns = measured_ns.map(|m| requirement.bound_ns - m);
        Check {
            met: margin_ns.is_some_and(|m| m > 0),
            requirement,
            run_label: "vm".into(),
            scenario: scenario.into(),
            measured_ns,
            margin_ns,
            undecided: undecided.map(str::to_string),
            lower_bound: false,
            samples: 20_000,
            duration_s: 10.0,
            samples_above_bound: 0,
            exceedance_interval_s: None,
            notes: Vec::new(),
        }
    }

    const REFUSAL: &str = "not defensible from this run — the block maxima are autocorrelated (Ljung-Box p < 0.001); \
                           a longer run under a steady load";

    #[test]
    fn an_undecided_check_without_a_failed_one_makes_the_verdict_undecided() {
        let checks = vec![
            check("timer max < 10ms", "idle", Some(5_000_000), None),
            check("timer pwcet(1e-9) < 500us", "idle", None, Some(REFUSAL)),
        ];
        assert_eq!(checks[0].outcome(), Outcome::Met);
        assert_eq!(checks[1].outcome(), Outcome::Undecided);
        let v = Verdict::from_checks(checks, Vec::new());
        assert!(!v.met && v.undecided, "{v:?}");
        assert_eq!((v.outcome(), v.word()), (Outcome::Undecided, "UNDECIDED"));
        assert_eq!(v.summary, format!("UNDECIDED: timer.latency pwcet(1e-9) under idle: {REFUSAL}."));

        let both = vec![
            check("timer pwcet(1e-9) < 500us", "idle", None, Some(REFUSAL)),
            check("timer pwcet(1e-9) < 500us", "mixed", None, Some("not defensible from this run — too few blocks")),
        ];
        let v = Verdict::from_checks(both, Vec::new());
        assert_eq!(
            v.summary,
            format!("UNDECIDED: 2 of 2 checks undecided; the first: timer.latency pwcet(1e-9) under idle: {REFUSAL}.")
        );
    }

    #[test]
    fn a_failed_check_makes_the_verdict_not_met_whatever_is_undecided() {
        let checks = vec![
            check("timer pwcet(1e-9) < 500us", "idle", None, Some(REFUSAL)),
            check("timer max < 1ms", "idle", Some(4_213_669), None),
        ];
        let v = Verdict::from_checks(checks, Vec::new());
        assert!(!v.met && !v.undecided);
        assert_eq!(v.word(), "NOT MET");
        // The worst is the failed check, not the undecided one (which has no margin either).
        assert_eq!(
            v.summary,
            "NOT MET: 1 of 2 checks failed, 1 undecided; the worst: timer.latency max was 4213.7 µs under idle, \
             3213.7 µs above the 1 ms bound."
        );
    }

    #[test]
    fn a_verdict_saved_before_undecided_existed_loads() {
        let v = Verdict::from_checks(vec![check("timer max < 1ms", "idle", Some(4_213_669), None)], Vec::new());
        let mut json = serde_json::to_value(&v).unwrap();
        json.as_object_mut().unwrap().remove("undecided");
        json["checks"][0].as_object_mut().unwrap().remove("undecided");
        let old: Verdict = serde_json::from_value(json).unwrap();
        assert_eq!(old, v);
        assert_eq!(old.outcome(), Outcome::NotMet);
    }
}
