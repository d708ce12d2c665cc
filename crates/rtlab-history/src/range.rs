//! A time range of the history read as a run (docs/history.md, "A range is a run"): what
//! `rtlab report DB` and `rtlab compare A.db B.db` work on.
//!
//! Every row of the range becomes part of one [`RunResult`]: one scenario per load-schedule
//! phase ("idle", or the schedule's phase names), and per phase, CPU and metric one
//! measurement with the histograms and moments of every row merged (exactly), the overruns
//! and lost samples added, and the maximum of each row in time order as the per-block
//! maxima (`block_s` = the window length). The host is the last session's; the label and
//! the notes say that the run came from the history and which range.
use crate::store::{HistoryDb, StoredWindow};
use crate::HistoryError;
use rtlab_analysis::{LatencyHistogram, Moments, Summary};
use rtlab_results::history::range::{rfc3339_utc, span_label, TimeRange};
use rtlab_results::history::{Resolution, Session};
use rtlab_results::host::Policy;
use rtlab_results::load::LoadReport;
use rtlab_results::run::{Experiment, Measurement, RealtimeStatus, Resources, RunResult, Scenario, ToolInfo, SCHEMA};

/// The loads of a load-schedule phase, as far as the history knows them: their names (the
/// phase is a `rtlab run --load` scenario, loads joined with "+"), not what they achieved.
/// "idle" has none.
fn phase_loads(phase: &str, duration_s: f64) -> Vec<LoadReport> {
    if phase == "idle" {
        return Vec::new();
    }
    phase
        .split('+')
        .map(|name| LoadReport {
            name: name.to_string(),
            parameters: serde_json::json!({
                "source": "rtlab monitor --schedule: the history keeps the phase's name, not the load's parameters or what it achieved"
            }),
            achieved: Vec::new(),
            cpu_seconds: None,
            died_early: None,
            duration_s,
        })
        .collect()
}

/// Accumulates one measurement over the rows of a range.
struct Merged {
    scenario: String,
    cpu: usize,
    metric: String,
    histogram: LatencyHistogram,
    moments: Moments,
    overruns: u64,
    lost: u64,
    maxima: Vec<Option<i64>>,
}

impl HistoryDb {
    /// The rows of `range` read as one run (see the module documentation). An empty range is
    /// an error, not an empty run.
    pub fn run_of_range(&self, range: TimeRange) -> Result<RunResult, HistoryError> {
        let windows = self.windows(range.since_ns, range.until_ns)?;
        let sessions = self.sessions()?;
        run_of_rows(&self.path().display().to_string(), &sessions, &windows, range).map_err(|reason| self.error(reason))
    }
}

/// `windows` (oldest first, all overlapping `range`) of the history at `source` as a run.
/// The sessions `rows` belong to, in session order.
pub(crate) fn sessions_of<'a>(sessions: &'a [Session], rows: &[StoredWindow]) -> Vec<&'a Session> {
    sessions.iter().filter(|s| rows.iter().any(|w| w.session_id == s.id)).collect()
}

/// The earliest start and the latest end of `rows`; None without rows.
pub(crate) fn span_of(rows: &[StoredWindow]) -> Option<(i64, i64)> {
    let start = rows.iter().map(|w| w.record.start_ns).min()?;
    let end = rows.iter().map(|w| w.record.end_ns).max()?;
    Some((start, end))
}

/// The phases of `rows`, in the order first seen.
pub(crate) fn phases_of(rows: &[StoredWindow]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in rows {
        if !out.contains(&w.record.phase) {
            out.push(w.record.phase.clone());
        }
    }
    out
}

pub fn run_of_rows(
    source: &str,
    sessions: &[Session],
    windows: &[StoredWindow],
    range: TimeRange,
) -> Result<RunResult, String> {
    let (Some(first), Some(last)) = (windows.first(), windows.last()) else {
        return Err(format!("no windows from {} (the range holds no measurement)", range.describe()));
    };
    let used = sessions_of(sessions, windows);
    let Some(session) = used.last() else {
        return Err(format!("window {} belongs to no session", first.id));
    };
    let settings = &session.settings;
    let (start_ns, end_ns) = span_of(windows).unwrap_or((first.record.start_ns, last.record.end_ns));
    let window_ns = used.iter().map(|s| s.settings.window_ns).max().unwrap_or(settings.window_ns);
    let block_s = window_ns.div_ceil(1_000_000_000).max(1);

    let phases = phases_of(windows);
    let mut merged: Vec<Merged> = Vec::new();
    for w in windows {
        let r = &w.record;
        for m in &r.metrics {
            let histogram = LatencyHistogram::decode(&m.histogram).map_err(|e| format!("window {}: {e}", w.id))?;
            let at = merged.iter().position(|x| x.scenario == r.phase && x.cpu == m.cpu && x.metric == m.metric);
            let entry = match at {
                Some(i) => &mut merged[i],
                None => {
                    merged.push(Merged {
                        scenario: r.phase.clone(),
                        cpu: m.cpu,
                        metric: m.metric.clone(),
                        histogram: LatencyHistogram::new(histogram.highest_trackable())
                            .map_err(|e| format!("window {}: {e}", w.id))?,
                        moments: Moments::new(),
                        overruns: 0,
                        lost: 0,
                        maxima: Vec::new(),
                    });
                    merged.last_mut().expect("pushed")
                }
            };
            entry.histogram.merge(&histogram).map_err(|e| format!("window {}: {e}", w.id))?;
            entry.moments.merge(&m.moments);
            entry.overruns += m.overruns;
            entry.lost += m.lost;
        }
    }
    // The per-window maxima: one entry per row of the phase, null where the row has no sample
    // of this CPU and metric.
    for entry in &mut merged {
        entry.maxima = windows
            .iter()
            .filter(|w| w.record.phase == entry.scenario)
            .map(|w| {
                w.record
                    .metrics
                    .iter()
                    .find(|m| m.cpu == entry.cpu && m.metric == entry.metric && m.moments.count > 0)
                    .map(|m| m.moments.max)
            })
            .collect();
    }
    merged.sort_by(|a, b| {
        let phase = |name: &str| phases.iter().position(|p| p == name);
        (phase(&a.scenario), &a.metric, a.cpu).cmp(&(phase(&b.scenario), &b.metric, b.cpu))
    });

    let seconds = |w: &StoredWindow| (w.record.end_ns - w.record.start_ns).max(0) as f64 / 1e9;
    let scenarios: Vec<Scenario> = phases
        .iter()
        .map(|phase| Scenario {
            name: phase.clone(),
            loads: phase_loads(phase, windows.iter().filter(|w| w.record.phase == *phase).map(seconds).sum()),
            load_failure: None,
            raw_stopped: None,
            settle_s: 0.0,
            duration_s: windows.iter().filter(|w| w.record.phase == *phase).map(seconds).sum(),
            interrupted: false,
            activity: None,
            convergence: None,
        })
        .collect();
    let mut measurements = Vec::new();
    for m in merged {
        let probe = m.metric.split('.').next().unwrap_or("timer").to_string();
        measurements.push(Measurement {
            scenario: m.scenario,
            thread: format!("{probe}/{}", m.cpu),
            probe,
            metric: m.metric,
            cpu: m.cpu,
            count: m.moments.count,
            cycles: m.moments.count + m.overruns,
            overruns: m.overruns,
            lost: m.lost,
            interval_ns: settings.interval_ns.max(1),
            summary: Summary::from_parts(&m.histogram, &m.moments),
            moments: m.moments,
            histogram: m.histogram.encode().map_err(|e| e.to_string())?,
            per_second_max_ns: m.maxima,
            block_s,
            raw_file: None,
            raw_samples: None,
            details: Default::default(),
            sequence_ns: None,
        });
    }

    // The probes the windows hold ("timer", "timerlat"), in their order.
    let mut probes: Vec<String> = Vec::new();
    for m in &measurements {
        if !probes.contains(&m.probe) {
            probes.push(m.probe.clone());
        }
    }
    if probes.is_empty() {
        probes.push(session.settings.probe.clone());
    }
    let shown = TimeRange::new(Some(start_ns), Some(end_ns));
    let mut notes = vec![format!(
        "Read from the monitor history {source}: {} row{} from {} UTC (asked: {}), session{} {}.",
        windows.len(),
        if windows.len() == 1 { "" } else { "s" },
        shown.describe(),
        range.describe(),
        if used.len() == 1 { "" } else { "s" },
        used.iter().map(|s| s.id.to_string()).collect::<Vec<_>>().join(", ")
    )];
    let thinned = windows.iter().filter(|w| w.record.resolution != Resolution::Window).count();
    if thinned > 0 {
        notes.push(format!(
            "{thinned} of the rows are hourly or daily merges (retention): each is one entry of the per-window maxima, \
             covering an hour or a day rather than {block_s} s."
        ));
    }
    let mut kernels: Vec<&str> = Vec::new();
    for s in &used {
        if !kernels.contains(&s.identity.kernel_release.as_str()) {
            kernels.push(&s.identity.kernel_release);
        }
    }
    if kernels.len() > 1 {
        notes.push(format!(
            "The range spans kernels {}: the host shown is the last session's (compare ranges before and after a \
             kernel change with rtlab history --before/--after).",
            kernels.join(", ")
        ));
    }
    let real_time = used.iter().all(|s| s.settings.real_time);
    if !real_time {
        notes.push(
            "At least one session's measuring threads did not run at a real-time policy with memory locked.".into(),
        );
    }
    notes.extend(settings.notes.iter().cloned());
    let policy = settings.policy;
    let measured_s: f64 = windows.iter().map(seconds).sum();
    Ok(RunResult {
        schema: SCHEMA.to_string(),
        tool: ToolInfo { name: "rtlab".into(), version: settings.rtlab_version.clone(), commit: None },
        command_line: settings.command_line.clone(),
        label: format!("{} history {}", session.identity.hostname, span_label(start_ns, end_ns)),
        start_time: rfc3339_utc(start_ns),
        end_time: rfc3339_utc(end_ns),
        duration_s: measured_s,
        interrupted: false,
        simulated: false,
        realtime: RealtimeStatus {
            real_time_results: real_time,
            policy,
            priority: if policy == Policy::Other { 0 } else { settings.priority },
            memory_locked: real_time,
            dma_latency_held: false,
            timer_slack_ns: None,
            notes,
        },
        host: session.host.clone(),
        experiment: Experiment {
            probes,
            interval_ns: settings.interval_ns.max(1),
            policy,
            priority: settings.priority,
            cpus: settings.cpus.clone(),
            duration_ns: Some((measured_s * 1e9) as u64),
            samples_per_cpu: None,
            warmup_samples: 0,
            histogram_max_ns: settings.histogram_max_ns,
            raw: false,
            dma_latency: false,
            loads: phases.clone(),
            presets: Default::default(),
            load_cpus: None,
            settle_ns: 0,
            probe_settings: Default::default(),
        },
        scenarios,
        measurements,
        warnings: Vec::new(),
        resources: Resources { peak_rss_kib: None },
        verdict: None,
        imported: None,
        taskset: None,
        split: None,
        noise: None,
    })
}
