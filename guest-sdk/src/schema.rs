//! The JSON Schemas a tool declares, derived from its Rust types, in the one
//! shape every client converter takes.
//!
//! Agent frameworks and provider SDKs convert a tool's `parameters` into
//! their own types before a model sees them, and many of them are strict
//! about what they understand. So the schema of the arguments follows three
//! rules, for every tool built with this crate:
//!
//! - **No references.** Every subschema is written in place (schemars'
//!   `inline_subschemas`): a converter that does not follow `$ref` into
//!   `$defs` would otherwise hand a provider a dangling reference. A type
//!   that contains itself cannot be written in place; only then is a
//!   `$defs` entry kept, for the recursion. An enum of unit variants is
//!   written as `type` and `enum` (its variants' doc comments join the
//!   description), the form converters expect for a choice.
//! - **Every optional member accepts `null`.** A member left out of
//!   `required` (an `Option<T>`, or a field with `#[serde(default)]`) also
//!   accepts `null`, the way schemars writes an `Option<T>`: `null` is added
//!   to its `type` (`["string", "null"]`) and to its `enum`, or the schema
//!   becomes `anyOf: [<schema>, {"type": "null"}]` when it has no single
//!   type. Strict converters make every member required, and `null` is then
//!   the only way a model can leave one out. A `null` for an optional member
//!   means the same as leaving it out: [`drop_absent_nulls`] removes it
//!   before the arguments are deserialized, so a `#[serde(default)]` field
//!   gets its default.
//! - **No `default` keyword.** OpenAI's strict mode refuses `default`, and
//!   converters disagree on what a `default` beside a nullable type means.
//!   A default other than `null` is restated in the member's `description`
//!   (`Default: true.`) unless the description already mentions its
//!   default, so the model still learns it; write the default in the doc
//!   comment ("(default false)") to choose the words.
//!
//! The schema of the result keeps the first rule only: it stays with the
//! host (never sent to a model) and describes what the tool serializes.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value};

/// Local `$ref`s followed in one lookup of [`drop_absent_nulls`] before it
/// gives up (and leaves the value as it is); only a recursive type has
/// references at all.
pub const MAX_REF_HOPS: usize = 16;

/// Keywords that only describe a schema; they stay on the outside when a
/// schema is wrapped in `anyOf` to accept `null`.
const ANNOTATIONS: &[&str] = &["description", "title", "deprecated", "examples", "readOnly", "writeOnly"];

/// Keywords whose subschemas decide what a schema accepts; a schema with one
/// of them is wrapped in `anyOf` to accept `null` (adding `null` to its own
/// `type` would not be enough).
const COMBINATORS: &[&str] = &["$ref", "anyOf", "oneOf", "allOf", "not", "if", "then", "else"];

/// The schema of `T` as this crate generates it: draft 2020-12, every
/// subschema in place, no `$schema` marker (providers reject or ignore it).
fn generated<T: JsonSchema>() -> Value {
    let settings = SchemaSettings::draft2020_12().with(|s| {
        s.inline_subschemas = true;
        s.meta_schema = None;
    });
    settings.into_generator().into_root_schema_for::<T>().to_value()
}

/// The `parameters` schema a tool with arguments `T` declares: the rules of
/// this module applied (see the module documentation). Use it in a tool's
/// unit tests to check what the host and the model will see.
///
/// ```
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Args {
///     /// Ignore case.
///     #[serde(default)]
///     case_insensitive: bool,
/// }
///
/// let schema = airlock_guest::schema::parameters::<Args>();
/// let member = &schema["properties"]["case_insensitive"];
/// assert_eq!(member["type"], serde_json::json!(["boolean", "null"]));
/// assert_eq!(member["description"], "Ignore case. Default: false.");
/// assert!(member.get("default").is_none());
/// ```
pub fn parameters<T: JsonSchema>() -> Value {
    let mut schema = generated::<T>();
    normalize(&mut schema);
    schema
}

/// The `output` schema a tool with results `T` declares (every subschema in
/// place; optional members as schemars writes them).
pub fn output<T: JsonSchema>() -> Value {
    generated::<T>()
}

/// Apply the rules for optional members and defaults to every subschema of
/// `schema`, innermost first.
fn normalize(schema: &mut Value) {
    let Value::Object(object) = schema else { return };
    for key in ["properties", "$defs", "patternProperties"] {
        if let Some(Value::Object(map)) = object.get_mut(key) {
            map.values_mut().for_each(normalize);
        }
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(list)) = object.get_mut(key) {
            list.iter_mut().for_each(normalize);
        }
    }
    for key in ["items", "additionalProperties", "not", "if", "then", "else"] {
        if let Some(sub) = object.get_mut(key) {
            normalize(sub);
        }
    }
    fold_constants(object);
    restate_default(object);
    let required: Vec<String> = object
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default();
    if let Some(Value::Object(properties)) = object.get_mut("properties") {
        for (name, member) in properties.iter_mut() {
            if !required.contains(name) {
                allow_null(member);
            }
        }
    }
}

/// A `oneOf` whose branches are all constants of one type (what schemars
/// writes for an enum whose variants have doc comments) becomes `type` and
/// `enum`, the variants' doc comments moved into the description as
/// `` `value`: text ``. That is the form strict converters expect for a
/// choice, and the one `null` can be added to like any other type.
fn fold_constants(object: &mut Map<String, Value>) {
    let Some(Value::Array(branches)) = object.get("oneOf") else { return };
    let mut values = Vec::new();
    let mut notes = Vec::new();
    let mut kind = None;
    for branch in branches {
        let Some(branch) = branch.as_object() else { return };
        let Some(value) = branch.get("const") else { return };
        if branch.keys().any(|k| !matches!(k.as_str(), "const" | "type" | "description" | "title")) {
            return;
        }
        let Some(Value::String(this)) = branch.get("type") else { return };
        if *kind.get_or_insert(this) != this || values.contains(value) {
            return;
        }
        if let Some(text) = branch.get("description").and_then(Value::as_str) {
            let shown = value.as_str().map_or_else(|| value.to_string(), str::to_owned);
            notes.push(format!("`{shown}`: {text}"));
        }
        values.push(value.clone());
    }
    let Some(kind) = kind.cloned() else { return };
    if object.get("type").is_some_and(|t| t != &Value::String(kind.clone())) {
        return;
    }
    object.remove("oneOf");
    object.insert("type".into(), Value::String(kind));
    object.insert("enum".into(), Value::Array(values));
    if !notes.is_empty() {
        let notes = notes.join(" ");
        let text = match object.get("description").and_then(Value::as_str) {
            Some(description) => format!("{description} {notes}"),
            None => notes,
        };
        object.insert("description".into(), Value::String(text));
    }
}

/// Remove a `default` keyword; restate one other than `null` in the
/// description unless that already speaks of a default.
fn restate_default(object: &mut Map<String, Value>) {
    let Some(default) = object.remove("default") else { return };
    if default.is_null() {
        return;
    }
    let description = object.get("description").and_then(Value::as_str).unwrap_or_default();
    if description.to_lowercase().contains("default") {
        return;
    }
    let note = format!("Default: {default}.");
    let text = if description.is_empty() { note } else { format!("{description} {note}") };
    object.insert("description".into(), Value::String(text));
}

/// Make `schema` accept `null` as well, the way schemars writes an
/// `Option<T>`.
fn allow_null(schema: &mut Value) {
    let Value::Object(object) = schema else { return };
    let constrains = |key: &&str| object.contains_key(*key);
    let plain_any_of = object.contains_key("anyOf")
        && !COMBINATORS.iter().filter(|k| **k != "anyOf").any(constrains)
        && !["type", "enum", "const"].iter().any(constrains);
    if plain_any_of {
        if let Some(Value::Array(branches)) = object.get_mut("anyOf")
            && !branches.iter().any(is_null_schema)
        {
            branches.push(null_schema());
        }
        return;
    }
    if COMBINATORS.iter().any(constrains) {
        let mut outer = Map::new();
        for key in ANNOTATIONS {
            if let Some(value) = object.remove(*key) {
                outer.insert((*key).to_owned(), value);
            }
        }
        let inner = Value::Object(std::mem::take(object));
        outer.insert("anyOf".into(), Value::Array(vec![inner, null_schema()]));
        *object = outer;
        return;
    }
    match object.get_mut("type") {
        Some(Value::String(kind)) if kind != "null" => {
            let kind = std::mem::take(kind);
            object.insert("type".into(), Value::Array(vec![Value::String(kind), "null".into()]));
        }
        Some(Value::Array(kinds)) if !kinds.iter().any(|k| k == "null") => kinds.push("null".into()),
        _ => {}
    }
    if let Some(constant) = object.remove("const") {
        let values = if constant.is_null() { vec![constant] } else { vec![constant, Value::Null] };
        object.insert("enum".into(), Value::Array(values));
    } else if let Some(Value::Array(values)) = object.get_mut("enum")
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
}

fn null_schema() -> Value {
    let mut object = Map::new();
    object.insert("type".into(), "null".into());
    Value::Object(object)
}

fn is_null_schema(schema: &Value) -> bool {
    schema.get("type").is_some_and(|t| t == "null")
}

/// Remove the members of `arguments` that are `null` where `schema` (a
/// `parameters` schema from [`parameters`]) makes them optional: such a
/// `null` means "left out", so a `#[serde(default)]` field gets its default
/// and an `Option` field `None`. Nested objects and array items are handled
/// the same way; a member the schema requires keeps its `null`.
pub fn drop_absent_nulls(schema: &Value, arguments: &mut Value) {
    strip(schema, schema, arguments);
}

fn strip(root: &Value, schema: &Value, value: &mut Value) {
    let Some(schema) = resolve(root, schema) else { return };
    match value {
        Value::Object(members) => {
            let Some(properties) = schema.get("properties").and_then(Value::as_object) else { return };
            let required = |name: &str| {
                schema
                    .get("required")
                    .and_then(Value::as_array)
                    .is_some_and(|names| names.iter().any(|n| n.as_str() == Some(name)))
            };
            members.retain(|name, member| !(member.is_null() && properties.contains_key(name) && !required(name)));
            for (name, member) in members.iter_mut() {
                if let Some(sub) = properties.get(name) {
                    strip(root, nullable_branch(root, sub), member);
                }
            }
        }
        Value::Array(items) => {
            if let Some(sub) = schema.get("items").filter(|s| s.is_object()) {
                for item in items {
                    strip(root, nullable_branch(root, sub), item);
                }
            }
        }
        _ => {}
    }
}

/// The schema a non-null value of `schema` is checked against: the first
/// branch of an `anyOf: [<schema>, {"type": "null"}]` that [`allow_null`]
/// made, else `schema` itself.
fn nullable_branch<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
    let Some(resolved) = resolve(root, schema) else { return schema };
    match resolved.get("anyOf").and_then(Value::as_array).map(Vec::as_slice) {
        Some([inner, null]) if is_null_schema(null) => inner,
        _ => schema,
    }
}

/// Follow a chain of local `$ref`s (`#/…`) to the schema it names; `None`
/// when a reference cannot be followed within [`MAX_REF_HOPS`].
fn resolve<'a>(root: &'a Value, schema: &'a Value) -> Option<&'a Value> {
    let mut current = schema;
    for _ in 0..MAX_REF_HOPS {
        let Some(target) = current.get("$ref").and_then(Value::as_str) else { return Some(current) };
        current = root.pointer(target.strip_prefix('#')?)?;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    /// How to treat a file that exists.
    #[derive(Debug, Default, Deserialize, JsonSchema, PartialEq)]
    #[serde(rename_all = "snake_case")]
    enum Mode {
        /// Replace it.
        #[default]
        Overwrite,
        /// Add to its end.
        Append,
    }

    fn yes() -> bool {
        true
    }

    #[derive(Debug, Deserialize, JsonSchema, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Args {
        /// The path.
        path: String,
        /// `overwrite` (default) or `append`.
        #[serde(default)]
        mode: Mode,
        /// Follow redirects.
        #[serde(default = "yes")]
        follow: bool,
        /// A count.
        count: Option<u32>,
        /// Nested options.
        #[serde(default)]
        inner: Option<Inner>,
        /// Tags.
        #[serde(default)]
        tags: Vec<Inner>,
    }

    #[derive(Debug, Default, Deserialize, JsonSchema, PartialEq)]
    struct Inner {
        /// Case-insensitive (default false).
        #[serde(default)]
        fold: bool,
    }

    /// A type that contains itself cannot be written in place.
    #[derive(Debug, Deserialize, JsonSchema)]
    struct Tree {
        /// The children.
        #[serde(default)]
        children: Vec<Tree>,
    }

    fn walk(schema: &Value, found: &mut Vec<String>) {
        match schema {
            Value::Object(object) => {
                found.extend(object.keys().filter(|k| ["$ref", "$defs", "default"].contains(&k.as_str())).cloned());
                object.values().for_each(|v| walk(v, found));
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, found)),
            _ => {}
        }
    }

    #[test]
    fn small_types_are_inlined_and_optional_members_accept_null_without_a_default() {
        let schema = parameters::<Args>();
        let mut found = Vec::new();
        walk(&schema, &mut found);
        assert_eq!(found, Vec::<String>::new(), "{schema:#}");
        let p = &schema["properties"];
        assert_eq!(schema["required"], json!(["path"]));
        assert_eq!(p["path"]["type"], "string", "a required member is left as it is");
        assert_eq!(p["mode"]["type"], json!(["string", "null"]), "{:#}", p["mode"]);
        assert_eq!(p["mode"]["enum"], json!(["overwrite", "append", null]));
        assert_eq!(
            p["mode"]["description"],
            "`overwrite` (default) or `append`. `overwrite`: Replace it. `append`: Add to its end.",
            "it already names its default"
        );
        assert_eq!(
            p["follow"],
            json!({"type": ["boolean", "null"], "description": "Follow redirects. Default: true."})
        );
        assert_eq!(p["count"]["type"], json!(["integer", "null"]));
        assert_eq!(p["inner"]["type"], json!(["object", "null"]));
        assert_eq!(p["inner"]["properties"]["fold"]["type"], json!(["boolean", "null"]));
        assert_eq!(p["tags"]["type"], json!(["array", "null"]));
        assert_eq!(p["tags"]["items"]["properties"]["fold"]["type"], json!(["boolean", "null"]));
    }

    #[test]
    fn a_null_optional_member_is_read_as_left_out() {
        let schema = parameters::<Args>();
        let mut arguments = json!({
            "path": "/w/a", "mode": null, "follow": null, "count": null,
            "inner": {"fold": null}, "tags": [{"fold": null}, {"fold": true}],
        });
        drop_absent_nulls(&schema, &mut arguments);
        assert_eq!(arguments, json!({"path": "/w/a", "inner": {}, "tags": [{}, {"fold": true}]}));
        let args: Args = serde_json::from_value(arguments).unwrap();
        assert_eq!(args.mode, Mode::Overwrite);
        assert!(args.follow, "the field's own default, not false");
        assert_eq!(args.tags, vec![Inner { fold: false }, Inner { fold: true }]);
        // A required member keeps its null (and deserializing then fails).
        let mut required_null = json!({"path": null});
        drop_absent_nulls(&schema, &mut required_null);
        assert_eq!(required_null, json!({"path": null}));
    }

    #[test]
    fn recursive_types_keep_their_references() {
        let schema = parameters::<Tree>();
        // The root refers to itself as `#`; a recursive type below the root
        // would be a `$defs` entry.
        let children = &schema["properties"]["children"];
        assert_eq!(children["type"], json!(["array", "null"]));
        assert_eq!(children["items"], json!({"$ref": "#"}), "{schema:#}");
        let mut arguments = json!({"children": [{"children": null}, {"children": [{"children": null}]}]});
        drop_absent_nulls(&schema, &mut arguments);
        assert_eq!(arguments, json!({"children": [{}, {"children": [{}]}]}));
        let tree: Tree = serde_json::from_value(arguments).unwrap();
        assert_eq!(tree.children.len(), 2);
        // Below the root, the recursive type is the one `$defs` entry.
        #[derive(Deserialize, JsonSchema)]
        struct Holder {
            /// A tree.
            #[allow(dead_code)]
            tree: Option<Tree>,
        }
        let schema = parameters::<Holder>();
        assert_eq!(
            schema["$defs"].as_object().map(|d| d.keys().map(String::as_str).collect::<Vec<_>>()),
            Some(vec!["Tree"]),
            "{schema:#}"
        );
        let tree = &schema["properties"]["tree"];
        assert_eq!(tree["type"], json!(["object", "null"]), "the first level is written in place");
        assert_eq!(tree["properties"]["children"]["items"], json!({"$ref": "#/$defs/Tree"}), "{schema:#}");
    }

    #[test]
    fn schemas_without_a_single_type_are_wrapped() {
        let mut any_of = json!({"description": "D.", "anyOf": [{"type": "object"}, {"type": "string"}]});
        allow_null(&mut any_of);
        assert_eq!(
            any_of,
            json!({"description": "D.", "anyOf": [{"type": "object"}, {"type": "string"}, {"type": "null"}]})
        );
        let mut reference = json!({"description": "D.", "$ref": "#/$defs/T"});
        allow_null(&mut reference);
        assert_eq!(reference, json!({"description": "D.", "anyOf": [{"$ref": "#/$defs/T"}, {"type": "null"}]}));
        let mut constant = json!({"const": "a"});
        allow_null(&mut constant);
        assert_eq!(constant, json!({"enum": ["a", null]}));
        let mut anything = json!({"description": "Any JSON value."});
        allow_null(&mut anything);
        assert_eq!(anything, json!({"description": "Any JSON value."}), "it accepts null already");
    }
}
