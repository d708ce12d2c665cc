//! Scheduling policy/priority and CPU affinity of the calling thread, as RAII guards.
//!
//! Both settings are per thread: a guard must be dropped on the thread that created it,
//! otherwise it restores the setting of the wrong thread.

pub use rtlab_results::host::Policy;
use std::ops::RangeInclusive;

/// The policy's `SCHED_*` constant.
fn policy_to_raw(policy: Policy) -> libc::c_int {
    match policy {
        Policy::Fifo => libc::SCHED_FIFO,
        Policy::Rr => libc::SCHED_RR,
        Policy::Other => libc::SCHED_OTHER,
    }
}

/// Valid priorities for `policy` (`sched_get_priority_min/max`; 0..=0 for SCHED_OTHER).
pub fn priority_range(policy: Policy) -> RangeInclusive<i32> {
    if !policy.is_realtime() {
        return 0..=0;
    }
    let raw = policy_to_raw(policy);
    // SAFETY: both calls take a policy number only and return an int (or -1 on EINVAL).
    let (min, max) = unsafe { (libc::sched_get_priority_min(raw), libc::sched_get_priority_max(raw)) };
    if min < 0 || max < 0 {
        // Cannot happen for FIFO/RR on Linux; fall back to the documented Linux range.
        return 1..=99;
    }
    min..=max
}

/// Sets the calling thread's policy and priority; restores the previous ones on drop.
#[derive(Debug)]
pub struct SchedulingGuard {
    /// Raw previous policy (may carry SCHED_RESET_ON_FORK, which sched_setscheduler accepts).
    previous_policy: libc::c_int,
    previous_priority: libc::c_int,
}

/// `sched_setscheduler(0, policy, priority)` on the calling thread.
fn set_scheduler(policy: libc::c_int, priority: libc::c_int) -> crate::Result<()> {
    let param = libc::sched_param { sched_priority: priority };
    // SAFETY: `param` is a valid sched_param for the call; pid 0 is the calling thread.
    let rc = unsafe { libc::sched_setscheduler(0, policy, &param) };
    if rc != 0 {
        return Err(crate::SysError::last_os("sched_setscheduler"));
    }
    Ok(())
}

/// `sched_setscheduler(tid, SCHED_FIFO, priority)` on another task (the kernel's timerlat
/// threads, as rtla -P does). Not restored: those threads end with their tracer.
pub fn set_task_fifo(tid: i32, priority: i32) -> crate::Result<()> {
    let range = priority_range(Policy::Fifo);
    if !range.contains(&priority) || tid <= 0 {
        return Err(crate::SysError::Invalid(format!("SCHED_FIFO {priority} for task {tid}")));
    }
    let param = libc::sched_param { sched_priority: priority };
    // SAFETY: `param` is a valid sched_param for the call; `tid` names a task, not memory.
    let rc = unsafe { libc::sched_setscheduler(tid, libc::SCHED_FIFO, &param) };
    if rc != 0 {
        return Err(crate::SysError::last_os("sched_setscheduler"));
    }
    Ok(())
}

impl SchedulingGuard {
    /// `sched_setscheduler(0 /* calling thread */, policy, priority)`.
    /// EPERM gives [`crate::SysError::PermissionDenied`].
    pub fn set_current_thread(policy: Policy, priority: i32) -> crate::Result<Self> {
        let range = priority_range(policy);
        if !range.contains(&priority) {
            return Err(crate::SysError::Invalid(format!(
                "priority {priority} is outside {}..={} for {policy:?}",
                range.start(),
                range.end()
            )));
        }
        // SAFETY: takes pid 0 (the calling thread) only; returns the policy or -1.
        let previous_policy = unsafe { libc::sched_getscheduler(0) };
        if previous_policy < 0 {
            return Err(crate::SysError::last_os("sched_getscheduler"));
        }
        let mut param = libc::sched_param { sched_priority: 0 };
        // SAFETY: `param` is a valid, writable sched_param; pid 0 is the calling thread.
        let rc = unsafe { libc::sched_getparam(0, &mut param) };
        if rc != 0 {
            return Err(crate::SysError::last_os("sched_getparam"));
        }
        set_scheduler(policy_to_raw(policy), priority)?;
        Ok(Self { previous_policy, previous_priority: param.sched_priority })
    }
}

impl Drop for SchedulingGuard {
    fn drop(&mut self) {
        // Lowering priority needs no privilege, so this only fails if the thread is gone.
        let _ = set_scheduler(self.previous_policy, self.previous_priority);
    }
}

/// Pins the calling thread to one CPU; restores the previous mask on drop.
#[derive(Debug)]
pub struct AffinityGuard {
    previous: libc::cpu_set_t,
}

fn empty_cpu_set() -> libc::cpu_set_t {
    // SAFETY: cpu_set_t is a plain array of integers; all-zero is the empty set.
    unsafe { std::mem::zeroed() }
}

fn get_affinity() -> crate::Result<libc::cpu_set_t> {
    let mut set = empty_cpu_set();
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: `set` is a valid, writable cpu_set_t and `size` is its size.
    let rc = unsafe { libc::sched_getaffinity(0, size, &mut set) };
    if rc != 0 {
        return Err(crate::SysError::last_os("sched_getaffinity"));
    }
    Ok(set)
}

fn set_affinity(set: &libc::cpu_set_t) -> crate::Result<()> {
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: `set` is a valid cpu_set_t and `size` is its size.
    let rc = unsafe { libc::sched_setaffinity(0, size, set) };
    if rc != 0 {
        return Err(crate::SysError::last_os("sched_setaffinity"));
    }
    Ok(())
}

/// CPUs in `set`, ascending.
fn cpus_in_set(set: &libc::cpu_set_t) -> Vec<usize> {
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: `cpu` < CPU_SETSIZE, so the bit index is inside the set.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, set) })
        .collect()
}

impl AffinityGuard {
    pub fn pin_current_thread(cpu: usize) -> crate::Result<Self> {
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(crate::SysError::Invalid(format!(
                "CPU {cpu} is beyond the largest CPU number supported ({})",
                libc::CPU_SETSIZE - 1
            )));
        }
        let previous = get_affinity()?;
        let mut set = empty_cpu_set();
        // SAFETY: `cpu` < CPU_SETSIZE was checked above, so the bit index is inside the set.
        unsafe { libc::CPU_SET(cpu, &mut set) };
        set_affinity(&set).map_err(|e| match e {
            // EINVAL here means the CPU is offline or outside the allowed cpuset.
            crate::SysError::Os { source, .. } if source.raw_os_error() == Some(libc::EINVAL) => {
                crate::SysError::Invalid(format!(
                    "cannot pin to CPU {cpu}: it is offline or not in this process's cpuset ({source})"
                ))
            }
            other => other,
        })?;
        Ok(Self { previous })
    }
}

/// Restricts the calling thread to `cpus` for good (threads and processes it starts
/// afterwards inherit the mask): how a process of loads is kept to `--load-cpus`.
pub fn restrict_current_thread(cpus: &[usize]) -> crate::Result<()> {
    let mut set = empty_cpu_set();
    for &cpu in cpus {
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(crate::SysError::Invalid(format!(
                "CPU {cpu} is beyond the largest CPU number supported ({})",
                libc::CPU_SETSIZE - 1
            )));
        }
        // SAFETY: `cpu` < CPU_SETSIZE was checked above, so the bit index is inside the set.
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    set_affinity(&set).map_err(|e| match e {
        crate::SysError::Os { source, .. } if source.raw_os_error() == Some(libc::EINVAL) => crate::SysError::Invalid(
            format!("cannot run on CPUs {cpus:?}: none is online and in this process's cpuset ({source})"),
        ),
        other => other,
    })
}

impl Drop for AffinityGuard {
    fn drop(&mut self) {
        // The previous mask was valid when read; failure (CPUs hot-unplugged since) leaves
        // the thread pinned, which is harmless for a thread that is finishing.
        let _ = set_affinity(&self.previous);
    }
}

/// CPUs currently online, from /sys/devices/system/cpu/online (sorted).
pub fn online_cpus() -> crate::Result<Vec<usize>> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online")
        .map_err(|e| crate::SysError::from_io("read /sys/devices/system/cpu/online", e))?;
    parse_cpu_list(&text)
}

/// CPUs the calling thread may run on now (its affinity, as `taskset` set it), ascending.
pub fn allowed_cpus() -> crate::Result<Vec<usize>> {
    Ok(cpus_in_set(&get_affinity()?))
}

/// The CPU the calling thread runs on now (`sched_getcpu`).
pub fn current_cpu() -> Option<usize> {
    // SAFETY: sched_getcpu takes no arguments; it returns the CPU number or -1.
    let cpu = unsafe { libc::sched_getcpu() };
    usize::try_from(cpu).ok()
}

/// Largest CPU number accepted in a list; guards against absurd ranges allocating gigabytes.
const MAX_CPU_IN_LIST: usize = 1 << 16;

/// Parses a kernel CPU list such as "0-3,8,10-11" (as in /sys and the kernel command line).
///
/// Whitespace and newlines are ignored; an empty list gives an empty vector. The result is
/// sorted and without duplicates.
pub fn parse_cpu_list(text: &str) -> crate::Result<Vec<usize>> {
    let invalid = |why: &str| crate::SysError::Invalid(format!("invalid CPU list {text:?}: {why}"));
    let parse_cpu = |s: &str| -> crate::Result<usize> {
        let cpu: usize = s.trim().parse().map_err(|_| invalid(&format!("{:?} is not a CPU number", s.trim())))?;
        if cpu > MAX_CPU_IN_LIST {
            return Err(invalid(&format!("CPU {cpu} is too large")));
        }
        Ok(cpu)
    };
    let mut cpus = Vec::new();
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Ok(cpus);
    }
    for item in trimmed.split(',') {
        let item = item.trim();
        if item.is_empty() {
            return Err(invalid("empty item"));
        }
        match item.split_once('-') {
            Some((a, b)) => {
                let (first, last) = (parse_cpu(a)?, parse_cpu(b)?);
                if first > last {
                    return Err(invalid(&format!("range {item} is reversed")));
                }
                cpus.extend(first..=last);
            }
            None => cpus.push(parse_cpu(item)?),
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn current_affinity() -> crate::Result<Vec<usize>> {
        allowed_cpus()
    }

    #[test]
    fn parses_cpu_lists() {
        assert_eq!(parse_cpu_list("0-3,8,10-11").unwrap(), vec![0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(parse_cpu_list("0-1\n").unwrap(), vec![0, 1]);
        assert_eq!(parse_cpu_list(" 2 , 0 - 1 \n").unwrap(), vec![0, 1, 2]);
        assert_eq!(parse_cpu_list("5").unwrap(), vec![5]);
        assert_eq!(parse_cpu_list("3,1,3").unwrap(), vec![1, 3]);
        assert!(parse_cpu_list("").unwrap().is_empty());
        assert!(parse_cpu_list("\n").unwrap().is_empty());
    }

    #[test]
    fn rejects_malformed_cpu_lists() {
        for bad in ["a", "1-", "-1", "3-1", "1,,2", "1,", "(null)", "0-99999999", "1:2"] {
            assert!(matches!(parse_cpu_list(bad), Err(crate::SysError::Invalid(_))), "{bad:?} accepted");
        }
    }

    #[test]
    fn online_cpus_on_this_machine() {
        let cpus = online_cpus().unwrap();
        assert!(!cpus.is_empty());
        assert!(cpus.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn priority_ranges() {
        assert_eq!(priority_range(Policy::Other), 0..=0);
        let fifo = priority_range(Policy::Fifo);
        assert!(*fifo.start() >= 1 && fifo.end() > fifo.start());
        assert_eq!(priority_range(Policy::Rr), fifo);
    }

    #[test]
    fn pin_and_restore_affinity() {
        // Runs on its own thread so the test harness thread's mask is never changed.
        std::thread::spawn(|| {
            let before = current_affinity().unwrap();
            let first = before[0];
            {
                let _guard = AffinityGuard::pin_current_thread(first).unwrap();
                assert_eq!(current_affinity().unwrap(), vec![first]);
                assert_eq!(current_cpu(), Some(first));
            }
            assert_eq!(current_affinity().unwrap(), before);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn pin_to_impossible_cpu_is_invalid() {
        assert!(matches!(AffinityGuard::pin_current_thread(100_000), Err(crate::SysError::Invalid(_))));
        // A CPU that is (almost certainly) offline on any test machine.
        let err = AffinityGuard::pin_current_thread(libc::CPU_SETSIZE as usize - 1).unwrap_err();
        assert!(!err.is_permission_denied());
    }

    fn current_policy_and_priority() -> (libc::c_int, libc::c_int) {
        // SAFETY: pid 0 is the calling thread; `param` is valid and writable.
        unsafe {
            let mut param = libc::sched_param { sched_priority: 0 };
            assert_eq!(libc::sched_getparam(0, &mut param), 0);
            (libc::sched_getscheduler(0), param.sched_priority)
        }
    }

    #[test]
    fn fifo_and_back() {
        std::thread::spawn(|| {
            let before = current_policy_and_priority();
            match SchedulingGuard::set_current_thread(Policy::Fifo, 10) {
                Ok(guard) => {
                    assert_eq!(current_policy_and_priority(), (libc::SCHED_FIFO, 10));
                    drop(guard);
                    assert_eq!(current_policy_and_priority(), before);
                }
                Err(e) => assert!(e.is_permission_denied(), "{e}"),
            }
        })
        .join()
        .unwrap();
    }

    #[test]
    fn invalid_priority_is_rejected() {
        assert!(matches!(SchedulingGuard::set_current_thread(Policy::Fifo, 0), Err(crate::SysError::Invalid(_))));
        assert!(matches!(SchedulingGuard::set_current_thread(Policy::Other, 5), Err(crate::SysError::Invalid(_))));
    }
}
