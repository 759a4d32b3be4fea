//! Where approvals are kept: in this process ([`Local`]), in the host's
//! state directory ([`FileStore`], `store/file.rs`), shared by every
//! Airlock process of the host, or, for a fleet, in the Redis the replicas
//! already share ([`Shared`]), so that a page served by one replica answers
//! an approval a call on another waits for, and an approval is used once
//! across all of them.
//!
//! Every change of state is one atomic step: in this process under a
//! mutex, in the state directory under the file's exclusive lock, in Redis
//! in one Lua script. An approval is *pending* until a
//! person answers it (*approved* or *declined*, once), and an approved one
//! is *used* by the first call that runs under it; each step checks the one
//! before, so nothing is answered twice or used twice. An approval lives
//! until its expiry, used or not, so that a replayed link is told it was
//! used rather than that it never existed.
//!
//! Opening one is capped twice: a principal's pending approvals
//! (`max_pending_per_principal`), and the host's (`max_pending`), shared
//! fairly: when the host is full, one principal's pending approval may be
//! withdrawn for another's ([`make_room`]), in the same atomic step as the
//! opening. A withdrawn approval is gone as if it had lapsed.
//!
//! Redis is trusted to keep what was written to it, as the fleet's
//! single-use `requestState`s trust it; when it cannot be reached within
//! the fleet's timeouts the operation fails and nothing is approved or run.
//! The same holds for a state file that cannot be read or written.

mod file;

pub use file::{FILE_POLL, FileStore};

use super::{Answer, Approval, Approver};
use crate::fair_share;
use redis::AsyncConnectionConfig;
use redis::aio::MultiplexedConnection;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::watch;

/// How often a call waiting for an answer kept in Redis looks again.
pub const SHARED_POLL: Duration = Duration::from_millis(200);

/// Why an approval could not be opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Full {
    /// The principal has this many pending approvals, its cap.
    Principal(usize),
    /// The host keeps `cap`, its cap, and none can be withdrawn for this
    /// one: the principal holds `held`, at or above its fair share
    /// (`share`), or no principal holds more than its share.
    Host {
        /// `[approvals] max_pending`.
        cap: usize,
        /// The principal's pending approvals.
        held: usize,
        /// The fair share of `cap` when it is full.
        share: usize,
    },
}

/// What opening an approval found.
#[derive(Debug, Clone, PartialEq)]
pub enum Opened {
    /// A new pending approval, and the pending approval of another
    /// principal withdrawn to make room for it, if the host was full.
    New {
        /// The new approval.
        approval: Approval,
        /// The approval withdrawn for it.
        withdrawn: Option<Box<Approval>>,
    },
    /// A live approval for the same call (principal, tool revision,
    /// arguments) that is not used yet: answered or still pending.
    Existing(Approval),
}

/// Why an answer was not recorded.
#[derive(Debug, Clone, PartialEq)]
pub enum NotAnswered {
    /// No live approval has that id (never opened, or expired).
    Unknown,
    /// It was answered already.
    Answered(Answer),
}

/// Why an approval could not be used by a call.
#[derive(Debug, Clone, PartialEq)]
pub enum NotUsed {
    /// It expired or never existed.
    Unknown,
    /// A call ran under it already.
    Used,
    /// Nobody approved it (pending, or declined).
    NotApproved,
}

/// The store could not be asked (Redis cannot be reached, the state file
/// cannot be read or written): nothing may be approved or run. The text
/// says which store and why.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct Unavailable(pub String);

impl Unavailable {
    /// Redis could not be asked, for `why`.
    fn redis(why: impl std::fmt::Display) -> Self {
        Unavailable(format!("the shared store (Redis) of approvals cannot be reached: {why}"))
    }
}

/// The caps an approval is opened under.
#[derive(Debug, Clone, Copy)]
pub struct Caps {
    /// Pending approvals one principal may have.
    pub per_principal: usize,
    /// Pending approvals the host keeps.
    pub total: usize,
}

/// The approvals of this process.
pub struct Local {
    inner: Mutex<Inner>,
    /// Bumped on every change, so that waiters look again.
    changed: watch::Sender<u64>,
}

#[derive(Default)]
struct Inner {
    by_id: HashMap<String, Approval>,
    /// The live approval of each call key.
    by_key: HashMap<String, String>,
}

impl Default for Local {
    fn default() -> Self {
        Local { inner: Mutex::new(Inner::default()), changed: watch::channel(0).0 }
    }
}

impl Local {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn bump(&self) {
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Open `approval` under `key`, unless a live one of the same key is
    /// there (then that one), within `caps`, withdrawing one of another
    /// principal's by the fair share of `caps.total` when the host is full
    /// ([`make_room`]).
    pub fn open(&self, approval: Approval, key: &str, caps: Caps, now_ms: u64) -> Result<Opened, Full> {
        let mut inner = self.lock();
        inner.by_id.retain(|_, a| a.expires_ms > now_ms);
        let Inner { by_id, by_key } = &mut *inner;
        by_key.retain(|_, id| by_id.contains_key(id));
        if let Some(existing) = by_key.get(key).and_then(|id| by_id.get(id)).filter(|a| !a.used) {
            return Ok(Opened::Existing(existing.clone()));
        }
        let pending = |a: &&Approval| a.answer.is_none();
        if by_id.values().filter(pending).filter(|a| a.principal == approval.principal).count() >= caps.per_principal {
            return Err(Full::Principal(caps.per_principal));
        }
        let holders = by_id.values().filter(pending).map(|a| (a.principal.as_str(), a.id.as_str(), a.created_ms));
        let victim = make_room(holders, &approval.principal, caps)?;
        let withdrawn = victim.and_then(|id| by_id.remove(&id)).map(Box::new);
        if let Some(withdrawn) = &withdrawn {
            by_key.retain(|_, id| *id != withdrawn.id);
        }
        by_key.insert(key.to_owned(), approval.id.clone());
        by_id.insert(approval.id.clone(), approval.clone());
        drop(inner);
        self.bump();
        Ok(Opened::New { approval, withdrawn })
    }

    /// The live approval `id`.
    pub fn get(&self, id: &str, now_ms: u64) -> Option<Approval> {
        self.lock().by_id.get(id).filter(|a| a.expires_ms > now_ms).cloned()
    }

    /// Record `answer` for the pending approval `id`.
    pub fn answer(&self, id: &str, answer: Answer, now_ms: u64) -> Result<Approval, NotAnswered> {
        let mut inner = self.lock();
        let approval = inner.by_id.get_mut(id).filter(|a| a.expires_ms > now_ms).ok_or(NotAnswered::Unknown)?;
        if let Some(given) = &approval.answer {
            return Err(NotAnswered::Answered(given.clone()));
        }
        approval.answer = Some(answer);
        let approval = approval.clone();
        drop(inner);
        self.bump();
        Ok(approval)
    }

    /// Use the approved approval `id` for one call.
    pub fn take(&self, id: &str, now_ms: u64) -> Result<Approval, NotUsed> {
        let mut inner = self.lock();
        let approval = inner.by_id.get_mut(id).filter(|a| a.expires_ms > now_ms).ok_or(NotUsed::Unknown)?;
        use_once(approval.answer.as_ref(), &mut approval.used)?;
        Ok(approval.clone())
    }

    /// Pending approvals, soonest to expire first, at most `max`.
    pub fn pending(&self, now_ms: u64, max: usize) -> Vec<Approval> {
        let inner = self.lock();
        let mut list: Vec<Approval> =
            inner.by_id.values().filter(|a| a.answer.is_none() && a.expires_ms > now_ms).cloned().collect();
        list.sort_by_key(|a| a.expires_ms);
        list.truncate(max);
        list
    }

    /// A receiver that changes whenever an approval does.
    pub fn watch(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }
}

/// Which pending approval to withdraw so that `principal` may open one, of
/// `pending` (each pending approval's principal, id and creation time):
/// none while fewer than `caps.total` are pending; else, by the fair share
/// of `[approvals] max_pending` (`fair_share.rs`), the oldest of the
/// principal holding the most above its share. Only approvals waiting for
/// an answer count and are withdrawn: an answered one, waiting for its call
/// to be made again, holds no place and is never withdrawn. The Lua of
/// [`OPEN`] is the same rule for Redis.
///
/// # Errors
///
/// [`Full::Host`]: `principal` holds its share already, or nobody holds
/// more than theirs.
fn make_room<'a>(
    pending: impl Iterator<Item = (&'a str, &'a str, u64)>,
    principal: &str,
    caps: Caps,
) -> Result<Option<String>, Full> {
    let holdings: Vec<fair_share::Holding<'a, &'a str, u64>> = pending
        .map(|(principal, id, created_ms)| fair_share::Holding {
            principal,
            key: id,
            evictable: true,
            since: created_ms,
        })
        .collect();
    if holdings.len() < caps.total {
        return Ok(None);
    }
    let held = holdings.iter().filter(|h| h.principal == principal).count();
    match fair_share::victim(&holdings, principal, caps.total) {
        Ok(id) => Ok(Some((*id).to_owned())),
        Err(share) => Err(Full::Host { cap: caps.total, held, share }),
    }
}

/// An approval as kept in Redis or a state file: its immutable part, as
/// JSON.
#[derive(Clone, Serialize, Deserialize)]
struct Record {
    id: String,
    principal: String,
    tool: String,
    revision: String,
    argument_digest: String,
    call_id: String,
    card: String,
    reason: String,
    approver: Approver,
    created_ms: u64,
    expires_ms: u64,
}

impl Record {
    fn of(a: &Approval) -> Self {
        Record {
            id: a.id.clone(),
            principal: a.principal.clone(),
            tool: a.tool.clone(),
            revision: a.revision.clone(),
            argument_digest: a.argument_digest.clone(),
            call_id: a.call_id.clone(),
            card: a.card.clone(),
            reason: a.reason.clone(),
            approver: a.approver.clone(),
            created_ms: a.created_ms,
            expires_ms: a.expires_ms,
        }
    }

    fn into_approval(self, answer: Option<Answer>, used: bool) -> Approval {
        Approval {
            id: self.id,
            principal: self.principal,
            tool: self.tool,
            revision: self.revision,
            argument_digest: self.argument_digest,
            call_id: self.call_id,
            card: self.card,
            reason: self.reason,
            approver: self.approver,
            created_ms: self.created_ms,
            expires_ms: self.expires_ms,
            answer,
            used,
        }
    }
}

/// The prefix of every key this store writes.
const PREFIX: &str = "airlock:approval:";

/// Opens an approval: `KEYS` = the approval's hash, the call key, the
/// principal's pending set, the host's pending set; `ARGV` = the record,
/// the id, now, the expiry, the caps (principal, host), the principal, its
/// creation time. Returns `{"new"}`, `{"new", withdrawn id, its record}`,
/// `{"existing", id}`, `{"principal"}` or `{"host", share, held}`.
///
/// When the host is full it withdraws a pending approval by the rule of
/// [`make_room`] (`fair_share.rs`), written again here because it must run
/// inside the script to be atomic: counts per principal of the host's
/// pending set, the share `max(floor(cap / P), 1)`, then the oldest
/// approval of the principal holding the most above it (ties: the smaller
/// principal, then the smaller id). The withdrawn approval's hash and its
/// places in the pending sets go; its call key may stay until it expires,
/// since a call key naming no approval opens a new one.
const OPEN: &str = r#"
local existing = redis.call('GET', KEYS[2])
if existing then
  local used = redis.call('HGET', 'airlock:approval:' .. existing, 'used')
  if used == '0' then return {'existing', existing} end
end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', ARGV[3])
if redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[5]) then return {'principal'} end
local cap = tonumber(ARGV[6])
local reply = {'new'}
local ids = redis.call('ZRANGE', KEYS[4], 0, -1)
if #ids >= cap then
  local count, holder, since, principals = {}, {}, {}, 0
  for _, id in ipairs(ids) do
    local fields = redis.call('HMGET', 'airlock:approval:' .. id, 'principal', 'created', 'record')
    local principal, created = fields[1], tonumber(fields[2])
    if not principal and fields[3] then
      local record = cjson.decode(fields[3])
      principal, created = record.principal, tonumber(record.created_ms)
    end
    if principal then
      if not count[principal] then
        count[principal] = 0
        principals = principals + 1
      end
      count[principal] = count[principal] + 1
      holder[id], since[id] = principal, created or 0
    end
  end
  local held = count[ARGV[7]] or 0
  if held == 0 then principals = principals + 1 end
  local share = math.max(math.floor(cap / math.max(principals, 1)), 1)
  if held >= share then return {'host', tostring(share), tostring(held)} end
  local victim, most, oldest, whose
  for _, id in ipairs(ids) do
    local principal = holder[id]
    if principal and principal ~= ARGV[7] and count[principal] > share then
      local n, at = count[principal], since[id]
      if not victim or n > most or (n == most and (at < oldest or (at == oldest
          and (principal < whose or (principal == whose and id < victim))))) then
        victim, most, oldest, whose = id, n, at, principal
      end
    end
  end
  if not victim then return {'host', tostring(share), tostring(held)} end
  local hex = whose:gsub('.', function(c) return string.format('%02x', string.byte(c)) end)
  reply = {'new', victim, redis.call('HGET', 'airlock:approval:' .. victim, 'record')}
  redis.call('DEL', 'airlock:approval:' .. victim)
  redis.call('ZREM', 'airlock:approval:pending-of:' .. hex, victim)
  redis.call('ZREM', KEYS[4], victim)
end
local ttl = tonumber(ARGV[4]) - tonumber(ARGV[3])
redis.call('HSET', KEYS[1], 'record', ARGV[1], 'state', 'pending', 'used', '0', 'principal', ARGV[7],
  'created', ARGV[8])
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('SET', KEYS[2], ARGV[2], 'PX', ttl)
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[2])
redis.call('PEXPIRE', KEYS[3], ttl)
redis.call('ZADD', KEYS[4], ARGV[4], ARGV[2])
return reply
"#;

/// Answers an approval: `KEYS` = its hash, the principal's pending set,
/// the host's pending set; `ARGV` = `approved`/`declined`, the answer
/// (JSON), the id. Returns `{"ok"}`, `{"unknown"}` or `{"answered", answer}`.
const ANSWER: &str = r#"
local state = redis.call('HGET', KEYS[1], 'state')
if not state then return {'unknown'} end
if state ~= 'pending' then return {'answered', redis.call('HGET', KEYS[1], 'answer')} end
redis.call('HSET', KEYS[1], 'state', ARGV[1], 'answer', ARGV[2])
redis.call('ZREM', KEYS[2], ARGV[3])
redis.call('ZREM', KEYS[3], ARGV[3])
return {'ok'}
"#;

/// Uses an approved approval: `KEYS` = its hash. Returns `{"ok"}`,
/// `{"unknown"}`, `{"used"}` or `{"not-approved"}`.
const TAKE: &str = r#"
local state = redis.call('HGET', KEYS[1], 'state')
if not state then return {'unknown'} end
if redis.call('HGET', KEYS[1], 'used') ~= '0' then return {'used'} end
if state ~= 'approved' then return {'not-approved'} end
redis.call('HSET', KEYS[1], 'used', '1')
return {'ok'}
"#;

/// The approvals of a fleet, in Redis.
pub struct Shared {
    client: redis::Client,
    connection: tokio::sync::Mutex<Option<MultiplexedConnection>>,
    connect_timeout: Duration,
    response_timeout: Duration,
}

impl Shared {
    /// A store at `url`; nothing is connected until first used.
    ///
    /// # Errors
    ///
    /// `url` is not a Redis URL.
    pub fn new(url: &str, connect_timeout: Duration, response_timeout: Duration) -> Result<Self, String> {
        let client = redis::Client::open(url).map_err(|e| format!("[fleet] redis_url is not a Redis URL: {e}"))?;
        Ok(Shared { client, connection: tokio::sync::Mutex::new(None), connect_timeout, response_timeout })
    }

    async fn connection(&self) -> Result<MultiplexedConnection, Unavailable> {
        let mut slot = self.connection.lock().await;
        if let Some(connection) = slot.as_ref() {
            return Ok(connection.clone());
        }
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.connect_timeout))
            .set_response_timeout(Some(self.response_timeout));
        let connection =
            self.client.get_multiplexed_async_connection_with_config(&config).await.map_err(Unavailable::redis)?;
        *slot = Some(connection.clone());
        Ok(connection)
    }

    /// Run `script` with `keys` and `args` (every answer a list of
    /// strings).
    pub(in crate::approval) async fn eval(
        &self,
        script: &str,
        keys: &[String],
        args: &[String],
    ) -> Result<Vec<Option<String>>, Unavailable> {
        let mut connection = self.connection().await?;
        let mut command = redis::cmd("EVAL");
        command.arg(script).arg(keys.len());
        for key in keys {
            command.arg(key);
        }
        for arg in args {
            command.arg(arg);
        }
        let answer: Result<Vec<Option<String>>, redis::RedisError> = command.query_async(&mut connection).await;
        answer.map_err(|err| {
            if (err.is_connection_dropped() || err.is_io_error() || err.is_timeout() || err.is_unrecoverable_error())
                && let Ok(mut slot) = self.connection.try_lock()
            {
                *slot = None;
            }
            Unavailable::redis(err)
        })
    }

    /// `GET key`.
    pub(in crate::approval) async fn get_key(&self, key: &str) -> Result<Option<String>, Unavailable> {
        let mut connection = self.connection().await?;
        let value: Result<Option<String>, redis::RedisError> =
            redis::cmd("GET").arg(key).query_async(&mut connection).await;
        value.map_err(|e| Unavailable(e.to_string()))
    }

    /// `HGET key field`.
    pub(in crate::approval) async fn hash_get(&self, key: &str, field: &str) -> Result<Option<String>, Unavailable> {
        let mut connection = self.connection().await?;
        let value: Result<Option<String>, redis::RedisError> =
            redis::cmd("HGET").arg(key).arg(field).query_async(&mut connection).await;
        value.map_err(|e| Unavailable(e.to_string()))
    }

    /// `HGETALL key`.
    pub(in crate::approval) async fn hash_all(&self, key: &str) -> Result<HashMap<String, String>, Unavailable> {
        let mut connection = self.connection().await?;
        let value: Result<HashMap<String, String>, redis::RedisError> =
            redis::cmd("HGETALL").arg(key).query_async(&mut connection).await;
        value.map_err(|e| Unavailable(e.to_string()))
    }

    fn principal_set(principal: &str) -> String {
        format!("{PREFIX}pending-of:{}", hex::encode(principal))
    }

    fn host_set() -> String {
        format!("{PREFIX}pending")
    }

    fn hash(id: &str) -> String {
        format!("{PREFIX}{id}")
    }

    /// As [`Local::open`].
    pub async fn open(
        &self,
        approval: Approval,
        key: &str,
        caps: Caps,
        now_ms: u64,
    ) -> Result<Result<Opened, Full>, Unavailable> {
        let record = serde_json::to_string(&Record::of(&approval)).map_err(Unavailable::redis)?;
        let keys = [
            Self::hash(&approval.id),
            format!("{PREFIX}call:{key}"),
            Self::principal_set(&approval.principal),
            Self::host_set(),
        ];
        let args = [
            record,
            approval.id.clone(),
            now_ms.to_string(),
            approval.expires_ms.to_string(),
            caps.per_principal.to_string(),
            caps.total.to_string(),
            approval.principal.clone(),
            approval.created_ms.to_string(),
        ];
        let answer = self.eval(OPEN, &keys, &args).await?;
        let word = |i: usize| answer.get(i).cloned().flatten();
        let number = |i: usize| word(i).and_then(|n| n.parse().ok()).unwrap_or_default();
        let full = || Full::Host { cap: caps.total, held: number(2), share: number(1) };
        Ok(match (word(0).as_deref(), word(1)) {
            (Some("existing"), Some(id)) => match self.get(&id, now_ms).await? {
                Some(existing) => Ok(Opened::Existing(existing)),
                // Expired between the two steps: a new one is opened next time.
                None => Err(full()),
            },
            (Some("principal"), _) => Err(Full::Principal(caps.per_principal)),
            (Some("host"), _) => Err(full()),
            _ => {
                let withdrawn = word(2).and_then(|r| serde_json::from_str::<Record>(&r).ok());
                Ok(Opened::New { approval, withdrawn: withdrawn.map(|r| Box::new(r.into_approval(None, false))) })
            }
        })
    }

    /// As [`Local::get`].
    pub async fn get(&self, id: &str, now_ms: u64) -> Result<Option<Approval>, Unavailable> {
        let mut connection = self.connection().await?;
        let fields: Result<HashMap<String, String>, redis::RedisError> =
            redis::cmd("HGETALL").arg(Self::hash(id)).query_async(&mut connection).await;
        let fields = fields.map_err(Unavailable::redis)?;
        let Some(record) = fields.get("record").and_then(|r| serde_json::from_str::<Record>(r).ok()) else {
            return Ok(None);
        };
        let answer = fields.get("answer").and_then(|a| serde_json::from_str::<Answer>(a).ok());
        let used = fields.get("used").is_some_and(|u| u == "1");
        let approval = record.into_approval(answer, used);
        Ok((approval.expires_ms > now_ms).then_some(approval))
    }

    /// As [`Local::answer`].
    pub async fn answer(
        &self,
        id: &str,
        answer: Answer,
        now_ms: u64,
    ) -> Result<Result<Approval, NotAnswered>, Unavailable> {
        let Some(approval) = self.get(id, now_ms).await? else { return Ok(Err(NotAnswered::Unknown)) };
        let text = serde_json::to_string(&answer).map_err(Unavailable::redis)?;
        let state = if answer.approved { "approved" } else { "declined" };
        let keys = [Self::hash(id), Self::principal_set(&approval.principal), Self::host_set()];
        let reply = self.eval(ANSWER, &keys, &[state.to_owned(), text, id.to_owned()]).await?;
        Ok(match reply.first().cloned().flatten().as_deref() {
            Some("ok") => Ok(Approval { answer: Some(answer), ..approval }),
            Some("answered") => match reply.get(1).cloned().flatten().and_then(|a| serde_json::from_str(&a).ok()) {
                Some(given) => Err(NotAnswered::Answered(given)),
                None => Err(NotAnswered::Unknown),
            },
            _ => Err(NotAnswered::Unknown),
        })
    }

    /// As [`Local::take`].
    pub async fn take(&self, id: &str, now_ms: u64) -> Result<Result<Approval, NotUsed>, Unavailable> {
        let reply = self.eval(TAKE, &[Self::hash(id)], &[]).await?;
        Ok(match reply.first().cloned().flatten().as_deref() {
            Some("ok") => match self.get(id, now_ms).await? {
                Some(approval) => Ok(approval),
                None => Err(NotUsed::Unknown),
            },
            Some("used") => Err(NotUsed::Used),
            Some("not-approved") => Err(NotUsed::NotApproved),
            _ => Err(NotUsed::Unknown),
        })
    }

    /// As [`Local::pending`].
    pub async fn pending(&self, now_ms: u64, max: usize) -> Result<Vec<Approval>, Unavailable> {
        let ids: Vec<String> = {
            let mut connection = self.connection().await?;
            let ids: Result<Vec<String>, redis::RedisError> = redis::cmd("ZRANGEBYSCORE")
                .arg(Self::host_set())
                .arg(now_ms.saturating_add(1))
                .arg("+inf")
                .arg("LIMIT")
                .arg(0)
                .arg(max)
                .query_async(&mut connection)
                .await;
            ids.map_err(Unavailable::redis)?
        };
        let mut list = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(approval) = self.get(&id, now_ms).await?
                && approval.answer.is_none()
            {
                list.push(approval);
            }
        }
        Ok(list)
    }
}

/// Mark an approval `used` for one call, if it is approved and unused.
fn use_once(answer: Option<&Answer>, used: &mut bool) -> Result<(), NotUsed> {
    if *used {
        return Err(NotUsed::Used);
    }
    if !answer.is_some_and(|a| a.approved) {
        return Err(NotUsed::NotApproved);
    }
    *used = true;
    Ok(())
}

#[cfg(test)]
mod tests;
