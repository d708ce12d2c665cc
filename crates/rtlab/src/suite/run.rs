//! `rtlab suite NAME`: every condition's plan made before anything runs (the same
//! `RunPlan::from_args` and `runner::run` as `rtlab run --experiment`), the conditions run
//! in order by rtlab-suite's [`run_conditions`] through this binary's lifecycle runner
//! ([`RunnerBackend`]), each in its own results directory inside the suite directory, then
//! suite.json, report.html and the tables on the terminal.

use super::plan::{describe_keys, plan_summary, run_args};
use crate::cli::{RunArgs, SuiteArgs};
use crate::errors::{self, exit_code_of, usage, EXIT_INTERRUPTED, EXIT_NOT_MET, EXIT_OK, EXIT_USAGE};
use crate::experiment::{check_label, label_from, RunPlan};
use anyhow::Context;
use rtlab_results::host::SystemInfo;
use rtlab_results::suite::LoadedSuite;
use rtlab_suite::file::{
    format_duration, is_missing_program, missing_capability, Mode, SuiteFile, SIMULATED_HAS_NO_SPLIT,
};
use rtlab_suite::run::{
    run_conditions, suite_record, ConditionBackend, ConditionOutcome, PreparedCondition, SuiteContext, SuiteOutcome,
};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The conditions' plans, run by [`crate::runner::run`] with report.html beside each run.json.
struct RunnerBackend {
    plans: Vec<Option<RunPlan>>,
    /// The remote probe's δ, measured once (the first condition that calibrates it, or
    /// --delta) and held for every later remote condition, as Regnier held δ̄; stored as the
    /// suite's delta.json.
    held_delta: Option<rtlab_results::delta::StoredDelta>,
    suite_dir: std::path::PathBuf,
    host: SystemInfo,
    command_line: Vec<String>,
    stop: Arc<AtomicBool>,
    quiet: bool,
}

impl RunnerBackend {
    /// Holds the δ a condition calibrated (its delta.json) for the later remote conditions,
    /// and stores it as the suite's own delta.json (`--delta SUITE_DIR` holds it again).
    fn hold_delta(&mut self, run_dir: &std::path::Path) {
        match rtlab_results::delta::StoredDelta::read(run_dir) {
            Ok(delta) => {
                if let Err(why) = delta.write(&self.suite_dir) {
                    eprintln!("rtlab: warning: the suite's delta.json was not written: {why}");
                }
                self.held_delta = Some(delta);
            }
            Err(why) => eprintln!("rtlab: warning: δ is calibrated again by the next remote condition: {why}"),
        }
    }
}

impl ConditionBackend for RunnerBackend {
    fn run(&mut self, index: usize) -> ConditionOutcome {
        let Some(plan) = &self.plans[index] else {
            return ConditionOutcome::Failed("the condition has no plan".into());
        };
        let remote = plan.probes.contains(&crate::probe_plan::ProbeChoice::Remote);
        let calibrates = remote && crate::probe_build::given_delta(plan).is_none();
        let held;
        let plan = match (&self.held_delta, calibrates) {
            (Some(delta), true) => {
                let mut with_delta = plan.clone();
                with_delta.probe_settings.delta_stored = Some(delta.clone());
                held = with_delta;
                &held
            }
            _ => plan,
        };
        // Calibrated here only when nothing was held yet.
        let calibrates = calibrates && self.held_delta.is_none();
        let mut missing = Vec::new();
        let mut outcome = crate::runner::run(plan, self.host.clone(), self.command_line.clone(), self.stop.clone());
        // The split refused (no root, kernel tracing unusable: `rtlab run --split`'s own
        // check, before anything is measured) or lost while running: the condition runs
        // again without it and measures everything else; its split cells say why not.
        let mut ran = plan.clone();
        if let Err(e) = &outcome {
            let message = errors::one_line(e);
            if plan.split && message.starts_with("--split") && !self.stop_requested() {
                missing.extend(missing_capability("split", Some(&split_reason(&message))).flatten());
                if !self.quiet {
                    let _ = crate::print("The split is unavailable: measuring without it (why: below)\n");
                }
                // What the refused attempt left (the split's per-sample files).
                for leftover in ["samples", "trace"] {
                    let _ = std::fs::remove_dir_all(plan.output.join(leftover));
                }
                ran.split = false;
                outcome = crate::runner::run(&ran, self.host.clone(), self.command_line.clone(), self.stop.clone());
            }
        }
        if calibrates && outcome.is_ok() {
            self.hold_delta(&ran.output);
        }
        match outcome {
            Ok(finished) => {
                if let Err(why) = crate::run_report::write_report_html(&finished.result, &ran.output) {
                    eprintln!("rtlab: warning: {}: report.html was not written: {why}", ran.output.display());
                }
                ConditionOutcome::Ran {
                    result: Box::new(finished.result),
                    failed_to_load: finished.failed_to_load,
                    missing,
                }
            }
            Err(e) => ConditionOutcome::Failed(errors::one_line(&e)),
        }
    }

    fn stop_requested(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    fn progress(&mut self, line: &str) {
        if !self.quiet {
            let _ = crate::print(line);
        }
    }
}

pub fn run_suite(suite: &SuiteFile, mode: Mode, args: &SuiteArgs) -> anyhow::Result<u8> {
    let simulated = args.simulate.is_some();
    let host = crate::runner::host_of(args.simulate);
    let now = chrono::Local::now();
    let label = match &args.label {
        Some(l) => {
            check_label(l)?;
            l.clone()
        }
        None => label_from(&host.hostname),
    };
    let dir = args.output.clone().unwrap_or_else(|| {
        PathBuf::from("results").join(format!("{}-{}-{label}", now.format("%Y%m%d-%H%M%S"), suite.info.name))
    });
    if dir.join("suite.json").exists() {
        return Err(usage(format!("--output {}: already holds a suite.json; choose another directory", dir.display())));
    }

    // A simulated run has no interrupt/activation split: a condition that needs it runs
    // without it (its split cells "not measured" with this reason, everything else measured;
    // the suite exits 3). On a real machine the runner's own check decides, when the
    // condition runs (RunnerBackend).
    let split_unavailable = simulated.then(|| SIMULATED_HAS_NO_SPLIT.to_string());

    // Every condition's plan before anything runs: a usage error anywhere stops here (exit 2).
    let mut prepared = Vec::new();
    let mut plans = Vec::new();
    for c in &suite.conditions {
        let run_label = format!("{label}-{}", c.name);
        check_label(&run_label).map_err(|_| {
            usage(format!("--label {label:?}: with the condition \"-{}\" it is longer than 64 characters", c.name))
        })?;
        let output = dir.join(&c.name);
        if output.join("run.json").exists() {
            return Err(usage(format!("--output {}: already holds a run of {:?}", dir.display(), c.name)));
        }
        let base = RunArgs {
            label: Some(run_label.clone()),
            output: Some(output),
            quiet: args.quiet,
            simulate: args.simulate,
            ..RunArgs::default()
        };
        if c.needs.iter().any(|n| n == "station") && args.station.is_none() {
            prepared.push(PreparedCondition {
                run_label,
                summary: describe_keys(c, mode),
                cannot_run: None,
                gaps: Vec::new(),
                not_run: Some(rtlab_suite::file::NEEDS_STATION.to_string()),
            });
            plans.push(None);
            continue;
        }
        let with_station = args.station.is_some() && c.keys_with_station(mode).is_some();
        let mut condition_args = if with_station {
            crate::suite::plan::run_args_with_station(c, mode, base)
        } else {
            run_args(c, mode, base)
        }
        .map_err(|e| e.context(format!("suite {}", suite.source)))?;
        if with_station || c.needs.iter().any(|n| n == "station") {
            condition_args.station = args.station.clone();
            condition_args.key = args.key.clone();
        }
        // --delta: every remote condition holds it (a condition's own `delta` key wins).
        if args.delta.is_some() && condition_args.delta.is_none() && condition_uses_remote(&condition_args) {
            condition_args.delta = args.delta.clone();
        }
        if split_unavailable.is_some() {
            condition_args.split = false;
        }
        let plan = match RunPlan::from_args(&condition_args, &host.online_cpus, &host.hostname, now) {
            Ok(plan) => Ok(plan),
            // A load's program missing here: the file was checked, this is the machine.
            Err(e) if is_missing_program(&errors::one_line(&e)) => Err(errors::one_line(&e)),
            Err(e) if exit_code_of(&e) == EXIT_USAGE => {
                return Err(e.context(format!("suite {}: condition {:?}", suite.source, c.name)))
            }
            // The environment (a load's program missing): this condition fails, the others run.
            Err(e) => Err(errors::one_line(&e)),
        };
        let summary = match &plan {
            Ok(p) => plan_summary(p),
            Err(_) => describe_keys(c, mode),
        };
        let gaps =
            c.needs.iter().filter_map(|n| missing_capability(n, split_unavailable.as_deref()).flatten()).collect();
        prepared.push(PreparedCondition {
            run_label,
            summary,
            cannot_run: plan.as_ref().err().cloned(),
            gaps,
            not_run: None,
        });
        plans.push(plan.ok());
    }
    std::fs::create_dir_all(&dir)
        .map_err(|e| usage(format!("--output {}: cannot create the directory: {e}", dir.display())))?;

    // First SIGINT/SIGTERM: stop the running condition, keep what was measured. Second: exit now.
    let stop = crate::runner::stop_on_signals()?;
    let mut backend = RunnerBackend {
        plans,
        held_delta: None,
        suite_dir: dir.clone(),
        host: host.clone(),
        command_line: std::env::args().collect(),
        stop,
        quiet: args.quiet,
    };
    if mode == Mode::Quick {
        backend.progress(&format!(
            "Suite {} ({}): quick: durations scaled down, not the paper's sample counts\n",
            suite.info.name, label
        ));
    } else {
        backend.progress(&format!(
            "Suite {} ({label}): about {}\n",
            suite.info.name,
            format_duration(suite.estimate(mode))
        ));
    }
    let start_time = chrono::Local::now();
    let conditions = run_conditions(suite, &prepared, &mut backend);
    let end_time = chrono::Local::now();

    let (start_time, end_time) = crate::runner::time_texts(simulated, start_time, end_time);
    let context = SuiteContext {
        label: &label,
        mode,
        host: &host,
        simulated,
        start_time,
        end_time,
        tool_version: crate::cli::VERSION,
    };
    let record = suite_record(suite, &context, &conditions)?;
    record.save(&dir).with_context(|| format!("cannot write suite.json to {}", dir.display()))?;
    let loaded = LoadedSuite { dir: dir.clone(), record, runs: conditions.runs };
    let report = rtlab_suite::report::html(std::slice::from_ref(&loaded), &[String::new()])
        .map_err(anyhow::Error::from)
        .and_then(|html| {
            let path = dir.join("report.html");
            rtlab_results::run::write_atomically(&path, html.as_bytes())?;
            Ok(path)
        });
    if !args.quiet {
        let mut text = String::from("\n");
        text.push_str(&rtlab_suite::report::terminal_text(std::slice::from_ref(&loaded))?);
        if let Ok(path) = &report {
            text.push_str(&format!("Report: {}\n", path.display()));
        }
        text.push_str(&format!("Results: {}\n", dir.join("suite.json").display()));
        crate::print(&text)?;
    } else if let Some(v) = &loaded.record.verdict {
        crate::print(&format!("Verdict: {}\n", v.summary))?;
    }
    if let Err(e) = &report {
        eprintln!("rtlab: warning: report.html was not written: {}", errors::one_line(e));
    }
    match SuiteOutcome::of(&loaded.record) {
        SuiteOutcome::Incomplete(failed) => Err(errors::environment(format!(
            "suite {}: not every condition measured what it asks: {}; the rest is in {}",
            loaded.record.suite.name,
            failed.join("; "),
            dir.join("suite.json").display()
        ))),
        SuiteOutcome::Interrupted => Ok(EXIT_INTERRUPTED),
        SuiteOutcome::Degraded(conditions) => Err(errors::environment(format!(
            "suite {}: conditions ran without a capability they need: {}; everything else is measured, in {}",
            loaded.record.suite.name,
            conditions.join("; "),
            dir.join("suite.json").display()
        ))),
        SuiteOutcome::NotMet => Ok(EXIT_NOT_MET),
        SuiteOutcome::Complete => Ok(EXIT_OK),
    }
}

/// The split's error message as a reason after "traces the kernel: ": "--split needs
/// kernel tracing, which is not usable here: tracefs: not mounted ..." reads "tracefs: not
/// mounted ...".
fn split_reason(message: &str) -> String {
    let prefixes =
        ["--split needs kernel tracing, which is not usable here: ", "--split needs kernel tracing: ", "--split: "];
    let reason = prefixes.iter().find_map(|p| message.strip_prefix(p)).unwrap_or(message);
    reason.to_string()
}

/// Whether a condition's run has the remote probe (`--delta` is refused by the others).
fn condition_uses_remote(args: &RunArgs) -> bool {
    args.probe.as_deref().is_some_and(|p| p.split(',').any(|p| p.trim() == "remote"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn split_reasons_drop_the_flag() {
        use super::split_reason;
        assert_eq!(
            split_reason("--split needs kernel tracing, which is not usable here: tracefs: needs root"),
            "tracefs: needs root"
        );
        assert_eq!(
            split_reason("--split: tracefs is not mounted at /sys/kernel/tracing"),
            "tracefs is not mounted at /sys/kernel/tracing"
        );
        assert_eq!(split_reason("--split traces the kernel"), "--split traces the kernel");
    }
}
