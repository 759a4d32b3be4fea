//! The host's CPU spent on tools' JSON Schemas is bounded: a schema whose
//! evaluation cost explodes is refused at load, and a costly schema that
//! loads is checked per call within the work cap, the deadline and off the
//! async runtime, so other principals' calls are still served.

use crate::support::{call, fixture, guests, host, test_guests};
use airlock::{CallRequest, MAX_SCHEMA_COST, MAX_VALIDATION_WORK, ToolSettings};
use serde_json::{Value, json};
use std::time::Duration;

fn heavy_config(timeout_ms: u64) -> String {
    format!(
        "[tools.schema_heavy]\ncomponent = {:?}\ntimeout_ms = {timeout_ms}\nside_effect = false\nconcurrency_safe = true\n\
         [tools.echo]\ncomponent = {:?}\nside_effect = false\nconcurrency_safe = true\n",
        fixture("schema_heavy").display().to_string(),
        guests().join("echo.wasm").display().to_string(),
    )
}

/// `{"data": [0, 0, …]}` of about `bytes` bytes of JSON text.
fn data(bytes: usize) -> Value {
    json!({ "data": vec![0; bytes / 2] })
}

#[tokio::test]
async fn fan_out_schema_is_refused_at_load_naming_path_cost_and_bound() {
    let host = host("").await;
    let err = match airlock::load_component(host.runtime(), &fixture("schema_bomb"), ToolSettings::default()).await {
        Ok(_) => panic!("the fan-out schema must be refused"),
        Err(err) => err.to_string(),
    };
    for needle in ["schema_bomb.wasm", "parameters schema", "/$defs/a20", "8186 work units", "MAX_SCHEMA_COST = 4096"] {
        assert!(err.contains(needle), "{err:?} should contain {needle:?}");
    }
}

#[tokio::test]
async fn bundled_and_test_schemas_stay_well_under_the_bound() {
    let host = host("").await;
    // Fixtures refused on purpose, and the one built to sit at the bound.
    let skip = [
        "bad_name",
        "bad_schema",
        "huge_metadata",
        "panic_metadata",
        "slow_metadata",
        "wrong_world",
        "schema_bomb",
        "schema_heavy",
    ];
    let mut seen = 0;
    for dir in [guests(), test_guests()] {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for path in entries.flatten().map(|entry| entry.path()) {
            let name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            if path.extension().is_none_or(|ext| ext != "wasm") || skip.contains(&name.as_str()) {
                continue;
            }
            let tool = match airlock::load_component(host.runtime(), &path, ToolSettings::default()).await {
                Ok(tool) => tool,
                Err(err) => panic!("{name} must still load: {err}"),
            };
            let (parameters, output) = tool.schema_costs();
            assert!(parameters <= MAX_SCHEMA_COST / 16, "{name}: parameters cost {parameters}");
            assert!(output.unwrap_or(0) <= MAX_SCHEMA_COST / 16, "{name}: output cost {output:?}");
            seen += 1;
        }
    }
    assert!(seen >= 8, "only {seen} components were checked: run `make guests`");
    let heavy = airlock::load_component(host.runtime(), &fixture("schema_heavy"), ToolSettings::default()).await;
    let cost = heavy.expect("schema_heavy loads").schema_costs().0;
    assert!(cost > MAX_SCHEMA_COST / 2 && cost <= MAX_SCHEMA_COST, "schema_heavy costs {cost}");
}

#[tokio::test]
async fn arguments_too_large_for_a_costly_schema_are_refused_before_evaluation() {
    let host = host(&heavy_config(10_000)).await;
    let registry = host.tools();
    let cost = registry.get("schema_heavy").expect("loaded").schema_costs().0;
    let accepted = MAX_VALIDATION_WORK / cost;
    let result = call(&host, "schema_heavy", data(accepted as usize * 2)).await;
    assert!(result.is_error(), "{}", result.text());
    assert_eq!(result.outcome_name(), "invalid_arguments", "{}", result.text());
    for needle in ["MAX_VALIDATION_WORK", &format!("at most {accepted} bytes")] {
        assert!(result.text().contains(needle), "{:?} should contain {needle:?}", result.text());
    }
    assert!(result.fuel_used.is_none(), "the tool must not run");
}

#[tokio::test]
async fn a_costly_check_runs_off_the_runtime_and_others_are_served() {
    let host = host(&heavy_config(60_000)).await;
    let registry = host.tools();
    let cost = registry.get("schema_heavy").expect("loaded").schema_costs().0;
    // Arguments just under the work cap: checked, on blocking threads.
    let arguments = data((MAX_VALIDATION_WORK / cost) as usize * 9 / 10);
    let before = cpu_time();
    let heavy = (0..4).map(|i| {
        let host = &host;
        let arguments = arguments.clone();
        async move { host.call(CallRequest::new(format!("heavy-{i}"), "schema_heavy", arguments), None).await }
    });
    let heavy = futures::future::join_all(heavy);
    // Another principal's call is served while they run (a liveness bound,
    // not a timing assertion).
    let other = async {
        let echo = host.call(CallRequest::new("other", "echo", json!({"text": "hi"})), None);
        tokio::time::timeout(Duration::from_secs(60), echo).await
    };
    let (heavy, other) = tokio::join!(heavy, other);
    let other = other.expect("a small call is served while costly checks run");
    assert!(!other.is_error(), "{}", other.text());
    for result in heavy {
        assert!(!result.is_error(), "{}", result.text());
    }
    eprintln!("4 checks just under MAX_VALIDATION_WORK: {:.2} s of process CPU", cpu_time() - before);
}

#[tokio::test]
async fn a_check_past_the_deadline_is_a_timeout() {
    // 5 ms cannot hold the check of ~60 KB against 2^9 subschemas per item
    // (tens of millions of evaluations) on any machine.
    let host = host(&heavy_config(5)).await;
    let registry = host.tools();
    let cost = registry.get("schema_heavy").expect("loaded").schema_costs().0;
    let result = call(&host, "schema_heavy", data((MAX_VALIDATION_WORK / cost) as usize * 9 / 10)).await;
    assert_eq!(result.outcome_name(), "timeout", "{}", result.text());
    assert!(result.text().contains("checked against its schema"), "{}", result.text());
    let next = host.call(CallRequest::new("other", "echo", json!({"text": "hi"})), None).await;
    assert!(!next.is_error(), "{}", next.text());
}

/// CPU time of this process so far, in seconds (for the log only: other
/// tests run in the same process).
fn cpu_time() -> f64 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|stat| {
            let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
            let user: f64 = fields.get(11)?.parse().ok()?;
            let system: f64 = fields.get(12)?.parse().ok()?;
            Some((user + system) / 100.0)
        })
        .unwrap_or(0.0)
}
