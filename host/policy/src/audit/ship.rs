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
//! checked (hash and form, and that its `prev` is the `hash` of the record
//! shipped before it, the database's last one at start) before it is
//! shipped, lines are read at most [`SHIP_READ_BYTES`] at a time, batches
//! hold at most `batch_rows` records, every statement is bounded by
//! `statement_timeout_secs`, and a failure backs off from
//! `poll_interval_ms` to `max_backoff_secs`, back to the start once a batch
//! is shipped (`[audit.postgres]`, declared in `audit/settings.rs` with
//! each default and range). A line that does not verify or does not follow
//! the one before stops shipping before it (what precedes it is shipped; it
//! is logged as an error and looked at again after the backoff, never
//! skipped): damage is not copied into the fleet's record. The connection is plaintext, so
//! the URL must name a loopback host unless `allow_plaintext = true`
//! (checked with the rest of the section in `audit/settings.rs`).

use super::postgres::{self, Row};
use super::settings::PostgresSettings;
use super::verify::check_line;
use super::{AuditSettings, GENESIS, MAX_LINE_BYTES};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::{AsyncReadExt as _, AsyncSeekExt as _};

/// At most this many bytes of the log are read at a time: room for at
/// least one line of the longest length the readers accept.
pub const SHIP_READ_BYTES: usize = 2 * MAX_LINE_BYTES + 2;

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
    /// The `hash` of the last record shipped or skipped (at start the
    /// database's last record's, or the genesis hash when it has none): the
    /// next record's `prev` must be it. `None` only before the database was
    /// asked (and in tests), when no record is checked against it.
    head: Option<String>,
    /// The database's last record for this replica, until the file has been
    /// read up to it; `None` once the skipping is done.
    skip_to: Option<(u64, String)>,
    /// Whether the database was asked where to start.
    started: bool,
}

impl Position {
    /// Move past `batch` (once its rows, if any, are shipped).
    fn passed(&mut self, batch: Batch) {
        self.offset = batch.offset;
        self.seq = batch.rows.last().map_or(self.seq, |r| r.seq);
        self.head = batch.head;
        self.skip_to = batch.skip_to;
    }
}

/// The wait between attempts while shipping fails: `poll_interval_ms` at
/// first, doubled after each failure up to `max_backoff_secs`, and back to
/// the first once a batch is shipped.
#[derive(Debug)]
struct Backoff {
    first: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    fn new(first: Duration, max: Duration) -> Self {
        Self { first, max, next: first }
    }

    /// An attempt failed: how long to wait before the next one.
    fn failed(&mut self) -> Duration {
        let wait = self.next;
        self.next = self.next.saturating_mul(2).min(self.max);
        wait
    }

    /// A batch was shipped: the next failure waits the shortest time again.
    fn shipped(&mut self) {
        self.next = self.first;
    }
}

/// Why shipping stopped.
#[derive(Debug)]
enum Paused {
    /// The database or the log could not be used: retried after the backoff.
    Failed(String),
    /// The log holds a record that must not be shipped as it is (it does not
    /// verify, does not follow the record before it, or differs from what
    /// the database holds): logged as an error and retried after the
    /// backoff, never skipped.
    Refused(String),
}

impl From<postgres::PostgresError> for Paused {
    fn from(err: postgres::PostgresError) -> Self {
        Self::Failed(err.0)
    }
}

async fn run(file: PathBuf, settings: PostgresSettings) {
    let mut position = Position::default();
    let mut backoff = Backoff::new(settings.poll_interval, settings.max_backoff);
    loop {
        let paused = match ship_while_connected(&file, &settings, &mut position, &mut backoff).await {
            Ok(never) => match never {},
            Err(paused) => paused,
        };
        let wait = backoff.failed();
        match paused {
            Paused::Failed(why) => {
                tracing::warn!(replica = %settings.replica, "audit shipping paused for {wait:?}: {why}");
            }
            Paused::Refused(why) => {
                tracing::error!(replica = %settings.replica, "audit shipping stopped (looked at again in {wait:?}): {why}");
            }
        }
        tokio::time::sleep(wait).await;
    }
}

/// Connect and ship until something fails (the connection is dropped with
/// it); each batch shipped resets `backoff`.
async fn ship_while_connected(
    file: &Path,
    settings: &PostgresSettings,
    position: &mut Position,
    backoff: &mut Backoff,
) -> Result<std::convert::Infallible, Paused> {
    let timeout = settings.statement_timeout;
    let client = postgres::connect(&settings.url, settings.connect_timeout).await?;
    postgres::ensure_table(&client, timeout).await?;
    if !position.started {
        let last = postgres::last_shipped(&client, &settings.replica, timeout).await?;
        position.head = Some(last.as_ref().map_or_else(|| GENESIS.to_owned(), |(_, hash)| hash.clone()));
        position.skip_to = last;
        position.started = true;
    }
    let mut log = tokio::fs::File::open(file)
        .await
        .map_err(|e| Paused::Failed(format!("cannot open {}: {e}", file.display())))?;
    let mut buf = Vec::new();
    loop {
        let batch = read_batch(&mut log, position, &mut buf, settings.batch_rows).await?;
        if batch.rows.is_empty() {
            let more = batch.more;
            position.passed(batch);
            if !more {
                tokio::time::sleep(settings.poll_interval).await;
            }
            continue;
        }
        postgres::insert(&client, &settings.replica, &batch.rows, timeout).await?;
        position.passed(batch);
        backoff.shipped();
    }
}

/// Records read from the log past the position.
#[derive(Debug)]
struct Batch {
    rows: Vec<Row>,
    /// The offset after them (and after records skipped as shipped).
    offset: u64,
    /// Whether complete lines were left unread (the batch is full, or ends
    /// before a record that is refused).
    more: bool,
    /// The hash of the last record read (shipped or skipped).
    head: Option<String>,
    /// What is left of the position's `skip_to`.
    skip_to: Option<(u64, String)>,
}

/// Read up to `batch_rows` complete records after `position`, skipping
/// those the database already has. A record that is refused ends the batch
/// before it; when it is the first, it is the error.
async fn read_batch(
    log: &mut tokio::fs::File,
    position: &Position,
    buf: &mut Vec<u8>,
    batch_rows: usize,
) -> Result<Batch, Paused> {
    let failed = |what: &str, e: std::io::Error| Paused::Failed(format!("cannot {what} the log: {e}"));
    log.seek(std::io::SeekFrom::Start(position.offset)).await.map_err(|e| failed("seek", e))?;
    buf.clear();
    buf.resize(SHIP_READ_BYTES, 0);
    let mut filled = 0;
    while filled < buf.len() {
        let Some(room) = buf.get_mut(filled..) else { break };
        let read = log.read(room).await.map_err(|e| failed("read", e))?;
        if read == 0 {
            break;
        }
        filled += read;
    }
    let data = buf.get(..filled).unwrap_or_default();
    let mut batch = Batch {
        rows: Vec::new(),
        offset: position.offset,
        more: false,
        head: position.head.clone(),
        skip_to: position.skip_to.clone(),
    };
    // Ends the batch before the record at `offset`, or fails with `why` when
    // nothing comes before it.
    let refuse = |batch: Batch, why: String| {
        if batch.rows.is_empty() { Err(Paused::Refused(why)) } else { Ok(Batch { more: true, ..batch }) }
    };
    let mut rest = data;
    while let Some(end) = rest.iter().position(|&b| b == b'\n') {
        if batch.rows.len() >= batch_rows {
            return Ok(Batch { more: true, ..batch });
        }
        let (line, after) = rest.split_at(end);
        rest = after.get(1..).unwrap_or_default();
        let line_offset = batch.offset;
        let checked = match check_line(line) {
            Ok(checked) => checked,
            Err(why) => {
                let why =
                    format!("the log's record at byte {line_offset} does not verify, so it is not shipped: {why}");
                return refuse(batch, why);
            }
        };
        if let Some((last, hash)) = &batch.skip_to {
            if checked.seq < *last {
                batch.offset += line.len() as u64 + 1;
                continue;
            }
            if checked.seq == *last {
                if checked.hash != *hash {
                    return Err(Paused::Refused(format!(
                        "PostgreSQL holds a different record {last} for this replica id: is another log shipping \
                         under the same [audit.postgres] replica?"
                    )));
                }
                batch.offset += line.len() as u64 + 1;
                batch.head = Some(checked.hash);
                batch.skip_to = None;
                continue;
            }
            batch.skip_to = None;
        }
        if let Some(head) = batch.head.as_ref().filter(|head| **head != checked.prev) {
            let why = format!(
                "the log's record {} at byte {line_offset} names {:?} as \"prev\", not {head:?}, the hash of the \
                 record shipped before it: a record was removed, replaced or reordered, so nothing from here on \
                 is shipped (check the log with `airlock audit verify`)",
                checked.seq, checked.prev
            );
            return refuse(batch, why);
        }
        let text =
            String::from_utf8(line.to_vec()).map_err(|_| Paused::Refused("a log line is not UTF-8".to_owned()))?;
        batch.offset += line.len() as u64 + 1;
        batch.head = Some(checked.hash.clone());
        batch.rows.push(Row { seq: checked.seq, prev: checked.prev, hash: checked.hash, line: text });
    }
    if batch.rows.is_empty() && batch.offset == position.offset && filled == SHIP_READ_BYTES {
        return Err(Paused::Refused(format!(
            "a line of the log at byte {} is longer than {MAX_LINE_BYTES} bytes",
            batch.offset
        )));
    }
    batch.more = filled == SHIP_READ_BYTES;
    Ok(batch)
}

#[cfg(test)]
mod tests;
