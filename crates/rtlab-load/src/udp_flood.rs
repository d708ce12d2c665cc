//! `udp-flood`: small UDP datagrams at a target rate (Regnier: 64 bytes, 200 kHz) to a sink.
//!
//! By default the sink is a socket of this load on 127.0.0.1, so the flood exercises the
//! network stack (softirq NET_RX, visible in /proc/softirqs) but no network card: loopback
//! raises no hardware interrupt. A `target` elsewhere is flooded only when given.

use crate::worker::{is_timeout, stop_started, Pacer, Workers, POLL_INTERVAL};
use crate::{mb, per_second, Intensity, Load, LoadError, LoadReport};
use serde::{Deserialize, Serialize};
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub const NAME: &str = "udp-flood";

/// Largest payload of one UDP datagram over IPv4.
const MAX_PAYLOAD: usize = 65_507;
/// Datagrams sent between two looks at the stop flag and the pacer.
const BATCH: u64 = 64;

/// Parameters of [`UdpFloodLoad`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct UdpFloodParams {
    /// Datagrams per second over all senders; None = as fast as possible.
    pub rate: Option<u64>,
    /// Payload bytes per datagram.
    pub payload: usize,
    /// Sending threads.
    pub senders: usize,
    /// Where to send; None = a sink of this load on 127.0.0.1.
    pub target: Option<SocketAddr>,
}

impl Default for UdpFloodParams {
    fn default() -> Self {
        Self { rate: None, payload: 64, senders: 1, target: None }
    }
}

#[derive(Default)]
struct Counters {
    sent: AtomicU64,
    send_errors: AtomicU64,
    received: AtomicU64,
    received_bytes: AtomicU64,
}

/// Floods a UDP sink with small datagrams.
pub struct UdpFloodLoad {
    params: UdpFloodParams,
    counters: Arc<Counters>,
    workers: Option<Workers>,
    target: Option<SocketAddr>,
}

impl UdpFloodLoad {
    pub fn new(params: UdpFloodParams) -> Result<Self, LoadError> {
        if params.rate == Some(0) {
            return Err(LoadError::config(NAME, "rate must be a positive number of datagrams per second"));
        }
        if params.payload == 0 || params.payload > MAX_PAYLOAD {
            return Err(LoadError::config(
                NAME,
                format!("payload must be 1 to {MAX_PAYLOAD} bytes, not {}", params.payload),
            ));
        }
        if params.senders == 0 || params.senders > 64 {
            return Err(LoadError::config(NAME, format!("senders must be 1 to 64, not {}", params.senders)));
        }
        Ok(Self { params, counters: Arc::default(), workers: None, target: None })
    }
}

impl Load for UdpFloodLoad {
    fn name(&self) -> &str {
        NAME
    }

    fn start(&mut self) -> Result<(), LoadError> {
        if self.workers.is_some() {
            return Err(LoadError::state(NAME, "already started"));
        }
        let mut workers = Workers::new(NAME);
        let target = match self.params.target {
            Some(target) => target,
            None => {
                let sink = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))
                    .map_err(|e| LoadError::io(NAME, "bind the sink on 127.0.0.1", e))?;
                sink.set_read_timeout(Some(POLL_INTERVAL)).map_err(|e| LoadError::io(NAME, "sink timeout", e))?;
                let addr = sink.local_addr().map_err(|e| LoadError::io(NAME, "sink address", e))?;
                let counters = self.counters.clone();
                let payload = self.params.payload;
                workers.spawn("load-udp-sink".into(), None, move |stop| {
                    let mut buf = vec![0u8; payload.max(2048)];
                    while !stop.load(Ordering::Relaxed) {
                        match sink.recv(&mut buf) {
                            Ok(n) => {
                                counters.received.fetch_add(1, Ordering::Relaxed);
                                counters.received_bytes.fetch_add(n as u64, Ordering::Relaxed);
                            }
                            Err(e) if is_timeout(&e) || e.kind() == std::io::ErrorKind::Interrupted => {}
                            Err(e) => return Err(format!("receive: {e}")),
                        }
                    }
                    Ok(())
                })?;
                addr
            }
        };
        let rate_per_sender = self.params.rate.map(|r| r as f64 / self.params.senders as f64);
        workers.mark_start();
        for i in 0..self.params.senders {
            let local: SocketAddr = if target.ip().is_loopback() {
                (Ipv4Addr::LOCALHOST, 0).into()
            } else {
                (Ipv4Addr::UNSPECIFIED, 0).into()
            };
            let socket = UdpSocket::bind(local).map_err(|e| LoadError::io(NAME, "bind a sender", e))?;
            socket.connect(target).map_err(|e| LoadError::io(NAME, format!("connect to {target}"), e))?;
            let counters = self.counters.clone();
            let payload = self.params.payload;
            workers.spawn(format!("load-udp-send-{i}"), None, move |stop| {
                let mut datagram = vec![0u8; payload];
                for (k, b) in datagram.iter_mut().enumerate() {
                    *b = k as u8;
                }
                let pacer = Pacer::new(rate_per_sender);
                let mut done = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let batch = pacer.allowance(done, BATCH);
                    let mut sent = 0;
                    let mut errors = 0;
                    for _ in 0..batch {
                        // Errors are counted, not fatal: ECONNREFUSED (no sink yet or any
                        // more) and ENOBUFS (queue full) are what a flood runs into.
                        match socket.send(&datagram) {
                            Ok(_) => sent += 1,
                            Err(_) => errors += 1,
                        }
                    }
                    done += batch;
                    counters.sent.fetch_add(sent, Ordering::Relaxed);
                    counters.send_errors.fetch_add(errors, Ordering::Relaxed);
                    if errors == batch && batch > 0 {
                        // Every send fails (e.g. no route): do not spin at full speed on it.
                        std::thread::sleep(std::time::Duration::from_millis(1));
                    }
                }
                Ok(())
            })?;
        }
        self.target = Some(target);
        self.workers = Some(workers);
        Ok(())
    }

    fn stop(&mut self) -> Result<LoadReport, LoadError> {
        let stopped = stop_started(&mut self.workers, NAME)?;
        let c = &self.counters;
        let (sent, errors) = (c.sent.load(Ordering::Relaxed), c.send_errors.load(Ordering::Relaxed));
        let d = stopped.duration_s;
        let mut achieved = vec![Intensity::new("packets/s sent", per_second(sent as f64, d), "packets/s")];
        if self.params.target.is_none() {
            let received = c.received.load(Ordering::Relaxed);
            achieved.push(Intensity::new("packets/s received", per_second(received as f64, d), "packets/s"));
            achieved.push(Intensity::new(
                "MB/s received",
                per_second(mb(c.received_bytes.load(Ordering::Relaxed)), d),
                "MB/s",
            ));
            achieved.push(Intensity::new("packets received", received as f64, "packets"));
        }
        achieved.push(Intensity::new("packets sent", sent as f64, "packets"));
        achieved.push(Intensity::new("send errors", errors as f64, "packets"));
        let mut parameters = serde_json::to_value(&self.params).unwrap_or_default();
        parameters["sent_to"] = self.target.map(|t| t.to_string()).into();
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
    use std::time::Duration;

    #[test]
    fn floods_the_loopback_sink() {
        let mut load = UdpFloodLoad::new(UdpFloodParams::default()).unwrap();
        let report = run_for(&mut load, Duration::from_millis(500));
        let sent = positive(&report, "packets/s sent");
        let received = positive(&report, "packets/s received");
        assert!(received <= sent * 1.01, "{report:?}");
        assert!(report.parameters["sent_to"].as_str().unwrap().starts_with("127.0.0.1:"));
    }

    #[test]
    fn keeps_a_target_rate() {
        let mut load = UdpFloodLoad::new(UdpFloodParams { rate: Some(5000), ..Default::default() }).unwrap();
        let report = run_for(&mut load, Duration::from_millis(600));
        let sent = positive(&report, "packets/s sent");
        // Paced, so never far above the target; a loaded VM may fall below it.
        assert!(sent < 5000.0 * 1.2, "{report:?}");
        assert!(sent > 5000.0 * 0.3, "{report:?}");
    }

    #[test]
    fn rejects_zero_rate_and_bad_payload() {
        for params in [
            UdpFloodParams { rate: Some(0), ..Default::default() },
            UdpFloodParams { payload: 0, ..Default::default() },
            UdpFloodParams { payload: 70_000, ..Default::default() },
            UdpFloodParams { senders: 0, ..Default::default() },
        ] {
            let err = UdpFloodLoad::new(params).err().unwrap();
            assert!(err.is_usage_error() && err.to_string().contains("udp-flood"), "{err}");
        }
    }
}
