//! A time range of the history and the UTC dates of its rows: what `rtlab history`,
//! `rtlab report DB` and `rtlab compare A.db B.db` select and print. Reading a range as a
//! run (docs/history.md, "A range is a run") is `rtlab-history`'s (`HistoryDb::run_of_range`).

/// Nanoseconds in a day.
pub const DAY_NS: i64 = 86_400_000_000_000;

/// `[since, until)` in unix ns; an open bound is None.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TimeRange {
    pub since_ns: Option<i64>,
    pub until_ns: Option<i64>,
}

impl TimeRange {
    pub fn new(since_ns: Option<i64>, until_ns: Option<i64>) -> Self {
        Self { since_ns, until_ns }
    }

    /// "2026-11-20 10:00 to 2026-11-21 10:00 UTC", "the beginning to ...", "... to now".
    pub fn describe(&self) -> String {
        let since = self.since_ns.map_or_else(|| "the beginning".to_string(), short_utc);
        let until = self.until_ns.map_or_else(|| "the end".to_string(), short_utc);
        format!("{since} to {until}")
    }

    /// Whether the row overlaps the range (what `rtlab_history::HistoryDb::windows` selects).
    pub fn overlaps(&self, start_ns: i64, end_ns: i64) -> bool {
        end_ns > self.since_ns.unwrap_or(i64::MIN) && start_ns < self.until_ns.unwrap_or(i64::MAX)
    }
}

/// Days since 1970-01-01 -> (year, month, day), proleptic Gregorian (H. Hinnant's
/// `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// The UTC day of `ns`: "2026-11-20".
pub fn utc_day(ns: i64) -> String {
    let (y, m, d) = civil_from_days(ns.div_euclid(DAY_NS));
    format!("{y:04}-{m:02}-{d:02}")
}

/// The start of the UTC day of `ns`.
pub fn day_start_ns(ns: i64) -> i64 {
    ns.div_euclid(DAY_NS) * DAY_NS
}

/// RFC 3339 in UTC, to the second: "2026-11-20T10:00:00Z".
pub fn rfc3339_utc(ns: i64) -> String {
    let seconds = ns.div_euclid(1_000_000_000).rem_euclid(86_400);
    format!("{}T{:02}:{:02}:{:02}Z", utc_day(ns), seconds / 3600, seconds / 60 % 60, seconds % 60)
}

/// "2026-11-20 10:00" (UTC).
pub fn short_utc(ns: i64) -> String {
    let seconds = ns.div_euclid(1_000_000_000).rem_euclid(86_400);
    format!("{} {:02}:{:02}", utc_day(ns), seconds / 3600, seconds / 60 % 60)
}

/// "2026-11-20 00:00–11-21 01:04", "2026-11-20 10:00–10:05": short enough for a column
/// header of `rtlab compare`.
pub fn span_label(start_ns: i64, end_ns: i64) -> String {
    let (from, to) = (short_utc(start_ns), short_utc(end_ns));
    let to = if from[..10] == to[..10] {
        &to[11..]
    } else if from[..4] == to[..4] {
        &to[5..]
    } else {
        &to[..]
    };
    format!("{from}–{to}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates_and_times() {
        assert_eq!(utc_day(0), "1970-01-01");
        assert_eq!(rfc3339_utc(1_795_000_000_000_000_000), "2026-11-18T11:06:40Z");
        assert_eq!(short_utc(1_795_000_000_000_000_000), "2026-11-18 11:06");
        assert_eq!(utc_day(-1), "1969-12-31");
        assert_eq!(utc_day(951_782_400_000_000_000), "2000-02-29");
        assert_eq!(day_start_ns(DAY_NS + 5), DAY_NS);
    }
}
