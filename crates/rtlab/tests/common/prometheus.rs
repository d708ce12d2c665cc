//! A real Prometheus server (Debian's `prometheus`) for the tests, on loopback, killed on
//! every path out of a test. Where it is not installed, [`available`] says so, and fails
//! under CI=true (`./run-tests` installs it as root).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

pub const PROMETHEUS: &str = "/usr/bin/prometheus";
pub const PROMTOOL: &str = "/usr/bin/promtool";

/// Whether `tool` is installed; without it, a test returns early, except under CI=true,
/// where it fails: the real part must have run.
pub fn available(tool: &str) -> bool {
    if Path::new(tool).is_file() {
        return true;
    }
    let why = format!("{tool} is not installed (apt-get install prometheus; ./run-tests does it as root)");
    assert!(std::env::var("CI").as_deref() != Ok("true"), "{why}: CI=true needs the real Prometheus");
    eprintln!("not run: {why}");
    false
}

/// A port nothing listens on now (bound, then released).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A running Prometheus.
pub struct Prometheus {
    child: Child,
    pub port: u16,
    log: PathBuf,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            if let Ok(log) = std::fs::read_to_string(&self.log) {
                let tail: Vec<&str> = log.lines().rev().take(30).collect();
                eprintln!("prometheus log (last lines):\n{}", tail.into_iter().rev().collect::<Vec<_>>().join("\n"));
            }
        }
    }
}

impl Prometheus {
    /// Starts Prometheus with `config` (prometheus.yml's text) and its data under `dir`.
    pub fn start(dir: &Path, config: &str) -> Prometheus {
        let config_path = dir.join("prometheus.yml");
        std::fs::write(&config_path, config).unwrap();
        let port = free_port();
        let log = dir.join("prometheus.log");
        let child = std::process::Command::new(PROMETHEUS)
            .arg(format!("--config.file={}", config_path.display()))
            .arg(format!("--storage.tsdb.path={}", dir.join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("start prometheus");
        Prometheus { child, port, log }
    }

    /// An instant query's `data.result` (None while Prometheus is not answering yet).
    pub fn query(&self, promql: &str) -> Option<Vec<serde_json::Value>> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        stream.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
        write!(stream, "GET /api/v1/query?query={} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", encode(promql)).ok()?;
        let mut response = String::new();
        stream.read_to_string(&mut response).ok()?;
        let (_, body) = response.split_once("\r\n\r\n")?;
        let value: serde_json::Value = serde_json::from_str(body).ok()?;
        value["data"]["result"].as_array().cloned()
    }

    /// Waits (at most `timeout`) until `promql` returns at least `series` series whose
    /// value is at least `at_least`.
    pub fn wait_for(&self, promql: &str, series: usize, at_least: f64, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        loop {
            let met = self
                .query(promql)
                .map(|r| r.iter().filter(|s| value_of(s).is_some_and(|v| v >= at_least)).count())
                .unwrap_or(0);
            if met >= series {
                return;
            }
            assert!(Instant::now() < deadline, "{promql}: not {series} series >= {at_least} within {timeout:?}");
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

/// The value of one series of an instant vector.
pub fn value_of(series: &serde_json::Value) -> Option<f64> {
    series["value"][1].as_str()?.parse().ok()
}

/// `s` percent-encoded for a query string.
pub fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
