//! Experiment files: `rtlab run --experiment lab.toml`. Every `run` option has a key of the
//! same name (`load_cpus` for `--load-cpus`); options on the command line override the file.
//! A `[presets]` table names load scenarios of the lab's own.

use crate::cli::{PolicyArg, RunArgs};
use crate::errors::usage;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A list given as one comma-separated string or as an array.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum TextList {
    One(String),
    Many(Vec<String>),
}

impl TextList {
    fn joined(&self) -> String {
        match self {
            TextList::One(s) => s.clone(),
            TextList::Many(v) => v.join(","),
        }
    }

    /// The items, each taken whole (not split at commas).
    fn items(self) -> Vec<String> {
        match self {
            TextList::One(s) => vec![s],
            TextList::Many(v) => v,
        }
    }
}

/// A CPU list: "0,2-3" or [0, 2, 3].
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum CpuList {
    Text(String),
    Numbers(Vec<u32>),
}

impl CpuList {
    fn text(&self) -> String {
        match self {
            CpuList::Text(s) => s.clone(),
            CpuList::Numbers(v) => v.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(","),
        }
    }
}

/// The keys of an experiment file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExperimentFile {
    pub label: Option<String>,
    pub probe: Option<TextList>,
    /// `--taskset`: a task-set file (relative to the current directory, like `output`).
    pub taskset: Option<PathBuf>,
    pub periods: Option<TextList>,
    pub sleep: Option<String>,
    pub rate: Option<String>,
    pub rates: Option<TextList>,
    pub sweep_of: Option<String>,
    pub trigger_cpu: Option<String>,
    pub bind: Option<String>,
    pub interface: Option<String>,
    pub station: Option<String>,
    pub key: Option<PathBuf>,
    pub delta: Option<String>,
    pub noise_threshold: Option<String>,
    pub interval: Option<String>,
    pub priority: Option<i64>,
    pub policy: Option<PolicyArg>,
    pub cpus: Option<CpuList>,
    pub duration: Option<String>,
    pub samples: Option<u64>,
    pub warmup: Option<u64>,
    pub output: Option<PathBuf>,
    pub raw: Option<bool>,
    pub split: Option<bool>,
    pub explain_above: Option<String>,
    /// false = `--no-dma-latency`.
    pub dma_latency: Option<bool>,
    pub histogram_max: Option<String>,
    pub load: Option<TextList>,
    pub load_cpus: Option<CpuList>,
    pub settle: Option<String>,
    pub scratch: Option<PathBuf>,
    /// Requirements (`--require`): one expression or a list of them.
    pub require: Option<TextList>,
    /// The stop rule (`--until`, `--max-duration`, `--target`, `--window`; docs/stop-rule.md).
    pub until: Option<String>,
    pub max_duration: Option<String>,
    pub target: Option<String>,
    pub window: Option<String>,
    /// Scenario name -> loads, as `--load` takes them ("disk:file_mib=16+proc-read").
    #[serde(default)]
    pub presets: BTreeMap<String, String>,
}

impl ExperimentFile {
    pub fn read(path: &Path) -> anyhow::Result<ExperimentFile> {
        let shown = path.display();
        let text = std::fs::read_to_string(path).map_err(|e| usage(format!("--experiment {shown}: {e}")))?;
        // The TOML error's Display spans several lines (with a caret): say where and what.
        let file: ExperimentFile = toml::from_str(&text).map_err(|e| {
            let line = e.span().map(|span| text[..span.start.min(text.len())].matches('\n').count() + 1);
            let at = line.map(|l| format!(" line {l}:")).unwrap_or_default();
            usage(format!("--experiment {shown}:{at} {}", e.message().trim()))
        })?;
        file.check_presets().map_err(|e| usage(format!("--experiment {shown}: {e}")))?;
        Ok(file)
    }

    /// The `[presets]` names: neither a built-in preset or load, nor a list separator.
    pub fn check_presets(&self) -> Result<(), String> {
        for name in self.presets.keys() {
            if rtlab_load::PRESETS.iter().any(|(p, _)| p == name) || rtlab_load::LOADS.contains(&name.as_str()) {
                return Err(format!("preset {name:?} is already a built-in preset or load; choose another name"));
            }
            if name.is_empty() || name.contains([',', '+', ':']) {
                return Err(format!("preset name {name:?} may not be empty or contain ',', '+' or ':'"));
            }
        }
        Ok(())
    }

    /// `args` with every option the command line left out taken from the file.
    pub fn under(self, mut args: RunArgs) -> RunArgs {
        fn fill<T>(slot: &mut Option<T>, from_file: Option<T>) {
            if slot.is_none() {
                *slot = from_file;
            }
        }
        fill(&mut args.label, self.label);
        // --probe and --taskset exclude each other: one on the command line replaces both.
        if args.probe.is_none() && args.taskset.is_none() {
            args.probe = self.probe.map(|l| l.joined());
            args.taskset = self.taskset;
        }
        fill(&mut args.periods, self.periods.map(|l| l.joined()));
        fill(&mut args.sleep, self.sleep);
        fill(&mut args.rate, self.rate);
        fill(&mut args.rates, self.rates.map(|l| l.joined()));
        fill(&mut args.sweep_of, self.sweep_of);
        fill(&mut args.trigger_cpu, self.trigger_cpu);
        fill(&mut args.bind, self.bind);
        fill(&mut args.interface, self.interface);
        fill(&mut args.station, self.station);
        fill(&mut args.key, self.key);
        fill(&mut args.delta, self.delta);
        fill(&mut args.noise_threshold, self.noise_threshold);
        fill(&mut args.interval, self.interval);
        fill(&mut args.priority, self.priority);
        fill(&mut args.policy, self.policy);
        fill(&mut args.cpus, self.cpus.map(|c| c.text()));
        // --duration, --samples and --until exclude each other: one on the command line
        // replaces all three.
        if args.duration.is_none() && args.samples.is_none() && args.until.is_none() {
            args.duration = self.duration;
            args.samples = self.samples;
            args.until = self.until;
        }
        fill(&mut args.max_duration, self.max_duration);
        fill(&mut args.target, self.target);
        fill(&mut args.window, self.window);
        fill(&mut args.warmup, self.warmup);
        fill(&mut args.output, self.output);
        args.raw |= self.raw.unwrap_or(false);
        args.split |= self.split.unwrap_or(false);
        if args.explain_above.is_none() {
            args.explain_above = self.explain_above.clone();
        }
        args.no_dma_latency |= self.dma_latency == Some(false);
        fill(&mut args.histogram_max, self.histogram_max);
        fill(&mut args.load, self.load.map(|l| l.joined()));
        fill(&mut args.load_cpus, self.load_cpus.map(|c| c.text()));
        fill(&mut args.settle, self.settle);
        fill(&mut args.scratch, self.scratch);
        // --require on the command line replaces the file's requirements.
        if args.require.is_empty() {
            args.require = self.require.map(TextList::items).unwrap_or_default();
        }
        args.presets = self.presets;
        args
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ExperimentFile, toml::de::Error> {
        toml::from_str(text)
    }

    #[test]
    fn every_key_fills_what_the_command_line_left_out() {
        let file = parse(
            r#"
            label = "lab"
            probe = ["timer", "ipc:futex"]
            periods = "300us,1ms"
            sleep = "10ms"
            rate = "500"
            rates = ["500", "1000"]
            sweep_of = "ipc:pipe"
            trigger_cpu = "same"
            bind = "127.0.0.1"
            interface = "lo"
            interval = "500us"
            priority = 80
            policy = "rr"
            cpus = [0, 1]
            duration = "10s"
            warmup = 5
            raw = true
            dma_latency = false
            histogram_max = "1s"
            load = ["idle", "mine"]
            load_cpus = "1"
            settle = "0s"
            require = ["timer max < 500us", "timer p99.9 < 100us"]
            [presets]
            mine = "cpu:threads=1+proc-read"
            "#,
        )
        .unwrap();
        let args = RunArgs { interval: Some("1ms".into()), ..Default::default() };
        let merged = file.under(args);
        assert_eq!(merged.interval.as_deref(), Some("1ms"), "the command line wins");
        assert_eq!(merged.label.as_deref(), Some("lab"));
        assert_eq!(merged.probe.as_deref(), Some("timer,ipc:futex"));
        assert_eq!(merged.periods.as_deref(), Some("300us,1ms"));
        assert_eq!(merged.sleep.as_deref(), Some("10ms"));
        assert_eq!(merged.rate.as_deref(), Some("500"));
        assert_eq!(merged.rates.as_deref(), Some("500,1000"));
        assert_eq!(merged.sweep_of.as_deref(), Some("ipc:pipe"));
        assert_eq!(merged.trigger_cpu.as_deref(), Some("same"));
        assert_eq!((merged.bind.as_deref(), merged.interface.as_deref()), (Some("127.0.0.1"), Some("lo")));
        assert_eq!(merged.priority, Some(80));
        assert_eq!(merged.policy, Some(PolicyArg::Rr));
        assert_eq!(merged.cpus.as_deref(), Some("0,1"));
        assert_eq!(merged.duration.as_deref(), Some("10s"));
        assert_eq!(merged.warmup, Some(5));
        assert!(merged.raw && merged.no_dma_latency);
        assert_eq!(merged.load.as_deref(), Some("idle,mine"));
        assert_eq!(merged.load_cpus.as_deref(), Some("1"));
        assert_eq!(merged.presets["mine"], "cpu:threads=1+proc-read");
        assert_eq!(merged.require, vec!["timer max < 500us", "timer p99.9 < 100us"]);
    }

    #[test]
    fn one_requirement_as_a_string_and_the_command_line_replaces_them() {
        let merged = parse("require = \"timer max < 1ms\"").unwrap().under(RunArgs::default());
        assert_eq!(merged.require, vec!["timer max < 1ms"]);
        let args = RunArgs { require: vec!["timer p50 < 50us".into()], ..Default::default() };
        let merged = parse("require = [\"timer max < 1ms\"]").unwrap().under(args);
        assert_eq!(merged.require, vec!["timer p50 < 50us"]);
    }

    #[test]
    fn a_taskset_key_and_the_command_line_probe_or_taskset_replacing_it() {
        let file = || parse("taskset = \"sets/three.toml\"\nprobe = \"timer\"").unwrap();
        let merged = file().under(RunArgs::default());
        assert_eq!(merged.taskset, Some(PathBuf::from("sets/three.toml")));
        let merged = file().under(RunArgs { probe: Some("switch".into()), ..Default::default() });
        assert_eq!((merged.probe.as_deref(), merged.taskset), (Some("switch"), None));
        let merged = file().under(RunArgs { taskset: Some("mine.toml".into()), ..Default::default() });
        assert_eq!((merged.probe, merged.taskset), (None, Some(PathBuf::from("mine.toml"))));
    }

    #[test]
    fn samples_on_the_command_line_replace_the_file_duration() {
        let file = parse("duration = \"10s\"").unwrap();
        let merged = file.under(RunArgs { samples: Some(100), ..Default::default() });
        assert_eq!((merged.duration, merged.samples), (None, Some(100)));
    }

    #[test]
    fn the_stop_rule_keys_and_the_command_line_duration_replacing_them() {
        let file =
            parse("until = \"converged:p99.9\"\nmax_duration = \"10m\"\ntarget = \"2%\"\nwindow = \"5s\"").unwrap();
        let merged = file.under(RunArgs::default());
        assert_eq!(merged.until.as_deref(), Some("converged:p99.9"));
        assert_eq!(
            (merged.max_duration.as_deref(), merged.target.as_deref(), merged.window.as_deref()),
            (Some("10m"), Some("2%"), Some("5s"))
        );
        let file = parse("until = \"converged\"").unwrap();
        let merged = file.under(RunArgs { duration: Some("30s".into()), ..Default::default() });
        assert_eq!((merged.until, merged.duration.as_deref()), (None, Some("30s")));
    }

    #[test]
    fn unknown_keys_and_wrong_types_are_refused() {
        assert!(parse("intervall = \"1ms\"").unwrap_err().to_string().contains("intervall"));
        assert!(parse("priority = \"high\"").is_err());
        assert!(parse("policy = \"batch\"").is_err());
    }
}
