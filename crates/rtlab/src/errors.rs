//! Error classes that decide the exit code (README.md, "Exit codes": 2 bad usage or input,
//! 3 cannot measure).

use std::fmt;

/// Bad usage or bad input: exit 2.
#[derive(Debug)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// The environment does not allow measuring: exit 3.
#[derive(Debug)]
pub struct EnvironmentError(pub String);

impl fmt::Display for EnvironmentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for EnvironmentError {}

pub fn usage(message: impl Into<String>) -> anyhow::Error {
    UsageError(message.into()).into()
}

pub fn environment(message: impl Into<String>) -> anyhow::Error {
    EnvironmentError(message.into()).into()
}

/// A file could not be written: at a path the user gave (`--output`) it is bad usage, at
/// rtlab's own default path the environment's.
pub fn output_error(given: bool, message: String) -> anyhow::Error {
    if given {
        usage(format!("--output: {message}"))
    } else {
        environment(message)
    }
}

/// The error and its causes on one line, leaving out a cause whose text the message before
/// it already contains (thiserror messages often embed their source).
pub fn one_line(error: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in error.chain() {
        let text = cause.to_string();
        if !line.contains(&text) {
            if !line.is_empty() {
                line.push_str(": ");
            }
            line.push_str(&text);
        }
    }
    line.replace('\n', " ")
}

pub const EXIT_OK: u8 = 0;
/// A requirement (`--require`) was not met.
pub const EXIT_NOT_MET: u8 = 1;
pub const EXIT_USAGE: u8 = 2;
pub const EXIT_ENVIRONMENT: u8 = 3;
pub const EXIT_INTERRUPTED: u8 = 130;

/// Exit code for an error: usage errors and damaged inputs are 2, the rest 3.
pub fn exit_code_of(error: &anyhow::Error) -> u8 {
    for cause in error.chain() {
        if cause.is::<UsageError>() {
            return EXIT_USAGE;
        }
        if cause.is::<EnvironmentError>() {
            return EXIT_ENVIRONMENT;
        }
        // A file given to `rtlab import` that is not what --from says, or is damaged.
        if cause.is::<rtlab_formats::import::ImportError>() {
            return EXIT_USAGE;
        }
        if let Some(f) = cause.downcast_ref::<rtlab_formats::FormatError>() {
            return match f {
                rtlab_formats::FormatError::Io { .. } | rtlab_formats::FormatError::Encode(_) => EXIT_ENVIRONMENT,
                rtlab_formats::FormatError::Results(r) => results_exit_code(r),
                _ => EXIT_USAGE,
            };
        }
        // A suite file with a mistake.
        if cause.is::<rtlab_suite::SuiteError>() {
            return EXIT_USAGE;
        }
        if let Some(r) = cause.downcast_ref::<rtlab_results::ResultsError>() {
            return results_exit_code(r);
        }
        // The monitor's database: one that cannot be created is the environment; a missing,
        // foreign, damaged or newer one is bad input (as a result file is).
        if let Some(h) = cause.downcast_ref::<rtlab_history::HistoryError>() {
            return match h {
                rtlab_history::HistoryError::Io { .. } => EXIT_ENVIRONMENT,
                rtlab_history::HistoryError::History { .. } => EXIT_USAGE,
                rtlab_history::HistoryError::Results(r) => results_exit_code(r),
            };
        }
        if let Some(r) = cause.downcast_ref::<rtlab_report::ReportError>() {
            return match r {
                rtlab_report::ReportError::Encode(_) | rtlab_report::ReportError::Environment(_) => EXIT_ENVIRONMENT,
                rtlab_report::ReportError::Results(r) => results_exit_code(r),
                _ => EXIT_USAGE,
            };
        }
    }
    EXIT_ENVIRONMENT
}

/// A result that cannot be read or written is the environment (3); a damaged or foreign one
/// is bad input (2).
fn results_exit_code(error: &rtlab_results::ResultsError) -> u8 {
    match error {
        rtlab_results::ResultsError::Io { .. } | rtlab_results::ResultsError::Encode(_) => EXIT_ENVIRONMENT,
        _ => EXIT_USAGE,
    }
}
