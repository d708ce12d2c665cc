//! The ipc probes (`ipc:eventfd`, `ipc:pipe`, `ipc:futex`, `ipc:mqueue`, `ipc:signal`), the
//! family of rt-tests' pmqtest, ptsematest and sigwaittest: a lower-priority trigger
//! timestamps and signals through the mechanism; the real-time receiver records its
//! wake-up latency as `ipc:<mechanism>.latency`. One loop; one small piece per mechanism.
//!
//! The trigger wakes at absolute periodic times, reads CLOCK_MONOTONIC and sends stimulus
//! `seq` with that time: inside the message for pipe and mqueue, through a `Mailbox`
//! written before the wake-up for eventfd, futex and signal. The receiver blocks, reads
//! the clock when the call returns and records wake time minus send time of the oldest
//! stimulus it has not served. It takes the stimuli by sequence number: the others served
//! by the same wake-up (coalesced wake-ups) and those never received (a full queue) are
//! overruns, so `count + overruns = cycles` = stimuli of the measured window.
//!
//! The same pair of loops serves the switch probe ([`crate::switch`]) with both threads
//! on one CPU and a futex or a POSIX semaphore.

use crate::live::LiveStats;
use crate::raw::{RawDrain, RawWriter, FLAG_OVERRUN};
use crate::recorder::{raw_target, MetricRecorder};
use crate::workers::{run_workers, Ending, Worker};
use crate::{rate_tag, Detail, Probe, ProbeError, ProbeOutput, Sampling, Stimulus, ThreadOutput, ThreadSetup};
use rtlab_sys::clock::{monotonic_ns, sleep_relative_ns, sleep_until_monotonic_ns, SleepOutcome};
use rtlab_sys::ipc::{
    current_thread_id, EventFd, Futex, FutexWait, Message, MessageQueue, Pipe, RtSignal, Semaphore, SendOutcome,
    SignalMaskGuard, ThreadId, WaitOutcome, MESSAGE_LEN,
};
use std::path::PathBuf;
use std::sync::atomic::{fence, AtomicBool, AtomicI32, AtomicU64, Ordering::*};
use std::sync::Arc;

/// rt-tests' default interval of 1 ms.
pub const DEFAULT_RATE_HZ: f64 = 1_000.0;

/// Messages the POSIX queue holds: within the default msg_max (10), so it opens without
/// privileges; a receiver 8 periods behind loses stimuli (counted as overruns).
const QUEUE_CAPACITY: usize = 8;

/// The real-time signal of `ipc:signal`: SIGRTMIN + this.
const SIGNAL_OFFSET: i32 = 5;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mechanism {
    Eventfd,
    Pipe,
    Futex,
    Mqueue,
    Signal,
}

impl Mechanism {
    pub const ALL: [Mechanism; 5] =
        [Mechanism::Eventfd, Mechanism::Pipe, Mechanism::Futex, Mechanism::Mqueue, Mechanism::Signal];

    /// "eventfd", as in the probe name `ipc:eventfd`.
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Eventfd => "eventfd",
            Mechanism::Pipe => "pipe",
            Mechanism::Futex => "futex",
            Mechanism::Mqueue => "mqueue",
            Mechanism::Signal => "signal",
        }
    }

    /// The probe name, `ipc:eventfd`.
    pub fn probe_name(self) -> &'static str {
        match self {
            Mechanism::Eventfd => "ipc:eventfd",
            Mechanism::Pipe => "ipc:pipe",
            Mechanism::Futex => "ipc:futex",
            Mechanism::Mqueue => "ipc:mqueue",
            Mechanism::Signal => "ipc:signal",
        }
    }

    pub fn from_name(name: &str) -> Option<Mechanism> {
        Mechanism::ALL.into_iter().find(|m| m.name() == name)
    }

    /// What the host must offer, for the error when it does not.
    fn facility(self) -> &'static str {
        match self {
            Mechanism::Eventfd => "an eventfd",
            Mechanism::Pipe => "a pipe",
            Mechanism::Futex => "a futex",
            Mechanism::Mqueue => "a POSIX message queue",
            Mechanism::Signal => "a real-time signal",
        }
    }
}

#[derive(Debug, Clone)]
pub struct IpcConfig {
    pub mechanism: Mechanism,
    pub stimulus: Stimulus,
    pub sampling: Sampling,
    /// Prefix of the metric names: the probe name (`ipc:futex`), or "sweep".
    pub name: &'static str,
}

/// The send times of the last stimuli, for the mechanisms that carry no data (eventfd,
/// futex, signal, semaphore), written by the trigger before it signals. A receiver woken
/// late, after several stimuli, takes the oldest it has not served: its latency is the
/// truth about that stimulus (a wake-up a whole period late is recorded as such), and the
/// stimuli served by the same wake-up are overruns.
#[derive(Debug)]
pub(crate) struct Mailbox {
    /// Stimuli published: the last one is `published - 1`.
    published: AtomicU64,
    /// Send time of stimulus `seq` at `seq % MAILBOX_SLOTS`.
    sent_ns: [AtomicU64; MAILBOX_SLOTS],
}

/// Send times kept: a receiver more stimuli behind loses the oldest ones' times (they
/// are still counted, as overruns).
const MAILBOX_SLOTS: usize = 64;

/// Reads of a mailbox overtaken by the trigger before giving up (needs 64 stimuli sent
/// during one read).
const MAILBOX_TRIES: u32 = 4;

impl Default for Mailbox {
    fn default() -> Self {
        Self { published: AtomicU64::new(0), sent_ns: std::array::from_fn(|_| AtomicU64::new(0)) }
    }
}

impl Mailbox {
    fn slot(&self, seq: u64) -> &AtomicU64 {
        &self.sent_ns[(seq % MAILBOX_SLOTS as u64) as usize]
    }

    /// One writer only (the trigger), stimuli in order.
    fn publish(&self, sent: Sent) {
        // A reader that sees this overwrite must also see the count that allowed it
        // (the sequence-lock pattern: fence, then the data).
        fence(Release);
        self.slot(sent.seq).store(sent.sent_ns, Relaxed);
        self.published.store(sent.seq + 1, Release);
    }

    /// The oldest stimulus from `next` on still kept, and the last one published; None
    /// when nothing from `next` on was published (a wake-up for a stimulus already served).
    fn take(&self, next: u64) -> Option<(Sent, u64)> {
        let slots = MAILBOX_SLOTS as u64;
        for _ in 0..MAILBOX_TRIES {
            let published = self.published.load(Acquire);
            if published <= next {
                return None;
            }
            // Not the slot the trigger writes next (that of `published`).
            let oldest = next.max((published + 1).saturating_sub(slots));
            let sent_ns = self.slot(oldest).load(Relaxed);
            fence(Acquire);
            // The slot is rewritten only once `published` has reached oldest + slots.
            if self.published.load(Relaxed) < oldest + slots {
                return Some((Sent { seq: oldest, sent_ns }, published - 1));
            }
        }
        None
    }
}

/// One stimulus: its sequence number and the trigger's CLOCK_MONOTONIC before sending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sent {
    pub seq: u64,
    pub sent_ns: u64,
}

impl Sent {
    fn encode(self) -> Message {
        let mut m = [0u8; MESSAGE_LEN];
        m[..8].copy_from_slice(&self.seq.to_le_bytes());
        m[8..16].copy_from_slice(&self.sent_ns.to_le_bytes());
        m
    }

    fn decode(m: &Message) -> Sent {
        let word = |i: usize| u64::from_le_bytes(m[i..i + 8].try_into().expect("8 bytes"));
        Sent { seq: word(0), sent_ns: word(8) }
    }
}

/// What a receiver's wait returned with.
enum Wake {
    /// The stimulus came in the message.
    Message(Sent),
    /// A wake-up without data: the stimulus is in the mailbox.
    Doorbell,
    /// EINTR: check the stop flag.
    Interrupted,
}

/// The small per-mechanism piece: how the trigger signals and how the receiver waits.
pub(crate) enum Channel {
    Eventfd(EventFd),
    Pipe(Pipe),
    /// The word counts the stimuli published (truncated to 32 bits): the receiver waits
    /// while it equals the count it has served.
    Futex(Futex),
    Mqueue(MessageQueue),
    /// The receiver publishes its thread id before it is ready.
    Signal {
        signal: RtSignal,
        receiver: AtomicI32,
    },
    Semaphore(Semaphore),
}

/// Whatever the receiver thread holds while it waits (the signal's blocked mask).
pub(crate) struct ReceiverGuard {
    _mask: Option<SignalMaskGuard>,
}

impl Channel {
    fn open(mechanism: Mechanism) -> rtlab_sys::Result<Channel> {
        Ok(match mechanism {
            Mechanism::Eventfd => Channel::Eventfd(EventFd::new()?),
            Mechanism::Pipe => Channel::Pipe(Pipe::new()?),
            Mechanism::Futex => Channel::Futex(Futex::new(0)),
            Mechanism::Mqueue => Channel::Mqueue(MessageQueue::new(QUEUE_CAPACITY)?),
            Mechanism::Signal => Channel::Signal { signal: RtSignal::new(SIGNAL_OFFSET)?, receiver: AtomicI32::new(0) },
        })
    }

    pub(crate) fn futex() -> Channel {
        Channel::Futex(Futex::new(0))
    }

    pub(crate) fn semaphore() -> rtlab_sys::Result<Channel> {
        Ok(Channel::Semaphore(Semaphore::new(0)?))
    }

    /// Trigger side: one stimulus. Ok(false): not sent (a full pipe or queue).
    fn send(&self, mailbox: &Mailbox, sent: Sent) -> rtlab_sys::Result<bool> {
        let outcome = match self {
            Channel::Pipe(p) => p.send(&sent.encode())?,
            Channel::Mqueue(q) => q.send(&sent.encode())?,
            Channel::Eventfd(e) => {
                mailbox.publish(sent);
                e.signal()?;
                SendOutcome::Sent
            }
            Channel::Futex(f) => {
                mailbox.publish(sent);
                // The word counts the stimuli published.
                f.word().store(sent.seq.wrapping_add(1) as u32, Release);
                f.wake(1)?;
                SendOutcome::Sent
            }
            Channel::Signal { signal, receiver } => {
                mailbox.publish(sent);
                signal.send(ThreadId(receiver.load(Acquire)))?
            }
            Channel::Semaphore(s) => {
                mailbox.publish(sent);
                s.post()?;
                SendOutcome::Sent
            }
        };
        Ok(outcome == SendOutcome::Sent)
    }

    /// Receiver side, on the receiver thread before it says it is ready.
    fn prepare_receiver(&self) -> rtlab_sys::Result<ReceiverGuard> {
        let mask = match self {
            Channel::Signal { signal, receiver } => {
                let mask = signal.block_current_thread()?;
                receiver.store(current_thread_id().0, Release);
                Some(mask)
            }
            _ => None,
        };
        Ok(ReceiverGuard { _mask: mask })
    }

    /// Blocks until the trigger signals (or EINTR). `next`: the first stimulus not served.
    fn wait(&self, next: u64) -> rtlab_sys::Result<Wake> {
        let message = |w: WaitOutcome<Message>| match w {
            WaitOutcome::Ready(m) => Wake::Message(Sent::decode(&m)),
            WaitOutcome::Interrupted => Wake::Interrupted,
        };
        Ok(match self {
            Channel::Pipe(p) => message(p.receive()?),
            Channel::Mqueue(q) => message(q.receive()?),
            Channel::Eventfd(e) => doorbell(e.wait()?),
            Channel::Signal { signal, .. } => doorbell(signal.wait()?),
            Channel::Semaphore(s) => doorbell(s.wait()?),
            // Sleeps while no stimulus beyond those served was published.
            Channel::Futex(f) => match f.wait(next as u32)? {
                FutexWait::Woken | FutexWait::ValueChanged => Wake::Doorbell,
                FutexWait::Interrupted => Wake::Interrupted,
            },
        })
    }
}

/// A wait that returned without data: the stimulus is in the mailbox.
fn doorbell<T>(w: WaitOutcome<T>) -> Wake {
    match w {
        WaitOutcome::Ready(_) => Wake::Doorbell,
        WaitOutcome::Interrupted => Wake::Interrupted,
    }
}

/// Counts one wake-up that records stimulus `sample` and serves every stimulus from
/// `next` to `through` (next <= sample <= through): the others produced no sample and are
/// overruns, as far as they lie inside the window of `stimuli`. Returns the overruns added.
fn admit(next: u64, through: u64, stimuli: u64, counts: &mut Counts) -> u64 {
    counts.cycles += 1;
    let skipped = (through - next).min(stimuli.saturating_sub(counts.cycles));
    counts.overruns += skipped;
    counts.cycles += skipped;
    skipped
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Counts {
    cycles: u64,
    overruns: u64,
}

/// What trigger and receiver share besides the channel.
#[derive(Default)]
struct Rendezvous {
    mailbox: Mailbox,
    /// Set by the receiver once it is set up and about to wait.
    receiver_ready: AtomicBool,
    /// The first stimulus' due time, set by the trigger before it sends it.
    start_ns: AtomicU64,
}

/// A trigger/receiver pair with everything allocated: the ipc probe has one, the switch
/// probe one per variant.
pub(crate) struct PreparedPair {
    pub channel: Channel,
    pub recorder: MetricRecorder,
    pub raw_drains: Vec<RawDrain>,
    /// Stimuli of the measured window.
    pub stimuli: u64,
    pub period_ns: u64,
    pub receiver_cpu: usize,
    pub trigger_cpu: usize,
    pub receiver_setup: ThreadSetup,
    pub trigger_setup: ThreadSetup,
    pub live: Arc<LiveStats>,
    /// OS thread names (the kernel keeps 15 bytes).
    pub receiver_thread: String,
    pub trigger_thread: String,
}

/// What one pair measured: the receiver's thread output (thread name and details left to
/// the caller) and the samples written per raw file.
pub(crate) fn run_pair(
    pair: PreparedPair,
    stop: &Arc<AtomicBool>,
) -> Result<(ThreadOutput, Vec<(PathBuf, u64)>), ProbeError> {
    let PreparedPair {
        channel,
        recorder,
        raw_drains,
        stimuli,
        period_ns,
        receiver_cpu,
        trigger_cpu,
        receiver_setup,
        trigger_setup,
        live,
        receiver_thread,
        trigger_thread,
    } = pair;
    let writer = RawWriter::for_drains(raw_drains)?;
    let channel = Arc::new(channel);
    let shared = Arc::new(Rendezvous::default());
    let group_stop = Arc::new(AtomicBool::new(false));
    let receiver = {
        let (channel, shared, group_stop) = (channel.clone(), shared.clone(), group_stop.clone());
        Worker {
            cpu: receiver_cpu,
            name: receiver_thread,
            body: Box::new(move || {
                let _setup = receiver_setup.apply(receiver_cpu)?;
                let receiver = Receiver { recorder, live, stimuli, period_ns, cpu: receiver_cpu };
                receiver.run(&channel, &shared, &group_stop).map(Some)
            }),
        }
    };
    let trigger = {
        let group_stop = group_stop.clone();
        Worker {
            cpu: trigger_cpu,
            name: trigger_thread,
            body: Box::new(move || {
                let _setup = trigger_setup.apply(trigger_cpu)?;
                run_trigger(&channel, &shared, period_ns, &group_stop)
                    .map_err(|source| ProbeError::Sampling { cpu: trigger_cpu, source })?;
                Ok(None)
            }),
        }
    };
    let (mut threads, raw_written) =
        run_workers(vec![receiver, trigger], stop, Ending::Coupled { group_stop }, writer, true)?;
    let thread = threads.pop().ok_or(ProbeError::ThreadPanicked { cpu: receiver_cpu })?;
    Ok((thread, raw_written))
}

/// The trigger: sends stimulus `seq` at start + seq periods, every one of them (a late
/// trigger catches up rather than skipping, so each stimulus sent is one of the window),
/// until the receiver has its stimuli and `group_stop` is set.
fn run_trigger(
    channel: &Channel,
    shared: &Rendezvous,
    period_ns: u64,
    group_stop: &AtomicBool,
) -> rtlab_sys::Result<()> {
    while !shared.receiver_ready.load(Acquire) {
        if group_stop.load(Relaxed) {
            return Ok(());
        }
        sleep_relative_ns(200_000)?;
    }
    let start = monotonic_ns() + period_ns.max(1_000_000);
    shared.start_ns.store(start, Release);
    let mut seq = 0u64;
    // The real-time loop: the sleep, the clock read and the mechanism's one call.
    loop {
        if group_stop.load(Relaxed) {
            return Ok(());
        }
        if sleep_until_monotonic_ns(start + seq * period_ns)? == SleepOutcome::Interrupted {
            continue;
        }
        let sent = Sent { seq, sent_ns: monotonic_ns() };
        match channel.send(&shared.mailbox, sent) {
            Ok(_) => {}
            // A receiver that has ended may leave a signal nowhere to go.
            Err(_) if group_stop.load(Relaxed) => return Ok(()),
            Err(e) => return Err(e),
        }
        seq += 1;
    }
}

struct Receiver {
    recorder: MetricRecorder,
    live: Arc<LiveStats>,
    stimuli: u64,
    period_ns: u64,
    cpu: usize,
}

impl Receiver {
    fn run(
        mut self,
        channel: &Channel,
        shared: &Rendezvous,
        group_stop: &AtomicBool,
    ) -> Result<ThreadOutput, ProbeError> {
        let cpu = self.cpu;
        let _guard = channel.prepare_receiver().map_err(|source| ProbeError::Setup {
            cpu,
            what: "prepare the receiver's wait",
            source,
        })?;
        shared.receiver_ready.store(true, Release);
        let mut counts = Counts::default();
        let result = self.sample_loop(channel, shared, group_stop, &mut counts);
        // The trigger stops at once instead of signalling a receiver that is gone.
        group_stop.store(true, Relaxed);
        let interrupted = result.map_err(|source| ProbeError::Sampling { cpu, source })?;
        Ok(ThreadOutput {
            cpu,
            thread_name: String::new(),
            cycles: counts.cycles,
            overruns: counts.overruns,
            lost: self.recorder.lost(),
            interrupted,
            block_s: self.recorder.block_s(),
            interval_ns: self.period_ns,
            details: Vec::new(),
            metrics: vec![self.recorder.finish()],
        })
    }

    /// The real-time loop: the wait, the clock read, nothing else but preallocated memory.
    /// Returns whether it was interrupted by `group_stop` before its stimuli came.
    fn sample_loop(
        &mut self,
        channel: &Channel,
        shared: &Rendezvous,
        group_stop: &AtomicBool,
        counts: &mut Counts,
    ) -> rtlab_sys::Result<bool> {
        let mut next = 0u64;
        let mut started = false;
        while counts.cycles < self.stimuli {
            if group_stop.load(Relaxed) {
                return Ok(true);
            }
            let wake = channel.wait(next)?;
            let now = monotonic_ns();
            let (sample, through) = match wake {
                Wake::Interrupted => continue,
                Wake::Message(sent) if sent.seq >= next => (sent, sent.seq),
                Wake::Message(_) => continue,
                Wake::Doorbell => match shared.mailbox.take(next) {
                    Some(taken) => taken,
                    None => continue,
                },
            };
            if !started {
                self.recorder.start(shared.start_ns.load(Acquire));
                started = true;
            }
            let skipped = admit(next, through, self.stimuli, counts);
            next = through + 1;
            let flags = if skipped > 0 { FLAG_OVERRUN } else { 0 };
            self.recorder.record(sample.sent_ns, now as i64 - sample.sent_ns as i64, self.cpu as u32, flags);
            let m = self.recorder.moments();
            self.live.publish(m.count, counts.overruns, self.recorder.lost(), m.min, m.max, m.sum as i64);
        }
        Ok(false)
    }
}

/// What the reader must know about how trigger and receiver ran.
fn trigger_notes(stimulus: &Stimulus, receiver: &ThreadSetup) -> Vec<String> {
    let mut notes = Vec::new();
    if stimulus.trigger_cpu == stimulus.receiver_cpu {
        notes.push(format!(
            "the trigger shares CPU {} with the receiver: each sample includes the switch from the trigger to the \
             receiver (use --trigger-cpu with another CPU for the cross-CPU wake-up alone)",
            stimulus.receiver_cpu
        ));
    }
    let trigger = &stimulus.trigger_setup;
    if !receiver.policy.is_realtime() {
        notes.push(
            "receiver and trigger run SCHED_OTHER: the woken receiver is not necessarily run at once, so samples \
             include the scheduler's choice"
                .into(),
        );
    } else if trigger.policy.is_realtime() && trigger.priority >= receiver.priority {
        notes.push(format!(
            "the trigger runs at priority {}, not below the receiver's {}: on a shared CPU the receiver waits for \
             the trigger to block",
            trigger.priority, receiver.priority
        ));
    }
    notes
}

pub struct IpcProbe {
    config: IpcConfig,
    pair: PreparedPair,
}

impl IpcProbe {
    /// Sets the mechanism up (fails with [`ProbeError::Unavailable`] when the host lacks it).
    pub fn new(config: IpcConfig) -> Result<Self, ProbeError> {
        if !(config.stimulus.rate_hz.is_finite() && config.stimulus.rate_hz > 0.0) {
            return Err(ProbeError::Config(format!("{}: the rate must be a positive number", config.name)));
        }
        let channel = Channel::open(config.mechanism).map_err(|e| ProbeError::Unavailable {
            probe: config.mechanism.probe_name().into(),
            what: config.mechanism.facility().into(),
            reason: e.to_string(),
        })?;
        let stimulus = &config.stimulus;
        let sampling = &config.sampling;
        let period_ns = stimulus.period_ns();
        let cpu = stimulus.receiver_cpu;
        let mut raw_drains = Vec::new();
        let raw = raw_target(
            sampling.raw_dir.as_deref(),
            &format!("{}-latency-{}hz-cpu{cpu}.bin", config.name.replace(':', "-"), rate_tag(stimulus.rate_hz)),
            sampling.raw_ring_capacity,
            &mut raw_drains,
        );
        let recorder = MetricRecorder::new(
            format!("{}.latency", config.name),
            sampling.histogram_max_ns,
            sampling.budget.planned_ns(period_ns),
            raw,
            0,
        )?;
        let pair = PreparedPair {
            channel,
            recorder,
            raw_drains,
            stimuli: sampling.budget.cycles(period_ns),
            period_ns,
            receiver_cpu: cpu,
            trigger_cpu: stimulus.trigger_cpu,
            receiver_setup: sampling.setup,
            trigger_setup: stimulus.trigger_setup,
            live: Arc::new(LiveStats::new(cpu)),
            receiver_thread: format!("rtlab-{}/{cpu}", config.mechanism.name()),
            trigger_thread: format!("rtlab-trig/{}", stimulus.trigger_cpu),
        };
        Ok(Self { config, pair })
    }
}

impl Probe for IpcProbe {
    fn name(&self) -> &'static str {
        self.config.name
    }

    fn live(&self) -> Vec<Arc<LiveStats>> {
        vec![self.pair.live.clone()]
    }

    fn run(self: Box<Self>, stop: Arc<AtomicBool>) -> Result<ProbeOutput, ProbeError> {
        let IpcProbe { config, pair } = *self;
        let (mut thread, raw_written) = run_pair(pair, &stop)?;
        thread.thread_name = format!("{}/{}", config.name, config.stimulus.receiver_cpu);
        // Extended, not replaced: the raw writer may have left its account there.
        thread.details.extend([
            ("mechanism".into(), Detail::Text(config.mechanism.name().into())),
            ("rate_hz".into(), Detail::Float(config.stimulus.rate_hz)),
            ("trigger_cpu".into(), Detail::Int(config.stimulus.trigger_cpu as i64)),
        ]);
        Ok(ProbeOutput {
            probe: config.name.into(),
            threads: vec![thread],
            raw_written,
            notes: trigger_notes(&config.stimulus, &config.sampling.setup),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Budget;
    use std::time::Duration;

    fn setup() -> ThreadSetup {
        ThreadSetup::unchanged()
    }

    fn config(mechanism: Mechanism, samples: u64, raw_dir: Option<PathBuf>) -> IpcConfig {
        IpcConfig {
            mechanism,
            stimulus: Stimulus { receiver_cpu: 0, trigger_cpu: 0, rate_hz: 2_000.0, trigger_setup: setup() },
            sampling: Sampling {
                budget: Budget::Samples(samples),
                histogram_max_ns: 10_000_000_000,
                raw_dir,
                raw_ring_capacity: 1024,
                setup: setup(),
            },
            name: mechanism.probe_name(),
        }
    }

    #[test]
    fn admit_counts_the_stimuli_served_without_a_sample() {
        let mut c = Counts::default();
        assert_eq!(admit(0, 0, 10, &mut c), 0);
        assert_eq!(admit(1, 3, 10, &mut c), 2, "1 recorded, 2 and 3 served by the same wake-up");
        assert_eq!(c, Counts { cycles: 4, overruns: 2 });
        // Beyond the window: the sample is the last cycle, the overruns are capped.
        assert_eq!(admit(4, 20, 10, &mut c), 5);
        assert_eq!(c, Counts { cycles: 10, overruns: 7 });
    }

    #[test]
    fn mailbox_gives_the_oldest_stimulus_not_served() {
        let m = Mailbox::default();
        assert_eq!(m.take(0), None);
        for seq in 0..3 {
            m.publish(Sent { seq, sent_ns: 100 + seq });
        }
        assert_eq!(m.take(0), Some((Sent { seq: 0, sent_ns: 100 }, 2)));
        assert_eq!(m.take(2), Some((Sent { seq: 2, sent_ns: 102 }, 2)));
        assert_eq!(m.take(3), None, "all served");
        // Far behind: the oldest time still kept, never the slot written next.
        for seq in 3..200 {
            m.publish(Sent { seq, sent_ns: 100 + seq });
        }
        let (oldest, last) = m.take(3).unwrap();
        assert_eq!(last, 199);
        assert_eq!(oldest.seq, 200 - MAILBOX_SLOTS as u64 + 1);
        assert_eq!(oldest.sent_ns, 100 + oldest.seq);
    }

    #[test]
    fn mailbox_reads_are_never_torn() {
        let m = Arc::new(Mailbox::default());
        let writer = {
            let m = m.clone();
            std::thread::spawn(move || {
                for seq in 0..500_000u64 {
                    m.publish(Sent { seq, sent_ns: seq * 3 });
                }
            })
        };
        let mut next = 0;
        while !writer.is_finished() {
            if let Some((sent, last)) = m.take(next) {
                assert_eq!(sent.sent_ns, sent.seq * 3, "a send time of another stimulus");
                assert!(sent.seq >= next && sent.seq <= last);
                next = last + 1;
            }
        }
        writer.join().unwrap();
    }

    #[test]
    fn messages_round_trip() {
        let s = Sent { seq: u64::MAX - 1, sent_ns: 123_456_789 };
        assert_eq!(Sent::decode(&s.encode()), s);
    }

    #[test]
    fn rate_tags() {
        assert_eq!(rate_tag(1000.0), "1000");
        assert_eq!(rate_tag(2.5), "2.5");
    }

    #[test]
    fn every_mechanism_measures_and_counts_add_up() {
        for mechanism in Mechanism::ALL {
            let dir = tempfile::tempdir().unwrap();
            let probe = Box::new(IpcProbe::new(config(mechanism, 200, Some(dir.path().to_path_buf()))).unwrap());
            let output = probe.run(Arc::new(AtomicBool::new(false))).unwrap();
            assert_eq!(output.probe, mechanism.probe_name());
            let t = &output.threads[0];
            let m = &t.metrics[0];
            assert_eq!(m.metric, format!("{}.latency", mechanism.probe_name()));
            assert!(!t.interrupted);
            assert_eq!(t.cycles, 200, "{mechanism:?}");
            assert_eq!(m.moments.count + t.overruns, t.cycles, "{mechanism:?}");
            assert!(m.moments.count > 0);
            assert!(m.moments.min >= 0, "{mechanism:?}: the receiver woke before the send");
            assert_eq!(t.interval_ns, 500_000);
            assert_eq!(t.thread_name, format!("{}/0", mechanism.probe_name()));
            let raw = m.raw_file.as_ref().unwrap();
            assert_eq!(
                raw.file_name().unwrap().to_str().unwrap(),
                format!("ipc-{}-latency-2000hz-cpu0.bin", mechanism.name())
            );
            let written = output.raw_written.iter().find(|(p, _)| p == raw).unwrap().1;
            assert_eq!(written + t.lost, m.moments.count);
            assert!(output.notes.iter().any(|n| n.contains("shares CPU 0")));
            assert!(output.notes.iter().any(|n| n.contains("SCHED_OTHER")));
        }
    }

    #[test]
    fn a_stop_request_ends_a_long_run_promptly() {
        let mut c = config(Mechanism::Signal, 0, None);
        c.sampling.budget = Budget::Duration { ns: 3_600_000_000_000 };
        let probe = Box::new(IpcProbe::new(c).unwrap());
        let stop = Arc::new(AtomicBool::new(false));
        let stopper = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(100));
                stop.store(true, Relaxed);
            })
        };
        let started = std::time::Instant::now();
        let output = probe.run(stop).unwrap();
        stopper.join().unwrap();
        assert!(started.elapsed() < Duration::from_secs(5));
        let t = &output.threads[0];
        assert!(t.interrupted);
        assert_eq!(t.metrics[0].moments.count + t.overruns, t.cycles);
    }
}
