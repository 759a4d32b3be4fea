//! The set of loaded tools, built from a [`Config`]: explicit components,
//! then every `*.wasm` in the configured tool directories.
//!
//! A registry is immutable once built; a reload builds a new one and swaps
//! it in whole, so a call always sees one consistent set of tools.

use crate::config::Config;
use crate::engine::Runtime;
use crate::loader::{self, LoadError, LoadedTool};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Loaded tools by name.
#[derive(Debug, Default)]
pub struct Registry {
    tools: BTreeMap<String, Arc<LoadedTool>>,
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

/// Progress of a registry build, for terminals.
pub trait LoadProgress: Send + Sync {
    /// Called before loading the `index`-th of `total` components.
    fn loading(&self, index: usize, total: usize, path: &Path);
}

impl LoadProgress for () {
    fn loading(&self, _: usize, _: usize, _: &Path) {}
}

impl Registry {
    /// Load every tool the config names. All problems are collected: the
    /// registry holds the tools that loaded, the errors list the rest.
    pub async fn load(
        runtime: &Runtime,
        config: &Config,
        progress: &dyn LoadProgress,
    ) -> (Registry, Vec<RegistryError>) {
        let mut errors = Vec::new();
        let mut files: Vec<(Option<String>, PathBuf)> = Vec::new();
        for (key, tool) in &config.tools {
            if let Some(path) = &tool.component {
                files.push((Some(key.clone()), path.clone()));
            }
        }
        for dir in &config.tool_dirs {
            match list_components(dir) {
                Ok(found) => files.extend(
                    found
                        .into_iter()
                        .filter(|p| !files.iter().any(|(_, q)| q == p))
                        .map(|p| (None, p))
                        .collect::<Vec<_>>(),
                ),
                Err(source) => errors.push(RegistryError::Dir { path: dir.clone(), source }),
            }
        }
        let mut tools: BTreeMap<String, Arc<LoadedTool>> = BTreeMap::new();
        let total = files.len();
        for (index, (key, path)) in files.into_iter().enumerate() {
            progress.loading(index, total, &path);
            // A component found in a directory is matched to its settings
            // by the name it declares, so it is read under the defaults
            // first and then given its own settings (and pin check).
            let settings = config.settings_for(key.as_deref().unwrap_or_default());
            let tool = match loader::load(runtime, &path, settings).await {
                Ok(tool) if key.is_none() => {
                    let settings = config.settings_for(&tool.name);
                    loader::with_settings(tool, settings)
                }
                other => other,
            };
            let tool = match tool {
                Ok(tool) => tool,
                Err(err) => {
                    errors.push(err.into());
                    continue;
                }
            };
            if let Some(key) = &key
                && key != &tool.name
            {
                errors.push(RegistryError::NameMismatch { key: key.clone(), path, declared: tool.name.clone() });
                continue;
            }
            if let Some(existing) = tools.get(&tool.name) {
                errors.push(RegistryError::Duplicate {
                    name: tool.name.clone(),
                    first: existing.source.clone(),
                    second: path,
                });
                continue;
            }
            tools.insert(tool.name.clone(), Arc::new(tool));
        }
        (Registry { tools }, errors)
    }

    /// Build a registry from tools loaded elsewhere (tests, library users).
    ///
    /// # Errors
    ///
    /// Two tools with the same name.
    pub fn from_tools(list: impl IntoIterator<Item = LoadedTool>) -> Result<Registry, RegistryError> {
        let mut tools = BTreeMap::new();
        for tool in list {
            if let Some(existing) = tools.get(&tool.name) {
                let existing: &Arc<LoadedTool> = existing;
                return Err(RegistryError::Duplicate {
                    name: tool.name.clone(),
                    first: existing.source.clone(),
                    second: tool.source.clone(),
                });
            }
            tools.insert(tool.name.clone(), Arc::new(tool));
        }
        Ok(Registry { tools })
    }

    /// This registry with each tool that is the same as in `old` (same
    /// name, component digest, source file and settings) replaced by
    /// `old`'s: a reload that did not touch a tool keeps it, and with it
    /// the tool's live sessions.
    pub fn reusing(mut self, old: &Registry) -> Registry {
        for (name, tool) in &mut self.tools {
            if let Some(kept) = old.tools.get(name)
                && kept.digest == tool.digest
                && kept.source == tool.source
                && kept.settings == tool.settings
            {
                *tool = kept.clone();
            }
        }
        self
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<LoadedTool>> {
        self.tools.get(name)
    }

    /// All tools, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<LoadedTool>> {
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
