//! Approvals over stdio for a client that starts a server for each call and
//! closes it afterwards (the MCP Inspector's CLI, command-line clients of
//! agent frameworks), through the built binary: the call gets the link, the
//! server exits, the page is still served (by the process the server handed
//! it to), the person approves there, the call made again in a new server
//! runs once, and the next identical call needs a new approval. The page's
//! process ends once nothing waits; one killed with `kill -9` is replaced by
//! the next server.

use crate::approvals::{link_in, page};
use crate::service::{audit_outcomes, binary, fetch, kind, piped};
use crate::softkey::SoftKey;
use crate::support::{cache_dir, fixture, repo_root, temp_dir};
use serde_json::{Value, json};
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Liveness bound for anything a process must eventually do.
const DEADLINE: Duration = Duration::from_secs(60);

/// The bank over stdio, its page on `127.0.0.1:PORT`, its audit log (and so
/// its state) in `dir`.
fn bank(dir: &Path, port: u16) -> PathBuf {
    let policy = |file: &str| repo_root().join("tests/fixtures/policy").join(file).display().to_string();
    let config = format!(
        "[engine]\ncache_dir = {:?}\n[approvals]\nmode = \"page\"\nlisten = \"127.0.0.1:{port}\"\n\
         [policy]\npolicies = {:?}\nentities = {:?}\n[audit]\nfile = \"audit.jsonl\"\n\
         [tools.create_transfer]\ncomponent = {:?}\nside_effect = true\nconfirm = \"Transfer {{amount}} to {{to}}\"\n",
        cache_dir().display().to_string(),
        policy("bank.cedar"),
        policy("bank.entities.json"),
        fixture("create_transfer").display().to_string(),
    );
    let path = dir.join("airlock.toml");
    std::fs::write(&path, config).expect("config");
    // Compiled once before the flow (a one-shot command loads every tool
    // first), so that no call waits for a cold compile.
    let loaded = Command::new(binary())
        .arg("--config")
        .arg(&path)
        .arg("tools")
        .env("AIRLOCK_CACHE_DIR", cache_dir())
        .output()
        .expect("airlock tools");
    assert!(loaded.status.success(), "{}", String::from_utf8_lossy(&loaded.stderr));
    path
}

/// A loopback port nobody listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("address").port()
}

/// What one server-per-call run gave: the call's result and the server's
/// stderr.
struct Run {
    result: Value,
    stderr: String,
}

/// Start `airlock serve --stdio` as `alice`, initialize, make one call,
/// close stdin and wait for the process to exit, as a client that starts a
/// server per call does.
fn call_once(config: &Path, arguments: &Value) -> Run {
    let mut child = piped(binary(), config.parent().expect("the config's directory"))
        .arg("--config")
        .arg(config)
        .args(["serve", "--stdio", "--principal", "alice"])
        .spawn()
        .expect("airlock runs");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut stderr = child.stderr.take().expect("stderr");
    let send = |stdin: &mut std::process::ChildStdin, message: Value| {
        stdin.write_all(format!("{message}\n").as_bytes()).expect("write stdin");
    };
    let mut answer = |id: u64| -> Value {
        loop {
            let mut line = String::new();
            assert!(stdout.read_line(&mut line).expect("read stdout") > 0, "the server ended before answering {id}");
            let message: Value = serde_json::from_str(&line).expect("stdout is JSON-RPC");
            if message["id"] == json!(id) {
                return message;
            }
        }
    };
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params":
            {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "per-call", "version": "0"}}}),
    );
    answer(0);
    send(&mut stdin, json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "create_transfer", "arguments": arguments}}),
    );
    let result = answer(1)["result"].clone();
    drop(stdin);
    // The server ends, whatever it hands on: its stdout and stderr close.
    let deadline = Instant::now() + DEADLINE;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        assert!(Instant::now() < deadline, "the server did not exit after its client closed stdin");
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut text = String::new();
    stderr.read_to_string(&mut text).expect("stderr closes with the server");
    assert!(status.success(), "{status}: {text}");
    Run { result, stderr: text }
}

/// The person answers on the page: opens the link, then presses Approve
/// (`approve`) or Decline and proves it with their passkey (`key`). The
/// one place that knows how a person proves they are there.
fn answer_on_page(link: &str, decision: &str, key: &mut SoftKey) {
    let answered = page::answer(link, decision, key);
    assert_eq!(answered.status, 200, "{}", answered.body);
}

/// Whether anything listens on `addr`.
fn listening(addr: &str) -> bool {
    std::net::TcpStream::connect(addr).is_ok()
}

/// Wait until `addr` is served (`true`) or not (`false`).
fn wait_listening(addr: &str, served: bool) {
    let deadline = Instant::now() + DEADLINE;
    while listening(addr) != served {
        assert!(Instant::now() < deadline, "{addr} is still {}served", if served { "not " } else { "" });
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The process id a server named as the page's process on its stderr.
fn page_process(stderr: &str) -> u32 {
    let line = stderr.lines().find(|l| l.contains("served by process")).unwrap_or_else(|| panic!("{stderr}"));
    let after = line.split("served by process ").nth(1).unwrap_or_default();
    after.split_whitespace().next().and_then(|pid| pid.parse().ok()).unwrap_or_else(|| panic!("{line}"))
}

fn transfer() -> Value {
    json!({"to": "acc-bob", "amount": 20_000})
}

/// A bank on a port of its own whose first transfer waits for an approval.
struct Flow {
    dir: tempfile::TempDir,
    /// The page's address.
    addr: String,
    /// The page's origin as links name it (a passkey's relying party is a
    /// name: `localhost`).
    origin: String,
    config: PathBuf,
    /// The first transfer's run.
    first: Run,
    /// Alice's passkey, enrolled on the page after the first transfer.
    key: SoftKey,
}

fn first_transfer() -> Flow {
    let dir = temp_dir();
    let port = free_port();
    let config = bank(dir.path(), port);
    let first = call_once(&config, &transfer());
    assert_eq!(kind(&first.result), "approval_required", "{}", first.result);
    // The account holder enrols her passkey through the operator's link,
    // on the page the server handed on.
    let origin = format!("http://localhost:{port}");
    let key = page::enrol(&config, &origin, "alice");
    Flow { dir, addr: format!("127.0.0.1:{port}"), origin, config, first, key }
}

#[test]
fn a_server_per_call_client_finishes_an_approval_and_the_call_runs_once() {
    let Flow { dir, addr, origin, config, first, mut key } = first_transfer();
    let link = link_in(&first.result);
    assert!(link.starts_with(&format!("{origin}/approvals/")), "{link}");
    // The server has exited; the page is still there, served by the
    // process it handed it to.
    assert!(first.stderr.contains("1 approval(s) still wait for an answer"), "{}", first.stderr);
    let page_pid = page_process(&first.stderr);
    // A server started meanwhile leaves the page to that process, and its
    // own approval is served there too.
    let other = call_once(&config, &json!({"to": "acc-bob", "amount": 30_000}));
    assert_eq!(kind(&other.result), "approval_required", "{}", other.result);
    assert!(
        other.stderr.contains(&format!("is served by another Airlock process (process {page_pid})")),
        "{}",
        other.stderr
    );
    let other_link = link_in(&other.result);
    assert!(other_link.starts_with(&format!("{origin}/approvals/")), "{other_link}");
    answer_on_page(&link, "approve", &mut key);

    // The call made again, in a new server, runs once.
    let ran = call_once(&config, &transfer());
    assert_eq!(kind(&ran.result), "ok", "{}: {}", ran.result, ran.stderr);
    // The next identical call needs a new approval.
    let again = call_once(&config, &transfer());
    assert_eq!(kind(&again.result), "approval_required", "{}", again.result);
    let second_link = link_in(&again.result);
    assert_ne!(second_link, link, "a new approval");
    let used = fetch(&link, "GET", &[], "");
    assert_eq!(used.status, 409, "the used link says so: {}", used.body);

    // Declined, nothing waits: the page's process ends by itself.
    answer_on_page(&second_link, "decline", &mut key);
    answer_on_page(&other_link, "decline", &mut key);
    wait_listening(&addr, false);
    // It closes its listener first, then exits.
    let deadline = Instant::now() + DEADLINE;
    while Path::new(&format!("/proc/{page_pid}")).exists() && !proc_is_zombie(page_pid) {
        assert!(Instant::now() < deadline, "process {page_pid} did not end");
        std::thread::sleep(Duration::from_millis(20));
    }
    let outcomes: Vec<String> = audit_outcomes(&dir.path().join("audit.jsonl"));
    assert_eq!(outcomes.iter().filter(|o| *o == "ok").count(), 1, "{outcomes:?}");
    assert_eq!(outcomes.iter().filter(|o| *o == "approval_required").count(), 3, "{outcomes:?}");
    let verified = Command::new(binary())
        .args(["audit", "verify"])
        .arg(dir.path().join("audit.jsonl"))
        .output()
        .expect("airlock audit verify");
    assert!(verified.status.success(), "{}", String::from_utf8_lossy(&verified.stderr));
}

/// Whether `pid` has ended and waits only to be reaped.
fn proc_is_zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')))
        .unwrap_or(true)
}

#[test]
fn a_page_process_killed_is_replaced_by_the_next_server() {
    let Flow { dir: _dir, addr, config, first, mut key, .. } = first_transfer();
    let link = link_in(&first.result);
    let page_pid = page_process(&first.stderr);
    let killed = Command::new("kill").args(["-KILL", &page_pid.to_string()]).status().expect("kill");
    assert!(killed.success());
    wait_listening(&addr, false);

    // The next server finds the same approval waiting, serves the page
    // while it runs and hands it on as it ends.
    let next = call_once(&config, &transfer());
    assert_eq!(kind(&next.result), "approval_required", "{}", next.result);
    assert_eq!(link_in(&next.result), link, "the approval outlived both processes");
    assert!(next.stderr.contains("still wait for an answer"), "{}", next.stderr);
    answer_on_page(&link, "approve", &mut key);
    let ran = call_once(&config, &transfer());
    assert_eq!(kind(&ran.result), "ok", "{}: {}", ran.result, ran.stderr);
    wait_listening(&addr, false);
}
