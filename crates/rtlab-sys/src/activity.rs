//! System activity counters from /proc, and the rates between two snapshots.

pub use rtlab_results::activity::{Activity, CpuActivity, IrqRate};

/// Raw counters at one instant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActivitySnapshot {
    /// CLOCK_MONOTONIC when taken.
    pub taken_ns: u64,
    /// One entry per /proc/interrupts line: (line id "24" / "LOC", description, total over CPUs).
    pub interrupts: Vec<(String, String, u64)>,
    /// One entry per /proc/softirqs line ("NET_RX", "", total over CPUs): loopback network
    /// traffic shows here, not in /proc/interrupts.
    pub softirqs: Vec<(String, String, u64)>,
    /// `ctxt` from /proc/stat.
    pub context_switches: u64,
    /// Per CPU jiffies from /proc/stat "cpuN" lines.
    pub cpu_times: Vec<CpuTimes>,
}

/// Per CPU jiffies from /proc/stat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuTimes {
    pub cpu: usize,
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
}

impl CpuTimes {
    /// All jiffies of this CPU. Guest time is already counted in user/nice, so not added.
    fn total(&self) -> u64 {
        self.user
            .saturating_add(self.nice)
            .saturating_add(self.system)
            .saturating_add(self.idle)
            .saturating_add(self.iowait)
            .saturating_add(self.irq)
            .saturating_add(self.softirq)
            .saturating_add(self.steal)
    }
}

impl ActivitySnapshot {
    pub fn take() -> crate::Result<Self> {
        let interrupts_text = std::fs::read_to_string("/proc/interrupts")
            .map_err(|e| crate::SysError::from_io("read /proc/interrupts", e))?;
        let stat_text =
            std::fs::read_to_string("/proc/stat").map_err(|e| crate::SysError::from_io("read /proc/stat", e))?;
        let interrupts = parse_interrupts(&interrupts_text)?;
        // Same layout as /proc/interrupts; older kernels or containers may not have it.
        let softirqs = match std::fs::read_to_string("/proc/softirqs") {
            Ok(text) => parse_interrupts(&text)?,
            Err(_) => Vec::new(),
        };
        let (context_switches, cpu_times) = parse_proc_stat(&stat_text)?;
        Ok(Self { taken_ns: crate::clock::monotonic_ns(), interrupts, softirqs, context_switches, cpu_times })
    }
}

/// Parses /proc/interrupts into (line id, description, count summed over CPUs).
///
/// The header names one column per CPU ("CPU0 CPU1 ..."). Each line is "ID: counts...
/// description"; lines such as ERR and MIS carry a single count and no description.
pub fn parse_interrupts(text: &str) -> crate::Result<Vec<(String, String, u64)>> {
    let mut lines = text.lines().skip_while(|l| l.trim().is_empty());
    let header = lines.next().ok_or_else(|| crate::SysError::Invalid("/proc/interrupts is empty".into()))?;
    let ncpu = header.split_whitespace().filter(|t| t.starts_with("CPU")).count();
    if ncpu == 0 {
        return Err(crate::SysError::Invalid(format!("/proc/interrupts header has no CPU columns: {header:?}")));
    }
    let mut out = Vec::new();
    for line in lines {
        let Some((id, rest)) = line.split_once(':') else {
            continue;
        };
        let id = id.trim();
        if id.is_empty() {
            continue;
        }
        let mut tokens = rest.split_whitespace().peekable();
        let mut total = 0u64;
        let mut counts = 0;
        while counts < ncpu {
            match tokens.peek().and_then(|t| t.parse::<u64>().ok()) {
                Some(n) => {
                    total = total.saturating_add(n);
                    counts += 1;
                    tokens.next();
                }
                None => break,
            }
        }
        if counts == 0 {
            continue;
        }
        // Collapses the column padding ("IO-APIC   5-edge      ACPI:Ged").
        let description = tokens.collect::<Vec<_>>().join(" ");
        out.push((id.to_string(), description, total));
    }
    Ok(out)
}

/// Parses /proc/stat: the `ctxt` counter and the per-CPU "cpuN" lines (the aggregate "cpu"
/// line is skipped). Fields missing at the end of a cpu line (old kernels) count as 0.
pub fn parse_proc_stat(text: &str) -> crate::Result<(u64, Vec<CpuTimes>)> {
    let mut ctxt = None;
    let mut cpus = Vec::new();
    for line in text.lines() {
        let mut fields = line.split_whitespace();
        let Some(key) = fields.next() else {
            continue;
        };
        if key == "ctxt" {
            ctxt = fields.next().and_then(|v| v.parse::<u64>().ok());
            continue;
        }
        let Some(cpu) = key.strip_prefix("cpu").and_then(|n| n.parse::<usize>().ok()) else {
            continue;
        };
        let mut values = [0u64; 8];
        for (slot, field) in values.iter_mut().zip(fields) {
            *slot =
                field.parse().map_err(|_| crate::SysError::Invalid(format!("/proc/stat: bad field in {line:?}")))?;
        }
        let [user, nice, system, idle, iowait, irq, softirq, steal] = values;
        cpus.push(CpuTimes { cpu, user, nice, system, idle, iowait, irq, softirq, steal });
    }
    let ctxt = ctxt.ok_or_else(|| crate::SysError::Invalid("/proc/stat has no ctxt line".into()))?;
    Ok((ctxt, cpus))
}

/// Rates between two snapshots (`later` taken after `earlier`).
///
/// Counters that went backwards (per-CPU iowait can) count as no change; a line or CPU
/// that only exists in `later` is counted from zero (IRQ lines) or skipped (CPUs).
pub fn activity_between(earlier: &ActivitySnapshot, later: &ActivitySnapshot) -> Activity {
    let window_s = later.taken_ns.saturating_sub(earlier.taken_ns) as f64 / 1e9;
    // A zero window has no meaningful rate; report 0 rather than inf/NaN (invalid in JSON).
    let rate = |delta: u64| {
        if window_s > 0.0 {
            delta as f64 / window_s
        } else {
            0.0
        }
    };

    let line_rates = |earlier: &[(String, String, u64)], later: &[(String, String, u64)]| {
        let mut rates: Vec<IrqRate> = later
            .iter()
            .filter_map(|(id, name, count)| {
                let before = earlier.iter().find(|(eid, _, _)| eid == id).map_or(0, |(_, _, c)| *c);
                let delta = count.saturating_sub(before);
                (delta > 0).then(|| IrqRate { irq: id.clone(), name: name.clone(), per_s: rate(delta) })
            })
            .collect();
        // Stable sort: equal rates keep the file's order.
        rates.sort_by(|a, b| b.per_s.total_cmp(&a.per_s));
        rates
    };
    let interrupts_per_s = line_rates(&earlier.interrupts, &later.interrupts);
    let softirqs_per_s = line_rates(&earlier.softirqs, &later.softirqs);

    let cpus = later
        .cpu_times
        .iter()
        .filter_map(|l| {
            let e = earlier.cpu_times.iter().find(|e| e.cpu == l.cpu)?;
            let total = l.total().saturating_sub(e.total());
            if total == 0 {
                return Some(CpuActivity { cpu: l.cpu, busy: 0.0, steal: 0.0 });
            }
            let idle = l.idle.saturating_sub(e.idle);
            let iowait = l.iowait.saturating_sub(e.iowait);
            let steal = l.steal.saturating_sub(e.steal);
            let busy = total.saturating_sub(idle).saturating_sub(iowait).saturating_sub(steal);
            let frac = |x: u64| (x as f64 / total as f64).clamp(0.0, 1.0);
            Some(CpuActivity { cpu: l.cpu, busy: frac(busy), steal: frac(steal) })
        })
        .collect();

    Activity {
        window_s,
        interrupts_per_s,
        softirqs_per_s,
        context_switches_per_s: rate(later.context_switches.saturating_sub(earlier.context_switches)),
        cpus,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INTERRUPTS_2CPU: &str = "           CPU0       CPU1       
 24:          1          0  IO-APIC   5-edge      ACPI:Ged
 36:          0      32780 PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0
NMI:          0          0   Non-maskable interrupts
LOC:       7057       8554   Local timer interrupts
ERR:          0
MIS:          0
";

    const STAT: &str = "cpu  1432 0 1183 24351 226 0 21 9 0 0
cpu0 335 0 392 12883 5 0 5 1 0 0
cpu1 1096 0 790 11468 221 0 15 8 0 0
intr 105211 0 0 0
ctxt 229587
btime 1795239714
processes 3008
";

    #[test]
    fn parses_interrupts_fixture() {
        let lines = parse_interrupts(INTERRUPTS_2CPU).unwrap();
        assert_eq!(
            lines,
            vec![
                ("24".into(), "IO-APIC 5-edge ACPI:Ged".into(), 1),
                ("36".into(), "PCI-MSIX-0000:00:02.0 1-edge virtio1-req.0".into(), 32780),
                ("NMI".into(), "Non-maskable interrupts".into(), 0),
                ("LOC".into(), "Local timer interrupts".into(), 15611),
                ("ERR".into(), String::new(), 0),
                ("MIS".into(), String::new(), 0),
            ]
        );
    }

    #[test]
    fn interrupts_without_header_is_invalid() {
        assert!(parse_interrupts("").is_err());
        assert!(parse_interrupts(" 24: 1 2 foo\n").is_err());
    }

    #[test]
    fn parses_stat_fixture() {
        let (ctxt, cpus) = parse_proc_stat(STAT).unwrap();
        assert_eq!(ctxt, 229587);
        assert_eq!(cpus.len(), 2);
        assert_eq!(
            cpus[1],
            CpuTimes {
                cpu: 1,
                user: 1096,
                nice: 0,
                system: 790,
                idle: 11468,
                iowait: 221,
                irq: 0,
                softirq: 15,
                steal: 8,
            }
        );
    }

    #[test]
    fn stat_missing_trailing_fields_are_zero() {
        let (_, cpus) = parse_proc_stat("cpu0 1 2 3 4\nctxt 5\n").unwrap();
        assert_eq!(cpus[0].idle, 4);
        assert_eq!(cpus[0].iowait, 0);
        assert_eq!(cpus[0].steal, 0);
        assert!(parse_proc_stat("cpu0 1 2 3 4\n").is_err());
        assert!(parse_proc_stat("cpu0 1 x\nctxt 1\n").is_err());
    }

    fn cpu(cpu: usize, user: u64, idle: u64, iowait: u64, steal: u64) -> CpuTimes {
        CpuTimes { cpu, user, idle, iowait, steal, ..Default::default() }
    }

    #[test]
    fn rates_between_snapshots() {
        let earlier = ActivitySnapshot {
            taken_ns: 1_000_000_000,
            interrupts: vec![
                ("LOC".into(), "Local timer interrupts".into(), 100),
                ("24".into(), "ttyS0".into(), 5),
                ("NMI".into(), "Non-maskable interrupts".into(), 0),
            ],
            softirqs: vec![("NET_RX".into(), String::new(), 10), ("TIMER".into(), String::new(), 7)],
            context_switches: 1000,
            cpu_times: vec![cpu(0, 100, 100, 10, 0), cpu(1, 0, 50, 0, 0)],
        };
        let later = ActivitySnapshot {
            taken_ns: 3_000_000_000,
            interrupts: vec![
                ("LOC".into(), "Local timer interrupts".into(), 2100),
                ("24".into(), "ttyS0".into(), 9),
                ("NMI".into(), "Non-maskable interrupts".into(), 0),
            ],
            softirqs: vec![("NET_RX".into(), String::new(), 410), ("TIMER".into(), String::new(), 7)],
            context_switches: 1600,
            // cpu0: +60 user, +20 idle, +10 iowait, +10 steal over 100 jiffies.
            cpu_times: vec![cpu(0, 160, 120, 20, 10), cpu(1, 0, 50, 0, 0)],
        };
        let a = activity_between(&earlier, &later);
        assert_eq!(a.window_s, 2.0);
        assert_eq!(a.context_switches_per_s, 300.0);
        assert_eq!(a.interrupts_per_s.len(), 2, "zero-delta NMI dropped");
        assert_eq!(a.interrupts_per_s[0].irq, "LOC");
        assert_eq!(a.interrupts_per_s[0].per_s, 1000.0);
        assert_eq!(a.interrupts_per_s[1].irq, "24");
        assert_eq!(a.interrupts_per_s[1].per_s, 2.0);
        assert_eq!(a.softirqs_per_s.len(), 1, "zero-delta TIMER dropped");
        assert_eq!((a.softirqs_per_s[0].irq.as_str(), a.softirqs_per_s[0].per_s), ("NET_RX", 200.0));
        assert_eq!(a.cpus.len(), 2);
        assert!((a.cpus[0].busy - 0.6).abs() < 1e-12);
        assert!((a.cpus[0].steal - 0.1).abs() < 1e-12);
        assert_eq!((a.cpus[1].busy, a.cpus[1].steal), (0.0, 0.0));
    }

    #[test]
    fn zero_window_and_backward_counters_stay_finite() {
        let s = ActivitySnapshot {
            taken_ns: 5,
            interrupts: vec![("LOC".into(), String::new(), 10)],
            softirqs: Vec::new(),
            context_switches: 10,
            cpu_times: vec![cpu(0, 10, 10, 10, 0)],
        };
        let mut back = s.clone();
        back.cpu_times[0].iowait = 5;
        back.cpu_times[0].user = 20;
        let a = activity_between(&s, &back);
        assert_eq!(a.window_s, 0.0);
        assert_eq!(a.context_switches_per_s, 0.0);
        assert!(a.cpus.iter().all(|c| c.busy.is_finite() && c.steal.is_finite()));
    }

    #[test]
    fn snapshots_on_this_machine() {
        let a = ActivitySnapshot::take().unwrap();
        let b = ActivitySnapshot::take().unwrap();
        assert!(!a.interrupts.is_empty());
        assert!(!a.cpu_times.is_empty());
        assert!(b.taken_ns >= a.taken_ns);
        let act = activity_between(&a, &b);
        assert!(act.window_s >= 0.0);
        assert!(act.cpus.iter().all(|c| (0.0..=1.0).contains(&c.busy) && (0.0..=1.0).contains(&c.steal)));
    }
}
