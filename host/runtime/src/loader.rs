//! Load: turn an untrusted `.wasm` file into a [`LoadedTool`], or a
//! [`LoadError`] that says what is wrong and what would be accepted.
//!
//! Trusts nothing in the file. The binary header is checked before the
//! compiler sees the bytes (wasmtime would also accept WAT text); the
//! compiler process checks the component's shape and, by the names of its
//! exports and imports, its world before compiling it; once compiled, the
//! world is checked again by binding the exports, and the metadata is read
//! by running the component under its limits with no grants. Every string the
//! component declares is capped and every schema is compiled before use.

use crate::bindings::Contract;
use crate::compile_cache::{Lookup, digest};
use crate::compiler::{Artifact, CompileFailure, MAX_COMPONENT_BYTES, check_header};
use crate::engine::Runtime;
use crate::revision::{self, Definition, PinnedBy, PinnedTool};
use crate::sandbox::{self, RawMetadata, ToolPre};
use crate::tier_compiler::Fresh;
use crate::tool_settings::{ToolSettings, check_name};
use crate::upgrade::{Build, Job};
use crate::validator::{Bounds, MAX_REGEX_BYTES, Schema, Stopped, Validator};
use crate::wasmtime_config::Tier;
use airlock_core::outcome::{ErrorKind, Failure};
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::sync::OnceCell;
use wasmtime::component::Component;

/// Largest tool description accepted.
pub const MAX_DESCRIPTION_BYTES: usize = 16 << 10;
/// Longest description, in characters, that every client converter
/// accepts: LlamaIndex's `to_openai_tool()` refuses a longer one, and
/// OpenAI-compatible endpoints have refused `tools[i].function.description`
/// above it (`string_above_max_length`). A longer one loads, with a
/// warning.
pub const PORTABLE_DESCRIPTION_CHARS: usize = 1024;

/// The warning for a description longer than
/// [`PORTABLE_DESCRIPTION_CHARS`]; `None` when it fits.
pub fn description_too_long(name: &str, description: &str) -> Option<String> {
    let chars = description.chars().count();
    (chars > PORTABLE_DESCRIPTION_CHARS).then(|| {
        format!(
            "the description of {name:?} is {chars} characters; some clients refuse more than \
             {PORTABLE_DESCRIPTION_CHARS} (LlamaIndex's to_openai_tool(), OpenAI-compatible endpoints): move detail \
             into the parameters' descriptions"
        )
    })
}

/// Largest parameters or output schema accepted.
pub const MAX_SCHEMA_BYTES: usize = 256 << 10;

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
        self.build.pre().contract()
    }

    /// The pre-instantiated component a call instantiates now.
    pub fn pre(&self) -> ToolPre {
        self.build.pre()
    }

    /// Which compiler built what calls run now.
    pub fn tier(&self) -> Tier {
        self.build.tier()
    }

    /// Compile the optimized build of a tool served by its baseline build,
    /// in the background (once: a copy of the tool, or the tool given other
    /// settings, shares its build). Call it once the tool is accepted.
    pub fn start_upgrade(&mut self, runtime: &Runtime) {
        if let Some(bytes) = self.upgrade.take() {
            let job = Job { bytes, digest: self.digest.clone(), name: self.name.clone(), build: self.build.clone() };
            let compilers =
                || (runtime.compiler(Tier::Optimized), runtime.compiler(Tier::Baseline), runtime.linker().clone());
            runtime.upgrades().submit(compilers, job);
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
    let mut tool = load_shared(runtime, path, settings, &CompileOnce::default(), &|| {}).await?;
    tool.start_upgrade(runtime);
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
/// its limits. Only an accepted component's artifact is kept in the cache.
pub(crate) async fn describe(
    runtime: &Runtime,
    path_buf: PathBuf,
    compiled: Built,
    settings: ToolSettings,
) -> Result<LoadedTool, LoadError> {
    let Built { compiled: Compiled { component, tier, from_cache, artifact, .. }, upgrade, digest, size } = compiled;
    let instance_pre = runtime.linker_for(tier).instantiate_pre(&component).map_err(|err| LoadError::WrongWorld {
        path: path_buf.clone(),
        why: format!("{err:#} (a tool may import only WASI 0.2 interfaces)"),
    })?;
    let pre = ToolPre::new(instance_pre).map_err(|err| LoadError::WrongWorld {
        path: path_buf.clone(),
        why: format!(
            "{err:#} (a tool must export airlock:tool/metadata and airlock:tool/handler, of version 0.3.0, 0.2.0 or 0.1.0)"
        ),
    })?;
    let raw = sandbox::metadata(&pre, &settings.limits).await.map_err(|mut failure| {
        // The metadata crosses to the host like a result: say which caps
        // apply to it rather than to a call's result.
        if failure.kind == ErrorKind::OutputTooLarge {
            failure.message = format!(
                "the component handed the host more metadata than it accepts at once (a description of at most \
                 {MAX_DESCRIPTION_BYTES} bytes, schemas of at most {MAX_SCHEMA_BYTES} bytes each)"
            );
        }
        LoadError::Metadata { path: path_buf.clone(), failure }
    })?;
    let checked = check_metadata(raw).map_err(|why| LoadError::BadMetadata { path: path_buf.clone(), why })?;
    if let Some(problem) = description_too_long(&checked.name, &checked.description) {
        tracing::warn!(component = %path_buf.display(), "{problem}");
    }
    let bad = |why| LoadError::BadMetadata { path: path_buf.clone(), why };
    let validator = runtime.validator();
    let parameters =
        compile_schema(validator, &checked.name, "parameters", &checked.parameters, &settings).await.map_err(bad)?;
    let output = match &checked.output {
        Some(schema) => Some(compile_schema(validator, &checked.name, "output", schema, &settings).await.map_err(bad)?),
        None => None,
    };
    // Only a component the whole load accepted is kept in the cache.
    if let Some(artifact) = artifact {
        artifact.keep();
    }
    let definition_digest = Definition {
        name: checked.name.clone(),
        description: checked.description.clone(),
        parameters: checked.parameters,
        output: checked.output,
    }
    .digest();
    let revision = revision::revision(&digest, &definition_digest);
    Ok(LoadedTool {
        definition_digest,
        revision,
        name: checked.name,
        description: checked.description,
        parameters,
        output,
        digest,
        source: path_buf,
        size,
        from_cache,
        settings,
        origin: None,
        upgrade,
        build: Build::new(pre, tier),
    })
}

/// What compiling one digest gave, or why it was refused.
type CompileOutcome = Result<Compiled, CompileFailure>;

/// A component compiled for one digest.
#[derive(Clone)]
struct Compiled {
    component: Component,
    tier: Tier,
    from_cache: bool,
    /// The artifact of a component compiled just now, waiting to be kept.
    artifact: Option<Arc<Artifact>>,
    /// A baseline build whose optimized one is still to be compiled.
    upgrade: bool,
}

impl Compiled {
    fn cached(component: Component, tier: Tier, upgrade: bool) -> Self {
        Compiled { component, tier, from_cache: true, artifact: None, upgrade }
    }

    fn fresh(fresh: Fresh, tier: Tier) -> Self {
        let upgrade = tier == Tier::Baseline;
        Compiled {
            component: fresh.component,
            tier,
            from_cache: false,
            artifact: Some(Arc::new(fresh.artifact)),
            upgrade,
        }
    }
}

/// Compiled components by digest, shared by the loads of one registry
/// build: files with the same bytes are compiled once, even when their
/// loads run at the same time.
#[derive(Default)]
pub struct CompileOnce {
    cells: std::sync::Mutex<HashMap<String, Arc<OnceCell<CompileOutcome>>>>,
}

impl CompileOnce {
    /// The component with this digest: from the cache, from an earlier or
    /// running compilation of the same bytes, or compiled now on the
    /// blocking pool (`compiling` is called first).
    async fn get(
        &self,
        runtime: &Runtime,
        bytes: Arc<Vec<u8>>,
        digest: &str,
        compiling: &(dyn Fn() + Send + Sync),
    ) -> CompileOutcome {
        let cell = {
            let mut cells = self.cells.lock().unwrap_or_else(|e| e.into_inner());
            cells.entry(digest.to_owned()).or_default().clone()
        };
        let outcome = cell.get_or_init(|| compile_tiered(runtime, bytes, digest.to_owned(), compiling)).await;
        outcome.clone()
    }
}

/// The component with this digest from the cache (its optimized build, else
/// its baseline one), or compiled now: by the baseline compiler first when
/// the runtime has one (the optimized build follows in the background),
/// else, or when Winch does not compile it, by the optimizing compiler.
async fn compile_tiered(
    runtime: &Runtime,
    bytes: Arc<Vec<u8>>,
    digest: String,
    compiling: &(dyn Fn() + Send + Sync),
) -> CompileOutcome {
    let optimized = runtime.compiler(Tier::Optimized);
    let baseline = runtime.baseline_first().then(|| runtime.compiler(Tier::Baseline));
    // Mapping a cached artifact is file I/O: off the async threads too. A
    // refusal the cache remembers is not paid for again.
    let (cache, key, tiers) = (optimized.clone(), digest.clone(), baseline.clone());
    let looked = tokio::task::spawn_blocking(move || {
        let first = cache.lookup(&key);
        let second = match (&first, &tiers) {
            (Lookup::Artifact(_), _) | (_, None) => None,
            (_, Some(baseline)) => Some(baseline.lookup_artifact(&key)),
        };
        (first, second)
    })
    .await;
    match looked {
        Ok((Lookup::Artifact(component), _)) => return Ok(Compiled::cached(component, Tier::Optimized, false)),
        // Cranelift refused it earlier (over a compile limit Winch was
        // within): its baseline build serves, and is not upgraded.
        Ok((Lookup::Refused(_), Some(Some(component)))) => {
            return Ok(Compiled::cached(component, Tier::Baseline, false));
        }
        Ok((Lookup::Refused(failure), _)) => return Err(failure),
        Ok((Lookup::Miss, Some(Some(component)))) => return Ok(Compiled::cached(component, Tier::Baseline, true)),
        Ok((Lookup::Miss, _)) => {}
        Err(err) => return Err(CompileFailure::Refused(format!("the cache lookup stopped: {err}"))),
    }
    compiling();
    if let Some(baseline) = baseline {
        let (bytes, key) = (bytes.clone(), digest.clone());
        match tokio::task::spawn_blocking(move || baseline.compile(&bytes, &key)).await {
            Ok(Ok(fresh)) => return Ok(Compiled::fresh(fresh, Tier::Baseline)),
            // Winch does not compile it (or could not run): Cranelift decides.
            Ok(Err(CompileFailure::Refused(why))) => {
                tracing::debug!(digest = %digest, "compiling with Cranelift: {why}");
            }
            // What the bytes are, or no room in the budget: the same for both.
            Ok(Err(failure)) => return Err(failure),
            Err(err) => return Err(CompileFailure::Refused(format!("the compilation stopped: {err}"))),
        }
    }
    match tokio::task::spawn_blocking(move || optimized.compile(&bytes, &digest)).await {
        Ok(Ok(fresh)) => Ok(Compiled::fresh(fresh, Tier::Optimized)),
        Ok(Err(failure)) => Err(failure),
        Err(err) => Err(CompileFailure::Refused(format!("the compilation stopped: {err}"))),
    }
}

/// [`load`] for loads that run in parallel: the file is read, hashed and
/// compiled off the async threads, and components with the same bytes are
/// compiled once (through `once`). `compiling` is called when the cache has
/// no artifact and compilation begins.
///
/// # Errors
///
/// See [`LoadError`].
pub async fn load_shared(
    runtime: &Runtime,
    path: &Path,
    settings: ToolSettings,
    once: &CompileOnce,
    compiling: &(dyn Fn() + Send + Sync),
) -> Result<LoadedTool, LoadError> {
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
    let size = bytes.len() as u64;
    let compiled =
        once.get(runtime, bytes.clone(), &digest, compiling).await.map_err(|failure| failure.into_load_error(path))?;
    let upgrade = compiled.upgrade.then_some(bytes);
    describe(runtime, path.to_owned(), Built { compiled, upgrade, digest, size }, settings).await
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

struct CheckedMetadata {
    name: String,
    description: String,
    parameters: Value,
    output: Option<Value>,
}

fn check_metadata(raw: RawMetadata) -> Result<CheckedMetadata, String> {
    check_name(&raw.name)?;
    if raw.description.len() > MAX_DESCRIPTION_BYTES {
        return Err(format!(
            "the description of {:?} is {} bytes; at most {MAX_DESCRIPTION_BYTES} are accepted",
            raw.name,
            raw.description.len()
        ));
    }
    if raw.description.trim().is_empty() {
        return Err(format!("tool {:?} has an empty description; models need one to choose the tool", raw.name));
    }
    let parameters = check_schema(&raw.name, "parameters", &raw.parameters)?;
    if parameters.get("type") != Some(&Value::String("object".into())) {
        return Err(format!(
            "the parameters schema of {:?} must have \"type\": \"object\" (tool arguments are a JSON object)",
            raw.name
        ));
    }
    let output = match &raw.output {
        Some(text) => Some(check_schema(&raw.name, "output", text)?),
        None => None,
    };
    Ok(CheckedMetadata { name: raw.name, description: raw.description, parameters, output })
}

/// Parse a schema the component declared and check its shape: JSON, an
/// object, valid against its metaschema. (Compiling it, which runs the
/// author's patterns and references, is done under the meter:
/// [`compile_schema`].)
fn check_schema(tool: &str, which: &str, text: &str) -> Result<Value, String> {
    if text.len() > MAX_SCHEMA_BYTES {
        return Err(format!(
            "the {which} schema of {tool:?} is {} bytes; at most {MAX_SCHEMA_BYTES} are accepted",
            text.len()
        ));
    }
    let schema: Value =
        serde_json::from_str(text).map_err(|err| format!("the {which} schema of {tool:?} is not JSON: {err}"))?;
    if !schema.is_object() {
        return Err(format!("the {which} schema of {tool:?} must be a JSON object (a JSON Schema), not {schema}"));
    }
    jsonschema::meta::validate(&schema)
        .map_err(|err| format!("the {which} schema of {tool:?} is not a valid JSON Schema: {err}"))?;
    Ok(schema)
}

/// Compile a schema the component declared in the runtime's metered
/// validator, under the tool's `timeout_ms` and `validation_memory_mib`, as
/// reading its metadata was.
async fn compile_schema(
    validator: &Validator,
    tool: &str,
    which: &str,
    schema: &Value,
    settings: &ToolSettings,
) -> Result<Arc<Schema>, String> {
    let limits = &settings.limits;
    // The validator itself is made ready first: its own compilation (once
    // per runtime, or once per cache) is not the schema's time.
    validator.ready().await.map_err(|why| format!("the {which} schema of {tool:?}: {why}"))?;
    let cancel = tokio_util::sync::CancellationToken::new();
    let bounds = Bounds {
        at: tokio::time::Instant::now() + limits.timeout,
        cancel: &cancel,
        memory_bytes: limits.validation_memory_bytes,
    };
    match validator.compile(schema, bounds).await {
        Ok(Ok(compiled)) => Ok(Arc::new(compiled)),
        Ok(Err(why)) => Err(format!(
            "the {which} schema of {tool:?} cannot be compiled: {why} (patterns may use neither look-around nor \
             back-references, and compile to at most {MAX_REGEX_BYTES} bytes)"
        )),
        Err(Stopped::Deadline | Stopped::Cancelled) => Err(format!(
            "compiling the {which} schema of {tool:?} took longer than the tool's timeout_ms = {}",
            limits.timeout.as_millis()
        )),
        Err(Stopped::Memory) => Err(format!(
            "compiling the {which} schema of {tool:?} needed more memory than the tool's validation_memory_mib = {}",
            limits.validation_memory_bytes >> 20
        )),
        Err(Stopped::Fault(why)) => Err(format!("the {which} schema of {tool:?} cannot be compiled: {why}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(parameters: &str, output: Option<&str>) -> RawMetadata {
        RawMetadata {
            name: "t".into(),
            description: "d".into(),
            parameters: parameters.into(),
            output: output.map(Into::into),
        }
    }

    #[test]
    fn schemas_are_checked() {
        assert!(check_metadata(raw(r#"{"type":"object"}"#, None)).is_ok());
        assert!(check_metadata(raw(r#"{"type":"object"}"#, Some(r#"{"type":"string"}"#))).is_ok());
        let err = |p: &str, o: Option<&str>| check_metadata(raw(p, o)).err().unwrap();
        assert!(err("not json", None).contains("not JSON"));
        assert!(err("[]", None).contains("must be a JSON object"));
        assert!(err(r#"{"type":"string"}"#, None).contains("\"type\": \"object\""));
        assert!(err(r#"{"type":"object","minProperties":"x"}"#, None).contains("not a valid JSON Schema"));
        assert!(err(r#"{"type":"object"}"#, Some("true")).contains("output schema"));
    }

    #[test]
    fn a_description_over_the_portable_length_is_named() {
        assert_eq!(description_too_long("t", &"é".repeat(PORTABLE_DESCRIPTION_CHARS)), None);
        let warning = description_too_long("t", &"x".repeat(PORTABLE_DESCRIPTION_CHARS + 1)).unwrap();
        assert!(warning.contains("1025 characters") && warning.contains("1024"), "{warning}");
    }

    #[test]
    fn oversized_description_is_refused() {
        let mut meta = raw(r#"{"type":"object"}"#, None);
        meta.description = "x".repeat(MAX_DESCRIPTION_BYTES + 1);
        assert!(check_metadata(meta).err().unwrap().contains("at most"));
    }
}
