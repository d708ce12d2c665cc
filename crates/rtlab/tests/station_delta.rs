//! δ measured once and held (docs/probes/remote.md, "δ, the paper's way"): a run that
//! calibrates δ stores it as delta.json; `--delta DIR|FILE` of a later run holds it, spread
//! and all, instead of calibrating against that run's station; a bad stored calibration is
//! refused before anything runs. Against a real `rtlab station` on loopback, as root;
//! without root the test says so and fails under CI=true.

mod common;

use common::*;
use std::path::Path;
use std::process::{Command, Stdio};

fn remote_run(station: &str, key: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    Command::new(rtlab_path())
        .args(["run", "-P", "remote", "--rate", "100", "--duration", "1s", "--load", "idle", "-q", "--station"])
        .arg(station)
        .arg("--key")
        .arg(key)
        .arg("-o")
        .arg(out)
        .args(extra)
        .output()
        .unwrap()
}

fn remote_irq(run: &serde_json::Value) -> serde_json::Value {
    measurements(run, "remote.irq")[0].clone()
}

#[test]
fn a_calibrated_delta_is_stored_and_held_by_later_runs() {
    if euid() != 0 {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true: the held-δ test needs root (raw ICMP)");
        eprintln!("NOT RUN: the held-δ test needs root (raw ICMP sockets)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("station.key");
    write_secret(&key, "the held-delta test's key, 36 bytes\n");
    let listen = "127.0.0.1:17480";
    let mut station = Command::new(rtlab_path())
        .args(["station", "--listen", listen, "--status-every", "0", "--duration", "5m", "--key"])
        .arg(&key)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(700));

    // The first run calibrates and stores δ beside run.json.
    let first = dir.path().join("first");
    let output = remote_run(listen, &key, &first, &[]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stored: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(first.join("delta.json")).unwrap()).unwrap();
    assert_eq!(stored["schema"], "rtlab.delta/1");
    let run = run_json(&first);
    let m = remote_irq(&run);
    for (file_key, detail) in [("mean_ns", "delta_mean_ns"), ("min_ns", "delta_min_ns"), ("max_ns", "delta_max_ns")] {
        assert_eq!(stored[file_key], m["details"][detail], "{file_key}");
    }
    assert_eq!(stored["samples"], m["details"]["delta_samples"]);
    assert_eq!(stored["rate_hz"], 100.0);
    assert_eq!(stored["station"], listen);
    assert!(run.to_string().contains("calibrated for this run"));

    // The second holds it, from the run's directory: the same δ̄ and spread, no new
    // calibration, and run.json says where it came from.
    let second = dir.path().join("second");
    let output = remote_run(listen, &key, &second, &["--delta", first.to_str().unwrap()]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(!second.join("delta.json").exists(), "a held δ is not stored again");
    let run = run_json(&second);
    let held = remote_irq(&run);
    for detail in ["delta_mean_ns", "delta_min_ns", "delta_max_ns", "delta_samples"] {
        assert_eq!(held["details"][detail], m["details"][detail], "{detail}");
    }
    assert!(run.to_string().contains("measured once before and held"), "{}", run["realtime"]);
    let settings = &run["experiment"]["probe_settings"]["delta_stored"];
    assert_eq!(settings["mean_ns"], stored["mean_ns"]);
    assert!(settings["read_from"].as_str().unwrap().ends_with("first/delta.json"), "{settings}");

    // A time still works; a bad file or a directory without one is refused (exit 2, one line).
    let given = dir.path().join("given");
    let output = remote_run(listen, &key, &given, &["--delta", "9us"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(remote_irq(&run_json(&given))["details"]["delta_mean_ns"], 9_000);
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"schema": "rtlab.delta/1", "mean_ns": 5}"#).unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    for (arg, reason) in [(bad.to_str().unwrap(), "not a δ calibration"), (empty.to_str().unwrap(), "delta.json")] {
        let output = remote_run(listen, &key, &dir.path().join("refused"), &["--delta", arg]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{arg}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(stderr.contains("--delta") && stderr.contains(reason), "{stderr}");
        assert!(!dir.path().join("refused").join("run.json").exists());
    }
    let output = remote_run(listen, &key, &dir.path().join("refused"), &["--delta", "nine"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("neither a time"));
    let _ = station.kill();
    let _ = station.wait();
}
