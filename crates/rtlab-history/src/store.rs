//! The monitor's history: windows in an embedded SQLite database (docs/history.md).
//!
//! `rtlab monitor` closes a [`WindowRecord`] every `--window`: per CPU and metric the HDR
//! histogram, exact moments, overruns and lost samples, plus the system activity. Each
//! record is committed in one transaction, in WAL mode, so a process killed at any moment
//! leaves every completed window readable and loses at most the open one. Every start of
//! the monitor opens a [`Session`] that carries the host's identity; a session records the
//! gap since the previous window and a kernel change since the previous session.
//!
//! Retention ([`Retention`]) bounds the file: old windows are merged, exactly, into hourly
//! and then daily rows (histograms merged, moments added), and rows older than `keep` go.

use crate::HistoryError;
use rtlab_analysis::{HistogramEncoding, Moments};
use rtlab_results::history::range::DAY_NS;
use rtlab_results::history::{HostIdentity, MonitorSettings, Resolution, Session, WindowMetric, WindowRecord};
use rtlab_results::host::SystemInfo;
use rtlab_results::ResultsError;
use rusqlite::{params, Connection, OptionalExtension};
use std::path::{Path, PathBuf};

/// The schema version this crate writes; `PRAGMA user_version` of the file.
pub const SCHEMA_VERSION: i64 = 1;

/// `PRAGMA application_id`: "rtlb", so that another program's SQLite file is refused.
pub const APPLICATION_ID: i64 = 0x72746c62;

/// The migrations, in order: `MIGRATIONS[n]` takes a file from version n to n + 1.
const MIGRATIONS: &[&str] = &["
CREATE TABLE sessions (
    id              INTEGER PRIMARY KEY,
    started_ns      INTEGER NOT NULL,   -- unix time, ns
    ended_ns        INTEGER,            -- null: the monitor did not end cleanly (killed)
    end_reason      TEXT,
    hostname        TEXT NOT NULL,
    kernel_release  TEXT NOT NULL,
    preemption      TEXT NOT NULL,
    cmdline_hash    TEXT NOT NULL,
    previous_kernel TEXT,               -- set when the kernel differs from the previous session's
    gap_before_ns   INTEGER,            -- time since the previous window ended; null for the first session
    host_json       TEXT NOT NULL,      -- the SystemInfo of run.json's `host`
    settings_json   TEXT NOT NULL       -- MonitorSettings
);
CREATE TABLE windows (
    id            INTEGER PRIMARY KEY,
    session_id    INTEGER NOT NULL REFERENCES sessions(id),
    start_ns      INTEGER NOT NULL,     -- unix time, ns
    end_ns        INTEGER NOT NULL,
    resolution    TEXT NOT NULL CHECK (resolution IN ('window', 'hour', 'day')),
    merged        INTEGER NOT NULL,     -- monitor windows this row holds
    phase         TEXT NOT NULL,        -- the load schedule's phase ('idle' without a schedule)
    activity_json TEXT                  -- Activity; null for merged rows
);
CREATE INDEX windows_by_start ON windows(start_ns);
CREATE TABLE window_metrics (
    window_id  INTEGER NOT NULL REFERENCES windows(id) ON DELETE CASCADE,
    cpu        INTEGER NOT NULL,
    metric     TEXT NOT NULL,           -- 'timer.latency', 'timer.jitter'
    count      INTEGER NOT NULL,
    min_ns     INTEGER,                 -- null when count = 0
    max_ns     INTEGER,
    sum_ns     TEXT NOT NULL,           -- exact i128 sum, decimal
    sum_sq     TEXT NOT NULL,           -- exact u128 sum of squares, decimal
    overruns   INTEGER NOT NULL,
    lost       INTEGER NOT NULL,
    histogram  TEXT NOT NULL,           -- JSON of run.json's histogram encoding (HdrHistogram V2)
    PRIMARY KEY (window_id, cpu, metric)
);
"];

/// A row of the history with the session it belongs to.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredWindow {
    pub id: i64,
    pub session_id: i64,
    pub record: WindowRecord,
}

/// How long each resolution is kept (`--keep` and the two thinning ages).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// Rows that ended longer ago than this are deleted.
    pub keep_ns: i64,
    /// Windows older than this are merged into hours.
    pub windows_for_ns: i64,
    /// Hours older than this are merged into days.
    pub hours_for_ns: i64,
}

const HOUR_NS: i64 = 3_600_000_000_000;

impl Retention {
    /// Windows for 2 days, hours for 14 days, days until `keep_ns` (each capped by keep).
    pub fn keeping(keep_ns: i64) -> Self {
        Self { keep_ns, windows_for_ns: (2 * DAY_NS).min(keep_ns), hours_for_ns: (14 * DAY_NS).min(keep_ns) }
    }

    /// Windows kept as measured for `ns` instead of 2 days (hours at least as long; both
    /// capped by keep).
    pub fn windows_for(self, ns: i64) -> Self {
        Self { windows_for_ns: ns.min(self.keep_ns), hours_for_ns: self.hours_for_ns.max(ns).min(self.keep_ns), ..self }
    }
}

/// What one pass of [`HistoryDb::thin`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThinOutcome {
    pub merged_into_hours: u64,
    pub merged_into_days: u64,
    pub deleted: u64,
}

/// An open history database.
pub struct HistoryDb {
    conn: Connection,
    path: PathBuf,
}

impl HistoryDb {
    /// Opens the history at `path`, creating it (and its directory) when missing, and
    /// migrates it to [`SCHEMA_VERSION`]. WAL mode: readers (`rtlab history`) never block
    /// the monitor.
    pub fn open(path: &Path) -> Result<Self, HistoryError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|source| HistoryError::Io { path: dir.display().to_string(), source })?;
        }
        let conn = Connection::open(path).map_err(|e| error_at(path, e))?;
        let mut db = Self { conn, path: path.to_path_buf() };
        db.configure()?;
        db.migrate()?;
        Ok(db)
    }

    /// Opens an existing history for reading; a missing file or another program's database
    /// is an error, not a new empty history.
    pub fn open_existing(path: &Path) -> Result<Self, HistoryError> {
        if !path.is_file() {
            return Err(HistoryError::History {
                path: path.display().to_string(),
                reason: "no such file (rtlab monitor --db writes one)".into(),
            });
        }
        if !Self::is_history(path) {
            return Err(HistoryError::History {
                path: path.display().to_string(),
                reason: "not an rtlab history database".into(),
            });
        }
        let conn = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE)
            .map_err(|e| error_at(path, e))?;
        let db = Self { conn, path: path.to_path_buf() };
        // A reader changes nothing in the file: no journal mode set (the monitor set WAL).
        db.conn.busy_timeout(std::time::Duration::from_secs(5)).map_err(db.sql())?;
        let version = db.user_version()?;
        if version != SCHEMA_VERSION {
            return Err(db.error(format!(
                "schema version {version}, this rtlab reads {SCHEMA_VERSION} (open it once with `rtlab monitor --db` of a matching version)"
            )));
        }
        Ok(db)
    }

    /// Whether `path` starts like a SQLite file with rtlab's application id.
    pub fn is_history(path: &Path) -> bool {
        use std::io::Read;
        let mut header = [0u8; 100];
        let Ok(mut file) = std::fs::File::open(path) else { return false };
        if file.read_exact(&mut header).is_err() || &header[..16] != b"SQLite format 3\0" {
            return false;
        }
        // The application id is the big-endian integer at offset 68 of the header.
        i64::from(u32::from_be_bytes([header[68], header[69], header[70], header[71]])) == APPLICATION_ID
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn error(&self, reason: impl Into<String>) -> HistoryError {
        HistoryError::History { path: self.path.display().to_string(), reason: reason.into() }
    }

    fn sql(&self) -> impl Fn(rusqlite::Error) -> HistoryError + '_ {
        move |e| self.error(e.to_string())
    }

    fn configure(&self) -> Result<(), HistoryError> {
        // WAL: a commit is one append to the log, readers see the last commit; NORMAL
        // syncs at checkpoints, which loses nothing when the process dies (only a power
        // failure can cost the last commits).
        self.conn
            // A small page cache: the writer appends, and a monitor's memory must stay flat
            // (SQLite's default cache grows to 2 MiB as the file does).
            .execute_batch(
                "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;
                 PRAGMA cache_size = -256;",
            )
            .map_err(self.sql())?;
        // SQLite answers an impossible mode by keeping the old one (a file system without
        // shared memory maps): then a reader could block the writer, and a commit is not one
        // append. Say so rather than run on without it.
        let mode: String = self.conn.query_row("PRAGMA journal_mode", [], |row| row.get(0)).map_err(self.sql())?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(self.error(format!(
                "its journal mode stayed {mode:?}: this file system does not offer SQLite's WAL mode; put the history on a local file system"
            )));
        }
        self.conn.busy_timeout(std::time::Duration::from_secs(5)).map_err(self.sql())
    }

    fn user_version(&self) -> Result<i64, HistoryError> {
        self.conn.query_row("PRAGMA user_version", [], |row| row.get(0)).map_err(self.sql())
    }

    fn migrate(&mut self) -> Result<(), HistoryError> {
        let application_id: i64 =
            self.conn.query_row("PRAGMA application_id", [], |row| row.get(0)).map_err(self.sql())?;
        let version = self.user_version()?;
        if application_id != APPLICATION_ID && !(application_id == 0 && version == 0 && self.is_empty()?) {
            return Err(self.error("not an rtlab history database (another program's SQLite file)"));
        }
        if version > SCHEMA_VERSION {
            return Err(self.error(format!(
                "schema version {version} was written by a newer rtlab (this one knows up to {SCHEMA_VERSION})"
            )));
        }
        for (from, migration) in MIGRATIONS.iter().enumerate().skip(version as usize) {
            let tx = self.conn.transaction().map_err(|e| error_at(&self.path, e))?;
            tx.execute_batch(migration).map_err(|e| error_at(&self.path, e))?;
            tx.execute_batch(&format!("PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = {};", from + 1))
                .map_err(|e| error_at(&self.path, e))?;
            tx.commit().map_err(|e| error_at(&self.path, e))?;
        }
        if version < SCHEMA_VERSION {
            // In WAL mode the new header (application id, version) reaches the main file
            // only at a checkpoint: without one, `is_history` would not know the file
            // while the monitor that created it runs.
            self.conn
                .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
                .map_err(|e| error_at(&self.path, e))?;
        }
        Ok(())
    }

    fn is_empty(&self) -> Result<bool, HistoryError> {
        let tables: i64 =
            self.conn.query_row("SELECT count(*) FROM sqlite_master", [], |row| row.get(0)).map_err(self.sql())?;
        Ok(tables == 0)
    }

    /// `PRAGMA integrity_check`: Ok when SQLite finds the file sound.
    pub fn integrity_check(&self) -> Result<(), HistoryError> {
        let answer: String = self.conn.query_row("PRAGMA integrity_check", [], |row| row.get(0)).map_err(self.sql())?;
        if answer == "ok" {
            Ok(())
        } else {
            Err(self.error(format!("integrity check failed: {answer}")))
        }
    }

    /// Starts a session at `now_ns`: records the gap since the last window and whether the
    /// kernel changed since the previous session.
    pub fn begin_session(
        &mut self,
        host: &SystemInfo,
        settings: &MonitorSettings,
        now_ns: i64,
    ) -> Result<Session, HistoryError> {
        let identity = HostIdentity::of(host);
        let previous: Option<(String, i64)> = self
            .conn
            .query_row("SELECT kernel_release, started_ns FROM sessions ORDER BY id DESC LIMIT 1", [], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })
            .optional()
            .map_err(self.sql())?;
        let last_end: Option<i64> =
            self.conn.query_row("SELECT max(end_ns) FROM windows", [], |row| row.get(0)).map_err(self.sql())?;
        let gap_before_ns = previous.as_ref().map(|(_, started)| (now_ns - last_end.unwrap_or(*started)).max(0));
        let previous_kernel = previous.map(|(kernel, _)| kernel).filter(|kernel| *kernel != identity.kernel_release);
        let host_json = serde_json::to_string(host).map_err(|e| self.error(e.to_string()))?;
        let settings_json = serde_json::to_string(settings).map_err(|e| self.error(e.to_string()))?;
        self.conn
            .execute(
                "INSERT INTO sessions (started_ns, hostname, kernel_release, preemption, cmdline_hash,
                    previous_kernel, gap_before_ns, host_json, settings_json)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                params![
                    now_ns,
                    identity.hostname,
                    identity.kernel_release,
                    identity.preemption,
                    identity.cmdline_hash,
                    previous_kernel,
                    gap_before_ns,
                    host_json,
                    settings_json
                ],
            )
            .map_err(self.sql())?;
        Ok(Session {
            id: self.conn.last_insert_rowid(),
            started_ns: now_ns,
            ended_ns: None,
            end_reason: None,
            identity,
            previous_kernel,
            gap_before_ns,
            host: host.clone(),
            settings: settings.clone(),
        })
    }

    /// Marks a session as ended cleanly (a killed monitor leaves `ended_ns` null).
    pub fn end_session(&mut self, session_id: i64, now_ns: i64, reason: &str) -> Result<(), HistoryError> {
        self.conn
            .execute(
                "UPDATE sessions SET ended_ns = ?1, end_reason = ?2 WHERE id = ?3",
                params![now_ns, reason, session_id],
            )
            .map_err(self.sql())?;
        Ok(())
    }

    /// Appends a window in one transaction: all of its metrics or nothing.
    pub fn append_window(&mut self, session_id: i64, record: &WindowRecord) -> Result<i64, HistoryError> {
        let path = self.path.clone();
        // IMMEDIATE: the write lock is taken at the start, so a reader's snapshot never
        // turns this commit into SQLITE_BUSY half-way.
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(|e| error_at(&path, e))?;
        let id = insert_window(&tx, session_id, record).map_err(|e| error_at(&path, e))?;
        tx.commit().map_err(|e| error_at(&path, e))?;
        Ok(id)
    }

    /// Every session, oldest first.
    pub fn sessions(&self) -> Result<Vec<Session>, HistoryError> {
        let mut statement = self
            .conn
            .prepare(
                "SELECT id, started_ns, ended_ns, end_reason, hostname, kernel_release, preemption, cmdline_hash,
                        previous_kernel, gap_before_ns, host_json, settings_json
                 FROM sessions ORDER BY id",
            )
            .map_err(self.sql())?;
        let rows = statement
            .query_map([], |row| {
                Ok((
                    row.get::<_, i64>(0)?,
                    row.get::<_, i64>(1)?,
                    row.get::<_, Option<i64>>(2)?,
                    row.get::<_, Option<String>>(3)?,
                    HostIdentity {
                        hostname: row.get(4)?,
                        kernel_release: row.get(5)?,
                        preemption: row.get(6)?,
                        cmdline_hash: row.get(7)?,
                    },
                    row.get::<_, Option<String>>(8)?,
                    row.get::<_, Option<i64>>(9)?,
                    row.get::<_, String>(10)?,
                    row.get::<_, String>(11)?,
                ))
            })
            .map_err(self.sql())?;
        let mut sessions = Vec::new();
        for row in rows {
            let (id, started_ns, ended_ns, end_reason, identity, previous_kernel, gap_before_ns, host, settings) =
                row.map_err(self.sql())?;
            sessions.push(Session {
                id,
                started_ns,
                ended_ns,
                end_reason,
                identity,
                previous_kernel,
                gap_before_ns,
                host: serde_json::from_str(&host)
                    .map_err(|e| self.error(format!("session {id}: damaged host: {e}")))?,
                settings: serde_json::from_str(&settings)
                    .map_err(|e| self.error(format!("session {id}: damaged settings: {e}")))?,
            });
        }
        Ok(sessions)
    }

    /// The rows that overlap `[since_ns, until_ns)`, oldest first (any bound may be open).
    pub fn windows(&self, since_ns: Option<i64>, until_ns: Option<i64>) -> Result<Vec<StoredWindow>, HistoryError> {
        read_windows(&self.conn, since_ns.unwrap_or(i64::MIN), until_ns.unwrap_or(i64::MAX))
            .map_err(|e| read_error(&self.path, e))
    }

    /// Applies `retention` as of `now_ns`: windows older than its `windows_for_ns` merge into
    /// one row per hour, hours older than `hours_for_ns` into one row per day (per session
    /// and phase, so a kernel change stays visible), and rows that ended before `keep_ns` are
    /// deleted. Only buckets that lie wholly before the cutoff are merged, each into the row
    /// its bucket may already have, so an hour or a day is always one row. One transaction
    /// per bucket: memory holds one bucket's rows, and a kill leaves each bucket as it was
    /// before or after.
    pub fn thin(&mut self, now_ns: i64, retention: &Retention) -> Result<ThinOutcome, HistoryError> {
        let path = self.path.clone();
        let mut outcome = ThinOutcome::default();
        let steps = [
            (Resolution::Window, Resolution::Hour, HOUR_NS, retention.windows_for_ns),
            (Resolution::Hour, Resolution::Day, DAY_NS, retention.hours_for_ns),
        ];
        for (from, into, width, age) in steps {
            let open_bucket_start = now_ns.saturating_sub(age).div_euclid(width) * width;
            let buckets: Vec<(i64, String, i64)> = {
                let mut statement = self
                    .conn
                    .prepare(
                        "SELECT DISTINCT session_id, phase, start_ns / ?2 FROM windows
                         WHERE resolution = ?1 AND start_ns < ?3 AND start_ns >= 0",
                    )
                    .map_err(|e| error_at(&path, e))?;
                let rows = statement
                    .query_map(params![from.as_str(), width, open_bucket_start], |row| {
                        Ok((row.get(0)?, row.get(1)?, row.get(2)?))
                    })
                    .map_err(|e| error_at(&path, e))?;
                rows.collect::<rusqlite::Result<_>>().map_err(|e| error_at(&path, e))?
            };
            for (session_id, phase, bucket) in buckets {
                let tx = self
                    .conn
                    .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                    .map_err(|e| error_at(&path, e))?;
                let rows = read_where(
                    &tx,
                    "w.session_id = ?1 AND w.phase = ?2 AND w.start_ns >= ?3 AND w.start_ns < ?4
                     AND w.resolution IN (?5, ?6)",
                    &[
                        &session_id as &dyn rusqlite::ToSql,
                        &phase,
                        &(bucket * width),
                        &((bucket + 1) * width),
                        &from.as_str(),
                        &into.as_str(),
                    ],
                )
                .map_err(|e| read_error(&path, e))?;
                let mut merged: Option<WindowRecord> = None;
                let mut thinned = 0u64;
                for row in &rows {
                    thinned += u64::from(row.record.resolution == from);
                    match &mut merged {
                        Some(m) => m.merge(&row.record).map_err(|e| at_path(&path, e))?,
                        None => {
                            let mut first = row.record.clone();
                            first.resolution = into;
                            first.activity = None;
                            merged = Some(first);
                        }
                    }
                    tx.execute("DELETE FROM windows WHERE id = ?1", [row.id]).map_err(|e| error_at(&path, e))?;
                }
                if let Some(merged) = merged {
                    insert_window(&tx, session_id, &merged).map_err(|e| error_at(&path, e))?;
                }
                tx.commit().map_err(|e| error_at(&path, e))?;
                match into {
                    Resolution::Hour => outcome.merged_into_hours += thinned,
                    _ => outcome.merged_into_days += thinned,
                }
            }
        }
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(|e| error_at(&path, e))?;
        outcome.deleted = tx
            .execute("DELETE FROM windows WHERE end_ns < ?1", [now_ns.saturating_sub(retention.keep_ns)])
            .map_err(|e| error_at(&path, e))? as u64;
        tx.commit().map_err(|e| error_at(&path, e))?;
        Ok(outcome)
    }
}

fn error_at(path: &Path, e: rusqlite::Error) -> HistoryError {
    HistoryError::History { path: path.display().to_string(), reason: e.to_string() }
}

fn at_path(path: &Path, e: ResultsError) -> HistoryError {
    match e {
        ResultsError::History { reason, .. } => HistoryError::History { path: path.display().to_string(), reason },
        other => HistoryError::Results(other),
    }
}

fn read_error(path: &Path, e: ReadError) -> HistoryError {
    match e {
        ReadError::Sql(e) => error_at(path, e),
        ReadError::Damaged(reason) => HistoryError::History { path: path.display().to_string(), reason },
    }
}

fn insert_window(conn: &Connection, session_id: i64, record: &WindowRecord) -> rusqlite::Result<i64> {
    let activity = record.activity.as_ref().and_then(|a| serde_json::to_string(a).ok());
    conn.execute(
        "INSERT INTO windows (session_id, start_ns, end_ns, resolution, merged, phase, activity_json)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            session_id,
            record.start_ns,
            record.end_ns,
            record.resolution.as_str(),
            record.merged as i64,
            record.phase,
            activity
        ],
    )?;
    let id = conn.last_insert_rowid();
    let mut statement = conn.prepare_cached(
        "INSERT INTO window_metrics (window_id, cpu, metric, count, min_ns, max_ns, sum_ns, sum_sq, overruns, lost, histogram)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    )?;
    for m in &record.metrics {
        let histogram =
            serde_json::to_string(&m.histogram).map_err(|e| rusqlite::Error::ToSqlConversionFailure(e.into()))?;
        let (min, max) = if m.moments.count > 0 { (Some(m.moments.min), Some(m.moments.max)) } else { (None, None) };
        statement.execute(params![
            id,
            m.cpu as i64,
            m.metric,
            m.moments.count as i64,
            min,
            max,
            m.moments.sum.to_string(),
            m.moments.sum_of_squares.to_string(),
            m.overruns as i64,
            m.lost as i64,
            histogram
        ])?;
    }
    Ok(id)
}

/// A count read from the file: negative means damaged.
fn non_negative(value: i64) -> Option<u64> {
    u64::try_from(value).ok()
}

enum ReadError {
    Sql(rusqlite::Error),
    Damaged(String),
}

impl From<rusqlite::Error> for ReadError {
    fn from(e: rusqlite::Error) -> Self {
        ReadError::Sql(e)
    }
}

fn read_windows(conn: &Connection, since: i64, until: i64) -> Result<Vec<StoredWindow>, ReadError> {
    read_where(conn, "w.end_ns > ?1 AND w.start_ns < ?2", &[&since as &dyn rusqlite::ToSql, &until])
}

fn read_where(
    conn: &Connection,
    condition: &str,
    values: &[&dyn rusqlite::ToSql],
) -> Result<Vec<StoredWindow>, ReadError> {
    let mut statement = conn.prepare(&format!(
        "SELECT w.id, w.session_id, w.start_ns, w.end_ns, w.resolution, w.merged, w.phase, w.activity_json,
                m.cpu, m.metric, m.count, m.min_ns, m.max_ns, m.sum_ns, m.sum_sq, m.overruns, m.lost, m.histogram
         FROM windows w LEFT JOIN window_metrics m ON m.window_id = w.id
         WHERE {condition}
         ORDER BY w.start_ns, w.id, m.cpu, m.metric"
    ))?;
    let mut rows = statement.query(values)?;
    let mut windows: Vec<StoredWindow> = Vec::new();
    while let Some(row) = rows.next()? {
        let id: i64 = row.get(0)?;
        if windows.last().is_none_or(|w| w.id != id) {
            let resolution: String = row.get(4)?;
            let activity: Option<String> = row.get(7)?;
            windows.push(StoredWindow {
                id,
                session_id: row.get(1)?,
                record: WindowRecord {
                    start_ns: row.get(2)?,
                    end_ns: row.get(3)?,
                    resolution: Resolution::parse(&resolution)
                        .ok_or_else(|| ReadError::Damaged(format!("window {id}: unknown resolution {resolution:?}")))?,
                    merged: non_negative(row.get(5)?)
                        .filter(|&m| m > 0)
                        .ok_or_else(|| ReadError::Damaged(format!("window {id}: damaged merged count")))?,
                    phase: row.get(6)?,
                    metrics: Vec::new(),
                    activity: activity.and_then(|a| serde_json::from_str(&a).ok()),
                },
            });
        }
        let Some(cpu) = row.get::<_, Option<i64>>(8)? else { continue };
        let damaged = |what: &str| ReadError::Damaged(format!("window {id}: damaged {what}"));
        let count = non_negative(row.get(10)?).ok_or_else(|| damaged("count"))?;
        let sum: i128 = row.get::<_, String>(13)?.parse().map_err(|_| damaged("sum"))?;
        let sum_of_squares: u128 = row.get::<_, String>(14)?.parse().map_err(|_| damaged("sum of squares"))?;
        let (min, max) = match (count, row.get::<_, Option<i64>>(11)?, row.get::<_, Option<i64>>(12)?) {
            (0, _, _) => (i64::MAX, i64::MIN),
            (_, Some(min), Some(max)) if min <= max => (min, max),
            _ => return Err(damaged("minimum and maximum")),
        };
        let moments = Moments { count, min, max, sum, sum_of_squares };
        let histogram: HistogramEncoding =
            serde_json::from_str(&row.get::<_, String>(17)?).map_err(|_| damaged("histogram"))?;
        let window = windows.last_mut().expect("pushed above");
        window.record.metrics.push(WindowMetric {
            cpu: cpu as usize,
            metric: row.get(9)?,
            moments,
            histogram,
            overruns: non_negative(row.get(15)?).ok_or_else(|| damaged("overruns"))?,
            lost: non_negative(row.get(16)?).ok_or_else(|| damaged("lost"))?,
        });
    }
    Ok(windows)
}

#[cfg(test)]
mod tests;
