//! Runs one scenario (a preset or loads joined by '+') for some seconds and prints each
//! load's report as JSON: a quick way to see what a load achieves on this machine.
//!
//!     cargo run --release -p rtlab-load --example run_load -- udp-flood:rate=100k 5

use std::time::Duration;

fn main() {
    let mut args = std::env::args().skip(1);
    let spec = args.next().unwrap_or_else(|| "akamina".to_string());
    let seconds: f64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(3.0);
    let mut loads = match rtlab_load::scenario(&spec) {
        Ok(loads) => loads,
        Err(e) => {
            eprintln!("run_load: {e}");
            std::process::exit(2);
        }
    };
    for load in &mut loads {
        if let Err(e) = load.start() {
            eprintln!("run_load: {e}");
            std::process::exit(3);
        }
    }
    std::thread::sleep(Duration::from_secs_f64(seconds));
    for load in &mut loads {
        if let Some(reason) = load.check_alive() {
            eprintln!("run_load: {} died early: {reason}", load.name());
        }
    }
    for load in &mut loads {
        match load.stop() {
            Ok(report) => println!("{}", serde_json::to_string_pretty(&report).unwrap()),
            Err(e) => eprintln!("run_load: {e}"),
        }
    }
}
