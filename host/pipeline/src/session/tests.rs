//! Unit tests of session ids and reset notes.

use super::*;
use airlock_runtime::tool_settings::DEFAULT_IDLE;
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
    let budget = airlock_runtime::memory_budget::MemoryBudget::with_total(
        1 << 30,
        50,
        airlock_runtime::memory_budget::Source::Configured,
    );
    let sessions = Sessions::new(budget);
    assert_eq!(sessions.sweep(), 0);
    assert_eq!(sessions.len(), 0);
}

fn key(principal: &str, id: &str) -> Key {
    Key { principal: principal.to_owned(), tool: "run_python".to_owned(), id: SessionId(id.to_owned()) }
}

#[test]
fn the_refusal_names_the_keys() {
    let settings = SessionSettings { max_live: 8, idle: DEFAULT_IDLE, memory_bytes: 64 << 20 };
    let refusal = full(&key("carol", "c1"), settings, 4, 8, 0, 2);
    assert_eq!(refusal.kind, ErrorKind::Denied);
    for needle in
        ["[tools.run_python.sessions] max_live = 8", "sessions_per_tool` (now 4) in [quotas]", "is in a call", "300 s"]
    {
        assert!(refusal.message.contains(needle), "{needle}: {}", refusal.message);
    }
    let refusal = full(&key("carol", "c1"), settings, 4, 8, 2, 2);
    assert!(refusal.message.contains("\"carol\" already holds 2 of them, its fair share"), "{}", refusal.message);
}
