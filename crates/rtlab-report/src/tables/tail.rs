//! The tables of the report's tail section: per metric of [`crate::pwcet::tail_metrics`]
//! (each probe's main metric and the metrics of `pwcet(P)` requirements), every
//! configuration's pWCET with its confidence interval (marked "fitted, not defensible" where
//! the analysis refuses it), how the model was selected (block size, threshold, the tests of
//! ξ = 0), the fits it was chosen from, and the tests of the extreme value analysis'
//! assumptions and of the fit. The analyses come from [`crate::pwcet::report_tails`] (one per
//! configuration and metric, computed once).

use super::{headers, new_table, push_row, title_of, Cell, Table};
use crate::pwcet::{
    fit_data, fit_name, format_per_hour, format_probability, report_tails, MetricTail, NOT_DEFENSIBLE_LABEL,
};
use crate::ReportError;
use rtlab_analysis::evt::{Diagnostic, TailFit, TailModel};
use rtlab_analysis::units::{format_us_f, thousands};
use rtlab_results::set::ReportSet;

/// Ids of the tail section's tables start with this (the HTML report gathers them there).
pub const TABLE_PREFIX: &str = "pwcet-";

/// Is `id` one of the tail section's tables?
pub fn is_tail_table(id: &str) -> bool {
    id.starts_with(TABLE_PREFIX)
}

/// The ids of a metric's tail tables: pWCET, warnings, model selection, fits, tests.
pub fn table_ids(metric: &str) -> [String; 5] {
    [
        format!("{TABLE_PREFIX}{metric}"),
        format!("{TABLE_PREFIX}warnings-{metric}"),
        format!("{TABLE_PREFIX}selection-{metric}"),
        format!("{TABLE_PREFIX}fits-{metric}"),
        format!("{TABLE_PREFIX}tests-{metric}"),
    ]
}

/// The tail section's tables of every metric: pWCET, warnings, model selection, fits, tests.
pub fn report_tables(set: &ReportSet) -> Result<Vec<Table>, ReportError> {
    Ok(report_tails(set)?.iter().flat_map(metric_tables).collect())
}

/// The tables of one metric: pWCET, warnings (where there are any), model selection, fits
/// and tests (where an analysis was made).
pub fn metric_tables(tail: &MetricTail) -> Vec<Table> {
    let mut tables = vec![pwcet_table(tail)];
    tables.extend(warnings_table(tail));
    if tail.configurations.iter().any(|(_, _, t)| t.analysis().is_some()) {
        tables.push(selection_table(tail));
        tables.push(fits_table(tail));
        tables.push(tests_table(tail));
    }
    tables
}

/// "per-second maxima", "maxima of 5 s blocks".
fn maxima_of(block_s: u64) -> String {
    if block_s == 1 {
        "per-second maxima".into()
    } else {
        format!("maxima of {block_s} s blocks")
    }
}

/// The configurations of `tail` whose pWCET is not defensible, with the refusal ("not
/// defensible from this run — <reasons>; <remedies>"), in table order.
pub fn refusals(tail: &MetricTail) -> Vec<(String, String)> {
    tail.configurations
        .iter()
        .filter_map(|(_, c, t)| Some((c.name.clone(), t.analysis()?.defensibility.refusal()?)))
        .collect()
}

/// The pWCET table's note on a configuration whose pWCET is not defensible (`refusal` as
/// [`refusals`] gives it); the HTML report shows it in a box above the table instead.
pub fn refusal_note(name: &str, refusal: &str) -> String {
    format!(
        "{name}: pWCET {}. Its rows hold the fitted model's values, marked \"{NOT_DEFENSIBLE_LABEL}\": not a pWCET \
         to quote.",
        refusal.trim_end_matches('.')
    )
}

fn probability_cell(p: f64) -> Cell {
    Cell { shown: format_probability(p), raw: format!("{p:e}") }
}

/// A time in µs with one decimal, ns raw.
fn us(ns: f64) -> Cell {
    if ns.is_finite() {
        Cell::us_f(ns)
    } else {
        Cell::text(if ns > 0.0 { "∞" } else { "-" })
    }
}

/// A p-value: "0.42", "3.1e-5", "< 1e-10" (the tail of a test statistic's distribution
/// that far out is no more precise than that).
fn p_value(p: f64) -> Cell {
    let shown = if !p.is_finite() {
        "-".to_string()
    } else if p < 1e-10 {
        "< 1e-10".to_string()
    } else if p >= 0.001 {
        format!("{p:.3}")
    } else {
        format!("{p:.1e}")
    };
    Cell { shown, raw: p.to_string() }
}

/// (pwcet) The estimates at the configuration's probabilities, per configuration. Where an
/// analysis is not defensible the title says so, a "status" column labels its rows "fitted,
/// not defensible", and the first notes give the reasons and remedies; a table whose
/// analyses are all defensible has no status column.
fn pwcet_table(tail: &MetricTail) -> Table {
    let config = &tail.config;
    let refused = refusals(tail);
    let analysed = tail.configurations.iter().filter(|(_, _, t)| t.analysis().is_some()).count();
    let title = title_of(&tail.metric);
    let title = match refused.len() {
        0 => format!("pWCET of {title}: latency exceeded with probability p per activation (µs)"),
        n if n == analysed => format!(
            "pWCET of {title}: not defensible from this run; fitted latency exceeded with probability p per \
             activation (µs)"
        ),
        _ => format!(
            "pWCET of {title}: latency exceeded with probability p per activation (µs); not defensible from this \
             run for {}",
            refused.iter().map(|(name, _)| name.as_str()).collect::<Vec<_>>().join(", ")
        ),
    };
    let ci = format!("{:.0} % CI low", config.confidence * 100.0);
    let mut columns = vec!["configuration"];
    if !refused.is_empty() {
        columns.push("status");
    }
    columns.extend(["p per activation", "p per hour", "pWCET", &ci, "CI high", "observed max", "fit"]);
    let mut table = new_table(&table_ids(&tail.metric)[0], &title, None, headers(&columns));
    for (_, c, t) in &tail.configurations {
        let max = Cell::or_none(t.observed_max_ns, Cell::us);
        let defensible = t.analysis().map(|a| a.defensibility.defensible);
        let mut cells = vec![Cell::text(&c.name)];
        if !refused.is_empty() {
            cells.push(Cell::text(match defensible {
                Some(true) => "defensible",
                Some(false) => NOT_DEFENSIBLE_LABEL,
                None => "no analysis",
            }));
        }
        let Some(analysis) = t.analysis() else {
            cells.extend((0..5).map(|_| Cell::none()));
            cells.extend([max, Cell::text("none")]);
            push_row(&mut table, cells);
            continue;
        };
        let fit =
            t.chosen_fit().map(|f| format!("{}, {}", fit_name(f), fit_data(f, t.block_seconds()))).unwrap_or_default();
        for e in &analysis.estimates {
            let mut row: Vec<Cell> =
                cells.iter().map(|c| Cell { shown: c.shown.clone(), raw: c.raw.clone() }).collect();
            row.extend([
                probability_cell(e.probability),
                Cell { shown: format_per_hour(e.per_hour_probability), raw: e.per_hour_probability.to_string() },
                us(e.value_ns),
                us(e.ci_low_ns),
                us(e.ci_high_ns),
                Cell::or_none(t.observed_max_ns, Cell::us),
                Cell::text(&fit),
            ]);
            push_row(&mut table, row);
        }
    }
    for (name, refusal) in &refused {
        table.notes.push(refusal_note(name, refusal));
    }
    table.notes.push(format!(
        "pWCET: the latency exceeded with probability p per activation (per sample), extrapolated from the measured \
         tail by extreme value theory; p per hour: the probability that at least one activation in an hour exceeds \
         it at the configuration's sample rate. CI: {:.0} % bootstrap confidence interval ({} resamples, fixed seed).",
        config.confidence * 100.0,
        config.bootstrap_resamples
    ));
    table.notes.push(
        "A pWCET is an estimate, not a bound: it holds only as far as the tests below hold (independent, identically \
         distributed maxima; a fit that describes held-out data), and it may lie below the largest sample observed."
            .into(),
    );
    table
}

/// (warnings) Why a configuration has no pWCET, and what the analysis warns of: failed tests,
/// too few blocks, a heavy tail.
fn warnings_table(tail: &MetricTail) -> Option<Table> {
    let mut table = new_table(
        &table_ids(&tail.metric)[1],
        &format!("Tail analysis warnings of {}", title_of(&tail.metric)),
        None,
        vec!["configuration".to_string(), "warning".to_string()],
    );
    for (_, c, t) in &tail.configurations {
        match &t.outcome {
            Ok(a) => {
                for w in &a.warnings {
                    push_row(&mut table, vec![Cell::text(&c.name), Cell::text(w.trim_end_matches('.'))]);
                }
            }
            Err(why) => push_row(&mut table, vec![Cell::text(&c.name), Cell::text(format!("no pWCET: {why}"))]),
        }
    }
    (!table.rows.is_empty()).then_some(table)
}

/// What a test of the model selection decided, in a few words: the likelihood-ratio tests of
/// ξ = 0 (GEV against Gumbel, GPD against exponential) keep the light tail unless they reject
/// it; the MBPTA-CV test asks whether the exceedances look exponential.
fn decision(d: &Diagnostic) -> String {
    let test = d.test.to_lowercase();
    let light = if test.contains("gumbel") {
        "Gumbel"
    } else if test.contains("exponential") || test.contains("cv") {
        "exponential"
    } else {
        return (if d.passed { "pass" } else { "FAIL" }).into();
    };
    let heavy = if light == "Gumbel" { "GEV" } else { "GPD" };
    if test.contains("cv") {
        if d.passed {
            "exponential tail not rejected".into()
        } else {
            "exponential tail rejected".into()
        }
    } else if d.passed {
        format!("ξ = 0 not rejected: {light}")
    } else {
        format!("ξ = 0 rejected: {heavy}, free shape")
    }
}

/// The number of samples above the threshold `u`: from a peaks-over-threshold fit at it, else
/// from the stability curve's point at it.
fn exceedances_at(a: &rtlab_analysis::evt::PwcetAnalysis, u: f64) -> Option<usize> {
    let same = |x: f64| (x - u).abs() <= u.abs() * 1e-9;
    a.fits
        .iter()
        .find(|f| is_pot(f.model) && same(f.location_ns))
        .map(|f| f.observations)
        .or_else(|| a.curves.stability.iter().find(|s| same(s.threshold_ns)).map(|s| s.exceedances))
}

/// (selection) How the tail model was chosen, per configuration: the block size of the block
/// maxima, the peaks-over-threshold threshold, the tests of ξ = 0 and the model they led to;
/// the reasons for the block size and the threshold as notes.
fn selection_table(tail: &MetricTail) -> Table {
    let config = &tail.config;
    let mut table = new_table(
        &table_ids(&tail.metric)[2],
        &format!("Tail model selection of {}", title_of(&tail.metric)),
        None,
        headers(&["configuration", "step", "test or choice", "applied to", "statistic", "p-value", "decision"]),
    );
    let mut notes = Vec::new();
    for (_, c, t) in &tail.configurations {
        let Some(a) = t.analysis() else { continue };
        let seconds = t.block_seconds();
        let merged = a.blocks_merged.max(1);
        let blocks = maxima_of(seconds);
        let from = if merged > 1 {
            format!("merge {merged} blocks of {} s", t.block_s.max(1))
        } else {
            "the run's blocks".into()
        };
        // The maxima the block fits were made of, when any was.
        let fitted_blocks = a.fits.iter().find(|f| !is_pot(f.model)).map(|f| f.observations);
        let none = || [Cell::none(), Cell::none()];
        let mut row = |step: &str, what: Cell, on: String, stat: [Cell; 2], decided: String| {
            let [statistic, p] = stat;
            push_row(
                &mut table,
                vec![Cell::text(&c.name), Cell::text(step), what, Cell::text(on), statistic, p, Cell::text(decided)],
            );
        };
        if t.blocks > 0 {
            let decided = match fitted_blocks {
                Some(n) => format!("{blocks}: {}", thousands(n as u64)),
                None => blocks.clone(),
            };
            row("block size", Cell::text(&from), maxima_of(t.block_s.max(1)), none(), decided);
            if !a.blocks_because.is_empty() {
                notes.push(format!("{}, block size ({blocks}): {}.", c.name, a.blocks_because.trim_end_matches('.')));
            }
        }
        if let Some(u) = a.threshold_ns {
            let above =
                exceedances_at(a, u).map(|n| format!(", {} samples above", thousands(n as u64))).unwrap_or_default();
            row(
                "threshold",
                Cell::text("threshold u"),
                "the upper tail".into(),
                none(),
                format!("u = {} µs{above}", format_us_f(u)),
            );
            if !a.threshold_because.is_empty() {
                notes.push(format!(
                    "{}, threshold u = {} µs: {}.",
                    c.name,
                    format_us_f(u),
                    a.threshold_because.trim_end_matches('.')
                ));
            }
        }
        for d in &a.selection {
            row(
                "tail shape",
                Cell::text(&d.test),
                d.on.clone(),
                [statistic(d.statistic), p_value(d.p_value)],
                decision(d),
            );
        }
        if let Some(f) = t.chosen_fit() {
            row("model", Cell::text(fit_name(f)), fitted_to(f, seconds), none(), "used for the pWCET".into());
        }
    }
    table.notes.extend(notes);
    table.notes.push(format!(
        "Block size: input blocks are merged into longer ones until their maxima are close to independent, since \
         extreme value theory assumes independent maxima. Threshold: the samples above it are fitted with a GPD; \
         the stability figure shows the shape ξ and the mean excess at every candidate threshold. Tail shape: a \
         likelihood-ratio test of ξ = 0 against a free shape (p-value at least {}: ξ = 0 is not rejected and the \
         light-tailed model, Gumbel or exponential, is used); the MBPTA-CV test asks whether the excesses over the \
         threshold are exponential (coefficient of variation 1). Why the model was chosen: the notes of the fits table.",
        config.significance
    ));
    table
}

/// (fits) Every fit made, and which one the estimates use.
fn fits_table(tail: &MetricTail) -> Table {
    let mut table = new_table(
        &table_ids(&tail.metric)[3],
        &format!("Tail fits of {}", title_of(&tail.metric)),
        None,
        headers(&[
            "configuration",
            "model",
            "fitted to",
            "observations",
            "location μ / threshold u (µs)",
            "scale σ (µs)",
            "shape ξ",
            "share above u",
            "used",
        ]),
    );
    for (_, c, t) in &tail.configurations {
        let Some(a) = t.analysis() else { continue };
        for (i, fit) in a.fits.iter().enumerate() {
            push_row(
                &mut table,
                vec![
                    Cell::text(&c.name),
                    Cell::text(fit_name(fit)),
                    Cell::text(fitted_to(fit, t.block_seconds())),
                    Cell::count(fit.observations as u64),
                    us(fit.location_ns),
                    us(fit.scale_ns),
                    Cell { shown: format!("{:.3}", fit.shape), raw: fit.shape.to_string() },
                    Cell::or_none(fit.exceedance_rate.filter(|_| is_pot(fit.model)), |r| Cell {
                        shown: format!("{:.2} %", r * 100.0),
                        raw: r.to_string(),
                    }),
                    Cell::text(if i == a.chosen { "yes" } else { "" }),
                ],
            );
        }
    }
    for (_, c, t) in &tail.configurations {
        if let Some(a) = t.analysis().filter(|a| !a.chosen_because.is_empty()) {
            table.notes.push(format!("{}: {}.", c.name, a.chosen_because.trim_end_matches('.')));
        }
    }
    table.notes.push(
        "GEV: F(x) = exp(-(1 + ξ (x - μ)/σ)^(-1/ξ)) for block maxima; Gumbel is the GEV with ξ = 0. GPD: P(X - u > y \
         | X > u) = (1 + ξ y/σ)^(-1/ξ) for the samples above the threshold u; exponential is the GPD with ξ = 0. ξ > 0: a heavy tail without an upper \
         end; ξ < 0: a bounded tail. (scipy's genextreme writes c = -ξ.) PWM: probability-weighted moments; MLE: \
         maximum likelihood."
            .into(),
    );
    table
}

/// A peaks-over-threshold model (GPD, exponential), as opposed to one of block maxima.
fn is_pot(model: TailModel) -> bool {
    matches!(model, TailModel::Gpd | TailModel::Exponential)
}

/// What a fit was fitted to, without the count: "per-second maxima", "samples above u".
fn fitted_to(fit: &TailFit, block_s: u64) -> String {
    if is_pot(fit.model) {
        "samples above u".into()
    } else {
        maxima_of(block_s)
    }
}

/// A test statistic with three decimals; "∞" for one too large to write (the analysis
/// reports an infinite statistic as the largest float).
fn statistic(value: f64) -> Cell {
    if value.is_finite() && value.abs() < 1e15 {
        Cell { shown: format!("{value:.3}"), raw: value.to_string() }
    } else {
        Cell { shown: "∞".into(), raw: "inf".into() }
    }
}

fn test_rows(table: &mut Table, name: &str, stage: &str, tests: &[Diagnostic]) {
    for d in tests {
        push_row(
            table,
            vec![
                Cell::text(name),
                Cell::text(stage),
                Cell::text(&d.test),
                Cell::text(&d.on),
                statistic(d.statistic),
                p_value(d.p_value),
                Cell::text(if d.passed { "pass" } else { "FAIL" }),
            ],
        );
    }
}

/// (tests) Independence and identical distribution before the fit, goodness of fit after.
fn tests_table(tail: &MetricTail) -> Table {
    let config = &tail.config;
    let mut table = new_table(
        &table_ids(&tail.metric)[4],
        &format!("Tail analysis tests of {}", title_of(&tail.metric)),
        None,
        headers(&["configuration", "stage", "test", "applied to", "statistic", "p-value", "result"]),
    );
    for (_, c, t) in &tail.configurations {
        let Some(a) = t.analysis() else { continue };
        test_rows(&mut table, &c.name, "before the fit", &a.diagnostics);
        test_rows(&mut table, &c.name, "goodness of fit", &a.goodness_of_fit);
    }
    table.notes.push(format!(
        "A test passes when its p-value is at least {s}. Before the fit: are the maxima independent (no correlation \
         from one block to the next) and identically distributed (the first half like the second)? Extreme value \
         theory assumes both. Goodness of fit: does the fitted model describe data it was not fitted to? The pWCET \
         is refused (not defensible) when a test fails at the family-wise level, each of a configuration's m tests \
         at {s}/m (Bonferroni); a FAIL at {s} alone is a warning.",
        s = config.significance
    ));
    table
}
