//! rtlab-report: presentation only. Saved runs ([`rtlab_results`]) are digested into
//! statistics, reduced to the papers' tables and figures as data, and rendered, in that one
//! direction: nothing here measures or writes back into the results.
//!
//! Main types, bottom to top:
//! - [`digest::RunDigest`]: the statistics a summary shows, derived from a `RunResult` (per
//!   CPU and all CPUs combined, exceedance interval, conclusion figures); [`per_setting`]
//!   keeps the jitter periods and sweep rates apart; [`pwcet`] is a metric's tail analysis
//!   (EVT); [`verdict`] judges runs against requirements (the record it makes is
//!   `rtlab_results::verdict::Verdict`).
//! - [`text`]: the words and numbers every renderer shares; [`host`]: the host in brief;
//!   [`split`]: the words for the causes of a spike.
//! - [`tables::Table`] and [`figures::Figure`]: the papers' tables and figures as data.
//! - Renderers: [`Exporter`] for one run ([`terminal::TerminalSummary`],
//!   [`json::JsonSummary`]); `rtlab_results::set::ReportExporter` for a set of runs
//!   ([`markdown`], [`csv_report`], [`json_report`], [`html`]); [`png`] rasterises the
//!   figures.
//! - [`gate`]: the bisect gate's answer (`rtlab_analysis::gate::GateReport`) as text.
//! - [`fleet`]: `rtlab fleet`'s overview of a Prometheus server's boards
//!   (`rtlab_results::fleet::FleetReport`) as terminal text, Markdown, JSON and HTML.
//! - [`history`]: `rtlab history`'s views of a monitor database
//!   (`rtlab_results::history::report::HistoryReport`) as terminal text, Markdown, JSON and
//!   HTML with figures.

pub mod csv_report;
pub mod digest;
pub mod figures;
pub mod fleet;
pub mod gate;
pub mod history;
pub mod host;
pub mod html;
pub mod json;
pub mod json_report;
pub mod markdown;
pub mod per_setting;
pub mod png;
pub mod pwcet;
pub mod split;
pub mod tables;
#[cfg(test)]
mod taskset_example;
pub mod terminal;
pub mod text;
pub mod verdict;

/// Errors of making a report from saved results.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// An output cannot be made from these runs as asked (ambiguous selection, a JUnit
    /// report without requirements): exit 2.
    #[error("{what}: {reason}")]
    Usage { what: String, reason: String },
    #[error(transparent)]
    Analysis(#[from] rtlab_analysis::AnalysisError),
    /// A saved result (run.json, suite.json, a raw sample file) cannot be read or written.
    #[error(transparent)]
    Results(#[from] rtlab_results::ResultsError),
    #[error("cannot encode output: {0}")]
    Encode(String),
    /// The host lacks something an output needs (a font for PNG figures).
    #[error("{0}")]
    Environment(String),
}

/// An output format. Exporters read only the saved result (never live state), so any
/// output can be regenerated later from run.json.
pub trait Exporter {
    fn export(&self, run: &rtlab_results::run::RunResult) -> Result<String, ReportError>;
}
