//! `[engine]`, declared once ([`ENGINE`]): [`RawEngine`] is it as written,
//! [`EngineSettings::from_raw`] checks it. `airlock-runtime` turns it into wasmtime's configuration.

use crate::key_doc::Value;
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

/// Default maximum wasm stack (engine-wide: wasmtime sets it per engine).
pub const DEFAULT_WASM_STACK_BYTES: usize = 1 << 20;

crate::section! {
    /// The keys of `[engine]`.
    pub const ENGINE: Section<EngineSettings> = "engine";
    /// `[engine]` as written.
    pub struct RawEngine {}
    hand {
        /// keep compiled components in `cache_dir`, so that a restart does not compile them again; `false` turns the cache off
        cache: Option<bool>, Restart, accepts "`true` or `false`", unset "`true`",
            show |e: &EngineSettings| Some(Value::Bool(e.cache_dir.is_some())),
            example "true";
        /// where compiled components are cached; only the operator may write it (loading a cached artifact runs native code)
        cache_dir: Option<PathBuf>, Restart, accepts "a path",
            unset "`$AIRLOCK_CACHE_DIR`, else `$XDG_CACHE_HOME/airlock`, else `~/.cache/airlock`",
            show |e: &EngineSettings| e.cache_dir.as_deref().map(Value::path),
            set "\".airlock-cache\"";
    }
    /// Engine-wide settings (per-call limits live in [`crate::limits::Limits`]).
    #[derive(Debug, Clone, PartialEq, Eq)]
    group pub struct EngineSettings: Default (RawEngineKeys) at () {
        /// Where compiled components are cached; `None` disables the cache.
        ///
        /// # Security
        ///
        /// Loading a cached artifact is `unsafe` in wasmtime: anyone who can
        /// write this directory can run native code in the host. Keep it in a
        /// directory only the operator can write.
        pub cache_dir: Option<PathBuf> = None,
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
        pub compiler: Option<PathBuf> = None;
        /// maximum wasm stack of any call (wasmtime fixes it per engine)
        wasm_stack_kib => wasm_stack_bytes: usize = DEFAULT_WASM_STACK_BYTES, Restart,
            range KibBytes 64..=16 * 1024;
        /// instances alive at once: calls in flight plus live sessions (the sessions' `max_live` must add up to less)
        max_live_instances => max_live_instances: u32 = 256, Restart, range Count 1..=MAX_LIVE_INSTANCES as u64;
        /// the most seconds of CPU any component may take to compile, whatever its size
        compile_timeout_secs => compile_timeout_secs: u64 = DEFAULT_COMPILE_TIMEOUT_SECS, Restart,
            range Secs 1..=MAX_COMPILE_TIMEOUT_SECS;
        /// seconds of CPU a component may take to compile per MiB of its size, on top of 5 s and up to `compile_timeout_secs`
        compile_secs_per_mib => compile_secs_per_mib: u64 = DEFAULT_COMPILE_SECS_PER_MIB, Restart,
            range Secs 1..=MAX_COMPILE_SECS_PER_MIB;
        /// address space of the process compiling one component (the compiler itself needs about 200 MiB), reserved from `memory_budget_mib` while it runs; at most `memory_share_percent` of the budget, so a compilation fits beside idle sessions and long calls
        compile_memory_mib => compile_memory_mib: u64 = DEFAULT_COMPILE_MEMORY_MIB, Restart,
            range Mib MIN_COMPILE_MEMORY_MIB..=MAX_COMPILE_MEMORY_MIB;
        /// compile a component the cache does not hold first with wasmtime's baseline compiler (Winch: several times faster, slower code) and serve it at once, then replace it with the optimizing compiler's (Cranelift's) build in the background, under the same revision; `false` compiles with Cranelift only
        baseline_compile => baseline_compile: bool = true, Restart;
        /// memory all calls, argument checks, sessions and compilations reserve from together before they run; a call finding no room waits within its deadline, then is `busy`
        memory_budget_mib => memory_budget_mib: Option<u64> = None, Restart,
            range Mib MIN_MEMORY_BUDGET_MIB..=MAX_MEMORY_BUDGET_MIB,
            unset "the cgroup's or the machine's memory, less a quarter",
            example "3072";
        /// the most of `memory_budget_mib` one principal's calls and sessions may hold at once, beyond its first call
        memory_share_percent => memory_share_percent: u8 = DEFAULT_MEMORY_SHARE_PERCENT, Restart,
            range Percent 1..=100;
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
        let mut settings = Self::from_keys(&(&raw).into(), &Self::defaults(), &ENGINE.scope())?;
        settings.cache_dir = match raw.cache {
            Some(false) => None,
            _ => raw.cache_dir.as_deref().map(resolve).or_else(default_cache_dir),
        };
        Ok(settings)
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

#[cfg(test)]
mod tests;
