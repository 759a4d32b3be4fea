//! Cancelling a call when any of its sources is cancelled: the request's
//! own token (`notifications/cancelled`, the end of the session), an HTTP
//! client dropping its response, a confirmation given up.
//!
//! Nothing a client sends reaches this module: it links cancellation tokens
//! the front end already holds, and only ever cancels the target.

use futures::future::Either;
use std::future::Future;
use tokio_util::sync::CancellationToken;

/// A call's token and the sources it follows that are not its parent,
/// which [`Linked::run`] watches while the call runs, in the call's own
/// task: no task is spawned for them, and none woken on another thread
/// when the call ends.
pub struct Linked {
    target: CancellationToken,
    rest: Vec<CancellationToken>,
}

/// A new token cancelled as soon as any of `sources` is, for a call that
/// ends with the request that started it: a child token of the first
/// source, the rest (HTTP: the client's connection beside the request)
/// watched by [`Linked::run`].
pub fn linked(sources: &[CancellationToken]) -> Linked {
    match sources.split_first() {
        None => Linked { target: CancellationToken::new(), rest: Vec::new() },
        Some((first, rest)) => Linked { target: first.child_token(), rest: rest.to_vec() },
    }
}

/// `target` (a token the caller made, such as a parked call's), cancelled
/// by [`Linked::run`] as soon as any of `sources` is.
pub fn watching(target: &CancellationToken, sources: &[CancellationToken]) -> Linked {
    Linked { target: target.clone(), rest: sources.to_vec() }
}

impl Linked {
    /// The call's token.
    pub fn token(&self) -> &CancellationToken {
        &self.target
    }

    /// Runs `work` to its end, cancelling the token as soon as any source
    /// is cancelled (the first one reaches it as its parent); `work` sees
    /// that and finishes as a cancelled call does.
    pub async fn run<F: Future>(&self, work: F) -> F::Output {
        let mut work = std::pin::pin!(work);
        let any = match self.rest.as_slice() {
            [] => return work.await,
            [one] => Either::Left(one.cancelled()),
            many => Either::Right(futures::FutureExt::map(
                futures::future::select_all(many.iter().map(|s| Box::pin(s.cancelled()))),
                |_| (),
            )),
        };
        match futures::future::select(work.as_mut(), std::pin::pin!(any)).await {
            Either::Left((out, _)) => out,
            Either::Right(_) => {
                self.target.cancel();
                work.await
            }
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
                let linked = linked(&tokens);
                let target = linked.token().clone();
                assert!(!target.is_cancelled());
                // The call waits for its token; another source ends it.
                let source = tokens[cancelled].clone();
                let call = linked.run(async {
                    tokio::task::yield_now().await;
                    source.cancel();
                    target.cancelled().await;
                    "ended as cancelled"
                });
                let ended = tokio::time::timeout(std::time::Duration::from_secs(10), call).await.unwrap();
                assert_eq!(ended, "ended as cancelled");
            }
        }
        let alone = linked(&[]);
        assert!(!alone.token().is_cancelled());
        assert_eq!(alone.run(async { 7 }).await, 7);
        // Cancelling the target never reaches a source.
        let sources = [CancellationToken::new(), CancellationToken::new()];
        let linked = linked(&sources);
        linked.token().cancel();
        assert!(linked.run(async { linked.token().is_cancelled() }).await);
        assert!(sources.iter().all(|source| !source.is_cancelled()));
        // A token the caller made follows the sources it is given.
        let (parked, client) = (CancellationToken::new(), CancellationToken::new());
        let watch = watching(&parked, std::slice::from_ref(&client));
        let waited = watch.run(async {
            client.cancel();
            parked.cancelled().await;
        });
        tokio::time::timeout(std::time::Duration::from_secs(10), waited).await.unwrap();
        assert!(parked.is_cancelled());
        // A call that ends by itself leaves the sources alone.
        let sources = [CancellationToken::new(), CancellationToken::new(), CancellationToken::new()];
        let linked = super::linked(&sources);
        assert_eq!(linked.run(async { 1 }).await, 1);
        assert!(!linked.token().is_cancelled());
    }
}
