//! `comms`: the Akamina communication load. A TCP server receives 60,000-byte messages,
//! copies each into an output buffer and sends it back; clients keep it busy.
//!
//! Loopback by default. With `peer`, the clients talk to an echo server elsewhere (one that
//! sends every byte back) and no local server runs.

use crate::worker::{read_full, stop_started, write_full, Workers, POLL_INTERVAL};
use crate::{mb, per_second, Intensity, Load, LoadError, LoadReport};
use serde::{Deserialize, Serialize};
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
}

impl Default for CommsParams {
    fn default() -> Self {
        Self { message_bytes: 60_000, clients: 1, peer: None }
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

/// The client side: send a message, wait for its echo, check it, repeat.
fn client(mut stream: TcpStream, size: usize, seed: u8, counters: &Counters, stop: &AtomicBool) -> Result<(), String> {
    set_timeouts(&stream).map_err(|e| format!("client socket: {e}"))?;
    let mut message = vec![0u8; size];
    let mut echo = vec![0u8; size];
    let mut round: u8 = 0;
    loop {
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
        workers.mark_start();
        for i in 0..self.params.clients {
            let stream = TcpStream::connect_timeout(&server, Duration::from_secs(2))
                .map_err(|e| LoadError::io(NAME, format!("connect to {server}"), e))?;
            let counters = self.counters.clone();
            workers.spawn(format!("load-comms-client-{i}"), None, move |stop| {
                client(stream, size, i as u8, &counters, stop)
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
        // A corrupted echo means the load did not do what it reports: say so as an early death.
        stopped.died_early = stopped
            .died_early
            .take()
            .or_else(|| (corrupted > 0).then(|| format!("{corrupted} echoed messages differed from those sent")));
        Ok(stopped.into_report(
            NAME,
            parameters,
            vec![
                Intensity::new("MB/s echoed", per_second(mb(echoed), d), "MB/s"),
                Intensity::new("round trips/s", per_second(round_trips as f64, d), "round trips/s"),
                Intensity::new("round trips", round_trips as f64, "round trips"),
            ],
        ))
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
        let mut load = CommsLoad::new(CommsParams { clients: 3, message_bytes: 1000, peer: None }).unwrap();
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
}
