//! rtlab-probe: the measurements.
//!
//! Main types:
//! - [`Probe`]: a measurement that is fully prepared (threads' histograms, rings and
//!   per-second maxima allocated) before [`Probe::run`] starts sampling.
//! - The probes: [`timer::TimerProbe`] (cyclictest's measurement: one pinned real-time
//!   thread per CPU waking at absolute periodic expiries), [`jitter::JitterProbe`] (the
//!   timer at several periods, Dodiu Table 1), [`sleep::SleepProbe`] (relative nanosleep
//!   overshoot, Dankwardt), [`net::NetProbe`] (UDP stimulus with kernel receive timestamps,
//!   Regnier), [`ipc::IpcProbe`] (wake-up latency through eventfd, pipe, futex, POSIX
//!   message queue, signal), [`switch::SwitchProbe`] (task-switch time on one CPU, Dodiu
//!   Table 3), [`sweep::SweepProbe`] (a stimulus probe over several rates, Dodiu Table 2) and
//!   [`remote::RemoteProbe`] (Regnier's experiment 2: stimuli to a second station, both of
//!   its answers timestamped here), [`noise::NoiseProbe`] (oslat's busy loop: gaps between
//!   clock reads, attributed from the kernel trace by [`noise_trace`]).
//! - [`taskset::TasksetProbe`]: a task set run for real: one thread per task on one CPU,
//!   periodic releases from a synchronous start, jobs busy for C of their own CPU time,
//!   per-job response times and explicit deadline-miss counts.
//! - [`recorder::MetricRecorder`]: what a sampling loop records per metric (histogram,
//!   moments, per-second maxima, raw ring, optional in-order sequence), preallocated.
//! - [`workers::run_workers`]: starts a probe's threads, wakes them when they must stop,
//!   joins them; [`ThreadSetup::apply`] pins and prioritises a sampling thread.
//! - [`clock::WakeClock`]: the two calls a periodic loop makes (read the clock, sleep until
//!   a deadline), with the real CLOCK_MONOTONIC backend and a deterministic simulated one.
//! - [`live::LiveStats`]: lock-free counters a sampling thread publishes for the progress
//!   display.
//! - [`raw`]: the raw sample file format, the wait-free ring that carries samples out of the
//!   sampling thread, and the non-real-time writer that drains it.
//! - [`windows::WindowAggregator`]: `rtlab monitor`'s windows, cut on the non-real-time side
//!   from the timer probe's tapped samples (latency, jitter, overruns, lost per CPU).
//! - [`ProbeOutput`]: what a finished probe hands back: per thread and metric a histogram,
//!   exact moments, per-second maxima, overruns and lost samples.

pub mod clock;
pub mod ipc;
pub mod jitter;
pub mod live;
pub mod net;
pub mod noise;
pub mod noise_trace;
pub mod raw;
pub mod recorder;
pub mod remote;
pub mod sleep;
pub mod split;
pub mod sweep;
pub mod switch;
pub mod taskset;
pub mod timer;
pub mod timerlat;
pub mod traced;
pub mod windows;
pub mod workers;

use rtlab_analysis::{LatencyHistogram, Moments};
pub use rtlab_results::run::Detail;
use rtlab_sys::sched::Policy;
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
    #[error(transparent)]
    Analysis(#[from] rtlab_analysis::AnalysisError),
    /// A raw sample file could not be written or read back (`rtlab_results::raw`).
    #[error(transparent)]
    Results(#[from] rtlab_results::ResultsError),
    #[error("measuring thread on CPU {cpu} panicked")]
    ThreadPanicked { cpu: usize },
    /// The mechanism a probe needs does not exist or cannot be used on this host (no POSIX
    /// message queues, no socket timestamps, ...): the environment, not the request.
    #[error("{probe}: {what} is not available on this host: {reason}")]
    Unavailable { probe: String, what: String, reason: String },
}

/// How much a probe (or each part of it: a period of `jitter`, a rate of `sweep`) measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Budget {
    /// For this long: a periodic probe takes duration / period cycles.
    Duration { ns: u64 },
    /// This many recorded samples per sampling thread.
    Samples(u64),
}

impl Budget {
    /// Periods of `period_ns` in the budget (a duration of less than one period still
    /// takes one sample).
    pub fn cycles(self, period_ns: u64) -> u64 {
        match self {
            Budget::Duration { ns } => (ns / period_ns.max(1)).max(1),
            Budget::Samples(n) => n,
        }
    }

    /// Expected wall time at one sample per `period_ns`.
    pub fn planned_ns(self, period_ns: u64) -> u64 {
        match self {
            Budget::Duration { ns } => ns,
            Budget::Samples(n) => n.saturating_mul(period_ns),
        }
    }

    /// This budget shared equally by `parts` parts run one after the other.
    pub fn share(self, parts: usize) -> Budget {
        match self {
            Budget::Duration { ns } => Budget::Duration { ns: ns / parts.max(1) as u64 },
            samples => samples,
        }
    }
}

/// Which clock a periodic sampling loop uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockKind {
    Monotonic,
    /// Deterministic virtual time (tests, snapshots); no thread set-up is done.
    Simulated {
        seed: u64,
        /// Every drawn latency times this, per mille ([`clock::UNSCALED`]: as drawn): the
        /// test-only knob `rtlab run --simulate-scale` that makes a simulated "kernel"
        /// slower or faster (the bisect gate's tests).
        scale_permille: u32,
    },
}

impl ClockKind {
    /// The simulated clock with this seed, latencies as drawn.
    pub fn simulated(seed: u64) -> Self {
        ClockKind::Simulated { seed, scale_permille: clock::UNSCALED }
    }
}

/// How each sampling thread prepares itself before the first sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadSetup {
    pub pin_to_cpu: bool,
    pub policy: Policy,
    pub priority: i32,
    /// Timer slack to set on the thread (1 ns when not real-time); None leaves it alone.
    pub timer_slack_ns: Option<u64>,
    pub prefault_stack_bytes: usize,
}

impl ThreadSetup {
    /// A thread left as it is: not pinned, SCHED_OTHER, slack untouched, no prefault (tests,
    /// simulated runs).
    pub const fn unchanged() -> Self {
        Self { pin_to_cpu: false, policy: Policy::Other, priority: 0, timer_slack_ns: None, prefault_stack_bytes: 0 }
    }
}

/// What every probe needs besides its own parameters.
#[derive(Debug, Clone)]
pub struct Sampling {
    pub budget: Budget,
    pub histogram_max_ns: u64,
    /// Directory for raw sample files; None: no raw output.
    pub raw_dir: Option<PathBuf>,
    pub raw_ring_capacity: usize,
    /// The measuring (receiving) threads' set-up.
    pub setup: ThreadSetup,
}

/// Where a stimulus comes from, for the probes where one thread triggers another
/// (`net`, `ipc:*`, `switch`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stimulus {
    /// The real-time receiver's CPU.
    pub receiver_cpu: usize,
    /// The trigger's CPU (the receiver's own for `switch`).
    pub trigger_cpu: usize,
    /// Stimuli per second.
    pub rate_hz: f64,
    /// The trigger's set-up: a lower priority than the receiver's.
    pub trigger_setup: ThreadSetup,
}

/// "20", "1000", "0.5": a rate without a needless fraction, for file and thread names.
pub fn rate_tag(rate_hz: f64) -> String {
    if rate_hz.fract() == 0.0 && rate_hz < 1e15 {
        format!("{}", rate_hz as u64)
    } else {
        format!("{rate_hz}")
    }
}

impl Stimulus {
    /// The stimulus period in ns.
    pub fn period_ns(&self) -> u64 {
        (1e9 / self.rate_hz).round().max(1.0) as u64
    }
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
    /// This metric's raw sample file, with raw output.
    pub raw_file: Option<PathBuf>,
    /// The first samples in order, for probes that keep them (`sleep`: per-sample plots).
    pub sequence: Option<Vec<i64>>,
}

/// What one sampling thread measured.
#[derive(Debug, Clone)]
pub struct ThreadOutput {
    pub cpu: usize,
    pub thread_name: String,
    /// Periods that were due in the measured window, recorded or skipped.
    pub cycles: u64,
    /// Expiries skipped because a wake-up came a whole period or more late; for stimulus
    /// probes, stimuli that produced no sample (a dropped datagram, coalesced wake-ups).
    /// `cycles` = recorded samples of the main metric + `overruns`.
    pub overruns: u64,
    /// Raw samples the writer could not take in time, and those it took but did not write
    /// because the file system was nearly full (only with raw output).
    pub lost: u64,
    pub metrics: Vec<MetricOutput>,
    /// The thread stopped early because a stop was requested.
    pub interrupted: bool,
    /// Seconds covered by each entry of the metrics' `per_second_max` (1 unless the run
    /// is longer than a week).
    pub block_s: u64,
    /// The period of this thread's samples (timer interval, jitter period, stimulus
    /// period; for `sleep` the requested sleep): turns counts into rates.
    pub interval_ns: u64,
    /// Probe-specific facts, saved with each of this thread's metrics.
    pub details: Vec<(String, Detail)>,
}

/// What a probe hands back when it finishes.
#[derive(Debug, Clone)]
pub struct ProbeOutput {
    /// The probe as named on the command line ("timer", "ipc:futex", "sweep").
    pub probe: String,
    pub threads: Vec<ThreadOutput>,
    /// Samples written per raw file.
    pub raw_written: Vec<(PathBuf, u64)>,
    /// What the reader of the results must know about how this probe ran (a trigger on
    /// the receiver's CPU, no hardware timestamps, default timer slack kept, ...).
    pub notes: Vec<String>,
}
