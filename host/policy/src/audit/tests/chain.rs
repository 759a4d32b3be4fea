//! The hash chain and what `verify` detects: edited, removed, swapped,
//! foreign or torn records, a damaged head file, a log reconfigured or
//! interrupted. What a crash leaves is in `recovery.rs`.

use super::*;

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
    assert_eq!(
        verify(&path).unwrap(),
        VerifyReport { records: 0, last_hash: None, unfinished: 0, recoverable: None, recoveries: 0 }
    );
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
fn a_record_the_head_names_cut_short_is_detected() {
    let (_dir, path) = log_with(3);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, &text[..text.len() - 40]).unwrap();
    check_tampered(&path, 3, "the log ends after record 2 but its head file names record 3");
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
fn open_refuses_a_damaged_log() {
    let (_dir, path) = log_with(3);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, &text[..text.len() - 10]).unwrap();
    let err = AuditLog::open(settings(&path)).unwrap_err();
    let message = err.to_string();
    assert!(message.contains("the log ends after record 2 but its head file names record 3"), "{message}");
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

    // More spaces than a probe writes, or spaces after a torn record, are
    // not filler: a partial line, which the next open cuts off.
    let mut torn = std::fs::read(&path).unwrap();
    torn.extend_from_slice(b"{\"seq\":4 ");
    std::fs::write(&path, &torn).unwrap();
    assert_eq!(verify(&path).unwrap().recoverable.map(|r| r.torn_bytes), Some(9));
    assert_eq!(super::super::files::filler_len(&[b' '; PROBE_BYTES + 1], 1 << 20), 0);
    assert_eq!(super::super::files::filler_len(b"}\n  ", 100), 2);
    assert_eq!(super::super::files::filler_len(b"   ", 3), 3);
    assert_eq!(super::super::files::filler_len(b"}  ", 100), 0);
}
