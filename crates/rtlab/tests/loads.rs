//! `rtlab run --load`: scenarios measured one after the other, what the loads achieved in
//! run.json, bad load parameters refused before anything runs, a load that dies marks its
//! scenario, and `kill -9` of rtlab leaves no process behind.

mod common;

use common::{rtlab, rtlab_path, run_json, u};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn scenario<'a>(run: &'a Value, name: &str) -> &'a Value {
    run["scenarios"].as_array().unwrap().iter().find(|s| s["name"] == name).unwrap_or_else(|| panic!("{name}"))
}

fn achieved(load: &Value, figure: &str) -> f64 {
    let found = load["achieved"].as_array().unwrap().iter().find(|i| i["name"] == figure);
    found.unwrap_or_else(|| panic!("no {figure:?} in {load}"))["value"].as_f64().unwrap()
}

/// The main job without options is unloaded then loaded: two scenarios, each with the
/// timer measurements of every CPU, the loaded one with every load of `mixed` reporting work.
#[test]
fn default_run_is_idle_then_mixed() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output = rtlab().args(["run", "--duration", "1s", "--settle", "0.5s", "--output"]).arg(&out).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let run = run_json(&out);
    assert_eq!(run["experiment"]["loads"], serde_json::json!(["idle", "mixed"]));
    let names: Vec<&str> = run["scenarios"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["idle", "mixed"]);
    let idle = scenario(&run, "idle");
    assert_eq!(idle["loads"], serde_json::json!([]));
    let mixed = scenario(&run, "mixed");
    assert!(mixed["load_failure"].is_null(), "{mixed}");
    assert!(mixed["settle_s"].as_f64().unwrap() >= 0.5);
    let loads: Vec<&str> = mixed["loads"].as_array().unwrap().iter().map(|l| l["name"].as_str().unwrap()).collect();
    assert_eq!(loads, ["messaging", "udp-flood", "disk"]);
    let messaging = &mixed["loads"][0];
    assert!(achieved(messaging, "messages/s") > 0.0);
    assert!(achieved(&mixed["loads"][1], "packets/s received") > 0.0);
    // Loopback traffic shows as NET_RX softirqs.
    let softirqs = mixed["activity"]["softirqs_per_s"].as_array().unwrap();
    assert!(softirqs.iter().any(|s| s["irq"] == "NET_RX" && s["per_s"].as_f64().unwrap() > 0.0), "{softirqs:?}");
    let online = run["host"]["online_cpus"].as_array().unwrap().len();
    for name in names {
        let per_scenario: Vec<&Value> = run["measurements"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["scenario"] == name && m["metric"] == "timer.latency")
            .collect();
        assert_eq!(per_scenario.len(), online, "{name}");
        for m in per_scenario {
            assert_eq!(u(m, "count") + u(m, "overruns"), 1000, "{name}: {m}");
        }
    }
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("Side by side"), "{text}");
    assert!(text.contains("Loads achieved:"), "{text}");
}

/// Each load named on the command line runs in its own scenario's child process, on the CPUs
/// asked for, and reports what it did.
#[test]
fn load_cpus_and_a_named_load() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    rtlab()
        .args(["run", "--load", "cpu", "--load-cpus", "0", "--duration", "1s", "--settle", "0s", "--quiet"])
        .arg("--output")
        .arg(&out)
        .assert()
        .success();
    let run = run_json(&out);
    assert_eq!(run["experiment"]["load_cpus"], serde_json::json!([0]));
    let cpu = &scenario(&run, "cpu")["loads"][0];
    // One CPU allowed: the burn threads share it, so at most about one CPU is busy.
    let busy = achieved(cpu, "CPUs busy");
    assert!(busy > 0.1 && busy < 1.3, "CPUs busy {busy} with --load-cpus 0");
}

fn refused_before_measuring(args: &[&str], needle: &str, code: i32) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output = rtlab().args(["run", "--duration", "1s", "--output"]).arg(&out).args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(code), "{args:?}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(stderr.contains(needle), "{args:?}: {stderr:?} lacks {needle:?}");
    assert!(!out.exists(), "{args:?}: nothing is written before the loads are checked");
}

#[test]
fn bad_loads_are_refused_before_anything_runs() {
    refused_before_measuring(&["--load", "idle,no-such-load"], "unknown load or preset \"no-such-load\"", 2);
    refused_before_measuring(&["--load", "udp-flood:rate=-5"], "rate", 2);
    refused_before_measuring(&["--load", "exec:argv=/no/such/program"], "/no/such/program", 2);
    refused_before_measuring(&["--load", "disk", "--scratch", "/proc"], "not writable", 2);
    refused_before_measuring(&["--load", "disk", "--scratch", "/no/such/dir"], "--scratch", 2);
    refused_before_measuring(&["--load", "idle,idle"], "twice", 2);
    refused_before_measuring(&["--load", "idle,,cpu"], "empty", 2);
    refused_before_measuring(&["--load", "cpu", "--load-cpus", "99"], "--load-cpus", 2);
    refused_before_measuring(&["--load", "cpu:nonsense=1"], "nonsense", 2);
    refused_before_measuring(&["--load", "comms:rate=12.5"], "rate 12.5: no unit", 2);
    refused_before_measuring(&["--load", "comms:rate=fast"], "rate \"fast\": unknown unit", 2);
    refused_before_measuring(&["--settle", "soon"], "--settle", 2);
}

/// `comms:rate=`: the throttled load holds its limit (message bytes sent plus echoed per
/// second) and says so beside what it achieved; the same load unthrottled carries far more.
#[test]
fn throttled_comms_holds_its_rate() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output = rtlab()
        .args(["run", "--quiet", "--load", "comms:rate=12.5MB/s,comms", "--duration", "2s", "--settle", "0.5s"])
        .arg("--output")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let run = run_json(&out);
    let throttled = &scenario(&run, "comms:rate=12.5MB/s")["loads"][0];
    assert_eq!(throttled["parameters"]["rate"], "12.5MB/s");
    assert_eq!(throttled["parameters"]["rate_bytes_per_s"], 12_500_000);
    assert_eq!(achieved(throttled, "MB/s limit"), 12.5);
    let carried = achieved(throttled, "MB/s sent+echoed");
    // The bucket starts empty, so the limit holds from the start; 2 % for timing slack.
    assert!(carried <= 12.5 * 1.02, "throttled to 12.5 MB/s, carried {carried} MB/s");
    // Round trips of 60,000 bytes each way: about 104 a second once it runs.
    assert!(carried > 12.5 * 0.5, "throttled load too slow: {carried} MB/s");
    let echoed = achieved(throttled, "MB/s echoed");
    assert!((2.0 * echoed - carried).abs() < 1e-9 * carried, "each round trip counts twice: {echoed} {carried}");
    let flat_out = &scenario(&run, "comms")["loads"][0];
    assert!(flat_out["achieved"].as_array().unwrap().iter().all(|i| i["name"] != "MB/s limit"), "{flat_out}");
    let unthrottled = achieved(flat_out, "MB/s sent+echoed");
    // Loopback carries hundreds of MB/s here; "clearly below" leaves room for a busy machine.
    assert!(unthrottled > 4.0 * carried, "unthrottled {unthrottled} MB/s vs throttled {carried} MB/s");
}

/// A load that stops before the measurement ends: saved, marked, and the run fails (3).
#[test]
fn a_load_that_dies_marks_its_scenario() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output = rtlab()
        .args(["run", "--load", "idle,exec:argv=true", "--duration", "1s", "--settle", "0.3s", "--output"])
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("not measured under its full load"), "{stderr}");
    let run = run_json(&out);
    let failed = scenario(&run, "exec:argv=true");
    assert!(failed["load_failure"].as_str().unwrap().contains("true exited"), "{failed}");
    assert!(scenario(&run, "idle")["load_failure"].is_null());
    assert!(String::from_utf8_lossy(&output.stdout).contains("NOT FULLY LOADED"));
}

/// Scenarios from an experiment file, with a preset of its own.
#[test]
fn experiment_file_presets() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lab.toml");
    std::fs::write(
        &file,
        "duration = \"1s\"\nsettle = \"0s\"\nload = [\"idle\", \"light\"]\n[presets]\nlight = \"proc-read:rate=1000\"\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    rtlab().args(["run", "--quiet", "--experiment"]).arg(&file).arg("--output").arg(&out).assert().success();
    let run = run_json(&out);
    assert_eq!(run["experiment"]["presets"]["light"], "proc-read:rate=1000");
    let light = scenario(&run, "light");
    let files_per_s = achieved(&light["loads"][0], "files/s");
    assert!(files_per_s > 500.0 && files_per_s < 1500.0, "paced at 1000 files/s: {files_per_s}");
}

fn comm(pid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default().trim().to_string()
}

/// `kill -9` of rtlab during a loaded run: within 2 s nothing it started is running, and
/// the scratch files it left are removed by the next run.
#[test]
fn sigkill_leaves_no_load_behind() {
    let dir = tempfile::tempdir().unwrap();
    let scratch = dir.path().join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    let mut child = Command::new(rtlab_path())
        .args(["run", "--quiet", "--duration", "60s", "--settle", "0s", "--scratch"])
        .arg(&scratch)
        .args(["--load", "exec:argv=sleep 100+disk:file_mib=8+messaging:groups=1:senders=2:receivers=2"])
        .arg("--output")
        .arg(dir.path().join("out"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let rtlab_pid = child.id() as i32;
    // Wait until the load host runs its loads: the `sleep` exists and the disk load made
    // its scratch directory.
    let deadline = Instant::now() + Duration::from_secs(30);
    let started = loop {
        let found = rtlab_sys::process::descendants(rtlab_pid);
        let sleeping = found.iter().any(|p| comm(p.pid) == "sleep");
        let scratch_made = std::fs::read_dir(&scratch).unwrap().next().is_some();
        if sleeping && scratch_made {
            break found.into_iter().map(|p| p.pid).collect::<Vec<_>>();
        }
        assert!(Instant::now() < deadline, "the loads did not start: {found:?}");
        std::thread::sleep(Duration::from_millis(50));
    };
    // rtlab's supervisor, the load host, its supervisor and the sleep at least.
    assert!(started.len() >= 4, "{started:?}");
    child.kill().unwrap();
    child.wait().unwrap();
    let killed_at = Instant::now();
    loop {
        let left = rtlab_sys::process::still_running(&started);
        if left.is_empty() {
            break;
        }
        assert!(killed_at.elapsed() < Duration::from_secs(2), "still running 2 s after SIGKILL: {left:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(std::fs::read_dir(&scratch).unwrap().next().is_some(), "SIGKILL leaves the scratch directory");
    // The next run with the same scratch directory removes what the killed one left.
    rtlab()
        .args(["run", "--quiet", "--duration", "1s", "--settle", "0s", "--load", "disk:file_mib=1", "--scratch"])
        .arg(&scratch)
        .arg("--output")
        .arg(dir.path().join("next"))
        .assert()
        .success();
    let left: Vec<_> = std::fs::read_dir(&scratch).unwrap().map(|e| e.unwrap().path()).collect();
    assert!(left.is_empty(), "scratch files left: {left:?}");
    assert!(Path::new(&dir.path().join("next/run.json")).exists());
}

/// SIGINT during a loaded scenario: the loads are stopped and reported, the partial result
/// is saved as interrupted, exit 130, and nothing rtlab started is left running.
#[test]
fn sigint_stops_the_loads_and_saves() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let child = Command::new(rtlab_path())
        .args(["run", "--quiet", "--duration", "30s", "--settle", "0s", "--load", "exec:argv=sleep 100+proc-read"])
        .arg("--output")
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    let deadline = Instant::now() + Duration::from_secs(30);
    let started = loop {
        let found = rtlab_sys::process::descendants(pid);
        if found.iter().any(|p| comm(p.pid) == "sleep") {
            break found.into_iter().map(|p| p.pid).collect::<Vec<_>>();
        }
        assert!(Instant::now() < deadline, "the loads did not start");
        std::thread::sleep(Duration::from_millis(50));
    };
    // Measuring has begun once the loads run (settle 0 s); let it take some samples.
    std::thread::sleep(Duration::from_millis(500));
    let status = Command::new("kill").args(["-INT", &pid.to_string()]).status().unwrap();
    assert!(status.success());
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(rtlab_sys::process::still_running(&started).is_empty(), "left running: {started:?}");
    let run = run_json(&out);
    assert_eq!(run["interrupted"], true);
    let scenario = scenario(&run, "exec:argv=sleep 100+proc-read");
    assert_eq!(scenario["interrupted"], true);
    // The loads were stopped and reported, not killed unreported.
    assert_eq!(scenario["loads"].as_array().unwrap().len(), 2, "{scenario}");
    assert!(achieved(&scenario["loads"][1], "files read") > 0.0);
}
