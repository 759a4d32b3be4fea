//! MCP tasks through the library and the binary: a call that runs as a
//! task gets its tool's `task_timeout_ms` and its audit records name the
//! task; the task store keeps a task for its principal only, under its
//! caps; over stdio, a task is answered with its handle, read, cancelled
//! (the guest stops); in a fleet, tasks are kept in Redis for every
//! replica.

use crate::support::{Redis, config, fixture, host, temp_dir};
use airlock::TaskSettings;
use airlock::transport::tasks::{Finished, Input, NewTask, Status, Tasks};
use airlock::{CallRequest, CancellationToken, Host};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `slow_compute` whose calls may be tasks: 1 s when the client waits, 30 s
/// as a task.
fn slow(audit: &std::path::Path) -> String {
    format!(
        "[tools.slow_compute]\ncomponent = {:?}\nside_effect = false\nconcurrency_safe = true\ntask = \"optional\"\n\
         timeout_ms = 1000\ntask_timeout_ms = 30000\n[audit]\nfile = {:?}\n",
        fixture("conformance_slow").display().to_string(),
        audit.display().to_string()
    )
}

fn records(audit: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(audit).unwrap().lines().map(|line| serde_json::from_str(line).unwrap()).collect()
}

#[tokio::test]
async fn a_task_gets_the_task_deadline_and_its_record_names_it() {
    let dir = temp_dir();
    let audit = dir.path().join("audit.jsonl");
    let host = host(&slow(&audit)).await;
    let arguments = json!({"seconds": 2});
    let waited = host.call(CallRequest::new("alice", "slow_compute", arguments.clone()), None).await;
    assert_eq!(waited.outcome_name(), "timeout", "{}", waited.text());
    assert!(waited.text().contains("1000 ms"), "the deadline named is timeout_ms: {}", waited.text());
    let task = "0123456789abcdef0123456789abcdef";
    let request = CallRequest { task: Some(task.to_owned()), ..CallRequest::new("alice", "slow_compute", arguments) };
    let ran = host.call(request, None).await;
    assert!(!ran.is_error(), "a task has task_timeout_ms: {}", ran.text());
    let records = records(&audit);
    assert_eq!(records.len(), 2);
    assert!(records[0].get("task").is_none(), "{}", records[0]);
    assert_eq!(records[1]["task"], task);
    assert_eq!(records[1]["outcome"], "ok");
    assert_eq!(airlock::audit_verify(&audit).unwrap().records, 2);
}

#[tokio::test]
async fn the_store_keeps_a_task_for_its_principal_under_the_caps() {
    let host: Host = Host::builder().config(config("")).build().await.unwrap();
    let settings = TaskSettings { max_per_principal: 1, ..TaskSettings::default() };
    let new = |principal: &str| NewTask {
        principal: principal.into(),
        tool: "slow_compute".into(),
        reserve: airlock::transport::tasks::result_reserve(1 << 20, 0),
        lease: Duration::from_secs(60),
    };
    let tasks = host.tasks();
    let alices = tasks.create(new("alice"), &settings).await.unwrap();
    let refused = tasks.create(new("alice"), &settings).await.unwrap_err();
    assert!(refused.message.contains("`[tasks] max_per_principal` = 1"), "{}", refused.message);
    assert!(tasks.create(new("bob"), &settings).await.is_ok(), "bob's share is his own");
    assert!(tasks.get(&alices.id, "bob").await.unwrap().is_none(), "alice's task is not bob's");
    assert_eq!(tasks.get(&alices.id, "alice").await.unwrap().unwrap().status, Status::Working);
}

/// `airlock serve --stdio` speaking raw JSON-RPC.
struct StdioServer {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<Value>,
    next: u64,
}

impl StdioServer {
    fn start(config: &std::path::Path) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_airlock"))
            .args(["--config", config.to_str().unwrap(), "serve", "--stdio", "--principal", "alice"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(serde_json::from_str(&line).unwrap()).is_err() {
                    return;
                }
            }
        });
        StdioServer { child, lines, next: 1 }
    }

    fn request(&mut self, method: &str, mut params: Value) -> Value {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "0"},
            "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
        });
        let id = self.next;
        self.next += 1;
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        loop {
            let reply = self.lines.recv_timeout(Duration::from_secs(120)).expect("an answer");
            if reply["id"] == id {
                return reply;
            }
        }
    }
}

impl Drop for StdioServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn over_stdio_a_task_is_created_read_and_cancelled() {
    let dir = temp_dir();
    let audit = dir.path().join("audit.jsonl");
    let file = dir.path().join("airlock.toml");
    let text =
        format!("{}\n[engine]\ncache_dir = {:?}\n", slow(&audit), crate::support::cache_dir().display().to_string());
    std::fs::write(&file, text).unwrap();
    let mut server = StdioServer::start(&file);
    let created = server.request("tools/call", json!({"name": "slow_compute", "arguments": {"seconds": 60}}));
    let handle = &created["result"];
    assert_eq!(handle["resultType"], "task", "{created}");
    let id = handle["taskId"].as_str().unwrap().to_owned();
    let read = server.request("tasks/get", json!({"taskId": id}));
    assert_eq!(read["result"]["status"], "working", "{read}");
    let cancelled_at = Instant::now();
    let ack = server.request("tasks/cancel", json!({"taskId": id}));
    assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
    assert_eq!(server.request("tasks/get", json!({"taskId": id}))["result"]["status"], "cancelled");
    // The guest stopped: its record says cancelled, within seconds.
    let record = loop {
        let found = std::fs::read_to_string(&audit)
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).unwrap())
            .find(|r| r["task"] == id.as_str() && r["outcome"] == "cancelled");
        if let Some(record) = found {
            break record;
        }
        assert!(cancelled_at.elapsed() < Duration::from_secs(30), "no cancelled record");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(record["duration_us"].as_u64().unwrap() < 30_000_000, "{record}");
    let unknown = server.request("tasks/get", json!({"taskId": "f".repeat(32)}));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
}

#[tokio::test]
async fn in_a_fleet_tasks_are_kept_in_redis_for_every_replica() {
    let dir = temp_dir();
    let Some(redis) = Redis::start(dir.path()) else { return };
    let fleet = redis.fleet(dir.path());
    // Two replicas: two stores on one Redis.
    let (one, two) = (Tasks::new(Some(&fleet)).unwrap(), Tasks::new(Some(&fleet)).unwrap());
    assert!(one.shared());
    let settings =
        TaskSettings { max_per_principal: 2, max_result_bytes_per_principal: 4 << 20, ..TaskSettings::default() };
    // Each reserves 1.5 MiB: two fit under 4 MiB, a third does not.
    let new = |principal: &str| NewTask {
        principal: principal.into(),
        tool: "slow_compute".into(),
        reserve: 3 << 19,
        lease: Duration::from_secs(60),
    };
    let task = one.create(new("alice"), &settings).await.unwrap();
    // Read on the other replica, by its principal only.
    assert_eq!(two.get(&task.id, "alice").await.unwrap().unwrap().status, Status::Working);
    assert!(two.get(&task.id, "bob").await.unwrap().is_none());
    assert_eq!(two.cancel(&task.id, "bob", settings.result_ttl).await.unwrap(), None);
    // Caps across replicas: count, then bytes.
    let second = two.create(new("alice"), &settings).await.unwrap();
    let refused = one.create(new("alice"), &settings).await.unwrap_err();
    assert!(refused.message.contains("`[tasks] max_per_principal` = 2"), "{}", refused.message);
    let roomy = TaskSettings { max_per_principal: 10, ..settings };
    let refused = one.create(new("alice"), &roomy).await.unwrap_err();
    assert!(refused.message.contains("`[tasks] max_result_mib_per_principal` = 4 MiB"), "{}", refused.message);
    // An answer given on one replica reaches the call running on the other.
    let input = Input { requests: vec![("confirm".into(), "{}".into())], message: None };
    one.set_input(&task.id, input).await.unwrap();
    assert_eq!(two.get(&task.id, "alice").await.unwrap().unwrap().status, Status::InputRequired);
    assert_eq!(
        two.respond(&task.id, "alice", vec![("confirm".into(), "accept:allow".into())]).await.unwrap(),
        Some(())
    );
    let stop = CancellationToken::new();
    let heard = one.signal(&task.id, &stop).await.unwrap();
    assert_eq!(heard.answers, vec![("confirm".to_owned(), "accept:allow".to_owned())]);
    assert!(!heard.cancelled);
    // It ends on the first; its result is read on the second, and holds
    // what it takes: the bytes it reserved are free again.
    let outcome = r#"{"content":[{"type":"text","text":"done"}],"isError":false}"#;
    let finished = Finished { status: Status::Completed, outcome: Some(outcome.to_owned()) };
    one.finish(&task.id, finished, settings.result_ttl).await.unwrap();
    let done = two.get(&task.id, "alice").await.unwrap().unwrap();
    assert_eq!(
        (done.status, done.outcome.as_deref(), done.bytes),
        (Status::Completed, Some(outcome), outcome.len() as u64)
    );
    assert!(done.expires_ms.is_some());
    assert!(one.create(new("alice"), &roomy).await.is_ok(), "the ended task's reservation was released");
    // A cancel sent to one replica reaches the call on the other, at once
    // for readers, and an ended task never changes again.
    assert_eq!(one.cancel(&second.id, "alice", settings.result_ttl).await.unwrap(), Some(()));
    assert!(two.signal(&second.id, &stop).await.unwrap().cancelled);
    let late = Finished { status: Status::Completed, outcome: Some("{}".to_owned()) };
    two.finish(&second.id, late, settings.result_ttl).await.unwrap();
    let cancelled = one.get(&second.id, "alice").await.unwrap().unwrap();
    assert_eq!((cancelled.status, cancelled.outcome), (Status::Cancelled, None));
}
