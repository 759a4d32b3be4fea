//! Interpreter sessions: calls with the same `session_id` from the same
//! principal share one live instance; nobody else ever sees its state, and
//! any failure that could leave the instance unusable resets it. The
//! argument's deprecated name, `session`, still works.

use crate::support::{assert_failed, call, host, temp_dir, tool};
use airlock::{CallRequest, Host, ToolResult};
use serde_json::{Value, json};

/// Both interpreters with sessions on; `sessions` is the body of each
/// `[tools.NAME.sessions]` table, `extra` more keys of each tool.
fn config(sessions: &str, extra: &str) -> String {
    format!(
        "[tools.run_python]\ncomponent = {:?}\nside_effect = false\nconcurrency_safe = true\nmemory_mib = 512\n\
         timeout_ms = 2000\n{extra}\n[tools.run_python.sessions]\n{sessions}\n\
         [tools.run_js]\ncomponent = {:?}\nside_effect = false\nconcurrency_safe = true\ntimeout_ms = 2000\n{extra}\n\
         [tools.run_js.sessions]\n{sessions}\n",
        tool("run_python").display().to_string(),
        tool("run_js").display().to_string(),
    )
}

fn field<'a>(result: &'a ToolResult, key: &str) -> &'a Value {
    result.value().and_then(|v| v.get(key)).unwrap_or(&Value::Null)
}

/// The name of the exception the code raised, or "" when it raised none.
fn error_name(result: &ToolResult) -> &str {
    field(result, "error")["name"].as_str().unwrap_or_default()
}

async fn run_as(host: &Host, principal: &str, tool: &str, code: &str, session: Option<&str>) -> ToolResult {
    let mut arguments = json!({ "code": code });
    if let Some(id) = session {
        arguments["session_id"] = json!(id);
    }
    host.call(CallRequest::new(principal, tool, arguments), None).await
}

async fn py(host: &Host, code: &str, session: Option<&str>) -> ToolResult {
    run_as(host, "alice", "run_python", code, session).await
}

async fn js(host: &Host, code: &str, session: Option<&str>) -> ToolResult {
    run_as(host, "alice", "run_js", code, session).await
}

#[tokio::test]
async fn variables_persist_within_a_session() {
    let host = host(&config("", "")).await;
    let first = py(&host, "import math\nx = 41\ndef f(): return x + 1", Some("s1")).await;
    assert!(!first.is_error(), "{}", first.text());
    assert_eq!(first.session.as_deref(), Some("s1"));
    let second = py(&host, "print('again')\nf() + math.floor(0.5)", Some("s1")).await;
    assert_eq!(field(&second, "result"), 42, "{}", second.text());
    assert_eq!(field(&second, "stdout"), "again\n", "each call captures only its own output");

    let first = js(&host, "let x = 41; function f() { return x + 1 }", Some("s1")).await;
    assert!(!first.is_error(), "{}", first.text());
    let second = js(&host, "console.log('again'); f()", Some("s1")).await;
    assert_eq!(field(&second, "result"), 42, "{}", second.text());
    assert_eq!(field(&second, "stdout"), "again\n");
    assert_eq!(host.live_sessions(), 2);
}

#[tokio::test]
async fn state_stays_inside_its_session() {
    let host = host(&config("", "")).await;
    py(&host, "secret = 'alice-only'", Some("s1")).await;
    js(&host, "globalThis.secret = 'alice-only'", Some("s1")).await;

    // No session: a fresh interpreter.
    assert_eq!(error_name(&py(&host, "secret", None).await), "NameError");
    assert_eq!(field(&js(&host, "typeof secret", None).await, "result"), "undefined");
    // run_js declares `session_id` as optional-or-null; null means no session.
    let null_session = call(&host, "run_js", json!({"code": "typeof secret", "session_id": null})).await;
    assert_eq!(field(&null_session, "result"), "undefined", "null means no session: {}", null_session.text());
    // Another session id of the same principal.
    assert_eq!(error_name(&py(&host, "secret", Some("s2")).await), "NameError");
    assert_eq!(field(&js(&host, "typeof secret", Some("s2")).await, "result"), "undefined");
    // The same id from another principal is another session.
    let other = run_as(&host, "mallory", "run_python", "secret", Some("s1")).await;
    assert_eq!(error_name(&other), "NameError", "{}", other.text());
    let other = run_as(&host, "mallory", "run_js", "typeof secret", Some("s1")).await;
    assert_eq!(field(&other, "result"), "undefined", "{}", other.text());
    // The owner still has it.
    assert_eq!(field(&py(&host, "secret", Some("s1")).await, "result"), "alice-only");
    assert_eq!(field(&js(&host, "secret", Some("s1")).await, "result"), "alice-only");
}

#[tokio::test]
async fn invalid_session_ids_say_what_is_accepted() {
    let host = host(&config("", "")).await;
    for id in [json!(""), json!("has space"), json!("x".repeat(65)), json!("../etc"), json!(5)] {
        let result = call(&host, "run_python", json!({"code": "1", "session_id": id})).await;
        let text = &result.text();
        assert!(result.is_error(), "{id} was accepted");
        assert!(
            result.outcome_name() == "invalid_arguments"
                && (text.contains("1 to 64 characters") || text.contains("string")),
            "{id}: {text}"
        );
    }
    assert_eq!(host.live_sessions(), 0, "no session was created");
}

#[tokio::test]
async fn idle_sessions_expire() {
    let host = host(&config("idle_secs = 1", "")).await;
    py(&host, "x = 1", Some("s1")).await;
    js(&host, "globalThis.x = 1", Some("s1")).await;
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert_eq!(error_name(&py(&host, "x", Some("s1")).await), "NameError", "expired: a new session");
    assert_eq!(field(&js(&host, "typeof x", Some("s1")).await, "result"), "undefined");
}

#[tokio::test]
async fn a_new_session_past_max_live_is_refused() {
    let host = host(&config("max_live = 1\nidle_secs = 600", "")).await;
    assert!(!py(&host, "x = 1", Some("s1")).await.is_error());
    let refused = run_as(&host, "bob", "run_python", "1", Some("s2")).await;
    assert_failed(&refused, "denied", "max_live = 1");
    assert!(refused.text().contains("600 s"), "names the idle expiry: {}", refused.text());
    // Calls without a session, and the existing session, still run.
    assert!(!py(&host, "1", None).await.is_error());
    assert_eq!(field(&py(&host, "x", Some("s1")).await, "result"), 1);
}

#[tokio::test]
async fn a_principal_below_its_share_gets_a_session_when_max_live_is_reached() {
    // The issue's numbers: max_live = 8, a quota of 4, two principals
    // holding all 8.
    let text = format!(
        "[tools.run_js]\ncomponent = {:?}\nside_effect = false\nconcurrency_safe = true\ntimeout_ms = 2000\n\
         [tools.run_js.sessions]\nmax_live = 8\nidle_secs = 600\n[quotas]\nsessions_per_tool = 4\n",
        tool("run_js").display().to_string()
    );
    let host = host(&text).await;
    let run = |principal: &'static str, code: &'static str, id: &'static str| {
        run_as(&host, principal, "run_js", code, Some(id))
    };
    for principal in ["alice", "bob"] {
        for id in ["s1", "s2", "s3", "s4"] {
            let made = run(principal, "globalThis.x = 7", id).await;
            assert!(!made.is_error(), "{principal} {id}: {}", made.text());
        }
    }
    assert_eq!(host.live_sessions(), 8);
    // A third principal is below its share (8 / 3 = 2) and gets a session:
    // an idle session of a principal above it is closed, the least
    // recently used of the largest holders (alice's s1).
    let carol = run("carol", "globalThis.x = 1; 1", "s1").await;
    assert!(!carol.is_error(), "{}", carol.text());
    assert_eq!(host.live_sessions(), 8);
    for (principal, id) in [("alice", "s2"), ("alice", "s3"), ("alice", "s4"), ("bob", "s1"), ("bob", "s4")] {
        assert_eq!(field(&run(principal, "x", id).await, "result"), 7, "{principal} {id} kept its state");
    }
    // alice now holds 3, above her share: her closed session is not
    // reopened by closing someone else's, and the refusal names the keys.
    let refused = run("alice", "x", "s1").await;
    assert_failed(&refused, "denied", "[tools.run_js.sessions] max_live = 8");
    for needle in ["sessions_per_tool` (now 4) in [quotas]", "\"alice\" already holds 3", "fair share", "600 s"] {
        assert!(refused.text().contains(needle), "{needle}: {}", refused.text());
    }
    // Once there is room, the closed session's next call says its state is lost.
    assert_failed(&run("bob", "for (;;) {}", "s2").await, "timeout", "was reset");
    let reopened = run("alice", "typeof x", "s1").await;
    assert_eq!(field(&reopened, "result"), "undefined", "{}", reopened.text());
    assert!(reopened.text().contains("\"s1\" had been closed to make room"), "{}", reopened.text());
    // Said once: the session is an ordinary one again.
    let again = run("alice", "1", "s1").await;
    assert!(!again.text().contains("closed"), "{}", again.text());
}

#[tokio::test]
async fn hitting_the_session_memory_cap_resets_the_session() {
    let host_small = host(&config("memory_mib = 48", "")).await;
    py(&host_small, "keep = 1", Some("m")).await;
    let bomb = py(&host_small, "x = []\nwhile True: x.append(' ' * 10**6)", Some("m")).await;
    let text = format!("{} {:?}", bomb.text(), bomb.value());
    assert!(text.contains("MemoryError") || bomb.outcome_name() == "out_of_memory", "{text}");
    assert!(bomb.text().contains("\"m\" was reset"), "{}", bomb.text());
    assert_eq!(error_name(&py(&host_small, "keep", Some("m")).await), "NameError", "the state is gone");

    js(&host_small, "globalThis.keep = 1", Some("m")).await;
    let bomb = js(&host_small, "let a = []; for (;;) a.push(new Array(1e5).fill(1));", Some("m")).await;
    let text = format!("{} {:?}", bomb.text(), bomb.value());
    assert!(text.contains("out of memory") || bomb.outcome_name() == "out_of_memory", "{text}");
    assert!(bomb.text().contains("\"m\" was reset"), "{}", bomb.text());
    assert_eq!(field(&js(&host_small, "typeof keep", Some("m")).await, "result"), "undefined");
}

#[tokio::test]
async fn a_timeout_resets_the_session_and_the_next_call_starts_fresh() {
    let host = host(&config("", "")).await;
    py(&host, "x = 1", Some("t")).await;
    let late = py(&host, "while True: pass", Some("t")).await;
    assert_failed(&late, "timeout", "\"t\" was reset");
    let next = py(&host, "x", Some("t")).await;
    assert_eq!(error_name(&next), "NameError", "{}", next.text());
    assert!(!py(&host, "y = 2", Some("t")).await.is_error());
    assert_eq!(field(&py(&host, "y", Some("t")).await, "result"), 2, "the new session keeps state again");

    js(&host, "globalThis.x = 1", Some("t")).await;
    let late = js(&host, "for (;;) {}", Some("t")).await;
    assert_failed(&late, "timeout", "was reset");
    assert_eq!(field(&js(&host, "typeof x", Some("t")).await, "result"), "undefined");
}

#[tokio::test]
async fn out_of_fuel_resets_the_session() {
    let host = host(&config("", "fuel = 300000000")).await;
    js(&host, "globalThis.x = 1", Some("f")).await;
    assert_failed(&js(&host, "for (;;) {}", Some("f")).await, "out_of_fuel", "compute budget");
    assert_eq!(field(&js(&host, "typeof x", Some("f")).await, "result"), "undefined");
}

#[tokio::test]
async fn calls_in_one_session_run_one_at_a_time() {
    let host = host(&config("", "")).await;
    let code = "globalThis.n = (globalThis.n || 0) + 1; n";
    let (a, b) = tokio::join!(js(&host, code, Some("c")), js(&host, code, Some("c")));
    let mut seen = [field(&a, "result").clone(), field(&b, "result").clone()];
    seen.sort_by_key(|v| v.as_i64());
    assert_eq!(seen, [json!(1), json!(2)], "{} / {}", a.text(), b.text());
}

#[tokio::test]
async fn a_session_argument_without_sessions_is_refused_by_the_tool() {
    let text = format!(
        "[tools.run_python]\ncomponent = {:?}\nside_effect = false\n",
        tool("run_python").display().to_string()
    );
    let host = host(&text).await;
    let result = call(&host, "run_python", json!({"code": "1", "session_id": "s1"})).await;
    assert_failed(&result, "tool_error", "omit `session_id`");
    // The deprecated name reaches the tool as `session_id` all the same.
    let result = call(&host, "run_python", json!({"code": "1", "session": "s1"})).await;
    assert_failed(&result, "tool_error", "omit `session_id`");
    assert!(!call(&host, "run_python", json!({"code": "1"})).await.is_error());
}

#[tokio::test]
async fn the_deprecated_session_argument_still_names_the_session() {
    let host = host(&config("", "")).await;
    for tool in ["run_python", "run_js"] {
        let set = call(
            &host,
            tool,
            json!({"code": if tool == "run_js" { "globalThis.x = 7; 1" } else { "x = 7" }, "session": "old"}),
        )
        .await;
        assert!(!set.is_error(), "{tool}: {}", set.text());
        assert_eq!(set.session.as_deref(), Some("old"), "{tool}");
        // The same session under its current name.
        let read = call(&host, tool, json!({"code": "x", "session_id": "old"})).await;
        assert_eq!(field(&read, "result"), 7, "{tool}: {}", read.text());
        // `null` under the old name is no session, as under the new one.
        let fresh = call(&host, tool, json!({"code": "1", "session": null})).await;
        assert_eq!(fresh.session, None, "{tool}: {}", fresh.text());
    }
    assert_eq!(host.live_sessions(), 2);
}

#[tokio::test]
async fn both_session_names_at_once_are_refused_when_they_name_different_sessions() {
    let host = host(&config("", "")).await;
    let result = call(&host, "run_python", json!({"code": "1", "session_id": "a", "session": "b"})).await;
    assert_failed(&result, "invalid_arguments", "send only `session_id` (`session` is its deprecated name)");
    assert_eq!(host.live_sessions(), 0, "no session was created");
    // The MCP schema lists both names, so a model (or a strict-mode
    // conversion, which fills every member) may send both: a name that says
    // nothing, or the same session twice, is one session.
    for (session_id, session, expected) in [
        (json!("a"), json!("a"), Some("a")),
        (json!("a"), json!(null), Some("a")),
        (json!("a"), json!(""), Some("a")),
        (json!(null), json!("b"), Some("b")),
        (json!(""), json!("b"), Some("b")),
        (json!(null), json!(null), None),
    ] {
        let arguments = json!({"code": "1", "session_id": session_id, "session": session});
        let result = call(&host, "run_python", arguments.clone()).await;
        assert!(!result.is_error(), "{arguments}: {}", result.text());
        assert_eq!(result.session.as_deref(), expected, "{arguments}");
    }
}

#[tokio::test]
async fn a_reload_keeps_the_sessions_of_unchanged_tools_and_continues_the_audit() {
    let dir = temp_dir();
    let audit = dir.path().join("audit.jsonl");
    let text = format!("{}\n[audit]\nfile = {:?}\n", config("", ""), audit.display().to_string());
    let host = host(&text).await;
    py(&host, "x = 1", Some("r")).await;
    js(&host, "globalThis.x = 1", Some("r")).await;
    assert_eq!(host.live_sessions(), 2);
    // Nothing changed: both sessions live on.
    host.reload(None).await.expect("reload");
    assert_eq!(host.live_sessions(), 2);
    assert_eq!(field(&py(&host, "x", Some("r")).await, "result"), 1);
    // run_python's settings change (its deadline), run_js's do not: only
    // the run_python session is dropped.
    let changed = text.replacen("timeout_ms = 2000", "timeout_ms = 3000", 1);
    host.reload(Some(crate::support::config(&changed))).await.expect("reload");
    assert_eq!(host.live_sessions(), 1);
    assert_eq!(error_name(&py(&host, "x", Some("r")).await), "NameError");
    assert_eq!(field(&js(&host, "x", Some("r")).await, "result"), 1);
    // One hash chain over both reloads: the same log was continued.
    let report = airlock::audit_verify(&audit).expect("the chain verifies");
    assert_eq!(report.records, 5);
    let log = std::fs::read_to_string(&audit).expect("audit log");
    assert!(log.lines().all(|line| line.contains(r#","session":"r","#)), "{log}");
}

/// Latency of a trivial call through [`Host::call`]: a fresh instance per
/// call against the reused instance of a session. A measurement, not a
/// test: `cargo test --release -p airlock --test integration measure_ --
/// --ignored --nocapture` prints p50/p99.
#[tokio::test]
#[ignore = "a measurement: prints p50/p99, asserts nothing about time"]
async fn measure_fresh_and_session_latency() {
    const CALLS: usize = 200;
    let host = host(&config("", "")).await;
    for (tool, code) in [("run_python", "print(1+1)"), ("run_js", "1+1")] {
        for session in [None, Some("bench")] {
            let mut micros = Vec::with_capacity(CALLS);
            for i in 0..CALLS + 10 {
                let started = std::time::Instant::now();
                let result = run_as(&host, "bench", tool, code, session).await;
                let elapsed = started.elapsed();
                assert!(!result.is_error(), "{}", result.text());
                // The first calls warm caches (and create the session).
                if i >= 10 {
                    micros.push(elapsed.as_micros());
                }
            }
            micros.sort_unstable();
            let at = |q: f64| micros[((micros.len() as f64 * q) as usize).min(micros.len() - 1)] as f64 / 1e3;
            let mode = if session.is_some() { "session" } else { "fresh" };
            println!("{tool:<10} {code:<11} {mode:<7} p50 {:>7.3} ms  p99 {:>7.3} ms", at(0.50), at(0.99));
        }
    }
}
