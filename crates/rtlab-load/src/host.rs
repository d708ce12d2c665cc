//! The load host: a scenario's loads run in a child process of their own, not in rtlab.
//!
//! Why a separate process: loads that map and unmap memory in the measuring process would
//! send TLB-shootdown interrupts to the CPUs of the real-time threads (same address space),
//! `mlockall(MCL_FUTURE)` would lock and pre-fault what the loads allocate, and
//! `--load-cpus` is one affinity mask for a whole process. In a child, the loads are what the
//! papers ran: other programs on the same machine.
//!
//! ```text
//! rtlab ── supervisor ── rtlab __load-host --scenario SPEC [--cpus L] [--scratch D]  (own group)
//!                             └── threads of the in-process loads, children of compile/exec
//! ```
//!
//! The child is a [`ManagedChild`] (killed with its group when rtlab stops or dies, even by
//! SIGKILL). Protocol, one JSON object per line: the host writes [`HostMessage`]s on stdout
//! (`started` once every load runs, `died` when one stops working, `reports` after stop);
//! rtlab writes `stop` on its stdin (end of file means the same).

use crate::{scenario, Load, LoadError, LoadReport};
use rtlab_sys::process::ManagedChild;
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;

/// The hidden subcommand of the rtlab binary that runs [`serve`].
pub const HOST_SUBCOMMAND: &str = "__load-host";

/// How long `start` waits for every load to be running (compilers and file systems can be
/// slow to start; a load that needs longer is broken).
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long `stop` waits for the reports: loads stop within about a second each.
const STOP_TIMEOUT: Duration = Duration::from_secs(15);
/// How often the host checks its loads.
const CHECK_INTERVAL: Duration = Duration::from_millis(100);

/// A line the host writes on its stdout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HostMessage {
    /// Every load of the scenario is running.
    Started,
    /// The scenario could not be built or started; `usage` marks bad parameters.
    Failed { message: String, usage: bool },
    /// A load stopped working before it was asked to stop.
    Died { load: String, reason: String },
    /// Every load stopped; what each achieved.
    Reports(Vec<LoadReport>),
}

/// The rtlab side of a running load host.
pub struct LoadHost {
    scenario: String,
    child: ManagedChild,
    stdin: Option<std::process::ChildStdin>,
    messages: Receiver<HostMessage>,
    /// First failure seen: kept so that `check_alive` keeps reporting it.
    failure: Option<String>,
}

/// `message` without a leading "load SCENARIO: ", which the error adds again.
fn without_prefix(scenario: &str, message: String) -> String {
    match message.strip_prefix(&format!("load {scenario}: ")) {
        Some(rest) => rest.to_string(),
        None => message,
    }
}

impl LoadHost {
    /// Starts `exe __load-host` for `scenario` (a preset or loads joined with `+`, already
    /// validated by the caller) on `cpus` (None = all), with scratch directories under
    /// `scratch` (None = the default), and returns once every load runs.
    pub fn start(
        exe: &Path,
        scenario: &str,
        cpus: Option<&[usize]>,
        scratch: Option<&Path>,
    ) -> Result<LoadHost, LoadError> {
        let mut command = Command::new(exe);
        command.arg(HOST_SUBCOMMAND).arg("--scenario").arg(scenario);
        if let Some(dir) = scratch {
            command.arg("--scratch").arg(dir);
        }
        if let Some(cpus) = cpus {
            let list = cpus.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(",");
            command.arg("--cpus").arg(list);
        }
        // The remote loads' station (and the key of its echo server).
        if let Some(station) = crate::remote::station() {
            command.arg("--station").arg(station.address.to_string());
            if let Some(key) = station.key_file {
                command.arg("--station-key").arg(key);
            }
        }
        // stderr stays rtlab's: a load host that cannot even report says why there.
        command.stdin(Stdio::piped()).stdout(Stdio::piped());
        let mut child = ManagedChild::spawn(command).map_err(|e| LoadError::sys(scenario, e))?;
        let stdin = child.take_stdin();
        let stdout = child.take_stdout().ok_or_else(|| LoadError::state(scenario, "load host has no stdout"))?;
        let (sender, messages) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("rtlab-load-host".into())
            .spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    let message = serde_json::from_str(&line).unwrap_or_else(|e| HostMessage::Failed {
                        message: format!("unreadable message from the load host ({e}): {line}"),
                        usage: false,
                    });
                    if sender.send(message).is_err() {
                        break;
                    }
                }
            })
            .map_err(|e| LoadError::io(scenario, "start the load host reader", e))?;
        let mut host = LoadHost { scenario: scenario.to_string(), child, stdin, messages, failure: None };
        match host.messages.recv_timeout(START_TIMEOUT) {
            Ok(HostMessage::Started) => Ok(host),
            // A one-load scenario's message already names it ("load X: ..."): said once.
            Ok(HostMessage::Failed { message, usage: true }) => {
                Err(LoadError::config(scenario, without_prefix(scenario, message)))
            }
            Ok(HostMessage::Failed { message, .. }) | Ok(HostMessage::Died { reason: message, .. }) => {
                Err(LoadError::state(scenario, without_prefix(scenario, message)))
            }
            Ok(HostMessage::Reports(_)) => Err(LoadError::state(scenario, "load host reported before starting")),
            Err(RecvTimeoutError::Timeout) => {
                Err(LoadError::state(scenario, format!("the loads did not start within {} s", START_TIMEOUT.as_secs())))
            }
            Err(RecvTimeoutError::Disconnected) => {
                let reason = host.exit_reason();
                Err(LoadError::state(scenario, reason))
            }
        }
    }

    /// `Some(reason)` once a load stopped working or the host itself ended.
    pub fn check_alive(&mut self) -> Option<String> {
        if self.failure.is_none() {
            loop {
                match self.messages.try_recv() {
                    Ok(HostMessage::Died { load, reason }) => {
                        self.failure = Some(format!("{load}: {reason}"));
                        break;
                    }
                    Ok(HostMessage::Failed { message, .. }) => {
                        self.failure = Some(message);
                        break;
                    }
                    Ok(_) => continue,
                    Err(std::sync::mpsc::TryRecvError::Empty) => break,
                    Err(std::sync::mpsc::TryRecvError::Disconnected) => {
                        self.failure = Some(self.exit_reason());
                        break;
                    }
                }
            }
        }
        self.failure.clone()
    }

    /// Asks every load to stop and returns their reports; the host process is gone after it.
    pub fn stop(mut self) -> Result<Vec<LoadReport>, LoadError> {
        if let Some(mut stdin) = self.stdin.take() {
            // A host that already ended cannot read it; its end shows below.
            let _ = stdin.write_all(b"stop\n").and_then(|()| stdin.flush());
        }
        let deadline = std::time::Instant::now() + STOP_TIMEOUT;
        let outcome = loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.messages.recv_timeout(left) {
                Ok(HostMessage::Reports(reports)) => break Ok(reports),
                Ok(HostMessage::Died { load, reason }) => {
                    self.failure.get_or_insert(format!("{load}: {reason}"));
                }
                Ok(HostMessage::Failed { message, .. }) => break Err(LoadError::state(&self.scenario, message)),
                Ok(HostMessage::Started) => {}
                Err(RecvTimeoutError::Timeout) => {
                    break Err(LoadError::state(
                        &self.scenario,
                        format!("the loads did not stop within {} s; they were killed", STOP_TIMEOUT.as_secs()),
                    ))
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let reason = self.exit_reason();
                    break Err(LoadError::state(&self.scenario, reason));
                }
            }
        };
        // The host exits by itself after reporting; stop() reaps it (and kills what is left).
        let _ = self.child.stop(Duration::from_secs(1));
        outcome
    }

    fn exit_reason(&mut self) -> String {
        match self.child.try_status() {
            Ok(Some(status)) => format!("the load host ended unexpectedly ({status})"),
            _ => "the load host closed its output unexpectedly".to_string(),
        }
    }
}

/// The host side: builds the loads of `spec`, restricts itself to `cpus`, starts the loads,
/// reports, and stops them when `input` says `stop` or ends. Returns the exit code.
pub fn serve(spec: &str, cpus: Option<&[usize]>, input: impl BufRead + Send + 'static, output: &mut dyn Write) -> i32 {
    let mut send = |message: &HostMessage| -> bool {
        let line = serde_json::to_string(message).expect("host messages serialise");
        writeln!(output, "{line}").and_then(|()| output.flush()).is_ok()
    };
    if let Some(cpus) = cpus {
        if let Err(e) = rtlab_sys::sched::restrict_current_thread(cpus) {
            send(&HostMessage::Failed { message: format!("--load-cpus: {e}"), usage: true });
            return 2;
        }
    }
    let mut loads: Vec<Box<dyn Load>> = match scenario(spec) {
        Ok(loads) => loads,
        Err(e) => {
            send(&HostMessage::Failed { message: e.to_string(), usage: e.is_usage_error() });
            return 2;
        }
    };
    for load in &mut loads {
        if let Err(e) = load.start() {
            // Dropping the loads stops those already started.
            send(&HostMessage::Failed { message: e.to_string(), usage: e.is_usage_error() });
            return 3;
        }
    }
    if !send(&HostMessage::Started) {
        return 3;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let reader_stop = stop.clone();
    // Reads until "stop" or end of file (rtlab closed the pipe or died).
    let _ = std::thread::Builder::new().name("load-host-input".into()).spawn(move || {
        for line in input.lines() {
            match line {
                Ok(l) if l.trim() == "stop" => break,
                Ok(_) => continue,
                Err(_) => break,
            }
        }
        reader_stop.store(true, Ordering::SeqCst);
    });
    let mut died: Vec<bool> = vec![false; loads.len()];
    while !stop.load(Ordering::SeqCst) {
        for (load, died) in loads.iter_mut().zip(died.iter_mut()) {
            if *died {
                continue;
            }
            if let Some(reason) = load.check_alive() {
                *died = true;
                send(&HostMessage::Died { load: load.name().to_string(), reason });
            }
        }
        std::thread::sleep(CHECK_INTERVAL);
    }
    let mut reports = Vec::new();
    for load in &mut loads {
        match load.stop() {
            Ok(report) => reports.push(report),
            Err(e) => {
                send(&HostMessage::Failed { message: e.to_string(), usage: false });
                return 3;
            }
        }
    }
    if send(&HostMessage::Reports(reports)) {
        0
    } else {
        3
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_one_load_scenario_is_named_once() {
        let message = "load station:udp-flood: the station refused".to_string();
        assert_eq!(without_prefix("station:udp-flood", message), "the station refused");
        assert_eq!(without_prefix("idle+cpu", "load cpu: failed".into()), "load cpu: failed");
    }

    fn messages(text: &[u8]) -> Vec<HostMessage> {
        std::str::from_utf8(text).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    }

    #[test]
    fn serve_starts_reports_and_stops() {
        let (reader, mut writer) = std::io::pipe().unwrap();
        let stopper = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(400));
            writer.write_all(b"stop\n").unwrap();
        });
        let mut out = Vec::new();
        let code = serve("cpu:threads=1+proc-read", None, BufReader::new(reader), &mut out);
        stopper.join().unwrap();
        assert_eq!(code, 0);
        let got = messages(&out);
        assert_eq!(got[0], HostMessage::Started);
        let HostMessage::Reports(reports) = got.last().unwrap() else { panic!("{got:?}") };
        let names: Vec<&str> = reports.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["cpu", "proc-read"]);
        assert!(reports.iter().all(|r| r.died_early.is_none() && r.duration_s > 0.3));
    }

    #[test]
    fn end_of_input_stops_too() {
        let mut out = Vec::new();
        let code = serve("proc-read", None, std::io::Cursor::new(Vec::new()), &mut out);
        assert_eq!(code, 0);
        assert!(matches!(messages(&out).last(), Some(HostMessage::Reports(r)) if r.len() == 1));
    }

    #[test]
    fn bad_spec_is_a_usage_failure() {
        let mut out = Vec::new();
        let code = serve("no-such-load", None, std::io::Cursor::new(Vec::new()), &mut out);
        assert_eq!(code, 2);
        assert!(matches!(&messages(&out)[..], [HostMessage::Failed { usage: true, .. }]));
    }

    #[test]
    fn a_load_that_ends_is_reported_as_died() {
        let (reader, mut writer) = std::io::pipe().unwrap();
        let stopper = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(700));
            writer.write_all(b"stop\n").unwrap();
        });
        let mut out = Vec::new();
        let code = serve("exec:argv=true", None, BufReader::new(reader), &mut out);
        stopper.join().unwrap();
        assert_eq!(code, 0);
        let got = messages(&out);
        assert!(got.iter().any(|m| matches!(m, HostMessage::Died { load, .. } if load == "exec")), "{got:?}");
    }
}
