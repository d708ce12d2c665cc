//! Loads sent from this host to a second station (`rtlab station`), as the papers sent
//! them from other machines: `remote:udp-flood@HOST[:PORT]` floods the station's sink
//! (PORT + 1), `remote:comms@HOST[:PORT]` keeps its echo server (PORT + 2) busy after
//! proving the shared key, `remote:ping-flood@HOST` floods its kernel with ICMP echo
//! requests. Parameters follow as for the local loads (`remote:udp-flood@H:rate=200000`).
//! Without `@HOST` the run's `--station` is used ([`set_station`]).
//!
//! Each is the local load pointed at the station; its report is renamed `remote:NAME`
//! and names the station. What the station received is read from its counters by the
//! runner (rtlab_station::client), not here.
//!
//! The other direction, `station:udp-flood`, `station:comms` and `station:ping-flood`
//! ([`StationLoad`]): the station sends the load to this host (Akamina's comms client and
//! the Xenomai/RTAI paper's flood ping came from another machine). This host receives it:
//! a UDP sink, a comms echo server that asks the station for the key's proof, or its
//! kernel answering pings; both sides' counts are reported. And `station:shell-loop` and
//! `station:cpu`: the station runs the load on itself (Regnier's shell loop on the measured
//! station E_M while E_L floods it); the station's counts are reported.

use crate::params::params;
use crate::{comms, mb, per_second, ping_flood, udp_flood, Intensity, Load, LoadError, LoadReport};
use rtlab_station::client::StationClient;
use rtlab_station::protocol::{Key, LoadKind, LoadRequest};
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The run's station: its control address and key file, for `remote:` loads without
/// `@HOST` and for the comms proof.
#[derive(Debug, Clone)]
pub struct RemoteStation {
    pub address: SocketAddrV4,
    pub key_file: Option<PathBuf>,
}

static STATION: Mutex<Option<RemoteStation>> = Mutex::new(None);

/// Sets the run's station (from --station and --key); the load host child gets it from
/// its command line.
pub fn set_station(station: RemoteStation) {
    *STATION.lock().unwrap_or_else(|e| e.into_inner()) = Some(station);
}

/// The station set with [`set_station`].
pub fn station() -> Option<RemoteStation> {
    STATION.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// The station's default control port.
pub const DEFAULT_PORT: u16 = 7450;
/// The remote loads, as `--load` names them.
pub const REMOTE_LOADS: [&str; 3] = ["remote:udp-flood", "remote:comms", "remote:ping-flood"];
/// The loads a station sends to this host, as `--load` names them.
pub const STATION_LOADS: [&str; 5] =
    ["station:udp-flood", "station:comms", "station:ping-flood", "station:shell-loop", "station:cpu"];

/// A local load pointed at the station, reported as `remote:NAME`.
pub struct RemoteLoad {
    name: String,
    station: SocketAddrV4,
    inner: Box<dyn Load>,
}

impl Load for RemoteLoad {
    fn name(&self) -> &str {
        &self.name
    }

    fn start(&mut self) -> Result<(), LoadError> {
        self.inner.start()
    }

    fn stop(&mut self) -> Result<LoadReport, LoadError> {
        let mut report = self.inner.stop()?;
        report.name = self.name.clone();
        report.parameters["station"] = self.station.to_string().into();
        Ok(report)
    }

    fn check_alive(&mut self) -> Option<String> {
        self.inner.check_alive()
    }
}

/// `NAME[@HOST[:PORT]][:PARAM=VALUE...]`, the part after `remote:`.
pub fn parse(spec: &str) -> Result<Box<dyn Load>, LoadError> {
    let (name, address, parts): (&str, Option<SocketAddrV4>, Vec<&str>) = match spec.split_once('@') {
        Some((name, after)) => {
            let tokens: Vec<&str> = after.split(':').collect();
            let host: Ipv4Addr = tokens[0].trim().parse().map_err(|_| {
                LoadError::config(&format!("remote:{}", name.trim()), format!("{:?} is not an IPv4 address", tokens[0]))
            })?;
            match tokens.get(1).and_then(|t| t.trim().parse::<u16>().ok()) {
                Some(port) => (name.trim(), Some(SocketAddrV4::new(host, port)), tokens[2..].to_vec()),
                None => {
                    // The run's station port when it is the same host, else the default.
                    let port = station().filter(|s| *s.address.ip() == host).map_or(DEFAULT_PORT, |s| s.address.port());
                    (name.trim(), Some(SocketAddrV4::new(host, port)), tokens[1..].to_vec())
                }
            }
        }
        None => {
            let mut tokens = spec.split(':');
            (tokens.next().unwrap_or_default().trim(), None, tokens.collect())
        }
    };
    let full_name = format!("remote:{name}");
    let station_address = match address.or_else(|| station().map(|s| s.address)) {
        Some(a) => a,
        None => {
            return Err(LoadError::config(
                &full_name,
                "which station? give @HOST[:PORT] or run with --station HOST:PORT --key FILE",
            ))
        }
    };
    let host = *station_address.ip();
    let port = station_address.port();
    if port > u16::MAX - 2 {
        return Err(LoadError::config(
            &full_name,
            format!("port {port}: the station's load ports are PORT+1 and PORT+2"),
        ));
    }
    let inner: Box<dyn Load> = match name {
        udp_flood::NAME => {
            let mut p: udp_flood::UdpFloodParams = params(udp_flood::NAME, &parts)?;
            if p.target.is_some() {
                return Err(LoadError::config(&full_name, "the target is the station's sink: drop target="));
            }
            p.target = Some(SocketAddr::V4(SocketAddrV4::new(host, port + 1)));
            Box::new(udp_flood::UdpFloodLoad::new(p)?)
        }
        comms::NAME => {
            let mut p: comms::CommsParams = params(comms::NAME, &parts)?;
            if p.peer.is_some() {
                return Err(LoadError::config(&full_name, "the peer is the station's echo server: drop peer="));
            }
            p.peer = Some(SocketAddr::V4(SocketAddrV4::new(host, port + 2)));
            p.station_key = station().and_then(|s| s.key_file);
            if p.station_key.is_none() {
                return Err(LoadError::config(
                    &full_name,
                    "the station's echo server needs the key: run with --key FILE",
                ));
            }
            Box::new(comms::CommsLoad::new(p)?)
        }
        ping_flood::NAME => {
            let mut p: ping_flood::PingFloodParams = params(ping_flood::NAME, &parts)?;
            p.target = host;
            Box::new(ping_flood::PingFloodLoad::new(p)?)
        }
        other => {
            return Err(LoadError::config(
                &format!("remote:{other}"),
                format!("unknown remote load; use one of {}", REMOTE_LOADS.join(", ")),
            ))
        }
    };
    Ok(Box::new(RemoteLoad { name: full_name, station: station_address, inner }))
}

/// Parameters of a load the station sends: `rate` in its kind's unit (datagrams/s,
/// message bytes/s sent plus echoed as `12.5MB/s`, requests/s; none: flat out) and the
/// bytes per datagram, message or request (0: the kind's default: 64, 60,000, 56).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct StationLoadParams {
    pub rate: Option<serde_json::Value>,
    pub payload: u32,
}

/// A load the station sends to this host ([`LoadKind`]), received here, or runs on itself
/// ([`LoadKind::is_local`]).
pub struct StationLoad {
    name: String,
    kind: LoadKind,
    params: StationLoadParams,
    /// datagrams/s, bytes/s or requests/s; 0: flat out.
    rate: u64,
    running: Option<RunningStationLoad>,
}

struct RunningStationLoad {
    client: Arc<std::sync::Mutex<StationClient>>,
    stop: Arc<AtomicBool>,
    received: Arc<AtomicU64>,
    received_bytes: Arc<AtomicU64>,
    /// Connections to the comms echo server without the key's proof (closed).
    refused: Arc<AtomicU64>,
    failure: Arc<std::sync::Mutex<Option<String>>>,
    threads: Vec<std::thread::JoinHandle<()>>,
    started: Instant,
    echo_replies_before: Option<u64>,
    station: SocketAddrV4,
}

/// `NAME[:PARAM=VALUE...]`, the part after `station:`.
pub fn parse_station_load(spec: &str) -> Result<Box<dyn Load>, LoadError> {
    let mut tokens = spec.split(':');
    let name = tokens.next().unwrap_or_default().trim();
    let parts: Vec<&str> = tokens.collect();
    let full_name = format!("station:{name}");
    let kind = match name {
        "udp-flood" => LoadKind::UdpFlood,
        "comms" => LoadKind::Comms,
        "ping-flood" => LoadKind::PingFlood,
        "shell-loop" => LoadKind::ShellLoop,
        "cpu" => LoadKind::Cpu,
        _ => {
            return Err(LoadError::config(
                &full_name,
                format!("unknown station load; use one of {}", STATION_LOADS.join(", ")),
            ))
        }
    };
    let params: StationLoadParams = params(&full_name, &parts)?;
    if kind.is_local() {
        // The station's own loads, as it composes them: nothing to choose.
        if params != StationLoadParams::default() {
            return Err(LoadError::config(
                &full_name,
                "runs on the station as the station composes it: no rate or payload",
            ));
        }
        return Ok(Box::new(StationLoad { name: full_name, kind, params, rate: 0, running: None }));
    }
    // The station's own limits on what it sends, refused here before anything runs.
    let most = match kind {
        LoadKind::Comms => rtlab_station::station::MAX_COMMS_MESSAGE,
        _ => rtlab_station::station::MAX_DATAGRAM_PAYLOAD,
    };
    if params.payload > most {
        return Err(LoadError::config(
            &full_name,
            format!(
                "payload={}: the station sends at most {most} bytes per {}",
                params.payload,
                match kind {
                    LoadKind::Comms => "message",
                    _ => "packet (one unfragmented IPv4 packet)",
                }
            ),
        ));
    }
    let rate = match (&params.rate, kind) {
        (None, _) | (Some(serde_json::Value::Null), _) => 0,
        (Some(text), LoadKind::Comms) => {
            let parsed: comms::CommsParams = serde_json::from_value(serde_json::json!({ "rate": text }))
                .map_err(|e| LoadError::config(&full_name, format!("rate: {e}")))?;
            parsed.rate.map_or(0, comms::ByteRate::bytes_per_s)
        }
        (Some(v), _) => match v.as_f64() {
            Some(r) if r > 0.0 && r.is_finite() => r.round() as u64,
            _ => return Err(LoadError::config(&full_name, format!("rate {v}: a positive number per second"))),
        },
    };
    Ok(Box::new(StationLoad { name: full_name, kind, params, rate, running: None }))
}

impl StationLoad {
    fn error(&self, message: impl Into<String>) -> LoadError {
        LoadError::config(&self.name, message)
    }
}

impl Load for StationLoad {
    fn name(&self) -> &str {
        &self.name
    }

    fn start(&mut self) -> Result<(), LoadError> {
        let Some(station) = station() else {
            return Err(self.error("which station? run with --station HOST:PORT --key FILE"));
        };
        let key_file = station.key_file.clone().ok_or_else(|| self.error("the station's key: run with --key FILE"))?;
        let key = Key::from_file(&key_file).map_err(|e| self.error(e.to_string()))?;
        let mut client = StationClient::connect(station.address, key.clone())
            .map_err(|e| LoadError::State { load: self.name.clone(), message: e.to_string() })?;
        let local = client.local_ip().ok_or_else(|| self.error("no IPv4 address towards the station"))?;
        let stop = Arc::new(AtomicBool::new(false));
        let received = Arc::new(AtomicU64::new(0));
        let received_bytes = Arc::new(AtomicU64::new(0));
        let refused = Arc::new(AtomicU64::new(0));
        let failure = Arc::new(std::sync::Mutex::new(None));
        let mut threads = Vec::new();
        let io = |what: &str, e: std::io::Error| LoadError::io(&self.name, what.to_string(), e);
        // This host's receiving end, on the address the station sees (not the wildcard).
        let port = match self.kind {
            LoadKind::UdpFlood => {
                let socket = UdpSocket::bind((local, 0)).map_err(|e| io("bind the UDP sink", e))?;
                socket.set_read_timeout(Some(Duration::from_millis(100))).map_err(|e| io("sink timeout", e))?;
                let port = socket.local_addr().map_err(|e| io("sink address", e))?.port();
                let (stop, received, received_bytes) = (stop.clone(), received.clone(), received_bytes.clone());
                threads.push(std::thread::spawn(move || {
                    let mut buf = [0u8; 65_536];
                    while !stop.load(Ordering::Relaxed) {
                        if let Ok(n) = socket.recv(&mut buf) {
                            received.fetch_add(1, Ordering::Relaxed);
                            received_bytes.fetch_add(n as u64, Ordering::Relaxed);
                        }
                    }
                }));
                port
            }
            LoadKind::Comms => {
                let listener =
                    TcpListener::bind((local, 0)).map_err(|e| io("listen for the station's comms client", e))?;
                listener.set_nonblocking(true).map_err(|e| io("listener", e))?;
                let port = listener.local_addr().map_err(|e| io("listener address", e))?.port();
                let (stop, received, received_bytes, refused, failure) =
                    (stop.clone(), received.clone(), received_bytes.clone(), refused.clone(), failure.clone());
                threads.push(std::thread::spawn(move || {
                    echo_server(listener, &key, &stop, &received, &received_bytes, &refused, &failure)
                }));
                port
            }
            // The station runs it on itself: nothing arrives here.
            LoadKind::PingFlood | LoadKind::ShellLoop | LoadKind::Cpu => 0,
        };
        let payload = self.params.payload;
        let request = LoadRequest { kind: self.kind, port, payload, rate: self.rate, duration_ms: MAX_DURATION_MS };
        if let Err(e) = client.start_load(request) {
            stop.store(true, Ordering::Relaxed);
            // The other host's set-up, not this command line: an environment failure.
            return Err(LoadError::State { load: self.name.clone(), message: e.to_string() });
        }
        // Keep the session alive: the station stops a load whose session falls silent 10 s.
        let client = Arc::new(std::sync::Mutex::new(client));
        {
            let (client, stop, failure) = (client.clone(), stop.clone(), failure.clone());
            threads.push(std::thread::spawn(move || {
                let mut last = Instant::now();
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(100));
                    // Under the station's 1 s that keeps a used session from being replaced.
                    if last.elapsed() >= Duration::from_millis(500) {
                        last = Instant::now();
                        // On this session: a new one would leave the load's session silent.
                        let status = client.lock().unwrap_or_else(|e| e.into_inner()).status_same_session();
                        if let Err(e) = status {
                            *failure.lock().unwrap_or_else(|e| e.into_inner()) = Some(e.to_string());
                        }
                    }
                }
            }));
        }
        self.running = Some(RunningStationLoad {
            client,
            stop,
            received,
            received_bytes,
            refused,
            failure,
            threads,
            started: Instant::now(),
            echo_replies_before: rtlab_station::station::icmp_echo_replies(),
            station: station.address,
        });
        Ok(())
    }

    fn stop(&mut self) -> Result<LoadReport, LoadError> {
        let running = self
            .running
            .take()
            .ok_or_else(|| LoadError::State { load: self.name.clone(), message: "not started".into() })?;
        let elapsed = running.started.elapsed().as_secs_f64();
        let counts = running.client.lock().unwrap_or_else(|e| e.into_inner()).stop_load(self.kind);
        running.stop.store(true, Ordering::Relaxed);
        for thread in running.threads {
            let _ = thread.join();
        }
        let counts = counts.map_err(|e| self.error(format!("stopping: {e}")))?;
        let [a, b, c, ns] = counts.unwrap_or([0; 4]);
        let station_s = ns as f64 / 1e9;
        let received = running.received.load(Ordering::Relaxed);
        let received_bytes = running.received_bytes.load(Ordering::Relaxed);
        let mut achieved = Vec::new();
        match self.kind {
            LoadKind::UdpFlood => {
                achieved.push(Intensity::new(
                    "station: datagrams/s sent",
                    per_second(a as f64, station_s),
                    "packets/s",
                ));
                achieved.push(Intensity::new("packets/s received", per_second(received as f64, elapsed), "packets/s"));
                achieved.push(Intensity::new("MB/s received", per_second(mb(received_bytes), elapsed), "MB/s"));
                achieved.push(Intensity::new("station: datagrams sent", a as f64, "packets"));
                achieved.push(Intensity::new("packets received", received as f64, "packets"));
                achieved.push(Intensity::new("station: send errors", b as f64, "packets"));
            }
            LoadKind::Comms => {
                achieved.push(Intensity::new("MB/s echoed", per_second(mb(received_bytes), elapsed), "MB/s"));
                achieved.push(Intensity::new("station: round trips/s", per_second(a as f64, station_s), "1/s"));
                achieved.push(Intensity::new("station: MB/s echoed back", per_second(mb(b), station_s), "MB/s"));
                achieved.push(Intensity::new("station: client failed", c as f64, "0 or 1"));
                let refused = running.refused.load(Ordering::Relaxed);
                achieved.push(Intensity::new("connections refused (no proof)", refused as f64, "connections"));
            }
            LoadKind::PingFlood => {
                let replies = rtlab_station::station::icmp_echo_replies()
                    .zip(running.echo_replies_before)
                    .map(|(after, before)| after.saturating_sub(before));
                achieved.push(Intensity::new(
                    "station: requests/s sent",
                    per_second(a as f64, station_s),
                    "requests/s",
                ));
                achieved.push(Intensity::new(
                    "station: echoes/s received",
                    per_second(b as f64, station_s),
                    "echoes/s",
                ));
                if let Some(r) = replies {
                    achieved.push(Intensity::new("echo replies/s (this kernel)", per_second(r as f64, elapsed), "1/s"));
                }
            }
            // The four components' counts; rates over this host's time from the LOAD_START's
            // acceptance to the LOAD_STOP (the report has no room for the station's).
            LoadKind::ShellLoop => {
                let (disk, files, compressed, builds) = (a, b, c, ns);
                achieved.push(Intensity::new("station: disk MB/s", per_second(mb(disk), elapsed), "MB/s"));
                achieved.push(Intensity::new(
                    "station: files/s searched",
                    per_second(files as f64, elapsed),
                    "files/s",
                ));
                achieved.push(Intensity::new("station: MB/s compressed", per_second(mb(compressed), elapsed), "MB/s"));
                achieved.push(Intensity::new(
                    "station: builds/min",
                    per_second(builds as f64, elapsed) * 60.0,
                    "builds/min",
                ));
                achieved.push(Intensity::new("station: disk MB", mb(disk), "MB"));
                achieved.push(Intensity::new("station: files searched", files as f64, "files"));
                achieved.push(Intensity::new("station: MB compressed", mb(compressed), "MB"));
                achieved.push(Intensity::new("station: builds", builds as f64, "builds"));
            }
            LoadKind::Cpu => {
                let (flop, cpu_ns, threads) = (a, b, c);
                achieved.push(Intensity::new("station: Mflop/s", per_second(flop as f64 / 1e6, station_s), "Mflop/s"));
                achieved.push(Intensity::new("station: CPUs busy", per_second(cpu_ns as f64 / 1e9, station_s), "CPUs"));
                achieved.push(Intensity::new("station: threads", threads as f64, "threads"));
                achieved.push(Intensity::new("station: Mflop", flop as f64 / 1e6, "Mflop"));
            }
        }
        let mut parameters = serde_json::to_value(&self.params).unwrap_or_default();
        parameters["station"] = running.station.to_string().into();
        parameters["rate_per_s"] = self.rate.into();
        let died_early = running.failure.lock().unwrap_or_else(|e| e.into_inner()).clone().or_else(|| {
            counts.is_none().then(|| {
                "the station had no such load running at the end: it stopped it (its session fell silent) or the load \
                 failed (the station's output says why)"
                    .into()
            })
        });
        Ok(LoadReport {
            name: self.name.clone(),
            parameters,
            achieved,
            cpu_seconds: None,
            died_early,
            duration_s: elapsed,
        })
    }

    fn check_alive(&mut self) -> Option<String> {
        self.running.as_ref().and_then(|r| r.failure.lock().unwrap_or_else(|e| e.into_inner()).clone())
    }
}

/// The longest a station load is asked to run (the station's own cap): a scenario ends
/// earlier and stops it.
const MAX_DURATION_MS: u64 = 24 * 3600 * 1000;

/// The echo server the station's comms client talks to: one connection at a time (the
/// station runs one client), which first proves the key (the answer to a 16-byte
/// challenge); then every byte is sent back.
fn echo_server(
    listener: TcpListener,
    key: &Key,
    stop: &AtomicBool,
    echoed: &AtomicU64,
    echoed_bytes: &AtomicU64,
    refused: &AtomicU64,
    failure: &std::sync::Mutex<Option<String>>,
) {
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((stream, _)) => match echo_connection(stream, key, stop, echoed, echoed_bytes) {
                // Anyone may connect: a connection without the proof is closed and counted,
                // it does not fail the load.
                Ok(false) => {
                    refused.fetch_add(1, Ordering::Relaxed);
                }
                Ok(true) => {}
                Err(e) => *failure.lock().unwrap_or_else(|e| e.into_inner()) = Some(format!("comms echo server: {e}")),
            },
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// Ok(false): the peer did not prove the key (closed). Err: the authenticated stream failed.
fn echo_connection(
    mut stream: TcpStream,
    key: &Key,
    stop: &AtomicBool,
    echoed: &AtomicU64,
    echoed_bytes: &AtomicU64,
) -> Result<bool, String> {
    stream.set_nonblocking(false).map_err(|e| e.to_string())?;
    let _ = stream.set_nodelay(true);
    if !key.challenge_comms_peer(&mut stream, Duration::from_secs(1)) {
        return Ok(false);
    }
    stream.set_read_timeout(Some(Duration::from_millis(100))).map_err(|e| e.to_string())?;
    // A peer that stops reading cannot hold the stop.
    stream.set_write_timeout(Some(Duration::from_secs(1))).map_err(|e| e.to_string())?;
    let mut buf = vec![0u8; 64 * 1024];
    while !stop.load(Ordering::Relaxed) {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                stream.write_all(&buf[..n]).map_err(|e| e.to_string())?;
                echoed.fetch_add(1, Ordering::Relaxed);
                echoed_bytes.fetch_add(n as u64, Ordering::Relaxed);
            }
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(_) => break,
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn station_loads_by_name_and_the_ones_it_runs_on_itself_take_no_parameters() {
        for name in STATION_LOADS {
            let load = parse_station_load(name.trim_start_matches("station:")).unwrap();
            assert_eq!(load.name(), name);
        }
        for spec in ["shell-loop:rate=10", "cpu:payload=64", "cpu:threads=2"] {
            let e = parse_station_load(spec).err().unwrap_or_else(|| panic!("{spec} accepted"));
            assert!(e.is_usage_error(), "{spec}: {e}");
        }
        let e = parse_station_load("cpu:rate=10").err().unwrap().to_string();
        assert!(e.contains("station:cpu") && e.contains("no rate or payload"), "{e}");
        let e = parse_station_load("disk").err().unwrap().to_string();
        assert!(e.contains("station:shell-loop, station:cpu"), "{e}");
    }

    #[test]
    fn remote_specs_point_the_local_loads_at_the_station() {
        let load = parse("udp-flood@192.0.2.2:7000:rate=1000").unwrap();
        assert_eq!(load.name(), "remote:udp-flood");
        let load = parse("ping-flood@192.0.2.2:rate=10").unwrap_or_else(|e| {
            // Without CAP_NET_RAW the ping flood cannot open its socket: a clear error.
            assert!(e.to_string().contains("ping-flood"), "{e}");
            parse("udp-flood@192.0.2.2").unwrap()
        });
        assert!(load.name().starts_with("remote:"));
        let bad = parse("disk@192.0.2.2").err().unwrap().to_string();
        assert!(bad.contains("unknown remote load"), "{bad}");
        let bad = parse("udp-flood@nowhere").err().unwrap().to_string();
        assert!(bad.contains("not an IPv4 address"), "{bad}");
        let bad = parse("udp-flood@192.0.2.2:target=1").err().unwrap().to_string();
        assert!(bad.contains("invalid parameters") || bad.contains("drop target"), "{bad}");
    }
}
