//! Suite files (`suites/*.toml`, format in docs/suites/README.md): parsed, then checked as a
//! whole before anything runs, so that a mistake anywhere in the file is one line and exit 2.
//!
//! A condition's keys are those of an `rtlab run` experiment file: `[experiment]` and the
//! condition's own keys are merged as TOML tables and read by [`ExperimentFile`], and
//! `RunPlan::from_args` checks the values, exactly as `rtlab run --experiment` does.

use crate::cli::RunArgs;
use crate::errors::usage;
use crate::experiment::RunPlan;
use crate::experiment_file::ExperimentFile;
use rtlab_results::suite::{check_id, ConditionNames, FigureSpec, SuiteInfo, TableSpec};
use serde::Deserialize;
use std::path::Path;

/// The suites shipped with rtlab: (name, file text). A new suite is a file in `suites/` and
/// one line here (tests/suite_cli.rs checks that every file of `suites/` is listed).
pub const BUILT_IN: &[(&str, &str)] = &[
    ("akamina-2004", include_str!("../../../../suites/akamina-2004.toml")),
    ("regnier-2008", include_str!("../../../../suites/regnier-2008.toml")),
    ("dodiu-2010", include_str!("../../../../suites/dodiu-2010.toml")),
    ("dankwardt-2002", include_str!("../../../../suites/dankwardt-2002.toml")),
    ("xenomai-rtai", include_str!("../../../../suites/xenomai-rtai.toml")),
];

/// Capabilities a condition may need (`needs = [...]`), and why a run cannot have them.
/// None: not a capability; Some(None): available; Some(Some(why)): missing.
pub fn missing_capability(name: &str, simulated: bool) -> Option<Option<String>> {
    match name {
        // Decomposing a wake-up into interrupt latency and scheduling part (`run --split`):
        // kernel tracing, which a simulated run does not have.
        "split" => Some(simulated.then(|| {
            "needs the interrupt/activation split (timer.irq, timer.sched), which traces the kernel: a simulated run has none".into()
        })),
        _ => None,
    }
}

/// Names accepted in `needs`.
pub const CAPABILITIES: [&str; 1] = ["split"];

/// Which durations a suite runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The paper's sample counts.
    Full,
    /// Every condition's `quick` keys: minutes, not the paper's sample counts.
    Quick,
    /// Every condition's `long` keys, where it has them (the paper's long variant).
    Long,
}

/// A condition without `quick` must take at most this long in full.
pub const SHORT_NS: u64 = 60_000_000_000;

/// Keys of a condition that are the suite's, not an experiment file's.
const CONDITION_KEYS: [&str; 5] = ["name", "title", "quick", "long", "needs"];
/// Experiment keys a suite sets itself.
const SUITE_SET_KEYS: [&str; 2] = ["label", "output"];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSuite {
    suite: SuiteInfo,
    #[serde(default)]
    experiment: toml::Table,
    #[serde(default, rename = "condition")]
    conditions: Vec<toml::Table>,
    #[serde(default, rename = "table")]
    tables: Vec<TableSpec>,
    #[serde(default, rename = "figure")]
    figures: Vec<FigureSpec>,
}

/// One condition: one `rtlab run`.
#[derive(Debug, Clone)]
pub struct Condition {
    pub name: String,
    pub title: String,
    pub needs: Vec<String>,
    /// `[experiment]` merged with the condition's own keys.
    keys: toml::Table,
    quick: Option<toml::Table>,
    long: Option<toml::Table>,
}

/// A parsed and checked suite file.
#[derive(Debug, Clone)]
pub struct SuiteFile {
    pub info: SuiteInfo,
    /// "built-in akamina-2004" or the path given.
    pub source: String,
    pub text: String,
    pub conditions: Vec<Condition>,
    pub tables: Vec<TableSpec>,
    pub figures: Vec<FigureSpec>,
    /// Per condition, its load scenarios (what table cells may name).
    pub scenarios: Vec<(String, Vec<String>)>,
}

impl Condition {
    /// The experiment keys in `mode`: `quick`/`long` keys replace the condition's. A
    /// replacing `duration` drops `samples` and the other way round (they exclude each other).
    pub fn keys(&self, mode: Mode) -> toml::Table {
        let mut keys = self.keys.clone();
        let over = match mode {
            Mode::Full => None,
            Mode::Quick => self.quick.as_ref(),
            Mode::Long => self.long.as_ref(),
        };
        if let Some(over) = over {
            merge_over(&mut keys, over.clone());
        }
        keys
    }

    pub fn has_long(&self) -> bool {
        self.long.is_some()
    }

    /// The `rtlab run` arguments of this condition in `mode`, as `rtlab run --experiment`
    /// would make them from a file holding these keys.
    pub fn run_args(&self, mode: Mode, base: RunArgs) -> anyhow::Result<RunArgs> {
        let at = format!("condition {:?}", self.name);
        let experiment: ExperimentFile = toml::Value::Table(self.keys(mode))
            .try_into()
            .map_err(|e: toml::de::Error| usage(format!("{at}: {}", e.message().trim())))?;
        experiment.check_presets().map_err(|e| usage(format!("{at}: {e}")))?;
        let simulated = base.simulate.is_some();
        let mut args = experiment.under(base);
        // The interrupt/activation split: measured with kernel tracing where there is a kernel.
        if self.needs.iter().any(|n| n == "split") && !simulated {
            args.split = true;
        }
        // A suite condition is one load scenario unless it says otherwise.
        if args.load.is_none() {
            args.load = Some("idle".into());
        }
        Ok(args)
    }

    /// The load scenarios this condition measures, in order.
    fn scenario_names(&self) -> Vec<String> {
        let list = match self.keys.get("load") {
            Some(toml::Value::String(s)) => s.clone(),
            Some(toml::Value::Array(items)) => items.iter().filter_map(|v| v.as_str()).collect::<Vec<_>>().join(","),
            _ => "idle".into(),
        };
        list.split(',').map(|s| s.trim().to_string()).collect()
    }
}

impl SuiteFile {
    /// A built-in suite by name, or a suite file by path.
    pub fn find(name_or_path: &str) -> anyhow::Result<SuiteFile> {
        if let Some((name, text)) = BUILT_IN.iter().find(|(n, _)| *n == name_or_path) {
            return SuiteFile::parse(text, &format!("built-in {name}"));
        }
        let path = Path::new(name_or_path);
        if path.is_file() {
            let text = std::fs::read_to_string(path).map_err(|e| usage(format!("suite {name_or_path}: {e}")))?;
            return SuiteFile::parse(&text, name_or_path);
        }
        let names: Vec<&str> = BUILT_IN.iter().map(|(n, _)| *n).collect();
        Err(usage(format!(
            "suite {name_or_path:?}: no built-in suite of that name ({}) and no such file; `rtlab suite list` shows them",
            names.join(", ")
        )))
    }

    /// Parses and checks a suite file. Errors say "suite SOURCE: where: what" (exit 2).
    pub fn parse(text: &str, source: &str) -> anyhow::Result<SuiteFile> {
        let fail = |what: String| usage(format!("suite {source}: {what}"));
        let raw: RawSuite = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|span| text[..span.start.min(text.len())].matches('\n').count() + 1);
            let at = line.map(|l| format!("line {l}: ")).unwrap_or_default();
            fail(format!("{at}{}", e.message().trim()))
        })?;
        crate::experiment::check_label(&raw.suite.name)
            .map_err(|_| fail(format!("[suite] name {:?}: use letters, digits, '-', '_' or '.'", raw.suite.name)))?;
        for key in SUITE_SET_KEYS {
            if raw.experiment.contains_key(key) {
                return Err(fail(format!("[experiment] {key}: a suite sets it (use --{key} of rtlab suite)")));
            }
        }
        if raw.conditions.is_empty() {
            return Err(fail("no [[condition]]: a suite runs at least one".into()));
        }
        let mut conditions: Vec<Condition> = Vec::new();
        for (i, table) in raw.conditions.into_iter().enumerate() {
            let condition = condition_of(i, table, &raw.experiment).map_err(&fail)?;
            if conditions.iter().any(|c| c.name == condition.name) {
                return Err(fail(format!("condition {:?} is given twice", condition.name)));
            }
            conditions.push(condition);
        }
        let scenarios: Vec<(String, Vec<String>)> =
            conditions.iter().map(|c| (c.name.clone(), c.scenario_names())).collect();
        let names = ConditionNames { conditions: &scenarios };
        let mut ids: Vec<&str> = Vec::new();
        for t in &raw.tables {
            t.check(&names).map_err(|e| fail(e.to_string()))?;
            if ids.contains(&t.id.as_str()) {
                return Err(fail(format!("id {:?} is used twice", t.id)));
            }
            ids.push(&t.id);
        }
        for f in &raw.figures {
            f.check(&names).map_err(|e| fail(e.to_string()))?;
            if ids.contains(&f.id.as_str()) {
                return Err(fail(format!("id {:?} is used twice", f.id)));
            }
            ids.push(&f.id);
        }
        let file = SuiteFile {
            info: raw.suite,
            source: source.to_string(),
            text: text.to_string(),
            conditions,
            tables: raw.tables,
            figures: raw.figures,
            scenarios,
        };
        // Every condition's experiment, in every mode it has, as `rtlab run` would check it.
        for c in &file.conditions {
            for mode in [Mode::Full, Mode::Quick, Mode::Long] {
                let estimate = file.estimate_condition(c, mode).map_err(|e| fail(crate::errors::one_line(&e)))?;
                if mode == Mode::Full && c.quick.is_none() && estimate > SHORT_NS {
                    return Err(fail(format!(
                        "condition {:?} takes {} in full and has no `quick` keys: give it quick = {{ ... }}",
                        c.name,
                        format_duration(estimate)
                    )));
                }
            }
        }
        Ok(file)
    }

    pub fn names(&self) -> ConditionNames<'_> {
        ConditionNames { conditions: &self.scenarios }
    }

    pub fn has_long(&self) -> bool {
        self.conditions.iter().any(Condition::has_long)
    }

    /// How long the suite takes in `mode`, ns: every condition's measuring time and the
    /// loads' settle time (not the seconds rtlab takes to start and save).
    pub fn estimate(&self, mode: Mode) -> anyhow::Result<u64> {
        let mut total = 0u64;
        for c in &self.conditions {
            total = total.saturating_add(self.estimate_condition(c, mode)?);
        }
        Ok(total)
    }

    /// Checks the condition's experiment in `mode` with `RunPlan::from_args` (a usage error
    /// there is the suite file's) and estimates how long it takes. Loads are not built here
    /// (a missing program is the condition's failure when it runs, not the file's).
    fn estimate_condition(&self, c: &Condition, mode: Mode) -> anyhow::Result<u64> {
        let args = c.run_args(mode, RunArgs::default())?;
        let scenario_list = args.load.clone().unwrap_or_else(|| "idle".into());
        let scenarios: Vec<&str> = scenario_list.split(',').map(str::trim).collect();
        for s in &scenarios {
            let spec = args.presets.get(*s).map(String::as_str).unwrap_or(s);
            if let Err(e) = rtlab_load::scenario(spec) {
                if e.is_usage_error() && !is_missing_program(&e.to_string()) {
                    return Err(usage(format!("condition {:?}: load {s:?}: {e}", c.name)));
                }
            }
        }
        // One scenario's time, measured on "idle" so that no load is built.
        let one = RunArgs { load: Some("idle".into()), ..args.clone() };
        let online = rtlab_sys::sched::online_cpus().unwrap_or_else(|_| vec![0]);
        let plan = RunPlan::from_args(&one, &online, "suite", chrono::Local::now())
            .map_err(|e| e.context(format!("condition {:?}{}", c.name, mode_suffix(mode))))?;
        let per_scenario: u64 = plan.probes.iter().map(|&p| crate::probe_build::expected_ns(&plan, p)).sum();
        let loaded =
            scenarios.iter().filter(|s| args.presets.get(**s).map(String::as_str).unwrap_or(s) != "idle").count();
        Ok(per_scenario.saturating_mul(scenarios.len() as u64).saturating_add(plan.settle_ns * loaded as u64))
    }
}

/// A load's program missing on this machine (rtlab-load's `find_program` wording): the
/// condition's failure when it runs, not a mistake in the suite file.
pub fn is_missing_program(message: &str) -> bool {
    message.contains("not found in PATH") || message.contains("does not exist or is not executable")
}

fn mode_suffix(mode: Mode) -> &'static str {
    match mode {
        Mode::Full => "",
        Mode::Quick => " (quick)",
        Mode::Long => " (long)",
    }
}

/// Reads one `[[condition]]`: its own keys, then the experiment keys merged over
/// `[experiment]`.
fn condition_of(index: usize, mut table: toml::Table, experiment: &toml::Table) -> Result<Condition, String> {
    let at = format!("condition {}", index + 1);
    let text = |table: &mut toml::Table, key: &str| -> Result<Option<String>, String> {
        match table.remove(key) {
            None => Ok(None),
            Some(toml::Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(format!("{at}: {key} must be a string")),
        }
    };
    let name = text(&mut table, "name")?.ok_or_else(|| format!("{at}: no name"))?;
    check_id(&name).map_err(|e| format!("{at}: name: {e}"))?;
    let at = format!("condition {name:?}");
    let title = text(&mut table, "title")?.unwrap_or_else(|| name.clone());
    let mut overrides = |key: &str| -> Result<Option<toml::Table>, String> {
        match table.remove(key) {
            None => Ok(None),
            Some(toml::Value::Table(t)) => {
                for forbidden in CONDITION_KEYS.iter().chain(SUITE_SET_KEYS.iter()) {
                    if t.contains_key(*forbidden) {
                        return Err(format!("{at}: {key}.{forbidden}: not allowed in {key}"));
                    }
                }
                Ok(Some(t))
            }
            Some(_) => {
                Err(format!("{at}: {key} must be a table of experiment keys, e.g. {key} = {{ samples = 6000 }}"))
            }
        }
    };
    let quick = overrides("quick")?;
    let long = overrides("long")?;
    let needs = match table.remove("needs") {
        None => Vec::new(),
        Some(toml::Value::Array(items)) => items
            .into_iter()
            .map(|v| match v {
                toml::Value::String(s) if missing_capability(&s, false).is_some() => Ok(s),
                other => Err(format!("{at}: needs: {other} is not a capability (known: {})", CAPABILITIES.join(", "))),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(format!("{at}: needs must be a list, e.g. needs = [\"split\"]")),
    };
    debug_assert!(CONDITION_KEYS.iter().all(|k| !table.contains_key(*k)));
    for key in SUITE_SET_KEYS {
        if table.contains_key(key) {
            return Err(format!("{at}: {key}: a suite sets it (use --{key} of rtlab suite)"));
        }
    }
    let mut keys = experiment.clone();
    merge_over(&mut keys, table);
    Ok(Condition { name, title, needs, keys, quick, long })
}

/// `over`'s experiment keys replace those of `keys`; a `duration` there drops `samples` and
/// the other way round (they exclude each other).
fn merge_over(keys: &mut toml::Table, over: toml::Table) {
    if over.contains_key("duration") {
        keys.remove("samples");
    }
    if over.contains_key("samples") {
        keys.remove("duration");
    }
    keys.extend(over);
}

/// "4 h 10 min", "3 min 20 s", "45 s".
pub fn format_duration(ns: u64) -> String {
    let s = (ns as f64 / 1e9).round() as u64;
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 if s.is_multiple_of(60) => format!("{} min", s / 60),
        60..=3599 => format!("{} min {} s", s / 60, s % 60),
        _ if (s % 3600) / 60 == 0 => format!("{} h", s / 3600),
        _ => format!("{} h {} min", s / 3600, (s % 3600) / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"
        [suite]
        name = "mini"
        title = "Mini"
        [experiment]
        probe = "timer"
        interval = "10ms"
        [[condition]]
        name = "unloaded"
        samples = 100000
        quick = { samples = 100 }
    "#;

    #[test]
    fn quick_keys_replace_and_duration_drops_samples() {
        let file = SuiteFile::parse(MINIMAL, "mini.toml").unwrap();
        let c = &file.conditions[0];
        assert_eq!(c.keys(Mode::Full)["samples"].as_integer(), Some(100000));
        assert_eq!(c.keys(Mode::Quick)["samples"].as_integer(), Some(100));
        assert_eq!(file.estimate(Mode::Full).unwrap(), 1_000_000_000_000);
        assert_eq!(file.estimate(Mode::Quick).unwrap(), 1_000_000_000);
        let with_duration = MINIMAL.replace("{ samples = 100 }", "{ duration = \"2s\" }");
        let file = SuiteFile::parse(&with_duration, "mini.toml").unwrap();
        let quick = file.conditions[0].keys(Mode::Quick);
        assert!(!quick.contains_key("samples"));
        assert_eq!(file.estimate(Mode::Quick).unwrap(), 2_000_000_000);
    }

    #[test]
    fn mistakes_name_the_key() {
        let cases = [
            (MINIMAL.replace("interval = \"10ms\"", "intervall = \"10ms\""), "intervall"),
            (MINIMAL.replace("samples = 100000", "samples = 100000\nlabel = \"x\""), "label"),
            (MINIMAL.replace("quick = { samples = 100 }", ""), "no `quick` keys"),
            (MINIMAL.replace("quick = { samples = 100 }", "quick = { sample = 100 }"), "sample"),
            (MINIMAL.replace("interval = \"10ms\"", "interval = \"fast\""), "--interval"),
            (MINIMAL.replace("name = \"unloaded\"", "name = \"un loaded\""), "name"),
            (MINIMAL.replace("samples = 100000", "samples = 100000\nneeds = [\"warp\"]"), "warp"),
            (MINIMAL.replace("[suite]", "[suite]\nauthor = \"x\""), "author"),
            (MINIMAL.replace("samples = 100000", "samples = 100000\nload = \"nosuchload\""), "nosuchload"),
        ];
        for (text, expected) in cases {
            let e = crate::errors::one_line(&SuiteFile::parse(&text, "mini.toml").unwrap_err());
            assert!(e.starts_with("suite mini.toml: ") && e.contains(expected), "{expected}: {e}");
        }
    }

    #[test]
    fn every_probe_is_checked_as_rtlab_run_checks_it() {
        // Not on the simulated clock (which drives the timer and jitter probes only).
        for probe in ["net", "sleep", "switch", "sweep", "ipc:futex", "jitter"] {
            let text = MINIMAL.replace("probe = \"timer\"", &format!("probe = \"{probe}\""));
            SuiteFile::parse(&text, "mini.toml").unwrap_or_else(|e| panic!("{probe}: {e}"));
        }
    }

    #[test]
    fn a_condition_that_needs_the_split_runs_with_split_except_simulated() {
        let text = MINIMAL.replace("samples = 100000", "samples = 100000\nneeds = [\"split\"]");
        let file = SuiteFile::parse(&text, "mini.toml").unwrap();
        let c = &file.conditions[0];
        assert!(c.run_args(Mode::Quick, RunArgs::default()).unwrap().split);
        let simulated = RunArgs { simulate: Some(1), ..RunArgs::default() };
        assert!(!c.run_args(Mode::Quick, simulated).unwrap().split);
        assert_eq!(missing_capability("split", false), Some(None));
        assert!(missing_capability("split", true).is_some_and(|why| why.is_some()));
        assert_eq!(missing_capability("warp", false), None);
        let plain = SuiteFile::parse(MINIMAL, "mini.toml").unwrap();
        assert!(!plain.conditions[0].run_args(Mode::Quick, RunArgs::default()).unwrap().split);
    }

    #[test]
    fn durations_read_as_people_say_them() {
        assert_eq!(format_duration(15_000_000_000_000), "4 h 10 min");
        assert_eq!(format_duration(200_000_000_000), "3 min 20 s");
        assert_eq!(format_duration(45_000_000_000), "45 s");
        assert_eq!(format_duration(7_200_000_000_000), "2 h");
    }

    #[test]
    fn built_in_suites_parse() {
        for (name, text) in BUILT_IN {
            let file = SuiteFile::parse(text, name).unwrap();
            assert_eq!(&file.info.name, name);
        }
    }
}
