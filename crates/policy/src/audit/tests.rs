//! Unit tests of the log: the hash chain and what verify detects, the head
//! file, locking, concurrency, tail, durability and readiness.

use super::files::{HEAD_BYTES, READ_CHUNK, head_bytes};
use super::record::canonical;
use super::*;
use serde_json::json;
use sha2::{Digest, Sha256};
use std::sync::Arc;
use std::time::Instant;

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
        component_digest: Some(format!("sha256:{}", "ab".repeat(32))),
        arguments: json!({ "path": format!("/data/{i}.txt"), "api_key": "s3cret" }),
        event: Event::Finished(CallOutcome::Ran { authority: Authority::Allowed, result: Ok(()) }),
        policy: Some("read-data".to_owned()),
        approval: None,
        duration_us: 1234 + i as u64,
        fuel_used: Some(56_789),
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

fn hash_of(line: &str) -> String {
    serde_json::from_str::<Value>(line).unwrap()["hash"].as_str().unwrap().to_owned()
}

#[test]
fn three_records_verify() {
    let (_dir, path) = log_with(3);
    let report = verify(&path).unwrap();
    assert_eq!(report.records, 3);
    let last: Value = serde_json::from_str(&lines(&path)[2]).unwrap();
    assert_eq!(report.last_hash.as_deref(), last["hash"].as_str());
}

#[test]
fn empty_log_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    drop(AuditLog::open(settings(&path)).unwrap());
    assert_eq!(verify(&path).unwrap(), VerifyReport { records: 0, last_hash: None, unfinished: 0 });
}

#[test]
fn reopening_continues_the_chain() {
    let (_dir, path) = log_with(3);
    append_to(&path, 3..5);
    assert_eq!(verify(&path).unwrap().records, 5);
    let records = tail(&path, 10).unwrap();
    let seqs: Vec<u64> = records.iter().map(|r| r["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, [1, 2, 3, 4, 5]);
    assert_eq!(records[3]["prev"], records[2]["hash"]);
    assert_eq!(records[0]["prev"], GENESIS);
}

#[test]
fn record_format() {
    let (_dir, path) = log_with(1);
    let line = &lines(&path)[0];
    // Members in the documented order, arguments canonical and redacted.
    let names: Vec<String> = {
        let mut names = Vec::new();
        let mut rest = line.as_str();
        // `session` is only written for calls that ran in a session, the
        // registry members only for components pulled from one, `blame` and
        // `retry` only for calls that failed.
        let absent = ["session", "component_ref", "signer", "approval", "blame", "retry"];
        for field in FIELDS.into_iter().filter(|&f| !absent.contains(&f)) {
            let key = format!("\"{field}\":");
            let at = rest.find(&key).unwrap_or_else(|| panic!("{field} missing or out of order in {line}"));
            names.push(field.to_owned());
            rest = &rest[at + key.len()..];
        }
        names
    };
    assert_eq!(names.len(), 17);
    assert!(line.starts_with("{\"seq\":1,\"time\":\""), "{line}");
    assert!(line.contains(r#""arguments":{"api_key":"[redacted]","path":"/data/0.txt"}"#), "{line}");
    assert!(line.contains(r#""message":null,"duration_us":1234,"fuel_used":56789,"prev":"0000"#), "{line}");

    let record: Value = serde_json::from_str(line).unwrap();
    let time = record["time"].as_str().unwrap();
    assert!(chrono::DateTime::parse_from_rfc3339(time).is_ok(), "{time}");
    assert!(time.ends_with('Z') && time.split('.').nth(1).unwrap().len() == 7, "{time}");

    // The hash is SHA-256 of the canonical JSON without `hash`, as
    // documented, computed here without the writer's helpers.
    let mut without_hash = record.as_object().unwrap().clone();
    let stored = without_hash.remove("hash").unwrap();
    let mut sorted: Vec<_> = without_hash.into_iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let members: Vec<String> =
        sorted.iter().map(|(k, v)| format!("{}:{}", serde_json::to_string(k).unwrap(), canonical(v))).collect();
    let text = format!("{{{}}}", members.join(","));
    assert_eq!(stored, hex::encode(Sha256::digest(text.as_bytes())));
}

fn change() -> ToolChange {
    let digest = |b: &str| b.repeat(32);
    ToolChange {
        tool: "fs.read".to_owned(),
        old_revision: format!("sha256:{}", digest("01")),
        new_revision: format!("sha256:{}", digest("02")),
        old_component_digest: digest("03"),
        new_component_digest: digest("04"),
        old_definition_digest: format!("sha256:{}", digest("05")),
        new_definition_digest: format!("sha256:{}", digest("06")),
    }
}

#[test]
fn a_tool_changed_record_continues_the_chain_and_verifies_beside_calls_with_and_without_a_revision() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = AuditLog::open(settings(&path)).unwrap();
    // A record as written before revisions existed has no `revision`.
    log.append(&AuditEntry { revision: None, ..entry(0) }).unwrap();
    log.append_tool_changed(&change()).unwrap();
    log.append(&entry(1)).unwrap();
    drop(log);
    let report = verify(&path).unwrap();
    assert_eq!((report.records, report.unfinished), (3, 0));
    let l = lines(&path);
    assert!(!l[0].contains("\"revision\""), "{}", l[0]);
    assert!(l[2].contains(&format!("\"revision\":\"sha256:{}\"", "cd".repeat(32))), "{}", l[2]);
    let expected = format!(
        "\"event\":\"tool_changed\",\"tool\":\"fs.read\",\"old_revision\":\"sha256:{}\",\"new_revision\":\"sha256:{}\",\
         \"old_component_digest\":\"{}\",\"new_component_digest\":\"{}\",\"old_definition_digest\":\"sha256:{}\",\
         \"new_definition_digest\":\"sha256:{}\",\"prev\":",
        "01".repeat(32),
        "02".repeat(32),
        "03".repeat(32),
        "04".repeat(32),
        "05".repeat(32),
        "06".repeat(32)
    );
    assert!(l[1].starts_with("{\"seq\":2,\"time\":\"") && l[1].contains(&expected), "{}", l[1]);
    let records = tail(&path, 2).unwrap();
    assert_eq!(records[0]["event"], "tool_changed", "tail shows it");

    // Edited, given a call's member, or of another event: refused.
    let mut edited = l.clone();
    edited[1] = edited[1].replace(&"04".repeat(32), &"05".repeat(32));
    write_lines(&path, &edited);
    check_tampered(&path, 2, "hash mismatch");
    let mut edited = l.clone();
    edited[1] = edited[1].replace("\"tool\":", "\"principal\":\"x\",\"tool\":");
    write_lines(&path, &edited);
    check_tampered(&path, 2, "unknown member \"principal\"");
    let mut edited = l.clone();
    edited[1] = edited[1].replace("\"tool_changed\"", "\"tool_removed\"");
    write_lines(&path, &edited);
    check_tampered(&path, 2, "unknown \"event\"");
}

#[test]
fn edited_record_is_detected() {
    let (_dir, path) = log_with(3);
    let mut l = lines(&path);
    l[1] = l[1].replace("\"outcome\":\"ok\"", "\"outcome\":\"timeout\"");
    write_lines(&path, &l);
    check_tampered(&path, 2, "hash mismatch");
}

#[test]
fn removed_middle_record_is_detected() {
    let (_dir, path) = log_with(3);
    let mut l = lines(&path);
    l.remove(1);
    write_lines(&path, &l);
    check_tampered(&path, 2, "expected record 2 but found record 3");
}

#[test]
fn swapped_records_are_detected() {
    let (_dir, path) = log_with(3);
    let mut l = lines(&path);
    l.swap(0, 1);
    write_lines(&path, &l);
    check_tampered(&path, 1, "expected record 1 but found record 2");
}

#[test]
fn record_from_another_log_is_detected() {
    // Same seq, intact hash, but it continues another chain.
    let (_dir, path) = log_with(3);
    let (_other_dir, other) = log_with(4);
    let mut l = lines(&path);
    l[1] = lines(&other)[1].clone();
    write_lines(&path, &l);
    check_tampered(&path, 2, "\"prev\" is not the hash of record 1");
}

#[test]
fn partial_last_line_is_detected() {
    let (_dir, path) = log_with(3);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, &text[..text.len() - 40]).unwrap();
    check_tampered(&path, 3, "the last line is incomplete");
}

#[test]
fn removed_last_record_is_detected() {
    let (_dir, path) = log_with(3);
    let mut l = lines(&path);
    l.pop();
    write_lines(&path, &l);
    check_tampered(&path, 3, "the log ends after record 2 but its head file names record 3");
}

#[test]
fn emptied_log_is_detected() {
    let (_dir, path) = log_with(3);
    std::fs::write(&path, "").unwrap();
    check_tampered(&path, 1, "the log ends after record 0 but its head file names record 3");
}

#[test]
fn garbage_line_is_detected() {
    let (_dir, path) = log_with(3);
    let mut l = lines(&path);
    l.insert(1, "rm -rf / # not a record".to_owned());
    write_lines(&path, &l);
    check_tampered(&path, 2, "not a JSON record");
}

#[test]
fn rewritten_log_is_detected_by_the_head() {
    // A whole, internally consistent chain of the same length replaces the log.
    let (_dir, path) = log_with(3);
    let (_other_dir, other) = log_with(3);
    std::fs::copy(&other, &path).unwrap();
    check_tampered(&path, 3, "the head file names hash");
}

#[test]
fn rehashed_chain_is_detected_by_the_head() {
    // Record 2 edited and everything after it re-sealed: only the head
    // file can tell.
    let (_dir, path) = log_with(3);
    let mut l = lines(&path);
    l[1] = forge(&l[1], |r| {
        r.insert("decision".into(), json!("deny"));
    });
    let second = hash_of(&l[1]);
    l[2] = forge(&l[2], |r| {
        r.insert("prev".into(), json!(second));
    });
    write_lines(&path, &l);
    check_tampered(&path, 3, "the head file names hash");
}

#[test]
fn seq_numbers_can_run_out() {
    let (_dir, path) = log_with(1);
    let line = forge(&lines(&path)[0], |r| {
        r.insert("seq".into(), json!(u64::MAX));
    });
    write_lines(&path, std::slice::from_ref(&line));
    std::fs::write(head_path(&path), head_bytes(u64::MAX, &hash_of(&line))).unwrap();
    let log = AuditLog::open(settings(&path)).unwrap();
    assert!(matches!(log.append(&entry(1)), Err(AuditError::Stopped { .. })));
    drop(log);
    check_tampered(&path, 1, "expected record 1 but found record 18446744073709551615");
}

#[test]
fn duplicate_member_is_detected() {
    // serde_json keeps the last of two equal names, other parsers the
    // first: the hash still matches, but the line is not Airlock's.
    let (_dir, path) = log_with(3);
    let mut l = lines(&path);
    l[1] = l[1].replace("\"decision\":\"allow\"", "\"decision\":\"deny\",\"decision\":\"allow\"");
    write_lines(&path, &l);
    check_tampered(&path, 2, "not in the form Airlock writes");
}

#[test]
fn unknown_member_is_detected() {
    let (_dir, path) = log_with(2);
    let mut l = lines(&path);
    l[0] = l[0].replacen('{', "{\"note\":1,", 1);
    write_lines(&path, &l);
    check_tampered(&path, 1, "unknown member \"note\"");
}

#[test]
fn missing_or_damaged_head_is_reported() {
    let (_dir, path) = log_with(2);
    let head = head_path(&path);
    std::fs::write(&head, "{\"seq\":\"two\"}").unwrap();
    let err = verify(&path).unwrap_err();
    assert_eq!((err.file.as_path(), err.line), (head.as_path(), 1), "{err}");

    std::fs::remove_file(&head).unwrap();
    let err = verify(&path).unwrap_err();
    assert_eq!((err.file.as_path(), err.line), (head.as_path(), 0), "{err}");
    assert!(err.reason.contains("missing"), "{err}");
    let err = AuditLog::open(settings(&path)).unwrap_err();
    assert!(matches!(err, AuditError::Damaged { .. }) && err.to_string().contains("head file"), "{err}");
}

#[test]
fn verify_error_displays_file_and_line() {
    let err = VerifyError { file: PathBuf::from("/var/log/a.jsonl"), line: 7, reason: "hash mismatch".into() };
    assert_eq!(err.to_string(), "/var/log/a.jsonl:7: hash mismatch");
}

#[test]
fn head_one_record_behind_is_accepted_and_repaired() {
    // Airlock stopped between writing record 3 and its head.
    let (_dir, path) = log_with(3);
    let second: Value = serde_json::from_str(&lines(&path)[1]).unwrap();
    std::fs::write(head_path(&path), head_bytes(2, second["hash"].as_str().unwrap())).unwrap();
    assert_eq!(verify(&path).unwrap().records, 3);
    append_to(&path, 3..4);
    assert_eq!(verify(&path).unwrap().records, 4);
    let head = std::fs::read_to_string(head_path(&path)).unwrap();
    assert!(head.starts_with("{\"seq\":4,"), "{head}");
    assert_eq!(head.len(), HEAD_BYTES);
}

#[test]
fn head_further_behind_is_reported() {
    let (_dir, path) = log_with(4);
    let first: Value = serde_json::from_str(&lines(&path)[0]).unwrap();
    std::fs::write(head_path(&path), head_bytes(1, first["hash"].as_str().unwrap())).unwrap();
    check_tampered(&path, 3, "comes after the last record the head file names (1)");
    assert!(matches!(AuditLog::open(settings(&path)), Err(AuditError::Damaged { .. })));
}

#[test]
fn open_refuses_a_damaged_log() {
    let (_dir, path) = log_with(3);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, &text[..text.len() - 10]).unwrap();
    let err = AuditLog::open(settings(&path)).unwrap_err();
    let message = err.to_string();
    assert!(message.contains("last line is incomplete"), "{message}");
    assert!(message.contains("airlock audit verify"), "{message}");

    // A whole record removed: the last line is intact but the head disagrees.
    let mut l: Vec<String> = text.lines().map(str::to_owned).collect();
    l.pop();
    write_lines(&path, &l);
    let err = AuditLog::open(settings(&path)).unwrap_err();
    assert!(err.to_string().contains("head file names record 3"), "{err}");

    // An edited last record.
    l[1] = l[1].replace("alice", "mallory");
    write_lines(&path, &l);
    let err = AuditLog::open(settings(&path)).unwrap_err();
    assert!(err.to_string().contains("hash mismatch"), "{err}");
}

#[test]
fn second_writer_is_locked_out_and_verify_runs_alongside() {
    let (_dir, path) = log_with(2);
    let log = AuditLog::open(settings(&path)).unwrap();
    log.append(&entry(2)).unwrap();
    assert!(matches!(AuditLog::open(settings(&path)), Err(AuditError::Locked { .. })));
    // Live: a half-written final line is the writer's business.
    assert_eq!(verify(&path).unwrap().records, 3);
    std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(b"{\"seq\":4,").unwrap();
    assert_eq!(verify(&path).unwrap().records, 3);
    assert_eq!(tail(&path, 1).unwrap()[0]["seq"], 3);
    drop(log);
    check_tampered(&path, 4, "the last line is incomplete");
}

#[test]
fn concurrent_appends_form_one_chain() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = Arc::new(AuditLog::open(settings(&path)).unwrap());
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                for i in 0..100 {
                    log.append(&entry(t * 1000 + i)).unwrap();
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    drop(log);
    assert_eq!(verify(&path).unwrap().records, 400);
    let seqs: Vec<u64> = tail(&path, 1000).unwrap().iter().map(|r| r["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=400).collect::<Vec<_>>());
}

#[test]
fn tail_returns_the_last_records() {
    let (_dir, path) = log_with(5);
    assert!(tail(&path, 0).unwrap().is_empty());
    let seqs = |n| tail(&path, n).unwrap().iter().map(|r| r["seq"].as_u64().unwrap()).collect::<Vec<_>>();
    assert_eq!(seqs(2), [4, 5]);
    assert_eq!(seqs(5), [1, 2, 3, 4, 5]);
    assert_eq!(seqs(50), [1, 2, 3, 4, 5]);
}

#[test]
fn last_lines_across_chunks() {
    // Lines longer than the read chunk.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lines");
    let long = "x".repeat(READ_CHUNK as usize + 17);
    std::fs::write(&path, format!("a\n{long}\n{long}\nb\n")).unwrap();
    let file = File::open(&path).unwrap();
    let len = file.metadata().unwrap().len();
    assert_eq!(read_last_lines(&file, len, 1, 1 << 20).unwrap().unwrap(), b"b\n");
    assert_eq!(read_last_lines(&file, len, 2, 1 << 20).unwrap().unwrap(), format!("{long}\nb\n").as_bytes());
    assert_eq!(read_last_lines(&file, len, 9, 1 << 20).unwrap().unwrap().len() as u64, len);
    assert!(read_last_lines(&file, len, 9, 1000).unwrap().is_none());
}

#[cfg(unix)]
#[test]
fn files_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let (_dir, path) = log_with(1);
    for file in [path.clone(), head_path(&path)] {
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600, "{}", file.display());
    }
}

#[test]
fn fsync_mode_works() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = AuditLog::open(AuditSettings { durability: Durability::Fsync, ..settings(&path) }).unwrap();
    log.append(&entry(0)).unwrap();
    assert_eq!(log.path(), path);
    drop(log);
    assert_eq!(verify(&path).unwrap().records, 1);
}

#[test]
fn log_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<AuditLog>();
}

/// Append cost; `AIRLOCK_BENCH_DIR` picks the file system (default: the
/// system temporary directory).
#[test]
#[ignore = "microbenchmark: cargo test --release -- --ignored --nocapture bench_append"]
fn bench_append() {
    let base = std::env::var_os("AIRLOCK_BENCH_DIR").map_or_else(std::env::temp_dir, PathBuf::from);
    for (durability, n) in [(Durability::Flush, 20_000), (Durability::Fsync, 1_000)] {
        let dir = tempfile::tempdir_in(&base).unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = AuditLog::open(AuditSettings { durability, ..settings(&path) }).unwrap();
        let call = entry(7);
        for _ in 0..100 {
            log.append(&call).unwrap();
        }
        let mut samples: Vec<u128> = (0..n)
            .map(|_| {
                let start = Instant::now();
                log.append(&call).unwrap();
                start.elapsed().as_nanos()
            })
            .collect();
        samples.sort_unstable();
        let at = |q: f64| samples[((samples.len() - 1) as f64 * q) as usize];
        let mean = samples.iter().sum::<u128>() / samples.len() as u128;
        println!(
            "audit append {durability:?}: p50 {} ns, p90 {} ns, p99 {} ns, mean {mean} ns ({n} appends of {} bytes in {})",
            at(0.5),
            at(0.9),
            at(0.99),
            std::fs::metadata(&path).unwrap().len() / (n as u64 + 100),
            base.display()
        );
    }
}

#[test]
fn a_session_is_recorded_after_the_tool_and_verifies() {
    let (_dir, path) = log_with(1);
    let log = AuditLog::open(settings(&path)).unwrap();
    log.append(&AuditEntry { session: Some("analysis-1".to_owned()), ..entry(1) }).unwrap();
    let lines = lines(&path);
    assert!(!lines[0].contains("\"session\""), "absent without a session: {}", lines[0]);
    assert!(lines[1].contains(r#""tool":"fs.read","session":"analysis-1","component_digest""#), "{}", lines[1]);
    drop(log);
    let report = verify(&path).unwrap();
    assert_eq!(report.records, 2);
}

#[test]
fn a_reconfigured_log_continues_the_chain_under_its_own_settings() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let first = AuditLog::open(settings(&path)).unwrap();
    first.append(&entry(1)).unwrap();
    let mut quieter = settings(&path);
    quieter.record_arguments = false;
    let second = first.reconfigured(&quieter).expect("the same file");
    second.append(&entry(2)).unwrap();
    first.append(&entry(3)).unwrap();
    assert!(first.reconfigured(&settings(&dir.path().join("other.jsonl"))).is_none());
    drop((first, second));
    assert_eq!(verify(&path).unwrap().records, 3, "one chain");
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].contains("\"arguments\"") && !lines[1].contains("\"arguments\""), "{text}");
}

fn started(i: usize) -> AuditEntry {
    AuditEntry { event: Event::Started(Authority::Allowed), duration_us: 0, fuel_used: None, ..entry(i) }
}

#[test]
fn a_started_record_without_its_outcome_is_reported_not_damage() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    {
        let log = AuditLog::open(settings(&path)).unwrap();
        // Call 1 started and finished, call 2 only started (a crash), call
        // 3 never wrote ahead (a read-only tool).
        log.append(&started(1)).unwrap();
        log.append(&entry(1)).unwrap();
        log.append(&started(2)).unwrap();
        log.append(&entry(3)).unwrap();
    }
    let report = verify(&path).unwrap();
    assert_eq!((report.records, report.unfinished), (4, 1));
    let records = tail(&path, 4).unwrap();
    let outcomes: Vec<&str> = records.iter().map(|r| r["outcome"].as_str().unwrap()).collect();
    assert_eq!(outcomes, ["started", "ok", "started", "ok"]);
    assert_eq!(records[2]["call_id"], "call-2");
    assert_eq!(records[2]["fuel_used"], Value::Null);
    // The log continues after the unfinished call; its outcome closes it.
    append_to(&path, 2..3);
    assert_eq!(verify(&path).unwrap().unfinished, 0);
}

#[test]
fn filler_of_an_interrupted_probe_is_cut_at_open_and_ignored_by_verify() {
    let (_dir, path) = log_with(2);
    let intact = std::fs::read(&path).unwrap();
    let mut with_filler = intact.clone();
    with_filler.extend(std::iter::repeat_n(b' ', PROBE_BYTES));
    std::fs::write(&path, &with_filler).unwrap();
    assert_eq!(verify(&path).unwrap().records, 2);
    append_to(&path, 2..3);
    assert_eq!(verify(&path).unwrap().records, 3);
    assert!(std::fs::read(&path).unwrap().starts_with(&intact));
    assert!(!std::fs::read_to_string(&path).unwrap().contains("  "), "the filler was cut off");

    // More spaces than a probe writes, or spaces after a torn record, are damage.
    let mut torn = std::fs::read(&path).unwrap();
    torn.extend_from_slice(b"{\"seq\":4 ");
    std::fs::write(&path, &torn).unwrap();
    check_tampered(&path, 4, "incomplete");
    assert!(matches!(AuditLog::open(settings(&path)), Err(AuditError::Damaged { .. })));
    assert_eq!(super::files::filler_len(&[b' '; PROBE_BYTES + 1], 1 << 20), 0);
    assert_eq!(super::files::filler_len(b"}\n  ", 100), 2);
    assert_eq!(super::files::filler_len(b"   ", 3), 3);
    assert_eq!(super::files::filler_len(b"}  ", 100), 0);
}

#[test]
#[cfg(target_os = "linux")]
fn readiness_follows_the_last_append() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = AuditLog::open(settings(&path)).unwrap();
    assert_eq!(log.writable(), Ok(()));
    log.append(&entry(0)).unwrap();
    // A log file that refuses writes (a full disk): swap the writer's file
    // for /dev/full, whose every write fails with ENOSPC.
    let real = {
        let mut w = log.writer.lock().unwrap();
        let full = std::fs::OpenOptions::new().append(true).open("/dev/full").unwrap();
        std::mem::replace(&mut w.log, full)
    };
    let err = log.append(&entry(1)).unwrap_err().to_string();
    assert!(err.contains("append to"), "{err}");
    let not_ready = log.writable().unwrap_err();
    assert!(not_ready.contains("failed"), "{not_ready}");
    // Within the probe interval the probe reports the failure without a
    // trial write; after it, the trial write still fails on /dev/full.
    assert!(log.writable().is_err());
    {
        let mut w = log.writer.lock().unwrap();
        w.last_probe = Some(Instant::now() - PROBE_INTERVAL);
        w.log = real;
    }
    // The disk has room again: the probe's trial write succeeds, leaves
    // nothing behind, and the log is ready before any record is written.
    assert_eq!(log.writable(), Ok(()));
    assert_eq!(verify(&path).unwrap().records, 1);
    log.append(&entry(1)).unwrap();
    assert_eq!(verify(&path).unwrap().records, 2);
}

#[cfg(unix)]
fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success(), "mkfifo {}", path.display());
}

/// `AuditLog::open` refuses `settings` with a [`AuditError::NotRegular`]
/// whose message holds each of `expected`.
#[track_caller]
fn refused(settings: AuditSettings, expected: &[&str]) {
    let err = AuditLog::open(settings).expect_err("a file that is not regular was accepted");
    let text = err.to_string();
    assert!(matches!(err, AuditError::NotRegular { .. }), "{text}");
    for part in expected.iter().chain(&["must be a regular file"]) {
        assert!(text.contains(part), "expected {part:?} in: {text}");
    }
}

#[cfg(unix)]
#[test]
fn the_log_must_be_a_regular_file() {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().unwrap();
    let named = |path: &Path| format!("`[audit] file = \"{}\"`", path.display());

    let null = dir.path().join("null.jsonl");
    symlink("/dev/null", &null).unwrap();
    refused(settings(&null), &[&named(&null), "resolves to /dev/null, a character device"]);

    // A FIFO with no reader: refused at once, not waited on.
    let fifo = dir.path().join("fifo.jsonl");
    mkfifo(&fifo);
    refused(settings(&fifo), &[&named(&fifo), " is a FIFO; the audit log must be a regular file"]);
    let to_fifo = dir.path().join("to-fifo.jsonl");
    symlink(&fifo, &to_fifo).unwrap();
    refused(settings(&to_fifo), &[&named(&to_fifo), "resolves to ", "fifo.jsonl, a FIFO"]);

    let directory = dir.path().join("dir.jsonl");
    std::fs::create_dir(&directory).unwrap();
    refused(settings(&directory), &[&named(&directory), "is a directory"]);

    let socket = dir.path().join("socket.jsonl");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    refused(settings(&socket), &[&named(&socket), "is a socket"]);

    // No head file was created beside any of them.
    for path in [&null, &fifo, &to_fifo, &directory, &socket] {
        assert!(!head_path(path).exists(), "{}", path.display());
    }

    // The key is named as the operator wrote it, the resolved path beside it.
    let raw: RawAudit = serde_json::from_value(json!({ "file": "fifo.jsonl" })).unwrap();
    let resolved = AuditSettings::from_raw(raw, &|p| dir.path().join(p)).unwrap();
    refused(resolved, &[&format!("`[audit] file = \"fifo.jsonl\"` ({}) is a FIFO", fifo.display())]);
}

#[cfg(unix)]
#[test]
fn the_head_file_must_be_a_regular_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    mkfifo(&head_path(&path));
    refused(
        settings(&path),
        &[&format!("`[audit] file = \"{}\"`: its head file {} is a FIFO", path.display(), head_path(&path).display())],
    );
    std::fs::remove_file(head_path(&path)).unwrap();
    std::os::unix::fs::symlink("/dev/null", head_path(&path)).unwrap();
    refused(settings(&path), &["its head file", "resolves to /dev/null, a character device"]);
}

#[cfg(unix)]
#[test]
fn regular_files_and_symlinks_to_them_are_accepted() {
    use std::os::unix::fs::symlink;
    let (dir, real) = log_with(2);
    let link = dir.path().join("link.jsonl");
    symlink(&real, &link).unwrap();
    symlink(head_path(&real), head_path(&link)).unwrap();
    append_to(&link, 2..3);
    assert_eq!(verify(&real).unwrap().records, 3);
    assert_eq!(verify(&link).unwrap().records, 3);
    // A symlink to a file not there yet: the file is created, regular.
    let later = dir.path().join("later.jsonl");
    let dangling = dir.path().join("dangling.jsonl");
    symlink(&later, &dangling).unwrap();
    append_to(&dangling, 0..1);
    assert!(std::fs::symlink_metadata(&later).unwrap().file_type().is_file());
    assert_eq!(verify(&dangling).unwrap().records, 1);
}

#[cfg(unix)]
#[test]
fn an_opened_fifo_is_caught_on_its_descriptor() {
    // What `open` checks after opening, for a FIFO swapped in after the
    // check on the path: the descriptor's own type.
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    let file = private_options().read(true).append(true).create(true).open(&fifo).unwrap();
    assert_eq!(files::irregular_file(&file).unwrap(), Some("a FIFO"));
    let regular = private_options().read(true).append(true).create(true).open(dir.path().join("f")).unwrap();
    assert_eq!(files::irregular_file(&regular).unwrap(), None);
}

#[cfg(unix)]
#[test]
fn readers_and_the_readiness_probe_do_not_wait_on_a_fifo() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = AuditLog::open(settings(&path)).unwrap();
    log.append(&entry(0)).unwrap();
    // The log's path now names a FIFO with nobody reading or writing it.
    std::fs::remove_file(&path).unwrap();
    mkfifo(&path);
    let not_ready = log.writable().unwrap_err();
    assert!(not_ready.contains("cannot be opened for appending"), "{not_ready}");
    let err = verify(&path).unwrap_err();
    assert!(err.reason.contains("it is a FIFO"), "{err}");
    let err = tail(&path, 1).unwrap_err().to_string();
    assert!(err.contains("it is a FIFO"), "{err}");
    // A head file that is a FIFO, too.
    let other = dir.path().join("other.jsonl");
    mkfifo(&head_path(&other));
    let err = verify(&other).unwrap_err();
    assert!(err.reason.contains("it is a FIFO"), "{err}");
}

#[test]
fn an_approval_is_recorded_and_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = AuditLog::open(settings(&path)).unwrap();
    let note = ApprovalNote {
        id: "0123456789abcdef0123456789abcdef".into(),
        by: "alice".into(),
        how: "page",
        at_ms: 1_733_356_800_000,
        revision: "sha256:r".into(),
    };
    log.append(&AuditEntry { approval: Some(note), ..entry(0) }).unwrap();
    log.append(&entry(1)).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(
        first["approval"],
        json!({"id": "0123456789abcdef0123456789abcdef", "by": "alice", "how": "page",
                           "at": 1_733_356_800_000u64, "revision": "sha256:r"})
    );
    let second: Value = serde_json::from_str(text.lines().nth(1).unwrap()).unwrap();
    assert!(second.get("approval").is_none(), "only a call run under an approval has the member");
    assert_eq!(verify(&path).unwrap().records, 2);
}

#[test]
fn an_approval_refused_record_continues_the_chain_and_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = AuditLog::open(settings(&path)).unwrap();
    log.append(&entry(0)).unwrap();
    let refusal = RefusedApproval {
        approval_id: "0123456789abcdef0123456789abcdef".into(),
        tool: "create_transfer".into(),
        principal: "alice".into(),
        person: Some("bob\u{2028}".into()),
        reason: "bob is not the principal the call acts for".into(),
    };
    log.append_approval_refused(&refusal).unwrap();
    log.append_approval_refused(&RefusedApproval { person: None, ..refusal }).unwrap();
    log.append(&entry(1)).unwrap();
    drop(log);
    let report = verify(&path).unwrap();
    assert_eq!((report.records, report.unfinished), (4, 0));
    let l = lines(&path);
    assert!(
        l[1].contains(
            "\"event\":\"approval_refused\",\"approval_id\":\"0123456789abcdef0123456789abcdef\",\"tool\":\"create_transfer\",\
             \"principal\":\"alice\",\"person\":\"bob\\u2028\",\"reason\":\"bob is not"
        ),
        "{}",
        l[1]
    );
    assert!(l[2].contains("\"person\":null"), "{}", l[2]);
    let mut edited = l.clone();
    edited[2] = edited[2].replace("\"person\":null,", "");
    write_lines(&path, &edited);
    check_tampered(&path, 3, "missing member \"person\"");
}
