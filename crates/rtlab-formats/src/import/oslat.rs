//! rt-tests' `oslat --json=FILE`: per thread (one per CPU) the busy loop's histogram of the
//! time between consecutive clock reads, in whole µs.
//!
//! The envelope is rt-tests' (as cyclictest's: `cmdline:` and `rt_test_version:` with a
//! colon inside the key, `sysinfo`); each `thread.N` holds `cpu`, `freq` (MHz of the cycle
//! counter), `min`, `avg`, `max` (µs), `duration` (s) and `histogram` (string keys). oslat
//! counts a loop of `index` whole µs (floor) in bucket `index` and prints it as `index + 1`:
//! key `k` holds loops of [k − 1, k) µs, key 1 the sub-µs loops that are no noise. The last
//! bucket (`-b`, default 32) also holds everything longer: its loops are censored, known
//! only to be at least k − 1 µs. oslat's min, avg and max are over every loop, in its
//! rounded-up µs (index + 1).
//!
//! Imported as rtlab's `noise.gap`: the loops of 1 µs and more (keys ≥ 2) are the gaps, each
//! at its bucket's lower bound; the last bucket's loops are the histogram's overflows
//! (`overflow_from_ns` at its lower bound, the largest at oslat's max), the sub-µs loops a
//! detail. The gaps' exact mean, censored gaps included, follows from oslat's avg (the
//! source's average, `avg_ns`); oslat's own figures are kept as details.

use super::cyclictest::{rfc2822_epoch, rfc2822_to_rfc3339, JsonFile, UniqueKeys};
use super::{
    ImportError, ImportOptions, ParsedSource, Series, SeriesData, SourceFile, SourceHistogram, SourceHost,
    MAX_TOTAL_COUNT,
};
use rtlab_results::noise::NOISE_GAP_METRIC;
use rtlab_results::run::Detail;
use serde_json::Value;
use std::collections::BTreeMap;

/// oslat's default number of buckets (`-b`).
pub const DEFAULT_BUCKETS: u64 = 32;
/// oslat accepts 4 to 1024 buckets.
const MAX_BUCKETS: u64 = 1024;
/// Most threads a file may hold.
const MAX_THREADS: u64 = 8192;

/// Details of each imported thread (docs/import/oslat.md).
pub const LOOPS_BELOW_1US: &str = "loops_below_1us";
pub const OSLAT_MIN_US: &str = "oslat_min_us";
pub const OSLAT_AVG_US: &str = "oslat_avg_us";
pub const OSLAT_MAX_US: &str = "oslat_max_us";
pub const OSLAT_BUCKETS: &str = "oslat_buckets";

pub fn parse(files: &[SourceFile], options: &ImportOptions) -> Result<ParsedSource, ImportError> {
    let [file] = files else {
        return Err(ImportError::whole("oslat", "give one oslat --json file"));
    };
    let text = std::str::from_utf8(&file.bytes).map_err(|e| {
        let valid = file.bytes.get(..e.valid_up_to()).unwrap_or_default();
        ImportError::at(&file.path, valid.iter().filter(|&&b| b == b'\n').count() + 1, "not UTF-8 text")
    })?;
    let invalid = |e: serde_json::Error| ImportError::at(&file.path, e.line().max(1), format!("not valid JSON: {e}"));
    serde_json::from_str::<UniqueKeys>(text).map_err(invalid)?;
    let root: Value = serde_json::from_str(text).map_err(invalid)?;
    let json = JsonFile { path: &file.path, text };
    let Some(root) = root.as_object() else {
        return Err(ImportError::at(&file.path, 1, "an oslat --json file is an object"));
    };
    if options.unit.is_some_and(|u| u.ns() != 1000) {
        return Err(json.error(&["histogram"], "oslat records whole µs; --unit ns does not apply"));
    }
    let text_field =
        |names: [&str; 2]| names.iter().find_map(|n| root.get(*n).and_then(Value::as_str)).map(String::from);
    let command_line = text_field(["cmdline:", "cmdline"]);
    let version = text_field(["rt_test_version:", "rt_test_version"]);
    let words: Vec<&str> = command_line.as_deref().map(|c| c.split_whitespace().collect()).unwrap_or_default();
    if let Some(program) = words.first() {
        let name = program.rsplit('/').next().unwrap_or(program);
        if !name.contains("oslat") {
            return Err(json.error(&["cmdline:"], format!("written by {name:?}, not oslat")));
        }
    }
    let buckets = bucket_count(&words).map_err(|why| json.error(&["cmdline:"], why))?;
    let Some(threads) = root.get("thread").and_then(Value::as_object) else {
        return Err(json.error(&["thread"], "no \"thread\" object: not an oslat --json file"));
    };

    let mut parsed = ParsedSource {
        layouts: vec!["oslat-json".into()],
        source_tool: Some(match &version {
            Some(v) => format!("oslat {v}"),
            None => "oslat".into(),
        }),
        source_command_line: command_line.clone(),
        resolution_ns: 1000,
        ..ParsedSource::default()
    };
    let start = root.get("start_time").and_then(Value::as_str);
    let end = root.get("end_time").and_then(Value::as_str);
    parsed.start_time = start.map(|s| rfc2822_to_rfc3339(s).unwrap_or_else(|| s.to_string()));
    parsed.end_time = end.map(|s| rfc2822_to_rfc3339(s).unwrap_or_else(|| s.to_string()));
    if let Some(code) = root.get("return_code").and_then(Value::as_i64).filter(|&c| c != 0) {
        parsed.notes.push(format!("oslat exited with return_code {code}: the run may not have completed"));
    }
    if let Some(sysinfo) = root.get("sysinfo").and_then(Value::as_object) {
        let s = |key: &str| sysinfo.get(key).and_then(Value::as_str).map(str::to_string);
        parsed.host = SourceHost {
            hostname: s("nodename"),
            kernel_release: s("release"),
            kernel_version: s("version"),
            machine: s("machine"),
            cpu_count: None,
        };
    }
    parsed.notes.push(format!(
        "noise.gap holds oslat's loops of 1 µs and more (rtlab's own threshold is above 1 µs), each at its bucket's \
         lower bound; the last bucket ({} µs and more) is censored",
        buckets - 1
    ));

    let mut ordered: BTreeMap<u64, (&String, &serde_json::Map<String, Value>)> = BTreeMap::new();
    for (key, thread) in threads {
        let number = key.parse::<u64>().ok().filter(|&n| n < MAX_THREADS);
        let (Some(number), Some(thread)) = (number, thread.as_object()) else {
            return Err(json.error(&["thread", key], format!("thread {key:?}: not a numbered thread object")));
        };
        ordered.insert(number, (key, thread));
    }
    if ordered.is_empty() {
        return Err(json.error(&["thread"], "no threads"));
    }
    if let Some(declared) = root.get("num_threads") {
        if declared.as_u64() != Some(ordered.len() as u64) {
            return Err(json.error(
                &["num_threads"],
                format!("num_threads {declared} but the file has {} threads", ordered.len()),
            ));
        }
    }
    let mut longest_s: f64 = 0.0;
    for (number, (key, thread)) in ordered {
        let err = |field: &str, why: String| json.error(&["thread", key, field], format!("thread {number}: {why}"));
        let uint = |field: &str| -> Result<u64, ImportError> {
            thread.get(field).and_then(Value::as_u64).ok_or_else(|| err(field, format!("no whole number \"{field}\"")))
        };
        let cpu = uint("cpu")?;
        let (min_us, max_us) = (uint("min")?, uint("max")?);
        let avg_us = thread
            .get("avg")
            .and_then(Value::as_f64)
            .filter(|a| a.is_finite() && *a >= 0.0)
            .ok_or_else(|| err("avg", "no \"avg\" number".into()))?;
        let duration_s = thread.get("duration").and_then(Value::as_f64).filter(|d| d.is_finite() && *d >= 0.0);
        let Some(histogram) = thread.get("histogram").and_then(Value::as_object) else {
            return Err(err("histogram", "no \"histogram\" object".into()));
        };
        let mut counts: BTreeMap<u64, u64> = BTreeMap::new();
        for (k, v) in histogram {
            let index = k.parse::<u64>().ok().filter(|&i| (1..=buckets).contains(&i));
            let (Some(index), Some(n)) = (index, v.as_u64()) else {
                return Err(err(
                    "histogram",
                    format!("bucket {k:?}: {v} is not a count of a bucket 1..={buckets} (oslat -b {buckets})"),
                ));
            };
            counts.insert(index, n);
        }
        let total = counts.values().try_fold(0u64, |a, &n| a.checked_add(n)).filter(|&t| t <= MAX_TOTAL_COUNT);
        let Some(total) = total else {
            return Err(err("histogram", format!("more than {MAX_TOTAL_COUNT} loops")));
        };
        if total > 0 && (min_us == 0 || max_us < min_us || max_us > super::MAX_VALUE_NS as u64 / 1000) {
            return Err(err("max", format!("min {min_us} µs and max {max_us} µs do not fit a histogram")));
        }
        // The largest loop must lie in the highest non-empty bucket (or beyond the last).
        if let Some((&top, _)) = counts.iter().rev().find(|(_, &n)| n > 0) {
            let fits = if top == buckets { max_us >= top } else { max_us == top };
            if !fits {
                return Err(err("max", format!("max {max_us} µs but the highest non-empty bucket is {top}")));
            }
        }
        let below = counts.get(&1).copied().unwrap_or(0);
        let overflows = if buckets > 1 { counts.get(&buckets).copied().unwrap_or(0) } else { 0 };
        let overflow_from_ns = (buckets as i64 - 1) * 1000;
        let gap_buckets: Vec<(i64, u64)> = counts
            .iter()
            .filter(|(&k, &n)| k >= 2 && k < buckets && n > 0)
            .map(|(&k, &n)| ((k as i64 - 1) * 1000, n))
            .collect();
        let gaps = total - below;
        let source = SourceHistogram {
            width_ns: 1000,
            buckets: gap_buckets,
            overflows,
            overflow_from_ns,
            // oslat's min, avg and max are over every loop (the sub-µs ones included): the
            // max is a gap's; the gaps' exact mean follows from the avg (below).
            min_ns: None,
            max_ns: (gaps > 0).then(|| (max_us as i64 - 1) * 1000),
            count: Some(gaps),
            avg_ns: gap_mean_ns(avg_us, total, below, gaps),
        };
        let mut series = Series::new(
            "noise",
            NOISE_GAP_METRIC,
            Some(cpu as usize),
            format!("oslat/{cpu}"),
            SeriesData::Histogram(source),
        );
        if let Some(d) = duration_s {
            longest_s = longest_s.max(d);
            // The mean time between gaps, as rtlab's noise probe records it.
            series.interval_ns = Some(((d * 1e9) as u64 / gaps.max(1)).max(1));
        }
        series.details.insert(LOOPS_BELOW_1US.into(), Detail::Int(below as i64));
        series.details.insert(OSLAT_MIN_US.into(), Detail::Int(min_us as i64));
        series.details.insert(OSLAT_AVG_US.into(), Detail::Float(avg_us));
        series.details.insert(OSLAT_MAX_US.into(), Detail::Int(max_us as i64));
        series.details.insert(OSLAT_BUCKETS.into(), Detail::Int(buckets as i64));
        if let Some(f) = thread.get("freq").and_then(Value::as_u64) {
            series.details.insert("oslat_freq_mhz".into(), Detail::Int(f as i64));
        }
        parsed.series.push(series);
    }
    // Each thread's own mean time between gaps; the run's is the first thread's (it only
    // stands in for the period the source does not have).
    parsed.interval_ns = parsed.series.iter().find_map(|s| s.interval_ns);
    if longest_s > 0.0 {
        parsed.duration_s = Some(longest_s);
    } else if let (Some(a), Some(b)) = (start.and_then(rfc2822_epoch), end.and_then(rfc2822_epoch)) {
        parsed.duration_s = (b > a).then_some((b - a) as f64);
    }
    Ok(parsed)
}

/// The gaps' mean (ns, at the buckets' lower-bound convention) from oslat's `avg`, the mean
/// of every loop's rounded-up µs (index + 1): the loops sum to avg × total, the sub-µs ones
/// to 1 each, so the gaps (censored ones included) sum to avg × total − below, in rounded-up
/// µs, 1 µs above their lower bounds. Exact to oslat's six decimals of avg.
fn gap_mean_ns(avg_us: f64, total: u64, below: u64, gaps: u64) -> Option<f64> {
    if gaps == 0 {
        return None;
    }
    let rounded_up_sum = avg_us * total as f64 - below as f64;
    let mean = (rounded_up_sum / gaps as f64 - 1.0) * 1000.0;
    (mean.is_finite() && mean >= 0.0).then_some(mean)
}

/// The number of buckets from oslat's command line (`-b N`, `-bN`, `--bucket-size N`,
/// `--bucket-size=N`), else the default.
fn bucket_count(words: &[&str]) -> Result<u64, String> {
    let mut value = None;
    for (i, w) in words.iter().enumerate() {
        let given = match *w {
            "-b" | "--bucket-size" => words.get(i + 1).copied(),
            w if w.starts_with("--bucket-size=") => w.strip_prefix("--bucket-size="),
            w if w.starts_with("-b") && w.len() > 2 && !w.starts_with("--") => w.strip_prefix("-b"),
            _ => continue,
        };
        value = Some(given.and_then(|g| g.parse::<u64>().ok()).ok_or("-b needs a number of buckets")?);
    }
    match value {
        Some(n) if (4..=MAX_BUCKETS).contains(&n) => Ok(n),
        Some(n) => Err(format!("-b {n}: oslat takes 4 to {MAX_BUCKETS} buckets")),
        None => Ok(DEFAULT_BUCKETS),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_counts_from_the_command_line() {
        assert_eq!(bucket_count(&["oslat", "-D", "5"]), Ok(32));
        assert_eq!(bucket_count(&["oslat", "-b", "64"]), Ok(64));
        assert_eq!(bucket_count(&["oslat", "-b16"]), Ok(16));
        assert_eq!(bucket_count(&["oslat", "--bucket-size=128"]), Ok(128));
        assert!(bucket_count(&["oslat", "-b", "2"]).is_err());
        assert!(bucket_count(&["oslat", "-b"]).is_err());
    }
}
