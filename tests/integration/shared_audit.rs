//! Several `airlock serve --stdio` processes on one config that audits:
//! the first writes the configured file, the next a sibling chain
//! `<file>.1`, and `airlock audit verify FILE` covers both, also after a
//! `kill -9` of one of them in the middle of a call.
//!
//! Deterministic: the second server is started only once the first has
//! answered `initialize` (its log is open), and the kill waits for the
//! killed call's `started` record to be in its chain.

use crate::service::{Served, binary, kind, stdio_initialize, stdout_lines, write_line};
use crate::support::{cache_dir, fixture, temp_dir, tool};
use serde_json::{Value, json};
use std::path::Path;
use std::process::{ChildStdin, Command};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const DEADLINE: Duration = Duration::from_secs(60);

/// `echo` (read-only: one record a call) and `hostile` with side effects
/// (a `started` record before it runs; allowed by `policy`, a Cedar file
/// permitting everything, instead of asking), auditing to `audit`.
fn config(audit: &Path, policy: &Path) -> String {
    format!(
        "[engine]\ncache_dir = {:?}\n[tools.echo]\ncomponent = {:?}\nside_effect = false\nconcurrency_safe = true\n\
         [tools.hostile]\ncomponent = {:?}\nside_effect = true\nconcurrency_safe = true\ntimeout_ms = 600000\n\
         [audit]\nfile = {:?}\n[policy]\npolicies = {:?}\n",
        cache_dir().display().to_string(),
        tool("echo").display().to_string(),
        fixture("hostile").display().to_string(),
        audit.display().to_string(),
        policy.display().to_string(),
    )
}

fn call(stdin: &mut ChildStdin, id: u64, name: &str, arguments: Value) {
    let request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params":
        {"name": name, "arguments": arguments}});
    write_line(stdin, &request.to_string());
}

/// Echo calls `ids` on one server, all written before any answer is read.
fn echoes(stdin: &mut ChildStdin, lines: &mpsc::Receiver<Value>, ids: std::ops::Range<u64>) {
    for id in ids.clone() {
        call(stdin, id, "echo", json!({"text": format!("call {id}")}));
    }
    let mut answered: Vec<u64> = ids
        .clone()
        .map(|_| {
            let reply = lines.recv_timeout(DEADLINE).expect("every call is answered");
            assert_eq!(kind(&reply["result"]), "ok", "{reply}");
            reply["id"].as_u64().expect("an id")
        })
        .collect();
    answered.sort_unstable();
    assert_eq!(answered, ids.collect::<Vec<_>>());
}

#[test]
fn two_servers_on_one_audited_config_write_a_chain_each_and_verify_covers_both_after_a_kill_9() {
    let dir = temp_dir();
    let audit = dir.path().join("audit.jsonl");
    let sibling = dir.path().join("audit.jsonl.1");
    let policy = dir.path().join("policy.cedar");
    std::fs::write(&policy, "permit (principal, action, resource);\n").expect("write policy");
    let config = config(&audit, &policy);

    let mut first = Served::start(&config, &["serve", "--stdio"]);
    let first_lines = stdout_lines(&mut first);
    let mut first_in = first.child.stdin.take().expect("stdin");
    stdio_initialize(&mut first_in, &first_lines);
    let mut second = Served::start(&config, &["serve", "--stdio"]);
    let second_lines = stdout_lines(&mut second);
    let mut second_in = second.child.stdin.take().expect("stdin");
    stdio_initialize(&mut second_in, &second_lines);
    assert!(sibling.exists(), "the second server writes a sibling chain: {}", second.stderr.lock().unwrap());

    // Both answer calls, at the same time.
    let a = std::thread::spawn(move || {
        echoes(&mut first_in, &first_lines, 1..4);
        (first_in, first_lines)
    });
    echoes(&mut second_in, &second_lines, 1..3);
    let (mut first_in, first_lines) = a.join().expect("the first server answered");

    // The second is killed in the middle of a call, once its write-ahead
    // record is written.
    call(&mut second_in, 9, "hostile", json!({"attack": "sleep", "ms": 600_000}));
    let deadline = Instant::now() + DEADLINE;
    while !std::fs::read_to_string(&sibling).unwrap_or_default().contains("\"started\"") {
        assert!(Instant::now() < deadline, "the call never started: {}", second.stderr.lock().unwrap());
        if let Ok(reply) = second_lines.try_recv() {
            panic!("the sleeping call was answered: {reply}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    second.child.kill().expect("kill -9");
    second.child.wait().expect("reaped");

    // The first carries on, then exits.
    echoes(&mut first_in, &first_lines, 4..5);
    drop(first_in);
    assert_eq!(first.exit_code(), Some(0), "{}", first.stderr.lock().unwrap());

    let verify = Command::new(binary()).args(["audit", "verify"]).arg(&audit).output().expect("verify runs");
    let text = String::from_utf8_lossy(&verify.stdout);
    assert!(verify.status.success(), "{text}{}", String::from_utf8_lossy(&verify.stderr));
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with(&format!("ok: {}: 4 records, chain intact", audit.display())), "{text}");
    assert!(lines[1].starts_with(&format!("ok: {}: 3 records, chain intact", sibling.display())), "{text}");
    assert_eq!(lines[2], "ok: 7 records in 2 chain(s), all intact", "{text}");
    assert!(lines[3].starts_with("note: 1 call(s) have a \"started\" record"), "{text}");

    let report = airlock::audit_verify_all(&audit).expect("every chain verifies");
    assert_eq!((report.records, report.unfinished), (7, 1), "4 + 2 finished calls and the killed one's started");
}
