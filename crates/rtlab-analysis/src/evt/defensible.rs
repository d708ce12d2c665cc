//! Whether a pWCET can be quoted (docs/pwcet.md, "When the pWCET is refused"). The analysis
//! always fits; this decides whether the number may leave the report's tail section. Reasons
//! to refuse, each with what would help:
//! - a test of independence or stationarity of the block maxima, or of the fit on held-out
//!   data, rejects at the family-wise level: each of the m tests at significance/m
//!   (Bonferroni), so that a run of independent data is refused by chance in at most 5 % of
//!   cases instead of one in four;
//! - no block maxima, or too few to test (fewer than [`MIN_BLOCKS`]);
//! - too few observations behind the chosen fit (fewer than [`MIN_EXCEEDANCES`] exceedances);
//! - a shape beyond [`MAX_DEFENSIBLE_SHAPE`]: a tail that heavy has no variance, and its
//!   extrapolation to 1e-9 spans orders of magnitude;
//! - the chosen GPD (ξ ≥ 0), which passes its held-out tests and is not too heavy, and a
//!   stretched exponential, light in the limit, describe the exceedances equally well and part
//!   by more than a third at 1e-9 (`stretched`): the data do not say which tail type
//!   extrapolates;
//! - an estimate or interval that is not a finite number.

use super::stretched::{TailTypeConflict, MAX_LOG_LIKELIHOOD_GAP};
use super::{Defensibility, Diagnostic, PwcetEstimate, TailModel, MIN_BLOCKS, MIN_EXCEEDANCES};

/// Largest shape ξ of a defensible pWCET: above 1/2 the tail has infinite variance.
pub const MAX_DEFENSIBLE_SHAPE: f64 = 0.5;

pub(crate) struct Evidence<'a> {
    pub diagnostics: &'a [Diagnostic],
    pub goodness_of_fit: &'a [Diagnostic],
    pub model: TailModel,
    pub shape: f64,
    /// Block maxima after merging.
    pub blocks: usize,
    pub exceedances: usize,
    /// Blocks the input held (before merging).
    pub input_blocks: usize,
    /// Seconds per block maximum after merging.
    pub seconds_per_block: f64,
    pub sample_rate_hz: f64,
    pub estimates: &'a [PwcetEstimate],
    pub significance: f64,
    pub tail_type: Option<&'a TailTypeConflict>,
}

fn p_text(p: f64) -> String {
    if p < 0.001 {
        "p < 0.001".into()
    } else {
        format!("p = {p:.3}")
    }
}

pub(crate) fn judge(e: &Evidence) -> Defensibility {
    let mut reasons: Vec<String> = Vec::new();
    let mut remedies: Vec<String> = Vec::new();
    let remedy = |r: String, remedies: &mut Vec<String>| {
        if !remedies.contains(&r) {
            remedies.push(r);
        }
    };
    let tests = e.diagnostics.len() + e.goodness_of_fit.len();
    let level = e.significance / tests.max(1) as f64;
    for d in e.diagnostics.iter().filter(|d| d.p_value < level) {
        let p = p_text(d.p_value);
        if d.test.starts_with("Ljung-Box") {
            reasons.push(format!("the block maxima are autocorrelated (Ljung-Box {p}), so they are not independent"));
            remedy(
                "measure longer under a steady load, so that longer blocks make the maxima independent".into(),
                &mut remedies,
            );
        } else if d.test.starts_with("runs test") {
            reasons.push(format!("the block maxima cluster in time (runs test {p}): a trend or phases of load"));
            remedy(
                "keep the conditions the same for the whole run, or analyse each phase of the load on its own".into(),
                &mut remedies,
            );
        } else {
            reasons.push(format!(
                "the first and second halves of the run differ (Kolmogorov-Smirnov {p}): it is not stationary"
            ));
            remedy(
                "keep the conditions the same for the whole run, or analyse each phase of the load on its own".into(),
                &mut remedies,
            );
        }
    }
    let misfits: Vec<String> = e
        .goodness_of_fit
        .iter()
        .filter(|d| d.p_value < level)
        .map(|d| format!("{} {}", d.test.split(',').next().unwrap_or(&d.test), p_text(d.p_value)))
        .collect();
    if !misfits.is_empty() {
        reasons.push(format!("the fitted tail does not describe held-out data ({})", misfits.join(", ")));
        remedy(
            "look at the QQ and threshold stability plots; a longer run gives the tail model more data".into(),
            &mut remedies,
        );
    }
    if e.input_blocks == 0 {
        reasons.push("the run has no block maxima in time order, so independence could not be tested".into());
        remedy("measure with rtlab, whose run.json keeps the per-second maxima".into(), &mut remedies);
    } else if e.blocks < MIN_BLOCKS {
        reasons.push(format!("only {} block maxima: independence needs at least {MIN_BLOCKS} to be tested", e.blocks));
        remedy(format!("run for at least {:.0} s", (MIN_BLOCKS as f64 * e.seconds_per_block).ceil()), &mut remedies);
    }
    let pot = matches!(e.model, TailModel::Gpd | TailModel::Exponential);
    if pot && e.exceedances < MIN_EXCEEDANCES {
        reasons.push(format!(
            "only {} samples lie above the threshold (at least {MIN_EXCEEDANCES} are needed)",
            e.exceedances
        ));
        let seconds = MIN_EXCEEDANCES as f64 / 0.05 / e.sample_rate_hz.max(f64::MIN_POSITIVE);
        remedy(format!("run for at least {:.0} s", seconds.ceil()), &mut remedies);
    }
    if e.shape > MAX_DEFENSIBLE_SHAPE {
        reasons.push(format!(
            "the tail is too heavy (ξ = {:.2}, above {MAX_DEFENSIBLE_SHAPE}): its extrapolation to rare probabilities spans orders of magnitude",
            e.shape
        ));
        remedy("find and remove the source of the rare large latencies (a --split run or a trace shows it), then measure again".into(), &mut remedies);
    }
    // Two models compared only where the chosen one describes the data and is not refused for
    // its weight anyway: otherwise the comparison says nothing the reasons above do not.
    let fits = misfits.is_empty() && !(e.shape > MAX_DEFENSIBLE_SHAPE);
    if let Some(c) = e.tail_type.filter(|_| fits) {
        let chosen =
            if c.chosen_shape > 0.0 { format!("GPD with ξ = {:.2}", c.chosen_shape) } else { "exponential".into() };
        reasons.push(format!(
            "the tail's type is not settled: the chosen model and a stretched exponential, which is light in the limit, describe the samples above the threshold equally well and part at rare probabilities (the {chosen} and shape {:.2} on {:.0} samples, the stretched exponential's log-likelihood {:+.1} against the GPD's, equal down to −{MAX_LOG_LIKELIHOOD_GAP}; at {:e} they give {:.1} µs and {:.1} µs)",
            c.stretched_shape,
            c.exceedances,
            c.log_likelihood_gap,
            c.probability,
            c.chosen_ns / 1000.0,
            c.stretched_ns / 1000.0,
        ));
        remedy(
            "take the larger of the two as a bound that may be far too loose, or quote a less rare probability where they agree; a longer run separates them only for a tail that is heavy in truth".into(),
            &mut remedies,
        );
    }
    if e.estimates.iter().any(|x| !(x.value_ns.is_finite() && x.ci_low_ns.is_finite() && x.ci_high_ns.is_finite())) {
        reasons.push("an estimate or its confidence interval is not a finite number".into());
    }
    Defensibility { defensible: reasons.is_empty(), reasons, remedies }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diagnostic(test: &str, p: f64) -> Diagnostic {
        Diagnostic { test: test.into(), on: "block maxima".into(), statistic: 1.0, p_value: p, passed: p >= 0.05 }
    }

    fn evidence<'a>(diagnostics: &'a [Diagnostic], shape: f64) -> Evidence<'a> {
        Evidence {
            diagnostics,
            goodness_of_fit: &[],
            model: TailModel::Exponential,
            shape,
            blocks: 100,
            exceedances: 500,
            input_blocks: 100,
            seconds_per_block: 1.0,
            sample_rate_hz: 1000.0,
            estimates: &[],
            significance: 0.05,
            tail_type: None,
        }
    }

    #[test]
    fn a_single_test_at_p_0_02_of_three_does_not_refuse_one_at_0_001_does() {
        let runs = diagnostic("runs test above/below the median", 0.5);
        let halves = diagnostic("Kolmogorov-Smirnov, first vs second half", 0.5);
        let d = [diagnostic("Ljung-Box (20 lags)", 0.02), runs.clone(), halves.clone()];
        assert!(judge(&evidence(&d, 0.0)).defensible, "each of 3 tests at 0.05/3");
        let d = [diagnostic("Ljung-Box (20 lags)", 0.001), runs, halves];
        let j = judge(&evidence(&d, 0.0));
        assert!(!j.defensible);
        assert!(
            j.refusal().unwrap().starts_with("not defensible from this run — the block maxima are autocorrelated"),
            "{j:?}"
        );
        assert!(j.remedies[0].contains("steady load"), "{j:?}");
    }

    #[test]
    fn failed_held_out_tests_make_one_reason() {
        let gof = [
            diagnostic("Kolmogorov-Smirnov, held-out exceedances", 0.001),
            diagnostic("Anderson-Darling, held-out exceedances", 0.0001),
        ];
        let mut e = evidence(&[], 0.0);
        e.goodness_of_fit = &gof;
        let j = judge(&e);
        assert_eq!(
            j.reasons,
            vec!["the fitted tail does not describe held-out data (Kolmogorov-Smirnov p = 0.001, Anderson-Darling p < 0.001)"]
        );
    }

    #[test]
    fn a_tail_type_conflict_refuses_only_a_fit_that_describes_the_data() {
        let conflict = TailTypeConflict {
            chosen_shape: 0.18,
            stretched_shape: 0.34,
            exceedances: 4000.0,
            log_likelihood_gap: 0.9,
            probability: 1e-9,
            chosen_ns: 861_600.0,
            stretched_ns: 546_300.0,
        };
        let mut e = evidence(&[], 0.18);
        e.tail_type = Some(&conflict);
        let j = judge(&e);
        assert!(!j.defensible);
        assert_eq!(j.reasons.len(), 1, "{j:?}");
        assert!(j.reasons[0].starts_with("the tail's type is not settled"), "{j:?}");
        assert!(j.reasons[0].contains("the GPD with ξ = 0.18 and shape 0.34 on 4000 samples"), "{j:?}");
        assert!(j.reasons[0].contains("at 1e-9 they give 861.6 µs and 546.3 µs"), "{j:?}");
        assert!(j.remedies[0].starts_with("take the larger of the two"), "{j:?}");
        // A fit the held-out data reject, or one too heavy to quote, is refused for that alone.
        let gof = [diagnostic("Anderson-Darling, held-out exceedances", 0.0001)];
        e.goodness_of_fit = &gof;
        assert!(!judge(&e).reasons.iter().any(|r| r.starts_with("the tail's type")));
        let mut heavy = evidence(&[], 0.7);
        heavy.tail_type = Some(&conflict);
        assert!(!judge(&heavy).reasons.iter().any(|r| r.starts_with("the tail's type")));
    }

    #[test]
    fn a_heavy_tail_and_too_few_blocks_are_refused_with_what_helps() {
        let mut e = evidence(&[], 0.9);
        e.blocks = 12;
        let j = judge(&e);
        assert_eq!(j.reasons.len(), 2, "{j:?}");
        assert!(j.reasons[0].contains("only 12 block maxima"));
        assert!(j.reasons[1].contains("ξ = 0.90"));
        assert!(j.remedies.iter().any(|r| r == "run for at least 30 s"), "{j:?}");
        assert!(judge(&evidence(&[], 0.5)).defensible, "0.5 itself is the limit");
    }
}
