//! The OpenMetrics text of `rtlab monitor --listen` (GET /metrics), rendered from the
//! monitor's running totals (`rtlab_results::monitor`). The metric names are documented in
//! docs/monitor.md; the number and label formats are [`super::openmetrics`]'s.

use super::openmetrics::{escape_label as escape, family, seconds};
use rtlab_results::monitor::{MonitorTotals, SeriesTotals, LATENCY_BUCKETS_NS};
use std::fmt::Write;

/// The two text formats of the endpoint: Prometheus asks for OpenMetrics; a plain client
/// (curl, `promtool check metrics`) gets the Prometheus text format 0.0.4, as the official
/// client libraries do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    OpenMetrics,
    PrometheusText,
}

impl Flavour {
    /// The flavour a request's Accept header asks for.
    pub fn for_accept(accept: Option<&str>) -> Self {
        match accept {
            Some(a) if a.contains("application/openmetrics-text") => Flavour::OpenMetrics,
            _ => Flavour::PrometheusText,
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Flavour::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Flavour::PrometheusText => "text/plain; version=0.0.4; charset=utf-8",
        }
    }
}

/// The exposition in `flavour`; OpenMetrics ends in `# EOF`.
pub fn render(totals: &MonitorTotals, flavour: Flavour) -> String {
    let mut out = String::new();
    // The text format names counters' TYPE by their sample (`_total`), has no info type
    // (a gauge of 1 stands in) and no UNIT line.
    let family = |out: &mut String, name: &str, kind: &str, unit: Option<&str>, help: &str| match (flavour, kind) {
        (Flavour::OpenMetrics, _) => family(out, name, kind, unit, help),
        (Flavour::PrometheusText, "counter") => family(out, &format!("{name}_total"), kind, None, help),
        (Flavour::PrometheusText, "info") => family(out, &format!("{name}_info"), "gauge", None, help),
        (Flavour::PrometheusText, _) => family(out, name, kind, None, help),
    };
    let labels = |s: &SeriesTotals| format!("metric=\"{}\",cpu=\"{}\"", escape(&s.metric), s.cpu);

    family(
        &mut out,
        "rtlab_latency_seconds",
        "histogram",
        Some("seconds"),
        "Samples since the monitor started, per metric and CPU (timer.latency: wake-up minus programmed expiry; timer.jitter: period jitter; timerlat.thread, timerlat.irq: latency of the kernel's timerlat thread and of its timer IRQ).",
    );
    for s in &totals.series {
        let mut cumulative = 0u64;
        for (bound, count) in LATENCY_BUCKETS_NS.iter().zip(&s.buckets) {
            cumulative += count;
            let _ = writeln!(
                out,
                "rtlab_latency_seconds_bucket{{{},le=\"{}\"}} {cumulative}",
                labels(s),
                seconds(*bound as i128)
            );
        }
        let _ = writeln!(out, "rtlab_latency_seconds_bucket{{{},le=\"+Inf\"}} {}", labels(s), s.count);
        let _ = writeln!(out, "rtlab_latency_seconds_count{{{}}} {}", labels(s), s.count);
        // OpenMetrics allows no _sum for a histogram that saw negative values.
        if !s.negative_seen {
            let _ = writeln!(out, "rtlab_latency_seconds_sum{{{}}} {}", labels(s), seconds(s.sum_ns));
        }
    }

    family(
        &mut out,
        "rtlab_window_max_seconds",
        "gauge",
        Some("seconds"),
        "Largest sample of the last closed window, per metric and CPU.",
    );
    for s in &totals.series {
        if let Some(max) = s.window_max_ns {
            let _ = writeln!(out, "rtlab_window_max_seconds{{{}}} {}", labels(s), seconds(max as i128));
        }
    }

    for (name, help, value) in [
        (
            "rtlab_samples",
            "Samples recorded since the monitor started.",
            (|s: &SeriesTotals| s.count) as fn(&SeriesTotals) -> u64,
        ),
        ("rtlab_overruns", "Expiries skipped because a wake-up came after the next one.", |s| s.overruns),
        ("rtlab_lost", "Samples that did not reach a window (the ring from the measuring thread was full).", |s| {
            s.lost
        }),
    ] {
        family(&mut out, name, "counter", None, help);
        for s in &totals.series {
            let _ = writeln!(out, "{name}_total{{{}}} {}", labels(s), value(s));
        }
    }

    family(&mut out, "rtlab_windows", "counter", None, "Windows closed since the monitor started.");
    let _ = writeln!(out, "rtlab_windows_total {}", totals.windows);
    family(
        &mut out,
        "rtlab_windows_unstored",
        "gauge",
        None,
        "Closed windows waiting in memory because the history cannot store them (a full disk).",
    );
    let _ = writeln!(out, "rtlab_windows_unstored {}", totals.windows_unstored);
    family(
        &mut out,
        "rtlab_windows_dropped",
        "counter",
        None,
        "Closed windows given up unstored because too many waited.",
    );
    let _ = writeln!(out, "rtlab_windows_dropped_total {}", totals.windows_dropped);
    family(
        &mut out,
        "rtlab_last_window_end_timestamp_seconds",
        "gauge",
        None,
        "Unix time at which the last closed window ended.",
    );
    if let Some(end) = totals.last_window_end_ns {
        let _ = writeln!(out, "rtlab_last_window_end_timestamp_seconds {}", seconds(end as i128));
    }
    family(&mut out, "rtlab_build", "info", None, "The rtlab that measures.");
    let _ = writeln!(
        out,
        "rtlab_build_info{{version=\"{}\",commit=\"{}\"}} 1",
        escape(&totals.version),
        escape(&totals.commit)
    );
    family(&mut out, "rtlab_host", "info", None, "The measured host: its kernel and preemption model.");
    let id = &totals.identity;
    let _ = writeln!(
        out,
        "rtlab_host_info{{hostname=\"{}\",kernel_release=\"{}\",preemption=\"{}\",cmdline_hash=\"{}\"}} 1",
        escape(&id.hostname),
        escape(&id.kernel_release),
        escape(&id.preemption),
        escape(&id.cmdline_hash)
    );
    if flavour == Flavour::OpenMetrics {
        out.push_str("# EOF\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtlab_analysis::{LatencyHistogram, Moments};
    use rtlab_results::history::{HostIdentity, Resolution, WindowMetric, WindowRecord};
    use rtlab_results::monitor::{bucket_index, BucketCounts};

    fn metric(cpu: usize, name: &str, values: &[i64]) -> (WindowMetric, BucketCounts) {
        let mut histogram = LatencyHistogram::new(1_000_000_000).unwrap();
        let mut moments = Moments::new();
        let mut buckets = [0; LATENCY_BUCKETS_NS.len() + 1];
        for &v in values {
            histogram.record(v);
            moments.record(v);
            buckets[bucket_index(v)] += 1;
        }
        let metric = WindowMetric {
            cpu,
            metric: name.into(),
            moments,
            histogram: histogram.encode().unwrap(),
            overruns: 1,
            lost: 0,
        };
        (metric, buckets)
    }

    fn totals() -> MonitorTotals {
        let identity = HostIdentity {
            hostname: "board-\"7\"".into(),
            kernel_release: "6.6.0-rt15".into(),
            preemption: "PREEMPT_RT".into(),
            cmdline_hash: "00112233aabbccdd".into(),
        };
        let mut totals = MonitorTotals::new("0.1.0", "abc1234", identity);
        for (start, values) in [(0i64, vec![800i64, 1_000, 1_500, 45_000]), (60, vec![2_000, 12_000_000])] {
            let parts = [metric(0, "timer.latency", &values), metric(0, "timer.jitter", &values[1..])];
            let record = WindowRecord {
                start_ns: start * 1_000_000_000,
                end_ns: (start + 60) * 1_000_000_000,
                resolution: Resolution::Window,
                merged: 1,
                phase: "idle".into(),
                metrics: parts.iter().map(|p| p.0.clone()).collect(),
                activity: None,
            };
            let buckets: Vec<_> = parts.iter().map(|p| p.1).collect();
            totals.add_window(&record, &buckets);
        }
        totals
    }

    #[test]
    fn exposition() {
        insta::assert_snapshot!(render(&totals(), Flavour::OpenMetrics));
    }

    #[test]
    fn prometheus_text_exposition() {
        insta::assert_snapshot!(render(&totals(), Flavour::PrometheusText));
    }

    #[test]
    fn the_accept_header_chooses_the_flavour() {
        let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(Flavour::for_accept(Some(prometheus)), Flavour::OpenMetrics);
        assert_eq!(Flavour::for_accept(Some("*/*")), Flavour::PrometheusText);
        assert_eq!(Flavour::for_accept(None), Flavour::PrometheusText);
    }

    #[test]
    fn buckets_are_cumulative_and_end_in_the_count() {
        let text = render(&totals(), Flavour::OpenMetrics);
        let counts: Vec<u64> = text
            .lines()
            .filter(|l| l.starts_with("rtlab_latency_seconds_bucket{metric=\"timer.latency\""))
            .map(|l| l.rsplit(' ').next().unwrap().parse().unwrap())
            .collect();
        assert_eq!(counts.len(), LATENCY_BUCKETS_NS.len() + 1);
        assert!(counts.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(*counts.last().unwrap(), 6);
        assert!(text.contains("rtlab_latency_seconds_count{metric=\"timer.latency\",cpu=\"0\"} 6\n"));
        assert!(text.contains("rtlab_window_max_seconds{metric=\"timer.latency\",cpu=\"0\"} 0.012\n"));
        assert!(text.contains("rtlab_overruns_total{metric=\"timer.latency\",cpu=\"0\"} 2\n"));
        assert!(text.ends_with("# EOF\n"));
    }
}
