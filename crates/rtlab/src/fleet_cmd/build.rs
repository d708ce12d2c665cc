//! The queries `rtlab fleet` asks Prometheus (docs/fleet.md lists them) and the
//! [`FleetReport`] made from their answers. No network here: the answers come through a
//! function, so tests feed canned ones.

use rtlab_analysis::requirement::Requirement;
use rtlab_formats::prometheus::{quote_label_value, Sample};
use rtlab_results::fleet::{
    Board, BoardJudgement, FleetReport, KernelChange, Silence, SilenceReason, Trend, FLEET_SCHEMA,
};
use std::collections::{BTreeMap, BTreeSet};

/// The metric of the worst-latency columns.
pub const METRIC: &str = "timer.latency";

/// Every scrape target's health: the boards' `job` and whether the last scrape worked.
pub const UP: &str = "up";
/// The host identity series present now, valued with their last sample's own time.
pub const HOST_INFO_NOW: &str = "timestamp(rtlab_host_info)";
/// Every host identity series of the week (one per kernel release, hostname, ...).
pub const HOST_INFO_WEEK: &str = "last_over_time(rtlab_host_info[7d])";
/// When each of them was last seen, to the minute (a subquery with a 1-minute step).
pub const HOST_INFO_LAST_SEEN: &str = "max_over_time(timestamp(rtlab_host_info)[7d:1m])";
/// When each board's last window closed.
pub const LAST_WINDOW_END: &str = "max by (instance) (last_over_time(rtlab_last_window_end_timestamp_seconds[7d]))";
pub const OVERRUNS_TODAY: &str = "sum by (instance) (increase(rtlab_overruns_total[1d]))";
pub const LOST_TODAY: &str = "sum by (instance) (increase(rtlab_lost_total[1d]))";

/// The largest window maximum of `metric` per board over `range` (a PromQL duration),
/// optionally `offset` back.
pub fn worst_query(metric: &str, range: &str, offset: Option<&str>) -> String {
    let offset = offset.map(|o| format!(" offset {o}")).unwrap_or_default();
    format!(
        "max by (instance) (max_over_time(rtlab_window_max_seconds{{metric={}}}[{range}]{offset}))",
        quote_label_value(metric)
    )
}

pub fn worst_today(metric: &str) -> String {
    worst_query(metric, "1d", None)
}

/// What the command asks (docs/fleet.md lists them all: a test checks).
#[cfg(test)]
pub fn all_queries(requirements: &[Requirement]) -> Vec<String> {
    let mut q: Vec<String> =
        [UP, HOST_INFO_NOW, HOST_INFO_WEEK, HOST_INFO_LAST_SEEN, LAST_WINDOW_END, OVERRUNS_TODAY, LOST_TODAY]
            .iter()
            .map(|s| s.to_string())
            .collect();
    q.push(worst_today(METRIC));
    q.push(worst_query(METRIC, "7d", None));
    q.push(worst_query(METRIC, "6d", Some("1d")));
    for r in requirements {
        let w = worst_today(&r.metric);
        if !q.contains(&w) {
            q.push(w);
        }
    }
    q
}

/// What the report is about, besides the answers.
pub struct Params {
    pub prometheus: String,
    /// The evaluation time of every query.
    pub now_unix: f64,
    pub silent_after_s: f64,
    pub requirements: Vec<Requirement>,
}

/// UTC RFC 3339 with seconds ("2026-11-26T22:40:00Z").
pub fn rfc3339(unix: f64) -> String {
    let secs = unix.floor() as i64;
    chrono::DateTime::from_timestamp(secs, 0)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .unwrap_or_else(|| format!("{unix}"))
}

/// Seconds to integer ns; None for NaN and infinities.
fn ns_of(seconds: f64) -> Option<i64> {
    (seconds.is_finite()).then(|| (seconds * 1e9).round() as i64)
}

/// instance -> value of a `by (instance)` answer (finite values only).
fn by_instance(samples: &[Sample]) -> BTreeMap<String, f64> {
    samples
        .iter()
        .filter(|s| s.value.is_finite() && !s.label("instance").is_empty())
        .map(|s| (s.label("instance").to_string(), s.value))
        .collect()
}

/// A series' identity: its labels without the metric name.
fn identity(sample: &Sample) -> BTreeMap<String, String> {
    sample.labels.iter().filter(|(k, _)| k.as_str() != "__name__").map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// The host identity series of one board, with when each was last seen.
struct HostSeries {
    labels: BTreeMap<String, String>,
    last_seen: Option<f64>,
}

fn label_of(labels: &BTreeMap<String, String>, name: &str) -> Option<String> {
    labels.get(name).filter(|v| !v.is_empty()).cloned()
}

/// The fleet report from Prometheus' answers: `query` runs one PromQL instant query at
/// `params.now_unix`.
pub fn build<E>(params: Params, query: &mut dyn FnMut(&str) -> Result<Vec<Sample>, E>) -> Result<FleetReport, E> {
    let up = query(UP)?;
    let info_now = query(HOST_INFO_NOW)?;
    let info_week = query(HOST_INFO_WEEK)?;
    let info_last_seen = query(HOST_INFO_LAST_SEEN)?;
    let window_end = by_instance(&query(LAST_WINDOW_END)?);
    let overruns = by_instance(&query(OVERRUNS_TODAY)?);
    let lost = by_instance(&query(LOST_TODAY)?);
    let mut worst_today_of: BTreeMap<String, BTreeMap<String, f64>> = BTreeMap::new();
    worst_today_of.insert(METRIC.to_string(), by_instance(&query(&worst_today(METRIC))?));
    for r in &params.requirements {
        if !worst_today_of.contains_key(&r.metric) {
            let answer = by_instance(&query(&worst_today(&r.metric))?);
            worst_today_of.insert(r.metric.clone(), answer);
        }
    }
    let worst_week = by_instance(&query(&worst_query(METRIC, "7d", None))?);
    let worst_previous = by_instance(&query(&worst_query(METRIC, "6d", Some("1d")))?);

    // The host identity series per board, each with the latest time it was seen.
    let mut series: BTreeMap<String, Vec<HostSeries>> = BTreeMap::new();
    for s in &info_week {
        let instance = s.label("instance");
        if instance.is_empty() {
            continue;
        }
        series.entry(instance.to_string()).or_default().push(HostSeries { labels: identity(s), last_seen: None });
    }
    for s in info_last_seen.iter().chain(&info_now) {
        if !s.value.is_finite() || s.label("instance").is_empty() {
            continue;
        }
        let labels = identity(s);
        let list = series.entry(s.label("instance").to_string()).or_default();
        match list.iter_mut().find(|h| h.labels == labels) {
            Some(h) => h.last_seen = Some(h.last_seen.map_or(s.value, |t| t.max(s.value))),
            None => list.push(HostSeries { labels, last_seen: Some(s.value) }),
        }
    }
    // Prometheus' own targets and other exporters are not boards: only the jobs that expose
    // rtlab's host identity, and any instance with rtlab's metrics.
    let rtlab_jobs: BTreeSet<String> = series.values().flatten().filter_map(|h| label_of(&h.labels, "job")).collect();
    let mut up_of: BTreeMap<String, (String, bool)> = BTreeMap::new();
    for s in &up {
        let (instance, job) = (s.label("instance"), s.label("job"));
        if instance.is_empty() {
            continue;
        }
        up_of.insert(instance.to_string(), (job.to_string(), s.value == 1.0));
    }
    let mut instances: BTreeSet<String> = series.keys().cloned().collect();
    instances.extend(up_of.iter().filter(|(_, (job, _))| rtlab_jobs.contains(job)).map(|(i, _)| i.clone()));
    instances.extend(window_end.keys().cloned());
    instances.extend(worst_week.keys().cloned());
    instances.extend(worst_today_of.values().flat_map(|m| m.keys().cloned()));

    let now = params.now_unix;
    let mut boards = Vec::new();
    for instance in instances {
        let host = series.get(&instance).map(Vec::as_slice).unwrap_or_default();
        // The current identity: the series seen last (a series never seen at a minute step
        // counts as older than those that were).
        let current =
            host.iter().max_by(|a, b| a.last_seen.unwrap_or(f64::MIN).total_cmp(&b.last_seen.unwrap_or(f64::MIN)));
        let current_kernel = current.and_then(|h| label_of(&h.labels, "kernel_release"));
        let last_kernel_change = current_kernel.as_ref().and_then(|to| {
            // The other kernels of the week, each with when it was last seen: the latest is
            // the one the board left.
            let mut others: BTreeMap<String, Option<f64>> = BTreeMap::new();
            for h in host {
                if let Some(k) = label_of(&h.labels, "kernel_release").filter(|k| k != to) {
                    let entry = others.entry(k).or_insert(None);
                    if let Some(t) = h.last_seen {
                        *entry = Some(entry.map_or(t, |e: f64| e.max(t)));
                    }
                }
            }
            let (from, at) = others.into_iter().max_by(|a, b| {
                a.1.unwrap_or(f64::MIN).total_cmp(&b.1.unwrap_or(f64::MIN)).then_with(|| b.0.cmp(&a.0))
            })?;
            Some(KernelChange { at_unix: at, at: at.map(rfc3339), from, to: to.clone() })
        });
        let job = up_of
            .get(&instance)
            .map(|(job, _)| job.clone())
            .or_else(|| current.and_then(|h| label_of(&h.labels, "job")))
            .unwrap_or_default();
        let up = up_of.get(&instance).map(|(_, up)| *up);
        let last_window_end_unix = window_end.get(&instance).copied();
        let since_window = last_window_end_unix.map(|t| (now - t).max(0.0));
        let reason = match (up, since_window) {
            (Some(false), _) => Some(SilenceReason::Down),
            (None, _) => Some(SilenceReason::NotScraped),
            (_, None) => Some(SilenceReason::NeverClosed),
            (_, Some(s)) if s > params.silent_after_s => Some(SilenceReason::NoWindow),
            _ => None,
        };
        let worst_today_ns = worst_today_of[METRIC].get(&instance).and_then(|v| ns_of(*v));
        let worst_previous_days_ns = worst_previous.get(&instance).and_then(|v| ns_of(*v));
        let judgements = params
            .requirements
            .iter()
            .map(|r| {
                let worst = worst_today_of.get(&r.metric).and_then(|m| m.get(&instance)).and_then(|v| ns_of(*v));
                BoardJudgement {
                    requirement: r.text.clone(),
                    worst_today_ns: worst,
                    bound_ns: r.bound_ns,
                    broken: worst.is_some_and(|w| w >= r.bound_ns),
                }
            })
            .collect();
        let count = |m: &BTreeMap<String, f64>| m.get(&instance).filter(|v| **v >= 0.0).map(|v| v.round() as u64);
        boards.push(Board {
            job,
            hostname: current.and_then(|h| label_of(&h.labels, "hostname")),
            kernel_release: current_kernel,
            preemption: current.and_then(|h| label_of(&h.labels, "preemption")),
            worst_today_ns,
            worst_week_ns: worst_week.get(&instance).and_then(|v| ns_of(*v)),
            worst_previous_days_ns,
            trend: Trend::of(worst_today_ns, worst_previous_days_ns),
            last_kernel_change,
            up,
            last_window_end_unix,
            last_window_end: last_window_end_unix.map(rfc3339),
            silent: reason.map(|reason| Silence { reason, for_s: since_window }),
            overruns_today: count(&overruns),
            lost_today: count(&lost),
            judgements,
            instance,
        });
    }
    Ok(FleetReport {
        schema: FLEET_SCHEMA.to_string(),
        prometheus: params.prometheus,
        generated_at_unix: now,
        generated_at: rfc3339(now),
        metric: METRIC.to_string(),
        silent_after_s: params.silent_after_s,
        requirements: params.requirements,
        summary: FleetReport::summarise(&boards),
        boards,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtlab_analysis::requirement::parse_requirement;
    use rtlab_formats::prometheus::parse_vector;
    use rtlab_results::fleet::FleetSummary;

    const NOW: f64 = 1_764_196_800.0; // 2025-11-26T22:40:00Z

    fn vector(elements: &[(&str, f64)]) -> String {
        let result: Vec<String> = elements
            .iter()
            .map(|(labels, value)| format!(r#"{{"metric":{{{labels}}},"value":[{NOW},"{value}"]}}"#))
            .collect();
        format!(r#"{{"status":"success","data":{{"resultType":"vector","result":[{}]}}}}"#, result.join(","))
    }

    /// Canned answers of three boards: a steady one, one that broke 100 µs today after a
    /// kernel change, one whose scrapes fail; plus Prometheus scraping itself.
    fn answers() -> BTreeMap<String, String> {
        let a = r#""instance":"a:9464","job":"lab""#;
        let b = r#""instance":"b:9464","job":"lab""#;
        let c = r#""instance":"c:9464","job":"lab""#;
        let info = |inst: &str, host: &str, kernel: &str| {
            format!(
                r#""instance":"{inst}","job":"lab","hostname":"{host}","kernel_release":"{kernel}","preemption":"PREEMPT_RT","cmdline_hash":"abc""#
            )
        };
        let mut m = BTreeMap::new();
        m.insert(
            UP.to_string(),
            vector(&[
                (&format!(r#""__name__":"up",{a}"#), 1.0),
                (&format!(r#""__name__":"up",{b}"#), 1.0),
                (&format!(r#""__name__":"up",{c}"#), 0.0),
                (r#""__name__":"up","instance":"localhost:9090","job":"prometheus""#, 1.0),
            ]),
        );
        m.insert(
            HOST_INFO_NOW.to_string(),
            vector(&[
                (&info("a:9464", "board-a", "6.1.0-rt"), NOW - 5.0),
                (&info("b:9464", "board-b", "6.6.0-rt"), NOW - 3.0),
            ]),
        );
        m.insert(
            HOST_INFO_WEEK.to_string(),
            vector(&[
                (&info("a:9464", "board-a", "6.1.0-rt"), 1.0),
                (&info("b:9464", "board-b", "6.1.0-rt"), 1.0),
                (&info("b:9464", "board-b", "6.6.0-rt"), 1.0),
                (&info("c:9464", "board-c", "6.1.0-rt"), 1.0),
            ]),
        );
        m.insert(
            HOST_INFO_LAST_SEEN.to_string(),
            vector(&[
                (&info("a:9464", "board-a", "6.1.0-rt"), NOW - 60.0),
                (&info("b:9464", "board-b", "6.1.0-rt"), NOW - 7200.0),
                (&info("b:9464", "board-b", "6.6.0-rt"), NOW - 60.0),
                (&info("c:9464", "board-c", "6.1.0-rt"), NOW - 86400.0),
            ]),
        );
        m.insert(
            LAST_WINDOW_END.to_string(),
            vector(&[
                (r#""instance":"a:9464""#, NOW - 30.0),
                (r#""instance":"b:9464""#, NOW - 50.0),
                (r#""instance":"c:9464""#, NOW - 86400.0),
            ]),
        );
        m.insert(
            OVERRUNS_TODAY.to_string(),
            vector(&[(r#""instance":"a:9464""#, 0.0), (r#""instance":"b:9464""#, 2.9999)]),
        );
        m.insert(LOST_TODAY.to_string(), vector(&[(r#""instance":"a:9464""#, 0.0), (r#""instance":"b:9464""#, 0.0)]));
        m.insert(
            worst_today(METRIC),
            vector(&[(r#""instance":"a:9464""#, 5.7e-05), (r#""instance":"b:9464""#, 0.000120)]),
        );
        m.insert(
            worst_query(METRIC, "7d", None),
            vector(&[
                (r#""instance":"a:9464""#, 6.1e-05),
                (r#""instance":"b:9464""#, 0.000120),
                (r#""instance":"c:9464""#, 4.4e-05),
            ]),
        );
        m.insert(
            worst_query(METRIC, "6d", Some("1d")),
            vector(&[
                (r#""instance":"a:9464""#, 6.1e-05),
                (r#""instance":"b:9464""#, 8.0e-05),
                (r#""instance":"c:9464""#, 4.4e-05),
            ]),
        );
        m.insert(worst_today("timer.jitter"), vector(&[(r#""instance":"a:9464""#, 3.0e-06)]));
        m
    }

    fn build_from(answers: &BTreeMap<String, String>, requirements: &[&str]) -> FleetReport {
        let params = Params {
            prometheus: "http://prom:9090".into(),
            now_unix: NOW,
            silent_after_s: 600.0,
            requirements: requirements.iter().map(|r| parse_requirement(r).unwrap()).collect(),
        };
        build(params, &mut |q: &str| -> Result<Vec<Sample>, String> {
            let body = answers.get(q).ok_or_else(|| format!("unexpected query {q}"))?;
            parse_vector(body).map_err(|e| e.to_string())
        })
        .unwrap()
    }

    #[test]
    fn the_queries_are_promql_of_the_metric() {
        assert_eq!(
            worst_today(METRIC),
            "max by (instance) (max_over_time(rtlab_window_max_seconds{metric=\"timer.latency\"}[1d]))"
        );
        assert_eq!(
            worst_query(METRIC, "6d", Some("1d")),
            "max by (instance) (max_over_time(rtlab_window_max_seconds{metric=\"timer.latency\"}[6d] offset 1d))"
        );
        let r =
            [parse_requirement("timer max < 100us").unwrap(), parse_requirement("timer.jitter max < 20us").unwrap()];
        let q = all_queries(&r);
        assert_eq!(q.len(), 11);
        assert!(q.contains(&worst_today("timer.jitter")));
    }

    #[test]
    fn docs_fleet_md_lists_every_query() {
        let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/fleet.md")).unwrap();
        for q in all_queries(&[]) {
            assert!(doc.contains(&format!("\n{q}\n")), "docs/fleet.md does not list {q}");
        }
    }

    #[test]
    fn every_board_gets_its_figures() {
        let report = build_from(&answers(), &["timer max < 100us", "timer.jitter max < 20us"]);
        assert_eq!(report.schema, "rtlab.fleet/1");
        assert_eq!(report.generated_at, "2025-11-26T22:40:00Z");
        assert_eq!(report.summary, FleetSummary { boards: 3, breaking: 1, silent: 1 });
        assert!(report.any_broken());
        let names: Vec<&str> = report.boards.iter().map(|b| b.instance.as_str()).collect();
        assert_eq!(names, ["a:9464", "b:9464", "c:9464"], "Prometheus' own target is no board");

        let a = &report.boards[0];
        assert_eq!(a.job, "lab");
        assert_eq!(a.hostname.as_deref(), Some("board-a"));
        assert_eq!(a.kernel_release.as_deref(), Some("6.1.0-rt"));
        assert_eq!(a.preemption.as_deref(), Some("PREEMPT_RT"));
        assert_eq!(
            (a.worst_today_ns, a.worst_week_ns, a.worst_previous_days_ns),
            (Some(57_000), Some(61_000), Some(61_000))
        );
        assert_eq!(a.trend, Trend::Steady);
        assert_eq!(a.last_kernel_change, None);
        assert_eq!(a.up, Some(true));
        assert_eq!(a.last_window_end.as_deref(), Some("2025-11-26T22:39:30Z"));
        assert_eq!(a.silent, None);
        assert_eq!((a.overruns_today, a.lost_today), (Some(0), Some(0)));
        assert!(!a.breaks());
        assert_eq!(a.judgements[1].worst_today_ns, Some(3_000));

        let b = &report.boards[1];
        assert_eq!(b.kernel_release.as_deref(), Some("6.6.0-rt"));
        assert_eq!(b.worst_today_ns, Some(120_000));
        assert_eq!(b.trend, Trend::Higher, "120 µs today against 80 µs before");
        assert_eq!(
            b.last_kernel_change,
            Some(KernelChange {
                at_unix: Some(NOW - 7200.0),
                at: Some("2025-11-26T20:40:00Z".into()),
                from: "6.1.0-rt".into(),
                to: "6.6.0-rt".into()
            })
        );
        assert_eq!(b.overruns_today, Some(3));
        assert!(b.breaks());
        assert_eq!(
            b.judgements,
            vec![
                BoardJudgement {
                    requirement: "timer.latency max < 100us".into(),
                    worst_today_ns: Some(120_000),
                    bound_ns: 100_000,
                    broken: true
                },
                BoardJudgement {
                    requirement: "timer.jitter max < 20us".into(),
                    worst_today_ns: None,
                    bound_ns: 20_000,
                    broken: false
                },
            ]
        );

        let c = &report.boards[2];
        assert_eq!(c.hostname.as_deref(), Some("board-c"), "known from the week's series");
        assert_eq!(c.worst_today_ns, None);
        assert_eq!(c.worst_week_ns, Some(44_000));
        assert_eq!(c.trend, Trend::NoData);
        assert_eq!(c.silent, Some(Silence { reason: SilenceReason::Down, for_s: Some(86400.0) }));
        assert!(!c.breaks(), "no data today breaks nothing");
    }

    #[test]
    fn a_requirement_holds_strictly_below_its_bound() {
        let report = build_from(&answers(), &["timer max < 120us"]);
        assert!(report.boards[1].breaks());
        let report = build_from(&answers(), &["timer max < 120.001us"]);
        assert!(!report.any_broken());
        assert_eq!(report.summary.breaking, 0);
    }

    #[test]
    fn silence_reasons() {
        let mut m = answers();
        // Board a closes no window for 20 minutes; board b is no longer a target.
        m.insert(
            LAST_WINDOW_END.to_string(),
            vector(&[(r#""instance":"a:9464""#, NOW - 1200.0), (r#""instance":"c:9464""#, NOW - 86400.0)]),
        );
        m.insert(
            UP.to_string(),
            vector(&[
                (r#""__name__":"up","instance":"a:9464","job":"lab""#, 1.0),
                (r#""__name__":"up","instance":"c:9464","job":"lab""#, 1.0),
            ]),
        );
        let report = build_from(&m, &[]);
        let reasons: Vec<Option<SilenceReason>> =
            report.boards.iter().map(|b| b.silent.as_ref().map(|s| s.reason)).collect();
        assert_eq!(
            reasons,
            [Some(SilenceReason::NoWindow), Some(SilenceReason::NotScraped), Some(SilenceReason::NoWindow)]
        );
        assert_eq!(report.boards[0].silent.as_ref().unwrap().for_s, Some(1200.0));
        assert_eq!(report.summary.silent, 3);
        // Up, but never a window end within the week.
        m.insert(LAST_WINDOW_END.to_string(), vector(&[]));
        let report = build_from(&m, &[]);
        assert_eq!(report.boards[0].silent, Some(Silence { reason: SilenceReason::NeverClosed, for_s: None }));
    }

    #[test]
    fn a_kernel_left_and_returned_to_counts_from_the_other_kernels_last_sighting() {
        let mut m = answers();
        let info = |kernel: &str| {
            format!(
                r#""instance":"a:9464","job":"lab","hostname":"board-a","kernel_release":"{kernel}","preemption":"PREEMPT_RT""#
            )
        };
        m.insert(
            HOST_INFO_LAST_SEEN.to_string(),
            vector(&[
                (&info("6.1.0-rt"), NOW - 60.0),
                (&info("6.6.0-rt"), NOW - 3600.0),
                (&info("6.5.0"), NOW - 7200.0),
            ]),
        );
        m.insert(HOST_INFO_NOW.to_string(), vector(&[(&info("6.1.0-rt"), NOW - 2.0)]));
        m.insert(HOST_INFO_WEEK.to_string(), vector(&[]));
        let report = build_from(&m, &[]);
        let a = &report.boards[0];
        assert_eq!(a.kernel_release.as_deref(), Some("6.1.0-rt"));
        let change = a.last_kernel_change.as_ref().unwrap();
        assert_eq!(
            (change.from.as_str(), change.to.as_str(), change.at_unix),
            ("6.6.0-rt", "6.1.0-rt", Some(NOW - 3600.0))
        );
    }

    #[test]
    fn no_boards_is_an_empty_report() {
        let empty = vector(&[]);
        let m: BTreeMap<String, String> = answers().into_keys().map(|k| (k, empty.clone())).collect();
        let report = build_from(&m, &["timer max < 1ms"]);
        assert_eq!(report.summary, FleetSummary { boards: 0, breaking: 0, silent: 0 });
        assert!(!report.any_broken());
    }

    #[test]
    fn query_failures_pass_through() {
        let params = Params { prometheus: String::new(), now_unix: NOW, silent_after_s: 600.0, requirements: vec![] };
        let r = build(params, &mut |_q: &str| -> Result<Vec<Sample>, String> { Err("down".into()) });
        assert_eq!(r.unwrap_err(), "down");
    }
}
