//! Time units: everything inside is integer ns; people read µs with one decimal.
//!
//! The parser is hand-written rather than taken from humantime because rtlab needs ns
//! precision, the "µs" spelling and the same grammar for requirement bounds.

use crate::AnalysisError;

/// Formats ns as µs with one decimal ("17.3").
pub fn format_us(ns: i64) -> String {
    format!("{:.1}", ns as f64 / 1000.0)
}

/// A difference in µs with its sign: "+12.3", "−4.0" (a true minus sign), and "0.0" for
/// what rounds to zero either way.
pub fn format_signed_us(ns: i64) -> String {
    let magnitude = format_us(ns.saturating_abs());
    if magnitude == "0.0" {
        magnitude
    } else if ns < 0 {
        format!("−{magnitude}")
    } else {
        format!("+{magnitude}")
    }
}

/// Formats a float ns value (a mean) as µs with one decimal.
pub fn format_us_f(ns: f64) -> String {
    format!("{:.1}", ns / 1000.0)
}

/// "1000 µs", "1.5 ms", "2 s": a period or duration for people.
pub fn format_period(ns: i64) -> String {
    let ns = ns as f64;
    if ns >= 1e9 {
        format!("{} s", trim(ns / 1e9))
    } else if ns >= 1e6 {
        format!("{} ms", trim(ns / 1e6))
    } else {
        format!("{} µs", trim(ns / 1e3))
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.1}");
    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
}

/// "1,500,000".
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Parses "50us", "1ms", "30s", "2h", "1h30m", "1.5ms", "250ns", "100µs" into ns.
/// A number without a unit is rejected: the caller decides whether to allow a default unit.
pub fn parse_time_ns(text: &str) -> Result<u64, AnalysisError> {
    let err = |reason: &str| AnalysisError::Duration { text: text.to_string(), reason: reason.to_string() };
    let s = text.trim();
    if s.is_empty() {
        return Err(err("empty"));
    }
    let mut total: f64 = 0.0;
    let mut rest = s;
    while !rest.is_empty() {
        let number_len = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        if number_len == 0 {
            return Err(err("expected a number"));
        }
        let number: f64 = rest[..number_len].parse().map_err(|_| err("bad number"))?;
        rest = &rest[number_len..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let unit = rest[..unit_len].trim();
        rest = rest[unit_len..].trim_start();
        let scale = match unit {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" | "sec" => 1e9,
            "m" | "min" => 60e9,
            "h" => 3600e9,
            "d" => 86400e9,
            "" => return Err(err("missing unit (use ns, us, ms, s, m, h or d)")),
            _ => return Err(err("unknown unit (use ns, us, ms, s, m, h or d)")),
        };
        total += number * scale;
    }
    if !total.is_finite() || total > u64::MAX as f64 / 2.0 {
        return Err(err("too large"));
    }
    Ok(total.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units() {
        assert_eq!(parse_time_ns("50us").unwrap(), 50_000);
        assert_eq!(parse_time_ns("100µs").unwrap(), 100_000);
        assert_eq!(parse_time_ns("1ms").unwrap(), 1_000_000);
        assert_eq!(parse_time_ns("1.5ms").unwrap(), 1_500_000);
        assert_eq!(parse_time_ns("30s").unwrap(), 30_000_000_000);
        assert_eq!(parse_time_ns("2h").unwrap(), 7_200_000_000_000);
        assert_eq!(parse_time_ns("1h30m").unwrap(), 5_400_000_000_000);
        assert_eq!(parse_time_ns("0s").unwrap(), 0);
    }

    #[test]
    fn rejects_malformed() {
        for bad in ["", "10", "ms", "10 parsecs", "1..2s", "-5s", "s10"] {
            assert!(parse_time_ns(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn formats_one_decimal() {
        assert_eq!(format_us(17_349), "17.3");
        assert_eq!(format_us(-1_500), "-1.5");
        assert_eq!(format_us_f(20_050.0), "20.1");
    }
}
