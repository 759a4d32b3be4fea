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
use airlock_core::content::{Block, Content, ModelText};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
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
                progress: None,
                log: None,
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
                progress: None,
                log: None,
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
                progress: None,
                log: None,
                task: None,
            })
        })
        .collect()
}

/// The messages that answer the calls, in `format`: one `role: tool`
/// message per call (OpenAI), one `function_call_output` item per call
/// (OpenAI Responses), or one user message with a `tool_result` block per
/// call (Anthropic).
///
/// A result's content blocks (contract 0.3.0) follow its text. OpenAI's
/// tool messages and function outputs are text: a text block's text is
/// added, and every other block is one line saying what it is and that
/// the format cannot show it ([`Block::stand_in`]). Anthropic's
/// `tool_result` takes text and image blocks: a picture goes as an image
/// block (base64), anything else but text as that line.
pub fn write_results(format: Format, results: &[ToolResult]) -> Value {
    match format {
        Format::OpenAi => Value::Array(
            results
                .iter()
                .map(|r| json!({ "role": "tool", "tool_call_id": r.call_id, "content": text_with_blocks(r, format) }))
                .collect(),
        ),
        Format::OpenAiResponses => Value::Array(
            results
                .iter()
                .map(|r| {
                    json!({ "type": "function_call_output", "call_id": r.call_id, "output": text_with_blocks(r, format) })
                })
                .collect(),
        ),
        Format::Anthropic | Format::Mcp => {
            let blocks: Vec<Value> = results
                .iter()
                .map(|r| {
                    let mut block = Map::new();
                    block.insert("type".into(), json!("tool_result"));
                    block.insert("tool_use_id".into(), json!(r.call_id));
                    block.insert("content".into(), anthropic_content(r));
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

/// The blocks a successful result carries (none for a failure).
fn blocks(result: &ToolResult) -> &[Block] {
    result.result().map_or(&[], |success| success.blocks.as_slice())
}

/// A block as a text-only format reads it: a text block's text (within
/// what the model may still read of the result, `budget`), a line saying
/// what any other block is.
fn block_text(block: &Block, format: Format, budget: &mut ModelText) -> String {
    match block.content() {
        Content::Text(text) => budget.take(text),
        _ => block.stand_in(format.title()),
    }
}

/// What a text-only format reads of a result: its text, then each of its
/// blocks ([`block_text`]), separated by blank lines.
fn text_with_blocks(result: &ToolResult, format: Format) -> String {
    let mut text = result.text();
    let mut budget = ModelText::after(&text);
    for block in blocks(result) {
        text.push_str("\n\n");
        text.push_str(&block_text(block, format, &mut budget));
    }
    text
}

/// A `tool_result`'s `content`: the result's text alone (as a string, the
/// shape of a result without blocks), or a text block and then one block
/// per content block, pictures as image blocks.
fn anthropic_content(result: &ToolResult) -> Value {
    let attached = blocks(result);
    if attached.is_empty() {
        return json!(result.text());
    }
    let text = result.text();
    let mut budget = ModelText::after(&text);
    let mut content = vec![json!({"type": "text", "text": text})];
    for block in attached {
        content.push(match block.content() {
            Content::Image(media) => json!({
                "type": "image",
                "source": {"type": "base64", "media_type": media.mime_type, "data": BASE64.encode(&media.data)},
            }),
            _ => json!({"type": "text", "text": block_text(block, Format::Anthropic, &mut budget)}),
        });
    }
    Value::Array(content)
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

    fn with_blocks() -> ToolResult {
        use airlock_core::content::{Link, Media};
        use airlock_core::outcome::{Authority, CallOutcome, Success};
        let image = Block::new(
            Content::Image(Media { mime_type: "image/png".into(), data: vec![1, 2, 3] }),
            "sha256:aa".into(),
        );
        let text = Block::new(Content::Text("a caption".into()), "sha256:bb".into());
        let link = Block::new(
            Content::Link(Link {
                uri: "https://example.com/r.pdf".into(),
                name: "r.pdf".into(),
                title: None,
                description: None,
                mime_type: Some("application/pdf".into()),
                size: None,
            }),
            "sha256:cc".into(),
        );
        let success = Success { blocks: vec![image, text, link], ..Success::new(json!({"n": 1})) };
        ToolResult::new("c1", "chart", CallOutcome::Ran { authority: Authority::Allowed, result: Ok(success) })
    }

    #[test]
    fn openai_reads_text_blocks_and_a_line_for_each_other_block() {
        let messages = write_results(Format::OpenAi, &[with_blocks()]);
        let content = messages[0]["content"].as_str().unwrap();
        let lines: Vec<&str> = content.split("\n\n").collect();
        assert_eq!(lines[0], r#"{"n":1}"#);
        assert_eq!(
            lines[1],
            "[the tool returned an image (image/png, 3 bytes, sha256:aa) that OpenAI Chat Completions cannot show]"
        );
        assert_eq!(lines[2], "a caption");
        assert_eq!(
            lines[3],
            "[the tool returned a resource link to https://example.com/r.pdf (r.pdf, application/pdf) that OpenAI \
             Chat Completions cannot show]"
        );
        let output = &write_results(Format::OpenAiResponses, &[with_blocks()])[0]["output"];
        assert!(output.as_str().unwrap().contains("that OpenAI Responses cannot show"), "{output}");
    }

    #[test]
    fn anthropic_carries_pictures_as_image_blocks() {
        let messages = write_results(Format::Anthropic, &[with_blocks()]);
        let content = &messages[0]["content"][0]["content"];
        assert_eq!(content[0], json!({"type": "text", "text": r#"{"n":1}"#}));
        assert_eq!(
            content[1],
            json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AQID"}})
        );
        assert_eq!(content[2], json!({"type": "text", "text": "a caption"}));
        assert!(content[3]["text"].as_str().unwrap().contains("that Anthropic Messages cannot show"), "{content}");
        // Without blocks, the content stays the string it always was.
        let plain = ToolResult::new(
            "c2",
            "echo",
            airlock_core::outcome::CallOutcome::Ran {
                authority: airlock_core::outcome::Authority::Allowed,
                result: Ok(airlock_core::outcome::Success::new(json!("hi"))),
            },
        );
        assert_eq!(write_results(Format::Anthropic, &[plain])[0]["content"][0]["content"], json!("hi"));
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
