//! Redeeming a `requestState` once across the fleet, in Redis.
//!
//! A state is redeemed by `SET airlock:state:<id> 1 NX PX <ttl>`: the first
//! replica to write the key runs the call, every later attempt (on any
//! replica) finds it and is refused. The key outlives the state by
//! `[fleet] max_clock_skew_secs`, so it is there for as long as any replica
//! would accept the state.
//!
//! Fails closed: when Redis cannot be reached within
//! `[fleet] redis_connect_timeout_ms`, does not answer within
//! `redis_response_timeout_ms`, or `max_pending_redemptions` redemptions
//! are already waiting for it (defaults in `limits.rs`:
//! `DEFAULT_REDIS_CONNECT_TIMEOUT`, `DEFAULT_REDIS_RESPONSE_TIMEOUT`,
//! `DEFAULT_MAX_PENDING_REDEMPTIONS`), the redemption is refused with
//! [`StoreUnavailable`] and the call does not run. (A `SET` that reached
//! Redis but whose answer was lost leaves the state used: the retry is then
//! refused as already used, never run twice.) One multiplexed connection
//! serves every call; a connection that failed is dropped and the next
//! redemption connects anew.

use redis::AsyncConnectionConfig;
use redis::aio::MultiplexedConnection;
use std::time::Duration;
use tokio::sync::{Mutex, Semaphore};

/// The prefix of the keys this module writes.
const KEY_PREFIX: &str = "airlock:state:";

/// How a redemption went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Redeemed {
    /// This is the first use of the state: run the call.
    First,
    /// The state was used before, on this replica or another.
    AlreadyUsed,
}

/// The store could not say whether the state was used: nothing may run.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct StoreUnavailable(pub String);

/// The fleet's record of redeemed states.
pub struct Redeemer {
    client: redis::Client,
    connection: Mutex<Option<MultiplexedConnection>>,
    pending: Semaphore,
    max_pending: usize,
    connect_timeout: Duration,
    response_timeout: Duration,
}

/// How long a redemption may wait for Redis, and how many may wait at once
/// (`[fleet] redis_connect_timeout_ms`, `redis_response_timeout_ms`,
/// `max_pending_redemptions`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreLimits {
    /// How long connecting may take.
    pub connect_timeout: Duration,
    /// How long one reply may take.
    pub response_timeout: Duration,
    /// Redemptions waiting at once; more are refused at once.
    pub max_pending: usize,
}

impl Redeemer {
    /// A redeemer for `url` within `limits`; nothing is connected until the
    /// first redemption.
    ///
    /// # Errors
    ///
    /// `url` is not a Redis URL.
    pub fn new(url: &str, limits: StoreLimits) -> Result<Self, String> {
        let client = redis::Client::open(url).map_err(|e| format!("[fleet] redis_url is not a Redis URL: {e}"))?;
        Ok(Self {
            client,
            connection: Mutex::new(None),
            pending: Semaphore::new(limits.max_pending),
            max_pending: limits.max_pending,
            connect_timeout: limits.connect_timeout,
            response_timeout: limits.response_timeout,
        })
    }

    /// Redeem state `id`, remembered for `ttl`.
    ///
    /// # Errors
    ///
    /// [`StoreUnavailable`] when Redis cannot be asked: the caller must not
    /// run the call.
    pub async fn redeem(&self, id: &str, ttl: Duration) -> Result<Redeemed, StoreUnavailable> {
        let Ok(_permit) = self.pending.try_acquire() else {
            return Err(StoreUnavailable(format!(
                "{} confirmations are already waiting for the shared store (Redis), the most [fleet] \
                 max_pending_redemptions allows",
                self.max_pending
            )));
        };
        let mut connection = self.connection().await?;
        let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
        let answer: Result<Option<String>, redis::RedisError> = redis::cmd("SET")
            .arg(format!("{KEY_PREFIX}{id}"))
            .arg(1)
            .arg("NX")
            .arg("PX")
            .arg(ttl_ms)
            .query_async(&mut connection)
            .await;
        match answer {
            Ok(Some(_)) => Ok(Redeemed::First),
            Ok(None) => Ok(Redeemed::AlreadyUsed),
            Err(err) => {
                if err.is_connection_dropped() || err.is_io_error() || err.is_timeout() || err.is_unrecoverable_error()
                {
                    *self.connection.lock().await = None;
                }
                Err(StoreUnavailable(format!("the shared store (Redis) did not record the confirmation: {err}")))
            }
        }
    }

    /// The connection, made now if there is none.
    async fn connection(&self) -> Result<MultiplexedConnection, StoreUnavailable> {
        let mut slot = self.connection.lock().await;
        if let Some(connection) = slot.as_ref() {
            return Ok(connection.clone());
        }
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.connect_timeout))
            .set_response_timeout(Some(self.response_timeout));
        let connection = self
            .client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(|e| StoreUnavailable(format!("the shared store (Redis) cannot be reached: {e}")))?;
        *slot = Some(connection.clone());
        Ok(connection)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(timeout: Duration, max_pending: usize) -> StoreLimits {
        StoreLimits { connect_timeout: timeout, response_timeout: timeout, max_pending }
    }

    /// A Redis that takes connections (the kernel's backlog does) and never
    /// answers, and its URL.
    fn silent_store() -> (std::net::TcpListener, String) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("redis://127.0.0.1:{}/0", listener.local_addr().unwrap().port());
        (listener, url)
    }

    #[tokio::test]
    async fn an_unreachable_store_refuses_the_redemption() {
        // A port nothing listens on: connecting fails at once.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let redeemer =
            Redeemer::new(&format!("redis://127.0.0.1:{port}/0"), limits(Duration::from_secs(2), 4)).unwrap();
        let err = redeemer.redeem("0123", Duration::from_secs(1)).await.unwrap_err();
        assert!(err.0.contains("cannot be reached"), "{err}");
    }

    #[tokio::test]
    async fn a_store_that_does_not_answer_within_the_timeouts_refuses_the_redemption() {
        // One millisecond to connect and to answer, and a store that never
        // answers: whichever of the two ends the wait, nothing is redeemed.
        let (_store, url) = silent_store();
        let redeemer = Redeemer::new(&url, limits(Duration::from_millis(1), 4)).unwrap();
        assert!(redeemer.redeem("0123", Duration::from_secs(1)).await.is_err());
    }

    #[tokio::test]
    async fn redemptions_past_max_pending_are_refused_at_once() {
        // Two redemptions wait for a store that never answers (for up to a
        // minute, far longer than this test runs): a third is refused.
        let (_store, url) = silent_store();
        let redeemer = std::sync::Arc::new(Redeemer::new(&url, limits(Duration::from_secs(60), 2)).unwrap());
        let mut waiting = Vec::new();
        for id in ["a", "b"] {
            let redeemer = redeemer.clone();
            waiting.push(tokio::spawn(async move { redeemer.redeem(id, Duration::from_secs(1)).await.map(drop) }));
        }
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while redeemer.pending.available_permits() > 0 {
            assert!(tokio::time::Instant::now() < deadline, "the two redemptions never started");
            tokio::task::yield_now().await;
        }
        let err = redeemer.redeem("c", Duration::from_secs(1)).await.unwrap_err();
        assert!(
            err.0.contains("2 confirmations are already waiting") && err.0.contains("max_pending_redemptions"),
            "{err}"
        );
        for task in waiting {
            task.abort();
        }
    }
}
