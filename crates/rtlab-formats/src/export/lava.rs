//! `--format lava`: the results as LAVA test cases (docs/lava.md), for board farms that run
//! rtlab from a LAVA test definition (contrib/lava/rtlab.yaml).
//!
//! One test set per scenario (a suite: per condition and scenario), holding one test case per
//! metric, CPU (thread) and statistic with its measurement in µs (`pass`: a measurement
//! passes no judgement, as in Linaro's test-definitions), the pWCET of each metric where the
//! tail analysis quotes one, and one case per requirement (`pass` met, `fail` not met,
//! `unknown` when rtlab could not judge it), and whether the run was long enough for its
//! statistic (docs/stop-rule.md: `pass`, or `unknown` when it was not). LAVA has no field for a reason: an `unknown` or
//! `fail` case is preceded by a plain text line saying why, which LAVA keeps in the log.
//!
//! [`Line`]s are what the binary emits: through LAVA's own `lava-test-case` and
//! `lava-test-set` where they are on PATH, or as the signal lines those scripts print
//! ([`Line::signal`], byte for byte what the scripts of lava-dispatcher 2023.01 print).
//! [`LavaReport`] renders the signal lines of a set of runs behind the export trait;
//! [`suite_lines`] makes the lines of suite directories.
//!
//! Test case IDs ([`IdMaker`]): dot-separated parts, every character outside LAVA's
//! `[-_a-zA-Z0-9.]` replaced by `_`, at most [`MAX_ID_LEN`] characters (longer ones keep a
//! hash of the whole), unique in the output (a repeat gets `-2`, `-3`, ...), and the same for
//! the same results every time.

use crate::FormatError;
use rtlab_analysis::requirement::Statistic;
use rtlab_results::run::{Measurement, RunResult};
use rtlab_results::set::{ReportExporter, ReportSet};
use rtlab_results::suite::{ConditionStatus, LoadedSuite};
use rtlab_results::verdict::{Check, Outcome, Verdict};

/// LAVA's test case result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LavaResult {
    Pass,
    Fail,
    Skip,
    Unknown,
}

impl LavaResult {
    pub fn as_str(self) -> &'static str {
        match self {
            LavaResult::Pass => "pass",
            LavaResult::Fail => "fail",
            LavaResult::Skip => "skip",
            LavaResult::Unknown => "unknown",
        }
    }
}

/// The unit of every measurement: µs, spelled in ASCII (LAVA's signal parser splits on
/// white space and '=', and serial consoles mangle non-ASCII).
pub const UNITS: &str = "us";

/// LAVA stores a test case name of at most 100 characters (lava_results_app's TestCase).
pub const MAX_ID_LEN: usize = 100;

/// One test case.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    pub id: String,
    pub result: LavaResult,
    /// µs, as a decimal number (`20.123`, `-0.007`).
    pub measurement: Option<String>,
    /// Why the result is `unknown`, `fail` or `skip`: printed as a text line before the case.
    pub reason: Option<String>,
}

/// What rtlab emits, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    /// A plain text line for people (caveats, reasons): LAVA ignores it but keeps it in the log.
    Note(String),
    /// `lava-test-set start NAME`.
    StartSet(String),
    /// `lava-test-set stop`.
    StopSet,
    Case(Case),
}

impl Line {
    /// The line(s) printed for it where LAVA's scripts are not on PATH: a note as it is, a
    /// test set or case as the signal line its script prints (a case's reason first).
    pub fn signal(&self) -> String {
        match self {
            Line::Note(text) => text.clone(),
            Line::StartSet(name) => format!("<LAVA_SIGNAL_TESTSET START {name}>"),
            Line::StopSet => "<LAVA_SIGNAL_TESTSET STOP>".to_string(),
            Line::Case(case) => {
                let mut out = String::new();
                if let Some(note) = case.reason_line() {
                    out.push_str(&note);
                    out.push('\n');
                }
                // The order lava-test-case prints its fields in: RESULT, UNITS, MEASUREMENT.
                out.push_str(&format!(
                    "<LAVA_SIGNAL_TESTCASE TEST_CASE_ID={} RESULT={}",
                    case.id,
                    case.result.as_str()
                ));
                if let Some(m) = &case.measurement {
                    out.push_str(&format!(" UNITS={UNITS} MEASUREMENT={m}"));
                }
                out.push('>');
                out
            }
        }
    }

    /// The LAVA script and its arguments for a set or case (None for a note).
    pub fn command(&self) -> Option<(&'static str, Vec<String>)> {
        match self {
            Line::Note(_) => None,
            Line::StartSet(name) => Some(("lava-test-set", vec!["start".into(), name.clone()])),
            Line::StopSet => Some(("lava-test-set", vec!["stop".into()])),
            Line::Case(case) => {
                let mut args = vec![case.id.clone(), "--result".into(), case.result.as_str().into()];
                if let Some(m) = &case.measurement {
                    args.extend(["--measurement".into(), m.clone(), "--units".into(), UNITS.into()]);
                }
                Some(("lava-test-case", args))
            }
        }
    }
}

impl Case {
    /// "rtlab: ID: unknown: why" before a case that has a reason.
    pub fn reason_line(&self) -> Option<String> {
        self.reason.as_ref().map(|why| note(&format!("{}: {}: {why}", self.id, self.result.as_str())))
    }
}

/// A note line: prefixed "rtlab: ", one line, and never mistaken for a LAVA signal.
fn note(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    format!("rtlab: {}", one_line.replace("<LAVA_", "(LAVA_"))
}

/// The signal text of `lines`, one per line.
pub fn signals(lines: &[Line]) -> String {
    let mut out = String::new();
    for line in lines {
        out.push_str(&line.signal());
        out.push('\n');
    }
    out
}

/// The pWCET of a metric in one scenario of a run at one per-activation probability, as the
/// report's tail analysis gives it (computed by the caller: the analysis belongs to the
/// report, this crate only writes it down).
#[derive(Debug, Clone, PartialEq)]
pub struct PwcetFigure {
    pub run_label: String,
    pub scenario: String,
    pub metric: String,
    pub probability: f64,
    /// Ok(ns) when it can be quoted; Err(why not) otherwise.
    pub value: Result<f64, String>,
}

/// `--format lava` of saved runs: the signal lines (what rtlab prints where LAVA's scripts
/// are not on PATH).
#[derive(Debug, Clone, Default)]
pub struct LavaReport {
    pub pwcet: Vec<PwcetFigure>,
}

impl ReportExporter for LavaReport {
    type Error = FormatError;

    fn render(&self, set: &ReportSet) -> Result<String, FormatError> {
        Ok(signals(&run_lines(set, &self.pwcet)))
    }
}

/// The statistics of a summary that become test cases.
pub const STATISTICS: [&str; 5] = ["p50", "p99", "p99.9", "p99.99", "max"];

/// Makes test case and test set IDs: sanitised, bounded, unique in one output.
#[derive(Debug, Default)]
pub struct IdMaker {
    used: std::collections::HashSet<String>,
}

impl IdMaker {
    /// The ID of `parts` joined by '.', unique among the IDs this maker has made.
    pub fn id(&mut self, parts: &[&str]) -> String {
        let base = bounded(&parts.iter().map(|p| sanitize(p)).collect::<Vec<_>>().join("."), MAX_ID_LEN);
        let mut id = base.clone();
        let mut n = 2;
        while !self.used.insert(id.clone()) {
            let suffix = format!("-{n}");
            id = format!("{}{suffix}", bounded(&base, MAX_ID_LEN - suffix.len()));
            n += 1;
        }
        id
    }
}

/// LAVA's allowed characters `[-_a-zA-Z0-9.]`: anything else becomes '_'; empty becomes '_'.
pub fn sanitize(part: &str) -> String {
    let out: String =
        part.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '_' }).collect();
    if out.is_empty() {
        "_".into()
    } else {
        out
    }
}

/// At most `max` characters: a longer ID keeps its start and a hash of the whole.
fn bounded(id: &str, max: usize) -> String {
    if id.len() <= max {
        return id.to_string();
    }
    // FNV-1a: stable across platforms and releases (std's hasher is not).
    let hash = id.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    let suffix = format!("-{:08x}", hash as u32);
    format!("{}{suffix}", &id[..max - suffix.len()])
}

/// ns as µs with every ns kept: "20.123", "-0.007".
pub fn us(ns: i64) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    let abs = ns.unsigned_abs();
    format!("{sign}{}.{:03}", abs / 1000, abs % 1000)
}

/// A statistic as an ID part: "max", "p99.9", "pwcet-1e-9".
fn statistic_part(statistic: &Statistic) -> String {
    match statistic {
        Statistic::Pwcet(p) => format!("pwcet-{p:e}"),
        other => other.to_string(),
    }
}

/// A bound as an ID part: "500us", "12.5us".
fn bound_part(ns: i64) -> String {
    let text = us(ns);
    let trimmed = text.trim_end_matches('0').trim_end_matches('.');
    format!("{trimmed}us")
}

/// The lines of `rtlab report --format lava` on runs.
pub fn run_lines(set: &ReportSet, pwcet: &[PwcetFigure]) -> Vec<Line> {
    let mut ids = IdMaker::default();
    let mut out = Vec::new();
    let verdict = set.effective_verdict();
    let many = set.runs.len() > 1;
    header(&mut out, set.runs.iter().map(|r| &r.run), verdict.as_ref());
    let mut done: Vec<usize> = Vec::new();
    for sourced in &set.runs {
        let run = &sourced.run;
        for scenario in &run.scenarios {
            let mut prefix: Vec<&str> = Vec::new();
            if many {
                prefix.push(&run.label);
            }
            prefix.push(&scenario.name);
            let checks = matching_checks(verdict.as_ref(), &run.label, &scenario.name, &mut done);
            scenario_set(&mut out, &mut ids, &prefix, run, &scenario.name, pwcet, &checks);
        }
    }
    leftover_checks(&mut out, &mut ids, verdict.as_ref(), &done);
    out
}

/// The caveats that qualify every figure, and the verdict's sentence, as notes first.
fn header<'a>(out: &mut Vec<Line>, runs: impl Iterator<Item = &'a RunResult>, verdict: Option<&Verdict>) {
    for run in runs {
        let sim = if run.simulated { ", simulated clock" } else { "" };
        out.push(Line::Note(note(&format!(
            "run {}: kernel {} on {}{sim}",
            run.label, run.host.kernel_release, run.host.hostname
        ))));
        for w in rtlab_results::set::run_warnings(run, false, None) {
            out.push(Line::Note(note(&format!("run {}: caveat: {w}", run.label))));
        }
    }
    if let Some(v) = verdict {
        out.push(Line::Note(note(&format!("verdict: {}", v.summary))));
        for c in &v.caveats {
            out.push(Line::Note(note(&format!("verdict caveat: {c}"))));
        }
    }
}

/// The checks of `verdict` on this run's scenario (by index, noted in `done`).
fn matching_checks<'a>(
    verdict: Option<&'a Verdict>,
    label: &str,
    scenario: &str,
    done: &mut Vec<usize>,
) -> Vec<&'a Check> {
    let Some(v) = verdict else { return Vec::new() };
    let mut out = Vec::new();
    for (i, c) in v.checks.iter().enumerate() {
        if c.run_label == label && c.scenario == scenario && !done.contains(&i) {
            done.push(i);
            out.push(c);
        }
    }
    out
}

/// Checks of a saved verdict that name no scenario of the runs given: a set of their own.
fn leftover_checks(out: &mut Vec<Line>, ids: &mut IdMaker, verdict: Option<&Verdict>, done: &[usize]) {
    let Some(v) = verdict else { return };
    let rest: Vec<&Check> = v.checks.iter().enumerate().filter(|(i, _)| !done.contains(i)).map(|(_, c)| c).collect();
    if rest.is_empty() {
        return;
    }
    out.push(Line::StartSet(ids.id(&["requirements"])));
    for c in rest {
        out.push(Line::Case(requirement_case(ids, &[&c.run_label, &c.scenario], c)));
    }
    out.push(Line::StopSet);
}

/// One scenario's test set: its measurements, pWCETs and requirements.
fn scenario_set(
    out: &mut Vec<Line>,
    ids: &mut IdMaker,
    prefix: &[&str],
    run: &RunResult,
    scenario: &str,
    pwcet: &[PwcetFigure],
    checks: &[&Check],
) {
    out.push(Line::StartSet(ids.id(prefix)));
    let measurements: Vec<&Measurement> = run.measurements.iter().filter(|m| m.scenario == scenario).collect();
    let mut metrics: Vec<&str> = Vec::new();
    for m in &measurements {
        if !metrics.contains(&m.metric.as_str()) {
            metrics.push(&m.metric);
        }
    }
    for metric in metrics {
        let mut threads: Vec<&Measurement> = measurements.iter().copied().filter(|m| m.metric == metric).collect();
        threads.sort_by_key(|m| m.cpu);
        for m in &threads {
            let shared = threads.iter().filter(|o| o.cpu == m.cpu).count() > 1;
            let cpu = format!("cpu{}", m.cpu);
            let step = if shared { Some(step_of(m)) } else { None };
            let mut parts: Vec<&str> = prefix.to_vec();
            parts.push(metric);
            parts.push(&cpu);
            if let Some(s) = &step {
                parts.push(s);
            }
            for statistic in STATISTICS {
                let mut id_parts = parts.clone();
                id_parts.push(statistic);
                out.push(Line::Case(measurement_case(ids.id(&id_parts), m, statistic)));
            }
        }
        for figure in pwcet.iter().filter(|f| f.run_label == run.label && f.scenario == scenario && f.metric == metric)
        {
            let statistic = statistic_part(&Statistic::Pwcet(figure.probability));
            let mut id_parts: Vec<&str> = prefix.to_vec();
            id_parts.extend([metric, "all", &statistic]);
            let id = ids.id(&id_parts);
            out.push(Line::Case(match &figure.value {
                Ok(ns) if ns.is_finite() => Case {
                    id,
                    result: LavaResult::Pass,
                    measurement: Some(format!("{:.3}", ns / 1000.0)),
                    reason: None,
                },
                Ok(_) => Case {
                    id,
                    result: LavaResult::Unknown,
                    measurement: None,
                    reason: Some("the pWCET is not a finite number".into()),
                },
                Err(why) => Case { id, result: LavaResult::Unknown, measurement: None, reason: Some(why.clone()) },
            }));
        }
    }
    if let Some(c) = run.scenario(scenario).and_then(|s| s.convergence.as_ref()) {
        let case = convergence_case(out, ids, prefix, c);
        out.push(Line::Case(case));
    }
    for c in checks {
        out.push(Line::Case(requirement_case(ids, prefix, c)));
    }
    out.push(Line::StopSet);
}

/// "Long enough?" (docs/stop-rule.md): `pass` when the statistic converged, `unknown` when the
/// run was too short to say, with rtlab's answer before it either way; the measurement is the
/// statistic's value, µs.
fn convergence_case(
    out: &mut Vec<Line>,
    ids: &mut IdMaker,
    prefix: &[&str],
    c: &rtlab_analysis::convergence::Convergence,
) -> Case {
    let mut parts: Vec<&str> = prefix.to_vec();
    parts.extend(["long-enough", &c.metric, &c.statistic]);
    let id = ids.id(&parts);
    let measurement = c.value_ns.filter(|v| v.is_finite()).map(|v| format!("{:.3}", v / 1000.0));
    if c.converged {
        out.push(Line::Note(note(&format!("{id}: {}", c.answer))));
        Case { id, result: LavaResult::Pass, measurement, reason: None }
    } else {
        Case { id, result: LavaResult::Unknown, measurement, reason: Some(c.answer.clone()) }
    }
}

/// What tells apart the measurements of one metric on one CPU (jitter periods, sweep rates,
/// switch mechanisms): the thread name without its probe and CPU ("300us", "net@500Hz").
fn step_of(m: &Measurement) -> String {
    let mut s = m.thread.as_str();
    if let Some(rest) = s.strip_prefix(&format!("{}/", m.probe)) {
        s = rest;
    }
    let cpu_suffix = format!("/{}", m.cpu);
    if let Some(rest) = s.strip_suffix(&cpu_suffix) {
        s = rest;
    }
    if s.is_empty() {
        m.thread.clone()
    } else {
        s.to_string()
    }
}

/// One statistic of one thread: its value in µs (pass); unknown without samples or when the
/// value is only a lower bound (censored data: the true value is not known).
fn measurement_case(id: String, m: &Measurement, statistic: &str) -> Case {
    let Some(summary) = &m.summary else {
        return Case {
            id,
            result: LavaResult::Unknown,
            measurement: None,
            reason: Some(format!("no samples of {} on CPU {}", m.metric, m.cpu)),
        };
    };
    let value = match statistic {
        "max" => Some(summary.max),
        other => summary.percentiles().iter().find(|(n, _)| *n == other).map(|(_, v)| *v),
    };
    let Some(ns) = value else {
        return Case {
            id,
            result: LavaResult::Unknown,
            measurement: None,
            reason: Some(format!("the summary has no {statistic}")),
        };
    };
    if summary.is_lower_bound(statistic) {
        return Case {
            id,
            result: LavaResult::Unknown,
            measurement: Some(us(ns)),
            reason: Some(format!(
                "{statistic} is only a lower bound: the source's histogram clipped samples above it (censored data)"
            )),
        };
    }
    Case { id, result: LavaResult::Pass, measurement: Some(us(ns)), reason: None }
}

/// One requirement judged on one scenario: pass met, fail not met, unknown undecided or not
/// evaluated (the verdict counts those as not met; LAVA shows that rtlab could not judge).
fn requirement_case(ids: &mut IdMaker, prefix: &[&str], c: &Check) -> Case {
    let r = &c.requirement;
    let statistic = statistic_part(&r.statistic);
    let bound = format!("lt-{}", bound_part(r.bound_ns));
    let mut parts: Vec<&str> = prefix.to_vec();
    parts.extend(["require", &r.metric, &statistic, &bound]);
    let id = ids.id(&parts);
    let measurement = c.measured_ns.map(us);
    let what = format!("{} under {}", c.what(), c.scenario);
    match c.outcome() {
        Outcome::Met => Case { id, result: LavaResult::Pass, measurement, reason: None },
        Outcome::NotMet if c.measured_ns.is_some() => {
            let measured = c.measured_ns.map(us).unwrap_or_default();
            let at_least = if c.lower_bound { "at least " } else { "" };
            Case {
                id,
                result: LavaResult::Fail,
                measurement,
                reason: Some(format!(
                    "{what} was {at_least}{measured} us; required < {} us ({})",
                    us(r.bound_ns),
                    r.text
                )),
            }
        }
        Outcome::NotMet => Case {
            id,
            result: LavaResult::Unknown,
            measurement: None,
            reason: Some(c.notes.first().cloned().unwrap_or_else(|| format!("{what} could not be evaluated"))),
        },
        Outcome::Undecided => Case {
            id,
            result: LavaResult::Unknown,
            measurement: None,
            reason: Some(format!("{what} is undecided: {}", c.undecided.clone().unwrap_or_default())),
        },
    }
}

/// The lines of `rtlab report SUITE_DIR... --format lava`: per condition its status case,
/// then a test set per scenario of its run (named `CONDITION.SCENARIO`), then the paper's
/// judgements in a set `judgements`. Several suites: every ID starts with the suite's label.
pub fn suite_lines(suites: &[LoadedSuite], pwcet: &[PwcetFigure]) -> Vec<Line> {
    let mut ids = IdMaker::default();
    let mut out = Vec::new();
    let many = suites.len() > 1;
    for suite in suites {
        let record = &suite.record;
        let quick = if record.quick { " --quick" } else { "" };
        out.push(Line::Note(note(&format!(
            "suite {}{quick}, label {}: {}",
            record.suite.name, record.label, record.machine
        ))));
        if let Some(v) = &record.verdict {
            out.push(Line::Note(note(&format!("suite {} verdict: {}", record.label, v.summary))));
        }
    }
    for suite in suites {
        let record = &suite.record;
        let mut done: Vec<usize> = Vec::new();
        for (condition, run) in record.conditions.iter().zip(&suite.runs) {
            let mut prefix: Vec<&str> = Vec::new();
            if many {
                prefix.push(&record.label);
            }
            prefix.push(&condition.name);
            let mut status_parts = prefix.clone();
            status_parts.push("status");
            let (result, reason) = match condition.status {
                ConditionStatus::Done if condition.is_degraded() => (
                    LavaResult::Unknown,
                    Some(format!("measured without a capability it needs: {}", condition.gaps.join("; "))),
                ),
                ConditionStatus::Done => (LavaResult::Pass, None),
                ConditionStatus::Incomplete => (LavaResult::Unknown, condition.reason.clone()),
                ConditionStatus::Failed => (LavaResult::Unknown, condition.reason.clone()),
                ConditionStatus::NotRun => {
                    (LavaResult::Skip, Some("not run: the suite was interrupted before it".to_string()))
                }
            };
            let reason = match (result, reason) {
                (LavaResult::Pass, _) => None,
                (_, Some(r)) => Some(r),
                (_, None) => Some(format!("condition {}: {:?}", condition.name, condition.status)),
            };
            out.push(Line::Case(Case { id: ids.id(&status_parts), result, measurement: None, reason }));
            let Some(run) = run else { continue };
            for scenario in &run.scenarios {
                let mut set_prefix = prefix.clone();
                set_prefix.push(&scenario.name);
                let checks = matching_checks(record.verdict.as_ref(), &run.label, &scenario.name, &mut done);
                scenario_set(&mut out, &mut ids, &set_prefix, run, &scenario.name, pwcet, &checks);
            }
        }
        leftover_checks(&mut out, &mut ids, record.verdict.as_ref(), &done);
        if !record.judgements.is_empty() {
            let mut set_parts: Vec<&str> = Vec::new();
            if many {
                set_parts.push(&record.label);
            }
            set_parts.push("judgements");
            out.push(Line::StartSet(ids.id(&set_parts)));
            for j in &record.judgements {
                let mut parts = set_parts.clone();
                parts.push(&j.id);
                let (result, reason) = match j.met {
                    Some(true) => (LavaResult::Pass, None),
                    Some(false) => (LavaResult::Fail, Some(j.conclusion.clone())),
                    None => (LavaResult::Unknown, Some(j.conclusion.clone())),
                };
                out.push(Line::Case(Case { id: ids.id(&parts), result, measurement: None, reason }));
            }
            out.push(Line::StopSet);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_use_lava_characters_only_and_stay_unique() {
        let mut ids = IdMaker::default();
        assert_eq!(
            ids.id(&["cpu:threads=1+proc-read", "timer.latency", "cpu0", "p99.9"]),
            "cpu_threads_1_proc-read.timer.latency.cpu0.p99.9"
        );
        assert_eq!(ids.id(&["a+b"]), "a_b");
        assert_eq!(ids.id(&["a:b"]), "a_b-2");
        assert_eq!(ids.id(&["a b"]), "a_b-3");
        assert_eq!(ids.id(&["µs", ""]), "_s._");
    }

    #[test]
    fn long_ids_keep_their_start_and_a_stable_hash() {
        let long = "x".repeat(150);
        let mut ids = IdMaker::default();
        let a = ids.id(&[&long, "1"]);
        let b = ids.id(&[&long, "2"]);
        assert_eq!(a.len(), MAX_ID_LEN);
        assert_eq!(b.len(), MAX_ID_LEN);
        assert_ne!(a, b);
        assert!(a.starts_with("xxxx"));
        assert_eq!(a, IdMaker::default().id(&[&long, "1"]));
        let again = ids.id(&[&long, "1"]);
        assert_eq!(again.len(), MAX_ID_LEN);
        assert_ne!(again, a);
    }

    #[test]
    fn measurements_are_decimal_microseconds() {
        assert_eq!(us(20_123), "20.123");
        assert_eq!(us(-7), "-0.007");
        assert_eq!(us(0), "0.000");
        assert_eq!(bound_part(500_000), "500us");
        assert_eq!(bound_part(12_500), "12.5us");
        assert_eq!(bound_part(7), "0.007us");
        assert_eq!(statistic_part(&Statistic::Pwcet(1e-9)), "pwcet-1e-9");
        assert_eq!(statistic_part(&Statistic::Percentile(99.9)), "p99.9");
    }

    #[test]
    fn signal_lines_are_what_the_scripts_print() {
        let case = Case {
            id: "idle.timer.latency.cpu0.max".into(),
            result: LavaResult::Pass,
            measurement: Some("12.000".into()),
            reason: None,
        };
        assert_eq!(
            Line::Case(case).signal(),
            "<LAVA_SIGNAL_TESTCASE TEST_CASE_ID=idle.timer.latency.cpu0.max RESULT=pass UNITS=us MEASUREMENT=12.000>"
        );
        let unknown = Case {
            id: "x".into(),
            result: LavaResult::Unknown,
            measurement: None,
            reason: Some("a\nb <LAVA_X".into()),
        };
        assert_eq!(
            Line::Case(unknown).signal(),
            "rtlab: x: unknown: a b (LAVA_X\n<LAVA_SIGNAL_TESTCASE TEST_CASE_ID=x RESULT=unknown>"
        );
        assert_eq!(Line::StartSet("idle".into()).signal(), "<LAVA_SIGNAL_TESTSET START idle>");
        assert_eq!(Line::StopSet.signal(), "<LAVA_SIGNAL_TESTSET STOP>");
    }
}
