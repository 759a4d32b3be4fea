//! Per-principal quotas: a principal at one of its quotas is refused as
//! `quota_exceeded`, naming the quota and the keys that raise it, while
//! other principals are served. Every check counts (calls, sessions); none
//! depends on how fast the machine is.

use crate::support::{assert_failed, cache_dir, fixture, host, temp_dir, tool};
use airlock::{CallRequest, CancellationToken, Host, ToolResult};
use serde_json::{Value, json};
use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `hostile` and `echo`, both safe to run side by side, with `quotas` and
/// `extra` appended.
fn config(quotas: &str, extra: &str) -> String {
    format!(
        "[tools.hostile]\ncomponent = {:?}\nside_effect = false\nconcurrency_safe = true\ntimeout_ms = 600000\n\
         [tools.echo]\ncomponent = {:?}\nside_effect = false\nconcurrency_safe = true\n{extra}\n[quotas]\n{quotas}\n",
        fixture("hostile").display().to_string(),
        tool("echo").display().to_string(),
    )
}

fn echo(principal: &str) -> CallRequest {
    CallRequest::new(principal, "echo", json!({"text": principal}))
}

fn sleep(principal: &str) -> CallRequest {
    CallRequest::new(principal, "hostile", json!({"attack": "sleep", "ms": 600_000}))
}

#[track_caller]
fn assert_ok(result: &ToolResult) {
    assert!(!result.is_error(), "{}: {}", result.outcome_name(), result.text());
}

/// Wait (up to a generous liveness bound) until `principal` has `n` calls
/// in flight.
async fn until_in_flight(host: &Host, principal: &str, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while host.calls_in_flight(principal) != n {
        assert!(Instant::now() < deadline, "{principal} never had {n} calls in flight");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn a_principal_at_its_calls_in_flight_is_refused_and_others_are_served() {
    let dir = temp_dir();
    let audit = dir.path().join("audit.jsonl");
    let host = host(&config(
        "[quotas.principals.a]\ncalls_in_flight = 2\n",
        &format!("[audit]\nfile = {:?}\n", audit.display().to_string()),
    ))
    .await;
    let cancel = CancellationToken::new();
    let sleepers: Vec<_> = (0..2)
        .map(|_| {
            let (host, cancel) = (host.clone(), cancel.clone());
            tokio::spawn(async move { host.call_cancellable(sleep("a"), None, &cancel).await })
        })
        .collect();
    until_in_flight(&host, "a", 2).await;

    let refused = host.call(echo("a"), None).await;
    assert_failed(&refused, "quota_exceeded", "calls_in_flight = 2");
    for needle in ["\"a\" already has 2 calls in flight", "[quotas]", "[quotas.principals.a]"] {
        assert!(refused.text().contains(needle), "{} should contain {needle:?}", refused.text());
    }
    assert_eq!(refused.decision().as_str(), "not_reached");
    assert_ok(&host.call(echo("b"), None).await);
    assert_eq!(host.calls_in_flight("a"), 2, "the refused call was not counted");

    cancel.cancel();
    for sleeper in sleepers {
        let result = sleeper.await.expect("the call task");
        assert_eq!(result.outcome_name(), "cancelled", "{}", result.text());
    }
    assert_eq!(host.calls_in_flight("a"), 0);
    assert_ok(&host.call(echo("a"), None).await);

    let records: Vec<Value> = std::fs::read_to_string(&audit)
        .expect("audit log")
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON record"))
        .collect();
    let refusals: Vec<&Value> = records.iter().filter(|r| r["outcome"] == "quota_exceeded").collect();
    assert_eq!(refusals.len(), 1, "{records:?}");
    assert_eq!(refusals[0]["principal"], "a");
    assert_eq!(refusals[0]["decision"], "not_reached");
}

#[tokio::test]
async fn a_batch_past_the_quota_has_its_last_calls_refused() {
    let host = host(&config("calls_in_flight = 2\n", "")).await;
    // Admission is in the proposed order and every call of a batch is in
    // flight until the batch's results are ready.
    let batch = vec![echo("a"), echo("a"), echo("a"), echo("b")];
    let results = host.dispatch(batch, None, &CancellationToken::new()).await;
    let outcomes: Vec<&str> = results.iter().map(ToolResult::outcome_name).collect();
    assert_eq!(outcomes, ["ok", "ok", "quota_exceeded", "ok"], "{:?}", results[2].text());
    assert!(results[2].text().contains("calls_in_flight = 2"), "{}", results[2].text());
    assert_eq!(host.calls_in_flight("a"), 0);
}

#[tokio::test]
async fn calls_per_minute_refuses_past_the_bucket() {
    // The bucket refills one call every 30 s: the three calls below would
    // need more than 30 s between the first and the third to see a refill.
    let host = host(&config("calls_per_minute = 2\n[quotas.principals.c]\ncalls_per_minute = 0\n", "")).await;
    assert_ok(&host.call(echo("a"), None).await);
    assert_ok(&host.call(echo("a"), None).await);
    let refused = host.call(echo("a"), None).await;
    assert_failed(&refused, "quota_exceeded", "calls_per_minute = 2");
    assert!(
        refused.text().contains("room for another call in") && refused.text().contains("[quotas]"),
        "{}",
        refused.text()
    );
    assert!(refused.text().ends_with("The same call may succeed later."), "{}", refused.text());
    assert_ok(&host.call(echo("b"), None).await);
    for _ in 0..5 {
        assert_ok(&host.call(echo("c"), None).await);
    }
}

#[tokio::test]
async fn sessions_per_tool_is_per_principal() {
    let text = format!(
        "[tools.run_js]\ncomponent = {:?}\nside_effect = false\nconcurrency_safe = true\n\
         [tools.run_js.sessions]\nmax_live = 8\n[quotas]\nsessions_per_tool = 2\n",
        tool("run_js").display().to_string()
    );
    let host = host(&text).await;
    let js = |principal: &str, code: &str, session: Option<&str>| {
        let mut arguments = json!({ "code": code });
        if let Some(id) = session {
            arguments["session_id"] = json!(id);
        }
        host.call(CallRequest::new(principal, "run_js", arguments), None)
    };
    assert_ok(&js("a", "globalThis.x = 1", Some("s1")).await);
    assert_ok(&js("a", "globalThis.x = 2", Some("s2")).await);
    let refused = js("a", "1", Some("s3")).await;
    assert_failed(&refused, "quota_exceeded", "sessions_per_tool = 2");
    for needle in ["\"a\" already holds 2 live sessions of run_js", "[quotas]", "[quotas.principals.a]"] {
        assert!(refused.text().contains(needle), "{} should contain {needle:?}", refused.text());
    }
    assert_eq!(host.live_sessions(), 2, "the refused session was not created");
    // The principal's own sessions and fresh calls still run; another
    // principal can open sessions.
    let kept = js("a", "x", Some("s1")).await;
    assert_eq!(kept.value().map(|v| &v["result"]), Some(&json!(1)), "{}", kept.text());
    assert_ok(&js("a", "1", None).await);
    assert_ok(&js("b", "globalThis.y = 1", Some("s1")).await);
    assert_eq!(host.live_sessions(), 3);
}

#[test]
fn quota_errors_in_the_config_name_the_key() {
    let err = airlock::Config::parse("[quotas]\nsessions_per_tool = 0\n", "airlock.toml", std::path::Path::new("."))
        .expect_err("refused");
    let text = err.to_string();
    assert!(text.contains("airlock.toml") && text.contains("[quotas] sessions_per_tool = 0"), "{text}");
}

/// `airlock serve --http`, killed when dropped.
struct Server {
    child: Child,
    addr: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn binary() -> PathBuf {
    std::env::var_os("AIRLOCK_BIN").map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_airlock")), PathBuf::from)
}

fn serve_http(config: &std::path::Path, log: &std::path::Path) -> Server {
    let stderr = std::fs::File::create(log).expect("log file");
    let child = Command::new(binary())
        .args(["--config", &config.display().to_string(), "serve", "--http", "127.0.0.1:0"])
        .env_remove("AIRLOCK_CONFIG")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .expect("airlock starts");
    let mut server = Server { child, addr: String::new() };
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if let Some(rest) = text.split("on http://").nth(1) {
            server.addr = rest.split('/').next().unwrap_or_default().to_owned();
            return server;
        }
        assert!(Instant::now() < deadline, "airlock serve --http did not start: {text}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// POST an `initialize` with `token`; the status and the response as text.
fn initialize(addr: &str, token: &str) -> (u16, String) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params":
        {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "quota-test", "version": "0"}}})
    .to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(60))).expect("timeout");
    stream.write_all(request.as_bytes()).expect("send");
    let mut response = Vec::new();
    stream.read_to_end(&mut response).expect("read the response");
    let text = String::from_utf8_lossy(&response).into_owned();
    let status = text.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, text)
}

#[test]
fn an_http_principal_at_its_session_quota_gets_429_and_others_do_not() {
    const TOKEN_A: &str = "quota-test-token-a-0123456789";
    const TOKEN_B: &str = "quota-test-token-b-0123456789";
    let dir = temp_dir();
    let config = dir.path().join("airlock.toml");
    let text = format!(
        "[engine]\ncache_dir = {:?}\n[tools.echo]\ncomponent = {:?}\nside_effect = false\n\
         [http]\ntokens = [{{ token = \"{TOKEN_A}\", principal = \"a\" }}, \
         {{ token = \"{TOKEN_B}\", principal = \"b\" }}]\n\
         [quotas.principals.a]\nhttp_sessions = 2\n",
        cache_dir().display().to_string(),
        tool("echo").display().to_string(),
    );
    std::fs::write(&config, text).expect("config");
    let server = serve_http(&config, &dir.path().join("serve.log"));

    for i in 0..2 {
        let (status, text) = initialize(&server.addr, TOKEN_A);
        assert_eq!(status, 200, "session {i} of a: {text}");
        assert!(text.to_ascii_lowercase().contains("mcp-session-id:"), "{text}");
    }
    let (status, text) = initialize(&server.addr, TOKEN_A);
    assert_eq!(status, 429, "{text}");
    for needle in ["\"a\" already has 2 open MCP sessions", "http_sessions = 2", "[quotas.principals.a]"] {
        assert!(text.contains(needle), "{text:?} should contain {needle:?}");
    }
    let (status, text) = initialize(&server.addr, TOKEN_B);
    assert_eq!(status, 200, "b is not affected: {text}");
}
