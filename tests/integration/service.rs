//! `airlock serve` as a service an orchestrator runs, tested from the built
//! binary: `/metrics` counts calls by tool and outcome, `/healthz` and
//! `/readyz` follow start-up, SIGTERM lets calls finish within the grace
//! and cancels the rest before exiting 0, logs can be JSON, a flood of bad
//! requests logs a bounded number of lines, and the Kubernetes ConfigMap's
//! config and policy load.
//!
//! Nothing here depends on machine speed: counts, kinds and exit codes are
//! asserted; waits are liveness bounds of many seconds.

use crate::support::{cache_dir, fixture, guests, temp_dir, tool};
use serde_json::{Value, json};
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

/// Liveness bound for anything the server must eventually do.
const DEADLINE: Duration = Duration::from_secs(60);
const TOKEN: &str = "service-test-token-0123456789abcdef";
/// A second client's token (principal `bob`, not a metrics reader).
const OTHER_TOKEN: &str = "service-test-other-token-0123456789";

pub(crate) fn binary() -> PathBuf {
    std::env::var_os("AIRLOCK_BIN").map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_airlock")), PathBuf::from)
}

/// `exe` (airlock, or what runs it) in `cwd` as a client runs a server:
/// stdin, stdout and stderr piped, the tests' compile cache, and no config,
/// log format or filter from the environment.
pub(crate) fn piped(exe: impl AsRef<std::ffi::OsStr>, cwd: &Path) -> Command {
    let mut command = Command::new(exe);
    command
        .current_dir(cwd)
        .env("AIRLOCK_CACHE_DIR", cache_dir())
        .env_remove("AIRLOCK_CONFIG")
        .env_remove("AIRLOCK_LOG_FORMAT")
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// A running `airlock serve`, killed when dropped; its stderr collected.
pub(crate) struct Served {
    pub(crate) child: Child,
    pub(crate) stderr: Arc<Mutex<String>>,
    pub(crate) _dir: tempfile::TempDir,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Served {
    /// `airlock ARGS` with `config` as its airlock.toml; stderr collected.
    pub(crate) fn start(config: &str, args: &[&str]) -> Served {
        Served::start_in(temp_dir(), config, args)
    }

    /// As [`Served::start`], in `dir` (which may hold files the config names).
    pub(crate) fn start_in(dir: tempfile::TempDir, config: &str, args: &[&str]) -> Served {
        let binary = binary().display().to_string();
        Served::start_wrapped(dir, config, &[&binary], args)
    }

    /// As [`Served::start_in`], run through `program` (its first item the
    /// executable, the rest its arguments before airlock's own), which
    /// ends by running the airlock binary (`exec`), so the child's pid is
    /// the server's.
    pub(crate) fn start_wrapped(dir: tempfile::TempDir, config: &str, program: &[&str], args: &[&str]) -> Served {
        let path = dir.path().join("airlock.toml");
        std::fs::write(&path, config).expect("config");
        let (exe, before) = program.split_first().expect("a program");
        let mut child =
            piped(exe, dir.path()).args(before).arg("--config").arg(&path).args(args).spawn().expect("airlock runs");
        let stderr = Arc::new(Mutex::new(String::new()));
        let pipe = child.stderr.take().expect("stderr");
        let collected = stderr.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { return };
                let mut text = collected.lock().unwrap();
                if text.len() < 1 << 20 {
                    text.push_str(&line);
                    text.push('\n');
                }
            }
        });
        Served { child, stderr, _dir: dir }
    }

    /// The address announced on the stderr line containing `what`.
    pub(crate) fn announced(&self, what: &str) -> String {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let text = self.stderr.lock().unwrap().clone();
            if let Some(line) = text.lines().find(|line| line.contains(what))
                && let Some(rest) = line.split("http://").nth(1)
            {
                return rest.split('/').next().unwrap_or_default().to_owned();
            }
            assert!(Instant::now() < deadline, "the server did not announce {what:?}: {text}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The config file it runs with.
    pub(crate) fn config(&self) -> PathBuf {
        self._dir.path().join("airlock.toml")
    }

    /// Wait for the process to exit; its exit code.
    pub(crate) fn exit_code(&mut self) -> Option<i32> {
        let deadline = Instant::now() + DEADLINE;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status.code();
            }
            assert!(Instant::now() < deadline, "the server did not exit: {}", self.stderr.lock().unwrap());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub(crate) fn sigterm(&self) {
        let status = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status().expect("kill");
        assert!(status.success());
    }
}

/// A response: status, lower-cased headers, body (chunked encoding undone).
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: String,
}

impl Reply {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// The JSON-RPC message of a JSON or event-stream body.
    pub(crate) fn message(&self) -> Value {
        let text = self.body.lines().filter_map(|l| l.strip_prefix("data:")).map(str::trim).find(|l| !l.is_empty());
        serde_json::from_str(text.unwrap_or(&self.body)).unwrap_or_else(|e| panic!("not JSON-RPC ({e}): {}", self.body))
    }
}

/// Wait until the server at `addr` answers `/readyz` with 200: every tool
/// is loaded (compiled, when the compile cache did not have it yet).
pub(crate) fn wait_ready(addr: &str) {
    let deadline = Instant::now() + DEADLINE;
    while request(addr, "GET", "/readyz", &[], "").status != 200 {
        assert!(Instant::now() < deadline, "the server at {addr} was never ready");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One request over a connection of its own (`Connection: close`).
pub(crate) fn request(addr: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Reply {
    send(addr, addr, method, path, headers, body)
}

/// A request to `url` (`http://HOST:PORT/PATH`) as a browser sends it:
/// `Host` is the URL's (`localhost` is reached at 127.0.0.1).
pub(crate) fn fetch(url: &str, method: &str, headers: &[(&str, &str)], body: &str) -> Reply {
    let rest = url.strip_prefix("http://").expect("an http URL");
    let (authority, path) = rest.find('/').map_or((rest, "/"), |at| rest.split_at(at));
    let addr = authority.replace("localhost:", "127.0.0.1:");
    send(&addr, authority, method, path, headers, body)
}

/// `request` to `addr`, naming `host` as the `Host`.
fn send(addr: &str, host: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Reply {
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if !body.is_empty() || method == "POST" {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(DEADLINE)).expect("timeout");
    stream.write_all(head.as_bytes()).expect("send");
    stream.write_all(body.as_bytes()).expect("send");
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, rest) = text.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no response: {text:?}"));
    let mut lines = head.split("\r\n");
    let status = lines.next().and_then(|l| l.split(' ').nth(1)).and_then(|s| s.parse().ok()).expect("status");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let chunked = headers.iter().any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked { unchunk(rest) } else { rest.to_owned() };
    Reply { status, headers, body }
}

fn unchunk(mut rest: &str) -> String {
    let mut body = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else { break };
        if size == 0 || after.len() < size {
            body.push_str(after.get(..size.min(after.len())).unwrap_or_default());
            break;
        }
        body.push_str(&after[..size]);
        rest = after[size..].trim_start_matches("\r\n");
    }
    body
}

/// An MCP client over streamable HTTP (the initialize-based revision).
pub(crate) struct Mcp {
    pub(crate) addr: String,
    session: String,
    token: Option<String>,
}

impl Mcp {
    pub(crate) fn connect(addr: &str, token: Option<&str>) -> Mcp {
        let mut mcp = Mcp { addr: addr.to_owned(), session: String::new(), token: token.map(str::to_owned) };
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params":
            {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "service-test", "version": "0"}}});
        let reply = mcp.post(&init, &[]);
        assert_eq!(reply.status, 200, "initialize: {}", reply.body);
        mcp.session = reply.header("mcp-session-id").expect("a session id").to_owned();
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(mcp.post(&initialized, &[]).status, 202);
        mcp
    }

    pub(crate) fn post(&self, message: &Value, extra: &[(&str, &str)]) -> Reply {
        let bearer = self.token.as_ref().map(|t| format!("Bearer {t}"));
        let mut headers = vec![("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream")];
        if !self.session.is_empty() {
            headers.push(("Mcp-Session-Id", &self.session));
        }
        if let Some(bearer) = &bearer {
            headers.push(("Authorization", bearer));
        }
        headers.extend_from_slice(extra);
        request(&self.addr, "POST", "/mcp", &headers, &message.to_string())
    }

    /// `tools/call`; the result, or the JSON-RPC error.
    pub(crate) fn call(&self, id: u64, tool: &str, arguments: Value, extra: &[(&str, &str)]) -> Value {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}});
        let reply = self.post(&call, extra);
        assert_eq!(reply.status, 200, "tools/call {tool}: {}", reply.body);
        let message = reply.message();
        message.get("result").cloned().unwrap_or(message)
    }
}

/// The kind of an MCP tool result: `ok` or its `_meta` kind.
pub(crate) fn kind(result: &Value) -> &str {
    if result["isError"] == json!(true) { result["_meta"]["airlock/kind"].as_str().unwrap_or("?") } else { "ok" }
}

/// The value of the one sample `series` (name and labels as rendered).
fn sample(metrics: &str, series: &str) -> Option<f64> {
    metrics.lines().find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.trim().parse().ok())
}

fn scrape(addr: &str) -> String {
    let bearer = format!("Bearer {TOKEN}");
    let reply = request(addr, "GET", "/metrics", &[("Authorization", &bearer)], "");
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert!(reply.header("content-type").is_some_and(|t| t.starts_with("text/plain")), "{:?}", reply.headers);
    reply.body
}

fn echo_config(extra: &str) -> String {
    format!(
        "[engine]\ncache_dir = {:?}\n[tools.echo]\ncomponent = {:?}\nside_effect = false\nconcurrency_safe = true\n{extra}",
        cache_dir().display().to_string(),
        tool("echo").display().to_string(),
    )
}

#[test]
fn metrics_count_calls_by_tool_and_outcome_and_readyz_follows_start_up() {
    // `slow_metadata` spins in `metadata` until its 15 s deadline: start-up
    // is not finished before then, whatever the machine.
    let config = echo_config(&format!(
        "[tools.slow_metadata]\ncomponent = {:?}\ntimeout_ms = 15000\n[http]\ntokens = [{{ token = \"{TOKEN}\", \
         principal = \"alice\" }}, {{ token = \"{OTHER_TOKEN}\", principal = \"bob\" }}]\n[metrics]\n\
         readers = [\"alice\"]\n",
        fixture("slow_metadata").display().to_string()
    ));
    let server = Served::start(&config, &["serve", "--http", "127.0.0.1:0"]);
    let addr = server.announced("serving MCP");

    let ready = request(&addr, "GET", "/readyz", &[], "");
    assert_eq!(ready.status, 503, "not ready while a component loads: {}", ready.body);
    assert!(ready.body.contains("loading tools"), "{}", ready.body);
    let health = request(&addr, "GET", "/healthz", &[], "");
    assert_eq!((health.status, health.body.as_str()), (200, "ok\n"), "alive at once, without a token");
    let refused = request(&addr, "GET", "/metrics", &[], "");
    assert_eq!(refused.status, 401, "/metrics is protected like /mcp: {}", refused.body);
    // Another client with a valid token is not a reader: the series name
    // principals and tools.
    let bob = format!("Bearer {OTHER_TOKEN}");
    let forbidden = request(&addr, "GET", "/metrics", &[("Authorization", &bob)], "");
    assert_eq!(forbidden.status, 403, "only [metrics] readers read /metrics: {}", forbidden.body);
    assert!(forbidden.body.contains("[metrics] readers"), "{}", forbidden.body);

    let mcp = Mcp::connect(&addr, Some(TOKEN));
    for i in 0..3 {
        assert_eq!(kind(&mcp.call(i + 1, "echo", json!({"text": "hi"}), &[])), "ok");
    }
    assert_eq!(kind(&mcp.call(11, "echo", json!({"text": 5}), &[])), "invalid_arguments");
    let metrics = scrape(&addr);
    let count =
        |metrics: &str, series: &str| sample(metrics, series).unwrap_or_else(|| panic!("no {series} in\n{metrics}"));
    assert_eq!(count(&metrics, "airlock_calls_total{tool=\"echo\",outcome=\"ok\"}"), 3.0);
    assert_eq!(count(&metrics, "airlock_calls_total{tool=\"echo\",outcome=\"invalid_arguments\"}"), 1.0);
    assert_eq!(count(&metrics, "airlock_tools_configured"), 2.0);
    assert_eq!(count(&metrics, "airlock_ready"), 0.0, "still loading slow_metadata");

    let deadline = Instant::now() + DEADLINE;
    loop {
        let ready = request(&addr, "GET", "/readyz", &[], "");
        if ready.status == 200 {
            assert_eq!(ready.body, "ready\n");
            break;
        }
        assert!(Instant::now() < deadline, "never ready: {}", ready.body);
        std::thread::sleep(Duration::from_millis(100));
    }
    // Once start-up is done, a call for a tool nobody configured fails at
    // once (during start-up it waits for the tools still loading).
    assert_eq!(kind(&mcp.call(10, "no_such_tool", json!({}), &[])), "unknown_tool");
    let metrics = scrape(&addr);
    assert_eq!(count(&metrics, "airlock_calls_total{tool=\"echo\",outcome=\"ok\"}"), 3.0);
    assert_eq!(count(&metrics, "airlock_calls_total{tool=\"_unknown\",outcome=\"unknown_tool\"}"), 1.0);
    assert_eq!(count(&metrics, "airlock_stage_duration_seconds_count{stage=\"resolve\"}"), 5.0);
    assert_eq!(count(&metrics, "airlock_stage_duration_seconds_count{stage=\"execute\"}"), 3.0);
    assert_eq!(count(&metrics, "airlock_call_duration_seconds_count{tool=\"echo\"}"), 4.0);
    assert!(count(&metrics, "airlock_fuel_used_total{tool=\"echo\"}") > 0.0);
    assert_eq!(count(&metrics, "airlock_calls_in_flight"), 0.0);
    assert_eq!(count(&metrics, "airlock_ready"), 1.0);
    assert_eq!(count(&metrics, "airlock_tools_ready"), 1.0, "slow_metadata was refused");
    assert!(count(&metrics, "process_resident_memory_bytes") > 0.0 && count(&metrics, "process_open_fds") > 0.0);
    assert!(!metrics.contains("no_such_tool"), "a client's tool name is never a label");
}

/// `hostile` (sleeps on request) and `echo`, an audit log, `[serve]
/// shutdown_grace_secs = grace`.
fn sleeper_config(audit: &Path, grace: u64, extra: &str) -> String {
    echo_config(&format!(
        "[tools.hostile]\ncomponent = {:?}\nside_effect = false\nconcurrency_safe = true\ntimeout_ms = 600000\n\
         [audit]\nfile = {:?}\n[serve]\nshutdown_grace_secs = {grace}\n{extra}",
        fixture("hostile").display().to_string(),
        audit.display().to_string(),
    ))
}

fn wait_metrics(metrics_addr: &str, done: impl Fn(&str) -> bool) {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let metrics = scrape(metrics_addr);
        if done(&metrics) {
            return;
        }
        assert!(Instant::now() < deadline, "the metrics never said so: {metrics}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub(crate) fn audit_outcomes(audit: &Path) -> Vec<String> {
    std::fs::read_to_string(audit)
        .unwrap_or_default()
        .lines()
        .map(|line| {
            serde_json::from_str::<Value>(line).expect("audit record")["outcome"].as_str().unwrap_or("").to_owned()
        })
        .collect()
}

#[test]
fn sigterm_lets_calls_in_flight_finish_cancels_the_rest_and_exits_0() {
    let dir = temp_dir();
    let audit = dir.path().join("audit.jsonl");
    // A call that sleeps 10 minutes outlasts the 5 s grace whatever the
    // machine; one that sleeps 1 s finishes well within it.
    let config = sleeper_config(
        &audit,
        5,
        &format!(
            "[http]\ntokens = [{{ token = \"{TOKEN}\", principal = \"alice\" }}]\n[metrics]\nreaders = [\"alice\"]\n"
        ),
    );
    let mut server = Served::start(&config, &["serve", "--http", "127.0.0.1:0"]);
    let addr = server.announced("serving MCP");
    let (tx, rx) = mpsc::channel();
    let start = |ms: u64, name: &'static str| {
        let mcp = Mcp::connect(&addr, Some(TOKEN));
        let tx = tx.clone();
        std::thread::spawn(move || {
            let result = mcp.call(1, "hostile", json!({"attack": "sleep", "ms": ms}), &[]);
            let _ = tx.send((name, result));
        });
    };
    start(600_000, "long");
    wait_metrics(&addr, |m| sample(m, "airlock_calls_in_flight") == Some(1.0));
    start(1000, "short");
    // Both in flight, or the short one already done: either way it must
    // end `ok`.
    wait_metrics(&addr, |m| {
        sample(m, "airlock_calls_in_flight") == Some(2.0)
            || sample(m, "airlock_calls_total{tool=\"hostile\",outcome=\"ok\"}") == Some(1.0)
    });
    server.sigterm();
    let mut results: Vec<(&str, Value)> =
        (0..2).map(|_| rx.recv_timeout(DEADLINE).expect("every call is answered")).collect();
    results.sort_by_key(|(name, _)| *name);
    assert_eq!(kind(&results[0].1), "cancelled", "the long call is cancelled past the grace: {}", results[0].1);
    assert_eq!(kind(&results[1].1), "ok", "the short call finishes: {}", results[1].1);
    assert_eq!(server.exit_code(), Some(0), "{}", server.stderr.lock().unwrap());
    let outcomes = audit_outcomes(&audit);
    assert_eq!(outcomes.iter().filter(|o| *o == "cancelled").count(), 1, "{outcomes:?}");
    assert_eq!(outcomes.iter().filter(|o| *o == "ok").count(), 1, "{outcomes:?}");
    assert!(TcpStream::connect(&addr).is_err(), "nothing listens once it has exited");
}

pub(crate) fn write_line(stdin: &mut ChildStdin, line: &str) {
    stdin.write_all(line.as_bytes()).expect("write stdin");
    stdin.write_all(b"\n").expect("write stdin");
    stdin.flush().expect("flush stdin");
}

pub(crate) fn stdout_lines(server: &mut Served) -> mpsc::Receiver<Value> {
    let stdout = server.child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            if tx.send(serde_json::from_str(&line).expect("stdout is JSON-RPC")).is_err() {
                return;
            }
        }
    });
    rx
}

pub(crate) fn stdio_initialize(stdin: &mut ChildStdin, lines: &mpsc::Receiver<Value>) {
    write_line(
        stdin,
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params":
            {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
        .to_string(),
    );
    assert_eq!(lines.recv_timeout(DEADLINE).expect("initialize answered")["id"], 0);
    write_line(stdin, &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string());
}

#[test]
fn stdio_sigterm_cancels_calls_past_the_grace_answers_them_and_exits_0() {
    let dir = temp_dir();
    let audit = dir.path().join("audit.jsonl");
    // Metrics on a loopback port of their own, without a token.
    let config = sleeper_config(&audit, 1, "[metrics]\nlisten = \"127.0.0.1:0\"\npublic = true\n");
    let mut server = Served::start(&config, &["serve", "--stdio"]);
    let metrics = server.announced("serving metrics");
    let lines = stdout_lines(&mut server);
    let mut stdin = server.child.stdin.take().expect("stdin");
    stdio_initialize(&mut stdin, &lines);
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params":
        {"name": "hostile", "arguments": {"attack": "sleep", "ms": 600_000}}});
    write_line(&mut stdin, &call.to_string());
    let deadline = Instant::now() + DEADLINE;
    while request(&metrics, "GET", "/readyz", &[], "").status != 200 {
        assert!(Instant::now() < deadline, "never ready");
        std::thread::sleep(Duration::from_millis(50));
    }
    wait_metrics(&metrics, |m| sample(m, "airlock_calls_in_flight") == Some(1.0));
    server.sigterm();
    let reply = lines.recv_timeout(DEADLINE).expect("the call in flight is answered");
    assert_eq!(reply["id"], 7);
    assert_eq!(kind(&reply["result"]), "cancelled", "{reply}");
    assert_eq!(server.exit_code(), Some(0), "{}", server.stderr.lock().unwrap());
    assert_eq!(audit_outcomes(&audit), ["cancelled"]);
}

/// Calls on stdio are answered beside rmcp's service loop; this checks
/// what that path owes the client: a cancelled call is interrupted and
/// gets no answer, its id is free at once (the answer that comes for it is
/// the new request's), and a call in flight when stdin closes is still
/// answered before the server exits.
#[test]
fn stdio_cancelled_calls_get_no_answer_their_id_is_free_and_end_of_input_answers_calls_in_flight() {
    let dir = temp_dir();
    let audit = dir.path().join("audit.jsonl");
    let config = sleeper_config(&audit, 1, "[metrics]\nlisten = \"127.0.0.1:0\"\npublic = true\n");
    let mut server = Served::start(&config, &["serve", "--stdio"]);
    let metrics = server.announced("serving metrics");
    let lines = stdout_lines(&mut server);
    let mut stdin = server.child.stdin.take().expect("stdin");
    stdio_initialize(&mut stdin, &lines);
    let sleep = |id: u64, ms: u64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params":
            {"name": "hostile", "arguments": {"attack": "sleep", "ms": ms}}})
        .to_string()
    };
    write_line(&mut stdin, &sleep(7, 600_000));
    wait_metrics(&metrics, |m| sample(m, "airlock_calls_in_flight") == Some(1.0));
    write_line(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}).to_string(),
    );
    // The same id again at once, before the cancelled call has returned.
    write_line(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params":
            {"name": "echo", "arguments": {"text": "the new request"}}})
        .to_string(),
    );
    let reply = lines.recv_timeout(DEADLINE).expect("the new request is answered");
    assert_eq!(reply["id"], 7, "{reply}");
    assert_eq!(reply["result"]["structuredContent"]["text"], "the new request", "{reply}");
    wait_metrics(&metrics, |m| sample(m, "airlock_calls_total{tool=\"hostile\",outcome=\"cancelled\"}") == Some(1.0));
    // A call in flight when stdin closes is answered, then the server exits.
    write_line(&mut stdin, &sleep(8, 200));
    drop(stdin);
    let reply = lines.recv_timeout(DEADLINE).expect("the call in flight at end of input is answered");
    assert_eq!(reply["id"], 8, "{reply}");
    assert_eq!(kind(&reply["result"]), "ok", "{reply}");
    assert_eq!(server.exit_code(), Some(0), "{}", server.stderr.lock().unwrap());
    let rest: Vec<Value> = lines.iter().collect();
    assert!(rest.is_empty(), "nothing else was written, no answer for the cancelled call: {rest:?}");
    let mut outcomes = audit_outcomes(&audit);
    outcomes.sort();
    assert_eq!(outcomes, ["cancelled", "ok", "ok"]);
}

/// At the end of input, a call gets 5 s (rmcp's own drain) to answer; one
/// that runs longer is cancelled, and its `cancelled` result is written
/// before the server exits.
#[test]
fn stdio_end_of_input_cancels_a_call_still_running_after_the_drain_and_answers_it() {
    let dir = temp_dir();
    let audit = dir.path().join("audit.jsonl");
    let config = sleeper_config(&audit, 1, "[metrics]\nlisten = \"127.0.0.1:0\"\npublic = true\n");
    let mut server = Served::start(&config, &["serve", "--stdio"]);
    let metrics = server.announced("serving metrics");
    let lines = stdout_lines(&mut server);
    let mut stdin = server.child.stdin.take().expect("stdin");
    stdio_initialize(&mut stdin, &lines);
    let call = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params":
        {"name": "hostile", "arguments": {"attack": "sleep", "ms": 600_000}}});
    write_line(&mut stdin, &call.to_string());
    wait_metrics(&metrics, |m| sample(m, "airlock_calls_in_flight") == Some(1.0));
    drop(stdin);
    let reply = lines.recv_timeout(DEADLINE).expect("the call is answered");
    assert_eq!(reply["id"], 9, "{reply}");
    assert_eq!(kind(&reply["result"]), "cancelled", "{reply}");
    assert_eq!(server.exit_code(), Some(0), "{}", server.stderr.lock().unwrap());
    assert_eq!(audit_outcomes(&audit), ["cancelled"]);
}

/// A 2026-07-28 client's first request is run by rmcp's own loop, not
/// beside it: rmcp's end-of-input drain cancels its handlers when it ends
/// and drops what they answer after, so the transport must cancel such a
/// call itself and write its answer before rmcp learns that stdin closed.
#[test]
fn stdio_end_of_input_cancels_a_call_run_by_rmcp_after_the_drain_and_answers_it() {
    let dir = temp_dir();
    let audit = dir.path().join("audit.jsonl");
    let config = sleeper_config(&audit, 1, "[metrics]\nlisten = \"127.0.0.1:0\"\npublic = true\n");
    let mut server = Served::start(&config, &["serve", "--stdio"]);
    let metrics = server.announced("serving metrics");
    let lines = stdout_lines(&mut server);
    let mut stdin = server.child.stdin.take().expect("stdin");
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let call = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params":
        {"name": "hostile", "arguments": {"attack": "sleep", "ms": 600_000}, "_meta": meta}});
    write_line(&mut stdin, &call.to_string());
    wait_metrics(&metrics, |m| sample(m, "airlock_calls_in_flight") == Some(1.0));
    drop(stdin);
    let reply = lines.recv_timeout(DEADLINE).expect("the call is answered");
    assert_eq!(reply["id"], 4, "{reply}");
    assert_eq!(kind(&reply["result"]), "cancelled", "{reply}");
    assert_eq!(server.exit_code(), Some(0), "{}", server.stderr.lock().unwrap());
    assert_eq!(audit_outcomes(&audit), ["cancelled"]);
}

#[test]
fn json_logs_parse_and_a_flood_of_bad_requests_logs_a_bounded_number_of_lines() {
    let config = echo_config("");
    let mut server = Served::start(&config, &["--log-format", "json", "serve", "--stdio"]);
    let lines = stdout_lines(&mut server);
    let mut stdin = server.child.stdin.take().expect("stdin");
    stdio_initialize(&mut stdin, &lines);
    // A marker longer than anything a log line may quote.
    let marker = format!("CLIENTDATA{}", "x".repeat(2000));
    const FLOOD: u64 = 300;
    for i in 0..FLOOD {
        // Not JSON, an unknown method and bad parameters of a known one.
        write_line(&mut stdin, &format!("not json {marker}"));
        write_line(
            &mut stdin,
            &json!({"jsonrpc": "2.0", "id": 100 + i, "method": format!("no/such/{marker}")}).to_string(),
        );
        write_line(
            &mut stdin,
            &json!({"jsonrpc": "2.0", "id": 10_000 + i, "method": "tools/call", "params": {"nme": marker}}).to_string(),
        );
    }
    let mut answered = 0;
    while answered < 3 * FLOOD {
        lines.recv_timeout(DEADLINE).expect("every bad request is answered");
        answered += 1;
    }
    write_line(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params":
        {"name": "echo", "arguments": {"text": "still served"}}})
        .to_string(),
    );
    let reply = lines.recv_timeout(DEADLINE).expect("the next call is served");
    assert_eq!(kind(&reply["result"]), "ok", "{reply}");
    drop(stdin);
    assert_eq!(server.exit_code(), Some(0));
    let stderr = server.stderr.lock().unwrap().clone();
    let logged: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    for line in &logged {
        let value: Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("a log line is not JSON ({e}): {line}"));
        assert!(value["level"].is_string() && value["timestamp"].is_string(), "{line}");
    }
    assert!(logged.len() <= 5, "{} client errors logged {} lines:\n{stderr}", 3 * FLOOD, logged.len());
    let summaries = logged.iter().filter(|l| l.contains("client requests refused")).count();
    assert_eq!(summaries, 1, "one summary line within the interval:\n{stderr}");
    assert!(!stderr.contains(&marker[..200]), "a client's data is cut in log lines:\n{stderr}");
}

/// The block scalar under `key: |` in a YAML file, unindented.
fn yaml_block(text: &str, key: &str) -> String {
    let mut lines = text.lines().skip_while(|l| l.trim() != format!("{key}: |"));
    let _ = lines.next();
    let block: Vec<&str> = lines.take_while(|l| l.is_empty() || l.starts_with("    ")).collect();
    block.iter().map(|l| l.get(4..).unwrap_or_default()).collect::<Vec<_>>().join("\n")
}

#[test]
fn the_kubernetes_configmap_config_and_policy_load() {
    let root = crate::support::repo_root();
    let configmap = std::fs::read_to_string(root.join("deploy/kubernetes/configmap.yaml")).expect("configmap");
    let dir = temp_dir();
    let at = |p: &str| dir.path().join(p).display().to_string();
    let config = yaml_block(&configmap, "airlock.toml")
        .replace("/usr/share/airlock/tools", &guests().display().to_string())
        .replace("/var/cache/airlock", &cache_dir().display().to_string())
        .replace("/etc/airlock/", &format!("{}/", dir.path().display()))
        .replace("/var/lib/airlock/", &format!("{}/", dir.path().display()));
    assert!(config.contains("[metrics]") && config.contains("[serve]"), "{config}");
    std::fs::write(at("airlock.toml"), &config).expect("config");
    std::fs::write(at("policy.cedar"), yaml_block(&configmap, "policy.cedar")).expect("policy");
    let output = Command::new(binary())
        .args(["--config", &at("airlock.toml"), "tools"])
        .env("AIRLOCK_TOKEN", "k8s-test-agent-token-0123456789abcdef")
        .env("AIRLOCK_METRICS_TOKEN", "k8s-test-scraper-token-0123456789abcdef")
        .env("AIRLOCK_CACHE_DIR", cache_dir())
        .output()
        .expect("airlock tools");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(String::from_utf8_lossy(&output.stdout).contains("echo"));
    // The scraper's principal may call nothing.
    let call = Command::new(binary())
        .args(["--config", &at("airlock.toml"), "call", "echo", "{\"text\":\"hi\"}", "--principal", "prometheus"])
        .env("AIRLOCK_TOKEN", "k8s-test-agent-token-0123456789abcdef")
        .env("AIRLOCK_METRICS_TOKEN", "k8s-test-scraper-token-0123456789abcdef")
        .env("AIRLOCK_CACHE_DIR", cache_dir())
        .output()
        .expect("airlock call");
    let out: Value = serde_json::from_slice(&call.stdout).expect("call JSON");
    assert_eq!(out["kind"], "denied", "{out}");
}

#[test]
fn readyz_is_503_while_the_audit_log_cannot_be_written() {
    // The audit log is on a full disk: a tmpfs of two pages, one taken by a
    // filler and one by the head file, mounted in the server's own mount
    // namespace, so every append fails with ENOSPC. (A link to /dev/full
    // would be refused at start-up: the log must be a regular file.)
    if !Command::new("unshare").args(["--mount", "true"]).status().is_ok_and(|s| s.success()) {
        eprintln!("skipped: this test needs a mount namespace (unshare --mount, as root)");
        return;
    }
    let config = echo_config(&format!(
        "[http]\ntokens = [{{ token = \"{TOKEN}\", principal = \"alice\" }}]\n[audit]\nfile = \"full/audit.jsonl\"\n"
    ));
    let dir = temp_dir();
    let full = dir.path().join("full");
    std::fs::create_dir(&full).expect("mount point");
    let full = full.display().to_string();
    let binary = binary().display().to_string();
    let script = "p=$(getconf PAGESIZE) && mount -t tmpfs -o size=$((2 * p)) airlock-full \"$1\" && \
                  head -c \"$p\" /dev/zero > \"$1/filler\" && shift && exec \"$@\"";
    let program = ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", &full, &binary];
    let server = Served::start_wrapped(dir, &config, &program, &["serve", "--http", "127.0.0.1:0"]);
    let addr = server.announced("serving MCP");
    let deadline = Instant::now() + DEADLINE;
    while request(&addr, "GET", "/readyz", &[], "").status != 200 {
        assert!(Instant::now() < deadline, "never ready before the first append");
        std::thread::sleep(Duration::from_millis(50));
    }
    let mcp = Mcp::connect(&addr, Some(TOKEN));
    let result = mcp.call(1, "echo", json!({"text": "hi"}), &[]);
    assert_eq!(kind(&result), "internal", "{result}");
    for _ in 0..3 {
        let ready = request(&addr, "GET", "/readyz", &[], "");
        assert_eq!(ready.status, 503, "{}", ready.body);
        assert!(ready.body.contains("audit log"), "{}", ready.body);
    }
}

#[test]
fn an_audit_file_that_is_not_a_regular_file_is_refused_at_start_up() {
    // A link to /dev/null or a FIFO with no reader: calls would answer ok
    // and their records vanish (or the writer block). Refused before the
    // server listens, naming the key as written.
    for (name, make) in [("null.jsonl", "ln -s /dev/null"), ("fifo.jsonl", "mkfifo")] {
        let dir = temp_dir();
        let status =
            Command::new("sh").args(["-c", &format!("{make} {name}")]).current_dir(dir.path()).status().expect("sh");
        assert!(status.success(), "{make} {name}");
        std::fs::write(dir.path().join("airlock.toml"), echo_config(&format!("[audit]\nfile = \"{name}\"\n")))
            .expect("config");
        // Bounded, so that a server that did start cannot hang the test.
        let output = Command::new("timeout")
            .arg("60")
            .arg(binary())
            .args(["--config", "airlock.toml", "serve", "--http", "127.0.0.1:0"])
            .current_dir(dir.path())
            .env("AIRLOCK_CACHE_DIR", cache_dir())
            .stdin(Stdio::null())
            .output()
            .expect("airlock serve");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{stderr}");
        assert!(stderr.contains(&format!("`[audit] file = \"{name}\"`")), "{stderr}");
        assert!(stderr.contains("the audit log must be a regular file"), "{stderr}");
    }
}
