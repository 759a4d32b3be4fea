//! Compilation under a meter: a component's bytes are compiled to native
//! code in a child process (`airlock __compile`) with a CPU-time limit
//! (`RLIMIT_CPU`), an address-space limit (`RLIMIT_AS`) and a wall-clock
//! deadline enforced by the parent, so that a component built to be
//! expensive to compile (compile time grows with locals² × loop depth)
//! cannot hold the host's cores or memory.
//!
//! Trusts nothing in the component's bytes: the child
//! (`compiler/child.rs`) reads them from its stdin (never the file again,
//! whose contents could change after they were hashed), checks their shape
//! before anything is compiled (caps on what compilation cost grows with,
//! and whether the exports can be of the `airlock:tool` world:
//! `compiler/shape.rs`), compiles them with an engine configured like the
//! host's and writes the serialized artifact to a file the parent chose.
//! The parent deserializes that file only when the child exited cleanly,
//! and keeps it in the compile cache only once the whole load accepted the
//! component ([`Artifact::keep`]); a refused component leaves no artifact
//! (the cache remembers a refusal for what the bytes are instead:
//! [`CompileFailure::to_remembered`], `compile_cache.rs`).
//!
//! The child's own output (its stderr) is read up to
//! [`MAX_CHILD_STDERR_BYTES`].

mod child;
mod process;
mod shape;

pub use child::child_main;

use crate::memory_budget::{Holder, MemoryBudget, Refusal, share_of};
use airlock_settings::engine::{
    COMPILE_BASE_SECS, EngineSettings, MAX_COMPILE_MEMORY_MIB, MAX_COMPILE_SECS_PER_MIB, MAX_COMPILE_TIMEOUT_SECS,
    MIN_COMPILE_MEMORY_MIB,
};
use process::{Exit, cpu_used, reap, signal_of};
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The hidden subcommand of the `airlock` binary that compiles one
/// component (see [`child_main`]).
pub const COMPILE_SUBCOMMAND: &str = "__compile";

/// Largest component file accepted.
pub const MAX_COMPONENT_BYTES: u64 = 256 << 20;
/// The header of a component binary (`\0asm`, version 0x0d, layer 1).
const COMPONENT_HEADER: [u8; 8] = [0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];
/// The header of a core module binary.
const MODULE_HEADER: [u8; 8] = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];

/// What a file is when it is not a WebAssembly component, by its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NotAComponent {
    /// A core WebAssembly module.
    #[error(
        "this is a core WebAssembly module, not a component: build the tool for --target wasm32-wasip2 (or wrap it \
         with `wasm-tools component new`)"
    )]
    CoreModule,
    /// A WebAssembly binary of another version or layer.
    #[error(
        "this WebAssembly binary has an unsupported version or layer; expected a component (version 0x0d, layer 1)"
    )]
    UnsupportedVersion,
    /// Not WebAssembly at all.
    #[error("this is not a WebAssembly binary (no `\\0asm` header); expected a component built for wasm32-wasip2")]
    NotWasm,
}

/// Check that `bytes` start like a component.
///
/// # Errors
///
/// What they are instead.
pub fn check_header(bytes: &[u8]) -> Result<(), NotAComponent> {
    match bytes.get(..8) {
        Some(h) if h == COMPONENT_HEADER => Ok(()),
        Some(h) if h == MODULE_HEADER => Err(NotAComponent::CoreModule),
        Some(h) if h.get(..4) == MODULE_HEADER.get(..4) => Err(NotAComponent::UnsupportedVersion),
        _ => Err(NotAComponent::NotWasm),
    }
}

/// The wall-clock deadline of one compilation is this many times the CPU
/// time it may take, plus [`WALL_GRACE`]: CPU time is the meter, the wall
/// clock only a backstop for a child that waits on something. A child
/// still using the CPU at its deadline (on a busy machine) is given
/// another [`WALL_GRACE`] each time it used [`MIN_PROGRESS`] since the
/// last one, so how busy the machine is never decides a refusal.
pub const WALL_FACTOR: u32 = 3;
/// Added to the wall-clock deadline of a compilation (process start, a
/// busy machine), and the wall-clock time given again to a child that
/// still makes progress.
pub const WALL_GRACE: Duration = Duration::from_secs(10);
/// The CPU time a compiler process past its wall-clock deadline must have
/// used since the last check (1 % of [`WALL_GRACE`]) to be taken as
/// progressing rather than stuck.
pub const MIN_PROGRESS: Duration = Duration::from_millis(100);
/// The most of the child's stderr that is read (an error message).
pub const MAX_CHILD_STDERR_BYTES: u64 = 64 << 10;

/// One mebibyte.
const MIB: u64 = 1 << 20;

/// How often the parent looks whether the child has exited.
const POLL: Duration = Duration::from_millis(10);

/// The child's exit code for bytes that are not a valid component.
const EXIT_INVALID: u8 = 10;
/// The child's exit code for a compilation that ran out of memory without
/// aborting (wasmtime reported the failed allocation).
const EXIT_OUT_OF_MEMORY: u8 = 11;
/// The child's exit code for anything else (bad arguments, I/O).
const EXIT_OTHER: u8 = 12;
/// The child's exit code for a component over a cap of its shape
/// (`compiler/shape.rs`), refused before compiling.
const EXIT_OVER_CAP: u8 = 13;
/// The child's exit code for a component that cannot be of the
/// `airlock:tool` world (its exports or imports), refused before compiling.
const EXIT_WRONG_WORLD: u8 = 14;
/// The child's exit code for a component the baseline compiler (Winch)
/// does not compile (a proposal it does not support): the optimizing
/// compiler is asked instead.
const EXIT_BASELINE_UNSUPPORTED: u8 = 15;

/// Which compiler a compilation uses, and whether it runs in the
/// background (at a lower CPU priority, behind calls).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct How {
    /// The compiler.
    pub(crate) tier: crate::wasmtime_config::Tier,
    /// An optimized build replacing a baseline one that already serves.
    pub(crate) background: bool,
}

/// The meter of compilations and the executable that runs them.
#[derive(Debug, Clone)]
pub(crate) struct Meter {
    /// The `airlock` executable; `None` refuses to compile.
    pub(crate) exe: Option<PathBuf>,
    /// `[engine] compile_timeout_secs`: the most CPU of any compilation.
    pub(crate) timeout_secs: u64,
    /// `[engine] compile_secs_per_mib`.
    pub(crate) secs_per_mib: u64,
    /// The address space of one compiler process, in MiB:
    /// `[engine] compile_memory_mib`, or the compilations' share of the
    /// host memory budget when that is smaller (but never below
    /// `MIN_COMPILE_MEMORY_MIB` nor above the whole budget). A compilation reserves it
    /// from the budget before it starts: at most the share, it fits beside
    /// an idle session or a long call, where the whole budget would wait
    /// for every one of them to end.
    pub(crate) memory_mib: u64,
    /// `[engine] compile_memory_mib` as the operator set it, for messages.
    pub(crate) configured_memory_mib: u64,
    /// `[engine] memory_budget_mib` in force (set or derived), in MiB.
    pub(crate) budget_mib: u64,
    /// `[engine] memory_share_percent` in force.
    pub(crate) share_percent: u8,
    /// `[engine] wasm_stack_kib`, in bytes (part of the engine
    /// configuration, so of the artifact's compatibility).
    pub(crate) wasm_stack_bytes: usize,
}

impl Meter {
    /// The meter `settings` configure for a host whose memory budget is
    /// `budget_bytes`.
    pub(crate) fn new(settings: &EngineSettings, budget_bytes: u64) -> Self {
        let budget_mib = budget_bytes / MIB;
        let share_mib = share_of(budget_bytes, settings.memory_share_percent) / MIB;
        Meter {
            exe: settings.compiler.clone(),
            timeout_secs: settings.compile_timeout_secs,
            secs_per_mib: settings.compile_secs_per_mib,
            // Never below the least `compile_memory_mib` accepted (a small
            // budget's share would leave the compiler too little to start),
            // and never more than the whole budget.
            memory_mib: settings.compile_memory_mib.min(share_mib.max(MIN_COMPILE_MEMORY_MIB)).min(budget_mib).max(1),
            configured_memory_mib: settings.compile_memory_mib,
            budget_mib,
            share_percent: settings.memory_share_percent.clamp(1, 100),
            wasm_stack_bytes: settings.wasm_stack_bytes,
        }
    }

    /// The address-space limit of a compiler process and where it comes
    /// from, naming the keys.
    pub(crate) fn memory_limit(&self) -> String {
        match self.memory_set_by() {
            MemorySetBy::Budget => format!(
                "{} MiB of address space (the whole host memory budget, `[engine] memory_budget_mib` = {} MiB, \
                 which is below `[engine] compile_memory_mib = {}`)",
                self.memory_mib, self.budget_mib, self.configured_memory_mib
            ),
            MemorySetBy::Share => format!(
                "{} MiB of address space (the compilations' share of the host memory budget: `[engine] \
                 memory_share_percent` = {} % of `memory_budget_mib` = {} MiB, which is below `compile_memory_mib` \
                 = {})",
                self.memory_mib, self.share_percent, self.budget_mib, self.configured_memory_mib
            ),
            MemorySetBy::Key => format!("`[engine] compile_memory_mib = {}` MiB of address space", self.memory_mib),
        }
    }

    /// Which setting the compiler's address space comes from.
    fn memory_set_by(&self) -> MemorySetBy {
        if self.memory_mib >= self.configured_memory_mib {
            MemorySetBy::Key
        } else if self.memory_mib == self.budget_mib {
            MemorySetBy::Budget
        } else {
            MemorySetBy::Share
        }
    }

    /// Feed what decides whether a component is refused into `hasher`:
    /// these limits, the checks made before compiling and this build of
    /// the compiler. A remembered refusal is keyed by it (with the engine's
    /// compatibility hash), so a change of any of them tries again.
    pub(crate) fn fingerprint(&self, hasher: &mut impl std::hash::Hasher) {
        use std::hash::Hash as _;
        (self.timeout_secs, self.secs_per_mib, self.memory_mib, self.wasm_stack_bytes, COMPILE_BASE_SECS).hash(hasher);
        env!("CARGO_PKG_VERSION").hash(hasher);
        shape::fingerprint(hasher);
    }

    /// Seconds of CPU compiling a component of `size` bytes may take:
    /// [`COMPILE_BASE_SECS`] plus `compile_secs_per_mib` per MiB (rounded
    /// up to a second), at most `compile_timeout_secs`.
    pub(crate) fn cpu_secs(&self, size: u64) -> u64 {
        self.by_size(size).min(self.timeout_secs)
    }

    /// What the size alone allows, before the cap.
    fn by_size(&self, size: u64) -> u64 {
        let per_mib = u128::from(self.secs_per_mib).saturating_mul(u128::from(size)).div_ceil(1 << 20);
        COMPILE_BASE_SECS.saturating_add(u64::try_from(per_mib).unwrap_or(u64::MAX))
    }

    fn wall_deadline(&self, size: u64) -> Duration {
        Duration::from_secs(self.cpu_secs(size).saturating_mul(u64::from(WALL_FACTOR))).saturating_add(WALL_GRACE)
    }

    /// The CPU allowed for `size` bytes and how it was reached, naming the
    /// keys.
    fn allowance(&self, size: u64) -> String {
        let mib = size as f64 / f64::from(1 << 20);
        let formula =
            format!("{COMPILE_BASE_SECS} s + `[engine] compile_secs_per_mib = {}` s per MiB", self.secs_per_mib);
        if self.by_size(size) <= self.timeout_secs {
            format!(
                "{} s of CPU ({formula} of its {mib:.2} MiB, at most `[engine] compile_timeout_secs = {}`)",
                self.cpu_secs(size),
                self.timeout_secs
            )
        } else {
            format!(
                "`[engine] compile_timeout_secs = {}` seconds of CPU (its size, {mib:.2} MiB, would allow {} s: \
                 {formula})",
                self.timeout_secs,
                self.by_size(size)
            )
        }
    }

    /// Which key raises the CPU allowed for `size` bytes.
    fn raise(&self, size: u64) -> String {
        if self.by_size(size) <= self.timeout_secs {
            format!("compile_secs_per_mib, at most {MAX_COMPILE_SECS_PER_MIB}")
        } else {
            format!("compile_timeout_secs, at most {MAX_COMPILE_TIMEOUT_SECS}")
        }
    }

    fn cpu_refusal(&self, size: u64, used: Duration) -> String {
        format!(
            "compiling it took more than the {} it may take; it was stopped after {:.1} s of CPU and the component \
             is refused (a component that costs this much to compile is built to exhaust the host, or needs a \
             higher {})",
            self.allowance(size),
            used.as_secs_f64(),
            self.raise(size)
        )
    }

    fn wall_refusal(&self, size: u64) -> String {
        format!(
            "compiling it did not finish within {} s of wall-clock time ({WALL_FACTOR} × the {} s of CPU it may \
             take + {} s), and the compiler had stopped using the CPU (it used less than {} ms in the last {} s): \
             it waits on something, so the component is refused (a compiler that still gets the CPU on a busy \
             machine is given more time)",
            self.wall_deadline(size).as_secs(),
            self.cpu_secs(size),
            WALL_GRACE.as_secs(),
            MIN_PROGRESS.as_millis(),
            WALL_GRACE.as_secs()
        )
    }

    fn memory_refusal(&self) -> String {
        let raise = match self.memory_set_by() {
            MemorySetBy::Budget => "raise memory_budget_mib",
            MemorySetBy::Share => "raise memory_budget_mib or memory_share_percent",
            MemorySetBy::Key => "raise compile_memory_mib",
        };
        format!(
            "compiling it needed more than {}; the component is refused ({raise}, compile_memory_mib at most \
             {MAX_COMPILE_MEMORY_MIB}, if you trust it)",
            self.memory_limit()
        )
    }

    /// The limits the child ran under, for a failure that is none of them.
    fn limits(&self, size: u64) -> String {
        format!("it runs under {} and {}", self.allowance(size), self.memory_limit())
    }

    /// The failure when the host memory budget had no room for one more
    /// compilation within `waited`.
    fn budget_refusal(&self, refusal: &Refusal, waited: Duration) -> CompileFailure {
        let why = match refusal {
            Refusal::QueueFull => "too many calls and compilations are waiting for room already".to_owned(),
            _ => format!("no room came within {} s", waited.as_secs()),
        };
        CompileFailure::Busy(format!(
            "a compilation reserves its address space, {} MiB, from the host memory budget (`[engine] \
             memory_budget_mib` = {} MiB, of which the host's compilations hold at most `memory_share_percent` \
             beyond the first) before it starts, and {why}: calls, sessions and other compilations held it. The \
             component is compiled again at the next load",
            self.memory_mib, self.budget_mib
        ))
    }
}

/// Where a compiler's address space comes from ([`Meter::memory_limit`]).
enum MemorySetBy {
    /// `[engine] compile_memory_mib`.
    Key,
    /// The whole host memory budget, below it.
    Budget,
    /// The compilations' share of the budget, below it.
    Share,
}

/// Why a component was not compiled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CompileFailure {
    /// The bytes are not a valid component (what the compiler said).
    Invalid(String),
    /// The component cannot be of the `airlock:tool` world: what it exports
    /// or imports instead (found before compiling).
    WrongWorld(String),
    /// The component is over a cap of its shape, or compiling it went over
    /// the compiler process's CPU or memory limit: the message names the
    /// cap or the key. The same bytes under the same limits would be
    /// refused again.
    OverLimit(String),
    /// The component could not be compiled for a reason that may not hold
    /// next time (the wall clock on a busy machine, no compiler, I/O, a
    /// signal from outside): the message says which.
    Refused(String),
    /// The host memory budget had no room for the compiler process within
    /// its wait: calls, sessions and other compilations held it. Nothing is
    /// wrong with the component; a later load compiles it.
    Busy(String),
    /// An earlier compilation of the same bytes under the same limits was
    /// refused, and the compile cache remembers why: the reason then, as a
    /// load error shows it after the file ([`CompileFailure::reason`]).
    Remembered(String),
}

/// How a remembered [`CompileFailure::Invalid`] starts in the compile
/// cache: the kind's name on the first line, the message after it.
const REMEMBERED_INVALID: &str = "invalid";
/// How a remembered [`CompileFailure::WrongWorld`] starts.
const REMEMBERED_WRONG_WORLD: &str = "wrong-world";
/// How a remembered [`CompileFailure::OverLimit`] starts.
const REMEMBERED_OVER_LIMIT: &str = "over-limit";

impl CompileFailure {
    /// The reason as a load error shows it after the file's path.
    pub(crate) fn reason(&self) -> String {
        match self {
            CompileFailure::Invalid(why) => format!("invalid component: {why}"),
            CompileFailure::WrongWorld(why) => format!("not an airlock:tool component: {why}"),
            CompileFailure::OverLimit(why)
            | CompileFailure::Refused(why)
            | CompileFailure::Busy(why)
            | CompileFailure::Remembered(why) => why.clone(),
        }
    }

    /// The text that remembers this failure in the compile cache; `None`
    /// for a failure that may not hold next time (only what the bytes and
    /// the limits decide is remembered).
    pub(crate) fn to_remembered(&self) -> Option<String> {
        let (kind, why) = match self {
            CompileFailure::Invalid(why) => (REMEMBERED_INVALID, why),
            CompileFailure::WrongWorld(why) => (REMEMBERED_WRONG_WORLD, why),
            CompileFailure::OverLimit(why) => (REMEMBERED_OVER_LIMIT, why),
            CompileFailure::Refused(_) | CompileFailure::Busy(_) | CompileFailure::Remembered(_) => return None,
        };
        Some(format!("{kind}\n{why}"))
    }

    /// The failure remembered by `text` ([`CompileFailure::to_remembered`]);
    /// `None` for text that is not such a record (a torn or foreign file).
    pub(crate) fn from_remembered(text: &str) -> Option<CompileFailure> {
        let (kind, why) = text.split_once('\n')?;
        let failure = match kind {
            REMEMBERED_INVALID => CompileFailure::Invalid(why.to_owned()),
            REMEMBERED_WRONG_WORLD => CompileFailure::WrongWorld(why.to_owned()),
            REMEMBERED_OVER_LIMIT => CompileFailure::OverLimit(why.to_owned()),
            _ => return None,
        };
        Some(CompileFailure::Remembered(failure.reason()))
    }
}

/// A compiled artifact in a temporary file, waiting for the load to
/// accept the component: [`Artifact::keep`] moves it into the compile
/// cache, dropping it unkept deletes it.
#[derive(Debug)]
pub(crate) struct Artifact {
    /// The temporary file, until kept or dropped.
    temp: Mutex<Option<PathBuf>>,
    /// Its place in the cache; `None` when the cache is off.
    target: Option<PathBuf>,
    /// A private directory made for the temporary file (cache off).
    private_dir: Option<PathBuf>,
}

impl Artifact {
    /// The component was accepted: keep its artifact in the cache (once).
    /// With the cache off there is nowhere to keep it, and dropping the
    /// artifact deletes it with its private directory.
    pub(crate) fn keep(&self) {
        let Some(target) = &self.target else { return };
        let temp = self.temp.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(temp) = temp
            && let Err(err) = std::fs::rename(&temp, target)
        {
            tracing::warn!(path = %target.display(), "cannot write compiled artifact to the cache: {err}");
            let _ = std::fs::remove_file(&temp);
        }
    }
}

impl Drop for Artifact {
    fn drop(&mut self) {
        if let Some(temp) = self.temp.get_mut().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = std::fs::remove_file(temp);
        }
        if let Some(dir) = &self.private_dir {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// Tells apart the temporary files of concurrent compilations.
static NEXT_TEMP: AtomicU64 = AtomicU64::new(0);

/// A temporary name beside `target`, for a file that is renamed onto it
/// once whole: hidden, and unique to this process and this call.
pub(crate) fn temp_beside(target: &Path) -> PathBuf {
    let n = NEXT_TEMP.fetch_add(1, Ordering::Relaxed);
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    target.with_file_name(format!(".{name}.{}-{n}.tmp", std::process::id()))
}

/// Compile `bytes` in a metered child process. On success the artifact is
/// in a temporary file (in the cache directory if `target` is given, else
/// in a private directory) for the caller to deserialize.
///
/// # Errors
///
/// [`CompileFailure::Invalid`] for bytes that are not a component,
/// [`CompileFailure::WrongWorld`] for one that cannot be a tool,
/// [`CompileFailure::OverLimit`] over a cap or a limit (naming it),
/// [`CompileFailure::Refused`] when no compiler executable is set or it
/// could not finish for another reason.
pub(crate) fn compile(
    meter: &Meter,
    budget: &MemoryBudget,
    bytes: &[u8],
    target: Option<PathBuf>,
    how: How,
) -> Result<Artifact, CompileFailure> {
    let Some(exe) = &meter.exe else {
        return Err(CompileFailure::Refused(
            "no compiler is set, so the component is not compiled: components are compiled in a child process \
             under `[engine] compile_timeout_secs` and `compile_memory_mib` (the `airlock` binary compiles with \
             itself; a program using the library sets `EngineSettings::compiler` to an `airlock` executable)"
                .into(),
        ));
    };
    let pid = std::process::id();
    let (temp, private_dir) = match &target {
        Some(target) => (temp_beside(target), None),
        None => {
            let dir = private_dir(pid)?;
            (dir.join("artifact.cwasm"), Some(dir))
        }
    };
    let artifact = Artifact { temp: Mutex::new(Some(temp.clone())), target, private_dir };
    // The child's address space, reserved from the host budget for as long
    // as it runs: many compilations (loads run in parallel) add up to at
    // most the compilations' share of the budget, beyond the first.
    let wait = meter.wall_deadline(bytes.len() as u64);
    let _reserved = budget
        .reserve_blocking(&Holder::Compiler, meter.memory_mib.saturating_mul(MIB), wait)
        .map_err(|refusal| meter.budget_refusal(&refusal, wait))?;
    run_child(meter, exe, bytes, &temp, artifact.target.as_deref(), how)?;
    Ok(artifact)
}

/// How many names [`private_dir`] tries before it gives up.
const PRIVATE_DIR_ATTEMPTS: u32 = 64;

/// A directory for one compilation with the cache off, which only this
/// user can enter, made fresh: creating it fails if the name exists, so
/// nobody can swap the artifact in it. A name can be taken by a directory
/// left behind by a process that was killed before it could remove its
/// own (process ids are reused): the next name is tried then.
fn private_dir(pid: u32) -> Result<PathBuf, CompileFailure> {
    let mut builder = std::fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    for _ in 0..PRIVATE_DIR_ATTEMPTS {
        let n = NEXT_TEMP.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("airlock-compile-{pid}-{n}"));
        match builder.create(&dir) {
            Ok(()) => return Ok(dir),
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(err) => {
                return Err(CompileFailure::Refused(format!(
                    "cannot create a directory for the compiler at {}: {err}",
                    dir.display()
                )));
            }
        }
    }
    Err(CompileFailure::Refused(format!(
        "cannot create a directory for the compiler in {}: {PRIVATE_DIR_ATTEMPTS} names in a row were taken",
        std::env::temp_dir().display()
    )))
}

impl Artifact {
    /// The temporary file holding the artifact (until kept or dropped).
    pub(crate) fn temp_path(&self) -> Option<PathBuf> {
        self.temp.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// Run `exe __compile` on `bytes`, writing the artifact to `out`, under
/// the CPU time a component of this size may take ([`Meter::cpu_secs`]).
///
/// This is the one place a compiler process is started; [`compile`], its
/// only caller, holds the process's address space reserved from the host
/// memory budget while it runs.
fn run_child(
    meter: &Meter,
    exe: &Path,
    bytes: &[u8],
    out: &Path,
    keep_as: Option<&Path>,
    how: How,
) -> Result<(), CompileFailure> {
    let started = Instant::now();
    let size = bytes.len() as u64;
    let cpu_secs = meter.cpu_secs(size);
    let mut command = Command::new(exe);
    command
        .arg(COMPILE_SUBCOMMAND)
        .arg(cpu_secs.to_string())
        .arg(meter.memory_mib.to_string())
        .arg(meter.wasm_stack_bytes.to_string())
        .arg(if how.background { format!("{}-background", how.tier.arg()) } else { how.tier.arg().to_owned() })
        .arg(out);
    // With a cache, a compilation outlives a host that exits meanwhile
    // (a client that starts a server per call and closes it at once) and
    // keeps its artifact there itself, so the next start finds it.
    // Its own process group: a client that ends the server by signalling
    // the server's group (as the MCP SDKs do) does not end it too.
    if let Some(keep_as) = keep_as {
        command.arg(keep_as);
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
    }
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .env_clear()
        // glibc reserves 64 MiB of address space for each thread's malloc
        // arena; with two arenas the address space the child needs follows
        // what it allocates, so RLIMIT_AS (and the reservation from the
        // memory budget) meters memory rather than the number of threads
        // (run_python compiles in 512 MiB, not in 4 GiB; as fast).
        .env("MALLOC_ARENA_MAX", "2")
        .spawn()
        .map_err(|err| {
            CompileFailure::Refused(format!("cannot start the compiler process {}: {err}", exe.display()))
        })?;
    let stdin = child.stdin.take();
    let stderr = child.stderr.take();
    let mut deadline = meter.wall_deadline(size);
    let (exit, killed, text) = std::thread::scope(|scope| {
        // The child may die before reading everything: a write error only
        // means it stopped, which its status says.
        scope.spawn(move || {
            if let Some(mut stdin) = stdin {
                let _ = stdin.write_all(bytes);
            }
        });
        let reader = scope.spawn(move || {
            let mut text = Vec::new();
            if let Some(stderr) = stderr {
                let mut capped = stderr.take(MAX_CHILD_STDERR_BYTES);
                let _ = capped.read_to_end(&mut text);
                // Drain the rest so that the child never blocks on a full pipe.
                let _ = std::io::copy(&mut capped.into_inner(), &mut std::io::sink());
            }
            String::from_utf8_lossy(&text).into_owned()
        });
        let mut killed = false;
        let mut cpu_at_deadline = Duration::ZERO;
        let exit = loop {
            match reap(&mut child) {
                Ok(Some(exit)) => break Ok(exit),
                // Not reaped yet, so the process id is still the child's.
                // CPU time is the meter: past the wall-clock deadline, a
                // child still getting the CPU is on a busy machine, and is
                // given another WALL_GRACE (its CPU limit stops it if it
                // costs too much); one that has stopped using the CPU is
                // stuck, and is stopped.
                Ok(None) if started.elapsed() >= deadline && !killed => match cpu_used(&child) {
                    Some(used) if used >= cpu_at_deadline.saturating_add(MIN_PROGRESS) => {
                        cpu_at_deadline = used;
                        deadline = started.elapsed().saturating_add(WALL_GRACE);
                    }
                    _ => {
                        killed = true;
                        let _ = child.kill();
                    }
                },
                Ok(None) => std::thread::sleep(POLL),
                Err(err) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break Err(err);
                }
            }
        };
        let text = reader.join().unwrap_or_default();
        (exit, killed, text)
    });
    let Exit { status, cpu } =
        exit.map_err(|err| CompileFailure::Refused(format!("cannot wait for the compiler process: {err}")))?;
    tracing::debug!(
        bytes = size,
        cpu_ms = cpu.as_millis() as u64,
        wall_ms = started.elapsed().as_millis() as u64,
        allowed_cpu_secs = cpu_secs,
        %status,
        "compiler process finished"
    );
    let message = text.trim();
    if killed {
        return Err(CompileFailure::Refused(meter.wall_refusal(size)));
    }
    if status.success() {
        return Ok(());
    }
    if let Some(signal) = signal_of(&status) {
        // SIGXCPU at the soft limit; SIGKILL at the hard one, a second later.
        let over_cpu = signal == libc::SIGXCPU || (signal == libc::SIGKILL && cpu >= Duration::from_secs(cpu_secs));
        return Err(match signal {
            _ if over_cpu => CompileFailure::OverLimit(meter.cpu_refusal(size, cpu)),
            libc::SIGABRT | libc::SIGSEGV | libc::SIGBUS => CompileFailure::OverLimit(meter.memory_refusal()),
            _ => CompileFailure::Refused(format!(
                "the compiler process died with signal {signal} after {:.1} s of CPU ({message}), not at one of its \
                 limits (the system's out-of-memory killer, or someone, may have killed it); {}",
                cpu.as_secs_f64(),
                meter.limits(size)
            )),
        });
    }
    match status.code().and_then(|code| u8::try_from(code).ok()) {
        Some(EXIT_INVALID) => Err(CompileFailure::Invalid(message.to_owned())),
        Some(EXIT_WRONG_WORLD) => Err(CompileFailure::WrongWorld(message.to_owned())),
        Some(EXIT_OVER_CAP) => Err(CompileFailure::OverLimit(message.to_owned())),
        Some(EXIT_BASELINE_UNSUPPORTED) => {
            Err(CompileFailure::Refused(format!("the baseline compiler (Winch) does not compile it: {message}")))
        }
        Some(EXIT_OUT_OF_MEMORY) => Err(CompileFailure::OverLimit(meter.memory_refusal())),
        _ if message.contains("memory allocation of") => Err(CompileFailure::OverLimit(meter.memory_refusal())),
        _ => Err(CompileFailure::Refused(format!(
            "the compiler process failed ({status}): {message}; {}",
            meter.limits(size)
        ))),
    }
}

#[cfg(test)]
mod tests;
