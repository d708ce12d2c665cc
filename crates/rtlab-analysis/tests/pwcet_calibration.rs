//! The fast version of the pWCET calibration study (the full one is `bench/pwcet-calibration`;
//! the table is in docs/pwcet.md): every family at 200,000 samples, a few replications from
//! fixed seeds, checked against the targets ([`calibration::target_failures`]):
//! - every family answered in at least half the replications: the median signed relative
//!   error of pWCET(1e-9), over the replications that give a number, within −10 % to +35 %;
//! - every family: in at least 90 % of the replications the 95 % interval covers the truth or
//!   the pWCET is refused with its reason;
//! - the stretched exponential (Weibull shape 0.5), which no analysis of its exceedances can
//!   tell from a heavy tail: refused in at least 80 % of the replications because the tail's
//!   type is not settled (its GPD pWCET is about twice the truth);
//! - bounded families (reversed Weibull, Beta): at most 10 % refused — a bounded tail gives a
//!   number — also at 20,000 samples;
//! - exponential and Gumbel: median |relative error| ≤ 5 %;
//! - exponential, Gumbel, lognormal σ_log 0.3, reversed Weibull: 5th percentile of the signed
//!   relative error ≥ −10 %;
//!
//! and the structure of every estimate (finite, ci_low ≤ value ≤ ci_high, a refusal has a
//! reason, no analysis failed). A family that cannot meet a target is listed in
//! [`DOCUMENTED_LIMITS`] with the section of docs/pwcet.md that says so; the test then checks
//! that it still misses it, so the list stays true.
//! `cargo test -p rtlab-analysis --test pwcet_calibration -- --nocapture` prints the table.

#[path = "support/calibration.rs"]
mod calibration;

use calibration::{markdown_table, notes, study, target_failures, Family, Summary, TARGET_SAMPLES};

/// Replications per family: what fits in about a minute on 2 CPUs (rtlab-analysis is optimised
/// in the dev profile, see the workspace Cargo.toml).
const REPLICATIONS: usize = 50;
const SEED: u64 = 19;
/// The bounded families are also run at this size: the fewer exceedances make the bounded
/// model harder to accept, and it must still give a number.
const SMALL_SAMPLES: usize = 20_000;

/// Targets a family is allowed to miss (the start of the miss's text), each with where
/// docs/pwcet.md documents the limit. Every other target of that family is still asserted.
const DOCUMENTED_LIMITS: &[(Family, &str, &str)] = &[];

/// The refusal a stretched-exponential tail must get, and in how many of the replications.
const TAIL_TYPE_REASON: &str = "the tail's type is not settled";
const MIN_STRETCHED_REFUSED: f64 = 0.8;

fn check(s: &Summary, failures: &mut Vec<String>) {
    let name = format!("{}, {} samples", s.family.name(), s.samples);
    failures.extend(s.errors.iter().map(|e| format!("{name}: analysis failed: {e}")));
    failures.extend(s.violations.iter().map(|v| format!("{name}: {v}")));
    if !(s.truth_ns.is_finite() && s.truth_ns > 0.0) {
        failures.push(format!("{name}: the truth {} is not a positive number", s.truth_ns));
    }
    if s.family == Family::WeibullStretched {
        let refused: usize =
            s.reasons.iter().filter(|(reason, _)| reason.starts_with(TAIL_TYPE_REASON)).map(|(_, n)| n).sum();
        if (refused as f64) < MIN_STRETCHED_REFUSED * s.analysed as f64 {
            failures.push(format!(
                "{name}: refused because the tail's type is not settled in {refused} of {} replications, fewer than {:.0} %",
                s.analysed,
                100.0 * MIN_STRETCHED_REFUSED
            ));
        }
    }
    let missed = target_failures(s);
    let limits = || DOCUMENTED_LIMITS.iter().filter(|(f, _, _)| *f == s.family && s.samples == TARGET_SAMPLES);
    for (family, target, doc) in limits() {
        if !missed.iter().any(|m| m.starts_with(target)) {
            failures.push(format!(
                "{name} meets its {target} target now: remove it from DOCUMENTED_LIMITS ({family:?}) and update {doc}"
            ));
        }
    }
    let allowed = |m: &String| limits().any(|(_, target, _)| m.starts_with(target));
    failures.extend(missed.iter().filter(|m| !allowed(m)).map(|m| format!("{name}: {m}")));
}

#[test]
fn pwcet_calibration_meets_the_targets() {
    let mut summaries = study(&Family::ALL, &[TARGET_SAMPLES], REPLICATIONS, SEED, 2);
    let bounded: Vec<Family> = Family::ALL.into_iter().filter(|f| f.bounded()).collect();
    summaries.extend(study(&bounded, &[SMALL_SAMPLES], REPLICATIONS, SEED, 2));
    let table = markdown_table(&summaries);
    println!("{table}\n{}", notes(&summaries));

    let mut failures = Vec::new();
    for s in &summaries {
        if s.samples == TARGET_SAMPLES {
            check(s, &mut failures);
        } else {
            // At 20,000 samples only the bounded tails' number is asserted (and the structure).
            let name = format!("{}, {} samples", s.family.name(), s.samples);
            failures.extend(s.errors.iter().map(|e| format!("{name}: analysis failed: {e}")));
            failures.extend(s.violations.iter().map(|v| format!("{name}: {v}")));
            failures.extend(
                target_failures(s).into_iter().filter(|m| m.starts_with("bounded")).map(|m| format!("{name}: {m}")),
            );
        }
    }
    assert!(failures.is_empty(), "{}\n\n{table}", failures.join("\n"));
}
