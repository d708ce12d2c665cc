//! Suite files (`suites/*.toml`, format in docs/suites/README.md): parsed, then checked as a
//! whole before anything runs, so that a mistake anywhere in the file is one error (exit 2).
//!
//! A condition's keys are those of an `rtlab run` experiment file: `[experiment]` and the
//! condition's own keys are merged as TOML tables. Checking them as `rtlab run --experiment`
//! does is the job of whoever runs the conditions (the binary's run plan), through
//! [`ExperimentCheck`]; this module owns the suite-level rules (names, `quick`/`long`,
//! `needs`, table and figure ids) and keeps each condition's estimated duration per mode.

use crate::SuiteError;
use rtlab_results::judgement::JudgementSpec;
use rtlab_results::suite::{check_id, ConditionNames, FigureSpec, SuiteInfo, TableSpec};
use serde::Deserialize;
use std::path::Path;

/// How a suite file's conditions are checked against `rtlab run`'s own rules: the binary
/// implements it with its experiment file reader and `RunPlan`; tests use a stub.
pub trait ExperimentCheck {
    /// Checks `condition`'s experiment keys in `mode` exactly as `rtlab run --experiment`
    /// would, and returns how long the condition takes (measuring and settle time, ns).
    /// Err: why, in one line starting with the condition and the mode's
    /// [`Mode::suffix`] where the plan is at fault ("condition \"x\" (quick): ...").
    fn estimate_ns(&self, condition: &Condition, mode: Mode) -> Result<u64, String>;
}

/// The suites shipped with rtlab: (name, file text). A new suite is a file in `suites/` and
/// one line here (tests/suite_cli.rs checks that every file of `suites/` is listed).
pub const BUILT_IN: &[(&str, &str)] = &[
    ("akamina-2004", include_str!("../../../suites/akamina-2004.toml")),
    ("regnier-2008", include_str!("../../../suites/regnier-2008.toml")),
    ("dodiu-2010", include_str!("../../../suites/dodiu-2010.toml")),
    ("dankwardt-2002", include_str!("../../../suites/dankwardt-2002.toml")),
    ("xenomai-rtai", include_str!("../../../suites/xenomai-rtai.toml")),
];

/// Capabilities a condition may need (`needs = [...]`), and why a run cannot have them.
/// `split_unavailable`: why this run cannot have the interrupt/activation split (the split's
/// own capability check: no root, tracefs unusable; [`SIMULATED_HAS_NO_SPLIT`]), None
/// when it can. None: not a capability; Some(None): available; Some(Some(why)): missing.
pub fn missing_capability(name: &str, split_unavailable: Option<&str>) -> Option<Option<String>> {
    match name {
        // Decomposing a wake-up into interrupt latency and scheduling part (`run --split`):
        // kernel tracing, which a simulated run does not have.
        "split" => Some(split_unavailable.map(|why| {
            format!("needs the interrupt/activation split (timer.irq, timer.sched), which traces the kernel: {why}")
        })),
        // A second station: given or not for the whole suite; a condition that needs it
        // and has none is not run ([`NEEDS_STATION`]).
        "station" => Some(None),
        _ => None,
    }
}

/// Why a simulated run has no interrupt/activation split.
pub const SIMULATED_HAS_NO_SPLIT: &str = "a simulated run has none";

/// Names accepted in `needs`.
pub const CAPABILITIES: [&str; 2] = ["split", "station"];

/// Why a condition that needs a second station (Regnier's experiment 2) is not run.
pub const NEEDS_STATION: &str = "needs a second station (--station HOST:PORT --key FILE; docs/station.md)";

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

impl Mode {
    /// "", " (quick)", " (long)": how errors name the mode.
    pub fn suffix(self) -> &'static str {
        match self {
            Mode::Full => "",
            Mode::Quick => " (quick)",
            Mode::Long => " (long)",
        }
    }

    fn index(self) -> usize {
        match self {
            Mode::Full => 0,
            Mode::Quick => 1,
            Mode::Long => 2,
        }
    }
}

/// A condition without `quick` must take at most this long in full.
pub const SHORT_NS: u64 = 60_000_000_000;

/// Keys of a condition that are the suite's, not an experiment file's.
const CONDITION_KEYS: [&str; 6] = ["name", "title", "quick", "long", "needs", "with_station"];
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
    #[serde(default, rename = "judgement")]
    judgements: Vec<JudgementSpec>,
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
    /// Keys that replace the condition's when the suite runs with a second station
    /// (`--station`), e.g. its loads sent from the station: `with_station = { load = ... }`.
    with_station: Option<toml::Table>,
    /// How long it takes in each mode (Full, Quick, Long), ns, as checked when parsed.
    estimates_ns: [u64; 3],
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
    /// The paper's own conclusions, recomputed after the tables.
    pub judgements: Vec<JudgementSpec>,
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

    /// The experiment keys in `mode` with a second station: the `with_station` keys over
    /// [`keys`](Self::keys); None when the condition has none.
    pub fn keys_with_station(&self, mode: Mode) -> Option<toml::Table> {
        let over = self.with_station.as_ref()?;
        let mut keys = self.keys(mode);
        merge_over(&mut keys, over.clone());
        Some(keys)
    }

    pub fn has_long(&self) -> bool {
        self.long.is_some()
    }

    /// Whether the condition measures with the interrupt/activation split (`needs = ["split"]`).
    pub fn needs_split(&self) -> bool {
        self.needs.iter().any(|n| n == "split")
    }

    /// How long the condition takes in `mode` (measuring and settle time), ns.
    pub fn estimate_ns(&self, mode: Mode) -> u64 {
        self.estimates_ns[mode.index()]
    }

    /// The load scenarios this condition measures, in order.
    pub fn scenario_names(&self) -> Vec<String> {
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
    pub fn find(name_or_path: &str, check: &dyn ExperimentCheck) -> Result<SuiteFile, SuiteError> {
        if let Some((name, text)) = BUILT_IN.iter().find(|(n, _)| *n == name_or_path) {
            return SuiteFile::parse(text, &format!("built-in {name}"), check);
        }
        let path = Path::new(name_or_path);
        if path.is_file() {
            let text =
                std::fs::read_to_string(path).map_err(|e| SuiteError::Invalid(format!("suite {name_or_path}: {e}")))?;
            return SuiteFile::parse(&text, name_or_path, check);
        }
        let names: Vec<&str> = BUILT_IN.iter().map(|(n, _)| *n).collect();
        Err(SuiteError::Invalid(format!(
            "suite {name_or_path:?}: no built-in suite of that name ({}) and no such file; `rtlab suite list` shows them",
            names.join(", ")
        )))
    }

    /// Parses and checks a suite file. Errors say "suite SOURCE: where: what" (exit 2).
    pub fn parse(text: &str, source: &str, check: &dyn ExperimentCheck) -> Result<SuiteFile, SuiteError> {
        let fail = |what: String| SuiteError::Invalid(format!("suite {source}: {what}"));
        let mut raw: RawSuite = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|span| text[..span.start.min(text.len())].matches('\n').count() + 1);
            let at = line.map(|l| format!("line {l}: ")).unwrap_or_default();
            fail(format!("{at}{}", e.message().trim()))
        })?;
        is_label(&raw.suite.name)
            .then_some(())
            .ok_or_else(|| fail(format!("[suite] name {:?}: use letters, digits, '-', '_' or '.'", raw.suite.name)))?;
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
        for j in &mut raw.judgements {
            j.resolve_figures(&raw.figures).map_err(|e| fail(e.to_string()))?;
            j.check(&names).map_err(|e| fail(e.to_string()))?;
            if ids.contains(&j.id.as_str()) {
                return Err(fail(format!("id {:?} is used twice", j.id)));
            }
            ids.push(&j.id);
        }
        // Every condition's experiment, in every mode it has, as `rtlab run` would check it.
        for c in &mut conditions {
            for mode in [Mode::Full, Mode::Quick, Mode::Long] {
                let estimate = check.estimate_ns(c, mode).map_err(fail)?;
                if mode == Mode::Full && c.quick.is_none() && estimate > SHORT_NS {
                    return Err(fail(format!(
                        "condition {:?} takes {} in full and has no `quick` keys: give it quick = {{ ... }}",
                        c.name,
                        format_duration(estimate)
                    )));
                }
                c.estimates_ns[mode.index()] = estimate;
            }
        }
        Ok(SuiteFile {
            info: raw.suite,
            source: source.to_string(),
            text: text.to_string(),
            conditions,
            tables: raw.tables,
            figures: raw.figures,
            judgements: raw.judgements,
            scenarios,
        })
    }

    pub fn names(&self) -> ConditionNames<'_> {
        ConditionNames { conditions: &self.scenarios }
    }

    pub fn has_long(&self) -> bool {
        self.conditions.iter().any(Condition::has_long)
    }

    /// How long the suite takes in `mode`, ns: every condition's measuring time and the
    /// loads' settle time (not the seconds rtlab takes to start and save).
    pub fn estimate(&self, mode: Mode) -> u64 {
        self.conditions.iter().fold(0u64, |total, c| total.saturating_add(c.estimate_ns(mode)))
    }
}

/// A suite's name: as `--label`, 1 to 64 letters, digits, '-', '_' or '.'.
fn is_label(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// A load's program missing on this machine (rtlab-load's `find_program` wording): the
/// condition's failure when it runs, not a mistake in the suite file.
pub fn is_missing_program(message: &str) -> bool {
    message.contains("not found in PATH") || message.contains("does not exist or is not executable")
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
    let with_station = overrides("with_station")?;
    let needs = match table.remove("needs") {
        None => Vec::new(),
        Some(toml::Value::Array(items)) => items
            .into_iter()
            .map(|v| match v {
                toml::Value::String(s) if missing_capability(&s, None).is_some() => Ok(s),
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
    Ok(Condition { name, title, needs, keys, quick, long, with_station, estimates_ns: [0; 3] })
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

    /// Checks nothing but the keys' shape, and says 10 ms per sample (a stub of the
    /// binary's run plan, which has its own tests of the real check).
    struct TenMsPerSample;

    impl ExperimentCheck for TenMsPerSample {
        fn estimate_ns(&self, condition: &Condition, mode: Mode) -> Result<u64, String> {
            let keys = condition.keys(mode);
            if let Some(bad) = keys.keys().find(|k| k.starts_with("bad")) {
                return Err(format!("condition {:?}{}: unknown key {bad}", condition.name, mode.suffix()));
            }
            match (keys.get("samples").and_then(|v| v.as_integer()), keys.get("duration").and_then(|v| v.as_str())) {
                (Some(n), _) => Ok(n as u64 * 10_000_000),
                (None, Some("2s")) => Ok(2_000_000_000),
                _ => Err(format!("condition {:?}: no samples or duration", condition.name)),
            }
        }
    }

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

    fn parse(text: &str) -> Result<SuiteFile, SuiteError> {
        SuiteFile::parse(text, "mini.toml", &TenMsPerSample)
    }

    #[test]
    fn quick_keys_replace_and_duration_drops_samples() {
        let file = parse(MINIMAL).unwrap();
        let c = &file.conditions[0];
        assert_eq!(c.keys(Mode::Full)["samples"].as_integer(), Some(100000));
        assert_eq!(c.keys(Mode::Quick)["samples"].as_integer(), Some(100));
        assert_eq!(file.estimate(Mode::Full), 1_000_000_000_000);
        assert_eq!(file.estimate(Mode::Quick), 1_000_000_000);
        let with_duration = MINIMAL.replace("{ samples = 100 }", "{ duration = \"2s\" }");
        let file = parse(&with_duration).unwrap();
        let quick = file.conditions[0].keys(Mode::Quick);
        assert!(!quick.contains_key("samples"));
        assert_eq!(file.estimate(Mode::Quick), 2_000_000_000);
    }

    #[test]
    fn mistakes_name_the_key() {
        let cases = [
            (MINIMAL.replace("samples = 100000", "samples = 100000\nlabel = \"x\""), "label"),
            (MINIMAL.replace("quick = { samples = 100 }", ""), "no `quick` keys"),
            (MINIMAL.replace("quick = { samples = 100 }", "quick = { bad_key = 100 }"), "bad_key"),
            (MINIMAL.replace("quick = { samples = 100 }", "quick = { name = \"x\" }"), "quick.name"),
            (MINIMAL.replace("name = \"unloaded\"", "name = \"un loaded\""), "name"),
            (MINIMAL.replace("samples = 100000", "samples = 100000\nneeds = [\"warp\"]"), "warp"),
            (MINIMAL.replace("[suite]", "[suite]\nauthor = \"x\""), "author"),
            (MINIMAL.replace("name = \"mini\"", "name = \"mi/ni\""), "[suite] name"),
            (format!("{MINIMAL}\n[[condition]]\nname = \"unloaded\"\nsamples = 1\n"), "given twice"),
        ];
        for (text, expected) in cases {
            let e = parse(&text).unwrap_err().to_string();
            assert!(e.starts_with("suite mini.toml: ") && e.contains(expected), "{expected}: {e}");
        }
    }

    #[test]
    fn the_check_sees_every_mode_and_its_error_is_the_files() {
        let e = parse(&MINIMAL.replace("quick = { samples = 100 }", "quick = { samples = 100, bad = 1 }"))
            .unwrap_err()
            .to_string();
        assert_eq!(e, "suite mini.toml: condition \"unloaded\" (quick): unknown key bad");
        assert!(matches!(parse("[suite]\nname = 1").unwrap_err(), SuiteError::Invalid(_)));
    }

    #[test]
    fn needs_are_capabilities() {
        let text = MINIMAL.replace("samples = 100000", "samples = 100000\nneeds = [\"split\"]");
        let file = parse(&text).unwrap();
        assert!(file.conditions[0].needs_split());
        assert!(!parse(MINIMAL).unwrap().conditions[0].needs_split());
        assert_eq!(missing_capability("split", None), Some(None));
        let simulated = missing_capability("split", Some(SIMULATED_HAS_NO_SPLIT)).flatten().unwrap();
        assert!(
            simulated.starts_with("needs the interrupt/activation split")
                && simulated.ends_with("a simulated run has none")
        );
        let unmounted = missing_capability("split", Some("tracefs is not mounted")).flatten().unwrap();
        assert!(unmounted.ends_with("traces the kernel: tracefs is not mounted"), "{unmounted}");
        assert_eq!(missing_capability("warp", None), None);
    }

    /// MINIMAL with a second condition, a histogram figure of one condition, and a
    /// count-within judgement whose cell is `cell`.
    fn with_figure_judgement(cell: &str) -> String {
        format!(
            r#"{MINIMAL}
            [[condition]]
            name = "loaded"
            samples = 10
            [[figure]]
            id = "fig-9"
            title = "Figure 9"
            kind = "histogram"
            metric = "timer.irq"
            conditions = ["loaded"]
            where = {{ cpu = 0 }}
            [[judgement]]
            id = "fig-9-count"
            title = "Over 100,000"
            paper = "over 100,000 events"
            kind = "count-within"
            within = ["10us", "11us"]
            count = 100000
            cells = [{cell}]
            "#
        )
    }

    #[test]
    fn a_judgement_cell_takes_its_condition_and_metric_from_a_figure() {
        let file = parse(&with_figure_judgement(r#"{ figure = "fig-9", label = "L_irq" }"#)).unwrap();
        let cell = &file.judgements[0].cells[0];
        assert_eq!((cell.condition.as_str(), cell.metric.as_str()), ("loaded", "timer.irq"));
        assert_eq!(cell.selector.as_ref().and_then(|s| s.cpu), Some(0));
        // The figure is the one place: moving it moves the judgement.
        let moved = with_figure_judgement(r#"{ figure = "fig-9" }"#)
            .replace(r#"conditions = ["loaded"]"#, r#"conditions = ["unloaded"]"#);
        assert_eq!(parse(&moved).unwrap().judgements[0].cells[0].condition, "unloaded");
        let cases = [
            (
                r#"{ figure = "fig-9", condition = "loaded" }"#,
                "judgement \"fig-9-count\": cells 1: figure \"fig-9\" gives the cell its condition, metric and where: give figure, or condition and metric, not both",
            ),
            (r#"{ figure = "fig-10" }"#, "cells 1: figure \"fig-10\" is not a figure of this suite"),
            (r#"{ label = "x" }"#, "cells 1: give condition and metric, or figure"),
        ];
        for (cell, expected) in cases {
            let e = parse(&with_figure_judgement(cell)).unwrap_err().to_string();
            assert!(e.starts_with("suite mini.toml: ") && e.contains(expected), "{expected}: {e}");
        }
        let two = with_figure_judgement(r#"{ figure = "fig-9" }"#)
            .replace(r#"conditions = ["loaded"]"#, r#"conditions = ["unloaded", "loaded"]"#);
        let e = parse(&two).unwrap_err().to_string();
        assert!(e.ends_with("figure \"fig-9\" draws 2 conditions: a cell takes a figure of one"), "{e}");
    }

    #[test]
    fn the_new_judgement_keys_are_checked() {
        let base = with_figure_judgement(r#"{ figure = "fig-9" }"#);
        let cases = [
            (base.replace("count = 100000", ""), "count: give the count every cell must exceed"),
            (base.replace(r#"["10us", "11us"]"#, r#"["11us", "10us"]"#), "within: \"11us\" is not below \"10us\""),
            (base.replace(r#"["10us", "11us"]"#, r#"["10us"]"#), "within: give the interval as two durations"),
            (
                base.replace("count = 100000", "count = 100000\ncriteria = [\"mean\"]"),
                "criteria belongs to predictability",
            ),
            (
                base.replace("count = 100000", "count = 100000\ndesigner_percent = 5"),
                "designer_percent belongs to jitter-share",
            ),
            (
                base.replace("kind = \"count-within\"", "kind = \"predictability\"")
                    .replace("within = [\"10us\", \"11us\"]", "criteria = [\"mean\", \"median\"]")
                    .replace("count = 100000", ""),
                "criteria: \"median\": use mean, sd, max-over-mean",
            ),
            (
                base.replace("kind = \"count-within\"", "kind = \"worst-case\"")
                    .replace(
                        "within = [\"10us\", \"11us\"]",
                        "bounds = [\"100us\", \"20us\"]\nclasses = [\"a\", \"b\"]",
                    )
                    .replace("count = 100000", "")
                    .replace(r#"{ figure = "fig-9" }"#, r#"{ figure = "fig-9", statistic = "max" }"#),
                "a worst-case judgement takes two, the lower first",
            ),
            (
                base.replace("kind = \"count-within\"", "kind = \"worst-case\"")
                    .replace("within = [\"10us\", \"11us\"]", "bounds = [\"20us\", \"100us\"]")
                    .replace("count = 100000", "")
                    .replace(r#"{ figure = "fig-9" }"#, r#"{ figure = "fig-9", statistic = "max" }"#),
                "classes: name the side below the first bound and the side over the second",
            ),
            (
                base.replace("kind = \"count-within\"", "kind = \"lowest\"")
                    .replace("within = [\"10us\", \"11us\"]", "")
                    .replace("count = 100000", "")
                    .replace(r#"{ figure = "fig-9" }"#, r#"{ figure = "fig-9", statistic = "stddev" }"#),
                "a lowest judgement compares its first cell with at least one other",
            ),
        ];
        for (text, expected) in cases {
            let e = parse(&text).unwrap_err().to_string();
            assert!(
                e.starts_with("suite mini.toml: judgement \"fig-9-count\": ") && e.contains(expected),
                "{expected}: {e}"
            );
        }
    }

    #[test]
    fn durations_read_as_people_say_them() {
        assert_eq!(format_duration(15_000_000_000_000), "4 h 10 min");
        assert_eq!(format_duration(200_000_000_000), "3 min 20 s");
        assert_eq!(format_duration(45_000_000_000), "45 s");
        assert_eq!(format_duration(7_200_000_000_000), "2 h");
    }

    #[test]
    fn missing_programs_are_told_apart_from_mistakes() {
        assert!(is_missing_program("exec: stress-ng not found in PATH"));
        assert!(!is_missing_program("unknown load \"x\""));
    }
}
