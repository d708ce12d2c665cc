//! The taskset probe: a task set run for real (`rtlab run --taskset`).
//!
//! One thread per task, all pinned to one CPU (the schedulability analysis is for one
//! processor), each at its task's priority under the run's real-time policy. Every task is
//! released by absolute periodic timers from one synchronous start S shared by all tasks
//! (`clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)` until S + k T), so the critical instant
//! of the analysis happens at S. Each job is busy until the thread's own CPU time
//! (CLOCK_THREAD_CPUTIME_ID) has advanced by C: time spent preempted by higher-priority tasks
//! is not execution, and no calibrated loop count drifts with the CPU frequency.
//!
//! Per job: response time = finish - nominal release (recorded in `taskset.<task>.response`),
//! lateness = finish - absolute deadline (the worst kept exactly: it can be negative, which a
//! histogram cannot hold), and a deadline miss when finish > deadline. Jobs are never
//! skipped: a job released while the previous one runs starts when it finishes, so an
//! overloaded set shows growing responses and misses. Releases stop at the end of the
//! window W; afterwards each thread keeps working on jobs released before W until each
//! finishes or its deadline passes, and a job whose deadline passed unfinished is a miss too.
//! A stop request ends at once: unfinished jobs whose deadline passed are misses, the rest
//! are neither. Every count is explicit: released = completed + unfinished.

use crate::clock::{MonotonicClock, WakeClock};
use crate::live::LiveStats;
use crate::raw::{RawDrain, RawWriter, FLAG_OVERRUN};
use crate::recorder::{raw_target, MetricRecorder};
use crate::workers::{run_workers, Ending, Worker};
use crate::{ClockKind, Detail, Probe, ProbeError, ProbeOutput, ThreadOutput, ThreadSetup};
use rtlab_sys::clock::SleepOutcome;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::Arc;
use std::time::Duration;

/// Prefix of the probe's metrics, thread names and raw files.
pub const NAME: &str = "taskset";

/// Time between the last thread being ready and the synchronous start: enough for every
/// thread to be asleep waiting for S.
const START_LEAD_NS: u64 = 20_000_000;

/// One task as the probe runs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskSpec {
    pub name: String,
    /// C, ns of the thread's CPU time per job.
    pub wcet_ns: u64,
    /// T, ns.
    pub period_ns: u64,
    /// D, ns (relative to each release).
    pub deadline_ns: u64,
    /// The thread's priority under a real-time policy (0 is recorded under SCHED_OTHER).
    pub priority: i32,
}

#[derive(Debug, Clone)]
pub struct TasksetConfig {
    pub tasks: Vec<TaskSpec>,
    /// The one CPU every task thread is pinned to.
    pub cpu: usize,
    /// Length of the window in which jobs are released (the run's duration).
    pub window_ns: u64,
    pub histogram_max_ns: u64,
    /// Directory for raw sample files; None: no raw output.
    pub raw_dir: Option<PathBuf>,
    pub raw_ring_capacity: usize,
    /// Only [`ClockKind::Monotonic`]: a task set's schedule needs real threads on a real CPU.
    pub clock: ClockKind,
    /// The task threads' set-up; each thread's priority is replaced by its task's.
    pub setup: ThreadSetup,
}

/// `taskset.<task>.response` for each task, in order: the name made safe for a metric
/// (letters, digits, '-' and '_'; anything else becomes '_'), and numbered when two tasks
/// would otherwise share a metric.
pub fn response_metrics(tasks: &[TaskSpec]) -> Vec<String> {
    let safe: Vec<String> = tasks.iter().map(|t| safe_name(&t.name)).collect();
    safe.iter()
        .enumerate()
        .map(|(i, s)| {
            if safe.iter().filter(|o| *o == s).count() > 1 {
                format!("{NAME}.{s}-{}.response", i + 1)
            } else {
                format!("{NAME}.{s}.response")
            }
        })
        .collect()
}

fn safe_name(name: &str) -> String {
    let s: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_') { c } else { '_' }).collect();
    if s.is_empty() {
        "task".into()
    } else {
        s
    }
}

/// The clock calls of a job loop: the periodic wake-up clock plus the thread's CPU time.
/// Implementations must not allocate.
pub trait JobClock: WakeClock {
    /// CPU time consumed by the calling thread, ns.
    fn cpu_time_ns(&mut self) -> u64;
}

impl JobClock for MonotonicClock {
    #[inline]
    fn cpu_time_ns(&mut self) -> u64 {
        rtlab_sys::clock::thread_cpu_time_ns()
    }
}

/// One task's thread, everything allocated.
struct PreparedTask {
    spec: TaskSpec,
    response: MetricRecorder,
    live: Arc<LiveStats>,
}

/// The synchronous start: the last thread to be ready publishes S; a thread whose set-up
/// failed tells the others not to wait.
struct StartGate {
    expected: usize,
    ready: AtomicUsize,
    start_ns: AtomicU64,
    aborted: AtomicBool,
}

impl StartGate {
    /// Waits (outside the measured window) until S is published; None when the run stops
    /// or another thread failed first.
    fn wait(&self, stop: &AtomicBool) -> Option<u64> {
        if self.ready.fetch_add(1, AcqRel) + 1 == self.expected {
            let start = rtlab_sys::clock::monotonic_ns() + START_LEAD_NS;
            self.start_ns.store(start, Release);
        }
        loop {
            let start = self.start_ns.load(Acquire);
            if start != 0 {
                return Some(start);
            }
            if stop.load(Relaxed) || self.aborted.load(Relaxed) {
                return None;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// A task set with every thread's recorder allocated; see the module documentation.
pub struct TasksetProbe {
    config: TasksetConfig,
    tasks: Vec<PreparedTask>,
    raw_drains: Vec<RawDrain>,
}

impl TasksetProbe {
    pub fn new(config: TasksetConfig) -> Result<Self, ProbeError> {
        if matches!(config.clock, ClockKind::Simulated { .. }) {
            return Err(ProbeError::Config(
                "a task set runs real threads on a real CPU: the simulated clock drives the timer and jitter probes only"
                    .into(),
            ));
        }
        if config.tasks.is_empty() {
            return Err(ProbeError::Config("the task set has no task".into()));
        }
        if config.window_ns == 0 {
            return Err(ProbeError::Config("the run must last longer than 0".into()));
        }
        for t in &config.tasks {
            if t.period_ns == 0 || t.deadline_ns == 0 || t.wcet_ns == 0 {
                return Err(ProbeError::Config(format!("task {:?}: C, T and D must be greater than 0", t.name)));
            }
        }
        let metrics = response_metrics(&config.tasks);
        let mut tasks = Vec::with_capacity(config.tasks.len());
        let mut raw_drains = Vec::new();
        for (spec, metric) in config.tasks.iter().zip(metrics) {
            let file = format!("{}-cpu{}.bin", metric.trim_end_matches(".response").replace('.', "-"), config.cpu);
            let raw = raw_target(config.raw_dir.as_deref(), &file, config.raw_ring_capacity, &mut raw_drains);
            tasks.push(PreparedTask {
                spec: spec.clone(),
                response: MetricRecorder::new(metric, config.histogram_max_ns, config.window_ns, raw, 0)?,
                live: Arc::new(LiveStats::new(config.cpu)),
            });
        }
        Ok(Self { config, tasks, raw_drains })
    }
}

impl Probe for TasksetProbe {
    fn name(&self) -> &'static str {
        NAME
    }

    fn live(&self) -> Vec<Arc<LiveStats>> {
        self.tasks.iter().map(|t| t.live.clone()).collect()
    }

    fn run(self: Box<Self>, stop: Arc<AtomicBool>) -> Result<ProbeOutput, ProbeError> {
        let TasksetProbe { config, tasks, raw_drains } = *self;
        let writer = RawWriter::for_drains(raw_drains)?;
        let gate = Arc::new(StartGate {
            expected: tasks.len(),
            ready: AtomicUsize::new(0),
            start_ns: AtomicU64::new(0),
            aborted: AtomicBool::new(false),
        });
        let cpu = config.cpu;
        let workers = tasks
            .into_iter()
            .enumerate()
            .map(|(index, task)| {
                let (stop, gate) = (stop.clone(), gate.clone());
                let setup = ThreadSetup {
                    priority: if config.setup.policy.is_realtime() { task.spec.priority } else { 0 },
                    ..config.setup
                };
                let window_ns = config.window_ns;
                // The details say the priority the thread ran with (0 as an ordinary task).
                let mut task = task;
                task.spec.priority = setup.priority;
                Worker {
                    cpu,
                    // The kernel keeps 15 bytes of a thread name.
                    name: format!("rtlab-ts{index}/{cpu}"),
                    body: Box::new(move || {
                        let applied = match setup.apply(cpu) {
                            Ok(a) => a,
                            Err(e) => {
                                gate.aborted.store(true, Relaxed);
                                return Err(e);
                            }
                        };
                        let output = run_task(task, cpu, window_ns, &gate, &stop);
                        drop(applied);
                        output.map(Some)
                    }),
                }
            })
            .collect();
        let (threads, raw_written) = run_workers(workers, &stop, Ending::Independent, writer, true)?;
        let notes = vec![format!(
            "the task threads ran on CPU {cpu}, released together at one synchronous start (the critical instant), each job busy for C of its own CPU time."
        )];
        Ok(ProbeOutput { probe: NAME.into(), threads, raw_written, notes })
    }
}

/// What one task's job loop counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct JobCounts {
    /// Jobs whose release time came inside the window (and, after a stop, before it).
    pub released: u64,
    pub completed: u64,
    /// Completed after their absolute deadline.
    pub completed_late: u64,
    /// Not completed, and their deadline had passed when the thread ended.
    pub unfinished_late: u64,
    /// Largest finish - absolute deadline of a completed job (negative: all early).
    pub worst_lateness_ns: Option<i64>,
    /// Largest delay from a release to the thread running, over the jobs for which the
    /// thread slept until the release. For the highest-priority task this is the timer
    /// latency; for the others it includes higher-priority jobs running.
    pub worst_wake_up_ns: Option<i64>,
    /// A stop request ended the loop.
    pub interrupted: bool,
}

impl JobCounts {
    pub fn deadline_misses(&self) -> u64 {
        self.completed_late + self.unfinished_late
    }

    pub fn unfinished(&self) -> u64 {
        self.released - self.completed
    }
}

/// When a task's jobs are released.
#[derive(Debug, Clone, Copy)]
struct Schedule {
    start_ns: u64,
    window_end_ns: u64,
    period_ns: u64,
    deadline_ns: u64,
    wcet_ns: u64,
}

impl Schedule {
    fn release_of(&self, job: u64) -> u64 {
        self.start_ns.saturating_add(job.saturating_mul(self.period_ns))
    }

    /// Jobs released in the window: k >= 0 with S + k T < W.
    fn in_window(&self) -> u64 {
        (self.window_end_ns - self.start_ns).div_ceil(self.period_ns)
    }

    /// Jobs released in the window by `now` (release <= now).
    fn released_by(&self, now: u64) -> u64 {
        if now < self.start_ns {
            return 0;
        }
        ((now - self.start_ns) / self.period_ns + 1).min(self.in_window())
    }
}

fn run_task(
    mut task: PreparedTask,
    cpu: usize,
    window_ns: u64,
    gate: &StartGate,
    stop: &AtomicBool,
) -> Result<ThreadOutput, ProbeError> {
    let Some(start_ns) = gate.wait(stop) else {
        return Ok(thread_output(task, cpu, JobCounts { interrupted: true, ..JobCounts::default() }));
    };
    let schedule = Schedule {
        start_ns,
        window_end_ns: start_ns + window_ns,
        period_ns: task.spec.period_ns,
        deadline_ns: task.spec.deadline_ns,
        wcet_ns: task.spec.wcet_ns,
    };
    let counts = job_loop(&mut MonotonicClock, &mut task, &schedule, cpu as u32, stop)
        .map_err(|source| ProbeError::Sampling { cpu, source })?;
    Ok(thread_output(task, cpu, counts))
}

fn thread_output(task: PreparedTask, cpu: usize, counts: JobCounts) -> ThreadOutput {
    let spec = task.spec.clone();
    let mut details = vec![
        ("task".to_string(), Detail::Text(spec.name.clone())),
        ("task_period_ns".to_string(), Detail::Int(spec.period_ns as i64)),
        ("wcet_ns".to_string(), Detail::Int(spec.wcet_ns as i64)),
        ("deadline_ns".to_string(), Detail::Int(spec.deadline_ns as i64)),
        ("priority".to_string(), Detail::Int(i64::from(spec.priority))),
        ("jobs_released".to_string(), Detail::Int(counts.released as i64)),
        ("jobs_completed".to_string(), Detail::Int(counts.completed as i64)),
        ("deadline_misses".to_string(), Detail::Int(counts.deadline_misses() as i64)),
        ("unfinished_past_deadline".to_string(), Detail::Int(counts.unfinished_late as i64)),
    ];
    if let Some(l) = counts.worst_lateness_ns {
        details.push(("worst_lateness_ns".into(), Detail::Int(l)));
    }
    if let Some(w) = counts.worst_wake_up_ns {
        details.push(("worst_wake_up_ns".into(), Detail::Int(w)));
    }
    let (lost, block_s) = (task.response.lost(), task.response.block_s());
    ThreadOutput {
        cpu,
        thread_name: format!("{NAME}/{}", spec.name),
        cycles: counts.released,
        // count + overruns = cycles: here the jobs released but not completed.
        overruns: counts.unfinished(),
        lost,
        interrupted: counts.interrupted,
        block_s,
        interval_ns: spec.period_ns,
        details,
        // Finishing drops the raw sink, which tells the writer this ring is done.
        metrics: vec![task.response.finish()],
    }
}

/// The real-time loop of one task. Touches only preallocated memory; its system calls are
/// the clock reads (monotonic and the thread's CPU time) and the sleep.
fn job_loop<C: JobClock>(
    clock: &mut C,
    task: &mut PreparedTask,
    schedule: &Schedule,
    cpu: u32,
    stop: &AtomicBool,
) -> rtlab_sys::Result<JobCounts> {
    let mut counts = JobCounts::default();
    task.response.start(schedule.start_ns);
    let jobs = schedule.in_window();
    let mut job = 0;
    while job < jobs {
        if stop.load(Relaxed) {
            counts.interrupted = true;
            break;
        }
        let release = schedule.release_of(job);
        let deadline = release.saturating_add(schedule.deadline_ns);
        if clock.now_ns() < release {
            if clock.sleep_until_ns(release)? == SleepOutcome::Interrupted {
                continue;
            }
            let woke = clock.now_ns() as i64 - release as i64;
            counts.worst_wake_up_ns = Some(counts.worst_wake_up_ns.map_or(woke, |w| w.max(woke)));
        }
        // Busy for C of this thread's CPU time. After the window a job whose deadline has
        // passed is given up (it is a miss); inside it, a late job still runs to the end.
        let cpu_start = clock.cpu_time_ns();
        let finish = loop {
            let used = clock.cpu_time_ns().saturating_sub(cpu_start);
            let now = clock.now_ns();
            if used >= schedule.wcet_ns {
                break Some(now);
            }
            if stop.load(Relaxed) {
                counts.interrupted = true;
                break None;
            }
            if now >= schedule.window_end_ns && now >= deadline {
                break None;
            }
        };
        match finish {
            Some(finish) => {
                let response = finish as i64 - release as i64;
                let lateness = finish as i64 - deadline as i64;
                let late = finish > deadline;
                counts.completed += 1;
                counts.completed_late += u64::from(late);
                counts.worst_lateness_ns = Some(counts.worst_lateness_ns.map_or(lateness, |l| l.max(lateness)));
                task.response.record(release, response, cpu, if late { FLAG_OVERRUN } else { 0 });
            }
            None if counts.interrupted => break,
            None => counts.unfinished_late += 1,
        }
        job += 1;
        let m = task.response.moments();
        task.live.publish(m.count, counts.deadline_misses(), task.response.lost(), m.min, m.max, m.sum as i64);
    }
    // Interrupted: the jobs released so far that were not completed (the one running and
    // any backlog) are misses when their deadline has passed.
    counts.released = job;
    if counts.interrupted {
        let now = clock.now_ns();
        counts.released = schedule.released_by(now).max(job);
        let unfinished = job..counts.released;
        counts.unfinished_late +=
            unfinished.filter(|&k| schedule.release_of(k).saturating_add(schedule.deadline_ns) <= now).count() as u64;
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A single thread's clocks, scripted: sleeping wakes `wake_latency` after the deadline;
    /// every CPU-time read runs the thread for `step` ns (CPU time and wall time advance
    /// together) unless the wall time reaches a preemption, which takes wall time only.
    struct ScriptedClock {
        now: u64,
        cpu: u64,
        step: u64,
        wake_latency: u64,
        /// (at, length): the thread does not run from `at` for `length` ns.
        preemptions: Vec<(u64, u64)>,
    }

    impl WakeClock for ScriptedClock {
        fn now_ns(&mut self) -> u64 {
            self.now
        }
        fn sleep_until_ns(&mut self, deadline_ns: u64) -> rtlab_sys::Result<SleepOutcome> {
            self.now = self.now.max(deadline_ns) + self.wake_latency;
            Ok(SleepOutcome::Expired)
        }
    }

    impl JobClock for ScriptedClock {
        fn cpu_time_ns(&mut self) -> u64 {
            if let Some(i) = self.preemptions.iter().position(|&(at, _)| self.now >= at) {
                let (_, length) = self.preemptions.remove(i);
                self.now += length;
            }
            self.now += self.step;
            self.cpu += self.step;
            self.cpu
        }
    }

    fn clock(wake_latency: u64, preemptions: Vec<(u64, u64)>) -> ScriptedClock {
        ScriptedClock { now: 0, cpu: 0, step: 1_000, wake_latency, preemptions }
    }

    fn task(wcet_ns: u64, period_ns: u64, deadline_ns: u64) -> PreparedTask {
        PreparedTask {
            spec: TaskSpec { name: "t".into(), wcet_ns, period_ns, deadline_ns, priority: 1 },
            response: MetricRecorder::new("taskset.t.response", 10_000_000_000, 10_000_000_000, None, 0).unwrap(),
            live: Arc::new(LiveStats::new(0)),
        }
    }

    fn schedule(task: &PreparedTask, start_ns: u64, window_ns: u64) -> Schedule {
        Schedule {
            start_ns,
            window_end_ns: start_ns + window_ns,
            period_ns: task.spec.period_ns,
            deadline_ns: task.spec.deadline_ns,
            wcet_ns: task.spec.wcet_ns,
        }
    }

    fn run(mut clock: ScriptedClock, mut task: PreparedTask, start: u64, window: u64) -> (JobCounts, PreparedTask) {
        let s = schedule(&task, start, window);
        let counts = job_loop(&mut clock, &mut task, &s, 0, &AtomicBool::new(false)).unwrap();
        (counts, task)
    }

    #[test]
    fn a_feasible_task_meets_every_deadline_with_response_c_plus_wake_up() {
        // C 10 µs, T 100 µs, D 50 µs, 1 ms window from S = 1 ms: 10 jobs; each wakes 2 µs late.
        let (counts, task) = run(clock(2_000, vec![]), task(10_000, 100_000, 50_000), 1_000_000, 1_000_000);
        assert_eq!((counts.released, counts.completed, counts.deadline_misses()), (10, 10, 0));
        let m = task.response.moments();
        // The first CPU-time read starts the job; C needs ten more 1 µs steps.
        assert_eq!((m.count, m.min, m.max), (10, 13_000, 13_000));
        assert_eq!(counts.worst_lateness_ns, Some(13_000 - 50_000));
        assert_eq!(counts.worst_wake_up_ns, Some(2_000));
        assert!(!counts.interrupted);
    }

    #[test]
    fn a_preempted_job_finishes_late_and_the_next_one_starts_from_the_backlog() {
        // C 10 µs, T = D = 20 µs; an uninterrupted job takes 11 µs of wall time (the read
        // that starts it, then ten 1 µs steps). Job 0 (release 0) is preempted for 45 µs at
        // once: it finishes at 56 µs (lateness 36 µs). Jobs 1, 2, 3 (releases 20, 40, 60)
        // came due meanwhile and run back to back: finish 67, 78, 89, each past its
        // deadline (40, 60, 80). Job 4 (release 80) finishes at 100 = its deadline: on time.
        let (counts, task) = run(clock(0, vec![(0, 45_000)]), task(10_000, 20_000, 20_000), 0, 200_000);
        assert_eq!((counts.released, counts.completed, counts.unfinished()), (10, 10, 0));
        assert_eq!(counts.deadline_misses(), 4);
        let m = task.response.moments();
        assert_eq!((m.max, m.min), (56_000, 11_000));
        assert_eq!(counts.worst_lateness_ns, Some(36_000));
        // Job 5 (release 100) starts at once when job 4 ends; job 6 sleeps until 120.
        assert_eq!(counts.worst_wake_up_ns, Some(0));
    }

    #[test]
    fn an_overloaded_task_misses_and_its_backlog_past_the_deadline_counts_as_misses() {
        // C 30 µs > T = D = 20 µs, window 100 µs: 5 jobs released (0..80). Each job takes
        // 31 µs: jobs 0-2 finish at 31, 62, 93 (all late). Job 3 (deadline 80) is still
        // running at W = 100 and past its deadline: given up; so is job 4 (deadline 100).
        let (counts, task) = run(clock(0, vec![]), task(30_000, 20_000, 20_000), 0, 100_000);
        assert_eq!(counts.released, 5);
        assert_eq!(counts.completed, 3);
        assert_eq!(counts.completed_late, 3);
        assert_eq!(counts.unfinished_late, 2);
        assert_eq!(counts.deadline_misses(), 5);
        assert_eq!(counts.released, counts.completed + counts.unfinished());
        // Responses grow with the backlog: 31, 42, 53 µs.
        let m = task.response.moments();
        assert_eq!((m.count, m.min, m.max), (3, 31_000, 53_000));
        assert_eq!(counts.worst_lateness_ns, Some(33_000));
    }

    #[test]
    fn after_the_window_a_job_released_inside_it_still_finishes_before_its_deadline() {
        // C 10 µs, T 100 µs, D 90 µs, window 50 µs: one job, preempted 60 µs: finishes at
        // 71 µs, past the window but before its deadline: completed, not a miss.
        let (counts, _) = run(clock(0, vec![(0, 60_000)]), task(10_000, 100_000, 90_000), 0, 50_000);
        assert_eq!((counts.released, counts.completed, counts.deadline_misses()), (1, 1, 0));
    }

    #[test]
    fn a_stop_ends_at_once_and_counts_only_passed_deadlines() {
        let mut t = task(10_000, 20_000, 20_000);
        let s = schedule(&t, 0, 1_000_000);
        let stop = AtomicBool::new(true);
        let counts = job_loop(&mut clock(0, vec![]), &mut t, &s, 0, &stop).unwrap();
        assert!(counts.interrupted);
        // Stopped at time 0: job 0 was released (release 0 <= now) but its deadline is ahead.
        assert_eq!((counts.released, counts.completed, counts.deadline_misses()), (1, 0, 0));
    }

    #[test]
    fn metric_names_are_safe_and_unique() {
        let spec = |name: &str| TaskSpec { name: name.into(), wcet_ns: 1, period_ns: 1, deadline_ns: 1, priority: 1 };
        let names = response_metrics(&[spec("ctrl"), spec("a b"), spec("a.b"), spec("")]);
        assert_eq!(
            names,
            ["taskset.ctrl.response", "taskset.a_b-2.response", "taskset.a_b-3.response", "taskset.task.response"]
        );
    }

    #[test]
    fn the_simulated_clock_is_refused() {
        let config = TasksetConfig {
            tasks: vec![TaskSpec { name: "t".into(), wcet_ns: 1, period_ns: 10, deadline_ns: 10, priority: 1 }],
            cpu: 0,
            window_ns: 100,
            histogram_max_ns: 1_000_000,
            raw_dir: None,
            raw_ring_capacity: 16,
            clock: ClockKind::simulated(1),
            setup: ThreadSetup::unchanged(),
        };
        assert!(matches!(TasksetProbe::new(config), Err(ProbeError::Config(_))));
    }

    /// A real run on one CPU (the current one), as an ordinary task so that the test needs
    /// no privilege: only counts and invariants are checked, never latencies.
    fn real_run(tasks: Vec<TaskSpec>, window_ns: u64) -> ProbeOutput {
        let cpu = rtlab_sys::sched::current_cpu().unwrap_or(0);
        let config = TasksetConfig {
            tasks,
            cpu,
            window_ns,
            histogram_max_ns: 10_000_000_000,
            raw_dir: None,
            raw_ring_capacity: 16,
            clock: ClockKind::Monotonic,
            setup: ThreadSetup { pin_to_cpu: true, ..ThreadSetup::unchanged() },
        };
        let probe = Box::new(TasksetProbe::new(config).unwrap());
        probe.run(Arc::new(AtomicBool::new(false))).unwrap()
    }

    fn detail(thread: &ThreadOutput, name: &str) -> i64 {
        match thread.details.iter().find(|(n, _)| n == name) {
            Some((_, Detail::Int(v))) => *v,
            other => panic!("detail {name}: {other:?}"),
        }
    }

    fn spec(name: &str, wcet_ms: u64, period_ms: u64) -> TaskSpec {
        TaskSpec {
            name: name.into(),
            wcet_ns: wcet_ms * 1_000_000,
            period_ns: period_ms * 1_000_000,
            deadline_ns: period_ms * 1_000_000,
            priority: 1,
        }
    }

    fn check_invariants(output: &ProbeOutput, window_ns: u64) {
        for t in &output.threads {
            let released = detail(t, "jobs_released") as u64;
            let completed = detail(t, "jobs_completed") as u64;
            let misses = detail(t, "deadline_misses") as u64;
            let period = detail(t, "task_period_ns") as u64;
            assert_eq!(released, window_ns.div_ceil(period), "{}: every release in the window", t.thread_name);
            assert_eq!(t.cycles, released);
            assert_eq!(released, completed + t.overruns, "{}: released = completed + unfinished", t.thread_name);
            assert!(misses <= released);
            let m = &t.metrics[0];
            assert_eq!((m.moments.count, m.histogram.count()), (completed, completed));
            assert!(!t.interrupted);
        }
    }

    #[test]
    fn a_real_feasible_set_completes_its_jobs() {
        // U = 0.15 on one CPU for 2 s.
        let window = 2_000_000_000;
        let output = real_run(vec![spec("fast", 1, 20), spec("slow", 5, 50)], window);
        assert_eq!(output.threads.len(), 2);
        check_invariants(&output, window);
        assert_eq!(output.threads[0].metrics[0].metric, "taskset.fast.response");
    }

    #[test]
    fn a_real_set_with_u_above_1_misses_deadlines() {
        // U = 0.6 + 0.5 = 1.1 on one CPU: within every 20 ms the jobs due need 22 ms of CPU
        // time, so some deadline is missed whatever the scheduler does.
        let window = 2_000_000_000;
        let output = real_run(vec![spec("a", 6, 10), spec("b", 10, 20)], window);
        check_invariants(&output, window);
        let misses: i64 = output.threads.iter().map(|t| detail(t, "deadline_misses")).sum();
        assert!(misses > 0);
    }
}
