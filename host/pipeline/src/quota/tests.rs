//! Unit tests of `[quotas]` parsing and of the tracker, on a fake clock.

use super::*;

fn parse(text: &str) -> Result<Quotas, String> {
    let raw: RawQuotas = toml::from_str(text).map_err(|err| err.to_string())?;
    Quotas::from_raw(raw)
}

/// `text` parses, and `principal` gets `expect`.
#[track_caller]
fn check(text: &str, principal: &str, expect: Quota) {
    match parse(text) {
        Ok(quotas) => assert_eq!(quotas.for_principal(principal), expect, "{text}"),
        Err(err) => panic!("{text}: {err}"),
    }
}

/// `text` is refused with an error containing every needle.
#[track_caller]
fn check_err(text: &str, needles: &[&str]) {
    let err = parse(text).err().unwrap_or_else(|| panic!("accepted: {text}"));
    for needle in needles {
        assert!(err.contains(needle), "{err:?} should contain {needle:?}");
    }
}

#[test]
fn generated_docs_are_current() {
    QUOTAS.ensure_documents("book/src/operator/quotas.md").unwrap();
}

#[test]
fn defaults_and_overrides() {
    let defaults = Quota::default();
    check("", "anyone", defaults);
    check("calls_in_flight = 8", "anyone", Quota { calls_in_flight: 8, ..defaults });
    let text = "calls_in_flight = 8\ncalls_per_minute = 60\n[principals.alice]\ncalls_in_flight = 32\n\
                [principals.\"bob@example.com\"]\nhttp_sessions = 2\nsessions_per_tool = 1\ncalls_per_minute = 0\n";
    check(text, "carol", Quota { calls_in_flight: 8, calls_per_minute: 60, ..defaults });
    check(text, "alice", Quota { calls_in_flight: 32, calls_per_minute: 60, ..defaults });
    let bob = Quota { calls_in_flight: 8, http_sessions: 2, sessions_per_tool: 1, calls_per_minute: 0 };
    check(text, "bob@example.com", bob);
}

#[test]
fn errors_name_the_section_key_and_range() {
    check_err("calls_in_flight = 0", &["[quotas]", "calls_in_flight = 0", "accepted 1..=10000"]);
    check_err("http_sessions = 70000", &["[quotas]", "http_sessions", "accepted 1..=65536"]);
    check_err("sessions_per_tool = 0", &["sessions_per_tool", "accepted 1..=1000"]);
    check_err(
        "calls_per_minute = 1000000",
        &["[quotas] calls_per_minute = 1000000", "accepted 0..=100000", "0 turns it off"],
    );
    check_err("[principals.alice]\ncalls_in_flight = 0", &["[quotas.principals.alice]", "calls_in_flight"]);
    check_err("[principals.\"a b\"]\nsessions_per_tool = 0", &["[quotas.principals.\"a b\"]"]);
    check_err(&format!("[principals.{}]", "x".repeat(300)), &["300 bytes", "accepted 1..=256"]);
    check_err("[principals.\"\"]", &["0 bytes"]);
    check_err("calls = 1", &["unknown field", "calls"]);
    check_err("[principals.alice]\nrate = 1", &["unknown field", "rate"]);
}

fn quota(calls_in_flight: usize, calls_per_minute: u32) -> Quota {
    Quota { calls_in_flight, calls_per_minute, ..Quota::default() }
}

#[test]
fn calls_in_flight_are_per_principal() {
    let tracker = QuotaTracker::new();
    let now = Instant::now();
    let a1 = tracker.admit_at("a", quota(2, 0), now).expect("first");
    let _a2 = tracker.admit_at("a", quota(2, 0), now).expect("second");
    let refused = tracker.admit_at("a", quota(2, 0), now).expect_err("third");
    assert_eq!(refused.kind, ErrorKind::QuotaExceeded);
    for needle in ["\"a\" already has 2 calls in flight", "calls_in_flight = 2", "[quotas]", "[quotas.principals.a]"] {
        assert!(refused.message.contains(needle), "{} should contain {needle:?}", refused.message);
    }
    let _b = tracker.admit_at("b", quota(2, 0), now).expect("another principal is not affected");
    assert_eq!((tracker.in_flight("a"), tracker.in_flight("b")), (2, 1));
    drop(a1);
    let _a3 = tracker.admit_at("a", quota(2, 0), now).expect("a finished call frees a slot");
}

#[test]
fn finished_calls_leave_nothing_behind() {
    let tracker = QuotaTracker::new();
    let now = Instant::now();
    drop(tracker.admit_at("a", quota(4, 0), now));
    drop(tracker.admit_at("b", quota(4, 0), now));
    assert_eq!(tracker.tracked(), 0);
}

#[test]
fn calls_per_minute_is_a_bucket_that_refills() {
    let tracker = QuotaTracker::new();
    let t0 = Instant::now();
    // Three at once empty a bucket of three; the fourth is refused.
    for i in 0..3 {
        drop(tracker.admit_at("a", quota(64, 3), t0).unwrap_or_else(|f| panic!("call {i}: {f}")));
    }
    let refused = tracker.admit_at("a", quota(64, 3), t0).expect_err("fourth");
    assert_eq!(refused.kind, ErrorKind::QuotaExceeded);
    assert!(
        refused.message.contains("calls_per_minute = 3") && refused.message.contains("room for another call in 20 s"),
        "{refused}"
    );
    // Another principal has its own bucket.
    drop(tracker.admit_at("b", quota(64, 3), t0).expect("b"));
    // A third of a minute later, one call's worth is back, and only that.
    let t1 = t0 + Duration::from_secs(20);
    drop(tracker.admit_at("a", quota(64, 3), t1).expect("refilled"));
    tracker.admit_at("a", quota(64, 3), t1).expect_err("only one");
    // A full minute after the last call, the bucket is full and forgotten.
    let t2 = t1 + MINUTE;
    tracker.release("a", t2);
    tracker.release("b", t2);
    assert_eq!(tracker.tracked(), 0);
}

#[test]
fn a_refused_call_costs_nothing() {
    let tracker = QuotaTracker::new();
    let now = Instant::now();
    let held = tracker.admit_at("a", quota(1, 2), now).expect("first");
    tracker.admit_at("a", quota(1, 2), now).expect_err("over calls_in_flight");
    drop(held);
    // The refused call took nothing from the bucket: one call is left.
    drop(tracker.admit_at("a", quota(1, 2), now).expect("second of two"));
    tracker.admit_at("a", quota(1, 2), now).expect_err("bucket empty");
}

#[test]
fn the_table_is_bounded() {
    let tracker = QuotaTracker::new();
    let now = Instant::now();
    // Principals with nothing in flight and full buckets are not kept.
    for i in 0..MAX_TRACKED_PRINCIPALS * 2 {
        drop(tracker.admit_at(&format!("p{i}"), quota(1, 0), now).expect("admitted"));
    }
    assert_eq!(tracker.tracked(), 0);
    // Refilling buckets are kept, up to the bound, and forgotten past it.
    for i in 0..MAX_TRACKED_PRINCIPALS + 10 {
        drop(tracker.admit_at(&format!("r{i}"), quota(1, 1), now).expect("admitted"));
        assert!(tracker.tracked() <= MAX_TRACKED_PRINCIPALS);
    }
    // Calls in flight are never forgotten: past the bound, new principals
    // are refused until some finish.
    let held: Vec<_> = (0..MAX_TRACKED_PRINCIPALS)
        .map(|i| tracker.admit_at(&format!("h{i}"), quota(1, 0), now).expect("admitted"))
        .collect();
    let refused = tracker.admit_at("late", quota(1, 0), now).expect_err("table full of calls in flight");
    assert!(refused.message.contains("4096 principals"), "{refused}");
    drop(held);
    drop(tracker.admit_at("late", quota(1, 0), now).expect("room again"));
}

#[test]
fn sections_are_quoted_for_toml() {
    assert_eq!(principal_section("alice"), "[quotas.principals.alice]");
    assert_eq!(principal_section("a.b"), "[quotas.principals.\"a.b\"]");
    assert_eq!(principal_section("say \"hi\""), "[quotas.principals.\"say \\\"hi\\\"\"]");
}

#[test]
fn config_errors_name_the_quota_and_the_range() {
    use crate::config::testing::check_err;
    check_err("[quotas]\ncalls_in_flight = 0", &["airlock.toml", "[quotas] calls_in_flight = 0", "accepted 1..="]);
    check_err("[quotas.principals.alice]\nhttp_sessions = 0", &["[quotas.principals.alice] http_sessions"]);
    check_err("[quotas]\nburst = 1", &["burst"]);
}
