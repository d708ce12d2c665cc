//! The net probe (Regnier et al. 2008, experiment 1): a trigger thread sends UDP datagrams
//! at a set rate carrying its send time; a real-time receiver blocks in `recvmsg` on a
//! socket with kernel receive timestamps. Metrics per event: `net.delivery` (send to kernel
//! receive), `net.activation` (kernel receive to the task running, Regnier's L_act, the main
//! metric) and `net.latency` (send to task running, the stimulus-to-response time).
//!
//! Timestamps (docs/probes/net.md has the details):
//! - trigger, immediately before `send`: CLOCK_REALTIME and CLOCK_MONOTONIC
//!   ([`rtlab_sys::net::clock_pair_ns`]), carried in the datagram with its sequence number;
//! - kernel: the receive timestamp (SO_TIMESTAMPING, CLOCK_REALTIME);
//! - receiver, immediately after `recvmsg` returns: CLOCK_REALTIME and CLOCK_MONOTONIC.
//!
//! delivery = kernel rx − send realtime; activation = wake realtime − kernel rx;
//! latency = wake monotonic − send monotonic. All three are recorded at the send's
//! monotonic time, so the three raw files align record by record.

use crate::live::LiveStats;
use crate::raw::SampleTap;
use crate::raw::{RawDrain, RawWriter};
use crate::recorder::{tapped_raw_target, MetricRecorder};
use crate::workers::{run_receiver_and_trigger, wait_for_receiver};
use crate::{rate_tag, Detail, Probe, ProbeError, ProbeOutput, Sampling, Stimulus, ThreadOutput};
use rtlab_sys::clock::{monotonic_ns, sleep_relative_ns, sleep_until_monotonic_ns, SleepOutcome};
use rtlab_sys::net::{clock_pair_ns, RecvOutcome, Timestamping, UdpReceiver, UdpSender};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Regnier's 20 Hz.
pub const DEFAULT_RATE_HZ: f64 = 20.0;

/// The stimulus datagram: sequence number, send CLOCK_MONOTONIC ns, send CLOCK_REALTIME ns
/// (little-endian u64 each).
pub const PAYLOAD_LEN: usize = 24;

/// After the last stimulus of the window, the trigger goes on sending (so that a lost last
/// datagram cannot leave the receiver waiting) for this long at most, then ends the probe.
const TRAILING_NS: u64 = 1_000_000_000;

#[derive(Debug, Clone)]
pub struct NetConfig {
    pub stimulus: Stimulus,
    pub sampling: Sampling,
    /// Receiver address (default 127.0.0.1).
    pub bind: Option<IpAddr>,
    /// Interface to receive on (SO_BINDTODEVICE; hardware timestamps where it has them).
    pub interface: Option<String>,
    /// Prefix of the metric names: "net", or "sweep" when the sweep probe runs it.
    pub name: &'static str,
    /// Where the activation and latency samples also go while the probe runs (`--split`).
    pub split_tap: Option<SampleTap>,
}

/// The receiver thread's metrics.
struct Recorders {
    activation: MetricRecorder,
    delivery: MetricRecorder,
    latency: MetricRecorder,
}

pub struct NetProbe {
    config: NetConfig,
    live: Arc<LiveStats>,
    receiver: UdpReceiver,
    sender: UdpSender,
    /// Where the receiver listens.
    address: SocketAddr,
    recorders: Recorders,
    raw_drains: Vec<RawDrain>,
    /// Stimuli in the measured window (N).
    stimuli: u64,
    notes: Vec<String>,
}

impl NetProbe {
    /// Opens and configures the sockets (fails with [`ProbeError::Unavailable`] when the
    /// host cannot timestamp received datagrams).
    pub fn new(config: NetConfig) -> Result<Self, ProbeError> {
        let rate = config.stimulus.rate_hz;
        if !(rate.is_finite() && rate > 0.0) {
            return Err(ProbeError::Config(format!("{}: the rate must be a positive number", config.name)));
        }
        let address_ip = config.bind.unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST));
        let unavailable = |what: String, e: &dyn std::fmt::Display| ProbeError::Unavailable {
            probe: config.name.to_string(),
            what,
            reason: e.to_string(),
        };
        let on = match &config.interface {
            Some(interface) => format!("{address_ip} on {interface}"),
            None => address_ip.to_string(),
        };
        let socket_what = || format!("a timestamping UDP receiver at {on}");
        let mut receiver =
            UdpReceiver::bind(address_ip, config.interface.as_deref()).map_err(|e| unavailable(socket_what(), &e))?;
        let address = receiver.local_addr().map_err(|e| unavailable(socket_what(), &e))?;
        let sender = UdpSender::connect(address).map_err(|e| unavailable(format!("a UDP sender to {address}"), &e))?;
        let from = sender.local_addr().map_err(|e| unavailable(format!("a UDP sender to {address}"), &e))?;
        receiver.accept_only_from(from).map_err(|e| unavailable(socket_what(), &e))?;
        check_round_trip(&mut receiver, &sender, address).map_err(|reason| ProbeError::Unavailable {
            probe: config.name.to_string(),
            what: socket_what(),
            reason,
        })?;

        let period = config.stimulus.period_ns();
        let stimuli = config.sampling.budget.cycles(period);
        if stimuli == 0 {
            return Err(ProbeError::Config(format!("{}: the run must take at least one sample", config.name)));
        }
        let planned_ns = stimuli.saturating_mul(period);
        let cpu = config.stimulus.receiver_cpu;
        let mut raw_drains = Vec::new();
        let mut recorder = |metric: &str| -> Result<MetricRecorder, ProbeError> {
            let name = format!("{}.{metric}", config.name);
            // The split cuts the wake-up, which activation and latency give together.
            let tapped = matches!(metric, "activation" | "latency");
            let raw = tapped_raw_target(
                config.sampling.raw_dir.as_deref(),
                &raw_file_name(config.name, metric, rate, cpu),
                config.sampling.raw_ring_capacity,
                &mut raw_drains,
                config.split_tap.as_ref().filter(|_| tapped).map(|tap| (tap, cpu, name.as_str())),
            );
            MetricRecorder::new(name.clone(), config.sampling.histogram_max_ns, planned_ns, raw, 0)
        };
        let recorders = Recorders {
            activation: recorder("activation")?,
            delivery: recorder("delivery")?,
            latency: recorder("latency")?,
        };
        let notes = notes_for(&config, &receiver);
        Ok(Self {
            live: Arc::new(LiveStats::new(cpu)),
            config,
            receiver,
            sender,
            address,
            recorders,
            raw_drains,
            stimuli,
            notes,
        })
    }

    /// Where the receiver listens (an ephemeral port of the bound address).
    pub fn address(&self) -> SocketAddr {
        self.address
    }
}

/// Sends test datagrams until one arrives with a timestamp: a route that does not reach
/// the receiver or a kernel that attaches no timestamp fails here, before anything is
/// measured. The kernel turns receive timestamping on from a work queue, so the first
/// datagrams after set-up may come without one: up to 1 s of attempts. A datagram without
/// a hardware timestamp (this host's own traffic never passes through the NIC) switches
/// the receiver to software timestamps.
fn check_round_trip(receiver: &mut UdpReceiver, sender: &UdpSender, address: SocketAddr) -> Result<(), String> {
    let mut buf = [0u8; 8];
    for _ in 0..100 {
        // One byte: the sampling loop would ignore it anyway (not a stimulus's length).
        sender.send(&[0u8; 1]).map_err(|e| e.to_string())?;
        if !receiver.wait_readable(1_000).map_err(|e| e.to_string())? {
            return Err(format!("a test datagram sent to {address} did not arrive within 1 s"));
        }
        match receiver.recv_with_timestamp(&mut buf).map_err(|e| e.to_string())? {
            RecvOutcome::Datagram { kernel_rx_ns: Some(_), .. } => return Ok(()),
            RecvOutcome::Datagram { kernel_rx_ns: None, .. } if receiver.timestamping() == Timestamping::Hardware => {
                receiver
                    .fall_back_to_software(
                        "a test datagram came without one: this host's own datagrams do not pass through the NIC",
                    )
                    .map_err(|e| e.to_string())?;
                continue;
            }
            _ => {}
        }
        sleep_relative_ns(10_000_000).map_err(|e| e.to_string())?;
    }
    Err("the kernel attached no receive timestamp to test datagrams for 1 s".into())
}

/// `net-activation-20hz-cpu0.bin`: the rate is in the name so sweep steps never collide.
fn raw_file_name(name: &str, metric: &str, rate_hz: f64, cpu: usize) -> String {
    format!("{name}-{metric}-{}hz-cpu{cpu}.bin", rate_tag(rate_hz))
}

/// What the reader of the results must know about how this probe runs.
fn notes_for(config: &NetConfig, receiver: &UdpReceiver) -> Vec<String> {
    let stimulus = &config.stimulus;
    let mut notes = Vec::new();
    if stimulus.trigger_cpu == stimulus.receiver_cpu {
        notes.push(format!(
            "the trigger runs on the receiver's CPU {}: it competes with the receiver, and the send path \
             (which on this host also delivers the datagram) runs there too",
            stimulus.receiver_cpu
        ));
    }
    if !config.sampling.setup.policy.is_realtime() {
        notes.push("trigger and receiver both run at SCHED_OTHER: the activation latency is an ordinary task's".into());
    }
    if let (Some(interface), Some(reason)) = (&config.interface, receiver.hardware_refused()) {
        notes.push(format!(
            "software receive timestamps: hardware timestamps on {interface} are not available ({reason})"
        ));
    }
    if receiver.timestamping() == Timestamping::Hardware {
        notes.push(
            "hardware receive timestamps are the NIC clock's raw time: delivery and activation are meaningful \
             only if that clock is synchronised to CLOCK_REALTIME (phc2sys)"
                .into(),
        );
    }
    notes.push(
        "trigger and receiver are on this host, so the datagram never reaches a NIC: it is delivered in the \
         sender's softirq context on the loopback path (no NIC interrupt); delivery latency is the network \
         stack, not an interrupt"
            .into(),
    );
    notes
}

impl Probe for NetProbe {
    fn name(&self) -> &'static str {
        self.config.name
    }

    fn live(&self) -> Vec<Arc<LiveStats>> {
        vec![self.live.clone()]
    }

    fn run(self: Box<Self>, stop: Arc<AtomicBool>) -> Result<ProbeOutput, ProbeError> {
        let NetProbe { config, live, receiver, sender, address, recorders, raw_drains, stimuli, notes } = *self;
        let writer = RawWriter::for_drains(raw_drains)?;
        let trigger_report = Arc::new(TriggerReport::default());
        let stimulus = config.stimulus;
        let period = stimulus.period_ns();
        let receiving = ReceiverThread {
            receiver,
            recorders,
            live,
            stimuli,
            period,
            cpu: stimulus.receiver_cpu,
            setup: config.sampling.setup,
        };
        let triggering = TriggerThread {
            sender,
            stimuli,
            period,
            cpu: stimulus.trigger_cpu,
            setup: stimulus.trigger_setup,
            report: trigger_report.clone(),
        };
        let (mut threads, raw_written) = run_receiver_and_trigger(
            (stimulus.receiver_cpu, format!("rtlab-{}/{}", config.name, stimulus.receiver_cpu)),
            move |group_stop, stop, ready| receiving.run(group_stop, stop, ready),
            stimulus.trigger_cpu,
            move |group_stop, ready| triggering.run(group_stop, ready),
            &stop,
            writer,
        )?;
        for thread in &mut threads {
            thread.thread_name = format!("{}/{}", config.name, thread.cpu);
            thread.details.extend([
                ("rate_hz".to_string(), Detail::Float(stimulus.rate_hz)),
                ("trigger_cpu".to_string(), Detail::Int(stimulus.trigger_cpu as i64)),
                ("address".to_string(), Detail::Text(address.ip().to_string())),
                ("send_errors".to_string(), Detail::Int(trigger_report.send_errors.load(Ordering::Relaxed) as i64)),
                (
                    "trigger_skipped_periods".to_string(),
                    Detail::Int(trigger_report.skipped_periods.load(Ordering::Relaxed) as i64),
                ),
            ]);
        }
        let mut notes = notes;
        let skipped = trigger_report.skipped_periods.load(Ordering::Relaxed);
        if skipped > 0 {
            notes.push(format!(
                "the trigger woke a whole period late {skipped} times and skipped those periods instead of sending \
                 a burst: stimuli came less often than {} Hz for a while (see trigger_skipped_periods)",
                rate_tag(stimulus.rate_hz)
            ));
        }
        let send_errors = trigger_report.send_errors.load(Ordering::Relaxed);
        if send_errors > 0 {
            notes.push(format!("{send_errors} stimuli could not be sent; each counts as an overrun"));
        }
        Ok(ProbeOutput { probe: config.name.into(), threads, raw_written, notes })
    }
}

/// What the trigger tells the receiver's output after the run.
#[derive(Default)]
struct TriggerReport {
    send_errors: AtomicU64,
    skipped_periods: AtomicU64,
}

struct TriggerThread {
    sender: UdpSender,
    stimuli: u64,
    period: u64,
    cpu: usize,
    setup: crate::ThreadSetup,
    report: Arc<TriggerReport>,
}

impl TriggerThread {
    /// Sends the window's stimuli 0..N−1 at the rate, then trailing ones for at most
    /// [`TRAILING_NS`] until the receiver has finished (a lost last datagram must not leave
    /// it waiting), until the group stops.
    fn run(self, group_stop: &AtomicBool, receiver_ready: &AtomicBool) -> Result<(), ProbeError> {
        let cpu = self.cpu;
        let _setup = self.setup.apply(cpu)?;
        let sampling_err = |source| ProbeError::Sampling { cpu, source };
        if !wait_for_receiver(group_stop, receiver_ready).map_err(sampling_err)? {
            return Ok(());
        }
        let limit = self.stimuli.saturating_add((TRAILING_NS / self.period).max(10));
        let mut payload = [0u8; PAYLOAD_LEN];
        let mut send_errors = 0u64;
        let mut skipped = 0u64;
        let mut next = monotonic_ns() + self.period;
        let mut seq = 0u64;
        while seq < limit && !group_stop.load(Ordering::Relaxed) {
            if sleep_until_monotonic_ns(next).map_err(sampling_err)? == SleepOutcome::Interrupted {
                continue;
            }
            let (send_realtime, send_monotonic) = clock_pair_ns();
            payload[0..8].copy_from_slice(&seq.to_le_bytes());
            payload[8..16].copy_from_slice(&send_monotonic.to_le_bytes());
            payload[16..24].copy_from_slice(&send_realtime.to_le_bytes());
            // A stimulus of the window that could not be sent produces no sample: an overrun.
            if self.sender.send(&payload).is_err() && seq < self.stimuli {
                send_errors += 1;
            }
            seq += 1;
            next += self.period;
            if send_monotonic >= next {
                // Woken a whole period late or more: skip the missed periods rather than
                // send a burst that would queue stimuli behind one another.
                let missed = (send_monotonic - next) / self.period + 1;
                next += missed * self.period;
                if seq < self.stimuli {
                    skipped += missed;
                }
            }
        }
        self.report.send_errors.store(send_errors, Ordering::Relaxed);
        self.report.skipped_periods.store(skipped, Ordering::Relaxed);
        Ok(())
    }
}

struct ReceiverThread {
    receiver: UdpReceiver,
    recorders: Recorders,
    live: Arc<LiveStats>,
    stimuli: u64,
    period: u64,
    cpu: usize,
    setup: crate::ThreadSetup,
}

/// The receiver loop's counters.
#[derive(Default)]
struct ReceiveState {
    /// Highest sequence number recorded or skipped so far.
    highest: Option<u64>,
    /// Datagrams without the configured kind of timestamp (hardware mode).
    untimestamped: u64,
    /// Datagrams that came after a later one (never on loopback).
    out_of_order: u64,
    /// The window's last stimulus (or a later one) arrived.
    finished: bool,
}

impl ReceiverThread {
    fn run(
        mut self,
        group_stop: &AtomicBool,
        stop: &AtomicBool,
        ready: &AtomicBool,
    ) -> Result<ThreadOutput, ProbeError> {
        let cpu = self.cpu;
        let _setup = self.setup.apply(cpu)?;
        ready.store(true, Ordering::Release);
        let mut state = ReceiveState::default();
        self.sample_loop(group_stop, &mut state).map_err(|source| ProbeError::Sampling { cpu, source })?;
        // The trigger stops at its next wake-up, without waiting for run_workers to notice.
        group_stop.store(true, Ordering::Relaxed);

        let interrupted = !state.finished && stop.load(Ordering::Relaxed);
        // Stimuli of the window: all N, or when a stop cut the run short, those up to the
        // last one seen (later ones were not waited for).
        let cycles = if interrupted { state.highest.map_or(0, |h| h + 1) } else { self.stimuli };
        let recorded = self.recorders.activation.moments().count;
        let Recorders { activation, delivery, latency } = self.recorders;
        let lost = activation.lost() + delivery.lost() + latency.lost();
        let block_s = activation.block_s();
        let timestamping = self.receiver.timestamping().name();
        Ok(ThreadOutput {
            cpu,
            thread_name: String::new(),
            cycles,
            overruns: cycles.saturating_sub(recorded),
            lost,
            interrupted,
            block_s,
            interval_ns: self.period,
            details: vec![
                ("timestamping".to_string(), Detail::Text(timestamping.into())),
                ("untimestamped".to_string(), Detail::Int(state.untimestamped as i64)),
                ("out_of_order".to_string(), Detail::Int(state.out_of_order as i64)),
            ],
            // Finishing drops the raw sinks, which tells the writer these rings are done.
            metrics: vec![activation.finish(), delivery.finish(), latency.finish()],
        })
    }

    /// The real-time loop: blocks in `recvmsg`, reads the clocks, records. Touches only
    /// preallocated memory; its system calls are `recvmsg` and the clock reads.
    fn sample_loop(&mut self, group_stop: &AtomicBool, state: &mut ReceiveState) -> rtlab_sys::Result<()> {
        let mut buf = [0u8; 64];
        let cpu = self.cpu as u32;
        let last = self.stimuli - 1;
        while !group_stop.load(Ordering::Relaxed) {
            let outcome = self.receiver.recv_with_timestamp(&mut buf)?;
            let (wake_realtime, wake_monotonic) = clock_pair_ns();
            let RecvOutcome::Datagram { len, kernel_rx_ns } = outcome else { continue };
            if len != PAYLOAD_LEN {
                continue;
            }
            let word = |i: usize| u64::from_le_bytes(buf[i * 8..i * 8 + 8].try_into().unwrap_or([0; 8]));
            let (seq, send_monotonic, send_realtime) = (word(0), word(1), word(2));
            if seq > last {
                // The window's last stimulus was lost: nothing more belongs to the window.
                state.finished = true;
                return Ok(());
            }
            if state.highest.is_some_and(|h| seq <= h) {
                state.out_of_order += 1;
                continue;
            }
            if state.highest.is_none() {
                let window_start = send_monotonic.saturating_sub(seq * self.period);
                self.recorders.activation.start(window_start);
                self.recorders.delivery.start(window_start);
                self.recorders.latency.start(window_start);
            }
            state.highest = Some(seq);
            match kernel_rx_ns {
                Some(rx) => {
                    let r = &mut self.recorders;
                    r.activation.record(send_monotonic, wake_realtime as i64 - rx as i64, cpu, 0);
                    r.delivery.record(send_monotonic, rx as i64 - send_realtime as i64, cpu, 0);
                    r.latency.record(send_monotonic, wake_monotonic as i64 - send_monotonic as i64, cpu, 0);
                    let m = r.activation.moments();
                    self.live.publish(m.count, seq + 1 - m.count, r.activation.lost(), m.min, m.max, m.sum as i64);
                }
                None => state.untimestamped += 1,
            }
            if seq == last {
                state.finished = true;
                return Ok(());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Budget, ThreadSetup};
    use std::time::Duration;

    fn setup() -> ThreadSetup {
        ThreadSetup::unchanged()
    }

    fn config(rate_hz: f64, budget: Budget, raw_dir: Option<std::path::PathBuf>) -> NetConfig {
        NetConfig {
            stimulus: Stimulus { receiver_cpu: 0, trigger_cpu: 0, rate_hz, trigger_setup: setup() },
            sampling: Sampling {
                budget,
                histogram_max_ns: 1_000_000_000,
                raw_dir,
                raw_ring_capacity: 1 << 12,
                setup: setup(),
            },
            bind: None,
            interface: None,
            name: "net",
            split_tap: None,
        }
    }

    #[test]
    fn rate_tags_are_file_safe() {
        assert_eq!(rate_tag(20.0), "20");
        assert_eq!(rate_tag(1_000.0), "1000");
        assert_eq!(rate_tag(0.5), "0.5");
        assert_eq!(raw_file_name("sweep", "activation", 8_000.0, 1), "sweep-activation-8000hz-cpu1.bin");
    }

    #[test]
    fn set_up_opens_loopback_sockets_and_says_how_it_runs() {
        let probe = NetProbe::new(config(DEFAULT_RATE_HZ, Budget::Duration { ns: 1_000_000_000 }, None)).unwrap();
        assert_eq!(probe.stimuli, 20);
        assert!(probe.address().ip().is_loopback());
        assert!(probe.notes.iter().any(|n| n.contains("receiver's CPU")));
        assert!(probe.notes.iter().any(|n| n.contains("SCHED_OTHER")));
        assert!(probe.notes.iter().any(|n| n.contains("softirq")));
    }

    #[test]
    fn a_foreign_bind_address_is_unavailable() {
        let mut c = config(DEFAULT_RATE_HZ, Budget::Samples(5), None);
        c.bind = Some("203.0.113.77".parse().unwrap());
        match NetProbe::new(c) {
            Err(ProbeError::Unavailable { probe, reason, .. }) => {
                assert_eq!(probe, "net");
                assert!(reason.contains("bind"), "{reason}");
            }
            Err(e) => panic!("unexpected error {e}"),
            Ok(_) => panic!("bound to a foreign address"),
        }
    }

    #[test]
    fn a_bad_rate_is_a_configuration_error() {
        assert!(matches!(NetProbe::new(config(0.0, Budget::Samples(5), None)), Err(ProbeError::Config(_))));
    }

    #[test]
    fn a_short_run_records_every_stimulus_consistently() {
        let dir = tempfile::tempdir().unwrap();
        let probe = NetProbe::new(config(500.0, Budget::Samples(50), Some(dir.path().to_path_buf()))).unwrap();
        let output = Box::new(probe).run(Arc::new(AtomicBool::new(false))).unwrap();
        assert_eq!(output.threads.len(), 1);
        let t = &output.threads[0];
        let names: Vec<&str> = t.metrics.iter().map(|m| m.metric.as_str()).collect();
        assert_eq!(names, ["net.activation", "net.delivery", "net.latency"]);
        assert_eq!(t.cycles, 50);
        assert_eq!(t.metrics[0].moments.count + t.overruns, t.cycles);
        assert!(!t.interrupted);
        assert_eq!(t.thread_name, "net/0");
        assert_eq!(output.raw_written.len(), 3);
        let files: Vec<_> = t.metrics.iter().map(|m| m.raw_file.clone().unwrap()).collect();
        assert!(files[0].ends_with("net-activation-500hz-cpu0.bin"));
        let raw: Vec<_> = files.iter().map(|f| crate::raw::read_all(f).unwrap()).collect();
        for ((a, d), l) in raw[0].iter().zip(&raw[1]).zip(&raw[2]) {
            assert_eq!(a.expected_ns, d.expected_ns);
            assert_eq!(a.expected_ns, l.expected_ns);
            assert!(a.value_ns >= 0 && d.value_ns >= 0);
        }
    }

    #[test]
    fn a_stop_request_ends_the_run_promptly() {
        let probe = NetProbe::new(config(2.0, Budget::Samples(1_000), None)).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let stopper = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(1_200));
                stop.store(true, Ordering::SeqCst);
            })
        };
        let started = std::time::Instant::now();
        let output = Box::new(probe).run(stop).unwrap();
        stopper.join().unwrap();
        assert!(started.elapsed() < Duration::from_secs(5));
        let t = &output.threads[0];
        assert!(t.interrupted);
        assert!(t.cycles < 1_000);
        assert_eq!(t.metrics[0].moments.count + t.overruns, t.cycles);
    }
}
