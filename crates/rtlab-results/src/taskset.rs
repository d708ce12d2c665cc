//! A task set run for real (`rtlab run --taskset`): per task and scenario, the measured
//! response times and deadline misses beside the analysed worst-case response time.
//! Saved in run.json "taskset"; the response times themselves are measurements
//! (`taskset.<task>.response`), whose details carry the job counts this section collects.
//! Documented in docs/run-json.md.

use rtlab_analysis::schedulability::{analyse, Analysis, Overheads};
use rtlab_analysis::taskset::TaskSet;
use serde::{Deserialize, Serialize};

/// The probe name of a task-set run's measurements.
pub const PROBE: &str = "taskset";

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
    /// Share of each RT period real-time tasks may use when the host throttles them
    /// (sched_rt_runtime_us / sched_rt_period_us); None when it does not.
    #[serde(default)]
    pub rt_throttling_share: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskResult {
    pub task: String,
    pub scenario: String,
    /// SCHED_FIFO priority the thread ran with (0 when it ran as an ordinary task).
    pub priority: i32,
    /// C, T and D of the task, ns.
    pub wcet_ns: u64,
    pub period_ns: u64,
    pub deadline_ns: u64,
    /// The measurement holding this task's response times.
    pub metric: String,
    pub jobs_released: u64,
    pub jobs_completed: u64,
    /// Jobs that finished after their absolute deadline, or had not finished when it passed.
    pub deadline_misses: u64,
    pub worst_response_ns: Option<i64>,
    /// Worst finish time minus absolute deadline (negative: before the deadline), over the
    /// completed jobs.
    pub worst_lateness_ns: Option<i64>,
    /// Worst delay from a release to the thread running, over the jobs for which it slept
    /// until the release. For the highest-priority task this is the timer latency the task
    /// saw; for the others it includes higher-priority jobs running.
    pub worst_wake_up_ns: Option<i64>,
    /// From `analysis`; None when the analysis found the task unschedulable.
    pub analysed_response_ns: Option<u64>,
    /// The measured worst response exceeded the analysed R.
    pub exceeds_analysis: bool,
    /// When it did: which platform figure would explain it.
    pub explanation: Option<String>,
}

impl TasksetRun {
    /// The host's RT throttling share when the set asks for more of the CPU than it allows:
    /// the tasks were then stopped each period, whatever their priority.
    pub fn throttled_share(&self) -> Option<f64> {
        self.rt_throttling_share.filter(|&share| self.analysis.utilization > share)
    }

    /// The results of one scenario, highest priority first.
    pub fn results_of<'a>(&'a self, scenario: &'a str) -> impl Iterator<Item = &'a TaskResult> + 'a {
        self.results.iter().filter(move |r| r.scenario == scenario)
    }

    /// Jobs released and deadline misses over every task and scenario.
    pub fn totals(&self) -> (u64, u64) {
        self.results.iter().fold((0, 0), |(jobs, misses), r| (jobs + r.jobs_released, misses + r.deadline_misses))
    }

    /// The timer latency of a scenario: the worst wake-up of the highest-priority task (no
    /// other task delays it), with that task's name.
    pub fn timer_latency(&self, scenario: &str) -> Option<(&str, i64)> {
        let top = self.analysis.tasks.first()?;
        let r = self.results_of(scenario).find(|r| r.task == top.name)?;
        Some((top.name.as_str(), r.worst_wake_up_ns?))
    }

    /// For a result whose worst response exceeded its analysed R: by how much, and whether
    /// the analysis with this scenario's timer latency charged as activation latency (on
    /// top of what it charged already) accounts for it. None when R was not exceeded.
    pub fn excess_text(&self, r: &TaskResult) -> Option<String> {
        let (worst, analysed) = (r.worst_response_ns?, r.analysed_response_ns?);
        if !r.exceeds_analysis {
            return None;
        }
        let analysed = i64::try_from(analysed).unwrap_or(i64::MAX);
        let mut text = format!(
            "measured worst response {} exceeds the analysed {} by {}",
            format_time(worst),
            format_time(analysed),
            format_time(worst - analysed)
        );
        // Throttled, the top task's wake-ups include the throttling's stops: they are not a
        // platform latency to charge.
        if let Some(share) = self.throttled_share() {
            text.push_str(&format!(
                "; the set asks for {:.0} % of the CPU and the host's RT throttling stops real-time tasks after {:.0} % of \
                 each period, delaying even the highest-priority task",
                self.analysis.utilization * 100.0,
                share * 100.0
            ));
            return Some(text);
        }
        if let Some((_, latency)) = self.timer_latency(&r.scenario) {
            let overheads = Overheads {
                activation_latency_ns: self
                    .analysis
                    .overheads
                    .activation_latency_ns
                    .saturating_add(latency.max(0) as u64),
                ..self.analysis.overheads
            };
            let charged = analyse(&self.set, overheads);
            let shown = format_time(latency);
            match charged.tasks.iter().find(|t| t.name == r.task).and_then(|t| t.response_ns) {
                Some(r2) if worst <= i64::try_from(r2).unwrap_or(i64::MAX) => text.push_str(&format!(
                    "; with this run's timer latency ({shown}) charged as activation latency the analysis gives R = {}, which covers it",
                    format_time(r2 as i64)
                )),
                Some(r2) => text.push_str(&format!(
                    "; with this run's timer latency ({shown}) charged as activation latency the analysis gives R = {}, still {} short: \
                     the rest is per-job overhead (task switches, which the analysis charges as 2 CS per job with `--switch`, and the clock reads \
                     that time the job) or interference it does not model \
                     (interrupts, kernel threads, the hypervisor taking the CPU)",
                    format_time(r2 as i64),
                    format_time(worst - r2 as i64)
                )),
                None => text.push_str(&format!(
                    "; with this run's timer latency ({shown}) charged as activation latency the analysis finds the task unschedulable"
                )),
            }
        }
        Some(text)
    }

    /// What the analysis charged and the platform figure of `scenario` it did not: the
    /// timer latency the highest-priority task saw, and how to charge it with `rtlab check`.
    pub fn platform_text(&self, scenario: &str) -> String {
        let o = self.analysis.overheads;
        let charged = if o == Overheads::default() {
            "the analysis charged no activation latency and no task-switch time".to_string()
        } else {
            format!(
                "the analysis charged an activation latency of {} and a task-switch time of {}",
                format_time(o.activation_latency_ns as i64),
                format_time(o.switch_ns as i64)
            )
        };
        let file = &self.file;
        let measure = format!(
            "measure the platform (`rtlab run --probe timer,switch`) and rerun `rtlab check {file} --platform RESULT`"
        );
        match (self.timer_latency(scenario), self.throttled_share()) {
            (Some((top, latency)), Some(share)) => format!(
                "{charged}; the worst wake-up of the highest-priority task ({top}) was {} in this run, but it includes the stops \
                 of the host's RT throttling (the set asks for {:.0} % of the CPU, real-time tasks get {:.0} %), so it is not \
                 this machine's timer latency: {measure}",
                format_time(latency),
                self.analysis.utilization * 100.0,
                share * 100.0
            ),
            (Some((top, latency)), None) => format!(
                "{charged}; this machine's timer latency in this run (the worst wake-up of the highest-priority task, {top}) \
                 was {}: charge it with `rtlab check {file} --jitter {}us`, or {measure}",
                format_time(latency),
                (latency.max(0) as u64).div_ceil(1_000)
            ),
            (None, _) => format!("{charged}; {measure}"),
        }
    }
}

/// "9.200 ms", "48.3 µs": a response time precise enough to compare with R.
pub fn format_time(ns: i64) -> String {
    if ns.abs() >= 1_000_000 {
        format!("{:.3} ms", ns as f64 / 1e6)
    } else {
        format!("{:.1} µs", ns as f64 / 1e3)
    }
}
