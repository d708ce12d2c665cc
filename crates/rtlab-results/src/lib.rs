//! rtlab-results: the results contract. Every later command (`report`, `compare`, `check`,
//! the importers and exporters) starts from these types, never from live state, and this
//! crate depends on nothing that measures: a tool that only reads run.json compiles the
//! statistics (`rtlab-analysis`) and this, not the probes or loads.
//!
//! Main types:
//! - [`run::RunResult`]: run.json (`"schema": "rtlab.run/1"`, docs/run-json.md), loaded with
//!   validation ([`run::RunResult::load`]) and written atomically ([`run::RunResult::save`]);
//!   its parts [`run::Measurement`] (one metric of one probe thread) and [`run::Scenario`].
//! - [`host::SystemInfo`], [`host::Distortion`], [`host::Policy`]: the host as `rtlab-sys`
//!   read it; [`activity::Activity`]: what the system did during a window.
//! - [`delta::StoredDelta`]: a remote probe's δ calibration, measured once and held
//!   (delta.json).
//! - [`load::LoadReport`]: what a load achieved; [`split::SplitRun`]: the split section and
//!   the explained spikes; [`noise::NoiseRun`]: the noise probe's gaps per cause;
//!   [`taskset::TasksetRun`]: a task set run for real;
//!   [`verdict::Verdict`]: the judgement against the requirements.
//! - [`history::WindowRecord`]: one closed window of the monitor (histograms, moments,
//!   overruns, lost, activity) and [`history::Session`]: each start, with the host's identity,
//!   gaps and kernel changes; [`history::report::HistoryReport`]: `rtlab history`'s views.
//!   The SQLite store that keeps them is `rtlab-history`'s: this crate compiles no SQLite.
//! - [`monitor::MonitorTotals`]: what `rtlab monitor --listen` exposes to Prometheus,
//!   running totals updated once per closed window.
//! - [`raw::RawReader`]: the raw sample files of a results directory.
//! - [`fleet::FleetReport`]: `rtlab fleet`'s overview of the boards a Prometheus server
//!   scrapes (`"schema": "rtlab.fleet/1"`).
//! - [`gate`]: what the bisect gate reads from a baseline and a candidate run (the metric
//!   per scenario, the run's disturbances); `rtlab_analysis::gate` judges.
//! - [`set::ReportSet`]: several saved runs as `report`/`compare` see them, each scenario a
//!   [`set::Configuration`]; [`set::ReportExporter`]: the one trait of every output format
//!   of a set of runs.
//! - [`suite::SuiteRecord`]: suite.json (`"schema": "rtlab.suite/1"`), a suite run, with the
//!   paper's tables as specifications ([`suite::TableSpec`], [`suite::FigureSpec`]) and this
//!   machine's values ([`suite::SuiteTable`]), and the paper's own conclusions recomputed
//!   ([`judgement::JudgementSpec`], [`judgement::JudgementResult`]).

pub mod activity;
pub mod delta;
pub mod fleet;
pub mod gate;
pub mod history;
pub mod host;
pub mod judgement;
pub mod load;
pub mod monitor;
pub mod noise;
pub mod raw;
pub mod run;
pub mod set;
pub mod split;
pub mod suite;
pub mod taskset;
pub mod verdict;

use std::path::PathBuf;

/// Errors of reading, checking and writing results.
#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not a valid rtlab result: {reason}")]
    Invalid { path: String, reason: String },
    #[error("cannot encode output: {0}")]
    Encode(String),
    #[error("raw sample file {path}: {source}")]
    RawIo {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("raw sample file {path}: {reason}")]
    RawFormat { path: PathBuf, reason: String },
    /// The monitor's history records (`history`): rows that cannot be merged (the database
    /// itself is `rtlab-history`'s, with its own error).
    #[error("history {path}: {reason}")]
    History { path: String, reason: String },
}
