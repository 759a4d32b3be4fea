//! Caller identity (`airlock:tool/caller`, since contract 0.2.0): a tool
//! reads who the call acts for from the host — the principal, its
//! attributes and parents from the operator's entities file, the call id
//! and the session id — and nothing a model sends changes it; components
//! built for 0.1.0 and 0.2.0 keep loading and running (the 0.2.0 one reads
//! its caller through the 0.2.0 interface).

use crate::support::{assert_failed, fixture, host, temp_dir};
use airlock::{CallRequest, Contract};
use serde_json::{Value, json};
use std::path::Path;

/// Entities for alice (tenant, accounts, a role) and bob; a policy that
/// permits every call, so the tools' own checks are what is tested.
fn write_policy(dir: &Path) -> (String, String) {
    let entities = json!([
        { "uid": { "type": "Airlock::User", "id": "alice" },
          "attrs": { "tenant": "acme", "accounts": ["acc-alice"], "limit": 500 },
          "parents": [{ "type": "Airlock::Role", "id": "customer" }] },
        { "uid": { "type": "Airlock::User", "id": "bob" },
          "attrs": { "tenant": "globex", "accounts": ["acc-bob"] },
          "parents": [] },
        { "uid": { "type": "Airlock::Role", "id": "customer" }, "attrs": {},
          "parents": [{ "type": "Airlock::Role", "id": "everyone" }] },
        { "uid": { "type": "Airlock::Role", "id": "everyone" }, "attrs": {}, "parents": [] }
    ]);
    let entities_path = dir.join("entities.json");
    std::fs::write(&entities_path, entities.to_string()).expect("write entities");
    let policy_path = dir.join("policy.cedar");
    std::fs::write(&policy_path, "permit (principal, action, resource);\n").expect("write policy");
    (policy_path.display().to_string(), entities_path.display().to_string())
}

fn identity_config(dir: &Path, extra: &str) -> String {
    let (policies, entities) = write_policy(dir);
    format!(
        "[tools.whoami]\ncomponent = {:?}\nside_effect = false\n\
         [tools.get_balance]\ncomponent = {:?}\nside_effect = false\n\
         [tools.legacy_echo]\ncomponent = {:?}\nside_effect = false\n\
         [tools.legacy_whoami]\ncomponent = {:?}\nside_effect = false\n\
         {extra}\n[policy]\npolicies = {policies:?}\nentities = {entities:?}\n",
        fixture("whoami").display().to_string(),
        fixture("get_balance").display().to_string(),
        fixture("contract_v0_1").display().to_string(),
        fixture("contract_v0_2").display().to_string(),
    )
}

fn structured(result: &airlock::ToolResult) -> Value {
    assert!(!result.is_error(), "{}", result.text());
    result.value().cloned().expect("a structured result")
}

#[tokio::test]
async fn a_component_built_for_0_1_0_still_loads_and_runs() {
    let dir = temp_dir();
    let host = host(&identity_config(dir.path(), "")).await;
    let registry = host.tools();
    assert_eq!(registry.get("legacy_echo").expect("loaded").contract(), Contract::V0_1);
    assert_eq!(registry.get("whoami").expect("loaded").contract(), Contract::V0_3);
    let result = host.call(CallRequest::new("alice", "legacy_echo", json!({"text": "hi"})), None).await;
    assert_eq!(structured(&result), json!({"text": "hi"}));
}

#[tokio::test]
async fn a_component_built_for_0_2_0_still_loads_runs_and_reads_its_caller() {
    let dir = temp_dir();
    let host = host(&identity_config(dir.path(), "")).await;
    let registry = host.tools();
    let legacy = registry.get("legacy_whoami").expect("loaded");
    assert_eq!(legacy.contract(), Contract::V0_2);
    let result = host.call(CallRequest::new("alice", "legacy_whoami", json!({"text": "hi"})), None).await;
    assert_eq!(structured(&result), json!({"arguments": {"text": "hi"}, "principal": "alice"}));
    let bob = host.call(CallRequest::new("bob", "legacy_whoami", json!({})), None).await;
    assert_eq!(structured(&bob)["principal"], "bob", "each call reads its own caller");
}

#[tokio::test]
async fn a_component_sees_the_caller_the_host_knows() {
    let dir = temp_dir();
    let host = host(&identity_config(dir.path(), "")).await;
    let request = CallRequest::new("alice", "whoami", json!({})).with_call_id("call-7");
    let me = structured(&host.call(request, None).await);
    assert_eq!(me["principal"], "alice");
    assert_eq!(me["attributes"], json!({"tenant": "acme", "accounts": ["acc-alice"], "limit": 500}));
    // Parents are transitive, as Cedar's `in` sees them.
    assert_eq!(me["parents"], json!([["Airlock::Role", "customer"], ["Airlock::Role", "everyone"]]));
    assert_eq!(me["call_id"], "call-7");
    assert_eq!(me["session_id"], Value::Null);

    let bob = structured(&host.call(CallRequest::new("bob", "whoami", json!({})), None).await);
    assert_eq!((bob["principal"].as_str(), bob["attributes"]["tenant"].as_str()), (Some("bob"), Some("globex")));
    assert_eq!(bob["call_id"], "");

    // A principal the entities file does not describe has no attributes.
    let eve = structured(&host.call(CallRequest::new("eve", "whoami", json!({})), None).await);
    assert_eq!((eve["principal"].clone(), eve["attributes"].clone()), (json!("eve"), json!({})));
    assert_eq!(eve["parents"], json!([]));
}

#[tokio::test]
async fn the_model_cannot_change_the_caller() {
    let dir = temp_dir();
    let host = host(&identity_config(dir.path(), "")).await;
    let forged = json!({"principal": "bob"});
    let me = structured(&host.call(CallRequest::new("alice", "whoami", forged), None).await);
    assert_eq!(me["claimed"], "bob", "the argument reached the tool as an argument");
    assert_eq!(me["principal"], "alice", "and changed nothing the host reports");
    assert_eq!(me["attributes"]["tenant"], "acme");
}

#[tokio::test]
async fn a_session_call_sees_its_session_and_each_call_its_own_id() {
    let dir = temp_dir();
    let host = host(&identity_config(dir.path(), "[tools.whoami.sessions]\nmax_live = 2\n")).await;
    for call_id in ["first", "second"] {
        let request = CallRequest::new("alice", "whoami", json!({"session_id": "s1"})).with_call_id(call_id);
        let result = host.call(request, None).await;
        assert_eq!(result.session.as_deref(), Some("s1"));
        let me = structured(&result);
        assert_eq!((me["session_id"].as_str(), me["call_id"].as_str()), (Some("s1"), Some(call_id)));
        assert_eq!(me["principal"], "alice");
    }
}

#[tokio::test]
async fn get_balance_refuses_an_account_that_is_not_the_callers() {
    let dir = temp_dir();
    let host = host(&identity_config(dir.path(), "")).await;
    let own = host.call(CallRequest::new("alice", "get_balance", json!({"account_id": "acc-alice"})), None).await;
    assert_eq!(structured(&own)["owner"], "alice");
    // The policy permits everything here; the tool still refuses.
    let other = host.call(CallRequest::new("alice", "get_balance", json!({"account_id": "acc-bob"})), None).await;
    assert_failed(&other, "tool_error", "not one of \"alice\"'s accounts");
    assert_eq!(other.code(), Some("not_your_account"));
    let stranger = host.call(CallRequest::new("eve", "get_balance", json!({"account_id": "acc-alice"})), None).await;
    assert_failed(&stranger, "tool_error", "not one of \"eve\"'s accounts");
}
