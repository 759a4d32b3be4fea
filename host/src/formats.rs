//! Provider encodings of the model-facing tool list: OpenAI Chat
//! Completions, OpenAI Responses, Anthropic Messages and MCP.
//!
//! Every encoding is built from [`ModelTool`] (and, for MCP only, from
//! [`McpExtras`]); nothing here can see host-side settings.

use crate::projection::{McpExtras, ModelTool};
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
            if let Some(McpExtras { output_schema, read_only }) = extras {
                if let Some(schema) = output_schema.as_ref().filter(|s| s.get("type") == Some(&json!("object"))) {
                    // MCP requires an object-typed outputSchema.
                    set(&mut tool, "outputSchema", schema.clone());
                }
                let mut annotations = Map::new();
                annotations.insert("readOnlyHint".into(), Value::Bool(*read_only));
                annotations.insert("destructiveHint".into(), Value::Bool(!*read_only));
                set(&mut tool, "annotations", Value::Object(annotations));
            }
            tool
        }
    };
    if *defer_loading && matches!(format, Format::OpenAiResponses | Format::Anthropic) {
        set(&mut value, "defer_loading", Value::Bool(true));
    }
    value
}

/// Sets `key` of the JSON object `tool` (every tool encoding is one).
fn set(tool: &mut Value, key: &str, value: Value) {
    if let Value::Object(map) = tool {
        map.insert(key.to_owned(), value);
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
        let extras = McpExtras { output_schema: Some(json!({"type":"object"})), read_only: true };
        let mcp = encode(Format::Mcp, &t, Some(&extras), false);
        assert_eq!(mcp["inputSchema"], json!({"type":"object"}));
        assert_eq!(mcp["outputSchema"], json!({"type":"object"}));
        assert_eq!(mcp["annotations"]["readOnlyHint"], json!(true));
    }

    #[test]
    fn defer_loading_only_where_supported() {
        let t = ModelTool { defer_loading: true, ..tool() };
        assert_eq!(encode(Format::Anthropic, &t, None, false)["defer_loading"], json!(true));
        assert_eq!(encode(Format::OpenAiResponses, &t, None, false)["defer_loading"], json!(true));
        assert!(encode(Format::OpenAi, &t, None, false).get("defer_loading").is_none());
    }
}
