//! A paper's own judgement (`[[judgement]]` of a suite file) and what it gave on this
//! machine (suite.json `judgements`). Each suite ends in the conclusion its paper draws from
//! its numbers, computed from this machine's: Akamina's 500 µs requirement and its 600 µs
//! alternative, Dodiu's jitter as a share of the period and its hard/soft classification,
//! Regnier's predictability (standard deviation, maximum against mean), the Xenomai/RTAI
//! paper's comparative statements, Regnier's and Dankwardt's worst cases, Regnier's
//! Figure 9 count.

pub use crate::suite::JudgementResult;
use crate::suite::{check_id, ConditionNames, FigureSpec, Selector, SpecError, StatisticSpec};
use rtlab_analysis::requirement::main_metric_of;
use rtlab_analysis::units::parse_time_ns;
use serde::{Deserialize, Serialize};

/// The rules a judgement can follow.
pub const JUDGEMENT_KINDS: [&str; 9] = [
    "bounds",
    "jitter-share",
    "predictability",
    "share-below",
    "lower-by",
    "schedulability",
    "worst-case",
    "count-within",
    "lowest",
];

/// The criteria a `predictability` judgement can rank by, as the paper words them: a lower
/// mean, a lower standard deviation, a maximum closer to the mean.
pub const PREDICTABILITY_CRITERIA: [&str; 3] = ["mean", "sd", "max-over-mean"];

/// `predictability` without `criteria`: Regnier's words for L_act (a lower SD, a worst case
/// close to the average case).
pub const DEFAULT_PREDICTABILITY_CRITERIA: [&str; 2] = ["sd", "max-over-mean"];

/// One statistic of one condition's metric, as a judgement names it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CellRef {
    /// Required unless `figure` gives it.
    #[serde(default)]
    pub condition: String,
    /// Required unless `figure` gives it.
    #[serde(default)]
    pub metric: String,
    /// A figure of the suite (its id) whose one condition, metric and `where` the cell
    /// takes, so that a judgement of what a figure shows reads them from the figure alone
    /// (Regnier's Figure 9). Resolved when the file is read
    /// ([`JudgementSpec::resolve_figures`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub figure: Option<String>,
    /// Not used by `jitter-share` and `predictability`, which say what they compute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statistic: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario: Option<String>,
    #[serde(default, rename = "where", skip_serializing_if = "Option::is_none")]
    pub selector: Option<Selector>,
    /// How the findings name it ("t2 unloaded"); default "CONDITION METRIC".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// `schedulability` only: which platform figure the cell gives, "jitter" (the release
    /// jitter J charged to every task) or "switch" (the task-switch time CS); the worst cell
    /// of each role is charged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
}

/// A task of a `schedulability` judgement's task set: C and T (and D, default T) as
/// durations ("100us").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskSpec {
    pub name: String,
    pub c: String,
    pub t: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub d: Option<String>,
}

/// The paper's own platform figures, to run the same analysis with them beside this
/// machine's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PaperFigures {
    pub jitter: String,
    pub switch: String,
}

impl CellRef {
    pub fn shown(&self) -> String {
        self.label.clone().unwrap_or_else(|| format!("{} {}", self.condition, self.metric))
    }

    pub fn full_metric(&self) -> String {
        main_metric_of(self.metric.trim())
    }
}

/// A platform's published values, beside which `predictability` puts this machine's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReferenceRow {
    /// "Linux Xen, L_act with load".
    pub label: String,
    /// µs, as printed.
    pub mean: f64,
    pub sd: f64,
    pub max: f64,
}

/// `[[judgement]]`: the paper's conclusion and the rule that recomputes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JudgementSpec {
    pub id: String,
    pub title: String,
    /// Where the paper draws it ("Akamina 2004, section 8 and conclusion 4").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The paper's words.
    pub paper: String,
    /// One of [`JUDGEMENT_KINDS`]:
    /// - `bounds`: every cell below each of `bounds` in turn (a requirement and its
    ///   alternatives);
    /// - `jitter-share`: per task period of each cell's runs, the maximum of the metric as
    ///   a share of the period; the shortest period is "not satisfactory" at `percent` or
    ///   more (the share the paper rejects), the longer ones are judged against
    ///   `designer_percent` when given, else reported;
    /// - `predictability`: per cell, the mean, the standard deviation and the maximum
    ///   against the mean, ranked by the paper's `criteria` beside its platforms
    ///   (`reference`);
    /// - `share-below`: the cell's share of samples below a bound (its `below(X)`
    ///   statistic) against `percent`, the paper's "nearly all";
    /// - `lower-by`: the cell's value, lower by at least `percent` in one configuration
    ///   than in another (needs two suite runs, `rtlab compare`);
    /// - `worst-case`: the worst of the cells' statistic against two `bounds`: below the
    ///   first is the paper's better `classes[0]`, over the second its worse `classes[1]`;
    /// - `count-within`: the samples of each cell within `within` = [from, to), more than
    ///   `count` in every cell;
    /// - `lowest`: the first cell's statistic lower than every other cell's.
    pub kind: String,
    pub cells: Vec<CellRef>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bounds: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percent: Option<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reference: Vec<ReferenceRow>,
    /// How rtlab reads the paper where the paper gives no number (a threshold's choice).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reading: Option<String>,
    /// `schedulability`: the task set, analysed for one CPU under rate-monotonic
    /// priorities with the measured J and CS.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tasks: Vec<TaskSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paper_figures: Option<PaperFigures>,
    /// `predictability`: what it ranks by, of [`PREDICTABILITY_CRITERIA`], as the paper's
    /// words name them (default [`DEFAULT_PREDICTABILITY_CRITERIA`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub criteria: Vec<String>,
    /// `jitter-share`: a system designer's limit, % of the period, for the periods longer
    /// than the shortest (Dodiu: acceptable "as long as it will not exceed the values
    /// imposed by system designers"); without it their shares are reported, not judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub designer_percent: Option<f64>,
    /// `worst-case`: what the paper calls the side below the first bound and the side over
    /// the second ("Linux Prt and Linux Xen", "standard Linux").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub classes: Vec<String>,
    /// `count-within`: the interval [from, to) as two durations (["10us", "11us"]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub within: Vec<String>,
    /// `count-within`: the paper's count, which every cell must exceed ("over 100,000").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
}

impl JudgementSpec {
    /// The `schedulability` task set (checked by [`JudgementSpec::check`]).
    pub fn task_set(&self) -> Result<rtlab_analysis::taskset::TaskSet, String> {
        let mut tasks = Vec::new();
        for t in &self.tasks {
            let at = |what: &str, e: String| format!("tasks {:?}: {what}: {e}", t.name);
            let c = parse_time_ns(&t.c).map_err(|e| at("c", e.to_string()))?;
            let period = parse_time_ns(&t.t).map_err(|e| at("t", e.to_string()))?;
            let mut task = rtlab_analysis::taskset::Task::periodic(t.name.clone(), c, period);
            if let Some(d) = &t.d {
                task.deadline_ns = parse_time_ns(d).map_err(|e| at("d", e.to_string()))?;
            }
            tasks.push(task);
        }
        let set = rtlab_analysis::taskset::TaskSet {
            name: Some(self.id.clone()),
            format: rtlab_analysis::taskset::TaskSetFormat::Toml,
            tasks,
        };
        set.validate().map_err(|e| e.to_string())?;
        Ok(set)
    }

    /// The paper's figures in ns: (J, CS).
    pub fn paper_figures_ns(&self) -> Result<Option<(u64, u64)>, String> {
        let Some(p) = &self.paper_figures else { return Ok(None) };
        let j = parse_time_ns(&p.jitter).map_err(|e| format!("paper_figures.jitter: {e}"))?;
        let cs = parse_time_ns(&p.switch).map_err(|e| format!("paper_figures.switch: {e}"))?;
        Ok(Some((j, cs)))
    }

    /// The bounds in ns, in order.
    pub fn bounds_ns(&self) -> Result<Vec<u64>, String> {
        self.bounds.iter().map(|b| parse_time_ns(b).map_err(|e| format!("bounds: {b:?}: {e}"))).collect()
    }

    /// `count-within`'s interval in ns: [from, to).
    pub fn within_ns(&self) -> Result<(u64, u64), String> {
        let [from, to] = self.within.as_slice() else {
            return Err("within: give the interval as two durations, e.g. within = [\"10us\", \"11us\"]".into());
        };
        let parse = |t: &String| parse_time_ns(t).map_err(|e| format!("within: {t:?}: {e}"));
        let (a, b) = (parse(from)?, parse(to)?);
        if a >= b {
            return Err(format!("within: {from:?} is not below {to:?}"));
        }
        Ok((a, b))
    }

    /// `predictability`'s criteria: its own, or the default.
    pub fn predictability_criteria(&self) -> Vec<&str> {
        if self.criteria.is_empty() {
            DEFAULT_PREDICTABILITY_CRITERIA.to_vec()
        } else {
            self.criteria.iter().map(String::as_str).collect()
        }
    }

    /// Gives every cell that names a `figure` that figure's one condition, its metric and
    /// its `where`: what the figure shows is then said in one place, the figure. Call before
    /// [`JudgementSpec::check`].
    pub fn resolve_figures(&mut self, figures: &[FigureSpec]) -> Result<(), SpecError> {
        let at = format!("judgement {:?}", self.id);
        for (i, cell) in self.cells.iter_mut().enumerate() {
            let Some(id) = cell.figure.clone() else { continue };
            let fail = |reason: String| SpecError { at: at.clone(), reason: format!("cells {}: {reason}", i + 1) };
            if !cell.condition.is_empty() || !cell.metric.is_empty() || cell.selector.is_some() {
                return Err(fail(format!(
                    "figure {id:?} gives the cell its condition, metric and where: give figure, or condition and metric, not both"
                )));
            }
            let Some(figure) = figures.iter().find(|f| f.id == id) else {
                return Err(fail(format!("figure {id:?} is not a figure of this suite")));
            };
            let [condition] = figure.conditions.as_slice() else {
                return Err(fail(format!(
                    "figure {id:?} draws {} conditions: a cell takes a figure of one",
                    figure.conditions.len()
                )));
            };
            cell.condition = condition.clone();
            cell.metric = figure.metric.clone();
            cell.selector = figure.selector.clone();
        }
        Ok(())
    }

    /// The statistic of cell `i` (checked by [`JudgementSpec::check`]).
    pub fn statistic(&self, i: usize) -> Option<StatisticSpec> {
        self.cells.get(i)?.statistic.as_deref().and_then(|s| StatisticSpec::parse(s).ok())
    }

    /// Keys that belong to another kind are refused, so that a misplaced key is not silently
    /// ignored; `predictability`'s criteria and `jitter-share`'s designer limit are checked.
    fn check_kind_keys(&self) -> Result<(), String> {
        let kind = self.kind.as_str();
        let misplaced = |key: &str, owners: &str| Err(format!("{key} belongs to {owners} judgements"));
        if !self.criteria.is_empty() && kind != "predictability" {
            return misplaced("criteria", "predictability");
        }
        if self.designer_percent.is_some() && kind != "jitter-share" {
            return misplaced("designer_percent", "jitter-share");
        }
        if !self.classes.is_empty() && kind != "worst-case" {
            return misplaced("classes", "worst-case");
        }
        if (!self.within.is_empty() || self.count.is_some()) && kind != "count-within" {
            return misplaced("within and count", "count-within");
        }
        for (i, c) in self.criteria.iter().enumerate() {
            if !PREDICTABILITY_CRITERIA.contains(&c.as_str()) {
                return Err(format!("criteria: {c:?}: use {}", PREDICTABILITY_CRITERIA.join(", ")));
            }
            if self.criteria[..i].contains(c) {
                return Err(format!("criteria: {c:?} is given twice"));
            }
        }
        match self.designer_percent {
            Some(p) if !(p > 0.0 && p <= 100.0) => Err(format!("designer_percent {p}: give a share in (0, 100]")),
            _ => Ok(()),
        }
    }

    pub fn check(&self, names: &ConditionNames) -> Result<(), SpecError> {
        let at = format!("judgement {:?}", self.id);
        let fail = |reason: String| SpecError { at: at.clone(), reason };
        check_id(&self.id).map_err(&fail)?;
        if !JUDGEMENT_KINDS.contains(&self.kind.as_str()) {
            return Err(fail(format!("kind {:?}: use one of {}", self.kind, JUDGEMENT_KINDS.join(", "))));
        }
        if self.cells.is_empty() {
            return Err(fail("no cells: a judgement is computed from at least one".into()));
        }
        for (i, cell) in self.cells.iter().enumerate() {
            let cell_at = |reason: String| fail(format!("cells {}: {reason}", i + 1));
            if cell.condition.is_empty() || cell.metric.trim().is_empty() {
                return Err(cell_at("give condition and metric, or figure".into()));
            }
            let Some((_, scenarios)) = names.conditions.iter().find(|(n, _)| *n == cell.condition) else {
                return Err(cell_at(format!("condition {:?} is not a condition of this suite", cell.condition)));
            };
            match &cell.scenario {
                Some(s) if !scenarios.contains(s) => {
                    return Err(cell_at(format!("condition {:?} has no scenario {s:?}", cell.condition)))
                }
                None if scenarios.len() > 1 => {
                    return Err(cell_at(format!(
                        "condition {:?} measures several scenarios ({}): name one with `scenario`",
                        cell.condition,
                        scenarios.join(", ")
                    )))
                }
                _ => {}
            }
            let schedulability = self.kind == "schedulability";
            match (cell.role.as_deref(), schedulability) {
                (Some("jitter" | "switch"), true) | (None, false) => {}
                (_, true) => return Err(cell_at("a schedulability cell has role = \"jitter\" or \"switch\"".into())),
                (Some(_), false) => return Err(cell_at("role belongs to schedulability judgements".into())),
            }
            let needs_statistic = matches!(
                self.kind.as_str(),
                "bounds" | "share-below" | "lower-by" | "schedulability" | "worst-case" | "lowest"
            );
            match (&cell.statistic, needs_statistic) {
                (None, true) => return Err(cell_at(format!("a {} judgement needs a statistic", self.kind))),
                (Some(_), false) => {
                    return Err(cell_at(format!("a {} judgement computes its own statistics: no statistic", self.kind)))
                }
                (Some(s), true) => {
                    let statistic = StatisticSpec::parse(s).map_err(cell_at)?;
                    let below = matches!(statistic, StatisticSpec::Below(_));
                    if (self.kind == "share-below") != below {
                        return Err(cell_at(format!(
                            "statistic {s:?}: share-below takes below(TIME), the other kinds a time statistic"
                        )));
                    }
                    if statistic.is_range() || statistic == StatisticSpec::Count {
                        return Err(cell_at(format!("statistic {s:?}: a judgement compares one time")));
                    }
                }
                (None, false) => {}
            }
        }
        match self.kind.as_str() {
            "bounds" if self.bounds.is_empty() => {
                return Err(fail("bounds: give at least one, e.g. bounds = [\"500us\", \"600us\"]".into()))
            }
            "bounds" => {
                self.bounds_ns().map_err(&fail)?;
            }
            "schedulability" => {
                if self.tasks.is_empty() {
                    return Err(fail(
                        "tasks: give the task set, e.g. tasks = [{ name = \"t1\", c = \"50us\", t = \"300us\" }]"
                            .into(),
                    ));
                }
                self.task_set().map_err(&fail)?;
                self.paper_figures_ns().map_err(&fail)?;
                for role in ["jitter", "switch"] {
                    if !self.cells.iter().any(|c| c.role.as_deref() == Some(role)) {
                        return Err(fail(format!("no cell with role = {role:?}: the analysis charges both figures")));
                    }
                }
            }
            "jitter-share" | "share-below" | "lower-by" => match self.percent {
                Some(p) if p > 0.0 && p <= 100.0 => {}
                _ => return Err(fail(format!("a {} judgement needs percent in (0, 100]", self.kind))),
            },
            "worst-case" => {
                let bounds = self.bounds_ns().map_err(&fail)?;
                if bounds.len() != 2 || bounds[0] >= bounds[1] {
                    return Err(fail(
                        "bounds: a worst-case judgement takes two, the lower first, e.g. bounds = [\"20us\", \"100us\"]"
                            .into(),
                    ));
                }
                if self.classes.len() != 2 || self.classes.iter().any(|c| c.trim().is_empty()) {
                    return Err(fail(
                        "classes: name the side below the first bound and the side over the second, e.g. classes = [\"Linux Xen\", \"standard Linux\"]"
                            .into(),
                    ));
                }
            }
            "count-within" => {
                self.within_ns().map_err(&fail)?;
                if self.count.is_none() {
                    return Err(fail("count: give the count every cell must exceed, e.g. count = 100000".into()));
                }
            }
            "lowest" if self.cells.len() < 2 => {
                return Err(fail("a lowest judgement compares its first cell with at least one other".into()))
            }
            _ => {}
        }
        self.check_kind_keys().map_err(&fail)?;
        Ok(())
    }
}
