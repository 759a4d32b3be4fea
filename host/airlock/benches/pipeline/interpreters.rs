//! Item 10: the interpreter tools. A fresh `run_python` / `run_js` call
//! (a new instance of the pre-initialized component per call, as the host
//! runs every call without a session) and a call inside a session (the
//! instance kept between calls), through the whole pipeline, with the bare
//! fresh instance + call (no pipeline) alongside.
//!
//! The variants are measured interleaved (one call of each per round) on a
//! single-threaded runtime, so load from other processes falls on all of
//! them alike, and each call's CPU time is read from the thread's
//! `/proc/thread-self/schedstat` (user + kernel, page faults included):
//! on a shared machine that is steadier than the wall-clock time. The
//! kernel updates that account at scheduler events, so some of one call's
//! CPU time can land in the next variant's: compare a variant's CPU time
//! between runs, not variants of one run with each other.

use crate::stats::{self, Stats, ms};
use crate::{Report, Setup};
use airlock::{CallRequest, Config, Host};
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

/// A host serving both interpreters with the bundled tools' settings
/// (sessions on), no audit log.
async fn interpreter_host(setup: &Setup) -> Host {
    let text = format!(
        "[engine]\ncache_dir = {:?}\n\
         [tools.run_python]\ncomponent = {:?}\nside_effect = false\nconcurrency_safe = true\nmemory_mib = 512\n\
         [tools.run_python.sessions]\nmax_live = 8\nidle_secs = 300\nmemory_mib = 256\n\
         [tools.run_js]\ncomponent = {:?}\nside_effect = false\nconcurrency_safe = true\nmemory_mib = 256\n\
         [tools.run_js.sessions]\nmax_live = 8\nidle_secs = 300\nmemory_mib = 128\n",
        setup.cache.display().to_string(),
        setup.guests.join("run_python.wasm").display().to_string(),
        setup.guests.join("run_js.wasm").display().to_string(),
    );
    let config = Config::parse(&text, "bench.toml", Path::new(".")).expect("bench config");
    Host::builder()
        .compiler(env!("CARGO_BIN_EXE_airlock"))
        .config(config)
        .build()
        .await
        .expect("host loads run_python and run_js")
}

/// Time this thread has spent on a CPU (user and kernel), from the
/// scheduler's own account.
fn thread_cpu() -> Duration {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    Duration::from_nanos(text.split_whitespace().next().and_then(|ns| ns.parse().ok()).unwrap_or(0))
}

/// One measured variant: how its call is made.
enum Variant<'a> {
    /// `execute_only` on `host`: a fresh instance and the call, no pipeline.
    Bare(&'a Host),
    /// `host.call` with these arguments.
    Call(&'a Host, &'a Value),
}

impl Variant<'_> {
    async fn run(&self, tool: &str) {
        match self {
            Variant::Bare(host) => {
                let arguments = match tool {
                    "run_python" => r#"{"code":"print(1+1)"}"#,
                    _ => r#"{"code":"1+1"}"#,
                };
                let execution = airlock::bench::execute_only(host, tool, arguments).await.expect("interpreter loaded");
                assert!(execution.result.is_ok(), "{:?}", execution.result);
            }
            Variant::Call(host, arguments) => {
                let result = host.call(CallRequest::new("bench", tool, (*arguments).clone()), None).await;
                assert!(!result.is_error(), "{}", result.text());
            }
        }
    }
}

/// `n` interleaved rounds (after `n / 10` warm-up rounds) of every variant:
/// per variant, the wall-clock distribution and the mean CPU time.
async fn interleaved(n: usize, tool: &str, variants: &[Variant<'_>]) -> Vec<(Stats, Duration)> {
    let mut wall: Vec<Vec<Duration>> = variants.iter().map(|_| Vec::with_capacity(n)).collect();
    let mut cpu = vec![Duration::ZERO; variants.len()];
    for round in 0..n + n / 10 {
        for (i, variant) in variants.iter().enumerate() {
            let (started, cpu_started) = (Instant::now(), thread_cpu());
            variant.run(tool).await;
            let (elapsed, cpu_used) = (started.elapsed(), thread_cpu().saturating_sub(cpu_started));
            if round >= n / 10 {
                wall[i].push(elapsed);
                cpu[i] += cpu_used;
            }
        }
    }
    wall.into_iter().zip(cpu).map(|(samples, cpu)| (stats::stats(samples), cpu / n.max(1) as u32)).collect()
}

/// Runs item 10 and adds its section to `report`.
pub fn run(setup: &Setup, report: &mut Report) {
    let n = setup.interpreter_iterations;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let host = runtime.block_on(interpreter_host(setup));
    let mut rows = Vec::new();
    for (tool, code, figure_fresh, figure_session) in [
        ("run_python", "print(1+1)", "python_fresh_ms", "python_session_ms"),
        ("run_js", "1+1", "js_fresh_ms", "js_session_ms"),
    ] {
        let fresh_args = json!({ "code": code });
        let session_args = json!({ "code": code, "session_id": "bench" });
        let variants = vec![
            (format!("`{tool}` `{code}`: bare fresh instance + call (no pipeline)"), Variant::Bare(&host)),
            (format!("`{tool}` `{code}`: fresh instance, full pipeline"), Variant::Call(&host, &fresh_args)),
            (format!("`{tool}` `{code}`: inside a session, full pipeline"), Variant::Call(&host, &session_args)),
        ];
        let (names, calls): (Vec<_>, Vec<_>) = variants.into_iter().unzip();
        let measured = runtime.block_on(interleaved(n, tool, &calls));
        for (name, (st, cpu)) in names.iter().zip(&measured) {
            rows.push(format!(
                "| {name} | {} | {} | {} | {} | {} |",
                st.n,
                ms(st.p50),
                ms(st.p99),
                ms(st.mean),
                ms(*cpu)
            ));
        }
        if let [_, (fresh, _), (session, _), ..] = measured.as_slice() {
            report.figure(figure_fresh, fresh.p50.as_secs_f64() * 1e3);
            report.figure(figure_session, session.p50.as_secs_f64() * 1e3);
        }
    }
    report.section(format!(
        "## 10. Interpreter tools (in-process, no audit log)\n\n\
         | measurement | iterations | p50 ms | p99 ms | mean ms | CPU ms |\n|---|---|---|---|---|---|\n{}\n\n\
         A fresh call instantiates the pre-initialized component in a new store (pooling allocator, \
         memory image mapped copy-on-write) and runs the code; a session call reuses the session's \
         instance with fuel, deadline and captures renewed. The rows of one tool are measured \
         interleaved, one call of each per round, on one thread; \"CPU ms\" is that thread's mean time \
         on a CPU per call (user + kernel, from /proc/thread-self/schedstat). The kernel updates that \
         account at scheduler events, so part of one call's CPU time can fall into the next row's: \
         compare a row's CPU with the same row of another run, not rows of one run with each other.\n\n",
        rows.join("\n"),
    ));
    drop(runtime);
}
