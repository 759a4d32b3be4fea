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
//! replica) and rows are read in pages of [`VERIFY_PAGE_ROWS`], few enough
//! that a page of records of the longest length accepted stays within
//! [`VERIFY_PAGE_BYTES`]; a stored record longer than that length is
//! reported by its length, its text never fetched.
//!
//! Every statement is bounded by `[audit.postgres] statement_timeout_secs`
//! (`DEFAULT_POSTGRES_STATEMENT_TIMEOUT` for `audit verify --postgres`), and
//! the connection sends TCP keepalives ([`KEEPALIVE_IDLE`]), so a server
//! that stops answering fails the statement instead of holding it forever.

use super::settings::{DEFAULT_POSTGRES_CONNECT_TIMEOUT, DEFAULT_POSTGRES_STATEMENT_TIMEOUT};
use super::verify::check_line;
use super::{GENESIS, MAX_LINE_BYTES};
use std::fmt;
use std::future::Future;
use std::time::Duration;
use tokio_postgres::{Client, NoTls};

/// The table every replica ships to.
pub const AUDIT_TABLE: &str = "airlock_audit";
/// A page the verifier reads holds at most this many bytes of records.
pub const VERIFY_PAGE_BYTES: usize = 64 * 1024 * 1024;
/// The verifier reads this many rows at a time: as many records of the
/// longest length accepted ([`MAX_LINE_BYTES`]) as fit in
/// [`VERIFY_PAGE_BYTES`]. (A longer record is not fetched: its length is.)
pub const VERIFY_PAGE_ROWS: i64 = (VERIFY_PAGE_BYTES / MAX_LINE_BYTES) as i64;
/// Idle time after which the connection to PostgreSQL sends TCP keepalives
/// (the kernel's default is two hours), and the interval between them.
pub const KEEPALIVE_IDLE: Duration = Duration::from_secs(60);
/// The interval between TCP keepalives once they are sent.
pub const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(15);
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

/// Run `statement`, failing it when it has not finished within `timeout`
/// (`[audit.postgres] statement_timeout_secs`). The statement is dropped
/// unfinished; the caller drops the connection with it.
async fn bounded<T>(
    timeout: Duration,
    doing: &'static str,
    statement: impl Future<Output = Result<T, tokio_postgres::Error>>,
) -> Result<T, PostgresError> {
    match tokio::time::timeout(timeout, statement).await {
        Ok(result) => result.map_err(db_error(doing)),
        Err(_) => Err(PostgresError(format!(
            "PostgreSQL: cannot {doing}: no answer within {}s ([audit.postgres] statement_timeout_secs)",
            timeout.as_secs_f64()
        ))),
    }
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
    config.keepalives(true).keepalives_idle(KEEPALIVE_IDLE).keepalives_interval(KEEPALIVE_INTERVAL);
    let (client, connection) = config.connect(NoTls).await.map_err(db_error("connect"))?;
    tokio::spawn(async move {
        if let Err(err) = connection.await {
            tracing::debug!("the PostgreSQL connection ended: {err}");
        }
    });
    Ok(client)
}

/// Create the table if it is not there, within `timeout`.
///
/// # Errors
///
/// The statement fails or takes longer than `timeout` (two replicas
/// creating it at once: the next try finds it).
pub async fn ensure_table(client: &Client, timeout: Duration) -> Result<(), PostgresError> {
    let sql = format!(
        "CREATE TABLE IF NOT EXISTS {AUDIT_TABLE} (replica text NOT NULL, seq bigint NOT NULL, prev text NOT NULL, \
         hash text NOT NULL, record text NOT NULL, shipped_at timestamptz NOT NULL DEFAULT now(), \
         PRIMARY KEY (replica, seq))"
    );
    bounded(timeout, "create the audit table", client.batch_execute(&sql)).await
}

/// The highest sequence number stored for `replica` and its hash, asked
/// within `timeout`.
///
/// # Errors
///
/// The query fails or takes longer than `timeout`.
pub async fn last_shipped(
    client: &Client,
    replica: &str,
    timeout: Duration,
) -> Result<Option<(u64, String)>, PostgresError> {
    let sql = format!("SELECT seq, hash FROM {AUDIT_TABLE} WHERE replica = $1 ORDER BY seq DESC LIMIT 1");
    let row = bounded(timeout, "read the last shipped record", client.query_opt(&sql, &[&replica])).await?;
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

/// Insert `rows` for `replica` in one statement, within `timeout`; rows
/// already there are left as they are.
///
/// # Errors
///
/// The statement fails or takes longer than `timeout`: nothing of the batch
/// is inserted (a statement that timed out may still commit; shipping it
/// again inserts nothing twice).
pub async fn insert(client: &Client, replica: &str, rows: &[Row], timeout: Duration) -> Result<(), PostgresError> {
    let sql = format!(
        "INSERT INTO {AUDIT_TABLE} (replica, seq, prev, hash, record) SELECT $1, s, p, h, r FROM \
         unnest($2::bigint[], $3::text[], $4::text[], $5::text[]) AS t(s, p, h, r) ON CONFLICT (replica, seq) DO NOTHING"
    );
    let seqs: Vec<i64> = rows.iter().map(|r| i64::try_from(r.seq).unwrap_or(i64::MAX)).collect();
    let prevs: Vec<&str> = rows.iter().map(|r| r.prev.as_str()).collect();
    let hashes: Vec<&str> = rows.iter().map(|r| r.hash.as_str()).collect();
    let lines: Vec<&str> = rows.iter().map(|r| r.line.as_str()).collect();
    bounded(timeout, "insert audit records", client.execute(&sql, &[&replica, &seqs, &prevs, &hashes, &lines]))
        .await
        .map(drop)
}

/// Verify every replica's chain as stored at `url` (connecting within
/// `DEFAULT_POSTGRES_CONNECT_TIMEOUT`, each statement within
/// `DEFAULT_POSTGRES_STATEMENT_TIMEOUT`): each record checks,
/// follows the one before it, and no sequence number is missing. (Records
/// missing after a replica's last stored one cannot be seen here: the
/// replica's local log and head file are the record of those.)
///
/// # Errors
///
/// The database cannot be reached or read.
pub async fn verify(url: &str) -> Result<Vec<ReplicaReport>, PostgresError> {
    let client = connect(url, DEFAULT_POSTGRES_CONNECT_TIMEOUT).await?;
    let timeout = DEFAULT_POSTGRES_STATEMENT_TIMEOUT;
    let replicas = format!("SELECT DISTINCT replica FROM {AUDIT_TABLE} ORDER BY replica");
    // The record's length comes first, and its text only when it is within
    // the cap: an over-long record is reported without being fetched.
    let page = format!(
        "SELECT seq, octet_length(record)::bigint, CASE WHEN octet_length(record) <= {MAX_LINE_BYTES} THEN record END \
         FROM {AUDIT_TABLE} WHERE replica = $1 AND seq > $2 ORDER BY seq LIMIT {VERIFY_PAGE_ROWS}"
    );
    let mut reports = Vec::new();
    for row in bounded(timeout, "list the replicas", client.query(&replicas, &[])).await? {
        let replica: String = row.get(0);
        let mut report = ReplicaReport { replica: replica.clone(), ..ReplicaReport::default() };
        // The hash the next record must name as `prev`; `None` after a gap
        // or a record that did not verify, where the chain cannot be followed.
        let mut prev = Some(GENESIS.to_owned());
        let mut after: i64 = 0;
        loop {
            let rows = bounded(timeout, "read audit records", client.query(&page, &[&replica, &after])).await?;
            let Some(last) = rows.last() else { break };
            after = last.get(0);
            for row in &rows {
                let stored: i64 = row.get(0);
                let length: i64 = row.get(1);
                let record: Option<String> = row.get(2);
                let seq = u64::try_from(stored).unwrap_or(0);
                report.records += 1;
                let expected = report.last_seq.saturating_add(1);
                if seq > expected {
                    report.gap(expected, seq - 1);
                    prev = None;
                }
                report.last_seq = seq;
                let Some(record) = record.filter(|r| r.len() <= MAX_LINE_BYTES) else {
                    report.broken(seq, format!("the record has {length} bytes, more than {MAX_LINE_BYTES}"));
                    prev = None;
                    continue;
                };
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_verify_page_of_the_longest_records_fits_its_byte_bound() {
        let rows = usize::try_from(VERIFY_PAGE_ROWS).unwrap();
        assert!(rows >= 1);
        assert!(rows * MAX_LINE_BYTES <= VERIFY_PAGE_BYTES, "{rows} rows of {MAX_LINE_BYTES} bytes");
    }

    /// A PostgreSQL that accepts a session (no TLS, no password) and then
    /// never answers a statement, and its URL.
    async fn silent_server() -> (tokio::task::JoinHandle<()>, String) {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("postgresql://airlock@127.0.0.1:{}/db", listener.local_addr().unwrap().port());
        let task = tokio::spawn(async move {
            let Ok((mut socket, _)) = listener.accept().await else { return };
            // The startup message: its length (which counts itself), then the rest.
            let length = socket.read_u32().await.unwrap();
            let mut rest = vec![0; usize::try_from(length).unwrap() - 4];
            socket.read_exact(&mut rest).await.unwrap();
            // AuthenticationOk, then ReadyForQuery (idle).
            socket.write_all(&[b'R', 0, 0, 0, 8, 0, 0, 0, 0, b'Z', 0, 0, 0, 5, b'I']).await.unwrap();
            // Read statements and answer none of them.
            let mut sink = vec![0; 4096];
            while let Ok(1..) = socket.read(&mut sink).await {}
        });
        (task, url)
    }

    #[tokio::test]
    async fn a_statement_that_gets_no_answer_fails_after_the_statement_timeout() {
        let (server, url) = silent_server().await;
        let client = connect(&url, Duration::from_secs(30)).await.unwrap();
        // The server never answers: the timeout is the only way out.
        let err = ensure_table(&client, Duration::from_millis(50)).await.unwrap_err();
        assert!(err.0.contains("no answer within") && err.0.contains("statement_timeout_secs"), "{err}");
        let err = last_shipped(&client, "r1", Duration::from_millis(50)).await.unwrap_err();
        assert!(err.0.contains("read the last shipped record"), "{err}");
        server.abort();
    }
}
