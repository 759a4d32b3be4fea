//! Reading an audit log back: `verify` checks the whole chain against its
//! head file, `tail` returns the last records. Both trust nothing in the
//! files: every line is checked for Airlock's exact form and its hash.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};

use super::files::{READ_CHUNK, filler_len, open_regular};
use super::record::{is_sha256_hex, written_line};
use super::recover::{empty_head, removed};
use super::*;
use airlock_core::canonical_json::canonical;
use airlock_core::text::cap;

/// Checks the whole chain of the log at `path` against its head file.
///
/// Reads the head file first, then the log, one line at a time (at most 1 MiB
/// each), so memory use does not grow with the log. If an Airlock process has
/// the log open, records it appended after the head file was read are
/// accepted and a final line it is still writing is ignored, and the log
/// must not end before the record the head file names. Otherwise the log
/// stays locked against writers while it is read, and what a crash left
/// (records past the head's, a partial last line, one damaged copy of the
/// head, and after a machine stopped with `durability = "flush"`, records
/// lost after the last one on disk) is reported in
/// [`VerifyReport::recoverable`]: the next open recovers it.
///
/// # Errors
///
/// The first problem found, with its line number: a line that is not a JSON
/// record in Airlock's form (also a partial line before the last), a hash
/// mismatch (edited record), a `seq` out of order (removed or reordered
/// records), a `prev` that does not match (removed or replaced record), a
/// disagreement with the head file (records removed from the end, a log
/// rewritten), or a file that cannot be read.
pub fn verify(path: &Path) -> Result<VerifyReport, VerifyError> {
    let head_path = head_path(path);
    let at_head = |line, reason| VerifyError { file: head_path.clone(), line, reason };
    let at_log = |line, reason| VerifyError { file: path.to_path_buf(), line, reason };

    let head_file = open_regular(&head_path).map_err(|e| {
        if e.kind() == io::ErrorKind::NotFound {
            at_head(0, "the head file is missing, so records removed from the end of the log cannot be detected".into())
        } else {
            at_head(0, format!("cannot open: {e}"))
        }
    })?;
    // The writer holds an exclusive lock for as long as the log is open. The
    // shared lock taken here, if any, is released when `head_file` drops.
    let live = match try_lock(&head_file, true).map_err(|e| at_head(0, format!("cannot lock: {e}")))? {
        Lock::Held => false,
        Lock::Busy => true,
    };
    let named = read_head(&head_file)
        .map_err(|e| at_head(0, format!("cannot read: {e}")))?
        .map_err(|reason| at_head(1, reason))?;
    let head = &named.head;
    // What a crash left, for the next open to recover (not while a writer
    // has the log open: it rewrites the head after each group).
    let mut recovery = Recovery { head_seq: head.seq, torn_head: !live && named.torn.is_some(), ..Recovery::default() };
    let mut recoveries = 0;

    let log = open_regular(path).map_err(|e| at_log(0, format!("cannot open: {e}")))?;
    let mut reader = BufReader::with_capacity(READ_CHUNK as usize, log);
    let mut buf = Vec::new();
    let mut line_no = 0u64;
    let mut expected = 1u64;
    let mut prev = GENESIS.to_owned();
    // Calls whose `started` record has no outcome record yet, by (principal,
    // call id, tool); a count, since call ids need not be unique.
    let mut pending: HashMap<String, u64> = HashMap::new();
    loop {
        buf.clear();
        let read = (&mut reader)
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut buf)
            .map_err(|e| at_log(line_no + 1, format!("cannot read: {e}")))?;
        if read == 0 {
            break;
        }
        line_no += 1;
        let Some(line) = buf.strip_suffix(b"\n") else {
            if buf.len() > MAX_LINE_BYTES {
                return Err(at_log(line_no, format!("the line is longer than {MAX_LINE_BYTES} bytes")));
            }
            // No record: a log that ends early is reported at this line.
            line_no -= 1;
            if live {
                // The writer is in the middle of this line.
                break;
            }
            if filler_len(&buf, buf.len() as u64) == buf.len() as u64 {
                // Spaces of a readiness probe a crash interrupted: no
                // record, and Airlock cuts them off when it opens the log.
                break;
            }
            // A write a crash interrupted: the next open moves it to
            // `<file>.torn`. (A partial line before the last is no line
            // end short: it fails as not a record, below.)
            recovery.torn_bytes = buf.len() as u64;
            break;
        };
        let record = check_line(line).map_err(|reason| at_log(line_no, reason))?;
        if record.seq != expected {
            return Err(at_log(
                line_no,
                format!(
                    "expected record {expected} but found record {}: records are missing or out of order",
                    record.seq
                ),
            ));
        }
        if record.prev != prev {
            return Err(at_log(
                line_no,
                format!(
                    "\"prev\" is not the hash of record {}: a record was removed, replaced or reordered",
                    expected - 1
                ),
            ));
        }
        for (seq, hash) in [(head.seq, &head.hash), (head.synced_seq, &head.synced_hash)] {
            if record.seq == seq && record.hash != *hash {
                return Err(at_log(
                    line_no,
                    format!(
                        "record {} has hash {} but the head file names hash {}: the log was rewritten from here on, \
                         or the head file was replaced",
                        record.seq,
                        short(&record.hash),
                        short(hash)
                    ),
                ));
            }
        }
        recoveries += u64::from(record.recovered);
        // A record of another event (`tool_changed`, `approval_refused`) is of
        // no call.
        if let Some(call) = record.call {
            if record.started {
                if pending.len() < MAX_PENDING_STARTED || pending.contains_key(&call) {
                    *pending.entry(call).or_default() += 1;
                }
            } else if let Some(open) = pending.get_mut(&call) {
                *open -= 1;
                if *open == 0 {
                    pending.remove(&call);
                }
            }
        }
        prev = record.hash;
        expected += 1;
    }

    let records = expected - 1;
    if named.empty && records > 0 {
        return Err(at_head(0, empty_head(records)));
    }
    // Records the head names as written but not as on disk may have been
    // lost with the machine; records it names as on disk may not (and
    // none while a writer has the log open: it wrote them).
    if records < if live { head.seq } else { head.must_hold() } {
        return Err(at_log(line_no + 1, removed(records, head)));
    }
    if !live {
        recovery.adopted = records.saturating_sub(head.seq);
        recovery.missing = head.seq.saturating_sub(records);
    }
    let unfinished = pending.values().sum();
    Ok(VerifyReport {
        records,
        last_hash: (records > 0).then_some(prev),
        unfinished,
        recoverable: recovery.is_needed().then_some(recovery),
        recoveries,
    })
}

/// The last `n` records of the log at `path`, oldest first, as JSON. A final
/// line without a line end (a record being written) is left out. Records are
/// parsed, not verified.
///
/// # Errors
///
/// `AuditError::Io` when the file cannot be read; `AuditError::Damaged`
/// when one of those lines is not JSON or is longer than any record.
pub fn tail(path: &Path, n: usize) -> Result<Vec<Value>, AuditError> {
    if n == 0 {
        return Ok(Vec::new());
    }
    let io_error = |action| move |source| AuditError::Io { path: path.to_path_buf(), action, source };
    let damaged = |reason| AuditError::Damaged { path: path.to_path_buf(), reason };
    let file = open_regular(path).map_err(io_error("open"))?;
    let len = file.metadata().map_err(io_error("read the size of"))?.len();
    // One line more than asked: the last one may be incomplete.
    let wanted = n.saturating_add(1);
    let max_bytes = (wanted as u64).saturating_mul(MAX_LINE_BYTES as u64 + 1);
    let bytes = read_last_lines(&file, len, wanted, max_bytes)
        .map_err(io_error("read"))?
        .ok_or_else(|| damaged(format!("a line near its end is longer than {MAX_LINE_BYTES} bytes")))?;
    let mut lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    // What follows the last line end: nothing, or a record still being written.
    lines.pop();
    let skip = lines.len().saturating_sub(n);
    lines
        .iter()
        .skip(skip)
        .map(|line| {
            if line.len() > MAX_LINE_BYTES {
                return Err(damaged(format!("a line near its end is longer than {MAX_LINE_BYTES} bytes")));
            }
            serde_json::from_slice(line).map_err(|e| damaged(format!("a line near its end is not JSON ({e})")))
        })
        .collect()
}

/// What the chain needs from a checked record.
pub(super) struct Checked {
    pub(super) seq: u64,
    pub(super) prev: String,
    pub(super) hash: String,
    /// Whether this is a call's write-ahead record (`outcome` [`STARTED`]).
    pub(super) started: bool,
    /// The call it records: its principal, call id and tool, as written;
    /// `None` for a record of another event (`tool_changed`,
    /// `approval_refused`, `approval_withdrawn`, `recovered`).
    pub(super) call: Option<String>,
    /// Whether this is a `recovered` record.
    pub(super) recovered: bool,
}

/// Checks one line (without its line end) on its own: a JSON object with
/// exactly the record's members, an intact hash, and written in the exact form
/// Airlock writes.
pub(super) fn check_line(line: &[u8]) -> Result<Checked, String> {
    let value: Value = serde_json::from_slice(line).map_err(|e| format!("not a JSON record ({e})"))?;
    let Value::Object(map) = value else {
        return Err("not a JSON object".to_owned());
    };
    // A call's record has no `event`; a record of another kind names it
    // and has its own members, every one of them required.
    let (fields, optional): (&[&str], &[&str]) = match map.get("event") {
        None => (&FIELDS, &OPTIONAL_FIELDS),
        Some(Value::String(event)) if event == TOOL_CHANGED => (&TOOL_CHANGED_FIELDS, &[]),
        Some(Value::String(event)) if event == APPROVAL_REFUSED => (&APPROVAL_REFUSED_FIELDS, &[]),
        Some(Value::String(event)) if event == APPROVAL_WITHDRAWN => (&APPROVAL_WITHDRAWN_FIELDS, &[]),
        Some(Value::String(event)) if event == RECOVERED => (&RECOVERED_FIELDS, &[]),
        Some(other) => return Err(format!("unknown \"event\" {}", cap(&other.to_string(), 64))),
    };
    if let Some(unknown) = map.keys().find(|k| !fields.contains(&k.as_str())) {
        return Err(format!("unknown member {:?}", cap(unknown, 64)));
    }
    if let Some(missing) = fields.iter().find(|&&f| !optional.contains(&f) && !map.contains_key(f)) {
        return Err(format!("missing member \"{missing}\""));
    }
    let seq =
        map.get("seq").and_then(Value::as_u64).filter(|&seq| seq > 0).ok_or("\"seq\" is not a positive integer")?;
    let digest = |name| {
        map.get(name)
            .and_then(Value::as_str)
            .filter(|s| is_sha256_hex(s))
            .ok_or_else(|| format!("\"{name}\" is not a lowercase hex SHA-256 digest"))
    };
    let prev = digest("prev")?;
    let hash = digest("hash")?;

    let fields: Vec<(&str, String)> =
        fields.iter().filter_map(|&name| map.get(name).map(|value| (name, canonical(value)))).collect();
    let computed = record_hash(&fields);
    if computed != hash {
        return Err(format!(
            "hash mismatch: the record was changed after it was written (stored {}, computed {})",
            short(hash),
            short(&computed)
        ));
    }
    // The form written now, or, for a record with a raw U+0085, U+2028 or
    // U+2029, the form Airlock wrote before it escaped them (the hash is
    // the same: it covers the canonical form).
    if written_line(record_line(&fields)).as_bytes() != line && record_line(&fields).as_bytes() != line {
        return Err("the record's hash is intact but the line is not in the form Airlock writes (spacing, member \
                    order, escapes or duplicate members were changed)"
            .to_owned());
    }
    let started = map.get("outcome").and_then(Value::as_str) == Some(STARTED);
    let member = |name| map.get(name).map(canonical).unwrap_or_default();
    // Canonical JSON strings escape line ends: the key is unambiguous.
    let call = (!map.contains_key("event"))
        .then(|| format!("{}\n{}\n{}", member("principal"), member("call_id"), member("tool")));
    let recovered = map.get("event").and_then(Value::as_str) == Some(RECOVERED);
    Ok(Checked { seq, prev: prev.to_owned(), hash: hash.to_owned(), started, call, recovered })
}
