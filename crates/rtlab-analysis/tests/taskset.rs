//! Task-set parsing: rtlab's TOML format, rt-app JSON (with its comments, trailing commas and
//! repeated event keys), recognition by content, and malformed sets rejected with the task
//! and field named.

use rtlab_analysis::taskset::{parse_taskset, Task, TaskSetError, TaskSetFormat};

const US: u64 = 1_000;
const MS: u64 = 1_000_000;

fn error(text: &str) -> TaskSetError {
    match parse_taskset(text) {
        Ok(set) => panic!("accepted:\n{text}\n{set:?}"),
        Err(e) => e,
    }
}

/// Asserts the error names `task` and `field`, shows on one line, and its reason contains
/// `words`.
fn assert_error(text: &str, task: Option<&str>, field: &str, words: &str) {
    let e = error(text);
    assert_eq!(e.task.as_deref(), task, "{e}");
    assert_eq!(e.field, field, "{e}");
    let line = e.to_string();
    assert!(!line.contains('\n'), "one line: {line:?}");
    assert!(line.contains(words), "{line:?} lacks {words:?}");
    if let Some(t) = task {
        assert!(line.starts_with(&format!("task {t:?}: {field}: ")), "{line}");
    }
}

#[test]
fn toml_with_every_field() {
    let set = parse_taskset(
        r#"
        # A control loop and its helpers.
        name = "plant"

        [[task]]
        name = "ctrl"
        C = "2ms"
        T = "10ms"
        D = "8ms"
        priority = 80
        B = "100us"
        J = "50us"

        [[task]]
        name = "log"
        C = "1.5ms"
        T = "100ms"
        priority = 10
        "#,
    )
    .unwrap();
    assert_eq!(set.format, TaskSetFormat::Toml);
    assert_eq!(set.name.as_deref(), Some("plant"));
    assert_eq!(
        set.tasks[0],
        Task {
            name: "ctrl".into(),
            wcet_ns: 2 * MS,
            period_ns: 10 * MS,
            deadline_ns: 8 * MS,
            priority: Some(80),
            blocking_ns: 100 * US,
            jitter_ns: 50 * US,
            above: vec![],
        }
    );
    // D defaults to T, B and J to 0.
    assert_eq!(set.tasks[1], Task { priority: Some(10), ..Task::periodic("log", 1_500 * US, 100 * MS) });
}

#[test]
fn toml_relative_priorities() {
    let set = parse_taskset(
        r#"
        [[task]]
        name = "a"
        C = "1ms"
        T = "20ms"
        above = ["b", "c"]
        [[task]]
        name = "b"
        C = "1ms"
        T = "10ms"
        [[task]]
        name = "c"
        C = "1ms"
        T = "5ms"
        "#,
    )
    .unwrap();
    assert_eq!(set.tasks[0].above, vec!["b", "c"]);
    // a above both; c (T 5) before b (T 10) by rate-monotonic order.
    assert_eq!(set.relative_order().unwrap(), vec![0, 2, 1]);
}

/// A real-shaped rt-app file (the layout of rt-app's doc/examples/tutorial): comments of
/// both kinds, trailing commas, a global section, repeated and suffixed event keys (rt-app
/// runs each in turn: C is their sum), a single-phase task, instances, and a SCHED_OTHER
/// task whose priority is a nice value.
const RT_APP: &str = r#"
/*
 * Two periodic SCHED_FIFO threads and a background one.
 */
{
    "tasks" : {
        // 1 ms of work every 10 ms, deadline 8 ms.
        "ctrl" : {
            "policy" : "SCHED_FIFO",
            "priority" : 80,
            "cpus" : [1],
            "dl-deadline" : 8000,
            "run" : 600,
            "run" : 400,
            "timer" : { "ref" : "unique", "period" : 10000, "mode" : "absolute" },
        },
        "filter" : {
            "instance" : 2,
            "policy" : "SCHED_RR",
            "priority" : 40,
            "loop" : -1,
            "phases" : {
                "steady" : {
                    "runtime0" : 2000,
                    "timer0" : { "ref" : "unique", "period" : 50000 },
                },
            },
        },
        "logger" : {
            "priority" : 60,  /* SCHED_FIFO from default_policy */
            "delay" : 1000,
            "run" : 5000,
            "timer" : { "ref" : "logtimer", "period" : 100000 },
        },
    },
    "global" : {
        "duration" : 30,
        "calibration" : "CPU0",
        "default_policy" : "SCHED_FIFO",
        "lock_pages" : true,
        "log_size" : "file",
        "ftrace" : "none",
    },
}
"#;

#[test]
fn rt_app_json_with_comments_and_trailing_commas() {
    let set = parse_taskset(RT_APP).unwrap();
    assert_eq!(set.format, TaskSetFormat::RtApp);
    let summary: Vec<(&str, u64, u64, u64, Option<i32>)> =
        set.tasks.iter().map(|t| (t.name.as_str(), t.wcet_ns, t.period_ns, t.deadline_ns, t.priority)).collect();
    assert_eq!(
        summary,
        vec![
            ("ctrl", 1000 * US, 10 * MS, 8 * MS, Some(80)),
            ("filter-0", 2000 * US, 50 * MS, 50 * MS, Some(40)),
            ("filter-1", 2000 * US, 50 * MS, 50 * MS, Some(40)),
            ("logger", 5000 * US, 100 * MS, 100 * MS, Some(60)),
        ]
    );
}

#[test]
fn rt_app_other_policy_leaves_the_order_to_the_analysis() {
    let set = parse_taskset(
        r#"{ "tasks": {
            "a": { "priority": -5, "run": 1000, "timer": { "ref": "a", "period": 10000 } },
            "b": { "runtime": 1000, "timer": { "ref": "b", "period": 5000 } }
        } }"#,
    )
    .unwrap();
    assert_eq!(set.tasks.iter().map(|t| t.priority).collect::<Vec<_>>(), vec![None, None]);
    // SCHED_FIFO without a priority: rt-app's default, 10.
    let set = parse_taskset(
        r#"{ "tasks": { "a": { "policy": "SCHED_FIFO", "run": 1000, "timer": { "ref": "a", "period": 10000 } } } }"#,
    )
    .unwrap();
    assert_eq!(set.tasks[0].priority, Some(10));
}

#[test]
fn rt_app_errors_name_the_task_and_key() {
    let wrap = |task: &str| format!(r#"{{ "tasks": {{ "t": {{ {task} }} }} }}"#);
    assert_error(&wrap(r#""run": 1000, "sleep": 9000"#), Some("t"), "sleep", "periodic model");
    assert_error(&wrap(r#""run": 1000"#), Some("t"), "timer.period", "missing");
    assert_error(&wrap(r#""run": 1000, "timer": { "ref": "x" }"#), Some("t"), "timer.period", "missing");
    assert_error(&wrap(r#""timer": { "ref": "x", "period": 1000 }"#), Some("t"), "run", "missing");
    assert_error(&wrap(r#""run": -5, "timer": { "ref": "x", "period": 1000 }"#), Some("t"), "run", "negative");
    assert_error(&wrap(r#""run": 0, "timer": { "ref": "x", "period": 1000 }"#), Some("t"), "run", "greater than 0");
    assert_error(
        &wrap(r#""run": 2000, "timer": { "ref": "x", "period": 1000 }"#),
        Some("t"),
        "run",
        "exceeds the deadline",
    );
    assert_error(
        &wrap(r#""run": 200, "dl-deadline": 100, "timer": { "ref": "x", "period": 1000 }"#),
        Some("t"),
        "run",
        "exceeds the deadline",
    );
    assert_error(
        &wrap(r#""run": 200, "frobnicate": 1, "timer": { "ref": "x", "period": 1000 }"#),
        Some("t"),
        "frobnicate",
        "unknown key",
    );
    assert_error(
        &wrap(r#""policy": "SCHED_DEADLINE", "run": 200, "timer": { "ref": "x", "period": 1000 }"#),
        Some("t"),
        "policy",
        "SCHED_DEADLINE",
    );
    assert_error(
        &wrap(
            r#""phases": { "p1": { "run": 1, "timer": { "ref": "x", "period": 10 } }, "p2": { "run": 1, "timer": { "ref": "x", "period": 20 } } }"#,
        ),
        Some("t"),
        "phases",
        "2 phases",
    );
    assert_error(
        r#"{ "tasks": { "a": { "run" : 1, } "#,
        None,
        "file",
        "not valid rt-app JSON: EOF parsing object at line 1",
    );
    assert_error(r#"{ "global": {} }"#, None, "tasks", "missing");
    assert_error(r#"{ "tasks": {} }"#, None, "tasks", "no tasks");
}

#[test]
fn malformed_toml_sets_name_the_task_and_field() {
    let task = |body: &str| format!("[[task]]\nname = \"t\"\n{body}\n");
    assert_error(&task("C = \"-2ms\"\nT = \"10ms\""), Some("t"), "C", "negative");
    assert_error(&task("C = -2\nT = \"10ms\""), Some("t"), "C", "negative");
    assert_error(&task("C = \"12ms\"\nT = \"20ms\"\nD = \"10ms\""), Some("t"), "C", "exceeds the deadline D = 10ms");
    assert_error(&task("C = \"2ms\""), Some("t"), "T", "missing");
    assert_error(&task("T = \"2ms\""), Some("t"), "C", "missing");
    assert_error(&task("C = \"0ms\"\nT = \"10ms\""), Some("t"), "C", "greater than 0");
    assert_error(&task("C = \"1ms\"\nT = \"0s\""), Some("t"), "T", "greater than 0");
    assert_error(&task("C = \"1ms\"\nT = \"10ms\"\nD = \"0s\""), Some("t"), "D", "greater than 0");
    assert_error(&task("C = \"1ms\"\nT = \"10ms\"\nD = \"20ms\""), Some("t"), "D", "exceeds the period");
    assert_error(&task("C = 2\nT = \"10ms\""), Some("t"), "C", "has no unit");
    assert_error(&task("C = \"2 parsecs\"\nT = \"10ms\""), Some("t"), "C", "unknown unit");
    assert_error(&task("C = \"2ms\"\nT = \"10ms\"\nperiod = \"10ms\""), Some("t"), "period", "unknown key");
    assert_error(&task("C = \"2ms\"\nT = \"10ms\"\npriority = 100"), Some("t"), "priority", "1 to 99");
    assert_error(&task("C = \"2ms\"\nT = \"10ms\"\nabove = [\"nobody\"]"), Some("t"), "above", "no task named");
    assert_error(&task("C = \"2ms\"\nT = \"10ms\"\nabove = [\"t\"]"), Some("t"), "above", "cyclic");
    assert_error("[[task]]\nC = \"2ms\"\nT = \"10ms\"\n", Some("#1"), "name", "missing");
    let twice = format!("{}{}", task("C = \"1ms\"\nT = \"10ms\""), task("C = \"1ms\"\nT = \"20ms\""));
    assert_error(&twice, Some("t"), "name", "two tasks");
    assert_error("name = \"x\"\n", None, "task", "missing");
    assert_error("tasks = []\n", None, "tasks", "unknown key");
    assert_error("this is not a task set", None, "file", "neither rt-app JSON");
}

#[test]
fn priorities_are_all_or_none_and_not_mixed_with_above() {
    let two = |a: &str, b: &str| {
        format!("[[task]]\nname = \"a\"\nC = \"1ms\"\nT = \"10ms\"\n{a}\n[[task]]\nname = \"b\"\nC = \"1ms\"\nT = \"20ms\"\n{b}\n")
    };
    assert_error(&two("priority = 50", ""), Some("b"), "priority", "missing, while other tasks give one");
    assert_error(&two("priority = 50", "above = [\"a\"]"), Some("b"), "above", "not both");
    assert!(parse_taskset(&two("priority = 50", "priority = 50")).is_ok());
    assert!(parse_taskset(&two("", "above = [\"a\"]")).is_ok());
}

#[test]
fn a_cyclic_priority_spec_exits_with_the_task_and_field() {
    let text = r#"
        [[task]]
        name = "sensor"
        C = "1ms"
        T = "10ms"
        above = ["actuator"]
        [[task]]
        name = "actuator"
        C = "1ms"
        T = "10ms"
        above = ["logger"]
        [[task]]
        name = "logger"
        C = "1ms"
        T = "10ms"
        above = ["sensor"]
    "#;
    let e = error(text);
    assert_eq!(e.field, "above");
    assert!(e.task.is_some());
    let line = e.to_string();
    assert!(line.contains("a cyclic priority spec"), "{line}");
    for name in ["sensor", "actuator", "logger"] {
        assert!(line.contains(name), "{line}");
    }
}

#[test]
fn a_syntax_error_gives_its_line() {
    let e = error("[[task]]\nname = \"t\"\nC = \"1ms\nT = \"10ms\"\n");
    assert_eq!(e.task, None);
    assert!(e.to_string().contains("line 3"), "{e}");
}

/// The examples shipped in examples/tasksets parse.
#[test]
fn shipped_examples_parse() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/tasksets");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        if let Err(e) = parse_taskset(&text) {
            panic!("{}: {e}", path.display());
        }
        seen += 1;
    }
    assert!(seen >= 4, "examples in {}", dir.display());
}
