//! MCP tasks (the `io.modelcontextprotocol/tasks` extension): calls whose
//! result is kept for the client to fetch later, so that a call longer
//! than a client's request timeout can still run.
//!
//! A task is a call like any other: it goes through every stage of the
//! pipeline (quotas, validation, authorization, confirmation, the memory
//! budget, the audit log); what this module adds is where its state and
//! result are kept while the client is away. A task belongs to the
//! principal that created it: for anyone else it does not exist, and the
//! answer is the one an unknown id gets, so ids cannot be probed. Tasks are
//! held under caps declared here ([`TASKS`]): per principal under a
//! host-wide total, in count and in bytes reserved for results, and a
//! finished task's result is dropped `result_ttl_secs` after it ended.
//!
//! Kept in this process, or with `[fleet]` in the fleet's Redis
//! (`tasks/store.rs`), so that any replica answers `tasks/get` and a
//! cancel sent to any replica reaches the one running the guest.
//!
//! # Trust
//!
//! Trusted: the operator's settings and the front end (which mints the
//! results and input requests it keeps here). Not trusted: a task id a
//! client sends (checked for shape before any lookup, and only ever
//! compared, never used to build anything but a key) and the principal's
//! wish to hold more than its share.

pub mod store;

use crate::fleet::FleetSettings;
use airlock_core::outcome::{ErrorKind, Failure};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use store::{Full, Local, Shared};
pub use store::{Input, Signal, Status, Task, Unavailable};
use tokio_util::sync::CancellationToken;

/// Default `[tasks] result_ttl_secs`.
pub const DEFAULT_RESULT_TTL: Duration = Duration::from_secs(3600);
/// Default `[tasks] max_per_principal`.
pub const DEFAULT_MAX_PER_PRINCIPAL: usize = 32;
/// Default `[tasks] max_tasks`.
pub const DEFAULT_MAX_TASKS: usize = 4096;
/// Most `[tasks] max_tasks` accepted.
pub const MAX_TASKS_CEILING: usize = 1 << 20;
/// Default `[tasks] max_result_mib_per_principal`, in bytes.
pub const DEFAULT_MAX_RESULT_BYTES_PER_PRINCIPAL: usize = 128 << 20;
/// Default `[tasks] max_result_mib`, in bytes.
pub const DEFAULT_MAX_RESULT_BYTES: usize = 1 << 30;
/// Most `[tasks] max_result_mib` (and per principal) accepted, in MiB.
pub const MAX_RESULT_MIB_CEILING: u64 = 1 << 20;
/// Default `[tasks] poll_interval_ms`.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_millis(1000);
/// Bytes reserved for a kept result on top of what the tool's output may
/// take: the result's envelope, a failure's message and the host's note.
pub const RESULT_OVERHEAD_BYTES: u64 = 16 << 10;

airlock_settings::section! {
    /// The keys of `[tasks]`.
    pub const TASKS: Section<TaskSettings> = "tasks";
    /// `[tasks]` as written.
    pub struct RawTasks {}
    hand {}
    /// `[tasks]`: how long MCP tasks' results are kept, and how many tasks
    /// and result bytes a principal and the host may hold.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    group pub struct TaskSettings: Default (RawTaskKeys) at () {
        ;
        /// how long a finished task (its result or error) is kept for the client to fetch, from when it ended
        result_ttl_secs => result_ttl: Duration = DEFAULT_RESULT_TTL, Reload, range Secs 1..=604_800;
        /// tasks one principal may hold, running or with a result kept; past it a call that would be a task is refused (`quota_exceeded`)
        max_per_principal => max_per_principal: usize = DEFAULT_MAX_PER_PRINCIPAL, Reload,
            range Count 1..=MAX_TASKS_CEILING as u64;
        /// tasks the host holds, all principals; past it a call that would be a task is refused (`busy`)
        max_tasks => max_tasks: usize = DEFAULT_MAX_TASKS, Reload, range Count 1..=MAX_TASKS_CEILING as u64;
        /// result bytes one principal's tasks may reserve: each reserves twice its tool's `max_output_bytes` (the text and the structured result), its `max_content_bytes` in base64 for a tool that can attach content blocks, and 16 KiB until it ends, then what its result takes (with the defaults about 12.7 MiB: 10 running tasks of such a tool at 128 MiB)
        max_result_mib_per_principal => max_result_bytes_per_principal: usize = DEFAULT_MAX_RESULT_BYTES_PER_PRINCIPAL,
            Reload, range MibBytes 1..=MAX_RESULT_MIB_CEILING;
        /// result bytes all tasks may reserve together
        max_result_mib => max_result_bytes: usize = DEFAULT_MAX_RESULT_BYTES, Reload,
            range MibBytes 1..=MAX_RESULT_MIB_CEILING;
        /// how often a client is told to poll `tasks/get` (`pollIntervalMs`)
        poll_interval_ms => poll_interval: Duration = DEFAULT_POLL_INTERVAL, Reload, range Millis 100..=60_000;
    }
}

impl TaskSettings {
    /// Check `[tasks]`.
    ///
    /// # Errors
    ///
    /// A value out of range, or a principal's share above the whole,
    /// naming the keys and what is accepted.
    pub fn from_raw(raw: RawTasks) -> Result<Self, String> {
        let scope = TASKS.scope();
        let settings = Self::from_keys(&(&raw).into(), &Self::defaults(), &scope)?;
        if settings.max_per_principal > settings.max_tasks {
            return Err(format!(
                "{scope} max_per_principal = {} is more than max_tasks = {}: one principal's share is at most the \
                 whole",
                settings.max_per_principal, settings.max_tasks
            ));
        }
        if settings.max_result_bytes_per_principal > settings.max_result_bytes {
            return Err(format!(
                "{scope} max_result_mib_per_principal = {} is more than max_result_mib = {}: one principal's share \
                 is at most the whole",
                settings.max_result_bytes_per_principal >> 20,
                settings.max_result_bytes >> 20
            ));
        }
        Ok(settings)
    }

    /// The caps a new task is created under.
    fn caps(&self) -> store::Caps {
        store::Caps {
            per_principal: self.max_per_principal,
            total: self.max_tasks,
            bytes_per_principal: self.max_result_bytes_per_principal as u64,
            bytes_total: self.max_result_bytes as u64,
        }
    }
}

/// What a new task is.
#[derive(Debug, Clone)]
pub struct NewTask {
    /// The principal it belongs to.
    pub principal: String,
    /// The tool it calls.
    pub tool: String,
    /// Bytes reserved for its result until it ends ([`result_reserve`]).
    pub reserve: u64,
    /// The longest it can run (its deadline, the longest wait for a
    /// confirmation, a margin): in a fleet, a task whose replica stopped is
    /// dropped this long after it was created.
    pub lease: Duration,
}

/// What a task's result may take while it runs: twice the tool's output
/// cap (the result's text and its structured form), its content blocks
/// (`max_content_bytes` of a tool that can attach them, in base64: 4 bytes
/// for 3) and [`RESULT_OVERHEAD_BYTES`].
pub fn result_reserve(max_output_bytes: usize, max_content_bytes: usize) -> u64 {
    let content = (max_content_bytes as u64).div_ceil(3).saturating_mul(4);
    (max_output_bytes as u64).saturating_mul(2).saturating_add(content).saturating_add(RESULT_OVERHEAD_BYTES)
}

/// How a task ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    /// `Completed`, `Failed`, or `Cancelled` (the host cancelled the call:
    /// it is shutting down).
    pub status: Status,
    /// The result or error, as the front end keeps it (JSON text); `None`
    /// for a cancelled call.
    pub outcome: Option<String>,
}

/// Where tasks are kept (the Redis client boxed: it is several times the
/// size of the local store's handle).
enum Kept {
    Local(Local),
    Shared(Box<Shared>),
}

/// The host's tasks, kept for the host's life (a reload keeps them and
/// moves their caps).
pub struct Tasks {
    kept: Kept,
}

impl std::fmt::Debug for Tasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tasks").field("shared", &matches!(self.kept, Kept::Shared(_))).finish_non_exhaustive()
    }
}

/// Unix time in milliseconds.
pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// `duration` in whole milliseconds.
fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

impl Tasks {
    /// The tasks of a host: in Redis for a fleet, else in this process.
    ///
    /// # Errors
    ///
    /// The fleet's Redis URL is not one.
    pub fn new(fleet: Option<&FleetSettings>) -> Result<Self, String> {
        let kept = match fleet {
            Some(fleet) => Kept::Shared(Box::new(Shared::new(
                &fleet.redis_url,
                fleet.redis_connect_timeout,
                fleet.redis_response_timeout,
            )?)),
            None => Kept::Local(Local::default()),
        };
        Ok(Tasks { kept })
    }

    /// Whether the tasks are kept in the fleet's Redis.
    pub fn shared(&self) -> bool {
        matches!(self.kept, Kept::Shared(_))
    }

    /// Create a task for `new` under `settings`; it can be read (as
    /// `working`) as soon as this returns.
    ///
    /// # Errors
    ///
    /// A failure for the caller, naming the cap and its value: the
    /// principal's or the host's count of tasks or bytes reserved for
    /// results, the shared store unreachable, no random source.
    pub async fn create(&self, new: NewTask, settings: &TaskSettings) -> Result<Task, Failure> {
        let now = now_ms();
        let id = crate::approval::link::new_id().map_err(|why| Failure::new(ErrorKind::Internal, why))?;
        let task = Task {
            id,
            principal: new.principal,
            tool: new.tool,
            status: Status::Working,
            message: None,
            created_ms: now,
            updated_ms: now,
            expires_ms: None,
            input: Vec::new(),
            outcome: None,
            bytes: new.reserve,
        };
        let caps = settings.caps();
        let created = match &self.kept {
            Kept::Local(local) => local.create(task, caps, now),
            Kept::Shared(shared) => {
                let lease = now.saturating_add(millis(new.lease));
                shared.create(task, caps, now, lease).await.map_err(|err| unavailable(&err))?
            }
        };
        created.map_err(|full| refused(&full, new.reserve, settings))
    }

    /// The task `id` as its principal sees it; `None` for an unknown or
    /// expired id, or one of another principal (the same answer).
    ///
    /// # Errors
    ///
    /// The shared store cannot be asked.
    pub async fn get(&self, id: &str, principal: &str) -> Result<Option<Task>, Unavailable> {
        if !crate::approval::link::is_id(id) {
            return Ok(None);
        }
        let task = match &self.kept {
            Kept::Local(local) => local.get(id, now_ms()),
            Kept::Shared(shared) => shared.get(id, now_ms()).await?,
        };
        Ok(task.filter(|task| task.principal == principal))
    }

    /// The task runs on, waiting for `input` (a task whose `input` has no
    /// requests is `working`). A task that ended is left as it is.
    ///
    /// # Errors
    ///
    /// The shared store cannot be asked.
    pub async fn set_input(&self, id: &str, input: Input) -> Result<(), Unavailable> {
        match &self.kept {
            Kept::Local(local) => {
                local.set_input(id, input, now_ms());
                Ok(())
            }
            Kept::Shared(shared) => shared.set_input(id, input, now_ms()).await,
        }
    }

    /// Answers of `principal` to the task's outstanding input requests:
    /// those of keys not outstanding are ignored, the others are kept for
    /// the running call ([`Tasks::signal`]). `None`: no such task for
    /// `principal`.
    ///
    /// # Errors
    ///
    /// The shared store cannot be asked.
    pub async fn respond(
        &self,
        id: &str,
        principal: &str,
        answers: Vec<(String, String)>,
    ) -> Result<Option<()>, Unavailable> {
        if self.get(id, principal).await?.is_none() {
            return Ok(None);
        }
        match &self.kept {
            Kept::Local(local) => local.respond(id, answers, now_ms()),
            Kept::Shared(shared) => shared.respond(id, answers, now_ms()).await?,
        }
        Ok(Some(()))
    }

    /// Cancel the task `id` of `principal`: a task still running is
    /// `cancelled` from now on (its call is told through
    /// [`Tasks::signal`]) and kept `result_ttl` without a result; one that
    /// ended is left as it is. `None`: no such task for `principal`.
    ///
    /// # Errors
    ///
    /// The shared store cannot be asked.
    pub async fn cancel(&self, id: &str, principal: &str, result_ttl: Duration) -> Result<Option<()>, Unavailable> {
        if self.get(id, principal).await?.is_none() {
            return Ok(None);
        }
        let now = now_ms();
        let expires = now.saturating_add(millis(result_ttl));
        match &self.kept {
            Kept::Local(local) => local.cancel(id, now, expires),
            Kept::Shared(shared) => shared.cancel(id, now, expires).await?,
        }
        Ok(Some(()))
    }

    /// The running task `id` ended: its result is kept `result_ttl` from
    /// now. A task cancelled meanwhile stays cancelled.
    ///
    /// # Errors
    ///
    /// The shared store cannot be asked.
    pub async fn finish(&self, id: &str, finished: Finished, result_ttl: Duration) -> Result<(), Unavailable> {
        let now = now_ms();
        let expires = now.saturating_add(millis(result_ttl));
        match &self.kept {
            Kept::Local(local) => {
                local.finish(id, finished, now, expires);
                Ok(())
            }
            Kept::Shared(shared) => shared.finish(id, finished, now, expires).await,
        }
    }

    /// Wait until something reaches the running task `id`: a cancel, or
    /// answers to its input requests (taken: each is handed out once).
    /// Returns at once with what is there; ends with `cancelled` when the
    /// task is gone, or when `stop` fires.
    ///
    /// In this process the change is heard as it happens; in a fleet the
    /// task is read again every [`store::SHARED_POLL`], which also tells
    /// the other replicas the running one is alive.
    ///
    /// # Errors
    ///
    /// The shared store cannot be asked.
    pub async fn signal(&self, id: &str, stop: &CancellationToken) -> Result<Signal, Unavailable> {
        loop {
            match &self.kept {
                Kept::Local(local) => {
                    let mut changed = local.watch();
                    let signal = local.signal(id);
                    if signal.cancelled || !signal.answers.is_empty() {
                        return Ok(signal);
                    }
                    tokio::select! {
                        _ = changed.changed() => {}
                        () = stop.cancelled() => return Ok(Signal { cancelled: true, answers: Vec::new() }),
                    }
                }
                Kept::Shared(shared) => {
                    let signal = shared.signal(id, now_ms()).await?;
                    if signal.cancelled || !signal.answers.is_empty() {
                        return Ok(signal);
                    }
                    tokio::select! {
                        () = tokio::time::sleep(store::SHARED_POLL) => {}
                        () = stop.cancelled() => return Ok(Signal { cancelled: true, answers: Vec::new() }),
                    }
                }
            }
        }
    }
}

/// The failure of a task refused at one of its caps, naming the key and
/// its value.
fn refused(full: &Full, reserve: u64, settings: &TaskSettings) -> Failure {
    let ttl = settings.result_ttl.as_secs();
    let free = format!(
        "tasks that ended are dropped `[tasks] result_ttl_secs` = {ttl} s after they ended, and cancelling a running \
         one frees what it reserved"
    );
    match full {
        Full::Principal => Failure::new(
            ErrorKind::QuotaExceeded,
            format!(
                "this call would run as a task, and its principal already holds {} tasks (running, or ended with \
                 their results kept), the most `[tasks] max_per_principal` = {} allows; nothing was run. Fetch the \
                 results you need and wait: {free}",
                settings.max_per_principal, settings.max_per_principal
            ),
        ),
        Full::Total => Failure::new(
            ErrorKind::Busy,
            format!(
                "this call would run as a task, and the host already holds {} tasks, the most `[tasks] max_tasks` = \
                 {} allows; nothing was run. Try again later",
                settings.max_tasks, settings.max_tasks
            ),
        ),
        Full::PrincipalBytes(held) => Failure::new(
            ErrorKind::QuotaExceeded,
            format!(
                "this call would run as a task, which reserves {reserve} bytes for its result, and its principal's \
                 tasks already reserve {held} bytes: together more than `[tasks] max_result_mib_per_principal` = {} \
                 MiB allows; nothing was run. Wait: {free}",
                settings.max_result_bytes_per_principal >> 20
            ),
        ),
        Full::TotalBytes(held) => Failure::new(
            ErrorKind::Busy,
            format!(
                "this call would run as a task, which reserves {reserve} bytes for its result, and the host's tasks \
                 already reserve {held} bytes: together more than `[tasks] max_result_mib` = {} MiB allows; nothing \
                 was run. Try again later",
                settings.max_result_bytes >> 20
            ),
        ),
    }
}

/// The failure of a task whose store could not be reached.
fn unavailable(err: &Unavailable) -> Failure {
    tracing::warn!("{err}");
    Failure::new(
        ErrorKind::Busy,
        "this call would run as a task, and the shared store of tasks (Redis) cannot be reached; nothing was run. \
         Try again shortly",
    )
}

#[cfg(test)]
mod tests;
