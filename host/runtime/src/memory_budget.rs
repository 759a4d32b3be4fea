//! The host memory budget: what every call, session and compilation may
//! use, reserved from one budget before it runs, so that the sum can never
//! exceed what the machine (or the host's cgroup) allows.
//!
//! Every cap of a call (`memory_mib`, `host_memory_mib`,
//! `validation_memory_mib`, the output cap) bounds one call; without a
//! budget, many calls add up to whatever the machine has, and a memory
//! cgroup's OOM killer takes the whole server. Here each call reserves what
//! it may use before it starts and gives it back when it ends (a
//! [`Reservation`] dropped); a call that finds no room waits in a bounded
//! queue until its deadline and is then refused, naming the key.
//!
//! # Fair shares
//!
//! The budget is shared between *holders*: each principal, and the host's
//! own compilations. A holder's reservations together may not pass
//! `[engine] memory_share_percent` of the budget, except for its first one
//! (a holder holding nothing is let in whenever the budget has room), so
//! one principal's calls can never hold so much that another principal's
//! call cannot reserve. When memory is given back, waiting reservations
//! are granted poorest holder first (the one holding the least, then in
//! order of arrival), and a reservation never overtakes a waiting one of a
//! holder that holds as little or less: a principal whose calls are large
//! is not starved by another's stream of small ones. The host's
//! compilations are the one exception: one waiting for room blocks no
//! call behind it (a deployment may be delayed by calls and sessions, but
//! it never makes another principal's call `busy`); each compilation
//! reserves at most the compilations' share, so it fits beside what
//! principals hold whenever they hold less than the rest.
//!
//! # Where the number comes from
//!
//! `[engine] memory_budget_mib` when set; otherwise the lower of the memory
//! limit of the cgroup the host runs in (cgroup v2 `memory.max`, or v1
//! `memory.limit_in_bytes`) and the machine's physical memory, less
//! headroom for the host itself (its code, the compiled components mapped
//! in, the allocator's slack): a quarter of it, and at least
//! [`MIN_HEADROOM_BYTES`].

use airlock_settings::engine::EngineSettings;
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::oneshot;

/// One mebibyte.
const MIB: u64 = 1 << 20;
/// The least headroom left for the host itself when the budget is derived.
pub const MIN_HEADROOM_BYTES: u64 = 256 * MIB;
/// The least budget derived from the machine, whatever its memory.
pub const MIN_DERIVED_BUDGET_BYTES: u64 = 64 * MIB;
/// The most reservations that wait at once; past this a call is refused
/// at once rather than queued (each waiter holds its call's arguments).
pub const MAX_WAITERS: usize = 4096;

/// Who holds memory of the budget: each has its own fair share.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Holder {
    /// A principal's calls and sessions.
    Principal(Arc<str>),
    /// The host's own compilations of components.
    Compiler,
}

impl Holder {
    /// The holder for principal `name`.
    pub fn principal(name: &str) -> Self {
        Holder::Principal(Arc::from(name))
    }
}

impl fmt::Display for Holder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Holder::Principal(name) => write!(f, "principal {name:?}"),
            Holder::Compiler => f.write_str("the host's compilations"),
        }
    }
}

/// Where the budget's size came from, for the operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `[engine] memory_budget_mib`.
    Configured,
    /// The memory limit of the host's cgroup (bytes), less headroom.
    Cgroup(u64),
    /// The machine's physical memory (bytes), less headroom.
    Physical(u64),
    /// Neither could be read: the least derived budget.
    Unknown,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Configured => f.write_str("[engine] memory_budget_mib"),
            Source::Cgroup(limit) => write!(f, "the cgroup's memory limit of {} MiB less headroom", limit / MIB),
            Source::Physical(total) => write!(f, "the machine's {} MiB of memory less headroom", total / MIB),
            Source::Unknown => f.write_str("the least derived budget (no memory limit could be read)"),
        }
    }
}

/// Why a reservation was not made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// More than the whole budget was asked for.
    TooLarge {
        /// Bytes asked for.
        bytes: u64,
        /// The budget, in bytes.
        total: u64,
    },
    /// [`MAX_WAITERS`] reservations are waiting already.
    QueueFull,
    /// No room was free before the deadline.
    Deadline,
    /// The wait was cancelled.
    Cancelled,
}

/// The budget of one host; cheap to clone (shared).
#[derive(Clone)]
pub struct MemoryBudget {
    inner: Arc<Inner>,
}

impl fmt::Debug for MemoryBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryBudget")
            .field("total", &self.inner.total)
            .field("share", &self.inner.share)
            .field("source", &self.inner.source)
            .finish_non_exhaustive()
    }
}

struct Inner {
    total: u64,
    /// The most one holder may hold beyond its first reservation.
    share: u64,
    share_percent: u8,
    source: Source,
    ledger: Mutex<Ledger>,
}

#[derive(Default)]
struct Ledger {
    free: u64,
    held: HashMap<Holder, u64>,
    waiters: VecDeque<Waiter>,
    next_id: u64,
}

struct Waiter {
    id: u64,
    holder: Holder,
    bytes: u64,
    /// Where the grant is sent; `None` only for the request being placed
    /// now, under the same lock.
    grant: Option<Grant>,
}

/// The way a waiting request is handed its grant.
enum Grant {
    /// To a task.
    Task(oneshot::Sender<Reservation>),
    /// To a thread that may block.
    Thread(std::sync::mpsc::SyncSender<Reservation>),
}

impl Grant {
    /// Hand over `reservation`; a waiter that stopped waiting gets none
    /// and the reservation comes back.
    fn send(self, reservation: Reservation) -> Result<(), Reservation> {
        match self {
            Grant::Task(tx) => tx.send(reservation),
            Grant::Thread(tx) => tx.try_send(reservation).map_err(|err| match err {
                std::sync::mpsc::TrySendError::Full(r) | std::sync::mpsc::TrySendError::Disconnected(r) => r,
            }),
        }
    }
}

/// Memory of the budget held by one call, session or compilation; given
/// back when dropped.
pub struct Reservation {
    inner: Arc<Inner>,
    holder: Holder,
    bytes: u64,
}

impl fmt::Debug for Reservation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reservation").field("holder", &self.holder).field("bytes", &self.bytes).finish()
    }
}

impl Reservation {
    /// The bytes held.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let grants = self.give_back();
        send(grants);
    }
}

impl Reservation {
    /// Give the memory back (once: the reservation then holds nothing) and
    /// return the grants that made possible, to send.
    fn give_back(&mut self) -> Vec<(Grant, Reservation)> {
        let bytes = std::mem::take(&mut self.bytes);
        if bytes == 0 {
            return Vec::new();
        }
        let mut ledger = self.inner.lock();
        ledger.free = ledger.free.saturating_add(bytes).min(self.inner.total);
        if let Some(held) = ledger.held.get_mut(&self.holder) {
            *held = held.saturating_sub(bytes);
            if *held == 0 {
                ledger.held.remove(&self.holder);
            }
        }
        grant_waiters(&self.inner, &mut ledger, None).0
    }
}

/// What the budget holds now, for `/metrics`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Snapshot {
    /// The budget, in bytes.
    pub total: u64,
    /// Bytes reserved.
    pub reserved: u64,
    /// Reservations waiting for room.
    pub waiting: usize,
    /// Holders holding memory.
    pub holders: usize,
}

impl MemoryBudget {
    /// The budget `settings` configure, or derive from the machine.
    pub fn new(settings: &EngineSettings) -> Self {
        let (total, source) = match settings.memory_budget_mib {
            Some(mib) => (mib.saturating_mul(MIB), Source::Configured),
            None => derived(),
        };
        Self::with_total(total, settings.memory_share_percent, source)
    }

    /// A budget of `total` bytes, of which one holder may hold
    /// `share_percent` beyond its first reservation.
    pub fn with_total(total: u64, share_percent: u8, source: Source) -> Self {
        let share_percent = share_percent.clamp(1, 100);
        let share = share_of(total, share_percent);
        let ledger = Ledger { free: total, ..Ledger::default() };
        MemoryBudget { inner: Arc::new(Inner { total, share, share_percent, source, ledger: Mutex::new(ledger) }) }
    }

    /// The budget, in bytes.
    pub fn total(&self) -> u64 {
        self.inner.total
    }

    /// Where the budget's size came from.
    pub fn source(&self) -> Source {
        self.inner.source
    }

    /// `[engine] memory_share_percent` in force.
    pub fn share_percent(&self) -> u8 {
        self.inner.share_percent
    }

    /// What the budget holds now.
    pub fn snapshot(&self) -> Snapshot {
        let ledger = self.inner.lock();
        Snapshot {
            total: self.inner.total,
            reserved: self.inner.total.saturating_sub(ledger.free),
            waiting: ledger.waiters.len(),
            holders: ledger.held.len(),
        }
    }

    /// Reserve `bytes` for `holder` now if the rules let it (see the
    /// module docs); otherwise queue the request with `grant` (made only
    /// when needed) to receive it.
    fn place<R>(&self, holder: &Holder, bytes: u64, grant: impl FnOnce() -> (Grant, R)) -> Result<Placed<R>, Refusal> {
        if bytes > self.inner.total {
            return Err(Refusal::TooLarge { bytes, total: self.inner.total });
        }
        let mut ledger = self.inner.lock();
        if ledger.waiters.len() >= MAX_WAITERS {
            return Err(Refusal::QueueFull);
        }
        let id = ledger.next_id;
        ledger.next_id = ledger.next_id.wrapping_add(1);
        ledger.waiters.push_back(Waiter { id, holder: holder.clone(), bytes, grant: None });
        let (grants, mine) = grant_waiters(&self.inner, &mut ledger, Some(id));
        let placed = match mine {
            Some(reservation) => Placed::Now(reservation),
            None => {
                let (tx, rx) = grant();
                if let Some(waiter) = ledger.waiters.iter_mut().find(|w| w.id == id) {
                    waiter.grant = Some(tx);
                }
                Placed::Queued(id, rx)
            }
        };
        drop(ledger);
        send(grants);
        Ok(placed)
    }

    /// Reserve `bytes` for `holder`, waiting for room until `deadline` or
    /// until `cancel` fires.
    ///
    /// # Errors
    ///
    /// [`Refusal`]: more than the whole budget, the queue full, the deadline
    /// passed or the wait cancelled.
    pub async fn reserve(
        &self,
        holder: &Holder,
        bytes: u64,
        deadline: tokio::time::Instant,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<Reservation, Refusal> {
        let placed = self.place(holder, bytes, || {
            let (tx, rx) = oneshot::channel();
            (Grant::Task(tx), rx)
        })?;
        let (id, mut rx) = match placed {
            Placed::Now(reservation) => return Ok(reservation),
            Placed::Queued(id, rx) => (id, rx),
        };
        let refusal = tokio::select! {
            biased;
            granted = &mut rx => match granted {
                Ok(reservation) => return Ok(reservation),
                // The sender is only dropped with its waiter, by `leave`.
                Err(_) => Refusal::Cancelled,
            },
            () = cancel.cancelled() => Refusal::Cancelled,
            () = tokio::time::sleep_until(deadline) => Refusal::Deadline,
        };
        // Granted just as the wait ended: the grant is in the channel.
        if self.leave(id) { Err(refusal) } else { rx.try_recv().map_err(|_| refusal) }
    }

    /// Reserve `bytes` for `holder` from a thread that may block (a
    /// compilation's), waiting at most `timeout`.
    ///
    /// # Errors
    ///
    /// As [`MemoryBudget::reserve`]; never [`Refusal::Cancelled`].
    pub fn reserve_blocking(
        &self,
        holder: &Holder,
        bytes: u64,
        timeout: std::time::Duration,
    ) -> Result<Reservation, Refusal> {
        let placed = self.place(holder, bytes, || {
            let (tx, rx) = std::sync::mpsc::sync_channel(1);
            (Grant::Thread(tx), rx)
        })?;
        let (id, rx) = match placed {
            Placed::Now(reservation) => return Ok(reservation),
            Placed::Queued(id, rx) => (id, rx),
        };
        match rx.recv_timeout(timeout) {
            Ok(reservation) => Ok(reservation),
            Err(_) if self.leave(id) => Err(Refusal::Deadline),
            Err(_) => rx.try_recv().map_err(|_| Refusal::Deadline),
        }
    }

    /// Stop waiting for request `id`; false if it was granted meanwhile
    /// (its grant is then in its channel).
    fn leave(&self, id: u64) -> bool {
        let mut ledger = self.inner.lock();
        let Some(at) = ledger.waiters.iter().position(|w| w.id == id) else { return false };
        ledger.waiters.remove(at);
        // Leaving may unblock others queued behind this request.
        let grants = grant_waiters(&self.inner, &mut ledger, None).0;
        drop(ledger);
        send(grants);
        true
    }
}

/// What one holder may hold of `total` bytes beyond its first reservation
/// under `[engine] memory_share_percent` = `share_percent` (taken as 1..=100).
pub fn share_of(total: u64, share_percent: u8) -> u64 {
    let percent = u128::from(share_percent.clamp(1, 100));
    u64::try_from(u128::from(total) * percent / 100).unwrap_or(total)
}

enum Placed<R> {
    Now(Reservation),
    Queued(u64, R),
}

/// Hand each grant to its waiter. A grant whose waiter stopped waiting is
/// given back, which may grant others: a loop, not a recursion through
/// `Drop`.
fn send(mut grants: Vec<(Grant, Reservation)>) {
    while let Some((grant, reservation)) = grants.pop() {
        if let Err(mut unwanted) = grant.send(reservation) {
            grants.extend(unwanted.give_back());
        }
    }
}

/// Whether a request fits now.
enum Fit {
    Yes,
    /// The budget has no room for it.
    NoRoom,
    /// Its holder would pass its share.
    OverShare,
}

impl Inner {
    fn lock(&self) -> std::sync::MutexGuard<'_, Ledger> {
        self.ledger.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether `holder` may take `bytes` more: the budget has room, and the
    /// holder holds nothing yet or stays within its share.
    fn fits(&self, ledger: &Ledger, holder: &Holder, bytes: u64) -> Fit {
        if bytes > ledger.free {
            return Fit::NoRoom;
        }
        let held = ledger.held.get(holder).copied().unwrap_or(0);
        if held == 0 || held.saturating_add(bytes) <= self.share { Fit::Yes } else { Fit::OverShare }
    }
}

/// Grant what the rules allow to waiting requests, poorest holder first.
/// Returns the grants to send (once the lock is released) and the
/// reservation of request `mine`, if it was granted.
fn grant_waiters(
    inner: &Arc<Inner>,
    ledger: &mut Ledger,
    mine: Option<u64>,
) -> (Vec<(Grant, Reservation)>, Option<Reservation>) {
    let mut grants = Vec::new();
    let mut granted_mine = None;
    loop {
        // The poorest holder's oldest request first. A request with no room
        // blocks those of holders as poor or richer (it is not overtaken);
        // one over its holder's share blocks nobody.
        let mut order: Vec<(u64, u64, usize)> = ledger
            .waiters
            .iter()
            .enumerate()
            .filter(|(_, w)| w.grant.is_some() || Some(w.id) == mine)
            .map(|(at, w)| (ledger.held.get(&w.holder).copied().unwrap_or(0), w.id, at))
            .collect();
        order.sort_unstable();
        let mut blocked_from: Option<u64> = None;
        let mut chosen = None;
        let mut seen: Vec<&Holder> = Vec::new();
        for &(held, _, at) in &order {
            let Some(waiter) = ledger.waiters.get(at) else { continue };
            if blocked_from.is_some_and(|level| held >= level) {
                break;
            }
            // A holder's own requests are granted in their order.
            if seen.contains(&&waiter.holder) {
                continue;
            }
            seen.push(&waiter.holder);
            match inner.fits(ledger, &waiter.holder, waiter.bytes) {
                Fit::Yes => {
                    chosen = Some(at);
                    break;
                }
                // A compilation waiting for room blocks nobody: it waits
                // its turn, and a call of any principal behind it is
                // granted whatever fits meanwhile. A compilation that finds
                // no room in time fails its load, which is tried again.
                Fit::NoRoom if waiter.holder == Holder::Compiler => {}
                Fit::NoRoom => blocked_from = Some(held),
                Fit::OverShare => {}
            }
        }
        let Some(waiter) = chosen.and_then(|at| ledger.waiters.remove(at)) else { break };
        ledger.free = ledger.free.saturating_sub(waiter.bytes);
        *ledger.held.entry(waiter.holder.clone()).or_insert(0) += waiter.bytes;
        let reservation = Reservation { inner: inner.clone(), holder: waiter.holder, bytes: waiter.bytes };
        match waiter.grant {
            Some(grant) => grants.push((grant, reservation)),
            None => granted_mine = Some(reservation),
        }
    }
    (grants, granted_mine)
}

/// The budget derived from the machine: the lower of the cgroup's memory
/// limit and physical memory, less a quarter (at least
/// [`MIN_HEADROOM_BYTES`]) for the host itself.
fn derived() -> (u64, Source) {
    let physical = physical_memory();
    let cgroup = cgroup_limit().filter(|limit| physical.is_none_or(|physical| *limit < physical));
    let (limit, source) = match (cgroup, physical) {
        (Some(limit), _) => (limit, Source::Cgroup(limit)),
        (None, Some(total)) => (total, Source::Physical(total)),
        (None, None) => return (MIN_DERIVED_BUDGET_BYTES, Source::Unknown),
    };
    (budget_under(limit), source)
}

/// What is left of `limit` bytes for calls once the host's headroom is
/// taken.
pub fn budget_under(limit: u64) -> u64 {
    let headroom = (limit / 4).max(MIN_HEADROOM_BYTES);
    limit.saturating_sub(headroom).max(MIN_DERIVED_BUDGET_BYTES)
}

/// `MemTotal` of `/proc/meminfo`, in bytes.
fn physical_memory() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|line| line.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// The memory limit of the cgroup this process is in, if it has one: v2's
/// `memory.max` or v1's `memory.limit_in_bytes`, of its own cgroup or the
/// nearest ancestor that sets one.
fn cgroup_limit() -> Option<u64> {
    let membership = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    parse_cgroup_limit(&membership, &|path| std::fs::read_to_string(path).ok())
}

/// [`cgroup_limit`] over `/proc/self/cgroup`'s text and a file reader.
fn parse_cgroup_limit(membership: &str, read: &dyn Fn(&std::path::Path) -> Option<String>) -> Option<u64> {
    let root = std::path::Path::new("/sys/fs/cgroup");
    let mut limits = Vec::new();
    for line in membership.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next()) else { continue };
        let (base, file) = if controllers.is_empty() {
            (root.to_path_buf(), "memory.max")
        } else if controllers.split(',').any(|c| c == "memory") {
            (root.join("memory"), "memory.limit_in_bytes")
        } else {
            continue;
        };
        // The cgroup's own limit, else its nearest ancestor's.
        let mut dir = std::path::PathBuf::from(path.trim_start_matches('/'));
        loop {
            let text = read(&base.join(&dir).join(file));
            if let Some(limit) = text.as_deref().map(str::trim).and_then(|t| t.parse::<u64>().ok()) {
                limits.push(limit);
                break;
            }
            if !dir.pop() {
                break;
            }
        }
    }
    // v1 reports "no limit" as a huge number, left to the physical check.
    limits.into_iter().min()
}

#[cfg(test)]
mod tests;
