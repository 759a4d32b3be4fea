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
//!
//! What Redis or the network reports (`WRONGPASS …`, a host name that does
//! not resolve, a refused address) is kept in [`StoreUnavailable::detail`]
//! for the host's log; the client is shown a fixed sentence naming the
//! shared store.

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
///
/// Displays only [`reason`](Self::reason), a fixed sentence that is safe to
/// hand to the client; what Redis or the network said (which can name
/// hosts, users or addresses of the infrastructure) is in
/// [`detail`](Self::detail), for the host's log only.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{reason}")]
pub struct StoreUnavailable {
    /// What went wrong, in words the client may read.
    pub reason: String,
    /// What the Redis client reported, for the host's log; empty when
    /// there is nothing more to say than `reason`.
    pub detail: String,
}

/// The client's reason when Redis cannot be reached.
pub const UNREACHABLE: &str = "the shared store (Redis) cannot be reached";
/// The client's reason when Redis did not answer the redemption.
pub const NOT_RECORDED: &str = "the shared store (Redis) did not record the confirmation";

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
            return Err(StoreUnavailable {
                reason: format!(
                    "{} confirmations are already waiting for the shared store (Redis), the most [fleet] \
                     max_pending_redemptions allows",
                    self.max_pending
                ),
                detail: String::new(),
            });
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
                Err(StoreUnavailable { reason: NOT_RECORDED.to_owned(), detail: err.to_string() })
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
            .map_err(|e| StoreUnavailable { reason: UNREACHABLE.to_owned(), detail: e.to_string() })?;
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
        assert_eq!(err.reason, UNREACHABLE);
        assert!(!err.detail.is_empty(), "the cause is kept for the host's log");
    }

    /// A Redis that answers every command with an error naming the
    /// infrastructure, and its URL.
    fn refusing_store() -> (tokio::task::JoinHandle<()>, String) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let url = format!("redis://127.0.0.1:{}/0", listener.local_addr().unwrap().port());
        let listener = tokio::net::TcpListener::from_std(listener).unwrap();
        let task = tokio::spawn(async move {
            use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
            while let Ok((mut socket, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 4096];
                    while let Ok(read @ 1..) = socket.read(&mut buf).await {
                        // One error per command in what was read (each
                        // command is an array: a line starting with `*`).
                        let data = &buf[..read];
                        let commands = data.split(|&b| b == b'\n').filter(|l| l.first() == Some(&b'*')).count();
                        let reply = "-WRONGPASS invalid password for user ops at redis.internal.example\r\n";
                        if socket.write_all(reply.repeat(commands.max(1)).as_bytes()).await.is_err() {
                            break;
                        }
                    }
                });
            }
        });
        (task, url)
    }

    #[tokio::test]
    async fn what_redis_says_is_logged_but_never_handed_to_the_client() {
        let (store, url) = refusing_store();
        let redeemer = Redeemer::new(&url, limits(Duration::from_secs(30), 4)).unwrap();
        let err = redeemer.redeem("0123", Duration::from_secs(1)).await.unwrap_err();
        let shown = err.to_string();
        assert!(shown == UNREACHABLE || shown == NOT_RECORDED, "{shown}");
        for secret in ["WRONGPASS", "ops", "redis.internal.example", "127.0.0.1"] {
            assert!(!shown.contains(secret), "{shown:?} names {secret:?}");
        }
        assert!(err.detail.contains("WRONGPASS"), "the cause is kept for the log: {err:?}");
        store.abort();
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
            err.reason.contains("2 confirmations are already waiting")
                && err.reason.contains("max_pending_redemptions"),
            "{err}"
        );
        for task in waiting {
            task.abort();
        }
    }
}
