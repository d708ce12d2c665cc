//! The remote probe (Regnier et al. 2008, experiment 2): this host, the measuring side E_T,
//! stimulates a station E_M (`rtlab station`) and timestamps its two answers on its own
//! clock. docs/probes/remote.md has the definitions beside the paper's.
//!
//! One stimulus is one ICMP echo request carrying an authenticated STIMULUS message:
//! - t1: the kernel's (or with `--interface`, the NIC's) transmit timestamp of the request;
//! - t2: the kernel receive timestamp of the echo reply that the station's kernel sends
//!   from its receive softirq (the early answer: "from the interrupt handler");
//! - t3: the kernel receive timestamp of the ANSWER that the station's real-time task sends
//!   Δ after it woke.
//!
//! Metrics per stimulus: `remote.irq` = t2 − t1 − δ̄ (L_irq), `remote.act` = t3 − t2 − Δ
//! (L_act), `remote.rtt` = t3 − t1, and `remote.station_act`, the station's own activation
//! latency (its kernel receive time to its task's wake-up, one clock). δ̄ is this host's
//! own latency, calibrated first ([`calibrate`]) the paper's way: without load, t2 − t1 = 2δ.
//! So per sample irq + act + Δ + δ̄ = rtt exactly (δ̄ is kept in whole ns).
//!
//! Every stimulus is accounted for: a sample, or lost (no echo, no answer, neither, or no
//! t1).
//! The paper's pitfalls are counted, not hidden: answers that crossed (t3 before t2) and
//! negative L_act from δ's spread.

use crate::live::LiveStats;
use crate::raw::{RawDrain, RawWriter};
use crate::recorder::{raw_target, MetricRecorder};
use crate::workers::{run_receiver_and_trigger, wait_for_receiver};
use crate::{rate_tag, Budget, Detail, Probe, ProbeError, ProbeOutput, Sampling, Stimulus, ThreadOutput};
use rtlab_station::client::{accept_welcome, hello, silent_station};
use rtlab_station::protocol::{self, Answer, Key, Kind, MAX_MESSAGE_LEN};
use rtlab_sys::clock::{monotonic_ns, sleep_relative_ns, sleep_until_monotonic_ns, SleepOutcome};
use rtlab_sys::icmp::{internet_checksum, IcmpRecv, IcmpSocket, ECHO_REPLY, ECHO_REQUEST};
use rtlab_sys::net::{clock_pair_ns, wait_readable_any, RecvOutcome, Timestamping, UdpReceiver};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Regnier's 20 Hz.
pub const DEFAULT_RATE_HZ: f64 = 20.0;
/// The highest stimulus rate (the station answers 1000/s by default).
/// The lowest stimulus rate: one stimulus every 10 s keeps the session well inside the
/// station's idle limit (`rtlab_station::station::SESSION_IDLE_NS`, 60 s).
pub const MIN_RATE_HZ: f64 = 0.1;
pub const MAX_RATE_HZ: f64 = 1_000.0;
/// How long the δ calibration sends stimuli, at the measurement's own rate: δ depends on
/// it (at 1 kHz the CPUs leave their idle states less often than at 20 Hz).
pub const CALIBRATION_NS: u64 = 4_000_000_000;
/// The fewest calibration stimuli (20 Hz for 4 s: 80).
pub const CALIBRATION_MIN_STIMULI: u64 = 40;

/// Stimuli of the δ calibration at `rate_hz`: [`CALIBRATION_NS`] of them, at least
/// [`CALIBRATION_MIN_STIMULI`].
pub fn calibration_stimuli(rate_hz: f64) -> u64 {
    ((rate_hz * CALIBRATION_NS as f64 / 1e9).round() as u64).max(CALIBRATION_MIN_STIMULI)
}
/// Stimuli in flight at most: slots of the pairing table.
const SLOTS: usize = 1024;
/// Check stimuli sent at most before the measured window.
const CHECK_ATTEMPTS: u64 = 10;
/// How long an answer is waited for after its stimulus was sent: half of the slots' span
/// at the highest rate, so a slot is finalised before it is reused.
const ANSWER_TIMEOUT_NS: u64 = 500_000_000;
/// ICMP header (8) + STIMULUS message.
const STIMULUS_ICMP_LEN: usize = 8 + HEADER_AND_STIMULUS;
const HEADER_AND_STIMULUS: usize = protocol::HEADER_LEN + 8 + protocol::TAG_LEN;

/// δ, this host's own latency, as subtracted from t2 − t1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DeltaEstimate {
    /// δ̄ in whole ns (what is subtracted).
    pub mean_ns: i64,
    /// Spread of δ (standard deviation), min and max (paper: δ ∈ [δmin, δmax]).
    pub sd_ns: f64,
    pub min_ns: i64,
    pub max_ns: i64,
    /// Calibration stimuli behind the estimate (0: given by the user) and their rate (0:
    /// given).
    pub samples: u64,
    pub rate_hz: f64,
    /// Measured once before and held (a stored calibration, `--delta FILE`), not measured
    /// for this run.
    pub held: bool,
}

impl From<&rtlab_results::delta::StoredDelta> for DeltaEstimate {
    /// A stored calibration, held: its δ̄ and spread as they were measured.
    fn from(stored: &rtlab_results::delta::StoredDelta) -> Self {
        Self {
            mean_ns: stored.mean_ns,
            sd_ns: stored.sd_ns,
            min_ns: stored.min_ns,
            max_ns: stored.max_ns,
            samples: stored.samples,
            rate_hz: stored.rate_hz,
            held: true,
        }
    }
}

impl DeltaEstimate {
    /// δ given by the user (`--delta`): no spread known.
    pub fn given(ns: i64) -> Self {
        Self { mean_ns: ns, sd_ns: 0.0, min_ns: ns, max_ns: ns, samples: 0, rate_hz: 0.0, held: false }
    }
}

#[derive(Debug, Clone)]
pub struct RemoteConfig {
    /// Rate, receiver (pairing) and trigger CPUs.
    pub stimulus: Stimulus,
    pub sampling: Sampling,
    pub station: SocketAddrV4,
    pub key: Key,
    /// δ̄ to subtract; None while calibrating or only checking the set-up (t2 − t1 is
    /// then recorded as is).
    pub delta: Option<DeltaEstimate>,
    /// This is the δ calibration: a rate above the station's accepted one is lowered to
    /// it instead of refused.
    pub calibrating: bool,
    /// The interface towards the station: its NIC's hardware timestamps are used where its
    /// driver offers them for both directions (else software ones, and the reason why).
    pub interface: Option<String>,
}

struct Recorders {
    irq: MetricRecorder,
    act: MetricRecorder,
    rtt: MetricRecorder,
    station_act: MetricRecorder,
}

pub struct RemoteProbe {
    config: RemoteConfig,
    timestamping: Timestamping,
    /// Why hardware timestamps were asked for (an interface given) but are not used.
    hardware_refused: Option<String>,
    live: Arc<LiveStats>,
    icmp_in: IcmpSocket,
    icmp_out: IcmpSocket,
    answers: UdpReceiver,
    session: u64,
    /// The station's Δ (from its WELCOME).
    station_delta_ns: u64,
    recorders: Recorders,
    raw_drains: Vec<RawDrain>,
    stimuli: u64,
    /// First sequence number of the measured window (the set-up check used earlier ones).
    first_sequence: u64,
}

impl RemoteProbe {
    /// Opens the sockets, opens a session with the station and checks one full round trip
    /// (echo and answer, both timestamped) before anything is measured.
    pub fn new(config: RemoteConfig) -> Result<Self, ProbeError> {
        let rate = config.stimulus.rate_hz;
        if !(rate.is_finite() && (MIN_RATE_HZ..=MAX_RATE_HZ).contains(&rate)) {
            return Err(ProbeError::Config(format!(
                "remote: the rate must be at least {MIN_RATE_HZ} Hz (the station closes a session idle for 60 s) and at \
                 most {MAX_RATE_HZ} Hz"
            )));
        }
        let unavailable = |what: &str, reason: String| ProbeError::Unavailable {
            probe: "remote".into(),
            what: what.to_string(),
            reason,
        };
        let (sockets, hardware_refused) = match &config.interface {
            Some(interface) => match Sockets::open(Some(interface)) {
                Ok(sockets) => (sockets, None),
                Err(why) => (Sockets::open(None).map_err(|e| unavailable("the probe's sockets", e))?, Some(why)),
            },
            None => (Sockets::open(None).map_err(|e| unavailable("the probe's sockets", e))?, None),
        };
        let Sockets { icmp_in, icmp_out, mut answers, timestamping } = sockets;
        let (session, welcome) = open_session(&mut answers, &config.key, config.station)
            .map_err(|reason| unavailable(&format!("the station at {}", config.station), reason))?;
        let mut config = config;
        let accepted = f64::from(welcome.max_rate_hz);
        if config.stimulus.rate_hz > accepted {
            if !config.calibrating {
                return Err(ProbeError::Config(format!(
                    "remote: the station at {} answers at most {} stimuli/s (its --max-rate): lower --rate",
                    config.station, welcome.max_rate_hz
                )));
            }
            // The calibration's own rate, within what the station accepts.
            config.stimulus.rate_hz = accepted;
        }
        let rate = config.stimulus.rate_hz;

        let period = config.stimulus.period_ns();
        let stimuli = config.sampling.budget.cycles(period);
        if stimuli == 0 {
            return Err(ProbeError::Config("remote: the run must take at least one sample".into()));
        }
        let planned_ns = stimuli.saturating_mul(period);
        let cpu = config.stimulus.receiver_cpu;
        let mut raw_drains = Vec::new();
        let mut recorder = |metric: &str| -> Result<MetricRecorder, ProbeError> {
            let raw = raw_target(
                config.sampling.raw_dir.as_deref(),
                &format!("remote-{metric}-{}hz-cpu{cpu}.bin", rate_tag(rate)),
                config.sampling.raw_ring_capacity,
                &mut raw_drains,
            );
            MetricRecorder::new(format!("remote.{metric}"), config.sampling.histogram_max_ns, planned_ns, raw, 0)
        };
        let recorders = Recorders {
            irq: recorder("irq")?,
            act: recorder("act")?,
            rtt: recorder("rtt")?,
            station_act: recorder("station_act")?,
        };
        let mut probe = Self {
            live: Arc::new(LiveStats::new(cpu)),
            config,
            timestamping,
            hardware_refused,
            icmp_in,
            icmp_out,
            answers,
            session,
            station_delta_ns: welcome.delta_ns,
            recorders,
            raw_drains,
            stimuli,
            first_sequence: 2,
        };
        probe
            .check_round_trip()
            .map_err(|reason| unavailable(&format!("the station at {}", probe.config.station), reason))?;
        Ok(probe)
    }

    /// The station's Δ.
    pub fn station_delta_ns(&self) -> u64 {
        self.station_delta_ns
    }

    /// One stimulus (sequence 1) whose echo and answer must both come back, timestamped,
    /// within 1 s: a station that is not there, a kernel that does not answer pings or a
    /// route that loses them fails here.
    fn check_round_trip(&mut self) -> Result<(), String> {
        // The kernel turns timestamping on from a work queue when a socket first asks for
        // it, so the first packets may come without: up to CHECK_ATTEMPTS stimuli, each
        // waited for up to 1 s, until one comes back whole (transmit time, echo and answer,
        // all timestamped). The measured window's sequence numbers follow.
        let mut outcome = (false, false, false);
        for sequence in 1..=CHECK_ATTEMPTS {
            outcome = self.check_one(sequence)?;
            if outcome == (true, true, true) {
                self.first_sequence = sequence + 1;
                return Ok(());
            }
        }
        match outcome {
            (false, _, _) => Err("the kernel gave no transmit timestamp of a stimulus".into()),
            (_, false, true) => Err("the station's task answered but no timestamped ICMP echo reply came back within \
                                     1 s: does the station's kernel answer pings (net.ipv4.icmp_echo_ignore_all)?"
                .into()),
            (_, true, false) => {
                Err("the station's kernel answered the ping but its task did not answer within 1 s".into())
            }
            _ => Err("neither the ping echo nor the task's answer came back timestamped within 1 s".into()),
        }
    }

    /// One check stimulus: (transmit timestamp, echo, answer) came back timestamped.
    fn check_one(&mut self, sequence: u64) -> Result<(bool, bool, bool), String> {
        let mut message = [0u8; STIMULUS_ICMP_LEN];
        stimulus_message(&self.config.key, self.session, sequence, &mut message);
        let id = self.icmp_out.next_send_id();
        self.icmp_out.send_to(&message, *self.config.station.ip()).map_err(|e| e.to_string())?;
        let sent = self.icmp_out.tx_timestamp(id, 1_000).map_err(|e| e.to_string())?.is_some();
        let (mut echo, mut answer) = (false, false);
        let deadline = monotonic_ns() + 1_000_000_000;
        let mut buf = [0u8; 1536];
        let station = *self.config.station.ip();
        while !(echo && answer) {
            let now = monotonic_ns();
            if now >= deadline {
                break;
            }
            let wait_ms = ((deadline - now) / 1_000_000).max(1) as i32;
            let ready = wait_readable_any([self.icmp_in.as_raw_fd(), self.answers.as_raw_fd()], wait_ms)
                .map_err(|e| e.to_string())?;
            if ready[0] {
                if let IcmpRecv::Packet { len, from, kernel_rx_ns } =
                    self.icmp_in.recv(&mut buf).map_err(|e| e.to_string())?
                {
                    let ours = matches!(parse_echo(&self.config.key, &buf[..len], from, station),
                        Some((s, q)) if s == self.session && q == sequence);
                    if ours && kernel_rx_ns.is_none() {
                        // Came back, but untimestamped: this attempt cannot succeed.
                        return Ok((sent, false, answer));
                    }
                    echo |= ours;
                }
            }
            if ready[1] {
                if let RecvOutcome::Datagram { len, kernel_rx_ns } =
                    self.answers.recv_with_timestamp(&mut buf).map_err(|e| e.to_string())?
                {
                    let ours = matches!(parse_answer(&self.config.key, &buf[..len]),
                        Some((s, q, _)) if s == self.session && q == sequence);
                    if ours && kernel_rx_ns.is_none() {
                        return Ok((sent, echo, false));
                    }
                    answer |= ours;
                }
            }
        }
        Ok((sent, echo, answer))
    }
}

/// The probe's three sockets, all with one kind of timestamp.
struct Sockets {
    /// Echo replies (t2), filtered in the kernel.
    icmp_in: IcmpSocket,
    /// Stimuli, with transmit timestamps (t1).
    icmp_out: IcmpSocket,
    /// The station's ANSWERs (t3).
    answers: UdpReceiver,
    timestamping: Timestamping,
}

impl Sockets {
    /// Software timestamps, or with `interface` the NIC's hardware ones for all three (an
    /// error saying why when the NIC or its driver offers them not in both directions).
    fn open(interface: Option<&str>) -> Result<Sockets, String> {
        let mut icmp_in = IcmpSocket::open().map_err(|e| e.to_string())?;
        icmp_in.keep_only(ECHO_REPLY, protocol::MAGIC).map_err(|e| e.to_string())?;
        let mut icmp_out = IcmpSocket::open().map_err(|e| e.to_string())?;
        // The sending socket would otherwise queue a copy of every ICMP message.
        icmp_out.keep_only(u8::MAX, [0; 4]).map_err(|e| e.to_string())?;
        let mut answers = UdpReceiver::bind(IpAddr::V4(Ipv4Addr::UNSPECIFIED), None).map_err(|e| e.to_string())?;
        let timestamping = match interface {
            Some(name) => {
                // One socket changes the NIC's setting (both directions) and puts it back;
                // the others only read its timestamps.
                icmp_out.use_hardware(name, true).map_err(|e| format!("{name}: {e}"))?;
                icmp_in.read_hardware_timestamps(name).map_err(|e| format!("{name}: {e}"))?;
                answers.read_hardware_timestamps(name).map_err(|e| format!("{name}: {e}"))?;
                Timestamping::Hardware
            }
            None => {
                icmp_out.enable_tx_timestamps().map_err(|e| e.to_string())?;
                Timestamping::Software
            }
        };
        Ok(Sockets { icmp_in, icmp_out, answers, timestamping })
    }
}

/// HELLO from `socket` (so that the answers come back to it) until an authenticated
/// WELCOME: 3 attempts of 700 ms.
fn open_session(
    socket: &mut UdpReceiver,
    key: &Key,
    station: SocketAddrV4,
) -> Result<(u64, protocol::Welcome), String> {
    let mut out = [0u8; MAX_MESSAGE_LEN];
    let mut buf = [0u8; 2048];
    for _ in 0..3 {
        let (len, nonce) = hello(key, &mut out);
        socket.send_to(&out[..len], SocketAddr::V4(station)).map_err(|e| e.to_string())?;
        let deadline = monotonic_ns() + 700_000_000;
        loop {
            let now = monotonic_ns();
            if now >= deadline {
                break;
            }
            if !socket.wait_readable(((deadline - now) / 1_000_000).max(1) as i32).map_err(|e| e.to_string())? {
                break;
            }
            match socket.recv_with_timestamp(&mut buf) {
                Ok(RecvOutcome::Datagram { len, .. }) => {
                    if let Some(found) = accept_welcome(key, &buf[..len], &nonce) {
                        return Ok(found);
                    }
                }
                Ok(RecvOutcome::Interrupted) => {}
                // ECONNREFUSED: nothing listens on the station's port (yet).
                Err(_) => {
                    sleep_relative_ns(10_000_000).map_err(|e| e.to_string())?;
                }
            }
        }
    }
    Err(silent_station(station).to_string())
}

/// An ICMP echo request carrying STIMULUS `sequence` of `session`.
fn stimulus_message(key: &Key, session: u64, sequence: u64, out: &mut [u8; STIMULUS_ICMP_LEN]) {
    out[..8].fill(0);
    out[0] = ECHO_REQUEST;
    // Identifier and sequence of the echo: informative only (the message carries both).
    out[4..6].copy_from_slice(&(session as u16).to_be_bytes());
    out[6..8].copy_from_slice(&(sequence as u16).to_be_bytes());
    // The body (8 bytes the station echoes without reading) is unused: t1 is kept here.
    protocol::encode(key, Kind::Stimulus, session, sequence, &[0; 8], &mut out[8..]);
    let sum = internet_checksum(out);
    out[2..4].copy_from_slice(&sum.to_be_bytes());
}

/// (session, sequence) of an echo reply from `station` carrying one of our stimuli. The
/// payload is our own message, so its tag proves nothing about who echoed it: the source
/// must be the station (an on-path attacker can still forge it; docs/station.md).
fn parse_echo(key: &Key, packet: &[u8], from: Ipv4Addr, station: Ipv4Addr) -> Option<(u64, u64)> {
    if from != station {
        return None;
    }
    let ihl = usize::from(*packet.first()? & 0x0f) * 4;
    if ihl < 20 || packet.get(ihl).copied() != Some(ECHO_REPLY) {
        return None;
    }
    let (header, _) = protocol::decode(key, packet.get(ihl + 8..)?).ok()?;
    (header.kind == Kind::Stimulus).then_some((header.session, header.sequence))
}

/// (session, sequence, body) of an authenticated ANSWER.
fn parse_answer(key: &Key, message: &[u8]) -> Option<(u64, u64, Answer)> {
    let (header, body) = protocol::decode(key, message).ok()?;
    (header.kind == Kind::Answer).then(|| (header.session, header.sequence, Answer::from_body(body)))
}

/// What the trigger shares with the receiver: per slot the sequence sent and its t1.
struct SentTable {
    sequence: Vec<AtomicU64>,
    t1_ns: Vec<AtomicU64>,
    /// CLOCK_MONOTONIC of each send: where its sample is placed in time, and from when its
    /// answers are waited for.
    sent_monotonic: Vec<AtomicU64>,
    /// Stimuli of the window sent so far, and the trigger's first send (CLOCK_MONOTONIC).
    sent: AtomicU64,
    start_monotonic: AtomicU64,
    send_errors: AtomicU64,
    skipped_periods: AtomicU64,
    /// Stimuli whose t1 is the clock read before sendto (software mode: no transmit
    /// timestamp came in time). In hardware mode such a stimulus has no t1 (lost_t1).
    t1_from_clock: AtomicU64,
}

impl SentTable {
    fn new() -> Self {
        Self {
            sequence: (0..SLOTS).map(|_| AtomicU64::new(u64::MAX)).collect(),
            t1_ns: (0..SLOTS).map(|_| AtomicU64::new(0)).collect(),
            sent_monotonic: (0..SLOTS).map(|_| AtomicU64::new(0)).collect(),
            sent: AtomicU64::new(0),
            start_monotonic: AtomicU64::new(0),
            send_errors: AtomicU64::new(0),
            skipped_periods: AtomicU64::new(0),
            t1_from_clock: AtomicU64::new(0),
        }
    }

    /// When the answers to `sequence` (sent) are no longer waited for (CLOCK_MONOTONIC).
    fn due_of(&self, sequence: u64) -> u64 {
        let slot = (sequence % SLOTS as u64) as usize;
        self.sent_monotonic[slot].load(Ordering::Acquire) + ANSWER_TIMEOUT_NS
    }

    /// t1 of `sequence` if its slot still holds it and it has one (0: none).
    fn t1_of(&self, sequence: u64) -> Option<u64> {
        let slot = (sequence % SLOTS as u64) as usize;
        let t1 = self.t1_ns[slot].load(Ordering::Acquire);
        (self.sequence[slot].load(Ordering::Acquire) == sequence && t1 != 0).then_some(t1)
    }
}

impl Probe for RemoteProbe {
    fn name(&self) -> &'static str {
        "remote"
    }

    fn live(&self) -> Vec<Arc<LiveStats>> {
        vec![self.live.clone()]
    }

    fn run(self: Box<Self>, stop: Arc<AtomicBool>) -> Result<ProbeOutput, ProbeError> {
        let RemoteProbe {
            config,
            timestamping,
            hardware_refused,
            live,
            icmp_in,
            icmp_out,
            answers,
            session,
            station_delta_ns,
            recorders,
            raw_drains,
            stimuli,
            first_sequence,
        } = *self;
        let writer = RawWriter::for_drains(raw_drains)?;
        let sent = Arc::new(SentTable::new());
        let stimulus = config.stimulus;
        let period = stimulus.period_ns();
        let delta_ns = config.delta.map_or(0, |d| d.mean_ns);
        let pairing = Pairing {
            icmp: icmp_in,
            station: *config.station.ip(),
            answers,
            key: config.key.clone(),
            session,
            first_sequence,
            stimuli,
            period,
            delta_ns,
            station_delta_ns,
            recorders,
            live,
            sent: sent.clone(),
            cpu: stimulus.receiver_cpu,
            setup: config.sampling.setup,
        };
        let trigger = Trigger {
            hardware: timestamping == Timestamping::Hardware,
            icmp: icmp_out,
            key: config.key.clone(),
            station: *config.station.ip(),
            session,
            first_sequence,
            stimuli,
            period,
            sent: sent.clone(),
            cpu: stimulus.trigger_cpu,
            setup: stimulus.trigger_setup,
        };
        let (mut threads, raw_written) = run_receiver_and_trigger(
            (stimulus.receiver_cpu, format!("rtlab-remote/{}", stimulus.receiver_cpu)),
            move |group_stop, stop, ready| pairing.run(group_stop, stop, ready),
            stimulus.trigger_cpu,
            move |group_stop, ready| trigger.run(group_stop, ready),
            &stop,
            writer,
        )?;
        let mut notes = vec![match timestamping {
            Timestamping::Hardware => {
                "hardware timestamps: t1 is the NIC's transmit time of the stimulus, t2 and t3 its \
                                       receive times of the two answers (all on the NIC's clock)"
                    .to_string()
            }
            Timestamping::Software => {
                "software timestamps: t1 is the kernel's transmit time of the stimulus, t2 and t3 \
                                       its receive times of the two answers (SO_TIMESTAMPING, CLOCK_REALTIME)"
                    .to_string()
            }
        }];
        if let Some(why) = &hardware_refused {
            notes.push(format!("hardware timestamps are not available, software ones are used: {why}"));
        }
        let from_clock = sent.t1_from_clock.load(Ordering::Relaxed);
        if from_clock > 0 {
            notes.push(format!(
                "{from_clock} stimuli had no transmit timestamp in time: their t1 is this host's clock read just before \
                 sendto (see t1_from_clock)"
            ));
        }
        match config.delta {
            Some(d) if d.samples > 0 => notes.push(format!(
                "δ (this host's own latency) {} without load from {} stimuli at {} Hz as half of t2 − t1: mean {:.1} µs, \
                 SD {:.1} µs, range [{:.1}, {:.1}] µs; L_act values within ±{:.1} µs of 0 can come from δ's spread",
                if d.held {
                    "measured once before and held (probe_settings.delta_stored says where and when): calibrated"
                } else {
                    "calibrated for this run"
                },
                d.samples,
                d.rate_hz,
                d.mean_ns as f64 / 1e3,
                d.sd_ns / 1e3,
                d.min_ns as f64 / 1e3,
                d.max_ns as f64 / 1e3,
                (d.max_ns - d.min_ns) as f64 / 1e3
            )),
            Some(d) => notes.push(format!("δ given: {:.1} µs (not calibrated)", d.mean_ns as f64 / 1e3)),
            None => notes.push("calibration: δ not subtracted (remote.irq is t2 − t1)".into()),
        }
        for thread in &mut threads {
            thread.thread_name = format!("remote/{}", thread.cpu);
            let d = config.delta.unwrap_or(DeltaEstimate::given(0));
            thread.details.extend([
                ("rate_hz".to_string(), Detail::Float(stimulus.rate_hz)),
                ("trigger_cpu".to_string(), Detail::Int(stimulus.trigger_cpu as i64)),
                ("station".to_string(), Detail::Text(config.station.to_string())),
                ("timestamping".to_string(), Detail::Text(timestamping.name().into())),
                ("t1_from_clock".to_string(), Detail::Int(from_clock as i64)),
                ("station_delta_ns".to_string(), Detail::Int(station_delta_ns as i64)),
                ("delta_mean_ns".to_string(), Detail::Int(d.mean_ns)),
                ("delta_sd_ns".to_string(), Detail::Float(d.sd_ns)),
                ("delta_min_ns".to_string(), Detail::Int(d.min_ns)),
                ("delta_max_ns".to_string(), Detail::Int(d.max_ns)),
                ("delta_samples".to_string(), Detail::Int(d.samples as i64)),
                ("send_errors".to_string(), Detail::Int(sent.send_errors.load(Ordering::Relaxed) as i64)),
                (
                    "trigger_skipped_periods".to_string(),
                    Detail::Int(sent.skipped_periods.load(Ordering::Relaxed) as i64),
                ),
            ]);
        }
        Ok(ProbeOutput { probe: "remote".into(), threads, raw_written, notes })
    }
}

struct Trigger {
    /// Hardware timestamps: t1 only from the NIC (the clock is another clock).
    hardware: bool,
    icmp: IcmpSocket,
    key: Key,
    station: Ipv4Addr,
    session: u64,
    first_sequence: u64,
    stimuli: u64,
    period: u64,
    sent: Arc<SentTable>,
    cpu: usize,
    setup: crate::ThreadSetup,
}

impl Trigger {
    /// Sends the window's stimuli at the rate; t1 of each is its transmit timestamp,
    /// taken by the kernel (or NIC) as the packet leaves: the message and its tag are built
    /// before, and the wait for the timestamp after, so t2 − t1 holds neither. A stimulus
    /// counts as sent (the pairing may finalise it) once its t1 is stored.
    fn run(mut self, group_stop: &AtomicBool, ready: &AtomicBool) -> Result<(), ProbeError> {
        let cpu = self.cpu;
        let _setup = self.setup.apply(cpu)?;
        let sampling_err = |source| ProbeError::Sampling { cpu, source };
        if !wait_for_receiver(group_stop, ready).map_err(sampling_err)? {
            return Ok(());
        }
        let mut message = [0u8; STIMULUS_ICMP_LEN];
        let mut next = monotonic_ns() + self.period;
        self.sent.start_monotonic.store(next, Ordering::Release);
        let (mut index, mut send_errors, mut skipped, mut from_clock) = (0u64, 0u64, 0u64, 0u64);
        // Software transmit timestamps come with the send; a NIC's at its completion.
        let wait_ms = if self.hardware { (self.period / 2_000_000).clamp(1, 50) as i32 } else { 5 };
        while index < self.stimuli && !group_stop.load(Ordering::Relaxed) {
            if sleep_until_monotonic_ns(next).map_err(sampling_err)? == SleepOutcome::Interrupted {
                continue;
            }
            let sequence = self.first_sequence + index;
            stimulus_message(&self.key, self.session, sequence, &mut message);
            let slot = (sequence % SLOTS as u64) as usize;
            self.sent.t1_ns[slot].store(0, Ordering::Release);
            self.sent.sequence[slot].store(sequence, Ordering::Release);
            let id = self.icmp.next_send_id();
            let (before, before_monotonic) = clock_pair_ns();
            let t1 = if self.icmp.send_to(&message, self.station).is_err() {
                send_errors += 1;
                0
            } else {
                match self.icmp.tx_timestamp(id, wait_ms) {
                    Ok(Some(t1)) => t1,
                    // The NIC's clock is not this one: no t1 at all.
                    _ if self.hardware => 0,
                    _ => {
                        from_clock += 1;
                        before
                    }
                }
            };
            self.sent.sent_monotonic[slot].store(before_monotonic, Ordering::Release);
            self.sent.t1_ns[slot].store(t1, Ordering::Release);
            index += 1;
            self.sent.sent.store(index, Ordering::Release);
            next += self.period;
            let now = monotonic_ns();
            if now >= next {
                // A whole period late: skip rather than burst (answers would queue).
                let missed = (now - next) / self.period + 1;
                next += missed * self.period;
                skipped += missed;
            }
        }
        self.sent.send_errors.store(send_errors, Ordering::Relaxed);
        self.sent.skipped_periods.store(skipped, Ordering::Relaxed);
        self.sent.t1_from_clock.store(from_clock, Ordering::Relaxed);
        // The pairing's end ends the group: it still waits for the last answers (up to
        // ANSWER_TIMEOUT_NS), which a trigger ending now would cut short.
        while !group_stop.load(Ordering::Relaxed) {
            sleep_relative_ns(10_000_000).map_err(sampling_err)?;
        }
        Ok(())
    }
}

/// One stimulus in flight.
#[derive(Clone, Copy)]
struct Pending {
    sequence: u64,
    t2_ns: Option<u64>,
    t3_ns: Option<u64>,
    answer: Answer,
}

const EMPTY: Pending = Pending {
    sequence: u64::MAX,
    t2_ns: None,
    t3_ns: None,
    answer: Answer { sent_ns: 0, station_rx_ns: 0, station_wake_ns: 0, station_send_ns: 0 },
};

/// How each stimulus ended.
#[derive(Default)]
struct Accounting {
    samples: u64,
    lost_echo: u64,
    lost_answer: u64,
    lost_both: u64,
    /// The stimulus has no t1 (its send failed, or hardware mode without its transmit
    /// timestamp): not a sample, whatever came back.
    lost_t1: u64,
    /// t3 before t2: the task's answer overtook the kernel's (Δ too short).
    crossed: u64,
    /// L_act < 0 without crossing: within δ's spread.
    negative_act: u64,
    /// L_irq < 0: this stimulus's δ was smaller than δ̄ (δ's spread, as negative L_act).
    negative_irq: u64,
    /// Received but not ours: failed authentication, another session, a duplicate.
    junk: u64,
    /// Answers without a kernel timestamp (not used).
    untimestamped: u64,
    /// Samples whose ANSWER carried no station receive time (no remote.station_act).
    station_untimed: u64,
}

struct Pairing {
    icmp: IcmpSocket,
    station: Ipv4Addr,
    answers: UdpReceiver,
    key: Key,
    session: u64,
    first_sequence: u64,
    stimuli: u64,
    period: u64,
    delta_ns: i64,
    station_delta_ns: u64,
    recorders: Recorders,
    live: Arc<LiveStats>,
    sent: Arc<SentTable>,
    cpu: usize,
    setup: crate::ThreadSetup,
}

impl Pairing {
    fn run(
        mut self,
        group_stop: &AtomicBool,
        stop: &AtomicBool,
        ready: &AtomicBool,
    ) -> Result<ThreadOutput, ProbeError> {
        let cpu = self.cpu;
        let _setup = self.setup.apply(cpu)?;
        let mut pending = vec![EMPTY; SLOTS];
        let mut accounting = Accounting::default();
        ready.store(true, Ordering::Release);
        let finalized = self
            .sample_loop(group_stop, &mut pending, &mut accounting)
            .map_err(|source| ProbeError::Sampling { cpu, source })?;
        group_stop.store(true, Ordering::Relaxed);
        let interrupted = finalized < self.stimuli && stop.load(Ordering::Relaxed);
        let cycles = if interrupted { finalized } else { self.stimuli };
        let Recorders { irq, act, rtt, station_act } = self.recorders;
        let lost = irq.lost() + act.lost() + rtt.lost() + station_act.lost();
        let block_s = irq.block_s();
        let int = |v: u64| Detail::Int(v as i64);
        Ok(ThreadOutput {
            cpu,
            thread_name: String::new(),
            cycles,
            overruns: cycles.saturating_sub(accounting.samples),
            lost,
            interrupted,
            block_s,
            interval_ns: self.period,
            details: vec![
                ("lost_echo".to_string(), int(accounting.lost_echo)),
                ("lost_answer".to_string(), int(accounting.lost_answer)),
                ("lost_both".to_string(), int(accounting.lost_both)),
                ("lost_t1".to_string(), int(accounting.lost_t1)),
                ("crossed".to_string(), int(accounting.crossed)),
                ("negative_act".to_string(), int(accounting.negative_act)),
                ("negative_irq".to_string(), int(accounting.negative_irq)),
                ("junk".to_string(), int(accounting.junk)),
                ("untimestamped".to_string(), int(accounting.untimestamped)),
                ("station_untimed".to_string(), int(accounting.station_untimed)),
            ],
            metrics: vec![irq.finish(), act.finish(), rtt.finish(), station_act.finish()],
        })
    }

    /// The real-time loop: waits on both sockets, pairs echoes and answers by sequence,
    /// and finalises stimuli in order once both came or their time is up. Returns how many
    /// stimuli were finalised. Preallocated memory only; system calls: poll, recvmsg, the
    /// clock.
    fn sample_loop(
        &mut self,
        group_stop: &AtomicBool,
        pending: &mut [Pending],
        accounting: &mut Accounting,
    ) -> rtlab_sys::Result<u64> {
        let mut buf = [0u8; 1536];
        let fds = [self.icmp.as_raw_fd(), self.answers.as_raw_fd()];
        let mut next = 0u64; // index of the next stimulus to finalise
        let mut started = false;
        while next < self.stimuli {
            if group_stop.load(Ordering::Relaxed) {
                break;
            }
            // Wait until something arrives or the oldest stimulus's time is up.
            let sent = self.sent.sent.load(Ordering::Acquire);
            let wait_ms = if next < sent {
                let due = self.sent.due_of(self.first_sequence + next);
                // Rounded up: a wait of 0 ms would spin until the due time.
                due.saturating_sub(monotonic_ns()).div_ceil(1_000_000).clamp(0, 200) as i32
            } else {
                200
            };
            let ready = wait_readable_any(fds, wait_ms)?;
            if ready[0] {
                if let IcmpRecv::Packet { len, from, kernel_rx_ns } = self.icmp.recv(&mut buf)? {
                    match (parse_echo(&self.key, &buf[..len], from, self.station), kernel_rx_ns) {
                        (Some((session, sequence)), Some(t2)) if session == self.session => {
                            match self.slot(pending, sequence, next) {
                                Some(p) if p.t2_ns.is_none() => p.t2_ns = Some(t2),
                                _ => accounting.junk += 1,
                            }
                        }
                        (Some(_), None) => accounting.untimestamped += 1,
                        _ => accounting.junk += 1,
                    }
                }
            }
            if ready[1] {
                if let RecvOutcome::Datagram { len, kernel_rx_ns } = self.answers.recv_with_timestamp(&mut buf)? {
                    match (parse_answer(&self.key, &buf[..len]), kernel_rx_ns) {
                        (Some((session, sequence, answer)), Some(t3)) if session == self.session => {
                            match self.slot(pending, sequence, next) {
                                Some(p) if p.t3_ns.is_none() => {
                                    p.t3_ns = Some(t3);
                                    p.answer = answer;
                                }
                                _ => accounting.junk += 1,
                            }
                        }
                        (Some(_), None) => accounting.untimestamped += 1,
                        _ => accounting.junk += 1,
                    }
                }
            }
            // Finalise in order.
            let now = monotonic_ns();
            let sent = self.sent.sent.load(Ordering::Acquire);
            while next < sent {
                let sequence = self.first_sequence + next;
                let p = pending[(sequence % SLOTS as u64) as usize];
                let complete = p.sequence == sequence && p.t2_ns.is_some() && p.t3_ns.is_some();
                let t1 = self.sent.t1_of(sequence);
                // Without a t1 (the send failed, no hardware timestamp) it is lost_t1, but
                // its answers are still waited for so that they land here, not as junk.
                let expired = now >= self.sent.due_of(sequence);
                let complete = complete && t1.is_some();
                if !complete && !expired {
                    break;
                }
                if !started {
                    let start = self.sent.start_monotonic.load(Ordering::Acquire);
                    let r = &mut self.recorders;
                    for recorder in [&mut r.irq, &mut r.act, &mut r.rtt, &mut r.station_act] {
                        recorder.start(start);
                    }
                    started = true;
                }
                let at = self.sent.sent_monotonic[(sequence % SLOTS as u64) as usize].load(Ordering::Acquire);
                let found = if p.sequence == sequence { p } else { EMPTY };
                match (t1, found.t2_ns, found.t3_ns) {
                    (Some(t1), Some(t2), Some(t3)) => self.record(at, t1, t2, t3, found.answer, accounting),
                    (None, ..) => accounting.lost_t1 += 1,
                    (_, Some(_), None) => accounting.lost_answer += 1,
                    (_, None, Some(_)) => accounting.lost_echo += 1,
                    _ => accounting.lost_both += 1,
                }
                pending[(sequence % SLOTS as u64) as usize] = EMPTY;
                next += 1;
                let m = self.recorders.irq.moments();
                self.live.publish(m.count, next - m.count, self.recorders.irq.lost(), m.min, m.max, m.sum as i64);
            }
        }
        Ok(next)
    }

    /// The pending slot of `sequence` (claimed if free) when it belongs to the window and
    /// has not been finalised.
    fn slot<'p>(&self, pending: &'p mut [Pending], sequence: u64, next: u64) -> Option<&'p mut Pending> {
        let index = sequence.checked_sub(self.first_sequence)?;
        if index < next || index >= self.stimuli || index >= next + SLOTS as u64 {
            return None;
        }
        let p = &mut pending[(sequence % SLOTS as u64) as usize];
        if p.sequence != sequence {
            *p = Pending { sequence, ..EMPTY };
        }
        Some(p)
    }

    fn record(&mut self, at: u64, t1: u64, t2: u64, t3: u64, answer: Answer, accounting: &mut Accounting) {
        let cpu = self.cpu as u32;
        let (t1, t2, t3) = (t1 as i64, t2 as i64, t3 as i64);
        let act = t3 - t2 - self.station_delta_ns as i64;
        if t3 < t2 {
            accounting.crossed += 1;
        } else if act < 0 {
            accounting.negative_act += 1;
        }
        let irq = t2 - t1 - self.delta_ns;
        if irq < 0 {
            accounting.negative_irq += 1;
        }
        let r = &mut self.recorders;
        r.irq.record(at, irq, cpu, 0);
        r.act.record(at, act, cpu, 0);
        r.rtt.record(at, t3 - t1, cpu, 0);
        if answer.station_rx_ns != 0 && answer.station_wake_ns >= answer.station_rx_ns {
            r.station_act.record(at, (answer.station_wake_ns - answer.station_rx_ns) as i64, cpu, 0);
        } else {
            accounting.station_untimed += 1;
        }
        accounting.samples += 1;
    }
}

/// δ the paper's way: without load, the echo's round trip t2 − t1 crosses two similar
/// stacks, so δ̄ = mean(t2 − t1) / 2; its spread is that of one of the two
/// (SD / √2, range halved). Runs [`calibration_stimuli`] stimuli at `config`'s rate (lowered
/// to the station's accepted one) against the station; `config`'s budget is replaced.
pub fn calibrate(mut config: RemoteConfig, stop: Arc<AtomicBool>) -> Result<DeltaEstimate, ProbeError> {
    let stimuli = calibration_stimuli(config.stimulus.rate_hz);
    config.delta = None;
    config.calibrating = true;
    config.sampling.budget = Budget::Samples(stimuli);
    config.sampling.raw_dir = None;
    let probe = Box::new(RemoteProbe::new(config)?);
    let output = probe.run(stop)?;
    let metric = output
        .threads
        .first()
        .and_then(|t| t.metrics.iter().find(|m| m.metric == "remote.irq"))
        .ok_or_else(|| ProbeError::Config("remote: the calibration recorded nothing".into()))?;
    let m = metric.moments;
    if m.count < 10 {
        return Err(ProbeError::Unavailable {
            probe: "remote".into(),
            what: "the δ calibration".into(),
            reason: format!("only {} of {stimuli} calibration stimuli came back", m.count),
        });
    }
    // The rate it ran at: the run's, or the station's maximum when that is lower.
    let rate_hz = output
        .threads
        .first()
        .and_then(|t| t.details.iter().find(|(name, _)| name == "rate_hz"))
        .and_then(|(_, value)| match value {
            Detail::Float(rate) => Some(*rate),
            _ => None,
        })
        .unwrap_or(0.0);
    Ok(DeltaEstimate {
        mean_ns: (m.mean().unwrap_or(0.0) / 2.0).round() as i64,
        sd_ns: m.stddev().unwrap_or(0.0) / std::f64::consts::SQRT_2,
        min_ns: m.min / 2,
        max_ns: m.max / 2,
        samples: m.count,
        rate_hz,
        held: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> Key {
        Key::from_bytes(b"a test key with enough bytes for HMAC").unwrap()
    }

    #[test]
    fn the_calibration_takes_four_seconds_at_the_measurements_rate() {
        assert_eq!(calibration_stimuli(20.0), 80);
        assert_eq!(calibration_stimuli(100.0), 400);
        assert_eq!(calibration_stimuli(1_000.0), 4_000);
        assert_eq!(calibration_stimuli(1.0), CALIBRATION_MIN_STIMULI);
    }

    #[test]
    fn a_stimulus_is_a_valid_echo_request_whose_reply_parses_back() {
        let mut message = [0u8; STIMULUS_ICMP_LEN];
        stimulus_message(&key(), 77, 5, &mut message);
        assert_eq!(message[0], ECHO_REQUEST);
        assert_eq!(internet_checksum(&message), 0, "the checksum is filled in");
        assert_eq!(&message[8..12], b"RTLB");
        // The kernel's reply: IP header, type 0, same payload.
        let mut reply = vec![0x45u8; 20];
        reply.extend_from_slice(&message);
        reply[20] = ECHO_REPLY;
        let station = Ipv4Addr::new(192, 0, 2, 2);
        assert_eq!(parse_echo(&key(), &reply, station, station), Some((77, 5)));
        assert_eq!(parse_echo(&key(), &reply, Ipv4Addr::new(192, 0, 2, 9), station), None, "another source");
        assert_eq!(
            parse_echo(&Key::from_bytes(b"another key, at least 32 bytes long").unwrap(), &reply, station, station),
            None
        );
        reply[20] = ECHO_REQUEST;
        assert_eq!(parse_echo(&key(), &reply, station, station), None);
    }
}
