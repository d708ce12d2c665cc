//! The host a run measured: what `rtlab-sys` reads from the system (run.json `host` and
//! `warnings`), as plain data.

use serde::{Deserialize, Serialize};

/// Preemption model of the running kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum PreemptionModel {
    #[serde(rename = "PREEMPT_RT")]
    PreemptRt,
    #[serde(rename = "PREEMPT")]
    Preempt,
    #[serde(rename = "PREEMPT_DYNAMIC")]
    PreemptDynamic,
    #[serde(rename = "voluntary")]
    Voluntary,
    #[serde(rename = "none")]
    None,
    #[serde(rename = "unknown")]
    Unknown,
}

/// Detected virtualization.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Virtualization {
    /// True when any source says this is a guest.
    pub guest: bool,
    /// Hypervisor name when known ("KVM", "Firecracker", "Xen", "VMware", "Microsoft Hyper-V", ...).
    pub hypervisor: Option<String>,
    /// Which evidence was used ("cpuinfo hypervisor flag", "DMI sys_vendor=...", "/sys/hypervisor/type", ...).
    pub evidence: Vec<String>,
}

/// RT throttling (/proc/sys/kernel/sched_rt_runtime_us, sched_rt_period_us).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RtThrottling {
    pub period_us: Option<i64>,
    /// -1 means throttling is off.
    pub runtime_us: Option<i64>,
}

impl RtThrottling {
    pub fn enabled(&self) -> bool {
        matches!(self.runtime_us, Some(r) if r >= 0)
    }
}

/// Frequency governor of one CPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuGovernor {
    pub cpu: usize,
    /// None when cpufreq is absent (common in VMs).
    pub governor: Option<String>,
}

/// Host description saved in run.json (`host`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SystemInfo {
    pub hostname: String,
    pub kernel_release: String,
    pub kernel_version: String,
    pub machine: String,
    pub preemption_model: PreemptionModel,
    /// For PREEMPT_DYNAMIC: the mode in force ("full", "voluntary", "none", "lazy") when readable.
    pub preemption_dynamic_mode: Option<String>,
    /// Where the preemption model was read from ("uname -v", "/sys/kernel/realtime", ...).
    pub preemption_evidence: Vec<String>,
    pub kernel_cmdline: String,
    pub isolated_cpus: Vec<usize>,
    pub nohz_full_cpus: Vec<usize>,
    pub cpu_model: String,
    pub online_cpus: Vec<usize>,
    /// Groups of SMT siblings (thread_siblings_list), only groups of 2 or more.
    pub smt_sibling_groups: Vec<Vec<usize>>,
    pub frequency_governors: Vec<CpuGovernor>,
    pub clocksource: Option<String>,
    pub virtualization: Virtualization,
    pub rt_throttling: RtThrottling,
    pub privileges: Privileges,
}

/// Kernel parameters that tune a machine for latency (`isolcpus=`, `nohz_full=`, ...): the
/// names [`SystemInfo::realtime_boot_parameters`] picks out of the command line.
pub const REALTIME_BOOT_PARAMETERS: [&str; 15] = [
    "isolcpus",
    "nohz_full",
    "nohz",
    "rcu_nocbs",
    "rcu_nocb_poll",
    "irqaffinity",
    "threadirqs",
    "idle",
    "intel_idle.max_cstate",
    "processor.max_cstate",
    "skew_tick",
    "nosoftlockup",
    "tsc",
    "preempt",
    "kthread_cpus",
];

impl SystemInfo {
    /// The latency-tuning parameters of the kernel command line, as written there
    /// (`isolcpus=1`, `threadirqs`), in its order.
    pub fn realtime_boot_parameters(&self) -> Vec<&str> {
        self.kernel_cmdline
            .split_whitespace()
            .filter(|p| REALTIME_BOOT_PARAMETERS.contains(&p.split('=').next().unwrap_or(p)))
            .collect()
    }
}

/// One thing on this host that may distort results.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Distortion {
    /// Stable identifier: "virtual-machine", "governor", "smt-siblings", "no-isolated-cpus",
    /// "rt-throttling", "no-rt-privilege", "clocksource", "not-preempt-rt".
    pub code: String,
    /// One sentence for a person, saying what and why it matters.
    pub message: String,
}

/// What the process may do, read without changing anything.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Privileges {
    pub euid: u32,
    /// CAP_SYS_NICE in the effective set: SCHED_FIFO/RR at any priority.
    pub cap_sys_nice: bool,
    /// CAP_IPC_LOCK in the effective set: mlockall without the memlock limit.
    pub cap_ipc_lock: bool,
    /// RLIMIT_RTPRIO soft limit (highest RT priority allowed without CAP_SYS_NICE).
    pub rtprio_limit: u64,
    /// RLIMIT_MEMLOCK soft limit in bytes; None = unlimited.
    pub memlock_limit_bytes: Option<u64>,
}

impl Privileges {
    /// Whether SCHED_FIFO/RR at `priority` should be allowed.
    pub fn may_use_rt_priority(&self, priority: i32) -> bool {
        self.cap_sys_nice || (priority >= 0 && (priority as u64) <= self.rtprio_limit)
    }
}

/// Scheduling policy of a measuring thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    Fifo,
    Rr,
    Other,
}

impl Policy {
    /// The kernel's name: "SCHED_FIFO", "SCHED_RR", "SCHED_OTHER".
    pub fn kernel_name(self) -> &'static str {
        match self {
            Policy::Fifo => "SCHED_FIFO",
            Policy::Rr => "SCHED_RR",
            Policy::Other => "SCHED_OTHER",
        }
    }

    pub fn is_realtime(self) -> bool {
        !matches!(self, Policy::Other)
    }
}

#[cfg(test)]
mod boot_parameter_tests {
    #[test]
    fn realtime_boot_parameters_are_picked_in_order_with_their_values() {
        let mut host: super::SystemInfo = serde_json::from_value(serde_json::json!({
            "hostname": "board", "kernel_release": "6.1.0-rt", "kernel_version": "#1", "machine": "x86_64",
            "preemption_model": "PREEMPT_RT", "preemption_dynamic_mode": null, "preemption_evidence": [],
            "kernel_cmdline": "", "isolated_cpus": [], "nohz_full_cpus": [], "cpu_model": "test",
            "online_cpus": [0], "smt_sibling_groups": [], "frequency_governors": [], "clocksource": "tsc",
            "virtualization": {"guest": false, "hypervisor": null, "evidence": []},
            "rt_throttling": {"period_us": 1000000, "runtime_us": -1},
            "privileges": {"euid": 0, "cap_sys_nice": true, "cap_ipc_lock": true, "rtprio_limit": 0, "memlock_limit_bytes": null}
        }))
        .unwrap();
        host.kernel_cmdline = "BOOT_IMAGE=/vmlinuz root=/dev/vda ro isolcpus=managed_irq,domain,2-3 quiet \
                               nohz_full=2-3 rcu_nocbs=2-3 threadirqs idle=poll isolcpusx=1 console=ttyS0"
            .into();
        let expected = ["isolcpus=managed_irq,domain,2-3", "nohz_full=2-3", "rcu_nocbs=2-3", "threadirqs", "idle=poll"];
        assert_eq!(host.realtime_boot_parameters(), expected);
        host.kernel_cmdline = "root=/dev/vda quiet".into();
        assert!(host.realtime_boot_parameters().is_empty());
    }
}
