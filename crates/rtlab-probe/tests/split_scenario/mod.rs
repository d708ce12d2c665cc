//! Synthetic kernel event streams for the split tests: a scenario is written as a short
//! list of events, one builder call each, in time order.

#![allow(dead_code)] // each test file uses part of the builder

use rtlab_sys::tracefs::event::{EventKind, KernelEvent, Vector};

/// The measuring thread of the scenarios.
pub const TID: i32 = 500;
pub const COMM: &str = "rtlab-timer-0";
/// SCHED_FIFO 95 on the kernel's scale.
pub const PRIO: i32 = 4;
/// The thread's hrtimer (on its stack).
pub const TIMER: u64 = 0xffff_c900_0001_0e28;
/// The hrtimer sleeper's callback (hrtimer_wakeup).
pub const WAKEUP_FN: u64 = 0xffff_ffff_8110_0000;

/// A task as `sched_switch` names it.
#[derive(Debug, Clone, Copy)]
pub struct Task {
    pub pid: i32,
    pub comm: &'static str,
    pub prio: i32,
}

pub const IDLE: Task = Task { pid: 0, comm: "swapper/0", prio: 120 };
pub const THREAD: Task = Task { pid: TID, comm: COMM, prio: PRIO };
pub const STRESS: Task = Task { pid: 812, comm: "stress-ng-cpu", prio: 120 };
/// A real-time thread above the measuring thread (FIFO 99).
pub const MIGRATION: Task = Task { pid: 15, comm: "migration/0", prio: 0 };
/// A real-time thread below it (FIFO 50).
pub const LOW_RT: Task = Task { pid: 900, comm: "rt-low", prio: 49 };
pub const KSOFTIRQD: Task = Task { pid: 14, comm: "ksoftirqd/0", prio: 120 };

/// Events of one CPU (or several, with [`Scenario::cpu`]) in the order written.
#[derive(Debug, Clone, Default)]
pub struct Scenario {
    pub events: Vec<KernelEvent>,
    cpu: u32,
}

impl Scenario {
    pub fn on(cpu: u32) -> Scenario {
        Scenario { events: Vec::new(), cpu }
    }

    /// Further events go to this CPU.
    pub fn cpu(&mut self, cpu: u32) -> &mut Self {
        self.cpu = cpu;
        self
    }

    pub fn event(&mut self, ts_ns: u64, pid: i32, kind: EventKind) -> &mut Self {
        self.events.push(KernelEvent { ts_ns, cpu: self.cpu, pid, kind });
        self
    }

    /// `task` arms `timer` for `expires_ns`.
    pub fn arm(&mut self, ts: u64, pid: i32, timer: u64, expires_ns: i64) -> &mut Self {
        self.event(ts, pid, EventKind::HrtimerStart { timer, function: WAKEUP_FN, expires_ns })
    }

    pub fn switch(&mut self, ts: u64, prev: Task, next: Task) -> &mut Self {
        let kind = EventKind::SchedSwitch {
            prev_comm: prev.comm.into(),
            prev_pid: prev.pid,
            prev_prio: prev.prio,
            prev_state: if prev.pid == TID { 1 } else { 0 },
            next_comm: next.comm.into(),
            next_pid: next.pid,
            next_prio: next.prio,
        };
        self.event(ts, prev.pid, kind)
    }

    pub fn vector_in(&mut self, ts: u64, current: i32, vector: Vector) -> &mut Self {
        self.event(ts, current, EventKind::VectorEntry { vector })
    }

    pub fn vector_out(&mut self, ts: u64, current: i32, vector: Vector) -> &mut Self {
        self.event(ts, current, EventKind::VectorExit { vector })
    }

    /// `timer`'s callback starts at `ts`, the kernel having read the clock at `ts` too.
    pub fn expire_in(&mut self, ts: u64, current: i32, timer: u64) -> &mut Self {
        self.expire_in_now(ts, ts, current, timer)
    }

    /// `timer`'s callback starts at `ts`; the kernel found it expired with the clock read
    /// `now` (the tracepoint's own `now`, at or before `ts`).
    pub fn expire_in_now(&mut self, ts: u64, now: u64, current: i32, timer: u64) -> &mut Self {
        self.event(ts, current, EventKind::HrtimerExpireEntry { timer, function: WAKEUP_FN, now_ns: now as i64 })
    }

    pub fn expire_out(&mut self, ts: u64, current: i32, timer: u64) -> &mut Self {
        self.event(ts, current, EventKind::HrtimerExpireExit { timer })
    }

    pub fn waking(&mut self, ts: u64, current: i32, woken: Task) -> &mut Self {
        let kind = EventKind::SchedWaking {
            pid: woken.pid,
            comm: woken.comm.into(),
            prio: woken.prio,
            target_cpu: self.cpu as i32,
        };
        self.event(ts, current, kind)
    }

    pub fn wakeup(&mut self, ts: u64, current: i32, woken: Task) -> &mut Self {
        let kind = EventKind::SchedWakeup {
            pid: woken.pid,
            comm: woken.comm.into(),
            prio: woken.prio,
            target_cpu: self.cpu as i32,
        };
        self.event(ts, current, kind)
    }

    pub fn irq_in(&mut self, ts: u64, current: i32, irq: i32, name: &str) -> &mut Self {
        self.event(ts, current, EventKind::IrqEntry { irq, name: name.to_string() })
    }

    pub fn irq_out(&mut self, ts: u64, current: i32, irq: i32) -> &mut Self {
        self.event(ts, current, EventKind::IrqExit { irq })
    }

    pub fn softirq_in(&mut self, ts: u64, current: i32, vec: u32) -> &mut Self {
        self.event(ts, current, EventKind::SoftirqEntry { vec })
    }

    pub fn softirq_out(&mut self, ts: u64, current: i32, vec: u32) -> &mut Self {
        self.event(ts, current, EventKind::SoftirqExit { vec })
    }

    pub fn lost(&mut self, ts: u64) -> &mut Self {
        self.event(ts, 0, EventKind::Lost { events: 64 })
    }

    /// The whole timer interrupt that wakes the thread, with `current` interrupted:
    /// `local_timer` entry at `at`, where the kernel also reads the clock (`now` = `at`),
    /// expiry of the thread's timer, wake-up, exit at `at + 60`.
    pub fn timer_irq(&mut self, at: u64, current: i32) -> &mut Self {
        self.vector_in(at, current, Vector::LocalTimer)
            .expire_in_now(at + 10, at, current, TIMER)
            .waking(at + 20, current, THREAD)
            .wakeup(at + 30, current, THREAD)
            .expire_out(at + 40, current, TIMER)
            .vector_out(at + 60, current, Vector::LocalTimer)
    }

    /// The events sorted by time (stable), as a capture merges several CPUs.
    pub fn merged(&self) -> Vec<KernelEvent> {
        let mut events = self.events.clone();
        events.sort_by_key(|event| event.ts_ns);
        events
    }
}
