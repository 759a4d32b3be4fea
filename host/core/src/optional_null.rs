//! Optional arguments sent as `null`: treated as absent.
//!
//! Strict function calling (OpenAI) makes every property required, so the
//! strict variant of a schema (`strict.rs`) turns each optional property
//! into a nullable one, and a model leaves it out by sending `null`. The
//! tool's own schema does not always accept `null` there (an optional
//! `string` is not nullable), so before validation the host removes every
//! object member whose value is `null` when the property is optional in the
//! tool's schema and that property's schema does not accept `null` itself.
//! A `null` for a required property, or for a property whose schema accepts
//! `null`, is left as sent (and validated as sent).
//!
//! Trusts neither side: the arguments come from a model and the schema from
//! the tool. The walk follows the arguments (already capped in size and
//! depth by `arguments.rs`) and looks schemas up by name; local `$ref`s are
//! followed at most [`MAX_REF_HOPS`] times per lookup, so a cyclic schema
//! cannot loop. Anything the walk does not understand is left unchanged,
//! and validation then judges it as sent.

use crate::arguments::Parsed;
use serde_json::{Map, Value};

/// Local `$ref`s followed in one lookup before giving up (leaving the
/// arguments as sent).
pub const MAX_REF_HOPS: usize = 16;

/// Remove the `null` members of `arguments` that stand for absent optional
/// properties of `schema`; the JSON text is rebuilt when anything changed.
pub fn drop_absent_nulls(schema: &Value, arguments: &mut Parsed) {
    if strip(schema, schema, &mut arguments.value) {
        arguments.text = arguments.value.to_string();
    }
}

/// Strip `value` against `schema` (`root` resolves `$ref`s); true when
/// something was removed.
fn strip(root: &Value, schema: &Value, value: &mut Value) -> bool {
    let Some(schema) = resolve(root, schema) else { return false };
    let mut changed = false;
    match value {
        Value::Object(members) => {
            let Some(properties) = schema.get("properties").and_then(Value::as_object) else { return false };
            let required = |name: &str| {
                schema
                    .get("required")
                    .and_then(Value::as_array)
                    .is_some_and(|r| r.iter().any(|n| n.as_str() == Some(name)))
            };
            let before = members.len();
            members.retain(|name, member| {
                !(member.is_null()
                    && !required(name)
                    && properties.get(name).is_some_and(|sub| !accepts_null(root, sub, MAX_REF_HOPS)))
            });
            changed |= members.len() != before;
            for (name, member) in members.iter_mut() {
                if let Some(sub) = properties.get(name) {
                    changed |= strip(root, sub, member);
                }
            }
        }
        Value::Array(items) => {
            if let Some(sub) = schema.get("items").filter(|s| s.is_object()) {
                for item in items {
                    changed |= strip(root, sub, item);
                }
            }
        }
        _ => {}
    }
    changed
}

/// Follow a schema's `$ref` chain (local `#/…` pointers only) to a schema
/// that declares its own keywords; `None` when a reference cannot be
/// followed.
fn resolve<'a>(root: &'a Value, schema: &'a Value) -> Option<&'a Value> {
    let mut current = schema;
    for _ in 0..MAX_REF_HOPS {
        let Some(target) = current.get("$ref").and_then(Value::as_str) else { return Some(current) };
        // A `$ref` with siblings constrains with both; only a bare reference
        // is followed, so nothing the siblings say is overlooked.
        if current.as_object().is_some_and(|o| o.keys().any(|k| !is_annotation(k) && k != "$ref")) {
            return None;
        }
        current = root.pointer(target.strip_prefix('#')?)?;
    }
    None
}

/// Keywords that annotate and never constrain.
fn is_annotation(keyword: &str) -> bool {
    matches!(keyword, "description" | "title" | "default" | "examples" | "deprecated" | "readOnly" | "writeOnly")
}

/// Whether `schema` accepts `null`, judged by its keywords. Unknown or
/// unresolvable shapes count as accepting (the `null` is then left for
/// validation to judge, never removed on a guess).
fn accepts_null(root: &Value, schema: &Value, hops: usize) -> bool {
    let object: &Map<String, Value> = match schema {
        Value::Bool(b) => return *b,
        Value::Object(object) => object,
        _ => return true,
    };
    let type_ok = match object.get("type") {
        None => true,
        Some(Value::String(t)) => t == "null",
        Some(Value::Array(types)) => types.iter().any(|t| t == "null"),
        Some(_) => true,
    };
    let const_ok = object.get("const").is_none_or(Value::is_null);
    let enum_ok = object.get("enum").and_then(Value::as_array).is_none_or(|e| e.iter().any(Value::is_null));
    let any = |key: &str| {
        object.get(key).and_then(Value::as_array).is_none_or(|list| list.iter().any(|s| accepts_null(root, s, hops)))
    };
    let all_of = object
        .get("allOf")
        .and_then(Value::as_array)
        .is_none_or(|list| list.iter().all(|s| accepts_null(root, s, hops)));
    let ref_ok = match object.get("$ref").and_then(Value::as_str) {
        None => true,
        Some(_) if hops == 0 => true,
        Some(target) => match target.strip_prefix('#').and_then(|p| root.pointer(p)) {
            Some(sub) => accepts_null(root, sub, hops - 1),
            None => true,
        },
    };
    type_ok && const_ok && enum_ok && any("anyOf") && any("oneOf") && all_of && ref_ok
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn stripped(schema: Value, arguments: Value) -> Value {
        let mut parsed = Parsed { text: arguments.to_string(), value: arguments };
        drop_absent_nulls(&schema, &mut parsed);
        assert_eq!(parsed.text, parsed.value.to_string());
        parsed.value
    }

    #[test]
    fn optional_non_nullable_nulls_are_absent() {
        let schema = json!({
            "type": "object",
            "properties": {
                "code": {"type": "string"},
                "stdin": {"type": "string"},
                "body": {"type": ["string", "null"]},
                "mode": {"$ref": "#/$defs/Mode"},
                "any": {},
                "nested": {"type": "object", "properties": {"x": {"type": "integer"}}},
            },
            "required": ["code"],
            "$defs": {"Mode": {"enum": ["a", "b"]}},
        });
        assert_eq!(
            stripped(
                schema.clone(),
                json!({"code": null, "stdin": null, "body": null, "mode": null, "any": null, "nested": {"x": null}})
            ),
            json!({"code": null, "body": null, "any": null, "nested": {}}),
            "required, nullable and untyped properties keep their null"
        );
        assert_eq!(stripped(schema, json!({"code": "1", "unknown": null})), json!({"code": "1", "unknown": null}));
    }

    #[test]
    fn cyclic_references_end() {
        let schema = json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {"$ref": "#/$defs/A"}}});
        assert_eq!(stripped(schema, json!({"a": null})), json!({"a": null}));
    }
}
