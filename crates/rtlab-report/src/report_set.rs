//! What `rtlab report` and `rtlab compare` work on: one or more saved runs, each of whose
//! scenarios is a *configuration* (a column in the tables, a curve in the figures).

use crate::model::RunResult;
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
        for i in 0..out.len() {
            if out.iter().filter(|c| c.name == out[i].name).count() > 1 {
                let n = out[..=i].iter().filter(|c| c.name == out[i].name).count();
                out[i].name = format!("{} #{n}", out[i].name);
            }
        }
        out
    }
}

/// A whole-report output format (HTML, Markdown, CSV, JSON): renders a [`ReportSet`].
pub trait ReportExporter {
    fn render(&self, set: &ReportSet) -> Result<String, crate::ReportError>;
}
