//! Loads by name: one load with parameters (`udp-flood:rate=100k:payload=64`), a scenario
//! of loads run together (`cpu:threads=1+proc-read`), and the papers' presets.
//!
//! Spec grammar: `NAME(:KEY=VALUE)*`. Values: numbers (with an optional `k` or `M`
//! multiplier), `true`/`false`, `max` or `none` for "no limit" (an unset optional value),
//! and text. Lists use `;` (`cpus=0;2-3`, `files=/proc/stat;/proc/meminfo`), except `argv`,
//! which is split at spaces (`exec:argv=stress-ng --cpu 2`). Commas are left to the caller,
//! which uses them to separate scenarios measured one after the other
//! (`--load idle,akamina`).

use crate::params::params;
use crate::{comms, compile, compress, cpu, disk, exec, fs_walk, memory, messaging, ping_flood, proc_read, udp_flood};
use crate::{Load, LoadError};

/// Loads this crate implements, by command-line name.
pub const LOADS: &[&str] = &[
    cpu::NAME,
    udp_flood::NAME,
    comms::NAME,
    disk::NAME,
    memory::NAME,
    proc_read::NAME,
    fs_walk::NAME,
    compress::NAME,
    compile::NAME,
    exec::NAME,
    ping_flood::NAME,
    messaging::NAME,
];

/// Presets and what they contain.
pub const PRESETS: &[(&str, &str)] = &[
    ("idle", "no load"),
    ("mixed", "messaging + udp-flood + disk: rtlab run's default load (scheduler, network softirqs, block I/O)"),
    ("akamina", "comms at 12.5 MB/s (Akamina's 100BaseT LAN): 60,000-byte messages echoed, 104 round trips/s"),
    ("regnier", "disk + fs-walk + compress + compile + udp-flood"),
    ("senoner", "disk (write, read, copy) + proc-read"),
    ("dohell", "proc-read of /proc/interrupts + ps loop + disk + ls -lR loop (xeno-test's dohell)"),
    ("osadl", "udp-flood at 1,000 packets/s + disk at 1 MB/s + memory at 1 MB/s"),
    ("dodiu", "ping-flood (ping -f to 127.0.0.1)"),
];

/// The `akamina` preset's comms rate: the paper's 100BaseT LAN.
const AKAMINA_RATE: &str = "12.5MB/s";

/// Regnier's shell loop (dd, find | xargs egrep, tar -cjf, make) as rtlab's loads: the
/// `regnier` preset without its UDP flood. `station:shell-loop` has the station run it.
pub const REGNIER_SHELL_LOOP: &str = "disk+fs-walk+compress+compile:jobs=1";

fn unknown(name: &str) -> LoadError {
    LoadError::Unknown {
        name: name.to_string(),
        loads: LOADS.join(", "),
        presets: PRESETS.iter().map(|(p, _)| *p).collect::<Vec<_>>().join(", "),
    }
}

/// One load from a spec such as `udp-flood:rate=100k` or `disk:parent=/var/tmp`.
pub fn parse_load_spec(spec: &str) -> Result<Box<dyn Load>, LoadError> {
    if let Some(remote) = spec.trim().strip_prefix("remote:") {
        return crate::remote::parse(remote);
    }
    if let Some(sent) = spec.trim().strip_prefix("station:") {
        return crate::remote::parse_station_load(sent);
    }
    let mut parts = spec.trim().split(':');
    let name = parts.next().unwrap_or_default().trim();
    let parts: Vec<&str> = parts.collect();
    Ok(match name {
        cpu::NAME => Box::new(cpu::CpuLoad::new(params(name, &parts)?)?),
        udp_flood::NAME => Box::new(udp_flood::UdpFloodLoad::new(params(name, &parts)?)?),
        comms::NAME => Box::new(comms::CommsLoad::new(params(name, &parts)?)?),
        disk::NAME => Box::new(disk::DiskLoad::new(params(name, &parts)?)?),
        memory::NAME => Box::new(memory::MemoryLoad::new(params(name, &parts)?)?),
        proc_read::NAME => Box::new(proc_read::ProcReadLoad::new(params(name, &parts)?)?),
        fs_walk::NAME => Box::new(fs_walk::FsWalkLoad::new(params(name, &parts)?)?),
        compress::NAME => Box::new(compress::CompressLoad::new(params(name, &parts)?)?),
        compile::NAME => Box::new(compile::CompileLoad::new(params(name, &parts)?)?),
        exec::NAME => Box::new(exec::ExecLoad::new(params(name, &parts)?)?),
        ping_flood::NAME => Box::new(ping_flood::PingFloodLoad::new(params(name, &parts)?)?),
        messaging::NAME => Box::new(messaging::MessagingLoad::new(params(name, &parts)?)?),
        _ => return Err(unknown(name)),
    })
}

/// A command run through `sh -c` as an `exec` load.
fn shell_loop(script: &str) -> Result<Box<dyn Load>, LoadError> {
    Ok(Box::new(exec::ExecLoad::new(exec::ExecParams {
        argv: vec![script.to_string()],
        shell: true,
        ..Default::default()
    })?))
}

/// The loads of a preset (see [`PRESETS`]); `idle` is empty.
pub fn preset(name: &str) -> Result<Vec<Box<dyn Load>>, LoadError> {
    let loads: Vec<Box<dyn Load>> = match name {
        "idle" => Vec::new(),
        // The paper's client and server talked over a 100BaseT LAN: 100 Mbit/s, one message
        // at a time (the client waits for each echo), so 12.5 MB/s both ways together.
        "akamina" => vec![Box::new(comms::CommsLoad::new(comms::CommsParams {
            rate: Some(AKAMINA_RATE.parse().expect("a valid rate")),
            ..Default::default()
        })?)],
        // The shell loop, then E_L's flood (here on loopback).
        "regnier" => {
            let mut loads = scenario(REGNIER_SHELL_LOOP)?;
            loads.push(Box::new(udp_flood::UdpFloodLoad::new(Default::default())?));
            loads
        }
        "senoner" => vec![
            Box::new(disk::DiskLoad::new(Default::default())?),
            Box::new(proc_read::ProcReadLoad::new(Default::default())?),
        ],
        "dohell" => vec![
            Box::new(proc_read::ProcReadLoad::new(proc_read::ProcReadParams {
                files: vec!["/proc/interrupts".into()],
                rate: None,
            })?),
            shell_loop("while :; do ps w > /dev/null; done")?,
            Box::new(disk::DiskLoad::new(Default::default())?),
            shell_loop("while :; do ls -lR / > /dev/null 2>&1; done")?,
        ],
        "osadl" => vec![
            Box::new(udp_flood::UdpFloodLoad::new(udp_flood::UdpFloodParams {
                rate: Some(1000),
                ..Default::default()
            })?),
            Box::new(disk::DiskLoad::new(disk::DiskParams {
                rate_mb_s: Some(1.0),
                file_mib: 8,
                ..Default::default()
            })?),
            Box::new(memory::MemoryLoad::new(memory::MemoryParams { rate_mb_s: Some(1.0), ..Default::default() })?),
        ],
        "dodiu" => vec![Box::new(ping_flood::PingFloodLoad::new(Default::default())?)],
        // rteval's idea (hackbench + I/O) with what needs no compiler and no privilege.
        "mixed" => vec![
            Box::new(messaging::MessagingLoad::new(Default::default())?),
            Box::new(udp_flood::UdpFloodLoad::new(Default::default())?),
            Box::new(disk::DiskLoad::new(disk::DiskParams { file_mib: 32, ..Default::default() })?),
        ],
        _ => return Err(unknown(name)),
    };
    Ok(loads)
}

/// A scenario: a preset name, or loads run together joined by `+`
/// (`cpu:threads=1+proc-read`).
pub fn scenario(spec: &str) -> Result<Vec<Box<dyn Load>>, LoadError> {
    let spec = spec.trim();
    if PRESETS.iter().any(|(name, _)| *name == spec) {
        return preset(spec);
    }
    spec.split('+').map(parse_load_spec).collect()
}

/// Loads run together, under the name the user gave them.
pub struct Scenario {
    /// The spec as given: "idle", "akamina", "cpu:threads=1+proc-read".
    pub name: String,
    pub loads: Vec<Box<dyn Load>>,
}

/// Scenarios separated by commas (`idle,akamina,cpu+disk`), in order. Every load is
/// constructed (and so validated) before any is started.
pub fn parse_load_list(list: &str) -> Result<Vec<Scenario>, LoadError> {
    list.split(',').map(|s| Ok(Scenario { name: s.trim().to_string(), loads: scenario(s)? })).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_loads_from_specs() {
        for spec in [
            "cpu",
            "cpu:threads=1:cpus=0",
            "udp-flood:rate=200k:payload=64",
            "udp-flood:rate=max",
            "comms:message-bytes=60000",
            "comms:rate=12.5MB/s",
            "comms:rate=100Mbit/s:clients=2",
            "comms:rate=max",
            "memory:rate_mb_s=1",
            "proc-read:files=/proc/stat;/proc/meminfo",
            "fs-walk:root=/usr:word=1000",
            "exec:argv=sleep 10",
            "messaging",
            "messaging:groups=1:senders=2:receivers=3:message-bytes=1k:transport=pipe",
        ] {
            let load = parse_load_spec(spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
            assert_eq!(load.name(), spec.split(':').next().unwrap());
        }
    }

    #[test]
    fn builds_ping_flood_from_specs_or_says_it_needs_cap_net_raw() {
        for spec in ["ping-flood", "ping-flood:target=127.0.0.1:payload=1000:rate=none:senders=2", "ping-flood:rate=1k"]
        {
            match parse_load_spec(spec) {
                Ok(load) => assert_eq!(load.name(), "ping-flood"),
                Err(e) => assert!(!e.is_usage_error() && e.to_string().contains("CAP_NET_RAW"), "{spec}: {e}"),
            }
        }
    }

    #[test]
    fn bad_specs_are_usage_errors_naming_the_problem() {
        for (spec, needle) in [
            ("udp-flood:rate=-5", "rate"),
            ("udp-flood:rate=0", "rate"),
            ("udp-flood:rte=5", "rte"),
            ("udp-flod", "udp-flod"),
            ("memory:rate_mb_s=-1", "rate"),
            ("disk:parent=/proc", "/proc"),
            ("exec:argv=rtlab-no-such-program --x", "rtlab-no-such-program"),
            ("cpu:threads", "KEY=VALUE"),
            ("ping-flood:payload=70000", "payload"),
            ("ping-flood:target=localhost", "target"),
            ("ping-flood:rate=0", "rate"),
            ("ping-flood:count=5", "count"),
            ("messaging:transport=udp", "`socket` or `pipe`"),
            ("messaging:groups=0", "groups"),
            ("messaging:message_bytes=100k", "message_bytes"),
            ("comms:rate=12.5", "no unit"),
            ("comms:rate=fast", "rate \"fast\""),
            ("comms:rate=0MB/s", "at least 1 B/s"),
        ] {
            let err = parse_load_spec(spec).err().unwrap_or_else(|| panic!("{spec} accepted"));
            assert!(err.is_usage_error(), "{spec}: {err}");
            assert!(err.to_string().contains(needle), "{spec}: {err}");
        }
    }

    #[test]
    fn presets() {
        assert!(preset("idle").unwrap().is_empty());
        let akamina = preset("akamina").unwrap();
        assert_eq!(akamina.iter().map(|l| l.name()).collect::<Vec<_>>(), vec!["comms"]);
        assert_eq!(AKAMINA_RATE.parse::<comms::ByteRate>().unwrap().bytes_per_s(), 12_500_000);
        let names = |p: &str| preset(p).unwrap().iter().map(|l| l.name().to_string()).collect::<Vec<_>>();
        assert_eq!(names("senoner"), vec!["disk", "proc-read"]);
        assert_eq!(names("osadl"), vec!["udp-flood", "disk", "memory"]);
        assert_eq!(names("dohell"), vec!["proc-read", "exec", "disk", "exec"]);
        if exec::find_program("t", "cc").is_ok() {
            assert_eq!(names("regnier"), vec!["disk", "fs-walk", "compress", "compile", "udp-flood"]);
            let shell: Vec<String> = scenario(REGNIER_SHELL_LOOP).unwrap().iter().map(|l| l.name().into()).collect();
            assert_eq!(shell, names("regnier")[..4], "the regnier preset is the shell loop and a flood");
        }
        match preset("dodiu") {
            Ok(_) => assert_eq!(names("dodiu"), vec!["ping-flood"]),
            Err(e) => assert!(!e.is_usage_error() && e.to_string().contains("CAP_NET_RAW"), "{e}"),
        }
        assert!(matches!(preset("nope"), Err(LoadError::Unknown { .. })));
    }

    #[test]
    fn scenarios_and_lists() {
        let list = parse_load_list("idle, akamina,cpu:threads=1+proc-read").unwrap();
        let shape: Vec<(String, Vec<String>)> =
            list.iter().map(|s| (s.name.clone(), s.loads.iter().map(|x| x.name().to_string()).collect())).collect();
        assert_eq!(
            shape,
            vec![
                ("idle".to_string(), vec![]),
                ("akamina".to_string(), vec!["comms".to_string()]),
                ("cpu:threads=1+proc-read".to_string(), vec!["cpu".to_string(), "proc-read".to_string()]),
            ]
        );
        assert!(parse_load_list("idle,bogus").is_err());
    }
}
