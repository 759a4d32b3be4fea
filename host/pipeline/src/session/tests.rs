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
fn the_fair_share_divides_max_live_between_principals() {
    assert_eq!(fair_share(8, 2), 4);
    assert_eq!(fair_share(8, 3), 2);
    assert_eq!(fair_share(1, 2), 1, "at least one");
    assert_eq!(fair_share(8, 0), 8);
}

#[test]
fn a_principal_below_its_share_takes_an_idle_session_of_the_largest_holder() {
    let start = Instant::now();
    let keys: Vec<Key> = ["a1", "a2", "a3", "a4", "a5", "b1", "b2", "b3"]
        .iter()
        .map(|id| key(if id.starts_with('a') { "alice" } else { "bob" }, id))
        .collect();
    // alice holds 5, bob 3; every session idle, a1 the least recently used
    // of alice's but a2 older than it is busy.
    let at = |i: usize| start + Duration::from_millis(u64::try_from(i).unwrap() * 10);
    let holdings: Vec<Holding<'_>> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| Holding { key: k, idle: k.id.as_str() != "a1", last_used: at(i) })
        .collect();
    let carol = key("carol", "c1");
    // Three principals with carol: a share of 8 / 3 = 2; alice (5) holds
    // the most above it; a1 is in a call, so a2 (the next oldest) closes.
    assert_eq!(fair_share_victim(&holdings, &carol, 8, 0), Ok(key("alice", "a2")));
    // bob, holding 3 of a share of 4 (two principals), takes from alice.
    assert_eq!(fair_share_victim(&holdings, &key("bob", "b4"), 8, 3), Ok(key("alice", "a2")));
    // alice asks: she holds more than her share, so nothing is closed.
    assert_eq!(fair_share_victim(&holdings, &key("alice", "a6"), 8, 5), Err(4));
    // Every session above the share in a call: refused, naming the share.
    let busy: Vec<Holding<'_>> = keys.iter().map(|k| Holding { key: k, idle: false, last_used: start }).collect();
    assert_eq!(fair_share_victim(&busy, &carol, 8, 0), Err(2));
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
