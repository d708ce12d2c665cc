//! Without CAP_SYS_NICE/CAP_IPC_LOCK the run still happens, as SCHED_OTHER with 1 ns timer
//! slack, and says everywhere that the results are not real-time results.

use std::process::Command;

fn setpriv_available() -> bool {
    // Dropping capabilities needs root and util-linux's setpriv.
    let root = std::fs::read_to_string("/proc/self/status")
        .map(|s| s.lines().any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0")))
        .unwrap_or(false);
    root && Command::new("setpriv").arg("--version").output().map(|o| o.status.success()).unwrap_or(false)
}

#[test]
fn runs_without_rt_privileges_and_says_so() {
    if !setpriv_available() {
        eprintln!("skipped: needs root and setpriv to drop capabilities");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let output = Command::new("setpriv")
        .args(["--bounding-set", "-sys_nice,-ipc_lock", "--inh-caps", "-sys_nice,-ipc_lock", "--"])
        .arg(env!("CARGO_BIN_EXE_rtlab"))
        .args(["run", "--load", "idle", "--duration", "1s", "--cpus", "0", "--output"])
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("NOT REAL-TIME RESULTS"), "{stdout}");
    assert!(stdout.contains("SCHED_OTHER"), "{stdout}");
    let run: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
    let rt = &run["realtime"];
    // RLIMIT_RTPRIO may allow FIFO for some users; with the capability gone and the
    // default limit of 0 it must not.
    let rtprio_zero = run["host"]["privileges"]["rtprio_limit"] == 0;
    if rtprio_zero {
        assert_eq!(rt["real_time_results"], false);
        assert_eq!(rt["policy"], "other");
        assert_eq!(rt["timer_slack_ns"], 1);
        assert!(!rt["notes"].as_array().unwrap().is_empty());
        let warnings = run["warnings"].as_array().unwrap();
        assert!(warnings.iter().any(|w| w["code"] == "no-rt-privilege"), "{warnings:?}");
    }
    assert!(run["measurements"][0]["count"].as_u64().unwrap() > 0);
}
