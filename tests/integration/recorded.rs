//! Recorded metadata: a component stamped by `airlock tool stamp` carries
//! what its `metadata` export returns, and on an empty compile cache its
//! tool is listed from that record before the component is compiled; calls
//! wait for the compilation; a record that differs from the export, or that
//! cannot be read, refuses the component.
//!
//! Asserts on states, never on times: the compiler process is held at a
//! gate (a wrapper around the real compiler that waits for a file), so the
//! tool is listed while its compilation cannot have finished.

use crate::support::{compiler, temp_dir, tool};
use airlock::{Config, Host, MAX_RECORDED_BYTES, RECORDED_SECTION, Registry};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Liveness bound for waits on a state (a busy two-core machine).
const DEADLINE: Duration = Duration::from_secs(300);

/// A compiler that waits until `gate` exists, then runs the real one.
fn gated_compiler(dir: &Path, gate: &Path) -> PathBuf {
    let script = dir.join("gated-compiler.sh");
    let text = format!(
        "#!/bin/sh\nwhile [ ! -e '{}' ]; do /bin/sleep 0.05; done\nexec '{}' \"$@\"\n",
        gate.display(),
        compiler().display()
    );
    std::fs::write(&script, text).expect("the script");
    let mut permissions = std::fs::metadata(&script).expect("script").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&script, permissions).expect("chmod");
    script
}

/// Stamp `file` with the built binary; its standard output.
fn stamp(file: &Path) -> String {
    let out = std::process::Command::new(compiler()).args(["tool", "stamp"]).arg(file).output().expect("airlock runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "stamp failed: {stdout}{}", String::from_utf8_lossy(&out.stderr));
    stdout
}

/// A tool directory with echo copied (and stamped), and an empty cache, as
/// config text.
fn echo_dir(dir: &Path) -> (PathBuf, String) {
    let tools = dir.join("tools");
    std::fs::create_dir_all(&tools).expect("tools dir");
    let echo = tools.join("echo.wasm");
    std::fs::copy(tool("echo"), &echo).expect("copy echo");
    let text = format!(
        "tool_dirs = [{:?}]\nbuiltin_settings = false\n[tools.echo]\nside_effect = false\n[engine]\ncache_dir = {:?}\n",
        tools.display().to_string(),
        dir.join("cache").display().to_string()
    );
    (echo, text)
}

async fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let until = Instant::now() + DEADLINE;
    while !done() {
        assert!(Instant::now() < until, "{what}: not after {DEADLINE:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stamped_tool_is_listed_before_it_compiles_and_a_call_waits_for_it() {
    let dir = temp_dir();
    let (echo, text) = echo_dir(dir.path());
    let plain = std::fs::read(&echo).expect("echo");
    let said = stamp(&echo);
    assert!(said.contains("stamped") && said.contains("tool echo"), "{said}");
    assert!(stamp(&echo).contains("already stamped"), "stamping again changes nothing");
    let stamped = std::fs::read(&echo).expect("echo");
    assert!(stamped.starts_with(&plain) && stamped.len() > plain.len(), "the section is appended");

    let gate = dir.path().join("gate");
    let config = Config::parse(&text, "test.toml", dir.path()).expect("config");
    let host = Host::builder()
        .compiler(gated_compiler(dir.path(), &gate))
        .config(config)
        .load_in_background(true)
        .build()
        .await
        .expect("host");
    // Listed while its compiler process waits at the gate.
    wait_until("echo listed", || host.tools().get("echo").is_some()).await;
    let listed = host.tools().get("echo").cloned().expect("echo");
    assert_eq!(listed.tier(), None, "its component is still compiling");
    assert!(!gate.exists());
    let ready = host.readiness();
    assert!(ready.finished() && ready.tools == 1 && ready.compiling == 1, "{ready:?}");
    assert!(host.schema("echo", airlock::Format::Mcp, false).is_some(), "it is in the model's tool list");

    // A call waits for the compilation, then runs.
    let calling = {
        let host = host.clone();
        tokio::spawn(async move { crate::support::call(&host, "echo", json!({"text": "hi"})).await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!calling.is_finished(), "the call waits while the component cannot compile");
    std::fs::write(&gate, "").expect("open the gate");
    let result = calling.await.expect("the call");
    assert!(!result.is_error() && result.text().contains("hi"), "{}", result.text());
    wait_until("compiled", || host.readiness().compiling == 0).await;
    let compiled = host.tools().get("echo").cloned().expect("echo is still served");
    assert_eq!(compiled.revision, listed.revision);
    assert!(compiled.tier().is_some());

    // A load from the cache (no record needed) gives the same revision.
    wait_until("optimized build", || host.runtime().upgrades_pending() == 0).await;
    let config = Config::parse(&text, "test.toml", dir.path()).expect("config");
    let (registry, errors) = Registry::load(host.runtime(), &config, &()).await;
    assert!(errors.is_empty(), "{errors:?}");
    let cached = registry.get("echo").expect("echo");
    assert!(cached.from_cache);
    assert_eq!(cached.revision, listed.revision, "the revision does not depend on how the tool was listed");
}

/// `file` stamped, with the first character of the recorded description
/// changed (same length: the section stays well formed).
fn stamp_with_another_description(file: &Path) {
    stamp(file);
    let mut bytes = std::fs::read(file).expect("file");
    let key = b"\"description\":\"";
    let at = bytes.windows(key.len()).rposition(|w| w == key).expect("the recorded description") + key.len();
    bytes[at] = if bytes[at] == b'X' { b'Y' } else { b'X' };
    std::fs::write(file, bytes).expect("write");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_record_that_differs_from_the_export_refuses_the_component_and_the_list_drops_it() {
    let dir = temp_dir();
    let (echo, text) = echo_dir(dir.path());
    stamp_with_another_description(&echo);

    // Listed from its record, then refused once compiled.
    let gate = dir.path().join("gate");
    let config = Config::parse(&text, "test.toml", dir.path()).expect("config");
    let host = Host::builder()
        .compiler(gated_compiler(dir.path(), &gate))
        .config(config)
        .load_in_background(true)
        .build()
        .await
        .expect("host");
    wait_until("echo listed", || host.tools().get("echo").is_some()).await;
    let listed = host.tools().get("echo").cloned().expect("echo");
    assert!(listed.description.starts_with(['X', 'Y']), "listed as recorded: {}", listed.description);
    let calling = {
        let host = host.clone();
        tokio::spawn(async move { crate::support::call(&host, "echo", json!({"text": "hi"})).await })
    };
    std::fs::write(&gate, "").expect("open the gate");
    wait_until("echo dropped", || host.tools().get("echo").is_none()).await;
    let ready = host.readiness();
    assert_eq!((ready.tools, ready.compiling, ready.refused), (0, 0, 1), "{ready:?}");
    let result = calling.await.expect("the call");
    assert!(result.is_error() && result.text().contains("does not match"), "{}", result.text());

    // A full load says why, naming the field.
    let cache = dir.path().join("cache2");
    let text = text.replace(&dir.path().join("cache").display().to_string(), &cache.display().to_string());
    let config = Config::parse(&text, "test.toml", dir.path()).expect("config");
    let (registry, errors) = Registry::load(host.runtime(), &config, &()).await;
    assert!(registry.get("echo").is_none());
    let error = errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n");
    assert!(
        error.contains("does not match what its metadata export returns (the description differs)")
            && error.contains("airlock tool stamp"),
        "{error}"
    );
}

/// `bytes` with a custom section `name` holding `payload` appended.
fn with_section(mut bytes: Vec<u8>, name: &str, payload: &[u8]) -> Vec<u8> {
    fn leb(mut n: usize, out: &mut Vec<u8>) {
        loop {
            let byte = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                out.push(byte);
                return;
            }
            out.push(byte | 0x80);
        }
    }
    let mut contents = Vec::new();
    leb(name.len(), &mut contents);
    contents.extend_from_slice(name.as_bytes());
    contents.extend_from_slice(payload);
    bytes.push(0);
    leb(contents.len(), &mut bytes);
    bytes.extend_from_slice(&contents);
    bytes
}

#[tokio::test]
async fn a_record_over_the_cap_or_not_json_is_a_clear_load_error() {
    let dir = temp_dir();
    let (echo, text) = echo_dir(dir.path());
    let plain = std::fs::read(&echo).expect("echo");
    let host = crate::support::host("").await;
    let cases: [(&[u8], &str); 3] = [
        (&vec![b' '; MAX_RECORDED_BYTES + 1], &format!("at most {MAX_RECORDED_BYTES} are accepted")),
        (b"{\"name\": \"echo\"", "is not the JSON document airlock tool stamp writes"),
        (b"{\"name\": \"echo\"}", "missing field `description`"),
    ];
    for (payload, says) in cases {
        std::fs::write(&echo, with_section(plain.clone(), RECORDED_SECTION, payload)).expect("write");
        let config = Config::parse(&text, "test.toml", dir.path()).expect("config");
        let (registry, errors) = Registry::load(host.runtime(), &config, &()).await;
        assert!(registry.is_empty());
        let error = errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n");
        assert!(error.contains("echo.wasm") && error.contains(RECORDED_SECTION) && error.contains(says), "{error}");
    }
}
