//! Reloading a host: a whole new state (tools, policy, audit log, quotas)
//! is put in force in one swap, a failed or refused reload changes nothing,
//! and a call keeps the state it was received under until its result.

use crate::support::{assert_failed, call, config, fixture, host, temp_dir, tool};
use airlock::{CallRequest, CancellationToken, HostError};
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};

const DENY_ECHO: &str = "@id(\"no-echo\")\n@reason(\"echo is switched off\")\nforbid (principal, action == \
                         Airlock::Action::\"call\", resource == Airlock::Tool::\"echo\");\n";
const ALLOW_ALL: &str = "permit (principal, action, resource);\n";

/// `echo` and `hostile` (safe side by side), with `extra` appended.
fn text(extra: &str) -> String {
    format!(
        "[tools.echo]\ncomponent = {:?}\nside_effect = false\nconcurrency_safe = true\n\
         [tools.hostile]\ncomponent = {:?}\nside_effect = false\nconcurrency_safe = true\ntimeout_ms = 600000\n{extra}\n",
        tool("echo").display().to_string(),
        fixture("hostile").display().to_string(),
    )
}

fn policy(path: &Path) -> String {
    format!("[policy]\npolicies = {:?}\n", path.display().to_string())
}

fn audit(path: &Path) -> String {
    format!("[audit]\nfile = {:?}\n", path.display().to_string())
}

#[tokio::test]
async fn a_reload_puts_the_new_policy_and_quotas_in_force_together() {
    let dir = temp_dir();
    let cedar = dir.path().join("policy.cedar");
    std::fs::write(&cedar, ALLOW_ALL).expect("write");
    let host = host(&text(&policy(&cedar))).await;
    assert!(!call(&host, "echo", json!({"text": "hi"})).await.is_error());
    let before = host.state();
    std::fs::write(&cedar, DENY_ECHO).expect("write");
    host.reload(Some(config(&text(&format!("{}[quotas]\ncalls_in_flight = 3\n", policy(&cedar))))))
        .await
        .expect("reload");
    assert_failed(&call(&host, "echo", json!({"text": "hi"})).await, "denied", "echo is switched off");
    assert_eq!(host.quotas().for_principal("anyone").calls_in_flight, 3);
    assert_eq!(host.config().quotas.for_principal("anyone").calls_in_flight, 3);
    // A state taken before is the old one, whole.
    assert_eq!(before.quotas().for_principal("anyone").calls_in_flight, 64);
}

#[tokio::test]
async fn a_failed_reload_changes_nothing() {
    let dir = temp_dir();
    let cedar = dir.path().join("policy.cedar");
    std::fs::write(&cedar, DENY_ECHO).expect("write");
    let host = host(&text(&policy(&cedar))).await;
    std::fs::write(&cedar, "permit (principal, action, resource").expect("write");
    let err = host
        .reload(Some(config(&text(&format!("{}[quotas]\ncalls_in_flight = 3\n", policy(&cedar))))))
        .await
        .expect_err("a broken policy fails the reload");
    assert!(matches!(err, HostError::Policy(_)), "{err}");
    assert!(err.to_string().contains("policy.cedar"), "{err}");
    assert_failed(&call(&host, "echo", json!({"text": "hi"})).await, "denied", "echo is switched off");
    assert_eq!(host.config().quotas.for_principal("anyone").calls_in_flight, 64, "config() reports what is in force");

    // An audit log that cannot be opened fails it too (the policy fixed).
    std::fs::write(&cedar, DENY_ECHO).expect("write");
    let blocked = dir.path().join("not-a-dir");
    std::fs::write(&blocked, "").expect("write");
    let err = host
        .reload(Some(config(&text(&format!("{}{}", policy(&cedar), audit(&blocked.join("audit.jsonl")))))))
        .await
        .expect_err("an audit log in a file cannot be opened");
    assert!(matches!(err, HostError::Audit(_)), "{err}");
    assert!(host.config().audit.is_none());
}

#[tokio::test]
async fn an_engine_change_is_refused_naming_the_key() {
    let host = host(&text("[engine]\nmax_live_instances = 100\ncache_dir = \"{cache}\"\n")).await;
    let err = host
        .reload(Some(config(&text(
            "[engine]\nmax_live_instances = 50\ncache_dir = \"{cache}\"\n[quotas]\ncalls_in_flight = 3\n",
        ))))
        .await
        .expect_err("refused");
    assert!(matches!(err, HostError::NeedsRestart(_)), "{err}");
    assert_eq!(err.to_string(), "engine.max_live_instances changed from 100 to 50; restart airlock serve to apply it");
    assert_eq!(host.config().engine.max_live_instances, 100);
    assert_eq!(host.config().quotas.for_principal("anyone").calls_in_flight, 64, "nothing else changed either");
}

#[tokio::test]
async fn a_call_finishes_under_the_state_it_was_received_under() {
    let dir = temp_dir();
    let (first, second) = (dir.path().join("first.jsonl"), dir.path().join("second.jsonl"));
    let host = host(&text(&audit(&first))).await;
    let cancel = CancellationToken::new();
    let sleeper = {
        let (host, cancel) = (host.clone(), cancel.clone());
        let request = CallRequest::new("p", "hostile", json!({"attack": "sleep", "ms": 600_000}));
        tokio::spawn(async move { host.call_cancellable(request, None, &cancel).await })
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while host.calls_in_flight("p") != 1 {
        assert!(Instant::now() < deadline, "the call never started");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let cedar = dir.path().join("policy.cedar");
    std::fs::write(&cedar, "forbid (principal, action, resource);\n").expect("write");
    host.reload(Some(config(&text(&format!("{}{}", audit(&second), policy(&cedar)))))).await.expect("reload");
    assert_failed(&call(&host, "echo", json!({"text": "hi"})).await, "denied", "");
    cancel.cancel();
    let result = sleeper.await.expect("the call ends");
    assert_eq!(result.outcome_name(), "cancelled", "{}", result.text());
    // Its record is in the log of the state it was received under.
    let old = std::fs::read_to_string(&first).expect("first log");
    let new = std::fs::read_to_string(&second).expect("second log");
    assert!(old.contains("\"tool\":\"hostile\"") && !new.contains("\"tool\":\"hostile\""), "{old}\n---\n{new}");
    assert!(new.contains("\"tool\":\"echo\""), "{new}");
}

#[tokio::test]
async fn a_reload_that_would_leave_a_public_server_without_tokens_is_refused() {
    let token = |value: &str, principal: &str| {
        format!("[http]\ntokens = [{{ token = {value:?}, principal = {principal:?} }}]\n")
    };
    let host = host(&text(&token("reload-token-0123456789-alice", "alice"))).await;
    let addr: std::net::SocketAddr = "192.0.2.1:8080".parse().expect("address");
    host.require_http_tokens(addr).expect("the state in force has a token");
    let err = host.reload(Some(config(&text("")))).await.expect_err("refused");
    assert!(matches!(err, HostError::Refused(_)), "{err}");
    for needle in ["[http] tokens", "192.0.2.1:8080", "not a loopback address"] {
        assert!(err.to_string().contains(needle), "{err} should contain {needle:?}");
    }
    assert_eq!(host.config().http.tokens.len(), 1, "the old tokens stay in force");
    // Replacing the token is fine.
    host.reload(Some(config(&text(&token("reload-token-0123456789-bob", "bob"))))).await.expect("reload");
    let principals: Vec<_> = host.config().http.tokens.iter().map(|t| t.principal.clone()).collect();
    assert_eq!(principals, ["bob"]);
}
