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

use crate::params::params;
use crate::{comms, ping_flood, udp_flood, Load, LoadError, LoadReport};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::PathBuf;
use std::sync::Mutex;

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

#[cfg(test)]
mod tests {
    use super::*;

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
