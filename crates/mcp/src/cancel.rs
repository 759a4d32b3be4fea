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

/// A new token cancelled as soon as any of `sources` is, for a call that
/// ends with the request that started it. With one source (stdio) it is a
/// child token and no task is spawned: each call saved a spawn and a
/// cross-thread wake-up. With more (HTTP: the request and the client's
/// connection) the rest are linked by a task, as [`link`] does.
pub fn linked(sources: &[CancellationToken]) -> (CancellationToken, Link) {
    match sources.split_first() {
        None => (CancellationToken::new(), Link(None)),
        Some((first, rest)) => {
            let target = first.child_token();
            let link = link(&target, rest);
            (target, link)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn linked_follows_every_source_and_only_them() {
        for sources in 1..=3 {
            for cancelled in 0..sources {
                let tokens: Vec<_> = (0..sources).map(|_| CancellationToken::new()).collect();
                let (target, _link) = linked(&tokens);
                assert!(!target.is_cancelled());
                tokens[cancelled].cancel();
                tokio::time::timeout(std::time::Duration::from_secs(10), target.cancelled()).await.unwrap();
            }
        }
        let (alone, _link) = linked(&[]);
        assert!(!alone.is_cancelled());
        // Cancelling the target never reaches a source.
        let source = CancellationToken::new();
        let (target, _link) = linked(std::slice::from_ref(&source));
        target.cancel();
        assert!(!source.is_cancelled());
    }
}
