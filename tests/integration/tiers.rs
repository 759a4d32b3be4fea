//! Two builds of each tool: on an empty compile cache every bundled tool is
//! compiled first by the baseline compiler (Winch) and served at once; its
//! optimized build (Cranelift) is compiled in the background and replaces
//! it in place, under the same revision; the next start loads the
//! optimized builds from the cache directly, and no baseline artifact is
//! left there.
//!
//! Asserts on states, never on times: which build each tool runs, its
//! revision, the files in the cache. Waits wait for the state, with a
//! deadline long enough for a busy two-core machine.

use crate::support::{call, config, guests, temp_dir};
use airlock::{Host, Tier};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// Liveness bound: compiling every bundled tool with Cranelift, behind
/// everything else on a busy two-core machine.
const DEADLINE: Duration = Duration::from_secs(900);

/// The bundled tools over an empty cache in `cache`.
fn bundled_config(cache: &Path, baseline: bool) -> airlock::Config {
    config(&format!(
        "tool_dirs = [{:?}]\n[engine]\ncache_dir = {:?}\nbaseline_compile = {baseline}\n[tools.echo]\n\
         side_effect = false\n[tools.run_js]\nside_effect = false\n",
        guests().display().to_string(),
        cache.display().to_string()
    ))
}

/// Each tool's revision and the build it runs.
fn builds(host: &Host) -> BTreeMap<String, (String, Tier)> {
    host.tools().iter().map(|tool| (tool.name.clone(), (tool.revision.clone(), tool.tier()))).collect()
}

/// The bundled tools' names, from their files.
fn bundled_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(guests())
        .expect("the guests directory exists: run `make guests`")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "wasm"))
        .map(|path| path.file_stem().expect("a name").to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

async fn echo_works(host: &Host) {
    let result = call(host, "echo", json!({"text": "hi"})).await;
    assert!(!result.is_error(), "{}", result.text());
    let result = call(host, "run_js", json!({"code": "6*7"})).await;
    assert!(!result.is_error() && result.text().contains("42"), "{}", result.text());
}

fn baseline_artifacts(cache: &Path) -> Vec<String> {
    std::fs::read_dir(cache)
        .expect("the cache")
        .map(|entry| entry.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains("-baseline-"))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_first_start_serves_baseline_builds_then_the_optimized_ones_under_the_same_revisions() {
    let dir = temp_dir();
    let cache = dir.path().join("cache");
    let host = Host::builder().config(bundled_config(&cache, true)).build().await.expect("the bundled tools load");

    // Every tool is listed, each served first by its baseline build (whose
    // optimized build may be in place already: they compile while the
    // other tools load).
    let first = builds(&host);
    assert_eq!(first.keys().cloned().collect::<Vec<_>>(), bundled_names());
    assert_eq!(host.runtime().upgrades_started(), first.len(), "every tool was compiled by Winch first");
    echo_works(&host).await;

    // The optimized builds replace them, one by one, under the same revisions.
    let until = Instant::now() + DEADLINE;
    while host.runtime().upgrades_pending() > 0 {
        assert!(Instant::now() < until, "optimized builds still compiling after {DEADLINE:?}: {:?}", builds(&host));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let upgraded = builds(&host);
    for (name, (revision, tier)) in &upgraded {
        assert_eq!(*tier, Tier::Optimized, "{name} runs its optimized build");
        assert_eq!(Some(revision), first.get(name).map(|(r, _)| r), "{name} kept its revision");
    }
    echo_works(&host).await;
    assert_eq!(baseline_artifacts(&cache), Vec::<String>::new(), "the baseline artifacts are gone");
    drop(host);

    // The next start loads the optimized builds from the cache.
    let again = Host::builder().config(bundled_config(&cache, true)).build().await.expect("the bundled tools load");
    assert_eq!(again.runtime().upgrades_started(), 0);
    for tool in again.tools().iter() {
        assert!(tool.from_cache && tool.tier() == Tier::Optimized, "{} is loaded optimized from the cache", tool.name);
        assert_eq!(Some(&tool.revision), first.get(&tool.name).map(|(r, _)| r));
    }
}

#[tokio::test]
async fn with_baseline_compile_off_only_cranelift_compiles() {
    let dir = temp_dir();
    let cache = dir.path().join("cache");
    let text = format!(
        "[engine]\ncache_dir = {:?}\nbaseline_compile = false\n[tools.echo]\ncomponent = {:?}\nside_effect = false\n",
        cache.display().to_string(),
        guests().join("echo.wasm").display().to_string()
    );
    let host = Host::builder().config(config(&text)).build().await.expect("echo loads");
    let echo = host.tools().get("echo").cloned().expect("echo");
    assert_eq!(echo.tier(), Tier::Optimized);
    assert_eq!((host.runtime().upgrades_started(), host.runtime().upgrades_pending()), (0, 0));
    assert_eq!(baseline_artifacts(&cache), Vec::<String>::new());
    let result = call(&host, "echo", json!({"text": "hi"})).await;
    assert!(!result.is_error() && result.text().contains("hi"), "{}", result.text());
}
