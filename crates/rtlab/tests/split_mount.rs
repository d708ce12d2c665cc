//! `rtlab run --split` on a host booted without tracefs: as root, rtlab mounts it for the run
//! and unmounts it at the end, after a normal end, after SIGINT and after a second signal,
//! but not while another rtlab run still traces.
//! Its own test binary: it unmounts tracefs, which the split tests of other binaries need,
//! and cargo runs test binaries one after another. It restores the mount state it found.
//! Needs root; with CI=true, not being root fails the test.

mod common;

use common::{rtlab_path, run_json};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

const TRACEFS: &str = "/sys/kernel/tracing";
const MESSAGE: &str = "mounted tracefs at /sys/kernel/tracing for the split; unmounted at the end";

fn root_or_skip() -> bool {
    common::root_or_skip("mounting tracefs needs root")
}

fn tracefs_mounted() -> bool {
    rtlab_sys::tracefs::mount::is_mounted(TRACEFS, "tracefs")
}

fn unmount_tracefs() {
    // Stacked mounts (mounted twice) come off one by one.
    for _ in 0..10 {
        if !tracefs_mounted() {
            return;
        }
        let status = Command::new("umount").arg(TRACEFS).status().unwrap();
        assert!(status.success(), "umount {TRACEFS} failed: something else uses tracefs");
    }
    panic!("{TRACEFS} is still mounted after 10 umounts");
}

/// Puts the mount state back as it was found, and removes the instance a run killed by the
/// second signal left (it records nothing; the next rtlab would remove it too).
struct Restore {
    was_mounted: bool,
}

impl Drop for Restore {
    fn drop(&mut self) {
        // Best effort, without panicking (it may run while a failed assertion unwinds).
        if !tracefs_mounted() {
            let _ = Command::new("mount").args(["-t", "tracefs", "nodev", TRACEFS]).status();
        }
        rtlab_sys::tracefs::remove_stale_instances();
        while !self.was_mounted && tracefs_mounted() {
            if !Command::new("umount").arg(TRACEFS).status().is_ok_and(|s| s.success()) {
                eprintln!("warning: could not unmount {TRACEFS} again");
                break;
            }
        }
    }
}

/// A spawned rtlab, killed if the test fails before it ends.
struct Run(Child);

impl Drop for Run {
    fn drop(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

impl std::ops::Deref for Run {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.0
    }
}

impl std::ops::DerefMut for Run {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

/// The run's stderr once it has ended.
fn stderr_of(run: &mut Run) -> String {
    let mut text = String::new();
    if let Some(mut pipe) = run.0.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut pipe, &mut text);
    }
    text
}

/// Other rtlab processes tracing (another test run on the machine): wait for them, since
/// rtlab rightly leaves tracefs mounted while they trace.
fn wait_for_other_tracers() {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !rtlab_sys::tracefs::mount::other_tracing_pids(TRACEFS.as_ref()).is_empty() {
        assert!(Instant::now() < deadline, "other rtlab processes still trace after 120 s");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn spawn_split(out: &std::path::Path) -> Run {
    Run(Command::new(rtlab_path())
        .args(["run", "--split", "--load", "idle", "--duration", "30s", "--quiet", "--output"])
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap())
}

/// Until the child's tracing instance exists (tracefs mounted by it, tracing on).
fn wait_for_instance(child: &Child) {
    let instance = std::path::Path::new(TRACEFS).join("instances").join(format!("rtlab-{}", child.id()));
    let started = Instant::now();
    while !instance.exists() && started.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(instance.exists(), "the tracing instance {} appeared", instance.display());
}

fn interrupt(child: &Child) {
    assert!(Command::new("kill").arg("-INT").arg(child.id().to_string()).status().unwrap().success());
}

fn wait(child: &mut Child) -> ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("rtlab did not stop within 60 s of SIGINT");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A `--split-backend ebpf` run with tracefs unmounted: it splits, and mounts nothing.
fn ebpf_run_mounts_nothing(dir: &std::path::Path) {
    let out = dir.join("ebpf");
    let output = Command::new(rtlab_path())
        .args(["run", "--split", "--split-backend", "ebpf", "--load", "idle", "--duration", "2s", "--quiet"])
        .arg("--output")
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("mounted"), "{stderr}");
    assert!(!tracefs_mounted(), "tracefs stays unmounted for the ebpf backend");
    let run = run_json(&out);
    assert_eq!(run["split"]["backend"], "ebpf");
    let covered: u64 = run["split"]["coverage"].as_array().unwrap().iter().map(|c| c["split"].as_u64().unwrap()).sum();
    assert!(covered > 0, "{}", run["split"]);
}

#[test]
fn split_mounts_tracefs_for_the_run_and_unmounts_it_at_the_end() {
    if !root_or_skip() {
        return;
    }
    let _restore = Restore { was_mounted: tracefs_mounted() };
    if tracefs_mounted() {
        wait_for_other_tracers();
    }
    unmount_tracefs();

    // A normal end.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output = Command::new(rtlab_path())
        .args(["run", "--split", "--load", "idle", "--duration", "3s", "--quiet", "--output"])
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(stderr.matches(MESSAGE).count(), 1, "said once: {stderr}");
    assert!(!tracefs_mounted(), "tracefs unmounted after the run");
    let run = run_json(&out);
    assert_eq!(run["split"]["backend"], "tracefs");
    assert!(run["split"]["coverage"].as_array().is_some_and(|c| !c.is_empty()), "{}", run["split"]);
    let choice = run["split"]["backend_choice"].as_str().unwrap();
    assert!(choice.contains("rtlab mounted tracefs at /sys/kernel/tracing for this run"), "{choice}");

    // The eBPF backend reads the kernel's BTF, not tracefs: nothing is mounted for it.
    if let Err(why) = rtlab_sys::tracefs::ebpf::check_support() {
        assert_ne!(std::env::var("CI").as_deref(), Ok("true"), "{why}, and CI=true: the ebpf step must run in CI");
        eprintln!("skipped the ebpf step: {why}");
    } else {
        ebpf_run_mounts_nothing(dir.path());
    }

    // SIGINT after 2 s: the partial run is saved and split, and tracefs unmounted.
    let out = dir.path().join("sigint");
    let mut child = spawn_split(&out);
    wait_for_instance(&child);
    std::thread::sleep(Duration::from_secs(2));
    interrupt(&child);
    let status = wait(&mut child);
    let stderr = stderr_of(&mut child);
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert_eq!(stderr.matches(MESSAGE).count(), 1, "said once: {stderr}");
    assert!(!tracefs_mounted(), "tracefs unmounted after SIGINT");
    let run = run_json(&out);
    assert_eq!(run["interrupted"], true);
    assert!(run["split"]["coverage"].as_array().is_some_and(|c| !c.is_empty()), "the partial run is split too");

    // A second SIGINT ends rtlab at once: tracefs is unmounted from its signal handler.
    let out = dir.path().join("second");
    let mut child = spawn_split(&out);
    wait_for_instance(&child);
    std::thread::sleep(Duration::from_secs(1));
    interrupt(&child);
    std::thread::sleep(Duration::from_millis(50));
    interrupt(&child);
    let status = wait(&mut child);
    assert_eq!(status.code(), Some(130));
    assert!(!tracefs_mounted(), "tracefs unmounted after a second SIGINT");

    // Two runs: the first mounts; when it ends while the second still traces, tracefs stays
    // mounted (and it says so); the second did not mount it and leaves it.
    let mut first = spawn_split(&dir.path().join("first"));
    wait_for_instance(&first);
    let mut second = spawn_split(&dir.path().join("second-run"));
    wait_for_instance(&second);
    interrupt(&first);
    assert_eq!(wait(&mut first).code(), Some(130));
    let stderr = stderr_of(&mut first);
    assert!(tracefs_mounted(), "left mounted while another rtlab traces: {stderr}");
    assert_eq!(stderr.matches("left it mounted at the end: another rtlab").count(), 1, "said once: {stderr}");
    interrupt(&second);
    assert_eq!(wait(&mut second).code(), Some(130));
    let stderr = stderr_of(&mut second);
    assert!(!stderr.contains("mounted tracefs"), "the second run mounted nothing: {stderr}");
    assert!(tracefs_mounted(), "the second run leaves the mount it did not make");
}
