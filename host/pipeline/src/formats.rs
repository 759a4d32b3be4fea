//! Provider encodings of the model-facing tool list: OpenAI Chat
//! Completions, OpenAI Responses, Anthropic Messages and MCP.
//!
//! Every encoding is built from [`ModelTool`] (and, for MCP only, from
//! [`McpExtras`]); nothing here can see host-side settings.

use crate::projection::{McpExtras, ModelTool};
use crate::session;
use serde_json::{Map, Value, json};
use std::fmt;
use std::str::FromStr;

/// A provider tool-list format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// OpenAI Chat Completions `tools` (`{"type":"function","function":{…}}`).
    OpenAi,
    /// OpenAI Responses `tools` (`{"type":"function","name":…}`).
    OpenAiResponses,
    /// Anthropic Messages `tools` (`input_schema`).
    Anthropic,
    /// MCP `tools/list` entries (`inputSchema`, `outputSchema`, annotations).
    Mcp,
}

impl Format {
    /// Every format.
    pub const ALL: [Format; 4] = [Format::OpenAi, Format::OpenAiResponses, Format::Anthropic, Format::Mcp];

    /// The CLI name.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::OpenAi => "openai",
            Format::OpenAiResponses => "openai-responses",
            Format::Anthropic => "anthropic",
            Format::Mcp => "mcp",
        }
    }

    /// The format's name for people, e.g. in a content block's stand-in
    /// ("… that OpenAI Chat Completions cannot show").
    pub fn title(self) -> &'static str {
        match self {
            Format::OpenAi => "OpenAI Chat Completions",
            Format::OpenAiResponses => "OpenAI Responses",
            Format::Anthropic => "Anthropic Messages",
            Format::Mcp => "MCP",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Format {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Format::ALL
            .into_iter()
            .find(|f| f.as_str() == s)
            .ok_or_else(|| format!("unknown format {s:?}: use one of openai, openai-responses, anthropic, mcp"))
    }
}

/// Encode one tool. `strict` marks the tool as strict for providers that
/// support it (the caller passes a strict-compatible schema).
pub fn encode(format: Format, tool: &ModelTool, extras: Option<&McpExtras>, strict: bool) -> Value {
    let ModelTool { name, description, parameters, defer_loading } = tool;
    let mut value = match format {
        Format::OpenAi => json!({
            "type": "function",
            "function": { "name": name, "description": description, "parameters": parameters, "strict": strict },
        }),
        Format::OpenAiResponses => json!({
            "type": "function", "name": name, "description": description, "parameters": parameters, "strict": strict,
        }),
        Format::Anthropic => {
            let mut tool = json!({ "name": name, "description": description, "input_schema": parameters });
            if strict {
                set(&mut tool, "strict", Value::Bool(true));
            }
            tool
        }
        Format::Mcp => {
            let mut tool = json!({ "name": name, "description": description, "inputSchema": parameters });
            if let Some(McpExtras { output_schema, read_only, session_header, revision, deprecated_session }) = extras {
                if let Some(schema) = tool.get_mut("inputSchema") {
                    if *deprecated_session {
                        add_deprecated_session(schema);
                    }
                    if *session_header {
                        mark_session_header(schema);
                    }
                }
                if let Some(schema) = output_schema.as_ref().filter(|s| s.get("type") == Some(&json!("object"))) {
                    // MCP requires an object-typed outputSchema.
                    set(&mut tool, "outputSchema", schema.clone());
                }
                let mut annotations = Map::new();
                annotations.insert("readOnlyHint".into(), Value::Bool(*read_only));
                annotations.insert("destructiveHint".into(), Value::Bool(!*read_only));
                set(&mut tool, "annotations", Value::Object(annotations));
                set(&mut tool, "_meta", json!({ REVISION_META: revision }));
            }
            tool
        }
    };
    if *defer_loading && matches!(format, Format::OpenAiResponses | Format::Anthropic) {
        set(&mut value, "defer_loading", Value::Bool(true));
    }
    value
}

/// The `_meta` key of an MCP tool that carries its revision
/// ([`McpExtras::revision`]).
pub const REVISION_META: &str = "airlock/revision";

/// Sets `key` of the JSON object `tool` (every tool encoding is one).
fn set(tool: &mut Value, key: &str, value: Value) {
    if let Value::Object(map) = tool {
        map.insert(key.to_owned(), value);
    }
}

/// The `x-mcp-header` name of the `session_id` parameter of a tool that
/// keeps sessions: 2026-07-28 clients send its value as
/// `Mcp-Param-Session`, and rmcp checks that header against the body. (The
/// header kept its name when the parameter was renamed from `session`, so
/// load balancers hashing it need no change.)
pub const SESSION_HEADER: &str = "Session";

/// List `session`, the deprecated name of a top-level `session_id`
/// parameter, beside it: the same schema, never required, marked
/// deprecated (`deprecated: true` and its description), so that a client
/// that checks arguments against the schema before a call (CrewAI,
/// mcp-use, Semantic Kernel) keeps passing calls that use it. The host
/// renames it on arrival (`session::rename_deprecated`).
fn add_deprecated_session(schema: &mut Value) {
    let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) else { return };
    let Some(Value::Object(current)) = properties.get(session::SESSION_ARGUMENT) else { return };
    if properties.contains_key(session::DEPRECATED_SESSION_ARGUMENT) {
        return;
    }
    let mut old = current.clone();
    let described = old.get("description").and_then(Value::as_str).map(|d| format!(" {d}")).unwrap_or_default();
    let description = format!(
        "Deprecated: the old name of `{new}`, accepted until Airlock {release}. Send `{new}` instead, never \
         both.{described}",
        new = session::SESSION_ARGUMENT,
        release = session::DEPRECATED_SESSION_REMOVED_IN,
    );
    old.insert("description".into(), Value::String(description));
    old.insert("deprecated".into(), Value::Bool(true));
    properties.insert(session::DEPRECATED_SESSION_ARGUMENT.to_owned(), Value::Object(old));
}

/// Mark a top-level `session_id` string parameter (`session` for a tool
/// built before the rename, [`session::argument_name`]) with
/// `x-mcp-header`. The
/// annotation is only allowed on a property of one primitive type, so an
/// optional `["string", "null"]` becomes `"string"` (leaving it out is how a
/// model omits it; the host still takes `null` as no session). Any other
/// shape is left unmarked.
fn mark_session_header(schema: &mut Value) {
    let name = session::argument_name(schema);
    let Some(session) = schema.get_mut("properties").and_then(|p| p.get_mut(name)).and_then(Value::as_object_mut)
    else {
        return;
    };
    let string = match session.get("type") {
        Some(Value::String(t)) => t == "string",
        Some(Value::Array(types)) => {
            types.iter().any(|t| t == "string") && types.iter().all(|t| t == "string" || t == "null")
        }
        _ => false,
    };
    if string && !session.contains_key("x-mcp-header") {
        session.insert("type".into(), Value::from("string"));
        session.insert("x-mcp-header".into(), Value::from(SESSION_HEADER));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool() -> ModelTool {
        ModelTool {
            name: "echo".into(),
            description: "d".into(),
            parameters: json!({"type":"object"}),
            defer_loading: false,
        }
    }

    #[test]
    fn formats_round_trip_names() {
        for f in Format::ALL {
            assert_eq!(f.as_str().parse::<Format>(), Ok(f));
        }
        assert!("gemini".parse::<Format>().unwrap_err().contains("openai-responses"));
    }

    #[test]
    fn shapes() {
        let t = tool();
        assert_eq!(encode(Format::OpenAi, &t, None, false)["function"]["parameters"], json!({"type":"object"}));
        assert_eq!(encode(Format::OpenAiResponses, &t, None, true)["strict"], json!(true));
        assert_eq!(encode(Format::Anthropic, &t, None, false)["input_schema"], json!({"type":"object"}));
        let revision = format!("sha256:{}", "ab".repeat(32));
        let extras = McpExtras {
            output_schema: Some(json!({"type":"object"})),
            read_only: true,
            session_header: false,
            revision: revision.clone(),
            deprecated_session: false,
        };
        let mcp = encode(Format::Mcp, &t, Some(&extras), false);
        assert_eq!(mcp["_meta"], json!({"airlock/revision": revision}));
        for format in [Format::OpenAi, Format::OpenAiResponses, Format::Anthropic] {
            assert!(!encode(format, &t, Some(&extras), false).to_string().contains("_meta"), "{format}");
        }
        assert_eq!(mcp["inputSchema"], json!({"type":"object"}));
        assert_eq!(mcp["outputSchema"], json!({"type":"object"}));
        assert_eq!(mcp["annotations"]["readOnlyHint"], json!(true));
    }

    #[test]
    fn the_session_parameter_of_a_tool_with_sessions_is_mirrored_into_a_header() {
        let parameters = json!({"type": "object", "properties": {
            "code": {"type": "string"},
            "session_id": {"type": ["string", "null"], "description": "id"},
        }});
        let t = ModelTool { parameters, ..tool() };
        let extras = McpExtras {
            output_schema: None,
            read_only: false,
            session_header: true,
            revision: String::new(),
            deprecated_session: false,
        };
        let mcp = encode(Format::Mcp, &t, Some(&extras), false);
        assert_eq!(
            mcp["inputSchema"]["properties"]["session_id"],
            json!({"type": "string", "description": "id", "x-mcp-header": "Session"})
        );
        assert_eq!(mcp["inputSchema"]["properties"]["code"], json!({"type": "string"}));
        let without = McpExtras { session_header: false, ..extras.clone() };
        let mcp = encode(Format::Mcp, &t, Some(&without), false);
        assert!(mcp["inputSchema"]["properties"]["session_id"].get("x-mcp-header").is_none());
        // Another shape is not marked (the annotation would make clients drop the tool).
        let object = ModelTool { parameters: json!({"properties": {"session_id": {"type": "object"}}}), ..tool() };
        let mcp = encode(Format::Mcp, &object, Some(&extras), false);
        assert!(mcp["inputSchema"]["properties"]["session_id"].get("x-mcp-header").is_none());
        // A tool built before the rename declares `session`, and that is marked.
        let old = ModelTool { parameters: json!({"properties": {"session": {"type": ["string", "null"]}}}), ..tool() };
        let mcp = encode(Format::Mcp, &old, Some(&extras), false);
        assert_eq!(mcp["inputSchema"]["properties"]["session"]["x-mcp-header"], json!("Session"));
    }

    #[test]
    fn the_deprecated_session_name_is_listed_beside_session_id_marked_deprecated() {
        let parameters = json!({"type": "object", "properties": {
            "code": {"type": "string"},
            "session_id": {"type": ["string", "null"], "description": "The session."},
        }, "required": ["code"], "additionalProperties": false});
        let t = ModelTool { parameters, ..tool() };
        let extras = McpExtras {
            output_schema: None,
            read_only: false,
            session_header: true,
            revision: String::new(),
            deprecated_session: true,
        };
        let mcp = encode(Format::Mcp, &t, Some(&extras), false);
        let schema = &mcp["inputSchema"];
        assert_eq!(
            schema["properties"]["session"],
            json!({
                "type": ["string", "null"],
                "deprecated": true,
                "description": "Deprecated: the old name of `session_id`, accepted until Airlock 0.2.0. Send \
                                `session_id` instead, never both. The session.",
            }),
            "the same schema, not mirrored into the header"
        );
        assert_eq!(schema["properties"]["session_id"]["x-mcp-header"], json!("Session"));
        assert_eq!(schema["required"], json!(["code"]), "never required");
        // Not in the provider formats, nor without the flag.
        assert!(encode(Format::OpenAi, &t, Some(&extras), false).to_string().contains("\"session_id\""));
        assert!(
            !encode(Format::OpenAi, &t, Some(&extras), false)["function"]["parameters"]["properties"]
                .as_object()
                .unwrap()
                .contains_key("session")
        );
        let without = McpExtras { deprecated_session: false, ..extras };
        assert!(encode(Format::Mcp, &t, Some(&without), false)["inputSchema"]["properties"].get("session").is_none());
    }

    #[test]
    fn defer_loading_only_where_supported() {
        let t = ModelTool { defer_loading: true, ..tool() };
        assert_eq!(encode(Format::Anthropic, &t, None, false)["defer_loading"], json!(true));
        assert_eq!(encode(Format::OpenAiResponses, &t, None, false)["defer_loading"], json!(true));
        assert!(encode(Format::OpenAi, &t, None, false).get("defer_loading").is_none());
    }
}
