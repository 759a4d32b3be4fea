//! Item 9: what each attack on the host's own resources costs the host.
//!
//! Every attack runs against the built `airlock` binary (`serve --stdio`,
//! `serve --http` or `tools`), while a sampler thread reads the server's
//! resident memory (`/proc/PID/status` VmRSS) and open descriptors
//! (`/proc/PID/fd`) every 2 ms. The table gives both before the attack, at
//! its peak and after it, the CPU time the server (and the children it
//! waited for, such as the compiler) spent during the attack, and the time
//! from the attack's start to the error that ended it.
//!
//! The compile bombs are in `attacks/compile.rs`, the memory floods in
//! `attacks/memory.rs` (in a memory cgroup made by
//! `tests/integration/cgroup.rs`, which the memory budget tests share).

#[path = "../../../../tests/integration/cgroup.rs"]
mod cgroup;
#[path = "../../../../tests/integration/hostile_wasm.rs"]
mod hostile_wasm;
#[path = "../../../../tests/integration/jwt_keys.rs"]
#[allow(dead_code)] // the bench signs with Ed25519 only
mod jwt_keys;
mod compile;
mod memory;

use crate::process::{Http, StdioServer, spawn_http, write_config};
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

/// CPU time (user + system) of a process and of the children it has
/// waited for, from `/proc/PID/stat`.
fn cpu(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces) in parentheses:
    // utime, stime, cutime and cstime are the 12th to 15th of them.
    let rest = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("");
    let ticks: u64 = rest.split_whitespace().skip(11).take(4).filter_map(|f| f.parse::<u64>().ok()).sum();
    // SAFETY: sysconf has no preconditions.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Duration::from_secs_f64(ticks as f64 / per_second as f64)
}

/// CPU time of this process's children that have been waited for.
fn children_cpu() -> Duration {
    // SAFETY: getrusage writes into the struct it is given.
    let usage = unsafe {
        let mut usage = std::mem::zeroed::<libc::rusage>();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage);
        usage
    };
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    time(usage.ru_utime) + time(usage.ru_stime)
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
    cpu: Duration,
    to_error: Duration,
}

fn row(row: &Row) -> String {
    let mib = |kib: u64| kib as f64 / 1024.0;
    format!(
        "| {} | {} | {:.1} / {:.1} / {:.1} | {} / {} / {} | {:.0} | {:.1} |",
        row.attack,
        row.outcome,
        mib(row.before.rss_kib),
        mib(row.peak.rss_kib),
        mib(row.after.rss_kib),
        row.before.fds,
        row.peak.fds,
        row.after.fds,
        row.cpu.as_secs_f64() * 1e3,
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

/// A `tools/call` attack over stdio; the row's outcome is [`outcome`].
fn stdio_attack(setup: &Setup, attack: &str, config: &str, tool: &str, arguments: Value) -> Row {
    let (row, reply) = stdio_call(setup, attack, config, tool, arguments);
    Row { outcome: outcome(&reply), ..row }
}

/// A `tools/call` attack over stdio: the row (its outcome left empty) and
/// the reply.
fn stdio_call(setup: &Setup, attack: &str, config: &str, tool: &str, arguments: Value) -> (Row, Value) {
    stdio_call_after(setup, attack, config, tool, arguments, || {})
}

/// [`stdio_call`], with `started` run once the server has answered
/// `initialize` and before the call.
fn stdio_call_after(
    setup: &Setup,
    attack: &str,
    config: &str,
    tool: &str,
    arguments: Value,
    started: impl FnOnce(),
) -> (Row, Value) {
    let config = fixture_config(setup, "attack.toml", config);
    let mut server = StdioServer::spawn(setup, Some(&config));
    server.initialize();
    started();
    let pid = server.pid();
    let before = usage(pid);
    let cpu_before = cpu(pid);
    let sampler = Sampler::start(pid);
    let started = Instant::now();
    server.call(tool, arguments);
    let reply = server.response();
    let to_error = started.elapsed();
    let cpu = cpu(pid).saturating_sub(cpu_before);
    std::thread::sleep(Duration::from_millis(50));
    let peak = sampler.finish();
    let after = usage(pid);
    (Row { attack: attack.to_owned(), outcome: String::new(), before, peak, after, cpu, to_error }, reply)
}

/// `host_hog` with a read-write grant and the default `max_write_bytes`
/// and `max_created_files`: what it got onto the disk.
fn disk_attacks(setup: &Setup) -> Vec<Row> {
    let hog = setup.test_guests.join("host_hog.wasm").display().to_string();
    let mut rows = Vec::new();
    let attacks = [
        ("write 10 GiB into a granted directory", json!({"mode": "disk_fill", "bytes": 10u64 << 30})),
        ("stream 10 GiB into a granted directory", json!({"mode": "stream_fill", "bytes": 10u64 << 30})),
        ("create 100 000 files in a granted directory", json!({"mode": "file_spam", "count": 100_000})),
    ];
    for (attack, arguments) in attacks {
        let work = setup.scratch.join("attack-disk");
        let _ = std::fs::remove_dir_all(&work);
        std::fs::create_dir_all(&work).expect("scratch dir");
        let config = format!(
            "[tools.host_hog]\ncomponent = {hog:?}\nside_effect = false\ntimeout_ms = 120000\nfuel = 10000000000000\n\
             dirs = [{{ host = {:?}, guest = \"/data\", access = \"rw\" }}]\n",
            work.display().to_string()
        );
        let (row, reply) = stdio_call(setup, attack, &config, "host_hog", arguments);
        let (files, bytes) = std::fs::read_dir(&work)
            .map(|d| {
                d.flatten().fold((0u64, 0u64), |(n, b), e| (n + 1, b + e.metadata().map(|m| m.len()).unwrap_or(0)))
            })
            .unwrap_or((0, 0));
        let report = &reply["result"]["structuredContent"];
        // The guest reports the error as wasi's debug text: `… name: "quota", …`.
        let error = report["error"].as_str().unwrap_or("no error");
        let error = error.split("name: \"").nth(1).and_then(|rest| rest.split('"').next()).unwrap_or(error);
        rows.push(Row {
            outcome: format!("guest saw {error}; on disk: {files} files, {:.1} MiB", bytes as f64 / 1048576.0),
            ..row
        });
        let _ = std::fs::remove_dir_all(&work);
    }
    rows
}

/// `write_file` (a tool with side effects, allowed by policy) while the
/// audit log cannot be written: made immutable (`chattr +i`) once the
/// server has started, so that every write fails (EPERM) through the
/// descriptor it holds, as writes on a full disk fail (ENOSPC). A link to
/// `/dev/full` is refused at start: the log must be a regular file.
fn full_audit_log(setup: &Setup) -> Row {
    let dir = setup.scratch.join("attack-audit");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("work")).expect("scratch dir");
    let audit = dir.join("audit.jsonl");
    let policy = dir.join("policy.cedar");
    std::fs::write(&policy, "permit(principal, action, resource);\n").expect("policy");
    let config = format!(
        "[tools.write_file]\ncomponent = {:?}\nside_effect = true\n\
         dirs = [{{ host = {:?}, guest = \"/work\", access = \"rw\" }}]\n\
         [policy]\npolicies = {:?}\n[audit]\nfile = {:?}\n",
        setup.guests.join("write_file.wasm").display().to_string(),
        dir.join("work").display().to_string(),
        policy.display().to_string(),
        audit.display().to_string()
    );
    let chattr =
        |flag: &str| std::process::Command::new("chattr").arg(flag).arg(&audit).status().is_ok_and(|s| s.success());
    let mut sealed = false;
    let (row, reply) = stdio_call_after(
        setup,
        "write_file with an audit log that cannot be written",
        &config,
        "write_file",
        json!({"path": "/work/a.txt", "content": "hello"}),
        || sealed = chattr("+i"),
    );
    if sealed {
        chattr("-i");
    }
    let written = if dir.join("work/a.txt").exists() { "the file was written" } else { "nothing written" };
    let said = if sealed {
        format!("{}, {written}", outcome(&reply))
    } else {
        "not measured: `chattr +i` is not possible here (it needs root)".to_owned()
    };
    let row = Row { outcome: said, ..row };
    let _ = std::fs::remove_dir_all(&dir);
    row
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
    let cpu_before = cpu(pid);
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
    let cpu = cpu(pid).saturating_sub(cpu_before);
    let after = usage(pid);
    Row {
        attack: format!("stdio client writes {count} calls without reading for 2 s"),
        outcome: format!("all {answered} answered once read"),
        before,
        peak: stalled,
        after,
        cpu,
        to_error,
    }
}

/// `count` HTTP connections without a token that send half a request line
/// and never finish, all from the address of a client with a token (as
/// every client is on loopback or behind a load balancer), which meanwhile
/// makes `calls` requests, each on a connection of its own.
fn half_open(setup: &Setup, count: usize, calls: usize) -> Row {
    const TOKEN: &str = "bench-token-0123456789";
    let config = fixture_config(
        setup,
        "half-open.toml",
        &format!(
            "[[http.tokens]]\ntoken = {TOKEN:?}\nprincipal = \"alice\"\n\
             [tools.echo]\ncomponent = {:?}\nside_effect = false\nconcurrency_safe = true\n",
            setup.guests.join("echo.wasm").display().to_string()
        ),
    );
    let (server, addr) = spawn_http(setup, &config);
    let pid = server.pid();
    let before = usage(pid);
    let cpu_before = cpu(pid);
    let sampler = Sampler::start(pid);
    let started = Instant::now();
    let mut held = Vec::new();
    for _ in 0..count {
        if let Some(mut stream) = connect_from([127, 0, 0, 1], &addr) {
            let _ = stream.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n");
            held.push(stream);
        }
    }
    // The client with a token, while they are held.
    let served = (0..calls).filter(|_| initialize_over_http(&addr, Some(TOKEN)) == "was served").count();
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
    let cpu = cpu(pid).saturating_sub(cpu_before);
    let peak = sampler.finish();
    let after = usage(pid);
    drop(held);
    Row {
        attack: format!("{count} half-open HTTP connections without a token, from the address of a client with one"),
        outcome: format!(
            "{} closed by the server, {open} still open; the client with a token was served {served} of {calls} times",
            count - open
        ),
        before,
        peak,
        after,
        cpu,
        to_error,
    }
}

/// Tokens against a key server that holds every fetch after the first
/// (`jwks_fetch_timeout_secs = 120`): a token with a random `kid` starts a
/// fetch, and `calls` requests with a known key are made while it is held.
fn held_key_fetch(setup: &Setup, calls: usize) -> Row {
    const ISSUER: &str = "https://idp.test";
    const AUDIENCE: &str = "https://airlock.test/mcp";
    let known = jwt_keys::ed25519("k1");
    let (idp, arrivals, release) = jwt_keys::slow_jwks_server(jwt_keys::jwks(&[&known]));
    let config = fixture_config(
        setup,
        "jwks.toml",
        &format!(
            "[http.jwt]\nissuer = {ISSUER:?}\naudience = {AUDIENCE:?}\njwks_url = \"http://{idp}/jwks.json\"\n\
             jwks_min_refresh_seconds = 1\njwks_fetch_timeout_secs = 120\n\
             [tools.echo]\ncomponent = {:?}\nside_effect = false\n",
            setup.guests.join("echo.wasm").display().to_string()
        ),
    );
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let claims = json!({"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "exp": now + 600, "iat": now});
    let good = jwt_keys::sign(&known, "k1", &claims);
    let random = jwt_keys::sign(&known, "random-kid", &claims);
    let (server, addr) = spawn_http(setup, &config);
    let pid = server.pid();
    let _ = initialize_over_http(&addr, Some(&good));
    let _ = arrivals.recv_timeout(Duration::from_secs(60));
    // Past jwks_min_refresh_seconds, an unknown kid may start a fetch.
    std::thread::sleep(Duration::from_millis(1100));
    let before = usage(pid);
    let cpu_before = cpu(pid);
    let sampler = Sampler::start(pid);
    let started = Instant::now();
    let unknown = {
        let addr = addr.clone();
        std::thread::spawn(move || {
            let answer = initialize_over_http(&addr, Some(&random));
            (answer, started.elapsed())
        })
    };
    let fetching = arrivals.recv_timeout(Duration::from_secs(60)).is_ok();
    let mut slowest = Duration::ZERO;
    let mut served = 0;
    for _ in 0..calls {
        let call = Instant::now();
        if initialize_over_http(&addr, Some(&good)) == "was served" {
            served += 1;
        }
        slowest = slowest.max(call.elapsed());
    }
    let (answer, to_error) = unknown.join().unwrap_or(("did not finish", Duration::ZERO));
    let cpu = cpu(pid).saturating_sub(cpu_before);
    let peak = sampler.finish();
    let after = usage(pid);
    drop(release);
    Row {
        attack: "a token with a random kid while the key server holds the fetch for 120 s".to_owned(),
        outcome: format!(
            "the random kid {answer}{}; meanwhile {served} of {calls} requests with a known key were served, \
             the slowest in {:.1} ms",
            if fetching { "" } else { " (no fetch started)" },
            slowest.as_secs_f64() * 1e3
        ),
        before,
        peak,
        after,
        cpu,
        to_error,
    }
}

/// Two principals over HTTP open every `run_js` session `max_live` allows
/// (8, with `[quotas] sessions_per_tool = 4`), then a third asks for one.
fn held_sessions(setup: &Setup) -> Row {
    let principals = ["alice", "bob", "carol"];
    let tokens: String = principals
        .iter()
        .map(|p| format!("[[http.tokens]]\ntoken = \"bench-token-{p}-0123456789\"\nprincipal = {p:?}\n"))
        .collect();
    let config = fixture_config(
        setup,
        "sessions.toml",
        &format!(
            "{tokens}[tools.run_js]\ncomponent = {:?}\nside_effect = false\nconcurrency_safe = true\n\
             timeout_ms = 5000\n[tools.run_js.sessions]\nmax_live = 8\nidle_secs = 600\n\
             [quotas]\nsessions_per_tool = 4\n",
            setup.guests.join("run_js.wasm").display().to_string()
        ),
    );
    let (server, addr) = spawn_http(setup, &config);
    let pid = server.pid();
    let run = |client: &mut Http, id: u64, session: &str| -> String {
        let (_, messages) = client.post(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "run_js", "arguments": {"code": "globalThis.x = 7; 1", "session": session}}}));
        messages.iter().find(|m| m["id"] == id).map_or_else(|| "no answer".to_owned(), outcome)
    };
    let mut clients: Vec<Http> =
        principals.iter().map(|p| Http::with_token(&addr, &format!("bench-token-{p}-0123456789"))).collect();
    for client in &mut clients {
        client.initialize();
    }
    let mut opened = 0;
    for client in clients.iter_mut().take(2) {
        for n in 0..4u64 {
            if run(client, 10 + n, &format!("s{n}")) == "ok" {
                opened += 1;
            }
        }
    }
    let before = usage(pid);
    let cpu_before = cpu(pid);
    let sampler = Sampler::start(pid);
    let started = Instant::now();
    let third = clients.get_mut(2).map_or_else(|| "no client".to_owned(), |carol| run(carol, 99, "s1"));
    let to_error = started.elapsed();
    let cpu = cpu(pid).saturating_sub(cpu_before);
    let peak = sampler.finish();
    let after = usage(pid);
    Row {
        attack: "two principals hold all 8 run_js sessions (max_live = 8, 4 each); a third asks for one".to_owned(),
        outcome: format!("{opened} sessions opened; the third principal's call: {third}"),
        before,
        peak,
        after,
        cpu,
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

fn initialize_over_http(addr: &str, token: Option<&str>) -> &'static str {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
        "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}})
    .to_string();
    let authorization = token.map(|token| format!("Authorization: Bearer {token}\r\n")).unwrap_or_default();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         {authorization}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let Ok(mut stream) = TcpStream::connect(addr) else { return "could not connect" };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    if stream.write_all(request.as_bytes()).is_err() {
        return "could not send";
    }
    let mut status = String::new();
    let _ = BufReader::new(stream).read_line(&mut status);
    if status.contains(" 200 ") {
        "was served"
    } else if status.contains(" 503 ") {
        "was answered 503"
    } else {
        "was refused"
    }
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
    // Just under the policy's cap on argument values (100 000), so the
    // call is validated in full and then runs.
    let items: Vec<u32> = (0..99_000).collect();
    rows.push(stdio_attack(
        setup,
        "99 000 items against a schema of 2^9 evaluations per item",
        &format!("[tools.schema_heavy]\ncomponent = {heavy:?}\nside_effect = false\ntimeout_ms = 60000\n"),
        "schema_heavy",
        json!({"data": items}),
    ));
    rows.extend(disk_attacks(setup));
    rows.push(full_audit_log(setup));
    rows.extend(compile::compile_bombs(setup));
    rows.push(stdio_flood(setup, 20_000));
    rows.push(half_open(setup, 300, 60));
    rows.push(held_key_fetch(setup, 20));
    rows.push(held_sessions(setup));
    rows.extend(memory::memory_floods(setup));
    let mut s =
        "## 9. Attacks on the host's own resources\n\nEach attack against the built binary (`airlock serve --stdio`, \
                 `serve --http` or `tools`), sampled every 2 ms: the server's resident memory and open descriptors \
                 before the attack, at its peak and after it; the CPU time the server spent during the attack, \
                 with the children it waited for (the compiler process); and the time from the attack's start \
                 to the error that ended it (for the flood: until every reply was read; for half-open \
                 connections: until the server closed them).\n\n| attack | outcome | RSS MiB before / peak / after | \
                 fds before / peak / after | CPU ms | to error, ms |\n|---|---|---|---|---|---|\n"
            .to_owned();
    for r in &rows {
        s.push_str(&row(r));
        s.push('\n');
    }
    report.section(s);
}
