//! Loading: anything that is not a well-formed tool component of the
//! `airlock:tool` world is refused with an error that says why.

use crate::support::{cache_dir, config, fixture, guests, temp_dir, tool};
use airlock::{Host, HostError};

async fn load_error(toml: &str) -> String {
    match Host::builder().config(config(toml)).build().await {
        Ok(_) => panic!("expected a load error for:\n{toml}"),
        Err(err @ HostError::Load(_)) => err.to_string(),
        Err(other) => panic!("expected a load error, got {other}"),
    }
}

fn one(name: &str, path: &std::path::Path) -> String {
    format!("[tools.{name}]\ncomponent = {:?}\n", path.display().to_string())
}

#[tokio::test]
async fn hostile_metadata_is_refused() {
    let cases = [
        ("slow_metadata", "timeout"),
        ("huge_metadata", "at most"),
        ("bad_name", "must match ^[A-Za-z0-9_-]{1,64}$"),
        ("bad_schema", "not JSON"),
        ("panic_metadata", "trapped"),
        ("wrong_world", "airlock:tool/metadata"),
    ];
    for (guest, needle) in cases {
        let text = format!("[defaults]\ntimeout_ms = 500\n{}", one(guest, &fixture(guest)));
        let err = load_error(&text).await;
        assert!(err.contains(needle), "{guest}: {err:?} should contain {needle:?}");
        assert!(err.contains(&format!("{guest}.wasm")), "{guest}: the error must name the file: {err}");
    }
}

#[tokio::test]
async fn non_components_are_refused_before_compiling() {
    let dir = temp_dir();
    let cases: [(&str, &[u8], &str); 4] = [
        ("core.wasm", b"\0asm\x01\0\0\0", "core WebAssembly module"),
        ("text.wasm", b"(component)", "not a WebAssembly binary"),
        ("empty.wasm", b"", "not a WebAssembly binary"),
        ("garbage.wasm", b"\0asm\x0d\0\x01\0garbage", "invalid component"),
    ];
    for (name, bytes, needle) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).expect("write");
        let err = load_error(&one("x", &path)).await;
        assert!(err.contains(needle), "{name}: {err:?} should contain {needle:?}");
    }
}

#[tokio::test]
async fn sha256_pin_mismatch_is_refused() {
    let echo = tool("echo");
    let text = format!("{}sha256 = \"{}\"\n", one("echo", &echo), "0".repeat(64));
    let err = load_error(&text).await;
    assert!(err.contains("config pins 0000"), "{err}");
    let digest = airlock::digest(&std::fs::read(&echo).expect("read"));
    let text = format!("{}sha256 = \"{digest}\"\n", one("echo", &echo));
    assert!(Host::builder().config(config(&text)).build().await.is_ok(), "a matching pin loads");
}

#[tokio::test]
async fn duplicate_and_mismatched_names_are_refused() {
    let dir = temp_dir();
    std::fs::copy(tool("echo"), dir.path().join("a.wasm")).expect("copy");
    std::fs::copy(tool("echo"), dir.path().join("b.wasm")).expect("copy");
    let err = load_error(&format!("tool_dirs = [{:?}]", dir.path().display().to_string())).await;
    assert!(err.contains("declared by both") && err.contains("a.wasm") && err.contains("b.wasm"), "{err}");
    let err = load_error(&one("not_echo", &tool("echo"))).await;
    assert!(err.contains("rename the section to [tools.echo]"), "{err}");
}

#[tokio::test]
async fn bundled_tools_load_from_a_directory_with_builtin_settings() {
    let host = Host::builder()
        .compiler(crate::support::compiler())
        .config(airlock::Config::builtin(&guests()))
        .build()
        .await
        .expect("bundled tools load");
    let registry = host.tools();
    for name in ["echo", "read_file", "list_dir", "write_file", "search_files", "json_query", "http_fetch", "chart"] {
        let tool = registry.get(name).unwrap_or_else(|| panic!("{name} is not loaded"));
        assert!(tool.settings.grants.is_empty(), "{name} has no grants by default");
    }
    assert!(registry.get("write_file").is_some_and(|t| t.pipeline.side_effect));
    assert!(registry.get("http_fetch").is_some_and(|t| t.pipeline.side_effect && t.settings.grants.network.is_none()));
    assert!(registry.get("read_file").is_some_and(|t| !t.pipeline.side_effect));
}

#[tokio::test]
async fn compiled_components_are_cached_on_disk() {
    let cache = temp_dir();
    let text =
        format!("[engine]\ncache_dir = {:?}\n{}", cache.path().display().to_string(), one("echo", &tool("echo")));
    let first = Host::builder().config(config(&text)).build().await.expect("load");
    assert!(!first.tools().get("echo").expect("echo").from_cache);
    let second = Host::builder().config(config(&text)).build().await.expect("load");
    assert!(second.tools().get("echo").expect("echo").from_cache, "a restart must not recompile");
    assert!(cache_dir().is_absolute());
}

#[tokio::test]
async fn corrupt_cache_entries_are_recompiled() {
    let cache = temp_dir();
    let text =
        format!("[engine]\ncache_dir = {:?}\n{}", cache.path().display().to_string(), one("echo", &tool("echo")));
    // Cranelift's build alone: a background compilation still mapping the
    // files would fault when they are overwritten in place below.
    let text = text.replace("[engine]\n", "[engine]\nbaseline_compile = false\n");
    drop(Host::builder().config(config(&text)).build().await.expect("load"));
    for entry in std::fs::read_dir(cache.path()).expect("list") {
        std::fs::write(entry.expect("entry").path(), b"corrupt").expect("overwrite");
    }
    let host = Host::builder().config(config(&text)).build().await.expect("a corrupt cache entry is not fatal");
    assert!(!host.tools().get("echo").expect("echo").from_cache);
}

#[tokio::test]
async fn table_and_memory_limits_below_what_a_component_needs_are_refused() {
    let hostile = fixture("hostile");
    for limit in ["table_elements = 1", "memory_mib = 1"] {
        let err = load_error(&format!("{}side_effect = false\n{limit}\n", one("hostile", &hostile))).await;
        assert!(err.contains("out_of_memory"), "{limit}: {err}");
        assert!(err.contains("hostile.wasm"), "{err}");
    }
}
