//! `[audit]` and `[audit.postgres]`, each key declared once ([`AUDIT`],
//! [`POSTGRES`]): where the log is, when a record counts as written, what
//! it keeps of the arguments, and where and how it is shipped.
//!
//! Trusts the operator's file and the `url_file` it names (read once, at
//! most [`MAX_URL_FILE_BYTES`]). The connection to PostgreSQL is
//! plaintext, so the URL must name a loopback host unless
//! `allow_plaintext = true` (`plaintext.rs`); a URL that asks for TLS is
//! refused. The URL is never repeated in a message or shown: it may hold a
//! password.

use super::Durability;
use airlock_core::plaintext;
use airlock_settings::key_doc::Value;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A replica id is at most this many bytes of `[A-Za-z0-9_.-]`.
pub const MAX_REPLICA_ID_BYTES: usize = 64;
/// A `url_file` larger than this is refused.
pub const MAX_URL_FILE_BYTES: u64 = 4096;
/// Default of `[audit.postgres] batch_rows`: records inserted in one
/// statement.
pub const DEFAULT_MAX_SHIP_BATCH: usize = 500;
/// Default of `[audit.postgres] poll_interval_ms`: how often the log is
/// looked at for new records, and the first backoff after a failure.
pub const DEFAULT_SHIP_POLL_INTERVAL: Duration = Duration::from_millis(200);
/// Default of `[audit.postgres] max_backoff_secs`: the longest wait between
/// attempts while PostgreSQL fails.
pub const DEFAULT_SHIP_MAX_BACKOFF: Duration = Duration::from_secs(10);
/// Default of `[audit.postgres] connect_timeout_secs`: how long connecting
/// to PostgreSQL may take (also for `airlock audit verify --postgres`).
pub const DEFAULT_POSTGRES_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Default of `[audit.postgres] statement_timeout_secs`: how long one
/// statement (creating the table, reading the last shipped record, an
/// insert, a page of `audit verify --postgres`) may take before the
/// shipper drops the connection and backs off.
pub const DEFAULT_POSTGRES_STATEMENT_TIMEOUT: Duration = Duration::from_secs(30);

airlock_settings::section! {
    /// The keys of `[audit]`.
    pub const AUDIT: Section<AuditSettings> = "audit";
    /// `[audit]` as written.
    pub struct RawAudit {
        postgres: Option<RawPostgres>,
    }
    hand {
        /// the log file (its head file is this path with `.head` appended); `airlock audit verify FILE` checks it
        file: PathBuf, RestartWhileShipped, accepts "a path", unset "required in `[audit]`: without the section no log is kept",
            show |a: &AuditSettings| Some(Value::path(&a.file)),
            set "\"airlock-audit.jsonl\"";
        /// when a record counts as written: `"flush"`, handed to the OS before the result returns; `"fsync"`, also synced to disk
        durability: Option<String>, Reload, accepts "`\"flush\"` or `\"fsync\"`", unset "`\"flush\"`",
            show |a: &AuditSettings| Some(Value::Text(a.durability.as_str().to_owned())),
            set "\"flush\"";
    }
    /// Validated `[audit]` settings.
    #[derive(Debug, Clone, PartialEq, Eq)]
    group pub struct AuditSettings (RawAuditKeys) at () {
        /// The log file; its head file is this path with `.head` appended.
        pub file: PathBuf = PathBuf::new(),
        /// `file` as the operator wrote it (before a relative path was resolved),
        /// for the errors that name the key.
        pub file_as_written: PathBuf = PathBuf::new(),
        /// When a record counts as written.
        pub durability: Durability = Durability::Flush,
        /// Where records are also shipped (`[audit.postgres]`), if anywhere.
        pub postgres: Option<PostgresSettings> = None;
        /// whether records carry the arguments (redacted), not only their sha256 digest
        record_arguments => record_arguments: bool = false, Reload, set default;
        /// object keys whose values are recorded as `"[redacted]"`, at any depth, compared case-insensitively
        redact_keys => redact_keys: Vec<String> = Vec::new(), Reload, set "[\"password\", \"token\", \"secret\"]";
    }
}

impl AuditSettings {
    /// Check `[audit]`; a relative `file` is resolved by `resolve`.
    ///
    /// # Errors
    ///
    /// A `durability` other than `"flush"` or `"fsync"`, or a key of
    /// `[audit.postgres]` refused, naming the key and what is accepted.
    pub fn from_raw(raw: RawAudit, resolve: &dyn Fn(&Path) -> PathBuf) -> Result<AuditSettings, String> {
        let mut settings = Self::from_keys(&(&raw).into(), &Self::defaults(), &AUDIT.scope())?;
        settings.durability = match raw.durability.as_deref() {
            None | Some("flush") => Durability::Flush,
            Some("fsync") => Durability::Fsync,
            Some(other) => {
                return Err(format!("[audit] durability = {other:?} is not accepted: use \"flush\" or \"fsync\""));
            }
        };
        settings.redact_keys = settings.redact_keys.iter().map(|k| k.to_ascii_lowercase()).collect();
        settings.file = resolve(&raw.file);
        settings.file_as_written = raw.file;
        settings.postgres = raw.postgres.map(|p| PostgresSettings::from_raw(p, resolve)).transpose()?;
        Ok(settings)
    }
}

airlock_settings::section! {
    /// The keys of `[audit.postgres]`.
    pub const POSTGRES: Section<PostgresSettings> = "audit.postgres";
    /// `[audit.postgres]` as written.
    pub struct RawPostgres {}
    hand {
        /// `postgresql://USER[:PASSWORD]@HOST:PORT/DB` (exactly one of `url` and `url_file`); never shown
        url: Option<String>, Restart, accepts "a PostgreSQL URL to a loopback host, unless `allow_plaintext`",
            unset "not set: `url_file`",
            identity |p: &PostgresSettings| Some(p.url.clone()),
            example "\"postgresql://airlock@127.0.0.1:5432/audit\"";
        /// a file holding the URL (exactly one of `url` and `url_file`)
        url_file: Option<PathBuf>, Restart, accepts "a path to a file of at most 4096 bytes", unset "not set: `url`",
            example "\"/run/secrets/audit-url\"";
        /// this replica's id, unique in the fleet: its records are stored under it
        replica: String, Restart, accepts "1 to 64 characters of `[A-Za-z0-9_.-]`",
            unset "required in `[audit.postgres]`",
            show |p: &PostgresSettings| Some(Value::Text(p.replica.clone())),
            example "\"replica-1\"";
    }
    /// Validated `[audit.postgres]`.
    #[derive(Clone, PartialEq, Eq)]
    group pub struct PostgresSettings (RawPostgresKeys) at () {
        /// `postgresql://USER:PASSWORD@HOST:PORT/DB` (from `url` or `url_file`).
        pub url: String = String::new(),
        /// This replica's id: its records are stored under it.
        pub replica: String = String::new();
        /// records inserted in one statement
        batch_rows => batch_rows: usize = DEFAULT_MAX_SHIP_BATCH, Restart, range Count 1..=10_000;
        /// how often the log is looked at for new records, and the first wait after a failure
        poll_interval_ms => poll_interval: Duration = DEFAULT_SHIP_POLL_INTERVAL, Restart,
            range Millis 10..=60_000;
        /// the longest wait between attempts while PostgreSQL fails; at least `poll_interval_ms`
        max_backoff_secs => max_backoff: Duration = DEFAULT_SHIP_MAX_BACKOFF, Restart, range Secs 1..=3600;
        /// how long connecting to PostgreSQL may take (also for `airlock audit verify --postgres`)
        connect_timeout_secs => connect_timeout: Duration = DEFAULT_POSTGRES_CONNECT_TIMEOUT, Restart,
            range Secs 1..=300;
        /// how long one statement may take; then the shipper drops the connection and backs off
        statement_timeout_secs => statement_timeout: Duration = DEFAULT_POSTGRES_STATEMENT_TIMEOUT, Restart,
            range Secs 1..=3600;
        /// whether the URL may name a host other than loopback, to which the connection is unencrypted
        allow_plaintext => allow_plaintext: bool = false, Restart;
    }
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
            .field("statement_timeout", &self.statement_timeout)
            .field("allow_plaintext", &self.allow_plaintext)
            .finish()
    }
}

impl PostgresSettings {
    /// Check `[audit.postgres]`; a relative `url_file` is resolved by `resolve`.
    ///
    /// # Errors
    ///
    /// Neither or both of `url` and `url_file`, an unreadable `url_file`, a
    /// URL PostgreSQL would not take, one that asks for TLS (`sslmode=require`
    /// or `verify-*`) or names a host that is not loopback without
    /// `allow_plaintext` (see `plaintext.rs`), a replica id that is not one,
    /// or a batch size or duration out of its range (named with the range).
    pub fn from_raw(raw: RawPostgres, resolve: &dyn Fn(&Path) -> PathBuf) -> Result<Self, String> {
        let scope = POSTGRES.scope();
        let url = match (&raw.url, &raw.url_file) {
            (Some(url), None) => url.clone(),
            (None, Some(file)) => read_url(&resolve(file))?,
            _ => return Err(format!("{scope} give exactly one of `url` and `url_file`")),
        };
        let mut settings = Self::from_keys(&(&raw).into(), &Self::defaults(), &scope)?;
        check_url(&url, settings.allow_plaintext)?;
        let valid = |b: u8| b.is_ascii_alphanumeric() || b"_.-".contains(&b);
        if raw.replica.is_empty() || raw.replica.len() > MAX_REPLICA_ID_BYTES || !raw.replica.bytes().all(valid) {
            return Err(format!(
                "{scope} replica = {:?} is not accepted: use 1 to {MAX_REPLICA_ID_BYTES} characters from \
                 [A-Za-z0-9_.-], unique in the fleet",
                airlock_core::text::cap(&raw.replica, 80)
            ));
        }
        if settings.max_backoff < settings.poll_interval {
            return Err(format!(
                "{scope} max_backoff_secs = {} is shorter than poll_interval_ms = {}, where the backoff starts: \
                 raise max_backoff_secs or lower poll_interval_ms",
                settings.max_backoff.as_secs(),
                settings.poll_interval.as_millis()
            ));
        }
        settings.url = url;
        settings.replica = raw.replica;
        Ok(settings)
    }
}

/// Refuse a URL PostgreSQL would not take, one that asks for TLS (which
/// this build cannot give), or one whose hosts are not all loopback unless
/// `allow_plaintext`. The URL itself is never repeated: it may hold a
/// password.
fn check_url(url: &str, allow_plaintext: bool) -> Result<(), String> {
    let key = "[audit.postgres] url";
    let config = match url.parse::<tokio_postgres::Config>() {
        Ok(config) => config,
        // tokio-postgres knows no `verify-ca` / `verify-full` and fails to
        // parse them; say why rather than that the URL is not one.
        Err(_) if url.to_ascii_lowercase().contains("sslmode=verify-") => {
            return Err(plaintext::tls_refusal("[audit.postgres]", key, "sslmode=verify-* asks for TLS"));
        }
        Err(err) => {
            return Err(format!(
                "[audit.postgres] url is not a PostgreSQL URL ({err}); write postgresql://USER@HOST:PORT/DB"
            ));
        }
    };
    if config.get_ssl_mode() == tokio_postgres::config::SslMode::Require {
        return Err(plaintext::tls_refusal("[audit.postgres]", key, "sslmode=require asks for TLS"));
    }
    if allow_plaintext {
        return Ok(());
    }
    // With `hostaddr` the connection goes to those addresses; otherwise to
    // the hosts (a Unix socket is on this machine).
    let remote = if config.get_hostaddrs().is_empty() {
        config.get_hosts().iter().find_map(|host| match host {
            tokio_postgres::config::Host::Tcp(name) if !plaintext::is_loopback(name) => Some(name.clone()),
            _ => None,
        })
    } else {
        config.get_hostaddrs().iter().find(|ip| !ip.is_loopback()).map(ToString::to_string)
    };
    match remote {
        Some(host) => Err(plaintext::refusal("[audit.postgres]", key, &format!("its host {host:?} is not loopback"))),
        None => Ok(()),
    }
}

fn read_url(path: &Path) -> Result<String, String> {
    use std::io::Read as _;
    let named = |m: String| format!("[audit.postgres] url_file = {:?}: {m}", path.display());
    let file = std::fs::File::open(path).map_err(|e| named(format!("cannot open: {e}")))?;
    let mut text = String::new();
    file.take(MAX_URL_FILE_BYTES + 1).read_to_string(&mut text).map_err(|e| named(format!("cannot read: {e}")))?;
    if text.len() as u64 > MAX_URL_FILE_BYTES {
        return Err(named(format!("the file is larger than {MAX_URL_FILE_BYTES} bytes; it holds one URL")));
    }
    Ok(text.trim().to_owned())
}

#[cfg(test)]
mod tests;
