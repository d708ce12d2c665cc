//! `rtlab gate BASELINE CANDIDATE` and `rtlab run --gate BASELINE`: the bisect gate. The
//! judging is rtlab_analysis::gate's (on what rtlab_results::gate reads from the runs), the
//! text rtlab_report::gate's; here are the flags, the files and the exit codes.
//!
//! Exit codes, for `git bisect run` (docs/gate.md): 0 good, 1 bad, 125 cannot judge the
//! candidate (skip: it is unreadable or absent, disturbed, too short, censored, or the run
//! could not measure), 2 bad input (flags, or a baseline that is unreadable or cannot serve),
//! 130 interrupted. `git bisect run` takes 2 as bad: a bisect script maps it to an abort.

use crate::errors::usage;
use clap::Args;
use rtlab_analysis::gate::{parse_share, parse_statistics, GateReport, Limits, Tolerance};
use rtlab_results::gate::{check_baseline, judge, GateSettings};
use rtlab_results::run::RunResult;
use std::path::{Path, PathBuf};

#[derive(Debug, Args)]
pub struct GateArgs {
    /// The baseline: a results directory or run.json (the known-good run). Unreadable, or
    /// unfit to judge against (too few samples, censored, disturbed): exit 2
    #[arg(value_name = "BASELINE")]
    pub baseline: PathBuf,
    /// The candidate: a results directory or run.json. Unreadable or absent: exit 125
    /// (cannot judge), as for a disturbed one
    #[arg(value_name = "CANDIDATE")]
    pub candidate: PathBuf,
    #[command(flatten)]
    pub options: GateOptions,
}

/// The gate's options; `rtlab run --gate` has them as --gate-tolerance, --gate-stat, ...
#[derive(Debug, Clone, Default, Args)]
pub struct GateOptions {
    /// How much worse than the baseline a statistic may be: a percentage of the baseline's
    /// value (10%), a fraction (0.1) or a time (50us) [default: 10%]
    #[arg(long, value_name = "TOLERANCE")]
    pub tolerance: Option<String>,
    /// The statistics judged, separated by commas: max and percentiles (p99, p99.9, ...)
    /// [default: p99.9,max]
    #[arg(long, value_name = "STATS")]
    pub stat: Option<String>,
    /// The metric judged (a probe name means its main metric) [default: the main metric of
    /// the baseline's first probe]
    #[arg(long)]
    pub metric: Option<String>,
    /// The most steal (time the hypervisor took) on a measured CPU in any scenario for a run
    /// to be judged [default: 5%]
    #[arg(long, value_name = "SHARE")]
    pub max_steal: Option<String>,
    /// The most RT throttling on a CPU (recorded by the noise probe) for a run to be judged
    /// [default: 1%]
    #[arg(long, value_name = "SHARE")]
    pub max_throttling: Option<String>,
}

/// `rtlab run --gate BASELINE` and the gate's options, named for `run`.
#[derive(Debug, Clone, Default, Args)]
pub struct RunGateArgs {
    /// After saving the run, judge it against this baseline run (a results directory or
    /// run.json) as `rtlab gate BASELINE` does: the exit code is the gate's (0 good, 1 bad,
    /// 125 cannot judge, also when the run could not measure); the baseline is checked first
    #[arg(long, value_name = "BASELINE")]
    pub gate: Option<PathBuf>,
    /// With --gate: `rtlab gate --tolerance` [default: 10%]
    #[arg(long, value_name = "TOLERANCE", requires = "gate")]
    pub gate_tolerance: Option<String>,
    /// With --gate: `rtlab gate --stat` [default: p99.9,max]
    #[arg(long, value_name = "STATS", requires = "gate")]
    pub gate_stat: Option<String>,
    /// With --gate: `rtlab gate --metric` [default: the baseline's main metric]
    #[arg(long, value_name = "METRIC", requires = "gate")]
    pub gate_metric: Option<String>,
    /// With --gate: `rtlab gate --max-steal` [default: 5%]
    #[arg(long, value_name = "SHARE", requires = "gate")]
    pub gate_max_steal: Option<String>,
    /// With --gate: `rtlab gate --max-throttling` [default: 1%]
    #[arg(long, value_name = "SHARE", requires = "gate")]
    pub gate_max_throttling: Option<String>,
}

impl GateOptions {
    /// The gate's options of `rtlab run` (`--gate-tolerance`, ...).
    pub fn of_run(args: &RunGateArgs) -> GateOptions {
        GateOptions {
            tolerance: args.gate_tolerance.clone(),
            stat: args.gate_stat.clone(),
            metric: args.gate_metric.clone(),
            max_steal: args.gate_max_steal.clone(),
            max_throttling: args.gate_max_throttling.clone(),
        }
    }

    /// The settings, every default made explicit; a bad value is bad usage (exit 2).
    pub fn settings(&self, flag_prefix: &str) -> anyhow::Result<GateSettings> {
        let mut settings = GateSettings { metric: self.metric.clone(), ..GateSettings::default() };
        let flag = |name: &str| format!("--{flag_prefix}{name}");
        if let Some(t) = &self.tolerance {
            settings.tolerance = Tolerance::parse(t).map_err(|e| usage(format!("{}: {e}", flag("tolerance"))))?;
        }
        if let Some(s) = &self.stat {
            settings.statistics = parse_statistics(s).map_err(|e| usage(format!("{}: {e}", flag("stat"))))?;
        }
        let share = |text: &Option<String>, name: &str, default: f64| -> anyhow::Result<f64> {
            text.as_deref().map_or(Ok(default), |t| parse_share(t).map_err(|e| usage(format!("{} {e}", flag(name)))))
        };
        settings.limits = Limits {
            max_steal: share(&self.max_steal, "max-steal", settings.limits.max_steal)?,
            max_throttling: share(&self.max_throttling, "max-throttling", settings.limits.max_throttling)?,
        };
        Ok(settings)
    }
}

/// A baseline ready to judge against: the run, the metric, the settings.
pub struct Baseline {
    run: RunResult,
    metric: String,
    settings: GateSettings,
}

impl Baseline {
    /// Reads and checks the baseline: unreadable, or unfit to judge against, is bad input
    /// (exit 2), said before anything is measured.
    pub fn load(path: &Path, settings: GateSettings) -> anyhow::Result<Baseline> {
        let run = RunResult::load(path).map_err(|e| usage(format!("the baseline {}: {e}", path.display())))?;
        let metric = check_baseline(&run, &settings).map_err(|problems| {
            usage(format!(
                "the baseline {} cannot be judged against: {}; measure a longer or undisturbed baseline, or choose \
                 other statistics (--stat)",
                path.display(),
                problems.join("; ")
            ))
        })?;
        Ok(Baseline { run, metric, settings })
    }

    /// The candidate judged.
    pub fn judge(&self, candidate: &RunResult) -> GateReport {
        judge(&self.run, candidate, &self.metric, &self.settings)
    }

    /// The answer for a candidate that cannot be read (or a run that could not measure).
    pub fn unjudgeable(&self, why: String) -> GateReport {
        GateReport::new(&self.metric, self.settings.tolerance, Vec::new(), vec![why])
    }
}

impl Baseline {
    /// `rtlab run --gate BASELINE`'s baseline, checked; None without --gate.
    pub fn of_run(args: &RunGateArgs) -> anyhow::Result<Option<Baseline>> {
        let Some(path) = &args.gate else { return Ok(None) };
        Baseline::load(path, GateOptions::of_run(args).settings("gate-")?).map(Some)
    }
}

/// `rtlab run --gate`: a run that could not measure (exit 3) cannot be judged (125); bad
/// usage stays 2. Without --gate, the error as it is.
pub fn after_failed_run(gate: Option<&Baseline>, error: anyhow::Error) -> anyhow::Result<u8> {
    let Some(gate) = gate else { return Err(error) };
    if crate::errors::exit_code_of(&error) != crate::errors::EXIT_ENVIRONMENT {
        return Err(error);
    }
    eprintln!("rtlab: error: {}", crate::errors::one_line(&error));
    let report = gate.unjudgeable(format!("the run could not measure: {}", crate::errors::one_line(&error)));
    crate::print(&rtlab_report::gate::gate_text(&report))?;
    Ok(report.answer.exit_code())
}

/// `rtlab run --gate`, after the run was saved: an interruption is 130 (it stops `git
/// bisect run`), else the gate's answer (a scenario not measured under its loads cannot be
/// judged). With --json the gate's text goes to stderr, so stdout stays JSON.
pub fn after_run(gate: &Baseline, result: &RunResult, json: bool) -> anyhow::Result<u8> {
    if result.interrupted {
        return Ok(crate::errors::EXIT_INTERRUPTED);
    }
    let report = gate.judge(result);
    let text = rtlab_report::gate::gate_text(&report);
    if json {
        eprint!("{text}");
    } else {
        crate::print(&text)?;
    }
    Ok(report.answer.exit_code())
}

/// `rtlab gate BASELINE CANDIDATE`.
pub fn cmd_gate(args: &GateArgs) -> anyhow::Result<u8> {
    let baseline = Baseline::load(&args.baseline, args.options.settings("")?)?;
    let report = match RunResult::load(&args.candidate) {
        Ok(candidate) => baseline.judge(&candidate),
        // The candidate is what a bisect step produced: if it is missing or unreadable, this
        // step could not be tested (125), which is not the same as bad (1) or misuse (2).
        Err(e) => baseline.unjudgeable(format!("cannot read the candidate {}: {e}", args.candidate.display())),
    };
    crate::print(&rtlab_report::gate::gate_text(&report))?;
    Ok(report.answer.exit_code())
}
