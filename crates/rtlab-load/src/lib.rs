//! rtlab-load: the load generators that turn an "unloaded" run into a "loaded" one, and the
//! evidence that the load was really there.
//!
//! Main types:
//! - [`Load`]: one load generator. `start` it, `check_alive` it while measuring, `stop` it
//!   to get its [`LoadReport`]. Dropping a load also stops it and removes its files.
//! - [`LoadReport`]: what a load achieved ([`Intensity`]: packets/s, MB/s, files/s,
//!   CPU-seconds...), with its resolved parameters and whether it died early; serialised
//!   into run.json "loads".
//! - The loads, each with a typed parameter struct whose `Default` is the documented default:
//!   [`cpu::CpuLoad`], [`udp_flood::UdpFloodLoad`], [`comms::CommsLoad`], [`disk::DiskLoad`],
//!   [`memory::MemoryLoad`], [`proc_read::ProcReadLoad`], [`fs_walk::FsWalkLoad`],
//!   [`compress::CompressLoad`], [`compile::CompileLoad`], [`exec::ExecLoad`],
//!   [`ping_flood::PingFloodLoad`], [`messaging::MessagingLoad`].
//! - [`host::LoadHost`]: a scenario's loads in a child process of their own (how rtlab runs
//!   them), and [`host::serve`], the child's side.
//! - [`preset`] and [`parse_load_spec`]: loads by name (`akamina`, `udp-flood:rate=100000`).
//! - [`remote::RemoteLoad`]: a flood or comms client sent to a second station
//!   (`remote:udp-flood@HOST`).
//!
//! In-process loads are threads running SCHED_OTHER that poll a stop flag at least every
//! 100 ms and count their work in atomics; loads that run programs use
//! [`rtlab_sys::process::ManagedChild`], so nothing they start outlives rtlab.

pub mod comms;
pub mod compile;
pub mod compress;
pub mod cpu;
pub mod disk;
pub mod exec;
pub mod fs_walk;
pub mod host;
pub mod memory;
pub mod messaging;
mod params;
pub mod ping_flood;
pub mod proc_read;
pub mod remote;
mod scratch;
mod spec;
pub mod udp_flood;
mod worker;

pub use scratch::{default_parent as default_scratch_parent, remove_stale_scratch, set_default_scratch_parent};
pub use spec::{parse_load_list, parse_load_spec, preset, scenario, Scenario, LOADS, PRESETS, REGNIER_SHELL_LOOP};

pub use rtlab_results::load::{Intensity, LoadReport};

/// Errors of the loads. Each names the load, so the binary can say which one is wrong.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// A parameter is invalid; found before anything runs.
    #[error("load {load}: {message}")]
    Config { load: String, message: String },
    #[error("load {load}: {what}: {source}")]
    Io {
        load: String,
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("load {load}: {source}")]
    Sys {
        load: String,
        #[source]
        source: rtlab_sys::SysError,
    },
    /// start/stop called in the wrong order.
    #[error("load {load}: {message}")]
    State { load: String, message: String },
    #[error("unknown load or preset {name:?}; known loads: {loads}; presets: {presets}")]
    Unknown { name: String, loads: String, presets: String },
}

impl LoadError {
    pub(crate) fn config(load: &str, message: impl Into<String>) -> Self {
        Self::Config { load: load.to_string(), message: message.into() }
    }

    pub(crate) fn io(load: &str, what: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io { load: load.to_string(), what: what.into(), source }
    }

    pub(crate) fn sys(load: &str, source: rtlab_sys::SysError) -> Self {
        Self::Sys { load: load.to_string(), source }
    }

    pub(crate) fn state(load: &str, message: impl Into<String>) -> Self {
        Self::State { load: load.to_string(), message: message.into() }
    }

    /// True for errors in the user's input (exit 2), false for the environment (exit 3).
    pub fn is_usage_error(&self) -> bool {
        matches!(self, Self::Config { .. } | Self::Unknown { .. })
    }
}

/// One load generator. A load is started once and stopped once.
pub trait Load: Send {
    /// Load name as used on the command line ("udp-flood").
    fn name(&self) -> &str;
    /// Starts generating load; returns once the load is running (sockets bound, threads
    /// and processes started).
    fn start(&mut self) -> Result<(), LoadError>;
    /// Stops the load (within about a second) and reports what it achieved.
    fn stop(&mut self) -> Result<LoadReport, LoadError>;
    /// `Some(reason)` if the load stopped working before `stop` (a thread failed, the
    /// program exited): the run must then not be presented as loaded.
    fn check_alive(&mut self) -> Option<String>;
}

/// `count` per second over `seconds`; 0 for an empty interval.
pub(crate) fn per_second(count: f64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        count / seconds
    } else {
        0.0
    }
}

/// Bytes to MB (10^6 bytes): the unit of every throughput a load reports.
pub(crate) fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

#[cfg(test)]
pub(crate) mod test_util {
    use super::*;
    use std::time::{Duration, Instant};

    /// Runs `load` for `run`, checks it stayed alive, stops it and checks the stop took
    /// less than a second. Returns the report.
    pub fn run_for(load: &mut dyn Load, run: Duration) -> LoadReport {
        load.start().unwrap_or_else(|e| panic!("{} did not start: {e}", load.name()));
        std::thread::sleep(run);
        assert_eq!(load.check_alive(), None, "{} died", load.name());
        let asked = Instant::now();
        let report = load.stop().unwrap_or_else(|e| panic!("{} did not stop: {e}", load.name()));
        let latency = asked.elapsed();
        assert!(latency < Duration::from_secs(1), "{} took {latency:?} to stop", load.name());
        assert_eq!(report.died_early, None);
        assert!(report.duration_s >= run.as_secs_f64() * 0.9, "{report:?}");
        // The report must survive run.json (floats to the last bit or so: serde_json's
        // default float parsing is not an exact round trip).
        let json = serde_json::to_string(&report).unwrap();
        let back: LoadReport = serde_json::from_str(&json).unwrap();
        assert_eq!(
            (&back.name, &back.parameters, &back.died_early),
            (&report.name, &report.parameters, &report.died_early)
        );
        assert_eq!(back.achieved.len(), report.achieved.len());
        for (b, r) in back.achieved.iter().zip(&report.achieved) {
            assert_eq!((&b.name, &b.unit), (&r.name, &r.unit));
            assert!((b.value - r.value).abs() <= 1e-12 * r.value.abs().max(1.0), "{b:?} != {r:?}");
        }
        report
    }

    pub fn positive(report: &LoadReport, name: &str) -> f64 {
        let value = report.intensity(name).unwrap_or_else(|| panic!("no {name:?} in {report:?}"));
        assert!(value > 0.0, "{name} = {value} in {report:#?}");
        value
    }
}
