//! Cancelling a call when any of its sources is cancelled: the request's
//! own token (`notifications/cancelled`, the end of the session), an HTTP
//! client dropping its response, a confirmation given up.
//!
//! Nothing a client sends reaches this module: it links cancellation tokens
//! the front end already holds, and only ever cancels the target.

use tokio_util::sync::CancellationToken;

/// Cancels its target while alive; see [`link`]. Dropping it stops
/// watching the sources.
pub struct Link(Option<tokio::task::JoinHandle<()>>);

impl Drop for Link {
    fn drop(&mut self) {
        if let Some(task) = self.0.take() {
            task.abort();
        }
    }
}

/// Cancel `target` as soon as any of `sources` is cancelled, for as long as
/// the returned [`Link`] lives.
pub fn link(target: &CancellationToken, sources: &[CancellationToken]) -> Link {
    if sources.is_empty() {
        return Link(None);
    }
    let target = target.clone();
    let sources: Vec<_> = sources.iter().map(|s| Box::pin(s.clone().cancelled_owned())).collect();
    Link(Some(tokio::spawn(async move {
        futures::future::select_all(sources).await;
        target.cancel();
    })))
}
