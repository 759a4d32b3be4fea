//! Schedule: calls of tools the operator marked `concurrency_safe` may run
//! in parallel with each other; every other call runs alone. Missing or
//! unclear means exclusive. A cap on calls in flight keeps the instance
//! pool from running dry; it is the ceiling over the per-principal
//! `calls_in_flight` quotas, which `quota.rs` checks when a call is
//! admitted: with quotas below the cap (the defaults are), one principal's
//! calls cannot fill it alone.
//!
//! Before its turn, a call reserves from the host memory budget what its
//! limits let it make the host hold (`reservation.rs`), waiting for room
//! within its deadline; a call that finds none is `busy` and does not run.
//!
//! The scheduler lives as long as the host: a reload does not replace it
//! (the exclusive rule holds across the calls of every state, and the
//! instance pool the cap protects is one), it only moves the cap
//! ([`Scheduler::set_cap`]). A raised cap is free at once; a lowered one is
//! reached as calls in flight finish, and they finish as they started.

use super::Pipeline;
use crate::reservation::{self, Purpose};
use airlock_core::call::CallRequest;
use airlock_core::outcome::Failure;
use crate::tool::Tool;
use airlock_runtime::memory_budget::Reservation;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::{RwLock, Semaphore, SemaphorePermit};
use tokio_util::sync::CancellationToken;

impl Pipeline {
    /// Reserve what a call of `tool` may make the host hold (less the
    /// linear memory its session holds, `in_session`), waiting at most
    /// `time_left`.
    pub(super) async fn reserve(
        &self,
        request: &CallRequest,
        tool: &Tool,
        in_session: bool,
        time_left: Duration,
        cancel: &CancellationToken,
    ) -> Result<Reservation, Failure> {
        let limits = &tool.limits_for(request.task.is_some());
        let bytes = reservation::call_bytes(limits, in_session, tool.output.is_some(), tool.contract().has_content());
        let deadline = (tokio::time::Instant::now() + time_left, limits.timeout.as_millis());
        reservation::reserve(&self.memory, &request.principal, bytes, Purpose::Call(&tool.name), deadline, cancel).await
    }
}

/// The scheduler shared by every call of a host.
#[derive(Debug, Clone)]
pub struct Scheduler {
    exclusive: Arc<RwLock<()>>,
    in_flight: Arc<Semaphore>,
    cap: Arc<Mutex<Cap>>,
}

/// The cap on calls in flight and the permits still to be withdrawn.
#[derive(Debug)]
struct Cap {
    /// The cap in force.
    max: usize,
    /// Permits held by calls in flight that are forgotten instead of
    /// returned when those calls finish (what a lowered cap could not take
    /// from the free permits).
    owed: usize,
}

impl Scheduler {
    /// A scheduler allowing at most `max_in_flight` calls at once.
    pub fn new(max_in_flight: usize) -> Self {
        let max = max_in_flight.max(1);
        Self {
            exclusive: Arc::new(RwLock::new(())),
            in_flight: Arc::new(Semaphore::new(max)),
            cap: Arc::new(Mutex::new(Cap { max, owed: 0 })),
        }
    }

    /// The cap on calls in flight now.
    #[cfg(test)]
    pub fn cap(&self) -> usize {
        self.cap.lock().unwrap_or_else(PoisonError::into_inner).max
    }

    /// Move the cap on calls in flight to `max_in_flight` for calls that
    /// start from now on. Calls running keep their place; a lowered cap
    /// takes back free places at once and the others as those calls end.
    pub fn set_cap(&self, max_in_flight: usize) {
        let new = max_in_flight.max(1);
        let mut cap = self.cap.lock().unwrap_or_else(PoisonError::into_inner);
        if new > cap.max {
            let mut more = new - cap.max;
            let forgiven = more.min(cap.owed);
            cap.owed -= forgiven;
            more -= forgiven;
            self.in_flight.add_permits(more);
        } else {
            let less = cap.max - new;
            let taken = self.in_flight.forget_permits(less);
            cap.owed += less - taken;
        }
        cap.max = new;
    }

    /// Run `work` under the rules: shared with other safe calls when
    /// `concurrency_safe`, alone otherwise. Waiting is fair (first come,
    /// first served), so a batch runs in the order it was proposed.
    pub async fn run<F: Future>(&self, concurrency_safe: bool, work: F) -> F::Output {
        // The semaphore is never closed, so acquiring cannot fail; if it
        // ever did, running without the cap is the lesser evil.
        let _place = Place { permit: self.in_flight.acquire().await.ok(), cap: &self.cap };
        if concurrency_safe {
            let _shared = self.exclusive.read().await;
            work.await
        } else {
            let _alone = self.exclusive.write().await;
            work.await
        }
    }
}

/// A call's place under the cap; given back when the call ends (also when
/// its future is dropped), unless a lowered cap is still owed places.
struct Place<'a> {
    permit: Option<SemaphorePermit<'a>>,
    cap: &'a Mutex<Cap>,
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        let Some(permit) = self.permit.take() else { return };
        let mut cap = self.cap.lock().unwrap_or_else(PoisonError::into_inner);
        if cap.owed > 0 {
            cap.owed -= 1;
            permit.forget();
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

    type Started = (usize, Vec<tokio::task::JoinHandle<()>>, Arc<tokio::sync::Notify>);

    /// Start `calls` safe calls that each run until released; how many run.
    async fn start(scheduler: &Scheduler, calls: usize) -> Started {
        let running = Arc::new(AtomicUsize::new(0));
        let release = Arc::new(tokio::sync::Notify::new());
        let tasks: Vec<_> = (0..calls)
            .map(|_| {
                let (scheduler, running, release) = (scheduler.clone(), running.clone(), release.clone());
                tokio::spawn(async move {
                    scheduler
                        .run(true, async {
                            running.fetch_add(1, Ordering::SeqCst);
                            release.notified().await;
                            running.fetch_sub(1, Ordering::SeqCst);
                        })
                        .await
                })
            })
            .collect();
        // Let every task reach the semaphore or its work.
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
        (running.load(Ordering::SeqCst), tasks, release)
    }

    /// Drop every call (running or waiting) and wait until they are gone.
    async fn stop(tasks: Vec<tokio::task::JoinHandle<()>>) {
        for task in &tasks {
            task.abort();
        }
        for task in tasks {
            let _ = task.await;
        }
    }

    #[tokio::test]
    async fn a_raised_cap_frees_places_at_once() {
        let scheduler = Scheduler::new(2);
        scheduler.set_cap(5);
        let (running, tasks, _) = start(&scheduler, 8).await;
        assert_eq!(running, 5);
        stop(tasks).await;
    }

    #[tokio::test]
    async fn a_lowered_cap_is_reached_as_calls_finish() {
        let scheduler = Scheduler::new(4);
        let (running, first, release) = start(&scheduler, 4).await;
        assert_eq!(running, 4);
        // Calls in flight keep their places; new ones wait for the new cap.
        scheduler.set_cap(1);
        assert_eq!(scheduler.cap(), 1);
        let (running, waiting, _) = start(&scheduler, 2).await;
        assert_eq!(running, 0, "no place is free until the earlier calls end");
        stop(waiting).await;
        release.notify_waiters();
        for task in first {
            task.await.expect("a call finishes");
        }
        let (running, rest, _) = start(&scheduler, 3).await;
        assert_eq!(running, 1, "the lowered cap holds once the earlier calls are done");
        // A dropped call gives its place back like a finished one.
        stop(rest).await;
        scheduler.set_cap(3);
        let (running, tasks, _) = start(&scheduler, 6).await;
        assert_eq!(running, 3);
        stop(tasks).await;
    }
}
