//! rtlab-history: the monitor's history in an embedded SQLite database (docs/history.md),
//! the one crate of the workspace that compiles SQLite. What it stores and returns are
//! `rtlab_results::history`'s types ([`WindowRecord`](rtlab_results::history::WindowRecord),
//! [`Session`](rtlab_results::history::Session), ...), so that the crates that only make or
//! read those records (the probes, the exporters, the report) build no SQLite.
//!
//! Main types:
//! - [`HistoryDb`]: an open history: its schema and migrations ([`SCHEMA_VERSION`],
//!   [`APPLICATION_ID`]), sessions and windows appended one transaction each (WAL mode), the
//!   rows of a range read back as [`StoredWindow`]s, and retention ([`Retention`],
//!   [`HistoryDb::thin`] -> [`ThinOutcome`]) merging old windows into hours and days.
//! - [`range`]: a time range of the history read as one run
//!   ([`HistoryDb::run_of_range`], [`range::run_of_rows`]): what `rtlab report DB` and
//!   `rtlab compare A.db B.db` work on.
//! - [`HistoryDb::history_report`]: `rtlab history`'s views, every statistic computed once
//!   into `rtlab_results::history::report::HistoryReport`, which `rtlab_report::history`
//!   renders.
//! - [`HistoryError`]: what can go wrong opening, reading or writing a history.

pub mod range;
mod report;
mod store;

pub use store::{HistoryDb, Retention, StoredWindow, ThinOutcome, APPLICATION_ID, SCHEMA_VERSION};

use rtlab_results::ResultsError;

/// Errors of the history database.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// The history's directory could not be created.
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// SQLite's answer, or a file that is not a sound rtlab history of this version.
    #[error("history {path}: {reason}")]
    History { path: String, reason: String },
    /// The rows of the history could not be merged.
    #[error(transparent)]
    Results(#[from] ResultsError),
}
