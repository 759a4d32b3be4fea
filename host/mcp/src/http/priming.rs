//! SSE priming events only for the revisions that define them.
//!
//! rmcp opens every event stream with a priming event (SEP-1699, MCP
//! 2025-11-25): an id to resume from and empty `data`. A client of an
//! earlier revision parses each event's `data` as a JSON-RPC message:
//! the TypeScript SDK before 1.23 runs `JSON.parse("")`, reports
//! `Unexpected end of JSON input`, and clients built on it (Gemini CLI)
//! drop the connection, so they never see a tool. As the TypeScript SDK's
//! own server does, priming events go only to clients at 2025-11-25 or
//! later; the streams of older ones lose them (and the `retry` hint they
//! carry, which those revisions do not define), nothing else.
//!
//! A request's revision is the `protocolVersion` an `initialize` asks for
//! (rmcp answers a version it knows with that version), else its
//! `MCP-Protocol-Version` header, which every later request of a
//! 2025-06-18 or newer client carries; without one a client is taken to
//! speak 2025-03-26, as the specification says.

use super::super::revision;
use axum::http::HeaderMap;
use bytes::Bytes;
use futures::{Stream, StreamExt as _};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage, ProtocolVersion};

const PROTOCOL_VERSION_HEADER: &str = "mcp-protocol-version";

/// What an `initialize` asked for, recorded on its request by the body
/// check (`body::read_message`).
#[derive(Debug, Clone)]
pub(super) struct Initialize(pub(super) String);

impl Initialize {
    /// The `initialize` request's asked-for version, if `message` is one.
    pub(super) fn of(message: &ClientJsonRpcMessage) -> Option<Self> {
        match message {
            JsonRpcMessage::Request(request) => match &request.request {
                ClientRequest::InitializeRequest(initialize) => {
                    Some(Initialize(initialize.params.protocol_version.as_str().to_owned()))
                }
                _ => None,
            },
            _ => None,
        }
    }
}

/// Whether the client of a request with `headers` (and, for an
/// `initialize`, what it asked for) understands priming events.
pub(super) fn understood(headers: &HeaderMap, initialize: Option<&Initialize>) -> bool {
    let revision = match initialize {
        Some(Initialize(asked)) => asked.as_str(),
        None => match headers.get(PROTOCOL_VERSION_HEADER).and_then(|value| value.to_str().ok()) {
            Some(header) => header.trim(),
            None => ProtocolVersion::V_2025_03_26.as_str(),
        },
    };
    revision::named_has(revision, &revision::SSE_PRIMING)
}

/// `stream` (an SSE body, one event per chunk as rmcp writes them) as a
/// client that has priming events (`understood`) or not gets it: without
/// them for the second.
pub(super) fn for_client<S, E>(stream: S, understood: bool) -> impl Stream<Item = Result<Bytes, E>> + Unpin
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
{
    stream.filter(move |chunk| std::future::ready(understood || !chunk.as_ref().is_ok_and(|chunk| is_priming(chunk))))
}

/// Whether `chunk` is one SSE event whose `data` is empty: a priming event
/// (`data: ` with an `id` and a `retry`), or a bare `retry` hint. An
/// event carrying a message always has data; a comment (a keep-alive)
/// has no `data` line at all.
fn is_priming(chunk: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(chunk) else { return false };
    let Some(event) = text.strip_suffix("\n\n") else { return false };
    if event.contains("\n\n") {
        return false;
    }
    let mut data = event.lines().filter_map(|line| line.strip_prefix("data:")).peekable();
    data.peek().is_some() && data.all(|value| value.trim().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn only_a_lone_event_with_empty_data_is_priming() {
        assert!(is_priming(b"data: \nid: 0\nretry: 3000\n\n"));
        assert!(is_priming(b"data: \nretry: 3000\n\n"));
        assert!(!is_priming(b"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\nid: 1/0\n\n"));
        assert!(!is_priming(b":\n\n"), "a keep-alive comment stays");
        assert!(!is_priming(b"data: \nid: 0\n\ndata: {}\n\n"), "two events in one chunk are left alone");
        assert!(!is_priming(b"data: "), "not a whole event");
    }

    #[test]
    fn priming_is_for_2025_11_25_and_later() {
        let with = |version: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(PROTOCOL_VERSION_HEADER, HeaderValue::from_str(version).unwrap());
            headers
        };
        assert!(!understood(&HeaderMap::new(), None), "no header: 2025-03-26");
        assert!(!understood(&with("2025-06-18"), None));
        assert!(understood(&with("2025-11-25"), None));
        assert!(understood(&with("2026-07-28"), None));
        let asked = |version: &str| understood(&HeaderMap::new(), Some(&Initialize(version.to_owned())));
        assert!(!asked("2025-06-18"));
        assert!(asked("2025-11-25"));
    }

    #[tokio::test]
    async fn the_stream_keeps_everything_but_priming() {
        let events = ["data: \nid: 0\nretry: 3000\n\n", "data: {\"id\":1}\nid: 0/1\n\n", ":\n\n"];
        let stream = futures::stream::iter(events.map(|e| Ok::<_, std::io::Error>(Bytes::from_static(e.as_bytes()))));
        let kept: Vec<Bytes> = for_client(stream, false).map(|chunk| chunk.unwrap()).collect().await;
        assert_eq!(kept, [Bytes::from_static(events[1].as_bytes()), Bytes::from_static(events[2].as_bytes())]);
    }
}
