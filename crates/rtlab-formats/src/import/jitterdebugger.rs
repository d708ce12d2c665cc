//! jitterdebugger files -> [`ParsedSource`]: `results.json` and/or `samples.raw` of
//! `jitterdebugger -o DIR [-s]`, recognised by content (a JSON object, or binary records).
//!
//! Facts checked on jitterdebugger 0.3 runs (Debian package) and its source:
//! - `results.json` (version 3): `sysinfo` (uname fields, `cpus_online`,
//!   `resolution_in_ns`: 1000, or 1 with -N) and per thread `"cpu": {"0": {"histogram":
//!   {"17": 12, ...}, "count", "min", "max", "avg"}}`. The histogram has 1000 µs of
//!   resolution-wide slots: samples of 1000 µs and more are only in count and max.
//! - `samples.raw`: packed little-endian 28-byte records `u32 thread, u64 tv_sec, u64
//!   tv_nsec, u64 value` (`struct latency_sample` is `__attribute__((packed))`), the
//!   timestamp being the CLOCK_MONOTONIC wake-up time, the value in the resolution above.
//! - The keys and the record's first field number threads, not CPUs: thread i runs on the
//!   i-th CPU of the affinity set (all online CPUs unless -a).
//! - The writer thread stops without draining its ring buffer, so samples.raw usually
//!   lacks the last few samples of each thread that results.json counts. With both files
//!   those are recovered exactly from the histogram difference when they are below 1000
//!   µs; otherwise the import keeps every saved sample exactly and the missing ones as
//!   overflows at 1000 µs (a lower bound), the largest at results.json's max.

use super::{
    scaled, unit_name, ImportError, ImportOptions, ParsedSource, Series, SeriesData, SourceFile, SourceHistogram,
    SourceHost,
};
use rtlab_results::host::Policy;
use serde_json::Value;
use std::collections::BTreeMap;

pub const RESULTS_LAYOUT: &str = "jitterdebugger-results";
pub const SAMPLES_LAYOUT: &str = "jitterdebugger-samples";

/// Size of one `struct latency_sample` in samples.raw.
pub const RECORD_BYTES: usize = 28;
/// jitterdebugger's histogram holds 0 to 999 µs (1000 slots of 1 µs, or 10^6 of 1 ns with -N).
pub const HISTOGRAM_CAP_NS: i64 = 1_000_000;
/// glibc's CPU_SETSIZE: jitterdebugger cannot run more threads.
const MAX_THREADS: u32 = 1024;
/// jitterdebugger's default worker priority (-p).
const DEFAULT_PRIORITY: i32 = 80;
const NS_PER_S: u128 = 1_000_000_000;

/// One thread's entry of results.json, values in ns.
#[derive(Debug)]
struct ThreadResult {
    /// The line of its `"N": {` key, for messages.
    line: usize,
    count: u64,
    min_ns: i64,
    max_ns: i64,
    avg_ns: Option<f64>,
    /// Bucket lower bound (ns) -> count, below [`HISTOGRAM_CAP_NS`].
    histogram: BTreeMap<i64, u64>,
}

#[derive(Debug)]
struct Results {
    path: String,
    version: Option<u64>,
    host: SourceHost,
    resolution_ns: Option<u64>,
    threads: BTreeMap<u32, ThreadResult>,
}

/// One thread's records of samples.raw: (wake-up time ns, value ns), in file order.
type RawThreads = BTreeMap<u32, Vec<(u128, i64)>>;

pub fn parse(files: &[SourceFile], options: &ImportOptions) -> Result<ParsedSource, ImportError> {
    let mut results: Option<Results> = None;
    let mut raw_file: Option<&SourceFile> = None;
    let mut layouts = Vec::new();
    for file in files {
        if looks_like_json(&file.bytes) {
            if results.is_some() {
                return Err(ImportError::whole(
                    &file.path,
                    "a second results.json: give one run's results.json and/or samples.raw",
                ));
            }
            results = Some(parse_results(file)?);
            layouts.push(RESULTS_LAYOUT.to_string());
        } else {
            if raw_file.is_some() {
                return Err(ImportError::whole(
                    &file.path,
                    "a second samples.raw: give one run's results.json and/or samples.raw",
                ));
            }
            raw_file = Some(file);
            layouts.push(SAMPLES_LAYOUT.to_string());
        }
    }
    let mut parsed = ParsedSource { layouts, ..ParsedSource::default() };

    // The values' unit: results.json records it; samples.raw alone does not.
    let unit_ns = match results.as_ref().and_then(|r| r.resolution_ns) {
        Some(resolution) => {
            if options.unit.is_some_and(|u| u.ns() != resolution) {
                parsed.notes.push("--unit ignored: results.json records its resolution".to_string());
            }
            resolution
        }
        None => {
            let unit = options.unit.map_or(1000, |u| u.ns());
            let name = unit_name(unit);
            parsed.assumed.push(match options.unit {
                Some(_) => format!("values in {name}: given with --unit"),
                None => format!(
                    "values in µs: {} does not record its resolution (jitterdebugger's default; ns with -N: give --unit ns)",
                    if results.is_some() { "this results.json" } else { "samples.raw" }
                ),
            });
            parsed.unit_assumed = true;
            unit
        }
    };
    let raw = raw_file.map(|file| parse_samples(file, unit_ns)).transpose()?;

    parsed.source_tool = Some(match results.as_ref().and_then(|r| r.version) {
        Some(version) => format!("jitterdebugger (results.json version {version})"),
        None => "jitterdebugger".to_string(),
    });
    parsed.resolution_ns = unit_ns;
    parsed.policy = Some(Policy::Fifo);
    parsed.priority = Some(DEFAULT_PRIORITY);
    parsed.assumed.push(format!(
        "priority {DEFAULT_PRIORITY}: jitterdebugger's default (-p); its files do not record it (the policy is always SCHED_FIFO)"
    ));
    if let Some(results) = &results {
        parsed.host = results.host.clone();
    }

    // Threads are numbered over the affinity set: with one thread per online CPU, thread i
    // ran on CPU i.
    let thread_ids: Vec<u32> = {
        let mut ids: Vec<u32> = results.iter().flat_map(|r| r.threads.keys().copied()).collect();
        ids.extend(raw.iter().flat_map(|r| r.keys().copied()));
        ids.sort_unstable();
        ids.dedup();
        ids
    };
    let cpus_known = parsed.host.cpu_count.is_some_and(|n| n == thread_ids.len());
    if cpus_known {
        parsed.assumed.push(
            "thread N ran on CPU N: jitterdebugger numbers its threads, one per online CPU unless -a limited them"
                .to_string(),
        );
    } else {
        parsed.notes.push(
            "the CPU of each thread is not recorded (jitterdebugger numbers its threads over its -a set): the \
             measurements are numbered by thread"
                .to_string(),
        );
    }

    let (first_ns, last_ns) = raw.iter().flat_map(|r| r.values().flatten().map(|&(t, _)| t)).fold(
        (None, None),
        |(lo, hi): (Option<u128>, Option<u128>), t| {
            (Some(lo.map_or(t, |l| l.min(t))), Some(hi.map_or(t, |h| h.max(t))))
        },
    );
    if let (Some(first), Some(last)) = (first_ns, last_ns) {
        parsed.duration_s = Some((last - first) as f64 / 1e9);
    }

    for &id in &thread_ids {
        let result = results.as_ref().and_then(|r| r.threads.get(&id));
        let saved = raw.as_ref().and_then(|r| r.get(&id));
        let results_path = results.as_ref().map_or("results.json", |r| r.path.as_str());
        let raw_path = raw_file.map_or("samples.raw", |f| f.path.as_str());
        let saved_values = || -> Vec<i64> { saved.map(|s| s.iter().map(|&(_, v)| v).collect()).unwrap_or_default() };
        let data = match (result, raw.is_some()) {
            (Some(result), false) => histogram_of(result, unit_ns),
            (Some(result), true) => {
                let (data, note) = combine(id, result, saved_values(), unit_ns, (results_path, raw_path))?;
                parsed.notes.extend(note);
                data
            }
            (None, true) if results.is_some() => {
                return Err(ImportError::whole(
                    raw_path,
                    format!(
                        "samples.raw holds samples of thread {id}, which {results_path} does not list: the files are \
                         from different runs"
                    ),
                ))
            }
            (None, _) => Some(SeriesData::Samples(saved_values())).filter(|_| saved.is_some_and(|s| !s.is_empty())),
        };
        let Some(data) = data else {
            parsed.notes.push(format!("thread {id}: no samples (left out)"));
            continue;
        };
        let mut series =
            Series::new("timer", "timer.latency", cpus_known.then_some(id as usize), format!("T:{id}"), data);
        if let (Some(saved), Some(first)) = (saved, first_ns) {
            series.per_second_max_ns = per_second_maxima(saved, first);
        }
        if let Some(result) = result {
            if let Some(avg) = result.avg_ns {
                series.details.insert("source_avg_ns".into(), rtlab_results::run::Detail::Float(avg));
            }
        }
        parsed.series.push(series);
    }
    if raw.is_some() && results.is_none() {
        parsed.notes.push(
            "samples.raw alone: every saved sample, but jitterdebugger's writer usually misses each thread's last few \
             samples; give results.json too to recover them and to cross-check"
                .to_string(),
        );
    }
    if results.is_some() && raw.is_none() {
        parsed.notes.push(
            "results.json alone: its histogram stops at 1000 µs; samples at or above it are counted as overflows at \
             1000 µs (a lower bound), the largest at the recorded max. Give samples.raw (-s) for every value"
                .to_string(),
        );
    }
    if parsed.series.is_empty() {
        let path = files.first().map_or("jitterdebugger", |f| f.path.as_str());
        return Err(ImportError::whole(path, "no thread recorded a sample"));
    }
    Ok(parsed)
}

fn looks_like_json(bytes: &[u8]) -> bool {
    let start = bytes.iter().position(|b| !b.is_ascii_whitespace());
    // A samples.raw whose first thread number is 123 starts with '{' too, followed by NULs.
    start.is_some_and(|i| bytes.get(i) == Some(&b'{')) && !bytes.iter().take(RECORD_BYTES).any(|&b| b == 0)
}

/// results.json -> its threads, values in ns.
fn parse_results(file: &SourceFile) -> Result<Results, ImportError> {
    let path = file.path.as_str();
    let text = std::str::from_utf8(&file.bytes).map_err(|e| {
        let line = file.bytes.get(..e.valid_up_to()).map_or(0, |b| b.iter().filter(|&&c| c == b'\n').count()) + 1;
        ImportError::at(path, line, "not UTF-8 text")
    })?;
    let json: Value =
        serde_json::from_str(text).map_err(|e| ImportError::at(path, e.line().max(1), format!("not JSON: {e}")))?;
    let top = json.as_object().ok_or_else(|| ImportError::at(path, 1, "not a JSON object"))?;
    let version = match top.get("version") {
        None => None,
        Some(v) => Some(v.as_u64().ok_or_else(|| {
            ImportError::at(path, line_of(text, "\"version\"", 0), "\"version\" is not a whole number")
        })?),
    };
    let mut host = SourceHost::default();
    let mut resolution_ns = None;
    if let Some(sysinfo) = top.get("sysinfo") {
        let sysinfo_line = line_of(text, "\"sysinfo\"", 0);
        let sysinfo =
            sysinfo.as_object().ok_or_else(|| ImportError::at(path, sysinfo_line, "\"sysinfo\" is not an object"))?;
        let text_field =
            |key: &str| sysinfo.get(key).and_then(Value::as_str).map(str::to_string).filter(|s| !s.is_empty());
        host.hostname = text_field("nodename");
        host.kernel_release = text_field("release");
        host.kernel_version = text_field("version");
        host.machine = text_field("machine");
        host.cpu_count = match sysinfo.get("cpus_online") {
            None => None,
            Some(n) => Some(
                n.as_u64().filter(|&n| n > 0 && n <= u64::from(MAX_THREADS)).map(|n| n as usize).ok_or_else(|| {
                    ImportError::at(
                        path,
                        line_of(text, "\"cpus_online\"", 0),
                        format!("\"cpus_online\" {n} is not a CPU count"),
                    )
                })?,
            ),
        };
        if let Some(resolution) = sysinfo.get("resolution_in_ns") {
            resolution_ns =
                Some(resolution.as_u64().filter(|&r| (1..=1_000_000_000).contains(&r)).ok_or_else(|| {
                    ImportError::at(
                        path,
                        line_of(text, "\"resolution_in_ns\"", 0),
                        "\"resolution_in_ns\" is not a resolution in ns",
                    )
                })?);
        }
    }
    let unit_ns = resolution_ns.unwrap_or(1000);
    let cpu_line = line_of(text, "\"cpu\"", 0);
    let cpus = top
        .get("cpu")
        .ok_or_else(|| ImportError::whole(path, "no \"cpu\" object: not jitterdebugger's results.json"))?
        .as_object()
        .ok_or_else(|| ImportError::at(path, cpu_line, "\"cpu\" is not an object"))?;
    let cpu_offset = text.find("\"cpu\"").unwrap_or(0);
    let mut threads = BTreeMap::new();
    for (key, entry) in cpus {
        let line = line_of(text, &format!("\"{key}\""), cpu_offset);
        let id: u32 = key
            .parse()
            .ok()
            .filter(|&id| id < MAX_THREADS)
            .ok_or_else(|| ImportError::at(path, line, format!("thread key {key:?} is not a thread number")))?;
        let entry =
            entry.as_object().ok_or_else(|| ImportError::at(path, line, format!("thread {id} is not an object")))?;
        let number = |field: &str| -> Result<u64, ImportError> {
            entry.get(field).and_then(Value::as_u64).ok_or_else(|| {
                ImportError::at(path, line, format!("thread {id}: \"{field}\" is missing or not a whole number"))
            })
        };
        let to_ns = |value: u64, what: &str| -> Result<i64, ImportError> {
            i64::try_from(value)
                .ok()
                .and_then(|v| scaled(v, unit_ns))
                .ok_or_else(|| ImportError::at(path, line, format!("thread {id}: {what} {value} is out of range")))
        };
        let count = number("count")?;
        if count > super::MAX_TOTAL_COUNT {
            return Err(ImportError::at(path, line, format!("thread {id}: count {count} is out of range")));
        }
        let mut histogram = BTreeMap::new();
        let mut in_histogram: u64 = 0;
        match entry.get("histogram") {
            None => {}
            Some(Value::Object(buckets)) => {
                for (slot, hits) in buckets {
                    let slot_value: u64 = slot.parse().map_err(|_| {
                        ImportError::at(path, line, format!("thread {id}: histogram key {slot:?} is not a number"))
                    })?;
                    let lower = to_ns(slot_value, "histogram key")?;
                    if lower >= HISTOGRAM_CAP_NS {
                        return Err(ImportError::at(
                            path,
                            line,
                            format!("thread {id}: histogram key {slot} is beyond jitterdebugger's 1000 µs histogram"),
                        ));
                    }
                    let hits = hits.as_u64().ok_or_else(|| {
                        ImportError::at(
                            path,
                            line,
                            format!("thread {id}: histogram count of {slot} is not a whole number"),
                        )
                    })?;
                    in_histogram = in_histogram.checked_add(hits).filter(|&n| n <= count).ok_or_else(|| {
                        ImportError::at(
                            path,
                            line,
                            format!("thread {id}: the histogram holds more than count {count} samples"),
                        )
                    })?;
                    if hits > 0 {
                        histogram.insert(lower, hits);
                    }
                }
            }
            Some(_) => return Err(ImportError::at(path, line, format!("thread {id}: \"histogram\" is not an object"))),
        }
        if count == 0 {
            threads.insert(id, ThreadResult { line, count, min_ns: 0, max_ns: 0, avg_ns: None, histogram });
            continue;
        }
        let min_ns = to_ns(number("min")?, "min")?;
        let max_ns = to_ns(number("max")?, "max")?;
        if min_ns > max_ns {
            return Err(ImportError::at(path, line, format!("thread {id}: min above max")));
        }
        let overflowed = count - in_histogram;
        if (overflowed > 0) != (max_ns >= HISTOGRAM_CAP_NS) {
            return Err(ImportError::at(
                path,
                line,
                format!(
                    "thread {id}: {overflowed} samples are missing from the histogram but max is {} µs \
                     (only samples of 1000 µs and more are left out of it)",
                    max_ns / 1000
                ),
            ));
        }
        let avg_ns = entry.get("avg").and_then(Value::as_f64).filter(|a| a.is_finite()).map(|a| a * unit_ns as f64);
        threads.insert(id, ThreadResult { line, count, min_ns, max_ns, avg_ns, histogram });
    }
    Ok(Results { path: path.to_string(), version, host, resolution_ns, threads })
}

/// The line of the first `needle` at or after byte `from` (1 when absent).
fn line_of(text: &str, needle: &str, from: usize) -> usize {
    let from = from.min(text.len());
    let at = text.get(from..).and_then(|rest| rest.find(needle)).map_or(0, |i| from + i);
    text.as_bytes().get(..at).map_or(0, |b| b.iter().filter(|&&c| c == b'\n').count()) + 1
}

/// samples.raw -> per thread, its records in file order.
fn parse_samples(file: &SourceFile, unit_ns: u64) -> Result<RawThreads, ImportError> {
    let path = file.path.as_str();
    let bytes = &file.bytes;
    if bytes.is_empty() {
        return Err(ImportError::whole(path, "samples.raw holds no record"));
    }
    let whole_records = bytes.len() / RECORD_BYTES;
    let extra = bytes.len() % RECORD_BYTES;
    if extra != 0 {
        return Err(ImportError::whole(
            path,
            format!(
                "truncated: {} bytes is not a whole number of {RECORD_BYTES}-byte records; record {} at byte offset {} \
                 has only {extra} bytes",
                bytes.len(),
                whole_records,
                whole_records * RECORD_BYTES
            ),
        ));
    }
    let mut threads: RawThreads = BTreeMap::new();
    for (index, record) in bytes.chunks_exact(RECORD_BYTES).enumerate() {
        let offset = index * RECORD_BYTES;
        let bad = |why: String| ImportError::whole(path, format!("record {index} at byte offset {offset}: {why}"));
        let (thread, sec, nsec, value) = decode(record).ok_or_else(|| bad("short record".into()))?;
        if thread >= MAX_THREADS {
            return Err(bad(format!(
                "thread number {thread} is not one jitterdebugger can run (not a samples.raw, or damaged)"
            )));
        }
        if nsec >= NS_PER_S as u64 {
            return Err(bad(format!("tv_nsec {nsec} is not below one second (not a samples.raw, or damaged)")));
        }
        let value_ns = i64::try_from(value)
            .ok()
            .and_then(|v| scaled(v, unit_ns))
            .ok_or_else(|| bad(format!("value {value} is out of range")))?;
        let time_ns = u128::from(sec) * NS_PER_S + u128::from(nsec);
        threads.entry(thread).or_default().push((time_ns, value_ns));
    }
    Ok(threads)
}

/// One packed little-endian `struct latency_sample`.
fn decode(record: &[u8]) -> Option<(u32, u64, u64, u64)> {
    let u32_at = |at: usize| Some(u32::from_le_bytes(record.get(at..at + 4)?.try_into().ok()?));
    let u64_at = |at: usize| Some(u64::from_le_bytes(record.get(at..at + 8)?.try_into().ok()?));
    Some((u32_at(0)?, u64_at(4)?, u64_at(12)?, u64_at(20)?))
}

/// results.json alone: its histogram, the samples beyond it as overflows.
fn histogram_of(result: &ThreadResult, unit_ns: u64) -> Option<SeriesData> {
    if result.count == 0 {
        return None;
    }
    let in_histogram: u64 = result.histogram.values().sum();
    let mut histogram = SourceHistogram {
        width_ns: unit_ns,
        buckets: result.histogram.iter().map(|(&lower, &count)| (lower, count)).collect(),
        overflows: result.count - in_histogram,
        overflow_from_ns: HISTOGRAM_CAP_NS,
        min_ns: Some(result.min_ns),
        max_ns: Some(result.max_ns),
        count: Some(result.count),
        avg_ns: result.avg_ns,
    };
    // The buckets are one resolution step wide, so their lower bounds are the values: only
    // an all-overflow min needs placing. A contradiction was rejected while parsing.
    let _ = super::pin_recorded_extremes(&mut histogram);
    Some(SeriesData::Histogram(histogram))
}

/// Both files for one thread: every saved sample, plus what results.json says is missing.
fn combine(
    id: u32,
    result: &ThreadResult,
    mut saved: Vec<i64>,
    unit_ns: u64,
    (results_path, raw_path): (&str, &str),
) -> Result<(Option<SeriesData>, Option<String>), ImportError> {
    let disagree = |what: String| {
        ImportError::at(
            results_path,
            result.line,
            format!("thread {id}: {what} ({raw_path} disagrees: are both files from the same run?)"),
        )
    };
    let saved_count = saved.len() as u64;
    if saved_count > result.count {
        return Err(disagree(format!("count {} but samples.raw holds {saved_count} samples", result.count)));
    }
    if saved_count == 0 && result.count == 0 {
        return Ok((None, None));
    }
    // Saved samples below the cap, per histogram slot.
    let mut saved_histogram: BTreeMap<i64, u64> = BTreeMap::new();
    for &value in &saved {
        if value < 0 {
            return Err(disagree(format!("samples.raw holds a negative value {value} ns")));
        }
        if value < HISTOGRAM_CAP_NS {
            *saved_histogram.entry(value).or_default() += 1;
        }
    }
    let mut missing_below: Vec<(i64, u64)> = Vec::new();
    for (&slot, &saved_hits) in &saved_histogram {
        let recorded = result.histogram.get(&slot).copied().unwrap_or(0);
        if saved_hits > recorded {
            return Err(disagree(format!(
                "results.json's histogram has {recorded} samples of {slot} ns, samples.raw {saved_hits}"
            )));
        }
    }
    for (&slot, &recorded) in &result.histogram {
        let saved_hits = saved_histogram.get(&slot).copied().unwrap_or(0);
        if recorded > saved_hits {
            missing_below.push((slot, recorded - saved_hits));
        }
    }
    let missing = result.count - saved_count;
    let missing_below_total = missing_below.iter().try_fold(0u64, |a, &(_, n)| a.checked_add(n)).unwrap_or(u64::MAX);
    let missing_above = missing.checked_sub(missing_below_total).ok_or_else(|| {
        disagree(format!("{missing} samples missing from samples.raw, but {missing_below_total} by the histogram"))
    })?;
    let (saved_min, saved_max) = (saved.iter().copied().min(), saved.iter().copied().max());
    if saved_min.is_some_and(|m| m < result.min_ns) || saved_max.is_some_and(|m| m > result.max_ns) {
        return Err(disagree(format!(
            "samples.raw spans {saved_min:?}..{saved_max:?} ns, outside results.json's min {} and max {} ns",
            result.min_ns, result.max_ns
        )));
    }
    if missing == 0 {
        if saved_min != Some(result.min_ns) || saved_max != Some(result.max_ns) {
            return Err(disagree(format!(
                "min/max {} / {} ns, but samples.raw's are {saved_min:?} / {saved_max:?}",
                result.min_ns, result.max_ns
            )));
        }
        return Ok((Some(SeriesData::Samples(saved)), None));
    }
    let max_is_missing = saved_max != Some(result.max_ns);
    if max_is_missing && missing_above == 0 && !missing_below.iter().any(|&(slot, _)| slot == result.max_ns) {
        return Err(disagree(format!("max {} ns is neither saved nor among the missing samples", result.max_ns)));
    }
    if missing_above == 0 && missing <= saved_count.max(1) {
        // Every missing sample is below the cap: the histogram gives its exact value.
        for &(slot, hits) in &missing_below {
            saved.extend(std::iter::repeat_n(slot, hits as usize));
        }
        let note = format!(
            "thread {id}: samples.raw lacks {missing} of the {} samples results.json counts (jitterdebugger's writer \
             stops before draining its buffer); all were below 1000 µs, so their exact values were taken from \
             results.json's histogram and appended (their order and per-second maxima are unknown)",
            result.count
        );
        return Ok((Some(SeriesData::Samples(saved)), Some(note)));
    }
    // Some missing samples are at or above the cap: keep every saved value exactly (one
    // bucket per value, one resolution step wide), the missing ones below the cap at theirs, those above as overflows.
    let mut buckets: BTreeMap<i64, u64> = BTreeMap::new();
    for &value in &saved {
        *buckets.entry(value).or_default() += 1;
    }
    for &(slot, hits) in &missing_below {
        let entry = buckets.entry(slot).or_default();
        *entry = entry.saturating_add(hits);
    }
    let mut histogram = SourceHistogram {
        width_ns: unit_ns,
        buckets: buckets.into_iter().collect(),
        overflows: missing_above,
        overflow_from_ns: HISTOGRAM_CAP_NS,
        min_ns: Some(result.min_ns),
        // The largest overflow is exactly the max only when no saved sample is.
        max_ns: max_is_missing.then_some(result.max_ns),
        count: Some(result.count),
        avg_ns: result.avg_ns,
    };
    super::pin_recorded_extremes(&mut histogram).map_err(disagree)?;
    let note = format!(
        "thread {id}: samples.raw lacks {missing} of the {} samples results.json counts (jitterdebugger's writer stops \
         before draining its buffer); {} of them were below 1000 µs (exact values from the histogram), {missing_above} \
         at or above it: those are counted at 1000 µs{}",
        result.count,
        missing - missing_above,
        if max_is_missing { ", the largest at the recorded max" } else { "" }
    );
    Ok((Some(SeriesData::Histogram(histogram)), Some(note)))
}

/// The largest value in each second since `first_ns` (the run's first wake-up), when the
/// records span no more seconds than they number (bounds the allocation on damaged files).
fn per_second_maxima(records: &[(u128, i64)], first_ns: u128) -> Vec<Option<i64>> {
    let Some(last) = records.iter().map(|&(t, _)| t).max() else { return Vec::new() };
    let seconds = (last.saturating_sub(first_ns) / NS_PER_S) as usize;
    if seconds > records.len() {
        return Vec::new();
    }
    let mut maxima: Vec<Option<i64>> = vec![None; seconds + 1];
    for &(time, value) in records {
        let second = (time.saturating_sub(first_ns) / NS_PER_S) as usize;
        if let Some(slot) = maxima.get_mut(second) {
            *slot = Some(slot.map_or(value, |m: i64| m.max(value)));
        }
    }
    maxima
}
