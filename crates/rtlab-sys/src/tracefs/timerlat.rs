//! The kernel's timerlat tracer driven as rtla drives it (tools/tracing/rtla): per-CPU kernel
//! threads woken by a periodic timer, one `ftrace:timerlat` record per activation from the
//! timer's interrupt handler (context irq) and one from the woken thread (context thread).
//!
//! [`TimerlatSession`] runs the tracer in its own tracefs instance (`instances/rtlab-<pid>`,
//! read through `per_cpu/cpuN/trace_pipe_raw` by the same reader as the split's sessions).
//! The tracer's settings are global files under `osnoise/` (period, CPUs, stop thresholds,
//! stack printing): [`OsnoiseSettings`] saves the ones rtlab writes before it writes them and
//! writes the saved values back when the session ends (stop, drop after an error, a run
//! stopped by SIGINT), after the instance is gone.

use std::path::{Path, PathBuf};

use super::session::{Session, Tracing};
// The support check lives with the session that starts the tracer (one direction: this
// module uses the session, never the other way).
pub use super::session::{check_timerlat_support as check_support, NO_TIMERLAT};
use super::{SharedConsumer, TraceCapture, TraceConfig, TraceError};

/// The `osnoise/` files rtlab writes, saved and restored: in the order they are written.
pub const WRITTEN_FILES: [&str; 5] =
    ["cpus", "timerlat_period_us", "stop_tracing_us", "stop_tracing_total_us", "print_stack"];

/// Whether this kernel offers user-space timerlat threads (`osnoise/per_cpu/cpuN/timerlat_fd`,
/// Linux 6.8+), for run.json: rtlab records the kernel threads; the text says what is there.
pub fn user_threads_offered(root: &Path) -> bool {
    root.join("osnoise/per_cpu/cpu0/timerlat_fd").exists()
}

/// The saved values of the `osnoise/` files rtlab writes, written back on drop.
#[derive(Debug)]
pub struct OsnoiseSettings {
    dir: PathBuf,
    /// (file, value as read) for each file that existed.
    saved: Vec<(&'static str, String)>,
    restored: bool,
}

impl OsnoiseSettings {
    /// Reads the files rtlab is about to write.
    pub fn save(root: &Path) -> Result<Self, TraceError> {
        let dir = root.join("osnoise");
        let mut saved = Vec::new();
        for file in WRITTEN_FILES {
            let path = dir.join(file);
            if !path.exists() {
                continue;
            }
            saved.push((file, super::read_tracefs_file(&path)?.trim_end().to_string()));
        }
        Ok(Self { dir, saved, restored: false })
    }

    /// The saved value of `file`.
    pub fn saved(&self, file: &str) -> Option<&str> {
        self.saved.iter().find(|(f, _)| *f == file).map(|(_, v)| v.as_str())
    }

    /// Writes one setting (a file that was saved).
    fn set(&self, file: &'static str, value: &str) -> Result<(), TraceError> {
        if self.saved(file).is_none() {
            return Ok(());
        }
        let path = self.dir.join(file);
        std::fs::write(&path, value)
            .map_err(|source| TraceError::Io { op: format!("writing {value:?} to {}", path.display()), source })
    }

    /// Writes the saved values back (idempotent). Every file is tried; the first error is
    /// returned.
    pub fn restore(&mut self) -> Result<(), TraceError> {
        if self.restored {
            return Ok(());
        }
        self.restored = true;
        let mut first = None;
        for (file, value) in &self.saved {
            let path = self.dir.join(file);
            // An empty CPU list reads back as an empty line: writing no bytes would leave
            // rtlab's list in place, a newline is the kernel's "all CPUs".
            let value = if value.trim().is_empty() { "\n" } else { value.as_str() };
            if let Err(source) = std::fs::write(&path, value) {
                first
                    .get_or_insert(TraceError::Io { op: format!("restoring {} to {value:?}", path.display()), source });
            }
        }
        first.map_or(Ok(()), Err)
    }
}

impl Drop for OsnoiseSettings {
    fn drop(&mut self) {
        let _ = self.restore();
    }
}

/// What to run the tracer with.
#[derive(Debug, Clone)]
pub struct TimerlatConfig {
    /// CPUs with a timerlat thread (and whose buffers are read).
    pub cpus: Vec<usize>,
    /// The timer's period (`osnoise/timerlat_period_us`).
    pub period_us: u64,
    pub buffer_kb_per_cpu: usize,
}

/// A running timerlat tracer; see the module documentation. The fields drop in order: the
/// instance first (tracer replaced by nop, instance removed), then the `osnoise/` settings.
#[derive(Debug)]
pub struct TimerlatSession {
    inner: Session,
    settings: OsnoiseSettings,
    user_threads_offered: bool,
}

impl TimerlatSession {
    /// Saves and writes the tracer's settings, starts the tracer in a new instance and the
    /// reader that hands its records to `consumer` (pages not kept).
    pub fn start(config: TimerlatConfig, consumer: SharedConsumer) -> Result<Self, TraceError> {
        let root = check_support()?;
        if config.cpus.is_empty() {
            return Err(TraceError::Unsupported("no CPU to trace".into()));
        }
        let settings = OsnoiseSettings::save(&root)?;
        settings.set("cpus", &cpu_list(&config.cpus))?;
        settings.set("timerlat_period_us", &config.period_us.to_string())?;
        // rtla's defaults without -i/-T/-s: never stop tracing, print no stack.
        settings.set("stop_tracing_us", "0")?;
        settings.set("stop_tracing_total_us", "0")?;
        settings.set("print_stack", "0")?;
        let trace =
            TraceConfig { cpus: config.cpus.clone(), buffer_kb_per_cpu: config.buffer_kb_per_cpu, spool_dir: None };
        // On failure `settings` drops here and writes the saved values back.
        let inner = Session::start(trace, Some(consumer), Tracing::Timerlat)?;
        Ok(Self { inner, settings, user_threads_offered: user_threads_offered(&root) })
    }

    /// What the session does (instance, clock, buffer, tracer, settings).
    pub fn description(&self) -> String {
        let written: Vec<String> = WRITTEN_FILES
            .iter()
            .filter_map(|f| self.settings.saved(f).map(|old| format!("{f} (was {old:?})")))
            .collect();
        format!(
            "{}; osnoise/ settings written and restored at the end: {}",
            self.inner.description(),
            written.join(", ")
        )
    }

    /// `osnoise/per_cpu/cpuN/timerlat_fd` exists (user-space threads, Linux 6.8+).
    pub fn user_threads_offered(&self) -> bool {
        self.user_threads_offered
    }

    /// Stops tracing, drains the buffers, removes the instance and restores the settings.
    pub fn stop(mut self) -> Result<TraceCapture, TraceError> {
        let capture = self.inner.stop();
        let restored = self.settings.restore();
        let capture = capture?;
        restored?;
        Ok(capture)
    }
}

/// "0-3,6" style list as `osnoise/cpus` takes it.
pub fn cpu_list(cpus: &[usize]) -> String {
    cpus.iter().map(usize::to_string).collect::<Vec<_>>().join(",")
}

/// Sets the kernel's `timerlat/N` threads of `cpus` to SCHED_FIFO `priority` (rtla -P f:N).
/// Returns the threads set (as "timerlat/N"); the threads exist only while the tracer runs.
pub fn set_thread_priority(cpus: &[usize], priority: i32) -> Result<Vec<String>, TraceError> {
    let mut set = Vec::new();
    for p in crate::process::all_processes() {
        let Some(cpu) = p.comm.strip_prefix("timerlat/").and_then(|c| c.parse::<usize>().ok()) else { continue };
        if !cpus.contains(&cpu) {
            continue;
        }
        crate::sched::set_task_fifo(p.pid, priority).map_err(|e| {
            TraceError::Unsupported(format!("cannot set {} (pid {}) to SCHED_FIFO {priority}: {e}", p.comm, p.pid))
        })?;
        set.push(p.comm.clone());
    }
    Ok(set)
}
