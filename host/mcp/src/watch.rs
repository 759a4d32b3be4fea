//! Hot reload (`serve --watch`): watch every file the host state is built
//! from (the config file, explicit components, policy and entities files,
//! token files, secret files) and the tool directories, reload the host
//! when they change, and tell clients when the tool list changed.
//!
//! Trusts the operator's file system only as far as the host's loader does:
//! a reload runs the same checks as a start, and a failed reload leaves the
//! old state serving. Events are filtered where the watcher delivers them:
//! only a change to a file the state is built from (or a `*.wasm` in a tool
//! directory) is queued, so that other files in the same directories (an
//! audit log written by every call, say) neither delay a reload nor crowd
//! out the change that matters. Changes are coalesced: a reload follows
//! [`RELOAD_DEBOUNCE`] of quiet, and never later than [`RELOAD_MAX_WAIT`]
//! after the first change, however often the files keep changing. After
//! each reload the watch set is recomputed from the state in force. A
//! reload that failed only because the host was busy (the memory budget
//! had no room to compile a component in time: calls and sessions held
//! it) is tried again after [`RELOAD_RETRY_FIRST`], the wait doubling up
//! to [`RELOAD_RETRY_MAX`], until it loads or fails for a reason of its
//! own; a new change reloads at once as always.

use super::server::Shared;
use super::{RELOAD_DEBOUNCE, RELOAD_MAX_WAIT, RELOAD_RETRY_FIRST, RELOAD_RETRY_MAX};
use airlock_pipeline::Config;
use airlock_pipeline::Format;
use airlock_pipeline::Sources;
use anyhow::Context as _;
use notify::event::{AccessKind, AccessMode};
use notify::{Event, EventKind, RecursiveMode};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// The running watch; dropping it stops watching.
pub struct WatchTask(tokio::task::JoinHandle<()>);

impl Drop for WatchTask {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// What to watch: directories (non-recursively) and which paths in them
/// matter.
#[derive(Debug, Default, PartialEq, Eq)]
struct Targets {
    /// Directories to watch.
    dirs: BTreeSet<PathBuf>,
    /// Files whose events matter.
    files: BTreeSet<PathBuf>,
    /// Directories whose `*.wasm` files matter (the tool directories).
    tool_dirs: BTreeSet<PathBuf>,
}

impl Targets {
    /// The targets for `sources`, with directories made canonical (events
    /// name paths under the directory watched).
    fn of(sources: &Sources) -> Self {
        let mut targets = Targets::default();
        for file in &sources.files {
            let dir = file.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
            match (dir.canonicalize(), file.file_name()) {
                (Ok(dir), Some(name)) => {
                    targets.files.insert(dir.join(name));
                    targets.dirs.insert(dir);
                }
                (Err(err), _) => tracing::warn!("cannot watch {}: {err}", dir.display()),
                (_, None) => {}
            }
        }
        for dir in &sources.tool_dirs {
            match dir.canonicalize() {
                Ok(dir) => {
                    targets.tool_dirs.insert(dir.clone());
                    targets.dirs.insert(dir);
                }
                Err(err) => tracing::warn!("cannot watch tool directory {}: {err}", dir.display()),
            }
        }
        targets
    }

    /// The targets of the state in force, and of the config file as it is
    /// now when it names other files (after a failed reload: so that fixing
    /// a file the new config names, a broken policy say, reloads too).
    fn now(shared: &Shared, reload_failed: bool) -> Self {
        let state = shared.host.state();
        let mut sources = state.sources();
        if reload_failed && let Some(Ok(next)) = state.config().file.as_deref().map(Config::from_file) {
            let next = Sources::of(&next);
            sources.files.extend(next.files);
            sources.tool_dirs.extend(next.tool_dirs);
        }
        Self::of(&sources)
    }

    /// Whether an event changes something the state is built from.
    fn matters(&self, event: &Event) -> bool {
        let mutation = match event.kind {
            EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
            EventKind::Access(_) => false,
            _ => true,
        };
        mutation
            && event.paths.iter().any(|path| {
                self.files.contains(path)
                    || (path.extension().is_some_and(|e| e == "wasm")
                        && path.parent().is_some_and(|dir| self.tool_dirs.contains(dir)))
            })
    }
}

/// Start watching. The task reloads the host after each burst of changes.
///
/// # Errors
///
/// The platform watcher cannot be created.
pub fn spawn(shared: Arc<Shared>) -> anyhow::Result<WatchTask> {
    // One pending change is all the task needs to know: a full queue
    // already holds a reload to come.
    let (tx, mut rx) = mpsc::channel::<()>(1);
    let targets = Arc::new(RwLock::new(Targets::now(&shared, false)));
    let filter = targets.clone();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<Event>| match event {
        Ok(event) => {
            if filter.read().unwrap_or_else(PoisonError::into_inner).matters(&event) {
                let _ = tx.try_send(());
            }
        }
        Err(err) => tracing::warn!("file watcher error: {err}"),
    })
    .context("cannot start the file watcher for --watch")?;
    let mut watched = BTreeSet::new();
    rewatch(&mut watcher, &mut watched, &targets.read().unwrap_or_else(PoisonError::into_inner).dirs);
    tracing::info!(dirs = ?watched, "watching for changes to the config and the files it names");
    let task = tokio::spawn(async move {
        // The wait before a busy reload is tried again, while one is due.
        let mut retry: Option<Duration> = None;
        loop {
            // A change, or the time to try a busy reload again.
            let changed = match retry {
                None => rx.recv().await.map(|()| true),
                Some(wait) => tokio::select! {
                    changed = rx.recv() => changed.map(|()| true),
                    () = tokio::time::sleep(wait) => Some(false),
                },
            };
            let Some(changed) = changed else { return };
            if changed && !settle(&mut rx, RELOAD_DEBOUNCE, RELOAD_MAX_WAIT).await {
                return;
            }
            let outcome = reload(&shared).await;
            retry = match outcome {
                // A change starts the waits again from the first.
                Reloaded::Busy => Some(backoff(retry.filter(|_| !changed))),
                Reloaded::Yes | Reloaded::Failed => None,
            };
            if let Some(wait) = retry {
                tracing::warn!(
                    retry_in_ms = wait.as_millis() as u64,
                    "the reload is tried again later: the host has no room to compile now"
                );
            }
            // The config may name other files and directories now.
            let next = Targets::now(&shared, outcome != Reloaded::Yes);
            rewatch(&mut watcher, &mut watched, &next.dirs);
            *targets.write().unwrap_or_else(PoisonError::into_inner) = next;
        }
    });
    Ok(WatchTask(task))
}

/// The wait before a busy reload is tried again, after `previous` (none
/// for the first try again): [`RELOAD_RETRY_FIRST`], then doubling up to
/// [`RELOAD_RETRY_MAX`].
fn backoff(previous: Option<Duration>) -> Duration {
    previous.map_or(RELOAD_RETRY_FIRST, |wait| wait.saturating_mul(2).min(RELOAD_RETRY_MAX))
}

/// Watch exactly `dirs`: stop watching the others, start the new ones.
fn rewatch(watcher: &mut impl notify::Watcher, watched: &mut BTreeSet<PathBuf>, dirs: &BTreeSet<PathBuf>) {
    for dir in watched.difference(dirs) {
        let _ = watcher.unwatch(dir);
    }
    for dir in dirs.difference(watched) {
        if let Err(err) = watcher.watch(dir, RecursiveMode::NonRecursive) {
            tracing::warn!("cannot watch {}: {err}", dir.display());
        }
    }
    watched.clone_from(dirs);
}

/// After a first change: wait until no change came for `quiet`, or until
/// `max_wait` after the first change, whichever is sooner. `false` when the
/// watcher is gone.
async fn settle(rx: &mut mpsc::Receiver<()>, quiet: Duration, max_wait: Duration) -> bool {
    let deadline = Instant::now() + max_wait;
    loop {
        let now = Instant::now();
        if now >= deadline {
            return true;
        }
        match tokio::time::timeout_at((now + quiet).min(deadline), rx.recv()).await {
            Ok(Some(())) => {}
            Ok(None) => return false,
            Err(_) => return true,
        }
    }
}

/// How a reload went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reloaded {
    /// The new state is in force.
    Yes,
    /// It failed only because the host was busy: the same files can load
    /// later.
    Busy,
    /// It failed for a reason of the files' own.
    Failed,
}

/// Reload the host; tell clients if the tool list changed. On failure the
/// old state keeps serving and the log says why.
async fn reload(shared: &Shared) -> Reloaded {
    let before = shared.host.schemas(Format::Mcp, false);
    match shared.host.reload(None).await {
        Ok(count) => {
            let after = shared.host.schemas(Format::Mcp, false);
            if before == after {
                tracing::info!("reloaded the config and {count} tool(s); the tool list is unchanged");
            } else {
                tracing::info!("reloaded the config and {count} tool(s); telling clients the tool list changed");
                shared.changes.notify();
            }
            Reloaded::Yes
        }
        Err(err) if err.is_busy() => {
            tracing::warn!("reload not done yet, the previous config, policy and tools keep serving: {err}");
            Reloaded::Busy
        }
        Err(err) => {
            tracing::error!("reload failed, the previous config, policy and tools keep serving: {err}");
            Reloaded::Failed
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use notify::event::{CreateKind, DataChange, ModifyKind};

    fn targets() -> Targets {
        Targets {
            dirs: ["/srv/airlock", "/srv/tools"].into_iter().map(PathBuf::from).collect(),
            files: ["/srv/airlock/airlock.toml", "/srv/airlock/policy.cedar", "/srv/airlock/token"]
                .into_iter()
                .map(PathBuf::from)
                .collect(),
            tool_dirs: [PathBuf::from("/srv/tools")].into_iter().collect(),
        }
    }

    fn event(kind: EventKind, path: &str) -> Event {
        Event::new(kind).add_path(PathBuf::from(path))
    }

    #[test]
    fn only_the_files_the_state_is_built_from_matter() {
        let targets = targets();
        let written = EventKind::Modify(ModifyKind::Data(DataChange::Content));
        for path in
            ["/srv/airlock/airlock.toml", "/srv/airlock/policy.cedar", "/srv/airlock/token", "/srv/tools/x.wasm"]
        {
            assert!(targets.matters(&event(written, path)), "{path}");
        }
        // Files beside them: the audit log and its head written by every
        // call, an editor's swap file, a non-component in a tool directory.
        for path in [
            "/srv/airlock/audit.jsonl",
            "/srv/airlock/audit.jsonl.head",
            "/srv/airlock/.airlock.toml.swp",
            "/srv/tools/README.md",
            "/srv/tools/sub/y.wasm",
        ] {
            assert!(!targets.matters(&event(written, path)), "{path}");
        }
        let create = EventKind::Create(CreateKind::File);
        assert!(targets.matters(&event(create, "/srv/tools/new.wasm")));
        // Reading a file changes nothing; closing it after a write does.
        let opened = EventKind::Access(AccessKind::Open(AccessMode::Any));
        assert!(!targets.matters(&event(opened, "/srv/airlock/airlock.toml")));
        let closed = EventKind::Access(AccessKind::Close(AccessMode::Write));
        assert!(targets.matters(&event(closed, "/srv/airlock/airlock.toml")));
    }

    #[test]
    fn every_source_is_watched_in_its_directory() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().canonicalize().expect("canonical");
        std::fs::create_dir(root.join("secrets")).expect("mkdir");
        let mut sources = Sources::default();
        sources.files.insert(root.join("airlock.toml"));
        sources.files.insert(root.join("secrets/token"));
        sources.tool_dirs.insert(root.join("tools-not-there-yet"));
        let targets = Targets::of(&sources);
        assert_eq!(targets.dirs, [root.clone(), root.join("secrets")].into_iter().collect());
        assert!(targets.files.contains(&root.join("secrets/token")));
        assert!(targets.tool_dirs.is_empty(), "a missing tool directory is not watched (and said so)");
    }

    #[test]
    fn a_busy_reload_is_tried_again_ever_less_often_up_to_the_longest_wait() {
        let mut waits = vec![backoff(None)];
        for _ in 0..10 {
            let last = waits.last().copied();
            waits.push(backoff(last));
        }
        assert_eq!(waits.first(), Some(&RELOAD_RETRY_FIRST));
        assert_eq!(waits.get(1), Some(&(RELOAD_RETRY_FIRST * 2)));
        assert!(waits.windows(2).all(|w| w[0] <= w[1]), "{waits:?}");
        assert_eq!(waits.last(), Some(&RELOAD_RETRY_MAX), "{waits:?}");
    }

    #[tokio::test]
    async fn a_steady_stream_of_changes_still_ends_in_a_reload() {
        let (tx, mut rx) = mpsc::channel::<()>(1);
        // Changes keep coming faster than the quiet time, for ever.
        let stream = tokio::spawn(async move {
            loop {
                if tx.send(()).await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        });
        let settled = tokio::time::timeout(
            Duration::from_secs(30),
            settle(&mut rx, Duration::from_millis(200), Duration::from_millis(50)),
        )
        .await;
        assert_eq!(settled.ok(), Some(true), "the max wait ends the debounce");
        stream.abort();
        drop(rx);
        let (tx, mut rx) = mpsc::channel::<()>(1);
        drop(tx);
        assert!(!settle(&mut rx, Duration::from_millis(1), Duration::from_secs(30)).await, "a closed watcher stops");
    }
}
