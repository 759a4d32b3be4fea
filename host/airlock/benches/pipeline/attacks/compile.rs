//! The compile bombs of item 9: `airlock tools` loading components built
//! to be dear to compile (`tests/integration/hostile_wasm.rs`), each alone
//! and together, at a first start and at a restart, and one within every
//! cap of its shape that costs minutes of CPU. The CPU column includes the
//! compiler processes.

use super::{Row, Sampler, Usage, children_cpu, usage};
use crate::Setup;
use crate::process::{airlock, write_config};
use std::io::Read;
use std::time::Instant;

/// `airlock tools` on the components in `dir` (a tool directory) with
/// built-in settings (the compile cache in `cache`): the sampled row, and
/// the load errors it printed.
fn load_attack(
    setup: &Setup,
    attack: &str,
    name: &str,
    dir: &std::path::Path,
    cache: &std::path::Path,
) -> (Row, String) {
    let config = write_config(
        setup,
        &format!("{name}.toml"),
        &format!(
            "tool_dirs = [{:?}]\n[engine]\ncache_dir = {:?}\n",
            dir.display().to_string(),
            cache.display().to_string()
        ),
    );
    let cpu_before = children_cpu();
    let started = Instant::now();
    let mut child = airlock(setup, Some(&config))
        .arg("tools")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("airlock starts");
    let pid = child.id();
    let before = usage(pid);
    let sampler = Sampler::start(pid);
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        let _ = pipe.read_to_string(&mut stderr);
    }
    let _ = child.wait().expect("airlock exits");
    let to_error = started.elapsed();
    let peak = sampler.finish();
    let row = Row {
        attack: attack.to_owned(),
        outcome: String::new(),
        before,
        peak,
        after: Usage::default(),
        cpu: children_cpu().saturating_sub(cpu_before),
        to_error,
    };
    (row, stderr)
}

/// The compile bombs of the attack reports, with built-in settings: each
/// alone, the three in one tool directory at a first start and at a
/// restart (the refusals remembered), and a component within every cap of
/// its shape that costs minutes to compile (stopped by the CPU it may take
/// for its size). CPU includes the compiler processes.
pub(super) fn compile_bombs(setup: &Setup) -> Vec<Row> {
    let root = setup.scratch.join("compile-bombs");
    let _ = std::fs::remove_dir_all(&root);
    let bombs = [
        (
            "99 999 one-byte data segments (783 KB)",
            "segments.wasm",
            super::hostile_wasm::component(&super::hostile_wasm::data_segments_module(99_999)),
            "MAX_DATA_SEGMENTS",
        ),
        (
            "100 000 exports (1.8 MB)",
            "exports.wasm",
            super::hostile_wasm::component(&super::hostile_wasm::exports_module(100_000)),
            "MAX_EXPORTS",
        ),
        (
            "one function of 20 000 locals in 10 nested loops (190 KB)",
            "locals.wasm",
            super::hostile_wasm::component(&super::hostile_wasm::hostile_module(1, 20_000, 10)),
            "MAX_LOCALS_PER_FUNCTION",
        ),
    ];
    let mut rows = Vec::new();
    let all = root.join("all");
    std::fs::create_dir_all(&all).expect("scratch dir");
    for (i, (what, file, bytes, cap)) in bombs.iter().enumerate() {
        let dir = root.join(format!("bomb-{i}"));
        std::fs::create_dir_all(&dir).expect("scratch dir");
        std::fs::write(dir.join(file), bytes).expect("write");
        std::fs::write(all.join(file), bytes).expect("write");
        let (mut row, stderr) = load_attack(
            setup,
            &format!("compile bomb: {what}, built-in settings"),
            &format!("bomb-{i}"),
            &dir,
            &dir.join("cache"),
        );
        row.outcome = if stderr.contains(cap) {
            format!("refused before compiling, naming {cap}")
        } else {
            format!("unexpected: {}", stderr.lines().last().unwrap_or_default())
        };
        rows.push(row);
    }
    let cache = all.join("cache");
    for (when, name) in [("a first start", "bombs-first"), ("a restart", "bombs-again")] {
        let (mut row, stderr) =
            load_attack(setup, &format!("the three compile bombs in one tool directory, {when}"), name, &all, &cache);
        let refused = stderr.matches("refused").count();
        let remembered = stderr.matches("refused earlier (cached)").count();
        row.outcome = format!("{refused} refused, {remembered} of them remembered from an earlier start");
        rows.push(row);
    }
    let slow = root.join("slow");
    std::fs::create_dir_all(&slow).expect("scratch dir");
    std::fs::write(
        slow.join("slow.wasm"),
        super::hostile_wasm::tool_shaped_component(&super::hostile_wasm::hostile_module(1, 2_500, 1_000)),
    )
    .expect("write");
    let (mut row, stderr) = load_attack(
        setup,
        "a 29 KB component within every cap of its shape (2 500 locals in 1 000 nested loops), built-in settings",
        "slow",
        &slow,
        &slow.join("cache"),
    );
    let named = stderr.contains("compile_secs_per_mib");
    let cached = std::fs::read_dir(slow.join("cache"))
        .map(|d| d.filter(|e| e.as_ref().is_ok_and(|e| e.path().extension().is_some_and(|x| x == "cwasm"))).count())
        .unwrap_or(0);
    row.outcome = format!(
        "refused at load{}, {cached} artifacts cached",
        if named { " after the CPU its size allows, naming compile_secs_per_mib" } else { "" }
    );
    rows.push(row);
    rows
}
