//! `[engine]`: [`RawEngine`] is it as written, [`EngineSettings::from_raw`]
//! checks it. `airlock-runtime` turns it into wasmtime's configuration.

use crate::limits::DEFAULT_WASM_STACK_BYTES;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// Default `[engine] compile_timeout_secs`: the most seconds of CPU any
/// component may take to compile, whatever its size (the CPU a component
/// may take grows with its size, [`COMPILE_BASE_SECS`] plus
/// `compile_secs_per_mib` per MiB, up to this).
pub const DEFAULT_COMPILE_TIMEOUT_SECS: u64 = 300;
/// Largest `[engine] compile_timeout_secs` accepted.
pub const MAX_COMPILE_TIMEOUT_SECS: u64 = 3600;
/// Seconds of CPU any component may take to compile, however small: the
/// compiler process's start and wasmtime's fixed costs, with room to spare.
/// Measured (a 2-core machine, alone or at a load of 6): `echo` (0.27 MiB)
/// compiles in 0.46 s, the smallest bundled tools in under 0.5 s.
pub const COMPILE_BASE_SECS: u64 = 5;
/// Default `[engine] compile_secs_per_mib`: seconds of CPU a component may
/// take to compile per MiB of its size, on top of [`COMPILE_BASE_SECS`].
/// Measured (the same machine): `run_python` (20.4 MiB) takes 17–19 s of
/// CPU, `run_js` (1.5 MiB) 2.5–3.0 s, three at once at a load of 6 no more
/// (CPU time, not wall-clock time, is metered); they are allowed 87 s and
/// 11 s, 4.5× and 3.7× what they take. A 210 KB component gets 6 s.
pub const DEFAULT_COMPILE_SECS_PER_MIB: u64 = 4;
/// Largest `[engine] compile_secs_per_mib` accepted.
pub const MAX_COMPILE_SECS_PER_MIB: u64 = 600;
/// Default `[engine] compile_memory_mib`: the address space of the
/// compiling process, in MiB.
pub const DEFAULT_COMPILE_MEMORY_MIB: u64 = 4096;
/// Smallest `[engine] compile_memory_mib` accepted.
pub const MIN_COMPILE_MEMORY_MIB: u64 = 256;
/// Largest `[engine] compile_memory_mib` accepted.
pub const MAX_COMPILE_MEMORY_MIB: u64 = 64 * 1024;
/// Smallest `[engine] wasm_stack_kib` accepted.
const MIN_WASM_STACK_KIB: usize = 64;
/// Largest `[engine] wasm_stack_kib` accepted.
const MAX_WASM_STACK_KIB: usize = 16 * 1024;
/// Largest `[engine] max_live_instances` accepted.
const MAX_LIVE_INSTANCES: u32 = 10_000;
/// Smallest `[engine] memory_budget_mib` accepted: one call with the
/// default limits reserves about 200 MiB.
pub const MIN_MEMORY_BUDGET_MIB: u64 = 64;
/// Largest `[engine] memory_budget_mib` accepted (16 TiB).
pub const MAX_MEMORY_BUDGET_MIB: u64 = 16 << 20;
/// Default `[engine] memory_share_percent`: the most of the memory budget
/// one principal's calls and sessions may hold at once, beyond its first
/// call.
pub const DEFAULT_MEMORY_SHARE_PERCENT: u8 = 50;

/// `[engine]` as written.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RawEngine {
    cache: Option<bool>,
    cache_dir: Option<PathBuf>,
    wasm_stack_kib: Option<usize>,
    max_live_instances: Option<u32>,
    compile_timeout_secs: Option<u64>,
    compile_secs_per_mib: Option<u64>,
    compile_memory_mib: Option<u64>,
    memory_budget_mib: Option<u64>,
    memory_share_percent: Option<u64>,
}

/// Engine-wide settings (per-call limits live in [`crate::limits::Limits`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineSettings {
    /// Maximum wasm stack of any call. wasmtime fixes it per engine.
    pub wasm_stack_bytes: usize,
    /// Where compiled components are cached; `None` disables the cache.
    ///
    /// # Security
    ///
    /// Loading a cached artifact is `unsafe` in wasmtime: anyone who can
    /// write this directory can run native code in the host. Keep it in a
    /// directory only the operator can write.
    pub cache_dir: Option<PathBuf>,
    /// Instances that can be alive at once (calls in flight + sessions).
    pub max_live_instances: u32,
    /// The most seconds of CPU one component may take to compile, whatever
    /// its size (`[engine] compile_timeout_secs`).
    pub compile_timeout_secs: u64,
    /// Seconds of CPU one component may take to compile per MiB of its
    /// size, on top of [`COMPILE_BASE_SECS`] and up to
    /// `compile_timeout_secs` (`[engine] compile_secs_per_mib`): a small
    /// component cannot take the minutes a large one may.
    pub compile_secs_per_mib: u64,
    /// Address space of the process compiling one component, in MiB
    /// (`[engine] compile_memory_mib`).
    pub compile_memory_mib: u64,
    /// The `airlock` executable that compiles components, each in a child
    /// process (`airlock __compile`) under `compile_timeout_secs` and
    /// `compile_memory_mib`. Not an operator key: the `airlock` binary sets
    /// itself; a program using the library sets the path of an installed
    /// `airlock` binary of the same version.
    ///
    /// # Security
    ///
    /// `None` (the default) compiles nothing: a component whose artifact is
    /// not in the cache is refused with a load error. Compiling untrusted
    /// bytes in the host's own process would have no bound on its CPU time
    /// or memory, so there is no unmetered fallback.
    pub compiler: Option<PathBuf>,
    /// The host memory budget every call, session and compilation reserves
    /// from before it runs (`[engine] memory_budget_mib`), in MiB; `None`
    /// derives it from the memory limit of the host's cgroup or the
    /// machine's physical memory, less headroom for the host itself
    /// (`airlock_runtime::memory_budget`).
    pub memory_budget_mib: Option<u64>,
    /// The most of the budget one principal may hold at once, in percent
    /// (`[engine] memory_share_percent`); a principal's first call is
    /// always let in when the budget has room for it.
    pub memory_share_percent: u8,
}

impl Default for EngineSettings {
    fn default() -> Self {
        Self {
            wasm_stack_bytes: DEFAULT_WASM_STACK_BYTES,
            cache_dir: None,
            max_live_instances: 256,
            compile_timeout_secs: DEFAULT_COMPILE_TIMEOUT_SECS,
            compile_secs_per_mib: DEFAULT_COMPILE_SECS_PER_MIB,
            compile_memory_mib: DEFAULT_COMPILE_MEMORY_MIB,
            compiler: None,
            memory_budget_mib: None,
            memory_share_percent: DEFAULT_MEMORY_SHARE_PERCENT,
        }
    }
}

impl EngineSettings {
    /// Check `[engine]`; a relative `cache_dir` is resolved by `resolve`.
    /// With no `cache_dir` (and `cache` not `false`) the cache is in
    /// `$AIRLOCK_CACHE_DIR`, `$XDG_CACHE_HOME/airlock` or `$HOME/.cache/airlock`.
    ///
    /// # Errors
    ///
    /// A value out of range, naming the key and the accepted range.
    pub fn from_raw(raw: RawEngine, resolve: &dyn Fn(&Path) -> PathBuf) -> Result<EngineSettings, String> {
        let defaults = EngineSettings::default();
        let wasm_stack_bytes = match raw.wasm_stack_kib {
            Some(kib) if !(MIN_WASM_STACK_KIB..=MAX_WASM_STACK_KIB).contains(&kib) => {
                return Err(format!(
                    "wasm_stack_kib = {kib} is out of range: accepted {MIN_WASM_STACK_KIB}..={MAX_WASM_STACK_KIB}"
                ));
            }
            Some(kib) => kib << 10,
            None => defaults.wasm_stack_bytes,
        };
        let max_live_instances = match raw.max_live_instances {
            Some(n) if !(1..=MAX_LIVE_INSTANCES).contains(&n) => {
                return Err(format!("max_live_instances = {n} is out of range: accepted 1..={MAX_LIVE_INSTANCES}"));
            }
            Some(n) => n,
            None => defaults.max_live_instances,
        };
        let compile_timeout_secs = match raw.compile_timeout_secs {
            Some(n) if !(1..=MAX_COMPILE_TIMEOUT_SECS).contains(&n) => {
                return Err(format!(
                    "compile_timeout_secs = {n} is out of range: accepted 1..={MAX_COMPILE_TIMEOUT_SECS} (seconds \
                     of CPU to compile one component)"
                ));
            }
            Some(n) => n,
            None => defaults.compile_timeout_secs,
        };
        let compile_secs_per_mib = match raw.compile_secs_per_mib {
            Some(n) if !(1..=MAX_COMPILE_SECS_PER_MIB).contains(&n) => {
                return Err(format!(
                    "compile_secs_per_mib = {n} is out of range: accepted 1..={MAX_COMPILE_SECS_PER_MIB} (seconds \
                     of CPU to compile one component per MiB of its size, on top of {COMPILE_BASE_SECS} s and up to \
                     compile_timeout_secs)"
                ));
            }
            Some(n) => n,
            None => defaults.compile_secs_per_mib,
        };
        let compile_memory_mib = match raw.compile_memory_mib {
            Some(n) if !(MIN_COMPILE_MEMORY_MIB..=MAX_COMPILE_MEMORY_MIB).contains(&n) => {
                return Err(format!(
                    "compile_memory_mib = {n} is out of range: accepted \
                     {MIN_COMPILE_MEMORY_MIB}..={MAX_COMPILE_MEMORY_MIB} (MiB of address space to compile one \
                     component)"
                ));
            }
            Some(n) => n,
            None => defaults.compile_memory_mib,
        };
        let memory_budget_mib = match raw.memory_budget_mib {
            Some(n) if !(MIN_MEMORY_BUDGET_MIB..=MAX_MEMORY_BUDGET_MIB).contains(&n) => {
                return Err(format!(
                    "memory_budget_mib = {n} is out of range: accepted {MIN_MEMORY_BUDGET_MIB}..={MAX_MEMORY_BUDGET_MIB} \
                     (MiB of memory all calls, sessions and compilations reserve from together; leave it unset to \
                     derive it from the cgroup's or the machine's memory)"
                ));
            }
            n => n,
        };
        let memory_share_percent = match raw.memory_share_percent {
            Some(n) if !(1..=100).contains(&n) => {
                return Err(format!(
                    "memory_share_percent = {n} is out of range: accepted 1..=100 (the most of memory_budget_mib \
                     one principal may hold at once)"
                ));
            }
            Some(n) => u8::try_from(n).unwrap_or(100),
            None => defaults.memory_share_percent,
        };
        let cache_dir = match raw.cache {
            Some(false) => None,
            _ => raw.cache_dir.as_deref().map(resolve).or_else(default_cache_dir),
        };
        Ok(EngineSettings {
            wasm_stack_bytes,
            cache_dir,
            max_live_instances,
            compile_timeout_secs,
            compile_secs_per_mib,
            compile_memory_mib,
            compiler: None,
            memory_budget_mib,
            memory_share_percent,
        })
    }
}

/// The compiled-component cache used when the config names none:
/// `$AIRLOCK_CACHE_DIR`, else `$XDG_CACHE_HOME/airlock`, else
/// `$HOME/.cache/airlock` — directories only the user running Airlock can
/// write.
fn default_cache_dir() -> Option<PathBuf> {
    let non_empty = |var: &str| std::env::var_os(var).filter(|v| !v.is_empty()).map(PathBuf::from);
    non_empty("AIRLOCK_CACHE_DIR")
        .or_else(|| non_empty("XDG_CACHE_HOME").map(|d| d.join("airlock")))
        .or_else(|| non_empty("HOME").map(|d| d.join(".cache/airlock")))
}
