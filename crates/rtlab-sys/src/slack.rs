//! Timer slack of the calling thread (`prctl(PR_SET_TIMERSLACK)`).

/// Sets the calling thread's timer slack; restores the previous value on drop.
///
/// Timer slack is per thread, so the guard must be dropped on the thread that created it.
#[derive(Debug)]
pub struct TimerSlackGuard {
    previous_ns: u64,
}

/// prctl is variadic and the kernel reads unsigned longs: pass full-width zeros.
const ZERO: libc::c_ulong = 0;

fn set_slack(slack_ns: u64) -> crate::Result<()> {
    let value = libc::c_ulong::try_from(slack_ns)
        .map_err(|_| crate::SysError::Invalid(format!("timer slack {slack_ns} ns too large")))?;
    // SAFETY: PR_SET_TIMERSLACK takes the value by integer; no pointers are passed.
    let rc = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, value, ZERO, ZERO, ZERO) };
    if rc != 0 {
        return Err(crate::SysError::last_os("prctl(PR_SET_TIMERSLACK)"));
    }
    Ok(())
}

impl TimerSlackGuard {
    /// Note: the kernel treats 0 as "reset to the default slack", not "no slack"; use 1.
    pub fn set_current_thread(slack_ns: u64) -> crate::Result<Self> {
        let previous_ns = current_timer_slack_ns();
        set_slack(slack_ns)?;
        Ok(Self { previous_ns })
    }
}

impl Drop for TimerSlackGuard {
    fn drop(&mut self) {
        // Nothing sensible to do on failure in Drop; the thread keeps the new slack.
        let _ = set_slack(self.previous_ns);
    }
}

/// The calling thread's current timer slack in ns (`PR_GET_TIMERSLACK`).
pub fn current_timer_slack_ns() -> u64 {
    // SAFETY: PR_GET_TIMERSLACK takes no pointer arguments and returns the slack.
    let rc = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, ZERO, ZERO, ZERO, ZERO) };
    // prctl returns an int; a negative value can only be an error, report it as 0.
    u64::try_from(rc).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guard_sets_and_restores() {
        let before = current_timer_slack_ns();
        assert!(before > 0);
        {
            let _guard = TimerSlackGuard::set_current_thread(1).unwrap();
            assert_eq!(current_timer_slack_ns(), 1);
        }
        assert_eq!(current_timer_slack_ns(), before);
    }

    #[test]
    fn nested_guards_restore_in_order() {
        let before = current_timer_slack_ns();
        let outer = TimerSlackGuard::set_current_thread(1000).unwrap();
        let inner = TimerSlackGuard::set_current_thread(1).unwrap();
        assert_eq!(current_timer_slack_ns(), 1);
        drop(inner);
        assert_eq!(current_timer_slack_ns(), 1000);
        drop(outer);
        assert_eq!(current_timer_slack_ns(), before);
    }
}
