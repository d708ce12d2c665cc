//! `rtlab station`: the agent on the host under test for Regnier's experiment 2
//! (docs/station.md). It answers authenticated stimuli from the measuring host twice
//! (the kernel's ICMP echo, then its real-time task Δ later), sinks the floods and echoes
//! the comms load that host sends. With --serve-loads it also sends loads to that host and
//! runs the shell loop or cpu load on itself when asked. It runs until SIGINT/SIGTERM or
//! --duration, prints its counters every --status-every and at the end, and writes nothing
//! (the shell loop's load child writes its scratch files, and removes them).

use crate::cli::StationArgs;
use crate::errors::{environment, usage};
use rtlab_analysis::units::parse_time_ns;
use rtlab_station::protocol::{Key, StationCounters};
use rtlab_station::protocol::{LoadKind, LoadRequest};
use rtlab_station::station::{LoadLimits, LoadSource, Station, StationConfig};
use rtlab_station::StationError;
use std::net::{SocketAddr, SocketAddrV4};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

pub fn cmd_station(args: &StationArgs) -> anyhow::Result<u8> {
    let listen = match args.listen.as_deref() {
        None => SocketAddrV4::new(std::net::Ipv4Addr::LOCALHOST, rtlab_load::remote::DEFAULT_PORT),
        Some(text) => match text.trim().parse::<SocketAddr>() {
            Ok(SocketAddr::V4(a)) => a,
            Ok(SocketAddr::V6(_)) => return Err(usage(format!("--listen {text:?}: the station runs over IPv4 only"))),
            Err(_) => return Err(usage(format!("--listen {text:?}: not an IPv4 ADDRESS:PORT (e.g. 192.0.2.2:7450)"))),
        },
    };
    let key = Key::from_file(&args.key).map_err(|e| usage(format!("--key: {e}")))?;
    let delta_ns = parse_time_ns(&args.delta).map_err(|e| usage(format!("--delta: {e}")))?;
    if delta_ns > 1_000_000 {
        return Err(usage(format!("--delta {}: at most 1ms (the task busy-waits for it)", args.delta)));
    }
    if args.max_rate == 0 || args.max_rate > 100_000 {
        return Err(usage(format!("--max-rate {}: use 1 to 100000 stimuli per second", args.max_rate)));
    }
    let duration = args
        .duration
        .as_deref()
        .map(|t| parse_time_ns(t).map_err(|e| usage(format!("--duration: {e}"))))
        .transpose()?
        .map(Duration::from_nanos);
    let status_every = match args.status_every.trim() {
        "0" => Duration::ZERO,
        text => Duration::from_nanos(parse_time_ns(text).map_err(|e| usage(format!("--status-every: {e}")))?),
    };
    let online = rtlab_sys::sched::online_cpus().map_err(|e| environment(format!("cannot list the CPUs: {e}")))?;
    let cpu = match args.cpu {
        Some(cpu) if !online.contains(&cpu) => return Err(usage(format!("--cpu {cpu}: not an online CPU"))),
        Some(cpu) => cpu,
        None => *online.last().unwrap_or(&0),
    };
    let range = rtlab_sys::sched::priority_range(rtlab_sys::sched::Policy::Fifo);
    if !range.contains(&args.priority) {
        return Err(usage(format!("--priority {}: use {} to {}", args.priority, range.start(), range.end())));
    }
    let stop = crate::runner::stop_on_signals()?;
    // The responder's memory must not fault while it answers.
    let _memory = rtlab_sys::memory::MemoryLockGuard::lock_all().ok();
    if args.max_load_rate == 0 {
        return Err(usage("--max-load-rate: at least 1 per second"));
    }
    let max_load_bytes: rtlab_load::comms::ByteRate =
        args.max_load_bytes.parse().map_err(|e| usage(format!("--max-load-bytes: {e}")))?;
    let load_limits = LoadLimits { max_rate: args.max_load_rate, max_bytes_per_s: max_load_bytes.bytes_per_s() };
    let station = Station::bind(StationConfig {
        listen,
        key,
        delta_ns,
        max_rate_hz: args.max_rate,
        responder_cpu: Some(cpu),
        responder_priority: Some(args.priority),
        load_limits,
        session_idle_ns: rtlab_station::station::SESSION_IDLE_NS,
    })
    .map_err(|e| match e {
        StationError::Config(m) => usage(m),
        StationError::Host(m) => environment(m),
        other => environment(format!("{other} (the station needs root for its raw ICMP socket and SCHED_FIFO)")),
    })?;
    let station = if args.serve_loads {
        station.with_loads(std::sync::Arc::new(LoadsSent {
            key_file: args.key.clone(),
            // The CPUs this station may use (all online ones, unless started under taskset).
            cpus: rtlab_sys::sched::allowed_cpus().unwrap_or_else(|_| online.clone()),
            running: std::sync::Mutex::new(Vec::new()),
        }))
    } else {
        station
    };
    let address = station.local_addr();
    println!(
        "rtlab station: listening on {address} (sink udp/{}, comms tcp/{}); Δ {:.1} µs; real-time task on CPU {cpu} \
         at SCHED_FIFO {}; at most {} stimuli/s",
        listen.port() + 1,
        listen.port() + 2,
        delta_ns as f64 / 1e3,
        args.priority,
        args.max_rate
    );
    let counters = station.counters_handle();
    let runner = {
        let stop = stop.clone();
        std::thread::Builder::new().name("rtlab-station".into()).spawn(move || station.run(stop))?
    };
    let started = Instant::now();
    let mut last_status = Instant::now();
    while !runner.is_finished() {
        std::thread::sleep(Duration::from_millis(100));
        if duration.is_some_and(|d| started.elapsed() >= d) {
            stop.store(true, Ordering::Relaxed);
        }
        if !args.quiet && !status_every.is_zero() && last_status.elapsed() >= status_every {
            println!("{}", status_line(&counters.snapshot()));
            last_status = Instant::now();
        }
    }
    let last = runner
        .join()
        .map_err(|_| environment("the station thread panicked"))?
        .map_err(|e| environment(format!("the station stopped: {e}")))?;
    println!("{}", status_line(&last));
    Ok(0)
}

/// The loads this station sends when asked (`--serve-loads`): rtlab's own loads pointed at
/// the requesting session's address; and those it runs on itself (the shell loop, cpu), in
/// a load child process as `rtlab run` runs its loads. The station has already held each
/// request to its [`LoadLimits`] and made its rate concrete.
struct LoadsSent {
    key_file: std::path::PathBuf,
    /// The CPUs the station may use: the cpu load puts one thread on each.
    cpus: Vec<usize>,
    running: std::sync::Mutex<Vec<(LoadKind, Running)>>,
}

/// A load sent from this process, or a load child running loads on this host.
enum Running {
    Sent(Box<dyn rtlab_load::Load>),
    Here(rtlab_load::host::LoadHost),
}

impl LoadsSent {
    /// The loads of a local kind, as a scenario for the load child.
    ///
    /// The shell loop runs on every CPU of the station, the responder's (`--cpu`) included:
    /// the paper's E_M had one CPU, shared by the shell loop, the flood's interrupts and the
    /// task τ, and that contention is what its "with load" columns measure. Kept off the
    /// responder's CPU, the loop would only reach τ through caches, memory and interrupts;
    /// kept on it alone, it would spare the CPUs that take the network's interrupts.
    /// The cpu load puts one thread on each CPU the station may use (every online one unless
    /// it runs under `taskset`), so the responder's CPU has one too.
    fn local_scenario(&self, kind: LoadKind) -> String {
        match kind {
            LoadKind::ShellLoop => rtlab_load::REGNIER_SHELL_LOOP.to_string(),
            _ => {
                let list: Vec<String> = self.cpus.iter().map(usize::to_string).collect();
                format!("cpu:cpus={}", list.join(";"))
            }
        }
    }

    /// Starts a local kind's loads in a load child (`rtlab __load-host`): not under the
    /// station's mlockall, not in the responder's address space.
    fn start_here(&self, kind: LoadKind) -> Result<Running, String> {
        let exe = std::env::current_exe().map_err(|e| format!("cannot find the rtlab executable: {e}"))?;
        let host = rtlab_load::host::LoadHost::start(&exe, &self.local_scenario(kind), None, None)
            .map_err(|e| e.to_string())?;
        Ok(Running::Here(host))
    }
}

impl LoadSource for LoadsSent {
    fn start(&self, request: LoadRequest, target: SocketAddrV4) -> Result<(), String> {
        let started = self.start_load(request, target);
        if let Err(why) = &started {
            eprintln!("rtlab station: {} not started: {why}", request.kind.name());
        }
        let running = started?;
        self.running.lock().unwrap_or_else(|e| e.into_inner()).push((request.kind, running));
        Ok(())
    }

    fn stop(&self, kind: LoadKind) -> Option<[u64; 4]> {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        let index = running.iter().position(|(k, _)| *k == kind)?;
        let (_, load) = running.remove(index);
        drop(running);
        match load {
            Running::Sent(mut load) => sent_counts(kind, &load.stop().ok()?),
            Running::Here(mut host) => {
                if let Some(why) = host.check_alive() {
                    eprintln!("rtlab station: {} stopped working: {why}", kind.name());
                }
                local_counts(kind, &host.stop().ok()?)
            }
        }
    }
}

impl LoadsSent {
    fn start_load(&self, request: LoadRequest, target: SocketAddrV4) -> Result<Running, String> {
        use rtlab_load::{comms, ping_flood, udp_flood};
        let payload = request.payload as usize;
        let mut load: Box<dyn rtlab_load::Load> = match request.kind {
            LoadKind::UdpFlood => Box::new(
                udp_flood::UdpFloodLoad::new(udp_flood::UdpFloodParams {
                    rate: Some(request.rate),
                    payload,
                    senders: 1,
                    target: Some(SocketAddr::V4(target)),
                })
                .map_err(|e| e.to_string())?,
            ),
            LoadKind::Comms => Box::new(
                comms::CommsLoad::new(comms::CommsParams {
                    message_bytes: payload,
                    clients: 1,
                    peer: Some(SocketAddr::V4(target)),
                    rate: Some(comms::ByteRate::from_bytes_per_s(request.rate)),
                    station_key: Some(self.key_file.clone()),
                })
                .map_err(|e| e.to_string())?,
            ),
            LoadKind::PingFlood => Box::new(
                ping_flood::PingFloodLoad::new(ping_flood::PingFloodParams {
                    target: *target.ip(),
                    payload,
                    // Without a rate, as `ping -f`: one request in flight, paced by the replies.
                    rate: (request.rate > 0).then_some(request.rate as f64),
                    senders: 1,
                })
                .map_err(|e| e.to_string())?,
            ),
            LoadKind::ShellLoop | LoadKind::Cpu => return self.start_here(request.kind),
        };
        load.start().map_err(|e| e.to_string())?;
        Ok(Running::Sent(load))
    }
}

/// The LOAD_REPORT counts of a load sent (docs/station.md, "Loads sent by the station").
fn sent_counts(kind: LoadKind, report: &rtlab_load::LoadReport) -> Option<[u64; 4]> {
    let value = |name: &str| report.intensity(name).unwrap_or(0.0).max(0.0) as u64;
    let ns = (report.duration_s * 1e9) as u64;
    let bytes = |n: u64| n.saturating_mul(report.parameters["payload"].as_u64().unwrap_or(0));
    Some(match kind {
        LoadKind::UdpFlood => [value("packets sent"), value("send errors"), bytes(value("packets sent")), ns],
        LoadKind::Comms => {
            let size = report.parameters["message_bytes"].as_u64().unwrap_or(0);
            let trips = value("round trips");
            [trips, trips.saturating_mul(size), u64::from(report.died_early.is_some()), ns]
        }
        LoadKind::PingFlood => [value("requests sent"), value("echoes received"), 0, ns],
        LoadKind::ShellLoop | LoadKind::Cpu => return None,
    })
}

/// The LOAD_REPORT counts of a load run on the station from its load child's reports:
/// shell-loop (disk bytes written, read and copied; files searched; bytes compressed;
/// builds), cpu (floating-point operations; ns of CPU time of its threads; threads; ns it
/// ran).
fn local_counts(kind: LoadKind, reports: &[rtlab_load::LoadReport]) -> Option<[u64; 4]> {
    let report = |name: &str| reports.iter().find(|r| r.name == name);
    // A count, or a rate (per second) times the time its load ran.
    let count = |name: &str, row: &str| report(name).and_then(|r| r.intensity(row)).unwrap_or(0.0).max(0.0);
    let total = |name: &str, rows: &[&str]| {
        report(name).map_or(0.0, |r| {
            rows.iter().map(|row| r.intensity(row).unwrap_or(0.0).max(0.0)).sum::<f64>() * r.duration_s
        })
    };
    match kind {
        LoadKind::ShellLoop => Some([
            (total("disk", &["MB/s written", "MB/s read", "MB/s copied"]) * 1e6) as u64,
            count("fs-walk", "files searched") as u64,
            (total("compress", &["MB/s compressed"]) * 1e6) as u64,
            count("compile", "builds") as u64,
        ]),
        LoadKind::Cpu => {
            let cpu = report("cpu")?;
            Some([
                (count("cpu", "Mflop") * 1e6) as u64,
                (cpu.cpu_seconds.unwrap_or(0.0).max(0.0) * 1e9) as u64,
                cpu.parameters["threads"].as_u64().unwrap_or(0),
                (cpu.duration_s.max(0.0) * 1e9) as u64,
            ])
        }
        _ => None,
    }
}

/// One line of counters.
pub fn status_line(c: &StationCounters) -> String {
    format!(
        "station: answered {} (send errors {}) | dropped: rate {}, bad tag {}, malformed {}, oversized {}, wrong version {}, replayed {}, \
         unknown session {}, foreign source {}, auth limited {} | sessions {} | sink {} datagrams | comms {} bytes, {} refused",
        c.answered,
        c.answer_send_errors,
        c.rate_limited,
        c.bad_tag,
        c.malformed,
        c.oversized,
        c.wrong_version,
        c.replayed,
        c.unknown_session,
        c.foreign_source,
        c.auth_limited,
        c.sessions,
        c.sink_packets,
        c.comms_bytes,
        c.comms_refused
    )
}
