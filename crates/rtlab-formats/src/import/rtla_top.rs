//! rtla `timerlat top` output -> [`ParsedSource`]: per CPU and context, the count, min,
//! average and max, with no distribution.
//!
//! The layout, as `timerlat_top_header()` / `timerlat_top_print()` print it
//! (tools/tracing/rtla/src/timerlat_top.c, rtla 6.1 to 6.16):
//!
//! ```text
//!                                      Timer Latency
//!   0 00:00:10   |          IRQ Timer Latency (us)        |         Thread Timer Latency (us)
//! CPU COUNT      |      cur       min       avg       max |      cur       min       avg       max
//!   0 #10003     |        6         2         4        43 |       10         4         7        50
//! ---------------|----------------------------------------|---------------------------------------
//! ALL #20006  e0 |                  2         4        43 |                 4         7        50
//! ```
//!
//! `(ns)` with -n; a third block `Ret user Timer Latency` with -u/-U; "-" for a context that
//! counted nothing; the ALL summary from rtla 6.9 on (its count scaled by 10^e). Without -q
//! the table is refreshed in place every second (each refresh after an `ESC c`), and
//! `--no-color`-less terminals get colour escapes: the last complete table is imported.
//!
//! COUNT is the IRQ's count; the thread's and the user's are not printed (they differ from it
//! by the activation in flight at the end). The averages are truncated to whole units.
//!
//! Without a distribution every sample is censored at the min: count, min, mean and max are
//! exact, every percentile is only known to be at least the min (and at most the max).

use super::{
    pin_recorded_extremes, scaled, text_lines, unit_name, ImportError, ParsedSource, Series, SeriesData, SourceFile,
    SourceHistogram,
};

pub const TIMERLAT_TOP_LAYOUT: &str = "rtla-timerlat-top";

/// The contexts of a table, in its column order.
const CONTEXTS: [(&str, &str); 3] = [
    ("IRQ Timer Latency", "timerlat.irq"),
    ("Thread Timer Latency", "timerlat.thread"),
    ("Ret user Timer Latency", "timerlat.user"),
];

/// One context's figures on one CPU, in the file's unit.
#[derive(Debug, Clone, Copy)]
struct Figures {
    min: u64,
    avg: u64,
    max: u64,
}

/// One CPU's row.
#[derive(Debug)]
struct CpuRow {
    line: usize,
    cpu: usize,
    count: u64,
    /// Per context of the header: None where rtla printed "-".
    contexts: Vec<Option<Figures>>,
}

/// Whether `lines` look like `rtla timerlat top` output (its title or column header).
pub fn is_timerlat_top(lines: &[(usize, &str)]) -> bool {
    lines.iter().any(|(_, l)| {
        let l = strip_escapes(l);
        l.contains("IRQ Timer Latency (") || l.trim_start().starts_with("CPU COUNT")
    })
}

pub fn parse(file: &SourceFile) -> Result<ParsedSource, ImportError> {
    let path = file.path.as_str();
    let lines: Vec<(usize, String)> = text_lines(file)?.into_iter().map(|(n, l)| (n, strip_escapes(l))).collect();
    // The last table: the last context header line ("... | IRQ Timer Latency (us) | ...").
    let tables: Vec<usize> =
        lines.iter().enumerate().filter(|(_, (_, l))| l.contains("IRQ Timer Latency (")).map(|(i, _)| i).collect();
    let Some(&start) = tables.last() else {
        return Err(ImportError::whole(
            path,
            "not `rtla timerlat top` output: no \"IRQ Timer Latency (us)\" header line",
        ));
    };
    let mut parsed = ParsedSource::default();
    if tables.len() > 1 {
        parsed.notes.push(format!(
            "{} tables: rtla refreshed its summary {} times; the last one (line {}) covers the whole run and is \
             the one imported",
            tables.len(),
            tables.len() - 1,
            lines[start].0
        ));
    }
    let (header_line, header) = (lines[start].0, lines[start].1.as_str());

    // "  0 00:00:10   |   IRQ Timer Latency (us)   |   Thread Timer Latency (us) [| Ret user ...]"
    let mut fields = header.split('|');
    let duration = fields.next().unwrap_or_default();
    parsed.duration_s = Some(
        super::rtla::parse_duration(duration)
            .ok_or_else(|| ImportError::at(path, header_line, format!("unreadable duration {:?}", duration.trim())))?,
    );
    let mut metrics: Vec<&'static str> = Vec::new();
    let mut unit_ns: Option<u64> = None;
    for field in fields {
        let field = field.trim();
        let Some(&(name, metric)) = CONTEXTS.iter().find(|(name, _)| field.starts_with(name)) else {
            return Err(ImportError::at(path, header_line, format!("{field:?} is not a timerlat top column group")));
        };
        if metrics.contains(&metric) {
            return Err(ImportError::at(path, header_line, format!("{name} appears twice")));
        }
        let unit = match field[name.len()..].trim() {
            "(us)" => 1000,
            "(ns)" => 1,
            other => return Err(ImportError::at(path, header_line, format!("unknown time unit {other:?}"))),
        };
        if unit_ns.is_some_and(|u| u != unit) {
            return Err(ImportError::at(path, header_line, "the column groups are in different units"));
        }
        unit_ns = Some(unit);
        metrics.push(metric);
    }
    let (Some(unit_ns), Some(&"timerlat.irq")) = (unit_ns, metrics.first()) else {
        return Err(ImportError::at(path, header_line, "expected the IRQ Timer Latency group first"));
    };

    // "CPU COUNT      |      cur       min       avg       max | ..."
    let mut rest = lines[start + 1..].iter();
    let Some((columns_line, columns)) = rest.next() else {
        return Err(ImportError::whole(path, "the table ends after its header: the file is truncated"));
    };
    let groups: Vec<&str> = columns.split('|').map(str::trim).collect();
    let expected_groups = std::iter::once("CPU COUNT").chain(std::iter::repeat_n("cur min avg max", metrics.len()));
    let normalized: Vec<String> = groups.iter().map(|g| g.split_whitespace().collect::<Vec<_>>().join(" ")).collect();
    if !normalized.iter().map(String::as_str).eq(expected_groups) {
        return Err(ImportError::at(
            path,
            *columns_line,
            format!(
                "expected \"CPU COUNT | cur min avg max\" for {} column groups, found {:?}",
                metrics.len(),
                columns.trim()
            ),
        ));
    }

    // CPU rows, then the optional ALL summary; anything else ends the table.
    let mut rows: Vec<CpuRow> = Vec::new();
    let mut all: Option<(usize, Vec<Option<Figures>>)> = None;
    let mut trailing: Vec<usize> = Vec::new();
    for (number, line) in rest {
        let number = *number;
        if line.trim().is_empty() {
            continue;
        }
        if !trailing.is_empty() {
            trailing.push(number);
            continue;
        }
        if all.is_none() && line.trim_start().starts_with("---") && line.contains('|') {
            continue;
        }
        let groups: Vec<&str> = line.split('|').collect();
        let first = groups.first().map_or("", |g| g.trim());
        // "ALL #20006  e0": its count is scaled by 10^e, so only the figures are checked.
        if first.starts_with("ALL") {
            if all.is_some() {
                return Err(ImportError::at(path, number, "a second ALL row"));
            }
            all = Some((number, figures_of(path, number, &groups[1..], &metrics, true)?));
            continue;
        }
        let mut head = first.split_whitespace();
        let (Some(cpu), Some(count), None) = (head.next(), head.next(), head.next()) else {
            trailing.push(number);
            continue;
        };
        let (Ok(cpu), Some(Ok(count))) = (cpu.parse::<usize>(), count.strip_prefix('#').map(str::parse::<u64>)) else {
            trailing.push(number);
            continue;
        };
        if all.is_some() {
            return Err(ImportError::at(path, number, "a CPU row after the ALL row"));
        }
        if cpu >= 1 << 20 {
            return Err(ImportError::at(path, number, format!("CPU {cpu} is out of range")));
        }
        if rows.iter().any(|r| r.cpu == cpu) {
            return Err(ImportError::at(path, number, format!("CPU {cpu} appears twice")));
        }
        let contexts = figures_of(path, number, &groups[1..], &metrics, false)?;
        rows.push(CpuRow { line: number, cpu, count, contexts });
    }
    if let Some(first) = trailing.first() {
        parsed.notes.push(format!(
            "{} lines after the table were not read (from line {first}: rtla's stop message, missed events or \
             auto-analysis)",
            trailing.len()
        ));
    }
    if rows.is_empty() {
        return Err(ImportError::at(path, *columns_line, "no CPU row: rtla recorded no activation"));
    }
    if let Some((line, figures)) = &all {
        check_all_row(path, *line, figures, &rows)?;
    }

    let to_ns = |value: u64, line: usize| -> Result<i64, ImportError> {
        i64::try_from(value)
            .ok()
            .and_then(|v| scaled(v, unit_ns))
            .ok_or_else(|| ImportError::at(path, line, format!("value {value} is out of range")))
    };
    for row in &rows {
        for (metric, figures) in metrics.iter().zip(&row.contexts) {
            let Some(f) = figures else { continue };
            if row.count == 0 {
                return Err(ImportError::at(
                    path,
                    row.line,
                    format!("CPU {}: {metric} has figures but COUNT is 0", row.cpu),
                ));
            }
            if !(f.min <= f.avg && f.avg <= f.max) {
                return Err(ImportError::at(
                    path,
                    row.line,
                    format!("CPU {}: {metric} min {} avg {} max {} are out of order", row.cpu, f.min, f.avg, f.max),
                ));
            }
            let (min, max) = (to_ns(f.min, row.line)?, to_ns(f.max, row.line)?);
            let mut histogram = SourceHistogram {
                width_ns: unit_ns,
                buckets: Vec::new(),
                overflows: row.count,
                overflow_from_ns: min,
                min_ns: Some(min),
                max_ns: Some(max),
                count: Some(row.count),
                avg_ns: Some((f.avg * unit_ns) as f64),
            };
            pin_recorded_extremes(&mut histogram)
                .map_err(|why| ImportError::at(path, row.line, format!("CPU {}: {metric}: {why}", row.cpu)))?;
            parsed.series.push(Series::new(
                "timerlat",
                metric,
                Some(row.cpu),
                format!("cpu{:03}", row.cpu),
                SeriesData::Histogram(histogram),
            ));
        }
    }
    if parsed.series.is_empty() {
        return Err(ImportError::at(path, *columns_line, "no CPU row holds any figure"));
    }
    if metrics.len() > 1 {
        parsed.assumed.push(
            "the thread's (and user's) sample count is the CPU's COUNT, the IRQ's: rtla top prints no other; they \
             differ by at most the activation in flight when rtla stopped"
                .to_string(),
        );
    }
    parsed.notes.push(format!(
        "rtla timerlat top keeps no distribution, only count, min, average and max per CPU: those are exact (the \
         average truncated to whole {}), and every percentile lies between the min and the max, shown as at least \
         the min",
        unit_name(unit_ns)
    ));
    parsed.notes.push(super::rtla::TIMERLAT_METRICS_NOTE.to_string());
    parsed.layouts = vec![TIMERLAT_TOP_LAYOUT.to_string()];
    parsed.source_tool = Some("rtla timerlat top".to_string());
    parsed.resolution_ns = unit_ns;
    Ok(parsed)
}

/// The groups after "CPU #COUNT" (or "ALL #COUNT eE"): per context "cur min avg max", or in
/// the ALL row "min avg max"; "-" for each when the context counted nothing.
fn figures_of(
    path: &str,
    line: usize,
    groups: &[&str],
    metrics: &[&str],
    all_row: bool,
) -> Result<Vec<Option<Figures>>, ImportError> {
    if groups.len() != metrics.len() {
        return Err(ImportError::at(
            path,
            line,
            format!("{} column groups where the header names {}", groups.len(), metrics.len()),
        ));
    }
    let width = if all_row { 3 } else { 4 };
    metrics
        .iter()
        .zip(groups)
        .map(|(metric, group)| {
            let values: Vec<&str> = group.split_whitespace().collect();
            if values.iter().all(|v| *v == "-") && !values.is_empty() {
                return Ok(None);
            }
            if values.len() != width {
                return Err(ImportError::at(
                    path,
                    line,
                    format!("{metric}: {} values where {width} are printed", values.len()),
                ));
            }
            let numbers = values
                .iter()
                .map(|v| v.parse::<u64>().map_err(|_| ImportError::at(path, line, format!("{v:?} is not a value"))))
                .collect::<Result<Vec<u64>, _>>()?;
            let figures = &numbers[width - 3..];
            Ok(Some(Figures { min: figures[0], avg: figures[1], max: figures[2] }))
        })
        .collect()
}

/// The ALL row repeats the CPUs' min and max; it is checked, never imported.
fn check_all_row(path: &str, line: usize, all: &[Option<Figures>], rows: &[CpuRow]) -> Result<(), ImportError> {
    for (index, figures) in all.iter().enumerate() {
        let per_cpu: Vec<Figures> = rows.iter().filter_map(|r| r.contexts.get(index).copied().flatten()).collect();
        match (figures, per_cpu.is_empty()) {
            (None, true) => {}
            (Some(f), false) => {
                let min = per_cpu.iter().map(|c| c.min).min().unwrap_or(f.min);
                let max = per_cpu.iter().map(|c| c.max).max().unwrap_or(f.max);
                if (f.min, f.max) != (min, max) {
                    return Err(ImportError::at(
                        path,
                        line,
                        format!("the ALL row's min {} and max {} are not the CPUs' ({min} and {max})", f.min, f.max),
                    ));
                }
            }
            _ => {
                return Err(ImportError::at(
                    path,
                    line,
                    "the ALL row and the CPU rows disagree on which contexts counted",
                ))
            }
        }
    }
    Ok(())
}

/// Removes terminal escapes: colours (`ESC [ ... m`) and the screen clear (`ESC c`).
fn strip_escapes(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        if chars.next() == Some('[') {
            // Parameters and intermediates up to the final byte (@ to ~).
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> SourceFile {
        SourceFile { path: "top.txt".into(), bytes: text.as_bytes().to_vec() }
    }

    /// What Debian's rtla 6.1 printed in the PREEMPT_RT guest (`rtla timerlat top -d 5s -q`).
    const RTLA_6_1: &str = "\u{1b}[2;37;40m                                     Timer Latency                                              \u{1b}[0;0;0m\n  0 00:00:06   |          IRQ Timer Latency (us)        |         Thread Timer Latency (us)\n\u{1b}[2;30;47mCPU COUNT      |      cur       min       avg       max |      cur       min       avg       max\u{1b}[0;0;0m\n  0 #4262      |      332        33       383      6943 |      389       112       544     10854\n  1 #4421      |      115         6       340     10571 |      233        56       441     10884\n";

    #[test]
    fn imports_every_cpu_and_context_with_exact_figures() {
        let parsed = parse(&file(RTLA_6_1)).unwrap();
        assert_eq!(parsed.duration_s, Some(6.0));
        assert_eq!(parsed.resolution_ns, 1000);
        assert_eq!(parsed.layouts, [TIMERLAT_TOP_LAYOUT]);
        type Row = (String, Option<usize>, u64, Option<i64>, Option<i64>, Option<f64>);
        let found: Vec<Row> = parsed
            .series
            .iter()
            .map(|s| match &s.data {
                SeriesData::Histogram(h) => (s.metric.clone(), s.cpu, h.overflows, h.min_ns, h.max_ns, h.avg_ns),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            found,
            [
                ("timerlat.irq".to_string(), Some(0), 4262, Some(33_000), Some(6_943_000), Some(383_000.0)),
                ("timerlat.thread".to_string(), Some(0), 4262, Some(112_000), Some(10_854_000), Some(544_000.0)),
                ("timerlat.irq".to_string(), Some(1), 4421, Some(6_000), Some(10_571_000), Some(340_000.0)),
                ("timerlat.thread".to_string(), Some(1), 4421, Some(56_000), Some(10_884_000), Some(441_000.0)),
            ]
        );
        // No bucket: every sample is censored at the min.
        for s in &parsed.series {
            let SeriesData::Histogram(h) = &s.data else { unreachable!() };
            assert_eq!(Some(h.overflow_from_ns), h.min_ns);
            assert!(h.buckets.is_empty());
        }
    }

    #[test]
    fn takes_the_last_of_refreshed_tables_and_checks_the_all_row() {
        let table = |count: u64, max: u64| {
            format!(
                "\u{1b}c                                     Timer Latency\n  0 00:00:0{count}   |          IRQ Timer Latency (ns)        |         Thread Timer Latency (ns)      |    Ret user Timer Latency (ns)\nCPU COUNT      |      cur       min       avg       max |      cur       min       avg       max |      cur       min       avg       max\n  3 #{count}          |      10        5         7       {max} |       20        9        12        30 |        -         -         -         -\n---------------|----------------------------------------|----------------------------------------|---------------------------------------\nALL #{count}      e0 |                  5         7       {max} |                 9        12        30 |                 -         -         -\n"
            )
        };
        let text = format!("{}{}", table(1, 80), table(2, 90));
        let parsed = parse(&file(&text)).unwrap();
        assert_eq!(parsed.duration_s, Some(2.0));
        assert_eq!(parsed.resolution_ns, 1);
        assert_eq!(parsed.series.len(), 2, "the user context counted nothing");
        let SeriesData::Histogram(h) = &parsed.series[0].data else { unreachable!() };
        assert_eq!((h.count, h.max_ns), (Some(2), Some(90)));
        assert!(parsed.notes.iter().any(|n| n.contains("2 tables")), "{:?}", parsed.notes);

        let wrong_all = text.replace(
            "ALL #2      e0 |                  5         7       90",
            "ALL #2      e0 |                  5         7       91",
        );
        let e = parse(&file(&wrong_all)).unwrap_err().to_string();
        assert!(e.contains("ALL row's min 5 and max 91"), "{e}");
    }

    #[test]
    fn refuses_what_is_not_a_well_formed_table() {
        let cases = [
            ("Timer Latency\n", "no \"IRQ Timer Latency (us)\" header"),
            (
                "  0 00:00:06   |          IRQ Timer Latency (ms)        |         Thread Timer Latency (us)\n",
                "unknown time unit",
            ),
            (
                "  0 00:00:06   |          IRQ Timer Latency (us)        |         Thread Timer Latency (us)\nCPU COUNT | cur min avg max\n",
                "expected \"CPU COUNT | cur min avg max\" for 2 column groups",
            ),
            (
                "  0 00:00:06   |          IRQ Timer Latency (us)        |         Thread Timer Latency (us)\nCPU COUNT      |      cur       min       avg       max |      cur       min       avg       max\n  0 #5  |  1 2 3 4 | 1 2 3 4\n  0 #5  |  1 2 3 4 | 1 2 3 4\n",
                "CPU 0 appears twice",
            ),
            (
                "  0 00:00:06   |          IRQ Timer Latency (us)        |         Thread Timer Latency (us)\nCPU COUNT      |      cur       min       avg       max |      cur       min       avg       max\n  0 #5  |  1 2 9 4 | 1 2 3 4\n",
                "min 2 avg 9 max 4 are out of order",
            ),
            (
                "  0 00:00:06   |          IRQ Timer Latency (us)        |         Thread Timer Latency (us)\nCPU COUNT      |      cur       min       avg       max |      cur       min       avg       max\n  0 #5  |  1 2 3 | 1 2 3 4\n",
                "3 values where 4 are printed",
            ),
            (
                "  0 00:00:06   |          IRQ Timer Latency (us)        |         Thread Timer Latency (us)\nCPU COUNT      |      cur       min       avg       max |      cur       min       avg       max\n",
                "no CPU row",
            ),
        ];
        for (text, expected) in cases {
            let e = parse(&file(text)).unwrap_err().to_string();
            assert!(e.contains(expected), "{text:?}: {e}");
        }
    }
}
