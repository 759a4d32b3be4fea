//! One JSON-RPC message as a client sent it, checked before rmcp reads it;
//! used by both transports (stdio lines, HTTP `POST` bodies).
//!
//! Trusts nothing: a message is bytes from a client. It is accepted when it
//! is UTF-8, nests at most [`MAX_MESSAGE_DEPTH`] arrays and objects, parses
//! as JSON, and is one JSON-RPC 2.0 message rmcp can read: a request, a
//! notification or a response, as an object. What is not gets the answer
//! JSON-RPC 2.0 prescribes, as a [`Rejection`]: `-32700` Parse error with
//! `"id": null` when it is not JSON (or nests too deep to be parsed safely),
//! `-32600` Invalid Request when it is JSON but not a message, with the
//! request's `id` when one can be read from it.
//!
//! Batches (a JSON array of messages) are refused with `-32600`: MCP
//! 2025-03-26 allowed them, 2025-06-18 removed them, and rmcp reads none.
//!
//! A rejection is a JSON-RPC *response*: a peer that feeds it back (a
//! misconnected pipe, say) sends a message that parses and that rmcp drops
//! (an error without an id answers nothing), so rejections cannot loop.

use airlock_core::arguments::{kind_of, text_depth};
use rmcp::model::{
    CallToolRequest, ClientJsonRpcMessage, ClientRequest, ErrorCode, JsonRpcMessage, JsonRpcRequest, RequestId,
};
use serde::Deserialize as _;
use serde_json::{Value, json};

/// Deepest nesting of arrays and objects accepted in one message. It is
/// above a call's [`MAX_ARGUMENT_DEPTH`](airlock_host::MAX_ARGUMENT_DEPTH) plus the
/// envelope (`{"params": {"arguments": …}}`), so that arguments a little too
/// deep get the pipeline's `invalid_arguments` result, which a model can act
/// on, and below serde_json's own recursion limit (128).
pub const MAX_MESSAGE_DEPTH: usize = 100;

/// A message refused before rmcp saw it, and the JSON-RPC error that
/// answers it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Rejection {
    code: ErrorCode,
    id: Option<RequestId>,
    message: String,
}

impl Rejection {
    /// `-32700`: not JSON. The id cannot be known.
    pub(super) fn parse_error(message: String) -> Self {
        Rejection { code: ErrorCode::PARSE_ERROR, id: None, message: format!("Parse error: {message}") }
    }

    /// `-32600`: JSON, but not a message that is accepted.
    pub(super) fn invalid_request(id: Option<RequestId>, message: String) -> Self {
        Rejection { code: ErrorCode::INVALID_REQUEST, id, message: format!("Invalid Request: {message}") }
    }

    /// `-32600` for a message over `limit` bytes (`what` names the framing:
    /// "line", "request body").
    pub(super) fn too_large(what: &str, limit: usize) -> Self {
        Self::invalid_request(
            None,
            format!("the {what} is over {limit} bytes; send one JSON-RPC message of at most {limit} bytes"),
        )
    }

    /// The JSON-RPC error code.
    pub(super) fn code(&self) -> i32 {
        self.code.0
    }

    /// What the client is told (the host's words; parse errors may quote
    /// a few bytes of what it sent).
    pub(super) fn message(&self) -> &str {
        &self.message
    }

    /// The error response, with `"id": null` when the request's id is not
    /// known (JSON-RPC 2.0 §5; rmcp's own type would leave the member out).
    pub(super) fn to_json(&self) -> Value {
        let id = match &self.id {
            Some(id) => serde_json::to_value(id).unwrap_or(Value::Null),
            None => Value::Null,
        };
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": self.code.0, "message": self.message}})
    }
}

/// Check and parse one message (the bytes of one stdio line without its
/// line ending, or one HTTP body).
///
/// # Errors
///
/// A [`Rejection`] saying what was wrong and what is accepted.
pub(super) fn parse(bytes: &[u8]) -> Result<ClientJsonRpcMessage, Rejection> {
    let text = std::str::from_utf8(bytes).map_err(|err| {
        Rejection::parse_error(format!(
            "the message is not UTF-8 (invalid byte at offset {}); send JSON text in UTF-8",
            err.valid_up_to()
        ))
    })?;
    if text_depth(text, MAX_MESSAGE_DEPTH) > MAX_MESSAGE_DEPTH {
        return Err(Rejection::parse_error(format!(
            "the message nests arrays and objects more than {MAX_MESSAGE_DEPTH} levels deep; at most {MAX_MESSAGE_DEPTH} are accepted"
        )));
    }
    if let Some(call) = as_call(text) {
        return Ok(call);
    }
    // The common case parses once; the value is built only to explain a
    // failure.
    let err = match serde_json::from_str::<ClientJsonRpcMessage>(text) {
        Ok(message) => return Ok(message),
        Err(err) => err,
    };
    let value: Value = serde_json::from_str(text).map_err(|err| {
        Rejection::parse_error(format!(
            "the message is not JSON ({err}); send one JSON-RPC 2.0 message as a JSON object"
        ))
    })?;
    Err(match &value {
        Value::Array(_) => Rejection::invalid_request(
            None,
            "JSON-RPC batches are not accepted (MCP 2025-06-18 removed them); send each message on its own".to_owned(),
        ),
        Value::Object(members) => {
            let id = members.get("id").and_then(|id| RequestId::deserialize(id).ok());
            // The error of a typed parse of the value, which names what is
            // missing or wrong, rather than that of the text.
            let detail = ClientJsonRpcMessage::deserialize(&value).err().unwrap_or(err);
            Rejection::invalid_request(
                id,
                format!(
                    "not a JSON-RPC 2.0 request, notification or response ({detail}); send an object such as \
                     {{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"ping\"}}"
                ),
            )
        }
        other => {
            Rejection::invalid_request(None, format!("a JSON-RPC message is a JSON object, not {}", kind_of(other)))
        }
    })
}

/// A `tools/call` request, parsed as that type directly. rmcp's message
/// type is an untagged enum of every message kind and method: it buffers
/// the message and tries each in turn, and for the message sent most that
/// was the largest part of reading it. The pieces are rmcp's own types and
/// their `Deserialize`, so the value is the one the general path builds;
/// what this does not parse (another method, a malformed call) takes the
/// general path, which accepts or explains it.
fn as_call(text: &str) -> Option<ClientJsonRpcMessage> {
    if !text.contains("\"tools/call\"") {
        return None;
    }
    let call = serde_json::from_str::<JsonRpcRequest<CallToolRequest>>(text).ok()?;
    Some(JsonRpcMessage::Request(JsonRpcRequest::new(call.id, ClientRequest::CallToolRequest(call.request))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::ClientNotification;

    #[test]
    fn a_call_parsed_directly_is_the_message_the_general_path_builds() {
        let lines = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}"#,
            r#"{"id":"a","method":"tools/call","jsonrpc":"2.0","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"a":[1,{"b":null}]},"_meta":{"progressToken":"p","traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","io.modelcontextprotocol/protocolVersion":"2026-07-28"}},"extra":true}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{},"requestState":"s","inputResponses":{"confirm":{"action":"accept"}}}}"#,
        ];
        for line in lines {
            let direct = as_call(line).unwrap_or_else(|| panic!("parsed directly: {line}"));
            let general = serde_json::from_str::<ClientJsonRpcMessage>(line).expect("the general path reads it");
            assert!(
                matches!(&direct, JsonRpcMessage::Request(r) if matches!(r.request, ClientRequest::CallToolRequest(_)))
            );
            assert!(
                matches!(&general, JsonRpcMessage::Request(r) if matches!(r.request, ClientRequest::CallToolRequest(_)))
            );
            assert_eq!(serde_json::to_value(&direct).unwrap(), serde_json::to_value(&general).unwrap(), "{line}");
            assert_eq!(format!("{direct:?}"), format!("{general:?}"), "{line}");
        }
        // What is not a well-formed call is left to the general path.
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2.0","id":{"x":1},"method":"tools/call","params":{"name":"echo"}}"#,
        ] {
            assert!(as_call(line).is_none(), "{line}");
            assert_eq!(
                parse(line.as_bytes()).is_ok(),
                serde_json::from_str::<ClientJsonRpcMessage>(line).is_ok(),
                "{line}"
            );
        }
    }

    fn rejected(bytes: &[u8]) -> Value {
        match parse(bytes) {
            Ok(message) => panic!("accepted {message:?}"),
            Err(rejection) => rejection.to_json(),
        }
    }

    #[test]
    fn messages_are_accepted() {
        let ping = parse(br#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#).unwrap();
        assert!(matches!(ping, JsonRpcMessage::Request(r) if matches!(r.request, ClientRequest::PingRequest(_))));
        let cancelled =
            parse(br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a"}}"#).unwrap();
        assert!(matches!(
            cancelled,
            JsonRpcMessage::Notification(n) if matches!(n.notification, ClientNotification::CancelledNotification(_))
        ));
        assert!(matches!(parse(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#).unwrap(), JsonRpcMessage::Response(_)));
        // Arguments just over the pipeline's depth cap still reach it.
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo","arguments":{}1{}}}}}"#,
            "[".repeat(airlock_host::MAX_ARGUMENT_DEPTH + 1),
            "]".repeat(airlock_host::MAX_ARGUMENT_DEPTH + 1)
        );
        parse(deep.as_bytes()).unwrap();
    }

    #[test]
    fn what_is_not_json_is_a_parse_error_with_a_null_id() {
        let deep = format!("{}{}", "[".repeat(MAX_MESSAGE_DEPTH + 1), "]".repeat(MAX_MESSAGE_DEPTH + 1));
        let beyond_serde = "[".repeat(200);
        for bad in [&b"\xff\xfe{}"[..], b"not json", b"{\"jsonrpc\":\"2.0\",", deep.as_bytes(), beyond_serde.as_bytes()]
        {
            let reply = rejected(bad);
            assert_eq!(reply["error"]["code"], -32700, "{reply}");
            assert_eq!(reply["id"], Value::Null, "{reply}");
            assert!(reply.as_object().unwrap().contains_key("id"), "the id member is present");
            assert_eq!(reply["jsonrpc"], "2.0");
        }
        assert!(rejected(b"\xff").to_string().contains("not UTF-8"));
        assert!(rejected(deep.as_bytes()).to_string().contains("at most 100"));
    }

    #[test]
    fn json_that_is_not_a_message_is_an_invalid_request() {
        for (bad, id) in [
            (&br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#[..], Value::Null),
            (b"[]", Value::Null),
            (b"42", Value::Null),
            (b"\"ping\"", Value::Null),
            (br#"{"hello":"world"}"#, Value::Null),
            (br#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#, json!(3)),
            (br#"{"jsonrpc":"2.0","id":"abc"}"#, json!("abc")),
            (br#"{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}"#, Value::Null),
        ] {
            let reply = rejected(bad);
            assert_eq!(reply["error"]["code"], -32600, "{reply}");
            assert_eq!(reply["id"], id, "{reply}");
        }
        assert!(rejected(b"[]").to_string().contains("batches are not accepted"));
    }

    #[test]
    fn too_large_names_the_cap() {
        let reply = Rejection::too_large("request body", 4 << 20).to_json();
        assert_eq!(reply["error"]["code"], -32600);
        assert!(reply["error"]["message"].as_str().unwrap().contains("request body is over 4194304 bytes"));
    }

    #[test]
    fn brackets_in_strings_do_not_count() {
        assert_eq!(text_depth(r#"{"a":"[[[[\"[[["}"#, MAX_MESSAGE_DEPTH), 1);
        assert_eq!(text_depth("[[1],[[2]]]", MAX_MESSAGE_DEPTH), 3);
    }
}
