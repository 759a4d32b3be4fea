//! The memory floods of item 9: many calls of one principal, each
//! allocating up to its own memory cap, against a server in a memory
//! cgroup of 4 GiB (when the bench can make one), with another principal's
//! call meanwhile. The row says how the calls ended, whether the other
//! principal was served, how many records the audit log has, and the
//! cgroup's peak and whether the OOM killer fired.

use super::cgroup::Cgroup;
use super::{Row, Sampler, cpu, fixture_config, outcome, usage};
use crate::Setup;
use crate::process::Http;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// The memory floods: calls of one principal that each allocate up to their
/// own cap, together far more than the server's cgroup holds.
pub(super) fn memory_floods(setup: &Setup) -> Vec<Row> {
    let mut rows = Vec::new();
    let python = setup.guests.join("run_python.wasm").display().to_string();
    rows.push(memory_flood(
        setup,
        "14 concurrent `run_python` calls of one principal allocating until `MemoryError` (512 MiB each), server in \
         a 4 GiB memory cgroup, built-in settings",
        &format!(
            "[tools.run_python]\ncomponent = {python:?}\nside_effect = false\nconcurrency_safe = true\n\
             memory_mib = 512\ntimeout_ms = 30000\n"
        ),
        "run_python",
        json!({"code": "hoard = []\nwhile True:\n    hoard.append(bytearray(1 << 20))"}),
        14,
    ));
    let hostile = setup.test_guests.join("hostile.wasm").display().to_string();
    rows.push(memory_flood(
        setup,
        "31 concurrent 256 MiB memory bombs of one principal, server in a 4 GiB memory cgroup",
        &format!(
            "[tools.hostile]\ncomponent = {hostile:?}\nside_effect = false\nconcurrency_safe = true\n\
             memory_mib = 256\ntimeout_ms = 60000\n"
        ),
        "hostile",
        json!({"attack": "memory_bomb"}),
        31,
    ));
    rows
}

/// `calls` concurrent calls of `tool` with `arguments` by principal alice
/// over HTTP, with bob's `echo` call meanwhile, the server in a 4 GiB
/// memory cgroup (built-in settings otherwise: the budget is derived from
/// the cgroup's limit).
fn memory_flood(setup: &Setup, attack: &str, tool_config: &str, tool: &str, arguments: Value, calls: u64) -> Row {
    const LIMIT: u64 = 4 << 30;
    let tokens: String = ["alice", "bob"]
        .iter()
        .map(|p| format!("[[http.tokens]]\ntoken = \"bench-token-{p}-0123456789\"\nprincipal = {p:?}\n"))
        .collect();
    let audit = setup.scratch.join(format!("memory-flood-{tool}.jsonl"));
    let _ = std::fs::remove_file(&audit);
    let config = fixture_config(
        setup,
        &format!("memory-{tool}.toml"),
        &format!(
            "{tokens}[tools.echo]\ncomponent = {:?}\nside_effect = false\nconcurrency_safe = true\n{tool_config}\n\
             [audit]\nfile = {:?}\n",
            setup.guests.join("echo.wasm").display().to_string(),
            audit.display().to_string()
        ),
    );
    let cgroup = Cgroup::new(&format!("bench-{tool}"), LIMIT);
    let log = setup.scratch.join(format!("memory-{tool}.log"));
    let mut command = match &cgroup {
        Some(cgroup) => {
            let mut command = std::process::Command::new("sh");
            let procs = cgroup.procs().display().to_string();
            command.args(["-c", &format!("echo $$ > {procs:?} && exec \"$@\""), "sh"]);
            command.arg(&setup.binary);
            command
        }
        None => std::process::Command::new(&setup.binary),
    };
    let child = command
        .arg("--config")
        .arg(&config)
        .args(["serve", "--http", "127.0.0.1:0"])
        .env("AIRLOCK_TOOLS_DIR", &setup.guests)
        .env("AIRLOCK_CACHE_DIR", &setup.cache)
        .env("RUST_LOG", "error")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).expect("log file"))
        .spawn()
        .expect("airlock starts");
    let server = crate::process::Killed::new(child);
    let deadline = Instant::now() + Duration::from_secs(120);
    let addr = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if let Some(rest) = text.split("on http://").nth(1)
            && let Some((addr, _)) = rest.split_once('/')
        {
            break addr.to_owned();
        }
        assert!(Instant::now() < deadline, "airlock serve --http did not start: {text}");
        std::thread::sleep(Duration::from_millis(5));
    };
    let pid = server.pid();
    // The tool is loaded (compiled or from the cache) before the attack.
    let mut bob = Http::with_token(&addr, "bench-token-bob-0123456789");
    bob.initialize();
    let call = |client: &mut Http, id: u64, tool: &str, arguments: &Value| -> String {
        let (_, messages) = client.post(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}}));
        messages.iter().find(|m| m["id"] == id).map_or_else(|| "no answer".to_owned(), outcome)
    };
    let warm = call(&mut bob, 1, "echo", &json!({"text": "warm"}));
    let before = usage(pid);
    let cpu_before = cpu(pid);
    let sampler = Sampler::start(pid);
    let started = Instant::now();
    let bombs: Vec<_> = (0..calls)
        .map(|i| {
            let (addr, tool, arguments) = (addr.clone(), tool.to_owned(), arguments.clone());
            std::thread::spawn(move || {
                let mut alice = Http::with_token(&addr, "bench-token-alice-0123456789");
                alice.initialize();
                let (_, messages) = alice.post(&json!({"jsonrpc": "2.0", "id": i + 10, "method": "tools/call",
                    "params": {"name": tool, "arguments": arguments}}));
                messages.iter().find(|m| m["id"] == i + 10).map_or_else(|| "no answer".to_owned(), outcome)
            })
        })
        .collect();
    let served = call(&mut bob, 2, "echo", &json!({"text": "meanwhile"}));
    let mut outcomes: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    for bomb in bombs {
        let outcome = bomb.join().unwrap_or_else(|_| "the client failed".to_owned());
        *outcomes.entry(outcome).or_default() += 1;
    }
    let to_error = started.elapsed();
    let cpu = cpu(pid).saturating_sub(cpu_before);
    let peak = sampler.finish();
    let after = usage(pid);
    let records = std::fs::read_to_string(&audit).unwrap_or_default();
    let finished = records.lines().filter(|l| !l.contains("\"outcome\":\"started\"")).count();
    let oom = match &cgroup {
        Some(cgroup) if cgroup.read("memory.oom_control").contains("under_oom 0") => {
            let max: u64 = cgroup.read("memory.max_usage_in_bytes").trim().parse().unwrap_or(0);
            format!("in a 4 GiB cgroup: peak {} MiB, no OOM kill", max >> 20)
        }
        Some(_) => "in a 4 GiB cgroup: **the OOM killer fired**".to_owned(),
        None => "no memory cgroup could be made".to_owned(),
    };
    let outcomes: Vec<String> = outcomes.iter().map(|(k, n)| format!("{n} × {k}")).collect();
    Row {
        attack: attack.to_owned(),
        outcome: format!(
            "{}; bob's echo meanwhile: {served} (before: {warm}); {finished} audit records; {oom}",
            outcomes.join(", ")
        ),
        before,
        peak,
        after,
        cpu,
        to_error,
    }
}
