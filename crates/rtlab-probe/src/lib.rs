//! rtlab-probe: the measurements.
//!
//! Main types:
//! - [`Probe`]: a measurement that is fully prepared (threads' histograms, rings and
//!   per-second maxima allocated) before [`Probe::run`] starts sampling.
//! - [`timer::TimerProbe`]: the cyclictest measurement: one pinned real-time thread per
//!   CPU waking at absolute periodic expiries; timer latency and period jitter.
//! - [`clock::WakeClock`]: the two calls a sampling loop makes (read the clock, sleep until
//!   a deadline), with the real CLOCK_MONOTONIC backend and a deterministic simulated one.
//! - [`live::LiveStats`]: lock-free counters a sampling thread publishes for the progress
//!   display.
//! - [`raw`]: the raw sample file format, the wait-free ring that carries samples out of the
//!   sampling thread, and the non-real-time writer that drains it.
//! - [`ProbeOutput`]: what a finished probe hands back: per thread and metric a histogram,
//!   exact moments, per-second maxima, overruns and lost samples.

pub mod clock;
pub mod live;
pub mod raw;
pub mod timer;

use rtlab_analysis::{LatencyHistogram, Moments};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Errors of the probes.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("invalid probe configuration: {0}")]
    Config(String),
    #[error("cannot set up the measuring thread on CPU {cpu}: {what}: {source}")]
    Setup {
        cpu: usize,
        what: &'static str,
        #[source]
        source: rtlab_sys::SysError,
    },
    #[error("measuring thread on CPU {cpu} failed while sampling: {source}")]
    Sampling {
        cpu: usize,
        #[source]
        source: rtlab_sys::SysError,
    },
    #[error("raw sample file {path}: {source}")]
    RawIo {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("raw sample file {path}: {reason}")]
    RawFormat { path: PathBuf, reason: String },
    #[error(transparent)]
    Analysis(#[from] rtlab_analysis::AnalysisError),
    #[error("measuring thread on CPU {cpu} panicked")]
    ThreadPanicked { cpu: usize },
}

/// A prepared measurement. Everything the sampling threads touch is allocated when the
/// probe is built; `run` only spawns, samples and joins.
pub trait Probe: Send {
    /// Probe name as used on the command line and as the prefix of its metrics.
    fn name(&self) -> &'static str;
    /// One entry per sampling thread, for the progress display.
    fn live(&self) -> Vec<Arc<live::LiveStats>>;
    /// Samples until the end condition or until `stop` is set, then returns the results.
    fn run(self: Box<Self>, stop: Arc<AtomicBool>) -> Result<ProbeOutput, ProbeError>;
}

/// One metric measured by one thread.
#[derive(Debug, Clone)]
pub struct MetricOutput {
    /// "probe.metric", e.g. "timer.latency".
    pub metric: String,
    pub histogram: LatencyHistogram,
    pub moments: Moments,
    /// Largest value per second of the run (block maxima), None for a second without samples.
    pub per_second_max: Vec<Option<i64>>,
}

/// What one sampling thread measured.
#[derive(Debug, Clone)]
pub struct ThreadOutput {
    pub cpu: usize,
    pub thread_name: String,
    /// Periods that were due in the measured window, recorded or skipped.
    pub cycles: u64,
    /// Expiries skipped because a wake-up came a whole period or more late.
    pub overruns: u64,
    /// Raw samples the writer could not take in time (only with raw output).
    pub lost: u64,
    pub metrics: Vec<MetricOutput>,
    /// The thread stopped early because a stop was requested.
    pub interrupted: bool,
    /// Seconds covered by each entry of the metrics' `per_second_max` (1 unless the run
    /// is longer than a week).
    pub block_s: u64,
    pub raw_file: Option<PathBuf>,
}

/// What a probe hands back when it finishes.
#[derive(Debug, Clone)]
pub struct ProbeOutput {
    pub probe: String,
    pub threads: Vec<ThreadOutput>,
    /// Raw samples written per thread, in `threads` order (0 without raw output).
    pub raw_written: Vec<u64>,
}
