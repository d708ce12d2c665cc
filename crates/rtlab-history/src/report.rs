//! `rtlab history`'s views of a history computed from its rows
//! ([`rtlab_results::history::report::HistoryReport`], JSON schema `rtlab.history/1`):
//! every statistic is computed here, once; `rtlab_report::history` only renders it.
//!
//! - the maximum of every row over time and per UTC day, with kernel changes (sessions
//!   whose kernel differs from the previous session's) and gaps (a restart later than one
//!   window after the last window) marked;
//! - the latency histogram in 1 µs bins of the last day and of the whole range;
//! - percentiles per UTC day (p50, p99, p99.9, max, count);
//! - a regression check between two ranges (by default before and after the last kernel
//!   change of the range) with `rtlab_analysis::compare`'s bootstrap.

use crate::range::{phases_of, sessions_of, span_of};
use crate::store::{HistoryDb, StoredWindow};
use crate::HistoryError;
use rtlab_analysis::compare::{compare_quantile, Change, CONFIDENCE, REPLICATES, SEED};
use rtlab_analysis::curve::fixed_bins;
use rtlab_analysis::units::{format_signed_us, format_us};
use rtlab_analysis::{percentile, LatencyHistogram};
use rtlab_results::history::range::{day_start_ns, short_utc, utc_day, TimeRange, DAY_NS};
use rtlab_results::history::report::{
    span_words, DayRow, EventKind, HistogramView, HistoryEvent, HistoryQuery, HistoryReport, QuantileChange, RangeSide,
    Regression, RowPoint, SessionView, BIN_NS, COMPARED, HISTORY_SCHEMA,
};
use rtlab_results::history::{Resolution, Session};

/// Accumulates the samples of rows into one histogram.
struct Accumulator {
    histogram: Option<LatencyHistogram>,
    max_ns: Option<i64>,
    min_ns: Option<i64>,
    rows: usize,
    since_ns: i64,
    until_ns: i64,
}

impl Accumulator {
    fn new() -> Self {
        Self { histogram: None, max_ns: None, min_ns: None, rows: 0, since_ns: i64::MAX, until_ns: i64::MIN }
    }

    fn add(&mut self, row: &CombinedRow) -> Result<(), String> {
        self.rows += 1;
        self.since_ns = self.since_ns.min(row.start_ns);
        self.until_ns = self.until_ns.max(row.end_ns);
        self.max_ns = self.max_ns.max(row.max_ns);
        self.min_ns = match (self.min_ns, row.min_ns) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if let Some(h) = &row.histogram {
            match &mut self.histogram {
                Some(mine) => mine.merge(h).map_err(|e| e.to_string())?,
                None => self.histogram = Some(h.clone()),
            }
        }
        Ok(())
    }

    fn count(&self) -> u64 {
        self.histogram.as_ref().map_or(0, LatencyHistogram::count)
    }

    fn quantile(&self, q: f64) -> Option<i64> {
        let p = percentile(self.histogram.as_ref()?, q)?;
        Some(match (self.min_ns, self.max_ns) {
            // Not clamp: it panics when a damaged row makes lo > hi.
            (Some(lo), Some(hi)) => p.max(lo).min(hi),
            _ => p,
        })
    }

    fn view(&self) -> HistogramView {
        let bins = self
            .histogram
            .as_ref()
            .map(|h| fixed_bins(h, BIN_NS).into_iter().map(|b| (b.start_ns, b.count)).collect())
            .unwrap_or_default();
        HistogramView {
            since_ns: if self.rows > 0 { self.since_ns } else { 0 },
            until_ns: if self.rows > 0 { self.until_ns } else { 0 },
            rows: self.rows,
            count: self.count(),
            min_ns: self.min_ns,
            p50_ns: self.quantile(0.5),
            p99_ns: self.quantile(0.99),
            p99_9_ns: self.quantile(0.999),
            max_ns: self.max_ns,
            bins,
        }
    }
}

/// A row with its CPUs combined: the metric's histogram (None without samples) and exact
/// extremes.
struct CombinedRow {
    start_ns: i64,
    end_ns: i64,
    max_ns: Option<i64>,
    min_ns: Option<i64>,
    histogram: Option<LatencyHistogram>,
}

fn combine(w: &StoredWindow, metric: &str) -> Result<CombinedRow, String> {
    let mut histogram: Option<LatencyHistogram> = None;
    let (mut min_ns, mut max_ns) = (None::<i64>, None::<i64>);
    for m in w.record.metrics.iter().filter(|m| m.metric == metric && m.moments.count > 0) {
        let h = LatencyHistogram::decode(&m.histogram).map_err(|e| format!("window {}: {e}", w.id))?;
        match &mut histogram {
            Some(all) => all.merge(&h).map_err(|e| format!("window {}: {e}", w.id))?,
            None => histogram = Some(h),
        }
        min_ns = Some(min_ns.map_or(m.moments.min, |v| v.min(m.moments.min)));
        max_ns = Some(max_ns.map_or(m.moments.max, |v| v.max(m.moments.max)));
    }
    Ok(CombinedRow { start_ns: w.record.start_ns, end_ns: w.record.end_ns, max_ns, min_ns, histogram })
}

impl HistoryDb {
    /// The views of `query` (see the module documentation). An empty range, or a metric the
    /// range does not hold, is an error.
    pub fn history_report(&self, query: &HistoryQuery) -> Result<HistoryReport, HistoryError> {
        let mut windows = self.windows(query.range.since_ns, query.range.until_ns)?;
        let sessions = self.sessions()?;
        let of_phase = |rows: Vec<StoredWindow>| match &query.phase {
            Some(phase) => rows.into_iter().filter(|w| w.record.phase == *phase).collect(),
            None => rows,
        };
        if let Some(phase) = &query.phase {
            if !windows.is_empty() && !windows.iter().any(|w| w.record.phase == *phase) {
                return Err(self.error(format!(
                    "no rows of phase {phase:?} from {} (it holds {})",
                    query.range.describe(),
                    phases_of(&windows).join(", ")
                )));
            }
        }
        let all_phases = phases_of(&windows);
        windows = of_phase(windows);
        let compare = match &query.compare {
            Some((before, after)) => Some((
                of_phase(self.windows(before.since_ns, before.until_ns)?),
                of_phase(self.windows(after.since_ns, after.until_ns)?),
                *before,
                *after,
            )),
            None => None,
        };
        let mut report = build(&self.path().display().to_string(), &sessions, &windows, query, compare)
            .map_err(|reason| self.error(reason))?;
        if query.phase.is_none() && all_phases.len() > 1 {
            report.notes.insert(
                0,
                format!(
                    "The range holds the load-schedule phases {}: the views take them together; --phase NAME \
                     selects one.",
                    all_phases.join(", ")
                ),
            );
        }
        Ok(report)
    }
}

type Explicit = (Vec<StoredWindow>, Vec<StoredWindow>, TimeRange, TimeRange);

fn build(
    database: &str,
    sessions: &[Session],
    windows: &[StoredWindow],
    query: &HistoryQuery,
    compare: Option<Explicit>,
) -> Result<HistoryReport, String> {
    let metric = query.metric.as_str();
    if windows.is_empty() {
        return Err(format!("no windows from {} (the range holds no measurement)", query.range.describe()));
    }
    if !windows.iter().any(|w| w.record.metrics.iter().any(|m| m.metric == metric)) {
        let mut known: Vec<&str> = Vec::new();
        for m in windows.iter().flat_map(|w| &w.record.metrics) {
            if !known.contains(&m.metric.as_str()) {
                known.push(&m.metric);
            }
        }
        return Err(format!("no metric {metric:?} in the range (it holds {})", known.join(", ")));
    }
    let (first_ns, last_ns) = span_of(windows).unwrap_or((0, 0));
    let kernel_of = |session_id: i64| {
        sessions.iter().find(|s| s.id == session_id).map(|s| s.identity.kernel_release.clone()).unwrap_or_default()
    };

    // One pass over the rows: each row's histogram is decoded once and added to the range,
    // the last day, its day and (for the default comparison) before or after the change.
    let mut rows = Vec::with_capacity(windows.len());
    let mut days: Vec<DayRow> = Vec::new();
    let mut day = Accumulator::new();
    let mut day_extra = (0u64, 0u64, Vec::<String>::new());
    let mut whole = Accumulator::new();
    let mut last_day = Accumulator::new();
    let last_day_from = last_ns - DAY_NS;
    let used = sessions_of(sessions, windows);
    let change = last_kernel_change(&used, first_ns);
    let previous_change_id = change
        .and_then(|c| sessions.iter().rev().find(|s| s.id < c.id && s.previous_kernel.is_some()))
        .map_or(i64::MIN, |s| s.id);
    let mut before = Accumulator::new();
    let mut after = Accumulator::new();
    let mut sides_kernels = (Vec::<String>::new(), Vec::<String>::new());
    let finish_day = |day: &Accumulator, extra: &(u64, u64, Vec<String>), days: &mut Vec<DayRow>| {
        if day.rows > 0 {
            days.push(DayRow {
                day: utc_day(day.since_ns),
                start_ns: day_start_ns(day.since_ns),
                rows: day.rows,
                count: day.count(),
                p50_ns: day.quantile(0.5),
                p99_ns: day.quantile(0.99),
                p99_9_ns: day.quantile(0.999),
                max_ns: day.max_ns,
                overruns: extra.0,
                lost: extra.1,
                kernels: extra.2.clone(),
            });
        }
    };
    for w in windows {
        let combined = combine(w, metric)?;
        let of_metric = || w.record.metrics.iter().filter(|m| m.metric == metric);
        let point = RowPoint {
            start_ns: w.record.start_ns,
            end_ns: w.record.end_ns,
            session_id: w.session_id,
            resolution: w.record.resolution,
            merged: w.record.merged,
            phase: w.record.phase.clone(),
            count: of_metric().map(|m| m.moments.count).sum(),
            max_ns: combined.max_ns,
            overruns: of_metric().map(|m| m.overruns).sum(),
            lost: of_metric().map(|m| m.lost).sum(),
        };
        if day.rows > 0 && day_start_ns(w.record.start_ns) != day_start_ns(day.since_ns) {
            finish_day(&day, &day_extra, &mut days);
            day = Accumulator::new();
            day_extra = (0, 0, Vec::new());
        }
        day.add(&combined)?;
        day_extra.0 += point.overruns;
        day_extra.1 += point.lost;
        let kernel = kernel_of(w.session_id);
        if !day_extra.2.contains(&kernel) {
            day_extra.2.push(kernel.clone());
        }
        whole.add(&combined)?;
        if w.record.end_ns > last_day_from {
            last_day.add(&combined)?;
        }
        if let (Some(change), None) = (change, &compare) {
            // Before: the sessions since the kernel change before this one (the previous
            // kernel only); after: from the change on.
            let side = if w.session_id >= change.id {
                Some((&mut after, &mut sides_kernels.1))
            } else if w.session_id >= previous_change_id {
                Some((&mut before, &mut sides_kernels.0))
            } else {
                None
            };
            if let Some((side, kernels)) = side {
                side.add(&combined)?;
                if !kernels.contains(&kernel) {
                    kernels.push(kernel);
                }
            }
        }
        rows.push(point);
    }
    finish_day(&day, &day_extra, &mut days);

    let mut notes = Vec::new();
    let regression = match (compare, change) {
        (Some((a_rows, b_rows, a_range, b_range)), _) => {
            let read_side = |rows: &[StoredWindow], range: TimeRange, name: &str| -> Result<_, String> {
                if rows.is_empty() {
                    return Err(format!("--{name}: no windows from {}", range.describe()));
                }
                let mut acc = Accumulator::new();
                let mut kernels = Vec::new();
                for w in rows {
                    acc.add(&combine(w, metric)?)?;
                    let kernel = kernel_of(w.session_id);
                    if !kernels.contains(&kernel) {
                        kernels.push(kernel);
                    }
                }
                Ok((acc, kernels))
            };
            let (a, a_kernels) = read_side(&a_rows, a_range, "before")?;
            let (b, b_kernels) = read_side(&b_rows, b_range, "after")?;
            let basis = format!("the ranges given: before {}, after {}", a_range.describe(), b_range.describe());
            regression(basis, (&a, a_kernels), (&b, b_kernels))
        }
        (None, Some(change)) => {
            let basis = format!(
                "before and after the kernel change {} → {} on {} UTC",
                change.previous_kernel.as_deref().unwrap_or("?"),
                change.identity.kernel_release,
                short_utc(change.started_ns)
            );
            if before.rows == 0 || after.rows == 0 {
                notes.push(format!("No regression check: {basis} leaves one side without rows in the range."));
                None
            } else {
                regression(basis, (&before, sides_kernels.0), (&after, sides_kernels.1))
            }
        }
        (None, None) => {
            notes.push(
                "No regression check: no kernel change in the range; give --before and --after to compare two ranges."
                    .into(),
            );
            None
        }
    };
    if let Some(r) = &regression {
        if r.quantiles.is_empty() {
            notes.push(format!("No regression check: {} leaves one side without samples.", r.basis));
        }
    }

    let events = events(&used, first_ns);
    let session_views: Vec<SessionView> = used
        .iter()
        .map(|s| SessionView {
            id: s.id,
            started_ns: s.started_ns,
            ended_ns: s.ended_ns,
            end_reason: s.end_reason.clone(),
            hostname: s.identity.hostname.clone(),
            kernel_release: s.identity.kernel_release.clone(),
            preemption: s.identity.preemption.clone(),
            cmdline_hash: s.identity.cmdline_hash.clone(),
            previous_kernel: s.previous_kernel.clone(),
            gap_before_ns: s.gap_before_ns,
            window_ns: s.settings.window_ns,
            interval_ns: s.settings.interval_ns,
            schedule: s.settings.schedule.clone(),
            rows: windows.iter().filter(|w| w.session_id == s.id).count(),
        })
        .collect();
    let merged = rows.iter().filter(|r| r.resolution != Resolution::Window).count();
    if merged > 0 {
        notes.push(format!(
            "{merged} of the {} rows are hourly or daily merges (retention thinned them): their maximum is the largest \
             sample of the hour or day.",
            rows.len()
        ));
    }
    notes.push(
        "A row partly inside the range counts whole; days are UTC days; percentiles come from the merged histograms \
         (within 0.1 %), maxima are exact."
            .into(),
    );
    Ok(HistoryReport {
        schema: HISTORY_SCHEMA.into(),
        database: database.into(),
        metric: metric.into(),
        phase: query.phase.clone(),
        since_ns: query.range.since_ns,
        until_ns: query.range.until_ns,
        first_ns,
        last_ns,
        sessions: session_views,
        rows,
        days,
        events,
        last_day: last_day.view(),
        range: whole.view(),
        regression,
        notes,
    })
}

/// Whether a session's start lies inside the range's rows (a session that began before the
/// range's first row began outside it).
fn starts_inside(s: &Session, first_ns: i64) -> bool {
    s.started_ns >= first_ns
}

/// The last session of the range that started with another kernel than its predecessor.
fn last_kernel_change<'a>(used: &[&'a Session], first_ns: i64) -> Option<&'a Session> {
    used.iter().rev().find(|s| s.previous_kernel.is_some() && starts_inside(s, first_ns)).copied()
}

/// Kernel changes and gaps longer than a window, at the sessions that start in the range.
fn events(used: &[&Session], first_ns: i64) -> Vec<HistoryEvent> {
    let mut out = Vec::new();
    for s in used.iter().filter(|s| starts_inside(s, first_ns)) {
        if let Some(gap) = s.gap_before_ns.filter(|g| *g > s.settings.window_ns as i64) {
            out.push(HistoryEvent {
                kind: EventKind::Gap,
                at_ns: s.started_ns - gap,
                gap_ns: Some(gap),
                session_id: s.id,
                from_kernel: None,
                to_kernel: None,
                text: format!("gap of {} (no measurement until session {} began)", span_words(gap), s.id),
            });
        }
        if let Some(previous) = &s.previous_kernel {
            out.push(HistoryEvent {
                kind: EventKind::KernelChange,
                at_ns: s.started_ns,
                gap_ns: None,
                session_id: s.id,
                from_kernel: Some(previous.clone()),
                to_kernel: Some(s.identity.kernel_release.clone()),
                text: format!("kernel {previous} → {}", s.identity.kernel_release),
            });
        }
    }
    out.sort_by_key(|e| e.at_ns);
    out
}

fn side(acc: &Accumulator, kernels: Vec<String>) -> RangeSide {
    RangeSide {
        since_ns: acc.since_ns,
        until_ns: acc.until_ns,
        rows: acc.rows,
        count: acc.count(),
        max_ns: acc.max_ns,
        kernels,
    }
}

fn regression(basis: String, a: (&Accumulator, Vec<String>), b: (&Accumulator, Vec<String>)) -> Option<Regression> {
    let mut quantiles = Vec::new();
    if let (Some(ha), Some(hb)) = (&a.0.histogram, &b.0.histogram) {
        for (i, (name, q)) in COMPARED.iter().enumerate() {
            // One fixed seed per quantile: the same history gives the same answer.
            let Some(d) = compare_quantile(ha, hb, *q, SEED.wrapping_add((i as u64) << 8)) else { continue };
            let change = match d.change() {
                Change::Higher => "worse",
                Change::Lower => "better",
                Change::WithinNoise => "within noise",
            };
            let ci = format!(
                "{:.0} % CI {} to {} µs",
                d.confidence * 100.0,
                format_signed_us(d.low_ns),
                format_signed_us(d.high_ns)
            );
            let sentence = match d.change() {
                Change::WithinNoise => format!("{name} within noise: {} µs ({ci})", format_signed_us(d.difference_ns)),
                _ => format!("{name} {change} by {} µs ({ci})", format_us(d.difference_ns.abs())),
            };
            quantiles.push(QuantileChange {
                name: (*name).into(),
                quantile: *q,
                before_ns: d.a_ns,
                after_ns: d.b_ns,
                difference_ns: d.difference_ns,
                low_ns: d.low_ns,
                high_ns: d.high_ns,
                confidence: d.confidence,
                replicates: d.replicates,
                change: change.into(),
                sentence,
            });
        }
    }
    let headline = quantiles.last().map(|q| q.sentence.clone()).unwrap_or_else(|| "nothing to compare".into());
    Some(Regression {
        basis,
        before: side(a.0, a.1),
        after: side(b.0, b.1),
        quantiles,
        headline,
        method: format!(
            "Δ = after − before. CI: {:.0} % confidence interval of the difference from a Poisson bootstrap over the \
             histogram buckets ({REPLICATES} replicates, fixed seed); \"within noise\" when it contains 0. Samples are \
             autocorrelated in time (spikes come in bursts), so the interval is optimistic, most of all for the p99.9. \
             Maxima are exact and have no interval.",
            CONFIDENCE * 100.0
        ),
    })
}
