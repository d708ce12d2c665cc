//! Other kernels as test fixtures: boots an installed kernel under QEMU with virtme-ng
//! (contrib/guest/boot) on the host's own file system, runs crates/rtlab/tests/guest/steps.sh
//! with this test run's rtlab binary inside, and hands back what each step printed and
//! returned. One boot per kernel and test binary: the first test that asks boots it, the
//! others read the same outcome. Boots are serialised (two TCG guests on two CPUs would
//! only slow each other down).
//!
//! A guest that cannot boot is a failure under CI=true (./run-tests installs QEMU, the
//! kernels and virtme-ng as root); elsewhere the test says why and passes.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

/// A kernel to boot: `contrib/guest/boot --kernel` value, its kernel parameters, and the
/// steps of steps.sh to run in it.
#[derive(Debug, Clone, Copy)]
pub struct GuestSpec {
    /// "rt" or "stock".
    pub kernel: &'static str,
    pub append: &'static str,
    pub steps: &'static [&'static str],
}

/// What one boot left: the directory the guest wrote, and the boot script's status.
#[derive(Debug)]
pub struct GuestOutcome {
    pub kernel: &'static str,
    pub dir: PathBuf,
    pub status: Option<i32>,
    pub console: String,
}

impl GuestOutcome {
    /// A step's standard output; panics with its standard error when it did not run.
    pub fn stdout(&self, step: &str) -> String {
        self.read(&format!("{step}.out"))
    }

    pub fn stderr(&self, step: &str) -> String {
        self.read(&format!("{step}.err"))
    }

    /// A step's exit status.
    pub fn status_of(&self, step: &str) -> i32 {
        let text = self.read(&format!("{step}.rc"));
        text.trim().parse().unwrap_or_else(|_| panic!("{}: {step}.rc is not a status: {text:?}", self.kernel))
    }

    /// Asserts that a step exited with `expected`, showing its output otherwise.
    pub fn assert_status(&self, step: &str, expected: i32) {
        let status = self.status_of(step);
        assert_eq!(
            status,
            expected,
            "{} guest: step {step} exited {status}, expected {expected}\n--- stdout\n{}\n--- stderr\n{}",
            self.kernel,
            self.stdout(step),
            self.stderr(step)
        );
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    pub fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.join(name)).unwrap_or_else(|e| {
            panic!(
                "{} guest: cannot read {name} ({e}); boot status {:?}, console:\n{}",
                self.kernel, self.status, self.console
            )
        })
    }
}

/// The repository's boot script.
pub fn boot_script() -> PathBuf {
    super::repo_root().join("contrib/guest/boot")
}

/// Why guests cannot be booted here, if they cannot.
pub fn unavailable() -> Option<String> {
    if super::euid() != 0 {
        return Some("booting a guest with its tracing and real-time runs needs root".into());
    }
    let script = boot_script();
    let listed = Command::new(&script).arg("kernels").output();
    match listed {
        Ok(o) if o.status.success() => {
            let text = String::from_utf8_lossy(&o.stdout);
            if !text.contains("PREEMPT_RT") {
                return Some(format!(
                    "no PREEMPT_RT kernel is installed (contrib/guest/boot kernels:\n{text}); run `contrib/guest/boot setup` as root"
                ));
            }
            None
        }
        Ok(o) => Some(format!("{} kernels failed: {}", script.display(), String::from_utf8_lossy(&o.stderr))),
        Err(e) => Some(format!("cannot run {}: {e}", script.display())),
    }
}

/// Says why the guest tests cannot run; fails under CI=true, where they must.
pub fn cannot_run(why: &str) {
    assert_ne!(std::env::var("CI").as_deref(), Ok("true"), "{why}, and CI=true: the guest tests must run in CI");
    eprintln!("guest test not run: {why}");
}

static BOOT_LOCK: Mutex<()> = Mutex::new(());

/// The outcome of booting `spec` once for this test binary (kept in `cell`, one static per
/// kernel); None (after [`cannot_run`]) where guests cannot be booted.
pub fn guest(cell: &'static OnceLock<GuestOutcome>, spec: GuestSpec) -> Option<&'static GuestOutcome> {
    if let Some(why) = unavailable() {
        cannot_run(&why);
        return None;
    }
    let outcome = cell.get_or_init(|| reused(spec).unwrap_or_else(|| boot(spec)));
    if outcome.status != Some(0) {
        cannot_run(&format!(
            "the {} guest did not run its steps (boot status {:?}); console:\n{}",
            spec.kernel, outcome.status, outcome.console
        ));
        return None;
    }
    Some(outcome)
}

/// The output directory a previous boot left, when RTLAB_GUEST_REUSE=1 asks to check it again
/// without booting (to work on the assertions; never under CI=true, which must boot).
fn reused(spec: GuestSpec) -> Option<GuestOutcome> {
    if std::env::var("RTLAB_GUEST_REUSE").as_deref() != Ok("1") || std::env::var("CI").as_deref() == Ok("true") {
        return None;
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("guest").join(spec.kernel);
    dir.join("uname").is_file().then(|| {
        eprintln!("{} guest: RTLAB_GUEST_REUSE=1: checking {} again, not booting", spec.kernel, dir.display());
        GuestOutcome { kernel: spec.kernel, dir, status: Some(0), console: String::new() }
    })
}

fn boot(spec: GuestSpec) -> GuestOutcome {
    let _serial = BOOT_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("guest").join(spec.kernel);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("the guest's output directory");
    let steps = super::repo_root().join("crates/rtlab/tests/guest/steps.sh");
    let started = std::time::Instant::now();
    let output = Command::new(boot_script())
        .args(["--kernel", spec.kernel, "--append", spec.append, "--cpus", "2", "--memory", "2G"])
        .arg("--rwdir")
        .arg(&dir)
        .args(["--timeout", "1500", "--"])
        .arg(steps.canonicalize().expect("steps.sh"))
        .arg(&dir)
        .arg(super::rtlab_path())
        .args(spec.steps)
        .current_dir(&dir)
        .output()
        .expect("contrib/guest/boot runs");
    let console = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout).replace('\0', ""),
        String::from_utf8_lossy(&output.stderr).replace('\0', "")
    );
    eprintln!("{} guest: booted and ran {:?} in {:.0?}", spec.kernel, spec.steps, started.elapsed());
    GuestOutcome { kernel: spec.kernel, dir, status: output.status.code(), console }
}
