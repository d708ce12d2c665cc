//! rtlab-station: the second station (Regnier et al. 2008, experiment 2).
//!
//! Main types:
//! - [`protocol`]: the authenticated wire format shared by both sides ([`protocol::Key`],
//!   [`protocol::encode`], [`protocol::decode`], [`protocol::StationCounters`]);
//!   docs/station.md is its specification and threat model.
//! - [`station::Station`]: what `rtlab station` runs on the host under test: the real-time
//!   responder that answers authenticated stimuli Δ after it woke (the kernel answers the
//!   same ICMP echo request first, from its receive softirq), the control socket, the flood
//!   sink and the comms echo server.
//! - [`client::StationClient`]: the measuring side's control session (the station's
//!   counters, for the evidence that remote loads arrived).
//!
//! The measuring side's probe, which sends the stimuli and timestamps both answers, is
//! `rtlab_probe::remote`.

pub mod client;
pub mod protocol;
pub mod station;

/// Errors of the station and its client.
#[derive(Debug, thiserror::Error)]
pub enum StationError {
    #[error("{0}")]
    Config(String),
    #[error("{0}")]
    Key(String),
    #[error("{0}")]
    Silent(String),
    /// A host setting stops the station (not the user's arguments).
    #[error("{0}")]
    Host(String),
    #[error("cannot {what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Sys(#[from] rtlab_sys::SysError),
    #[error("the station's {0} thread panicked")]
    Panicked(&'static str),
}
