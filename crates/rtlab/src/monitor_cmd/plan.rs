//! `rtlab monitor`'s arguments, checked before anything starts.

use crate::cli::{MonitorArgs, MonitorProbeArg, PolicyArg};
use crate::errors::usage;
use crate::plan_values::{parse_interval, resolve_cpus, DEFAULT_PRIORITY, MAX_RUN_NS};
use rtlab_analysis::units::parse_time_ns;
use rtlab_probe::windows::WindowSource;
use rtlab_results::host::Policy;
use std::net::SocketAddr;
use std::path::PathBuf;

/// One phase of the load schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Phase {
    /// As given: "idle", "cpu+io", a preset.
    pub name: String,
    pub windows: u64,
}

/// The validated monitor.
#[derive(Debug, Clone)]
pub struct MonitorPlan {
    pub db: PathBuf,
    pub source: WindowSource,
    /// `-P timerlat -p N`: the SCHED_FIFO priority of the kernel's timerlat threads (rtla
    /// -P f:N); None keeps the kernel's own.
    pub timerlat_priority: Option<i32>,
    pub window_ns: u64,
    pub interval_ns: u64,
    pub policy: Policy,
    pub priority: i32,
    pub cpus: Vec<usize>,
    pub phases: Vec<Phase>,
    pub schedule_text: String,
    pub load_cpus: Option<Vec<usize>>,
    pub keep_ns: i64,
    pub keep_windows_ns: i64,
    pub listen: Option<SocketAddr>,
    pub token: Option<String>,
    pub duration_ns: Option<u64>,
    pub histogram_max_ns: u64,
    pub dma_latency: bool,
    pub quiet: bool,
}

impl MonitorPlan {
    pub fn from_args(args: &MonitorArgs, online: &[usize]) -> anyhow::Result<Self> {
        let window_ns = parse_time_ns(&args.window).map_err(|e| usage(format!("--window: {e}")))?;
        if window_ns < 1_000_000_000 {
            return Err(usage(format!("--window {}: at least 1s", args.window)));
        }
        if window_ns > 86_400_000_000_000 {
            return Err(usage(format!("--window {}: at most 1d", args.window)));
        }
        let interval_ns = parse_interval(&args.interval)?;
        if interval_ns > window_ns {
            return Err(usage(format!("--interval {} is longer than a window ({})", args.interval, args.window)));
        }
        let source = match args.probe {
            MonitorProbeArg::Timer => WindowSource::Timer,
            MonitorProbeArg::Timerlat => WindowSource::Timerlat,
        };
        if source == WindowSource::Timerlat {
            // The kernel's limits, refused here rather than by the tracer's files.
            if !rtlab_probe::timerlat::PERIOD_RANGE_NS.contains(&interval_ns) || !interval_ns.is_multiple_of(1_000) {
                return Err(usage(format!(
                    "--interval {}: the timerlat tracer's period is whole microseconds from 100us to 1s",
                    args.interval
                )));
            }
            if args.policy.is_some_and(|p| p != PolicyArg::Fifo) {
                return Err(usage(
                    "--policy: the kernel's timerlat threads run at SCHED_FIFO (-p sets their priority)",
                ));
            }
        }
        let policy = crate::experiment::policy_of(args.policy.unwrap_or(PolicyArg::Fifo));
        let priority = args.priority.unwrap_or(if policy.is_realtime() { DEFAULT_PRIORITY } else { 0 });
        let range = if policy.is_realtime() { 1..=99 } else { 0..=0 };
        if !range.contains(&priority) {
            return Err(usage(format!(
                "--priority {priority} is out of range for {}: use {}..={}",
                policy.kernel_name(),
                range.start(),
                range.end()
            )));
        }
        let cpus = resolve_cpus("--cpus", args.cpus.as_deref(), online)?;
        let load_cpus = match &args.load_cpus {
            Some(text) => Some(resolve_cpus("--load-cpus", Some(text), online)?),
            None => None,
        };
        let (phases, schedule_text) = match &args.schedule {
            Some(text) => (parse_schedule(text, window_ns)?, text.trim().to_string()),
            None => (vec![Phase { name: "idle".into(), windows: 1 }], String::new()),
        };
        let keep_ns = parse_time_ns(&args.keep).map_err(|e| usage(format!("--keep: {e}")))?;
        if keep_ns < window_ns {
            return Err(usage(format!("--keep {}: shorter than a window", args.keep)));
        }
        let keep_windows_ns = parse_time_ns(&args.keep_windows).map_err(|e| usage(format!("--keep-windows: {e}")))?;
        if keep_windows_ns < 3_600_000_000_000 {
            return Err(usage(format!(
                "--keep-windows {}: at least 1h (windows are merged into hours)",
                args.keep_windows
            )));
        }
        let duration_ns = match &args.duration {
            Some(text) => {
                let ns = parse_time_ns(text).map_err(|e| usage(format!("--duration: {e}")))?;
                if ns < window_ns {
                    return Err(usage(format!("--duration {text} is shorter than a window ({})", args.window)));
                }
                if ns > MAX_RUN_NS {
                    return Err(usage(format!("--duration {text}: at most 366d")));
                }
                Some(ns)
            }
            None => None,
        };
        let histogram_max_ns =
            parse_time_ns(&args.histogram_max).map_err(|e| usage(format!("--histogram-max: {e}")))?;
        if histogram_max_ns < 1_000 {
            return Err(usage("--histogram-max must be at least 1us"));
        }
        let token = match &args.metrics_token_file {
            Some(path) => Some(read_token(path)?),
            None => None,
        };
        let listen = match &args.listen {
            Some(text) => {
                let address: SocketAddr = text.parse().map_err(|_| {
                    usage(format!("--listen {text:?}: give ADDR:PORT, e.g. 127.0.0.1:9464 or [::1]:9464"))
                })?;
                if !address.ip().is_loopback() && token.is_none() {
                    return Err(usage(format!(
                        "--listen {text}: an address other than loopback needs --metrics-token-file, so that only your Prometheus reads the metrics"
                    )));
                }
                Some(address)
            }
            None if token.is_some() => return Err(usage("--metrics-token-file protects --listen: give --listen too")),
            None => None,
        };
        Ok(Self {
            db: args.db.clone(),
            source,
            timerlat_priority: args.priority.filter(|_| source == WindowSource::Timerlat).map(|p| p as i32),
            window_ns,
            interval_ns,
            policy,
            priority: priority as i32,
            cpus,
            phases,
            schedule_text,
            load_cpus,
            keep_ns: keep_ns.min(i64::MAX as u64) as i64,
            keep_windows_ns: keep_windows_ns.min(i64::MAX as u64) as i64,
            listen,
            token,
            duration_ns,
            histogram_max_ns,
            dma_latency: !args.no_dma_latency,
            quiet: args.quiet,
        })
    }

    /// The phase of window `index`: the schedule repeats.
    pub fn phase_of(&self, index: u64) -> &Phase {
        let cycle: u64 = self.phases.iter().map(|p| p.windows).sum();
        let mut position = index % cycle.max(1);
        for phase in &self.phases {
            if position < phase.windows {
                return phase;
            }
            position -= phase.windows;
        }
        &self.phases[0]
    }
}

/// "idle:30m,cpu+io:30m": each length a whole number of windows; each load checked.
fn parse_schedule(text: &str, window_ns: u64) -> anyhow::Result<Vec<Phase>> {
    let mut phases = Vec::new();
    for part in text.split(',').map(str::trim) {
        let Some((name, length)) = part.rsplit_once(':') else {
            return Err(usage(format!("--schedule {text:?}: {part:?} is not NAME:LENGTH (e.g. idle:30m)")));
        };
        let name = name.trim();
        let ns = parse_time_ns(length.trim()).map_err(|e| usage(format!("--schedule {part:?}: {e}")))?;
        if ns == 0 || ns % window_ns != 0 {
            return Err(usage(format!(
                "--schedule {part:?}: a phase lasts a whole number of windows ({} ns each)",
                window_ns
            )));
        }
        if name != "idle" {
            rtlab_load::scenario(name).map_err(|e| usage(format!("--schedule {name:?}: {e}")))?;
        }
        phases.push(Phase { name: name.to_string(), windows: ns / window_ns });
    }
    Ok(phases)
}

/// The bearer token, from a file only its owner (you or root) can read or change
/// ([`rtlab_sys::secret::read_private_file`]).
fn read_token(path: &std::path::Path) -> anyhow::Result<String> {
    let shown = path.display();
    let bytes =
        rtlab_sys::secret::read_private_file(path).map_err(|e| usage(format!("--metrics-token-file {shown} {e}")))?;
    let text = String::from_utf8(bytes).map_err(|_| usage(format!("--metrics-token-file {shown}: not text")))?;
    let token = text.trim().to_string();
    // RFC 6750's token characters: what an Authorization header can carry as it is.
    let token_char = |c: char| c.is_ascii_alphanumeric() || "-._~+/=".contains(c);
    if token.len() < 16 || !token.chars().all(token_char) {
        return Err(usage(format!(
            "--metrics-token-file {}: the token must be one line of at least 16 characters from A-Z a-z 0-9 - . _ ~ + / =",
            path.display()
        )));
    }
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Wrap {
        #[command(flatten)]
        args: MonitorArgs,
    }

    fn plan(argv: &[&str]) -> anyhow::Result<MonitorPlan> {
        let mut full = vec!["monitor"];
        full.extend_from_slice(argv);
        MonitorPlan::from_args(&Wrap::parse_from(full).args, &[0, 1])
    }

    #[test]
    fn defaults() {
        let p = plan(&[]).unwrap();
        assert_eq!(
            (p.window_ns, p.interval_ns, p.priority, p.cpus.clone()),
            (60_000_000_000, 1_000_000, 95, vec![0, 1])
        );
        assert_eq!(p.phase_of(12345).name, "idle");
        assert_eq!(p.listen, None);
    }

    #[test]
    fn schedules_repeat_by_whole_windows() {
        let p = plan(&["--window", "10s", "--schedule", "idle:20s,cpu:10s"]).unwrap();
        let names: Vec<_> = (0..7).map(|i| p.phase_of(i).name.clone()).collect();
        assert_eq!(names, ["idle", "idle", "cpu", "idle", "idle", "cpu", "idle"]);
        assert!(plan(&["--window", "10s", "--schedule", "idle:15s"]).is_err());
        assert!(plan(&["--schedule", "idle"]).is_err());
        assert!(plan(&["--schedule", "nonsense:1m"]).is_err());
    }

    #[test]
    fn refusals() {
        for bad in [
            &["--window", "10ms"][..],
            &["--window", "2s", "--interval", "3s"],
            &["--listen", "localhost"],
            &["--listen", "0.0.0.0:9464"],
            &["--duration", "1s"],
            &["--keep", "1s"],
            &["--keep-windows", "10m"],
            &["--priority", "100"],
            &["--metrics-token-file", "/nonexistent"],
        ] {
            assert!(plan(bad).is_err(), "{bad:?}");
        }
        assert_eq!(plan(&["--listen", "[::1]:9464"]).unwrap().listen.unwrap().port(), 9464);
    }

    #[test]
    fn timerlat_takes_the_tracers_periods_and_sets_its_threads_priority_only_when_asked() {
        let p = plan(&["-P", "timerlat"]).unwrap();
        assert_eq!((p.source, p.timerlat_priority), (WindowSource::Timerlat, None));
        assert_eq!(plan(&["-P", "timerlat", "-p", "80"]).unwrap().timerlat_priority, Some(80));
        assert_eq!(plan(&["-p", "80"]).unwrap().timerlat_priority, None, "the timer probe's own threads");
        for bad in [
            &["-P", "timerlat", "-i", "50us"][..],
            &["-P", "timerlat", "-i", "100500ns"],
            &["-P", "timerlat", "--policy", "other"],
            &["-P", "timerlat", "--policy", "rr"],
        ] {
            let e = plan(bad).unwrap_err();
            assert_eq!(crate::errors::exit_code_of(&e), crate::errors::EXIT_USAGE, "{bad:?}: {e}");
        }
    }
}
