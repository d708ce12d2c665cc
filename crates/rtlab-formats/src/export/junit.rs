//! `--format junit`: the verdict as JUnit XML, so that a CI system (Jenkins `junit`, GitLab
//! `artifacts:reports:junit`, GitHub test reporters) shows each latency requirement as a
//! passed or failed test (docs/export/junit.md).
//!
//! One `<testsuite>` per run under a `<testsuites>` root; one `<testcase>` per check (a
//! requirement against one scenario): met is a pass, not met a `<failure>` with the measured
//! value and the bound, not evaluable (the metric was not measured, no samples, a pWCET that
//! is not defensible from the run: an UNDECIDED check) an `<error>`, since the verdict counts
//! it as not met. There is no `<skipped>`: a check rtlab cannot
//! evaluate fails the verdict, and a skipped test would show green.

use super::hdr_log::run_start;
use crate::FormatError;
use rtlab_analysis::requirement::format_bound;
use rtlab_results::run::RunResult;
use rtlab_results::set::{ReportExporter, ReportSet};
use rtlab_results::verdict::{Check, Verdict};
use std::fmt::Write;

/// JUnit XML of the verdict judged for this report (`--require`) or saved with the runs.
#[derive(Debug, Clone, Default)]
pub struct JunitReport;

impl ReportExporter for JunitReport {
    type Error = FormatError;

    fn render(&self, set: &ReportSet) -> Result<String, FormatError> {
        match set.effective_verdict() {
            Some(verdict) if !verdict.checks.is_empty() => Ok(render_verdict(set, &verdict)),
            _ => Err(FormatError::Usage {
                what: "--format junit".into(),
                reason: "junit needs requirements: give --require EXPR (e.g. --require \"timer max < 500us\"), \
                         or report a run saved with a verdict (rtlab run --require)"
                    .into(),
            }),
        }
    }
}

/// The outcome of one check, as JUnit counts it.
enum Outcome {
    Passed,
    Failed {
        message: String,
    },
    /// Not evaluated (`kind` "not-evaluated") or undecided (`kind` "undecided").
    Error {
        message: String,
        kind: &'static str,
    },
}

fn outcome(check: &Check) -> Outcome {
    if check.met {
        return Outcome::Passed;
    }
    let what = check.what();
    if let Some(why) = &check.undecided {
        // Neither passed nor failed: rtlab could not evaluate it (a pWCET that is not
        // defensible from the run), which counts as not met.
        let message = format!("{what} is undecided under {}: {why}", check.scenario);
        return Outcome::Error { message, kind: "undecided" };
    }
    match (check.measured_ns, check.margin_ns) {
        (Some(measured), Some(margin)) => {
            let relation = if margin == 0 { "equal to the bound".to_string() } else { format!("{} over", us(-margin)) };
            Outcome::Failed {
                message: format!(
                    "{what} was {} under {}; required < {} ({relation})",
                    us(measured),
                    check.scenario,
                    us(check.requirement.bound_ns)
                ),
            }
        }
        _ => Outcome::Error {
            message: check.notes.first().cloned().unwrap_or_else(|| format!("{what} could not be evaluated")),
            kind: "not-evaluated",
        },
    }
}

fn render_verdict(set: &ReportSet, verdict: &Verdict) -> String {
    // Checks grouped by run, in the order the runs first appear among them.
    let mut labels: Vec<&str> = Vec::new();
    for c in &verdict.checks {
        if !labels.contains(&c.run_label.as_str()) {
            labels.push(&c.run_label);
        }
    }
    let suites: Vec<Suite> = labels
        .iter()
        .map(|label| Suite {
            label,
            run: set.runs.iter().map(|r| &r.run).find(|r| r.label == *label),
            checks: verdict.checks.iter().filter(|c| c.run_label == *label).collect(),
        })
        .collect();

    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let totals = Counts::of(verdict.checks.iter());
    let time: f64 = suites.iter().map(Suite::time).sum();
    let _ = writeln!(
        xml,
        "<testsuites name=\"rtlab\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"0\" time=\"{}\">",
        totals.tests,
        totals.failures,
        totals.errors,
        seconds(time)
    );
    for suite in &suites {
        suite.write(&mut xml, verdict);
    }
    xml.push_str("</testsuites>\n");
    xml
}

struct Counts {
    tests: usize,
    failures: usize,
    errors: usize,
}

impl Counts {
    fn of<'a>(checks: impl Iterator<Item = &'a Check>) -> Counts {
        let mut counts = Counts { tests: 0, failures: 0, errors: 0 };
        for c in checks {
            counts.tests += 1;
            match outcome(c) {
                Outcome::Passed => {}
                Outcome::Failed { .. } => counts.failures += 1,
                Outcome::Error { .. } => counts.errors += 1,
            }
        }
        counts
    }
}

/// The checks of one run.
struct Suite<'a> {
    label: &'a str,
    /// None only for a saved verdict naming a run that is not in the set.
    run: Option<&'a RunResult>,
    checks: Vec<&'a Check>,
}

impl Suite<'_> {
    /// Seconds the run spent measuring (the checks' windows when the run is missing).
    fn time(&self) -> f64 {
        match self.run {
            Some(run) => finite(run.duration_s),
            None => self.checks.iter().map(|c| finite(c.duration_s)).sum(),
        }
    }

    fn write(&self, xml: &mut String, verdict: &Verdict) {
        let name = format!("rtlab.{}", self.label);
        let counts = Counts::of(self.checks.iter().copied());
        let _ = write!(
            xml,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"0\" time=\"{}\"",
            attribute(&name),
            counts.tests,
            counts.failures,
            counts.errors,
            seconds(self.time())
        );
        if let Some(run) = self.run {
            // The Ant schema's timestamp: ISO 8601 without a zone, so in UTC.
            if let Some(start) = run_start(run) {
                let utc: chrono::DateTime<chrono::Utc> = start.into();
                let _ = write!(xml, " timestamp=\"{}\"", utc.format("%Y-%m-%dT%H:%M:%S"));
            }
            let _ = write!(xml, " hostname=\"{}\"", attribute(&run.host.hostname));
        }
        xml.push_str(">\n");
        xml.push_str("    <properties>\n");
        for (key, value) in self.properties(verdict) {
            let _ = writeln!(xml, "      <property name=\"{}\" value=\"{}\"/>", attribute(key), attribute(&value));
        }
        xml.push_str("    </properties>\n");
        for check in &self.checks {
            write_case(xml, &name, check);
        }
        xml.push_str("  </testsuite>\n");
    }

    /// Where and how the run was measured, and what qualifies the verdict.
    fn properties(&self, verdict: &Verdict) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if let Some(run) = self.run {
            let h = &run.host;
            out.push(("host", h.hostname.clone()));
            out.push(("kernel", h.kernel_release.clone()));
            let model = serde_json::to_value(h.preemption_model).ok();
            out.push(("preemption", model.as_ref().and_then(|m| m.as_str()).unwrap_or("unknown").to_string()));
            out.push(("machine", h.machine.clone()));
            out.push(("cpu_model", h.cpu_model.clone()));
            if h.virtualization.guest {
                out.push(("virtualization", h.virtualization.hypervisor.clone().unwrap_or_else(|| "guest".into())));
            }
            // The evidence's size: every sample of every metric, CPU and scenario.
            let samples: u64 = run.measurements.iter().map(|m| m.count).sum();
            out.push(("samples", samples.to_string()));
            out.push(("duration_s", seconds(finite(run.duration_s))));
            out.push(("start_time", run.start_time.clone()));
            let commit = run.tool.commit.as_ref().map(|c| format!(" ({c})")).unwrap_or_default();
            out.push(("rtlab_version", format!("{}{commit}", run.tool.version)));
            out.push(("command_line", run.command_line.join(" ")));
            if let Some(imported) = &run.imported {
                out.push(("imported_from", imported.from.clone()));
            }
        }
        out.push(("verdict", verdict.summary.clone()));
        for caveat in &verdict.caveats {
            out.push(("caveat", caveat.clone()));
        }
        out
    }
}

fn write_case(xml: &mut String, classname: &str, check: &Check) {
    let name = format!("{} · {}", check.requirement.text, check.scenario);
    let _ = writeln!(
        xml,
        "    <testcase name=\"{}\" classname=\"{}\" time=\"{}\">",
        attribute(&name),
        attribute(classname),
        seconds(finite(check.duration_s))
    );
    // The evidence: in the failure or error element, else as the test's output.
    let evidence = text(&evidence(check));
    let _ = match outcome(check) {
        Outcome::Passed => writeln!(xml, "      <system-out>{evidence}</system-out>"),
        Outcome::Failed { message } => writeln!(
            xml,
            "      <failure message=\"{}\" type=\"requirement-not-met\">{evidence}</failure>",
            attribute(&message)
        ),
        Outcome::Error { message, kind } => {
            writeln!(xml, "      <error message=\"{}\" type=\"{kind}\">{evidence}</error>", attribute(&message))
        }
    };
    xml.push_str("    </testcase>\n");
}

/// The check's evidence, one fact a line (what `rtlab report` shows under the verdict).
fn evidence(check: &Check) -> String {
    let mut lines = vec![format!("requirement: {}", check.requirement.text)];
    lines.push(format!("run: {}, scenario: {}", check.run_label, check.scenario));
    if let Some(measured) = check.measured_ns {
        lines.push(format!("measured: {} ({measured} ns)", us(measured)));
    }
    if let Some(why) = &check.undecided {
        lines.push(format!("undecided: {why}"));
    }
    lines.push(format!("bound: < {} ({} ns)", format_bound(check.requirement.bound_ns), check.requirement.bound_ns));
    if let Some(margin) = check.margin_ns {
        lines.push(format!("margin: {} ({margin} ns; negative = exceeded)", us(margin)));
    }
    lines.push(format!("samples: {} in {} s", check.samples, seconds(finite(check.duration_s))));
    lines.push(format!("samples at or above the bound: {}", check.samples_above_bound));
    if let Some(interval) = check.exceedance_interval_s {
        lines.push(format!("one sample at or above the bound every {} s", seconds(finite(interval))));
    }
    for note in &check.notes {
        lines.push(format!("note: {note}"));
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

/// ns as µs with the ns kept: "2992.961 µs".
fn us(ns: i64) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    let abs = ns.unsigned_abs();
    format!("{sign}{}.{:03} µs", abs / 1000, abs % 1000)
}

/// JUnit's `time`: seconds with millisecond precision.
fn seconds(s: f64) -> String {
    format!("{s:.3}")
}

/// A duration from run.json as JUnit can show it: hand-edited files may hold anything.
fn finite(s: f64) -> f64 {
    if s.is_finite() && s > 0.0 {
        s
    } else {
        0.0
    }
}

/// Text content: `&`, `<`, `>` escaped; characters XML 1.0 cannot hold replaced.
fn text(s: &str) -> String {
    escape(s, false)
}

/// An attribute value in double quotes: also `"` and `'`, and line breaks and tabs as
/// character references (an XML parser turns literal ones into spaces).
fn attribute(s: &str) -> String {
    escape(s, true)
}

fn escape(s: &str, in_attribute: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' if in_attribute => out.push_str("&quot;"),
            '\'' if in_attribute => out.push_str("&apos;"),
            '\n' if in_attribute => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\t' if in_attribute => out.push_str("&#9;"),
            '\t' | '\n' => out.push(c),
            // XML 1.0 allows no other control characters, not even as references.
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_covers_markup_quotes_and_control_characters() {
        assert_eq!(attribute("a<b & \"c\" 'd' µs\n"), "a&lt;b &amp; &quot;c&quot; &apos;d&apos; µs&#10;");
        assert_eq!(text("x < 1\n\u{1}"), "x &lt; 1\n\u{FFFD}");
    }

    #[test]
    fn microseconds_keep_every_nanosecond() {
        assert_eq!(us(2_992_961), "2992.961 µs");
        assert_eq!(us(-7), "-0.007 µs");
        assert_eq!(us(500_000), "500.000 µs");
    }
}
