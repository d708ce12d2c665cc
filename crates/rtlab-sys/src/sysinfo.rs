//! What the host is, and what on it may distort latency results.

pub use rtlab_results::host::{CpuGovernor, Distortion, PreemptionModel, RtThrottling, SystemInfo, Virtualization};

/// Collects everything it can read; missing files leave fields empty, never fail.
pub fn collect() -> SystemInfo {
    let uts = uname();
    let kernel_cmdline = read_trimmed("/proc/cmdline").unwrap_or_default();
    let cpuinfo = read("/proc/cpuinfo").unwrap_or_default();

    let preemption = detect_preemption(&PreemptionSources {
        sys_kernel_realtime: read("/sys/kernel/realtime"),
        uname_version: uts.version.clone(),
        debugfs_preempt: read("/sys/kernel/debug/sched/preempt"),
        kernel_cmdline: kernel_cmdline.clone(),
        kernel_config: kernel_config(&uts.release),
    });

    let online_cpus = crate::sched::online_cpus().unwrap_or_default();
    let sibling_lists: Vec<Vec<usize>> = online_cpus
        .iter()
        .filter_map(|cpu| {
            let path = format!("/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list");
            crate::sched::parse_cpu_list(&read(&path)?).ok()
        })
        .collect();
    let frequency_governors = online_cpus
        .iter()
        .map(|&cpu| CpuGovernor {
            cpu,
            governor: read_trimmed(&format!("/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor"))
                .filter(|g| !g.is_empty()),
        })
        .collect();

    let hypervisor_flag = cpuinfo_has_hypervisor_flag(&cpuinfo);
    let virtualization = classify_virtualization(&VirtualizationSources {
        cpuinfo_hypervisor_flag: hypervisor_flag,
        cpuid_hypervisor_vendor: if hypervisor_flag { cpuid_hypervisor_vendor() } else { None },
        sys_hypervisor_type: read_trimmed("/sys/hypervisor/type"),
        dmi_sys_vendor: read_trimmed("/sys/class/dmi/id/sys_vendor"),
        dmi_product_name: read_trimmed("/sys/class/dmi/id/product_name"),
        kernel_cmdline: kernel_cmdline.clone(),
    });

    SystemInfo {
        hostname: uts.hostname,
        kernel_release: uts.release,
        kernel_version: uts.version,
        machine: uts.machine,
        preemption_model: preemption.model,
        preemption_dynamic_mode: preemption.dynamic_mode,
        preemption_evidence: preemption.evidence,
        kernel_cmdline,
        isolated_cpus: parse_sys_cpu_list(&read("/sys/devices/system/cpu/isolated").unwrap_or_default()),
        nohz_full_cpus: parse_sys_cpu_list(&read("/sys/devices/system/cpu/nohz_full").unwrap_or_default()),
        cpu_model: parse_cpu_model(&cpuinfo).unwrap_or_default(),
        online_cpus,
        smt_sibling_groups: smt_groups(&sibling_lists),
        frequency_governors,
        clocksource: read_trimmed("/sys/devices/system/clocksource/clocksource0/current_clocksource")
            .filter(|c| !c.is_empty()),
        virtualization,
        rt_throttling: RtThrottling {
            period_us: read("/proc/sys/kernel/sched_rt_period_us").and_then(|t| parse_i64(&t)),
            runtime_us: read("/proc/sys/kernel/sched_rt_runtime_us").and_then(|t| parse_i64(&t)),
        },
        privileges: crate::privileges::current(),
    }
}

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

fn read_trimmed(path: &str) -> Option<String> {
    read(path).map(|s| s.trim().to_string())
}

/// The current clocksource (`tsc`, `kvm-clock`, `hpet`, ...), if readable.
pub fn current_clocksource() -> Option<String> {
    read_trimmed("/sys/devices/system/clocksource/clocksource0/current_clocksource")
}

/// The kernel's RT throttling: `sched_rt_runtime_us` and `sched_rt_period_us` (runtime -1:
/// off), if readable.
pub fn rt_throttling() -> Option<(i64, i64)> {
    let runtime = read_trimmed("/proc/sys/kernel/sched_rt_runtime_us")?.parse().ok()?;
    let period = read_trimmed("/proc/sys/kernel/sched_rt_period_us")?.parse().ok()?;
    Some((runtime, period))
}

struct Uts {
    hostname: String,
    release: String,
    version: String,
    machine: String,
}

/// `uname(2)`, falling back to /proc/sys/kernel (machine has no /proc file).
fn uname() -> Uts {
    fn field(chars: &[libc::c_char]) -> String {
        let bytes: Vec<u8> = chars.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }
    // SAFETY: utsname is plain arrays of c_char; all-zero is a valid (empty) value.
    let mut uts: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `uts` is a valid, writable utsname that outlives the call.
    if unsafe { libc::uname(&mut uts) } == 0 {
        return Uts {
            hostname: field(&uts.nodename),
            release: field(&uts.release),
            version: field(&uts.version),
            machine: field(&uts.machine),
        };
    }
    let proc = |name: &str| read_trimmed(&format!("/proc/sys/kernel/{name}")).unwrap_or_default();
    Uts { hostname: proc("hostname"), release: proc("osrelease"), version: proc("version"), machine: String::new() }
}

/// The kernel build configuration, when available: /boot/config-<release>, else
/// /proc/config.gz through `gzip -dc` (no decompressor dependency for one optional file).
fn kernel_config(release: &str) -> Option<(String, String)> {
    let boot = format!("/boot/config-{release}");
    if let Some(text) = read(&boot) {
        return Some((boot, text));
    }
    if !std::path::Path::new("/proc/config.gz").exists() {
        return None;
    }
    let out = std::process::Command::new("gzip")
        .args(["-dc", "/proc/config.gz"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    Some(("/proc/config.gz".to_string(), String::from_utf8_lossy(&out.stdout).into_owned()))
}

/// The hypervisor vendor signature of CPUID leaf 0x40000000 ("KVMKVMKVM", "Microsoft Hv",
/// "VMwareVMware", ...). Only meaningful when the cpuinfo hypervisor flag is set.
#[cfg(target_arch = "x86_64")]
#[allow(unused_unsafe)] // __cpuid is a safe fn on newer Rust, unsafe on the MSRV
fn cpuid_hypervisor_vendor() -> Option<String> {
    // Leaf 0x40000000 is reserved for hypervisors; bare metal returns unrelated data, which
    // is why the caller only asks when the hypervisor flag is set.
    // SAFETY: CPUID exists on every x86_64 CPU and querying any leaf has no side effects.
    let r = unsafe { std::arch::x86_64::__cpuid(0x4000_0000) };
    let mut bytes = Vec::with_capacity(12);
    for reg in [r.ebx, r.ecx, r.edx] {
        bytes.extend_from_slice(&reg.to_le_bytes());
    }
    let text: String =
        String::from_utf8_lossy(&bytes).trim_matches(|c: char| c == '\0' || c.is_whitespace()).to_string();
    (!text.is_empty() && text.chars().all(|c| c.is_ascii_graphic() || c == ' ')).then_some(text)
}

#[cfg(not(target_arch = "x86_64"))]
fn cpuid_hypervisor_vendor() -> Option<String> {
    None
}

/// A CPU list from a /sys file that may say "(null)" or be empty (nohz_full, isolated);
/// unreadable content gives an empty list.
pub fn parse_sys_cpu_list(text: &str) -> Vec<usize> {
    let t = text.trim();
    if t.is_empty() || t == "(null)" {
        return Vec::new();
    }
    crate::sched::parse_cpu_list(t).unwrap_or_default()
}

fn parse_i64(text: &str) -> Option<i64> {
    text.trim().parse().ok()
}

/// The CPU model from /proc/cpuinfo: "model name" (x86), else "Hardware" (ARM),
/// "cpu model" (MIPS) or "Processor" (old ARM).
pub fn parse_cpu_model(cpuinfo: &str) -> Option<String> {
    let value_of = |key: &str| {
        cpuinfo.lines().find_map(|line| {
            let (k, v) = line.split_once(':')?;
            (k.trim() == key && !v.trim().is_empty()).then(|| v.trim().to_string())
        })
    };
    ["model name", "Hardware", "cpu model", "Processor"].into_iter().find_map(value_of)
}

/// Whether the "flags" line of /proc/cpuinfo has the `hypervisor` flag (set by the CPUID
/// bit every mainstream hypervisor sets for its guests).
pub fn cpuinfo_has_hypervisor_flag(cpuinfo: &str) -> bool {
    cpuinfo.lines().any(|line| {
        line.split_once(':')
            .is_some_and(|(k, v)| k.trim() == "flags" && v.split_whitespace().any(|f| f == "hypervisor"))
    })
}

/// SMT groups from each CPU's thread_siblings_list: deduplicated, only groups of 2 or more.
pub fn smt_groups(sibling_lists: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for list in sibling_lists {
        if list.len() >= 2 && !groups.contains(list) {
            groups.push(list.clone());
        }
    }
    groups.sort();
    groups
}

/// The mode marked in /sys/kernel/debug/sched/preempt ("none voluntary (full) lazy" -> "full").
pub fn parse_debugfs_preempt(text: &str) -> Option<String> {
    text.split_whitespace().find_map(|t| {
        t.strip_prefix('(').and_then(|t| t.strip_suffix(')')).filter(|m| !m.is_empty()).map(str::to_string)
    })
}

/// The value of a `name=value` kernel command-line parameter (before any "--", after which
/// arguments belong to init).
pub fn cmdline_param<'a>(cmdline: &'a str, name: &str) -> Option<&'a str> {
    cmdline
        .split_whitespace()
        .take_while(|t| *t != "--")
        .filter_map(|t| t.split_once('='))
        .filter(|(k, _)| *k == name)
        .map(|(_, v)| v)
        .last()
}

/// The preemption model chosen at build time, from a kernel .config text.
pub fn parse_config_preemption(config: &str) -> Option<PreemptionModel> {
    let enabled = |opt: &str| config.lines().any(|l| l.trim() == format!("CONFIG_{opt}=y"));
    if enabled("PREEMPT_RT") {
        Some(PreemptionModel::PreemptRt)
    } else if enabled("PREEMPT_DYNAMIC") {
        Some(PreemptionModel::PreemptDynamic)
    } else if enabled("PREEMPT") || enabled("PREEMPT_LAZY") {
        Some(PreemptionModel::Preempt)
    } else if enabled("PREEMPT_VOLUNTARY") {
        Some(PreemptionModel::Voluntary)
    } else if enabled("PREEMPT_NONE") {
        Some(PreemptionModel::None)
    } else {
        None
    }
}

/// The default PREEMPT_DYNAMIC mode of a kernel .config (the build-time model choice).
pub fn parse_config_default_dynamic_mode(config: &str) -> Option<String> {
    let enabled = |opt: &str| config.lines().any(|l| l.trim() == format!("CONFIG_{opt}=y"));
    [("PREEMPT_NONE", "none"), ("PREEMPT_VOLUNTARY", "voluntary"), ("PREEMPT_LAZY", "lazy"), ("PREEMPT", "full")]
        .into_iter()
        .find(|(opt, _)| enabled(opt))
        .map(|(_, mode)| mode.to_string())
}

/// The preemption model as read from the flags `uname -v` carries ("#1 SMP PREEMPT_DYNAMIC ...").
/// None when no flag is present (a none or voluntary kernel: uname cannot tell which).
pub fn parse_uname_preemption(version: &str) -> Option<PreemptionModel> {
    let tokens: Vec<&str> = version.split_whitespace().collect();
    if tokens.windows(2).any(|w| w[0] == "PREEMPT" && w[1] == "RT") || tokens.contains(&"PREEMPT_RT") {
        Some(PreemptionModel::PreemptRt)
    } else if tokens.contains(&"PREEMPT_DYNAMIC") {
        Some(PreemptionModel::PreemptDynamic)
    } else if tokens.contains(&"PREEMPT") || tokens.contains(&"PREEMPT_LAZY") {
        Some(PreemptionModel::Preempt)
    } else {
        None
    }
}

/// Raw inputs of preemption detection (file contents; None when unreadable).
#[derive(Debug, Clone, Default)]
pub struct PreemptionSources {
    pub sys_kernel_realtime: Option<String>,
    pub uname_version: String,
    pub debugfs_preempt: Option<String>,
    pub kernel_cmdline: String,
    /// (where it was read, .config text)
    pub kernel_config: Option<(String, String)>,
}

/// Detected preemption model, its dynamic mode and the evidence used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preemption {
    pub model: PreemptionModel,
    pub dynamic_mode: Option<String>,
    pub evidence: Vec<String>,
}

/// Decides the preemption model from its sources, strongest first: /sys/kernel/realtime,
/// the `uname -v` flags, then the kernel .config.
pub fn detect_preemption(src: &PreemptionSources) -> Preemption {
    let mut evidence = Vec::new();
    let model = if src.sys_kernel_realtime.as_deref().map(str::trim) == Some("1") {
        evidence.push("/sys/kernel/realtime=1".to_string());
        PreemptionModel::PreemptRt
    } else if let Some(m) = parse_uname_preemption(&src.uname_version) {
        evidence.push(format!("uname -v: {}", src.uname_version.trim()));
        m
    } else if let Some((path, m)) =
        src.kernel_config.as_ref().and_then(|(path, text)| Some((path, parse_config_preemption(text)?)))
    {
        evidence.push(format!("uname -v has no PREEMPT flag; {path}: {}", model_config_name(m)));
        m
    } else {
        if !src.uname_version.trim().is_empty() {
            evidence.push(format!("uname -v has no PREEMPT flag (none or voluntary): {}", src.uname_version.trim()));
        }
        PreemptionModel::Unknown
    };

    let dynamic_mode = if model == PreemptionModel::PreemptDynamic {
        if let Some(mode) = src.debugfs_preempt.as_deref().and_then(parse_debugfs_preempt) {
            evidence.push(format!(
                "/sys/kernel/debug/sched/preempt: {}",
                src.debugfs_preempt.as_deref().unwrap_or_default().trim()
            ));
            Some(mode)
        } else if let Some(mode) = cmdline_param(&src.kernel_cmdline, "preempt") {
            evidence.push(format!("kernel cmdline preempt={mode}"));
            Some(mode.to_string())
        } else if let Some((path, mode)) =
            src.kernel_config.as_ref().and_then(|(path, text)| Some((path, parse_config_default_dynamic_mode(text)?)))
        {
            evidence
                .push(format!("{path}: default dynamic mode {mode} (no preempt= on the cmdline; debugfs unreadable)"));
            Some(mode)
        } else {
            None
        }
    } else {
        None
    };
    Preemption { model, dynamic_mode, evidence }
}

fn model_config_name(m: PreemptionModel) -> &'static str {
    match m {
        PreemptionModel::PreemptRt => "CONFIG_PREEMPT_RT=y",
        PreemptionModel::Preempt => "CONFIG_PREEMPT=y",
        PreemptionModel::PreemptDynamic => "CONFIG_PREEMPT_DYNAMIC=y",
        PreemptionModel::Voluntary => "CONFIG_PREEMPT_VOLUNTARY=y",
        PreemptionModel::None => "CONFIG_PREEMPT_NONE=y",
        PreemptionModel::Unknown => "no preemption option",
    }
}

/// Raw inputs of virtualization detection (None when unreadable/absent).
#[derive(Debug, Clone, Default)]
pub struct VirtualizationSources {
    pub cpuinfo_hypervisor_flag: bool,
    /// CPUID leaf 0x40000000 signature ("KVMKVMKVM", "Microsoft Hv", ...).
    pub cpuid_hypervisor_vendor: Option<String>,
    pub sys_hypervisor_type: Option<String>,
    pub dmi_sys_vendor: Option<String>,
    pub dmi_product_name: Option<String>,
    pub kernel_cmdline: String,
}

/// Hypervisor named by DMI sys_vendor/product_name, if they describe a virtual machine.
fn dmi_hypervisor(vendor: &str, product: &str) -> Option<&'static str> {
    let v = vendor.to_ascii_lowercase();
    let p = product.to_ascii_lowercase();
    // Bare-metal cloud instances carry the cloud's vendor string but are not guests.
    if p.contains(".metal") {
        return None;
    }
    if p.contains("kvm") || v.contains("kvm") {
        Some("KVM")
    } else if v.contains("qemu") || p.contains("qemu") {
        Some("QEMU")
    } else if v.contains("vmware") || p.contains("vmware") {
        Some("VMware")
    } else if v.contains("xen") || p.contains("hvm domu") {
        Some("Xen")
    } else if v.contains("innotek") || p.contains("virtualbox") {
        Some("VirtualBox")
    } else if v.contains("microsoft") && p.contains("virtual machine") {
        // Microsoft also sells hardware (Surface); only "Virtual Machine" is Hyper-V.
        Some("Microsoft Hyper-V")
    } else if v.contains("amazon ec2") {
        Some("Amazon EC2")
    } else if v.contains("google") || p.contains("google compute engine") {
        Some("Google Compute Engine")
    } else if v.contains("parallels") || p.contains("parallels") {
        Some("Parallels")
    } else if v.contains("bochs") || p.contains("bochs") {
        Some("Bochs")
    } else if p.contains("bhyve") || v.contains("bhyve") {
        Some("bhyve")
    } else if v.contains("openstack") || p.contains("openstack") {
        Some("OpenStack")
    } else {
        None
    }
}

/// Hypervisor named by a CPUID leaf 0x40000000 signature.
fn cpuid_hypervisor(sig: &str) -> Option<&'static str> {
    match sig.trim() {
        "KVMKVMKVM" => Some("KVM"),
        "Microsoft Hv" => Some("Microsoft Hyper-V"),
        "VMwareVMware" => Some("VMware"),
        "XenVMMXenVMM" => Some("Xen"),
        "TCGTCGTCGTCG" => Some("QEMU (TCG)"),
        "bhyve bhyve" => Some("bhyve"),
        "VBoxVBoxVBox" => Some("VirtualBox"),
        " lrpepyh  vr" | "prl hyperv" => Some("Parallels"),
        "ACRNACRNACRN" => Some("ACRN"),
        "QNXQVMBSQG" => Some("QNX"),
        _ => None,
    }
}

/// Decides whether this is a guest and which hypervisor runs it, naming each piece of
/// evidence. The most specific name wins: Firecracker (from the cmdline, it has no DMI),
/// then DMI, CPUID, /sys/hypervisor/type, and finally "unknown hypervisor".
pub fn classify_virtualization(src: &VirtualizationSources) -> Virtualization {
    let mut evidence = Vec::new();
    let mut names: Vec<String> = Vec::new();

    if src.cpuinfo_hypervisor_flag {
        evidence.push("cpuinfo hypervisor flag".to_string());
    }
    if src.kernel_cmdline.to_ascii_lowercase().contains("firecracker") {
        evidence.push("kernel cmdline mentions firecracker".to_string());
        names.push("Firecracker (KVM)".to_string());
    }
    let vendor = src.dmi_sys_vendor.as_deref().unwrap_or("");
    let product = src.dmi_product_name.as_deref().unwrap_or("");
    if let Some(name) = dmi_hypervisor(vendor, product) {
        if !vendor.is_empty() {
            evidence.push(format!("DMI sys_vendor={vendor}"));
        }
        if !product.is_empty() {
            evidence.push(format!("DMI product_name={product}"));
        }
        names.push(name.to_string());
    }
    if let Some(sig) = src.cpuid_hypervisor_vendor.as_deref() {
        if let Some(name) = cpuid_hypervisor(sig) {
            evidence.push(format!("CPUID hypervisor vendor={sig}"));
            names.push(name.to_string());
        }
    }
    if let Some(t) = src.sys_hypervisor_type.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
        evidence.push(format!("/sys/hypervisor/type={t}"));
        names.push(match t {
            "xen" => "Xen".to_string(),
            other => other.to_string(),
        });
    }
    let guest = src.cpuinfo_hypervisor_flag || !names.is_empty();
    let hypervisor = names.into_iter().next().or_else(|| guest.then(|| "unknown hypervisor".to_string()));
    Virtualization { guest, hypervisor, evidence }
}

/// Formats CPUs as a kernel CPU list ("0-3,8"), the inverse of
/// [`crate::sched::parse_cpu_list`].
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        parts.push(if start == end { start.to_string() } else { format!("{start}-{end}") });
        i += 1;
    }
    parts.join(",")
}

/// What may distort results when measuring on `measuring_cpus` with the given privileges.
///
/// An empty `measuring_cpus` means "all online CPUs". Ordered roughly by how much each
/// item can dominate the results.
pub fn distortions(info: &SystemInfo, measuring_cpus: &[usize]) -> Vec<Distortion> {
    let mut out = Vec::new();
    let mut add = |code: &str, message: String| out.push(Distortion { code: code.to_string(), message });
    let cpus: Vec<usize> = if measuring_cpus.is_empty() {
        info.online_cpus.clone()
    } else {
        let mut c = measuring_cpus.to_vec();
        c.sort_unstable();
        c.dedup();
        c
    };

    if info.virtualization.guest {
        let name = info.virtualization.hypervisor.as_deref().unwrap_or("unknown hypervisor");
        add(
            "virtual-machine",
            format!(
                "running in a virtual machine ({name}): the hypervisor can delay wake-ups by \
                 milliseconds; results describe this VM, not the hardware"
            ),
        );
    }

    if info.preemption_model != PreemptionModel::PreemptRt {
        add(
            "not-preempt-rt",
            format!(
                "the kernel is {}, not PREEMPT_RT: long non-preemptible kernel sections can \
                 delay a real-time wake-up far beyond what an RT kernel allows",
                describe_model(info)
            ),
        );
    }

    if !info.privileges.cap_sys_nice && info.privileges.rtprio_limit == 0 {
        add(
            "no-rt-privilege",
            "no CAP_SYS_NICE and RLIMIT_RTPRIO is 0: measuring threads cannot run SCHED_FIFO, \
             so results show ordinary time-sharing scheduling, not real-time latency"
                .to_string(),
        );
    }

    if info.rt_throttling.enabled() {
        let runtime = info.rt_throttling.runtime_us.unwrap_or_default();
        let period = match info.rt_throttling.period_us {
            Some(p) => p.to_string(),
            None => "?".to_string(),
        };
        add(
            "rt-throttling",
            format!(
                "RT throttling is enabled: real-time tasks are limited to {runtime}/{period} us \
                 per period, so a busy real-time thread is stopped for the rest of each period"
            ),
        );
    }

    let not_isolated: Vec<usize> = cpus.iter().copied().filter(|c| !info.isolated_cpus.contains(c)).collect();
    if !not_isolated.is_empty() {
        // Isolated CPUs left out of the measurement are the ones worth measuring on.
        let hint = if info.isolated_cpus.is_empty() {
            String::new()
        } else {
            let list = format_cpu_list(&info.isolated_cpus);
            format!(" ({} isolated: measure there with --cpus {list})", cpus_phrase(&info.isolated_cpus, "is", "are"))
        };
        add(
            "no-isolated-cpus",
            format!(
                "measuring {} not isolated (isolcpus): ordinary tasks, kernel threads and \
                 timers share the CPU with the measuring threads{hint}",
                cpus_phrase(&not_isolated, "is", "are")
            ),
        );
    }

    let mut busy_siblings: Vec<usize> = Vec::new();
    for group in &info.smt_sibling_groups {
        for &cpu in cpus.iter().filter(|c| group.contains(c)) {
            busy_siblings.extend(group.iter().copied().filter(|&s| s != cpu && !info.isolated_cpus.contains(&s)));
        }
    }
    if !busy_siblings.is_empty() {
        add(
            "smt-siblings",
            format!(
                "SMT sibling {} of a measuring CPU but not isolated: work there shares the \
                 core's execution units and caches and slows the measuring thread",
                cpus_phrase(&busy_siblings, "is", "are")
            ),
        );
    }

    let mut slow_governors: Vec<(usize, &str)> = info
        .frequency_governors
        .iter()
        .filter(|g| cpus.contains(&g.cpu))
        .filter_map(|g| Some((g.cpu, g.governor.as_deref()?)))
        .filter(|(_, g)| *g != "performance")
        .collect();
    slow_governors.sort_unstable();
    if !slow_governors.is_empty() {
        let mut names: Vec<&str> = slow_governors.iter().map(|(_, g)| *g).collect();
        names.sort_unstable();
        names.dedup();
        let cpu_list: Vec<usize> = slow_governors.iter().map(|(c, _)| *c).collect();
        add(
            "governor",
            format!(
                "measuring {} the {} frequency governor, not performance: frequency changes \
                 and ramp-up after idle add latency",
                cpus_phrase(&cpu_list, "uses", "use"),
                names.join("/")
            ),
        );
    }

    if let Some(cs) = info.clocksource.as_deref() {
        if cs != "tsc" && cs != "arch_sys_counter" {
            add(
                "clocksource",
                format!(
                    "the clocksource is {cs}, not tsc/arch_sys_counter: clock reads may be slower \
                     or trap to the kernel, adding overhead to every sample"
                ),
            );
        }
    }
    out
}

/// "CPU 1 is" / "CPUs 0-1 are": the list with a verb that agrees with it.
fn cpus_phrase(cpus: &[usize], singular: &str, plural: &str) -> String {
    let list = format_cpu_list(cpus);
    if list.contains(['-', ',']) {
        format!("CPUs {list} {plural}")
    } else {
        format!("CPU {list} {singular}")
    }
}

fn describe_model(info: &SystemInfo) -> String {
    match (info.preemption_model, info.preemption_dynamic_mode.as_deref()) {
        (PreemptionModel::PreemptDynamic, Some(mode)) => format!("PREEMPT_DYNAMIC (mode {mode})"),
        (PreemptionModel::PreemptDynamic, None) => "PREEMPT_DYNAMIC (mode unknown)".to_string(),
        (PreemptionModel::Preempt, _) => "PREEMPT (full preemption)".to_string(),
        (PreemptionModel::Voluntary, _) => "voluntary preemption".to_string(),
        (PreemptionModel::None, _) => "non-preemptible (PREEMPT_NONE)".to_string(),
        (PreemptionModel::Unknown, _) => "of unknown preemption model".to_string(),
        (PreemptionModel::PreemptRt, _) => "PREEMPT_RT".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privileges::Privileges;

    fn root() -> Privileges {
        Privileges {
            euid: 0,
            cap_sys_nice: true,
            cap_ipc_lock: true,
            rtprio_limit: 0,
            memlock_limit_bytes: Some(8 << 20),
        }
    }

    /// A tuned bare-metal PREEMPT_RT host: nothing to report.
    fn tuned() -> SystemInfo {
        SystemInfo {
            hostname: "rt".into(),
            kernel_release: "6.12.0-rt".into(),
            kernel_version: "#1 SMP PREEMPT_RT".into(),
            machine: "x86_64".into(),
            preemption_model: PreemptionModel::PreemptRt,
            preemption_dynamic_mode: None,
            preemption_evidence: vec!["/sys/kernel/realtime=1".into()],
            kernel_cmdline: "isolcpus=2-3".into(),
            isolated_cpus: vec![2, 3],
            nohz_full_cpus: vec![2, 3],
            cpu_model: "Test CPU".into(),
            online_cpus: vec![0, 1, 2, 3],
            smt_sibling_groups: vec![vec![0, 1], vec![2, 3]],
            frequency_governors: (0..4).map(|cpu| CpuGovernor { cpu, governor: Some("performance".into()) }).collect(),
            clocksource: Some("tsc".into()),
            virtualization: Virtualization { guest: false, hypervisor: None, evidence: vec![] },
            rt_throttling: RtThrottling { period_us: Some(1_000_000), runtime_us: Some(-1) },
            privileges: root(),
        }
    }

    fn codes(d: &[Distortion]) -> Vec<&str> {
        d.iter().map(|d| d.code.as_str()).collect()
    }

    #[test]
    fn tuned_host_has_no_distortions() {
        assert!(distortions(&tuned(), &[2, 3]).is_empty());
    }

    #[test]
    fn unisolated_measuring_cpus_point_at_the_isolated_ones() {
        let info = tuned(); // CPUs 2 and 3 isolated
        let d = distortions(&info, &[0, 2]);
        let message = &d.iter().find(|d| d.code == "no-isolated-cpus").unwrap().message;
        assert!(message.starts_with("measuring CPU 0 is not isolated"), "{message}");
        assert!(message.ends_with("(CPUs 2-3 are isolated: measure there with --cpus 2-3)"), "{message}");
    }

    #[test]
    fn untuned_vm_reports_everything() {
        let mut info = tuned();
        info.preemption_model = PreemptionModel::PreemptDynamic;
        info.preemption_dynamic_mode = Some("none".into());
        info.isolated_cpus = vec![];
        info.frequency_governors[0].governor = Some("schedutil".into());
        info.clocksource = Some("kvm-clock".into());
        info.virtualization = Virtualization {
            guest: true,
            hypervisor: Some("Firecracker (KVM)".into()),
            evidence: vec!["cpuinfo hypervisor flag".into()],
        };
        info.rt_throttling.runtime_us = Some(950_000);
        info.privileges.cap_sys_nice = false;
        let d = distortions(&info, &[0]);
        assert_eq!(
            codes(&d),
            vec![
                "virtual-machine",
                "not-preempt-rt",
                "no-rt-privilege",
                "rt-throttling",
                "no-isolated-cpus",
                "smt-siblings",
                "governor",
                "clocksource"
            ]
        );
        let msg = |code: &str| d.iter().find(|d| d.code == code).unwrap().message.clone();
        assert_eq!(
            msg("virtual-machine"),
            "running in a virtual machine (Firecracker (KVM)): the hypervisor can delay \
             wake-ups by milliseconds; results describe this VM, not the hardware"
        );
        assert!(msg("not-preempt-rt").contains("PREEMPT_DYNAMIC (mode none)"));
        assert!(msg("rt-throttling").contains("950000/1000000 us"));
        assert!(msg("governor").contains("schedutil"));
        assert!(msg("smt-siblings").starts_with("SMT sibling CPU 1 is "));
        assert!(msg("no-isolated-cpus").starts_with("measuring CPU 0 is not isolated"));
        assert!(msg("clocksource").contains("kvm-clock"));
        assert!(d.iter().all(|d| !d.message.contains('\n')));
    }

    #[test]
    fn smt_sibling_only_counts_when_not_isolated() {
        let mut info = tuned();
        // CPU 3 measures; its sibling 2 is isolated -> fine.
        assert!(distortions(&info, &[3]).is_empty());
        info.isolated_cpus = vec![3];
        let d = distortions(&info, &[3]);
        assert_eq!(codes(&d), vec!["smt-siblings"]);
        assert!(d[0].message.starts_with("SMT sibling CPU 2 is "));
    }

    #[test]
    fn rtprio_limit_grants_rt_privilege() {
        let mut info = tuned();
        info.privileges.cap_sys_nice = false;
        info.privileges.rtprio_limit = 95;
        assert!(distortions(&info, &[2]).is_empty());
        info.privileges.rtprio_limit = 0;
        assert_eq!(codes(&distortions(&info, &[2])), vec!["no-rt-privilege"]);
    }

    #[test]
    fn unknown_governor_and_clocksource_are_not_reported() {
        let mut info = tuned();
        info.frequency_governors.iter_mut().for_each(|g| g.governor = None);
        info.clocksource = None;
        assert!(distortions(&info, &[2, 3]).is_empty());
        info.clocksource = Some("arch_sys_counter".into());
        assert!(distortions(&info, &[2, 3]).is_empty());
    }

    #[test]
    fn governor_only_matters_on_measuring_cpus() {
        let mut info = tuned();
        info.frequency_governors[0].governor = Some("powersave".into());
        assert!(distortions(&info, &[2, 3]).is_empty());
        // Empty measuring set means all online CPUs.
        let all = distortions(&info, &[]);
        let governor = all.iter().find(|d| d.code == "governor").unwrap();
        assert!(governor.message.starts_with("measuring CPU 0 uses the powersave"));
        info.frequency_governors[1].governor = Some("powersave".into());
        let governor = distortions(&info, &[0, 1]).into_iter().find(|d| d.code == "governor").unwrap();
        assert!(governor.message.starts_with("measuring CPUs 0-1 use the powersave"));
    }

    #[test]
    fn formats_cpu_lists() {
        assert_eq!(format_cpu_list(&[3, 0, 1, 2, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(format_cpu_list(&[5]), "5");
        assert_eq!(format_cpu_list(&[]), "");
        let list = [0, 2, 3, 4, 9];
        assert_eq!(crate::sched::parse_cpu_list(&format_cpu_list(&list)).unwrap(), list);
    }

    #[test]
    fn sys_cpu_lists() {
        assert!(parse_sys_cpu_list("(null)\n").is_empty());
        assert!(parse_sys_cpu_list("\n").is_empty());
        assert!(parse_sys_cpu_list("garbage").is_empty());
        assert_eq!(parse_sys_cpu_list("2-3\n"), vec![2, 3]);
    }

    const CPUINFO_X86: &str = "processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC
flags\t\t: fpu vme de tsc msr hypervisor lahf_lm
";

    #[test]
    fn parses_cpuinfo() {
        assert_eq!(parse_cpu_model(CPUINFO_X86).as_deref(), Some("AMD EPYC"));
        assert!(cpuinfo_has_hypervisor_flag(CPUINFO_X86));
        let bare = CPUINFO_X86.replace("hypervisor ", "");
        assert!(!cpuinfo_has_hypervisor_flag(&bare));
        let arm = "processor\t: 0\nBogoMIPS\t: 108.00\nCPU implementer\t: 0x41\n\nHardware\t: BCM2835\n";
        assert_eq!(parse_cpu_model(arm).as_deref(), Some("BCM2835"));
        assert_eq!(parse_cpu_model("cpu model\t\t: MIPS 24Kc V7.4\n").as_deref(), Some("MIPS 24Kc V7.4"));
        assert_eq!(parse_cpu_model("processor : 0\n"), None);
    }

    #[test]
    fn smt_groups_dedup_and_filter() {
        let lists = vec![vec![0, 4], vec![1, 5], vec![0, 4], vec![2], vec![1, 5]];
        assert_eq!(smt_groups(&lists), vec![vec![0, 4], vec![1, 5]]);
        assert!(smt_groups(&[vec![0], vec![1]]).is_empty());
    }

    #[test]
    fn parses_debugfs_and_cmdline_preempt() {
        assert_eq!(parse_debugfs_preempt("none voluntary (full) lazy\n").as_deref(), Some("full"));
        assert_eq!(parse_debugfs_preempt("(none) voluntary full").as_deref(), Some("none"));
        assert_eq!(parse_debugfs_preempt("none voluntary full"), None);
        assert_eq!(cmdline_param("quiet preempt=voluntary ro", "preempt"), Some("voluntary"));
        assert_eq!(cmdline_param("quiet -- preempt=full", "preempt"), None);
        assert_eq!(cmdline_param("nopreempt=1", "preempt"), None);
    }

    #[test]
    fn parses_uname_preemption() {
        use PreemptionModel::{Preempt, PreemptDynamic, PreemptRt};
        assert_eq!(parse_uname_preemption("#1 SMP PREEMPT_DYNAMIC @0"), Some(PreemptDynamic));
        assert_eq!(parse_uname_preemption("#1 SMP PREEMPT_RT Debian 6.1.0-rt (2023-01-01)"), Some(PreemptRt));
        assert_eq!(parse_uname_preemption("#1 SMP PREEMPT RT Mon Jan 1"), Some(PreemptRt));
        assert_eq!(parse_uname_preemption("#1 SMP PREEMPT Mon Jan 1"), Some(Preempt));
        assert_eq!(parse_uname_preemption("#1 SMP Mon Jan 1"), None);
    }

    const CONFIG_DYNAMIC_NONE: &str = "CONFIG_PREEMPT_BUILD=y
CONFIG_PREEMPT_NONE=y
# CONFIG_PREEMPT_VOLUNTARY is not set
# CONFIG_PREEMPT is not set
# CONFIG_PREEMPT_LAZY is not set
CONFIG_PREEMPT_COUNT=y
CONFIG_PREEMPTION=y
CONFIG_PREEMPT_DYNAMIC=y
";

    #[test]
    fn parses_kernel_config() {
        assert_eq!(parse_config_preemption(CONFIG_DYNAMIC_NONE), Some(PreemptionModel::PreemptDynamic));
        assert_eq!(parse_config_default_dynamic_mode(CONFIG_DYNAMIC_NONE).as_deref(), Some("none"));
        assert_eq!(parse_config_preemption("CONFIG_PREEMPT_VOLUNTARY=y\n"), Some(PreemptionModel::Voluntary));
        assert_eq!(
            parse_config_preemption("CONFIG_PREEMPT_RT=y\nCONFIG_PREEMPT=y\n"),
            Some(PreemptionModel::PreemptRt)
        );
        assert_eq!(parse_config_preemption(""), None);
    }

    #[test]
    fn preemption_detection_order() {
        let dynamic = PreemptionSources {
            uname_version: "#1 SMP PREEMPT_DYNAMIC @0".into(),
            kernel_cmdline: "console=ttyS0 preempt=full".into(),
            ..Default::default()
        };
        let p = detect_preemption(&dynamic);
        assert_eq!(p.model, PreemptionModel::PreemptDynamic);
        assert_eq!(p.dynamic_mode.as_deref(), Some("full"));
        assert!(p.evidence.iter().any(|e| e.contains("uname -v")));
        assert!(p.evidence.iter().any(|e| e.contains("preempt=full")));

        // debugfs beats the cmdline (the mode can change at run time).
        let with_debugfs =
            PreemptionSources { debugfs_preempt: Some("none (voluntary) full lazy\n".into()), ..dynamic.clone() };
        assert_eq!(detect_preemption(&with_debugfs).dynamic_mode.as_deref(), Some("voluntary"));

        // Neither: the build default from the kernel config.
        let with_config = PreemptionSources {
            kernel_cmdline: "console=ttyS0".into(),
            kernel_config: Some(("/proc/config.gz".into(), CONFIG_DYNAMIC_NONE.into())),
            ..dynamic.clone()
        };
        assert_eq!(detect_preemption(&with_config).dynamic_mode.as_deref(), Some("none"));

        let rt = PreemptionSources {
            sys_kernel_realtime: Some("1\n".into()),
            uname_version: "#1 SMP PREEMPT_DYNAMIC".into(),
            ..Default::default()
        };
        let p = detect_preemption(&rt);
        assert_eq!(p.model, PreemptionModel::PreemptRt);
        assert_eq!(p.dynamic_mode, None);
        assert_eq!(p.evidence, vec!["/sys/kernel/realtime=1".to_string()]);

        let plain = PreemptionSources { uname_version: "#1 SMP Mon Jan 1".into(), ..Default::default() };
        assert_eq!(detect_preemption(&plain).model, PreemptionModel::Unknown);
        let voluntary = PreemptionSources {
            kernel_config: Some(("/boot/config-x".into(), "CONFIG_PREEMPT_VOLUNTARY=y\n".into())),
            ..plain
        };
        assert_eq!(detect_preemption(&voluntary).model, PreemptionModel::Voluntary);
    }

    #[test]
    fn virtualization_firecracker() {
        let v = classify_virtualization(&VirtualizationSources {
            cpuinfo_hypervisor_flag: true,
            cpuid_hypervisor_vendor: Some("KVMKVMKVM".into()),
            kernel_cmdline: "console=ttyS0 -- --firecracker-init".into(),
            ..Default::default()
        });
        assert!(v.guest);
        assert_eq!(v.hypervisor.as_deref(), Some("Firecracker (KVM)"));
        assert!(v.evidence.contains(&"cpuinfo hypervisor flag".to_string()));
        assert!(v.evidence.contains(&"kernel cmdline mentions firecracker".to_string()));
        assert!(v.evidence.contains(&"CPUID hypervisor vendor=KVMKVMKVM".to_string()));
    }

    #[test]
    fn virtualization_dmi_and_fallbacks() {
        let qemu = classify_virtualization(&VirtualizationSources {
            cpuinfo_hypervisor_flag: true,
            dmi_sys_vendor: Some("QEMU".into()),
            dmi_product_name: Some("Standard PC (Q35 + ICH9, 2009)".into()),
            ..Default::default()
        });
        assert_eq!(qemu.hypervisor.as_deref(), Some("QEMU"));
        assert!(qemu.evidence.contains(&"DMI sys_vendor=QEMU".to_string()));

        let hyperv = classify_virtualization(&VirtualizationSources {
            cpuinfo_hypervisor_flag: true,
            dmi_sys_vendor: Some("Microsoft Corporation".into()),
            dmi_product_name: Some("Virtual Machine".into()),
            ..Default::default()
        });
        assert_eq!(hyperv.hypervisor.as_deref(), Some("Microsoft Hyper-V"));

        let surface = classify_virtualization(&VirtualizationSources {
            dmi_sys_vendor: Some("Microsoft Corporation".into()),
            dmi_product_name: Some("Surface Laptop 5".into()),
            ..Default::default()
        });
        assert!(!surface.guest);
        assert_eq!(surface.hypervisor, None);

        let xen = classify_virtualization(&VirtualizationSources {
            sys_hypervisor_type: Some("xen\n".into()),
            ..Default::default()
        });
        assert!(xen.guest);
        assert_eq!(xen.hypervisor.as_deref(), Some("Xen"));
        assert_eq!(xen.evidence, vec!["/sys/hypervisor/type=xen".to_string()]);

        let flag_only =
            classify_virtualization(&VirtualizationSources { cpuinfo_hypervisor_flag: true, ..Default::default() });
        assert!(flag_only.guest);
        assert_eq!(flag_only.hypervisor.as_deref(), Some("unknown hypervisor"));

        let metal = classify_virtualization(&VirtualizationSources {
            dmi_sys_vendor: Some("Amazon EC2".into()),
            dmi_product_name: Some("m5.metal".into()),
            ..Default::default()
        });
        assert!(!metal.guest);
        assert!(metal.evidence.is_empty());
    }

    #[test]
    fn collect_on_this_machine() {
        let info = collect();
        assert!(!info.online_cpus.is_empty());
        assert!(!info.kernel_release.is_empty());
        assert!(!info.kernel_version.is_empty());
        assert!(!info.preemption_evidence.is_empty());
        assert_eq!(info.frequency_governors.len(), info.online_cpus.len());
        assert!(info.isolated_cpus.iter().all(|c| info.online_cpus.contains(c)));
        assert!(info.smt_sibling_groups.iter().all(|g| g.len() >= 2));
        if info.virtualization.guest {
            assert!(info.virtualization.hypervisor.is_some());
        }
        let d = distortions(&info, &info.online_cpus);
        assert!(d.iter().all(|d| !d.code.is_empty() && !d.message.is_empty()));
    }
}
