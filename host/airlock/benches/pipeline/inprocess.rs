//! Items 1, 2, 5 and 8: per-call latency of `echo` through the whole
//! pipeline against a bare instantiate + call and a native function, the
//! cost of each stage, throughput on 1 and 2 threads, deadline precision,
//! and the cost of the audit record per durability setting.

use crate::stats::{self, HEADER_MS, HEADER_US, Stats, measure, measure_sync, row_ms, row_us, us};
use crate::{Report, Setup};
use airlock::{CallRequest, Config, ErrorKind, Host, Policy, ToolFacts};
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

/// The same logic as the `echo` tool, natively: parse, copy, serialize.
fn native_echo(arguments: &str) -> String {
    let value: Value = serde_json::from_str(arguments).unwrap_or_default();
    json!({ "text": value["text"] }).to_string()
}

/// A host serving `echo` (and `hostile` for the deadline items), with the
/// audit log at `durability` (`None`: no audit log).
pub async fn echo_host(setup: &Setup, durability: Option<&str>) -> Host {
    let mut text = format!(
        "[engine]\ncache_dir = {:?}\n[tools.echo]\ncomponent = {:?}\nside_effect = false\nconcurrency_safe = true\n\
         [tools.hostile]\ncomponent = {:?}\nside_effect = false\nconcurrency_safe = true\ntimeout_ms = 50\n\
         fuel = 1000000000000\n",
        setup.cache.display().to_string(),
        setup.guests.join("echo.wasm").display().to_string(),
        setup.test_guests.join("hostile.wasm").display().to_string(),
    );
    if let Some(durability) = durability {
        let file = setup.scratch.join(format!("audit-{durability}-{}.jsonl", std::process::id()));
        let _ = std::fs::remove_file(&file);
        let _ = std::fs::remove_file(file.with_extension("jsonl.head"));
        text.push_str(&format!("[audit]\nfile = {:?}\ndurability = {durability:?}\n", file.display().to_string()));
    }
    let config = Config::parse(&text, "bench.toml", Path::new(".")).expect("bench config");
    Host::builder()
        .compiler(env!("CARGO_BIN_EXE_airlock"))
        .config(config)
        .build()
        .await
        .expect("host loads echo and hostile")
}

async fn echo_call(host: &Host) {
    let result = host.call(CallRequest::new("bench", "echo", json!({"text": "hi"})), None).await;
    assert!(!result.is_error(), "{}", result.text());
}

/// Calls per second of `threads` OS threads, each with its own
/// single-threaded runtime, calling for `duration`.
fn throughput(host: &Host, threads: usize, duration: Duration) -> f64 {
    let started = Instant::now();
    let deadline = started + duration;
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let host = host.clone();
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
                runtime.block_on(async {
                    let mut calls = 0u64;
                    while Instant::now() < deadline {
                        echo_call(&host).await;
                        calls += 1;
                    }
                    calls
                })
            })
        })
        .collect();
    let total: u64 = handles.into_iter().map(|h| h.join().unwrap_or(0)).sum();
    total as f64 / started.elapsed().as_secs_f64()
}

/// Times a bare call, a pipeline call without an audit log and one with
/// it, interleaved (one of each per round, after `n / 10` warm-up rounds),
/// so that load from other processes falls on all three alike.
async fn interleaved(n: usize, host: &Host, plain: &Host, args: &str) -> [Stats; 3] {
    let mut samples: [Vec<Duration>; 3] = Default::default();
    for round in 0..n + n / 10 {
        for (which, samples) in samples.iter_mut().enumerate() {
            let started = Instant::now();
            match which {
                0 => {
                    let execution = airlock::bench::execute_only(host, "echo", args).await.expect("echo loaded");
                    assert!(execution.result.is_ok());
                }
                1 => echo_call(plain).await,
                _ => echo_call(host).await,
            }
            if round >= n / 10 {
                samples.push(started.elapsed());
            }
        }
    }
    samples.map(stats::stats)
}

/// Time `n` awaits of `work` on `runtime`, one at a time.
fn measure_async<F: Future<Output = ()>>(
    runtime: &tokio::runtime::Runtime,
    n: usize,
    mut work: impl FnMut() -> F,
) -> Stats {
    runtime.block_on(async {
        let mut samples = Vec::with_capacity(n);
        for _ in 0..n {
            let started = std::time::Instant::now();
            work().await;
            samples.push(started.elapsed());
        }
        stats::stats(samples)
    })
}

/// The stage microbenchmarks: the same operations each stage performs on
/// the `echo` call, timed alone.
fn stages(runtime: &tokio::runtime::Runtime, host: &Host, n: usize) -> Vec<(String, Stats)> {
    let registry = host.tools();
    let tool = registry.get("echo").expect("echo loaded");
    let raw = json!({"text": "hi"});
    let parameters = jsonschema::validator_for(tool.parameters.json()).expect("schema compiles");
    let output = tool.output.as_ref().map(|s| jsonschema::validator_for(s.json()).expect("schema compiles"));
    let policy = Policy::default_policy();
    let facts = ToolFacts { name: "echo", side_effect: false };
    let reads_context = Policy::from_text(
        "permit (principal, action, resource) when { context has arguments && context.arguments has text };",
        "bench.cedar",
        None,
    )
    .expect("policy parses");
    let budget =
        airlock::memory_budget::MemoryBudget::with_total(16 << 30, 50, airlock::memory_budget::Source::Configured);
    let holder = airlock::memory_budget::Holder::principal("bench");
    let never = airlock::CancellationToken::new();
    vec![
        (
            "schedule: reserve the call's memory from the host budget and give it back (two, with the argument check's)"
                .to_owned(),
            measure_async(runtime, n, || async {
                let far = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
                for bytes in [64 << 20, 211 << 20] {
                    let reservation = budget.reserve(&holder, bytes, far, &never).await.expect("room");
                    std::hint::black_box(reservation);
                }
            }),
        ),
        (
            "parse (copy + serialize the arguments once)".to_owned(),
            measure_sync(n, || {
                let text = std::hint::black_box(&raw).to_string();
                std::hint::black_box((raw.clone(), text));
            }),
        ),
        (
            "validate (parameters schema, in the metered validator)".to_owned(),
            measure_async(runtime, n, || async {
                let text = r#"{"text":"hi"}"#;
                assert_eq!(airlock::bench::validate_only(host, "echo", text).await, Some(true));
            }),
        ),
        (
            "validate natively (the same schema with jsonschema in the host, unmetered: the floor)".to_owned(),
            measure_sync(n, || assert!(parameters.is_valid(&raw))),
        ),
        (
            "authorize (default policy, decision cached)".to_owned(),
            measure_sync(n, || {
                std::hint::black_box(policy.decide("bench", &facts, &raw));
            }),
        ),
        (
            "authorize (a policy reading the arguments: full Cedar evaluation)".to_owned(),
            measure_sync(n, || {
                std::hint::black_box(reads_context.decide("bench", &facts, &raw));
            }),
        ),
        (
            "check output (parse JSON + output schema)".to_owned(),
            measure_sync(n, || {
                let value: Value = serde_json::from_str(r#"{"text":"hi"}"#).expect("json");
                if let Some(output) = &output {
                    assert!(output.is_valid(&value));
                }
                std::hint::black_box(value.to_string());
            }),
        ),
    ]
}

/// Runs the in-process items and adds their sections to `report`.
pub fn run(setup: &Setup, report: &mut Report) {
    let n = setup.iterations;
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let host = runtime.block_on(echo_host(setup, Some("flush")));
    let plain = runtime.block_on(echo_host(setup, None));
    let args = r#"{"text":"hi"}"#;

    let native = measure_sync(n, || {
        std::hint::black_box(native_echo(std::hint::black_box(args)));
    });
    let [bare, no_audit, full] = runtime.block_on(interleaved(n, &host, &plain, args));
    let overhead = full.p50.saturating_sub(bare.p50);
    let stage_rows = stages(&runtime, &host, n);

    let mut s = format!(
        "## 1. Per-call latency of `echo` (fresh instance per call, all limits on, in-process)\n\n{HEADER_US}\n{}\n{}\n{}\n{}\n\n",
        row_us("native Rust echo (the floor)", &native),
        row_us("bare: fresh store + instantiate + call (same engine)", &bare),
        row_us("full pipeline without an audit log", &no_audit),
        row_us(
            "full pipeline: resolve → parse → validate → authorize → execute → check → render → audit (flush)",
            &full
        ),
    );
    s += &format!(
        "Pipeline overhead over bare (p50): **{} µs**; full/bare p50 ratio {:.2}; bare/native p50 ratio {:.0}.\n\n",
        us(overhead),
        full.p50.as_secs_f64() / bare.p50.as_secs_f64(),
        bare.p50.as_secs_f64() / native.p50.as_secs_f64().max(1e-9),
    );
    s += &format!(
        "The three rows above are measured interleaved, one call of each per round. Per stage (each stage's work on the `echo` call, timed alone):\n\n{HEADER_US}\n{}\n| audit record (flush): full pipeline p50 − no-audit p50 | | {} | | |\n\n",
        stage_rows.iter().map(|(name, st)| row_us(name, st)).collect::<Vec<_>>().join("\n"),
        us(full.p50.saturating_sub(no_audit.p50)),
    );
    report.figure("full_p50_us", full.p50.as_secs_f64() * 1e6);
    report.figure("full_p99_us", full.p99.as_secs_f64() * 1e6);
    report.figure("overhead_p50_us", overhead.as_secs_f64() * 1e6);

    let secs = setup.throughput_secs;
    let one = throughput(&host, 1, Duration::from_secs_f64(secs));
    let two = throughput(&host, 2, Duration::from_secs_f64(secs));
    s += &format!(
        "## 2. Throughput of the full pipeline (`echo`, audit flush)\n\n| threads | calls/s |\n|---|---|\n| 1 | {one:.0} |\n| 2 | {two:.0} |\n\n\
         Each thread runs its own single-threaded tokio runtime and calls in a loop for {secs} s; 2 threads / 1 thread = {:.2}.\n\n",
        two / one.max(1e-9)
    );
    report.figure("two_threads_calls_s", two);
    report.figure("two_threads_ratio", two / one.max(1e-9));

    // Item 5: deadline precision, for a guest spinning and for a guest
    // blocked in a host call (`sleep`).
    let deadline = Duration::from_millis(50);
    let rounds = setup.precision_rounds;
    let mut rows = Vec::new();
    let mut worst_p99 = Duration::ZERO;
    for (name, args) in [
        ("runaway loop", json!({"attack": "loop"})),
        ("blocked in a host sleep", json!({"attack": "sleep", "ms": 10_000})),
    ] {
        let mut overshoot = Vec::with_capacity(rounds);
        for _ in 0..rounds {
            let started = Instant::now();
            let result = runtime.block_on(plain.call(CallRequest::new("bench", "hostile", args.clone()), None));
            let elapsed = started.elapsed();
            assert_eq!(result.kind(), Some(ErrorKind::Timeout), "{}", result.text());
            overshoot.push(elapsed.saturating_sub(deadline));
        }
        let st = stats::stats(overshoot);
        worst_p99 = worst_p99.max(st.p99);
        rows.push(format!("{} | {} |", row_ms(name, &st).trim_end_matches(" |"), stats::ms(st.max)));
    }
    s += &format!(
        "## 5. Deadline precision (50 ms deadline, overshoot = call time − 50 ms, full pipeline)\n\n{}\n{}\n\n",
        HEADER_MS
            .replace("mean ms |\n", "mean ms | max ms |\n")
            .replace("|---|---|---|---|---|", "|---|---|---|---|---|---|"),
        rows.join("\n")
    );
    report.figure("overshoot_p99_ms", worst_p99.as_secs_f64() * 1e3);

    // Item 8: the audit record per durability setting.
    let fsync_host = runtime.block_on(echo_host(setup, Some("fsync")));
    let fsync = runtime.block_on(measure(setup.fsync_iterations, || echo_call(&fsync_host)));
    let flush_cost = full.p50.saturating_sub(no_audit.p50);
    s += &format!(
        "## 8. Audit cost per call (`echo`, full pipeline)\n\n{HEADER_US}\n{}\n{}\n{}\n\n\
         Added by the record (p50 difference): flush **{} µs**, fsync {} µs (log and head file `fdatasync`'d before the result returns).\n\n",
        row_us("no audit log", &no_audit),
        row_us("durability = \"flush\" (one write(2) of the record + the head file, before returning)", &full),
        row_us("durability = \"fsync\"", &fsync),
        us(flush_cost),
        us(fsync.p50.saturating_sub(no_audit.p50)),
    );
    report.figure("audit_flush_p50_us", flush_cost.as_secs_f64() * 1e6);
    report.section(s);
    drop(runtime);
}
