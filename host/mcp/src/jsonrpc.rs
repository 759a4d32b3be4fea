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
//! A request for a method served here whose params are not that method's
//! is `-32602` Invalid params with the request's id, never `-32601`
//! Method not found: the method exists, its params are wrong. rmcp reads
//! such a request as a custom request (its catch-all for methods it does
//! not know), which the handler answers with [`params_problem`]'s words;
//! params that are not even an object cannot be read as one, and are
//! answered here before rmcp sees them, as is a `tools/list` whose
//! `cursor` is not a string (rmcp would drop its params and list every
//! tool). Either way the message names the member that is wrong and what
//! is accepted.
//!
//! A rejection is a JSON-RPC *response*: a peer that feeds it back (a
//! misconnected pipe, say) sends a message that parses and that rmcp drops
//! (an error without an id answers nothing), so rejections cannot loop.

use airlock_core::arguments::{kind_of, text_depth};
use rmcp::ErrorData;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientJsonRpcMessage, ClientRequest, ErrorCode, InitializeRequestParams,
    JsonObject, JsonRpcMessage, JsonRpcRequest, PaginatedRequestParams, RequestId,
};
use serde::Deserialize as _;
use serde_json::{Value, json};

/// Deepest nesting of arrays and objects accepted in one message. It is
/// above a call's [`MAX_ARGUMENT_DEPTH`](airlock_pipeline::MAX_ARGUMENT_DEPTH) plus the
/// envelope (`{"params": {"arguments": …}}`), so that arguments a little too
/// deep get the pipeline's `invalid_arguments` result, which a model can act
/// on, and below serde_json's own recursion limit (128).
pub const MAX_MESSAGE_DEPTH: usize = 100;

/// Most characters of a client's string (a cursor, a method name) quoted
/// back in an error message; the rest is cut off.
const MAX_QUOTED_CHARS: usize = 64;

/// The methods served here that rmcp reads into types of their own: a
/// request for one of them that rmcp reads as a custom request has params
/// that are not the method's (`-32602`). Any other method rmcp does not
/// know is not served (`-32601`).
const TYPED_METHODS: [&str; 9] = [
    "initialize",
    "ping",
    "server/discover",
    "subscriptions/listen",
    "tools/call",
    "tools/list",
    "tasks/get",
    "tasks/update",
    "tasks/cancel",
];

/// A well-formed `tools/call`'s params, for error messages.
const CALL_EXAMPLE: &str = r#"{"name": "echo", "arguments": {"text": "hi"}}"#;

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

    /// `-32602`: a request for a method served here whose params are not
    /// that method's; `detail` says what is wrong and what is accepted.
    pub(super) fn invalid_params(id: Option<RequestId>, detail: &str) -> Self {
        Rejection { code: ErrorCode::INVALID_PARAMS, id, message: format!("Invalid params: {detail}") }
    }

    /// The same error for rmcp to send, as a handler's answer: rmcp gives
    /// it the id of the request it answers (the id here is not used).
    pub(super) fn into_error(self) -> ErrorData {
        ErrorData::new(self.code, self.message, None)
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
        Ok(message) => return dropped_cursor(text, &message).map_or(Ok(message), Err),
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
            // A request whose envelope is right (version, id, method) and
            // that rmcp cannot read has params that are not the method's:
            // params that are not an object (rmcp's catch-all reads only
            // objects), or an object with a `_meta` that is not one.
            if id.is_some()
                && members.get("jsonrpc").and_then(Value::as_str) == Some("2.0")
                && let Some(method) = members.get("method").and_then(Value::as_str)
                && let Some(detail) = params_problem(method, members.get("params"))
            {
                return Err(Rejection::invalid_params(id, &detail));
            }
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

/// rmcp reads a `tools/list` whose `cursor` is not a string as one without
/// params (it drops params it cannot read), which would answer the whole
/// list; such a request is refused here with the request's id. The text
/// is parsed again only when it names a cursor.
fn dropped_cursor(text: &str, message: &ClientJsonRpcMessage) -> Option<Rejection> {
    let JsonRpcMessage::Request(JsonRpcRequest { id, request: ClientRequest::ListToolsRequest(list), .. }) = message
    else {
        return None;
    };
    if list.params.is_some() || !text.contains("\"cursor\"") {
        return None;
    }
    let value: Value = serde_json::from_str(text).ok()?;
    let params = value.get("params");
    let cursor = params.and_then(|params| params.get("cursor"));
    if cursor.is_none_or(Value::is_null) {
        return None;
    }
    Some(Rejection::invalid_params(Some(id.clone()), &list_problem(params)))
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

/// What is wrong with `params` of a request for `method` that rmcp could
/// not read as that method's params, and what is accepted; `None` when
/// `method` is not one of the [`TYPED_METHODS`] served here.
pub(super) fn params_problem(method: &str, params: Option<&Value>) -> Option<String> {
    if !TYPED_METHODS.contains(&method) {
        return None;
    }
    Some(match method {
        "tools/call" => call_problem(params),
        "tools/list" => list_problem(params),
        "tasks/get" | "tasks/update" | "tasks/cancel" => task_problem(method, params),
        _ => other_problem(method, params),
    })
}

/// The answer to a `tools/list` with a cursor: this server never issues
/// one (every tool comes in one page, without `nextCursor`), so no cursor
/// is one it issued.
pub(super) fn unknown_cursor(cursor: &str) -> String {
    format!(
        "tools/list params: `cursor` {} is not a cursor this server issued; it lists every tool in one page and \
         gives no `nextCursor`, so send tools/list without a cursor",
        quoted(cursor)
    )
}

/// The answer to a request for a method that is not served here; a long
/// method name is cut off.
pub(super) fn method_not_found(method: &str) -> ErrorData {
    ErrorData::new(
        ErrorCode::METHOD_NOT_FOUND,
        format!("Method not found: {} is not a method this server serves", quoted(method)),
        None,
    )
}

/// `text` as a JSON string, cut off after [`MAX_QUOTED_CHARS`] characters.
fn quoted(text: &str) -> String {
    let mut kept: String = text.chars().take(MAX_QUOTED_CHARS).collect();
    if kept.len() < text.len() {
        kept.push('…');
    }
    Value::String(kept).to_string()
}

/// The params as an object, or what is wrong with them (`required`: the
/// method needs params).
fn params_object<'a>(
    method: &str,
    params: Option<&'a Value>,
    required: bool,
    example: &str,
) -> Result<&'a JsonObject, String> {
    match params {
        Some(Value::Object(members)) => Ok(members),
        None | Some(Value::Null) if required => Err(format!("{method} needs params: an object such as {example}")),
        None | Some(Value::Null) => Err(format!("{method} params are not valid; send an object such as {example}")),
        Some(other) => Err(format!("{method} params must be an object such as {example}, not {}", kind_of(other))),
    }
}

/// A `_meta` that is not an object (nor absent).
fn meta_problem(method: &str, members: &JsonObject) -> Option<String> {
    match members.get("_meta") {
        None | Some(Value::Null | Value::Object(_)) => None,
        Some(other) => Some(format!("{method} params: `_meta` must be an object, not {}", kind_of(other))),
    }
}

fn call_problem(params: Option<&Value>) -> String {
    let members = match params_object("tools/call", params, true, CALL_EXAMPLE) {
        Ok(members) => members,
        Err(problem) => return problem,
    };
    match members.get("name") {
        Some(Value::String(_)) => {}
        None => {
            return "tools/call params: `name` is missing; it must be a string naming a tool (one tools/list gives)"
                .to_owned();
        }
        Some(other) => {
            return format!(
                "tools/call params: `name` must be a string naming a tool (one tools/list gives), not {}",
                kind_of(other)
            );
        }
    }
    match members.get("arguments") {
        None | Some(Value::Null | Value::Object(_)) => {}
        Some(Value::String(_)) => {
            return "tools/call params: `arguments` must be an object of the tool's arguments (as its inputSchema \
                    describes), not a string; send the object itself, not JSON text"
                .to_owned();
        }
        Some(other) => {
            return format!(
                "tools/call params: `arguments` must be an object of the tool's arguments (as its inputSchema \
                 describes), not {}",
                kind_of(other)
            );
        }
    }
    if let Some(problem) = meta_problem("tools/call", members) {
        return problem;
    }
    match members.get("requestState") {
        None | Some(Value::Null | Value::String(_)) => {}
        Some(other) => {
            return format!(
                "tools/call params: `requestState` must be the string an input_required result gave, not {}",
                kind_of(other)
            );
        }
    }
    match members.get("inputResponses") {
        None | Some(Value::Null | Value::Object(_)) => {}
        Some(other) => {
            return format!(
                "tools/call params: `inputResponses` must be an object of answers keyed as the input_required \
                 result's `inputRequests`, not {}",
                kind_of(other)
            );
        }
    }
    // What is left (an answer in inputResponses that is not one): serde's
    // own words, which name the member.
    match CallToolRequestParams::deserialize(Value::Object(members.clone())) {
        Err(err) => format!("tools/call params: {err}"),
        Ok(_) => format!("tools/call params are not valid; send an object such as {CALL_EXAMPLE}"),
    }
}

fn list_problem(params: Option<&Value>) -> String {
    let members = match params_object("tools/list", params, false, "{}") {
        Ok(members) => members,
        Err(problem) => return problem,
    };
    match members.get("cursor") {
        None | Some(Value::Null) => {}
        Some(Value::String(cursor)) => return unknown_cursor(cursor),
        Some(other) => {
            return format!(
                "tools/list params: `cursor` must be a string a tools/list result gave as `nextCursor`, not {}; \
                 this server lists every tool in one page and gives none, so send tools/list without a cursor",
                kind_of(other)
            );
        }
    }
    if let Some(problem) = meta_problem("tools/list", members) {
        return problem;
    }
    match PaginatedRequestParams::deserialize(Value::Object(members.clone())) {
        Err(err) => format!("tools/list params: {err}"),
        Ok(_) => "tools/list params are not valid; send tools/list without params".to_owned(),
    }
}

/// What is wrong with the params of a `tasks/*` request.
fn task_problem(method: &str, params: Option<&Value>) -> String {
    let update = method == "tasks/update";
    let example = if update { r#"{"taskId": "…", "inputResponses": {}}"# } else { r#"{"taskId": "…"}"# };
    let members = match params_object(method, params, true, example) {
        Ok(members) => members,
        Err(problem) => return problem,
    };
    match members.get("taskId") {
        Some(Value::String(_)) => {}
        None => return format!("{method} params: `taskId` is missing; it must be the string tools/call gave"),
        Some(other) => {
            return format!("{method} params: `taskId` must be the string tools/call gave, not {}", kind_of(other));
        }
    }
    if let Some(problem) = meta_problem(method, members) {
        return problem;
    }
    match members.get("inputResponses") {
        Some(Value::Object(_)) => {}
        None if update => {
            return "tasks/update params: `inputResponses` is missing; it must be an object of answers keyed as \
                    tasks/get's `inputRequests`"
                .to_owned();
        }
        None => {}
        Some(other) => {
            return format!(
                "{method} params: `inputResponses` must be an object of answers keyed as tasks/get's \
                 `inputRequests`, not {}",
                kind_of(other)
            );
        }
    }
    format!("{method} params are not valid; send an object such as {example}")
}

fn other_problem(method: &str, params: Option<&Value>) -> String {
    let members = match params_object(method, params, method == "initialize", "{}") {
        Ok(members) => members,
        Err(problem) => return problem,
    };
    if let Some(problem) = meta_problem(method, members) {
        return problem;
    }
    if method == "initialize"
        && let Err(err) = InitializeRequestParams::deserialize(Value::Object(members.clone()))
    {
        return format!(
            "initialize params: {err}; send an object such as {{\"protocolVersion\": \"2025-11-25\", \
             \"capabilities\": {{}}, \"clientInfo\": {{\"name\": \"client\", \"version\": \"1\"}}}}"
        );
    }
    format!("{method} params are not the ones the MCP specification gives {method}")
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
            "[".repeat(airlock_pipeline::MAX_ARGUMENT_DEPTH + 1),
            "]".repeat(airlock_pipeline::MAX_ARGUMENT_DEPTH + 1)
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
    fn params_that_are_not_an_object_are_invalid_params_with_the_id() {
        for (bad, id, says) in [
            (&br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"echo"}"#[..], json!(1), "not a string"),
            (br#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":["echo",{}]}"#, json!("a"), "not an array"),
            (br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":7}"#, json!(2), "not a number"),
            (br#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":true}"#, json!(3), "not a boolean"),
            (
                br#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","_meta":5}}"#,
                json!(4),
                "`_meta`",
            ),
        ] {
            let reply = rejected(bad);
            assert_eq!(reply["error"]["code"], -32602, "{reply}");
            assert_eq!(reply["id"], id, "{reply}");
            let message = reply["error"]["message"].as_str().unwrap();
            assert!(message.starts_with("Invalid params: ") && message.contains(says), "{message}");
        }
        // The envelope is checked first; a method not served is not about params.
        assert_eq!(
            rejected(br#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":"x"}"#)["error"]["code"],
            -32600
        );
        assert_eq!(rejected(br#"{"jsonrpc":"2.0","id":1,"method":"nope/nope","params":"x"}"#)["error"]["code"], -32600);
        // A notification gets no answer from rmcp; what cannot be read is -32600 with no id.
        assert_eq!(rejected(br#"{"jsonrpc":"2.0","method":"tools/call","params":"x"}"#)["id"], Value::Null);
    }

    /// rmcp reads these as custom requests (they reach the handler's
    /// catch-all), and the handler answers them with [`params_problem`].
    #[test]
    fn malformed_calls_reach_the_catch_all_and_are_explained() {
        for (params, says) in [
            (None, "tools/call needs params"),
            (Some(json!(null)), "tools/call needs params"),
            (Some(json!({"arguments": {}})), "`name` is missing; it must be a string naming a tool"),
            (Some(json!({"name": 5})), "`name` must be a string naming a tool (one tools/list gives), not a number"),
            (Some(json!({"name": null})), "`name` must be a string naming a tool (one tools/list gives), not null"),
            (Some(json!({"name": "echo", "arguments": "{\"text\":\"hi\"}"})), "not a string; send the object itself"),
            (Some(json!({"name": "echo", "arguments": ["hi"]})), "`arguments` must be an object"),
            (Some(json!({"name": "echo", "arguments": 3})), "not a number"),
            (Some(json!({"name": "echo", "requestState": 3})), "`requestState` must be the string"),
            (Some(json!({"name": "echo", "inputResponses": []})), "`inputResponses` must be an object"),
        ] {
            let mut message = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call"});
            if let Some(params) = &params {
                message["params"] = params.clone();
            }
            let parsed = parse(message.to_string().as_bytes()).unwrap_or_else(|r| panic!("{params:?}: {r:?}"));
            let JsonRpcMessage::Request(request) = parsed else { panic!("a request") };
            let ClientRequest::CustomRequest(custom) = request.request else {
                panic!("{params:?}: {:?}", request.request)
            };
            assert_eq!(custom.method, "tools/call");
            let problem = params_problem(&custom.method, custom.params.as_ref()).expect("tools/call is served");
            assert!(problem.contains(says), "{params:?}: {problem}");
        }
        let custom = |line: &str| match parse(line.as_bytes()).unwrap() {
            JsonRpcMessage::Request(JsonRpcRequest { request: ClientRequest::CustomRequest(custom), .. }) => custom,
            other => panic!("{other:?}"),
        };
        // rmcp would read these as lists without params; they are refused here.
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":5}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":{"page":2},"_meta":{}}}"#,
        ] {
            let reply = rejected(line.as_bytes());
            assert_eq!((reply["id"].clone(), reply["error"]["code"].clone()), (json!(1), json!(-32602)), "{reply}");
            let message = reply["error"]["message"].as_str().unwrap();
            assert!(message.contains("`cursor` must be a string") && message.contains("without a cursor"), "{message}");
        }
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":null}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"note":"cursor"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"abc"}}"#,
        ] {
            assert!(parse(line.as_bytes()).is_ok(), "{line}");
        }
        let other = custom(r#"{"jsonrpc":"2.0","id":1,"method":"prompts/nope","params":{}}"#);
        assert_eq!(params_problem(&other.method, other.params.as_ref()), None, "not served: -32601");
    }

    #[test]
    fn a_cursor_is_quoted_cut_off() {
        let long = "c".repeat(1000);
        let message = unknown_cursor(&long);
        assert!(message.contains(&format!("\"{}…\"", "c".repeat(MAX_QUOTED_CHARS))), "{message}");
        assert!(message.len() < 400, "{message}");
        assert!(unknown_cursor("abc").contains(r#"`cursor` "abc" is not a cursor this server issued"#));
        let error = method_not_found(&"m".repeat(500));
        assert_eq!(error.code, ErrorCode::METHOD_NOT_FOUND);
        assert!(error.message.len() < 200, "{}", error.message);
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
