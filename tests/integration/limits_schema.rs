//! What the host spends on tools' JSON Schemas is metered, not estimated:
//! schemas are compiled and evaluated in the host's validator component
//! under the call's deadline and the tool's `validation_memory_mib`, so a
//! schema of any shape ends in an ordinary error result while other calls
//! are served, and the host's own memory and CPU stay bounded.

use crate::service::{Served, audit_outcomes, kind, stdio_initialize, stdout_lines, write_line};
use crate::support::{assert_failed, call, fixture, guests, host, temp_dir, test_guests};
use airlock::{Blame, CallRequest, CancellationToken, Retry, ToolSettings};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const DEADLINE: Duration = Duration::from_secs(120);

fn bomb_config(timeout_ms: u64) -> String {
    format!(
        "[tools.schema_bomb]\ncomponent = {:?}\ntimeout_ms = {timeout_ms}\nside_effect = false\nconcurrency_safe = true\n\
         [tools.echo]\ncomponent = {:?}\nside_effect = false\nconcurrency_safe = true\n",
        fixture("schema_bomb").display().to_string(),
        guests().join("echo.wasm").display().to_string(),
    )
}

#[tokio::test]
async fn every_bundled_and_test_schema_compiles_in_the_validator() {
    let host = host("").await;
    // Fixtures refused on purpose.
    let skip = ["bad_name", "bad_schema", "huge_metadata", "panic_metadata", "slow_metadata", "wrong_world"];
    let mut seen = 0;
    for dir in [guests(), test_guests()] {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for path in entries.flatten().map(|entry| entry.path()) {
            let name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            if path.extension().is_none_or(|ext| ext != "wasm") || skip.contains(&name.as_str()) {
                continue;
            }
            if let Err(err) = airlock::load_component(host.runtime(), &path, ToolSettings::default()).await {
                panic!("{name} must still load: {err}");
            }
            seen += 1;
        }
    }
    assert!(seen >= 10, "only {seen} components were checked: run `make guests`");
}

/// 2^30 evaluations of `{}`: hours of CPU. The check stops at the call's
/// deadline, yields to other calls while it runs, and stops at once when
/// the call is cancelled.
#[tokio::test]
async fn a_fan_out_schema_is_stopped_by_the_deadline_and_cancellation_while_others_are_served() {
    let host = Arc::new(host(&bomb_config(2000)).await);
    let result = call(&host, "schema_bomb", json!({})).await;
    assert_eq!(result.outcome_name(), "timeout", "{}", result.text());
    assert!(result.text().contains("2000 ms deadline"), "{}", result.text());
    assert!(result.text().contains("checked against its schema"), "{}", result.text());
    assert!(result.fuel_used.is_none(), "the tool must not run");

    // With a long deadline, the check is still running when another
    // principal's call is answered, and stops when cancelled.
    let host = Arc::new(self::host(&bomb_config(600_000)).await);
    let cancel = CancellationToken::new();
    let bomb = {
        let (host, cancel) = (host.clone(), cancel.clone());
        tokio::spawn(async move {
            let request = CallRequest::new("mallory", "schema_bomb", json!({}));
            host.call_cancellable(request, None, &cancel).await
        })
    };
    for i in 0..3 {
        let echo = host.call(CallRequest::new("alice", "echo", json!({"text": format!("hi {i}")})), None);
        let echo = tokio::time::timeout(DEADLINE, echo).await.expect("another principal is served");
        assert!(!echo.is_error(), "{}", echo.text());
    }
    assert!(!bomb.is_finished(), "the check runs until its 600 s deadline or its cancellation");
    cancel.cancel();
    let bomb = tokio::time::timeout(DEADLINE, bomb).await.expect("cancellation stops the check").expect("joined");
    assert_eq!(bomb.outcome_name(), "cancelled", "{}", bomb.text());
}

/// Resident memory (KiB) and CPU time (clock ticks) of a process.
fn usage(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let rss = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> =
        stat.rsplit_once(')').map(|(_, rest)| rest.split_whitespace().collect()).unwrap_or_default();
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    (rss, ticks(11) + ticks(12))
}

/// The attacks of schemas on the host's memory and CPU, against the built
/// binary, with the server's peak resident memory sampled every 2 ms.
#[test]
fn schema_attacks_on_the_built_binary_stay_within_the_validation_caps() {
    let dir = temp_dir();
    let audit = dir.path().join("audit.jsonl");
    let config = format!(
        "[audit]\nfile = {:?}\n\
         [tools.schema_copy]\ncomponent = {:?}\nside_effect = false\n\
         [tools.schema_bomb]\ncomponent = {:?}\nside_effect = false\ntimeout_ms = 2000\n\
         [tools.echo]\ncomponent = {:?}\nside_effect = false\n",
        audit.display().to_string(),
        fixture("schema_copy").display().to_string(),
        fixture("schema_bomb").display().to_string(),
        guests().join("echo.wasm").display().to_string(),
    );
    let mut server = Served::start(&config, &["serve", "--stdio"]);
    let pid = server.child.id();
    let lines = stdout_lines(&mut server);
    let mut stdin = server.child.stdin.take().expect("stdin");
    stdio_initialize(&mut stdin, &lines);
    let mut id = 0;
    let mut call = |name: &str, arguments: Value| -> Value {
        id += 1;
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments}});
        write_line(&mut stdin, &request.to_string());
        let reply = lines.recv_timeout(DEADLINE).expect("the call is answered");
        assert_eq!(reply["id"], id, "{reply}");
        reply["result"].clone()
    };
    assert_eq!(kind(&call("echo", json!({"text": "warm"}))), "ok");
    let (before, _) = usage(pid);
    let peak = Arc::new(AtomicU64::new(before));
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (peak, stop) = (peak.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                peak.fetch_max(usage(pid).0, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(2));
            }
        })
    };
    let text = |result: &Value| result["content"][0]["text"].as_str().unwrap_or_default().to_owned();

    // 60 KB of arguments whose every item's error would copy 200 KB of
    // schema (about 6 GB in all): stopped at the 64 MiB validation cap.
    let (_, cpu) = usage(pid);
    let started = Instant::now();
    let copy = call("schema_copy", json!({"data": vec![0; 30_000]}));
    let copy_time = started.elapsed();
    assert_eq!(kind(&copy), "invalid_arguments", "{copy}");
    assert!(text(&copy).contains("validation_memory_mib = 64"), "{copy}");
    // The guest alone: a result of 30 000 failing items.
    let output = call("schema_copy", json!({"n": 30_000}));
    assert_eq!(kind(&output), "output_too_large", "{output}");
    assert!(text(&output).contains("validation_memory_mib = 64"), "{output}");
    let (_, after_copy) = usage(pid);

    // Hours of CPU: stopped at the 2 s deadline.
    let started = Instant::now();
    let bomb = call("schema_bomb", json!({}));
    let bomb_time = started.elapsed();
    assert_eq!(kind(&bomb), "timeout", "{bomb}");
    assert!(text(&bomb).contains("2000 ms deadline"), "{bomb}");
    let (_, after_bomb) = usage(pid);

    // Served as before.
    assert_eq!(kind(&call("echo", json!({"text": "still here"}))), "ok");
    stop.store(true, Ordering::Relaxed);
    let _ = sampler.join();
    let (after, _) = usage(pid);
    let peak = peak.load(Ordering::Relaxed);
    let ticks = 100.0; // USER_HZ on Linux
    let copy_cpu = (after_copy - cpu) as f64 / ticks;
    let bomb_cpu = (after_bomb - after_copy) as f64 / ticks;
    eprintln!(
        "schema attacks: RSS {} / peak {} / after {} MiB; copy bomb {:.2} s CPU, {:?} to error; fan-out {:.2} s CPU, {:?} to error",
        before / 1024,
        peak / 1024,
        after / 1024,
        copy_cpu,
        copy_time,
        bomb_cpu,
        bomb_time
    );
    // Each check may hold at most the 64 MiB validation cap (plus the
    // guest's result buffered by the host): the server never grows by
    // gigabytes as it did when schemas were evaluated natively.
    assert!(peak.saturating_sub(before) < 256 << 10, "peak RSS grew by {} MiB", (peak - before) / 1024);
    // One core for at most the 2 s deadline (and a margin for the host's
    // own work); before, one call took 12.4 s.
    assert!(bomb_cpu < 6.0, "the fan-out check took {bomb_cpu} s of CPU");
    assert_eq!(audit_outcomes(&audit), ["ok", "invalid_arguments", "output_too_large", "timeout", "ok"]);
}

/// A principal the policy forbids whatever the arguments costs the host no
/// validation: the denial comes before the schema is evaluated.
#[tokio::test]
async fn a_principal_forbidden_a_tool_is_denied_before_its_arguments_are_validated() {
    let dir = temp_dir();
    let policy = dir.path().join("policy.cedar");
    std::fs::write(
        &policy,
        "@id(\"no-mallory\") @reason(\"mallory may not call schema_bomb\")\n\
         forbid (principal == Airlock::User::\"mallory\", action, resource == Airlock::Tool::\"schema_bomb\");\n\
         permit (principal, action, resource) when { context has arguments };\n",
    )
    .expect("policy");
    let config = format!("{}[policy]\npolicies = {:?}\n", bomb_config(600_000), policy.display().to_string());
    let host = host(&config).await;
    let request = CallRequest::new("mallory", "schema_bomb", json!({}));
    let result = tokio::time::timeout(DEADLINE, host.call(request, None)).await.expect("denied at once");
    assert_eq!(result.outcome_name(), "denied", "{}", result.text());
    assert!(result.text().contains("mallory may not call schema_bomb"), "{}", result.text());
}

/// The tool's own parameters schema, which the validator cannot apply (its
/// `$ref`s chain deeper than the validator's stack), is the tool's fault
/// whatever the arguments: `invalid_schema` blamed on the tool, not the
/// caller's `invalid_arguments`, and nothing runs.
#[tokio::test]
async fn a_schema_the_validator_fails_on_is_blamed_on_the_tool() {
    let config = format!(
        "[tools.schema_deep]\ncomponent = {:?}\nside_effect = false\n",
        fixture("schema_deep").display().to_string()
    );
    let host = host(&config).await;
    for arguments in [json!({}), json!({"anything": [1, 2, 3]})] {
        let result = call(&host, "schema_deep", arguments).await;
        assert_failed(&result, "invalid_schema", "the parameters schema of schema_deep");
        let failure = result.failure().expect("a failure");
        assert_eq!((failure.blame, failure.retry), (Blame::Tool, Retry::No), "{}", result.text());
        assert!(
            result.text().ends_with("Retrying will not help: the tool is at fault, and only its author can fix it."),
            "{}",
            result.text()
        );
        assert!(result.text().len() < 600, "no backtrace of the validator: {}", result.text());
        assert!(result.fuel_used.is_none(), "the tool must not run");
    }
}

/// The same through the binary: the blame and retry are data in MCP's
/// `_meta` and in the audit record.
#[test]
fn a_schema_fault_is_the_tools_in_mcp_meta_and_in_the_audit_record() {
    let dir = temp_dir();
    let audit = dir.path().join("audit.jsonl");
    let config = format!(
        "[audit]\nfile = {:?}\n[tools.schema_deep]\ncomponent = {:?}\nside_effect = false\n",
        audit.display().to_string(),
        fixture("schema_deep").display().to_string(),
    );
    let mut server = Served::start(&config, &["serve", "--stdio"]);
    let lines = stdout_lines(&mut server);
    let mut stdin = server.child.stdin.take().expect("stdin");
    stdio_initialize(&mut stdin, &lines);
    let request =
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "schema_deep", "arguments": {}}});
    write_line(&mut stdin, &request.to_string());
    let reply = lines.recv_timeout(DEADLINE).expect("the call is answered");
    let result = &reply["result"];
    assert_eq!(kind(result), "invalid_schema", "{reply}");
    assert_eq!((&result["_meta"]["airlock/blame"], &result["_meta"]["airlock/retry"]), (&json!("tool"), &json!("no")));
    drop(stdin);
    let _ = server.child.wait();
    assert_eq!(audit_outcomes(&audit), ["invalid_schema"]);
    let record: Value = serde_json::from_str(std::fs::read_to_string(&audit).unwrap().trim()).unwrap();
    assert_eq!((&record["blame"], &record["retry"]), (&json!("tool"), &json!("no")), "{record}");
}
