//! The task-set run of the report tests ([`example_run`]) and the tests of
//! [`rtlab_results::taskset::TasksetRun`] that need it.

use rtlab_analysis::schedulability::{analyse, Overheads};
use rtlab_analysis::taskset::TaskSet;
use rtlab_results::run::RunResult;
use rtlab_results::taskset::{format_time, TasksetRun, PROBE};

/// A task-set run for the report tests: the two-scenario fixture (an unloaded and a loaded
/// scenario) with its measurements replaced by two tasks' response times. Under load the
/// logger misses deadlines and the control task's worst response exceeds its R by more
/// than its timer latency.
pub(crate) fn example_run() -> RunResult {
    use rtlab_analysis::taskset::{Task, TaskSetFormat};
    use rtlab_analysis::{LatencyHistogram, Moments, Summary};
    use rtlab_results::run::Detail;

    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/simulated-two-scenarios.run.json");
    let mut run = RunResult::load(std::path::Path::new(path)).expect("the fixture loads");
    let base = run.measurements[0].clone();
    let set = TaskSet {
        name: Some("example".into()),
        format: TaskSetFormat::Toml,
        tasks: vec![
            Task { deadline_ns: 40_000_000, ..Task::periodic("ctrl", 5_000_000, 50_000_000) },
            Task::periodic("logger", 10_000_000, 100_000_000),
        ],
    };
    let analysis = analyse(&set, Overheads::default());
    let loaded = run.scenarios[1].name.clone();
    let measurement = |scenario: &str, task: &Task, responses: &[i64], released: i64, misses: i64, wake: i64| {
        let mut h = LatencyHistogram::new(10_000_000_000).unwrap();
        let mut moments = Moments::new();
        for &v in responses {
            h.record(v);
            moments.record(v);
        }
        let priority = analysis.tasks.iter().find(|t| t.name == task.name).map_or(1, |t| t.priority);
        let worst = responses.iter().max().copied().unwrap_or(0);
        let mut m = base.clone();
        m.scenario = scenario.to_string();
        m.probe = PROBE.into();
        m.metric = format!("taskset.{}.response", task.name);
        m.thread = format!("taskset/{}", task.name);
        m.cpu = 1;
        m.count = moments.count;
        m.cycles = released as u64;
        m.overruns = released as u64 - moments.count;
        m.interval_ns = task.period_ns;
        m.summary = Summary::from_parts(&h, &moments);
        m.moments = moments;
        m.histogram = h.encode().unwrap();
        m.per_second_max_ns = vec![Some(worst)];
        m.details = [
            ("task", Detail::Text(task.name.clone())),
            ("task_period_ns", Detail::Int(task.period_ns as i64)),
            ("wcet_ns", Detail::Int(task.wcet_ns as i64)),
            ("deadline_ns", Detail::Int(task.deadline_ns as i64)),
            ("priority", Detail::Int(i64::from(priority))),
            ("jobs_released", Detail::Int(released)),
            ("jobs_completed", Detail::Int(responses.len() as i64)),
            ("deadline_misses", Detail::Int(misses)),
            ("worst_lateness_ns", Detail::Int(worst - task.deadline_ns as i64)),
            ("worst_wake_up_ns", Detail::Int(wake)),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        m
    };
    let (ctrl, logger) = (&set.tasks[0], &set.tasks[1]);
    run.measurements = vec![
        measurement("idle", ctrl, &[5_021_000, 5_030_500, 5_018_200, 5_044_000], 4, 0, 40_000),
        measurement("idle", logger, &[15_050_000, 10_031_000], 2, 0, 5_060_000),
        measurement(&loaded, ctrl, &[5_120_000, 5_900_000, 5_200_000, 5_150_000], 4, 0, 150_000),
        measurement(&loaded, logger, &[15_200_000, 112_000_000], 3, 2, 5_300_000),
    ];
    run.experiment.probes = vec![PROBE.into()];
    run.experiment.cpus = vec![1];
    let notes = vec!["Every task thread ran on CPU 1.".to_string()];
    run.taskset = Some(TasksetRun::new("example.toml".into(), set, 1, analysis, notes, &run));
    run
}

mod tests {
    use super::*;

    #[test]
    fn times_are_shown_precisely_enough_to_compare() {
        assert_eq!(format_time(9_200_000), "9.200 ms");
        assert_eq!(format_time(48_340), "48.3 µs");
        assert_eq!(format_time(-36_000_000), "-36.000 ms");
    }

    #[test]
    fn results_per_task_and_scenario_with_the_excess_explained() {
        let run = example_run();
        let t = run.taskset.as_ref().unwrap();
        let loaded = run.scenarios[1].name.as_str();
        assert_eq!(t.results.len(), 4);
        assert_eq!(t.totals(), (4 + 2 + 4 + 3, 2));
        let of =
            |scenario: &str, task: &str| t.results.iter().find(|r| r.scenario == scenario && r.task == task).unwrap();
        let ctrl = of("idle", "ctrl");
        assert_eq!(
            (ctrl.priority, ctrl.analysed_response_ns, ctrl.worst_response_ns),
            (90, Some(5_000_000), Some(5_044_000))
        );
        assert!(ctrl.exceeds_analysis);
        // 44 µs over R; the idle timer latency (40 µs) charged gives R = 5.040 ms: 4 µs short.
        let why = ctrl.explanation.as_deref().unwrap();
        assert!(why.starts_with("measured worst response 5.044 ms exceeds the analysed 5.000 ms by 44.0 µs; with this run's timer latency (40.0 µs) charged as activation latency the analysis gives R = 5.040 ms, still 4.0 µs short"), "{why}");
        assert!(why.contains("charge it with `rtlab check example.toml --jitter 40us`"), "{why}");
        let logger = of(loaded, "logger");
        assert_eq!((logger.jobs_released, logger.jobs_completed, logger.deadline_misses), (3, 2, 2));
        assert_eq!(logger.worst_lateness_ns, Some(12_000_000));
        // The loaded timer latency (150 µs) charged: R = 15.150 ms does not cover 112 ms.
        assert!(logger.explanation.as_deref().unwrap().contains("R = 15.150 ms, still 96.850 ms short"));
        // Within R: no flag, no explanation.
        let idle_logger = of("idle", "logger");
        assert!(idle_logger.exceeds_analysis, "15.050 ms > R = 15 ms");
        let mut within = run.clone();
        within.measurements.retain(|m| m.metric == "taskset.logger.response" && m.scenario == "idle");
        let t2 = TasksetRun::new("x".into(), t.set.clone(), 1, t.analysis.clone(), vec![], &within);
        assert_eq!(t2.results.len(), 1);
        assert!(t2.timer_latency("idle").is_none(), "the top task did not run");
    }

    #[test]
    fn rt_throttling_is_named_instead_of_a_timer_latency() {
        let mut run = example_run();
        run.host.rt_throttling.runtime_us = Some(950_000);
        let t = run.taskset.as_ref().unwrap();
        // U = 0.2 fits in 95 %: nothing said.
        let fits = TasksetRun::new("x".into(), t.set.clone(), 1, t.analysis.clone(), vec![], &run);
        assert_eq!(fits.rt_throttling_share, Some(0.95));
        assert!(fits.notes.is_empty());
        assert!(!fits.platform_text("idle").contains("throttling"));
        // An analysis of U = 1.2 (as if the set asked for more) is throttled.
        let mut analysis = t.analysis.clone();
        analysis.utilization = 1.2;
        let over = TasksetRun::new("x".into(), t.set.clone(), 1, analysis, vec![], &run);
        assert!(over.notes[0].starts_with(
            "The set asks for 120 % of the CPU but the host's RT throttling lets real-time tasks use 95 %"
        ));
        let ctrl = over.results.iter().find(|r| r.task == "ctrl").unwrap();
        let why = ctrl.explanation.as_deref().unwrap();
        assert!(why.contains("RT throttling stops real-time tasks after 95 % of each period"), "{why}");
        assert!(!why.contains("--jitter"), "a throttled wake-up is not a latency to charge: {why}");
    }

    #[test]
    fn the_section_survives_run_json() {
        let run = example_run();
        let dir = tempfile::tempdir().unwrap();
        run.save(dir.path()).unwrap();
        let loaded = RunResult::load(dir.path()).unwrap();
        assert_eq!(loaded.taskset, run.taskset);
        // A run without a task set writes no "taskset" key.
        let mut plain = run.clone();
        plain.taskset = None;
        assert!(!serde_json::to_string(&plain).unwrap().contains("\"taskset\":"));
    }
}
