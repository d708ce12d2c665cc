//! The fixed host description used with the simulated clock, so that a simulated run is
//! identical on every machine (snapshot tests).

use rtlab_results::host::{CpuGovernor, PreemptionModel, Privileges, RtThrottling, SystemInfo, Virtualization};

pub fn simulated_host() -> SystemInfo {
    SystemInfo {
        hostname: "simulated".into(),
        kernel_release: "6.0.0-simulated".into(),
        kernel_version: "#1 SMP PREEMPT_RT".into(),
        machine: "x86_64".into(),
        preemption_model: PreemptionModel::PreemptRt,
        preemption_dynamic_mode: None,
        preemption_evidence: vec!["simulated".into()],
        kernel_cmdline: "isolcpus=0,1".into(),
        isolated_cpus: vec![0, 1],
        nohz_full_cpus: vec![],
        cpu_model: "Simulated CPU".into(),
        online_cpus: vec![0, 1],
        smt_sibling_groups: vec![],
        frequency_governors: vec![
            CpuGovernor { cpu: 0, governor: Some("performance".into()) },
            CpuGovernor { cpu: 1, governor: Some("performance".into()) },
        ],
        clocksource: Some("tsc".into()),
        virtualization: Virtualization { guest: false, hypervisor: None, evidence: vec![] },
        rt_throttling: RtThrottling { period_us: Some(1_000_000), runtime_us: Some(-1) },
        privileges: Privileges {
            euid: 0,
            cap_sys_nice: true,
            cap_ipc_lock: true,
            rtprio_limit: 0,
            memlock_limit_bytes: None,
        },
    }
}
