//! `tools/call` on stdio beside rmcp's service loop, not through it.
//!
//! rmcp's loop moves every request through four tasks: the loop takes the
//! message, spawns a task for the handler, takes the handler's answer back
//! through a channel and spawns another task to hand it to the transport.
//! Each of those is a wake-up, often of the other worker thread, and on the
//! stdio round trip of a fast tool they cost more than the call. Once the
//! session is up ([`Direct::open`]), the stdin reader gives a `tools/call`
//! to one task of its own instead: it runs rmcp's own request handling
//! ([`Service::handle_request`], so protocol-version and `_meta` checks,
//! and the handler, are those of every other request) and queues the
//! answer for stdout. Everything else (lifecycle, lists, subscriptions,
//! answers to elicitation requests, notifications) still goes to rmcp, and
//! a call still reaches the client through rmcp's [`Peer`] when it asks
//! for confirmation. Its progress notifications go to the queue its answer
//! goes to ([`CallLines`]), so that they are written before the answer.
//!
//! What rmcp's loop did for a request is done here the same way:
//!
//! - `notifications/cancelled` for a call in flight cancels its token, and
//!   its answer is not sent (rmcp drops the answer of a cancelled request);
//!   the notification still goes on to rmcp.
//! - At the end of input, calls in flight get [`CLOSE_DRAIN`] to finish
//!   and write their answers, as rmcp drains its handlers, and are then
//!   cancelled (see `end_of_input`: the calls rmcp runs are cancelled
//!   through the same token). When the transport closes otherwise (the
//!   service stopped at shutdown), the same drain is applied here.
//!
//! rmcp's task-local note of the originating request is not set here: it
//! only routes server-to-client requests to an HTTP request's stream, and
//! there is one stream on stdio.

use super::{CLOSE_DRAIN, CallLines, Outgoing};
use crate::server::AirlockServer;
use rmcp::model::{ClientRequest, GetExtensions as _, GetMeta as _, JsonRpcRequest, RequestId};
use rmcp::service::{RequestContext, TxJsonRpcMessage};
use rmcp::{ErrorData, Peer, RoleServer, Service as _};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// The handler and the session's peer, once rmcp has set the session up.
struct Handler {
    server: AirlockServer,
    peer: Peer<RoleServer>,
}

/// Calls taken from rmcp's loop, from the moment the session is up.
pub(super) struct Direct {
    handler: OnceLock<Handler>,
    /// Each call in flight: a serial (ids can be reused once a call is
    /// cancelled) and the token that cancels it.
    running: Mutex<HashMap<RequestId, (u64, CancellationToken)>>,
    serial: AtomicU64,
    tasks: TaskTracker,
    /// The parent of every call's token, cancelled at the end of input
    /// after [`CLOSE_DRAIN`] or when the transport closes. Calls run by
    /// rmcp's loop are cancelled by it too ([`CallsEnd`](super::CallsEnd)).
    stop: CancellationToken,
}

/// A handle for the server to open the direct path once rmcp's session is
/// up.
#[derive(Clone)]
pub(crate) struct Opener(Arc<Direct>);

impl Opener {
    /// From now on, `tools/call` requests go to `server` directly; `peer`
    /// is the session's (for confirmations and progress).
    pub(crate) fn open(&self, server: AirlockServer, peer: Peer<RoleServer>) {
        // A second session cannot open on one transport; keep the first.
        let _ = self.0.handler.set(Handler { server, peer });
    }
}

impl Direct {
    pub(super) fn new() -> Arc<Self> {
        Arc::new(Direct {
            handler: OnceLock::new(),
            running: Mutex::new(HashMap::new()),
            serial: AtomicU64::new(0),
            tasks: TaskTracker::new(),
            stop: CancellationToken::new(),
        })
    }

    pub(super) fn opener(self: &Arc<Self>) -> Opener {
        Opener(self.clone())
    }

    /// Run the call `request` in a task of its own; its answer goes to
    /// `replies`. The caller holds the request's permit (freed when the
    /// answer is written, or by the client's cancellation). Before the
    /// session is up the request is given back, for rmcp.
    pub(super) fn start(
        self: &Arc<Self>,
        request: JsonRpcRequest<ClientRequest>,
        replies: mpsc::Sender<Outgoing>,
    ) -> Option<JsonRpcRequest<ClientRequest>> {
        let Some(handler) = self.handler.get() else { return Some(request) };
        let JsonRpcRequest { id, mut request, .. } = request;
        let serial = self.serial.fetch_add(1, Ordering::Relaxed);
        let cancel = self.stop.child_token();
        self.lock().insert(id.clone(), (serial, cancel.clone()));
        let mut context = RequestContext::new(id.clone(), handler.peer.clone());
        context.ct = cancel;
        std::mem::swap(&mut context.meta, request.get_meta_mut());
        std::mem::swap(&mut context.extensions, request.extensions_mut());
        // The call's progress goes through the queue its answer takes, so
        // it is written first.
        context.extensions.insert(CallLines(replies.clone()));
        let server = handler.server.clone();
        let direct = self.clone();
        self.tasks.spawn(async move {
            // Boxed: the handler's future is large and would otherwise be
            // moved into the task whole.
            let result = Box::pin(server.handle_request(request, context)).await;
            if !direct.finish(&id, serial) {
                // Cancelled by the client: rmcp sends no answer either.
                return;
            }
            let message = match result {
                Ok(result) => TxJsonRpcMessage::<RoleServer>::response(result, id.clone()),
                Err(error) => TxJsonRpcMessage::<RoleServer>::error(error, Some(id.clone())),
            };
            let mut line = serde_json::to_vec(&message).unwrap_or_else(|err| {
                tracing::error!(%id, "cannot serialize the answer to a call: {err}");
                let error = ErrorData::internal_error("the answer to this call could not be serialized", None);
                serde_json::to_vec(&TxJsonRpcMessage::<RoleServer>::error(error, Some(id.clone()))).unwrap_or_default()
            });
            line.push(b'\n');
            // Waits while the queue is full: the client is not reading.
            let _ = replies.send(Outgoing { line, answers: Some(id) }).await;
        });
        None
    }

    /// The token that cancels every call still running at the end of
    /// input, here or in rmcp's loop.
    pub(super) fn calls_end(&self) -> CancellationToken {
        self.stop.clone()
    }

    /// The client cancelled request `id`: cancel it if it runs here.
    pub(super) fn cancel(&self, id: &RequestId) {
        if let Some((_, token)) = self.lock().remove(id) {
            token.cancel();
        }
    }

    /// The call `id` (its `serial`) has its answer: `false` when the client
    /// cancelled it meanwhile.
    fn finish(&self, id: &RequestId, serial: u64) -> bool {
        let mut running = self.lock();
        match running.get(id) {
            Some((held, _)) if *held == serial => {
                running.remove(id);
                true
            }
            _ => false,
        }
    }

    /// Let the calls in flight answer for up to [`CLOSE_DRAIN`], then
    /// cancel the rest.
    pub(super) async fn close(&self) {
        self.tasks.close();
        if tokio::time::timeout(CLOSE_DRAIN, self.tasks.wait()).await.is_err() {
            tracing::debug!("calls still running {CLOSE_DRAIN:?} after stdin closed; cancelling them");
        }
        // Their answers, if any, are flushed with the rest of stdout.
        self.stop.cancel();
    }

    /// Cancel every call (the transport is dropped without closing).
    pub(super) fn abort(&self) {
        self.stop.cancel();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<RequestId, (u64, CancellationToken)>> {
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }
}
