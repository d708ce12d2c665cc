//! What the kernel's tracepoints say, decoded: the vocabulary of the interrupt/scheduling
//! split. One [`KernelEvent`] per tracepoint hit, with the tracing clock set to `mono` so
//! that `ts_ns` is CLOCK_MONOTONIC like the probes' own timestamps.

use serde::{Deserialize, Serialize};

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
    /// sleeping task's timer).
    HrtimerExpireEntry { timer: u64, function: u64 },
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
    SchedWaking { pid: i32, comm: String, prio: i32, target_cpu: i32 },
    /// `sched:sched_wakeup`: `pid` is runnable on `target_cpu`.
    SchedWakeup { pid: i32, comm: String, prio: i32, target_cpu: i32 },
    /// `sched:sched_switch` on `cpu`. `prio` is the kernel's: 0..99 real-time (lower is
    /// higher priority: SCHED_FIFO p has prio 99 - p), 100..139 SCHED_OTHER, 120 = nice 0.
    SchedSwitch {
        prev_comm: String,
        prev_pid: i32,
        prev_prio: i32,
        prev_state: i64,
        next_comm: String,
        next_pid: i32,
        next_prio: i32,
    },
    /// The ring buffer dropped events on this CPU just before this point (a full buffer):
    /// what happened between the previous event and this one is not known. `events` is 0
    /// when the kernel did not store the count; the marker's `ts_ns` is the timestamp of
    /// the page that reported the loss and its `pid` is -1 (no task).
    Lost { events: u64 },
}
