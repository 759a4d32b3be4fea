//! A tool's progress as MCP `notifications/progress` with the client's
//! `progressToken`, on stdio and streamable HTTP, for every revision (all
//! have progress; the `message` field came with 2025-03-26 and is left out
//! before it).
//!
//! Trusts the reports as the sandbox checked them (finite, growing, the
//! message cleaned and capped) and sent at most once per the tool's
//! `progress_interval_ms`. A call whose client gave no token has no sink,
//! and nothing is sent for it.

use super::stdio::CallLines;
use airlock_core::progress::{Progress, ProgressSink};
use rmcp::RoleServer;
use rmcp::model::{
    ProgressNotification, ProgressNotificationParam, ProgressToken, ProtocolVersion, ServerNotification,
};
use rmcp::service::Peer;
use std::future::Future;
use std::pin::Pin;

/// How a call's notifications reach its client: through rmcp's peer
/// (HTTP, and stdio calls rmcp's loop runs), or queued with the call's
/// answer (stdio calls run beside it), so that they are written before it.
pub(crate) enum Route {
    Peer(Peer<RoleServer>),
    Lines(CallLines),
}

impl Route {
    /// The route of a call that came over `peer`, with its stdio answer
    /// queue `lines` when it runs beside rmcp's loop.
    pub(crate) fn new(peer: Peer<RoleServer>, lines: Option<CallLines>) -> Self {
        match lines {
            Some(lines) => Route::Lines(lines),
            None => Route::Peer(peer),
        }
    }

    /// Send `notification`. A client that went away misses it; the call
    /// goes on and its result is dropped the same way.
    pub(crate) async fn notify(&self, notification: ServerNotification) {
        match self {
            Route::Peer(peer) => {
                if let Err(err) = peer.send_notification(notification).await {
                    tracing::debug!("cannot send a notification: {err}");
                }
            }
            Route::Lines(lines) => lines.notify(notification).await,
        }
    }
}

/// Where one call's reports go: the client that sent `token`.
pub(crate) struct Notifier {
    route: Route,
    token: ProgressToken,
    /// Whether the request's revision has a `message` in progress
    /// notifications.
    messages: bool,
}

impl Notifier {
    /// A sink for the call that sent `token` over `peer` (or, on stdio,
    /// queued with its answer on `lines`), in `revision` (`None`: the
    /// newest).
    pub(crate) fn new(
        peer: Peer<RoleServer>,
        lines: Option<CallLines>,
        token: ProgressToken,
        revision: Option<&ProtocolVersion>,
    ) -> Self {
        let messages = super::revision::has(revision, &super::revision::PROGRESS_MESSAGE);
        Self { route: Route::new(peer, lines), token, messages }
    }
}

impl std::fmt::Debug for Notifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Notifier").field("token", &self.token).finish_non_exhaustive()
    }
}

impl ProgressSink for Notifier {
    fn send(&self, report: Progress) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        let mut note = ProgressNotificationParam::new(self.token.clone(), report.progress);
        note.total = report.total;
        if self.messages {
            note.message = report.message;
        }
        Box::pin(self.route.notify(ServerNotification::ProgressNotification(ProgressNotification::new(note))))
    }
}
