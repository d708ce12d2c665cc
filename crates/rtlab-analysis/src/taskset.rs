//! Task sets: Dodiu's model of periodic tasks (C, T, D, priority, blocking B, release
//! jitter J), read from rtlab's TOML format or from an rt-app JSON file, recognised by content.
//! Documented in docs/taskset.md.
//!
//! A task is well formed when 0 < C ≤ D ≤ T (Dodiu et al. 2010): the response-time analysis
//! in [`crate::schedulability`] is exact for such constrained deadlines. Priorities are either
//! numbers (every task gives one), relative (`above = ["other"]`: higher than those tasks), or
//! absent (rate-/deadline-monotonic, assigned by the analysis).

use crate::units::parse_time_ns;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// SCHED_FIFO priorities run from 1 to 99.
pub const FIFO_PRIORITIES: std::ops::RangeInclusive<i32> = 1..=99;

/// rt-app's priority for a SCHED_FIFO/SCHED_RR thread that names none (its doc/tutorial.txt).
pub const RT_APP_DEFAULT_PRIORITY: i32 = 10;

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
    /// Relative priority: this task runs at a higher priority than each task named here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub above: Vec<String>,
}

impl Task {
    /// A task with C and T, D = T, no priority, blocking, jitter or relative order.
    pub fn periodic(name: impl Into<String>, wcet_ns: u64, period_ns: u64) -> Task {
        Task {
            name: name.into(),
            wcet_ns,
            period_ns,
            deadline_ns: period_ns,
            priority: None,
            blocking_ns: 0,
            jitter_ns: 0,
            above: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskSetFormat {
    Toml,
    RtApp,
}

impl TaskSetFormat {
    /// "rtlab TOML", "rt-app JSON".
    pub fn describe(self) -> &'static str {
        match self {
            TaskSetFormat::Toml => "rtlab TOML",
            TaskSetFormat::RtApp => "rt-app JSON",
        }
    }
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

impl TaskSetError {
    fn of_task(task: &str, field: &str, reason: impl Into<String>) -> TaskSetError {
        TaskSetError { task: Some(task.to_string()), field: field.to_string(), reason: reason.into() }
    }

    fn of_file(field: &str, reason: impl Into<String>) -> TaskSetError {
        TaskSetError { task: None, field: field.to_string(), reason: reason.into() }
    }
}

/// How a format spells the model's fields, so that errors name the key the user wrote.
#[derive(Debug, Clone, Copy)]
struct FieldNames {
    wcet: &'static str,
    period: &'static str,
    deadline: &'static str,
    priority: &'static str,
}

const TOML_FIELDS: FieldNames = FieldNames { wcet: "C", period: "T", deadline: "D", priority: "priority" };
const RT_APP_FIELDS: FieldNames =
    FieldNames { wcet: "run", period: "timer.period", deadline: "dl-deadline", priority: "priority" };

/// Parses a task set, TOML or rt-app JSON, recognised by content.
pub fn parse_taskset(text: &str) -> Result<TaskSet, TaskSetError> {
    match detect_format(text) {
        TaskSetFormat::RtApp => {
            let set = rt_app::parse(text)?;
            validate_with(&set, RT_APP_FIELDS)?;
            Ok(set)
        }
        TaskSetFormat::Toml => {
            let set = parse_toml(text)?;
            validate_with(&set, TOML_FIELDS)?;
            Ok(set)
        }
    }
}

/// rt-app JSON when the first thing after whitespace and JavaScript comments is `{` (a TOML
/// document cannot start so), rtlab TOML otherwise.
pub fn detect_format(text: &str) -> TaskSetFormat {
    let mut rest = text.trim_start_matches('\u{feff}');
    loop {
        rest = rest.trim_start();
        if let Some(after) = rest.strip_prefix("//") {
            rest = after.split_once('\n').map_or("", |(_, next)| next);
        } else if let Some(after) = rest.strip_prefix("/*") {
            rest = after.split_once("*/").map_or("", |(_, next)| next);
        } else {
            break;
        }
    }
    if rest.starts_with('{') {
        TaskSetFormat::RtApp
    } else {
        TaskSetFormat::Toml
    }
}

impl TaskSet {
    /// Checks what the analysis relies on, naming the task and field of the first problem:
    /// names present and unique; 0 < C ≤ D ≤ T; priorities 1..=99 given by every task or by
    /// none; `above` naming other tasks of the set, without cycles, and not mixed with numeric
    /// priorities. [`parse_taskset`] applies it; call it on a set built by hand.
    pub fn validate(&self) -> Result<(), TaskSetError> {
        validate_with(self, TOML_FIELDS)
    }

    /// Some task has D < T: deadline-monotonic priorities are optimal, not rate-monotonic.
    pub fn has_constrained_deadlines(&self) -> bool {
        self.tasks.iter().any(|t| t.deadline_ns < t.period_ns)
    }

    /// The rate-monotonic sort key of task i, (T, i), deadline-monotonic (D, i) when some
    /// D < T: shorter first, file order among equals.
    pub(crate) fn monotonic_key(&self) -> impl Fn(usize) -> (u64, usize) + Copy + '_ {
        let deadline_monotonic = self.has_constrained_deadlines();
        move |i| {
            let t = &self.tasks[i];
            (if deadline_monotonic { t.deadline_ns } else { t.period_ns }, i)
        }
    }

    /// The order of the relative priority spec (`above`), highest first, as indices into
    /// `tasks`: a topological order of the "above" relation in which tasks the spec leaves
    /// unordered take the rate-monotonic order (deadline-monotonic when some D < T), then
    /// the file order. A cycle is an error naming a task on it and the field `above`.
    pub fn relative_order(&self) -> Result<Vec<usize>, TaskSetError> {
        let n = self.tasks.len();
        let index: BTreeMap<&str, usize> = self.tasks.iter().enumerate().map(|(i, t)| (t.name.as_str(), i)).collect();
        // below[i]: tasks that i is above.
        let mut below: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut higher_count = vec![0usize; n];
        for (i, task) in self.tasks.iter().enumerate() {
            for other in &task.above {
                let Some(&j) = index.get(other.as_str()) else {
                    return Err(TaskSetError::of_task(
                        &task.name,
                        "above",
                        format!("no task named {other:?} in the set"),
                    ));
                };
                if j == i {
                    return Err(TaskSetError::of_task(
                        &task.name,
                        "above",
                        "a cyclic priority spec: the task names itself",
                    ));
                }
                if !below[i].contains(&j) {
                    below[i].push(j);
                    higher_count[j] += 1;
                }
            }
        }
        let key = self.monotonic_key();
        // Kahn's algorithm, always taking the ready task with the smallest key.
        let mut ready: BTreeSet<(u64, usize)> = (0..n).filter(|&i| higher_count[i] == 0).map(key).collect();
        let mut order = Vec::with_capacity(n);
        while let Some(first) = ready.pop_first() {
            let i = first.1;
            order.push(i);
            for &j in &below[i] {
                higher_count[j] -= 1;
                if higher_count[j] == 0 {
                    ready.insert(key(j));
                }
            }
        }
        if order.len() < n {
            let cycle = find_cycle(&below, &higher_count);
            let names: Vec<&str> = cycle.iter().map(|&i| self.tasks[i].name.as_str()).collect();
            let first = names.first().copied().unwrap_or_default();
            return Err(TaskSetError::of_task(
                first,
                "above",
                format!("a cyclic priority spec: {} above {first}", names.join(" above ")),
            ));
        }
        Ok(order)
    }
}

/// A cycle among the tasks Kahn's algorithm could not order (each still has a task above it
/// that is itself unordered): walk from one to a task above it until a task repeats.
fn find_cycle(below: &[Vec<usize>], higher_count: &[usize]) -> Vec<usize> {
    let n = below.len();
    let unordered: Vec<bool> = (0..n).map(|i| higher_count[i] > 0).collect();
    // above_of[j]: an unordered task that is above j.
    let mut above_of: Vec<Option<usize>> = vec![None; n];
    for (i, lower) in below.iter().enumerate() {
        if unordered[i] {
            for &j in lower {
                if unordered[j] && above_of[j].is_none() {
                    above_of[j] = Some(i);
                }
            }
        }
    }
    let Some(start) = (0..n).find(|&i| unordered[i]) else { return Vec::new() };
    let mut path = vec![start];
    let mut current = start;
    while let Some(next) = above_of[current] {
        if let Some(at) = path.iter().position(|&p| p == next) {
            // path[at..] walks upward (each is below the next): report it top-down.
            let mut cycle: Vec<usize> = path[at..].to_vec();
            cycle.reverse();
            return cycle;
        }
        path.push(next);
        current = next;
    }
    path
}

fn validate_with(set: &TaskSet, fields: FieldNames) -> Result<(), TaskSetError> {
    if set.tasks.is_empty() {
        return Err(TaskSetError::of_file("tasks", "the set has no tasks"));
    }
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    for task in &set.tasks {
        if task.name.trim().is_empty() {
            return Err(TaskSetError::of_task(&task.name, "name", "must not be empty"));
        }
        if !seen.insert(&task.name) {
            return Err(TaskSetError::of_task(&task.name, "name", "two tasks have this name"));
        }
        let positive = [
            (fields.wcet, "C", task.wcet_ns),
            (fields.period, "T", task.period_ns),
            (fields.deadline, "D", task.deadline_ns),
        ];
        for (field, letter, value) in positive {
            if value == 0 {
                return Err(TaskSetError::of_task(&task.name, field, format!("{letter} must be greater than 0")));
            }
        }
        // 0 < C ≤ D ≤ T: (field, value, the bound it exceeds, why that is refused).
        let ordered = [
            (fields.wcet, task.wcet_ns, "deadline D", task.deadline_ns, "the task cannot finish in time even alone"),
            (fields.deadline, task.deadline_ns, "period T", task.period_ns, "rtlab analyses constrained deadlines"),
        ];
        for (field, value, bound_name, bound, why) in ordered {
            if value > bound {
                let in_us = |ns: u64| crate::requirement::format_bound(ns as i64);
                return Err(TaskSetError::of_task(
                    &task.name,
                    field,
                    format!("{} exceeds the {bound_name} = {}: {why} (0 < C ≤ D ≤ T)", in_us(value), in_us(bound)),
                ));
            }
        }
        if let Some(p) = task.priority {
            if !FIFO_PRIORITIES.contains(&p) {
                return Err(TaskSetError::of_task(
                    &task.name,
                    fields.priority,
                    format!("{p} is not a SCHED_FIFO priority (1 to 99)"),
                ));
            }
        }
    }
    let numeric = set.tasks.iter().filter(|t| t.priority.is_some()).count();
    let relative = set.tasks.iter().find(|t| !t.above.is_empty());
    if numeric > 0 {
        if let Some(task) = relative {
            return Err(TaskSetError::of_task(
                &task.name,
                "above",
                "a set orders its tasks either with numeric priorities or with \"above\", not both",
            ));
        }
        if let Some(task) = set.tasks.iter().find(|t| t.priority.is_none()) {
            return Err(TaskSetError::of_task(
                &task.name,
                fields.priority,
                "missing, while other tasks give one: give every task a priority, or none \
                 (rate-/deadline-monotonic order), or order them with \"above\"",
            ));
        }
    }
    set.relative_order()?;
    Ok(())
}

// ---------------------------------------------------------------------------------------
// rtlab TOML

const TOML_TOP_KEYS: [&str; 2] = ["name", "task"];
const TOML_TASK_KEYS: [&str; 8] = ["name", "C", "T", "D", "B", "J", "priority", "above"];

fn parse_toml(text: &str) -> Result<TaskSet, TaskSetError> {
    let table: toml::Table = toml::from_str(text).map_err(|e| {
        let place = e.span().map(|s| line_column(text, s.start)).map(|(l, c)| format!(" at line {l}, column {c}"));
        TaskSetError::of_file(
            "file",
            format!(
                "neither rt-app JSON (it does not start with \"{{\") nor rtlab TOML: TOML error{}: {}",
                place.unwrap_or_default(),
                e.message().trim()
            ),
        )
    })?;
    for key in table.keys() {
        if !TOML_TOP_KEYS.contains(&key.as_str()) {
            return Err(TaskSetError::of_file(
                key,
                format!("unknown key (a task set has {}; tasks are [[task]] tables)", TOML_TOP_KEYS.join(", ")),
            ));
        }
    }
    let name = match table.get("name") {
        None => None,
        Some(toml::Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(TaskSetError::of_file("name", "must be a string")),
    };
    let Some(entries) = table.get("task") else {
        return Err(TaskSetError::of_file("task", "missing: describe each task in a [[task]] table"));
    };
    let Some(entries) = entries.as_array() else {
        return Err(TaskSetError::of_file("task", "must be an array of tables ([[task]])"));
    };
    let mut tasks = Vec::with_capacity(entries.len());
    for (position, entry) in entries.iter().enumerate() {
        let Some(fields) = entry.as_table() else {
            return Err(TaskSetError::of_file("task", format!("entry #{} is not a table", position + 1)));
        };
        tasks.push(toml_task(fields, position)?);
    }
    Ok(TaskSet { name, format: TaskSetFormat::Toml, tasks })
}

fn toml_task(fields: &toml::Table, position: usize) -> Result<Task, TaskSetError> {
    let name = match fields.get("name") {
        Some(toml::Value::String(s)) => s.clone(),
        Some(_) => return Err(TaskSetError::of_task(&format!("#{}", position + 1), "name", "must be a string")),
        None => return Err(TaskSetError::of_task(&format!("#{}", position + 1), "name", "missing")),
    };
    let fail = |field: &str, reason: String| TaskSetError::of_task(&name, field, reason);
    for key in fields.keys() {
        if !TOML_TASK_KEYS.contains(&key.as_str()) {
            return Err(fail(key, format!("unknown key (a task has {})", TOML_TASK_KEYS.join(", "))));
        }
    }
    let duration = |field: &str| -> Result<Option<u64>, TaskSetError> {
        match fields.get(field) {
            None => Ok(None),
            Some(toml::Value::String(text)) => {
                if text.trim_start().starts_with('-') {
                    return Err(fail(field, format!("{text:?} is negative")));
                }
                parse_time_ns(text).map(Some).map_err(|e| fail(field, e.to_string()))
            }
            Some(toml::Value::Integer(n)) if *n < 0 => Err(fail(field, format!("{n} is negative"))),
            Some(v @ (toml::Value::Integer(_) | toml::Value::Float(_))) => {
                Err(fail(field, format!("{v} has no unit: write a duration such as \"2ms\" or \"500us\"")))
            }
            Some(_) => Err(fail(field, "must be a duration such as \"2ms\"".to_string())),
        }
    };
    let wcet_ns = duration("C")?.ok_or_else(|| fail("C", "missing (the worst-case execution time)".into()))?;
    let period_ns = duration("T")?.ok_or_else(|| fail("T", "missing (the period)".into()))?;
    let deadline_ns = duration("D")?.unwrap_or(period_ns);
    let blocking_ns = duration("B")?.unwrap_or(0);
    let jitter_ns = duration("J")?.unwrap_or(0);
    let priority = match fields.get("priority") {
        None => None,
        Some(toml::Value::Integer(p)) => Some(
            i32::try_from(*p).map_err(|_| fail("priority", format!("{p} is not a SCHED_FIFO priority (1 to 99)")))?,
        ),
        Some(_) => return Err(fail("priority", "must be an integer from 1 to 99".into())),
    };
    let above = match fields.get("above") {
        None => Vec::new(),
        Some(toml::Value::Array(names)) => names
            .iter()
            .map(|v| v.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| fail("above", "must be a list of task names, e.g. above = [\"logger\"]".into()))?,
        Some(toml::Value::String(one)) => vec![one.clone()],
        Some(_) => return Err(fail("above", "must be a list of task names, e.g. above = [\"logger\"]".into())),
    };
    Ok(Task { name, wcet_ns, period_ns, deadline_ns, priority, blocking_ns, jitter_ns, above })
}

/// 1-based line and column of a byte offset.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

// ---------------------------------------------------------------------------------------
// rt-app JSON

mod rt_app {
    //! rt-app's workload files (scheduler-tools/rt-app, doc/tutorial.txt): lenient JSON (json-c
    //! takes // and /* */ comments and trailing commas; json5 reads a superset) whose objects may
    //! repeat a key (rt-app runs each `run` event in turn), so objects are read as ordered
    //! lists of entries, never as maps. Durations are integers in µs.

    use super::{Task, TaskSet, TaskSetError, TaskSetFormat, RT_APP_DEFAULT_PRIORITY};
    use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
    use std::fmt;

    /// A JSON value keeping duplicate keys and their order.
    #[derive(Debug, Clone, PartialEq)]
    pub(super) enum Json {
        Null,
        Bool(bool),
        Integer(i128),
        Float(f64),
        String(String),
        Array(Vec<Json>),
        Object(Vec<(String, Json)>),
    }

    impl Json {
        fn kind(&self) -> &'static str {
            match self {
                Json::Null => "null",
                Json::Bool(_) => "a boolean",
                Json::Integer(_) => "an integer",
                Json::Float(_) => "a number",
                Json::String(_) => "a string",
                Json::Array(_) => "an array",
                Json::Object(_) => "an object",
            }
        }
    }

    impl<'de> Deserialize<'de> for Json {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Json, D::Error> {
            deserializer.deserialize_any(JsonVisitor)
        }
    }

    struct JsonVisitor;

    impl<'de> Visitor<'de> for JsonVisitor {
        type Value = Json;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a JSON value")
        }
        fn visit_unit<E>(self) -> Result<Json, E> {
            Ok(Json::Null)
        }
        fn visit_none<E>(self) -> Result<Json, E> {
            Ok(Json::Null)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Json, D::Error> {
            Json::deserialize(d)
        }
        fn visit_bool<E>(self, v: bool) -> Result<Json, E> {
            Ok(Json::Bool(v))
        }
        fn visit_i64<E>(self, v: i64) -> Result<Json, E> {
            Ok(Json::Integer(v.into()))
        }
        fn visit_u64<E>(self, v: u64) -> Result<Json, E> {
            Ok(Json::Integer(v.into()))
        }
        fn visit_f64<E>(self, v: f64) -> Result<Json, E> {
            Ok(Json::Float(v))
        }
        fn visit_str<E>(self, v: &str) -> Result<Json, E> {
            Ok(Json::String(v.to_string()))
        }
        fn visit_string<E>(self, v: String) -> Result<Json, E> {
            Ok(Json::String(v))
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
            let mut items = Vec::new();
            while let Some(item) = seq.next_element()? {
                items.push(item);
            }
            Ok(Json::Array(items))
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
            let mut entries = Vec::new();
            while let Some((key, value)) = map.next_entry::<String, Json>()? {
                entries.push((key, value));
            }
            Ok(Json::Object(entries))
        }
    }

    /// Keys of a thread object besides events (rt-app's parse_task_data/parse_sched_data).
    /// `period`/`deadline` are the legacy spellings of dl-period/dl-deadline.
    const THREAD_KEYS: [&str; 16] = [
        "instance",
        "delay",
        "loop",
        "cpus",
        "nodes_membind",
        "policy",
        "priority",
        "dl-runtime",
        "dl-period",
        "dl-deadline",
        "period",
        "deadline",
        "util_min",
        "util_max",
        "taskgroup",
        "phases",
    ];
    /// Keys of a phase object besides events.
    const PHASE_KEYS: [&str; 11] = [
        "loop",
        "cpus",
        "nodes_membind",
        "policy",
        "priority",
        "dl-runtime",
        "dl-period",
        "dl-deadline",
        "util_min",
        "util_max",
        "taskgroup",
    ];
    /// rt-app's events that rtlab's periodic model (run for C, then wait for the timer) has
    /// no place for: a job that sleeps, locks or waits is not a C/T/D task.
    const OTHER_EVENTS: [&str; 14] = [
        "lock", "unlock", "wait", "signal", "broad", "sync", "sleep", "suspend", "resume", "mem", "iorun", "yield",
        "barrier", "fork",
    ];

    pub(super) fn parse(text: &str) -> Result<TaskSet, TaskSetError> {
        // json5's message ends with the line and column.
        let root: Json =
            json5::from_str(text).map_err(|e| TaskSetError::of_file("file", format!("not valid rt-app JSON: {e}")))?;
        let Json::Object(top) = root else {
            return Err(TaskSetError::of_file("file", "an rt-app file is a JSON object"));
        };
        let mut tasks_object = None;
        let mut default_policy = "SCHED_OTHER".to_string();
        for (key, value) in &top {
            match key.as_str() {
                "tasks" => tasks_object = Some(value),
                "global" => {
                    if let Json::Object(global) = value {
                        if let Some((_, policy)) = global.iter().find(|(k, _)| k == "default_policy") {
                            let Json::String(p) = policy else {
                                return Err(TaskSetError::of_file(
                                    "global.default_policy",
                                    "must be a string such as \"SCHED_FIFO\"",
                                ));
                            };
                            default_policy = p.clone();
                        }
                    }
                }
                // Kept by rt-app for old files; resources are created as events use them.
                "resources" => {}
                other => {
                    return Err(TaskSetError::of_file(
                        other,
                        "unknown key (an rt-app file has \"tasks\", \"global\" and \"resources\")",
                    ))
                }
            }
        }
        let Some(tasks_object) = tasks_object else {
            return Err(TaskSetError::of_file("tasks", "missing: an rt-app file describes its threads in \"tasks\""));
        };
        let Json::Object(threads) = tasks_object else {
            return Err(TaskSetError::of_file("tasks", format!("must be an object, not {}", tasks_object.kind())));
        };
        let mut tasks = Vec::new();
        for (name, thread) in threads {
            tasks.extend(thread_tasks(name, thread, &default_policy)?);
        }
        Ok(TaskSet { name: None, format: TaskSetFormat::RtApp, tasks })
    }

    /// What one thread or phase object says.
    #[derive(Default)]
    struct Parsed {
        wcet_us: Option<u64>,
        period_us: Option<u64>,
        deadline_us: Option<u64>,
        policy: Option<String>,
        priority: Option<i64>,
        instances: Option<u64>,
    }

    fn thread_tasks(name: &str, thread: &Json, default_policy: &str) -> Result<Vec<Task>, TaskSetError> {
        let fail = |field: &str, reason: String| TaskSetError::of_task(name, field, reason);
        let Json::Object(entries) = thread else {
            return Err(fail("tasks", format!("a thread is an object, not {}", thread.kind())));
        };
        let mut thread_level = read_entries(name, entries, &THREAD_KEYS)?;
        if let Some((_, phases)) = entries.iter().find(|(k, _)| k == "phases") {
            let Json::Object(phases) = phases else {
                return Err(fail("phases", format!("must be an object, not {}", phases.kind())));
            };
            let [(_, phase)] = phases.as_slice() else {
                return Err(fail(
                    "phases",
                    format!(
                        "{} phases: rtlab reads a periodic task from one phase (C, T and D would differ between phases)",
                        phases.len()
                    ),
                ));
            };
            let Json::Object(phase_entries) = phase else {
                return Err(fail("phases", format!("a phase is an object, not {}", phase.kind())));
            };
            let phase_level = read_entries(name, phase_entries, &PHASE_KEYS)?;
            for (field, thread_value, phase_value) in [
                ("run", thread_level.wcet_us, phase_level.wcet_us),
                ("timer", thread_level.period_us, phase_level.period_us),
            ] {
                if thread_value.is_some() && phase_value.is_some() {
                    return Err(fail(field, "events both in the thread and in its phase".into()));
                }
            }
            // A phase's scheduling parameters apply from its start: they win.
            thread_level = Parsed {
                wcet_us: thread_level.wcet_us.or(phase_level.wcet_us),
                period_us: thread_level.period_us.or(phase_level.period_us),
                deadline_us: phase_level.deadline_us.or(thread_level.deadline_us),
                policy: phase_level.policy.or(thread_level.policy),
                priority: phase_level.priority.or(thread_level.priority),
                instances: thread_level.instances,
            };
        }
        let p = thread_level;
        let policy = p.policy.unwrap_or_else(|| default_policy.to_string());
        let priority = match policy.as_str() {
            "SCHED_FIFO" | "SCHED_RR" => {
                let given = p.priority.unwrap_or(i64::from(RT_APP_DEFAULT_PRIORITY));
                Some(
                    i32::try_from(given)
                        .map_err(|_| fail("priority", format!("{given} is not a SCHED_FIFO priority (1 to 99)")))?,
                )
            }
            // rt-app's priority is a nice value there: the analysis assigns the order.
            "SCHED_OTHER" | "SCHED_IDLE" => None,
            "SCHED_DEADLINE" => {
                return Err(fail(
                    "policy",
                    "SCHED_DEADLINE is not fixed-priority scheduling: rtlab analyses and runs SCHED_FIFO tasks".into(),
                ))
            }
            other => {
                return Err(fail(
                    "policy",
                    format!("unknown policy {other:?} (SCHED_OTHER, SCHED_IDLE, SCHED_RR, SCHED_FIFO)"),
                ))
            }
        };
        let wcet_us = p.wcet_us.ok_or_else(|| fail("run", "missing: no run or runtime event gives C".into()))?;
        let period_us = p.period_us.ok_or_else(|| {
            fail(
                "timer.period",
                "missing: rtlab needs a timer event whose period is T (a task that sleeps is not periodic)".into(),
            )
        })?;
        let ns =
            |field: &str, us: u64| us.checked_mul(1000).ok_or_else(|| fail(field, format!("{us} µs is too large")));
        let wcet_ns = ns("run", wcet_us)?;
        let period_ns = ns("timer.period", period_us)?;
        let deadline_ns = match p.deadline_us {
            Some(d) => ns("dl-deadline", d)?,
            None => period_ns,
        };
        let instances = p.instances.unwrap_or(1);
        let names: Vec<String> = if instances == 1 {
            vec![name.to_string()]
        } else {
            (0..instances).map(|i| format!("{name}-{i}")).collect()
        };
        Ok(names
            .into_iter()
            .map(|name| Task {
                name,
                wcet_ns,
                period_ns,
                deadline_ns,
                priority,
                blocking_ns: 0,
                jitter_ns: 0,
                above: Vec::new(),
            })
            .collect())
    }

    fn read_entries(task: &str, entries: &[(String, Json)], known: &[&str]) -> Result<Parsed, TaskSetError> {
        let fail = |field: &str, reason: String| TaskSetError::of_task(task, field, reason);
        let microseconds = |key: &str, value: &Json| -> Result<u64, TaskSetError> {
            match value {
                Json::Integer(n) if *n < 0 => Err(fail(key, format!("{n} is negative"))),
                Json::Integer(n) => u64::try_from(*n).map_err(|_| fail(key, format!("{n} is too large"))),
                other => Err(fail(key, format!("must be an integer number of µs, not {}", other.kind()))),
            }
        };
        let mut parsed = Parsed::default();
        let mut wcet_us: Option<u64> = None;
        for (key, value) in entries {
            let key = key.as_str();
            if known.contains(&key) {
                match key {
                    "policy" => match value {
                        Json::String(p) => parsed.policy = Some(p.clone()),
                        other => return Err(fail(key, format!("must be a string, not {}", other.kind()))),
                    },
                    "priority" => match value {
                        Json::Integer(p) => parsed.priority = Some(i64::try_from(*p).unwrap_or(i64::MAX)),
                        other => return Err(fail(key, format!("must be an integer, not {}", other.kind()))),
                    },
                    "dl-deadline" => parsed.deadline_us = Some(microseconds(key, value)?),
                    // The legacy spelling counts where dl-deadline is absent (as in rt-app).
                    "deadline" => {
                        let d = microseconds(key, value)?;
                        parsed.deadline_us = parsed.deadline_us.or(Some(d));
                    }
                    "instance" => parsed.instances = Some(microseconds(key, value)?),
                    _ => {}
                }
                continue;
            }
            // Events are recognised by prefix, as rt-app does ("run0", "timer1"); runtime
            // runs for a time, run for a calibrated amount of work: both are C.
            if key.starts_with("run") {
                let us = microseconds(key, value)?;
                wcet_us = Some(wcet_us.unwrap_or(0).checked_add(us).ok_or_else(|| fail(key, "C is too large".into()))?);
            } else if key.starts_with("timer") {
                if parsed.period_us.is_some() {
                    return Err(fail(key, "a second timer event: one period T per task".into()));
                }
                let Json::Object(timer) = value else {
                    return Err(fail(key, format!("must be an object with a period, not {}", value.kind())));
                };
                let Some((_, period)) = timer.iter().find(|(k, _)| k == "period") else {
                    return Err(fail("timer.period", "missing (the period T)".into()));
                };
                parsed.period_us = Some(microseconds("timer.period", period)?);
            } else if OTHER_EVENTS.iter().any(|event| key.starts_with(event)) {
                return Err(fail(
                    key,
                    "an rt-app event outside rtlab's periodic model (run for C, then wait for the timer): \
                     jobs that sleep, lock, wait or signal are not C/T/D tasks"
                        .into(),
                ));
            } else {
                return Err(fail(
                    key,
                    format!("unknown key (besides run/runtime and timer events: {})", known.join(", ")),
                ));
            }
        }
        parsed.wcet_us = wcet_us;
        Ok(parsed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_the_format_by_content() {
        assert_eq!(detect_format("[[task]]\nname = \"a\""), TaskSetFormat::Toml);
        assert_eq!(detect_format("  {\"tasks\": {}}"), TaskSetFormat::RtApp);
        assert_eq!(detect_format("// rt-app\n/* a\nb */ {\"tasks\": {}}"), TaskSetFormat::RtApp);
        assert_eq!(detect_format("# comment\nname = \"x\""), TaskSetFormat::Toml);
    }

    #[test]
    fn a_relative_spec_orders_by_above_then_rate_monotonic() {
        let mut slow = Task::periodic("slow", 1, 100);
        slow.above = vec!["fast".into()];
        let fast = Task::periodic("fast", 1, 10);
        let medium = Task::periodic("medium", 1, 50);
        let set = TaskSet { name: None, format: TaskSetFormat::Toml, tasks: vec![slow, fast, medium] };
        // slow must be above fast; medium is free and takes its rate-monotonic place first
        // among the ready tasks (50 < 100).
        assert_eq!(set.relative_order().unwrap(), vec![2, 0, 1]);
    }

    #[test]
    fn a_cycle_names_a_task_on_it_and_the_field() {
        let mut a = Task::periodic("a", 1, 10);
        let mut b = Task::periodic("b", 1, 20);
        let mut c = Task::periodic("c", 1, 30);
        let d = Task::periodic("d", 1, 40);
        a.above = vec!["b".into()];
        b.above = vec!["c".into()];
        c.above = vec!["a".into(), "d".into()];
        let set = TaskSet { name: None, format: TaskSetFormat::Toml, tasks: vec![a, b, c, d] };
        let e = set.relative_order().unwrap_err();
        assert_eq!(e.field, "above");
        assert!(e.reason.starts_with("a cyclic priority spec"), "{e}");
        let named = e.task.clone().unwrap();
        assert!(["a", "b", "c"].contains(&named.as_str()), "{e}");
        for t in ["a", "b", "c"] {
            assert!(e.reason.contains(t), "{e}");
        }
        assert!(!e.reason.contains('d'), "d is not on the cycle: {e}");
    }
}
