//! Containment: hostile guests are stopped with the right error kind, and
//! the host serves the next call. Every grant has a negative test.

use crate::support::{assert_failed, call, fixture, host, temp_dir};
use airlock::{CallRequest, CancellationToken};
use serde_json::json;
use std::time::{Duration, Instant};

fn hostile_config(extra: &str) -> String {
    format!("[tools.hostile]\ncomponent = {:?}\nside_effect = false\n{extra}", fixture("hostile").display().to_string())
}

async fn still_serves(host: &airlock::Host) {
    let ok = call(host, "hostile", json!({"attack": "ok"})).await;
    assert!(!ok.is_error(), "the host must serve the next call: {}", ok.text());
    assert_eq!(ok.value(), Some(&json!({"value": 1})));
}

#[tokio::test]
async fn runaway_loop_stops_at_the_deadline() {
    let host = host(&hostile_config("timeout_ms = 200")).await;
    let started = Instant::now();
    let result = call(&host, "hostile", json!({"attack": "loop"})).await;
    assert_failed(&result, "timeout", "200 ms deadline");
    assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
    still_serves(&host).await;
}

#[tokio::test]
async fn guest_blocked_in_a_host_sleep_stops_at_the_deadline() {
    let host = host(&hostile_config("timeout_ms = 200")).await;
    let started = Instant::now();
    let result = call(&host, "hostile", json!({"attack": "sleep"})).await;
    assert_failed(&result, "timeout", "deadline");
    assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
    still_serves(&host).await;
}

#[tokio::test]
async fn fuel_budget_stops_a_long_computation() {
    let host = host(&hostile_config("fuel = 5000000")).await;
    let result = call(&host, "hostile", json!({"attack": "burn_fuel"})).await;
    assert_failed(&result, "out_of_fuel", "compute budget");
    assert!(result.fuel_used.is_some_and(|f| f >= 4_000_000), "{:?}", result.fuel_used);
    still_serves(&host).await;
}

#[tokio::test]
async fn memory_bomb_hits_the_memory_cap() {
    let host = host(&hostile_config("memory_mib = 16")).await;
    let result = call(&host, "hostile", json!({"attack": "memory_bomb"})).await;
    assert_failed(&result, "out_of_memory", "16 MiB");
    still_serves(&host).await;
}

#[tokio::test]
async fn deep_recursion_is_a_trap_not_a_crash() {
    let host = host(&hostile_config("")).await;
    let result = call(&host, "hostile", json!({"attack": "recurse"})).await;
    assert_failed(&result, "trapped", "stack");
    still_serves(&host).await;
}

#[tokio::test]
async fn panic_message_reaches_the_model() {
    let host = host(&hostile_config("")).await;
    let result = call(&host, "hostile", json!({"attack": "panic", "marker": "xyzzy"})).await;
    assert_failed(&result, "trapped", "xyzzy");
    still_serves(&host).await;
}

#[tokio::test]
async fn huge_result_is_refused_by_the_output_cap() {
    let host = host(&hostile_config("memory_mib = 512\nmax_output_bytes = 1048576")).await;
    let result = call(&host, "hostile", json!({"attack": "huge_result"})).await;
    assert_failed(&result, "output_too_large", "1048576-byte output limit");
    let small = call(&host, "hostile", json!({"attack": "huge_result", "bytes": 2000})).await;
    assert!(!small.is_error(), "{}", small.text());
    still_serves(&host).await;
}

#[tokio::test]
async fn stdout_flood_is_captured_and_capped() {
    let host = host(&hostile_config("max_stdio_bytes = 4096")).await;
    let result = call(&host, "hostile", json!({"attack": "stdout_flood", "bytes": 10000000})).await;
    assert!(!result.is_error(), "{}", result.text());
    assert_eq!(result.stdout.text.len(), 4096);
    assert_eq!(result.stdout.dropped, 10_000_000 - 4096);
    assert!(result.stderr.dropped > 0);
}

#[tokio::test]
async fn tool_errors_and_lying_output_are_results() {
    let host = host(&format!(
        "{}\n[tools.liar]\ncomponent = {:?}\nside_effect = false\n",
        hostile_config(""),
        fixture("liar").display().to_string()
    ))
    .await;
    let result = call(&host, "hostile", json!({"attack": "tool_error"})).await;
    assert_failed(&result, "tool_error", "tool error (not_found): the thing was not found");
    let result = call(&host, "hostile", json!({"attack": "bad_output"})).await;
    assert_failed(&result, "invalid_output", "output schema");
    let result = call(&host, "liar", json!({})).await;
    assert_failed(&result, "invalid_output", "/count");
}

#[tokio::test]
async fn cancellation_interrupts_a_running_guest() {
    let host = host(&hostile_config("timeout_ms = 10000")).await;
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let request = CallRequest::new("tester", "hostile", json!({"attack": "loop"}));
    let result = host.call_cancellable(request, None, &cancel).await;
    assert_failed(&result, "cancelled", "cancelled");
    assert!(started.elapsed() < Duration::from_secs(2));
    still_serves(&host).await;
}

#[tokio::test]
async fn no_environment_unless_granted() {
    let host = host(&hostile_config("")).await;
    let result = call(&host, "hostile", json!({"attack": "env", "name": "HOME"})).await;
    assert_eq!(result.value(), Some(&json!({"vars": {}})), "no variables leak from the host");
    let host = crate::support::host(&hostile_config("env = { GREETING = \"hi\" }")).await;
    let result = call(&host, "hostile", json!({"attack": "env", "name": "GREETING"})).await;
    assert_eq!(result.value(), Some(&json!({"vars": {"GREETING": "hi"}, "var": "hi"})));
}

#[tokio::test]
async fn sockets_are_denied_whatever_the_grants() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let host = host(&hostile_config("")).await;
    let result = call(&host, "hostile", json!({"attack": "socket", "addr": addr})).await;
    let value = result.value().cloned().expect("socket attack returns what happened");
    let connect = value["connect"].as_str().unwrap_or_default();
    let dns = value["dns"].as_str().unwrap_or_default();
    assert!(!connect.starts_with("connected"), "connect must fail: {connect}");
    assert!(!dns.starts_with("resolved"), "dns must fail: {dns}");
    listener.set_nonblocking(true).expect("nonblocking");
    assert!(listener.accept().is_err(), "no connection may reach the listener");
}

/// A directory with `ok.txt`, and beside it a secret the guest must never
/// read, plus a symlink inside pointing at the secret.
fn escape_fixture() -> (tempfile::TempDir, std::path::PathBuf) {
    let root = temp_dir();
    let data = root.path().join("data");
    std::fs::create_dir(&data).expect("mkdir");
    std::fs::write(data.join("ok.txt"), "fine").expect("write");
    std::fs::write(root.path().join("secret.txt"), "TOP SECRET").expect("write");
    std::os::unix::fs::symlink(root.path().join("secret.txt"), data.join("link_out")).expect("symlink");
    (root, data)
}

#[tokio::test]
async fn directory_grants_confine_reads() {
    let (_root, data) = escape_fixture();
    let host =
        host(&hostile_config(&format!("dirs = [{{ host = {:?}, guest = \"/data\" }}]", data.display().to_string())))
            .await;
    let ok = call(&host, "hostile", json!({"attack": "read_path", "path": "/data/ok.txt"})).await;
    assert_eq!(ok.value(), Some(&json!({"content": "fine"})));
    for escape in ["/data/../secret.txt", "/data/link_out", "/etc/passwd", "../secret.txt", "/secret.txt"] {
        let result = call(&host, "hostile", json!({"attack": "read_path", "path": escape})).await;
        assert_failed(&result, "tool_error", "io");
        assert!(!result.text().contains("TOP SECRET"), "{escape} leaked the secret");
    }
    let listing = call(&host, "hostile", json!({"attack": "list_path", "path": "/"})).await;
    assert!(listing.is_error() || !listing.text().contains("secret"), "{}", listing.text());
}

#[tokio::test]
async fn read_only_grants_refuse_writes_and_rw_grants_allow_them() {
    let (_root, data) = escape_fixture();
    let dir = data.display().to_string();
    let ro = host(&hostile_config(&format!("dirs = [{{ host = {dir:?}, guest = \"/data\" }}]"))).await;
    let result = call(&ro, "hostile", json!({"attack": "write_path", "path": "/data/new.txt", "content": "x"})).await;
    assert_failed(&result, "tool_error", "io");
    assert!(!data.join("new.txt").exists());
    let rw = host(&hostile_config(&format!("dirs = [{{ host = {dir:?}, guest = \"/data\", access = \"rw\" }}]"))).await;
    let result = call(&rw, "hostile", json!({"attack": "write_path", "path": "/data/new.txt", "content": "x"})).await;
    assert!(!result.is_error(), "{}", result.text());
    assert_eq!(std::fs::read_to_string(data.join("new.txt")).expect("written"), "x");
    let escape =
        call(&rw, "hostile", json!({"attack": "write_path", "path": "/data/../escaped.txt", "content": "x"})).await;
    assert_failed(&escape, "tool_error", "io");
    assert!(!data.parent().expect("parent").join("escaped.txt").exists());
}

#[tokio::test]
async fn no_directory_unless_granted() {
    let host = host(&hostile_config("")).await;
    for path in ["/", ".", "/data", "/etc/passwd"] {
        let result = call(&host, "hostile", json!({"attack": "list_path", "path": path})).await;
        assert_failed(&result, "tool_error", "io");
    }
}

#[tokio::test]
async fn calls_in_parallel_do_not_share_state() {
    let host = host(&hostile_config("concurrency_safe = true")).await;
    let calls = (0..16).map(|_| call(&host, "hostile", json!({"attack": "ok"})));
    for result in futures::future::join_all(calls).await {
        assert_eq!(result.value(), Some(&json!({"value": 1})));
    }
}
