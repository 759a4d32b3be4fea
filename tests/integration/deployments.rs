//! Deployments under load: a new component for a tool is compiled and put
//! in force while an interpreter session sits idle holding its memory, and
//! meanwhile another principal's calls are served. A compilation reserves
//! at most the compilations' share of the host memory budget (not the
//! whole of it), waits for room without blocking the calls behind it, and
//! a reload that found no room is tried again (the budget's own tests, in
//! `host/runtime/src/memory_budget/tests.rs`, hold a waiting compilation
//! and the calls behind it).

use crate::service::{Mcp, Served, kind, request};
use crate::support::{cache_dir, temp_dir, tool};
use serde_json::{Value, json};
use sha2::Digest as _;
use std::path::Path;
use std::time::{Duration, Instant};

const ALICE: &str = "deployments-test-alice-token-0123456789";
const BOB: &str = "deployments-test-bob-token-0123456789ab";
/// What the operators were promised: a replaced component is
/// served within this long of its file being written.
const SERVED_WITHIN: Duration = Duration::from_secs(10);
/// Liveness bound for start-up, which may compile `run_js` when the test
/// cache does not hold it yet.
const START_UP: Duration = Duration::from_secs(600);

/// `component`'s bytes with a custom section naming `nonce` appended: the
/// same tool, bytes no cache has seen, so replacing the file compiles.
fn with_nonce(component: &Path, nonce: &str) -> Vec<u8> {
    let mut bytes = std::fs::read(component).expect("read the component");
    let name = b"airlock-test-nonce";
    let mut section = vec![u8::try_from(name.len()).unwrap()];
    section.extend_from_slice(name);
    section.extend_from_slice(nonce.as_bytes());
    assert!(section.len() < 128, "one LEB128 byte");
    bytes.push(0);
    bytes.push(u8::try_from(section.len()).unwrap());
    bytes.extend_from_slice(&section);
    bytes
}

/// The compiled artifacts of the component with this digest, removed from
/// the shared test cache when dropped (the test's bytes are new at each
/// run).
struct Artifacts(String);

impl Drop for Artifacts {
    fn drop(&mut self) {
        for entry in std::fs::read_dir(cache_dir()).into_iter().flatten().flatten() {
            if entry.file_name().to_string_lossy().starts_with(&self.0) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// The `result` an interpreter's call returned, from its structured
/// content or its text.
fn result(reply: &Value) -> Value {
    if let Some(value) = reply["structuredContent"].get("result") {
        return value.clone();
    }
    let text = reply["content"][0]["text"].as_str().unwrap_or_default();
    serde_json::from_str::<Value>(text).ok().and_then(|v| v.get("result").cloned()).unwrap_or(Value::Null)
}

/// The `_meta` revision of `name` in a `tools/list` answer.
fn revision(mcp: &Mcp, id: u64, name: &str) -> String {
    let reply = mcp.post(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}), &[]);
    let message = reply.message();
    let tools = message["result"]["tools"].as_array().cloned().unwrap_or_default();
    let tool = tools.iter().find(|t| t["name"] == name).unwrap_or_else(|| panic!("{name} not listed: {message}"));
    tool["_meta"]["airlock/revision"].as_str().unwrap_or_default().to_owned()
}

/// The server with the default settings of a 4 GiB memory cgroup: the
/// budget such a cgroup yields (4096 MiB less a quarter: 3072 MiB, as
/// `memory_budget::budget_under` derives it) set as `[engine]
/// memory_budget_mib` rather than derived from a real cgroup, every other
/// engine key at its default (`compile_memory_mib = 4096`,
/// `memory_share_percent = 50`), and the built-in settings of `echo` and
/// `run_js` (sessions on), both found in a watched tool directory.
#[test]
fn a_replaced_component_is_served_within_10_s_while_a_session_is_held_and_no_call_is_busy() {
    let dir = temp_dir();
    let tools = dir.path().join("tools");
    std::fs::create_dir(&tools).expect("mkdir");
    std::fs::copy(tool("run_js"), tools.join("run_js.wasm")).expect("copy run_js");
    std::fs::copy(tool("echo"), tools.join("echo.wasm")).expect("copy echo");
    let config = format!(
        "tool_dirs = [{:?}]\n[engine]\nmemory_budget_mib = 3072\n[http]\ntokens = [{{ token = \"{ALICE}\", \
         principal = \"alice\" }}, {{ token = \"{BOB}\", principal = \"bob\" }}]\n",
        tools.display().to_string()
    );
    let server = Served::start_in(dir, &config, &["serve", "--http", "127.0.0.1:0", "--watch", "-v"]);
    let addr = server.announced("serving MCP");
    let ready = Instant::now() + START_UP;
    while request(&addr, "GET", "/readyz", &[], "").status != 200 {
        assert!(Instant::now() < ready, "never ready: {}", server.stderr.lock().unwrap());
        std::thread::sleep(Duration::from_millis(50));
    }
    let said = server.stderr.lock().unwrap().clone();
    assert!(
        said.contains("each compilation reserves 1536 MiB of address space (the compilations' share"),
        "the share compilations get is logged at start: {said}"
    );

    // Alice's interpreter session, left idle: it holds its memory.
    let alice = Mcp::connect(&addr, Some(ALICE));
    let held = alice.call(1, "run_js", json!({"code": "var x = 41; x", "session_id": "held"}), &[]);
    assert_eq!(kind(&held), "ok", "{held}");
    let bob = Mcp::connect(&addr, Some(BOB));
    let before = revision(&bob, 1, "echo");

    // A deployment replaces echo's component, written whole and renamed
    // over as a deployment would.
    let nonce = format!("{}-{:?}", std::process::id(), std::time::SystemTime::now());
    let bytes = with_nonce(&tool("echo"), &nonce);
    let _artifact = Artifacts(hex::encode(sha2::Sha256::digest(&bytes)));
    let partial = tools.join("echo.part");
    std::fs::write(&partial, &bytes).expect("write");
    let written = Instant::now();
    std::fs::rename(&partial, tools.join("echo.wasm")).expect("rename");

    // Bob's calls go on while it compiles; none is busy.
    let (mut id, mut calls) = (10, 0);
    let served_after = loop {
        let echo = bob.call(id, "echo", json!({"text": "still here"}), &[]);
        assert_eq!(kind(&echo), "ok", "bob's call during the deployment: {echo}");
        calls += 1;
        if revision(&bob, id + 1, "echo") != before {
            break written.elapsed();
        }
        assert!(written.elapsed() < START_UP, "the new component was never served: {}", server.stderr.lock().unwrap());
        id += 2;
        std::thread::sleep(Duration::from_millis(50));
    };
    // The session was held throughout, and still is.
    let again = alice.call(2, "run_js", json!({"code": "x + 1", "session_id": "held"}), &[]);
    assert_eq!(kind(&again), "ok", "{again}");
    assert_eq!(result(&again), json!(42), "{again}");
    eprintln!(
        "the replaced component was served {served_after:?} after it was written ({calls} calls of bob's meanwhile)"
    );
    assert!(served_after < SERVED_WITHIN, "served {served_after:?} after the write: {}", server.stderr.lock().unwrap());
}
