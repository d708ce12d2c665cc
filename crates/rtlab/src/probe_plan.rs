//! Which probes a run measures, their parameters checked and resolved, and how each is
//! built for one scenario with its share of the budget. A task-set run (`--taskset`) has
//! one probe, `taskset`: its file is read, checked and analysed here, before anything runs.

use crate::errors::usage;
use rtlab_analysis::schedulability::{analyse, Analysis, Overheads};
use rtlab_analysis::taskset::{parse_taskset, TaskSet};
use rtlab_analysis::units::parse_time_ns;
use rtlab_probe::ipc::Mechanism;
use rtlab_probe::taskset::TaskSpec;
use rtlab_results::run::ProbeSettings;
use std::collections::BTreeMap;

/// The probes `--probe` accepts, in the order of `--help`.
pub const PROBE_NAMES: [&str; 14] = [
    "timer",
    "jitter",
    "sleep",
    "net",
    "ipc:eventfd",
    "ipc:pipe",
    "ipc:futex",
    "ipc:mqueue",
    "ipc:signal",
    "switch",
    "sweep",
    "remote",
    "timerlat",
    "noise",
];

/// One probe of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeChoice {
    Timer,
    Jitter,
    Sleep,
    Net,
    Ipc(Mechanism),
    Switch,
    Sweep,
    /// Regnier's experiment 2 against a second station (`--station`).
    Remote,
    /// The kernel's timerlat tracer (kernels with CONFIG_TIMERLAT_TRACER).
    Timerlat,
    /// oslat's busy loop: gaps between clock reads (noise), attributed from the kernel trace.
    Noise,
    /// A task set run for real (`--taskset FILE`, never `--probe`).
    Taskset,
}

impl ProbeChoice {
    pub fn parse(name: &str) -> Option<ProbeChoice> {
        Some(match name {
            "timer" => ProbeChoice::Timer,
            "jitter" => ProbeChoice::Jitter,
            "sleep" => ProbeChoice::Sleep,
            "net" => ProbeChoice::Net,
            "switch" => ProbeChoice::Switch,
            "sweep" => ProbeChoice::Sweep,
            "remote" => ProbeChoice::Remote,
            "timerlat" => ProbeChoice::Timerlat,
            "noise" => ProbeChoice::Noise,
            other => ProbeChoice::Ipc(Mechanism::from_name(other.strip_prefix("ipc:")?)?),
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            ProbeChoice::Timer => "timer",
            ProbeChoice::Jitter => "jitter",
            ProbeChoice::Sleep => "sleep",
            ProbeChoice::Net => "net",
            ProbeChoice::Ipc(m) => m.probe_name(),
            ProbeChoice::Switch => "switch",
            ProbeChoice::Sweep => "sweep",
            ProbeChoice::Remote => "remote",
            ProbeChoice::Timerlat => "timerlat",
            ProbeChoice::Noise => "noise",
            ProbeChoice::Taskset => "taskset",
        }
    }

    /// A stimulus probe: a trigger thread drives a receiver at a rate.
    pub fn default_rate_hz(self) -> Option<f64> {
        match self {
            ProbeChoice::Net => Some(rtlab_probe::net::DEFAULT_RATE_HZ),
            ProbeChoice::Ipc(_) => Some(rtlab_probe::ipc::DEFAULT_RATE_HZ),
            ProbeChoice::Switch => Some(rtlab_probe::switch::DEFAULT_RATE_HZ),
            ProbeChoice::Remote => Some(rtlab_probe::remote::DEFAULT_RATE_HZ),
            _ => None,
        }
    }
}

/// The probes and their settings, from the run options.
pub struct ResolvedProbes {
    pub probes: Vec<ProbeChoice>,
    pub settings: ProbeSettings,
    /// `--station` and `--key`, read and checked.
    pub station: Option<StationTarget>,
}

/// The second station of `remote` and the remote loads.
#[derive(Debug, Clone)]
pub struct StationTarget {
    pub address: std::net::SocketAddrV4,
    pub key: rtlab_station::protocol::Key,
    pub key_file: std::path::PathBuf,
}

/// `--station` and `--key`: both or neither; `remote` and the `remote:` loads need them.
fn resolve_station(args: &crate::cli::RunArgs, remote_used: bool) -> anyhow::Result<Option<StationTarget>> {
    // Whether a scenario, given directly or as a preset, has a load of this kind.
    let loads_of = |kind: &str| {
        args.load.as_deref().is_some_and(|list| {
            list.split(',')
                .map(str::trim)
                .any(|name| args.presets.get(name).map_or(name, String::as_str).contains(kind))
        })
    };
    // Loads the station sends need the station and its key (remote: loads name a host).
    let station_loads = loads_of("station:");
    let remote_loads = station_loads || loads_of("remote:");
    match (&args.station, &args.key) {
        (None, None) if args.station_later => Ok(None),
        (None, None) if station_loads => {
            Err(usage("a station: load needs the station: --station HOST:PORT --key FILE (see docs/station.md)"))
        }
        (None, None) if remote_used => {
            Err(usage("--probe remote needs the station: --station HOST:PORT --key FILE (see docs/station.md)"))
        }
        (None, None) => Ok(None),
        (Some(_), None) => Err(usage("--station needs --key FILE, the key shared with the station")),
        (None, Some(_)) => Err(usage("--key is the station's key: add --station HOST:PORT")),
        (Some(text), Some(key_file)) => {
            if !remote_used && !remote_loads {
                return Err(usage("--station has no effect without --probe remote or a remote: or station: load"));
            }
            let address =
                rtlab_station::client::parse_station_address(text).map_err(|e| usage(format!("--station {e}")))?;
            let key = rtlab_station::protocol::Key::from_file(key_file).map_err(|e| usage(format!("--key: {e}")))?;
            Ok(Some(StationTarget { address, key, key_file: key_file.clone() }))
        }
    }
}

/// A list of periods: "300us,1ms", bare numbers in µs.
fn parse_periods(text: &str) -> anyhow::Result<Vec<u64>> {
    let mut periods = Vec::new();
    for item in text.split(',').map(str::trim) {
        let ns = crate::plan_values::parse_interval(item).map_err(|e| usage(format!("--periods {text:?}: {e}")))?;
        if ns < 10_000 {
            return Err(usage(format!("--periods {text:?}: {item} is shorter than 10us")));
        }
        periods.push(ns);
    }
    Ok(periods)
}

/// A rate: "20", "20hz", "1khz", "10 kHz".
pub fn parse_rate(flag: &str, text: &str) -> anyhow::Result<f64> {
    let t = text.trim().to_ascii_lowercase().replace(' ', "");
    let (number, scale) = if let Some(n) = t.strip_suffix("khz") {
        (n, 1_000.0)
    } else if let Some(n) = t.strip_suffix("hz") {
        (n, 1.0)
    } else {
        (t.as_str(), 1.0)
    };
    let hz = number.parse::<f64>().ok().filter(|v| v.is_finite()).map(|v| v * scale);
    match hz {
        Some(hz) if (0.1..=100_000.0).contains(&hz) => Ok(hz),
        Some(_) => Err(usage(format!("{flag} {text:?}: use a rate from 0.1 Hz to 100 kHz"))),
        None => Err(usage(format!("{flag} {text:?}: not a rate (e.g. 20, 500hz, 1khz)"))),
    }
}

/// Checks `--probe` and every probe option, making each default explicit.
pub fn resolve(
    args: &crate::cli::RunArgs,
    cpus: &[usize],
    online: &[usize],
    priority: i32,
) -> anyhow::Result<ResolvedProbes> {
    let mut probes = Vec::new();
    let list = match (&args.taskset, &args.probe) {
        // Both can come from an experiment file (the command line accepts only one).
        (Some(_), Some(_)) => return Err(usage("give --probe or --taskset, not both")),
        (Some(path), None) => {
            probes.push(ProbeChoice::Taskset);
            format!("--taskset {}", path.display())
        }
        (None, probe) => {
            let list = probe.clone().unwrap_or_else(|| "timer".to_string());
            for name in list.split(',').map(str::trim) {
                let choice = ProbeChoice::parse(name).ok_or_else(|| {
                    let hint = if name == "taskset" { "; a task set runs with --taskset FILE" } else { "" };
                    usage(format!("--probe {name:?}: unknown probe; use one of {}{hint}", PROBE_NAMES.join(", ")))
                })?;
                if probes.contains(&choice) {
                    return Err(usage(format!("--probe {list:?}: {name} is given twice")));
                }
                probes.push(choice);
            }
            list
        }
    };
    if args.simulate.is_some() {
        if let Some(p) = probes.iter().find(|p| !matches!(p, ProbeChoice::Timer | ProbeChoice::Jitter)) {
            return Err(usage(format!("--simulate drives the timer and jitter probes only, not {}", p.name())));
        }
    }
    let uses = |f: fn(&ProbeChoice) -> bool| probes.iter().any(f);
    let unused = |flag: &str, used: bool| -> anyhow::Result<()> {
        if used {
            Ok(())
        } else {
            Err(usage(format!("{flag} has no effect on the probes asked for ({list})")))
        }
    };

    let periods_ns = match &args.periods {
        Some(text) => {
            unused("--periods", uses(|p| *p == ProbeChoice::Jitter))?;
            parse_periods(text)?
        }
        None => rtlab_probe::jitter::DEFAULT_PERIODS_NS.to_vec(),
    };
    let sleep_ns = match &args.sleep {
        Some(text) => {
            unused("--sleep", uses(|p| *p == ProbeChoice::Sleep))?;
            let ns = parse_time_ns(text).map_err(|e| usage(format!("--sleep: {e}")))?;
            if !(1_000..=60_000_000_000).contains(&ns) {
                return Err(usage(format!("--sleep {text}: use 1us to 60s")));
            }
            ns
        }
        None => rtlab_probe::sleep::DEFAULT_REQUEST_NS,
    };
    let sweep_of = match &args.sweep_of {
        Some(text) => {
            unused("--sweep-of", uses(|p| *p == ProbeChoice::Sweep))?;
            match ProbeChoice::parse(text.trim()) {
                Some(p @ (ProbeChoice::Net | ProbeChoice::Ipc(_))) => p,
                _ => return Err(usage(format!("--sweep-of {text:?}: use net or ipc:MECHANISM"))),
            }
        }
        None => ProbeChoice::Net,
    };
    let sweep_rates_hz = match &args.rates {
        Some(text) => {
            unused("--rates", uses(|p| *p == ProbeChoice::Sweep))?;
            text.split(',').map(|r| parse_rate("--rates", r)).collect::<anyhow::Result<Vec<_>>>()?
        }
        None => rtlab_probe::sweep::DEFAULT_RATES_HZ.to_vec(),
    };
    let given_rate = match &args.rate {
        Some(text) => {
            unused("--rate", uses(|p| p.default_rate_hz().is_some()))?;
            Some(parse_rate("--rate", text)?)
        }
        None => None,
    };
    let mut rates_hz = BTreeMap::new();
    for p in probes.iter().chain(uses(|p| *p == ProbeChoice::Sweep).then_some(&sweep_of)) {
        if let Some(default) = p.default_rate_hz() {
            rates_hz.insert(p.name().to_string(), given_rate.unwrap_or(default));
        }
    }
    let stimulus_used =
        uses(|p| matches!(p, ProbeChoice::Net | ProbeChoice::Ipc(_) | ProbeChoice::Sweep | ProbeChoice::Remote));
    let remote_used = uses(|p| *p == ProbeChoice::Remote);
    let station = resolve_station(args, remote_used)?;
    // --delta: a time, or a stored calibration (a delta.json, or a run's or suite's directory
    // holding one) measured once and held.
    let (delta_given_ns, delta_stored) = match &args.delta {
        Some(text) => {
            unused("--delta", remote_used)?;
            let as_path = std::path::Path::new(text.trim());
            if as_path.exists() {
                let stored = rtlab_results::delta::StoredDelta::read(as_path)
                    .map_err(|e| usage(format!("--delta {text}: {e}")))?;
                (None, Some(stored))
            } else {
                let ns = parse_time_ns(text).map_err(|e| {
                    usage(format!("--delta {text}: neither a time ({e}) nor an existing delta.json or run directory"))
                })?;
                if ns > 10_000_000 {
                    return Err(usage(format!("--delta {text}: at most 10ms")));
                }
                (Some(ns), None)
            }
        }
        None => (None, None),
    };
    if let Some(hz) = rates_hz.get("remote") {
        if *hz > rtlab_probe::remote::MAX_RATE_HZ {
            return Err(usage(format!(
                "--rate: the remote probe sends at most {} stimuli/s",
                rtlab_probe::remote::MAX_RATE_HZ
            )));
        }
        if *hz < rtlab_probe::remote::MIN_RATE_HZ {
            return Err(usage(format!(
                "--rate: the remote probe sends at least {} stimuli/s (the station closes a session idle for 60 s)",
                rtlab_probe::remote::MIN_RATE_HZ
            )));
        }
    }
    let noise_used = uses(|p| *p == ProbeChoice::Noise);
    let noise_threshold_ns = match &args.noise_threshold {
        Some(text) => {
            unused("--noise-threshold", noise_used)?;
            let ns = parse_time_ns(text).map_err(|e| usage(format!("--noise-threshold: {e}")))?;
            if ns == 0 || ns > 1_000_000_000 {
                return Err(usage(format!("--noise-threshold {text}: above 0 and at most 1s")));
            }
            Some(ns)
        }
        None => noise_used.then_some(rtlab_probe::noise::DEFAULT_THRESHOLD_NS),
    };
    let receiver_cpu = cpus[0];
    let trigger_cpu = match args.trigger_cpu.as_deref().map(str::trim) {
        Some(text) => {
            unused("--trigger-cpu", stimulus_used)?;
            if text == "same" {
                receiver_cpu
            } else {
                let cpu: usize =
                    text.parse().map_err(|_| usage(format!("--trigger-cpu {text:?}: a CPU number or \"same\"")))?;
                if !online.contains(&cpu) {
                    return Err(usage(format!("--trigger-cpu {cpu}: not an online CPU")));
                }
                cpu
            }
        }
        // Another CPU than the receiver's, so the trigger never competes with it.
        None => online.iter().copied().find(|&c| c != receiver_cpu).unwrap_or(receiver_cpu),
    };
    let net_used =
        uses(|p| *p == ProbeChoice::Net) || (uses(|p| *p == ProbeChoice::Sweep) && sweep_of == ProbeChoice::Net);
    if let Some(bind) = &args.bind {
        unused("--bind", net_used)?;
        bind.trim().parse::<std::net::IpAddr>().map_err(|_| usage(format!("--bind {bind:?}: not an IP address")))?;
    }
    if let Some(interface) = &args.interface {
        unused("--interface", net_used || uses(|p| *p == ProbeChoice::Remote))?;
        if interface.is_empty() || interface.len() > 15 || interface.contains(['/', ' ']) {
            return Err(usage(format!("--interface {interface:?}: not an interface name")));
        }
    }
    let settings = ProbeSettings {
        periods_ns,
        sleep_ns,
        sleep_discarded: args.warmup.unwrap_or(rtlab_probe::sleep::DISCARDED),
        rates_hz,
        sweep_of: sweep_of.name().to_string(),
        sweep_rates_hz,
        receiver_cpu,
        trigger_cpu,
        trigger_priority: (priority - 1).max(1),
        bind: args.bind.as_ref().map(|b| b.trim().to_string()),
        interface: args.interface.clone(),
        station: station.as_ref().map(|s| s.address.to_string()),
        delta_given_ns,
        delta_stored,
        noise_threshold_ns,
    };
    Ok(ResolvedProbes { probes, settings, station })
}

/// A task set to run for real, read and analysed before anything runs.
#[derive(Debug, Clone)]
pub struct TasksetPlan {
    /// The file as given.
    pub file: String,
    pub set: TaskSet,
    /// With no platform overheads: the set's own schedulability, which the run measures.
    pub analysis: Analysis,
    /// The one CPU every task thread is pinned to.
    pub cpu: usize,
    /// How the run is made, for the reader (run.json "taskset.notes").
    pub notes: Vec<String>,
}

impl TasksetPlan {
    /// The highest priority of the set: what the run's real-time status shows.
    pub fn top_priority(&self) -> i32 {
        self.analysis.tasks.iter().map(|t| t.priority).max().unwrap_or(1)
    }

    /// The tasks as the probe runs them, highest priority first.
    pub fn task_specs(&self) -> Vec<TaskSpec> {
        self.analysis
            .tasks
            .iter()
            .map(|t| TaskSpec {
                name: t.name.clone(),
                wcet_ns: t.wcet_ns,
                period_ns: t.period_ns,
                deadline_ns: t.deadline_ns,
                priority: t.priority,
            })
            .collect()
    }
}

/// Reads and parses a task-set file (rtlab TOML or rt-app JSON); an unreadable file or a
/// malformed set is a usage error opening with `at`.
pub fn read_taskset(path: &std::path::Path, at: &str) -> anyhow::Result<TaskSet> {
    let text = std::fs::read_to_string(path).map_err(|e| usage(format!("{at}: cannot read the task set: {e}")))?;
    parse_taskset(&text).map_err(|e| usage(format!("{at}: {e}")))
}

/// Reads, checks and analyses `--taskset`, and chooses its CPU: the first (lowest) of
/// `--cpus`, else the last online CPU (CPU 0 usually takes more of the system's interrupts
/// and housekeeping). Options that mean nothing for a task set are refused. A file that
/// cannot be read or a malformed set is a usage error naming the task and field.
pub fn resolve_taskset(args: &crate::cli::RunArgs, online: &[usize]) -> anyhow::Result<Option<TasksetPlan>> {
    let Some(path) = &args.taskset else { return Ok(None) };
    let shown = path.display().to_string();
    for (flag, given, why) in [
        ("--samples", args.samples.is_some(), "a task set runs for --duration"),
        ("--interval", args.interval.is_some(), "each task has its own period"),
        ("--priority", args.priority.is_some(), "each task has its own priority"),
        ("--warmup", args.warmup.is_some(), "every job of a task set counts"),
    ] {
        if given {
            return Err(usage(format!("{flag} has no effect with --taskset: {why}")));
        }
    }
    let set = read_taskset(path, &format!("--taskset {shown}"))?;
    let analysis = analyse(&set, Overheads::default());
    let (cpu, cpu_note) = match args.cpus.as_deref() {
        Some(text) => {
            let cpus = crate::plan_values::resolve_cpus("--cpus", Some(text), online)?;
            let note = if cpus.len() > 1 { " (the first of --cpus: the analysis is for one CPU)" } else { "" };
            (cpus[0], note)
        }
        None => match online.last() {
            Some(&cpu) => (cpu, " (the last online CPU, as no --cpus was given)"),
            None => return Err(usage("--taskset: no online CPU to run the task set on")),
        },
    };
    let mut notes = vec![
        format!("Every task thread ran on CPU {cpu}{cpu_note}, released from one synchronous start (the critical instant)."),
        format!(
            "Priorities {}; assigned priorities count down from {} (below rtlab's measuring threads at {}).",
            analysis.order_rule,
            rtlab_analysis::schedulability::ASSIGNED_TOP_PRIORITY,
            crate::plan_values::DEFAULT_PRIORITY
        ),
        "Each job was busy for C of its thread's own CPU time (CLOCK_THREAD_CPUTIME_ID): time spent preempted is not execution.".into(),
        "The analysed R charges no platform overheads (activation latency 0, task-switch time 0): it is the set's own \
         schedulability; `rtlab check --platform` charges a measured platform's."
            .into(),
    ];
    if !analysis.schedulable {
        let failing: Vec<&str> = analysis.tasks.iter().filter(|t| !t.schedulable).map(|t| t.name.as_str()).collect();
        notes.push(format!(
            "The analysis finds the set unschedulable (R > D for {}): deadline misses are expected.",
            failing.join(", ")
        ));
    }
    Ok(Some(TasksetPlan { file: shown, set, analysis, cpu, notes }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_names_round_trip() {
        for name in PROBE_NAMES {
            assert_eq!(ProbeChoice::parse(name).unwrap().name(), name);
        }
        assert_eq!(ProbeChoice::parse("ipc:carrier-pigeon"), None);
        assert_eq!(ProbeChoice::parse("ipc"), None);
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate("--rate", "20").unwrap(), 20.0);
        assert_eq!(parse_rate("--rate", "1kHz").unwrap(), 1_000.0);
        assert_eq!(parse_rate("--rate", "500 hz").unwrap(), 500.0);
        assert!(parse_rate("--rate", "0").is_err());
        assert!(parse_rate("--rate", "fast").is_err());
        assert!(parse_rate("--rate", "1e9").is_err());
    }

    #[test]
    fn periods() {
        assert_eq!(parse_periods("300,1ms").unwrap(), vec![300_000, 1_000_000]);
        assert!(parse_periods("5us").is_err());
        assert!(parse_periods("300,,1ms").is_err());
    }
}
