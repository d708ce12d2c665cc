//! The pWCET calibration study (docs/pwcet.md): Monte Carlo replications of twelve
//! distributions with a known pWCET(1e-9), each analysed as a run at 100 Hz would be, and a
//! Markdown table per family and sample size of the relative error, the 95 % interval's
//! coverage, refusals and the models chosen. `bench/pwcet-calibration` runs it optimised:
//!
//! ```text
//! cargo run --release --locked -p rtlab-analysis --example pwcet_calibration -- \
//!     [--replications 100] [--sizes 20000,200000] [--seed 1] [--families gumbel,spikes,...] [--threads N]
//! ```
//!
//! The code of the study is shared with the fast version in the tests
//! (tests/support/calibration.rs).

#[path = "../tests/support/calibration.rs"]
mod calibration;

use calibration::{markdown_table, notes, study, thousands, Family};

struct Args {
    replications: usize,
    sizes: Vec<usize>,
    seed: u64,
    families: Vec<Family>,
    threads: usize,
}

const USAGE: &str =
    "usage: pwcet_calibration [--replications N] [--sizes N,N,...] [--seed S] [--families F,F,...] [--threads N]\n\
    families: exponential, gumbel, gamma, weibull2, lognormal, lognormal0.5, weibull0.5, gev0.1, gev0.3,\n\
    reversed-weibull, beta, spikes (default: all)";

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        replications: 100,
        sizes: vec![20_000, 200_000],
        seed: 1,
        families: Family::ALL.to_vec(),
        threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--replications" => {
                args.replications = value()?.parse().map_err(|e| format!("--replications: {e}"))?;
            }
            "--sizes" => {
                args.sizes = value()?
                    .split(',')
                    .map(|s| s.trim().replace('_', "").parse::<usize>().map_err(|e| format!("--sizes: {s}: {e}")))
                    .collect::<Result<_, _>>()?;
                if args.sizes.iter().any(|&n| n < calibration::TAIL_MIN_SAMPLES) {
                    return Err(format!("--sizes: at least {} samples", calibration::TAIL_MIN_SAMPLES));
                }
            }
            "--seed" => args.seed = value()?.parse().map_err(|e| format!("--seed: {e}"))?,
            "--families" => {
                args.families = value()?
                    .split(',')
                    .map(|s| Family::from_id(s.trim()).ok_or_else(|| format!("--families: unknown family {s}")))
                    .collect::<Result<_, _>>()?;
            }
            "--threads" => args.threads = value()?.parse().map_err(|e| format!("--threads: {e}"))?,
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if args.replications == 0 || args.sizes.is_empty() || args.families.is_empty() {
        return Err("nothing to do: give at least one replication, size and family".into());
    }
    Ok(args)
}

fn main() {
    let args = match parse_args() {
        Ok(args) => args,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("pwcet_calibration: {e}");
            }
            eprintln!("{USAGE}");
            std::process::exit(2);
        }
    };
    let sizes = args.sizes.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(",");
    let mut options = format!("--replications {} --sizes {sizes} --seed {}", args.replications, args.seed);
    if args.families != Family::ALL {
        let ids: Vec<&str> = args.families.iter().map(|f| f.id()).collect();
        options.push_str(&format!(" --families {}", ids.join(",")));
    }
    let summaries = study(&args.families, &args.sizes, args.replications, args.seed, args.threads);

    println!("pWCET(1e-9) calibration: replications per family and size {}, seed {}", args.replications, args.seed);
    println!();
    println!("Reproduce: `bench/pwcet-calibration {options}`");
    println!(
        "(= `cargo run --release --locked -p rtlab-analysis --example pwcet_calibration -- {options}`; the result does not depend on --threads)"
    );
    println!();
    print!("{}", markdown_table(&summaries));
    println!();
    println!(
        "Each replication: n i.i.d. samples, block maxima of 100 samples (a run at 100 Hz), the top 5 % of the samples \
         (at least 2000) as the tail, the default PwcetConfig. Error: estimate / truth − 1 of the chosen fit's \
         pWCET(1e-9), over every analysed replication, refused or not; answered: over the defensible ones (those that \
         give a number). 5th percentile error: in 95 % of replications the estimate is at most that far below the \
         truth (R's type-7 quantile). CI covers: ci_low ≤ truth ≤ ci_high of the 95 % interval, over every analysed \
         replication; CI covers or refused: the defensible replications whose interval covers the truth plus those \
         refused with a reason. Refused: defensibility.defensible false. Targets (asserted at {} samples; in \
         parentheses at other sizes): every family answered in at least half the replications: median error, answered, \
         within −10 % to +35 %; every family: CI covers or refused in ≥ 90 %, no analysis failed; bounded families: refused in ≤ 10 %; exponential and Gumbel: median \
         |error| ≤ 5 %; exponential, Gumbel, lognormal σ_log 0.3, reversed Weibull: 5th percentile error ≥ −10 %.",
        thousands(calibration::TARGET_SAMPLES)
    );
    let notes = notes(&summaries);
    if !notes.is_empty() {
        println!();
        print!("{notes}");
    }
}
