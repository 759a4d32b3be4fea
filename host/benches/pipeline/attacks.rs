//! Item 9: what each attack on the host's own resources costs the host.
//!
//! Every attack runs against the built `airlock` binary (`serve --stdio`,
//! `serve --http` or `tools`), while a sampler thread reads the server's
//! resident memory (`/proc/PID/status` VmRSS) and open descriptors
//! (`/proc/PID/fd`) every 2 ms. The table gives both before the attack, at
//! its peak and after it, and the time from the attack's start to the
//! error that ended it.

use crate::process::{StdioServer, spawn_http, write_config};
use crate::{Report, Setup};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::fd::AsFd as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Memory (KiB) and descriptors of a process at one moment.
#[derive(Clone, Copy, Default)]
struct Usage {
    rss_kib: u64,
    fds: usize,
}

fn usage(pid: u32) -> Usage {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let rss_kib = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).map(|d| d.count()).unwrap_or(0);
    Usage { rss_kib, fds }
}

/// Samples a process until stopped; returns the peaks.
struct Sampler {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Usage>,
}

impl Sampler {
    fn start(pid: u32) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            let mut peak = Usage::default();
            while !flag.load(Ordering::Relaxed) {
                let now = usage(pid);
                peak.rss_kib = peak.rss_kib.max(now.rss_kib);
                peak.fds = peak.fds.max(now.fds);
                std::thread::sleep(Duration::from_millis(2));
            }
            peak
        });
        Self { stop, handle }
    }

    fn finish(self) -> Usage {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().unwrap_or_default()
    }
}

/// One row of the table.
struct Row {
    attack: String,
    outcome: String,
    before: Usage,
    peak: Usage,
    after: Usage,
    to_error: Duration,
}

fn row(row: &Row) -> String {
    let mib = |kib: u64| kib as f64 / 1024.0;
    format!(
        "| {} | {} | {:.1} / {:.1} / {:.1} | {} / {} / {} | {:.1} |",
        row.attack,
        row.outcome,
        mib(row.before.rss_kib),
        mib(row.peak.rss_kib),
        mib(row.after.rss_kib),
        row.before.fds,
        row.peak.fds,
        row.after.fds,
        row.to_error.as_secs_f64() * 1e3
    )
}

/// The outcome of a `tools/call` reply: `ok`, the error kind the host put
/// in `_meta` or `structuredContent`, or the start of the text.
fn outcome(reply: &Value) -> String {
    let result = &reply["result"];
    if result.get("isError") != Some(&Value::Bool(true)) {
        // `host_hog` reports how far it got and what the host refused.
        let report = &result["structuredContent"];
        return match (report.get("created"), report.get("error").and_then(Value::as_str)) {
            (Some(created), Some(error)) => {
                let error: String = error.chars().take(60).collect();
                format!("refused after {created}: {error}")
            }
            _ => "ok".to_owned(),
        };
    }
    let kind = result
        .pointer("/_meta/airlock~1kind")
        .or_else(|| result.pointer("/structuredContent/kind"))
        .and_then(Value::as_str);
    match kind {
        Some(kind) => kind.to_owned(),
        None => {
            let text = result.pointer("/content/0/text").and_then(Value::as_str).unwrap_or("error");
            text.chars().take(40).collect()
        }
    }
}

fn fixture_config(setup: &Setup, name: &str, text: &str) -> std::path::PathBuf {
    let cache = setup.cache.display().to_string();
    write_config(setup, name, &format!("[engine]\ncache_dir = {cache:?}\n{text}"))
}

/// A `tools/call` attack over stdio, with a harmless call after it to
/// show the server still serves.
fn stdio_attack(setup: &Setup, attack: &str, config: &str, tool: &str, arguments: Value) -> Row {
    let config = fixture_config(setup, "attack.toml", config);
    let mut server = StdioServer::spawn(setup, Some(&config));
    server.initialize();
    let pid = server.pid();
    let before = usage(pid);
    let sampler = Sampler::start(pid);
    let started = Instant::now();
    server.call(tool, arguments);
    let reply = server.response();
    let to_error = started.elapsed();
    std::thread::sleep(Duration::from_millis(50));
    let peak = sampler.finish();
    let after = usage(pid);
    Row { attack: attack.to_owned(), outcome: outcome(&reply), before, peak, after, to_error }
}

/// A stdio client that writes `count` requests and reads nothing until
/// they are all written (or the server stops reading), then reads every
/// reply.
fn stdio_flood(setup: &Setup, count: usize) -> Row {
    let config = fixture_config(
        setup,
        "flood.toml",
        &format!(
            "[tools.echo]\ncomponent = {:?}\nside_effect = false\nconcurrency_safe = true\n",
            setup.guests.join("echo.wasm").display().to_string()
        ),
    );
    let mut server = StdioServer::spawn(setup, Some(&config));
    server.initialize();
    let pid = server.pid();
    let before = usage(pid);
    let sampler = Sampler::start(pid);
    let started = Instant::now();
    let text = "x".repeat(500);
    // The writer runs on its own thread: when the server stops reading, it
    // blocks there, and replies are read here once the flood has gone out
    // or stalled.
    let mut lines = String::new();
    for id in 0..count {
        let request = json!({"jsonrpc": "2.0", "id": 1_000_000 + id, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": text}}});
        lines.push_str(&request.to_string());
        lines.push('\n');
    }
    let mut stdin = std::fs::File::from(server.stdin().as_fd().try_clone_to_owned().expect("a second stdin handle"));
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(lines.as_bytes());
        let _ = stdin.flush();
    });
    std::thread::sleep(Duration::from_secs(2));
    let stalled = sampler.finish();
    let mut answered = 0;
    while answered < count {
        let reply = server.response();
        if reply["id"].as_u64().is_some_and(|id| id >= 1_000_000) {
            answered += 1;
        }
    }
    let _ = writer.join();
    let to_error = started.elapsed();
    let after = usage(pid);
    Row {
        attack: format!("stdio client writes {count} calls without reading for 2 s"),
        outcome: format!("all {answered} answered once read"),
        before,
        peak: stalled,
        after,
        to_error,
    }
}

/// `count` HTTP connections that send half a request line and never finish.
fn half_open(setup: &Setup, count: usize) -> Row {
    let config = fixture_config(
        setup,
        "half-open.toml",
        &format!(
            "[tools.echo]\ncomponent = {:?}\nside_effect = false\nconcurrency_safe = true\n",
            setup.guests.join("echo.wasm").display().to_string()
        ),
    );
    let (server, addr) = spawn_http(setup, &config);
    let pid = server.pid();
    let before = usage(pid);
    let sampler = Sampler::start(pid);
    let started = Instant::now();
    // The attacker connects from 127.0.0.2, the normal client below from
    // 127.0.0.1: the per-peer cap keeps one from crowding out the other.
    let mut held = Vec::new();
    for _ in 0..count {
        if let Some(mut stream) = connect_from([127, 0, 0, 2], &addr) {
            let _ = stream.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n");
            held.push(stream);
        }
    }
    // A normal client is still served while they are held.
    let served = initialize_over_http(&addr);
    // Wait (bounded) until the server has closed every half-open one.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut open = held.len();
    for stream in &mut held {
        let _ = stream
            .set_read_timeout(Some(deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1))));
        let mut byte = [0u8; 512];
        loop {
            match stream.read(&mut byte) {
                Ok(0) => {
                    open -= 1;
                    break;
                }
                Ok(_) => continue,
                // A connection closed at once with data unread is reset.
                Err(err) if err.kind() == std::io::ErrorKind::ConnectionReset => {
                    open -= 1;
                    break;
                }
                Err(_) => break,
            }
        }
    }
    let to_error = started.elapsed();
    let peak = sampler.finish();
    let after = usage(pid);
    drop(held);
    Row {
        attack: format!("{count} half-open HTTP connections from one address"),
        outcome: format!("{} closed by the server, {open} still open; a normal client {served}", count - open),
        before,
        peak,
        after,
        to_error,
    }
}

/// A TCP connection to `addr` from the loopback address `from`.
fn connect_from(from: [u8; 4], addr: &str) -> Option<TcpStream> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_io().build().ok()?;
    let target: std::net::SocketAddr = addr.parse().ok()?;
    let stream = runtime.block_on(async {
        let socket = tokio::net::TcpSocket::new_v4().ok()?;
        socket.bind(std::net::SocketAddr::from((from, 0))).ok()?;
        socket.connect(target).await.ok()
    })?;
    let stream = stream.into_std().ok()?;
    stream.set_nonblocking(false).ok()?;
    Some(stream)
}

fn initialize_over_http(addr: &str) -> &'static str {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
        "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}})
    .to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let Ok(mut stream) = TcpStream::connect(addr) else { return "could not connect" };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    if stream.write_all(request.as_bytes()).is_err() {
        return "could not send";
    }
    let mut status = String::new();
    let _ = BufReader::new(stream).read_line(&mut status);
    if status.contains(" 200 ") { "was served" } else { "was refused" }
}

pub fn run(setup: &Setup, report: &mut Report) {
    let hog = setup.test_guests.join("host_hog.wasm").display().to_string();
    let data = setup.scratch.join("attack-data");
    let _ = std::fs::create_dir_all(&data);
    let _ = std::fs::write(data.join("f"), "x");
    let data = data.display().to_string();
    let hog_config = |extra: &str| {
        format!(
            "[tools.host_hog]\ncomponent = {hog:?}\nside_effect = false\nmemory_mib = 64\ntimeout_ms = 60000\n\
             dirs = [{{ host = {data:?}, guest = \"/data\" }}]\n{extra}"
        )
    };
    let mut rows = Vec::new();
    let hog_attacks = [
        ("6000 unsent HTTP requests, 1 MiB body each", json!({"mode": "http_hoard", "count": 6000})),
        ("the same file opened 20 000 times", json!({"mode": "fd_hog", "count": 20000, "path": "/data/f"})),
        ("1 GiB of random bytes in one request", json!({"mode": "random_hog", "bytes": 1u64 << 30})),
        ("100 000 header maps of 12 KiB", json!({"mode": "table_hog", "count": 100000})),
    ];
    for (attack, arguments) in hog_attacks {
        rows.push(stdio_attack(setup, attack, &hog_config(""), "host_hog", arguments));
    }
    // Schemas are evaluated in the metered validator: each attack ends at
    // the call's deadline or at `validation_memory_mib`.
    let bomb = setup.test_guests.join("schema_bomb.wasm").display().to_string();
    rows.push(stdio_attack(
        setup,
        "parameters schema with $refs fanning out 2^30, deadline 2 s",
        &format!("[tools.schema_bomb]\ncomponent = {bomb:?}\nside_effect = false\ntimeout_ms = 2000\n"),
        "schema_bomb",
        json!({}),
    ));
    let copy = setup.test_guests.join("schema_copy.wasm").display().to_string();
    let copy_config = format!("[tools.schema_copy]\ncomponent = {copy:?}\nside_effect = false\n");
    rows.push(stdio_attack(
        setup,
        "60 KB of arguments whose errors copy a 200 KB subschema each",
        &copy_config,
        "schema_copy",
        json!({"data": vec![0; 30_000]}),
    ));
    rows.push(stdio_attack(
        setup,
        "a result of 30 000 items whose errors copy a 200 KB subschema each",
        &copy_config,
        "schema_copy",
        json!({"n": 30_000}),
    ));
    let heavy = setup.test_guests.join("schema_heavy.wasm").display().to_string();
    let items: Vec<u32> = (0..100_000).collect();
    rows.push(stdio_attack(
        setup,
        "100 000 items against a schema of 2^9 evaluations per item",
        &format!("[tools.schema_heavy]\ncomponent = {heavy:?}\nside_effect = false\ntimeout_ms = 60000\n"),
        "schema_heavy",
        json!({"data": items}),
    ));
    rows.push(stdio_flood(setup, 20_000));
    rows.push(half_open(setup, 300));
    let mut s = "## 9. Attacks on the host's own resources\n\nEach attack against the built binary (`airlock serve --stdio`, \
                 `serve --http` or `tools`), sampled every 2 ms: the server's resident memory and open descriptors \
                 before the attack, at its peak and after it, and the time from the attack's start to the error \
                 that ended it (for the flood: until every reply was read; for half-open connections: until the \
                 server closed them).\n\n| attack | outcome | RSS MiB before / peak / after | fds before / peak / after | to error, ms |\n|---|---|---|---|---|\n"
        .to_owned();
    for r in &rows {
        s.push_str(&row(r));
        s.push('\n');
    }
    report.section(s);
}
