//! `compile`: compile a generated C program over and over with the system compiler, on N
//! jobs (Regnier's `make` loop; a small stand-in for rteval's kernel build).
//!
//! Each job is one managed `sh` loop (`while :; do cc ...; echo; done`), so the compiler is
//! started by the shell, not forked from rtlab for every build: rtlab forks once per job.
//! The shell prints a line per finished build, which the load counts.

use crate::exec::{find_program, spawn_stderr_tail, stderr_tail_line};
use crate::scratch;
use crate::worker::available_cpus;
use crate::{per_second, Intensity, Load, LoadError, LoadReport};
use rtlab_sys::process::{kill_process_group, ManagedChild};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const NAME: &str = "compile";

/// Time between SIGTERM and SIGKILL of a job when stopping.
const STOP_GRACE: Duration = Duration::from_millis(300);

/// Parameters of [`CompileLoad`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CompileParams {
    /// Parallel build loops; 0 = one per CPU this process may use.
    pub jobs: usize,
    /// C compiler, found in PATH like a shell would.
    pub compiler: String,
    /// Optimisation flag passed to the compiler.
    pub optimization: String,
    /// Functions in the generated program; 120 take about a second per build at -O2 on
    /// one core of the development machine.
    pub functions: usize,
    /// Where the scratch directory holding the source and binaries is created.
    pub parent: PathBuf,
}

impl Default for CompileParams {
    fn default() -> Self {
        Self {
            jobs: 0,
            compiler: "cc".to_string(),
            optimization: "-O2".to_string(),
            functions: 120,
            parent: crate::scratch::default_parent(),
        }
    }
}

/// A C program with loops and switches enough to keep the optimiser busy.
fn generate_source(functions: usize) -> String {
    let mut c = String::from("#include <stdio.h>\n#include <stdlib.h>\n\n");
    for i in 0..functions {
        let _ = write!(
            c,
            "static double f{i}(double x, int n) {{
    double acc = {i}.5;
    for (int k = 0; k < n; k++) {{
        switch ((k + {i}) % 8) {{
        case 0: acc += x * k; break;
        case 1: acc -= x / (k + 1); break;
        case 2: acc *= 1.0001; break;
        case 3: acc += (k ^ {i}) * 0.5; break;
        case 4: acc = acc > 1e6 ? acc / 3 : acc + {i}; break;
        case 5: for (int j = 0; j < 4; j++) acc += j * x; break;
        case 6: acc -= (double)(k % 7) * {i}; break;
        default: acc += x;
        }}
    }}
    return acc;
}}
"
        );
    }
    c.push_str("int main(int argc, char **argv) {\n    double s = 0;\n    int n = argc > 1 ? atoi(argv[1]) : 10;\n");
    for i in 0..functions {
        let _ = writeln!(c, "    s += f{i}(s * 1e-9, n);");
    }
    c.push_str("    printf(\"%f\\n\", s);\n    return 0;\n}\n");
    c
}

struct Job {
    child: ManagedChild,
    stderr: Arc<Mutex<Vec<u8>>>,
}

/// Builds a generated C program in a loop on N jobs.
pub struct CompileLoad {
    params: CompileParams,
    jobs: usize,
    compiler: PathBuf,
    builds: Arc<AtomicU64>,
    // Dropped (killed) before the scratch directory is removed.
    running: Vec<Job>,
    scratch: Option<tempfile::TempDir>,
    started: Option<Instant>,
}

impl CompileLoad {
    pub fn new(params: CompileParams) -> Result<Self, LoadError> {
        let compiler = find_program(NAME, &params.compiler)?;
        find_program(NAME, "sh")?;
        if params.functions == 0 || params.functions > 100_000 {
            return Err(LoadError::config(NAME, format!("functions must be 1 to 100000, not {}", params.functions)));
        }
        if !params.optimization.starts_with("-O") {
            return Err(LoadError::config(
                NAME,
                format!("optimization must be a -O flag, not {:?}", params.optimization),
            ));
        }
        scratch::check_parent(NAME, &params.parent)?;
        let jobs = if params.jobs == 0 { available_cpus() } else { params.jobs };
        Ok(Self { params, jobs, compiler, builds: Arc::default(), running: Vec::new(), scratch: None, started: None })
    }
}

impl Load for CompileLoad {
    fn name(&self) -> &str {
        NAME
    }

    fn start(&mut self) -> Result<(), LoadError> {
        if self.started.is_some() {
            return Err(LoadError::state(NAME, "already started"));
        }
        let dir = scratch::create(NAME, &self.params.parent)?;
        let source = dir.path().join("load.c");
        std::fs::write(&source, generate_source(self.params.functions))
            .map_err(|e| LoadError::io(NAME, format!("write {}", source.display()), e))?;
        let path = dir.path().to_path_buf();
        self.scratch = Some(dir);
        self.started = Some(Instant::now());
        for j in 0..self.jobs {
            // The compiler and flags are passed as positional parameters, never pasted into
            // the script, so no quoting can go wrong.
            let mut command = Command::new("sh");
            command
                .arg("-c")
                .arg(r#"while :; do "$1" "$2" -o "$3" load.c || exit 1; echo built; done"#)
                .arg("sh")
                .arg(&self.compiler)
                .arg(&self.params.optimization)
                .arg(format!("job-{j}"))
                .current_dir(&path)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            let mut child = ManagedChild::spawn(command).map_err(|e| LoadError::sys(NAME, e))?;
            if let Some(mut stdout) = child.take_stdout() {
                let builds = self.builds.clone();
                // Not joined: it ends at end of file, when the job's group is gone.
                let _ = std::thread::Builder::new().name(format!("load-compile-{j}")).spawn(move || {
                    let mut buf = [0u8; 256];
                    while let Ok(n) = stdout.read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                        let lines = buf[..n].iter().filter(|&&b| b == b'\n').count();
                        builds.fetch_add(lines as u64, Ordering::Relaxed);
                    }
                });
            }
            let stderr = spawn_stderr_tail(child.take_stderr());
            self.running.push(Job { child, stderr });
        }
        Ok(())
    }

    fn stop(&mut self) -> Result<LoadReport, LoadError> {
        let started = self.started.ok_or_else(|| LoadError::state(NAME, "not started"))?;
        let died_early = self.check_alive();
        let duration_s = started.elapsed().as_secs_f64();
        // Signal every job first, so they end in parallel.
        for job in &self.running {
            let _ = kill_process_group(job.child.pgid(), libc::SIGTERM);
        }
        let mut cpu = Duration::ZERO;
        for mut job in self.running.drain(..) {
            let outcome = job.child.stop(STOP_GRACE).map_err(|e| LoadError::sys(NAME, e))?;
            cpu += outcome.cpu_time.unwrap_or_default();
        }
        if let Some(dir) = self.scratch.take() {
            let shown = dir.path().display().to_string();
            dir.close().map_err(|e| LoadError::io(NAME, format!("remove scratch directory {shown}"), e))?;
        }
        let builds = self.builds.load(Ordering::Relaxed) as f64;
        let mut parameters = serde_json::to_value(&self.params).unwrap_or_default();
        parameters["jobs"] = self.jobs.into();
        parameters["compiler_path"] = self.compiler.display().to_string().into();
        Ok(LoadReport {
            name: NAME.to_string(),
            parameters,
            achieved: vec![
                Intensity::new("builds/min", per_second(builds, duration_s) * 60.0, "builds/min"),
                Intensity::new("CPUs busy", per_second(cpu.as_secs_f64(), duration_s), "CPUs"),
                Intensity::new("builds", builds, "builds"),
            ],
            cpu_seconds: Some(cpu.as_secs_f64()),
            died_early,
            duration_s,
        })
    }

    fn check_alive(&mut self) -> Option<String> {
        for (j, job) in self.running.iter_mut().enumerate() {
            match job.child.try_status() {
                Ok(None) => {}
                Ok(Some(status)) => {
                    return Some(format!("build job {j} stopped ({status}){}", stderr_tail_line(&job.stderr)))
                }
                Err(e) => return Some(format!("cannot watch build job {j}: {e}")),
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::{positive, run_for};

    #[test]
    fn generated_source_has_the_functions() {
        let c = generate_source(3);
        assert!(c.contains("static double f2(") && c.contains("s += f2(") && !c.contains("f3("));
    }

    #[test]
    fn builds_in_a_loop_and_cleans_up() {
        let parent = tempfile::tempdir().unwrap();
        let params = CompileParams { jobs: 2, functions: 5, parent: parent.path().into(), ..Default::default() };
        let mut load = CompileLoad::new(params).unwrap();
        let report = run_for(&mut load, Duration::from_millis(1000));
        positive(&report, "builds/min");
        positive(&report, "CPUs busy");
        assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 0, "scratch left behind");
    }

    #[test]
    fn failing_build_is_an_early_death() {
        let parent = tempfile::tempdir().unwrap();
        // Passes the constructor's "-O" check, but the compiler rejects it at once.
        let params = CompileParams {
            jobs: 1,
            functions: 1,
            optimization: "-Onot-a-level".into(),
            parent: parent.path().into(),
            ..Default::default()
        };
        let mut load = CompileLoad::new(params).unwrap();
        load.start().unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while load.check_alive().is_none() {
            assert!(Instant::now() < deadline, "failure not noticed");
            std::thread::sleep(Duration::from_millis(20));
        }
        let report = load.stop().unwrap();
        assert!(report.died_early.unwrap().contains("exit status: 1"));
    }

    #[test]
    fn missing_compiler_is_a_usage_error() {
        let err = CompileLoad::new(CompileParams { compiler: "rtlab-no-such-cc".into(), ..Default::default() })
            .err()
            .unwrap();
        assert!(err.is_usage_error() && err.to_string().contains("rtlab-no-such-cc"), "{err}");
    }
}
