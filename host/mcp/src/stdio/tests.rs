use super::*;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, DuplexStream};

async fn lines(input: &[u8], max: usize) -> Vec<(Line, Vec<u8>)> {
    let mut read = BufReader::with_capacity(7, input);
    let mut line = Vec::new();
    let mut out = Vec::new();
    loop {
        let got = read_line(&mut read, &mut line, max).await.unwrap();
        if got == Line::End {
            return out;
        }
        out.push((got, line.clone()));
    }
}

#[tokio::test]
async fn lines_are_capped_and_the_rest_is_skipped() {
    let got = lines(b"short\n0123456789abcdef\nok\nlast", 10).await;
    assert_eq!(
        got,
        vec![
            (Line::Complete, b"short".to_vec()),
            (Line::TooLong, vec![]),
            (Line::Complete, b"ok".to_vec()),
            (Line::Complete, b"last".to_vec()),
        ]
    );
    assert_eq!(lines(b"0123456789\n", 10).await, vec![(Line::Complete, b"0123456789".to_vec())]);
    assert_eq!(lines(b"01234567890", 10).await, vec![(Line::TooLong, vec![])]);
}

/// A transport over in-memory pipes: (transport, client's writer,
/// client's reader).
fn pipes() -> (StdioTransport, DuplexStream, DuplexStream) {
    let (client_out, server_in) = tokio::io::duplex(1 << 20);
    let (server_out, client_in) = tokio::io::duplex(1 << 20);
    (StdioTransport::new(server_in, server_out), client_out, client_in)
}

async fn next_line(read: &mut BufReader<DuplexStream>) -> Value {
    let mut line = String::new();
    read.read_line(&mut line).await.unwrap();
    serde_json::from_str(&line).unwrap()
}

#[tokio::test]
async fn bad_lines_are_answered_and_good_ones_delivered() {
    let (mut transport, mut client_out, client_in) = pipes();
    let mut client_in = BufReader::new(client_in);
    client_out
        .write_all(b"\xff\nnot json\n[]\n\n{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\"}\r\n")
        .await
        .unwrap();
    for code in [-32700, -32700, -32600] {
        let reply = next_line(&mut client_in).await;
        assert_eq!(reply["error"]["code"], code, "{reply}");
        assert_eq!(reply["id"], Value::Null);
    }
    let Some(JsonRpcMessage::Request(ping)) = transport.receive().await else { panic!("the ping is delivered") };
    assert_eq!(ping.id, RequestId::Number(5));
    transport.close().await.unwrap();
}

#[tokio::test]
async fn requests_in_flight_are_capped_until_their_replies_are_written() {
    let (mut transport, mut client_out, mut client_in) = pipes();
    let total = MAX_STDIO_REQUESTS_IN_FLIGHT + 10;
    for id in 0..total {
        client_out
            .write_all(format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}\n").as_bytes())
            .await
            .unwrap();
    }
    let mut received = Vec::new();
    for _ in 0..MAX_STDIO_REQUESTS_IN_FLIGHT {
        let Some(JsonRpcMessage::Request(request)) = transport.receive().await else { panic!("a request") };
        received.push(request.id);
    }
    // No permit is left: the next request is not read until a reply is
    // written.
    let more = tokio::time::timeout(Duration::from_millis(200), transport.receive()).await;
    assert!(more.is_err(), "a request beyond the cap was delivered");
    let reply = TxJsonRpcMessage::<RoleServer>::response(
        rmcp::model::ServerResult::empty(()),
        received.first().cloned().unwrap(),
    );
    transport.send(reply).await.unwrap();
    let mut first = [0u8; 16];
    client_in.read_exact(&mut first).await.unwrap();
    let Some(JsonRpcMessage::Request(next)) = transport.receive().await else { panic!("the next request") };
    assert_eq!(next.id, RequestId::Number(MAX_STDIO_REQUESTS_IN_FLIGHT as i64));
    transport.close().await.unwrap();
}

#[tokio::test]
async fn calls_read_are_counted_until_answered_or_cancelled() {
    let (mut transport, mut client_out, mut client_in) = pipes();
    let unanswered = transport.unanswered();
    let call = |id: u32| {
        format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"echo\",\"arguments\":{{}}}}}}\n"
        )
    };
    let lines = [call(1), call(2), call(3), "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}\n".to_owned()];
    for line in &lines {
        client_out.write_all(line.as_bytes()).await.unwrap();
    }
    for _ in &lines {
        let Some(JsonRpcMessage::Request(_)) = transport.receive().await else { panic!("a request") };
    }
    // Shutdown waits for these three calls, not for the ping.
    assert_eq!(unanswered.count(), 3);
    let reply = TxJsonRpcMessage::<RoleServer>::response(rmcp::model::ServerResult::empty(()), RequestId::Number(1));
    transport.send(reply).await.unwrap();
    let mut first = [0u8; 16];
    client_in.read_exact(&mut first).await.unwrap();
    assert_eq!(unanswered.count(), 2);
    client_out
        .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":2}}\n")
        .await
        .unwrap();
    let Some(JsonRpcMessage::Notification(_)) = transport.receive().await else { panic!("the cancellation") };
    assert_eq!(unanswered.count(), 1);
    transport.close().await.unwrap();
}

#[tokio::test]
async fn a_reused_id_in_flight_is_refused_and_a_cancel_frees_it() {
    let (mut transport, mut client_out, client_in) = pipes();
    let mut client_in = BufReader::new(client_in);
    let ping = b"{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"ping\"}\n";
    client_out.write_all(ping).await.unwrap();
    client_out.write_all(ping).await.unwrap();
    let Some(JsonRpcMessage::Request(_)) = transport.receive().await else { panic!("the first ping") };
    let reply = next_line(&mut client_in).await;
    assert_eq!(reply["error"]["code"], -32600, "{reply}");
    assert_eq!(reply["id"], json!("a"));
    client_out
        .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":\"a\"}}\n")
        .await
        .unwrap();
    client_out.write_all(ping).await.unwrap();
    let Some(JsonRpcMessage::Notification(_)) = transport.receive().await else { panic!("the cancel") };
    let Some(JsonRpcMessage::Request(again)) = transport.receive().await else { panic!("the id is free again") };
    assert_eq!(again.id, RequestId::String("a".into()));
    transport.close().await.unwrap();
}
