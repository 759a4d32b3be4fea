//! Strict mode holds: for every bundled tool, instances generated from its
//! `--strict` schema (for OpenAI and Anthropic, with `null` for every
//! nullable field and without) pass Airlock's own validation; a tool marked
//! strict passes the strict lint; no encoding carries a non-standard
//! `format`; and in every encoding, strict or not, the schemas follow the
//! rules converters need (no `$ref`, every optional member nullable by its
//! `type`, no `default`).
//!
//! The calls run under a policy that forbids everything, so each one stops
//! right after validation: an instance that was accepted is `denied`, one
//! that was not is `invalid_arguments`.

use crate::support::{guests, host, temp_dir};
use airlock::{CallRequest, Format, Host, Provider, strict_lint};
use serde_json::{Map, Value, json};

/// Every bundled tool.
const TOOLS: &[&str] = &[
    "echo",
    "read_file",
    "list_dir",
    "write_file",
    "search_files",
    "json_query",
    "http_fetch",
    "chart",
    "run_js",
    "run_python",
];

/// Tools without a strict form, per provider, and why: `headers` is a map
/// with arbitrary keys; `json` is any JSON document, among its forms an
/// object with arbitrary keys (typed so that client converters keep it an
/// object).
const NOT_STRICT: &[(Format, &str)] = &[
    (Format::OpenAi, "http_fetch"),
    (Format::OpenAi, "json_query"),
    (Format::OpenAiResponses, "http_fetch"),
    (Format::OpenAiResponses, "json_query"),
    (Format::Anthropic, "http_fetch"),
    (Format::Anthropic, "json_query"),
];

/// Formats of the JSON Schema vocabulary.
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

async fn deny_all_host(dir: &std::path::Path) -> Host {
    let policy = dir.join("deny.cedar");
    // The forbid reads the arguments, so it is decided after validation: a
    // call denied by it passed validation (a denial that holds whatever the
    // arguments would come first).
    std::fs::write(&policy, "forbid(principal, action, resource) when { context has arguments };\n")
        .expect("write policy");
    let mut text = String::new();
    for tool in TOOLS {
        text.push_str(&format!("[tools.{tool}]\ncomponent = {:?}\n", guests().join(format!("{tool}.wasm"))));
        if matches!(*tool, "run_js" | "run_python") {
            text.push_str(&format!("[tools.{tool}.sessions]\nmax_live = 2\n"));
        }
    }
    text.push_str(&format!("[policy]\npolicies = {:?}\n", policy.display().to_string()));
    host(&text).await
}

/// The tool's name and parameters schema in an encoding, and whether it is
/// marked strict.
fn parts(format: Format, tool: &Value) -> (String, Value, bool) {
    let (name, schema, strict) = match format {
        Format::OpenAi => (&tool["function"]["name"], &tool["function"]["parameters"], &tool["function"]["strict"]),
        Format::OpenAiResponses => (&tool["name"], &tool["parameters"], &tool["strict"]),
        Format::Anthropic => (&tool["name"], &tool["input_schema"], &tool["strict"]),
        Format::Mcp => (&tool["name"], &tool["inputSchema"], &Value::Null),
    };
    (name.as_str().unwrap_or_default().to_owned(), schema.clone(), strict == &json!(true))
}

fn resolve<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
    let mut current = schema;
    for _ in 0..16 {
        match current.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix('#')) {
            Some(pointer) => current = root.pointer(pointer).unwrap_or(&Value::Null),
            None => break,
        }
    }
    current
}

fn nullable(schema: &Value) -> bool {
    let types = |t: &Value| t == "null" || t.as_array().is_some_and(|a| a.contains(&json!("null")));
    schema.get("type").is_some_and(types)
        || schema.get("enum").and_then(Value::as_array).is_some_and(|e| e.contains(&Value::Null))
        || schema
            .get("anyOf")
            .and_then(Value::as_array)
            .is_some_and(|a| a.iter().any(|s| s.get("type").is_some_and(types)))
}

/// A valid value of `schema` by its type; with `nulls`, `null` for every
/// nullable field.
fn instance(root: &Value, schema: &Value, nulls: bool, depth: usize) -> Value {
    assert!(depth < 32, "schema nests too deep: {schema}");
    let schema = resolve(root, schema);
    if nulls && nullable(schema) {
        return Value::Null;
    }
    if let Some(first) = schema.get("enum").and_then(Value::as_array).and_then(|e| e.iter().find(|v| !v.is_null())) {
        return first.clone();
    }
    if let Some(value) = schema.get("const") {
        return value.clone();
    }
    if let Some(member) = schema
        .get("anyOf")
        .and_then(Value::as_array)
        .and_then(|a| a.iter().find(|s| s.get("type") != Some(&json!("null"))))
    {
        return instance(root, member, nulls, depth + 1);
    }
    let kind = match schema.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(types)) => types.iter().filter_map(Value::as_str).find(|t| *t != "null").unwrap_or("null"),
        _ => "string",
    };
    let bound = |key: &str| schema.get(key).and_then(Value::as_i64);
    match kind {
        "null" => Value::Null,
        "string" => json!("x"),
        "boolean" => json!(true),
        // An integer the description-level constraints also allow: the
        // minimum if there is one, else 1, kept under the maximum.
        "integer" | "number" => {
            let low = bound("minimum").unwrap_or(1);
            json!(bound("maximum").map_or(low, |high| low.min(high)))
        }
        "array" => json!([instance(root, schema.get("items").unwrap_or(&json!({})), nulls, depth + 1)]),
        "object" => {
            let mut out = Map::new();
            for (name, sub) in schema.get("properties").and_then(Value::as_object).into_iter().flatten() {
                out.insert(name.clone(), instance(root, sub, nulls, depth + 1));
            }
            Value::Object(out)
        }
        other => panic!("unknown type {other:?} in {schema}"),
    }
}

fn formats(value: &Value, found: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(format)) = map.get("format")
                && !STANDARD_FORMATS.contains(&format.as_str())
            {
                found.push(format.clone());
            }
            map.values().for_each(|v| formats(v, found));
        }
        Value::Array(items) => items.iter().for_each(|v| formats(v, found)),
        _ => {}
    }
}

#[tokio::test]
async fn every_strict_instance_passes_validation() {
    let dir = temp_dir();
    let host = deny_all_host(dir.path()).await;
    let mut checked = 0;
    for format in [Format::OpenAi, Format::OpenAiResponses, Format::Anthropic] {
        let provider = if format == Format::Anthropic { Provider::Anthropic } else { Provider::OpenAi };
        let tools = host.schemas(format, true);
        assert_eq!(tools.len(), TOOLS.len(), "{format}: every bundled tool is listed");
        for tool in &tools {
            let (name, schema, strict) = parts(format, tool);
            assert_eq!(strict, !NOT_STRICT.contains(&(format, name.as_str())), "{format} {name}: {schema:#}");
            if strict {
                assert_eq!(strict_lint(provider, &schema), Vec::new(), "{format} {name}: {schema:#}");
            }
            for nulls in [false, true] {
                let arguments = instance(&schema, &schema, nulls, 0);
                let result = host.call(CallRequest::new("tester", name.as_str(), arguments.clone()), None).await;
                assert_eq!(
                    result.outcome_name(),
                    "denied",
                    "{format} {name} {arguments}: accepted instances stop at the policy: {}",
                    result.text()
                );
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 3 * 2 * TOOLS.len());
}

/// Every subschema of `schema` with its JSON pointer, following the
/// keywords that hold subschemas (so a property named `default` is not
/// taken for the keyword).
fn subschemas<'a>(schema: &'a Value, pointer: String, out: &mut Vec<(String, &'a Value)>) {
    let Some(object) = schema.as_object() else { return };
    out.push((pointer.clone(), schema));
    for key in ["properties", "$defs", "definitions", "patternProperties"] {
        for (name, sub) in object.get(key).and_then(Value::as_object).into_iter().flatten() {
            subschemas(sub, format!("{pointer}/{key}/{name}"), out);
        }
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        for (i, sub) in object.get(key).and_then(Value::as_array).into_iter().flatten().enumerate() {
            subschemas(sub, format!("{pointer}/{key}/{i}"), out);
        }
    }
    for key in ["items", "additionalProperties", "not"] {
        if let Some(sub) = object.get(key) {
            subschemas(sub, format!("{pointer}/{key}"), out);
        }
    }
}

/// The one way an optional member accepts `null`: `null` among its
/// `type`s, and among its `enum` values when it has one.
fn nullable_by_type(schema: &Value) -> bool {
    let typed = schema.get("type").and_then(Value::as_array).is_some_and(|types| types.contains(&json!("null")));
    let listed = schema.get("enum").and_then(Value::as_array).is_none_or(|values| values.contains(&Value::Null));
    typed && listed
}

/// What breaks a converter in one tool's parameters: a `$ref` or
/// `$defs`, a `default`, an optional member (optional in the tool's MCP
/// schema, `optional`) that does not accept `null` by its type.
fn converter_problems(schema: &Value, optional: &[String]) -> Vec<String> {
    let mut nodes = Vec::new();
    subschemas(schema, String::new(), &mut nodes);
    let mut problems = Vec::new();
    for (pointer, node) in &nodes {
        for keyword in ["$ref", "$defs", "definitions", "default"] {
            if node.get(keyword).is_some() {
                problems.push(format!("{pointer}: `{keyword}`"));
            }
        }
        let required: Vec<&str> =
            node.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
        for (name, member) in node.get("properties").and_then(Value::as_object).into_iter().flatten() {
            // At the root, what was optional in the tool's schema (strict
            // OpenAI lists every member in `required`); below it, what is
            // not required there.
            let was_optional =
                if pointer.is_empty() { optional.contains(name) } else { !required.contains(&name.as_str()) };
            if was_optional && !nullable_by_type(member) {
                problems.push(format!("{pointer}/properties/{name}: optional but not nullable by its type: {member}"));
            }
        }
    }
    problems
}

#[tokio::test]
async fn every_bundled_schema_takes_every_converter_in_every_encoding() {
    let dir = temp_dir();
    let host = deny_all_host(dir.path()).await;
    // The optional members, as the tools declare them (MCP's inputSchema
    // is the tool's own, in portable form).
    let mcp = host.schemas(Format::Mcp, false);
    let optional = |name: &str| -> Vec<String> {
        let tool = mcp.iter().find(|t| t["name"] == name).expect("listed");
        let schema = &tool["inputSchema"];
        let required: Vec<&Value> = schema["required"].as_array().into_iter().flatten().collect();
        schema["properties"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(n, _)| n.clone())
            .filter(|n| !required.contains(&&json!(n)))
            .collect()
    };
    let mut checked = 0;
    for format in Format::ALL {
        for strict in [false, true] {
            let tools = host.schemas(format, strict);
            assert_eq!(tools.len(), TOOLS.len(), "{format}: every bundled tool is listed");
            for tool in &tools {
                let (name, schema, _) = parts(format, tool);
                let problems = converter_problems(&schema, &optional(&name));
                assert_eq!(problems, Vec::<String>::new(), "{format} (strict={strict}) {name}: {schema:#}");
                checked += 1;
            }
        }
    }
    assert_eq!(checked, Format::ALL.len() * 2 * TOOLS.len());
    // The interpreters name the session `session_id` (a client drops an
    // argument named `session`); the MCP schema keeps the old name for a
    // release, marked deprecated, so that clients validating against it
    // still send it.
    for name in ["run_js", "run_python"] {
        let mut names = optional(name);
        names.sort();
        assert_eq!(names, ["session", "session_id", "stdin"], "{name}");
        let tool = mcp.iter().find(|t| t["name"] == name).expect("listed");
        assert_eq!(tool["inputSchema"]["properties"]["session"]["deprecated"], json!(true), "{name}");
    }
}

#[tokio::test]
async fn no_encoding_carries_a_nonstandard_format() {
    let dir = temp_dir();
    let host = deny_all_host(dir.path()).await;
    for format in Format::ALL {
        for strict in [false, true] {
            let mut found = Vec::new();
            formats(&Value::Array(host.schemas(format, strict)), &mut found);
            assert_eq!(found, Vec::<String>::new(), "{format} (strict={strict})");
        }
    }
}

#[tokio::test]
async fn a_null_session_is_no_session_and_a_required_null_is_refused() {
    let dir = temp_dir();
    let host = deny_all_host(dir.path()).await;
    // `session_id: null` is no session and `stdin: null` no input: the call
    // reaches the policy like a call without them.
    let no_session = json!({"code": "1", "stdin": null, "session_id": null});
    let result = host.call(CallRequest::new("tester", "run_python", no_session), None).await;
    assert_eq!(result.outcome_name(), "denied", "{}", result.text());
    // `null` never stands for a required property.
    let result = host.call(CallRequest::new("tester", "run_python", json!({"code": null})), None).await;
    assert_eq!(result.outcome_name(), "invalid_arguments", "{}", result.text());
}
