//! Formats other tools consume: cyclictest's histogram file and JSON ([`cyclictest`]), the
//! HdrHistogram interval log ([`hdr_log`]), JUnit XML of the verdict ([`junit`]), a KCIDB
//! submission for KernelCI ([`kcidb`]), LAVA test cases ([`lava`]) and the
//! OpenMetrics text exposition ([`openmetrics`]; [`monitor`] is the exposition `rtlab monitor`
//! serves). Each is a [`rtlab_results::set::ReportExporter`] over the
//! saved runs, like the report formats.
//!
//! cyclictest's formats and the HDR log describe the threads of *one* metric in *one*
//! scenario of *one* run: [`Selection`] picks them and refuses to guess when a set holds
//! several.

pub mod cyclictest;
pub mod hdr_log;
pub mod junit;
pub mod kcidb;
pub mod lava;
pub mod monitor;
pub mod openmetrics;

use crate::FormatError;
use rtlab_results::run::{Measurement, RunResult};
use rtlab_results::set::ReportSet;

/// `--metric` and `--scenario` of `rtlab report`: which measurements a single-metric format
/// exports. None = the only one there is (the main metric of the first probe for metrics).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    pub metric: Option<String>,
    pub scenario: Option<String>,
}

/// One run's measurements of one metric in one scenario, in CPU order.
#[derive(Debug, Clone)]
pub struct Selected<'a> {
    pub run: &'a RunResult,
    pub metric: String,
    pub scenario: String,
    pub threads: Vec<&'a Measurement>,
}

impl Selection {
    /// The measurements a single-metric format exports, or a usage error naming the
    /// choices when the set is ambiguous (several runs, scenarios or metrics).
    pub fn select<'a>(&self, set: &'a ReportSet, format: &str) -> Result<Selected<'a>, FormatError> {
        let invalid = |reason: String| FormatError::Usage { what: format!("--format {format}"), reason };
        let [sourced] = &set.runs[..] else {
            return Err(invalid(format!("describes one run; {} were given", set.runs.len())));
        };
        let run = &sourced.run;
        let scenario = match &self.scenario {
            Some(s) if run.scenario(s).is_some() => s.clone(),
            Some(s) => {
                return Err(invalid(format!("no scenario {s:?} in the run (it has {})", scenario_names(run))));
            }
            None if run.scenarios.len() == 1 => run.scenarios[0].name.clone(),
            None => {
                return Err(invalid(format!(
                    "the run has several scenarios ({}): choose one with --scenario",
                    scenario_names(run)
                )))
            }
        };
        let metrics: Vec<&str> =
            run.measurements.iter().filter(|m| m.scenario == scenario).map(|m| m.metric.as_str()).fold(
                Vec::new(),
                |mut v, m| {
                    if !v.contains(&m) {
                        v.push(m);
                    }
                    v
                },
            );
        let metric = match &self.metric {
            Some(m) => {
                let wanted = rtlab_analysis::requirement::main_metric_of(m);
                if !metrics.contains(&wanted.as_str()) {
                    return Err(invalid(format!(
                        "no metric {m:?} in scenario {scenario:?} (it has {})",
                        metrics.join(", ")
                    )));
                }
                wanted
            }
            None => match metrics.first() {
                Some(first) => {
                    // The main metric of the first probe, as the summaries conclude on.
                    let main = rtlab_analysis::requirement::main_metric_of(first.split('.').next().unwrap_or(first));
                    if metrics.contains(&main.as_str()) {
                        main
                    } else {
                        first.to_string()
                    }
                }
                None => return Err(invalid(format!("scenario {scenario:?} has no measurements"))),
            },
        };
        let mut threads: Vec<&Measurement> =
            run.measurements.iter().filter(|m| m.scenario == scenario && m.metric == metric).collect();
        threads.sort_by_key(|m| m.cpu);
        Ok(Selected { run, metric, scenario, threads })
    }
}

fn scenario_names(run: &RunResult) -> String {
    run.scenarios.iter().map(|s| s.name.as_str()).collect::<Vec<_>>().join(", ")
}
