//! What `rtlab report` and `rtlab compare` work on: one or more saved runs, each of whose
//! scenarios is a *configuration* (a column in the tables, a curve in the figures).

use crate::run::{RunResult, Scenario};
use crate::verdict::Verdict;

/// The runs of a report, in the order given, with where each came from.
#[derive(Debug, Clone)]
pub struct ReportSet {
    pub runs: Vec<SourcedRun>,
    /// The verdict against the requirements given to `report`/`compare`/`run`, if any.
    pub verdict: Option<Verdict>,
}

#[derive(Debug, Clone)]
pub struct SourcedRun {
    /// The path given on the command line (a directory or a run.json).
    pub source: String,
    pub run: RunResult,
}

/// One column of the comparison tables / one curve of the figures: a run's scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Configuration<'a> {
    pub run: &'a RunResult,
    /// Index of the run in the set.
    pub run_index: usize,
    pub scenario: &'a str,
    /// Short unique name for legends and column headers: "label · scenario" (the label is
    /// left out when the set has one run, the scenario when the run has one scenario).
    pub name: String,
}

impl ReportSet {
    /// Every (run, scenario), in order.
    pub fn configurations(&self) -> Vec<Configuration<'_>> {
        let many_runs = self.runs.len() > 1;
        let mut out = Vec::new();
        for (run_index, sourced) in self.runs.iter().enumerate() {
            let run = &sourced.run;
            let many_scenarios = run.scenarios.len() > 1;
            for scenario in &run.scenarios {
                let name = match (many_runs, many_scenarios) {
                    (true, true) => format!("{} · {}", run.label, scenario.name),
                    (true, false) => run.label.clone(),
                    (false, _) => scenario.name.clone(),
                };
                out.push(Configuration { run, run_index, scenario: &scenario.name, name });
            }
        }
        // Equal labels in a comparison: number them so legends stay unambiguous.
        let names: Vec<String> = out.iter().map(|c| c.name.clone()).collect();
        for (i, c) in out.iter_mut().enumerate() {
            if names.iter().filter(|n| **n == names[i]).count() > 1 {
                let n = names[..=i].iter().filter(|n| **n == names[i]).count();
                c.name = format!("{} #{n}", names[i]);
            }
        }
        out
    }
}

impl<'a> Configuration<'a> {
    /// The configurations of one run on its own (named by their scenarios).
    pub fn of_run(run: &'a RunResult) -> Vec<Configuration<'a>> {
        run.scenarios
            .iter()
            .map(|s| Configuration { run, run_index: 0, scenario: &s.name, name: s.name.clone() })
            .collect()
    }

    /// The scenario this configuration measured.
    pub fn scenario_info(&self) -> Option<&'a Scenario> {
        self.run.scenario(self.scenario)
    }
}

impl ReportSet {
    /// The verdict a report shows: the one judged for this report, else the verdicts saved
    /// with the runs, combined (each check names its run).
    pub fn effective_verdict(&self) -> Option<Verdict> {
        if let Some(v) = &self.verdict {
            return Some(v.clone());
        }
        let saved: Vec<&Verdict> = self.runs.iter().filter_map(|r| r.run.verdict.as_ref()).collect();
        Verdict::combine(&saved)
    }

    /// What qualifies the results of the set, one sentence each, prefixed with the run's
    /// label when the set has several runs.
    pub fn warnings(&self) -> Vec<String> {
        let many = self.runs.len() > 1;
        self.runs.iter().flat_map(|r| run_warnings(&r.run, many, None)).collect()
    }
}

/// What qualifies the results of `run`: not real-time results (and why), an interruption,
/// scenarios not measured under their full load, raw samples that stopped, and the host's distortions (all of them,
/// or only those whose code is in `codes`). With `prefixed`, each starts "run LABEL: ".
pub fn run_warnings(run: &RunResult, prefixed: bool, codes: Option<&[&str]>) -> Vec<String> {
    let who = if prefixed { format!("run {}: ", run.label) } else { String::new() };
    let mut out = Vec::new();
    if !run.realtime.real_time_results {
        let why = if run.realtime.notes.is_empty() {
            String::new()
        } else {
            format!(" ({})", run.realtime.notes.join(" ").trim_end_matches('.'))
        };
        out.push(format!("{who}not real-time results{why}"));
    }
    if run.interrupted {
        out.push(format!("{who}the run was interrupted: it holds only what was measured until then"));
    }
    for s in &run.scenarios {
        if let Some(why) = &s.load_failure {
            out.push(format!("{who}scenario {:?} was not measured under its full load: {why}", s.name));
        }
        if let Some(why) = &s.raw_stopped {
            out.push(format!("{who}scenario {:?}: {why}", s.name));
        }
    }
    for d in run.warnings.iter().filter(|d| codes.is_none_or(|codes| codes.contains(&d.code.as_str()))) {
        out.push(format!("{who}{}", d.message));
    }
    out
}

/// A whole-report output format: renders a [`ReportSet`]. The reports (HTML, Markdown, CSV,
/// JSON) are `rtlab-report`'s, the formats other tools read (cyclictest, hdr-log, JUnit,
/// OpenMetrics) `rtlab-formats'`; each crate's exporters fail with its own error.
pub trait ReportExporter {
    type Error;
    fn render(&self, set: &ReportSet) -> Result<String, Self::Error>;
}
