//! `--format hdr-log`: the HdrHistogram interval log, as Java's `HistogramLogWriter` writes it
//! and `HistogramLogReader`/`HistogramLogProcessor` (Java), `hdrh` (Python), HdrHistogram-go
//! and the hdrhistogram crate's `IntervalLogIterator` read it (docs/export/hdr-log.md).
//!
//! One metric of one scenario of one run ([`super::Selection`]): first an untagged interval
//! holding every thread combined (what `HistogramLogProcessor` reads without `-tag`), then
//! one interval per thread tagged `cpuN`. Values are the run's own HDR histograms in ns,
//! re-encoded unchanged; `Interval_Max` is in ms (ns / 1e6, the Java tools' convention:
//! `HistogramLogWriter`'s default max-value ratio and `HistogramLogProcessor`'s default
//! `-outputValueUnitRatio` are both 1e6).

use super::Selected;
use crate::FormatError;
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;
use rtlab_analysis::LatencyHistogram;
use rtlab_results::run::{merged_histogram, Measurement, RunResult};
use rtlab_results::set::{ReportExporter, ReportSet};
use std::time::{Duration, SystemTime};

/// The format version Java's `HistogramLogWriter` announces (HdrHistogram 2.1/2.2).
const LOG_FORMAT_VERSION: &str = "1.3";
/// `Interval_Max` = max ns / this = ms.
pub const MAX_VALUE_DIVISOR: f64 = 1e6;
/// Java's column legend, written after the headers; every reader skips it.
const LEGEND: &str = "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"";

/// The HDR interval log of the selected metric and scenario.
#[derive(Debug, Clone, Default)]
pub struct HdrLog {
    pub selection: super::Selection,
}

impl ReportExporter for HdrLog {
    type Error = FormatError;

    fn render(&self, set: &ReportSet) -> Result<String, FormatError> {
        let selected = self.selection.select(set, "hdr-log")?;
        write_log(&selected)
    }
}

fn write_log(selected: &Selected) -> Result<String, FormatError> {
    let run = selected.run;
    let invalid = |reason: String| FormatError::Usage { what: "--format hdr-log".into(), reason };
    let scenario = run
        .scenario(&selected.scenario)
        .ok_or_else(|| invalid(format!("no scenario {:?} in the run", selected.scenario)))?;
    let length = seconds(scenario.duration_s)
        .ok_or_else(|| invalid(format!("scenario {:?} has a duration of {} s", scenario.name, scenario.duration_s)))?;
    let offset = scenario_offset(run, &selected.scenario).ok_or_else(|| {
        invalid(format!("a scenario before {:?} has an invalid settle or duration time", scenario.name))
    })?;
    let start = run_start(run);

    let combined = match merged_histogram(&selected.threads)? {
        Some(h) => h,
        // No threads at all: still a valid log, with an empty interval.
        None => LatencyHistogram::new(run.experiment.histogram_max_ns)?,
    };
    let threads: Vec<(String, LatencyHistogram)> = selected
        .threads
        .iter()
        .map(|m| Ok((thread_tag(m, &selected.threads), LatencyHistogram::decode(&m.histogram)?)))
        .collect::<Result<_, FormatError>>()?;

    let mut builder = IntervalLogWriterBuilder::new();
    builder.add_comment(&format!("[Histogram log format version {LOG_FORMAT_VERSION}]"));
    for line in header_comments(selected, start.is_some(), &threads) {
        builder.add_comment(&line);
    }
    if let Some(start) = start {
        builder.with_start_time(start).with_base_time(start);
    }
    builder.with_max_value_divisor(MAX_VALUE_DIVISOR);

    let mut bytes = Vec::new();
    let mut serializer = V2DeflateSerializer::new();
    {
        let encode = |e: String| FormatError::Encode(format!("HDR interval log: {e}"));
        let mut log = builder.begin_log_with(&mut bytes, &mut serializer).map_err(|e| encode(e.to_string()))?;
        let intervals = std::iter::once((None, &combined)).chain(threads.iter().map(|(tag, h)| (Some(tag), h)));
        for (tag, histogram) in intervals {
            let tag = match tag {
                Some(text) => Some(Tag::new(text).ok_or_else(|| encode(format!("tag {text:?} is not allowed")))?),
                None => None,
            };
            log.write_histogram(histogram.hdr(), offset, length, tag).map_err(|e| encode(e.to_string()))?;
        }
    }
    let text = String::from_utf8(bytes).map_err(|e| FormatError::Encode(e.to_string()))?;
    Ok(with_legend(text))
}

/// What a person opening the file needs: what it holds, the unit, the tags.
fn header_comments(selected: &Selected, start_known: bool, threads: &[(String, LatencyHistogram)]) -> Vec<String> {
    let run = selected.run;
    // Debug quoting keeps a label or scenario with a line break on one comment line (a line
    // that starts with "#[StartTime: " would be read as a header).
    let mut lines = vec![
        format!(
            "[rtlab {}: run {:?}, scenario {:?}, metric {:?}]",
            run.tool.version, run.label, selected.scenario, selected.metric
        ),
        "[Values in ns; Interval_Max in ms (max ns / MaxValueDivisor 1e6)]".to_string(),
        "[Untagged interval: all threads combined; Tag=cpuN: the thread on CPU N]".to_string(),
    ];
    if threads.iter().any(|(tag, _)| tag.contains('-')) {
        lines.push("[Tag=cpuN-THREAD: one of several threads of the metric on CPU N]".to_string());
    }
    if !start_known {
        lines.push(format!(
            "[run.json records no start time ({:?}): timestamps are offsets from an unknown start]",
            run.start_time
        ));
    }
    // Saturating: the counts come from the file.
    let clamped = threads.iter().fold(0u64, |n, (_, h)| n.saturating_add(h.below_zero()));
    if clamped > 0 {
        lines
            .push(format!("[{clamped} samples below 0 ns are recorded as 0 (HDR histograms hold no negative values)]"));
    }
    let capped = threads.iter().fold(0u64, |n, (_, h)| n.saturating_add(h.above_max()));
    if capped > 0 {
        lines.push(format!("[{capped} samples above the histogram's ceiling are recorded at the ceiling]"));
    }
    lines
}

/// `cpuN`, or `cpuN-THREAD` when several threads of the metric ran on CPU N (the jitter
/// probe's periods, a sweep's rates), with the characters a tag may not hold replaced.
fn thread_tag(m: &Measurement, all: &[&Measurement]) -> String {
    if all.iter().filter(|other| other.cpu == m.cpu).count() <= 1 {
        return format!("cpu{}", m.cpu);
    }
    let thread: String =
        m.thread.chars().map(|c| if c == ',' || c.is_whitespace() || c.is_control() { '_' } else { c }).collect();
    format!("cpu{}-{thread}", m.cpu)
}

/// Java's writer puts the legend after the header lines, before the first interval.
fn with_legend(text: String) -> String {
    let mut out = String::with_capacity(text.len() + LEGEND.len() + 1);
    let mut placed = false;
    for line in text.split_inclusive('\n') {
        if !placed && !line.starts_with('#') {
            out.push_str(LEGEND);
            out.push('\n');
            placed = true;
        }
        out.push_str(line);
    }
    out
}

/// The run's wall-clock start, when run.json records a valid one after 1970.
pub(crate) fn run_start(run: &RunResult) -> Option<SystemTime> {
    let start = chrono::DateTime::parse_from_rfc3339(&run.start_time).ok()?;
    let since_epoch = Duration::new(u64::try_from(start.timestamp()).ok()?, start.timestamp_subsec_nanos());
    SystemTime::UNIX_EPOCH.checked_add(since_epoch)
}

/// When the scenario's measurement began, from the run's start: the earlier scenarios'
/// settle and measuring times plus its own settle time. run.json records no per-scenario
/// start, so this leaves out the few milliseconds of starting and stopping loads.
fn scenario_offset(run: &RunResult, name: &str) -> Option<Duration> {
    let mut offset = Duration::ZERO;
    for s in &run.scenarios {
        offset = offset.checked_add(seconds(s.settle_s)?)?;
        if s.name == name {
            return Some(offset);
        }
        offset = offset.checked_add(seconds(s.duration_s)?)?;
    }
    None
}

/// A non-negative, finite number of seconds from run.json.
fn seconds(s: f64) -> Option<Duration> {
    Duration::try_from_secs_f64(s).ok()
}
