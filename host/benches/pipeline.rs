//! `make bench`: per-call latency and throughput of a trivial tool with a
//! fresh instance per call and every limit on, against the same call
//! without the pipeline and against the same logic as a native function.
//! Results are printed and written to `BENCHMARKS.md` (see `--write`).
//!
//! Every number is measured in this one run: compare the ratios, not the
//! absolute values across machines.

use airlock::{CallRequest, Config, Host};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

struct Stats {
    n: usize,
    p50: Duration,
    p99: Duration,
    mean: Duration,
}

fn stats(mut samples: Vec<Duration>) -> Stats {
    samples.sort();
    let n = samples.len();
    let total: Duration = samples.iter().sum();
    Stats { n, p50: samples[n / 2], p99: samples[(n * 99 / 100).min(n - 1)], mean: total / n as u32 }
}

fn us(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e6)
}

fn row(name: &str, s: &Stats) -> String {
    format!("| {name} | {} | {} | {} | {} |", s.n, us(s.p50), us(s.p99), us(s.mean))
}

fn guests() -> PathBuf {
    std::env::var_os("AIRLOCK_GUESTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/guests"))
}

/// The same logic as the `echo` tool, natively: parse, copy, serialize.
fn native_echo(arguments: &str) -> String {
    let value: serde_json::Value = serde_json::from_str(arguments).unwrap_or_default();
    json!({ "text": value["text"] }).to_string()
}

async fn measure<F, Fut>(n: usize, mut f: F) -> Stats
where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    for _ in 0..n / 10 {
        f().await;
    }
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let started = Instant::now();
        f().await;
        samples.push(started.elapsed());
    }
    stats(samples)
}

async fn throughput(host: &Host, threads: usize, duration: Duration) -> f64 {
    let deadline = Instant::now() + duration;
    let tasks: Vec<_> = (0..threads)
        .map(|_| {
            let host = host.clone();
            tokio::spawn(async move {
                let mut calls = 0u64;
                while Instant::now() < deadline {
                    let result = host.call(CallRequest::new("bench", "echo", json!({"text": "hi"})), None).await;
                    assert!(!result.is_error, "{}", result.content);
                    calls += 1;
                }
                calls
            })
        })
        .collect();
    let mut total = 0;
    for task in tasks {
        total += task.await.unwrap_or(0);
    }
    total as f64 / duration.as_secs_f64()
}

fn main() {
    let write = std::env::args().any(|a| a == "--write");
    let iterations: usize = std::env::var("AIRLOCK_BENCH_N").ok().and_then(|v| v.parse().ok()).unwrap_or(5000);
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let echo = guests().join("echo.wasm");
    let cache = std::env::temp_dir().join("airlock-bench-cache");
    let audit = std::env::temp_dir().join(format!("airlock-bench-audit-{}.jsonl", std::process::id()));
    let text = format!(
        "[engine]\ncache_dir = {:?}\n[tools.echo]\ncomponent = {:?}\nside_effect = false\nconcurrency_safe = true\n\
         [audit]\nfile = {:?}\n",
        cache.display().to_string(),
        echo.display().to_string(),
        audit.display().to_string()
    );
    let config = Config::parse(&text, "bench.toml", Path::new(".")).expect("config");
    let host = runtime.block_on(Host::builder().config(config).build()).expect("host");
    let args = r#"{"text":"hi"}"#;

    let native = runtime.block_on(measure(iterations, || async {
        std::hint::black_box(native_echo(std::hint::black_box(args)));
    }));
    let bare = runtime.block_on(measure(iterations, || async {
        let execution = airlock::bench::execute_only(&host, "echo", args).await.expect("echo loaded");
        assert!(execution.result.is_ok());
    }));
    let full = runtime.block_on(measure(iterations, || async {
        let result = host.call(CallRequest::new("bench", "echo", json!({"text": "hi"})), None).await;
        assert!(!result.is_error, "{}", result.content);
    }));
    let one = runtime.block_on(throughput(&host, 1, Duration::from_secs(3)));
    let two = runtime.block_on(throughput(&host, 2, Duration::from_secs(3)));

    let overhead_p50 = full.p50.saturating_sub(bare.p50);
    let report = [
        "| measurement | iterations | p50 µs | p99 µs | mean µs |".to_owned(),
        "|---|---|---|---|---|".to_owned(),
        row("native Rust echo (floor)", &native),
        row("execute only: fresh instance + call", &bare),
        row("full pipeline: parse → … → audit (flush)", &full),
        String::new(),
        format!("Pipeline overhead over execute only (p50): {} µs", us(overhead_p50)),
        String::new(),
        format!("Throughput, full pipeline: {one:.0} calls/s with 1 task, {two:.0} calls/s with 2 tasks (3 s each)."),
    ]
    .join("\n");
    println!("{report}");
    let _ = std::fs::remove_file(&audit);
    let _ = std::fs::remove_file(audit.with_extension("jsonl.head"));
    if write {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../BENCHMARKS.md");
        let machine = format!(
            "{} cores, {}",
            std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
            std::fs::read_to_string("/proc/cpuinfo")
                .ok()
                .and_then(|c| c.lines().find(|l| l.starts_with("model name")).map(|l| l
                    .split(':')
                    .nth(1)
                    .unwrap_or("")
                    .trim()
                    .to_owned()))
                .unwrap_or_default()
        );
        let doc = format!(
            "# Benchmarks\n\nProduced by `make bench` (`cargo bench -p airlock --bench pipeline -- --write`) on {machine}.\nAll figures come from one run; compare ratios, not absolute values across machines.\n\n## Per-call latency of `echo` (fresh instance per call, all limits on)\n\n{report}\n"
        );
        if let Err(err) = std::fs::write(&path, doc) {
            eprintln!("cannot write {}: {err}", path.display());
        }
    }
}
