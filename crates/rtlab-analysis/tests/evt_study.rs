//! The Monte Carlo study behind the 10 % acceptance checks of tests/evt.rs and the accuracy table
//! of docs/pwcet.md: for each synthetic distribution, 100 seeds of 100,000 samples (blocks of 100,
//! the top 2000 samples as the tail), the relative error of every fit's pWCET at 1e-9, how many
//! seeds land within 10 %, and how often the chosen fit's 95 % interval covers the truth.
//! Minutes in a debug build, seconds optimised:
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

fn study(name: &str, quantile: impl Fn(f64) -> f64, truth: f64, seeds: u64) {
    let mut errors: Vec<(String, Vec<f64>)> = Vec::new();
    let mut covered = 0;
    for seed in 0..seeds {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let samples: Vec<f64> = (0..100_000).map(|_| quantile(1.0 - rng.random::<f64>())).collect();
        let analysis = analyse(&input(&samples), &PwcetConfig::default()).unwrap();
        for f in &analysis.fits {
            let fit = format!("{:?} {:?}", f.model, f.estimator);
            let error = f.pwcet_ns(1e-9).unwrap() / truth - 1.0;
            match errors.iter_mut().find(|(n, _)| *n == fit) {
                Some((_, v)) => v.push(error),
                None => errors.push((fit, vec![error])),
            }
        }
        let e = analysis.estimates.iter().find(|e| e.probability == 1e-9).unwrap();
        covered += usize::from(e.ci_low_ns <= truth && truth <= e.ci_high_ns);
    }
    println!("{name}: true pWCET(1e-9) {truth:.0} ns; chosen fit's 95 % interval covers it in {covered}/{seeds}");
    for (fit, v) in &errors {
        let within = v.iter().filter(|e| e.abs() < 0.1).count();
        let rms = (v.iter().map(|e| e * e).sum::<f64>() / v.len() as f64).sqrt();
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        println!("  {fit:12} within 10 %: {within:3}/{seeds}  mean error {mean:+.4}  rms {rms:.4}");
    }
}

#[test]
#[ignore = "Monte Carlo study: run by hand, optimised"]
fn accuracy_study() {
    let seeds = 100;
    for (location, scale) in [(50_000.0, 500.0), (20_000.0, 500.0)] {
        let g = Gumbel::new(location, scale).unwrap();
        study(
            &format!("Gumbel μ {location} σ {scale}"),
            |u| g.quantile(u),
            g.as_gev().per_sample_quantile(1e-9, 1.0),
            seeds,
        );
    }
    for (location, scale, shape) in [(50_000.0, 100.0, 0.1), (20_000.0, 500.0, 0.1), (50_000.0, 500.0, -0.2)] {
        let g = Gev::new(location, scale, shape).unwrap();
        study(
            &format!("GEV μ {location} σ {scale} ξ {shape}"),
            |u| g.quantile(u),
            g.per_sample_quantile(1e-9, 1.0),
            seeds,
        );
    }
    for (location, scale, shape) in [(50_000.0, 100.0, 0.1), (20_000.0, 500.0, 0.1), (50_000.0, 500.0, -0.1)] {
        let g = Gpd::new(location, scale, shape).unwrap();
        study(&format!("GPD u {location} σ {scale} ξ {shape}"), |u| g.quantile_of_sf(u), g.quantile_of_sf(1e-9), seeds);
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
