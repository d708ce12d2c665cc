//! `rtlab history DB`: the OSADL views of a monitor database (docs/history.md). The
//! statistics are `rtlab_history`'s (into `rtlab_results::history::report`'s types), the
//! renderers `rtlab_report::history`; here: the command line, the times people type, and
//! where the output goes.

use crate::errors::{self, usage, EXIT_OK};
use clap::{Args, ValueEnum};
use rtlab_history::HistoryDb;
use rtlab_report::history::{render, HistoryFormat};
use rtlab_results::history::range::TimeRange;
use rtlab_results::history::report::HistoryQuery;
use std::path::{Path, PathBuf};

/// How times are given (`--since`, `--until`, the ends of `--before`/`--after`), in the help.
const TIMES: &str = "T: RFC 3339 (2026-11-20T10:00:00Z, 2026-11-20T11:00:00+01:00), a UTC date or date and time \
                     (2026-11-20, 2026-11-20 10:00), a time ago (7d, 12h, 30m, 1h30m, 2w), or now";

#[derive(Debug, Args)]
#[command(after_help = TIMES)]
pub struct HistoryArgs {
    /// The monitor database (rtlab monitor --db)
    #[arg(value_name = "DB")]
    pub db: PathBuf,
    /// Start of the range: rows that end after T (default: the first row)
    #[arg(long, value_name = "T")]
    pub since: Option<String>,
    /// End of the range: rows that start before T (default: the last row)
    #[arg(long, value_name = "T")]
    pub until: Option<String>,
    /// The metric of the views [default: timer.latency, or timerlat.thread for a history of
    /// `rtlab monitor -P timerlat` only]
    #[arg(long)]
    pub metric: Option<String>,
    /// Only the windows of this load-schedule phase (rtlab monitor --schedule), e.g. idle
    /// [default: every phase together]
    #[arg(long, value_name = "NAME")]
    pub phase: Option<String>,
    /// Output format
    #[arg(long, short = 'f', value_enum, default_value = "terminal")]
    pub format: HistoryFormatArg,
    /// Output file (default: html to DB's directory as <DB name>-history.html, the others to
    /// stdout)
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
    /// The first range of the regression check, T..T (either end may be left out: "..2026-11-20",
    /// "14d..7d") [default: before the last kernel change of the range]
    #[arg(long, value_name = "RANGE", requires = "after")]
    pub before: Option<String>,
    /// The second range of the regression check, T..T [default: from the last kernel change on]
    #[arg(long, value_name = "RANGE", requires = "before")]
    pub after: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HistoryFormatArg {
    /// Text for a terminal
    Terminal,
    /// Markdown (GitHub tables)
    #[value(alias = "md")]
    Markdown,
    /// JSON ("schema": "rtlab.history/1", docs/history.md)
    Json,
    /// Self-contained HTML page with figures (default: written beside the database)
    Html,
}

/// Unix ns of a time as people give it (see [`TIMES`]), relative times counted back from
/// `now_ns`.
pub fn parse_time(text: &str, now_ns: i64) -> Result<i64, String> {
    use chrono::{DateTime, NaiveDate, NaiveDateTime};
    let t = text.trim();
    let bad = || format!("{t:?} is not a time ({TIMES})");
    let of = |dt: DateTime<chrono::Utc>| dt.timestamp_nanos_opt().ok_or_else(bad);
    if t.eq_ignore_ascii_case("now") {
        return Ok(now_ns);
    }
    if let Ok(dt) = DateTime::parse_from_rfc3339(t) {
        return of(dt.with_timezone(&chrono::Utc));
    }
    for format in ["%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M"] {
        if let Ok(naive) = NaiveDateTime::parse_from_str(t, format) {
            return of(naive.and_utc());
        }
    }
    if let Ok(date) = NaiveDate::parse_from_str(t, "%Y-%m-%d") {
        return of(date.and_hms_opt(0, 0, 0).ok_or_else(bad)?.and_utc());
    }
    // A time ago: "7d", "2w", "1h30m".
    let ago = match t.strip_suffix('w').and_then(|n| n.parse::<u32>().ok()) {
        Some(weeks) => u64::from(weeks).checked_mul(7 * 86_400_000_000_000),
        None if t.starts_with(|c: char| c.is_ascii_digit()) => rtlab_analysis::units::parse_time_ns(t).ok(),
        None => None,
    };
    let ago = ago.and_then(|a| i64::try_from(a).ok()).ok_or_else(bad)?;
    Ok(now_ns.saturating_sub(ago))
}

/// `--since`/`--until` as a range; `since` after `until` is an error.
pub fn parse_range(since: Option<&str>, until: Option<&str>, now_ns: i64) -> anyhow::Result<TimeRange> {
    let since_ns = since.map(|t| parse_time(t, now_ns).map_err(|e| usage(format!("--since: {e}")))).transpose()?;
    let until_ns = until.map(|t| parse_time(t, now_ns).map_err(|e| usage(format!("--until: {e}")))).transpose()?;
    if let (Some(s), Some(u)) = (since_ns, until_ns) {
        if s >= u {
            return Err(usage(format!(
                "--since {} is not before --until {}",
                since.unwrap_or(""),
                until.unwrap_or("")
            )));
        }
    }
    Ok(TimeRange::new(since_ns, until_ns))
}

/// "T..T" (either end may be left out).
fn parse_span(flag: &str, text: &str, now_ns: i64) -> anyhow::Result<TimeRange> {
    let Some((a, b)) = text.split_once("..") else {
        return Err(usage(format!("--{flag} {text:?}: expected a range T..T, e.g. 2026-11-01..2026-11-08 or 14d..7d")));
    };
    fn end(t: &str) -> Option<&str> {
        (!t.trim().is_empty()).then_some(t)
    }
    parse_range(end(a), end(b), now_ns).map_err(|e| usage(format!("--{flag}: {}", errors::one_line(&e))))
}

pub fn now_ns() -> i64 {
    chrono::Utc::now().timestamp_nanos_opt().unwrap_or(i64::MAX)
}

/// Where the HTML page goes without --output: beside the database, "<name>-history.html".
fn default_html_path(db: &Path) -> PathBuf {
    let stem = db.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "monitor".into());
    db.parent().unwrap_or(Path::new(".")).join(format!("{stem}-history.html"))
}

/// The main metric of the history's probe: timerlat.thread when every session measured with
/// the timerlat tracer, timer.latency otherwise.
fn default_metric(db: &HistoryDb) -> anyhow::Result<String> {
    let sessions = db.sessions()?;
    let timerlat_only = !sessions.is_empty() && sessions.iter().all(|s| s.settings.probe == "timerlat");
    Ok(if timerlat_only { "timerlat.thread" } else { "timer.latency" }.to_string())
}

pub fn cmd_history(args: &HistoryArgs) -> anyhow::Result<u8> {
    let now = now_ns();
    let range = parse_range(args.since.as_deref(), args.until.as_deref(), now)?;
    let compare = match (&args.before, &args.after) {
        (Some(b), Some(a)) => Some((parse_span("before", b, now)?, parse_span("after", a, now)?)),
        _ => None,
    };
    let db = HistoryDb::open_existing(&args.db)?;
    let metric = match &args.metric {
        Some(metric) => metric.clone(),
        None => default_metric(&db)?,
    };
    let report = db.history_report(&HistoryQuery { range, metric, compare, phase: args.phase.clone() })?;
    let format = match args.format {
        HistoryFormatArg::Terminal => HistoryFormat::Terminal,
        HistoryFormatArg::Markdown => HistoryFormat::Markdown,
        HistoryFormatArg::Json => HistoryFormat::Json,
        HistoryFormatArg::Html => HistoryFormat::Html,
    };
    let document = render(&report, format)?;
    let destination = match (&args.output, format) {
        (Some(path), _) => Some(path.clone()),
        (None, HistoryFormat::Html) => Some(default_html_path(&args.db)),
        (None, _) => None,
    };
    match destination {
        None => crate::print(&document)?,
        Some(path) => {
            rtlab_results::run::write_atomically(&path, document.as_bytes()).map_err(|e| {
                errors::output_error(args.output.is_some(), format!("cannot write {}: {e}", path.display()))
            })?;
            let mut text = format!("{}\n", rtlab_report::history::subtitle(&report));
            if let Some(r) = &report.regression {
                text.push_str(&format!("Regression check ({}): {}\n", r.basis, r.headline));
            }
            text.push_str(&format!("History: {}\n", path.display()));
            crate::print(&text)?;
        }
    }
    Ok(EXIT_OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_795_132_800_000_000_000; // 2026-11-20T00:00:00Z

    #[test]
    fn times_as_people_give_them() {
        let hour = 3_600_000_000_000i64;
        assert_eq!(parse_time("2026-11-20", 0), Ok(NOW));
        assert_eq!(parse_time("2026-11-20T01:00:00Z", 0), Ok(NOW + hour));
        assert_eq!(parse_time("2026-11-20T02:00:00+01:00", 0), Ok(NOW + hour));
        assert_eq!(parse_time("2026-11-20 01:00", 0), Ok(NOW + hour));
        assert_eq!(parse_time("2026-11-20T01:00:30", 0), Ok(NOW + hour + 30_000_000_000));
        assert_eq!(parse_time("7d", NOW), Ok(NOW - 7 * 24 * hour));
        assert_eq!(parse_time("2w", NOW), Ok(NOW - 14 * 24 * hour));
        assert_eq!(parse_time("1h30m", NOW), Ok(NOW - 3 * hour / 2));
        assert_eq!(parse_time("now", NOW), Ok(NOW));
        for bad in ["yesterday", "2026-13-01", "7", "-7d", ""] {
            assert!(parse_time(bad, NOW).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn ranges() {
        let day = 86_400_000_000_000i64;
        assert_eq!(
            parse_span("before", "14d..7d", NOW).unwrap(),
            TimeRange::new(Some(NOW - 14 * day), Some(NOW - 7 * day))
        );
        assert_eq!(parse_span("after", "2026-11-20..", NOW).unwrap(), TimeRange::new(Some(NOW), None));
        assert!(parse_span("after", "2026-11-20", NOW).is_err());
        assert!(parse_range(Some("1d"), Some("2d"), NOW).is_err(), "since after until");
    }
}
