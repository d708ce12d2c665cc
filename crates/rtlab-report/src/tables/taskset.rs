//! The table of a task set run for real (`rtlab run --taskset`): per scenario and task its
//! priority, C, T, D, the jobs released and the deadline misses, the measured worst response
//! beside the analysed R, and a flag where the measurement exceeded the analysis (the
//! explanation, naming the platform figure, goes under the table). The terminal summary
//! prints the same table per scenario ([`terminal_section`]) and ends with a one-line
//! conclusion on the deadline misses ([`conclusion`]).

use super::{headers, new_table, push_row, Cell, Table};
use crate::tables::text_table;
use crate::text::{capitalised, conclusion_prefix};
use rtlab_analysis::units::thousands;
use rtlab_results::run::RunResult;
use rtlab_results::set::ReportSet;
use rtlab_results::taskset::TasksetRun;

/// Id prefix of the tables: `taskset-<scenario>` (with the run's label before the scenario
/// when a report has several runs).
pub const TABLE: &str = "taskset";

/// ns as ms with three decimals: task parameters and response times are milliseconds.
fn ms(ns: i64) -> Cell {
    Cell { shown: format!("{:.3}", ns as f64 / 1e6), raw: ns.to_string() }
}

fn ms_u(ns: u64) -> Cell {
    ms(i64::try_from(ns).unwrap_or(i64::MAX))
}

/// The table of one scenario of `taskset`; None when the scenario measured no task.
pub fn scenario_table(taskset: &TasksetRun, scenario: &str, id: &str, title_suffix: &str) -> Option<Table> {
    let results: Vec<_> = taskset.results_of(scenario).collect();
    if results.is_empty() {
        return None;
    }
    let name = taskset.set.name.as_deref().map(|n| format!(" {n}")).unwrap_or_default();
    let mut table = new_table(
        id,
        &format!("Task set{name} run for real on CPU {}{title_suffix} (ms)", taskset.cpu),
        None,
        headers(&[
            "task",
            "priority",
            "C",
            "T",
            "D",
            "jobs",
            "misses",
            "worst response",
            "analysed R",
            "worst lateness",
            "vs analysis",
        ]),
    );
    for r in &results {
        let verdict = match (r.analysed_response_ns, r.exceeds_analysis) {
            (None, _) => "R > D",
            (Some(_), true) => "EXCEEDS R",
            (Some(_), false) if r.worst_response_ns.is_none() => "-",
            (Some(_), false) => "within R",
        };
        push_row(
            &mut table,
            vec![
                Cell::text(&r.task),
                Cell::text(r.priority.to_string()),
                ms_u(r.wcet_ns),
                ms_u(r.period_ns),
                ms_u(r.deadline_ns),
                Cell::count(r.jobs_released),
                Cell::count(r.deadline_misses),
                Cell::or_none(r.worst_response_ns, ms),
                Cell::or_none(r.analysed_response_ns, ms_u),
                Cell::or_none(r.worst_lateness_ns, ms),
                Cell::text(verdict),
            ],
        );
    }
    let a = &taskset.analysis;
    table.notes.push(format!(
        "Jobs: released in the window; misses: finished after their deadline, or unfinished when it passed. \
         Response = finish − release; lateness = finish − deadline (negative: early). Priorities {}.",
        a.order_rule
    ));
    table.notes.push(format!(
        "Analysed R: exact response-time analysis{}, U = {:.3}; \"R > D\": the analysis finds the task unschedulable.",
        if a.overheads == Default::default() { " with no platform overheads charged" } else { "" },
        a.utilization
    ));
    let mut exceeded = false;
    for r in &results {
        if let Some(excess) = taskset.excess_text(r) {
            table.notes.push(format!("{}: {excess}.", r.task));
            exceeded = true;
        }
    }
    if exceeded {
        let why = capitalised(&taskset.platform_text(scenario));
        table.notes.push(format!("Why R can be exceeded: {why}."));
    }
    Some(table)
}

/// Every task-set table of a report: per run with a task-set section, one per scenario.
pub fn report_tables(set: &ReportSet) -> Vec<Table> {
    let many = set.runs.len() > 1;
    let mut tables = Vec::new();
    for sourced in &set.runs {
        let run = &sourced.run;
        let Some(taskset) = &run.taskset else { continue };
        for scenario in &run.scenarios {
            let (id, suffix) = if many {
                (format!("{TABLE}-{}-{}", run.label, scenario.name), format!(", {} · {}", run.label, scenario.name))
            } else {
                (format!("{TABLE}-{}", scenario.name), format!(", {}", scenario.name))
            };
            tables.extend(scenario_table(taskset, &scenario.name, &id, &suffix));
        }
    }
    tables
}

/// The terminal summary's part for one scenario of a task-set run: its table as text.
pub fn terminal_section(run: &RunResult, scenario: &str) -> String {
    let Some(taskset) = &run.taskset else { return String::new() };
    match scenario_table(taskset, scenario, &format!("{TABLE}-{scenario}"), "") {
        Some(table) => format!("\n{}", text_table(&table)),
        None => String::new(),
    }
}

/// The one-line conclusion of a task-set run ("Conclusion: 0 deadline misses in 1,800 jobs
/// ..."), or None for a run without a task set.
pub fn conclusion(run: &RunResult) -> Option<String> {
    let taskset = run.taskset.as_ref()?;
    let (jobs, misses) = taskset.totals();
    let prefix = conclusion_prefix(run);
    let scenarios = taskset.results.iter().map(|r| r.scenario.as_str()).collect::<std::collections::BTreeSet<_>>();
    let where_ = |scenario: &str| if scenarios.len() > 1 { format!(" under {scenario}") } else { String::new() };
    let mut exceeded: Vec<&str> = Vec::new();
    for r in taskset.results.iter().filter(|r| r.exceeds_analysis) {
        if !exceeded.contains(&r.task.as_str()) {
            exceeded.push(&r.task);
        }
    }
    let mut line = format!("\n{prefix}: {} deadline misses in {} jobs", thousands(misses), thousands(jobs));
    if misses == 0 {
        line.push_str(&format!(" of {} tasks", taskset.analysis.tasks.len()));
    } else {
        let missing: Vec<String> = taskset
            .results
            .iter()
            .filter(|r| r.deadline_misses > 0)
            .map(|r| {
                format!(
                    "task {} {} of {}{}",
                    r.task,
                    thousands(r.deadline_misses),
                    thousands(r.jobs_released),
                    where_(&r.scenario)
                )
            })
            .collect();
        line.push_str(&format!(": {}", missing.join(", ")));
        line.push_str(if taskset.analysis.schedulable {
            "; the analysis found the set schedulable, so its assumptions did not hold"
        } else {
            "; the analysis found the set unschedulable, as measured"
        });
    }
    if exceeded.is_empty() {
        if taskset.results.iter().any(|r| r.worst_response_ns.is_some() && r.analysed_response_ns.is_some()) {
            line.push_str("; every measured worst response within its analysed R");
        }
    } else {
        line.push_str(&format!(
            "; measured worst response above the analysed R for {} (the table says which platform figure explains it)",
            exceeded.join(", ")
        ));
    }
    line.push_str(".\n");
    Some(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::taskset_example::example_run;
    use crate::terminal::TerminalSummary;
    use crate::Exporter;
    use rtlab_results::set::SourcedRun;

    fn set_of(runs: Vec<RunResult>) -> ReportSet {
        ReportSet {
            runs: runs.into_iter().map(|run| SourcedRun { source: format!("{}/run.json", run.label), run }).collect(),
            verdict: None,
        }
    }

    #[test]
    fn one_table_per_scenario_in_the_report() {
        let run = example_run();
        let tables = report_tables(&set_of(vec![run.clone()]));
        let ids: Vec<&str> = tables.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["taskset-idle", "taskset-cpu:threads=1+proc-read"]);
        // Rows in priority order; CSV keeps ns.
        assert_eq!(tables[1].rows[0][0], "ctrl");
        assert_eq!(tables[1].csv_rows[1][7], "112000000");
        let all = crate::tables::report_tables(&set_of(vec![run.clone()])).unwrap();
        assert!(all.iter().any(|t| t.id == "taskset-idle"), "report_tables carries them");
        // Two runs: the label names each table.
        let mut other = run.clone();
        other.label = "other".into();
        let two = report_tables(&set_of(vec![run, other]));
        assert_eq!(two.len(), 4);
        assert_eq!(two[2].id, "taskset-other-idle");
    }

    #[test]
    fn nothing_for_a_run_without_a_task_set() {
        let mut run = example_run();
        run.taskset = None;
        assert!(report_tables(&set_of(vec![run.clone()])).is_empty());
        assert_eq!(terminal_section(&run, "idle"), "");
        assert_eq!(conclusion(&run), None);
    }

    #[test]
    fn conclusions() {
        let run = example_run();
        assert_eq!(
            conclusion(&run).unwrap(),
            "\nConclusion (not real-time results): 2 deadline misses in 13 jobs: task logger 2 of 3 under \
             cpu:threads=1+proc-read; the analysis found the set schedulable, so its assumptions did not hold; measured \
             worst response above the analysed R for ctrl, logger (the table says which platform figure explains it).\n"
        );
        let mut calm = run.clone();
        let t = calm.taskset.as_mut().unwrap();
        t.results.retain(|r| r.scenario == "idle");
        for r in &mut t.results {
            r.exceeds_analysis = false;
        }
        calm.realtime.real_time_results = true;
        assert_eq!(
            conclusion(&calm).unwrap(),
            "\nConclusion: 0 deadline misses in 6 jobs of 2 tasks; every measured worst response within its analysed R.\n"
        );
    }

    #[test]
    fn terminal_summary_of_a_task_set_run() {
        let text = TerminalSummary.export(&example_run()).unwrap();
        insta::assert_snapshot!("terminal_taskset", text);
    }

    #[test]
    fn terminal_summary_of_a_task_set_run_has_no_exceedance_and_titles_tasks() {
        let text = TerminalSummary.export(&example_run()).unwrap();
        assert!(!text.contains("Exceedance"), "{text}");
        assert!(text.contains("Response time of task ctrl"), "{text}");
    }

    #[test]
    fn json_summary_of_a_task_set_run_has_its_jobs_and_misses() {
        let run = example_run();
        let text = crate::json::JsonSummary::default().export(&run).unwrap();
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        let summary = &doc["taskset"];
        let results = &run.taskset.as_ref().unwrap().results;
        assert_eq!(summary["jobs_released"], results.iter().map(|r| r.jobs_released).sum::<u64>());
        assert_eq!(summary["deadline_misses"], results.iter().map(|r| r.deadline_misses).sum::<u64>());
        let tasks = summary["tasks"].as_array().unwrap();
        assert_eq!(tasks.len(), results.len());
        for (t, r) in tasks.iter().zip(results) {
            assert_eq!(t["name"], r.task.as_str());
            assert_eq!(t["scenario"], r.scenario.as_str());
            assert_eq!(t["jobs"], r.jobs_released);
            assert_eq!(t["misses"], r.deadline_misses);
            assert_eq!(t["worst_response_ns"], serde_json::json!(r.worst_response_ns));
            assert_eq!(t["analysed_response_ns"], serde_json::json!(r.analysed_response_ns));
            assert_eq!(t["exceeds_analysis"], r.exceeds_analysis);
        }
        // A probe run's summary says null.
        let mut probe_run = run.clone();
        probe_run.taskset = None;
        let text = crate::json::JsonSummary::default().export(&probe_run).unwrap();
        assert_eq!(serde_json::from_str::<serde_json::Value>(&text).unwrap()["taskset"], serde_json::Value::Null);
    }

    #[test]
    fn markdown_report_of_a_task_set_run() {
        use rtlab_results::set::ReportExporter;
        let text = crate::markdown::MarkdownReport.render(&set_of(vec![example_run()])).unwrap();
        let start = text.find("Task set example").expect("the table is in the report");
        let table: String = text[start..].lines().take_while(|l| !l.starts_with("## ")).collect::<Vec<_>>().join("\n");
        insta::assert_snapshot!("markdown_taskset", table);
    }
}
