//! The sweep probe through the binary: every rate measured one after another for its share
//! of the duration, one measurement per rate with its details, counts that add up, and raw
//! files that never collide between rates.

mod common;

use common::{rtlab, run_json, u};
use serde_json::Value;

fn sweep_steps<'a>(run: &'a Value, metric: &str) -> Vec<&'a Value> {
    run["measurements"].as_array().unwrap().iter().filter(|m| m["metric"] == metric).collect()
}

#[test]
fn sweep_of_ipc_measures_each_rate_for_its_share() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output = rtlab()
        .args(["run", "--probe", "sweep", "--sweep-of", "ipc:eventfd", "--rates", "500,1000,2000", "-D", "3s"])
        .args(["--load", "idle", "--raw", "--quiet", "--output"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let run = run_json(&out);
    assert_eq!(run["experiment"]["probes"], serde_json::json!(["sweep"]));
    assert_eq!(run["experiment"]["probe_settings"]["sweep_of"], "ipc:eventfd");
    let steps = sweep_steps(&run, "sweep.latency");
    assert_eq!(steps.len(), 3, "one measurement per rate");
    let mut raw_files = Vec::new();
    for (step, rate) in steps.iter().zip([500u64, 1000, 2000]) {
        assert_eq!(step["probe"], "sweep");
        assert_eq!(step["details"]["rate_hz"], rate as f64);
        assert_eq!(step["details"]["stimulus"], "ipc:eventfd");
        assert_eq!(u(step, "interval_ns"), 1_000_000_000 / rate);
        // 1 s each: the receiver takes rate stimuli; none is lost silently.
        assert_eq!(u(step, "cycles"), rate, "{step}");
        assert_eq!(u(step, "count") + u(step, "overruns"), u(step, "cycles"));
        assert!(u(step, "count") > 0);
        assert_eq!(step["thread"], format!("sweep/ipc:eventfd@{rate}Hz"));
        let raw = step["raw_file"].as_str().unwrap().to_string();
        assert!(!raw_files.contains(&raw), "raw file {raw} written twice");
        assert!(out.join(&raw).is_file());
        raw_files.push(raw);
    }
}

#[test]
fn sweep_of_net_keeps_delivery_and_activation_per_rate() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output = rtlab()
        .args(["run", "--probe", "sweep", "--rates", "500,1000", "-D", "2s", "--load", "idle", "--quiet", "--output"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let run = run_json(&out);
    for metric in ["sweep.latency", "sweep.delivery", "sweep.activation"] {
        let steps = sweep_steps(&run, metric);
        assert_eq!(steps.len(), 2, "{metric}");
        for step in steps {
            assert_eq!(step["details"]["stimulus"], "net");
            assert_eq!(u(step, "count") + u(step, "overruns"), u(step, "cycles"));
        }
    }
}
