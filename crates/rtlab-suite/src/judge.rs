//! The paper's own conclusions, recomputed from this machine's runs: every
//! [`JudgementSpec`] of a suite file gives a [`JudgementResult`] (suite.json `judgements`).
//! Pure computation on saved runs; the words a reader sees are the findings and the
//! conclusion, which the suite report shows after the tables.

use crate::measure::{measurements_for, statistic_of, ConditionRun};
use rtlab_analysis::units::format_us;
use rtlab_report::digest::combine;
use rtlab_report::per_setting::steps;
use rtlab_report::ReportError;
use rtlab_results::judgement::{CellRef, JudgementResult, JudgementSpec};
use rtlab_results::run::{Measurement, Setting};
use rtlab_results::suite::{CellSpec, CellValue, StatisticSpec};

/// Computes `spec` from the conditions' runs. A cell that cannot be had (its condition
/// failed, the metric was not measured) makes the judgement say so, not fail.
pub fn judge(spec: &JudgementSpec, conditions: &[ConditionRun]) -> Result<JudgementResult, ReportError> {
    let mut result = JudgementResult {
        id: spec.id.clone(),
        title: spec.title.clone(),
        source: spec.source.clone(),
        paper: spec.paper.clone(),
        kind: spec.kind.clone(),
        findings: Vec::new(),
        conclusion: String::new(),
        met: None,
        values_ns: Vec::new(),
        reading: spec.reading.clone(),
        percent: spec.percent,
    };
    match spec.kind.as_str() {
        "bounds" => bounds(spec, conditions, &mut result)?,
        "jitter-share" => jitter_share(spec, conditions, &mut result)?,
        "predictability" => predictability(spec, conditions, &mut result)?,
        "share-below" => share_below(spec, conditions, &mut result)?,
        "lower-by" => lower_by(spec, conditions, &mut result)?,
        "schedulability" => schedulability(spec, conditions, &mut result)?,
        other => return Err(ReportError::Usage { what: "suite".into(), reason: format!("judgement kind {other:?}") }),
    }
    Ok(result)
}

/// The table cell a judgement's cell stands for: its measurements and statistic are found
/// as a table's are ([`crate::measure`]).
fn cell_spec(cell: &CellRef, statistic: StatisticSpec) -> CellSpec {
    CellSpec {
        condition: cell.condition.clone(),
        metric: cell.full_metric(),
        statistic,
        scenario: cell.scenario.clone(),
        selector: cell.selector.clone().unwrap_or_default(),
        minus: None,
    }
}

/// The measurements of a cell, or why there are none.
fn measurements_of<'a>(
    cell: &CellRef,
    statistic: StatisticSpec,
    conditions: &[ConditionRun<'a>],
) -> Result<Vec<&'a Measurement>, String> {
    measurements_for(&cell_spec(cell, statistic), conditions)
}

/// The cell's statistic, or why there is none.
fn value_of(
    cell: &CellRef,
    statistic: StatisticSpec,
    conditions: &[ConditionRun],
) -> Result<Result<CellValue, String>, ReportError> {
    statistic_of(&cell_spec(cell, statistic), conditions)
}

fn time_of(value: &CellValue) -> Option<i64> {
    match value {
        CellValue::Time { ns } => Some(*ns),
        _ => None,
    }
}

/// "µs" values as people read them: "9,327.7".
fn us(ns: i64) -> String {
    let text = format_us(ns);
    let (whole, fraction) = text.split_once('.').unwrap_or((&text, "0"));
    let negative = whole.starts_with('-');
    let digits = whole.trim_start_matches('-');
    let grouped = rtlab_analysis::units::thousands(digits.parse::<u64>().unwrap_or(0));
    format!("{}{grouped}.{fraction}", if negative { "-" } else { "" })
}

fn statistic_or_max(spec: &JudgementSpec, i: usize) -> StatisticSpec {
    spec.statistic(i).unwrap_or(StatisticSpec::Max)
}

/// Every cell below each bound in turn: the requirement, then its alternatives.
fn bounds(spec: &JudgementSpec, conditions: &[ConditionRun], out: &mut JudgementResult) -> Result<(), ReportError> {
    let bounds = spec.bounds_ns().map_err(|reason| ReportError::Usage { what: "suite".into(), reason })?;
    let mut values: Vec<(String, Result<i64, String>)> = Vec::new();
    for (i, cell) in spec.cells.iter().enumerate() {
        let statistic = statistic_or_max(spec, i);
        let value = value_of(cell, statistic, conditions)?
            .and_then(|v| time_of(&v).ok_or_else(|| format!("{statistic} is not a time")));
        out.values_ns.push(value.as_ref().ok().copied());
        values.push((format!("{} {statistic}", cell.shown()), value));
    }
    let missing: Vec<String> =
        values.iter().filter_map(|(name, v)| v.as_ref().err().map(|why| format!("{name}: {why}"))).collect();
    let measured: Vec<String> =
        values.iter().filter_map(|(name, v)| v.as_ref().ok().map(|ns| format!("{name} {} µs", us(*ns)))).collect();
    let mut met_at: Vec<bool> = Vec::new();
    for (k, bound) in bounds.iter().enumerate() {
        let role = if k == 0 { "the requirement" } else { "the alternative" };
        let met = missing.is_empty() && values.iter().all(|(_, v)| v.as_ref().is_ok_and(|ns| *ns < *bound as i64));
        met_at.push(met);
        let worst = values.iter().filter_map(|(_, v)| v.as_ref().ok()).max().copied();
        let word = if !missing.is_empty() {
            "cannot be judged"
        } else if met {
            "met"
        } else {
            "not met"
        };
        let margin = match worst {
            Some(w) if missing.is_empty() => {
                format!(
                    " (worst {} µs, {} µs {})",
                    us(w),
                    us((w - *bound as i64).abs()),
                    if met { "below" } else { "above" }
                )
            }
            _ => String::new(),
        };
        out.findings.push(format!("< {} µs, {role}: {word}{margin}", us(*bound as i64)));
    }
    out.findings.push(format!("Measured: {}.", measured.join("; ")));
    if !missing.is_empty() {
        out.findings.push(format!("Not measured: {}.", missing.join("; ")));
        out.conclusion = "Cannot be judged: not every value it needs was measured.".into();
        return Ok(());
    }
    let shown = |k: usize| format!("{} µs", us(bounds[k] as i64));
    out.met = Some(met_at[0]);
    out.conclusion = match met_at.iter().position(|m| *m) {
        Some(0) => format!("This machine meets the paper's requirement ({}).", shown(0)),
        Some(k) => format!(
            "This machine misses the paper's requirement ({}) but meets its alternative ({}).",
            shown(0),
            shown(k)
        ),
        None if bounds.len() == 1 => format!("This machine meets neither the paper's requirement ({}).", shown(0)),
        None => format!(
            "This machine meets neither the paper's requirement ({}) nor {}.",
            shown(0),
            (1..bounds.len()).map(shown).collect::<Vec<_>>().join(" nor ")
        ),
    };
    Ok(())
}

/// Per task period: the metric's maximum as a share of the period; "hard" at most `percent`.
fn jitter_share(
    spec: &JudgementSpec,
    conditions: &[ConditionRun],
    out: &mut JudgementResult,
) -> Result<(), ReportError> {
    let limit = spec.percent.unwrap_or(10.0);
    // (period ns, hard in every cell so far, worst share)
    let mut per_period: Vec<(u64, bool, f64)> = Vec::new();
    let mut missing = Vec::new();
    for cell in &spec.cells {
        let found = match measurements_of(cell, StatisticSpec::Max, conditions) {
            Ok(found) => found,
            Err(why) => {
                missing.push(format!("{}: {why}", cell.shown()));
                continue;
            }
        };
        for step in steps(&found, Setting::Period)? {
            let period = step.value.round() as u64;
            let Some(max) = step.combined.moments.max() else { continue };
            let share = 100.0 * max as f64 / period.max(1) as f64;
            let hard = share <= limit;
            out.findings.push(format!(
                "{}, period {} µs: maximum {} µs = {share:.1} % of the period: {}",
                cell.shown(),
                Setting::Period.label(period as f64),
                us(max),
                if hard { "hard" } else { "soft" }
            ));
            match per_period.iter_mut().find(|(p, _, _)| *p == period) {
                Some(entry) => {
                    entry.1 &= hard;
                    entry.2 = entry.2.max(share);
                }
                None => per_period.push((period, hard, share)),
            }
        }
    }
    if !missing.is_empty() {
        out.findings.push(format!("Not measured: {}.", missing.join("; ")));
    }
    if per_period.is_empty() {
        out.conclusion = "Cannot be judged: no period jitter was measured.".into();
        return Ok(());
    }
    per_period.sort_by_key(|(p, _, _)| *p);
    let list = |hard: bool| {
        per_period
            .iter()
            .filter(|(_, h, _)| *h == hard)
            .map(|(p, _, s)| format!("{} µs ({s:.1} %)", Setting::Period.label(*p as f64)))
            .collect::<Vec<_>>()
    };
    let (hard, soft) = (list(true), list(false));
    out.met = Some(soft.is_empty() && missing.is_empty());
    out.conclusion = match (hard.is_empty(), soft.is_empty()) {
        (false, true) => format!(
            "Hard real-time at every period measured: the worst jitter stays within {limit} % of the period ({}).",
            hard.join(", ")
        ),
        (true, false) => format!(
            "Soft real-time only: at every period measured the worst jitter exceeds {limit} % of the period ({}).",
            soft.join(", ")
        ),
        _ => format!(
            "Hard real-time for the periods {} (worst jitter within {limit} % of the period); soft real-time for {}.",
            hard.join(", "),
            soft.join(", ")
        ),
    };
    Ok(())
}

/// Standard deviation and maximum against mean, beside the paper's platforms.
fn predictability(
    spec: &JudgementSpec,
    conditions: &[ConditionRun],
    out: &mut JudgementResult,
) -> Result<(), ReportError> {
    let mut conclusions = Vec::new();
    for cell in &spec.cells {
        let found = match measurements_of(cell, StatisticSpec::Max, conditions) {
            Ok(found) => found,
            Err(why) => {
                out.findings.push(format!("{}: not measured: {why}", cell.shown()));
                out.values_ns.push(None);
                continue;
            }
        };
        let combined = combine(&found)?;
        let m = &combined.moments;
        let (Some(mean), Some(sd), Some(max)) = (m.mean(), m.stddev(), m.max()) else {
            out.findings.push(format!("{}: no samples", cell.shown()));
            out.values_ns.push(None);
            continue;
        };
        out.values_ns.push(Some(max));
        let ratio = if mean > 0.0 { max as f64 / mean } else { f64::INFINITY };
        out.findings.push(format!(
            "{}: mean {} µs, SD {} µs, max {} µs: the maximum is {ratio:.1} times the mean",
            cell.shown(),
            us(mean.round() as i64),
            us(sd.round() as i64),
            us(max)
        ));
        if spec.reference.is_empty() {
            continue;
        }
        let sd_us = sd / 1000.0;
        let lower_sd = spec.reference.iter().filter(|r| sd_us < r.sd).count();
        let lower_ratio = spec.reference.iter().filter(|r| r.mean > 0.0 && ratio < r.max / r.mean).count();
        let n = spec.reference.len();
        conclusions.push(format!(
            "{}: a lower SD than {lower_sd} and a maximum closer to the mean than {lower_ratio} of the paper's {n} platforms",
            cell.shown()
        ));
    }
    if !spec.reference.is_empty() {
        let refs: Vec<String> = spec
            .reference
            .iter()
            .map(|r| format!("{} SD {:.1} µs, max {:.1} times the mean", r.label, r.sd, r.max / r.mean))
            .collect();
        out.findings.push(format!("The paper: {}.", refs.join("; ")));
    }
    out.conclusion = if conclusions.is_empty() {
        "The paper's criteria, computed for this machine: a lower standard deviation and a maximum closer to the mean are the more predictable.".into()
    } else {
        format!("By the paper's criteria (lower SD, maximum closer to the mean): {}.", conclusions.join("; "))
    };
    Ok(())
}

/// The share of samples below a bound, against the paper's "nearly all".
fn share_below(
    spec: &JudgementSpec,
    conditions: &[ConditionRun],
    out: &mut JudgementResult,
) -> Result<(), ReportError> {
    let want = spec.percent.unwrap_or(99.0);
    let mut all_met = true;
    for (i, cell) in spec.cells.iter().enumerate() {
        let statistic = statistic_or_max(spec, i);
        let StatisticSpec::Below(bound) = statistic else { continue };
        match value_of(cell, statistic, conditions)? {
            Ok(CellValue::Share { share }) => {
                let met = share * 100.0 >= want;
                all_met &= met;
                out.findings.push(format!(
                    "{}: {:.2} % of the samples below {} µs ({} {want} %)",
                    cell.shown(),
                    share * 100.0,
                    us(bound as i64),
                    if met { "at least" } else { "less than" }
                ));
            }
            Ok(_) => {}
            Err(why) => {
                out.findings.push(format!("{}: not measured: {why}", cell.shown()));
                out.conclusion = "Cannot be judged: not every value it needs was measured.".into();
                return Ok(());
            }
        }
    }
    out.met = Some(all_met);
    out.conclusion = if all_met {
        format!("Yes: at least {want} % of this machine's samples are below the bound.")
    } else {
        format!("No: fewer than {want} % of this machine's samples are below the bound.")
    };
    Ok(())
}

/// One configuration's value; the comparison needs two (`rtlab compare`, [`lower_by_pairs`]).
fn lower_by(spec: &JudgementSpec, conditions: &[ConditionRun], out: &mut JudgementResult) -> Result<(), ReportError> {
    for (i, cell) in spec.cells.iter().enumerate() {
        let statistic = statistic_or_max(spec, i);
        match value_of(cell, statistic, conditions)?.map(|v| time_of(&v)) {
            Ok(Some(ns)) => {
                out.values_ns.push(Some(ns));
                out.findings.push(format!("{} {statistic}: {} µs", cell.shown(), us(ns)));
            }
            Ok(None) => out.values_ns.push(None),
            Err(why) => {
                out.values_ns.push(None);
                out.findings.push(format!("{}: not measured: {why}", cell.shown()));
            }
        }
    }
    out.conclusion = format!(
        "A statement between configurations: run the suite on each (e.g. PREEMPT_RT and the co-kernel's Linux, with their own --label) and `rtlab compare` the suite directories; the report then says for each pair whether one's value is at least {} % lower than the other's.",
        spec.percent.unwrap_or(0.0)
    );
    Ok(())
}

/// The paper's analysis of a task set (rate-monotonic priorities, response-time analysis),
/// charged with this machine's worst J and CS from the suite's own conditions, and with the
/// paper's figures beside it.
fn schedulability(
    spec: &JudgementSpec,
    conditions: &[ConditionRun],
    out: &mut JudgementResult,
) -> Result<(), ReportError> {
    use rtlab_analysis::schedulability::{analyse, tolerated_activation_latency, Overheads};
    let usage = |reason: String| ReportError::Usage { what: "suite".into(), reason };
    let set = spec.task_set().map_err(usage)?;
    // The worst cell of each role.
    let mut worst: [Option<(i64, String)>; 2] = [None, None];
    let mut missing = Vec::new();
    for (i, cell) in spec.cells.iter().enumerate() {
        let slot = usize::from(cell.role.as_deref() == Some("switch"));
        let statistic = statistic_or_max(spec, i);
        match value_of(cell, statistic, conditions)?.map(|v| time_of(&v)) {
            Ok(Some(ns)) => {
                out.findings.push(format!("{} {statistic}: {} µs", cell.shown(), us(ns)));
                if worst[slot].as_ref().is_none_or(|(w, _)| ns > *w) {
                    worst[slot] = Some((ns, cell.shown()));
                }
            }
            Ok(None) => {}
            Err(why) => missing.push(format!("{}: {why}", cell.shown())),
        }
    }
    out.values_ns = worst.iter().map(|w| w.as_ref().map(|(ns, _)| *ns)).collect();
    let describe = |analysis: &rtlab_analysis::schedulability::Analysis| -> Vec<String> {
        analysis
            .tasks
            .iter()
            .map(|t| {
                let r = t.response_ns.map(|r| format!("R {} µs", us(r as i64))).unwrap_or_else(|| "R > D".into());
                format!(
                    "{}: C {} µs, T {} µs, D {} µs, {r}: {}",
                    t.name,
                    us(t.wcet_ns as i64),
                    us(t.period_ns as i64),
                    us(t.deadline_ns as i64),
                    if t.schedulable { "meets its deadline" } else { "MISSES its deadline" }
                )
            })
            .collect()
    };
    let paper = spec.paper_figures_ns().map_err(usage)?;
    if let Some((j, cs)) = paper {
        let analysis = analyse(&set, Overheads { activation_latency_ns: j, switch_ns: cs });
        out.findings.push(format!(
            "With the paper's figures (J {} µs, CS {} µs): {}",
            us(j as i64),
            us(cs as i64),
            if analysis.schedulable { "schedulable" } else { "not schedulable" }
        ));
    }
    let (Some((j, j_from)), Some((cs, cs_from))) = (&worst[0], &worst[1]) else {
        if !missing.is_empty() {
            out.findings.push(format!("Not measured: {}.", missing.join("; ")));
        }
        out.conclusion = "Cannot be judged: the jitter and the task-switch time were not both measured.".into();
        return Ok(());
    };
    let overheads = Overheads { activation_latency_ns: (*j).max(0) as u64, switch_ns: (*cs).max(0) as u64 };
    let analysis = analyse(&set, overheads);
    out.findings.push(format!(
        "With this machine's figures: J {} µs (from {j_from}), CS {} µs (from {cs_from}); priorities: {}",
        us(*j),
        us(*cs),
        analysis.order_rule
    ));
    out.findings.extend(describe(&analysis));
    out.findings.push(format!(
        "U = {:.3}; Liu-Layland bound {:.4}: {}",
        analysis.utilization,
        analysis.liu_layland_bound,
        if analysis.liu_layland_passed { "passes (sufficient, without J and CS)" } else { "not passed (inconclusive)" }
    ));
    if !missing.is_empty() {
        out.findings.push(format!("Not measured (left out of the worst): {}.", missing.join("; ")));
    }
    let tolerated = tolerated_activation_latency(&set, overheads.switch_ns);
    let tolerance = match tolerated {
        Some(t) => format!("; the set tolerates a jitter of up to {} µs with this CS", us(t as i64)),
        None => "; the set misses a deadline even without jitter".into(),
    };
    out.met = Some(analysis.schedulable);
    out.conclusion = if analysis.schedulable {
        format!("Schedulable with this machine's jitter and task-switch time{tolerance}.")
    } else {
        format!("Not schedulable with this machine's jitter and task-switch time{tolerance}.")
    };
    Ok(())
}

/// `lower-by` across suite runs: for each ordered pair of labels with both values, how much
/// lower the second is than the first, and whether by at least `percent`.
pub fn lower_by_pairs(percent: f64, values: &[(String, Option<i64>)]) -> Vec<String> {
    let mut lines = Vec::new();
    for (a, va) in values {
        for (b, vb) in values {
            let (Some(va), Some(vb)) = (va, vb) else { continue };
            if a == b || vb >= va || *va <= 0 {
                continue;
            }
            let lower = 100.0 * (*va - *vb) as f64 / *va as f64;
            lines.push(format!(
                "{b} ({} µs) is {lower:.1} % lower than {a} ({} µs): {}",
                us(*vb),
                us(*va),
                if lower >= percent {
                    format!("at least {percent} %, as the paper says")
                } else {
                    format!("less than {percent} %")
                }
            ));
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtlab_analysis::Moments;
    use rtlab_results::judgement::ReferenceRow;
    use rtlab_results::run::RunResult;

    fn run_with(metric: &str, values: &[(u64, Vec<i64>)]) -> RunResult {
        let mut run: RunResult =
            serde_json::from_str(include_str!("../../rtlab-report/tests/fixtures/simulated-120s.run.json")).unwrap();
        let template = run.measurements[0].clone();
        run.measurements.clear();
        for (period, samples) in values {
            let mut m = template.clone();
            m.metric = metric.into();
            m.interval_ns = *period;
            m.details.remove("period_ns");
            let mut moments = Moments::new();
            let mut histogram = rtlab_analysis::LatencyHistogram::new(rtlab_analysis::DEFAULT_MAX_NS).unwrap();
            for v in samples {
                moments.record(*v);
                histogram.record(*v);
            }
            m.count = samples.len() as u64;
            m.cycles = m.count;
            m.moments = moments;
            m.histogram = histogram.encode().unwrap();
            run.measurements.push(m);
        }
        run
    }

    fn spec(kind: &str, cells: Vec<CellRef>) -> JudgementSpec {
        JudgementSpec {
            id: "j".into(),
            title: "J".into(),
            source: None,
            paper: "the paper".into(),
            kind: kind.into(),
            cells,
            bounds: vec![],
            percent: None,
            reference: vec![],
            reading: None,
            tasks: vec![],
            paper_figures: None,
        }
    }

    fn cell(condition: &str, metric: &str, statistic: Option<&str>) -> CellRef {
        CellRef {
            condition: condition.into(),
            metric: metric.into(),
            statistic: statistic.map(str::to_string),
            scenario: None,
            selector: None,
            label: None,
            role: None,
        }
    }

    fn conditions<'a>(runs: &'a [(&'a str, &'a RunResult)]) -> Vec<ConditionRun<'a>> {
        runs.iter().map(|(name, run)| ConditionRun { name, run: Some(run), missing: None, gaps: vec![] }).collect()
    }

    #[test]
    fn bounds_say_which_of_the_requirement_and_its_alternative_is_met() {
        let unloaded = run_with("timer.latency", &[(10_000_000, vec![20_000, 104_000])]);
        let loaded = run_with("timer.latency", &[(10_000_000, vec![30_000, 578_000])]);
        let runs = [("unloaded", &unloaded), ("loaded", &loaded)];
        let mut s = spec(
            "bounds",
            vec![cell("unloaded", "timer.latency", Some("max")), cell("loaded", "timer.latency", Some("max"))],
        );
        s.bounds = vec!["500us".into(), "600us".into()];
        let r = judge(&s, &conditions(&runs)).unwrap();
        assert_eq!(r.met, Some(false));
        assert_eq!(r.values_ns, [Some(104_000), Some(578_000)]);
        assert_eq!(r.findings[0], "< 500.0 µs, the requirement: not met (worst 578.0 µs, 78.0 µs above)");
        assert_eq!(r.findings[1], "< 600.0 µs, the alternative: met (worst 578.0 µs, 22.0 µs below)");
        assert_eq!(
            r.conclusion,
            "This machine misses the paper's requirement (500.0 µs) but meets its alternative (600.0 µs)."
        );
        // Linux 2.4 in the paper: 4,446 µs loaded meets neither.
        let worse = run_with("timer.latency", &[(10_000_000, vec![4_446_000])]);
        let runs = [("unloaded", &unloaded), ("loaded", &worse)];
        let r = judge(&s, &conditions(&runs)).unwrap();
        assert_eq!(r.conclusion, "This machine meets neither the paper's requirement (500.0 µs) nor 600.0 µs.");
        // A missing condition: cannot be judged, and says why.
        let only = [("unloaded", &unloaded)];
        let r = judge(&s, &conditions(&only)).unwrap();
        assert_eq!(r.met, None);
        assert!(r.findings.iter().any(|f| f.contains("condition \"loaded\" was not run")), "{:?}", r.findings);
    }

    #[test]
    fn jitter_share_classifies_each_period_as_the_paper_does() {
        // Dodiu: 22 µs at 300 µs idle is 7.3 %; 100 µs at 300 µs loaded is 33.3 %; 40 µs
        // at 1 ms loaded is 4 %.
        let idle = run_with("jitter.jitter", &[(300_000, vec![1_000, 22_000])]);
        let loaded = run_with("jitter.jitter", &[(300_000, vec![2_000, 100_000]), (1_000_000, vec![40_000])]);
        let runs = [("idle", &idle), ("loaded", &loaded)];
        let mut s =
            spec("jitter-share", vec![cell("idle", "jitter.jitter", None), cell("loaded", "jitter.jitter", None)]);
        s.percent = Some(10.0);
        let r = judge(&s, &conditions(&runs)).unwrap();
        assert_eq!(
            r.findings,
            [
                "idle jitter.jitter, period 300 µs: maximum 22.0 µs = 7.3 % of the period: hard",
                "loaded jitter.jitter, period 300 µs: maximum 100.0 µs = 33.3 % of the period: soft",
                "loaded jitter.jitter, period 1000 µs: maximum 40.0 µs = 4.0 % of the period: hard",
            ]
        );
        assert_eq!(
            r.conclusion,
            "Hard real-time for the periods 1000 µs (4.0 %) (worst jitter within 10 % of the period); soft real-time for 300 µs (33.3 %)."
        );
        assert_eq!(r.met, Some(false));
    }

    #[test]
    fn predictability_ranks_against_the_papers_platforms() {
        // L_act with load: Linux Std 37.3/48.2/617.5 (16.6x), Xen 8.7/0.3/18.7 (2.1x).
        let run = run_with("net.activation", &[(50_000_000, vec![10_000, 10_000, 40_000])]);
        let runs = [("with-load", &run)];
        let mut s = spec("predictability", vec![cell("with-load", "net.activation", None)]);
        s.reference = vec![
            ReferenceRow { label: "Linux Std".into(), mean: 37.3, sd: 48.2, max: 617.5 },
            ReferenceRow { label: "Linux Xen".into(), mean: 8.7, sd: 0.3, max: 18.7 },
        ];
        let r = judge(&s, &conditions(&runs)).unwrap();
        // mean 20, SD 14.1 (population), max 40: 2.0 times the mean.
        assert_eq!(
            r.findings[0],
            "with-load net.activation: mean 20.0 µs, SD 14.1 µs, max 40.0 µs: the maximum is 2.0 times the mean"
        );
        assert!(r.findings[1].starts_with("The paper: Linux Std SD 48.2 µs, max 16.6 times the mean"));
        assert!(r.conclusion.contains("a lower SD than 1 and a maximum closer to the mean than 2 of the paper's 2"));
    }

    #[test]
    fn share_below_and_lower_by() {
        let run = run_with("timer.latency", &[(100_000, vec![1_000; 99].into_iter().chain([5_000]).collect())]);
        let runs = [("periodic", &run)];
        let mut s = spec("share-below", vec![cell("periodic", "timer.latency", Some("below(2us)"))]);
        s.percent = Some(99.0);
        let r = judge(&s, &conditions(&runs)).unwrap();
        assert_eq!(r.met, Some(true));
        assert_eq!(r.findings[0], "periodic timer.latency: 99.00 % of the samples below 2.0 µs (at least 99 %)");
        let mut s = spec("lower-by", vec![cell("periodic", "timer.latency", Some("max"))]);
        s.percent = Some(95.0);
        let r = judge(&s, &conditions(&runs)).unwrap();
        assert_eq!(r.values_ns, [Some(5_000)]);
        let pairs = lower_by_pairs(95.0, &[("rt".into(), Some(100_000)), ("xenomai".into(), Some(4_000))]);
        assert_eq!(pairs, ["xenomai (4.0 µs) is 96.0 % lower than rt (100.0 µs): at least 95 %, as the paper says"]);
    }

    #[test]
    fn schedulability_charges_the_worst_jitter_and_switch_and_the_papers_figures() {
        // t1: C 50 µs, T 300 µs; t2: C 2 ms, T 10 ms. With J 100 µs and CS 38 µs (the paper's
        // worst): R1 = 100 + 50 + 76 = 226 µs; R2 = 100 + 3714 = 3814 µs (hand iteration).
        let idle = run_with("jitter.jitter", &[(300_000, vec![5_000, 22_000])]);
        let loaded = run_with("jitter.jitter", &[(300_000, vec![5_000, 100_000])]);
        let switch = run_with("switch.futex", &[(1_000_000, vec![30_000, 38_000])]);
        let runs = [("jitter-idle", &idle), ("jitter-ping", &loaded), ("switch-maximal", &switch)];
        let role = |c: &str, m: &str, r: &str| CellRef {
            role: Some(r.into()),
            label: Some(c.into()),
            ..cell(c, m, Some("max"))
        };
        let mut s = spec(
            "schedulability",
            vec![
                role("jitter-idle", "jitter.jitter", "jitter"),
                role("jitter-ping", "jitter.jitter", "jitter"),
                role("switch-maximal", "switch.futex", "switch"),
            ],
        );
        s.tasks = vec![
            rtlab_results::judgement::TaskSpec { name: "t1".into(), c: "50us".into(), t: "300us".into(), d: None },
            rtlab_results::judgement::TaskSpec { name: "t2".into(), c: "2ms".into(), t: "10ms".into(), d: None },
        ];
        s.paper_figures =
            Some(rtlab_results::judgement::PaperFigures { jitter: "100us".into(), switch: "38us".into() });
        let r = judge(&s, &conditions(&runs)).unwrap();
        assert_eq!(r.values_ns, [Some(100_000), Some(38_000)], "the worst of each role");
        assert_eq!(r.met, Some(true));
        assert!(r.findings.iter().any(|f| f == "With the paper's figures (J 100.0 µs, CS 38.0 µs): schedulable"));
        assert!(r.findings.iter().any(|f| f.starts_with("t1: C 50.0 µs, T 300.0 µs, D 300.0 µs, R 226.0 µs")));
        assert!(r
            .findings
            .iter()
            .any(|f| f.starts_with("t2: C 2,000.0 µs, T 10,000.0 µs, D 10,000.0 µs, R 3,814.0 µs")));
        assert!(r.findings.iter().any(|f| f.contains("(from jitter-ping)")));
        // A hypervisor's millisecond: t1 cannot meet 300 µs.
        let late = run_with("jitter.jitter", &[(300_000, vec![5_000, 4_000_000])]);
        let runs = [("jitter-idle", &idle), ("jitter-ping", &late), ("switch-maximal", &switch)];
        let r = judge(&s, &conditions(&runs)).unwrap();
        assert_eq!(r.met, Some(false));
        assert!(r.conclusion.starts_with("Not schedulable"), "{}", r.conclusion);
    }
}
