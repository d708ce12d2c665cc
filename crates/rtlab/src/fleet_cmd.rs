//! `rtlab fleet`: the overview of every board a Prometheus server scrapes (docs/fleet.md).
//! It reads Prometheus' HTTP query API only, never the boards: [`build`] asks the queries
//! and makes the `FleetReport`; `rtlab_report::fleet` renders it.

mod build;

use crate::errors::{self, EXIT_NOT_MET, EXIT_OK};
use clap::{Args, ValueEnum};
use rtlab_analysis::requirement::{parse_requirement, Requirement, Statistic};
use rtlab_formats::prometheus::{parse_vector, PrometheusError, Sample};
use rtlab_report::fleet::{render, FleetFormat};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct FleetArgs {
    /// Prometheus' base URL (http://HOST:PORT[/PATH]), the server that scrapes the boards.
    /// Plain HTTP only: no TLS is compiled in
    #[arg(long, value_name = "URL")]
    pub prometheus: String,
    /// Requirement every board's worst of the last 24 h must meet, e.g. "timer max < 100us"
    /// (repeatable; statistic max only: Prometheus has the window maxima). Exit 1 when a
    /// board breaks one
    #[arg(long = "require", value_name = "EXPR")]
    pub require: Vec<String>,
    /// A board whose last window closed longer ago than this is silent
    #[arg(long, value_name = "DURATION", default_value = "10m")]
    pub silent_after: String,
    /// Output format
    #[arg(long, short = 'f', value_enum, default_value = "terminal")]
    pub format: FleetFormatArg,
    /// Output file (default: html to ./rtlab-fleet.html, the others to stdout)
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FleetFormatArg {
    /// Text table for a terminal
    Terminal,
    /// Markdown (GitHub tables)
    #[value(alias = "md")]
    Markdown,
    /// JSON ("schema": "rtlab.fleet/1", docs/fleet.md)
    Json,
    /// Self-contained HTML page (default: written to ./rtlab-fleet.html)
    Html,
}

/// How long one query may take, connection included.
const QUERY_TIMEOUT: Duration = Duration::from_secs(30);
/// The largest answer read (a week of host identities of a large lab is far below).
const ANSWER_LIMIT: u64 = 64 << 20;

/// The base URL without a trailing slash, or why it is not one rtlab can ask.
pub fn check_url(url: &str) -> Result<String, String> {
    let trimmed = url.trim();
    if trimmed.get(..8).is_some_and(|scheme| scheme.eq_ignore_ascii_case("https://")) {
        return Err(format!(
            "--prometheus {url}: https is not supported (rtlab fleet speaks plain HTTP, no TLS is compiled in): \
             give an http:// URL on a trusted network, or a local TLS-terminating proxy"
        ));
    }
    let usage =
        |why: &str| format!("--prometheus {url:?}: {why} (expected http://HOST:PORT, e.g. http://prometheus:9090)");
    let Some(rest) = trimmed
        .strip_prefix("http://")
        .or_else(|| trimmed.get(..7).filter(|s| s.eq_ignore_ascii_case("http://")).map(|_| &trimmed[7..]))
    else {
        return Err(usage("not an http:// URL"));
    };
    if rest.contains(['?', '#', ' ', '\t', '\n', '@']) {
        return Err(usage("no query, fragment, user or spaces allowed"));
    }
    let (authority, _path) = rest.split_once('/').unwrap_or((rest, ""));
    if authority.is_empty() || authority.starts_with(':') {
        return Err(usage("no host"));
    }
    let port = if authority.starts_with('[') {
        authority
            .split_once(']')
            .map(|(_, p)| p)
            .filter(|p| p.is_empty() || p.starts_with(':'))
            .ok_or_else(|| usage("bad IPv6 address"))?
    } else {
        authority.find(':').map_or("", |i| &authority[i..])
    };
    if let Some(p) = port.strip_prefix(':') {
        if p.parse::<u16>().ok().filter(|p| *p > 0).is_none() {
            return Err(usage("bad port"));
        }
    }
    let base = format!("http://{rest}");
    base.parse::<ureq::http::Uri>().map_err(|e| usage(&e.to_string()))?;
    Ok(base.trim_end_matches('/').to_string())
}

/// The requirements, which fleet can judge: statistic max of a metric's window maxima.
fn parse_requirements(texts: &[String]) -> anyhow::Result<Vec<Requirement>> {
    let mut out = Vec::new();
    for text in texts {
        let r = parse_requirement(text).map_err(|e| errors::usage(format!("--require: {e}")))?;
        if r.statistic != Statistic::Max {
            return Err(errors::usage(format!(
                "--require {text:?}: rtlab fleet judges max only (Prometheus keeps each window's maximum; \
                 percentiles from the coarse 1-2-5 buckets are not exact): use \"{} max < {}\"",
                r.metric,
                rtlab_analysis::requirement::format_bound(r.bound_ns)
            )));
        }
        if !r.metric.chars().all(|c| c.is_ascii_alphanumeric() || "._:-".contains(c)) {
            return Err(errors::usage(format!("--require {text:?}: metric {:?} is no rtlab metric name", r.metric)));
        }
        out.push(r);
    }
    Ok(out)
}

/// One Prometheus server's query API.
struct Client {
    agent: ureq::Agent,
    base: String,
}

impl Client {
    fn new(base: String) -> Client {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(QUERY_TIMEOUT))
            .max_redirects(0)
            .build();
        Client { agent: config.into(), base }
    }

    /// An instant query at `time` (Unix seconds).
    fn query(&self, promql: &str, time: f64) -> anyhow::Result<Vec<Sample>> {
        let url = format!("{}/api/v1/query", self.base);
        let response = self.agent.get(&url).query("query", promql).query("time", format!("{time:.3}")).call();
        let mut response = match response {
            Ok(r) => r,
            Err(
                e @ (ureq::Error::Io(_)
                | ureq::Error::ConnectionFailed
                | ureq::Error::HostNotFound
                | ureq::Error::Timeout(_)),
            ) => return Err(errors::environment(format!("cannot reach Prometheus at {}: {e}", self.base))),
            Err(e) => return Err(errors::usage(format!("{url}: not a Prometheus server: {e}"))),
        };
        let status = response.status().as_u16();
        let body = response.body_mut().with_config().limit(ANSWER_LIMIT).read_to_string().map_err(|e| match e {
            ureq::Error::Io(_) | ureq::Error::Timeout(_) => {
                errors::environment(format!("cannot read Prometheus' answer from {url}: {e}"))
            }
            e => errors::usage(format!("{url}: unreadable answer: {e}")),
        })?;
        match parse_vector(&body) {
            Ok(v) => Ok(v),
            // Prometheus answers a refusal with 400/422/503 and its JSON: its own words.
            Err(e @ PrometheusError::Refused { .. }) => {
                Err(errors::usage(format!("{} (query {promql:?}, HTTP {status})", e)))
            }
            Err(_) if !(200..300).contains(&status) => Err(errors::usage(format!(
                "{url}: HTTP {status}, not a Prometheus query API answer: is {} Prometheus?",
                self.base
            ))),
            Err(e) => Err(errors::usage(format!("{url}: {e}"))),
        }
    }
}

pub fn cmd_fleet(args: &FleetArgs) -> anyhow::Result<u8> {
    let base = check_url(&args.prometheus).map_err(errors::usage)?;
    let requirements = parse_requirements(&args.require)?;
    let silent_after_ns = rtlab_analysis::units::parse_time_ns(&args.silent_after)
        .map_err(|e| errors::usage(format!("--silent-after: {e}")))?;
    if silent_after_ns == 0 {
        return Err(errors::usage("--silent-after: must be longer than 0"));
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as f64 / 1000.0)
        .map_err(|e| errors::environment(format!("the clock is before 1970: {e}")))?;
    let client = Client::new(base.clone());
    let params =
        build::Params { prometheus: base, now_unix: now, silent_after_s: silent_after_ns as f64 / 1e9, requirements };
    let report = build::build(params, &mut |q: &str| client.query(q, now))?;
    let format = match args.format {
        FleetFormatArg::Terminal => FleetFormat::Terminal,
        FleetFormatArg::Markdown => FleetFormat::Markdown,
        FleetFormatArg::Json => FleetFormat::Json,
        FleetFormatArg::Html => FleetFormat::Html,
    };
    let document = render(&report, format)?;
    let destination = match (&args.output, args.format) {
        (Some(path), _) => Some(path.clone()),
        (None, FleetFormatArg::Html) => Some(PathBuf::from("rtlab-fleet.html")),
        (None, _) => None,
    };
    match destination {
        None => crate::print(&document)?,
        Some(path) => {
            rtlab_results::run::write_atomically(&path, document.as_bytes()).map_err(|e| {
                errors::output_error(args.output.is_some(), format!("cannot write the fleet report: {e}"))
            })?;
            let mut text = rtlab_report::fleet::summary_line(&report);
            text.push_str(&format!("\nFleet report: {}\n", path.display()));
            crate::print(&text)?;
        }
    }
    Ok(if report.any_broken() { EXIT_NOT_MET } else { EXIT_OK })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert_eq!(check_url("http://prom:9090").unwrap(), "http://prom:9090");
        assert_eq!(check_url("http://prom:9090/").unwrap(), "http://prom:9090");
        assert_eq!(check_url("http://127.0.0.1:9090/prometheus/").unwrap(), "http://127.0.0.1:9090/prometheus");
        assert_eq!(check_url("http://[::1]:9090").unwrap(), "http://[::1]:9090");
        assert_eq!(check_url("http://prom").unwrap(), "http://prom");
        assert!(check_url("https://prom:9090").unwrap_err().contains("https is not supported"));
        assert!(check_url("HTTPS://prom:9090").unwrap_err().contains("https is not supported"));
        for bad in [
            "prom:9090",
            "http://",
            "http://:9090",
            "http://prom:99999",
            "http://prom:x",
            "ftp://prom",
            "http://a b",
            "http://u@prom",
            "http://prom/?q=1",
            "",
        ] {
            assert!(check_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn requirements_of_max_only() {
        let r = parse_requirements(&["timer max < 100us".into()]).unwrap();
        assert_eq!(r[0].metric, "timer.latency");
        let e = parse_requirements(&["timer p99 < 100us".into()]).unwrap_err();
        assert!(errors::one_line(&e).contains("max only"), "{e}");
        assert_eq!(errors::exit_code_of(&e), errors::EXIT_USAGE);
        assert!(parse_requirements(&["timer max <".into()]).is_err());
    }
}
