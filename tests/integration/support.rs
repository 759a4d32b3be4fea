//! Shared helpers: where the guests are, hosts built from config text, and
//! a Redis of a test's own.

use airlock::{CallRequest, Config, Host, ToolResult};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The workspace's root: the `airlock` package is `host/airlock`.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2).map(Path::to_path_buf).unwrap_or_default()
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| repo_root().join("target"))
}

/// The bundled tools (`make guests`).
pub fn guests() -> PathBuf {
    std::env::var_os("AIRLOCK_GUESTS").map(PathBuf::from).unwrap_or_else(|| target_dir().join("guests"))
}

/// The test fixtures (`make guests`).
pub fn test_guests() -> PathBuf {
    std::env::var_os("AIRLOCK_TEST_GUESTS").map(PathBuf::from).unwrap_or_else(|| target_dir().join("test-guests"))
}

/// A bundled tool's component file.
pub fn tool(name: &str) -> PathBuf {
    let path = guests().join(format!("{name}.wasm"));
    assert!(path.is_file(), "{} is missing: run `make guests`", path.display());
    path
}

/// A test fixture's component file.
pub fn fixture(name: &str) -> PathBuf {
    let path = test_guests().join(format!("{name}.wasm"));
    assert!(path.is_file(), "{} is missing: run `make guests`", path.display());
    path
}

/// The compiled-artifact cache shared by tests (keeps the suite fast).
pub fn cache_dir() -> PathBuf {
    std::env::var_os("AIRLOCK_CACHE_DIR").map(PathBuf::from).unwrap_or_else(|| target_dir().join("test-cache"))
}

/// Config text with `{guests}`, `{fixtures}` and `{cache}` replaced.
pub fn config(text: &str) -> Config {
    let text = text
        .replace("{guests}", &guests().display().to_string())
        .replace("{fixtures}", &test_guests().display().to_string())
        .replace("{cache}", &cache_dir().display().to_string());
    let text = if text.contains("[engine]") {
        text
    } else {
        format!("{text}\n[engine]\ncache_dir = {:?}\n", cache_dir().display().to_string())
    };
    match Config::parse(&text, "test.toml", Path::new(".")) {
        Ok(mut config) => {
            config.engine.compiler = Some(compiler());
            config
        }
        Err(err) => panic!("bad test config: {err}\n{text}"),
    }
}

/// The `airlock` binary of this build, which compiles components in
/// metered child processes.
pub fn compiler() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_airlock"))
}

/// A host from config text (see [`config`]).
pub async fn host(text: &str) -> Host {
    match Host::builder().config(config(text)).build().await {
        Ok(host) => host,
        Err(err) => panic!("host did not start: {err}"),
    }
}

/// Call `tool` as `principal` "tester" with JSON arguments, confirming nothing.
pub async fn call(host: &Host, tool: &str, arguments: Value) -> ToolResult {
    host.call(CallRequest::new("tester", tool, arguments), None).await
}

/// Assert a result failed with `kind` and its text contains `needle`.
#[track_caller]
pub fn assert_failed(result: &ToolResult, kind: &str, needle: &str) {
    assert!(result.is_error(), "expected {kind}, got success: {}", result.text());
    assert_eq!(result.outcome_name(), kind, "{}", result.text());
    assert!(result.text().contains(needle), "{:?} should contain {needle:?}", result.text());
}

/// A fresh temporary directory.
pub fn temp_dir() -> tempfile::TempDir {
    match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(err) => panic!("cannot create a temp dir: {err}"),
    }
}

/// A Redis of its own on loopback, stopped when dropped.
pub struct Redis {
    child: std::process::Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
}

impl Redis {
    /// `None` (the test is skipped, saying so) when `redis-server` is not
    /// installed; `make test` installs it for the fleet test.
    pub fn start(dir: &std::path::Path) -> Option<Redis> {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let Ok(child) = child else {
            eprintln!("skipped: redis-server is not installed (make test-fleet installs it)");
            return None;
        };
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(started.elapsed() < Duration::from_secs(30), "redis-server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(Redis { child, port })
    }

    /// The `[fleet]` of replicas sharing this Redis, its state key written
    /// in `dir`.
    pub fn fleet(&self, dir: &Path) -> airlock::FleetSettings {
        let key = dir.join("state.key");
        std::fs::write(&key, "ab".repeat(32)).unwrap();
        let text = format!(
            "[fleet]\nstate_key_file = {:?}\nredis_url = \"redis://127.0.0.1:{}/0\"\n",
            key.display().to_string(),
            self.port
        );
        config(&text).fleet.expect("[fleet]")
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
