//! What the kernel's tracepoints say, decoded: the vocabulary of the interrupt/scheduling
//! split. One [`KernelEvent`] per tracepoint hit, with the tracing clock set to `mono` so
//! that `ts_ns` is CLOCK_MONOTONIC like the probes' own timestamps.

use std::fmt;
use std::ops::Deref;

use serde::{Deserialize, Serialize};

/// A task's name as the kernel keeps it (`TASK_COMM_LEN`: 15 bytes and a NUL), held inline:
/// a long split holds tens of thousands of events, and two heap strings per
/// `sched_switch` were most of their memory.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Comm {
    bytes: [u8; Comm::MAX_LEN],
    len: u8,
}

impl Comm {
    /// The longest name the kernel keeps.
    pub const MAX_LEN: usize = 15;

    /// The name in `bytes` up to the first NUL, cut to [`Comm::MAX_LEN`] bytes as the
    /// kernel does, and to its longest valid UTF-8 prefix.
    pub fn from_bytes(bytes: &[u8]) -> Comm {
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len()).min(Comm::MAX_LEN);
        let name = bytes.get(..end).unwrap_or_default();
        let valid = match std::str::from_utf8(name) {
            Ok(s) => s.len(),
            Err(e) => e.valid_up_to(),
        };
        let mut comm = Comm { bytes: [0; Comm::MAX_LEN], len: valid as u8 };
        comm.bytes[..valid].copy_from_slice(&name[..valid]);
        comm
    }

    pub fn as_str(&self) -> &str {
        // Valid by construction; the fallback is never taken.
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or_default()
    }
}

impl From<&str> for Comm {
    fn from(name: &str) -> Comm {
        Comm::from_bytes(name.as_bytes())
    }
}

impl Deref for Comm {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq<str> for Comm {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Comm {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl fmt::Debug for Comm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Comm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One tracepoint hit on one CPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelEvent {
    /// CLOCK_MONOTONIC ns (trace clock `mono`).
    pub ts_ns: u64,
    pub cpu: u32,
    /// The task that was current when the event fired (`common_pid`; 0 = idle). In IRQ
    /// context this is the interrupted task.
    pub pid: i32,
    pub kind: EventKind,
}

/// The x86 interrupt vectors traced through `irq_vectors:*_entry/_exit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Vector {
    LocalTimer,
    Reschedule,
    CallFunction,
    CallFunctionSingle,
    IrqWork,
    X86PlatformIpi,
    ThermalApic,
    ErrorApic,
    SpuriousApic,
}

impl Vector {
    /// Every vector, in the order of [`Vector::tracepoint`].
    pub const ALL: [Vector; 9] = [
        Vector::LocalTimer,
        Vector::Reschedule,
        Vector::CallFunction,
        Vector::CallFunctionSingle,
        Vector::IrqWork,
        Vector::X86PlatformIpi,
        Vector::ThermalApic,
        Vector::ErrorApic,
        Vector::SpuriousApic,
    ];

    /// The tracepoint stem: `irq_vectors:<stem>_entry` / `_exit`.
    pub fn tracepoint(self) -> &'static str {
        match self {
            Vector::LocalTimer => "local_timer",
            Vector::Reschedule => "reschedule",
            Vector::CallFunction => "call_function",
            Vector::CallFunctionSingle => "call_function_single",
            Vector::IrqWork => "irq_work",
            Vector::X86PlatformIpi => "x86_platform_ipi",
            Vector::ThermalApic => "thermal_apic",
            Vector::ErrorApic => "error_apic",
            Vector::SpuriousApic => "spurious_apic",
        }
    }
}

/// Softirq vector names, indexed by `vec` (include/linux/interrupt.h).
pub const SOFTIRQ_NAMES: [&str; 10] =
    ["HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU"];

/// The events the split uses, with the fields it needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventKind {
    /// `timer:hrtimer_start`: a task armed `timer` to expire at `expires_ns` (absolute, in
    /// the timer's clock base: CLOCK_MONOTONIC for the probes' sleeps).
    HrtimerStart { timer: u64, function: u64, expires_ns: i64 },
    /// `timer:hrtimer_expire_entry`: the timer's callback starts (hard IRQ context for a
    /// sleeping task's timer). `now_ns` is the tracepoint's own `now`: the clock read of the
    /// timer's base (CLOCK_MONOTONIC for the probes' sleeps) with which the kernel found the
    /// timer expired, so `now_ns >= softexpires` by construction, and it is a little before
    /// `ts_ns` (docs/split.md, "One clock").
    HrtimerExpireEntry { timer: u64, function: u64, now_ns: i64 },
    /// `timer:hrtimer_expire_exit`.
    HrtimerExpireExit { timer: u64 },
    /// `irq_vectors:<vector>_entry`.
    VectorEntry { vector: Vector },
    /// `irq_vectors:<vector>_exit`.
    VectorExit { vector: Vector },
    /// `irq:irq_handler_entry`: a device IRQ handler starts.
    IrqEntry { irq: i32, name: String },
    /// `irq:irq_handler_exit`.
    IrqExit { irq: i32 },
    /// `irq:softirq_entry`; `vec` indexes [`SOFTIRQ_NAMES`].
    SoftirqEntry { vec: u32 },
    /// `irq:softirq_exit`.
    SoftirqExit { vec: u32 },
    /// `sched:sched_waking`: `pid` is being woken (fires on the waker's CPU).
    SchedWaking { pid: i32, comm: Comm, prio: i32, target_cpu: i32 },
    /// `sched:sched_wakeup`: `pid` is runnable on `target_cpu`.
    SchedWakeup { pid: i32, comm: Comm, prio: i32, target_cpu: i32 },
    /// `sched:sched_switch` on `cpu`. `prio` is the kernel's: 0..99 real-time (lower is
    /// higher priority: SCHED_FIFO p has prio 99 - p), 100..139 SCHED_OTHER, 120 = nice 0.
    SchedSwitch {
        prev_comm: Comm,
        prev_pid: i32,
        prev_prio: i32,
        prev_state: i64,
        next_comm: Comm,
        next_pid: i32,
        next_prio: i32,
    },
    /// `nmi:nmi_handler`: an NMI handler that ran for `delta_ns`, ending at the event's time.
    Nmi { delta_ns: i64 },
    /// The ring buffer dropped events on this CPU just before this point (a full buffer):
    /// what happened between the previous event and this one is not known. `events` is 0
    /// when the kernel did not store the count; the marker's `ts_ns` is the timestamp of
    /// the page that reported the loss and its `pid` is -1 (no task).
    Lost { events: u64 },
    /// `ftrace:timerlat` (the timerlat tracer): activation `seqnum` of this CPU's timerlat
    /// timer seen from `context` ([`TIMERLAT_IRQ`], [`TIMERLAT_THREAD`], [`TIMERLAT_USER`]),
    /// `timer_latency_ns` after the timer's expiry.
    Timerlat { seqnum: u32, context: i32, timer_latency_ns: i64 },
}

/// `ftrace:timerlat` contexts (kernel/trace/trace_osnoise.c): the timer's interrupt handler,
/// the kernel's timerlat thread, a user-space thread returning from `timerlat_fd` (6.8+).
pub const TIMERLAT_IRQ: i32 = 0;
pub const TIMERLAT_THREAD: i32 = 1;
pub const TIMERLAT_USER: i32 = 2;

#[cfg(test)]
mod tests {
    use super::{Comm, KernelEvent};

    #[test]
    fn an_event_is_80_bytes_with_nothing_on_the_heap_for_a_switch() {
        // docs/tracing.md bounds the split's window in these.
        assert_eq!(std::mem::size_of::<KernelEvent>(), 80);
    }

    #[test]
    fn a_comm_stops_at_the_nul_and_at_the_kernel_s_length() {
        assert_eq!(Comm::from_bytes(b"rtlab-timer/0\0\0\0"), "rtlab-timer/0");
        assert_eq!(Comm::from_bytes(b"a-very-long-thread-name"), "a-very-long-thr");
        assert_eq!(Comm::from("").as_str(), "");
        // "é" is two bytes: cut at byte 15 it would be half a character, so it goes.
        assert_eq!(Comm::from("abcdefghijklmné"), "abcdefghijklmn");
        assert_eq!(Comm::from_bytes(b"ok\xffbad"), "ok");
        assert_eq!(format!("{:?} {}", Comm::from("x"), Comm::from("y")), "\"x\" y");
    }
}
