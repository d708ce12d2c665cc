//! Words and numbers for people, shared by every renderer: metric titles, the scheduling
//! policy, rates and amounts, the conclusion's opening, HTML escaping.

use rtlab_results::run::RunResult;

/// Human title of a metric. The jitter and sweep probes' metrics merge their periods or
/// rates (the tables per period and per rate keep them apart), so their titles say so.
pub fn metric_title(metric: &str) -> String {
    let title = match metric {
        "timer.latency" => "Timer latency",
        "timer.jitter" => "Period jitter",
        "timer.irq" => "Interrupt latency (timer expiry to IRQ handler)",
        "timer.sched" => "Scheduling part (IRQ handler to thread switched in)",
        "timer.return" => "Return to user space (switch-in to user timestamp)",
        "net.wakeup" => "Wake-up (kernel receive to sched_waking)",
        "net.sched" => "Scheduling part (wake-up to receiver switched in)",
        "net.return" => "Return to user space (switch-in to receive timestamp)",
        "jitter.jitter" => "Period jitter (all periods)",
        "jitter.latency" => "Wake-up latency (all periods)",
        "sleep.overshoot" => "Sleep overshoot",
        "net.activation" => "Net activation latency",
        "net.delivery" => "Net delivery latency",
        "net.latency" => "Net send-to-task latency",
        "switch.futex" => "Switch time (futex)",
        "switch.sem" => "Switch time (semaphore)",
        "sweep.latency" => "Sweep latency (all rates)",
        "sweep.delivery" => "Sweep delivery latency (all rates)",
        "sweep.activation" => "Sweep activation latency (all rates)",
        other => {
            if let Some(task) = other.strip_prefix("taskset.").and_then(|m| m.strip_suffix(".response")) {
                return format!("Response time of task {task}");
            }
            return match other.strip_suffix(".latency").filter(|probe| probe.starts_with("ipc:")) {
                Some(probe) => format!("{probe} wake-up latency"),
                None => other.to_string(),
            };
        }
    };
    title.to_string()
}

/// How a run's conclusion opens: "Conclusion", qualified when its results are not real-time
/// or the run was interrupted.
pub fn conclusion_prefix(run: &RunResult) -> &'static str {
    match (run.realtime.real_time_results, run.interrupted) {
        (false, _) => "Conclusion (not real-time results)",
        (true, true) => "Conclusion (interrupted run)",
        (true, false) => "Conclusion",
    }
}

/// `text` with its first letter in upper case: a phrase opening a sentence.
pub fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

/// The scheduling the sampling threads had: "SCHED_FIFO 95", "SCHED_OTHER".
pub fn policy_name(run: &RunResult) -> String {
    let p = &run.realtime;
    if p.policy.is_realtime() {
        format!("{} {}", p.policy.kernel_name(), p.priority)
    } else {
        p.policy.kernel_name().to_string()
    }
}

/// "950", "12.3k", "1.20M": a rate for people.
pub fn format_rate(per_s: f64) -> String {
    if per_s >= 1e6 {
        format!("{:.2}M", per_s / 1e6)
    } else if per_s >= 1e4 {
        format!("{:.0}k", per_s / 1e3)
    } else if per_s >= 1e3 {
        format!("{:.1}k", per_s / 1e3)
    } else {
        format!("{per_s:.0}")
    }
}

/// "12.5" or "180k": a figure of achieved load.
pub fn format_amount(value: f64) -> String {
    if value.abs() >= 1e4 {
        format_rate(value)
    } else if value.abs() >= 100.0 || value == value.trunc() {
        format!("{value:.0}")
    } else {
        format!("{value:.2}")
    }
}

/// The three busiest lines of `rates` for people: "IRQ 24 95k/s, LOC 2.4k/s" (numeric
/// interrupt lines get an "IRQ " prefix when `irq_prefix`).
pub fn top_rates(rates: &[rtlab_results::activity::IrqRate], irq_prefix: bool) -> String {
    rates
        .iter()
        .take(3)
        .map(|r| {
            let id = if irq_prefix && r.irq.chars().all(|c| c.is_ascii_digit()) {
                format!("IRQ {}", r.irq)
            } else {
                r.irq.clone()
            };
            format!("{id} {}/s", format_rate(r.per_s))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Text for HTML: `&`, `<`, `>`, quotes escaped.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            other => out.push(other),
        }
    }
    out
}
