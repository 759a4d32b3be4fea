//! `make bench`: the benchmark suite, with side-by-side baselines. Every
//! figure is measured in this one run and reported as a distribution (p50, p99, mean, iterations) or a ratio;
//! with `--write` the results replace the generated part of
//! `BENCHMARKS.md` (everything above the `<!-- notes -->` marker).
//!
//! Sections: 1–2, 5 and 8 in-process ([`inprocess`]), 3, 4 (ready time)
//! and 7 through the built `airlock` binary ([`process`]), 4 (compile vs
//! cache) and 6 with the wasmtime API ([`compute`]), 9 (attacks on the
//! host's own resources) through the binary ([`attacks`]), 10 (the
//! interpreter tools) in-process ([`interpreters`]).
//!
//! Environment: `AIRLOCK_GUESTS`, `AIRLOCK_TEST_GUESTS` (built guests),
//! `AIRLOCK_BIN` (default `$CARGO_TARGET_DIR/release/airlock`),
//! `AIRLOCK_CACHE_DIR`, `AIRLOCK_BENCH_N` (iterations of the latency
//! items, default 5000). `--only inprocess|interpreters|process|compute|attacks` runs one
//! part.

// Test code may unwrap, expect, panic and index: a failed assertion should
// read as one (the host's code denies them, Cargo.toml `[workspace.lints.clippy]`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

mod attacks;
mod compute;
mod inprocess;
mod interpreters;
mod peers;
mod process;
mod stats;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Where things are and how long to measure.
pub struct Setup {
    pub guests: PathBuf,
    pub test_guests: PathBuf,
    pub binary: PathBuf,
    /// The peers of item 3: the plain rmcp echo server (`cargo build
    /// --release -p airlock-mcp --example rmcp_echo`), and the Python that
    /// runs the Python SDK's echo server, with its script.
    pub rmcp_echo: PathBuf,
    pub python: PathBuf,
    pub python_echo: PathBuf,
    pub cache: PathBuf,
    pub scratch: PathBuf,
    pub iterations: usize,
    pub fsync_iterations: usize,
    pub mcp_iterations: usize,
    pub ready_iterations: usize,
    pub compile_iterations: usize,
    pub precision_rounds: usize,
    pub throughput_secs: f64,
    pub compute_mib: u32,
    pub compute_rounds: usize,
    pub interpreter_iterations: usize,
}

/// The sections written so far, and the key figures for the targets.
#[derive(Default)]
pub struct Report {
    sections: Vec<String>,
    figures: BTreeMap<&'static str, f64>,
    /// Item 4, compile vs cache (from [`compute`]).
    pub compile: String,
    /// Item 4, ready time (from [`process`]).
    pub startup: String,
}

impl Report {
    /// Add a section (markdown, starting with its `##` heading).
    pub fn section(&mut self, text: String) {
        println!("{text}");
        self.sections.push(text);
    }

    /// Record a figure a target is checked against.
    pub fn figure(&mut self, name: &'static str, value: f64) {
        self.figures.insert(name, value);
    }

    fn get(&self, name: &str) -> Option<f64> {
        self.figures.get(name).copied()
    }
}

fn env_path(name: &str, default: &Path) -> PathBuf {
    std::env::var_os(name).map(PathBuf::from).unwrap_or_else(|| default.to_path_buf())
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned());
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| m.lines().next().and_then(|l| l.split_whitespace().nth(1)).and_then(|k| k.parse::<u64>().ok()))
        .map_or_else(String::new, |kib| format!(", {:.1} GiB RAM", kib as f64 / 1048576.0));
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load = load.split_whitespace().take(3).collect::<Vec<_>>().join(" ");
    format!("{cpu}, {cores} cores{memory}, Linux {}; load average at start {load}", kernel.trim())
}

/// The highest 1-minute load average at the start of a run whose figures
/// `--write` puts in BENCHMARKS.md.
const MAX_LOAD_TO_WRITE: f64 = 1.5;

/// The 1-minute load average now (∞ when it cannot be read: nothing is
/// written from a run whose load is unknown).
fn load_average() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|load| load.split_whitespace().next().and_then(|first| first.parse().ok()))
        .unwrap_or(f64::INFINITY)
}

fn targets(report: &Report) -> String {
    let mut lines = vec!["| target | measured | bound | verdict |".to_owned(), "|---|---|---|---|".to_owned()];
    // The speed targets, each against a figure of this run.
    let checks: [(&str, &str, f64, &str, bool); 23] = [
        ("(10) fresh `run_python` `print(1+1)` p50", "python_fresh_ms", 1.0, "ms", false),
        ("(10) fresh `run_js` `1+1` p50", "js_fresh_ms", 0.3, "ms", false),
        ("(10) `run_python` call inside a session p50", "python_session_ms", 0.2, "ms", false),
        ("(10) `run_js` call inside a session p50", "js_session_ms", 0.05, "ms", false),
        ("(3) MCP stdio raw round trip p50", "stdio_p50_us", 60.0, "µs", false),
        ("(3) MCP stdio round trip / in-process full pipeline, p50", "stdio_over_call", 2.0, "×", false),
        ("(3) server CPU per stdio call", "stdio_cpu_us", 50.0, "µs", false),
        ("(3) MCP streamable HTTP round trip p50", "http_p50_us", 120.0, "µs", false),
        ("(3) HTTP p50 / stdio p50, 1 in flight", "http_over_stdio_p50", 1.5, "×", false),
        ("(3) server CPU per HTTP call / per stdio call", "http_over_stdio_cpu", 2.0, "×", false),
        ("(3) HTTP calls/s, 8 connections / stdio's, 8 in flight", "http_8_over_stdio_8", 1.0, "×", true),
        ("(3) stdio, 8 calls in flight", "stdio_8_calls_s", 40000.0, "calls/s", true),
        ("(3) stdio p50, 1 in flight / the rmcp floor's", "stdio_over_rmcp_p50", 1.2, "×", false),
        ("(3) server CPU per stdio call / the rmcp floor's", "stdio_over_rmcp_cpu", 1.3, "×", false),
        ("(3) stdio calls/s, 8 in flight / the rmcp floor's", "stdio_8_over_rmcp", 0.7, "×", true),
        ("(1) full pipeline `echo` p50", "full_p50_us", 20.0, "µs", false),
        ("(1) pipeline overhead over bare, p50", "overhead_p50_us", 5.0, "µs", false),
        ("(2) calls/s with 2 threads", "two_threads_calls_s", 70000.0, "calls/s", true),
        ("(2) 2 threads / 1 thread", "two_threads_ratio", 1.9, "×", true),
        ("(8) audit flush, added p50", "audit_flush_p50_us", 3.0, "µs", false),
        ("(6) fuel + epoch vs native", "compute_ratio", 1.3, "×", false),
        ("(4) 1 cached tool ready, p50", "ready_one_ms", 5.0, "ms", false),
        ("(4) bundled tools ready, p50", "ready_bundled_ms", 25.0, "ms", false),
    ];
    // Ratios of two figures of this run.
    let ratio = |over: &str, under: &str| Some(report.get(over)? / report.get(under)?);
    let get = |key: &str| match key {
        "stdio_over_call" => ratio("stdio_p50_us", "full_p50_us"),
        key => report.get(key),
    };
    for (what, key, bound, unit, at_least) in checks {
        match get(key) {
            Some(value) => lines.push(stats::target(what, value, bound, unit, at_least)),
            None => lines.push(format!("| {what} | not measured in this run | | |")),
        }
    }
    lines.join("\n")
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let write = args.iter().any(|a| a == "--write");
    let only = args.iter().position(|a| a == "--only").and_then(|i| args.get(i + 1)).cloned();
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let target = env_path("CARGO_TARGET_DIR", &manifest.join("../../target"));
    let iterations: usize = std::env::var("AIRLOCK_BENCH_N").ok().and_then(|v| v.parse().ok()).unwrap_or(5000);
    let scratch = std::env::temp_dir().join(format!("airlock-bench-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).expect("scratch directory");
    let setup = Setup {
        guests: env_path("AIRLOCK_GUESTS", &target.join("guests")),
        test_guests: env_path("AIRLOCK_TEST_GUESTS", &target.join("test-guests")),
        binary: env_path("AIRLOCK_BIN", &target.join("release/airlock")),
        rmcp_echo: env_path("AIRLOCK_BENCH_RMCP_ECHO", &target.join("release/examples/rmcp_echo")),
        python: env_path("AIRLOCK_BENCH_PYTHON", &manifest.join("../../.venv/bin/python")),
        python_echo: manifest.join("benches/pipeline/peers/python_echo.py"),
        cache: env_path("AIRLOCK_CACHE_DIR", &target.join("airlock-cache")),
        scratch: scratch.clone(),
        iterations,
        fsync_iterations: (iterations / 25).max(20),
        mcp_iterations: (iterations / 2).max(100),
        ready_iterations: 20,
        compile_iterations: 5,
        precision_rounds: 40,
        throughput_secs: 3.0,
        compute_mib: 16,
        compute_rounds: 9,
        interpreter_iterations: (iterations / 25).max(20),
    };
    let started = Instant::now();
    let started_at = std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    let machine = machine();
    let load_at_start = load_average();
    let mut report = Report::default();
    let wants = |part: &str| only.as_deref().is_none_or(|o| o == part);
    if wants("inprocess") {
        inprocess::run(&setup, &mut report);
    }
    if wants("interpreters") {
        interpreters::run(&setup, &mut report);
    }
    if wants("process") {
        process::run(&setup, &mut report);
    }
    if wants("compute") {
        compute::run(&setup, &mut report);
    }
    if wants("attacks") {
        attacks::run(&setup, &mut report);
    }
    let startup = format!("## 4. Cold start\n\n{}{}", report.compile, report.startup);
    println!("{startup}");
    let targets = targets(&report);
    println!("{targets}");
    let _ = std::fs::remove_dir_all(&scratch);
    let elapsed = started.elapsed().as_secs_f64();
    println!("suite took {elapsed:.0} s");
    if !write {
        return;
    }
    // Sections in the order: 1, 2, 5, 8 come from one part, so sort
    // by the number in the heading.
    let mut sections = report.sections.clone();
    sections.push(startup);
    sections.sort_by_key(|s| s.trim_start_matches("## ").split('.').next().and_then(|n| n.parse::<u32>().ok()));
    let mut split = Vec::new();
    for section in sections {
        // The in-process part writes 1, 2, 5 and 8 as one string.
        for part in section.split("\n## ") {
            let part = if part.starts_with("## ") { part.to_owned() } else { format!("## {part}") };
            split.push(part);
        }
    }
    split.sort_by_key(|s| s.trim_start_matches("## ").split('.').next().and_then(|n| n.parse::<u32>().ok()));
    // A loaded machine's figures are not written: they would replace a
    // quiet run's with numbers the next run cannot be compared to.
    if load_at_start > MAX_LOAD_TO_WRITE {
        println!(
            "BENCHMARKS.md not written: the load average at start was {load_at_start:.2}, above \
             {MAX_LOAD_TO_WRITE}; run `make bench` again on a quiet machine"
        );
        return;
    }
    let path = manifest.join("../../BENCHMARKS.md");
    let notes = std::fs::read_to_string(&path)
        .ok()
        .and_then(|old| old.split_once("<!-- notes -->").map(|(_, notes)| notes.to_owned()))
        .unwrap_or_else(|| "\n".to_owned());
    let doc = format!(
        "# Benchmarks\n\nProduced by `make bench` (`cargo bench -p airlock --bench pipeline -- --write`), {started_at}, \
         on {machine}.\nThe suite took {elapsed:.0} s. Every figure comes from this one run, on a machine other work \
         shares: compare ratios, not absolute values across machines. Latencies are p50 / p99 / mean over the stated \
         number of iterations, after a 10 % warm-up.\n\n## Targets\n\n{targets}\n\n{}\n<!-- notes -->{notes}",
        split.join("\n")
    );
    if let Err(err) = std::fs::write(&path, doc) {
        eprintln!("cannot write {}: {err}", path.display());
    }
}
