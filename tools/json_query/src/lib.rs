//! `json_query`: extracts values from a JSON document with a small path
//! syntax (`a.b[0].c`, `items[*].name`, `$`). A pure tool: it touches no
//! files, environment or network.
//!
//! # Security
//!
//! The document and the query come from the model and are untrusted. JSON
//! text is capped by [`MAX_JSON_BYTES`] and parsed by `serde_json`, whose
//! nesting limit (128) keeps recursion bounded; the query is capped by
//! [`MAX_QUERY_CHARS`] and the values returned by [`MAX_RESULTS`].

mod query;

use airlock_guest::{ToolError, export_tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Largest JSON text accepted in a string `json` argument, in bytes.
pub const MAX_JSON_BYTES: usize = 4 * 1024 * 1024;
/// Longest query accepted, in characters.
pub const MAX_QUERY_CHARS: usize = 1000;
/// Most values returned by one call.
pub const MAX_RESULTS: usize = 1000;

/// Arguments of `json_query`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The JSON document: an object, or a string holding JSON text (any
    /// JSON value, an array too), which is parsed first (at most 4 MiB).
    #[schemars(schema_with = "document_schema")]
    pub json: Value,
    /// Path expression. `$` is the whole document (and may start a path);
    /// `.key` or a leading `key` selects an object member (letters, digits,
    /// `_`, `-`); `["any key"]` quotes other keys; `[0]` an array element
    /// (`[-1]` the last); `[*]` or `.*` every element or member value.
    /// Examples: `a.b[0].c`, `items[*].name`, `$["a.b"]`.
    pub query: String,
}

/// Result of `json_query`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct QueryResult {
    /// The matched values in document order (members under `*` in key
    /// order); at most 1000.
    #[schemars(schema_with = "values_schema")]
    pub values: Vec<Value>,
    /// Number of values matched, including any left out by the cap.
    pub count: u64,
    /// True when more than 1000 values matched and only the first are returned.
    pub truncated: bool,
}

/// `json`'s schema: typed, so that client converters keep an object an
/// object (an untyped member becomes a string in some, e.g. mcpadapt). An
/// array travels as JSON text: an array branch needs an `items` schema,
/// and "any value" there is refused by strict converters (Pydantic AI) or
/// narrowed to strings by others (LlamaIndex, Gemini).
fn document_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "description": "The JSON document: an object, or a string holding JSON text (any JSON value, an array \
                        too), which is parsed first (at most 4 MiB).",
        "anyOf": [
            { "type": "object" },
            { "type": "string" }
        ]
    })
}

/// `values`' schema: an array of any JSON values, with `items` an object
/// schema rather than `true`.
fn values_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "description": "The matched values in document order (members under `*` in key order); at most 1000.",
        "type": "array",
        "items": {}
    })
}

/// Run `args.query` over `args.json`: the handler exported as the tool.
pub fn json_query(args: Args) -> Result<QueryResult, ToolError> {
    let query_text = args.query.trim();
    if query_text.chars().count() > MAX_QUERY_CHARS {
        return Err(ToolError::with_code(
            "invalid_arguments",
            format!("the query is longer than {MAX_QUERY_CHARS} characters"),
        ));
    }
    let steps =
        query::parse(query_text).map_err(|err| ToolError::with_code("invalid_query", err.describe(query_text)))?;
    let document = match args.json {
        Value::String(text) => parse_document(&text)?,
        other => other,
    };
    let matched = query::evaluate(&document, &steps).map_err(|miss| {
        ToolError::with_code("not_found", format!("no value at {query_text}: at {}, {}", miss.at, miss.reason))
    })?;
    Ok(QueryResult {
        count: matched.len() as u64,
        truncated: matched.len() > MAX_RESULTS,
        values: matched.into_iter().take(MAX_RESULTS).cloned().collect(),
    })
}

/// Parse a document passed as JSON text.
fn parse_document(text: &str) -> Result<Value, ToolError> {
    if text.len() > MAX_JSON_BYTES {
        return Err(ToolError::with_code(
            "too_large",
            format!("the JSON text is {} bytes; the limit is {MAX_JSON_BYTES} bytes", text.len()),
        ));
    }
    serde_json::from_str(text).map_err(|err| {
        ToolError::with_code(
            "invalid_json",
            format!("`json` is a string, so it must hold JSON text, but it does not parse: {err}. Pass the document itself (an object or array) or its JSON text"),
        )
    })
}

export_tool!(
    name: "json_query",
    description: "Extracts values from a JSON document with a path expression and returns them as an array with their count. `json` is the document (any JSON value, or a string of JSON text). `query` syntax: `$` is the whole document; `.key` (or a leading `key`) selects an object member whose name has only letters, digits, `_` and `-`; `[\"other key\"]` selects any member; `[0]` an array element, `[-1]` the last one; `[*]` or `.*` every element or member value. Examples: `a.b[0].c`, `items[*].name`, `$[\"content-type\"]`. A path without `*` that finds nothing is an error saying where it stopped and what keys exist; with `*`, missing members are skipped. At most 1000 values are returned. Touches no files.",
    handler: json_query,
);

#[cfg(test)]
mod tests;
