//! rtlab-report: the results model and its exporters.
//!
//! Main types:
//! - [`model::RunResult`]: the contents of run.json (`"schema": "rtlab.run/1"`), the
//!   contract between `rtlab run` and every later command. Loaded with validation
//!   ([`model::RunResult::load`]) and written atomically ([`model::RunResult::save`]).
//! - [`digest::RunDigest`]: the statistics a summary shows, derived from a `RunResult`
//!   (per CPU and all CPUs combined, exceedance interval, conclusion figures).
//! - [`Exporter`]: one small trait, one implementation per output format
//!   ([`terminal::TerminalSummary`], [`json::JsonSummary`]).
//! - [`raw_csv`]: raw sample files to CSV for other tools.
//! - [`import`]: cyclictest, rtla, jitterdebugger and Xenomai files -> `RunResult`
//!   (marked [`model::ImportInfo`]); [`export`]: the formats other tools read (cyclictest
//!   histogram and JSON, HdrHistogram log, JUnit, OpenMetrics).
//! - [`report_set::ReportSet`]: the runs of `rtlab report`/`compare`; [`verdict`] judges them
//!   against requirements, [`tables`] reduces them to the papers' tables, and the
//!   [`report_set::ReportExporter`]s render them ([`markdown`], [`csv_report`], [`json_report`], [`html`]); [`png`] rasterises the figures.
//! - [`pwcet`]: a metric's tail analysis (EVT) from its measurements; [`taskset_run::TasksetRun`]:
//!   a task set run for real, measured beside its analysis.

pub mod csv_report;
pub mod digest;
pub mod figures;
pub mod host;
pub mod html;
pub mod json;
pub mod json_report;
pub mod markdown;
pub mod per_setting;
pub mod png;
pub mod pwcet;
pub mod split;
pub mod suite;
pub mod suite_report;
pub mod tables;
#[cfg(test)]
mod taskset_example;
pub mod terminal;
pub mod text;
pub mod verdict;

/// Errors of reading, checking and writing results.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not a valid rtlab result: {reason}")]
    Invalid { path: String, reason: String },
    /// An output cannot be made from these runs as asked (ambiguous selection, a JUnit
    /// report without requirements): exit 2.
    #[error("{what}: {reason}")]
    Usage { what: String, reason: String },
    #[error(transparent)]
    Analysis(#[from] rtlab_analysis::AnalysisError),
    /// A raw sample file of a results directory cannot be read (exit 2).
    #[error(transparent)]
    Raw(rtlab_results::ResultsError),
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

/// Results errors keep their kind: an unreadable file is an I/O error, a damaged one
/// invalid, a raw sample file its own.
impl From<rtlab_results::ResultsError> for ReportError {
    fn from(error: rtlab_results::ResultsError) -> Self {
        use rtlab_results::ResultsError;
        match error {
            ResultsError::Io { path, source } => ReportError::Io { path, source },
            ResultsError::Invalid { path, reason } => ReportError::Invalid { path, reason },
            ResultsError::Encode(what) => ReportError::Encode(what),
            raw @ (ResultsError::RawIo { .. } | ResultsError::RawFormat { .. }) => ReportError::Raw(raw),
        }
    }
}
