//! Unit tests of what a record holds: redacted arguments and their digest,
//! escaping, the caps on strings and arguments, and numbers.

use super::super::tests::{entry, lines, log_with, settings};
use super::*;
use airlock_core::outcome::{CallOutcome, ErrorKind, Failure};
use airlock_core::text::{ELLIPSIS, cap};
use serde_json::json;

#[test]
fn redaction_at_depth_and_case_insensitive() {
    let arguments = json!({
        "query": "q",
        "Auth": { "headers": [ { "API_Key": "k1", "keep": 1 }, { "nested": { "api_key": { "deep": "k2" } } } ] },
        "TOKEN": ["t"],
        "tokens": "not a match",
    });
    let redacted = redact(&arguments, &["api_key".to_owned(), "Token".to_owned()]);
    assert_eq!(
        redacted,
        json!({
            "query": "q",
            "Auth": { "headers": [ { "API_Key": "[redacted]", "keep": 1 }, { "nested": { "api_key": "[redacted]" } } ] },
            "TOKEN": "[redacted]",
            "tokens": "not a match",
        })
    );
    assert_eq!(redact(&arguments, &[]), arguments);
}

#[test]
fn records_hold_redacted_arguments_and_their_digest() {
    let (_dir, path) = log_with(1);
    let record = &tail(&path, 1).unwrap()[0];
    assert_eq!(record["arguments"], json!({ "path": "/data/0.txt", "api_key": "[redacted]" }));
    let expected = argument_digest(&redact(&entry(0).arguments, &["api_key".to_owned()]));
    assert_eq!(record["argument_digest"], expected);
    assert_ne!(record["argument_digest"], argument_digest(&entry(0).arguments));
    assert!(!std::fs::read_to_string(&path).unwrap().contains("s3cret"));
}

#[test]
fn non_json_arguments_mentioning_a_redacted_key_are_hidden() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = AuditLog::open(settings(&path)).unwrap();
    for raw in ["{\"API_KEY\": \"s3cret\"", "plain text"] {
        log.append(&AuditEntry { arguments: Value::String(raw.to_owned()), ..entry(0) }).unwrap();
    }
    drop(log);
    let records = tail(&path, 2).unwrap();
    assert_eq!(records[0]["arguments"], "[redacted]");
    assert_eq!(records[1]["arguments"], "plain text");
    assert_eq!(verify(&path).unwrap().records, 2);
}

#[test]
fn argument_digest_ignores_key_order() {
    let a: Value = serde_json::from_str(r#"{"b":1,"a":{"y":[1,{"d":true,"c":null}],"x":"é\n"}}"#).unwrap();
    let b: Value = serde_json::from_str(r#"{ "a": {"x":"é\n", "y":[1,{"c":null,"d":true}]}, "b":1 }"#).unwrap();
    assert_eq!(argument_digest(&a), argument_digest(&b));
    let digest = argument_digest(&a);
    assert!(digest.starts_with("sha256:") && is_sha256_hex(&digest[7..]), "{digest}");
    assert_eq!(canonical(&a), r#"{"a":{"x":"é\n","y":[1,{"c":null,"d":true}]},"b":1}"#);
    // Array order matters.
    assert_ne!(argument_digest(&json!([1, 2])), argument_digest(&json!([2, 1])));
}

#[test]
fn strings_escape_like_serde_json() {
    let mut s: String = (0u32..0x80).filter_map(char::from_u32).collect();
    s.push_str("é€😀\u{2028}\u{7f}");
    assert_eq!(json_string(&s), serde_json::to_string(&s).unwrap());
}

#[test]
fn arguments_can_be_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = AuditLog::open(AuditSettings { record_arguments: false, ..settings(&path) }).unwrap();
    log.append(&entry(0)).unwrap();
    drop(log);
    let record = &tail(&path, 1).unwrap()[0];
    assert!(record.get("arguments").is_none());
    assert!(record["argument_digest"].as_str().unwrap().starts_with("sha256:"));
    assert!(!lines(&path)[0].contains("\"arguments\""));
    assert_eq!(verify(&path).unwrap().records, 1);
}

#[test]
fn strings_are_capped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = AuditLog::open(settings(&path)).unwrap();
    let long = "é".repeat(10_000);
    log.append(&AuditEntry {
        call_id: format!("id\n{{\"seq\":99}}\n{long}"),
        principal: long.clone(),
        tool: long.clone(),
        component_digest: Some(long.clone()),
        policy: Some(long.clone()),
        approval: None,
        event: Event::Finished(CallOutcome::not_reached(Failure::new(ErrorKind::Internal, long.clone()))),
        ..entry(0)
    })
    .unwrap();
    drop(log);
    assert_eq!(lines(&path).len(), 1, "a newline in a field split the record");
    let record = &tail(&path, 1).unwrap()[0];
    for field in ["call_id", "principal", "tool", "component_digest", "policy"] {
        let value = record[field].as_str().unwrap();
        assert!(value.len() <= MAX_FIELD_BYTES && value.ends_with(ELLIPSIS), "{field}: {} bytes", value.len());
    }
    let message = record["message"].as_str().unwrap();
    assert!(message.len() <= MAX_MESSAGE_BYTES && message.len() > MAX_MESSAGE_BYTES - 8, "{}", message.len());
    assert_eq!(cap("short", 256), "short");
    assert_eq!(verify(&path).unwrap().records, 1);
}

#[test]
fn oversized_or_deep_arguments_are_replaced_by_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = AuditLog::open(settings(&path)).unwrap();
    let big = json!({ "data": "x".repeat(MAX_RECORDED_ARGUMENTS_BYTES) });
    let mut deep = json!("bottom");
    for _ in 0..100 {
        deep = json!([deep]);
    }
    for arguments in [&big, &deep] {
        log.append(&AuditEntry { arguments: arguments.clone(), ..entry(0) }).unwrap();
    }
    drop(log);
    let records = tail(&path, 2).unwrap();
    assert!(records[0]["arguments"].as_str().unwrap().contains("cap"), "{}", records[0]["arguments"]);
    assert!(records[1]["arguments"].as_str().unwrap().contains("nested"), "{}", records[1]["arguments"]);
    assert_eq!(records[0]["argument_digest"], argument_digest(&big));
    assert_eq!(records[1]["argument_digest"], argument_digest(&deep));
    assert_eq!(verify(&path).unwrap().records, 2);
}

#[test]
fn floats_verify() {
    // Random bit patterns reach the numbers serde_json's default float
    // parser reads back one unit off.
    let mut x = 0x9e37_79b9_7f4a_7c15_u64;
    let mut random = Vec::new();
    while random.len() < 2000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let f = f64::from_bits(x);
        if f.is_finite() {
            random.push(json!([f]));
        }
    }
    // What models write.
    let typical = json!({ "lat": 37.7749, "lon": -122.4194, "t": 0.5, "eps": 1e-7, "price": 19.99, "z": -0.0 });
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = AuditLog::open(settings(&path)).unwrap();
    for arguments in random.iter().chain([&typical]) {
        log.append(&AuditEntry { arguments: arguments.clone(), ..entry(0) }).unwrap();
    }
    drop(log);
    assert_eq!(verify(&path).unwrap().records, 2001);
    let records = tail(&path, 2001).unwrap();
    // Recorded exactly, or not at all.
    for (record, arguments) in records.iter().zip(random.iter().chain([&typical])) {
        let recorded = &record["arguments"];
        assert!(recorded == arguments || recorded.as_str().is_some_and(|s| s.contains("read back")), "{recorded}");
    }
    assert_eq!(records[2000]["arguments"], typical);
    let recorded = records.iter().filter(|r| r["arguments"].is_array()).count();
    println!("{recorded} of 2000 random floats recorded exactly");
    // With serde_json's `float_roundtrip` feature on, every float is recorded.
    let exact_parser = serde_json::from_str::<f64>("1.0715660391465826e-75").unwrap() == 1.0715660391465826e-75;
    if exact_parser {
        assert_eq!(recorded, 2000);
    }
}

/// Every line end Python's `str.splitlines` knows: ASCII `\n`, `\r`, VT, FF,
/// FS, GS, RS, and the non-ASCII U+0085, U+2028, U+2029.
const LINE_ENDS: [char; 10] =
    ['\n', '\r', '\u{0b}', '\u{0c}', '\u{1c}', '\u{1d}', '\u{1e}', '\u{85}', '\u{2028}', '\u{2029}'];

/// The lines of `text` as `str.splitlines` sees them (`\r\n` is one end).
fn unicode_lines(text: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = text.split(LINE_ENDS).collect();
    // A line end at the very end closes the last line; `\r\n` leaves an
    // empty piece between its two ends, which no record line has.
    if lines.last() == Some(&"") {
        lines.pop();
    }
    lines
}

/// 18 entries whose untrusted strings hold every line end, each alone and
/// all together, in every member they reach.
fn entries_with_line_ends() -> Vec<AuditEntry> {
    let all: String = LINE_ENDS.iter().collect();
    let mut texts: Vec<String> = LINE_ENDS.iter().map(|end| format!("a{end}b")).collect();
    texts.push(all.clone());
    texts.push(format!("{all}{{\"seq\":99}}{all}"));
    texts.push("\u{2028}\u{2029}\u{85}".repeat(20));
    texts.push(format!("\\{}\\u2028\\\\\u{2028}", '\u{2029}'));
    texts.push("é\u{2028}😀\u{85}€".to_owned());
    texts.push(format!("x{}", "\u{2028}".repeat(200)));
    texts.push(format!("{}\u{2029}", "y".repeat(MAX_FIELD_BYTES - 3)));
    texts.push("\u{85}".to_owned());
    assert_eq!(texts.len(), 18);
    texts
        .into_iter()
        .map(|text| AuditEntry {
            call_id: text.clone(),
            principal: text.clone(),
            tool: text.clone(),
            session: Some(text.clone()),
            task: Some(text.clone()),
            policy: Some(text.clone()),
            approval: None,
            arguments: json!({ &text: [&text, { "k": &text }] }),
            event: Event::Finished(CallOutcome::not_reached(Failure::new(ErrorKind::Internal, text))),
            ..entry(0)
        })
        .collect()
}

#[test]
fn non_ascii_line_ends_are_escaped_in_the_written_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = AuditLog::open(settings(&path)).unwrap();
    let entries = entries_with_line_ends();
    for entry in &entries {
        log.append(entry).unwrap();
    }
    drop(log);
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(unicode_lines(&text).len(), 18, "a line end in a field split a record");
    assert!(!text.contains(['\u{85}', '\u{2028}', '\u{2029}']), "a raw non-ASCII line end was written");
    assert!(text.contains(r"a\u2028b") && text.contains(r"a\u2029b") && text.contains(r"a\u0085b"), "{text}");
    // The records read back as they were, and verify.
    let records = tail(&path, 18).unwrap();
    for (record, entry) in records.iter().zip(&entries) {
        let capped = cap(&entry.principal, MAX_FIELD_BYTES);
        assert_eq!(record["principal"], *capped);
        assert_eq!(record["call_id"], *capped);
    }
    assert_eq!(records[0]["arguments"], json!({ "a\nb": ["a\nb", { "k": "a\nb" }] }));
    assert_eq!(records[8]["session"], "a\u{2028}b");
    assert_eq!(records[7]["arguments"], json!({ "a\u{85}b": ["a\u{85}b", { "k": "a\u{85}b" }] }));
    let report = verify(&path).unwrap();
    assert_eq!(report.records, 18);
    // The argument digest is over the canonical JSON, with the characters
    // as they are.
    assert_eq!(records[8]["argument_digest"], argument_digest(&entries[8].arguments));
}

#[test]
fn records_written_with_raw_line_ends_still_verify_and_continue() {
    // Airlock wrote U+0085, U+2028 and U+2029 raw before it escaped them;
    // the hash is over the canonical form, which has them raw.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = AuditLog::open(settings(&path)).unwrap();
    for entry in entries_with_line_ends().iter().take(3) {
        log.append(entry).unwrap();
    }
    for entry in entries_with_line_ends().iter().skip(7).take(3) {
        log.append(entry).unwrap();
    }
    drop(log);
    let old = std::fs::read_to_string(&path)
        .unwrap()
        .replace(r"\u0085", "\u{85}")
        .replace(r"\u2028", "\u{2028}")
        .replace(r"\u2029", "\u{2029}");
    assert!(old.contains('\u{85}') && old.contains('\u{2028}') && old.contains('\u{2029}'));
    std::fs::write(&path, &old).unwrap();
    assert_eq!(verify(&path).unwrap().records, 6);
    // Airlock continues such a log; the new records are escaped.
    let log = AuditLog::open(settings(&path)).unwrap();
    log.append(&entries_with_line_ends()[8]).unwrap();
    drop(log);
    assert_eq!(verify(&path).unwrap().records, 7);
    let last = lines(&path).pop().unwrap();
    assert!(last.contains(r"a\u2028b") && !last.contains('\u{2028}'), "{last}");
    // A raw line end is accepted only where the canonical form has one:
    // the escaped and the raw form of one record both verify, nothing else.
    let mut edited = lines(&path);
    edited[6] = edited[6].replacen(r"a\u2028b", "a\u{2029}b", 1);
    std::fs::write(&path, edited.join("\n") + "\n").unwrap();
    assert!(verify(&path).unwrap_err().reason.contains("hash mismatch"));
}

#[test]
fn a_failed_call_records_its_blame_and_retry_and_records_without_them_still_verify() {
    use airlock_core::outcome::{Blame, Retry};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = AuditLog::open(settings(&path)).unwrap();
    let failure = Failure::new(ErrorKind::Internal, "too big").blame(Blame::Operator).retry(Retry::No);
    log.append(&AuditEntry { event: Event::Finished(CallOutcome::not_reached(failure)), ..entry(0) }).unwrap();
    log.append(&entry(1)).unwrap();
    drop(log);
    let records = tail(&path, 2).unwrap();
    assert_eq!((&records[0]["blame"], &records[0]["retry"]), (&json!("operator"), &json!("no")));
    // Between `message` and `duration_us`, as documented.
    assert!(
        lines(&path)[0].contains(r#"first.","blame":"operator","retry":"no","duration_us":"#),
        "{}",
        lines(&path)[0]
    );
    // A call that did not fail has neither.
    assert!(records[1].get("blame").is_none() && records[1].get("retry").is_none(), "{}", records[1]);
    assert_eq!(verify(&path).unwrap().records, 2);

    // The record of a failed call as hosts older than blame and retry
    // wrote it (without them) verifies as it always did.
    let old = dir.path().join("old.jsonl");
    let Value::Object(mut record) = records[0].clone() else { panic!("a record is an object") };
    record.remove("blame");
    record.remove("retry");
    let mut fields: Vec<(&str, String)> = crate::audit::FIELDS
        .iter()
        .filter(|&&name| name != "hash")
        .filter_map(|&name| record.get(name).map(|value| (name, canonical(value))))
        .collect();
    let hash = record_hash(&fields);
    fields.push(("hash", json_string(&hash)));
    std::fs::write(&old, format!("{}\n", record_line(&fields))).unwrap();
    std::fs::write(super::super::files::head_path(&old), super::super::tests::head_bytes(1, &hash)).unwrap();
    assert_eq!(verify(&old).unwrap().records, 1);
}
