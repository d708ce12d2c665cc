//! Task sets: Dodiu's model of periodic tasks (C, T, D, priority, blocking B, release
//! jitter J), read from rtlab's TOML format or from an rt-app JSON file, recognised by content.
//! Documented in docs/taskset.md.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Task {
    pub name: String,
    /// Worst-case execution time C, ns.
    pub wcet_ns: u64,
    /// Period T, ns.
    pub period_ns: u64,
    /// Relative deadline D, ns (T when not given).
    pub deadline_ns: u64,
    /// SCHED_FIFO priority as given (higher runs first); None: assigned by the analysis.
    pub priority: Option<i32>,
    /// Blocking B by lower-priority tasks (shared resources), ns.
    pub blocking_ns: u64,
    /// Release jitter J given for this task, ns (the platform's activation latency is added
    /// by the analysis, not here).
    pub jitter_ns: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskSetFormat {
    Toml,
    RtApp,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskSet {
    pub name: Option<String>,
    pub format: TaskSetFormat,
    pub tasks: Vec<Task>,
}

/// A task set that cannot be used, naming the task and field: exit 2.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}{field}: {reason}", task.as_deref().map(|t| format!("task {t:?}: ")).unwrap_or_default())]
pub struct TaskSetError {
    /// None for an error of the whole file (not TOML nor JSON, no tasks).
    pub task: Option<String>,
    pub field: String,
    pub reason: String,
}

/// Parses a task set, TOML or rt-app JSON, recognised by content.
pub fn parse_taskset(text: &str) -> Result<TaskSet, TaskSetError> {
    let _ = text;
    todo!("issue 8: task sets")
}
