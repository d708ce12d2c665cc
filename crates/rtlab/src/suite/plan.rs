//! A suite condition as `rtlab run` sees it: its experiment keys read by the experiment file
//! reader and checked by `RunPlan::from_args`, exactly as `rtlab run --experiment` does
//! ([`PlanCheck`], the suite file's [`ExperimentCheck`]), and the plan's line in suite.json.

use crate::cli::RunArgs;
use crate::errors::usage;
use crate::experiment::RunPlan;
use crate::experiment_file::ExperimentFile;
use rtlab_analysis::units::thousands;
use rtlab_suite::file::{format_duration, is_missing_program, Condition, ExperimentCheck, Mode};

/// The `rtlab run` arguments of `condition` in `mode`, as `rtlab run --experiment` would
/// make them from a file holding its keys.
pub fn run_args(condition: &Condition, mode: Mode, base: RunArgs) -> anyhow::Result<RunArgs> {
    run_args_of(condition, condition.keys(mode), base)
}

/// The `rtlab run` arguments of `condition` with a second station: its `with_station` keys
/// applied, when it has them.
pub fn run_args_with_station(condition: &Condition, mode: Mode, base: RunArgs) -> anyhow::Result<RunArgs> {
    run_args_of(condition, condition.keys_with_station(mode).unwrap_or_else(|| condition.keys(mode)), base)
}

fn run_args_of(condition: &Condition, keys: toml::Table, base: RunArgs) -> anyhow::Result<RunArgs> {
    let at = format!("condition {:?}", condition.name);
    let experiment: ExperimentFile = toml::Value::Table(keys)
        .try_into()
        .map_err(|e: toml::de::Error| usage(format!("{at}: {}", e.message().trim())))?;
    experiment.check_presets().map_err(|e| usage(format!("{at}: {e}")))?;
    let simulated = base.simulate.is_some();
    let mut args = experiment.under(base);
    // The interrupt/activation split: measured with kernel tracing where there is a kernel.
    if condition.needs_split() && !simulated {
        args.split = true;
        // The split's cost lands on the condition's other metrics (t2, the verdict): the
        // cheaper eBPF backend where it can do the split.
        args.split_backend = crate::cli::SplitBackendArg::Auto;
    }
    // A suite condition is one load scenario unless it says otherwise.
    if args.load.is_none() {
        args.load = Some("idle".into());
    }
    Ok(args)
}

/// Checks a condition's experiment with `RunPlan::from_args` (a usage error there is the
/// suite file's) and estimates how long it takes. Loads are not built here (a missing
/// program is the condition's failure when it runs, not the file's).
pub struct PlanCheck;

impl ExperimentCheck for PlanCheck {
    fn estimate_ns(&self, condition: &Condition, mode: Mode) -> Result<u64, String> {
        estimate(condition, mode).map_err(|e| crate::errors::one_line(&e))
    }
}

fn estimate(c: &Condition, mode: Mode) -> anyhow::Result<u64> {
    // The station's variant is checked too (its loads only at run time, with the station).
    if c.keys_with_station(mode).is_some() {
        let args = run_args_with_station(c, mode, RunArgs { station_later: true, ..RunArgs::default() })?;
        idle_plan(&args).map_err(|e| e.context(format!("condition {:?}{} with_station", c.name, mode.suffix())))?;
    }
    let needs_station = c.needs.iter().any(|n| n == "station");
    let args = run_args(c, mode, RunArgs { station_later: needs_station, ..RunArgs::default() })?;
    let scenario_list = args.load.clone().unwrap_or_else(|| "idle".into());
    let scenarios: Vec<&str> = scenario_list.split(',').map(str::trim).collect();
    for s in &scenarios {
        let spec = args.presets.get(*s).map(String::as_str).unwrap_or(s);
        // Remote loads are checked against the station the suite runs with.
        if needs_station && (spec.contains("remote:") || spec.contains("station:")) {
            continue;
        }
        if let Err(e) = rtlab_load::scenario(spec) {
            if e.is_usage_error() && !is_missing_program(&e.to_string()) {
                return Err(usage(format!("condition {:?}: load {s:?}: {e}", c.name)));
            }
        }
    }
    // One scenario's time, measured on "idle" so that no load is built.
    let plan = idle_plan(&args).map_err(|e| e.context(format!("condition {:?}{}", c.name, mode.suffix())))?;
    let per_scenario: u64 = plan.probes.iter().map(|&p| crate::probe_build::expected_ns(&plan, p)).sum();
    let loaded = scenarios.iter().filter(|s| args.presets.get(**s).map(String::as_str).unwrap_or(s) != "idle").count();
    Ok(per_scenario.saturating_mul(scenarios.len() as u64).saturating_add(plan.settle_ns * loaded as u64))
}

/// The plan of `args` with the scenario "idle" only: checked by `rtlab run`'s rules without
/// building a load.
fn idle_plan(args: &RunArgs) -> anyhow::Result<RunPlan> {
    let one = RunArgs { load: Some("idle".into()), ..args.clone() };
    let online = rtlab_sys::sched::online_cpus().unwrap_or_else(|_| vec![0]);
    RunPlan::from_args(&one, &online, "suite", chrono::Local::now())
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
        ProbeChoice::Timerlat => {
            format!("the kernel's timerlat tracer every {}", format_period(plan.interval_ns as i64))
        }
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
pub fn plan_summary(plan: &RunPlan) -> String {
    let probes: Vec<String> = plan.probes.iter().map(|&p| probe_summary(plan, p)).collect();
    let cpus: Vec<String> = plan.cpus.iter().map(|c| c.to_string()).collect();
    let amount = match (plan.samples, plan.duration_ns) {
        (Some(n), _) => format!("{} samples", thousands(n)),
        (None, Some(ns)) => format_duration(ns),
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
pub fn describe_keys(c: &Condition, mode: Mode) -> String {
    let keys = c.keys(mode);
    ["probe", "interval", "samples", "duration", "load"]
        .iter()
        .filter_map(|k| keys.get(*k).map(|v| format!("{k} {v}")))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtlab_suite::file::{SuiteFile, BUILT_IN};

    const MINIMAL: &str = r#"
        [suite]
        name = "mini"
        title = "Mini"
        [experiment]
        probe = "timer"
        interval = "10ms"
        [[condition]]
        name = "unloaded"
        samples = 100000
        quick = { samples = 100 }
    "#;

    fn parse(text: &str) -> Result<SuiteFile, rtlab_suite::SuiteError> {
        SuiteFile::parse(text, "mini.toml", &PlanCheck)
    }

    #[test]
    fn quick_keys_replace_and_duration_drops_samples() {
        let file = parse(MINIMAL).unwrap();
        assert_eq!(file.estimate(Mode::Full), 1_000_000_000_000);
        assert_eq!(file.estimate(Mode::Quick), 1_000_000_000);
        let with_duration = MINIMAL.replace("{ samples = 100 }", "{ duration = \"2s\" }");
        let file = parse(&with_duration).unwrap();
        assert_eq!(file.estimate(Mode::Quick), 2_000_000_000);
    }

    #[test]
    fn mistakes_name_the_key() {
        let cases = [
            (MINIMAL.replace("interval = \"10ms\"", "intervall = \"10ms\""), "intervall"),
            (MINIMAL.replace("samples = 100000", "samples = 100000\nlabel = \"x\""), "label"),
            (MINIMAL.replace("quick = { samples = 100 }", ""), "no `quick` keys"),
            (MINIMAL.replace("quick = { samples = 100 }", "quick = { sample = 100 }"), "sample"),
            (MINIMAL.replace("interval = \"10ms\"", "interval = \"fast\""), "--interval"),
            (MINIMAL.replace("name = \"unloaded\"", "name = \"un loaded\""), "name"),
            (MINIMAL.replace("samples = 100000", "samples = 100000\nneeds = [\"warp\"]"), "warp"),
            (MINIMAL.replace("[suite]", "[suite]\nauthor = \"x\""), "author"),
            (MINIMAL.replace("samples = 100000", "samples = 100000\nload = \"nosuchload\""), "nosuchload"),
        ];
        for (text, expected) in cases {
            let e = parse(&text).unwrap_err().to_string();
            assert!(e.starts_with("suite mini.toml: ") && e.contains(expected), "{expected}: {e}");
        }
    }

    #[test]
    fn every_probe_is_checked_as_rtlab_run_checks_it() {
        // Not on the simulated clock (which drives the timer and jitter probes only).
        for probe in ["net", "sleep", "switch", "sweep", "ipc:futex", "jitter"] {
            let text = MINIMAL.replace("probe = \"timer\"", &format!("probe = \"{probe}\""));
            parse(&text).unwrap_or_else(|e| panic!("{probe}: {e}"));
        }
    }

    #[test]
    fn a_condition_that_needs_the_split_runs_with_split_except_simulated() {
        let text = MINIMAL.replace("samples = 100000", "samples = 100000\nneeds = [\"split\"]");
        let file = parse(&text).unwrap();
        let c = &file.conditions[0];
        assert!(run_args(c, Mode::Quick, RunArgs::default()).unwrap().split);
        let simulated = RunArgs { simulate: Some(1), ..RunArgs::default() };
        assert!(!run_args(c, Mode::Quick, simulated).unwrap().split);
        let plain = parse(MINIMAL).unwrap();
        assert!(!run_args(&plain.conditions[0], Mode::Quick, RunArgs::default()).unwrap().split);
    }

    #[test]
    fn built_in_suites_parse() {
        for (name, text) in BUILT_IN {
            let file = SuiteFile::parse(text, name, &PlanCheck).unwrap();
            assert_eq!(&file.info.name, name);
        }
    }
}
