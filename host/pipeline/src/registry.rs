//! The set of loaded tools, built from a [`Config`]: explicit components,
//! then every `*.wasm` in the configured tool directories.
//!
//! A registry is immutable once built; a reload builds a new one and swaps
//! it in whole, so a call always sees one consistent set of tools. During a
//! start-up in the background (`startup.rs`) each tool that becomes ready
//! is installed the same way: a new registry with one tool more.
//!
//! Components load in parallel ([`parallel_loads`]), each file once, and
//! files with the same bytes are compiled once; the result does not depend
//! on which load finishes first (`Assembly`).

use crate::config::Config;
use crate::tool::Tool;
use airlock_policy::audit::ToolChange;
use airlock_runtime::distribution::{self, DistributionError, Lock, OciSource};
use airlock_runtime::engine::Runtime;
use airlock_runtime::loader::{self, CompileOnce, LoadError, LoadedTool};
use futures::StreamExt as _;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Loaded tools by name.
#[derive(Debug, Default)]
pub struct Registry {
    tools: BTreeMap<String, Arc<Tool>>,
    /// Components still loading when this registry was built.
    pending: usize,
}

/// A problem found while building a registry.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// A component was refused.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// Two components declare the same name.
    #[error("tool {name:?} is declared by both {first} and {second}; tool names must be unique")]
    Duplicate {
        /// The name.
        name: String,
        /// The first file.
        first: PathBuf,
        /// The second file.
        second: PathBuf,
    },
    /// A `[tools.NAME]` section names a component that declares another name.
    #[error("[tools.{key}] component {path} declares the name {declared:?}; rename the section to [tools.{declared}]")]
    NameMismatch {
        /// The section key.
        key: String,
        /// The component.
        path: PathBuf,
        /// What it declares.
        declared: String,
    },
    /// A tool directory could not be listed.
    #[error("tool directory {path}: {source}")]
    Dir {
        /// The directory.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// Progress of a registry build, for terminals. Components load in
/// parallel, so calls for different components interleave.
pub trait LoadProgress: Send + Sync {
    /// Loading `path` began; `total` components load in all.
    fn started(&self, path: &Path, total: usize) {
        let _ = (path, total);
    }
    /// The cache has no artifact for `path`: it is being compiled (slow).
    fn compiling(&self, path: &Path) {
        let _ = path;
    }
    /// `path` is done: `loaded`, or refused (the error is reported with the
    /// registry's errors).
    fn finished(&self, path: &Path, loaded: bool) {
        let _ = (path, loaded);
    }
}

impl LoadProgress for () {}

/// At most this many components load at once. The number used is the
/// machine's available parallelism up to this cap: wasmtime already
/// compiles the functions of one component in parallel, but reading,
/// hashing, parsing, translation and reading the metadata are serial per
/// component and overlap with another's compilation this way.
pub const MAX_PARALLEL_LOADS: usize = 8;

/// How many components load at once on this machine.
pub fn parallel_loads() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZero::get).clamp(1, MAX_PARALLEL_LOADS)
}

/// One component a config names, in the order loading it one by one would
/// follow: explicit `[tools.NAME] component`s first, then each tool
/// directory's files, sorted.
#[derive(Debug, Clone)]
pub(crate) struct Planned {
    order: usize,
    key: Option<String>,
    /// The file, or for a component from a registry its reference (shown
    /// in progress and errors until the store's file is known).
    path: PathBuf,
    oci: Option<OciSource>,
}

/// The components `config` names, and the tool directories that could not
/// be listed.
pub(crate) fn plan(config: &Config) -> (Vec<Planned>, Vec<RegistryError>) {
    let mut errors = Vec::new();
    let mut files: Vec<(Option<String>, PathBuf)> = Vec::new();
    let mut sources = BTreeMap::new();
    for (key, tool) in &config.tools {
        if let Some(path) = &tool.runtime.component {
            files.push((Some(key.clone()), path.clone()));
        } else if let Some(source) = &tool.runtime.oci {
            files.push((Some(key.clone()), PathBuf::from(source.reference.to_string())));
            sources.insert(key.clone(), source.clone());
        }
    }
    for dir in &config.tool_dirs {
        match list_components(dir) {
            Ok(found) => files.extend(
                found.into_iter().filter(|p| !files.iter().any(|(_, q)| q == p)).map(|p| (None, p)).collect::<Vec<_>>(),
            ),
            Err(source) => errors.push(RegistryError::Dir { path: dir.clone(), source }),
        }
    }
    let planned = files
        .into_iter()
        .enumerate()
        .map(|(order, (key, path))| {
            let oci = key.as_ref().and_then(|key| sources.get(key).cloned());
            Planned { order, key, path, oci }
        })
        .collect();
    (planned, errors)
}

/// Load every planned component, [`parallel_loads`] at a time, smallest
/// file first, and hand each outcome to `each` as it finishes. Files with
/// the same bytes are compiled once.
///
/// Smallest first: started first, a large interpreter's thousands of
/// functions would hold the cores ahead of every small tool (measured on
/// two cores with one shared compile pool: no tool ready before 33 s).
/// Small ones first are ready within seconds, and the whole load takes as
/// long either way. Each compilation runs in its own metered child process
/// (`compiler.rs`) with wasmtime's parallel compilation inside it; the
/// kernel shares the cores between the children.
pub(crate) async fn load_planned(
    runtime: &Runtime,
    config: &Config,
    planned: Vec<Planned>,
    progress: &dyn LoadProgress,
    mut each: impl FnMut(&Planned, Result<Tool, LoadError>),
) {
    let total = planned.len();
    let once = CompileOnce::default();
    // Read once for the whole load; when it cannot be read, each tool it
    // could pin is refused with the reason (`check_pin`).
    let settings = &config.distribution;
    let lock = Lock::read(&settings.lock_file, settings.max_lock_bytes).ok();
    let lock = lock.as_ref();
    let mut by_size: Vec<(u64, Planned)> =
        planned.into_iter().map(|p| (std::fs::metadata(&p.path).map_or(0, |m| m.len()), p)).collect();
    by_size.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.order.cmp(&b.1.order)));
    let once = &once;
    let loads = by_size.into_iter().map(|(_, planned)| async move {
        progress.started(&planned.path, total);
        let outcome = load_one(runtime, config, &planned, once, progress)
            .await
            .and_then(|t| check_pin(config, lock, t))
            .map(|mut loaded| {
                // Accepted: a tool served by its baseline build gets its
                // optimized build in the background.
                loaded.start_upgrade(runtime);
                let pipeline = config.pipeline_for(&loaded.name);
                Tool::new(loaded, pipeline)
            });
        progress.finished(&planned.path, outcome.is_ok());
        (planned, outcome)
    });
    let mut loads = futures::stream::iter(loads).buffer_unordered(parallel_loads());
    while let Some((planned, outcome)) = loads.next().await {
        each(&planned, outcome);
    }
}

/// Check `tool`'s revision against its pin: `[tools.NAME] pin`, else its
/// entry in the lock file (`lock`: the file as read for this load, `None`
/// when it could not be read), unless the config does not enforce the lock
/// file's pins (`airlock lock`).
fn check_pin(config: &Config, lock: Option<&Lock>, tool: LoadedTool) -> Result<LoadedTool, LoadError> {
    let settings = &config.distribution;
    let read;
    let lock = match lock {
        Some(lock) => lock,
        None if !config.lock_pins && tool.settings.pin.is_none() => return Ok(tool),
        // Fail closed: a lock file that cannot be read may pin this tool.
        None => {
            read = Lock::read(&settings.lock_file, settings.max_lock_bytes)?;
            &read
        }
    };
    let entry = lock.tools.get(&tool.name).filter(|_| config.lock_pins || tool.settings.pin.is_some());
    loader::check_revision(tool, entry.map(|pinned| (settings.lock_file.as_path(), pinned)))
}

async fn load_one(
    runtime: &Runtime,
    config: &Config,
    planned: &Planned,
    once: &CompileOnce,
    progress: &dyn LoadProgress,
) -> Result<LoadedTool, LoadError> {
    // A component found in a directory is matched to its settings by the
    // name it declares, so it is read under the defaults first and then
    // given its own settings (and pin check).
    let mut settings = config.settings_for(planned.key.as_deref().unwrap_or_default());
    let compiling = || progress.compiling(&planned.path);
    let Some(source) = &planned.oci else {
        let tool = loader::load_shared(runtime, &planned.path, settings, once, &compiling).await?;
        return match planned.key {
            Some(_) => Ok(tool),
            None => {
                let settings = config.settings_for(&tool.name);
                loader::with_settings(tool, settings)
            }
        };
    };
    // From a registry: the verified store file, compiled only if its bytes
    // hash to the layer digest the verified manifest names (the loader's
    // pin check, on every load).
    let pulled = distribution::materialize(&config.distribution, source).await?;
    let layer = pulled.layer_digest.strip_prefix("sha256:").unwrap_or(&pulled.layer_digest).to_owned();
    match &settings.sha256 {
        Some(pin) if *pin != layer => {
            return Err(DistributionError::LayerPinMismatch {
                reference: pulled.origin.reference,
                tool: planned.key.clone().unwrap_or_default(),
                layer,
                pin: pin.clone(),
            }
            .into());
        }
        _ => settings.sha256 = Some(layer),
    }
    let mut tool = loader::load_shared(runtime, &pulled.path, settings, once, &compiling).await?;
    tool.origin = Some(pulled.origin);
    match planned.key {
        Some(_) => Ok(tool),
        None => {
            let settings = config.settings_for(&tool.name);
            loader::with_settings(tool, settings)
        }
    }
}

/// A registry put together from loads that finish in any order. The
/// outcome is the one loading the components one by one in plan order
/// gives: of two components declaring one name, the earlier one is kept,
/// and errors are listed in plan order.
pub(crate) struct Assembly {
    tools: BTreeMap<String, (usize, Arc<Tool>)>,
    pending: usize,
    errors: Vec<(usize, RegistryError)>,
}

impl Assembly {
    /// An assembly waiting for `planned` components; `errors` were found
    /// while planning.
    pub(crate) fn new(planned: usize, errors: Vec<RegistryError>) -> Self {
        Assembly { tools: BTreeMap::new(), pending: planned, errors: errors.into_iter().map(|e| (0, e)).collect() }
    }

    /// Add the outcome of one load. `Ok` names the tool now serving; `Err`
    /// says what was refused (the error is also kept for
    /// [`Assembly::finish`]).
    pub(crate) fn add(&mut self, planned: &Planned, outcome: Result<Tool, LoadError>) -> Result<String, String> {
        self.pending = self.pending.saturating_sub(1);
        let error = match self.check(planned, outcome) {
            Ok(name) => return Ok(name),
            Err(error) => error,
        };
        let text = error.to_string();
        self.errors.push((planned.order, error));
        Err(text)
    }

    fn check(&mut self, planned: &Planned, outcome: Result<Tool, LoadError>) -> Result<String, RegistryError> {
        let tool = outcome?;
        if let Some(key) = &planned.key
            && key != &tool.name
        {
            return Err(RegistryError::NameMismatch {
                key: key.clone(),
                path: planned.path.clone(),
                declared: tool.name.clone(),
            });
        }
        let name = tool.name.clone();
        match self.tools.get(&name) {
            Some((order, existing)) if *order < planned.order => {
                Err(RegistryError::Duplicate { name, first: existing.source.clone(), second: planned.path.clone() })
            }
            Some((_, later)) => {
                // The later component was loaded first; the earlier one
                // takes its place, as a one-by-one load would have it.
                let error = RegistryError::Duplicate {
                    name: name.clone(),
                    first: planned.path.clone(),
                    second: later.source.clone(),
                };
                self.tools.insert(name, (planned.order, Arc::new(tool)));
                Err(error)
            }
            None => {
                self.tools.insert(name.clone(), (planned.order, Arc::new(tool)));
                Ok(name)
            }
        }
    }

    /// The tools loaded so far, knowing how many components are pending.
    pub(crate) fn registry(&self) -> Registry {
        let tools = self.tools.iter().map(|(name, (_, tool))| (name.clone(), tool.clone())).collect();
        Registry { tools, pending: self.pending }
    }

    /// The registry and every error, in plan order.
    pub(crate) fn finish(mut self) -> (Registry, Vec<RegistryError>) {
        let registry = self.registry();
        self.errors.sort_by_key(|(order, _)| *order);
        (registry, self.errors.into_iter().map(|(_, error)| error).collect())
    }
}

impl Registry {
    /// Load every tool the config names, [`parallel_loads`] components at
    /// a time. All problems are collected: the registry holds the tools
    /// that loaded, the errors list the rest.
    pub async fn load(
        runtime: &Runtime,
        config: &Config,
        progress: &dyn LoadProgress,
    ) -> (Registry, Vec<RegistryError>) {
        let (planned, errors) = plan(config);
        let mut assembly = Assembly::new(planned.len(), errors);
        load_planned(runtime, config, planned, progress, |planned, outcome| {
            let _ = assembly.add(planned, outcome);
        })
        .await;
        assembly.finish()
    }

    /// A registry with no tools yet and `pending` components still loading.
    pub(crate) fn pending(pending: usize) -> Registry {
        Registry { tools: BTreeMap::new(), pending }
    }

    /// Components still loading when this registry was built (start-up in
    /// the background, see [`HostBuilder::load_in_background`]); 0 once
    /// every component is loaded or refused.
    ///
    /// [`HostBuilder::load_in_background`]: crate::HostBuilder::load_in_background
    pub fn still_loading(&self) -> usize {
        self.pending
    }

    /// Build a registry from tools loaded elsewhere (tests, library users).
    ///
    /// # Errors
    ///
    /// Two tools with the same name.
    pub fn from_tools(list: impl IntoIterator<Item = Tool>) -> Result<Registry, RegistryError> {
        let mut tools = BTreeMap::new();
        for tool in list {
            if let Some(existing) = tools.get(&tool.name) {
                let existing: &Arc<Tool> = existing;
                return Err(RegistryError::Duplicate {
                    name: tool.name.clone(),
                    first: existing.source.clone(),
                    second: tool.source.clone(),
                });
            }
            tools.insert(tool.name.clone(), Arc::new(tool));
        }
        Ok(Registry { tools, pending: 0 })
    }

    /// This registry with each tool that is the same as in `old` (same
    /// name, revision, source file and settings) replaced by `old`'s: a
    /// reload that did not touch a tool keeps it, and with it the tool's
    /// live sessions. A tool whose revision changed is a new tool: the
    /// sessions opened under the old one are not carried over.
    pub fn reusing(mut self, old: &Registry) -> Registry {
        for (name, tool) in &mut self.tools {
            if let Some(kept) = old.tools.get(name)
                && kept.revision == tool.revision
                && kept.digest == tool.digest
                && kept.source == tool.source
                && kept.settings == tool.settings
                && kept.pipeline == tool.pipeline
                && kept.origin == tool.origin
            {
                *tool = kept.clone();
            }
        }
        self
    }

    /// The tools of `old` that this registry serves under another
    /// revision: what a reload writes a `tool_changed` audit record for.
    /// Tools added or removed are not among them (the tool list says so).
    pub fn changes(&self, old: &Registry) -> Vec<ToolChange> {
        self.tools
            .iter()
            .filter_map(|(name, new)| {
                let old = old.tools.get(name).filter(|old| old.revision != new.revision)?;
                Some(ToolChange {
                    tool: name.clone(),
                    old_revision: old.revision.clone(),
                    new_revision: new.revision.clone(),
                    old_component_digest: old.digest.clone(),
                    new_component_digest: new.digest.clone(),
                    old_definition_digest: old.definition_digest.clone(),
                    new_definition_digest: new.definition_digest.clone(),
                })
            })
            .collect()
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<Tool>> {
        self.tools.get(name)
    }

    /// All tools, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Tool>> {
        self.tools.values()
    }

    /// Tool names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }

    /// Number of tools.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// True when no tool is loaded.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

/// The `*.wasm` files directly in `dir`, sorted. A missing directory holds
/// no tools.
fn list_components(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(err),
    };
    let mut files = Vec::new();
    for entry in entries {
        let path = entry?.path();
        if path.extension().is_some_and(|ext| ext == "wasm") && path.is_file() {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}
