//! Load: turn an untrusted `.wasm` file into a [`LoadedTool`], or a
//! [`LoadError`] that says what is wrong and what would be accepted.
//!
//! Trusts nothing in the file. The binary header is checked before the
//! compiler sees the bytes (wasmtime would also accept WAT text); the
//! compiler process checks the component's shape and, by the names of its
//! exports and imports, its world before compiling it; once compiled, the
//! world is checked again by binding the exports, and the metadata is read
//! by running the component under its limits with no grants. Every string the
//! component declares is capped and every schema is compiled before use
//! (`metadata.rs`).
//!
//! A component that records its metadata (`recorded.rs`, written by
//! `airlock tool stamp`) and is not in the compile cache is described from
//! its record at once, under the same checks, and served while it compiles
//! in the background ([`load_shared`]'s [`Settling`]): calls wait for the
//! compilation ([`LoadedTool::ready`]); once compiled, its `metadata`
//! export must return what it recorded, else it is refused
//! ([`LoadError::BadMetadata`], naming the fields). The revision is the same
//! either way. A component from the cache has its record compared at load.

pub use crate::compile_once::CompileOnce;
pub use crate::metadata::{MAX_DESCRIPTION_BYTES, MAX_SCHEMA_BYTES, PORTABLE_DESCRIPTION_CHARS, description_too_long};

use crate::bindings::Contract;
use crate::compile_cache::digest;
use crate::compile_once::{CompileOutcome, Compiled};
use crate::compiler::{CompileFailure, MAX_COMPONENT_BYTES, check_header};
use crate::engine::Runtime;
use crate::metadata::{CheckedMetadata, check_metadata, compile_schema};
use crate::recorded::{self, Recorded};
use crate::revision::{self, Definition, PinnedBy, PinnedTool};
use crate::sandbox::{self, RawMetadata, ToolPre};
use crate::tool_settings::ToolSettings;
use crate::upgrade::{Build, Job};
use crate::validator::Schema;
use crate::wasmtime_config::Tier;
use airlock_core::outcome::{ErrorKind, Failure};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use wasmtime::component::Component;

/// A loaded, checked tool ready to be called.
pub struct LoadedTool {
    /// Declared name (checked).
    pub name: String,
    /// Declared description (capped).
    pub description: String,
    /// Parameters schema (a JSON object schema), compiled in the metered
    /// validator.
    pub parameters: Arc<Schema>,
    /// Output schema, if declared, compiled in the metered validator.
    pub output: Option<Arc<Schema>>,
    /// sha256 of the component bytes (lowercase hex): the first part of
    /// the revision.
    pub digest: String,
    /// `sha256:HEX` of the canonical JSON of the definition (name,
    /// description, parameters and output schemas, as the component declared
    /// them): the second part of the revision.
    pub definition_digest: String,
    /// The tool's revision, `sha256:HEX` over the component digest and the
    /// definition digest (`revision.rs`): sessions, confirmations and pins
    /// are bound to it. Operator settings are not part of it.
    pub revision: String,
    /// Where it was loaded from.
    pub source: PathBuf,
    /// Component size in bytes.
    pub size: u64,
    /// The compiled artifact came from the on-disk cache.
    pub from_cache: bool,
    /// The component's bytes, while its optimized build is still to be
    /// compiled in the background; `None` once handed over or not needed.
    upgrade: Option<Arc<Vec<u8>>>,
    /// Operator settings.
    pub settings: ToolSettings,
    /// The registry it was pulled from, its manifest digest and verified
    /// signer; `None` for a local file.
    pub origin: Option<crate::distribution::Origin>,
    /// The contract version its exports name.
    contract: Contract,
    /// The component pre-instantiated for its contract version, in the
    /// build that runs now: each call instantiates it in a fresh store
    /// ([`LoadedTool::pre`]). A baseline build is replaced by the optimized
    /// one in place, under the same revision (`upgrade.rs`).
    pub build: Build,
}

impl LoadedTool {
    /// The contract version the component targets (`airlock:tool@0.1.0`
    /// or `@0.2.0`), found from the interfaces it exports.
    pub fn contract(&self) -> Contract {
        self.contract
    }

    /// The pre-instantiated component a call instantiates now.
    ///
    /// # Errors
    ///
    /// The tool was listed from its recorded metadata and its component is
    /// still compiling ([`LoadedTool::ready`] waits for it), or was refused
    /// once compiled.
    pub fn pre(&self) -> Result<ToolPre, Failure> {
        self.build.pre()
    }

    /// Wait until the tool's first build is compiled (at once, unless it was
    /// listed from its recorded metadata and still compiles): a call waits
    /// here before it takes its turn. The compilation ends within the
    /// `[engine]` compile limits; `cancel` ends the wait sooner.
    ///
    /// # Errors
    ///
    /// The component was refused once compiled, or the wait was cancelled.
    pub async fn ready(&self, cancel: &CancellationToken) -> Result<(), Failure> {
        self.build.ready(cancel).await
    }

    /// Which compiler built what calls run now; `None` while the first
    /// build compiles.
    pub fn tier(&self) -> Option<Tier> {
        self.build.tier()
    }

    /// Compile the optimized build of a tool served by its baseline build,
    /// in the background (once: a copy of the tool, or the tool given other
    /// settings, shares its build). Call it once the tool is accepted.
    pub fn start_upgrade(&mut self, runtime: &Runtime) {
        if let Some(bytes) = self.upgrade.take() {
            let job = Job { bytes, digest: self.digest.clone(), name: self.name.clone(), build: self.build.clone() };
            submit_upgrade(runtime, job);
        }
    }

    /// The definition as the component declared it: what the definition
    /// digest covers.
    pub fn definition(&self) -> Definition {
        Definition {
            name: self.name.clone(),
            description: self.description.clone(),
            parameters: self.parameters.json().clone(),
            output: self.output.as_ref().map(|schema| schema.json().clone()),
        }
    }

    /// What `airlock lock` writes to the lock file for this tool.
    pub fn pinned(&self) -> PinnedTool {
        PinnedTool {
            revision: self.revision.clone(),
            component_digest: self.digest.clone(),
            definition_digest: self.definition_digest.clone(),
            definition: self.definition(),
        }
    }
}

impl std::fmt::Debug for LoadedTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedTool")
            .field("name", &self.name)
            .field("digest", &self.digest)
            .field("revision", &self.revision)
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

/// Why a component was refused. Each message names the file and the fix.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// A component from a registry could not be pulled or verified (the
    /// error names the reference and the digest; its
    /// [`blame`](crate::distribution::DistributionError::blame) says who has
    /// to act).
    #[error(transparent)]
    Distribution(#[from] crate::distribution::DistributionError),
    /// The file could not be read.
    #[error("{path}: cannot read: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is larger than `MAX_COMPONENT_BYTES` (256 MiB).
    #[error("{path}: {size} bytes is larger than the {MAX_COMPONENT_BYTES}-byte limit for a component")]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        size: u64,
    },
    /// The component is over a cap of its shape (refused before compiling,
    /// the message names the cap), compiling it went over `[engine]
    /// compile_timeout_secs` or `compile_memory_mib`, or it could not run
    /// (the message names the key).
    #[error("{path}: {why}")]
    Compile {
        /// The file.
        path: PathBuf,
        /// Which limit, and how to raise it.
        why: String,
    },
    /// The host memory budget had no room to compile the component in time
    /// (calls, sessions and other compilations held it): nothing is wrong
    /// with it, and a later load compiles it ([`LoadError::is_busy`]).
    #[error("{path}: {why}")]
    Busy {
        /// The file.
        path: PathBuf,
        /// What was held, naming the keys.
        why: String,
    },
    /// An earlier load refused these bytes (not a component, not of the
    /// tool world, over a cap or a compile limit) under the same compile
    /// limits and engine, and the compile cache remembers why: they are not
    /// checked or compiled again until one of those changes.
    #[error("{path}: refused earlier (cached): {why}")]
    Remembered {
        /// The file.
        path: PathBuf,
        /// The reason then, as its load error gave it.
        why: String,
    },
    /// The bytes are not a WebAssembly component.
    #[error("{path}: {why}")]
    NotAComponent {
        /// The file.
        path: PathBuf,
        /// What it is instead and how to build a component.
        why: String,
    },
    /// The component does not fit the `airlock:tool` world.
    #[error("{path}: not an airlock:tool component: {why}")]
    WrongWorld {
        /// The file.
        path: PathBuf,
        /// What is missing or extra.
        why: String,
    },
    /// The sha256 pin in the config does not match.
    #[error("{path}: sha256 is {actual} but the config pins {expected}; refusing to load a component that changed")]
    PinMismatch {
        /// The file.
        path: PathBuf,
        /// The pinned digest.
        expected: String,
        /// The actual digest.
        actual: String,
    },
    /// The tool's revision is not the one the operator pinned (`[tools.NAME]
    /// pin`, or the lock file written by `airlock lock`): the tool is not
    /// served until the operator accepts the change.
    #[error("{path}: {why}")]
    RevisionChanged {
        /// The file.
        path: PathBuf,
        /// The tool's name.
        tool: String,
        /// The revisions, what changed (a diff of the definition when the
        /// lock file keeps it) and how to accept it.
        why: String,
    },
    /// Reading metadata failed (trap, timeout, …).
    #[error("{path}: reading the tool's metadata failed: {failure}")]
    Metadata {
        /// The file.
        path: PathBuf,
        /// What happened.
        failure: Failure,
    },
    /// The metadata is unacceptable.
    #[error("{path}: {why}")]
    BadMetadata {
        /// The file.
        path: PathBuf,
        /// What is wrong and what is accepted.
        why: String,
    },
}

impl LoadError {
    /// Whether the load failed only because the host was busy (the memory
    /// budget had no room to compile the component in time), not for a
    /// reason of the component's own: a later load can succeed.
    pub fn is_busy(&self) -> bool {
        matches!(self, LoadError::Busy { .. })
    }
}

/// Read, check, compile and describe the component at `path`.
///
/// # Errors
///
/// See [`LoadError`]: anything that is not a component of the
/// `airlock:tool` world with a valid name and valid schemas is refused.
pub async fn load(runtime: &Runtime, path: &Path, settings: ToolSettings) -> Result<LoadedTool, LoadError> {
    let once = CompileOnce::default();
    let (mut tool, settling) = load_shared(runtime, path, settings, &once, &|| {}).await?;
    match settling {
        Some(settling) => settling.await?,
        None => tool.start_upgrade(runtime),
    }
    Ok(tool)
}

/// Give a loaded tool other operator settings, checking its sha256 pin.
///
/// # Errors
///
/// The new settings pin another digest.
pub fn with_settings(mut tool: LoadedTool, settings: ToolSettings) -> Result<LoadedTool, LoadError> {
    if let Some(expected) = &settings.sha256
        && !expected.eq_ignore_ascii_case(&tool.digest)
    {
        return Err(LoadError::PinMismatch { path: tool.source, expected: expected.clone(), actual: tool.digest });
    }
    tool.settings = settings;
    Ok(tool)
}

/// Check a loaded tool's revision against its pin: `[tools.NAME] pin` when
/// the config sets one, else the tool's entry in the lock file (`lock`: the
/// file and its entry for this tool), else nothing pins it.
///
/// # Errors
///
/// [`LoadError::RevisionChanged`]: the revision is not the pinned one.
pub fn check_revision(tool: LoadedTool, lock: Option<(&Path, &PinnedTool)>) -> Result<LoadedTool, LoadError> {
    let (pin, by, pinned) = match (&tool.settings.pin, lock) {
        // The lock file's definition still shows what changed, when it is
        // the one the config pins.
        (Some(pin), lock) => (pin.as_str(), PinnedBy::Config, lock.map(|(_, pinned)| pinned)),
        (None, Some((path, pinned))) => (pinned.revision.as_str(), PinnedBy::Lock(path), Some(pinned)),
        (None, None) => return Ok(tool),
    };
    if pin == tool.revision {
        return Ok(tool);
    }
    let why = revision::changed(&tool.definition(), &tool.digest, &tool.revision, pin, by, pinned);
    Err(LoadError::RevisionChanged { path: tool.source, tool: tool.name, why })
}

/// Check the size, header and pin of bytes already in memory and compile
/// them (metered, on the blocking pool), or take them from the cache.
///
/// # Errors
///
/// Too large, not a component, a pin mismatch, or over a compile limit.
pub(crate) async fn compile_bytes(
    runtime: &Runtime,
    path: &Path,
    bytes: &[u8],
    settings: &ToolSettings,
) -> Result<Built, LoadError> {
    let path_buf = path.to_owned();
    let size = bytes.len() as u64;
    if size > MAX_COMPONENT_BYTES {
        return Err(LoadError::TooLarge { path: path_buf, size });
    }
    check_header(bytes).map_err(|why| LoadError::NotAComponent { path: path_buf.clone(), why: why.to_string() })?;
    let digest = digest(bytes);
    if let Some(expected) = &settings.sha256
        && !expected.eq_ignore_ascii_case(&digest)
    {
        return Err(LoadError::PinMismatch { path: path_buf, expected: expected.clone(), actual: digest });
    }
    let outcome = CompileOnce::default().get(runtime, Arc::new(bytes.to_vec()), &digest, &|| {}).await;
    let compiled = outcome.map_err(|failure| failure.into_load_error(path))?;
    Ok(Built { compiled, upgrade: None, digest, size })
}

/// A compiled component and what is known of its bytes.
pub(crate) struct Built {
    /// The compiled component, its tier, whether it came from the cache and
    /// the artifact of one compiled just now (kept in the cache only if the
    /// load accepts the component).
    compiled: Compiled,
    /// The bytes, for a baseline build whose optimized one is to follow.
    upgrade: Option<Arc<Vec<u8>>>,
    digest: String,
    size: u64,
}

impl Built {
    /// The compiled component.
    pub(crate) fn component(&self) -> &Component {
        &self.compiled.component
    }

    /// Which compiler built it.
    pub(crate) fn tier(&self) -> Tier {
        self.compiled.tier
    }
}

impl CompileFailure {
    fn into_load_error(self, path: &Path) -> LoadError {
        match self {
            CompileFailure::Invalid(why) => {
                LoadError::NotAComponent { path: path.to_owned(), why: format!("invalid component: {why}") }
            }
            CompileFailure::WrongWorld(why) => LoadError::WrongWorld { path: path.to_owned(), why },
            CompileFailure::OverLimit(why) | CompileFailure::Refused(why) => {
                LoadError::Compile { path: path.to_owned(), why }
            }
            CompileFailure::Remembered(why) => LoadError::Remembered { path: path.to_owned(), why },
            CompileFailure::Busy(why) => LoadError::Busy { path: path.to_owned(), why },
        }
    }
}

/// Bind a compiled component to the tool world and read its metadata under
/// its limits; when the component records its metadata (`recorded`), the
/// two must be the same. Only an accepted component's artifact is kept in
/// the cache.
pub(crate) async fn describe(
    runtime: &Runtime,
    path_buf: PathBuf,
    compiled: Built,
    settings: ToolSettings,
    recorded: Option<&RawMetadata>,
) -> Result<LoadedTool, LoadError> {
    let Built { compiled: Compiled { component, tier, from_cache, artifact, .. }, upgrade, digest, size } = compiled;
    let pre = bind(runtime, &path_buf, &component, tier)?;
    let raw = read_metadata(&pre, &settings, &path_buf, recorded).await?;
    let contract = pre.contract();
    let known = Known { digest, size, contract, from_cache, upgrade };
    let tool = accept(runtime, path_buf, raw, settings, known, Build::new(pre, tier)).await?;
    // Only a component the whole load accepted is kept in the cache.
    if let Some(artifact) = artifact {
        artifact.keep();
    }
    Ok(tool)
}

/// Bind a compiled component to the tool world.
pub(crate) fn bind(runtime: &Runtime, path: &Path, component: &Component, tier: Tier) -> Result<ToolPre, LoadError> {
    let instance_pre = runtime.linker_for(tier).instantiate_pre(component).map_err(|err| LoadError::WrongWorld {
        path: path.to_owned(),
        why: format!("{err:#} (a tool may import only WASI 0.2 interfaces)"),
    })?;
    ToolPre::new(instance_pre).map_err(|err| LoadError::WrongWorld {
        path: path.to_owned(),
        why: format!(
            "{err:#} (a tool must export airlock:tool/metadata and airlock:tool/handler, of version 0.3.0, 0.2.0 or 0.1.0)"
        ),
    })
}

/// Run the component's `metadata` export under its limits, with no grants;
/// when it records its metadata (`recorded`), the two must be the same.
pub(crate) async fn read_metadata(
    pre: &ToolPre,
    settings: &ToolSettings,
    path: &Path,
    recorded: Option<&RawMetadata>,
) -> Result<RawMetadata, LoadError> {
    let raw = sandbox::metadata(pre, &settings.limits).await.map_err(|mut failure| {
        // The metadata crosses to the host like a result: say which caps
        // apply to it rather than to a call's result.
        if failure.kind == ErrorKind::OutputTooLarge {
            failure.message = format!(
                "the component handed the host more metadata than it accepts at once (a description of at most \
                 {MAX_DESCRIPTION_BYTES} bytes, schemas of at most {MAX_SCHEMA_BYTES} bytes each)"
            );
        }
        LoadError::Metadata { path: path.to_owned(), failure }
    })?;
    if let Some(recorded) = recorded {
        recorded::compare(recorded, &raw).map_err(|why| LoadError::BadMetadata { path: path.to_owned(), why })?;
    }
    Ok(raw)
}

/// What the loader knows of a component besides its metadata.
struct Known {
    digest: String,
    size: u64,
    contract: Contract,
    from_cache: bool,
    /// The bytes, for a baseline build whose optimized one is to follow.
    upgrade: Option<Arc<Vec<u8>>>,
}

/// Check the metadata a component declared (by its export or recorded in
/// it) and make the tool it describes.
async fn accept(
    runtime: &Runtime,
    path: PathBuf,
    raw: RawMetadata,
    settings: ToolSettings,
    known: Known,
    build: Build,
) -> Result<LoadedTool, LoadError> {
    let checked = check_metadata(raw).map_err(|why| LoadError::BadMetadata { path: path.clone(), why })?;
    if let Some(problem) = description_too_long(&checked.name, &checked.description) {
        tracing::warn!(component = %path.display(), "{problem}");
    }
    let bad = |why| LoadError::BadMetadata { path: path.clone(), why };
    let validator = runtime.validator();
    let parameters =
        compile_schema(validator, &checked.name, "parameters", &checked.parameters, &settings).await.map_err(bad)?;
    let output = match &checked.output {
        Some(schema) => Some(compile_schema(validator, &checked.name, "output", schema, &settings).await.map_err(bad)?),
        None => None,
    };
    let CheckedMetadata { name, description, parameters: declared, output: declared_output } = checked;
    let definition = Definition { name, description, parameters: declared, output: declared_output };
    let definition_digest = definition.digest();
    let Known { digest, size, contract, from_cache, upgrade } = known;
    Ok(LoadedTool {
        revision: revision::revision(&digest, &definition_digest),
        definition_digest,
        name: definition.name,
        description: definition.description,
        parameters,
        output,
        digest,
        source: path,
        size,
        from_cache,
        settings,
        origin: None,
        upgrade,
        contract,
        build,
    })
}

/// How a load that began compiling a component with recorded metadata
/// ends: the tool is served once it settles `Ok`; `Err` refuses it.
pub type Settling<'a> = Pin<Box<dyn Future<Output = Result<(), LoadError>> + Send + 'a>>;

/// [`load`] for loads that run in parallel: the file is read, hashed and
/// compiled off the async threads, and components with the same bytes are
/// compiled once (through `once`). `compiling` is called when the cache has
/// no artifact and compilation begins.
///
/// A component that records its metadata (`recorded.rs`) and has to be
/// compiled is described from its record at once: the tool comes back with
/// its first build still compiling, and the [`Settling`] future, driven by
/// the caller, finishes the compilation, compares the record with the
/// `metadata` export and settles the tool's build ([`Build::ready`]).
///
/// # Errors
///
/// See [`LoadError`].
pub async fn load_shared<'a>(
    runtime: &'a Runtime,
    path: &Path,
    settings: ToolSettings,
    once: &'a CompileOnce,
    compiling: &(dyn Fn() + Send + Sync),
) -> Result<(LoadedTool, Option<Settling<'a>>), LoadError> {
    let owned = path.to_owned();
    let (bytes, digest) = match tokio::task::spawn_blocking(move || read_component(&owned)).await {
        Ok(read) => read?,
        Err(err) => return Err(LoadError::Io { path: path.to_owned(), source: std::io::Error::other(err) }),
    };
    if let Some(expected) = &settings.sha256
        && !expected.eq_ignore_ascii_case(&digest)
    {
        return Err(LoadError::PinMismatch { path: path.to_owned(), expected: expected.clone(), actual: digest });
    }
    let recorded = recorded::find(&bytes).map_err(|why| LoadError::BadMetadata { path: path.to_owned(), why })?;
    if recorded.is_some() {
        // Listing from the record needs the schema validator, compiled
        // once per cache: it goes first, before compilers take the cores.
        // (A validator that cannot be made ready is the schemas' error.)
        let _ = runtime.validator().ready().await;
    }
    let size = bytes.len() as u64;
    let (began, mut compile_began) = tokio::sync::oneshot::channel();
    let began = std::sync::Mutex::new(Some(began));
    let (shared, key) = (bytes.clone(), digest.clone());
    let mut compile = Box::pin(async move {
        let signal = || {
            if let Some(began) = began.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take() {
                let _ = began.send(());
            }
        };
        once.get(runtime, shared, &key, &signal).await
    });
    let outcome = tokio::select! {
        biased;
        outcome = &mut compile => outcome,
        Ok(()) = &mut compile_began => {
            compiling();
            match recorded {
                Some(Recorded { raw, contract: Some(contract) }) => {
                    let known = Known { digest, size, contract, from_cache: false, upgrade: None };
                    let build = Build::compiling();
                    let tool = accept(runtime, path.to_owned(), raw.clone(), settings, known, build).await?;
                    let settling = settle(runtime, &tool, compile, bytes, raw);
                    return Ok((tool, Some(settling)));
                }
                _ => compile.await,
            }
        }
    };
    let compiled = outcome.map_err(|failure| failure.into_load_error(path))?;
    let upgrade = compiled.upgrade.then_some(bytes);
    let recorded = recorded.map(|recorded| recorded.raw);
    let built = Built { compiled, upgrade, digest, size };
    Ok((describe(runtime, path.to_owned(), built, settings, recorded.as_ref()).await?, None))
}

/// Finish compiling a tool listed from its recorded metadata (`recorded`):
/// bind it, read its `metadata` export and compare the two, then settle
/// its build, and hand a baseline build over for its optimized one.
fn settle<'a>(
    runtime: &'a Runtime,
    tool: &LoadedTool,
    compile: impl Future<Output = CompileOutcome> + Send + 'a,
    bytes: Arc<Vec<u8>>,
    recorded: RawMetadata,
) -> Settling<'a> {
    let (path, settings, build) = (tool.source.clone(), tool.settings.clone(), tool.build.clone());
    let (name, digest, contract) = (tool.name.clone(), tool.digest.clone(), tool.contract);
    Box::pin(async move {
        let settled = async {
            let compiled = compile.await.map_err(|failure| failure.into_load_error(&path))?;
            let pre = bind(runtime, &path, &compiled.component, compiled.tier)?;
            if pre.contract() != contract {
                let why = format!("its exports name {contract} but it binds as {}", pre.contract());
                return Err(LoadError::WrongWorld { path: path.clone(), why });
            }
            read_metadata(&pre, &settings, &path, Some(&recorded)).await?;
            Ok((compiled, pre))
        };
        match settled.await {
            Ok((compiled, pre)) => {
                if let Some(artifact) = &compiled.artifact {
                    artifact.keep();
                }
                build.finish(pre, compiled.tier);
                if compiled.upgrade {
                    submit_upgrade(runtime, Job { bytes, digest, name, build });
                }
                Ok(())
            }
            Err(err) => {
                build.refuse(err.to_string());
                Err(err)
            }
        }
    })
}

/// Compile the optimized build of `job` in the background.
fn submit_upgrade(runtime: &Runtime, job: Job) {
    let compilers = || (runtime.compiler(Tier::Optimized), runtime.compiler(Tier::Baseline), runtime.linker().clone());
    runtime.upgrades().submit(compilers, job);
}

/// Read a component file under [`MAX_COMPONENT_BYTES`], check its header
/// and hash it.
fn read_component(path: &Path) -> Result<(Arc<Vec<u8>>, String), LoadError> {
    let io = |source| LoadError::Io { path: path.to_owned(), source };
    let size = std::fs::metadata(path).map_err(io)?.len();
    if size > MAX_COMPONENT_BYTES {
        return Err(LoadError::TooLarge { path: path.to_owned(), size });
    }
    // The file may have grown since: read at most one byte over the cap.
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| {
            std::io::Read::read_to_end(&mut std::io::Read::take(file, MAX_COMPONENT_BYTES + 1), &mut bytes)
        })
        .map_err(io)?;
    if bytes.len() as u64 > MAX_COMPONENT_BYTES {
        return Err(LoadError::TooLarge { path: path.to_owned(), size: bytes.len() as u64 });
    }
    check_header(&bytes).map_err(|why| LoadError::NotAComponent { path: path.to_owned(), why: why.to_string() })?;
    let digest = digest(&bytes);
    Ok((Arc::new(bytes), digest))
}
