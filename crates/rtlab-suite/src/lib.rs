//! rtlab-suite: the papers as data, run and measured. A suite file (`suites/*.toml`) names
//! a paper's conditions (one `rtlab run` each) and its tables as cells of (condition,
//! metric, statistic) beside the paper's values; the table specifications and suite.json
//! ([`rtlab_results::suite::SuiteRecord`]) are part of the results contract.
//!
//! - [`file`]: [`file::SuiteFile`], a parsed and checked suite file (the built-in ones in
//!   [`file::BUILT_IN`]); a condition's experiment keys are checked by the caller's
//!   [`file::ExperimentCheck`], `rtlab run`'s own rules.
//! - [`run`]: the conditions in order through a [`run::ConditionBackend`] (the binary's
//!   lifecycle runner, or a mock), the suite's record and its [`run::SuiteOutcome`].
//! - [`measure`]: every cell of a table from the conditions' runs
//!   ([`measure::measure_table`]), or why it is not measured.
//! - [`judge`]: the paper's own conclusions ([`rtlab_results::judgement::JudgementSpec`])
//!   recomputed from the runs.
//! - [`report`]: the suite report: the paper's tables with this machine's rows, its figures
//!   drawn from the runs, the verdict, as terminal text, Markdown and a self-contained HTML
//!   page (the style of `rtlab_report::html`).
//!
//! Errors: a suite file's mistakes are [`SuiteError::Invalid`]; computing and presenting
//! are `rtlab_report::ReportError` (everything there is a report).

pub mod file;
pub mod judge;
pub mod measure;
pub mod report;
pub mod run;

/// Errors of reading a suite file.
#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    /// The suite file or its name is wrong: "suite SOURCE: where: what" (bad input).
    #[error("{0}")]
    Invalid(String),
}
