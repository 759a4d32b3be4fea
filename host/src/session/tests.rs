//! Unit tests of session ids and reset notes.

use super::settings::DEFAULT_IDLE;
use super::*;
use serde_json::json;

fn check_id(raw: Value, ok: bool) {
    let parsed = SessionId::parse(&raw);
    assert_eq!(parsed.is_ok(), ok, "{raw}: {parsed:?}");
    if let Err(failure) = parsed {
        assert_eq!(failure.kind, ErrorKind::InvalidArguments);
        assert!(failure.message.contains("1 to 64 characters from A-Z"), "{}", failure.message);
    }
}

#[test]
fn session_ids_are_short_and_plain() {
    check_id(json!("s1"), true);
    check_id(json!("analysis-2.v_3"), true);
    check_id(json!("x".repeat(MAX_SESSION_ID_LEN)), true);
    check_id(json!(""), false);
    check_id(json!("x".repeat(MAX_SESSION_ID_LEN + 1)), false);
    check_id(json!("a b"), false);
    check_id(json!("../x"), false);
    check_id(json!("é"), false);
    check_id(json!(7), false);
    check_id(json!(null), false);
}

#[test]
fn reset_notes_say_the_state_is_lost() {
    let settings = SessionSettings { max_live: 1, idle: DEFAULT_IDLE, memory_bytes: 64 << 20 };
    let id = SessionId("s1".to_owned());
    let note = reset_note(&id, Spent::MemoryCap, settings);
    assert!(note.contains("\"s1\" was reset") && note.contains("64 MiB") && note.contains("lost"), "{note}");
    let note = reset_note(&id, Spent::Failed(ErrorKind::Timeout), settings);
    assert!(note.contains("deadline") && note.contains("fresh interpreter"), "{note}");
}

#[test]
fn an_empty_table_sweeps_nothing() {
    let sessions = Sessions::new();
    assert_eq!(sessions.sweep(), 0);
    assert_eq!(sessions.len(), 0);
}
