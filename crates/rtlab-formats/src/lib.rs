//! rtlab-formats: other tools' files <-> rtlab's results ([`rtlab_results`]), both ways.
//!
//! Main types:
//! - [`import`]: cyclictest (histogram, verbose, JSON), rtla timerlat/osnoise histograms,
//!   jitterdebugger (results.json, samples.raw) and Xenomai `latency` files -> a
//!   [`rtlab_results::run::RunResult`] marked with [`rtlab_results::run::ImportInfo`]
//!   ([`import::import`], [`import::ImportError`] naming file and line).
//! - [`export`]: the formats other tools read, each a
//!   [`rtlab_results::set::ReportExporter`] over saved runs: cyclictest's histogram and
//!   JSON, the HdrHistogram interval log, JUnit XML of the verdict, the OpenMetrics text
//!   exposition; [`export::Selection`] picks the one metric and scenario a single-metric
//!   format describes.
//! - [`raw_csv`]: a results directory's raw sample files as CSV.
//! - [`prometheus`]: Prometheus' query API answers as typed vectors (`rtlab fleet`).
//!
//! Nothing here measures or presents: this crate depends on the results and the statistics
//! only.

pub mod export;
pub mod import;
pub mod prometheus;
pub mod raw_csv;

/// Errors of reading other tools' files and writing them.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
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
    #[error("cannot encode output: {0}")]
    Encode(String),
    /// An imported file is not what `--from` says, or is damaged (exit 2).
    #[error(transparent)]
    Import(#[from] import::ImportError),
    /// A saved result (run.json, suite.json, a raw sample file) cannot be read or written.
    #[error(transparent)]
    Results(#[from] rtlab_results::ResultsError),
}
