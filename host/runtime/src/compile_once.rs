//! Compile a component once per digest: from the compile cache (its
//! optimized build, else its baseline one), else by the baseline compiler
//! first when the runtime has one (the optimized build follows in the
//! background, `upgrade.rs`), else, or when Winch does not compile it, by
//! the optimizing compiler. The loads of one registry build share a
//! [`CompileOnce`]: files with the same bytes are compiled once, even when
//! their loads run at the same time.

use crate::compile_cache::Lookup;
use crate::compiler::{Artifact, CompileFailure};
use crate::engine::Runtime;
use crate::tier_compiler::Fresh;
use crate::wasmtime_config::Tier;
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::OnceCell;
use wasmtime::component::Component;

/// What compiling one digest gave, or why it was refused.
pub(crate) type CompileOutcome = Result<Compiled, CompileFailure>;

/// A component compiled for one digest.
#[derive(Clone)]
pub(crate) struct Compiled {
    pub(crate) component: Component,
    pub(crate) tier: Tier,
    pub(crate) from_cache: bool,
    /// The artifact of a component compiled just now, waiting to be kept.
    pub(crate) artifact: Option<Arc<Artifact>>,
    /// A baseline build whose optimized one is still to be compiled.
    pub(crate) upgrade: bool,
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
    pub(crate) async fn get(
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
