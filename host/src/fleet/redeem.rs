//! Redeeming a `requestState` once across the fleet, in Redis.
//!
//! A state is redeemed by `SET airlock:state:<id> 1 NX PX <ttl>`: the first
//! replica to write the key runs the call, every later attempt (on any
//! replica) finds it and is refused. The key outlives the state by
//! [`MAX_CLOCK_SKEW`](super::MAX_CLOCK_SKEW), so it is there for as long
//! as any replica would accept the state.
//!
//! Fails closed: when Redis cannot be reached within
//! [`REDIS_CONNECT_TIMEOUT`], does not answer within
//! [`REDIS_RESPONSE_TIMEOUT`], or [`MAX_PENDING_REDEMPTIONS`] redemptions
//! are already waiting for it, the redemption is refused with
//! [`StoreUnavailable`] and the call does not run. (A `SET` that reached
//! Redis but whose answer was lost leaves the state used: the retry is then
//! refused as already used, never run twice.) One multiplexed connection
//! serves every call; a connection that failed is dropped and the next
//! redemption connects anew.

use redis::AsyncConnectionConfig;
use redis::aio::MultiplexedConnection;
use std::time::Duration;
use tokio::sync::{Mutex, Semaphore};

/// How long connecting to Redis may take before a redemption is refused.
pub const REDIS_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// How long Redis may take to answer one command before the redemption is
/// refused.
pub const REDIS_RESPONSE_TIMEOUT: Duration = Duration::from_secs(2);
/// At most this many redemptions wait for Redis at once; more are refused
/// at once rather than queued behind a store that is slow or gone.
pub const MAX_PENDING_REDEMPTIONS: usize = 1024;
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
}

impl Redeemer {
    /// A redeemer for `url`; nothing is connected until the first redemption.
    ///
    /// # Errors
    ///
    /// `url` is not a Redis URL.
    pub fn new(url: &str) -> Result<Self, String> {
        let client = redis::Client::open(url).map_err(|e| format!("[fleet] redis_url is not a Redis URL: {e}"))?;
        Ok(Self { client, connection: Mutex::new(None), pending: Semaphore::new(MAX_PENDING_REDEMPTIONS) })
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
                "{MAX_PENDING_REDEMPTIONS} confirmations are already waiting for the shared store (Redis)"
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
            .set_connection_timeout(Some(REDIS_CONNECT_TIMEOUT))
            .set_response_timeout(Some(REDIS_RESPONSE_TIMEOUT));
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

    #[tokio::test]
    async fn an_unreachable_store_refuses_the_redemption() {
        // A port nothing listens on: connecting fails at once.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let redeemer = Redeemer::new(&format!("redis://127.0.0.1:{port}/0")).unwrap();
        let err = redeemer.redeem("0123", Duration::from_secs(1)).await.unwrap_err();
        assert!(err.0.contains("cannot be reached"), "{err}");
    }
}
