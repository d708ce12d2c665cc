//! The cost of the tail analysis, by hand (timing is not asserted: the machine is shared).
//! The accuracy study that used to live here is the calibration study of docs/pwcet.md
//! (`bench/pwcet-calibration`, `tests/pwcet_calibration.rs`).
//! `cargo test --release -p rtlab-analysis --test evt_study -- --ignored --nocapture`.

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use rtlab_analysis::evt::*;

fn input(samples: &[f64]) -> TailInput {
    let block_maxima_ns = samples.chunks(100).map(|c| c.iter().copied().fold(f64::MIN, f64::max)).collect();
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let tail_ns = sorted[sorted.len() - 2000..].iter().map(|&v| (v, 1)).collect();
    TailInput {
        block_maxima_ns,
        samples_per_block: 100.0,
        tail_ns,
        total_samples: samples.len() as u64,
        sample_rate_hz: 1000.0,
    }
}

/// The cost of one analysis the size of a one-hour run at 1 kHz (3600 block maxima, a
/// 2000-pair tail), default configuration: printed, not asserted (the machine is shared).
#[test]
#[ignore = "timing: run by hand"]
fn analysis_time() {
    let g = Gumbel::new(50_000.0, 500.0).unwrap();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
    let samples: Vec<f64> = (0..360_000).map(|_| g.quantile(1.0 - rng.random::<f64>())).collect();
    let input = input(&samples);
    assert_eq!((input.block_maxima_ns.len(), input.tail_ns.len()), (3600, 2000));
    for config in [PwcetConfig::default(), PwcetConfig { bootstrap_resamples: 0, ..PwcetConfig::default() }] {
        let (start, cpu_start) = (std::time::Instant::now(), thread_cpu_s());
        let analysis = analyse(&input, &config).unwrap();
        println!(
            "{} bootstrap replicates: {:?} wall, {:.2} s CPU ({})",
            config.bootstrap_resamples,
            start.elapsed(),
            thread_cpu_s() - cpu_start,
            analysis.chosen_because
        );
    }
}

/// CPU time of this thread in s (user + system, from /proc; 10 ms resolution).
fn thread_cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap_or_default();
    let after_name = stat.rsplit(')').next().unwrap_or("");
    let fields: Vec<f64> = after_name.split_whitespace().filter_map(|f| f.parse().ok()).collect();
    // Fields 14 and 15 of stat are utime and stime; after the name, fields start at 3 (state).
    (fields.get(10).unwrap_or(&0.0) + fields.get(11).unwrap_or(&0.0)) / 100.0
}
