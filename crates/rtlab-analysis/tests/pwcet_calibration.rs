//! The fast version of the pWCET calibration study of issue 19 (the full one is
//! `bench/pwcet-calibration`; the table is in docs/pwcet.md): every family at 200,000 samples,
//! a few replications from fixed seeds, checked against the targets:
//! - exponential and Gumbel: median |relative error| of pWCET(1e-9) ≤ 5 %;
//! - light tails (exponential, Gumbel, lognormal, bounded): 5th percentile of the signed
//!   relative error ≥ −10 %;
//! - every family: the 95 % interval covers the truth in ≥ 90 % of the replications;
//!
//! and the structure of every estimate (finite, ci_low ≤ value ≤ ci_high, no analysis failed).
//! A family that cannot meet a target is listed in [`DOCUMENTED_LIMITS`] with the section of
//! docs/pwcet.md that says so; the test then checks that it still misses it, so the list stays
//! true. `cargo test -p rtlab-analysis --test pwcet_calibration -- --nocapture` prints the table.

#[path = "support/calibration.rs"]
mod calibration;

use calibration::{markdown_table, notes, study, target_failures, Family, TARGET_SAMPLES};

/// Replications per family: what fits in about a minute on 2 CPUs (rtlab-analysis is optimised
/// in the dev profile, see the workspace Cargo.toml).
const REPLICATIONS: usize = 60;
const SEED: u64 = 19;

/// Targets a family is allowed to miss (the start of the miss's text), each with where
/// docs/pwcet.md documents the limit. Every other target of that family is still asserted.
const DOCUMENTED_LIMITS: &[(Family, &str, &str)] = &[(
    Family::Lognormal,
    "CI coverage",
    "docs/pwcet.md, \"Calibration: Monte Carlo study\", Lognormal: interval coverage",
)];

#[test]
fn pwcet_calibration_meets_the_targets() {
    let summaries = study(&Family::ALL, &[TARGET_SAMPLES], REPLICATIONS, SEED, 2);
    let table = markdown_table(&summaries);
    println!("{table}\n{}", notes(&summaries));

    let mut failures = Vec::new();
    for s in &summaries {
        let name = s.family.name();
        failures.extend(s.errors.iter().map(|e| format!("{name}: analysis failed: {e}")));
        failures.extend(s.violations.iter().map(|v| format!("{name}: {v}")));
        if !(s.truth_ns.is_finite() && s.truth_ns > 0.0) {
            failures.push(format!("{name}: the truth {} is not a positive number", s.truth_ns));
        }
        let missed = target_failures(s);
        for (family, target, doc) in DOCUMENTED_LIMITS.iter().filter(|(f, _, _)| *f == s.family) {
            if !missed.iter().any(|m| m.starts_with(target)) {
                failures.push(format!(
                    "{name} meets its {target} target now: remove it from DOCUMENTED_LIMITS ({family:?}) and update {doc}"
                ));
            }
        }
        let allowed =
            |m: &String| DOCUMENTED_LIMITS.iter().any(|(f, target, _)| *f == s.family && m.starts_with(target));
        failures.extend(missed.iter().filter(|m| !allowed(m)).map(|m| format!("{name}: {m}")));
    }
    assert!(failures.is_empty(), "{}\n\n{table}", failures.join("\n"));
}
