//! `exec`: any external command as a load (stress-ng, hackbench, a kernel build), run
//! without a shell unless asked, managed like every child of rtlab: own process group,
//! killed with its group on stop, and when rtlab dies.

use crate::{per_second, Intensity, Load, LoadError, LoadReport};
use rtlab_sys::process::ManagedChild;
use serde::{Deserialize, Serialize};
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const NAME: &str = "exec";

/// Bytes of the command's stderr kept to explain an early exit.
const STDERR_TAIL: usize = 2048;

/// Parameters of [`ExecLoad`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ExecParams {
    /// Program and arguments, e.g. `["stress-ng", "--cpu", "2"]`.
    pub argv: Vec<String>,
    /// Run `sh -c` with the arguments joined by spaces, for pipes and redirections.
    pub shell: bool,
    /// Time between SIGTERM and SIGKILL when stopping, in ms.
    pub stop_grace_ms: u64,
}

impl Default for ExecParams {
    fn default() -> Self {
        Self { argv: Vec::new(), shell: false, stop_grace_ms: 500 }
    }
}

/// Finds `program` as `execvp` would: a path if it contains '/', else in $PATH. The
/// error names the program and says where it was looked for.
pub fn find_program(load: &str, program: &str) -> Result<PathBuf, LoadError> {
    fn executable(path: &Path) -> bool {
        std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    if program.is_empty() {
        return Err(LoadError::config(load, "the program name is empty"));
    }
    if program.contains('/') {
        let path = PathBuf::from(program);
        return if executable(&path) {
            Ok(path)
        } else {
            Err(LoadError::config(load, format!("program {program:?} does not exist or is not executable")))
        };
    }
    let search = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    std::env::split_paths(&search).map(|dir| dir.join(program)).find(|p| executable(p)).ok_or_else(|| {
        LoadError::config(load, format!("program {program:?} not found in PATH ({})", search.to_string_lossy()))
    })
}

/// Runs an external command for the duration of the load.
pub struct ExecLoad {
    params: ExecParams,
    program: PathBuf,
    child: Option<ManagedChild>,
    started: Option<Instant>,
    stderr: Arc<Mutex<Vec<u8>>>,
    /// Set by the first `check_alive` that saw the command gone.
    died: Option<String>,
}

impl ExecLoad {
    pub fn new(params: ExecParams) -> Result<Self, LoadError> {
        let Some(first) = params.argv.first() else {
            return Err(LoadError::config(NAME, "no command given"));
        };
        let program = if params.shell { find_program(NAME, "sh")? } else { find_program(NAME, first)? };
        Ok(Self { params, program, child: None, started: None, stderr: Arc::default(), died: None })
    }

    /// Pid of the running command (its process group id too).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(ManagedChild::pid)
    }

    fn describe_exit(&self, status: std::process::ExitStatus) -> String {
        let after = self.started.map(|s| s.elapsed().as_secs_f64()).unwrap_or(0.0);
        format!("{} exited ({status}) after {after:.1} s{}", self.params.argv[0], stderr_tail_line(&self.stderr))
    }
}

/// Keeps the last bytes a child writes to stderr, to explain an early exit. The reading
/// thread is not joined: it ends at end of file, when the child's group is gone.
pub(crate) fn spawn_stderr_tail(stderr: Option<std::process::ChildStderr>) -> Arc<Mutex<Vec<u8>>> {
    let tail = Arc::new(Mutex::new(Vec::new()));
    if let Some(mut stderr) = stderr {
        let kept = tail.clone();
        let _ = std::thread::Builder::new().name("load-stderr".into()).spawn(move || {
            let mut buf = [0u8; 1024];
            while let Ok(n) = stderr.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let mut kept = kept.lock().unwrap_or_else(|p| p.into_inner());
                kept.extend_from_slice(&buf[..n]);
                let excess = kept.len().saturating_sub(STDERR_TAIL);
                kept.drain(..excess);
            }
        });
    }
    tail
}

/// "; last stderr line: ..." or nothing, for an early-exit message.
pub(crate) fn stderr_tail_line(tail: &Mutex<Vec<u8>>) -> String {
    let tail = tail.lock().unwrap_or_else(|p| p.into_inner());
    let text = String::from_utf8_lossy(&tail);
    match text.trim().lines().last() {
        Some(line) => format!("; last stderr line: {line:?}"),
        None => String::new(),
    }
}

impl Load for ExecLoad {
    fn name(&self) -> &str {
        NAME
    }

    fn start(&mut self) -> Result<(), LoadError> {
        if self.child.is_some() || self.started.is_some() {
            return Err(LoadError::state(NAME, "already started"));
        }
        let mut command = Command::new(&self.program);
        if self.params.shell {
            command.arg("-c").arg(self.params.argv.join(" "));
        } else {
            command.args(&self.params.argv[1..]);
        }
        command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
        let mut child = ManagedChild::spawn(command).map_err(|e| LoadError::sys(NAME, e))?;
        self.started = Some(Instant::now());
        self.stderr = spawn_stderr_tail(child.take_stderr());
        self.child = Some(child);
        Ok(())
    }

    fn stop(&mut self) -> Result<LoadReport, LoadError> {
        let mut child = self.child.take().ok_or_else(|| LoadError::state(NAME, "not started"))?;
        // The load ran until it was asked to stop; the grace time is not part of it.
        let duration_s = self.started.map(|s| s.elapsed().as_secs_f64()).unwrap_or(0.0);
        let outcome =
            child.stop(Duration::from_millis(self.params.stop_grace_ms)).map_err(|e| LoadError::sys(NAME, e))?;
        let died_early = if outcome.exited_before_stop {
            self.died.clone().or_else(|| {
                Some(match outcome.status {
                    Some(status) => format!("{} exited ({status}) before it was stopped", self.params.argv[0]),
                    None => format!("{} ended before it was stopped", self.params.argv[0]),
                })
            })
        } else {
            None
        };
        let cpu_seconds = outcome.cpu_time.map(|c| c.as_secs_f64());
        let mut parameters = serde_json::to_value(&self.params).unwrap_or_default();
        parameters["program"] = self.program.display().to_string().into();
        let mut achieved = vec![Intensity::new("seconds run", duration_s, "s")];
        if let Some(cpu) = cpu_seconds {
            achieved.push(Intensity::new("CPUs busy", per_second(cpu, duration_s), "CPUs"));
        }
        Ok(LoadReport { name: NAME.to_string(), parameters, achieved, cpu_seconds, died_early, duration_s })
    }

    fn check_alive(&mut self) -> Option<String> {
        if self.died.is_some() {
            return self.died.clone();
        }
        let status = match self.child.as_mut()?.try_status() {
            Ok(status) => status?,
            Err(e) => return Some(format!("cannot watch {}: {e}", self.params.argv[0])),
        };
        self.died = Some(self.describe_exit(status));
        self.died.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::run_for;

    fn exec(argv: &[&str]) -> Result<ExecLoad, LoadError> {
        ExecLoad::new(ExecParams { argv: argv.iter().map(|s| s.to_string()).collect(), ..Default::default() })
    }

    #[test]
    fn runs_a_command_and_stops_its_group() {
        let mut load = exec(&["sh", "-c", "while :; do :; done & sleep 100"]).unwrap();
        let report = run_for(&mut load, Duration::from_millis(500));
        // The busy loop is a grandchild: its CPU time counts because the supervisor reaps it.
        assert!(report.cpu_seconds.unwrap() > 0.05, "{report:?}");
        assert!(report.intensity("CPUs busy").unwrap() > 0.1, "{report:?}");
        assert!(report.parameters["program"].as_str().unwrap().ends_with("/sh"));
    }

    #[test]
    fn early_exit_is_reported_with_status_and_stderr() {
        let mut load = exec(&["sh", "-c", "echo 'bad option --x' >&2; exit 3"]).unwrap();
        load.start().unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        let reason = loop {
            if let Some(reason) = load.check_alive() {
                break reason;
            }
            assert!(Instant::now() < deadline, "exit not noticed");
            std::thread::sleep(Duration::from_millis(10));
        };
        assert!(reason.contains("exit status: 3"), "{reason}");
        let report = load.stop().unwrap();
        assert!(report.died_early.unwrap().contains("exit status: 3"));
    }

    #[test]
    fn shell_mode() {
        let params = ExecParams { argv: vec!["sleep 100 | cat".into()], shell: true, ..Default::default() };
        let mut load = ExecLoad::new(params).unwrap();
        run_for(&mut load, Duration::from_millis(200));
    }

    #[test]
    fn missing_program_is_a_usage_error_naming_it() {
        for program in ["rtlab-no-such-program", "/nonexistent/rtlab-no-such-program"] {
            let err = exec(&[program, "--cpu", "2"]).err().unwrap();
            assert!(err.is_usage_error(), "{err}");
            assert!(err.to_string().contains("rtlab-no-such-program"), "{err}");
        }
        assert!(exec(&[]).err().unwrap().is_usage_error());
        // A directory is not a program.
        assert!(exec(&["/usr"]).err().unwrap().is_usage_error());
    }
}
