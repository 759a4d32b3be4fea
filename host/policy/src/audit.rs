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
//! breaks, the non-ASCII ones (U+0085, U+2028, U+2029) included: no input
//! can split a record or smuggle in a second one. The files on
//! disk are not trusted either: [`verify`], [`tail`] and [`AuditLog::open`] read
//! lines of at most 1 MiB and report anything else as damage, never panic.
//!
//! The configuration, the record format, the hash chain, verification and
//! what the log guarantees are specified for operators in `book/src/operator/audit.md`,
//! included here. The members are `FIELDS` below, built in
//! `audit/record.rs`; the caps are the constants below.
//!
#![doc = include_str!("../../../book/src/operator/audit.md")]

use std::fmt;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;

mod commit;
mod entry;
mod files;
pub mod postgres;
mod record;
mod recover;
pub use recover::{Recovery, torn_path};
mod settings;
pub mod ship;
use entry::APPROVAL_WITHDRAWN_FIELDS;
pub use entry::{APPROVAL_WITHDRAWN, ApprovalNote, AuditEntry, Event, RefusedApproval, ToolChange, WithdrawnApproval};
pub use settings::{AUDIT, AuditSettings, MAX_REPLICA_ID_BYTES, POSTGRES, PostgresSettings, RawAudit};
mod siblings;
pub use siblings::{
    ChainsReport, MAX_AUDIT_SIBLINGS, existing_siblings, open_shared, reconfigured_shared, sibling_path, verify_all,
};
mod verify;

use files::{
    Lock, head_path, irregular_file, irregular_path, no_waiting, not_regular, private_options, probe_filler, read_head,
    read_last_lines, sync_parent_dir, try_lock,
};
pub use record::{argument_digest, redact};
use record::{change_body, record_hash, record_line, refusal_body, short, withdrawal_body};
pub use verify::{tail, verify};

/// Cap of `call_id`, `principal`, `tool`, `component_digest`, `policy` and
/// `outcome`, in bytes of UTF-8.
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
/// Bytes of spaces a readiness probe appends to the log (and cuts off again
/// at once) to learn whether the file system takes writes again after an
/// append failed: enough to need a new block on any file system.
const PROBE_BYTES: usize = 8192;
/// How often a readiness probe may try such a trial write while the log is
/// failing; probes in between report the last failure.
const PROBE_INTERVAL: Duration = Duration::from_secs(1);
/// The most calls [`verify`] follows from their `started` record to their
/// outcome record at once; a log with more open at one point has the
/// `started` records beyond it left out of [`VerifyReport::unfinished`].
const MAX_PENDING_STARTED: usize = 65_536;
/// The `outcome` of the record a call to a tool with side effects gets
/// before it runs (its write-ahead record); the call's second record
/// carries its real outcome.
pub const STARTED: &str = "started";
/// `prev` of the first record, and the hash a head file names before any record.
const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The members of a call's record, in the order they are written.
const FIELDS: [&str; 25] = [
    "seq",
    "time",
    "call_id",
    "principal",
    "tool",
    "session",
    "task",
    "component_digest",
    "component_ref",
    "signer",
    "revision",
    "argument_digest",
    "arguments",
    "decision",
    "policy",
    "approval",
    "outcome",
    "message",
    "blame",
    "retry",
    "content",
    "duration_us",
    "fuel_used",
    "prev",
    "hash",
];
/// The members a record may leave out (`component_ref` and `signer` are
/// written only for components pulled from a registry, `revision` only for
/// a tool that was found, and not by hosts older than tool revisions,
/// `approval` only for a call that ran under a person's approval on
/// Airlock's page, `task` only for a call that ran as an MCP task,
/// `blame` and `retry` only for a call that failed, and not by hosts older
/// than them, `content` only for a call that returned content blocks).
const OPTIONAL_FIELDS: [&str; 10] =
    ["session", "task", "component_ref", "signer", "revision", "arguments", "approval", "blame", "retry", "content"];
/// Most content blocks one record describes: far above any call's
/// `max_content_blocks`, so that a record stays small whatever it is
/// handed.
const MAX_RECORDED_BLOCKS: usize = 1024;
/// The `event` of the record a reload writes for a tool whose revision
/// changed ([`ToolChange`]).
pub const TOOL_CHANGED: &str = "tool_changed";
/// The `event` of the record of a refused attempt to answer an approval
/// ([`RefusedApproval`]).
pub const APPROVAL_REFUSED: &str = "approval_refused";
/// The members of an `approval_refused` record, in the order they are
/// written; every one is present (`person` is `null` when nobody was signed
/// in).
const APPROVAL_REFUSED_FIELDS: [&str; 10] =
    ["seq", "time", "event", "approval_id", "tool", "principal", "person", "reason", "prev", "hash"];
/// The `event` of the record [`AuditLog::open`] writes when it recovered
/// the log from a crash ([`Recovery`]).
pub const RECOVERED: &str = "recovered";
/// The members of a `recovered` record, in the order they are written;
/// every one is present (`torn_sha256` and `torn_file` are `null` when no
/// partial line was cut off).
const RECOVERED_FIELDS: [&str; 12] = [
    "seq",
    "time",
    "event",
    "head_seq",
    "adopted",
    "missing",
    "torn_bytes",
    "torn_sha256",
    "torn_file",
    "torn_head",
    "prev",
    "hash",
];
/// The members of a `tool_changed` record, in the order they are written;
/// every one is present.
const TOOL_CHANGED_FIELDS: [&str; 12] = [
    "seq",
    "time",
    "event",
    "tool",
    "old_revision",
    "new_revision",
    "old_component_digest",
    "new_component_digest",
    "old_definition_digest",
    "new_definition_digest",
    "prev",
    "hash",
];

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
    /// two disk flushes per group of records written together.
    Fsync,
}

impl Durability {
    /// The value as `[audit] durability` takes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Durability::Flush => "flush",
            Durability::Fsync => "fsync",
        }
    }
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
    /// Shared with the logs [`AuditLog::reconfigured`] makes, so that they
    /// continue one chain under one lock.
    writer: Arc<Mutex<Writer>>,
    /// Records waiting for the writer's lock, shared as the writer is.
    queue: Arc<Mutex<commit::Queue>>,
}

/// The state that changes with every record.
struct Writer {
    /// Opened with `O_APPEND`: every write lands at the end of the file.
    log: File,
    /// The head file, on which this writer holds an exclusive lock.
    head: File,
    /// The head file's slot the next rewrite goes to (the other holds the
    /// last head written).
    head_slot: usize,
    /// The `generation` of the last head written.
    head_generation: u64,
    /// Length of the log after the last complete record, to undo a partial write.
    len: u64,
    /// `seq` of the last record (0 before the first).
    seq: u64,
    /// `hash` of the last record ([`GENESIS`] before the first).
    prev: String,
    /// `seq` and `hash` of the last record the log was fsync'd through.
    synced: (u64, String),
    /// Set when the log can no longer be trusted to continue the chain.
    stopped: Option<String>,
    /// Why the last append failed; cleared by the next one that succeeds
    /// (or by a readiness probe's trial write that does).
    failing: Option<String>,
    /// When a readiness probe last tried a trial write.
    last_probe: Option<Instant>,
    /// Outcomes of records a group carried, for their callers to collect.
    outcomes: commit::Outcomes,
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
    /// The log or its head file is, or resolves to, something other than a
    /// regular file (a FIFO, a device such as `/dev/null`, a socket, a
    /// directory): records written there could vanish or block the writer.
    #[error("{message}")]
    NotRegular {
        /// The file concerned (the log or its head file).
        path: PathBuf,
        /// The refusal: the key as the operator wrote it, what the file is,
        /// and what is accepted.
        message: String,
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

impl AuditError {
    /// The same error again, for each caller whose record a failed group
    /// write carried (an `io::Error` is not `Clone`: its kind and text are
    /// kept).
    fn duplicate(&self) -> AuditError {
        match self {
            AuditError::Io { path, action, source } => {
                AuditError::Io { path: path.clone(), action, source: io::Error::new(source.kind(), source.to_string()) }
            }
            AuditError::Damaged { path, reason } => AuditError::Damaged { path: path.clone(), reason: reason.clone() },
            AuditError::NotRegular { path, message } => {
                AuditError::NotRegular { path: path.clone(), message: message.clone() }
            }
            AuditError::Locked { path } => AuditError::Locked { path: path.clone() },
            AuditError::Stopped { path, reason } => AuditError::Stopped { path: path.clone(), reason: reason.clone() },
        }
    }
}

/// The result of a successful [`verify`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyReport {
    /// How many records the log holds.
    pub records: u64,
    /// The hash of the last record, `None` for an empty log. Record it outside
    /// the machine: a later log that does not pass through it was rewritten.
    pub last_hash: Option<String>,
    /// Calls with a `started` record and no outcome record after it: Airlock
    /// stopped (or the machine did) while they ran, or, when an Airlock
    /// process has the log open, they are still running. Not damage: the
    /// write-ahead record is there so that such a call is not lost.
    pub unfinished: u64,
    /// What a crash left that the next open of the log recovers (no
    /// process had it open): not damage. `None` when there is nothing to
    /// recover, and while a process has the log open.
    pub recoverable: Option<Recovery>,
    /// How many `recovered` records the chain holds: the times Airlock
    /// recovered it after a crash.
    pub recoveries: u64,
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
    /// A log a crash left behind is recovered first (records past the one
    /// the head file names adopted, a partial last line moved to
    /// `<file>.torn`; see `audit/recover.rs`), with a `recovered` record in
    /// the chain and a warning saying what was done.
    ///
    /// Only the records from the one the head file names on are read, not
    /// the whole chain: continuing a log is cheap however long it is. Run
    /// [`verify`] to check everything.
    ///
    /// # Errors
    ///
    /// [`AuditError::NotRegular`] when the log or its head file is, or
    /// resolves to, anything but a regular file (checked before opening and
    /// on the opened descriptor; a FIFO is never waited on);
    /// [`AuditError::Io`] when a file cannot be created, read or locked;
    /// [`AuditError::Locked`] when another process has the log open;
    /// [`AuditError::Damaged`] for damage no crash leaves: a line after the
    /// head's record that is not an intact record (a partial line other
    /// than the last), a broken chain, a head file that is missing, empty
    /// beside records or with neither copy intact, or that disagrees with
    /// the log (records removed from the end, a log rewritten).
    pub fn open(settings: AuditSettings) -> Result<AuditLog, AuditError> {
        let AuditSettings { file: path, file_as_written, durability, record_arguments, redact_keys, .. } = settings;
        let head_path = head_path(&path);
        let io_error = |path: &Path, action: &'static str| {
            let path = path.to_path_buf();
            move |source| AuditError::Io { path, action, source }
        };
        let damaged = |reason: String| AuditError::Damaged { path: path.clone(), reason };

        // Both files must be regular: checked before opening (a socket or a
        // directory cannot be opened, a device should not be), opened
        // without waiting (a FIFO with no reader), and checked again on the
        // descriptor, so a swap in between cannot get a FIFO through.
        let regular = |file: &Path, head: bool, kind: Option<&str>| match kind {
            Some(kind) => Err(not_regular(&file_as_written, file, head, kind)),
            None => Ok(()),
        };
        regular(&path, false, irregular_path(&path))?;
        regular(&head_path, true, irregular_path(&head_path))?;
        let log =
            private_options().read(true).append(true).create(true).open(&path).map_err(io_error(&path, "open"))?;
        regular(&path, false, irregular_file(&log).map_err(io_error(&path, "inspect"))?)?;
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
        regular(&head_path, true, irregular_file(&head).map_err(io_error(&head_path, "inspect"))?)?;
        match try_lock(&head, false).map_err(io_error(&head_path, "lock"))? {
            Lock::Held => {}
            Lock::Busy => return Err(AuditError::Locked { path }),
        }

        // Read the state only now that no other writer can change it.
        let mut len = log.metadata().map_err(io_error(&path, "read the size of"))?.len();
        // Spaces left by a readiness probe interrupted by a crash: never a
        // record, cut off before the chain is read.
        let filler = probe_filler(&log, len).map_err(io_error(&path, "read the end of"))?;
        if filler > 0 {
            len -= filler;
            log.set_len(len).map_err(io_error(&path, "cut an interrupted probe's filler off"))?;
            tracing::warn!(
                path = %path.display(),
                bytes = filler,
                "cut off spaces an interrupted readiness probe left at the end of the audit log"
            );
        }
        // Continue from the last complete record, recovering what a crash
        // left and refusing what no crash leaves (`audit/recover.rs`).
        let named = read_head(&head)
            .map_err(io_error(&head_path, "read"))?
            .map_err(|reason| damaged(format!("its head file {} is damaged: {reason}", head_path.display())))?;
        let examined =
            recover::examine(&log, len, &named).map_err(io_error(&path, "read the end of"))?.map_err(damaged)?;
        // Everything the log holds is on disk before the head names it as
        // such, whatever the durability: once per open.
        log.sync_data().map_err(io_error(&path, "fsync"))?;
        let (seq, prev) = (examined.last_seq, examined.last_hash.clone());
        let mut writer = Writer {
            log,
            head,
            head_slot: named.next_slot,
            head_generation: named.head.generation,
            len: examined.complete_len,
            synced: (seq, prev.clone()),
            seq,
            prev,
            stopped: None,
            failing: None,
            last_probe: None,
            outcomes: commit::Outcomes::new(),
        };
        let begun = recover::begin(&path, &head_path, &mut writer, &examined)?;
        // A new file is durable only once its directory entry is.
        sync_parent_dir(&path).map_err(io_error(&path, "fsync the directory of"))?;

        let opened = AuditLog {
            path,
            head_path,
            durability,
            record_arguments,
            redact_keys: redact_keys.iter().map(|k| k.to_lowercase()).collect(),
            writer: Arc::new(Mutex::new(writer)),
            queue: Arc::default(),
        };
        recover::finish(&opened, &examined.recovery, begun)?;
        Ok(opened)
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
        self.append_body(self.durability, body)
    }

    /// Appends a `tool_changed` record: a reload put in force a tool whose
    /// revision is not the one served before. It continues the same chain
    /// as the calls' records, so that the change is ordered among them.
    ///
    /// # Errors
    ///
    /// As [`AuditLog::append`].
    pub fn append_tool_changed(&self, change: &ToolChange) -> Result<(), AuditError> {
        self.append_body(self.durability, change_body(change))
    }

    /// Appends an `approval_refused` record: someone tried to answer an
    /// approval and was refused. It continues the calls' chain, so that
    /// the attempt is ordered among the calls it tried to approve.
    ///
    /// # Errors
    ///
    /// As [`AuditLog::append`].
    pub fn append_approval_refused(&self, refusal: &RefusedApproval) -> Result<(), AuditError> {
        self.append_body(self.durability, refusal_body(refusal))
    }

    /// Appends an `approval_withdrawn` record: an approval waiting for an
    /// answer was withdrawn to make room for another principal's.
    ///
    /// # Errors
    ///
    /// As [`AuditLog::append`].
    pub fn append_approval_withdrawn(&self, withdrawn: &WithdrawnApproval) -> Result<(), AuditError> {
        self.append_body(self.durability, withdrawal_body(withdrawn))
    }

    /// Appends a record made of `body` (every member but `seq`, `time`,
    /// `prev` and `hash`), as durable as `durability` says, in a group with the records queued meanwhile
    /// (see `audit/commit.rs`).
    fn append_body(&self, durability: Durability, body: commit::Body) -> Result<(), AuditError> {
        let ticket = self.queue.lock().unwrap_or_else(PoisonError::into_inner).push(durability, body);
        // The writer's state is only changed after the operation it describes
        // succeeded, so a panic elsewhere cannot leave it inconsistent.
        let mut guard = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        // Written by the group of a caller that held the lock before this one.
        if let Some(outcome) = guard.outcomes.remove(&ticket) {
            return outcome;
        }
        // Not written yet, so still queued: only the lock's holder takes
        // the queue. This caller writes it, its own record with the rest.
        let group = self.queue.lock().unwrap_or_else(PoisonError::into_inner).take();
        let appended = commit::write_group(&mut guard, &self.path, &self.head_path, group, ticket);
        // Readiness follows the last append: `/readyz` says "not ready"
        // from a failed one until one succeeds again.
        guard.failing = appended.as_ref().err().map(ToString::to_string);
        appended
    }

    /// Whether the log takes writes (`/readyz`): it has not stopped, its
    /// last append did not fail, and its file can still be opened for
    /// appending.
    ///
    /// After a failed append, a probe learns whether the file system takes
    /// writes again without writing a record: at most once per
    /// [`PROBE_INTERVAL`] it appends [`PROBE_BYTES`] spaces to the log and
    /// cuts them off at once (under the writer's lock, so no record is
    /// written in between; a crash in between leaves spaces that
    /// [`AuditLog::open`] cuts off and [`verify`] ignores). When that trial
    /// write succeeds, the log is ready again; the next record is then
    /// appended as usual. A log whose last append succeeded is not probed:
    /// a healthy log costs a probe no write.
    ///
    /// # Errors
    ///
    /// Why it cannot.
    pub fn writable(&self) -> Result<(), String> {
        {
            let mut guard = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
            let w = &mut *guard;
            if let Some(reason) = &w.stopped {
                return Err(format!("the audit log {} stopped: {reason}", self.path.display()));
            }
            if let Some(reason) = w.failing.clone() {
                let due = w.last_probe.is_none_or(|at| at.elapsed() >= PROBE_INTERVAL);
                if !due {
                    return Err(format!("the last append to the audit log failed: {reason}"));
                }
                w.last_probe = Some(Instant::now());
                match trial_write(w) {
                    Ok(()) => w.failing = None,
                    Err(now) => {
                        return Err(format!(
                            "the last append to the audit log failed ({reason}) and a trial write still fails: {now}"
                        ));
                    }
                }
            }
        }
        // Without waiting: a FIFO put in the log's place would block this
        // probe (and `/readyz`) until something read it.
        let file = no_waiting()
            .append(true)
            .open(&self.path)
            .map_err(|err| format!("the audit log {} cannot be opened for appending: {err}", self.path.display()))?;
        match irregular_file(&file) {
            Ok(None) => Ok(()),
            Ok(Some(kind)) => Err(format!("the audit log {} is now {kind}, not a regular file", self.path.display())),
            Err(err) => Err(format!("the audit log {} cannot be inspected: {err}", self.path.display())),
        }
    }

    /// Sync the log and its head file to disk (at exit, whatever the
    /// durability: records are written unbuffered, this makes them
    /// durable), the head then naming every record as on disk.
    ///
    /// # Errors
    ///
    /// [`AuditError::Io`] when an fsync fails.
    pub fn sync(&self) -> Result<(), AuditError> {
        let mut w = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        let head_error = |action| move |source| AuditError::Io { path: self.head_path.clone(), action, source };
        w.log.sync_data().map_err(|source| AuditError::Io { path: self.path.clone(), action: "fsync", source })?;
        // The head now names every record as on disk.
        w.synced = (w.seq, w.prev.clone());
        w.rewrite_head().map_err(head_error("write"))?;
        w.head.sync_data().map_err(head_error("fsync"))
    }

    /// The log file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// This log under new `settings` for the same file: records appended
    /// through either continue the one chain (same writer, same lock), and
    /// those appended through the new one follow its durability and
    /// redaction. `None` when `settings` name another file (open that one).
    pub fn reconfigured(&self, settings: &AuditSettings) -> Option<AuditLog> {
        (settings.file == self.path).then(|| AuditLog {
            path: self.path.clone(),
            head_path: self.head_path.clone(),
            durability: settings.durability,
            record_arguments: settings.record_arguments,
            redact_keys: settings.redact_keys.iter().map(|k| k.to_lowercase()).collect(),
            writer: self.writer.clone(),
            queue: self.queue.clone(),
        })
    }
}

/// Appends [`PROBE_BYTES`] spaces to the log and cuts them off again: whether
/// the file system takes a write of the log now. Stops the log when the
/// spaces cannot be cut off (the chain would continue after them).
fn trial_write(w: &mut Writer) -> Result<(), String> {
    let filler = [b' '; PROBE_BYTES];
    let (written, result) = write_counted(&w.log, &filler);
    if written > 0
        && let Err(undo) = w.log.set_len(w.len)
    {
        let reason = format!("a readiness probe's trial write could not be undone ({undo})");
        w.stopped = Some(reason.clone());
        return Err(reason);
    }
    result.map_err(|e| e.to_string())
}

/// `write_all`, also saying how many bytes reached the file before an error.
fn write_counted(mut file: &File, bytes: &[u8]) -> (usize, io::Result<()>) {
    let mut written = 0;
    while let Some(rest) = bytes.get(written..).filter(|rest| !rest.is_empty()) {
        match file.write(rest) {
            Ok(0) => return (written, Err(io::ErrorKind::WriteZero.into())),
            Ok(n) => written += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return (written, Err(e)),
        }
    }
    (written, Ok(()))
}

#[cfg(test)]
mod tests;
