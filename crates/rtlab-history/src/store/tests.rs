use super::*;
use rtlab_analysis::LatencyHistogram;
use rtlab_results::history::fixtures::{self, host};

fn settings() -> MonitorSettings {
    fixtures::settings(&["rtlab", "monitor"])
}

fn metric(cpu: usize, values: &[i64]) -> WindowMetric {
    fixtures::metric(cpu, values.iter().copied(), 1, 2)
}

fn window(start_ns: i64, values: &[i64]) -> WindowRecord {
    WindowRecord {
        start_ns,
        end_ns: start_ns + 60_000_000_000,
        resolution: Resolution::Window,
        merged: 1,
        phase: "idle".into(),
        metrics: vec![metric(0, values), metric(1, &[values[0] + 1])],
        activity: None,
    }
}

#[test]
fn a_new_file_carries_the_schema_version_and_rtlabs_id() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub/monitor.db");
    let db = HistoryDb::open(&path).unwrap();
    assert_eq!(db.user_version().unwrap(), SCHEMA_VERSION);
    // Known as a history while its creator still has it open (WAL mode).
    assert!(HistoryDb::is_history(&path));
    drop(db);
    assert!(HistoryDb::is_history(&path));
    // Opening again migrates nothing and keeps the data readable.
    let db = HistoryDb::open(&path).unwrap();
    db.integrity_check().unwrap();
    HistoryDb::open_existing(&path).unwrap();
}

#[test]
fn windows_round_trip_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let mut db = HistoryDb::open(&dir.path().join("h.db")).unwrap();
    let session = db.begin_session(&host("6.1-rt"), &settings(), 0).unwrap();
    let record = window(1_000, &[5_000, 7_000, i64::from(u32::MAX)]);
    db.append_window(session.id, &record).unwrap();
    let read = db.windows(None, None).unwrap();
    assert_eq!(read.len(), 1);
    assert_eq!(read[0].session_id, session.id);
    assert_eq!(read[0].record, record);
    assert_eq!(read[0].record.max_of("timer.latency"), Some(i64::from(u32::MAX)));
    // Ranges select by overlap.
    assert_eq!(db.windows(Some(record.end_ns), None).unwrap().len(), 0);
    assert_eq!(db.windows(None, Some(record.start_ns)).unwrap().len(), 0);
    assert_eq!(db.windows(Some(record.end_ns - 1), Some(record.start_ns + 1)).unwrap().len(), 1);
}

#[test]
fn sessions_record_gaps_and_kernel_changes() {
    let dir = tempfile::tempdir().unwrap();
    let mut db = HistoryDb::open(&dir.path().join("h.db")).unwrap();
    let first = db.begin_session(&host("6.1-rt"), &settings(), 0).unwrap();
    assert_eq!((first.gap_before_ns, first.previous_kernel.clone()), (None, None));
    db.append_window(first.id, &window(0, &[1])).unwrap();
    // Killed: no end; restarted 100 s after the last window ended, same kernel.
    let second = db.begin_session(&host("6.1-rt"), &settings(), 160_000_000_000).unwrap();
    assert_eq!(second.gap_before_ns, Some(100_000_000_000));
    assert_eq!(second.previous_kernel, None);
    db.end_session(second.id, 170_000_000_000, "SIGTERM").unwrap();
    let third = db.begin_session(&host("6.6-rt"), &settings(), 200_000_000_000).unwrap();
    assert_eq!(third.previous_kernel.as_deref(), Some("6.1-rt"));
    let sessions = db.sessions().unwrap();
    assert_eq!(sessions.len(), 3);
    assert_eq!(sessions[0].ended_ns, None);
    assert_eq!(sessions[1].end_reason.as_deref(), Some("SIGTERM"));
    assert_eq!(sessions[2].identity.kernel_release, "6.6-rt");
    assert_eq!(sessions[2].identity.preemption, "PREEMPT_RT");
    assert_eq!(sessions[2].host, host("6.6-rt"));
}

#[test]
fn thinning_merges_exactly_and_deletes_beyond_keep() {
    let dir = tempfile::tempdir().unwrap();
    let mut db = HistoryDb::open(&dir.path().join("h.db")).unwrap();
    let session = db.begin_session(&host("6.1-rt"), &settings(), 0).unwrap();
    let minute = 60_000_000_000i64;
    // 120 windows over two hours, values rising so that each hour's maximum is known.
    for i in 0..120 {
        db.append_window(session.id, &window(i * minute, &[1_000 + i, 2_000 + i])).unwrap();
    }
    let now = 2 * DAY_NS + 120 * minute + 1;
    let outcome = db.thin(now, &Retention::keeping(90 * DAY_NS)).unwrap();
    assert_eq!(outcome, ThinOutcome { merged_into_hours: 120, merged_into_days: 0, deleted: 0 });
    let rows = db.windows(None, None).unwrap();
    assert_eq!(rows.len(), 2);
    for (hour, row) in rows.iter().enumerate() {
        let r = &row.record;
        assert_eq!((r.resolution, r.merged), (Resolution::Hour, 60));
        assert_eq!((r.start_ns, r.end_ns), (hour as i64 * 60 * minute, (hour as i64 + 1) * 60 * minute));
        let cpu0 = &r.metrics[0];
        assert_eq!(cpu0.moments.count, 120);
        assert_eq!(cpu0.moments.max, 2_000 + 60 * hour as i64 + 59);
        assert_eq!(cpu0.moments.min, 1_000 + 60 * hour as i64);
        assert_eq!((cpu0.overruns, cpu0.lost), (60, 120));
        assert_eq!(LatencyHistogram::decode(&cpu0.histogram).unwrap().count(), 120);
    }
    // 15 days later the hours are a day; after keep, nothing is left.
    let outcome = db.thin(now + 15 * DAY_NS, &Retention::keeping(90 * DAY_NS)).unwrap();
    assert_eq!(outcome.merged_into_days, 2);
    let rows = db.windows(None, None).unwrap();
    assert_eq!((rows.len(), rows[0].record.resolution, rows[0].record.merged), (1, Resolution::Day, 120));
    assert_eq!(rows[0].record.metrics[1].moments.count, 120);
    let outcome = db.thin(now + 91 * DAY_NS, &Retention::keeping(90 * DAY_NS)).unwrap();
    assert_eq!(outcome.deleted, 1);
    assert!(db.windows(None, None).unwrap().is_empty());
    // The metrics went with their windows.
    let left: i64 = db.conn.query_row("SELECT count(*) FROM window_metrics", [], |r| r.get(0)).unwrap();
    assert_eq!(left, 0);
}

#[test]
fn thinning_keeps_sessions_and_phases_apart() {
    let dir = tempfile::tempdir().unwrap();
    let mut db = HistoryDb::open(&dir.path().join("h.db")).unwrap();
    let minute = 60_000_000_000i64;
    let a = db.begin_session(&host("6.1-rt"), &settings(), 0).unwrap();
    let mut loaded = window(minute, &[9]);
    loaded.phase = "loaded".into();
    db.append_window(a.id, &window(0, &[1])).unwrap();
    db.append_window(a.id, &loaded).unwrap();
    let b = db.begin_session(&host("6.6-rt"), &settings(), 2 * minute).unwrap();
    db.append_window(b.id, &window(2 * minute, &[3])).unwrap();
    db.thin(3 * DAY_NS, &Retention::keeping(90 * DAY_NS)).unwrap();
    let rows = db.windows(None, None).unwrap();
    assert_eq!(rows.len(), 3, "one hour row per session and phase");
    assert!(rows.iter().all(|r| r.record.resolution == Resolution::Hour && r.record.merged == 1));
}

#[test]
fn other_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.db");
    std::fs::write(&text, "hello").unwrap();
    let e = HistoryDb::open_existing(&text).err().unwrap().to_string();
    assert!(e.contains("not an rtlab history database"), "{e}");
    let missing = HistoryDb::open_existing(&dir.path().join("none.db")).err().unwrap().to_string();
    assert!(missing.contains("no such file"), "{missing}");
    // Another program's SQLite database is neither read nor written into.
    let other = dir.path().join("other.db");
    Connection::open(&other).unwrap().execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);").unwrap();
    assert!(HistoryDb::open(&other).err().unwrap().to_string().contains("another program"));
    assert!(HistoryDb::open_existing(&other).is_err());
}

#[test]
fn a_newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.db");
    HistoryDb::open(&path).unwrap().conn.execute_batch("PRAGMA user_version = 99").unwrap();
    let e = HistoryDb::open(&path).err().unwrap().to_string();
    assert!(e.contains("newer rtlab"), "{e}");
    assert!(HistoryDb::open_existing(&path).err().unwrap().to_string().contains("schema version 99"));
}

#[test]
fn thinning_every_hour_leaves_one_row_per_hour_and_per_day() {
    let dir = tempfile::tempdir().unwrap();
    let mut db = HistoryDb::open(&dir.path().join("h.db")).unwrap();
    let session = db.begin_session(&host("6.1-rt"), &settings(), 0).unwrap();
    let ten_minutes = 600_000_000_000i64;
    // Three days of 10-minute windows, starting at 00:05 so that windows straddle nothing
    // but hours do not line up with the first window.
    let start = 300_000_000_000i64;
    let windows = 3 * 24 * 6;
    for i in 0..windows {
        db.append_window(session.id, &window(start + i * ten_minutes, &[1_000 + i])).unwrap();
    }
    // The monitor thins every hour; run it hourly for 20 days.
    let retention = Retention::keeping(90 * DAY_NS);
    let mut merged = 0;
    for hour in 0..20 * 24 {
        let outcome = db.thin(start + hour * HOUR_NS, &retention).unwrap();
        merged += outcome.merged_into_hours;
    }
    assert_eq!(merged, windows as u64, "every window merged into an hour once");
    let rows = db.windows(None, None).unwrap();
    // All three days are older than 14 days: one row per day, holding every window.
    assert_eq!(
        rows.len(),
        3,
        "{:?}",
        rows.iter().map(|r| (r.record.resolution, r.record.start_ns)).collect::<Vec<_>>()
    );
    assert!(rows.iter().all(|r| r.record.resolution == Resolution::Day));
    let days: Vec<i64> = rows.iter().map(|r| r.record.start_ns.div_euclid(DAY_NS)).collect();
    assert_eq!(days, [0, 1, 2]);
    assert_eq!(rows.iter().map(|r| r.record.merged).sum::<u64>(), windows as u64);
    assert_eq!(rows.iter().map(|r| r.record.metrics[0].moments.count).sum::<u64>(), windows as u64);
    assert_eq!(rows[2].record.metrics[0].moments.max, 1_000 + windows - 1);
}

#[test]
fn damaged_rows_are_refused_not_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.db");
    let mut db = HistoryDb::open(&path).unwrap();
    let session = db.begin_session(&host("6.1-rt"), &settings(), 0).unwrap();
    db.append_window(session.id, &window(0, &[5, 9])).unwrap();
    // Closed, its WAL is checkpointed into the file that is copied below.
    drop(db);
    for damage in [
        "UPDATE window_metrics SET min_ns = NULL",
        "UPDATE window_metrics SET min_ns = max_ns + 1",
        "UPDATE window_metrics SET count = -1",
        "UPDATE window_metrics SET lost = -3",
        "UPDATE windows SET merged = 0",
        "UPDATE window_metrics SET sum_ns = 'many'",
        "UPDATE window_metrics SET histogram = '{}'",
    ] {
        let copy = dir.path().join("copy.db");
        std::fs::copy(&path, &copy).unwrap();
        let damaged = HistoryDb::open(&copy).unwrap();
        damaged.conn.execute_batch(damage).unwrap();
        let e = damaged.windows(None, None).err().unwrap_or_else(|| panic!("{damage}: read as sound"));
        assert!(e.to_string().contains("damaged"), "{damage}: {e}");
        drop(damaged);
        std::fs::remove_file(&copy).unwrap();
    }
}
