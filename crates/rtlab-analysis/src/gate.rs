//! The bisect gate (`rtlab gate`, `rtlab run --gate`): is a candidate worse than a baseline
//! beyond a tolerance, with 95 % confidence, in the statistics given? The answer is in
//! `git bisect run`'s exit codes: 0 good, 1 bad, 125 skip (cannot be judged). docs/gate.md.
//!
//! Per statistic (a percentile or the max of one metric in one scenario, all CPUs
//! together), candidate − baseline gets the 95 % interval of [`crate::compare`]'s bootstrap
//! with the seeds `rtlab compare BASELINE CANDIDATE` uses ([`crate::compare::seed_for`]),
//! so its "Is B better than A?" table shows the same interval. The tolerance is an
//! allowance: 10 % of the baseline's value by default, or a time. The candidate is *worse*
//! when the interval's low end lies above the allowance: the candidate exceeds the baseline
//! by more than the tolerance with at least 95 % confidence (97.5 % one-sided). Otherwise it
//! is *not worse*: shown so when the whole interval lies within the allowance, "not shown
//! worse" when the interval straddles it (a longer run narrows it). Both answer good: the
//! gate says bad only on evidence.
//!
//! Before any interval, whether a statistic can be judged at all: it needs enough samples
//! (10 above a percentile: [`crate::exceedance::samples_for_support`]; a max as many as a
//! p99.9), and it must not be censored (a lower bound: the source clipped the samples it
//! falls among, [`crate::censored`], or the histogram's ceiling did). A run is judged only
//! when it was not disturbed ([`RunConditions`]): not interrupted, every load running to
//! the end, steal and RT throttling within their limits, measured with the same real-time
//! conditions as the baseline.
//!
//! A baseline that fails these checks cannot serve ([`baseline_problems`]): bad input, not
//! a judgement of any candidate.

use crate::censored::{Censoring, Figure};
use crate::compare::{bootstrap_quantile, difference, QuantileDifference, CONFIDENCE, REPLICATES};
use crate::requirement::{parse_statistic, Statistic};
use crate::units::{format_us, thousands};
use crate::{nearest_rank, percentile, LatencyHistogram};
use serde::Serialize;

/// `git bisect run`: this commit is good.
pub const EXIT_GOOD: u8 = 0;
/// `git bisect run`: this commit is bad (any of 1..=127 but 125).
pub const EXIT_BAD: u8 = 1;
/// `git bisect run`: this commit cannot be tested; skip it.
pub const EXIT_SKIP: u8 = 125;

/// The statistics judged without `--stat`.
pub const DEFAULT_STATISTICS: [Statistic; 2] = [Statistic::Percentile(99.9), Statistic::Max];
/// `--tolerance` without the flag: 10 % of the baseline's value.
pub const DEFAULT_TOLERANCE: Tolerance = Tolerance::Relative(0.10);
/// `--max-steal` without the flag: 5 % of a measured CPU's time taken by the hypervisor.
pub const DEFAULT_MAX_STEAL: f64 = 0.05;
/// `--max-throttling` without the flag: 1 % of a CPU's time stopped by RT throttling.
pub const DEFAULT_MAX_THROTTLING: f64 = 0.01;
/// A max is judged on as many samples as this quantile needs: a max of fewer samples than
/// a p99.9 rests on says little about the tail.
pub const MAX_SUPPORT_QUANTILE: f64 = 0.999;

/// How much worse than the baseline a candidate may be before it counts as worse.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Tolerance {
    /// A fraction of the baseline's value (0.1: 10 %).
    Relative(f64),
    /// A time, ns.
    Absolute(i64),
}

impl Tolerance {
    /// `10%`, a fraction (`0.1`), or a time with its unit (`50us`).
    pub fn parse(text: &str) -> Result<Tolerance, String> {
        let t = text.trim();
        let bad = || format!("tolerance {text:?}: give a percentage (10%), a fraction (0.1) or a time (50us)");
        if let Some(percent) = t.strip_suffix('%') {
            let p: f64 = percent.trim().parse().map_err(|_| bad())?;
            return Tolerance::relative(p / 100.0).ok_or_else(bad);
        }
        if let Ok(fraction) = t.parse::<f64>() {
            return Tolerance::relative(fraction).ok_or_else(bad);
        }
        let ns = crate::units::parse_time_ns(t).map_err(|_| bad())?;
        i64::try_from(ns).map(Tolerance::Absolute).map_err(|_| bad())
    }

    fn relative(fraction: f64) -> Option<Tolerance> {
        (fraction.is_finite() && fraction >= 0.0).then_some(Tolerance::Relative(fraction))
    }

    /// The allowance over a baseline value, ns: how far above it the candidate may lie.
    pub fn allowance_ns(&self, baseline_ns: i64) -> i64 {
        match *self {
            Tolerance::Relative(f) => (f * baseline_ns.unsigned_abs() as f64).round() as i64,
            Tolerance::Absolute(ns) => ns,
        }
    }

    /// "10 %", "50.0 µs".
    pub fn text(&self) -> String {
        match *self {
            Tolerance::Relative(f) => format!("{} %", trim_number(f * 100.0)),
            Tolerance::Absolute(ns) => format!("{} µs", format_us(ns)),
        }
    }
}

/// "10", "2.5", "0.25": a number without trailing zeros.
fn trim_number(value: f64) -> String {
    let text = format!("{value:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A limit given as a share of time: `5%` or a fraction `0.05`.
pub fn parse_share(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let bad = || format!("{text:?}: give a percentage (5%) or a fraction (0.05) from 0 to 1");
    let value = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map_err(|_| bad())? / 100.0,
        None => t.parse::<f64>().map_err(|_| bad())?,
    };
    (value.is_finite() && (0.0..=1.0).contains(&value)).then_some(value).ok_or_else(bad)
}

/// `--stat`: statistics separated by commas, each `max` or a percentile `pNN[.N]`.
pub fn parse_statistics(text: &str) -> Result<Vec<Statistic>, String> {
    let mut out = Vec::new();
    for part in text.split(',').map(|p| p.trim().to_ascii_lowercase()) {
        let statistic = parse_statistic(&part)?;
        if !matches!(statistic, Statistic::Max | Statistic::Percentile(_)) {
            return Err(format!(
                "statistic {part:?}: the gate judges max and percentiles (pNN[.N]), whose differences the bootstrap \
                 of `rtlab compare` gives"
            ));
        }
        if !out.contains(&statistic) {
            out.push(statistic);
        }
    }
    Ok(out)
}

/// The quantile a gate statistic is: 1 for the max. To nine decimals, as `nearest_rank`
/// takes it, so that p99.9 is compare's 0.999 exactly (not 99.9 / 100).
fn quantile_of(statistic: Statistic) -> f64 {
    statistic.quantile().map_or(1.0, |q| (q * 1e9).round() / 1e9)
}

/// Samples a statistic needs to be judged ([`crate::exceedance::samples_for_support`]).
pub fn samples_needed(statistic: Statistic) -> u64 {
    let q = match statistic {
        Statistic::Percentile(p) => p / 100.0,
        _ => MAX_SUPPORT_QUANTILE,
    };
    crate::exceedance::samples_for_support(q)
}

/// One metric of one scenario of a run, all CPUs together: what a statistic is judged on.
#[derive(Debug, Clone, Copy)]
pub struct Series<'a> {
    pub histogram: &'a LatencyHistogram,
    /// What the source clipped, if anything (run.json `summary.censored`, merged).
    pub censoring: Option<&'a Censoring>,
}

impl Series<'_> {
    /// Why `statistic` of this series cannot be judged: too few samples, or censored.
    pub fn problem(&self, statistic: Statistic) -> Option<String> {
        let n = self.histogram.count();
        let needed = samples_needed(statistic);
        if n < needed {
            let what = match statistic {
                Statistic::Max => "a max is judged on as many as a p99.9 needs".to_string(),
                _ => format!("a {statistic} needs {} (10 above it)", thousands(needed)),
            };
            return Some(format!("{} samples; {what}", thousands(n)));
        }
        self.censored(statistic)
    }

    /// Why the statistic is a lower bound, if it is one: it falls among samples above the
    /// histogram's ceiling, or among samples the source clipped.
    fn censored(&self, statistic: Statistic) -> Option<String> {
        let q = quantile_of(statistic);
        let n = self.histogram.count();
        let clamped = self.histogram.above_max();
        if clamped > 0 && nearest_rank(q, n) > n - clamped.min(n) {
            return Some(format!(
                "censored: the {statistic} falls among {} samples above the histogram's ceiling of {} µs (a lower bound)",
                thousands(clamped),
                format_us(self.histogram.highest_trackable() as i64)
            ));
        }
        let c = self.censoring?;
        let value = percentile(self.histogram, q)?;
        let max = percentile(self.histogram, 1.0)?;
        let figure = match statistic {
            Statistic::Max => Figure::Max,
            _ => Figure::Quantile(q),
        };
        c.lower_bound_of(figure, value, max).map(|bound| {
            format!(
                "censored: the {statistic} is at least {} µs; the source clipped {} samples above {} µs",
                format_us(bound),
                thousands(c.count),
                format_us(c.above_ns)
            )
        })
    }
}

/// Why a baseline cannot serve for these statistics: each statistic it cannot be judged
/// on, with the scenario. Empty when it can.
pub fn baseline_problems(scenario: &str, series: &Series, statistics: &[Statistic]) -> Vec<String> {
    statistics
        .iter()
        .filter_map(|s| series.problem(*s).map(|why| format!("scenario {scenario:?}, {s}: {why}")))
        .collect()
}

/// Per statistic: the decision.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "decision", content = "reason")]
pub enum Decision {
    /// The interval's low end lies above the allowance.
    Worse,
    /// The whole interval lies within the allowance.
    NotWorse,
    /// The interval straddles the allowance: no evidence that it is worse beyond the
    /// tolerance, nor that it is not.
    NotShownWorse,
    /// The statistic cannot be judged in the candidate, and why.
    CannotJudge(String),
}

impl Decision {
    /// The words of the decision: "worse", "not worse", "not shown worse", "cannot judge".
    pub fn word(&self) -> &'static str {
        match self {
            Decision::Worse => "worse",
            Decision::NotWorse => "not worse",
            Decision::NotShownWorse => "not shown worse",
            Decision::CannotJudge(_) => "cannot judge",
        }
    }
}

/// One statistic of one scenario, judged.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StatisticJudgement {
    pub scenario: String,
    pub metric: String,
    pub statistic: Statistic,
    /// The baseline's and the candidate's value (merged histogram), ns.
    pub baseline_ns: Option<i64>,
    pub candidate_ns: Option<i64>,
    /// candidate − baseline with its interval (None when not judged).
    pub difference: Option<QuantileDifference>,
    /// How far above the baseline the candidate may lie, ns.
    pub allowance_ns: i64,
    pub decision: Decision,
}

impl StatisticJudgement {
    /// candidate / baseline; None unless both are known and the baseline is above 0.
    pub fn ratio(&self) -> Option<f64> {
        match (self.baseline_ns, self.candidate_ns) {
            (Some(b), Some(c)) if b > 0 => Some(c as f64 / b as f64),
            _ => None,
        }
    }
}

/// What the gate compares: the configuration indices that `rtlab compare BASELINE
/// CANDIDATE` gives these two scenarios, for its seeds.
#[derive(Debug, Clone, Copy)]
pub struct Indices {
    pub baseline: usize,
    pub candidate: usize,
}

/// Judges one statistic of the candidate against the baseline (which
/// [`baseline_problems`] has passed).
pub fn judge_statistic(
    scenario: &str,
    metric: &str,
    statistic: Statistic,
    baseline: &Series,
    candidate: &Series,
    tolerance: Tolerance,
    indices: Indices,
) -> StatisticJudgement {
    let q = quantile_of(statistic);
    let baseline_ns = percentile(baseline.histogram, q);
    let allowance_ns = baseline_ns.map_or(0, |b| tolerance.allowance_ns(b));
    let mut judgement = StatisticJudgement {
        scenario: scenario.to_string(),
        metric: metric.to_string(),
        statistic,
        baseline_ns,
        candidate_ns: percentile(candidate.histogram, q),
        difference: None,
        allowance_ns,
        decision: Decision::CannotJudge(String::new()),
    };
    if let Some(why) = candidate.problem(statistic) {
        judgement.decision = Decision::CannotJudge(why);
        return judgement;
    }
    let a = bootstrap_quantile(baseline.histogram, q, REPLICATES, crate::compare::seed_for(indices.baseline, q));
    let b = bootstrap_quantile(candidate.histogram, q, REPLICATES, crate::compare::seed_for(indices.candidate, q));
    let Some(d) = a.zip(b).and_then(|(a, b)| difference(&a, &b, CONFIDENCE)) else {
        judgement.decision = Decision::CannotJudge("no samples to resample".into());
        return judgement;
    };
    judgement.decision = decide(&d, allowance_ns);
    judgement.difference = Some(d);
    judgement
}

/// The decision on an interval of candidate − baseline and the allowance.
pub fn decide(d: &QuantileDifference, allowance_ns: i64) -> Decision {
    if d.low_ns > allowance_ns {
        Decision::Worse
    } else if d.high_ns <= allowance_ns {
        Decision::NotWorse
    } else {
        Decision::NotShownWorse
    }
}

/// A share of time on the worst CPU: steal or RT throttling.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorstShare {
    /// 0..1.
    pub share: f64,
    pub cpu: usize,
    pub scenario: String,
}

/// What a run says about how it was measured: the disturbances that make it unfit to judge.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RunConditions {
    /// Cut short by SIGINT/SIGTERM.
    pub interrupted: bool,
    /// One sentence per scenario whose loads failed (it was not measured under them).
    pub load_failures: Vec<String>,
    /// The most steal on a measured CPU in any scenario (None: not recorded).
    pub steal: Option<WorstShare>,
    /// The most RT throttling on a CPU (None: not recorded; the noise probe records it).
    pub throttling: Option<WorstShare>,
    /// Measured with SCHED_FIFO and locked memory (run.json `realtime.real_time_results`).
    pub real_time_results: bool,
}

/// The limits a run must keep to be judged.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Limits {
    pub max_steal: f64,
    pub max_throttling: f64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_steal: DEFAULT_MAX_STEAL, max_throttling: DEFAULT_MAX_THROTTLING }
    }
}

impl RunConditions {
    /// Why a run with these conditions cannot be judged (empty: it can), against a baseline
    /// measured with `baseline_real_time`.
    pub fn disturbances(&self, limits: &Limits, baseline_real_time: bool) -> Vec<String> {
        let mut out = Vec::new();
        if self.interrupted {
            out.push("interrupted (SIGINT/SIGTERM): the run was cut short".to_string());
        }
        out.extend(self.load_failures.iter().cloned());
        let share = |what: &str, worst: &Option<WorstShare>, limit: f64| {
            worst.as_ref().filter(|w| w.share > limit).map(|w| {
                format!(
                    "{what} {} % on CPU {} in scenario {:?}, above the limit of {} %",
                    trim_number(w.share * 100.0),
                    w.cpu,
                    w.scenario,
                    trim_number(limit * 100.0)
                )
            })
        };
        out.extend(share("steal", &self.steal, limits.max_steal));
        out.extend(share("RT throttling", &self.throttling, limits.max_throttling));
        if self.real_time_results != baseline_real_time {
            out.push(format!(
                "the baseline {} real-time results and this run {}: they were not measured alike",
                if baseline_real_time { "holds" } else { "does not hold" },
                if self.real_time_results { "does" } else { "does not" }
            ));
        }
        out
    }
}

/// The gate's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    Good,
    Bad,
    CannotJudge,
}

impl Answer {
    /// `git bisect run`'s exit code: 0, 1, 125.
    pub fn exit_code(self) -> u8 {
        match self {
            Answer::Good => EXIT_GOOD,
            Answer::Bad => EXIT_BAD,
            Answer::CannotJudge => EXIT_SKIP,
        }
    }

    pub fn word(self) -> &'static str {
        match self {
            Answer::Good => "good",
            Answer::Bad => "bad",
            Answer::CannotJudge => "cannot judge",
        }
    }
}

/// The whole judgement of a candidate: every statistic of every scenario, the candidate's
/// disturbances, and the answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateReport {
    pub metric: String,
    pub tolerance: Tolerance,
    pub statistics: Vec<StatisticJudgement>,
    /// Why the candidate as a whole cannot be judged (unreadable, disturbed, a scenario
    /// without samples of the metric).
    pub candidate_problems: Vec<String>,
    pub answer: Answer,
}

impl GateReport {
    /// The answer from the parts: cannot judge when the candidate is disturbed; else bad when
    /// any statistic is worse (on evidence that stands on its own); else cannot judge when
    /// any statistic cannot be judged; else good.
    pub fn new(
        metric: &str,
        tolerance: Tolerance,
        statistics: Vec<StatisticJudgement>,
        candidate_problems: Vec<String>,
    ) -> GateReport {
        let answer = if !candidate_problems.is_empty() {
            Answer::CannotJudge
        } else if statistics.iter().any(|s| s.decision == Decision::Worse) {
            Answer::Bad
        } else if statistics.is_empty() || statistics.iter().any(|s| matches!(s.decision, Decision::CannotJudge(_))) {
            Answer::CannotJudge
        } else {
            Answer::Good
        };
        GateReport { metric: metric.to_string(), tolerance, statistics, candidate_problems, answer }
    }

    /// The reasons behind the answer, for its one line.
    pub fn reasons(&self) -> Vec<String> {
        let named = |s: &StatisticJudgement| format!("{} {} {}", s.scenario, s.metric, s.statistic);
        match self.answer {
            Answer::Bad => self.statistics.iter().filter(|s| s.decision == Decision::Worse).map(named).collect(),
            Answer::CannotJudge if !self.candidate_problems.is_empty() => self.candidate_problems.clone(),
            Answer::CannotJudge => self
                .statistics
                .iter()
                .filter_map(|s| match &s.decision {
                    Decision::CannotJudge(why) => Some(format!("{}: {why}", named(s))),
                    _ => None,
                })
                .chain(self.statistics.is_empty().then(|| "no statistic to judge".to_string()))
                .collect(),
            Answer::Good => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DEFAULT_MAX_NS;

    fn histogram(values: impl IntoIterator<Item = i64>) -> LatencyHistogram {
        let mut h = LatencyHistogram::new(DEFAULT_MAX_NS).unwrap();
        values.into_iter().for_each(|v| h.record(v));
        h
    }

    /// 20,000 samples: 1..=20,000 µs, each once, times `scale`.
    fn uniform(scale: f64) -> LatencyHistogram {
        histogram((1..=20_000).map(|i| (i as f64 * 1000.0 * scale) as i64))
    }

    fn interval(low_ns: i64, high_ns: i64) -> QuantileDifference {
        QuantileDifference {
            quantile: 0.999,
            a_ns: 1000,
            b_ns: 1000,
            difference_ns: 0,
            low_ns,
            high_ns,
            confidence: 0.95,
            replicates: 1000,
        }
    }

    const AT: Indices = Indices { baseline: 0, candidate: 1 };

    #[test]
    fn the_decision_against_the_allowance() {
        assert_eq!(decide(&interval(101, 500), 100), Decision::Worse);
        assert_eq!(decide(&interval(100, 500), 100), Decision::NotShownWorse);
        assert_eq!(decide(&interval(-50, 100), 100), Decision::NotWorse);
        assert_eq!(decide(&interval(-50, 101), 100), Decision::NotShownWorse);
        assert_eq!(decide(&interval(-500, -200), 0), Decision::NotWorse);
    }

    #[test]
    fn tolerances() {
        assert_eq!(Tolerance::parse("10%"), Ok(Tolerance::Relative(0.1)));
        assert_eq!(Tolerance::parse(" 2.5 % "), Ok(Tolerance::Relative(0.025)));
        assert_eq!(Tolerance::parse("0.2"), Ok(Tolerance::Relative(0.2)));
        assert_eq!(Tolerance::parse("0"), Ok(Tolerance::Relative(0.0)));
        assert_eq!(Tolerance::parse("50us"), Ok(Tolerance::Absolute(50_000)));
        for bad in ["-5%", "fast", "", "nan", "10 parsecs"] {
            assert!(Tolerance::parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(Tolerance::Relative(0.1).allowance_ns(2_000_000), 200_000);
        assert_eq!(Tolerance::Relative(0.1).allowance_ns(-2_000), 200);
        assert_eq!(Tolerance::Absolute(50_000).allowance_ns(2_000_000), 50_000);
        assert_eq!(Tolerance::Relative(0.1).text(), "10 %");
        assert_eq!(Tolerance::Relative(0.025).text(), "2.5 %");
        assert_eq!(Tolerance::Absolute(50_000).text(), "50.0 µs");
        assert_eq!(parse_share("5%"), Ok(0.05));
        assert_eq!(parse_share("0.2"), Ok(0.2));
        assert!(parse_share("150%").is_err() && parse_share("x").is_err());
    }

    #[test]
    fn statistics_are_max_and_percentiles() {
        assert_eq!(parse_statistics("p99.9,max"), Ok(DEFAULT_STATISTICS.to_vec()));
        assert_eq!(parse_statistics(" MAX , p50 ,max"), Ok(vec![Statistic::Max, Statistic::Percentile(50.0)]));
        assert!(parse_statistics("mean").unwrap_err().contains("max and percentiles"));
        assert!(parse_statistics("pwcet(1e-9)").unwrap_err().contains("max and percentiles"));
        assert!(parse_statistics("p100").is_err() && parse_statistics("").is_err());
    }

    /// The samples a statistic needs: 10 above a percentile (exceedance's support), a
    /// p99.9's for the max.
    #[test]
    fn samples_needed_are_the_exceedance_support() {
        assert_eq!(samples_needed(Statistic::Percentile(99.9)), 10_000);
        assert_eq!(samples_needed(Statistic::Percentile(99.0)), 1_000);
        assert_eq!(samples_needed(Statistic::Percentile(99.99)), 100_000);
        assert_eq!(samples_needed(Statistic::Max), 10_000);
        let short = histogram(1..=9_999);
        let series = Series { histogram: &short, censoring: None };
        let why = series.problem(Statistic::Percentile(99.9)).unwrap();
        assert_eq!(why, "9,999 samples; a p99.9 needs 10,000 (10 above it)");
        assert!(series.problem(Statistic::Percentile(99.0)).is_none());
        assert!(series.problem(Statistic::Max).unwrap().contains("as many as a p99.9"));
        let enough = histogram(1..=10_000);
        assert!(Series { histogram: &enough, censoring: None }.problem(Statistic::Max).is_none());
    }

    #[test]
    fn a_statistic_among_clipped_samples_is_censored() {
        // 20,000 samples of which the top 30 lie above the source's 19,971 µs bound: the
        // p99.9 (rank 19,980) is among them, the p99 (rank 19,800) is not.
        let h = uniform(1.0);
        let c = Censoring::new(19_971_000, 30, &[]);
        let s = Series { histogram: &h, censoring: Some(&c) };
        assert!(s.problem(Statistic::Percentile(99.0)).is_none());
        let why = s.problem(Statistic::Percentile(99.9)).unwrap();
        assert!(why.starts_with("censored: the p99.9 is at least"), "{why}");
        assert!(s.problem(Statistic::Max).unwrap().starts_with("censored"));
        // The source's exact max is not censored.
        let exact = Censoring::new(19_971_000, 30, &["max"]);
        assert!(Series { histogram: &h, censoring: Some(&exact) }.problem(Statistic::Max).is_none());
    }

    #[test]
    fn a_statistic_above_the_histograms_ceiling_is_censored() {
        // A 10 ms ceiling: the 11 samples above it are recorded at it.
        let mut h = LatencyHistogram::new(10_000_000).unwrap();
        (1..=20_000).for_each(|i| h.record(if i > 19_989 { 50_000_000 } else { i * 100 }));
        assert_eq!(h.above_max(), 11);
        let s = Series { histogram: &h, censoring: None };
        // p99.9: rank 19,980 of 20,000, below the 11 clamped; the max is among them.
        assert!(s.problem(Statistic::Percentile(99.9)).is_none());
        assert!(s.problem(Statistic::Max).unwrap().contains("above the histogram's ceiling"));
        assert!(s.problem(Statistic::Percentile(99.99)).is_some());
    }

    #[test]
    fn a_scaled_distribution_is_worse_and_the_same_one_is_not() {
        fn series(histogram: &LatencyHistogram) -> Series<'_> {
            Series { histogram, censoring: None }
        }
        let base = uniform(1.0);
        let copy = base.clone();
        for statistic in DEFAULT_STATISTICS {
            let same = judge_statistic(
                "idle",
                "timer.latency",
                statistic,
                &series(&base),
                &series(&copy),
                DEFAULT_TOLERANCE,
                AT,
            );
            assert_eq!(same.decision, Decision::NotWorse, "{same:?}");
            assert_eq!(same.ratio(), Some(1.0));
            let slower = uniform(1.5);
            let worse = judge_statistic(
                "idle",
                "timer.latency",
                statistic,
                &series(&base),
                &series(&slower),
                DEFAULT_TOLERANCE,
                AT,
            );
            assert_eq!(worse.decision, Decision::Worse, "{worse:?}");
            assert!((worse.ratio().unwrap() - 1.5).abs() < 0.01, "{worse:?}");
            // 5 % slower is within a 10 % tolerance, and not within a 1 % one.
            let bit = uniform(1.05);
            let within = judge_statistic(
                "idle",
                "timer.latency",
                statistic,
                &series(&base),
                &series(&bit),
                DEFAULT_TOLERANCE,
                AT,
            );
            assert_ne!(within.decision, Decision::Worse, "{within:?}");
            let strict = judge_statistic(
                "idle",
                "timer.latency",
                statistic,
                &series(&base),
                &series(&bit),
                Tolerance::Relative(0.01),
                AT,
            );
            assert_eq!(strict.decision, Decision::Worse, "{strict:?}");
        }
    }

    /// The interval is `rtlab compare`'s: the same bootstrap with the same seeds.
    #[test]
    fn the_interval_is_the_compare_bootstrap() {
        let (a, b) = (uniform(1.0), uniform(1.2));
        let j = judge_statistic(
            "idle",
            "timer.latency",
            Statistic::Percentile(99.9),
            &Series { histogram: &a, censoring: None },
            &Series { histogram: &b, censoring: None },
            DEFAULT_TOLERANCE,
            Indices { baseline: 0, candidate: 3 },
        );
        let seed = crate::compare::seed_for;
        let expected = difference(
            &bootstrap_quantile(&a, 0.999, REPLICATES, seed(0, 0.999)).unwrap(),
            &bootstrap_quantile(&b, 0.999, REPLICATES, seed(3, 0.999)).unwrap(),
            CONFIDENCE,
        );
        assert_eq!(j.difference, expected);
        // Exact values: nearest rank 19,980 of 1..=20,000 µs, as the highest value of its
        // histogram bucket; the allowance 10 % of it.
        let oracle = a.hdr().highest_equivalent(19_980_000) as i64;
        assert_eq!(j.baseline_ns, Some(oracle));
        assert_eq!(j.allowance_ns, (oracle as f64 * 0.1).round() as i64);
    }

    #[test]
    fn a_candidate_too_short_cannot_be_judged() {
        let base = uniform(1.0);
        let short = histogram((1..=500).map(|i| i * 100_000));
        let j = judge_statistic(
            "idle",
            "timer.latency",
            Statistic::Max,
            &Series { histogram: &base, censoring: None },
            &Series { histogram: &short, censoring: None },
            DEFAULT_TOLERANCE,
            AT,
        );
        assert!(matches!(&j.decision, Decision::CannotJudge(why) if why.starts_with("500 samples")), "{j:?}");
        assert!(j.difference.is_none());
        assert_eq!(j.candidate_ns, Some(short.hdr().highest_equivalent(50_000_000) as i64));
        let report = GateReport::new("timer.latency", DEFAULT_TOLERANCE, vec![j], Vec::new());
        assert_eq!(report.answer, Answer::CannotJudge);
        assert_eq!(report.answer.exit_code(), 125);
        assert_eq!(report.reasons().len(), 1);
    }

    fn judged(decision: Decision) -> StatisticJudgement {
        StatisticJudgement {
            scenario: "idle".into(),
            metric: "timer.latency".into(),
            statistic: Statistic::Max,
            baseline_ns: Some(1000),
            candidate_ns: Some(1000),
            difference: None,
            allowance_ns: 100,
            decision,
        }
    }

    #[test]
    fn the_answer_from_its_parts() {
        let answer = |decisions: Vec<Decision>, problems: Vec<&str>| {
            GateReport::new(
                "timer.latency",
                DEFAULT_TOLERANCE,
                decisions.into_iter().map(judged).collect(),
                problems.into_iter().map(String::from).collect(),
            )
            .answer
        };
        let cannot = || Decision::CannotJudge("censored".into());
        assert_eq!(answer(vec![Decision::NotWorse, Decision::NotShownWorse], vec![]), Answer::Good);
        assert_eq!(answer(vec![Decision::NotWorse, Decision::Worse], vec![]), Answer::Bad);
        assert_eq!(answer(vec![Decision::Worse, cannot()], vec![]), Answer::Bad);
        assert_eq!(answer(vec![Decision::NotWorse, cannot()], vec![]), Answer::CannotJudge);
        assert_eq!(answer(vec![Decision::Worse], vec!["steal"]), Answer::CannotJudge);
        assert_eq!(answer(vec![], vec![]), Answer::CannotJudge);
        assert_eq!([Answer::Good, Answer::Bad, Answer::CannotJudge].map(Answer::exit_code), [0, 1, 125]);
    }

    #[test]
    fn disturbances_against_the_limits() {
        let worst = |share: f64| Some(WorstShare { share, cpu: 1, scenario: "idle".into() });
        let calm = RunConditions { steal: worst(0.01), real_time_results: true, ..RunConditions::default() };
        assert!(calm.disturbances(&Limits::default(), true).is_empty());
        let stolen = RunConditions { steal: worst(0.125), ..calm.clone() };
        assert_eq!(
            stolen.disturbances(&Limits::default(), true),
            vec!["steal 12.5 % on CPU 1 in scenario \"idle\", above the limit of 5 %".to_string()]
        );
        assert!(stolen.disturbances(&Limits { max_steal: 0.2, ..Limits::default() }, true).is_empty());
        let throttled = RunConditions { throttling: worst(0.05), ..calm.clone() };
        assert!(throttled.disturbances(&Limits::default(), true)[0].starts_with("RT throttling 5 % on CPU 1"));
        let broken = RunConditions {
            interrupted: true,
            load_failures: vec!["scenario \"mixed\": cpu: died".into()],
            ..calm.clone()
        };
        assert_eq!(broken.disturbances(&Limits::default(), true).len(), 2);
        assert!(calm.disturbances(&Limits::default(), false)[0].contains("not measured alike"));
    }
}
