//! The read-only OpenMetrics endpoint of `rtlab monitor --listen`: GET /metrics and
//! GET /healthz, nothing else. A scrape renders the totals under the same lock that the
//! window commit takes, so it sees whole windows and no count goes backwards.
//!
//! Written on std's TcpListener rather than an HTTP crate: the monitor locks its memory
//! (mlockall), so every thread's stack is resident, and tiny_http's thread per connection
//! let 500 idle connections hold 1.1 GB. Here a fixed pool of small threads serves one
//! request per connection, each bounded in size and time: a flood of connections or junk
//! costs scrapes (they wait), never memory, and never the measuring threads.

use rtlab_formats::export::monitor::{render, Flavour};
use rtlab_results::monitor::MonitorTotals;
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Threads that answer requests: Prometheus scrapes one at a time; the others keep the
/// endpoint answering while a few clients dawdle.
const WORKERS: usize = 8;
/// Each worker's stack (locked in memory like everything else).
const WORKER_STACK: usize = 256 * 1024;
/// The largest request head read; a longer one is refused.
const MAX_REQUEST: usize = 8 * 1024;
/// How long a client may take to send its request head (Prometheus sends it at once).
const HEAD_DEADLINE: Duration = Duration::from_secs(1);
/// How long a client may take to take the answer.
const DEADLINE: Duration = Duration::from_secs(2);

pub struct MetricsServer {
    stopping: Arc<AtomicBool>,
    workers: Vec<JoinHandle<()>>,
    pub address: SocketAddr,
}

impl MetricsServer {
    /// Binds `address` and serves `totals` from a few threads of its own.
    pub fn start(
        address: SocketAddr,
        token: Option<String>,
        totals: Arc<Mutex<MonitorTotals>>,
    ) -> anyhow::Result<Self> {
        let listen_error =
            |e: std::io::Error| crate::errors::environment(format!("--listen {address}: cannot listen there: {e}"));
        let listener = TcpListener::bind(address).map_err(listen_error)?;
        let address = listener.local_addr().map_err(listen_error)?;
        let stopping = Arc::new(AtomicBool::new(false));
        let token: Arc<Option<String>> = Arc::new(token);
        let mut workers = Vec::with_capacity(WORKERS);
        for n in 0..WORKERS {
            let listener = listener.try_clone().map_err(listen_error)?;
            let (stopping, token, totals) = (stopping.clone(), token.clone(), totals.clone());
            let worker = std::thread::Builder::new()
                .name(format!("rtlab-metrics/{n}"))
                .stack_size(WORKER_STACK)
                .spawn(move || {
                    for stream in listener.incoming() {
                        if stopping.load(Ordering::SeqCst) {
                            break;
                        }
                        match stream {
                            // A client that misbehaves or goes away is its own affair.
                            Ok(stream) => drop(serve(stream, (*token).as_deref(), &totals)),
                            // Out of descriptors (a flood): wait rather than spin on accept.
                            Err(_) => std::thread::sleep(Duration::from_millis(50)),
                        }
                    }
                })
                .map_err(|e| crate::errors::environment(format!("cannot start the metrics threads: {e}")))?;
            workers.push(worker);
        }
        Ok(Self { stopping, workers, address })
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        // Each worker waits in accept(): one connection apiece wakes them to see the flag.
        let wake = match self.address.ip() {
            IpAddr::V4(ip) if ip.is_unspecified() => {
                SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), self.address.port())
            }
            IpAddr::V6(ip) if ip.is_unspecified() => {
                SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), self.address.port())
            }
            _ => self.address,
        };
        for _ in 0..self.workers.len() {
            let _ = TcpStream::connect_timeout(&wake, DEADLINE);
        }
        for worker in self.workers.drain(..) {
            let _ = worker.join();
        }
    }
}

/// One request on `stream`, answered and closed.
fn serve(mut stream: TcpStream, token: Option<&str>, totals: &Mutex<MonitorTotals>) -> std::io::Result<()> {
    stream.set_write_timeout(Some(DEADLINE))?;
    let (status, content_type, body) = match read_head(&mut stream) {
        Ok(head) => answer(&head, token, totals),
        Err(HeadError::TooLarge) => (431, TEXT, "request too large\n".to_string()),
        Err(HeadError::Malformed) => (400, TEXT, "not an HTTP request\n".to_string()),
        // Nothing usable arrived in time, or the client left: no answer.
        Err(HeadError::Io(e)) => return Err(e),
    };
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        405 => "Method Not Allowed",
        _ => "Request Header Fields Too Large",
    };
    let mut head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    match status {
        401 => head.push_str("WWW-Authenticate: Bearer realm=\"rtlab\"\r\n"),
        405 => head.push_str("Allow: GET\r\n"),
        _ => {}
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(body.as_bytes())?;
    stream.flush()
}

const TEXT: &str = "text/plain; charset=utf-8";

/// The parts of a request the endpoint looks at.
struct Head {
    method: String,
    path: String,
    authorization: Option<String>,
    accept: Option<String>,
}

enum HeadError {
    TooLarge,
    Malformed,
    Io(std::io::Error),
}

/// Reads the request line and headers (up to the blank line), within [`MAX_REQUEST`] bytes
/// and [`HEAD_DEADLINE`]; a body, if any, is not read.
fn read_head(stream: &mut TcpStream) -> Result<Head, HeadError> {
    let started = Instant::now();
    let mut buffer = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    let end = loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break end;
        }
        if buffer.len() >= MAX_REQUEST {
            return Err(HeadError::TooLarge);
        }
        let left = HEAD_DEADLINE.checked_sub(started.elapsed()).filter(|d| !d.is_zero());
        let Some(left) = left else {
            return Err(HeadError::Io(std::io::ErrorKind::TimedOut.into()));
        };
        stream.set_read_timeout(Some(left)).map_err(HeadError::Io)?;
        match stream.read(&mut chunk) {
            Ok(0) => return Err(HeadError::Malformed),
            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(HeadError::Io(e)),
        }
    };
    let text = std::str::from_utf8(&buffer[..end]).map_err(|_| HeadError::Malformed)?;
    let mut lines = text.split("\r\n");
    let mut request_line = lines.next().unwrap_or("").split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (request_line.next(), request_line.next(), request_line.next(), request_line.next())
    else {
        return Err(HeadError::Malformed);
    };
    if !version.starts_with("HTTP/1.") || method.is_empty() || !target.starts_with('/') {
        return Err(HeadError::Malformed);
    }
    let mut head = Head { method: method.into(), path: target.into(), authorization: None, accept: None };
    for line in lines {
        let (name, value) = line.split_once(':').ok_or(HeadError::Malformed)?;
        if name.eq_ignore_ascii_case("authorization") {
            head.authorization = Some(value.trim().to_string());
        } else if name.eq_ignore_ascii_case("accept") {
            head.accept = Some(value.trim().to_string());
        }
    }
    Ok(head)
}

fn answer(head: &Head, token: Option<&str>, totals: &Mutex<MonitorTotals>) -> (u16, &'static str, String) {
    if let Some(token) = token {
        let presented = head.authorization.as_deref().and_then(|a| a.strip_prefix("Bearer ")).map(str::trim);
        if !presented.is_some_and(|p| same_secret(p.as_bytes(), token.as_bytes())) {
            return (401, TEXT, "a bearer token is needed\n".into());
        }
    }
    if head.method != "GET" {
        return (405, TEXT, "only GET\n".into());
    }
    // The query string (Prometheus adds none; others may) does not select anything.
    match head.path.split('?').next().unwrap_or("") {
        "/metrics" => {
            let flavour = Flavour::for_accept(head.accept.as_deref());
            let body = {
                let totals = totals.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                render(&totals, flavour)
            };
            (200, flavour.content_type(), body)
        }
        "/healthz" => (200, TEXT, "ok\n".into()),
        _ => (404, TEXT, "not found: GET /metrics or /healthz\n".into()),
    }
}

/// Compares a presented secret with the token in a time that depends on the presented
/// length only: no stop at the first difference (the time would tell how much of a guess
/// was right) and none at a length mismatch (it would tell the token's length).
fn same_secret(presented: &[u8], token: &[u8]) -> bool {
    if token.is_empty() {
        return false;
    }
    let mut diff = (presented.len() ^ token.len()) as u64;
    for (i, byte) in presented.iter().enumerate() {
        diff |= u64::from(byte ^ token[i % token.len()]);
    }
    // Keeps the compiler from turning the loop back into an early exit.
    std::hint::black_box(diff) == 0
}

#[cfg(test)]
mod tests {
    use super::same_secret;

    #[test]
    fn secrets_match_only_whole() {
        let token = b"s3cret-token-for-the-test";
        assert!(same_secret(token, token));
        assert!(!same_secret(b"s3cret-token-for-the-tesT", token), "same length, last byte differs");
        assert!(!same_secret(b"s3cret-token-for-the-tes", token), "a prefix");
        assert!(!same_secret(b"s3cret-token-for-the-tests3cret-token-for-the-test", token), "the token twice");
        assert!(!same_secret(b"", token));
        assert!(!same_secret(b"", b""), "no token matches nothing");
    }
}
