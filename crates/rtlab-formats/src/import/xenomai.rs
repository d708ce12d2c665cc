//! Xenomai `latency` output -> [`ParsedSource`]: the console log and/or the `-g` gnuplot
//! histogram file, recognised by content (a log has `RTx|` lines).
//!
//! The layouts, as testsuite/latency/latency.c prints them (Xenomai 2.6 and 3.x):
//!
//! ```text
//! == Sampling period: 100 us
//! RTT|  00:00:01  (periodic user-mode task, 100 us period, priority 99)
//! RTH|----lat min|----lat avg|----lat max|-overrun|---msw|---lat best|--lat worst
//! RTD|      0.723|      2.302|      3.740|       0|     0|      0.723|      3.740
//! HSD|    avg|   0 -  1 |    12345          (-h: bucket index range, hits)
//! ---|-----------|-----------|-----------|--------|------|-------------------------
//! RTS|      0.088|      0.464|      2.297|       0|     0|    00:01:00/00:01:00
//! ```
//!
//! One RTD line per second of samples (1 s / period of them): that second's min, average
//! and max, then the overruns and mode switches so far, the best and worst so far. Values
//! are µs with three decimals (exact ns). The `-g` file (3.x) starts with `# ` lines: the
//! duration, mode, period and priority, the overall min, avg, max, overruns and mode
//! switches, then `xeno-config --info` (Xenomai version, `uname -a`, ...); Xenomai 2.6
//! writes no header. Then `start·B 1` (an edge), one `(n + 0.5)·B count + 1` line per bucket
//! n from the first to the last non-empty one (B = -B in ns / 1000, default 1 µs: the
//! bucket centre in µs, the count plus one for log plots), and `(stop + 1)·B 1` (an edge).
//! The histogram holds every sample after the 1 s warm-up, each in bucket |latency| / B:
//! negative latencies are folded onto their absolute values, and the last of the -H cells
//! (default 300) collects everything beyond it. B is not written: it is the spacing of
//! the lines.

use super::{text_lines, ImportError, ImportOptions, ParsedSource, Series, SeriesData, SourceFile, SourceHistogram};
use rtlab_results::host::Policy;
use rtlab_results::run::Detail;
use std::collections::BTreeMap;

pub const LOG_LAYOUT: &str = "xenomai-latency";
pub const HISTOGRAM_LAYOUT: &str = "xenomai-histogram";

/// latency's default bucket size (-B), in ns.
const DEFAULT_BUCKET_NS: u64 = 1000;

/// Overall figures, as an RTS line or the -g header states them.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Totals {
    min_ns: i64,
    avg_ns: i64,
    max_ns: i64,
    overruns: u64,
    mode_switches: Option<u64>,
}

/// The test set-up an RTT line, `== ` lines or the -g header state.
#[derive(Debug, Clone, Default, PartialEq)]
struct Setup {
    period_us: Option<u64>,
    priority: Option<i32>,
    mode: Option<String>,
    cpu: Option<usize>,
}

#[derive(Debug, Clone, Copy)]
struct Second {
    min_ns: i64,
    avg_ns: i64,
    max_ns: i64,
    overruns: u64,
    mode_switches: Option<u64>,
}

/// A -g histogram: bucket n holds |latency| in [n·W, (n+1)·W).
#[derive(Debug, Clone)]
struct Histogram {
    width_ns: u64,
    /// (bucket index, hits), consecutive from the first to the last non-empty bucket.
    buckets: Vec<(u64, u64)>,
}

#[derive(Debug, Default)]
struct Log {
    setup: Setup,
    setup_line: Option<usize>,
    columns: Option<Vec<String>>,
    seconds: Vec<(usize, Second)>,
    summary: Option<(usize, Totals, Option<u64>)>,
    /// -h: the "avg" histogram (every sample) by bucket index.
    hsd: BTreeMap<u64, u64>,
    hsd_line: Option<usize>,
    /// -h/-s: the "avg" histogram's total.
    hss_total: Option<(usize, u64)>,
    /// `-g -` writes the histogram into the log.
    gnuplot: Vec<(usize, String)>,
    skipped: Vec<usize>,
    warned_mode_switches: bool,
}

#[derive(Debug, Default)]
struct GnuplotFile {
    setup: Setup,
    header_line: usize,
    totals: Option<(usize, Totals)>,
    duration_s: Option<u64>,
    version: Option<String>,
    host: super::SourceHost,
    histogram: Option<(usize, Histogram)>,
    continuation_lines: usize,
}

/// `--unit` does not apply (the files state µs) and `--interval` is applied by `build_run`.
pub fn parse(files: &[SourceFile], _options: &ImportOptions) -> Result<ParsedSource, ImportError> {
    let mut log: Option<(&str, Log)> = None;
    let mut gnuplot: Option<(&str, GnuplotFile)> = None;
    let mut parsed = ParsedSource::default();
    for file in files {
        let lines = text_lines(file)?;
        let path = file.path.as_str();
        if lines.iter().any(|(_, l)| is_log_line(l)) {
            if log.is_some() {
                return Err(ImportError::whole(path, "a second latency log: give one run's log and/or its -g file"));
            }
            log = Some((path, parse_log(path, &lines)?));
            parsed.layouts.push(LOG_LAYOUT.to_string());
        } else {
            if gnuplot.is_some() {
                return Err(ImportError::whole(path, "a second -g histogram: give one run's log and/or its -g file"));
            }
            let owned: Vec<(usize, String)> = lines.iter().map(|&(n, l)| (n, l.to_string())).collect();
            gnuplot = Some((path, parse_gnuplot(path, &owned)?));
            parsed.layouts.push(HISTOGRAM_LAYOUT.to_string());
        }
    }
    // `-g -` puts the histogram into the log itself (comment lines alone are not one).
    let inline = match &log {
        Some((path, log)) if log.gnuplot.iter().any(|(_, l)| is_data_pair(l)) => {
            Some((*path, parse_gnuplot(path, &log.gnuplot)?))
        }
        _ => None,
    };
    if gnuplot.is_some() && inline.is_some() {
        return Err(ImportError::whole(
            files.first().map_or("xenomai", |f| f.path.as_str()),
            "the log holds a -g histogram already (`-g -`) and a -g file was given too",
        ));
    }
    let gnuplot = gnuplot.or(inline);

    // The set-up: the log's RTT / "==" lines, the -g header; they must agree.
    let mut setup = Setup::default();
    for (source, line, other) in [
        (
            log.as_ref().map(|(p, _)| *p),
            log.as_ref().and_then(|(_, l)| l.setup_line),
            log.as_ref().map(|(_, l)| &l.setup),
        ),
        (
            gnuplot.as_ref().map(|(p, _)| *p),
            gnuplot.as_ref().map(|(_, g)| g.header_line),
            gnuplot.as_ref().map(|(_, g)| &g.setup),
        ),
    ] {
        let (Some(path), Some(other)) = (source, other) else { continue };
        let line = line.unwrap_or(1);
        merge_field(&mut setup.period_us, other.period_us, path, line, "period in µs")?;
        merge_field(&mut setup.priority, other.priority, path, line, "priority")?;
        merge_field(&mut setup.mode, other.mode.clone(), path, line, "test mode")?;
        merge_field(&mut setup.cpu, other.cpu, path, line, "CPU")?;
    }

    // Overall figures: the log's RTS line, the -g header, or the RTD lines; they must agree.
    let log_totals = log.as_ref().and_then(|(path, log)| log.summary.map(|(line, totals, _)| (*path, line, totals)));
    let header_totals = gnuplot.as_ref().and_then(|(path, g)| g.totals.map(|(line, totals)| (*path, line, totals)));
    if let (Some((log_path, _, a)), Some((path, line, b))) = (log_totals, header_totals) {
        if (a.min_ns, a.max_ns, a.overruns) != (b.min_ns, b.max_ns, b.overruns) {
            return Err(ImportError::at(
                path,
                line,
                format!(
                    "min/max/overruns {} / {} µs / {} disagree with {log_path}'s RTS line ({} / {} µs / {}): are both \
                     files from the same run?",
                    micros(b.min_ns),
                    micros(b.max_ns),
                    b.overruns,
                    micros(a.min_ns),
                    micros(a.max_ns),
                    a.overruns
                ),
            ));
        }
    }
    let from_seconds = log.as_ref().and_then(|(_, log)| totals_of_seconds(&log.seconds));
    let totals = log_totals.map(|(_, _, t)| t).or(header_totals.map(|(_, _, t)| t)).or(from_seconds);
    if log_totals.is_none() && header_totals.is_none() && from_seconds.is_some() {
        parsed.notes.push("no RTS line (the log was cut short?): min, average and max come from the RTD lines".into());
    }

    // The distribution: the -g histogram, else the log's HSD lines (-h), whose width is
    // latency's default rather than read.
    let mut width_assumed = false;
    let mut histogram = gnuplot.as_ref().and_then(|(path, g)| g.histogram.clone().map(|(line, h)| (*path, line, h)));
    if let Some((path, log)) = &log {
        if !log.hsd.is_empty() {
            let line = log.hsd_line.unwrap_or(1);
            let hsd = histogram_of_hsd(path, line, &log.hsd)?;
            match &histogram {
                Some((g_path, _, h)) => {
                    if total_hits(&hsd) != total_hits(h) {
                        return Err(ImportError::at(
                            path,
                            line,
                            format!(
                                "the HSD avg histogram holds {:?} samples, {g_path}'s {:?}: not the same run?",
                                total_hits(&hsd),
                                total_hits(h)
                            ),
                        ));
                    }
                }
                None => {
                    parsed.assumed.push(
                        "bucket width 1 µs: the log's HSD lines number the buckets but do not record -B (latency's \
                         default)"
                            .into(),
                    );
                    histogram = Some((*path, line, hsd));
                    width_assumed = true;
                }
            }
        }
        if let (Some((line, total)), Some((_, _, h))) = (log.hss_total, &histogram) {
            if total_hits(h) != Some(total) {
                return Err(ImportError::at(
                    path,
                    line,
                    format!("HSS avg counts {total} samples, the histogram {:?}", total_hits(h)),
                ));
            }
        }
    }

    let data = match (&histogram, totals) {
        (Some((path, line, h)), totals) => {
            let source = source_histogram(h, totals, width_assumed, &mut parsed.notes).map_err(|why| {
                let hint = if width_assumed {
                    ": the HSD buckets do not fit latency's default -B of 1 µs, so the run used another; give its -g \
                     file, whose line spacing records -B"
                } else {
                    ""
                };
                ImportError::at(path, *line, format!("{why}{hint}"))
            })?;
            SeriesData::Histogram(source)
        }
        (None, Some(t)) => {
            parsed.notes.push(
                "the log alone records min, average and max (and each second's max), not the distribution: give the \
                 file written with latency -g for percentiles"
                    .into(),
            );
            SeriesData::SummaryOnly { min_ns: t.min_ns, avg_ns: t.avg_ns as f64, max_ns: t.max_ns }
        }
        (None, None) => {
            let path = files.first().map_or("xenomai", |f| f.path.as_str());
            return Err(ImportError::whole(path, "no RTD, RTS or histogram line: latency measured nothing here"));
        }
    };

    let mut series = Series::new("timer", "timer.latency", setup.cpu, "latency", data);
    if let Some((_, log)) = &log {
        series.per_second_max_ns = log.seconds.iter().map(|(_, s)| Some(s.max_ns)).collect();
        let last = log.seconds.last().map(|(_, s)| s);
        series.overruns = log.summary.map(|(_, t, _)| t.overruns).or(last.map(|s| s.overruns));
        if let Some(switches) = log.summary.and_then(|(_, t, _)| t.mode_switches).or(last.and_then(|s| s.mode_switches))
        {
            series.details.insert("mode_switches".into(), Detail::Int(switches as i64));
        }
        if log.warned_mode_switches {
            parsed.notes.push("latency warned that some peaks may be due to involuntary mode switches".into());
        }
        if !log.skipped.is_empty() {
            parsed.notes.push(format!(
                "{} lines of the log are not latency's (from line {}) and were not read",
                log.skipped.len(),
                log.skipped.first().copied().unwrap_or(0)
            ));
        }
        if let Some((_, _, Some(duration))) = log.summary {
            parsed.duration_s = Some(duration as f64);
        }
    }
    if let Some((_, g)) = &gnuplot {
        if series.overruns.is_none() {
            series.overruns = g.totals.map(|(_, t)| t.overruns);
        }
        if let Some(switches) = g.totals.and_then(|(_, t)| t.mode_switches) {
            series.details.entry("mode_switches".into()).or_insert(Detail::Int(switches as i64));
        }
        if parsed.duration_s.is_none() {
            parsed.duration_s = g.duration_s.map(|d| d as f64);
        }
        parsed.host = g.host.clone();
        if g.continuation_lines > 0 {
            parsed.notes.push(format!(
                "{} lines of xeno-config --info in the -g header lack their \"# \" (multi-line build arguments) and \
                 were skipped",
                g.continuation_lines
            ));
        }
        if g.totals.is_none() && log.is_none() {
            parsed.notes.push(
                "the -g file has no header (Xenomai 2.x): min and max are those of the buckets, the period and \
                 priority are not recorded"
                    .into(),
            );
        }
    }
    // Without a recorded duration, one RTD line is one second of samples.
    if let (None, Some((_, log))) = (parsed.duration_s, &log) {
        if !log.seconds.is_empty() {
            parsed.duration_s = Some(log.seconds.len() as f64);
        }
    }
    if let Some(t) = totals {
        series.details.insert("source_avg_ns".into(), Detail::Float(t.avg_ns as f64));
    }
    if let Some(mode) = &setup.mode {
        series.details.insert("xenomai_mode".into(), Detail::Text(mode.clone()));
        parsed.notes.push(format!("test mode: {mode}"));
    }
    parsed.series.push(series);
    parsed.source_tool = Some(match gnuplot.as_ref().and_then(|(_, g)| g.version.clone()) {
        Some(version) => format!("xenomai latency ({version})"),
        None => "xenomai latency".to_string(),
    });
    parsed.interval_ns = setup.period_us.and_then(|p| p.checked_mul(1000)).filter(|&p| p > 0);
    parsed.priority = setup.priority;
    parsed.policy = Some(Policy::Fifo);
    parsed.resolution_ns = 1;
    Ok(parsed)
}

fn is_log_line(line: &str) -> bool {
    let line = strip_interrupt(line);
    ["RTT|", "RTH|", "RTD|", "RTS|"].iter().any(|p| line.starts_with(p))
}

/// A line typed over by the terminal's "^C" echo.
fn strip_interrupt(line: &str) -> &str {
    let mut line = line.trim_end();
    while let Some(rest) = line.strip_prefix("^C") {
        line = rest;
    }
    line
}

fn merge_field<T: PartialEq + Clone + std::fmt::Debug>(
    into: &mut Option<T>,
    value: Option<T>,
    path: &str,
    line: usize,
    what: &str,
) -> Result<(), ImportError> {
    match (into.as_ref(), value) {
        (Some(a), Some(b)) if *a != b => Err(ImportError::at(
            path,
            line,
            format!("{what}: {b:?} here, {a:?} before: the files are not from the same run"),
        )),
        (None, Some(b)) => {
            *into = Some(b);
            Ok(())
        }
        _ => Ok(()),
    }
}

fn parse_log(path: &str, lines: &[(usize, &str)]) -> Result<Log, ImportError> {
    let mut log = Log::default();
    for &(number, raw) in lines {
        let line = strip_interrupt(raw);
        let at = |why: String| ImportError::at(path, number, why);
        if line.trim().is_empty() || line.starts_with("---|") {
            continue;
        }
        if let Some(rest) = line.strip_prefix("RTT|") {
            let setup = parse_rtt(rest).ok_or_else(|| at(format!("unreadable RTT line {line:?}")))?;
            merge_field(&mut log.setup.period_us, setup.period_us, path, number, "period in µs")?;
            merge_field(&mut log.setup.priority, setup.priority, path, number, "priority")?;
            merge_field(&mut log.setup.mode, setup.mode, path, number, "test mode")?;
            merge_field(&mut log.setup.cpu, setup.cpu, path, number, "CPU")?;
            log.setup_line.get_or_insert(number);
        } else if let Some(rest) = line.strip_prefix("RTH|") {
            let columns: Vec<String> = rest.split('|').map(|c| c.trim().trim_start_matches('-').to_string()).collect();
            for needed in ["lat min", "lat avg", "lat max", "overrun"] {
                if !columns.iter().any(|c| c == needed) {
                    return Err(at(format!("the RTH header has no {needed:?} column")));
                }
            }
            log.columns = Some(columns);
        } else if let Some(rest) = line.strip_prefix("RTD|") {
            if log.summary.is_some() {
                return Err(at("an RTD line after the RTS summary: a second run starts here".into()));
            }
            let columns = log.columns.clone().unwrap_or_else(default_columns);
            let second = parse_rtd(rest, &columns).map_err(at)?;
            log.seconds.push((number, second));
        } else if let Some(rest) = line.strip_prefix("RTS|") {
            if log.summary.is_some() {
                return Err(at("a second RTS line: give one run's log".into()));
            }
            let (totals, duration) = parse_rts(rest).map_err(at)?;
            log.summary = Some((number, totals, duration));
        } else if let Some(rest) = line.strip_prefix("HSD|") {
            let (kind, bucket, hits) = parse_hsd(rest).ok_or_else(|| at(format!("unreadable HSD line {line:?}")))?;
            if kind == "avg" {
                if log.hsd.insert(bucket, hits).is_some() {
                    return Err(at(format!("bucket {bucket} appears twice in the HSD avg histogram")));
                }
                log.hsd_line.get_or_insert(number);
            }
        } else if let Some(rest) = line.strip_prefix("HSS|") {
            let fields: Vec<&str> = rest.split('|').map(str::trim).collect();
            if fields.first() == Some(&"avg") {
                let total = fields
                    .get(1)
                    .and_then(|t| t.parse().ok())
                    .ok_or_else(|| at(format!("unreadable HSS line {line:?}")))?;
                log.hss_total = Some((number, total));
            }
        } else if line.starts_with("HSH|") || line.starts_with("warming up") || line.starts_with("running quietly") {
            continue;
        } else if let Some(rest) = line.strip_prefix("== ") {
            if let Some(period) = rest.strip_prefix("Sampling period: ").and_then(|p| p.strip_suffix(" us")) {
                let period = period.trim().parse().map_err(|_| at(format!("unreadable period {period:?}")))?;
                merge_field(&mut log.setup.period_us, Some(period), path, number, "period in µs")?;
                log.setup_line.get_or_insert(number);
            } else if let Some(mode) = rest.strip_prefix("Test mode: ") {
                merge_field(&mut log.setup.mode, Some(mode.trim().to_string()), path, number, "test mode")?;
            }
        } else if line.starts_with("Warning! some latency") {
            log.warned_mode_switches = true;
        } else if line.starts_with("Please contact xenomai@") {
            continue;
        } else if line.starts_with('#') || is_data_pair(line) {
            log.gnuplot.push((number, line.to_string()));
        } else {
            log.skipped.push(number);
        }
    }
    if log.seconds.is_empty() && log.summary.is_none() && log.hsd.is_empty() && log.gnuplot.is_empty() {
        let first = lines.first().map_or(1, |(n, _)| *n);
        return Err(ImportError::at(path, first, "the log has no RTD or RTS line: latency measured nothing"));
    }
    Ok(log)
}

fn default_columns() -> Vec<String> {
    ["lat min", "lat avg", "lat max", "overrun", "msw", "lat best", "lat worst"].iter().map(|s| s.to_string()).collect()
}

/// `  00:00:01  (periodic user-mode task, 100 us period, priority 99)`; EVL's latmus
/// writes `(user, 1000 us period, priority 90, CPU1)`.
fn parse_rtt(rest: &str) -> Option<Setup> {
    let inside = rest.split_once('(')?.1.rsplit_once(')')?.0;
    let mut setup = Setup::default();
    for (i, part) in inside.split(',').map(str::trim).enumerate() {
        if let Some(period) = part.strip_suffix(" us period") {
            setup.period_us = Some(period.trim().parse().ok()?);
        } else if let Some(priority) = part.strip_prefix("priority ") {
            setup.priority = Some(priority.trim().parse().ok()?);
        } else if let Some(cpu) = part.strip_prefix("CPU") {
            setup.cpu = cpu.trim_end_matches("-noisol").parse().ok();
        } else if i == 0 {
            setup.mode = Some(part.to_string());
        }
    }
    setup.period_us?;
    Some(setup)
}

/// µs with up to three decimals ("%11.3f") -> exact ns.
fn parse_micros(text: &str) -> Option<i64> {
    let text = text.trim();
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    if whole.is_empty() || fraction.len() > 3 || !whole.bytes().chain(fraction.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let whole: i64 = whole.parse().ok()?;
    let fraction: i64 = format!("{fraction:0<3}").parse().ok()?;
    let ns = whole.checked_mul(1000)?.checked_add(fraction)?;
    let ns = if negative { -ns } else { ns };
    (ns.abs() <= super::MAX_VALUE_NS).then_some(ns)
}

fn micros(ns: i64) -> String {
    format!("{:.3}", ns as f64 / 1000.0)
}

fn parse_rtd(rest: &str, columns: &[String]) -> Result<Second, String> {
    let fields: Vec<&str> = rest.split('|').map(str::trim).collect();
    if fields.len() != columns.len() {
        return Err(format!("{} fields where the RTH header names {}", fields.len(), columns.len()));
    }
    let field = |name: &str| columns.iter().position(|c| c == name).and_then(|i| fields.get(i).copied());
    let value = |name: &str| -> Result<i64, String> {
        let text = field(name).ok_or_else(|| format!("no {name:?} column"))?;
        parse_micros(text).ok_or_else(|| format!("{name} {text:?} is not a latency in µs"))
    };
    let count = |name: &str| -> Result<Option<u64>, String> {
        field(name).map(|t| t.parse::<u64>().map_err(|_| format!("{name} {t:?} is not a count"))).transpose()
    };
    let second = Second {
        min_ns: value("lat min")?,
        avg_ns: value("lat avg")?,
        max_ns: value("lat max")?,
        overruns: count("overrun")?.unwrap_or(0),
        mode_switches: count("msw")?,
    };
    if second.min_ns > second.max_ns || second.avg_ns < second.min_ns || second.avg_ns > second.max_ns {
        return Err("min, avg and max are out of order".into());
    }
    Ok(second)
}

/// `|      0.088|      0.464|      2.297|       0|     0|    00:01:00/00:01:00`.
fn parse_rts(rest: &str) -> Result<(Totals, Option<u64>), String> {
    let fields: Vec<&str> = rest.split('|').map(str::trim).collect();
    let (numbers, duration) = match fields.split_last() {
        Some((last, numbers)) if last.contains(':') => (numbers, Some(*last)),
        _ => (fields.as_slice(), None),
    };
    let value = |i: usize| -> Result<i64, String> {
        let text = numbers.get(i).ok_or("too few fields")?;
        parse_micros(text).ok_or_else(|| format!("{text:?} is not a latency in µs"))
    };
    let count = |i: usize| -> Result<Option<u64>, String> {
        numbers.get(i).map(|t| t.parse::<u64>().map_err(|_| format!("{t:?} is not a count"))).transpose()
    };
    if !(4..=5).contains(&numbers.len()) {
        return Err(format!(
            "{} fields, expected min, avg, max, overruns[, mode switches] and the duration",
            numbers.len()
        ));
    }
    let totals = Totals {
        min_ns: value(0)?,
        avg_ns: value(1)?,
        max_ns: value(2)?,
        overruns: count(3)?.unwrap_or(0),
        mode_switches: count(4)?,
    };
    if totals.min_ns > totals.max_ns {
        return Err("min above max".into());
    }
    // "00:01:00/00:01:00": the actual duration, then the one asked for with -T.
    let duration = duration.and_then(|d| parse_clock(d.split('/').next()?));
    Ok((totals, duration))
}

/// "hh:mm:ss" -> seconds.
fn parse_clock(text: &str) -> Option<u64> {
    let (h, m, s) = super::clock_fields(text.trim())?;
    // `then`, not `then_some`: the sum must not be computed for an out-of-range h.
    (h < 1_000_000).then(|| h * 3600 + m * 60 + s)
}

/// `    avg|   3 -  4 |    12345` -> ("avg", 3, 12345).
fn parse_hsd(rest: &str) -> Option<(&str, u64, u64)> {
    let mut fields = rest.split('|').map(str::trim);
    let kind = fields.next()?;
    let (from, to) = fields.next()?.split_once('-')?;
    let (from, to): (u64, u64) = (from.trim().parse().ok()?, to.trim().parse().ok()?);
    let hits = fields.next()?.parse().ok()?;
    (to == from.checked_add(1)? && fields.next().is_none()).then_some((kind, from, hits))
}

fn is_data_pair(line: &str) -> bool {
    let mut tokens = line.split_whitespace();
    matches!((tokens.next(), tokens.next(), tokens.next()), (Some(x), Some(y), None)
        if x.parse::<f64>().is_ok() && y.bytes().all(|b| b.is_ascii_digit()))
}

/// The -g file (or the `-g -` lines of a log).
fn parse_gnuplot(path: &str, lines: &[(usize, String)]) -> Result<GnuplotFile, ImportError> {
    let mut file = GnuplotFile::default();
    let mut points: Vec<(usize, i64, u64)> = Vec::new();
    for (number, line) in lines {
        let (number, line) = (*number, line.trim());
        if line.is_empty() {
            continue;
        }
        if let Some(comment) = line.strip_prefix('#') {
            if !points.is_empty() {
                return Err(ImportError::at(path, number, "a comment line after the histogram's data"));
            }
            read_header_line(path, number, comment.trim(), &mut file)?;
            continue;
        }
        match parse_point(line) {
            Some((x2, count)) => points.push((number, x2, count)),
            // xeno-config --info may print multi-line build arguments: only their first line
            // gets the "# ".
            None if points.is_empty() && file.header_line > 0 => file.continuation_lines += 1,
            None => {
                return Err(ImportError::at(
                    path,
                    number,
                    format!("{line:?} is not a \"latency count\" pair of a latency -g histogram"),
                ))
            }
        }
    }
    if let Some(&(first, _, _)) = points.first() {
        let histogram = histogram_of_points(&points).map_err(|why| ImportError::at(path, first, why))?;
        file.histogram = Some((first, histogram));
    } else if file.totals.is_none() {
        return Err(ImportError::whole(path, "neither a latency log (RTx| lines) nor a latency -g histogram"));
    }
    Ok(file)
}

fn read_header_line(path: &str, number: usize, comment: &str, file: &mut GnuplotFile) -> Result<(), ImportError> {
    if file.header_line == 0 {
        file.header_line = number;
    }
    if comment.contains("us period") {
        // "00:01:00 (periodic user-mode task, 100 us period, priority 99)"
        file.duration_s = comment.split_whitespace().next().and_then(parse_clock);
        file.setup = parse_rtt(comment).ok_or_else(|| ImportError::at(path, number, "unreadable test description"))?;
    } else if comment.contains('|') && !comment.contains("lat min") {
        let fields: Vec<&str> = comment.split('|').map(str::trim).filter(|f| !f.is_empty()).collect();
        let value = |i: usize| fields.get(i).and_then(|t| parse_micros(t));
        let count = |i: usize| fields.get(i).and_then(|t| t.parse::<u64>().ok());
        let (Some(min_ns), Some(avg_ns), Some(max_ns), Some(overruns)) = (value(0), value(1), value(2), count(3))
        else {
            return Err(ImportError::at(path, number, format!("unreadable overall figures {comment:?}")));
        };
        if min_ns > max_ns {
            return Err(ImportError::at(path, number, "min above max"));
        }
        file.totals = Some((number, Totals { min_ns, avg_ns, max_ns, overruns, mode_switches: count(4) }));
    } else if let Some(version) = comment.strip_prefix("Xenomai version: ") {
        file.version = Some(version.trim().to_string());
    } else if let Some(uname) = comment.strip_prefix("Linux ") {
        // `uname -a`: Linux NODENAME RELEASE VERSION... MACHINE [PROCESSOR PLATFORM] GNU/Linux
        let words: Vec<&str> = uname.split_whitespace().collect();
        if let [node, release, rest @ ..] = words.as_slice() {
            file.host.hostname = Some(node.to_string());
            file.host.kernel_release = Some(release.to_string());
            if let [version @ .., machine, os] = rest {
                if *os == "GNU/Linux" && !version.is_empty() {
                    file.host.kernel_version = Some(version.join(" "));
                    file.host.machine = Some(machine.to_string());
                }
            }
        }
    }
    Ok(())
}

/// "1.5 1234" -> (2 × x in ns, count): x = (n + 0.5)·B µs, so 2·x_ns = (2n + 1)·B is whole.
fn parse_point(line: &str) -> Option<(i64, u64)> {
    let mut tokens = line.split_whitespace();
    let (x, count) = (tokens.next()?, tokens.next()?);
    if tokens.next().is_some() || !count.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let x: f64 = x.parse().ok()?;
    let doubled = x * 2000.0;
    if !doubled.is_finite() || doubled < 0.0 || doubled > 2.0 * super::MAX_VALUE_NS as f64 {
        return None;
    }
    let rounded = doubled.round();
    // %g keeps six significant digits: anything further off is not latency's output.
    if (doubled - rounded).abs() > 1e-6 * rounded.max(1.0) {
        return None;
    }
    Some((rounded as i64, count.parse().ok()?))
}

/// The lines: [edge start·W] centres (2n + 1)·W for n = start..=stop [edge (stop + 1)·W],
/// in doubled ns. W is the spacing; the edge lines (count 1) may be missing.
fn histogram_of_points(points: &[(usize, i64, u64)]) -> Result<Histogram, String> {
    let gaps: Vec<i64> = points.windows(2).filter_map(|w| Some(w.get(1)?.1 - w.first()?.1)).collect();
    if gaps.iter().any(|&g| g <= 0) {
        return Err("the latencies do not increase from line to line".into());
    }
    let smallest = gaps.iter().copied().min();
    let candidates: Vec<i64> = match (smallest, points.first()) {
        (Some(g), _) => [g, g / 2].into_iter().filter(|&w| w > 0 && (w == g || g % 2 == 0)).collect(),
        // One line: a single centre (the edges lost) at (2n + 1)·W cannot tell W: 1 µs is
        // latency's default.
        (None, Some(_)) => vec![DEFAULT_BUCKET_NS as i64],
        (None, None) => return Err("no data line".into()),
    };
    for width in candidates {
        if let Some(h) = classify(points, width) {
            return Ok(h);
        }
    }
    Err("the lines are not latency's -g layout (bucket centres (n + 0.5)·B between two edge lines)".into())
}

fn classify(points: &[(usize, i64, u64)], width: i64) -> Option<Histogram> {
    let period = width.checked_mul(2)?;
    let last = points.len().checked_sub(1)?;
    let mut buckets: Vec<(u64, u64)> = Vec::new();
    let mut leading_edge: Option<i64> = None;
    let mut trailing_edge: Option<i64> = None;
    for (i, &(_, x2, count)) in points.iter().enumerate() {
        match x2 % period {
            0 if count == 1 && (i == 0 || i == last) => {
                let edge = x2 / period;
                if i == 0 && last > 0 {
                    leading_edge = Some(edge);
                } else {
                    trailing_edge = Some(edge);
                }
            }
            r if r == width => {
                let n = u64::try_from((x2 - width) / period).ok()?;
                if buckets.last().is_some_and(|&(previous, _)| previous + 1 != n) || trailing_edge.is_some() {
                    return None;
                }
                buckets.push((n, count.checked_sub(1)?));
            }
            _ => return None,
        }
    }
    let (&(start, _), &(stop, _)) = (buckets.first()?, buckets.last()?);
    if leading_edge.is_some_and(|e| e != start as i64) || trailing_edge.is_some_and(|e| e != stop as i64 + 1) {
        return None;
    }
    Some(Histogram { width_ns: u64::try_from(width).ok()?, buckets })
}

fn histogram_of_hsd(path: &str, line: usize, hsd: &BTreeMap<u64, u64>) -> Result<Histogram, ImportError> {
    let buckets: Vec<(u64, u64)> = hsd.iter().map(|(&n, &hits)| (n, hits)).collect();
    if buckets.iter().any(|&(n, _)| n.checked_mul(DEFAULT_BUCKET_NS).is_none_or(|v| v > super::MAX_VALUE_NS as u64)) {
        return Err(ImportError::at(path, line, "an HSD bucket index is out of range"));
    }
    Ok(Histogram { width_ns: DEFAULT_BUCKET_NS, buckets })
}

fn total_hits(h: &Histogram) -> Option<u64> {
    h.buckets.iter().try_fold(0u64, |a, &(_, n)| a.checked_add(n))
}

/// min, average and max over RTD lines, as latency computes them (its overall average is
/// the mean of the per-second averages).
fn totals_of_seconds(seconds: &[(usize, Second)]) -> Option<Totals> {
    let min_ns = seconds.iter().map(|(_, s)| s.min_ns).min()?;
    let max_ns = seconds.iter().map(|(_, s)| s.max_ns).max()?;
    let sum: i128 = seconds.iter().map(|(_, s)| i128::from(s.avg_ns)).sum();
    let avg_ns = i64::try_from(sum / seconds.len() as i128).ok()?;
    let last = seconds.last().map(|(_, s)| s)?;
    Some(Totals { min_ns, avg_ns, max_ns, overruns: last.overruns, mode_switches: last.mode_switches })
}

/// The -g / HSD histogram with what the overall figures add: the last cell's saturation,
/// the folded negative min, the exact extremes.
/// `width_assumed`: the width is latency's default rather than read from a -g file, so
/// buckets beyond the recorded extremes mean another -B, not the interrupted last second.
fn source_histogram(
    h: &Histogram,
    totals: Option<Totals>,
    width_assumed: bool,
    notes: &mut Vec<String>,
) -> Result<SourceHistogram, String> {
    let width = i64::try_from(h.width_ns).map_err(|_| "bucket width out of range".to_string())?;
    let lower_of =
        |n: u64| i64::try_from(n).ok().and_then(|n| n.checked_mul(width)).filter(|v| *v <= super::MAX_VALUE_NS);
    let mut buckets: Vec<(i64, u64)> = Vec::new();
    for &(n, hits) in &h.buckets {
        let lower = lower_of(n).ok_or("a bucket lies beyond 1000 s")?;
        if hits > 0 {
            buckets.push((lower, hits));
        }
    }
    let total = total_hits(h).filter(|&t| t <= super::MAX_TOTAL_COUNT).ok_or("too many samples")?;
    if total == 0 {
        return Err("the histogram holds no sample".into());
    }
    let stop = h.buckets.last().map_or(0, |&(n, _)| n);
    let mut source = SourceHistogram {
        width_ns: h.width_ns,
        buckets,
        overflows: 0,
        overflow_from_ns: lower_of(stop.saturating_add(1)).unwrap_or(super::MAX_VALUE_NS),
        min_ns: None,
        max_ns: None,
        count: Some(total),
        avg_ns: totals.map(|t| t.avg_ns as f64),
    };
    let Some(totals) = totals else {
        notes.push(
            "the histogram's last bucket may also hold larger values (latency puts everything beyond its -H cells \
             there), and negative latencies are folded onto their absolute values: without the overall figures \
             neither can be told"
                .into(),
        );
        return Ok(source);
    };
    // The last cell collects everything beyond it: when the max lies beyond, its samples
    // are overflows (at least its lower bound, the largest exactly the max).
    let stop_lower = lower_of(stop).unwrap_or(0);
    if totals.max_ns >= source.overflow_from_ns {
        if let Some(position) = source.buckets.iter().position(|&(lower, _)| lower == stop_lower) {
            let (_, hits) = source.buckets.remove(position);
            source.overflows = hits;
            source.overflow_from_ns = stop_lower;
            notes.push(format!(
                "the last bucket ({} µs) holds every sample beyond it (latency's -H cells end there; max {} µs): its \
                 {hits} samples count at {} µs, the largest at the max",
                micros(stop_lower),
                micros(totals.max_ns),
                micros(stop_lower)
            ));
        }
    }
    source.min_ns = Some(totals.min_ns);
    source.max_ns = Some(totals.max_ns);
    // The histogram also holds the samples of the last, interrupted second, which no RTD or
    // RTS figure covers: buckets beyond the recorded extremes may come from it.
    let non_empty = || source.buckets.iter().filter(|b| b.1 > 0).map(|b| b.0);
    let (lowest, highest) = (non_empty().min(), non_empty().max());
    let bucket_of = |value: i64| value - value.rem_euclid(width);
    if source.overflows == 0 && highest.is_some_and(|h| bucket_of(totals.max_ns.abs()) < h) {
        if width_assumed {
            return Err(format!("a bucket lies above the max {} µs", micros(totals.max_ns)));
        }
        source.max_ns = None;
        notes.push(format!(
            "the histogram holds samples above the recorded max {} µs: latency adds the last, interrupted second to \
             its histogram but not to its figures, so the max is that of the buckets",
            micros(totals.max_ns)
        ));
    }
    if totals.min_ns >= 0 {
        if lowest.is_some_and(|l| bucket_of(totals.min_ns) > l) {
            if width_assumed {
                return Err(format!("a bucket lies below the min {} µs", micros(totals.min_ns)));
            }
            source.min_ns = None;
            notes.push(format!(
                "the histogram holds samples below the recorded min {} µs (the last, interrupted second), so the min \
                 is that of the buckets",
                micros(totals.min_ns)
            ));
        }
        super::pin_recorded_extremes(&mut source)?;
        return Ok(source);
    }
    // A negative min sits in the bucket of its absolute value, and so may any other negative
    // sample: place the min (and the max) exactly, moving one sample each.
    let holding = |buckets: &[(i64, u64)], value: i64| {
        buckets.iter().position(|&(lower, hits)| hits > 0 && lower >= 0 && lower <= value && value - lower < width)
    };
    let mut take_one = |value: i64, what: &str| -> Result<(), String> {
        let bucket = holding(&source.buckets, value.abs())
            .ok_or_else(|| format!("the {what} {} µs lies in an empty bucket", micros(value)))?;
        if let Some(entry) = source.buckets.get_mut(bucket) {
            entry.1 -= 1;
        }
        source.buckets.push((value, 1));
        Ok(())
    };
    take_one(totals.min_ns, "min")?;
    if source.overflows == 0 && source.max_ns.is_some() {
        take_one(totals.max_ns, "max")?;
    }
    source.min_ns = None;
    source.max_ns = source.max_ns.filter(|_| source.overflows > 0);
    notes.push(format!(
        "min {} µs is negative: latency folds negative latencies onto the bucket of their absolute value, so the min \
         was placed exactly but other negative samples (if any) sit at their absolute values",
        micros(totals.min_ns)
    ));
    Ok(source)
}
