//! `[tools.NAME]` read whole: the pipeline's keys, what is refused and how
//! the error says it, every key of the table at its line, and the
//! generated documents.

use super::*;
use crate::config::testing::{check_err, parse};

/// The pipeline's settings of the one tool `name` in `text`.
fn pipeline(text: &str, name: &str) -> PipelineSettings {
    let config = parse(text).unwrap();
    config.tools.get(name).unwrap_or_else(|| panic!("no [tools.{name}]")).pipeline.clone()
}

#[test]
fn generated_docs_are_current() {
    airlock_settings::generated::ensure_documents(
        PIPELINE.name,
        "host/runtime/src/tool_settings.rs, host/pipeline/src/tool_settings.rs",
        &keys(),
        "book/src/operator/configuration.md",
    )
    .unwrap();
}

#[test]
fn tools_have_side_effects_unless_told() {
    let echo = pipeline("[tools.echo]\ncomponent = \"echo.wasm\"", "echo");
    assert!(echo.side_effect);
    assert!(!echo.concurrency_safe && !echo.defer_loading);
    let echo = pipeline("[tools.echo]\nside_effect = false\nconcurrency_safe = true\ndefer_loading = true", "echo");
    assert!(!echo.side_effect && echo.concurrency_safe && echo.defer_loading);
    assert!(!PipelineSettings::default().side_effect, "no operator settings at all: no side effects");
}

#[test]
fn each_key_of_the_table_is_read_by_its_owner_at_its_line() {
    check_err("[tools.echo]\ntimeout = 5", &["[tools.echo]", "unknown field `timeout`"]);
    check_err("[tools.echo]\ndirs = 5", &["line 2", "dirs = 5", "expected a sequence"]);
    check_err("[tools.echo]\nside_effect = 5", &["line 2", "side_effect = 5", "expected a boolean"]);
    check_err("[tools.echo]\nconfirm = 5", &["line 2", "confirm = 5", "expected a string"]);
    check_err("[tools.echo]\nmemory_mib = \"x\"", &["line 2", "memory_mib = \"x\"", "expected u64"]);
    check_err("[tools.echo.sessions]\nttl = 5", &["unknown field `ttl`", "idle_secs"]);
    let config = parse("[tools.echo]\nmemory_mib = 64\nsha256 = \"ab\"\nside_effect = false").err();
    assert!(config.is_some_and(|err| err.contains("[tools.echo] sha256")), "the runtime's keys are checked");
}

#[test]
fn templates_are_checked_at_load() {
    check_err(
        "[tools.echo]\nconfirm = \"Pay {amount\"",
        &["[tools.echo] confirm = \"Pay {amount\"", "character 5", "not closed"],
    );
    check_err(
        "[tools.echo]\npresent_result = \"{id|shout}\"",
        &["[tools.echo] present_result", "unknown filter \"shout\"", "accepted are last4"],
    );
    check_err("[tools.echo]\npresent_result = \"a\\nb\"", &["present_result", "line break at character 2"]);
}

#[test]
fn a_tool_names_its_approval_mode_and_approver() {
    let text = "[tools.pay]\napprovals = \"page\"\napprover = 'Role::\"supervisors\"'\n";
    let pay = pipeline(text, "pay");
    assert_eq!(pay.approvals, Some(ApprovalMode::Page));
    assert_eq!(pay.approver, Some(Approver::Group("Airlock::Role::\"supervisors\"".into())));
    let plain = pipeline("[tools.pay]\n", "pay");
    assert_eq!((plain.approvals, plain.approver), (None, None), "unset: [approvals] mode and the caller");
    assert_eq!(
        pipeline("[tools.pay]\napprover = \"carol\"\n", "pay").approver,
        Some(Approver::Principal("carol".into()))
    );
    check_err(
        "[tools.pay]\napprovals = \"browser\"\n",
        &["[tools.pay] approvals = \"browser\" is not a mode", "accepted \"client\", \"page\", \"page-when-possible\""],
    );
    check_err(
        "[tools.pay]\napprover = 'Role::\"'\n",
        &["[tools.pay] approver = ", "is not an entity such as Role::\"supervisors\""],
    );
}

#[test]
fn task_keys_say_when_a_call_is_a_task_and_its_deadline() {
    use airlock_settings::limits::Limits;
    use std::time::Duration;
    let config = parse("[tools.echo]\n[tools.slow]\ntask = \"optional\"\ntimeout_ms = 5000\ntask_timeout_ms = 600000\n[tools.job]\ntask = \"required\"").unwrap();
    let tool = |name: &str| config.tools.get(name).unwrap_or_else(|| panic!("no [tools.{name}]"));
    let limits = |name: &str| tool(name).runtime.settings.limits;
    let plain = &tool("echo").pipeline;
    assert_eq!(plain.task, TaskSupport::Never, "unset: calls run as without tasks");
    assert_eq!(plain.limits_for(limits("echo"), true), limits("echo"), "no task deadline without tasks");
    let slow = &tool("slow").pipeline;
    assert_eq!(slow.task, TaskSupport::Optional);
    assert_eq!(
        slow.limits_for(limits("slow"), false).timeout,
        Duration::from_secs(5),
        "a call that waits keeps timeout_ms"
    );
    let task = slow.limits_for(limits("slow"), true);
    assert_eq!(task.timeout, Duration::from_secs(600), "a task gets task_timeout_ms");
    assert_eq!(task.fuel, Limits::fuel_for(Duration::from_secs(600)), "fuel follows the task's deadline");
    let required = &tool("job").pipeline;
    assert_eq!(required.task, TaskSupport::Required);
    assert_eq!(
        required.limits_for(limits("job"), true),
        limits("job"),
        "without task_timeout_ms a task keeps timeout_ms"
    );
    check_err(
        "[tools.a]\ntask = \"sometimes\"",
        &["[tools.a] task = \"sometimes\"", "\"never\", \"optional\", \"required\""],
    );
    check_err("[tools.a]\ntask_timeout_ms = 60000", &["[tools.a] task_timeout_ms = 60000", "task is \"never\""]);
    check_err(
        "[tools.a]\ntask = \"optional\"\ntimeout_ms = 5000\ntask_timeout_ms = 1000",
        &["[tools.a] task_timeout_ms = 1000 is below timeout_ms = 5000"],
    );
    check_err(
        "[tools.a]\ntask = \"optional\"\ntask_timeout_ms = 0",
        &["task_timeout_ms = 0 is out of range", "1..=86400000 ms"],
    );
}
