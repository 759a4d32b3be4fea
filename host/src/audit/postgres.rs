//! The fleet's copy of every replica's audit chain, in PostgreSQL: the
//! table, the idempotent insert the shipper uses, and the verifier behind
//! `airlock audit verify --postgres URL`.
//!
//! One row per record, keyed by (replica, seq), with the record's line as
//! written (text, not `jsonb`: the hash covers the exact bytes) and its
//! `prev` and `hash`. A record shipped twice is inserted once (`ON CONFLICT
//! DO NOTHING`).
//!
//! Trusts nothing read back from the database: every record is checked as
//! `audit verify` checks a local line (its hash recomputed, its form
//! exact), against the sequence number it is stored under and the hash of
//! the record before it. Reports are capped ([`MAX_REPORTED_PROBLEMS`] per
//! replica) and rows are read in pages of [`VERIFY_PAGE_ROWS`].

use super::verify::check_line;
use super::{GENESIS, MAX_LINE_BYTES};
use crate::limits::DEFAULT_POSTGRES_CONNECT_TIMEOUT;
use std::fmt;
use std::time::Duration;
use tokio_postgres::{Client, NoTls};

/// The table every replica ships to.
pub const AUDIT_TABLE: &str = "airlock_audit";
/// The verifier reads this many rows at a time.
pub const VERIFY_PAGE_ROWS: i64 = 5000;
/// At most this many gaps and this many breaks are listed per replica (all
/// are counted).
pub const MAX_REPORTED_PROBLEMS: usize = 20;

/// A replica's part of the fleet's audit, as `verify` found it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplicaReport {
    /// The replica id.
    pub replica: String,
    /// Records stored for it.
    pub records: u64,
    /// The highest sequence number stored.
    pub last_seq: u64,
    /// Missing sequence numbers, as inclusive ranges (the first
    /// [`MAX_REPORTED_PROBLEMS`]).
    pub gaps: Vec<(u64, u64)>,
    /// How many ranges are missing in all.
    pub gap_count: usize,
    /// Records that do not verify or do not follow the one before: (seq,
    /// why) (the first [`MAX_REPORTED_PROBLEMS`]).
    pub breaks: Vec<(u64, String)>,
    /// How many records broke the chain in all.
    pub break_count: usize,
}

impl ReplicaReport {
    /// Whether the replica's chain is complete and intact in the database.
    pub fn is_intact(&self) -> bool {
        self.gap_count == 0 && self.break_count == 0
    }

    fn gap(&mut self, from: u64, to: u64) {
        self.gap_count += 1;
        if self.gaps.len() < MAX_REPORTED_PROBLEMS {
            self.gaps.push((from, to));
        }
    }

    fn broken(&mut self, seq: u64, why: String) {
        self.break_count += 1;
        if self.breaks.len() < MAX_REPORTED_PROBLEMS {
            self.breaks.push((seq, why));
        }
    }
}

impl fmt::Display for ReplicaReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = if self.is_intact() { "ok" } else { "BROKEN" };
        write!(f, "{state}: replica {:?}: {} records up to {}", self.replica, self.records, self.last_seq)?;
        if self.gap_count > 0 {
            let listed: Vec<String> =
                self.gaps.iter().map(|&(a, b)| if a == b { a.to_string() } else { format!("{a}-{b}") }).collect();
            write!(f, "; {} gaps (missing records {})", self.gap_count, listed.join(", "))?;
        }
        for (seq, why) in &self.breaks {
            write!(f, "; record {seq}: {why}")?;
        }
        if self.break_count > self.breaks.len() {
            write!(f, "; {} more breaks", self.break_count - self.breaks.len())?;
        }
        Ok(())
    }
}

/// A database error, in words (the URL never appears: it may hold a password).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct PostgresError(pub String);

fn db_error(doing: &'static str) -> impl Fn(tokio_postgres::Error) -> PostgresError {
    move |err| PostgresError(format!("PostgreSQL: cannot {doing}: {err}"))
}

/// Connect to `url`, waiting at most `timeout` (`[audit.postgres]
/// connect_timeout_secs`); the connection runs on a task of its own until
/// the client is dropped.
///
/// # Errors
///
/// The URL is not a PostgreSQL URL or the server cannot be reached.
pub async fn connect(url: &str, timeout: Duration) -> Result<Client, PostgresError> {
    let mut config: tokio_postgres::Config =
        url.parse().map_err(|e| PostgresError(format!("the PostgreSQL URL is not valid: {e}")))?;
    config.connect_timeout(timeout);
    let (client, connection) = config.connect(NoTls).await.map_err(db_error("connect"))?;
    tokio::spawn(async move {
        if let Err(err) = connection.await {
            tracing::debug!("the PostgreSQL connection ended: {err}");
        }
    });
    Ok(client)
}

/// Create the table if it is not there.
///
/// # Errors
///
/// The statement fails (two replicas creating it at once: the next try
/// finds it).
pub async fn ensure_table(client: &Client) -> Result<(), PostgresError> {
    let sql = format!(
        "CREATE TABLE IF NOT EXISTS {AUDIT_TABLE} (replica text NOT NULL, seq bigint NOT NULL, prev text NOT NULL, \
         hash text NOT NULL, record text NOT NULL, shipped_at timestamptz NOT NULL DEFAULT now(), \
         PRIMARY KEY (replica, seq))"
    );
    client.batch_execute(&sql).await.map_err(db_error("create the audit table"))
}

/// The highest sequence number stored for `replica` and its hash.
///
/// # Errors
///
/// The query fails.
pub async fn last_shipped(client: &Client, replica: &str) -> Result<Option<(u64, String)>, PostgresError> {
    let sql = format!("SELECT seq, hash FROM {AUDIT_TABLE} WHERE replica = $1 ORDER BY seq DESC LIMIT 1");
    let row = client.query_opt(&sql, &[&replica]).await.map_err(db_error("read the last shipped record"))?;
    Ok(row.map(|row| (u64::try_from(row.get::<_, i64>(0)).unwrap_or(0), row.get::<_, String>(1))))
}

/// One record to ship: its sequence number, `prev`, `hash` and line.
#[derive(Debug, Clone)]
pub struct Row {
    /// `seq`.
    pub seq: u64,
    /// `prev`.
    pub prev: String,
    /// `hash`.
    pub hash: String,
    /// The line as written, without its line end.
    pub line: String,
}

/// Insert `rows` for `replica` in one statement; rows already there are
/// left as they are.
///
/// # Errors
///
/// The statement fails: nothing of the batch is inserted.
pub async fn insert(client: &Client, replica: &str, rows: &[Row]) -> Result<(), PostgresError> {
    let sql = format!(
        "INSERT INTO {AUDIT_TABLE} (replica, seq, prev, hash, record) SELECT $1, s, p, h, r FROM \
         unnest($2::bigint[], $3::text[], $4::text[], $5::text[]) AS t(s, p, h, r) ON CONFLICT (replica, seq) DO NOTHING"
    );
    let seqs: Vec<i64> = rows.iter().map(|r| i64::try_from(r.seq).unwrap_or(i64::MAX)).collect();
    let prevs: Vec<&str> = rows.iter().map(|r| r.prev.as_str()).collect();
    let hashes: Vec<&str> = rows.iter().map(|r| r.hash.as_str()).collect();
    let lines: Vec<&str> = rows.iter().map(|r| r.line.as_str()).collect();
    client
        .execute(&sql, &[&replica, &seqs, &prevs, &hashes, &lines])
        .await
        .map(drop)
        .map_err(db_error("insert audit records"))
}

/// Verify every replica's chain as stored at `url` (connecting within
/// `DEFAULT_POSTGRES_CONNECT_TIMEOUT`): each record checks,
/// follows the one before it, and no sequence number is missing. (Records
/// missing after a replica's last stored one cannot be seen here: the
/// replica's local log and head file are the record of those.)
///
/// # Errors
///
/// The database cannot be reached or read.
pub async fn verify(url: &str) -> Result<Vec<ReplicaReport>, PostgresError> {
    let client = connect(url, DEFAULT_POSTGRES_CONNECT_TIMEOUT).await?;
    let replicas = format!("SELECT DISTINCT replica FROM {AUDIT_TABLE} ORDER BY replica");
    let page = format!(
        "SELECT seq, record FROM {AUDIT_TABLE} WHERE replica = $1 AND seq > $2 ORDER BY seq LIMIT {VERIFY_PAGE_ROWS}"
    );
    let mut reports = Vec::new();
    for row in client.query(&replicas, &[]).await.map_err(db_error("list the replicas"))? {
        let replica: String = row.get(0);
        let mut report = ReplicaReport { replica: replica.clone(), ..ReplicaReport::default() };
        // The hash the next record must name as `prev`; `None` after a gap
        // or a record that did not verify, where the chain cannot be followed.
        let mut prev = Some(GENESIS.to_owned());
        let mut after: i64 = 0;
        loop {
            let rows = client.query(&page, &[&replica, &after]).await.map_err(db_error("read audit records"))?;
            let Some(last) = rows.last() else { break };
            after = last.get(0);
            for row in &rows {
                let stored: i64 = row.get(0);
                let record: String = row.get(1);
                let seq = u64::try_from(stored).unwrap_or(0);
                report.records += 1;
                let expected = report.last_seq.saturating_add(1);
                if seq > expected {
                    report.gap(expected, seq - 1);
                    prev = None;
                }
                report.last_seq = seq;
                if record.len() > MAX_LINE_BYTES {
                    report.broken(seq, format!("the record is longer than {MAX_LINE_BYTES} bytes"));
                    prev = None;
                    continue;
                }
                match check_line(record.as_bytes()) {
                    Err(why) => {
                        report.broken(seq, why);
                        prev = None;
                    }
                    Ok(checked) if checked.seq != seq => {
                        report.broken(seq, format!("the record says it is record {}", checked.seq));
                        prev = None;
                    }
                    Ok(checked) => {
                        if prev.as_ref().is_some_and(|p| *p != checked.prev) {
                            report.broken(
                                seq,
                                "\"prev\" is not the hash of the record before it: a record was removed, replaced \
                                 or reordered"
                                    .to_owned(),
                            );
                        }
                        prev = Some(checked.hash);
                    }
                }
            }
            if rows.len() < usize::try_from(VERIFY_PAGE_ROWS).unwrap_or(usize::MAX) {
                break;
            }
        }
        reports.push(report);
    }
    Ok(reports)
}
