//! Schedule: calls of tools the operator marked `concurrency_safe` may run
//! in parallel with each other; every other call runs alone. Missing or
//! unclear means exclusive. A cap on calls in flight keeps the instance
//! pool from running dry; it is the ceiling over the per-principal
//! `calls_in_flight` quotas, which `quota.rs` checks when a call is
//! admitted: with quotas below the cap (the defaults are), one principal's
//! calls cannot fill it alone.

use std::sync::Arc;
use tokio::sync::{RwLock, Semaphore};

/// The scheduler shared by every call of a host.
#[derive(Debug, Clone)]
pub struct Scheduler {
    exclusive: Arc<RwLock<()>>,
    in_flight: Arc<Semaphore>,
}

impl Scheduler {
    /// A scheduler allowing at most `max_in_flight` calls at once.
    pub fn new(max_in_flight: usize) -> Self {
        Self { exclusive: Arc::new(RwLock::new(())), in_flight: Arc::new(Semaphore::new(max_in_flight.max(1))) }
    }

    /// Run `work` under the rules: shared with other safe calls when
    /// `concurrency_safe`, alone otherwise. Waiting is fair (first come,
    /// first served), so a batch runs in the order it was proposed.
    pub async fn run<F: Future>(&self, concurrency_safe: bool, work: F) -> F::Output {
        // The semaphore is never closed, so acquiring cannot fail; if it
        // ever did, running without the cap is the lesser evil.
        let _permit = self.in_flight.acquire().await.ok();
        if concurrency_safe {
            let _shared = self.exclusive.read().await;
            work.await
        } else {
            let _alone = self.exclusive.write().await;
            work.await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    async fn max_overlap(safe: [bool; 4]) -> usize {
        let scheduler = Scheduler::new(16);
        let running = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let calls = safe.map(|safe| {
            let (scheduler, running, peak) = (scheduler.clone(), running.clone(), peak.clone());
            async move {
                scheduler
                    .run(safe, async {
                        let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                        peak.fetch_max(now, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        running.fetch_sub(1, Ordering::SeqCst);
                    })
                    .await
            }
        });
        futures::future::join_all(calls).await;
        peak.load(Ordering::SeqCst)
    }

    #[tokio::test]
    async fn exclusive_calls_never_overlap() {
        assert_eq!(max_overlap([false; 4]).await, 1);
    }

    #[tokio::test]
    async fn safe_calls_overlap() {
        assert_eq!(max_overlap([true; 4]).await, 4);
    }

    #[tokio::test]
    async fn an_exclusive_call_runs_alone_among_safe_ones() {
        assert!(max_overlap([true, false, true, true]).await <= 2);
    }
}
