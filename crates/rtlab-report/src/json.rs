//! `rtlab run --json`: the summary as one JSON document on stdout.

use crate::digest::{Conclusion, MetricDigest, RunDigest};
use crate::{Exporter, ReportError};
use rtlab_analysis::exceedance::Exceedance;
use rtlab_results::activity::Activity;
use rtlab_results::host::Distortion;
use rtlab_results::load::LoadReport;
use rtlab_results::run::RunResult;
use serde::Serialize;

pub const SUMMARY_SCHEMA: &str = "rtlab.summary/1";

/// The digest of a run with its headline facts; all times in ns. `run_json` is the path of
/// the saved result, when there is one to point to.
#[derive(Default)]
pub struct JsonSummary {
    pub run_json: Option<String>,
}

#[derive(Serialize)]
struct SummaryDocument<'a> {
    schema: &'static str,
    label: &'a str,
    run_json: Option<&'a str>,
    real_time_results: bool,
    /// Why the results are not real-time results, or what differed from the request.
    realtime_notes: &'a [String],
    interrupted: bool,
    simulated: bool,
    duration_s: f64,
    scenarios: Vec<ScenarioSummary<'a>>,
    /// Of the scenario with the worst main-metric maximum.
    conclusion: Option<Conclusion>,
    warnings: &'a [Distortion],
    /// Against the requirements given to `rtlab run --require`; null without them.
    verdict: Option<&'a rtlab_results::verdict::Verdict>,
    /// `rtlab run --taskset`: the jobs and their deadlines; null for a probe run.
    taskset: Option<TasksetSummary<'a>>,
    /// `rtlab run --split`: backend, overhead, coverage and median parts; absent without it.
    #[serde(skip_serializing_if = "Option::is_none")]
    split: Option<crate::split::SplitSummary<'a>>,
}

/// A task-set run in brief: totals over every task and scenario, then one entry per task
/// and scenario. The whole record is run.json's "taskset".
#[derive(Serialize)]
struct TasksetSummary<'a> {
    jobs_released: u64,
    deadline_misses: u64,
    tasks: Vec<TaskSummary<'a>>,
}

#[derive(Serialize)]
struct TaskSummary<'a> {
    name: &'a str,
    scenario: &'a str,
    jobs: u64,
    misses: u64,
    worst_response_ns: Option<i64>,
    /// The response-time analysis' bound R; null when the analysis gives none.
    analysed_response_ns: Option<u64>,
    exceeds_analysis: bool,
}

fn taskset_summary(taskset: &rtlab_results::taskset::TasksetRun) -> TasksetSummary<'_> {
    TasksetSummary {
        jobs_released: taskset.results.iter().map(|r| r.jobs_released).sum(),
        deadline_misses: taskset.results.iter().map(|r| r.deadline_misses).sum(),
        tasks: taskset
            .results
            .iter()
            .map(|r| TaskSummary {
                name: &r.task,
                scenario: &r.scenario,
                jobs: r.jobs_released,
                misses: r.deadline_misses,
                worst_response_ns: r.worst_response_ns,
                analysed_response_ns: r.analysed_response_ns,
                exceeds_analysis: r.exceeds_analysis,
            })
            .collect(),
    }
}

#[derive(Serialize)]
struct ScenarioSummary<'a> {
    name: &'a str,
    loaded: bool,
    load_failure: Option<&'a str>,
    duration_s: f64,
    loads: &'a [LoadReport],
    activity: Option<&'a Activity>,
    metrics: Vec<MetricDigest>,
    exceedance: Option<Exceedance>,
    /// The pWCET of the main metric as the terminal summary states it: a number only when it
    /// is defensible; null without samples.
    pwcet: Option<crate::pwcet::PwcetHeadline>,
}

impl Exporter for JsonSummary {
    fn export(&self, run: &RunResult) -> Result<String, ReportError> {
        let digest = RunDigest::of(run)?;
        let doc = SummaryDocument {
            schema: SUMMARY_SCHEMA,
            label: &run.label,
            run_json: self.run_json.as_deref(),
            real_time_results: run.realtime.real_time_results,
            realtime_notes: &run.realtime.notes,
            interrupted: run.interrupted,
            simulated: run.simulated,
            duration_s: run.duration_s,
            scenarios: run
                .scenarios
                .iter()
                .zip(digest.scenarios)
                .map(|(s, d)| {
                    Ok(ScenarioSummary {
                        name: &s.name,
                        loaded: s.is_loaded(),
                        load_failure: s.load_failure.as_deref(),
                        duration_s: s.duration_s,
                        loads: &s.loads,
                        activity: s.activity.as_ref(),
                        pwcet: crate::pwcet::summary_headline(run, &s.name, d.main_metric.as_deref())?,
                        metrics: d.metrics,
                        exceedance: d.exceedance,
                    })
                })
                .collect::<Result<_, ReportError>>()?,
            conclusion: digest.conclusion,
            warnings: &run.warnings,
            verdict: run.verdict.as_ref(),
            taskset: run.taskset.as_ref().map(taskset_summary),
            split: run.split.as_ref().map(|s| crate::split::SplitSummary::of(run, s)),
        };
        let mut text = serde_json::to_string_pretty(&doc).map_err(|e| ReportError::Encode(e.to_string()))?;
        text.push('\n');
        Ok(text)
    }
}
