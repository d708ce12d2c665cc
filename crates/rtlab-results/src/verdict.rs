//! The verdict saved in run.json (`verdict`): each requirement judged against every
//! scenario of every run, with the evidence behind it. `rtlab-report` judges; this is the
//! record of the judgement.

use rtlab_analysis::requirement::Requirement;
use rtlab_analysis::units::{format_period, format_us};
use serde::{Deserialize, Serialize};

/// All requirements against all configurations; `met` only if every check is met.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub met: bool,
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

impl Check {
    /// "timer.latency max": what the check measured.
    pub fn what(&self) -> String {
        format!("{} {}", self.requirement.metric, self.requirement.statistic)
    }
}

impl Verdict {
    /// The verdict of `checks`: met when there is at least one check and every one is met;
    /// the summary names the worst check.
    pub fn from_checks(checks: Vec<Check>, caveats: Vec<String>) -> Verdict {
        let met = !checks.is_empty() && checks.iter().all(|c| c.met);
        let summary = summarize(&checks, met);
        Verdict { met, checks, caveats, summary }
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

    /// "MET" or "NOT MET".
    pub fn word(&self) -> &'static str {
        if self.met {
            "MET"
        } else {
            "NOT MET"
        }
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

/// The one sentence of a verdict: the worst check (not measured, else the smallest margin).
fn summarize(checks: &[Check], met: bool) -> String {
    let Some(worst) = checks.iter().min_by_key(|c| c.margin_ns.unwrap_or(i64::MIN)) else {
        return "NOT MET: nothing was measured to check the requirements against.".into();
    };
    let many_runs = checks.iter().any(|c| c.run_label != worst.run_label);
    let place = if many_runs {
        format!("under {} in run {}", worst.scenario, worst.run_label)
    } else {
        format!("under {}", worst.scenario)
    };
    let failed = checks.iter().filter(|c| !c.met).count();
    let count = if met {
        format!("all {} check{} passed; ", checks.len(), if checks.len() == 1 { "" } else { "s" })
    } else {
        format!("{failed} of {} check{} failed; ", checks.len(), if checks.len() == 1 { "" } else { "s" })
    };
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
            format!("{word}: {count}{closest}: {} was {} µs {place}, {relation}.", worst.what(), format_us(measured))
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
}
