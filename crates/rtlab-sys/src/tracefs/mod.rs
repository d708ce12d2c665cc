//! Kernel tracing through tracefs, for the interrupt/scheduling split (`rtlab run --split`).
//!
//! Main types:
//! - [`TraceSession`]: an RAII tracing session in its own tracefs instance
//!   (`instances/rtlab-<pid>`), like rtla's tools: trace clock `mono`, its own per-CPU buffer
//!   size, the split's events enabled with filters (sleeping tasks' timers only), only the
//!   traced CPUs. Non-real-time reader threads drain the per-CPU binary buffers
//!   (`per_cpu/cpuN/trace_pipe_raw`) into spool files while the probe runs. The top-level
//!   tracing state is never touched, and stopping or dropping the session removes the
//!   instance, so tracefs is as it was before (also after SIGINT: the run's stop flag ends
//!   the probe and the session is stopped normally).
//! - [`TraceCapture`]: what a stopped session recorded: per CPU the spooled ring-buffer
//!   pages, decoded on demand into [`event::KernelEvent`]s in time order, plus per-CPU steal
//!   time samples taken while tracing.
//! - [`support`]: which split backends this kernel supports (for `rtlab sysinfo` and the
//!   exit-3 message of `--split`).

pub mod event;

use std::path::{Path, PathBuf};

/// Errors of kernel tracing.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// Tracing cannot be used here: no tracefs, no permission, an event missing. The
    /// message says what is missing.
    #[error("{0}")]
    Unsupported(String),
    #[error("{op}: {source}")]
    Io {
        op: String,
        #[source]
        source: std::io::Error,
    },
    /// A spool file or an event format the decoder cannot read.
    #[error("trace data: {0}")]
    Format(String),
}

/// What to trace.
#[derive(Debug, Clone)]
pub struct TraceConfig {
    /// CPUs whose buffers are read (others are masked out of the instance).
    pub cpus: Vec<usize>,
    /// Ring buffer size per CPU of the instance.
    pub buffer_kb_per_cpu: usize,
    /// Where the per-CPU spool files go (created if missing).
    pub spool_dir: PathBuf,
}

/// A per-CPU steal time reading (/proc/stat), taken by the readers while tracing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StealSample {
    /// CLOCK_MONOTONIC ns of the reading.
    pub ts_ns: u64,
    pub cpu: u32,
    /// Cumulative steal time of the CPU, ns (the counter's USER_HZ ticks converted).
    pub steal_ns: u64,
}

/// A running tracing session; see the module documentation.
#[derive(Debug)]
pub struct TraceSession {
    _private: (),
}

impl TraceSession {
    /// Creates the instance, configures it, enables the events and starts the readers.
    /// Fails with [`TraceError::Unsupported`] naming what is missing.
    pub fn start(_config: TraceConfig) -> Result<Self, TraceError> {
        Err(TraceError::Unsupported("kernel tracing is not implemented yet".into()))
    }

    /// The instance's name under `instances/`.
    pub fn instance_name(&self) -> &str {
        ""
    }

    /// Stops tracing, drains what the buffers still hold, stops the readers and removes the
    /// instance.
    pub fn stop(self) -> Result<TraceCapture, TraceError> {
        Err(TraceError::Unsupported("kernel tracing is not implemented yet".into()))
    }
}

/// What a stopped session recorded.
#[derive(Debug, Clone)]
pub struct TraceCapture {
    pub cpus: Vec<usize>,
    /// Spool file per CPU, in `cpus` order.
    pub spool_files: Vec<PathBuf>,
    /// Bytes of ring-buffer pages spooled, all CPUs.
    pub bytes: u64,
    /// Events the kernel reported as dropped (full buffer), all CPUs.
    pub events_lost: u64,
    pub steal: Vec<StealSample>,
    /// What the session did, for run.json (instance, clock, buffer size, events, filters).
    pub description: String,
}

impl TraceCapture {
    /// The events of one traced CPU in time order (a [`event::EventKind::Lost`] marks where
    /// the kernel dropped events).
    pub fn events_of_cpu(&self, _cpu: usize) -> Result<Vec<event::KernelEvent>, TraceError> {
        Err(TraceError::Unsupported("kernel tracing is not implemented yet".into()))
    }

    /// The events of all traced CPUs merged in time order.
    pub fn all_events(&self) -> Result<Vec<event::KernelEvent>, TraceError> {
        Err(TraceError::Unsupported("kernel tracing is not implemented yet".into()))
    }

    /// Removes the spool files.
    pub fn remove_spool(&self) -> Result<(), TraceError> {
        Ok(())
    }
}

/// A split backend and whether this kernel supports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendSupport {
    /// "timerlat", "ebpf", "tracefs".
    pub name: &'static str,
    /// Usable by rtlab here.
    pub usable: bool,
    /// Why not, or what it uses.
    pub detail: String,
}

/// The split backends in order of preference, with what this kernel and these privileges
/// allow.
pub fn support() -> Vec<BackendSupport> {
    Vec::new()
}

/// The mounted tracefs root (`/sys/kernel/tracing`, or the older debugfs path), if any.
pub fn tracefs_root() -> Option<PathBuf> {
    ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .iter()
        .map(Path::new)
        .find(|p| p.join("events").is_dir())
        .map(Path::to_path_buf)
}

/// Removes `instances/rtlab-<pid>` left by rtlab processes that no longer exist (a
/// SIGKILLed run). Returns how many were removed.
pub fn remove_stale_instances() -> usize {
    0
}
