//! Live progress while sampling, drawn by the (non-real-time) main thread from the values
//! the sampling threads publish without locks.

use crate::experiment::RunPlan;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rtlab_analysis::units::format_us;
use rtlab_probe::live::{LiveSnapshot, LiveStats};
use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::time::Duration;

const PLAIN_EVERY: Duration = Duration::from_secs(5);

enum Display {
    Hidden,
    Bar(ProgressBar),
    /// Not a terminal: a plain line every few seconds.
    Lines {
        to_stderr: bool,
        next: Duration,
    },
}

pub struct Progress {
    /// The scenario being measured ("idle (1/2)").
    title: String,
    live: Vec<Arc<LiveStats>>,
    expected: Duration,
    display: Display,
}

fn cpu_line(s: &LiveSnapshot) -> String {
    let us = |v: Option<i64>| v.map(format_us).unwrap_or_else(|| "-".into());
    format!(
        "CPU{:<3} {:>9} samples  min {:>8}  avg {:>8}  max {:>9} µs  overruns {}",
        s.cpu,
        s.count,
        us(s.min),
        us(s.mean),
        us(s.max),
        s.overruns
    )
}

/// A one-line message between measurements (loads starting), where progress goes.
pub fn note(plan: &RunPlan, text: &str) {
    if plan.quiet || plan.simulate.is_some() {
        return;
    }
    let line = format!("{text}\n");
    if plan.json {
        let _ = std::io::stderr().write_all(line.as_bytes());
    } else {
        let _ = std::io::stdout().write_all(line.as_bytes());
    }
}

impl Progress {
    /// `expected_ns`: how long this part of the run should take.
    pub fn new(plan: &RunPlan, live: Vec<Arc<LiveStats>>, simulated: bool, title: String, expected_ns: u64) -> Self {
        let expected = Duration::from_nanos(expected_ns);
        // With --json, stdout carries only the JSON document.
        let to_stderr = plan.json;
        let terminal = if to_stderr { std::io::stderr().is_terminal() } else { std::io::stdout().is_terminal() };
        let display = if plan.quiet || simulated {
            Display::Hidden
        } else if terminal {
            let target =
                if to_stderr { ProgressDrawTarget::stderr_with_hz(4) } else { ProgressDrawTarget::stdout_with_hz(4) };
            let bar = ProgressBar::with_draw_target(Some(expected.as_millis() as u64), target);
            bar.set_style(
                ProgressStyle::with_template("{prefix} [{bar:32}] {percent:>3}%\n{msg}")
                    .expect("static template")
                    .progress_chars("=> "),
            );
            Display::Bar(bar)
        } else {
            Display::Lines { to_stderr, next: PLAIN_EVERY }
        };
        Self { title, live, expected, display }
    }

    pub fn tick(&mut self, elapsed: Duration) {
        match &mut self.display {
            Display::Hidden => {}
            Display::Bar(bar) => {
                let lines: Vec<String> = self.live.iter().map(|l| cpu_line(&l.snapshot())).collect();
                let remaining = self.expected.saturating_sub(elapsed).as_secs_f64();
                bar.set_prefix(format!(
                    "{}: {:>6.1} s of {:.0} s, {:.0} s remaining",
                    self.title,
                    elapsed.as_secs_f64(),
                    self.expected.as_secs_f64(),
                    remaining.ceil()
                ));
                bar.set_position((elapsed.as_millis() as u64).min(self.expected.as_millis() as u64));
                bar.set_message(lines.join("\n"));
            }
            Display::Lines { to_stderr, next } => {
                if elapsed < *next {
                    return;
                }
                *next += PLAIN_EVERY;
                let mut text = format!(
                    "{}: {:>6.1} s of {:.0} s\n",
                    self.title,
                    elapsed.as_secs_f64(),
                    self.expected.as_secs_f64()
                );
                for l in &self.live {
                    text.push_str("  ");
                    text.push_str(&cpu_line(&l.snapshot()));
                    text.push('\n');
                }
                if *to_stderr {
                    let _ = std::io::stderr().write_all(text.as_bytes());
                } else {
                    let _ = std::io::stdout().write_all(text.as_bytes());
                }
            }
        }
    }

    pub fn finish(&mut self) {
        if let Display::Bar(bar) = &self.display {
            bar.finish_and_clear();
        }
    }
}
