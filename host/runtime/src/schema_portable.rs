//! Portable schemas: the model-facing form of a tool's parameters schema,
//! in keywords every client's validator and every provider's converter
//! understands.
//!
//! Two rewrites, each accepting exactly the instances the tool's schema
//! accepts (validation always uses the tool's own schema, never this one):
//!
//! - `format` values outside the JSON Schema vocabulary (`uint64`, `int32`,
//!   `double`, … as emitted by schemars) are dropped: validators ignore
//!   unknown formats, and Ajv-based clients warn about each of them. An
//!   unsigned format's range is kept as `minimum: 0`.
//! - A `oneOf`/`anyOf` whose members are all `{"const": X}` (with optional
//!   `type` and `description`) with distinct values becomes
//!   `{"enum": [...]}`; the members' descriptions move into the
//!   description. Strict-mode converters expect `enum` there.
//! - A boolean schema where a subschema is expected (`items: true`, a
//!   `true` property, an `anyOf` member) becomes its object form (`{}` for
//!   `true`, `{"not": {}}` for `false`): converters that turn schemas into
//!   types (the MCP Inspector's strict validation, Gemini's schema,
//!   pydantic models) expect an object there. `additionalProperties` and
//!   `unevaluatedProperties` keep their booleans, which every converter
//!   knows (strict modes require `additionalProperties: false`).
//!
//! Trusts nothing in the schema (it is the tool's): the walk is bounded by
//! [`MAX_PORTABLE_DEPTH`] and leaves anything it does not recognize as it is.

use serde_json::{Map, Value, json};

/// Deepest subschema rewritten; deeper ones are left unchanged.
pub const MAX_PORTABLE_DEPTH: usize = 64;

/// Formats of the JSON Schema 2020-12 vocabulary, which clients know.
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

/// The portable form of `schema`.
pub fn portable(schema: &Value) -> Value {
    let mut out = schema.clone();
    rewrite(&mut out, 0);
    out
}

fn rewrite(schema: &mut Value, depth: usize) {
    if depth > MAX_PORTABLE_DEPTH {
        return;
    }
    let Some(object) = schema.as_object_mut() else { return };
    drop_nonstandard_format(object);
    consts_to_enum(object);
    for (key, sub) in object.iter_mut() {
        match (key.as_str(), sub) {
            ("properties" | "$defs" | "definitions" | "patternProperties" | "dependentSchemas", Value::Object(map)) => {
                map.values_mut().for_each(|s| {
                    unbool(s);
                    rewrite(s, depth + 1);
                });
            }
            ("anyOf" | "oneOf" | "allOf" | "prefixItems", Value::Array(list)) => {
                list.iter_mut().for_each(|s| {
                    unbool(s);
                    rewrite(s, depth + 1);
                });
            }
            ("items" | "not" | "if" | "then" | "else" | "contains" | "propertyNames" | "unevaluatedItems", sub) => {
                unbool(sub);
                rewrite(sub, depth + 1);
            }
            ("additionalProperties" | "unevaluatedProperties", sub @ Value::Object(_)) => rewrite(sub, depth + 1),
            _ => {}
        }
    }
}

/// A boolean schema as the object schema that accepts the same instances.
fn unbool(schema: &mut Value) {
    match schema {
        Value::Bool(true) => *schema = json!({}),
        Value::Bool(false) => *schema = json!({ "not": {} }),
        _ => {}
    }
}

fn drop_nonstandard_format(object: &mut Map<String, Value>) {
    let Some(format) = object.get("format").and_then(Value::as_str) else { return };
    if STANDARD_FORMATS.contains(&format) {
        return;
    }
    let unsigned = format.starts_with("uint");
    object.remove("format");
    if unsigned && !object.contains_key("minimum") && !object.contains_key("exclusiveMinimum") {
        object.insert("minimum".into(), json!(0));
    }
}

/// `{"oneOf": [{"const": "a", "description": "A."}, …]}` → `{"enum": ["a", …]}`.
fn consts_to_enum(object: &mut Map<String, Value>) {
    for key in ["oneOf", "anyOf"] {
        let Some(members) = object.get(key).and_then(Value::as_array) else { continue };
        let Some((values, notes)) = constants(members) else { continue };
        let mut types: Vec<&'static str> = values.iter().map(json_type).collect();
        types.sort_unstable();
        types.dedup();
        object.remove(key);
        if let ([t], None) = (types.as_slice(), object.get("type")) {
            object.insert("type".into(), json!(t));
        }
        object.insert("enum".into(), Value::Array(values));
        if !notes.is_empty() {
            let notes = notes.join(" ");
            let description = match object.get("description").and_then(Value::as_str) {
                Some(d) => format!("{d} {notes}"),
                None => notes,
            };
            object.insert("description".into(), Value::String(description));
        }
        return;
    }
}

/// The distinct constants of `members`, each a `{const}` with only a
/// matching `type`, a `description` or a `title` beside it, and their
/// descriptions as `` `value`: text `` notes; `None` otherwise.
fn constants(members: &[Value]) -> Option<(Vec<Value>, Vec<String>)> {
    if members.is_empty() {
        return None;
    }
    let (mut values, mut notes) = (Vec::new(), Vec::new());
    for member in members {
        let member = member.as_object()?;
        let value = member.get("const")?;
        for (key, sub) in member {
            let fits = match key.as_str() {
                "const" | "title" => true,
                "description" => sub.is_string(),
                "type" => sub.as_str() == Some(json_type(value)),
                _ => false,
            };
            if !fits {
                return None;
            }
        }
        if values.contains(value) {
            // Duplicates make `oneOf` refuse the value; `enum` would accept it.
            return None;
        }
        if let Some(text) = member.get("description").and_then(Value::as_str) {
            let shown = value.as_str().map_or_else(|| value.to_string(), str::to_owned);
            notes.push(format!("`{shown}`: {text}"));
        }
        values.push(value.clone());
    }
    Some((values, notes))
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boolean_subschemas_become_objects_and_additional_properties_keeps_its() {
        let schema = json!({
            "type": "object",
            "properties": {
                "values": { "type": "array", "items": true },
                "any": true,
                "never": { "anyOf": [false, { "type": "string" }] }
            },
            "additionalProperties": false
        });
        let out = portable(&schema);
        assert_eq!(out["properties"]["values"]["items"], json!({}));
        assert_eq!(out["properties"]["any"], json!({}));
        assert_eq!(out["properties"]["never"]["anyOf"][0], json!({ "not": {} }));
        assert_eq!(out["additionalProperties"], json!(false));
        // The rewrite accepts exactly what the original accepts.
        let (original, rewritten) =
            (jsonschema::validator_for(&schema).unwrap(), jsonschema::validator_for(&out).unwrap());
        for instance in [json!({ "values": [1, "a"] }), json!({ "never": 1 }), json!({ "never": "s", "any": [] })] {
            assert_eq!(original.is_valid(&instance), rewritten.is_valid(&instance), "{instance}");
        }
    }

    #[test]
    fn formats_and_constants() {
        let schema = json!({
            "type": "object",
            "properties": {
                "n": {"type": "integer", "format": "uint32"},
                "m": {"type": "integer", "format": "uint64", "minimum": 1},
                "f": {"type": "number", "format": "double"},
                "when": {"type": "string", "format": "date-time"},
                "mode": {"$ref": "#/$defs/Mode"},
                "dup": {"oneOf": [{"const": 1}, {"const": 1}]},
                "mixed": {"oneOf": [{"const": "a"}, {"type": "integer"}]},
            },
            "$defs": {"Mode": {"description": "How.", "oneOf": [
                {"const": "a", "type": "string", "description": "First."},
                {"const": "b", "type": "string"},
            ]}},
        });
        let out = portable(&schema);
        assert_eq!(out["properties"]["n"], json!({"type": "integer", "minimum": 0}));
        assert_eq!(out["properties"]["m"], json!({"type": "integer", "minimum": 1}));
        assert_eq!(out["properties"]["f"], json!({"type": "number"}));
        assert_eq!(out["properties"]["when"]["format"], "date-time");
        assert_eq!(
            out["$defs"]["Mode"],
            json!({"description": "How. `a`: First.", "type": "string", "enum": ["a", "b"]})
        );
        assert_eq!(out["properties"]["dup"], schema["properties"]["dup"]);
        assert_eq!(out["properties"]["mixed"], schema["properties"]["mixed"]);
    }
}
