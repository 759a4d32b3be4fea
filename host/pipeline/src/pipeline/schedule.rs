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
//! A call to a tool with side effects then gets its write-ahead record
//! (`audit.rs`), and only then waits for its turn ([`Slot`]), which the
//! execute stage gives back as soon as the guest is done.
//!
//! The scheduler lives as long as the host: a reload does not replace it
//! (the exclusive rule holds across the calls of every state, and the
//! instance pool the cap protects is one), it only moves the cap
//! ([`Scheduler::set_cap`]). A raised cap is free at once; a lowered one is
//! reached as calls in flight finish, and they finish as they started.

use super::{Call, Pipeline, Stop};
use crate::reservation::{self, Purpose};
use crate::tool::Tool;
use airlock_core::outcome::Failure;
use airlock_core::timeline::Stage;
use airlock_runtime::memory_budget::Reservation;
use airlock_settings::limits::Limits;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use tokio::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard, Semaphore, SemaphorePermit};

impl Pipeline {
    /// Schedule the call: reserve what it may make the host hold, write
    /// its write-ahead record if its tool has side effects, then wait for
    /// its turn. The time waited for memory is taken from what is left of
    /// the tool's deadline; a call with none left takes no turn (execute
    /// refuses it at once).
    pub(super) async fn schedule<'a>(&'a self, call: &mut Call<'a>) -> Result<(), Stop> {
        let tool = call.tool()?;
        let authority = call.authority()?;
        let reserving = Instant::now();
        let left = time_left(&call.limits(&tool), call.host_time);
        // Held until the call's result is returned.
        let memory = self.reserve(call, &tool, left).await.map_err(Stop::Failed)?;
        call.memory = Some(memory);
        call.time_left = after_wait(left, reserving.elapsed());
        // Nothing with side effects runs unaudited: its record goes first.
        if tool.pipeline.side_effect {
            self.write_ahead(call, &tool, authority)?;
        }
        if !call.time_left.is_zero() {
            call.slot = Some(self.scheduler.slot(tool.pipeline.concurrency_safe).await);
        }
        call.timeline.lap(Stage::Schedule);
        Ok(())
    }

    /// Reserve what a call of `tool` may make the host hold (less the
    /// linear memory its session holds), waiting at most `time_left`.
    async fn reserve(&self, call: &Call<'_>, tool: &Tool, time_left: Duration) -> Result<Reservation, Failure> {
        let limits = &call.limits(tool);
        let has_content = tool.contract().has_content();
        let bytes = reservation::call_bytes(limits, call.session.is_some(), tool.output.is_some(), has_content);
        let deadline = (tokio::time::Instant::now() + time_left, limits.timeout.as_millis());
        let principal = &call.request.principal;
        reservation::reserve(&self.memory, principal, bytes, Purpose::Call(&tool.name), deadline, call.cancel).await
    }
}

/// What is left of the call's deadline (`limits`: the tool's `timeout_ms`,
/// or its `task_timeout_ms` for a task) after `host_time`, the time the
/// host spent on the call before it was authorized (parsing and validating
/// its arguments; waiting for a confirmation does not count). Whole
/// milliseconds, as deadlines are configured: a check that took
/// microseconds leaves the tool its whole deadline.
fn time_left(limits: &Limits, host_time: Duration) -> Duration {
    let host_ms = Duration::from_millis(u64::try_from(host_time.as_millis()).unwrap_or(u64::MAX));
    limits.timeout.saturating_sub(host_ms)
}

/// What is left of `time_left` after `waited` for room in the memory
/// budget, in whole milliseconds as [`time_left`] counts.
fn after_wait(time_left: Duration, waited: Duration) -> Duration {
    time_left.saturating_sub(Duration::from_millis(u64::try_from(waited.as_millis()).unwrap_or(u64::MAX)))
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

    /// Wait for a turn under the rules: shared with other safe calls when
    /// `concurrency_safe`, alone otherwise, and under the cap. Waiting is
    /// fair (first come, first served), so a batch runs in the order it was
    /// proposed.
    pub(super) async fn slot(&self, concurrency_safe: bool) -> Slot<'_> {
        // The semaphore is never closed, so acquiring cannot fail; if it
        // ever did, running without the cap is the lesser evil.
        let place = Place { permit: self.in_flight.acquire().await.ok(), cap: &self.cap };
        let turn = if concurrency_safe {
            Turn::Shared { _guard: self.exclusive.read().await }
        } else {
            Turn::Alone { _guard: self.exclusive.write().await }
        };
        Slot { _turn: turn, _place: place }
    }

    /// Run `work` in a turn of its own ([`Scheduler::slot`]).
    #[cfg(test)]
    pub async fn run<F: Future>(&self, concurrency_safe: bool, work: F) -> F::Output {
        let _slot = self.slot(concurrency_safe).await;
        work.await
    }
}

/// A call's turn to run: its share of the exclusive rule and its place
/// under the cap, both given back when it is dropped (also when its future
/// is). The turn is given back before the place, as it was taken after.
pub(super) struct Slot<'a> {
    _turn: Turn<'a>,
    _place: Place<'a>,
}

/// A call's share of the exclusive rule.
enum Turn<'a> {
    /// Beside other calls of tools marked `concurrency_safe`.
    Shared {
        /// Held for the turn.
        _guard: RwLockReadGuard<'a, ()>,
    },
    /// Alone.
    Alone {
        /// Held for the turn.
        _guard: RwLockWriteGuard<'a, ()>,
    },
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
