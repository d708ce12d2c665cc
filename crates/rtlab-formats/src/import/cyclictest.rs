//! cyclictest's files -> [`ParsedSource`], one run per file, recognised by content:
//!
//! - the `-h/--histfile` histogram: rt-tests 2.4's layout (every bucket, a `# Total:` line)
//!   and the newer one (2.7+: empty buckets left out, no Total), one tab-separated column
//!   per thread (plus the all-threads column of `-H`), the footer (`# Min/Avg/Max
//!   Latencies:`, `# Histogram Overflows:`, the overflow cycle lists), and cyclictest's own
//!   status lines around it when its stdout was captured;
//! - `-v` verbose output: every sample as `thread:cycle:value`;
//! - `--json` files, with their quirks (keys `cmdline:` and `rt_test_version:` ending in a
//!   colon, histogram keys as strings, no overflow count, `resolution_in_ns` a 0/1 flag).
//!
//! Every number is checked against the limits of [`super`] and against the file's own
//! cross-checks (footer vs buckets, Total vs rows, cycles vs histogram) before it is used,
//! so a damaged file is refused with its line rather than imported in part. What each
//! layout records and how it maps into run.json: docs/import/cyclictest.md.

use super::{
    scaled, text_lines, unit_name, ImportError, ImportOptions, ParsedSource, Series, SeriesData, SourceFile,
    SourceHistogram, SourceHost, SourceUnit, MAX_TOTAL_COUNT,
};
use rtlab_results::host::Policy;
use rtlab_results::run::Detail;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Measurement detail: the size of cyclictest's histogram (its `-h`) in ns; samples at or
/// above it were overflows. When the file does not record the size it is the lowest size
/// the file allows (the notes say so). The cyclictest exporters read it back.
pub const HISTOGRAM_LIMIT_DETAIL: &str = "histogram_limit_ns";
/// Measurement detail: the cycle numbers cyclictest listed for the overflows (`# Thread N:`),
/// space-separated.
pub const OVERFLOW_CYCLES_DETAIL: &str = "overflow_cycles";
/// Measurement detail: overflows beyond those listed (the `# 00052 others` tail).
pub const OVERFLOW_UNLISTED_DETAIL: &str = "overflow_cycles_unlisted";
/// Measurement detail: the NUMA node `--json` recorded for the thread.
pub const NUMA_NODE_DETAIL: &str = "numa_node";
/// Measurement detail: cycles of a thread imported without a histogram (summary only).
pub const SOURCE_CYCLES_DETAIL: &str = "source_cycles";
/// Measurement detail: cyclictest's `return_code` when it was not 0.
pub const RETURN_CODE_DETAIL: &str = "source_return_code";
/// The most buckets cyclictest allows (its HIST_MAX): a larger `-h` is cut to this.
pub const HIST_MAX: u64 = 1_000_000;

/// cyclictest's default `-i` and `-d`, in µs.
const DEFAULT_INTERVAL_US: u64 = 1000;
const DEFAULT_DISTANCE_US: u64 = 500;
/// Thread numbers beyond this are damage (cyclictest runs one thread per CPU or -t N).
const MAX_THREADS: u64 = 65_536;

/// Reads one cyclictest file (several: an error, one run per import).
pub fn parse(files: &[SourceFile], options: &ImportOptions) -> Result<ParsedSource, ImportError> {
    let file = match files {
        [] => return Err(ImportError::whole("cyclictest", "no file given")),
        [one] => one,
        [_, second, ..] => {
            return Err(ImportError::whole(
                &second.path,
                "cyclictest: a file holds a whole run; import each file separately (one `rtlab import` per file)",
            ))
        }
    };
    if matches!(file.bytes.iter().find(|b| !b.is_ascii_whitespace()), Some(b'{' | b'[')) {
        parse_json(file, options)
    } else {
        parse_text(file, options)
    }
}

// ---------------------------------------------------------------------------------------
// Text: the histogram and -v output (and cyclictest's stdout around them)
// ---------------------------------------------------------------------------------------

/// What one pass over a text file found.
#[derive(Default)]
struct Scan {
    /// -v samples per thread, in the file's unit scaled to ns.
    samples: BTreeMap<u64, Vec<i64>>,
    /// "Thread N using cpu M." (-v with -a CPUSET).
    cpus: BTreeMap<u64, usize>,
    /// The last "T: N (tid) P:95 I:1000 C: ..." status line per thread.
    status: BTreeMap<u64, Status>,
    /// Line of `# Histogram`.
    histogram_at: Option<usize>,
    rows: Rows,
    footer: Footer,
    last_line: usize,
}

#[derive(Default, Clone, Copy)]
struct Status {
    priority: Option<i32>,
    interval_us: Option<u64>,
}

/// Histogram rows, flat: `counts` holds `columns` counts per row.
#[derive(Default)]
struct Rows {
    columns: usize,
    indices: Vec<u64>,
    lines: Vec<usize>,
    counts: Vec<u64>,
}

#[derive(Default)]
struct Footer {
    total: Option<FooterLine>,
    min: Option<FooterLine>,
    avg: Option<FooterLine>,
    max: Option<FooterLine>,
    overflows: Option<FooterLine>,
    /// `# Thread N: 00012 00345 # 00052 others` per thread.
    overflow_lists: BTreeMap<u64, OverflowList>,
}

struct FooterLine {
    line: usize,
    values: Vec<u64>,
}

struct OverflowList {
    line: usize,
    cycles: Vec<u64>,
    others: u64,
}

#[derive(PartialEq, Eq, Clone, Copy)]
enum Section {
    Preamble,
    Rows,
    Footer,
}

fn parse_text(file: &SourceFile, options: &ImportOptions) -> Result<ParsedSource, ImportError> {
    let unit = options.unit.unwrap_or(SourceUnit::Us);
    let lines = text_lines(file)?;
    let scan = scan_text(file, &lines, unit.ns())?;
    let mut parsed = ParsedSource {
        resolution_ns: unit.ns(),
        unit_assumed: true,
        assumed: vec![unit_sentence(options.unit)],
        ..ParsedSource::default()
    };
    if scan.histogram_at.is_some() {
        histogram_source(file, &scan, unit.ns(), &mut parsed)?;
    } else if !scan.samples.is_empty() {
        parsed.layouts.push("cyclictest-verbose".into());
        parsed.series = verbose_series(&scan);
        parsed.notes.push(
            "-v output: every sample of every thread, so all statistics are exact at the file's resolution".into(),
        );
    } else {
        return Err(ImportError::whole(
            &file.path,
            "no cyclictest histogram (`# Histogram`), -v samples or --json data found",
        ));
    }
    apply_status(&scan, &mut parsed);
    if parsed.series.iter().any(|s| s.cpu.is_none()) {
        parsed.assumed.push(
            "CPU of each thread: the file does not say; thread N is shown as CPU N (where cyclictest -a -t pins it)"
                .into(),
        );
    }
    Ok(parsed)
}

fn unit_sentence(given: Option<SourceUnit>) -> String {
    match given {
        None => "values in µs: the file does not record its unit (cyclictest -N writes ns: give --unit ns)".into(),
        Some(SourceUnit::Us) => "values in µs: given with --unit us".into(),
        Some(SourceUnit::Ns) => "values in ns: given with --unit ns".into(),
    }
}

/// One pass: every line is a histogram row, a footer line, a -v sample or one of
/// cyclictest's own messages; anything else is refused with its line.
fn scan_text(file: &SourceFile, lines: &[(usize, &str)], unit_ns: u64) -> Result<Scan, ImportError> {
    let at = |line: usize, reason: String| ImportError::at(&file.path, line, reason);
    let mut scan = Scan::default();
    let mut section = Section::Preamble;
    for &(n, raw) in lines {
        scan.last_line = n;
        let line = strip_escapes(raw).trim();
        if line.is_empty() {
            continue;
        }
        match section {
            Section::Preamble => {
                if line == "# Histogram" {
                    scan.histogram_at = Some(n);
                    section = Section::Rows;
                } else if line.starts_with('#') {
                    // cyclictest's comments: "# /dev/cpu_dma_latency set to 0us", ...
                } else if let Some(sample) = verbose_sample(line) {
                    record_sample(&mut scan, sample, unit_ns).map_err(|r| at(n, r))?;
                } else if looks_like_row(line) {
                    return Err(at(
                        n,
                        "a histogram row before the `# Histogram` line: the beginning of the file is missing".into(),
                    ));
                } else if !cyclictest_message(line, &mut scan) {
                    return Err(at(n, format!("not cyclictest output: {}", quoted(line))));
                }
            }
            Section::Rows => {
                if line.starts_with('#') {
                    section = Section::Footer;
                    footer_line(&mut scan.footer, n, line).map_err(|r| at(n, r))?;
                } else {
                    histogram_row(&mut scan.rows, n, line, unit_ns).map_err(|r| at(n, r))?;
                }
            }
            Section::Footer => {
                if line.starts_with('#') {
                    footer_line(&mut scan.footer, n, line).map_err(|r| at(n, r))?;
                } else if looks_like_row(line) {
                    return Err(at(n, "a histogram row after the footer began".into()));
                } else if verbose_sample(line).is_some() || !cyclictest_message(line, &mut scan) {
                    return Err(at(n, format!("not cyclictest output after the histogram: {}", quoted(line))));
                }
            }
        }
    }
    Ok(scan)
}

/// The line without the terminal escapes cyclictest writes before its status lines.
fn strip_escapes(mut line: &str) -> &str {
    while let Some(rest) = line.strip_prefix("\u{1b}[") {
        let end = rest.find(|c: char| !(c.is_ascii_digit() || c == ';')).unwrap_or(rest.len());
        // The command letter after the digits ("A": cursor up).
        line = rest.get(end..).map(|r| r.get(1..).unwrap_or("")).unwrap_or("");
    }
    line
}

fn quoted(line: &str) -> String {
    let shown: String = line.chars().take(60).collect();
    if shown.len() < line.len() {
        format!("{shown:?}…")
    } else {
        format!("{shown:?}")
    }
}

/// `thread:cycle:value` of cyclictest -v (`%8d:%8lu:%8ld`).
fn verbose_sample(line: &str) -> Option<(&str, &str, &str)> {
    let mut parts = line.split(':');
    let (thread, cycle, value) = (parts.next()?.trim(), parts.next()?.trim(), parts.next()?.trim());
    if parts.next().is_some() || !all_digits(thread) || !all_digits(cycle) {
        return None;
    }
    let magnitude = value.strip_prefix('-').unwrap_or(value);
    all_digits(magnitude).then_some((thread, cycle, value))
}

fn all_digits(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())
}

fn record_sample(scan: &mut Scan, (thread, cycle, value): (&str, &str, &str), unit_ns: u64) -> Result<(), String> {
    let thread: u64 = number(thread, "thread number")?;
    if thread >= MAX_THREADS {
        return Err(format!("thread number {thread} is out of range"));
    }
    let cycle: u64 = number(cycle, "cycle number")?;
    let raw: i64 = value.parse().map_err(|_| format!("sample value {value} is out of range"))?;
    let value = scaled(raw, unit_ns).ok_or_else(|| format!("sample value {raw} is out of range (more than 1000 s)"))?;
    let values = scan.samples.entry(thread).or_default();
    let expected = values.len() as u64;
    if cycle != expected {
        return Err(if expected == 0 {
            format!("thread {thread} starts at cycle {cycle}, not 0: the beginning of the output is missing")
        } else {
            format!(
                "thread {thread} goes from cycle {} to {cycle}: lines are missing or the output was reduced with -o \
                 (only complete -v output can be imported)",
                expected - 1
            )
        });
    }
    if expected >= MAX_TOTAL_COUNT {
        return Err(format!("thread {thread} has more than {MAX_TOTAL_COUNT} samples"));
    }
    values.push(value);
    Ok(())
}

fn number<T: std::str::FromStr>(text: &str, what: &str) -> Result<T, String> {
    text.parse().map_err(|_| format!("{what} {text} is out of range"))
}

/// Lines cyclictest itself prints on stdout and stderr around its results (status lines
/// when not -q, -v's preamble, warnings); records what they tell. False: not one of them.
fn cyclictest_message(line: &str, scan: &mut Scan) -> bool {
    if let Some(rest) = line.strip_prefix("T:") {
        if let Some((thread, status)) = status_line(rest) {
            scan.status.insert(thread, status);
        }
        return true;
    }
    if let Some(rest) = line.strip_prefix("Thread ") {
        // "Thread 0 Interval: 1500" (printed after the next thread's interval is computed,
        // so not used) and "Thread 0 using cpu 1."
        let mut words = rest.split_whitespace();
        let thread = words.next().and_then(|w| w.parse::<u64>().ok());
        let rest: Vec<&str> = words.collect();
        return match (thread, rest.as_slice()) {
            (Some(_), ["Interval:", _]) => true,
            (Some(thread), ["using", "cpu", cpu]) => match cpu.trim_end_matches('.').parse::<usize>() {
                Ok(cpu) if thread < MAX_THREADS && cpu < MAX_THREADS as usize => {
                    scan.cpus.insert(thread, cpu);
                    true
                }
                _ => false,
            },
            _ => false,
        };
    }
    const MESSAGES: [&str; 9] = [
        "policy:",
        "Max CPUs =",
        "Online CPUs =",
        "Using ",
        "WARN:",
        "defaulting realtime priority",
        "policy and priority don't match",
        "spikes =",
        "Spike:",
    ];
    MESSAGES.iter().any(|m| line.starts_with(m))
}

/// "T: 0 (17810) P:95 I:1000 C:      9 Min:     21 Act:   24 Avg:   23 Max:      26"
/// (after the "T:"): the thread and its priority and interval.
fn status_line(rest: &str) -> Option<(u64, Status)> {
    let words: Vec<&str> = rest.split_whitespace().collect();
    let thread: u64 = words.first()?.parse().ok().filter(|&t| t < MAX_THREADS)?;
    let field = |key: &str| -> Option<&str> {
        let at = words.iter().position(|w| w.starts_with(key))?;
        let inline = words.get(at)?.get(key.len()..)?;
        if inline.is_empty() {
            words.get(at + 1).copied()
        } else {
            Some(inline)
        }
    };
    let priority = field("P:").and_then(|p| p.parse::<i32>().ok()).filter(|p| (0..=99).contains(p));
    let interval_us = field("I:").and_then(|i| i.parse::<u64>().ok()).filter(|&i| i > 0 && i <= 1_000_000_000);
    Some((thread, Status { priority, interval_us }))
}

/// "000017 000123\t000100": digits, then whitespace-separated digit groups.
fn looks_like_row(line: &str) -> bool {
    let mut words = line.split_whitespace();
    words.next().is_some_and(all_digits) && words.clone().next().is_some() && words.all(all_digits)
}

fn histogram_row(rows: &mut Rows, line_number: usize, line: &str, unit_ns: u64) -> Result<(), String> {
    if !looks_like_row(line) {
        return Err(format!("not a histogram row (`000017 000123`, a column per thread): {}", quoted(line)));
    }
    let mut words = line.split_whitespace();
    let index: u64 = number(words.next().unwrap_or_default(), "bucket")?;
    if i64::try_from(index).ok().and_then(|i| scaled(i, unit_ns)).is_none() {
        return Err(format!("bucket {index} is out of range (more than 1000 s)"));
    }
    if let Some(&previous) = rows.indices.last() {
        if index <= previous {
            return Err(format!("bucket {index} follows bucket {previous}: the rows must go up"));
        }
    }
    let start = rows.counts.len();
    for word in words {
        let count: u64 = number(word, "count")?;
        if count > MAX_TOTAL_COUNT {
            return Err(format!("count {count} is out of range (more than {MAX_TOTAL_COUNT})"));
        }
        rows.counts.push(count);
    }
    let columns = rows.counts.len() - start;
    if rows.indices.is_empty() {
        rows.columns = columns;
    } else if columns != rows.columns {
        rows.counts.truncate(start);
        return Err(format!("{columns} columns where the rows above have {}", rows.columns));
    }
    rows.indices.push(index);
    rows.lines.push(line_number);
    Ok(())
}

fn footer_line(footer: &mut Footer, n: usize, line: &str) -> Result<(), String> {
    let values_of = |rest: &str, label: &str| -> Result<FooterLine, String> {
        let values = rest
            .split_whitespace()
            .map(|w| {
                if all_digits(w) {
                    w.parse::<u64>().map_err(|_| format!("`{label}` value {w} is out of range"))
                } else {
                    Err(format!("`{label}` holds {}, not a number", quoted(w)))
                }
            })
            .collect::<Result<Vec<u64>, String>>()?;
        if values.is_empty() {
            return Err(format!("`{label}` has no values"));
        }
        Ok(FooterLine { line: n, values })
    };
    let fields: [(&str, &mut Option<FooterLine>); 5] = [
        ("# Total:", &mut footer.total),
        ("# Min Latencies:", &mut footer.min),
        ("# Avg Latencies:", &mut footer.avg),
        ("# Max Latencies:", &mut footer.max),
        ("# Histogram Overflows:", &mut footer.overflows),
    ];
    for (label, slot) in fields {
        if let Some(rest) = line.strip_prefix(label) {
            if slot.is_some() {
                return Err(format!("a second `{label}` line: the file holds more than one run"));
            }
            *slot = Some(values_of(rest, label)?);
            return Ok(());
        }
    }
    if line == "# Histogram" {
        return Err("a second `# Histogram`: the file holds more than one run".into());
    }
    if let Some(rest) = line.strip_prefix("# Thread ") {
        if let Some((thread, list)) = rest.split_once(':') {
            if all_digits(thread) {
                let thread: u64 = number(thread, "thread number")?;
                if footer.overflow_lists.contains_key(&thread) {
                    return Err(format!("a second overflow list for thread {thread}"));
                }
                let list = overflow_list(n, list)?;
                footer.overflow_lists.insert(thread, list);
                return Ok(());
            }
        }
    }
    // Other comments ("# Histogram Overflow at cycle number:", "# Thread Ids:", "# SMIs:",
    // "# Break thread:") say nothing the import uses.
    Ok(())
}

/// " 00012 00345 # 00052 others": the listed cycle numbers and the count of the others.
fn overflow_list(n: usize, text: &str) -> Result<OverflowList, String> {
    let (listed, tail) = match text.split_once('#') {
        Some((listed, tail)) => (listed, Some(tail)),
        None => (text, None),
    };
    let cycles = listed
        .split_whitespace()
        .map(|w| {
            if all_digits(w) {
                w.parse::<u64>().map_err(|_| format!("overflow cycle number {w} is out of range"))
            } else {
                Err(format!("overflow list holds {}, not a cycle number", quoted(w)))
            }
        })
        .collect::<Result<Vec<u64>, String>>()?;
    let others = match tail.map(|t| t.split_whitespace().collect::<Vec<_>>()) {
        None => 0,
        Some(words) => match words.as_slice() {
            [count, "others"] if all_digits(count) => number(count, "overflow count")?,
            _ => return Err("the overflow list's tail is not `# NNNNN others`".into()),
        },
    };
    Ok(OverflowList { line: n, cycles, others })
}

/// The histogram's threads, checked against the footer.
fn histogram_source(
    file: &SourceFile,
    scan: &Scan,
    unit_ns: u64,
    parsed: &mut ParsedSource,
) -> Result<(), ImportError> {
    let at = |line: usize, reason: String| ImportError::at(&file.path, line, reason);
    let footer = &scan.footer;
    let require = |slot: &Option<FooterLine>, label: &str| -> Result<(usize, Vec<u64>), ImportError> {
        slot.as_ref().map(|f| (f.line, f.values.clone())).ok_or_else(|| {
            at(
                scan.last_line,
                format!("the footer has no `{label}` line: the file is truncated or not cyclictest -h output"),
            )
        })
    };
    let (min_line, mins) = require(&footer.min, "# Min Latencies:")?;
    let (avg_line, avgs) = require(&footer.avg, "# Avg Latencies:")?;
    let (max_line, maxes) = require(&footer.max, "# Max Latencies:")?;
    let (overflow_line, overflows) = require(&footer.overflows, "# Histogram Overflows:")?;
    let threads = mins.len();
    let rows = &scan.rows;
    // -H adds an all-threads column and a summary value to Total, Max and Overflows.
    let all_threads_column = !rows.indices.is_empty() && rows.columns == threads + 1;
    let summarised = |values: &[u64], line: usize, label: &str| -> Result<(), ImportError> {
        if values.len() == threads || (values.len() == threads + 1 && threads > 1) {
            Ok(())
        } else {
            Err(at(line, format!("`{label}` has {} values where `# Min Latencies:` has {threads}", values.len())))
        }
    };
    if avgs.len() != threads {
        return Err(at(
            avg_line,
            format!("`# Avg Latencies:` has {} values where `# Min Latencies:` has {threads}", avgs.len()),
        ));
    }
    summarised(&maxes, max_line, "# Max Latencies:")?;
    summarised(&overflows, overflow_line, "# Histogram Overflows:")?;
    if let Some(total) = &footer.total {
        summarised(&total.values, total.line, "# Total:")?;
    }
    if !rows.indices.is_empty() && rows.columns != threads && !all_threads_column {
        return Err(at(
            rows.lines.first().copied().unwrap_or(scan.last_line),
            format!("{} columns where the footer has {threads} threads", rows.columns),
        ));
    }

    // Per thread: its buckets and their total.
    let mut buckets: Vec<Vec<(u64, u64)>> = vec![Vec::new(); threads];
    let mut bucket_totals: Vec<u64> = vec![0; threads];
    if rows.columns > 0 {
        for ((&index, &line), counts) in
            rows.indices.iter().zip(&rows.lines).zip(rows.counts.chunks_exact(rows.columns))
        {
            let mut sum: u64 = 0;
            for (t, &count) in counts.iter().take(threads).enumerate() {
                sum = sum.checked_add(count).ok_or_else(|| at(line, "counts out of range".into()))?;
                if count > 0 {
                    if let (Some(b), Some(total)) = (buckets.get_mut(t), bucket_totals.get_mut(t)) {
                        b.push((index, count));
                        *total = total
                            .checked_add(count)
                            .filter(|&c| c <= MAX_TOTAL_COUNT)
                            .ok_or_else(|| at(line, format!("thread {t}: more than {MAX_TOTAL_COUNT} samples")))?;
                    }
                }
            }
            if all_threads_column && counts.get(threads) != Some(&sum) {
                return Err(at(line, "the all-threads column (-H) is not the sum of the threads' columns".into()));
            }
        }
    }

    // The histogram's size (-h): every row when the 2.4 layout printed every bucket; the
    // length of an overflow list cut short by "others" (cyclictest lists at most -h cycles).
    let contiguous = rows.indices.iter().enumerate().all(|(i, &index)| index == i as u64);
    let every_bucket = footer.total.is_some() && contiguous && !rows.indices.is_empty();
    let mut size = every_bucket.then_some(rows.indices.len() as u64);
    for list in footer.overflow_lists.values() {
        if list.others == 0 || list.cycles.is_empty() {
            continue;
        }
        let listed = list.cycles.len() as u64;
        match size {
            Some(s) if s != listed => {
                return Err(at(
                    list.line,
                    format!(
                        "{listed} overflow cycles listed before `others` (cyclictest lists as many as the \
                         histogram has buckets) but the histogram has {s} buckets"
                    ),
                ))
            }
            _ => size = Some(listed),
        }
    }
    let lowest_size = rows.indices.last().map_or(0, |&last| last.saturating_add(1));
    let limit = match size {
        Some(s) if s < lowest_size => {
            return Err(at(
                rows.lines.last().copied().unwrap_or(scan.last_line),
                format!("bucket {} is beyond the histogram's {s} buckets", lowest_size - 1),
            ))
        }
        Some(s) => s,
        None => lowest_size,
    };
    let limit_ns = i64::try_from(limit)
        .ok()
        .and_then(|l| scaled(l, unit_ns))
        .ok_or_else(|| at(scan.last_line, format!("histogram size {limit} is out of range")))?;

    // The all-threads summaries of -H must agree with the threads'.
    if all_threads_column || maxes.len() > threads {
        let check = |values: &[u64], expected: Option<u64>, line: usize, label: &str| -> Result<(), ImportError> {
            match (values.get(threads), expected) {
                (Some(&shown), Some(expected)) if shown != expected => Err(at(
                    line,
                    format!("`{label}`'s all-threads value {shown} disagrees with the threads' ({expected})"),
                )),
                _ => Ok(()),
            }
        };
        let sum = |values: &[u64]| values.iter().take(threads).try_fold(0u64, |a, &v| a.checked_add(v));
        check(&maxes, maxes.iter().take(threads).copied().max(), max_line, "# Max Latencies:")?;
        check(&overflows, sum(&overflows), overflow_line, "# Histogram Overflows:")?;
        if let Some(total) = &footer.total {
            check(&total.values, sum(&total.values), total.line, "# Total:")?;
        }
    }

    let mut any_overflow = false;
    for t in 0..threads {
        let value = |values: &[u64]| values.get(t).copied().unwrap_or(0);
        let (min, avg, max, overflow) = (value(&mins), value(&avgs), value(&maxes), value(&overflows));
        let thread_buckets = buckets.get(t).cloned().unwrap_or_default();
        let bucket_total = bucket_totals.get(t).copied().unwrap_or(0);
        if let Some(total) = &footer.total {
            let shown = value(&total.values);
            if shown != bucket_total {
                return Err(at(
                    total.line,
                    format!("thread {t}: `# Total:` says {shown} but its rows add up to {bucket_total}"),
                ));
            }
        }
        let count = bucket_total
            .checked_add(overflow)
            .filter(|&c| c <= MAX_TOTAL_COUNT)
            .ok_or_else(|| at(overflow_line, format!("thread {t}: more than {MAX_TOTAL_COUNT} samples")))?;
        any_overflow |= overflow > 0;
        if let Some(list) = footer.overflow_lists.get(&(t as u64)) {
            let listed = (list.cycles.len() as u64).checked_add(list.others);
            if listed != Some(overflow) {
                return Err(at(
                    list.line,
                    format!(
                        "thread {t}: {} overflow cycles listed and {} others, but `# Histogram Overflows:` says {overflow}",
                        list.cycles.len(),
                        list.others
                    ),
                ));
            }
        }
        let scale = |v: u64, line: usize, what: &str| -> Result<i64, ImportError> {
            i64::try_from(v)
                .ok()
                .and_then(|v| scaled(v, unit_ns))
                .ok_or_else(|| at(line, format!("thread {t}: {what} {v} is out of range (more than 1000 s)")))
        };
        let mut histogram = SourceHistogram {
            width_ns: unit_ns,
            buckets: Vec::with_capacity(thread_buckets.len()),
            overflows: overflow,
            overflow_from_ns: limit_ns,
            min_ns: None,
            max_ns: None,
            count: Some(count),
            avg_ns: None,
        };
        for &(index, n) in &thread_buckets {
            // Checked when the row was read.
            histogram.buckets.push((scale(index, min_line, "bucket")?, n));
        }
        if count == 0 {
            parsed.notes.push(format!("thread {t} recorded no samples"));
        } else {
            check_extremes(
                &t.to_string(),
                &thread_buckets,
                overflow,
                limit,
                (min, max),
                ["`# Min Latencies:`", "`# Max Latencies:`"],
            )
            .map_err(|(which, reason)| {
                at(
                    match which {
                        Extreme::Min => min_line,
                        Extreme::Max => max_line,
                    },
                    reason,
                )
            })?;
            let (min_ns, max_ns) = (scale(min, min_line, "min")?, scale(max, max_line, "max")?);
            histogram.min_ns = Some(min_ns);
            histogram.max_ns = Some(max_ns);
            // Every sample is at least the min, so a bound below it says less.
            histogram.overflow_from_ns = limit_ns.max(min_ns);
            histogram.avg_ns = Some(scale(avg, avg_line, "average")? as f64);
        }
        let mut series = Series::new(
            "timer",
            "timer.latency",
            scan.cpus.get(&(t as u64)).copied(),
            format!("T:{t}"),
            SeriesData::Histogram(histogram),
        );
        series.details.insert(HISTOGRAM_LIMIT_DETAIL.into(), Detail::Int(limit_ns));
        if let Some(list) = footer.overflow_lists.get(&(t as u64)).filter(|l| !l.cycles.is_empty() || l.others > 0) {
            let cycles: Vec<String> = list.cycles.iter().map(|c| c.to_string()).collect();
            series.details.insert(OVERFLOW_CYCLES_DETAIL.into(), Detail::Text(cycles.join(" ")));
            let others = i64::try_from(list.others).map_err(|_| at(list.line, "overflow count out of range".into()))?;
            series.details.insert(OVERFLOW_UNLISTED_DETAIL.into(), Detail::Int(others));
        }
        parsed.series.push(series);
    }
    if let Some(extra) = footer.overflow_lists.keys().find(|&&k| k >= threads as u64) {
        let line = footer.overflow_lists.get(extra).map_or(scan.last_line, |l| l.line);
        return Err(at(line, format!("an overflow list for thread {extra}, but the footer has {threads} threads")));
    }

    let unit = unit_name(unit_ns);
    parsed.layouts.push("cyclictest-histogram".into());
    parsed.notes.push(if every_bucket {
        format!("rt-tests 2.4 histogram layout (every bucket, `# Total:` line): {limit} buckets of 1 {unit}")
    } else {
        "newer histogram layout (rt-tests 2.7+: empty buckets left out, no `# Total:` line)".to_string()
    });
    if all_threads_column {
        parsed
            .notes
            .push("the all-threads column of -H was checked against the threads' columns and not imported".into());
    }
    parsed.notes.push(if any_overflow {
        // Censored data: the buckets cannot give the mean of samples they did not hold.
        format!(
            "count, min and max are cyclictest's own (exact); so is the mean of a thread whose samples overflowed \
             (cyclictest's Avg, truncated to a whole {unit}, also kept as source_avg_ns); other threads' means are \
             computed from the 1 {unit} buckets"
        )
    } else {
        format!(
            "count, min and max are cyclictest's own (exact); the mean is computed from the 1 {unit} buckets; \
             cyclictest's Avg, truncated to a whole {unit}, is kept as source_avg_ns"
        )
    });
    if any_overflow {
        parsed.notes.push(if size.is_some() {
            format!(
                "overflows (samples of {limit} {unit} and more, beyond the histogram) are counted at {limit} {unit} \
                 except the largest, at the footer's exact max: percentiles among them are lower bounds"
            )
        } else {
            format!(
                "the histogram's size (-h) is not in this layout: overflows are counted at {limit} {unit}, just above \
                 the highest bucket printed (a lower bound), except the largest, at the footer's exact max"
            )
        });
    }

    // -v samples in the same capture: every sample is better than the buckets, when all are there.
    if !scan.samples.is_empty() {
        let complete = scan.samples.keys().copied().eq(0..threads as u64)
            && parsed.series.iter().zip(scan.samples.values()).all(|(s, values)| match &s.data {
                SeriesData::Histogram(h) => h.count == Some(values.len() as u64),
                _ => false,
            });
        if complete {
            let cpus: Vec<Option<usize>> = parsed.series.iter().map(|s| s.cpu).collect();
            parsed.series = verbose_series(scan);
            for (series, cpu) in parsed.series.iter_mut().zip(cpus) {
                series.cpu = cpu;
            }
            parsed.layouts = vec!["cyclictest-verbose".into()];
            parsed.notes = vec!["-v samples and a histogram in one file: every sample imported (exact)".into()];
        } else {
            parsed
                .notes
                .push("the file also holds -v samples, but not one per cycle: the histogram is imported".into());
        }
    }
    Ok(())
}

/// Which extreme a consistency check blames.
enum Extreme {
    Min,
    Max,
}

/// cyclictest counts a sample in bucket `value` (or as an overflow from `limit` on), and
/// min and max are of the same values: the lowest bucket is the min, the highest the max
/// unless some overflowed. Anything else is a damaged or edited file. `names` are the
/// min's and max's names in the file, for the message.
fn check_extremes(
    thread: &str,
    buckets: &[(u64, u64)],
    overflows: u64,
    limit: u64,
    (min, max): (u64, u64),
    names: [&str; 2],
) -> Result<(), (Extreme, String)> {
    let [min_name, max_name] = names;
    match buckets.first() {
        Some(&(lowest, _)) if lowest != min => {
            return Err((
                Extreme::Min,
                format!("thread {thread}: {min_name} says {min} but the lowest bucket is {lowest}"),
            ))
        }
        None if min < limit => {
            return Err((
                Extreme::Min,
                format!(
                "thread {thread}: every sample overflowed, yet {min_name} {min} is below the histogram's size {limit}"
            ),
            ))
        }
        _ => {}
    }
    match buckets.last() {
        Some(&(highest, _)) if overflows == 0 && highest != max => Err((
            Extreme::Max,
            format!("thread {thread}: {max_name} says {max} but the highest bucket is {highest}"),
        )),
        _ if overflows > 0 && max < limit => Err((
            Extreme::Max,
            format!(
                "thread {thread}: {overflows} samples overflowed, yet {max_name} {max} is below the histogram's size {limit}"
            ),
        )),
        _ => Ok(()),
    }
}

fn verbose_series(scan: &Scan) -> Vec<Series> {
    scan.samples
        .iter()
        .map(|(thread, values)| {
            Series::new(
                "timer",
                "timer.latency",
                scan.cpus.get(thread).copied(),
                format!("T:{thread}"),
                SeriesData::Samples(values.clone()),
            )
        })
        .collect()
}

/// Priority and interval from the status lines of a captured stdout (not -q).
fn apply_status(scan: &Scan, parsed: &mut ParsedSource) {
    for series in &mut parsed.series {
        let thread = series.thread.strip_prefix("T:").and_then(|t| t.parse::<u64>().ok());
        if let Some(status) = thread.and_then(|t| scan.status.get(&t)) {
            series.interval_ns = status.interval_us.map(|i| i * 1000);
        }
    }
    if let Some(first) = scan.status.values().next() {
        parsed.interval_ns = first.interval_us.map(|i| i * 1000);
        parsed.priority = first.priority;
        parsed.policy = first.priority.map(|p| if p > 0 { Policy::Fifo } else { Policy::Other });
        parsed.notes.push("interval and priority from cyclictest's status lines (T: ... P: I:)".into());
    }
}

// ---------------------------------------------------------------------------------------
// --json
// ---------------------------------------------------------------------------------------

/// Errors inside a JSON file: the line of the key at fault, found by searching the text
/// for its path (serde_json's tree keeps no positions).
pub(crate) struct JsonFile<'a> {
    pub(crate) path: &'a str,
    pub(crate) text: &'a str,
}

impl JsonFile<'_> {
    pub(crate) fn error(&self, keys: &[&str], reason: impl Into<String>) -> ImportError {
        let mut from = 0;
        let mut found = None;
        for key in keys {
            let needle = format!("\"{key}\"");
            match self.text.get(from..).and_then(|rest| rest.find(&needle)) {
                Some(offset) => {
                    from += offset + needle.len();
                    found = Some(from);
                }
                None => break,
            }
        }
        match found {
            Some(offset) => {
                let line = self.text.get(..offset).map_or(1, |t| t.bytes().filter(|&b| b == b'\n').count() + 1);
                ImportError::at(self.path, line, reason)
            }
            None => ImportError::whole(self.path, reason),
        }
    }
}

fn parse_json(file: &SourceFile, options: &ImportOptions) -> Result<ParsedSource, ImportError> {
    let text = std::str::from_utf8(&file.bytes).map_err(|e| {
        let valid = file.bytes.get(..e.valid_up_to()).unwrap_or_default();
        ImportError::at(&file.path, valid.iter().filter(|&&b| b == b'\n').count() + 1, "not UTF-8 text")
    })?;
    let invalid = |e: serde_json::Error| ImportError::at(&file.path, e.line().max(1), format!("not valid JSON: {e}"));
    serde_json::from_str::<UniqueKeys>(text).map_err(invalid)?;
    let root: Value = serde_json::from_str(text).map_err(invalid)?;
    let json = JsonFile { path: &file.path, text };
    let Some(root) = root.as_object() else {
        return Err(ImportError::at(&file.path, 1, "a cyclictest --json file is an object"));
    };
    // cyclictest writes these two keys with a colon inside the name.
    let text_field = |names: [&str; 2]| -> Result<Option<String>, ImportError> {
        for name in names {
            match root.get(name) {
                None => continue,
                Some(Value::String(s)) => return Ok(Some(s.clone())),
                Some(_) => return Err(json.error(&[name], format!("\"{name}\" is not a string"))),
            }
        }
        Ok(None)
    };
    let command_line = text_field(["cmdline:", "cmdline"])?;
    let version = text_field(["rt_test_version:", "rt_test_version"])?;
    let cmdline = command_line.as_deref().map(Cmdline::parse);
    if let Some(program) = cmdline.as_ref().map(|c| c.program.as_str()) {
        let name = program.rsplit('/').next().unwrap_or(program);
        if !name.contains("cyclictest") {
            return Err(json.error(&["cmdline:"], format!("written by {name:?}, not cyclictest")));
        }
    }
    let Some(threads) = root.get("thread").and_then(Value::as_object) else {
        return Err(json.error(&["thread"], "no \"thread\" object: not a cyclictest --json file"));
    };

    let unit_ns = match root.get("resolution_in_ns").map(|v| (v, v.as_u64())) {
        // A flag, despite the name: 1 when cyclictest ran with -N (ns), else 0 (µs).
        Some((_, Some(1))) => 1,
        Some((_, Some(0 | 1000))) => 1000,
        None => match cmdline.as_ref() {
            Some(c) if c.nsecs => 1,
            _ => 1000,
        },
        Some((v, _)) => {
            return Err(json.error(
                &["resolution_in_ns"],
                format!("resolution_in_ns {v}: cyclictest writes 0 (µs) or 1 (ns, with -N)"),
            ))
        }
    };
    let unit = unit_name(unit_ns);
    match options.unit {
        Some(given) if given.ns() != unit_ns => {
            return Err(json.error(
                &["resolution_in_ns"],
                format!("the file records its values in {unit}, but --unit says otherwise"),
            ))
        }
        _ => {}
    }

    let mut parsed = ParsedSource {
        layouts: vec!["cyclictest-json".into()],
        source_tool: Some(match &version {
            Some(v) => format!("cyclictest {v}"),
            None => "cyclictest".into(),
        }),
        source_command_line: command_line.clone(),
        resolution_ns: unit_ns,
        ..ParsedSource::default()
    };
    if let Some(v) = root.get("file_version").and_then(Value::as_u64).filter(|&v| v != 1) {
        parsed.notes.push(format!("file_version {v} (written for version 1; read the same way)"));
    }
    let start = root.get("start_time").and_then(Value::as_str);
    let end = root.get("end_time").and_then(Value::as_str);
    parsed.start_time = start.map(|s| rfc2822_to_rfc3339(s).unwrap_or_else(|| s.to_string()));
    parsed.end_time = end.map(|s| rfc2822_to_rfc3339(s).unwrap_or_else(|| s.to_string()));
    if let (Some(a), Some(b)) = (start.and_then(rfc2822_epoch), end.and_then(rfc2822_epoch)) {
        if b > a {
            parsed.duration_s = Some((b - a) as f64);
            parsed.notes.push("duration from start_time and end_time (whole seconds)".into());
        }
    }
    let return_code = root.get("return_code").and_then(Value::as_i64).filter(|&c| c != 0);
    if let Some(code) = return_code {
        parsed.notes.push(format!("cyclictest exited with return_code {code}: the run may not have completed"));
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
        if sysinfo.get("realtime").and_then(Value::as_i64) == Some(1) {
            parsed.notes.push("sysinfo.realtime 1: the kernel reported itself real-time (PREEMPT_RT)".into());
        }
    }

    // Threads in their numeric order ("10" after "9").
    let mut ordered: BTreeMap<u64, (&String, &Map<String, Value>)> = BTreeMap::new();
    for (key, thread) in threads {
        let number = key.parse::<u64>().ok().filter(|&n| n < MAX_THREADS);
        let (Some(number), Some(thread)) = (number, thread.as_object()) else {
            return Err(json.error(&["thread", key], format!("thread {key:?}: not a numbered thread object")));
        };
        if thread.contains_key("receiver") {
            return Err(json.error(&["thread", key], "a sender/receiver thread: written by another rt-tests tool"));
        }
        if ordered.insert(number, (key, thread)).is_some() {
            return Err(json.error(&["thread", key], format!("thread {number} appears twice")));
        }
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

    let histogram_size = cmdline.as_ref().and_then(|c| c.histogram).map(|h| h.min(HIST_MAX));
    let any_buckets =
        ordered.values().any(|(_, t)| t.get("histogram").and_then(Value::as_object).is_some_and(|h| !h.is_empty()));
    let with_histogram = histogram_size.is_some() || any_buckets;
    let mut thread_data = Vec::new();
    for (&number, &(key, thread)) in &ordered {
        thread_data.push(json_thread(&json, key, number, thread, unit_ns, with_histogram)?);
    }
    // Without -h in the command line, the size is at least the highest bucket + 1.
    let lowest_size =
        thread_data.iter().filter_map(|t| t.buckets.last().map(|b| b.0.saturating_add(1))).max().unwrap_or(0);
    let limit = histogram_size.unwrap_or(lowest_size);
    let limit_ns = i64::try_from(limit)
        .ok()
        .and_then(|l| scaled(l, unit_ns))
        .ok_or_else(|| json.error(&["cmdline:"], format!("histogram size {limit} is out of range")))?;

    let mut any_overflow = false;
    for data in thread_data {
        let keys = ["thread", data.key.as_str()];
        let mut details = BTreeMap::new();
        if let Some(node) = data.node {
            details.insert(NUMA_NODE_DETAIL.to_string(), Detail::Int(node));
        }
        if let Some(code) = return_code {
            details.insert(RETURN_CODE_DETAIL.to_string(), Detail::Int(code));
        }
        let scale = |v: i64, what: &str| {
            scaled(v, unit_ns)
                .ok_or_else(|| json.error(&keys, format!("thread {}: {what} {v} is out of range", data.key)))
        };
        let series_data = if with_histogram {
            if let Some(&(highest, _)) = data.buckets.last() {
                if highest >= limit {
                    return Err(json.error(
                        &keys,
                        format!("thread {}: bucket {highest} is beyond the histogram's {limit} buckets (-h)", data.key),
                    ));
                }
            }
            let bucket_total = data.buckets.iter().try_fold(0u64, |a, b| a.checked_add(b.1)).unwrap_or(u64::MAX);
            let overflows = data.cycles.checked_sub(bucket_total).ok_or_else(|| {
                json.error(
                    &keys,
                    format!(
                        "thread {}: the histogram holds {bucket_total} samples, more than its {} cycles",
                        data.key, data.cycles
                    ),
                )
            })?;
            any_overflow |= overflows > 0;
            let mut histogram = SourceHistogram {
                width_ns: unit_ns,
                buckets: Vec::with_capacity(data.buckets.len()),
                overflows,
                overflow_from_ns: limit_ns,
                min_ns: None,
                max_ns: None,
                count: Some(data.cycles),
                avg_ns: None,
            };
            for &(index, n) in &data.buckets {
                let index = i64::try_from(index).unwrap_or(i64::MAX);
                histogram.buckets.push((scale(index, "bucket")?, n));
            }
            if let Some((min, max, avg)) = data.summary {
                let (lo, hi) = (u64::try_from(min).unwrap_or(0), u64::try_from(max).unwrap_or(0));
                if min < 0 || max < 0 {
                    return Err(json.error(&keys, format!("thread {}: negative min or max with a histogram", data.key)));
                }
                check_extremes(&data.key, &data.buckets, overflows, limit, (lo, hi), ["min", "max"]).map_err(
                    |(which, reason)| {
                        let field = match which {
                            Extreme::Min => "min",
                            Extreme::Max => "max",
                        };
                        json.error(&["thread", data.key.as_str(), field], reason)
                    },
                )?;
                let (min_ns, max_ns) = (scale(min, "min")?, scale(max, "max")?);
                histogram.min_ns = Some(min_ns);
                histogram.max_ns = Some(max_ns);
                histogram.overflow_from_ns = limit_ns.max(min_ns);
                histogram.avg_ns = Some(avg * unit_ns as f64);
            }
            details.insert(HISTOGRAM_LIMIT_DETAIL.to_string(), Detail::Int(limit_ns));
            SeriesData::Histogram(histogram)
        } else {
            let Some((min, max, avg)) = data.summary else {
                return Err(
                    json.error(&keys, format!("thread {}: no cycles and no histogram: nothing to import", data.key))
                );
            };
            let cycles = i64::try_from(data.cycles).unwrap_or(i64::MAX);
            details.insert(SOURCE_CYCLES_DETAIL.to_string(), Detail::Int(cycles));
            SeriesData::SummaryOnly {
                min_ns: scale(min, "min")?,
                avg_ns: avg * unit_ns as f64,
                max_ns: scale(max, "max")?,
            }
        };
        let mut series = Series::new("timer", "timer.latency", data.cpu, format!("T:{}", data.number), series_data);
        series.details = details;
        parsed.series.push(series);
    }

    if with_histogram {
        parsed.notes.push(if any_overflow {
            format!(
                "count, min and max are cyclictest's own (exact); so is the mean of a thread whose samples overflowed \
                 (cyclictest's avg, two decimals, also kept as source_avg_ns); other threads' means are computed from \
                 the 1 {unit} buckets"
            )
        } else {
            format!(
                "count, min and max are cyclictest's own (exact); the mean is computed from the 1 {unit} buckets; \
                 cyclictest's avg (two decimals) is kept as source_avg_ns"
            )
        });
        if any_overflow {
            parsed.notes.push(match histogram_size {
                Some(_) => format!(
                    "--json has no overflow count: the samples beyond the histogram are cycles minus the buckets' total, \
                     counted at the histogram's size {limit} {unit} (-h in cmdline) except the largest, at the exact max"
                ),
                None => format!(
                    "--json has no overflow count: the samples beyond the histogram are cycles minus the buckets' total, \
                     counted at {limit} {unit} (the highest bucket + 1, a lower bound: the command line gives no -h) \
                     except the largest, at the exact max"
                ),
            });
        }
    } else {
        parsed.notes.push(
            "no histogram (cyclictest ran without -h): only each thread's min, avg and max are imported (its cycles \
             are kept as source_cycles); run cyclictest with -h for the distribution"
                .into(),
        );
    }
    apply_cmdline(cmdline.as_ref(), with_histogram, &mut parsed);
    if parsed.series.iter().any(|s| s.cpu.is_none()) {
        parsed.assumed.push("CPU of threads with cpu -1 (not pinned): shown as their thread number".into());
    }
    Ok(parsed)
}

/// A JSON document whose objects never repeat a key. serde_json's `Value` keeps only the
/// last of a repeated key, which would drop a histogram bucket without a word.
pub(crate) struct UniqueKeys;

impl<'de> serde::Deserialize<'de> for UniqueKeys {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(UniqueKeys)
    }
}

impl<'de> serde::de::Visitor<'de> for UniqueKeys {
    type Value = UniqueKeys;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("JSON")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self, E> {
        Ok(UniqueKeys)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self, E> {
        Ok(UniqueKeys)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self, E> {
        Ok(UniqueKeys)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self, E> {
        Ok(UniqueKeys)
    }

    fn visit_str<E>(self, _: &str) -> Result<Self, E> {
        Ok(UniqueKeys)
    }

    fn visit_unit<E>(self) -> Result<Self, E> {
        Ok(UniqueKeys)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self, A::Error> {
        while seq.next_element::<UniqueKeys>()?.is_some() {}
        Ok(UniqueKeys)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self, A::Error> {
        let mut seen = std::collections::HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            map.next_value::<UniqueKeys>()?;
            if !seen.insert(key) {
                return Err(serde::de::Error::custom("a key appears twice in one object"));
            }
        }
        Ok(UniqueKeys)
    }
}

/// One thread of a --json file, read and checked.
struct JsonThread {
    key: String,
    number: u64,
    cycles: u64,
    /// min, max (file unit) and avg, when the thread ran cycles.
    summary: Option<(i64, i64, f64)>,
    cpu: Option<usize>,
    node: Option<i64>,
    /// (bucket, count), non-empty, ascending.
    buckets: Vec<(u64, u64)>,
}

fn json_thread(
    json: &JsonFile,
    key: &str,
    number: u64,
    thread: &Map<String, Value>,
    unit_ns: u64,
    with_histogram: bool,
) -> Result<JsonThread, ImportError> {
    let keys = |field: &'static str| ["thread", key, field];
    let cycles = thread
        .get("cycles")
        .and_then(Value::as_u64)
        .filter(|&c| c <= MAX_TOTAL_COUNT)
        .ok_or_else(|| json.error(&keys("cycles"), format!("thread {key}: cycles missing or out of range")))?;
    let summary = if cycles == 0 {
        None
    } else {
        let int = |field: &'static str| {
            thread
                .get(field)
                .and_then(Value::as_i64)
                .filter(|&v| scaled(v, unit_ns).is_some())
                .ok_or_else(|| json.error(&keys(field), format!("thread {key}: {field} missing or out of range")))
        };
        let (min, max) = (int("min")?, int("max")?);
        let avg = thread
            .get("avg")
            .and_then(Value::as_f64)
            .filter(|a| a.is_finite() && (min as f64..=max as f64).contains(a))
            .ok_or_else(|| json.error(&keys("avg"), format!("thread {key}: avg missing or outside min..max")))?;
        if min > max {
            return Err(json.error(&keys("min"), format!("thread {key}: min {min} above max {max}")));
        }
        Some((min, max, avg))
    };
    let cpu = match thread.get("cpu") {
        None => None,
        Some(v) => match v.as_i64() {
            Some(-1) => None,
            Some(c) if (0..MAX_THREADS as i64).contains(&c) => Some(c as usize),
            _ => return Err(json.error(&keys("cpu"), format!("thread {key}: cpu {v} is out of range"))),
        },
    };
    let node = thread.get("node").and_then(Value::as_i64);
    let mut buckets = Vec::new();
    match thread.get("histogram") {
        None => {}
        Some(Value::Object(histogram)) => {
            for (bucket, count) in histogram {
                let index = bucket
                    .parse::<u64>()
                    .ok()
                    .filter(|&b| i64::try_from(b).ok().and_then(|b| scaled(b, unit_ns)).is_some());
                match (index, count.as_u64().filter(|&c| c <= MAX_TOTAL_COUNT)) {
                    (Some(index), Some(count)) if count > 0 => buckets.push((index, count)),
                    (Some(_), Some(_)) => {}
                    _ => {
                        return Err(json.error(
                            &["thread", key, "histogram", bucket],
                            format!(
                                "thread {key}: histogram entry {bucket:?}: {count} is not a bucket number and a count"
                            ),
                        ))
                    }
                }
            }
        }
        Some(_) => return Err(json.error(&keys("histogram"), format!("thread {key}: histogram is not an object"))),
    }
    buckets.sort_unstable();
    if buckets.windows(2).any(|w| w.first().map(|a| a.0) == w.get(1).map(|b| b.0)) {
        return Err(json.error(&keys("histogram"), format!("thread {key}: a bucket appears twice")));
    }
    if cycles == 0 && !with_histogram {
        return Err(json.error(&keys("cycles"), format!("thread {key}: no cycles and no histogram: nothing to import")));
    }
    Ok(JsonThread { key: key.to_string(), number, cycles, summary, cpu, node, buckets })
}

/// What cyclictest's command line (`cmdline:`) says about how it ran.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Cmdline {
    pub program: String,
    pub interval_us: Option<u64>,
    pub distance_us: Option<u64>,
    pub priority: Option<i32>,
    pub policy: Option<String>,
    pub histogram: Option<u64>,
    pub nsecs: bool,
    pub priospread: bool,
}

impl Cmdline {
    /// getopt's reading of cyclictest's options ("-Sp90", "-i 1000", "--interval=1000").
    pub fn parse(cmdline: &str) -> Cmdline {
        // Short options taking an argument, and long ones (the rest take none or an
        // optional one attached with '=').
        const SHORT_WITH_ARG: &str = "bcdDFhHilop";
        const LONG_WITH_ARG: [&str; 19] = [
            "breaktrace",
            "clock",
            "distance",
            "duration",
            "latency",
            "fifo",
            "histogram",
            "histofall",
            "histfile",
            "interval",
            "json",
            "loops",
            "mainaffinity",
            "oscope",
            "priority",
            "spike",
            "spike-nodes",
            "policy",
            "deepest-idle-state",
        ];
        let words: Vec<&str> = cmdline.split_whitespace().collect();
        let mut c = Cmdline { program: words.first().copied().unwrap_or_default().to_string(), ..Cmdline::default() };
        let mut i = 1;
        while let Some(&word) = words.get(i) {
            i += 1;
            if word == "--" {
                break;
            }
            if let Some(long) = word.strip_prefix("--") {
                let (name, inline) = match long.split_once('=') {
                    Some((name, value)) => (name, Some(value)),
                    None => (long, None),
                };
                let value = match inline {
                    Some(v) => Some(v),
                    None if LONG_WITH_ARG.contains(&name) => {
                        i += 1;
                        words.get(i - 1).copied()
                    }
                    None => None,
                };
                c.apply_long(name, value);
            } else if let Some(short) = word.strip_prefix('-').filter(|s| !s.is_empty()) {
                for (at, option) in short.char_indices() {
                    if SHORT_WITH_ARG.contains(option) {
                        let rest = short.get(at + option.len_utf8()..).unwrap_or_default();
                        let value = if rest.is_empty() {
                            i += 1;
                            words.get(i - 1).copied()
                        } else {
                            Some(rest)
                        };
                        c.apply_short(option, value);
                        break;
                    }
                    c.apply_short(option, None);
                }
            }
        }
        c
    }

    fn apply_short(&mut self, option: char, value: Option<&str>) {
        let long = match option {
            'd' => "distance",
            'h' => "histogram",
            'H' => "histofall",
            'i' => "interval",
            'p' => "priority",
            'N' => "nsecs",
            _ => return,
        };
        self.apply_long(long, value);
    }

    fn apply_long(&mut self, name: &str, value: Option<&str>) {
        // atoi: the leading digits.
        let number = || {
            value.and_then(|v| {
                let digits: String = v.chars().take_while(char::is_ascii_digit).collect();
                digits.parse::<u64>().ok()
            })
        };
        match name {
            "interval" => self.interval_us = number().filter(|&i| i > 0 && i <= 3_600_000_000),
            "distance" => self.distance_us = number().filter(|&d| d <= 3_600_000_000),
            "priority" => self.priority = number().and_then(|p| i32::try_from(p).ok()).filter(|p| *p <= 99),
            "policy" => self.policy = value.map(str::to_string),
            "histogram" | "histofall" => self.histogram = number().filter(|&h| h > 0),
            "nsecs" => self.nsecs = true,
            "priospread" => self.priospread = true,
            _ => {}
        }
    }
}

/// Interval, per-thread intervals, policy and priority from the command line, with
/// cyclictest's defaults for what it leaves out (listed as assumed).
fn apply_cmdline(cmdline: Option<&Cmdline>, with_histogram: bool, parsed: &mut ParsedSource) {
    let Some(c) = cmdline else {
        parsed.notes.push("no command line in the file: interval, policy and priority are not known".into());
        return;
    };
    let base = c.interval_us.unwrap_or_else(|| {
        parsed.assumed.push("interval 1000 µs: cyclictest's default (no -i in its command line)".into());
        DEFAULT_INTERVAL_US
    });
    parsed.interval_ns = base.checked_mul(1000);
    // Without -h each thread's interval is the previous one's plus -d (default 500 µs).
    if !with_histogram && parsed.series.len() > 1 {
        let distance = c.distance_us.unwrap_or_else(|| {
            parsed.assumed.push("distance 500 µs between the threads' intervals: cyclictest's default (no -d)".into());
            DEFAULT_DISTANCE_US
        });
        for (i, series) in parsed.series.iter_mut().enumerate() {
            series.interval_ns =
                (i as u64).checked_mul(distance).and_then(|d| d.checked_add(base)).and_then(|us| us.checked_mul(1000));
        }
    }
    let policy = match c.policy.as_deref() {
        Some("fifo") => Some(Policy::Fifo),
        Some("rr") => Some(Policy::Rr),
        Some(other @ ("other" | "normal" | "batch" | "idle")) => {
            if other == "batch" || other == "idle" {
                parsed.notes.push(format!("policy {other} is recorded as SCHED_OTHER"));
            }
            Some(Policy::Other)
        }
        _ => None,
    };
    match (c.priority, policy) {
        (Some(p), Some(Policy::Rr)) if p > 0 => (parsed.policy, parsed.priority) = (Some(Policy::Rr), Some(p)),
        // -p makes cyclictest use SCHED_FIFO unless --policy rr.
        (Some(p), _) if p > 0 => (parsed.policy, parsed.priority) = (Some(Policy::Fifo), Some(p)),
        (_, Some(Policy::Other)) | (Some(_), None) => (parsed.policy, parsed.priority) = (Some(Policy::Other), Some(0)),
        (None, None) => {
            parsed
                .assumed
                .push("policy SCHED_OTHER, priority 0: cyclictest's default (no -p in its command line)".into());
            (parsed.policy, parsed.priority) = (Some(Policy::Other), Some(0));
        }
        // --policy fifo/rr without -p: cyclictest picks priority threads+1.
        (_, Some(policy)) => {
            let default = parsed.series.len() as i32 + 1;
            parsed
                .assumed
                .push(format!("priority {default}: cyclictest's default for --policy without -p (threads + 1)"));
            (parsed.policy, parsed.priority) = (Some(policy), Some(default));
        }
    }
    if c.priospread {
        parsed.notes.push("--priospread: the threads ran at decreasing priorities from the one recorded".into());
    }
}

// ---------------------------------------------------------------------------------------
// Times: cyclictest writes RFC 2822 ("Sat, 21 Nov 2026 08:09:44 +0000"), run.json RFC 3339
// ---------------------------------------------------------------------------------------

/// cyclictest's `strftime("%a, %d %b %Y %H:%M:%S %z")`.
const CYCLICTEST_TIME: &str = "%a, %d %b %Y %H:%M:%S %z";

pub(crate) fn rfc2822_to_rfc3339(text: &str) -> Option<String> {
    chrono::DateTime::parse_from_rfc2822(text.trim()).ok().map(|t| t.to_rfc3339())
}

pub(crate) fn rfc2822_epoch(text: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc2822(text.trim()).ok().map(|t| t.timestamp())
}

/// A run.json time (RFC 3339) as cyclictest writes times, fractions of a second dropped.
pub(crate) fn rfc3339_to_cyclictest(text: &str) -> Option<String> {
    chrono::DateTime::parse_from_rfc3339(text.trim()).ok().map(|t| t.format(CYCLICTEST_TIME).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn getopt_reading_of_cyclictest_command_lines() {
        let c = Cmdline::parse("cyclictest -m -Sp90 -i200 -h400 -q --json=x.json");
        assert_eq!((c.interval_us, c.priority, c.histogram), (Some(200), Some(90), Some(400)));
        let c = Cmdline::parse("/usr/bin/cyclictest --interval 250 --priority=80 --histofall=30 -d 0 -N --policy rr");
        assert_eq!(c.program, "/usr/bin/cyclictest");
        assert_eq!((c.interval_us, c.priority, c.histogram, c.distance_us), (Some(250), Some(80), Some(30), Some(0)));
        assert_eq!(c.policy.as_deref(), Some("rr"));
        assert!(c.nsecs);
        // -t and -a take optional arguments: a separate number is not theirs to getopt.
        let c = Cmdline::parse("cyclictest -t 2 -a 1 -p 95 -h 20000");
        assert_eq!((c.priority, c.histogram), (Some(95), Some(20000)));
    }

    #[test]
    fn times_convert_both_ways() {
        assert_eq!(rfc2822_to_rfc3339("Sat, 21 Nov 2026 08:09:44 +0000").as_deref(), Some("2026-11-21T08:09:44+00:00"));
        assert_eq!(
            rfc3339_to_cyclictest("2024-02-29T23:59:59.123456789-05:30").as_deref(),
            Some("Thu, 29 Feb 2024 23:59:59 -0530")
        );
        assert_eq!(
            rfc3339_to_cyclictest("2026-11-21T08:09:44+00:00").as_deref(),
            Some("Sat, 21 Nov 2026 08:09:44 +0000")
        );
        assert_eq!(rfc2822_epoch("Thu, 01 Jan 1970 01:00:00 +0100"), Some(0));
        assert_eq!(rfc2822_to_rfc3339("Sat, 41 Nov 2026 08:09:44 +0000"), None);
    }

    #[test]
    fn escapes_before_status_lines_are_dropped() {
        assert_eq!(strip_escapes("\u{1b}[4Apolicy: fifo"), "policy: fifo");
        assert_eq!(strip_escapes("\u{1b}["), "");
        assert_eq!(strip_escapes("\u{1b}[12"), "");
    }
}
