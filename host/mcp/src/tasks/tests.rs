//! The tasks wire: when a call becomes a task, how it ends, what tasks/get
//! shows and how answers are read.

use super::*;
use airlock_core::outcome::{Authority, CallOutcome, Failure, Success};

fn ran(result: Result<Success, Failure>) -> ToolResult {
    ToolResult::new("c", "slow", CallOutcome::Ran { authority: Authority::Allowed, result })
}

fn task(status: Status) -> store::Task {
    store::Task {
        id: "0123456789abcdef0123456789abcdef".into(),
        principal: "alice".into(),
        tool: "slow".into(),
        status,
        message: None,
        created_ms: 1_785_234_600_000,
        updated_ms: 1_785_234_600_500,
        expires_ms: None,
        input: Vec::new(),
        outcome: None,
        bytes: 0,
    }
}

#[test]
fn a_call_becomes_a_task_as_the_operator_and_the_client_say() {
    assert!(!becomes_task(TaskSupport::Never, true).unwrap(), "never a task");
    assert!(becomes_task(TaskSupport::Optional, true).unwrap());
    assert!(!becomes_task(TaskSupport::Optional, false).unwrap(), "a client without the extension waits");
    assert!(becomes_task(TaskSupport::Required, true).unwrap());
    let refused = becomes_task(TaskSupport::Required, false).unwrap_err();
    assert_eq!(refused.code.0, -32021);
    let data = refused.data.unwrap();
    assert_eq!(data["requiredCapabilities"]["extensions"]["io.modelcontextprotocol/tasks"], json!({}));
    assert!(refused.message.contains("task = \"required\""), "{}", refused.message);
}

#[test]
fn a_tool_error_completes_a_crash_fails_a_cancel_cancels() {
    let ok = finished(ran(Ok(Success::new(json!({"seconds": 1})))), None);
    assert_eq!(ok.status, Status::Completed);
    let result: Value = serde_json::from_str(ok.outcome.as_deref().unwrap()).unwrap();
    assert_eq!(result["structuredContent"], json!({"seconds": 1}));
    assert_eq!(result["isError"], false);
    let tool_error = finished(ran(Err(Failure::tool_error("no", None))), None);
    assert_eq!(tool_error.status, Status::Completed, "a tool error is a result the model reads");
    let result: Value = serde_json::from_str(tool_error.outcome.as_deref().unwrap()).unwrap();
    assert_eq!(result["isError"], true);
    assert_eq!(result["_meta"]["airlock/kind"], "tool_error");
    let declined = finished(ran(Err(Failure::new(ErrorKind::Declined, "no"))), None);
    assert_eq!(declined.status, Status::Completed, "a refusal is a result too");
    let crashed = finished(ran(Err(Failure::new(ErrorKind::Trapped, "the guest panicked"))), None);
    assert_eq!(crashed.status, Status::Failed);
    let error: Value = serde_json::from_str(crashed.outcome.as_deref().unwrap()).unwrap();
    assert_eq!(error["code"], -32603);
    assert_eq!(
        error["message"],
        "error (trapped): the guest panicked. Retrying will not help: the tool is at fault, and only its author can \
         fix it."
    );
    assert_eq!(error["data"], json!({"airlock/kind": "trapped", "airlock/blame": "tool", "airlock/retry": "no"}));
    let cancelled = finished(ran(Err(Failure::new(ErrorKind::Cancelled, "stopped"))), None);
    assert_eq!(cancelled, Finished { status: Status::Cancelled, outcome: None });
}

#[test]
fn tasks_get_inlines_the_result_the_error_or_the_input_requests() {
    let settings = TaskSettings::default();
    let wire = |task: &store::Task| serde_json::to_value(detailed(task, &settings).unwrap()).unwrap();
    let working = wire(&task(Status::Working));
    assert_eq!(working["status"], "working");
    assert_eq!(working["createdAt"], "2026-07-28T10:30:00.000Z");
    assert_eq!(working["lastUpdatedAt"], "2026-07-28T10:30:00.500Z");
    assert_eq!(working["pollIntervalMs"], 1000);
    assert!(working["ttlMs"].as_u64().unwrap() >= 3_600_000, "kept at least result_ttl: {working}");
    for absent in ["result", "error", "inputRequests", "requestState", "ttl", "pollInterval"] {
        assert!(working.get(absent).is_none(), "{absent} in {working}");
    }
    let done = store::Task {
        outcome: Some(r#"{"content":[{"type":"text","text":"hi"}],"isError":false}"#.into()),
        expires_ms: Some(1_785_234_600_000 + 60_000),
        ..task(Status::Completed)
    };
    let done = wire(&done);
    assert_eq!(done["result"]["content"][0]["text"], "hi");
    assert_eq!(done["ttlMs"], 60_000, "the time from creation to expiry");
    let failed = wire(&store::Task { message: Some("the replica stopped".into()), ..task(Status::Failed) });
    assert_eq!(failed["error"], json!({"code": -32603, "message": "the replica stopped"}));
    assert!(failed.get("result").is_none());
    let request = InputRequest::Elicitation(ElicitRequest::new(form("Allow?".into())));
    let asking = store::Task { input: input_request(CONFIRM_KEY, request).requests, ..task(Status::InputRequired) };
    let asking = wire(&asking);
    assert_eq!(asking["inputRequests"]["confirm"]["method"], "elicitation/create");
    assert_eq!(asking["inputRequests"]["confirm"]["params"]["message"], "Allow?");
    assert!(wire(&task(Status::Cancelled)).get("result").is_none());
    let corrupt = store::Task { outcome: Some("not json".into()), ..task(Status::Completed) };
    assert!(detailed(&corrupt, &settings).is_err());
}

#[test]
fn answers_are_read_only_as_accepted_allowed_or_not() {
    let check = |value: Value, expect: &str| assert_eq!(answer_of(&value), expect, "{value}");
    check(json!({"action": "accept", "content": {"allow": true}}), "accept:allow");
    check(json!({"action": "accept", "content": {"allow": "true"}}), "accept");
    check(json!({"action": "accept", "content": {"confirm": true}}), "accept");
    check(json!({"action": "accept"}), "accept");
    check(json!({"action": "decline"}), "decline");
    check(json!({"action": "cancel"}), "cancel");
    check(json!({"ignored": true}), "invalid");
    check(json!("yes"), "invalid");
    let mut responses = InputResponses::new();
    responses.insert("confirm".into(), json!({"action": "accept", "content": {"allow": true}}));
    assert_eq!(answers(&responses), vec![("confirm".to_owned(), "accept:allow".to_owned())]);
}

#[test]
fn an_unknown_task_is_invalid_params_without_echoing_a_flood() {
    let error = unknown(&"x".repeat(10_000));
    assert_eq!(error.code.0, -32602);
    assert!(error.message.len() < 400, "{}", error.message);
}

#[test]
fn times_are_iso_8601_in_utc() {
    assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
    assert_eq!(iso8601(951_782_400_123), "2000-02-29T00:00:00.123Z");
    assert_eq!(iso8601(1_785_234_600_000), "2026-07-28T10:30:00.000Z");
    assert_eq!(iso8601(4_102_444_799_999), "2099-12-31T23:59:59.999Z");
}
