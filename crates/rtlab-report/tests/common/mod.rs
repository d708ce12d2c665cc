//! A run of every new probe (jitter, sleep, net, ipc:futex, ipc:eventfd, switch, sweep over
//! net), derived from the two-scenario fixture (`simulated-two-scenarios.run.json`: an
//! unloaded and a loaded scenario) by replacing its measurements with synthetic ones that
//! follow run.json's conventions for those probes (thread names, details, sequence_ns,
//! interval_ns, cycles = count + overruns). The samples come from a fixed-seed generator:
//! the same run every time. `tests/fixtures/derived-probes.run.json` is this run saved
//! (a test checks that it is; `RTLAB_UPDATE_FIXTURES=1` rewrites it), so that it can be
//! given to `rtlab report` by hand.

#![allow(dead_code)]

use rtlab_analysis::{LatencyHistogram, Moments, Summary};
use rtlab_results::run::{Detail, Measurement, RunResult};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub fn fixture_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

pub const DERIVED: &str = "derived-probes.run.json";

/// xorshift64*: small, deterministic, good enough for shaping test data.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Exponential with this mean.
    pub fn exp(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.unit()).ln()
    }

    /// A latency-like sample: `base` plus exponential noise, and now and then (`spike_p`) a
    /// spike between `spike_lo` and `spike_hi`, as a VM's hypervisor makes them.
    pub fn latency(&mut self, base: f64, noise: f64, spike_p: f64, (spike_lo, spike_hi): (f64, f64)) -> i64 {
        let v =
            if self.unit() < spike_p { spike_lo + self.unit() * (spike_hi - spike_lo) } else { base + self.exp(noise) };
        v.round() as i64
    }
}

/// Everything a measurement of a probe thread says besides its samples.
pub struct Thread<'a> {
    pub scenario: &'a str,
    pub probe: &'a str,
    pub metric: &'a str,
    pub thread: String,
    pub cpu: usize,
    pub interval_ns: u64,
    pub overruns: u64,
    pub details: Vec<(&'a str, Detail)>,
    pub keep_sequence: bool,
}

/// A measurement of `values` (taken one per `interval_ns`), built on `base` for the fields
/// the probes do not change: histogram, moments, summary and per-second maxima computed.
pub fn measurement(base: &Measurement, max_ns: u64, t: Thread, values: &[i64]) -> Measurement {
    let mut h = LatencyHistogram::new(max_ns).unwrap();
    let mut moments = Moments::new();
    let mut per_second: Vec<Option<i64>> = Vec::new();
    for (i, &v) in values.iter().enumerate() {
        h.record(v);
        moments.record(v);
        let second = (i as u128 * t.interval_ns as u128 / 1_000_000_000) as usize;
        if per_second.len() <= second {
            per_second.resize(second + 1, None);
        }
        let slot = &mut per_second[second];
        *slot = Some(slot.map_or(v, |m: i64| m.max(v)));
    }
    let mut m = base.clone();
    m.scenario = t.scenario.to_string();
    m.probe = t.probe.to_string();
    m.metric = t.metric.to_string();
    m.thread = t.thread;
    m.cpu = t.cpu;
    m.count = moments.count;
    m.cycles = moments.count + t.overruns;
    m.overruns = t.overruns;
    m.lost = 0;
    m.interval_ns = t.interval_ns;
    m.summary = Summary::from_parts(&h, &moments);
    m.moments = moments;
    m.histogram = h.encode().unwrap();
    m.per_second_max_ns = per_second;
    m.block_s = 1;
    m.raw_file = None;
    m.raw_samples = None;
    m.details = t.details.into_iter().map(|(k, v)| (k.to_string(), v)).collect::<BTreeMap<_, _>>();
    m.sequence_ns = t.keep_sequence.then(|| values.to_vec());
    m
}

pub const PERIODS_NS: [u64; 6] = [300_000, 500_000, 1_000_000, 2_000_000, 5_000_000, 10_000_000];
pub const SWEEP_RATES_HZ: [f64; 6] = [500.0, 800.0, 1_000.0, 5_000.0, 8_000.0, 10_000.0];
pub const PROBES: [&str; 7] = ["jitter", "sleep", "net", "ipc:futex", "ipc:eventfd", "switch", "sweep"];

/// The run of every new probe, two scenarios (unloaded, loaded).
pub fn derived_probes_run() -> RunResult {
    let mut run = RunResult::load(&fixture_path("simulated-two-scenarios.run.json")).expect("the fixture loads");
    let base = run.measurements[0].clone();
    let max_ns = run.experiment.histogram_max_ns;
    run.label = "probes".into();
    run.command_line = ["rtlab", "run", "--probe", "jitter,sleep,net,ipc:futex,ipc:eventfd,switch,sweep"]
        .iter()
        .map(|s| s.to_string())
        .chain(["--load", "idle,cpu:threads=1+proc-read", "--label", "probes"].iter().map(|s| s.to_string()))
        .collect();
    let e = &mut run.experiment;
    e.probes = PROBES.iter().map(|p| p.to_string()).collect();
    e.samples_per_cpu = None;
    e.duration_ns = Some(60_000_000_000);
    let s = &mut e.probe_settings;
    s.periods_ns = PERIODS_NS.to_vec();
    s.sleep_ns = 50_000_000;
    s.sleep_discarded = 2;
    s.rates_hz = [("net", 20.0), ("ipc:futex", 1000.0), ("ipc:eventfd", 1000.0), ("switch", 1000.0)]
        .iter()
        .map(|(k, v)| (k.to_string(), *v))
        .collect();
    s.sweep_of = "net".into();
    s.sweep_rates_hz = SWEEP_RATES_HZ.to_vec();
    s.receiver_cpu = 0;
    s.trigger_cpu = 1;
    s.trigger_priority = 94;
    let scenarios: Vec<(String, bool)> = run.scenarios.iter().map(|s| (s.name.clone(), s.is_loaded())).collect();
    for scenario in &mut run.scenarios {
        scenario.duration_s = 60.2;
    }
    run.duration_s = 120.4;
    let mut out = Vec::new();
    for (index, (scenario, loaded)) in scenarios.iter().enumerate() {
        let mut rng = Rng::new(0x5EED + index as u64 * 7919);
        let load = if *loaded { 2.0 } else { 1.0 };
        let s = scenario.as_str();
        let mk = |t: Thread, v: &[i64]| measurement(&base, max_ns, t, v);

        // jitter: each period for 1 s per CPU; period jitter and wake-up latency.
        for period in PERIODS_NS {
            for cpu in [0usize, 1] {
                let n = (1_000_000_000 / period) as usize;
                let overruns = if *loaded && period == 300_000 { 3 } else { 0 };
                let spike_hi = 60_000.0 * load + 40_000_000_000.0 / period as f64;
                let jitter: Vec<i64> =
                    (0..n).map(|_| rng.latency(400.0, 1_200.0 * load, 0.004, (15_000.0, spike_hi))).collect();
                let latency: Vec<i64> =
                    (0..n).map(|_| rng.latency(2_000.0, 1_500.0 * load, 0.004, (20_000.0, spike_hi))).collect();
                let thread = format!("jitter/{}us/{cpu}", period / 1000);
                let details = || vec![("period_ns", Detail::Int(period as i64))];
                for (metric, values) in [("jitter.jitter", &jitter), ("jitter.latency", &latency)] {
                    let t = Thread {
                        scenario: s,
                        probe: "jitter",
                        metric,
                        thread: thread.clone(),
                        cpu,
                        interval_ns: period,
                        overruns,
                        details: details(),
                        keep_sequence: false,
                    };
                    out.push(mk(t, values));
                }
            }
        }

        // sleep: 1000 taken, 2 discarded, 998 recorded, every one kept in order.
        out.push(sleep_measurement(&base, max_ns, s, &mut rng, load, SleepTask::Fifo));

        // net at 20 Hz for 10 s: delivery + activation = send to task running.
        let n = 200;
        let delivery: Vec<i64> =
            (0..n).map(|_| rng.latency(15_000.0, 5_000.0 * load, 0.01, (60_000.0, 200_000.0))).collect();
        let activation: Vec<i64> =
            (0..n).map(|_| rng.latency(3_000.0, 2_000.0 * load, 0.01, (50_000.0, 4_000_000.0))).collect();
        let latency: Vec<i64> = delivery.iter().zip(&activation).map(|(d, a)| d + a).collect();
        let lost = if *loaded { 2 } else { 0 };
        for (metric, values) in
            [("net.activation", &activation), ("net.delivery", &delivery), ("net.latency", &latency)]
        {
            out.push(mk(
                Thread {
                    scenario: s,
                    probe: "net",
                    metric,
                    thread: "net/receiver".into(),
                    cpu: 0,
                    interval_ns: 50_000_000,
                    overruns: lost,
                    details: vec![
                        ("rate_hz", Detail::Float(20.0)),
                        ("trigger_cpu", Detail::Int(1)),
                        ("timestamping", Detail::Text("software (SO_TIMESTAMPNS)".into())),
                        ("address", Detail::Text("127.0.0.1:47001".into())),
                    ],
                    keep_sequence: false,
                },
                values,
            ));
        }

        // ipc: futex and eventfd at 1 kHz for 2 s, trigger on CPU 1.
        for (mechanism, base_ns) in [("futex", 4_000.0), ("eventfd", 6_000.0)] {
            let values: Vec<i64> =
                (0..2000).map(|_| rng.latency(base_ns, 2_000.0 * load, 0.003, (40_000.0, 3_000_000.0))).collect();
            let probe = format!("ipc:{mechanism}");
            let metric = format!("{probe}.latency");
            out.push(mk(
                Thread {
                    scenario: s,
                    probe: &probe,
                    metric: &metric,
                    thread: format!("{probe}/receiver"),
                    cpu: 0,
                    interval_ns: 1_000_000,
                    overruns: if *loaded { 1 } else { 0 },
                    details: vec![
                        ("mechanism", Detail::Text(mechanism.into())),
                        ("rate_hz", Detail::Float(1000.0)),
                        ("trigger_cpu", Detail::Int(1)),
                    ],
                    keep_sequence: false,
                },
                &values,
            ));
        }

        // switch: futex and semaphore variants, 2000 samples each, plus the burst figure.
        for (variant, base_ns, total) in [("futex", 1_500.0, 12_345_678i64), ("sem", 1_800.0, 14_210_987)] {
            let values: Vec<i64> =
                (0..2000).map(|_| rng.latency(base_ns, 800.0 * load, 0.002, (20_000.0, 2_000_000.0))).collect();
            let total = (total as f64 * (0.9 + 0.1 * load)) as i64;
            out.push(mk(
                Thread {
                    scenario: s,
                    probe: "switch",
                    metric: &format!("switch.{variant}"),
                    thread: format!("switch/{variant}"),
                    cpu: 0,
                    interval_ns: 1_000_000,
                    overruns: 0,
                    details: vec![
                        ("variant", Detail::Text(variant.into())),
                        ("burst_switches", Detail::Int(10_000)),
                        ("burst_total_ns", Detail::Int(total)),
                        ("burst_per_switch_ns", Detail::Float(total as f64 / 10_000.0)),
                    ],
                    keep_sequence: false,
                },
                &values,
            ));
        }

        // sweep over net: each rate for 0.5 s; latency plus delivery and activation.
        for rate in SWEEP_RATES_HZ {
            let n = (rate * 0.5) as usize;
            let busy = 1.0 + rate / 20_000.0;
            let delivery: Vec<i64> =
                (0..n).map(|_| rng.latency(14_000.0, 4_000.0 * load * busy, 0.003, (50_000.0, 150_000.0))).collect();
            let activation: Vec<i64> =
                (0..n).map(|_| rng.latency(3_000.0, 1_500.0 * load * busy, 0.003, (30_000.0, 3_000_000.0))).collect();
            let latency: Vec<i64> = delivery.iter().zip(&activation).map(|(d, a)| d + a).collect();
            let missed = if *loaded && rate >= 5_000.0 { (rate / 1000.0) as u64 } else { 0 };
            for (metric, values) in
                [("sweep.latency", &latency), ("sweep.delivery", &delivery), ("sweep.activation", &activation)]
            {
                out.push(mk(
                    Thread {
                        scenario: s,
                        probe: "sweep",
                        metric,
                        thread: format!("sweep/net@{rate}Hz"),
                        cpu: 0,
                        interval_ns: (1e9 / rate) as u64,
                        overruns: missed,
                        details: vec![("rate_hz", Detail::Float(rate)), ("stimulus", Detail::Text("net".into()))],
                        keep_sequence: false,
                    },
                    values,
                ));
            }
        }
    }
    run.measurements = out;
    run.check().expect("the derived run is consistent");
    run
}

/// How the sleep probe's task was scheduled.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum SleepTask {
    /// SCHED_FIFO at the maximum priority (the paper's set-up): timer slack does not apply.
    Fifo,
    /// `--policy other`: the default 50 µs timer slack delays every wake-up.
    Other,
}

pub fn sleep_measurement(
    base: &Measurement,
    max_ns: u64,
    scenario: &str,
    rng: &mut Rng,
    load: f64,
    task: SleepTask,
) -> Measurement {
    let (typical, slack) = match task {
        SleepTask::Fifo => (8_000.0, 1),
        SleepTask::Other => (58_000.0, 50_000),
    };
    let overshoot: Vec<i64> =
        (0..998).map(|_| rng.latency(typical, 4_000.0 * load, 0.006 * load, (1_000_000.0, 5_000_000.0))).collect();
    measurement(
        base,
        max_ns,
        Thread {
            scenario,
            probe: "sleep",
            metric: "sleep.overshoot",
            thread: "sleep/0".into(),
            cpu: 0,
            interval_ns: 50_000_000,
            overruns: 0,
            details: vec![
                ("requested_ns", Detail::Int(50_000_000)),
                ("discarded", Detail::Int(2)),
                ("timer_slack_ns", Detail::Int(slack)),
            ],
            keep_sequence: true,
        },
        &overshoot,
    )
}

/// The sleep probe alone as an ordinary task (`rtlab run --probe sleep --policy other`),
/// where the timer slack shows in every sample.
pub fn sleep_other_run() -> RunResult {
    let mut run = only(derived_probes_run(), &["sleep"], "sleep-other");
    run.realtime.policy = rtlab_results::host::Policy::Other;
    run.realtime.priority = 0;
    run.experiment.policy = rtlab_results::host::Policy::Other;
    let max_ns = run.experiment.histogram_max_ns;
    let mut rng = Rng::new(0x51EE9);
    for m in &mut run.measurements {
        let load = if m.scenario == "idle" { 1.0 } else { 2.0 };
        *m = sleep_measurement(m, max_ns, &m.scenario.clone(), &mut rng, load, SleepTask::Other);
    }
    run.check().expect("the sleep-other run is consistent");
    run
}

/// Only the measurements of `probes`, as a run of those probes alone would hold them.
pub fn only(mut run: RunResult, probes: &[&str], label: &str) -> RunResult {
    run.label = label.into();
    run.experiment.probes = probes.iter().map(|p| p.to_string()).collect();
    run.measurements.retain(|m| probes.contains(&m.probe.as_str()));
    run.check().expect("a subset is consistent");
    run
}
