//! Unit tests of what a record holds: redacted arguments and their digest,
//! escaping, the caps on strings and arguments, and numbers.

use super::super::tests::{entry, lines, log_with, settings};
use super::*;
use airlock_core::outcome::{CallOutcome, ErrorKind, Failure};
use airlock_core::render::{ELLIPSIS, cap};
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
