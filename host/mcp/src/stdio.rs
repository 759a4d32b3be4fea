//! MCP over stdio: newline-delimited JSON-RPC on stdin and stdout, framed
//! here and handed to rmcp as its [`Transport`].
//!
//! Trusts nothing the client writes, nor that the client reads:
//!
//! - A line is read into memory only up to [`MAX_STDIO_MESSAGE_BYTES`]; the
//!   rest of a longer line is read and discarded up to its newline, never
//!   buffered. Each line is checked by [`jsonrpc::parse`]: one that is not
//!   UTF-8, not JSON, nests too deep, is too long or is JSON but not a
//!   JSON-RPC message is answered on stdout with the JSON-RPC error for it
//!   (`-32700`/`-32600`, `"id": null` unless the id could be read), and the
//!   next line is read. Only parsed messages reach rmcp.
//! - Replies are bounded. rmcp's service loop does not wait for a reply to
//!   be written before it reads the next message: it spawns a task per
//!   request and one per reply it sends, so a client that writes requests
//!   and never reads would make it queue replies without end. Here every
//!   request holds one of [`MAX_STDIO_REQUESTS_IN_FLIGHT`] permits from the
//!   moment it is read until its reply has been written to stdout (or the
//!   client cancelled it, after which rmcp sends no reply); with no permit
//!   left, stdin is not read, and a client that keeps writing blocks on its
//!   full pipe. Messages to stdout wait in a queue of
//!   [`MAX_QUEUED_REPLIES`]; the transport's `send` waits for room.
//!   A client whose requests in flight all wait for its own answers
//!   (elicitation) is read again when a confirmation times out
//!   ([`CONFIRM_TIMEOUT`](super::CONFIRM_TIMEOUT)).
//! - A request whose id is that of a request still in flight is refused
//!   (`-32600` with that id): its reply could not be told apart.
//!
//! - Once rmcp has set the session up, a `tools/call` is not handed to
//!   rmcp's service loop: it runs in a task of its own through rmcp's
//!   request handling and its answer is queued for stdout directly (see
//!   `direct`). It holds its permit the same way.
//!
//! - End of input: every `tools/call` read gets [`CLOSE_DRAIN`] to answer,
//!   then those still running are cancelled, and rmcp is told that the
//!   input ended only once their answers are written (see
//!   [`end_of_input`]). This holds for the calls rmcp runs too (those read
//!   before the session was up, or a 2026-07-28 client's first request):
//!   rmcp's own drain cancels its handlers when it ends and drops what
//!   they answer after, so a call it ran that was still running then was
//!   cancelled without its `cancelled` result ever being written.
//!
//! What is trusted: rmcp, to send at most one reply per request it was
//! given, and to send none for a request the client cancelled.

mod direct;

use super::jsonrpc::{self, Rejection};
use direct::Direct;
pub(super) use direct::Opener;
use rmcp::RoleServer;
use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, ClientRequest, GetExtensions as _, JsonRpcMessage, RequestId,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufRead, AsyncBufReadExt as _, AsyncRead, AsyncWrite, AsyncWriteExt as _, BufReader};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Largest JSON-RPC message (one line, without its line ending) read on
/// stdio. A longer line is discarded as it is read and answered with
/// `-32600`; the connection stays open.
pub const MAX_STDIO_MESSAGE_BYTES: usize = 4 << 20;
/// Most requests read from stdin whose replies have not yet been written
/// to stdout. When they are all in flight, stdin is not read.
pub const MAX_STDIO_REQUESTS_IN_FLIGHT: usize = 64;
/// Most messages (replies, notifications, requests to the client) waiting
/// to be written to stdout.
pub const MAX_QUEUED_REPLIES: usize = 64;
/// How long calls in flight get to answer once stdin has closed (rmcp's
/// own drain at the end of input) before they are cancelled.
const CLOSE_DRAIN: Duration = Duration::from_secs(5);
/// How long closing the transport waits for queued messages to be written
/// before it gives up on a client that does not read.
const CLOSE_FLUSH_TIMEOUT: Duration = Duration::from_secs(5);
/// Messages parsed and not yet taken by rmcp. Small: rmcp takes one as soon
/// as it is idle, and requests are bounded by permits anyway.
const PARSED_QUEUE: usize = 4;
/// Lines queued together are written to stdout in one write up to this
/// many bytes.
const WRITE_BATCH_BYTES: usize = 64 << 10;
/// Read buffer for stdin.
const READ_BUFFER_BYTES: usize = 64 << 10;

/// rmcp's transport over a reader (stdin) and a writer (stdout).
pub(super) struct StdioTransport {
    incoming: mpsc::Receiver<ClientJsonRpcMessage>,
    in_flight: Arc<InFlight>,
    direct: Arc<Direct>,
    outgoing: Option<mpsc::Sender<Outgoing>>,
    stop: CancellationToken,
    writer: Option<JoinHandle<()>>,
    /// The end-of-input drain once stdin has ended: kept here because rmcp
    /// drops a pending `receive` whenever another of its events comes first.
    ending: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
    /// The end-of-input drain is done: rmcp is told the input ended.
    ended: bool,
}

/// Carried (in its extensions) by a `tools/call` handed to rmcp's loop
/// rather than run beside it: the token that cancels the calls still
/// running at the end of input, which the call's handler adds to what
/// cancels it. Only this transport inserts it; nothing a client sends can.
#[derive(Clone)]
pub(super) struct CallsEnd(pub(super) CancellationToken);

/// Carried (in its extensions) by a `tools/call` run beside rmcp's loop
/// (`direct.rs`): the queue its answer goes to, so that what the call
/// notifies while it runs (its progress) is queued there too and written
/// before the answer. Through rmcp's [`Peer`](rmcp::Peer) a notification
/// would take the loop's own way to stdout and could come after the
/// answer. Only this transport inserts it; nothing a client sends can.
#[derive(Clone)]
pub(crate) struct CallLines(mpsc::Sender<Outgoing>);

impl CallLines {
    /// Queue `notification` for stdout, waiting while the queue is full
    /// (the client is not reading). Dropped when stdout is closed.
    pub(crate) async fn notify(&self, notification: rmcp::model::ServerNotification) {
        let message = rmcp::service::TxJsonRpcMessage::<rmcp::RoleServer>::notification(notification);
        let Ok(mut line) = serde_json::to_vec(&message) else { return };
        line.push(b'\n');
        let _ = self.0.send(Outgoing { line, answers: None }).await;
    }
}

/// One line for stdout, and the request it answers, if any.
struct Outgoing {
    line: Vec<u8>,
    answers: Option<RequestId>,
}

/// Requests read and not yet answered, each holding a permit.
struct InFlight {
    permits: Arc<Semaphore>,
    /// Each request's permit, and whether it is a `tools/call`.
    held: Mutex<HashMap<RequestId, (OwnedSemaphorePermit, bool)>>,
    /// Woken whenever a request is answered or cancelled.
    released: Notify,
}

impl InFlight {
    /// Hold `permit` for request `id`; `false` (and the permit returned to
    /// the pool) when a request with that id is already in flight.
    fn hold(&self, id: RequestId, permit: OwnedSemaphorePermit, call: bool) -> bool {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if held.contains_key(&id) {
            return false;
        }
        held.insert(id, (permit, call));
        true
    }

    /// The request `id` is answered (or cancelled): free its permit.
    fn release(&self, id: &RequestId) {
        let permit = self.held.lock().unwrap_or_else(|e| e.into_inner()).remove(id);
        if permit.is_some() {
            drop(permit);
            self.released.notify_waiters();
        }
    }

    /// Calls read and not yet answered (nor cancelled by the client).
    fn calls(&self) -> usize {
        self.held.lock().unwrap_or_else(|e| e.into_inner()).values().filter(|(_, call)| *call).count()
    }

    /// Wait until every call read has had its answer written (or was
    /// cancelled by the client).
    async fn calls_answered(&self) {
        loop {
            let released = self.released.notified();
            tokio::pin!(released);
            // Registered before the count is read: a release in between
            // still wakes this wait.
            released.as_mut().enable();
            if self.calls() == 0 {
                return;
            }
            released.await;
        }
    }
}

/// What the transport does once stdin has ended, before rmcp learns of it:
/// the calls in flight (run beside rmcp's loop or in it) get
/// [`CLOSE_DRAIN`] to answer; the rest are cancelled through `calls_end`
/// and their `cancelled` results are waited for, up to
/// [`CLOSE_FLUSH_TIMEOUT`] for a client that does not read. A reply counts
/// once it is written to stdout, so when rmcp is told the input ended
/// (and stops forwarding its handlers' answers, then closes the transport
/// and the server exits) no call is left without its answer. Cut short
/// when the transport stops (stdout closed).
async fn end_of_input(in_flight: Arc<InFlight>, calls_end: CancellationToken, stop: CancellationToken) {
    let answered = async {
        if tokio::time::timeout(CLOSE_DRAIN, in_flight.calls_answered()).await.is_ok() {
            return;
        }
        tracing::debug!("calls still running {CLOSE_DRAIN:?} after stdin closed; cancelling them");
        calls_end.cancel();
        if tokio::time::timeout(CLOSE_FLUSH_TIMEOUT, in_flight.calls_answered()).await.is_err() {
            tracing::debug!("the answers of cancelled calls not written within {CLOSE_FLUSH_TIMEOUT:?}");
        }
    };
    tokio::select! {
        () = answered => {}
        () = stop.cancelled() => {}
    }
}

impl StdioTransport {
    /// Start the reader and writer tasks over `read` and `write`.
    pub(super) fn new<R, W>(read: R, write: W) -> Self
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let (parsed_tx, incoming) = mpsc::channel(PARSED_QUEUE);
        let (outgoing, queue) = mpsc::channel(MAX_QUEUED_REPLIES);
        let in_flight = Arc::new(InFlight {
            permits: Arc::new(Semaphore::new(MAX_STDIO_REQUESTS_IN_FLIGHT)),
            held: Mutex::new(HashMap::new()),
            released: Notify::new(),
        });
        let stop = CancellationToken::new();
        let direct = Direct::new();
        let reader = Reader {
            parsed: parsed_tx,
            replies: outgoing.clone(),
            in_flight: in_flight.clone(),
            direct: direct.clone(),
            stop: stop.clone(),
        };
        tokio::spawn(reader.run(BufReader::with_capacity(READ_BUFFER_BYTES, read)));
        let writer = tokio::spawn(write_all(write, queue, in_flight.clone(), stop.clone()));
        StdioTransport {
            incoming,
            in_flight: in_flight.clone(),
            direct,
            outgoing: Some(outgoing),
            stop,
            writer: Some(writer),
            ending: None,
            ended: false,
        }
    }
}

/// How many `tools/call` requests read from stdin are not answered yet;
/// shared with the transport, so that shutdown can wait for calls rmcp has
/// not yet handed to the pipeline (a call read just before SIGTERM still
/// gets its reply and its audit record). Other requests are not counted: a
/// `subscriptions/listen` stays open until the session ends.
#[derive(Clone)]
pub(super) struct Unanswered(Arc<InFlight>);

impl Unanswered {
    /// Calls read and not yet answered (nor cancelled by the client).
    pub(super) fn count(&self) -> usize {
        self.0.calls()
    }
}

impl StdioTransport {
    /// A handle counting the requests this transport read and has not yet
    /// answered.
    pub(super) fn unanswered(&self) -> Unanswered {
        Unanswered(self.in_flight.clone())
    }

    /// A handle that, once rmcp has set the session up, has `tools/call`
    /// requests answered beside rmcp's loop (see `direct`).
    pub(super) fn opener(&self) -> Opener {
        self.direct.opener()
    }
}

impl Drop for StdioTransport {
    fn drop(&mut self) {
        self.stop.cancel();
        self.direct.abort();
    }
}

fn closed() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::BrokenPipe, "stdout is closed")
}

impl Transport<RoleServer> for StdioTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let answers = match &item {
            JsonRpcMessage::Response(response) => Some(response.id.clone()),
            JsonRpcMessage::Error(error) => error.id.clone(),
            JsonRpcMessage::Request(_) | JsonRpcMessage::Notification(_) => None,
        };
        let line = serde_json::to_vec(&item).map(|mut line| {
            line.push(b'\n');
            line
        });
        let outgoing = self.outgoing.clone();
        async move {
            let line = line.map_err(|err| std::io::Error::new(std::io::ErrorKind::InvalidData, err))?;
            let outgoing = outgoing.ok_or_else(closed)?;
            // Waits while the queue is full: the client is not reading.
            outgoing.send(Outgoing { line, answers }).await.map_err(|_| closed())
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        if self.ended {
            return None;
        }
        if self.ending.is_none() {
            if let Some(message) = self.incoming.recv().await {
                return Some(message);
            }
            // Every message read is taken: stdin has ended (or the
            // transport stopped). Calls in flight answer first.
            let drain = end_of_input(self.in_flight.clone(), self.direct.calls_end(), self.stop.clone());
            self.ending = Some(Box::pin(drain));
        }
        if let Some(ending) = self.ending.as_mut() {
            ending.await;
        }
        // Never polled again once done.
        self.ending = None;
        self.ended = true;
        None
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // rmcp has drained its own handlers; the calls taken beside it get
        // the same time to answer.
        self.direct.close().await;
        self.stop.cancel();
        self.incoming.close();
        drop(self.outgoing.take());
        if let Some(mut writer) = self.writer.take()
            && tokio::time::timeout(CLOSE_FLUSH_TIMEOUT, &mut writer).await.is_err()
        {
            tracing::debug!("stdout not drained within {CLOSE_FLUSH_TIMEOUT:?}; dropping what is left");
            writer.abort();
        }
        Ok(())
    }
}

/// The stdin side: lines → checked messages for rmcp, or error replies.
struct Reader {
    parsed: mpsc::Sender<ClientJsonRpcMessage>,
    replies: mpsc::Sender<Outgoing>,
    in_flight: Arc<InFlight>,
    direct: Arc<Direct>,
    stop: CancellationToken,
}

/// What one read of a line found.
#[derive(Debug, PartialEq)]
enum Line {
    /// A line (or the last bytes before end of input) is in the buffer.
    Complete,
    /// The line was longer than the cap; it has been discarded.
    TooLong,
    /// End of input.
    End,
}

impl Reader {
    async fn run<R: AsyncBufRead + Unpin>(self, mut read: R) {
        let mut line = Vec::new();
        loop {
            let Some(read) = self.unless_stopped(read_line(&mut read, &mut line, MAX_STDIO_MESSAGE_BYTES)).await else {
                return;
            };
            let delivered = match read {
                Ok(Line::End) => return,
                Err(err) => {
                    tracing::debug!("cannot read stdin: {err}");
                    return;
                }
                Ok(Line::TooLong) => self.reject(Rejection::too_large("line", MAX_STDIO_MESSAGE_BYTES)).await,
                Ok(Line::Complete) => self.deliver(&line).await,
            };
            if !delivered {
                return;
            }
        }
    }

    /// Hand one line to rmcp, or answer it. `false` when the transport is
    /// closing.
    async fn deliver(&self, line: &[u8]) -> bool {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        // RFC 8259 §8.1 lets a parser ignore a byte order mark; rmcp's own
        // stdio transport does.
        let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            return true;
        }
        let mut message = match jsonrpc::parse(line) {
            Ok(message) => message,
            Err(rejection) => return self.reject(rejection).await,
        };
        let mut call = false;
        match &message {
            JsonRpcMessage::Request(request) => {
                let Some(Ok(permit)) = self.unless_stopped(self.in_flight.permits.clone().acquire_owned()).await else {
                    return false;
                };
                call = matches!(request.request, ClientRequest::CallToolRequest(_));
                if !self.in_flight.hold(request.id.clone(), permit, call) {
                    let id = request.id.clone();
                    return self
                        .reject(Rejection::invalid_request(
                            Some(id.clone()),
                            format!("request id {id} is already in use by a request in progress; use a new id"),
                        ))
                        .await;
                }
            }
            JsonRpcMessage::Notification(notification) => {
                // rmcp sends no reply for a cancelled request, nor is one
                // sent for a call taken beside it.
                if let ClientNotification::CancelledNotification(cancelled) = &notification.notification
                    && let Some(id) = &cancelled.params.request_id
                {
                    self.direct.cancel(id);
                    self.in_flight.release(id);
                }
            }
            JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_) => {}
        }
        // A call is run here once the session is up; before, rmcp runs it.
        // rmcp cancels it through its extension at the end of input.
        if call && let JsonRpcMessage::Request(request) = message {
            match self.direct.start(request, self.replies.clone()) {
                None => return true,
                Some(mut request) => {
                    request.request.extensions_mut().insert(CallsEnd(self.direct.calls_end()));
                    message = JsonRpcMessage::Request(request);
                }
            }
        }
        matches!(self.unless_stopped(self.parsed.send(message)).await, Some(Ok(())))
    }

    /// Answer a line that was refused. `false` when the transport is
    /// closing.
    async fn reject(&self, rejection: Rejection) -> bool {
        airlock_pipeline::transport::client_log::refused(
            &format!("JSON-RPC {} on stdin", rejection.code()),
            rejection.message(),
        );
        let mut line = rejection.to_json().to_string().into_bytes();
        line.push(b'\n');
        let answers = None;
        matches!(self.unless_stopped(self.replies.send(Outgoing { line, answers })).await, Some(Ok(())))
    }

    async fn unless_stopped<F: Future>(&self, future: F) -> Option<F::Output> {
        tokio::select! {
            output = future => Some(output),
            () = self.stop.cancelled() => None,
        }
    }
}

/// Read one line into `line` (without its `\n`), keeping at most `max`
/// bytes of it: the rest of a longer line is consumed and dropped.
async fn read_line<R: AsyncBufRead + Unpin>(read: &mut R, line: &mut Vec<u8>, max: usize) -> std::io::Result<Line> {
    line.clear();
    let mut too_long = false;
    loop {
        let available = read.fill_buf().await?;
        if available.is_empty() {
            return Ok(if too_long {
                Line::TooLong
            } else if line.is_empty() {
                Line::End
            } else {
                Line::Complete
            });
        }
        let newline = available.iter().position(|&b| b == b'\n');
        let content = newline.unwrap_or(available.len());
        if !too_long {
            if line.len().saturating_add(content) > max {
                too_long = true;
                line.clear();
                line.shrink_to(READ_BUFFER_BYTES);
            } else {
                line.extend_from_slice(available.get(..content).unwrap_or(available));
            }
        }
        read.consume(newline.map_or(content, |at| at + 1));
        if newline.is_some() {
            return Ok(if too_long { Line::TooLong } else { Line::Complete });
        }
    }
}

/// The stdout side: write queued lines in order, what is queued at once in
/// one write (up to [`WRITE_BATCH_BYTES`]); a written reply frees its
/// request's permit. A write error (the client closed stdout) stops the
/// transport.
async fn write_all<W: AsyncWrite + Unpin>(
    mut write: W,
    mut queue: mpsc::Receiver<Outgoing>,
    in_flight: Arc<InFlight>,
    stop: CancellationToken,
) {
    let mut batch = Vec::new();
    let mut answered = Vec::new();
    while let Some(first) = queue.recv().await {
        let mut next = Some(first);
        while let Some(Outgoing { line, answers }) = next.take() {
            batch.extend_from_slice(&line);
            answered.extend(answers);
            if batch.len() < WRITE_BATCH_BYTES {
                next = queue.try_recv().ok();
            }
        }
        let written = async {
            write.write_all(&batch).await?;
            write.flush().await
        };
        if let Err(err) = written.await {
            tracing::debug!("cannot write to stdout: {err}");
            stop.cancel();
            return;
        }
        batch.clear();
        batch.shrink_to(WRITE_BATCH_BYTES);
        for id in answered.drain(..) {
            in_flight.release(&id);
        }
    }
}

#[cfg(test)]
mod tests;
