//! Running a suite: one `rtlab run` per condition, in order, each in its own results
//! directory inside the suite directory (the same `RunPlan::from_args` and `runner::run` as
//! `rtlab run --experiment`), then suite.json, report.html and the tables on the terminal.
//!
//! A condition that cannot run (a load's program missing, a probe unavailable) is recorded
//! as failed and the others still run; SIGINT stops the running condition, keeps what was
//! measured, and marks the rest not run.

use super::file::{missing_capability, Condition, Mode, SuiteFile};
use crate::cli::{RunArgs, SuiteArgs};
use crate::errors::{self, exit_code_of, usage, EXIT_INTERRUPTED, EXIT_NOT_MET, EXIT_OK, EXIT_USAGE};
use crate::experiment::{check_label, label_from, RunPlan};
use anyhow::Context;
use rtlab_analysis::units::thousands;
use rtlab_results::host::SystemInfo;
use rtlab_results::run::RunResult;
use rtlab_results::suite::{ConditionRecord, ConditionStatus, LoadedSuite, SuiteRecord, SUITE_SCHEMA};
use rtlab_results::verdict::Verdict;
use rtlab_suite::measure::{measure_table, ConditionRun};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Instant;

/// One condition, ready to run (or already known not to be able to).
struct Prepared<'a> {
    condition: &'a Condition,
    run_label: String,
    plan: Result<RunPlan, String>,
    /// What it runs, in a line.
    summary: String,
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

    // Every condition's plan before anything runs: a usage error anywhere stops here (exit 2).
    let mut prepared = Vec::new();
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
        let run_args = c.run_args(mode, base).map_err(|e| e.context(format!("suite {}", suite.source)))?;
        let plan = match RunPlan::from_args(&run_args, &host.online_cpus, &host.hostname, now) {
            Ok(plan) => Ok(plan),
            // A load's program missing here: the file was checked, this is the machine.
            Err(e) if super::file::is_missing_program(&errors::one_line(&e)) => Err(errors::one_line(&e)),
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
        prepared.push(Prepared { condition: c, run_label, plan, summary });
    }
    std::fs::create_dir_all(&dir)
        .map_err(|e| usage(format!("--output {}: cannot create the directory: {e}", dir.display())))?;

    // First SIGINT/SIGTERM: stop the running condition, keep what was measured. Second: exit now.
    let stop = crate::runner::stop_on_signals()?;

    let say = |text: &str| {
        if !args.quiet {
            let _ = crate::print(text);
        }
    };
    if mode == Mode::Quick {
        say(&format!(
            "Suite {} ({}): quick: durations scaled down, not the paper's sample counts\n",
            suite.info.name, label
        ));
    } else {
        say(&format!(
            "Suite {} ({label}): about {}\n",
            suite.info.name,
            super::file::format_duration(suite.estimate(mode).unwrap_or(0))
        ));
    }
    let start_time = chrono::Local::now();
    let command_line: Vec<String> = std::env::args().collect();
    let count = prepared.len();
    let mut records = Vec::new();
    let mut runs: Vec<Option<RunResult>> = Vec::new();
    for (i, p) in prepared.iter().enumerate() {
        let c = p.condition;
        let gaps: Vec<String> =
            c.needs.iter().filter_map(|n| missing_capability(n, args.simulate.is_some()).flatten()).collect();
        let mut record = ConditionRecord {
            name: c.name.clone(),
            title: c.title.clone(),
            directory: c.name.clone(),
            run_label: p.run_label.clone(),
            status: ConditionStatus::NotRun,
            reason: None,
            needs: c.needs.clone(),
            gaps,
            plan: p.summary.clone(),
        };
        let mut run = None;
        if stop.load(Ordering::SeqCst) {
            record.reason = Some("the suite was interrupted before this condition".into());
        } else {
            say(&format!("\n[{}/{count}] {}: {} ({})\n", i + 1, c.name, c.title, p.summary));
            let started = Instant::now();
            match &p.plan {
                Err(why) => {
                    record.status = ConditionStatus::Failed;
                    record.reason = Some(why.clone());
                }
                Ok(plan) => match crate::runner::run(plan, host.clone(), command_line.clone(), stop.clone()) {
                    Ok(finished) => {
                        record.status = if finished.failed_to_load.is_some() || finished.result.interrupted {
                            ConditionStatus::Incomplete
                        } else {
                            ConditionStatus::Done
                        };
                        record.reason = finished.failed_to_load.clone().or_else(|| {
                            finished
                                .result
                                .interrupted
                                .then(|| "interrupted: it holds what was measured until then".into())
                        });
                        run = Some(finished.result);
                    }
                    Err(e) => {
                        record.status = ConditionStatus::Failed;
                        record.reason = Some(errors::one_line(&e));
                    }
                },
            }
            let outcome = match (&record.status, &record.reason) {
                (ConditionStatus::Done, _) => format!("done in {:.0} s", started.elapsed().as_secs_f64()),
                (s, Some(why)) => {
                    format!("{}: {why}", if *s == ConditionStatus::Failed { "FAILED" } else { "incomplete" })
                }
                (_, None) => "stopped".into(),
            };
            say(&format!("[{}/{count}] {}: {outcome}\n", i + 1, c.name));
        }
        records.push(record);
        runs.push(run);
    }
    let end_time = chrono::Local::now();
    let interrupted = stop.load(Ordering::SeqCst);

    let record =
        suite_record(suite, mode, &label, &records, &runs, &host, interrupted, simulated, (start_time, end_time))?;
    record.save(&dir).with_context(|| format!("cannot write suite.json to {}", dir.display()))?;
    let loaded = LoadedSuite { dir: dir.clone(), record, runs };
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
    exit_code(&loaded.record, &dir)
}

/// Precedence as `rtlab run`'s: a condition that could not measure what was asked (3), then
/// an interruption (130), then the verdict (1).
fn exit_code(record: &SuiteRecord, dir: &Path) -> anyhow::Result<u8> {
    let failed: Vec<String> = record
        .conditions
        .iter()
        .filter(|c| {
            c.status == ConditionStatus::Failed || (c.status == ConditionStatus::Incomplete && !record.interrupted)
        })
        .map(|c| format!("{} ({})", c.name, c.reason.as_deref().unwrap_or("failed")))
        .collect();
    if !failed.is_empty() {
        return Err(errors::environment(format!(
            "suite {}: not every condition measured what it asks: {}; the rest is in {}",
            record.suite.name,
            failed.join("; "),
            dir.join("suite.json").display()
        )));
    }
    Ok(if record.interrupted {
        EXIT_INTERRUPTED
    } else if record.verdict.as_ref().is_some_and(|v| !v.met) {
        EXIT_NOT_MET
    } else {
        EXIT_OK
    })
}

#[allow(clippy::too_many_arguments)]
fn suite_record(
    suite: &SuiteFile,
    mode: Mode,
    label: &str,
    conditions: &[ConditionRecord],
    runs: &[Option<RunResult>],
    host: &SystemInfo,
    interrupted: bool,
    simulated: bool,
    (start, end): (chrono::DateTime<chrono::Local>, chrono::DateTime<chrono::Local>),
) -> anyhow::Result<SuiteRecord> {
    let condition_runs: Vec<ConditionRun> = conditions
        .iter()
        .zip(runs)
        .map(|(c, run)| ConditionRun {
            name: &c.name,
            run: run.as_ref(),
            missing: match c.status {
                ConditionStatus::Failed => {
                    Some(format!("the condition failed: {}", c.reason.as_deref().unwrap_or("?")))
                }
                ConditionStatus::NotRun => Some("not run: the suite was interrupted before it".into()),
                _ => None,
            },
            gaps: c.gaps.clone(),
        })
        .collect();
    let names = suite.names();
    let tables =
        suite.tables.iter().map(|t| measure_table(t, &names, &condition_runs, label)).collect::<Result<Vec<_>, _>>()?;
    let verdicts: Vec<&Verdict> = runs.iter().flatten().filter_map(|r| r.verdict.as_ref()).collect();
    let mut requirements: Vec<String> = Vec::new();
    for r in runs.iter().flatten().flat_map(|r| r.verdict.iter()).flat_map(|v| &v.checks) {
        if !requirements.contains(&r.requirement.text) {
            requirements.push(r.requirement.text.clone());
        }
    }
    let (start_text, end_text) = crate::runner::time_texts(simulated, start, end);
    Ok(SuiteRecord {
        schema: SUITE_SCHEMA.into(),
        suite: suite.info.clone(),
        label: label.to_string(),
        quick: mode == Mode::Quick,
        long: mode == Mode::Long,
        file: suite.source.clone(),
        file_text: suite.text.clone(),
        tool_version: crate::cli::VERSION.to_string(),
        start_time: start_text,
        end_time: end_text,
        interrupted,
        simulated,
        machine: machine_line(host),
        requirements,
        conditions: conditions.to_vec(),
        tables,
        figures: suite.figures.clone(),
        verdict: Verdict::combine(&verdicts),
    })
}

/// "host · kernel 6.18.0 (PREEMPT_DYNAMIC) · AMD EPYC · 2 CPUs · virtual machine (kvm)".
fn machine_line(host: &SystemInfo) -> String {
    let mut parts = vec![host.hostname.clone()];
    parts.push(format!("kernel {} ({})", host.kernel_release, rtlab_report::host::preemption_name(host)));
    if !host.cpu_model.is_empty() {
        parts.push(host.cpu_model.clone());
    }
    parts.push(format!("{} CPU{}", host.online_cpus.len(), if host.online_cpus.len() == 1 { "" } else { "s" }));
    if host.virtualization.guest {
        parts.push(match &host.virtualization.hypervisor {
            Some(h) => format!("virtual machine ({h})"),
            None => "virtual machine".into(),
        });
    }
    parts.join(" · ")
}

/// What one probe of the plan does, as it really runs: "timer every 10 ms", "jitter at
/// periods 100 µs, 1 ms", "sleep 50 ms" (the interval means nothing to the latter two).
fn probe_summary(plan: &RunPlan, probe: crate::probe_plan::ProbeChoice) -> String {
    use crate::probe_plan::ProbeChoice;
    use rtlab_analysis::units::format_period;
    let settings = &plan.probe_settings;
    let rates = |rates: &[f64]| rates.iter().map(|r| format!("{} Hz", format_rate(*r))).collect::<Vec<_>>().join(", ");
    match probe {
        ProbeChoice::Timer => format!("timer every {}", format_period(plan.interval_ns as i64)),
        ProbeChoice::Jitter => {
            let periods: Vec<String> = settings.periods_ns.iter().map(|p| format_period(*p as i64)).collect();
            format!("jitter at period{} {}", if periods.len() == 1 { "" } else { "s" }, periods.join(", "))
        }
        ProbeChoice::Sleep => {
            let discarded = match settings.sleep_discarded {
                0 => String::new(),
                n => format!(" (first {n} discarded)"),
            };
            format!("sleep {}{discarded}", format_period(settings.sleep_ns as i64))
        }
        ProbeChoice::Sweep => format!("sweep of {} at {}", settings.sweep_of, rates(&settings.sweep_rates_hz)),
        ProbeChoice::Taskset => "task set".into(),
        other => match settings.rates_hz.get(other.name()) {
            Some(rate) => format!("{} at {}", other.name(), rates(&[*rate])),
            None => other.name().to_string(),
        },
    }
}

/// "20", "0.5", "1000": a rate without a trailing ".0".
fn format_rate(hz: f64) -> String {
    if hz.fract() == 0.0 {
        thousands(hz as u64)
    } else {
        format!("{hz}")
    }
}

/// "timer every 10 ms on CPU 0, 10,000 samples, load idle"; "sleep 50 ms (first 2
/// discarded) on CPU 0, 300 samples, load disk-copy (exec:...)".
fn plan_summary(plan: &RunPlan) -> String {
    let probes: Vec<String> = plan.probes.iter().map(|&p| probe_summary(plan, p)).collect();
    let cpus: Vec<String> = plan.cpus.iter().map(|c| c.to_string()).collect();
    let amount = match (plan.samples, plan.duration_ns) {
        (Some(n), _) => format!("{} samples", thousands(n)),
        (None, Some(ns)) => super::file::format_duration(ns),
        (None, None) => String::new(),
    };
    let loads: Vec<String> = plan
        .scenarios
        .iter()
        .map(|s| if s.name == s.spec { s.name.clone() } else { format!("{} ({})", s.name, s.spec) })
        .collect();
    format!(
        "{} on CPU{} {}, {amount}, load {}",
        probes.join(" + "),
        if cpus.len() == 1 { "" } else { "s" },
        cpus.join(","),
        loads.join(", ")
    )
}

/// A condition whose plan could not be made: its keys, briefly.
fn describe_keys(c: &Condition, mode: Mode) -> String {
    let keys = c.keys(mode);
    ["probe", "interval", "samples", "duration", "load"]
        .iter()
        .filter_map(|k| keys.get(*k).map(|v| format!("{k} {v}")))
        .collect::<Vec<_>>()
        .join(", ")
}
