//! A suite's tables computed from its conditions' runs: every cell of a table
//! specification ([`rtlab_results::suite::TableSpec`]) is a statistic of one metric of one
//! condition's run, or says why it is not measured.

use rtlab_analysis::{percentile, LatencyHistogram, Moments};
use rtlab_report::digest::combine;
use rtlab_report::ReportError;
use rtlab_results::run::{Measurement, RunResult};
use rtlab_results::suite::{CellSpec, CellValue, ConditionNames, MeasuredRows, StatisticSpec, SuiteTable, TableSpec};

/// What the computation of a table knows of one condition.
pub struct ConditionRun<'a> {
    pub name: &'a str,
    /// The run, when it produced one.
    pub run: Option<&'a RunResult>,
    /// Why there is no run (failed, not run).
    pub missing: Option<String>,
    /// Capabilities the condition needs that this rtlab lacks, with why: a metric absent
    /// from the run is "not measured" for this reason.
    pub gaps: Vec<String>,
}

/// Computes every cell of `spec` from the conditions' runs. The spec must have passed
/// [`TableSpec::check`]; a cell that cannot be computed says why instead.
pub fn measure_table(
    spec: &TableSpec,
    names: &ConditionNames,
    conditions: &[ConditionRun],
    label: &str,
) -> Result<SuiteTable, ReportError> {
    let cells = spec.cells(names).map_err(|e| ReportError::Usage { what: "suite".into(), reason: e.to_string() })?;
    let mut values = Vec::new();
    for row in &cells {
        let mut out = Vec::new();
        for cell in row {
            out.push(measure_cell(cell, conditions)?);
        }
        values.push(out);
    }
    Ok(SuiteTable { spec: spec.clone(), measured: MeasuredRows { label: label.to_string(), values } })
}

/// The measurements a cell takes from a run: its metric, in its scenario (or the run's
/// only one), matching its selector.
pub fn cell_measurements<'a>(cell: &CellSpec, run: &'a RunResult) -> Vec<&'a Measurement> {
    let scenario = cell.scenario.clone().or_else(|| run.scenarios.first().map(|s| s.name.clone()));
    run.measurements
        .iter()
        .filter(|m| Some(&m.scenario) == scenario.as_ref() && m.metric == cell.metric && cell.selector.matches(m))
        .collect()
}

/// The measurements a cell takes from its condition's run, or why there are none (the
/// condition failed or was not run, a capability it needs is missing, the run has no such
/// metric).
pub fn measurements_for<'a>(cell: &CellSpec, conditions: &[ConditionRun<'a>]) -> Result<Vec<&'a Measurement>, String> {
    let Some(condition) = conditions.iter().find(|c| c.name == cell.condition) else {
        return Err(format!("condition {:?} was not run", cell.condition));
    };
    let Some(run) = condition.run else {
        return Err(condition.missing.clone().unwrap_or_else(|| "the condition did not run".into()));
    };
    let measurements = cell_measurements(cell, run);
    if measurements.is_empty() {
        if !condition.gaps.is_empty() {
            return Err(condition.gaps.join("; "));
        }
        let at = if cell.selector.is_empty() { String::new() } else { format!(" at {}", cell.selector.describe()) };
        return Err(format!("the run of {:?} has no {} measurements{at}", cell.condition, cell.metric));
    }
    Ok(measurements)
}

/// A cell's statistic (its `minus` left aside), or why it is not measured.
pub fn statistic_of(cell: &CellSpec, conditions: &[ConditionRun]) -> Result<Result<CellValue, String>, ReportError> {
    let measurements = match measurements_for(cell, conditions) {
        Ok(found) => found,
        Err(why) => return Ok(Err(why)),
    };
    let combined = combine(&measurements)?;
    Ok(statistic_value(cell.statistic, combined.histogram.as_ref(), &combined.moments)
        .ok_or_else(|| "no samples".into()))
}

fn measure_cell(cell: &CellSpec, conditions: &[ConditionRun]) -> Result<CellValue, ReportError> {
    let value = match statistic_of(cell, conditions)? {
        Ok(value) => value,
        Err(reason) => return Ok(CellValue::NotMeasured { reason }),
    };
    let Some((minus_metric, minus_statistic)) = &cell.minus else { return Ok(value) };
    // The subtracted range: the same condition, scenario and selection, another metric.
    let other = CellSpec { metric: minus_metric.clone(), statistic: *minus_statistic, minus: None, ..cell.clone() };
    Ok(match statistic_of(&other, conditions)? {
        Ok(subtracted) => range_difference(&value, &subtracted).unwrap_or(value),
        Err(reason) => CellValue::NotMeasured { reason },
    })
}

/// `a` less `b`, both ranges: [a low − b high, a high − b low] (Akamina's context switch
/// range from its t2 and t1 bins). None when either is not a range.
pub fn range_difference(a: &CellValue, b: &CellValue) -> Option<CellValue> {
    let bounds = |v: &CellValue| match *v {
        CellValue::Range { from_ns, to_ns } | CellValue::Bin { from_ns, to_ns, .. } => Some((from_ns, to_ns)),
        _ => None,
    };
    let ((a_from, a_to), (b_from, b_to)) = (bounds(a)?, bounds(b)?);
    Some(CellValue::Range { from_ns: a_from - b_to, to_ns: a_to - b_from })
}

/// [`rtlab_analysis::fullest_bin`] as a cell: the bin and its share of the samples.
pub fn fullest_bin(histogram: &LatencyHistogram, width_ns: u64) -> Option<CellValue> {
    let bin = rtlab_analysis::fullest_bin(histogram, width_ns)?;
    Some(CellValue::Bin { from_ns: bin.from_ns as i64, to_ns: bin.to_ns as i64, share: bin.share(histogram.count()) })
}

/// The share of the histogram's samples below `bound_ns`, each bucket counted by its middle
/// value (as [`rtlab_analysis::fullest_bin`] counts). None without samples.
pub fn share_below(histogram: &LatencyHistogram, bound_ns: u64) -> Option<CellValue> {
    let total = histogram.count();
    if total == 0 {
        return None;
    }
    let hdr = histogram.hdr();
    let below: u64 =
        histogram.buckets().filter(|(value, _)| hdr.median_equivalent(*value) < bound_ns).map(|(_, count)| count).sum();
    Some(CellValue::Share { share: below as f64 / total as f64 })
}

/// A statistic of a distribution: min, max, mean and stddev exact (from the moments),
/// percentiles the histogram's nearest-rank value clamped to the exact extremes (as in
/// every rtlab summary), a bin counted from the histogram. None without samples.
pub fn statistic_value(
    statistic: StatisticSpec,
    histogram: Option<&LatencyHistogram>,
    moments: &Moments,
) -> Option<CellValue> {
    if statistic == StatisticSpec::Count {
        return Some(CellValue::Count { count: moments.count });
    }
    let (min, max) = (moments.min()?, moments.max()?);
    let at = |p: f64| histogram.and_then(|h| percentile(h, p / 100.0)).map(|v| v.clamp(min, max));
    Some(match statistic {
        StatisticSpec::Min => CellValue::Time { ns: min },
        StatisticSpec::Max => CellValue::Time { ns: max },
        StatisticSpec::Mean => CellValue::Time { ns: moments.mean()?.round() as i64 },
        StatisticSpec::Stddev => CellValue::Time { ns: moments.stddev()?.round() as i64 },
        StatisticSpec::Percentile(p) => CellValue::Time { ns: at(p)? },
        StatisticSpec::Range(a, b) => CellValue::Range { from_ns: at(a)?, to_ns: at(b)? },
        StatisticSpec::Bin(width_ns) => fullest_bin(histogram?, width_ns)?,
        StatisticSpec::Below(bound_ns) => share_below(histogram?, bound_ns)?,
        StatisticSpec::Count => CellValue::Count { count: moments.count },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtlab_results::suite::*;

    #[test]
    fn statistics_parse_and_print_back() {
        for text in [
            "min",
            "max",
            "mean",
            "stddev",
            "count",
            "p99.999",
            "p50",
            "range(p1.5,p98.5)",
            "bin(500ns)",
            "below(2000ns)",
        ] {
            assert_eq!(StatisticSpec::parse(text).unwrap().to_string(), text);
        }
        assert_eq!(StatisticSpec::parse(" range(p1.5, p98.5) ").unwrap(), StatisticSpec::Range(1.5, 98.5));
        assert_eq!(StatisticSpec::parse("bin(0.5us)").unwrap(), StatisticSpec::Bin(500));
        assert_eq!(StatisticSpec::parse("bin(2us)").unwrap(), StatisticSpec::Bin(2000));
        for bad in ["p100", "p0", "pxx", "median", "range(p9)", "range(p9,p1)", "", "bin(0us)", "bin(wide)"] {
            let e = StatisticSpec::parse(bad).unwrap_err();
            assert!(e.contains(STATISTIC_GRAMMAR), "{e}");
        }
    }

    fn names() -> Vec<(String, Vec<String>)> {
        vec![("unloaded".into(), vec!["idle".into()]), ("both".into(), vec!["idle".into(), "akamina".into()])]
    }

    fn column(condition: &str, statistic: &str) -> ColumnSpec {
        ColumnSpec {
            title: "c".into(),
            condition: Some(condition.into()),
            metric: Some("timer".into()),
            statistic: Some(statistic.into()),
            scenario: None,
            selector: None,
            minus: None,
        }
    }

    fn table(columns: Vec<ColumnSpec>) -> TableSpec {
        TableSpec {
            id: "t".into(),
            title: "T".into(),
            source: None,
            row_header: "OS".into(),
            unit: Unit::Us,
            columns,
            paper_rows: vec![PaperRow { label: "2.4".into(), values: vec!["1".into()] }],
            rows: vec![],
            notes: vec![],
        }
    }

    #[test]
    fn table_checks_name_what_is_wrong() {
        let n = names();
        let names = ConditionNames { conditions: &n };
        let ok = table(vec![column("unloaded", "max")]);
        ok.check(&names).unwrap();
        assert_eq!(ok.cells(&names).unwrap()[0][0].metric, "timer.latency");
        let e = table(vec![column("loaded", "max")]).check(&names).unwrap_err().to_string();
        assert!(e.contains("condition \"loaded\" is not a condition"), "{e}");
        let e = table(vec![column("unloaded", "p101")]).check(&names).unwrap_err().to_string();
        assert!(e.contains("column 1") && e.contains("p101"), "{e}");
        let e = table(vec![column("both", "max")]).check(&names).unwrap_err().to_string();
        assert!(e.contains("several scenarios"), "{e}");
        let mut two = table(vec![column("unloaded", "max"), column("unloaded", "min")]);
        let e = two.check(&names).unwrap_err().to_string();
        assert!(e.contains("has 1 values for 2 columns"), "{e}");
        two.paper_rows[0].values.push("".into());
        two.check(&names).unwrap();
    }

    #[test]
    fn settings_rows_fill_in_what_columns_leave_out() {
        let n = names();
        let names = ConditionNames { conditions: &n };
        let mut t = table(vec![ColumnSpec { statistic: None, ..column("unloaded", "max") }]);
        t.paper_rows.clear();
        t.rows = vec![
            RowSpec {
                title: "min".into(),
                condition: None,
                metric: None,
                statistic: Some("min".into()),
                scenario: None,
                selector: Some(Selector { period: Some("300us".into()), rate: None, cpu: None }),
                paper: vec!["28".into()],
            },
            RowSpec {
                title: "max".into(),
                condition: None,
                metric: None,
                statistic: None,
                scenario: None,
                selector: None,
                paper: vec![],
            },
        ];
        let e = t.check(&names).unwrap_err().to_string();
        assert!(e.contains("row 2 (\"max\") column 1") && e.contains("no statistic"), "{e}");
        t.rows[1].statistic = Some("max".into());
        let cells = t.cells(&names).unwrap();
        assert_eq!(cells[0][0].statistic, StatisticSpec::Min);
        assert_eq!(cells[0][0].selector.period.as_deref(), Some("300us"));
        assert_eq!(cells[1][0].statistic, StatisticSpec::Max);
    }

    #[test]
    fn statistic_values_are_exact_from_moments_and_nearest_rank_from_the_histogram() {
        let mut h = LatencyHistogram::new(rtlab_analysis::DEFAULT_MAX_NS).unwrap();
        let mut m = Moments::new();
        for v in 1..=1000i64 {
            h.record(v * 1000);
            m.record(v * 1000);
        }
        let value = |s| statistic_value(s, Some(&h), &m).unwrap();
        assert_eq!(value(StatisticSpec::Max), CellValue::Time { ns: 1_000_000 });
        assert_eq!(value(StatisticSpec::Min), CellValue::Time { ns: 1000 });
        assert_eq!(value(StatisticSpec::Mean), CellValue::Time { ns: 500_500 });
        assert_eq!(value(StatisticSpec::Count), CellValue::Count { count: 1000 });
        let CellValue::Range { from_ns, to_ns } = value(StatisticSpec::Range(1.5, 98.5)) else { panic!() };
        assert_eq!(Some(from_ns), percentile(&h, 0.015));
        assert_eq!(Some(to_ns), percentile(&h, 0.985));
        assert_eq!(CellValue::Range { from_ns: 3500, to_ns: 4000 }.text(Unit::Us), "3.5 – 4.0");
        assert!(statistic_value(StatisticSpec::Max, None, &Moments::new()).is_none());
    }

    #[test]
    fn the_fullest_bin_is_counted_as_the_paper_counts_it() {
        // 970 samples in [12, 14) µs, 20 in [14, 16), 10 at 40 µs: the paper's "12 - 14".
        let mut h = LatencyHistogram::new(rtlab_analysis::DEFAULT_MAX_NS).unwrap();
        let mut m = Moments::new();
        let mut record = |v: i64, n: usize| {
            for _ in 0..n {
                h.record(v);
                m.record(v);
            }
        };
        record(12_000, 500);
        record(13_990, 470);
        record(14_000, 20);
        record(40_000, 10);
        let bin = statistic_value(StatisticSpec::Bin(2000), Some(&h), &m).unwrap();
        assert_eq!(bin, CellValue::Bin { from_ns: 12_000, to_ns: 14_000, share: 0.97 });
        assert_eq!(bin.text(Unit::Us), "12.0 – 14.0 (97.0 %)");
        // Ties go to the lower bin; no histogram, no bin.
        let mut tie = LatencyHistogram::new(rtlab_analysis::DEFAULT_MAX_NS).unwrap();
        tie.record(3_600);
        tie.record(4_100);
        let CellValue::Bin { from_ns, share, .. } = fullest_bin(&tie, 500).unwrap() else { panic!() };
        assert_eq!((from_ns, share), (3_500, 0.5));
        assert!(statistic_value(StatisticSpec::Bin(500), None, &m).is_none());
        // 500 + 470 of 1000 samples are below 14 µs.
        let below = statistic_value(StatisticSpec::Below(14_000), Some(&h), &m).unwrap();
        assert_eq!(below, CellValue::Share { share: 0.97 });
        assert_eq!(below.text(Unit::Us), "97.00 %");
        assert_eq!(StatisticSpec::parse("below(2us)").unwrap(), StatisticSpec::Below(2000));
    }

    #[test]
    fn a_difference_of_ranges_is_the_papers_context_switch_range() {
        // Akamina Table 5, 2.4 Linux: t2 12 - 14, t1 3.5 - 4.0, context switch 8.0 - 10.5.
        let t2 = CellValue::Bin { from_ns: 12_000, to_ns: 14_000, share: 0.98 };
        let t1 = CellValue::Bin { from_ns: 3_500, to_ns: 4_000, share: 0.99 };
        let cs = range_difference(&t2, &t1).unwrap();
        assert_eq!(cs, CellValue::Range { from_ns: 8_000, to_ns: 10_500 });
        assert_eq!(cs.text(Unit::Us), "8.0 – 10.5");
        assert!(range_difference(&CellValue::Time { ns: 1 }, &t1).is_none());
    }

    #[test]
    fn minus_takes_two_ranges() {
        let n = names();
        let names = ConditionNames { conditions: &n };
        let minus = |statistic: &str| ColumnSpec {
            minus: Some(Subtrahend { metric: "timer.irq".into(), statistic: statistic.into() }),
            ..column("unloaded", "bin(2us)")
        };
        let cells = table(vec![minus("bin(0.5us)")]).cells(&names).unwrap();
        assert_eq!(cells[0][0].minus, Some(("timer.irq".to_string(), StatisticSpec::Bin(500))));
        let e = table(vec![minus("max")]).check(&names).unwrap_err().to_string();
        assert!(e.contains("minus subtracts a range from a range"), "{e}");
    }
}
