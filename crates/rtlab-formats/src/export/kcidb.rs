//! `--format kcidb`: a run or a suite as a KCIDB submission (schema v5.3 of kcidb-io), the
//! results database of KernelCI (docs/kcidb.md).
//!
//! One checkout (the kernel release) and one build (that kernel as booted on the host) carry
//! the tests. Every statistic is its own test with status DONE and `number` in seconds
//! (`prefix: "metric"`): p50, p99, p99.9 and max of each metric in each scenario, all CPUs
//! together and per CPU, plus the pWCET of the scenario's main metric where the caller has
//! one. Each check of the verdict is a PASS or FAIL test; one that rtlab could not judge is
//! ERROR, a suite condition that never ran SKIP, the reason in `misc`. The schema forbids
//! nulls and unknown fields: absent values are left out, never null.

use crate::FormatError;
use rtlab_analysis::requirement::format_bound;
use rtlab_analysis::Summary;
use rtlab_results::run::{detail_f64, detail_i64, Measurement, RunResult, Setting};
use rtlab_results::set::{ReportExporter, ReportSet};
use rtlab_results::suite::{ConditionRecord, ConditionStatus, SuiteRecord};
use rtlab_results::verdict::Check;
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;

/// The schema version written (kcidb-io's latest v5).
pub const SCHEMA_VERSION: (u64, u64) = (5, 3);

/// The origin when none is given.
pub const DEFAULT_ORIGIN: &str = "rtlab";

/// The statistics of every metric: (summary name, path segment).
pub const STATISTICS: [(&str, &str); 4] = [("p50", "p50"), ("p99", "p99"), ("p99.9", "p99_9"), ("max", "max")];

/// `--origin`, `--checkout-id`, `--build-id`, `--test-id-prefix` and `--tests-only`; None
/// takes the default derived from the run ([`KcidbReport`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KcidbIds {
    pub origin: Option<String>,
    pub checkout_id: Option<String>,
    pub build_id: Option<String>,
    pub test_id_prefix: Option<String>,
    /// Leave out the checkout and the build: the tests join ones the CI submitted itself.
    pub tests_only: bool,
}

/// A pWCET the caller computed: the tail analysis lives above this crate (rtlab-report).
#[derive(Debug, Clone, PartialEq)]
pub struct PwcetFigure {
    pub run_label: String,
    pub scenario: String,
    pub metric: String,
    /// Per activation.
    pub probability: f64,
    /// The estimate, or why it is not quoted (not defensible, not estimated).
    pub estimate: Result<PwcetValue, String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PwcetValue {
    pub value_ns: f64,
    pub ci_low_ns: f64,
    pub ci_high_ns: f64,
    /// Of the interval (0.95).
    pub confidence: f64,
    /// "GPD (MLE) fit of 1,000 samples above 14.1 µs".
    pub fit: String,
}

/// The KCIDB submission of the runs of a set (one run, or the runs of a suite's
/// conditions when `suite` is given).
///
/// Default IDs, from the first run: checkout `<origin>:<kernel release>`; build
/// `<origin>:<kernel release>:<host name>`; each test `<origin>:<host name>:<start>:<path>`
/// with the run's (or suite's) start in UTC as `YYYYmmddTHHMMSSZ`.
#[derive(Debug, Clone, Default)]
pub struct KcidbReport {
    pub ids: KcidbIds,
    pub pwcet: Vec<PwcetFigure>,
    pub suite: Option<SuiteRecord>,
}

impl ReportExporter for KcidbReport {
    type Error = FormatError;

    fn render(&self, set: &ReportSet) -> Result<String, FormatError> {
        let value = self.submission(set)?;
        let mut text = serde_json::to_string_pretty(&value).map_err(|e| FormatError::Encode(e.to_string()))?;
        text.push('\n');
        Ok(text)
    }
}

fn usage(flag: &str, reason: String) -> FormatError {
    FormatError::Usage { what: flag.to_string(), reason }
}

impl KcidbReport {
    /// The submission as JSON.
    pub fn submission(&self, set: &ReportSet) -> Result<Value, FormatError> {
        let origin = self.ids.origin.clone().unwrap_or_else(|| DEFAULT_ORIGIN.to_string());
        if !is_origin(&origin) {
            return Err(usage(
                "--origin",
                format!("{origin:?} is not a KCIDB origin: lowercase letters, digits and _ only"),
            ));
        }
        let Some(first) = set.runs.first().map(|r| &r.run) else {
            return Err(usage(
                "--format kcidb",
                "there is no run to export (the suite has no condition with a run)".into(),
            ));
        };
        let kernel = non_empty(&first.host.kernel_release, "unknown-kernel");
        let host = non_empty(&first.host.hostname, "unknown-host");
        let foreign = if self.ids.tests_only { Foreign::Keep } else { Foreign::Refuse };
        let checkout_id = match &self.ids.checkout_id {
            Some(id) => with_origin("--checkout-id", id, &origin, foreign)?,
            None => format!("{origin}:{kernel}"),
        };
        let build_id = match &self.ids.build_id {
            Some(id) => with_origin("--build-id", id, &origin, foreign)?,
            None => format!("{origin}:{kernel}:{host}"),
        };
        let start = match &self.suite {
            Some(suite) => compact_time(&suite.start_time),
            None => compact_time(&first.start_time),
        };
        let prefix = match &self.ids.test_id_prefix {
            Some(p) => with_origin("--test-id-prefix", p, &origin, Foreign::Prefix)?,
            None => format!("{origin}:{host}:{}:", start.unwrap_or_else(|| first.label.clone())),
        };
        let ctx = Context { origin: &origin, build_id: &build_id, prefix: &prefix };

        let mut tests = Vec::new();
        for sourced in &set.runs {
            let run = &sourced.run;
            let base = self.base_path(run);
            tests.extend(measurement_tests(&ctx, run, &base));
            tests.extend(self.pwcet_tests(&ctx, run, &base));
        }
        if let Some(verdict) = set.effective_verdict() {
            for check in &verdict.checks {
                let run = set.runs.iter().map(|r| &r.run).find(|r| r.label == check.run_label);
                let base = match run {
                    Some(run) => self.base_path(run),
                    None => "rtlab".to_string(),
                };
                tests.push(check_test(&ctx, run, &base, check));
            }
        }
        if let Some(suite) = &self.suite {
            tests.extend(suite_tests(&ctx, suite, set));
        }
        let mut seen = BTreeSet::new();
        for t in &tests {
            let id = t["id"].as_str().unwrap_or_default();
            if !seen.insert(id.to_string()) {
                return Err(usage(
                    "--format kcidb",
                    format!("two tests would have the ID {id:?}: scenario or condition names differ only in characters a KCIDB path cannot hold"),
                ));
            }
        }

        let mut out = Map::new();
        out.insert("version".into(), json!({"major": SCHEMA_VERSION.0, "minor": SCHEMA_VERSION.1}));
        if !self.ids.tests_only {
            out.insert("checkouts".into(), json!([checkout(&origin, &checkout_id, first)]));
            out.insert("builds".into(), json!([build(&origin, &build_id, &checkout_id, first)]));
        }
        out.insert("tests".into(), Value::Array(tests));
        Ok(Value::Object(out))
    }

    /// `rtlab` for a run; `rtlab.<suite>.<condition>` for a suite's condition.
    fn base_path(&self, run: &RunResult) -> String {
        match &self.suite {
            Some(suite) => match suite.conditions.iter().find(|c| c.run_label == run.label) {
                Some(c) => format!("rtlab.{}.{}", segment(&suite.suite.name), segment(&c.name)),
                None => format!("rtlab.{}.{}", segment(&suite.suite.name), segment(&run.label)),
            },
            None => "rtlab".to_string(),
        }
    }

    fn pwcet_tests(&self, ctx: &Context, run: &RunResult, base: &str) -> Vec<Value> {
        let mut out = Vec::new();
        for p in self.pwcet.iter().filter(|p| p.run_label == run.label) {
            let Some(scenario) = run.scenario(&p.scenario) else { continue };
            let path = format!(
                "{base}.{}.{}.pwcet_{}",
                metric_path(&p.metric),
                segment(&p.scenario),
                probability(p.probability)
            );
            let mut misc = run_misc(run, &p.scenario, &p.metric);
            misc.insert("statistic".into(), json!(format!("pwcet({})", probability(p.probability))));
            misc.insert("probability".into(), json!(p.probability));
            let mut t = test(ctx, run, &path, scenario.duration_s);
            match &p.estimate {
                Ok(v) if v.value_ns.is_finite() => {
                    t.insert("status".into(), json!("DONE"));
                    t.insert("number".into(), seconds_f(v.value_ns));
                    misc.insert("value_ns".into(), json!(v.value_ns.round() as i64));
                    if v.ci_low_ns.is_finite() && v.ci_high_ns.is_finite() {
                        misc.insert("ci_low_s".into(), json!(v.ci_low_ns / 1e9));
                        misc.insert("ci_high_s".into(), json!(v.ci_high_ns / 1e9));
                        misc.insert("confidence".into(), json!(v.confidence));
                    }
                    misc.insert("fit".into(), json!(v.fit));
                    t.insert(
                        "comment".into(),
                        json!(format!(
                            "{} pwcet({}) under {}: {:.1} µs",
                            p.metric,
                            probability(p.probability),
                            p.scenario,
                            v.value_ns / 1e3
                        )),
                    );
                }
                Ok(_) => {
                    t.insert("status".into(), json!("SKIP"));
                    misc.insert("reason".into(), json!("the pWCET estimate is not a finite number"));
                }
                Err(why) => {
                    // Not a measurement of the kernel: the run was too short or its tail not
                    // fit for extreme value theory. SKIP does not mark the build.
                    t.insert("status".into(), json!("SKIP"));
                    misc.insert("reason".into(), json!(why));
                }
            }
            t.insert("misc".into(), Value::Object(misc));
            out.push(Value::Object(t));
        }
        out
    }
}

struct Context<'a> {
    origin: &'a str,
    build_id: &'a str,
    prefix: &'a str,
}

/// The fields every test has: ID, origin, build, path, start, duration, environment.
fn test(ctx: &Context, run: &RunResult, path: &str, duration_s: f64) -> Map<String, Value> {
    let mut t = Map::new();
    t.insert("id".into(), json!(format!("{}{path}", ctx.prefix)));
    t.insert("origin".into(), json!(ctx.origin));
    t.insert("build_id".into(), json!(ctx.build_id));
    t.insert("path".into(), json!(path));
    if let Some(start) = rfc3339(&run.start_time) {
        t.insert("start_time".into(), json!(start));
    }
    if duration_s.is_finite() && duration_s >= 0.0 {
        t.insert("duration".into(), json!(duration_s));
    }
    t.insert("environment".into(), environment(run));
    t
}

fn environment(run: &RunResult) -> Value {
    let h = &run.host;
    let mut misc = Map::new();
    misc.insert("host".into(), json!(h.hostname));
    misc.insert("kernel_release".into(), json!(h.kernel_release));
    misc.insert("kernel_version".into(), json!(h.kernel_version));
    misc.insert("preemption".into(), json!(preemption(run)));
    misc.insert("machine".into(), json!(h.machine));
    misc.insert("cpu_model".into(), json!(h.cpu_model));
    misc.insert("online_cpus".into(), json!(h.online_cpus.len()));
    if h.virtualization.guest {
        misc.insert(
            "virtualization".into(),
            json!(h.virtualization.hypervisor.clone().unwrap_or_else(|| "guest".into())),
        );
    }
    misc.insert("real_time_results".into(), json!(run.realtime.real_time_results));
    if run.simulated {
        misc.insert("simulated".into(), json!(true));
    }
    let commit = run.tool.commit.as_ref().map(|c| format!(" ({c})")).unwrap_or_default();
    misc.insert("rtlab_version".into(), json!(format!("{}{commit}", run.tool.version)));
    json!({
        "comment": format!("{} ({}), kernel {}", h.hostname, h.cpu_model, h.kernel_release),
        "misc": misc,
    })
}

fn preemption(run: &RunResult) -> String {
    let model = serde_json::to_value(run.host.preemption_model).ok();
    model.as_ref().and_then(|m| m.as_str()).unwrap_or("unknown").to_string()
}

/// What every test of a run's scenario and metric says about where it came from.
fn run_misc(run: &RunResult, scenario: &str, metric: &str) -> Map<String, Value> {
    let mut misc = Map::new();
    misc.insert("run".into(), json!(run.label));
    misc.insert("scenario".into(), json!(scenario));
    misc.insert("metric".into(), json!(metric));
    if run.interrupted {
        misc.insert("interrupted".into(), json!(true));
    }
    if let Some(why) = run.scenario(scenario).and_then(|s| s.load_failure.as_ref()) {
        misc.insert("load_failure".into(), json!(why));
    }
    // "Long enough?" (docs/stop-rule.md), on the tests of the metric it judged.
    if let Some(c) = run.scenario(scenario).and_then(|s| s.convergence.as_ref()).filter(|c| c.metric == metric) {
        let mut long = Map::new();
        long.insert("converged".into(), json!(c.converged));
        long.insert("statistic".into(), json!(c.statistic));
        long.insert("target".into(), json!(c.target));
        long.insert("mode".into(), json!(c.mode));
        long.insert("elapsed_s".into(), json!(c.elapsed_s));
        // No nulls in KCIDB: what is unknown is left out.
        if let Some(h) = c.half_width {
            long.insert("half_width".into(), json!(h));
        }
        if let Some(more) = c.more_s {
            long.insert("more_s".into(), json!(more));
        }
        long.insert("answer".into(), json!(c.answer));
        misc.insert("long_enough".into(), Value::Object(long));
    }
    misc
}

/// The statistics of each metric of each scenario: all CPUs together, then each CPU.
fn measurement_tests(ctx: &Context, run: &RunResult, base: &str) -> Vec<Value> {
    let mut out = Vec::new();
    for scenario in &run.scenarios {
        for metric in run.metrics() {
            let all: Vec<&Measurement> = run.measurements_of(&scenario.name, metric).collect();
            // Probes that measure one step after another (jitter periods, sweep rates):
            // each step is its own node, since merging steps mixes different settings.
            let mut steps: Vec<Option<String>> = Vec::new();
            for m in &all {
                let s = step(m);
                if !steps.contains(&s) {
                    steps.push(s);
                }
            }
            for s in steps {
                let mut group: Vec<&Measurement> = all.iter().copied().filter(|m| step(m) == s).collect();
                group.sort_by_key(|m| m.cpu);
                let node = match &s {
                    Some(s) => format!("{base}.{}.{}.{s}", metric_path(metric), segment(&scenario.name)),
                    None => format!("{base}.{}.{}", metric_path(metric), segment(&scenario.name)),
                };
                let cpus: Vec<usize> = group.iter().map(|m| m.cpu).collect();
                let combined = combined_summary(&group);
                let evidence = Evidence::of(&group);
                out.extend(statistic_tests(
                    ctx,
                    run,
                    scenario,
                    metric,
                    &node,
                    combined.as_ref(),
                    &evidence,
                    json!(cpus),
                    "all CPUs",
                ));
                for m in &group {
                    let node = format!("{node}.cpu{}", m.cpu);
                    let evidence = Evidence::of(&[*m]);
                    out.extend(statistic_tests(
                        ctx,
                        run,
                        scenario,
                        metric,
                        &node,
                        m.summary.as_ref(),
                        &evidence,
                        json!([m.cpu]),
                        &format!("CPU {}", m.cpu),
                    ));
                }
            }
        }
    }
    out
}

/// Counts behind a group of measurements.
struct Evidence {
    samples: u64,
    overruns: u64,
    lost: u64,
    interval_ns: Option<u64>,
}

impl Evidence {
    fn of(group: &[&Measurement]) -> Evidence {
        let interval = group.first().map(|m| m.interval_ns).filter(|i| group.iter().all(|m| m.interval_ns == *i));
        Evidence {
            samples: group.iter().map(|m| m.count).sum(),
            overruns: group.iter().map(|m| m.overruns).sum(),
            lost: group.iter().map(|m| m.lost).sum(),
            interval_ns: interval,
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn statistic_tests(
    ctx: &Context,
    run: &RunResult,
    scenario: &rtlab_results::run::Scenario,
    metric: &str,
    node: &str,
    summary: Option<&Summary>,
    evidence: &Evidence,
    cpus: Value,
    whose: &str,
) -> Vec<Value> {
    let mut misc = run_misc(run, &scenario.name, metric);
    misc.insert("cpus".into(), cpus);
    misc.insert("samples".into(), json!(evidence.samples));
    misc.insert("overruns".into(), json!(evidence.overruns));
    misc.insert("lost".into(), json!(evidence.lost));
    if let Some(i) = evidence.interval_ns {
        misc.insert("interval_ns".into(), json!(i));
    }
    let Some(summary) = summary.filter(|s| s.count > 0) else {
        // Nothing to state: one ERROR for the node, not four empty figures.
        let mut t = test(ctx, run, node, scenario.duration_s);
        t.insert("status".into(), json!("ERROR"));
        let why = scenario.load_failure.as_deref().map_or_else(
            || "no samples were taken".to_string(),
            |f| format!("no samples were taken; the scenario's loads failed: {f}"),
        );
        misc.insert("reason".into(), json!(why));
        t.insert("misc".into(), Value::Object(misc));
        return vec![Value::Object(t)];
    };
    STATISTICS
        .iter()
        .filter_map(|(name, seg)| {
            let ns = summary.figure_ns(name)?;
            let mut t = test(ctx, run, &format!("{node}.{seg}"), scenario.duration_s);
            t.insert("status".into(), json!("DONE"));
            t.insert("number".into(), seconds_f(ns));
            let mut misc = misc.clone();
            misc.insert("statistic".into(), json!(name));
            misc.insert("value_ns".into(), json!(ns.round() as i64));
            let lower = summary.is_lower_bound(name);
            if lower {
                misc.insert("lower_bound".into(), json!(true));
            }
            let sign = if lower { "≥ " } else { "" };
            t.insert(
                "comment".into(),
                json!(format!("{metric} {name} under {}, {whose}: {sign}{:.1} µs", scenario.name, ns / 1e3)),
            );
            t.insert("misc".into(), Value::Object(misc));
            Some(Value::Object(t))
        })
        .collect()
}

/// The summary of a group of measurements (one metric on several CPUs) merged: the
/// histograms merged, the moments added, the censoring combined.
fn combined_summary(group: &[&Measurement]) -> Option<Summary> {
    if let [one] = group {
        return one.summary.clone();
    }
    let histogram = rtlab_results::run::merged_histogram(group).ok()??;
    let mut moments = rtlab_analysis::Moments::new();
    for m in group {
        moments.merge(&m.moments);
    }
    let censoring = rtlab_analysis::censored::Censoring::merge(
        group.iter().map(|m| m.summary.as_ref().and_then(|s| s.censored.as_ref())),
    );
    Summary::from_censored_parts(&histogram, &moments, censoring)
}

/// The path segment of a probe's step: `period_300us`, `rate_500hz`; None for probes
/// without steps.
fn step(m: &Measurement) -> Option<String> {
    if detail_i64(m, "period_ns").is_some() {
        let label = Setting::Period.label(Setting::Period.of(m));
        return Some(segment(&format!("period_{label}us")));
    }
    detail_f64(m, "rate_hz")
        .filter(|_| m.probe == "sweep")
        .map(|_| segment(&format!("rate_{}hz", Setting::Rate.label(Setting::Rate.of(m)))))
}

/// A check of the verdict: PASS, FAIL, or ERROR when it could not be judged.
fn check_test(ctx: &Context, run: Option<&RunResult>, base: &str, check: &Check) -> Value {
    let r = &check.requirement;
    let path = format!(
        "{base}.{}.{}.requirement.{}_lt_{}",
        metric_path(&r.metric),
        segment(&check.scenario),
        segment(&r.statistic.to_string()),
        segment(&format_bound(r.bound_ns))
    );
    let mut t = match run {
        Some(run) => test(ctx, run, &path, check.duration_s),
        None => {
            let mut t = Map::new();
            t.insert("id".into(), json!(format!("{}{path}", ctx.prefix)));
            t.insert("origin".into(), json!(ctx.origin));
            t.insert("build_id".into(), json!(ctx.build_id));
            t.insert("path".into(), json!(path));
            if check.duration_s.is_finite() && check.duration_s >= 0.0 {
                t.insert("duration".into(), json!(check.duration_s));
            }
            t
        }
    };
    let mut misc = match run {
        Some(run) => run_misc(run, &check.scenario, &r.metric),
        None => {
            let mut m = Map::new();
            m.insert("run".into(), json!(check.run_label));
            m.insert("scenario".into(), json!(check.scenario));
            m.insert("metric".into(), json!(r.metric));
            m
        }
    };
    misc.insert("requirement".into(), json!(r.text));
    misc.insert("statistic".into(), json!(r.statistic.to_string()));
    misc.insert("bound_ns".into(), json!(r.bound_ns));
    misc.insert("samples".into(), json!(check.samples));
    misc.insert("samples_above_bound".into(), json!(check.samples_above_bound));
    if let Some(i) = check.exceedance_interval_s.filter(|i| i.is_finite()) {
        misc.insert("exceedance_interval_s".into(), json!(i));
    }
    if let Some(m) = check.measured_ns {
        misc.insert("measured_ns".into(), json!(m));
    }
    if let Some(m) = check.margin_ns {
        misc.insert("margin_ns".into(), json!(m));
    }
    if check.lower_bound {
        misc.insert("lower_bound".into(), json!(true));
    }
    if !check.notes.is_empty() {
        misc.insert("notes".into(), json!(check.notes));
    }
    let (status, comment) = match (check.met, &check.undecided, check.measured_ns) {
        (true, _, _) => ("PASS", format!("{}: met under {}", r.text, check.scenario)),
        (false, Some(why), _) => {
            misc.insert("reason".into(), json!(format!("undecided: {why}")));
            ("ERROR", format!("{}: undecided under {}", r.text, check.scenario))
        }
        (false, None, Some(measured)) => {
            ("FAIL", format!("{}: not met under {} (measured {:.1} µs)", r.text, check.scenario, measured as f64 / 1e3))
        }
        (false, None, None) => {
            let why =
                check.notes.first().cloned().unwrap_or_else(|| format!("{} could not be evaluated", check.what()));
            misc.insert("reason".into(), json!(why));
            ("ERROR", format!("{}: not evaluated under {}", r.text, check.scenario))
        }
    };
    t.insert("status".into(), json!(status));
    if let Some(measured) = check.measured_ns.filter(|_| status != "ERROR") {
        t.insert("number".into(), seconds_f(measured as f64));
    }
    t.insert("comment".into(), json!(comment));
    t.insert("misc".into(), Value::Object(misc));
    Value::Object(t)
}

/// A suite's conditions that have no run (failed: ERROR; never started: SKIP) and the
/// paper's judgements recomputed on this machine (PASS, FAIL, or DONE where the rule does
/// not pass judgement).
fn suite_tests(ctx: &Context, suite: &SuiteRecord, set: &ReportSet) -> Vec<Value> {
    let name = segment(&suite.suite.name);
    let first = set.runs.first().map(|r| &r.run);
    let mut out = Vec::new();
    let suite_misc = |misc: &mut Map<String, Value>| {
        misc.insert("suite".into(), json!(suite.suite.name));
        misc.insert("suite_label".into(), json!(suite.label));
        misc.insert("quick".into(), json!(suite.quick));
        if suite.simulated {
            misc.insert("simulated".into(), json!(true));
        }
    };
    let bare = |path: &str| {
        let mut t = Map::new();
        t.insert("id".into(), json!(format!("{}{path}", ctx.prefix)));
        t.insert("origin".into(), json!(ctx.origin));
        t.insert("build_id".into(), json!(ctx.build_id));
        t.insert("path".into(), json!(path));
        if let Some(start) = rfc3339(&suite.start_time) {
            t.insert("start_time".into(), json!(start));
        }
        if let Some(run) = first {
            t.insert("environment".into(), environment(run));
        }
        t
    };
    for c in &suite.conditions {
        let has_run = set.runs.iter().any(|r| r.run.label == c.run_label);
        let status = match c.status {
            ConditionStatus::NotRun => "SKIP",
            ConditionStatus::Failed => "ERROR",
            ConditionStatus::Done | ConditionStatus::Incomplete if !has_run => "ERROR",
            _ => continue,
        };
        let mut t = bare(&format!("rtlab.{name}.{}", segment(&c.name)));
        t.insert("status".into(), json!(status));
        t.insert("comment".into(), json!(format!("{}: {}", c.title, condition_reason(c, has_run))));
        let mut misc = Map::new();
        suite_misc(&mut misc);
        misc.insert("condition".into(), json!(c.name));
        misc.insert("plan".into(), json!(c.plan));
        misc.insert("reason".into(), json!(condition_reason(c, has_run)));
        t.insert("misc".into(), Value::Object(misc));
        out.push(Value::Object(t));
    }
    for j in &suite.judgements {
        let mut t = bare(&format!("rtlab.{name}.judgement.{}", segment(&j.id)));
        let status = match j.met {
            Some(true) => "PASS",
            Some(false) => "FAIL",
            None => "DONE",
        };
        t.insert("status".into(), json!(status));
        t.insert("comment".into(), json!(format!("{}: {}", j.title, j.conclusion)));
        let mut misc = Map::new();
        suite_misc(&mut misc);
        misc.insert("judgement".into(), json!(j.id));
        misc.insert("paper".into(), json!(j.paper));
        misc.insert("conclusion".into(), json!(j.conclusion));
        misc.insert("findings".into(), json!(j.findings));
        t.insert("misc".into(), Value::Object(misc));
        out.push(Value::Object(t));
    }
    out
}

fn condition_reason(c: &ConditionRecord, has_run: bool) -> String {
    match (&c.reason, c.status) {
        (Some(r), _) => r.clone(),
        (None, ConditionStatus::NotRun) => "not run: the suite was interrupted before it".into(),
        (None, _) if !has_run => "its run.json is missing or unreadable".into(),
        (None, _) => "failed".into(),
    }
}

fn checkout(origin: &str, id: &str, run: &RunResult) -> Value {
    json!({
        "id": id,
        "origin": origin,
        "comment": format!("Linux {}", run.host.kernel_release),
        "misc": {
            "kernel_release": run.host.kernel_release,
            "kernel_version": run.host.kernel_version,
        },
    })
}

fn build(origin: &str, id: &str, checkout_id: &str, run: &RunResult) -> Value {
    let h = &run.host;
    let mut b = Map::new();
    b.insert("id".into(), json!(id));
    b.insert("origin".into(), json!(origin));
    b.insert("checkout_id".into(), json!(checkout_id));
    b.insert(
        "comment".into(),
        json!(format!("Linux {} ({}) as booted on {}", h.kernel_release, preemption(run), h.hostname)),
    );
    // The schema's architecture pattern; uname's machine (x86_64, aarch64) fits it.
    if !h.machine.is_empty() && h.machine.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_') {
        b.insert("architecture".into(), json!(h.machine));
    }
    b.insert(
        "misc".into(),
        json!({
            "kernel_release": h.kernel_release,
            "kernel_version": h.kernel_version,
            "preemption": preemption(run),
            "host": h.hostname,
            "kernel_cmdline": h.kernel_cmdline,
        }),
    );
    Value::Object(b)
}

/// A number of seconds with the metric prefix, from ns.
fn seconds_f(ns: f64) -> Value {
    json!({"value": ns / 1e9, "unit": "s", "prefix": "metric"})
}

/// `1e-9` as a path segment keeps: `1e-9`.
fn probability(p: f64) -> String {
    segment(&format!("{p:e}"))
}

/// `timer.latency` -> `timer.latency`, each part made a path segment.
fn metric_path(metric: &str) -> String {
    metric.split('.').map(segment).collect::<Vec<_>>().join(".")
}

/// One segment of a KCIDB path (`[a-zA-Z0-9_-]+`): other characters become `_`, runs of
/// `_` one, none at either end.
pub fn segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' };
        if !(c == '_' && (out.is_empty() || out.ends_with('_'))) {
            out.push(c);
        }
    }
    while out.ends_with('_') {
        out.pop();
    }
    if out.is_empty() {
        out.push('_');
    }
    out
}

/// A KCIDB origin: `[a-z0-9_]+`.
pub fn is_origin(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// What to do with an ID that starts with another origin's name and a colon.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Foreign {
    /// Keep it: a reference to another CI's object (`--tests-only` builds and checkouts).
    Keep,
    /// Refuse it: this submission writes the object, so its ID must be this origin's.
    Refuse,
    /// Put this origin before it (a test ID prefix: the tests are always this origin's).
    Prefix,
}

/// An ID as KCIDB wants it, `origin:rest`: kept when it starts with `<origin>:`; one
/// starting with another origin as `foreign` says; anything else gets `<origin>:` before it.
pub fn with_origin(flag: &str, id: &str, origin: &str, foreign: Foreign) -> Result<String, FormatError> {
    if id.contains('\0') {
        return Err(usage(flag, "an ID cannot hold a NUL character".into()));
    }
    if id.is_empty() {
        return Err(usage(flag, "an ID cannot be empty".into()));
    }
    Ok(match id.split_once(':') {
        Some((o, _)) if o == origin => id.to_string(),
        Some((o, _)) if is_origin(o) && foreign == Foreign::Keep => id.to_string(),
        Some((o, _)) if is_origin(o) && foreign == Foreign::Refuse => {
            return Err(usage(
                flag,
                format!(
                    "{id:?} is an ID of origin {o:?}, and this submission writes that object as origin {origin:?}: \
                     give --tests-only to attach the tests to another CI's objects, or --origin {o}"
                ),
            ))
        }
        _ => format!("{origin}:{id}"),
    })
}

fn non_empty(s: &str, fallback: &str) -> String {
    if s.trim().is_empty() {
        fallback.to_string()
    } else {
        s.to_string()
    }
}

/// run.json's start as RFC 3339 (what the schema's date-time format accepts), if it is one.
fn rfc3339(s: &str) -> Option<String> {
    chrono::DateTime::parse_from_rfc3339(s).ok().map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true))
}

/// `2026-11-29T05:35:33Z` -> `20261129T053533Z` (UTC), for the default test IDs.
fn compact_time(s: &str) -> Option<String> {
    let t = chrono::DateTime::parse_from_rfc3339(s).ok()?;
    Some(t.with_timezone(&chrono::Utc).format("%Y%m%dT%H%M%SZ").to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_hold_only_what_a_kcidb_path_allows() {
        assert_eq!(segment("p99.9"), "p99_9");
        assert_eq!(segment("cpu:threads=1+proc-read"), "cpu_threads_1_proc-read");
        assert_eq!(segment("pwcet(1e-9)"), "pwcet_1e-9");
        assert_eq!(segment("..."), "_");
        assert_eq!(segment("µs idle"), "s_idle");
        assert_eq!(metric_path("timer.latency"), "timer.latency");
    }

    #[test]
    fn ids_start_with_an_origin() {
        let id = |id: &str, foreign| with_origin("--build-id", id, "lab", foreign).map_err(|e| e.to_string());
        assert_eq!(id("abc", Foreign::Refuse).unwrap(), "lab:abc");
        assert_eq!(id("lab:abc", Foreign::Refuse).unwrap(), "lab:abc");
        // Another origin's build: a reference with --tests-only, refused when written as ours.
        assert_eq!(id("maestro:abc", Foreign::Keep).unwrap(), "maestro:abc");
        assert!(id("maestro:abc", Foreign::Refuse).unwrap_err().contains("--tests-only"));
        assert_eq!(id("job1:", Foreign::Prefix).unwrap(), "lab:job1:");
        // "6.1.0" is no origin (dots): prefixed.
        assert_eq!(id("6.1.0:x", Foreign::Refuse).unwrap(), "lab:6.1.0:x");
        assert!(id("", Foreign::Keep).is_err());
        assert!(is_origin("my_lab2") && !is_origin("My-Lab") && !is_origin(""));
    }

    #[test]
    fn times() {
        assert_eq!(compact_time("2026-11-29T05:35:33.5+01:00").as_deref(), Some("20261129T043533Z"));
        assert_eq!(compact_time("not a time"), None);
        assert_eq!(rfc3339("1970-01-01T00:00:00Z").as_deref(), Some("1970-01-01T00:00:00Z"));
        assert_eq!(probability(1e-9), "1e-9");
    }
}
