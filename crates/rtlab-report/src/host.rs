//! `rtlab sysinfo`: the host description and its distortions, for people.

use rtlab_results::host::{Distortion, PreemptionModel, SystemInfo};
use std::fmt::Write;

fn cpu_list(cpus: &[usize]) -> String {
    if cpus.is_empty() {
        return "none".into();
    }
    cpus.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(",")
}

pub fn preemption_name(info: &SystemInfo) -> String {
    let model = match info.preemption_model {
        PreemptionModel::PreemptRt => "PREEMPT_RT",
        PreemptionModel::Preempt => "PREEMPT (low-latency desktop)",
        PreemptionModel::PreemptDynamic => "PREEMPT_DYNAMIC",
        PreemptionModel::Voluntary => "voluntary preemption",
        PreemptionModel::None => "no forced preemption (server)",
        PreemptionModel::Unknown => "unknown",
    };
    match &info.preemption_dynamic_mode {
        Some(mode) => format!("{model}, mode {mode}"),
        None => model.to_string(),
    }
}

pub fn format_host(info: &SystemInfo, distortions: &[Distortion]) -> String {
    let mut out = String::new();
    let p = &info.privileges;
    let governors: Vec<String> = info
        .frequency_governors
        .iter()
        .map(|g| format!("{}:{}", g.cpu, g.governor.as_deref().unwrap_or("none")))
        .collect();
    let rows: Vec<(&str, String)> = vec![
        ("host", info.hostname.clone()),
        ("kernel", format!("{} {} ({})", info.kernel_release, info.kernel_version, info.machine)),
        ("preemption", format!("{} [from {}]", preemption_name(info), info.preemption_evidence.join("; "))),
        ("command line", info.kernel_cmdline.clone()),
        (
            "RT boot params",
            match info.realtime_boot_parameters() {
                params if params.is_empty() => "none (no isolcpus, nohz_full, rcu_nocbs, threadirqs, idle=...)".into(),
                params => params.join(" "),
            },
        ),
        ("CPU model", info.cpu_model.clone()),
        ("online CPUs", cpu_list(&info.online_cpus)),
        ("isolated CPUs", cpu_list(&info.isolated_cpus)),
        ("nohz_full CPUs", cpu_list(&info.nohz_full_cpus)),
        (
            "SMT siblings",
            if info.smt_sibling_groups.is_empty() {
                "none".into()
            } else {
                info.smt_sibling_groups.iter().map(|g| format!("[{}]", cpu_list(g))).collect::<Vec<_>>().join(" ")
            },
        ),
        (
            "governors",
            if info.frequency_governors.iter().all(|g| g.governor.is_none()) {
                "no cpufreq (frequency not controlled by this kernel)".into()
            } else {
                governors.join(" ")
            },
        ),
        ("clocksource", info.clocksource.clone().unwrap_or_else(|| "unknown".into())),
        (
            "virtualization",
            if info.virtualization.guest {
                format!(
                    "guest of {} [{}]",
                    info.virtualization.hypervisor.as_deref().unwrap_or("an unknown hypervisor"),
                    info.virtualization.evidence.join("; ")
                )
            } else {
                "none detected".into()
            },
        ),
        (
            "RT throttling",
            match (info.rt_throttling.runtime_us, info.rt_throttling.period_us) {
                (Some(r), Some(p)) if r >= 0 => format!("on: {r} µs per {p} µs"),
                (Some(_), _) => "off".into(),
                _ => "unknown".into(),
            },
        ),
        (
            "privileges",
            format!(
                "euid {}, CAP_SYS_NICE {}, CAP_IPC_LOCK {}, RLIMIT_RTPRIO {}, RLIMIT_MEMLOCK {}",
                p.euid,
                yes(p.cap_sys_nice),
                yes(p.cap_ipc_lock),
                p.rtprio_limit,
                p.memlock_limit_bytes.map(|b| format!("{} KiB", b / 1024)).unwrap_or_else(|| "unlimited".into())
            ),
        ),
    ];
    for (name, value) in rows {
        let _ = writeln!(out, "{name:>15}  {value}");
    }
    if distortions.is_empty() {
        out.push_str("\nNothing on this host is known to distort latency results.\n");
    } else {
        out.push_str("\nWhat on this host may distort results:\n");
        for d in distortions {
            let _ = writeln!(out, "  ! {}: {}", d.code, d.message);
        }
    }
    out
}

pub(crate) fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}
