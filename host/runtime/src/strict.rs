//! Strict-mode lint: does a tool's parameters schema qualify for OpenAI
//! strict function calling or Anthropic strict tool use, and if not, why;
//! plus a strict-compatible variant of the schema.
//!
//! The rules are the documented subsets of JSON Schema each provider
//! accepts in strict mode: the root is an object, every object closes
//! `additionalProperties`, OpenAI also needs every property `required`
//! (optional ones become nullable), and some keywords are unsupported.

use serde_json::{Map, Value, json};
use std::collections::HashSet;
use std::fmt;

/// One reason a schema is not accepted in strict mode: where, and what is
/// wrong there. Shown as `<pointer>: <what>`; [`Problem::member`] names the
/// argument it is in, for a sentence a reader can act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// JSON pointer of the offending subschema (empty for the root).
    pub pointer: String,
    /// What is wrong there, as a phrase (e.g. "keyword `default` is not
    /// supported").
    pub what: String,
}

impl Problem {
    fn new(pointer: &str, what: impl Into<String>) -> Self {
        Self { pointer: pointer.to_owned(), what: what.into() }
    }

    /// The argument the problem is in, as a model names it (`headers`,
    /// `options.mode`); `None` for a problem of the arguments object
    /// itself. Read from the pointer this module built: the names that
    /// follow each `properties`.
    pub fn member(&self) -> Option<String> {
        let mut segments = self.pointer.split('/').skip(1).map(|s| s.replace("~1", "/").replace("~0", "~"));
        let mut names = Vec::new();
        while let Some(keyword) = segments.next() {
            match keyword.as_str() {
                // Keywords followed by a name or an index (what
                // `for_each_subschema` writes); only a property's name is
                // an argument's.
                "properties" => names.extend(segments.next()),
                "$defs" | "definitions" | "anyOf" | "oneOf" | "allOf" | "prefixItems" => {
                    segments.next();
                }
                _ => {}
            }
        }
        (!names.is_empty()).then(|| names.join("."))
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.pointer.is_empty() { "/" } else { &self.pointer };
        write!(f, "{at}: {}", self.what)
    }
}

/// A provider with a strict mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// OpenAI (Chat Completions and Responses) `strict: true`.
    OpenAi,
    /// Anthropic Messages `strict: true`.
    Anthropic,
}

/// Keywords neither provider accepts in strict mode.
const UNSUPPORTED_BY_BOTH: &[&str] = &[
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
    "patternProperties",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "minProperties",
    "maxProperties",
    "contains",
    "minContains",
    "maxContains",
    "uniqueItems",
];

impl Provider {
    /// Keywords the provider's strict mode does not accept.
    fn unsupported(self) -> impl Iterator<Item = &'static str> {
        let extra: &[&str] = match self {
            Provider::OpenAi => &["oneOf", "default"],
            Provider::Anthropic => &[
                "minimum",
                "maximum",
                "exclusiveMinimum",
                "exclusiveMaximum",
                "multipleOf",
                "minLength",
                "maxLength",
                "maxItems",
            ],
        };
        UNSUPPORTED_BY_BOTH.iter().chain(extra).copied()
    }

    /// Display name.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::OpenAi => "OpenAI",
            Provider::Anthropic => "Anthropic",
        }
    }
}

/// Why a schema is not accepted in strict mode: one problem per offending
/// subschema and rule, each with the JSON pointer of the subschema.
pub fn lint(provider: Provider, schema: &Value) -> Vec<Problem> {
    let mut problems = Vec::new();
    if schema.get("type") != Some(&json!("object")) {
        problems.push(Problem::new("", "the root must be {\"type\": \"object\"}"));
    }
    walk(provider, schema, "", &mut problems);
    problems
}

fn walk(provider: Provider, schema: &Value, pointer: &str, problems: &mut Vec<Problem>) {
    let Some(object) = schema.as_object() else { return };
    let at = pointer;
    for keyword in provider.unsupported() {
        if object.contains_key(keyword) {
            problems.push(Problem::new(at, format!("keyword `{keyword}` is not supported")));
        }
    }
    if provider == Provider::Anthropic && object.get("minItems").and_then(Value::as_u64).is_some_and(|n| n > 1) {
        problems.push(Problem::new(at, "`minItems` above 1 is not supported"));
    }
    if provider == Provider::OpenAi && !pointer.is_empty() && !is_typed(object) {
        problems.push(Problem::new(at, "every subschema needs a `type` (or `enum`, `const`, `anyOf`, `$ref`)"));
    }
    if provider == Provider::OpenAi && object.contains_key("$ref") && object.len() > 1 {
        problems.push(Problem::new(at, "`$ref` cannot have sibling keywords"));
    }
    if is_object_schema(object) {
        if is_open_map(object) {
            problems.push(Problem::new(
                at,
                "an object with arbitrary keys (a map), which strict mode cannot express: it needs every key declared",
            ));
        } else if object.get("additionalProperties") != Some(&Value::Bool(false)) {
            problems.push(Problem::new(at, "objects must set \"additionalProperties\": false"));
        }
        if provider == Provider::OpenAi {
            // A set: a schema may list thousands of properties.
            let required: HashSet<&str> = object
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            for name in object.get("properties").and_then(Value::as_object).into_iter().flat_map(Map::keys) {
                if !required.contains(&name.as_str()) {
                    problems.push(Problem::new(
                        at,
                        format!(
                            "property `{name}` must be listed in `required` (make it nullable to keep it optional)"
                        ),
                    ));
                }
            }
        }
    }
    for_each_subschema(object, pointer, |sub, sub_pointer| walk(provider, sub, sub_pointer, problems));
}

fn is_object_schema(object: &Map<String, Value>) -> bool {
    let object_type = |t: &Value| t == "object";
    match object.get("type") {
        Some(Value::Array(types)) if types.iter().any(object_type) => true,
        Some(t) if object_type(t) => true,
        _ => object.contains_key("properties"),
    }
}

/// An object whose keys are not declared: `additionalProperties` is a
/// schema or `true`, or there are no `properties` at all. Closing it would
/// leave only `{}` (or the declared keys), so it has no strict form.
fn is_open_map(object: &Map<String, Value>) -> bool {
    match object.get("additionalProperties") {
        Some(Value::Bool(false)) => false,
        Some(Value::Object(_) | Value::Bool(true)) => true,
        _ => !object.contains_key("properties"),
    }
}

/// The subschema says what type its values have.
fn is_typed(object: &Map<String, Value>) -> bool {
    ["type", "enum", "const", "anyOf", "$ref"].iter().any(|k| object.contains_key(*k))
}

fn for_each_subschema(object: &Map<String, Value>, pointer: &str, mut f: impl FnMut(&Value, &str)) {
    for key in ["properties", "$defs", "definitions"] {
        if let Some(map) = object.get(key).and_then(Value::as_object) {
            for (name, sub) in map {
                f(sub, &format!("{pointer}/{key}/{}", escape(name)));
            }
        }
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(list) = object.get(key).and_then(Value::as_array) {
            for (i, sub) in list.iter().enumerate() {
                f(sub, &format!("{pointer}/{key}/{i}"));
            }
        }
    }
    for key in ["items", "additionalProperties", "not"] {
        if let Some(sub) = object.get(key).filter(|v| v.is_object()) {
            f(sub, &format!("{pointer}/{key}"));
        }
    }
}

fn escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

/// A strict-compatible variant of `schema` for `provider`: objects closed,
/// (OpenAI) optional properties made required-but-nullable, `$ref`s with
/// sibling keywords inlined, `oneOf` turned into `anyOf`, unsupported
/// keywords removed and restated in the `description` so the model still
/// learns the constraint. Every instance of the variant is accepted by
/// `schema`, with `null` standing for an absent optional property
/// (`optional_null.rs`).
///
/// # Errors
///
/// The schema has no strict form (for one, an object with arbitrary keys):
/// the problems [`lint`] finds in the variant. The tool must then not be
/// marked strict.
pub fn strict_variant(provider: Provider, schema: &Value) -> Result<Value, Vec<Problem>> {
    let mut out = schema.clone();
    rewrite(provider, schema, &mut out, 0);
    let problems = lint(provider, &out);
    if problems.is_empty() { Ok(out) } else { Err(problems) }
}

/// Deepest subschema rewritten (inlined `$ref`s count); deeper ones are left
/// as they are, and the lint then reports what is left.
pub const MAX_STRICT_DEPTH: usize = 32;

fn rewrite(provider: Provider, root: &Value, schema: &mut Value, depth: usize) {
    if depth > MAX_STRICT_DEPTH {
        return;
    }
    let Some(object) = schema.as_object_mut() else { return };
    inline_ref(root, object);
    if object.get("default").is_some_and(Value::is_null) {
        // A `null` default says nothing a nullable type does not.
        object.remove("default");
    }
    if let Some(one_of) = object.remove("oneOf") {
        object.insert("anyOf".into(), one_of);
    }
    let mut dropped = Vec::new();
    for keyword in provider.unsupported() {
        if let Some(value) = object.remove(keyword) {
            dropped.push(format!("{keyword}: {value}"));
        }
    }
    if provider == Provider::Anthropic
        && let Some(n) = object.get("minItems").and_then(Value::as_u64).filter(|n| *n > 1)
    {
        object.insert("minItems".into(), json!(1));
        dropped.push(format!("minItems: {n}"));
    }
    if !dropped.is_empty() {
        let note = format!("(Constraints: {}.)", dropped.join(", "));
        let description = match object.get("description").and_then(Value::as_str) {
            Some(d) => format!("{d} {note}"),
            None => note,
        };
        object.insert("description".into(), Value::String(description));
    }
    for key in ["properties", "$defs", "definitions"] {
        if let Some(map) = object.get_mut(key).and_then(Value::as_object_mut) {
            map.values_mut().for_each(|sub| rewrite(provider, root, sub, depth + 1));
        }
    }
    for key in ["anyOf", "prefixItems"] {
        if let Some(list) = object.get_mut(key).and_then(Value::as_array_mut) {
            list.iter_mut().for_each(|sub| rewrite(provider, root, sub, depth + 1));
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(sub) = object.get_mut(key).filter(|v| v.is_object()) {
            rewrite(provider, root, sub, depth + 1);
        }
    }
    if is_object_schema(object) && !is_open_map(object) {
        object.insert("additionalProperties".into(), Value::Bool(false));
        if provider == Provider::OpenAi {
            let required: HashSet<String> = object
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).map(str::to_owned).collect())
                .unwrap_or_default();
            if let Some(properties) = object.get_mut("properties").and_then(Value::as_object_mut) {
                let mut all = Vec::new();
                for (name, sub) in properties.iter_mut() {
                    if !required.contains(name.as_str()) {
                        make_nullable(sub);
                    }
                    all.push(Value::String(name.clone()));
                }
                object.insert("required".into(), Value::Array(all));
            }
        }
    }
}

/// Replace a local `$ref` that has sibling keywords by the schema it points
/// to, merged under the siblings (which win: they are the more specific).
/// Strict converters refuse `$ref` beside other keywords.
fn inline_ref(root: &Value, object: &mut Map<String, Value>) {
    if object.len() < 2 {
        return;
    }
    let Some(target) = object.get("$ref").and_then(Value::as_str) else { return };
    let Some(Value::Object(resolved)) = target.strip_prefix('#').and_then(|p| root.pointer(p)) else { return };
    let resolved = resolved.clone();
    object.remove("$ref");
    for (key, value) in resolved {
        if key == "description" {
            // Both descriptions are for the model: keep them both.
            if let (Some(Value::String(mine)), Value::String(theirs)) = (object.get_mut("description"), &value) {
                *mine = format!("{theirs} {mine}");
                continue;
            }
        }
        object.entry(key).or_insert(value);
    }
}

/// Allow `null` in a subschema that was optional.
fn make_nullable(schema: &mut Value) {
    let Some(object) = schema.as_object_mut() else { return };
    if let Some(Value::Array(options)) = object.get_mut("enum")
        && !options.contains(&Value::Null)
    {
        options.push(Value::Null);
    }
    if object.contains_key("const") {
        let inner = Value::Object(std::mem::take(object));
        object.insert("anyOf".into(), json!([inner, {"type": "null"}]));
        return;
    }
    match object.get_mut("type") {
        Some(Value::String(t)) if t != "null" => {
            let t = t.clone();
            object.insert("type".into(), json!([t, "null"]));
        }
        Some(Value::Array(types)) if !types.contains(&json!("null")) => types.push(json!("null")),
        Some(_) => {}
        None => {
            let inner = Value::Object(std::mem::take(object));
            object.insert("anyOf".into(), json!([inner, {"type": "null"}]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(provider: Provider, schema: Value, expect: &[&str]) {
        let problems = lint(provider, &schema);
        assert_eq!(problems.len(), expect.len(), "{problems:#?}");
        for (problem, needle) in problems.iter().zip(expect) {
            assert!(problem.to_string().contains(needle), "{problem:?} should contain {needle:?}");
        }
        // The variant always passes the lint of the same provider.
        if schema.get("type") == Some(&json!("object")) {
            let variant = strict_variant(provider, &schema).expect("a strict form");
            assert_eq!(lint(provider, &variant), Vec::<Problem>::new(), "{variant:#}");
        }
    }

    #[test]
    fn openai_rules() {
        let closed =
            json!({"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false});
        check(Provider::OpenAi, closed.clone(), &[]);
        check(Provider::OpenAi, json!({"type":"string"}), &["root must be"]);
        check(
            Provider::OpenAi,
            json!({"type":"object","properties":{"a":{"type":"string"}}}),
            &["additionalProperties", "`a` must be listed"],
        );
        check(
            Provider::OpenAi,
            json!({"type":"object","properties":{"a":{"type":"array","items":{"type":"object","properties":{}},"uniqueItems":true}},"required":["a"],"additionalProperties":false}),
            &["/properties/a: keyword `uniqueItems`", "/properties/a/items: objects must set"],
        );
    }

    #[test]
    fn a_problem_names_the_argument_it_is_in() {
        let at = |pointer: &str| Problem::new(pointer, "x").member();
        assert_eq!(at(""), None);
        assert_eq!(at("/properties/json/anyOf/0"), Some("json".to_owned()));
        assert_eq!(at("/properties/options/properties/a~1b/items"), Some("options.a/b".to_owned()));
        assert_eq!(at("/properties/properties/anyOf/0"), Some("properties".to_owned()));
        assert_eq!(Problem::new("", "the root").to_string(), "/: the root");
        assert_eq!(Problem::new("/properties/a", "bad").to_string(), "/properties/a: bad");
    }

    #[test]
    fn anthropic_rules() {
        check(
            Provider::Anthropic,
            json!({"type":"object","properties":{"n":{"type":"integer","minimum":1}},"additionalProperties":false}),
            &["`minimum`"],
        );
        check(
            Provider::Anthropic,
            json!({"type":"object","properties":{"n":{"type":"integer"}},"additionalProperties":false}),
            &[],
        );
    }

    #[test]
    fn variant_keeps_optional_as_nullable_and_restates_constraints() {
        let schema = json!({"type":"object","properties":{"n":{"type":"integer","minimum":1,"description":"Count."},"s":{"type":"string"}},"required":["s"]});
        let variant = strict_variant(Provider::OpenAi, &schema).expect("a strict form");
        assert_eq!(variant["properties"]["n"]["type"], json!(["integer", "null"]));
        assert_eq!(variant["required"], json!(["n", "s"]));
        let anthropic = strict_variant(Provider::Anthropic, &schema).expect("a strict form");
        assert_eq!(anthropic["properties"]["n"]["description"], json!("Count. (Constraints: minimum: 1.)"));
        assert!(anthropic["properties"]["n"].get("minimum").is_none());
    }

    #[test]
    fn maps_have_no_strict_form_and_refs_with_siblings_are_inlined() {
        let map =
            json!({"type":"object","properties":{"h":{"type":"object","additionalProperties":{"type":"string"}}}});
        for provider in [Provider::OpenAi, Provider::Anthropic] {
            let problems = strict_variant(provider, &map).expect_err("a map has no strict form");
            assert!(problems.iter().any(|p| p.what.contains("arbitrary keys")), "{problems:?}");
            assert_eq!(problems.iter().filter_map(Problem::member).collect::<Vec<_>>(), ["h"], "{problems:?}");
        }
        let schema = json!({
            "type": "object",
            "properties": {"m": {"$ref": "#/$defs/M", "default": "a", "description": "Mode."}},
            "$defs": {"M": {"type": "string", "enum": ["a", "b"], "description": "How."}},
        });
        let variant = strict_variant(Provider::OpenAi, &schema).expect("a strict form");
        let m = &variant["properties"]["m"];
        assert_eq!(m["enum"], json!(["a", "b", null]));
        assert_eq!(m["type"], json!(["string", "null"]));
        assert!(m.get("$ref").is_none() && m.get("default").is_none(), "{m}");
        assert!(m["description"].as_str().is_some_and(|d| d.starts_with("How. Mode.")), "{m}");
    }
}
