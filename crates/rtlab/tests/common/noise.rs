//! Checks of a `rtlab run -P noise` result, for this machine's test (tests/probe_noise.rs)
//! and the guests' (tests/guest_kernels.rs): exact consistency, never how noisy a host is.

use super::{measurements, u};
use serde_json::Value;

pub fn noise_cpus(run: &Value) -> &Vec<Value> {
    run["noise"]["cpus"].as_array().expect("run.json has a noise section")
}

/// The figures of each CPU agree with its noise.gap measurement and its causes add up.
pub fn check_noise(run: &Value, scenario: &str) {
    let cpus = noise_cpus(run);
    let gaps = measurements(run, "noise.gap");
    assert_eq!(cpus.len(), gaps.len());
    for c in cpus.iter().filter(|c| c["scenario"] == scenario) {
        let m = gaps.iter().find(|m| m["cpu"] == c["cpu"] && m["scenario"] == scenario).unwrap();
        let d = &m["details"];
        assert_eq!(u(c, "gaps"), u(m, "count"), "one noise.gap sample per gap");
        assert_eq!(u(c, "gaps"), d["gaps"].as_u64().unwrap());
        assert_eq!(u(c, "noise_ns"), d["noise_ns"].as_u64().unwrap());
        assert_eq!(u(c, "runtime_ns"), d["runtime_ns"].as_u64().unwrap());
        // The histogram's exact moments hold every gap: their sum is the noise.
        assert_eq!(m["moments"]["sum"].as_i64().unwrap() as u64, u(c, "noise_ns"));
        assert_eq!(u(c, "largest_gap_ns") as i64, m["summary"]["max"].as_i64().unwrap());
        assert!(u(c, "noise_ns") <= u(c, "runtime_ns"));
        let percent = 100.0 * u(c, "noise_ns") as f64 / u(c, "runtime_ns") as f64;
        assert!((c["noise_percent"].as_f64().unwrap() - percent).abs() < 1e-9);
        assert!(u(c, "runtime_ns") >= 2_000_000_000, "the loop ran for its 3 s: {c}");
        assert!(m["summary"]["min"].as_i64().unwrap() > 1_000, "only gaps above the threshold");
        let causes = c["causes"].as_array().unwrap();
        let ns: u64 = causes.iter().map(|k| u(k, "ns")).sum();
        let main: u64 = causes.iter().map(|k| u(k, "main_of")).sum();
        assert_eq!(ns, u(c, "noise_ns"), "every gap's time charged once: {c}");
        assert_eq!(main, u(c, "gaps"), "every gap has exactly one main cause: {c}");
        for k in causes {
            assert!(u(k, "gaps") <= u(c, "gaps") && u(k, "main_of") <= u(k, "gaps"), "{k}");
            assert!(u(k, "max_ns") <= u(k, "ns"), "{k}");
        }
    }
}
