//! `airlock_settings::engine` read through a whole config.

#[test]
fn config_errors_name_the_key_and_the_range() {
    use crate::config::testing::{check_err, parse};
    check_err("[engine]\nwasm_stack_kib = 1", &["[engine]", "wasm_stack_kib", "accepted 64..=16384"]);
    check_err("[engine]\nmax_live_instances = 0", &["[engine]", "max_live_instances = 0", "accepted 1..=10000"]);
    check_err("[engine]\nbogus = 1", &["bogus", "cache_dir"]);
    let engine = parse("[engine]\nwasm_stack_kib = 128\ncache = false\ncache_dir = \"c\"").unwrap().engine;
    assert_eq!((engine.wasm_stack_bytes, engine.cache_dir), (128 << 10, None), "cache = false wins");
}

#[test]
fn compile_limits_are_parsed_and_bounded() {
    use crate::config::testing::{check_err, parse};
    let engine = parse("").unwrap().engine;
    assert_eq!((engine.compile_timeout_secs, engine.compile_memory_mib), (300, 4096));
    assert_eq!(engine.compiler, None, "the library compiles nothing unless told which executable compiles");
    let engine = parse("[engine]\ncompile_timeout_secs = 3600\ncompile_memory_mib = 256").unwrap().engine;
    assert_eq!((engine.compile_timeout_secs, engine.compile_memory_mib), (3600, 256));
    check_err("[engine]\ncompile_timeout_secs = 0", &["[engine]", "compile_timeout_secs = 0", "accepted 1..=3600"]);
    check_err("[engine]\ncompile_memory_mib = 65537", &["compile_memory_mib = 65537", "accepted 256..=65536"]);
}
