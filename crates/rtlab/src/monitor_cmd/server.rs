//! The read-only OpenMetrics endpoint of `rtlab monitor --listen`: GET /metrics and
//! GET /healthz, nothing else. A scrape renders the totals under the same lock that the
//! window commit takes, so it sees whole windows and no count goes backwards.

use rtlab_results::monitor::MonitorTotals;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

pub struct MetricsServer {
    server: Arc<tiny_http::Server>,
    thread: Option<JoinHandle<()>>,
    pub address: SocketAddr,
}

impl MetricsServer {
    /// Binds `address` and serves `totals` from a thread of its own.
    pub fn start(
        address: SocketAddr,
        token: Option<String>,
        totals: Arc<Mutex<MonitorTotals>>,
    ) -> anyhow::Result<Self> {
        let server = tiny_http::Server::http(address)
            .map_err(|e| crate::errors::environment(format!("--listen {address}: cannot listen there: {e}")))?;
        let address = server.server_addr().to_ip().unwrap_or(address);
        let server = Arc::new(server);
        let serving = server.clone();
        let thread = std::thread::Builder::new()
            .name("rtlab-metrics".into())
            .spawn(move || {
                for request in serving.incoming_requests() {
                    let response = answer(&request, token.as_deref(), &totals);
                    // A client that went away is its own affair.
                    let _ = request.respond(response);
                }
            })
            .map_err(|e| crate::errors::environment(format!("cannot start the metrics thread: {e}")))?;
        Ok(Self { server, thread: Some(thread), address })
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

type Response = tiny_http::Response<std::io::Cursor<Vec<u8>>>;

fn text(status: u16, body: &str, content_type: &str) -> Response {
    let header = tiny_http::Header::from_bytes(&b"Content-Type"[..], content_type.as_bytes()).expect("valid header");
    tiny_http::Response::from_string(body).with_status_code(status).with_header(header)
}

fn answer(request: &tiny_http::Request, token: Option<&str>, totals: &Mutex<MonitorTotals>) -> Response {
    if let Some(token) = token {
        let presented = request
            .headers()
            .iter()
            .find(|h| h.field.equiv("Authorization"))
            .and_then(|h| h.value.as_str().strip_prefix("Bearer "))
            .map(str::trim);
        if !presented.is_some_and(|p| same_secret(p.as_bytes(), token.as_bytes())) {
            let challenge =
                tiny_http::Header::from_bytes(&b"WWW-Authenticate"[..], &b"Bearer realm=\"rtlab\""[..]).expect("valid");
            return text(401, "a bearer token is needed\n", "text/plain; charset=utf-8").with_header(challenge);
        }
    }
    if *request.method() != tiny_http::Method::Get {
        let allow = tiny_http::Header::from_bytes(&b"Allow"[..], &b"GET"[..]).expect("valid header");
        return text(405, "only GET\n", "text/plain; charset=utf-8").with_header(allow);
    }
    // The query string (Prometheus adds none; others may) does not select anything.
    match request.url().split('?').next().unwrap_or("") {
        "/metrics" => {
            use rtlab_formats::export::monitor::{render, Flavour};
            let accept = request.headers().iter().find(|h| h.field.equiv("Accept")).map(|h| h.value.as_str());
            let flavour = Flavour::for_accept(accept);
            let body = {
                let totals = totals.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                render(&totals, flavour)
            };
            text(200, &body, flavour.content_type())
        }
        "/healthz" => text(200, "ok\n", "text/plain; charset=utf-8"),
        _ => text(404, "not found: GET /metrics or /healthz\n", "text/plain; charset=utf-8"),
    }
}

/// Compares without stopping at the first difference, so the time taken does not tell how
/// much of a guess was right.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}
