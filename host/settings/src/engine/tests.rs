//! `[engine]`: what is accepted, what is refused and how the error says
//! it, and the generated documents.

use super::*;

/// `text` read as `[engine]`, relative paths from `/etc/airlock`.
fn parse(text: &str) -> Result<EngineSettings, String> {
    let raw: RawEngine = toml::from_str(text).map_err(|err| err.to_string())?;
    EngineSettings::from_raw(raw, &|path| Path::new("/etc/airlock").join(path))
}

/// `text` is refused with a message containing every one of `expect`.
#[track_caller]
fn check_err(text: &str, expect: &[&str]) {
    let err = parse(text).err().unwrap_or_else(|| panic!("accepted: {text}"));
    for needle in expect {
        assert!(err.contains(needle), "{err:?} should contain {needle:?}");
    }
}

#[test]
fn generated_docs_are_current() {
    ENGINE.ensure_documents("book/src/operator/loading.md").unwrap();
}

#[test]
fn config_errors_name_the_key_and_the_range() {
    check_err("wasm_stack_kib = 1", &["[engine] wasm_stack_kib = 1 is out of range: accepted 64..=16384 KiB"]);
    check_err("max_live_instances = 0", &["[engine] max_live_instances = 0", "accepted 1..=10000"]);
    check_err("memory_share_percent = 101", &["[engine] memory_share_percent = 101", "accepted 1..=100 %"]);
    check_err("memory_budget_mib = 63", &["memory_budget_mib = 63", "accepted 64..=16777216 MiB"]);
    check_err("bogus = 1", &["bogus", "cache_dir"]);
    let engine = parse("wasm_stack_kib = 128\ncache = false\ncache_dir = \"c\"").unwrap();
    assert_eq!((engine.wasm_stack_bytes, engine.cache_dir), (128 << 10, None), "cache = false wins");
    let engine = parse("cache_dir = \"c\"\nmemory_budget_mib = 64\nmemory_share_percent = 100").unwrap();
    assert_eq!(engine.cache_dir, Some(PathBuf::from("/etc/airlock/c")));
    assert_eq!((engine.memory_budget_mib, engine.memory_share_percent), (Some(64), 100));
}

#[test]
fn compile_limits_are_parsed_and_bounded() {
    let engine = parse("").unwrap();
    assert_eq!((engine.compile_timeout_secs, engine.compile_memory_mib), (300, 4096));
    assert_eq!(engine.compiler, None, "the library compiles nothing unless told which executable compiles");
    assert_eq!(engine, EngineSettings { cache_dir: engine.cache_dir.clone(), ..EngineSettings::default() });
    let engine = parse("compile_timeout_secs = 3600\ncompile_memory_mib = 256").unwrap();
    assert_eq!((engine.compile_timeout_secs, engine.compile_memory_mib), (3600, 256));
    check_err("compile_timeout_secs = 0", &["[engine]", "compile_timeout_secs = 0", "accepted 1..=3600"]);
    check_err("compile_memory_mib = 65537", &["compile_memory_mib = 65537", "accepted 256..=65536"]);
    check_err("compile_secs_per_mib = 601", &["compile_secs_per_mib = 601", "accepted 1..=600"]);
}
