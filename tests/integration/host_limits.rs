//! Host limits: what a guest can make the host hold for it during a call
//! (HTTP body buffers, header maps, random bytes, file descriptors) stays
//! under the call's caps, the guest or the model gets an error it can read,
//! and the host serves the next call, another principal's and another
//! tool's.
//!
//! What the host spent is measured, not timed: the growth of this
//! process's peak resident set (`VmHWM`, reset through `clear_refs`) and
//! its open descriptors (`/proc/self/fd`). The tests of one binary share a
//! process and run in parallel, so each measuring test runs its body again
//! alone in a child process of this binary (see [`isolated`]).

use crate::support::{call, fixture, host, temp_dir, tool};
use airlock::{CallRequest, Host};
use serde_json::{Value, json};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Set in the child process that runs one test's body alone.
const CHILD_ENV: &str = "AIRLOCK_HOST_LIMITS_CHILD";
/// The host budget the memory tests give the guest: 16 MiB.
const HOST_MEMORY_MIB: usize = 16;
/// The guest's own linear memory cap in these tests: 32 MiB.
const GUEST_MEMORY_MIB: usize = 32;
/// Resident memory the host may gain besides the budget and the guest's
/// own memory (compiled code, allocator slack, the runtime's threads).
const SLACK_MIB: usize = 64;
/// Descriptors the host may open besides the guest's cap (a blocking
/// worker, the cache, an epoll instance).
const FD_SLACK: usize = 16;

/// True in the child process, where the caller runs its body. In the
/// parent, runs `name` (a test of this module) alone in a child process,
/// asserts that it passed, and returns false.
fn isolated(name: &str) -> bool {
    if std::env::var_os(CHILD_ENV).is_some() {
        return true;
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let test = format!("host_limits::{name}");
    let output = Command::new(exe)
        .args([test.as_str(), "--exact", "--test-threads=1", "--nocapture"])
        .env(CHILD_ENV, "1")
        .output()
        .expect("running the test alone in a child process");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{test} failed alone:\n{stdout}\n{stderr}");
    assert!(stdout.contains("1 passed"), "{test} did not run alone:\n{stdout}\n{stderr}");
    println!("{stdout}");
    false
}

/// A line of `/proc/self/status` in KiB, e.g. `VmHWM`.
fn status_kib(field: &str) -> usize {
    let status = std::fs::read_to_string("/proc/self/status").expect("reading /proc/self/status");
    let line = status.lines().find(|l| l.starts_with(&format!("{field}:"))).expect("the field is in status");
    line.split_whitespace().nth(1).and_then(|n| n.parse().ok()).expect("a number of kB")
}

/// Reset the peak resident set to the current one (Linux ≥ 4.0), so that
/// `VmHWM` afterwards is the peak of what follows.
fn reset_peak() -> usize {
    std::fs::write("/proc/self/clear_refs", "5").expect("resetting VmHWM through /proc/self/clear_refs");
    status_kib("VmRSS")
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map(|dir| dir.count()).expect("listing /proc/self/fd")
}

/// The host_hog tool with generous time and fuel (no test may end on
/// them), a small host budget and `extra` settings, plus `read_file` on
/// `dir`.
fn config(dir: &std::path::Path, extra: &str) -> String {
    let dir = dir.display().to_string();
    format!(
        "[tools.host_hog]\ncomponent = {:?}\nside_effect = false\ntimeout_ms = 120000\nfuel = 10000000000000\n\
         memory_mib = {GUEST_MEMORY_MIB}\nhost_memory_mib = {HOST_MEMORY_MIB}\n\
         dirs = [{{ host = {dir:?}, guest = \"/data\" }}]\n{extra}\n\
         [tools.read_file]\ncomponent = {:?}\nside_effect = false\ndirs = [{{ host = {dir:?}, guest = \"/data\" }}]\n",
        fixture("host_hog").display().to_string(),
        tool("read_file").display().to_string(),
    )
}

fn data_dir() -> tempfile::TempDir {
    let dir = temp_dir();
    std::fs::write(dir.path().join("file.txt"), "hello\n").expect("writing the test file");
    dir
}

/// The next calls are served: the same tool for another principal, and
/// another tool reading a granted file.
async fn still_serves(host: &Host) {
    let other =
        host.call(CallRequest::new("someone-else", "host_hog", json!({"mode": "fd_hog", "count": 3})), None).await;
    assert!(!other.is_error(), "another principal's call must be served: {}", other.text());
    assert_eq!(other.value().and_then(|s| s["created"].as_u64()), Some(3), "{}", other.text());
    let read = call(host, "read_file", json!({"path": "/data/file.txt"})).await;
    assert!(!read.is_error(), "another tool's call must be served: {}", read.text());
    assert!(read.text().contains("hello"), "{}", read.text());
}

fn structured(result: &airlock::ToolResult) -> Value {
    assert!(!result.is_error(), "{}", result.text());
    result.value().cloned().unwrap_or_else(|| panic!("no structured result: {}", result.text()))
}

#[tokio::test]
async fn unsent_http_bodies_are_bounded_by_the_host_budget() {
    if !isolated("unsent_http_bodies_are_bounded_by_the_host_budget") {
        return;
    }
    let dir = data_dir();
    let host = host(&config(dir.path(), "")).await;
    // Warm up: the first call maps the code and the instance pool.
    structured(&call(&host, "host_hog", json!({"mode": "http_hoard", "count": 1})).await);
    let before = reset_peak();
    let result = call(&host, "host_hog", json!({"mode": "http_hoard", "count": 20000})).await;
    let peak = status_kib("VmHWM");
    let out = structured(&result);
    // Half of a 16 MiB budget in bodies of 2 × 64 KiB.
    let bodies = (HOST_MEMORY_MIB << 20) / 2 / (128 << 10);
    assert_eq!(out["created"], json!(bodies), "{out}");
    assert_eq!(out["error"], json!("outgoing-request.body refused"), "{out}");
    assert_eq!(out["bytes"], json!(bodies * (128 << 10)), "each body holds at most two 64 KiB chunks: {out}");
    let grown_mib = peak.saturating_sub(before) >> 10;
    let bound = 2 * HOST_MEMORY_MIB + GUEST_MEMORY_MIB + SLACK_MIB;
    println!("http_hoard: peak RSS grew {grown_mib} MiB (bound {bound} MiB) for {out}");
    assert!(grown_mib < bound, "peak RSS grew {grown_mib} MiB, more than {bound} MiB");
    still_serves(&host).await;
}

#[tokio::test]
async fn full_header_maps_are_bounded_by_the_resource_cap() {
    if !isolated("full_header_maps_are_bounded_by_the_resource_cap") {
        return;
    }
    let dir = data_dir();
    let host = host(&config(dir.path(), "")).await;
    structured(&call(&host, "host_hog", json!({"mode": "table_hog", "count": 1})).await);
    let before = reset_peak();
    let result = call(&host, "host_hog", json!({"mode": "table_hog", "count": 100000})).await;
    let peak = status_kib("VmHWM");
    assert!(result.is_error(), "{}", result.text());
    assert_eq!(result.outcome_name(), "host_limit", "{}", result.text());
    // Half of a 16 MiB budget in slots of 32 KiB.
    assert!(result.text().contains("more than 256 WASI resources"), "{}", result.text());
    assert!(result.text().contains("host_memory_mib"), "{}", result.text());
    let grown_mib = peak.saturating_sub(before) >> 10;
    let bound = 2 * HOST_MEMORY_MIB + GUEST_MEMORY_MIB + SLACK_MIB;
    println!("table_hog: peak RSS grew {grown_mib} MiB (bound {bound} MiB)");
    assert!(grown_mib < bound, "peak RSS grew {grown_mib} MiB, more than {bound} MiB");
    still_serves(&host).await;
}

#[tokio::test]
async fn huge_random_requests_are_refused() {
    let dir = data_dir();
    let host = host(&config(dir.path(), "")).await;
    let result = call(&host, "host_hog", json!({"mode": "random_hog", "bytes": 1u64 << 30})).await;
    assert!(result.is_error(), "{}", result.text());
    assert_eq!(result.outcome_name(), "host_limit", "{}", result.text());
    assert!(result.text().contains("more than 1048576 random bytes"), "{}", result.text());
    let small = structured(&call(&host, "host_hog", json!({"mode": "random_hog", "bytes": 1u64 << 20})).await);
    assert_eq!(small["bytes"], json!(1u64 << 20), "{small}");
    still_serves(&host).await;
}

#[tokio::test]
async fn open_files_are_capped_per_call() {
    if !isolated("open_files_are_capped_per_call") {
        return;
    }
    let dir = data_dir();
    let host = Arc::new(host(&config(dir.path(), "max_open_files = 32")).await);
    structured(&call(&host, "host_hog", json!({"mode": "fd_hog", "count": 1})).await);
    let before = open_fds();
    // Watch the descriptor count while the call runs: the cap is checked
    // on the host, so no sample may exceed it, however many are taken.
    let done = Arc::new(AtomicBool::new(false));
    let most = Arc::new(AtomicUsize::new(0));
    let watcher = {
        let (done, most) = (done.clone(), most.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                most.fetch_max(open_fds(), Ordering::Relaxed);
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        })
    };
    let result = call(&host, "host_hog", json!({"mode": "fd_hog", "count": 20000})).await;
    done.store(true, Ordering::Relaxed);
    watcher.join().expect("the watcher thread");
    let out = structured(&result);
    // 32 minus the granted directory.
    assert_eq!(out["created"], json!(31), "{out}");
    let error = out["error"].as_str().unwrap_or_default();
    assert!(error.contains("open /data/file.txt"), "{out}");
    let most = most.load(Ordering::Relaxed);
    println!("fd_hog: {out}; open descriptors {before} before, at most {most} during, {} after", open_fds());
    assert!(most <= before + 32 + FD_SLACK, "{most} descriptors open during the call, {before} before");
    assert!(open_fds() <= before + FD_SLACK, "the call's descriptors were not closed");
    still_serves(&host).await;
}

#[tokio::test]
async fn the_open_file_cap_holds_per_call() {
    let dir = data_dir();
    let host = host(&config(dir.path(), "max_open_files = 8")).await;
    // Each call starts from its own granted directory only, so the cap
    // holds per call, not per host.
    for _ in 0..3 {
        let out = structured(&call(&host, "host_hog", json!({"mode": "fd_hog", "count": 100})).await);
        assert_eq!(out["created"], json!(7), "{out}");
    }
    still_serves(&host).await;
}
