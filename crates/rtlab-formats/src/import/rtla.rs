//! rtla `timerlat hist` and `osnoise hist` output -> [`ParsedSource`] (`timerlat top`
//! output has its own reader, `rtla_top`, beside this one).
//!
//! The layout, as `timerlat_print_stats()` / `osnoise_print_stats()` print it
//! (tools/tracing/rtla/src/timerlat_hist.c and osnoise_hist.c, rtla 6.1 to 6.16):
//!
//! ```text
//! # RTLA timerlat histogram
//! # Time unit is microseconds (us)          ("nanoseconds (ns)" with -n)
//! # Duration:   0 00:10:00                  ("%3d %02d:%02d:%02d": days h:m:s)
//! Index   IRQ-000   Thr-000   Usr-000   IRQ-001 ...
//! 0        276489         0         0    206089 ...   ("%-6d" bucket × -b, then "%9d ")
//! over:         0         0 ...                        (beyond the -E entries)
//! count:   600002    600002 ...
//! min:          0         1 ...                        ("-" when a column counted nothing)
//! avg:          0         5 ...                        (sum / count, truncated)
//! max:         16        36 ...
//! ALL:        IRQ       Thr       Usr                  (rtla 6.9+: the same over all CPUs)
//! count:  ...
//! ```
//!
//! Usr columns exist only with -u/-U; --no-irq / --no-thread drop a kind; CPUs that counted
//! nothing have no columns; all-zero rows are omitted unless --with-zeros. `osnoise hist`
//! has `CPU-000` columns instead (noise durations; its min/max are bucket lower bounds, as
//! rtla reads them from the kernel's histogram). The bucket size (-b) is not printed: it is
//! the greatest common divisor of the indices (1 unit when no index but 0 is printed).
//! The summary's min and max are exact; the ALL block repeats the per-CPU figures and is
//! only cross-checked, never imported twice.

use super::{
    clock_fields, pin_recorded_extremes, scaled, text_lines, unit_name, ImportError, ImportOptions, ParsedSource,
    Series, SeriesData, SourceFile, SourceHistogram,
};

pub const TIMERLAT_LAYOUT: &str = "rtla-timerlat-histogram";
pub const OSNOISE_LAYOUT: &str = "rtla-osnoise-histogram";

/// What the timerlat metrics are, for the notes of the hist and the top import.
pub(super) const TIMERLAT_METRICS_NOTE: &str = "timerlat.irq is the timer IRQ latency, timerlat.thread the thread \
     activation latency (it contains the IRQ latency), timerlat.user the return to user space (it contains both); all \
     from the same expected expiry";

/// osnoise's default period (-p): the histogram's samples are noise events within it.
const OSNOISE_DEFAULT_PERIOD_NS: u64 = 1_000_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tracer {
    Timerlat,
    Osnoise,
}

/// What one histogram column measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `IRQ-NNN`: timer IRQ latency.
    Irq,
    /// `Thr-NNN`: thread activation latency (contains the IRQ latency).
    Thread,
    /// `Usr-NNN`: return to user space (contains both).
    User,
    /// `CPU-NNN`: osnoise noise durations.
    Noise,
}

impl Kind {
    fn metric(self) -> &'static str {
        match self {
            Kind::Irq => "timerlat.irq",
            Kind::Thread => "timerlat.thread",
            Kind::User => "timerlat.user",
            Kind::Noise => "osnoise.noise",
        }
    }

    fn probe(self) -> &'static str {
        match self {
            Kind::Noise => "osnoise",
            _ => "timerlat",
        }
    }

    /// The name in the ALL block's header.
    fn all_name(self) -> &'static str {
        match self {
            Kind::Irq => "IRQ",
            Kind::Thread => "Thr",
            Kind::User => "Usr",
            Kind::Noise => "CPU",
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Column {
    kind: Kind,
    cpu: usize,
}

/// The summary rows of one block (per CPU or ALL): per column, None where rtla printed "-".
#[derive(Debug, Default)]
struct Summary {
    count: Option<(usize, Vec<Option<u64>>)>,
    min: Option<(usize, Vec<Option<u64>>)>,
    avg: Option<(usize, Vec<Option<f64>>)>,
    max: Option<(usize, Vec<Option<u64>>)>,
}

pub fn parse(files: &[SourceFile], options: &ImportOptions) -> Result<ParsedSource, ImportError> {
    let file = match files {
        [file] => file,
        [] => return Err(ImportError::whole("rtla", "no file given")),
        [_, second, ..] => {
            return Err(ImportError::whole(
                &second.path,
                "rtla prints one histogram per run: import each file on its own",
            ))
        }
    };
    let path = file.path.as_str();
    let lines = text_lines(file)?;
    reject_top_output(path, &lines)?;

    let Some(header_at) = lines.iter().position(|(_, l)| tracer_of_header(l).is_some()) else {
        return Err(ImportError::whole(
            path,
            "not an rtla histogram: no \"# RTLA timerlat histogram\" or \"# RTLA osnoise histogram\" line \
             (output printed with --no-header cannot be imported: without it the columns name no CPU)",
        ));
    };
    let mut parsed = ParsedSource::default();
    let skipped_before = lines[..header_at].iter().filter(|(_, l)| !l.trim().is_empty()).count();
    if skipped_before > 0 {
        parsed.notes.push(format!("{skipped_before} lines before the histogram's header were not read"));
    }
    let mut rest = lines[header_at..].iter().copied().peekable();
    let Some((_, header)) = rest.next() else {
        return Err(ImportError::whole(path, "no histogram header"));
    };
    let tracer = tracer_of_header(header).unwrap_or(Tracer::Timerlat);

    // "#" lines: unit and duration.
    let mut unit_ns: Option<u64> = None;
    while let Some(&(number, line)) = rest.peek() {
        let line = line.trim();
        if line.is_empty() {
            rest.next();
            continue;
        }
        let Some(comment) = line.strip_prefix('#') else { break };
        let comment = comment.trim();
        if let Some(unit) = comment.strip_prefix("Time unit is ") {
            unit_ns = Some(match unit {
                "microseconds (us)" => 1000,
                "nanoseconds (ns)" => 1,
                other => return Err(ImportError::at(path, number, format!("unknown time unit {other:?}"))),
            });
        } else if let Some(duration) = comment.strip_prefix("Duration:") {
            parsed.duration_s = Some(
                parse_duration(duration)
                    .ok_or_else(|| ImportError::at(path, number, format!("unreadable duration {duration:?}")))?,
            );
        } else if tracer_of_header(line).is_some() {
            return Err(second_histogram(path, number));
        }
        rest.next();
    }
    let unit_ns = match unit_ns {
        Some(unit) => unit,
        None => {
            let unit = options.unit.map_or(1000, |u| u.ns());
            parsed.assumed.push(format!(
                "values in {}: the header has no \"# Time unit\" line ({})",
                unit_name(unit),
                if options.unit.is_some() { "given with --unit" } else { "rtla's default" }
            ));
            parsed.unit_assumed = true;
            unit
        }
    };

    // The column header.
    let Some((columns_at, columns_line)) = rest.next() else {
        return Err(ImportError::whole(path, "the histogram ends after its header: the file is truncated"));
    };
    let columns = parse_columns(path, columns_at, columns_line, tracer)?;
    let width = columns.len();

    // Bucket rows, then "over:".
    let mut indices: Vec<u64> = Vec::new();
    let mut row_lines: Vec<usize> = Vec::new();
    let mut counts: Vec<Vec<u64>> = vec![Vec::new(); width];
    let mut overflows: Option<(usize, Vec<u64>)> = None;
    for (number, line) in rest.by_ref() {
        let mut tokens = line.split_whitespace();
        let Some(first) = tokens.next() else { continue };
        let values: Vec<&str> = tokens.collect();
        if first == "over:" {
            overflows = Some((number, counts_of(path, number, &values, width)?));
            break;
        }
        if tracer_of_header(line).is_some() {
            return Err(second_histogram(path, number));
        }
        let index: u64 = first.parse().map_err(|_| {
            ImportError::at(
                path,
                number,
                format!("expected a bucket row (index and {width} counts) or \"over:\", found {first:?}"),
            )
        })?;
        if indices.last().is_some_and(|&last| index <= last) {
            return Err(ImportError::at(
                path,
                number,
                format!("bucket index {index} does not follow the previous one"),
            ));
        }
        for (column, count) in counts.iter_mut().zip(counts_of(path, number, &values, width)?) {
            column.push(count);
        }
        indices.push(index);
        row_lines.push(number);
    }
    let Some((over_line, overflows)) = overflows else {
        return Err(ImportError::whole(path, "the histogram has no \"over:\" row: the file is truncated"));
    };

    // Summary rows (absent with --no-summary), then the ALL block (rtla 6.9+).
    let mut per_cpu = Summary::default();
    let mut all: Option<(usize, Vec<Kind>, Summary)> = None;
    let mut trailing: Vec<usize> = Vec::new();
    for (number, line) in rest {
        let mut tokens = line.split_whitespace();
        let Some(first) = tokens.next() else { continue };
        let values: Vec<&str> = tokens.collect();
        if !trailing.is_empty() {
            if tracer_of_header(line).is_some() {
                return Err(second_histogram(path, number));
            }
            trailing.push(number);
            continue;
        }
        if first == "ALL:" && tracer == Tracer::Timerlat && all.is_none() {
            let kinds = values.iter().map(|name| all_kind(path, number, name)).collect::<Result<Vec<_>, _>>()?;
            all = Some((number, kinds, Summary::default()));
            continue;
        }
        let (block, block_width) = match &mut all {
            Some((_, kinds, summary)) => (summary, kinds.len()),
            None => (&mut per_cpu, width),
        };
        let taken = match first {
            "count:" if block.count.is_none() => {
                block.count = Some((number, optional_values(path, number, &values, block_width, parse_count)?));
                true
            }
            "min:" if block.min.is_none() => {
                block.min = Some((number, optional_values(path, number, &values, block_width, parse_count)?));
                true
            }
            "avg:" if block.avg.is_none() => {
                block.avg = Some((number, optional_values(path, number, &values, block_width, parse_average)?));
                true
            }
            "max:" if block.max.is_none() => {
                block.max = Some((number, optional_values(path, number, &values, block_width, parse_count)?));
                true
            }
            _ => false,
        };
        if !taken {
            if tracer_of_header(line).is_some() {
                return Err(second_histogram(path, number));
            }
            if matches!(first, "count:" | "min:" | "avg:" | "max:" | "over:" | "ALL:") {
                return Err(ImportError::at(path, number, format!("unexpected second {first:?} row")));
            }
            trailing.push(number);
        }
    }
    if let Some(first) = trailing.first() {
        parsed.notes.push(format!(
            "{} lines after the histogram's summary were not read (from line {first}: rtla's stop message or \
             auto-analysis)",
            trailing.len()
        ));
    }

    // Bucket width: the gcd of the printed indices.
    let bucket_units = indices.iter().copied().filter(|&i| i > 0).fold(0u64, gcd);
    let bucket_units = if bucket_units == 0 {
        parsed.assumed.push(format!(
            "bucket width 1 {}: no bucket index but 0 is printed, so -b cannot be read from the Index column \
             (1 is rtla's default)",
            unit_name(unit_ns)
        ));
        1
    } else {
        parsed.notes.push(format!(
            "bucket width {bucket_units} {}: the greatest common divisor of the Index column (rtla does not print -b)",
            unit_name(unit_ns)
        ));
        bucket_units
    };
    let width_ns = bucket_units
        .checked_mul(unit_ns)
        .filter(|&w| w <= super::MAX_VALUE_NS as u64)
        .ok_or_else(|| ImportError::at(path, columns_at, "bucket width out of range"))?;
    let to_ns = |value: u64, line: usize| -> Result<i64, ImportError> {
        i64::try_from(value)
            .ok()
            .and_then(|v| scaled(v, unit_ns))
            .ok_or_else(|| ImportError::at(path, line, format!("value {value} is out of range")))
    };
    // Samples beyond the last entry are at least one bucket past the last printed index
    // (exactly there with --with-zeros, where every entry is printed).
    let overflow_from_ns = match indices.last() {
        Some(&last) => to_ns(last.saturating_add(bucket_units), over_line)?,
        None => 0,
    };

    for (column_index, column) in columns.iter().enumerate() {
        let pick = |row: &Option<(usize, Vec<Option<u64>>)>| {
            row.as_ref().map(|(line, values)| (*line, values.get(column_index).copied().flatten()))
        };
        let over = overflows.get(column_index).copied().unwrap_or(0);
        let column_counts = counts.get(column_index).map(Vec::as_slice).unwrap_or(&[]);
        let mut buckets = Vec::new();
        let mut total: u64 = over;
        for ((&index, &count), &line) in indices.iter().zip(column_counts).zip(&row_lines) {
            total = total
                .checked_add(count)
                .filter(|&t| t <= super::MAX_TOTAL_COUNT)
                .ok_or_else(|| ImportError::at(path, line, format!("{}: too many samples", column_name(column))))?;
            if count > 0 {
                buckets.push((to_ns(index, line)?, count));
            }
        }
        let count_row = pick(&per_cpu.count);
        if let Some((line, Some(count))) = count_row {
            if count != total {
                return Err(ImportError::at(
                    path,
                    line,
                    format!("{}: count {count}, but its buckets and over: hold {total}", column_name(column)),
                ));
            }
        }
        if total == 0 {
            parsed.notes.push(format!("{}: no samples (left out)", column_name(column)));
            continue;
        }
        let min = match pick(&per_cpu.min) {
            Some((line, Some(v))) => Some((line, to_ns(v, line)?)),
            _ => None,
        };
        let max = match pick(&per_cpu.max) {
            Some((line, Some(v))) => Some((line, to_ns(v, line)?)),
            _ => None,
        };
        if let (Some((line, min)), Some((_, max))) = (min, max) {
            if min > max {
                return Err(ImportError::at(
                    path,
                    line,
                    format!("{}: min {min} ns above max {max} ns", column_name(column)),
                ));
            }
        }
        let avg_ns = per_cpu
            .avg
            .as_ref()
            .and_then(|(_, values)| values.get(column_index).copied().flatten())
            .map(|avg| avg * unit_ns as f64);
        let mut histogram = SourceHistogram {
            width_ns,
            buckets,
            overflows: over,
            overflow_from_ns,
            min_ns: min.map(|(_, v)| v),
            max_ns: max.map(|(_, v)| v),
            count: Some(total),
            avg_ns,
        };
        pin_recorded_extremes(&mut histogram).map_err(|why| {
            let line = min.or(max).map_or(over_line, |(line, _)| line);
            ImportError::at(path, line, format!("{}: {why}", column_name(column)))
        })?;
        parsed.series.push(Series::new(
            column.kind.probe(),
            column.kind.metric(),
            Some(column.cpu),
            format!("cpu{:03}", column.cpu),
            SeriesData::Histogram(histogram),
        ));
    }
    if let Some((line, kinds, summary)) = &all {
        check_all_block(path, *line, kinds, summary, &columns, &per_cpu)?;
    }

    parsed.layouts = vec![match tracer {
        Tracer::Timerlat => TIMERLAT_LAYOUT.to_string(),
        Tracer::Osnoise => OSNOISE_LAYOUT.to_string(),
    }];
    parsed.source_tool = Some(match tracer {
        Tracer::Timerlat => "rtla timerlat hist".to_string(),
        Tracer::Osnoise => "rtla osnoise hist".to_string(),
    });
    parsed.resolution_ns = unit_ns;
    match tracer {
        Tracer::Timerlat => parsed.notes.push(TIMERLAT_METRICS_NOTE.to_string()),
        Tracer::Osnoise => {
            parsed.notes.push(
                "osnoise.noise holds the duration of each noise event (osnoise:sample_threshold); rtla takes min and \
                 max from the kernel's histogram, so they are the lower bounds of their buckets"
                    .to_string(),
            );
            if options.interval_ns.is_none() {
                parsed.interval_ns = Some(OSNOISE_DEFAULT_PERIOD_NS);
                parsed.assumed.push(
                    "interval 1 s: osnoise's default period (-p), which the histogram does not record; its samples \
                     are noise events within each period, not one per period"
                        .to_string(),
                );
            }
        }
    }
    if parsed.series.is_empty() {
        return Err(ImportError::at(path, columns_at, "no column holds any sample"));
    }
    Ok(parsed)
}

/// `rtla osnoise top` prints a table of per-CPU noise summaries: no distribution of noise
/// durations to import (`timerlat top` is imported by `rtla_top`).
/// Whether `lines` carry rtla's "# RTLA timerlat histogram" or "# RTLA osnoise histogram" header.
pub fn has_histogram_header(lines: &[(usize, &str)]) -> bool {
    lines.iter().any(|(_, l)| tracer_of_header(l).is_some())
}

fn reject_top_output(path: &str, lines: &[(usize, &str)]) -> Result<(), ImportError> {
    for &(number, line) in lines {
        if tracer_of_header(line).is_some() {
            return Ok(());
        }
        if line.contains("CPU Aval") || line.contains("Max Single") {
            return Err(ImportError::at(
                path,
                number,
                "this is `rtla osnoise top` output, a table of per-CPU noise totals, not a histogram of noise \
                 durations: import the output of `rtla osnoise hist` instead",
            ));
        }
    }
    Ok(())
}

fn tracer_of_header(line: &str) -> Option<Tracer> {
    match line.trim() {
        "# RTLA timerlat histogram" => Some(Tracer::Timerlat),
        "# RTLA osnoise histogram" => Some(Tracer::Osnoise),
        _ => None,
    }
}

fn second_histogram(path: &str, line: usize) -> ImportError {
    ImportError::at(path, line, "a second histogram starts here: import each run's output on its own")
}

/// `Index   IRQ-000   Thr-000 ...` -> the columns.
fn parse_columns(path: &str, number: usize, line: &str, tracer: Tracer) -> Result<Vec<Column>, ImportError> {
    let mut tokens = line.split_whitespace();
    match tokens.next() {
        Some("Index") => {}
        Some(first) if first.contains('-') => {
            return Err(ImportError::at(
                path,
                number,
                "the rows have no bucket index (printed with --no-index): rtlab cannot tell the buckets from the \
                 summary rows",
            ))
        }
        _ => return Err(ImportError::at(path, number, "expected the column header \"Index  IRQ-000 ...\"")),
    }
    let mut columns: Vec<Column> = Vec::new();
    for name in tokens {
        let (prefix, cpu) = name
            .split_once('-')
            .and_then(|(prefix, cpu)| Some((prefix, cpu.parse::<usize>().ok().filter(|&c| c < 1 << 20)?)))
            .ok_or_else(|| ImportError::at(path, number, format!("{name:?} is not a column name like IRQ-000")))?;
        let kind = match (tracer, prefix) {
            (Tracer::Timerlat, "IRQ") => Kind::Irq,
            (Tracer::Timerlat, "Thr") => Kind::Thread,
            (Tracer::Timerlat, "Usr") => Kind::User,
            (Tracer::Osnoise, "CPU") => Kind::Noise,
            _ => {
                return Err(ImportError::at(
                    path,
                    number,
                    format!("{name:?} is not a column of an rtla {} histogram", tracer_name(tracer)),
                ))
            }
        };
        if columns.iter().any(|c| c.kind == kind && c.cpu == cpu) {
            return Err(ImportError::at(path, number, format!("column {name} appears twice")));
        }
        columns.push(Column { kind, cpu });
    }
    if columns.is_empty() {
        return Err(ImportError::at(path, number, "no CPU column: rtla recorded no sample"));
    }
    Ok(columns)
}

fn tracer_name(tracer: Tracer) -> &'static str {
    match tracer {
        Tracer::Timerlat => "timerlat",
        Tracer::Osnoise => "osnoise",
    }
}

fn column_name(column: &Column) -> String {
    format!("{}-{:03}", column.kind.all_name(), column.cpu)
}

fn all_kind(path: &str, line: usize, name: &str) -> Result<Kind, ImportError> {
    match name {
        "IRQ" => Ok(Kind::Irq),
        "Thr" => Ok(Kind::Thread),
        "Usr" => Ok(Kind::User),
        _ => Err(ImportError::at(path, line, format!("{name:?} is not a column of the ALL block"))),
    }
}

/// A row must have as many values as the header has columns.
fn check_width(path: &str, line: usize, values: &[&str], width: usize) -> Result<(), ImportError> {
    if values.len() != width {
        return Err(ImportError::at(
            path,
            line,
            format!("{} values where the header names {width} columns", values.len()),
        ));
    }
    Ok(())
}

/// Exactly `width` counts (rtla prints them with "%9d": a negative one is an int that wrapped).
fn counts_of(path: &str, line: usize, values: &[&str], width: usize) -> Result<Vec<u64>, ImportError> {
    check_width(path, line, values, width)?;
    values
        .iter()
        .map(|v| parse_count(v).ok_or_else(|| ImportError::at(path, line, format!("{v:?} is not a count"))))
        .collect()
}

fn optional_values<T>(
    path: &str,
    line: usize,
    values: &[&str],
    width: usize,
    parse_one: fn(&str) -> Option<T>,
) -> Result<Vec<Option<T>>, ImportError> {
    check_width(path, line, values, width)?;
    values
        .iter()
        .map(|&v| match v {
            "-" => Ok(None),
            _ => parse_one(v).map(Some).ok_or_else(|| ImportError::at(path, line, format!("{v:?} is not a number"))),
        })
        .collect()
}

fn parse_count(text: &str) -> Option<u64> {
    if text.starts_with('+') {
        return None;
    }
    text.parse().ok()
}

fn parse_average(text: &str) -> Option<f64> {
    let value: f64 = text.parse().ok()?;
    (value.is_finite() && value >= 0.0 && !text.starts_with('+')).then_some(value)
}

/// "  0 00:10:00" (days, then h:m:s) -> seconds; also the header of `timerlat top`.
pub(super) fn parse_duration(text: &str) -> Option<f64> {
    let mut parts = text.split_whitespace();
    let (days, clock) = match (parts.next(), parts.next(), parts.next()) {
        (Some(days), Some(clock), None) => (days.parse::<u64>().ok()?, clock),
        (Some(clock), None, None) => (0, clock),
        _ => return None,
    };
    let (h, m, s) = clock_fields(clock)?;
    if days > 1_000_000 || h > 1_000_000 {
        return None;
    }
    Some(((days * 24 + h) * 3600 + m * 60 + s) as f64)
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The ALL block (rtla 6.9+) must repeat the per-CPU figures: counts add up, min and max
/// are the extremes over the CPUs.
fn check_all_block(
    path: &str,
    all_line: usize,
    kinds: &[Kind],
    all: &Summary,
    columns: &[Column],
    per_cpu: &Summary,
) -> Result<(), ImportError> {
    for (all_index, &kind) in kinds.iter().enumerate() {
        let of_kind = |row: &Option<(usize, Vec<Option<u64>>)>| -> Vec<u64> {
            row.as_ref()
                .map(|(_, values)| {
                    columns.iter().zip(values).filter(|(c, _)| c.kind == kind).filter_map(|(_, v)| *v).collect()
                })
                .unwrap_or_default()
        };
        let stated = |row: &Option<(usize, Vec<Option<u64>>)>| {
            row.as_ref().and_then(|(line, values)| Some((*line, values.get(all_index).copied().flatten()?)))
        };
        let name = kind.all_name();
        // Each ALL row against the same row over the CPUs: (stated, per CPU, combined, what).
        type Combine = fn(&[u64]) -> Option<u64>;
        let rows: [(_, _, Combine, &str); 3] = [
            (
                &all.count,
                &per_cpu.count,
                |v| v.iter().try_fold(0u64, |a, &c| a.checked_add(c)),
                "the sum of the per-CPU counts",
            ),
            (&all.min, &per_cpu.min, |v| v.iter().copied().min(), "the smallest per-CPU min"),
            (&all.max, &per_cpu.max, |v| v.iter().copied().max(), "the largest per-CPU max"),
        ];
        for ((all_row, cpu_row, combine, what), row_name) in rows.into_iter().zip(["count", "min", "max"]) {
            if let (Some((line, stated_value)), Some(_)) = (stated(all_row), cpu_row) {
                let combined = combine(&of_kind(cpu_row));
                if combined != Some(stated_value) {
                    let shown = if row_name == "count" { format!(" ({combined:?})") } else { String::new() };
                    return Err(ImportError::at(
                        path,
                        line,
                        format!("ALL {name} {row_name} {stated_value} is not {what}{shown}"),
                    ));
                }
            }
        }
    }
    if kinds.iter().any(|k| !columns.iter().any(|c| c.kind == *k)) && per_cpu.count.is_some() {
        return Err(ImportError::at(
            path,
            all_line,
            "the ALL block names a kind of column the histogram does not have",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn histogram(buckets: Vec<(i64, u64)>, overflows: u64, min: Option<i64>, max: Option<i64>) -> SourceHistogram {
        SourceHistogram {
            width_ns: 10_000,
            buckets,
            overflows,
            overflow_from_ns: 100_000,
            min_ns: min,
            max_ns: max,
            count: None,
            avg_ns: None,
        }
    }

    #[test]
    fn the_min_raises_its_bucket_and_the_max_takes_one_sample() {
        let mut h = histogram(vec![(0, 3), (20_000, 2)], 0, Some(4_000), Some(27_000));
        pin_recorded_extremes(&mut h).unwrap();
        assert_eq!(h.buckets, vec![(4_000, 3), (20_000, 1), (27_000, 1)]);
    }

    #[test]
    fn a_single_sample_is_both_extremes() {
        let mut h = histogram(vec![(20_000, 1)], 0, Some(23_000), Some(23_000));
        pin_recorded_extremes(&mut h).unwrap();
        assert_eq!(h.buckets, vec![(23_000, 0), (23_000, 1)]);
        let mut h = histogram(vec![(20_000, 1)], 0, Some(21_000), Some(23_000));
        assert!(pin_recorded_extremes(&mut h).is_err());
    }

    #[test]
    fn contradicting_extremes_are_errors() {
        assert!(pin_recorded_extremes(&mut histogram(vec![(0, 3), (20_000, 2)], 0, Some(24_000), None)).is_err());
        assert!(pin_recorded_extremes(&mut histogram(vec![(0, 3)], 0, None, Some(55_000))).is_err());
        assert!(pin_recorded_extremes(&mut histogram(vec![(0, 3)], 2, None, Some(55_000))).is_err());
    }

    #[test]
    fn when_everything_overflowed_all_overflows_are_at_least_the_min() {
        let mut h = histogram(vec![], 3, Some(150_000), Some(900_000));
        pin_recorded_extremes(&mut h).unwrap();
        assert_eq!((h.overflows, h.overflow_from_ns), (3, 150_000));
    }

    #[test]
    fn durations_read_days_and_clock() {
        assert_eq!(parse_duration("  0 00:10:00"), Some(600.0));
        assert_eq!(parse_duration("  1 01:00:05"), Some(90_005.0));
        assert_eq!(parse_duration("0 00:61:00"), None);
    }
}
