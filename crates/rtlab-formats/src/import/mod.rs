//! Importers: other tools' result files -> a normal [`RunResult`] marked as imported.
//!
//! Each format's parser ([`cyclictest`], [`rtla`], [`jitterdebugger`], [`xenomai`], [`oslat`]) reads
//! bytes into a [`ParsedSource`]: what the files recorded, nothing more. [`build_run`]
//! turns that into run.json, the same way for every format, so that counts add up and the
//! [`ImportInfo`] says which statistics are exact. Everything here is pure (no I/O): the
//! binary reads the files, and the fuzz targets feed bytes straight to [`import`].
//!
//! Limits that keep every sum exact (and garbage from exhausting memory): sample values
//! within ±[`MAX_VALUE_NS`], at most [`MAX_TOTAL_COUNT`] samples per series.

pub mod cyclictest;
pub mod jitterdebugger;
pub mod oslat;
pub mod rtla;
pub mod rtla_top;
pub mod xenomai;

use rtlab_analysis::censored::{self, Censoring};
use rtlab_analysis::{LatencyHistogram, Moments, Summary};
use rtlab_results::host::Policy;
use rtlab_results::run::{
    Detail, Experiment, ImportInfo, Measurement, ProbeSettings, RealtimeStatus, Resources, RunResult, Scenario,
    ToolInfo, SCHEMA,
};
use std::collections::BTreeMap;

/// Largest |value| an importer accepts: 1000 s in ns (no latency source records more; any
/// larger number in a file is damage, and the bound keeps the exact sums in range).
pub const MAX_VALUE_NS: i64 = 1_000_000_000_000;
/// Most samples one series may hold (317 years at 1 kHz); bounds the exact sums too.
pub const MAX_TOTAL_COUNT: u64 = 10_000_000_000_000;
/// Most CPUs a source may claim for its host.
pub const MAX_CPUS: usize = 8192;
/// The scenario every imported measurement belongs to.
pub const IMPORTED_SCENARIO: &str = "imported";

/// A source that cannot be imported: the file, the line (1-based) when one is to blame,
/// and why. Shown as `FILE:LINE: REASON` (exit 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}{}: {reason}", line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct ImportError {
    pub file: String,
    pub line: Option<usize>,
    pub reason: String,
}

impl ImportError {
    pub fn at(file: &str, line: usize, reason: impl Into<String>) -> Self {
        Self { file: file.to_string(), line: Some(line), reason: reason.into() }
    }

    pub fn whole(file: &str, reason: impl Into<String>) -> Self {
        Self { file: file.to_string(), line: None, reason: reason.into() }
    }
}

/// The `--from` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImportFormat {
    /// `-h/--histfile` text (old and new layouts), `-v` verbose output, `--json` files.
    Cyclictest,
    /// `rtla timerlat hist` and `rtla osnoise hist` output.
    Rtla,
    /// `results.json` and/or `samples.raw` of `jitterdebugger -o DIR [-s]`.
    Jitterdebugger,
    /// Xenomai `latency` output (RTT/RTH/RTD/RTS lines) and/or its `-g` histogram file.
    Xenomai,
    /// rt-tests' `oslat --json` file (the busy loop's gap histogram per thread).
    Oslat,
}

impl ImportFormat {
    pub const ALL: [ImportFormat; 5] = [
        ImportFormat::Cyclictest,
        ImportFormat::Rtla,
        ImportFormat::Jitterdebugger,
        ImportFormat::Xenomai,
        ImportFormat::Oslat,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ImportFormat::Cyclictest => "cyclictest",
            ImportFormat::Rtla => "rtla",
            ImportFormat::Jitterdebugger => "jitterdebugger",
            ImportFormat::Xenomai => "xenomai",
            ImportFormat::Oslat => "oslat",
        }
    }
}

/// The unit of sources that do not say (cyclictest's histogram and -v output are µs, or ns
/// with its -N).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceUnit {
    Us,
    Ns,
}

impl SourceUnit {
    pub fn ns(self) -> u64 {
        match self {
            SourceUnit::Us => 1000,
            SourceUnit::Ns => 1,
        }
    }
}

/// What the user told `rtlab import` beyond the files.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImportOptions {
    /// The run's label (default: the source's host name, else the first file's stem).
    pub label: Option<String>,
    /// `--unit`: the unit of sources that do not record theirs.
    pub unit: Option<SourceUnit>,
    /// `--interval`: the period of sources that do not record theirs.
    pub interval_ns: Option<u64>,
}

/// One input file: its name as given (for messages) and its bytes (any encoding: parsers
/// reject what is not their format, with the line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    pub path: String,
    pub bytes: Vec<u8>,
}

/// What the files of one run recorded, as the format parsers return it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParsedSource {
    /// Layouts recognised, one per file in order ("cyclictest-histogram", ...).
    pub layouts: Vec<String>,
    /// "cyclictest 2.40", when the source says.
    pub source_tool: Option<String>,
    pub source_command_line: Option<String>,
    /// RFC 3339 (or as the source wrote it) when recorded.
    pub start_time: Option<String>,
    pub end_time: Option<String>,
    /// Seconds of measurement, when recorded or derivable from the source alone.
    pub duration_s: Option<f64>,
    pub host: SourceHost,
    /// The measuring period when recorded.
    pub interval_ns: Option<u64>,
    /// The measuring threads' scheduling, when recorded.
    pub policy: Option<Policy>,
    pub priority: Option<i32>,
    /// Resolution of the values in ns (1000 for whole µs).
    pub resolution_ns: u64,
    /// One per thread and metric.
    pub series: Vec<Series>,
    /// Values the parser took from the tool's documented defaults (sentences).
    pub assumed: Vec<String>,
    pub notes: Vec<String>,
    /// The source's unit came from `--unit` or a default rather than from the file.
    pub unit_assumed: bool,
}

/// Host facts some sources record (cyclictest --json's sysinfo, jitterdebugger's).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceHost {
    pub hostname: Option<String>,
    pub kernel_release: Option<String>,
    pub kernel_version: Option<String>,
    pub machine: Option<String>,
    pub cpu_count: Option<usize>,
}

/// One thread's samples of one metric.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// "timer", "timerlat", "osnoise".
    pub probe: String,
    /// "timer.latency", "timerlat.irq", ...
    pub metric: String,
    /// The CPU the thread ran on; None when the source does not say (then the thread index).
    pub cpu: Option<usize>,
    /// "T:0", "cpu1", as the source names it.
    pub thread: String,
    pub data: SeriesData,
    /// The thread's own period when it differs per thread (cyclictest -d).
    pub interval_ns: Option<u64>,
    /// Overruns when the source counts them (Xenomai).
    pub overruns: Option<u64>,
    /// Per-second maxima when the source has them (Xenomai's RTD lines).
    pub per_second_max_ns: Vec<Option<i64>>,
    pub details: BTreeMap<String, Detail>,
}

impl Series {
    pub fn new(probe: &str, metric: &str, cpu: Option<usize>, thread: impl Into<String>, data: SeriesData) -> Self {
        Self {
            probe: probe.to_string(),
            metric: metric.to_string(),
            cpu,
            thread: thread.into(),
            data,
            interval_ns: None,
            overruns: None,
            per_second_max_ns: Vec::new(),
            details: BTreeMap::new(),
        }
    }
}

/// The values of a series: every sample, or a histogram with what the source adds to it.
#[derive(Debug, Clone, PartialEq)]
pub enum SeriesData {
    /// Every sample in ns, in order.
    Samples(Vec<i64>),
    /// Fixed-width buckets, each given by its lower bound in ns.
    Histogram(SourceHistogram),
    /// Only summary figures (a Xenomai log without its histogram file): min, average, max.
    SummaryOnly { min_ns: i64, avg_ns: f64, max_ns: i64 },
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct SourceHistogram {
    /// Bucket width in ns.
    pub width_ns: u64,
    /// (lower bound ns, count), any order, empty buckets optional.
    pub buckets: Vec<(i64, u64)>,
    /// Samples beyond the last bucket (cyclictest's "Histogram Overflows", rtla's "over:"),
    /// each at least `overflow_from_ns`.
    pub overflows: u64,
    pub overflow_from_ns: i64,
    /// Exact extremes when the source records them (cyclictest's footer: its max includes
    /// the overflowed samples, which the buckets do not hold).
    pub min_ns: Option<i64>,
    pub max_ns: Option<i64>,
    /// The source's own total, to cross-check the buckets against.
    pub count: Option<u64>,
    /// The source's own average in ns, kept in the details for comparison.
    pub avg_ns: Option<f64>,
}

/// Reads the files of one run in `format` and builds its run.json.
pub fn import(format: ImportFormat, files: &[SourceFile], options: &ImportOptions) -> Result<RunResult, ImportError> {
    let Some(first) = files.first() else {
        return Err(ImportError::whole(format.name(), "no file given"));
    };
    let parsed = parse_source(format, files, options)?;
    build_run(format, files, parsed, options).map_err(|reason| ImportError::whole(&first.path, reason))
}

/// Reads the files of one run in `format` into its series, before any statistic.
pub fn parse_source(
    format: ImportFormat,
    files: &[SourceFile],
    options: &ImportOptions,
) -> Result<ParsedSource, ImportError> {
    match format {
        ImportFormat::Cyclictest => cyclictest::parse(files, options),
        ImportFormat::Rtla => parse_rtla(files, options),
        ImportFormat::Jitterdebugger => jitterdebugger::parse(files, options),
        ImportFormat::Xenomai => xenomai::parse(files, options),
        ImportFormat::Oslat => oslat::parse(files, options),
    }
}

/// rtla's histograms and its `timerlat top` table share one import format: the file says
/// which it holds (a histogram header wins, so a hist with a stray "CPU COUNT" stays a hist).
fn parse_rtla(files: &[SourceFile], options: &ImportOptions) -> Result<ParsedSource, ImportError> {
    if let [file] = files {
        let lines = text_lines(file)?;
        if !rtla::has_histogram_header(&lines) && rtla_top::is_timerlat_top(&lines) {
            return rtla_top::parse(file);
        }
    }
    rtla::parse(files, options)
}

/// Lines of a text file, numbered from 1, or the line where it stops being UTF-8.
pub fn text_lines(file: &SourceFile) -> Result<Vec<(usize, &str)>, ImportError> {
    let text = std::str::from_utf8(&file.bytes).map_err(|e| {
        let line = file.bytes[..e.valid_up_to()].iter().filter(|&&b| b == b'\n').count() + 1;
        ImportError::at(&file.path, line, "not UTF-8 text")
    })?;
    Ok(text.lines().enumerate().map(|(i, l)| (i + 1, l.trim_end_matches('\r'))).collect())
}

/// The name of a source's value unit in ns: "ns" for 1, else "µs".
pub(crate) fn unit_name(unit_ns: u64) -> &'static str {
    if unit_ns == 1 {
        "ns"
    } else {
        "µs"
    }
}

/// "hh:mm:ss" -> (h, m, s), minutes and seconds below 60; the caller bounds the hours.
pub(crate) fn clock_fields(text: &str) -> Option<(u64, u64, u64)> {
    let mut fields = text.split(':').map(|f| f.parse::<u64>().ok());
    let (h, m, s) = (fields.next()??, fields.next()??, fields.next()??);
    (fields.next().is_none() && m < 60 && s < 60).then_some((h, m, s))
}

/// A whole number of `unit_ns`, checked against [`MAX_VALUE_NS`].
pub fn scaled(value: i64, unit_ns: u64) -> Option<i64> {
    value.checked_mul(unit_ns as i64).filter(|v| v.abs() <= MAX_VALUE_NS)
}

/// Builds the run.json of a parsed source: one measurement per series under the
/// "imported" scenario, statistics from the histogram and moments exactly as for a run.
pub fn build_run(
    format: ImportFormat,
    files: &[SourceFile],
    parsed: ParsedSource,
    options: &ImportOptions,
) -> Result<RunResult, String> {
    if parsed.series.is_empty() {
        return Err("no samples or histogram found".into());
    }
    let mut assumed = parsed.assumed.clone();
    let interval_ns = match (options.interval_ns, parsed.interval_ns) {
        (Some(given), _) => {
            assumed
                .push(format!("interval {} µs: given with --interval", rtlab_analysis::units::format_us(given as i64)));
            given
        }
        (None, Some(recorded)) => recorded,
        (None, None) => {
            assumed.push(
                "interval 1 ms: the source does not record its period (this is the tool's default; give --interval otherwise)"
                    .to_string(),
            );
            1_000_000
        }
    };
    if interval_ns == 0 {
        return Err("the period is 0".into());
    }

    let mut measurements = Vec::new();
    let mut bucket_ns: Option<u64> = None;
    let mut summary_only = false;
    let mut histogram_only = false;
    // Sentences on what the sources clipped, and whether a mean came from the buckets.
    let mut censored: Vec<String> = Vec::new();
    let mut censored_without_mean = false;
    let mut uncensored_histogram = false;
    let layout = HistogramLayout::for_series(&parsed.series);
    for (index, series) in parsed.series.iter().enumerate() {
        let cpu = series.cpu.unwrap_or(index);
        let source_avg = match &series.data {
            SeriesData::Histogram(h) => h.avg_ns,
            SeriesData::SummaryOnly { avg_ns, .. } => Some(*avg_ns),
            SeriesData::Samples(_) => None,
        };
        if source_avg.is_some_and(|a| !a.is_finite() || a.abs() > MAX_VALUE_NS as f64) {
            return Err(format!("{} {}: the source's average is out of range", series.metric, series.thread));
        }
        let (histogram, moments, censoring) = record_series(series, &layout)?;
        if let Some(c) = &censoring {
            censored.push(censored_sentence(series, &moments, c));
            censored_without_mean |= !c.exact.iter().any(|e| e == "mean");
        } else if matches!(series.data, SeriesData::Histogram(_)) {
            uncensored_histogram = true;
        }
        match &series.data {
            SeriesData::Histogram(h) => {
                histogram_only = true;
                bucket_ns = Some(bucket_ns.map_or(h.width_ns, |w| w.max(h.width_ns)));
            }
            SeriesData::SummaryOnly { .. } => summary_only = true,
            SeriesData::Samples(_) => {}
        }
        let mut details = series.details.clone();
        match &series.data {
            SeriesData::Histogram(h) => {
                if let Some(avg) = h.avg_ns {
                    details.insert("source_avg_ns".into(), Detail::Float(avg));
                }
                if h.overflows > 0 {
                    details.insert("source_overflows".into(), Detail::Int(h.overflows as i64));
                }
            }
            SeriesData::SummaryOnly { min_ns, avg_ns, max_ns } => {
                details.insert("source_min_ns".into(), Detail::Int(*min_ns));
                details.insert("source_avg_ns".into(), Detail::Float(*avg_ns));
                details.insert("source_max_ns".into(), Detail::Int(*max_ns));
            }
            SeriesData::Samples(_) => {}
        }
        let overruns = series.overruns.unwrap_or(0);
        measurements.push(Measurement {
            scenario: IMPORTED_SCENARIO.to_string(),
            probe: series.probe.clone(),
            metric: series.metric.clone(),
            cpu,
            thread: series.thread.clone(),
            count: moments.count,
            cycles: moments.count.checked_add(overruns).ok_or("the overrun count is out of range")?,
            overruns,
            lost: 0,
            interval_ns: series.interval_ns.filter(|&i| i > 0).unwrap_or(interval_ns),
            summary: Summary::from_censored_parts(&histogram, &moments, censoring),
            moments,
            histogram: histogram.encode().map_err(|e| e.to_string())?,
            per_second_max_ns: series.per_second_max_ns.clone(),
            block_s: 1,
            raw_file: None,
            raw_samples: None,
            details,
            sequence_ns: None,
        });
    }

    let (exact, bounded) = if summary_only {
        (vec!["min".into(), "mean".into(), "max".into()], vec![])
    } else if histogram_only && !censored.is_empty() {
        // The mean of a clipped series is the source's own, or a lower bound (in `censored`).
        let mut exact = vec!["count".to_string(), "min".into(), "max".into()];
        if !censored_without_mean {
            exact.push(if uncensored_histogram {
                "mean of the series that overflowed (the source's own)".into()
            } else {
                "mean (the source's own)".into()
            });
        }
        let mut bounded = vec!["percentiles within the histogram".to_string()];
        if uncensored_histogram {
            bounded.insert(0, "mean and stddev of the series that did not overflow".into());
        }
        (exact, bounded)
    } else if histogram_only {
        (vec!["count".into(), "min".into(), "max".into()], vec!["mean".into(), "stddev".into(), "percentiles".into()])
    } else {
        (
            vec![
                "count".into(),
                "min".into(),
                "max".into(),
                "mean".into(),
                "stddev".into(),
                "percentiles (to 0.1 %, as in rtlab's own runs)".into(),
            ],
            vec![],
        )
    };
    let mut not_recorded = vec!["loads".to_string(), "system activity".to_string(), "privileges".to_string()];
    if parsed.host == SourceHost::default() {
        not_recorded.insert(0, "host".into());
    }
    if parsed.duration_s.is_none() {
        not_recorded.push("duration".into());
    }
    if parsed.policy.is_none() || parsed.priority.is_none() {
        not_recorded.push("scheduling policy and priority".into());
    }
    if parsed.series.iter().all(|s| s.overruns.is_none()) {
        not_recorded.push("overruns".into());
    }

    let mut probes: Vec<String> = Vec::new();
    let mut cpus: Vec<usize> = Vec::new();
    for m in &measurements {
        if !probes.contains(&m.probe) {
            probes.push(m.probe.clone());
        }
        if !cpus.contains(&m.cpu) {
            cpus.push(m.cpu);
        }
    }
    cpus.sort_unstable();
    let host = source_host(&parsed.host, &cpus);
    let label = options
        .label
        .clone()
        .or_else(|| parsed.host.hostname.clone().filter(|h| !h.is_empty()))
        .unwrap_or_else(|| file_stem(&files[0].path));
    let policy = parsed.policy.unwrap_or(Policy::Fifo);
    let priority = parsed.priority.unwrap_or(0);
    let duration_s = parsed.duration_s.unwrap_or(0.0);
    let histogram_max_ns = measurements.iter().filter_map(|m| m.summary.as_ref().map(|s| s.max)).max().unwrap_or(0);
    let info = ImportInfo {
        from: format.name().to_string(),
        layouts: parsed.layouts.clone(),
        files: files.iter().map(|f| f.path.clone()).collect(),
        source_tool: parsed.source_tool.clone(),
        source_command_line: parsed.source_command_line.clone(),
        bucket_ns,
        resolution_ns: parsed.resolution_ns.max(1),
        exact,
        bounded,
        assumed,
        not_recorded,
        notes: parsed.notes.clone(),
        censored,
    };
    let run = RunResult {
        schema: SCHEMA.to_string(),
        tool: ToolInfo { name: "rtlab".into(), version: env!("CARGO_PKG_VERSION").into(), commit: None },
        command_line: Vec::new(),
        label,
        start_time: parsed.start_time.clone().unwrap_or_default(),
        end_time: parsed.end_time.clone().unwrap_or_default(),
        duration_s,
        interrupted: false,
        simulated: false,
        realtime: RealtimeStatus {
            // The sources are real-time tools; what they ran with is theirs to record.
            real_time_results: true,
            policy,
            priority,
            memory_locked: false,
            dma_latency_held: false,
            timer_slack_ns: None,
            notes: vec![format!("imported from {}: the real-time set-up is as the source tool ran it", format.name())],
        },
        host,
        experiment: Experiment {
            probes,
            interval_ns,
            policy,
            priority,
            cpus,
            duration_ns: parsed.duration_s.map(|s| (s * 1e9) as u64),
            samples_per_cpu: None,
            warmup_samples: 0,
            histogram_max_ns: histogram_max_ns.max(0) as u64,
            raw: false,
            dma_latency: false,
            loads: vec![IMPORTED_SCENARIO.to_string()],
            presets: BTreeMap::new(),
            load_cpus: None,
            settle_ns: 0,
            probe_settings: ProbeSettings::default(),
        },
        scenarios: vec![Scenario {
            name: IMPORTED_SCENARIO.to_string(),
            loads: Vec::new(),
            load_failure: None,
            raw_stopped: None,
            settle_s: 0.0,
            duration_s,
            interrupted: false,
            activity: None,
            convergence: None,
        }],
        measurements,
        warnings: Vec::new(),
        resources: Resources { peak_rss_kib: None },
        verdict: None,
        imported: Some(info),
        taskset: None,
        split: None,
        noise: None,
    };
    run.check()?;
    Ok(run)
}

/// One histogram shape for every series of an import, so that the reports can merge the
/// threads into "all CPUs" (HDR histograms only merge into a range that holds the other's).
struct HistogramLayout {
    ceiling_ns: u64,
    /// The narrowest bucket width of the histogram sources; None when all are samples.
    width_ns: Option<u64>,
}

impl HistogramLayout {
    fn for_series(series: &[Series]) -> Self {
        let mut top: i64 = 0;
        let mut width_ns: Option<u64> = None;
        for s in series {
            let series_top = match &s.data {
                SeriesData::Samples(values) => values.iter().copied().max().unwrap_or(0),
                SeriesData::Histogram(h) => {
                    width_ns = Some(width_ns.map_or(h.width_ns, |w| w.min(h.width_ns)));
                    let buckets = h.buckets.iter().filter(|b| b.1 > 0).map(|b| b.0).max().unwrap_or(0);
                    buckets.max(h.max_ns.unwrap_or(0)).max(h.overflow_from_ns)
                }
                SeriesData::SummaryOnly { max_ns, .. } => *max_ns,
            };
            top = top.max(series_top);
        }
        // Values past the limit are refused per series; the bound keeps memory bounded first.
        Self { ceiling_ns: ceiling(top.min(MAX_VALUE_NS)), width_ns }
    }

    fn histogram(&self) -> Result<LatencyHistogram, String> {
        match self.width_ns {
            Some(width) => LatencyHistogram::resolving(self.ceiling_ns, width),
            None => LatencyHistogram::new(self.ceiling_ns),
        }
        .map_err(|e| e.to_string())
    }
}

/// The histogram and exact moments of one series. Overflowed samples (beyond the last
/// bucket) are recorded at the overflow bound, the largest at the source's exact max when
/// it recorded one: a lower bound, never an invented value.
/// Also what the source clipped: None when nothing overflowed.
fn record_series(
    series: &Series,
    layout: &HistogramLayout,
) -> Result<(LatencyHistogram, Moments, Option<Censoring>), String> {
    let what = format!("{} {}", series.metric, series.thread);
    let mut moments = Moments::new();
    let mut censoring = None;
    let histogram = match &series.data {
        SeriesData::Samples(values) => {
            if values.len() as u64 > MAX_TOTAL_COUNT {
                return Err(format!("{what}: more than {MAX_TOTAL_COUNT} samples"));
            }
            let max = values.iter().copied().max().unwrap_or(0);
            check_value(&what, max)?;
            check_value(&what, values.iter().copied().min().unwrap_or(0))?;
            let mut h = layout.histogram()?;
            for &v in values {
                h.record(v);
                moments.record(v);
            }
            h
        }
        SeriesData::Histogram(source) => {
            if source.width_ns == 0 {
                return Err(format!("{what}: histogram bucket width is 0"));
            }
            let mut total: u64 = source.overflows;
            for &(lower, count) in &source.buckets {
                check_value(&what, lower)?;
                total = total
                    .checked_add(count)
                    .filter(|&t| t <= MAX_TOTAL_COUNT)
                    .ok_or_else(|| format!("{what}: more than {MAX_TOTAL_COUNT} samples (a count is out of range)"))?;
            }
            if total > MAX_TOTAL_COUNT {
                return Err(format!("{what}: more than {MAX_TOTAL_COUNT} samples"));
            }
            for v in [source.min_ns, source.max_ns].into_iter().flatten() {
                check_value(&what, v)?;
            }
            check_value(&what, source.overflow_from_ns)?;
            let mut h = layout.histogram()?;
            for &(lower, count) in &source.buckets {
                h.record_n(lower, count);
                moments.record_n(lower, count);
            }
            if source.overflows > 0 {
                let largest = source.max_ns.filter(|&m| m >= source.overflow_from_ns);
                let at_bound = source.overflows - u64::from(largest.is_some());
                h.record_n(source.overflow_from_ns, at_bound);
                moments.record_n(source.overflow_from_ns, at_bound);
                if let Some(m) = largest {
                    h.record(m);
                    moments.record(m);
                }
                // Right-censored at the bound: the source's own figures stay exact.
                let mut exact = Vec::new();
                if source.min_ns.is_some() {
                    exact.push("min");
                }
                if largest.is_some() {
                    exact.push("max");
                }
                if let Some(avg) = source.avg_ns {
                    let mut within = Moments::new();
                    source.buckets.iter().for_each(|&(lower, count)| within.record_n(lower, count));
                    let exact_mean = censored::moments_with_exact_mean(
                        &within,
                        source.overflows,
                        source.overflow_from_ns,
                        largest,
                        avg,
                    );
                    // The source's mean stands only if the buckets allow it (rounding aside).
                    if exact_mean.sum == (avg * exact_mean.count as f64).round() as i128 {
                        exact.push("mean");
                    }
                    moments = exact_mean;
                }
                censoring = Some(Censoring::new(source.overflow_from_ns, source.overflows, &exact));
            }
            if let Some(expected) = source.count {
                if expected != moments.count {
                    return Err(format!(
                        "{what}: the buckets hold {} samples but the source's total says {expected}",
                        moments.count
                    ));
                }
            }
            h
        }
        SeriesData::SummaryOnly { min_ns, max_ns, .. } => {
            check_value(&what, *min_ns)?;
            check_value(&what, *max_ns)?;
            layout.histogram()?
        }
    };
    Ok((histogram, moments, censoring))
}

/// "timer.latency T:0: 2,566 of 3,000 samples lie beyond the source's histogram (at least
/// 20.0 µs): ..." for the import's header.
fn censored_sentence(series: &Series, moments: &Moments, c: &Censoring) -> String {
    let from = |names: &[&str]| {
        let known: Vec<&str> = names.iter().copied().filter(|n| c.exact.iter().any(|e| e == n)).collect();
        if known.is_empty() {
            String::new()
        } else {
            format!("; {} from the source's own figures", known.join(", "))
        }
    };
    format!(
        "{} {}: {} of {} samples lie beyond the source's histogram (each at least {} µs): statistics that fall among \
         them are lower bounds, shown {}{}",
        series.metric,
        series.thread,
        rtlab_analysis::units::thousands(c.count),
        rtlab_analysis::units::thousands(moments.count),
        rtlab_analysis::units::format_us(c.above_ns),
        censored::LOWER_BOUND_SIGN,
        from(&["min", "max", "mean"])
    )
}

/// Makes a histogram's exactly recorded extremes exact in the import too. A source that
/// records min and max exactly while its buckets only say "somewhere in [lower, lower +
/// width)": every sample of the min's bucket is at least the min, so that bucket's bound
/// is raised to it; one sample of the max's bucket is the max, so it is moved there (a max
/// among the overflows is placed by `build_run`). Every recorded value stays a lower bound
/// of the true one and counts do not change. An extreme outside the lowest / highest
/// non-empty bucket means the file contradicts itself: Err with the reason.
pub(crate) fn pin_recorded_extremes(histogram: &mut SourceHistogram) -> Result<(), String> {
    let width = i64::try_from(histogram.width_ns).map_err(|_| "bucket width out of range".to_string())?;
    let non_empty = || histogram.buckets.iter().filter(|(_, count)| *count > 0).map(|(lower, _)| *lower);
    let (lowest, highest) = (non_empty().min(), non_empty().max());
    let holding = |value: i64| {
        histogram.buckets.iter().position(|&(lower, count)| {
            count > 0 && lower <= value && lower.checked_add(width).is_some_and(|upper| value < upper)
        })
    };
    let mut max_bucket: Option<usize> = None;
    if let Some(max) = histogram.max_ns {
        if histogram.overflows > 0 {
            if max < histogram.overflow_from_ns {
                return Err(format!(
                    "max {max} ns lies below the overflow bound {} ns, yet {} samples overflowed",
                    histogram.overflow_from_ns, histogram.overflows
                ));
            }
        } else if let Some(highest) = highest {
            let bucket = holding(max).ok_or_else(|| format!("max {max} ns lies in no non-empty bucket"))?;
            if histogram.buckets.get(bucket).map(|b| b.0) != Some(highest) {
                return Err(format!("max {max} ns is not in the highest non-empty bucket ({highest} ns)"));
            }
            if highest != max {
                max_bucket = Some(bucket);
            }
        }
    }
    if let Some(min) = histogram.min_ns {
        match lowest {
            Some(lowest) => {
                let bucket = holding(min).ok_or_else(|| format!("min {min} ns lies in no non-empty bucket"))?;
                let Some(entry) = histogram.buckets.get_mut(bucket) else { return Err("no such bucket".into()) };
                if entry.0 != lowest {
                    return Err(format!("min {min} ns is not in the lowest non-empty bucket ({lowest} ns)"));
                }
                if max_bucket == Some(bucket) && entry.1 == 1 && histogram.max_ns != Some(min) {
                    return Err(format!("one sample cannot be both the min {min} ns and a larger max"));
                }
                entry.0 = min;
            }
            None if histogram.overflows > 0 => {
                if min < histogram.overflow_from_ns {
                    return Err(format!("min {min} ns lies below the overflow bound, where no bucket holds a sample"));
                }
                // Every sample overflowed: all are at least the min.
                histogram.overflow_from_ns = min;
            }
            None => {}
        }
    }
    if let (Some(bucket), Some(max)) = (max_bucket, histogram.max_ns) {
        if let Some(entry) = histogram.buckets.get_mut(bucket) {
            entry.1 = entry.1.saturating_sub(1);
        }
        histogram.buckets.push((max, 1));
    }
    Ok(())
}

fn check_value(what: &str, value: i64) -> Result<(), String> {
    if value.abs() > MAX_VALUE_NS {
        return Err(format!("{what}: value {value} ns is out of range (more than 1000 s)"));
    }
    Ok(())
}

/// Histogram ceiling for a largest value: the default 10 s, or more when needed.
fn ceiling(max_ns: i64) -> u64 {
    rtlab_analysis::DEFAULT_MAX_NS.max(max_ns.max(0) as u64 + 1)
}

fn file_stem(path: &str) -> String {
    std::path::Path::new(path)
        .file_stem()
        .and_then(|s| s.to_str())
        .filter(|s| !s.is_empty())
        .unwrap_or("imported")
        .to_string()
}

/// The host part of run.json: what the source recorded, the rest empty.
fn source_host(source: &SourceHost, cpus: &[usize]) -> rtlab_results::host::SystemInfo {
    use rtlab_results::host::*;
    SystemInfo {
        hostname: source.hostname.clone().unwrap_or_default(),
        kernel_release: source.kernel_release.clone().unwrap_or_default(),
        kernel_version: source.kernel_version.clone().unwrap_or_default(),
        machine: source.machine.clone().unwrap_or_default(),
        preemption_model: source
            .kernel_version
            .as_deref()
            .map(preemption_from_uname_version)
            .unwrap_or(PreemptionModel::Unknown),
        preemption_dynamic_mode: None,
        preemption_evidence: if source.kernel_version.is_some() {
            vec!["uname -v recorded by the source".into()]
        } else {
            Vec::new()
        },
        kernel_cmdline: String::new(),
        isolated_cpus: Vec::new(),
        nohz_full_cpus: Vec::new(),
        cpu_model: String::new(),
        online_cpus: match source.cpu_count {
            // A damaged count must not size an allocation; no host has more CPUs than this.
            Some(n) if n <= MAX_CPUS => (0..n).collect(),
            _ => cpus.to_vec(),
        },
        smt_sibling_groups: Vec::new(),
        frequency_governors: Vec::new(),
        clocksource: None,
        virtualization: Virtualization { guest: false, hypervisor: None, evidence: Vec::new() },
        rt_throttling: RtThrottling { period_us: None, runtime_us: None },
        privileges: rtlab_results::host::Privileges {
            euid: 0,
            cap_sys_nice: false,
            cap_ipc_lock: false,
            rtprio_limit: 0,
            memlock_limit_bytes: None,
        },
    }
}

/// The preemption model a `uname -v` string names ("PREEMPT_RT", "PREEMPT_DYNAMIC", ...).
fn preemption_from_uname_version(version: &str) -> rtlab_results::host::PreemptionModel {
    use rtlab_results::host::PreemptionModel;
    let words: Vec<&str> = version.split_whitespace().collect();
    if words.contains(&"PREEMPT_RT") {
        PreemptionModel::PreemptRt
    } else if words.contains(&"PREEMPT_DYNAMIC") {
        PreemptionModel::PreemptDynamic
    } else if words.contains(&"PREEMPT") {
        PreemptionModel::Preempt
    } else {
        PreemptionModel::Unknown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn histogram_source(overflows: u64, max_ns: Option<i64>) -> ParsedSource {
        let histogram = SourceHistogram {
            width_ns: 1000,
            buckets: vec![(17_000, 3), (18_000, 5), (25_000, 2)],
            overflows,
            overflow_from_ns: 100_000,
            min_ns: Some(17_000),
            max_ns,
            count: Some(10 + overflows),
            avg_ns: Some(19_000.0),
        };
        ParsedSource {
            layouts: vec!["test-histogram".into()],
            resolution_ns: 1000,
            series: vec![Series::new("timer", "timer.latency", None, "T:0", SeriesData::Histogram(histogram))],
            ..ParsedSource::default()
        }
    }

    fn file() -> Vec<SourceFile> {
        vec![SourceFile { path: "dir/hist.txt".into(), bytes: Vec::new() }]
    }

    #[test]
    fn histogram_counts_and_extremes_are_exact_and_marked_so() {
        let run =
            build_run(ImportFormat::Cyclictest, &file(), histogram_source(0, Some(25_000)), &ImportOptions::default())
                .unwrap();
        let m = &run.measurements[0];
        assert_eq!((m.count, m.cycles, m.overruns, m.cpu), (10, 10, 0, 0));
        let s = m.summary.as_ref().unwrap();
        assert_eq!((s.min, s.max), (17_000, 25_000));
        // Mean of the bucket lower bounds: (3*17 + 5*18 + 2*25) / 10 µs.
        assert_eq!(m.moments.sum, 191_000);
        assert_eq!(s.p50 / 1000, 18, "the median lies in the 18 µs bucket");
        let info = run.imported.as_ref().unwrap();
        assert_eq!(info.bucket_ns, Some(1000));
        assert!(info.bounded.contains(&"percentiles".to_string()));
        assert!(info.assumed.iter().any(|a| a.contains("interval 1 ms")), "{:?}", info.assumed);
        assert!(info.not_recorded.contains(&"host".to_string()));
        assert_eq!(run.label, "hist");
        assert_eq!(run.scenarios[0].name, IMPORTED_SCENARIO);
    }

    #[test]
    fn overflows_sit_at_the_bound_and_the_largest_at_the_recorded_max() {
        let run = build_run(
            ImportFormat::Cyclictest,
            &file(),
            histogram_source(3, Some(4_000_000)),
            &ImportOptions::default(),
        )
        .unwrap();
        let m = &run.measurements[0];
        assert_eq!(m.count, 13);
        assert_eq!(m.moments.max, 4_000_000);
        assert_eq!(m.moments.sum, 191_000 + 2 * 100_000 + 4_000_000);
        assert_eq!(m.details.get("source_overflows"), Some(&Detail::Int(3)));
    }

    #[test]
    fn a_total_that_disagrees_with_the_buckets_is_an_error() {
        let mut source = histogram_source(0, Some(25_000));
        if let SeriesData::Histogram(h) = &mut source.series[0].data {
            h.count = Some(11);
        }
        let error = build_run(ImportFormat::Cyclictest, &file(), source, &ImportOptions::default()).unwrap_err();
        assert!(error.contains("the buckets hold 10 samples but the source's total says 11"), "{error}");
    }

    #[test]
    fn huge_values_and_counts_are_errors_not_overflows() {
        let mut source = histogram_source(0, None);
        if let SeriesData::Histogram(h) = &mut source.series[0].data {
            h.buckets.push((17_000, u64::MAX));
            h.count = None;
        }
        assert!(build_run(ImportFormat::Rtla, &file(), source, &ImportOptions::default()).is_err());
        let mut source = histogram_source(0, None);
        source.series[0].data = SeriesData::Samples(vec![1, i64::MAX]);
        assert!(build_run(ImportFormat::Rtla, &file(), source, &ImportOptions::default()).is_err());
    }

    #[test]
    fn the_error_names_file_and_line() {
        assert_eq!(ImportError::at("f.txt", 7, "bad row").to_string(), "f.txt:7: bad row");
        assert_eq!(ImportError::whole("f.txt", "empty").to_string(), "f.txt: empty");
    }

    #[test]
    fn samples_give_exact_statistics_and_the_given_interval() {
        let mut source = histogram_source(0, None);
        source.series[0].data = SeriesData::Samples(vec![5_000, 7_000, 6_000]);
        source.series[0].cpu = Some(1);
        let options = ImportOptions { interval_ns: Some(200_000), label: Some("old".into()), ..Default::default() };
        let run = build_run(ImportFormat::Jitterdebugger, &file(), source, &options).unwrap();
        let m = &run.measurements[0];
        assert_eq!((m.cpu, m.interval_ns, m.count), (1, 200_000, 3));
        // Percentiles are as exact as those of rtlab's own runs: HDR, to 0.1 %.
        assert_eq!(m.summary.as_ref().unwrap().p50 / 1000, 6);
        assert!(run.imported.as_ref().unwrap().bounded.is_empty());
        assert_eq!(run.label, "old");
    }
}
