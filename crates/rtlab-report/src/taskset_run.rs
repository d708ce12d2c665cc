//! A task set run for real (`rtlab run --taskset`): per task and scenario, the measured
//! response times and deadline misses beside the analysed worst-case response time.
//! Saved in run.json "taskset"; the response times themselves are measurements
//! (`taskset.<task>.response`).

use rtlab_analysis::schedulability::Analysis;
use rtlab_analysis::taskset::TaskSet;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TasksetRun {
    /// The task-set file as given.
    pub file: String,
    pub set: TaskSet,
    /// The CPU every task thread was pinned to (the analysis is for one CPU).
    pub cpu: usize,
    /// The analysis the measurements are compared with.
    pub analysis: Analysis,
    /// One entry per task and scenario.
    pub results: Vec<TaskResult>,
    /// How the run was made and what the reader must know, one sentence each.
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskResult {
    pub task: String,
    pub scenario: String,
    /// SCHED_FIFO priority the thread ran with.
    pub priority: i32,
    /// The measurement holding this task's response times.
    pub metric: String,
    pub jobs_released: u64,
    pub jobs_completed: u64,
    /// Jobs that finished after their absolute deadline, or had not finished when it passed.
    pub deadline_misses: u64,
    pub worst_response_ns: Option<i64>,
    /// Worst finish time minus absolute deadline (negative: before the deadline).
    pub worst_lateness_ns: Option<i64>,
    /// From `analysis`; None when the analysis found the task unschedulable.
    pub analysed_response_ns: Option<u64>,
    /// The measured worst response exceeded the analysed R.
    pub exceeds_analysis: bool,
    /// When it did: which platform figure would explain it.
    pub explanation: Option<String>,
}
