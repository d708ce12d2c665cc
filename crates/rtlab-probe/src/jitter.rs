//! The jitter probe (Dodiu et al. 2010, Table 1): the timer probe at a list of periods, one
//! after another, each for its share of the budget. Metrics `jitter.jitter` (period jitter
//! |s[i+1] - (s[i] + kT)|, the main metric) and `jitter.latency`, one thread output per
//! period and CPU, each with the detail `period_ns`.
//!
//! Every period's timer probe (histograms, per-second maxima, raw rings) is built by
//! [`JitterProbe::new`], so nothing is allocated between periods. The periods share one
//! [`LiveStats`] per CPU: the progress display shows the period being measured.

use crate::live::LiveStats;
use crate::timer::{period_tag, EndCondition, TimerConfig, TimerProbe};
use crate::{Budget, Detail, Probe, ProbeError, ProbeOutput};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

/// Dodiu's periods (µs): 300, 500, 1000, 2000, 5000, 10000.
pub const DEFAULT_PERIODS_NS: [u64; 6] = [300_000, 500_000, 1_000_000, 2_000_000, 5_000_000, 10_000_000];

/// Prefix of the jitter probe's metrics, thread names and raw files.
const NAME: &str = "jitter";

#[derive(Debug, Clone)]
pub struct JitterConfig {
    pub periods_ns: Vec<u64>,
    /// Shared by the periods (a duration is split equally; a sample count applies to each).
    pub budget: Budget,
    /// Everything else of the timer probe; its `interval_ns`, `end` and `name` are set per
    /// period.
    pub timer: TimerConfig,
}

/// One period, ready to sample.
struct PreparedPeriod {
    period_ns: u64,
    probe: TimerProbe,
}

pub struct JitterProbe {
    periods: Vec<PreparedPeriod>,
    live: Vec<Arc<LiveStats>>,
}

impl JitterProbe {
    /// Validates the periods and builds every period's timer probe.
    pub fn new(config: JitterConfig) -> Result<Self, ProbeError> {
        let JitterConfig { periods_ns, budget, timer } = config;
        if periods_ns.is_empty() {
            return Err(ProbeError::Config("the jitter probe needs at least one period".into()));
        }
        for (i, &p) in periods_ns.iter().enumerate() {
            if p == 0 {
                return Err(ProbeError::Config("a jitter period must be greater than 0".into()));
            }
            // Two equal periods would write one raw file and one thread name twice.
            if periods_ns[..i].contains(&p) {
                return Err(ProbeError::Config(format!("the period {} is given twice", period_tag(p))));
            }
        }
        let live: Vec<Arc<LiveStats>> = timer.cpus.iter().map(|&cpu| Arc::new(LiveStats::new(cpu))).collect();
        let share = budget.share(periods_ns.len());
        let mut periods = Vec::with_capacity(periods_ns.len());
        for &period_ns in &periods_ns {
            let end = match share {
                Budget::Samples(n) => EndCondition::Samples(n),
                Budget::Duration { .. } => EndCondition::Cycles(share.cycles(period_ns)),
            };
            let config = TimerConfig { interval_ns: period_ns, end, name: NAME, ..timer.clone() };
            periods.push(PreparedPeriod { period_ns, probe: TimerProbe::with_live(config, live.clone())? });
        }
        Ok(Self { periods, live })
    }
}

impl Probe for JitterProbe {
    fn name(&self) -> &'static str {
        NAME
    }

    fn live(&self) -> Vec<Arc<LiveStats>> {
        self.live.clone()
    }

    fn run(self: Box<Self>, stop: Arc<AtomicBool>) -> Result<ProbeOutput, ProbeError> {
        let tags: Vec<String> = self.periods.iter().map(|p| period_tag(p.period_ns)).collect();
        let mut output =
            ProbeOutput { probe: NAME.into(), threads: Vec::new(), raw_written: Vec::new(), notes: Vec::new() };
        let mut measured = 0;
        for PreparedPeriod { period_ns, probe } in self.periods {
            if stop.load(Relaxed) {
                break;
            }
            let period = Box::new(probe).run(stop.clone())?;
            let tag = period_tag(period_ns);
            for mut thread in period.threads {
                thread.thread_name = format!("{NAME}/{tag}/{}", thread.cpu);
                thread.details.push(("period_ns".into(), Detail::Int(i64::try_from(period_ns).unwrap_or(i64::MAX))));
                output.threads.push(thread);
            }
            output.raw_written.extend(period.raw_written);
            for note in period.notes {
                if !output.notes.contains(&note) {
                    output.notes.push(note);
                }
            }
            measured += 1;
        }
        if measured < tags.len() {
            output.notes.push(format!(
                "stopped early: {measured} of {} periods measured; not measured: {}",
                tags.len(),
                tags[measured..].join(", ")
            ));
        }
        Ok(output)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ClockKind, ThreadSetup};

    fn config(periods_ns: Vec<u64>, budget: Budget, cpus: Vec<usize>) -> JitterConfig {
        JitterConfig {
            periods_ns,
            budget,
            timer: TimerConfig {
                cpus,
                interval_ns: 1,
                warmup: 0,
                end: EndCondition::Samples(1),
                histogram_max_ns: 1_000_000_000,
                raw_dir: None,
                raw_ring_capacity: 16,
                clock: ClockKind::simulated(7),
                setup: ThreadSetup::unchanged(),
                name: "timer",
                split_tap: None,
            },
        }
    }

    fn detail_period(t: &crate::ThreadOutput) -> i64 {
        match t.details.iter().find(|(k, _)| k == "period_ns") {
            Some((_, Detail::Int(v))) => *v,
            other => panic!("period_ns detail missing: {other:?}"),
        }
    }

    #[test]
    fn each_period_takes_its_share_of_a_duration() {
        let periods = vec![300_000, 1_000_000, 10_000_000];
        let cfg = config(periods.clone(), Budget::Duration { ns: 3_000_000_000 }, vec![0, 1]);
        let output = Box::new(JitterProbe::new(cfg).unwrap()).run(Arc::new(AtomicBool::new(false))).unwrap();
        assert_eq!(output.probe, "jitter");
        assert_eq!(output.threads.len(), 6, "one thread output per period and CPU");
        assert!(output.notes.is_empty());
        for (i, t) in output.threads.iter().enumerate() {
            let period = periods[i / 2];
            assert_eq!(t.cpu, i % 2);
            assert_eq!(t.interval_ns, period);
            assert_eq!(detail_period(t), period as i64);
            assert_eq!(t.thread_name, format!("jitter/{}/{}", period_tag(period), t.cpu));
            assert_eq!(t.cycles, 1_000_000_000 / period, "share / period");
            assert_eq!(t.metrics[0].metric, "jitter.latency");
            assert_eq!(t.metrics[1].metric, "jitter.jitter");
            assert_eq!(t.metrics[0].moments.count + t.overruns, t.cycles);
            assert!(!t.interrupted);
        }
    }

    #[test]
    fn a_sample_count_applies_to_each_period() {
        let cfg = config(vec![500_000, 2_000_000], Budget::Samples(300), vec![0]);
        let output = Box::new(JitterProbe::new(cfg).unwrap()).run(Arc::new(AtomicBool::new(false))).unwrap();
        assert_eq!(output.threads.len(), 2);
        for t in &output.threads {
            assert_eq!(t.metrics[0].moments.count, 300);
            assert_eq!(t.metrics[1].moments.count, 299);
        }
    }

    #[test]
    fn the_periods_share_the_progress_counters() {
        let probe = JitterProbe::new(config(vec![500_000, 2_000_000], Budget::Samples(10), vec![0, 1])).unwrap();
        let live = probe.live();
        assert_eq!(live.len(), 2);
        for period in &probe.periods {
            let period_live = period.probe.live();
            assert!(live.iter().zip(&period_live).all(|(a, b)| Arc::ptr_eq(a, b)));
        }
    }

    #[test]
    fn a_stop_before_the_start_measures_nothing_and_says_so() {
        let cfg = config(vec![500_000, 2_000_000], Budget::Samples(10), vec![0]);
        let output = Box::new(JitterProbe::new(cfg).unwrap()).run(Arc::new(AtomicBool::new(true))).unwrap();
        assert!(output.threads.is_empty());
        assert_eq!(output.notes.len(), 1);
        assert!(output.notes[0].contains("0 of 2 periods"), "{:?}", output.notes);
    }

    #[test]
    fn invalid_periods_are_rejected() {
        for periods in [vec![], vec![0], vec![1_000_000, 1_000_000]] {
            assert!(matches!(
                JitterProbe::new(config(periods.clone(), Budget::Samples(1), vec![0])),
                Err(ProbeError::Config(_))
            ));
        }
    }
}
