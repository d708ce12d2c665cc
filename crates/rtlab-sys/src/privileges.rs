//! Which privileges this process has for real-time measurement.

pub use rtlab_results::host::Privileges;

/// Capability bit numbers (linux/capability.h).
pub const CAP_IPC_LOCK: u32 = 14;
pub const CAP_SYS_NICE: u32 = 23;

/// The effective capability set from /proc/<pid>/status text ("CapEff:\t000001fffeffffff").
pub fn parse_cap_eff(status: &str) -> Option<u64> {
    status.lines().find_map(|line| {
        let value = line.strip_prefix("CapEff:")?;
        u64::from_str_radix(value.trim(), 16).ok()
    })
}

/// Whether capability bit `cap` is set in `caps`.
pub fn has_cap(caps: u64, cap: u32) -> bool {
    cap < 64 && caps & (1u64 << cap) != 0
}

/// Soft limit filled in by `call` (a `getrlimit` for one resource); None when unreadable.
/// Taking a closure keeps this independent of the resource-id type, which differs between
/// glibc and musl.
fn soft_rlimit(call: impl FnOnce(&mut libc::rlimit) -> libc::c_int) -> Option<libc::rlim_t> {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    if call(&mut lim) != 0 {
        return None;
    }
    Some(lim.rlim_cur)
}

/// Reads CapEff from /proc/self/status and the rlimits.
pub fn current() -> Privileges {
    // SAFETY: geteuid has no arguments and cannot fail.
    let euid = unsafe { libc::geteuid() };
    let caps = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| parse_cap_eff(&s))
        // Without /proc, fall back to "root has everything": the later syscall is the judge.
        .unwrap_or(if euid == 0 { u64::MAX } else { 0 });
    let rtprio_limit = match soft_rlimit(|lim| {
        // SAFETY: `lim` is a valid, writable rlimit that outlives the call.
        unsafe { libc::getrlimit(libc::RLIMIT_RTPRIO, lim) }
    }) {
        None => 0,
        Some(libc::RLIM_INFINITY) => u64::MAX,
        #[allow(clippy::unnecessary_cast)] // rlim_t is 32-bit on some targets
        Some(v) => v as u64,
    };
    let memlock_limit_bytes = match soft_rlimit(|lim| {
        // SAFETY: `lim` is a valid, writable rlimit that outlives the call.
        unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, lim) }
    }) {
        // getrlimit(RLIMIT_MEMLOCK) does not fail in practice; unreadable is treated as no cap.
        None | Some(libc::RLIM_INFINITY) => None,
        #[allow(clippy::unnecessary_cast)] // rlim_t is 32-bit on some targets
        Some(v) => Some(v as u64),
    };
    Privileges {
        euid,
        cap_sys_nice: has_cap(caps, CAP_SYS_NICE),
        cap_ipc_lock: has_cap(caps, CAP_IPC_LOCK),
        rtprio_limit,
        memlock_limit_bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cap_eff() {
        let status = "Name:\tx\nCapInh:\t0000000000000000\nCapPrm:\t000001fffeffffff\n\
                      CapEff:\t000001fffeffffff\nCapBnd:\t000001ffffffffff\n";
        let caps = parse_cap_eff(status).unwrap();
        assert_eq!(caps, 0x1fffeffffff);
        assert!(has_cap(caps, CAP_SYS_NICE));
        assert!(has_cap(caps, CAP_IPC_LOCK));
        assert!(!has_cap(caps, 24)); // CAP_SYS_RESOURCE is cleared in this fixture
        assert!(!has_cap(caps, 99));
    }

    #[test]
    fn parses_unprivileged_cap_eff() {
        let caps = parse_cap_eff("CapEff:\t0000000000000000\n").unwrap();
        assert!(!has_cap(caps, CAP_SYS_NICE));
        assert_eq!(parse_cap_eff("CapPrm:\t00\n"), None);
        assert_eq!(parse_cap_eff("CapEff:\tzz\n"), None);
    }

    #[test]
    fn rt_priority_rules() {
        let p = Privileges {
            euid: 1000,
            cap_sys_nice: false,
            cap_ipc_lock: false,
            rtprio_limit: 50,
            memlock_limit_bytes: Some(8 << 20),
        };
        assert!(p.may_use_rt_priority(50));
        assert!(!p.may_use_rt_priority(51));
    }

    #[test]
    fn current_is_consistent() {
        let p = current();
        // SAFETY: geteuid has no arguments and cannot fail.
        assert_eq!(p.euid, unsafe { libc::geteuid() });
        let caps = parse_cap_eff(&std::fs::read_to_string("/proc/self/status").unwrap()).unwrap();
        assert_eq!(p.cap_sys_nice, has_cap(caps, CAP_SYS_NICE));
        assert_eq!(p.cap_ipc_lock, has_cap(caps, CAP_IPC_LOCK));
    }
}
