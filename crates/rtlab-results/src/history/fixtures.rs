//! Fixtures of the history's tests, shared by those of rtlab-results, rtlab-report and the
//! binary (the `fixtures` feature, for their dev-dependencies): a host, the monitor's
//! settings, a window metric from known samples.

use super::{MonitorSettings, WindowMetric};
use crate::host::SystemInfo;
use rtlab_analysis::{LatencyHistogram, Moments};

/// A PREEMPT_RT board "board-1" running `kernel`, CPU 1 isolated.
pub fn host(kernel: &str) -> SystemInfo {
    serde_json::from_value(serde_json::json!({
        "hostname": "board-1", "kernel_release": kernel, "kernel_version": "#1 SMP PREEMPT_RT",
        "machine": "x86_64", "preemption_model": "PREEMPT_RT", "preemption_dynamic_mode": null,
        "preemption_evidence": [], "kernel_cmdline": "isolcpus=1", "isolated_cpus": [1],
        "nohz_full_cpus": [], "cpu_model": "test", "online_cpus": [0, 1], "smt_sibling_groups": [],
        "frequency_governors": [], "clocksource": "tsc",
        "virtualization": {"guest": false, "hypervisor": null, "evidence": []},
        "rt_throttling": {"period_us": 1000000, "runtime_us": -1},
        "privileges": {"euid": 0, "cap_sys_nice": true, "cap_ipc_lock": true, "rtprio_limit": 0, "memlock_limit_bytes": null}
    }))
    .expect("host fixture")
}

/// A monitor of 1 ms wake-ups on CPUs 0 and 1 at SCHED_FIFO 95, 1-minute windows, started
/// with `command_line`.
pub fn settings(command_line: &[&str]) -> MonitorSettings {
    MonitorSettings {
        rtlab_version: "0.1.0".into(),
        probe: "timer".into(),
        command_line: command_line.iter().map(|s| s.to_string()).collect(),
        interval_ns: 1_000_000,
        window_ns: 60_000_000_000,
        cpus: vec![0, 1],
        policy: crate::host::Policy::Fifo,
        priority: 95,
        histogram_max_ns: 1_000_000_000,
        schedule: String::new(),
        real_time: true,
        notes: vec![],
    }
}

/// `timer.latency` of `cpu` holding exactly `values`, with `overruns` and `lost`.
pub fn metric(cpu: usize, values: impl IntoIterator<Item = i64>, overruns: u64, lost: u64) -> WindowMetric {
    let mut histogram = LatencyHistogram::new(1_000_000_000).expect("a histogram of 1 s");
    let mut moments = Moments::new();
    for v in values {
        histogram.record(v);
        moments.record(v);
    }
    WindowMetric {
        cpu,
        metric: "timer.latency".into(),
        moments,
        histogram: histogram.encode().expect("an encodable histogram"),
        overruns,
        lost,
    }
}
