//! Items 3, 4 (ready time) and 7: the built `airlock` binary as a client
//! sees it. MCP over stdio with raw newline-delimited JSON-RPC, MCP over
//! streamable HTTP with a raw HTTP/1.1 client on a `TcpStream`, the time
//! from process start to the first answer, and resident memory.

use crate::peers::{mcp_stdio, peers_table};
use crate::stats::{self, HEADER_MS, HEADER_US, Stats, row_ms, row_us, us};
use crate::{Report, Setup};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

const PROTOCOL: &str = "2025-11-25";

/// `airlock serve --stdio` with pipes.
pub(crate) struct StdioServer {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

pub(crate) fn airlock(setup: &Setup, config: Option<&Path>) -> Command {
    let mut command = Command::new(&setup.binary);
    if let Some(config) = config {
        command.arg("--config").arg(config);
    }
    command
        .env("AIRLOCK_TOOLS_DIR", &setup.guests)
        .env("AIRLOCK_CACHE_DIR", &setup.cache)
        .env("RUST_LOG", "error")
        .stderr(Stdio::null());
    command
}

impl StdioServer {
    pub(crate) fn spawn(setup: &Setup, config: Option<&Path>) -> Self {
        let child = airlock(setup, config)
            .args(["serve", "--stdio"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("airlock starts");
        Self::over(child)
    }

    /// The same client over any child with piped stdin and stdout.
    pub(crate) fn over(mut child: Child) -> Self {
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        Self { child, stdin, stdout, next_id: 1 }
    }

    pub(crate) fn send(&mut self, message: &Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).expect("write to airlock");
        self.stdin.flush().expect("flush");
    }

    pub(crate) fn request(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// The next response (notifications are skipped).
    pub(crate) fn response(&mut self) -> Value {
        loop {
            let message = self.message();
            if message.get("id").is_some() && message.get("method").is_none() {
                return message;
            }
        }
    }

    /// The next message.
    fn message(&mut self) -> Value {
        let mut line = String::new();
        let read = self.stdout.read_line(&mut line).expect("read from airlock");
        assert!(read > 0, "airlock closed stdout");
        serde_json::from_str(&line).expect("airlock writes JSON lines")
    }

    pub(crate) fn initialize(&mut self) {
        self.request(
            "initialize",
            json!({"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}),
        );
        let reply = self.response();
        assert!(reply.get("result").is_some(), "{reply}");
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The write end of the server's stdin (for clients that misbehave).
    pub(crate) fn stdin(&mut self) -> &mut ChildStdin {
        &mut self.stdin
    }

    pub(crate) fn call(&mut self, tool: &str, arguments: Value) -> u64 {
        self.request("tools/call", json!({"name": tool, "arguments": arguments}))
    }

    fn rss_kib(&self) -> (u64, u64) {
        rss_kib(self.child.id())
    }
}

impl Drop for StdioServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// (VmRSS, VmHWM) of a process, in KiB.
fn rss_kib(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

pub(crate) fn assert_ok(reply: &Value) {
    let result = reply.get("result").unwrap_or_else(|| panic!("error reply: {reply}"));
    assert_ne!(result.get("isError"), Some(&Value::Bool(true)), "{reply}");
}

/// A raw HTTP/1.1 client for one keep-alive connection to `/mcp`.
pub(crate) struct Http {
    stream: BufReader<TcpStream>,
    addr: String,
    session: Option<String>,
    token: Option<String>,
}

impl Http {
    fn connect(addr: &str) -> Self {
        let stream = TcpStream::connect(addr).expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        // Long enough for a call that waits for room in the memory budget
        // within its deadline (item 9).
        stream.set_read_timeout(Some(Duration::from_secs(120))).expect("timeout");
        Self { stream: BufReader::new(stream), addr: addr.to_owned(), session: None, token: None }
    }

    /// A client that sends `token` as its bearer token.
    pub(crate) fn with_token(addr: &str, token: &str) -> Self {
        Self { token: Some(token.to_owned()), ..Self::connect(addr) }
    }

    /// POST one JSON-RPC message; returns the status and the JSON-RPC
    /// messages of the body (JSON or server-sent events).
    pub(crate) fn post(&mut self, body: &Value) -> (u16, Vec<Value>) {
        let body = body.to_string();
        let mut head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: {PROTOCOL}\r\nContent-Length: {}\r\n",
            self.addr,
            body.len()
        );
        if let Some(session) = &self.session {
            head.push_str(&format!("Mcp-Session-Id: {session}\r\n"));
        }
        if let Some(token) = &self.token {
            head.push_str(&format!("Authorization: Bearer {token}\r\n"));
        }
        head.push_str("\r\n");
        head.push_str(&body);
        self.stream.get_mut().write_all(head.as_bytes()).expect("send request");

        let mut status_line = String::new();
        self.stream.read_line(&mut status_line).expect("status line");
        let status: u16 = status_line.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        let (mut length, mut chunked) = (0usize, false);
        loop {
            let mut line = String::new();
            self.stream.read_line(&mut line).expect("header");
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            let (name, value) = line.split_once(':').unwrap_or((line, ""));
            let (name, value) = (name.to_ascii_lowercase(), value.trim());
            match name.as_str() {
                "content-length" => length = value.parse().unwrap_or(0),
                "transfer-encoding" => chunked = value.eq_ignore_ascii_case("chunked"),
                "mcp-session-id" => self.session = Some(value.to_owned()),
                _ => {}
            }
        }
        let mut body = Vec::new();
        if chunked {
            loop {
                let mut size = String::new();
                self.stream.read_line(&mut size).expect("chunk size");
                let size = usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16).unwrap_or(0);
                let mut chunk = vec![0; size + 2];
                self.stream.read_exact(&mut chunk).expect("chunk");
                if size == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..size]);
            }
        } else {
            body.resize(length, 0);
            self.stream.read_exact(&mut body).expect("body");
        }
        let text = String::from_utf8_lossy(&body);
        let messages = if text.trim_start().starts_with('{') {
            serde_json::from_str(&text).into_iter().collect()
        } else {
            text.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
                .collect()
        };
        (status, messages)
    }

    pub(crate) fn initialize(&mut self) {
        let (status, messages) = self.post(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params":
            {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}}));
        assert!(status == 200 && !messages.is_empty(), "initialize over HTTP: {status} {messages:?}");
        let (status, _) = self.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        assert!(status < 300, "initialized: {status}");
    }

    fn call(&mut self, id: u64) {
        let (status, messages) = self.post(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "hi"}}}));
        let reply = messages.iter().find(|m| m.get("id") == Some(&json!(id)));
        assert!(status == 200 && reply.is_some(), "tools/call over HTTP: {status} {messages:?}");
        assert_ok(reply.unwrap_or(&Value::Null));
    }
}

pub(crate) fn write_config(setup: &Setup, name: &str, text: &str) -> PathBuf {
    let path = setup.scratch.join(name);
    std::fs::write(&path, text).expect("write config");
    path
}

/// A config serving `echo` with an audit log (flush), as in item 1.
fn echo_config(setup: &Setup) -> PathBuf {
    let audit = setup.scratch.join(format!("mcp-audit-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&audit);
    let _ = std::fs::remove_file(audit.with_extension("jsonl.head"));
    write_config(
        setup,
        "echo.toml",
        &format!(
            "[tools.echo]\ncomponent = {:?}\nside_effect = false\nconcurrency_safe = true\n[audit]\nfile = {:?}\n",
            setup.guests.join("echo.wasm").display().to_string(),
            audit.display().to_string()
        ),
    )
}

/// CPU time a process's threads have used so far, to the nanosecond: the
/// sum of each thread's run time (`/proc/PID/task/*/schedstat`), which a
/// few microseconds per call can be told from, unlike `/proc/PID/stat`'s
/// 10 ms ticks. A thread that has exited no longer counts; the servers'
/// threads live as long as they do.
pub(crate) fn cpu_time(pid: u32) -> Duration {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return Duration::ZERO };
    let nanos: u64 = tasks
        .filter_map(Result::ok)
        .filter_map(|task| std::fs::read_to_string(task.path().join("schedstat")).ok())
        .filter_map(|stat| stat.split_whitespace().next().and_then(|ran| ran.parse::<u64>().ok()))
        .sum();
    Duration::from_nanos(nanos)
}

/// The floor of any stdio server on this machine: the same client's
/// `tools/call` lines echoed back by `cat` (two pipes, two process
/// wake-ups, the client's own JSON work; nothing parsed on the far side).
/// Returns the round trips and `cat`'s CPU time per line.
fn pipe_floor(setup: &Setup) -> (Stats, Duration) {
    let child = Command::new("cat").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("cat starts");
    let mut cat = StdioServer::over(child);
    round_trips(&mut cat, setup.mcp_iterations, |cat| {
        cat.call("echo", json!({"text": "hi"}));
        let echoed = cat.message();
        assert_eq!(echoed["method"], "tools/call", "cat echoes the line");
    })
}

/// `n` sequential round trips (`one`) after `n / 10` of warm-up: their
/// times and the peer's CPU time per round trip.
fn round_trips(peer: &mut StdioServer, n: usize, one: impl Fn(&mut StdioServer)) -> (Stats, Duration) {
    for _ in 0..n / 10 {
        one(peer);
    }
    let mut samples = Vec::with_capacity(n);
    let cpu_before = cpu_time(peer.pid());
    for _ in 0..n {
        let started = Instant::now();
        one(peer);
        samples.push(started.elapsed());
    }
    let cpu_per_trip = cpu_time(peer.pid()).saturating_sub(cpu_before) / n.max(1) as u32;
    (stats::stats(samples), cpu_per_trip)
}

/// A child process killed when dropped, also when a measurement panics.
pub(crate) struct Killed(Child);

impl Killed {
    /// `child`, killed when dropped.
    pub(crate) fn new(child: Child) -> Self {
        Killed(child)
    }

    pub(crate) fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `airlock serve --http 127.0.0.1:0` and the address it bound.
pub(crate) fn spawn_http(setup: &Setup, config: &Path) -> (Killed, String) {
    let log = setup.scratch.join(format!("http-{}.log", std::process::id()));
    let stderr = std::fs::File::create(&log).expect("log file");
    let child = airlock(setup, Some(config))
        .args(["serve", "--http", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .expect("airlock starts");
    let child = Killed(child);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        // Only a whole address: the line may be read while it is written.
        if let Some(rest) = text.split("on http://").nth(1)
            && let Some((addr, _)) = rest.split_once('/')
        {
            return (child, addr.to_owned());
        }
        assert!(Instant::now() < deadline, "airlock serve --http did not start: {text}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The plain rmcp echo server over streamable HTTP (`rmcp_echo --http`):
/// the floor for an MCP server on HTTP. Returns it and its address.
fn spawn_rmcp_http(setup: &Setup) -> (Killed, String) {
    let mut child = Command::new(&setup.rmcp_echo)
        .args(["--http", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("rmcp_echo starts (cargo build --release -p airlock-mcp --example rmcp_echo)");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("rmcp_echo's address");
    let addr = line.trim().trim_start_matches("listening on http://").trim_end_matches("/mcp").to_owned();
    (Killed(child), addr)
}

/// Item 3 over streamable HTTP against the server `child` at `addr`:
/// sequential round trips on one connection, with the server's CPU per
/// call, then 8 connections calling at once (calls/s).
fn http_round_trips(setup: &Setup, child: &Killed, addr: &str) -> (Stats, Duration, f64) {
    let mut client = Http::connect(addr);
    client.initialize();
    let n = setup.mcp_iterations / 2;
    for i in 0..n / 10 {
        client.call(i as u64 + 1);
    }
    let mut samples = Vec::with_capacity(n);
    let before = cpu_time(child.pid());
    for i in 0..n {
        let started = Instant::now();
        client.call(i as u64 + 1_000_000);
        samples.push(started.elapsed());
    }
    let cpu = cpu_time(child.pid()).saturating_sub(before) / n.max(1) as u32;
    let sequential = stats::stats(samples);
    let duration = Duration::from_secs_f64(setup.throughput_secs);
    let started = Instant::now();
    let deadline = started + duration;
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let addr = addr.to_owned();
            std::thread::spawn(move || {
                let mut client = Http::connect(&addr);
                client.initialize();
                let mut calls = 0u64;
                while Instant::now() < deadline {
                    calls += 1;
                    client.call(calls);
                }
                calls
            })
        })
        .collect();
    let total: u64 = threads.into_iter().map(|t| t.join().unwrap_or(0)).sum();
    (sequential, cpu, total as f64 / started.elapsed().as_secs_f64())
}

/// Item 4, one start: process start → the answer to `initialize`, and →
/// a `tools/list` that has all `want` tools. `serve` answers `initialize`
/// at once and loads its tools in the background; a list in its first
/// seconds waits for them, later ones are followed by `list_changed`.
/// `cache` replaces the warmed compile cache (an empty one: a first start).
fn start_once(setup: &Setup, config: Option<&Path>, want: usize, cache: Option<&Path>) -> (Duration, Duration) {
    let started = Instant::now();
    let mut command = airlock(setup, config);
    if let Some(cache) = cache {
        command.env("AIRLOCK_CACHE_DIR", cache);
    }
    let mut child = command
        .args(["serve", "--stdio"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("airlock starts");
    let mut server = StdioServer {
        stdin: child.stdin.take().expect("stdin"),
        stdout: BufReader::new(child.stdout.take().expect("stdout")),
        child,
        next_id: 1,
    };
    server.initialize();
    let initialized = started.elapsed();
    loop {
        let id = server.request("tools/list", json!({}));
        let listed = loop {
            let message = server.message();
            if message["id"] == id {
                break message["result"]["tools"].as_array().map_or(0, Vec::len);
            }
        };
        if listed >= want {
            return (initialized, started.elapsed());
        }
        while server.message()["method"] != "notifications/tools/list_changed" {}
    }
}

/// Item 4 with the warmed compile cache: (to `initialize`, to every tool
/// listed).
fn ready_time(setup: &Setup, config: Option<&Path>, want: usize) -> (Stats, Stats) {
    start_once(setup, config, want, None); // warm the compile cache
    let runs: Vec<_> = (0..setup.ready_iterations).map(|_| start_once(setup, config, want, None)).collect();
    (stats::stats(runs.iter().map(|r| r.0).collect()), stats::stats(runs.iter().map(|r| r.1).collect()))
}

/// 20 distinct tools: the compute guest with its name rewritten.
fn twenty_tools(setup: &Setup) -> PathBuf {
    let dir = setup.scratch.join("twenty");
    let _ = std::fs::create_dir_all(&dir);
    let bytes = std::fs::read(setup.test_guests.join("compute.wasm")).expect("compute.wasm (make guests)");
    let name = b"compute_sha256";
    let mut text = String::new();
    for i in 0..20 {
        let new_name = format!("compute_sha2{i:02}");
        let mut copy = bytes.clone();
        let mut found = 0;
        let mut at = 0;
        while let Some(offset) = copy[at..].windows(name.len()).position(|w| w == name) {
            copy[at + offset..at + offset + name.len()].copy_from_slice(new_name.as_bytes());
            at += offset + name.len();
            found += 1;
        }
        assert_eq!(found, 1, "the tool name should occur once in compute.wasm");
        let path = dir.join(format!("{new_name}.wasm"));
        std::fs::write(&path, copy).expect("write a variant");
        text.push_str(&format!(
            "[tools.{new_name}]\ncomponent = {:?}\nside_effect = false\nconcurrency_safe = true\n",
            path.display().to_string()
        ));
    }
    write_config(setup, "twenty.toml", &text)
}

/// Item 7: resident memory idle with the bundled tools, and while 64
/// calls are in flight.
fn memory(setup: &Setup) -> (u64, u64, u64, Duration) {
    let idle = {
        let mut server = StdioServer::spawn(setup, None);
        server.initialize();
        std::thread::sleep(Duration::from_millis(500));
        server.rss_kib().0
    };
    let config = write_config(
        setup,
        "sleepy.toml",
        &format!(
            "[tools.echo]\ncomponent = {:?}\nside_effect = false\nconcurrency_safe = true\n\
             [tools.hostile]\ncomponent = {:?}\nside_effect = false\nconcurrency_safe = true\ntimeout_ms = 10000\n",
            setup.guests.join("echo.wasm").display().to_string(),
            setup.test_guests.join("hostile.wasm").display().to_string()
        ),
    );
    let mut server = StdioServer::spawn(setup, Some(&config));
    server.initialize();
    std::thread::sleep(Duration::from_millis(300));
    let before = server.rss_kib().0;
    let started = Instant::now();
    for _ in 0..64 {
        server.call("hostile", json!({"attack": "sleep", "ms": 1000}));
    }
    // Sample while the calls sleep, then collect the answers.
    let mut peak = 0;
    while started.elapsed() < Duration::from_millis(900) {
        peak = peak.max(server.rss_kib().0);
        std::thread::sleep(Duration::from_millis(10));
    }
    for _ in 0..64 {
        assert_ok(&server.response());
    }
    (idle, before, peak, started.elapsed())
}

/// Runs the process-level items and adds their sections to `report`.
pub fn run(setup: &Setup, report: &mut Report) {
    let config = echo_config(setup);
    let (floor, floor_cpu) = pipe_floor(setup);
    let servers = mcp_stdio(setup, &config);
    let (http, http_cpu, http_rate) = {
        let (child, addr) = spawn_http(setup, &config);
        http_round_trips(setup, &child, &addr)
    };
    let (rmcp_http, rmcp_http_cpu, rmcp_http_rate) = {
        let (child, addr) = spawn_rmcp_http(setup);
        http_round_trips(setup, &child, &addr)
    };
    let figures = |name: &str| servers.iter().find(|(n, _)| *n == name).map(|(_, f)| f).expect("measured");
    let (airlock, rmcp, python) = (figures("airlock"), figures("rmcp"), figures("python"));
    let (stdio, stdio_rate, batches, stdio_cpu) =
        (&airlock.sequential, airlock.rate, &airlock.batches, airlock.cpu_per_call);
    let mut s = format!(
        "## 3. MCP `tools/call` round trip (`airlock serve`, `echo`, audit flush)\n\n{HEADER_US}\n{}\n{}\n{}\n{}\n{}\n\n",
        row_us("the floor: the same lines echoed by `cat` (no server)", &floor),
        row_us("stdio, raw JSON-RPC client, one call at a time", stdio),
        row_us("stdio, 8 calls in flight (time for all 8)", batches),
        row_us("streamable HTTP, raw HTTP/1.1 keep-alive client, one call at a time", &http),
        row_us(
            "the floor for HTTP: plain `rmcp` echo server on rmcp's streamable HTTP service (no sandbox), the same client",
            &rmcp_http
        ),
    );
    s += &format!(
        "| transport | calls/s |\n|---|---|\n| stdio, 1 in flight | {:.0} |\n| stdio, 8 in flight | {stdio_rate:.0} |\n\
         | HTTP, 1 in flight | {:.0} |\n| HTTP, 8 connections in flight | {http_rate:.0} |\n\
         | HTTP floor (plain rmcp), 1 in flight | {:.0} |\n| HTTP floor (plain rmcp), 8 connections in flight | \
         {rmcp_http_rate:.0} |\n\n",
        1.0 / stdio.mean.as_secs_f64(),
        1.0 / http.mean.as_secs_f64(),
        1.0 / rmcp_http.mean.as_secs_f64(),
    );
    s += &format!(
        "Server CPU (its threads' run time, from /proc) per call, one at a time: stdio **{} µs** (`cat`'s per \
         line, the floor: {} µs); HTTP **{} µs** (the plain rmcp server's: {} µs).\n\n",
        us(stdio_cpu),
        us(floor_cpu),
        us(http_cpu),
        us(rmcp_http_cpu),
    );
    s += &format!(
        "HTTP p50 over the plain rmcp HTTP server's: {:.2} ×; over Airlock's own stdio p50: {:.2} ×.\n\n",
        http.p50.as_secs_f64() / rmcp_http.p50.as_secs_f64(),
        http.p50.as_secs_f64() / stdio.p50.as_secs_f64(),
    );
    s += &peers_table(
        &[
            ("Airlock, `echo`, audit on", airlock),
            ("plain `rmcp` 3.11 echo server on `stdio_pipes()` (no sandbox: the floor)", rmcp),
            ("official MCP Python SDK `MCPServer` echo", python),
        ],
        rmcp,
    );
    report.figure("stdio_over_rmcp_p50", stdio.p50.as_secs_f64() / rmcp.sequential.p50.as_secs_f64());
    report.figure(
        "stdio_over_rmcp_cpu",
        stdio_cpu.as_secs_f64() / rmcp.cpu_per_call.as_secs_f64().max(f64::MIN_POSITIVE),
    );
    report.figure("stdio_8_over_rmcp", stdio_rate / rmcp.rate);
    report.figure("stdio_p50_us", stdio.p50.as_secs_f64() * 1e6);
    report.figure("pipe_floor_p50_us", floor.p50.as_secs_f64() * 1e6);
    report.figure("stdio_cpu_us", stdio_cpu.as_secs_f64() * 1e6);
    report.figure("stdio_8_calls_s", stdio_rate);
    report.figure("http_p50_us", http.p50.as_secs_f64() * 1e6);
    report.figure("http_over_stdio_p50", http.p50.as_secs_f64() / stdio.p50.as_secs_f64());
    report.figure("http_over_stdio_cpu", http_cpu.as_secs_f64() / stdio_cpu.as_secs_f64().max(f64::MIN_POSITIVE));
    report.figure("http_8_over_stdio_8", http_rate / stdio_rate);

    let one = write_config(
        setup,
        "one.toml",
        &format!(
            "[tools.echo]\ncomponent = {:?}\nside_effect = false\nconcurrency_safe = true\n",
            setup.guests.join("echo.wasm").display().to_string()
        ),
    );
    let bundled = std::fs::read_dir(&setup.guests)
        .map(|d| d.filter_map(|e| e.ok()).filter(|e| e.path().extension().is_some_and(|x| x == "wasm")).count())
        .unwrap_or_default();
    let (init_one, ready_one) = ready_time(setup, Some(&one), 1);
    let (init_bundled, ready_bundled) = ready_time(setup, None, bundled);
    let twenty = twenty_tools(setup);
    let (_, ready_twenty) = ready_time(setup, Some(&twenty), 20);
    // A first start: an empty compile cache, every component compiled.
    let empty = setup.scratch.join("empty-cache");
    let _ = std::fs::remove_dir_all(&empty);
    let (cold_init, cold_ready) = start_once(setup, None, bundled, Some(&empty));
    // The same with Cranelift only (`[engine] baseline_compile = false`):
    // every tool waits for its optimized build.
    let cranelift = write_config(
        setup,
        "cranelift.toml",
        &format!("tool_dirs = [{:?}]\n[engine]\nbaseline_compile = false\n", setup.guests.display().to_string()),
    );
    let _ = std::fs::remove_dir_all(&empty);
    let (_, cranelift_ready) = start_once(setup, Some(&cranelift), bundled, Some(&empty));
    let _ = std::fs::remove_dir_all(&empty);
    let one_run = |d: Duration| stats::stats(vec![d]);
    report.startup = format!(
        "Process start → answer to `initialize`, and → a `tools/list` with every tool (`airlock serve --stdio`; \
         `initialize` is answered at once, the tools load in the background, in parallel, each read in a fresh \
         instance; warmed cache unless said; on an empty cache each tool is served by its baseline (Winch) \
         build until its optimized (Cranelift) one replaces it, unless `baseline_compile = false`):\n\n\
         {HEADER_MS}\n{}\n{}\n{}\n{}\n{}\n{}\n{}\n{}\n\n",
        row_ms("`initialize`, 1 cached tool (echo)", &init_one),
        row_ms("every tool listed, 1 cached tool (echo)", &ready_one),
        row_ms(&format!("`initialize`, bundled tools ({bundled})"), &init_bundled),
        row_ms(&format!("every tool listed, bundled tools ({bundled})"), &ready_bundled),
        row_ms("every tool listed, 20 tools (compute guest under 20 names)", &ready_twenty),
        row_ms("`initialize`, bundled tools, empty cache (1 run)", &one_run(cold_init)),
        row_ms("every tool listed, bundled tools, empty cache, Winch first (1 run)", &one_run(cold_ready)),
        row_ms("every tool listed, bundled tools, empty cache, Cranelift only (1 run)", &one_run(cranelift_ready)),
    );
    report.figure("ready_one_ms", ready_one.p50.as_secs_f64() * 1e3);
    report.figure("ready_twenty_ms", ready_twenty.p50.as_secs_f64() * 1e3);
    report.figure("ready_bundled_ms", ready_bundled.p50.as_secs_f64() * 1e3);
    report.figure("cold_init_ms", cold_init.as_secs_f64() * 1e3);
    report.figure("cold_ready_ms", cold_ready.as_secs_f64() * 1e3);
    report.figure("cold_ready_cranelift_ms", cranelift_ready.as_secs_f64() * 1e3);

    let (idle, before, peak, took) = memory(setup);
    s += &format!(
        "## 7. Resident memory of `airlock serve --stdio`\n\n| state | VmRSS MiB |\n|---|---|\n\
         | idle, bundled tools loaded | {:.1} |\n| idle, echo + hostile loaded | {:.1} |\n\
         | 64 calls in flight (hostile `sleep` 1 s, peak of 10 ms samples) | {:.1} |\n\n\
         The 64 sleeping calls all returned after {:.2} s (they ran concurrently).\n\n",
        idle as f64 / 1024.0,
        before as f64 / 1024.0,
        peak as f64 / 1024.0,
        took.as_secs_f64()
    );
    report.section(s);
}
