//! Helpers shared by rtlab's integration tests: driving the binary, reading run.json and
//! checking the invariants every run must satisfy. Latencies on the development VM have
//! multi-millisecond hypervisor spikes, so nothing here looks at absolute latencies: only
//! structure, counts and consistency.

#![allow(dead_code)]

pub mod guest;
pub mod netns;
pub mod noise;
pub mod prometheus;
pub mod timerlat;
pub mod tmpfs;

use serde_json::Value;
use std::path::{Path, PathBuf};

/// `rtlab` as built by cargo for this test run.
pub fn rtlab() -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::cargo_bin("rtlab").expect("the rtlab binary is built");
    // A validation bug must not turn into a 30 s measurement that stalls the suite.
    cmd.timeout(std::time::Duration::from_secs(60));
    cmd
}

/// The path of the binary, for tests that need a std::process::Child (signals).
pub fn rtlab_path() -> &'static str {
    env!("CARGO_BIN_EXE_rtlab")
}

pub fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

pub fn run_json(dir: &Path) -> Value {
    read_json(&dir.join("run.json"))
}

/// Effective user id of this process (0: root, so SCHED_FIFO and mlockall are expected).
pub fn euid() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status.lines().find(|l| l.starts_with("Uid:")).expect("a Uid: line");
    line.split_whitespace().nth(2).expect("effective uid").parse().expect("a number")
}

/// The repository root (suites/, examples/, the other crates' fixtures).
/// Whether this test runs as root; if not, says `why` it needs root and skips, except under
/// CI=true, where a missing privilege fails the test (CI runs as root).
pub fn root_or_skip(why: &str) -> bool {
    if euid() == 0 {
        return true;
    }
    assert_ne!(std::env::var("CI").as_deref(), Ok("true"), "{why}, and CI=true: this test must run in CI");
    eprintln!("skipped: {why}");
    false
}

/// Writes a secret only its owner may read or change (mode 0600), as the monitor's token
/// file must be.
pub fn write_secret(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `program` found on PATH.
pub fn on_path(program: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?).map(|dir| dir.join(program)).find(|p| p.is_file())
}

/// The host's online CPUs as run.json records them.
pub fn online_cpus(run: &Value) -> Vec<u64> {
    run["host"]["online_cpus"].as_array().unwrap().iter().map(|c| c.as_u64().unwrap()).collect()
}

pub fn u(v: &Value, key: &str) -> u64 {
    v[key].as_u64().unwrap_or_else(|| panic!("{key} is not an unsigned integer in {v}"))
}

pub fn i(v: &Value, key: &str) -> i64 {
    v[key].as_i64().unwrap_or_else(|| panic!("{key} is not an integer in {v}"))
}

/// Measurements of one metric, in the order run.json holds them.
pub fn measurements<'a>(run: &'a Value, metric: &str) -> Vec<&'a Value> {
    run["measurements"].as_array().expect("measurements is an array").iter().filter(|m| m["metric"] == metric).collect()
}

/// The summary's statistics in the order they must be non-decreasing.
pub fn ordered_summary(s: &Value) -> [(&'static str, i64); 8] {
    [
        ("min", i(s, "min")),
        ("p50", i(s, "p50")),
        ("p90", i(s, "p90")),
        ("p99", i(s, "p99")),
        ("p99.9", i(s, "p99.9")),
        ("p99.99", i(s, "p99.99")),
        ("p99.999", i(s, "p99.999")),
        ("max", i(s, "max")),
    ]
}

/// What a test expects of a run's shape.
#[derive(Debug, Clone, Default)]
pub struct Expect {
    /// CPUs that must each have one timer.latency and one timer.jitter measurement.
    pub cpus: Vec<u64>,
    /// Periods of the measured window per CPU (duration / interval), when bounded by time
    /// and not interrupted.
    pub cycles: Option<u64>,
    /// Samples per CPU, when bounded by samples and not interrupted.
    pub samples: Option<u64>,
    pub interrupted: bool,
    /// Allowed range of per_second_max_ns lengths; None: not checked.
    pub seconds: Option<std::ops::RangeInclusive<usize>>,
}

/// Checks every invariant of a timer run that holds whatever the machine's latencies.
pub fn check_timer_run(run: &Value, expect: &Expect) {
    assert_eq!(run["schema"], "rtlab.run/1");
    assert_eq!(run["interrupted"], expect.interrupted, "interrupted flag");
    let host = &run["host"];
    assert!(!host["kernel_release"].as_str().unwrap_or("").is_empty(), "host.kernel_release is empty");
    assert!(!host["online_cpus"].as_array().map(|a| a.is_empty()).unwrap_or(true), "host.online_cpus is empty");

    let latency = measurements(run, "timer.latency");
    let jitter = measurements(run, "timer.jitter");
    let cpus_of = |ms: &[&Value]| ms.iter().map(|m| u(m, "cpu")).collect::<Vec<_>>();
    assert_eq!(cpus_of(&latency), expect.cpus, "one timer.latency measurement per CPU");
    assert_eq!(cpus_of(&jitter), expect.cpus, "one timer.jitter measurement per CPU");
    assert_eq!(
        run["measurements"].as_array().unwrap().len(),
        2 * expect.cpus.len(),
        "only timer.latency and timer.jitter measurements"
    );

    for (l, j) in latency.iter().zip(&jitter) {
        let cpu = u(l, "cpu");
        let count = u(l, "count");
        let cycles = u(l, "cycles");
        let overruns = u(l, "overruns");
        assert_eq!(count + overruns, cycles, "CPU {cpu}: count + overruns == cycles");
        assert_eq!(u(l, "lost"), 0, "CPU {cpu}: lost samples");
        if let Some(c) = expect.cycles {
            assert_eq!(cycles, c, "CPU {cpu}: cycles == duration / interval");
        }
        if let Some(n) = expect.samples {
            assert_eq!(count, n, "CPU {cpu}: samples");
        }
        assert!(count > 0, "CPU {cpu}: no samples");
        // The jitter thread is the same thread: same window, one sample fewer.
        assert_eq!(u(j, "count"), count - 1, "CPU {cpu}: jitter count == latency count - 1");
        assert_eq!(u(j, "cycles"), cycles, "CPU {cpu}: jitter cycles");
        assert_eq!(u(j, "overruns"), overruns, "CPU {cpu}: jitter overruns");

        for m in [l, j] {
            check_measurement(m, expect);
        }
        // Jitter is |l[i+1] - l[i]| and never negative.
        if let Some(s) = j["summary"].as_object() {
            assert!(s["min"].as_i64().unwrap() >= 0, "CPU {cpu}: negative period jitter");
        }
    }
}

/// Checks one measurement's internal consistency.
pub fn check_measurement(m: &Value, expect: &Expect) {
    let what = format!("{} on CPU {}", m["metric"], m["cpu"]);
    let count = u(m, "count");
    let moments = &m["moments"];
    assert_eq!(u(moments, "count"), count, "{what}: moments.count");
    if count == 0 {
        assert!(m["summary"].is_null(), "{what}: a summary without samples");
        return;
    }
    let s = &m["summary"];
    assert_eq!(u(s, "count"), count, "{what}: summary.count == count");
    let ordered = ordered_summary(s);
    for w in ordered.windows(2) {
        assert!(w[0].1 <= w[1].1, "{what}: {} ({}) > {} ({}) in {s}", w[0].0, w[0].1, w[1].0, w[1].1);
    }
    assert_eq!(i(s, "min"), i(moments, "min"), "{what}: summary.min is the exact minimum");
    assert_eq!(i(s, "max"), i(moments, "max"), "{what}: summary.max is the exact maximum");
    let mean = s["mean"].as_f64().unwrap();
    assert!(mean >= i(s, "min") as f64 && mean <= i(s, "max") as f64, "{what}: mean {mean} outside [min, max]");
    assert!(s["stddev"].as_f64().unwrap() >= 0.0, "{what}: negative stddev");

    let per_second = m["per_second_max_ns"].as_array().expect("per_second_max_ns is an array");
    if let Some(range) = &expect.seconds {
        assert!(
            range.contains(&per_second.len()),
            "{what}: {} per-second maxima, expected {range:?}",
            per_second.len()
        );
    }
    let block_max = per_second.iter().filter_map(|v| v.as_i64()).max();
    assert_eq!(block_max, Some(i(s, "max")), "{what}: the largest per-second maximum is the summary max");
    assert_eq!(m["histogram"]["encoding"], "hdr-v2-deflate-base64");
}

/// Nearest-rank percentile of sorted values: rank = ceil(q n), 1-based.
pub fn nearest_rank(sorted: &[i64], q: f64) -> i64 {
    assert!(!sorted.is_empty());
    let n = sorted.len() as f64;
    let rank = ((q * n) - 1e-9).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

/// stdout with every occurrence of `dir` replaced by "[DIR]".
pub fn redact(text: &str, dir: &Path) -> String {
    text.replace(&dir.display().to_string(), "[DIR]")
}
