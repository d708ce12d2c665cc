//! `rtlab report --format lava` (runs and suite directories): the test cases of
//! rtlab_formats::export::lava emitted through LAVA's own `lava-test-case` and
//! `lava-test-set` when they are on PATH (inside a LAVA test shell), else printed as the
//! signal lines those scripts print; with --output, the signal lines go to that file.
//! docs/lava.md.

use crate::cli::ReportArgs;
use crate::errors;
use rtlab_formats::export::lava::{self, Line, PwcetFigure};
use rtlab_results::set::{ReportSet, SourcedRun};
use rtlab_results::suite::LoadedSuite;
use std::path::{Path, PathBuf};

/// The test cases of saved runs.
pub fn report_runs(args: &ReportArgs, set: &ReportSet) -> anyhow::Result<()> {
    let pwcet = pwcet_figures(set)?;
    emit(args.output.as_deref(), &lava::run_lines(set, &pwcet))
}

/// The test cases of suite directories: each condition's run with its pWCETs.
pub fn report_suites(args: &ReportArgs, suites: &[LoadedSuite]) -> anyhow::Result<()> {
    let mut pwcet = Vec::new();
    for suite in suites {
        for run in suite.runs.iter().flatten() {
            let set = ReportSet {
                runs: vec![SourcedRun { source: suite.dir.display().to_string(), run: run.clone() }],
                verdict: None,
            };
            pwcet.extend(pwcet_figures(&set)?);
        }
    }
    emit(args.output.as_deref(), &lava::suite_lines(suites, &pwcet))
}

/// The pWCET of every metric and scenario the report's tail section analyses, at the
/// probabilities of its table: the value where it can be quoted, else why not.
fn pwcet_figures(set: &ReportSet) -> anyhow::Result<Vec<PwcetFigure>> {
    let mut out = Vec::new();
    for tail in rtlab_report::pwcet::report_tails(set)? {
        for (_, configuration, analysis) in &tail.configurations {
            for &probability in &tail.config.probabilities {
                let value = match &analysis.outcome {
                    Ok(a) => match a.defensible_pwcet_ns(probability) {
                        Ok(Some(ns)) => Ok(ns),
                        Ok(None) => Err(format!("the fit gives no pWCET at {probability:e}")),
                        Err(refusal) => Err(format!("pWCET {refusal}")),
                    },
                    Err(why) => Err(why.clone()),
                };
                out.push(PwcetFigure {
                    run_label: configuration.run.label.clone(),
                    scenario: configuration.scenario.to_string(),
                    metric: tail.metric.clone(),
                    probability,
                    value,
                });
            }
        }
    }
    Ok(out)
}

/// To `output` as signal lines; else through LAVA's scripts when both are on PATH; else as
/// signal lines on stdout.
fn emit(output: Option<&Path>, lines: &[Line]) -> anyhow::Result<()> {
    if let Some(path) = output {
        return rtlab_results::run::write_atomically(path, lava::signals(lines).as_bytes())
            .map_err(|e| errors::output_error(true, format!("cannot write the LAVA results: {e}")));
    }
    let scripts = (on_path("lava-test-case"), on_path("lava-test-set"));
    let (Some(case_script), Some(set_script)) = scripts else {
        return crate::print(&lava::signals(lines));
    };
    for line in lines {
        let Some((script, args)) = line.command() else {
            crate::print(&format!("{}\n", line.signal()))?;
            continue;
        };
        if let Line::Case(case) = line {
            if let Some(note) = case.reason_line() {
                crate::print(&format!("{note}\n"))?;
            }
        }
        let program = if script == "lava-test-case" { &case_script } else { &set_script };
        // The script prints to the same stdout: what rtlab printed must come first.
        let status = std::process::Command::new(program)
            .args(&args)
            .status()
            .map_err(|e| errors::environment(format!("cannot run {}: {e}", program.display())))?;
        if !status.success() {
            return Err(errors::environment(format!(
                "{} {} failed ({status}): LAVA did not record this result; is LAVA_RESULT_DIR writable?",
                program.display(),
                args.join(" ")
            )));
        }
    }
    Ok(())
}

/// The executable `name` in PATH, as the shell would find it.
fn on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(name)).find(|candidate| {
        std::fs::metadata(candidate).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}
