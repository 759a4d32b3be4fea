//! Recovery: a log a crash left behind is continued, never refused, and
//! damage that no crash leaves is still refused.
//!
//! What a crash can leave, wherever it falls (a process killed, the machine
//! stopped):
//!
//! - complete records past the one the head file names: a group was written
//!   (one `write(2)`, `audit/commit.rs`) and the process died before it
//!   rewrote the head;
//! - a last line without a line end: a `write(2)` the crash interrupted
//!   (a fatal signal stops a long write between pages);
//! - one of the head file's two copies torn: a rewrite interrupted by the
//!   machine stopping (`audit/files.rs`; the other copy is intact);
//! - with `durability = "flush"` and the machine stopped, a log that ends
//!   before the record the head names, but not before the last record the
//!   head names as on disk (`synced_seq`): records were lost with the
//!   page cache. Only when the machine restarted since the head was
//!   written (the head records the boot it was written in): before that,
//!   the page cache holds every record written, and a log that ends early
//!   was cut.
//!
//! [`examine`] reads the log from its end back to the record recovery starts
//! from (the head's record, or the last synced one), checking every line
//! on the way as `verify` does: its form, its hash, its `seq` and `prev`.
//! Anything else (a damaged line before the last one, a broken chain, a
//! record whose hash differs from the head's, a log shorter than what was
//! on disk) is refused with what it is. What `examine` accepts,
//! `AuditLog::open` applies, in an order a crash at any point leaves
//! recoverable again: a partial line is first kept in `<file>.torn`, then
//! replaced by a `recovered` record saying what was done ([`write_over`]);
//! without one, that record is appended through the group commit; only
//! then is the head rewritten to name it. A recovery a crash interrupts is
//! done again (a partial line may then be kept twice), and none is done
//! without its record.
//!
//! # Trust
//!
//! The files are not trusted: lines are read at most `MAX_LINE_BYTES` at a
//! time and checked before anything is accepted. Recovery trusts no record
//! whose chain does not verify. What recovery cannot tell apart (records
//! lost with the machine, or removed by someone who could write the log) is
//! said as such in the `recovered` record, which continues the chain.

use std::io::{Read, Seek, SeekFrom};

use sha2::{Digest, Sha256};

use super::files::{Head, NamedHead, READ_CHUNK, irregular_file, no_waiting, private_options, sync_parent_dir};
use super::record::json_string;
use super::verify::{Checked, check_line};
use super::*;
use airlock_core::canonical_json::push_hex;
use airlock_core::text::cap;

/// What recovering a log did when Airlock opened it, or, as [`verify`]
/// reports it for a log no process has opened since a crash, what the next
/// open will do.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recovery {
    /// The record the head file named (its `seq`).
    pub head_seq: u64,
    /// Complete records with an intact chain after that record, which the
    /// head now names: written by a group whose head rewrite a crash
    /// prevented.
    pub adopted: u64,
    /// Records the head file named that the log does not hold: the machine
    /// stopped before they reached the disk (`durability = "flush"`), or
    /// someone removed them; never more than were written after the last
    /// record the head names as on disk.
    pub missing: u64,
    /// Bytes of a last line without a line end (a write a crash
    /// interrupted), cut off the log into `<file>.torn`.
    pub torn_bytes: u64,
    /// One of the head file's two copies was damaged (a rewrite a crash
    /// tore); the other named the record recovery started from.
    pub torn_head: bool,
}

impl Recovery {
    /// Whether there is anything to recover.
    pub fn is_needed(&self) -> bool {
        self.adopted > 0 || self.missing > 0 || self.torn_bytes > 0 || self.torn_head
    }
}

impl fmt::Display for Recovery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Recovery { head_seq, adopted, missing, torn_bytes, torn_head } = self;
        let mut parts = Vec::new();
        if *adopted > 0 {
            parts.push(format!(
                "{adopted} complete record(s) with an intact chain after record {head_seq}, the last its head file \
                 names (Airlock stopped between writing them and rewriting the head)"
            ));
        }
        if *missing > 0 {
            parts.push(format!(
                "the last {missing} record(s) its head file names (up to record {head_seq}) are not in the log: the \
                 machine stopped before they reached the disk (durability \"flush\"), or they were removed"
            ));
        }
        if *torn_bytes > 0 {
            parts.push(format!("a last line of {torn_bytes} bytes without a line end (a write a crash interrupted)"));
        }
        if *torn_head {
            parts.push("one of the head file's two copies is damaged (a rewrite a crash interrupted)".to_owned());
        }
        if parts.is_empty() {
            parts.push("nothing to recover".to_owned());
        }
        f.write_str(&parts.join("; "))
    }
}

/// What [`examine`] found at the end of a log.
pub(super) struct Examined {
    pub(super) recovery: Recovery,
    /// Length of the log through its last line end.
    pub(super) complete_len: u64,
    /// `seq` and `hash` of the last complete record (0 and [`GENESIS`] for none).
    pub(super) last_seq: u64,
    pub(super) last_hash: String,
    /// The bytes after the last line end.
    pub(super) torn: Vec<u8>,
}

/// Reads the log (of length `len`) from its end back to the record
/// recovery starts from, checking each line: what recovery would do, or,
/// as the inner error, the damage no crash leaves (see the module
/// documentation). The outer error is I/O.
pub(super) fn examine(log: &File, len: u64, named: &NamedHead) -> io::Result<Result<Examined, String>> {
    let head = &named.head;
    let mut back = Backwards { file: log, buf: Vec::new(), start: len };
    let Ok(last_piece) = back.piece()? else {
        return Ok(Err(format!("its last line is longer than {MAX_LINE_BYTES} bytes")));
    };
    let torn = last_piece.bytes;
    let complete_len = len - torn.len() as u64;
    let mut more = last_piece.after_line_end;

    // The record recovery starts from: the head's, or, in a log that ends
    // before it, the last one the head names as on disk.
    let mut anchor = (head.seq, head.hash.as_str());
    let mut last: Option<(u64, String)> = None;
    // The record read before (after it in the file) the one being read.
    let mut later: Option<Checked> = None;
    let mut reached = false;
    while more {
        let place = match &later {
            Some(record) => format!("the line before record {}", record.seq),
            None => "its last complete line".to_owned(),
        };
        let piece = match back.piece()? {
            Ok(piece) => piece,
            Err(()) => return Ok(Err(format!("{place} is longer than {MAX_LINE_BYTES} bytes"))),
        };
        more = piece.after_line_end;
        let record = match check_line(&piece.bytes) {
            Ok(record) => record,
            Err(reason) => {
                return Ok(Err(format!(
                    "{place} is damaged ({reason}); a crash can cut short only the last line, so this is not what \
                     one leaves"
                )));
            }
        };
        match &later {
            None => {
                if record.seq < head.seq {
                    if record.seq < head.must_hold() {
                        return Ok(Err(removed(record.seq, head)));
                    }
                    anchor = (head.synced_seq, head.synced_hash.as_str());
                }
                last = Some((record.seq, record.hash.clone()));
            }
            Some(next) => {
                if record.seq.checked_add(1) != Some(next.seq) {
                    return Ok(Err(format!(
                        "record {} is followed by record {}: records are missing or out of order",
                        record.seq, next.seq
                    )));
                }
                if record.hash != next.prev {
                    return Ok(Err(format!(
                        "the \"prev\" of record {} is not the hash of record {}: a record was removed, replaced or \
                         reordered",
                        next.seq, record.seq
                    )));
                }
            }
        }
        if record.seq == anchor.0 {
            if record.hash != anchor.1 {
                return Ok(Err(format!(
                    "record {} has hash {} but its head file names hash {}: the log was rewritten from there on, or \
                     the head file was replaced",
                    record.seq,
                    short(&record.hash),
                    short(anchor.1)
                )));
            }
            reached = true;
            break;
        }
        later = Some(record);
    }

    let (last_seq, last_hash) = last.unwrap_or_else(|| (0, GENESIS.to_owned()));
    if named.empty && last_seq > 0 {
        return Ok(Err(empty_head(last_seq)));
    }
    if last_seq == 0 && head.must_hold() > 0 {
        return Ok(Err(removed(0, head)));
    }
    // Read back to the start of the file without meeting the record to
    // start from: only right when that is the start of the chain.
    if !reached && let Some(first) = &later {
        if anchor.0 > 0 {
            return Ok(Err(format!(
                "the log begins with record {} but its head file names record {}: records were removed from its \
                 start",
                first.seq, anchor.0
            )));
        }
        if first.seq != 1 || first.prev != GENESIS {
            return Ok(Err(format!("the log begins with record {}, which does not start a chain", first.seq)));
        }
    }
    let recovery = Recovery {
        head_seq: head.seq,
        adopted: last_seq.saturating_sub(head.seq),
        missing: head.seq.saturating_sub(last_seq),
        torn_bytes: torn.len() as u64,
        torn_head: named.torn.is_some(),
    };
    Ok(Ok(Examined { recovery, complete_len, last_seq, last_hash, torn }))
}

/// The refusal of a log that ends (with record `last`, 0 for none) before
/// the last record it must hold ([`Head::must_hold`]).
pub(super) fn removed(last: u64, head: &Head) -> String {
    let held = head.must_hold();
    let why = if held == head.seq {
        String::new()
    } else {
        format!(" (and record {held} as on disk before the machine restarted)")
    };
    format!(
        "the log ends after record {last} but its head file names record {}{why}: records were removed from the end",
        head.seq
    )
}

/// The refusal of a log with records (the last `last`) and an empty head
/// file.
pub(super) fn empty_head(last: u64) -> String {
    format!(
        "its head file is empty but the log holds records (the last is record {last}); Airlock writes the head file \
         before the first record, so no crash leaves this: the head file was replaced"
    )
}

/// `<file>.torn`: where recovery keeps the partial last lines it cut off
/// the log `file`, each followed by a line end.
pub fn torn_path(file: &Path) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".torn");
    PathBuf::from(name)
}

/// What [`begin`] leaves for [`finish`].
pub(super) struct Begun {
    /// The `.torn` file a partial line was moved to.
    torn_file: Option<PathBuf>,
    /// The `recovered` record, when it is to be appended once the log is open.
    to_append: Option<commit::Body>,
}

/// Applies what [`examine`] found to the writer of a log being opened,
/// whose last record on disk it names: a partial line is kept in
/// `<file>.torn` and replaced by the `recovered` record ([`write_over`]);
/// another recovery leaves that record to [`finish`]. Either rewrites the
/// head after the record, not before: a crash in between leaves the
/// recovery to be done again. With nothing to recover, the head's two
/// copies are rewritten, one at a time.
pub(super) fn begin(path: &Path, head_path: &Path, w: &mut Writer, examined: &Examined) -> Result<Begun, AuditError> {
    let recovery = &examined.recovery;
    let mut begun = Begun { torn_file: None, to_append: None };
    if !examined.torn.is_empty() {
        let file = save_torn(path, &examined.torn)?;
        write_over(path, w, recovered_body(recovery, Some((&file, &examined.torn))))?;
        begun.torn_file = Some(file);
    } else if recovery.is_needed() {
        begun.to_append = Some(recovered_body(recovery, None));
    }
    if begun.to_append.is_none() {
        let io_error = |action| move |source| AuditError::Io { path: head_path.to_path_buf(), action, source };
        for _ in 0..2 {
            w.rewrite_head().map_err(io_error("write"))?;
        }
        w.head.sync_data().map_err(io_error("fsync"))?;
    }
    Ok(begun)
}

/// Completes [`begin`] once the log is open: appends the `recovered`
/// record (synced, whatever the durability; the group commit rewrites the
/// head after it) and says what was recovered in a warning.
pub(super) fn finish(log: &AuditLog, recovery: &Recovery, begun: Begun) -> Result<(), AuditError> {
    if let Some(body) = begun.to_append {
        log.append_body(Durability::Fsync, body)?;
    }
    if recovery.is_needed() {
        let moved = begun.torn_file.map(|file| format!("; the partial line was moved to {}", file.display()));
        tracing::warn!(
            path = %log.path.display(),
            "recovered the audit log after a crash: {recovery}; a \"{RECOVERED}\" record in the chain says so{}",
            moved.unwrap_or_default()
        );
    }
    Ok(())
}

/// Appends `torn` (and a line end) to the `.torn` file of the log at
/// `path`, synced; returns that file. The piece is on disk there before it
/// leaves the log ([`write_over`]): a crash in between leaves it in both,
/// and the next open keeps it again.
pub(super) fn save_torn(path: &Path, torn: &[u8]) -> Result<PathBuf, AuditError> {
    let torn_path = torn_path(path);
    let io_error = |action: &'static str| {
        let path = torn_path.clone();
        move |source| AuditError::Io { path, action, source }
    };
    let mut file = private_options().append(true).create(true).open(&torn_path).map_err(io_error("open"))?;
    if let Some(kind) = irregular_file(&file).map_err(io_error("inspect"))? {
        let refusal = io::Error::new(io::ErrorKind::InvalidInput, format!("it is {kind}, not a regular file"));
        return Err(io_error("keep a partial line in")(refusal));
    }
    let mut piece = torn.to_vec();
    piece.push(b'\n');
    file.write_all(&piece).map_err(io_error("append to"))?;
    file.sync_data().map_err(io_error("fsync"))?;
    sync_parent_dir(&torn_path).map_err(io_error("fsync the directory of"))?;
    Ok(torn_path)
}

/// Writes the record `body`, chained after the writer's last record, over
/// the partial line that follows it (at `w.len`), cuts what is left of that
/// line, and syncs: the log then ends with the record. One positioned write
/// replaces the line, so a crash leaves the partial line, or the record
/// (whole, or cut short: a partial line again), never neither; the next
/// open recovers what it finds.
pub(super) fn write_over(path: &Path, w: &mut Writer, body: commit::Body) -> Result<(), AuditError> {
    let io_error = |action: &'static str| {
        let path = path.to_path_buf();
        move |source| AuditError::Io { path, action, source }
    };
    let Some((line, seq, hash)) = commit::chain_lines(w.seq, &w.prev, [body]) else {
        return Err(commit::used_up(path));
    };
    // The writer's descriptor appends wherever it is asked to write; this
    // one writes where it is told. It must be the same file.
    let positioned = no_waiting().write(true).open(path).map_err(io_error("open"))?;
    if !same_file(&w.log, &positioned).map_err(io_error("inspect"))? {
        let refusal = io::Error::new(io::ErrorKind::InvalidInput, "it was replaced while it was being opened");
        return Err(io_error("recover")(refusal));
    }
    let end = w.len + line.len() as u64;
    write_at(&positioned, line.as_bytes(), w.len).map_err(io_error("write a recovered record to"))?;
    positioned.set_len(end).map_err(io_error("cut a partial last line off"))?;
    positioned.sync_data().map_err(io_error("fsync"))?;
    w.len = end;
    w.seq = seq;
    w.prev = hash.clone();
    w.synced = (seq, hash);
    Ok(())
}

/// Whether two descriptors are of one file.
fn same_file(a: &File, b: &File) -> io::Result<bool> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let (a, b) = (a.metadata()?, b.metadata()?);
        Ok(a.dev() == b.dev() && a.ino() == b.ino())
    }
    #[cfg(not(unix))]
    {
        let _ = (a, b);
        Ok(true)
    }
}

/// `bytes` written at `offset`, by a descriptor opened without `O_APPEND`.
fn write_at(file: &File, bytes: &[u8], offset: u64) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        file.write_all_at(bytes, offset)
    }
    #[cfg(not(unix))]
    {
        let mut file = file;
        file.seek(SeekFrom::Start(offset))?;
        file.write_all(bytes)
    }
}

/// The members of a `recovered` record from `event` to `torn_head`,
/// encoded, in record order; `torn` is the `.torn` file and the bytes cut
/// into it, when a partial line was.
pub(super) fn recovered_body(recovery: &Recovery, torn: Option<(&Path, &[u8])>) -> commit::Body {
    let Recovery { head_seq, adopted, missing, torn_bytes, torn_head } = recovery;
    let (digest, file) = match torn {
        Some((file, bytes)) => {
            let mut digest = String::from("sha256:");
            push_hex(&mut digest, &Sha256::digest(bytes));
            let name = file.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
            (json_string(&digest), json_string(&cap(&name, MAX_FIELD_BYTES)))
        }
        None => ("null".to_owned(), "null".to_owned()),
    };
    vec![
        ("event", json_string(RECOVERED)),
        ("head_seq", head_seq.to_string()),
        ("adopted", adopted.to_string()),
        ("missing", missing.to_string()),
        ("torn_bytes", torn_bytes.to_string()),
        ("torn_sha256", digest),
        ("torn_file", file),
        ("torn_head", torn_head.to_string()),
    ]
}

/// A file read from its end back to its start, one line end at a time.
struct Backwards<'a> {
    file: &'a File,
    /// The file's bytes from `start` on that were read and not handed out.
    buf: Vec<u8>,
    start: u64,
}

/// What [`Backwards::piece`] hands out.
struct Piece {
    /// The bytes after the last line end not yet handed out.
    bytes: Vec<u8>,
    /// Whether a line end precedes them (it is dropped); `false` once the
    /// start of the file is reached.
    after_line_end: bool,
}

impl Backwards<'_> {
    /// The bytes after the last line end not yet handed out (all that is
    /// left when there is none); `Err` when they are longer than
    /// `MAX_LINE_BYTES`.
    fn piece(&mut self) -> io::Result<Result<Piece, ()>> {
        loop {
            if let Some(i) = self.buf.iter().rposition(|&b| b == b'\n') {
                let bytes = self.buf.split_off(i + 1);
                self.buf.truncate(i);
                return Ok(Ok(Piece { bytes, after_line_end: true }));
            }
            if self.buf.len() > MAX_LINE_BYTES {
                return Ok(Err(()));
            }
            if self.start == 0 {
                return Ok(Ok(Piece { bytes: std::mem::take(&mut self.buf), after_line_end: false }));
            }
            let step = READ_CHUNK.min(self.start);
            self.start -= step;
            let mut chunk = vec![0; step as usize];
            let mut file = self.file;
            file.seek(SeekFrom::Start(self.start))?;
            file.read_exact(&mut chunk)?;
            chunk.append(&mut self.buf);
            self.buf = chunk;
        }
    }
}
