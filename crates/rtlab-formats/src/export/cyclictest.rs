//! cyclictest's own formats, written from a saved run for the scripts and CI parsers that
//! read them: the `-h/--histfile` histogram ([`CyclictestHist`]) in rt-tests 2.4's layout
//! (every 1 µs bucket, a `# Total:` line, the zero-padded footer), which both OSADL's latency
//! plot script and the newer parsers accept, and the `--json` file ([`CyclictestJson`]) with
//! its quirks kept (keys ending in a colon, histogram keys as strings, `resolution_in_ns` 0
//! for µs), which LAVA's rt-tests parser reads.
//!
//! Values are whole µs, truncated as cyclictest truncates them. A run imported from
//! cyclictest keeps its histogram size, overflow cycle lists and averages (measurement
//! details), so exporting it gives back the file it came from. docs/export/cyclictest.md.

use super::Selected;
use crate::import::cyclictest::{
    rfc3339_to_cyclictest, HISTOGRAM_LIMIT_DETAIL, HIST_MAX, NUMA_NODE_DETAIL, OVERFLOW_CYCLES_DETAIL,
    OVERFLOW_UNLISTED_DETAIL, RETURN_CODE_DETAIL, SOURCE_CYCLES_DETAIL,
};
use crate::FormatError;
use rtlab_analysis::LatencyHistogram;
use rtlab_results::host::PreemptionModel;
use rtlab_results::run::{Detail, Measurement};
use rtlab_results::set::{ReportExporter, ReportSet};
use std::collections::BTreeMap;
use std::fmt::Write;

/// `rtlab report --format cyclictest-hist`: cyclictest's `-h` histogram file.
#[derive(Debug, Clone, Default)]
pub struct CyclictestHist {
    pub selection: super::Selection,
}

/// `rtlab report --format cyclictest-json`: cyclictest's `--json` file.
#[derive(Debug, Clone, Default)]
pub struct CyclictestJson {
    pub selection: super::Selection,
}

/// cyclictest's min before the first sample, printed for a thread without samples.
const NO_SAMPLE_MIN_US: i64 = 1_000_000;

/// One thread in cyclictest's terms: 1 µs buckets below the histogram size, the rest
/// overflows, the extremes and average truncated to µs as cyclictest prints them.
struct Thread<'a> {
    measurement: &'a Measurement,
    buckets: BTreeMap<u64, u64>,
    bucket_total: u64,
    overflows: u64,
    /// Samples (cycles); the source's count for a thread imported without a histogram.
    cycles: u64,
    min_us: i64,
    max_us: i64,
    avg_us: f64,
    has_histogram: bool,
}

impl ReportExporter for CyclictestHist {
    type Error = FormatError;

    fn render(&self, set: &ReportSet) -> Result<String, FormatError> {
        let selected = self.selection.select(set, "cyclictest-hist")?;
        let (size, threads) = threads(&selected)?;
        if let Some(t) = threads.iter().find(|t| !t.has_histogram && t.cycles > 0) {
            return Err(FormatError::Invalid {
                path: "--format cyclictest-hist".into(),
                reason: format!(
                    "thread {} has only min, avg and max (imported without a histogram): use --format cyclictest-json",
                    t.measurement.thread
                ),
            });
        }
        let mut out = String::from("# Histogram\n");
        let mut row = String::new();
        for bucket in 0..size {
            row.clear();
            let _ = write!(row, "{bucket:06} ");
            for (i, t) in threads.iter().enumerate() {
                let sep = if i == 0 { "" } else { "\t" };
                let _ = write!(row, "{sep}{:06}", t.buckets.get(&bucket).copied().unwrap_or(0));
            }
            out.push_str(&row);
            out.push('\n');
        }
        let line = |out: &mut String, label: &str, values: &mut dyn Iterator<Item = String>| {
            out.push_str(label);
            for v in values {
                out.push(' ');
                out.push_str(&v);
            }
            out.push('\n');
        };
        line(&mut out, "# Total:", &mut threads.iter().map(|t| format!("{:09}", t.bucket_total)));
        line(&mut out, "# Min Latencies:", &mut threads.iter().map(|t| format!("{:05}", t.min_us.max(0))));
        line(&mut out, "# Avg Latencies:", &mut threads.iter().map(|t| format!("{:05}", t.avg_us.max(0.0) as u64)));
        line(&mut out, "# Max Latencies:", &mut threads.iter().map(|t| format!("{:05}", t.max_us.max(0))));
        line(&mut out, "# Histogram Overflows:", &mut threads.iter().map(|t| format!("{:05}", t.overflows)));
        out.push_str("# Histogram Overflow at cycle number:\n");
        for (i, t) in threads.iter().enumerate() {
            let _ = write!(out, "# Thread {i}:");
            let (listed, unlisted) = overflow_cycles(t);
            for cycle in &listed {
                let _ = write!(out, " {cycle:05}");
            }
            if unlisted > 0 {
                let _ = write!(out, " # {unlisted:05} others");
            }
            out.push('\n');
        }
        out.push('\n');
        Ok(out)
    }
}

impl ReportExporter for CyclictestJson {
    type Error = FormatError;

    fn render(&self, set: &ReportSet) -> Result<String, FormatError> {
        let selected = self.selection.select(set, "cyclictest-json")?;
        let (_, threads) = threads(&selected)?;
        let run = selected.run;
        let imported_cyclictest = run.imported.as_ref().filter(|i| i.from == "cyclictest");
        let command_line = imported_cyclictest.and_then(|i| i.source_command_line.clone()).unwrap_or_else(|| {
            if run.command_line.is_empty() {
                "rtlab".to_string()
            } else {
                run.command_line.join(" ")
            }
        });
        let version = imported_cyclictest
            .and_then(|i| i.source_tool.as_deref())
            .and_then(|t| t.strip_prefix("cyclictest "))
            .map(str::to_string)
            .unwrap_or_else(|| format!("rtlab {}", run.tool.version));
        let time = |t: &str| rfc3339_to_cyclictest(t).unwrap_or_else(|| t.to_string());
        let return_code = threads.iter().find_map(|t| detail_int(t.measurement, RETURN_CODE_DETAIL)).unwrap_or(0);
        let host = &run.host;
        let mut out = String::new();
        out.push_str("{\n  \"file_version\": 1,\n");
        let _ = writeln!(out, "  \"cmdline:\": {},", json_string(&command_line));
        let _ = writeln!(out, "  \"rt_test_version:\": {},", json_string(&version));
        let _ = writeln!(out, "  \"start_time\": {},", json_string(&time(&run.start_time)));
        let _ = writeln!(out, "  \"end_time\": {},", json_string(&time(&run.end_time)));
        let _ = writeln!(out, "  \"return_code\": {return_code},");
        out.push_str("  \"sysinfo\": {\n    \"sysname\": \"Linux\",\n");
        let _ = writeln!(out, "    \"nodename\": {},", json_string(&host.hostname));
        let _ = writeln!(out, "    \"release\": {},", json_string(&host.kernel_release));
        let _ = writeln!(out, "    \"version\": {},", json_string(&host.kernel_version));
        let _ = writeln!(out, "    \"machine\": {},", json_string(&host.machine));
        let _ = writeln!(out, "    \"realtime\": {}", u8::from(host.preemption_model == PreemptionModel::PreemptRt));
        out.push_str("  },\n");
        let _ = writeln!(out, "  \"num_threads\": {},", threads.len());
        // A flag despite its name: 0 = values in µs (1 would mean ns, cyclictest -N).
        out.push_str("  \"resolution_in_ns\": 0,\n  \"thread\": {\n");
        for (i, t) in threads.iter().enumerate() {
            let _ = writeln!(out, "    \"{i}\": {{");
            out.push_str("      \"histogram\": {");
            let entries: Vec<String> =
                t.buckets.iter().map(|(bucket, count)| format!("\n        \"{bucket}\": {count}")).collect();
            if entries.is_empty() {
                out.push_str("      },\n");
            } else {
                out.push_str(&entries.join(","));
                out.push_str("\n      },\n");
            }
            // `threads` gives a thread without samples cyclictest's min and max.
            let (min, max) = (t.min_us, t.max_us);
            let node = detail_int(t.measurement, NUMA_NODE_DETAIL).unwrap_or(-1);
            let _ = writeln!(out, "      \"cycles\": {},", t.cycles);
            let _ = writeln!(out, "      \"min\": {min},");
            let _ = writeln!(out, "      \"max\": {max},");
            let _ = writeln!(out, "      \"avg\": {:.2},", t.avg_us);
            let _ = writeln!(out, "      \"cpu\": {},", t.measurement.cpu);
            let _ = writeln!(out, "      \"node\": {node}");
            let _ = writeln!(out, "    }}{}", if i + 1 == threads.len() { "" } else { "," });
        }
        out.push_str("  }\n}\n");
        Ok(out)
    }
}

/// An integer detail of the measurement.
fn detail_int(m: &Measurement, key: &str) -> Option<i64> {
    match m.details.get(key) {
        Some(Detail::Int(v)) => Some(*v),
        _ => None,
    }
}

fn json_string(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".to_string())
}

/// The listed overflow cycles and the count of the others. A run not imported from a
/// histogram file has no cycle numbers: all its overflows are "others".
fn overflow_cycles(t: &Thread) -> (Vec<u64>, u64) {
    let details = &t.measurement.details;
    let listed: Vec<u64> = match details.get(OVERFLOW_CYCLES_DETAIL) {
        Some(Detail::Text(text)) => text.split_whitespace().filter_map(|c| c.parse().ok()).collect(),
        _ => Vec::new(),
    };
    let listed_count = listed.len() as u64;
    match details.get(OVERFLOW_UNLISTED_DETAIL) {
        Some(Detail::Int(others)) if listed_count.checked_add(*others as u64) == Some(t.overflows) => {
            (listed, *others as u64)
        }
        _ if listed_count == t.overflows => (listed, 0),
        _ => (Vec::new(), t.overflows),
    }
}

/// The selected threads in cyclictest's order (by thread number when named "T:N") and
/// the histogram size in 1 µs buckets: the source's when imported from cyclictest,
/// otherwise up to the largest sample (at most cyclictest's HIST_MAX).
fn threads<'a>(selected: &Selected<'a>) -> Result<(u64, Vec<Thread<'a>>), FormatError> {
    let mut measurements = selected.threads.clone();
    let numbers: Vec<Option<u64>> =
        measurements.iter().map(|m| m.thread.strip_prefix("T:").and_then(|n| n.parse().ok())).collect();
    if numbers.iter().all(Option::is_some) {
        let mut numbered: Vec<(Option<u64>, &Measurement)> = numbers.into_iter().zip(measurements).collect();
        numbered.sort_by_key(|(n, _)| *n);
        measurements = numbered.into_iter().map(|(_, m)| m).collect();
    }
    let limits: Vec<Option<i64>> =
        measurements.iter().map(|m| detail_int(m, HISTOGRAM_LIMIT_DETAIL).filter(|&limit| limit > 0)).collect();
    let size = if limits.iter().all(Option::is_some) && !limits.is_empty() {
        limits.iter().flatten().map(|&l| (l as u64).div_ceil(1000)).max().unwrap_or(1)
    } else {
        measurements.iter().filter_map(|m| m.moments.max()).map(|max| (max.max(0) / 1000) as u64 + 1).max().unwrap_or(1)
    }
    .clamp(1, HIST_MAX);

    let mut threads = Vec::new();
    for m in measurements {
        let histogram = LatencyHistogram::decode(&m.histogram)
            .map_err(|e| FormatError::Invalid { path: format!("measurement {}", m.thread), reason: e.to_string() })?;
        let mut buckets = BTreeMap::new();
        let (mut bucket_total, mut overflows) = (0u64, 0u64);
        for (value, count) in histogram.buckets() {
            // cyclictest's bucket of a value is the value in whole µs (truncated).
            let bucket = value / 1000;
            if bucket < size {
                *buckets.entry(bucket).or_insert(0) += count;
                bucket_total += count;
            } else {
                overflows += count;
            }
        }
        let detail_float = |key: &str| match m.details.get(key) {
            Some(Detail::Float(v)) => Some(*v),
            Some(Detail::Int(v)) => Some(*v as f64),
            _ => None,
        };
        let source_cycles = detail_int(m, SOURCE_CYCLES_DETAIL).filter(|_| m.count == 0);
        let (cycles, min_ns, max_ns, has_histogram) = match source_cycles {
            // Imported without a histogram: the source's summary figures.
            Some(cycles) => {
                (cycles.max(0) as u64, detail_int(m, "source_min_ns"), detail_int(m, "source_max_ns"), false)
            }
            None => (m.count, m.moments.min(), m.moments.max(), true),
        };
        let avg_ns = detail_float("source_avg_ns").or_else(|| m.moments.mean()).unwrap_or(0.0);
        let (min_us, max_us) =
            if cycles == 0 { (NO_SAMPLE_MIN_US, 0) } else { (min_ns.unwrap_or(0) / 1000, max_ns.unwrap_or(0) / 1000) };
        threads.push(Thread {
            measurement: m,
            buckets,
            bucket_total,
            overflows,
            cycles,
            min_us,
            max_us,
            avg_us: if cycles == 0 { 0.0 } else { avg_ns / 1000.0 },
            has_histogram,
        });
    }
    Ok((size, threads))
}
