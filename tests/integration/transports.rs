//! The MCP transports against clients that break the rules: `airlock serve`
//! run as a process, spoken to over its pipes and over TCP.
//!
//! stdio: lines that are not JSON-RPC get the JSON-RPC error for them and
//! the session goes on; a client that writes and never reads stops being
//! read, so the server's memory stays bounded, and gets every reply once it
//! reads. HTTP: bodies that are not one JSON-RPC message get JSON-RPC
//! errors; half-open and idle connections are closed; unauthenticated
//! connections (no complete request, no token) have their own pool, the
//! oldest closed for a new one, and never shut out a client with a token;
//! authenticated connections beyond their caps are answered 503; a listed
//! proxy's PROXY header or X-Forwarded-For names the client counted, an
//! unlisted peer's does not. The HTTP caps are
//! set small in the server's `[http]` section, which proves the keys are
//! wired and keeps the tests cheap.

use crate::service::piped;
use crate::support::{temp_dir, tool};
use airlock::mcp::{MAX_MESSAGE_DEPTH, MAX_STDIO_MESSAGE_BYTES};
use serde_json::{Value, json};
use std::io::{BufRead as _, BufReader, Write as _};
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::{Child, ChildStdin};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpSocket, TcpStream};

/// Liveness bound for anything the server must eventually do.
const DEADLINE: Duration = Duration::from_secs(60);

fn binary() -> PathBuf {
    if let Some(bin) = std::env::var_os("AIRLOCK_BIN") {
        return PathBuf::from(bin);
    }
    PathBuf::from(env!("CARGO_BIN_EXE_airlock"))
}

/// A running `airlock serve`, killed when dropped.
struct Server {
    child: Child,
    _dir: tempfile::TempDir,
    /// What the server wrote to stderr, once `drain_stderr` collects it.
    stderr: Arc<std::sync::Mutex<String>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn start(args: &[&str]) -> Server {
        Server::start_with(args, "")
    }

    /// Start with `extra` appended to the config.
    fn start_with(args: &[&str], extra: &str) -> Server {
        let dir = temp_dir();
        let config = format!(
            "[tools.echo]\ncomponent = {:?}\nside_effect = false\n{extra}\n",
            tool("echo").display().to_string()
        );
        std::fs::write(dir.path().join("airlock.toml"), config).expect("config");
        let child = piped(binary(), dir.path()).args(args).spawn().expect("airlock runs");
        Server { child, _dir: dir, stderr: Arc::default() }
    }

    /// Resident memory of the server process, in bytes. A server that has
    /// exited fails the test with its status and stderr.
    fn rss(&mut self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap_or_default();
        let kib = status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<u64>().ok());
        match kib {
            Some(kib) => kib * 1024,
            None => {
                let exit = self.child.try_wait();
                std::thread::sleep(Duration::from_millis(200));
                let stderr = self.stderr.lock().map(|s| s.clone()).unwrap_or_default();
                panic!("the server is gone ({exit:?}); its stderr:\n{stderr}")
            }
        }
    }
}

// -- stdio --------------------------------------------------------------------

/// The server's stdout, line by line, on a thread.
fn stdout_lines(server: &mut Server) -> mpsc::Receiver<Value> {
    let stdout = server.child.stdout.take().expect("stdout");
    // Bounded: while the test does not take lines, the thread stops
    // reading, as a client that does not read.
    let (tx, rx) = mpsc::sync_channel(16);
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            let value =
                serde_json::from_str(&line).unwrap_or_else(|err| panic!("stdout line is not JSON ({err}): {line}"));
            if tx.send(value).is_err() {
                return;
            }
        }
    });
    rx
}

fn drain_stderr(server: &mut Server) {
    let stderr = server.child.stderr.take().expect("stderr");
    let collected = server.stderr.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { return };
            if let Ok(mut text) = collected.lock()
                && text.len() < 64 << 10
            {
                text.push_str(&line);
                text.push('\n');
            }
        }
    });
}

fn write_line(stdin: &mut ChildStdin, line: &[u8]) {
    stdin.write_all(line).expect("write stdin");
    stdin.write_all(b"\n").expect("write stdin");
    stdin.flush().expect("flush stdin");
}

fn initialize_request(id: u64) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}})
    .to_string()
    .into_bytes()
}

fn next(lines: &mpsc::Receiver<Value>) -> Value {
    lines.recv_timeout(DEADLINE).expect("the server answers")
}

#[test]
fn stdio_answers_every_bad_line_and_keeps_serving() {
    let mut server = Server::start(&["serve", "--stdio"]);
    drain_stderr(&mut server);
    let lines = stdout_lines(&mut server);
    let mut stdin = server.child.stdin.take().expect("stdin");
    let deep = format!("{}{}", "[".repeat(MAX_MESSAGE_DEPTH + 50), "]".repeat(MAX_MESSAGE_DEPTH + 50));
    let long = format!(
        r#"{{"jsonrpc":"2.0","id":99,"method":"ping","params":{{"pad":"{}"}}}}"#,
        "x".repeat(MAX_STDIO_MESSAGE_BYTES)
    );
    let cases: Vec<(&[u8], i64, Value, &str)> = vec![
        (b"\xff\xfe{\"jsonrpc\":\"2.0\"}", -32700, Value::Null, "not UTF-8"),
        (b"this is not json", -32700, Value::Null, "not JSON"),
        (deep.as_bytes(), -32700, Value::Null, "levels deep"),
        (long.as_bytes(), -32600, Value::Null, "line is over 4194304 bytes"),
        (b"{\"hello\":\"world\"}", -32600, Value::Null, "not a JSON-RPC 2.0"),
        (b"{\"jsonrpc\":\"2.0\",\"id\":7}", -32600, json!(7), "not a JSON-RPC 2.0"),
        (b"[{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"ping\"}]", -32600, Value::Null, "batches"),
    ];
    for (line, code, id, says) in &cases {
        write_line(&mut stdin, line);
        let reply = next(&lines);
        assert_eq!(reply["jsonrpc"], "2.0", "{reply}");
        assert_eq!(reply["error"]["code"], *code, "{reply}");
        assert_eq!(reply["id"], *id, "{reply}");
        assert!(reply.as_object().is_some_and(|o| o.contains_key("id")), "the id member is there: {reply}");
        let message = reply["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{message:?} should say {says:?}");
    }
    write_line(&mut stdin, &initialize_request(1));
    let init = next(&lines);
    assert_eq!(init["id"], 1, "{init}");
    assert!(init["result"]["protocolVersion"].is_string(), "{init}");
    write_line(&mut stdin, br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    write_line(&mut stdin, b"not json either");
    assert_eq!(next(&lines)["error"]["code"], -32700);
    write_line(
        &mut stdin,
        br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"still here"}}}"#,
    );
    let call = next(&lines);
    assert_eq!(call["id"], 2, "{call}");
    assert_eq!(call["result"]["isError"], false, "{call}");
}

#[test]
fn stdio_client_that_does_not_read_is_not_read_either() {
    const REQUESTS: usize = 100_000;
    // The server's own memory (engine, tools) is measured first; what the
    // flood may add is well below what queueing its replies would take
    // (about 1 GB for this flood without a bound).
    const GROWTH_BOUND: u64 = 64 << 20;

    let mut server = Server::start(&["serve", "--stdio"]);
    drain_stderr(&mut server);
    let lines = stdout_lines(&mut server);
    let mut stdin = server.child.stdin.take().expect("stdin");
    write_line(&mut stdin, &initialize_request(1));
    assert_eq!(next(&lines)["id"], 1);
    write_line(&mut stdin, br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    // Nothing is taken from `lines` from here on until the writer stalls:
    // the thread reading stdout stops when 16 lines wait, and the server's
    // stdout pipe fills as a client's that does not read.
    let baseline = server.rss();

    let written = Arc::new(AtomicUsize::new(0));
    let writer = {
        let written = written.clone();
        std::thread::spawn(move || {
            let mut out = std::io::BufWriter::with_capacity(4096, stdin);
            for id in 0..REQUESTS {
                let line = format!("{{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}}\n", id + 2);
                if out.write_all(line.as_bytes()).is_err() {
                    return None;
                }
                written.store(id + 1, Ordering::Relaxed);
            }
            let _ = out.flush();
            // Kept open until the test ends: a closed stdin ends the server,
            // which must still be there while its memory is sampled.
            out.into_inner().ok()
        })
    };

    // Wait until the writer makes no progress for a while (it is blocked
    // on a full pipe), sampling the server's memory all along. How long
    // this takes does not decide the outcome: the bound is checked on
    // every sample, and the writer cannot finish while nothing is read.
    let mut peak = baseline;
    let started = Instant::now();
    let (mut last, mut still_since) = (0, Instant::now());
    while started.elapsed() < DEADLINE {
        std::thread::sleep(Duration::from_millis(100));
        peak = peak.max(server.rss());
        let now = written.load(Ordering::Relaxed);
        if now != last {
            (last, still_since) = (now, Instant::now());
        } else if still_since.elapsed() > Duration::from_secs(3) {
            break;
        }
    }
    let stalled_at = written.load(Ordering::Relaxed);
    assert!(stalled_at < REQUESTS, "the server read all {REQUESTS} requests while its replies were not read");
    assert!(
        peak <= baseline + GROWTH_BOUND,
        "the server grew from {baseline} to {peak} bytes with replies unread ({stalled_at} requests written)"
    );

    // Now read: every request is answered, and the writer finishes.
    let mut answered = vec![false; REQUESTS];
    let mut count = 0;
    let reading = Instant::now();
    while count < REQUESTS {
        let reply = lines.recv_timeout(DEADLINE).unwrap_or_else(|_| panic!("only {count} replies arrived"));
        if let Some(id) = reply["id"].as_u64().and_then(|id| usize::try_from(id).ok()).filter(|&id| id >= 2) {
            assert!(reply["result"].is_object(), "{reply}");
            let seen = answered.get_mut(id - 2).expect("an id that was sent");
            assert!(!*seen, "id {id} answered twice");
            *seen = true;
            count += 1;
        }
        if count % 1000 == 0 {
            peak = peak.max(server.rss());
        }
        assert!(reading.elapsed() < Duration::from_secs(300), "only {count} replies arrived");
    }
    let stdin = writer.join().expect("the writer finishes");
    assert!(stdin.is_some(), "the writer could write every request once replies were read");
    assert!(peak <= baseline + GROWTH_BOUND, "the server grew from {baseline} to {peak} bytes");
    drop(stdin);
}

// -- HTTP ---------------------------------------------------------------------

/// Start `airlock serve --http 127.0.0.1:0` and read the bound address.
/// `airlock serve --http` on a free loopback port, with `extra` in its
/// config.
fn http_server(extra: &str) -> (Server, SocketAddr) {
    let mut server = Server::start_with(&["serve", "--http", "127.0.0.1:0"], extra);
    let stderr = server.child.stderr.take().expect("stderr");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut tx = Some(tx);
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { return };
            if let Some(rest) = line.split_once("http://").map(|(_, rest)| rest)
                && let Some(addr) = rest.strip_suffix("/mcp").and_then(|a| a.parse::<SocketAddr>().ok())
                && let Some(tx) = tx.take()
            {
                let _ = tx.send(addr);
            }
        }
    });
    let addr = rx.recv_timeout(DEADLINE).expect("the server announces its address");
    (server, addr)
}

async fn connect_from(source: Ipv4Addr, server: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().expect("socket");
    socket.bind(SocketAddr::from((source, 0))).expect("bind a loopback source address");
    socket.connect(server).await.expect("connect")
}

fn post(addr: SocketAddr, body: &[u8], close: bool) -> Vec<u8> {
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n{}\r\n",
        body.len(),
        if close { "Connection: close\r\n" } else { "" }
    )
    .into_bytes();
    request.extend_from_slice(body);
    request
}

/// A response: status, lower-cased headers, and its `Content-Length` body
/// (or, without one, what comes until the server closes).
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|err| panic!("not JSON ({err}): {}", String::from_utf8_lossy(&self.body)))
    }
}

async fn read_reply(stream: &mut TcpStream) -> Reply {
    tokio::time::timeout(DEADLINE, async {
        let mut buffer = Vec::new();
        let mut chunk = [0u8; 8192];
        let head_end = loop {
            if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                break at;
            }
            let n = stream.read(&mut chunk).await.expect("read a response");
            assert!(n > 0, "the server closed before answering: {:?}", String::from_utf8_lossy(&buffer));
            buffer.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
        let mut head_lines = head.split("\r\n");
        let status = head_lines.next().and_then(|l| l.split(' ').nth(1)).and_then(|s| s.parse().ok()).expect("status");
        let headers: Vec<(String, String)> = head_lines
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        let mut body = buffer[head_end + 4..].to_vec();
        let length = headers.iter().find(|(n, _)| n == "content-length").and_then(|(_, v)| v.parse::<usize>().ok());
        loop {
            if length.is_some_and(|length| body.len() >= length) {
                break;
            }
            let n = stream.read(&mut chunk).await.unwrap_or(0);
            if n == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..n]);
        }
        Reply { status, headers, body }
    })
    .await
    .expect("a response in time")
}

async fn exchange(addr: SocketAddr, request: &[u8]) -> Reply {
    let mut stream = connect_from(Ipv4Addr::LOCALHOST, addr).await;
    stream.write_all(request).await.expect("send");
    read_reply(&mut stream).await
}

/// Whether the server closes `stream` (end of stream or reset) within the
/// deadline, having sent nothing.
async fn closed_without_a_response(stream: &mut TcpStream) -> bool {
    let mut byte = [0u8; 1];
    match tokio::time::timeout(DEADLINE, stream.read(&mut byte)).await {
        Ok(Ok(0)) => true,
        Ok(Err(err)) => err.kind() == std::io::ErrorKind::ConnectionReset,
        Ok(Ok(_)) | Err(_) => false,
    }
}

/// A served client: `initialize` answered with 200.
async fn served(addr: SocketAddr) {
    let init = initialize_request(1);
    let reply = exchange(addr, &post(addr, &init, true)).await;
    assert_eq!(reply.status, 200, "{}", String::from_utf8_lossy(&reply.body));
    assert!(String::from_utf8_lossy(&reply.body).contains("protocolVersion"));
}

#[tokio::test]
async fn http_answers_bodies_that_are_not_a_message_with_json_rpc_errors() {
    // A small body cap; a short keep-alive (the idle connection below is
    // closed sooner), with seconds of margin for sending a request.
    const MAX_BODY: usize = 1024;
    let (_server, addr) = http_server(&format!("[http]\nmax_body_bytes = {MAX_BODY}\nheader_timeout_secs = 3"));
    for (body, code, says) in [
        (&b"this is not json"[..], -32700, "not JSON"),
        (b"{\"jsonrpc\":\"2.0\",\"id\":1,", -32700, "not JSON"),
        (b"\xff\xfe", -32700, "not UTF-8"),
        (b"{\"hello\":\"world\"}", -32600, "not a JSON-RPC 2.0"),
        (b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", -32600, "batches"),
    ] {
        let reply = exchange(addr, &post(addr, body, true)).await;
        assert_eq!(reply.status, 400, "{}", String::from_utf8_lossy(&reply.body));
        assert_eq!(reply.header("content-type"), Some("application/json"));
        let error = reply.json();
        assert_eq!(error["jsonrpc"], "2.0");
        assert_eq!(error["id"], Value::Null, "{error}");
        assert_eq!(error["error"]["code"], code, "{error}");
        assert!(error["error"]["message"].as_str().unwrap_or_default().contains(says), "{error}");
    }
    let deep = format!("{}{}", "[".repeat(MAX_MESSAGE_DEPTH + 50), "]".repeat(MAX_MESSAGE_DEPTH + 50));
    assert_eq!(exchange(addr, &post(addr, deep.as_bytes(), true)).await.json()["error"]["code"], -32700);

    // Over the cap, by one byte: read to its end (so that the client can
    // read the answer), then refused, naming the key.
    let mut oversized = br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":""#.to_vec();
    oversized.resize(MAX_BODY - 3, b'x');
    oversized.extend_from_slice(br#""}}"#);
    oversized.push(b' ');
    assert_eq!(oversized.len(), MAX_BODY + 1);
    let reply = exchange(addr, &post(addr, &oversized, true)).await;
    assert_eq!(reply.status, 413);
    assert_eq!(reply.header("content-type"), Some("application/json"));
    let error = reply.json();
    assert_eq!(error["id"], Value::Null);
    assert_eq!(error["error"]["code"], -32600);
    let message = error["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("request body is over 1024 bytes") && message.contains("[http] max_body_bytes"),
        "{message}"
    );
    // At the cap exactly: served (an initialize padded with spaces).
    let mut at_cap = initialize_request(1);
    at_cap.resize(MAX_BODY, b' ');
    let reply = exchange(addr, &post(addr, &at_cap, true)).await;
    assert_eq!(reply.status, 200, "{}", String::from_utf8_lossy(&reply.body));

    // A kept-alive connection that goes idle is closed; a valid message is
    // still served.
    let mut idle = connect_from(Ipv4Addr::LOCALHOST, addr).await;
    idle.write_all(&post(addr, b"{}", false)).await.expect("send");
    assert_eq!(read_reply(&mut idle).await.status, 400);
    assert!(closed_without_a_response(&mut idle).await, "an idle connection is closed");
    served(addr).await;
}

/// A POST of `{}` with `extra` header lines, kept alive: it passes the gate
/// of a server without tokens (and is answered 400 by the body check).
fn keep_alive_post(addr: SocketAddr, extra: &str) -> Vec<u8> {
    let mut request = post(addr, b"{}", false);
    let at = request.windows(4).position(|w| w == b"\r\n\r\n").expect("a head") + 2;
    request.splice(at..at, extra.bytes());
    request
}

/// Assert the `503` for full authenticated pools: `Retry-After`, and the
/// connection closed after it.
async fn assert_connections_full(stream: &mut TcpStream, what: &str) {
    let reply = read_reply(stream).await;
    assert_eq!(reply.status, 503, "{what}: {}", String::from_utf8_lossy(&reply.body));
    assert_eq!(reply.header("retry-after"), Some("1"), "{what}");
    assert!(closed_without_a_response(stream).await, "{what}: the connection is closed after the 503");
}

#[tokio::test]
async fn http_caps_connections_and_closes_half_open_ones() {
    // Small caps; the timeouts leave seconds for filling them (and the
    // authenticated connections kept idle are not closed for idling).
    const MAX_CONNECTIONS: usize = 3;
    const PER_PEER: usize = 2;
    const UNAUTHENTICATED: usize = 4;
    let (_server, addr) = http_server(&format!(
        "[http]\nmax_connections = {MAX_CONNECTIONS}\nmax_connections_per_peer = {PER_PEER}\n\
         max_unauthenticated_connections = {UNAUTHENTICATED}\nunauthenticated_timeout_secs = 5\nheader_timeout_secs = 30"
    ));
    let partial = b"POST /mcp HTTP/1.1\r\nHost: 127";
    let half_open = |source: Ipv4Addr, count: usize| async move {
        let mut streams = Vec::with_capacity(count);
        for _ in 0..count {
            let mut stream = connect_from(source, addr).await;
            stream.write_all(partial).await.expect("send a partial request");
            streams.push(stream);
        }
        streams
    };
    let authenticated = |source: Ipv4Addr| async move {
        let mut stream = connect_from(source, addr).await;
        stream.write_all(&keep_alive_post(addr, "")).await.expect("send");
        stream
    };

    // The unauthenticated pool is full: a new connection takes the place
    // of the oldest one there, which the server closes.
    let mut waiting = half_open(Ipv4Addr::new(127, 0, 0, 2), UNAUTHENTICATED).await;
    let mut newer = half_open(Ipv4Addr::new(127, 0, 0, 2), 1).await;
    assert!(closed_without_a_response(&mut waiting[0]).await, "the oldest unauthenticated connection is closed");

    // Authenticated connections have their own caps: per client address,
    // then in total; past either the request is answered 503.
    let mut kept = Vec::new();
    for _ in 0..PER_PEER {
        let mut stream = authenticated(Ipv4Addr::LOCALHOST).await;
        assert_eq!(read_reply(&mut stream).await.status, 400, "served (the body check answers)");
        kept.push(stream);
    }
    let mut over = authenticated(Ipv4Addr::LOCALHOST).await;
    assert_connections_full(&mut over, "past max_connections_per_peer").await;
    let mut other = authenticated(Ipv4Addr::new(127, 0, 0, 3)).await;
    assert_eq!(read_reply(&mut other).await.status, 400, "another address is served");
    kept.push(other);
    let mut over = authenticated(Ipv4Addr::new(127, 0, 0, 4)).await;
    assert_connections_full(&mut over, "past max_connections").await;

    // Many more unauthenticated connections than the pool holds never
    // close an authenticated one: each stays usable.
    let mut flood = half_open(Ipv4Addr::LOCALHOST, 4 * UNAUTHENTICATED).await;
    for stream in &mut kept {
        stream.write_all(&keep_alive_post(addr, "")).await.expect("send");
        assert_eq!(read_reply(stream).await.status, 400, "an authenticated connection is kept");
    }

    // Headers never finished, or no request passed the gate: every one of
    // them is closed by the server.
    for (i, stream) in waiting.iter_mut().chain(newer.iter_mut()).chain(flood.iter_mut()).enumerate() {
        assert!(closed_without_a_response(stream).await, "connection {i} is closed");
    }
    drop(kept);
    // A place is freed just after its connection is closed: retry until
    // then (a liveness bound, not a timing assertion).
    let started = Instant::now();
    loop {
        let mut stream = connect_from(Ipv4Addr::LOCALHOST, addr).await;
        let _ = stream.write_all(&post(addr, &initialize_request(1), true)).await;
        if read_reply_or_close(&mut stream).await.is_some_and(|status| status == 200) {
            break;
        }
        assert!(started.elapsed() < DEADLINE, "no connection is served after the others closed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    served(addr).await;
}

/// The status of a response on `stream`, or `None` if it is closed first.
async fn read_reply_or_close(stream: &mut TcpStream) -> Option<u16> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n") {
        match tokio::time::timeout(DEADLINE, stream.read(&mut byte)).await {
            Ok(Ok(1)) => head.push(byte[0]),
            _ => return None,
        }
    }
    String::from_utf8_lossy(&head).split(' ').nth(1).and_then(|s| s.parse().ok())
}

#[tokio::test]
async fn http_half_open_and_anonymous_connections_cannot_shut_out_a_client_with_a_token() {
    // Defaults for every connection cap (32 per address, 64 unauthenticated),
    // and every client on one address, as on loopback or behind a load
    // balancer.
    const HALF_OPEN: usize = 64;
    const ANONYMOUS: usize = 16;
    const CALLS: usize = 20;
    let token = "0123456789abcdef-alice";
    let (_server, addr) = http_server(&format!("[[http.tokens]]\ntoken = \"{token}\"\nprincipal = \"alice\""));
    let mut held = Vec::new();
    for _ in 0..HALF_OPEN {
        let mut stream = connect_from(Ipv4Addr::LOCALHOST, addr).await;
        stream.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127").await.expect("send a partial request");
        held.push(stream);
    }
    // Complete requests without a token: 401, and the connections kept.
    for _ in 0..ANONYMOUS {
        let mut stream = connect_from(Ipv4Addr::LOCALHOST, addr).await;
        stream.write_all(&post(addr, &initialize_request(1), false)).await.expect("send");
        assert_eq!(read_reply(&mut stream).await.status, 401);
        held.push(stream);
    }
    let bearer = format!("Authorization: Bearer {token}\r\n");
    let with_token = |body: &[u8], session: Option<&str>| {
        let mut extra = bearer.clone();
        if let Some(session) = session {
            extra.push_str(&format!("Mcp-Session-Id: {session}\r\n"));
        }
        let mut request = post(addr, body, true);
        let at = request.windows(4).position(|w| w == b"\r\n\r\n").expect("a head") + 2;
        request.splice(at..at, extra.bytes());
        request
    };
    let init = exchange(addr, &with_token(&initialize_request(1), None)).await;
    assert_eq!(init.status, 200, "{}", String::from_utf8_lossy(&init.body));
    let session = init.header("mcp-session-id").expect("a session").to_owned();
    let initialized = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    assert_eq!(exchange(addr, &with_token(initialized, Some(&session))).await.status, 202);
    let mut succeeded = 0;
    for id in 0..CALLS {
        let call = json!({"jsonrpc": "2.0", "id": id + 2, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": format!("call {id}")}}});
        let reply = exchange(addr, &with_token(call.to_string().as_bytes(), Some(&session))).await;
        let body = String::from_utf8_lossy(&reply.body);
        if reply.status == 200 && body.contains(&format!("call {id}")) && body.contains("\"isError\":false") {
            succeeded += 1;
        }
    }
    assert_eq!(
        succeeded,
        CALLS,
        "every call with a token succeeds while {} anonymous connections are held",
        held.len()
    );
    drop(held);
}

#[tokio::test]
async fn http_client_addresses_come_from_listed_proxies_only() {
    // One authenticated connection per client address; 127.0.0.1 is the
    // proxy, 127.0.0.2 is not listed.
    let (_server, addr) = http_server("[http]\nmax_connections_per_peer = 1\ntrusted_proxies = [\"127.0.0.1/32\"]");
    let proxy = Ipv4Addr::LOCALHOST;
    let open = |source: Ipv4Addr, preface: Vec<u8>, extra: &'static str| async move {
        let mut stream = connect_from(source, addr).await;
        let mut bytes = preface;
        bytes.extend_from_slice(&keep_alive_post(addr, extra));
        stream.write_all(&bytes).await.expect("send");
        stream
    };
    let v1 = |client: &str| format!("PROXY TCP4 {client} 127.0.0.1 40000 80\r\n").into_bytes();
    let v2 = |client: [u8; 4]| {
        let mut header = b"\r\n\r\n\0\r\nQUIT\n".to_vec();
        header.extend_from_slice(&[0x21, 0x11, 0, 12]);
        header.extend_from_slice(&client);
        header.extend_from_slice(&[127, 0, 0, 1, 0x9c, 0x40, 0, 80]);
        header
    };

    // The PROXY header's address is the one counted: a second connection
    // for 192.0.2.1 (v1 or v2) is refused, one for 192.0.2.2 is not.
    let mut kept = Vec::new();
    let mut first = open(proxy, v1("192.0.2.1"), "").await;
    assert_eq!(read_reply(&mut first).await.status, 400, "served");
    kept.push(first);
    let mut again = open(proxy, v2([192, 0, 2, 1]), "").await;
    assert_connections_full(&mut again, "a second connection for 192.0.2.1 (PROXY v2)").await;
    let mut again = open(proxy, v1("192.0.2.1"), "").await;
    assert_connections_full(&mut again, "a second connection for 192.0.2.1 (PROXY v1)").await;
    let mut second = open(proxy, v2([192, 0, 2, 2]), "").await;
    assert_eq!(read_reply(&mut second).await.status, 400, "another client behind the proxy is served");
    kept.push(second);

    // X-Forwarded-For from the proxy names the client.
    let mut forwarded = open(proxy, Vec::new(), "X-Forwarded-For: 192.0.2.3\r\n").await;
    assert_eq!(read_reply(&mut forwarded).await.status, 400, "served");
    kept.push(forwarded);
    let mut again = open(proxy, Vec::new(), "X-Forwarded-For: 198.51.100.7, 192.0.2.3\r\n").await;
    assert_connections_full(&mut again, "a second connection for 192.0.2.3 (X-Forwarded-For)").await;

    // From an address that is not listed, X-Forwarded-For is ignored: the
    // peer's own address is counted, whatever the header says.
    let other = Ipv4Addr::new(127, 0, 0, 2);
    let mut direct = open(other, Vec::new(), "X-Forwarded-For: 192.0.2.10\r\n").await;
    assert_eq!(read_reply(&mut direct).await.status, 400, "served");
    kept.push(direct);
    let mut again = open(other, Vec::new(), "X-Forwarded-For: 192.0.2.11\r\n").await;
    assert_connections_full(&mut again, "a second connection from 127.0.0.2, whatever it forwards").await;
    // Nor is a PROXY header read from it: the bytes are not HTTP.
    let mut spoofed = open(Ipv4Addr::new(127, 0, 0, 3), v1("192.0.2.20"), "").await;
    let status = read_reply_or_close(&mut spoofed).await;
    assert!(status.is_none() || status == Some(400), "a PROXY header from a peer not listed is refused: {status:?}");
    drop(kept);
}
