//! What a record holds: its members in order, and the records of a changed
//! tool, a session, an approval and a refused or withdrawn approval, each continuing the
//! chain.

use super::*;

#[test]
fn record_format() {
    let (_dir, path) = log_with(1);
    let line = &lines(&path)[0];
    // Members in the documented order, arguments canonical and redacted.
    let names: Vec<String> = {
        let mut names = Vec::new();
        let mut rest = line.as_str();
        // `session` is only written for calls that ran in a session, `task`
        // for calls that ran as a task, the registry members only for
        // components pulled from one, `blame` and `retry` only for calls
        // that failed, `content` for calls that returned content blocks.
        let absent = ["session", "task", "component_ref", "signer", "approval", "blame", "retry", "content"];
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
fn an_approval_is_recorded_and_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = AuditLog::open(settings(&path)).unwrap();
    let note = ApprovalNote {
        id: "0123456789abcdef0123456789abcdef".into(),
        by: "alice".into(),
        how: "page",
        proof: "passkey",
        credential: Some("cred-1".into()),
        at_ms: 1_733_356_800_000,
        revision: "sha256:r".into(),
    };
    log.append(&AuditEntry { approval: Some(note), ..entry(0) }).unwrap();
    log.append(&entry(1)).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(
        first["approval"],
        json!({"id": "0123456789abcdef0123456789abcdef", "by": "alice", "how": "page", "proof": "passkey",
               "credential": "cred-1", "at": 1_733_356_800_000u64, "revision": "sha256:r"})
    );
    let second: Value = serde_json::from_str(text.lines().nth(1).unwrap()).unwrap();
    assert!(second.get("approval").is_none(), "only a call run under an approval has the member");
    assert_eq!(verify(&path).unwrap().records, 2);
}

#[test]
fn approval_refused_and_withdrawn_records_continue_the_chain_and_verify() {
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
    log.append_approval_refused(&RefusedApproval { person: None, ..refusal.clone() }).unwrap();
    let reason = "withdrawn to make room for another principal's (fair share of max_pending = 3)".to_owned();
    let RefusedApproval { approval_id, tool, principal, .. } = refusal;
    log.append_approval_withdrawn(&WithdrawnApproval { approval_id, tool, principal, reason }).unwrap();
    log.append(&entry(1)).unwrap();
    drop(log);
    let report = verify(&path).unwrap();
    assert_eq!((report.records, report.unfinished), (5, 0));
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
    assert!(
        l[3].contains(
            "\"event\":\"approval_withdrawn\",\"approval_id\":\"0123456789abcdef0123456789abcdef\",\
             \"tool\":\"create_transfer\",\"principal\":\"alice\",\"reason\":\"withdrawn to make room"
        ),
        "{}",
        l[3]
    );
    let mut edited = l.clone();
    edited[2] = edited[2].replace("\"person\":null,", "");
    write_lines(&path, &edited);
    check_tampered(&path, 3, "missing member \"person\"");
}

#[test]
fn content_blocks_are_recorded_by_kind_type_size_and_digest_never_by_bytes() {
    use airlock_core::content::{Kind, Summary};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = AuditLog::open(settings(&path)).unwrap();
    let image = Summary {
        kind: Kind::Image,
        media_type: Some("image/png".into()),
        size: 67,
        sha256: format!("sha256:{}", "ab".repeat(32)),
    };
    let link = Summary { kind: Kind::ResourceLink, media_type: None, size: 25, sha256: "sha256:cd".into() };
    log.append(&AuditEntry { content: vec![image, link], ..entry(0) }).unwrap();
    log.append(&entry(1)).unwrap();
    drop(log);
    let lines = lines(&path);
    let expected = format!(
        r#""message":null,"content":[{{"kind":"image","media_type":"image/png","sha256":"sha256:{}","size":67}},{{"kind":"resource_link","media_type":null,"sha256":"sha256:cd","size":25}}],"duration_us""#,
        "ab".repeat(32)
    );
    assert!(lines[0].contains(&expected), "{}", lines[0]);
    assert!(!lines[1].contains("\"content\""), "a call without blocks has no member: {}", lines[1]);
    let report = verify(&path).unwrap();
    assert_eq!(report.records, 2);
}

#[test]
fn a_task_is_recorded_after_the_session_and_verifies() {
    let (_dir, path) = log_with(1);
    let log = AuditLog::open(settings(&path)).unwrap();
    let task = "0123456789abcdef0123456789abcdef";
    log.append(&AuditEntry { session: Some("s-1".to_owned()), task: Some(task.to_owned()), ..entry(1) }).unwrap();
    log.append(&AuditEntry { task: Some(task.to_owned()), ..entry(2) }).unwrap();
    let lines = lines(&path);
    assert!(!lines[0].contains("\"task\""), "absent for a call that was no task: {}", lines[0]);
    assert!(lines[1].contains(&format!(r#""session":"s-1","task":"{task}","component_digest""#)), "{}", lines[1]);
    assert!(lines[2].contains(&format!(r#""tool":"fs.read","task":"{task}","component_digest""#)), "{}", lines[2]);
    drop(log);
    assert_eq!(verify(&path).unwrap().records, 3);
}

#[test]
fn a_failed_call_records_who_has_to_act_and_whether_a_retry_can_help() {
    use airlock_core::outcome::{ErrorKind, Failure};
    let (_dir, path) = log_with(1);
    let log = AuditLog::open(settings(&path)).unwrap();
    let failure = Failure::new(ErrorKind::Timeout, "too slow");
    let event = Event::Finished(CallOutcome::Ran { authority: Authority::Allowed, result: Err(failure) });
    log.append(&AuditEntry { event, ..entry(1) }).unwrap();
    drop(log);
    let lines = lines(&path);
    assert!(!lines[0].contains("\"blame\""), "absent for a call that did not fail: {}", lines[0]);
    assert!(lines[1].contains(r#""outcome":"timeout","#), "{}", lines[1]);
    assert!(lines[1].contains(r#","blame":"caller","retry":"with_changes","duration_us""#), "{}", lines[1]);
    assert_eq!(verify(&path).unwrap().records, 2);
}
