//! `rtlab run --taskset`: short real runs (1-2 s) of the example task sets, checked for
//! structure, counts and invariants (never latencies: the development VM has
//! multi-millisecond hypervisor spikes), the U > 1 set's deadline misses (behaviour: the
//! jobs due need more CPU time than there is), and exit 2 for malformed sets and options
//! that mean nothing for a task set.

mod common;

use common::{measurements, online_cpus, repo_root, rtlab, run_json, u};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn example(name: &str) -> PathBuf {
    repo_root().join("examples/tasksets").join(name)
}

/// Runs `rtlab run --taskset FILE --load idle -D <duration> -o DIR ARGS`; returns the exit
/// code, stdout, stderr and the results directory.
fn run_taskset(file: &Path, duration: &str, args: &[&str]) -> (Option<i32>, String, String, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output = rtlab()
        .args(["run", "--taskset"])
        .arg(file)
        .args(["--load", "idle", "-D", duration, "--output"])
        .arg(&out)
        .args(args)
        .output()
        .unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (output.status.code(), text(&output.stdout), text(&output.stderr), dir)
}

/// Every task's counts add up, its measurement agrees with its run.json entry, and the
/// entries come highest priority first.
fn check_taskset(run: &Value, window_ns: u64) -> Vec<(String, u64, u64)> {
    let section = &run["taskset"];
    let results = section["results"].as_array().expect("taskset.results");
    assert!(!results.is_empty());
    let mut previous_priority = i64::MAX;
    let mut counts = Vec::new();
    for r in results {
        let task = r["task"].as_str().unwrap().to_string();
        let (released, completed, misses) = (u(r, "jobs_released"), u(r, "jobs_completed"), u(r, "deadline_misses"));
        assert_eq!(released, window_ns.div_ceil(u(r, "period_ns")), "{task}: every release of the window");
        assert!(completed <= released && misses <= released, "{task}: {r}");
        let priority = r["priority"].as_i64().unwrap();
        assert!(priority <= previous_priority, "highest priority first");
        previous_priority = priority;
        let metric = r["metric"].as_str().unwrap();
        assert_eq!(metric, format!("taskset.{task}.response"));
        let m: Vec<&Value> = measurements(run, metric);
        assert_eq!(m.len(), 1, "one measurement per task and scenario");
        let m = m[0];
        assert_eq!(m["probe"], "taskset");
        assert_eq!(u(m, "count"), completed);
        assert_eq!(u(m, "cycles"), released);
        assert_eq!(u(m, "count") + u(m, "overruns"), u(m, "cycles"), "released = completed + unfinished");
        assert_eq!(u(m, "interval_ns"), u(r, "period_ns"));
        assert_eq!(m["details"]["deadline_misses"], r["deadline_misses"]);
        if completed > 0 {
            assert_eq!(m["summary"]["max"], r["worst_response_ns"]);
            // The response includes C of CPU time.
            assert!(r["worst_response_ns"].as_i64().unwrap() >= r["wcet_ns"].as_i64().unwrap());
        }
        // The flag says what the numbers say; an excess is explained.
        let exceeds = match (r["worst_response_ns"].as_i64(), r["analysed_response_ns"].as_i64()) {
            (Some(w), Some(a)) => w > a,
            _ => false,
        };
        assert_eq!(r["exceeds_analysis"], exceeds);
        assert_eq!(r["explanation"].is_string(), exceeds, "{r}");
        counts.push((task, released, misses));
    }
    counts
}

#[test]
fn a_feasible_set_runs_on_one_cpu_and_every_count_adds_up() {
    let (code, stdout, stderr, dir) = run_taskset(&example("three-tasks.toml"), "2s", &[]);
    assert_eq!(code, Some(0), "stderr:\n{stderr}");
    let run = run_json(&dir.path().join("out"));
    let cpus = online_cpus(&run);
    let cpu = *cpus.last().unwrap();
    assert_eq!(run["experiment"]["probes"], serde_json::json!(["taskset"]));
    assert_eq!(run["experiment"]["cpus"], serde_json::json!([cpu]), "the last online CPU by default");
    assert_eq!(run["taskset"]["cpu"], cpu);
    assert_eq!(run["taskset"]["file"], example("three-tasks.toml").display().to_string());
    assert_eq!(run["taskset"]["analysis"]["schedulable"], true);
    let counts = check_taskset(&run, 2_000_000_000);
    let names: Vec<&str> = counts.iter().map(|(t, _, _)| t.as_str()).collect();
    assert_eq!(names, ["ctrl", "filter", "logger"], "deadline-monotonic order");
    for m in run["measurements"].as_array().unwrap() {
        assert_eq!(m["cpu"], cpu);
    }
    // The terminal summary: the table and the one-line conclusion with the job count.
    let jobs: u64 = counts.iter().map(|(_, released, _)| released).sum();
    assert!(stdout.contains("Task set three-tasks run for real on CPU"), "{stdout}");
    assert!(stdout.contains(&format!("deadline misses in {jobs} jobs")), "{stdout}");
    // A saved task-set run reports like any other.
    let report = rtlab().args(["report", "--format", "md"]).arg(dir.path().join("out")).output().unwrap();
    assert_eq!(report.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&report.stdout).contains("Task set three-tasks run for real on CPU"));
}

#[test]
fn a_set_with_u_above_1_misses_deadlines() {
    let (code, stdout, stderr, dir) = run_taskset(&example("overload.toml"), "2s", &["--quiet"]);
    assert_eq!(code, Some(0), "a miss is a result, not a failure; stderr:\n{stderr}");
    assert!(stdout.is_empty());
    let run = run_json(&dir.path().join("out"));
    assert_eq!(run["taskset"]["analysis"]["schedulable"], false);
    let counts = check_taskset(&run, 2_000_000_000);
    let misses: u64 = counts.iter().map(|(_, _, m)| m).sum();
    assert!(misses > 0, "U = 1.3 on one CPU: {counts:?}");
    let notes = run["taskset"]["notes"].to_string();
    assert!(notes.contains("unschedulable"), "{notes}");
}

#[test]
fn an_experiment_file_names_the_set_and_cpus_chooses_its_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lab.toml");
    let set = example("three-tasks.toml");
    std::fs::write(&file, format!("taskset = {:?}\ncpus = \"0\"\nduration = \"1s\"\nload = \"idle\"\n", set.display()))
        .unwrap();
    let out = dir.path().join("out");
    let output = rtlab().args(["run", "-q", "--experiment"]).arg(&file).arg("--output").arg(&out).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let run = run_json(&out);
    assert_eq!(run["taskset"]["cpu"], 0);
    check_taskset(&run, 1_000_000_000);
}

/// Writes a task set and runs it: it must be refused before anything runs.
fn refused(text: &str, extra: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("set.toml");
    std::fs::write(&file, text).unwrap();
    let out = dir.path().join("out");
    let output = rtlab()
        .args(["run", "--taskset"])
        .arg(&file)
        .args(["--load", "idle", "-D", "1s", "--output"])
        .arg(&out)
        .args(extra)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(2), "stderr:\n{stderr}");
    assert!(!out.exists(), "nothing is written for a refused run");
    assert_eq!(stderr.lines().count(), 1, "one clear line: {stderr}");
    stderr
}

#[test]
fn malformed_sets_exit_2_naming_the_task_and_field() {
    let negative = refused("[[task]]\nname = \"a\"\nC = \"-1ms\"\nT = \"10ms\"\n", &[]);
    assert!(negative.contains("task \"a\"") && negative.contains("C"), "{negative}");
    let c_above_d = refused("[[task]]\nname = \"b\"\nC = \"20ms\"\nT = \"50ms\"\nD = \"10ms\"\n", &[]);
    assert!(c_above_d.contains("task \"b\""), "{c_above_d}");
    let no_period = refused("[[task]]\nname = \"c\"\nC = \"1ms\"\n", &[]);
    assert!(no_period.contains("task \"c\"") && no_period.contains('T'), "{no_period}");
    let cyclic = refused(
        "[[task]]\nname = \"x\"\nC = \"1ms\"\nT = \"10ms\"\nabove = [\"y\"]\n\
         [[task]]\nname = \"y\"\nC = \"1ms\"\nT = \"10ms\"\nabove = [\"x\"]\n",
        &[],
    );
    assert!(cyclic.contains("above"), "{cyclic}");
    for message in [&negative, &c_above_d, &no_period, &cyclic] {
        assert!(message.starts_with("rtlab: error: --taskset "), "{message}");
    }
}

#[test]
fn options_without_meaning_for_a_task_set_exit_2() {
    let good = "[[task]]\nname = \"a\"\nC = \"1ms\"\nT = \"10ms\"\n";
    assert!(refused(good, &["--interval", "1ms"]).contains("--interval has no effect with --taskset"));
    assert!(refused(good, &["--priority", "80"]).contains("--priority has no effect with --taskset"));
    assert!(refused(good, &["--rate", "100"]).contains("--rate has no effect"));
    assert!(refused(good, &["--simulate", "1"]).contains("--simulate"));
    // --probe and --taskset exclude each other (clap says so, exit 2).
    let output = rtlab().args(["run", "--taskset", "x.toml", "--probe", "timer"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let missing = rtlab().args(["run", "--taskset", "/nonexistent/set.toml", "-L", "idle"]).output().unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("cannot read the task set"));
}
