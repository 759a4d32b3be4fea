//! Shipping a replica's audit records to PostgreSQL (`[audit.postgres]`).
//!
//! The local hash-chained file stays the record written before a result
//! returns; a background task copies it to the fleet's table
//! (`audit/postgres.rs`) at least once, idempotently (a record is keyed by
//! replica and sequence number). The task remembers how far it got: at
//! start it asks the database for the replica's last shipped record and
//! skips the file up to it (checking that the hashes agree, so that two
//! logs shipping under one replica id are noticed), then follows the file
//! by its byte offset. A crash loses nothing: what was not shipped is still
//! in the file and is shipped after the restart.
//!
//! Trusts the file only as far as `audit verify` does: every line is
//! checked (hash and form) before it is shipped, lines are read at most
//! [`SHIP_READ_BYTES`] at a time, batches hold at most `batch_rows`
//! records, and a failure backs off from `poll_interval_ms` to
//! `max_backoff_secs` (`[audit.postgres]`; defaults `DEFAULT_MAX_SHIP_BATCH`,
//! `DEFAULT_SHIP_POLL_INTERVAL`, `DEFAULT_SHIP_MAX_BACKOFF` in `limits.rs`,
//! each range-checked here). A line that does not
//! verify stops shipping (it is logged, and retried after the backoff):
//! damage is not copied into the fleet's record.

use super::postgres::{self, Row};
use super::verify::check_line;
use super::{AuditSettings, MAX_LINE_BYTES};
use crate::limits::{
    DEFAULT_MAX_SHIP_BATCH, DEFAULT_POSTGRES_CONNECT_TIMEOUT, DEFAULT_SHIP_MAX_BACKOFF, DEFAULT_SHIP_POLL_INTERVAL,
    MAX_POSTGRES_CONNECT_TIMEOUT, MAX_SHIP_BATCH_CEILING, MAX_SHIP_MAX_BACKOFF, MAX_SHIP_POLL_INTERVAL,
    MIN_SHIP_POLL_INTERVAL, in_range,
};
use serde::Deserialize;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::{AsyncReadExt as _, AsyncSeekExt as _};

/// At most this many bytes of the log are read at a time: room for at
/// least one line of the longest length the readers accept.
pub const SHIP_READ_BYTES: usize = 2 * MAX_LINE_BYTES + 2;
/// A replica id is at most this many bytes of `[A-Za-z0-9_.-]`.
pub const MAX_REPLICA_ID_BYTES: usize = 64;
/// A `url_file` larger than this is refused.
pub const MAX_URL_FILE_BYTES: u64 = 4096;

/// Validated `[audit.postgres]`.
#[derive(Clone, PartialEq, Eq)]
pub struct PostgresSettings {
    /// `postgresql://USER:PASSWORD@HOST:PORT/DB` (from `url` or `url_file`).
    pub url: String,
    /// This replica's id: its records are stored under it.
    pub replica: String,
    /// Most records inserted in one statement (`batch_rows`).
    pub batch_rows: usize,
    /// How often the log is looked at for new records, and the first
    /// backoff after a failure (`poll_interval_ms`).
    pub poll_interval: Duration,
    /// The longest wait between attempts while PostgreSQL fails
    /// (`max_backoff_secs`).
    pub max_backoff: Duration,
    /// How long connecting to PostgreSQL may take (`connect_timeout_secs`).
    pub connect_timeout: Duration,
}

impl fmt::Debug for PostgresSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresSettings")
            .field("url", &"<redacted>")
            .field("replica", &self.replica)
            .field("batch_rows", &self.batch_rows)
            .field("poll_interval", &self.poll_interval)
            .field("max_backoff", &self.max_backoff)
            .field("connect_timeout", &self.connect_timeout)
            .finish()
    }
}

/// `[audit.postgres]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPostgres {
    url: Option<String>,
    url_file: Option<PathBuf>,
    replica: String,
    batch_rows: Option<usize>,
    poll_interval_ms: Option<u64>,
    max_backoff_secs: Option<u64>,
    connect_timeout_secs: Option<u64>,
}

impl PostgresSettings {
    /// Check `[audit.postgres]`; a relative `url_file` is resolved by `resolve`.
    ///
    /// # Errors
    ///
    /// Neither or both of `url` and `url_file`, an unreadable `url_file`, a
    /// URL PostgreSQL would not take, a replica id that is not one, or a
    /// batch size or duration out of its range (named with the range).
    pub fn from_raw(raw: RawPostgres, resolve: &dyn Fn(&Path) -> PathBuf) -> Result<Self, String> {
        let url = match (raw.url, raw.url_file) {
            (Some(url), None) => url,
            (None, Some(file)) => read_url(&resolve(&file))?,
            _ => return Err("postgres: give exactly one of `url` and `url_file`".to_owned()),
        };
        if let Err(err) = url.parse::<tokio_postgres::Config>() {
            return Err(format!(
                "postgres: the URL is not a PostgreSQL URL ({err}); write postgresql://USER@HOST:PORT/DB"
            ));
        }
        let valid = |b: u8| b.is_ascii_alphanumeric() || b"_.-".contains(&b);
        if raw.replica.is_empty() || raw.replica.len() > MAX_REPLICA_ID_BYTES || !raw.replica.bytes().all(valid) {
            return Err(format!(
                "postgres: replica = {:?} is not accepted: use 1 to {MAX_REPLICA_ID_BYTES} characters from \
                 [A-Za-z0-9_.-], unique in the fleet",
                crate::render::cap(&raw.replica, 80)
            ));
        }
        let batch_rows = match raw.batch_rows {
            None => DEFAULT_MAX_SHIP_BATCH,
            Some(n) => in_range("postgres: batch_rows", n, 1, MAX_SHIP_BATCH_CEILING)?,
        };
        let poll_interval = match raw.poll_interval_ms {
            None => DEFAULT_SHIP_POLL_INTERVAL,
            Some(ms) => Duration::from_millis(in_range(
                "postgres: poll_interval_ms",
                ms,
                millis(MIN_SHIP_POLL_INTERVAL),
                millis(MAX_SHIP_POLL_INTERVAL),
            )?),
        };
        let secs = |key: &str, value: Option<u64>, default: Duration, max: Duration| match value {
            None => Ok(default),
            Some(v) => in_range(key, v, 1, max.as_secs()).map(Duration::from_secs),
        };
        let max_backoff =
            secs("postgres: max_backoff_secs", raw.max_backoff_secs, DEFAULT_SHIP_MAX_BACKOFF, MAX_SHIP_MAX_BACKOFF)?;
        if max_backoff < poll_interval {
            return Err(format!(
                "postgres: max_backoff_secs = {} is shorter than poll_interval_ms = {}, where the backoff starts: \
                 raise max_backoff_secs or lower poll_interval_ms",
                max_backoff.as_secs(),
                poll_interval.as_millis()
            ));
        }
        let connect_timeout = secs(
            "postgres: connect_timeout_secs",
            raw.connect_timeout_secs,
            DEFAULT_POSTGRES_CONNECT_TIMEOUT,
            MAX_POSTGRES_CONNECT_TIMEOUT,
        )?;
        Ok(Self { url, replica: raw.replica, batch_rows, poll_interval, max_backoff, connect_timeout })
    }
}

/// `duration` in whole milliseconds.
fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

fn read_url(path: &Path) -> Result<String, String> {
    use std::io::Read as _;
    let named = |m: String| format!("postgres: url_file = {:?}: {m}", path.display());
    let file = std::fs::File::open(path).map_err(|e| named(format!("cannot open: {e}")))?;
    let mut text = String::new();
    file.take(MAX_URL_FILE_BYTES + 1).read_to_string(&mut text).map_err(|e| named(format!("cannot read: {e}")))?;
    if text.len() as u64 > MAX_URL_FILE_BYTES {
        return Err(named(format!("the file is larger than {MAX_URL_FILE_BYTES} bytes; it holds one URL")));
    }
    Ok(text.trim().to_owned())
}

/// The running shipper; dropping it stops the task.
pub struct Shipper {
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Shipper {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Start shipping the log `settings` names, when it has `[audit.postgres]`.
/// Must be called within a tokio runtime.
pub fn spawn(settings: &AuditSettings) -> Option<Shipper> {
    let postgres = settings.postgres.clone()?;
    let file = settings.file.clone();
    tracing::info!(replica = %postgres.replica, "shipping audit records of {} to PostgreSQL", file.display());
    Some(Shipper { task: tokio::spawn(run(file, postgres)) })
}

/// Where the shipper is in the log.
#[derive(Debug, Default)]
struct Position {
    /// Bytes of the log shipped (or skipped as shipped before).
    offset: u64,
    /// `seq` of the last record shipped or skipped.
    seq: u64,
    /// The database's last record for this replica, until the file has been
    /// read up to it; `None` once the skipping is done.
    skip_to: Option<(u64, String)>,
    /// Whether the database was asked where to start.
    started: bool,
}

async fn run(file: PathBuf, settings: PostgresSettings) {
    let mut position = Position::default();
    let mut backoff = settings.poll_interval;
    loop {
        match ship_while_connected(&file, &settings, &mut position).await {
            Ok(()) => backoff = settings.poll_interval,
            Err(err) => {
                tracing::warn!(replica = %settings.replica, "audit shipping paused for {backoff:?}: {err}");
                tokio::time::sleep(backoff).await;
                backoff = backoff.saturating_mul(2).min(settings.max_backoff);
            }
        }
    }
}

/// Connect and ship until something fails.
async fn ship_while_connected(file: &Path, settings: &PostgresSettings, position: &mut Position) -> Result<(), String> {
    let client = postgres::connect(&settings.url, settings.connect_timeout).await.map_err(|e| e.0)?;
    postgres::ensure_table(&client).await.map_err(|e| e.0)?;
    if !position.started {
        position.skip_to = postgres::last_shipped(&client, &settings.replica).await.map_err(|e| e.0)?;
        position.started = true;
    }
    let mut log = tokio::fs::File::open(file).await.map_err(|e| format!("cannot open {}: {e}", file.display()))?;
    let mut buf = Vec::new();
    loop {
        let rows = read_batch(&mut log, position, &mut buf, settings.batch_rows).await?;
        if rows.rows.is_empty() {
            position.offset = rows.offset;
            if rows.more {
                continue;
            }
            tokio::time::sleep(settings.poll_interval).await;
            continue;
        }
        postgres::insert(&client, &settings.replica, &rows.rows).await.map_err(|e| e.0)?;
        position.offset = rows.offset;
        position.seq = rows.rows.last().map_or(position.seq, |r| r.seq);
    }
}

/// Records read from the log past the position.
struct Batch {
    rows: Vec<Row>,
    /// The offset after them (and after records skipped as shipped).
    offset: u64,
    /// Whether complete lines were left unread (the batch is full).
    more: bool,
}

/// Read up to `batch_rows` complete records after `position`, skipping
/// those the database already has.
async fn read_batch(
    log: &mut tokio::fs::File,
    position: &mut Position,
    buf: &mut Vec<u8>,
    batch_rows: usize,
) -> Result<Batch, String> {
    log.seek(std::io::SeekFrom::Start(position.offset)).await.map_err(|e| format!("cannot seek the log: {e}"))?;
    buf.clear();
    buf.resize(SHIP_READ_BYTES, 0);
    let mut filled = 0;
    while filled < buf.len() {
        let Some(room) = buf.get_mut(filled..) else { break };
        let read = log.read(room).await.map_err(|e| format!("cannot read the log: {e}"))?;
        if read == 0 {
            break;
        }
        filled += read;
    }
    let data = buf.get(..filled).unwrap_or_default();
    let mut rows = Vec::new();
    let mut offset = position.offset;
    let mut rest = data;
    while let Some(end) = rest.iter().position(|&b| b == b'\n') {
        if rows.len() >= batch_rows {
            return Ok(Batch { rows, offset, more: true });
        }
        let (line, after) = rest.split_at(end);
        rest = after.get(1..).unwrap_or_default();
        let line_offset = offset;
        offset += line.len() as u64 + 1;
        let checked = check_line(line).map_err(|why| {
            format!("the log's record at byte {line_offset} does not verify, so it is not shipped: {why}")
        })?;
        if let Some((last, hash)) = &position.skip_to {
            if checked.seq < *last {
                continue;
            }
            if checked.seq == *last && checked.hash != *hash {
                return Err(format!(
                    "PostgreSQL holds a different record {last} for this replica id: is another log shipping under \
                     the same [audit.postgres] replica?"
                ));
            }
            if checked.seq == *last {
                position.skip_to = None;
                continue;
            }
            position.skip_to = None;
        }
        let text = String::from_utf8(line.to_vec()).map_err(|_| "a log line is not UTF-8".to_owned())?;
        rows.push(Row { seq: checked.seq, prev: checked.prev, hash: checked.hash, line: text });
    }
    if rows.is_empty() && offset == position.offset && filled == SHIP_READ_BYTES {
        return Err(format!("a line of the log at byte {offset} is longer than {MAX_LINE_BYTES} bytes"));
    }
    let more = filled == SHIP_READ_BYTES;
    Ok(Batch { rows, offset, more })
}

#[cfg(test)]
mod tests {
    use super::super::{AuditEntry, AuditLog, Durability};
    use super::*;
    use crate::outcome::Decision;

    fn log_with(n: usize) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let settings = AuditSettings {
            file: path.clone(),
            durability: Durability::Flush,
            record_arguments: true,
            redact_keys: Vec::new(),
            postgres: None,
        };
        let log = AuditLog::open(settings).unwrap();
        for i in 0..n {
            log.append(&AuditEntry {
                call_id: format!("c{i}"),
                principal: "alice".into(),
                tool: "echo".into(),
                session: None,
                component_digest: None,
                component_ref: None,
                signer: None,
                arguments: serde_json::json!({"text": i}),
                decision: Decision::Allow,
                policy: None,
                outcome: "ok".into(),
                message: None,
                duration_us: 1,
                fuel_used: None,
            })
            .unwrap();
        }
        (dir, path)
    }

    async fn batch_of(path: &Path, position: &mut Position, batch_rows: usize) -> Batch {
        let mut file = tokio::fs::File::open(path).await.unwrap();
        read_batch(&mut file, position, &mut Vec::new(), batch_rows).await.unwrap()
    }

    async fn batch(path: &Path, position: &mut Position) -> Batch {
        batch_of(path, position, DEFAULT_MAX_SHIP_BATCH).await
    }

    #[tokio::test]
    async fn batches_hold_at_most_batch_rows_records() {
        for batch_rows in [1, 3] {
            let (_dir, path) = log_with(2 * batch_rows + 1);
            let mut position = Position::default();
            let mut sizes = Vec::new();
            loop {
                let next = batch_of(&path, &mut position, batch_rows).await;
                if next.rows.is_empty() {
                    break;
                }
                sizes.push((next.rows.len(), next.more));
                position.offset = next.offset;
            }
            // A full batch says more records follow; the last one does not.
            assert_eq!(sizes, [(batch_rows, true), (batch_rows, true), (1, false)], "batch_rows = {batch_rows}");
        }
    }

    #[test]
    fn shipping_keys_default_and_are_range_checked_by_name() {
        let section = |extra: &str| {
            format!(
                "[audit]\nfile = \"audit.jsonl\"\n[audit.postgres]\nurl = \"postgresql://a@127.0.0.1:5432/db\"\n\
                 replica = \"r1\"\n{extra}"
            )
        };
        let postgres =
            |extra: &str| crate::config::testing::parse(&section(extra)).unwrap().audit.unwrap().postgres.unwrap();
        let defaults = postgres("");
        assert_eq!(defaults.batch_rows, DEFAULT_MAX_SHIP_BATCH);
        assert_eq!(defaults.poll_interval, DEFAULT_SHIP_POLL_INTERVAL);
        assert_eq!(defaults.max_backoff, DEFAULT_SHIP_MAX_BACKOFF);
        assert_eq!(defaults.connect_timeout, DEFAULT_POSTGRES_CONNECT_TIMEOUT);
        let set =
            postgres("batch_rows = 10000\npoll_interval_ms = 10\nmax_backoff_secs = 3600\nconnect_timeout_secs = 1");
        assert_eq!(set.batch_rows, MAX_SHIP_BATCH_CEILING);
        assert_eq!(set.poll_interval, MIN_SHIP_POLL_INTERVAL);
        assert_eq!(set.max_backoff, MAX_SHIP_MAX_BACKOFF);
        assert_eq!(set.connect_timeout, Duration::from_secs(1));
        for (bad, expect) in [
            ("batch_rows = 0", "[audit] postgres: batch_rows = 0 is out of range: accepted 1..=10000"),
            ("batch_rows = 10001", "batch_rows = 10001 is out of range"),
            ("poll_interval_ms = 9", "poll_interval_ms = 9 is out of range: accepted 10..=60000"),
            ("max_backoff_secs = 0", "max_backoff_secs = 0 is out of range: accepted 1..=3600"),
            ("poll_interval_ms = 5000\nmax_backoff_secs = 2", "max_backoff_secs = 2 is shorter than poll_interval_ms"),
            ("connect_timeout_secs = 301", "connect_timeout_secs = 301 is out of range: accepted 1..=300"),
        ] {
            crate::config::testing::check_err(&section(bad), &[expect]);
        }
    }

    #[tokio::test]
    async fn batches_are_bounded_and_follow_the_file() {
        let (_dir, path) = log_with(DEFAULT_MAX_SHIP_BATCH + 3);
        let mut position = Position::default();
        let first = batch(&path, &mut position).await;
        assert_eq!(first.rows.len(), DEFAULT_MAX_SHIP_BATCH);
        assert!(first.more);
        assert_eq!(first.rows.first().map(|r| r.seq), Some(1));
        position.offset = first.offset;
        let second = batch(&path, &mut position).await;
        assert_eq!(second.rows.iter().map(|r| r.seq).collect::<Vec<_>>(), [501, 502, 503]);
        assert_eq!(second.offset, std::fs::metadata(&path).unwrap().len());
        // Each row is the line as written, and chains to the one before.
        let lines = std::fs::read_to_string(&path).unwrap();
        assert_eq!(second.rows.last().map(|r| r.line.as_str()), lines.lines().last());
        assert_eq!(second.rows.first().map(|r| &r.prev), first.rows.last().map(|r| &r.hash));
    }

    #[tokio::test]
    async fn records_the_database_has_are_skipped_and_a_different_chain_is_refused() {
        let (_dir, path) = log_with(5);
        let lines: Vec<String> = std::fs::read_to_string(&path).unwrap().lines().map(str::to_owned).collect();
        let third: serde_json::Value = serde_json::from_str(&lines[2]).unwrap();
        let hash = third["hash"].as_str().unwrap().to_owned();
        let mut position = Position { skip_to: Some((3, hash)), ..Position::default() };
        let rest = batch(&path, &mut position).await;
        assert_eq!(rest.rows.iter().map(|r| r.seq).collect::<Vec<_>>(), [4, 5]);
        assert!(position.skip_to.is_none());
        let mut position = Position { skip_to: Some((3, "f".repeat(64))), ..Position::default() };
        let mut file = tokio::fs::File::open(&path).await.unwrap();
        let err = read_batch(&mut file, &mut position, &mut Vec::new(), DEFAULT_MAX_SHIP_BATCH).await.err().unwrap();
        assert!(err.contains("another log"), "{err}");
    }

    #[tokio::test]
    async fn a_damaged_line_is_not_shipped() {
        let (_dir, path) = log_with(3);
        let text = std::fs::read_to_string(&path).unwrap().replacen("\"alice\"", "\"mallory\"", 1);
        std::fs::write(&path, text).unwrap();
        let mut file = tokio::fs::File::open(&path).await.unwrap();
        let err = read_batch(&mut file, &mut Position::default(), &mut Vec::new(), DEFAULT_MAX_SHIP_BATCH)
            .await
            .err()
            .unwrap();
        assert!(err.contains("does not verify"), "{err}");
    }

    #[test]
    fn settings_need_one_url_and_a_plain_replica_id() {
        let raw = |url: Option<&str>, replica: &str| RawPostgres {
            url: url.map(str::to_owned),
            url_file: None,
            replica: replica.to_owned(),
            batch_rows: None,
            poll_interval_ms: None,
            max_backoff_secs: None,
            connect_timeout_secs: None,
        };
        let resolve = |p: &Path| p.to_owned();
        let ok = PostgresSettings::from_raw(raw(Some("postgresql://a@127.0.0.1:5432/db"), "r-1"), &resolve).unwrap();
        assert!(!format!("{ok:?}").contains("127.0.0.1"), "the URL may hold a password");
        assert!(PostgresSettings::from_raw(raw(None, "r1"), &resolve).unwrap_err().contains("exactly one"));
        let long = "r".repeat(MAX_REPLICA_ID_BYTES + 1);
        for bad in ["", "a/b", long.as_str()] {
            let err = PostgresSettings::from_raw(raw(Some("postgresql://a@h/db"), bad), &resolve).unwrap_err();
            assert!(err.contains("replica"), "{err}");
        }
    }
}
