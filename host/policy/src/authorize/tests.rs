use super::request::decimal_text;
use super::*;
use crate::confirm::Approver;
use serde_json::json;
use std::path::Path;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/policy");

fn bank() -> Policy {
    let dir = Path::new(FIXTURES);
    Policy::from_files(&dir.join("bank.cedar"), Some(&dir.join("bank.entities.json"))).expect("bank policy loads")
}

/// Decides one call and checks the label, the policy id and, when given,
/// a text the reason must contain.
#[track_caller]
fn check(
    policy: &Policy,
    (principal, tool, side_effect): (&str, &str, bool),
    arguments: Value,
    expect: &str,
    expect_policy: Option<&str>,
    reason_contains: Option<&str>,
) {
    let tool = ToolFacts { name: tool, side_effect };
    let decision = policy.decide(principal, &tool, &arguments);
    assert_eq!(decision.label(), expect, "{principal} {tool:?} {arguments}: {decision:?}");
    assert_eq!(decision.policy(), expect_policy, "{principal} {tool:?} {arguments}: {decision:?}");
    if let Some(text) = reason_contains {
        let reason = match &decision {
            Verdict::Deny { reason, .. } | Verdict::Ask { reason, .. } => reason.as_str(),
            Verdict::Allow { .. } => "",
        };
        assert!(reason.contains(text), "reason {reason:?} lacks {text:?}");
    }
}

/// The last fenced block of `lang` in `book/src/operator/policy.md` (the module docs),
/// where the worked example is.
fn doc_block(lang: &str) -> String {
    let source = include_str!("../../../../book/src/operator/policy.md");
    let start = format!("```{lang}");
    let mut blocks = Vec::new();
    let mut lines = source.lines();
    while lines.by_ref().any(|line| line == start) {
        blocks.push(lines.by_ref().take_while(|line| *line != "```").collect::<Vec<_>>().join("\n"));
    }
    blocks.pop().unwrap_or_default()
}

#[test]
fn module_doc_example_is_the_bank_fixture() {
    let (policies, entities) = (doc_block("cedar"), doc_block("json"));
    assert!(policies.contains("transfer-large-decimal") && entities.contains("acc-alice"));
    let from_doc = Policy::from_text(&policies, "doc.cedar", Some((&entities, "doc.json"))).unwrap();
    let fixture = bank();
    assert_eq!(from_doc.order, fixture.order);
    assert!(from_doc.entities.deep_eq(&fixture.entities));
    let facts = ToolFacts { name: "create_transfer", side_effect: true };
    for amount in [json!(500), json!(50000), json!(10.5), json!(12000.25), json!(-1)] {
        let arguments = json!({ "to": "acc-bob", "amount": amount });
        assert_eq!(from_doc.decide("alice", &facts, &arguments), fixture.decide("alice", &facts, &arguments));
    }
}

#[test]
fn default_policy_allows_pure_tools_and_asks_for_side_effects() {
    let policy = Policy::default_policy();
    check(&policy, ("anyone", "read_file", false), json!({"path": "a"}), "allow", Some("default-no-side-effect"), None);
    check(&policy, ("anyone", "write_file", true), json!({}), "ask", Some("default-side-effect"), Some("side effects"));
    check(&policy, ("", "x", false), Value::Null, "allow", Some("default-no-side-effect"), None);
}

#[test]
fn bank_cases_from_fixture() {
    let policy = bank();
    let cases: Value =
        serde_json::from_str(&std::fs::read_to_string(Path::new(FIXTURES).join("bank.cases.json")).unwrap()).unwrap();
    let cases = cases.as_array().unwrap();
    assert!(cases.len() >= 10);
    for case in cases {
        let text = |key: &str| case[key].as_str();
        println!("case: {}", text("name").unwrap());
        check(
            &policy,
            (text("principal").unwrap(), text("tool").unwrap(), case["side_effect"].as_bool().unwrap()),
            case["arguments"].clone(),
            text("expect").unwrap(),
            text("policy"),
            text("reason"),
        );
    }
}

#[test]
fn an_asking_policy_names_who_approves_and_membership_comes_from_the_entities() {
    let policy = bank();
    let facts = ToolFacts { name: "create_transfer", side_effect: true };
    let huge = policy.decide("alice", &facts, &json!({"to": "acc-bob", "amount": 60000}));
    let Verdict::Ask { approver, .. } = huge else { panic!("{huge:?}") };
    assert_eq!(approver, Some(Approver::Group("Airlock::Role::\"supervisor\"".into())));
    let large = policy.decide("alice", &facts, &json!({"to": "acc-bob", "amount": 20000}));
    assert!(matches!(large, Verdict::Ask { approver: None, .. }), "{large:?}");
    assert!(policy.principal_is_in("carol", "Airlock::Role::\"supervisor\""));
    assert!(!policy.principal_is_in("alice", "Airlock::Role::\"supervisor\""));
    assert!(!policy.principal_is_in("nobody", "Airlock::Role::\"supervisor\""));
    assert!(!policy.principal_is_in("carol", "not an entity"));
}

#[test]
fn an_approver_annotation_is_checked_at_load() {
    for (text, says) in [
        ("@approver(\"carol\") permit (principal, action, resource);", "@approver only applies to a permit with @ask"),
        ("@ask(\"x\") @approver(\"Role::supervisor\") permit (principal, action, resource);", "@approver:"),
    ] {
        let err = Policy::from_text(text, "policy.cedar", None).map(|_| ()).unwrap_err().to_string();
        assert!(err.contains(says), "{err}");
    }
}

#[test]
fn deny_by_default_says_who_may_not_call_what() {
    let decision = bank().decide(
        "alice",
        &ToolFacts { name: "get_balance", side_effect: false },
        &json!({"account_id": "acc-bob"}),
    );
    let Verdict::Deny { reason, policy: None } = decision else { panic!("{decision:?}") };
    assert_eq!(reason, r#"no policy permits user "alice" to call tool "get_balance" with these arguments"#);
}

#[test]
fn evaluation_errors_never_allow() {
    let policy = Policy::from_text(
        r#"
            @id("needs-missing-attr")
            permit (principal, action, resource) when { principal.clearance > 3 };
            @id("needs-missing-field")
            permit (principal, action, resource) when { context.arguments.level == 1 };
            @id("type-error")
            permit (principal, action, resource) when { context.arguments.name > 3 };
            "#,
        "errors.cedar",
        None,
    )
    .unwrap();
    check(&policy, ("alice", "t", false), json!({"name": "x"}), "deny", None, Some("no policy permits"));
    check(&policy, ("alice", "t", false), Value::Null, "deny", None, None);
    check(&policy, ("alice", "t", false), json!({"level": 1}), "allow", Some("needs-missing-field"), None);
}

#[test]
fn an_erroring_forbid_denies() {
    let policy = Policy::from_text(
        r#"
            @id("all") permit (principal, action, resource);
            @id("sloppy-forbid") forbid (principal, action, resource) when { context.arguments.to == "x" };
            "#,
        "forbid.cedar",
        None,
    )
    .unwrap();
    check(&policy, ("a", "t", false), json!({"to": "y"}), "allow", Some("all"), None);
    check(&policy, ("a", "t", false), json!({"to": "x"}), "deny", Some("sloppy-forbid"), Some("forbids"));
    check(&policy, ("a", "t", false), json!({}), "deny", Some("sloppy-forbid"), Some("could not be checked"));
}

#[test]
fn ask_wins_over_a_plain_permit_and_empty_ask_has_a_default() {
    let policy = Policy::from_text(
            "@id(\"plain\") permit (principal, action, resource);\n@ask @id(\"asks\") permit (principal, action, resource);",
            "ask.cedar",
            None,
        )
        .unwrap();
    check(&policy, ("a", "t", false), json!({}), "ask", Some("asks"), Some(r#"policy "asks" asks for confirmation"#));
}

#[test]
fn policies_without_id_get_cedar_ids() {
    let policy = Policy::from_text(
        "forbid (principal, action, resource == Airlock::Tool::\"x\");\npermit (principal, action, resource);",
        "ids.cedar",
        None,
    )
    .unwrap();
    check(&policy, ("a", "t", false), json!({}), "allow", Some("policy1"), None);
    check(
        &policy,
        ("a", "x", false),
        json!({}),
        "deny",
        Some("policy0"),
        Some(r#"policy "policy0" forbids user "a" to call tool "x""#),
    );
}

#[test]
fn tool_entity_from_file_is_merged_and_side_effect_from_facts_wins() {
    let entities = r#"[
            { "uid": { "type": "Airlock::Tool", "id": "pay" },
              "attrs": { "side_effect": false, "category": "payments" },
              "parents": [{ "type": "Airlock::ToolGroup", "id": "money" }],
              "tags": { "owner": "finance" } }
        ]"#;
    let policy = Policy::from_text(
        r#"
            @id("money-needs-side-effect-flag")
            permit (principal, action, resource in Airlock::ToolGroup::"money")
            when { resource.side_effect && resource.category == "payments" && resource.getTag("owner") == "finance" };
            "#,
        "merge.cedar",
        Some((entities, "merge.entities.json")),
    )
    .unwrap();
    check(&policy, ("a", "pay", true), json!({}), "allow", Some("money-needs-side-effect-flag"), None);
    check(&policy, ("a", "pay", false), json!({}), "deny", None, None);
    // A tool the file does not describe still gets `side_effect`, and no parents.
    check(&policy, ("a", "other", true), json!({}), "deny", None, None);
    let pure = Policy::from_text(
        "@id(\"p\") permit (principal, action, resource) when { resource.side_effect == false };",
        "pure.cedar",
        Some((entities, "merge.entities.json")),
    )
    .unwrap();
    check(&pure, ("a", "pay", true), json!({}), "deny", None, None);
    check(&pure, ("a", "pay", false), json!({}), "allow", Some("p"), None);
    check(&pure, ("a", "unlisted", false), json!({}), "allow", Some("p"), None);
}

#[test]
fn roles_come_from_entity_parents() {
    let entities = r#"[
            { "uid": { "type": "Airlock::User", "id": "root" }, "attrs": {},
              "parents": [{ "type": "Airlock::Role", "id": "admin" }] }
        ]"#;
    let policy = Policy::from_text(
            "@id(\"admins\") permit (principal in Airlock::Role::\"admin\", action == Airlock::Action::\"call\", resource);",
            "roles.cedar",
            Some((entities, "roles.json")),
        )
        .unwrap();
    check(&policy, ("root", "t", true), json!({}), "allow", Some("admins"), None);
    check(&policy, ("user", "t", true), json!({}), "deny", None, None);
    // The principal string is data, never Cedar syntax.
    check(&policy, ("root\" in Airlock::Role::\"admin", "t", true), json!({}), "deny", None, None);
}

#[test]
fn syntax_error_names_file_line_and_column() {
    let text = "@id(\"ok\")\npermit (principal, action, resource);\npermit (principal action, resource);\n";
    let error = Policy::from_text(text, "broken.cedar", None).unwrap_err();
    let message = error.to_string();
    assert!(matches!(error, PolicyError::Syntax { line: 3, .. }), "{error:?}");
    assert!(message.starts_with("broken.cedar:3:"), "{message}");
    assert!(message.contains("permit (principal action, resource);"), "{message}");
    // Unknown tokens and unterminated policies are located as well.
    let error = Policy::from_text("permit (principal, action, resource)\n\nwhen { 1 + };", "b.cedar", None)
        .unwrap_err()
        .to_string();
    assert!(error.starts_with("b.cedar:3:"), "{error}");
}

#[test]
fn syntax_error_from_files_names_the_path() {
    let dir = std::env::temp_dir().join(format!("airlock-authz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bad.cedar");
    std::fs::write(&file, "// fine\n\npermit (principal, action, resource) when { & };\n").unwrap();
    let error = Policy::from_files(&file, None).unwrap_err().to_string();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(error.starts_with(&format!("{}:3:", file.display())), "{error}");
    let missing = Policy::from_files(Path::new("/nonexistent/policy.cedar"), None).unwrap_err().to_string();
    assert!(missing.contains("cannot read policy file /nonexistent/policy.cedar"), "{missing}");
}

#[test]
fn invalid_policies_are_load_errors() {
    let cases = [
        (
            "@id(\"a\") permit (principal, action, resource);\n@id(\"a\") forbid (principal, action, resource);",
            "p.cedar:2:1: policy `a`: duplicate policy id: p.cedar:1:1",
        ),
        (
            "\n  @ask(\"x\") forbid (principal, action, resource);",
            "p.cedar:2:3: policy `policy0`: @ask only applies to permit",
        ),
        (
            "@reason(\"x\") permit (principal, action, resource);",
            "p.cedar:1:1: policy `policy0`: @reason only applies to forbid",
        ),
        ("permit (principal == ?principal, action, resource);", "p.cedar:1:1: policy `policy0`: templates"),
        ("@id(\" \") permit (principal, action, resource);", "@id must not be empty"),
        (
            "@id(\"policy1\") permit (principal, action, resource);\npermit (principal, action, resource);",
            "p.cedar:2:1: policy `policy1`: duplicate",
        ),
    ];
    for (text, expected) in cases {
        let error = Policy::from_text(text, "p.cedar", None).unwrap_err().to_string();
        assert!(error.contains(expected), "{text}\n=> {error}\nexpected {expected}");
    }
}

#[test]
fn bad_entities_name_the_file() {
    let cases = [
        ("[ { \"uid\": ", "invalid JSON: EOF while parsing a value at line 1 column 11"),
        ("{}", "expected a JSON array of entities"),
        ("[3]", "entity #1 is not a JSON object"),
        (
            r#"[{"uid": {"type": "Airlock::User", "id": "a"}, "attrs": {}, "parent": []}]"#,
            r#"entity #1 (Airlock::User::"a"): unknown key `parent`"#,
        ),
        (
            r#"[{"uid": {"type": "Airlock::User", "id": "a"}, "attrs": {}, "parents": ["admin"]}]"#,
            r#"in parents field of `Airlock::User::"a"`"#,
        ),
        (r#"[{"uid": {"type": "not a type", "id": "a"}, "attrs": {}, "parents": []}]"#, "not a type"),
    ];
    for (json, expected) in cases {
        let error = Policy::from_text("permit (principal, action, resource);", "p.cedar", Some((json, "users.json")))
            .unwrap_err();
        assert!(matches!(error, PolicyError::Entities { .. }), "{json}\n=> {error}");
        let message = error.to_string();
        assert!(message.starts_with("entities file users.json: "), "{json}\n=> {message}");
        assert!(message.contains(expected), "{json}\n=> {message}\nexpected {expected}");
    }
}

#[test]
fn numbers_map_to_long_decimal_or_string() {
    assert_eq!(decimal_text(10.5).as_deref(), Some("10.5"));
    assert_eq!(decimal_text(10.0).as_deref(), Some("10.0"));
    assert_eq!(decimal_text(-0.25).as_deref(), Some("-0.25"));
    assert_eq!(decimal_text(-0.0).as_deref(), Some("-0.0"));
    assert_eq!(decimal_text(0.0001).as_deref(), Some("0.0001"));
    assert_eq!(decimal_text(0.00001), None);
    assert_eq!(decimal_text(922337203685477.5).as_deref(), Some("922337203685477.5"));
    assert_eq!(decimal_text(922337203685478.0), None);
    assert_eq!(decimal_text(-922337203685477.5).as_deref(), Some("-922337203685477.5"));
    assert_eq!(decimal_text(1e300), None);
    let policy = Policy::from_text(
        r#"
            @id("long") permit (principal, action, resource == Airlock::Tool::"long")
              when { context.arguments.n == 9223372036854775807 };
            @id("decimal") permit (principal, action, resource == Airlock::Tool::"decimal")
              when { context.arguments.n == decimal("-1.5") };
            @id("string") permit (principal, action, resource == Airlock::Tool::"string")
              when { context.arguments.n == "18446744073709551615" || context.arguments.n == "1e+300" };
            @id("nested") permit (principal, action, resource == Airlock::Tool::"nested")
              when { context.arguments.a.b.contains(2) && !(context.arguments.a has c) && context.arguments.a.d };
            "#,
        "numbers.cedar",
        None,
    )
    .unwrap();
    check(&policy, ("a", "long", false), json!({"n": i64::MAX}), "allow", Some("long"), None);
    check(&policy, ("a", "decimal", false), json!({"n": -1.5}), "allow", Some("decimal"), None);
    check(&policy, ("a", "string", false), json!({"n": u64::MAX}), "allow", Some("string"), None);
    check(&policy, ("a", "string", false), json!({"n": 1e300}), "allow", Some("string"), None);
    check(
        &policy,
        ("a", "nested", false),
        json!({"a": {"b": [1, 2, null], "c": null, "d": true}}),
        "allow",
        Some("nested"),
        None,
    );
}

#[test]
fn arguments_cannot_forge_entities_or_extension_values() {
    let policy = Policy::from_text(
        r#"
            @id("entity") permit (principal, action, resource)
              when { context.arguments.owner == Airlock::User::"alice" };
            @id("in-role") permit (principal, action, resource)
              when { context.arguments.owner in Airlock::Role::"admin" };
            @id("decimal") permit (principal, action, resource)
              when { context.arguments.limit == decimal("1.0") };
            @id("field") permit (principal, action, resource == Airlock::Tool::"plain")
              when { context.arguments.owner.__entity.id == "alice" };
            "#,
        "forge.cedar",
        None,
    )
    .unwrap();
    let entity = json!({ "owner": { "__entity": { "type": "Airlock::User", "id": "alice" } } });
    check(&policy, ("a", "t", false), entity.clone(), "deny", None, None);
    let role = json!({ "owner": { "__entity": { "type": "Airlock::Role", "id": "admin" } } });
    check(&policy, ("a", "t", false), role, "deny", None, None);
    let extension = json!({ "limit": { "__extn": { "fn": "decimal", "arg": "1.0" } } });
    check(&policy, ("a", "t", false), extension, "deny", None, None);
    // They are plain fields, readable as such.
    check(&policy, ("a", "plain", false), entity, "allow", Some("field"), None);
}

/// Nests `value` `depth` times alternately in arrays and objects.
fn nested(depth: usize, value: Value) -> Value {
    (0..depth).fold(value, |inner, i| if i % 2 == 0 { json!([inner]) } else { json!({ "k": inner }) })
}

#[test]
fn depth_and_size_caps_deny() {
    let policy = Policy::from_text("@id(\"all\") permit (principal, action, resource);", "all.cedar", None).unwrap();
    // The arguments object is level 1; MAX_ARGUMENT_DEPTH levels of containers are accepted.
    let ok = json!({ "x": nested(MAX_ARGUMENT_DEPTH - 1, json!(1)) });
    check(&policy, ("a", "t", false), ok, "allow", Some("all"), None);
    let deep = json!({ "x": nested(MAX_ARGUMENT_DEPTH, json!(1)) });
    check(&policy, ("a", "t", false), deep, "deny", None, Some("nested more than 64 levels"));
    let many = json!({ "x": vec![1; MAX_ARGUMENT_VALUES] });
    check(&policy, ("a", "t", false), many, "deny", None, Some("more than 100000 values"));
    let fits = json!({ "x": vec![1; MAX_ARGUMENT_VALUES - 2] });
    check(&policy, ("a", "t", false), fits, "allow", Some("all"), None);
}

#[test]
fn arbitrary_json_never_panics() {
    let policy = bank();
    let mut very_deep = json!(0);
    for _ in 0..5_000 {
        very_deep = json!([very_deep]);
    }
    let mut values = vec![
        Value::Null,
        json!(true),
        json!("acc-alice"),
        json!(1.5),
        json!([1, "a", null, [], {}]),
        json!({"": null, "\u{0}": "\u{feff}", "amount": {"nested": [1.25, -0.0, 1e-10, 1e308]}}),
        json!({"account_id": ["acc-alice"], "amount": [50000]}),
        json!({"to": "acc-frozen", "amount": "\"; permit"}),
        json!({"amount": f64::MAX, "to": u64::MAX}),
        json!({"amount": i64::MIN, "to": i64::MAX}),
        json!({"account_id": "x".repeat(1 << 20)}),
        json!({ "big": (0..50_000).map(|i| json!({ "i": i })).collect::<Vec<_>>() }),
        very_deep,
    ];
    for depth in [1, 2, 62, 63, 64, 65, 100] {
        values.push(json!({ "amount": nested(depth, json!(20_000)) }));
    }
    for (i, value) in values.iter().enumerate() {
        for principal in ["alice", "", "Airlock::User::\"alice\"", "\u{0}\n"] {
            for tool in ["get_balance", "create_transfer", "", "\""] {
                let decision = policy.decide(principal, &ToolFacts { name: tool, side_effect: i % 2 == 0 }, value);
                // None of these is a legitimate call for the bank policy.
                assert_ne!(decision.label(), "allow", "{principal} {tool} value #{i}: {decision:?}");
            }
        }
    }
}

#[test]
fn policy_is_send_sync_and_labels_are_stable() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Policy>();
    assert_send_sync::<Verdict>();
    assert_eq!(Verdict::Allow { policy: None }.label(), "allow");
    assert_eq!(Verdict::Deny { reason: String::new(), policy: Some("p".into()) }.policy(), Some("p"));
    assert_eq!(Verdict::Ask { reason: String::new(), policy: None, approver: None }.label(), "ask");
}

#[test]
fn only_context_free_policies_cache_decisions() {
    assert!(Policy::default_policy().context_free);
    assert!(!bank().context_free, "the bank policy reads the arguments");
    let text = r#"permit (principal, action, resource) when { context has arguments && context.arguments.n < 3 };"#;
    let reads = Policy::from_text(text, "n.cedar", None).unwrap();
    assert!(!reads.context_free);
    let literal = r#"permit (principal, action, resource) when { resource.side_effect == false || "context" == "x" };"#;
    assert!(Policy::from_text(literal, "literal.cedar", None).unwrap().context_free);
    // Arguments that differ must be decided anew when a policy reads them.
    for _ in 0..2 {
        check(&reads, ("alice", "t", false), json!({"n": 1}), "allow", Some("policy0"), None);
        check(&reads, ("alice", "t", false), json!({"n": 5}), "deny", None, None);
    }
    // A cached decision still refuses arguments Cedar cannot take.
    let free = Policy::default_policy();
    let facts = ToolFacts { name: "echo", side_effect: false };
    assert_eq!(free.decide("alice", &facts, &json!({"a": 1})).label(), "allow");
    let mut deep = json!(1);
    for _ in 0..(MAX_ARGUMENT_DEPTH + 2) {
        deep = json!([deep]);
    }
    assert_eq!(free.decide("alice", &facts, &json!({ "a": deep })).label(), "deny");
    assert_eq!(free.decide("alice", &facts, &json!({"a": 2})).label(), "allow");
    // From the cache, the caps hold at the same bounds and with the same
    // reasons as when the request is built.
    let edge = [
        (json!({ "x": nested(MAX_ARGUMENT_DEPTH - 1, json!(1)) }), None),
        (json!({ "x": nested(MAX_ARGUMENT_DEPTH, json!(1)) }), Some("nested more than 64 levels")),
        (json!({ "x": vec![1; MAX_ARGUMENT_VALUES - 2] }), None),
        (json!({ "x": vec![1; MAX_ARGUMENT_VALUES - 1] }), Some("more than 100000 values")),
        (json!({ "x": [null, {"y": null}], "z": null }), None),
    ];
    for (arguments, refused) in edge {
        for _ in 0..2 {
            match (free.decide("alice", &facts, &arguments), refused) {
                (Verdict::Allow { .. }, None) => {}
                (Verdict::Deny { reason, policy: None }, Some(why)) => assert!(reason.contains(why), "{reason}"),
                (verdict, _) => panic!("{verdict:?} for arguments that should give {refused:?}"),
            }
        }
    }
}

#[test]
fn token_attributes_replace_the_files_and_keep_roles() {
    let policy = bank();
    let balance = ToolFacts { name: "get_balance", side_effect: false };
    let transfer = ToolFacts { name: "create_transfer", side_effect: true };
    let of = |account: &str| json!({ "account_id": account });
    let accounts = |list: &[&str]| vec![("accounts".to_owned(), json!(list))];
    // The file says alice holds acc-alice; her token says acc-joint.
    assert_eq!(policy.decide("alice", &balance, &of("acc-alice")).label(), "allow");
    let token = accounts(&["acc-joint"]);
    assert_eq!(policy.decide_as("alice", &token, &balance, &of("acc-joint")).label(), "allow");
    assert_eq!(policy.decide_as("alice", &token, &balance, &of("acc-alice")).label(), "deny");
    // Not cached across tokens: the same principal with another token.
    assert_eq!(policy.decide_as("alice", &accounts(&["acc-alice"]), &balance, &of("acc-alice")).label(), "allow");
    // Her role (a parent in the file) stays: a customer may transfer.
    let small = json!({ "to": "acc-bob", "amount": 5 });
    assert_eq!(policy.decide_as("alice", &token, &transfer, &small).label(), "allow");
    // A principal the file does not know gets an entity from its token,
    // with no roles.
    assert_eq!(policy.decide_as("mallory", &accounts(&["acc-m"]), &balance, &of("acc-m")).label(), "allow");
    assert_eq!(policy.decide_as("mallory", &accounts(&["acc-m"]), &transfer, &small).label(), "deny");
    // The tool sees the merged facts: the token's accounts, the file's parents.
    let facts = policy.principal_facts_as("alice", &token);
    assert_eq!(facts.attributes, vec![("accounts".to_owned(), "[\"acc-joint\"]".to_owned())]);
    assert_eq!(facts.parents, policy.principal_facts("alice").parents);
}

#[test]
fn denials_that_no_argument_can_change_are_known_before_the_arguments() {
    let tool = ToolFacts { name: "t", side_effect: false };
    // A policy that never reads the arguments: its denial is final.
    let free = Policy::from_text(r#"permit (principal == Airlock::User::"alice", action, resource);"#, "f.cedar", None)
        .unwrap();
    assert!(free.deny_whatever_the_arguments("alice", &[], &tool).is_none());
    let denied = free.deny_whatever_the_arguments("mallory", &[], &tool).expect("mallory is never permitted");
    assert_eq!(denied.label(), "deny");
    // A forbid that never reads the arguments, beside permits that do.
    let text = r#"
        @id("no-mallory") @reason("mallory may not call tools")
        forbid (principal == Airlock::User::"mallory", action, resource);
        @id("small") permit (principal, action, resource) when { context has arguments && context.arguments.n < 3 };
    "#;
    let mixed = Policy::from_text(text, "m.cedar", None).unwrap();
    assert!(!mixed.context_free);
    let denied = mixed.deny_whatever_the_arguments("mallory", &[], &tool).expect("the forbid applies");
    assert_eq!((denied.label(), denied.policy()), ("deny", Some("no-mallory")));
    assert!(matches!(&denied, Verdict::Deny { reason, .. } if reason == "mallory may not call tools"));
    // For alice the arguments decide: nothing is known before them.
    assert!(mixed.deny_whatever_the_arguments("alice", &[], &tool).is_none());
    // A forbid that reads the arguments is left to the authorize stage.
    let reads = r#"forbid (principal, action, resource) when { context has arguments && context.arguments.n > 3 };
        permit (principal, action, resource);"#;
    let reads = Policy::from_text(reads, "r.cedar", None).unwrap();
    assert!(reads.deny_whatever_the_arguments("mallory", &[], &tool).is_none());
}

#[test]
fn policy_files_are_resolved_and_documented() {
    POLICY.ensure_documents("book/src/operator/policy.md").unwrap();
    let raw: RawPolicy = toml::from_str("policies = \"p.cedar\"\nentities = \"/e.json\"").unwrap();
    let files = PolicyFiles::from_raw(raw, &|p| std::path::Path::new("/etc/airlock").join(p));
    assert_eq!(files.policies.as_deref(), Some(std::path::Path::new("/etc/airlock/p.cedar")));
    assert_eq!(files.entities.as_deref(), Some(std::path::Path::new("/e.json")));
    let err = toml::from_str::<RawPolicy>("bogus = 1").unwrap_err().to_string();
    assert!(err.contains("bogus") && err.contains("entities"), "{err}");
}
