//! Compilation under a meter: a component shaped to be expensive to
//! compile is refused before compiling by the cap it is over; one within
//! the caps is refused at `[engine] compile_timeout_secs` or
//! `compile_memory_mib`, within a bounded time; a refused component (at
//! compilation or at a later check) leaves no artifact in the cache; and a
//! refusal for what the bytes are is remembered there, so that the next
//! load does not start a compiler for them, until the limits change.

use crate::hostile_wasm::{component, data_segments_module, exports_module, hostile_module, tool_shaped_component};
use crate::support::{compiler, config, temp_dir, tool};
use airlock::Host;
use std::path::Path;
use std::time::{Duration, Instant};

/// Load `file` with `engine` settings (and an empty cache in `cache`);
/// the load error and how long it took.
async fn load_error(file: &Path, cache: &Path, engine: &str) -> (String, Duration) {
    load_error_with(file, cache, engine, &compiler()).await
}

/// [`load_error`] with the compiler executable `compiler`.
/// (`baseline_compile = false` in `engine` for a component Winch compiles
/// within a limit Cranelift does not: the limit is then Cranelift's.)
async fn load_error_with(file: &Path, cache: &Path, engine: &str, compiler: &Path) -> (String, Duration) {
    let text = format!(
        "[engine]\ncache_dir = {:?}\n{engine}\n[tools.hostile]\ncomponent = {:?}\n",
        cache.display().to_string(),
        file.display().to_string()
    );
    let mut settings = config(&text);
    settings.engine.compiler = Some(compiler.to_owned());
    let started = Instant::now();
    let err = match Host::builder().config(settings).build().await {
        Ok(_) => panic!("{} should be refused", file.display()),
        Err(err) => err.to_string(),
    };
    (err, started.elapsed())
}

/// Files left in the cache directory (artifacts or temporary files).
fn cached(cache: &Path) -> Vec<String> {
    match std::fs::read_dir(cache) {
        Ok(entries) => entries.map(|e| e.expect("entry").file_name().to_string_lossy().into_owned()).collect(),
        Err(_) => Vec::new(),
    }
}

/// The refusals remembered in the cache directory.
fn remembered(cache: &Path) -> Vec<String> {
    cached(cache).into_iter().filter(|f| f.ends_with(".refused")).collect()
}

/// Files in the cache directory other than remembered refusals: artifacts
/// and temporary files.
fn not_remembered(cache: &Path) -> Vec<String> {
    cached(cache).into_iter().filter(|f| !f.ends_with(".refused")).collect()
}

/// A compiler executable that notes each start in a log, then runs the
/// real one; and how many times it started.
struct CountingCompiler {
    script: std::path::PathBuf,
    log: std::path::PathBuf,
}

impl CountingCompiler {
    fn new(dir: &Path) -> Self {
        let (script, log) = (dir.join("compiler.sh"), dir.join("compiler.log"));
        // The compiler process starts with an empty environment: absolute
        // paths only.
        let text = format!("#!/bin/sh\necho started >> '{}'\nexec '{}' \"$@\"\n", log.display(), compiler().display());
        std::fs::write(&script, text).expect("write the script");
        std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
        CountingCompiler { script, log }
    }

    fn starts(&self) -> usize {
        std::fs::read_to_string(&self.log).map(|text| text.lines().count()).unwrap_or(0)
    }
}

/// The compile bombs of the attack reports, each with what its refusal
/// names: 99 999 one-byte data segments (767 KB, ~30 s of CPU and 2.4 GB
/// to compile), 100 000 exports (1.7 MB, ~15 s and 1.2 GB), one function of
/// 20 000 locals in 10 nested loops (190 KB, ~160 s).
fn bombs() -> [(&'static str, Vec<u8>, &'static str, &'static str); 3] {
    [
        ("segments.wasm", component(&data_segments_module(99_999)), "99999 data segments", "MAX_DATA_SEGMENTS"),
        ("exports.wasm", component(&exports_module(100_000)), "100000 exports", "MAX_EXPORTS"),
        (
            "locals.wasm",
            component(&hostile_module(1, 20_000, 10)),
            "20000 locals in one function",
            "MAX_LOCALS_PER_FUNCTION",
        ),
    ]
}

/// Within every cap of its shape, and exporting the tool interfaces by
/// name, so that compiling it is what costs: one function of 2 500 locals
/// (the cap) in 1 000 nested loops, 29 KB: over a minute of CPU and
/// gigabytes to compile.
fn within_the_caps() -> Vec<u8> {
    tool_shaped_component(&hostile_module(1, 2_500, 1_000))
}

#[tokio::test]
async fn compile_bombs_are_refused_before_compiling_by_the_cap_they_are_over() {
    for (name, bytes, count, cap) in bombs() {
        let dir = temp_dir();
        let file = dir.path().join(name);
        std::fs::write(&file, &bytes).expect("write");
        let cache = dir.path().join("cache");
        let (err, took) = load_error(&file, &cache, "").await;
        eprintln!("{name}, {} bytes: refused in {took:?}", bytes.len());
        assert!(err.contains(name) && err.contains("refused before compiling"), "{err}");
        assert!(err.contains(count) && err.contains(cap), "{name}: the refusal names {count:?} and {cap}: {err}");
        assert_eq!(not_remembered(&cache), Vec::<String>::new(), "nothing compiled is cached");
        assert_eq!(remembered(&cache).len(), 1, "the refusal is remembered: {:?}", cached(&cache));
    }
}

#[tokio::test]
async fn a_component_that_exports_no_tool_interface_is_refused_before_compiling() {
    let dir = temp_dir();
    let file = dir.path().join("nothing.wasm");
    std::fs::write(&file, component(&hostile_module(1, 2, 1))).expect("write");
    let (err, _) = load_error(&file, &dir.path().join("cache"), "").await;
    assert!(err.contains("not an airlock:tool component: it exports nothing"), "{err}");
    assert!(err.contains("a tool must export airlock:tool/metadata and airlock:tool/handler"), "{err}");
}

#[tokio::test]
async fn a_component_over_the_compile_cpu_limit_is_refused_and_not_cached() {
    let dir = temp_dir();
    let file = dir.path().join("slow.wasm");
    std::fs::write(&file, within_the_caps()).expect("write");
    let cache = dir.path().join("cache");
    // 1 s of CPU: the CPU limit stops it however busy the machine is (a
    // compiler still using the CPU is never stopped by the wall clock).
    let (err, _) = load_error(&file, &cache, "compile_timeout_secs = 1\nbaseline_compile = false").await;
    assert!(err.contains("slow.wasm") && err.contains("[engine] compile_timeout_secs = 1"), "{err}");
    assert_eq!(not_remembered(&cache), Vec::<String>::new(), "a refused component leaves no artifact in the cache");
}

#[tokio::test]
async fn a_small_component_may_take_seconds_of_cpu_to_compile_not_the_whole_timeout() {
    let dir = temp_dir();
    let file = dir.path().join("small.wasm");
    let bytes = within_the_caps();
    std::fs::write(&file, &bytes).expect("write");
    let (err, took) = load_error(&file, &dir.path().join("cache"), "baseline_compile = false").await;
    eprintln!("{} bytes: refused in {took:?}: {err}", bytes.len());
    // 5 s + 4 s per MiB of its 0.03 MiB, rounded up: 6 s, not 300.
    assert!(err.contains("more than the 6 s of CPU"), "{err}");
    assert!(err.contains("`[engine] compile_secs_per_mib = 4`") && err.contains("compile_timeout_secs = 300"), "{err}");
    assert!(err.contains("a higher compile_secs_per_mib"), "{err}");
}

#[tokio::test]
async fn a_component_over_the_compile_memory_limit_is_refused() {
    let dir = temp_dir();
    let file = dir.path().join("big.wasm");
    // Reaches 256 MiB of address space within a tenth of a second of CPU.
    std::fs::write(&file, within_the_caps()).expect("write");
    let cache = dir.path().join("cache");
    let (err, took) = load_error(&file, &cache, "compile_memory_mib = 256\nbaseline_compile = false").await;
    assert!(err.contains("big.wasm") && err.contains("[engine] compile_memory_mib = 256"), "{err}");
    assert!(took < Duration::from_secs(300), "refused after {took:?}");
    assert_eq!(not_remembered(&cache), Vec::<String>::new());
}

#[tokio::test]
async fn a_component_refused_after_compiling_is_not_cached_and_an_accepted_one_is() {
    let dir = temp_dir();
    let cache = dir.path().join("cache");
    // Exports the tool interfaces by name, compiles in no time, then fails
    // the world check: its interfaces have no functions.
    let file = dir.path().join("no_functions.wasm");
    std::fs::write(&file, tool_shaped_component(&hostile_module(1, 2, 1))).expect("write");
    let (err, _) = load_error(&file, &cache, "").await;
    assert!(err.contains("not an airlock:tool component"), "{err}");
    // Nor is a refusal once compiled remembered: it is the types, which a
    // later build of the host may accept.
    assert_eq!(cached(&cache), Vec::<String>::new(), "a refused component leaves nothing in the cache");

    // The compiler process's artifact loads into the host's engine and is
    // kept once accepted.
    // (Cranelift's build alone: `tiers.rs` follows a baseline build.)
    let text = format!(
        "[engine]\ncache_dir = {:?}\nbaseline_compile = false\n[tools.echo]\ncomponent = {:?}\n",
        cache.display().to_string(),
        tool("echo").display().to_string()
    );
    let host = Host::builder().config(config(&text)).build().await.expect("echo loads");
    assert!(!host.tools().get("echo").expect("echo").from_cache);
    // The schema validator's own artifact is there too when this process
    // had not made it ready before (it depends on which tests ran first).
    let files: Vec<String> = cached(&cache).into_iter().filter(|f| !f.starts_with("validator-")).collect();
    assert!(files.len() == 1 && files[0].ends_with(".cwasm"), "{files:?}");
    let again = Host::builder().config(config(&text)).build().await.expect("echo loads");
    assert!(again.tools().get("echo").expect("echo").from_cache);
}

#[tokio::test]
async fn a_refusal_is_remembered_and_not_paid_for_again_until_the_limits_change() {
    let mut cases: Vec<(&str, Vec<u8>, &str)> =
        bombs().into_iter().map(|(name, bytes, _, cap)| (name, bytes, cap)).collect();
    cases.push(("nothing.wasm", component(&hostile_module(1, 2, 1)), "it exports nothing"));
    cases.push(("garbage.wasm", b"\0asm\x0d\0\x01\0garbage".to_vec(), "invalid component"));
    cases.push(("slow.wasm", within_the_caps(), "compile_timeout_secs = 1"));
    for (name, bytes, reason) in cases {
        let dir = temp_dir();
        let file = dir.path().join(name);
        std::fs::write(&file, &bytes).expect("write");
        let cache = dir.path().join("cache");
        let counting = CountingCompiler::new(dir.path());
        // Winch compiles the slow component within the CPU Cranelift runs
        // out of: its refusal is Cranelift's.
        let only_cranelift = if name == "slow.wasm" { "\nbaseline_compile = false" } else { "" };
        let limits = &format!("compile_timeout_secs = 1{only_cranelift}");
        let (first, _) = load_error_with(&file, &cache, limits, &counting.script).await;
        assert!(first.contains(reason) && !first.contains("refused earlier"), "{name}: {first}");
        assert_eq!(counting.starts(), 1, "{name}");
        let files = remembered(&cache);
        assert_eq!(files.len(), 1, "{name}: {:?}", cached(&cache));
        let path = cache.join(&files[0]);
        let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&path).expect("stat").permissions());
        assert_eq!(mode & 0o777, 0o600, "{name}");

        // A restart (a new host on the same cache): the same reason, said to
        // be remembered, and no compiler started.
        let started = Instant::now();
        let (again, _) = load_error_with(&file, &cache, limits, &counting.script).await;
        eprintln!("{name}: remembered refusal in {:?}", started.elapsed());
        assert!(again.contains("refused earlier (cached): ") && again.contains(reason), "{name}: {again}");
        assert!(again.contains(name), "the error names the file: {again}");
        assert_eq!(counting.starts(), 1, "{name}: no compiler was started for a remembered refusal");

        // Other compile limits: checked again.
        let other_limits = format!("compile_timeout_secs = 2{only_cranelift}");
        let (other, _) = load_error_with(&file, &cache, &other_limits, &counting.script).await;
        assert!(!other.contains("refused earlier"), "{name}: {other}");
        assert_eq!(counting.starts(), 2, "{name}: a change of the compile limits tries again");
    }
}

#[tokio::test]
async fn a_failure_that_may_not_hold_next_time_is_not_remembered() {
    let dir = temp_dir();
    let file = dir.path().join("segments.wasm");
    std::fs::write(&file, component(&data_segments_module(99_999))).expect("write");
    let cache = dir.path().join("cache");
    let (err, _) = load_error_with(&file, &cache, "", &dir.path().join("no-such-compiler")).await;
    assert!(err.contains("cannot start the compiler process"), "{err}");
    assert_eq!(remembered(&cache), Vec::<String>::new());
    let (err, _) = load_error(&file, &cache, "").await;
    assert!(err.contains("MAX_DATA_SEGMENTS") && !err.contains("refused earlier"), "{err}");
}

#[test]
fn airlock_tools_shows_a_remembered_refusal() {
    let dir = temp_dir();
    let file = dir.path().join("segments.wasm");
    std::fs::write(&file, component(&data_segments_module(99_999))).expect("write");
    let config = format!(
        "builtin_settings = false\n[engine]\ncache_dir = {:?}\n[tools.segments]\ncomponent = {:?}\n",
        dir.path().join("cache").display().to_string(),
        file.display().to_string()
    );
    std::fs::write(dir.path().join("airlock.toml"), config).expect("write config");
    let tools = || {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_airlock"))
            .args(["--config", "airlock.toml", "tools"])
            .current_dir(dir.path())
            .output()
            .expect("airlock runs");
        assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let first = tools();
    assert!(
        first.contains("segments.wasm: refused before compiling") && first.contains("MAX_DATA_SEGMENTS"),
        "{first}"
    );
    let second = tools();
    assert!(second.contains("segments.wasm: refused earlier (cached): refused before compiling"), "{second}");
    assert!(second.contains("MAX_DATA_SEGMENTS"), "{second}");
}

#[tokio::test]
async fn without_a_compiler_nothing_is_compiled() {
    let dir = temp_dir();
    let text = format!(
        "[engine]\ncache_dir = {:?}\n[tools.echo]\ncomponent = {:?}\n",
        dir.path().join("cache").display().to_string(),
        tool("echo").display().to_string()
    );
    let mut settings = config(&text);
    settings.engine.compiler = None;
    let err = Host::builder().config(settings).build().await.map(|_| ()).expect_err("refused");
    assert!(err.to_string().contains("no compiler is set"), "{err}");
}

#[test]
fn compile_limits_out_of_range_are_config_errors() {
    for (text, needle) in [
        ("compile_timeout_secs = 0", "accepted 1..=3600"),
        ("compile_timeout_secs = 3601", "accepted 1..=3600"),
        ("compile_memory_mib = 255", "accepted 256..=65536"),
        ("compile_secs_per_mib = 0", "accepted 1..=600"),
        ("compile_secs_per_mib = 601", "accepted 1..=600"),
    ] {
        let err = airlock::Config::parse(&format!("[engine]\n{text}\n"), "airlock.toml", Path::new("."))
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(err.contains("[engine]") && err.contains(text) && err.contains(needle), "{err}");
    }
}

#[test]
fn inspect_refuses_a_component_over_the_size_cap_without_compiling() {
    let dir = temp_dir();
    let file = dir.path().join("huge.wasm");
    // A sparse file one byte over the cap, with a component header.
    let handle = std::fs::File::create(&file).expect("create");
    std::io::Write::write_all(&mut &handle, b"\0asm\x0d\0\x01\0").expect("header");
    handle.set_len(airlock::MAX_COMPONENT_BYTES + 1).expect("grow");
    let started = Instant::now();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_airlock"))
        .args(["inspect", &file.display().to_string()])
        .current_dir(dir.path())
        .output()
        .expect("airlock runs");
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let why = report["rejected_because"].as_str().unwrap_or_default();
    assert!(why.contains("larger than the 268435456-byte limit"), "{report}");
    assert_eq!(report["accepted"], false);
    assert!(started.elapsed() < Duration::from_secs(60), "{:?}", started.elapsed());
}

#[test]
fn a_compilation_with_the_cache_off_leaves_nothing_behind() {
    // `airlock inspect` compiles with the cache off, in a private directory
    // under TMPDIR; the accepted component's artifact goes with it.
    let dir = temp_dir();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).expect("tmp");
    let inspect = || {
        std::process::Command::new(env!("CARGO_BIN_EXE_airlock"))
            .args(["inspect", &tool("echo").display().to_string()])
            .current_dir(dir.path())
            .env("TMPDIR", &tmp)
            .output()
            .expect("airlock runs")
    };
    let out = inspect();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let left: Vec<_> = std::fs::read_dir(&tmp).expect("tmp").map(|e| e.expect("entry").path()).collect();
    assert!(left.is_empty(), "the compiler left {left:?} behind");
}

#[tokio::test]
async fn the_compilations_share_of_the_budget_is_the_compilers_address_space() {
    let dir = temp_dir();
    let file = dir.path().join("big.wasm");
    // Reaches 256 MiB of address space within a tenth of a second of CPU.
    std::fs::write(&file, within_the_caps()).expect("write");
    // Half of a 512 MiB budget, below compile_memory_mib's 4096: a
    // compilation reserves no more than the compilations' share, so it
    // fits beside what calls and sessions hold, and is refused past it.
    let (err, _) =
        load_error(&file, &dir.path().join("cache"), "memory_budget_mib = 512\nbaseline_compile = false").await;
    assert!(
        err.contains(
            "more than 256 MiB of address space (the compilations' share of the host memory budget: `[engine] \
             memory_share_percent` = 50 % of `memory_budget_mib` = 512 MiB, which is below `compile_memory_mib` = \
             4096)"
        ),
        "{err}"
    );
    assert!(err.contains("raise memory_budget_mib or memory_share_percent"), "{err}");
}

#[tokio::test]
async fn compilations_reserve_their_address_space_from_the_host_memory_budget() {
    // Each compiler process reserves compile_memory_mib = 1024 of a
    // 2048 MiB budget, of which the host's compilations hold at most half
    // beyond the first: however many tools load in parallel, one compiler
    // runs at a time. A wrapper notes when each starts and ends.
    let dir = temp_dir();
    let log = dir.path().join("compiler.log");
    let script = dir.path().join("compiler.sh");
    let text = format!(
        "#!/bin/sh\necho start >> '{log}'\n'{exe}' \"$@\"\nstatus=$?\necho end >> '{log}'\nexit $status\n",
        log = log.display(),
        exe = compiler().display()
    );
    std::fs::write(&script, text).expect("write the script");
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
    let names = ["echo", "read_file", "list_dir", "search_files"];
    let mut text = format!(
        "[engine]\ncache_dir = {:?}\nmemory_budget_mib = 2048\ncompile_memory_mib = 1024\nbaseline_compile = false\n",
        dir.path().join("cache").display().to_string()
    );
    for name in names {
        text.push_str(&format!("[tools.{name}]\ncomponent = {:?}\n", tool(name).display().to_string()));
    }
    let mut settings = config(&text);
    settings.engine.compiler = Some(script.clone());
    let host = Host::builder().config(settings).build().await.expect("the tools load");
    assert_eq!(host.tools().len(), names.len());
    let events = std::fs::read_to_string(&log).expect("the log");
    let (mut running, mut most, mut starts) = (0usize, 0usize, 0usize);
    for event in events.lines() {
        if event == "start" {
            running += 1;
            starts += 1;
        } else {
            running = running.saturating_sub(1);
        }
        most = most.max(running);
    }
    assert_eq!(starts, names.len(), "{events}");
    assert_eq!(most, 1, "compilers ran at once: {events}");
    let metrics = host.metrics_text();
    let reserved = metrics.lines().find(|l| l.starts_with("airlock_memory_reserved_bytes ")).expect("the gauge");
    assert_eq!(reserved, "airlock_memory_reserved_bytes 0", "every compilation gave its reservation back");
}
