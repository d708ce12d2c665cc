//! Measurements of one metric grouped by what the probe varied from one step to the next:
//! the `jitter` probe's task period (detail `period_ns`), the `sweep` probe's stimulus rate
//! (detail `rate_hz`). The digest merges the steps into one overall distribution; the
//! papers' tables (Dodiu et al., Tables 1 and 2) and their charts keep them apart.

use crate::digest::{combine, Combined};
use crate::ReportError;
use rtlab_results::run::{detail_f64, detail_i64, Measurement, RunResult, Setting};

/// The jitter probe's main metric, tabulated per period.
pub const JITTER_METRIC: &str = "jitter.jitter";
/// The sweep probe's main metric, tabulated per stimulus rate.
pub const SWEEP_METRIC: &str = "sweep.latency";
/// Ids of the tables that get a chart beside them in the HTML report.
pub const JITTER_TABLE: &str = "jitter-per-period";
pub const SWEEP_TABLE: &str = "sweep-per-rate";

/// The measurements of one step (every CPU of one period or rate), combined.
#[derive(Debug, Clone)]
pub struct Step {
    /// ns for a period, Hz for a rate.
    pub value: f64,
    pub combined: Combined,
}

/// The measurements (of one metric in one configuration) grouped by `setting`, in
/// ascending order of the setting, each group's CPUs combined.
pub fn steps(measurements: &[&Measurement], setting: Setting) -> Result<Vec<Step>, ReportError> {
    let mut groups: Vec<(f64, Vec<&Measurement>)> = Vec::new();
    for m in measurements {
        let value = setting.of(m);
        match groups.iter_mut().find(|(v, _)| setting.same(*v, value)) {
            Some((_, group)) => group.push(m),
            None => groups.push((value, vec![m])),
        }
    }
    groups.sort_by(|a, b| a.0.total_cmp(&b.0));
    groups.into_iter().map(|(value, group)| Ok(Step { value, combined: combine(&group)? })).collect()
}

/// The steps of `measurements` in the order they were measured (first seen), for drawing
/// them one after another in time: (setting, measurements of that step). Measurements
/// without a period or rate detail form one step.
pub fn in_measured_order<'a>(measurements: &[&'a Measurement]) -> Vec<Vec<&'a Measurement>> {
    let key = |m: &Measurement| -> Option<f64> {
        detail_i64(m, "period_ns").map(|p| p as f64).or_else(|| detail_f64(m, "rate_hz"))
    };
    let mut groups: Vec<(Option<f64>, Vec<&Measurement>)> = Vec::new();
    for m in measurements {
        let k = key(m);
        let same = |g: &Option<f64>| match (g, k) {
            (Some(a), Some(b)) => (a - b).abs() < 1e-3,
            (None, None) => true,
            _ => false,
        };
        match groups.iter_mut().find(|(g, _)| same(g)) {
            Some((_, group)) => group.push(m),
            None => groups.push((k, vec![m])),
        }
    }
    groups.into_iter().map(|(_, g)| g).collect()
}

/// Seconds one metric was measured in a scenario that lasted `scenario_s`: the scenario's
/// duration, unless the run measured several probes (one after another) or the metric
/// several steps; then the metric's own window, the sum over its steps of the longest
/// `cycles × interval_ns` (the periods due, or the stimuli sent, in the measured window).
pub fn metric_window_s(run: &RunResult, scenario_s: f64, measurements: &[&Measurement]) -> f64 {
    let steps = in_measured_order(measurements);
    if run.experiment.probes.len() <= 1 && steps.len() <= 1 {
        return scenario_s;
    }
    let window: f64 = steps
        .iter()
        .map(|step| step.iter().map(|m| m.cycles as f64 * m.interval_ns as f64 / 1e9).fold(0.0, f64::max))
        .sum();
    if window > 0.0 {
        window
    } else {
        scenario_s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtlab_results::run::{detail_text, Detail};

    fn base() -> Measurement {
        let run: RunResult = serde_json::from_str(include_str!("../tests/fixtures/simulated-2cpu.run.json")).unwrap();
        run.measurements[0].clone()
    }

    fn with(cpu: usize, interval_ns: u64, details: &[(&str, Detail)]) -> Measurement {
        let mut m = base();
        m.cpu = cpu;
        m.interval_ns = interval_ns;
        m.details = details.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
        m
    }

    #[test]
    fn periods_group_the_cpus_in_ascending_order() {
        let a = with(0, 1_000_000, &[("period_ns", Detail::Int(1_000_000))]);
        let b = with(0, 300_000, &[("period_ns", Detail::Int(300_000))]);
        let c = with(1, 1_000_000, &[("period_ns", Detail::Int(1_000_000))]);
        let steps = steps(&[&a, &b, &c], Setting::Period).unwrap();
        let values: Vec<f64> = steps.iter().map(|s| s.value).collect();
        assert_eq!(values, [300_000.0, 1_000_000.0]);
        assert_eq!(steps[1].combined.row.count, a.count + c.count);
        assert_eq!(Setting::Period.label(300_000.0), "300");
        assert_eq!(Setting::Period.raw(300_000.0), "300000");
    }

    #[test]
    fn rates_come_from_the_detail_or_the_interval() {
        let detail = with(0, 2_000_000, &[("rate_hz", Detail::Float(500.0))]);
        let interval = with(1, 2_000_000, &[]);
        let steps = steps(&[&detail, &interval], Setting::Rate).unwrap();
        assert_eq!(steps.len(), 1, "500 Hz either way");
        assert_eq!(Setting::Rate.label(12.5), "12.5");
        assert_eq!(Setting::Rate.label(8000.0), "8000");
    }

    #[test]
    fn measured_order_keeps_the_first_seen_step_first() {
        let a = with(0, 500_000, &[("period_ns", Detail::Int(500_000))]);
        let b = with(0, 300_000, &[("period_ns", Detail::Int(300_000))]);
        let c = with(1, 500_000, &[("period_ns", Detail::Int(500_000))]);
        let order = in_measured_order(&[&a, &b, &c]);
        assert_eq!(order.len(), 2);
        assert_eq!(order[0].len(), 2);
        assert_eq!(detail_i64(order[1][0], "period_ns"), Some(300_000));
        let plain = base();
        assert_eq!(in_measured_order(&[&plain, &plain]).len(), 1);
        assert_eq!(detail_text(&a, "period_ns"), None);
        assert_eq!(detail_f64(&a, "period_ns"), Some(500_000.0));
    }
}
