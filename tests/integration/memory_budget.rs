//! The host memory budget (`[engine] memory_budget_mib`): every call
//! reserves what its limits let it hold before it runs, one principal holds
//! at most its share, and the sum stays under the budget whatever many
//! calls ask for.
//!
//! Outcomes and counts are asserted, never durations: a call that finds no
//! room waits until its own deadline, which a sleeping call holding the
//! memory outlasts by minutes.

use crate::cgroup::Cgroup;
use crate::service::{Mcp, Served, audit_outcomes, kind, wait_ready};
use crate::support::{assert_failed, fixture, host, temp_dir, tool};
use airlock::{Blame, CallRequest, CancellationToken, Retry};
use serde_json::json;
use std::time::{Duration, Instant};

const MIB: u64 = 1 << 20;

/// `hostile` (a long deadline) and `echo` (a short one, for calls expected
/// to wait in vain), both with `memory_mib = 256`: each call reserves
/// 256 + 64 MiB of memory plus its output's working set and its content
/// blocks' (both are components of contract 0.3.0), about 363 MiB.
fn config(budget_mib: u64, extra: &str) -> String {
    format!(
        "[engine]\ncache_dir = \"{{cache}}\"\nmemory_budget_mib = {budget_mib}\n\
         [tools.hostile]\ncomponent = {:?}\nside_effect = false\nconcurrency_safe = true\n\
         timeout_ms = 600000\nmemory_mib = 256\n\
         [tools.echo]\ncomponent = {:?}\nside_effect = false\nconcurrency_safe = true\n\
         timeout_ms = 300\nmemory_mib = 256\n{extra}",
        fixture("hostile").display().to_string(),
        tool("echo").display().to_string(),
    )
}

/// What the host's budget has reserved now, from `/metrics`' text.
fn reserved(text: &str) -> u64 {
    let line = text.lines().find(|l| l.starts_with("airlock_memory_reserved_bytes ")).expect("the gauge");
    line.rsplit(' ').next().and_then(|n| n.parse().ok()).expect("a number")
}

#[tokio::test]
async fn a_principal_past_its_share_is_busy_and_another_principal_is_served() {
    // 1024 MiB, of which a principal holds at most half beyond its first
    // call.
    let host = host(&config(1024, "")).await;
    let cancel = CancellationToken::new();
    let sleeping = {
        let host = host.clone();
        let request = CallRequest::new("alice", "hostile", json!({"attack": "sleep", "ms": 600_000}));
        let cancel = cancel.clone();
        tokio::spawn(async move { host.call_cancellable(request, None, &cancel).await })
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while reserved(&host.metrics_text()) == 0 {
        assert!(Instant::now() < deadline, "the sleeping call never reserved its memory");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let held = reserved(&host.metrics_text());
    // 256 + 64 MiB, the output's working set, the validator of its
    // output schema and its content blocks (3 × 8 MiB): about 427 MiB.
    assert!((330 * MIB..=434 * MIB).contains(&held), "a hostile call reserves its limits: {held}");
    // Alice's second call would pass her share: it waits for its deadline.
    let busy = host.call(CallRequest::new("alice", "echo", json!({"text": "me too"})), None).await;
    assert_failed(&busy, "busy", "memory_budget_mib` = 1024 MiB");
    assert!(busy.text().contains("memory_share_percent"), "{}", busy.text());
    // Bob holds nothing: his call is served at once.
    let echo = host.call(CallRequest::new("bob", "echo", json!({"text": "hi"})), None).await;
    assert!(!echo.is_error(), "{}", echo.text());
    cancel.cancel();
    let stopped = sleeping.await.unwrap();
    assert_eq!(stopped.outcome_name(), "cancelled", "{}", stopped.text());
    // Everything is given back.
    assert_eq!(reserved(&host.metrics_text()), 0);
}

#[tokio::test]
async fn a_call_larger_than_the_whole_budget_is_refused_naming_both_keys() {
    // memory_budget_mib = 200 cannot hold one hostile call (256 MiB).
    let host = host(&config(200, "")).await;
    let result = host.call(CallRequest::new("alice", "hostile", json!({"attack": "sleep", "ms": 1})), None).await;
    assert_failed(&result, "internal", "memory_budget_mib` = 200 MiB");
    // No wait can make room: only the operator can, and the model is told so.
    let failure = result.failure().expect("a failure");
    assert_eq!((failure.blame, failure.retry), (Blame::Operator, Retry::No));
    assert!(
        result.text().ends_with("Retrying will not help: the operator must change the host's settings first."),
        "{}",
        result.text()
    );
}

/// The peak resident memory of process `pid` (`VmHWM`), in bytes.
fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kib = status.lines().find_map(|l| l.strip_prefix("VmHWM:")).and_then(|v| v.split_whitespace().next());
    kib.and_then(|k| k.parse::<u64>().ok()).map_or(0, |k| k * 1024)
}

#[test]
fn concurrent_memory_bombs_of_one_principal_stay_under_the_budget_and_another_is_served() {
    // The server in a 1.5 GiB memory cgroup when the test can make one, and
    // with no budget configured: it is derived from the cgroup's limit
    // (1.5 GiB less a quarter: 1152 MiB). Elsewhere the budget is set to
    // the same number and the peak is read from the process alone.
    const LIMIT: u64 = 1536 * MIB;
    let cgroup = Cgroup::new("budget", LIMIT);
    let budget = match cgroup {
        Some(_) => String::new(),
        None => "memory_budget_mib = 1152\n".to_owned(),
    };
    let dir = temp_dir();
    let audit = dir.path().join("audit.jsonl");
    let text = config(1152, "")
        .replace("memory_budget_mib = 1152\n", &budget)
        .replace("{cache}", &crate::support::cache_dir().display().to_string());
    let text = format!(
        "{text}[audit]\nfile = {:?}\n[http]\ntokens = [{{ token = \"{ALICE}\", principal = \"alice\" }}, \
         {{ token = \"{BOB}\", principal = \"bob\" }}]\n",
        audit.display().to_string()
    );
    // The server joins the cgroup before it starts, so the budget it
    // derives is the cgroup's.
    let server = match &cgroup {
        Some(cgroup) => {
            let procs = cgroup.procs().display().to_string();
            let binary = crate::service::binary().display().to_string();
            let script = format!("echo $$ > {procs:?} && exec {binary:?} \"$@\"");
            Served::start_wrapped(dir, &text, &["sh", "-c", &script, "sh"], &["serve", "--http", "127.0.0.1:0"])
        }
        None => Served::start_in(dir, &text, &["serve", "--http", "127.0.0.1:0"]),
    };
    let pid = server.child.id();
    let addr = server.announced("serving MCP");
    wait_ready(&addr);
    // 14 calls at once that each allocate until their 256 MiB cap: 3.5 GiB
    // in all, more than twice the cgroup's limit.
    let bombs: Vec<_> = (0..14)
        .map(|i| {
            let addr = addr.clone();
            std::thread::spawn(move || {
                let alice = Mcp::connect(&addr, Some(ALICE));
                alice.call(i + 1, "hostile", json!({"attack": "memory_bomb"}), &[])
            })
        })
        .collect();
    // Bob is served meanwhile.
    let bob = Mcp::connect(&addr, Some(BOB));
    let echo = bob.call(100, "echo", json!({"text": "still here"}), &[]);
    assert_eq!(kind(&echo), "ok", "{echo}");
    let kinds: Vec<String> = bombs.into_iter().map(|b| kind(&b.join().unwrap()).to_owned()).collect();
    // Each bomb ran into its own memory cap; none took the server down.
    assert!(kinds.iter().all(|k| k == "out_of_memory"), "{kinds:?}\n{}", server.stderr.lock().unwrap());
    let after = bob.call(101, "echo", json!({"text": "alive"}), &[]);
    assert_eq!(kind(&after), "ok", "{after}");
    let peak = peak_rss(pid);
    assert!(peak < LIMIT, "peak RSS {} MiB over the {} MiB limit", peak / MIB, LIMIT / MIB);
    if let Some(cgroup) = &cgroup {
        let max_usage: u64 = cgroup.read("memory.max_usage_in_bytes").trim().parse().unwrap_or(0);
        assert!(max_usage < LIMIT, "cgroup peak {} MiB", max_usage / MIB);
        assert!(cgroup.read("memory.oom_control").contains("under_oom 0"), "{}", cgroup.read("memory.oom_control"));
    }
    // Every call that ran has its record.
    let outcomes = audit_outcomes(&audit);
    assert_eq!(outcomes.iter().filter(|o| *o == "out_of_memory").count(), 14, "{outcomes:?}");
    assert_eq!(outcomes.iter().filter(|o| *o == "ok").count(), 2, "{outcomes:?}");
    eprintln!(
        "14 memory bombs: peak RSS {} MiB ({}), outcomes {kinds:?}",
        peak / MIB,
        if cgroup.is_some() { "in a 1536 MiB cgroup" } else { "no cgroup: memory_budget_mib = 1152" }
    );
    drop(server);
}

const ALICE: &str = "budget-test-alice-token-0123456789abcdef";
const BOB: &str = "budget-test-bob-token-0123456789abcdef";

#[test]
fn a_result_of_many_values_is_refused_before_it_is_parsed() {
    // 20 million empty objects: 60 MB of JSON, under an output cap raised to
    // 64 MiB, which parsed would have cost the host about 25 times its size.
    // Values are counted in the text before anything is parsed: the result
    // is refused past max_output_values, and the server's peak stays a small
    // multiple of the output cap (its guest's 256 MiB included).
    let dir = temp_dir();
    let text = format!(
        "[engine]\ncache_dir = {:?}\n[tools.hostile]\ncomponent = {:?}\nside_effect = false\ntimeout_ms = 300000\n\
         memory_mib = 256\nmax_output_bytes = {}\n",
        crate::support::cache_dir().display().to_string(),
        fixture("hostile").display().to_string(),
        64 * MIB
    );
    let server = Served::start_in(dir, &text, &["serve", "--http", "127.0.0.1:0"]);
    let pid = server.child.id();
    let addr = server.announced("serving MCP");
    wait_ready(&addr);
    let mcp = Mcp::connect(&addr, None);
    let reply = mcp.call(1, "hostile", json!({"attack": "many_values"}), &[]);
    assert_eq!(kind(&reply), "output_too_large", "{reply}");
    let said = reply.to_string();
    assert!(said.contains("more than 262144 JSON values (max_output_values)"), "{said}");
    let peak = peak_rss(pid);
    assert!(peak < 512 * MIB, "peak RSS {} MiB for a 64 MiB output cap", peak / MIB);
    let after = mcp.call(2, "hostile", json!({"attack": "ok"}), &[]);
    assert_eq!(kind(&after), "ok", "{after}");
    eprintln!("20 million empty objects (60 MB): peak RSS {} MiB", peak / MIB);
}
