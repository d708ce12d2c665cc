//! The tables of the report's tail section: per metric of [`crate::pwcet::tail_metrics`]
//! (each probe's main metric and the metrics of `pwcet(P)` requirements), every
//! configuration's pWCET with its confidence interval, the fits it was chosen from, and the
//! tests of the extreme value analysis' assumptions and of the fit. The analyses come from
//! [`crate::pwcet::report_tails`] (one per configuration and metric, computed once).

use super::{headers, new_table, push_row, title_of, Cell, Table};
use crate::pwcet::{fit_data, fit_name, format_per_hour, format_probability, report_tails, MetricTail};
use crate::ReportError;
use rtlab_analysis::evt::{Diagnostic, TailFit, TailModel};
use rtlab_results::set::ReportSet;

/// Ids of the tail section's tables start with this (the HTML report gathers them there).
pub const TABLE_PREFIX: &str = "pwcet-";

/// Is `id` one of the tail section's tables?
pub fn is_tail_table(id: &str) -> bool {
    id.starts_with(TABLE_PREFIX)
}

/// The ids of a metric's tail tables: pWCET, warnings, fits, tests.
pub fn table_ids(metric: &str) -> [String; 4] {
    [
        format!("{TABLE_PREFIX}{metric}"),
        format!("{TABLE_PREFIX}warnings-{metric}"),
        format!("{TABLE_PREFIX}fits-{metric}"),
        format!("{TABLE_PREFIX}tests-{metric}"),
    ]
}

/// The tail section's tables of every metric: pWCET, warnings, fits, tests.
pub fn report_tables(set: &ReportSet) -> Result<Vec<Table>, ReportError> {
    Ok(report_tails(set)?.iter().flat_map(metric_tables).collect())
}

/// The tables of one metric: pWCET, warnings (where there are any), fits and tests (where an
/// analysis was made).
pub fn metric_tables(tail: &MetricTail) -> Vec<Table> {
    let mut tables = vec![pwcet_table(tail)];
    tables.extend(warnings_table(tail));
    if tail.configurations.iter().any(|(_, _, t)| t.analysis().is_some()) {
        tables.push(fits_table(tail));
        tables.push(tests_table(tail));
    }
    tables
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

/// (pwcet) The estimates at the configuration's probabilities, per configuration.
fn pwcet_table(tail: &MetricTail) -> Table {
    let config = &tail.config;
    let mut table = new_table(
        &table_ids(&tail.metric)[0],
        &format!("pWCET of {}: latency exceeded with probability p per activation (µs)", title_of(&tail.metric)),
        None,
        headers(&[
            "configuration",
            "p per activation",
            "p per hour",
            "pWCET",
            &format!("{:.0} % CI low", config.confidence * 100.0),
            "CI high",
            "observed max",
            "fit",
        ]),
    );
    for (_, c, t) in &tail.configurations {
        let max = Cell::or_none(t.observed_max_ns, Cell::us);
        let Some(analysis) = t.analysis() else {
            let mut cells = vec![Cell::text(&c.name)];
            cells.extend((0..5).map(|_| Cell::none()));
            cells.extend([max, Cell::text("none")]);
            push_row(&mut table, cells);
            continue;
        };
        let fit = t.chosen_fit().map(|f| format!("{}, {}", fit_name(f), fit_data(f, t.block_s))).unwrap_or_default();
        for e in &analysis.estimates {
            push_row(
                &mut table,
                vec![
                    Cell::text(&c.name),
                    probability_cell(e.probability),
                    Cell { shown: format_per_hour(e.per_hour_probability), raw: e.per_hour_probability.to_string() },
                    us(e.value_ns),
                    us(e.ci_low_ns),
                    us(e.ci_high_ns),
                    Cell::or_none(t.observed_max_ns, Cell::us),
                    Cell::text(&fit),
                ],
            );
        }
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

/// (fits) Every fit made, and which one the estimates use.
fn fits_table(tail: &MetricTail) -> Table {
    let mut table = new_table(
        &table_ids(&tail.metric)[2],
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
                    Cell::text(fitted_to(fit, t.block_s)),
                    Cell::count(fit.observations as u64),
                    us(fit.location_ns),
                    us(fit.scale_ns),
                    Cell { shown: format!("{:.3}", fit.shape), raw: fit.shape.to_string() },
                    Cell::or_none(fit.exceedance_rate.filter(|_| fit.model == TailModel::Gpd), |r| Cell {
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
         | X > u) = (1 + ξ y/σ)^(-1/ξ) for the samples above the threshold u. ξ > 0: a heavy tail without an upper \
         end; ξ < 0: a bounded tail. (scipy's genextreme writes c = -ξ.) PWM: probability-weighted moments; MLE: \
         maximum likelihood."
            .into(),
    );
    table
}

/// What a fit was fitted to, without the count: "per-second maxima", "samples above u".
fn fitted_to(fit: &TailFit, block_s: u64) -> String {
    match fit.model {
        TailModel::Gpd | TailModel::Exponential => "samples above u".into(),
        _ if block_s == 1 => "per-second maxima".into(),
        _ => format!("maxima of {block_s} s blocks"),
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
        &table_ids(&tail.metric)[3],
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
        "A test passes when its p-value is at least {}. Before the fit: are the maxima independent (no correlation \
         from one block to the next) and identically distributed (the first half like the second)? Extreme value \
         theory assumes both. Goodness of fit: does the fitted model describe data it was not fitted to?",
        config.significance
    ));
    table
}
