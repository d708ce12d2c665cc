//! The paper's own conclusions, recomputed from this machine's runs: every
//! [`JudgementSpec`] of a suite file gives a [`JudgementResult`] (suite.json `judgements`).
//! Pure computation on saved runs; the words a reader sees are the findings and the
//! conclusion, which the suite report shows after the tables.

use crate::measure::{measurements_for, statistic_of, ConditionRun};
use rtlab_analysis::units::{format_us, thousands};
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
        "worst-case" => worst_case(spec, conditions, &mut result)?,
        "count-within" => count_within(spec, conditions, &mut result)?,
        "lowest" => lowest(spec, conditions, &mut result)?,
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
    let grouped = thousands(digits.parse::<u64>().unwrap_or(0));
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

/// Per task period: the worst of the metric as a share of the period (Dodiu's "the jitter is
/// at most 7,4% from the task's main period"). The shortest period is judged by the paper's
/// own words: a share of at least `percent` is what the paper calls "not satisfactory" for
/// its shortest period (33 %). The longer periods are acceptable to the paper "as long as it
/// will not exceed the values imposed by system designers": they are judged against
/// `designer_percent` when it is given, and otherwise only reported. A designer's limit
/// applies to the shortest period too where the paper's words do not reject it.
fn jitter_share(
    spec: &JudgementSpec,
    conditions: &[ConditionRun],
    out: &mut JudgementResult,
) -> Result<(), ReportError> {
    let rejected = spec.percent.unwrap_or(33.0);
    let designer = spec.designer_percent;
    // (period ns, worst share over the cells)
    let mut per_period: Vec<(u64, f64)> = Vec::new();
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
            out.findings.push(format!(
                "{}, period {} µs: maximum {} µs = {share:.1} % of the period",
                cell.shown(),
                Setting::Period.label(period as f64),
                us(max),
            ));
            match per_period.iter_mut().find(|(p, _)| *p == period) {
                Some(entry) => entry.1 = entry.1.max(share),
                None => per_period.push((period, share)),
            }
        }
    }
    if !missing.is_empty() {
        out.findings.push(format!("Not measured: {}.", missing.join("; ")));
    }
    per_period.sort_by_key(|(p, _)| *p);
    let Some((&(shortest, short_share), longer)) = per_period.split_first() else {
        out.conclusion = "Cannot be judged: no period jitter was measured.".into();
        return Ok(());
    };
    let shown = |p: u64, share: f64| format!("{} µs ({share:.1} %)", Setting::Period.label(p as f64));
    let mut sentences = Vec::new();
    // Some(false) as soon as a period fails; None while a period is left unjudged.
    let mut met = Some(true);
    if short_share >= rejected {
        met = Some(false);
        sentences.push(format!(
            "The shortest period, {}, is not satisfactory in the paper's words: its worst jitter is at least the {rejected} % of the period that the paper rejects for its shortest period (\"with high frequency real-time systems this is not acceptable\").",
            shown(shortest, short_share)
        ));
    } else {
        let against = match designer {
            Some(d) if short_share <= d => format!("; it is within the designer's limit of {d} %"),
            Some(d) => {
                met = Some(false);
                format!("; it exceeds the designer's limit of {d} %")
            }
            None => {
                met = None;
                "; the paper names no share it would accept there".into()
            }
        };
        sentences.push(format!(
            "The shortest period, {}, stays below the {rejected} % that the paper calls not satisfactory{against}.",
            shown(shortest, short_share)
        ));
    }
    if !longer.is_empty() {
        let list = |keep: &dyn Fn(f64) -> bool| {
            longer.iter().filter(|(_, s)| keep(*s)).map(|(p, s)| shown(*p, *s)).collect::<Vec<_>>().join(", ")
        };
        match designer {
            Some(d) => {
                let (within, over) = (list(&|s| s <= d), list(&|s| s > d));
                if !over.is_empty() {
                    met = Some(false);
                }
                sentences.push(match (within.is_empty(), over.is_empty()) {
                    (false, true) => format!("The longer periods stay within the designer's limit of {d} %: {within}."),
                    (true, false) => format!("The longer periods exceed the designer's limit of {d} %: {over}."),
                    _ => format!(
                        "Of the longer periods, {within} stay within the designer's limit of {d} %; {over} exceed it."
                    ),
                });
            }
            None => {
                if met == Some(true) {
                    met = None;
                }
                sentences.push(format!(
                    "The longer periods, {}, the paper accepts \"as long as it will not exceed the values imposed by system designers\": not judged here (give designer_percent, a designer's limit as a share of the period).",
                    list(&|_| true)
                ));
            }
        }
    }
    if !missing.is_empty() && met == Some(true) {
        met = None;
    }
    out.met = met;
    out.conclusion = sentences.join(" ");
    Ok(())
}

/// What a `predictability` criterion is called in a conclusion ("a lower SD").
fn criterion_words(criterion: &str) -> &'static str {
    match criterion {
        "mean" => "a lower mean",
        "sd" => "a lower SD",
        _ => "a maximum closer to the mean",
    }
}

/// The paper's criteria of predictability (`criteria`: a lower mean, a lower standard
/// deviation, a maximum closer to the mean), per cell, ranked against the paper's platforms.
fn predictability(
    spec: &JudgementSpec,
    conditions: &[ConditionRun],
    out: &mut JudgementResult,
) -> Result<(), ReportError> {
    let criteria = spec.predictability_criteria();
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
        let (mean_us, sd_us) = (mean / 1000.0, sd / 1000.0);
        let ranks: Vec<String> = criteria
            .iter()
            .map(|c| {
                let better = match *c {
                    "mean" => spec.reference.iter().filter(|r| mean_us < r.mean).count(),
                    "sd" => spec.reference.iter().filter(|r| sd_us < r.sd).count(),
                    _ => spec.reference.iter().filter(|r| r.mean > 0.0 && ratio < r.max / r.mean).count(),
                };
                format!("{} than {better}", criterion_words(c))
            })
            .collect();
        conclusions.push(format!(
            "{}: {} of the paper's {} platforms",
            cell.shown(),
            ranks.join(" and "),
            spec.reference.len()
        ));
    }
    if !spec.reference.is_empty() {
        let refs: Vec<String> = spec
            .reference
            .iter()
            .map(|r| {
                let parts: Vec<String> = criteria
                    .iter()
                    .map(|c| match *c {
                        "mean" => format!("mean {:.1} µs", r.mean),
                        "sd" => format!("SD {:.1} µs", r.sd),
                        _ => format!("max {:.1} times the mean", r.max / r.mean),
                    })
                    .collect();
                format!("{} {}", r.label, parts.join(", "))
            })
            .collect();
        out.findings.push(format!("The paper: {}.", refs.join("; ")));
    }
    let named = criteria.iter().map(|c| criterion_words(c).trim_start_matches("a ")).collect::<Vec<_>>().join(", ");
    out.conclusion = if conclusions.is_empty() {
        format!("The paper's criteria, computed for this machine: the platform with {named} is the more predictable.")
    } else {
        format!("By the paper's criteria ({named}): {}.", conclusions.join("; "))
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
    let value = if spec.cells.len() > 1 {
        format!("value (the worst of its {} cells)", spec.cells.len())
    } else {
        "value".to_string()
    };
    out.conclusion = format!(
        "A statement between configurations: run the suite on each (each kernel with its own --label) and `rtlab compare` the suite directories; the report then says for each pair whether one's {value} is at least {} % lower than the other's.",
        spec.percent.unwrap_or(0.0)
    );
    Ok(())
}

/// The value a `lower-by` judgement compares across suite runs: the worst (largest) of its
/// cells' values, when every cell was measured (one cell: its value).
pub fn lower_by_value(values_ns: &[Option<i64>]) -> Option<i64> {
    values_ns.iter().copied().collect::<Option<Vec<i64>>>()?.into_iter().max()
}

/// A cell as the findings name it, and its time in ns or why it has none.
type TimeCell = (String, Result<i64, String>);

/// Each cell's time statistic, or why there is none (the value or the reason, by cell).
fn time_cells(
    spec: &JudgementSpec,
    conditions: &[ConditionRun],
    out: &mut JudgementResult,
) -> Result<Vec<TimeCell>, ReportError> {
    let mut values = Vec::new();
    for (i, cell) in spec.cells.iter().enumerate() {
        let statistic = statistic_or_max(spec, i);
        let value = value_of(cell, statistic, conditions)?
            .and_then(|v| time_of(&v).ok_or_else(|| format!("{statistic} is not a time")));
        out.values_ns.push(value.as_ref().ok().copied());
        out.findings.push(match &value {
            Ok(ns) => format!("{} {statistic}: {} µs", cell.shown(), us(*ns)),
            Err(why) => format!("{} {statistic}: not measured: {why}", cell.shown()),
        });
        values.push((cell.shown(), value));
    }
    Ok(values)
}

/// The worst of the cells against two bounds: below the first is the paper's better class
/// (Regnier: Preempt-RT and Xenomai "below 20 µs"), over the second its worse one (standard
/// Linux "over 100 µs"). One value over the second bound decides it, whatever was not
/// measured (a missing value could only be worse); below the first needs every value.
fn worst_case(spec: &JudgementSpec, conditions: &[ConditionRun], out: &mut JudgementResult) -> Result<(), ReportError> {
    let usage = |reason: String| ReportError::Usage { what: "suite".into(), reason };
    let bounds = spec.bounds_ns().map_err(usage)?;
    let (&[low, high], [better, worse]) = (bounds.as_slice(), spec.classes.as_slice()) else {
        return Err(usage("a worst-case judgement needs two bounds and two classes".into()));
    };
    let values = time_cells(spec, conditions, out)?;
    let missing = values.iter().filter(|(_, v)| v.is_err()).count();
    let Some((worst_cell, worst)) =
        values.iter().filter_map(|(name, v)| v.as_ref().ok().map(|ns| (name, *ns))).max_by_key(|(_, ns)| *ns)
    else {
        out.conclusion = "Cannot be judged: none of the values it needs was measured.".into();
        return Ok(());
    };
    let (low_us, high_us) = (us(low as i64), us(high as i64));
    let worst_text = format!("the worst case is {} µs ({worst_cell})", us(worst));
    let unmeasured = match missing {
        0 => String::new(),
        1 => "; one value was not measured".into(),
        n => format!("; {n} values were not measured"),
    };
    if worst > high as i64 {
        out.met = Some(false);
        out.conclusion = format!("Over {high_us} µs: {worst_text}, as the paper found for {worse}{unmeasured}.");
    } else if missing > 0 {
        out.conclusion = format!(
            "Cannot be judged: {worst_text}, not over {high_us} µs, but below {low_us} µs needs every value{unmeasured}."
        );
    } else if worst < low as i64 {
        out.met = Some(true);
        out.conclusion = format!("Below {low_us} µs: {worst_text}, the precision the paper found for {better}.");
    } else {
        out.met = Some(false);
        out.conclusion = format!(
            "Neither: {worst_text}, not below {low_us} µs (the paper's {better}) and not over {high_us} µs (its {worse})."
        );
    }
    Ok(())
}

/// The samples of a histogram within [from, to), each bucket counted by its middle value,
/// as the figures' fixed bins count them ([`rtlab_analysis::curve::fixed_bins`]).
fn count_within_histogram(histogram: &rtlab_analysis::LatencyHistogram, from_ns: u64, to_ns: u64) -> u64 {
    let hdr = histogram.hdr();
    hdr.iter_recorded()
        .filter(|bucket| {
            let value = bucket.value_iterated_to();
            let (low, high) = (hdr.lowest_equivalent(value), hdr.highest_equivalent(value));
            let middle = low + (high - low) / 2;
            (from_ns..to_ns).contains(&middle)
        })
        .map(|bucket| bucket.count_at_value())
        .sum()
}

/// Per cell, the samples within [from, to) (Regnier's Figure 9: "over 100,000 events had
/// both activation and interrupt latencies within [10, 11] µs"): more than `count` in every
/// cell. A run with no more samples than `count` cannot show it (the paper's 14-hour run).
fn count_within(
    spec: &JudgementSpec,
    conditions: &[ConditionRun],
    out: &mut JudgementResult,
) -> Result<(), ReportError> {
    let usage = |reason: String| ReportError::Usage { what: "suite".into(), reason };
    let (from, to) = spec.within_ns().map_err(usage)?;
    let want = spec.count.unwrap_or(0);
    let interval = format!("[{}, {}) µs", us(from as i64), us(to as i64));
    let want_text = thousands(want);
    let (mut failed, mut not_measured, mut too_few) = (false, Vec::new(), Vec::new());
    for cell in &spec.cells {
        let found = match measurements_of(cell, StatisticSpec::Max, conditions) {
            Ok(found) => found,
            Err(why) => {
                out.values_ns.push(None);
                out.findings.push(format!("{}: not measured: {why}", cell.shown()));
                not_measured.push(cell.shown());
                continue;
            }
        };
        let combined = combine(&found)?;
        let total = combined.moments.count;
        let within = combined.histogram.as_ref().map(|h| count_within_histogram(h, from, to)).unwrap_or(0);
        out.values_ns.push(Some(within as i64));
        let share = if total > 0 { 100.0 * within as f64 / total as f64 } else { 0.0 };
        out.findings.push(format!(
            "{}: {} of {} samples within {interval} ({share:.1} %)",
            cell.shown(),
            thousands(within),
            thousands(total)
        ));
        if within > want {
            continue;
        }
        if total <= want {
            too_few.push(format!("{} has {} samples in all", cell.shown(), thousands(total)));
        } else {
            failed = true;
        }
    }
    if failed {
        out.met = Some(false);
        out.conclusion = format!("No: not over {want_text} samples within {interval} in every cell.");
    } else if !not_measured.is_empty() {
        out.conclusion = format!("Cannot be judged: not measured: {}.", not_measured.join(", "));
    } else if !too_few.is_empty() {
        out.conclusion = format!(
            "Cannot be judged: {}; over {want_text} samples within {interval} needs a longer run.",
            too_few.join(", ")
        );
    } else {
        out.met = Some(true);
        out.conclusion = format!("Yes: over {want_text} samples within {interval} in every cell, as the paper found.");
    }
    Ok(())
}

/// The first cell's statistic against the others' (the Xenomai/RTAI paper: "the periodic
/// timer interrupt handler show[s] the lowest scheduling jitter"): met when it is strictly
/// the lowest.
fn lowest(spec: &JudgementSpec, conditions: &[ConditionRun], out: &mut JudgementResult) -> Result<(), ReportError> {
    let values = time_cells(spec, conditions, out)?;
    let Some((first, rest)) = values.split_first() else { return Ok(()) };
    let (Ok(first_ns), true) = (&first.1, rest.iter().all(|(_, v)| v.is_ok())) else {
        out.conclusion = "Cannot be judged: not every value it needs was measured.".into();
        return Ok(());
    };
    let statistic = statistic_or_max(spec, 0);
    let lower_or_equal: Vec<String> = rest
        .iter()
        .filter_map(|(name, v)| {
            v.as_ref().ok().filter(|ns| **ns <= *first_ns).map(|ns| format!("{name} ({} µs)", us(*ns)))
        })
        .collect();
    if lower_or_equal.is_empty() {
        out.met = Some(true);
        out.conclusion =
            format!("Yes: {} has the lowest {statistic} ({} µs), as the paper says.", first.0, us(*first_ns));
    } else {
        out.met = Some(false);
        out.conclusion = format!(
            "No: {} ({} µs) is not the lowest {statistic}: {} as low or lower.",
            first.0,
            us(*first_ns),
            lower_or_equal.join(", ")
        );
    }
    Ok(())
}

/// A task set of the suite file analysed the paper's way (rate-monotonic priorities) with
/// the response-time analysis of `rtlab check`, which charges this machine's worst J to
/// every release and 2·CS to every job (J and CS from the suite's own conditions), and with
/// the paper's figures beside it.
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
    let charged = "the response-time analysis charges the jitter J to every release and 2·CS to every job";
    out.conclusion = if analysis.schedulable {
        format!("Schedulable with this machine's jitter and task-switch time ({charged}){tolerance}.")
    } else {
        format!("Not schedulable with this machine's jitter and task-switch time ({charged}){tolerance}.")
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
            criteria: vec![],
            designer_percent: None,
            classes: vec![],
            within: vec![],
            count: None,
        }
    }

    fn cell(condition: &str, metric: &str, statistic: Option<&str>) -> CellRef {
        CellRef {
            condition: condition.into(),
            metric: metric.into(),
            figure: None,
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

    /// Dodiu's Table 1 (full load) as runs: 300 µs 100 µs (33.3 %), 500 µs 92 µs (18.4 %),
    /// 1 ms 80 µs (8.0 %), 2 ms 72 µs (3.6 %), 5 ms 66 µs (1.3 %), 10 ms 94 µs (0.9 %).
    fn dodiu_table_1() -> RunResult {
        let rows = [(300, 100), (500, 92), (1000, 80), (2000, 72), (5000, 66), (10000, 94)];
        let values: Vec<(u64, Vec<i64>)> = rows.iter().map(|(t, max)| (t * 1000, vec![2_000, max * 1000])).collect();
        run_with("jitter.jitter", &values)
    }

    fn dodiu_spec(designer: Option<f64>) -> JudgementSpec {
        let mut s =
            spec("jitter-share", vec![cell("idle", "jitter.jitter", None), cell("loaded", "jitter.jitter", None)]);
        s.percent = Some(33.0);
        s.designer_percent = designer;
        s
    }

    #[test]
    fn jitter_share_judges_the_shortest_period_by_the_papers_words_and_the_others_by_a_designer() {
        let idle = run_with("jitter.jitter", &[(300_000, vec![1_000, 22_000])]);
        let loaded = dodiu_table_1();
        let runs = [("idle", &idle), ("loaded", &loaded)];
        let r = judge(&dodiu_spec(None), &conditions(&runs)).unwrap();
        assert_eq!(r.findings[0], "idle jitter.jitter, period 300 µs: maximum 22.0 µs = 7.3 % of the period");
        assert_eq!(r.findings[2], "loaded jitter.jitter, period 500 µs: maximum 92.0 µs = 18.4 % of the period");
        // Under the old rule (hard at most 10 %), the paper's own 500 µs row was "soft".
        assert!(r.findings.iter().all(|f| !f.contains("soft") && !f.contains("hard")), "{:?}", r.findings);
        assert_eq!(
            r.conclusion,
            "The shortest period, 300 µs (33.3 %), is not satisfactory in the paper's words: its worst jitter is at least the 33 % of the period that the paper rejects for its shortest period (\"with high frequency real-time systems this is not acceptable\"). \
             The longer periods, 500 µs (18.4 %), 1000 µs (8.0 %), 2000 µs (3.6 %), 5000 µs (1.3 %), 10000 µs (0.9 %), the paper accepts \"as long as it will not exceed the values imposed by system designers\": not judged here (give designer_percent, a designer's limit as a share of the period)."
        );
        assert_eq!(r.met, Some(false));
        // A designer's limit of 20 % accepts every longer period, 10 % only the last four.
        let r = judge(&dodiu_spec(Some(20.0)), &conditions(&runs)).unwrap();
        assert!(r.conclusion.ends_with(
            "The longer periods stay within the designer's limit of 20 %: 500 µs (18.4 %), 1000 µs (8.0 %), 2000 µs (3.6 %), 5000 µs (1.3 %), 10000 µs (0.9 %)."
        ), "{}", r.conclusion);
        assert_eq!(r.met, Some(false), "the shortest period is still rejected");
        let r = judge(&dodiu_spec(Some(10.0)), &conditions(&runs)).unwrap();
        assert!(r.conclusion.ends_with(
            "Of the longer periods, 1000 µs (8.0 %), 2000 µs (3.6 %), 5000 µs (1.3 %), 10000 µs (0.9 %) stay within the designer's limit of 10 %; 500 µs (18.4 %) exceed it."
        ), "{}", r.conclusion);
        // Idle only (7.3 % at 300 µs): below the paper's 33 %; without a designer's limit the
        // paper's words do not decide it.
        let runs = [("idle", &idle)];
        let mut s = dodiu_spec(None);
        s.cells.truncate(1);
        let r = judge(&s, &conditions(&runs)).unwrap();
        assert_eq!(
            r.conclusion,
            "The shortest period, 300 µs (7.3 %), stays below the 33 % that the paper calls not satisfactory; the paper names no share it would accept there."
        );
        assert_eq!(r.met, None);
        s.designer_percent = Some(10.0);
        let r = judge(&s, &conditions(&runs)).unwrap();
        assert!(r.conclusion.ends_with("; it is within the designer's limit of 10 %."), "{}", r.conclusion);
        assert_eq!(r.met, Some(true));
        s.designer_percent = Some(5.0);
        let r = judge(&s, &conditions(&runs)).unwrap();
        assert!(r.conclusion.ends_with("; it exceeds the designer's limit of 5 %."), "{}", r.conclusion);
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
    fn predictability_ranks_by_the_criteria_the_paper_names() {
        // Regnier on L_irq under load: "the lower mean and standard deviation values".
        // 10, 10 and 13 µs: mean 11.0 µs, SD 1.414 µs (population), max 1.2 times the mean.
        let run = run_with("timer.irq", &[(50_000_000, vec![10_000, 10_000, 13_000])]);
        let runs = [("timer-with-load", &run)];
        let mut s = spec("predictability", vec![cell("timer-with-load", "timer.irq", None)]);
        s.cells[0].label = Some("L_irq".into());
        s.reference = vec![
            ReferenceRow { label: "Linux Std".into(), mean: 10.4, sd: 1.9, max: 67.7 },
            ReferenceRow { label: "Linux Prt".into(), mean: 58.5, sd: 26.4, max: 245.9 },
            ReferenceRow { label: "Linux PrtND".into(), mean: 10.6, sd: 1.6, max: 35.8 },
            ReferenceRow { label: "Linux Xen".into(), mean: 10.2, sd: 0.1, max: 20.8 },
        ];
        s.criteria = vec!["mean".into(), "sd".into()];
        let r = judge(&s, &conditions(&runs)).unwrap();
        assert_eq!(
            r.findings[1],
            "The paper: Linux Std mean 10.4 µs, SD 1.9 µs; Linux Prt mean 58.5 µs, SD 26.4 µs; Linux PrtND mean 10.6 µs, SD 1.6 µs; Linux Xen mean 10.2 µs, SD 0.1 µs."
        );
        assert_eq!(
            r.conclusion,
            "By the paper's criteria (lower mean, lower SD): L_irq: a lower mean than 1 and a lower SD than 3 of the paper's 4 platforms."
        );
        // Before, every predictability judgement ranked SD and max/mean: this one said "a
        // maximum closer to the mean than 4", which is not what the paper's L_irq words weigh.
        s.criteria.clear();
        let r = judge(&s, &conditions(&runs)).unwrap();
        assert_eq!(
            r.conclusion,
            "By the paper's criteria (lower SD, maximum closer to the mean): L_irq: a lower SD than 3 and a maximum closer to the mean than 4 of the paper's 4 platforms."
        );
    }

    fn worst_case_spec() -> JudgementSpec {
        let mut s = spec(
            "worst-case",
            vec![cell("unloaded", "timer.irq", Some("max")), cell("loaded", "net.activation", Some("max"))],
        );
        s.bounds = vec!["20us".into(), "100us".into()];
        s.classes = vec!["Linux Prt and Linux Xen".into(), "standard Linux".into()];
        s
    }

    #[test]
    fn worst_case_places_the_machine_on_the_papers_sides() {
        let s = worst_case_spec();
        let unloaded = run_with("timer.irq", &[(50_000_000, vec![9_000, 18_400])]);
        let judged = |loaded_max: i64| {
            let loaded = run_with("net.activation", &[(50_000_000, vec![4_600, loaded_max])]);
            let runs = [("unloaded", &unloaded), ("loaded", &loaded)];
            judge(&s, &conditions(&runs)).unwrap()
        };
        // Standard Linux's 617.5 µs.
        let r = judged(617_500);
        assert_eq!(r.findings, ["unloaded timer.irq max: 18.4 µs", "loaded net.activation max: 617.5 µs"]);
        assert_eq!(r.met, Some(false));
        assert_eq!(
            r.conclusion,
            "Over 100.0 µs: the worst case is 617.5 µs (loaded net.activation), as the paper found for standard Linux."
        );
        // Xenomai's 18.7 µs.
        let r = judged(18_700);
        assert_eq!(r.met, Some(true));
        assert_eq!(
            r.conclusion,
            "Below 20.0 µs: the worst case is 18.7 µs (loaded net.activation), the precision the paper found for Linux Prt and Linux Xen."
        );
        // 100 µs exactly is not "over 100 µs"; 20 µs is not "below 20 µs".
        let r = judged(100_000);
        assert_eq!(r.met, Some(false));
        assert_eq!(
            r.conclusion,
            "Neither: the worst case is 100.0 µs (loaded net.activation), not below 20.0 µs (the paper's Linux Prt and Linux Xen) and not over 100.0 µs (its standard Linux)."
        );
        assert_eq!(judged(20_000).met, Some(false));
        // A value not measured: over 100 µs is still decided, below 20 µs is not.
        let only = [("unloaded", &unloaded)];
        let r = judge(&s, &conditions(&only)).unwrap();
        assert_eq!(r.met, None);
        assert_eq!(
            r.conclusion,
            "Cannot be judged: the worst case is 18.4 µs (unloaded timer.irq), not over 100.0 µs, but below 20.0 µs needs every value; one value was not measured."
        );
        assert_eq!(r.findings[1], "loaded net.activation max: not measured: condition \"loaded\" was not run");
        let late = run_with("timer.irq", &[(50_000_000, vec![9_000, 245_900])]);
        let only = [("unloaded", &late)];
        let r = judge(&s, &conditions(&only)).unwrap();
        assert_eq!(r.met, Some(false));
        assert!(
            r.conclusion.ends_with("as the paper found for standard Linux; one value was not measured."),
            "{}",
            r.conclusion
        );
    }

    #[test]
    fn count_within_counts_the_figures_bin_and_needs_a_long_enough_run() {
        let mut s =
            spec("count-within", vec![cell("long", "net.delivery", None), cell("long", "net.activation", None)]);
        s.cells[0].label = Some("L_irq".into());
        s.cells[1].label = Some("L_act".into());
        s.within = vec!["10us".into(), "11us".into()];
        s.count = Some(100_000);
        // [10, 11) µs: 10.000 and 10.999 µs are in, 9.999 and 11.000 µs are out.
        let edges = [9_999, 10_000, 10_999, 11_000];
        let irq: Vec<i64> = std::iter::repeat_n(10_500, 100_000).chain(edges).collect();
        let act: Vec<i64> = std::iter::repeat_n(10_500, 99_999).chain(edges).chain([30_000; 50]).collect();
        let mut run = run_with("net.delivery", &[(50_000_000, irq)]);
        let act_run = run_with("net.activation", &[(50_000_000, act)]);
        run.measurements.extend(act_run.measurements);
        let runs = [("long", &run)];
        let r = judge(&s, &conditions(&runs)).unwrap();
        assert_eq!(
            r.findings,
            [
                "L_irq: 100,002 of 100,004 samples within [10.0, 11.0) µs (100.0 %)",
                "L_act: 100,001 of 100,053 samples within [10.0, 11.0) µs (99.9 %)",
            ]
        );
        assert_eq!(r.values_ns, [Some(100_002), Some(100_001)]);
        assert_eq!(r.met, Some(true));
        assert_eq!(r.conclusion, "Yes: over 100,000 samples within [10.0, 11.0) µs in every cell, as the paper found.");
        s.count = Some(100_001);
        let r = judge(&s, &conditions(&runs)).unwrap();
        assert_eq!(r.met, Some(false));
        assert_eq!(r.conclusion, "No: not over 100,001 samples within [10.0, 11.0) µs in every cell.");
        // Ten minutes at 20 Hz: 12,000 events cannot hold 100,000.
        let short = run_with("net.delivery", &[(50_000_000, vec![10_500; 12_000])]);
        let runs = [("long", &short)];
        let mut s1 = s.clone();
        s1.cells.truncate(1);
        s1.count = Some(100_000);
        let r = judge(&s1, &conditions(&runs)).unwrap();
        assert_eq!(r.met, None);
        assert_eq!(r.findings, ["L_irq: 12,000 of 12,000 samples within [10.0, 11.0) µs (100.0 %)"]);
        assert_eq!(
            r.conclusion,
            "Cannot be judged: L_irq has 12,000 samples in all; over 100,000 samples within [10.0, 11.0) µs needs a longer run."
        );
        // A cell not measured is said as such, not as a short run.
        let r = judge(&s1, &conditions(&[])).unwrap();
        assert_eq!(r.met, None);
        assert_eq!(r.conclusion, "Cannot be judged: not measured: L_irq.");
    }

    #[test]
    fn lowest_says_whether_the_first_cell_is_strictly_the_lowest() {
        // The split of one run: the handler's latency varies less than the task's.
        let mut run = run_with("timer.irq", &[(100_000, vec![1_000, 2_000, 3_000])]);
        let task = run_with("timer.latency", &[(100_000, vec![2_000, 6_000, 10_000])]);
        run.measurements.extend(task.measurements);
        let runs = [("periodic-split", &run)];
        let mut s = spec(
            "lowest",
            vec![
                cell("periodic-split", "timer.irq", Some("stddev")),
                cell("periodic-split", "timer.latency", Some("stddev")),
            ],
        );
        s.cells[0].label = Some("timer interrupt handler".into());
        s.cells[1].label = Some("user-space task".into());
        let r = judge(&s, &conditions(&runs)).unwrap();
        // Population SDs: sqrt(2/3) µs = 0.816 µs and 4 sqrt(2/3) µs = 3.266 µs.
        assert_eq!(r.findings, ["timer interrupt handler stddev: 0.8 µs", "user-space task stddev: 3.3 µs"]);
        assert_eq!(r.values_ns, [Some(816), Some(3_266)]);
        assert_eq!(r.met, Some(true));
        assert_eq!(r.conclusion, "Yes: timer interrupt handler has the lowest stddev (0.8 µs), as the paper says.");
        s.cells.swap(0, 1);
        let r = judge(&s, &conditions(&runs)).unwrap();
        assert_eq!(r.met, Some(false));
        assert_eq!(
            r.conclusion,
            "No: user-space task (3.3 µs) is not the lowest stddev: timer interrupt handler (0.8 µs) as low or lower."
        );
        let empty = run_with("timer.latency", &[(100_000, vec![1_000])]);
        let runs = [("periodic-split", &empty)];
        let r = judge(&s, &conditions(&runs)).unwrap();
        assert_eq!(r.met, None);
        assert_eq!(r.conclusion, "Cannot be judged: not every value it needs was measured.");
    }

    #[test]
    fn lower_by_compares_the_worst_of_its_cells() {
        assert_eq!(lower_by_value(&[Some(5_000)]), Some(5_000));
        assert_eq!(lower_by_value(&[Some(5_000), Some(9_000), Some(7_000)]), Some(9_000));
        assert_eq!(lower_by_value(&[Some(5_000), None]), None);
        assert_eq!(lower_by_value(&[]), None);
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
