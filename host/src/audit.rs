//! The audit stage: one append-only, hash-chained JSON line per call, and the
//! verifier behind `airlock audit verify`.
//!
//! # Trust
//!
//! Almost everything in an [`AuditEntry`] comes from someone Airlock does not
//! trust: call ids and principals from clients, tool names and arguments from
//! the model, error messages from guests. Every string field is capped (256
//! bytes, 1 KiB for `message`, 64 KiB of JSON for recorded arguments, each a
//! named constant below) and written as a JSON string, which escapes line
//! breaks: no input can split a record or smuggle in a second one. The files on
//! disk are not trusted either: [`verify`], [`tail`] and [`AuditLog::open`] read
//! lines of at most 1 MiB and report anything else as damage, never panic.
//!
//! # Format
//!
//! The log is a JSON-lines file (mode 0600 on unix when Airlock creates it).
//! Each line is one object with these members, in this order:
//!
//! ```text
//! seq time call_id principal tool [session] component_digest argument_digest
//! [arguments] decision policy outcome message duration_us fuel_used prev hash
//! ```
//!
//! `session` is present only for a call that ran in a session (the id the
//! model gave), so logs written before sessions existed still verify.
//!
//! `seq` counts from 1; `time` is when the record was appended (RFC 3339, UTC,
//! microseconds); `prev` is the `hash` of the record before (64 zeros for the
//! first record); `hash` is the lowercase hex SHA-256 of the record's canonical
//! JSON without the `hash` member. Canonical JSON here means: no whitespace,
//! object members sorted by name (UTF-8 byte order) at every depth, strings
//! escaped as in RFC 8785 (only `"`, `\` and control characters), numbers as
//! `serde_json` writes them. Outside `arguments` a record holds only strings,
//! `null` and integers, so an RFC 8785 implementation reproduces the hash of
//! any record whose arguments hold no fractions and no integer beyond ±2^53
//! (RFC 8785 prints every number as a double). Airlock writes every line
//! exactly in this form (values canonical, members in the order above), and
//! [`verify`] rejects a line that is not, so two JSON parsers can never
//! disagree about what a record says (duplicate member names, for instance).
//!
//! `arguments` are the redacted arguments in canonical JSON. They are replaced
//! by a string saying why when they are nested deeper than 64 levels, longer
//! than 64 KiB, or hold a floating-point number that `serde_json` would not
//! read back exactly (possible unless its `float_roundtrip` feature is on):
//! recorded arguments are exact or absent, never approximately right.
//! `argument_digest` covers the (redacted) arguments in every case.
//!
//! Beside the log, `<file>.head` holds `{"seq":N,"hash":"..."}` padded to a
//! fixed width: the last record Airlock wrote. It is rewritten in place after
//! every record, and the writer holds an exclusive lock on it for as long as
//! the log is open, so a second Airlock process cannot fork the chain.
//!
//! # What the log guarantees
//!
//! - **One record per call, written before the call returns.** When
//!   [`AuditLog::append`] returns `Ok`, the whole line has been handed to the
//!   operating system in a single `write` on a file opened with `O_APPEND`
//!   ([`Durability::Flush`]: it survives a crash of Airlock), or also
//!   `fdatasync`'d ([`Durability::Fsync`]: it survives a power loss).
//! - **Tampering shows.** [`verify`] reports, with the line number, a record
//!   that was edited (hash mismatch), removed (a gap in `seq`, or a `prev` that
//!   does not match), replaced by one from another log (`prev` mismatch),
//!   reordered, a line that is not a record, a file cut short (a partial last
//!   line, or fewer records than the head file names), and a log rewritten
//!   from some record on (its hash differs from the head file's).
//! - **No silent continuation of a damaged log.** [`AuditLog::open`] checks the
//!   last record and the head file and refuses to append after damage.
//!
//! # What it does not guarantee
//!
//! - **It is tamper-evident against partial edits, not tamper-proof.** The
//!   chain is plain SHA-256 with no secret: whoever can rewrite both the log
//!   and its head file can forge, extend or shorten the history and recompute
//!   every hash. `verify` prints
//!   the hash of the last record; copy it somewhere the attacker cannot write
//!   (a ticket, another machine, a notary) and a later `verify` that does not
//!   pass through that hash proves the log was rewritten.
//! - **No confidentiality.** The file is protected by its mode only. Arguments
//!   are recorded only when the operator asks, minus the values of the
//!   configured keys; `argument_digest` is an unkeyed hash, so arguments with
//!   little entropy can be confirmed by guessing (which is why it is computed
//!   after redaction).
//! - **Flush mode does not survive the machine.** After a power loss the log
//!   may end early or in a partial line, or disagree with its head file, and
//!   `verify` reports that, which is what happened.
//! - **The lock is advisory.** It stops a second Airlock writer, not other
//!   programs. [`verify`] can run while Airlock writes; it then accepts
//!   records written after it read the head file and ignores a final line
//!   still being written.
//! - `time` comes from the system clock and is not checked for order.

use std::borrow::Cow;
use std::fmt;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

mod verify;

use verify::check_last_line;
pub use verify::{tail, verify};

/// Cap of `call_id`, `principal`, `tool`, `component_digest`, `decision`,
/// `policy` and `outcome`, in bytes of UTF-8.
const MAX_FIELD_BYTES: usize = 256;
/// Cap of `message`, in bytes of UTF-8.
const MAX_MESSAGE_BYTES: usize = 1024;
/// Recorded arguments whose canonical JSON is longer than this are replaced by
/// a note; `argument_digest` still covers them.
const MAX_RECORDED_ARGUMENTS_BYTES: usize = 64 * 1024;
/// Recorded arguments nested deeper than this are replaced by a note, so that
/// every record stays well within `serde_json`'s parsing depth of 128.
const MAX_RECORDED_ARGUMENTS_DEPTH: usize = 64;
/// The longest line the readers accept. Airlock's own lines stay far below:
/// the caps above bound a record to roughly 80 KiB.
const MAX_LINE_BYTES: usize = 1024 * 1024;
/// The head file is always written as exactly this many bytes.
const HEAD_BYTES: usize = 128;
/// A head file longer than this is damaged, not read.
const MAX_HEAD_FILE_BYTES: u64 = 4096;
/// `prev` of the first record, and the hash a head file names before any record.
const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";
/// What replaces a redacted value.
const REDACTED: &str = "[redacted]";
/// Appended to a string that was cut at its cap.
const ELLIPSIS: &str = "…";
/// Block size for reading a log from its end.
const READ_CHUNK: u64 = 64 * 1024;

/// The members of a record, in the order they are written.
const FIELDS: [&str; 17] = [
    "seq",
    "time",
    "call_id",
    "principal",
    "tool",
    "session",
    "component_digest",
    "argument_digest",
    "arguments",
    "decision",
    "policy",
    "outcome",
    "message",
    "duration_us",
    "fuel_used",
    "prev",
    "hash",
];
/// The members a record may leave out.
const OPTIONAL_FIELDS: [&str; 2] = ["session", "arguments"];

/// When a record counts as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// The record is handed to the operating system (one `write(2)`) before the
    /// call's result is returned. It survives a crash of Airlock, not of the
    /// machine. There is no user-space buffer to flush: the write is the flush.
    #[default]
    Flush,
    /// As `Flush`, and the log and then the head file are `fdatasync`'d before
    /// the call's result is returned: the record survives a power loss. Costs
    /// two disk flushes per call.
    Fsync,
}

/// Validated `[audit]` settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditSettings {
    /// The log file; its head file is this path with `.head` appended.
    pub file: PathBuf,
    /// When a record counts as written.
    pub durability: Durability,
    /// Whether records carry the (redacted) arguments, not only their digest.
    pub record_arguments: bool,
    /// Object keys whose values are replaced by `"[redacted]"`, at any depth,
    /// compared case-insensitively. Expected in lowercase.
    pub redact_keys: Vec<String>,
}

/// What the pipeline reports about one call. The log adds `seq`, `time`,
/// `argument_digest`, `prev` and `hash`, and caps every string.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AuditEntry {
    /// The front end's id of the call (untrusted; capped at 256 bytes).
    pub call_id: String,
    /// Who asked for the call (untrusted; capped at 256 bytes).
    pub principal: String,
    /// The tool name as requested (untrusted; capped at 256 bytes).
    pub tool: String,
    /// The session id of a call that ran in a session (checked: at most 64
    /// plain characters).
    pub session: Option<String>,
    /// Digest of the tool's component; `None` when the tool was unknown.
    pub component_digest: Option<String>,
    /// The raw arguments as received; `Value::String` if they were not JSON.
    pub arguments: Value,
    /// `"allow"`, `"deny"`, `"ask:confirmed"`, `"ask:declined"` or
    /// `"not_reached"` (the call failed before authorization).
    pub decision: String,
    /// Id of the policy that determined the decision, if any.
    pub policy: Option<String>,
    /// `"ok"` or an error kind such as `"timeout"`.
    pub outcome: String,
    /// The error message, if any (untrusted; capped at 1 KiB).
    pub message: Option<String>,
    /// Wall-clock duration of the call, in microseconds.
    pub duration_us: u64,
    /// Fuel the guest consumed, when it ran.
    pub fuel_used: Option<u64>,
}

/// An open audit log. Appends from any number of threads are serialized, so
/// the chain has one order; the type is `Send + Sync`.
pub struct AuditLog {
    path: PathBuf,
    head_path: PathBuf,
    durability: Durability,
    record_arguments: bool,
    /// Lowercased once at open.
    redact_keys: Vec<String>,
    writer: Mutex<Writer>,
}

/// The state that changes with every record.
struct Writer {
    /// Opened with `O_APPEND`: every write lands at the end of the file.
    log: File,
    /// The head file, on which this writer holds an exclusive lock.
    head: File,
    /// Length of the log after the last complete record, to undo a partial write.
    len: u64,
    /// `seq` of the last record (0 before the first).
    seq: u64,
    /// `hash` of the last record ([`GENESIS`] before the first).
    prev: String,
    /// Set when the log can no longer be trusted to continue the chain.
    stopped: Option<String>,
}

/// Why the log could not be opened, appended to or read.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// The file system refused an operation.
    #[error("audit log {}: cannot {action}: {source}", path.display())]
    Io {
        /// The file concerned (the log or its head file).
        path: PathBuf,
        /// What was being done, e.g. `"append to"`.
        action: &'static str,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The log or its head file is damaged; Airlock will not continue it.
    #[error("audit log {}: {reason}; run `airlock audit verify {}` to locate the damage", path.display(), path.display())]
    Damaged {
        /// The log file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// Another process holds the log's lock.
    #[error(
        "audit log {} is locked by another process (an `airlock` writing it, or `airlock audit verify` reading it); \
         two writers would fork its hash chain",
        path.display()
    )]
    Locked {
        /// The log file.
        path: PathBuf,
    },
    /// An earlier failure left the log in a state the chain cannot continue from.
    #[error(
        "audit log {} stopped accepting records: {reason}; check it with `airlock audit verify` and restart Airlock",
        path.display()
    )]
    Stopped {
        /// The log file.
        path: PathBuf,
        /// The earlier failure.
        reason: String,
    },
}

/// The result of a successful [`verify`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyReport {
    /// How many records the log holds.
    pub records: u64,
    /// The hash of the last record, `None` for an empty log. Record it outside
    /// the machine: a later log that does not pass through it was rewritten.
    pub last_hash: Option<String>,
}

/// The first problem [`verify`] found. Displays as `<file>:<line>: <reason>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}:{line}: {reason}", file.display())]
pub struct VerifyError {
    /// The file at fault: the log, or its head file.
    pub file: PathBuf,
    /// 1-based line number; 0 when the problem concerns the whole file.
    pub line: u64,
    /// What is wrong, and what it means.
    pub reason: String,
}

impl fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuditLog")
            .field("path", &self.path)
            .field("durability", &self.durability)
            .field("record_arguments", &self.record_arguments)
            .finish_non_exhaustive()
    }
}

impl AuditLog {
    /// Opens the log for appending: creates it and its head file (mode 0600 on
    /// unix), or continues an existing chain from its last record.
    ///
    /// Only the last record is read, not the whole chain: continuing a log is
    /// cheap however long it is. Run [`verify`] to check everything.
    ///
    /// # Errors
    ///
    /// [`AuditError::Io`] when a file cannot be created, read or locked;
    /// [`AuditError::Locked`] when another process has the log open;
    /// [`AuditError::Damaged`] when the last line is not an intact record, the
    /// head file is missing or unreadable, or the two disagree (for example
    /// because records were removed from the end).
    pub fn open(settings: AuditSettings) -> Result<AuditLog, AuditError> {
        let AuditSettings { file: path, durability, record_arguments, redact_keys } = settings;
        let head_path = head_path(&path);
        let io_error = |path: &Path, action: &'static str| {
            let path = path.to_path_buf();
            move |source| AuditError::Io { path, action, source }
        };
        let damaged = |reason: String| AuditError::Damaged { path: path.clone(), reason };

        let log =
            private_options().read(true).append(true).create(true).open(&path).map_err(io_error(&path, "open"))?;
        let head = match private_options().read(true).write(true).open(&head_path) {
            Ok(head) => head,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                if log.metadata().map_err(io_error(&path, "read the size of"))?.len() > 0 {
                    return Err(damaged(format!(
                        "its head file {} is missing, so records removed from the end would go unnoticed; \
                         start a new log file",
                        head_path.display()
                    )));
                }
                private_options()
                    .read(true)
                    .write(true)
                    .create_new(true)
                    .open(&head_path)
                    .map_err(io_error(&head_path, "create"))?
            }
            Err(e) => return Err(io_error(&head_path, "open")(e)),
        };
        match try_lock(&head, false).map_err(io_error(&head_path, "lock"))? {
            Lock::Held => {}
            Lock::Busy => return Err(AuditError::Locked { path }),
        }

        // Read the state only now that no other writer can change it.
        let len = log.metadata().map_err(io_error(&path, "read the size of"))?.len();
        let named = read_head(&head)
            .map_err(io_error(&head_path, "read"))?
            .map_err(|reason| damaged(format!("its head file {} is damaged: {reason}", head_path.display())))?;
        let (seq, prev) = if len == 0 {
            if named.seq != 0 {
                return Err(damaged(format!(
                    "the log is empty but its head file names record {}: records were removed",
                    named.seq
                )));
            }
            (0, GENESIS.to_owned())
        } else {
            let last = match read_last_lines(&log, len, 1, MAX_LINE_BYTES as u64 + 1)
                .map_err(io_error(&path, "read the last line of"))?
            {
                Some(bytes) => check_last_line(&bytes).map_err(damaged)?,
                None => return Err(damaged(format!("its last line is longer than {MAX_LINE_BYTES} bytes"))),
            };
            let matches_head = last.seq == named.seq && last.hash == named.hash;
            // Airlock stopped between writing a record and rewriting the head.
            let head_one_behind = last.seq == named.seq.saturating_add(1) && last.prev == named.hash;
            if !matches_head && !head_one_behind {
                return Err(damaged(format!(
                    "the log ends with record {} (hash {}) but its head file names record {} (hash {})",
                    last.seq,
                    short(&last.hash),
                    named.seq,
                    short(&named.hash)
                )));
            }
            (last.seq, last.hash)
        };

        write_head(&head, seq, &prev).map_err(io_error(&head_path, "write"))?;
        if durability == Durability::Fsync {
            head.sync_data().map_err(io_error(&head_path, "fsync"))?;
            // A new file is durable only once its directory entry is.
            sync_parent_dir(&path).map_err(io_error(&path, "fsync the directory of"))?;
        }

        Ok(AuditLog {
            path,
            head_path,
            durability,
            record_arguments,
            redact_keys: redact_keys.iter().map(|k| k.to_lowercase()).collect(),
            writer: Mutex::new(Writer { log, head, len, seq, prev, stopped: None }),
        })
    }

    /// Appends one record for one call, durable as the settings say before
    /// this returns.
    ///
    /// # Errors
    ///
    /// [`AuditError::Io`] when the write, the fsync or the head update fails.
    /// A failed write is undone (the file is cut back to its last complete
    /// record); if even that fails, or an fsync fails (the kernel may have
    /// dropped the data), the log stops: this and every later append return
    /// [`AuditError::Stopped`], because the chain can no longer be continued
    /// reliably. A failed head update leaves the record in the log; the next
    /// append rewrites the head.
    ///
    /// # Security
    ///
    /// Every string is capped and arguments are redacted before anything is
    /// written; see the module documentation.
    pub fn append(&self, entry: &AuditEntry) -> Result<(), AuditError> {
        // Everything that does not depend on the chain is prepared before
        // taking the lock.
        let body = self.record_body(entry);

        // The writer's state is only changed after the operation it describes
        // succeeded, so a panic elsewhere cannot leave it inconsistent.
        let mut guard = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        let w = &mut *guard;
        if let Some(reason) = &w.stopped {
            return Err(AuditError::Stopped { path: self.path.clone(), reason: reason.clone() });
        }
        let io_error = |path: &Path, action: &'static str| {
            let path = path.to_path_buf();
            move |source| AuditError::Io { path, action, source }
        };

        let Some(seq) = w.seq.checked_add(1) else {
            return Err(AuditError::Stopped { path: self.path.clone(), reason: "its seq numbers are used up".into() });
        };
        let time = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
        let mut fields = Vec::with_capacity(FIELDS.len());
        fields.push(("seq", seq.to_string()));
        fields.push(("time", json_string(&time)));
        fields.extend(body);
        fields.push(("prev", json_string(&w.prev)));
        let hash = record_hash(&fields);
        fields.push(("hash", json_string(&hash)));
        let mut line = record_line(&fields);
        line.push('\n');

        // One write of the whole line: with O_APPEND it lands at the end in
        // one piece, even if another program appends at the same time.
        if let Err(e) = (&w.log).write_all(line.as_bytes()) {
            if let Err(undo) = w.log.set_len(w.len) {
                w.stopped = Some(format!("a failed write could not be undone ({undo})"));
            }
            return Err(io_error(&self.path, "append to")(e));
        }
        w.len += line.len() as u64;
        w.seq = seq;
        w.prev = hash;
        if self.durability == Durability::Fsync
            && let Err(e) = w.log.sync_data()
        {
            w.stopped = Some(format!("fsync failed ({e})"));
            return Err(io_error(&self.path, "fsync")(e));
        }

        write_head(&w.head, w.seq, &w.prev).map_err(io_error(&self.head_path, "write"))?;
        if self.durability == Durability::Fsync {
            w.head.sync_data().map_err(io_error(&self.head_path, "fsync"))?;
        }
        Ok(())
    }

    /// The log file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The members from `call_id` to `fuel_used`, encoded, in record order.
    fn record_body(&self, entry: &AuditEntry) -> Vec<(&'static str, String)> {
        let capped = |s: &str, max| json_string(&cap(s, max));
        let optional = |s: &Option<String>, max| s.as_deref().map_or_else(|| "null".to_owned(), |s| capped(s, max));

        let arguments = redact_for_record(&entry.arguments, &self.redact_keys);
        let canonical_arguments = canonical(&arguments);
        let mut body = Vec::with_capacity(12);
        body.push(("call_id", capped(&entry.call_id, MAX_FIELD_BYTES)));
        body.push(("principal", capped(&entry.principal, MAX_FIELD_BYTES)));
        body.push(("tool", capped(&entry.tool, MAX_FIELD_BYTES)));
        if let Some(session) = &entry.session {
            body.push(("session", capped(session, MAX_FIELD_BYTES)));
        }
        body.push(("component_digest", optional(&entry.component_digest, MAX_FIELD_BYTES)));
        body.push(("argument_digest", json_string(&sha256_digest(&canonical_arguments))));
        if self.record_arguments {
            body.push(("arguments", recorded_arguments(&arguments, canonical_arguments)));
        }
        body.push(("decision", capped(&entry.decision, MAX_FIELD_BYTES)));
        body.push(("policy", optional(&entry.policy, MAX_FIELD_BYTES)));
        body.push(("outcome", capped(&entry.outcome, MAX_FIELD_BYTES)));
        body.push(("message", optional(&entry.message, MAX_MESSAGE_BYTES)));
        body.push(("duration_us", entry.duration_us.to_string()));
        body.push(("fuel_used", entry.fuel_used.map_or_else(|| "null".to_owned(), |f| f.to_string())));
        body
    }
}

/// `"sha256:<hex>"` of the canonical JSON of `arguments`: no whitespace, object
/// members sorted by name at every depth. Equal values give equal digests
/// whatever their key order.
///
/// A record's `argument_digest` is this digest of the arguments *after*
/// redaction, so that it cannot be used to confirm a guess at a redacted value.
pub fn argument_digest(arguments: &Value) -> String {
    sha256_digest(&canonical(arguments))
}

/// Returns `arguments` with the value of every object member whose name
/// equals one of `keys` (case-insensitively, at any depth, inside arrays too)
/// replaced by `"[redacted]"`.
pub fn redact(arguments: &Value, keys: &[String]) -> Value {
    let keys: Vec<String> = keys.iter().map(|k| k.to_lowercase()).collect();
    redact_lowercase(arguments, &keys)
}

/// The line of a record: `fields` (name, canonical value) in the given order.
fn record_line<'a>(fields: impl IntoIterator<Item = &'a (&'a str, String)>) -> String {
    let mut line = String::with_capacity(512);
    line.push('{');
    for (i, (name, value)) in fields.into_iter().enumerate() {
        if i > 0 {
            line.push(',');
        }
        push_json_string(&mut line, name);
        line.push(':');
        line.push_str(value);
    }
    line.push('}');
    line
}

/// The hash of a record: SHA-256 of its canonical JSON without `hash`.
fn record_hash(fields: &[(&str, String)]) -> String {
    let mut sorted: Vec<&(&str, String)> = fields.iter().filter(|(name, _)| *name != "hash").collect();
    sorted.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let mut hash = String::with_capacity(64);
    push_hex(&mut hash, &Sha256::digest(record_line(sorted).as_bytes()));
    hash
}

/// The `arguments` member: the canonical JSON of the redacted arguments, or a
/// note saying why they were left out.
fn recorded_arguments(arguments: &Value, text: String) -> String {
    if nested_deeper_than(arguments, MAX_RECORDED_ARGUMENTS_DEPTH) {
        return json_string(&format!(
            "[omitted: nested deeper than {MAX_RECORDED_ARGUMENTS_DEPTH} levels; see argument_digest]"
        ));
    }
    if text.len() > MAX_RECORDED_ARGUMENTS_BYTES {
        return json_string(&format!(
            "[omitted: {} bytes of JSON, over the {MAX_RECORDED_ARGUMENTS_BYTES}-byte cap; see argument_digest]",
            text.len()
        ));
    }
    if !rereads_the_same(arguments, &text) {
        return json_string("[omitted: some numbers would not read back exactly; see argument_digest]");
    }
    text
}

/// Whether [`verify`], which re-reads records with `serde_json`, will encode
/// these arguments to exactly `text` again.
///
/// Integers and strings always read back as themselves. Floating-point numbers
/// do only if `serde_json`'s `float_roundtrip` feature is on somewhere in the
/// build: its default parser can be one unit in the last place off (for about
/// a third of all bit patterns, rarely for the short decimals models write).
/// Such arguments are left out rather than recorded with altered numbers.
fn rereads_the_same(arguments: &Value, text: &str) -> bool {
    !contains_float(arguments) || serde_json::from_str::<Value>(text).is_ok_and(|reread| canonical(&reread) == text)
}

/// The arguments as they are recorded and digested: redacted, and a non-JSON
/// string hidden entirely when it mentions a redacted key, since there is no
/// structure in it to redact.
fn redact_for_record<'a>(arguments: &'a Value, keys: &[String]) -> Cow<'a, Value> {
    if keys.is_empty() {
        return Cow::Borrowed(arguments);
    }
    match arguments {
        Value::String(raw) => {
            let lower = raw.to_lowercase();
            if keys.iter().any(|k| !k.is_empty() && lower.contains(k.as_str())) {
                Cow::Owned(Value::String(REDACTED.to_owned()))
            } else {
                Cow::Borrowed(arguments)
            }
        }
        _ => Cow::Owned(redact_lowercase(arguments, keys)),
    }
}

/// [`redact`] with `keys` already lowercased.
fn redact_lowercase(value: &Value, keys: &[String]) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(name, value)| {
                    let lower = name.to_lowercase();
                    if keys.contains(&lower) {
                        (name.clone(), Value::String(REDACTED.to_owned()))
                    } else {
                        (name.clone(), redact_lowercase(value, keys))
                    }
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|item| redact_lowercase(item, keys)).collect()),
        other => other.clone(),
    }
}

/// Canonical JSON of `value`; see the module documentation.
///
/// Recursion is bounded by the nesting of `value`; values parsed by
/// `serde_json` are at most 128 levels deep.
fn canonical(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => push_json_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            // Sorted here, whatever order the map keeps (serde_json's
            // `preserve_order` feature may be on in the dependency tree).
            let mut members: Vec<(&String, &Value)> = map.iter().collect();
            members.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (name, value)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_json_string(out, name);
                out.push(':');
                write_canonical(value, out);
            }
            out.push('}');
        }
    }
}

/// Appends `s` as a JSON string, escaped as RFC 8785 (and `serde_json`) do:
/// `"` and `\`, the short escapes for `\b \f \n \r \t`, `\u00xx` for other
/// control characters, everything else as is.
fn push_json_string(out: &mut String, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.reserve(s.len() + 2);
    out.push('"');
    // Most values (hashes, names, ids) need no escaping: one scan, one copy.
    if !s.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
        out.push_str(s);
        out.push('"');
        return;
    }
    // Every byte that needs escaping is ASCII, hence a character boundary:
    // the text between two of them is copied as one slice.
    let mut start = 0;
    for (i, &b) in s.as_bytes().iter().enumerate() {
        let short = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            0x08 => "\\b",
            0x0c => "\\f",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x00..=0x1f => "",
            _ => continue,
        };
        out.push_str(&s[start..i]);
        if short.is_empty() {
            out.push_str("\\u00");
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0xf)]));
        } else {
            out.push_str(short);
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    push_json_string(&mut out, s);
    out
}

fn sha256_digest(text: &str) -> String {
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    push_hex(&mut out, &Sha256::digest(text.as_bytes()));
    out
}

/// Appends `bytes` as lowercase hex (as `hex::encode`, without its
/// per-character iterator).
fn push_hex(out: &mut String, bytes: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.reserve(bytes.len() * 2);
    for &b in bytes {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0xf)]));
    }
}

/// `s` cut to at most `max` bytes at a character boundary, ending in `…` when cut.
fn cap(s: &str, max: usize) -> Cow<'_, str> {
    if s.len() <= max {
        return Cow::Borrowed(s);
    }
    let mut end = max.saturating_sub(ELLIPSIS.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!("{}{ELLIPSIS}", &s[..end]))
}

fn contains_float(value: &Value) -> bool {
    match value {
        Value::Number(n) => n.is_f64(),
        Value::Array(items) => items.iter().any(contains_float),
        Value::Object(map) => map.values().any(contains_float),
        _ => false,
    }
}

/// Whether arrays and objects nest more than `limit` levels; stops looking
/// below the limit.
fn nested_deeper_than(value: &Value, limit: usize) -> bool {
    let children: Box<dyn Iterator<Item = &Value>> = match value {
        Value::Array(items) => Box::new(items.iter()),
        Value::Object(map) => Box::new(map.values()),
        _ => return false,
    };
    if limit == 0 {
        return true;
    }
    children.into_iter().any(|child| nested_deeper_than(child, limit - 1))
}

fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The start of a hash, enough to tell two apart in a message.
fn short(hash: &str) -> String {
    format!("{}…", cap(hash, 12).trim_end_matches(ELLIPSIS))
}

fn head_path(log: &Path) -> PathBuf {
    let mut name = log.as_os_str().to_owned();
    name.push(".head");
    PathBuf::from(name)
}

/// What the head file says: the last record written.
struct Head {
    seq: u64,
    hash: String,
}

/// Reads the head file. The outer error is I/O, the inner one a damaged file.
/// An empty file (Airlock stopped right after creating it) names no record.
fn read_head(mut file: &File) -> io::Result<Result<Head, String>> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct RawHead {
        seq: u64,
        hash: String,
    }

    file.seek(SeekFrom::Start(0))?;
    let mut bytes = Vec::new();
    file.take(MAX_HEAD_FILE_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_HEAD_FILE_BYTES {
        return Ok(Err(format!("longer than {MAX_HEAD_FILE_BYTES} bytes")));
    }
    let text = bytes.trim_ascii_end();
    if text.is_empty() {
        return Ok(Ok(Head { seq: 0, hash: GENESIS.to_owned() }));
    }
    let raw: RawHead = match serde_json::from_slice(text) {
        Ok(raw) => raw,
        Err(e) => return Ok(Err(format!("not a head record ({e})"))),
    };
    if !is_sha256_hex(&raw.hash) || (raw.seq == 0 && raw.hash != GENESIS) {
        return Ok(Err(format!("\"hash\" {:?} is not a valid hash for record {}", cap(&raw.hash, 80), raw.seq)));
    }
    Ok(Ok(Head { seq: raw.seq, hash: raw.hash }))
}

/// The head file's content: a fixed width, so that rewriting it in place never
/// leaves the end of a longer previous version behind.
fn head_bytes(seq: u64, hash: &str) -> Vec<u8> {
    let mut text = format!("{{\"seq\":{seq},\"hash\":\"{hash}\"}}");
    // At most 102 bytes: a 20-digit seq and a 64-digit hash.
    let width = HEAD_BYTES - 1;
    if text.len() < width {
        text.push_str(&" ".repeat(width - text.len()));
    }
    text.push('\n');
    text.into_bytes()
}

/// Rewrites the head file in place: one positioned write, no rename.
fn write_head(file: &File, seq: u64, hash: &str) -> io::Result<()> {
    let bytes = head_bytes(seq, hash);
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        file.write_all_at(&bytes, 0)
    }
    #[cfg(not(unix))]
    {
        let mut file = file;
        file.seek(SeekFrom::Start(0))?;
        file.write_all(&bytes)
    }
}

/// The bytes of the last `lines` lines of `file` (of length `len`), from the
/// start of the first of them; a final piece without a line end counts as a
/// line. `None` when more than `max_bytes` were read without finding that start.
fn read_last_lines(mut file: &File, len: u64, lines: usize, max_bytes: u64) -> io::Result<Option<Vec<u8>>> {
    let mut chunks = Vec::new();
    let mut start = len;
    let mut found = 0;
    let mut cut = None;
    while start > 0 && cut.is_none() {
        if len - start >= max_bytes {
            return Ok(None);
        }
        let step = READ_CHUNK.min(start);
        start -= step;
        let mut chunk = vec![0; step as usize];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut chunk)?;
        for (i, &byte) in chunk.iter().enumerate().rev() {
            let offset = start + i as u64;
            // A line end at the very end closes the last line, not a new one.
            if byte == b'\n' && offset + 1 != len {
                found += 1;
                if found == lines {
                    cut = Some(offset + 1);
                    break;
                }
            }
        }
        chunks.push(chunk);
    }
    let mut bytes = Vec::with_capacity((len - start) as usize);
    for chunk in chunks.iter().rev() {
        bytes.extend_from_slice(chunk);
    }
    bytes.drain(..(cut.unwrap_or(0) - start) as usize);
    Ok(Some(bytes))
}

/// Options for files only the operator should read (0600 on unix; elsewhere
/// the directory's permissions apply).
fn private_options() -> OpenOptions {
    #[allow(unused_mut)]
    let mut options = OpenOptions::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options
}

#[cfg(unix)]
fn sync_parent_dir(path: &Path) -> io::Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    File::open(dir)?.sync_all()
}

#[cfg(not(unix))]
fn sync_parent_dir(_path: &Path) -> io::Result<()> {
    Ok(())
}

enum Lock {
    Held,
    Busy,
}

/// Takes an advisory lock without waiting.
fn try_lock(file: &File, shared: bool) -> io::Result<Lock> {
    let result = if shared { file.try_lock_shared() } else { file.try_lock() };
    match result {
        Ok(()) => Ok(Lock::Held),
        Err(TryLockError::WouldBlock) => Ok(Lock::Busy),
        // Some file systems cannot lock; the log then relies on the operator
        // running one writer, as it would without the lock.
        Err(TryLockError::Error(e)) if e.kind() == io::ErrorKind::Unsupported => Ok(Lock::Held),
        Err(TryLockError::Error(e)) => Err(e),
    }
}

#[cfg(test)]
mod tests;
