//! Unit tests of the log, by topic: the hash chain and what verify detects
//! (`chain.rs`), what a record holds (`records.rs`), the files, locking,
//! concurrency, tail, durability and readiness (`storage.rs`), what a crash
//! leaves and how it is recovered (`recovery.rs`); the helpers they share
//! (and `record/tests.rs` uses) are here.

use super::files::{HEAD_BYTES, HEAD_SLOT_BYTES, Head, READ_CHUNK, head_file_bytes};
use super::record::json_string;
use super::*;
use airlock_core::canonical_json::canonical;
use airlock_core::outcome::{Authority, CallOutcome};
use serde_json::json;
use sha2::{Digest, Sha256};
use std::sync::Arc;
use std::time::Instant;

mod chain;
mod recovery;
mod storage;
mod records;

pub(super) fn settings(path: &Path) -> AuditSettings {
    AuditSettings {
        file: path.to_path_buf(),
        file_as_written: path.to_path_buf(),
        durability: Durability::Flush,
        record_arguments: true,
        redact_keys: vec!["api_key".to_owned()],
        postgres: None,
    }
}

pub(super) fn entry(i: usize) -> AuditEntry {
    AuditEntry {
        component_ref: None,
        signer: None,
        revision: Some(format!("sha256:{}", "cd".repeat(32))),
        call_id: format!("call-{i}"),
        principal: "alice".to_owned(),
        tool: "fs.read".to_owned(),
        session: None,
        task: None,
        component_digest: Some(format!("sha256:{}", "ab".repeat(32))),
        arguments: json!({ "path": format!("/data/{i}.txt"), "api_key": "s3cret" }),
        event: Event::Finished(CallOutcome::Ran { authority: Authority::Allowed, result: Ok(()) }),
        policy: Some("read-data".to_owned()),
        approval: None,
        duration_us: 1234 + i as u64,
        fuel_used: Some(56_789),
        content: Vec::new(),
    }
}

/// A log with `n` records, closed again.
pub(super) fn log_with(n: usize) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    append_to(&path, 0..n);
    (dir, path)
}

fn append_to(path: &Path, calls: std::ops::Range<usize>) {
    let log = AuditLog::open(settings(path)).unwrap();
    for i in calls {
        log.append(&entry(i)).unwrap();
    }
}

pub(super) fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path).unwrap().lines().map(str::to_owned).collect()
}

fn write_lines(path: &Path, lines: &[String]) {
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(path, text).unwrap();
}

/// `verify` fails on `line` of the log with a reason containing `reason`.
fn check_tampered(path: &Path, line: u64, reason: &str) {
    let err = verify(path).expect_err("tampering went unnoticed");
    assert_eq!((err.file.as_path(), err.line), (path, line), "{err}");
    assert!(err.reason.contains(reason), "expected {reason:?} in: {err}");
}

/// Parses a line, lets `edit` change it, and re-seals it with a valid
/// hash, as an attacker without a secret can.
fn forge(line: &str, edit: impl FnOnce(&mut serde_json::Map<String, Value>)) -> String {
    let Value::Object(mut record) = serde_json::from_str(line).unwrap() else { panic!("not an object") };
    edit(&mut record);
    let mut fields: Vec<(&str, String)> =
        FIELDS.iter().filter_map(|&name| record.get(name).map(|v| (name, canonical(v)))).collect();
    fields.retain(|(name, _)| *name != "hash");
    let hash = record_hash(&fields);
    fields.push(("hash", json_string(&hash)));
    record_line(&fields)
}

/// A head file naming record `seq` (of `hash`) as written and on disk.
pub(super) fn head_bytes(seq: u64, hash: &str) -> Vec<u8> {
    head_file_bytes(&Head::synced(seq, hash))
}

fn hash_of(line: &str) -> String {
    serde_json::from_str::<Value>(line).unwrap()["hash"].as_str().unwrap().to_owned()
}
