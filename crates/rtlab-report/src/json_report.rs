//! The report as JSON (`"schema": "rtlab.report/1"`): the configurations, the verdict, the
//! warnings, every table (cells as shown and raw) and the tail section's analyses.

use crate::tables::{report_tables, Table};
use crate::ReportError;
use rtlab_results::host::PreemptionModel;
use rtlab_results::set::{ReportExporter, ReportSet};
use rtlab_results::verdict::Verdict;
use serde::Serialize;

pub const REPORT_SCHEMA: &str = "rtlab.report/1";

#[derive(Debug, Default)]
pub struct JsonReport;

#[derive(Serialize)]
struct ReportDocument<'a> {
    schema: &'static str,
    configurations: Vec<ConfigurationEntry<'a>>,
    /// The verdict judged for this report, else those saved with the runs, combined.
    verdict: Option<Verdict>,
    warnings: Vec<String>,
    tables: Vec<Table>,
    /// The tail section as data: per metric and configuration, the pWCET analysis.
    pwcet: Vec<crate::pwcet::PwcetEntry>,
}

#[derive(Serialize)]
struct ConfigurationEntry<'a> {
    name: &'a str,
    run_label: &'a str,
    scenario: &'a str,
    /// The path the run was read from.
    source: &'a str,
    loaded: bool,
    load_failure: Option<&'a str>,
    kernel_release: &'a str,
    preemption_model: PreemptionModel,
    real_time_results: bool,
    simulated: bool,
    interrupted: bool,
}

impl ReportExporter for JsonReport {
    type Error = ReportError;

    fn render(&self, set: &ReportSet) -> Result<String, ReportError> {
        let configurations = set.configurations();
        let doc = ReportDocument {
            schema: REPORT_SCHEMA,
            configurations: configurations
                .iter()
                .map(|c| {
                    let scenario = c.scenario_info();
                    ConfigurationEntry {
                        name: &c.name,
                        run_label: &c.run.label,
                        scenario: c.scenario,
                        source: set.runs.get(c.run_index).map(|r| r.source.as_str()).unwrap_or_default(),
                        loaded: scenario.is_some_and(|s| s.is_loaded()),
                        load_failure: scenario.and_then(|s| s.load_failure.as_deref()),
                        kernel_release: &c.run.host.kernel_release,
                        preemption_model: c.run.host.preemption_model,
                        real_time_results: c.run.realtime.real_time_results,
                        simulated: c.run.simulated,
                        interrupted: scenario.is_some_and(|s| s.interrupted) || c.run.interrupted,
                    }
                })
                .collect(),
            verdict: set.effective_verdict(),
            warnings: set.warnings(),
            tables: report_tables(set)?,
            pwcet: crate::pwcet::report_entries(set)?,
        };
        let mut text = serde_json::to_string_pretty(&doc).map_err(|e| ReportError::Encode(e.to_string()))?;
        text.push('\n');
        Ok(text)
    }
}
