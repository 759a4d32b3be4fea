//! Unit tests of `json_query`: the syntax, the evaluation and the handler.

use super::*;
use query::Step;
use serde_json::json;

fn doc() -> Value {
    json!({
        "a": {"b": [{"c": 1}, {"c": 2}, {"d": 3}]},
        "items": [{"name": "x", "n": 1}, {"name": "y"}, {"n": 3}],
        "a.b": "dotted",
        "content-type": "text/plain",
        "z": null,
    })
}

/// Run `query` over [`doc`] and return the values.
fn values(query: &str) -> Vec<Value> {
    json_query(Args { json: doc(), query: query.to_owned() }).unwrap().values
}

fn error(json: Value, query: &str) -> ToolError {
    json_query(Args { json, query: query.to_owned() }).unwrap_err()
}

#[test]
fn parses_every_step_kind() {
    use Step::*;
    let key = |k: &str| Key(k.to_owned());
    let check = |query: &str, steps: Vec<Step>| assert_eq!(query::parse(query).unwrap(), steps, "{query}");
    check("$", vec![]);
    check("a.b[0].c", vec![key("a"), key("b"), Index(0), key("c")]);
    check("$.items[*].name", vec![key("items"), Wildcard, key("name")]);
    check(".a.*", vec![key("a"), Wildcard]);
    check("*", vec![Wildcard]);
    check("[-1]", vec![Index(-1)]);
    check(r#"$["a.b"]["q\"uote"]"#, vec![key("a.b"), key("q\"uote")]);
    check("é_1-x", vec![key("é_1-x")]);
}

#[test]
fn syntax_errors_point_at_the_character() {
    let check = |query: &str, position: usize, expected: &str| {
        let err = query::parse(query).unwrap_err();
        assert_eq!(err.position, position, "{query}: {err:?}");
        assert!(err.expected.contains(expected), "{query}: {err:?}");
    };
    check("", 0, "`$`");
    check("a.[b]", 2, "key name");
    check("a[b]", 2, "an index");
    check("a[0", 3, "`]`");
    check("a[*x]", 3, "`]`");
    check("$a", 1, "`.key`");
    check("a b", 1, "`.key`");
    check(r#"["open"#, 6, "closing");
    check(r#"["bad\q"]"#, 1, "JSON string");
    check("[99999999999999999999]", 1, "64 bits");
}

#[test]
fn syntax_error_message_has_a_caret() {
    let err = error(doc(), "a.[b]");
    assert_eq!(err.code.as_deref(), Some("invalid_query"));
    assert_eq!(
        err.message,
        "invalid query at character 3: expected a key name (letters, digits, `_`, `-`) or `*` after `.`; \
         quote other keys as [\"key\"], found `[`\n  a.[b]\n    ^"
    );
}

#[test]
fn selects_paths() {
    assert_eq!(values("$"), [doc()]);
    assert_eq!(values("a.b[0].c"), [json!(1)]);
    assert_eq!(values("$.a.b[1]"), [json!({"c": 2})]);
    assert_eq!(values("a.b[-1].d"), [json!(3)]);
    assert_eq!(values("a.b.0.c"), [json!(1)], "a numeric key indexes an array");
    assert_eq!(values(r#"$["a.b"]"#), [json!("dotted")]);
    assert_eq!(values("content-type"), [json!("text/plain")]);
    assert_eq!(values("z"), [Value::Null], "a null member is a match");
    assert_eq!(values("  a.b[2].d  "), [json!(3)], "surrounding spaces are ignored");
}

#[test]
fn wildcards_skip_missing_members() {
    assert_eq!(values("items[*].name"), [json!("x"), json!("y")]);
    assert_eq!(values("items.*.n"), [json!(1), json!(3)]);
    assert_eq!(values("a.b[*].c"), [json!(1), json!(2)]);
    assert_eq!(values("items[*].missing"), Vec::<Value>::new());
    let out = json_query(Args { json: json!({"b": 2, "a": 1, "c": [3]}), query: "*".into() }).unwrap();
    assert_eq!(out.values, [json!(1), json!(2), json!([3])], "object members in key order");
    assert_eq!((out.count, out.truncated), (3, false));
}

#[test]
fn misses_without_wildcards_explain_where() {
    let err = error(doc(), "a.x");
    assert_eq!(err.code.as_deref(), Some("not_found"));
    assert_eq!(err.message, "no value at a.x: at $.a, the object has no key \"x\" (its keys: b)");
    let err = error(doc(), "a.b[5]");
    assert!(err.message.contains("at $.a.b, the array has 3 elements: valid indexes are 0 to 2"), "{}", err.message);
    let err = error(doc(), "a.b.name");
    assert!(err.message.contains("an array of 3 elements, not an object"), "{}", err.message);
    let err = error(doc(), "a[0]");
    assert!(err.message.contains("an object, not an array"), "{}", err.message);
    let err = error(doc(), "content-type.x");
    assert!(err.message.contains("a string, which has no keys"), "{}", err.message);
    let err = error(json!([]), "[0]");
    assert!(err.message.contains("the array is empty"), "{}", err.message);
    let many: serde_json::Map<String, Value> = (0..30).map(|i| (format!("k{i:02}"), json!(i))).collect();
    let err = error(Value::Object(many), "nope");
    assert!(err.message.contains("k19, and 10 more"), "{}", err.message);
}

#[test]
fn json_text_in_a_string_is_parsed() {
    let out = json_query(Args { json: json!(r#"{"a": [10, 20]}"#), query: "a[1]".into() }).unwrap();
    assert_eq!(out.values, [json!(20)]);
    let err = error(json!("{not json"), "$");
    assert_eq!(err.code.as_deref(), Some("invalid_json"));
    assert!(err.message.contains("line 1 column 2"), "{}", err.message);
    let huge = Value::String(format!("\"{}\"", "x".repeat(MAX_JSON_BYTES)));
    assert_eq!(error(huge, "$").code.as_deref(), Some("too_large"));
}

#[test]
fn results_are_capped() {
    let json = Value::Array((0..MAX_RESULTS + 5).map(|i| json!(i)).collect());
    let out = json_query(Args { json, query: "[*]".into() }).unwrap();
    assert_eq!((out.values.len(), out.count, out.truncated), (MAX_RESULTS, (MAX_RESULTS + 5) as u64, true));
    assert_eq!(out.values[0], json!(0));
}

#[test]
fn long_queries_are_refused() {
    let long = "a".repeat(MAX_QUERY_CHARS + 1);
    assert_eq!(error(doc(), &long).code.as_deref(), Some("invalid_arguments"));
}

#[test]
fn steps_display_as_canonical_paths() {
    let steps = query::parse(r#"a["b c"][-2][*]"#).unwrap();
    let shown: String = steps.iter().map(ToString::to_string).collect();
    assert_eq!(shown, r#".a["b c"][-2][*]"#);
}

#[test]
fn schemas_document_every_field() {
    let schema = airlock_guest::schema::parameters::<Args>();
    for (name, field) in schema["properties"].as_object().unwrap() {
        assert!(field.get("description").is_some(), "field {name} has no description");
    }
    assert_eq!(schema["required"], json!(["json", "query"]));
    let out = airlock_guest::schema::output::<QueryResult>();
    assert_eq!(out["required"], json!(["values", "count", "truncated"]));
}

#[test]
fn schemas_are_typed_and_use_no_boolean_subschemas() {
    let parameters = airlock_guest::schema::parameters::<Args>();
    let types: Vec<&str> = parameters["properties"]["json"]["anyOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["object", "string"]);
    let output = airlock_guest::schema::output::<QueryResult>();
    assert_eq!(output["properties"]["values"]["items"], json!({}));
    for schema in [&parameters, &output] {
        assert!(!schema.to_string().contains(":true"), "a boolean subschema in {schema}");
    }
}
