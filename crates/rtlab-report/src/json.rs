//! `rtlab run --json`: the summary as one JSON document on stdout.

use crate::digest::{Conclusion, MetricDigest, RunDigest};
use crate::model::RunResult;
use crate::{Exporter, ReportError};
use rtlab_analysis::exceedance::Exceedance;
use rtlab_load::LoadReport;
use rtlab_sys::activity::Activity;
use rtlab_sys::sysinfo::Distortion;
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
    verdict: Option<&'a crate::verdict::Verdict>,
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
                .map(|(s, d)| ScenarioSummary {
                    name: &s.name,
                    loaded: s.is_loaded(),
                    load_failure: s.load_failure.as_deref(),
                    duration_s: s.duration_s,
                    loads: &s.loads,
                    activity: s.activity.as_ref(),
                    metrics: d.metrics,
                    exceedance: d.exceedance,
                })
                .collect(),
            conclusion: digest.conclusion,
            warnings: &run.warnings,
            verdict: run.verdict.as_ref(),
        };
        let mut text = serde_json::to_string_pretty(&doc).map_err(|e| ReportError::Encode(e.to_string()))?;
        text.push('\n');
        Ok(text)
    }
}
