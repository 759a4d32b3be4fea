//! Hot reload (`serve --watch`): watch the config file and the tool
//! directories, reload the host when they change, and tell clients when the
//! tool list changed.
//!
//! Trusts the operator's file system only as far as the host's loader does:
//! a reload runs the same checks as a start, and a failed reload leaves the
//! old tools serving. Events are coalesced ([`RELOAD_DEBOUNCE`]) and the
//! event queue is bounded ([`MAX_QUEUED_EVENTS`]); a burst that overflows it
//! still ends in one reload.

use super::RELOAD_DEBOUNCE;
use super::server::Shared;
use crate::formats::Format;
use anyhow::Context as _;
use notify::event::{AccessKind, AccessMode};
use notify::{Event, EventKind, RecursiveMode, Watcher as _};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::sync::mpsc;

/// File-system events queued before the reload task takes them.
pub const MAX_QUEUED_EVENTS: usize = 256;

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
    /// Files whose events matter (the config file, explicit components).
    files: BTreeSet<PathBuf>,
    /// Directories whose `*.wasm` files matter (the tool directories).
    tool_dirs: BTreeSet<PathBuf>,
}

impl Targets {
    fn of(shared: &Shared) -> Self {
        let config = shared.host.config();
        let mut targets = Targets::default();
        let mut add_file = |file: &Path| {
            let dir = file.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
            match (dir.canonicalize(), file.file_name()) {
                (Ok(dir), Some(name)) => {
                    targets.files.insert(dir.join(name));
                    targets.dirs.insert(dir);
                }
                (Err(err), _) => tracing::warn!("cannot watch {}: {err}", dir.display()),
                (_, None) => {}
            }
        };
        if let Some(file) = &config.file {
            add_file(file);
        }
        for tool in config.tools.values() {
            if let Some(component) = &tool.component {
                add_file(component);
            }
        }
        for dir in &config.tool_dirs {
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

    /// Whether an event is about something that affects the tools.
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
    let (tx, mut rx) = mpsc::channel::<Event>(MAX_QUEUED_EVENTS);
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<Event>| match event {
        // A full queue already holds a pending reload: dropping is fine.
        Ok(event) => {
            let _ = tx.try_send(event);
        }
        Err(err) => tracing::warn!("file watcher error: {err}"),
    })
    .context("cannot start the file watcher for --watch")?;
    let mut targets = Targets::of(&shared);
    for dir in &targets.dirs {
        if let Err(err) = watcher.watch(dir, RecursiveMode::NonRecursive) {
            tracing::warn!("cannot watch {}: {err}", dir.display());
        }
    }
    tracing::info!(dirs = ?targets.dirs, "watching for tool changes");
    let task = tokio::spawn(async move {
        while let Some(event) = rx.recv().await {
            if !targets.matters(&event) {
                continue;
            }
            // Debounce: wait until the directory has been quiet for a while.
            while let Ok(Some(_)) = tokio::time::timeout(RELOAD_DEBOUNCE, rx.recv()).await {}
            reload(&shared).await;
            // The config may name other directories now.
            let next = Targets::of(&shared);
            for dir in targets.dirs.difference(&next.dirs) {
                let _ = watcher.unwatch(dir);
            }
            for dir in next.dirs.difference(&targets.dirs) {
                if let Err(err) = watcher.watch(dir, RecursiveMode::NonRecursive) {
                    tracing::warn!("cannot watch {}: {err}", dir.display());
                }
            }
            targets = next;
        }
    });
    Ok(WatchTask(task))
}

/// Reload the host; tell clients if the tool list changed. On failure the
/// old tools keep serving.
async fn reload(shared: &Shared) {
    let before = shared.host.schemas(Format::Mcp, false);
    match shared.host.reload(None).await {
        Ok(count) => {
            let after = shared.host.schemas(Format::Mcp, false);
            if before == after {
                tracing::info!("reloaded {count} tool(s); the tool list is unchanged");
            } else {
                tracing::info!("reloaded {count} tool(s); telling clients the tool list changed");
                shared.changes.notify();
            }
        }
        Err(err) => tracing::error!("reload failed, the previous tools keep serving: {err}"),
    }
}
