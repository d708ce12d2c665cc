//! Kernel tracing through tracefs, for the interrupt/scheduling split (`rtlab run --split`).
//!
//! Main types:
//! - [`TraceSession`]: an RAII tracing session in its own tracefs instance
//!   (`instances/rtlab-<pid>`), like rtla's tools: trace clock `mono`, its own per-CPU buffer
//!   size, the split's events enabled with filters (sleeping tasks' timers only), only the
//!   traced CPUs. A non-real-time reader thread drains the per-CPU binary buffers
//!   (`per_cpu/cpuN/trace_pipe_raw`) while the probe runs: into spool files (kept with
//!   `--raw`), and decoded into a [`TraceConsumer`] (the streaming split), or both. The top-level
//!   tracing state is never touched, and stopping or dropping the session removes the
//!   instance, so tracefs is as it was before (also after SIGINT: the run's stop flag ends
//!   the probe and the session is stopped normally).
//! - [`TraceConsumer`]: what takes the decoded events while the session runs, with the
//!   instant up to which each CPU's events are complete, so that it can work through them
//!   and keep only a bounded window.
//! - [`TraceCapture`]: what a stopped session recorded: per CPU the spooled ring-buffer
//!   pages (if spooled), decoded on demand into [`event::KernelEvent`]s in time order, the
//!   events the kernel dropped, plus per-CPU steal time samples taken while tracing.
//! - [`mount::TracefsMount`]: tracefs mounted by rtlab for a run when the host booted
//!   without it (as root), unmounted again when the run ends.
//! - [`support`]: which split backends this kernel supports (for `rtlab sysinfo` and the
//!   exit-3 message of `--split`).

pub mod ebpf;
pub mod event;
pub mod format;
pub mod mount;
pub mod ring;
mod session;
mod state;
pub mod timerlat;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub use format::EventFormats;
pub use ring::PageLayout;
pub use state::tracing_state_snapshot;

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
    /// Where the per-CPU spool files go (created if missing); None: the pages are not kept.
    pub spool_dir: Option<PathBuf>,
}

/// Takes the events of a running session, on the reader thread (not real-time; it may
/// allocate). Events of one CPU come in time order; CPUs are read one after another.
pub trait TraceConsumer: Send {
    /// Events of `cpu` decoded from the pages just read, in time order (an
    /// [`event::EventKind::Lost`] marks where the kernel dropped events).
    fn events(&mut self, cpu: u32, events: Vec<event::KernelEvent>);
    /// Every event of `cpu` stamped before `ns` (CLOCK_MONOTONIC) has been handed over;
    /// `u64::MAX` once tracing has stopped and the buffers are drained.
    fn complete_before(&mut self, cpu: u32, ns: u64);
    /// Steal time readings of the traced CPUs, as they are taken.
    fn steal(&mut self, readings: &[StealSample]);
}

/// A consumer shared by the reader thread and its owner.
pub type SharedConsumer = Arc<Mutex<dyn TraceConsumer>>;

/// A reader's consumer, even if its owner panicked holding it (the owner reads its state
/// only after the reader has stopped).
pub(crate) fn lock_consumer<T: ?Sized>(consumer: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    consumer.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
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
    inner: session::Session,
}

impl TraceSession {
    /// Creates the instance, configures it, enables the events and starts the readers.
    /// Fails with [`TraceError::Unsupported`] naming what is missing.
    pub fn start(config: TraceConfig) -> Result<Self, TraceError> {
        session::Session::start(config, None, session::Tracing::SplitEvents).map(|inner| Self { inner })
    }

    /// [`start`](Self::start), with the events also handed to `consumer` as they are read.
    pub fn start_streaming(config: TraceConfig, consumer: SharedConsumer) -> Result<Self, TraceError> {
        session::Session::start(config, Some(consumer), session::Tracing::SplitEvents).map(|inner| Self { inner })
    }

    /// The instance's name under `instances/`.
    pub fn instance_name(&self) -> &str {
        self.inner.instance_name()
    }

    /// What the session does (instance, clock, buffer size, events, filters, notes).
    pub fn description(&self) -> &str {
        self.inner.description()
    }

    /// Stops tracing, drains what the buffers still hold, stops the readers and removes the
    /// instance.
    pub fn stop(mut self) -> Result<TraceCapture, TraceError> {
        self.inner.stop()
    }
}

/// What a stopped session recorded.
#[derive(Debug, Clone)]
pub struct TraceCapture {
    pub cpus: Vec<usize>,
    /// Spool file per CPU, in `cpus` order (none when the session spooled nothing).
    pub spool_files: Vec<PathBuf>,
    /// Bytes of ring-buffer pages read, all CPUs.
    pub bytes: u64,
    /// Events the kernel reported as dropped (full buffer), all CPUs. Pages that say
    /// events were dropped without a count add nothing here; see `pages_with_uncounted_loss`.
    pub events_lost: u64,
    /// Pages whose header says events were dropped before them, count not stored.
    pub pages_with_uncounted_loss: u64,
    /// Steal readings (kept only when spooling: a consumer is handed them as they come).
    pub steal: Vec<StealSample>,
    /// Per traced CPU, the ring buffer's own counters at the end (timerlat sessions; empty
    /// for the split's).
    pub ring_stats: Vec<RingStats>,
    /// What the session did, for run.json (instance, clock, buffer size, events, filters).
    pub description: String,
    /// Payload layouts of the enabled events, read when the session started.
    pub formats: EventFormats,
    /// The ring buffer's page layout (`events/header_page`).
    pub layout: PageLayout,
}

impl TraceCapture {
    /// The events of one traced CPU in time order (a [`event::EventKind::Lost`] marks where
    /// the kernel dropped events; `events: 0` there means the kernel did not say how many).
    pub fn events_of_cpu(&self, cpu: usize) -> Result<Vec<event::KernelEvent>, TraceError> {
        let index = self
            .cpus
            .iter()
            .position(|&c| c == cpu)
            .ok_or_else(|| TraceError::Format(format!("CPU {cpu} was not traced (traced: {:?})", self.cpus)))?;
        let path =
            self.spool_files.get(index).ok_or_else(|| TraceError::Format(format!("no spool file for CPU {cpu}")))?;
        let bytes = std::fs::read(path)
            .map_err(|source| TraceError::Io { op: format!("reading spool {}", path.display()), source })?;
        let cpu_id = u32::try_from(cpu).map_err(|_| TraceError::Format(format!("CPU number {cpu}")))?;
        Ok(ring::decode_pages(&bytes, self.layout, cpu_id, &self.formats)?.events)
    }

    /// The events of all traced CPUs merged in time order.
    pub fn all_events(&self) -> Result<Vec<event::KernelEvent>, TraceError> {
        let mut all = Vec::new();
        for &cpu in &self.cpus {
            all.extend(self.events_of_cpu(cpu)?);
        }
        // Stable: events of one CPU with equal stamps keep their order.
        all.sort_by_key(|e| e.ts_ns);
        Ok(all)
    }

    /// Removes the spool files.
    pub fn remove_spool(&self) -> Result<(), TraceError> {
        for path in &self.spool_files {
            match std::fs::remove_file(path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => return Err(TraceError::Io { op: format!("removing spool {}", path.display()), source }),
            }
        }
        Ok(())
    }
}

/// A CPU's ring-buffer counters (`per_cpu/cpuN/stats`) read when a session ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RingStats {
    pub cpu: usize,
    /// `overrun`: events overwritten before they were read (a full buffer in overwrite mode).
    pub overrun: u64,
    /// `dropped events`: events refused by a full buffer (no-overwrite mode).
    pub dropped: u64,
}

impl RingStats {
    /// Parses a `stats` file; a missing line counts 0.
    pub fn parse(cpu: usize, text: &str) -> Self {
        let value = |key: &str| -> u64 {
            text.lines()
                .find_map(|l| l.strip_prefix(key).and_then(|v| v.strip_prefix(':')))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0)
        };
        Self { cpu, overrun: value("overrun"), dropped: value("dropped events") }
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
    let root = tracefs_root();
    let timerlat = match &root {
        None => BackendSupport { name: "timerlat", usable: false, detail: NOT_MOUNTED.into() },
        Some(root) => {
            let tracers = std::fs::read_to_string(root.join("available_tracers")).unwrap_or_default();
            let detail = if tracers.split_whitespace().any(|t| t == "timerlat") {
                "present: measured by `-P timerlat` (the kernel's own threads); not a split backend, \
                 the tracefs backend measures the same instants for rtlab's threads"
            } else {
                timerlat::NO_TIMERLAT
            };
            BackendSupport { name: "timerlat", usable: false, detail: detail.into() }
        }
    };
    let ebpf = match ebpf::check_support() {
        Ok(()) => BackendSupport {
            name: "ebpf",
            usable: true,
            detail:
                "one record per timer wake-up made in the kernel (--split-backend ebpf; timer probe, no explanations)"
                    .into(),
        },
        Err(e) => BackendSupport { name: "ebpf", usable: false, detail: e.to_string() },
    };
    let tracefs = match session::check_support() {
        Ok(root) => BackendSupport {
            name: "tracefs",
            usable: true,
            detail: format!("{}: writable, required events present", root.display()),
        },
        Err(e) => BackendSupport { name: "tracefs", usable: false, detail: e.to_string() },
    };
    vec![timerlat, ebpf, tracefs]
}

/// What keeps a user who is not root from tracing, said once for every backend, with what
/// to do: tracefs not mounted (mounting it needs root) or mounted but usable only by root.
/// None as root (rtlab mounts tracefs itself) or when the blocker is something else.
pub fn unprivileged_blocker() -> Option<String> {
    if crate::privileges::current().euid == 0 {
        return None;
    }
    Some(blocker_text(mounted_root().as_deref()))
}

/// Where tracefs is mounted, from /proc/mounts: unlike [`tracefs_root`] this also sees a mount
/// whose directory this user may not enter (tracefs is mode 0700).
fn mounted_root() -> Option<PathBuf> {
    if mount::is_mounted("/sys/kernel/tracing", "tracefs") {
        Some(PathBuf::from("/sys/kernel/tracing"))
    } else if mount::is_mounted("/sys/kernel/debug", "debugfs") {
        Some(PathBuf::from("/sys/kernel/debug/tracing"))
    } else {
        tracefs_root()
    }
}

/// The text of [`unprivileged_blocker`] for a user who is not root, given the mounted
/// tracefs root (if any).
pub fn blocker_text(root: Option<&Path>) -> String {
    match root {
        None => "tracefs is not mounted and mounting it needs root (run as root: rtlab mounts it for the run \
                 and unmounts it afterwards; or mount it: mount -t tracefs nodev /sys/kernel/tracing)"
            .into(),
        Some(root) => format!(
            "tracefs at {} is usable only by root (run as root: rtlab creates its own tracing instance \
             there and removes it afterwards)",
            root.display()
        ),
    }
}

const NOT_MOUNTED: &str = "tracefs is not mounted at /sys/kernel/tracing (mount -t tracefs nodev /sys/kernel/tracing)";

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
    let Some(root) = tracefs_root() else { return 0 };
    let Ok(entries) = std::fs::read_dir(root.join("instances")) else { return 0 };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(instance_pid) else { continue };
        if !pid_alive(pid) && session::remove_instance_dir(&entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// The pid in an rtlab instance name: `rtlab-<pid>` or `rtlab-<pid>-<n>` (a second session
/// of the same process).
pub(crate) fn instance_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("rtlab-")?;
    let pid = rest.split('-').next()?;
    let suffix_ok = rest.split('-').skip(1).all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    if rest.split('-').count() > 2 || !suffix_ok {
        return None;
    }
    pid.parse().ok()
}

pub(crate) fn pid_alive(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}

#[cfg(test)]
mod tests;

/// Reads a tracefs text file with reads of 64 KiB: some tracefs files
/// (`events/header_page`) return end-of-file on any read after the first, so the small
/// first read of `read_to_string` would cut them.
pub(crate) fn read_tracefs_file(path: &Path) -> Result<String, TraceError> {
    use std::io::Read;
    let io = |source| TraceError::Io { op: format!("reading {}", path.display()), source };
    let mut file = std::fs::File::open(path).map_err(io)?;
    let mut text = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        match file.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => text.extend_from_slice(chunk.get(..n).unwrap_or_default()),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io(e)),
        }
    }
    Ok(String::from_utf8_lossy(&text).into_owned())
}
