//! `kill -9` of the process that runs loads: within 2 s nothing it started is left running,
//! and its scratch directories are removed by the next run's `remove_stale_scratch`.
//!
//! The test runs this test binary a second time in the role of rtlab (ROLE_ENV set), reads
//! what it started, kills it with SIGKILL and watches /proc.

use std::io::BufRead;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ROLE_ENV: &str = "RTLAB_LOAD_TEST_ROLE_PARENT";

fn descendants(root: i32) -> Vec<i32> {
    rtlab_sys::process::descendants(root).into_iter().map(|p| p.pid).collect()
}

fn running(pids: &[i32]) -> Vec<i32> {
    rtlab_sys::process::still_running(pids)
}

/// The "rtlab" role: start an exec load that forks, a compile load and a disk load, say so,
/// and wait to be killed.
#[test]
fn role_parent_running_loads() {
    let Some(parent) = std::env::var_os(ROLE_ENV) else { return };
    let dir = parent.to_string_lossy();
    let spec = format!("exec:argv=sleep 100+compile:jobs=1:functions=20:parent={dir}+disk:parent={dir}:file_mib=8");
    let mut loads = rtlab_load::scenario(&spec).unwrap();
    // And a command whose children are grandchildren of the supervisor.
    loads.push(Box::new(
        rtlab_load::exec::ExecLoad::new(rtlab_load::exec::ExecParams {
            argv: vec!["sleep 100 & sleep 100".into()],
            shell: true,
            ..Default::default()
        })
        .unwrap(),
    ));
    for load in &mut loads {
        load.start().unwrap();
    }
    println!("started");
    std::thread::sleep(Duration::from_secs(60));
}

#[test]
fn sigkill_leaves_nothing_running() {
    let parent = tempfile::tempdir().unwrap();
    let mut rtlab = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "role_parent_running_loads", "--nocapture", "--test-threads=1"])
        .env(ROLE_ENV, parent.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(rtlab.stdout.take().unwrap()).lines();
    assert!(lines.any(|l| l.unwrap().contains("started")), "the loads did not start");
    // Let the shells fork their sleeps and the compiler, so grandchildren exist.
    std::thread::sleep(Duration::from_millis(300));
    let started = descendants(rtlab.id() as i32);
    // 3 supervisors, sleep, sh + 2 sleeps, sh (+ cc while it builds).
    assert!(started.len() >= 8, "expected supervisors, shells and sleeps: {started:?}");
    let scratch: Vec<PathBuf> = std::fs::read_dir(parent.path()).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(scratch.len(), 2, "{scratch:?}");

    rtlab.kill().unwrap();
    rtlab.wait().unwrap();
    let killed_at = Instant::now();
    loop {
        let left = running(&started);
        if left.is_empty() {
            break;
        }
        assert!(killed_at.elapsed() < Duration::from_secs(2), "still running 2 s after SIGKILL: {left:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut removed = rtlab_load::remove_stale_scratch(parent.path()).unwrap();
    removed.sort();
    let mut expected = scratch;
    expected.sort();
    assert_eq!(removed, expected);
}
