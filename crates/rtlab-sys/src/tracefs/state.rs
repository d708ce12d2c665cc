//! A text snapshot of the top-level tracing state, to check that a session (or a run
//! interrupted by SIGINT) left tracefs as it found it.

use std::path::Path;

use super::{instance_pid, pid_alive, read_tracefs_file, tracefs_root, TraceError, NOT_MOUNTED};

/// The top-level tracing state as sorted `key = value` lines: `set_event`, `tracing_on`,
/// `current_tracer`, `trace_clock`, `buffer_size_kb`, every `events/<sys>/<event>/enable`
/// and `filter` that is not at its default (0, none), every `osnoise/` file (the timerlat and
/// osnoise tracers' global settings), and the `instances/` listing.
/// Instances of other live rtlab processes (`rtlab-<pid>` of a running process other than
/// this one) are left out: they belong to runs in progress, not to the state being
/// compared. Two snapshots are equal when nothing was changed.
pub fn tracing_state_snapshot() -> Result<String, TraceError> {
    let root = tracefs_root().ok_or_else(|| TraceError::Unsupported(NOT_MOUNTED.into()))?;
    let read = |rel: &str| read_tracefs_file(&root.join(rel)).map(|s| s.trim_end().to_string());
    let mut lines = Vec::new();
    for file in ["set_event", "tracing_on", "current_tracer", "trace_clock", "buffer_size_kb", "tracing_cpumask"] {
        let mut value = read(file)?.replace('\n', " | ");
        if file == "buffer_size_kb" {
            // "7 (expanded: 1408)" until any instance first sets a tracer or enables an event
            // (rtla, the split, -P timerlat): the kernel's one-way flag that its buffers were
            // expanded once, not a setting; the size itself is compared.
            if let Some(cut) = value.find(" (expanded:") {
                value.truncate(cut);
            }
        }
        lines.push(format!("{file} = {value}"));
    }
    let events = root.join("events");
    for system in sorted_dirs(&events)? {
        let system_dir = events.join(&system);
        for event in sorted_dirs(&system_dir)? {
            let dir = system_dir.join(&event);
            if let Ok(enable) = std::fs::read_to_string(dir.join("enable")) {
                let enable = enable.trim();
                if enable != "0" {
                    lines.push(format!("events/{system}/{event}/enable = {enable}"));
                }
            }
            if let Ok(filter) = std::fs::read_to_string(dir.join("filter")) {
                let filter = filter.trim();
                if filter != "none" {
                    lines.push(format!("events/{system}/{event}/filter = {}", filter.replace('\n', " | ")));
                }
            }
        }
    }
    // The timerlat and osnoise tracers' settings are global files (the timerlat probe
    // writes some and restores them).
    if let Ok(entries) = std::fs::read_dir(root.join("osnoise")) {
        let mut files: Vec<String> = entries
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .collect();
        files.sort();
        for file in files {
            lines.push(format!("osnoise/{file} = {}", read(&format!("osnoise/{file}"))?.replace('\n', " | ")));
        }
    }
    let own = std::process::id();
    for instance in sorted_dirs(&root.join("instances"))? {
        let other_live_run = instance_pid(&instance).is_some_and(|pid| pid != own && pid_alive(pid));
        if !other_live_run {
            lines.push(format!("instances/{instance}"));
        }
    }
    Ok(lines.join("\n"))
}

fn sorted_dirs(dir: &Path) -> Result<Vec<String>, TraceError> {
    let entries =
        std::fs::read_dir(dir).map_err(|source| TraceError::Io { op: format!("listing {}", dir.display()), source })?;
    let mut names: Vec<String> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .collect();
    names.sort();
    Ok(names)
}
