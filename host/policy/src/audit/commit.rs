//! Group commit: the records of calls that finish while another record is
//! being written go to the file together, by whichever of their callers
//! takes the writer's lock first, in one write(2), one rewrite of the head
//! file and (when any of them asks for `fsync`) one fsync of each file.
//!
//! The chain is the one that writing them one at a time, in the order their
//! callers queued them, would make: each record's `seq` and `prev` follow
//! the record before it in the group. Every caller still returns only once
//! its own record is in the file (and synced, as its log's durability
//! says), with the outcome of the write that carried it: a group is written
//! whole or not at all, and a failure is every member's failure.
//!
//! The head file is rewritten after the group's write (and its fsync):
//! a crash in between leaves the log a group ahead of its head, which the
//! next open adopts after checking its chain (`audit/recover.rs`).
//!
//! A caller waits on the writer's lock only while the records of the calls
//! before it are written; the lock's holder does the work of all of them,
//! so with many calls in flight the file sees one write per group, not per
//! call.

use super::files::{Head, write_head};
use super::record::{json_string, record_hash, record_line, written_line};
use super::{AuditError, Durability, FIELDS, Writer, write_counted};
use std::collections::HashMap;
use std::path::Path;

/// The members of a record that do not depend on the chain.
pub(super) type Body = Vec<(&'static str, String)>;

/// Records queued for the next group, and the outcome of those a group
/// carried whose callers have not yet collected it.
#[derive(Default)]
pub(super) struct Queue {
    next: u64,
    waiting: Vec<Queued>,
}

/// One caller's record, waiting to be written.
pub(super) struct Queued {
    ticket: u64,
    durability: Durability,
    body: Body,
}

impl Queue {
    /// Queue `body`; the ticket names it among the outcomes.
    pub(super) fn push(&mut self, durability: Durability, body: Body) -> u64 {
        let ticket = self.next;
        self.next = self.next.wrapping_add(1);
        self.waiting.push(Queued { ticket, durability, body });
        ticket
    }

    /// How many records wait.
    #[cfg(test)]
    pub(super) fn waiting_len(&self) -> usize {
        self.waiting.len()
    }

    /// Every record queued so far, in the order they were queued.
    pub(super) fn take(&mut self) -> Vec<Queued> {
        std::mem::take(&mut self.waiting)
    }
}

/// The outcomes of written groups, by ticket, for the callers that have not
/// yet taken the writer's lock to collect theirs. Lives in the [`Writer`],
/// under its lock.
pub(super) type Outcomes = HashMap<u64, Result<(), AuditError>>;

/// Writes `group` as one piece after the last record, with the writer
/// locked; returns the outcome of `own` (a ticket in the group) and leaves
/// every other member's in `w.outcomes`.
pub(super) fn write_group(
    w: &mut Writer,
    path: &Path,
    head_path: &Path,
    group: Vec<Queued>,
    own: u64,
) -> Result<(), AuditError> {
    let tickets: Vec<u64> = group.iter().map(|queued| queued.ticket).filter(|&ticket| ticket != own).collect();
    let outcome = write_all(w, path, head_path, group);
    for ticket in tickets {
        w.outcomes.insert(ticket, outcome.as_ref().map(|&()| ()).map_err(AuditError::duplicate));
    }
    outcome
}

/// The records of `group`, chained after the last one, written in one
/// write(2), then the head file.
fn write_all(w: &mut Writer, path: &Path, head_path: &Path, group: Vec<Queued>) -> Result<(), AuditError> {
    let io_error = |path: &Path, action: &'static str| {
        let path = path.to_path_buf();
        move |source| AuditError::Io { path, action, source }
    };
    if let Some(reason) = &w.stopped {
        return Err(AuditError::Stopped { path: path.to_path_buf(), reason: reason.clone() });
    }
    let sync = group.iter().any(|queued| queued.durability == Durability::Fsync);
    let Some((lines, seq, prev)) = chain_lines(w.seq, &w.prev, group.into_iter().map(|queued| queued.body)) else {
        return Err(used_up(path));
    };

    // One write of every line: with O_APPEND it lands at the end in one
    // piece, even if another program appends at the same time.
    if let (written, Err(e)) = write_counted(&w.log, lines.as_bytes()) {
        // Nothing to undo when nothing was written (a full disk usually
        // refuses the first byte), which keeps the log able to recover.
        if written > 0
            && let Err(undo) = w.log.set_len(w.len)
        {
            w.stopped = Some(format!("a failed write could not be undone ({undo})"));
        }
        return Err(io_error(path, "append to")(e));
    }
    w.len += lines.len() as u64;
    w.seq = seq;
    w.prev = prev;
    if sync {
        if let Err(e) = w.log.sync_data() {
            w.stopped = Some(format!("fsync failed ({e})"));
            return Err(io_error(path, "fsync")(e));
        }
        w.synced = (w.seq, w.prev.clone());
    }

    // Only now: a crash before this leaves the head behind the log, never
    // ahead of it, and the next open adopts the group (`audit/recover.rs`).
    w.rewrite_head().map_err(io_error(head_path, "write"))?;
    if sync {
        w.head.sync_data().map_err(io_error(head_path, "fsync"))?;
    }
    Ok(())
}

/// The lines of `bodies` (each with its line end), chained after the
/// record `seq` of hash `prev`, and the `seq` and `hash` of the last of
/// them; `None` when the seq numbers run out.
pub(super) fn chain_lines(
    mut seq: u64,
    prev: &str,
    bodies: impl IntoIterator<Item = Body>,
) -> Option<(String, u64, String)> {
    // One clock reading for the group: its records are written at once.
    let time = json_string(&chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true));
    let mut prev = prev.to_owned();
    let mut lines = String::new();
    for body in bodies {
        seq = seq.checked_add(1)?;
        let mut fields = Vec::with_capacity(FIELDS.len());
        fields.push(("seq", seq.to_string()));
        fields.push(("time", time.clone()));
        fields.extend(body);
        fields.push(("prev", json_string(&prev)));
        let hash = record_hash(&fields);
        fields.push(("hash", json_string(&hash)));
        lines.push_str(&written_line(record_line(&fields)));
        lines.push('\n');
        prev = hash;
    }
    Some((lines, seq, prev))
}

/// The error of a log whose seq numbers ran out.
pub(super) fn used_up(path: &Path) -> AuditError {
    AuditError::Stopped { path: path.to_path_buf(), reason: "its seq numbers are used up".into() }
}

impl Writer {
    /// Rewrites the older slot of the head file with the last record
    /// written and the last one on disk; the next rewrite goes to the
    /// other slot once this one succeeded, so that one slot always holds
    /// an intact head.
    pub(super) fn rewrite_head(&mut self) -> std::io::Result<()> {
        let generation = self.head_generation.wrapping_add(1);
        let head = Head::written(self.seq, &self.prev, (self.synced.0, &self.synced.1), generation);
        write_head(&self.head, self.head_slot, &head)?;
        self.head_slot = 1 - self.head_slot;
        self.head_generation = generation;
        Ok(())
    }
}
