//! From parsed arguments to a validated experiment: every value checked and every default
//! made explicit before anything starts.

use crate::cli::{PolicyArg, RunArgs};
use crate::errors::usage;
use crate::plan_values::{
    parse_interval, resolve_cpus, DEFAULT_DURATION_NS, DEFAULT_LOADS, DEFAULT_PRIORITY, MAX_RUN_NS, MAX_SETTLE_NS,
};
use rtlab_analysis::requirement::{parse_requirement, Requirement};
use rtlab_analysis::units::parse_time_ns;
use rtlab_results::host::Policy;
use std::path::PathBuf;

/// One load scenario to measure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioPlan {
    /// As given: "idle", "regnier", "cpu+disk", or a preset of the experiment file.
    pub name: String,
    /// The loads to run: `name` itself, or what the experiment file's preset stands for.
    pub spec: String,
}

impl ScenarioPlan {
    /// "idle" is the scenario without loads.
    pub fn is_unloaded(&self) -> bool {
        self.spec.trim() == "idle"
    }
}

/// A validated `rtlab run`.
#[derive(Debug, Clone)]
pub struct RunPlan {
    /// Probes in the order measured in each scenario.
    pub probes: Vec<crate::probe_plan::ProbeChoice>,
    /// Their parameters, resolved.
    pub probe_settings: rtlab_results::run::ProbeSettings,
    pub interval_ns: u64,
    pub policy: Policy,
    pub priority: i32,
    pub cpus: Vec<usize>,
    pub duration_ns: Option<u64>,
    /// --duration was given (or came from the experiment file), not defaulted.
    pub duration_explicit: bool,
    pub samples: Option<u64>,
    pub warmup: u64,
    pub output: PathBuf,
    pub label: String,
    pub raw: bool,
    pub quiet: bool,
    pub json: bool,
    pub dma_latency: bool,
    pub histogram_max_ns: u64,
    pub simulate: Option<u64>,
    /// --simulate-scale in per mille (rtlab_probe::clock::UNSCALED without it).
    pub simulate_scale_permille: u32,
    /// Load scenarios in the order measured.
    pub scenarios: Vec<ScenarioPlan>,
    /// Presets of the experiment file (name -> loads).
    pub presets: std::collections::BTreeMap<String, String>,
    /// CPUs the loads run on; None = all.
    pub load_cpus: Option<Vec<usize>>,
    pub settle_ns: u64,
    /// Parent of the loads' scratch directories, when given.
    pub scratch: Option<PathBuf>,
    /// Requirements the run is judged against (`--require`), checked before measuring.
    pub requirements: Vec<Requirement>,
    /// `--taskset`: the task set, analysed, and its CPU (then `cpus` is that one CPU and
    /// `priority` the set's highest).
    pub taskset: Option<crate::probe_plan::TasksetPlan>,
    /// `--split`: cut timer/net samples with kernel tracing.
    pub split: bool,
    /// `--split-backend`.
    pub split_backend: crate::cli::SplitBackendArg,
    /// `--explain-above`: explain samples above this (None: each thread's worst).
    pub explain_above_ns: Option<u64>,
    /// With the noise probe: how its CPUs were chosen (run.json `noise.cpus_choice`).
    pub noise_cpus: Option<String>,
    /// `--station`, `--key`: the second station.
    pub station: Option<crate::probe_plan::StationTarget>,
    /// `-P timerlat` with an explicit `--priority`: the SCHED_FIFO priority of the kernel's
    /// timerlat threads (rtla -P); None keeps the kernel's own.
    pub timerlat_priority: Option<i32>,
    /// `--until converged[...]`: measure in windows until the statistic converges.
    pub until: Option<crate::until::UntilPlan>,
}

pub fn policy_of(arg: PolicyArg) -> Policy {
    match arg {
        PolicyArg::Fifo => Policy::Fifo,
        PolicyArg::Rr => Policy::Rr,
        PolicyArg::Other => Policy::Other,
    }
}

/// A name (the hostname) as a label: characters other than letters, digits, '-' and '_'
/// replaced by '-', at most 64; "run" when nothing is left.
pub fn label_from(name: &str) -> String {
    let label: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '-' })
        .take(64)
        .collect();
    if label.is_empty() {
        "run".into()
    } else {
        label
    }
}

/// A label is used in a directory name: keep it to a safe character set.
pub fn check_label(label: &str) -> anyhow::Result<()> {
    if label.is_empty()
        || label.len() > 64
        || !label.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err(usage(format!("--label {label:?}: use 1 to 64 letters, digits, '-', '_' or '.'")));
    }
    Ok(())
}

impl RunPlan {
    /// `online` and `hostname` come from the host (or the simulated host).
    pub fn from_args(
        args: &RunArgs,
        online: &[usize],
        hostname: &str,
        now: chrono::DateTime<chrono::Local>,
    ) -> anyhow::Result<Self> {
        let interval_text = args.interval.as_deref().unwrap_or("1ms");
        let interval_ns = parse_interval(interval_text)?;
        let policy = policy_of(args.policy.unwrap_or(PolicyArg::Fifo));
        let range = match policy {
            Policy::Other => 0..=0,
            // Linux's range for SCHED_FIFO and SCHED_RR.
            _ => 1..=99,
        };
        let priority = args.priority.unwrap_or(if policy.is_realtime() { DEFAULT_PRIORITY } else { 0 });
        if !range.contains(&priority) {
            return Err(usage(format!(
                "--priority {} is out of range for {}: use {}..={}",
                priority,
                policy.kernel_name(),
                range.start(),
                range.end()
            )));
        }
        // Read and analysed first: a malformed set is the error to report.
        let taskset = crate::probe_plan::resolve_taskset(args, online)?;
        // The noise probe's busy loops run real-time on every CPU they measure: without
        // --cpus they leave the housekeeping CPU (the first online one) to the system.
        let noise_asked = args.probe.as_deref().is_some_and(|list| list.split(',').any(|p| p.trim() == "noise"));
        let cpus = match &taskset {
            Some(t) => vec![t.cpu],
            None if noise_asked && args.cpus.is_none() && online.len() >= 2 => online[1..].to_vec(),
            None => resolve_cpus("--cpus", args.cpus.as_deref(), online)?,
        };
        let priority = match &taskset {
            Some(t) if policy.is_realtime() => i64::from(t.top_priority()),
            _ => priority,
        };
        let (duration_ns, samples) = match (&args.duration, args.samples) {
            (Some(d), None) => (Some(parse_time_ns(d).map_err(|e| usage(format!("--duration: {e}")))?), None),
            (None, Some(0)) => return Err(usage("--samples must be at least 1")),
            (None, Some(n)) => {
                if n.checked_mul(interval_ns).is_none_or(|ns| ns > MAX_RUN_NS) {
                    return Err(usage(format!("--samples {n} at this interval would take more than a year")));
                }
                (None, Some(n))
            }
            (None, None) => (Some(DEFAULT_DURATION_NS), None),
            (Some(_), Some(_)) => return Err(usage("give --duration or --samples, not both")),
        };
        if let Some(ns) = duration_ns {
            let shown = args.duration.as_deref().unwrap_or("20s (the default)");
            if ns < interval_ns {
                return Err(usage(format!("--duration {shown} is shorter than one interval ({interval_text})")));
            }
            if ns > MAX_RUN_NS {
                return Err(usage(format!("--duration {shown}: at most 366d")));
            }
        }
        let histogram_max_ns = parse_time_ns(args.histogram_max.as_deref().unwrap_or("10s"))
            .map_err(|e| usage(format!("--histogram-max: {e}")))?;
        if histogram_max_ns < 1_000 {
            return Err(usage("--histogram-max must be at least 1us"));
        }
        let label = match &args.label {
            Some(l) => {
                check_label(l)?;
                l.clone()
            }
            None => label_from(hostname),
        };
        let output = args
            .output
            .clone()
            .unwrap_or_else(|| PathBuf::from("results").join(format!("{}-{label}", now.format("%Y%m%d-%H%M%S"))));
        let load_cpus = match &args.load_cpus {
            Some(text) => Some(resolve_cpus("--load-cpus", Some(text), online)?),
            None => None,
        };
        let settle_text = args.settle.as_deref().unwrap_or("2s");
        let settle_ns = parse_time_ns(settle_text).map_err(|e| usage(format!("--settle: {e}")))?;
        if settle_ns > MAX_SETTLE_NS {
            return Err(usage(format!("--settle {settle_text}: at most 1h")));
        }
        let requirements = parse_requirements(&args.require)?;
        let explain_above_ns = match &args.explain_above {
            None => None,
            Some(_) if !args.split => {
                return Err(usage("--explain-above explains the samples of --split: add --split"))
            }
            Some(text) => Some(parse_time_ns(text).map_err(|e| usage(format!("--explain-above: {e}")))?),
        };
        let resolved = crate::probe_plan::resolve(args, &cpus, online, priority as i32)?;
        // Remote loads without @HOST go to --station; remote:comms proves its key.
        if let Some(station) = &resolved.station {
            rtlab_load::remote::set_station(rtlab_load::remote::RemoteStation {
                address: station.address,
                key_file: Some(station.key_file.clone()),
            });
        }
        let scenarios = resolve_scenarios(args)?;
        if args.split {
            use crate::probe_plan::ProbeChoice;
            if args.simulate.is_some() {
                return Err(usage("--split traces the kernel; a simulated run has no kernel to trace"));
            }
            if let Some(other) = resolved.probes.iter().find(|p| !matches!(p, ProbeChoice::Timer | ProbeChoice::Net)) {
                return Err(usage(format!(
                    "--split cuts timer and net samples; {} has no interrupt/scheduling split (use --probe timer or net)",
                    other.name()
                )));
            }
            if args.split_backend == crate::cli::SplitBackendArg::Ebpf {
                if resolved.probes.contains(&ProbeChoice::Net) {
                    return Err(usage(
                        "--split-backend ebpf cuts timer samples only; the net split needs --split-backend tracefs",
                    ));
                }
                if args.explain_above.is_some() {
                    return Err(usage(
                        "--explain-above needs every kernel event, which --split-backend ebpf does not record: use --split-backend tracefs",
                    ));
                }
            }
        } else if args.split_backend != crate::cli::SplitBackendArg::Tracefs {
            return Err(usage("--split-backend chooses the backend of --split: add --split"));
        }
        let noise_cpus = noise_asked.then(|| noise_cpus_choice(&cpus, args.cpus.is_some(), online));
        // --until: each scenario measures up to --max-duration (recorded as its duration).
        let until = crate::until::resolve(args, &resolved.probes)?;
        let (duration_ns, duration_explicit) = match &until {
            Some(u) => (Some(u.max_duration_ns), true),
            None => (duration_ns, args.duration.is_some()),
        };
        Ok(Self {
            probes: resolved.probes,
            probe_settings: resolved.settings,
            duration_explicit,
            interval_ns,
            policy,
            priority: priority as i32,
            cpus,
            duration_ns,
            samples,
            warmup: args.warmup.unwrap_or(0),
            output,
            label,
            raw: args.raw,
            quiet: args.quiet,
            json: args.json,
            dma_latency: !args.no_dma_latency,
            histogram_max_ns,
            simulate: args.simulate,
            simulate_scale_permille: simulate_scale_permille(args.simulate_scale)?,
            scenarios,
            presets: args.presets.clone(),
            load_cpus,
            settle_ns,
            scratch: args.scratch.clone(),
            requirements,
            taskset,
            split: args.split,
            split_backend: args.split_backend,
            timerlat_priority: args.priority.filter(|_| policy.is_realtime()).map(|p| p as i32),
            explain_above_ns,
            station: resolved.station,
            noise_cpus,
            until,
        })
    }

    /// The scenarios that run loads.
    pub fn loaded_scenarios(&self) -> impl Iterator<Item = &ScenarioPlan> {
        self.scenarios.iter().filter(|s| !s.is_unloaded())
    }
}

/// `--simulate-scale FACTOR` in per mille: a finite factor from 0.001 to 1000.
fn simulate_scale_permille(factor: Option<f64>) -> anyhow::Result<u32> {
    let Some(factor) = factor else { return Ok(rtlab_probe::clock::UNSCALED) };
    if !factor.is_finite() || !(0.001..=1000.0).contains(&factor) {
        return Err(usage(format!("--simulate-scale {factor}: give a factor from 0.001 to 1000, e.g. 1.5")));
    }
    Ok((factor * rtlab_probe::clock::UNSCALED as f64).round() as u32)
}

/// Parses `--require` expressions; a malformed one is a usage error before anything runs.
pub fn parse_requirements(texts: &[String]) -> anyhow::Result<Vec<Requirement>> {
    texts.iter().map(|text| parse_requirement(text).map_err(|e| usage(format!("--require: {e}")))).collect()
}

/// Checks the scratch directory and every load of every scenario (building a load checks its
/// parameters, finds its program, tries its scratch directory) before anything starts.
/// The scenarios of `--probe remote` without --load: unloaded, then the paper's flood of
/// the station (Regnier: 64-byte UDP at 200 kHz from another host).
pub const REMOTE_DEFAULT_LOADS: &str = "idle,remote:udp-flood:rate=200000";

fn resolve_scenarios(args: &RunArgs) -> anyhow::Result<Vec<ScenarioPlan>> {
    let list = match &args.load {
        Some(list) => list.clone(),
        // A simulated run measures no machine: loading it would prove nothing.
        None if args.simulate.is_some() => "idle".to_string(),
        // Regnier's experiment 2 loads the station, not this host: E_L's 64-byte UDP flood.
        None if args.probe.as_deref().map(str::trim) == Some("remote") => REMOTE_DEFAULT_LOADS.to_string(),
        None => DEFAULT_LOADS.to_string(),
    };
    if let Some(dir) = &args.scratch {
        if !dir.is_dir() {
            return Err(usage(format!("--scratch {}: not a directory", dir.display())));
        }
        rtlab_load::set_default_scratch_parent(dir.clone());
    }
    let mut scenarios: Vec<ScenarioPlan> = Vec::new();
    for name in list.split(',').map(str::trim) {
        if name.is_empty() {
            return Err(usage(format!("--load {list:?}: an empty scenario between commas")));
        }
        if scenarios.iter().any(|s| s.name == name) {
            return Err(usage(format!("--load {list:?}: scenario {name:?} is given twice")));
        }
        let spec = args.presets.get(name).cloned().unwrap_or_else(|| name.to_string());
        // Building the loads checks them; they are dropped unstarted.
        rtlab_load::scenario(&spec).map_err(|e| {
            let message = format!("--load {name:?}: {e}");
            if e.is_usage_error() {
                usage(message)
            } else {
                crate::errors::environment(message)
            }
        })?;
        scenarios.push(ScenarioPlan { name: name.to_string(), spec });
    }
    Ok(scenarios)
}

/// How the noise probe's CPUs were chosen: `--cpus`, or every CPU but the housekeeping one
/// (the rule of `RunPlan::from_args`, which chose them).
fn noise_cpus_choice(cpus: &[usize], cpus_given: bool, online: &[usize]) -> String {
    if cpus_given {
        return format!("CPUs {cpus:?} as --cpus asked");
    }
    match online.first() {
        Some(&housekeeping) if online.len() >= 2 => format!(
            "every online CPU but the housekeeping CPU {housekeeping} (a real-time busy loop on every CPU would starve \
             the rest of the system; give --cpus to choose)"
        ),
        _ => "the only online CPU".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals() {
        assert_eq!(parse_interval("1ms").unwrap(), 1_000_000);
        assert_eq!(parse_interval("50us").unwrap(), 50_000);
        assert_eq!(parse_interval("1000").unwrap(), 1_000_000);
        assert!(parse_interval("0").is_err());
        assert!(parse_interval("0us").is_err());
        assert!(parse_interval("fast").is_err());
    }

    #[test]
    fn cpus() {
        assert_eq!(resolve_cpus("--cpus", None, &[0, 1]).unwrap(), vec![0, 1]);
        assert_eq!(resolve_cpus("--cpus", Some("1,0,1"), &[0, 1]).unwrap(), vec![0, 1]);
        assert!(resolve_cpus("--cpus", Some("7"), &[0, 1]).is_err());
        assert!(resolve_cpus("--cpus", Some("x"), &[0, 1]).is_err());
    }

    #[test]
    fn requirements() {
        let parsed = parse_requirements(&["timer max < 500us".into(), "timer p99.9 < 100us".into()]).unwrap();
        assert_eq!(parsed.len(), 2);
        assert_eq!(parsed[0].bound_ns, 500_000);
        let bad = parse_requirements(&["timer max <= 500us".into()]).unwrap_err().to_string();
        assert!(bad.starts_with("--require: invalid requirement"), "{bad}");
        // pwcet(P) is judged from the tail analysis after the run: accepted before it.
        let pwcet = parse_requirements(&["timer pwcet(1e-9) < 1ms".into()]).unwrap();
        assert_eq!(pwcet[0].text, "timer.latency pwcet(1e-9) < 1ms");
        let bad = parse_requirements(&["timer pwcet(2) < 1ms".into()]).unwrap_err().to_string();
        assert!(bad.contains("between 0 and 1"), "{bad}");
    }

    #[test]
    fn labels() {
        assert!(check_label("idle-1").is_ok());
        assert!(check_label("../etc").is_err());
        assert!(check_label("").is_err());
    }
}
