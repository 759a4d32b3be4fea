//! What a crash leaves, made by hand (files cut and heads rewritten as a
//! crash at each point would leave them), and what recovery does with it:
//! records past the head adopted, a torn last line cut to `<file>.torn`, a
//! torn copy of the head survived, records lost with the machine recorded;
//! and what no crash leaves, still refused with what it is.

use super::*;
use crate::audit::files::read_head;
use crate::audit::recover::torn_path;

/// A boot id that is not this machine's: the head was written before a
/// restart.
const OTHER_BOOT: &str = "00000000-0000-4000-8000-000000000000";

fn hash_at(path: &Path, seq: usize) -> String {
    if seq == 0 { GENESIS.to_owned() } else { hash_of(&lines(path)[seq - 1]) }
}

/// Rewrites the head file to name record `seq` of the log, as written and on disk.
fn head_names(path: &Path, seq: usize) {
    std::fs::write(head_path(path), head_bytes(seq as u64, &hash_at(path, seq))).unwrap();
}

/// The head as read from the file.
fn head_of(path: &Path) -> Head {
    read_head(&File::open(head_path(path)).unwrap()).unwrap().unwrap().head
}

/// The `recovered` records of the log.
fn recovered(path: &Path) -> Vec<Value> {
    tail(path, 1000).unwrap().into_iter().filter(|r| r["event"] == RECOVERED).collect()
}

fn recoverable(path: &Path) -> Recovery {
    verify(path).unwrap().recoverable.expect("something to recover")
}

/// Opens and closes the log (recovering it), then checks it verifies
/// with nothing left to recover and `recoveries` recoveries.
fn reopen(path: &Path, recoveries: u64) -> VerifyReport {
    drop(AuditLog::open(settings(path)).unwrap());
    let report = verify(path).unwrap();
    assert_eq!((report.recoverable.as_ref(), report.recoveries), (None, recoveries), "{report:?}");
    report
}

#[test]
fn records_past_the_head_are_adopted_and_the_recovery_recorded() {
    // A group of three written, then a crash before the head's rewrite.
    let (_dir, path) = log_with(5);
    head_names(&path, 2);
    let found = recoverable(&path);
    assert_eq!(found, Recovery { head_seq: 2, adopted: 3, ..Recovery::default() });
    assert!(found.to_string().contains("3 complete record(s) with an intact chain after record 2"), "{found}");

    let report = reopen(&path, 1);
    assert_eq!(report.records, 6);
    let [record] = &recovered(&path)[..] else { panic!("one recovered record") };
    assert_eq!(record["seq"], 6);
    assert_eq!((&record["head_seq"], &record["adopted"], &record["missing"]), (&json!(2), &json!(3), &json!(0)));
    assert_eq!(
        (&record["torn_bytes"], &record["torn_file"], &record["torn_head"]),
        (&json!(0), &Value::Null, &json!(false))
    );
    let head = head_of(&path);
    assert_eq!((head.seq, head.synced_seq), (6, 6), "the recovered record is synced whatever the durability");

    // A log with nothing to recover gets no record.
    append_to(&path, 5..6);
    assert_eq!(verify(&path).unwrap().recoveries, 1);
}

#[test]
fn a_torn_last_line_is_cut_to_the_torn_file() {
    // A group of two whose write(2) a kill stopped in its second record.
    let (dir, path) = log_with(5);
    head_names(&path, 3);
    let text = std::fs::read(&path).unwrap();
    let cut = text.len() - 57;
    std::fs::write(&path, &text[..cut]).unwrap();
    let last_line_start = text[..cut].iter().rposition(|&b| b == b'\n').unwrap() + 1;
    let piece = text[last_line_start..cut].to_vec();
    assert_eq!(
        recoverable(&path),
        Recovery { head_seq: 3, adopted: 1, torn_bytes: piece.len() as u64, ..Recovery::default() }
    );

    let report = reopen(&path, 1);
    assert_eq!(report.records, 5, "records 1 to 4 and the recovered record");
    let torn = torn_path(&path);
    assert_eq!(torn, dir.path().join("audit.jsonl.torn"));
    assert_eq!(std::fs::read(&torn).unwrap(), [piece.as_slice(), b"\n"].concat());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        assert_eq!(std::fs::metadata(&torn).unwrap().permissions().mode() & 0o777, 0o600);
    }
    let [record] = &recovered(&path)[..] else { panic!("one recovered record") };
    let mut digest = String::from("sha256:");
    airlock_core::canonical_json::push_hex(&mut digest, &Sha256::digest(&piece));
    assert_eq!(record["torn_bytes"], piece.len());
    assert_eq!(record["torn_sha256"], digest);
    assert_eq!(record["torn_file"], "audit.jsonl.torn");
    assert_eq!(record["adopted"], 1);

    // A second torn line is added to the same file, on a line of its own.
    let mut text = std::fs::read(&path).unwrap();
    text.extend_from_slice(b"{\"seq\":6,\"ti");
    std::fs::write(&path, &text).unwrap();
    reopen(&path, 2);
    let kept = std::fs::read_to_string(&torn).unwrap();
    assert_eq!(kept.lines().count(), 2, "{kept}");
    assert!(kept.ends_with("{\"seq\":6,\"ti\n"), "{kept}");
}

#[test]
fn a_log_of_one_torn_line_is_recovered() {
    // The first group's write was cut short: the head still names no record.
    let (_dir, path) = log_with(2);
    std::fs::write(head_path(&path), head_bytes(0, GENESIS)).unwrap();
    let text = std::fs::read(&path).unwrap();
    std::fs::write(&path, &text[..100]).unwrap();
    assert_eq!(recoverable(&path), Recovery { torn_bytes: 100, ..Recovery::default() });
    assert_eq!(reopen(&path, 1).records, 1);
}

#[test]
fn every_instant_of_a_group_commit_is_recovered() {
    // Records 1 to 6 written as one log; a crash may have cut the file at
    // any byte and left the head naming any record before the cut (the
    // head is rewritten only after the group's write). Every such state
    // opens, keeps every complete record, and verifies.
    let (_dir, whole) = log_with(6);
    let text = std::fs::read(&whole).unwrap();
    let ends: Vec<usize> = text.iter().enumerate().filter(|&(_, &b)| b == b'\n').map(|(i, _)| i + 1).collect();
    let mut cuts: Vec<usize> = ends.iter().flat_map(|&end| [end - 1, end, end + 1, end + 150]).collect();
    cuts.extend([0, 1, 100]);
    cuts.retain(|&cut| cut <= text.len());
    for cut in cuts {
        let complete = ends.iter().filter(|&&end| end <= cut).count();
        for named in complete.saturating_sub(3)..=complete {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("audit.jsonl");
            std::fs::write(&path, &text[..cut]).unwrap();
            std::fs::write(head_path(&path), head_bytes(named as u64, &hash_at(&whole, named))).unwrap();
            let before = verify(&path).unwrap_or_else(|e| panic!("cut at {cut}, head at {named}: {e}"));
            assert_eq!(before.records, complete as u64);
            let torn = cut - ends.iter().copied().filter(|&end| end <= cut).max().unwrap_or(0);
            let expected = Recovery {
                head_seq: named as u64,
                adopted: (complete - named) as u64,
                torn_bytes: torn as u64,
                ..Recovery::default()
            };
            assert_eq!(
                before.recoverable,
                expected.is_needed().then_some(expected.clone()),
                "cut at {cut}, head at {named}"
            );
            let after = reopen(&path, u64::from(expected.is_needed()));
            assert_eq!(after.records, complete as u64 + u64::from(expected.is_needed()));
            assert_eq!(lines(&path)[..complete], lines(&whole)[..complete], "no complete record is lost");
        }
    }
}

#[test]
fn a_torn_line_before_the_last_is_refused() {
    let (_dir, path) = log_with(4);
    head_names(&path, 2);
    let mut l = lines(&path);
    let half = l[2].len() / 2;
    l[2].truncate(half);
    write_lines(&path, &l);
    check_tampered(&path, 3, "not a JSON record");
    let err = AuditLog::open(settings(&path)).unwrap_err().to_string();
    assert!(err.contains("the line before record 4 is damaged") && err.contains("only the last line"), "{err}");
}

#[test]
fn an_edited_record_past_the_head_is_refused() {
    let (_dir, path) = log_with(4);
    head_names(&path, 2);
    let mut l = lines(&path);
    l[3] = l[3].replace("\"outcome\":\"ok\"", "\"outcome\":\"timeout\"");
    write_lines(&path, &l);
    check_tampered(&path, 4, "hash mismatch");
    let err = AuditLog::open(settings(&path)).unwrap_err().to_string();
    assert!(err.contains("its last complete line is damaged") && err.contains("hash mismatch"), "{err}");
}

#[test]
fn a_broken_chain_past_the_head_is_refused() {
    // Record 3 replaced by another log's record 3: its own hash is intact.
    let (_dir, path) = log_with(4);
    let (_other_dir, other) = log_with(4);
    head_names(&path, 2);
    let mut l = lines(&path);
    l[2] = lines(&other)[2].clone();
    write_lines(&path, &l);
    check_tampered(&path, 3, "\"prev\" is not the hash of record 2");
    let err = AuditLog::open(settings(&path)).unwrap_err().to_string();
    assert!(err.contains("the \"prev\" of record 4 is not the hash of record 3"), "{err}");

    // Record 3 removed.
    let mut l = lines(&path);
    l.remove(2);
    write_lines(&path, &l);
    check_tampered(&path, 3, "expected record 3 but found record 4");
    let err = AuditLog::open(settings(&path)).unwrap_err().to_string();
    assert!(err.contains("record 2 is followed by record 4"), "{err}");
}

#[test]
fn a_rewritten_record_the_head_names_is_refused() {
    // A forged chain from record 2 on, records past the head included.
    let (_dir, path) = log_with(4);
    head_names(&path, 2);
    let mut l = lines(&path);
    l[1] = forge(&l[1], |r| {
        r.insert("decision".into(), json!("deny"));
    });
    for i in 2..4 {
        let prev = hash_of(&l[i - 1]);
        l[i] = forge(&l[i], |r| {
            r.insert("prev".into(), json!(prev));
        });
    }
    write_lines(&path, &l);
    check_tampered(&path, 2, "the head file names hash");
    let err = AuditLog::open(settings(&path)).unwrap_err().to_string();
    assert!(err.contains("record 2 has hash") && err.contains("the log was rewritten"), "{err}");
}

#[test]
fn a_log_shorter_than_its_head_is_refused_in_the_boot_that_wrote_it() {
    // The page cache held every record written: none can have been lost.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    append_to(&path, 0..4);
    let head = head_of(&path);
    assert_eq!((head.seq, head.synced_seq), (4, 0), "flush: written, not known on disk");
    let mut l = lines(&path);
    l.pop();
    write_lines(&path, &l);
    check_tampered(&path, 4, "the log ends after record 3 but its head file names record 4: records were removed");
    let err = AuditLog::open(settings(&path)).unwrap_err().to_string();
    assert!(err.contains("records were removed from the end"), "{err}");
}

#[test]
fn records_lost_with_the_machine_are_recovered_and_recorded() {
    // Flush: record 2 was on disk, 3 to 5 only written; the machine
    // stopped and lost 4 and 5 (and tore 4's line).
    let (_dir, path) = log_with(5);
    let hash = |seq| hash_at(&path, seq);
    let head =
        Head { boot: Some(OTHER_BOOT.to_owned()), synced_seq: 2, synced_hash: hash(2), ..Head::synced(5, &hash(5)) };
    std::fs::write(head_path(&path), head_file_bytes(&head)).unwrap();
    let text = std::fs::read(&path).unwrap();
    let l = lines(&path);
    let keep = l[..3].iter().map(|line| line.len() + 1).sum::<usize>() + 20;
    std::fs::write(&path, &text[..keep]).unwrap();
    let found = recoverable(&path);
    assert_eq!(found, Recovery { head_seq: 5, missing: 2, torn_bytes: 20, ..Recovery::default() });
    assert!(found.to_string().contains("the last 2 record(s) its head file names (up to record 5) are not in the log"));

    reopen(&path, 1);
    let [record] = &recovered(&path)[..] else { panic!("one recovered record") };
    assert_eq!((&record["seq"], &record["head_seq"], &record["missing"]), (&json!(4), &json!(5), &json!(2)));
    assert_eq!(head_of(&path).seq, 4, "the newer copy names a lower record than the older");

    // Not past what was on disk.
    let (_dir, path) = log_with(5);
    let head = Head {
        boot: Some(OTHER_BOOT.to_owned()),
        synced_seq: 4,
        synced_hash: hash_at(&path, 4),
        ..Head::synced(5, &hash_at(&path, 5))
    };
    std::fs::write(head_path(&path), head_file_bytes(&head)).unwrap();
    let mut l = lines(&path);
    l.truncate(3);
    write_lines(&path, &l);
    check_tampered(&path, 4, "(and record 4 as on disk before the machine restarted): records were removed");
    assert!(AuditLog::open(settings(&path)).unwrap_err().to_string().contains("records were removed"));
}

#[test]
fn the_head_names_what_is_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let fsync = AuditLog::open(AuditSettings { durability: Durability::Fsync, ..settings(&path) }).unwrap();
    fsync.append(&entry(1)).unwrap();
    let head = head_of(&path);
    assert_eq!((head.seq, head.synced_seq, head.boot.as_deref()), (1, 1, super::super::files::boot_id()));
    drop(fsync);
    let flush = AuditLog::open(settings(&path)).unwrap();
    flush.append(&entry(2)).unwrap();
    assert_eq!((head_of(&path).seq, head_of(&path).synced_seq), (2, 1));
    flush.sync().unwrap();
    assert_eq!((head_of(&path).seq, head_of(&path).synced_seq), (2, 2));
}

#[test]
fn a_torn_copy_of_the_head_is_survived() {
    let (_dir, path) = log_with(3);
    let bytes = std::fs::read(head_path(&path)).unwrap();
    assert_eq!(bytes.len(), HEAD_BYTES);
    // The two copies name records 3 and 2; tear each in turn, as a
    // rewrite interrupted halfway would (new bytes, then old ones).
    let old = head_file_bytes(&Head::synced(1, &hash_at(&path, 1)));
    for slot in 0..2 {
        let range = slot * HEAD_SLOT_BYTES..(slot + 1) * HEAD_SLOT_BYTES;
        let mut torn = bytes.clone();
        torn[range.start + 30..range.end].copy_from_slice(&old[range.start + 30..range.end]);
        std::fs::write(head_path(&path), &torn).unwrap();
        let found = recoverable(&path);
        assert!(found.torn_head && found.missing == 0 && found.torn_bytes == 0, "{found:?}");
        assert!(found.head_seq >= 2 && found.adopted == 3 - found.head_seq, "{found:?}");
    }
    reopen(&path, 1);
    assert_eq!(recovered(&path)[0]["torn_head"], true);

    // Both copies damaged: no crash does that.
    let mut both = std::fs::read(head_path(&path)).unwrap();
    both[10] = b'x';
    both[HEAD_SLOT_BYTES + 10] = b'x';
    std::fs::write(head_path(&path), &both).unwrap();
    let err = verify(&path).unwrap_err();
    assert!(err.reason.contains("neither of its two copies is intact"), "{err}");
    assert!(AuditLog::open(settings(&path)).unwrap_err().to_string().contains("neither of its two copies"));
}

#[test]
fn a_head_written_before_it_had_two_copies_is_read() {
    let (_dir, path) = log_with(3);
    let legacy = format!("{{\"seq\":3,\"hash\":\"{}\"}}", hash_at(&path, 3));
    std::fs::write(head_path(&path), format!("{legacy:127}\n")).unwrap();
    assert_eq!(verify(&path).unwrap().recoverable, None);
    std::fs::write(head_path(&path), format!("{{\"seq\":2,\"hash\":\"{}\"}}{:100}\n", hash_at(&path, 2), "")).unwrap();
    assert_eq!(recoverable(&path).adopted, 1, "read as the last record written and on disk");
    reopen(&path, 1);
    assert_eq!(std::fs::metadata(head_path(&path)).unwrap().len(), HEAD_BYTES as u64, "rewritten in the new form");
}

#[test]
fn an_empty_head_with_records_is_refused() {
    let (_dir, path) = log_with(2);
    std::fs::write(head_path(&path), "").unwrap();
    let err = verify(&path).unwrap_err();
    assert!(err.reason.contains("its head file is empty but the log holds records"), "{err}");
    assert!(AuditLog::open(settings(&path)).unwrap_err().to_string().contains("head file is empty"));
}

#[test]
fn a_sibling_left_by_a_crash_is_recovered_by_the_next_process_to_take_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("audit.jsonl");
    let first = open_shared(settings(&file)).unwrap();
    let second = open_shared(settings(&file)).unwrap();
    for i in 0..3 {
        second.append(&entry(i)).unwrap();
    }
    drop(second);
    let sibling = sibling_path(&file, 1);
    head_names(&sibling, 1);
    let mut text = std::fs::read(&sibling).unwrap();
    text.extend_from_slice(b"{\"seq\":4,");
    std::fs::write(&sibling, &text).unwrap();
    let report = verify_all(&file).unwrap();
    assert_eq!(
        report.chains[1].1.recoverable,
        Some(Recovery { head_seq: 1, adopted: 2, torn_bytes: 9, ..Recovery::default() })
    );

    let again = open_shared(settings(&file)).unwrap();
    assert_eq!(again.path(), sibling);
    drop((first, again));
    let report = verify_all(&file).unwrap();
    assert_eq!(report.chains[1].1.recoveries, 1);
    assert!(report.chains.iter().all(|(_, chain)| chain.recoverable.is_none()), "{report:?}");
    assert!(torn_path(&sibling).exists());
}

#[test]
fn a_live_log_is_not_reported_recoverable() {
    // While a writer has the log open, records past the head file are its
    // own group in flight.
    let (_dir, path) = log_with(3);
    head_names(&path, 2);
    let log = AuditLog::open(settings(&path)).unwrap();
    let mut text = std::fs::read(&path).unwrap();
    text.extend_from_slice(b"{\"seq\":5,");
    std::fs::write(&path, &text).unwrap();
    let report = verify(&path).unwrap();
    assert_eq!((report.records, report.recoverable, report.recoveries), (4, None, 1));
    drop(log);
}
