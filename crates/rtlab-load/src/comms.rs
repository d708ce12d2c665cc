//! `comms`: the Akamina communication load. A TCP server receives 60,000-byte messages,
//! copies each into an output buffer and sends it back; clients keep it busy.
//!
//! Loopback by default. With `peer`, the clients talk to an echo server elsewhere (one that
//! sends every byte back) and no local server runs.
//!
//! Flat out by default (over loopback, far more than any network the paper had). With
//! `rate` (`comms:rate=12.5MB/s`, Akamina's 100BaseT LAN) the clients pace their messages so
//! that the message bytes carried in both directions, the client's message plus the
//! server's echo, stay within the rate: a 60,000-byte round trip counts 120,000 bytes.
//! That is what a 100 Mbit/s link carries when, as in the paper, the client waits for each
//! echo before sending the next message (the link carries one message at a time). The
//! pacing is a token bucket that starts empty and holds two round trips, kept as absolute
//! times ([`Pacing`]): a client ahead of it sleeps until an absolute `CLOCK_MONOTONIC`
//! instant, so the achieved rate never exceeds the limit and does not drift below it.

use crate::worker::{read_full, stop_started, write_full, Workers, POLL_INTERVAL};
use crate::{mb, per_second, Intensity, Load, LoadError, LoadReport};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub const NAME: &str = "comms";

/// Parameters of [`CommsLoad`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CommsParams {
    /// Bytes per message (Akamina: 60,000).
    pub message_bytes: usize,
    /// Client connections, each with its own server thread.
    pub clients: usize,
    /// An echo server elsewhere; None = the load's own server on 127.0.0.1.
    pub peer: Option<SocketAddr>,
    /// Message bytes carried per second in both directions (sent plus echoed), over all
    /// clients; None (`max`) = as fast as possible.
    pub rate: Option<ByteRate>,
    /// With a station's echo server as `peer` (`remote:comms`): the key file whose proof
    /// the server asks for after connecting.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub station_key: Option<std::path::PathBuf>,
}

impl Default for CommsParams {
    fn default() -> Self {
        Self { message_bytes: 60_000, clients: 1, peer: None, rate: None, station_key: None }
    }
}

/// The units `rate` accepts, with their size in bytes per second.
const RATE_UNITS: &[(&str, f64)] = &[
    ("B/s", 1.0),
    ("kB/s", 1e3),
    ("MB/s", 1e6),
    ("GB/s", 1e9),
    ("KiB/s", 1024.0),
    ("MiB/s", 1_048_576.0),
    ("GiB/s", 1_073_741_824.0),
    ("bit/s", 0.125),
    ("kbit/s", 125.0),
    ("Mbit/s", 125e3),
    ("Gbit/s", 125e6),
];

/// The highest rate accepted: 1 TB/s, far above any link, and small enough for exact
/// integer pacing arithmetic.
const MAX_RATE: u64 = 1_000_000_000_000;

/// A rate in whole bytes per second, written with a unit: `12.5MB/s`, `100Mbit/s`,
/// `500kB/s`, `64KiB/s` (see [`RATE_UNITS`]). Shown as B/s, kB/s, MB/s or GB/s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteRate(u64);

impl ByteRate {
    pub fn from_bytes_per_s(bytes_per_s: u64) -> ByteRate {
        ByteRate(bytes_per_s)
    }

    /// Bytes per second.
    pub fn bytes_per_s(self) -> u64 {
        self.0
    }
}

fn rate_help() -> String {
    let units: Vec<&str> = RATE_UNITS.iter().map(|(u, _)| *u).collect();
    format!("a rate is a number and a unit ({}), e.g. rate=12.5MB/s, or max for no limit", units.join(", "))
}

impl std::str::FromStr for ByteRate {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let split = text.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(text.len());
        let (number, unit) = (text[..split].trim(), text[split..].trim());
        let bad = |why: &str| format!("rate {text:?}: {why}");
        if unit.is_empty() {
            return Err(bad(&format!("no unit; {}", rate_help())));
        }
        let Some(&(_, factor)) = RATE_UNITS.iter().find(|(u, _)| *u == unit) else {
            return Err(bad(&format!("unknown unit {unit:?}; {}", rate_help())));
        };
        let value: f64 = number.parse().map_err(|_| bad(&format!("{number:?} is not a number; {}", rate_help())))?;
        let bytes = (value * factor).round();
        if !bytes.is_finite() || bytes < 1.0 {
            return Err(bad("must be at least 1 B/s (use max for no limit)"));
        }
        if bytes > MAX_RATE as f64 {
            return Err(bad("must be at most 1000GB/s"));
        }
        Ok(ByteRate(bytes as u64))
    }
}

impl std::fmt::Display for ByteRate {
    /// The largest of B/s, kB/s, MB/s and GB/s that keeps the number at least 1; parses back
    /// to the same rate.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (unit, factor) = [("GB/s", 1e9), ("MB/s", 1e6), ("kB/s", 1e3)]
            .into_iter()
            .find(|(_, factor)| self.0 as f64 >= *factor)
            .unwrap_or(("B/s", 1.0));
        write!(f, "{}{unit}", self.0 as f64 / factor)
    }
}

impl Serialize for ByteRate {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ByteRate {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::{Error, Visitor};
        struct RateVisitor;
        impl Visitor<'_> for RateVisitor {
            type Value = ByteRate;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a rate with a unit, such as \"12.5MB/s\"")
            }
            fn visit_str<E: Error>(self, v: &str) -> Result<ByteRate, E> {
                v.parse().map_err(E::custom)
            }
            // A bare number (`rate=12.5`, `rate=100M`) would be ambiguous: bytes or bits?
            fn visit_u64<E: Error>(self, v: u64) -> Result<ByteRate, E> {
                Err(E::custom(format!("rate {v}: no unit; {}", rate_help())))
            }
            fn visit_i64<E: Error>(self, v: i64) -> Result<ByteRate, E> {
                Err(E::custom(format!("rate {v}: no unit; {}", rate_help())))
            }
            fn visit_f64<E: Error>(self, v: f64) -> Result<ByteRate, E> {
                Err(E::custom(format!("rate {v}: no unit; {}", rate_help())))
            }
        }
        deserializer.deserialize_any(RateVisitor)
    }
}

/// Paces one client's round trips: a token bucket that fills with bytes at the client's
/// share of the rate, starts empty, and holds at most two round trips. A round trip starts
/// when the bucket holds its bytes and takes them. So from the start no more than the rate
/// has gone out at any time (the achieved rate never exceeds the limit), and after a stall
/// the client makes up one round trip at once, not the whole of the time it lost.
///
/// Kept as GCRA's "theoretical arrival time", `tat`, in integer nanoseconds since the
/// client started. At time t the bucket holds `2 * cost - (tat - t)` (in time at the
/// rate), so a round trip may start at `tat - cost`, and each start moves `tat` on by
/// `cost` (from t, if the bucket was full). The arithmetic is exact, and the waits are
/// absolute instants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pacing {
    /// Time one round trip's bytes take at this client's share of the rate, ns.
    cost_ns: u64,
    /// The theoretical arrival time: ns since the start.
    tat_ns: u64,
}

impl Pacing {
    /// Round trips of `bytes` (message plus echo), for one of `clients` clients sharing
    /// `rate`.
    pub fn new(rate: ByteRate, clients: usize, bytes: u64) -> Self {
        let cost_ns = cost_ns(rate, clients, bytes);
        // An empty bucket: the first round trip waits for its bytes.
        Self { cost_ns, tat_ns: cost_ns.saturating_mul(2) }
    }

    /// The next round trip is ready at `now_ns` (since the start): returns when it may
    /// start, in ns since the start and never before `now_ns` (the client sleeps until
    /// then), and takes its bytes from the bucket.
    pub fn reserve(&mut self, now_ns: u64) -> u64 {
        let start = now_ns.max(self.tat_ns - self.cost_ns);
        self.tat_ns = self.tat_ns.max(start).saturating_add(self.cost_ns);
        start
    }
}

/// Time `bytes` take at one of `clients` equal shares of `rate`, in ns, rounded up (so
/// that rounding never lets the rate be exceeded).
fn cost_ns(rate: ByteRate, clients: usize, bytes: u64) -> u64 {
    let ns = bytes as u128 * clients.max(1) as u128 * 1_000_000_000;
    ns.div_ceil(rate.0 as u128).min(u64::MAX as u128 / 4) as u64
}

/// Sleeps until the absolute `CLOCK_MONOTONIC` instant `deadline_ns`, in steps of at most
/// [`POLL_INTERVAL`] to watch `stop`. Ok(false): stopped.
fn sleep_until(deadline_ns: u64, stop: &AtomicBool) -> Result<bool, String> {
    let step = POLL_INTERVAL.as_nanos() as u64;
    loop {
        if stop.load(Ordering::Relaxed) {
            return Ok(false);
        }
        let now = rtlab_sys::clock::monotonic_ns();
        if now >= deadline_ns {
            return Ok(true);
        }
        // Expired or interrupted (EINTR): either way the loop looks at the clock again.
        rtlab_sys::clock::sleep_until_monotonic_ns(deadline_ns.min(now + step))
            .map_err(|e| format!("pacing sleep: {e}"))?;
    }
}

#[derive(Default)]
struct Counters {
    /// Messages that came back to a client complete.
    round_trips: AtomicU64,
    /// Messages the server copied and sent back.
    served: AtomicU64,
    /// Round trips whose echo differed from what was sent.
    corrupted: AtomicU64,
}

/// TCP echo of large messages over loopback (or to a peer).
pub struct CommsLoad {
    params: CommsParams,
    counters: Arc<Counters>,
    workers: Option<Workers>,
    server: Option<SocketAddr>,
}

impl CommsLoad {
    pub fn new(params: CommsParams) -> Result<Self, LoadError> {
        if params.message_bytes == 0 || params.message_bytes > 64 << 20 {
            return Err(LoadError::config(
                NAME,
                format!("message size must be 1 byte to 64 MiB, not {}", params.message_bytes),
            ));
        }
        if params.clients == 0 || params.clients > 256 {
            return Err(LoadError::config(NAME, format!("clients must be 1 to 256, not {}", params.clients)));
        }
        Ok(Self { params, counters: Arc::default(), workers: None, server: None })
    }
}

fn set_timeouts(stream: &TcpStream) -> std::io::Result<()> {
    stream.set_read_timeout(Some(POLL_INTERVAL))?;
    stream.set_write_timeout(Some(POLL_INTERVAL))?;
    // Messages are large; Nagle would only delay the tail of each one.
    stream.set_nodelay(true)
}

/// Waits (polling `stop`) for one connection on a non-blocking listener.
fn accept(listener: &TcpListener, stop: &AtomicBool) -> Result<Option<TcpStream>, String> {
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((stream, _)) => {
                stream.set_nonblocking(false).map_err(|e| format!("accept: {e}"))?;
                return Ok(Some(stream));
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(5)),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("accept: {e}")),
        }
    }
    Ok(None)
}

/// The server side of one connection: receive a message, copy it, send the copy back.
fn serve(mut stream: TcpStream, size: usize, counters: &Counters, stop: &AtomicBool) -> Result<(), String> {
    set_timeouts(&stream).map_err(|e| format!("server socket: {e}"))?;
    let mut input = vec![0u8; size];
    let mut output = vec![0u8; size];
    loop {
        match read_full(&mut stream, &mut input, stop) {
            Ok(true) => {}
            Ok(false) => return Ok(()),
            Err(e) => return Err(format!("server receive: {e}")),
        }
        // The copy is part of Akamina's load: the server processes what it received.
        output.copy_from_slice(&input);
        match write_full(&mut stream, &output, stop) {
            Ok(true) => {
                counters.served.fetch_add(1, Ordering::Relaxed);
            }
            Ok(false) => return Ok(()),
            Err(e) => return Err(format!("server send: {e}")),
        }
    }
}

/// The station's echo server sends a 16-byte challenge and wants its proof
/// (docs/station.md) within 2 s.
fn prove_key(stream: &mut TcpStream, key: &rtlab_station::protocol::Key) -> std::io::Result<()> {
    use std::io::{Read, Write};
    stream.set_read_timeout(Some(Duration::from_secs(2)))?;
    let mut challenge = [0u8; 16];
    stream.read_exact(&mut challenge)?;
    stream.write_all(&key.comms_proof(&challenge))
}

/// The client side: send a message, wait for its echo, check it, repeat; with `pacing`,
/// each message waits until the rate allows its round trip.
fn client(
    mut stream: TcpStream,
    size: usize,
    seed: u8,
    mut pacing: Option<Pacing>,
    counters: &Counters,
    stop: &AtomicBool,
) -> Result<(), String> {
    set_timeouts(&stream).map_err(|e| format!("client socket: {e}"))?;
    let mut message = vec![0u8; size];
    let mut echo = vec![0u8; size];
    let mut round: u8 = 0;
    let origin = rtlab_sys::clock::monotonic_ns();
    loop {
        if let Some(pacing) = pacing.as_mut() {
            let now = rtlab_sys::clock::monotonic_ns().saturating_sub(origin);
            let start = pacing.reserve(now);
            if !sleep_until(origin + start, stop)? {
                return Ok(());
            }
        }
        // A different first byte each round, so a stale or stuck echo is noticed.
        round = round.wrapping_add(1);
        for (k, b) in message.iter_mut().enumerate().take(64) {
            *b = seed.wrapping_add(round).wrapping_add(k as u8);
        }
        match write_full(&mut stream, &message, stop) {
            Ok(true) => {}
            Ok(false) => return Ok(()),
            Err(e) => return Err(format!("client send: {e}")),
        }
        match read_full(&mut stream, &mut echo, stop) {
            Ok(true) => {}
            Ok(false) => return Ok(()),
            Err(e) => return Err(format!("client receive: {e}")),
        }
        if echo[..size.min(64)] != message[..size.min(64)] {
            counters.corrupted.fetch_add(1, Ordering::Relaxed);
        }
        counters.round_trips.fetch_add(1, Ordering::Relaxed);
    }
}

impl Load for CommsLoad {
    fn name(&self) -> &str {
        NAME
    }

    fn start(&mut self) -> Result<(), LoadError> {
        if self.workers.is_some() {
            return Err(LoadError::state(NAME, "already started"));
        }
        let mut workers = Workers::new(NAME);
        let size = self.params.message_bytes;
        let server = match self.params.peer {
            Some(peer) => peer,
            None => {
                let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
                    .map_err(|e| LoadError::io(NAME, "listen on 127.0.0.1", e))?;
                listener.set_nonblocking(true).map_err(|e| LoadError::io(NAME, "listener", e))?;
                let addr = listener.local_addr().map_err(|e| LoadError::io(NAME, "listener address", e))?;
                let listener = Arc::new(listener);
                for i in 0..self.params.clients {
                    let listener = listener.clone();
                    let counters = self.counters.clone();
                    workers.spawn(format!("load-comms-server-{i}"), None, move |stop| {
                        match accept(&listener, stop)? {
                            Some(stream) => serve(stream, size, &counters, stop),
                            None => Ok(()),
                        }
                    })?;
                }
                addr
            }
        };
        let key = match &self.params.station_key {
            Some(path) => Some(
                rtlab_station::protocol::Key::from_file(path)
                    .map_err(|e| LoadError::config(NAME, format!("station key: {e}")))?,
            ),
            None => None,
        };
        workers.mark_start();
        for i in 0..self.params.clients {
            let mut stream = TcpStream::connect_timeout(&server, Duration::from_secs(2))
                .map_err(|e| LoadError::io(NAME, format!("connect to {server}"), e))?;
            if let Some(key) = &key {
                prove_key(&mut stream, key)
                    .map_err(|e| LoadError::io(NAME, format!("prove the key to {server}"), e))?;
            }
            let counters = self.counters.clone();
            let round_trip = 2 * size as u64;
            let pacing = self.params.rate.map(|rate| Pacing::new(rate, self.params.clients, round_trip));
            workers.spawn(format!("load-comms-client-{i}"), None, move |stop| {
                client(stream, size, i as u8, pacing, &counters, stop)
            })?;
        }
        self.server = Some(server);
        self.workers = Some(workers);
        Ok(())
    }

    fn stop(&mut self) -> Result<LoadReport, LoadError> {
        let mut stopped = stop_started(&mut self.workers, NAME)?;
        let c = &self.counters;
        let round_trips = c.round_trips.load(Ordering::Relaxed);
        let corrupted = c.corrupted.load(Ordering::Relaxed);
        let d = stopped.duration_s;
        let echoed = round_trips * self.params.message_bytes as u64;
        let mut parameters = serde_json::to_value(&self.params).unwrap_or_default();
        parameters["server"] = self.server.map(|s| s.to_string()).into();
        parameters["rate_bytes_per_s"] = self.params.rate.map(ByteRate::bytes_per_s).into();
        // A corrupted echo means the load did not do what it reports: say so as an early death.
        stopped.died_early = stopped
            .died_early
            .take()
            .or_else(|| (corrupted > 0).then(|| format!("{corrupted} echoed messages differed from those sent")));
        // What `rate` limits first, and the limit beside it, so that a reader sees it held.
        let mut achieved = vec![Intensity::new("MB/s sent+echoed", per_second(mb(2 * echoed), d), "MB/s")];
        if let Some(rate) = self.params.rate {
            achieved.push(Intensity::new("MB/s limit", mb(rate.bytes_per_s()), "MB/s"));
        }
        achieved.extend([
            Intensity::new("MB/s echoed", per_second(mb(echoed), d), "MB/s"),
            Intensity::new("round trips/s", per_second(round_trips as f64, d), "round trips/s"),
            Intensity::new("round trips", round_trips as f64, "round trips"),
        ]);
        Ok(stopped.into_report(NAME, parameters, achieved))
    }

    fn check_alive(&mut self) -> Option<String> {
        self.workers.as_ref().and_then(Workers::failure)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::{positive, run_for};

    #[test]
    fn echoes_over_loopback() {
        let mut load = CommsLoad::new(CommsParams::default()).unwrap();
        let report = run_for(&mut load, Duration::from_millis(500));
        positive(&report, "MB/s echoed");
        positive(&report, "round trips/s");
        assert_eq!(report.parameters["message_bytes"], 60_000);
    }

    #[test]
    fn several_clients() {
        let mut load = CommsLoad::new(CommsParams { clients: 3, message_bytes: 1000, ..Default::default() }).unwrap();
        let report = run_for(&mut load, Duration::from_millis(300));
        positive(&report, "round trips/s");
    }

    #[test]
    fn unreachable_peer_fails_to_start() {
        // A port on loopback that nothing listens on: bind one, then close it.
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap().local_addr().unwrap();
        let mut load = CommsLoad::new(CommsParams { peer: Some(port), ..Default::default() }).unwrap();
        let err = load.start().unwrap_err();
        assert!(err.to_string().contains("connect to"), "{err}");
    }

    #[test]
    fn rejects_bad_parameters() {
        assert!(CommsLoad::new(CommsParams { message_bytes: 0, ..Default::default() }).is_err());
        assert!(CommsLoad::new(CommsParams { clients: 0, ..Default::default() }).is_err());
    }

    fn rate(text: &str) -> u64 {
        text.parse::<ByteRate>().unwrap_or_else(|e| panic!("{text}: {e}")).bytes_per_s()
    }

    #[test]
    fn parses_rates_with_units() {
        assert_eq!(rate("12.5MB/s"), 12_500_000);
        assert_eq!(rate("100Mbit/s"), 12_500_000);
        assert_eq!(rate(" 12.5 MB/s "), 12_500_000);
        assert_eq!(rate("500kB/s"), 500_000);
        assert_eq!(rate("1B/s"), 1);
        assert_eq!(rate("2GB/s"), 2_000_000_000);
        assert_eq!(rate("64KiB/s"), 65_536);
        assert_eq!(rate("1MiB/s"), 1_048_576);
        assert_eq!(rate("1GiB/s"), 1_073_741_824);
        assert_eq!(rate("8bit/s"), 1);
        assert_eq!(rate("1kbit/s"), 125);
        assert_eq!(rate("1Gbit/s"), 125_000_000);
        // Rounded to whole bytes per second.
        assert_eq!(rate("1.5kbit/s"), 188);
    }

    #[test]
    fn rejects_bad_rates_naming_the_problem() {
        for (text, needle) in [
            ("12.5", "no unit"),
            ("", "no unit"),
            ("12.5Mb/s", "unknown unit \"Mb/s\""),
            ("12.5mb/s", "unknown unit"),
            ("fast", "unknown unit"),
            ("MB/s", "\"\" is not a number"),
            ("x1MB/s", "unknown unit"),
            ("0MB/s", "at least 1 B/s"),
            ("-5MB/s", "at least 1 B/s"),
            ("0.1B/s", "at least 1 B/s"),
            ("NaNMB/s", "unknown unit"),
            ("infMB/s", "unknown unit"),
            ("2000GB/s", "at most"),
        ] {
            let err = text.parse::<ByteRate>().err().unwrap_or_else(|| panic!("{text:?} accepted"));
            assert!(err.contains(needle), "{text:?}: {err}");
            assert!(!err.contains('\n'), "one line: {err}");
        }
    }

    #[test]
    fn rates_show_in_the_largest_unit_and_parse_back() {
        for (bytes, shown) in [
            (12_500_000, "12.5MB/s"),
            (1, "1B/s"),
            (999, "999B/s"),
            (1_000, "1kB/s"),
            (65_536, "65.536kB/s"),
            (1_234_567, "1.234567MB/s"),
            (3_000_000_000, "3GB/s"),
        ] {
            assert_eq!(ByteRate(bytes).to_string(), shown);
            assert_eq!(rate(shown), bytes);
        }
    }

    #[test]
    fn rate_in_specs_and_json() {
        // Through the spec parser: units, `max`, and a bare number refused.
        let params: CommsParams = crate::params::params("comms", &["rate=12.5MB/s"]).unwrap();
        assert_eq!(params.rate, Some(ByteRate(12_500_000)));
        let params: CommsParams = crate::params::params("comms", &["rate=max"]).unwrap();
        assert_eq!(params.rate, None);
        for bare in ["rate=12.5", "rate=100M", "rate=-3"] {
            let err = crate::params::params::<CommsParams>("comms", &[bare]).unwrap_err();
            assert!(err.is_usage_error() && err.to_string().contains("no unit"), "{bare}: {err}");
        }
        // In run.json the rate is the text that parses back to it.
        let json =
            serde_json::to_value(CommsParams { rate: Some(ByteRate(12_500_000)), ..Default::default() }).unwrap();
        assert_eq!(json["rate"], "12.5MB/s");
        assert_eq!(serde_json::from_value::<CommsParams>(json).unwrap().rate, Some(ByteRate(12_500_000)));
    }

    #[test]
    fn pacing_cost_is_exact_and_rounds_up() {
        // 12.5 MB/s: a 60,000-byte round trip (120,000 bytes) takes 9.6 ms.
        assert_eq!(cost_ns(ByteRate(12_500_000), 1, 120_000), 9_600_000);
        // Shared by 3 clients: each gets a third of the rate.
        assert_eq!(cost_ns(ByteRate(12_500_000), 3, 120_000), 28_800_000);
        // 3 B/s: one byte takes 333,333,333.3 ns, rounded up so the rate is never exceeded.
        assert_eq!(cost_ns(ByteRate(3), 1, 1), 333_333_334);
        assert_eq!(cost_ns(ByteRate(MAX_RATE), 1, 1), 1);
        // The largest round trip at the lowest rate: clamped (146 years), not overflowed.
        assert_eq!(cost_ns(ByteRate(1), 256, 2 * (64 << 20)), u64::MAX / 4);
    }

    #[test]
    fn pacing_starts_each_round_trip_when_the_bucket_allows() {
        const T: u64 = 9_600_000; // a 120,000-byte round trip at 12.5 MB/s
        let mut p = Pacing::new(ByteRate(12_500_000), 1, 120_000);
        // A fast link (round trips of 0.1 ms): the bucket starts empty, so the first round
        // trip waits for its bytes; then one every T, at absolute times that do not drift
        // with the round trips' own duration.
        assert_eq!(p.reserve(0), T);
        assert_eq!(p.reserve(T + 100_000), 2 * T);
        assert_eq!(p.reserve(2 * T + 100_000), 3 * T);
        // The sleep asked for is the start less the time it was asked.
        assert_eq!(p.reserve(3 * T + 7) - (3 * T + 7), T - 7);
        // Ready late (a stall until 100 ms): goes at once; the bucket had filled to two
        // round trips, so one more goes at once, then the pace resumes from the late start.
        const S: u64 = 100_000_000;
        assert_eq!(p.reserve(S), S);
        assert_eq!(p.reserve(S + 100_000), S + 100_000);
        assert_eq!(p.reserve(S + 200_000), S + T);
        assert_eq!(p.reserve(S + T + 5), S + 2 * T);
        // Ready late by less than a round trip: goes at once, and the next keeps the
        // absolute schedule (no drift).
        assert_eq!(p.reserve(S + 3 * T + T / 2), S + 3 * T + T / 2);
        assert_eq!(p.reserve(S + 3 * T + T / 2 + 100_000), S + 4 * T);
    }

    #[test]
    fn pacing_never_exceeds_the_rate() {
        // A client that could do a round trip every 10 µs, paced at 1 MB/s with 6,000-byte
        // round trips (6 ms each), with a 20 ms stall now and then.
        let mut p = Pacing::new(ByteRate(1_000_000), 1, 6_000);
        let (mut now, mut starts) = (0u64, Vec::new());
        while now < 2_000_000_000 {
            let start = p.reserve(now);
            assert!(start >= now);
            starts.push(start);
            now = start + if starts.len() % 50 == 0 { 20_000_000 } else { 10_000 };
        }
        for (k, start) in starts.iter().enumerate() {
            // By any time t, at most rate * t bytes have started (1 byte per µs here).
            assert!((k as u64 + 1) * 6_000 <= start / 1_000, "round trip {k} at {start} ns");
            // And over any window, at most one round trip more than the rate.
            for (j, earlier) in starts[..k].iter().enumerate() {
                assert!((k - j) as u64 * 6_000 <= (start - earlier) / 1_000 + 6_000, "{j}..{k}");
            }
        }
        // It keeps up with the rate despite the stalls (each made up by one round trip):
        // 2 s x 1 MB/s / 6,000 bytes = 333 round trips, less what 6 stalls of 20 ms cost
        // beyond the one round trip each makes up: 6 x (20 - 6 - 6) ms = 48 ms, 8 round trips.
        assert_eq!(starts.iter().filter(|&&s| s < 2_000_000_000).count(), 325);
    }

    #[test]
    fn a_throttled_load_keeps_its_rate() {
        // 6 MB/s both ways: 50 round trips of 60,000 bytes per second.
        let params = CommsParams { rate: Some(ByteRate(6_000_000)), ..Default::default() };
        let mut load = CommsLoad::new(params).unwrap();
        let report = run_for(&mut load, Duration::from_millis(800));
        let carried = positive(&report, "MB/s sent+echoed");
        assert_eq!(report.intensity("MB/s limit"), Some(6.0));
        assert!(carried <= 6.0 * 1.05 + 0.3, "{report:?}");
        assert!(carried > 6.0 * 0.5, "{report:?}");
        assert_eq!(report.parameters["rate"], "6MB/s");
        assert_eq!(report.parameters["rate_bytes_per_s"], 6_000_000);
    }

    #[test]
    fn a_throttled_load_stops_promptly_while_pacing() {
        // 1 kB/s: a 60,000-byte round trip every 2 minutes, so the client sleeps while
        // asked to stop; run_for checks the stop takes less than a second.
        let params = CommsParams { rate: Some(ByteRate(1_000)), ..Default::default() };
        let mut load = CommsLoad::new(params).unwrap();
        let report = run_for(&mut load, Duration::from_millis(300));
        assert!(report.intensity("round trips").unwrap() <= 2.0, "{report:?}");
    }
}
