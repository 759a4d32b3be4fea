//! Where tasks are kept: in this process ([`Local`]), or, for a fleet, in
//! the Redis the replicas already share ([`Shared`]), so that any replica
//! answers `tasks/get` for a task another one runs, and a cancel or an
//! answer sent to any replica reaches the one running the guest.
//!
//! Every change of a task is one atomic step: in this process under a
//! mutex, in Redis in one Lua script. A task is *working* or *waiting for
//! input* until it ends, once: *completed* or *failed* by the call that
//! runs it, or *cancelled* by its principal; each step checks that it has
//! not ended, so an ended task never changes again. Its result is kept
//! until its expiry, then the task is gone.
//!
//! The caps are checked where a task is created: tasks held (running or
//! ended and kept) per principal and in total, and bytes reserved for
//! results per principal and in total. A running task reserves what its
//! result may take; once it ends it holds what its result takes.
//!
//! How a cancel reaches the running call in a fleet: the cancel is written
//! to the task in Redis, and the replica running the task reads the task
//! every [`SHARED_POLL`] while it runs (`Tasks::signal`), which is also
//! when it collects answers to its input requests and writes a heartbeat.
//! Polling one key per running task was chosen over pub/sub: the flag
//! stays in Redis, so a cancel is never lost to a dropped subscription or
//! a reconnect, and it needs no connection of its own; a cancel takes
//! effect within one poll. A running task whose heartbeat is older than
//! [`STALE_AFTER`] (its replica stopped) reads as failed, and is dropped at
//! the end of its lease.

use redis::AsyncConnectionConfig;
use redis::aio::MultiplexedConnection;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::watch;

/// How often the replica running a task in a fleet reads it again (for a
/// cancel or answers) and says it is alive.
pub const SHARED_POLL: Duration = Duration::from_millis(250);
/// A running task in a fleet whose replica has not said it is alive for
/// this long reads as failed: that replica stopped.
pub const STALE_AFTER: Duration = Duration::from_secs(30);
/// What a task whose replica stopped says.
pub const STALE_MESSAGE: &str = "the replica that ran this task stopped before it ended; its result is lost. Make the \
                                 call again";
/// Expired tasks removed from the fleet's indexes per task created.
const SWEEP_BATCH: usize = 256;

/// Where a task is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Running.
    Working,
    /// Waiting for answers to its input requests.
    InputRequired,
    /// Ended with a result (which may be an error result).
    Completed,
    /// Ended without one: the host failed, or the call could not finish.
    Failed,
    /// Cancelled by its principal before it ended.
    Cancelled,
}

impl Status {
    /// Whether the task ended.
    pub fn is_terminal(self) -> bool {
        matches!(self, Status::Completed | Status::Failed | Status::Cancelled)
    }

    /// As kept in Redis and written in logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Working => "working",
            Status::InputRequired => "input_required",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
        }
    }

    /// From what [`Status::as_str`] wrote.
    fn parse(text: &str) -> Option<Status> {
        [Status::Working, Status::InputRequired, Status::Completed, Status::Failed, Status::Cancelled]
            .into_iter()
            .find(|status| status.as_str() == text)
    }
}

/// One task as its principal sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    /// 128 random bits in hex.
    pub id: String,
    /// The principal it belongs to.
    pub principal: String,
    /// The tool it calls.
    pub tool: String,
    /// Where it is.
    pub status: Status,
    /// What it is doing, in words, when there is something to say.
    pub message: Option<String>,
    /// When it was created (Unix milliseconds).
    pub created_ms: u64,
    /// When it last changed (Unix milliseconds).
    pub updated_ms: u64,
    /// When it is dropped (Unix milliseconds); `None` while it runs.
    pub expires_ms: Option<u64>,
    /// The input requests it waits for: key and request (JSON text, as
    /// the front end made it).
    pub input: Vec<(String, String)>,
    /// The result or error of a task that ended (JSON text, as the front
    /// end made it); `None` while it runs, and for a cancelled task.
    pub outcome: Option<String>,
    /// Bytes it holds against the caps: reserved while it runs, its
    /// result's once it ended.
    pub bytes: u64,
}

/// What a running task waits for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Input {
    /// The input requests, by key (JSON text); none: the task is working.
    pub requests: Vec<(String, String)>,
    /// What the task is doing, in words.
    pub message: Option<String>,
}

/// What reached a running task.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Signal {
    /// Its principal cancelled it (or it is gone).
    pub cancelled: bool,
    /// Answers to its input requests, by key, each handed out once.
    pub answers: Vec<(String, String)>,
}

/// Why a task could not be created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Full {
    /// The principal holds `max_per_principal` tasks.
    Principal,
    /// The host holds `max_tasks` tasks.
    Total,
    /// The principal's tasks reserve this many bytes, and the new one's
    /// would not fit under its cap.
    PrincipalBytes(u64),
    /// All tasks reserve this many bytes, and the new one's would not fit.
    TotalBytes(u64),
}

/// The caps a task is created under.
#[derive(Debug, Clone, Copy)]
pub struct Caps {
    /// Tasks one principal may hold.
    pub per_principal: usize,
    /// Tasks the host holds.
    pub total: usize,
    /// Bytes one principal's tasks may hold.
    pub bytes_per_principal: u64,
    /// Bytes all tasks may hold.
    pub bytes_total: u64,
}

/// The shared store could not be asked.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the shared store (Redis) of tasks cannot be reached: {0}")]
pub struct Unavailable(pub String);

/// A task of this process, with what only the running call reads.
#[derive(Debug, Clone)]
struct Held {
    task: Task,
    answers: Vec<(String, String)>,
    cancelled: bool,
}

/// The tasks of this process.
pub struct Local {
    inner: Mutex<HashMap<String, Held>>,
    /// Bumped on every change, so that running calls look again.
    changed: watch::Sender<u64>,
}

impl Default for Local {
    fn default() -> Self {
        Local { inner: Mutex::new(HashMap::new()), changed: watch::channel(0).0 }
    }
}

impl Local {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Held>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn bump(&self) {
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Create `task` within `caps`, after dropping the tasks expired by
    /// `now`.
    pub fn create(&self, task: Task, caps: Caps, now: u64) -> Result<Task, Full> {
        let mut tasks = self.lock();
        tasks.retain(|_, held| held.task.expires_ms.is_none_or(|at| at > now));
        let mine = || tasks.values().filter(|held| held.task.principal == task.principal);
        if mine().count() >= caps.per_principal {
            return Err(Full::Principal);
        }
        if tasks.len() >= caps.total {
            return Err(Full::Total);
        }
        let held: u64 = mine().map(|held| held.task.bytes).sum();
        if held.saturating_add(task.bytes) > caps.bytes_per_principal {
            return Err(Full::PrincipalBytes(held));
        }
        let all: u64 = tasks.values().map(|held| held.task.bytes).sum();
        if all.saturating_add(task.bytes) > caps.bytes_total {
            return Err(Full::TotalBytes(all));
        }
        tasks.insert(task.id.clone(), Held { task: task.clone(), answers: Vec::new(), cancelled: false });
        drop(tasks);
        self.bump();
        Ok(task)
    }

    /// The live task `id`, whoever it belongs to.
    pub fn get(&self, id: &str, now: u64) -> Option<Task> {
        self.lock().get(id).map(|held| &held.task).filter(|task| task.expires_ms.is_none_or(|at| at > now)).cloned()
    }

    /// Change the running task `id`, then tell its call.
    fn change(&self, id: &str, now: u64, change: impl FnOnce(&mut Held)) {
        let mut tasks = self.lock();
        let Some(held) = tasks.get_mut(id).filter(|held| !held.task.status.is_terminal()) else { return };
        change(held);
        held.task.updated_ms = now;
        drop(tasks);
        self.bump();
    }

    /// As [`super::Tasks::set_input`].
    pub fn set_input(&self, id: &str, input: Input, now: u64) {
        self.change(id, now, |held| {
            held.task.status = if input.requests.is_empty() { Status::Working } else { Status::InputRequired };
            held.task.input = input.requests;
            held.task.message = input.message;
        });
    }

    /// As [`super::Tasks::respond`], for a task known to be the caller's.
    pub fn respond(&self, id: &str, answers: Vec<(String, String)>, now: u64) {
        self.change(id, now, |held| {
            for (key, answer) in answers {
                let before = held.task.input.len();
                held.task.input.retain(|(pending, _)| *pending != key);
                if held.task.input.len() < before {
                    held.answers.push((key, answer));
                }
            }
            if held.task.input.is_empty() {
                held.task.status = Status::Working;
            }
        });
    }

    /// As [`super::Tasks::cancel`]: `expires` is when the cancelled task
    /// is dropped.
    pub fn cancel(&self, id: &str, now: u64, expires: u64) {
        self.change(id, now, |held| {
            held.cancelled = true;
            held.task.status = Status::Cancelled;
            held.task.input.clear();
            held.task.message = None;
            held.task.bytes = 0;
            held.task.expires_ms = Some(expires);
        });
    }

    /// As [`super::Tasks::finish`].
    pub fn finish(&self, id: &str, finished: super::Finished, now: u64, expires: u64) {
        self.change(id, now, |held| {
            held.task.status = finished.status;
            held.task.bytes = finished.outcome.as_ref().map_or(0, |outcome| outcome.len() as u64);
            held.task.outcome = finished.outcome;
            held.task.input.clear();
            held.task.message = None;
            held.task.expires_ms = Some(expires);
        });
    }

    /// What reached the running task `id` (its answers taken); a task that
    /// is gone reads as cancelled.
    pub fn signal(&self, id: &str) -> Signal {
        let mut tasks = self.lock();
        let Some(held) = tasks.get_mut(id) else { return Signal { cancelled: true, answers: Vec::new() } };
        Signal { cancelled: held.cancelled, answers: std::mem::take(&mut held.answers) }
    }

    /// A receiver that changes whenever a task does.
    pub fn watch(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }
}

/// A task as kept in Redis: its part that never changes, as JSON.
#[derive(Serialize, Deserialize)]
struct Record {
    id: String,
    principal: String,
    tool: String,
    created_ms: u64,
}

/// The prefix of every key this store writes.
const PREFIX: &str = "airlock:task:";

/// Removes up to `ARGV[2]` tasks expired by `ARGV[1]` from the indexes and
/// the byte counts; shared by the scripts that create tasks. `KEYS`: the
/// index of every task (a sorted set by expiry), the task → "principal
/// bytes" hash, the total bytes.
const SWEEP: &str = r#"
local function sweep(index, owners, total, now, batch)
  local gone = redis.call('ZRANGEBYSCORE', index, '-inf', now, 'LIMIT', 0, batch)
  for _, id in ipairs(gone) do
    local owner = redis.call('HGET', owners, id)
    if owner then
      local space = string.find(owner, ' ')
      local principal = string.sub(owner, 1, space - 1)
      local bytes = tonumber(string.sub(owner, space + 1))
      redis.call('DECRBY', 'airlock:task:bytes-of:' .. principal, bytes)
      redis.call('DECRBY', total, bytes)
      redis.call('ZREM', 'airlock:task:of:' .. principal, id)
      redis.call('HDEL', owners, id)
    end
    redis.call('ZREM', index, id)
  end
end
"#;

/// Creates a task: `KEYS` = the task's hash, the principal's index, the
/// index of every task, the owners hash, the principal's bytes, the total
/// bytes; `ARGV` = the record, the id, now, the lease's end, the caps
/// (count per principal, count, bytes per principal, bytes), the bytes
/// reserved, the principal's key part, the sweep batch. Returns `{"ok"}`,
/// `{"principal"}`, `{"total"}`, `{"principal-bytes", held}` or
/// `{"total-bytes", held}`.
const CREATE: &str = r#"
sweep(KEYS[3], KEYS[4], KEYS[6], ARGV[3], tonumber(ARGV[11]))
if redis.call('ZCOUNT', KEYS[2], '(' .. ARGV[3], '+inf') >= tonumber(ARGV[5]) then return {'principal'} end
if redis.call('ZCOUNT', KEYS[3], '(' .. ARGV[3], '+inf') >= tonumber(ARGV[6]) then return {'total'} end
local reserve = tonumber(ARGV[9])
local mine = tonumber(redis.call('GET', KEYS[5]) or '0')
if mine + reserve > tonumber(ARGV[7]) then return {'principal-bytes', tostring(mine)} end
local all = tonumber(redis.call('GET', KEYS[6]) or '0')
if all + reserve > tonumber(ARGV[8]) then return {'total-bytes', tostring(all)} end
redis.call('HSET', KEYS[1], 'record', ARGV[1], 'status', 'working', 'updated', ARGV[3], 'beat', ARGV[3],
  'cancel', '0', 'bytes', ARGV[9])
redis.call('PEXPIREAT', KEYS[1], ARGV[4])
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[2])
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[2])
redis.call('HSET', KEYS[4], ARGV[2], ARGV[10] .. ' ' .. ARGV[9])
redis.call('INCRBY', KEYS[5], reserve)
redis.call('INCRBY', KEYS[6], reserve)
return {'ok'}
"#;

/// Ends a running task: `KEYS` as [`CREATE`]'s; `ARGV` = the status, the
/// outcome (empty: none), now, the expiry, the bytes it holds from now,
/// the id, the principal's key part, `1` when it was cancelled. Returns
/// `{"ok"}`, `{"gone"}` or `{"ended"}`.
const END: &str = r#"
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return {'gone'} end
if status == 'completed' or status == 'failed' or status == 'cancelled' then return {'ended'} end
local before = tonumber(redis.call('HGET', KEYS[1], 'bytes') or '0')
local after = tonumber(ARGV[5])
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'updated', ARGV[3], 'expires', ARGV[4], 'bytes', ARGV[5],
  'cancel', ARGV[8])
if ARGV[2] ~= '' then redis.call('HSET', KEYS[1], 'outcome', ARGV[2]) end
redis.call('HDEL', KEYS[1], 'input', 'message', 'answers')
redis.call('PEXPIREAT', KEYS[1], ARGV[4])
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[6])
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[6])
redis.call('HSET', KEYS[4], ARGV[6], ARGV[7] .. ' ' .. ARGV[5])
redis.call('INCRBY', KEYS[5], after - before)
redis.call('INCRBY', KEYS[6], after - before)
return {'ok'}
"#;

/// Sets a running task's input requests: `KEYS` = its hash; `ARGV` = the
/// status, the requests (JSON array of `[key, request]`), the message
/// (empty: none), now. Returns `{"ok"}`, or `{"ended"}` for a task that
/// ended or is gone.
const INPUT: &str = r#"
local status = redis.call('HGET', KEYS[1], 'status')
if not status or status == 'completed' or status == 'failed' or status == 'cancelled' then return {'ended'} end
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'input', ARGV[2], 'updated', ARGV[4])
if ARGV[3] == '' then redis.call('HDEL', KEYS[1], 'message') else redis.call('HSET', KEYS[1], 'message', ARGV[3]) end
return {'ok'}
"#;

/// Keeps answers to outstanding input requests: `KEYS` = the task's hash;
/// `ARGV` = the answers (JSON array of `[key, answer]`), now. Answers to
/// keys not outstanding are ignored; with none left the task is working.
/// Returns `{"ok"}`, or `{"not-waiting"}` for a task that waits for no
/// answer.
const RESPOND: &str = r#"
local status = redis.call('HGET', KEYS[1], 'status')
if status ~= 'input_required' then return {'not-waiting'} end
local pending = cjson.decode(redis.call('HGET', KEYS[1], 'input') or '[]')
local kept = cjson.decode(redis.call('HGET', KEYS[1], 'answers') or '[]')
for _, answer in ipairs(cjson.decode(ARGV[1])) do
  for i, request in ipairs(pending) do
    if request[1] == answer[1] then
      table.insert(kept, answer)
      table.remove(pending, i)
      break
    end
  end
end
if #pending == 0 then
  redis.call('HSET', KEYS[1], 'status', 'working', 'input', '[]')
else
  redis.call('HSET', KEYS[1], 'input', cjson.encode(pending))
end
if #kept > 0 then redis.call('HSET', KEYS[1], 'answers', cjson.encode(kept)) end
redis.call('HSET', KEYS[1], 'updated', ARGV[2])
return {'ok'}
"#;

/// What the running replica reads every poll: `KEYS` = the task's hash;
/// `ARGV` = now. Writes the heartbeat, takes the answers. Returns
/// `{cancel, answers}`; `{"1"}` for a task that is gone.
const SIGNAL: &str = r#"
if redis.call('EXISTS', KEYS[1]) == 0 then return {'1'} end
redis.call('HSET', KEYS[1], 'beat', ARGV[1])
local answers = redis.call('HGET', KEYS[1], 'answers')
redis.call('HDEL', KEYS[1], 'answers')
return {redis.call('HGET', KEYS[1], 'cancel'), answers}
"#;

/// The tasks of a fleet, in Redis.
pub struct Shared {
    client: redis::Client,
    connection: tokio::sync::Mutex<Option<MultiplexedConnection>>,
    connect_timeout: Duration,
    response_timeout: Duration,
}

/// The keys a task's creation and end touch, in the scripts' order.
fn keys(id: &str, principal: &str) -> [String; 6] {
    let owner = hex::encode(principal);
    [
        format!("{PREFIX}{id}"),
        format!("{PREFIX}of:{owner}"),
        format!("{PREFIX}index"),
        format!("{PREFIX}owners"),
        format!("{PREFIX}bytes-of:{owner}"),
        format!("{PREFIX}bytes"),
    ]
}

/// `pairs` as a JSON array of `[key, value]`.
fn pairs_json(pairs: &[(String, String)]) -> String {
    let array: Vec<[&str; 2]> = pairs.iter().map(|(key, value)| [key.as_str(), value.as_str()]).collect();
    serde_json::to_string(&array).unwrap_or_else(|_| "[]".to_owned())
}

/// A JSON array of `[key, value]` as pairs (nothing, if it is not one).
fn pairs_from(text: Option<&String>) -> Vec<(String, String)> {
    text.and_then(|text| serde_json::from_str::<Vec<(String, String)>>(text).ok()).unwrap_or_default()
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
        let connection = self
            .client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(|e| Unavailable(e.to_string()))?;
        *slot = Some(connection.clone());
        Ok(connection)
    }

    async fn eval(&self, script: &str, keys: &[String], args: &[String]) -> Result<Vec<Option<String>>, Unavailable> {
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
            Unavailable(err.to_string())
        })
    }

    /// As [`Local::create`]; the task (and its place under the caps) is
    /// dropped at `lease` unless it ends before.
    pub async fn create(
        &self,
        task: Task,
        caps: Caps,
        now: u64,
        lease: u64,
    ) -> Result<Result<Task, Full>, Unavailable> {
        let record = Record {
            id: task.id.clone(),
            principal: task.principal.clone(),
            tool: task.tool.clone(),
            created_ms: task.created_ms,
        };
        let record = serde_json::to_string(&record).map_err(|e| Unavailable(e.to_string()))?;
        let args = [
            record,
            task.id.clone(),
            now.to_string(),
            lease.to_string(),
            caps.per_principal.to_string(),
            caps.total.to_string(),
            caps.bytes_per_principal.to_string(),
            caps.bytes_total.to_string(),
            task.bytes.to_string(),
            hex::encode(&task.principal),
            SWEEP_BATCH.to_string(),
        ];
        let script = format!("{SWEEP}{CREATE}");
        let answer = self.eval(&script, &keys(&task.id, &task.principal), &args).await?;
        let held = || answer.get(1).cloned().flatten().and_then(|held| held.parse().ok()).unwrap_or(0);
        Ok(match answer.first().cloned().flatten().as_deref() {
            Some("ok") => Ok(task),
            Some("principal") => Err(Full::Principal),
            Some("total") => Err(Full::Total),
            Some("principal-bytes") => Err(Full::PrincipalBytes(held())),
            _ => Err(Full::TotalBytes(held())),
        })
    }

    /// As [`Local::get`]; a running task whose replica stopped reads as
    /// failed.
    pub async fn get(&self, id: &str, now: u64) -> Result<Option<Task>, Unavailable> {
        let mut connection = self.connection().await?;
        let fields: Result<HashMap<String, String>, redis::RedisError> =
            redis::cmd("HGETALL").arg(format!("{PREFIX}{id}")).query_async(&mut connection).await;
        let fields = fields.map_err(|e| Unavailable(e.to_string()))?;
        let Some(record) = fields.get("record").and_then(|r| serde_json::from_str::<Record>(r).ok()) else {
            return Ok(None);
        };
        let number = |name: &str| fields.get(name).and_then(|n| n.parse::<u64>().ok());
        let Some(mut status) = fields.get("status").and_then(|s| Status::parse(s)) else { return Ok(None) };
        let mut message = fields.get("message").cloned();
        let expires_ms = number("expires");
        if expires_ms.is_some_and(|at| at <= now) {
            return Ok(None);
        }
        let stale = number("beat").is_some_and(|beat| now.saturating_sub(beat) > STALE_AFTER.as_millis() as u64);
        if !status.is_terminal() && stale {
            status = Status::Failed;
            message = Some(STALE_MESSAGE.to_owned());
        }
        Ok(Some(Task {
            id: record.id,
            principal: record.principal,
            tool: record.tool,
            status,
            message,
            created_ms: record.created_ms,
            updated_ms: number("updated").unwrap_or(record.created_ms),
            expires_ms,
            input: if status == Status::InputRequired { pairs_from(fields.get("input")) } else { Vec::new() },
            outcome: fields.get("outcome").cloned().filter(|_| status.is_terminal()),
            bytes: number("bytes").unwrap_or(0),
        }))
    }

    /// As [`Local::set_input`].
    pub async fn set_input(&self, id: &str, input: Input, now: u64) -> Result<(), Unavailable> {
        let status = if input.requests.is_empty() { Status::Working } else { Status::InputRequired };
        let args = [
            status.as_str().to_owned(),
            pairs_json(&input.requests),
            input.message.unwrap_or_default(),
            now.to_string(),
        ];
        self.eval(INPUT, &[format!("{PREFIX}{id}")], &args).await.map(|_| ())
    }

    /// As [`Local::respond`].
    pub async fn respond(&self, id: &str, answers: Vec<(String, String)>, now: u64) -> Result<(), Unavailable> {
        self.eval(RESPOND, &[format!("{PREFIX}{id}")], &[pairs_json(&answers), now.to_string()]).await.map(|_| ())
    }

    /// End the running task `id` (`cancelled`: by its principal).
    async fn end(
        &self,
        id: &str,
        status: Status,
        outcome: Option<String>,
        (now, expires): (u64, u64),
    ) -> Result<(), Unavailable> {
        let Some(task) = self.get(id, now).await? else { return Ok(()) };
        let bytes = outcome.as_ref().map_or(0, String::len);
        let cancelled = if status == Status::Cancelled { "1" } else { "0" };
        let args = [
            status.as_str().to_owned(),
            outcome.unwrap_or_default(),
            now.to_string(),
            expires.to_string(),
            bytes.to_string(),
            id.to_owned(),
            hex::encode(&task.principal),
            cancelled.to_owned(),
        ];
        self.eval(END, &keys(id, &task.principal), &args).await.map(|_| ())
    }

    /// As [`Local::cancel`].
    pub async fn cancel(&self, id: &str, now: u64, expires: u64) -> Result<(), Unavailable> {
        self.end(id, Status::Cancelled, None, (now, expires)).await
    }

    /// As [`Local::finish`].
    pub async fn finish(&self, id: &str, finished: super::Finished, now: u64, expires: u64) -> Result<(), Unavailable> {
        self.end(id, finished.status, finished.outcome, (now, expires)).await
    }

    /// As [`Local::signal`], also saying the running replica is alive.
    pub async fn signal(&self, id: &str, now: u64) -> Result<Signal, Unavailable> {
        let reply = self.eval(SIGNAL, &[format!("{PREFIX}{id}")], &[now.to_string()]).await?;
        Ok(Signal {
            cancelled: reply.first().cloned().flatten().as_deref() != Some("0"),
            answers: pairs_from(reply.get(1).and_then(Option::as_ref)),
        })
    }
}
