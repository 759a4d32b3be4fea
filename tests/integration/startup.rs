//! Start-up with an empty compile cache: `airlock serve --stdio`, run as a
//! client runs it, answers `initialize` (and `server/discover`) while its
//! tools are still compiling, lists each tool once it is ready and says so
//! with `notifications/tools/list_changed`, and a call for a tool still
//! compiling waits for it and succeeds. A client that goes away at once
//! (closing stdin, or stopping the server with a signal) still leaves its
//! tools compiled in the cache for the next start.
//!
//! With `[serve] startup_list_wait_secs = 0` (a list answers at once with
//! the tools ready so far, as it does once the wait has passed), the proof
//! that the answer came before compilation finished is an order of events,
//! not a time: the first `tools/list` (answered after
//! `initialize`) lacks the largest bundled component, which takes seconds
//! to compile on any machine, and a later list has every tool.

use crate::support::{guests, temp_dir};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Liveness bound: compiling every bundled tool from nothing on a busy
/// two-core machine.
const DEADLINE: Duration = Duration::from_secs(900);
/// The deadline the waited-for tool gets in the test config, so that the
/// call outlasts any compile time (the wait is bounded by it).
const WAITED_TIMEOUT_MS: u64 = 900_000;

fn binary() -> PathBuf {
    if let Some(bin) = std::env::var_os("AIRLOCK_BIN") {
        return PathBuf::from(bin);
    }
    PathBuf::from(env!("CARGO_BIN_EXE_airlock"))
}

/// The bundled components (`name` from the file stem) and the largest one.
fn bundled() -> (BTreeSet<String>, String) {
    let mut names = BTreeSet::new();
    let mut largest = (0, String::new());
    let entries = std::fs::read_dir(guests()).expect("the guests directory exists: run `make guests`");
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.extension().is_none_or(|e| e != "wasm") {
            continue;
        }
        let name = path.file_stem().expect("a file name").to_string_lossy().into_owned();
        let size = std::fs::metadata(&path).expect("a component file").len();
        if size > largest.0 {
            largest = (size, name.clone());
        }
        names.insert(name);
    }
    assert!(!names.is_empty(), "no bundled tools in {}: run `make guests`", guests().display());
    (names, largest.1)
}

/// Arguments for a call that succeeds, for the tools this test may wait on.
fn arguments(tool: &str) -> Value {
    match tool {
        "run_python" | "run_js" => json!({"code": "1+1"}),
        "echo" => json!({"text": "hi"}),
        _ => json!({}),
    }
}

/// A running `airlock serve --stdio` with an empty cache, killed when
/// dropped.
struct Server {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<Value>,
    /// Messages read while waiting for another one.
    stashed: Vec<Value>,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn start(waited: &str) -> Server {
        let dir = temp_dir();
        let cache = dir.path().join("cache");
        std::fs::create_dir(&cache).expect("cache dir");
        // `startup_list_wait_secs = 0`: a list during start-up answers at
        // once with the tools ready so far (the path a compile longer than
        // the wait takes), so the order of events shows the answer came
        // before the compilation ended.
        let config = format!(
            "tool_dirs = [{:?}]\n\n[serve]\nstartup_list_wait_secs = 0\n\n[tools.{waited}]\ntimeout_ms = {WAITED_TIMEOUT_MS}\n",
            guests().display().to_string()
        );
        let config_file = dir.path().join("airlock.toml");
        std::fs::write(&config_file, config).expect("config");
        let mut child = Command::new(binary())
            .args(["serve", "--stdio", "--config"])
            .arg(&config_file)
            .current_dir(dir.path())
            .env("AIRLOCK_CACHE_DIR", &cache)
            .env_remove("AIRLOCK_CONFIG")
            .env_remove("RUST_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("airlock runs");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                let value = serde_json::from_str(&line).unwrap_or_else(|err| panic!("not JSON ({err}): {line}"));
                if tx.send(value).is_err() {
                    return;
                }
            }
        });
        Server { child, stdin, lines, stashed: Vec::new(), _dir: dir }
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").expect("write stdin");
        self.stdin.flush().expect("flush stdin");
    }

    /// The next message matching `wanted`, keeping the others for later.
    fn wait_for(&mut self, what: &str, wanted: impl Fn(&Value) -> bool) -> Value {
        if let Some(at) = self.stashed.iter().position(&wanted) {
            return self.stashed.remove(at);
        }
        let until = Instant::now() + DEADLINE;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            let message = self.lines.recv_timeout(left).unwrap_or_else(|_| panic!("no {what} within {DEADLINE:?}"));
            if wanted(&message) {
                return message;
            }
            self.stashed.push(message);
        }
    }

    fn response(&mut self, id: u64) -> Value {
        let message = self.wait_for(&format!("response {id}"), |m| m["id"] == id);
        assert!(message.get("error").is_none(), "request {id} failed: {message}");
        message["result"].clone()
    }

    fn list(&mut self, id: u64) -> BTreeSet<String> {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}));
        let result = self.response(id);
        let tools = result["tools"].as_array().expect("a tool list");
        tools.iter().map(|t| t["name"].as_str().expect("a tool name").to_owned()).collect()
    }
}

fn is_list_changed(message: &Value) -> bool {
    message["method"] == "notifications/tools/list_changed"
}

#[test]
fn serve_answers_before_compiling_and_lists_each_tool_once_ready() {
    let (names, largest) = bundled();
    let mut server = Server::start(&largest);
    server.send(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}}));
    let init = server.response(0);
    assert_eq!(init["capabilities"]["tools"]["listChanged"], true, "{init}");
    server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));

    let first = server.list(1);
    assert!(
        !first.contains(&largest),
        "the first tools/list already has {largest}: the server answered only after compiling it ({first:?})"
    );
    // A call for a tool still compiling waits for it (its deadline is
    // raised above any compile time) and runs.
    server.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": largest, "arguments": arguments(&largest)}}));

    // Each list_changed is followed by a fresh list, until every tool is in.
    let mut listed = first;
    let mut notices = 0;
    let mut id = 10;
    while listed != names {
        server.wait_for("notifications/tools/list_changed", is_list_changed);
        notices += 1;
        listed = server.list(id);
        id += 1;
        assert!(listed.is_subset(&names), "unexpected tools: {listed:?} (bundled: {names:?})");
    }
    assert!(notices >= 1);

    let called = server.response(2);
    assert_ne!(called["isError"], true, "the call for {largest} failed: {called}");
    if largest.starts_with("run_") {
        assert_eq!(called["structuredContent"]["result"], 2, "{called}");
    }
}

#[test]
fn serve_answers_server_discover_before_compiling() {
    let (_, largest) = bundled();
    let mut server = Server::start(&largest);
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    server.send(&json!({"jsonrpc": "2.0", "id": 0, "method": "server/discover", "params": {"_meta": meta}}));
    let discover = server.response(0);
    let versions = discover["supportedVersions"].as_array().expect("supportedVersions");
    assert!(versions.iter().any(|v| v == "2026-07-28"), "{discover}");
    server.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}));
    let listed = server.response(1);
    let names: Vec<&str> =
        listed["tools"].as_array().expect("tools").iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(!names.contains(&largest.as_str()), "discover was answered only after compiling {largest}: {names:?}");
}

// -- the library: HostBuilder::load_in_background ------------------------------

/// Counts what a registry build reports.
#[derive(Default)]
struct Counting {
    compiled: std::sync::atomic::AtomicUsize,
    finished: std::sync::atomic::AtomicUsize,
}

impl airlock::LoadProgress for Counting {
    fn compiling(&self, _: &std::path::Path) {
        self.compiled.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    fn finished(&self, _: &std::path::Path, _: bool) {
        self.finished.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// A tool directory holding copies of bundled tools under other file names,
/// and an empty cache, as config text.
fn copies(dir: &std::path::Path, files: &[(&str, &str)]) -> String {
    let tools = dir.join("tools");
    std::fs::create_dir_all(&tools).expect("tools dir");
    for (file, source) in files {
        std::fs::copy(crate::support::tool(source), tools.join(file)).expect("copy a component");
    }
    let cache = dir.join("cache");
    format!(
        "tool_dirs = [{:?}]\nbuiltin_settings = false\n[tools.echo]\nside_effect = false\n[engine]\ncache_dir = {:?}\n",
        tools.display().to_string(),
        cache.display().to_string()
    )
}

#[tokio::test]
async fn same_bytes_are_compiled_once_and_the_earlier_file_wins_a_duplicate_name() {
    let dir = temp_dir();
    let text = copies(dir.path(), &[("a.wasm", "echo"), ("b.wasm", "echo"), ("c.wasm", "json_query")]);
    let config = airlock::Config::parse(&text, "test.toml", dir.path()).expect("config");
    let counting = Counting::default();
    // A host with no tools, for its runtime (and the same empty cache).
    let engine = format!("[engine]\ncache_dir = {:?}\n", dir.path().join("cache").display().to_string());
    let empty = airlock::Config::parse(&engine, "engine.toml", dir.path()).expect("config");
    let host = airlock::Host::builder().compiler(crate::support::compiler()).config(empty).build().await.expect("host");
    let (registry, errors) = airlock::Registry::load(host.runtime(), &config, &counting).await;
    assert_eq!(
        counting.compiled.load(std::sync::atomic::Ordering::SeqCst),
        2,
        "one compilation per distinct component"
    );
    assert_eq!(counting.finished.load(std::sync::atomic::Ordering::SeqCst), 3);
    assert_eq!(registry.names().collect::<Vec<_>>(), ["echo", "json_query"]);
    let echo = registry.get("echo").expect("echo");
    assert!(echo.source.ends_with("a.wasm"), "the earlier file keeps the name: {}", echo.source.display());
    assert_eq!(errors.len(), 1, "{errors:?}");
    let error = errors[0].to_string();
    assert!(error.contains("a.wasm") && error.contains("b.wasm") && error.contains("must be unique"), "{error}");
}

#[tokio::test]
async fn a_background_host_answers_at_once_and_a_call_waits_for_its_tool() {
    let dir = temp_dir();
    let text = copies(dir.path(), &[("echo.wasm", "echo")]);
    let config = airlock::Config::parse(&text, "test.toml", dir.path()).expect("config");
    let host = airlock::Host::builder()
        .compiler(crate::support::compiler())
        .config(config)
        .load_in_background(true)
        .build()
        .await
        .expect("host");
    assert_eq!(host.readiness().total, 1);
    let result = crate::support::call(&host, "echo", json!({"text": "hi"})).await;
    assert!(!result.is_error(), "{}", result.text());
    let ready = host.ready().await;
    assert!(ready.finished() && ready.tools == 1, "{ready:?}");
    assert_eq!(host.tools().still_loading(), 0);
}

#[tokio::test]
async fn a_refused_component_is_left_out_and_a_reload_during_start_up_waits_for_it() {
    let dir = temp_dir();
    let mut text = copies(dir.path(), &[("echo.wasm", "echo")]);
    std::fs::copy(crate::support::fixture("bad_name"), dir.path().join("tools/bad_name.wasm")).expect("copy");
    let config_file = dir.path().join("airlock.toml");
    std::fs::write(&config_file, &text).expect("config");
    let config = airlock::Config::from_file(&config_file).expect("config");
    let host = airlock::Host::builder()
        .compiler(crate::support::compiler())
        .config(config)
        .load_in_background(true)
        .build()
        .await
        .expect("host");
    // The file now adds a tool; the reload waits for start-up, then reads it.
    std::fs::copy(crate::support::tool("json_query"), dir.path().join("tools/json_query.wasm")).expect("copy");
    text.push('\n');
    std::fs::write(&config_file, &text).expect("config");
    let reloaded = host.reload(None).await;
    assert!(reloaded.is_err(), "the reload refuses the bad component as any full load does");
    let ready = host.readiness();
    assert!(ready.finished(), "the reload ran after start-up: {ready:?}");
    assert_eq!((ready.total, ready.tools), (2, 1), "{ready:?}");
    assert_eq!(host.tools().names().collect::<Vec<_>>(), ["echo"], "start-up left the refused component out");
}

/// The compiled artifacts of tools (not the schema validator's) in `cache`.
fn tool_artifacts(cache: &std::path::Path) -> BTreeSet<String> {
    std::fs::read_dir(cache)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
                .filter(|name| name.ends_with(".cwasm") && !name.starts_with("validator-") && !name.starts_with('.'))
                .collect()
        })
        .unwrap_or_default()
}

/// `serve --stdio` on a config naming `run_js` with an empty cache, sent
/// `initialize` and read until it answers.
fn start_run_js(dir: &std::path::Path) -> (Child, ChildStdin, std::path::PathBuf, PathBuf) {
    let cache = dir.join("cache");
    let config = dir.join("airlock.toml");
    let component = guests().join("run_js.wasm");
    std::fs::write(
        &config,
        format!(
            "[engine]\ncache_dir = {:?}\n[tools.run_js]\ncomponent = {:?}\n",
            cache.display().to_string(),
            component.display().to_string()
        ),
    )
    .expect("write the config");
    let mut child = Command::new(binary())
        .arg("--config")
        .arg(&config)
        .args(["serve", "--stdio"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start airlock serve");
    let mut stdin = child.stdin.take().expect("stdin");
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    writeln!(stdin, "{initialize}").expect("send initialize");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("read the answer");
    assert!(line.contains("\"protocolVersion\""), "{line}");
    (child, stdin, cache, config)
}

/// Wait for `child` to exit, within the liveness bound.
fn exited(child: &mut Child) {
    let started = Instant::now();
    while child.try_wait().expect("wait for airlock").is_none() {
        assert!(started.elapsed() < DEADLINE, "airlock did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `airlock tools` on `config` lists run_js and compiles nothing before it
/// serves: no build is added to `cache` but, for a tool served by its
/// baseline build, its optimized build, which compiles in the background
/// (and, once it is there, replaces the baseline artifact).
fn next_start_compiles_nothing(config: &std::path::Path, cache: &std::path::Path) {
    let before = tool_artifacts(cache);
    let tools = Command::new(binary()).arg("--config").arg(config).arg("tools").output().expect("airlock tools");
    assert!(tools.status.success() && String::from_utf8_lossy(&tools.stdout).contains("run_js"), "{tools:?}");
    let after = tool_artifacts(cache);
    let added: Vec<&String> = after.difference(&before).collect();
    assert!(
        !after.is_empty() && added.iter().all(|name| !name.contains("-baseline-")),
        "the next start compiled nothing before it served: {before:?} then {after:?}"
    );
}

#[test]
fn a_client_that_closes_stdin_at_once_leaves_its_tools_compiled_for_the_next_start() {
    let dir = temp_dir();
    let (mut child, stdin, cache, config) = start_run_js(dir.path());
    drop(stdin);
    exited(&mut child);
    // Kept by the server before it exited, or (had the wait for loads run
    // out first) by the compiler process after it.
    let started = Instant::now();
    while tool_artifacts(&cache).is_empty() {
        assert!(started.elapsed() < DEADLINE, "run_js was never compiled into the cache");
        std::thread::sleep(Duration::from_millis(20));
    }
    next_start_compiles_nothing(&config, &cache);
}

#[test]
fn a_compilation_outlives_a_server_stopped_by_a_signal_and_keeps_its_artifact() {
    let dir = temp_dir();
    let (mut child, _stdin, cache, config) = start_run_js(dir.path());
    // Once the compiler process has the whole component (it then points its
    // stdin at /dev/null), the server is stopped.
    let tasks = format!("/proc/{}/task", child.id());
    let started = Instant::now();
    let compiler_has_its_input = || {
        std::fs::read_dir(&tasks).into_iter().flatten().flatten().any(|task| {
            let pids = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            pids.split_whitespace().any(|pid| {
                std::fs::read_link(format!("/proc/{pid}/fd/0")).is_ok_and(|to| to == std::path::Path::new("/dev/null"))
            })
        })
    };
    while !compiler_has_its_input() {
        assert!(started.elapsed() < DEADLINE, "no compiler process read its input");
        std::thread::sleep(Duration::from_millis(5));
    }
    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().expect("kill");
    assert!(status.success());
    exited(&mut child);
    while tool_artifacts(&cache).is_empty() {
        assert!(started.elapsed() < DEADLINE, "the compiler process kept no artifact");
        std::thread::sleep(Duration::from_millis(20));
    }
    next_start_compiles_nothing(&config, &cache);
}
