//! Provider message formats for tool calls and tool results: read the calls
//! out of an assistant message, write the matching result messages.
//!
//! Trusts nothing in the message: it comes from a model through a client.
//! Every field is checked for shape; a malformed message is an error that
//! says what was expected, and the calls inside it are checked later by the
//! pipeline like any other.

use crate::formats::Format;
use airlock_core::arguments::RawArguments;
use airlock_core::call::{CallRequest, ToolResult};
use serde_json::{Map, Value, json};

/// At most this many calls are taken from one message.
pub const MAX_CALLS_PER_MESSAGE: usize = 128;

/// Read the tool calls of an assistant message (or of a whole API
/// response) in `format`, for `principal`.
///
/// # Errors
///
/// The message does not have the shape of `format`.
pub fn read_calls(format: Format, message: &Value, principal: &str) -> Result<Vec<CallRequest>, String> {
    let calls = match format {
        Format::OpenAi => read_openai(message, principal)?,
        Format::OpenAiResponses => read_openai_responses(message, principal)?,
        Format::Anthropic => read_anthropic(message, principal)?,
        Format::Mcp => {
            return Err(
                "dispatch reads openai, openai-responses or anthropic messages; MCP clients use `airlock serve`".into(),
            );
        }
    };
    if calls.len() > MAX_CALLS_PER_MESSAGE {
        return Err(format!(
            "the message has {} tool calls; at most {MAX_CALLS_PER_MESSAGE} are accepted",
            calls.len()
        ));
    }
    Ok(calls)
}

fn str_field<'a>(value: &'a Value, key: &str, what: &str) -> Result<&'a str, String> {
    value.get(key).and_then(Value::as_str).ok_or_else(|| format!("{what} has no string field `{key}`"))
}

/// OpenAI's `arguments`: JSON text as the model wrote it (or, from some
/// clients, already a JSON value); absent means none.
fn openai_arguments(arguments: Option<&Value>) -> RawArguments {
    match arguments {
        Some(Value::String(text)) => RawArguments::Text(text.clone()),
        Some(other) => RawArguments::Json(other.clone()),
        None => RawArguments::Text(String::new()),
    }
}

fn read_openai(message: &Value, principal: &str) -> Result<Vec<CallRequest>, String> {
    // Accept a whole Chat Completions response as well as its message.
    let message = message.pointer("/choices/0/message").unwrap_or(message);
    let Some(calls) = message.get("tool_calls") else {
        return Err("expected an OpenAI assistant message with `tool_calls` (or a chat completion response)".into());
    };
    let calls = calls.as_array().ok_or("`tool_calls` must be an array")?;
    calls
        .iter()
        .enumerate()
        .map(|(i, call)| {
            let what = format!("tool_calls[{i}]");
            let function = call.get("function").ok_or_else(|| format!("{what} has no `function`"))?;
            let arguments = openai_arguments(function.get("arguments"));
            Ok(CallRequest {
                call_id: str_field(call, "id", &what)?.to_owned(),
                tool: str_field(function, "name", &format!("{what}.function"))?.to_owned(),
                arguments,
                principal: principal.to_owned(),
                attributes: Default::default(),
                trace_parent: None,
                task: None,
            })
        })
        .collect()
}

fn read_openai_responses(message: &Value, principal: &str) -> Result<Vec<CallRequest>, String> {
    let items = match message {
        Value::Array(items) => items,
        other => other
            .get("output")
            .and_then(Value::as_array)
            .ok_or("expected an OpenAI Responses `output` array (or a response with `output`)")?,
    };
    items
        .iter()
        .enumerate()
        .filter(|(_, item)| item.get("type").and_then(Value::as_str) == Some("function_call"))
        .map(|(i, item)| {
            let what = format!("output[{i}]");
            let arguments = openai_arguments(item.get("arguments"));
            Ok(CallRequest {
                call_id: str_field(item, "call_id", &what)?.to_owned(),
                tool: str_field(item, "name", &what)?.to_owned(),
                arguments,
                principal: principal.to_owned(),
                attributes: Default::default(),
                trace_parent: None,
                task: None,
            })
        })
        .collect()
}

fn read_anthropic(message: &Value, principal: &str) -> Result<Vec<CallRequest>, String> {
    let content = message
        .get("content")
        .and_then(Value::as_array)
        .ok_or("expected an Anthropic assistant message with a `content` array")?;
    content
        .iter()
        .enumerate()
        .filter(|(_, block)| block.get("type").and_then(Value::as_str) == Some("tool_use"))
        .map(|(i, block)| {
            let what = format!("content[{i}]");
            Ok(CallRequest {
                call_id: str_field(block, "id", &what)?.to_owned(),
                tool: str_field(block, "name", &what)?.to_owned(),
                arguments: RawArguments::Json(block.get("input").cloned().unwrap_or(Value::Null)),
                principal: principal.to_owned(),
                attributes: Default::default(),
                trace_parent: None,
                task: None,
            })
        })
        .collect()
}

/// The messages that answer the calls, in `format`: one `role: tool`
/// message per call (OpenAI), one `function_call_output` item per call
/// (OpenAI Responses), or one user message with a `tool_result` block per
/// call (Anthropic).
pub fn write_results(format: Format, results: &[ToolResult]) -> Value {
    match format {
        Format::OpenAi => Value::Array(
            results.iter().map(|r| json!({ "role": "tool", "tool_call_id": r.call_id, "content": r.text() })).collect(),
        ),
        Format::OpenAiResponses => Value::Array(
            results
                .iter()
                .map(|r| json!({ "type": "function_call_output", "call_id": r.call_id, "output": r.text() }))
                .collect(),
        ),
        Format::Anthropic | Format::Mcp => {
            let blocks: Vec<Value> = results
                .iter()
                .map(|r| {
                    let mut block = Map::new();
                    block.insert("type".into(), json!("tool_result"));
                    block.insert("tool_use_id".into(), json!(r.call_id));
                    block.insert("content".into(), json!(r.text()));
                    if r.is_error() {
                        block.insert("is_error".into(), Value::Bool(true));
                    }
                    Value::Object(block)
                })
                .collect();
            json!([{ "role": "user", "content": blocks }])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_calls() {
        let message = json!({"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"echo","arguments":"{\"text\":\"hi\"}"}}]});
        let calls = read_calls(Format::OpenAi, &message, "alice").unwrap();
        assert_eq!(calls[0].call_id, "c1");
        assert_eq!(calls[0].tool, "echo");
        assert_eq!(calls[0].arguments, RawArguments::Text("{\"text\":\"hi\"}".into()));
        let response = json!({"choices":[{"message": message}]});
        assert_eq!(read_calls(Format::OpenAi, &response, "alice").unwrap().len(), 1);
    }

    #[test]
    fn anthropic_calls_skip_text_blocks() {
        let message = json!({"role":"assistant","content":[{"type":"text","text":"let me"},{"type":"tool_use","id":"t1","name":"echo","input":{"text":"hi"}}]});
        let calls = read_calls(Format::Anthropic, &message, "bob").unwrap();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].arguments, RawArguments::Json(json!({"text":"hi"})));
        assert_eq!(calls[0].principal, "bob");
    }

    #[test]
    fn responses_calls() {
        let output = json!({"output":[{"type":"reasoning"},{"type":"function_call","call_id":"f1","name":"echo","arguments":"{}"}]});
        let calls = read_calls(Format::OpenAiResponses, &output, "p").unwrap();
        assert_eq!(calls[0].call_id, "f1");
    }

    #[test]
    fn malformed_messages_say_what_was_expected() {
        assert!(read_calls(Format::OpenAi, &json!({"content":"hi"}), "p").unwrap_err().contains("tool_calls"));
        assert!(
            read_calls(Format::OpenAi, &json!({"tool_calls":[{"function":{"name":"x"}}]}), "p")
                .unwrap_err()
                .contains("`id`")
        );
        assert!(read_calls(Format::Anthropic, &json!([]), "p").unwrap_err().contains("content"));
        assert!(
            read_calls(Format::Anthropic, &json!({"content":[{"type":"tool_use","id":"t"}]}), "p")
                .unwrap_err()
                .contains("`name`")
        );
    }
}
