//! Running a suite: its conditions in order, each one `rtlab run` made by a
//! [`ConditionBackend`] (the binary's lifecycle runner; a mock in tests), then the suite's
//! record (suite.json) from what they measured.
//!
//! A condition that cannot run (a load's program missing, a probe unavailable) is recorded
//! as failed and the others still run; a stop request (SIGINT) lets the running condition
//! keep what it measured and marks the rest not run.

use crate::file::SuiteFile;
use crate::measure::{measure_table, ConditionRun};
use rtlab_report::ReportError;
use rtlab_results::host::SystemInfo;
use rtlab_results::run::RunResult;
use rtlab_results::suite::{ConditionRecord, ConditionStatus, SuiteRecord, SUITE_SCHEMA};
use rtlab_results::verdict::Verdict;
use std::time::Instant;

/// One condition, ready to run (or already known not to be able to), in the suite's order.
#[derive(Debug, Clone)]
pub struct PreparedCondition {
    /// `<suite label>-<condition>`.
    pub run_label: String,
    /// What it runs, in a line: "timer every 10 ms on CPU 0, 10,000 samples, load idle".
    pub summary: String,
    /// Why it cannot run on this machine (a load's program missing), known before it starts.
    pub cannot_run: Option<String>,
    /// Capabilities it needs that this run lacks, with why (its cells say "not measured").
    pub gaps: Vec<String>,
    /// Why it is not run at all although it could be (it needs a second station and none
    /// was given): its cells say "not measured: " and this.
    pub not_run: Option<String>,
}

/// What running one condition gave.
#[derive(Debug)]
pub enum ConditionOutcome {
    /// It ran (perhaps interrupted, see `result.interrupted`): the saved run, why it did not
    /// measure all that was asked when a load failed, and the capabilities it needs that the
    /// backend found missing when it ran (with why: it ran again without them; e.g. the
    /// split's tracing refused or lost), added to the prepared condition's `gaps`.
    Ran { result: Box<RunResult>, failed_to_load: Option<String>, missing: Vec<String> },
    /// It could not run: why, in one line.
    Failed(String),
}

/// Runs the conditions: the binary's `RunPlan` and lifecycle runner, or a mock.
pub trait ConditionBackend {
    /// Runs condition `index` of the suite (its plan was made when it was prepared).
    fn run(&mut self, index: usize) -> ConditionOutcome;
    /// Whether a stop was asked for (the first SIGINT/SIGTERM).
    fn stop_requested(&self) -> bool;
    /// A progress line for the person watching (the backend decides whether it is shown).
    fn progress(&mut self, line: &str);
}

/// The conditions' records and runs, in the suite's order.
#[derive(Debug)]
pub struct ConditionsRun {
    pub records: Vec<ConditionRecord>,
    pub runs: Vec<Option<RunResult>>,
    /// A stop was asked for while the suite ran.
    pub interrupted: bool,
}

/// Runs every prepared condition through `backend`, in order. `prepared` has one entry per
/// condition of `suite`.
pub fn run_conditions(
    suite: &SuiteFile,
    prepared: &[PreparedCondition],
    backend: &mut dyn ConditionBackend,
) -> ConditionsRun {
    let count = prepared.len();
    let mut records = Vec::with_capacity(count);
    let mut runs = Vec::with_capacity(count);
    for (i, (c, p)) in suite.conditions.iter().zip(prepared).enumerate() {
        let mut record = ConditionRecord {
            name: c.name.clone(),
            title: c.title.clone(),
            directory: c.name.clone(),
            run_label: p.run_label.clone(),
            status: ConditionStatus::NotRun,
            reason: None,
            needs: c.needs.clone(),
            gaps: p.gaps.clone(),
            plan: p.summary.clone(),
        };
        let mut run = None;
        if let Some(why) = &p.not_run {
            // The report says "not measured: " before it.
            record.reason = Some(why.clone());
            backend.progress(&format!("\n[{}/{count}] {}: not measured: {why}\n", i + 1, c.name));
        } else if backend.stop_requested() {
            record.reason = Some("the suite was interrupted before this condition".into());
        } else {
            backend.progress(&format!("\n[{}/{count}] {}: {} ({})\n", i + 1, c.name, c.title, p.summary));
            let started = Instant::now();
            let outcome = match &p.cannot_run {
                Some(why) => ConditionOutcome::Failed(why.clone()),
                None => backend.run(i),
            };
            match outcome {
                ConditionOutcome::Failed(why) => {
                    record.status = ConditionStatus::Failed;
                    record.reason = Some(why);
                }
                ConditionOutcome::Ran { result, failed_to_load, missing } => {
                    for gap in missing {
                        if !record.gaps.contains(&gap) {
                            record.gaps.push(gap);
                        }
                    }
                    record.status = if failed_to_load.is_some() || result.interrupted {
                        ConditionStatus::Incomplete
                    } else {
                        ConditionStatus::Done
                    };
                    record.reason = failed_to_load.or_else(|| {
                        result.interrupted.then(|| "interrupted: it holds what was measured until then".into())
                    });
                    run = Some(*result);
                }
            }
            let shown = match (&record.status, &record.reason) {
                (ConditionStatus::Done, _) if !record.gaps.is_empty() => format!(
                    "done in {:.0} s, partly: not measured: {}",
                    started.elapsed().as_secs_f64(),
                    record.gaps.join("; ")
                ),
                (ConditionStatus::Done, _) => format!("done in {:.0} s", started.elapsed().as_secs_f64()),
                (s, Some(why)) => {
                    format!("{}: {why}", if *s == ConditionStatus::Failed { "FAILED" } else { "incomplete" })
                }
                (_, None) => "stopped".into(),
            };
            backend.progress(&format!("[{}/{count}] {}: {shown}\n", i + 1, c.name));
        }
        records.push(record);
        runs.push(run);
    }
    ConditionsRun { records, runs, interrupted: backend.stop_requested() }
}

/// What the suite run says about itself, in `rtlab run`'s precedence: a condition that could
/// not measure what was asked, then an interruption, then a condition that ran without a
/// capability it needs, then the verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SuiteOutcome {
    /// These conditions ("name (why)") failed, or were incomplete without an interruption.
    Incomplete(Vec<String>),
    Interrupted,
    /// These conditions ("name (not measured: why)") ran without a capability they need
    /// (the split where tracing is unavailable): their other cells are measured, the cells
    /// that need it say why not.
    Degraded(Vec<String>),
    /// The combined verdict says a requirement was not met, or could not be decided
    /// (UNDECIDED: not met, safe by default).
    NotMet,
    /// Everything ran; no requirement, or all met.
    Complete,
}

impl SuiteOutcome {
    pub fn of(record: &SuiteRecord) -> SuiteOutcome {
        let failed: Vec<String> = record
            .conditions
            .iter()
            .filter(|c| {
                c.status == ConditionStatus::Failed || (c.status == ConditionStatus::Incomplete && !record.interrupted)
            })
            .map(|c| format!("{} ({})", c.name, c.reason.as_deref().unwrap_or("failed")))
            .collect();
        let degraded: Vec<String> = record
            .conditions
            .iter()
            .filter(|c| c.is_degraded())
            .map(|c| format!("{} (not measured: {})", c.name, c.gaps.join("; ")))
            .collect();
        if !failed.is_empty() {
            SuiteOutcome::Incomplete(failed)
        } else if record.interrupted {
            SuiteOutcome::Interrupted
        } else if !degraded.is_empty() {
            SuiteOutcome::Degraded(degraded)
        } else if record.verdict.as_ref().is_some_and(|v| !v.met) {
            SuiteOutcome::NotMet
        } else {
            SuiteOutcome::Complete
        }
    }
}

/// Where and how a suite ran, besides its conditions.
#[derive(Debug, Clone)]
pub struct SuiteContext<'a> {
    pub label: &'a str,
    pub mode: crate::file::Mode,
    pub host: &'a SystemInfo,
    pub simulated: bool,
    /// RFC 3339 start and end (fixed ones for a simulated run).
    pub start_time: String,
    pub end_time: String,
    pub tool_version: &'a str,
}

/// suite.json's record: the conditions, the paper's tables computed from their runs, the
/// combined verdict.
pub fn suite_record(
    suite: &SuiteFile,
    context: &SuiteContext,
    conditions: &ConditionsRun,
) -> Result<SuiteRecord, ReportError> {
    let runs = &conditions.runs;
    let condition_runs: Vec<ConditionRun> = conditions
        .records
        .iter()
        .zip(runs)
        .map(|(c, run)| ConditionRun {
            name: &c.name,
            run: run.as_ref(),
            missing: match c.status {
                ConditionStatus::Failed => {
                    Some(format!("the condition failed: {}", c.reason.as_deref().unwrap_or("?")))
                }
                ConditionStatus::NotRun => {
                    Some(c.reason.clone().unwrap_or_else(|| "not run: the suite was interrupted before it".into()))
                }
                _ => None,
            },
            gaps: c.gaps.clone(),
        })
        .collect();
    let names = suite.names();
    let tables = suite
        .tables
        .iter()
        .map(|t| measure_table(t, &names, &condition_runs, context.label))
        .collect::<Result<Vec<_>, _>>()?;
    let verdicts: Vec<&Verdict> = runs.iter().flatten().filter_map(|r| r.verdict.as_ref()).collect();
    let mut requirements: Vec<String> = Vec::new();
    for r in runs.iter().flatten().flat_map(|r| r.verdict.iter()).flat_map(|v| &v.checks) {
        if !requirements.contains(&r.requirement.text) {
            requirements.push(r.requirement.text.clone());
        }
    }
    let judgements =
        suite.judgements.iter().map(|j| crate::judge::judge(j, &condition_runs)).collect::<Result<Vec<_>, _>>()?;
    Ok(SuiteRecord {
        schema: SUITE_SCHEMA.into(),
        suite: suite.info.clone(),
        label: context.label.to_string(),
        quick: context.mode == crate::file::Mode::Quick,
        long: context.mode == crate::file::Mode::Long,
        file: suite.source.clone(),
        file_text: suite.text.clone(),
        tool_version: context.tool_version.to_string(),
        start_time: context.start_time.clone(),
        end_time: context.end_time.clone(),
        interrupted: conditions.interrupted,
        simulated: context.simulated,
        machine: machine_line(context.host),
        requirements,
        conditions: conditions.records.clone(),
        tables,
        figures: suite.figures.clone(),
        verdict: Verdict::combine(&verdicts),
        judgements,
    })
}

/// "host · kernel 6.18.0 (PREEMPT_DYNAMIC) · AMD EPYC · 2 CPUs · virtual machine (kvm)".
pub fn machine_line(host: &SystemInfo) -> String {
    let mut parts = vec![host.hostname.clone()];
    parts.push(format!("kernel {} ({})", host.kernel_release, rtlab_report::host::preemption_name(host)));
    if !host.cpu_model.is_empty() {
        parts.push(host.cpu_model.clone());
    }
    parts.push(format!("{} CPU{}", host.online_cpus.len(), if host.online_cpus.len() == 1 { "" } else { "s" }));
    if host.virtualization.guest {
        parts.push(match &host.virtualization.hypervisor {
            Some(h) => format!("virtual machine ({h})"),
            None => "virtual machine".into(),
        });
    }
    parts.join(" · ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::file::{Condition, ExperimentCheck, Mode};
    use rtlab_results::suite::CellValue;

    struct AnyKeys;

    impl ExperimentCheck for AnyKeys {
        fn estimate_ns(&self, _: &Condition, _: Mode) -> Result<u64, String> {
            Ok(1_000_000_000)
        }
    }

    const SUITE: &str = r#"
        [suite]
        name = "mock"
        title = "Mock"
        [experiment]
        probe = "timer"
        [[condition]]
        name = "first"
        [[condition]]
        name = "second"
        [[condition]]
        name = "third"
        [[table]]
        id = "t1"
        title = "Maxima"
        columns = [{ title = "max", metric = "timer.wakeup", statistic = "max" }]
        rows = [
          { title = "First", condition = "first" },
          { title = "Second", condition = "second" },
          { title = "Third", condition = "third" },
        ]
    "#;

    fn saved_run() -> RunResult {
        serde_json::from_str(include_str!("../../rtlab-report/tests/fixtures/simulated-120s.run.json")).unwrap()
    }

    /// Runs what it is told, in order, and stops when told to.
    struct Mock {
        outcomes: Vec<Option<ConditionOutcome>>,
        stop_after: Option<usize>,
        ran: Vec<usize>,
        lines: Vec<String>,
    }

    impl ConditionBackend for Mock {
        fn run(&mut self, index: usize) -> ConditionOutcome {
            self.ran.push(index);
            self.outcomes[index].take().expect("each condition runs once")
        }
        fn stop_requested(&self) -> bool {
            self.stop_after.is_some_and(|n| self.ran.len() >= n)
        }
        fn progress(&mut self, line: &str) {
            self.lines.push(line.to_string());
        }
    }

    fn prepared(cannot_run: &[Option<&str>]) -> Vec<PreparedCondition> {
        cannot_run
            .iter()
            .enumerate()
            .map(|(i, why)| PreparedCondition {
                run_label: format!("lab-{i}"),
                summary: format!("plan {i}"),
                cannot_run: why.map(str::to_string),
                gaps: Vec::new(),
                not_run: None,
            })
            .collect()
    }

    fn ran(result: RunResult) -> Option<ConditionOutcome> {
        Some(ConditionOutcome::Ran { result: Box::new(result), failed_to_load: None, missing: Vec::new() })
    }

    fn record_of(suite: &SuiteFile, conditions: &ConditionsRun) -> SuiteRecord {
        let host = saved_run().host;
        let context = SuiteContext {
            label: "lab",
            mode: Mode::Full,
            host: &host,
            simulated: true,
            start_time: "start".into(),
            end_time: "end".into(),
            tool_version: "0.0.0",
        };
        suite_record(suite, &context, conditions).unwrap()
    }

    #[test]
    fn a_condition_that_cannot_run_fails_and_the_others_still_run() {
        let suite = SuiteFile::parse(SUITE, "mock.toml", &AnyKeys).unwrap();
        let mut mock = Mock {
            outcomes: vec![ran(saved_run()), None, Some(ConditionOutcome::Failed("probe unavailable".into()))],
            stop_after: None,
            ran: Vec::new(),
            lines: Vec::new(),
        };
        let conditions =
            run_conditions(&suite, &prepared(&[None, Some("stress-ng not found in PATH"), None]), &mut mock);
        assert_eq!(mock.ran, [0, 2], "the condition known not to run is not handed to the backend");
        let statuses: Vec<_> = conditions.records.iter().map(|r| r.status).collect();
        assert_eq!(statuses, [ConditionStatus::Done, ConditionStatus::Failed, ConditionStatus::Failed]);
        assert_eq!(conditions.records[1].reason.as_deref(), Some("stress-ng not found in PATH"));
        assert_eq!(conditions.runs.iter().filter(|r| r.is_some()).count(), 1);
        assert!(!conditions.interrupted);
        assert_eq!(mock.lines.len(), 6, "a line before and after each condition: {:?}", mock.lines);
        assert!(mock.lines[3].contains("FAILED: stress-ng not found in PATH"));

        let record = record_of(&suite, &conditions);
        assert_eq!(record.conditions.len(), 3);
        assert_eq!(record.tables.len(), 1);
        assert_eq!(record.machine, machine_line(&saved_run().host));
        assert_eq!(
            SuiteOutcome::of(&record),
            SuiteOutcome::Incomplete(vec![
                "second (stress-ng not found in PATH)".into(),
                "third (probe unavailable)".into()
            ])
        );
    }

    #[test]
    fn a_stop_keeps_the_running_condition_and_marks_the_rest_not_run() {
        let suite = SuiteFile::parse(SUITE, "mock.toml", &AnyKeys).unwrap();
        let mut interrupted = saved_run();
        interrupted.interrupted = true;
        let mut mock = Mock {
            outcomes: vec![ran(saved_run()), ran(interrupted), ran(saved_run())],
            stop_after: Some(2),
            ran: Vec::new(),
            lines: Vec::new(),
        };
        let conditions = run_conditions(&suite, &prepared(&[None, None, None]), &mut mock);
        assert_eq!(mock.ran, [0, 1]);
        let statuses: Vec<_> = conditions.records.iter().map(|r| r.status).collect();
        assert_eq!(statuses, [ConditionStatus::Done, ConditionStatus::Incomplete, ConditionStatus::NotRun]);
        assert!(conditions.records[2].reason.as_deref().is_some_and(|r| r.contains("interrupted before")));
        assert!(conditions.interrupted);
        let record = record_of(&suite, &conditions);
        assert!(record.interrupted);
        assert_eq!(SuiteOutcome::of(&record), SuiteOutcome::Interrupted);
    }

    #[test]
    fn a_load_that_failed_makes_the_condition_incomplete_with_its_reason() {
        let suite = SuiteFile::parse(SUITE, "mock.toml", &AnyKeys).unwrap();
        let mut mock = Mock {
            outcomes: vec![
                ran(saved_run()),
                Some(ConditionOutcome::Ran {
                    result: Box::new(saved_run()),
                    failed_to_load: Some("stress-ng died".into()),
                    missing: Vec::new(),
                }),
                ran(saved_run()),
            ],
            stop_after: None,
            ran: Vec::new(),
            lines: Vec::new(),
        };
        let conditions = run_conditions(&suite, &prepared(&[None, None, None]), &mut mock);
        assert_eq!(conditions.records[1].status, ConditionStatus::Incomplete);
        assert_eq!(conditions.records[1].reason.as_deref(), Some("stress-ng died"));
        let record = record_of(&suite, &conditions);
        assert_eq!(SuiteOutcome::of(&record), SuiteOutcome::Incomplete(vec!["second (stress-ng died)".into()]));
    }

    #[test]
    fn every_condition_done_is_complete() {
        let suite = SuiteFile::parse(SUITE, "mock.toml", &AnyKeys).unwrap();
        let mut mock = Mock {
            outcomes: vec![ran(saved_run()), ran(saved_run()), ran(saved_run())],
            stop_after: None,
            ran: Vec::new(),
            lines: Vec::new(),
        };
        let conditions = run_conditions(&suite, &prepared(&[None, None, None]), &mut mock);
        let record = record_of(&suite, &conditions);
        assert!(record.conditions.iter().all(|c| c.status == ConditionStatus::Done));
        assert_eq!(SuiteOutcome::of(&record), SuiteOutcome::Complete);
    }

    #[test]
    fn a_condition_without_the_split_measures_the_rest_and_the_suite_is_not_complete() {
        let text = r#"
            [suite]
            name = "mock"
            title = "Mock"
            [experiment]
            probe = "timer"
            [[condition]]
            name = "unloaded"
            needs = ["split"]
            [[condition]]
            name = "loaded"
            [[table]]
            id = "t4"
            title = "t1 and t2"
            columns = [
              { title = "t1 max", metric = "timer.irq", statistic = "max" },
              { title = "t2 max", metric = "timer.latency", statistic = "max" },
            ]
            rows = [{ title = "Unloaded", condition = "unloaded" }, { title = "Loaded", condition = "loaded" }]
        "#;
        let suite = SuiteFile::parse(text, "mock.toml", &AnyKeys).unwrap();
        let why = "tracefs is not mounted at /sys/kernel/tracing";
        let gap = crate::file::missing_capability("split", Some(why)).flatten().unwrap();
        let mut prepared = prepared(&[None, None]);
        prepared[0].gaps = vec![gap.clone()];
        let mut mock = Mock {
            outcomes: vec![ran(saved_run()), ran(saved_run())],
            stop_after: None,
            ran: Vec::new(),
            lines: Vec::new(),
        };
        let conditions = run_conditions(&suite, &prepared, &mut mock);
        assert_eq!(mock.ran, [0, 1], "the degraded condition still runs");
        assert!(conditions.records.iter().all(|r| r.status == ConditionStatus::Done));
        assert!(conditions.records[0].is_degraded() && !conditions.records[1].is_degraded());
        assert!(
            mock.lines[1].contains("partly: not measured: needs the interrupt/activation split"),
            "{:?}",
            mock.lines
        );

        let record = record_of(&suite, &conditions);
        let row = &record.tables[0].measured.values[0];
        assert_eq!(row[0], CellValue::NotMeasured { reason: gap.clone() }, "t1 says why");
        assert!(gap.ends_with("traces the kernel: tracefs is not mounted at /sys/kernel/tracing"), "{gap}");
        assert!(matches!(row[1], CellValue::Time { .. }), "t2 is measured: {:?}", row[1]);
        assert_eq!(SuiteOutcome::of(&record), SuiteOutcome::Degraded(vec![format!("unloaded (not measured: {gap})")]));

        // suite.json keeps which capability was missing and why; a file without `gaps` loads.
        let json = serde_json::to_value(&record).unwrap();
        assert_eq!(json["conditions"][0]["gaps"][0], gap.as_str());
        assert!(json["conditions"][1].get("gaps").is_none());
        let mut old = json.clone();
        old["conditions"][0].as_object_mut().unwrap().remove("gaps");
        let loaded: SuiteRecord = serde_json::from_value(old).unwrap();
        assert!(loaded.conditions[0].gaps.is_empty());
        assert_eq!(SuiteOutcome::of(&loaded), SuiteOutcome::Complete);
    }

    #[test]
    fn a_split_lost_while_running_degrades_the_condition_as_one_refused_before() {
        let suite = SuiteFile::parse(SUITE, "mock.toml", &AnyKeys).unwrap();
        let gap = crate::file::missing_capability("split", Some("the kernel trace could not be collected: EIO"))
            .flatten()
            .unwrap();
        let lost = ConditionOutcome::Ran {
            result: Box::new(saved_run()),
            failed_to_load: None,
            missing: vec![gap.clone(), gap.clone()],
        };
        let mut mock = Mock {
            outcomes: vec![ran(saved_run()), Some(lost), ran(saved_run())],
            stop_after: None,
            ran: Vec::new(),
            lines: Vec::new(),
        };
        let conditions = run_conditions(&suite, &prepared(&[None, None, None]), &mut mock);
        assert_eq!(conditions.records[1].status, ConditionStatus::Done);
        assert_eq!(conditions.records[1].gaps, std::slice::from_ref(&gap), "said once");
        assert!(
            mock.lines[3].contains("partly: not measured: ") && mock.lines[3].ends_with("EIO\n"),
            "{:?}",
            mock.lines
        );
        let record = record_of(&suite, &conditions);
        assert_eq!(SuiteOutcome::of(&record), SuiteOutcome::Degraded(vec![format!("second (not measured: {gap})")]));
        // An interruption still says so first; a failed condition before both.
        let mut interrupted = record.clone();
        interrupted.interrupted = true;
        assert_eq!(SuiteOutcome::of(&interrupted), SuiteOutcome::Interrupted);
        let mut failed = record.clone();
        failed.conditions[2].status = ConditionStatus::Failed;
        failed.conditions[2].reason = Some("probe unavailable".into());
        assert_eq!(SuiteOutcome::of(&failed), SuiteOutcome::Incomplete(vec!["third (probe unavailable)".into()]));
    }

    #[test]
    fn tables_of_split_metrics_say_how_many_samples_the_split_covered() {
        use rtlab_results::split::{SplitCounts, SplitCoverage, SplitRun, Unsplit};
        use rtlab_results::suite::LoadedSuite;
        let text = SUITE.replace(
            r#"columns = [{ title = "max", metric = "timer.wakeup", statistic = "max" }]"#,
            r#"columns = [
              { title = "t1", metric = "timer.irq", statistic = "max" },
              { title = "sched", metric = "timer.sched", statistic = "max" },
              { title = "t2", metric = "timer.latency", statistic = "max" },
            ]"#,
        );
        let suite = SuiteFile::parse(&text, "mock.toml", &AnyKeys).unwrap();
        let counts = |cpu, samples, split, no_switch_in, inferred| SplitCoverage {
            scenario: "idle".into(),
            probe: "timer".into(),
            counts: SplitCounts {
                cpu,
                tid: None,
                samples,
                split,
                unsplit: vec![(Unsplit::NoSwitchIn, no_switch_in), (Unsplit::EventsLost, 0)],
                sum_within_1us: split,
                switch_in_inferred: inferred,
                max_sum_error_ns: 0,
            },
        };
        let mut split_run = saved_run();
        split_run.split = Some(SplitRun {
            backend: "tracefs".into(),
            backend_detail: String::new(),
            backend_choice: String::new(),
            overhead: None,
            coverage: vec![counts(0, 6_000, 5_990, 10, 0), counts(1, 4_000, 3_987, 13, 2)],
            events: 1,
            events_lost: 0,
            explain_above_ns: None,
            above_threshold: 0,
            explanations: Vec::new(),
        });
        let mut mock = Mock {
            outcomes: vec![ran(split_run), ran(saved_run()), ran(saved_run())],
            stop_after: None,
            ran: Vec::new(),
            lines: Vec::new(),
        };
        let conditions = run_conditions(&suite, &prepared(&[None, None, None]), &mut mock);
        let record = record_of(&suite, &conditions);
        let loaded = LoadedSuite { dir: "lab".into(), record, runs: conditions.runs };
        let lines = crate::report::split_coverage_lines(&loaded.record.tables[0].spec, &loaded);
        assert_eq!(
            lines,
            ["timer.irq, timer.sched of first from 9,977 of 10,000 samples (not split: no switch-in 23); \
              2 with the switch-in inferred (not recorded by the kernel)"],
            "the runs without a split add nothing (their cells say why)"
        );
        let views = crate::report::table_views(std::slice::from_ref(&loaded)).unwrap();
        assert!(views[0].notes.iter().any(|n| n.starts_with("timer.irq, timer.sched of first from 9,977 of 10,000")));
        let markdown = crate::report::markdown(std::slice::from_ref(&loaded)).unwrap();
        assert!(markdown.contains("from 9,977 of 10,000 samples"), "{markdown}");
    }
}
