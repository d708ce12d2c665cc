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
//! - an estimate or interval that is not a finite number.

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
