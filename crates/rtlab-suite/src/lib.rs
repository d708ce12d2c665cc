//! rtlab-suite: the papers as data, measured. A suite file (`suites/*.toml`) names a
//! paper's tables as cells of (condition, metric, statistic) beside the paper's values;
//! their specifications and suite.json ([`rtlab_results::suite::SuiteRecord`]) are part of
//! the results contract. This crate computes and presents them:
//!
//! - [`measure`]: every cell of a table from the conditions' runs
//!   ([`measure::measure_table`]), or why it is not measured.
//! - [`report`]: the suite report: the paper's tables with this machine's rows, its figures
//!   drawn from the runs, the verdict, as terminal text, Markdown and a self-contained HTML
//!   page (the style of `rtlab_report::html`).
//!
//! Suite files are parsed and the conditions run by the binary (`rtlab suite`), which owns
//! the lifecycle runner. Errors are `rtlab_report::ReportError`: everything here is a report.

pub mod measure;
pub mod report;
